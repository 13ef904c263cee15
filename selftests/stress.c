// SPDX-License-Identifier: GPL-2.0
/*
 * stress <dir> [seconds]: forked workers hammer copies of textprog in <dir>
 * with everything that makes, maps, splits, writes and drops read-only
 * file THPs, all at once, for <seconds> (default 60), and every reader
 * checks what it reads against the contents the file must hold.
 *
 * Files, each a copy of textprog:
 *   shared  read, mapped, collapsed and written by most workers. Each of
 *           its 2 MiB blocks is in version A (textprog's bytes) or B (A with
 *           byte VERSION_BYTE of each 4 KiB stub page, in the padding
 *           after the stub (int3, or arm64's BRK), inverted). A block's
 *           state word in shared memory holds a generation, a busy bit and
 *           its version, seqlock-style: a reader that saw the same idle
 *           state before and after its read must find exactly that version
 *           (a lost or stale write fails); one that raced a change of the
 *           block must find A or B in each byte, or 0 where a punched hole
 *           was not refilled yet.
 *   exec    exec'd (textprog run: every stub must return its index), run
 *           as textproc sessions, probed with uprobes; its writer writes
 *           textprog's own bytes back, when ETXTBSY does not stop it.
 *   trunc   truncated and punched, then rewritten, by one worker that
 *           checks every step.
 *
 * Operations, one or two workers each: read (pread of every block,
 * POSIX_FADV_DONTNEED), khugepaged (MADV_HUGEPAGE, then khugepaged or
 * prompt collapse, scan sleep lowered to 100 ms), collapse (MADV_COLLAPSE),
 * write (open for write, write a block's other version with pwrite, single
 * bytes or a shared mapping, or just close; the exec copy's own bytes),
 * punch (a hole in a block of shared, refilled; write and punch pause
 * every other QUIET_SECONDS, so that collapses succeed too), truncate (the trunc copy),
 * mmap (mmap, mprotect, mremap, partial munmap), fork (children check an
 * inherited mapping), exec, uprobe (attach, enable, disable, remove through
 * tracefs), drop (drop_caches), hog (anonymous memory, half of what is
 * available up to 640 MiB, touched and freed) and reclaim (in a memory cgroup with a
 * low memory.high when cgroup2 has the memory controller: reads, collapse
 * and MADV_PAGEOUT).
 *
 * Results: one per operation, "op X ran N iterations, E errors", passing if
 * it ran at least once without an error (an unexpected errno, a failed
 * check); "no mismatches", which also covers a final check of all three
 * files from the disk; every worker exited with status 0; and file THPs
 * were made during the run (a MADV_COLLAPSE that succeeded in any worker,
 * or a PMD mapping seen after MADV_HUGEPAGE). Kernel splats are the
 * harness's to find. The plan is the size of op_name plus that of
 * end_results.
 *
 * On a kernel without the series (no thp_file_split_on_write) it skips,
 * saying why: 6.12.118's collapse_file() takes invalidate_lock with folios
 * locked, and the writers here (open for write of a file with THPs, hole
 * punch, truncate) hold it exclusively while they wait for those folios.
 * Two baseline runs on arm64 hung so (khugepaged and four workers in D
 * state, one in write_race's punch race); patches 2 and 3 fix it.
 */
#define _GNU_SOURCE
#include <errno.h>
#include <fcntl.h>
#include <signal.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>
#include <sys/mman.h>
#include <sys/mount.h>
#include <sys/stat.h>
#include <sys/wait.h>

#include "kselftest.h"
#include "rothp_util.h"

#define DEFAULT_SECONDS		60
/* How long the workers get to finish after the deadline. */
#define GRACE_SECONDS		300
#define PROGRESS_SECONDS	120
/*
 * Long enough for a whole collapse attempt (open, map, touch 27 MiB,
 * MADV_COLLAPSE or a 3 s wait for khugepaged) on a loaded debug kernel:
 * with 5 s, late in make check, no attempt fit in a window on ext4.
 */
#define QUIET_SECONDS		10
/* Failures printed per operation; all are counted. */
#define MAX_REPORTS		8
#define MAX_WORKERS		32
#define PMD			ROTHP_PMD_SIZE
#define PAGE			ROTHP_PAGE_SIZE

/*
 * The padding byte of a stub page that version B inverts: in every
 * ROTHP_STUB_SIZE bytes from the first stub, whatever the kernel's page size.
 */
#define VERSION_BYTE		2048

#define UPROBE_EVENTS		ROTHP_TRACEFS "uprobe_events"
#define UPROBE_EVENT		"rothp_stress/s"

#define CGROUP_ROOT		"/sys/fs/cgroup"
#define CGROUP_DIR		CGROUP_ROOT "/rothp_stress"
#define CGROUP_HIGH		"24M"

/* The hog takes half of MemAvailable, at most this much. */
#define HOG_MAX			(640UL << 20)
#define HOG_CHUNK		(32UL << 20)

enum op {
	OP_READ, OP_KHUGEPAGED, OP_COLLAPSE, OP_WRITE, OP_PUNCH, OP_TRUNCATE, OP_MMAP,
	OP_FORK, OP_EXEC, OP_UPROBE, OP_DROP, OP_HOG, OP_RECLAIM, NR_OPS
};

/* One result each, "op <name> ran ...", or "op <name>: <why>" skipped. */
static const char * const op_name[] = {
	"read", "khugepaged", "collapse", "write", "punch", "truncate", "mmap",
	"fork", "exec", "uprobe", "drop", "hog", "reclaim",
};

_Static_assert(ARRAY_SIZE(op_name) == NR_OPS, "an operation without a name");

/* The results after the operations'. */
static const char *const end_results[] = {
	"no mismatches",
	"every worker ran to the end and exited with status 0",
	"file THPs were made during the run",
};

static const struct rothp_case end_case = ROTHP_CASE(NULL, end_results);

/* Workers per operation. */
static const int op_workers[NR_OPS] = {
	[OP_READ] = 2, [OP_KHUGEPAGED] = 1, [OP_COLLAPSE] = 1, [OP_WRITE] = 1,
	[OP_PUNCH] = 1, [OP_TRUNCATE] = 1, [OP_MMAP] = 1, [OP_FORK] = 1,
	[OP_EXEC] = 1, [OP_UPROBE] = 1, [OP_DROP] = 1, [OP_HOG] = 1, [OP_RECLAIM] = 1,
};

struct op_stat {
	long iters;	/* iterations completed */
	long errors;	/* failed checks and unexpected errors */
	long busy;	/* refusals that are allowed: EAGAIN, ETXTBSY, ... */
	long hits;	/* what the operation is after happened: see report() */
	long reports;	/* errors printed */
};

/* A block's state: generation * BLK_GEN + BLK_BUSY while changed + version. */
#define BLK_VER		1UL
#define BLK_BUSY	2UL
#define BLK_GEN		4UL

