#!/bin/bash
# SPDX-License-Identifier: GPL-2.0
# image: build the test programs and the guest images:
#   build/image/initramfs.cpio  busybox, the guest runner (/init), the tests
#   build/image/ext4.img        the text files under test, made by mkfs.ext4 -d
#   build/image/xfs.img         the same files, made by mkfs.xfs -p protofile
# Neither needs root or loop mounts.
set -euo pipefail
. "$(dirname "$0")/lib.sh"

[ -d "$SRC" ] || die "no source tree: run 'make fetch apply' first"
img=$BUILD/image
out=$BUILD/selftests
hdr=$BUILD/headers
busybox=$(command -v busybox || true)
[ -n "$busybox" ] && ! readelf -l "$busybox" 2>/dev/null | grep -q INTERP ||
	die "a static busybox is needed (apt-get install busybox-static, or make deps)"

# The uapi headers of the patched tree, so the tests see what the series adds.
run_logged "installing the patched tree's uapi headers" "$LOGS/headers.log" \
	make -C "$SRC" O="$BUILD/obj/headers" INSTALL_HDR_PATH="$hdr" headers_install
run_logged "building the selftests" "$LOGS/selftests.log" \
	make -C "$ROTHP_TOP/selftests" -j"$(nproc)" OUTPUT="$out" KHDR="$hdr/include" \
		KSFT_DIR="$SRC/tools/testing/selftests"

mkdir -p "$img"
rm -rf "$img/root" "$img/fs"
mkdir -p "$img/root"/{bin,dev,proc,sys,tmp,mnt/ext4,mnt/xfs,mnt/tmpfs,rothp} "$img/fs"

# The programs the tests expect on every disk file system.
for f in $(make -s -C "$ROTHP_TOP/selftests" OUTPUT="$out" print-disk-progs); do
	cp "$out/$f" "$img/fs/$f"
done

# initramfs: busybox and the runner; the test binaries themselves.
cp "$busybox" "$img/root/bin/busybox"
install -m 0755 "$ROTHP_TOP/selftests/init" "$img/root/init"
cp "$ROTHP_TOP/selftests/tests.list" "$img/root/rothp/tests.list"
cp "$ROTHP_TOP/selftests/bench.list" "$img/root/rothp/bench.list"
while read -r _ _ bin _; do
	[ -n "$bin" ] && cp "$out/$bin" "$img/root/rothp/"
done < <(cat "$ROTHP_TOP"/selftests/{tests,bench}.list | grep -vE '^[[:space:]]*(#|$)')
# The dynamically linked test programs run with the host's ld.so and libc.
for lib in /lib64/ld-linux-x86-64.so.2 /lib/x86_64-linux-gnu/libc.so.6; do
	[ -e "$lib" ] || die "$lib missing: the dynamic PIE tests need it"
	mkdir -p "$img/root$(dirname "$lib")"
	cp -L "$lib" "$img/root$lib"
done
(cd "$img/root" && find . -print0 | sort -z |
	cpio --quiet -o -0 -H newc -R 0:0) >"$img/initramfs.cpio.new"
mv "$img/initramfs.cpio.new" "$img/initramfs.cpio"

# ext4: 4 KiB blocks, so a 2 MiB folio covers 512 whole blocks.
rm -f "$img/ext4.img"
truncate -s "${DISK_SIZE:-512M}" "$img/ext4.img"
mkfs.ext4 -q -F -b 4096 -L rothp-ext4 -d "$img/fs" "$img/ext4.img" ||
	die "mkfs.ext4 -d failed"

# xfs: mkfs.xfs of bookworm has no -d, but it populates from a protofile.
{
	echo "rothp"
	echo "0 0"
	echo "d--755 0 0"
	for f in "$img/fs"/*; do
		printf '%s ---%s 0 0 %s\n' "$(basename "$f")" "$(stat -c '%a' "$f")" "$f"
	done
	echo "\$"
} >"$img/xfs.proto"
rm -f "$img/xfs.img"
truncate -s "${DISK_SIZE:-512M}" "$img/xfs.img"
mkfs.xfs -q -f -b size=4096 -L rothp-xfs -p "$img/xfs.proto" "$img/xfs.img" >/dev/null ||
	die "mkfs.xfs -p failed"
info "images ready in ${img#"$ROTHP_TOP"/}: initramfs.cpio ($(du -h "$img/initramfs.cpio" | cut -f1)), ext4.img, xfs.img"
