#!/bin/bash
# SPDX-License-Identifier: GPL-2.0
# boot: run one kernel under QEMU with the rothp images, once.
#   boot.sh KERNEL_NAME MODE RUN_DIR [OPTION=VALUE...]
# KERNEL_NAME is a build/obj/ directory (patched-debug, baseline, ...), MODE the
# guest runner's mode (check, stress, bench, demo, probe). Each OPTION=VALUE
# is one more option of the runner, rothp.OPTION=VALUE on the kernel command
# line (make stress: duration=SECONDS; make coverage: gcov=1). The kernel
# console goes to RUN_DIR/console.log, the runner's KTAP to RUN_DIR/ktap.log.
# The disks are fresh copies of the built images, so every run starts from
# the same state.
# Exit status: 0 when the guest ran to its end, 1 otherwise (timeout, crash).
#
# ACCEL=tcg (default) | kvm | auto: auto boots once with KVM to probe it and
# falls back to TCG, saying so, when that guest does not come up.
# ARCH=arm64 boots qemu-system-aarch64 -M virt -cpu max (TCG only: the host
# is x86-64), with the same disks and the same KTAP contract.
set -euo pipefail
. "$(dirname "$0")/lib.sh"

usage="usage: boot.sh KERNEL_NAME MODE RUN_DIR [OPTION=VALUE...]"
name=${1:?$usage}
mode=${2:?$usage}
run=${3:?$usage}
shift 3
[[ " $ROTHP_MODES " == *" $mode "* ]] || die "mode $mode: not one of $ROTHP_MODES"
# The runner's options, rothp.OPTION=VALUE on the command line, by OPTION
# (ROTHP_OPTIONS): the mode, filter, timeout and trace from the make
# variables, the arguments, and cpus and preempt from the guest below.
declare -A opt=([mode]=$mode [filter]=${FILTER:-} [timeout]=${TEST_TIMEOUT:-} [trace]=${TRACE:-})
for a in "$@"; do
	[[ $a == *=* && " $ROTHP_OPTIONS " == *" ${a%%=*} "* ]] ||
		die "$a: not OPTION=VALUE with OPTION one of $ROTHP_OPTIONS"
	opt[${a%%=*}]=${a#*=}
done
kimg=$BUILD/obj/$name/$ROTHP_KIMAGE_PATH
img=$ROTHP_IMAGE
[ -f "$kimg" ] || die "$kimg missing: build it first"
for f in initramfs.cpio $ROTHP_DISKS; do
	[ -f "$img/$f" ] || die "$img/$f missing: run 'make image${ROTHP_ARCH_SFX:+ ARCH=$ROTHP_ARCH}' first"
done
if [ "$ROTHP_ARCH" = arm64 ]; then
	qemu_bin=qemu-system-aarch64
	[ "${ACCEL:-tcg}" = tcg ] || die "ARCH=arm64 runs under TCG only (ACCEL=tcg), not ACCEL=$ACCEL"
else
	qemu_bin=qemu-system-x86_64
fi
command -v "$qemu_bin" >/dev/null || die "$qemu_bin missing: sudo make deps${ROTHP_ARCH_SFX:+ ARCH=$ROTHP_ARCH}"

boot_timeout=${BOOT_TIMEOUT:-3600}
# ROTHP_DEADLINE (seconds since the epoch, set by .ci/run): the guest is
# stopped in time for the results of what did run to be read before then.
if [ -n "${ROTHP_DEADLINE:-}" ]; then
	left=$((ROTHP_DEADLINE - $(date +%s)))
	[ "$left" -gt 60 ] || die "ROTHP_DEADLINE leaves ${left}s: no time to boot"
	if [ "$left" -lt "$boot_timeout" ]; then
		info "the deadline leaves ${left}s: BOOT_TIMEOUT $boot_timeout -> $left"
		boot_timeout=$left
	fi
fi
# DISK_CACHE=none: guest reads that miss its page cache go to the disk, not
# to the host's page cache (bench.sh sets it, so I/O costs what it costs).
disk_cache=${DISK_CACHE:-writeback}
# 2 GiB, 8 with arm64's 64 KiB pages: their THP is 512 MiB (order 13),
# and in 4 GiB the kernel's own khugepaged anon and shmem cases could not
# allocate one on either kernel (MADV_COLLAPSE: ENOMEM), in 2 GiB they
# were killed.
mem_default=2G
if [ "$ROTHP_ARCH" = arm64 ] && [ "$ARM64_PAGES" = 64k ]; then
	mem_default=8G
fi
mem=${GUEST_MEM:-$mem_default}
# GUEST_CPUS: the guest's vCPUs. The runner fails the run (case guest.cpus)
# when fewer come online. Under TCG each vCPU is a host thread
# (thread=multi), so they really run in parallel on the host's cores.
cpus=${GUEST_CPUS:-2}
[[ $cpus =~ ^[1-9][0-9]*$ ]] || die "GUEST_CPUS=$cpus is not a CPU count"
kconfig=$BUILD/obj/$name/.config
nr_cpus=$(sed -n 's/^CONFIG_NR_CPUS=//p' "$kconfig")
[ "$cpus" -le "${nr_cpus:-1}" ] ||
	die "GUEST_CPUS=$cpus, but $name is built for at most ${nr_cpus:-1} (CONFIG_NR_CPUS)"
# The preemption model the kernel was built with: the runner's case
# guest.preempt fails when the guest runs another one.
case "$(grep -E '^CONFIG_PREEMPT(_NONE|_VOLUNTARY)?=y' "$kconfig")" in
*CONFIG_PREEMPT_NONE=y*) preempt=none ;;
*CONFIG_PREEMPT_VOLUNTARY=y*) preempt=voluntary ;;
*CONFIG_PREEMPT=y*) preempt=full ;;
*) die "$kconfig names no preemption model" ;;
esac
opt[cpus]=$cpus
console=ttyS0
[ "$ROTHP_ARCH" = arm64 ] && console=ttyAMA0
opt[preempt]=$preempt
# The KTAP port: the second serial port, or arm64's virtio console.
[ "$ROTHP_ARCH" = arm64 ] && opt[ktap]=hvc0
# Under TCG the guest reads the host's TSC. The guest kernel calibrates it
# against the PIT, which fails now and then under TCG; it then marks the
# TSC unstable and times everything in 4 ms jiffies (no HPET without ACPI).
# A host with a known, constant TSC rate tells the guest that rate.
if [ "$ROTHP_ARCH" = x86_64 ] && [ "${ACCEL:-tcg}" != kvm ] &&
	grep -qw tsc_known_freq /proc/cpuinfo &&
	grep -qw constant_tsc /proc/cpuinfo; then
	tsc_khz=$(awk -F: '/^cpu MHz/ { printf "%d", $2 * 1000 + 0.5; exit }' /proc/cpuinfo)
	[ "${tsc_khz:-0}" -gt 0 ] || tsc_khz=