/* Who may open the exec copy: its writer, or a starting textproc session. */
#define GATE_WRITER	1
#define GATE_EXEC	2

/* In memory shared by the parent and every worker. */
struct shared {
	struct op_stat op[NR_OPS];
	long mismatches;
	long tolerated;		/* reads that raced a change and were plausible */
	long stop;
	long exec_gate;
	unsigned long blk[];
};

static struct shared *sh;
static const char *dir;
static char prog[PATH_MAX], shared_path[PATH_MAX], exec_path[PATH_MAX], trunc_path[PATH_MAX];
static char *model[2];		/* the file in version A and in version B */
static uint64_t *blk_hash[2];	/* hash of each block in either version */
static size_t fsize;
static long nblk;
static off_t stub_off;
static long nstubs;
static double t_start, deadline;
static size_t hog_bytes;
static bool in_memcg;
static const char *uprobe_skip;
static uint64_t rnd_state;

static bool running(void)
{
	return !rothp_shared_get(&sh->stop) && rothp_now() < deadline;
}

/*
 * The writers of the shared file pause QUIET_SECONDS of every 2 *
 * QUIET_SECONDS: with the file open for write, or dirty, nothing collapses.
 */
static bool quiet(void)
{
	if ((long)((rothp_now() - t_start) / QUIET_SECONDS) % 2 == 0)
		return false;
	usleep(100 * 1000);
	return true;
}

/* Seeded per worker. */
static unsigned long rnd(unsigned long n)
{
	return n ? rothp_rand64(&rnd_state) % n : 0;
}

static void sleep_ms(long ms)
{
	usleep(ms * 1000);
}

