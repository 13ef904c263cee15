#!/bin/bash
# SPDX-License-Identifier: GPL-2.0
# test-host: the checks that run on this machine, not in the guest:
# hugetext's host tests and the unit tests of the harness's own Python
# (rothp-host selftest), written as RUN_DIR/ktap.log in the guest runner's
# format, so that "rothp-host parse" counts them with the guest's.
#   test-host.sh RUN_DIR
set -euo pipefail
. "$(dirname "$0")/lib.sh"

run=${1:?usage: test-host.sh RUN_DIR}
rm -rf "$run"
mkdir -p "$run"
host_hugetext
info "running the host tests (log: ${run#"$ROTHP_TOP"/}/$ROTHP_KTAP_LOG)"

# program N NAME COMMAND...: COMMAND's own KTAP indented, then its result.
program() {
	local n=$1 name=$2 out rc=0
	shift 2
	out=$("$@" 2>&1) || rc=$?
	printf '%s\n' "$out" | sed 's/^/    /'
	if [ "$rc" = 0 ]; then
		echo "ok $n $name"
	else
		echo "not ok $n $name # exit $rc"
	fi
}

{
	echo "KTAP version 1"
	echo "1..2"
	program 1 hugetext.host sh "$ROTHP_TOP/hugetext/host_test.sh" "$HOST_HUGETEXT"
	program 2 host.python "$ROTHP_TOP/scripts/rothp-host" selftest --ktap
	echo "$ROTHP_DONE"
} >"$run/$ROTHP_KTAP_LOG"
