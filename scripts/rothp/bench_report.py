# SPDX-License-Identifier: GPL-2.0
"""bench_report: compare the bench runs of two kernels.

    rothp-host bench-report BASELINE_RUN_DIR PATCHED_RUN_DIR OUT_DIR [TRACE_DIR ITRACE]
    rothp-host bench-publish OUT_DIR DOC_SVG

Reads the "BENCH <metric> <value> <unit>" lines each guest printed (in
RUN_DIR/ktap.log; "<metric>@copy" is the copy dance's value of <metric>)
and bench_itlb's "ITLB" lines, writes OUT_DIR/bench.json (one object per
metric with the baseline, patched and copy dance values, unit, ratio,
target and whether it is met; for a ratio of RATIOS, its value and the
two values it is made of), OUT_DIR/bench.md, the plots
OUT_DIR/itlb-model.svg and OUT_DIR/collapse.svg, and prints the tables.
It writes nothing outside OUT_DIR. bench-publish copies the iTLB plot of
OUT_DIR's run to DOC_SVG (the README's), only if that run was complete,
and names the run (date, commit of this tree) for the figures to cite.

The iTLB figures are modelled (tlb_model.py) from the call order and the
page-size map of each timed run, with the cores of the guest's
architecture (tlb_model.ARCH_GEOMETRIES; run_model() says how a run
tells it and its page size). Wall times per call are reported as
measured only when the guest ran under KVM (qemu.cmd says -accel kvm):
under TCG, QEMU's software TLB, not the CPU's, is what they time.

Every number comes from the two runs, the ratios of RATIOS too (the
patched value over the baseline's, of one metric both boots measured); a
metric one run lacks is reported missing, and the exit status is then 1.
"""
import datetime
import json
import os
import platform
import re
import shutil
import subprocess
import sys
import textwrap

from . import contract, itrace, svgplot, tlb_model

LINE = re.compile(r'^BENCH\s+(\S+)\s+([-+0-9.eE]+)\s+(\S+)\s*$')
INELIGIBLE = re.compile(r'^# (\S+), always: (/\S+): (\d+) KiB of text, no eligible block: (.*)$')
EXIT = contract.regex('bench_exit')
ITLB_RUN = re.compile(r'^ITLB run (4k|file|copy) (\d+) (\d+) (\d+) (\d+) ([0-9.]+) ([0-9.]+) '
                      r'([0-9a-f]+) (0x[0-9a-f]+) ([Hp]+)\s*$')
ITLB_ACCEL = re.compile(r'^ITLB accel (\S+)')
ACCEL = re.compile(r'-accel ([a-z]+)')
# qemu.cmd: the emulator, and the kernel's build directory, whose name ends
# in -arm64-16k or -arm64-64k for arm64 kernels of those pages (lib.sh's
# kernel_name).
QEMU_BIN = re.compile(r'^\s*(?:\S*/)?qemu-system-(\S+)')
KERNEL_PAGES = re.compile(r'-kernel \S*-arm64-(16|64)k/')
# Optional fields of the guest's "# guest: " line, which take precedence:
# arch=<uname -m> and pagesize=<getconf PAGESIZE>.
GUEST_ARCH = re.compile(r'\sarch=(\S+)')
GUEST_PAGESIZE = re.compile(r'\spagesize=(\d+)')
CLOCKSOURCE = re.compile(r'clocksource: Switched to clocksource (\S+)')
COPY = '@copy'

