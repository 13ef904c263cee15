// SPDX-License-Identifier: GPL-2.0
/*
 * write_support <dir>: writing to a file whose page cache holds, or held,
 * read-only file THPs never loses or corrupts data, and running code mapped
 * from it keeps running. Each part works on its own copy of textprog in
 * <dir>, removed at the end, and checks the contents against a model of
 * what the file must hold, by hashes.
 *
 *  a. running: a child runs the stubs of a collapsed, mapped copy while the
 *     parent opens the file for write, changes one stub's return value with
 *     pwrite() and closes it. The child only ever sees a stub's index or, for
 *     that stub, the new value; after fsync the mapping collapses again.
 *  b. write-fsync, write-nosync, mmap-shared: new contents written with
 *     write(2) (then fsync, or not) or through a MAP_SHARED mapping (then
 *     fsync), then MADV_COLLAPSE, then a reopen for write: pread() and the
 *     disk give what was written. Without fsync 6.12 refuses to collapse the
 *     dirty file (collapse_file() in mm/khugepaged.c: SCAN_FAIL, EINVAL);
 *     EAGAIN or success are accepted as long as no data is lost.
 *  c. after-collapse: writes through a MAP_SHARED mapping, truncate down and
 *     up, a punched hole and an O_DIRECT write read back as they must.
 *  d. race: one child collapses its mapping of the file in a loop, one opens
 *     the file for write and closes it in a loop, one reads it and checks its
 *     hash; the file never reads differently. On a kernel without the
 *     series (no thp_file_split_on_write) it skips, saying why: 6.12.118's
 *     collapse_file() takes invalidate_lock with folios locked, and the
 *     open for write truncating a file with THPs holds it exclusively and
 *     waits for them (patches 2 and 3 fix it). A baseline arm64 run hung
 *     there, the opener, a reader and the collapser in D state.
 *  e. recollapse: after a pwrite() into a collapsed copy opened for write
 *     changed one byte (6.12 dropped the copy's THPs at the open, the
 *     series splits the one THP written to), khugepaged, not MADV_COLLAPSE,
 *     PMD-maps the whole file again once the writer closed it.
 *
 * On 6.12 the write open truncates the page cache of an ext4 file with THPs;
 * with the series a THP is split where a write reaches it (see
 * write_open.c). Both must pass all of this; the series' vmstat counters are
 * only printed.
 *
 * Each part's results are named in its table below: the plan is their sum.
 */
#define _GNU_SOURCE
#include <errno.h>
#include <fcntl.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>
#include <sys/mman.h>
#include <sys/stat.h>
#include <sys/wait.h>

#include "kselftest.h"
#include "rothp_util.h"

/* Stub K's new value differs from K in its top byte only: no torn value. */
#define NEW_TAG			0x5a000000u
#define MAX_REPORTS		16
#define WAIT_MS			(60 * 1000)
#define CHILD_TIMEOUT_MS	(120 * 1000)

/* Part c: what is written, cut and punched. */
#define SHARED_STRIDE		(64UL << 10)
#define SHARED_LEN		256
#define CUT_LEN			(3UL << 20)
#define PUNCH_OFF		(2UL << 20)
#define PUNCH_LEN		(2UL << 20)
#define DIO_OFF			((4UL << 20) + (64UL << 10))
#define DIO_LEN			(64UL << 10)

/* Part d: each loop stops after this many passes or this many seconds. */
#define RACE_PASSES		40
#define RACE_SECONDS		60

/* Part e: how long khugepaged gets, and how often the mapping is looked at. */
#define RECOLLAPSE_TIMEOUT_MS	(60 * 1000)
#define RECOLLAPSE_INTERVAL_MS	200

typedef int (*stub_fn)(void);

static char prog[PATH_MAX];
static const char *dir;
/* textprog's contents, and how a difference from them is said */
static struct rothp_orig orig = { .say_written = false };

static size_t text_len(void)
{
	return ROTHP_ALIGN_DOWN(orig.size, ROTHP_PMD_SIZE);
}

static void *shared_page_or_die(void)
{
	void *p = mmap(NULL, ROTHP_PAGE_SIZE, PROT_READ | PROT_WRITE,
		       MAP_SHARED | MAP_ANONYMOUS, -1, 0);

	if (p == MAP_FAILED)
		ksft_exit_fail_msg("mmap: %s\n", strerror(errno));
	return p;
}

static void print_counters(const char *who, const long *before)
{
	long split, drop;

	if (rothp_vmstat(ROTHP_VM_SPLIT_ON_WRITE, &split) ||
	    rothp_vmstat(ROTHP_VM_DROP_ON_WRITE, &drop))
		return;
	ksft_print_msg("%s: %s +%ld, %s +%ld\n", who, ROTHP_VM_SPLIT_ON_WRITE, split - before[0],
		       ROTHP_VM_DROP_ON_WRITE, drop - before[1]);
}

