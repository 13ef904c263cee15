#!/bin/bash
# SPDX-License-Identifier: GPL-2.0
# fetch: install Debian's linux-source-6.12 at the pinned version and turn it
# into a git tree whose first commit (tag rothp-base) is the pristine source.
set -euo pipefail
. "$(dirname "$0")/lib.sh"

pkg=linux-source-6.12
have=$(dpkg-query -W -f='${Version}' "$pkg" 2>/dev/null || true)
if [ "$have" != "$KERNEL_DEB_VERSION" ]; then
	info "installing $pkg=$KERNEL_DEB_VERSION (installed: ${have:-none})"
	mkdir -p "$BUILD"
	inst() {
		apt-get install -y --no-install-recommends --allow-downgrades \
			"$pkg=$KERNEL_DEB_VERSION" >>"$BUILD/apt-$pkg.log" 2>&1
	}
	# A fresh machine may have no package lists yet: update once and retry.
	if ! inst && ! { apt-get update >>"$BUILD/apt-$pkg.log" 2>&1 && inst; }; then
		offered=$(apt-cache madison "$pkg" | awk -F'|' '{gsub(/ /,"",$2); print "  " $2}')
		die "cannot install $pkg=$KERNEL_DEB_VERSION (see $BUILD/apt-$pkg.log).
Versions apt offers:
${offered:-  (none: run 'apt-get update'?)}
To use one of them, say so explicitly: make KERNEL_DEB_VERSION=<version> ..."
	fi
fi

tarball=/usr/src/$pkg.tar.xz
[ -f "$tarball" ] || die "$tarball missing although $pkg is installed"

stamp=$BUILD/src/.deb-version
if [ -d "$SRC/.git" ]; then
	[ "$(cat "$stamp" 2>/dev/null)" = "$KERNEL_DEB_VERSION" ] && exit 0
	die "$SRC holds $(cat "$stamp" 2>/dev/null || echo 'an unknown version'), not $KERNEL_DEB_VERSION.
Export any work first (make series-export), then remove $BUILD/src and run again."
fi

mkdir -p "$BUILD/src"
rm -rf "$BUILD/src/.extract"
mkdir -p "$BUILD/src/.extract"
run_logged "extracting $tarball" "$LOGS/fetch.log" \
	tar -C "$BUILD/src/.extract" -xf "$tarball"
mv "$BUILD/src/.extract/$pkg" "$SRC"
rmdir "$BUILD/src/.extract"
upstream=$(make -s -C "$SRC" kernelversion)
# The same commit on every machine: the package's tree, by the same author,
# dated by the package's Debian changelog, so that the base-commit: of
# patches/ names the tree the series applies to wherever it is fetched.
changelog=/usr/share/doc/$pkg/changelog.Debian.gz
base_date=$(zcat "$changelog" 2>/dev/null | sed -n 's/^ -- .*>  //p' | head -n 1)
[ -n "$base_date" ] || die "$changelog: no date in its first entry"
commit_base() {
	cd "$SRC"
	git init -q -b "$SERIES_BRANCH"
	git config user.name "rothp developers"
	git config user.email "rothp@localhost"
	git config core.abbrev 12
	git add -A -f .
	GIT_AUTHOR_DATE=$base_date GIT_COMMITTER_DATE=$base_date \
		git commit -q -m "Linux $upstream (Debian $pkg $KERNEL_DEB_VERSION)"
	git tag "$BASE_TAG"
}
run_logged "committing the pristine tree (Linux $upstream)" "$LOGS/fetch-git.log" commit_base
echo "$KERNEL_DEB_VERSION" >"$stamp"
info "source ready: $SRC (tag $BASE_TAG = Linux $upstream)"
