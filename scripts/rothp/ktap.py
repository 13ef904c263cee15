# SPDX-License-Identifier: GPL-2.0
"""ktap: the cases of one run directory, from its KTAP and its console.

A run directory holds ktap.log (the guest runner's KTAP: one top-level
result per test program, each program's own KTAP indented below it) and
console.log (the kernel console). run_cases() turns one into a list of
cases, (name, status, reason) with status PASS, FAIL or SKIP; summary()
into the lines "rothp-host parse" prints and writes.

A case counts once, at the deepest level that reports it: a program's own
results when it printed any, else the runner's line for the program (a
program that crashed before its plan, or timed out, fails as a whole). A
program whose own plan was not completed fails too. Any kernel splat in the
console fails the run, whatever the tests said.

This module knows nothing of the upstream gate (gate.py), which judges
some of these cases against a baseline run.
"""
import os
import re

from . import contract

RESULT = re.compile(r'^(ok|not ok)\s+(\d+)\s*(?:-\s*)?([^#]*?)\s*(?:#\s*(.*))?$')
PLAN = re.compile(r'^1\.\.(\d+)(?:\s*#\s*SKIP\b\s*(.*))?', re.IGNORECASE)
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
# How many splats one run lists.
MAX_SPLATS = 20


def status_of(m):
    """(status, reason) of a RESULT match."""
    directive = (m.group(4) or '').strip()
    if m.group(1) == 'ok':
        if directive.upper().startswith('SKIP'):
            return 'SKIP', directive[4:].strip() or 'no reason given'
        return 'PASS', ''
    if directive.upper().startswith('XFAIL'):
        return 'PASS', directive
    return 'FAIL', directive


def programs(lines):
    """[(runner's RESULT match, [its own RESULT matches], its plan or None,
    the reason of its "1..0 # SKIP reason" plan or None)]."""
    found = []
    sub = []
    planned = None
    plan_skip = None
    for raw in lines:
        line = raw.rstrip('\r\n')
        if line.startswith('    '):
            inner = line[4:]
            m = PLAN.match(inner)
            if m:
                planned = int(m.group(1))
                plan_skip = (m.group(2).strip()
                             if planned == 0 and m.group(2) is not None else None)
                continue
            m = RESULT.match(inner)
            if m:
                sub.append(m)
            continue
        m = RESULT.match(line)
        if m:
            found.append((m, sub, planned, plan_skip))
            sub, planned, plan_skip = [], None, None
    return found


def program_cases(m, subs, planned, plan_skip=None):
    """The cases one program counts for."""
    pname = m.group(3)
    pstatus, preason = status_of(m)
    if not subs:
        # A program that skipped as a whole said why in its own plan,
        # "1..0 # SKIP reason"; the runner's line only gives its status.
        if pstatus == 'SKIP' and plan_skip:
            preason = plan_skip
        return [(pname, pstatus, preason)]
    cases = []
    for s in subs:
        st, why = status_of(s)
        # kselftest prints a skipped case as "ok N # SKIP reason".
        cname = s.group(3) or why or f'case {s.group(2)}'
        cases.append((f'{pname}: {cname}', st, why if s.group(3) else ''))
    if planned is not None and len(subs) < planned:
        cases.append((f'{pname}: plan', 'FAIL', f'{len(subs)} of {planned} planned results'))
    # The program's exit status must agree with its results.
    if pstatus == 'FAIL' and all(status_of(s)[0] != 'FAIL' for s in subs):
        cases.append((f'{pname}: exit', 'FAIL', preason))
    return cases


def parse_ktap(lines):
    """([(name, status, reason)] of the leaf cases, number of programs)."""
    progs = programs(lines)
    cases = []
    for m, subs, planned, plan_skip in progs:
        cases += program_cases(m, subs, planned, plan_skip)
    return cases, len(progs)


def guest_line(ktap):
    """The runner's '# guest: cpus=N preempt=M swap=S' line, or None."""
    return next((line.strip() for line in ktap if line.startswith(contract.GUEST)), None)


def find_splats(console):
    """[(kind, line number, line)] of the kernel reports in a console log."""
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
    """The lines of a file, none when it cannot be read."""
    try:
        with open(path, errors='replace') as f:
            return f.readlines()
    except OSError:
        return []


def runner_cases(who, ktap, nprog):
    """The failures of the guest runner itself: its plan, its end, its header."""
    cases = []
    planned = next((int(m.group(1)) for m in map(PLAN.match, ktap) if m), None)
    if planned is None:
        cases.append((f'runner {who}', 'FAIL', 'no KTAP plan (did it run?)'))
    elif nprog < planned:
        cases.append((f'runner {who}', 'FAIL', f'{nprog} of {planned} test programs reported'))
    if not any(line.startswith(contract.MARKERS['done']) for line in ktap):
        cases.append((f'runner {who}', 'FAIL', 'runner did not finish'))
    guest_run = any(line.startswith(contract.prefix('kernel')) for line in ktap)
    if guest_run and guest_line(ktap) is None:
        cases.append((f'runner {who}', 'FAIL', 'no "# guest:" header (cpus, preempt)'))
    return cases


def run_cases(run):
    """(KTAP lines, cases) of one run directory, with the runner's own checks."""
    ktap = read_lines(os.path.join(run, contract.KTAP_LOG))
    console = read_lines(os.path.join(run, contract.CONSOLE_LOG))
    cases, nprog = parse_ktap(ktap)
    cases += runner_cases(os.path.basename(os.path.normpath(run)), ktap, nprog)
    for kind, lineno, text in find_splats(console)[:MAX_SPLATS]:
        cases.append((f'console: {kind}', 'FAIL', f'{contract.CONSOLE_LOG}:{lineno}: {text[:160]}'))
    return ktap, cases


def count(cases, status):
    """How many of the cases have that status."""
    return sum(1 for c in cases if c[1] == status)


def summary(cases):
    """One line per case, then "N passed, N failed, N skipped"."""
    width = max((len(n) for n, _, _ in cases), default=10)
    lines = []
    for name, st, why in cases:
        line = f'{st:4} {name:{width}}' + (f'  # {why}' if why else '')
        lines.append(line.rstrip())
    lines.append(f'{count(cases, "PASS")} passed, {count(cases, "FAIL")} failed, '
                 f'{count(cases, "SKIP")} skipped')
    return lines


def exit_status(cases):
    """1 on any failure, or when there was nothing to count; else 0."""
    return 1 if count(cases, 'FAIL') or not cases else 0
