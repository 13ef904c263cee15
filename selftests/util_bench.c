// SPDX-License-Identifier: GPL-2.0
/* Helpers of the benchmarks: failing, the page cache read afresh, THP knobs. */
#include <limits.h>
#include <stdarg.h>
#include <stdio.h>
#include <stdlib.h>

#include "util_bench.h"
#include "util_cache.h"
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
