#!/bin/bash
# SPDX-License-Identifier: GPL-2.0
# series-check: the checks a series owes before it is sent.
#   1. patches/ equals the series branch of the tree;
#   2. scripts/checkpatch.pl --strict on every patch: no errors; a warning or
#      check is allowed only when patches/checkpatch.exceptions justifies it
#      with a line "<patch file name without its number> <MESSAGE_TYPE> why"
#      (commit messages stay as they are sent);
#   3. (unless --no-build) every patch applied in order builds on its own.
set -euo pipefail
. "$(dirname "$0")/lib.sh"

build_each=1
[ "${1:-}" = --no-build ] && build_each=0
mapfile -t patches < <(series_files)
tree_matches_series || die "patches/ and the tree differ: make series-export, or make apply FORCE=1"
info "series: ${#patches[@]} patches"

# justified KEY TYPE: patches/checkpatch.exceptions says why patch KEY keeps
# checkpatch's TYPE, in a non-empty reason.
exceptions=$ROTHP_TOP/patches/checkpatch.exceptions
justified() {
	[ -f "$exceptions" ] &&
		awk -v k="$1" -v t="$2" '$1 == k && $2 == t && NF > 2 { f = 1 } END { exit !f }' \
			"$exceptions"
}

bad=0
for p in "${patches[@]}"; do
	out=$("$SRC/scripts/checkpatch.pl" --strict --showfile --no-summary \
		--show-types "$p" 2>&1 || true)
	if ! grep -qE '(ERROR|WARNING|CHECK):' <<<"$out"; then
		info "checkpatch: $(basename "$p"): clean"
		continue
	fi
	errors=$(grep -cE '(^|: *)ERROR:' <<<"$out" || true)
	unjustified=()
	key=$(basename "$p")
	key=${key#[0-9][0-9][0-9][0-9]-}
	while read -r type; do
		justified "$key" "$type" || unjustified+=("$type")
	done < <(grep -oE '(WARNING|CHECK):[A-Z_]+:' <<<"$out" | cut -d: -f2 | sort -u)
	if [ "$errors" -gt 0 ] || [ ${#unjustified[@]} -gt 0 ]; then
		echo "$out"
		info "checkpatch: $(basename "$p"): $errors error(s); unjustified: ${unjustified[*]:-none}"
		bad=1
	else
		info "checkpatch: $(basename "$p"): only justified warnings"
	fi
done
[ "$bad" -eq 0 ] || die "checkpatch found problems"

if [ "$build_each" -eq 1 ] && [ ${#patches[@]} -gt 0 ]; then
	bisect=$BUILD/src/bisect
	[ -d "$bisect" ] || git -C "$SRC" worktree add -q --detach "$bisect" "$BASE_TAG"
	i=0
	for c in $(git -C "$SRC" rev-list --reverse "$BASE_TAG..$SERIES_BRANCH"); do
		i=$((i + 1))
		git -C "$bisect" checkout -q --detach "$c"
		info "build of patch $i/${#patches[@]}: $(git -C "$SRC" log -1 --format=%s "$c")"
		"$ROTHP_TOP/scripts/build.sh" bisect
	done
fi
info "series-check passed"