static void read_counters(long *c)
{
	c[0] = c[1] = 0;
	if (!rothp_vmstat(ROTHP_VM_SPLIT_ON_WRITE, &c[0]))
		rothp_vmstat(ROTHP_VM_DROP_ON_WRITE, &c[1]);
}

/* a. Running text. */

/* Shared between the parent and the child running the stubs. */
struct run_state {
	long passes;		/* passes over every stub done */
	long saw_new;		/* calls of stub K that returned the new value */
	long stop;		/* set by the parent */
};

/* What the child reports through the pipe: a wrong value, or (stub -1) its end. */
struct stub_report {
	int32_t stub;
	uint32_t value;		/* the value returned; for the end, the wrong ones */
	long passes;
};

static stub_fn stub_at(char *p, off_t blob, long i)
{
	return (stub_fn)(uintptr_t)(p + blob + i * ROTHP_STUB_SIZE);
}

/*
 * The child: call every stub until told to stop; report wrong values. Stub k
 * may return k or its new value, but not k again once it returned the new
 * one: that would be the write lost.
 */
static void run_stubs(char *p, off_t blob, long nstubs, long k, struct run_state *rs, int out)
{
	struct stub_report r;
	uint32_t v, bad = 0;
	bool seen_new = false;
	long i;

	while (!rothp_shared_get(&rs->stop)) {
		for (i = 0; i < nstubs; i++) {
			v = (uint32_t)stub_at(p, blob, i)();
			if (v == (uint32_t)i && !(i == k && seen_new))
				continue;
			if (i == k && v == ((uint32_t)k | NEW_TAG)) {
				seen_new = true;
				rothp_shared_add(&rs->saw_new, 1);
				continue;
			}
			if (bad++ < MAX_REPORTS) {
				r.stub = i;
				r.value = v;
				r.passes = rothp_shared_get(&rs->passes);
				if (write(out, &r, sizeof(r)) != sizeof(r))
					_exit(2);
			}
		}
		rothp_shared_add(&rs->passes, 1);
	}
	r.stub = -1;
	r.value = bad;
	r.passes = rothp_shared_get(&rs->passes);
	if (write(out, &r, sizeof(r)) != sizeof(r))
		_exit(2);
	_exit(bad ? 1 : 0);
}

struct passes_arg {
	struct run_state *rs;
	long passes, saw_new;
};

static bool passes_reached(void *arg)
{
	struct passes_arg *a = arg;

	return rothp_shared_get(&a->rs->passes) >= a->passes &&
	       rothp_shared_get(&a->rs->saw_new) >= a->saw_new;
}

/* Wait until the child did that many passes and saw the new value that often. */
static bool wait_passes(struct run_state *rs, long passes, long saw_new)
{
	struct passes_arg a = { .rs = rs, .passes = passes, .saw_new = saw_new };

	return rothp_wait_until(passes_reached, &a, WAIT_MS, 10) >= 0;
}

/* Read the child's reports; true if it ended and saw no wrong value. */
static bool read_reports(int in)
{
	struct stub_report r;
	bool ended = false;
	long wrong = 0;

	while (read(in, &r, sizeof(r)) == sizeof(r)) {
		if (r.stub < 0) {
			ksft_print_msg("running: child did %ld passes, %u wrong values\n", r.passes,
				       r.value);
			ended = true;
			wrong += r.value;
			continue;
		}
		ksft_print_msg("running: stub %d returned %#x in pass %ld\n", r.stub, r.value,
			       r.passes);
	}
	if (!ended)
		ksft_print_msg("running: the child's end report is missing\n");
	return ended && !wrong;
}

/* Call stub k through p in a new child: its return value, or -1. */
static int64_t stub_in_new_child(char *p, off_t blob, long k)
{
	uint32_t v;
	int pfd[2], ok;
	pid_t pid;

	if (pipe(pfd))
		ksft_exit_fail_msg("pipe: %s\n", strerror(errno));
	pid = rothp_fork_checked();
	if (!pid) {
		close(pfd[0]);
		v = (uint32_t)stub_at(p, blob, k)();
		_exit(write(pfd[1], &v, sizeof(v)) == sizeof(v) ? 0 : 1);
	}
	close(pfd[1]);
	ok = read(pfd[0], &v, sizeof(v)) == sizeof(v);
	close(pfd[0]);
	if (rothp_child_wait(pid, CHILD_TIMEOUT_MS, "running: new child", NULL) || !ok)
		return -1;
	return v;
}

