# SPDX-License-Identifier: GPL-2.0
"""Tests of gate: the upstream baseline, recorded from a run dir and
applied to a run's cases."""
import os
import tempfile
import unittest
from unittest import mock

from rothp import gate
from rothp.tests.runs import DONE, GUEST, block, header, write_run

UP = 'upstream.khugepaged.file.ext4'


class GateTest(unittest.TestCase):
    def setUp(self):
        self.tmp = tempfile.TemporaryDirectory()
        self.addCleanup(self.tmp.cleanup)

    def baseline(self, lines, guest=GUEST):
        """A baseline file of those case lines, recorded on guest."""
        path = os.path.join(self.tmp.name, 'baseline.txt')
        with open(path, 'w') as f:
            f.write('# made up\n' + (guest + '\n' if guest else '') + '\n'.join(lines) + '\n')
        return path


class TestLoad(GateTest):
    def test_repeated_names_stay_apart(self):
        path = self.baseline([f'{UP}: a: PASS', f'{UP}: a: FAIL  # second', '',
                              'not a case line', f'{UP}: b: MAYBE'])
        self.assertEqual(gate.load(path), {(f'{UP}: a', 1): ('PASS', ''),
                                           (f'{UP}: a', 2): ('FAIL', 'second')})

    def test_no_file(self):
        self.assertEqual(gate.load(os.path.join(self.tmp.name, 'none')), {})
        self.assertIsNone(gate.load_guest(os.path.join(self.tmp.name, 'none')))

    def test_show(self):
        path = self.baseline([f'{UP}: a: PASS', f'{UP}: b: SKIP  # no swap'])
        self.assertEqual(gate.show(path), [f'PASS {UP}: a', f'SKIP {UP}: b  # no swap'])


class TestApply(GateTest):
    def apply(self, base, cases, guest=GUEST, recorded=GUEST):
        return gate.apply(cases, path=self.baseline(base, recorded), guest=guest)

    def test_regression_fails(self):
        out = self.apply([f'{UP}: a: PASS', f'{UP}: b: PASS'],
                         [(f'{UP}: a', 'FAIL', 'exit 1'), (f'{UP}: b', 'FAIL', '')])
        self.assertEqual(out, [(f'{UP}: a', 'FAIL', 'regression: passes on baseline 6.12; exit 1'),
                               (f'{UP}: b', 'FAIL', 'regression: passes on baseline 6.12')])

    def test_fails_on_both_is_a_skip(self):
        out = self.apply([f'{UP}: a: FAIL  # timeout', f'{UP}: b: FAIL  # same',
                          f'{UP}: c: FAIL'],
                         [(f'{UP}: a', 'FAIL', 'exit 1'), (f'{UP}: b', 'FAIL', 'same'),
                          (f'{UP}: c', 'FAIL', '')])
        self.assertEqual(out, [
            (f'{UP}: a', 'SKIP', 'fails on baseline 6.12 too: timeout (here: exit 1)'),
            (f'{UP}: b', 'SKIP', 'fails on baseline 6.12 too: same'),
            (f'{UP}: c', 'SKIP', 'fails on baseline 6.12 too: no reason given')])

    def test_what_the_gate_leaves(self):
        cases = [(f'{UP}: new', 'FAIL', 'not in the baseline'),
                 (f'{UP}: skipped', 'FAIL', 'skipped on 6.12'),
                 (f'{UP}: fixed', 'PASS', ''),
                 ('collapse_text.ext4: a', 'FAIL', 'ours')]
        out = self.apply([f'{UP}: skipped: SKIP  # no swap', f'{UP}: fixed: FAIL',
                          'collapse_text.ext4: a: FAIL'], cases)
        self.assertEqual(out, cases)

    def test_repeated_names(self):
        out = self.apply([f'{UP}: a: PASS', f'{UP}: a: FAIL'],
                         [(f'{UP}: a', 'FAIL', ''), (f'{UP}: a', 'FAIL', '')])
        self.assertEqual([c[1] for c in out], ['FAIL', 'SKIP'])

    def test_no_baseline(self):
        path = os.path.join(self.tmp.name, 'none.txt')
        cases = [(f'{UP}: a', 'FAIL', 'x')]
        out = gate.apply(cases, path=path, guest=GUEST)
        self.assertEqual(out[0][:2], ('upstream gate', 'FAIL'))
        self.assertIn('no baseline results in', out[0][2])
        self.assertIn('rothp-host gate record RUN_DIR', out[0][2])
        self.assertEqual(out[1:], cases)
        # Without upstream cases there is nothing to gate.
        self.assertEqual(gate.apply([('a', 'FAIL', '')], path=path), [('a', 'FAIL', '')])

    def test_gate_turned_off(self):
        cases = [(f'{UP}: a', 'FAIL', 'x')]
        self.assertEqual(gate.apply(cases, path=''), cases)
        with mock.patch.dict(os.environ, {'UPSTREAM_BASELINE': ''}):
            self.assertEqual(gate.apply(cases), cases)
        with mock.patch.dict(os.environ, {'UPSTREAM_BASELINE': self.baseline([f'{UP}: a: FAIL'])}):
            self.assertEqual(gate.apply(cases)[0][1], 'SKIP')