# metric: (what it is, target text, check(baseline, patched) -> bool)
TARGETS = {
    'write_open_reread_s': (
        'open(O_RDWR) of a collapsed 64 MiB ext4 file, then reading it all',
        'patched <= 1.1x its write_open_floor_s',
        None),
    'write_open_floor_s': (
        'the same reads of the collapsed file before the open, no writer: '
        'what no kernel beats on this machine', '', None),
    'write_open_cache_kept': (
        'share of its page cache still resident after that open',
        'patched 1.0 (baseline 0)',
        lambda b, p: p >= 0.999),
    'shared_write_fault_us': (
        'the first store into each 2 MiB block of that file through MAP_SHARED, '
        'its THP PMD-mapped r-x meanwhile (the split included; median)', '', None),
    'pie_text_eligible_share': (
        'whole 2 MiB text blocks of a default-built PIE that are PMD-mappable',
        'patched 1.0; baseline at chance (a random 4 KiB bias is 2 MiB-aligned '
        '1 time in 512: <= 0.1)',
        lambda b, p: b <= 0.1 and p >= 0.999),
    'prompt_collapse_s': (
        "madvise(MADV_HUGEPAGE) of textprog's 20 MiB of text to 95% of it PMD-mapped, "
        "a neighbour's populated 256 MiB heap registered with khugepaged first "
        '(capped at 120 s)',
        'patched <= 1 s and >= 50x faster',
        lambda b, p: p <= 1 and b >= 50 * p),
    'prompt_collapse_quiet_s': (
        'the same with khugepaged idle (median of 3)',
        'patched/baseline <= 1.1 (10% for noise)',
        lambda b, p: p <= 1.1 * b),
    'pie_prompt_collapse_s': (
        'the same of a default-built dynamic PIE (pieprog, 6 MiB of text) on its own '
        'text, khugepaged idle (median of 3; capped at 120 s, the cap too when the load '
        'bias leaves no 2 MiB block PMD-mappable)',
        'patched <= 1 s',
        lambda b, p: p <= 1),
    'prompt_collapse_flood_s': (
        "textprog's text after madvise() while khugepaged is flooded: the 256 MiB "
        'heap, and a process calling madvise() without end on a 1 GiB sparse read-only '
        'file mapping (capped at 60 s)',
        'patched <= 1 s',
        lambda b, p: p <= 1),
    'madvise_call_us': (
        'a repeated madvise(MADV_HUGEPAGE) of text already PMD-mapped (median of 5 '
        'processes of 15 batches of 20000 calls)',
        'patched <= 1.2x baseline',
        lambda b, p: p <= 1.2 * b),
    'khugepaged_cpu_s': (
        "khugepaged's utime + stime over 3 rounds of 25 s of that flood, in each a new "
        '256 MiB heap collapsed at 100 ms scan sleeps (the fields count 10 ms ticks)',
        '', None),
    'exec_storm_s': (
        '2 loops, one pinned to each CPU, of 1000 execs each of a small dynamic PIE, '
        'THP always (median of 3)', '', None),
    'always_text_mib_3s': (
        "MiB of gcc's cc1's text PMD-mapped within 3 s of its first exec, THP always, "
        'machine quiet (its 8 eligible blocks are 16 MiB)',
        'patched >= 16 MiB',
        lambda b, p: p >= 16),
    'always_busy_s': (
        "cc1 under THP always, a nice-0 spinner on every CPU: from its first exec to "
        '95% of its eligible text blocks PMD-mapped (capped at 60 s)',
        'patched <= 3 s',
        lambda b, p: p <= 3),
    'collapse_us_per_2m': (
        'MADV_COLLAPSE of 256 MiB of text read afresh in small folios, per '
        '2 MiB block (median of 3)', '', None),
    'memcpy_us_per_2m': (
        "the guest's memcpy() of 2 MiB: the floor of a collapse (median of 21)",
        '', None),
    'collapse_over_memcpy': (
        'collapse cost per 2 MiB over the memcpy of 2 MiB', '', None),
    'huge_text_setup_big_ms': (
        'making 256 MiB of faulted-in text huge: MADV_COLLAPSE (file), the '
        'copy dance (copy)', '', None),
    'huge_text_setup_first_ms': (
        'making 16 MiB of text huge in the first of 4 processes', '', None),
    'huge_text_setup_next_ms': (
        '... in each of the 3 next (file: the page cache is huge already)',
        '', None),
    'mem_4proc_pss_kb': (
        'Pss of 4 processes running the same huge 16 MiB text, summed',
        'file THP < copy dance', None),
    'mem_4proc_rss_kb': ('Rss of those 4 processes, summed', '', None),
    'mem_4proc_anon_huge_kb': ('AnonHugePages of those 4, summed', '', None),
    'mem_4proc_file_pmd_kb': ('FilePmdMapped of those 4, summed', '', None),
    'mem_file_cache_kb': ("the text file's page cache then", '', None),
    'partial_text_cache_before_kb': (
        'page cache of 8 text blocks of which every 4th page ran (MADV_RANDOM)',
        '', None),
    'partial_text_cache_after_kb': (
        '... after MADV_COLLAPSE of them', '', None),
    'partial_text_blocks_huge': ('... blocks huge after it', '', None),
    'partial_text_blocks': ('... blocks', '', None),
    'text_maps_names_file': (
        '/proc/PID/maps names the program file at its huge text',
        'file THP 1, copy dance 0 (symbolizers lose the file)', None),
    'uprobe_fires': (
        'a uprobe on the file offset of a stub fires when the stub runs',
        'file THP 1, copy dance 0', None),
    'real_text_huge_share': (
        'real programs (gcc cc1, clang with libclang-cpp and libLLVM, python3) and '
        'their libraries, run again and again for 3 s from a cold page cache: eligible '
        '2 MiB text blocks PMD-mapped (per mapping, the most at one poll), over THP '
        'always and hugetext run together',
        'patched >= 0.95', lambda b, p: p >= 0.95),
    'real_text_huge_share_always': (
        '... under THP always, the programs started as they are', 'patched >= 0.95',
        lambda b, p: p >= 0.95),
    'real_text_huge_share_run': (
        '... under THP madvise, the programs started by hugetext run', 'patched >= 0.95',
        lambda b, p: p >= 0.95),
}
for _mode in ('always', 'run'):
    for _prog in ('cc1', 'clang'):
        TARGETS[f'real_text_huge_share_{_mode}_{_prog}'] = (
            f'... {_prog} and its libraries alone, {_mode}', 'patched >= 0.95',
            lambda b, p: p >= 0.95)
        TARGETS[f'real_text_first_share_{_mode}_{_prog}'] = (
            f'... {_prog}, {_mode}, its first process alone (from the cold page cache)',
            '', None)
# The cc1 trace's metrics of every geometry; a run expects those of its
# architecture's (expected_targets()).
for _g in tlb_model.GEOMETRIES:
    TARGETS[f'cc1_trace_l1_misses_pki_{_g}'] = (
        f'cc1 -O2 of scripts/kallsyms.c, its instruction fetches (valgrind) replayed over '
        f'the page sizes cc1 had in the guest under THP always: modelled '
        f'{tlb_model.GEOMETRIES[_g][0]} L1 iTLB misses per 1000 instructions', '', None)
    TARGETS[f'cc1_trace_walks_pki_{_g}'] = (
        f'... page walks per 1000 instructions, {tlb_model.GEOMETRIES[_g][0]}', '', None)
    TARGETS[f'cc1_trace_walks_bound_pki_{_g}'] = (
        f'... page walks per 1000 instructions, {tlb_model.GEOMETRIES[_g][0]}, with every '
        "eligible block of cc1's layout in that guest huge: the fewest any kernel can give",
        '', None)

# Ratios of the patched kernel's value of a metric to the baseline's, both
# measured in the same run: name: (metric, what it is, target text,
# check(ratio) -> bool). A ratio whose metric one run lacks, or whose
# baseline value is 0, is reported missing.
RATIOS = {
    'khugepaged_cpu_ratio': (
        'khugepaged_cpu_s',
        "khugepaged's CPU time under the flood, patched over baseline",
        'patched/baseline <= 1.1 (khugepaged does no prompt work)',
        lambda r: r <= 1.1),
    'exec_storm_ratio': (
        'exec_storm_s',
        "the exec storm's wall time under THP always, patched over baseline",
        'patched/baseline <= 1.05',
        lambda r: r <= 1.05),
}


