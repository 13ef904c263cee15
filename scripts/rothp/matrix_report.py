# SPDX-License-Identifier: GPL-2.0
"""matrix_report: results/matrix.md and matrix.json from matrix.sh's logs.

    rothp-host matrix-report TOUCHED LOG_DIR RESULTS_DIR CONFIG...

TOUCHED lists the files the series touches. For each configuration the
W=1 and sparse logs of the patched and the baseline tree are read; a
warning counts when it is in a touched file, and is new when the patched
tree has more warnings of that (file, message) than the baseline. Line
numbers are left out of the match: the series moves code. Exit status 1
when a configuration failed or has a new warning.
"""
import collections
import datetime
import json
import os
import re

WARN = re.compile(r'^(?P<file>[^\s:]+):(?P<line>\d+):(?:(?P<col>\d+):)?\s*'
                  r'(?:warning|error): (?P<msg>.*)$')
# objtool names the object and a function offset, not a line.
OBJTOOL = re.compile(r'^(?P<file>[^\s:]+)\.o: (?:warning|error): (?P<msg>objtool: .*)$')
OFFSET = re.compile(r'\+0x[0-9a-f]+')


def norm(path, touched):
    """The touched file a compiler's path names, or None."""
    for t in touched:
        if path == t or path.endswith('/' + t):
            return t
    return None


def warnings(path, touched):
    """Counter of (touched file, message) of a build log, None without one."""
    found = collections.Counter()
    try:
        with open(path, errors='replace') as f:
            for line in f:
                m = WARN.match(line.strip())
                if m:
                    path, msg = m.group('file'), m.group('msg')
                else:
                    m = OBJTOOL.match(line.strip())
                    if not m:
                        continue
                    path, msg = m.group('file') + '.c', OFFSET.sub('', m.group('msg'))
                t = norm(path, touched)
                if t:
                    found[(t, msg.strip())] += 1
    except OSError:
        return None
    return found


def new_of(patched, baseline):
    """[(file, message, n)] of the warnings the patched tree adds."""
    if patched is None:
        return []
    base = baseline or collections.Counter()
    return [(f, m, n - base[(f, m)]) for (f, m), n in sorted(patched.items())
            if n > base[(f, m)]]


def status(path):
    """The key=value lines of a configuration's status file and its notes."""
    st = {}
    notes = []
    try:
        with open(path) as f:
            for line in f:
                line = line.strip()
                k, sep, v = line.partition('=')
                if sep and re.fullmatch(r'[a-z_]+', k):
                    st[k] = v
                elif line.startswith('matrix:'):
                    notes.append(line[len('matrix:'):].strip())
    except OSError:
        pass
    st['notes'] = notes
    return st


def int_or_none(st, key):
    """A status file's number, None when it has no such key."""
    return int(st[key]) if key in st else None


def warning_counts(row, cfg, logs, touched):
    """Add to row the warnings, and the new ones, of each kind of log."""
    for kind in ('w1', 'sparse'):
        p = warnings(os.path.join(logs, f'{cfg}.patched.{kind}.log'), touched)
        b = warnings(os.path.join(logs, f'{cfg}.baseline.{kind}.log'), touched)
        new = new_of(p, b)
        both = p is not None and b is not None
        row[f'new_{kind}_warnings'] = sum(n for _, _, n in new) if both else None
        row[f'new_{kind}'] = [{'file': f, 'message': m, 'count': n} for f, m, n in new]
        row[f'{kind}_warnings_patched'] = sum(p.values()) if p is not None else None
        row[f'{kind}_warnings_baseline'] = sum(b.values()) if b is not None else None


def config_row(cfg, logs, touched):
    """(matrix.json's object of one configuration, whether it failed)."""
    st = status(os.path.join(logs, cfg + '.status'))
    row = {'configuration': cfg, 'result': st.get('result', 'not run'),
           'seconds': int(st.get('seconds', 0) or 0),
           'full_build_seconds': int_or_none(st, 'full_seconds'),
           'patches_built': int_or_none(st, 'each_patch'),
           'notes': st['notes']}
    warning_counts(row, cfg, logs, touched)
    new_w1, new_sparse = row['new_w1_warnings'], row['new_sparse_warnings']
    bad = row['result'] != 'pass' or new_w1 != 0 or new_sparse != 0
    if bad and row['result'] == 'pass':
        row['result'] = 'new warnings' if new_w1 or new_sparse else 'incomplete'
    return row, bad


def cell(v):
    """A table cell: '-' for no value."""
    return '-' if v is None else str(v)


def markdown(rows, date):
    """matrix.md: one table row per configuration, then its notes and new
    warnings."""
    lines = [f'# Build matrix ({date})', '',
             'New warnings: in files the series touches, absent from the same build of the '
             'baseline tree (matched by file and message).', '',
             '| configuration | result | new W=1 warnings | new sparse warnings | full build (s) '
             '| time (s) |', '|---|---|---|---|---|---|']
    for r in rows:
        lines.append(f"| {r['configuration']} | {r['result']} | {cell(r['new_w1_warnings'])} "
                     f"| {cell(r['new_sparse_warnings'])} | {cell(r['full_build_seconds'])} "
                     f"| {r['seconds']} |")
    for r in rows:
        for n in r['notes']:
            lines.append(f"\n- {r['configuration']}: {n}")
        for kind in ('w1', 'sparse'):
            for w in r[f'new_{kind}']:
                lines.append(f"\n- {r['configuration']}: new {kind}: {w['file']}: {w['message']}"
                             f" (x{w['count']})")
    return lines


def report(touched_file, logs, results, configs):
    """Write and print the matrix report; the exit status, 1 when a
    configuration failed or has a new warning."""
    with open(touched_file) as f:
        touched = [line.strip() for line in f if line.strip()]
    rows, bad = [], False
    for cfg in configs:
        row, failed = config_row(cfg, logs, touched)
        rows.append(row)
        bad = bad or failed
    date = datetime.date.today().isoformat()
    os.makedirs(results, exist_ok=True)
    with open(os.path.join(results, 'matrix.json'), 'w') as f:
        json.dump({'date': date, 'touched': touched, 'configurations': rows}, f, indent=1)
        f.write('\n')
    lines = markdown(rows, date)
    with open(os.path.join(results, 'matrix.md'), 'w') as f:
        f.write('\n'.join(lines) + '\n')
    print('\n'.join(lines))
    return 1 if bad else 0
