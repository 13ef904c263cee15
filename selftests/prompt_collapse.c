// SPDX-License-Identifier: GPL-2.0
/*
 * prompt_collapse <dir>: madvise(MADV_HUGEPAGE) of a file's text returns
 * with the text PMD-mapped, whatever khugepaged is doing.
 *
 * In 6.12, MADV_HUGEPAGE only registers the mm with khugepaged
 * (hugepage_madvise(), khugepaged_enter_vma()), which wakes it only when
 * its list of mms was empty (__khugepaged_enter()). khugepaged then scans the
 * mms in turn, pages_to_scan (4096 PTEs: 8 PMDs) a pass, with
 * scan_sleep_millisecs (10 s) between passes, so a program's text waits
 * behind every mm registered before it: behind a 256 MiB heap, 16 passes or
 * 160 s. With the series, a madvise() that newly sets VM_HUGEPAGE on an
 * executable mapping of a regular file "hints" the range: before the call
 * returns to user space, the calling thread itself collapses each aligned
 * 2 MiB block, reading in what is not cached as MADV_COLLAPSE does, and
 * maps it with a PMD in its own mm. A repeated madvise() does nothing more;
 * after MADV_NOHUGEPAGE, MADV_HUGEPAGE hints again. A mapping that is not
 * executable is left to khugepaged, as in 6.12; a block that cannot be
 * collapsed stays small and madvise() still returns 0; a pending signal
 * stops the hint between blocks. Sysfs khugepaged/prompt_collapse=0 turns
 * hints off.
 *
 *  a. busy: a neighbour registers a populated 256 MiB heap first, then
 *     textprog MADV_HUGEPAGEs its text: patched, every eligible block is
 *     PMD-mapped when madvise() returns; 6.12, after 20 s they are not.
 *  b. off: prompt_collapse=0, with the neighbour: madvise() collapses and
 *     maps nothing and the text stays small, as in 6.12. Switched back to
 *     1, a repeated madvise() (VM_HUGEPAGE already set) still maps
 *     nothing; MADV_NOHUGEPAGE, then MADV_HUGEPAGE, maps it all.
 *  c. data: MADV_HUGEPAGE of a PROT_READ mapping of a file not in the page
 *     cache reads nothing in (6.12 too); of a MAP_SHARED r-x mapping of the
 *     same file, it reads every block in and PMD-maps it.
 *  d. never: with THP enabled=never, madvise() maps and collapses nothing;
 *     back at "madvise", hinting again maps it all.
 *  e. write: with the file open for write elsewhere, madvise() returns 0
 *     and no block becomes huge; no byte changes; once the writer has
 *     closed it, hinting again maps it all.
 *  f. races: a second thread of the madvising process munmaps, mremaps or
 *     mprotects the range, forks or exits (exit_group()) at a random moment
 *     of the first one's madvise(), in loops, a new process each time; every
 *     call returns what it should, the mappings read as the file, and a new
 *     textprog still gets its text PMD-mapped by madvise() afterwards.
 *  g. exited: a process that madvises and exits at once leaves the file's
 *     blocks huge: the work was done before madvise() returned.
 *  h. signal: madvise() of the 256 MiB textprog_big returns with all of it
 *     huge; a process SIGKILLed a quarter of the way through that hint
 *     dies of it well before the rest would have taken, the rest left
 *     small. Skipped, saying so, where <dir> has no textprog_big (the
 *     image puts it on ext4 only).
 *
 * "When madvise() returns" is read from smaps right after the call has
 * returned, touching nothing, and again for at most ROTHP_HINT_MS
 * (util_prompt.h), so that a mapping made late is told from none; one that
 * needed the poll is said. On a kernel without the series, what it
 * changes is skipped, saying so, and the rest (a's 6.12 expectation, the
 * contents, what the calls return, c's PROT_READ mapping, d's enabled=never)
 * is checked on both.
 *
 * Each part's results are named in its table below, the races' once for
 * each race: the plan is their sum.
 */
#define _GNU_SOURCE
#include <errno.h>
#include <fcntl.h>
#include <poll.h>
#include <pthread.h>
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
#define BUSY_MS		(20 * 1000)	/* a on 6.12 */
#define OFF_MS		(12 * 1000)	/* b */
#define POLL_MS		50
#define HELD_MS		2000		/* e: how long the writer holds the file */

/* f: each loop stops after this many iterations or this long. */
#define RACE_ITERS	40
#define RACE_MS		(30 * 1000)
#define REWARM_EVERY	4		/* small folios again, so collapses happen */
#define RACE_CHILD_MS	(60 * 1000)
#define RACE_SAID	3		/* failed iterations said in full */

/* h: the large textprog the disks carry for the benchmarks. */
#define BIG_NAME	"textprog_big"
#define BIG_MS		(300 * 1000)

#define DATA_NAME	"prompt_collapse.data.copy"
#define WRITE_NAME	"prompt_collapse.write.copy"

typedef int (*stub_fn)(void);

