# SPDX-License-Identifier: GPL-2.0
# Shared settings and helpers for the rothp stage scripts; sourced, not run.

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
SRC=$BUILD/src/linux		# git tree, branch rothp = base + series
BASE_SRC=$BUILD/src/baseline	# worktree of the tag base (pristine)
LOGS=$BUILD/logs
BASE_TAG=rothp-base
SERIES_BRANCH=rothp

# PREEMPT=full|voluntary|none: the preemption model of the kernels built
# (kernel-config/preempt-*.config). full is the default and needs no suffix;
# the others build in their own O= directory, patched-debug-preempt-none.
PREEMPT=${PREEMPT:-full}

# kernel_name KERNEL [FLAVOUR]: the build/obj/ directory of that kernel.
kernel_name() {
	local n=$1${2:+-$2}
	[ "$PREEMPT" = full ] || n+=-preempt-$PREEMPT
	echo "$n"
}

# kernel_fragments [debug|gcov|""] [series|baseline]: the kernel-config/
# fragments of every rothp kernel, on top of tinyconfig, one path a line (the
# debug flavour adds debug.config, the coverage kernel gcov.config; a tree
# with the series, the default, series.config, the options the series adds).
# build.sh and matrix.sh configure with these.
kernel_fragments() {
	local f
	for f in base fs thp trace selftests fault-inject "preempt-$PREEMPT"; do
		echo "$ROTHP_TOP/kernel-config/$f.config"
	done
	[ "${2:-series}" = baseline ] || echo "$ROTHP_TOP/kernel-config/series.config"
	case "${1:-}" in
	debug) echo "$ROTHP_TOP/kernel-config/debug.config" ;;
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
# is not (removed but configured counts as not installed).
deb_installed() {
	dpkg-query -W -f='${Status} ${Version}\n' "$1" 2>/dev/null |
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
