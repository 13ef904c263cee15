# SPDX-License-Identifier: GPL-2.0
"""Tests of coverage: a made-up series in a git tree, built with gcc
--coverage the way the kernel's objects are (O= directory, counters saved
under the build's absolute path) and run once."""
import json
import os
import shutil
import subprocess
import tempfile
import unittest

from rothp import coverage

BASE = """\
int helper(int x)
{
	return x + 1;
}

int main(int argc, char **argv)
{
	return helper(argc) == 2 ? 0 : 1;
}
"""
# The series adds a branch that runs, one that does not, a comment and a
# declaration (not code), and a function of its own that never runs.
SERIES = """\
int helper(int x)
{
	/* a comment the series adds */
	int y;

	if (x > 100)
		return -1;
	y = x + 1;
	return y;
}

int unused(int x)
{
	return x * 3;
}

int main(int argc, char **argv)
{
	return helper(argc) == 2 ? 0 : 1;
}
"""


def git(tree, *args):
    subprocess.run(['git', '-C', tree, '-c', 'user.name=t', '-c', 'user.email=t@t',
                    *args], check=True, capture_output=True)


@unittest.skipUnless(shutil.which('gcc') and shutil.which('gcov') and shutil.which('git'),
                     'needs gcc, gcov and git')
class TestReport(unittest.TestCase):
    def setUp(self):
        tmp = tempfile.TemporaryDirectory()
        self.addCleanup(tmp.cleanup)
        self.tmp = tmp.name
        self.src = os.path.join(self.tmp, 'src')
        os.makedirs(os.path.join(self.src, 'mm'))
        git(self.src, 'init', '-q')
        self.write(BASE)
        git(self.src, 'add', '.')
        git(self.src, 'commit', '-q', '-m', 'base')
        git(self.src, 'tag', 'base')
        self.write(SERIES)
        git(self.src, 'commit', '-q', '-am', 'series')
        # Built in an object directory, run once, the counters then moved
        # into a tree named by the object directory's absolute path, as
        # the guest's debugfs names them.
        self.obj = os.path.join(self.tmp, 'obj')
        os.makedirs(os.path.join(self.obj, 'mm'))
        subprocess.run(['gcc', '--coverage', '-O0', '-c', os.path.join(self.src, 'mm', 'a.c'),
                        '-o', 'mm/a.o'], cwd=self.obj, check=True)
        subprocess.run(['gcc', '--coverage', 'mm/a.o', '-o', 'prog'], cwd=self.obj, check=True)
        subprocess.run(['./prog'], cwd=self.obj, check=True)
        self.gcda = os.path.join(self.tmp, 'gcda')
        saved = os.path.join(self.gcda, os.path.realpath(self.obj).lstrip('/'), 'mm')
        os.makedirs(saved)
        shutil.move(os.path.join(self.obj, 'mm', 'a.gcda'), saved)
        self.out = os.path.join(self.tmp, 'out')

    def write(self, text):
        with open(os.path.join(self.src, 'mm', 'a.c'), 'w') as f:
            f.write(text)

    def gaps(self, text):
        path = os.path.join(self.tmp, 'gaps.txt')
        with open(path, 'w') as f:
            f.write(text)
        return path

    def report(self, gaps):
        rc = coverage.report(self.obj, self.gcda, self.src, 'base..HEAD', gaps, self.out)
        with open(os.path.join(self.out, 'coverage.json')) as f:
            return rc, json.load(f)

    def test_share_and_lines_not_run(self):
        rc, res = self.report(self.gaps(''))
        missed = {(m['function'], m['text']) for m in res['not_executed']}
        self.assertIn(('helper', 'return -1;'), missed)
        self.assertIn(('unused', 'return x * 3;'), missed)
        # What ran is not listed: the series' other lines of helper.
        self.assertNotIn(('helper', 'y = x + 1;'), missed)
        self.assertEqual({f for f, _ in missed}, {'helper', 'unused'})
        # The comment and the declaration are not code.
        texts = {m['text'] for m in res['not_executed']}
        self.assertNotIn('/* a comment the series adds */', texts)
        self.assertNotIn('int y;', texts)
        self.assertGreater(res['added_code_lines_executed'], 0)
        self.assertLess(res['added_lines_executed_share'], coverage.TARGET)
        self.assertEqual(res['objects'], ['mm/a.o'])
        # Below the target with lines that have no reason: a failure.
        self.assertEqual(rc, 1)
        with open(os.path.join(self.out, 'coverage.md')) as f:
            md = f.read()
        self.assertIn('### mm/a.c unused', md)
        self.assertIn('**no reason given**', md)

    def test_reasons_named(self):
        rc, res = self.report(self.gaps('# why\nmm/a.c helper: only for huge x\n'
                                        'mm/a.c unused: kept for later\n'
                                        'mm/a.c gone: a function that no longer misses\n'))
        self.assertEqual(rc, 0)
        self.assertEqual(res['not_executed_without_reason'], 0)
        self.assertEqual(res['stale_gaps'], ['mm/a.c gone'])

    def test_bad_gaps_line(self):
        with self.assertRaises(SystemExit):
            self.report(self.gaps('mm/a.c no colon here\n'))

    def test_no_counters(self):
        shutil.rmtree(self.gcda)
        os.makedirs(self.gcda)
        with self.assertRaises(SystemExit):
            self.report(self.gaps(''))
