#!/bin/bash
# SPDX-License-Identifier: GPL-2.0
# apply: make the two source trees the kernels are built from:
#   build/src/baseline  the pristine tree (a worktree at tag rothp-base)
#   build/src/linux     branch rothp: rothp-base plus patches/ applied by git am
# A branch that already holds the series is left alone (incremental builds).
# A branch holding other commits is not thrown away: export them first
# (make series-export), or FORCE=1 re-applies after saving a backup branch.
set -euo pipefail
. "$(dirname "$0")/lib.sh"

[ -d "$SRC/.git" ] || die "no source tree: run 'make fetch' first"
git -C "$SRC" rev-parse -q --verify "refs/tags/$BASE_TAG" >/dev/null ||
	die "$SRC has no tag $BASE_TAG"

if [ ! -d "$BASE_SRC" ]; then
	run_logged "checking out the baseline tree" "$LOGS/apply-baseline.log" \
		git -C "$SRC" worktree add --detach "$BASE_SRC" "$BASE_TAG"
fi
[ "$(git -C "$BASE_SRC" rev-parse HEAD)" = "$(git -C "$SRC" rev-parse "$BASE_TAG^{commit}")" ] ||
	die "$BASE_SRC is not at $BASE_TAG; it must stay pristine"
[ -z "$(git -C "$BASE_SRC" status --porcelain)" ] ||
	die "$BASE_SRC has local changes; it must stay pristine"

[ "$(git -C "$SRC" symbolic-ref --short HEAD)" = "$SERIES_BRANCH" ] ||
	die "$SRC must have branch $SERIES_BRANCH checked out"
[ -z "$(git -C "$SRC" status --porcelain --untracked-files=no)" ] ||
	die "$SRC has uncommitted changes: commit them (and make series-export) first"

mapfile -t patches < <(series_files)
if tree_matches_series; then
	info "series already applied (${#patches[@]} patches on $BASE_TAG)"
	exit 0
fi
if [ "$(git -C "$SRC" rev-parse HEAD)" != "$(git -C "$SRC" rev-parse "$BASE_TAG^{commit}")" ]; then
	[ "${FORCE:-0}" = 1 ] ||
		die "branch $SERIES_BRANCH holds commits that differ from patches/.
Save them with 'make series-export', or run 'make apply FORCE=1' to re-apply
patches/ (the current branch is kept as a backup branch)."
	backup=$SERIES_BRANCH-backup-$(date +%Y%m%d-%H%M%S)
	git -C "$SRC" branch "$backup"
	info "kept the old branch as $backup"
	git -C "$SRC" reset -q --hard "$BASE_TAG"
fi
if [ ${#patches[@]} -gt 0 ]; then
	run_logged "applying ${#patches[@]} patches" "$LOGS/apply.log" \
		git -C "$SRC" am --keep-cr "${patches[@]}"
fi
tree_matches_series ||
	die "after git am, the tree does not export back to patches/ byte for byte;
run 'make series-export' and commit the result"
info "series applied: $(git -C "$SRC" log --oneline "$BASE_TAG.." | wc -l) commits on $BASE_TAG"
