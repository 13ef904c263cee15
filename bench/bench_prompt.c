// SPDX-License-Identifier: GPL-2.0
/*
 * bench_prompt <dir>: how long a program waits for its text to become huge
 * after madvise(MADV_HUGEPAGE), and what that madvise costs.
 *
 * With THP "enabled" at madvise and khugepaged's default tunables (4096
 * PTEs a pass, 10 s sleeps), <dir>/textprog starts with its text in small
 * folios, faulted in, none of it PMD-mapped, and is told to MADV_HUGEPAGE
 * its text; its stubs are then run every POLL_MS (a collapsed block is
 * PMD-mapped at the next fault) until at least 95% of the eligible 2 MiB
 * blocks of the text are PMD-mapped (FilePmdMapped):
 *
 *   prompt_collapse_s        the time that takes when a neighbour process
 *                            registered a populated 256 MiB heap of 4 KiB
 *                            pages with khugepaged first, as on a machine
 *                            where khugepaged has work; capped at CAP_S and
 *                            reported as CAP_S when not reached. 6.12 scans
 *                            the neighbour's 128 PMDs first, 8 a pass.
 *   prompt_collapse_quiet_s  the median of QUIET_RUNS such times without
 *                            the neighbour, khugepaged idle beforehand
 *   madvise_call_us          one madvise(MADV_HUGEPAGE) of this process's
 *                            own mapping of textprog's text range, made
 *                            huge by MADV_COLLAPSE first on both kernels
 *                            (the steady state of a program that calls it
 *                            again), in microseconds: the median over
 *                            BATCHES batches of the mean of a batch of
 *                            PER_BATCH calls, so that a coarse guest clock
 *                            (jiffies when TSC calibration fails under
 *                            TCG) still measures it
 *
 * Prints "BENCH <metric> <value> <unit>" lines and "# ..." notes. Exits 1,
 * printing "# error: ..." and no further BENCH line, when a run could not
 * be made.
 */
#define _GNU_SOURCE
#include <errno.h>
#include <fcntl.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>
#include <sys/mman.h>
#include <sys/utsname.h>

#include "rothp_util.h"

#define PERCENT		95
#define NEIGHBOUR_MIB	256
#define CAP_S		120
#define POLL_MS		20
#define QUIET_RUNS	3
#define WARMUP		20
#define BATCHES		15
#define PER_BATCH	20000

static char prog[PATH_MAX];
static bool has_prompt;
/* Let khugepaged free the slots of the mms that exited: it is idle then. */
static void quiesce(void)
{
	long pending;

	if (rothp_khugepaged_kick())
		rothp_bench_fail("cannot write khugepaged/scan_sleep_millisecs");
	usleep(1000 * 1000);
	if (has_prompt && rothp_prompt_wait_idle(CAP_S * 1000, &pending) < 0)
		rothp_bench_fail("%ld prompt collapse requests stay pending", pending);
}

/* One run: seconds from MADV_HUGEPAGE to PERCENT PMD-mapped, or CAP_S. */
static double run_once(const char *what, bool busy)
{
	struct rothp_neighbour nb = { .pid = -1, .ctl = -1 };
	struct rothp_huge_wait hw;
	struct textproc tp;
	char reply[128];
	long calls, pmd;
	double t0, secs;
	int rc = -1, err = 0;

	quiesce();
	if (busy && rothp_neighbour_start(&nb, NEIGHBOUR_MIB))
		rothp_bench_fail("%s: cannot start a %d MiB neighbour", what, NEIGHBOUR_MIB);
	rothp_bench_fresh_cache(prog);
	if (textproc_start(&tp, prog, "none"))
		rothp_bench_fail("%s: cannot start %s", what, prog);
	if (textproc_run(&tp, &calls) != 1)
		rothp_bench_fail("%s: textprog's stubs do not run", what);
	pmd = rothp_file_pmd_mapped(tp.pid, tp.start);
	if (pmd)
		rothp_bench_fail("%s: FilePmdMapped %ld kB before madvise", what, pmd / 1024);

	t0 = rothp_now();
	if (textproc_cmd(&tp, "hugepage", reply, sizeof(reply)) ||
	    sscanf(reply, "hugepage %d %d", &rc, &err) != 2 || rc)
		rothp_bench_fail("%s: MADV_HUGEPAGE of the text: %s", what,
				 rc ? strerror(err) : "no reply");
	secs = textproc_wait_huge(&tp, t0, PERCENT, CAP_S * 1000L, POLL_MS, &hw);
	if (hw.run_failed)
		rothp_bench_fail("%s: a run of the stubs failed", what);
	if (hw.eligible <= 0)
		rothp_bench_fail("%s: the text has no eligible block", what);
	printf("# %s: %ld of %ld blocks PMD-mapped after %.3f s, %d polls%s\n", what, hw.blocks,
	       hw.eligible, secs >= 0 ? secs : (double)CAP_S, hw.polls,
	       secs >= 0 ? "" : " (cap)");
	if (!textproc_sum_matches(&tp, what))
		rothp_bench_fail("%s: the text in memory differs from the file", what);
	if (textproc_stop(&tp))
		rothp_bench_fail("%s: textprog did not exit cleanly", what);
	rothp_neighbour_stop(&nb);
	return secs >= 0 ? secs : CAP_S;
}