static char prog[PATH_MAX];
static const char *dir;
static const char *skip;	/* why to skip the checks of the series, or NULL */
static uint64_t prog_hash;	/* of textprog's whole 2 MiB blocks */
static double hint_secs;	/* a hint of textprog's text from small folios */

/*
 * Start textprog with small folios in the page cache, fault all its text in
 * and check none of it is PMD-mapped yet: 0, or -1 (said) if some is.
 */
static int start_text(struct textproc *tp, const char *who)
{
	return textproc_start_fresh(tp, prog, who);
}

/* FilePmdMapped of pid's VMA at addr, in blocks; -1 when it cannot be read. */
static long pmd_blocks(pid_t pid, unsigned long addr)
{
	long pmd = rothp_file_pmd_mapped(pid, addr);

	return pmd < 0 ? -1 : pmd / (long)ROTHP_PMD_SIZE;
}

/*
 * After a call that must not hint: no whole 2 MiB block of the file at
 * path is a huge folio in the page cache and nothing of the VMA of pid at
 * addr is PMD-mapped. Says what it saw, as who.
 */
static bool nothing_huge(const char *who, const char *path, pid_t pid, unsigned long addr)
{
	long nr = -1, huge = -1, pmd = pmd_blocks(pid, addr);
	struct stat st;

	if (!stat(path, &st)) {
		nr = st.st_size / ROTHP_PMD_SIZE;
		huge = rothp_cache_huge(path, 0, nr, NULL);
	}
	ksft_print_msg("%s: %ld of %ld blocks huge in the page cache, %ld PMD-mapped\n", who,
		       huge, nr, pmd);
	return huge == 0 && pmd == 0;
}

/*
 * After a call on the 2 MiB-aligned mapping at p of len bytes from file
 * offset 0 that must hint it: every block PMD-mapped, at once or within
 * ROTHP_HINT_MS.
 */
static bool hinted(const char *who, const void *p, size_t len)
{
	struct rothp_hint_wait hw;

	rothp_hint_wait(getpid(), (unsigned long)p, len / ROTHP_PMD_SIZE, ROTHP_HINT_MS, &hw);
	rothp_hint_print(who, &hw);
	return rothp_hint_done(&hw);
}

/* Map the first len bytes of fd MAP_SHARED, r-x, 2 MiB-aligned, or exit failing. */
static char *map_shared_text(int fd, size_t len)
{
	char *p = rothp_map_checked(fd, len, PROT_READ);

	/* That found a free aligned range; map the file there again, shared. */
	if (mmap(p, len, PROT_READ | PROT_EXEC, MAP_SHARED | MAP_FIXED, fd, 0) == MAP_FAILED)
		ksft_exit_fail_msg("mmap shared r-x: %s\n", strerror(errno));
	return p;
}

static const char *const busy_results[] = {
	"MADV_HUGEPAGE of the text returns 0",
	"every eligible block PMD-mapped when it returns, while khugepaged is busy",
	TEXTPROC_FINISH_RESULTS,
};

/* busy's second result on a kernel without prompt collapse, in its place. */
static const char *const busy_base_results[] = {
	"baseline 6.12: %ld of %ld blocks huge after %d s, as khugepaged is busy",
};

static const struct rothp_case busy_base = ROTHP_CASE("busy", busy_base_results);

/* a: the neighbour is registered; madvise the text. */
static void test_busy(const struct rothp_case *c)
{
	struct rothp_hint_wait hint;
	struct rothp_huge_wait hw;
	struct textproc tp;
	double t0, secs;
	int pre, rc;

	pre = start_text(&tp, "busy");
	if (!skip) {
		rc = textproc_hint(&tp, "busy", &hint);
		rothp_report(c, 0, NULL, rc == 0);
		rothp_report(c, 1, NULL,
			     !pre && hint.eligible >= MIN_BLOCKS && rothp_hint_done(&hint));
		textproc_finish_case(c, &tp);
		return;
	}
	rc = textproc_hugepage(&tp, "busy", &t0);
	rothp_report(c, 0, NULL, rc == 0);
	secs = textproc_wait_huge(&tp, t0, PERCENT, BUSY_MS, POLL_MS, &hw);
	ksft_print_msg("busy: %ld of %ld blocks PMD-mapped after %.2f s (%d polls)%s\n",
		       hw.blocks, hw.eligible, secs >= 0 ? secs : BUSY_MS / 1000.0, hw.polls,
		       hw.run_failed ? ", then a run failed" : "");
	/* 6.12: the neighbour's 128 PMDs take 16 passes, 160 s, first. */
	rothp_report(&busy_base, 0, NULL,
		     !pre && secs < 0 && !hw.run_failed && hw.eligible >= MIN_BLOCKS,
		     hw.blocks, hw.eligible, BUSY_MS / 1000);
	textproc_finish_case(c, &tp);
}

