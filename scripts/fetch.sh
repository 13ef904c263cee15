#!/bin/bash
# SPDX-License-Identifier: GPL-2.0
# fetch: turn Debian's linux-source-6.12 at the pinned version (installed by
# make deps) into a git tree whose first commit (tag rothp-base) is the
# pristine source.
set -euo pipefail
. "$(dirname "$0")/lib.sh"

pkg=linux-source-6.12
# make deps installs it (as root); fetch only checks, so that a normal user
# is told what to run rather than apt's refusal.
have=$(deb_installed "$pkg")
[ "$have" = "$KERNEL_DEB_VERSION" ] ||
	die "$pkg $KERNEL_DEB_VERSION is not installed (installed: ${have:-none}): run 'sudo make deps'"

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
# All of the changelog is read (no early quit: pipefail would see SIGPIPE);
# its first entry is the newest.
base_date=$(zcat "$changelog" 2>/dev/null | sed -n 's/^ -- .*>  //p' || true)
base_date=${base_date%%$'\n'*}
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
