// SPDX-License-Identifier: GPL-2.0
/*
 * observe <dir>: the vmstat counters and the tracepoints the series adds for
 * file text move when, and only when, they should:
 *   on:    prompt_collapse=1, THP "madvise", madvise(MADV_HUGEPAGE) of the
 *          text of a fresh copy: thp_prompt_collapse_queued and _served
 *          +1, _failed and _dropped +0; one "queued" and one "served"
 *          event for the file (named by its inode number), and one
 *          mm_khugepaged_prompt_block event per block of the request, each
 *          "succeeded";
 *   off:   the same madvise with prompt_collapse=0: no counter moves and
 *          no mm_khugepaged_prompt_request event names the file;
 *   split: the file, now huge in the page cache and no longer executed,
 *          opened O_RDONLY, then O_RDWR: nothing; then a pwrite() of one
 *          byte, unchanged, into each 2 MiB block: thp_file_split_on_write
 *          moves by the number of its huge folios (none on a file system
 *          with large folios, which keeps them), with one
 *          mm_file_thp_split_on_write event each, naming the file's inode,
 *          and thp_file_drop_on_write does not move.
 * 6.12 has neither the counters nor the events: every check skips there.
 *
 * Each part's results are named in its table below: the plan is their sum.
 */
#define _GNU_SOURCE
#include <errno.h>
#include <fcntl.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>
#include <sys/stat.h>

#include "kselftest.h"
#include "rothp_util.h"

#define COPY_NAME	"observe.copy"
#define OFF_NAME	"observe-off.copy"
#define WAIT_MS		30000
#define SETTLE_MS	10000

static const char * const events[] = {
	"mm_khugepaged_prompt_request",
	"mm_khugepaged_prompt_block",
	"mm_file_thp_split_on_write",
};

#define NR_EVENTS	ARRAY_SIZE(events)

/*
 * Read a file whose size stat() does not tell (tracefs, procfs) to its end:
 * a malloc()ed, NUL-terminated buffer, its length in *len; NULL with errno
 * set if it cannot be opened or read.
 */
static char *read_stream(const char *path, size_t *len)
{
	size_t cap = 65536, off = 0;
	char *buf = malloc(cap), *bigger;
	ssize_t n;
	int fd;

	fd = open(path, O_RDONLY);
	if (fd < 0 || !buf) {
		free(buf);
		if (fd >= 0)
			close(fd);
		return NULL;
	}
	while ((n = read(fd, buf + off, cap - off - 1)) > 0) {
		off += n;
		if (cap - off > 1)
			continue;
		bigger = realloc(buf, cap * 2);
		if (!bigger) {
			n = -1;
			break;
		}
		buf = bigger;
		cap *= 2;
	}
	close(fd);
	if (n < 0) {
		free(buf);
		return NULL;
	}
	buf[off] = '\0';
	*len = off;
	return buf;
}

/*
 * Enable the three events, their state saved with the settings, which put
 * it back at exit; NULL or why not.
 */
static const char *events_on(void)
{
	char event[128];
	unsigned int i;

	if (access(ROTHP_TRACEFS "trace", W_OK))
		return "no tracefs at " ROTHP_TRACEFS;
	for (i = 0; i < NR_EVENTS; i++) {
		snprintf(event, sizeof(event), "huge_memory/%s", events[i]);
		if (!rothp_trace_event_on(event))
			continue;
		if (errno == ENOENT)
			return "kernel lacks the huge_memory prompt and split tracepoints (baseline 6.12)";
		ksft_exit_fail_msg("cannot enable %s: %s\n", events[i], strerror(errno));
	}
	return NULL;
}

/*
 * The counts below are of one check's events: the trace starts empty.
 * guest/init empties it before each test too, so with rothp.trace=1 only
 * this test's own earlier events go.
 */
static void trace_clear(void)
{
	if (rothp_trace_write("trace", "", O_TRUNC, false))
		ksft_exit_fail_msg("cannot clear %strace: %s\n", ROTHP_TRACEFS, strerror(errno));
}

/*
 * Count the lines of the trace for event ev that contain every one of the
 * (up to two) strings given, NULL meaning none.
 */
