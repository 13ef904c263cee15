#!/usr/bin/env python3
# SPDX-License-Identifier: GPL-2.0
"""report-bench: compare the bench runs of two kernels.

    report-bench.py BASELINE_RUN_DIR PATCHED_RUN_DIR OUT_DIR

Reads the "BENCH <metric> <value> <unit>" lines each guest printed (in
RUN_DIR/ktap.log), writes OUT_DIR/bench.json (one object per metric with
the baseline and patched values, unit, ratio, target and whether it is
met) and OUT_DIR/bench.md, and prints the table. Every number comes from
the two runs; a metric one run lacks is reported missing, and the exit
status is then 1.
"""
import datetime
import json
import os
import platform
import re
import sys

LINE = re.compile(r'^BENCH\s+(\S+)\s+([-+0-9.eE]+)\s+(\S+)\s*$')
EXIT = re.compile(r'^# rothp-runner: bench exit (\S+) (\d+)')

# metric: (what it is, target text, check(baseline, patched) -> bool)
TARGETS = {
    'write_open_reread_s': (
        'open(O_RDWR) of a collapsed 64 MiB ext4 file, then reading it all',
        'patched >= 5x faster',
        lambda b, p: p > 0 and b / p >= 5),
    'write_open_cache_kept': (
        'share of its page cache still resident after that open',
        'patched 1.0 (baseline 0)',
        lambda b, p: p >= 0.999),
    'pie_text_eligible_share': (
        'whole 2 MiB text blocks of a default-built PIE that are PMD-mappable',
        'patched 1.0; baseline at chance (a random 4 KiB bias is 2 MiB-aligned '
        '1 time in 512: <= 0.1)',
        lambda b, p: b <= 0.1 and p >= 0.999),
    'prompt_collapse_s': (
        'MADV_HUGEPAGE of 20 MiB of text to 95% of it PMD-mapped, with '
        'khugepaged busy with a 256 MiB heap registered first (capped at 120 s)',
        'patched <= 1 s and >= 50x faster',
        lambda b, p: p <= 1 and b >= 50 * p),
    'prompt_collapse_quiet_s': (
        'the same with khugepaged idle (median of 3)',
        'patched/baseline <= 1.1 (10% for noise)',
        lambda b, p: p <= 1.1 * b),
    'madvise_call_us': (
        'one madvise(MADV_HUGEPAGE) of the text range (median of 200)',
        'patched <= 1.5x baseline',
        lambda b, p: p <= 1.5 * b),
}


def read_run(run):
    vals, units, failed = {}, {}, []
    try:
        with open(os.path.join(run, 'ktap.log'), errors='replace') as f:
            lines = [line.rstrip('\r\n') for line in f]
    except OSError:
        return vals, units, ['no ktap.log']
    for line in lines:
        m = LINE.match(line)
        if m:
            vals[m.group(1)] = float(m.group(2))
            units[m.group(1)] = m.group(3)
        m = EXIT.match(line)
        if m and m.group(2) != '0':
            failed.append(f'{m.group(1)} exited {m.group(2)}')
    return vals, units, failed


def fmt(v):
    if v is None:
        return 'missing'
    return f'{v:.4g}'


def main():
    if len(sys.argv) != 4:
        sys.exit(__doc__)
    base_dir, patch_dir, out = sys.argv[1:]
    base, bunits, bfail = read_run(base_dir)
    patch, punits, pfail = read_run(patch_dir)
    metrics = sorted(set(base) | set(patch) | set(TARGETS))
    rows, objs, missing, unmet = [], [], 0, 0
    for m in metrics:
        b, p = base.get(m), patch.get(m)
        unit = punits.get(m) or bunits.get(m) or ''
        what, target, check = TARGETS.get(m, ('', '', None))
        ratio = (b / p) if (b is not None and p) else None
        met = None
        if b is None or p is None:
            missing += 1
        elif check:
            met = bool(check(b, p))
            unmet += not met
        objs.append({'metric': m, 'description': what, 'unit': unit,
                     'baseline': b, 'patched': p,
                     'ratio_baseline_over_patched': ratio,
                     'target': target, 'target_met': met})
        rows.append((m, fmt(b), fmt(p), unit,
                     fmt(ratio) if ratio is not None else 'n/a', target,
                     {None: '-', True: 'yes', False: 'NO'}[met]))
    meta = {'date': datetime.datetime.now(datetime.timezone.utc).isoformat(timespec='seconds'),
            'host': f'{platform.machine()}, {os.cpu_count()} cpus',
            'guest': 'QEMU TCG, see results/bench-*/qemu.cmd',
            'failures': bfail + pfail}
    os.makedirs(out, exist_ok=True)
    with open(os.path.join(out, 'bench.json'), 'w') as f:
        json.dump({'meta': meta, 'metrics': objs}, f, indent=2)
    head = ('metric', 'baseline', 'patched', 'unit', 'ratio b/p', 'target', 'met')
    widths = [max(len(str(r[i])) for r in rows + [head]) for i in range(len(head))]
    table = ['| ' + ' | '.join(str(c).ljust(w) for c, w in zip(r, widths)) + ' |'
             for r in [head] + rows]
    table.insert(1, '|' + '|'.join('-' * (w + 2) for w in widths) + '|')
    md = [f'rothp bench, {meta["date"]}, {meta["host"]}, {meta["guest"]}', ''] + table
    if meta['failures']:
        md += ['', 'Failed benchmark programs: ' + '; '.join(meta['failures'])]
    with open(os.path.join(out, 'bench.md'), 'w') as f:
        f.write('\n'.join(md) + '\n')
    print('\n'.join(md))
    print(f'\n{len(objs) - missing} metrics measured, {missing} missing; '
          f'targets: {sum(1 for o in objs if o["target_met"])} met, {unmet} not met')
    sys.exit(1 if missing or meta['failures'] else 0)


if __name__ == '__main__':
    main()