static const char *const running_results[] = {
	"MADV_COLLAPSE PMD-maps the copy's text",
	"open(O_RDWR) and pwrite() into the running text",
	"the child runs the new stub %ld after the pwrite",
	"the child is alive and running after the close",
	"MADV_COLLAPSE after close and fsync returns 0",
	"the text is PMD-mapped again after MADV_COLLAPSE",
	"the child never saw a wrong stub value",
	"the child exits with status 0",
	"stub %ld returns the new value in a new child",
	"pread gives the new stub %ld and the rest unchanged",
};

static void test_running(const struct rothp_case *c)
{
	char path[PATH_MAX], *p, *model;
	struct run_state *rs;
	long nstubs, k, pmd, passes, counters[2];
	uint32_t newval;
	int64_t fresh;
	off_t blob = 0, imm_off;
	size_t len = text_len();
	bool wrote, seen, alive, clean;
	int fd, wfd, rc, err, pfd[2];
	pid_t pid;

	rothp_scratch_copy_checked(path, prog, dir, "ws_running.copy");
	model = rothp_model_new(&orig);
	fd = rothp_open_checked(path, O_RDONLY);
	p = rothp_map_text(fd, len);
	nstubs = rothp_find_stubs(fd, &blob);
	if (nstubs > 0 && (size_t)blob + nstubs * ROTHP_STUB_SIZE > len)
		nstubs = blob < (off_t)len ? (len - blob) / ROTHP_STUB_SIZE : 0;
	if (nstubs < 2)
		ksft_exit_fail_msg("%s: no stubs found in its first %zu MiB\n", path, len >> 20);
	/* A stub inside a 2 MiB block, not at its start. */
	k = nstubs / 2 + 3;
	if (k >= nstubs)
		k = nstubs - 1;
	newval = (uint32_t)k | NEW_TAG;
	imm_off = blob + k * ROTHP_STUB_SIZE + ROTHP_STUB_IMM;
	memcpy(model + imm_off, &newval, sizeof(newval));
	ksft_print_msg("running: %ld stubs at %#llx of %s; stub %ld will return %#x\n", nstubs,
		       (unsigned long long)blob, path, k, newval);

	rc = rothp_collapse_mapping("running", p, len, &err, &pmd);
	rothp_report(c, 0, NULL, !rc && pmd == (long)len);

	rs = shared_page_or_die();
	if (pipe(pfd))
		ksft_exit_fail_msg("pipe: %s\n", strerror(errno));
	pid = rothp_fork_checked();
	if (!pid) {
		close(pfd[0]);
		run_stubs(p, blob, nstubs, k, rs, pfd[1]);
	}
	close(pfd[1]);
	if (!wait_passes(rs, 1, 0))
		ksft_print_msg("running: the child did no pass in %d s\n", WAIT_MS / 1000);

	/* The write open, while the child runs the text. */
	read_counters(counters);
	wfd = open(path, O_RDWR);
	if (wfd < 0)
		ksft_print_msg("running: open(O_RDWR): %s\n", strerror(errno));
	wrote = wfd >= 0 && pwrite(wfd, &newval, sizeof(newval), imm_off) == sizeof(newval);
	if (wfd >= 0 && !wrote)
		ksft_print_msg("running: pwrite: %s\n", strerror(errno));
	print_counters("running: open(O_RDWR)", counters);
	rothp_report(c, 1, NULL, wrote);

	seen = wrote && wait_passes(rs, 0, 1);
	ksft_print_msg("running: child at pass %ld, stub %ld returned the new value %ld times\n",
		       rothp_shared_get(&rs->passes), k, rothp_shared_get(&rs->saw_new));
	rothp_report(c, 2, NULL, seen, k);
	if (wfd >= 0 && close(wfd))
		ksft_print_msg("running: close: %s\n", strerror(errno));

	passes = rothp_shared_get(&rs->passes);
	alive = wait_passes(rs, passes + 2, 0) && !waitpid(pid, NULL, WNOHANG);
	rothp_report(c, 3, NULL, alive);

	/* The last writer is gone: once clean, the text collapses again. */
	if (fsync(fd))
		ksft_print_msg("running: fsync: %s\n", strerror(errno));
	rc = rothp_collapse_mapping("running, after close and fsync", p, len, &err, &pmd);
	rothp_report(c, 4, NULL, !rc);
	rothp_report(c, 5, NULL, pmd == (long)len);

	rothp_shared_set(&rs->stop, 1);
	rc = rothp_child_wait(pid, CHILD_TIMEOUT_MS, "running: child", NULL);
	clean = read_reports(pfd[0]);
	close(pfd[0]);
	rothp_report(c, 6, NULL, clean);
	rothp_report(c, 7, NULL, !rc);

	fresh = stub_in_new_child(p, blob, k);
	ksft_print_msg("running: stub %ld returns %#llx in a new child\n", k,
		       (unsigned long long)fresh);
	rothp_report(c, 8, NULL, fresh == newval, k);
	rothp_report(c, 9, NULL, rothp_file_is(&orig, fd, model, orig.size, "running"), k);

	munmap((void *)rs, ROTHP_PAGE_SIZE);
	munmap(p, len);
	close(fd);
	free(model);
	rothp_scratch_remove(path);
}

