#!/usr/bin/env python3
# SPDX-License-Identifier: GPL-2.0
"""parse: turn one guest run into results.

    parse.py RUN_DIR OUT_KTAP [MORE_RUN_DIR...]

Reads RUN_DIR/ktap.log (the guest runner's KTAP: one top-level result per
test program, each program's own KTAP indented below it) and
RUN_DIR/console.log (the kernel console). Writes the KTAP to OUT_KTAP and a
summary next to it, prints one line per test case and, as its last line,
"N passed, N failed, N skipped". Exit status 1 on any failure.

A case counts once, at the deepest level that reports it: a program's own
results when it printed any, else the runner's line for the program (a
program that crashed before its plan, or timed out, fails as a whole). A
program whose own plan was not completed fails too. Any kernel splat in the
console fails the run, whatever the tests said. The cases of the kernel's
own mm selftests ("upstream.*") are judged against their baseline: gate.py.
"""
import os
import re
import sys

sys.dont_write_bytecode = True  # no __pycache__ in scripts/
import gate  # pylint: disable=wrong-import-position

RESULT = re.compile(r'^(ok|not ok)\s+(\d+)\s*(?:-\s*)?([^#]*?)\s*(?:#\s*(.*))?$')
PLAN = re.compile(r'^1\.\.(\d+)')
SPLATS = [
    (re.compile(r'\bOops\b|general protection fault'), 'Oops'),
    (re.compile(r'\bBUG: |kernel BUG at'), 'BUG'),
    (re.compile(r'WARNING: .* at |------------\[ cut here \]'), 'WARNING'),
    (re.compile(r'KASAN: '), 'KASAN'),
    (re.compile(r'possible circular locking|possible recursive locking|'
                r'inconsistent lock state|suspicious RCU usage|'
                r'DEBUG_LOCKS_WARN_ON|possible irq lock inversion|'
                r'bad unlock balance|held lock freed|lock held when returning|'
                r'INFO: lockdep is turned off|BUG: sleeping function'),
     'lockdep'),
    (re.compile(r'Kernel panic'), 'panic'),
    (re.compile(r'INFO: task .* blocked for more than|soft lockup|hard LOCKUP'),
     'hang'),
    (re.compile(r'list_add corruption|list_del corruption'), 'list corruption'),
    # A file system that finds its own metadata corrupt: the images are
    # checked before boot, so this is the kernel's doing (or the disk's).
    (re.compile(r'XFS \(.*\): (Metadata (CRC error|corruption)|Corruption)|'
                r'EXT4-fs error'), 'fs corruption'),
]
# Boot banners of the debug options, which name them without reporting.
BENIGN = re.compile(r'RCU lockdep checking is enabled|'
                    r'KernelAddressSanitizer initialized')


def parse_ktap(lines):
    """Return [(name, status, reason)] for the leaf cases."""
    cases = []
    programs = []  # (name, status, reason, subcases, planned)
    sub = []
    planned = None
    for raw in lines:
        line = raw.rstrip('\r\n')
        if line.startswith('    '):
            inner = line[4:]
            m = PLAN.match(inner)
            if m:
                planned = int(m.group(1))
                continue
            m = RESULT.match(inner)
            if m:
                sub.append(m)
            continue
        m = RESULT.match(line)
        if not m:
            continue
        programs.append((m, sub, planned))
        sub, planned = [], None
    for m, subs, planned_n in programs:
        pname = m.group(3)
        pstatus, preason = status_of(m)
        if not subs:
            cases.append((pname, pstatus, preason))
            continue
        for s in subs:
            st, why = status_of(s)
            # kselftest prints a skipped case as "ok N # SKIP reason".
            cname = s.group(3) or why or f'case {s.group(2)}'
            cases.append((f'{pname}: {cname}', st, why if s.group(3) else ''))
        if planned_n is not None and len(subs) < planned_n:
            cases.append((f'{pname}: plan', 'FAIL',
                          f'{len(subs)} of {planned_n} planned results'))
        # The program's exit status must agree with its results.
        if pstatus == 'FAIL' and all(status_of(s)[0] != 'FAIL' for s in subs):
            cases.append((f'{pname}: exit', 'FAIL', preason))
    return cases, len(programs)


def status_of(m):
    directive = (m.group(4) or '').strip()
    if m.group(1) == 'ok':
        if directive.upper().startswith('SKIP'):
            return 'SKIP', directive[4:].strip() or 'no reason given'
        return 'PASS', ''
    if directive.upper().startswith('XFAIL'):
        return 'PASS', directive
    return 'FAIL', directive


def find_splats(console):
    found = []
    for i, line in enumerate(console):
        if BENIGN.search(line):
            continue
        for rx, kind in SPLATS:
            if rx.search(line):
                found.append((kind, i + 1, line.strip()))
                break
    return found


def read_lines(path):
    try:
        with open(path, errors='replace') as f:
            return f.readlines()
    except OSError:
        return []


def run_cases(run):
    """The cases of one run directory, with the runner's own checks."""
    ktap = read_lines(os.path.join(run, 'ktap.log'))
    console = read_lines(os.path.join(run, 'console.log'))
    cases, nprog = parse_ktap(ktap)
    planned = next((int(m.group(1)) for m in map(PLAN.match, ktap) if m), None)
    done = any(line.startswith('# rothp-runner: done') for line in ktap)
    who = os.path.basename(os.path.normpath(run))
    if planned is None:
        cases.append((f'runner {who}', 'FAIL', 'no KTAP plan (did it run?)'))
    elif nprog < planned:
        cases.append((f'runner {who}', 'FAIL', f'{nprog} of {planned} test programs reported'))
    if not done:
        cases.append((f'runner {who}', 'FAIL', 'runner did not finish'))
    guest_run = any(l.startswith('# rothp-runner: kernel ') for l in ktap)
    if guest_run and not any(l.startswith('# guest: ') for l in ktap):
        cases.append((f'runner {who}', 'FAIL', 'no "# guest:" header (cpus, preempt)'))
    splats = find_splats(console)
    for kind, lineno, text in splats[:20]:
        cases.append((f'console: {kind}', 'FAIL', f'console.log:{lineno}: {text[:160]}'))
    return ktap, cases


def main():
    args = sys.argv[1:]
    if len(args) < 2:
        sys.exit(__doc__)
    run, out, more = args[0], args[1], args[2:]
    ktap, cases = run_cases(run)
    for extra in more:
        k, c = run_cases(extra)
        ktap += k
        cases += c
    # The kernel's own mm selftests against their baseline run (gate.py).
    cases = gate.apply(cases, guest=gate.guest_line(ktap))
    with open(out, 'w') as f:
        f.writelines(ktap)

    width = max((len(n) for n, _, _ in cases), default=10)
    summary = []
    for name, st, why in cases:
        line = f'{st:4} {name:{width}}' + (f'  # {why}' if why else '')
        summary.append(line.rstrip())
    npass = sum(1 for c in cases if c[1] == 'PASS')
    nfail = sum(1 for c in cases if c[1] == 'FAIL')
    nskip = sum(1 for c in cases if c[1] == 'SKIP')
    summary.append(f'{npass} passed, {nfail} failed, {nskip} skipped')
    with open(os.path.splitext(out)[0] + '.summary', 'w') as f:
        f.write('\n'.join(summary) + '\n')
    print('\n'.join(summary))
    sys.exit(1 if nfail or not cases else 0)


if __name__ == '__main__':
    main()
