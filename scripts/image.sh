#!/bin/bash
# SPDX-License-Identifier: GPL-2.0
# image: build the test programs and the guest images:
#   build/image/initramfs.cpio  busybox, the guest runner (/init), the tests
#   build/image/ext4.img        the text files under test, made by mkfs.ext4 -d
#   build/image/xfs.img         the same files, made by mkfs.xfs -p protofile
#   build/image/ext3.img        textprog alone, made by mkfs.ext3 -d: the
#                               guest mounts it through the ext4 driver
#   build/image/ext2.img        the same by mkfs.ext2 -d, for the ext2 driver
#   build/image/swap.img        the guest's swap device, made by mkswap
# None needs root or loop mounts. ARCH=arm64: the same for an arm64 guest
# in build/image-arm64, the programs cross-built, busybox, gcc's cc1 and
# the C library those of Debian's arm64 packages (scripts/arm64-root.sh).
set -euo pipefail
. "$(dirname "$0")/lib.sh"

[ -d "$SRC" ] || die "no source tree: run 'make fetch apply' first"
img=$ROTHP_IMAGE
out=$ROTHP_SELFTESTS
hdr=$ROTHP_HDR
if [ "$ROTHP_ARCH" = arm64 ]; then
	command -v "${ROTHP_CROSS}gcc" >/dev/null ||
		die "${ROTHP_CROSS}gcc missing: sudo make deps ARCH=arm64"
	# Debian's arm64 packages, unpacked: busybox, cc1, the C library.
	run_logged "fetching Debian's arm64 userspace" "$LOGS/arm64-root.log" \
		"$ROTHP_TOP/scripts/arm64-root.sh"
	troot=$ROTHP_ARM64_ROOT
	busybox=$(static_busybox "$troot/bin/busybox")
else
	troot=
	busybox=$(static_busybox "$(command -v busybox || true)")
fi

# The uapi headers of the patched tree, so the tests see what the series adds.
run_logged "installing the patched tree's uapi headers" "$LOGS/headers$ROTHP_ARCH_SFX.log" \
	make -C "$SRC" O="$BUILD/obj/headers$ROTHP_ARCH_SFX" "${ROTHP_KARCH[@]}" \
		INSTALL_HDR_PATH="$hdr" headers_install
run_logged "building the selftests" "$LOGS/selftests$ROTHP_ARCH_SFX.log" \
	make -C "$ROTHP_TOP/selftests" -j"$(nproc)" OUTPUT="$out" KHDR="$hdr/include" \
		KSFT_DIR="$SRC/tools/testing/selftests" CROSS_COMPILE="$ROTHP_CROSS"

mkdir -p "$img"
rm -rf "$img/root" "$img/fs" "$img/fs-ext4" "$img/fs-ext3" "$img/fs-ext2"
mkdir -p "$img/root"/{bin,dev,proc,sys,tmp} "$img/fs"
# The runner's directory of lists and programs, its lists and the
# directories it mounts the file systems on (scripts/contract.sh).
guest=$img/root$ROTHP_GUEST_DIR
tests_list=$img/root$ROTHP_TESTS_LIST
bench_list=$img/root$ROTHP_BENCH_LIST
mkdir -p "$guest"
for m in $ROTHP_MOUNTS; do
	mkdir -p "$img/root$m"
done

# The programs the tests expect on every disk file system.
disk_progs=$(make -s -C "$ROTHP_TOP/selftests" OUTPUT="$out" KHDR="$hdr/include" \
	CROSS_COMPILE="$ROTHP_CROSS" print-disk-progs) || die "selftests/Makefile cannot list its disk programs"
for f in $disk_progs; do
	cp "$out/$f" "$img/fs/$f"
done

