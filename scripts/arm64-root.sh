#!/bin/bash
# SPDX-License-Identifier: GPL-2.0
# arm64-root: the arm64 guest's programs that are not built here, from
# Debian's arm64 packages of the host's release, unpacked into
# build/arm64-root/root: busybox (static), the C library and its loader
# (the dynamic PIE tests), and gcc's cc1 with the libraries it needs (the
# real program always_text runs); with REAL_PROGS=1 (make bench) also
# clang and python3 with theirs, bench_real's other real programs.
# apt-get works on a tree of its own in build/arm64-root (its lists, its
# cache): nothing of the host's apt or dpkg state changes, the host needs
# no foreign architecture, and no root is needed. The packages are checked
# by apt against Debian's keyring, as any download of the host's apt is.
set -euo pipefail
. "$(dirname "$0")/lib.sh"

top=$BUILD/arm64-root
root=$ROTHP_ARM64_ROOT
# cpp-N ships cc1. apt resolves what they need against an empty package
# database, so the whole closure is downloaded: every library the
# programs need is there.
pkgs=(busybox-static libc6 "cpp-$ROTHP_ARM64_GCC")
[ "${REAL_PROGS:-0}" != 1 ] ||
	pkgs+=("clang-$ROTHP_CLANG_VER" "python$ROTHP_ARM64_PY-minimal" "libpython$ROTHP_ARM64_PY-stdlib")
stamp=$top/packages
# A tree unpacked for more packages serves fewer.
if [ -f "$stamp" ] && [ -d "$root" ] &&
	[ -z "$(comm -23 <(printf '%s\n' "${pkgs[@]}" | sort) <(tr ' ' '\n' <"$stamp" | sort))" ]; then
	echo "unpacked already: ${pkgs[*]}"
	exit 0
fi
command -v apt-get >/dev/null || die "apt-get missing: arm64's userspace comes from Debian's packages"
rm -rf "$top"
mkdir -p "$top"/{lists/partial,archives/partial,parts,prefs} "$root"
for f in /etc/apt/sources.list /etc/apt/sources.list.d/*.sources /etc/apt/sources.list.d/*.list; do
	[ -f "$f" ] && cp "$f" "$top/parts/"
done
touch "$top/status"
# Only the host's Debian archives: others may have no arm64 packages.
apt_opts=(-o "Dir::State=$top" -o "Dir::State::Lists=$top/lists" -o "Dir::State::status=$top/status"
	-o "Dir::Cache=$top" -o "Dir::Cache::Archives=$top/archives"
	-o "Dir::Etc::SourceList=/dev/null" -o "Dir::Etc::SourceParts=$top/parts"
	-o "Dir::Etc::Preferences=/dev/null" -o "Dir::Etc::PreferencesParts=$top/prefs"
	-o "APT::Architecture=arm64" -o "APT::Architectures::=arm64"
	-o "APT::Sandbox::User=$(id -un)" -o "Debug::NoLocking=1")
apt-get "${apt_opts[@]}" update ||
	die "apt-get update of the arm64 package lists failed (see above)"
apt-get "${apt_opts[@]}" -y --no-install-recommends install --download-only "${pkgs[@]}" ||
	die "downloading Debian's arm64 packages ${pkgs[*]} and what they need failed (see above)"
for deb in "$top"/archives/*.deb; do
	dpkg-deb -x "$deb" "$root"
done
echo "${pkgs[*]}" >"$stamp"
echo "unpacked: $(cd "$top/archives" && ls -- *.deb | tr '\n' ' ')"
