// SPDX-License-Identifier: GPL-2.0
/*
 * observe <dir>: what the series shows of itself for file text, its
 * tracepoints and vmstat counters, and what it no longer has:
 *   abi:   the prompt collapse queue is gone: no
 *          khugepaged/prompt_collapse_pending file, no
 *          thp_prompt_collapse_* counter in /proc/vmstat, no
 *          mm_khugepaged_prompt_request nor mm_khugepaged_prompt_block
 *          event (6.12 has none of them either, so this part runs on both
 *          kernels);
 *   on:    prompt_collapse=1, THP "madvise", madvise(MADV_HUGEPAGE) of the
 *          text of a fresh copy, faulted in small first: the text is
 *          PMD-mapped when the call returns, and the trace holds one
 *          mm_khugepaged_prompt_collapse event (the file's dev and ino, the
 *          first block's address, nr and huge the blocks of the range,
 *          source=madvise, result=succeeded), emitted by the task that
 *          called madvise(), and mm_khugepaged_collapse_file events that
 *          collapse each block once, all in that task (khugepaged, woken
 *          by the same madvise(), leaves the text to it meanwhile);
 *          a repeated madvise() emits nothing; after MADV_NOHUGEPAGE,
 *          MADV_HUGEPAGE hints again;
 *   split: the first copy, now huge in the page cache and no longer
 *          executed, opened O_RDONLY, then O_RDWR: nothing; then a
 *          pwrite() of one byte, unchanged, into each 2 MiB block:
 *          thp_file_split_on_write moves by the number of its huge folios
 *          (none on a file system with large folios, which keeps them),
 *          with one mm_file_thp_split_on_write event each, naming the
 *          file's inode, and thp_file_drop_on_write does not move;
 *   mmap:  THP "always": mmap(PROT_READ | PROT_EXEC) of another copy,
 *          cached in small folios, returns with it PMD-mapped, its event
 *          saying source=mmap; of the copy not in the page cache, it reads
 *          it in whole, every block huge, as at exec; with max_ptes_none
 *          lowered from its default, it reads nothing in (huge=0,
 *          result=exceed_none_pte), as khugepaged would not collapse such
 *          a block; an mmap(PROT_READ)
 *          of it emits nothing; textprog started from the copy under THP
 *          "always" gets its text hinted at execve(): source=exec, every
 *          block huge, from textprog; textprog_nosep, whose text is its
 *          first PT_LOAD, which execve() maps over the whole image before
 *          it maps data and bss over the rest, gets one exec event whose
 *          blocks past the text are counted as skipped, not failed;
 *   off:   the same madvise with prompt_collapse=0 on a third copy:
 *          nothing PMD-mapped, no prompt event names the file.
 * The events are read as their formats print them, the prompt collapse
 * one as "mm=%p, dev=%u:%u, ino=%lu, addr=%lx, nr=%lu, huge=%lu,
 * skipped=%lu, source=%s, result=%s". 6.12 has neither the prompt collapse switch nor
 * the events: every part but abi skips there, saying so.
 *
 * Each part's results are named in its table below: the plan is their sum.
 */
#define _GNU_SOURCE
#include <errno.h>
#include <fcntl.h>
#include <libgen.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>
#include <sys/mman.h>
#include <sys/stat.h>
#include <sys/sysmacros.h>

#include "kselftest.h"
#include "rothp_util.h"

#define COPY_NAME	"observe.copy"
#define OFF_NAME	"observe-off.copy"
#define MMAP_NAME	"observe-mmap.copy"
#define NOSEP_NAME	"textprog_nosep"	/* a program of the test disk, not a copy */
#define MAX_EVENTS	1024

/* The events this test switches on, in group huge_memory. */
enum event { EV_PROMPT, EV_FILE, EV_SPLIT, NR_EVENTS };

static const char * const events[NR_EVENTS] = {
	[EV_PROMPT] = "mm_khugepaged_prompt_collapse",
	[EV_FILE] = "mm_khugepaged_collapse_file",	/* 6.12's, per block */
	[EV_SPLIT] = "mm_file_thp_split_on_write",
};

/* What the series had, and has no more. */
#define PENDING_PATH	ROTHP_THP_SYSFS "khugepaged/prompt_collapse_pending"
#define VMSTAT_PREFIX	"thp_prompt_collapse_"
#define REQUEST_EVENT	"huge_memory/mm_khugepaged_prompt_request"
#define BLOCK_EVENT	"huge_memory/mm_khugepaged_prompt_block"

/* A file, as the prompt events name it. */
struct file_id {
	unsigned int major, minor;
	unsigned long ino;
	char name[64];		/* its base name, as mm_khugepaged_collapse_file has it */
};

