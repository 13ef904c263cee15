#!/usr/bin/env python3
# SPDX-License-Identifier: GPL-2.0
"""gate: the upstream regression gate of the kernel's own mm selftests.

    gate.py record RUN_DIR [OUT]   write the per-case results of a baseline
                                   run (default selftests/upstream-baseline.txt)
    gate.py show [FILE]            print the recorded baseline

parse.py calls apply() on every run's cases. For the cases of the upstream
tests (names "upstream.*"), against the recorded baseline (pristine 6.12):
a case that fails on both kernels counts as a skip, "fails on baseline 6.12
too: REASON", so it neither fails the check nor counts as a pass; a case
that passed on the baseline and fails here stays a failure, marked as a
regression. Every other case is left as it is.

The baseline file has one line per case, "NAME: CASE: STATUS", the reason
of a failure or skip after "  # ". UPSTREAM_BASELINE=FILE reads another
file, UPSTREAM_BASELINE= none.
"""
import os
import sys

TOP = os.path.dirname(os.path.dirname(os.path.abspath(__file__)))
DEFAULT = os.path.join(TOP, 'selftests', 'upstream-baseline.txt')
PREFIX = 'upstream.'


def keyed(names):
    """(name, n): the n-th case of that name, so repeated names stay apart."""
    seen = {}
    for name in names:
        seen[name] = seen.get(name, 0) + 1
        yield name, seen[name]


GUEST = '# guest: '


def guest_line(ktap):
    """The runner's '# guest: cpus=N preempt=M swap=S' line, or None."""
    return next((l.strip() for l in ktap if l.startswith(GUEST)), None)


def shape(guest):
    """What of a guest line decides which upstream cases run: the CPUs and
    swap (the preemption model changes no case's outcome by design, so a
    PREEMPT=none run is judged against the same baseline)."""
    return {k: v for k, v in (w.split('=', 1) for w in guest[len(GUEST):].split() if '=' in w)
            if k in ('cpus', 'swap')}


def load_guest(path):
    """The guest line the baseline was recorded on, or None."""
    try:
        with open(path) as f:
            return guest_line(f)
    except OSError:
        return None


def load(path):
    base = {}
    try:
        with open(path) as f:
            lines = [l.rstrip('\n') for l in f]
    except OSError:
        return base
    entries = []
    for line in lines:
        if not line.strip() or line.startswith('#'):
            continue
        text, _, why = line.partition('  # ')
        name, sep, status = text.rpartition(': ')
        if sep and status in ('PASS', 'FAIL', 'SKIP'):
            entries.append((name, status, why))
    for key, (_, status, why) in zip(keyed(e[0] for e in entries), entries):
        base[key] = (status, why)
    return base


def apply(cases, path=None, guest=None):
    """The cases with the gate applied: [(name, status, reason)].

    guest is the run's '# guest:' line: a baseline recorded on a guest
    with other CPUs or swap ran other cases, and the gate fails instead of
    comparing them."""
    if path is None:
        path = os.environ.get('UPSTREAM_BASELINE', DEFAULT)
    if not path:
        return cases
    base = load(path)
    out = []
    upstream = any(c[0].startswith(PREFIX) for c in cases)
    if not base and upstream:
        out.append(('upstream gate', 'FAIL',
                    f'no baseline results in {os.path.relpath(path, TOP)}: '
                    'scripts/gate.py record RUN_DIR (a baseline-debug run)'))
    recorded = load_guest(path)
    if base and upstream and guest and recorded and shape(guest) != shape(recorded):
        out.append(('upstream gate', 'FAIL',
                    f'the baseline was recorded on "{recorded[2:]}", this run is on '
                    f'"{guest[2:]}": record it again on this guest'))
    for key, (name, st, why) in zip(keyed(c[0] for c in cases), cases):
        if name.startswith(PREFIX) and st == 'FAIL':
            was = base.get(key)
            if was and was[0] == 'FAIL':
                st = 'SKIP'
                why = (f'fails on baseline 6.12 too: {was[1] or "no reason given"}'
                       + (f' (here: {why})' if why and why != was[1] else ''))
            elif was and was[0] == 'PASS':
                why = f'regression: passes on baseline 6.12; {why}'.rstrip('; ')
        out.append((name, st, why))
    return out


def record(run, out):
    sys.dont_write_bytecode = True
    sys.path.insert(0, os.path.dirname(os.path.abspath(__file__)))
    import parse  # pylint: disable=import-outside-toplevel
    ktap, cases = parse.run_cases(run)
    broken = [c for c in cases if c[0].startswith('runner ') and c[1] == 'FAIL']
    if broken:
        sys.exit(f'not recording {run}: {broken[0][2]}')
    kernel = next((l.split('kernel ', 1)[1].split(',')[0] for l in ktap
                   if l.startswith('# rothp-runner: kernel ')), 'unknown')
    guest = guest_line(ktap)
    if not guest:
        sys.exit(f'not recording {run}: no "{GUEST.strip()}" line in its KTAP')
    lines = ['# Per-case results of the kernel\'s own mm selftests (upstream.list,',
             '# upstream-full.list) on pristine 6.12, the baseline of the upstream',
             f'# gate (scripts/gate.py). Kernel {kernel}; recorded with',
             '#   scripts/gate.py record RUN_DIR',
             '# on this guest (the gate refuses a run on another):',
             guest]
    for name, st, why in cases:
        if not name.startswith(PREFIX):
            continue
        lines.append(f'{name}: {st}' + (f'  # {why}' if why and st != 'PASS' else ''))
    with open(out, 'w') as f:
        f.write('\n'.join(lines) + '\n')
    n = len(lines) - 6
    print(f'{n} upstream cases recorded in {os.path.relpath(out)}')
    others = [c for c in cases if not c[0].startswith(PREFIX) and c[1] == 'FAIL']
    for name, _, why in others:
        print(f'warning: {name} failed in that run: {why}', file=sys.stderr)


def main():
    args = sys.argv[1:]
    if args[:1] == ['record'] and len(args) in (2, 3):
        record(args[1], args[2] if len(args) == 3 else DEFAULT)
    elif args[:1] == ['show'] and len(args) in (1, 2):
        for key, (st, why) in load(args[1] if len(args) == 2 else DEFAULT).items():
            print(f'{st:4} {key[0]}' + (f'  # {why}' if why else ''))
    else:
        sys.exit(__doc__)


if __name__ == '__main__':
    main()
