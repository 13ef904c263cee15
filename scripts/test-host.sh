#!/bin/bash
# SPDX-License-Identifier: GPL-2.0
# test-host: the checks that run on this machine, not in the guest (today
# hugetext's host tests), written as RUN_DIR/ktap.log in the guest runner's
# format, so that "rothp-host parse" counts them with the guest's.
#   test-host.sh RUN_DIR
set -euo pipefail
. "$(dirname "$0")/lib.sh"

run=${1:?usage: test-host.sh RUN_DIR}
rm -rf "$run"
mkdir -p "$run"
bin=$BUILD/host
run_logged "building hugetext for the host tests" "$LOGS/hugetext-host.log" \
	make -C "$ROTHP_TOP/hugetext" OUTPUT="$bin"
info "running the host tests (log: ${run#"$ROTHP_TOP"/}/ktap.log)"
rc=0
out=$(sh "$ROTHP_TOP/hugetext/host_test.sh" "$bin/hugetext" 2>&1) || rc=$?
{
	echo "KTAP version 1"
	echo "1..1"
	printf '%s\n' "$out" | sed 's/^/    /'
	if [ "$rc" = 0 ]; then
		echo "ok 1 hugetext.host"
	else
		echo "not ok 1 hugetext.host # exit $rc"
	fi
	echo "# rothp-runner: done"
} >"$run/ktap.log"
