/* SPDX-License-Identifier: GPL-2.0 */
/*
 * Helpers of the benchmarks (bench/), which report "# error: ..." and exit
 * 1 rather than KTAP results.
 */
#ifndef __ROTHP_UTIL_BENCH_H
#define __ROTHP_UTIL_BENCH_H

#include <stddef.h>

/* Print "# error: ..." and exit 1, running the atexit handlers. */
void rothp_bench_fail(const char *fmt, ...) __attribute__((format(printf, 1, 2), noreturn));
/* Output, argument, root, THP checked and its settings saved: the directory. */
const char *rothp_bench_start(int argc, char **argv);
/* A generated C file for cc1 and clang, a scratch file at path, or fail. */
void rothp_bench_cc1_source(const char *path, int nr_funcs);
/* What rothp_bench_fresh_cache() did to free memory. */
struct rothp_scrub {
	double secs;		/* its time */
	long thps;		/* huge pages faulted in (thp_fault_alloc) */
	long fallback;		/* faults that fell back to small pages */
	long swapped;		/* pages swapped out meanwhile (pswpout) */
};

/*
 * Free memory written after each drop of the page cache: more than the
 * huge pages one program's collapsed text can free (bench_real's clang,
 * 88 blocks; bench_itlb's textprog_big, 128), with room for the small
 * text pages a collapse frees.
 */
#define ROTHP_BENCH_SCRUB_MIB	384

/* Page cache dropped, free memory scrubbed, path (unless NULL) read in. */
void rothp_bench_fresh_cache(const char *path, struct rothp_scrub *scrub);
/* rothp_thp_set_str(), or fail: the benchmarks' rothp_thp_set_checked(). */
void rothp_bench_thp_set(const char *knob, const char *val);

#endif /* __ROTHP_UTIL_BENCH_H */