def reductions(trace_geometries):
    """Reductions, 1 - patched/baseline of metrics both boots have, the
    least of them, of a run whose cc1 trace is modelled with those
    geometries: name: (metrics, what it is, target text, check(value) ->
    bool, or None for a figure with no target); none without a geometry.
    A metric is a name, or (the baseline's, the patched run's) where the
    two sides differ."""
    if not trace_geometries:
        return {}
    return {
        'cc1_trace_walks_reduction': (
            tuple(f'cc1_trace_walks_pki_{g}' for g in trace_geometries),
            "cc1's modelled page walks per 1000 instructions, 1 - patched/baseline, the "
            'lesser over the modelled cores', 'patched >= 0.9 (90% fewer walks)',
            lambda r: r >= 0.9),
        'cc1_trace_walks_reduction_bound': (
            tuple((f'cc1_trace_walks_pki_{g}', f'cc1_trace_walks_bound_pki_{g}')
                  for g in trace_geometries),
            "the most cc1_trace_walks_reduction can be on any kernel: 1 - walks with every "
            "eligible block of cc1 and its libraries huge (patched guest's layout) / the "
            "baseline's walks, the lesser over the modelled cores",
            'none: the most the reduction can be', None),
    }


# How a run is modelled: its guest's architecture, page size, the TLB
# geometries of its iTLB sweep and of its cc1 trace (none when the trace
# is of another architecture's code). An x86-64 run's, the default:
MODEL = {'arch': tlb_model.DEFAULT_ARCH, 'page': tlb_model.PAGE,
         'geometries': tlb_model.ARCH_GEOMETRIES[tlb_model.DEFAULT_ARCH],
         'trace': tlb_model.ARCH_GEOMETRIES[tlb_model.DEFAULT_ARCH]}
REDUCTIONS = reductions(MODEL['trace'])

# Checks that look at the copy dance's value too: (b, p, c) -> bool.
COPY_TARGETS = {
    'mem_4proc_pss_kb': lambda b, p, c: c is not None and p < c,
    'text_maps_names_file': lambda b, p, c: b == 1 and p == 1 and c == 0,
    'uprobe_fires': lambda b, p, c: b == 1 and p == 1 and c == 0,
}


def read_text(path):
    """The text of a file, or None when it cannot be read."""
    try:
        with open(path, errors='replace') as f:
            return f.read()
    except OSError:
        return None


def itlb_run(m):
    """The fields of one ITLB_RUN match."""
    return {'seed': int(m.group(3)), 'pages': int(m.group(4)),
            'calls': int(m.group(5)), 'ns': float(m.group(6)),
            'ns_min': float(m.group(7)), 'hash': int(m.group(8), 16),
            'base': int(m.group(9), 16), 'map': m.group(10)}


def read_line(r, line):
    """Take what one line of a run's ktap.log says into r."""
    m = LINE.match(line)
    if m:
        r['vals'][m.group(1)] = float(m.group(2))
        r['units'][m.group(1)] = m.group(3)
    m = EXIT.match(line)
    if m and m.group('rc') != '0':
        r['failed'].append(f'{m.group("name")} exited {m.group("rc")}')
    m = ITLB_ACCEL.match(line)
    if m:
        r['sig'] = m.group(1)
    m = ITLB_RUN.match(line)
    if m:
        r['itlb'][(m.group(1), int(m.group(2)))] = itlb_run(m)
    m = INELIGIBLE.match(line)
    if m:
        r['ineligible'][(m.group(1), m.group(2))] = (int(m.group(3)), m.group(4))
    if line.startswith(contract.GUEST):
        m = GUEST_ARCH.search(line)
        if m:
            r['arch'] = tlb_model.arch_name(m.group(1)) or m.group(1)
        m = GUEST_PAGESIZE.search(line)
        if m:
            r['page'] = int(m.group(1))


def clock_failure(run):
    """Why the run's timings are not measurements, or None.

    A guest that could not calibrate its TSC times in jiffies (4 ms at
    HZ=250): its short timings are steps of 4 ms, not measurements."""
    sources = CLOCKSOURCE.findall(read_text(os.path.join(run, contract.CONSOLE_LOG)) or '')
    if sources and 'jiffies' in sources[-1]:
        return (f'{run}: the guest timed with clocksource {sources[-1]} '
                '(TSC not calibrated), not with the TSC')
    return None


def read_run(run):
    """BENCH values and units, ITLB runs, failures, accel, architecture and
    page size of a run dir."""
    r = {'vals': {}, 'units': {}, 'failed': [], 'itlb': {}, 'sig': None,
         'accel': 'tcg', 'dir': run, 'ineligible': {}, 'arch': tlb_model.DEFAULT_ARCH,
         'page': tlb_model.PAGE}
    text = read_text(os.path.join(run, contract.KTAP_LOG))
    if text is None:
        r['failed'].append(f'{run}: no {contract.KTAP_LOG}')
        return r
    cmd = read_text(os.path.join(run, 'qemu.cmd')) or ''
    m = ACCEL.search(cmd)
    if m:
        r['accel'] = m.group(1)
    m = QEMU_BIN.match(cmd)
    if m:
        r['arch'] = tlb_model.arch_name(m.group(1)) or m.group(1)
    m = KERNEL_PAGES.search(cmd)
    if m:
        r['page'] = int(m.group(1)) << 10
    for line in text.split('\n'):
        read_line(r, line)
    failure = clock_failure(run)
    if failure:
        r['failed'].append(failure)
    return r


def host_arch():
    """The architecture of this host (tlb_model.arch_name()), whose cc1 a
    cc1 trace of this host ran."""
    return tlb_model.arch_name(platform.machine()) or platform.machine()


