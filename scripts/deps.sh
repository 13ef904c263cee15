#!/bin/bash
# SPDX-License-Identifier: GPL-2.0
# deps: install the Debian packages the harness needs, if any is missing.
#   deps.sh [matrix [CONFIG...]]   matrix: also what make matrix builds the
#                      configurations named with (all when none is named):
#                      sparse; clang and lld; the arm64 cross compiler;
#                      Debian's kernel configs
set -euo pipefail
. "$(dirname "$0")/lib.sh"

pkgs=(
	build-essential bc bison flex libelf-dev libssl-dev cpio xz-utils kmod
	git ccache python3 python3-docutils perl rsync
	qemu-system-x86 busybox-static e2fsprogs xfsprogs util-linux
)
if [ "${1:-}" = matrix ]; then
	shift
	pkgs+=(sparse)
	for cfg in "${@:-clang arm64 debian-amd64}"; do
		for c in $cfg; do
			case "$c" in
			clang) pkgs+=(clang lld llvm) ;;
			arm64) pkgs+=(gcc-aarch64-linux-gnu) ;;
			debian-amd64) pkgs+=(linux-config-6.12) ;;
			esac
		done
	done
fi
missing=()
for p in "${pkgs[@]}"; do
	dpkg-query -W -f='${Status}' "$p" 2>/dev/null | grep -q 'install ok installed' ||
		missing+=("$p")
done
[ ${#missing[@]} -eq 0 ] && exit 0
[ "$(id -u)" -eq 0 ] || die "missing packages: ${missing[*]} (run 'make deps' as root)"
mkdir -p "$LOGS"
run_logged "apt-get update" "$LOGS/deps.log" apt-get update
run_logged "installing ${missing[*]}" "$LOGS/deps-install.log" \
	env DEBIAN_FRONTEND=noninteractive apt-get install -y --no-install-recommends "${missing[@]}"
