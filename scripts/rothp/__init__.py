# SPDX-License-Identifier: GPL-2.0
"""rothp: the harness's Python, which runs on the host.

One entry point, scripts/rothp-host, runs the subcommands of cli. The
modules, each importable on its own:

    cli           the subcommands of rothp-host, each one call into a module
    contract      what the host and the guest runner (guest/init) agree on:
                  markers, modes, options, paths (scripts/contract.sh is
                  its copy for the shell scripts)
    ktap          the cases of a run directory: its KTAP and the splat scan
    gate          the upstream gate: the baseline of the kernel's own mm
                  selftests, recorded and applied to a run's cases
    bench_report  the comparison of two bench runs (tlb_model, svgplot)
    tlb_model     the iTLB model of documented x86 cores
    svgplot       the report's SVG charts
    matrix_report the report of the build matrix
    coverage      the share of the series' added lines the tests ran (gcov)
    selftest      the unit tests (tests/), with a KTAP report

The dependencies go one way: contract uses nothing of the package; ktap
uses contract; gate uses ktap and contract; bench_report uses contract,
tlb_model and svgplot; cli composes them. Standard library only.
"""
