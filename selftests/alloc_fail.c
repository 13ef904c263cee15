// SPDX-License-Identifier: GPL-2.0
/*
 * alloc_fail <dir>: what MADV_COLLAPSE, prompt collapse and khugepaged do
 * when the THP allocation of a collapse fails, with the failures injected
 * by fail_page_alloc (Documentation/fault-injection/fault-injection.rst)
 * into one task only: its task filter, /proc/<pid>/make-it-fail, and
 * min-order 9, so that nothing but the THP allocations of that task fail.
 *
 *  collapse  MADV_COLLAPSE in textprog, textprog's allocations failing:
 *            ENOMEM, nothing mapped huge, the text intact; with the
 *            injection off, the same call collapses everything. (6.12 too.)
 *  prompt    madvise(MADV_HUGEPAGE) of the text, textprog's allocations
 *            failing: the hint is textprog's own work, so its blocks stay
 *            small, and madvise() still returns 0. With the injection off,
 *            MADV_NOHUGEPAGE, then MADV_HUGEPAGE, hints again and maps it
 *            all at once, the failure having left nothing to wait for.
 *  scan      prompt collapse off: khugepaged's periodic scan fails an
 *            allocation and sleeps alloc_sleep_millisecs
 *            (khugepaged_alloc_sleep()); a hint made meanwhile, with
 *            khugepaged's allocations still failing, is not held up by it:
 *            the text is PMD-mapped when madvise() returns. Then, the
 *            injection off, the text is PMD-mapped (6.12: by the scan).
 *  fault     THP "always": textprog is started while its allocations fail,
 *            so the hint of its text at execve() fails, and the exec still
 *            succeeds, nothing PMD-mapped; once the injection is off,
 *            khugepaged's periodic scan makes the text huge (6.12 too).
 *
 * Each case's results are named in its table below: the plan is their sum.
 * The checks of prompt collapse are skipped on a kernel without it.
 */
#define _GNU_SOURCE
#include <dirent.h>
#include <errno.h>
#include <fcntl.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

#include "kselftest.h"
#include "rothp_util.h"

#define FPA		"/sys/kernel/debug/fail_page_alloc/"
#define ALLOC_SLEEP_MS	3000	/* khugepaged's back-off after a failure */
#define FAST_SCAN_MS	200	/* scan_sleep_millisecs where the scan must run */
#define SEEN_MS		(20 * 1000)	/* for an injected failure to happen */
#define HUGE_MS		(30 * 1000)	/* for the text to become huge */
#define POLL_MS		50
#define PERCENT		95

static const char *skip;	/* why prompt collapse checks skip, or NULL */
static char prog[PATH_MAX];

/*
 * Fail every allocation of PMD order or more by the task with
 * make-it-fail, sleeping or not, highmem or not (THP allocations are
 * both), quietly. In the order written: the task filter goes on before the
 * probability, so that no other task ever sees a failure; restored in the
 * reverse order, the probability goes back first.
 */
static char min_order[16], task_mif[64];
static const struct rothp_fault_knob fpa_knobs[] = {
	{ FPA "task-filter", "Y" },
	{ FPA "min-order", min_order },
	{ FPA "ignore-gfp-wait", "N" },
	{ FPA "ignore-gfp-highmem", "N" },
	{ FPA "verbose", "0" },
	{ FPA "space", "0" },
	{ FPA "interval", "1" },
	{ FPA "times", "-1" },
	{ task_mif, "1" },
	{ FPA "probability", "100" },
};

/* Arm it for task pid, its knobs saved with the settings: exit disarms it too. */
static void fpa_arm(pid_t pid)
{
	snprintf(min_order, sizeof(min_order), "%d",
		 __builtin_ctzl(ROTHP_PMD_SIZE / ROTHP_PAGE_SIZE));
	snprintf(task_mif, sizeof(task_mif), "/proc/%d/make-it-fail", (int)pid);
	if (rothp_fault_save(fpa_knobs, ARRAY_SIZE(fpa_knobs)) ||
	    rothp_fault_set(fpa_knobs, ARRAY_SIZE(fpa_knobs)))
		ksft_exit_fail_msg("cannot arm fail_page_alloc for task %d\n", (int)pid);
}

static void fpa_disarm(void)
{
	if (rothp_fault_restore())
		ksft_exit_fail_msg("cannot disarm fail_page_alloc\n");
}

