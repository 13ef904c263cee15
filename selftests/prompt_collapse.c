// SPDX-License-Identifier: GPL-2.0
/*
 * prompt_collapse <dir>: madvise(MADV_HUGEPAGE) of a file's text gets it
 * collapsed promptly, even while khugepaged has other work.
 *
 * In 6.12, MADV_HUGEPAGE only registers the mm with khugepaged
 * (hugepage_madvise(), khugepaged_enter_vma()), which wakes it only when
 * its list of mms was empty (__khugepaged_enter()). khugepaged then scans the
 * mms in turn, pages_to_scan (4096 PTEs: 8 PMDs) a pass, with
 * scan_sleep_millisecs (10 s) between passes, so a program's text waits
 * behind every mm registered before it: behind a 256 MiB heap, 16 passes or
 * 160 s. The series queues the ranges madvise asks for on a file VMA and has
 * khugepaged serve them before its scan (sysfs khugepaged/prompt_collapse,
 * khugepaged/prompt_collapse_pending, vmstat thp_prompt_collapse_*).
 *
 *  a. busy: a neighbour registers a populated 256 MiB heap first, then
 *     textprog MADV_HUGEPAGEs its text: patched, 95% of its eligible blocks
 *     are PMD-mapped within 20 s; 6.12, they are not.
 *  c. off: with prompt_collapse=0 and the neighbour, madvise queues nothing
 *     and the text stays small as in 6.12; writing 0 empties the queue.
 *  b. quiet: without the neighbour the text is collapsed within 20 s too;
 *     madvise of text that is all PMD-mapped queues nothing.
 *  d. never: THP enabled=never: madvise queues nothing; switching to never
 *     with a request queued leaves nothing pending.
 *  e. write: a request queued just before the file is opened for write
 *     collapses nothing while it is open, and fails; no byte changes.
 *  f. races: munmap, mremap, mprotect, fork and exit right after madvise,
 *     in loops; then nothing stays pending and a new textprog still gets
 *     huge text promptly.
 *  g. overflow: processes madvise hundreds of distinct mappings at once:
 *     the queue stays within 128 requests and refuses the rest.
 *
 * Wherever requests were made, once none is pending, thp_prompt_collapse_
 * queued must have grown by served + failed + dropped. On a kernel without
 * the series only a's 6.12 expectation and the checks of contents are run;
 * the others are skipped, saying so.
 *
 * Each part's results are named in its table below, the races' once for
 * each race: the plan is their sum.
 */
#define _GNU_SOURCE
#include <errno.h>
#include <fcntl.h>
#include <poll.h>
#include <signal.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>
#include <sys/mman.h>
#include <sys/stat.h>
#include <sys/wait.h>

#include "kselftest.h"
#include "rothp_util.h"

#define MIN_BLOCKS	8
#define PERCENT		95		/* of the eligible blocks: "collapsed" */
#define NEIGHBOUR_MIB	256
#define BUSY_MS		(20 * 1000)	/* a, b, and the checks after f and g */
#define OFF_MS		(12 * 1000)	/* c */
#define POLL_MS		50
#define IDLE_MS		(30 * 1000)	/* for the queue to empty */
#define NEVER_MS	(5 * 1000)

/* f: each loop stops after this many iterations or this long. */
#define RACE_ITERS	100
#define RACE_MS		(20 * 1000)
#define REWARM_EVERY	25		/* small folios again, so collapses happen */

/* g: processes, and distinct 2 MiB mappings each, 4 MiB apart. */
#define OVF_PROCS	4
#define OVF_MAPS	200
#define OVF_STRIDE	(2 * ROTHP_PMD_SIZE)
#define OVF_MS		(60 * 1000)
/* The series' KHUGEPAGED_MAX_REQUESTS: at most this many are ever pending. */
#define QUEUE_MAX	128

#define COPY_NAME	"prompt_collapse.copy"
#define TRACE_KINDS	16

typedef int (*stub_fn)(void);

static char prog[PATH_MAX];
static const char *dir;
static const char *skip;	/* why to skip the checks of the series, or NULL */

/*
 * Start textprog with small folios in the page cache, fault all its text in
 * and check none of it is PMD-mapped yet: 0, or -1 (said) if some is.
 */
static int start_text(struct textproc *tp, const char *who)
{
	return textproc_start_fresh(tp, prog, who);
}

/* No request pending, then the counters: the start of an interval. */
static void prompt_snap(struct rothp_prompt_stat *st, const char *who)
{
	long pending;

	memset(st, 0, sizeof(*st));
	if (skip)
		return;
	if (rothp_prompt_wait_idle(IDLE_MS, &pending) < 0)
		ksft_print_msg("%s: %ld requests pending before the start\n", who, pending);
	if (rothp_prompt_stat_read(st))
		ksft_print_msg("%s: cannot read the thp_prompt_collapse counters\n", who);
}

static long queued_since(const struct rothp_prompt_stat *before)
{
	struct rothp_prompt_stat now;

	if (rothp_prompt_stat_read(&now))
		return -1;
	return now.queued - before->queued;
}

static const char *const busy_results[] = {
	"MADV_HUGEPAGE of the text returns 0",
	"%d%% of the text PMD-mapped within %d s while khugepaged is busy",
	TEXTPROC_FINISH_RESULTS,
};

/* busy's second result on a kernel without prompt collapse, in its place. */
static const char *const busy_base_results[] = {
	"baseline 6.12: %ld of %ld blocks huge after %d s, as khugepaged is busy",
};

