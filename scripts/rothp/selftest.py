# SPDX-License-Identifier: GPL-2.0
"""selftest: run the package's unit tests (tests/test_*.py).

Test output is buffered and shown only with a failure.
"""
import os
import unittest

HERE = os.path.dirname(os.path.abspath(__file__))
TESTS = 'rothp.tests.'


def load(names):
    """The suite of the named tests (test_bench_report, test_bench_report.TestModel, ...),
    or of all of them."""
    loader = unittest.TestLoader()
    if names:
        return loader.loadTestsFromNames([TESTS + n for n in names])
    return loader.discover(os.path.join(HERE, 'tests'), top_level_dir=os.path.dirname(HERE))


def run(names=(), verbose=False):
    """The exit status of the named tests (all by default): 0 when all passed."""
    suite = load(list(names))
    runner = unittest.TextTestRunner(verbosity=2 if verbose else 1, buffer=True)
    return 0 if runner.run(suite).wasSuccessful() else 1