/* The pid of the khugepaged thread, from /proc/<pid>/comm. */
static pid_t khugepaged_pid(void)
{
	struct dirent *d;
	char path[300], comm[32];
	pid_t pid = 0;
	DIR *proc;

	proc = opendir("/proc");
	if (!proc)
		ksft_exit_fail_msg("/proc: %s\n", strerror(errno));
	while (!pid && (d = readdir(proc))) {
		if (d->d_name[0] < '1' || d->d_name[0] > '9')
			continue;
		snprintf(path, sizeof(path), "/proc/%s/comm", d->d_name);
		if (!rothp_read_line(path, comm, sizeof(comm)) && !strcmp(comm, "khugepaged"))
			pid = atoi(d->d_name);
	}
	closedir(proc);
	if (!pid)
		ksft_exit_fail_msg("no khugepaged thread in /proc\n");
	return pid;
}

static long alloc_failed(void)
{
	long v = -1;

	if (rothp_vmstat("thp_collapse_alloc_failed", &v))
		ksft_exit_fail_msg("cannot read vmstat thp_collapse_alloc_failed\n");
	return v;
}

static void set_prompt(long on)
{
	if (!skip && rothp_prompt_set(on))
		ksft_exit_fail_msg("cannot set prompt_collapse=%ld\n", on);
}

/* textprog with its text read in small folios and faulted in. */
static void start_text(struct textproc *tp, const char *who)
{
	textproc_start_fresh(tp, prog, who);
}

static long pmd_kb(struct textproc *tp)
{
	return rothp_file_pmd_mapped(tp->pid, tp->start) / 1024;
}

/* Poll until thp_collapse_alloc_failed exceeds from: ms taken, or -1. */
static long wait_alloc_failed(long from, long timeout_ms)
{
	double t0 = rothp_now();

	while (alloc_failed() <= from) {
		if (rothp_now() - t0 > timeout_ms / 1000.0)
			return -1;
		usleep(POLL_MS * 1000);
	}
	return (long)((rothp_now() - t0) * 1000);
}

static const char *const collapse_results[] = {
	"MADV_COLLAPSE fails with ENOMEM while the caller's THP allocations fail",
	"thp_collapse_alloc_failed grew",
	"no block is PMD-mapped after the failure",
	"MADV_COLLAPSE returns 0 once the injection is off",
	"every eligible block is PMD-mapped then",
	TEXTPROC_FINISH_RESULTS,
};

static void case_collapse(const struct rothp_case *c)
{
	struct textproc tp;
	char reply[64];
	long before, after, pmd, eligible;
	int rc = 0, err = 0;

	start_text(&tp, c->name);
	before = alloc_failed();
	fpa_arm(tp.pid);
	if (textproc_cmd(&tp, "collapse", reply, sizeof(reply)) ||
	    sscanf(reply, "collapse %d %d", &rc, &err) != 2)
		ksft_exit_fail_msg("%s: no reply to collapse\n", c->name);
	fpa_disarm();
	after = alloc_failed();
	pmd = pmd_kb(&tp);
	ksft_print_msg("%s: MADV_COLLAPSE rc %d (%s), thp_collapse_alloc_failed +%ld, FilePmdMapped %ld kB\n",
		       c->name, rc, rc ? strerror(err) : "ok", after - before, pmd);
	rothp_report(c, 0, NULL, rc && err == ENOMEM);
	rothp_report(c, 1, NULL, after > before);
	rothp_report(c, 2, NULL, pmd == 0);

	if (textproc_cmd(&tp, "collapse", reply, sizeof(reply)) ||
	    sscanf(reply, "collapse %d %d", &rc, &err) != 2)
		ksft_exit_fail_msg("%s: no reply to collapse\n", c->name);
	eligible = textproc_eligible(&tp);
	pmd = pmd_kb(&tp);
	ksft_print_msg("%s: MADV_COLLAPSE again: rc %d (%s), FilePmdMapped %ld of %ld kB\n",
		       c->name, rc, rc ? strerror(err) : "ok", pmd,
		       eligible * (long)(ROTHP_PMD_SIZE >> 10));
	rothp_report(c, 3, NULL, !rc);
	rothp_report(c, 4, NULL, eligible > 0 && pmd == eligible * (long)(ROTHP_PMD_SIZE >> 10));
	textproc_finish_case(c, &tp);
}

static const char *const prompt_results[] = {
	"MADV_HUGEPAGE returns 0 while the caller's THP allocations fail",
	"thp_collapse_alloc_failed grew",
	"no block is PMD-mapped after the failed hint",
	"injection off, MADV_NOHUGEPAGE then MADV_HUGEPAGE: every eligible block PMD-mapped",
	TEXTPROC_FINISH_RESULTS,
};