/* b. New contents, written, collapsed, reopened for write. */

enum write_way {
	WRITE_FSYNC,		/* write(2), close, fsync */
	WRITE_NO_FSYNC,		/* write(2), close */
	WRITE_SHARED,		/* MAP_SHARED mapping, munmap, close, fsync */
};

/* Without fsync the file is dirty: its first result says what is accepted. */
static const char *const fsync_results[] = {
	"MADV_COLLAPSE after fsync returns 0",
	"the r-x mapping reads what was written",
	"pread after reopening O_RDWR reads what was written",
	"the disk holds what was written",
};

static const char *const nosync_results[] = {
	"MADV_COLLAPSE without fsync: 0, EINVAL or EAGAIN",
	"the r-x mapping reads what was written",
	"pread after reopening O_RDWR reads what was written",
	"the disk holds what was written",
};

static void test_written(const struct rothp_case *c, enum write_way way)
{
	const char *who = c->name;
	char path[PATH_MAX], *p, *s, *model;
	size_t i, len = text_len();
	int fd, wfd, rc, err;
	long pmd;

	rothp_scratch_copy_checked(path, prog, dir, "ws_%s.copy", who);
	/* New contents: every byte differs from textprog's. */
	model = rothp_model_new(&orig);
	for (i = 0; i < orig.size; i++)
		model[i] ^= 0x5a + way;

	wfd = rothp_open_checked(path, O_RDWR);
	if (way == WRITE_SHARED) {
		s = mmap(NULL, orig.size, PROT_READ | PROT_WRITE, MAP_SHARED, wfd, 0);
		if (s == MAP_FAILED)
			ksft_exit_fail_msg("%s: mmap: %s\n", who, strerror(errno));
		memcpy(s, model, orig.size);
		munmap(s, orig.size);
	} else if (rothp_write_all(wfd, model, orig.size, 0)) {
		ksft_exit_fail_msg("%s: write: %s\n", who, strerror(errno));
	}
	if (close(wfd))
		ksft_exit_fail_msg("%s: close: %s\n", who, strerror(errno));

	fd = rothp_open_checked(path, O_RDONLY);
	if (way != WRITE_NO_FSYNC && fsync(fd))
		ksft_print_msg("%s: fsync: %s\n", who, strerror(errno));
	p = rothp_map_text(fd, len);
	rc = rothp_collapse_mapping(who, p, len, &err, &pmd);
	if (way == WRITE_NO_FSYNC)
		/* Dirty: SCAN_FAIL (EINVAL), or EAGAIN; success if written back meanwhile. */
		rothp_report(c, 0, NULL, !rc || err == EINVAL || err == EAGAIN);
	else
		rothp_report(c, 0, NULL, !rc);
	rothp_report(c, 1, NULL, rothp_map_is(&orig, p, model, len, who));

	wfd = rothp_open_checked(path, O_RDWR);
	rothp_report(c, 2, NULL, rothp_file_is(&orig, wfd, model, orig.size, who));
	close(wfd);

	/* And from the disk. */
	munmap(p, len);
	rothp_report(c, 3, NULL, rothp_disk_is(&orig, fd, model, orig.size, who));
	close(fd);
	free(model);
	rothp_scratch_remove(path);
}

/* c. Writes, truncation, hole punching and direct I/O after collapse. */
static const char *const after_results[] = {
	"MADV_COLLAPSE PMD-maps the copy",
	"writes through a shared mapping read back after msync",
	"the r-x private mapping sees the shared writes",
	"truncate down 3 MiB and back reads zeros past the cut",
	"a punched 2 MiB hole reads zeros",
	"the r-x private mapping reads the cut and the hole as zeros",
	"MADV_COLLAPSE after the writer closed and fsync returns 0",
	"an O_DIRECT pwrite reads back with O_DIRECT",
	"pread and the mapping read the O_DIRECT write",
	"the disk holds the expected contents",
};