static long trace_count(const char *ev, const char *s1, const char *s2)
{
	char *buf, *line, *next;
	char tag[128];
	long n = 0;
	size_t len;

	buf = read_stream(ROTHP_TRACEFS "trace", &len);
	if (!buf)
		ksft_exit_fail_msg("cannot read %strace: %s\n", ROTHP_TRACEFS, strerror(errno));
	snprintf(tag, sizeof(tag), " %s: ", ev);
	for (line = buf; line && *line; line = next) {
		next = strchr(line, '\n');
		if (next)
			*next++ = '\0';
		if (line[0] == '#' || !strstr(line, tag))
			continue;
		if ((s1 && !strstr(line, s1)) || (s2 && !strstr(line, s2)))
			continue;
		n++;
	}
	free(buf);
	return n;
}

static bool stat_equal(const struct rothp_prompt_stat *a, const struct rothp_prompt_stat *b)
{
	return a->queued == b->queued && a->served == b->served &&
	       a->failed == b->failed && a->dropped == b->dropped;
}

static void print_delta(const char *who, const struct rothp_prompt_stat *a,
			const struct rothp_prompt_stat *b)
{
	ksft_print_msg("%s: thp_prompt_collapse queued +%ld, served +%ld, failed +%ld, dropped +%ld\n",
		       who, b->queued - a->queued, b->served - a->served,
		       b->failed - a->failed, b->dropped - a->dropped);
}

/* on: textprog's start, then check_on()'s. */
static const char *const on_results[] = {
	"start returns 0",
	"queued +1, served +1, failed and dropped +0",
	"one queued and one served request event for the file, no other",
	"one succeeded block event per block of the request, all PMD-mapped",
};

static void check_on(const struct rothp_case *c, struct textproc *tp, const char *file_tag)
{
	struct rothp_prompt_stat before, after;
	struct rothp_huge_wait hw;
	long pending, queued_nr = -1, nblk, nok, calls;
	char *buf, *line, *next;
	size_t len;
	double secs;

	if (rothp_prompt_set(1))
		ksft_exit_fail_msg("cannot set prompt_collapse to 1\n");
	/*
	 * Fault the whole text in first. These checks are about the counters
	 * and events of one request; on an SMP guest the program faulting in
	 * its text on one CPU while khugepaged serves the request on another
	 * fails the blocks still in flight (not_suitable_page_count, or
	 * exceed_none_pte before readahead has added them), and the periodic
	 * scan collapses them later. A failed block's event is printed below.
	 */
	if (textproc_run(tp, &calls) != 1)
		ksft_exit_fail_msg("on: the program's first run failed\n");
	rothp_prompt_wait_idle(SETTLE_MS, &pending);
	rothp_prompt_stat_read(&before);
	trace_clear();
	if (textproc_hugepage(tp, "on", NULL))
		ksft_exit_fail_msg("on: MADV_HUGEPAGE failed\n");
	secs = textproc_wait_huge(tp, rothp_now(), 100, WAIT_MS, 50, &hw);
	ksft_print_msg("on: %ld of %ld blocks PMD-mapped after %.2f s\n", hw.blocks, hw.eligible,
		       secs);
	if (rothp_prompt_settle(&before, &after, SETTLE_MS, "on"))
		ksft_print_msg("on: the counters did not settle\n");
	print_delta("on", &before, &after);
	rothp_report(c, 1, NULL, after.queued - before.queued == 1 &&
		     after.served - before.served == 1 && after.failed == before.failed &&
		     after.dropped == before.dropped);

	/* The request's size, from its "queued" event. */
	buf = read_stream(ROTHP_TRACEFS "trace", &len);
	for (line = buf; line && *line; line = next) {
		next = strchr(line, '\n');
		if (next)
			*next++ = '\0';
		if (strstr(line, events[0]) && strstr(line, file_tag) &&
		    strstr(line, "event=queued") && strstr(line, "nr="))
			sscanf(strstr(line, "nr="), "nr=%ld", &queued_nr);
	}
	/* Say why a block of the request did not succeed. */
	for (line = buf; line && *line; line = next) {
		next = line + strlen(line) + 1;
		if (next >= buf + len)
			next = NULL;
		if (strstr(line, events[1]) && strstr(line, file_tag) &&
		    !strstr(line, "result=succeeded"))
			ksft_print_msg("on: %s\n", line);
	}
	free(buf);
	nblk = trace_count(events[1], file_tag, NULL);
	nok = trace_count(events[1], file_tag, "result=succeeded");
	ksft_print_msg("on: events: queued %ld (nr=%ld), served %ld, blocks %ld (%ld succeeded)\n",
		       trace_count(events[0], file_tag, "event=queued"), queued_nr,
		       trace_count(events[0], file_tag, "event=served"), nblk, nok);
	rothp_report(c, 2, NULL, trace_count(events[0], file_tag, "event=queued") == 1 &&
		     trace_count(events[0], file_tag, "event=served") == 1 &&
		     !trace_count(events[0], file_tag, "event=failed") &&
		     !trace_count(events[0], file_tag, "event=dropped"));
	rothp_report(c, 3, NULL, queued_nr > 0 && nblk == queued_nr && nok == nblk &&
		     hw.eligible > 0 && hw.blocks == hw.eligible);
}

