# SPDX-License-Identifier: GPL-2.0
"""Tests of matrix_report: the warnings of made-up W=1, sparse and objtool
logs, matched against the baseline's by file and message, the status
files matrix.sh writes, and the result each configuration gets."""
import contextlib
import io
import json
import os
import tempfile
import unittest

from rothp import matrix_report

TOUCHED = ['mm/khugepaged.c', 'mm/filemap.c']
PROTO = "no previous prototype for 'file_thp_queue' [-Wmissing-prototypes]"
SHADOW = "symbol 'vma' shadows an earlier one"


def gcc(path, line, msg, kind='warning'):
    """A compiler's line: PATH:LINE:COL: KIND: MSG."""
    return f'{path}:{line}:5: {kind}: {msg}'


class MatrixTest(unittest.TestCase):
    def setUp(self):
        self.tmp = tempfile.TemporaryDirectory()
        self.addCleanup(self.tmp.cleanup)
        self.logs = os.path.join(self.tmp.name, 'logs')
        os.makedirs(self.logs)

    def write(self, name, lines):
        """A file of the log directory with those lines."""
        path = os.path.join(self.logs, name)
        with open(path, 'w') as f:
            f.write(''.join(line + '\n' for line in lines))
        return path

    def config(self, cfg, status, w1=((), ()), sparse=((), ())):
        """matrix.sh's files of one configuration: its status lines, and
        the (patched, baseline) lines of each kind of log, None for a log
        that was not written."""
        if status is not None:
            self.write(f'{cfg}.status', status)
        for kind, logs in (('w1', w1), ('sparse', sparse)):
            for tree, lines in zip(('patched', 'baseline'), logs):
                if lines is not None:
                    self.write(f'{cfg}.{tree}.{kind}.log', lines)


class TestWarnings(MatrixTest):
    def test_compiler_lines(self):
        path = self.write('w1.log', [
            'In file included from ../mm/khugepaged.c:3:',
            gcc('../mm/khugepaged.c', 120, PROTO),
            'mm/filemap.c:300: warning: no column, as sparse may say',
            gcc('/build/src/linux/mm/filemap.c', 7, 'implicit declaration', kind='error'),
            gcc('mm/filemap.c', 8, 'a note is not a warning', kind='note'),
            gcc('fs/namei.c', 9, 'not in a touched file'),
            gcc('xmm/filemap.c', 10, 'a file that only ends like a touched one'),
            '    ' + gcc('mm/khugepaged.c', 121, PROTO),
        ])
        self.assertEqual(matrix_report.warnings(path, TOUCHED), {
            ('mm/khugepaged.c', PROTO): 2,
            ('mm/filemap.c', 'no column, as sparse may say'): 1,
            ('mm/filemap.c', 'implicit declaration'): 1})

    def test_objtool(self):
        # objtool names the object and a function offset: the same message
        # at another offset is the same warning.
        path = self.write('full.log', [
            'mm/khugepaged.o: warning: objtool: collapse_file+0x1a2: unreachable instruction',
            'mm/khugepaged.o: warning: objtool: collapse_file+0x2c0: unreachable instruction',
            'fs/open.o: warning: objtool: do_dentry_open+0x10: not touched',
        ])
        self.assertEqual(matrix_report.warnings(path, TOUCHED), {
            ('mm/khugepaged.c', 'objtool: collapse_file: unreachable instruction'): 2})

    def test_no_log(self):
        self.assertIsNone(matrix_report.warnings(os.path.join(self.logs, 'none.log'), TOUCHED))


class TestNew(MatrixTest):
    def counts(self, name, lines):
        return matrix_report.warnings(self.write(name, lines), TOUCHED)

    def test_line_numbers_left_out(self):
        # The series moves code: the same message further down is not new.
        patched = self.counts('p.log', [gcc('mm/khugepaged.c', 250, SHADOW)])
        baseline = self.counts('b.log', [gcc('mm/khugepaged.c', 180, SHADOW)])
        self.assertEqual(matrix_report.new_of(patched, baseline), [])

    def test_more_of_a_message(self):
        patched = self.counts('p.log', [gcc('mm/khugepaged.c', n, SHADOW) for n in (1, 2, 3)]
                              + [gcc('mm/filemap.c', 4, SHADOW)])
        baseline = self.counts('b.log', [gcc('mm/khugepaged.c', 9, SHADOW)])
        self.assertEqual(matrix_report.new_of(patched, baseline),
                         [('mm/filemap.c', SHADOW, 1), ('mm/khugepaged.c', SHADOW, 2)])

    def test_fewer_is_not_negative(self):
        patched = self.counts('p.log', [])
        baseline = self.counts('b.log', [gcc('mm/khugepaged.c', 9, SHADOW)])
        self.assertEqual(matrix_report.new_of(patched, baseline), [])

    def test_missing_logs(self):
        patched = self.counts('p.log', [gcc('mm/khugepaged.c', 1, PROTO)])
        self.assertEqual(matrix_report.new_of(patched, None), [('mm/khugepaged.c', PROTO, 1)])
        self.assertEqual(matrix_report.new_of(None, patched), [])