static void test_after_collapse(const struct rothp_case *c)
{
	const char *who = c->name;
	char path[PATH_MAX], skip[128], *p, *s, *model, *dbuf = NULL;
	size_t off, len = text_len(), cut = orig.size - CUT_LEN;
	int fd, wfd, dfd, rc, err;
	bool ok;
	long pmd;

	if (orig.size < CUT_LEN + PUNCH_OFF + PUNCH_LEN || DIO_OFF + DIO_LEN > len)
		ksft_exit_fail_msg("%s is too small: %zu bytes\n", prog, orig.size);
	rothp_scratch_copy_checked(path, prog, dir, "ws_after.copy");
	model = rothp_model_new(&orig);
	fd = rothp_open_checked(path, O_RDONLY);
	p = rothp_map_text(fd, len);
	rc = rothp_collapse_mapping(who, p, len, &err, &pmd);
	rothp_report(c, 0, NULL, !rc && pmd == (long)len);

	/* A little in every 64 KiB, through a shared mapping. */
	wfd = rothp_open_checked(path, O_RDWR);
	s = mmap(NULL, orig.size, PROT_READ | PROT_WRITE, MAP_SHARED, wfd, 0);
	if (s == MAP_FAILED)
		ksft_exit_fail_msg("%s: mmap shared: %s\n", who, strerror(errno));
	for (off = 0; off + SHARED_STRIDE <= orig.size; off += SHARED_STRIDE) {
		memset(s + off + 64, 0xa5 ^ (off >> 16), SHARED_LEN);
		memset(model + off + 64, 0xa5 ^ (off >> 16), SHARED_LEN);
	}
	ok = !msync(s, orig.size, MS_SYNC);
	if (!ok)
		ksft_print_msg("%s: msync: %s\n", who, strerror(errno));
	ok = rothp_file_is(&orig, wfd, model, orig.size, "after-collapse, shared writes") && ok;
	rothp_report(c, 1, NULL, ok);
	munmap(s, orig.size);
	rothp_report(c, 2, NULL, rothp_map_is(&orig, p, model, len, who));

	/* Cut 3 MiB off and extend back: zeros. */
	ok = !ftruncate(wfd, cut) && !ftruncate(wfd, orig.size);
	if (!ok)
		ksft_print_msg("%s: ftruncate: %s\n", who, strerror(errno));
	memset(model + cut, 0, CUT_LEN);
	ok = rothp_file_is(&orig, wfd, model, orig.size, "after-collapse, truncate") && ok;
	rothp_report(c, 3, NULL, ok);

	/* Punch 2 MiB out of what was a THP. */
	rc = fallocate(wfd, FALLOC_FL_PUNCH_HOLE | FALLOC_FL_KEEP_SIZE, PUNCH_OFF, PUNCH_LEN);
	err = rc ? errno : 0;
	if (!rc)
		memset(model + PUNCH_OFF, 0, PUNCH_LEN);
	else
		ksft_print_msg("%s: fallocate(PUNCH_HOLE): %s\n", who, strerror(err));
	snprintf(skip, sizeof(skip), "fallocate(PUNCH_HOLE): %s", strerror(err));
	rothp_report(c, 4, err == EOPNOTSUPP ? skip : NULL,
		     !rc && rothp_file_is(&orig, wfd, model, orig.size, "after-collapse, punch"));
	rothp_report(c, 5, NULL, rothp_map_is(&orig, p, model, len, who));
	if (close(wfd))
		ksft_print_msg("%s: close: %s\n", who, strerror(errno));

	/* Collapse again, then write with O_DIRECT. */
	if (fsync(fd))
		ksft_print_msg("%s: fsync: %s\n", who, strerror(errno));
	rc = rothp_collapse_mapping("after-collapse, again", p, len, &err, &pmd);
	rothp_report(c, 6, NULL, !rc);
	dfd = open(path, O_RDWR | O_DIRECT);
	err = dfd < 0 ? errno : 0;
	snprintf(skip, sizeof(skip), "open(O_DIRECT): EINVAL: no direct I/O here");
	if (dfd < 0 && err != EINVAL)
		ksft_print_msg("%s: open(O_DIRECT): %s\n", who, strerror(err));
	ok = false;
	if (dfd >= 0 && !posix_memalign((void **)&dbuf, ROTHP_PAGE_SIZE, DIO_LEN)) {
		memset(dbuf, 0x3c, DIO_LEN);
		memcpy(model + DIO_OFF, dbuf, DIO_LEN);
		ok = pwrite(dfd, dbuf, DIO_LEN, DIO_OFF) == DIO_LEN;
		if (!ok)
			ksft_print_msg("%s: O_DIRECT pwrite: %s\n", who, strerror(errno));
		memset(dbuf, 0, DIO_LEN);
		if (ok && pread(dfd, dbuf, DIO_LEN, DIO_OFF) != DIO_LEN) {
			ksft_print_msg("%s: O_DIRECT pread: %s\n", who, strerror(errno));
			ok = false;
		}
		ok = ok && !memcmp(dbuf, model + DIO_OFF, DIO_LEN);
	}
	rothp_report(c, 7, err == EINVAL ? skip : NULL, ok);
	rothp_report(c, 8, err == EINVAL ? skip : NULL,
		     ok && rothp_file_is(&orig, fd, model, orig.size, "after-collapse, O_DIRECT") &&
		     rothp_map_is(&orig, p, model, len, who));
	if (dfd >= 0)
		close(dfd);
	free(dbuf);

	munmap(p, len);
	rothp_report(c, 9, NULL, rothp_disk_is(&orig, fd, model, orig.size, who));
	close(fd);
	free(model);
	rothp_scratch_remove(path);
}