/* off: textprog's start, then check_off()'s, on text of small folios. */
static const char *const off_results[] = {
	"start returns 0",
	"MADV_HUGEPAGE of the text returns 0",
	"no thp_prompt_collapse counter moves",
	"no mm_khugepaged_prompt_request event for the file",
};

static void check_off(const struct rothp_case *c, struct textproc *tp, const char *file_tag)
{
	struct rothp_prompt_stat before, after;
	long pending;

	if (rothp_prompt_set(0))
		ksft_exit_fail_msg("cannot set prompt_collapse to 0\n");
	rothp_prompt_wait_idle(SETTLE_MS, &pending);
	if (rothp_prompt_stat_read(&before))
		ksft_exit_fail_msg("cannot read the prompt counters\n");
	trace_clear();
	rothp_report(c, 1, NULL, textproc_hugepage(tp, "off", NULL) == 0);
	usleep(1000 * 1000);
	rothp_prompt_stat_read(&after);
	print_delta("off", &before, &after);
	rothp_report(c, 2, NULL, stat_equal(&before, &after));
	rothp_report(c, 3, NULL, !trace_count(events[0], file_tag, NULL));
}

static const char *const split_results[] = {
	"opening O_RDONLY splits nothing, no event",
	"opening O_RDWR splits nothing, no event",
	"one event per counted split, each for the file",
	"every huge folio of the file split by the write into it",
	"no huge folio dropped, no drop event",
};

/* split's fourth result on a file system with large folios, in its place. */
static const char *const large_results[] = {
	"the file system has large folios: none split",
};

static const struct rothp_case large_case = ROTHP_CASE("split", large_results);

static void check_split(const struct rothp_case *tc, const char *path, int large_folios,
			long huge)
{
	long before, after, n, drop_before, drop_after;
	char ino_tag[64], c;
	struct stat st;
	off_t off;
	int fd;

	if (stat(path, &st))
		ksft_exit_fail_msg("%s: %s\n", path, strerror(errno));
	snprintf(ino_tag, sizeof(ino_tag), "ino=%lu,", (unsigned long)st.st_ino);

	trace_clear();
	rothp_vmstat(ROTHP_VM_SPLIT_ON_WRITE, &before);
	rothp_vmstat(ROTHP_VM_DROP_ON_WRITE, &drop_before);
	fd = open(path, O_RDONLY);
	if (fd < 0)
		ksft_exit_fail_msg("%s: %s\n", path, strerror(errno));
	close(fd);
	rothp_vmstat(ROTHP_VM_SPLIT_ON_WRITE, &after);
	rothp_report(tc, 0, NULL, after == before && !trace_count(events[2], NULL, NULL));

	fd = open(path, O_RDWR);
	if (fd < 0)
		ksft_exit_fail_msg("%s: %s\n", path, strerror(errno));
	rothp_vmstat(ROTHP_VM_SPLIT_ON_WRITE, &after);
	rothp_report(tc, 1, NULL, after == before && !trace_count(events[2], NULL, NULL));
	/* A write reaches each block: the byte it holds, written again. */
	for (off = 0; off + (off_t)ROTHP_PMD_SIZE <= st.st_size; off += ROTHP_PMD_SIZE)
		if (pread(fd, &c, 1, off) != 1 || pwrite(fd, &c, 1, off) != 1)
			ksft_exit_fail_msg("%s: rewrite at %lld: %s\n", path, (long long)off,
					   strerror(errno));
	close(fd);
	rothp_vmstat(ROTHP_VM_SPLIT_ON_WRITE, &after);
	rothp_vmstat(ROTHP_VM_DROP_ON_WRITE, &drop_after);
	n = trace_count(events[2], ino_tag, "action=split");
	ksft_print_msg("split: %ld huge folios; writes: %s +%ld, %ld split events for %s (%ld in all)\n",
		       huge, ROTHP_VM_SPLIT_ON_WRITE, after - before, n, ino_tag,
		       trace_count(events[2], NULL, NULL));
	rothp_report(tc, 2, NULL, after - before == n && n == trace_count(events[2], NULL, NULL));
	if (large_folios)
		rothp_report(&large_case, 0, NULL, n == 0);
	else
		rothp_report(tc, 3, NULL, huge > 0 && n == huge);
	rothp_report(tc, 4, NULL,
		     drop_after == drop_before && !trace_count(events[2], NULL, "action=drop"));
}

