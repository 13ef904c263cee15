#!/bin/bash
# SPDX-License-Identifier: GPL-2.0
# deb: Debian binary packages (linux-image, linux-headers) of 6.12 with the
# series and CONFIG_READ_ONLY_THP_FOR_FS=y, made by the kernel's own
# "make bindeb-pkg", in build/deb/CONFIG/, their contents checked with
# dpkg-deb, the image's kernel booted under QEMU (scripts/deb-boot.sh;
# to boot it again alone: scripts/deb-boot.sh NAME).
#   deb.sh [debian|rothp]
#     debian  Debian's own config for the flavour DEB_FLAVOUR (default
#             amd64; cloud-amd64 is Debian's smaller one for virtual
#             machines), from the package linux-config-6.12, plus
#             READ_ONLY_THP_FOR_FS=y; module signing with Debian's keys,
#             BTF and debug info off (Debian signs with keys of its own,
#             BTF needs pahole, debug info only makes the build slower)
#     rothp   the project's config of the plain patched kernel (the one
#             make demo and make bench boot): quick, for a virtual machine
set -euo pipefail
. "$(dirname "$0")/lib.sh"

cfg=${1:-debian}
flavour=${DEB_FLAVOUR:-amd64}
case "$cfg" in
debian) name=debian-$flavour ;;
rothp) name=rothp ;;
*) die "CONFIG must be debian or rothp, not '$cfg'" ;;
esac
[ -d "$SRC" ] || die "no source tree: run 'make fetch apply' first"
for tool in dpkg-buildpackage dh; do
	command -v "$tool" >/dev/null || die "$tool missing: sudo make deps DEPS=deb"
done
# bindeb-pkg writes the packages next to the object tree: one directory
# holds that tree alone.
top=$BUILD/deb-build/$name
obj=$top/obj
out=$BUILD/deb/$name
mkdir -p "$obj" "$LOGS"
rm -f "$top"/*.deb "$top"/*.buildinfo "$top"/*.changes

start=$(date +%s)
case "$cfg" in
debian)
	dcfg=/usr/src/linux-config-6.12/config.amd64_none_$flavour.xz
	[ -f "$dcfg" ] || die "$dcfg missing: sudo make deps DEPS=deb, or a DEB_FLAVOUR it has: $(ls /usr/src/linux-config-6.12 2>/dev/null | sed -n 's/^config\.amd64_none_\(.*\)\.xz$/\1/p' | tr '\n' ' ')"
	xz -dc "$dcfg" >"$obj/.config"
	printf '%s\n' 'CONFIG_TRANSPARENT_HUGEPAGE=y' 'CONFIG_READ_ONLY_THP_FOR_FS=y' \
		'CONFIG_MODULE_SIG_KEY="certs/signing_key.pem"' 'CONFIG_SYSTEM_TRUSTED_KEYS=""' \
		'CONFIG_SYSTEM_REVOCATION_KEYS=""' 'CONFIG_DEBUG_INFO_NONE=y' \
		'# CONFIG_DEBUG_INFO_DWARF5 is not set' '# CONFIG_DEBUG_INFO_BTF is not set' \
		>"$top/rothp.fragment"
	;;
rothp)
	# The plain patched kernel's config, with modules (it has none
	# itself): a package without them makes no linux-headers.
	"$ROTHP_TOP/scripts/build.sh" patched
	cp "$BUILD/obj/$(kernel_name patched)/.config" "$obj/.config"
	echo 'CONFIG_MODULES=y' >"$top/rothp.fragment"
	;;
esac
(cd "$obj" && "$SRC/scripts/kconfig/merge_config.sh" -m -O "$obj" "$obj/.config" \
	"$top/rothp.fragment") >"$LOGS/deb-$name-config.log" 2>&1 ||
	die "merging the config failed: see $LOGS/deb-$name-config.log"
make -C "$SRC" O="$obj" olddefconfig >>"$LOGS/deb-$name-config.log" 2>&1 ||
	die "olddefconfig failed: see $LOGS/deb-$name-config.log"
grep -qx 'CONFIG_READ_ONLY_THP_FOR_FS=y' "$obj/.config" ||
	die "CONFIG_READ_ONLY_THP_FOR_FS=y did not hold in $obj/.config"

kver=$(make -s -C "$SRC" kernelversion)
krel=$(make -s -C "$SRC" O="$obj" LOCALVERSION=-rothp kernelrelease)
pkgver=$kver-1+rothp
run_logged "building the $name packages (make bindeb-pkg; hours for Debian's amd64 config on 2 CPUs)" \
	"$LOGS/deb-$name.log" \
	make -C "$SRC" O="$obj" -j"$(nproc)" LOCALVERSION=-rothp KDEB_PKGVERSION="$pkgver" \
		CC="$(host_cc)" bindeb-pkg
secs=$(($(date +%s) - start))

rm -rf "$out"
mkdir -p "$out"
mv "$top"/linux-image-"$krel"_*.deb "$top"/linux-headers-"$krel"_*.deb "$out/" 2>/dev/null ||
	die "bindeb-pkg made no linux-image/linux-headers package of $krel in $top"
rm -f "$top"/linux-*.deb "$top"/*.buildinfo "$top"/*.changes

# What a package must hold to be of use: the kernel, its config with the
# option, the modules' directory; the headers' tree to build modules
# (6.12's holds the config as include/config/auto.conf).
image=$(ls "$out"/linux-image-"$krel"_*.deb)
headers=$(ls "$out"/linux-headers-"$krel"_*.deb)
dpkg-deb --contents "$image" >"$out/image.contents"
dpkg-deb --contents "$headers" >"$out/headers.contents"
for f in "./boot/vmlinuz-$krel" "./boot/config-$krel" "./boot/System.map-$krel"; do
	grep -q " $f\$" "$out/image.contents" || die "$image lacks $f"
done
grep -q " ./lib/modules/$krel/" "$out/image.contents" || die "$image lacks lib/modules/$krel"
grep -q " ./usr/src/linux-headers-$krel/include/config/auto.conf\$" "$out/headers.contents" ||
	die "$headers lacks usr/src/linux-headers-$krel/include/config/auto.conf"
tmp=$(mktemp -d)
trap 'rm -rf "$tmp"' EXIT
dpkg-deb --fsys-tarfile "$image" | tar -x -C "$tmp" "./boot/config-$krel"
grep -qx 'CONFIG_READ_ONLY_THP_FOR_FS=y' "$tmp/boot/config-$krel" ||
	die "the packaged config of $krel lacks CONFIG_READ_ONLY_THP_FOR_FS=y"
modules=$(grep -c '\.ko\(\.xz\)\?$' "$out/image.contents" || true)
{
	echo "config $name, kernel $krel, package version $pkgver, built in ${secs}s"
	for d in "$image" "$headers"; do
		echo "$(basename "$d") $(du -h "$d" | cut -f1) $(dpkg-deb -f "$d" Package Version Architecture | tr '\n' ' ')"
	done
	echo "modules: $modules"
} | tee "$out/summary.txt"
# The packaged kernel, booted under QEMU: the series live in it.
if ! "$ROTHP_TOP/scripts/deb-boot.sh" "$name"; then
	echo "boot: FAILED (boot.log, boot-checks.log)" >>"$out/summary.txt"
	exit 1
fi
echo "boot: ok under QEMU (boot.log, boot-checks.log)" | tee -a "$out/summary.txt"
info "packages in ${out#"$ROTHP_TOP"/}; install: sudo apt install ./$(basename "$image") ./$(basename "$headers")"