static void case_prompt(const struct rothp_case *c)
{
	struct rothp_hint_wait hint;
	struct textproc tp;
	long fails;
	int rc, i;

	if (skip) {
		for (i = 0; i < c->nr; i++)
			rothp_report(c, i, skip, false);
		return;
	}
	set_prompt(1);
	start_text(&tp, c->name);
	fails = alloc_failed();
	fpa_arm(tp.pid);
	rc = textproc_hint(&tp, c->name, &hint);
	fpa_disarm();
	ksft_print_msg("%s: thp_collapse_alloc_failed +%ld\n", c->name, alloc_failed() - fails);
	rothp_report(c, 0, NULL, !rc);
	rothp_report(c, 1, NULL, alloc_failed() > fails);
	rothp_report(c, 2, NULL, hint.at_once == 0 && hint.blocks == 0);

	/*
	 * Nothing is left to wait for: hinting again maps it all at once. (A
	 * plain repeat would do nothing, VM_HUGEPAGE being set; khugepaged,
	 * woken by the first madvise(), may meanwhile have collapsed blocks
	 * that textprog's own code then faults in huge, so that is not
	 * looked at here: prompt_collapse and observe check the repeat.)
	 */
	rc = textproc_rehint(&tp, c->name, &hint);
	rothp_report(c, 3, NULL, !rc && rothp_hint_done(&hint));
	textproc_finish_case(c, &tp);
}

static const char *const scan_results[] = {
	"MADV_HUGEPAGE returns 0",
	"khugepaged's periodic scan fails a THP allocation",
	"no block is PMD-mapped while the allocations fail",
	"a hint while khugepaged's allocations fail: every block PMD-mapped when it returns",
	"the text is PMD-mapped once the injection is off",
	TEXTPROC_FINISH_RESULTS,
};

static void case_scan(const struct rothp_case *c)
{
	struct rothp_hint_wait hint = { 0 };
	struct rothp_huge_wait hw;
	struct textproc tp;
	char ms[16];
	long fails, seen_ms;
	double t0, secs;
	int rc;

	set_prompt(0);
	start_text(&tp, c->name);
	fails = alloc_failed();
	fpa_arm(khugepaged_pid());
	rc = textproc_hugepage(&tp, c->name, NULL);
	rothp_report(c, 0, NULL, !rc);
	/* A write to scan_sleep_millisecs wakes khugepaged: it scans now. */
	snprintf(ms, sizeof(ms), "%d", FAST_SCAN_MS);
	rothp_thp_set_checked("khugepaged/scan_sleep_millisecs", ms);
	seen_ms = wait_alloc_failed(fails, SEEN_MS);
	ksft_print_msg("%s: an allocation failed after %ld ms\n", c->name, seen_ms);
	rothp_report(c, 1, NULL, seen_ms >= 0);
	rothp_report(c, 2, NULL, pmd_kb(&tp) == 0);

	/* khugepaged still fails and backs off; the caller's hint is its own. */
	rc = -1;
	if (!skip) {
		set_prompt(1);
		rc = textproc_rehint(&tp, c->name, &hint);
	}
	fpa_disarm();
	rothp_report(c, 3, skip, !rc && rothp_hint_done(&hint));

	t0 = rothp_now();
	secs = textproc_wait_huge(&tp, t0, PERCENT, ALLOC_SLEEP_MS + HUGE_MS, POLL_MS, &hw);
	ksft_print_msg("%s: %ld of %ld blocks PMD-mapped after %.2f s\n", c->name, hw.blocks,
		       hw.eligible, secs);
	rothp_report(c, 4, NULL, secs >= 0);
	rothp_thp_set_checked("khugepaged/scan_sleep_millisecs", "10000");
	textproc_finish_case(c, &tp);
}

static const char *const fault_results[] = {
	"THP always: textprog starts while its THP allocations fail",
	"the hint of its text at execve() failed: thp_collapse_alloc_failed grew",
	"no block is PMD-mapped after the exec",
	"khugepaged makes the text huge once the injection is off",
	TEXTPROC_FINISH_RESULTS,
};

/*
 * textprog inherits make-it-fail from this process, armed around its
 * start: its execve() hints its text under THP "always" and fails. This
 * process makes no THP allocation meanwhile.
 */
