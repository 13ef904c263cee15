// SPDX-License-Identifier: GPL-2.0
/* Helpers of the benchmarks: failing, the page cache read afresh, THP knobs. */
#include <errno.h>
#include <limits.h>
#include <stdarg.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

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

/* Drop the page cache, then read path (unless NULL) back in small folios. */
void rothp_bench_fresh_cache(const char *path)
{
	char why[PATH_MAX + 64];

	if (rothp_fresh_cache(path, why, sizeof(why)))
		rothp_bench_fail("%s", why);
}

void rothp_bench_thp_set(const char *knob, const char *val)
{
	if (rothp_thp_set_str(knob, val))
		rothp_bench_fail("cannot set THP %s=%s", knob, val);
}