/* d. Collapse, write opens and reads racing. */

struct race_stats {
	long collapses, collapsed, einval, eagain, other;
	long opens, open_fail;
	long reads, read_bad;
	long stop;
};

static bool race_over(long passes, double deadline)
{
	return passes >= RACE_PASSES || rothp_now() >= deadline;
}

static void race_collapser(const char *path, struct race_stats *st, double deadline)
{
	size_t len = text_len();
	int fd = open(path, O_RDONLY);
	char *p;

	if (fd < 0)
		_exit(2);
	p = rothp_map_aligned(fd, len, 0, 0, PROT_READ | PROT_EXEC);
	if (p == MAP_FAILED)
		_exit(2);
	/*
	 * One 2 MiB block a pass: a call over the whole file would nearly
	 * always meet one of the opener's opens and fail.
	 */
	while (!race_over(st->collapses, deadline)) {
		size_t off = (st->collapses % (len / ROTHP_PMD_SIZE)) * ROTHP_PMD_SIZE;

		st->collapses++;
		if (!madvise(p + off, ROTHP_PMD_SIZE, MADV_COLLAPSE))
			st->collapsed++;
		else if (errno == EINVAL)
			st->einval++;
		else if (errno == EAGAIN)
			st->eagain++;
		else
			st->other++;
	}
	/* What it maps must still be the file. */
	_exit(rothp_hash(p, len) == rothp_hash(orig.buf, len) ? 0 : 1);
}

static void race_opener(const char *path, struct race_stats *st, double deadline)
{
	int fd;

	/* Until the others are done: they may take longer per pass. */
	while (!rothp_shared_get(&st->stop) && rothp_now() < deadline) {
		st->opens++;
		fd = open(path, O_RDWR);
		if (fd < 0)
			st->open_fail++;
		else
			close(fd);
		usleep(20 * 1000);
	}
	_exit(st->open_fail ? 1 : 0);
}

static void race_reader(const char *path, struct race_stats *st, double deadline)
{
	uint64_t want = rothp_hash(orig.buf, orig.size), hash;
	int fd = open(path, O_RDONLY);

	if (fd < 0)
		_exit(2);
	while (!race_over(st->reads, deadline)) {
		st->reads++;
		if (rothp_file_hash(fd, 0, orig.size, &hash) || hash != want)
			st->read_bad++;
	}
	_exit(st->read_bad ? 1 : 0);
}

static const char *const race_results[] = {
	"the reader always read the original contents",
	"collapser, opener and reader exit with status 0",
	"the file is unchanged, in the cache and on disk",
};

static void test_race(const struct rothp_case *c)
{
	char path[PATH_MAX];
	struct race_stats *st;
	double start, deadline;
	int fd, rc_c, rc_o, rc_r;
	pid_t collapser, opener, reader;
	bool same;
	long v;
	int i;

	if (rothp_vmstat(ROTHP_VM_SPLIT_ON_WRITE, &v)) {
		for (i = 0; i < c->nr; i++)
			rothp_report(c, i, ROTHP_DEADLOCK_612, false);
		return;
	}
	rothp_scratch_copy_checked(path, prog, dir, "ws_race.copy");
	st = shared_page_or_die();
	start = rothp_now();
	deadline = start + RACE_SECONDS;

	/* Each on its own CPU where there are three, else round-robin. */
	collapser = rothp_fork_checked();
	if (!collapser) {
		rothp_spread(0);
		race_collapser(path, st, deadline);
	}
	opener = rothp_fork_checked();
	if (!opener) {
		rothp_spread(1);
		race_opener(path, st, deadline);
	}
	reader = rothp_fork_checked();
	if (!reader) {
		rothp_spread(2);
		race_reader(path, st, deadline);
	}
	ksft_print_msg("race: collapser, opener and reader spread over %d CPUs\n", rothp_nr_cpus());

	rc_c = rothp_child_wait(collapser, RACE_SECONDS * 1000L + CHILD_TIMEOUT_MS,
				"race: collapser", NULL);
	rc_r = rothp_child_wait(reader, RACE_SECONDS * 1000L + CHILD_TIMEOUT_MS, "race: reader",
				NULL);
	rothp_shared_set(&st->stop, 1);
	rc_o = rothp_child_wait(opener, CHILD_TIMEOUT_MS, "race: opener", NULL);
	ksft_print_msg("race: %.1f s; collapser %ld passes (%ld ok, %ld EINVAL, %ld EAGAIN, %ld other)\n",
		       rothp_now() - start, st->collapses, st->collapsed, st->einval, st->eagain,
		       st->other);
	ksft_print_msg("race: opener %ld opens (%ld failed), reader %ld passes (%ld wrong)\n",
		       st->opens, st->open_fail, st->reads, st->read_bad);

	rothp_report(c, 0, NULL, st->reads > 0 && !st->read_bad);
	rothp_report(c, 1, NULL, !rc_c && !rc_o && !rc_r);

	fd = rothp_open_checked(path, O_RDONLY);
	same = rothp_file_is(&orig, fd, orig.buf, orig.size, "race");
	same = rothp_disk_is(&orig, fd, orig.buf, orig.size, "race") && same;
	rothp_report(c, 2, NULL, same);
	close(fd);
	munmap(st, ROTHP_PAGE_SIZE);
	rothp_scratch_remove(path);
}

