/* SPDX-License-Identifier: GPL-2.0 */
/*
 * The core of the rothp helper library: sizes, time and polling, hashes,
 * kernel facts, small numeric helpers and the start of every test binary.
 */
#ifndef __ROTHP_UTIL_CORE_H
#define __ROTHP_UTIL_CORE_H

#include <limits.h>
#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>
#include <stdio.h>
#include <sys/types.h>

#include "compat.h"	/* MADV_COLLAPSE and the __NR_* numbers, hugetext's too */

#ifndef MADV_HUGEPAGE
#define MADV_HUGEPAGE		14
#endif
#ifndef MADV_PAGEOUT
#define MADV_PAGEOUT		21
#endif

/*
 * The running kernel's page size and PMD size (hpage_pmd_size), each read
 * once: never constants, for arm64 runs with 4 KiB, 16 KiB or 64 KiB pages,
 * whose PMDs map 2 MiB, 32 MiB or 512 MiB (x86-64: 4 KiB and 2 MiB). The
 * upper-case names stay for their many users, but neither is a constant
 * expression: no array sizes, static initializers or case labels.
 * rothp_pmd_size() ends the program failing, saying why, on a kernel
 * without THP; rothp_test_init() and rothp_bench_start() check for THP
 * (rothp_hpage_pmd_size()) before anything needs it.
 */
unsigned long rothp_page_size(void);
unsigned long rothp_pmd_size(void);
#define ROTHP_PAGE_SIZE		rothp_page_size()
#define ROTHP_PMD_SIZE		rothp_pmd_size()
#define ROTHP_ALIGN_UP(x, a)	(((x) + (a) - 1) & ~((a) - 1))
#define ROTHP_ALIGN_DOWN(x, a)	((x) & ~((a) - 1))

#define ROTHP_THP_SYSFS		"/sys/kernel/mm/transparent_hugepage/"
/* The read and write size of the helpers that go through whole files. */
#define ROTHP_IO_CHUNK		(1UL << 20)

/*
 * /proc/vmstat counters of the series: THPs split, and THPs dropped, when
 * their file is opened for write. Baseline 6.12 has neither.
 */
#define ROTHP_VM_SPLIT_ON_WRITE	"thp_file_split_on_write"
#define ROTHP_VM_DROP_ON_WRITE	"thp_file_drop_on_write"
#define ROTHP_NO_SPLIT_ON_WRITE	"kernel lacks " ROTHP_VM_SPLIT_ON_WRITE " (baseline 6.12)"
/*
 * Why a race of collapse against a writer that truncates (a hole punch, an
 * open for write of a file with THPs) does not run on such a kernel:
 * 6.12.118's collapse_file() waits for invalidate_lock with folios locked,
 * and that writer holds it while it waits for those folios.
 */
#define ROTHP_DEADLOCK_612	ROTHP_NO_SPLIT_ON_WRITE ", whose collapse_file() " \
	"can deadlock against this writer (patches 2 and 3 fix it)"

/* Time and polling. */
double rothp_now(void);
long rothp_wait_until(bool (*pred)(void *arg), void *arg, long timeout_ms, long interval_ms);

/* Checksums: 64-bit FNV-1a, which textprog and the tests share. */
uint64_t rothp_hash_init(void);
uint64_t rothp_hash_update(uint64_t hash, const void *buf, size_t len);
uint64_t rothp_hash(const void *buf, size_t len);
int rothp_file_hash(int fd, off_t offset, size_t len, uint64_t *hash);

/* Kernel facts. */
unsigned long rothp_hpage_pmd_size(void);
int rothp_kconfig(const char *name, char *src, size_t srclen);
const char *rothp_fs_name(const char *path, int *large_folios);
int rothp_vmstat(const char *name, long *val);
int rothp_meminfo(const char *name, long *kb);

/* Numbers: sorting, medians, pseudo-random numbers (splitmix64). */
void rothp_sort(double *v, int n);
double rothp_median(double *v, int n);
uint64_t rothp_rand64(uint64_t *state);

static inline size_t rothp_min_size(size_t a, size_t b)
{
	return a < b ? a : b;
}