static void case_fault(const struct rothp_case *c)
{
	struct rothp_huge_wait hw;
	struct textproc tp;
	long fails, pmd;
	double t0, secs;
	char ms[16];
	bool started;

	set_prompt(1);
	rothp_fresh_cache_checked(prog);
	rothp_thp_set_checked("enabled", "always");
	fails = alloc_failed();
	fpa_arm(getpid());
	started = !textproc_start(&tp, prog, "none");
	fpa_disarm();
	if (!started)
		ksft_exit_fail_msg("%s: cannot start %s\n", c->name, prog);
	pmd = pmd_kb(&tp);
	ksft_print_msg("%s: thp_collapse_alloc_failed +%ld, FilePmdMapped %ld kB after the exec\n",
		       c->name, alloc_failed() - fails, pmd);
	rothp_report(c, 0, NULL, started);
	rothp_report(c, 1, skip, alloc_failed() > fails);
	rothp_report(c, 2, NULL, pmd == 0);

	/* The periodic scan collapses it, and the next fault maps it. */
	snprintf(ms, sizeof(ms), "%d", FAST_SCAN_MS);
	rothp_thp_set_checked("khugepaged/scan_sleep_millisecs", ms);
	t0 = rothp_now();
	secs = textproc_wait_huge(&tp, t0, PERCENT, ALLOC_SLEEP_MS + HUGE_MS, POLL_MS, &hw);
	ksft_print_msg("%s: %ld of %ld blocks PMD-mapped after %.2f s\n", c->name, hw.blocks,
		       hw.eligible, secs);
	rothp_report(c, 3, NULL, secs >= 0);
	rothp_thp_set_checked("khugepaged/scan_sleep_millisecs", "10000");
	rothp_thp_set_checked("enabled", "madvise");
	textproc_finish_case(c, &tp);
}

/* The cases, in the order main() runs them: their results, and their runs. */
enum part { COLLAPSE, PROMPT, SCAN, FAULT };

static const struct rothp_case cases[] = {
	[COLLAPSE] = ROTHP_CASE("collapse", collapse_results),
	[PROMPT] = ROTHP_CASE("prompt", prompt_results),
	[SCAN] = ROTHP_CASE("scan", scan_results),
	[FAULT] = ROTHP_CASE("fault", fault_results),
};

static void (* const run[])(const struct rothp_case *c) = {
	[COLLAPSE] = case_collapse,
	[PROMPT] = case_prompt,
	[SCAN] = case_scan,
	[FAULT] = case_fault,
};

_Static_assert(ARRAY_SIZE(run) == ARRAY_SIZE(cases), "a case without its run");

int main(int argc, char **argv)
{
	char src[PATH_MAX], ms[16];
	size_t i;
	int cfg;

	rothp_test_init(argc, argv, prog, sizeof(prog));
	cfg = rothp_kconfig("CONFIG_FAIL_PAGE_ALLOC", src, sizeof(src));
	if (!cfg)
		ksft_exit_skip("CONFIG_FAIL_PAGE_ALLOC is not set (%s): kernel-config/fault-inject.config sets it\n",
			       src);
	if (access(FPA "probability", W_OK))
		ksft_exit_fail_msg("%sprobability: %s (CONFIG_FAULT_INJECTION_DEBUG_FS, debugfs mounted?)\n",
				   FPA, strerror(errno));
	ksft_set_plan(rothp_cases_plan(cases, ARRAY_SIZE(cases)));
	skip = rothp_prompt_skip();
	ksft_print_msg("%s\n", skip ? skip : "kernel has prompt_collapse");

	if (rothp_thp_save())
		ksft_exit_fail_msg("cannot save THP settings\n");
	if (!skip && rothp_prompt_save(NULL))
		ksft_exit_fail_msg("cannot read %s: %s\n", ROTHP_PROMPT_KNOB, strerror(errno));

	rothp_thp_set_checked("enabled", "madvise");
	if (rothp_thp_khugepaged_defaults())
		ksft_exit_fail_msg("cannot set khugepaged's default tunables\n");
	snprintf(ms, sizeof(ms), "%d", ALLOC_SLEEP_MS);
	rothp_thp_set_checked("khugepaged/alloc_sleep_millisecs", ms);
	ksft_print_msg("THP enabled=madvise, khugepaged: 10 s scan sleep, %d ms alloc sleep\n",
		       ALLOC_SLEEP_MS);

	for (i = 0; i < ARRAY_SIZE(cases); i++) {
		run[i](&cases[i]);
		/* Let a back-off end before the next case. */
		usleep(ALLOC_SLEEP_MS * 1000);
	}
	rothp_thp_restore();
	ksft_finished();
}
