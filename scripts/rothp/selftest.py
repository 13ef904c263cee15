# SPDX-License-Identifier: GPL-2.0
"""selftest: run the package's unit tests (tests/test_*.py).

Plain, as unittest reports them, or as KTAP (one result per test, a
failure's traceback as "#" lines before it), the form test-host.sh
indents below its "host.python" result. Test output is buffered and shown
only with a failure, so that it never mixes with the KTAP.
"""
import os
import sys
import traceback
import unittest

HERE = os.path.dirname(os.path.abspath(__file__))
TESTS = 'rothp.tests.'
# How much of a failure's message its result line carries.
REASON_MAX = 160


def load(names):
    """The suite of the named tests (test_gate, test_gate.TestApply, ...),
    or of all of them."""
    loader = unittest.TestLoader()
    if names:
        return loader.loadTestsFromNames([TESTS + n for n in names])
    return loader.discover(os.path.join(HERE, 'tests'), top_level_dir=os.path.dirname(HERE))


class KtapResult(unittest.TestResult):
    """Prints one KTAP result line per test as it ends."""

    def __init__(self, stream):
        super().__init__()
        self.buffer = True
        self.stream = stream
        self.n = 0
        self.outcome = None
        self.counts = {'passed': 0, 'failed': 0, 'skipped': 0}

    def startTest(self, test):
        super().startTest(test)
        self.outcome = ('ok', '')

    def fail(self, err_list, err, prefix=''):
        """A failure or error: its traceback as diagnostic lines, the
        first one's exception as the reason on the result line."""
        for line in err_list[-1][1].splitlines():
            self.stream.write(f'# {line}'.rstrip() + '\n')
        if self.outcome[0] == 'not ok':
            return
        what = traceback.format_exception_only(err[0], err[1])[-1].strip().splitlines()
        self.outcome = ('not ok', (prefix + (what[0] if what else ''))[:REASON_MAX])

    def addFailure(self, test, err):
        super().addFailure(test, err)
        self.fail(self.failures, err)

    def addError(self, test, err):
        super().addError(test, err)
        self.fail(self.errors, err, 'error: ')

    def addSubTest(self, test, subtest, err):
        super().addSubTest(test, subtest, err)
        if err is None:
            return
        if issubclass(err[0], test.failureException):
            self.fail(self.failures, err)
        else:
            self.fail(self.errors, err, 'error: ')

    def addSkip(self, test, reason):
        super().addSkip(test, reason)
        self.outcome = ('ok', f'SKIP {reason}')

    def addUnexpectedSuccess(self, test):
        super().addUnexpectedSuccess(test)
        self.outcome = ('not ok', 'unexpected success')

    def stopTest(self, test):
        super().stopTest(test)
        self.n += 1
        word, directive = self.outcome
        kind = 'failed' if word == 'not ok' else 'skipped' if directive else 'passed'
        self.counts[kind] += 1
        name = test.id().removeprefix(TESTS)
        self.stream.write(f'{word} {self.n} {name}' +
                          (f' # {directive}' if directive else '') + '\n')
        self.stream.flush()


def run_ktap(suite, stream):
    """Run the suite, printing KTAP to stream; True when all passed."""
    stream.write(f'KTAP version 1\n1..{suite.countTestCases()}\n')
    result = KtapResult(stream)
    suite.run(result)
    stream.write('# ' + ', '.join(f'{n} {kind}' for kind, n in result.counts.items()) + '\n')
    return result.wasSuccessful()


def run(names=(), ktap=False, verbose=False):
    """The exit status of the named tests (all by default): 0 when all passed."""
    suite = load(list(names))
    if ktap:
        ok = run_ktap(suite, sys.stdout)
    else:
        runner = unittest.TextTestRunner(verbosity=2 if verbose else 1, buffer=True)
        ok = runner.run(suite).wasSuccessful()
    return 0 if ok else 1
