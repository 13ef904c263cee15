# SPDX-License-Identifier: GPL-2.0
"""contract: what the host and the guest runner (guest/init) agree on.

The lines the runner prints for the host (its markers), the modes it
runs, the options of the kernel command line it reads, and the paths both
sides name. Every host-side user takes them from here: the Python
modules import this one; the shell scripts source scripts/contract.sh,
whose values test_contract checks against shell_values(). On the guest
side, guest/init prints each marker from one function, say_KEY for the
key KEY of MARKERS below; test_contract checks the two lists against
each other, so neither side can change a marker alone.
"""
import re

# Every marker of the runner starts so; the guest's shape line so.
RUNNER = '# rothp-runner: '
GUEST = '# guest: '

# key: the marker's text, a field in braces. init prints it with
# say_KEY FIELD..., the fields in the order they appear here.
MARKERS = {
    'kernel': RUNNER + 'kernel {release}, {cpus} cpus',
    'start': RUNNER + 'start {name}',
    'took': RUNNER + '{name} took {seconds}s, exit {rc}',
    'cannot_mount': RUNNER + 'cannot mount {fs} {device} on {dir}: {error}',
    'gcov_saved': RUNNER + 'gcov saved {n} files',
    'gcov_failed': RUNNER + 'cannot save gcov: {error}',
    'bench_start': RUNNER + 'bench start {name}',
    'bench_exit': RUNNER + 'bench exit {name} {rc}',
    'demo_start': RUNNER + 'demo start',
    'demo_exit': RUNNER + 'demo exit {rc}',
    'probe_ok': RUNNER + 'probe ok {release}',
    'done': RUNNER + 'done',
    # The guest's shape: the KTAP header of check and stress, bench's and
    # demo's first line.
    'guest': GUEST + 'cpus={cpus} preempt={preempt} swap={swap} arch={arch} pagesize={pagesize}',
}
# What a field matches in the regular expressions made of the markers.
FIELDS = {'cpus': r'\d+', 'rc': r'\d+', 'n': r'\d+', 'seconds': r'[0-9.]+',
          'name': r'\S+', 'release': r'\S+', 'fs': r'\S+', 'device': r'\S+',
          'dir': r'\S+', 'preempt': r'\S+', 'swap': r'on|off',
          'arch': r'\S+', 'pagesize': r'\d+', 'error': r'.*'}
# The prefix of the trace events a failing test's output is followed by
# (rothp.trace=1).
TRACE = '# trace: '
# Printed by the test programs themselves while they run; boot.sh shows
# these lines with the runner's.
PROGRESS = '# progress: '

# The modes of rothp.mode=, the default first.
MODES = ('check', 'stress', 'bench', 'demo', 'probe')
DEFAULT_MODE = MODES[0]
# The options of the kernel command line the runner reads, rothp.NAME=.
OPTION_PREFIX = 'rothp.'
OPTIONS = ('mode', 'cpus', 'preempt', 'filter', 'timeout', 'trace', 'duration', 'gcov',
           'ktap')

# Paths in the guest. The runner reads its lists from GUEST_DIR, where
# image.sh puts them and the test programs.
GUEST_DIR = '/rothp'
TESTS_LIST = GUEST_DIR + '/tests.list'
BENCH_LIST = GUEST_DIR + '/bench.list'
# The disk images, as image.sh names them in build/image and boot.sh in
# the run directory. The swap disk holds the gcov archive after the
# "gcov saved" marker (rothp.gcov=1).
EXT4_DISK = 'ext4.img'
XFS_DISK = 'xfs.img'
SWAP_DISK = 'swap.img'
EXT3_DISK = 'ext3.img'
EXT2_DISK = 'ext2.img'
# The disks, in the order QEMU gets them (virtio: /dev/vda, /dev/vdb, ...):
# (image file, guest device).
DISKS = ((EXT4_DISK, '/dev/vda'), (XFS_DISK, '/dev/vdb'), (SWAP_DISK, '/dev/vdc'),
         (EXT3_DISK, '/dev/vdd'), (EXT2_DISK, '/dev/vde'))
# Where the runner mounts the file systems: image.sh makes the directories
# in the initramfs, the lists name them as the tests' arguments.
MOUNTS = ('/mnt/ext4', '/mnt/xfs', '/mnt/ext3', '/mnt/ext2', '/mnt/tmpfs')
# The seconds of stress when rothp.duration= does not say; make stress's
# DURATION defaults to it too.
STRESS_DURATION = 600
# The serial ports, in QEMU's order, and the run directory's file of each:
# the kernel console, then the runner's KTAP and markers.
CONSOLE_LOG = 'console.log'
KTAP_LOG = 'ktap.log'


def prefix(key):
    """The text of a marker up to its first field."""
    return MARKERS[key].split('{', 1)[0]


def fields(key):
    """The names of a marker's fields, in order."""
    return re.findall(r'\{(\w+)\}', MARKERS[key])


def regex(key):
    """A marker as a regular expression, its fields as named groups, for
    re.match on a line (what follows the marker is not looked at)."""
    parts = re.split(r'\{(\w+)\}', MARKERS[key])
    out = '^'
    for i, part in enumerate(parts):
        out += re.escape(part) if i % 2 == 0 else f'(?P<{part}>{FIELDS[part]})'
    return re.compile(out)


def render(key, **values):
    """A marker with its fields filled in: the line the runner prints."""
    return MARKERS[key].format(**values)


def shell_values():
    """The variables scripts/contract.sh must set, with their values."""
    return {
        'ROTHP_RUNNER': RUNNER,
        'ROTHP_GUEST': GUEST,
        'ROTHP_DONE': MARKERS['done'],
        'ROTHP_GCOV_SAVED': prefix('gcov_saved'),
        'ROTHP_GCOV_FAILED': prefix('gcov_failed'),
        'ROTHP_DEMO_START': MARKERS['demo_start'],
        'ROTHP_DEMO_EXIT': prefix('demo_exit'),
        'ROTHP_PROBE_OK': prefix('probe_ok'),
        'ROTHP_PROGRESS': PROGRESS,
        # The lines boot.sh shows while the guest runs: results, starts and
        # the end, the demo's and the bench's markers, failures to mount or
        # save, the tests' progress.
        'ROTHP_PROGRESS_RE': ('^(ok|not ok|' + RUNNER + '(start|done|demo|cannot|bench)|'
                              + PROGRESS + ')'),
        'ROTHP_MODES': ' '.join(MODES),
        'ROTHP_OPTION_PREFIX': OPTION_PREFIX,
        'ROTHP_OPTIONS': ' '.join(OPTIONS),
        'ROTHP_GUEST_DIR': GUEST_DIR,
        'ROTHP_TESTS_LIST': TESTS_LIST,
        'ROTHP_BENCH_LIST': BENCH_LIST,
        'ROTHP_DISKS': ' '.join(image for image, _ in DISKS),
        'ROTHP_EXT4_DISK': EXT4_DISK,
        'ROTHP_XFS_DISK': XFS_DISK,
        'ROTHP_SWAP_DISK': SWAP_DISK,
        'ROTHP_EXT3_DISK': EXT3_DISK,
        'ROTHP_EXT2_DISK': EXT2_DISK,
        'ROTHP_MOUNTS': ' '.join(MOUNTS),
        'ROTHP_STRESS_DURATION': str(STRESS_DURATION),
        'ROTHP_CONSOLE_LOG': CONSOLE_LOG,
        'ROTHP_KTAP_LOG': KTAP_LOG,
    }
