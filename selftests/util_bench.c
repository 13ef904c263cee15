// SPDX-License-Identifier: GPL-2.0
/*
 * Helpers of the benchmarks: failing, the page cache read afresh, free
 * memory scrubbed, THP knobs.
 */
#include <errno.h>
#include <limits.h>
#include <stdarg.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>
#include <sys/mman.h>

#include "util_bench.h"
#include "util_cache.h"
#include "util_cc1.h"
#include "util_core.h"
#include "util_files.h"
#include "util_settings.h"

void rothp_bench_fail(const char *fmt, ...)
{
	va_list ap;

	printf("# error: ");
	va_start(ap, fmt);
	vprintf(fmt, ap);
	va_end(ap);
	printf("\n");
	exit(1);
}

/*
 * What every benchmark needs first: line-buffered output, its one argument
 * (the directory of the programs), root, THP (hpage_pmd_size: the PMD size,
 * ROTHP_PMD_SIZE), and the THP settings saved (put back at exit). Returns
 * the directory, or fails.
 */
const char *rothp_bench_start(int argc, char **argv)
{
	setvbuf(stdout, NULL, _IOLBF, 0);
	if (argc != 2)
		rothp_bench_fail("usage: %s <dir>", argv[0]);
	if (geteuid())
		rothp_bench_fail("needs root: it writes drop_caches and THP sysfs knobs");
	if (!rothp_hpage_pmd_size())
		rothp_bench_fail("no THP: cannot read %shpage_pmd_size", ROTHP_THP_SYSFS);
	if (rothp_thp_save())
		rothp_bench_fail("cannot save the THP settings");
	return argv[1];
}

/* rothp_cc1_source() of nr_funcs functions into path, a scratch file. */
void rothp_bench_cc1_source(const char *path, int nr_funcs)
{
	FILE *fp;

	if (rothp_scratch_add(path))
		rothp_bench_fail("cannot register %s", path);
	fp = fopen(path, "w");
	if (!fp)
		rothp_bench_fail("%s: %s", path, strerror(errno));
	rothp_cc1_source(fp, nr_funcs);
	if (fclose(fp))
		rothp_bench_fail("writing %s: %s", path, strerror(errno));
}

#ifndef MADV_POPULATE_WRITE
#define MADV_POPULATE_WRITE	23
#endif

static long scrub_vmstat(const char *name)
{
	long val;

	if (rothp_vmstat(name, &val))
		rothp_bench_fail("/proc/vmstat has no %s", name);
	return val;
}

/*
 * Write @bytes of anonymous memory in huge pages and free it, for what the
 * benchmark times next: under QEMU's TCG, a store to a guest page that
 * still holds code QEMU has translated takes a slow path (its check for
 * self-modifying code) until the last translation in the page is gone. A
 * collapse copying into a huge page that a program's collapsed text had
 * held (freed when the page cache was dropped) took 0.1 to 1 s for its
 * 2 MiB, against 10 ms into other memory, with 151 of 152 stack samples in
 * the copy; the page allocator hands the pages freed last out first, so
 * the next collapses took those. Faulted in here, the kernel zeroes them
 * before the benchmark's clock starts (rothp_bench_fresh_cache() does it
 * after every drop of the page cache). On hardware what the memory held
 * costs nothing; under KVM this is only time spent. Both kernels run it
 * alike. Needs THP in the kernel (rothp_bench_start() checks).
 */
static void scrub_free_memory(size_t bytes, struct rothp_scrub *r)
{
	size_t pmd = ROTHP_PMD_SIZE;
	long alloc, fallback, swapped;
	double t0 = rothp_now();
	char *map, *p;

	alloc = scrub_vmstat("thp_fault_alloc");
	fallback = scrub_vmstat("thp_fault_fallback");
	swapped = scrub_vmstat("pswpout");
	map = mmap(NULL, bytes + pmd, PROT_READ | PROT_WRITE, MAP_PRIVATE | MAP_ANONYMOUS, -1, 0);
	if (map == MAP_FAILED)
		rothp_bench_fail("mmap of %zu MiB to scrub: %s", bytes >> 20, strerror(errno));
	p = (char *)ROTHP_ALIGN_UP((unsigned long)map, pmd);
	if (madvise(p, bytes, MADV_HUGEPAGE) || madvise(p, bytes, MADV_POPULATE_WRITE))
		rothp_bench_fail("scrubbing %zu MiB: %s", bytes >> 20, strerror(errno));
	if (munmap(map, bytes + pmd))
		rothp_bench_fail("munmap: %s", strerror(errno));
	r->secs = rothp_now() - t0;
	r->thps = scrub_vmstat("thp_fault_alloc") - alloc;
	r->fallback = scrub_vmstat("thp_fault_fallback") - fallback;
	r->swapped = scrub_vmstat("pswpout") - swapped;
}

/*
 * Drop the page cache, write ROTHP_BENCH_SCRUB_MIB of free memory
 * (scrub_free_memory(); what it did in *scrub unless NULL),
 * then read path (unless NULL) back in small folios.
 */
void rothp_bench_fresh_cache(const char *path, struct rothp_scrub *scrub)
{
	struct rothp_scrub r;

	if (rothp_drop_caches())
		rothp_bench_fail("drop_caches: %s", strerror(errno));
	scrub_free_memory((size_t)ROTHP_BENCH_SCRUB_MIB << 20, scrub ? scrub : &r);
	if (path && rothp_prewarm(path))
		rothp_bench_fail("cannot read %s: %s", path, strerror(errno));
}

void rothp_bench_thp_set(const char *knob, const char *val)
{
	if (rothp_thp_set_str(knob, val))
		rothp_bench_fail("cannot set THP %s=%s", knob, val);
}
