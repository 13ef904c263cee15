# SPDX-License-Identifier: GPL-2.0
"""Tests of selftest's KTAP report, which ktap.py reads back when
test-host.sh indents it below "host.python"."""
import io
import re
import unittest

from rothp import ktap, selftest


def sample_suite():
    """Tests of every outcome; a local class, so that discovery skips it."""
    class Sample(unittest.TestCase):
        def test_a_pass(self):
            print('buffered, not in the KTAP')

        def test_b_fail(self):
            print('shown with the failure')
            self.fail('wrong')

        def test_c_error(self):
            raise OSError('no such file')

        @unittest.skip('not here')
        def test_d_skip(self):
            pass

        def test_e_subtests(self):
            for i in range(3):
                with self.subTest(i=i):
                    self.assertLess(i, 1)

    return unittest.TestLoader().loadTestsFromTestCase(Sample)


class TestKtap(unittest.TestCase):
    def setUp(self):
        self.out = io.StringIO()
        self.ok = selftest.run_ktap(sample_suite(), self.out)
        self.lines = self.out.getvalue().splitlines()

    def test_results(self):
        self.assertFalse(self.ok)
        self.assertEqual(self.lines[:2], ['KTAP version 1', '1..5'])
        results = [re.sub(r' \S+\.(test_\w+)', r' \1', line) for line in self.lines
                   if line.startswith(('ok ', 'not ok '))]
        self.assertEqual(results, ['ok 1 test_a_pass',
                                   'not ok 2 test_b_fail # AssertionError: wrong',
                                   'not ok 3 test_c_error # error: OSError: no such file',
                                   'ok 4 test_d_skip # SKIP not here',
                                   'not ok 5 test_e_subtests # AssertionError: 1 not less than 1'])
        self.assertEqual(self.lines[-1], '# 1 passed, 3 failed, 1 skipped')

    def test_read_back(self):
        indented = ['1..1\n'] + ['    ' + line + '\n' for line in self.lines] + \
            ['not ok 1 host.python # exit 1\n']
        cases, _ = ktap.parse_ktap(indented)
        names = [n.rsplit('.', 1)[-1] for n, _, _ in cases]
        self.assertEqual(names, ['test_a_pass', 'test_b_fail', 'test_c_error', 'test_d_skip',
                                 'test_e_subtests'])
        self.assertEqual([st for _, st, _ in cases], ['PASS', 'FAIL', 'FAIL', 'SKIP', 'FAIL'])
        self.assertEqual(cases[2][2], 'error: OSError: no such file')
        self.assertEqual(cases[3][2], 'not here')

    def test_diagnostics(self):
        text = self.out.getvalue()
        self.assertNotIn('buffered, not in the KTAP', text)
        self.assertIn('# shown with the failure', text)
        self.assertIn('# OSError: no such file', text)
        self.assertTrue(all(line.startswith(('#', 'ok ', 'not ok ', 'KTAP', '1..'))
                            for line in self.lines))