class TestGuestShape(GateTest):
    CASES = [(f'{UP}: a', 'FAIL', '')]

    def gate_failures(self, guest, recorded):
        out = gate.apply(self.CASES, path=self.baseline([f'{UP}: a: FAIL'], recorded),
                         guest=guest)
        # The cases are judged all the same.
        self.assertEqual(out[-1], (f'{UP}: a', 'SKIP',
                                   'fails on baseline 6.12 too: no reason given'))
        return out[:-1]

    def test_same_guest(self):
        self.assertEqual(self.gate_failures(GUEST, GUEST), [])

    def test_other_cpus_or_swap_fail(self):
        for other in ('# guest: cpus=4 preempt=full swap=on',
                      '# guest: cpus=2 preempt=full swap=off'):
            out = self.gate_failures(GUEST, other)
            self.assertEqual(out, [('upstream gate', 'FAIL',
                                    f'the baseline was recorded on "{other[2:]}", this run is '
                                    f'on "{GUEST[2:]}": record it again on this guest')])

    def test_other_preemption_is_the_same_shape(self):
        self.assertEqual(self.gate_failures('# guest: cpus=2 preempt=none swap=on', GUEST), [])

    def test_unknown_guest_is_not_compared(self):
        self.assertEqual(self.gate_failures(None, GUEST), [])
        self.assertEqual(self.gate_failures(GUEST, None), [])


RUN = block('''
    # rothp-runner: start upstream.khugepaged.file.ext4
        1..3
        ok 1 a
        not ok 2 b # collapse failed
        ok 3 # SKIP no swap
    not ok 2 upstream.khugepaged.file.ext4 # exit 1
    ok 3 collapse_text.ext4
    not ok 4 prompt_collapse # exit 1
''')


class TestRecord(GateTest):
    def test_record(self):
        ktap = header(4, kernel='6.12.118-rothp-baseline') + 'ok 1 guest.cpus\n' + RUN + DONE
        run = write_run(self.tmp.name, 'baseline-debug', ktap)
        out = os.path.join(self.tmp.name, 'out.txt')
        n, others, written = gate.record(run, out)
        self.assertEqual(written, out)
        self.assertEqual((n, others), (3, [('prompt_collapse', 'FAIL', 'exit 1')]))
        with open(out) as f:
            lines = f.read().splitlines()
        self.assertIn('Kernel 6.12.118-rothp-baseline;', lines[2])
        self.assertEqual(lines[len(gate.HEADER):], [
            GUEST, f'{UP}: a: PASS', f'{UP}: b: FAIL  # collapse failed', f'{UP}: no swap: SKIP'])
        # What was recorded is what the gate reads.
        self.assertEqual(gate.load_guest(out), GUEST)
        self.assertEqual(gate.load(out)[(f'{UP}: b', 1)], ('FAIL', 'collapse failed'))

    def test_unfinished_run_refused(self):
        run = write_run(self.tmp.name, 'cut', header(4) + 'ok 1 guest.cpus\n')
        with self.assertRaisesRegex(gate.NotRecorded, '^1 of 4 test programs reported$'):
            gate.record(run, os.path.join(self.tmp.name, 'out.txt'))
        self.assertFalse(os.path.exists(os.path.join(self.tmp.name, 'out.txt')))

    def test_run_without_guest_line_refused(self):
        run = write_run(self.tmp.name, 'host', 'KTAP version 1\n1..1\nok 1 a\n' + DONE)
        with self.assertRaisesRegex(gate.NotRecorded, '"# guest:" line'):
            gate.record(run, os.path.join(self.tmp.name, 'out.txt'))


class TestArch(GateTest):
    """Each architecture and page size is judged against its own baseline."""

    def test_default_paths(self):
        self.assertEqual(gate.default_path(GUEST), gate.DEFAULT)
        # A line of before arch= and pagesize= is x86-64's, 4 KiB pages.
        self.assertEqual(gate.default_path('# guest: cpus=2 preempt=full swap=on'), gate.DEFAULT)
        self.assertEqual(gate.default_path(None), gate.DEFAULT)
        arm = '# guest: cpus=2 preempt=full swap=on arch=aarch64 pagesize=16384'
        self.assertEqual(os.path.basename(gate.default_path(arm)),
                         'upstream-baseline-aarch64-16k.txt')

    def test_old_recording_matches_x86_line(self):
        old = self.baseline([f'{UP}: a: PASS'], guest='# guest: cpus=2 preempt=full swap=on')
        out = gate.apply([(f'{UP}: a', 'PASS', '')], path=old, guest=GUEST)
        self.assertEqual(out, [(f'{UP}: a', 'PASS', '')])

    def test_other_arch_refused(self):
        path = self.baseline([f'{UP}: a: PASS'])
        arm = GUEST.replace('arch=x86_64', 'arch=aarch64')
        out = gate.apply([(f'{UP}: a', 'PASS', '')], path=path, guest=arm)
        self.assertEqual(out[0][1], 'FAIL')
        self.assertIn('record it again on this guest', out[0][2])