/*
 * Race tests: pin the calling process to online CPU number index modulo
 * the CPUs it may run on, so workers started with 0, 1, 2... run on
 * different CPUs, as they would on a real machine. Returns the CPU, or -1
 * (errno set) when the affinity cannot be read or set.
 */
int rothp_spread(int index);
int rothp_nr_cpus(void);

/*
 * Common start of every test binary: KTAP header, argument and environment
 * checks (skipping with a reason), drop_caches. Returns the directory; the
 * caller sets its own plan, as kselftest.h keeps its counters per file.
 * rothp_test_init() also skips when textprog's text holds no whole block
 * of this kernel's PMD size (arm64's 16 and 64 KiB pages): the tests that
 * collapse it. rothp_test_init_any_pmd() only says so, for the tests of
 * where the ELF loader puts text, which apply with any PMD size.
 */
const char *rothp_test_init(int argc, char **argv, char *prog, size_t len);
const char *rothp_test_init_any_pmd(int argc, char **argv, char *prog, size_t len);

/*
 * Results. These are macros, not functions here, because kselftest.h keeps
 * its counters in each file that includes it: they must count in the test's.
 * The same goes for every helper that reports a result or exits failing
 * after results were reported: a macro, expanded in the test.
 */

/* Skipped, naming the case and the reason skip, unless skip is NULL. */
#define rothp_result(skip, pass, fmt, ...) do {				\
	const char *__skip = (skip);					\
									\
	if (__skip)							\
		ksft_test_result_skip(fmt ": %s\n", ##__VA_ARGS__, __skip);	\
	else								\
		ksft_test_result(pass, fmt "\n", ##__VA_ARGS__);	\
} while (0)

/*
 * Case tables. A test names its results in tables, one for each of its
 * parts (cases), in the order the part reports them, and sets its plan to
 * the sum of the tables' sizes, rothp_cases_plan(): the plan then counts
 * what the code can report, not what someone counted by hand, and a test
 * that reports less than its tables still fails. A result's name is its
 * table entry, a printf format, after "<case name>: " when the case has a
 * name; rothp_report() fills in the format's arguments.
 */
struct rothp_case {
	const char *name;		/* the prefix of its results, or NULL */
	const char *const *results;	/* printf formats, in reporting order */
	int nr;
};

#define ROTHP_CASE(n, tbl)	{ (n), (tbl), ARRAY_SIZE(tbl) }
#define ROTHP_RESULT_MAX	512

int rothp_cases_plan(const struct rothp_case *cases, size_t n);
/*
 * The name of result i of c, its format filled in with the arguments, in
 * buf; NULL when i is not in c's table or the name does not fit.
 */
const char *rothp_case_result(char *buf, size_t len, const struct rothp_case *c, int i, ...);

/*
 * rothp_case_result() into buf, ROTHP_RESULT_MAX bytes, for a test that
 * words a result further: an index outside the case's table, or a name
 * too long, ends the test failing.
 */
#define rothp_case_result_checked(buf, c, i, ...) do {			\
	const struct rothp_case *__nc = (c);				\
	int __ni = (i);							\
									\
	if (!rothp_case_result((buf), ROTHP_RESULT_MAX, __nc, __ni, ##__VA_ARGS__))	\
		ksft_exit_fail_msg("%s: result %d: not in its table of %d, or too long\n", \
				   __nc->name ? __nc->name : "a case", __ni, __nc->nr);	\
} while (0)

/*
 * Report result i of case c: skipped with the reason skip unless skip is
 * NULL (pass is not evaluated then), as rothp_result(). An index outside
 * the case's table ends the test failing.
 */
#define rothp_report(c, i, skip, pass, ...) do {			\
	const struct rothp_case *__rc = (c);				\
	const char *__rskip = (skip);					\
	char __rname[ROTHP_RESULT_MAX];					\
	int __ri = (i);							\
	bool __rpass = !__rskip && (pass);				\
									\
	rothp_case_result_checked(__rname, __rc, __ri, ##__VA_ARGS__);	\
	rothp_result(__rskip, __rpass, "%s", __rname);			\
} while (0)

#endif /* __ROTHP_UTIL_CORE_H */
