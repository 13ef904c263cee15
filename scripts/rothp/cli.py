# SPDX-License-Identifier: GPL-2.0
"""cli: the subcommands of scripts/rothp-host.

    rothp-host parse RUN_DIR OUT_KTAP [MORE_RUN_DIR...]
    rothp-host gate record RUN_DIR [OUT]
    rothp-host gate show [FILE]
    rothp-host bench-report BASELINE_RUN_DIR PATCHED_RUN_DIR OUT_DIR [TRACE_DIR ITRACE]
    rothp-host cc1-trace OUT_DIR SRC_TREE ITRACE PRELOAD
    rothp-host bench-publish OUT_DIR DOC_SVG [README [COVER]]
    rothp-host matrix-report TOUCHED LOG_DIR RESULTS_DIR CONFIG...
    rothp-host coverage OBJ GCDA_DIR SRC BASE..SERIES GAPS OUT_DIR
    rothp-host selftest [--ktap] [-v] [TEST...]

Each subcommand is a function here that takes its parsed arguments and
returns the exit status; the work is done by the modules it names.
"""
import argparse
import os
import sys

from . import bench_report, coverage, gate, itrace, ktap, matrix_report, selftest


def parse(args):
    """The cases of the run dirs, gated, to OUT_KTAP, its .summary and stdout."""
    lines, cases = [], []
    for run in [args.run_dir] + args.more:
        k, c = ktap.run_cases(run)
        lines += k
        cases += c
    # The kernel's own mm selftests against their baseline run.
    cases = gate.apply(cases, guest=ktap.guest_line(lines))
    with open(args.out_ktap, 'w') as f:
        f.writelines(lines)
    summary = ktap.summary(cases)
    with open(os.path.splitext(args.out_ktap)[0] + '.summary', 'w') as f:
        f.write('\n'.join(summary) + '\n')
    print('\n'.join(summary))
    return ktap.exit_status(cases)


def gate_record(args):
    """Record a baseline run's upstream cases."""
    try:
        n, others, out = gate.record(args.run_dir, args.out)
    except gate.NotRecorded as e:
        sys.exit(f'not recording {args.run_dir}: {e}')
    print(f'{n} upstream cases recorded in {os.path.relpath(out)}')
    for name, _, why in others:
        print(f'warning: {name} failed in that run: {why}', file=sys.stderr)
    return 0


def gate_show(args):
    """Print a recorded baseline."""
    for line in gate.show(args.file):
        print(line)
    return 0


def bench(args):
    """Compare two bench runs."""
    if (args.trace_dir is None) != (args.itrace is None):
        print('bench-report: TRACE_DIR and ITRACE go together', file=sys.stderr)
        return 2
    return bench_report.report(args.baseline_run_dir, args.patched_run_dir, args.out_dir,
                               args.trace_dir, args.itrace)


def cc1_trace(args):
    """Record cc1's instruction trace."""
    try:
        counts = itrace.record(args.out_dir, args.src_tree, args.itrace, args.preload,
                               cc=os.environ.get('CC') or 'gcc')
    except itrace.TraceError as e:
        print(f'cc1-trace: {e}', file=sys.stderr)
        return 1
    print(f'cc1-trace: {counts["instrs"]} instructions, {counts["sbs"]} basic blocks, '
          f'{counts["records"]} page changes in {args.out_dir}')
    return 0


def bench_publish(args):
    """Publish a complete bench run's iTLB plot."""
    return bench_report.publish(args.out_dir, args.doc_svg, args.readme, args.cover)


def matrix(args):
    """Report the build matrix."""
    return matrix_report.report(args.touched, args.log_dir, args.results_dir, args.configs)


def cover(args):
    """Report the coverage of the series' added lines."""
    return coverage.report(args.obj, args.gcda_dir, args.src, args.range, args.gaps, args.out_dir)


def test(args):
    """Run the unit tests."""
    return selftest.run(args.tests, ktap=args.ktap, verbose=args.verbose)


def command(sub, name, func, module, **kw):
    """A subcommand whose help is the first line of its module's docstring."""
    doc = module.__doc__
    p = sub.add_parser(name, help=doc.split('\n', 1)[0].split(': ', 1)[-1], description=doc,
                       formatter_class=argparse.RawDescriptionHelpFormatter, **kw)
    p.set_defaults(func=func)
    return p


def gate_commands(sub):
    """gate record and gate show."""
    g = command(sub, 'gate', None, gate).add_subparsers(dest='gate_command', required=True,
                                                         metavar='record|show')
    p = g.add_parser('record', help='record the baseline from a baseline run')
    p.add_argument('run_dir', metavar='RUN_DIR')
    p.add_argument('out', metavar='OUT', nargs='?', default=None,
                   help="default: the file of the run's architecture and page size")
    p.set_defaults(func=gate_record)
    p = g.add_parser('show', help='print the recorded baseline')
    p.add_argument('file', metavar='FILE', nargs='?', default=gate.DEFAULT)
    p.set_defaults(func=gate_show)


def parser():
    """The argument parser of every subcommand."""
    top = argparse.ArgumentParser(prog='rothp-host', description=__doc__,
                                  formatter_class=argparse.RawDescriptionHelpFormatter)
    sub = top.add_subparsers(dest='command', required=True, metavar='COMMAND')
    p = command(sub, 'parse', parse, ktap)
    p.add_argument('run_dir', metavar='RUN_DIR')
    p.add_argument('out_ktap', metavar='OUT_KTAP')
    p.add_argument('more', metavar='MORE_RUN_DIR', nargs='*', default=[])
    gate_commands(sub)
    p = command(sub, 'bench-report', bench, bench_report)
    for a in ('baseline_run_dir', 'patched_run_dir', 'out_dir'):
        p.add_argument(a, metavar=a.upper())
    p.add_argument('trace_dir', metavar='TRACE_DIR', nargs='?', default=None)
    p.add_argument('itrace', metavar='ITRACE', nargs='?', default=None)
    p = command(sub, 'cc1-trace', cc1_trace, itrace)
    for a in ('out_dir', 'src_tree', 'itrace', 'preload'):
        p.add_argument(a, metavar=a.upper())
    p = command(sub, 'bench-publish', bench_publish, bench_report)
    p.add_argument('out_dir', metavar='OUT_DIR')
    p.add_argument('doc_svg', metavar='DOC_SVG')
    p.add_argument('readme', metavar='README', nargs='?', default=None)
    p.add_argument('cover', metavar='COVER', nargs='?', default=None)
    p = command(sub, 'matrix-report', matrix, matrix_report)
    p.add_argument('touched', metavar='TOUCHED')
    p.add_argument('log_dir', metavar='LOG_DIR')
    p.add_argument('results_dir', metavar='RESULTS_DIR')
    p.add_argument('configs', metavar='CONFIG', nargs='+')
    p = command(sub, 'coverage', cover, coverage)
    for a, m in (('obj', 'OBJ'), ('gcda_dir', 'GCDA_DIR'), ('src', 'SRC'),
                 ('range', 'BASE..SERIES'), ('gaps', 'GAPS'), ('out_dir', 'OUT_DIR')):
        p.add_argument(a, metavar=m)
    p = command(sub, 'selftest', test, selftest)
    p.add_argument('--ktap', action='store_true', help='report as KTAP on stdout')
    p.add_argument('-v', '--verbose', action='store_true', help='name every test')
    p.add_argument('tests', metavar='TEST', nargs='*',
                   help='a test module, class or method below rothp.tests (default: all)')
    return top


def main(argv=None):
    """Run the subcommand argv names; its exit status."""
    args = parser().parse_args(argv)
    return args.func(args)
