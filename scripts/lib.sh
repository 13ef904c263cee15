# SPDX-License-Identifier: GPL-2.0
# Shared settings and helpers for the rothp stage scripts; sourced, not run.
# shellcheck shell=bash disable=SC2034 # the scripts that source this use them

ROTHP_TOP=$(cd "$(dirname "${BASH_SOURCE[0]}")/.." && pwd)
# The markers, modes, options and paths the host shares with guest/init.
. "$ROTHP_TOP/scripts/contract.sh"
# mkfs.ext4, mkfs.xfs, mkswap, e2fsck and xfs_repair are in /usr/sbin, which
# is not on a normal user's PATH on Debian; they need no root for images.
case ":$PATH:" in
*:/usr/sbin:*) ;;
*) PATH=$PATH:/usr/sbin:/sbin ;;
esac
BUILD=${BUILD:-$ROTHP_TOP/build}
RESULTS=${RESULTS:-$ROTHP_TOP/results}
KERNEL_DEB_VERSION=${KERNEL_DEB_VERSION:-6.12.118-1~deb12u1}
# Debian's clang (bookworm's), whose binary links libclang-cpp and libLLVM:
# the libLLVM-linked real program of make bench.
ROTHP_CLANG_VER=14
# make matrix's configurations (scripts/matrix.sh), all of them.
MATRIX_ALL="x86_64 thp-off rothp-off shmem-off tracing-off memcg-off smp-off i386 arm64 clang debian-amd64"
SRC=$BUILD/src/linux		# git tree, branch rothp = base + series
BASE_SRC=$BUILD/src/baseline	# worktree of the tag base (pristine)
LOGS=$BUILD/logs
BASE_TAG=rothp-base
SERIES_BRANCH=rothp

# PREEMPT=full|voluntary|none: the preemption model of the kernels built
# (kernel-config/preempt-*.config). full is the default and needs no suffix;
# the others build in their own O= directory, patched-debug-preempt-none.
PREEMPT=${PREEMPT:-full}

# ARCH=x86_64|arm64: the guest's architecture (make ARCH=arm64). x86-64
# is the default. arm64 kernels and programs are cross-built with Debian's
# aarch64-linux-gnu- toolchain and boot on qemu-system-aarch64 -M virt;
# ARM64_PAGES=4k|16k|64k is their page size (4k by default).
# The scripts pass it on as ROTHP_ARCH and take ARCH out of their children's
# environment: the kernel's make reads ARCH, and gets it only when it is
# arm64's (ROTHP_KARCH).
ROTHP_ARCH=${ROTHP_ARCH:-${ARCH:-x86_64}}
ARM64_PAGES=${ARM64_PAGES:-4k}
case "$ROTHP_ARCH" in
x86_64 | x86) ROTHP_ARCH=x86_64 ;;
arm64 | aarch64) ROTHP_ARCH=arm64 ;;
*)
	echo "rothp: error: ARCH must be x86_64 or arm64, not '$ROTHP_ARCH'" >&2
	exit 1
	;;
esac
case "$ARM64_PAGES" in
4k | 16k | 64k) ;;
*)
	echo "rothp: error: ARM64_PAGES must be 4k, 16k or 64k, not '$ARM64_PAGES'" >&2
	exit 1
	;;
esac
export ROTHP_ARCH ARM64_PAGES
unset ARCH
# What differs by architecture: the kernel's make variables, its image,
# the cross prefix of the user programs' compiler, and the suffix of the
# build and result directories (none for x86-64, so they keep their names).
if [ "$ROTHP_ARCH" = arm64 ]; then
	ROTHP_CROSS=aarch64-linux-gnu-
	ROTHP_KARCH=(ARCH=arm64 "CROSS_COMPILE=$ROTHP_CROSS")
	ROTHP_KIMAGE=Image
	ROTHP_KIMAGE_PATH=arch/arm64/boot/Image
	ROTHP_ARCH_SFX=-arm64
	[ "$ARM64_PAGES" = 4k ] || ROTHP_ARCH_SFX+=-$ARM64_PAGES
else
	ROTHP_CROSS=
	ROTHP_KARCH=()
	ROTHP_KIMAGE=bzImage
	ROTHP_KIMAGE_PATH=arch/x86/boot/bzImage
	ROTHP_ARCH_SFX=
