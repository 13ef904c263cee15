#!/bin/bash
# SPDX-License-Identifier: GPL-2.0
# show-demo: print what the demo program said in the guest, and fail when it
# did not run to its end or its text did not become huge.
set -euo pipefail
. "$(dirname "$0")/lib.sh"

run=${1:?usage: show-demo.sh RUN_DIR}
log=$run/$ROTHP_KTAP_LOG
[ -s "$log" ] || die "no guest output in $log; see $run/$ROTHP_CONSOLE_LOG"
echo
tr -d '\r' <"$log" | sed -n "/^$ROTHP_DEMO_START/,/^$ROTHP_DEMO_EXIT/p" |
	sed -e "/^$ROTHP_DEMO_START/d" -e "/^$ROTHP_DEMO_EXIT/d"
echo
status=$(tr -d '\r' <"$log" | sed -n "s/^$ROTHP_DEMO_EXIT//p")
case "$status" in
0) info "demo: the text became huge (logs: ${run#"$ROTHP_TOP"/}/)" ;;
"") die "the demo did not finish; see $run/$ROTHP_CONSOLE_LOG" ;;
*) die "the demo's text did not become huge (exit $status); see $run/" ;;
esac