/* One mm_khugepaged_prompt_collapse event, its fields as its format prints them. */
struct prompt_ev {
	int pid;		/* of the task it was emitted in */
	struct file_id file;
	unsigned long addr, nr, huge, skipped;
	char source[16];
	char result[40];
};

/* One mm_khugepaged_collapse_file event: a block collapse_file() did. */
struct block_ev {
	int pid;
	char comm[20];		/* the task's name, as the trace has it */
	unsigned long addr;
	char result[40];
};

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

/* Which of the events the kernel has; results that need one it lacks fail. */
static bool have[NR_EVENTS];

/*
 * Enable the events, their state saved with the settings, which put it
 * back at exit; NULL, or why not when there is no tracefs. The switch
 * exists, so the series is there: an event it lacks is said, and the
 * results that need it fail rather than skip.
 */
static const char *events_on(void)
{
	char event[128];
	unsigned int i;

	if (access(ROTHP_TRACEFS "trace", W_OK))
		return "no tracefs at " ROTHP_TRACEFS;
	for (i = 0; i < NR_EVENTS; i++) {
		snprintf(event, sizeof(event), "huge_memory/%s", events[i]);
		have[i] = !rothp_trace_event_on(event);
		if (have[i])
			continue;
		if (errno != ENOENT)
			ksft_exit_fail_msg("cannot enable %s: %s\n", events[i], strerror(errno));
		ksft_print_msg("the kernel has no %s event\n", event);
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

/* The trace, read whole, or exit failing. */
static char *trace_read(void)
{
	size_t len;
	char *buf = read_stream(ROTHP_TRACEFS "trace", &len);

	if (!buf)
		ksft_exit_fail_msg("cannot read %strace: %s\n", ROTHP_TRACEFS, strerror(errno));
	return buf;
}

/*
 * The next line of a trace_read() buffer from *pos on, ended in place and
 * *pos moved past it; the comment lines ("#") are passed over. NULL after
 * the last line.
 */
static char *trace_next(char **pos)
{
	char *line;

	while ((line = *pos) && *line) {
		*pos = strchr(line, '\n');
		if (*pos)
			*(*pos)++ = '\0';
		if (line[0] != '#')
			return line;
	}
	return NULL;
}

/*
 * Count the lines of the trace for event ev that contain every one of the
 * (up to two) strings given, NULL meaning none.
 */
static long trace_count(const char *ev, const char *s1, const char *s2)
{
	char *buf = trace_read(), *pos = buf, *line;
	char tag[128];
	long n = 0;

	snprintf(tag, sizeof(tag), " %s: ", ev);
	while ((line = trace_next(&pos))) {
		if (!strstr(line, tag))
			continue;
		if ((s1 && !strstr(line, s1)) || (s2 && !strstr(line, s2)))
			continue;
		n++;
	}
	free(buf);
	return n;
}

/*
 * The task of a trace line, "<comm>-<pid>" and padding before the
 * " [<cpu>]" column: its pid, or -1; its name in comm (len bytes), as the
 * trace has it, when comm is not NULL.
 */
static int line_pid(const char *line, char *comm, size_t len)
{
	const char *cpu = strstr(line, " ["), *p = cpu, *digits, *name;

	if (comm)
		snprintf(comm, len, "?");
	if (!cpu)
		return -1;
	while (p > line && p[-1] == ' ')
		p--;
	digits = p;
	while (p > line && p[-1] >= '0' && p[-1] <= '9')
		p--;
	if (p == digits || p == line || p[-1] != '-')
		return -1;
	for (name = p - 1; name > line && name[-1] != ' '; name--)
		;
	if (comm)
		snprintf(comm, len, "%.*s", (int)(p - 1 - name), name);
	return atoi(p);
}

/* The fields of event ev in a trace line, after "<ev>: "; NULL if it is not one. */
static const char *event_fields(const char *line, enum event ev)
{
	char tag[128];
	const char *f;

	snprintf(tag, sizeof(tag), " %s: ", events[ev]);
	f = strstr(line, tag);
	return f ? f + strlen(tag) : NULL;
}

/*
 * Parse an mm_khugepaged_prompt_collapse line: "mm=%p, dev=%u:%u, ino=%lu,
 * addr=%lx, nr=%lu, huge=%lu, skipped=%lu, source=%s, result=%s". 0, or -1
 * when it does not read so.
 */
static int parse_prompt(const char *line, struct prompt_ev *e)
{
	const char *f = event_fields(line, EV_PROMPT);

	memset(e, 0, sizeof(*e));
	if (!f)
		return -1;
	e->pid = line_pid(line, NULL, 0);
	if (sscanf(f, "mm=%*[^,], dev=%u:%u, ino=%lu, addr=%lx, nr=%lu, huge=%lu, skipped=%lu, source=%15[^,], result=%39s",
		   &e->file.major, &e->file.minor, &e->file.ino, &e->addr, &e->nr, &e->huge,
		   &e->skipped, e->source, e->result) != 9)
		return -1;
	return 0;
}

/*
 * The mm_khugepaged_collapse_file event of a trace line, if it names the
 * file name: "mm=%p, hpage_pfn=0x%lx, index=%ld, addr=%lx, is_shmem=%d,
 * filename=%s, nr=%d, result=%s". 0, or -1 when it is not such a line.
 */
static int parse_block(const char *line, const char *name, struct block_ev *e)
{
	const char *f = event_fields(line, EV_FILE), *a, *n, *r;
	size_t len = strlen(name);

	memset(e, 0, sizeof(*e));
	if (!f)
		return -1;
	a = strstr(f, " addr=");
	n = strstr(f, " filename=");
	r = strstr(f, " result=");
	if (!a || !n || !r || strncmp(n + 10, name, len) || n[10 + len] != ',')
		return -1;
	e->pid = line_pid(line, e->comm, sizeof(e->comm));
	if (sscanf(a, " addr=%lx", &e->addr) != 1 || sscanf(r, " result=%39s", e->result) != 1)
		return -1;
	return 0;
}

/*
 * The prompt events of the trace that name the file id: up to max of them
 * in evs, their number returned. *bad counts the prompt event lines that do
 * not read in their documented format, whatever file they name: the
 * format is part of what is checked. The first few are said.
 */
static int prompt_events(const struct file_id *id, struct prompt_ev *evs, int max, int *bad)
{
	char *buf = trace_read(), *pos = buf, *line;
	struct prompt_ev e;
	int n = 0;

	*bad = 0;
	while ((line = trace_next(&pos))) {
		if (!event_fields(line, EV_PROMPT))
			continue;
		if (parse_prompt(line, &e)) {
			if ((*bad)++ < 3)
				ksft_print_msg("not in the documented format: %s\n", line);
			continue;
		}
		if (e.file.major != id->major || e.file.minor != id->minor ||
		    e.file.ino != id->ino)
			continue;
		if (n < max)
			evs[n++] = e;
	}
	free(buf);
	return n;
}

/* The mm_khugepaged_collapse_file events of the file named name: as prompt_events(). */
static int block_events(const char *name, struct block_ev *evs, int max)
{
	char *buf = trace_read(), *pos = buf, *line;
	struct block_ev e;
	int n = 0;

	while (n < max && (line = trace_next(&pos))) {
		if (!parse_block(line, name, &e))
			evs[n++] = e;
	}
	free(buf);
	return n;
}

/*
 * The prompt events for file id, as prompt_events(); false when they
 * cannot say anything: the event missing, or a line not in its format.
 */
static bool prompt_trace(const char *who, const struct file_id *id, struct prompt_ev *evs,
			 int *n)
{
	int bad, i;

	*n = prompt_events(id, evs, MAX_EVENTS, &bad);
	if (bad)
		ksft_print_msg("%s: %d prompt event lines not in their documented format\n", who,
			       bad);
	for (i = 0; i < *n; i++)
		ksft_print_msg("%s: pid %d %s addr=%#lx nr=%lu huge=%lu skipped=%lu source=%s result=%s\n",
			       who, evs[i].pid, events[EV_PROMPT], evs[i].addr, evs[i].nr,
			       evs[i].huge, evs[i].skipped, evs[i].source, evs[i].result);
	return have[EV_PROMPT] && !bad;
}

/* What one hint is to show: its range, who makes it, and what it ends with. */
struct hint_want {
	int pid;			/* -1: any task */
	unsigned long start, end;	/* the hinted range */
	long huge;			/* blocks left PMD-mapped; -1: all of them */
	const char *source;		/* "madvise", "exec" or "mmap" */
	const char *result;		/* of the last block that failed, or "succeeded" */
};

/*
 * Is evs (n of them) one mm_khugepaged_prompt_collapse event of the hint
 * w: the address of the range's first aligned block, nr its aligned
 * blocks, huge as w says, w's source and result, from w's task (if w
 * names one)? Says what differs, as who.
 */
static bool one_hint(const char *who, const struct prompt_ev *evs, int n,
		     const struct hint_want *w)
{
	unsigned long first = ROTHP_ALIGN_UP(w->start, ROTHP_PMD_SIZE);
	long nr = rothp_pmd_blocks(w->start, w->end);
	long huge = w->huge < 0 ? nr : w->huge;
	const struct prompt_ev *e = evs;

	if (n != 1) {
		ksft_print_msg("%s: %d prompt events for the file, want 1\n", who, n);
		return false;
	}
	if (e->addr == first && (long)e->nr == nr && (long)e->huge == huge && !e->skipped &&
	    !strcmp(e->source, w->source) && !strcmp(e->result, w->result) &&
	    (w->pid < 0 || e->pid == w->pid))
		return true;
	ksft_print_msg("%s: want pid %d addr=%#lx nr=%ld huge=%ld skipped=0 source=%s result=%s\n", who,
		       w->pid, first, nr, huge, w->source, w->result);
	return false;
}

/*
 * A collapse_file() that made the THP: "succeeded", or, in a task that
 * asked (as for MADV_COLLAPSE), "pte_mapped_hugepage", the result that has
 * the caller map it.
 */
static bool collapsed(const char *result)
{
	return !strcmp(result, "succeeded") || !strcmp(result, "pte_mapped_hugepage");
}

/*
 * Are evs (n of them) mm_khugepaged_collapse_file events of the aligned
 * blocks of [start, end), all from pid (khugepaged, woken by the same
 * madvise(), leaves the text to the task while its hint is pending), with
 * exactly one collapse that made the THP per block?
 */
static bool block_each(const char *who, const struct block_ev *evs, int n, unsigned long start,
		       unsigned long end, int pid)
{
	unsigned long first = ROTHP_ALIGN_UP(start, ROTHP_PMD_SIZE);
	long nr = rothp_pmd_blocks(start, end), i, idx;
	char *seen = calloc(nr > 0 ? nr : 1, 1);
	bool ok = nr > 0 && seen, by;

	for (i = 0; i < n; i++) {
		idx = (long)((evs[i].addr - first) / ROTHP_PMD_SIZE);
		by = evs[i].pid == pid;
		if (!by || evs[i].addr < first || evs[i].addr % ROTHP_PMD_SIZE || idx >= nr ||
		    !seen || (collapsed(evs[i].result) && seen[idx]++)) {
			ksft_print_msg("%s: %s-%d %s addr=%#lx result=%s\n", who, evs[i].comm,
				       evs[i].pid, events[EV_FILE], evs[i].addr, evs[i].result);
			ok = false;
		}
	}
	for (idx = 0; seen && idx < nr; idx++)
		ok &= seen[idx] == 1;
	ksft_print_msg("%s: %d %s events for %ld blocks\n", who, n, events[EV_FILE], nr);
	free(seen);
	return ok;
}

static struct file_id file_of(const char *path)
{
	struct file_id id;
	char copy[PATH_MAX];
	struct stat st;

	if (stat(path, &st))
		ksft_exit_fail_msg("%s: %s\n", path, strerror(errno));
	id.major = major(st.st_dev);
	id.minor = minor(st.st_dev);
	id.ino = st.st_ino;
	snprintf(copy, sizeof(copy), "%s", path);
	snprintf(id.name, sizeof(id.name), "%s", basename(copy));
	return id;
}

static const char *const abi_results[] = {
	"no khugepaged/prompt_collapse_pending file",
	"no " VMSTAT_PREFIX "* counter in /proc/vmstat",
	"no mm_khugepaged_prompt_request trace event",
	"no mm_khugepaged_prompt_block trace event",
};

static void check_abi(const struct rothp_case *c)
{
	char *buf, *line, *next;
	const char *no_trace = NULL;
	long counters = 0;
	size_t len;
	int err;

	err = access(PENDING_PATH, F_OK) ? errno : 0;
	if (!err)
		ksft_print_msg("abi: %s exists\n", PENDING_PATH);
	rothp_report(c, 0, NULL, err == ENOENT);

	buf = read_stream("/proc/vmstat", &len);
	if (!buf)
		ksft_exit_fail_msg("cannot read /proc/vmstat: %s\n", strerror(errno));
	for (line = buf; *line; line = next) {
		next = strchr(line, '\n');
		if (next)
			*next++ = '\0';
		else
			next = line + strlen(line);
		if (!strncmp(line, VMSTAT_PREFIX, strlen(VMSTAT_PREFIX))) {
			ksft_print_msg("abi: /proc/vmstat has %s\n", line);
			counters++;
		}
	}
	free(buf);
	rothp_report(c, 1, NULL, counters == 0);

	if (access(ROTHP_TRACEFS "events/huge_memory", F_OK))
		no_trace = "no huge_memory events in tracefs at " ROTHP_TRACEFS;
	err = access(ROTHP_TRACEFS "events/" REQUEST_EVENT, F_OK) ? errno : 0;
	if (!err)
		ksft_print_msg("abi: %s exists\n", REQUEST_EVENT);
	rothp_report(c, 2, no_trace, err == ENOENT);
	err = access(ROTHP_TRACEFS "events/" BLOCK_EVENT, F_OK) ? errno : 0;
	if (!err)
		ksft_print_msg("abi: %s exists\n", BLOCK_EVENT);
	rothp_report(c, 3, no_trace, err == ENOENT);
}

/* on: textprog's start, then check_on()'s. */
static const char *const on_results[] = {
	"start returns 0",
	"MADV_HUGEPAGE returns 0, every eligible block PMD-mapped when it returns",
	"one prompt collapse event: the file, its first block, nr = huge, madvise, succeeded",
	"it was emitted by the task that called madvise()",
	"mm_khugepaged_collapse_file: each block succeeded once, by that task or khugepaged",
	"MADV_HUGEPAGE again, VM_HUGEPAGE already set: no prompt event",
	"MADV_NOHUGEPAGE, then MADV_HUGEPAGE: one prompt collapse event again, nr = huge",
};

static void check_on(const struct rothp_case *c, struct textproc *tp, const struct file_id *id)
{
	struct prompt_ev evs[MAX_EVENTS];
	struct block_ev bevs[MAX_EVENTS];
	struct hint_want w = {
		.pid = tp->pid, .start = tp->start, .end = tp->end, .huge = -1,
		.source = "madvise", .result = "succeeded",
	};
	struct rothp_hint_wait hint;
	long calls;
	int n, nb, rc;
	bool ok;

	if (rothp_prompt_set(1))
		ksft_exit_fail_msg("cannot set prompt_collapse to 1\n");
	/* The whole text faulted in, small: each block is collapsed, none read in. */
	if (textproc_run(tp, &calls) != 1)
		ksft_exit_fail_msg("on: the program's first run failed\n");
	trace_clear();
	rc = textproc_hint(tp, "on", &hint);
	rothp_report(c, 1, NULL, !rc && rothp_hint_done(&hint));
	ok = prompt_trace("on", id, evs, &n);
	w.pid = -1;	/* the task is checked apart */
	rothp_report(c, 2, NULL, ok && one_hint("on", evs, n, &w));
	rothp_report(c, 3, NULL, ok && n == 1 && evs[0].pid == tp->pid);
	nb = block_events(id->name, bevs, MAX_EVENTS);
	rothp_report(c, 4, NULL, have[EV_FILE] &&
		     block_each("on", bevs, nb, tp->start, tp->end, tp->pid));

	trace_clear();
	rc = textproc_hugepage(tp, "on: again", NULL);
	ok = prompt_trace("on: again", id, evs, &n);
	rothp_report(c, 5, NULL, ok && !rc && n == 0);

	trace_clear();
	w.pid = tp->pid;
	rc = textproc_rehint(tp, "on: after MADV_NOHUGEPAGE", &hint);
	ok = prompt_trace("on: after MADV_NOHUGEPAGE", id, evs, &n);
	rothp_report(c, 6, NULL, ok && !rc && rothp_hint_done(&hint) &&
		     one_hint("on: after MADV_NOHUGEPAGE", evs, n, &w));
}

static const char *const mmap_results[] = {
	"THP always: mmap(PROT_READ | PROT_EXEC) of a file cached small returns it PMD-mapped",
	"one prompt collapse event for it: mmap, from this process, nr = huge, succeeded",
	"the same of the file not in the page cache reads it in whole: huge = nr, succeeded",
	"... with max_ptes_none lowered, reads nothing in: huge=0, exceed_none_pte",
	"THP always: mmap(PROT_READ) of it emits no prompt event",
	"textprog started from it under THP always: one event, exec, from textprog, nr = huge",
	"textprog_nosep under THP always: one exec event, its text huge, the rest skipped",
};

/*
 * mmap's last result: execve() maps textprog_nosep's first PT_LOAD, its
 * text, over the image's whole size, then data and bss over the rest. The
 * blocks of that range that are no longer text when the task comes to them
 * are counted as skipped: its text all huge, the result is "succeeded".
 */
static void check_nosep(const struct rothp_case *c, const char *path)
{
	struct file_id id = file_of(path);
	struct prompt_ev evs[MAX_EVENTS];
	struct textproc tp;
	long pmd, text;
	bool ok;
	int n;

	rothp_fresh_cache_checked(path);
	trace_clear();
	if (textproc_start(&tp, path, "none"))
		ksft_exit_fail_msg("cannot start %s\n", path);
	ok = prompt_trace("exec: nosep", &id, evs, &n);
	pmd = rothp_file_pmd_mapped(tp.pid, tp.start);
	text = rothp_pmd_blocks(tp.start, tp.end);
	ksft_print_msg("exec: nosep: FilePmdMapped %ld kB, %ld whole blocks of text\n",
		       pmd / 1024, text);
	ok = ok && n == 1 && evs[0].pid == tp.pid && !strcmp(evs[0].source, "exec") &&
	     !strcmp(evs[0].result, "succeeded") && text > 0 &&
	     (long)evs[0].huge == text && pmd == text * (long)ROTHP_PMD_SIZE &&
	     evs[0].skipped > 0 && evs[0].huge + evs[0].skipped == evs[0].nr;
	if (!ok)
		ksft_print_msg("exec: nosep: want one exec event from pid %d, huge=%ld, skipped > 0, huge + skipped = nr, succeeded\n",
			       tp.pid, text);
	rothp_report(c, 6, NULL, !textproc_stop(&tp) && ok);
}

/* mmap: the hint at mmap() and at execve() under THP "always". */
static void check_mmap(const struct rothp_case *c, const char *path, const char *nosep)
{
	struct file_id id = file_of(path);
	struct prompt_ev evs[MAX_EVENTS];
	struct hint_want w = {
		.pid = getpid(), .huge = -1, .source = "mmap", .result = "succeeded",
	};
	long nr_ptes = ROTHP_PMD_SIZE / ROTHP_PAGE_SIZE;
	long pmd, nblk, resident = -1;
	char none[32], half[32];
	struct textproc tp;
	struct stat st;
	size_t len;
	int fd, n;
	bool ok;
	char *p;

	fd = rothp_open_checked(path, O_RDONLY);
	if (fstat(fd, &st))
		ksft_exit_fail_msg("%s: %s\n", path, strerror(errno));
	nblk = st.st_size / ROTHP_PMD_SIZE;
	len = nblk * ROTHP_PMD_SIZE;
	rothp_fresh_cache_checked(path);
	rothp_thp_set_checked("enabled", "always");
	trace_clear();
	/* rothp_map_aligned()'s last mmap() maps the file, r-x, at an aligned address. */
	p = rothp_map_text(fd, len);
	pmd = rothp_file_pmd_mapped(getpid(), (unsigned long)p);
	ksft_print_msg("mmap: FilePmdMapped %ld of %zu kB right after mmap()\n", pmd / 1024,
		       len >> 10);
	rothp_report(c, 0, NULL, pmd == (long)len);
	w.start = (unsigned long)p;
	w.end = (unsigned long)p + len;
	ok = prompt_trace("mmap", &id, evs, &n);
	rothp_report(c, 1, NULL, ok && one_hint("mmap", evs, n, &w));
	munmap(p, len);

	/* Not cached: text that mmap() maps is read in whole, as at exec. */
	rothp_fresh_cache_checked(NULL);
	trace_clear();
	p = rothp_map_text(fd, len);
	pmd = rothp_file_pmd_mapped(getpid(), (unsigned long)p);
	ksft_print_msg("mmap: not cached: FilePmdMapped %ld of %zu kB after mmap()\n",
		       pmd / 1024, len >> 10);
	w.start = (unsigned long)p;
	w.end = (unsigned long)p + len;
	ok = prompt_trace("mmap: not cached", &id, evs, &n);
	rothp_report(c, 2, NULL, ok && pmd == (long)len && one_hint("mmap: not cached", evs, n, &w));
	munmap(p, len);

	/* max_ptes_none lowered: mmap() keeps to it, as khugepaged would. */
	if (rothp_thp_read_str("khugepaged/max_ptes_none", none, sizeof(none)))
		ksft_exit_fail_msg("cannot read khugepaged/max_ptes_none\n");
	snprintf(half, sizeof(half), "%ld", nr_ptes / 2 - 1);
	rothp_thp_set_checked("khugepaged/max_ptes_none", half);
	rothp_fresh_cache_checked(NULL);
	trace_clear();
	p = rothp_map_text(fd, len);
	pmd = rothp_file_pmd_mapped(getpid(), (unsigned long)p);
	rothp_cache_huge(path, 0, nblk, &resident);
	ksft_print_msg("mmap: not cached, max_ptes_none %s: FilePmdMapped %ld kB, %ld pages cached after mmap()\n",
		       half, pmd / 1024, resident);
	w.start = (unsigned long)p;
	w.end = (unsigned long)p + len;
	w.huge = 0;
	w.result = "exceed_none_pte";
	ok = prompt_trace("mmap: max_ptes_none lowered", &id, evs, &n);
	rothp_report(c, 3, NULL, ok && pmd == 0 && resident == 0 &&
		     one_hint("mmap: max_ptes_none lowered", evs, n, &w));
	munmap(p, len);
	rothp_thp_set_checked("khugepaged/max_ptes_none", none);

	trace_clear();
	p = rothp_map_checked(fd, len, PROT_READ);
	ok = prompt_trace("mmap: PROT_READ", &id, evs, &n);
	rothp_report(c, 4, NULL, ok && n == 0);
	munmap(p, len);
	close(fd);

	/* execve() maps the program's text: read in whole, as asked. */
	rothp_fresh_cache_checked(NULL);
	trace_clear();
	if (textproc_start(&tp, path, "none"))
		ksft_exit_fail_msg("cannot start %s\n", path);
	ok = prompt_trace("exec", &id, evs, &n);
	pmd = rothp_file_pmd_mapped(tp.pid, tp.start);
	ksft_print_msg("exec: FilePmdMapped %ld kB of textprog's text once it is ready\n",
		       pmd / 1024);
	w = (struct hint_want){ .pid = tp.pid, .start = tp.start, .end = tp.end, .huge = -1,
				.source = "exec", .result = "succeeded" };
	ok = ok && one_hint("exec", evs, n, &w);
	rothp_report(c, 5, NULL, !textproc_stop(&tp) && ok);
	check_nosep(c, nosep);
	rothp_thp_set_checked("enabled", "madvise");
}

/* off: textprog's start, then check_off()'s, on text of small folios. */
static const char *const off_results[] = {
	"start returns 0",
	"MADV_HUGEPAGE of the text returns 0, nothing PMD-mapped",
	"no prompt event for the file",
};

static void check_off(const struct rothp_case *c, struct textproc *tp, const struct file_id *id)
{
	struct prompt_ev evs[MAX_EVENTS];
	struct rothp_hint_wait hint;
	int n, rc;
	bool ok;

	if (rothp_prompt_set(0))
		ksft_exit_fail_msg("cannot set prompt_collapse to 0\n");
	trace_clear();
	rc = textproc_hint(tp, "off", &hint);
	rothp_report(c, 1, NULL, !rc && hint.at_once == 0 && hint.blocks == 0);
	ok = prompt_trace("off", id, evs, &n);
	rothp_report(c, 2, NULL, ok && n == 0);
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
	rothp_report(tc, 0, NULL, after == before && !trace_count(events[EV_SPLIT], NULL, NULL));
	if (!have[EV_SPLIT])
		ksft_print_msg("split: no %s event: the results that count them fail\n",
			       events[EV_SPLIT]);

	fd = open(path, O_RDWR);
	if (fd < 0)
		ksft_exit_fail_msg("%s: %s\n", path, strerror(errno));
	rothp_vmstat(ROTHP_VM_SPLIT_ON_WRITE, &after);
	rothp_report(tc, 1, NULL, after == before && !trace_count(events[EV_SPLIT], NULL, NULL));
	/* A write reaches each block: the byte it holds, written again. */
	for (off = 0; off + (off_t)ROTHP_PMD_SIZE <= st.st_size; off += ROTHP_PMD_SIZE)
		if (pread(fd, &c, 1, off) != 1 || pwrite(fd, &c, 1, off) != 1)
			ksft_exit_fail_msg("%s: rewrite at %lld: %s\n", path, (long long)off,
					   strerror(errno));
	close(fd);
	rothp_vmstat(ROTHP_VM_SPLIT_ON_WRITE, &after);
	rothp_vmstat(ROTHP_VM_DROP_ON_WRITE, &drop_after);
	n = trace_count(events[EV_SPLIT], ino_tag, "action=split");
	ksft_print_msg("split: %ld huge folios; writes: %s +%ld, %ld split events for %s (%ld in all)\n",
		       huge, ROTHP_VM_SPLIT_ON_WRITE, after - before, n, ino_tag,
		       trace_count(events[EV_SPLIT], NULL, NULL));
	rothp_report(tc, 2, NULL, have[EV_SPLIT] &&
		     after - before == n && n == trace_count(events[EV_SPLIT], NULL, NULL));
	if (large_folios)
		rothp_report(&large_case, 0, NULL, have[EV_SPLIT] && n == 0);
	else
		rothp_report(tc, 3, NULL, have[EV_SPLIT] && huge > 0 && n == huge);
	rothp_report(tc, 4, NULL, drop_after == drop_before &&
		     !trace_count(events[EV_SPLIT], NULL, "action=drop"));
}

static const char *const end_results[] = {
	"both textprog processes exit with status 0",
};

/* The parts, in the order main() runs them. */
enum part { ABI, ON, SPLIT, MMAP, OFF, END };

static const struct rothp_case cases[] = {
	[ABI] = ROTHP_CASE("abi", abi_results),
	[ON] = ROTHP_CASE("on", on_results),
	[SPLIT] = ROTHP_CASE("split", split_results),
	[MMAP] = ROTHP_CASE("mmap", mmap_results),
	[OFF] = ROTHP_CASE("off", off_results),
	[END] = ROTHP_CASE(NULL, end_results),
};

/* Every result of the cases from first on skipped, as why. */
static void skip_from(enum part first, const char *why)
{
	size_t p;
	int i;

	for (p = first; p < ARRAY_SIZE(cases); p++)
		for (i = 0; i < cases[p].nr; i++)
			rothp_report(&cases[p], i, why, false);
}

int main(int argc, char **argv)
{
	char prog[PATH_MAX], copy[PATH_MAX], off_copy[PATH_MAX], mmap_copy[PATH_MAX];
	char nosep[PATH_MAX];
	struct file_id copy_id, off_id;
	const char *dir, *why;
	struct textproc tp;
	long huge, nr;
	int large, stop_on, stop_off;
	struct stat st;
	bool ok;

	dir = rothp_test_init(argc, argv, prog, sizeof(prog));
	ksft_set_plan(rothp_cases_plan(cases, ARRAY_SIZE(cases)));
	check_abi(&cases[ABI]);

	/* Nothing more to run: the rest skipped, named by the reason. */
	why = rothp_prompt_skip();
	if (why) {
		skip_from(ON, why);
		ksft_finished();
	}
	if (rothp_prompt_save(NULL))
		ksft_exit_fail_msg("cannot read %s\n", ROTHP_PROMPT_KNOB);
	why = events_on();
	if (why) {
		skip_from(ON, why);
		ksft_finished();
	}
	/* "madvise": no other program's exec or mmap() hints meanwhile. */
	if (rothp_thp_save() || rothp_thp_khugepaged_defaults() ||
	    rothp_thp_set_str("enabled", "madvise"))
		ksft_exit_fail_msg("cannot set the THP knobs\n");
	rothp_fs_name(dir, &large);

	rothp_scratch_copy_checked(copy, prog, dir, COPY_NAME);
	rothp_scratch_copy_checked(off_copy, prog, dir, OFF_NAME);
	rothp_scratch_copy_checked(mmap_copy, prog, dir, MMAP_NAME);
	/* The events name a file by its device and inode number. */
	copy_id = file_of(copy);
	off_id = file_of(off_copy);
	ksft_print_msg("the copy is dev=%u:%u ino=%lu\n", copy_id.major, copy_id.minor,
		       copy_id.ino);

	rothp_fresh_cache_checked(copy);
	ok = textproc_start_action(&tp, copy, "none", "on: start");
	rothp_report(&cases[ON], 0, NULL, ok);
	check_on(&cases[ON], &tp, &copy_id);
	/* Not executed any more, so that it can be opened for write. */
	stop_on = textproc_stop(&tp);

	/* Huge folios of the copy in the page cache, for the split checks. */
	if (stat(copy, &st))
		ksft_exit_fail_msg("%s: %s\n", copy, strerror(errno));
	nr = st.st_size / ROTHP_PMD_SIZE;
	huge = rothp_cache_huge(copy, 0, nr, NULL);
	if (huge < 0)
		ksft_exit_fail_msg("cannot probe the page cache of %s\n", copy);
	ksft_print_msg("split: %ld of %ld blocks of the copy are huge folios\n", huge, nr);
	check_split(&cases[SPLIT], copy, large, huge);

	if (snprintf(nosep, sizeof(nosep), "%s/%s", dir, NOSEP_NAME) >= (int)sizeof(nosep))
		ksft_exit_fail_msg("path too long: %s\n", dir);
	check_mmap(&cases[MMAP], mmap_copy, nosep);

	rothp_fresh_cache_checked(off_copy);
	ok = textproc_start_action(&tp, off_copy, "none", "off: start");
	rothp_report(&cases[OFF], 0, NULL, ok);
	check_off(&cases[OFF], &tp, &off_id);
	stop_off = textproc_stop(&tp);

	rothp_report(&cases[END], 0, NULL, !stop_on && !stop_off);
	rothp_thp_restore();
	ksft_finished();
}