/* All skipped on a kernel that lacks prompt collapse. */
static const char *const off_results[] = {
	"prompt_collapse=0 reads back 0",
	"MADV_HUGEPAGE returns 0, no block huge or PMD-mapped after it",
	"text not collapsed while khugepaged is busy, as in 6.12",
	"prompt_collapse=1 reads back 1",
	"MADV_HUGEPAGE again, VM_HUGEPAGE already set: returns 0, maps nothing",
	"MADV_NOHUGEPAGE, then MADV_HUGEPAGE: every eligible block PMD-mapped when it returns",
	TEXTPROC_FINISH_RESULTS,
};

/* b: prompt_collapse=0 with the neighbour still registered. */
static void test_off(const struct rothp_case *c)
{
	struct rothp_hint_wait hint;
	struct rothp_huge_wait hw;
	struct textproc tp;
	long on = -1;
	double t0, secs;
	int pre, rc, i;

	if (skip) {
		for (i = 0; i < c->nr; i++)
			rothp_report(c, i, skip, false);
		return;
	}
	rc = rothp_prompt_set(0);
	rothp_prompt_read(&on);
	rothp_report(c, 0, NULL, !rc && on == 0);

	pre = start_text(&tp, "off");
	rc = textproc_hugepage(&tp, "off", &t0);
	rothp_report(c, 1, NULL, !rc && nothing_huge("off", prog, tp.pid, tp.start));

	secs = textproc_wait_huge(&tp, t0, PERCENT, OFF_MS, POLL_MS, &hw);
	ksft_print_msg("off: %ld of %ld blocks PMD-mapped after %.2f s\n", hw.blocks, hw.eligible,
		       secs >= 0 ? secs : OFF_MS / 1000.0);
	rothp_report(c, 2, NULL, !pre && secs < 0 && !hw.run_failed && hw.eligible >= MIN_BLOCKS);

	rc = rothp_prompt_set(1);
	on = -1;
	rothp_prompt_read(&on);
	rothp_report(c, 3, NULL, !rc && on == 1);

	/* VM_HUGEPAGE is set already: no hint, so nothing is mapped huge. */
	rc = textproc_hint(&tp, "off: again", &hint);
	rothp_report(c, 4, NULL, !rc && hint.at_once == 0 && hint.blocks == 0);

	rc = textproc_rehint(&tp, "off: after MADV_NOHUGEPAGE", &hint);
	rothp_report(c, 5, NULL, !rc && rothp_hint_done(&hint));
	textproc_finish_case(c, &tp);
}

static const char *const data_results[] = {
	"MADV_HUGEPAGE of a PROT_READ mapping of a file not in the page cache returns 0",
	"it reads nothing of the file in, maps nothing with a PMD",
	"MADV_HUGEPAGE of a MAP_SHARED r-x mapping of that file returns 0",
	"it reads the file in, every block PMD-mapped when it returns",
	"both mappings read as the file",
};

/* c: what a non-executable mapping gets, with an executable one to compare. */
static void test_data(const struct rothp_case *c)
{
	char copy[PATH_MAX];
	long nblk, before = -1, resident = -1, huge, pmd;
	uint64_t hash = 0;
	struct stat st;
	size_t len;
	bool ok;
	char *p, *q;
	int fd, rc, err;

	rothp_scratch_copy_checked(copy, prog, dir, DATA_NAME);
	fd = rothp_open_checked(copy, O_RDONLY);
	if (fstat(fd, &st))
		ksft_exit_fail_msg("%s: %s\n", copy, strerror(errno));
	nblk = st.st_size / ROTHP_PMD_SIZE;
	len = nblk * ROTHP_PMD_SIZE;
	if (rothp_file_hash(fd, 0, len, &hash))
		ksft_exit_fail_msg("cannot read %s: %s\n", copy, strerror(errno));
	/* Written back and dropped: nothing of the copy is cached. */
	if (rothp_drop_caches())
		ksft_exit_fail_msg("drop_caches: %s\n", strerror(errno));
	rothp_cache_huge(copy, 0, nblk, &before);
	ksft_print_msg("data: %ld pages of the copy cached before\n", before);

	p = rothp_map_checked(fd, len, PROT_READ);
	rc = madvise(p, len, MADV_HUGEPAGE);
	err = rc ? errno : 0;
	if (rc)
		ksft_print_msg("data: MADV_HUGEPAGE: %s\n", strerror(err));
	rothp_report(c, 0, NULL, !rc);
	resident = -1;
	huge = rothp_cache_huge(copy, 0, nblk, &resident);
	pmd = pmd_blocks(getpid(), (unsigned long)p);
	ksft_print_msg("data: after MADV_HUGEPAGE of the PROT_READ mapping: %ld pages cached, %ld blocks huge, %ld PMD-mapped\n",
		       resident, huge, pmd);
	rothp_report(c, 1, NULL, before == 0 && resident == 0 && huge == 0 && pmd == 0);

	q = map_shared_text(fd, len);
	rc = madvise(q, len, MADV_HUGEPAGE);
	err = rc ? errno : 0;
	if (rc)
		ksft_print_msg("data: MADV_HUGEPAGE of the r-x mapping: %s\n", strerror(err));
	rothp_report(c, 2, NULL, !rc);
	ok = !skip && hinted("data: MAP_SHARED r-x", q, len);
	huge = rothp_cache_huge(copy, 0, nblk, &resident);
	ksft_print_msg("data: after MADV_HUGEPAGE of the r-x mapping: %ld pages cached, %ld of %ld blocks huge\n",
		       resident, huge, nblk);
	rothp_report(c, 3, skip, ok && huge == nblk);

	ok = rothp_hash(p, len) == hash && rothp_hash(q, len) == hash;
	rothp_report(c, 4, NULL, ok);
	munmap(q, len);
	munmap(p, len);
	close(fd);
	rothp_scratch_remove(copy);
}