static const struct rothp_case busy_base = ROTHP_CASE("busy", busy_base_results);

/* All skipped on a kernel that lacks prompt collapse. */
static const char *const off_results[] = {
	"prompt_collapse=0 reads back 0, nothing pending",
	"MADV_HUGEPAGE queues nothing",
	"text not collapsed while khugepaged is busy",
	"writing 0 leaves nothing pending within 1 s",
	"queued == served + failed + dropped",
	"prompt_collapse=1 reads back 1",
	TEXTPROC_FINISH_RESULTS,
};

/* a: the neighbour nb is registered; madvise the text and wait. */
static void test_busy(const struct rothp_case *c)
{
	struct rothp_huge_wait hw;
	struct textproc tp;
	double t0, secs;
	int pre, rc;

	pre = start_text(&tp, "busy");
	rc = textproc_hugepage(&tp, "busy", &t0);
	rothp_report(c, 0, NULL, rc == 0);

	secs = textproc_wait_huge(&tp, t0, PERCENT, BUSY_MS, POLL_MS, &hw);
	if (secs >= 0)
		ksft_print_msg("busy: %ld of %ld blocks PMD-mapped after %.2f s (%d polls)\n",
			       hw.blocks, hw.eligible, secs, hw.polls);
	else
		ksft_print_msg("busy: %ld of %ld blocks PMD-mapped after %d s (%d polls)%s\n",
			       hw.blocks, hw.eligible, BUSY_MS / 1000, hw.polls,
			       hw.run_failed ? ", then a run failed" : "");
	if (!skip) {
		rothp_report(c, 1, NULL, !pre && secs >= 0 && hw.eligible >= MIN_BLOCKS,
			     PERCENT, BUSY_MS / 1000);
	} else {
		/* 6.12: the neighbour's 128 PMDs take 16 passes, 160 s, first. */
		rothp_report(&busy_base, 0, NULL,
			     !pre && secs < 0 && !hw.run_failed && hw.eligible >= MIN_BLOCKS,
			     hw.blocks, hw.eligible, BUSY_MS / 1000);
	}
	textproc_finish_case(c, &tp);
}

/* c: prompt_collapse=0 with the neighbour still registered. */
static void test_off(const struct rothp_case *c)
{
	struct rothp_prompt_stat before, after;
	struct rothp_huge_wait hw;
	struct textproc tp;
	long on = -1, pending = -1, queued;
	double t0, secs;
	int pre, rc, ret, i;

	if (skip) {
		for (i = 0; i < c->nr; i++)
			rothp_report(c, i, skip, false);
		return;
	}
	prompt_snap(&before, "off");
	rc = rothp_prompt_set(0);
	rothp_prompt_read(&on);
	rothp_prompt_pending(&pending);
	rothp_report(c, 0, NULL, !rc && on == 0 && pending == 0);

	pre = start_text(&tp, "off");
	rc = textproc_hugepage(&tp, "off", &t0);
	queued = queued_since(&before);
	rothp_prompt_pending(&pending);
	ksft_print_msg("off: madvise rc %d, queued +%ld, pending %ld\n", rc, queued, pending);
	rothp_report(c, 1, NULL, !rc && queued == 0 && pending == 0);

	secs = textproc_wait_huge(&tp, t0, PERCENT, OFF_MS, POLL_MS, &hw);
	ksft_print_msg("off: %ld of %ld blocks PMD-mapped after %.2f s\n", hw.blocks, hw.eligible,
		       secs >= 0 ? secs : OFF_MS / 1000.0);
	rothp_report(c, 2, NULL, !pre && secs < 0 && !hw.run_failed && hw.eligible >= MIN_BLOCKS);

	/*
	 * Queue a request, and switch off at once: the queue is emptied. A
	 * request khugepaged is serving counts as pending until it has given
	 * up after the block in hand: allow a second for that.
	 */
	rc = rothp_prompt_set(1);
	if (!rc)
		rc = textproc_hugepage(&tp, "off", &t0);
	if (!rc)
		rc = rothp_prompt_set(0);
	t0 = rothp_now();
	while (!rothp_prompt_pending(&pending) && pending > 0 && rothp_now() - t0 < 1.0)
		usleep(10 * 1000);
	ksft_print_msg("off: pending %ld %.2f s after writing 0, %ld requests queued since\n",
		       pending, rothp_now() - t0, queued_since(&before));
	rothp_report(c, 3, NULL, !rc && pending == 0);

	ret = rothp_prompt_settle(&before, &after, IDLE_MS, "off");
	rothp_report(c, 4, NULL, ret == 0);

	rc = rothp_prompt_set(1);
	on = -1;
	rothp_prompt_read(&on);
	rothp_report(c, 5, NULL, !rc && on == 1);

	textproc_finish_case(c, &tp);
}

static const char *const quiet_results[] = {
	"MADV_HUGEPAGE of the text returns 0",
	"%d%% of the text PMD-mapped within %d s",
	"MADV_HUGEPAGE of all PMD-mapped text queues nothing",
	"queued == served + failed + dropped",
	TEXTPROC_FINISH_RESULTS,
};