static const char *const end_results[] = {
	"both textprog processes exit with status 0",
};

/* The parts, in the order main() runs them. */
enum part { ON, OFF, SPLIT, END };

static const struct rothp_case cases[] = {
	[ON] = ROTHP_CASE("on", on_results),
	[OFF] = ROTHP_CASE("off", off_results),
	[SPLIT] = ROTHP_CASE("split", split_results),
	[END] = ROTHP_CASE(NULL, end_results),
};

int main(int argc, char **argv)
{
	char prog[PATH_MAX], copy[PATH_MAX], off_copy[PATH_MAX], file_tag[64], off_tag[64];
	const char *dir, *why;
	struct textproc tp;
	int plan = rothp_cases_plan(cases, ARRAY_SIZE(cases));
	long huge, i, nr;
	int large, stop_on, stop_off;
	struct stat st;
	bool ok;

	dir = rothp_test_init(argc, argv, prog, sizeof(prog));
	ksft_set_plan(plan);
	/* Nothing to run: as many results skipped, named by the reason. */
	why = rothp_prompt_skip();
	if (why) {
		for (i = 0; i < plan; i++)
			ksft_test_result_skip("%s\n", why);
		ksft_finished();
	}
	if (rothp_prompt_save(NULL))
		ksft_exit_fail_msg("cannot read %s\n", ROTHP_PROMPT_KNOB);
	why = events_on();
	if (why) {
		for (i = 0; i < plan; i++)
			ksft_test_result_skip("%s\n", why);
		ksft_finished();
	}
	/* "madvise": no fault of another program queues a request meanwhile. */
	if (rothp_thp_save() || rothp_thp_khugepaged_defaults() ||
	    rothp_thp_set_str("enabled", "madvise"))
		ksft_exit_fail_msg("cannot set the THP knobs\n");
	rothp_fs_name(dir, &large);

	rothp_scratch_copy_checked(copy, prog, dir, COPY_NAME);
	rothp_scratch_copy_checked(off_copy, prog, dir, OFF_NAME);
	/* The events name a file by its device and inode number. */
	if (stat(copy, &st))
		ksft_exit_fail_msg("%s: %s\n", copy, strerror(errno));
	snprintf(file_tag, sizeof(file_tag), "ino=%lu,", (unsigned long)st.st_ino);
	if (stat(off_copy, &st))
		ksft_exit_fail_msg("%s: %s\n", off_copy, strerror(errno));
	snprintf(off_tag, sizeof(off_tag), "ino=%lu,", (unsigned long)st.st_ino);

	ok = textproc_start_action(&tp, copy, "none", "on: start");
	rothp_report(&cases[ON], 0, NULL, ok);
	check_on(&cases[ON], &tp, file_tag);
	/* Not executed any more, so that it can be opened for write. */
	stop_on = textproc_stop(&tp);

	ok = textproc_start_action(&tp, off_copy, "none", "off: start");
	rothp_report(&cases[OFF], 0, NULL, ok);
	check_off(&cases[OFF], &tp, off_tag);
	stop_off = textproc_stop(&tp);

	/* Huge folios of the copy in the page cache, for the split checks. */
	if (stat(copy, &st))
		ksft_exit_fail_msg("%s: %s\n", copy, strerror(errno));
	nr = st.st_size / ROTHP_PMD_SIZE;
	huge = rothp_cache_huge(copy, 0, nr, NULL);
	if (huge < 0)
		ksft_exit_fail_msg("cannot probe the page cache of %s\n", copy);
	ksft_print_msg("split: %ld of %ld blocks of the copy are huge folios\n", huge, nr);
	check_split(&cases[SPLIT], copy, large, huge);

	rothp_report(&cases[END], 0, NULL, !stop_on && !stop_off);
	rothp_thp_restore();
	ksft_finished();
}