def run_model(base, patch, trace_dir=None):
    """How the runs are modelled (MODEL's fields), and what is wrong with
    that: (model, failures, notes).

    A run's architecture and page size (read_run()) are the arch= (uname
    -m) and pagesize= fields of its "# guest: " line when it has them,
    else what its qemu.cmd says: the emulator (qemu-system-aarch64:
    arm64) and the kernel's build directory (...-arm64-16k/: 16 KiB
    pages); else x86-64 and 4 KiB. The patched run's are the report's,
    and the baseline's must be the same. cc1's trace is of this host's code
    (itrace.trace_arch()): it is replayed over guests of its architecture
    only, another's cc1 being another binary."""
    failures, notes = [], []
    arch, page = patch['arch'], patch['page']
    if (base['arch'], base['page']) != (arch, page):
        failures.append(f'the baseline guest ran {base["arch"]}, {base["page"] >> 10} KiB '
                        f'pages, the patched one {arch}, {page >> 10} KiB pages')
    if arch not in tlb_model.ARCH_GEOMETRIES:
        failures.append(f'no TLB model of {arch} guests: modelled as {tlb_model.DEFAULT_ARCH}')
        arch = tlb_model.DEFAULT_ARCH
    if page not in tlb_model.PAGE_SIZES[arch]:
        failures.append(f'{arch} guests have no {page}-byte pages: modelled with '
                        f'{tlb_model.PAGE}')
        page = tlb_model.PAGE
    geometries = tlb_model.ARCH_GEOMETRIES[arch]
    traced = (trace_dir and itrace.trace_arch(trace_dir)) or host_arch()
    trace = geometries
    if traced != arch:
        trace = ()
        notes.append(f"the cc1 trace is of this host's {traced} code: not replayed over "
                     f'{arch} guests, whose cc1 is another binary (no cc1_trace metrics)')
    return {'arch': arch, 'page': page, 'geometries': geometries, 'trace': trace}, \
        failures, notes


def fmt(v):
    if v is None:
        return 'missing'
    if v == int(v) and abs(v) < 1e12:
        return str(int(v))
    return f'{v:.4g}'


def span_label(span):
    if span >= 1 << 20:
        return f'{span >> 20}M'
    return f'{span >> 10}K'


def model_runs(run, model=MODEL):
    """Model every ITLB run of a run dir: {(mode, span): model result}."""
    out = {}
    for key, it in sorted(run['itlb'].items()):
        res = tlb_model.model_run(it['seed'], it['pages'], it['base'], it['map'],
                                  model['geometries'], want_hash=it['hash'],
                                  page=model['page'])
        res['ns'] = it['ns']
        res['map'] = it['map']
        out[key] = res
    return out


def itlb_metrics(base, patch, model=MODEL):
    """The iTLB metric objects, one per (quantity, span)."""
    bm, pm = model_runs(base, model), model_runs(patch, model)
    kvm = base['accel'] == 'kvm' and patch['accel'] == 'kvm'
    spans = sorted({s for (_, s) in list(bm) + list(pm)})
    objs = []

    def get(models, mode, span, f):
        r = models.get((mode, span))
        return None if r is None else f(r)

    quantities = [('translations', 'pages', 'distinct pages (translations) the span needs',
                   lambda r: r['translations'])]
    for g in model['geometries']:
        title = tlb_model.GEOMETRIES[g][0]
        quantities.append((f'{g}_l1_misses_pkc', 'per 1000 calls',
                           f'modelled {title} L1 iTLB misses', lambda r, g=g: r[g]['l1']))
        quantities.append((f'{g}_l2_misses_pkc', 'per 1000 calls',
                           f'modelled {title} L2 TLB misses (page walks)',
                           lambda r, g=g: r[g]['l2']))
    quantities.append(('wall_ns_per_call', 'ns',
                       'measured time per call' + ('' if kvm else
                                                   ' (TCG: QEMU\'s software TLB, not '
                                                   'a CPU\'s; not a TLB figure)'),
                       lambda r: r['ns']))
    for q, unit, what, f in quantities:
        for span in spans:
            o = {'metric': f'itlb_{q}_{span_label(span)}', 'description':
                 f'{what}, random chain over {span_label(span)}iB of text; baseline, '
                 'patched: file THP (MADV_COLLAPSE); copy: the copy dance (patched '
                 f'kernel); small_pages: {model["page"] >> 10} KiB',
                 'unit': unit, 'span_bytes': span,
                 'baseline': get(bm, 'file', span, f),
                 'patched': get(pm, 'file', span, f),
                 'copy': get(pm, 'copy', span, f),
                 'copy_baseline': get(bm, 'copy', span, f),
                 'small_pages': get(pm, '4k', span, f),
                 'small_pages_baseline': get(bm, '4k', span, f),
                 'target': '', 'target_met': None}
            if q == 'wall_ns_per_call':
                o['meaningful'] = kvm
                o['accel'] = {'baseline': base['accel'], 'patched': patch['accel']}
            objs.append(o)
    return objs, bm, pm, spans, kvm


def geom(spec):
    entries, ways = spec
    return f'{entries} entries ' + ('fully associative' if entries == ways else f'{ways}-way')


def model_table(g, bm, pm, spans, page=tlb_model.PAGE):
    """The markdown of one modelled core's iTLB misses, pages of page bytes."""
    title, l1, l2 = tlb_model.GEOMETRIES[g]
    small, huge = tlb_model.size_label(page), tlb_model.size_label(tlb_model.pmd_size(page))
    if l1['4k'] is l1['2m']:
        l1s = f'L1 {geom(l1["4k"])}, all page sizes'
    else:
        l1s = f'L1 {small} {geom(l1["4k"])}, L1 {huge} {geom(l1["2m"])}'
    md = ['', f'Modelled {title} iTLB ({l1s}, L2 {geom(l2)}, {small} and {huge}, LRU): '
          f'misses per 1000 calls of a random chain, {page >> 10} KiB pages vs file THP vs '
          'the copy dance (Documentation/benchmarks.rst)', '']
    rows = [('span', f'pages {small}', f'pages {huge}', f'L1 {small}', 'L1 file 6.12',
             'L1 file patched', 'L1 copy', f'walks {small}', 'walks file 6.12',
             'walks file patched', 'walks copy')]
    for span in spans:
        def v(models, mode, f):
            r = models.get((mode, span))
            return 'missing' if r is None else f(r)
        rows.append((span_label(span) + 'iB',
                     v(pm, '4k', lambda r: r['translations']),
                     v(pm, 'file', lambda r: r['translations']),
                     *(v(models, mode, lambda r, lv=lv: f'{r[g][lv]:.0f}')
                       for lv in ('l1', 'l2')
                       for models, mode in ((pm, '4k'), (bm, 'file'), (pm, 'file'),
                                            (pm, 'copy')))))
    return md + table(rows)