/* b: no neighbour; khugepaged has freed the slots of the exited mms. */
static void test_quiet(const struct rothp_case *c)
{
	struct rothp_prompt_stat before, after = { 0 }, mid;
	struct rothp_huge_wait hw;
	struct textproc tp;
	long pending = -1, queued = -1;
	double t0, secs, all;
	const char *why = skip;
	char only[96];
	int pre, rc, ret;

	prompt_snap(&before, "quiet");
	pre = start_text(&tp, "quiet");
	rc = textproc_hugepage(&tp, "quiet", &t0);
	rothp_report(c, 0, NULL, rc == 0);

	secs = textproc_wait_huge(&tp, t0, PERCENT, BUSY_MS, POLL_MS, &hw);
	ksft_print_msg("quiet: %ld of %ld blocks PMD-mapped after %.2f s (%d polls)\n", hw.blocks,
		       hw.eligible, secs >= 0 ? secs : BUSY_MS / 1000.0, hw.polls);
	rothp_report(c, 1, skip, !pre && secs >= 0 && hw.eligible >= MIN_BLOCKS, PERCENT,
		     BUSY_MS / 1000);

	/* All of it huge, then madvise again: nothing to queue. */
	all = skip ? -1 : textproc_wait_huge(&tp, t0, 100, 2 * BUSY_MS, POLL_MS, &hw);
	if (!skip && all >= 0) {
		prompt_snap(&mid, "quiet");
		rc = textproc_hugepage(&tp, "quiet", &t0);
		queued = queued_since(&mid);
		rothp_prompt_pending(&pending);
		ksft_print_msg("quiet: madvise of huge text: rc %d, queued +%ld, pending %ld\n", rc,
			       queued, pending);
	}
	if (!skip && all < 0) {
		snprintf(only, sizeof(only), "only %ld of %ld blocks PMD-mapped", hw.blocks,
			 hw.eligible);
		why = only;
	}
	rothp_report(c, 2, why, !rc && queued == 0 && pending == 0);

	ret = skip ? 0 : rothp_prompt_settle(&before, &after, IDLE_MS, "quiet");
	rothp_report(c, 3, skip, ret == 0);
	textproc_finish_case(c, &tp);
}

static const char *const never_results[] = {
	"MADV_HUGEPAGE queues nothing with THP enabled=never",
	"enabled=never right after MADV_HUGEPAGE leaves nothing pending",
	"queued == served + failed + dropped",
	TEXTPROC_FINISH_RESULTS,
};

/* d: THP enabled=never. */
static void test_never(const struct rothp_case *c)
{
	struct rothp_prompt_stat before, after = { 0 };
	struct textproc tp;
	long pending = -1, queued = -1, ms = -1;
	double t0;
	int rc, ret = -1;

	prompt_snap(&before, "never");
	rothp_thp_set_checked("enabled", "never");
	start_text(&tp, "never");
	rc = textproc_hugepage(&tp, "never", &t0);
	if (!skip) {
		queued = queued_since(&before);
		rothp_prompt_pending(&pending);
		ksft_print_msg("never: madvise rc %d, queued +%ld, pending %ld\n", rc, queued,
			       pending);
	}
	rothp_report(c, 0, skip, !rc && queued == 0 && pending == 0);

	/* Queue one with enabled=madvise, then switch to never at once. */
	rothp_thp_set_checked("enabled", "madvise");
	rc = textproc_hugepage(&tp, "never", &t0);
	rothp_thp_set_checked("enabled", "never");
	if (!skip) {
		ms = rothp_prompt_wait_idle(NEVER_MS, &pending);
		ksft_print_msg("never: %ld requests queued; pending %ld %.2f s after enabled=never\n",
			       queued_since(&before), pending, rothp_now() - t0);
	}
	rothp_report(c, 1, skip, !rc && ms >= 0);
	rothp_thp_set_checked("enabled", "madvise");
	if (!skip)
		ret = rothp_prompt_settle(&before, &after, IDLE_MS, "never");
	rothp_report(c, 2, skip, ret == 0);
	textproc_finish_case(c, &tp);
}

/* Call stubs 0..n-1 at p: how many returned something else than their index. */
static long bad_stubs(const char *p, long n)
{
	long i, bad = 0;

	for (i = 0; i < n; i++) {
		stub_fn fn = (stub_fn)(uintptr_t)(p + i * ROTHP_STUB_SIZE);

		if (fn() != i)
			bad++;
	}
	return bad;
}

/*
 * khugepaged's results, from its tracepoints, as a diagnostic: which
 * scan_result (mm/khugepaged.c) made a request count as failed.
 */
static const char * const trace_events[] = {
	"huge_memory/mm_khugepaged_scan_file",
	"huge_memory/mm_khugepaged_collapse_file",
};

static bool tracing;

/*
 * A check's events are those after this marker, written to trace_marker
 * as it starts. The trace is not emptied, so that with rothp.trace=1
 * guest/init still has all of this test's events to print if it fails;
 * trace_stop() puts the events' state back, leaving on what was on.
 */
#define TRACE_MARK	"prompt_collapse: start of a khugepaged trace"

static void trace_start(void)
{
	size_t i;

	if (skip)
		return;
	tracing = !rothp_trace_write("trace_marker", TRACE_MARK, 0, false);
	for (i = 0; tracing && i < ARRAY_SIZE(trace_events); i++)
		tracing = !rothp_trace_event_on(trace_events[i]);
	if (!tracing)
		rothp_trace_restore();
}

/*
 * Count "<event>: ... result=<name>" lines of the trace after the last
 * marker, print the counts.
 */
