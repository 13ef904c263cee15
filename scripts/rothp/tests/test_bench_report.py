# SPDX-License-Identifier: GPL-2.0
"""Tests of bench_report and tlb_model, on made-up run directories (these
are fixtures, not results): the TCG path, the KVM path (qemu.cmd saying
-accel kvm: measured ns per call shown with the 4K/file THP ratio), a
refused iTLB run reported missing, the targets, the ratios of one
metric's two values, the model itself (the Arm Cortex-A76 by hand), and
the cores a run is modelled with: the x86 ones for an x86-64 guest, the
Cortex-A76 for an arm64 one (qemu-system-aarch64 in qemu.cmd, or arch= on
the guest line), with its page size. bench.sh runs them before the
report."""
import contextlib
import io
import json
import os
import tempfile
import unittest
from unittest import mock

from rothp import bench_report, tlb_model

BASE = 0xa00000
SPANS = (64 << 10, 4 << 20, 16 << 20)
SCALARS = {
    'write_open_reread_s': 0.105, 'write_open_floor_s': 0.1, 'write_open_cache_kept': 1,
    'shared_write_fault_us': 50,
    'pie_text_eligible_share': 0.05,
    'prompt_collapse_s': 0.3, 'prompt_collapse_quiet_s': 0.3, 'madvise_call_us': 2,
    'pie_prompt_collapse_s': 0.2, 'prompt_collapse_flood_s': 0.4, 'khugepaged_cpu_s': 1.5,
    'exec_storm_s': 40, 'always_text_mib_3s': 16, 'always_busy_s': 0.8,
    'collapse_us_per_2m': 900, 'memcpy_us_per_2m': 300, 'collapse_over_memcpy': 3,
    'huge_text_setup_big_ms': 100, 'huge_text_setup_first_ms': 10,
    'huge_text_setup_next_ms': 1, 'mem_4proc_pss_kb': 20000, 'mem_4proc_rss_kb': 70000,
    'mem_4proc_anon_huge_kb': 0, 'mem_4proc_file_pmd_kb': 65536, 'mem_file_cache_kb': 19000,
    'partial_text_cache_before_kb': 4096, 'partial_text_cache_after_kb': 16384,
    'partial_text_blocks_huge': 8, 'partial_text_blocks': 8,
    'text_maps_names_file': 1, 'uprobe_fires': 1,
    'real_text_huge_share': 0.97, 'real_text_huge_share_always': 0.96,
    'real_text_huge_share_run': 0.98,
    'cc1_trace_l1_misses_pki_skl': 0.5, 'cc1_trace_l1_misses_pki_zen2': 1.5,
    'cc1_trace_walks_pki_skl': 0.01, 'cc1_trace_walks_pki_zen2': 0.05,
    'cc1_trace_walks_bound_pki_skl': 0.001, 'cc1_trace_walks_bound_pki_zen2': 0.001}
for _m in ('always', 'run'):
    for _p in ('cc1', 'clang'):
        SCALARS[f'real_text_huge_share_{_m}_{_p}'] = 0.97
        SCALARS[f'real_text_first_share_{_m}_{_p}'] = 0.9
COPY = {'huge_text_setup_big_ms': 200, 'huge_text_setup_first_ms': 20,
        'huge_text_setup_next_ms': 20, 'mem_4proc_pss_kb': 80000, 'mem_4proc_rss_kb': 80000,
        'mem_4proc_anon_huge_kb': 65536, 'mem_4proc_file_pmd_kb': 0,
        'mem_file_cache_kb': 19000, 'text_maps_names_file': 0, 'uprobe_fires': 0}


X86_TRACE = ('cc1_trace_l1_misses_pki_skl', 'cc1_trace_l1_misses_pki_zen2',
             'cc1_trace_walks_pki_skl', 'cc1_trace_walks_pki_zen2',
             'cc1_trace_walks_bound_pki_skl', 'cc1_trace_walks_bound_pki_zen2')
X86_QEMU = 'qemu-system-x86_64 -accel {accel} -cpu max -smp 2\n'


