#!/bin/bash
# SPDX-License-Identifier: GPL-2.0
# series-status: say whether patches/ equals the commits of the series
# branch, changing neither (make series-export writes the branch back).
#   series-status.sh
set -euo pipefail
. "$(dirname "$0")/lib.sh"

[ -d "$SRC/.git" ] || die "no source tree: run 'make apply' first"
tree_matches_series || die "patches/ and branch $SERIES_BRANCH of $SRC differ (make series-export?)"
info "patches/ equals branch $SERIES_BRANCH ($(git -C "$SRC" rev-list --count "$BASE_TAG..$SERIES_BRANCH") commits)"
