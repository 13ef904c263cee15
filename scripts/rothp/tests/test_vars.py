# SPDX-License-Identifier: GPL-2.0
"""Tests of scripts/vars.sh: make's variables are checked before anything
is fetched or built, and a wrong one is named with what it may be."""
import os
import subprocess
import unittest

TOP = os.path.dirname(os.path.dirname(os.path.dirname(os.path.dirname(os.path.abspath(__file__)))))
VARS = os.path.join(TOP, 'scripts', 'vars.sh')
NAMES = ('DEBUG', 'ACCEL', 'GUEST_CPUS', 'TEST_TIMEOUT', 'BOOT_TIMEOUT', 'DURATION', 'FILTER',
         'UPSTREAM_FULL')


def run(target, **env):
    """vars.sh TARGET with only the variables given set: (exit status, stderr)."""
    e = {k: v for k, v in os.environ.items() if k not in NAMES}
    e.update(env)
    p = subprocess.run(['bash', VARS, target], env=e, capture_output=True, text=True)
    return p.returncode, p.stderr


class TestVars(unittest.TestCase):
    def ok(self, target, **env):
        rc, err = run(target, **env)
        self.assertEqual((rc, err), (0, ''), env)

    def bad(self, target, name, **env):
        rc, err = run(target, **env)
        self.assertNotEqual(rc, 0, env)
        self.assertIn(f"rothp: {name}='{env.get(name, '')}'", err)
        self.assertIn('nothing was built', err)

    def test_defaults(self):
        for target in ('check', 'demo', 'bench'):
            self.ok(target)
        self.ok('stress', DURATION='600')

    def test_good_values(self):
        self.ok('check', DEBUG='0', ACCEL='auto', GUEST_CPUS='4', TEST_TIMEOUT='60',
                FILTER='observe|prompt_hint')
        self.ok('check', FILTER='upstream.khugepaged')
        self.ok('check', FILTER='split_huge_page', UPSTREAM_FULL='1')
        self.ok('bench', FILTER='bench_prompt')

    def test_bad_values(self):
        self.bad('check', 'DEBUG', DEBUG='2')
        self.bad('demo', 'ACCEL', ACCEL='hvf')
        self.bad('check', 'GUEST_CPUS', GUEST_CPUS='0')
        self.bad('check', 'BOOT_TIMEOUT', BOOT_TIMEOUT='10m')
        self.bad('stress', 'DURATION', DURATION='-5')
        self.bad('stress', 'DURATION')

    def test_filter_matching_nothing(self):
        self.bad('check', 'FILTER', FILTER='no_such_test')
        self.bad('bench', 'FILTER', FILTER='observe')
        self.bad('check', 'FILTER', FILTER='split_huge_page')

    def test_filter_not_a_regex(self):
        rc, err = run('check', FILTER='(')
        self.assertNotEqual(rc, 0)
        self.assertIn('not an extended regular expression', err)

    def test_filter_where_nothing_is_filtered(self):
        self.bad('demo', 'FILTER', FILTER='observe')

    def test_every_wrong_variable_is_named(self):
        rc, err = run('stress', DEBUG='x', ACCEL='y', DURATION='z')
        self.assertNotEqual(rc, 0)
        for name in ('DEBUG', 'ACCEL', 'DURATION'):
            self.assertIn(f'rothp: {name}=', err)


if __name__ == '__main__':
    unittest.main()