def arm64_qemu(pages=''):
    """qemu.cmd of an arm64 guest, as boot.sh writes it (pages: -16k, -64k)."""
    return ('qemu-system-aarch64 -machine virt -accel {accel} -cpu max,pauth-impdef=on -smp 2 '
            f'-m 2048 -kernel /top/build/obj/patched-arm64{pages}/arch/arm64/boot/Image '
            "-append 'console=ttyAMA0 rothp.mode=bench'\n")


def itlb_line(mode, span, seed, ns, page=4096):
    pages = span // 4096
    nblk = max(1, span // tlb_model.pmd_size(page))
    nxt = tlb_model.cycle_perm(seed, pages)
    return (f'ITLB run {mode} {span} {seed} {pages} 1000 {ns:.3f} {ns:.3f} '
            f'{tlb_model.perm_hash(nxt):016x} {BASE:#x} {("p" if mode == "4k" else "H") * nblk}')


def make_run(d, accel, skip=None, ns4k=30.0, nshuge=10.0, vals=None, drop=(), qemu=X86_QEMU,
             guest=None, page=4096):
    """A run directory d: the iTLB runs but skip, SCALARS updated with vals
    but for the metrics in drop, and COPY; its qemu.cmd qemu, its guest
    line guest, pages of page bytes."""
    os.makedirs(d)
    with open(os.path.join(d, 'qemu.cmd'), 'w') as f:
        f.write(qemu.format(accel=accel))
    lines = ([guest] if guest else []) + [
        '# rothp-runner: bench start bench_itlb.ext4',
        'ITLB accel ' + ('KVMKVMKVM___' if accel == 'kvm' else 'TCGTCGTCGTCG')]
    for mode in ('4k', 'file', 'copy'):
        for n, span in enumerate(SPANS):
            if (mode, span) != skip:
                lines.append(itlb_line(mode, span, 1000 + n, ns4k if mode == '4k' else nshuge,
                                       page))
    scalars = dict(SCALARS, **(vals or {}))
    lines += [f'BENCH {k} {v} x' for k, v in scalars.items() if k not in drop]
    lines += [f'BENCH {k}@copy {v} x' for k, v in COPY.items()]
    lines += ['# rothp-runner: bench exit bench_itlb.ext4 0', '# rothp-runner: done']
    with open(os.path.join(d, 'ktap.log'), 'w') as f:
        f.write('\n'.join(lines) + '\n')


def report(tmp, accel, skip=None, bvals=None, pvals=None, pdrop=(), **run):
    b, p, out = (os.path.join(tmp, x) for x in ('b', 'p', 'out'))
    make_run(b, accel, vals=bvals, drop=run.get('drop', ()), **run_kw(run))
    make_run(p, accel, skip, vals=pvals, drop=tuple(pdrop) + tuple(run.get('drop', ())),
             **run_kw(run))
    svg = os.path.join(tmp, 'doc.svg')
    stdout = io.StringIO()
    with contextlib.redirect_stdout(stdout), contextlib.redirect_stderr(stdout):
        rc = bench_report.report(b, p, out)
        assert not os.path.exists(svg)	# the report writes in out only
        bench_report.publish(out, svg)
    with open(os.path.join(out, 'bench.json')) as f:
        js = json.load(f)
    with open(os.path.join(out, 'bench.md')) as f:
        md = f.read()
    return rc, stdout.getvalue(), js, md, svg


def run_kw(run):
    """make_run's qemu, guest and page of report()'s keywords."""
    return {k: v for k, v in run.items() if k in ('qemu', 'guest', 'page')}


def metric(js, name):
    return next(o for o in js['metrics'] if o['metric'] == name)


class TestModel(unittest.TestCase):
    def test_cycle(self):
        nxt = tlb_model.cycle_perm(7, 1000)
        seen, cur = set(), 0
        for _ in range(1000):
            seen.add(cur)
            cur = nxt[cur]
        self.assertEqual(len(seen), 1000)
        self.assertEqual(cur, 0)

    def test_small_fits(self):
        r = tlb_model.model_run(1, 16, BASE, 'p')
        self.assertEqual(r['skl']['l1'], 0)
        self.assertEqual(r['translations'], 16)

    def test_huge_beats_small(self):
        small = tlb_model.model_run(3, 4096, BASE, 'p' * 8)
        huge = tlb_model.model_run(3, 4096, BASE, 'H' * 8)
        self.assertEqual(small['skl']['l2'], 1000)	# 4096 pages > 1536 STLB entries
        self.assertEqual(huge['skl']['l2'], 0)
        self.assertEqual(huge['translations'], 8)

    def test_hash_mismatch(self):
        with self.assertRaises(ValueError):
            tlb_model.model_run(3, 64, BASE, 'p', want_hash=1)

    def test_a76_l1(self):
        # 48 entries, fully associative: 48 pages fit whatever the order,
        # 49 cycled thrash it (LRU), its L2 holding them all.
        a76 = ('a76',)
        self.assertEqual(tlb_model.model_run(3, 48, BASE, 'p', a76)['a76'],
                         {'l1': 0, 'l2': 0})
        r = tlb_model.model_run(3, 49, BASE, 'p', a76)
        self.assertEqual(r['a76'], {'l1': 1000, 'l2': 0})
        self.assertEqual(set(r), {'translations', 'a76'})
        # One 2 MiB mapping covers them: a walk the first time, hits after.
        tlb = tlb_model.TwoLevel('a76')
        self.assertEqual([tlb.access(('2m', BASE >> 21)) for _ in range(49)], [2] + [0] * 48)
        r = tlb_model.model_run(3, 49, BASE, 'H', a76)
        self.assertEqual((r['translations'], r['a76']), (1, {'l1': 0, 'l2': 0}))

    def test_a76_l2(self):
        # 1280 entries of 5 ways: 256 sets. Six pages of set 0 and 48 of
        # others, cycled: the L1 misses all 54, the L2 the six only.
        tlb = tlb_model.TwoLevel('a76')
        self.assertEqual(tlb.l2.nsets, 256)
        keys = [('4k', 256 * k) for k in range(6)] + [('4k', 1 + k) for k in range(48)]
        for k in keys:
            tlb.access(k)
        res = [tlb.access(k) for k in keys]
        self.assertEqual(res, [2] * 6 + [1] * 48)

    def test_other_page_sizes(self):
        self.assertEqual(tlb_model.pmd_size(4096), 2 << 20)
        self.assertEqual(tlb_model.pmd_size(16384), 32 << 20)
        self.assertEqual(tlb_model.pmd_size(65536), 512 << 20)
        # 64 stubs 4 KiB apart are 16 pages of 16 KiB, one 32 MiB block.
        self.assertEqual(tlb_model.model_run(1, 64, BASE, 'p', ('a76',),
                                             page=16384)['translations'], 16)
        self.assertEqual(tlb_model.model_run(1, 64, BASE, 'H', ('a76',),
                                             page=16384)['translations'], 1)

    def test_arch_names(self):
        for name, arch in (('x86_64', 'x86_64'), ('aarch64', 'arm64'), ('arm64', 'arm64'),
                           ('qemu-system-aarch64', 'arm64'), ('qemu-system-x86_64', 'x86_64')):
            self.assertEqual(tlb_model.arch_name(name), arch, name)
        self.assertIsNone(tlb_model.arch_name('riscv64'))
        self.assertEqual(tlb_model.ARCH_GEOMETRIES, {'x86_64': ('skl', 'zen2'),
                                                     'arm64': ('a76',)})


class TestReductions(unittest.TestCase):
    def test_least_of_the_geometries(self):
        base = {'vals': {'cc1_trace_walks_pki_skl': 0.01, 'cc1_trace_walks_pki_zen2': 0.05}}
        patch = {'vals': {'cc1_trace_walks_pki_skl': 0.0005, 'cc1_trace_walks_pki_zen2': 0.001}}
        obj, _, missing = bench_report.reduction_metric('cc1_trace_walks_reduction', base, patch)
        self.assertFalse(missing)
        self.assertAlmostEqual(obj['value'], 0.95)	# skl's, zen2's is 0.98
        self.assertTrue(obj['target_met'])
        patch['vals']['cc1_trace_walks_pki_skl'] = 0.0011
        obj, _, _ = bench_report.reduction_metric('cc1_trace_walks_reduction', base, patch)
        self.assertFalse(obj['target_met'])
        del patch['vals']['cc1_trace_walks_pki_zen2']
        obj, _, missing = bench_report.reduction_metric('cc1_trace_walks_reduction', base, patch)
        self.assertTrue(missing)
        self.assertIsNone(obj['value'])

    def test_bound_is_the_patched_runs_bound_over_the_baselines_walks(self):
        base = {'vals': {'cc1_trace_walks_pki_skl': 0.01, 'cc1_trace_walks_pki_zen2': 0.05,
                         'cc1_trace_walks_bound_pki_skl': 0.0001}}
        patch = {'vals': {'cc1_trace_walks_bound_pki_skl': 0.001,
                          'cc1_trace_walks_bound_pki_zen2': 0.001}}
        obj, row, missing = bench_report.reduction_metric('cc1_trace_walks_reduction_bound',
                                                          base, patch)
        self.assertFalse(missing)
        self.assertAlmostEqual(obj['value'], 0.9)	# skl's; zen2's is 0.98
        self.assertIsNone(obj['target_met'])		# a bound, not a target
        self.assertEqual((obj['of'][0]['metric'], obj['of'][0]['baseline_metric']),
                         ('cc1_trace_walks_bound_pki_skl', 'cc1_trace_walks_pki_skl'))
        self.assertEqual(row[1].split(', ')[0],
                         'cc1_trace_walks_bound_pki_skl over cc1_trace_walks_pki_skl')
        self.assertEqual(row[-1], '-')
        # Published with its figure, not counted as a target.
        rows = bench_report.figure_rows([obj])
        self.assertEqual(rows[0][0], 'cc1_trace_walks_reduction_bound')
        text = bench_report.figures_text({'meta': {'date': 'd', 'commit': 'c', 'host': 'h',
                                                   'guest': 'g'}, 'metrics': [obj]})
        self.assertIn('(none: the most the reduction', ' '.join(text))
        self.assertNotIn('NOT met', ' '.join(text))


class TestTargets(unittest.TestCase):
    def test_reread_against_its_floor(self):
        met = bench_report.target_met
        runs = {'write_open_reread_s': 0.105, 'write_open_floor_s': 0.1}
        self.assertTrue(met('write_open_reread_s', 2.0, 0.105, None, {}, runs))
        runs['write_open_reread_s'] = 0.12
        self.assertFalse(met('write_open_reread_s', 2.0, 0.12, None, {}, runs))
        self.assertFalse(met('write_open_reread_s', 2.0, 0.1, None, {},
                             {'write_open_reread_s': 0.1}))

    def test_reported_only(self):
        self.assertIsNone(bench_report.target_met('shared_write_fault_us', 5, 50, None))
        # The ratios carry these two's targets.
        self.assertIsNone(bench_report.target_met('khugepaged_cpu_s', 1, 5, None))
        self.assertIsNone(bench_report.target_met('exec_storm_s', 1, 5, None))

    def test_prompt_targets(self):
        met = bench_report.target_met
        self.assertTrue(met('prompt_collapse_s', 120, 0.14, None))
        self.assertFalse(met('prompt_collapse_s', 120, 2.5, None))	# 48x
        self.assertFalse(met('prompt_collapse_s', 0.5, 0.3, None))	# < 50x
        self.assertTrue(met('madvise_call_us', 2.0, 2.4, None))
        self.assertFalse(met('madvise_call_us', 2.0, 2.41, None))
        for m in ('pie_prompt_collapse_s', 'prompt_collapse_flood_s'):
            self.assertTrue(met(m, 120, 1.0, None), m)
            self.assertFalse(met(m, 0.1, 1.01, None), m)

    def test_always_targets(self):
        met = bench_report.target_met
        self.assertTrue(met('always_text_mib_3s', 0, 16, None))
        self.assertFalse(met('always_text_mib_3s', 16, 14, None))
        self.assertTrue(met('always_busy_s', 60, 3, None))
        self.assertFalse(met('always_busy_s', 60, 3.2, None))


def ratio_run(bv, pv):
    """The ratio objects and rows of made-up BENCH values of two runs."""
    def run(v):
        return {'vals': v, 'units': {k: 's' for k in v}}
    return bench_report.derived_metrics(bench_report.RATIOS, bench_report.ratio_metric,
                                        run(bv), run(pv))


class TestRatios(unittest.TestCase):
    def test_patched_over_baseline(self):
        objs, rows, missing = ratio_run({'khugepaged_cpu_s': 2.0, 'exec_storm_s': 40},
                                        {'khugepaged_cpu_s': 2.2, 'exec_storm_s': 42.4})
        by = {o['metric']: o for o in objs}
        self.assertEqual(missing, 0)
        o = by['khugepaged_cpu_ratio']
        self.assertAlmostEqual(o['value'], 1.1)
        self.assertTrue(o['target_met'])
        self.assertEqual(o['of'], {'metric': 'khugepaged_cpu_s', 'unit': 's',
                                   'baseline': 2.0, 'patched': 2.2})
        o = by['exec_storm_ratio']
        self.assertAlmostEqual(o['value'], 1.06)
        self.assertFalse(o['target_met'])
        self.assertIn(('exec_storm_ratio', 'exec_storm_s', '40', '42.4', 's', '1.06'),
                      [r[:6] for r in rows])

    def test_faster_meets(self):
        objs, _, _ = ratio_run({'khugepaged_cpu_s': 2.0, 'exec_storm_s': 40},
                               {'khugepaged_cpu_s': 0.5, 'exec_storm_s': 30})
        self.assertTrue(all(o['target_met'] for o in objs))

    def test_missing(self):
        # A run without the metric, or a baseline of 0: no ratio.
        objs, _, missing = ratio_run({'khugepaged_cpu_s': 0.0},
                                     {'khugepaged_cpu_s': 0.3, 'exec_storm_s': 40})
        self.assertEqual(missing, 2)
        self.assertTrue(all(o['value'] is None and o['target_met'] is None for o in objs))


class TestReport(unittest.TestCase):
    def test_tcg(self):
        with tempfile.TemporaryDirectory() as tmp:
            rc, out, js, md, svg = report(tmp, 'tcg')
            self.assertEqual(rc, 0, out)
            self.assertTrue(js['meta']['complete'])
            self.assertIn('bench-publish: ' + svg, out)
            o = metric(js, 'itlb_wall_ns_per_call_4M')
            self.assertFalse(o['meaningful'])
            self.assertNotIn('Measured time per call', md)
            self.assertIn('TCG', md)
            self.assertTrue(os.path.exists(svg))
            o = metric(js, 'mem_4proc_pss_kb')
            self.assertEqual((o['patched'], o['copy'], o['target_met']), (20000, 80000, True))
            self.assertTrue(metric(js, 'uprobe_fires')['target_met'])

    def test_kvm(self):
        with tempfile.TemporaryDirectory() as tmp:
            rc, out, js, md, _ = report(tmp, 'kvm')
            self.assertEqual(rc, 0, out)
            self.assertTrue(metric(js, 'itlb_wall_ns_per_call_4M')['meaningful'])
            self.assertIn('Measured time per call (KVM)', md)
            self.assertIn('| 3.00 ', md)	# 30 ns / 10 ns

    def test_ratios_in_report(self):
        with tempfile.TemporaryDirectory() as tmp:
            rc, out, js, md, _ = report(tmp, 'tcg', bvals={'khugepaged_cpu_s': 1.6},
                                        pvals={'khugepaged_cpu_s': 2.0})
            self.assertEqual(rc, 0, out)
            o = metric(js, 'khugepaged_cpu_ratio')
            self.assertEqual((o['value'], o['target_met']), (1.25, False))
            self.assertTrue(metric(js, 'exec_storm_ratio')['target_met'])
            self.assertIn('| khugepaged_cpu_ratio | khugepaged_cpu_s | 1.6 ', md)
            self.assertIn('0 missing', out)

    def test_ratio_source_missing(self):
        with tempfile.TemporaryDirectory() as tmp:
            rc, out, js, _, _ = report(tmp, 'tcg', pdrop=('exec_storm_s',))
            self.assertEqual(rc, 1)
            self.assertIn('2 missing', out)	# exec_storm_s and its ratio
            self.assertIsNone(metric(js, 'exec_storm_ratio')['value'])
            self.assertIsNone(metric(js, 'exec_storm_s')['target_met'])

    def test_refused_run_is_missing(self):
        with tempfile.TemporaryDirectory() as tmp:
            rc, out, js, _, svg = report(tmp, 'tcg', skip=('copy', 16 << 20))
            self.assertEqual(rc, 1)
            self.assertIn('6 missing', out)
            self.assertIsNone(metric(js, 'itlb_skl_l2_misses_pkc_16M')['copy'])
            self.assertFalse(js['meta']['complete'])
            self.assertIn('is not complete (6 metrics missing', out)
            self.assertFalse(os.path.exists(svg))

    def test_publish_without_a_run(self):
        with tempfile.TemporaryDirectory() as tmp:
            err = io.StringIO()
            with contextlib.redirect_stderr(err):
                rc = bench_report.publish(tmp, os.path.join(tmp, 'doc.svg'))
            self.assertEqual(rc, 1)
            self.assertIn('run make bench first', err.getvalue())


class TestPublishFigures(unittest.TestCase):
    """make publish writes a complete run's figures between the markers of
    README.rst and the cover letter, and nothing else of them."""

    def test_figures_between_the_markers(self):
        with tempfile.TemporaryDirectory() as tmp:
            b, p, out = (os.path.join(tmp, x) for x in ('b', 'p', 'out'))
            make_run(b, 'tcg', vals={'prompt_collapse_s': 120})
            make_run(p, 'tcg', vals={'cc1_trace_walks_pki_skl': 0.0005,
                                     'cc1_trace_walks_pki_zen2': 0.001})
            readme, cover = os.path.join(tmp, 'README.rst'), os.path.join(tmp, 'cover')
            with open(readme, 'w') as f:
                f.write(f'Title\n\n{bench_report.RST_BEGIN}\nold figures\n'
                        f'{bench_report.RST_END}\n\nAfter.\n')
            with open(cover, 'w') as f:
                f.write(f'Subject\n{bench_report.TXT_BEGIN}\nold\n{bench_report.TXT_END}\nend\n')
            with contextlib.redirect_stdout(io.StringIO()):
                bench_report.report(b, p, out)
                rc = bench_report.publish(out, os.path.join(tmp, 'doc.svg'), readme, cover)
            self.assertEqual(rc, 0)
            with open(readme) as f:
                text = f.read()
            self.assertTrue(text.startswith('Title\n\n' + bench_report.RST_BEGIN))
            self.assertTrue(text.endswith(bench_report.RST_END + '\n\nAfter.\n'))
            self.assertNotIn('old figures', text)
            self.assertRegex(text, r'prompt_collapse_s +120 +0\.3 +patched <= 1 s')
            self.assertRegex(text, r'cc1_trace_walks_reduction +0\.95 ')
            self.assertIn('commit ``', text)
            with open(cover) as f:
                text = f.read()
            self.assertIn(' - prompt_collapse_s: 120 -> 0.3 (target patched <= 1 s and >= 50x\n'
                          '   faster: met)', text)
            self.assertFalse([line for line in text.split('\n') if len(line) > 75])
            self.assertTrue(text.endswith(bench_report.TXT_END + '\nend\n'))

    def test_no_markers_no_publish(self):
        with tempfile.TemporaryDirectory() as tmp:
            b, p, out = (os.path.join(tmp, x) for x in ('b', 'p', 'out'))
            make_run(b, 'tcg')
            make_run(p, 'tcg')
            readme = os.path.join(tmp, 'README.rst')
            with open(readme, 'w') as f:
                f.write('no markers\n')
            err = io.StringIO()
            with contextlib.redirect_stdout(io.StringIO()), contextlib.redirect_stderr(err):
                bench_report.report(b, p, out)
                rc = bench_report.publish(out, os.path.join(tmp, 'doc.svg'), readme)
            self.assertEqual(rc, 1)
            self.assertIn('has no', err.getvalue())
            self.assertFalse(os.path.exists(os.path.join(tmp, 'doc.svg')))


def itlb_names(js):
    """The iTLB metrics' names, in the report's order."""
    return [o['metric'] for o in js['metrics'] if o['metric'].startswith('itlb_')]


class TestArch(unittest.TestCase):
    """The cores a run is modelled with follow its guest's architecture."""

    def setUp(self):
        # The cc1 trace is of this host's code: an x86-64 host's, as make
        # bench's hosts are.
        patcher = mock.patch.object(bench_report, 'host_arch', return_value='x86_64')
        patcher.start()
        self.addCleanup(patcher.stop)

    def test_x86_64(self):
        with tempfile.TemporaryDirectory() as tmp:
            rc, out, js, md, _ = report(tmp, 'tcg')
            self.assertEqual(rc, 0, out)
        spans = ('64K', '4M', '16M')
        self.assertEqual(itlb_names(js), [
            f'itlb_{q}_{s}' for q in ('translations', 'skl_l1_misses_pkc', 'skl_l2_misses_pkc',
                                      'zen2_l1_misses_pkc', 'zen2_l2_misses_pkc',
                                      'wall_ns_per_call') for s in spans])
        names = [o['metric'] for o in js['metrics']]
        self.assertEqual([m for m in names if m.startswith('cc1_trace')],
                         sorted(X86_TRACE) + ['cc1_trace_walks_reduction',
                                              'cc1_trace_walks_reduction_bound'])
        # The bound: every eligible block huge, over the baseline's walks.
        self.assertAlmostEqual(metric(js, 'cc1_trace_walks_reduction_bound')['value'], 0.9)
        self.assertIsNone(metric(js, 'cc1_trace_walks_reduction_bound')['target_met'])
        self.assertFalse([m for m in names if 'a76' in m])
        self.assertNotIn('Cortex', md)
        self.assertEqual(list(js['meta']['tlb_model']), ['skl', 'zen2'])
        self.assertEqual((js['meta']['arch'], js['meta']['page_size']), ('x86_64', 4096))
        self.assertIn('QEMU TCG, see', js['meta']['guest'])
        self.assertEqual(metric(js, 'itlb_skl_l2_misses_pkc_16M')['small_pages'], 1000)

    def test_arm64(self):
        with tempfile.TemporaryDirectory() as tmp:
            rc, out, js, md, _ = report(tmp, 'tcg', qemu=arm64_qemu(), drop=X86_TRACE)
            self.assertEqual(rc, 0, out)
        spans = ('64K', '4M', '16M')
        self.assertEqual(itlb_names(js), [
            f'itlb_{q}_{s}' for q in ('translations', 'a76_l1_misses_pkc', 'a76_l2_misses_pkc',
                                      'wall_ns_per_call') for s in spans])
        names = [o['metric'] for o in js['metrics']]
        self.assertFalse([m for m in names if 'skl' in m or 'zen2' in m])
        # The trace is of this x86-64 host's cc1: not replayed, not expected.
        self.assertFalse([m for m in names if m.startswith('cc1_trace')])
        self.assertIn('not replayed over arm64 guests', md)
        self.assertEqual(list(js['meta']['tlb_model']), ['a76'])
        self.assertEqual((js['meta']['arch'], js['meta']['page_size']), ('arm64', 4096))
        self.assertIn('QEMU TCG arm64, 4 KiB pages', js['meta']['guest'])
        self.assertIn('Modelled Arm Cortex-A76 iTLB (L1 48 entries fully associative, all '
                      'page sizes, L2 1280 entries 5-way, 4K and 2M, LRU)', md)
        # 16 pages fit the L1; 1024 pages thrash it, 4 a set of the L2's 5
        # ways; 4096 pages, 16 a set, thrash the L2; 8 blocks fit.
        self.assertEqual([metric(js, f'itlb_a76_{q}_pkc_{s}')['small_pages']
                          for q in ('l1_misses', 'l2_misses') for s in spans],
                         [0, 1000, 1000, 0, 0, 1000])
        self.assertEqual(metric(js, 'itlb_a76_l1_misses_pkc_16M')['patched'], 0)
        rst = '\n'.join(bench_report.figures_rst(js))
        self.assertIn('a76 L1 4K', rst)
        self.assertNotIn('skl', rst)

    def test_arm64_16k(self):
        with tempfile.TemporaryDirectory() as tmp:
            rc, out, js, md, _ = report(tmp, 'tcg', qemu=arm64_qemu('-16k'), drop=X86_TRACE,
                                        page=16384)
            self.assertEqual(rc, 0, out)
        self.assertEqual(js['meta']['page_size'], 16384)
        # 16 MiB: 1024 pages of 16 KiB, or one 32 MiB block.
        o = metric(js, 'itlb_translations_16M')
        self.assertEqual((o['small_pages'], o['patched']), (1024, 1))
        self.assertIn('L2 1280 entries 5-way, 16K and 32M, LRU', md)
        self.assertIn('small_pages: 16 KiB', o['description'])

    def test_guest_line(self):
        # arch= (uname -m) and pagesize= of the guest line win over qemu.cmd.
        with tempfile.TemporaryDirectory() as tmp:
            d = os.path.join(tmp, 'r')
            make_run(d, 'tcg', guest='# guest: cpus=2 preempt=full swap=on arch=aarch64 '
                     'pagesize=65536')
            r = bench_report.read_run(d)
            self.assertEqual((r['arch'], r['page']), ('arm64', 65536))
            d = os.path.join(tmp, 's')
            make_run(d, 'tcg', qemu=arm64_qemu('-16k'),
                     guest='# guest: cpus=2 preempt=full swap=on')
            r = bench_report.read_run(d)
            self.assertEqual((r['arch'], r['page']), ('arm64', 16384))
            d = os.path.join(tmp, 't')
            make_run(d, 'tcg', guest='# guest: cpus=2 preempt=full swap=on')
            r = bench_report.read_run(d)
            self.assertEqual((r['arch'], r['page']), ('x86_64', 4096))

    def test_runs_of_two_architectures(self):
        with tempfile.TemporaryDirectory() as tmp:
            b, p, out = (os.path.join(tmp, x) for x in ('b', 'p', 'out'))
            make_run(b, 'tcg')
            make_run(p, 'tcg', qemu=arm64_qemu(), drop=X86_TRACE)
            with contextlib.redirect_stdout(io.StringIO()):
                rc = bench_report.report(b, p, out)
            with open(os.path.join(out, 'bench.json')) as f:
                js = json.load(f)
        self.assertEqual(rc, 1)
        self.assertIn('the baseline guest ran x86_64, 4 KiB pages, the patched one arm64, '
                      '4 KiB pages', js['meta']['failures'])

    def test_trace_of_the_guest_architecture(self):
        # A trace of arm64 code is replayed over arm64 guests, in the A76.
        with tempfile.TemporaryDirectory() as tmp:
            with open(os.path.join(tmp, 'arch.txt'), 'w') as f:
                f.write('aarch64\n')
            run = {'arch': 'arm64', 'page': 4096}
            model, failures, notes = bench_report.run_model(run, run, tmp)
        self.assertEqual((model['geometries'], model['trace'], failures, notes),
                         (('a76',), ('a76',), [], []))
        want = bench_report.expected_targets(model)
        self.assertIn('cc1_trace_walks_pki_a76', want)
        self.assertNotIn('cc1_trace_walks_pki_skl', want)
        self.assertEqual(bench_report.reductions(model['trace'])['cc1_trace_walks_reduction'][0],
                         ('cc1_trace_walks_pki_a76',))