fi
# The user programs of the guest, per architecture: the uapi headers, the
# selftests, the kernel's mm selftests and the images.
ROTHP_HDR=$BUILD/headers$ROTHP_ARCH_SFX
ROTHP_SELFTESTS=$BUILD/selftests$ROTHP_ARCH_SFX
ROTHP_UPSTREAM=$BUILD/upstream-mm$ROTHP_ARCH_SFX
ROTHP_IMAGE=$BUILD/image$ROTHP_ARCH_SFX
# arm64's userspace from Debian's arm64 packages, unpacked here by
# arm64-root.sh (busybox, the C library, cc1 of gcc ROTHP_ARM64_GCC; for
# make bench clang and python ROTHP_ARM64_PY too).
ROTHP_ARM64_ROOT=$BUILD/arm64-root/root
ROTHP_ARM64_GCC=12
ROTHP_ARM64_PY=3.11

# kernel_name KERNEL [FLAVOUR]: the build/obj/ directory of that kernel.
kernel_name() {
	local n=$1${2:+-$2}
	[ "$PREEMPT" = full ] || n+=-preempt-$PREEMPT
	echo "$n$ROTHP_ARCH_SFX"
}

# kernel_fragments [debug|gcov|""] [series|baseline] [x86_64|arm64]: the
# kernel-config/ fragments of every rothp kernel, on top of tinyconfig, one
# path a line: base.config and the architecture's (by default ROTHP_ARCH's)
# arch-ARCH.config, for arm64 arm64-ARM64_PAGES.config; the debug flavour adds
# debug.config and debug-ARCH.config, the coverage kernel gcov.config; a
# tree with the series, the default, series.config, the options the series
# adds. build.sh and matrix.sh configure with these.
kernel_fragments() {
	local f arch=${3:-$ROTHP_ARCH}
	for f in base "arch-$arch" fs thp trace selftests fault-inject "preempt-$PREEMPT"; do
		echo "$ROTHP_TOP/kernel-config/$f.config"
	done
	[ "$arch" != arm64 ] || echo "$ROTHP_TOP/kernel-config/arm64-$ARM64_PAGES.config"
	[ "${2:-series}" = baseline ] || echo "$ROTHP_TOP/kernel-config/series.config"
	case "${1:-}" in
	debug)
		echo "$ROTHP_TOP/kernel-config/debug.config"
		echo "$ROTHP_TOP/kernel-config/debug-$arch.config"
		;;
	gcov) echo "$ROTHP_TOP/kernel-config/gcov.config" ;;
	esac
}

# touched_c_files: the C files the series changes, one a line.
touched_c_files() {
	git -C "$SRC" diff --name-only "$BASE_TAG..$SERIES_BRANCH" -- '*.c'
}