/* e. khugepaged collapses the file again after the writer closed it. */

struct refault_state {
	const char *p;
	size_t len;
	long pmd;	/* last FilePmdMapped, bytes */
	int polls;
};

/*
 * Read every page of the mapping: after khugepaged's collapse_file() retracts
 * the page tables, the next fault maps the new THP with a PMD.
 */
static bool refaulted_pmd_mapped(void *arg)
{
	struct refault_state *st = arg;
	size_t off;

	st->polls++;
	for (off = 0; off < st->len; off += ROTHP_PAGE_SIZE)
		(void)__atomic_load_n(st->p + off, __ATOMIC_RELAXED);
	st->pmd = rothp_file_pmd_mapped(getpid(), (unsigned long)st->p);
	return st->pmd == (long)st->len;
}

/*
 * No feature check is needed: on 6.12 the write open drops the page cache of
 * an ext4 file with THPs (do_dentry_open()), with the series the pwrite()
 * splits the THP it reaches; either way at least one block is left in small
 * folios that khugepaged must collapse again once no writer holds it
 * (file_thp_enabled() wants !inode_is_open_for_write()). On XFS, with large
 * folios, nothing is split nor dropped (filemap_nr_thps() stays 0), so the
 * mapping stays, or at the refault gets, PMD-mapped and the check still
 * holds.
 */
static const char *const recollapse_results[] = {
	"khugepaged PMD-maps the file again after the writer closed it",
	"the mapping shows the written byte",
};