static const char *const never_results[] = {
	"THP enabled=never: MADV_HUGEPAGE returns 0, no block huge or PMD-mapped after it",
	"enabled=madvise: MADV_NOHUGEPAGE, then MADV_HUGEPAGE, PMD-map every eligible block",
	TEXTPROC_FINISH_RESULTS,
};

/* d: THP enabled=never. */
static void test_never(const struct rothp_case *c)
{
	struct rothp_hint_wait hint = { 0 };
	struct textproc tp;
	int rc;

	start_text(&tp, "never");
	rothp_thp_set_checked("enabled", "never");
	rc = textproc_hugepage(&tp, "never", NULL);
	rothp_report(c, 0, NULL, !rc && nothing_huge("never", prog, tp.pid, tp.start));

	rothp_thp_set_checked("enabled", "madvise");
	rc = skip ? -1 : textproc_rehint(&tp, "never: back at madvise", &hint);
	rothp_report(c, 1, skip, !rc && rothp_hint_done(&hint));
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
 * e: open a copy of textprog O_RDWR, then madvise an r-x mapping of it:
 * read-only file THP does not apply to a file open for write, so the hint
 * leaves every block as it is, and the fault path and khugepaged leave
 * them too (6.12 alike) while the writer holds it.
 */
static const char *const write_results[] = {
	"open(O_RDWR), then MADV_HUGEPAGE of an r-x mapping, succeed",
	"no block of the file huge or PMD-mapped while it is open for write",
	"the mapping and the file hold the original bytes",
	"every stub of the mapping returns its index",
	"writer gone: MADV_NOHUGEPAGE, then MADV_HUGEPAGE, PMD-map every block",
};

static void test_write(const struct rothp_case *c)
{
	char copy[PATH_MAX];
	uint64_t hash0 = 0, hash_file = 1, hash_mem;
	long nstubs, bad, nblk;
	off_t stub_off = 0;
	struct stat st;
	int fd, wfd, rc;
	bool none_now, none_held, ok;
	size_t len;
	char *p;

	rothp_scratch_copy_checked(copy, prog, dir, WRITE_NAME);
	fd = rothp_open_checked(copy, O_RDONLY);
	if (fstat(fd, &st))
		ksft_exit_fail_msg("%s: %s\n", copy, strerror(errno));
	nstubs = rothp_find_stubs(fd, &stub_off);
	if (nstubs < MIN_BLOCKS * (long)(ROTHP_PMD_SIZE / ROTHP_STUB_SIZE) ||
	    rothp_file_hash(fd, stub_off, nstubs * ROTHP_STUB_SIZE, &hash0))
		ksft_exit_fail_msg("%s: %ld stubs found\n", copy, nstubs);
	/* Those reads may have left large folios (XFS): small ones instead. */
	rothp_fresh_cache_checked(copy);
	nblk = st.st_size / ROTHP_PMD_SIZE;
	len = nblk * ROTHP_PMD_SIZE;
	p = rothp_map_text(fd, len);
	rothp_touch(p, len, ROTHP_PAGE_SIZE);

	wfd = open(copy, O_RDWR);
	rc = madvise(p, len, MADV_HUGEPAGE);
	if (wfd < 0 || rc)
		ksft_print_msg("write: open fd %d (%s), madvise rc %d (%s)\n", wfd,
			       wfd < 0 ? strerror(errno) : "ok", rc, rc ? strerror(errno) : "ok");
	rothp_report(c, 0, NULL, !rc && wfd >= 0);
	none_now = nothing_huge("write: after madvise", copy, getpid(), (unsigned long)p);

	/* A while later, faulted again: still nothing (the periodic scan neither). */
	usleep(HELD_MS * 1000);
	rothp_touch(p, len, ROTHP_PAGE_SIZE);
	none_held = nothing_huge("write: held", copy, getpid(), (unsigned long)p);
	rothp_report(c, 1, NULL, none_now && none_held);

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

	/* Closed: it is read-only file THP again; hint once more. */
	ok = false;
	if (!skip && !madvise(p, len, MADV_NOHUGEPAGE) && !madvise(p, len, MADV_HUGEPAGE))
		ok = hinted("write: after the close", p, len) &&
		     rothp_hash(p + stub_off, nstubs * ROTHP_STUB_SIZE) == hash0;
	rothp_report(c, 4, skip, ok);

	munmap(p, len);
	close(fd);
	rothp_scratch_remove(copy);
}

/*
 * f: each iteration is a new process of two threads. The first maps
 * textprog's whole 2 MiB blocks r-x at a 2 MiB-aligned address, reads a
 * page of each block (page tables), and calls madvise(MADV_HUGEPAGE); the
 * second, on another CPU (rothp_spread()), does its race's call a random
 * moment after the first started madvise(), within the time a hint of
 * small folios takes (hint_secs), spinning until then. The
 * process then checks what both got and exits 0 if all was right, else 1
 * with why in the shared record. Children only ever _exit(): the atexit
 * handlers are ours.
 */
enum race { RACE_MUNMAP, RACE_MREMAP, RACE_MPROTECT, RACE_FORK, RACE_EXIT };

static const char *const race_names[] = { "munmap", "mremap", "mprotect", "fork", "exit" };

/* One iteration, in memory shared with the parent. */
struct race_rec {
	double delay;		/* seconds the second thread waits */
	double t_call;		/* madvise() called */
	double t_ret;		/* ... returned (0 if it never did) */
	double t_op;		/* the second thread's call made */
	int go;			/* set when madvise() is about to be called */
	char why[160];		/* what went wrong */
};

struct race_ctx {
	enum race r;
	int i;
	int fd;
	char *p;		/* the mapping */
	size_t len;
	char *to;		/* mremap: where to */
	struct race_rec *rec;
	long op_rc;
	int op_err;
	char *moved;		/* mremap's result */
	int fork_status;
};

static void *race_thread(void *arg)
{
	struct race_ctx *x = arg;
	struct race_rec *rec = x->rec;
	pid_t pid;

	rothp_spread(1);	/* another CPU than the first thread's, if there is one */
	while (!__atomic_load_n(&rec->go, __ATOMIC_ACQUIRE))
		;
	while (rothp_now() < rec->t_call + rec->delay)
		;
	rec->t_op = rothp_now();
	switch (x->r) {
	case RACE_MUNMAP:
		x->op_rc = munmap(x->p, x->len);
		break;
	case RACE_MREMAP:
		x->moved = mremap(x->p, x->len, x->len, MREMAP_MAYMOVE | MREMAP_FIXED, x->to);
		x->op_rc = x->moved == MAP_FAILED ? -1 : 0;
		break;
	case RACE_MPROTECT:
		/* Drop exec from one block (splitting the VMA), or from all. */
		if (x->i % 2)
			x->op_rc = mprotect(x->p + 2 * ROTHP_PMD_SIZE, ROTHP_PMD_SIZE, PROT_READ);
		else
			x->op_rc = mprotect(x->p, x->len, PROT_READ);
		break;
	case RACE_FORK:
		pid = fork();
		if (!pid)
			_exit(rothp_hash(x->p, x->len) == prog_hash ? 0 : 1);
		x->op_rc = pid < 0 ? -1 : 0;
		if (pid > 0 && waitpid(pid, &x->fork_status, 0) != pid)
			x->op_rc = -1;
		break;
	case RACE_EXIT:
		_exit(0);
	}
	x->op_err = x->op_rc ? errno : 0;
	return NULL;
}

#define race_fail(rec, ...) do {					\
	snprintf((rec)->why, sizeof((rec)->why), __VA_ARGS__);		\
	_exit(1);							\
} while (0)

