#!/usr/bin/env python3
# SPDX-License-Identifier: GPL-2.0
"""matrix-report: results/matrix.md and matrix.json from matrix.sh's logs.

    matrix-report.py TOUCHED LOG_DIR RESULTS_DIR CONFIG...

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
import sys

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


def main():
    if len(sys.argv) < 5:
        sys.exit(__doc__)
    touched_file, logs, results = sys.argv[1:4]
    configs = sys.argv[4:]
    with open(touched_file) as f:
        touched = [l.strip() for l in f if l.strip()]
    rows = []
    bad = False
    for cfg in configs:
        st = status(os.path.join(logs, cfg + '.status'))
        row = {'configuration': cfg, 'result': st.get('result', 'not run'),
               'seconds': int(st.get('seconds', 0) or 0),
               'full_build_seconds': int(st['full_seconds']) if 'full_seconds' in st else None,
               'patches_built': int(st['each_patch']) if 'each_patch' in st else None,
               'notes': st['notes']}
        for kind, tag in (('w1', 'W=1'), ('sparse', 'sparse')):
            p = warnings(os.path.join(logs, f'{cfg}.patched.{kind}.log'), touched)
            b = warnings(os.path.join(logs, f'{cfg}.baseline.{kind}.log'), touched)
            new = new_of(p, b)
            row[f'new_{kind}_warnings'] = sum(n for _, _, n in new) if p is not None and b is not None else None
            row[f'new_{kind}'] = [{'file': f, 'message': m, 'count': n} for f, m, n in new]
            row[f'{kind}_warnings_patched'] = sum(p.values()) if p is not None else None
            row[f'{kind}_warnings_baseline'] = sum(b.values()) if b is not None else None
        if row['result'] != 'pass' or row['new_w1_warnings'] != 0 or row['new_sparse_warnings'] != 0:
            bad = True
            if row['result'] == 'pass':
                row['result'] = 'new warnings' if row['new_w1_warnings'] or row['new_sparse_warnings'] \
                    else 'incomplete'
        rows.append(row)

    date = datetime.date.today().isoformat()
    os.makedirs(results, exist_ok=True)
    with open(os.path.join(results, 'matrix.json'), 'w') as f:
        json.dump({'date': date, 'touched': touched, 'configurations': rows}, f, indent=1)
        f.write('\n')

    def cell(v):
        return '-' if v is None else str(v)

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
    with open(os.path.join(results, 'matrix.md'), 'w') as f:
        f.write('\n'.join(lines) + '\n')
    print('\n'.join(lines))
    sys.exit(1 if bad else 0)


if __name__ == '__main__':
    main()