def wall_table(pm, spans, kvm, page=tlb_model.PAGE):
    """The markdown of the measured time per call: a table under KVM only."""
    if not kvm:
        return ['', 'The guest ran under TCG: its wall time per call measures QEMU\'s '
                'software TLB and translation-block lookup, not a CPU\'s TLBs, so it is '
                'in bench.json (itlb_wall_ns_per_call_*, "meaningful": false) and not '
                'here. Under KVM (ACCEL=kvm) this table shows measured ns per call.']
    small = tlb_model.size_label(page)
    rows = [('span', f'ns {small}', 'ns file THP', 'ns copy', f'{small} / file THP')]
    for span in spans:
        a, b, c = (pm.get((m, span)) for m in ('4k', 'file', 'copy'))
        rows.append((span_label(span) + 'iB',
                     *(f'{x["ns"]:.2f}' if x else 'missing' for x in (a, b, c)),
                     f'{a["ns"] / b["ns"]:.2f}' if a and b and b['ns'] else 'n/a'))
    return ['', 'Measured time per call (KVM), patched kernel:', ''] + table(rows)


def itlb_tables(bm, pm, spans, kvm, model=MODEL):
    """The markdown of the iTLB figures: one table per modelled core, then
    the measured times."""
    md = []
    for g in model['geometries']:
        md += model_table(g, bm, pm, spans, model['page'])
    return md + wall_table(pm, spans, kvm, model['page'])


def table(rows):
    widths = [max(len(str(r[i])) for r in rows) for i in range(len(rows[0]))]
    out = ['| ' + ' | '.join(str(c).ljust(w) for c, w in zip(r, widths)) + ' |'
           for r in rows]
    out.insert(1, '|' + '|'.join('-' * (w + 2) for w in widths) + '|')
    return out


def plots(out, bm, pm, spans, objs, model=MODEL):
    """itlb-model.svg and collapse.svg; returns their paths."""
    panels = []
    small = f'{model["page"] >> 10} KiB'
    for g in model['geometries']:
        title = tlb_model.GEOMETRIES[g][0]
        series = []
        for label, models, mode, level, style in (
                (f'L1 misses, {small}', pm, '4k', 'l1', ('#d62728', False)),
                (f'page walks, {small}', pm, '4k', 'l2', ('#ff7f0e', False)),
                ('L1 misses, file THP', pm, 'file', 'l1', ('#1f77b4', False)),
                ('page walks, file THP', pm, 'file', 'l2', ('#2ca02c', False)),
                ('L1 misses, copy dance', pm, 'copy', 'l1', ('#9467bd', True))):
            pts = [(s, models[(mode, s)][g][level]) for s in spans if (mode, s) in models]
            series.append((label, pts, style))
        panels.append((title, series))
    paths = []
    p = os.path.join(out, 'itlb-model.svg')
    with open(p, 'w') as f:
        f.write(svgplot.line_panels(
            'Modelled iTLB misses per 1000 calls of a random chain of stubs',
            panels, [span_label(s) for s in spans], spans,
            'text span (bytes)', 'misses per 1000 calls', 0, 1000))
    paths.append(p)
    by = {o['metric']: o for o in objs}
    bars = []
    for m, label in (('collapse_us_per_2m', 'MADV_COLLAPSE per 2 MiB'),
                     ('memcpy_us_per_2m', 'memcpy of 2 MiB')):
        o = by.get(m)
        if o:
            bars.append((label, o['baseline'], o['patched']))
    p = os.path.join(out, 'collapse.svg')
    with open(p, 'w') as f:
        f.write(svgplot.bars('Collapse latency, fresh page cache (us)', bars,
                             ('6.12', 'patched')))
    paths.append(p)
    return paths


def expected_targets(model=MODEL):
    """The metrics of TARGETS a run so modelled has: all but the cc1 trace's
    of other geometries than its trace's."""
    other = {f'cc1_trace_{q}_pki_{g}' for g in tlb_model.GEOMETRIES if g not in model['trace']
             for q in ('l1_misses', 'walks', 'walks_bound')}
    return set(TARGETS) - other


def metric_names(base, patch, model=MODEL):
    """Every BENCH metric of either run, and every metric with a target that
    a run so modelled has."""
    vals = list(base['vals']) + list(patch['vals'])
    names = {m for m in vals if not m.endswith(COPY)}
    names |= {m[:-len(COPY)] for m in vals if m.endswith(COPY)}
    return sorted(names | expected_targets(model))


# Checks against another metric of the same run: (baseline values, patched
# values) -> bool. The re-read after the open is judged against its floor,
# the same reads with no writer in the same boot, not against a baseline
# bound by this machine's disk.
RUN_TARGETS = {
    'write_open_reread_s': lambda bv, pv: (
        pv.get('write_open_floor_s') is not None and
        pv['write_open_reread_s'] <= 1.1 * pv['write_open_floor_s']),
}


def target_met(m, b, p, c, bvals=None, pvals=None):
    """Whether metric m meets its target; None when it has none."""
    if m in RUN_TARGETS:
        return bool(RUN_TARGETS[m](bvals or {}, pvals or {}))
    if m in COPY_TARGETS:
        return bool(COPY_TARGETS[m](b, p, c))
    check = TARGETS.get(m, ('', '', None))[2]
    return bool(check(b, p)) if check else None


def scalar_metric(m, base, patch):
    """(metric object, table row, whether a value is missing) of one metric."""
    bvals, pvals = base['vals'], patch['vals']
    b, p = bvals.get(m), pvals.get(m)
    c, cb = pvals.get(m + COPY), bvals.get(m + COPY)
    unit = (patch['units'].get(m) or base['units'].get(m) or
            patch['units'].get(m + COPY) or '')
    what, target, _ = TARGETS.get(m, ('', '', None))
    ratio = (b / p) if (b is not None and p) else None
    has_copy = (m + COPY) in pvals or (m + COPY) in bvals
    missing = b is None or p is None or (has_copy and c is None)
    met = None if missing else target_met(m, b, p, c, bvals, pvals)
    obj = {'metric': m, 'description': what, 'unit': unit,
           'baseline': b, 'patched': p,
           'ratio_baseline_over_patched': ratio,
           'target': target, 'target_met': met}
    if has_copy:
        obj['copy'] = c
        obj['copy_baseline'] = cb
    row = (m, fmt(b), fmt(p), fmt(c) if has_copy else '', unit,
           fmt(ratio) if ratio is not None else 'n/a', target,
           {None: '-', True: 'yes', False: 'NO'}[met])
    return obj, row, missing