static void race_child(enum race r, int i, int fd, size_t len, struct race_rec *rec)
{
	struct race_ctx x = { .r = r, .i = i, .fd = fd, .len = len, .rec = rec };
	size_t span = len + 2 * ROTHP_PMD_SIZE;
	pthread_t th;
	int rc, err;
	char *res;

	x.p = rothp_map_aligned(fd, len, 0, 0, PROT_READ | PROT_EXEC);
	if (x.p == MAP_FAILED)
		race_fail(rec, "mmap: %s", strerror(errno));
	rothp_touch(x.p, len, ROTHP_PMD_SIZE);
	if (r == RACE_MREMAP) {
		/* To another aligned place, or 4 KiB off one. */
		res = mmap(NULL, span, PROT_NONE, MAP_PRIVATE | MAP_ANONYMOUS | MAP_NORESERVE,
			   -1, 0);
		if (res == MAP_FAILED)
			race_fail(rec, "mmap: %s", strerror(errno));
		x.to = (char *)ROTHP_ALIGN_UP((unsigned long)res, ROTHP_PMD_SIZE) +
		       (i % 2) * ROTHP_PAGE_SIZE;
	}
	/* Pinned once the thread is there: it starts with the whole mask. */
	rc = pthread_create(&th, NULL, race_thread, &x);
	if (rc)
		race_fail(rec, "pthread_create: %s", strerror(rc));
	rothp_spread(0);
	rec->t_call = rothp_now();
	__atomic_store_n(&rec->go, 1, __ATOMIC_RELEASE);
	rc = madvise(x.p, len, MADV_HUGEPAGE);
	err = rc ? errno : 0;
	rec->t_ret = rothp_now();
	pthread_join(th, NULL);

	/* The range was gone if the unmap or the move came first: ENOMEM. */
	if (rc && !((r == RACE_MUNMAP || r == RACE_MREMAP) && err == ENOMEM))
		race_fail(rec, "madvise: %s", strerror(err));
	if (x.op_rc)
		race_fail(rec, "%s: %s", race_names[r], strerror(x.op_err));
	switch (r) {
	case RACE_MUNMAP:
	case RACE_EXIT:
		break;
	case RACE_MREMAP:
		if (rothp_hash(x.moved, len) != prog_hash)
			race_fail(rec, "the moved mapping does not read as the file");
		break;
	case RACE_MPROTECT:
		if (rothp_hash(x.p, len) != prog_hash)
			race_fail(rec, "the mapping does not read as the file");
		break;
	case RACE_FORK:
		if (!WIFEXITED(x.fork_status) || WEXITSTATUS(x.fork_status))
			race_fail(rec, "the forked child did not read the file (status %#x)",
				  x.fork_status);
		if (rothp_hash(x.p, len) != prog_hash)
			race_fail(rec, "the mapping does not read as the file");
		break;
	}
	_exit(0);
}