/* Count an error of operation o; print it the first MAX_REPORTS times. */
#define op_error(o, fmt, ...)						\
	rothp_child_error(&sh->op[o].errors, &sh->op[o].reports, MAX_REPORTS,	\
			  op_name[o], fmt, ##__VA_ARGS__)

static void op_done(enum op op)
{
	rothp_shared_add(&sh->op[op].iters, 1);
}

static void op_busy(enum op op)
{
	rothp_shared_add(&sh->op[op].busy, 1);
}

static void op_hit(enum op op)
{
	rothp_shared_add(&sh->op[op].hits, 1);
}

/* Blocks of the shared file and their states. */

static size_t blk_len(long b)
{
	return rothp_min_size(fsize - b * PMD, PMD);
}

static unsigned long blk_load(long b)
{
	return __atomic_load_n(&sh->blk[b], __ATOMIC_SEQ_CST);
}

/* Take block b for a change, if nobody is changing it; *st its state. */
static bool blk_claim(long b, unsigned long *st)
{
	unsigned long s = blk_load(b);

	if (s & BLK_BUSY)
		return false;
	if (!__atomic_compare_exchange_n(&sh->blk[b], &s, s | BLK_BUSY, false,
					 __ATOMIC_SEQ_CST, __ATOMIC_SEQ_CST))
		return false;
	*st = s;
	return true;
}

/* The change is done: next generation, the block now in version ver. */
static void blk_release(long b, unsigned long st, unsigned long ver)
{
	__atomic_store_n(&sh->blk[b], (st & ~(BLK_GEN - 1)) + BLK_GEN + ver, __ATOMIC_SEQ_CST);
}

/* Every byte is the byte of version A or B there, or 0 (a hole, refilled later). */
static bool plausible(const char *buf, size_t off, size_t len)
{
	size_t i;

	for (i = 0; i < len; i++) {
		if (buf[i] && buf[i] != model[0][off + i] && buf[i] != model[1][off + i])
			return false;
	}
	return true;
}

static bool all_zero(const char *buf, size_t len)
{
	size_t i;

	for (i = 0; i < len && !buf[i]; i++)
		;
	return i == len;
}

/*
 * Report the first byte of buf, len bytes of the shared file from off, that
 * is not in version ver, or (ver < 0) not plausible.
 */
static void report_mismatch(enum op op, const char *buf, size_t off, size_t len, int ver)
{
	size_t i, page;

	rothp_shared_add(&sh->mismatches, 1);
	for (i = 0; i < len; i++) {
		if (ver >= 0 ? buf[i] != model[ver][off + i] :
		    buf[i] && buf[i] != model[0][off + i] && buf[i] != model[1][off + i])
			break;
	}
	if (i == len)
		i = 0;
	page = ROTHP_ALIGN_DOWN(i, PAGE);
	op_error(op, "mismatch at %#zx (%s): %#x, A has %#x, B %#x; that page is %s",
		 off + i, ver < 0 ? "block being changed" : ver ? "block in B" : "block in A",
		 (unsigned char)buf[i], (unsigned char)model[0][off + i],
		 (unsigned char)model[1][off + i],
		 all_zero(buf + page, rothp_min_size(len - page, PAGE)) ? "all zeros" :
		 "not zeros");
}

/*
 * Judge buf: len bytes of the shared file from off, within one block, read
 * between the block state loads s1 and s2. 0 if they are right, else -1,
 * counted and reported.
 */
static int judge(enum op op, const char *buf, size_t off, size_t len, unsigned long s1,
		 unsigned long s2)
{
	long b = off / PMD;
	bool whole = !(off % PMD) && len == blk_len(b);
	uint64_t h = rothp_hash(buf, len), want[2];
	int v;

	for (v = 0; v < 2; v++)
		want[v] = whole ? blk_hash[v][b] : rothp_hash(model[v] + off, len);
	if (s1 == s2 && !(s1 & BLK_BUSY)) {
		v = s1 & BLK_VER;
		if (h == want[v])
			return 0;
		report_mismatch(op, buf, off, len, v);
		return -1;
	}
	if (h == want[0] || h == want[1])
		return 0;
	if (plausible(buf, off, len)) {
		rothp_shared_add(&sh->tolerated, 1);
		return 0;
	}
	report_mismatch(op, buf, off, len, -1);
	return -1;
}

/* pread block b of the shared file into buf (PMD bytes) and judge it. */
static int check_block(enum op op, int fd, long b, char *buf)
{
	unsigned long s1, s2;
	int ret;

	s1 = blk_load(b);
	ret = rothp_pread_full(fd, buf, blk_len(b), b * PMD);
	s2 = blk_load(b);
	if (ret) {
		op_error(op, "pread of block %ld: %s", b, strerror(errno));
		return -1;
	}
	return judge(op, buf, b * PMD, blk_len(b), s1, s2);
}

static int check_file(enum op op, int fd, char *buf)
{
	int ret = 0;
	long b;

	for (b = 0; b < nblk; b++)
		ret |= check_block(op, fd, b, buf);
	return ret;
}

/* Judge len bytes mapped at p from offset off of the shared file; buf: PMD bytes. */
static int check_map(enum op op, const char *p, size_t off, size_t len, char *buf)
{
	unsigned long s1, s2;
	size_t n;
	int ret = 0;

	while (len) {
		n = rothp_min_size(len, ROTHP_ALIGN_DOWN(off, PMD) + PMD - off);
		s1 = blk_load(off / PMD);
		memcpy(buf, p, n);
		s2 = blk_load(off / PMD);
		ret |= judge(op, buf, off, n, s1, s2);
		p += n;
		off += n;
		len -= n;
	}
	return ret;
}

static char *worker_buf(enum op op)
{
	char *buf = malloc(PMD);

	if (!buf) {
		op_error(op, "malloc: %s", strerror(errno));
		_exit(1);
	}
	return buf;
}

static int worker_open(enum op op, const char *path, int flags)
{
	int fd = open(path, flags);

	if (fd < 0) {
		op_error(op, "open %s: %s", path, strerror(errno));
		_exit(1);
	}
	return fd;
}

/*
 * Map the whole shared (or trunc) file r-x at a 2 MiB-aligned address, or
 * end the worker: not rothp_map_text(), whose exit would run the parent's
 * atexit handlers in it.
 */
static char *map_file(enum op op, int fd)
{
	char *p = rothp_map_aligned(fd, ROTHP_ALIGN_UP(fsize, PAGE), 0, 0,
				    PROT_READ | PROT_EXEC);

	if (p == MAP_FAILED) {
		op_error(op, "mmap: %s", strerror(errno));
		_exit(1);
	}
	return p;
}

/* MADV_COLLAPSE: a hit if it collapsed, busy if it may fail so, else an error. */
static void collapse(enum op op, char *p, size_t len)
{
	if (!madvise(p, len, MADV_COLLAPSE)) {
		op_hit(op);
		return;
	}
	switch (errno) {
	case EINVAL:	/* open for write, dirty or under writeback pages */
	case EAGAIN:	/* a page locked or with an extra reference */
	case ENOMEM:	/* no huge page, or no charge, under the hog */
	case EBUSY:
		op_busy(op);
		break;
	default:
		op_error(op, "MADV_COLLAPSE: %s", strerror(errno));
	}
}

/* Workers. Each loops until the deadline and ends with _exit(). */

static void work_read(enum op op)
{
	char *buf = worker_buf(op);
	int fd = worker_open(op, shared_path, O_RDONLY);

	while (running()) {
		check_file(op, fd, buf);
		/* Drops what is not mapped, THPs included. */
		if (!rnd(4) && posix_fadvise(fd, 0, 0, POSIX_FADV_DONTNEED))
			op_error(op, "POSIX_FADV_DONTNEED: %s", strerror(errno));
		op_done(op);
	}
}

/* MADV_HUGEPAGE, then wait up to 3 s for a PMD mapping; hits: seen one. */
static void work_khugepaged(enum op op)
{
	size_t len = ROTHP_ALIGN_UP(fsize, PAGE);
	char *buf = worker_buf(op), *p;
	double until;
	int fd;

	while (running()) {
		fd = worker_open(op, shared_path, O_RDONLY);
		p = map_file(op, fd);
		if (madvise(p, len, MADV_HUGEPAGE))
			op_error(op, "MADV_HUGEPAGE: %s", strerror(errno));
		until = rothp_now() + 3;
		while (rothp_now() < until && running()) {
			rothp_touch(p, len, PAGE);
			if (rothp_file_pmd_mapped(getpid(), (unsigned long)p) > 0) {
				op_hit(op);
				break;
			}
			sleep_ms(200);
		}
		check_map(op, p, 0, fsize, buf);
		munmap(p, len);
		close(fd);
		op_done(op);
	}
}

/* MADV_COLLAPSE of the whole text or of one block; hits: collapses. */
static void work_collapse(enum op op)
{
	size_t len = ROTHP_ALIGN_UP(fsize, PAGE), whole = ROTHP_ALIGN_DOWN(fsize, PMD);
	char *buf = worker_buf(op), *p;
	int fd;

	while (running()) {
		fd = worker_open(op, shared_path, O_RDONLY);
		p = map_file(op, fd);
		rothp_touch(p, len, PAGE);
		if (rnd(2))
			collapse(op, p, whole);
		else
			collapse(op, p + rnd(whole / PMD) * PMD, PMD);
		check_map(op, p, 0, fsize, buf);
		munmap(p, len);
		close(fd);
		op_done(op);
	}
}

/* The exec copy's own bytes written back, if it is not running. */
static void write_exec_copy(enum op op)
{
	long expected = 0, b = rnd(nblk);
	int fd;

	if (!__atomic_compare_exchange_n(&sh->exec_gate, &expected, GATE_WRITER, false,
					 __ATOMIC_SEQ_CST, __ATOMIC_SEQ_CST)) {
		op_busy(op);
		return;
	}
	fd = open(exec_path, O_RDWR);
	if (fd < 0 && errno == ETXTBSY) {
		op_busy(op);
	} else if (fd < 0) {
		op_error(op, "open %s: %s", exec_path, strerror(errno));
	} else {
		if (rothp_pwrite_full(fd, model[0] + b * PMD, blk_len(b), b * PMD))
			op_error(op, "pwrite to the exec copy: %s", strerror(errno));
		if (close(fd))
			op_error(op, "close of the exec copy: %s", strerror(errno));
		op_hit(op);
	}
	__atomic_store_n(&sh->exec_gate, 0, __ATOMIC_SEQ_CST);
}

/*
 * Put block b of fd, open for write, in version ver, one of five ways;
 * the fifth writes nothing and clears *changed.
 */
static int write_block(int fd, long b, int ver, bool *changed)
{
	size_t off = b * PMD, len = blk_len(b), pg;
	char *s;

	switch (rnd(5)) {
	case 0:
		return rothp_pwrite_full(fd, model[ver] + off, len, off);
	case 1:
		if (rothp_pwrite_full(fd, model[ver] + off, len, off))
			return -1;
		return fsync(fd);
	case 2:
		/* Only the bytes that differ: one byte in each stub page. */
		for (pg = 0; pg + VERSION_BYTE < len; pg += ROTHP_STUB_SIZE) {
			if (rothp_pwrite_full(fd, model[ver] + off + pg + VERSION_BYTE, 1,
					      off + pg + VERSION_BYTE))
				return -1;
		}
		return 0;
	case 3:
		s = mmap(NULL, len, PROT_READ | PROT_WRITE, MAP_SHARED, fd, off);
		if (s == MAP_FAILED)
			return -1;
		memcpy(s, model[ver] + off, len);
		if (msync(s, len, MS_SYNC)) {
			munmap(s, len);
			return -1;
		}
		return munmap(s, len);
	default:
		/* Open for write and closed, nothing written. */
		*changed = false;
		return 0;
	}
}

/* Flip a block of the shared file to its other version; hits: blocks flipped. */
static void work_write(enum op op)
{
	unsigned long st, ver;
	bool changed;
	long b;
	int fd;

	while (running()) {
		if (quiet())
			continue;
		if (!rnd(4)) {
			write_exec_copy(op);
			op_done(op);
			continue;
		}
		b = rnd(nblk);
		if (!blk_claim(b, &st)) {
			op_busy(op);
			sleep_ms(10);
			continue;
		}
		ver = !(st & BLK_VER);
		fd = open(shared_path, O_RDWR);
		if (fd < 0) {
			op_error(op, "open for write: %s", strerror(errno));
			blk_release(b, st, st & BLK_VER);
			continue;
		}
		changed = true;
		if (write_block(fd, b, ver, &changed))
			op_error(op, "writing block %ld: %s", b, strerror(errno));
		/* Mostly written back, so that collapses get their chance. */
		if (changed && rnd(4) && fsync(fd))
			op_error(op, "fsync: %s", strerror(errno));
		if (close(fd))
			op_error(op, "close: %s", strerror(errno));
		if (!changed)
			ver = st & BLK_VER;
		blk_release(b, st, ver);
		if (changed)
			op_hit(op);
		op_done(op);
		sleep_ms(rnd(100));
	}
}

/* Punch a hole in a block of the shared file, check it, refill it. */
static void work_punch(enum op op)
{
	char *buf = worker_buf(op);
	unsigned long st;
	size_t pages, po, pl, off;
	long b;
	int fd, ver;

	while (running()) {
		if (quiet())
			continue;
		b = rnd(nblk);
		pages = blk_len(b) / PAGE;
		if (!pages || !blk_claim(b, &st)) {
			op_busy(op);
			sleep_ms(10);
			continue;
		}
		ver = st & BLK_VER;
		po = rnd(pages);
		pl = (1 + rnd(pages - po)) * PAGE;
		off = b * PMD + po * PAGE;
		fd = worker_open(op, shared_path, O_RDWR);
		if (fallocate(fd, FALLOC_FL_PUNCH_HOLE | FALLOC_FL_KEEP_SIZE, off, pl)) {
			op_error(op, "fallocate(PUNCH_HOLE, %#zx, %#zx): %s", off, pl,
				 strerror(errno));
		} else {
			if (rothp_pread_full(fd, buf, rothp_min_size(pl, PMD), off))
				op_error(op, "pread of the hole: %s", strerror(errno));
			else if (!all_zero(buf, pl))
				op_error(op, "the hole at %#zx, %#zx bytes, is not all zeros", off,
					 pl);
			if (rnd(2) && fsync(fd))
				op_error(op, "fsync: %s", strerror(errno));
		}
		if (rothp_pwrite_full(fd, model[ver] + off, pl, off))
			op_error(op, "refilling the hole: %s", strerror(errno));
		else if (rothp_pread_full(fd, buf, pl, off) || memcmp(buf, model[ver] + off, pl))
			op_error(op, "the refilled hole at %#zx does not read back", off);
		if (rnd(4) && fsync(fd))
			op_error(op, "fsync: %s", strerror(errno));
		if (close(fd))
			op_error(op, "close: %s", strerror(errno));
		blk_release(b, st, ver);
		op_done(op);
		sleep_ms(rnd(100));
	}
}

/* Check the trunc copy holds textprog's first len bytes, by fd and through p. */
static void trunc_check(enum op op, int fd, const char *p, size_t len, const char *when)
{
	struct stat s;
	uint64_t h;

	if (fstat(fd, &s) || (size_t)s.st_size != len) {
		op_error(op, "%s: size %lld, expected %zu", when, (long long)s.st_size, len);
		return;
	}
	if (rothp_file_hash(fd, 0, len, &h) || h != rothp_hash(model[0], len))
		op_error(op, "%s: pread does not read textprog's first %zu bytes", when, len);
	if (rothp_hash(p, len) != rothp_hash(model[0], len))
		op_error(op, "%s: the mapping does not read textprog's first %zu bytes", when,
			 len);
	/* The rest of the page at EOF reads zeros through the mapping. */
	if (len % PAGE && !all_zero(p + len, PAGE - len % PAGE))
		op_error(op, "%s: the mapping has non-zero bytes past EOF at %zu", when, len);
}

/* Check [off, off + len) of the trunc copy reads zeros, by fd and through p. */
static void trunc_check_zero(enum op op, int fd, const char *p, size_t off, size_t len,
			     char *buf, const char *when)
{
	size_t n;

	for (; len; off += n, len -= n) {
		n = rothp_min_size(len, PMD);
		if (rothp_pread_full(fd, buf, n, off) || !all_zero(buf, n) || !all_zero(p + off, n)) {
			op_error(op, "%s: %#zx bytes at %#zx do not all read zeros", when, n, off);
			return;
		}
	}
}

/* The trunc copy: collapse, then truncate or punch, check, rewrite, check. */
static void work_truncate(enum op op)
{
	size_t len = ROTHP_ALIGN_UP(fsize, PAGE), cut, off, hl;
	char *buf = worker_buf(op), *p;
	int fd, wfd;

	while (running()) {
		fd = worker_open(op, trunc_path, O_RDONLY);
		p = map_file(op, fd);
		rothp_touch(p, len, PAGE);
		if (rnd(2))
			collapse(op, p, ROTHP_ALIGN_DOWN(fsize, PMD));
		else if (madvise(p, len, MADV_HUGEPAGE))
			op_error(op, "MADV_HUGEPAGE: %s", strerror(errno));
		trunc_check(op, fd, p, fsize, "collapsed");
		wfd = worker_open(op, trunc_path, O_RDWR);
		if (rnd(2)) {
			cut = rnd(fsize);
			if (ftruncate(wfd, cut))
				op_error(op, "ftruncate to %zu: %s", cut, strerror(errno));
			trunc_check(op, fd, p, cut, "truncated");
			if (ftruncate(wfd, fsize))
				op_error(op, "ftruncate to %zu: %s", fsize, strerror(errno));
			trunc_check_zero(op, fd, p, cut, fsize - cut, buf, "extended");
			off = cut;
			hl = fsize - cut;
		} else {
			off = rnd(fsize / PAGE) * PAGE;
			hl = rothp_min_size((1 + rnd(3 * PMD / PAGE)) * PAGE, fsize - off);
			if (fallocate(wfd, FALLOC_FL_PUNCH_HOLE | FALLOC_FL_KEEP_SIZE, off, hl))
				op_error(op, "fallocate(PUNCH_HOLE): %s", strerror(errno));
			trunc_check_zero(op, fd, p, off, hl, buf, "punched");
		}
		if (rothp_pwrite_full(wfd, model[0] + off, hl, off))
			op_error(op, "rewrite: %s", strerror(errno));
		if (close(wfd))
			op_error(op, "close: %s", strerror(errno));
		trunc_check(op, fd, p, fsize, "rewritten");
		munmap(p, len);
		close(fd);
		op_done(op);
	}
}

/* Map a 2 MiB-aligned area of len bytes, plus misalign, PROT_NONE. */
static char *reserve(size_t len, size_t misalign, char **base, size_t *span)
{
	*span = len + misalign + PMD;
	*base = mmap(NULL, *span, PROT_NONE, MAP_PRIVATE | MAP_ANONYMOUS | MAP_NORESERVE,
		     -1, 0);
	if (*base == MAP_FAILED)
		return NULL;
	return (char *)ROTHP_ALIGN_UP((unsigned long)*base, PMD) + misalign;
}

/* mmap, collapse, mprotect, mremap (move and shrink) and munmap of parts. */
static void work_mmap(enum op op)
{
	char *buf = worker_buf(op), *p, *q, *base, *end, *moved;
	size_t off, len, mlen, span, mis, keep;
	long b, nb;
	int fd = worker_open(op, shared_path, O_RDONLY);

	while (running()) {
		b = rnd(nblk);
		nb = 1 + rnd(4);
		if (b + nb > nblk)
			nb = nblk - b;
		off = b * PMD;
		len = rothp_min_size(nb * PMD, fsize - off);
		mlen = ROTHP_ALIGN_UP(len, PAGE);
		mis = rnd(4) ? 0 : (1 + rnd(PMD / PAGE - 1)) * PAGE;
		p = rothp_map_aligned(fd, mlen, off, mis, PROT_READ | PROT_EXEC);
		if (p == MAP_FAILED) {
			op_error(op, "mmap: %s", strerror(errno));
			sleep_ms(100);
			continue;
		}
		rothp_touch(p, mlen, PAGE);
		if (rnd(2))
			collapse(op, p, mlen);
		else if (madvise(p, mlen, MADV_HUGEPAGE))
			op_error(op, "MADV_HUGEPAGE: %s", strerror(errno));
		check_map(op, p, off, len, buf);

		/* Read-only, then exec again in one page: three VMAs. */
		if (mprotect(p, mlen, PROT_READ) ||
		    (mlen > 2 * PAGE && mprotect(p + PAGE, PAGE, PROT_READ | PROT_EXEC)))
			op_error(op, "mprotect: %s", strerror(errno));
		check_map(op, p, off, rothp_min_size(len, PMD), buf);
		if (mprotect(p, mlen, PROT_READ | PROT_EXEC))
			op_error(op, "mprotect: %s", strerror(errno));

		/* Move it to a 2 MiB-aligned address, or a misaligned one. */
		mis = rnd(2) ? 0 : PAGE;
		q = reserve(mlen, mis, &base, &span);
		if (q) {
			moved = mremap(p, mlen, mlen, MREMAP_MAYMOVE | MREMAP_FIXED, q);
			end = q + mlen;
			if (moved == MAP_FAILED) {
				op_error(op, "mremap: %s", strerror(errno));
				end = q;
			} else {
				p = moved;
			}
			if (q > base)
				munmap(base, q - base);
			if (base + span > end)
				munmap(end, base + span - end);
		}
		check_map(op, p, off, len, buf);

		/* Shrink in place, cutting a 2 MiB block, and punch a page out. */
		keep = mlen > PMD + PAGE ? PMD + PAGE * (1 + rnd(PMD / PAGE - 1)) : mlen;
		if (keep < mlen && mremap(p, mlen, keep, 0) == MAP_FAILED) {
			op_error(op, "mremap shrink: %s", strerror(errno));
			keep = mlen;
		}
		if (keep > 3 * PAGE && len > 3 * PAGE && !munmap(p + PAGE, PAGE)) {
			check_map(op, p, off, PAGE, buf);
			check_map(op, p + 2 * PAGE, off + 2 * PAGE,
				  rothp_min_size(len, keep) - 2 * PAGE, buf);
		} else {
			check_map(op, p, off, rothp_min_size(len, keep), buf);
		}
		munmap(p, keep);
		op_done(op);
	}
}

/* Children check a mapping they inherit, some after collapsing it. */
static void work_fork(enum op op)
{
	size_t len = ROTHP_ALIGN_UP(fsize, PAGE), whole = ROTHP_ALIGN_DOWN(fsize, PMD);
	char *buf = worker_buf(op), *p = MAP_FAILED;
	int fd = worker_open(op, shared_path, O_RDONLY), status;
	long i;
	pid_t pid;

	for (i = 0; running(); i++) {
		if (!(i % 8)) {
			if (p != MAP_FAILED)
				munmap(p, len);
			p = map_file(op, fd);
			rothp_touch(p, len, PAGE);
			if (madvise(p, len, MADV_HUGEPAGE))
				op_error(op, "MADV_HUGEPAGE: %s", strerror(errno));
			collapse(op, p + rnd(whole / PMD) * PMD, PMD);
		}
		fflush(NULL);
		pid = fork();
		if (pid < 0) {
			op_error(op, "fork: %s", strerror(errno));
			sleep_ms(100);
			continue;
		}
		if (!pid) {
			if (!rnd(3))
				madvise(p, whole, MADV_COLLAPSE);
			_exit(check_map(op, p, 0, fsize, buf) ? 1 : 0);
		}
		if (waitpid(pid, &status, 0) != pid)
			op_error(op, "waitpid: %s", strerror(errno));
		else if (WIFSIGNALED(status))
			op_error(op, "child killed by signal %d", WTERMSIG(status));
		/* Status 1: the child counted and reported its mismatch. */
		else if (WEXITSTATUS(status) > 1)
			op_error(op, "child exit status %d", WEXITSTATUS(status));
		op_done(op);
	}
}

/* exec the exec copy's "run" with stdout to /dev/null: ETXTBSY is allowed. */
static void exec_run(enum op op)
{
	int status, null;
	pid_t pid;

	fflush(NULL);
	pid = fork();
	if (pid < 0) {
		op_error(op, "fork: %s", strerror(errno));
		return;
	}
	if (!pid) {
		null = open("/dev/null", O_WRONLY);
		if (null >= 0)
			dup2(null, STDOUT_FILENO);
		execl(exec_path, exec_path, "run", (char *)NULL);
		_exit(errno == ETXTBSY ? 126 : 127);
	}
	if (waitpid(pid, &status, 0) != pid)
		op_error(op, "waitpid: %s", strerror(errno));
	else if (WIFEXITED(status) && WEXITSTATUS(status) == 126)
		op_busy(op);
	else if (WIFSIGNALED(status))
		op_error(op, "textprog run killed by signal %d", WTERMSIG(status));
	else if (WEXITSTATUS(status))
		op_error(op, "textprog run exit status %d", WEXITSTATUS(status));
	else
		op_hit(op);
}

/* A textproc session: start with an action, run the stubs a few times. */
static void exec_session(enum op op)
{
	static const char * const actions[] = { "none", "hugepage", "collapse" };
	static const char * const cmds[] = { "hugepage", "collapse" };
	struct textproc tp;
	char reply[128];
	long expected = 0, calls = 0, i, n = 2 + rnd(5);
	int rc;

	if (!__atomic_compare_exchange_n(&sh->exec_gate, &expected, GATE_EXEC, false,
					 __ATOMIC_SEQ_CST, __ATOMIC_SEQ_CST)) {
		op_busy(op);
		return;
	}
	rc = textproc_start(&tp, exec_path, actions[rnd(3)]);
	__atomic_store_n(&sh->exec_gate, 0, __ATOMIC_SEQ_CST);
	if (rc) {
		op_error(op, "cannot start a textprog session");
		return;
	}
	for (i = 0; i < n; i++) {
		rc = textproc_run(&tp, &calls);
		if (rc != 1)
			op_error(op, "session run: reply %d after %ld calls", rc, calls);
		if (i == 1 && textproc_cmd(&tp, cmds[rnd(2)], reply, sizeof(reply)))
			op_error(op, "session: no reply to a madvise command");
		sleep_ms(50 + rnd(200));
	}
	if (textproc_stop(&tp))
		op_error(op, "session: textprog did not exit with status 0");
}

static void work_exec(enum op op)
{
	signal(SIGPIPE, SIG_IGN);
	while (running()) {
		if (!rnd(4))
			exec_session(op);
		else
			exec_run(op);
		op_done(op);
	}
}

/* Attach a uprobe on a random stub of the exec copy, enable, disable, remove. */
static void work_uprobe(enum op op)
{
	unsigned long off;

	while (running()) {
		off = stub_off + rnd(nstubs) * ROTHP_STUB_SIZE;
		if (rothp_uprobe_add(UPROBE_EVENT, exec_path, off, false)) {
			op_error(op, "uprobe at %s:%#lx: %s", exec_path, off, strerror(errno));
			sleep_ms(500);
			continue;
		}
		sleep_ms(50 + rnd(250));
		if (rothp_uprobe_remove(UPROBE_EVENT))
			op_error(op, "disable or remove: %s", strerror(errno));
		op_done(op);
		sleep_ms(rnd(100));
	}
}

static void work_drop(enum op op)
{
	while (running()) {
		sleep_ms(500 + rnd(2000));
		if (rothp_drop_caches())
			op_error(op, "drop_caches: %s", strerror(errno));
		op_done(op);
	}
}

/*
 * Take hog_bytes of anonymous memory, touch every page, free it. An
 * iteration is HOG_CHUNK touched, a hit a whole pass.
 */
static void work_hog(enum op op)
{
	size_t off;
	char *p;

	while (running()) {
		p = mmap(NULL, hog_bytes, PROT_READ | PROT_WRITE,
			 MAP_PRIVATE | MAP_ANONYMOUS | MAP_NORESERVE, -1, 0);
		if (p == MAP_FAILED) {
			op_busy(op);
			sleep_ms(1000);
			continue;
		}
		for (off = 0; off < hog_bytes && running(); off += PAGE) {
			p[off] = 1;
			if (!((off + PAGE) % HOG_CHUNK))
				op_done(op);
		}
		if (off >= hog_bytes) {
			sleep_ms(300);
			op_hit(op);
		}
		munmap(p, hog_bytes);
		sleep_ms(rnd(1000));
	}
}

/* Reads and collapses under memory.high, and MADV_PAGEOUT of the text. */
static void work_reclaim(enum op op)
{
	size_t len = ROTHP_ALIGN_UP(fsize, PAGE), whole = ROTHP_ALIGN_DOWN(fsize, PMD);
	char *buf = worker_buf(op), *p, pid[32];
	int fd;

	if (in_memcg) {
		snprintf(pid, sizeof(pid), "%d", (int)getpid());
		if (rothp_write_file(CGROUP_DIR "/cgroup.procs", pid, 0, false)) {
			op_error(op, "joining " CGROUP_DIR ": %s", strerror(errno));
			_exit(1);
		}
	}
	fd = worker_open(op, shared_path, O_RDONLY);
	while (running()) {
		p = map_file(op, fd);
		rothp_touch(p, len, PAGE);
		collapse(op, p + rnd(whole / PMD) * PMD, PMD);
		check_map(op, p, 0, fsize, buf);
		if (madvise(p, len, MADV_PAGEOUT))
			op_error(op, "MADV_PAGEOUT: %s", strerror(errno));
		check_file(op, fd, buf);
		munmap(p, len);
		op_done(op);
	}
}

static void (* const op_work[NR_OPS])(enum op op) = {
	[OP_READ] = work_read, [OP_KHUGEPAGED] = work_khugepaged,
	[OP_COLLAPSE] = work_collapse, [OP_WRITE] = work_write, [OP_PUNCH] = work_punch,
	[OP_TRUNCATE] = work_truncate, [OP_MMAP] = work_mmap, [OP_FORK] = work_fork,
	[OP_EXEC] = work_exec, [OP_UPROBE] = work_uprobe, [OP_DROP] = work_drop,
	[OP_HOG] = work_hog, [OP_RECLAIM] = work_reclaim,
};

/* Setup. */

/* Version B: the padding byte of every stub page inverted. */
static void make_models(void)
{
	int fd = open(prog, O_RDONLY);
	long i, b, v;

	model[0] = rothp_read_whole(prog, &fsize);
	if (fd < 0)
		ksft_exit_fail_msg("%s: %s\n", prog, strerror(errno));
	nstubs = rothp_find_stubs(fd, &stub_off);
	close(fd);
	if (nstubs < (long)(PMD / ROTHP_STUB_SIZE) || fsize < 2 * PMD)
		ksft_exit_fail_msg("%s: %ld stubs, %zu bytes: not textprog\n", prog, nstubs,
				   fsize);
	model[1] = rothp_memdup(model[0], fsize);
	for (i = 0; i < nstubs; i++) {
		if (!rothp_is_stub_pad(model[0] + stub_off + i * ROTHP_STUB_SIZE + VERSION_BYTE))
			ksft_exit_fail_msg("stub %ld: no padding at byte %d\n", i, VERSION_BYTE);
		model[1][stub_off + i * ROTHP_STUB_SIZE + VERSION_BYTE] ^= 0xff;
	}
	nblk = (fsize + PMD - 1) / PMD;
	for (v = 0; v < 2; v++) {
		blk_hash[v] = calloc(nblk, sizeof(uint64_t));
		if (!blk_hash[v])
			ksft_exit_fail_msg("calloc: %s\n", strerror(errno));
		for (b = 0; b < nblk; b++)
			blk_hash[v][b] = rothp_hash(model[v] + b * PMD, blk_len(b));
	}
}

static char uprobe_why[128];

/* Can uprobes be attached? Sets uprobe_skip to why not. */
static void uprobe_setup(void)
{
	if (access(UPROBE_EVENTS, W_OK)) {
		snprintf(uprobe_why, sizeof(uprobe_why), "cannot write %s: %s (%s)",
			 UPROBE_EVENTS, strerror(errno),
			 "tracefs not mounted or CONFIG_UPROBE_EVENTS off");
		uprobe_skip = uprobe_why;
		return;
	}
	if (rothp_uprobe_remove(UPROBE_EVENT))
		ksft_print_msg("removing a stale %s: %s\n", UPROBE_EVENT, strerror(errno));
}

static bool cgroup_mounted;

/*
 * A memory cgroup for the reclaim worker, if cgroup2 offers the controller:
 * removed at the end, or at exit and on SIGINT/SIGTERM if the test ends
 * before that, with the copies.
 */
static void memcg_setup(void)
{
	char ctrl[256] = "";
	FILE *fp;

	if (access(CGROUP_ROOT "/cgroup.controllers", F_OK)) {
		if (mount("cgroup2", CGROUP_ROOT, "cgroup2", 0, NULL)) {
			ksft_print_msg("reclaim: no memory cgroup: mount cgroup2 on %s: %s\n",
				       CGROUP_ROOT, strerror(errno));
			return;
		}
		cgroup_mounted = true;
	}
	fp = fopen(CGROUP_ROOT "/cgroup.controllers", "r");
	if (fp) {
		if (!fgets(ctrl, sizeof(ctrl), fp))
			ctrl[0] = '\0';
		fclose(fp);
	}
	if (!strstr(ctrl, "memory")) {
		ksft_print_msg("reclaim: no memory cgroup: controllers '%s'\n", ctrl);
		return;
	}
	if (rothp_write_file(CGROUP_ROOT "/cgroup.subtree_control", "+memory", 0, false) ||
	    (mkdir(CGROUP_DIR, 0755) && errno != EEXIST) || rothp_scratch_add(CGROUP_DIR) ||
	    rothp_write_file(CGROUP_DIR "/memory.high", CGROUP_HIGH, 0, false)) {
		ksft_print_msg("reclaim: no memory cgroup: setting up %s: %s\n", CGROUP_DIR,
			       strerror(errno));
		return;
	}
	in_memcg = true;
	ksft_print_msg("reclaim: in %s, memory.high %s\n", CGROUP_DIR, CGROUP_HIGH);
}

static void memcg_teardown(void)
{
	char line[128];
	FILE *fp;

	if (in_memcg) {
		fp = fopen(CGROUP_DIR "/memory.events", "r");
		while (fp && fgets(line, sizeof(line), fp)) {
			if (!strncmp(line, "high ", 5))
				ksft_print_msg("reclaim: memory.events %s", line);
		}
		if (fp)
			fclose(fp);
		rothp_scratch_remove(CGROUP_DIR);
	}
	if (cgroup_mounted && umount(CGROUP_ROOT))
		ksft_print_msg("umount %s: %s\n", CGROUP_ROOT, strerror(errno));
}

static void hog_setup(void)
{
	long kb = 0;

	if (rothp_meminfo("MemAvailable", &kb))
		ksft_print_msg("hog: no MemAvailable in /proc/meminfo\n");
	hog_bytes = rothp_min_size(ROTHP_ALIGN_DOWN((size_t)kb * 1024 / 2, HOG_CHUNK), HOG_MAX);
	if (hog_bytes < HOG_CHUNK)
		hog_bytes = HOG_CHUNK;
	ksft_print_msg("hog: %zu MiB of %ld MiB available\n", hog_bytes >> 20, kb >> 10);
}


/* THP "madvise", khugepaged every 100 ms, prompt collapse on if there is one. */
static void thp_setup(void)
{
	if (rothp_thp_save() || rothp_thp_set_str("enabled", "madvise") ||
	    rothp_thp_khugepaged_fast())
		ksft_exit_fail_msg("cannot set the THP settings\n");
	if (rothp_prompt_skip())
		ksft_print_msg("khugepaged: %s\n", rothp_prompt_skip());
	else if (!rothp_prompt_save(NULL) && rothp_prompt_set(1))
		ksft_print_msg("khugepaged: cannot turn prompt collapse on\n");
}

static void thp_teardown(void)
{
	rothp_thp_restore();
}

/* Running the workers. */

struct worker {
	pid_t pid;
	enum op op;
	bool done;
};

static struct worker workers[MAX_WORKERS];
static int nworkers;

static void start_worker(enum op op)
{
	pid_t pid;

	fflush(NULL);
	pid = fork();
	if (pid < 0)
		ksft_exit_fail_msg("fork: %s\n", strerror(errno));
	if (!pid) {
		/*
		 * Worker n runs on CPU n modulo the CPUs: the workers of one
		 * operation, and operations started one after the other, race
		 * from different CPUs.
		 */
		if (rothp_spread(nworkers) < 0)
			ksft_print_msg("%s: cannot pin to a CPU: %s\n", op_name[op], strerror(errno));
		rnd_state = ((uint64_t)getpid() << 32) ^ (uint64_t)(rothp_now() * 1e6);
		op_work[op](op);
		_exit(0);
	}
	workers[nworkers].pid = pid;
	workers[nworkers].op = op;
	nworkers++;
}

static void progress(double start)
{
	char line[512];
	int n = 0, op;

	for (op = 0; op < NR_OPS; op++)
		n += snprintf(line + n, sizeof(line) - n, " %s %ld", op_name[op],
			      rothp_shared_get(&sh->op[op].iters));
	ksft_print_msg("%.0f s:%s; mismatches %ld\n", rothp_now() - start, line,
		       rothp_shared_get(&sh->mismatches));
}

/* Reap the workers, killing what is left after the grace time: crashes. */
static int reap_workers(void)
{
	double give_up = deadline + GRACE_SECONDS;
	int i, left = nworkers, status, crashed = 0;
	pid_t pid;

	while (left) {
		pid = waitpid(-1, &status, WNOHANG);
		if (pid < 0)
			break;
		if (!pid) {
			if (rothp_now() < give_up) {
				sleep_ms(100);
				continue;
			}
			__atomic_store_n(&sh->stop, 1, __ATOMIC_SEQ_CST);
			for (i = 0; i < nworkers; i++) {
				if (workers[i].done)
					continue;
				ksft_print_msg("%s worker %d running %d s after the end, %s\n",
					       op_name[workers[i].op], (int)workers[i].pid,
					       GRACE_SECONDS, "killing it");
				kill(workers[i].pid, SIGKILL);
			}
			give_up += 60;
			continue;
		}
		for (i = 0; i < nworkers && workers[i].pid != pid; i++)
			;
		if (i == nworkers)
			continue;	/* not a worker */
		workers[i].done = true;
		left--;
		if (WIFEXITED(status) && !WEXITSTATUS(status))
			continue;
		crashed++;
		if (WIFSIGNALED(status))
			ksft_print_msg("%s worker %d killed by signal %d\n",
				       op_name[workers[i].op], (int)pid, WTERMSIG(status));
		else
			ksft_print_msg("%s worker %d exit status %d\n", op_name[workers[i].op],
				       (int)pid, WEXITSTATUS(status));
	}
	return crashed + left;
}

/* After the run, from the disk: the shared copy in its blocks' versions, the others as textprog. */
static long final_check(void)
{
	long before = rothp_shared_get(&sh->mismatches), b, busy = 0;
	char *buf = malloc(PMD);
	const char * const paths[] = { exec_path, trunc_path };
	uint64_t h, want = rothp_hash(model[0], fsize);
	int fd, i;

	if (!buf || rothp_drop_caches())
		ksft_exit_fail_msg("final check: %s\n", strerror(errno));
	for (b = 0; b < nblk; b++)
		busy += !!(blk_load(b) & BLK_BUSY);
	if (busy)
		ksft_print_msg("final check: %ld blocks left in a change\n", busy);
	fd = open(shared_path, O_RDONLY);
	if (fd < 0 || check_file(OP_READ, fd, buf))
		ksft_print_msg("final check: %s does not read as it must\n", shared_path);
	if (fd >= 0)
		close(fd);
	for (i = 0; i < 2; i++) {
		fd = open(paths[i], O_RDONLY);
		if (fd < 0 || rothp_file_hash(fd, 0, fsize, &h) || h != want) {
			ksft_print_msg("final check: %s is not textprog\n", paths[i]);
			rothp_shared_add(&sh->mismatches, 1);
		}
		if (fd >= 0)
			close(fd);
	}
	free(buf);
	return rothp_shared_get(&sh->mismatches) - before;
}

int main(int argc, char **argv)
{
	struct op_stat *st;
	double start, next;
	long seconds, made, final, flipped = 0;
	int op, i, crashed;
	size_t shsize;

	/* Workers print too: whole lines, each in one write. */
	setvbuf(stdout, NULL, _IOLBF, 0);
	dir = rothp_test_init(argc, argv, prog, sizeof(prog));
	if (rothp_vmstat(ROTHP_VM_SPLIT_ON_WRITE, &made))
		ksft_exit_skip("%s\n", ROTHP_DEADLOCK_612);
	seconds = argc > 2 ? strtol(argv[2], NULL, 10) : DEFAULT_SECONDS;
	if (seconds <= 0)
		ksft_exit_fail_msg("seconds must be positive, not '%s'\n", argv[2]);
	ksft_set_plan(ARRAY_SIZE(op_name) + rothp_cases_plan(&end_case, 1));

	make_models();
	shsize = ROTHP_ALIGN_UP(sizeof(*sh) + nblk * sizeof(sh->blk[0]), PAGE);
	sh = mmap(NULL, shsize, PROT_READ | PROT_WRITE, MAP_SHARED | MAP_ANONYMOUS, -1, 0);
	if (sh == MAP_FAILED)
		ksft_exit_fail_msg("mmap: %s\n", strerror(errno));
	rothp_scratch_copy_checked(shared_path, prog, dir, "stress_shared.copy");
	rothp_scratch_copy_checked(exec_path, prog, dir, "stress_exec.copy");
	rothp_scratch_copy_checked(trunc_path, prog, dir, "stress_trunc.copy");
	ksft_print_msg("%zu bytes, %ld blocks, %ld stubs at %#llx; %ld s\n", fsize, nblk,
		       nstubs, (unsigned long long)stub_off, seconds);
	thp_setup();
	uprobe_setup();
	memcg_setup();
	hog_setup();

	start = rothp_now();
	t_start = start;
	deadline = start + seconds;
	for (op = 0; op < NR_OPS; op++) {
		if (op == OP_UPROBE && uprobe_skip)
			continue;
		for (i = 0; i < op_workers[op]; i++)
			start_worker(op);
	}
	ksft_print_msg("%d workers, spread round-robin over %d CPUs\n", nworkers, rothp_nr_cpus());
	for (next = start + PROGRESS_SECONDS; rothp_now() < deadline; sleep_ms(200)) {
		if (rothp_now() >= next) {
			progress(start);
			next += PROGRESS_SECONDS;
		}
	}
	crashed = reap_workers();
	progress(start);
	if (!uprobe_skip && rothp_uprobe_remove(UPROBE_EVENT))
		ksft_print_msg("uprobe: removing %s: %s\n", UPROBE_EVENT, strerror(errno));
	memcg_teardown();
	thp_teardown();
	final = final_check();

	for (i = 0; i < nblk; i++)
		flipped += blk_load(i) / BLK_GEN;
	ksft_print_msg("block changes %ld, reads that raced a change and were plausible %ld\n",
		       flipped, rothp_shared_get(&sh->tolerated));
	for (op = 0; op < NR_OPS; op++) {
		st = &sh->op[op];
		ksft_print_msg("%s: %ld iterations, %ld errors, %ld allowed refusals, %ld hits\n",
			       op_name[op], st->iters, st->errors, st->busy, st->hits);
	}
	for (op = 0; op < NR_OPS; op++) {
		st = &sh->op[op];
		if (op == OP_UPROBE && uprobe_skip) {
			ksft_test_result_skip("op %s: %s\n", op_name[op], uprobe_skip);
			continue;
		}
		ksft_test_result(st->iters > 0 && !st->errors,
				 "op %s ran %ld iterations, %ld errors\n", op_name[op], st->iters,
				 st->errors);
	}
	ksft_print_msg("mismatches: %ld, %ld of them in the final check\n", sh->mismatches, final);
	rothp_report(&end_case, 0, NULL, !sh->mismatches);
	rothp_report(&end_case, 1, NULL, !crashed);
	/* Every hit of these operations is a collapse, or a PMD mapping seen. */
	made = sh->op[OP_COLLAPSE].hits + sh->op[OP_KHUGEPAGED].hits + sh->op[OP_TRUNCATE].hits +
	       sh->op[OP_MMAP].hits + sh->op[OP_FORK].hits + sh->op[OP_RECLAIM].hits;
	ksft_print_msg("file THPs: %ld collapses by MADV_COLLAPSE (collapse %ld, truncate %ld, mmap %ld, fork %ld, reclaim %ld), %ld PMD mappings seen after MADV_HUGEPAGE\n",
		       made - sh->op[OP_KHUGEPAGED].hits, sh->op[OP_COLLAPSE].hits,
		       sh->op[OP_TRUNCATE].hits, sh->op[OP_MMAP].hits, sh->op[OP_FORK].hits,
		       sh->op[OP_RECLAIM].hits, sh->op[OP_KHUGEPAGED].hits);
	rothp_report(&end_case, 2, NULL, made > 0);
	ksft_finished();
}