class TestStatus(MatrixTest):
    def test_keys_and_notes(self):
        path = self.write('x86_64.status', [
            'full_seconds=120',
            "matrix: x86_64: .config lacks 'CONFIG_READ_ONLY_THP_FOR_FS=y'",
            'CONFIG_SMP=y',
            'make: *** [Makefile:224: __sub-make] Error 2',
            'each_patch=13',
            'result=fail',
            'seconds=300',
        ])
        self.assertEqual(matrix_report.status(path), {
            'full_seconds': '120', 'each_patch': '13', 'result': 'fail', 'seconds': '300',
            'notes': ["x86_64: .config lacks 'CONFIG_READ_ONLY_THP_FOR_FS=y'"]})

    def test_no_file(self):
        self.assertEqual(matrix_report.status(os.path.join(self.logs, 'none.status')),
                         {'notes': []})


class TestResult(MatrixTest):
    def row(self, cfg='x86_64'):
        return matrix_report.config_row(cfg, self.logs, TOUCHED)

    def test_pass(self):
        old = [gcc('mm/khugepaged.c', 10, SHADOW)]
        self.config('x86_64', ['full_seconds=100', 'result=pass', 'seconds=200'],
                    w1=(old, old), sparse=([], []))
        row, bad = self.row()
        self.assertFalse(bad)
        self.assertEqual((row['result'], row['seconds'], row['full_build_seconds']),
                         ('pass', 200, 100))
        self.assertEqual((row['new_w1_warnings'], row['new_sparse_warnings']), (0, 0))
        self.assertEqual((row['w1_warnings_patched'], row['w1_warnings_baseline']), (1, 1))
        self.assertIsNone(row['patches_built'])

    def test_new_warnings(self):
        self.config('thp-off', ['result=pass', 'seconds=50'],
                    w1=([gcc('mm/khugepaged.c', 10, PROTO)], []),
                    sparse=([gcc('mm/filemap.c', 1, SHADOW)] * 2, [gcc('mm/filemap.c', 5, SHADOW)]))
        row, bad = self.row('thp-off')
        self.assertTrue(bad)
        self.assertEqual(row['result'], 'new warnings')
        self.assertEqual((row['new_w1_warnings'], row['new_sparse_warnings']), (1, 1))
        self.assertEqual(row['new_w1'], [{'file': 'mm/khugepaged.c', 'message': PROTO,
                                          'count': 1}])

    def test_incomplete(self):
        # A passing build whose baseline sparse log is missing cannot say
        # that nothing is new.
        self.config('i386', ['result=pass', 'seconds=50'], w1=([], []), sparse=([], None))
        row, bad = self.row('i386')
        self.assertTrue(bad)
        self.assertEqual(row['result'], 'incomplete')
        self.assertIsNone(row['new_sparse_warnings'])
        self.assertIsNone(row['sparse_warnings_baseline'])

    def test_failed_and_not_run(self):
        self.config('arm64', ['matrix: arm64: Image of the series failed', 'result=fail',
                              'seconds=10'], w1=(None, None), sparse=(None, None))
        row, bad = self.row('arm64')
        self.assertTrue(bad)
        self.assertEqual((row['result'], row['notes']),
                         ('fail', ['arm64: Image of the series failed']))
        row, bad = self.row('clang')
        self.assertTrue(bad)
        self.assertEqual((row['result'], row['seconds']), ('not run', 0))


class TestReport(MatrixTest):
    def report(self, configs):
        touched = os.path.join(self.tmp.name, 'touched')
        with open(touched, 'w') as f:
            f.write('\n'.join(TOUCHED) + '\n\n')
        results = os.path.join(self.tmp.name, 'results')
        with contextlib.redirect_stdout(io.StringIO()) as out:
            rc = matrix_report.report(touched, self.logs, results, configs)
        with open(os.path.join(results, 'matrix.json')) as f:
            js = json.load(f)
        with open(os.path.join(results, 'matrix.md')) as f:
            md = f.read()
        self.assertEqual(out.getvalue(), md)
        return rc, js, md

    def test_all_pass(self):
        self.config('x86_64', ['result=pass', 'seconds=20'])
        rc, js, md = self.report(['x86_64'])
        self.assertEqual(rc, 0)
        self.assertEqual(js['touched'], TOUCHED)
        self.assertEqual([r['result'] for r in js['configurations']], ['pass'])
        self.assertIn('| x86_64 | pass | 0 | 0 | - | 20 |', md)

    def test_a_new_warning_fails(self):
        self.config('x86_64', ['result=pass', 'seconds=20'])
        self.config('clang', ['result=pass', 'seconds=30'],
                    w1=([gcc('mm/khugepaged.c', 3, PROTO)], []))
        rc, js, md = self.report(['x86_64', 'clang'])
        self.assertEqual(rc, 1)
        self.assertEqual([r['result'] for r in js['configurations']], ['pass', 'new warnings'])
        self.assertIn('| clang | new warnings | 1 | 0 | - | 30 |', md)
        self.assertIn(f'- clang: new w1: mm/khugepaged.c: {PROTO} (x1)', md)


if __name__ == '__main__':
    unittest.main()
