#!/bin/bash
# SPDX-License-Identifier: GPL-2.0
# vars.sh TARGET: check the make variables TARGET reads before anything is
# built, and name the one that is wrong and what it may be. TARGET is check,
# demo, stress or bench. KERNEL and PREEMPT are checked by the Makefile.
set -euo pipefail
. "$(dirname "$0")/lib.sh"

target=${1:?usage: vars.sh check|demo|stress|bench}
bad=0

# bad_var NAME VALUE WHAT: report NAME=VALUE as not WHAT.
bad_var() {
	echo "rothp: $1='$2': $3" >&2
	bad=1
}

is_count() {
	[[ $1 =~ ^[1-9][0-9]*$ ]]
}

case "${DEBUG-}" in
'' | 0 | 1 | y | n | yes | no) ;;
*) bad_var DEBUG "$DEBUG" "must be 0 or 1 (or y, n, yes, no)" ;;
esac
case "${ACCEL-}" in
'' | tcg | kvm | auto) ;;
*) bad_var ACCEL "$ACCEL" "must be tcg, kvm or auto" ;;
esac
if [ -n "${GUEST_CPUS-}" ] && ! is_count "$GUEST_CPUS"; then
	bad_var GUEST_CPUS "$GUEST_CPUS" "must be a CPU count (1 or more)"
fi
for v in TEST_TIMEOUT BOOT_TIMEOUT; do
	if [ -n "${!v-}" ] && ! is_count "${!v}"; then
		bad_var "$v" "${!v}" "must be a number of seconds (1 or more)"
	fi
done
if [ "$target" = stress ] && ! is_count "${DURATION-}"; then
	bad_var DURATION "${DURATION-}" "must be a number of seconds (1 or more)"
fi

# FILTER selects tests by name as guest/init does (grep -E on the name):
# one that matches none would boot a guest that runs nothing.
if [ -n "${FILTER-}" ]; then
	case "$target" in
	check)
		lists=("$ROTHP_TOP/guest/tests.list" "$ROTHP_TOP/guest/upstream.list")
		[ "${UPSTREAM_FULL:-0}" != 1 ] || lists+=("$ROTHP_TOP/guest/upstream-full.list")
		;;
	bench) lists=("$ROTHP_TOP/bench/bench.list") ;;
	*) lists=() ;;
	esac
	if [ ${#lists[@]} -gt 0 ]; then
		rc=0
		grep -vhE '^[[:space:]]*(#|$)' "${lists[@]}" | grep -qE "^[^ ]*($FILTER)" || rc=$?
		case $rc in
		0) ;;
		1) bad_var FILTER "$FILTER" "matches no test of make $target (names as in ${lists[*]#"$ROTHP_TOP/"})" ;;
		*) bad_var FILTER "$FILTER" "is not an extended regular expression (grep -E)" ;;
		esac
	else
		bad_var FILTER "$FILTER" "make $target runs no list of tests to filter"
	fi
fi
[ "$bad" = 0 ] || die "make $target: fix the variable(s) above; nothing was built"
