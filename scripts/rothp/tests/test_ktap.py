# SPDX-License-Identifier: GPL-2.0
"""Tests of ktap: the KTAP parser, the runner's own checks, the splat scan
and the summary."""
import tempfile
import unittest

from rothp import ktap
from rothp.tests.runs import DONE, block, header, write_run


def cases_of(text):
    """The leaf cases of a KTAP text."""
    return ktap.parse_ktap(block(text).splitlines(keepends=True))[0]


class TestParse(unittest.TestCase):
    def test_nested_subtests(self):
        cases = cases_of('''
            KTAP version 1
            1..2
            # rothp-runner: start one
                TAP version 13
                1..3
                ok 1 first case
                not ok 2 - second case # boom
                # a diagnostic line
                ok 3 third case
            not ok 1 one # exit 1
            # rothp-runner: start two
                1..1
                ok 1 only case
            ok 2 two
        ''')
        self.assertEqual(cases, [('one: first case', 'PASS', ''),
                                 ('one: second case', 'FAIL', 'boom'),
                                 ('one: third case', 'PASS', ''),
                                 ('two: only case', 'PASS', '')])

    def test_crash_before_plan(self):
        cases = cases_of('''
            1..1
                # starting
            not ok 1 crashed # exit 139
        ''')
        self.assertEqual(cases, [('crashed', 'FAIL', 'exit 139')])

    def test_timeout_without_output(self):
        cases = cases_of('''
            1..1
            not ok 1 slow # TIMEOUT after 60s
        ''')
        self.assertEqual(cases, [('slow', 'FAIL', 'TIMEOUT after 60s')])

    def test_timeout_midway(self):
        cases = cases_of('''
            1..1
                1..3
                ok 1 done in time
            not ok 1 slow # TIMEOUT after 60s
        ''')
        self.assertEqual(cases, [('slow: done in time', 'PASS', ''),
                                 ('slow: plan', 'FAIL', '1 of 3 planned results'),
                                 ('slow: exit', 'FAIL', 'TIMEOUT after 60s')])

    def test_incomplete_plan_fails(self):
        cases = cases_of('''
            1..1
                1..3
                ok 1 a
                ok 2 b
            ok 1 short
        ''')
        self.assertEqual(cases[-1], ('short: plan', 'FAIL', '2 of 3 planned results'))
        self.assertEqual(len(cases), 3)

    def test_exit_status_disagrees(self):
        cases = cases_of('''
            1..1
                1..1
                ok 1 a
            not ok 1 liar # exit 2
        ''')
        self.assertEqual(cases[-1], ('liar: exit', 'FAIL', 'exit 2'))

    def test_skips(self):
        cases = cases_of('''
            1..2
                1..3
                ok 1 # SKIP no swap
                ok 2 named # SKIP not on this kernel
                ok 3 # SKIP
            ok 1 some
            ok 2 whole # SKIP (exit 4: see its output)
        ''')
        self.assertEqual(cases, [('some: no swap', 'SKIP', ''),
                                 ('some: named', 'SKIP', 'not on this kernel'),
                                 ('some: no reason given', 'SKIP', ''),
                                 ('whole', 'SKIP', '(exit 4: see its output)')])
        self.assertEqual(ktap.count(cases, 'SKIP'), 4)

    def test_whole_skip_gives_its_plans_reason(self):
        cases = cases_of('''
            1..3
                TAP version 13
                1..0 # SKIP kernel lacks the knob
            ok 1 whole # SKIP (exit 4: see its output)
                1..0 # skip
            ok 2 bare # SKIP (exit 4: see its output)
                1..0 # SKIP empty but passed
            ok 3 passed
        ''')
        self.assertEqual(cases, [('whole', 'SKIP', 'kernel lacks the knob'),
                                 ('bare', 'SKIP', '(exit 4: see its output)'),
                                 ('passed', 'PASS', '')])

    def test_xfail_passes_and_unnamed_case(self):
        cases = cases_of('''
            1..1
                1..2
                not ok 1 known # XFAIL not fixed upstream
                ok 2
            ok 1 p
        ''')
        self.assertEqual(cases, [('p: known', 'PASS', 'XFAIL not fixed upstream'),
                                 ('p: case 2', 'PASS', '')])

    def test_program_count(self):
        _, n = ktap.parse_ktap(['1..2\n', 'ok 1 a\n', '    ok 1 x\n', 'ok 2 b\n'])
        self.assertEqual(n, 2)


