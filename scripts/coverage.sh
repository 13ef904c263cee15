#!/bin/bash
# SPDX-License-Identifier: GPL-2.0
# coverage: the share of the lines the series adds that make check's tests
# execute. Builds the coverage kernel (build.sh patched gcov: gcov counters
# in every object the series touches), runs the check tests on it, reads the
# counters the guest leaves on its swap disk and compares them with the
# series' added lines: results/coverage.md, results/coverage.json.
#   coverage.sh [RUN_DIR]
# Functions whose added lines the tests cannot reach say why in
# selftests/coverage-gaps.txt; the report fails below the target when an
# unexecuted line has no reason there.
set -euo pipefail
. "$(dirname "$0")/lib.sh"

name=$(kernel_name patched gcov)
run=${1:-$RESULTS/$name}
obj=$BUILD/obj/$name
command -v gcov >/dev/null || die "gcov missing (make deps: gcc)"
# The added lines are read from the series branch: the tree built must be it.
[ "$(git -C "$SRC" rev-parse HEAD)" = "$(git -C "$SRC" rev-parse "$SERIES_BRANCH")" ] &&
	[ -z "$(git -C "$SRC" status --porcelain --untracked-files=no)" ] ||
	die "$SRC is not the clean series branch $SERIES_BRANCH: make apply"

"$ROTHP_TOP/scripts/build.sh" patched gcov
"$ROTHP_TOP/scripts/image.sh"
rm -rf "$run/gcda"
"$ROTHP_TOP/scripts/boot.sh" "$name" check "$run" gcov=1 ||
	die "the coverage guest did not finish (see ${run#"$ROTHP_TOP"/}/$ROTHP_CONSOLE_LOG)"
grep -q "^$ROTHP_GCOV_SAVED" "$run/$ROTHP_KTAP_LOG" ||
	die "the guest saved no gcov counters: $(grep -m1 "^$ROTHP_GCOV_FAILED" "$run/$ROTHP_KTAP_LOG" || echo 'no report')"
# The test results of this run, as make check reports them. The coverage
# kernel is not the debug kernel: its results do not replace make check's.
"$ROTHP_TOP/scripts/rothp-host" parse "$run" "$RESULTS/coverage.ktap" | tail -n 1 |
	sed 's/^/rothp: coverage run: /' || true
mkdir -p "$run/gcda"
tar -C "$run/gcda" -xf "$run/$ROTHP_SWAP_DISK" || die "no gcov archive on the swap disk of $run"
rm -f "$run/$ROTHP_SWAP_DISK"
"$ROTHP_TOP/scripts/rothp-host" coverage "$obj" "$run/gcda" "$SRC" "$BASE_TAG..$SERIES_BRANCH" \
	"$ROTHP_TOP/selftests/coverage-gaps.txt" "$RESULTS"