static void trace_stop(const char *who)
{
	char names[TRACE_KINDS][80], line[1024], msg[1024];
	int counts[TRACE_KINDS] = { 0 }, kinds = 0, i;
	bool marked = false;
	size_t off = 0;
	FILE *fp;

	if (!tracing)
		return;
	rothp_trace_restore();
	fp = fopen(ROTHP_TRACEFS "trace", "r");
	while (fp && fgets(line, sizeof(line), fp)) {
		char *ev = strstr(line, "mm_khugepaged_"), *res = strstr(line, "result=");
		char key[80];

		if (strstr(line, TRACE_MARK)) {
			memset(counts, 0, sizeof(counts));
			kinds = 0;
			marked = true;
			continue;
		}
		if (!ev || !res)
			continue;
		snprintf(key, sizeof(key), "%.*s %.*s", (int)strcspn(ev, ":"), ev,
			 (int)strcspn(res + 7, " \n"), res + 7);
		for (i = 0; i < kinds && strcmp(names[i], key); i++)
			;
		if (i == kinds && kinds < TRACE_KINDS)
			snprintf(names[kinds++], sizeof(names[0]), "%s", key);
		if (i < kinds)
			counts[i]++;
	}
	if (fp)
		fclose(fp);
	msg[0] = '\0';
	for (i = 0; i < kinds && off < sizeof(msg); i++)
		off += snprintf(msg + off, sizeof(msg) - off, "%s%s %d", i ? ", " : "", names[i],
				counts[i]);
	/* The ring buffer overwrote the marker: say so, the counts are not this check's. */
	ksft_print_msg("%s: traced: %s%s\n", who, kinds ? msg : "no khugepaged file scan",
		       marked ? "" : " (marker overwritten: counts include earlier events)");
	tracing = false;
}

/*
 * e: madvise a mapping of a copy of textprog, then open the copy O_RDWR at
 * once. On one CPU the open comes first (khugepaged runs at nice 19); on
 * several, khugepaged may already be collapsing a block when the open
 * comes, which the check below allows for. Either way the rest of the
 * request is served with the file open for write.
 */
static const char *const write_results[] = {
	"MADV_HUGEPAGE, then open(O_RDWR), succeed",
	"no block of the file becomes huge while it is open for write",
	"the mapping and the file hold the original bytes",
	"every stub of the mapping returns its index",
	"queued == served + failed + dropped",
	"the request counts as failed",
};

static void test_write(const struct rothp_case *c)
{
	struct rothp_prompt_stat before, after = { 0 };
	const char *why = skip;
	char copy[PATH_MAX];
	uint64_t hash0 = 0, hash_file = 1, hash_mem;
	long pending = -1, pmd_open, pmd_held, nstubs, bad, nblk;
	long huge_open, huge_held, allowed;
	off_t stub_off = 0;
	struct stat st;
	int fd, wfd, rc, ret = -1;
	size_t len;
	char *p;

	rothp_scratch_copy_checked(copy, prog, dir, COPY_NAME);
	fd = open(copy, O_RDONLY);
	if (fd < 0 || fstat(fd, &st))
		ksft_exit_fail_msg("%s: %s\n", copy, strerror(errno));
	nstubs = rothp_find_stubs(fd, &stub_off);
	if (nstubs < MIN_BLOCKS * 512 ||
	    rothp_file_hash(fd, stub_off, nstubs * ROTHP_STUB_SIZE, &hash0))
		ksft_exit_fail_msg("%s: %ld stubs found\n", copy, nstubs);
	/* Those reads may have left large folios (XFS): small ones instead. */
	rothp_fresh_cache_checked(copy);
	len = st.st_size;
	nblk = len / ROTHP_PMD_SIZE;
	p = rothp_map_text(fd, len);
	rothp_touch(p, len, ROTHP_PAGE_SIZE);

	prompt_snap(&before, "write");
	trace_start();
	rc = madvise(p, len, MADV_HUGEPAGE);
	wfd = open(copy, O_RDWR);
	huge_open = rothp_cache_huge(copy, 0, nblk, NULL);
	pmd_open = rothp_file_pmd_mapped(getpid(), (unsigned long)p);
	ksft_print_msg("write: madvise rc %d, open fd %d; then %ld of %ld blocks huge in the page cache, FilePmdMapped %ld kB\n",
		       rc, wfd, huge_open, nblk, pmd_open / 1024);
	rothp_report(c, 0, NULL, !rc && wfd >= 0);

	/* Let khugepaged serve it; fault everything again (faults queue too). */
	if (skip)
		usleep(2000 * 1000);
	else if (rothp_prompt_wait_idle(IDLE_MS, &pending) < 0)
		ksft_print_msg("write: still %ld pending after %d s\n", pending, IDLE_MS / 1000);
	rothp_touch(p, len, ROTHP_PAGE_SIZE);
	usleep(500 * 1000);
	rothp_touch(p, len, ROTHP_PAGE_SIZE);
	huge_held = rothp_cache_huge(copy, 0, nblk, NULL);
	pmd_held = rothp_file_pmd_mapped(getpid(), (unsigned long)p);
	ksft_print_msg("write: open for write: %ld blocks huge in the page cache, FilePmdMapped %ld kB\n",
		       huge_held, pmd_held / 1024);
	/*
	 * The open leaves the THPs already made alone (6.12 drops them on
	 * ext4, where nothing is huge afterwards), and no collapse starts once
	 * the writer is visible; the one block khugepaged was collapsing when
	 * the file was opened, past its i_writecount check, may still become
	 * huge.
	 */
	allowed = huge_open + 1;
	rothp_report(c, 1, NULL, huge_open >= 0 && huge_held >= 0 && huge_held <= allowed);

	hash_mem = rothp_hash(p + stub_off, nstubs * ROTHP_STUB_SIZE);
	bad = bad_stubs(p + stub_off, nstubs);
	if (wfd >= 0)
		close(wfd);
	if (rothp_file_hash(fd, stub_off, nstubs * ROTHP_STUB_SIZE, &hash_file))
		ksft_print_msg("write: cannot read %s back\n", copy);
	if (hash_mem != hash0 || hash_file != hash0)
		ksft_print_msg("write: hash %llx before, %llx mapped, %llx in the file\n",
			       (unsigned long long)hash0, (unsigned long long)hash_mem,
			       (unsigned long long)hash_file);
	rothp_report(c, 2, NULL, hash_mem == hash0 && hash_file == hash0);
	if (bad)
		ksft_print_msg("write: %ld of %ld stubs returned a wrong value\n", bad, nstubs);
	rothp_report(c, 3, NULL, !bad);

	if (!skip)
		ret = rothp_prompt_settle(&before, &after, IDLE_MS, "write");
	trace_stop("write");
	rothp_report(c, 4, skip, ret == 0);
	/* khugepaged takes a request off the queue when it starts on it. */
	if (!skip && after.served > before.served && after.failed == before.failed)
		why = "it was served whole before the open (race)";
	rothp_report(c, 5, why, after.failed > before.failed);

	munmap(p, len);
	close(fd);
	rothp_scratch_remove(copy);
}

