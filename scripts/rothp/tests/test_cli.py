# SPDX-License-Identifier: GPL-2.0
"""Tests of cli: the subcommands as make, bench.sh and matrix.sh run them,
their files, output and exit status."""
import contextlib
import io
import os
import tempfile
import unittest
from unittest import mock

from rothp import cli
from rothp.tests.runs import DONE, block, header, write_run

GUEST_RUN = block('''
    # rothp-runner: start upstream.cow
        1..2
        ok 1 a
        not ok 2 b # exit 1
    not ok 1 upstream.cow # exit 1
    ok 2 collapse_text.ext4 # SKIP no xfs
''')


def run_cli(*argv):
    """(exit status, stdout, stderr) of rothp-host argv."""
    out, err = io.StringIO(), io.StringIO()
    with contextlib.redirect_stdout(out), contextlib.redirect_stderr(err):
        try:
            rc = cli.main(list(argv))
        except SystemExit as e:
            rc = e.code
    return rc, out.getvalue(), err.getvalue()


class CliTest(unittest.TestCase):
    def setUp(self):
        self.tmp = tempfile.TemporaryDirectory()
        self.addCleanup(self.tmp.cleanup)
        self.guest = write_run(self.tmp.name, 'patched-debug', header(2) + GUEST_RUN + DONE)
        self.host = write_run(self.tmp.name, 'host',
                              'KTAP version 1\n1..1\nok 1 hugetext.host\n' + DONE)
        self.baseline = os.path.join(self.tmp.name, 'baseline.txt')
        with open(self.baseline, 'w') as f:
            f.write('# guest: cpus=2 preempt=full swap=on\n'
                    'upstream.cow: a: PASS\nupstream.cow: b: FAIL  # exit 1\n')

    def path(self, name):
        return os.path.join(self.tmp.name, name)


class TestParse(CliTest):
    def parse(self, *runs):
        with mock.patch.dict(os.environ, {'UPSTREAM_BASELINE': self.baseline}):
            return run_cli('parse', runs[0], self.path('check.ktap'), *runs[1:])

    def test_check(self):
        rc, out, err = self.parse(self.guest, self.host)
        self.assertEqual((rc, err), (0, ''))
        self.assertEqual(out.splitlines(), [
            'PASS upstream.cow: a',
            'SKIP upstream.cow: b     # fails on baseline 6.12 too: exit 1',
            'SKIP collapse_text.ext4  # no xfs',
            'PASS hugetext.host',
            '2 passed, 0 failed, 2 skipped'])
        with open(self.path('check.summary')) as f:
            self.assertEqual(f.read(), out)
        with open(self.path('check.ktap')) as f:
            self.assertEqual(f.read(), header(2) + GUEST_RUN + DONE +
                             'KTAP version 1\n1..1\nok 1 hugetext.host\n' + DONE)

    def test_failure_exits_1(self):
        unfinished = write_run(self.tmp.name, 'stress', header(2) + GUEST_RUN)
        rc, out, _ = self.parse(unfinished)
        self.assertEqual(rc, 1)
        self.assertEqual(out.splitlines()[-1], '1 passed, 1 failed, 2 skipped')

    def test_usage(self):
        rc, _, err = run_cli('parse', self.guest)
        self.assertEqual(rc, 2)
        self.assertIn('OUT_KTAP', err)


class TestGate(CliTest):
    def test_record_and_show(self):
        rc, out, err = run_cli('gate', 'record', self.guest, self.path('b.txt'))
        self.assertEqual((rc, err), (0, ''))
        where = os.path.relpath(self.path('b.txt'))
        self.assertEqual(out, f'2 upstream cases recorded in {where}\n')
        rc, out, _ = run_cli('gate', 'show', self.path('b.txt'))
        self.assertEqual((rc, out), (0, 'PASS upstream.cow: a\nFAIL upstream.cow: b  # exit 1\n'))

    def test_record_warns_of_other_failures(self):
        run = write_run(self.tmp.name, 'r', header(1) + 'not ok 1 security # exit 1\n' + DONE)
        rc, out, err = run_cli('gate', 'record', run, self.path('b.txt'))
        self.assertEqual(rc, 0)
        self.assertIn('0 upstream cases recorded', out)
        self.assertEqual(err, 'warning: security failed in that run: exit 1\n')

    def test_record_refuses(self):
        run = write_run(self.tmp.name, 'cut', header(3) + GUEST_RUN + DONE)
        rc, out, _ = run_cli('gate', 'record', run, self.path('b.txt'))
        self.assertEqual(rc, f'not recording {run}: 2 of 3 test programs reported')
        self.assertEqual(out, '')

    def test_usage(self):
        self.assertEqual(run_cli('gate')[0], 2)
        self.assertEqual(run_cli('gate', 'show', 'a', 'b')[0], 2)
