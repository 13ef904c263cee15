# SPDX-License-Identifier: GPL-2.0
"""Tests of contract: that guest/init prints every marker the host expects
and no other, reads the options and runs the modes the host names, and
that scripts/contract.sh says what contract.py says."""
import glob
import os
import re
import unittest

from rothp import contract, ktap

TOP = os.path.dirname(os.path.dirname(os.path.dirname(os.path.dirname(os.path.abspath(__file__)))))
INIT = os.path.join(TOP, 'guest', 'init')
CONTRACT_SH = os.path.join(TOP, 'scripts', 'contract.sh')
TESTS_LIST = os.path.join(TOP, 'guest', 'tests.list')
BENCH_LIST = os.path.join(TOP, 'bench', 'bench.list')
# Every list the guest runs: tests.list, the kernel's own mm selftests
# appended to it, bench.list.
LISTS = (TESTS_LIST, os.path.join(TOP, 'guest', 'upstream.list'),
         os.path.join(TOP, 'guest', 'upstream-full.list'), BENCH_LIST)
# say_KEY() { echo "TEXT"; }: one marker of init.
SAY = re.compile(r'^say_(\w+)\(\) \{ echo "([^"]*)"; \}$')
# A shell assignment of contract.sh: NAME='VALUE'.
ASSIGN = re.compile(r"^(ROTHP_\w+)='([^']*)'$")
# A variable init sets outside its functions: name=value.
INIT_VAR = re.compile(r'^(\w+)=(\S+)$')


def read(path):
    with open(path) as f:
        return f.read()


def init_markers():
    """{key: marker text with {field} for $1, $2, ...} of guest/init."""
    found = {}
    for line in read(INIT).splitlines():
        m = SAY.match(line)
        if m:
            key, text = m.groups()
            names = contract.fields(key) if key in contract.MARKERS else []
            found[key] = re.sub(r'\$\{?(\d)\}?',
                                lambda d: '{' + (names[int(d.group(1)) - 1]
                                                 if int(d.group(1)) <= len(names) else '?') + '}',
                                text)
    return found


def init_vars():
    """{name: value} of the variables guest/init sets outside its
    functions, the $name in a value replaced by that variable's value."""
    found = {}
    for line in read(INIT).splitlines():
        m = INIT_VAR.match(line)
        if m:
            found[m.group(1)] = re.sub(r'\$\{?(\w+)\}?', lambda v: found[v.group(1)],
                                       m.group(2))
    return found


def list_lines(path):
    """The entries of a list, each split into its words."""
    return [line.split() for line in read(path).splitlines()
            if line.strip() and not line.lstrip().startswith('#')]


class InitTest(unittest.TestCase):
    def setUp(self):
        self.init = read(INIT)

    def test_markers_match(self):
        self.assertEqual(init_markers(), contract.MARKERS)

    def test_markers_used(self):
        for key in contract.MARKERS:
            self.assertRegex(self.init, rf'(^|[\s(|]|\$\()say_{key}\b(?!\(\))',
                             f'init defines say_{key} but never calls it')

    def test_no_marker_outside_say(self):
        for line in self.init.splitlines():
            if line.lstrip().startswith('#') or SAY.match(line):
                continue
            for text in (contract.RUNNER, contract.GUEST):
                self.assertNotIn(text, line, 'a marker printed without say_*')

    def test_trace(self):
        self.assertIn(f"say_trace() {{ sed 's/^/{contract.TRACE}/'; }}", self.init)

    def test_options(self):
        got = re.findall(r'^\s*' + re.escape(contract.OPTION_PREFIX) + r'(\w+)=\*\)',
                         self.init, re.M)
        self.assertEqual(sorted(got), sorted(contract.OPTIONS))

    def test_modes(self):
        dispatch = self.init[self.init.index('case "$mode" in'):]
        dispatch = dispatch[:dispatch.index('esac')]
        got = re.findall(r'^(\w+)\) mode_(\w+) ;;$', dispatch, re.M)
        self.assertTrue(all(a == b for a, b in got))
        default = re.search(r'^\*\) mode_(\w+) ;;$', dispatch, re.M).group(1)
        self.assertEqual(default, contract.DEFAULT_MODE)
        self.assertEqual(sorted([a for a, _ in got] + [default]), sorted(contract.MODES))
        self.assertIn(f'\tmode={contract.DEFAULT_MODE}\n', self.init)

    def test_paths(self):
        # Image NAME.img is the device $NAME_dev of init, mount point
        # /mnt/NAME the directory $NAME_dir.
        want = {'guest_dir': contract.GUEST_DIR, 'tests_list': contract.TESTS_LIST,
                'bench_list': contract.BENCH_LIST,
                'stress_duration': str(contract.STRESS_DURATION)}
        want.update((image.split('.')[0] + '_dev', device) for image, device in contract.DISKS)
        want.update((os.path.basename(m) + '_dir', m) for m in contract.MOUNTS)
        got = init_vars()
        self.assertEqual({k: got.get(k) for k in want}, want)
        swap = contract.SWAP_DISK.split('.')[0] + '_dev'
        self.assertIn(f'swapon "${swap}"', self.init)
        self.assertIn('\tduration=$stress_duration\n', self.init)

    def test_paths_named_once(self):
        # Outside the variables that name them, init names no list, disk
        # or mount point by its path.
        paths = re.compile('|'.join(re.escape(p) for p in (
            [contract.GUEST_DIR + '/'] + [d for _, d in contract.DISKS] + list(contract.MOUNTS))))
        for line in self.init.splitlines():
            if line.lstrip().startswith('#') or INIT_VAR.match(line):
                continue
            self.assertNotRegex(line, paths)

    def test_variables_used(self):
        for name in init_vars():
            self.assertTrue(re.search(r'\$\{?' + name + r'\b', self.init),
                            f'init sets {name} but never uses it')