/*
 * f: one iteration of each race on a 2 MiB-aligned r-x mapping of textprog
 * from offset 0, which is then all eligible blocks; 0 if every call did
 * what it should. Children only ever _exit(): the atexit handlers are ours.
 */
enum race { RACE_MUNMAP, RACE_MREMAP, RACE_MPROTECT, RACE_FORK, RACE_EXIT };

static const char * const race_names[] = { "munmap", "mremap", "mprotect", "fork", "exit" };

/* Map, fault one page of each 2 MiB block, MADV_HUGEPAGE: NULL on error. */
static char *map_advise(int fd, size_t len)
{
	char *p = rothp_map_aligned(fd, len, 0, 0, PROT_READ | PROT_EXEC);

	if (p == MAP_FAILED)
		return NULL;
	rothp_touch(p, len, ROTHP_PMD_SIZE);
	if (madvise(p, len, MADV_HUGEPAGE)) {
		munmap(p, len);
		return NULL;
	}
	return p;
}

static int race_once(enum race r, int fd, size_t len, int i)
{
	size_t span = len + 2 * ROTHP_PMD_SIZE;
	char *p, *q, *res;
	pid_t pid;
	int ret = 0;

	if (r == RACE_EXIT) {
		pid = rothp_fork();
		if (!pid) {
			int cfd = open(prog, O_RDONLY);

			_exit(cfd < 0 || !map_advise(cfd, len));
		}
		return rothp_child_wait(pid, -1, NULL, NULL);
	}
	p = map_advise(fd, len);
	if (!p)
		return -1;
	switch (r) {
	case RACE_MUNMAP:
		break;
	case RACE_MREMAP:
		/* To another aligned place, or 4 KiB off one. */
		res = mmap(NULL, span, PROT_NONE, MAP_PRIVATE | MAP_ANONYMOUS | MAP_NORESERVE,
			   -1, 0);
		if (res == MAP_FAILED) {
			ret = -1;
			break;
		}
		q = (char *)ROTHP_ALIGN_UP((unsigned long)res, ROTHP_PMD_SIZE) +
		    (i % 2) * ROTHP_PAGE_SIZE;
		q = mremap(p, len, len, MREMAP_MAYMOVE | MREMAP_FIXED, q);
		if (q == MAP_FAILED) {
			ret = -1;
			munmap(res, span);
			break;
		}
		rothp_touch(q, len, ROTHP_PMD_SIZE);
		munmap(res, span);	/* the moved mapping is inside */
		return ret;
	case RACE_MPROTECT:
		/* Drop exec from one block (splitting the VMA), or from all. */
		if (i % 2)
			ret = mprotect(p + 2 * ROTHP_PMD_SIZE, ROTHP_PMD_SIZE, PROT_READ);
		else
			ret = mprotect(p, len, PROT_READ);
		rothp_touch(p, len, ROTHP_PMD_SIZE);
		break;
	case RACE_FORK:
		pid = rothp_fork();
		if (!pid) {
			rothp_touch(p, len, ROTHP_PMD_SIZE);
			_exit(0);
		}
		if (i % 2)
			munmap(p, len);
		ret = rothp_child_wait(pid, -1, NULL, NULL);
		if (i % 2)
			return ret;
		break;
	case RACE_EXIT:
		break;
	}
	if (munmap(p, len))
		ret = -1;
	return ret;
}