/* Did the second thread's call come while madvise() was running? */
static bool race_inside(const struct race_rec *rec)
{
	return rec->t_op >= rec->t_call && (!rec->t_ret || rec->t_op < rec->t_ret);
}

/*
 * Does a new textprog get its text PMD-mapped by madvise()? The last two
 * results of c.
 */
static void check_fresh(const struct rothp_case *c)
{
	const char *who = c->name;
	struct rothp_hint_wait hint;
	struct textproc tp;
	bool sum_ok, run_ok;
	int pre, rc;

	pre = start_text(&tp, who);
	if (skip) {
		rc = textproc_hugepage(&tp, who, NULL);
		rothp_report(c, c->nr - 2, skip, false);
	} else {
		rc = textproc_hint(&tp, who, &hint);
		rothp_report(c, c->nr - 2, NULL, !pre && !rc && rothp_hint_done(&hint));
	}
	textproc_sum_and_run(&tp, who, &sum_ok, &run_ok);
	if (textproc_stop(&tp)) {
		ksft_print_msg("%s: the fresh textprog did not exit cleanly\n", who);
		run_ok = false;
	}
	rothp_report(c, c->nr - 1, NULL, !rc && sum_ok && run_ok);
}

/* Each race's, named "race <its name>". */
static const char *const race_results[] = {
	"every iteration's calls return what they should, its mappings read as the file",
	"the other thread's call came during madvise() in some iterations",
	"a fresh textprog's text PMD-mapped when madvise returns",
	"a fresh textprog's text matches its file and runs",
};

static void test_race(enum race r, int fd, size_t len, uint64_t *seed)
{
	char who[32];
	const struct rothp_case c = ROTHP_CASE(who, race_results);
	struct race_rec *rec;
	int i, bad = 0, inside = 0;
	double t0;
	pid_t pid;

	snprintf(who, sizeof(who), "race %s", race_names[r]);
	rec = mmap(NULL, sizeof(*rec), PROT_READ | PROT_WRITE, MAP_SHARED | MAP_ANONYMOUS, -1, 0);
	if (rec == MAP_FAILED)
		ksft_exit_fail_msg("mmap: %s\n", strerror(errno));
	t0 = rothp_now();
	for (i = 0; i < RACE_ITERS && rothp_now() - t0 < RACE_MS / 1000.0; i++) {
		if (!(i % REWARM_EVERY))
			rothp_fresh_cache_checked(prog);
		memset(rec, 0, sizeof(*rec));
		rec->delay = hint_secs * (rothp_rand64(seed) % 1000) / 1000.0;
		pid = rothp_fork_checked();
		if (!pid)
			race_child(r, i, fd, len, rec);
		if (rothp_child_wait(pid, RACE_CHILD_MS, bad < RACE_SAID ? who : NULL, NULL)) {
			if (bad < RACE_SAID)
				ksft_print_msg("%s: iteration %d: %s\n", who, i,
					       rec->why[0] ? rec->why : "(no reason recorded)");
			bad++;
		}
		inside += race_inside(rec);
	}
	ksft_print_msg("%s: %d iterations in %.1f s, %d with an error; the call came during madvise() in %d\n",
		       who, i, rothp_now() - t0, bad, inside);
	munmap(rec, sizeof(*rec));
	rothp_report(&c, 0, NULL, !bad && i > 0);
	rothp_report(&c, 1, skip, inside > 0);
	check_fresh(&c);
}

/*
 * How long a hint of textprog's text from small folios takes, timed in
 * this process: the span the races aim the second thread's call at.
 */