# copy_program BIN DIR PKG: BIN as DIR/NAME (NAME: BIN's own), with the
# shared libraries ldd resolves for it, the loader included, in DIR/lib: the
# guest runs it with LD_LIBRARY_PATH there. PKG names the package to
# reinstall. An arm64 BIN, from the unpacked packages, has its libraries
# looked up there (needed_libs): the host's ldd cannot run it.
copy_program() {
	local bin=$1 dir=$2 pkg=$3 ldd_out
	if [ -n "$troot" ]; then
		mkdir -p "$dir/lib"
		cp "$bin" "$dir/"
		needed_libs "$bin" >"$img/$(basename "$bin").libs"
		while read -r path; do
			cp -L "$path" "$dir/lib/$(basename "$path")"
		done <"$img/$(basename "$bin").libs"
		[ -n "$(ls "$dir/lib")" ] || die "found no libraries for $bin"
		return
	fi
	ldd_out=$img/$(basename "$bin").ldd
	mkdir -p "$dir/lib"
	cp "$bin" "$dir/"
	ldd "$bin" >"$ldd_out" 2>&1 || die "ldd $bin failed: $(head -n 3 "$ldd_out")"
	! grep -q 'not found' "$ldd_out" ||
		die "$bin needs libraries this machine lacks: $(grep 'not found' "$ldd_out" | tr -s ' \t\n' ' ')(reinstall $pkg)"
	# "name => /path (addr)" for libraries, "/path (addr)" for the loader.
	while read -r name path; do
		cp -L "$path" "$dir/lib/$name"
	done < <(awk '$2 == "=>" && $3 ~ /^\// { print $1, $3 }
		$1 ~ /^\// { n = split($1, p, "/"); print p[n], $1 }' "$ldd_out")
	[ -n "$(ls "$dir/lib")" ] || die "ldd found no libraries for $bin: $(head -n 3 "$ldd_out")"
}

# needed_libs BIN: the paths in $troot of BIN's loader and of every shared
# library it needs, directly or through another, one a line; a library
# not found there stops the build.
needed_libs() {
	local -A seen=()
	local -a todo=("$1")
	local f lib p found interp
	interp=$(readelf -l "$1" | sed -n 's/.*Requesting program interpreter: \(.*\)]$/\1/p')
	if [ -n "$interp" ]; then
		[ -e "$troot$interp" ] || die "$1's loader $interp is not in $troot"
		echo "$troot$interp"
	fi
	while [ ${#todo[@]} -gt 0 ]; do
		f=${todo[0]}
		todo=("${todo[@]:1}")
		for lib in $(readelf -d "$f" | sed -n 's/.*(NEEDED).*\[\(.*\)\]$/\1/p'); do
			[ -z "${seen[$lib]:-}" ] || continue
			seen[$lib]=1
			found=
			for p in "$troot/lib/aarch64-linux-gnu/$lib" "$troot/usr/lib/aarch64-linux-gnu/$lib"; do
				[ -e "$p" ] && found=$p && break
			done
			[ -n "$found" ] ||
				die "$1 needs $lib, which is not in $troot (scripts/arm64-root.sh lists the packages)"
			echo "$found"
			todo+=("$found")
		done
	done
}

# gcc's cc1, a real program with ~20 MiB of 2 MiB-congruent text (always_text
# runs it), as gcc/cc1, its libraries in gcc/lib: the host's, or for arm64
# that of Debian's arm64 cpp package.
cc=${CC:-gcc}
gcc_ver=$("$cc" -dumpversion 2>/dev/null) ||
	die "$cc missing: install build-essential (make deps)"
if [ -n "$troot" ]; then
	cc1=$troot/usr/lib/gcc/aarch64-linux-gnu/$ROTHP_ARM64_GCC/cc1
	gcc_ver=$ROTHP_ARM64_GCC
else
	cc1=$("$cc" -print-prog-name=cc1)
fi
[ -f "$cc1" ] && [ -x "$cc1" ] ||
	die "gcc's cc1 missing ($cc1): apt-get install gcc-$gcc_ver (it depends on cpp-$gcc_ver, which ships cc1), or make deps"
copy_program "$cc1" "$img/fs/gcc" "gcc-$gcc_ver"

# textprog_big, bench_itlb's 256 MiB of text, only on ext4, where the bench
# runs: the ext4 image gets 256 MiB more. (mkfs.xfs -p of bookworm wrote an
# xfs image with a bad AGI CRC when it held that file in 768 MiB.)
mkdir -p "$img/fs-ext4"
cp -al "$img/fs/." "$img/fs-ext4/"
rm "$img/fs/textprog_big"
# make bench (REAL_PROGS=1): bench_real's other real programs, on ext4
# only, each in its own directory with its libraries: clang (the Debian
# build links libclang-cpp and libLLVM, ~170 MiB of libraries) and python3
# with its standard library (PYTHONHOME=python3: python3/lib/python3.X).
real_bytes=0
if [ "${REAL_PROGS:-0}" = 1 ]; then
	# arm64: those of Debian's arm64 packages (arm64-root.sh, REAL_PROGS=1).
	if [ -n "$troot" ]; then
		clang_bin=$troot/usr/lib/llvm-$ROTHP_CLANG_VER/bin/clang
		py_bin=$troot/usr/bin/python$ROTHP_ARM64_PY
		py_ver=$ROTHP_ARM64_PY
		[ -x "$clang_bin" ] && [ -x "$py_bin" ] ||
			die "$clang_bin or $py_bin missing from Debian's arm64 packages (see $LOGS/arm64-root.log)"
	else
		clang_bin=$(command -v "clang-$ROTHP_CLANG_VER" || true)
		[ -n "$clang_bin" ] || die "clang-$ROTHP_CLANG_VER missing: sudo make deps DEPS=bench"
		clang_bin=$(readlink -f "$clang_bin")
		py_bin=$(readlink -f /usr/bin/python3)
		[ -x "$py_bin" ] || die "/usr/bin/python3 missing: sudo make deps DEPS=bench"
		py_ver=$("$py_bin" -c 'import sys; print("%d.%d" % sys.version_info[:2])')
	fi
	copy_program "$clang_bin" "$img/fs-ext4/clang" "clang-$ROTHP_CLANG_VER"
	copy_program "$py_bin" "$img/fs-ext4/python3" "python$py_ver-minimal"
	mv "$img/fs-ext4/python3/$(basename "$py_bin")" "$img/fs-ext4/python3/python3"
	rsync -a --exclude=test --exclude='config-*' --exclude=site-packages \
		--exclude=dist-packages "$troot/usr/lib/python$py_ver" "$img/fs-ext4/python3/lib/"
	real_bytes=$(du -sb "$img/fs-ext4/clang" "$img/fs-ext4/python3" | awk '{ n += $1 } END { print n }')
fi

# Every test copies files into its disk: keep room for them.
disk_size=${DISK_SIZE:-512M}
scratch_room=$((256 << 20))
disk_bytes=$(numfmt --from=iec "$disk_size") || die "DISK_SIZE=$disk_size is not a size"
ext4_size=$((disk_bytes + (256 << 20) + real_bytes))
fs_bytes=$(du -sb "$img/fs" | cut -f1)
[ $((fs_bytes + scratch_room)) -le "$disk_bytes" ] ||
	die "the disk files take $((fs_bytes >> 20)) MiB: with 256 MiB for the tests' copies that exceeds DISK_SIZE=$disk_size"

# initramfs: busybox and the runner; the test binaries themselves.
cp "$busybox" "$img/root/bin/busybox"
install -m 0755 "$ROTHP_TOP/guest/init" "$img/root/init"
cp "$ROTHP_TOP/guest/tests.list" "$tests_list"
# The kernel's own mm selftests, after ours: upstream.list, and with
# UPSTREAM_FULL=1 (make check-full) upstream-full.list too.
run_logged "building the kernel's mm selftests" "$LOGS/upstream-mm$ROTHP_ARCH_SFX.log" \
	"$ROTHP_TOP/scripts/upstream-mm.sh"
cat "$ROTHP_TOP/guest/upstream.list" >>"$tests_list"
[ "${UPSTREAM_FULL:-0}" != 1 ] || cat "$ROTHP_TOP/guest/upstream-full.list" >>"$tests_list"
mkdir -p "$guest/upstream-mm"
for f in $(cat "$ROTHP_UPSTREAM/progs"); do
	cp "$ROTHP_UPSTREAM/$f" "$guest/upstream-mm/$f"
done
cp "$ROTHP_TOP/bench/bench.list" "$bench_list"
while read -r _ _ bin _; do
	[ -n "$bin" ] && cp "$out/$bin" "$guest/"
done < <(cat "$ROTHP_TOP/guest/tests.list" "$ROTHP_TOP/bench/bench.list" | grep -vE '^[[:space:]]*(#|$)')
# hugetext, the user tool, next to the tests that run it.
run_logged "building hugetext" "$LOGS/hugetext$ROTHP_ARCH_SFX.log" \
	make -C "$ROTHP_TOP/hugetext" OUTPUT="$out" CROSS_COMPILE="$ROTHP_CROSS"
cp "$out/hugetext" "$guest/hugetext"
# The dynamically linked test programs run with the host's ld.so and libc,
# on arm64 with those of Debian's arm64 libc6.
if [ -n "$troot" ]; then
	libs=(/lib/ld-linux-aarch64.so.1 /lib/aarch64-linux-gnu/libc.so.6)
else
	libs=(/lib64/ld-linux-x86-64.so.2 /lib/x86_64-linux-gnu/libc.so.6)
fi
for lib in "${libs[@]}"; do
	[ -e "$troot$lib" ] || die "$troot$lib missing: the dynamic PIE tests need it"
	mkdir -p "$img/root$(dirname "$lib")"
	cp -L "$troot$lib" "$img/root$lib"
done
pack_initramfs "$img/root" "$img/initramfs.cpio"

# The disk images, by the names boot.sh gives QEMU (scripts/contract.sh).
ext4_img=$img/$ROTHP_EXT4_DISK
xfs_img=$img/$ROTHP_XFS_DISK
swap_img=$img/$ROTHP_SWAP_DISK

# ext4: 4 KiB blocks, so a 2 MiB folio covers 512 whole blocks.
rm -f "$ext4_img"
truncate -s "$ext4_size" "$ext4_img"
mkfs.ext4 -q -F -b 4096 -L rothp-ext4 -d "$img/fs-ext4" "$ext4_img" ||
	die "mkfs.ext4 -d failed"

# ext3: the ext4 driver serves it (6.12 has no ext3 driver of its own),
# under the file system type "ext3"; ext2: its own driver (CONFIG_EXT2_FS),
# which does not declare FS_THP_SPLIT_AT_WRITE. write_open runs on each.
# Only textprog, and room for the test's copy of it: textprog twice and
# 64 MiB for the journal and metadata, in MiB.
small_fs_mib=$(( ($(stat -c %s "$img/fs/textprog") * 2 >> 20) + 64 ))
# small_fs FS IMAGE: textprog alone on a file system of type FS, in IMAGE.
small_fs() {
	local fs=$1 file=$img/$2
	mkdir -p "$img/fs-$fs"
	cp "$img/fs/textprog" "$img/fs-$fs/"
	rm -f "$file"
	truncate -s "${small_fs_mib}M" "$file"
	"mkfs.$fs" -q -F -b 4096 -L "rothp-$fs" -d "$img/fs-$fs" "$file" ||
		die "mkfs.$fs -d failed"
}
small_fs ext3 "$ROTHP_EXT3_DISK"
small_fs ext2 "$ROTHP_EXT2_DISK"

# xfs: mkfs.xfs of bookworm has no -d, but it populates from a protofile:
# one line per file, a directory's entries after its line, ended by "$".
proto_dir() {
	local f
	for f in "$1"/*; do
		if [ -d "$f" ]; then
			printf '%s d--%s 0 0\n' "$(basename "$f")" "$(stat -c '%a' "$f")"
			proto_dir "$f"
			echo "\$"
		else
			printf '%s ---%s 0 0 %s\n' "$(basename "$f")" "$(stat -c '%a' "$f")" "$f"
		fi
	done
}
{
	echo "rothp"
	echo "0 0"
	echo "d--755 0 0"
	proto_dir "$img/fs"
	echo "\$"
} >"$img/xfs.proto"
rm -f "$xfs_img"
truncate -s "$disk_size" "$xfs_img"
mkfs.xfs -q -f -b size=4096 -L rothp-xfs -p "$img/xfs.proto" "$xfs_img" >/dev/null ||
	die "mkfs.xfs -p failed"
# swap: the guest's swap device (/dev/vdc), for the cases that page out.
rm -f "$swap_img"
truncate -s "${SWAP_SIZE:-1G}" "$swap_img"
# A swap header is written for one page size: the guest kernel's.
swap_page=4096
[ "$ROTHP_ARCH" != arm64 ] || swap_page=$((${ARM64_PAGES%k} * 1024))
mkswap -q -p "$swap_page" -L rothp-swap "$swap_img" >/dev/null || die "mkswap failed"
# Check every file system image before any guest mounts it.
# e2fsck_image FS IMAGE: e2fsck -fn of IMAGE, which holds an FS file system.
e2fsck_image() {
	e2fsck -fn "$img/$2" >"$LOGS/fsck-$1.log" 2>&1 ||
		die "the $1 image fails e2fsck -fn (see ${LOGS#"$ROTHP_TOP"/}/fsck-$1.log)"
}
e2fsck_image ext4 "$ROTHP_EXT4_DISK"
e2fsck_image ext3 "$ROTHP_EXT3_DISK"
e2fsck_image ext2 "$ROTHP_EXT2_DISK"
xfs_repair -n -f "$xfs_img" >"$LOGS/fsck-xfs.log" 2>&1 ||
	die "the xfs image fails xfs_repair -n (see ${LOGS#"$ROTHP_TOP"/}/fsck-xfs.log)"
info "images ready in ${img#"$ROTHP_TOP"/}: initramfs.cpio ($(du -h "$img/initramfs.cpio" | cut -f1)), $ROTHP_EXT4_DISK, $ROTHP_XFS_DISK ($((fs_bytes >> 20)) MiB of files in $disk_size, ext4 $((ext4_size >> 20)) MiB with textprog_big), $ROTHP_EXT3_DISK and $ROTHP_EXT2_DISK (${small_fs_mib} MiB each)"
