# SPDX-License-Identifier: GPL-2.0
# The host-guest contract for the shell scripts; sourced by lib.sh.
# The source is scripts/rothp/contract.py (its shell_values()): change it
# there, then here; test_contract fails until the two agree. Markers are
# plain text, safe in grep and sed patterns.
# shellcheck shell=bash disable=SC2034 # the scripts that source lib.sh use them

# Lines of the runner's output (RUN_DIR/ktap.log) and their beginnings.
ROTHP_RUNNER='# rothp-runner: '
ROTHP_GUEST='# guest: '
ROTHP_DONE='# rothp-runner: done'
ROTHP_GCOV_SAVED='# rothp-runner: gcov saved '
ROTHP_GCOV_FAILED='# rothp-runner: cannot save gcov: '
ROTHP_DEMO_START='# rothp-runner: demo start'
ROTHP_DEMO_EXIT='# rothp-runner: demo exit '
ROTHP_PROBE_OK='# rothp-runner: probe ok '
ROTHP_PROGRESS='# progress: '
# The lines boot.sh shows while the guest runs (grep -E).
ROTHP_PROGRESS_RE='^(ok|not ok|# rothp-runner: (start|done|demo|cannot|bench)|# progress: )'

# rothp.mode=, the default first, and the rothp.NAME= options.
ROTHP_MODES='check stress bench demo probe'
ROTHP_OPTION_PREFIX='rothp.'
ROTHP_OPTIONS='mode cpus preempt filter timeout trace duration gcov ktap'

# The guest's directory of lists and tests, and its lists; the disk
# images, each by name and all in the order QEMU gets them (/dev/vda,
# /dev/vdb, ...); the swap disk holds the gcov archive; where the guest
# mounts the file systems; rothp.duration='s default, also make stress's
# DURATION; the run directory's logs of the first and the second serial
# port.
ROTHP_GUEST_DIR='/rothp'
ROTHP_TESTS_LIST='/rothp/tests.list'
ROTHP_BENCH_LIST='/rothp/bench.list'
ROTHP_DISKS='ext4.img xfs.img swap.img ext3.img ext2.img'
ROTHP_EXT4_DISK='ext4.img'
ROTHP_XFS_DISK='xfs.img'
ROTHP_SWAP_DISK='swap.img'
ROTHP_EXT3_DISK='ext3.img'
ROTHP_EXT2_DISK='ext2.img'
ROTHP_MOUNTS='/mnt/ext4 /mnt/xfs /mnt/ext3 /mnt/ext2 /mnt/tmpfs'
ROTHP_STRESS_DURATION='600'
ROTHP_CONSOLE_LOG='console.log'
ROTHP_KTAP_LOG='ktap.log'