fi

# kernel_cmdline MODE: the guest's kernel command line for a boot in MODE:
# the console on the first serial port (ttyS0, arm64's PL011 ttyAMA0), panic=-1 (a panic reboots, which
# -no-reboot makes the end of the run), every runner option set, in the
# order of ROTHP_OPTIONS, then APPEND and the TSC rate.
kernel_cmdline() {
	local o v line="console=$console panic=-1"
	for o in $ROTHP_OPTIONS; do
		v=${opt[$o]:-}
		[ "$o" = mode ] && v=$1
		[ -z "$v" ] || line+=" $ROTHP_OPTION_PREFIX$o=$v"
	done
	echo "$line${APPEND:+ $APPEND}${tsc_khz:+ tsc_early_khz=$tsc_khz}"
}

qemu() {
	# x86-64: ROTHP_X86_TCG_CPU (lib.sh says why); every kernel boots it.
	local accel=$1 dir=$2 tmo=$3 m=$4 cpu=$ROTHP_X86_TCG_CPU
	local acc=$1 cmdline d
	local -a drives=() machine=() ktap=()
	[ "$accel" = kvm ] && cpu=host
	[ "$accel" = tcg ] && acc=tcg,thread=multi
	# arm64: the virt board, whose one UART (PL011) takes the console; the
	# KTAP goes to a virtio console. "max" with QEMU's implementation-
	# defined pointer authentication: its documentation (cpu-features)
	# says the architected QARMA cipher "can be quite slow to emulate",
	# and the kernel signs every return address with it. What the kernel
	# does with pointer authentication is the same either way.
	if [ "$ROTHP_ARCH" = arm64 ]; then
		cpu=max,pauth-impdef=on
		machine=(-machine virt)
		ktap=(-device virtio-serial-pci -chardev "file,id=ktap,path=$dir/$ROTHP_KTAP_LOG"
			-device "virtconsole,chardev=ktap")
	else
		ktap=(-serial "file:$dir/$ROTHP_KTAP_LOG")
	fi
	cmdline=$(kernel_cmdline "$m")
	mkdir -p "$dir"
	rm -f "$dir/$ROTHP_CONSOLE_LOG" "$dir/$ROTHP_KTAP_LOG"
	# The disks in the order the guest expects them: /dev/vda, /dev/vdb, ...
	for d in $ROTHP_DISKS; do
		cp --sparse=always "$img/$d" "$dir/$d"
		drives+=(-drive "file=$dir/$d,if=virtio,format=raw,cache=$disk_cache")
	done
	echo "$qemu_bin${machine[*]:+ ${machine[*]}} -accel $acc -cpu $cpu -smp $cpus -m $mem -kernel $kimg -append '$cmdline'" >"$dir/qemu.cmd"
	timeout -k 10 "$tmo" "$qemu_bin" "${machine[@]}" \
		-accel "$acc" -cpu "$cpu" -smp "$cpus" -m "$mem" \
		-nodefaults -display none -no-reboot \
		-kernel "$kimg" -initrd "$img/initramfs.cpio" \
		-append "$cmdline" \
		"${drives[@]}" \
		-serial "file:$dir/$ROTHP_CONSOLE_LOG" "${ktap[@]}" \
		>"$dir/qemu.log" 2>&1
}