def scalar_metrics(base, patch, model=MODEL):
    """(metric objects, table rows, how many miss a value) of the BENCH lines."""
    objs, rows, missing = [], [], 0
    for m in metric_names(base, patch, model):
        obj, row, miss = scalar_metric(m, base, patch)
        objs.append(obj)
        rows.append(row)
        missing += miss
    return objs, rows, missing


def ratio_metric(name, base, patch):
    """(metric object, table row, whether it is missing) of one ratio of
    RATIOS: the patched value of its metric over the baseline's."""
    m, what, target, check = RATIOS[name]
    b, p = base['vals'].get(m), patch['vals'].get(m)
    unit = patch['units'].get(m) or base['units'].get(m) or ''
    value = p / b if (b and p is not None) else None
    met = None if value is None else bool(check(value))
    obj = {'metric': name, 'description': what, 'unit': 'ratio', 'value': value,
           'of': {'metric': m, 'unit': unit, 'baseline': b, 'patched': p},
           'target': target, 'target_met': met}
    row = (name, m, fmt(b), fmt(p), unit, fmt(value), target,
           {None: '-', True: 'yes', False: 'NO'}[met])
    return obj, row, value is None


def reduction_metric(name, base, patch, table=None):
    """(metric object, table row, whether it is missing) of one reduction
    of table (reductions(); REDUCTIONS by default)."""
    ms, what, target, check = (table or REDUCTIONS)[name]
    # A metric, or (the baseline's metric, the patched run's metric).
    ms = [m if isinstance(m, tuple) else (m, m) for m in ms]
    pairs = [(base['vals'].get(bm), patch['vals'].get(pm)) for bm, pm in ms]
    values = [1 - p / b for b, p in pairs if b and p is not None]
    value = min(values) if len(values) == len(ms) else None
    met = None if value is None or check is None else bool(check(value))
    names = [bm if bm == pm else f'{pm} over {bm}' for bm, pm in ms]
    of = []
    for (bm, pm), (b, p) in zip(ms, pairs):
        of.append({'metric': pm, 'baseline': b, 'patched': p})
        if bm != pm:
            of[-1]['baseline_metric'] = bm
    obj = {'metric': name, 'description': what, 'unit': 'share', 'value': value,
           'of': of, 'target': target, 'target_met': met}
    row = (name, ', '.join(names), fmt(value), target,
           {None: '-', True: 'yes', False: 'NO'}[met])
    return obj, row, value is None


def ineligible(run):
    """bench_real's notes of the text mappings with no eligible block, one
    object each, in the order the guest printed them."""
    return [{'program': p, 'mapping': m, 'kib': kib, 'why': why}
            for (p, m), (kib, why) in run['ineligible'].items()]


def derived_metrics(names, one, base, patch):
    """(metric objects, table rows, how many are missing) of the metrics
    names (RATIOS, REDUCTIONS) made by one(name, base, patch)."""
    objs, rows, missing = [], [], 0
    for name in sorted(names):
        obj, row, miss = one(name, base, patch)
        objs.append(obj)
        rows.append(row)
        missing += miss
    return objs, rows, missing


def trace_values(run, trace_dir, itrace_bin, tag, model=MODEL):
    """Replay the cc1 trace of trace_dir over run's map of cc1 (bench_real's
    REALMAP lines) into run's values, in the model's trace geometries; a
    failure goes to run['failed']."""
    if not trace_dir or not model['trace']:
        return
    guest = itrace.realmaps(read_text(os.path.join(run['dir'], contract.KTAP_LOG)) or '')
    if not guest:
        run['failed'].append(f'{run["dir"]}: no REALMAP line of cc1 (bench_real did not run)')
        return
    try:
        res = itrace.replay(trace_dir, itrace_bin, guest, tag, model['trace'], model['page'])
    except (itrace.TraceError, OSError) as e:
        run['failed'].append(f'cc1 trace replay over {tag}: {e}')
        return
    for g, r in res.items():
        for q in ('l1_misses', 'walks'):
            m = f'cc1_trace_{q}_pki_{g}'
            run['vals'][m] = r['l1_pki' if q == 'l1_misses' else 'walks_pki']
            run['units'][m] = 'per_1000_instr'
    # The same layout with every eligible block huge: what no kernel beats.
    try:
        res = itrace.replay(trace_dir, itrace_bin, itrace.eligible_map(guest, model['page']),
                            tag + '-bound', model['trace'], model['page'])
    except (itrace.TraceError, OSError) as e:
        run['failed'].append(f'cc1 trace replay over {tag} with every eligible block huge: {e}')
        return
    for g, r in res.items():
        m = f'cc1_trace_walks_bound_pki_{g}'
        run['vals'][m] = r['walks_pki']
        run['units'][m] = 'per_1000_instr'



def itlb_missing(iobjs):
    """How many iTLB metrics lack a run."""
    return sum(1 for o in iobjs
               if any(o[k] is None for k in ('baseline', 'patched', 'copy', 'small_pages')))


def tree_commit():
    """The commit of this tree the run was made from, "-dirty" if it had
    changes; None outside a git checkout."""
    top = os.path.dirname(os.path.dirname(os.path.dirname(os.path.abspath(__file__))))
    try:
        r = subprocess.run(['git', '-C', top, 'describe', '--always', '--dirty', '--abbrev=12'],
                           capture_output=True, text=True, check=True)
    except (OSError, subprocess.CalledProcessError):
        return None
    return r.stdout.strip() or None