static double madvise_us(void)
{
	long pmd0, pmd1, pend0 = -1, pend1 = -1;
	double t[BATCHES], t0, sum = 0;
	unsigned char sink = 0;
	size_t len, off;
	int i, j, err;
	char *p;

	quiesce();
	rothp_bench_fresh_cache(prog);
	/* textprog's text segment, mapped r-x as the loader maps it. */
	p = rothp_elf_map_text(prog, false, &len);
	if (p == MAP_FAILED)
		rothp_bench_fail("mapping the text of %s: %s", prog, strerror(errno));
	for (off = 0; off < len; off += ROTHP_PAGE_SIZE)
		sink ^= *(volatile unsigned char *)(p + off);
	(void)sink;
	for (i = 0; i < WARMUP; i++)
		if (madvise(p, len, MADV_HUGEPAGE))
			rothp_bench_fail("madvise(MADV_HUGEPAGE): %s", strerror(errno));
	/* The same state on both kernels: the text PMD-mapped. */
	if (rothp_madv_collapse(p, len, &err))
		printf("# madvise: MADV_COLLAPSE: %s\n", strerror(err));
	quiesce();
	pmd0 = rothp_file_pmd_mapped(getpid(), (unsigned long)p);
	if (has_prompt)
		rothp_prompt_pending(&pend0);
	for (i = 0; i < BATCHES; i++) {
		t0 = rothp_now();
		for (j = 0; j < PER_BATCH; j++)
			if (madvise(p, len, MADV_HUGEPAGE))
				rothp_bench_fail("madvise(MADV_HUGEPAGE): %s", strerror(errno));
		t[i] = (rothp_now() - t0) * 1e6 / PER_BATCH;
		sum += t[i];
	}
	pmd1 = rothp_file_pmd_mapped(getpid(), (unsigned long)p);
	if (has_prompt)
		rothp_prompt_pending(&pend1);
	rothp_sort(t, BATCHES);
	printf("# madvise: %zu kB range, %d batches of %d calls after %d: min %.2f us, mean %.2f us, max %.2f us\n",
	       len >> 10, BATCHES, PER_BATCH, WARMUP, t[0], sum / BATCHES, t[BATCHES - 1]);
	printf("# madvise: FilePmdMapped %ld kB before, %ld kB after; pending %ld before, %ld after\n",
	       pmd0 / 1024, pmd1 / 1024, pend0, pend1);
	munmap(p, len);
	return rothp_median(t, BATCHES);
}

int main(int argc, char **argv)
{
	double quiet[QUIET_RUNS], busy;
	char what[32];
	struct utsname u;
	int i;

	setvbuf(stdout, NULL, _IOLBF, 0);
	if (argc != 2)
		rothp_bench_fail("usage: %s <dir>", argv[0]);
	if (geteuid())
		rothp_bench_fail("needs root: it writes drop_caches and THP sysfs knobs");
	if (rothp_hpage_pmd_size() != ROTHP_PMD_SIZE)
		rothp_bench_fail("no THP with 2 MiB PMDs");
	if (snprintf(prog, sizeof(prog), "%s/textprog", argv[1]) >= (int)sizeof(prog))
		rothp_bench_fail("path too long: %s", argv[1]);
	if (access(prog, X_OK))
		rothp_bench_fail("%s: %s", prog, strerror(errno));
	if (rothp_thp_save())
		rothp_bench_fail("cannot save the THP settings");
	has_prompt = !rothp_prompt_skip();
	if (has_prompt) {
		if (rothp_prompt_save(NULL))
			rothp_bench_fail("cannot read %s: %s", ROTHP_PROMPT_KNOB, strerror(errno));
		if (rothp_prompt_set(1))
			rothp_bench_fail("cannot set %s to 1", ROTHP_PROMPT_KNOB);
	}
	rothp_bench_thp_set("enabled", "madvise");
	if (rothp_thp_khugepaged_defaults())
		rothp_bench_fail("cannot set khugepaged's default tunables");
	uname(&u);
	printf("# kernel %s, %s; %s\n", u.release, prog,
	       has_prompt ? "prompt_collapse=1" : ROTHP_NO_PROMPT);

	busy = run_once("busy", true);
	printf("BENCH prompt_collapse_s %.3f s\n", busy);

	for (i = 0; i < QUIET_RUNS; i++) {
		snprintf(what, sizeof(what), "quiet run %d", i + 1);
		quiet[i] = run_once(what, false);
	}
	printf("BENCH prompt_collapse_quiet_s %.3f s\n", rothp_median(quiet, QUIET_RUNS));

	printf("BENCH madvise_call_us %.2f us\n", madvise_us());
	/*
	 * The same with prompt collapse off, in this boot: what the patched
	 * call costs over 6.12's code path, without the noise between boots.
	 */
	if (has_prompt) {
		if (rothp_prompt_set(0))
			rothp_bench_fail("cannot write khugepaged/prompt_collapse");
		printf("# madvise_call_us with prompt_collapse=0: %.2f us\n", madvise_us());
		if (rothp_prompt_set(1))
			rothp_bench_fail("cannot write khugepaged/prompt_collapse");
	}
	return 0;
}