/* Does a new textprog get huge text within BUSY_MS? The last two of c. */
static void check_fresh(const struct rothp_case *c)
{
	const char *who = c->name;
	struct rothp_huge_wait hw;
	struct textproc tp;
	bool sum_ok, run_ok;
	double t0, secs = -1;
	int pre, rc;

	pre = start_text(&tp, who);
	rc = textproc_hugepage(&tp, who, &t0);
	if (!skip) {
		secs = textproc_wait_huge(&tp, t0, PERCENT, BUSY_MS, POLL_MS, &hw);
		ksft_print_msg("%s: a fresh textprog: %ld of %ld blocks PMD-mapped after %.2f s\n",
			       who, hw.blocks, hw.eligible, secs >= 0 ? secs : BUSY_MS / 1000.0);
	}
	rothp_report(c, c->nr - 2, skip, !pre && !rc && secs >= 0, PERCENT, BUSY_MS / 1000);
	textproc_sum_and_run(&tp, who, &sum_ok, &run_ok);
	if (textproc_stop(&tp)) {
		ksft_print_msg("%s: the fresh textprog did not exit cleanly\n", who);
		run_ok = false;
	}
	rothp_report(c, c->nr - 1, NULL, sum_ok && run_ok);
}

/* Each race's, named "race <its name>". */
static const char *const race_results[] = {
	"every iteration's calls succeed",
	"nothing pending after the loop",
	"queued == served + failed + dropped",
	"a fresh textprog's text %d%% PMD-mapped within %d s",
	"a fresh textprog's text matches its file and runs",
};

static void test_race(enum race r, int fd, size_t len)
{
	struct rothp_prompt_stat before, after = { 0 };
	char who[32];
	const struct rothp_case c = ROTHP_CASE(who, race_results);
	double t0;
	int i, bad = 0, ret = -1;

	snprintf(who, sizeof(who), "race %s", race_names[r]);
	rothp_fresh_cache_checked(prog);
	prompt_snap(&before, who);
	t0 = rothp_now();
	for (i = 0; i < RACE_ITERS && rothp_now() - t0 < RACE_MS / 1000.0; i++) {
		if (i && !(i % REWARM_EVERY))
			rothp_fresh_cache_checked(prog);
		if (race_once(r, fd, len, i))
			bad++;
	}
	ksft_print_msg("%s: %d iterations in %.1f s, %d with an error\n", who, i,
		       rothp_now() - t0, bad);
	rothp_report(&c, 0, NULL, !bad && i > 0);
	if (!skip)
		ret = rothp_prompt_settle(&before, &after, IDLE_MS, who);
	rothp_report(&c, 1, skip, ret != -1);
	rothp_report(&c, 2, skip, ret == 0);
	check_fresh(&c);
}

/*
 * A process that exits takes its requests with it: a child maps textprog,
 * MADV_HUGEPAGEs it and exits at once (khugepaged, at nice 19, has usually
 * not run yet). The exit drops the request, so nothing stays pending and
 * no file stays open for it, and the dead mm gets no more work done: a
 * new read-only mapping, faulted in without any madvise, shows the request
 * was not served to its end (khugepaged may have collapsed a block or two
 * before the exit; it stops at the next one). If khugepaged did serve the
 * whole request before the exit, it is counted served or failed instead,
 * and the last check has nothing to say.
 */
static const char *const exited_results[] = {
	"a child maps textprog, madvises it and exits 0",
	"its request is gone within 1 s of the exit, and accounted for",
	"khugepaged stops serving the request of a process that exited",
};

static void test_exited(const struct rothp_case *c, int fd, size_t len)
{
	struct rothp_prompt_stat before, after = { 0 };
	long pmd = -1, pending = -1, blocks = len / ROTHP_PMD_SIZE;
	const char *why = skip;
	double t0;
	pid_t pid;
	int ret = -1, rc;
	char *p;

	rothp_fresh_cache_checked(prog);
	prompt_snap(&before, "exited");
	pid = rothp_fork();
	if (!pid) {
		int cfd = open(prog, O_RDONLY);

		_exit(cfd < 0 || !map_advise(cfd, len));
	}
	rc = rothp_child_wait(pid, -1, NULL, NULL);
	t0 = rothp_now();
	if (!skip) {
		/* At most the one request khugepaged may be serving. */
		while (!rothp_prompt_pending(&pending) && pending &&
		       rothp_now() - t0 < 1.0)
			usleep(10 * 1000);
		ret = rothp_prompt_settle(&before, &after, IDLE_MS, "exited");
	}
	rothp_report(c, 0, NULL, !rc);
	if (!skip)
		ksft_print_msg("exited: pending %ld %.2f s after the exit; queued %ld served %ld failed %ld dropped %ld\n",
			       pending, rothp_now() - t0, after.queued - before.queued,
			       after.served - before.served, after.failed - before.failed,
			       after.dropped - before.dropped);
	rothp_report(c, 1, skip, pending == 0 && ret == 0 && after.queued - before.queued == 1);

	p = rothp_map_aligned(fd, len, 0, 0, PROT_READ);
	if (p != MAP_FAILED) {
		rothp_touch(p, len, ROTHP_PAGE_SIZE);
		pmd = rothp_file_pmd_mapped(getpid(), (unsigned long)p);
		munmap(p, len);
	}
	ksft_print_msg("exited: a new read-only mapping has %ld of %ld blocks PMD-mapped\n",
		       pmd > 0 ? pmd / (long)ROTHP_PMD_SIZE : 0, blocks);
	if (!why && after.dropped - before.dropped != 1)
		why = "khugepaged served the request before the exit";
	rothp_report(c, 2, why, pmd >= 0 && pmd < blocks * (long)ROTHP_PMD_SIZE);
}