def meta_of(base, patch, model=MODEL, notes=()):
    """bench.json's "meta": when, from which commit, where, which accelerator,
    which architecture and model."""
    guest = f'QEMU {patch["accel"].upper()}'
    if model['arch'] != tlb_model.DEFAULT_ARCH:
        guest += f' {model["arch"]}, {model["page"] >> 10} KiB pages'
    return {'date': datetime.datetime.now(datetime.timezone.utc).isoformat(timespec='seconds'),
            'commit': tree_commit(),
            'host': f'{platform.machine()}, {os.cpu_count()} cpus',
            'guest': f'{guest}, see results/bench-*/qemu.cmd',
            'accel': {'baseline': base['accel'], 'patched': patch['accel']},
            'hypervisor_cpuid': {'baseline': base['sig'], 'patched': patch['sig']},
            'arch': model['arch'], 'page_size': model['page'],
            'tlb_model': {g: dict(zip(('title', 'l1', 'l2'), tlb_model.GEOMETRIES[g]))
                          for g in model['geometries']},
            'notes': list(notes),
            'failures': base['failed'] + patch['failed']}


def markdown(meta, rows, ratio_rows, reduction_rows, itlb_md):
    """bench.md: the metrics table, the ratios, the iTLB tables, the failures."""
    head = ('metric', 'baseline', 'patched', 'copy dance', 'unit', 'ratio b/p', 'target',
            'met')
    md = [f'rothp bench, {meta["date"]}, {meta["host"]}, {meta["guest"]}', '']
    md += table([head] + rows)
    md += ['', "Ratios of the patched kernel's value to the baseline's, both measured "
           'in this run:', '']
    md += table([('ratio', 'of', 'baseline', 'patched', 'unit', 'patched/baseline',
                  'target', 'met')] + ratio_rows)
    if reduction_rows:
        md += ['', 'Reductions, 1 - patched/baseline, the least over the metrics named:', '']
        md += table([('reduction', 'of', 'value', 'target', 'met')] + reduction_rows)
    md += itlb_md
    if meta.get('notes'):
        md += ['', 'Notes: ' + '; '.join(meta['notes'])]
    if meta['failures']:
        md += ['', 'Failed benchmark programs: ' + '; '.join(meta['failures'])]
    return md


def report(base_dir, patch_dir, out, trace_dir=None, itrace_bin=None):
    """Write and print the report of two run dirs; the exit status, 0 when
    every metric was measured and no benchmark program failed. With
    trace_dir (rothp-host cc1-trace), cc1's trace is replayed over each
    run's map of cc1 too. The runs' architecture chooses the TLB models
    (run_model())."""
    base, patch = read_run(base_dir), read_run(patch_dir)
    model, failures, notes = run_model(base, patch, trace_dir)
    patch['failed'] += failures
    trace_values(base, trace_dir, itrace_bin, 'baseline', model)
    trace_values(patch, trace_dir, itrace_bin, 'patched', model)
    objs, rows, missing = scalar_metrics(base, patch, model)
    robjs, rrows, rmissing = derived_metrics(RATIOS, ratio_metric, base, patch)
    reds = reductions(model['trace'])
    dobjs, drows, dmissing = derived_metrics(
        reds, lambda name, b, p: reduction_metric(name, b, p, reds), base, patch)
    robjs += dobjs
    iobjs, bm, pm, spans, kvm = itlb_metrics(base, patch, model)
    missing += rmissing + dmissing + itlb_missing(iobjs)
    meta = meta_of(base, patch, model, notes)
    meta['missing'] = missing
    meta['complete'] = not missing and not meta['failures']
    os.makedirs(out, exist_ok=True)
    inel = ineligible(patch)
    with open(os.path.join(out, 'bench.json'), 'w') as f:
        json.dump({'meta': meta, 'metrics': objs + robjs + iobjs, 'real_text_ineligible': inel},
                  f, indent=2)
    md = markdown(meta, rows, rrows, drows, itlb_tables(bm, pm, spans, kvm, model))
    if inel:
        md += ['', "bench_real's text mappings with no eligible "
               f'{tlb_model.pmd_size(model["page"]) >> 20} MiB block (patched run, THP '
               'always), and why:', '']
        md += table([('program', 'mapping', 'KiB of text', 'why')] +
                     [(o['program'], o['mapping'], o['kib'], o['why']) for o in inel])
    svgs = plots(out, bm, pm, spans, objs, model)
    with open(os.path.join(out, 'bench.md'), 'w') as f:
        f.write('\n'.join(md) + '\n')
    print('\n'.join(md))
    nmet = sum(1 for o in objs + robjs if o['target_met'])
    unmet = sum(1 for o in objs + robjs if o['target_met'] is False)
    total = len(objs) + len(robjs) + len(iobjs)
    print(f'\n{total - missing} metrics measured, {missing} missing; '
          f'targets: {nmet} met, {unmet} not met; plots: {", ".join(svgs)}')
    return 0 if meta['complete'] else 1


# The generated part of README.rst and of the cover letter: the lines
# between these markers are make publish's, rewritten from bench.json.
# (No line of the cover letter may start with "---": git mailinfo would
# end the message there.)
RST_BEGIN = '.. bench-figures-begin: written by make publish from results/bench.json'
RST_END = '.. bench-figures-end'
TXT_BEGIN = '[make bench figures: written by make publish]'
TXT_END = '[end of make bench figures]'
# The metrics of the iTLB table: quantity, spans shown.
ITLB_SPANS = ('64K', '1M', '4M', '16M', '64M', '256M')


def fig(v, unit=''):
    """A value as the tables show it."""
    if v is None:
        return 'missing'
    if isinstance(v, float):
        v = (str(int(v)) if v == int(v) and abs(v) < 1e12 else
             f'{v:.3g}' if abs(v) < 100 else f'{v:.0f}')
    unit = {'share': '', 'x': '', 'per_1000_instr': '', 'blocks': ''}.get(unit, unit)
    return f'{v} {unit}'.strip()


def figure_rows(metrics):
    """(metric, baseline, patched, target, met) of every metric with a
    target: the scalars, then the ratios and reductions (their value as
    patched, "of" values as baseline)."""
    rows = []
    met = {None: '-', True: 'yes', False: 'NO'}
    for o in metrics:
        if not o.get('target') or o['metric'].startswith('itlb_'):
            continue
        if 'value' in o:
            rows.append((o['metric'], '', fig(o['value']), o['target'], met[o['target_met']]))
        else:
            rows.append((o['metric'], fig(o['baseline'], o['unit']), fig(o['patched'], o['unit']),
                         o['target'], met[o['target_met']]))
    return rows


