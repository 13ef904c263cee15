#!/bin/bash
# SPDX-License-Identifier: GPL-2.0
# deb-boot: boot the kernel of a linux-image package that deb.sh made
# under QEMU (TCG, 2 CPUs) and check that the series is live in it: the
# release; THP "enabled" as the packaged config sets it; the knob
# khugepaged/prompt_collapse and the sysctl fs.elf_text_thp_align; and
# hugetext status of its own process, which must find the packaged
# config's CONFIG_READ_ONLY_THP_FOR_FS=y in /boot. The guest is a small
# initramfs (busybox, hugetext, the package's /boot/config, a script as
# /init), so no module is needed: it shows that the packaged kernel boots
# and what a user sees there, not that every module loads.
#   deb-boot.sh NAME   NAME: a directory of build/deb/ (debian-amd64, rothp)
# The console goes to build/deb/NAME/boot.log, the checks' lines to
# build/deb/NAME/boot-checks.log.
# Exit status: 0 when every check held, 1 otherwise (no package, QEMU
# failed or timed out, a check failed).
set -euo pipefail
. "$(dirname "$0")/lib.sh"

name=${1:?usage: deb-boot.sh NAME}
out=$BUILD/deb/$name
rel_out=${out#"$ROTHP_TOP"/}
shopt -s nullglob
images=("$out"/linux-image-*.deb)
shopt -u nullglob
[ ${#images[@]} -gt 0 ] || die "no linux-image package in $rel_out: run make deb first"
[ ${#images[@]} -eq 1 ] ||
	die "several linux-image packages in $rel_out (${images[*]##*/}): run make deb again"
image=${images[0]}
arch=$(dpkg-deb -f "$image" Architecture)
[ "$arch" = amd64 ] || die "$(basename "$image") is for $arch: deb-boot.sh boots amd64 packages only"
krel=$(dpkg-deb -f "$image" Package)
krel=${krel#linux-image-}
log=$out/boot.log
checks=$out/boot-checks.log
rm -f "$log" "$checks"

tmp=$(mktemp -d)
trap 'rm -rf "$tmp"' EXIT
root=$tmp/root
mkdir -p "$root"/{bin,boot,dev,proc,sys}
dpkg-deb --fsys-tarfile "$image" |
	tar -x -C "$root" "./boot/vmlinuz-$krel" "./boot/config-$krel" ||
	die "$(basename "$image") lacks ./boot/vmlinuz-$krel or ./boot/config-$krel"
command -v qemu-system-x86_64 >/dev/null || die "qemu-system-x86_64 missing: sudo make deps"
busybox=$(static_busybox "$(command -v busybox || true)")
mv "$root/boot/vmlinuz-$krel" "$tmp/"
case "$(grep -E '^CONFIG_TRANSPARENT_HUGEPAGE_(ALWAYS|MADVISE|NEVER)=y' "$root/boot/config-$krel")" in
*ALWAYS*) thp=always ;;
*MADVISE*) thp=madvise ;;
*NEVER*) thp=never ;;
*) die "the packaged config of $krel sets no THP default (CONFIG_TRANSPARENT_HUGEPAGE_*)" ;;
esac
host_hugetext
cp "$busybox" "$root/bin/busybox"
cp "$HOST_HUGETEXT" "$root/bin/hugetext"
# Each check is a "check <what> <value>" line on the second serial port,
# away from the kernel's messages on the first.
cat >"$root/init" <<'EOF'
#!/bin/busybox sh
/bin/busybox --install -s /bin
export PATH=/bin
mount -t proc proc /proc
mount -t sysfs sysfs /sys
mount -t devtmpfs devtmpfs /dev
thp=/sys/kernel/mm/transparent_hugepage
{
	echo "check release $(uname -r)"
	echo "check enabled $(cat $thp/enabled)"
	echo "check prompt_collapse $(cat $thp/khugepaged/prompt_collapse 2>&1)"
	echo "check elf_text_thp_align $(cat /proc/sys/fs/elf_text_thp_align 2>&1)"
	hugetext status --self 2>&1 | sed 's/^/check status /'
	echo "check done"
} >/dev/ttyS1
reboot -f
EOF
chmod 0755 "$root/init"
pack_initramfs "$root" "$tmp/initramfs.cpio"

tmo=${BOOT_TIMEOUT:-600}
info "booting $krel from $(basename "$image") (TCG, 2 cpus); console: $rel_out/boot.log"
rc=0
timeout -k 10 "$tmo" qemu-system-x86_64 -accel tcg,thread=multi \
	-cpu "$ROTHP_X86_TCG_CPU" -smp 2 -m 1G \
	-nodefaults -display none -no-reboot \
	-serial "file:$log" -serial "file:$checks" \
	-kernel "$tmp/vmlinuz-$krel" -initrd "$tmp/initramfs.cpio" \
	-append "console=ttyS0 panic=-1" </dev/null >"$tmp/qemu.log" 2>&1 || rc=$?
case $rc in
0) ;;
124 | 137) die "$krel did not finish booting within ${tmo}s: see $rel_out/boot.log" ;;
*) die "QEMU failed ($rc) booting $krel: $(head -n3 "$tmp/qemu.log")" ;;
esac

value() { sed -n "s/^check $1 //p" "$checks" 2>/dev/null | tr -d '\r' | head -n1; }
grep -q '^check done' "$checks" 2>/dev/null ||
	die "the guest's /init did not finish its checks: see $rel_out/boot.log"
[ "$(value release)" = "$krel" ] ||
	die "the guest reported release '$(value release)', not $krel: see $rel_out/boot-checks.log"
[[ $(value enabled) == *"[$thp]"* ]] ||
	die "THP enabled is '$(value enabled)', not [$thp] as the packaged config sets: see $rel_out/boot-checks.log"
[[ $(value prompt_collapse) =~ ^[01]$ ]] ||
	die "no khugepaged/prompt_collapse in $krel ('$(value prompt_collapse)'): see $rel_out/boot-checks.log"
[[ $(value elf_text_thp_align) =~ ^[01]$ ]] ||
	die "no fs.elf_text_thp_align in $krel ('$(value elf_text_thp_align)'): see $rel_out/boot-checks.log"
grep -qF "CONFIG_READ_ONLY_THP_FOR_FS yes (/boot/config-$krel)" "$checks" ||
	die "hugetext status did not find CONFIG_READ_ONLY_THP_FOR_FS=y in /boot/config-$krel: see $rel_out/boot-checks.log"
info "$krel booted: THP enabled [$thp], prompt_collapse $(value prompt_collapse), elf_text_thp_align $(value elf_text_thp_align), hugetext status found CONFIG_READ_ONLY_THP_FOR_FS=y ($rel_out/boot-checks.log)"