accel=${ACCEL:-tcg}
case "$accel" in
tcg | kvm) ;;
auto)
	accel=tcg
	if [ -w /dev/kvm ]; then
		info "probing KVM with a real boot"
		if qemu kvm "$run/kvm-probe" 60 probe &&
			grep -qF "$ROTHP_PROBE_OK" "$run/kvm-probe/$ROTHP_KTAP_LOG" 2>/dev/null; then
			accel=kvm
		else
			info "KVM guest did not come up ($(grep -m1 -i error "$run/kvm-probe/qemu.log" 2>/dev/null || echo 'no output')); falling back to TCG"
		fi
	else
		info "/dev/kvm not usable; using TCG"
	fi
	;;
*) die "ACCEL must be tcg, kvm or auto" ;;
esac

info "booting $name ($accel, $cpus cpus, $mem, mode $mode${FILTER:+, filter $FILTER}); console: ${run#"$ROTHP_TOP"/}/$ROTHP_CONSOLE_LOG"
mkdir -p "$run"
start=$(date +%s)
qemu "$accel" "$run" "$boot_timeout" "$mode" &
qpid=$!
# Show the runner's progress while the guest runs; tail ends with QEMU.
sleep 1
tail -n +1 -F --pid="$qpid" "$run/$ROTHP_KTAP_LOG" 2>/dev/null |
	sed -u 's/\r$//' | grep --line-buffered -E "$ROTHP_PROGRESS_RE" |
	sed -u "s/^/  [guest] /" || true
rc=0
wait "$qpid" || rc=$?
elapsed=$(($(date +%s) - start))
if [ "$rc" -eq 124 ] || [ "$rc" -eq 137 ]; then
	info "guest did not finish within ${boot_timeout}s (BOOT_TIMEOUT)"
	exit 1
elif [ "$rc" -ne 0 ]; then
	info "qemu failed (exit $rc): $(tail -n 3 "$run/qemu.log")"
	exit 1
fi
if ! grep -q "^$ROTHP_DONE" "$run/$ROTHP_KTAP_LOG"; then
	info "guest stopped before the runner finished (panic or crash?); see $run/$ROTHP_CONSOLE_LOG"
	exit 1
fi
info "guest finished in ${elapsed}s"