def meta_model(meta):
    """(geometries, page size) of a bench.json's meta (an x86-64 run's when
    it does not say)."""
    return (tuple(meta.get('tlb_model') or MODEL['geometries']),
            meta.get('page_size') or MODEL['page'])


def itlb_rows(metrics, geometries=MODEL['geometries']):
    """span, then small pages' and file THP L1 misses and walks per 1000
    calls, of each modelled core (patched kernel)."""
    by = {o['metric']: o for o in metrics}
    rows = []
    for span in ITLB_SPANS:
        row = [span + 'iB']
        for g in geometries:
            for q in ('l1_misses', 'l2_misses'):
                o = by.get(f'itlb_{g}_{q}_pkc_{span}')
                row += [fig(o and o['small_pages']), fig(o and o['patched'])]
        rows.append(tuple(row))
    return rows


def rst_table(rows):
    """A simple rst table of rows, the first the header."""
    widths = [max(len(str(r[i])) for r in rows) for i in range(len(rows[0]))]
    rule = '  '.join('=' * w for w in widths)
    out = [rule, '  '.join(str(c).ljust(w) for c, w in zip(rows[0], widths)).rstrip(), rule]
    out += ['  '.join(str(c).ljust(w) for c, w in zip(r, widths)).rstrip() for r in rows[1:]]
    return out + [rule]


def itlb_head(geometries=MODEL['geometries'], page=MODEL['page']):
    small, huge = tlb_model.size_label(page), tlb_model.size_label(tlb_model.pmd_size(page))
    head = ['span']
    for g in geometries:
        head += [f'{g} L1 {small}', f'{g} L1 {huge}', f'{g} walks {small}',
                 f'{g} walks {huge}']
    return tuple(head)


def run_line(meta):
    return (f'``make bench`` of {meta["date"]}, commit ``{meta.get("commit") or "unknown"}``, '
            f'{meta["host"]}, ``{meta["guest"]}``')


def figures_rst(js):
    """README's generated part: the run, its targets, the iTLB sweep."""
    meta, metrics = js['meta'], js['metrics']
    rows = figure_rows(metrics)
    nmet = sum(1 for r in rows if r[4] == 'yes')
    # A row without a check (a bound, a comparison) is shown, not counted.
    ntarget = sum(1 for r in rows if r[4] in ('yes', 'NO'))
    md = [RST_BEGIN, '', run_line(meta) + f': {nmet} of {ntarget} targets met. Ratios '
          'and reductions show their value under "patched".', '']
    md += rst_table([('metric', 'baseline', 'patched', 'target', 'met')] + rows)
    geometries, page = meta_model(meta)
    pmd = tlb_model.pmd_size(page)
    md += ['', 'The iTLB sweep of the same run, modelled misses per 1000 calls of a random '
           f'chain of stubs over the span, {page >> 10} KiB pages '
           f'({tlb_model.size_label(pmd)}: the same text PMD-mapped by the series):', '']
    md += rst_table([itlb_head(geometries, page)] + itlb_rows(metrics, geometries))
    inel = js.get('real_text_ineligible') or []
    if inel:
        md += ['', f"The real programs' text mappings with no eligible {pmd >> 20} MiB block "
               '(THP ``always``, patched), and why:', '']
        md += rst_table([('program', 'mapping', 'KiB', 'why')] +
                        [(o['program'], o['mapping'], o['kib'], o['why']) for o in inel])
    return md + ['', RST_END]


def figures_text(js):
    """The cover letter's generated part: the same, as plain text."""
    meta, metrics = js['meta'], js['metrics']
    rows = figure_rows(metrics)
    run = run_line(meta).replace('``', '')
    lines = [TXT_BEGIN] + textwrap.wrap(run + ':', 72)
    for m, b, p, target, met in rows:
        vals = f'{b} -> {p}' if b else p
        what = (f'({target})' if met == '-' else
                f'(target {target}: {"met" if met == "yes" else "NOT met"})')
        lines += textwrap.wrap(f'{m}: {vals} {what}', 72,
                               initial_indent=' - ', subsequent_indent='   ',
                               break_on_hyphens=False)
    return lines + [TXT_END]


def splice_text(path, begin, end, block):
    """The text of the file at path with block between its lines begin and
    end (both kept, as block has them); the file is not written."""
    with open(path) as f:
        lines = f.read().split('\n')
    try:
        a = lines.index(begin)
        b = lines.index(end, a)
    except ValueError:
        raise ValueError(f'{path} has no "{begin}" ... "{end}" lines') from None
    lines[a:b + 1] = block
    return '\n'.join(lines)


def publish(out, doc_svg, readme=None, cover=None):
    """Copy the iTLB plot of OUT's run to DOC_SVG if that run was complete,
    and write its figures into README.rst and the cover letter between
    their markers; the exit status."""
    try:
        with open(os.path.join(out, 'bench.json')) as f:
            js = json.load(f)
        meta = js['meta']
    except (OSError, ValueError, KeyError) as e:
        print(f'bench-publish: no bench report in {out} ({e}): run make bench first',
              file=sys.stderr)
        return 1
    run = f'the run of {meta.get("date")}, commit {meta.get("commit") or "unknown"}'
    if not meta.get('complete'):
        print(f'bench-publish: {run} is not complete ({meta.get("missing", "?")} metrics '
              f'missing, failed: {"; ".join(meta.get("failures") or []) or "none"}): '
              'publish only a whole make bench run, without FILTER', file=sys.stderr)
        return 1
    try:
        edits = [(path, splice_text(path, begin, end, block)) for path, begin, end, block in
                 ((readme, RST_BEGIN, RST_END, figures_rst(js)),
                  (cover, TXT_BEGIN, TXT_END, figures_text(js))) if path]
        for path, text in edits:
            with open(path, 'w') as f:
                f.write(text)
    except (OSError, ValueError) as e:
        print(f'bench-publish: {e}', file=sys.stderr)
        return 1
    shutil.copyfile(os.path.join(out, 'itlb-model.svg'), doc_svg)
    print(f'bench-publish: {doc_svg} is the iTLB plot of {run}'
          + (f'; its figures are in {readme}' if readme else '')
          + (f' and {cover}' if cover else ''))
    return 0