class RegexTest(unittest.TestCase):
    """The regular expressions the host parses with match what init prints."""

    def test_every_marker(self):
        values = {'cpus': '2', 'rc': '137', 'n': '12', 'seconds': '0.5', 'name': 'a.ext4',
                  'release': '6.12.0', 'fs': 'xfs', 'device': '/dev/vdb', 'dir': '/mnt/xfs',
                  'preempt': 'full', 'swap': 'on', 'error': 'no such device', 'arch': 'aarch64',
                  'pagesize': '65536'}
        for key in contract.MARKERS:
            line = contract.render(key, **{f: values[f] for f in contract.fields(key)})
            m = contract.regex(key).match(line)
            self.assertIsNotNone(m, key)
            self.assertEqual(m.groupdict(), {f: values[f] for f in contract.fields(key)})

    def test_ktap_uses_them(self):
        self.assertEqual(ktap.guest_line([contract.render('guest', cpus=1, preempt='none',
                                                          swap='off', arch='aarch64',
                                                          pagesize=16384) + '\n']),
                         '# guest: cpus=1 preempt=none swap=off arch=aarch64 pagesize=16384')


class ShellTest(unittest.TestCase):
    def test_contract_sh(self):
        got = {}
        for line in read(CONTRACT_SH).splitlines():
            m = ASSIGN.match(line)
            if m:
                got[m.group(1)] = m.group(2)
            elif line.startswith('ROTHP_'):
                self.fail(f'contract.sh: not NAME=\'VALUE\': {line}')
        self.assertEqual(got, contract.shell_values())

    def test_markers_are_plain(self):
        # The scripts put the markers in grep and sed patterns (sed's
        # delimited by /) and every value in single quotes.
        for name, value in contract.shell_values().items():
            self.assertNotIn("'", value, name)
            # The paths and file names are neither.
            if name not in ('ROTHP_PROGRESS_RE', 'ROTHP_OPTION_PREFIX') \
                    and not name.endswith(('_DIR', '_LIST', '_LOG', '_DISK', '_DISKS', '_MOUNTS')):
                self.assertNotRegex(value, r'[][\\.*^$+?(){}|/"]', name)

    def test_scripts_use_it(self):
        # The host's scripts name the run directory's logs, the disk
        # images, the guest's lists and mount points by contract.sh's
        # variables; a comment may name them.
        names = ([contract.CONSOLE_LOG, contract.KTAP_LOG, contract.TESTS_LIST,
                  contract.BENCH_LIST] + [image for image, _ in contract.DISKS]
                 + list(contract.MOUNTS))
        for path in sorted(glob.glob(os.path.join(TOP, 'scripts', '*.sh'))):
            if path == CONTRACT_SH:
                continue
            for n, line in enumerate(read(path).splitlines(), 1):
                if line.lstrip().startswith('#'):
                    continue
                for name in names:
                    self.assertNotIn(name, line, f'{os.path.basename(path)}:{n}')


class StressListTest(unittest.TestCase):
    """Stress mode runs the stress lines of tests.list with their last
    argument, the seconds of stress, replaced: there must be some, and that
    argument must be the seconds."""

    def test_stress_lines(self):
        stress = [w for w in list_lines(TESTS_LIST) if w[2] == 'stress']
        self.assertGreaterEqual(len(stress), 2)
        for w in stress:
            self.assertEqual(len(w), 5, w)
            self.assertTrue(w[3].startswith('/mnt/') and w[4].isdigit(), w)
        self.assertIn('$3 == "stress"', read(INIT))


class ListNamesTest(unittest.TestCase):
    """A name in the guest's output names one program: an entry of
    tests.list or bench.list is its binary's name and its file system's,
    so the kselftests and the benchmarks never share one."""

    def test_names_apart(self):
        tests, benches = ({w[0] for w in list_lines(path)} for path in (TESTS_LIST, BENCH_LIST))
        self.assertTrue(tests and benches)
        self.assertEqual(tests & benches, set())

    def test_named_after_program(self):
        # NAME.FS: NAME the binary, FS the file system of its directory.
        for path in (TESTS_LIST, BENCH_LIST):
            for w in list_lines(path):
                self.assertEqual(w[0], f'{w[2]}.{os.path.basename(w[3])}', w)

    def test_mount_points(self):
        # The directories the lists give the tests are the guest's mount
        # points, or in them.
        for path in LISTS:
            for w in list_lines(path):
                for arg in w[3:]:
                    if arg.startswith('/mnt/'):
                        self.assertIn('/'.join(arg.split('/')[:3]), contract.MOUNTS, w)


if __name__ == '__main__':
    unittest.main()