static void calibrate(int fd, size_t len)
{
	double t0;
	char *p;
	int rc;

	rothp_fresh_cache_checked(prog);
	p = rothp_map_text(fd, len);
	rothp_touch(p, len, ROTHP_PMD_SIZE);
	t0 = rothp_now();
	rc = madvise(p, len, MADV_HUGEPAGE);
	hint_secs = rothp_now() - t0;
	ksft_print_msg("races: madvise(MADV_HUGEPAGE) of %zu MiB of small folios took %.4f s (rc %d), FilePmdMapped %ld kB\n",
		       len >> 20, hint_secs, rc,
		       rothp_file_pmd_mapped(getpid(), (unsigned long)p) / 1024);
	munmap(p, len);
}

/* g: a process that madvises and exits at once. */
static const char *const exited_results[] = {
	"a child maps textprog, madvises it and exits at once, with status 0",
	"every block of textprog huge in the page cache as soon as it is reaped",
};

static void test_exited(const struct rothp_case *c, int fd, size_t len)
{
	long huge, blocks = len / ROTHP_PMD_SIZE;
	pid_t pid;
	char *p;
	int rc;

	rothp_fresh_cache_checked(prog);
	pid = rothp_fork_checked();
	if (!pid) {
		p = rothp_map_aligned(fd, len, 0, 0, PROT_READ | PROT_EXEC);
		_exit(p == MAP_FAILED || madvise(p, len, MADV_HUGEPAGE));
	}
	rc = rothp_child_wait(pid, -1, "exited", NULL);
	huge = rothp_cache_huge(prog, 0, blocks, NULL);
	ksft_print_msg("exited: %ld of %ld blocks of textprog huge in the page cache\n", huge,
		       blocks);
	rothp_report(c, 0, NULL, !rc);
	rothp_report(c, 1, skip, !rc && huge == blocks);
}

/*
 * h: a child maps BIG_NAME r-x, writes 's' on out, madvises it, writes
 * 'd', and waits for EOF on in to exit.
 */