class TestRunner(unittest.TestCase):
    def setUp(self):
        self.tmp = tempfile.TemporaryDirectory()
        self.addCleanup(self.tmp.cleanup)

    def runner(self, name, text):
        """The runner's own failures in a run dir of that KTAP."""
        _, cases = ktap.run_cases(write_run(self.tmp.name, name, text))
        return [c for c in cases if c[0].startswith('runner ')]

    def test_whole_run(self):
        lines, cases = ktap.run_cases(write_run(
            self.tmp.name, 'good', header(1) + 'ok 1 a\n' + DONE))
        self.assertEqual(cases, [('a', 'PASS', '')])
        self.assertEqual(lines[0], 'KTAP version 1\n')

    def test_no_plan(self):
        self.assertEqual(self.runner('empty', ''), [
            ('runner empty', 'FAIL', 'no KTAP plan (did it run?)'),
            ('runner empty', 'FAIL', 'runner did not finish')])

    def test_missing_programs(self):
        self.assertEqual(self.runner('cut', header(3) + 'ok 1 a\n' + DONE),
                         [('runner cut', 'FAIL', '1 of 3 test programs reported')])

    def test_not_done(self):
        self.assertEqual(self.runner('hung', header(1) + 'ok 1 a\n'),
                         [('runner hung', 'FAIL', 'runner did not finish')])

    def test_guest_without_guest_line(self):
        self.assertEqual(self.runner('old', header(1, guest=None) + 'ok 1 a\n' + DONE),
                         [('runner old', 'FAIL', 'no "# guest:" header (cpus, preempt)')])

    def test_host_run_needs_no_guest_line(self):
        text = 'KTAP version 1\n1..1\nok 1 hugetext.host\n' + DONE
        self.assertEqual(self.runner('host', text), [])

    def test_guest_line(self):
        lines = header(1).splitlines(keepends=True)
        self.assertEqual(ktap.guest_line(lines),
                         '# guest: cpus=2 preempt=full swap=on arch=x86_64 pagesize=4096')
        self.assertIsNone(ktap.guest_line(['1..1\n']))


# One console line of each kind of report, in SPLATS order.
SPLAT_LINES = [
    ('Oops', '[   12.3] Oops: 0000 [#1] PREEMPT SMP KASAN NOPTI'),
    ('Oops', '[   12.3] general protection fault, probably for non-canonical address'),
    ('BUG', '[   12.3] kernel BUG at mm/khugepaged.c:1234!'),
    ('BUG', '[   12.3] BUG: Bad page state in process textprog  pfn:12345'),
    ('WARNING', '[   12.3] WARNING: CPU: 1 PID: 77 at mm/filemap.c:99 filemap_x+0x1/0x2'),
    ('WARNING', '[   12.3] ------------[ cut here ]------------'),
    ('KASAN', '[   12.3] KASAN: null-ptr-deref in range [0x0000000000000000-0x7]'),
    ('lockdep', '[   12.3] WARNING: possible circular locking dependency detected'),
    ('lockdep', '[   12.3] WARNING: suspicious RCU usage'),
    ('lockdep', '[   12.3] DEBUG_LOCKS_WARN_ON(1)'),
    ('panic', '[   12.3] Kernel panic - not syncing: Fatal exception'),
    ('hang', '[   12.3] INFO: task khugepaged:40 blocked for more than 120 seconds.'),
    ('hang', '[   12.3] watchdog: BUG soft lockup - CPU#0 stuck for 22s!'),
    ('list corruption', '[   12.3] list_add corruption. prev->next should be next'),
    ('fs corruption', '[   12.3] XFS (vdb): Metadata corruption detected at xfs_x+0x1'),
    ('fs corruption', '[   12.3] EXT4-fs error (device vda): ext4_lookup:1: bad inode'),
]


class TestSplats(unittest.TestCase):
    def test_each_kind(self):
        found = ktap.find_splats([line + '\n' for _, line in SPLAT_LINES])
        self.assertEqual([k for k, _, _ in found], [k for k, _ in SPLAT_LINES])
        self.assertEqual([n for _, n, _ in found], list(range(1, len(SPLAT_LINES) + 1)))
        self.assertEqual(found[2][2], SPLAT_LINES[2][1].strip())

    def test_first_kind_wins(self):
        # A line counts once, as the first kind in SPLATS that matches it.
        found = ktap.find_splats(['BUG: KASAN: slab-use-after-free in collapse_file+0x10\n'])
        self.assertEqual([k for k, _, _ in found], ['BUG'])

    def test_benign_banners(self):
        self.assertEqual(ktap.find_splats([
            'Lock dependency validator: RCU lockdep checking is enabled.\n',
            'KernelAddressSanitizer initialized (generic)\n',
            'rothp: a quiet line\n']), [])

    def test_console_fails_the_run(self):
        with tempfile.TemporaryDirectory() as tmp:
            console = 'booting\n' + SPLAT_LINES[2][1] + '\n'
            _, cases = ktap.run_cases(write_run(tmp, 'r', header(1) + 'ok 1 a\n' + DONE,
                                                console))
        self.assertEqual(cases[-1], ('console: BUG', 'FAIL',
                                     'console.log:2: ' + SPLAT_LINES[2][1].strip()))

    def test_at_most_twenty_listed(self):
        with tempfile.TemporaryDirectory() as tmp:
            console = ('Kernel panic - not syncing: ' + 'x' * 200 + '\n') * 30
            _, cases = ktap.run_cases(write_run(tmp, 'r', header(0) + DONE, console))
        self.assertEqual(len(cases), ktap.MAX_SPLATS)
        self.assertEqual(len(cases[0][2]), len('console.log:1: ') + 160)


class TestSummary(unittest.TestCase):
    CASES = [('a', 'PASS', ''), ('long name', 'FAIL', 'why'), ('c', 'SKIP', 'no swap')]

    def test_lines(self):
        self.assertEqual(ktap.summary(self.CASES), [
            'PASS a',
            'FAIL long name  # why',
            'SKIP c          # no swap',
            '1 passed, 1 failed, 1 skipped'])

    def test_empty(self):
        self.assertEqual(ktap.summary([]), ['0 passed, 0 failed, 0 skipped'])

    def test_exit_status(self):
        self.assertEqual(ktap.exit_status(self.CASES), 1)
        self.assertEqual(ktap.exit_status([c for c in self.CASES if c[1] != 'FAIL']), 0)
        self.assertEqual(ktap.exit_status([]), 1)
