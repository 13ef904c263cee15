#!/bin/bash
# SPDX-License-Identifier: GPL-2.0
# upstream-mm: build the kernel tree's own mm selftests that exercise THP,
# file THP and madvise, static, into build/upstream-mm (the guest has no
# libraries), with the uapi headers image.sh installs in build/headers;
# for ARCH=arm64 with the cross compiler, into build/upstream-mm-arm64.
#   upstream-mm.sh [TREE]     TREE: a kernel source tree (default the patched)
# The series does not change tools/, so the patched tree's tests serve the
# baseline kernel too; this checks that and stops if it ever does change.
# The tests are built with gcc directly, not with their Makefile, which would
# write its probe results (local_config.h) into the source tree.
set -euo pipefail
. "$(dirname "$0")/lib.sh"

tree=${1:-$SRC}
out=$ROTHP_UPSTREAM
hdr=$ROTHP_HDR/include
cc=${CC:-gcc}
[ -z "$ROTHP_CROSS" ] || cc=${ROTHP_CROSS}gcc
mm=$tree/tools/testing/selftests/mm
PROGS="khugepaged split_huge_page_test cow transhuge-stress madv_populate mkdirty"

[ -d "$mm" ] || die "$mm missing: run 'make fetch apply' first"
[ -d "$hdr" ] || die "$hdr missing: image.sh installs the uapi headers first"
if [ "$tree" = "$SRC" ] && git -C "$SRC" rev-parse -q --verify "$BASE_TAG" >/dev/null; then
	changed=$(git -C "$SRC" diff --name-only "$BASE_TAG" -- tools/testing/selftests/mm tools/testing/selftests/kselftest.h tools/include)
	[ -z "$changed" ] ||
		die "the series changes the mm selftests ($changed): build the baseline's from $BASE_SRC for the baseline kernel"
fi

mkdir -p "$out"
# The probe of check_config.sh, answered here: no liburing in the guest.
echo '// No liburing support found' >"$out/local_config.h"
cflags=(-Wall -O2 -I "$tree" -isystem "$hdr" -isystem "$tree/tools/include/uapi" -I "$out"
	-U_FORTIFY_SOURCE -D_GNU_SOURCE=
	# 6.12.y's khugepaged.c uses KSFT_SKIP without including kselftest.h.
	-include "$tree/tools/testing/selftests/kselftest.h")
for p in $PROGS; do
	src=("$mm/$p.c" "$mm/vm_util.c" "$mm/thp_settings.c")
	if [ "$out/$p" -nt "$mm/$p.c" ] && [ "$out/$p" -nt "$hdr" ] && [ "$out/$p" -nt "$0" ]; then
		continue
	fi
	"$cc" "${cflags[@]}" -static "${src[@]}" -lrt -lpthread -lm -o "$out/$p.new" ||
		die "building $p failed"
	mv "$out/$p.new" "$out/$p"
done
install -m 0755 "$ROTHP_TOP/guest/upstream-run" "$out/upstream-run"
echo "$PROGS upstream-run" | tr ' ' '\n' >"$out/progs"