# check_fragments CONFIG FRAGMENT...: every option the fragments ask for is
# set so in CONFIG. olddefconfig drops what it cannot satisfy with only a
# note in its log; this prints each dropped option and returns 1.
check_fragments() {
	local config=$1 line want sym got n=0
	shift
	while IFS= read -r line; do
		if [[ $line =~ ^(CONFIG_[A-Za-z0-9_]+)=(.*)$ ]] ||
			[[ $line =~ ^#\ (CONFIG_[A-Za-z0-9_]+)\ is\ not\ set$ ]]; then
			want=$line
			sym=${BASH_REMATCH[1]}
		else
			continue
		fi
		got=$(grep -E "^($sym=|# $sym is not set)" "$config" || true)
		if [ "$got" != "$want" ] && ! { [[ $want == "# "* ]] && [ -z "$got" ]; }; then
			echo "  $sym: asked '$want', got '${got:-absent}'" >&2
			n=$((n + 1))
		fi
	done < <(cat "$@")
	[ "$n" -eq 0 ]
}

# host_cc: the compiler for host-architecture kernel builds, with ccache
# when it is installed (its cache shared by every object directory).
host_cc() {
	if command -v ccache >/dev/null; then echo "ccache gcc"; else echo gcc; fi
}
export CCACHE_BASEDIR=$BUILD CCACHE_DIR=${CCACHE_DIR:-$HOME/.cache/ccache}

die() {
	echo "rothp: error: $*" >&2
	exit 1
}

# HOST_HUGETEXT: hugetext built for this machine (host_hugetext), as
# "make hugetext" builds it.
HOST_HUGETEXT=$BUILD/host/hugetext
host_hugetext() {
	run_logged "building hugetext for this machine" "$LOGS/hugetext-host.log" \
		make -C "$ROTHP_TOP/hugetext" OUTPUT="$(dirname "$HOST_HUGETEXT")"
}

# The x86-64 guests' CPU model under TCG, the same for every kernel booted.
# TCG's "max" CPU offers 5-level paging; with it, the KASAN kernel reports
# a wild access in early boot under TCG. Real x86 servers mostly run
# 4-level paging, so test that. It also offers ERMS and FSRM, which make
# the kernel copy with "rep movsb": TCG runs that a byte at a time, and
# copies to user memory ran 5.7x slower than with "rep movsq" (64 MiB of
# pread from the page cache: 0.25 s against 0.044 s). Real CPUs with ERMS
# copy fastest that way; under TCG it made every copy, and so the page
# cache against the disk, look slower than on hardware.
ROTHP_X86_TCG_CPU=max,la57=off,erms=off,fsrm=off

# static_busybox PATH: PATH if it is a statically linked busybox (a guest's
# initramfs has no C library for it), else die saying what to install.
static_busybox() {
	[ -n "$1" ] && [ -f "$1" ] && ! readelf -l "$1" 2>/dev/null | grep -q INTERP ||
		die "a static busybox is needed (apt-get install busybox-static, or make deps)"
	echo "$1"
}

# pack_initramfs DIR OUT: DIR's tree as a newc cpio archive in OUT, owned
# by root, in a stable order.
pack_initramfs() {
	(cd "$1" && find . -print0 | sort -z | cpio --quiet -o -0 -H newc -R 0:0) >"$2.new" ||
		die "cannot pack $1 into $2"
	mv "$2.new" "$2"
}

info() {
	echo "rothp: $*"
}

# Run a long command with its output in a log file, printing the stage, a
# heartbeat with the elapsed time, and the log's tail if it fails.
run_logged() {
	local what=$1 log=$2 start rc pid
	shift 2
	mkdir -p "$(dirname "$log")"
	start=$(date +%s)
	info "$what (log: ${log#"$ROTHP_TOP"/})"
	"$@" >"$log" 2>&1 &
	pid=$!
	while kill -0 "$pid" 2>/dev/null; do
		sleep 5
		if kill -0 "$pid" 2>/dev/null && (( ($(date +%s) - start) % 60 < 5 )); then
			info "  ... $what: $(( $(date +%s) - start ))s"
		fi
	done
	rc=0
	wait "$pid" || rc=$?
	if [ "$rc" -ne 0 ]; then
		tail -n 40 "$log" >&2
		die "$what failed (exit $rc) after $(( $(date +%s) - start ))s; full log: $log"
	fi
	info "$what done in $(( $(date +%s) - start ))s"
}

# The patch files of the series, in order, as listed in patches/series.
series_files() {
	local p
	[ -f "$ROTHP_TOP/patches/series" ] || return 0
	while read -r p _; do
		[[ -z $p || $p == \#* ]] && continue
		[ -f "$ROTHP_TOP/patches/$p" ] || die "patches/series lists $p, which does not exist"
		echo "$ROTHP_TOP/patches/$p"
	done <"$ROTHP_TOP/patches/series"
}

# deb_installed PKG: the version of PKG dpkg has installed, nothing when it
# is not (removed but configured counts as not installed). It succeeds
# either way: dpkg-query fails for a package dpkg has never seen, which under
# pipefail and errexit would end an assignment's caller without a word.
deb_installed() {
	{ dpkg-query -W -f='${Status} ${Version}\n' "$1" 2>/dev/null || :; } |
		sed -n 's/^install ok installed //p'
}

# format-patch with the options series-export uses, so that exporting the same
# commits twice gives the same bytes.
format_series() {
	git -C "$SRC" format-patch -q --numbered --zero-commit --no-signature --full-index \
		--base="$BASE_TAG" -o "$1" "$BASE_TAG..$SERIES_BRANCH"
}

# True when the commits of the series branch are exactly the patch files.
tree_matches_series() {
	local tmp f ok=0 i=0
	local -a want got
	tmp=$(mktemp -d)
	format_series "$tmp"
	mapfile -t want < <(series_files)
	mapfile -t got < <(find "$tmp" -name '*.patch' | sort)
	if [ ${#want[@]} -ne ${#got[@]} ]; then
		ok=1
	else
		for f in "${want[@]}"; do
			cmp -s "$f" "${got[$i]}" || ok=1
			i=$((i + 1))
		done
	fi
	rm -rf "$tmp"
	return $ok
}
