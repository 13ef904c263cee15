# SPDX-License-Identifier: GPL-2.0
"""runs: made-up run directories for the tests, as the guest runner and
test-host.sh write them."""
import os
import textwrap

from rothp import contract

GUEST = contract.render('guest', cpus=2, preempt='full', swap='on', arch='x86_64',
                        pagesize=4096)


def header(nprog, guest=GUEST, kernel='6.12.118-rothp-patched'):
    """The runner's first lines: KTAP version, kernel, guest, plan."""
    lines = ['KTAP version 1', contract.render('kernel', release=kernel, cpus=2)]
    return '\n'.join(lines + ([guest] if guest else []) + [f'1..{nprog}']) + '\n'


DONE = contract.MARKERS['done'] + '\n'


def block(text):
    """A KTAP block written indented in a test, without the indent."""
    return textwrap.dedent(text).lstrip('\n')


def write_run(parent, name, ktap, console=''):
    """A run directory parent/name with that ktap.log and console.log."""
    run = os.path.join(parent, name)
    os.makedirs(run)
    for fname, text in ((contract.KTAP_LOG, ktap), (contract.CONSOLE_LOG, console)):
        with open(os.path.join(run, fname), 'w') as f:
            f.write(text)
    return run