/*
 * g: a child maps OVF_MAPS 2 MiB blocks of textprog, OVF_STRIDE apart so no
 * two are adjacent, each at a 2 MiB-aligned address and file offset, tells
 * the parent, waits for "go" (EOF), madvises each, writes how many failed,
 * and waits for EOF on ctl to exit.
 */
static void ovf_child(int nr, long blocks, int ready, int go, int done, int ctl)
{
	size_t span = OVF_MAPS * OVF_STRIDE + ROTHP_PMD_SIZE;
	unsigned char failed = 0;
	char *res, *base, c = 'r';
	int fd, i;

	fd = open(prog, O_RDONLY);
	res = mmap(NULL, span, PROT_NONE, MAP_PRIVATE | MAP_ANONYMOUS | MAP_NORESERVE, -1, 0);
	if (fd < 0 || res == MAP_FAILED)
		_exit(1);
	base = (char *)ROTHP_ALIGN_UP((unsigned long)res, ROTHP_PMD_SIZE);
	for (i = 0; i < OVF_MAPS; i++) {
		off_t off = ((i + nr) % blocks) * ROTHP_PMD_SIZE;

		if (mmap(base + i * OVF_STRIDE, ROTHP_PMD_SIZE, PROT_READ | PROT_EXEC,
			 MAP_PRIVATE | MAP_FIXED, fd, off) == MAP_FAILED)
			_exit(2);
	}
	if (write(ready, &c, 1) != 1)
		_exit(3);
	while (read(go, &c, 1) < 0 && errno == EINTR)
		;
	for (i = 0; i < OVF_MAPS; i++) {
		if (madvise(base + i * OVF_STRIDE, ROTHP_PMD_SIZE, MADV_HUGEPAGE) && failed < 255)
			failed++;
	}
	if (write(done, &failed, 1) != 1)
		_exit(4);
	while (read(ctl, &c, 1) < 0 && errno == EINTR)
		;
	_exit(0);
}

/* Read one byte within timeout_ms: 0, or -1 (timeout, EOF, error). */
static int read_byte(int fd, char *c, long timeout_ms)
{
	struct pollfd pfd = { .fd = fd, .events = POLLIN };
	int ret;

	do {
		ret = poll(&pfd, 1, timeout_ms);
	} while (ret < 0 && errno == EINTR);
	return ret > 0 && read(fd, c, 1) == 1 ? 0 : -1;
}

static const char *const overflow_results[] = {
	"%d MADV_HUGEPAGE calls on distinct mappings succeed",
	"never more than %d requests pending when sampled",
	"every request counted in thp_prompt_collapse_queued",
	"a full queue refuses requests",
	"nothing pending afterwards",
	"queued == served + failed + dropped",
	"requests whose blocks all became huge count as served",
	"a fresh textprog's text %d%% PMD-mapped within %d s",
	"a fresh textprog's text matches its file and runs",
};

static void test_overflow(const struct rothp_case *tc, long blocks)
{
	struct rothp_prompt_stat before, after = { 0 };
	const char *why = skip;
	char kept_up[96];
	int ready[2], go[2], done[2], ctl[2];
	pid_t pids[OVF_PROCS];
	long pending, max_pending = 0, samples = 0, queued, dropped, huge;
	int i, ndone = 0, failed = 0, spawned = 0, ret = -1, bad_exit = 0;
	unsigned char f;
	double t0;
	char c;

	rothp_fresh_cache_checked(prog);
	if (pipe(ready) || pipe(go) || pipe(done) || pipe(ctl))
		ksft_exit_fail_msg("pipe: %s\n", strerror(errno));
	for (i = 0; i < OVF_PROCS; i++) {
		pids[i] = rothp_fork();
		if (!pids[i]) {
			rothp_spread(i);
			close(ready[0]);
			close(go[1]);
			close(done[0]);
			close(ctl[1]);
			ovf_child(i, blocks, ready[1], go[0], done[1], ctl[0]);
		}
		if (pids[i] < 0)
			break;
		spawned++;
	}
	close(ready[1]);
	close(go[0]);
	close(done[1]);
	close(ctl[0]);
	for (i = 0; i < spawned; i++) {
		if (read_byte(ready[0], &c, OVF_MS))
			break;
	}
	if (spawned < OVF_PROCS || i < spawned)
		ksft_print_msg("overflow: %d of %d children forked, %d mapped\n", spawned,
			       OVF_PROCS, i);

	prompt_snap(&before, "overflow");
	trace_start();
	t0 = rothp_now();
	close(go[1]);		/* go */
	/* Sample the queue until every child is done and it is empty again. */
	for (;;) {
		struct pollfd pfd = { .fd = done[0], .events = POLLIN };

		if (!skip && !rothp_prompt_pending(&pending)) {
			samples++;
			if (pending > max_pending)
				max_pending = pending;
		} else {
			pending = 0;
		}
		if (ndone < spawned && poll(&pfd, 1, 2) > 0) {
			if (read(done[0], &f, 1) == 1) {
				failed += f;
				ndone++;
			} else {
				ndone = spawned;	/* all gone */
			}
		}
		if (ndone >= spawned && !pending)
			break;
		if (rothp_now() - t0 > OVF_MS / 1000.0)
			break;
		if (ndone >= spawned)
			usleep(5 * 1000);
	}
	ksft_print_msg("overflow: %d x %d madvise calls in %.2f s, %d failed; pending at most %ld in %ld samples\n",
		       spawned, OVF_MAPS, rothp_now() - t0, failed, max_pending, samples);
	rothp_report(tc, 0, NULL, spawned == OVF_PROCS && ndone == spawned && !failed,
		     OVF_PROCS * OVF_MAPS);

	if (!skip)
		ret = rothp_prompt_settle(&before, &after, OVF_MS, "overflow");
	trace_stop("overflow");
	rothp_report(tc, 1, skip, samples > 0 && max_pending <= QUEUE_MAX, QUEUE_MAX);
	queued = after.queued - before.queued;
	dropped = after.dropped - before.dropped;
	rothp_report(tc, 2, skip, queued == OVF_PROCS * OVF_MAPS);
	if (!skip && !dropped && max_pending < QUEUE_MAX) {
		snprintf(kept_up, sizeof(kept_up),
			 "it never filled (at most %ld pending), khugepaged kept up", max_pending);
		why = kept_up;
	}
	rothp_report(tc, 3, why, dropped > 0);
	rothp_report(tc, 4, skip, ret != -1);
	rothp_report(tc, 5, skip, ret == 0);
	/* Served: "every block ended PMD-mapped or huge". None was faulted. */
	huge = rothp_cache_huge(prog, 0, blocks, NULL);
	ksft_print_msg("overflow: %ld of %ld blocks of textprog huge in the page cache\n", huge,
		       blocks);
	rothp_report(tc, 6, skip, huge == blocks && after.failed == before.failed &&
		     after.served - before.served == queued - dropped);

	close(ctl[1]);		/* the children exit */
	for (i = 0; i < spawned; i++)
		bad_exit += rothp_child_wait(pids[i], -1, NULL, NULL) != 0;
	if (bad_exit)
		ksft_print_msg("overflow: %d children did not exit with status 0\n", bad_exit);
	close(ready[0]);
	close(done[0]);

	check_fresh(tc);
}

