#!/bin/bash
# SPDX-License-Identifier: GPL-2.0
# deps: install the Debian packages the harness needs, if any is missing,
# linux-source-6.12 at the pinned version included (sudo make deps: the
# other targets then run as a normal user).
#   deps.sh [GROUP...]  also what these need (several may be named):
#     bench            make bench: the real programs it runs (clang) and the
#                      instruction trace (valgrind)
#     deb              make deb: dpkg-dev, debhelper and Debian's kernel
#                      configs
#     matrix [CONFIG...]  make matrix, for the configurations named after
#                      it (all when none is): sparse; clang and lld; the
#                      arm64 cross compiler; Debian's kernel configs
# With ARCH=arm64 also what the arm64 guest needs.
set -euo pipefail
. "$(dirname "$0")/lib.sh"

pkgs=(
	build-essential bc bison flex libelf-dev libssl-dev cpio xz-utils kmod
	git ccache python3 python3-docutils perl rsync
	qemu-system-x86 busybox-static e2fsprogs xfsprogs util-linux
)
# A word that names neither a group nor, after matrix, a configuration is
# an error: a typo would otherwise install less than asked, silently.
in_matrix=0 want_matrix=0
named=()
for w in "$@"; do
	case "$w" in
	bench) pkgs+=("clang-$ROTHP_CLANG_VER" valgrind) in_matrix=0 ;;
	deb) pkgs+=(dpkg-dev debhelper linux-config-6.12) in_matrix=0 ;;
	matrix) pkgs+=(sparse) in_matrix=1 want_matrix=1 ;;
	*)
		[ "$in_matrix" = 1 ] || die "DEPS: '$w' is not bench, deb or matrix [CONFIG...]"
		[[ " $MATRIX_ALL " = *" $w "* ]] ||
			die "'$w' is not a configuration of make matrix ($MATRIX_ALL)"
		named+=("$w")
		;;
	esac
done
if [ "$want_matrix" = 1 ]; then
	# shellcheck disable=SC2206 # the list's words
	[ ${#named[@]} -gt 0 ] || named=($MATRIX_ALL)
	for c in "${named[@]}"; do
		case "$c" in
		clang) pkgs+=(clang lld llvm) ;;
		arm64) pkgs+=(gcc-aarch64-linux-gnu) ;;
		debian-amd64) pkgs+=(linux-config-6.12) ;;
		esac
	done
fi
# ARCH=arm64: the cross compiler and QEMU's arm64 system emulator (its
# userspace comes from Debian's arm64 packages, scripts/arm64-root.sh).
[ "$ROTHP_ARCH" != arm64 ] || pkgs+=(gcc-aarch64-linux-gnu libc6-dev-arm64-cross qemu-system-arm)
missing=()
# shellcheck disable=SC2207 # package names have no spaces
pkgs=($(printf '%s\n' "${pkgs[@]}" | sort -u))
for p in "${pkgs[@]}"; do
	[ -n "$(deb_installed "$p")" ] || missing+=("$p")
done

# The kernel source, at the pinned version (KERNEL_DEB_VERSION). A newer
# one installed is not replaced by an older one unless ALLOW_DOWNGRADE=1
# says so: other users of the machine may build from it.
src_pkg=linux-source-6.12
src_have=$(deb_installed "$src_pkg")
downgrade=()
if [ "$src_have" != "$KERNEL_DEB_VERSION" ]; then
	if [ -n "$src_have" ] && dpkg --compare-versions "$src_have" gt "$KERNEL_DEB_VERSION"; then
		[ "${ALLOW_DOWNGRADE:-0}" = 1 ] ||
			die "$src_pkg $src_have is installed, newer than the pinned $KERNEL_DEB_VERSION; installing the pinned one would downgrade it.
Either build that version: make KERNEL_DEB_VERSION=$src_have ...
or downgrade on purpose: sudo make deps ALLOW_DOWNGRADE=1"
		downgrade=(--allow-downgrades)
	fi
	missing+=("$src_pkg=$KERNEL_DEB_VERSION")
fi

[ ${#missing[@]} -eq 0 ] && exit 0
[ "$(id -u)" -eq 0 ] ||
	die "missing packages: ${missing[*]}; installing them needs root: run 'sudo make deps${*:+ DEPS=\"$*\"}${ROTHP_ARCH_SFX:+ ARCH=$ROTHP_ARCH}'"
mkdir -p "$LOGS"
run_logged "apt-get update" "$LOGS/deps.log" apt-get update
if ! (run_logged "installing ${missing[*]}" "$LOGS/deps-install.log" \
	env DEBIAN_FRONTEND=noninteractive apt-get install -y --no-install-recommends \
	"${downgrade[@]}" "${missing[@]}"); then
	offered=$(apt-cache madison "$src_pkg" | awk -F'|' '{gsub(/ /,"",$2); print "  " $2}')
	die "apt-get could not install ${missing[*]} (see $LOGS/deps-install.log).
Versions of $src_pkg apt offers:
${offered:-  (none)}
To build another, say so: make KERNEL_DEB_VERSION=<version> ..."
fi
