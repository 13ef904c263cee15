# SPDX-License-Identifier: GPL-2.0
"""rothp: the harness's Python, which runs on the host.

One entry point, scripts/rothp-host, runs its subcommands (cli.py). The
modules, each usable on its own:

    ktap          the cases of a run directory: its KTAP and the splat scan
    gate          the upstream gate: the baseline of the kernel's own mm
                  selftests, recorded and applied to a run's cases
    bench_report  the comparison of two bench runs (tlb_model, svgplot)
    tlb_model     the iTLB model of documented x86 cores
    svgplot       the report's SVG charts
    matrix_report the report of the build matrix
    coverage      the share of the series' added lines the tests ran (gcov)
    selftest      the unit tests (tests/), with a KTAP report

The dependencies go one way: gate uses ktap; ktap uses nothing of the
package; cli composes them. Standard library only.
"""
