# SPDX-License-Identifier: GPL-2.0
"""gate: the upstream regression gate of the kernel's own mm selftests.

"rothp-host parse" calls apply() on every run's cases. For the cases of
the upstream tests (names "upstream.*"), against the recorded baseline
(pristine 6.12): a case that fails on both kernels counts as a skip,
"fails on baseline 6.12 too: REASON", so it neither fails the check nor
counts as a pass; a case that passed on the baseline and fails here stays
a failure, marked as a regression. Every other case is left as it is.

"rothp-host gate record RUN_DIR [OUT]" writes the per-case results of a
baseline run (default: the file of the run's guest, below); "rothp-host gate
show [FILE]" prints the recorded baseline.

Each architecture and page size has its own baseline file: x86-64's
guest/upstream-baseline.txt, another's upstream-baseline-ARCH-SIZE.txt
(upstream-baseline-aarch64-4k.txt), after the guest line's arch= and
pagesize= (a line without them is x86-64's, with 4 KiB pages).

The baseline file has one line per case, "NAME: CASE: STATUS", the reason
of a failure or skip after "  # ". UPSTREAM_BASELINE=FILE reads another
file, UPSTREAM_BASELINE= none.
"""
import os

from . import contract, ktap

TOP = os.path.dirname(os.path.dirname(os.path.dirname(os.path.abspath(__file__))))
DEFAULT = os.path.join(TOP, 'guest', 'upstream-baseline.txt')
# What a guest line without arch= or pagesize= ran on.
DEFAULT_ARCH = {'arch': 'x86_64', 'pagesize': '4096'}
PREFIX = 'upstream.'
HEADER = [
    "# Per-case results of the kernel's own mm selftests (upstream.list,",
    '# upstream-full.list) on pristine 6.12, the baseline of the upstream',
    '# gate (scripts/rothp/gate.py). Kernel {kernel}; recorded with',
    '#   scripts/rothp-host gate record RUN_DIR',
    '# on this guest (the gate refuses a run on another):',
]


class NotRecorded(Exception):
    """A run that cannot serve as the baseline, and why."""


def keyed(names):
    """(name, n): the n-th case of that name, so repeated names stay apart."""
    seen = {}
    for name in names:
        seen[name] = seen.get(name, 0) + 1
        yield name, seen[name]


def shape(guest):
    """What of a guest line decides which upstream cases run: the CPUs,
    swap, the architecture and the page size (the preemption model changes
    no case's outcome by design, so a PREEMPT=none run is judged against
    the same baseline)."""
    words = guest[len(contract.GUEST):].split()
    got = dict(DEFAULT_ARCH)
    got.update((k, v) for k, v in (w.split('=', 1) for w in words if '=' in w)
               if k in ('cpus', 'swap', 'arch', 'pagesize'))
    return got


def default_path(guest):
    """The baseline file of a run on that guest line (None: x86-64's)."""
    got = shape(guest) if guest else DEFAULT_ARCH
    if (got['arch'], got['pagesize']) == (DEFAULT_ARCH['arch'], DEFAULT_ARCH['pagesize']):
        return DEFAULT
    size = f"{int(got['pagesize']) // 1024}k"
    return os.path.join(TOP, 'guest', f"upstream-baseline-{got['arch']}-{size}.txt")


def load_guest(path):
    """The guest line the baseline was recorded on, or None."""
    try:
        with open(path) as f:
            return ktap.guest_line(f)
    except OSError:
        return None


def load(path):
    """{(name, n): (status, reason)} of a baseline file; empty without one."""
    try:
        with open(path) as f:
            lines = [line.rstrip('\n') for line in f]
    except OSError:
        return {}
    entries = []
    for line in lines:
        if not line.strip() or line.startswith('#'):
            continue
        text, _, why = line.partition('  # ')
        name, sep, status = text.rpartition(': ')
        if sep and status in ('PASS', 'FAIL', 'SKIP'):
            entries.append((name, status, why))
    return {key: (status, why)
            for key, (_, status, why) in zip(keyed(e[0] for e in entries), entries)}


def gate_failures(base, cases, path, guest):
    """The gate's own failures: no baseline, or one from another guest."""
    if not any(c[0].startswith(PREFIX) for c in cases):
        return []
    if not base:
        return [('upstream gate', 'FAIL',
                 f'no baseline results in {os.path.relpath(path, TOP)}: '
                 'scripts/rothp-host gate record RUN_DIR (a baseline-debug run)')]
    recorded = load_guest(path)
    if guest and recorded and shape(guest) != shape(recorded):
        return [('upstream gate', 'FAIL',
                 f'the baseline was recorded on "{recorded[2:]}", this run is on '
                 f'"{guest[2:]}": record it again on this guest')]
    return []


def judge(case, was):
    """One case against its baseline result was (or None)."""
    name, st, why = case
    if not name.startswith(PREFIX) or st != 'FAIL' or not was:
        return case
    if was[0] == 'FAIL':
        return (name, 'SKIP',
                f'fails on baseline 6.12 too: {was[1] or "no reason given"}'
                + (f' (here: {why})' if why and why != was[1] else ''))
    if was[0] == 'PASS':
        return (name, st, f'regression: passes on baseline 6.12; {why}'.rstrip('; '))
    return case


def apply(cases, path=None, guest=None):
    """The cases with the gate applied: [(name, status, reason)].

    guest is the run's '# guest:' line: a baseline recorded on a guest
    with other CPUs or swap ran other cases, and the gate fails instead of
    comparing them."""
    if path is None:
        path = os.environ.get('UPSTREAM_BASELINE', default_path(guest))
    if not path:
        return cases
    base = load(path)
    out = gate_failures(base, cases, path, guest)
    for key, case in zip(keyed(c[0] for c in cases), cases):
        out.append(judge(case, base.get(key)))
    return out


def kernel_of(lines):
    """The kernel release the runner's header names."""
    kernel = contract.regex('kernel')
    return next((m.group('release') for m in map(kernel.match, lines) if m), 'unknown')


def baseline_of(run):
    """(the baseline file's lines, the failed cases that are not upstream's)
    of a run; NotRecorded when the run is not whole."""
    lines, cases = ktap.run_cases(run)
    broken = [c for c in cases if c[0].startswith('runner ') and c[1] == 'FAIL']
    if broken:
        raise NotRecorded(broken[0][2])
    guest = ktap.guest_line(lines)
    if not guest:
        raise NotRecorded(f'no "{contract.GUEST.strip()}" line in its KTAP')
    out = [h.format(kernel=kernel_of(lines)) for h in HEADER] + [guest]
    for name, st, why in cases:
        if name.startswith(PREFIX):
            out.append(f'{name}: {st}' + (f'  # {why}' if why and st != 'PASS' else ''))
    others = [c for c in cases if not c[0].startswith(PREFIX) and c[1] == 'FAIL']
    return out, others


def record(run, out=None):
    """Write the baseline of a run to out (default: the file of the run's
    guest); (upstream cases written, the other failed cases of the run,
    the file written)."""
    lines, others = baseline_of(run)
    out = out or default_path(ktap.guest_line(lines))
    with open(out, 'w') as f:
        f.write('\n'.join(lines) + '\n')
    return len(lines) - len(HEADER) - 1, others, out


def show(path):
    """The lines "gate show" prints: one per recorded case."""
    return [f'{st:4} {key[0]}' + (f'  # {why}' if why else '')
            for key, (st, why) in load(path).items()]