static void big_child(int fd, size_t len, int out, int in)
{
	char c = 's', *p;

	p = rothp_map_aligned(fd, len, 0, 0, PROT_READ | PROT_EXEC);
	if (p == MAP_FAILED || write(out, &c, 1) != 1)
		_exit(1);
	if (madvise(p, len, MADV_HUGEPAGE))
		_exit(2);
	c = 'd';
	if (write(out, &c, 1) != 1)
		_exit(3);
	while (read(in, &c, 1) < 0 && errno == EINTR)
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

/* What one run of big_child() gave. */
struct big_run {
	pid_t pid;
	int out, in;		/* our ends of its pipes */
	double start;		/* it wrote 's' */
};

static void big_start(struct big_run *b, int fd, size_t len)
{
	int out[2], in[2];
	char c;

	if (pipe(out) || pipe(in))
		ksft_exit_fail_msg("pipe: %s\n", strerror(errno));
	b->pid = rothp_fork_checked();
	if (!b->pid) {
		close(out[0]);
		close(in[1]);
		big_child(fd, len, out[1], in[0]);
	}
	close(out[1]);
	close(in[0]);
	b->out = out[0];
	b->in = in[1];
	if (read_byte(b->out, &c, BIG_MS) || c != 's')
		ksft_exit_fail_msg("signal: the child did not map %s\n", BIG_NAME);
	b->start = rothp_now();
}

static const char *const signal_results[] = {
	"uninterrupted, madvise() of a large file returns with every block of it huge",
	"a child SIGKILLed while its madvise() hints that file dies of SIGKILL",
	"the hint stopped there: not every block of the file huge",
	"the child is gone well before the rest of the hint would have taken",
};

static void test_signal(const struct rothp_case *c)
{
	char big[PATH_MAX], d, why[PATH_MAX + 64];
	double full, aim, t_kill, gone;
	long nblk, huge_full, huge;
	const char *no = skip, *after = NULL;
	struct big_run b;
	struct stat st;
	int fd, status = 0, i;
	bool died;
	size_t len;

	snprintf(big, sizeof(big), "%s/%s", dir, BIG_NAME);
	if (!no && access(big, R_OK)) {
		snprintf(why, sizeof(why), "no %s: %s", big, strerror(errno));
		no = why;
	}
	if (no) {
		for (i = 0; i < c->nr; i++)
			rothp_report(c, i, no, false);
		return;
	}
	fd = rothp_open_checked(big, O_RDONLY);
	if (fstat(fd, &st))
		ksft_exit_fail_msg("%s: %s\n", big, strerror(errno));
	nblk = st.st_size / ROTHP_PMD_SIZE;
	len = nblk * ROTHP_PMD_SIZE;

	/* The whole hint, from an empty page cache. */
	if (rothp_drop_caches())
		ksft_exit_fail_msg("drop_caches: %s\n", strerror(errno));
	big_start(&b, fd, len);
	if (read_byte(b.out, &d, BIG_MS) || d != 'd')
		ksft_exit_fail_msg("signal: the child's madvise() did not return in %d s\n",
				   BIG_MS / 1000);
	full = rothp_now() - b.start;
	close(b.in);
	close(b.out);
	rothp_child_wait(b.pid, -1, "signal", NULL);
	huge_full = rothp_cache_huge(big, 0, nblk, NULL);
	ksft_print_msg("signal: a hint of %ld blocks of %s took %.2f s, %ld of them huge after it\n",
		       nblk, BIG_NAME, full, huge_full);
	rothp_report(c, 0, NULL, huge_full == nblk);
	if (huge_full != nblk)
		after = "the uninterrupted hint did not make every block huge either";

	/* Again, killed a quarter of the way in. */
	if (rothp_drop_caches())
		ksft_exit_fail_msg("drop_caches: %s\n", strerror(errno));
	aim = full / 4;
	big_start(&b, fd, len);
	usleep((useconds_t)(aim * 1e6));
	t_kill = rothp_now();
	kill(b.pid, SIGKILL);
	while (waitpid(b.pid, &status, 0) < 0 && errno == EINTR)
		;
	gone = rothp_now() - t_kill;
	died = WIFSIGNALED(status) && WTERMSIG(status) == SIGKILL;
	/* 'd' in the pipe: madvise() had returned before the kill. */
	if (!read_byte(b.out, &d, 0) && d == 'd')
		after = "the hint was over before the kill came";
	close(b.in);
	close(b.out);
	huge = rothp_cache_huge(big, 0, nblk, NULL);
	ksft_print_msg("signal: killed %.2f s into the hint, gone %.3f s later (%s), %ld of %ld blocks huge\n",
		       t_kill - b.start, gone, died ? "SIGKILL" : "not by SIGKILL", huge, nblk);
	rothp_report(c, 1, NULL, died);
	rothp_report(c, 2, after, huge >= 0 && huge < nblk);
	rothp_report(c, 3, after, gone < (full - aim) / 2);
	close(fd);
}

/* The parts but the races, in the order main() runs them. */
enum part { BUSY, OFF, DATA, NEVER, WRITE, EXITED, SIGNAL };

static const struct rothp_case cases[] = {
	[BUSY] = ROTHP_CASE("busy", busy_results),
	[OFF] = ROTHP_CASE("off", off_results),
	[DATA] = ROTHP_CASE("data", data_results),
	[NEVER] = ROTHP_CASE("never", never_results),
	[WRITE] = ROTHP_CASE("write", write_results),
	[EXITED] = ROTHP_CASE("exited", exited_results),
	[SIGNAL] = ROTHP_CASE("signal", signal_results),
};

int main(int argc, char **argv)
{
	struct rothp_neighbour nb;
	uint64_t seed;
	struct stat st;
	long blocks;
	size_t r, len;
	int fd;

	dir = rothp_test_init(argc, argv, prog, sizeof(prog));
	ksft_set_plan(rothp_cases_plan(cases, ARRAY_SIZE(cases)) +
		      ARRAY_SIZE(race_names) * ARRAY_SIZE(race_results));
	skip = rothp_prompt_skip();
	ksft_print_msg("%s\n", skip ? skip : "kernel has prompt_collapse");

	if (rothp_thp_save())
		ksft_exit_fail_msg("cannot save THP settings\n");
	/* Before the neighbour: a write to scan_sleep_millisecs wakes khugepaged. */
	rothp_prompt_setup_checked(skip);
	ksft_print_msg("THP enabled=madvise, khugepaged defaults: 4096 pages a pass, 10 s sleeps\n");

	fd = open(prog, O_RDONLY);
	if (fd < 0 || fstat(fd, &st))
		ksft_exit_fail_msg("%s: %s\n", prog, strerror(errno));
	blocks = st.st_size / ROTHP_PMD_SIZE;
	if (blocks < MIN_BLOCKS)
		ksft_exit_fail_msg("%s: only %ld whole 2 MiB blocks\n", prog, blocks);
	len = blocks * ROTHP_PMD_SIZE;
	if (rothp_file_hash(fd, 0, len, &prog_hash))
		ksft_exit_fail_msg("cannot read %s: %s\n", prog, strerror(errno));

	if (rothp_neighbour_start(&nb, NEIGHBOUR_MIB))
		ksft_exit_fail_msg("cannot start a %d MiB neighbour\n", NEIGHBOUR_MIB);
	test_busy(&cases[BUSY]);
	test_off(&cases[OFF]);
	rothp_neighbour_stop(&nb);

	test_data(&cases[DATA]);
	test_never(&cases[NEVER]);
	test_write(&cases[WRITE]);
	calibrate(fd, len);
	seed = (uint64_t)getpid() ^ (uint64_t)(rothp_now() * 1e6);
	for (r = 0; r < ARRAY_SIZE(race_names); r++)
		test_race(r, fd, len, &seed);
	test_exited(&cases[EXITED], fd, len);
	test_signal(&cases[SIGNAL]);

	close(fd);
	rothp_thp_restore();
	ksft_finished();
}
