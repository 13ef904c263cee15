# SPDX-License-Identifier: GPL-2.0
"""Tests of bench_report and tlb_model, on made-up run directories (these
are fixtures, not results): the TCG path, the KVM path (qemu.cmd saying
-accel kvm: measured ns per call shown with the 4K/file THP ratio), a
refused iTLB run reported missing, the targets, the ratios of one
metric's two values, and the model itself. bench.sh runs them before the
report."""
import contextlib
import io
import json
import os
import tempfile
import unittest

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
    'cc1_trace_walks_pki_skl': 0.01, 'cc1_trace_walks_pki_zen2': 0.05}
for _m in ('always', 'run'):
    for _p in ('cc1', 'clang'):
        SCALARS[f'real_text_huge_share_{_m}_{_p}'] = 0.97
        SCALARS[f'real_text_first_share_{_m}_{_p}'] = 0.9
COPY = {'huge_text_setup_big_ms': 200, 'huge_text_setup_first_ms': 20,
        'huge_text_setup_next_ms': 20, 'mem_4proc_pss_kb': 80000, 'mem_4proc_rss_kb': 80000,
        'mem_4proc_anon_huge_kb': 65536, 'mem_4proc_file_pmd_kb': 0,
        'mem_file_cache_kb': 19000, 'text_maps_names_file': 0, 'uprobe_fires': 0}


def itlb_line(mode, span, seed, ns):
    pages = span // 4096
    nblk = max(1, span >> 21)
    nxt = tlb_model.cycle_perm(seed, pages)
    return (f'ITLB run {mode} {span} {seed} {pages} 1000 {ns:.3f} {ns:.3f} '
            f'{tlb_model.perm_hash(nxt):016x} {BASE:#x} {("p" if mode == "4k" else "H") * nblk}')


def make_run(d, accel, skip=None, ns4k=30.0, nshuge=10.0, vals=None, drop=()):
    """A run directory d: the iTLB runs but skip, SCALARS updated with vals
    but for the metrics in drop, and COPY."""
    os.makedirs(d)
    with open(os.path.join(d, 'qemu.cmd'), 'w') as f:
        f.write(f'qemu-system-x86_64 -accel {accel} -cpu max -smp 2\n')
    lines = ['# rothp-runner: bench start bench_itlb.ext4',
             'ITLB accel ' + ('KVMKVMKVM___' if accel == 'kvm' else 'TCGTCGTCGTCG')]
    for mode in ('4k', 'file', 'copy'):
        for n, span in enumerate(SPANS):
            if (mode, span) != skip:
                lines.append(itlb_line(mode, span, 1000 + n, ns4k if mode == '4k' else nshuge))
    scalars = dict(SCALARS, **(vals or {}))
    lines += [f'BENCH {k} {v} x' for k, v in scalars.items() if k not in drop]
    lines += [f'BENCH {k}@copy {v} x' for k, v in COPY.items()]
    lines += ['# rothp-runner: bench exit bench_itlb.ext4 0', '# rothp-runner: done']
    with open(os.path.join(d, 'ktap.log'), 'w') as f:
        f.write('\n'.join(lines) + '\n')


def report(tmp, accel, skip=None, bvals=None, pvals=None, pdrop=()):
    b, p, out = (os.path.join(tmp, x) for x in ('b', 'p', 'out'))
    make_run(b, accel, vals=bvals)
    make_run(p, accel, skip, vals=pvals, drop=pdrop)
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