static void test_recollapse(const struct rothp_case *c)
{
	const char *who = c->name;
	/* The top byte of a stub's immediate: stub k then returns k | NEW_TAG. */
	const unsigned char tag = NEW_TAG >> 24;
	struct refault_state st = { .len = text_len() };
	char path[PATH_MAX], enabled[64], *p, *model;
	long nstubs, k, pmd, ms = -1, counters[2];
	off_t blob = 0, tag_off;
	bool collapsed, wrote, byte_ok;
	int fd, wfd, rc, err;

	rothp_scratch_copy_checked(path, prog, dir, "ws_recollapse.copy");
	model = rothp_model_new(&orig);
	fd = rothp_open_checked(path, O_RDONLY);
	p = rothp_map_text(fd, st.len);
	st.p = p;
	nstubs = rothp_find_stubs(fd, &blob);
	k = nstubs / 2;
	tag_off = blob + k * ROTHP_STUB_SIZE + ROTHP_STUB_IMM + 3;
	if (nstubs < 1 || tag_off >= (off_t)st.len)
		ksft_exit_fail_msg("%s: no stubs found in its first %zu MiB\n", path,
				   st.len >> 20);
	model[tag_off] = tag;
	ksft_print_msg("%s: stub %ld at %#llx of %s gets byte %#x at %#llx\n", who, k,
		       (unsigned long long)(blob + k * ROTHP_STUB_SIZE), path, tag,
		       (unsigned long long)tag_off);

	rc = rothp_collapse_mapping(who, p, st.len, &err, &pmd);
	collapsed = !rc && pmd == (long)st.len;
	if (!collapsed)
		ksft_print_msg("%s: MADV_COLLAPSE did not PMD-map the copy to start with\n", who);

	/* One writer changes a byte: 6.12 dropped the THPs, the series splits one. */
	read_counters(counters);
	wfd = open(path, O_RDWR);
	if (wfd < 0)
		ksft_print_msg("%s: open(O_RDWR): %s\n", who, strerror(errno));
	wrote = wfd >= 0 && pwrite(wfd, &tag, 1, tag_off) == 1;
	if (wfd >= 0 && !wrote)
		ksft_print_msg("%s: pwrite: %s\n", who, strerror(errno));
	if (wfd >= 0 && close(wfd)) {
		ksft_print_msg("%s: close: %s\n", who, strerror(errno));
		wrote = false;
	}
	print_counters("recollapse: open(O_RDWR)", counters);
	/* khugepaged does not collapse dirty pages (collapse_file(): SCAN_FAIL). */
	if (fsync(fd))
		ksft_print_msg("%s: fsync: %s\n", who, strerror(errno));
	ksft_print_msg("%s: after the close and fsync, FilePmdMapped %ld of %zu kB\n", who,
		       rothp_file_pmd_mapped(getpid(), (unsigned long)p) / 1024, st.len >> 10);

	if (rothp_thp_save())
		ksft_exit_fail_msg("%s: cannot save THP settings\n", who);
	if (rothp_thp_set_str("enabled", "madvise") || rothp_thp_khugepaged_fast())
		ksft_exit_fail_msg("%s: cannot set THP settings\n", who);
	rothp_thp_read_str("enabled", enabled, sizeof(enabled));
	ksft_print_msg("%s: THP enabled=%s, khugepaged scan/alloc sleep 100 ms\n", who, enabled);

	/* Only registers the mm with khugepaged: no collapse by this process. */
	if (madvise(p, st.len, MADV_HUGEPAGE))
		ksft_print_msg("%s: MADV_HUGEPAGE: %s\n", who, strerror(errno));
	else
		ms = rothp_wait_until(refaulted_pmd_mapped, &st, RECOLLAPSE_TIMEOUT_MS,
				      RECOLLAPSE_INTERVAL_MS);
	if (ms >= 0)
		ksft_print_msg("%s: all of the mapping PMD-mapped after %.1f s (%d polls)\n", who,
			       ms / 1000.0, st.polls);
	else
		ksft_print_msg("%s: FilePmdMapped %ld of %zu kB after %d polls\n", who,
			       st.pmd / 1024, st.len >> 10, st.polls);
	rothp_thp_restore();
	rothp_report(c, 0, NULL, collapsed && wrote && ms >= 0);

	byte_ok = (unsigned char)p[tag_off] == tag;
	if (!byte_ok)
		ksft_print_msg("%s: the mapping has %#x at %#llx, expected %#x\n", who,
			       (unsigned char)p[tag_off], (unsigned long long)tag_off, tag);
	rothp_report(c, 1, NULL, rothp_map_is(&orig, p, model, st.len, who) && byte_ok);

	munmap(p, st.len);
	close(fd);
	free(model);
	rothp_scratch_remove(path);
}

/* The parts, in the order main() runs them. */
enum part { RUNNING, FSYNC, NO_FSYNC, SHARED, AFTER, RACE, RECOLLAPSE };

static const struct rothp_case cases[] = {
	[RUNNING] = ROTHP_CASE("running", running_results),
	[FSYNC] = ROTHP_CASE("write-fsync", fsync_results),
	[NO_FSYNC] = ROTHP_CASE("write-nosync", nosync_results),
	[SHARED] = ROTHP_CASE("mmap-shared", fsync_results),
	[AFTER] = ROTHP_CASE("after-collapse", after_results),
	[RACE] = ROTHP_CASE("race", race_results),
	[RECOLLAPSE] = ROTHP_CASE("recollapse", recollapse_results),
};

int main(int argc, char **argv)
{
	const char *fs;
	long val;
	int large;

	dir = rothp_test_init(argc, argv, prog, sizeof(prog));
	ksft_set_plan(rothp_cases_plan(cases, ARRAY_SIZE(cases)));
	fs = rothp_fs_name(dir, &large);
	ksft_print_msg("%s, %s: %s\n", fs,
		       large > 0 ? "large folios" : large ? "large folios unknown" : "no large folios",
		       rothp_vmstat(ROTHP_VM_SPLIT_ON_WRITE, &val) ? ROTHP_NO_SPLIT_ON_WRITE :
		       "kernel has " ROTHP_VM_SPLIT_ON_WRITE);
	/* The whole of textprog, the model every copy starts from. */
	rothp_orig_read(&orig, prog, 2 * ROTHP_PMD_SIZE);

	test_running(&cases[RUNNING]);
	test_written(&cases[FSYNC], WRITE_FSYNC);
	test_written(&cases[NO_FSYNC], WRITE_NO_FSYNC);
	test_written(&cases[SHARED], WRITE_SHARED);
	test_after_collapse(&cases[AFTER]);
	test_race(&cases[RACE]);
	test_recollapse(&cases[RECOLLAPSE]);

	free(orig.buf);
	ksft_finished();
}
