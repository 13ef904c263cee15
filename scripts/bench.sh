#!/bin/bash
# SPDX-License-Identifier: GPL-2.0
# bench: boot the baseline and the patched kernel (plain builds, same
# config, same images) in bench mode, one after the other in one run, and
# compare what the guest measured: results/bench.json and results/bench.md
# (ARCH=arm64: results/bench-arm64/, modeled with an arm64 core's TLB and
# without the cc1 trace, which is of the host's x86-64 cc1).
set -euo pipefail
. "$(dirname "$0")/lib.sh"

start=$(date +%s)
for k in baseline patched; do
	"$ROTHP_TOP/scripts/build.sh" "$k"
done
# The disk gets the real programs of bench_real as well.
REAL_PROGS=1 "$ROTHP_TOP/scripts/image.sh"
# x86-64's runs and report keep their places; arm64's go apart.
out=$RESULTS${ROTHP_ARCH_SFX:+/bench$ROTHP_ARCH_SFX}
mkdir -p "$out"
# Reads the guest's page cache misses must reach a disk, as on a real
# machine, not the host's page cache: that is what a purge of the page
# cache costs.
export DISK_CACHE=none
for k in baseline patched; do
	"$ROTHP_TOP/scripts/boot.sh" "$(kernel_name "$k")" bench "$out/bench-$k" ||
		die "the $k bench run did not finish; see $out/bench-$k/$ROTHP_CONSOLE_LOG"
	# The same SMP guest as make check: every CPU QEMU gave it online.
	guest=$(grep -m1 "^$ROTHP_GUEST" "$out/bench-$k/$ROTHP_KTAP_LOG" || true)
	[ -n "$guest" ] || die "the $k bench run printed no '${ROTHP_GUEST% }' line"
	[[ $guest =~ cpus=([0-9]+) ]] && [ "${BASH_REMATCH[1]}" -ge "${GUEST_CPUS:-2}" ] ||
		die "the $k bench guest has fewer CPUs than QEMU gave it: $guest"
	info "$k bench guest: ${guest#"$ROTHP_GUEST"}"
done
info "bench runs took $(($(date +%s) - start))s"
# The TLB gain of real code: cc1's instruction fetches on this host, under
# valgrind, replayed by the report over the page sizes cc1 had in each
# guest (scripts/rothp/itrace.py).
mkdir -p "$BUILD/host"
cc -O2 -Wall -o "$BUILD/host/itrace" "$ROTHP_TOP/bench/itrace.c" ||
	die "cannot build bench/itrace.c"
cc -O2 -Wall -shared -fPIC -o "$BUILD/host/itrace_maps.so" "$ROTHP_TOP/bench/itrace_maps.c" ||
	die "cannot build bench/itrace_maps.c"
trace=$BUILD/bench/cc1-trace
trace_args=("$trace" "$BUILD/host/itrace")
# A failed trace leaves its metrics missing in the report, not the rest.
if [ "$ROTHP_ARCH" != x86_64 ]; then
	info "no cc1 trace for ARCH=$ROTHP_ARCH: valgrind traces the host's x86-64 cc1"
	trace_args=()
elif ! (run_logged "tracing cc1 under valgrind" "$LOGS/cc1-trace.log" \
	"$ROTHP_TOP/scripts/rothp-host" cc1-trace "$trace" "$SRC" "$BUILD/host/itrace" \
	"$BUILD/host/itrace_maps.so"); then
	info "the cc1 trace failed (see $LOGS/cc1-trace.log): its metrics will be missing"
	trace_args=()
fi
# The report's own unit tests (TCG and KVM paths, the TLB model), then the
# report, in results/ only: make publish copies a complete run's iTLB plot
# to Documentation/ for the README, when the figures are updated from it.
mkdir -p "$LOGS"
"$ROTHP_TOP/scripts/rothp-host" selftest test_bench_report >"$LOGS/test-bench-report.log" 2>&1 ||
	die "the bench report's unit tests failed: see $LOGS/test-bench-report.log"
"$ROTHP_TOP/scripts/rothp-host" bench-report "$out/bench-baseline" "$out/bench-patched" "$out" \
	"${trace_args[@]}"