/* The parts but the races, in the order main() runs them. */
enum part { BUSY, OFF, QUIET, NEVER, WRITE, EXITED, OVERFLOW };

static const struct rothp_case cases[] = {
	[BUSY] = ROTHP_CASE("busy", busy_results),
	[OFF] = ROTHP_CASE("off", off_results),
	[QUIET] = ROTHP_CASE("quiet", quiet_results),
	[NEVER] = ROTHP_CASE("never", never_results),
	[WRITE] = ROTHP_CASE("write", write_results),
	[EXITED] = ROTHP_CASE("exited", exited_results),
	[OVERFLOW] = ROTHP_CASE("overflow", overflow_results),
};

int main(int argc, char **argv)
{
	struct rothp_neighbour nb;
	struct stat st;
	long blocks, on;
	size_t r;
	int fd;

	dir = rothp_test_init(argc, argv, prog, sizeof(prog));
	ksft_set_plan(rothp_cases_plan(cases, ARRAY_SIZE(cases)) +
		      ARRAY_SIZE(race_names) * ARRAY_SIZE(race_results));
	skip = rothp_prompt_skip();
	ksft_print_msg("%s\n", skip ? skip : "kernel has prompt_collapse");

	if (rothp_thp_save())
		ksft_exit_fail_msg("cannot save THP settings\n");
	if (!skip) {
		if (rothp_prompt_save(&on))
			ksft_exit_fail_msg("cannot read %s: %s\n", ROTHP_PROMPT_KNOB,
					   strerror(errno));
		if (on != 1 && rothp_prompt_set(1))
			ksft_exit_fail_msg("cannot set prompt_collapse=1\n");
	}
	/* Before the neighbour: a write to scan_sleep_millisecs wakes khugepaged. */
	rothp_thp_set_checked("enabled", "madvise");
	if (rothp_thp_khugepaged_defaults())
		ksft_exit_fail_msg("cannot set khugepaged's default tunables\n");
	ksft_print_msg("THP enabled=madvise, khugepaged defaults: 4096 pages a pass, 10 s sleeps\n");

	fd = open(prog, O_RDONLY);
	if (fd < 0 || fstat(fd, &st))
		ksft_exit_fail_msg("%s: %s\n", prog, strerror(errno));
	blocks = st.st_size / ROTHP_PMD_SIZE;
	if (blocks < MIN_BLOCKS)
		ksft_exit_fail_msg("%s: only %ld whole 2 MiB blocks\n", prog, blocks);

	if (rothp_neighbour_start(&nb, NEIGHBOUR_MIB))
		ksft_exit_fail_msg("cannot start a %d MiB neighbour\n", NEIGHBOUR_MIB);
	test_busy(&cases[BUSY]);
	test_off(&cases[OFF]);
	rothp_neighbour_stop(&nb);

	/* Let khugepaged free the exited mms' slots: then it is idle. */
	rothp_khugepaged_kick();
	usleep(1000 * 1000);
	test_quiet(&cases[QUIET]);
	test_never(&cases[NEVER]);
	test_write(&cases[WRITE]);
	for (r = 0; r < ARRAY_SIZE(race_names); r++)
		test_race(r, fd, blocks * ROTHP_PMD_SIZE);
	test_exited(&cases[EXITED], fd, blocks * ROTHP_PMD_SIZE);
	test_overflow(&cases[OVERFLOW], blocks);

	close(fd);
	rothp_thp_restore();
	ksft_finished();
}
