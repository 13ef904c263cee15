// SPDX-License-Identifier: GPL-2.0
/*
 * write_race <dir>: writes racing MADV_COLLAPSE, and a write whose THP split
 * runs out of memory, never lose or corrupt data. It works on a copy of
 * textprog in <dir>, made afresh for each case and never executed, whose
 * whole 2 MiB blocks are made read-only file THPs by MADV_COLLAPSE of an r-x
 * private mapping (the file not open for write then); the copy is removed
 * at the end. A model in memory holds what the file must contain, and every
 * read-back is compared with it byte for byte: a difference (stale bytes,
 * zeros where data was written or where the file had data) fails, with its
 * offset printed. THP "enabled" is "never" meanwhile, so that only the
 * test's MADV_COLLAPSE makes THPs.
 *
 * The race cases run rounds of SLICE_MS until RACE_SECONDS have passed:
 * each round forks a writer and a collapser, pinned to two different CPUs
 * (fewer than two usable CPUs fails the test: the harness gives the guest
 * two). The writer works for the first WRITE_MS of the round, reading back
 * each write at once, then writes the file back (fdatasync) and exits, so
 * that collapses can succeed in the rest of the round. The collapser maps
 * the copy r-x, touches every page and calls MADV_COLLAPSE on each block in
 * turn until the round ends; EAGAIN, EBUSY, EINVAL and ENOMEM are counted
 * (a writer has the file open, a folio is busy), any other errno fails.
 * Around each call it looks the block up in the page cache
 * (rothp_cache_blocks()): the call made a THP if it returned 0 and the
 * block, not one PMD-sized folio before, is one after. A child still running
 * CHILD_GRACE_MS after its round is killed, which fails the case and ends
 * its rounds. Between rounds, with both children gone, pread() of the whole
 * file and the parent's r-x mapping must match the model; after the last
 * round, so must the file read back from the disk. At least one
 * MADV_COLLAPSE must have made a THP during the race: the writes broke THPs
 * and the collapser made them again, or the race did not happen (a return
 * of 0 proves nothing: MADV_COLLAPSE of a block already a THP returns 0).
 *
 *  odirect  the writer opens the copy O_RDWR | O_DIRECT and writes 4 KiB
 *           of a new pattern from an aligned buffer into 1 to
 *           DIRECT_WRITES random pages of the THP-backed blocks, then
 *           closes it.
 *  punch    the writer punches a hole of 1 to PUNCH_PAGES pages inside a
 *           block (FALLOC_FL_PUNCH_HOLE | FALLOC_FL_KEEP_SIZE: zeros in the
 *           model), half of the time refills part of it with pwrite(), and
 *           half of the time fsync()s the copy before closing it.
 *  open     the writer opens the copy O_RDWR (a quarter of the time
 *           O_WRONLY) and, half of the time, writes one page with pwrite()
 *           and, half of those times, fsync()s it; else it only closes it.
 *
 * A probe before the race skips odirect if the file system refuses
 * O_DIRECT (EINVAL), and punch if it cannot punch holes (EOPNOTSUPP); on
 * ext4 and xfs, which can do both, either fails the case instead.
 *
 * On a kernel without the series (no thp_file_split_on_write), punch and
 * open skip, saying why: 6.12.118's collapse_file() waits for the shared
 * invalidate_lock with its folios locked, and a hole punch, or an open for
 * write truncating a file with THPs, holds it exclusively and waits for
 * those folios. A baseline run hung there (hung task reports, three tasks
 * in D state, on arm64); patches 2 and 3 fix it, and the patched kernel
 * runs both cases.
 *
 * An O_DIRECT write invalidates the page cache of its range, and a punched
 * hole truncates it: the THP there is split or dropped as any large folio,
 * on every file system and both kernels, and the collapser makes it again.
 * On 6.12, an open for write of an ext4 file with THPs truncates its whole
 * page cache (do_dentry_open()). With the series, the open leaves the THPs;
 * a write splits the THP it reaches (__filemap_get_folio() for FGP_WRITE or
 * FGP_CREAT), or drops it from the page cache if it will not split, and
 * thp_file_split_on_write or thp_file_drop_on_write counts that. On a kernel
 * with those counters and a file system without large folios, open checks
 * that their sum grew during the race, if its writer wrote at all; O_DIRECT
 * invalidation and hole punching do not count there, so odirect and punch
 * only print them. On xfs, which has large folios, writes go through the
 * THPs on both kernels: nothing breaks them in open, whose check that
 * MADV_COLLAPSE made THPs skips there (and where large folio support is
 * unknown). Both kernels must pass every race case.
 *
 *  nomem    failslab (CONFIG_FAILSLAB, kernel-config/fault-inject.config)
 *           fails one allocation (times 1) of the radix_tree_node cache
 *           (cache-filter; having a constructor, it is never merged with
 *           another cache) by this task alone (task-filter, with
 *           /proc/self/make-it-fail set just around the write), sleeping
 *           allocations included (ignore-gfp-wait N). The copy is opened
 *           O_RDWR and its timestamps updated before anything is armed;
 *           then a pwrite() into block NOMEM_PWRITE_BLOCK, and a store
 *           through a new MAP_SHARED mapping (its first fault) into block
 *           NOMEM_STORE_BLOCK, must complete and land: pread() and the r-x
 *           mapping read what was written, the rest of the file unchanged,
 *           on both kernels. Before each write, whether the block is a THP
 *           in the page cache (one PMD-sized folio, rothp_cache_blocks()) is
 *           printed. With the series, on a file system without large
 *           folios, the split of that THP allocates the xarray nodes of its
 *           base pages first (xas_split_alloc() in
 *           split_huge_page_to_list_to_order()): that fails, so the THP is
 *           dropped from the page cache instead (the block was a THP,
 *           thp_file_drop_on_write +1, thp_file_split_on_write +0) and
 *           failslab's times reaches 0; the counters and times are printed.
 *           Those two checks skip on 6.12, whose open already dropped every
 *           THP (the failure may go to the xarray node of a new page then,
 *           which xas_nomem() retries), and on xfs, which writes through the
 *           THP. The failslab knobs and make-it-fail are saved before they
 *           are changed and restored at the end of the case, at exit and on
 *           SIGINT/SIGTERM; a SIGBUS of the store is caught. debugfs is
 *           mounted on /sys/kernel/debug if it is not there. Without
 *           failslab the case skips if CONFIG_FAILSLAB is not set, and fails
 *           otherwise (CONFIG_FAILSLAB and CONFIG_FAULT_INJECTION_DEBUG_FS
 *           are needed), as it does without /sys/kernel/slab's failslab
 *           filter or /proc/self/make-it-fail.
 *
 * The results are named in the tables below, the nomem write results once
 * for each way of writing: the plan is their sum.
 */
#define _GNU_SOURCE
#include <errno.h>
#include <fcntl.h>
#include <setjmp.h>
#include <signal.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>
#include <sys/mman.h>
#include <sys/mount.h>
#include <sys/stat.h>
#include <sys/statfs.h>
#include <sys/wait.h>

#include <linux/magic.h>

#include "kselftest.h"
#include "rothp_util.h"

#ifndef DEBUGFS_MAGIC
#define DEBUGFS_MAGIC		0x64626720
#endif

#define COPY_NAME		"write_race.copy"
#define PAGE			ROTHP_PAGE_SIZE
#define PMD			ROTHP_PMD_SIZE

/* A race case: rounds until RACE_SECONDS have passed. */
#define RACE_SECONDS		20
/* A round: the writer works for WRITE_MS of SLICE_MS, then writes back and exits. */
#define SLICE_MS		3000
#define WRITE_MS		1500
/* At most this long between two opens of the writer. */
#define STEP_GAP_US		20000
/* How long a child may take past the end of its round before it is killed. */
#define CHILD_GRACE_MS		(30 * 1000)
/* Errors the children print per round; all are counted. */
#define MAX_REPORTS		8
#define DIRECT_WRITES		4
#define PUNCH_PAGES		16

/* nomem: the blocks written to, and where in them. */
#define NOMEM_PWRITE_BLOCK	1
#define NOMEM_STORE_BLOCK	2
#define NOMEM_OFF		(20UL << 10)

#define DEBUGFS			"/sys/kernel/debug"
#define FAILSLAB		DEBUGFS "/failslab/"
#define SLAB_FILTER		"/sys/kernel/slab/radix_tree_node/failslab"
#define MAKE_IT_FAIL		"/proc/self/make-it-fail"

/* The collapser's expected refusals: counted, not failed. */
enum refusal { REF_EAGAIN, REF_EBUSY, REF_EINVAL, REF_ENOMEM, NR_REFUSALS };
static const int refusal_errno[NR_REFUSALS] = { EAGAIN, EBUSY, EINVAL, ENOMEM };
static const char *const refusal_name[NR_REFUSALS] = { "EAGAIN", "EBUSY", "EINVAL", "ENOMEM" };

/* What the writer and the collapser count, in memory shared with them. */
struct race_stat {
	long steps;		/* writer: opens of the copy */
	long writes;		/* writer: writes and punches done */
	long mismatches;	/* writer: read-backs unlike the model */
	long no_punch;		/* writer: fallocate() said EOPNOTSUPP */
	long passes;		/* collapser: passes over every block */
	long calls;		/* collapser: MADV_COLLAPSE calls */
	long collapsed;		/* ... that returned 0 */
	long made;		/* ... of those, on a block that was not a THP and is one after */
	long refused[NR_REFUSALS];
	long errors;		/* both: unexpected errors */
	long reports;		/* both: errors printed this round */
	int cpu[2];		/* the CPU of the writer [0] and the collapser [1], or -1 */
};

/* The writer's open files and buffers. */
struct writer {
	int rfd;		/* the copy, read-only: read-backs, fdatasync */
	char *buf;		/* what is written, PUNCH_PAGES pages, aligned */
	char *rbuf;		/* what is read back */
};

struct wr_case {
	const struct rothp_case *rc;	/* its results */
	void (*run)(const struct wr_case *c);
	void (*step)(struct writer *w);	/* a race case's writer: one open */
	const char *(*probe)(void);	/* why a race case cannot run, or NULL */
	/*
	 * A race case whose writes break a THP only by reaching it: nothing
	 * breaks one with large folios, and the series' counters count what does.
	 */
	bool buffered;
	/* Its writer holds invalidate_lock exclusively: 6.12 can deadlock. */
	bool invalidates;
};

static char prog[PATH_MAX], copy[PATH_MAX];
static const char *dir;
/* textprog's bytes, and how a difference from the model is said */
static struct rothp_orig orig = { .say_written = true };
static char *model;		/* what the copy must hold, shared with the writer */
static size_t fsize;		/* the copy's size */
static size_t len;		/* its whole 2 MiB blocks, from offset 0 */
static long nblk;
static struct race_stat *st;
static uint64_t rnd_state;
static int large;		/* large folios: 1, none: 0, unknown: -1 */
static bool patched;		/* the kernel has the series' counters */

/* An unexpected error in a child: counted, printed the first MAX_REPORTS times a round. */
#define race_error(fmt, ...)						\
	rothp_child_error(&st->errors, &st->reports, MAX_REPORTS, NULL, fmt, ##__VA_ARGS__)

static unsigned long rnd(unsigned long n)
{
	return n ? rothp_rand64(&rnd_state) % n : 0;
}

/* n bytes (a multiple of 8) of a pattern never written before. */
static void fill_pattern(char *buf, size_t n)
{
	uint64_t v;
	size_t i;

	for (i = 0; i < n; i += sizeof(v)) {
		v = rothp_rand64(&rnd_state);
		memcpy(buf + i, &v, sizeof(v));
	}
}

static const char *io_error(ssize_t n)
{
	return n < 0 ? strerror(errno) : "short";
}

/*
 * Writer: read [off, off + n) back at once; a difference is a mismatch,
 * printed the first MAX_REPORTS times a round.
 */
static void read_back(struct writer *w, size_t off, size_t n, const char *who)
{
	if (rothp_pread_full(w->rfd, w->rbuf, n, off)) {
		race_error("%s: pread at %#zx: %s", who, off, strerror(errno));
		return;
	}
	if (!memcmp(w->rbuf, model + off, n))
		return;
	rothp_shared_add(&st->mismatches, 1);
	if (rothp_shared_add(&st->reports, 1) <= MAX_REPORTS)
		rothp_report_difference(&orig, who, w->rbuf, model, off, n);
}

/* Writer: after a failed write, the model takes what the file holds. */
static void resync(struct writer *w, size_t off, size_t n)
{
	if (rothp_pread_full(w->rfd, model + off, n, off))
		race_error("pread at %#zx, for the model: %s", off, strerror(errno));
}

/* Writer: a random page of the whole blocks. */
static size_t random_page(void)
{
	return rnd(len / PAGE) * PAGE;
}

/*
 * Writer: one page of a new pattern at a random offset through fd (what
 * names the write), then the model and a read-back (who names it).
 */
static void write_page(struct writer *w, int fd, const char *what, const char *who)
{
	size_t off = random_page();
	ssize_t r;

	fill_pattern(w->buf, PAGE);
	r = pwrite(fd, w->buf, PAGE, off);
	if (r != (ssize_t)PAGE) {
		race_error("%s at %#zx: %s", what, off, io_error(r));
		resync(w, off, PAGE);
		return;
	}
	memcpy(model + off, w->buf, PAGE);
	st->writes++;
	read_back(w, off, PAGE, who);
}

/* odirect: 1 to DIRECT_WRITES aligned pages of a new pattern, one open. */
static void step_odirect(struct writer *w)
{
	int fd, i, n = 1 + rnd(DIRECT_WRITES);

	fd = open(copy, O_RDWR | O_DIRECT);
	if (fd < 0) {
		race_error("open O_RDWR | O_DIRECT: %s", strerror(errno));
		return;
	}
	for (i = 0; i < n; i++)
		write_page(w, fd, "O_DIRECT pwrite", "odirect: the writer's read-back");
	if (close(fd))
		race_error("close: %s", strerror(errno));
}

/* punch: a hole inside a block, half of the time partly refilled. */
static void step_punch(struct writer *w)
{
	size_t b = rnd(nblk), first = rnd(PMD / PAGE), pages, off, hole, k, m;
	ssize_t r;
	int fd;

	pages = 1 + rnd(rothp_min_size(PUNCH_PAGES, PMD / PAGE - first));
	off = b * PMD + first * PAGE;
	hole = pages * PAGE;
	fd = open(copy, O_RDWR);
	if (fd < 0) {
		race_error("open O_RDWR: %s", strerror(errno));
		return;
	}
	if (fallocate(fd, FALLOC_FL_PUNCH_HOLE | FALLOC_FL_KEEP_SIZE, off, hole)) {
		if (errno == EOPNOTSUPP)
			st->no_punch = 1;
		else
			race_error("punching %#zx bytes at %#zx: %s", hole, off, strerror(errno));
		resync(w, off, hole);
	} else {
		memset(model + off, 0, hole);
		st->writes++;
		read_back(w, off, hole, "punch: the hole, read back");
	}
	if (rnd(2)) {
		k = rnd(pages);
		m = 1 + rnd(pages - k);
		fill_pattern(w->buf, m * PAGE);
		r = pwrite(fd, w->buf, m * PAGE, off + k * PAGE);
		if (r != (ssize_t)(m * PAGE)) {
			race_error("refilling %#zx bytes at %#zx: %s", m * PAGE, off + k * PAGE,
				   io_error(r));
			resync(w, off + k * PAGE, m * PAGE);
		} else {
			memcpy(model + off + k * PAGE, w->buf, m * PAGE);
			st->writes++;
			read_back(w, off + k * PAGE, m * PAGE, "punch: the refill, read back");
		}
	}
	if (rnd(2) && fsync(fd))
		race_error("fsync: %s", strerror(errno));
	if (close(fd))
		race_error("close: %s", strerror(errno));
}

/* open: an open for write, half of the time with one page written. */
static void step_open(struct writer *w)
{
	int fd, flags = rnd(4) ? O_RDWR : O_WRONLY;

	fd = open(copy, flags);
	if (fd < 0) {
		race_error("open %s: %s", flags == O_RDWR ? "O_RDWR" : "O_WRONLY",
			   strerror(errno));
		return;
	}
	if (rnd(2)) {
		write_page(w, fd, "pwrite", "open: the writer's read-back");
		if (rnd(2) && fsync(fd))
			race_error("fsync: %s", strerror(errno));
	}
	if (close(fd))
		race_error("close: %s", strerror(errno));
}

/* Pin the calling child to the index-th usable CPU; role 0 writer, 1 collapser. */
static void pin_child(int index, int role)
{
	int cpu = rothp_spread(index);

	st->cpu[role] = cpu;
	if (cpu < 0)
		race_error("%s: cannot pin to a CPU: %s", role ? "collapser" : "writer",
			   strerror(errno));
}

/* The writer of a round: steps until write_end, then fdatasync, then exit. */
static void run_writer(void (*step)(struct writer *w), double write_end)
{
	struct writer w;
	void *buf, *rbuf;

	w.rfd = open(copy, O_RDONLY);
	if (w.rfd < 0 || posix_memalign(&buf, PAGE, PUNCH_PAGES * PAGE) ||
	    posix_memalign(&rbuf, PAGE, PUNCH_PAGES * PAGE)) {
		race_error("writer: cannot start: %s", strerror(errno));
		_exit(1);
	}
	w.buf = buf;
	w.rbuf = rbuf;
	while (rothp_now() < write_end && !st->no_punch) {
		step(&w);
		st->steps++;
		usleep(rnd(STEP_GAP_US));
	}
	/* Written back, the file can be collapsed in the rest of the round. */
	if (fdatasync(w.rfd))
		race_error("fdatasync: %s", strerror(errno));
	_exit(0);
}

/* Collapser: is block b of the copy (fd) one PMD-sized folio in the page cache? -1: unknown. */
static int block_huge(int fd, long b)
{
	struct rothp_cache_block blk;

	if (rothp_cache_blocks(fd, b * PMD, 1, &blk)) {
		race_error("collapser: cannot look block %ld up in the page cache: %s", b,
			   strerror(errno));
		return -1;
	}
	return blk.huge;
}

/*
 * One MADV_COLLAPSE of block b of the mapping p, counted. It made a THP if
 * it returned 0 and the block, not a THP in the page cache before, is one
 * after: a block that already was one returns 0 too.
 */
static void collapse_block(int fd, char *p, long b)
{
	int i, before = block_huge(fd, b);

	st->calls++;
	if (!madvise(p + b * PMD, PMD, MADV_COLLAPSE)) {
		st->collapsed++;
		if (!before && block_huge(fd, b) > 0)
			st->made++;
		return;
	}
	for (i = 0; i < NR_REFUSALS; i++) {
		if (errno == refusal_errno[i]) {
			st->refused[i]++;
			return;
		}
	}
	race_error("MADV_COLLAPSE of block %ld: %s", b, strerror(errno));
}

/* The collapser of a round: touch and collapse every block until slice_end. */
static void run_collapser(double slice_end)
{
	long i, b0;
	int fd;
	char *p;

	fd = open(copy, O_RDONLY);
	p = fd < 0 ? MAP_FAILED : rothp_map_aligned(fd, len, 0, 0, PROT_READ | PROT_EXEC);
	if (p == MAP_FAILED) {
		race_error("collapser: cannot map %s: %s", copy, strerror(errno));
		_exit(1);
	}
	while (rothp_now() < slice_end) {
		rothp_touch(p, len, PAGE);
		b0 = rnd(nblk);
		for (i = 0; i < nblk && rothp_now() < slice_end; i++)
			collapse_block(fd, p, (b0 + i) % nblk);
		st->passes++;
	}
	munmap(p, len);
	close(fd);
	_exit(0);
}

/*
 * Fork a child of a round. other is the round's child already running, or
 * 0: should the fork fail, it is killed and reaped before the test exits.
 */
static pid_t fork_child(pid_t other)
{
	pid_t pid = rothp_fork();
	int err = errno;

	if (pid < 0) {
		if (other > 0) {
			kill(other, SIGKILL);
			waitpid(other, NULL, 0);
		}
		ksft_exit_fail_msg("fork: %s\n", strerror(err));
	}
	return pid;
}

/*
 * Reap a child of the round ending at slice_end, killed CHILD_GRACE_MS
 * after that (*killed is set then): true if it exited with status 0.
 */
static bool reap(pid_t pid, double slice_end, const char *who, bool *killed)
{
	long ms = (long)((slice_end - rothp_now()) * 1000) + CHILD_GRACE_MS;

	return !rothp_child_wait(pid, ms > 0 ? ms : 0, who, killed);
}

/* A new copy of textprog, with no page cache, and the model reset to it. */
static void make_copy(void)
{
	rothp_scratch_copy_checked(copy, prog, dir, COPY_NAME);
	memcpy(model, orig.buf, fsize);
}

/*
 * Open the copy read-only, map its whole blocks r-x private at a 2 MiB
 * aligned address (*p), touch and collapse them: result 0 of c, every
 * block PMD-mapped. Returns the file descriptor.
 */
static int collapse_copy(const struct rothp_case *c, char **p)
{
	int fd = rothp_open_checked(copy, O_RDONLY);
	long pmd;
	int rc, err;

	*p = rothp_map_text(fd, len);
	rc = rothp_collapse_mapping(c->name, *p, len, &err, &pmd);
	rothp_report(c, 0, NULL, !rc && pmd == (long)len);
	return fd;
}

/* munmap p, then read the copy from the disk. */
static bool disk_matches(const char *name, int fd, char *p)
{
	munmap(p, len);
	return rothp_disk_is(&orig, fd, model, fsize, name);
}

static const char *probe_odirect(void)
{
	int fd = open(copy, O_RDWR | O_DIRECT);

	if (fd >= 0) {
		close(fd);
		return NULL;
	}
	if (errno == EINVAL)
		return "the file system refuses O_DIRECT (EINVAL)";
	ksft_exit_fail_msg("open %s O_RDWR | O_DIRECT: %s\n", copy, strerror(errno));
}

/* Punch a page of block 0 and write it back, before anything is collapsed. */
static const char *probe_punch(void)
{
	int fd = rothp_open_checked(copy, O_RDWR);
	const char *why = NULL;

	if (fallocate(fd, FALLOC_FL_PUNCH_HOLE | FALLOC_FL_KEEP_SIZE, 0, PAGE)) {
		if (errno != EOPNOTSUPP)
			ksft_exit_fail_msg("punching a hole in %s: %s\n", copy, strerror(errno));
		why = "the file system cannot punch holes (EOPNOTSUPP)";
	} else if (pwrite(fd, orig.buf, PAGE, 0) != (ssize_t)PAGE || fsync(fd)) {
		ksft_exit_fail_msg("refilling the hole in %s: %s\n", copy, strerror(errno));
	}
	close(fd);
	return why;
}

/* ext4 and xfs can both write O_DIRECT and punch holes: no probe skips there. */
static bool fs_can_both(void)
{
	struct statfs sfs;

	if (statfs(copy, &sfs))
		return false;
	return (unsigned long)sfs.f_type == EXT4_SUPER_MAGIC ||
	       (unsigned long)sfs.f_type == XFS_SUPER_MAGIC;
}

/* Why a write reaching a THP might not break it: large folios, or unknown; else NULL. */
static const char *large_folio_skip(void)
{
	if (large > 0)
		return "large folios: writes go through the THP, nothing splits";
	if (large < 0)
		return "large folio support of the file system unknown";
	return NULL;
}

/* thp_file_split_on_write + thp_file_drop_on_write, or -1 if unreadable. */
static long split_drop_count(void)
{
	long split, drop;

	if (rothp_vmstat(ROTHP_VM_SPLIT_ON_WRITE, &split) ||
	    rothp_vmstat(ROTHP_VM_DROP_ON_WRITE, &drop))
		return -1;
	return split + drop;
}

/* The results of every race case, in reporting order. */
#define RACE_RESULTS \
	"MADV_COLLAPSE makes every 2 MiB block of the copy a PMD-mapped THP before the race", \
	"writer and collapser, pinned to two different CPUs, exit with status 0 every round", \
	"no unexpected error (MADV_COLLAPSE may fail with EAGAIN, EBUSY, EINVAL, ENOMEM)", \
	"the writer's read-backs, pread and the r-x mapping match the model every round", \
	"the writes broke THPs and MADV_COLLAPSE made them again during the race", \
	"the copy read from the disk after drop_caches matches the model"

static const char *const race_results[] = { RACE_RESULTS };

/* The results of a buffered race case: one more, reported last. */
static const char *const buffered_results[] = {
	RACE_RESULTS,
	ROTHP_VM_SPLIT_ON_WRITE " + " ROTHP_VM_DROP_ON_WRITE
		" grew during the race: the writes reached THPs",
};

static void race_case(const struct wr_case *c)
{
	const struct rothp_case *rc = c->rc;
	double start, deadline, t0, slice_end;
	bool children = true, same = true, killed = false, can;
	const char *skip = NULL, *made_skip = NULL, *split_skip = NULL;
	long rounds = 0, count0 = -1, count1 = -1;
	char who[64];
	pid_t writer, collapser;
	int fd, i;
	char *p;

	if (!patched && c->invalidates) {
		for (i = 0; i < rc->nr; i++)
			rothp_report(rc, i, ROTHP_DEADLOCK_612, false);
		return;
	}
	make_copy();
	if (c->probe)
		skip = c->probe();
	if (skip) {
		can = fs_can_both();
		if (can)
			ksft_print_msg("%s: %s, yet ext4 and xfs can\n", rc->name, skip);
		for (i = 0; i < rc->nr; i++)
			rothp_report(rc, i, can ? NULL : skip, false);
		rothp_scratch_remove(copy);
		return;
	}
	fd = collapse_copy(rc, &p);
	memset(st, 0, sizeof(*st));
	if (patched)
		count0 = split_drop_count();

	start = rothp_now();
	deadline = start + RACE_SECONDS;
	while (rothp_now() < deadline && same && !killed) {
		t0 = rothp_now();
		slice_end = t0 + SLICE_MS / 1000.0;
		st->reports = 0;
		st->cpu[0] = -1;
		st->cpu[1] = -1;
		/* The two swap CPUs each round. */
		writer = fork_child(0);
		if (!writer) {
			pin_child(rounds & 1, 0);
			rnd_state = ((uint64_t)getpid() << 32) ^ (uint64_t)(t0 * 1e9);
			run_writer(c->step, t0 + WRITE_MS / 1000.0);
		}
		collapser = fork_child(writer);
		if (!collapser) {
			pin_child(!(rounds & 1), 1);
			rnd_state = ((uint64_t)getpid() << 32) ^ (uint64_t)(t0 * 1e9) ^ 1;
			run_collapser(slice_end);
		}
		snprintf(who, sizeof(who), "%s: round %ld's writer", rc->name, rounds);
		children &= reap(writer, slice_end, who, &killed);
		snprintf(who, sizeof(who), "%s: round %ld's collapser", rc->name, rounds);
		children &= reap(collapser, slice_end, who, &killed);
		if (st->cpu[0] < 0 || st->cpu[1] < 0 || st->cpu[0] == st->cpu[1]) {
			ksft_print_msg("%s: round %ld: writer on CPU %d, collapser on CPU %d\n",
				       rc->name, rounds, st->cpu[0], st->cpu[1]);
			children = false;
		}
		rounds++;
		/* Both are gone: the file and the mapping must read as the model. */
		snprintf(who, sizeof(who), "%s: after round %ld", rc->name, rounds);
		same = rothp_file_is(&orig, fd, model, fsize, who);
		same = rothp_map_is(&orig, p, model, len, who) && same;
	}
	if (patched)
		count1 = split_drop_count();
	if (c->buffered) {
		made_skip = large_folio_skip();
		if (!patched)
			split_skip = ROTHP_NO_SPLIT_ON_WRITE;
		else if (made_skip)
			split_skip = made_skip;
		else if (!st->writes)
			split_skip = "the writer wrote nothing";
	}

	ksft_print_msg("%s: %ld rounds in %.1f s, %ld unexpected errors\n", rc->name, rounds,
		       rothp_now() - start, rothp_shared_get(&st->errors));
	if (killed)
		ksft_print_msg("%s: a child had to be killed: no more rounds\n", rc->name);
	ksft_print_msg("%s: writer: %ld opens, %ld writes, %ld read-backs unlike the model\n",
		       rc->name, st->steps, st->writes, st->mismatches);
	ksft_print_msg("%s: collapser: %ld passes, %ld calls, %ld returned 0 (%ld made a THP)\n",
		       rc->name, st->passes, st->calls, st->collapsed, st->made);
	ksft_print_msg("%s: collapser refused: %s %ld, %s %ld, %s %ld, %s %ld\n", rc->name,
		       refusal_name[0], st->refused[0], refusal_name[1], st->refused[1],
		       refusal_name[2], st->refused[2], refusal_name[3], st->refused[3]);
	if (patched && (count0 < 0 || count1 < 0))
		ksft_print_msg("%s: cannot read %s or %s\n", rc->name, ROTHP_VM_SPLIT_ON_WRITE,
			       ROTHP_VM_DROP_ON_WRITE);
	else if (patched)
		ksft_print_msg("%s: %s + %s grew by %ld during the race\n", rc->name,
			       ROTHP_VM_SPLIT_ON_WRITE, ROTHP_VM_DROP_ON_WRITE, count1 - count0);
	if (st->no_punch)
		ksft_print_msg("%s: fallocate(PUNCH_HOLE) said EOPNOTSUPP during the race\n",
			       rc->name);
	if (!st->made && !made_skip)
		ksft_print_msg("%s: no MADV_COLLAPSE made a THP: the race did not happen\n",
			       rc->name);
	rothp_report(rc, 1, NULL, children && rounds > 0);
	rothp_report(rc, 2, NULL, !rothp_shared_get(&st->errors) && !st->no_punch);
	rothp_report(rc, 3, NULL, same && !st->mismatches && st->writes > 0);
	rothp_report(rc, 4, made_skip, st->made > 0);
	rothp_report(rc, 5, NULL, disk_matches(rc->name, fd, p));
	if (c->buffered)
		rothp_report(rc, 6, split_skip, count0 >= 0 && count1 > count0);
	close(fd);
	rothp_scratch_remove(copy);
}

/*
 * nomem: the failslab knobs, with the values they get, in the order they
 * are written and saved; restored in the reverse order, make-it-fail and
 * the probability first. The cache filter names radix_tree_node, whose
 * constructor keeps it from being merged with another cache.
 */
static const struct rothp_fault_knob failslab_knobs[] = {
	{ SLAB_FILTER, "1" },
	{ FAILSLAB "task-filter", "Y" },
	{ FAILSLAB "cache-filter", "Y" },
	{ FAILSLAB "ignore-gfp-wait", "N" },
	{ FAILSLAB "space", "0" },
	{ FAILSLAB "verbose", "1" },
	{ FAILSLAB "interval", "1" },
	{ FAILSLAB "times", "1" },
	{ FAILSLAB "probability", "100" },
	{ MAKE_IT_FAIL, NULL },		/* saved; make_it_fail() sets it around a write */
};

#define NR_KNOBS	ARRAY_SIZE(failslab_knobs)

static char saved_val[NR_KNOBS][64];
static int mif_fd = -1;		/* MAKE_IT_FAIL, open for write */
static sigjmp_buf bus_env;

/*
 * Save every knob, restored by rothp_fault_restore(), at exit and on
 * signals; what they read, for failslab_restored().
 */
static void failslab_save(void)
{
	size_t i;

	for (i = 0; i < NR_KNOBS; i++) {
		if (rothp_read_line(failslab_knobs[i].path, saved_val[i], sizeof(saved_val[i])))
			ksft_exit_fail_msg("cannot read %s: %s\n", failslab_knobs[i].path,
					   strerror(errno));
	}
	if (rothp_fault_save(failslab_knobs, NR_KNOBS))
		ksft_exit_fail_msg("cannot save the failslab knobs\n");
}

/* Do the knobs read as saved? Says which does not. */
static bool failslab_restored(void)
{
	char val[64];
	bool same = true;
	size_t i;

	for (i = 0; i < NR_KNOBS; i++) {
		if (rothp_read_line(failslab_knobs[i].path, val, sizeof(val)) ||
		    strcmp(val, saved_val[i])) {
			ksft_print_msg("nomem: %s reads '%s', was '%s'\n", failslab_knobs[i].path,
				       val, saved_val[i]);
			same = false;
		}
	}
	return same;
}

/* One radix_tree_node allocation of a task with make-it-fail will fail. */
static void failslab_arm(void)
{
	if (rothp_fault_set(failslab_knobs, NR_KNOBS))
		ksft_exit_fail_msg("cannot arm failslab\n");
}

static void make_it_fail(bool on)
{
	if (write(mif_fd, on ? "1" : "0", 1) != 1)
		ksft_exit_fail_msg("%s: %s\n", MAKE_IT_FAIL, strerror(errno));
}

static void failslab_disarm(void)
{
	make_it_fail(false);
	if (rothp_write_text(FAILSLAB "probability", "0"))
		ksft_exit_fail_msg("cannot disarm failslab\n");
}

static void on_sigbus(int sig)
{
	(void)sig;
	siglongjmp(bus_env, 1);
}

/*
 * Why failslab cannot be used, in why, or NULL when it can; debugfs is
 * mounted on DEBUGFS first if it is not there. *skip is the reason too when
 * the kernel has no failslab (CONFIG_FAILSLAB not set), else NULL: the
 * reason fails the case.
 */
static const char *failslab_missing(const char **skip, char *why, size_t n)
{
	char src[PATH_MAX], mnt[128] = "";
	struct statfs sfs;
	int err, cfg;

	*skip = NULL;
	if ((statfs(DEBUGFS, &sfs) || sfs.f_type != DEBUGFS_MAGIC) &&
	    mount("debugfs", DEBUGFS, "debugfs", 0, NULL))
		snprintf(mnt, sizeof(mnt), "; mounting debugfs on %s: %s", DEBUGFS,
			 strerror(errno));
	if (access(FAILSLAB "probability", W_OK)) {
		err = errno;
		cfg = rothp_kconfig("CONFIG_FAILSLAB", src, sizeof(src));
		if (!cfg) {
			snprintf(why, n, "CONFIG_FAILSLAB is not set (%s)", src);
			*skip = why;
			return why;
		}
		snprintf(why, n, "no failslab (%s: %s%s), which needs %s; CONFIG_FAILSLAB %s (%s)",
			 FAILSLAB "probability", strerror(err), mnt,
			 "CONFIG_FAILSLAB and CONFIG_FAULT_INJECTION_DEBUG_FS",
			 cfg > 0 ? "set" : "unknown", src);
		return why;
	}
	if (access(SLAB_FILTER, W_OK)) {
		snprintf(why, n, "%s: %s (CONFIG_SLUB_TINY has no /sys/kernel/slab)", SLAB_FILTER,
			 strerror(errno));
		return why;
	}
	if (access(MAKE_IT_FAIL, W_OK)) {
		snprintf(why, n, "%s: %s (CONFIG_FAULT_INJECTION)", MAKE_IT_FAIL, strerror(errno));
		return why;
	}
	return NULL;
}

enum nomem_way { NOMEM_PWRITE, NOMEM_STORE, NR_NOMEM_WAYS };
static const char *const nomem_way_name[NR_NOMEM_WAYS] = {
	"pwrite()", "a MAP_SHARED store",
};

static const long nomem_block[NR_NOMEM_WAYS] = { NOMEM_PWRITE_BLOCK, NOMEM_STORE_BLOCK };

static const char *const nomem_results[] = {
	"MADV_COLLAPSE makes every 2 MiB block of the copy a PMD-mapped THP",
	"the copy read from the disk after drop_caches matches the model",
	"failslab's knobs and make-it-fail read as before the case once restored",
};

/*
 * For each way, after nomem_results[0]. Every entry takes the same
 * arguments, way_report()'s: the way, its block, then the two counters.
 */
static const char *const nomem_way_results[] = {
	"%s into block %ld completes with failslab armed (one radix_tree_node allocation to fail)",
	"%s into block %ld reads back through pread and the r-x mapping, the rest unchanged",
	"%s into block %ld: no memory to split the THP, so it was dropped (%s +1, %s +0)",
	"%s into block %ld consumed the one injected failure (failslab times 0)",
};

static const struct rothp_case nomem_way = ROTHP_CASE("nomem", nomem_way_results);

static void way_report(enum nomem_way way, int i, const char *skip, bool pass)
{
	rothp_report(&nomem_way, i, skip, pass, nomem_way_name[way], nomem_block[way],
		     ROTHP_VM_DROP_ON_WRITE, ROTHP_VM_SPLIT_ON_WRITE);
}

/* The write itself, armed: 0, or -1 with what went wrong printed. */
static int nomem_store(int wfd, enum nomem_way way, const char *buf, size_t off)
{
	long b = nomem_block[way];
	struct sigaction sa, old;
	ssize_t r;
	char *m;

	if (way == NOMEM_PWRITE) {
		make_it_fail(true);
		r = pwrite(wfd, buf, PAGE, off);
		make_it_fail(false);
		if (r == (ssize_t)PAGE)
			return 0;
		ksft_print_msg("nomem: pwrite at %#zx: %s\n", off, io_error(r));
		return -1;
	}
	/* A new shared mapping: the store is its first fault. */
	m = mmap(NULL, PMD, PROT_READ | PROT_WRITE, MAP_SHARED, wfd, b * PMD);
	if (m == MAP_FAILED) {
		ksft_print_msg("nomem: mmap MAP_SHARED: %s\n", strerror(errno));
		return -1;
	}
	memset(&sa, 0, sizeof(sa));
	sa.sa_handler = on_sigbus;
	sigaction(SIGBUS, &sa, &old);
	if (!sigsetjmp(bus_env, 1)) {
		make_it_fail(true);
		memcpy(m + (off - b * PMD), buf, PAGE);
		make_it_fail(false);
		r = 0;
	} else {
		make_it_fail(false);
		ksft_print_msg("nomem: SIGBUS storing at %#zx\n", off);
		r = -1;
	}
	sigaction(SIGBUS, &old, NULL);
	munmap(m, PMD);
	return r;
}

/* One way of writing, armed: its four results. */
static void nomem_write(int fd, int wfd, char *p, enum nomem_way way, char *buf,
			const char *skip_series)
{
	const char *name = nomem_way_name[way];
	long b = nomem_block[way], split0 = 0, split1 = 0, drop0 = 0, drop1 = 0;
	long times0 = -1, times1 = -1;
	size_t off = b * PMD + NOMEM_OFF;
	struct rothp_cache_block blk;
	bool huge = false, done, same;
	char who[64];

	if (rothp_cache_blocks(fd, b * PMD, 1, &blk))
		ksft_exit_fail_msg("nomem: cannot probe the page cache of %s\n", copy);
	huge = blk.huge;
	ksft_print_msg("nomem: before %s, block %ld is %sa THP (%d pages cached)\n", name, b,
		       huge ? "" : "not ", blk.resident);
	if (!skip_series && !huge)
		ksft_print_msg("nomem: the THP of block %ld is gone before %s: nothing to split\n",
			       b, name);
	if (patched && (rothp_vmstat(ROTHP_VM_SPLIT_ON_WRITE, &split0) ||
			rothp_vmstat(ROTHP_VM_DROP_ON_WRITE, &drop0)))
		ksft_exit_fail_msg("nomem: cannot read the counters: %s\n", strerror(errno));

	fill_pattern(buf, PAGE);
	memcpy(model + off, buf, PAGE);
	failslab_arm();
	rothp_read_long(FAILSLAB "times", &times0);
	done = !nomem_store(wfd, way, buf, off);
	rothp_read_long(FAILSLAB "times", &times1);
	failslab_disarm();

	if (patched && (rothp_vmstat(ROTHP_VM_SPLIT_ON_WRITE, &split1) ||
			rothp_vmstat(ROTHP_VM_DROP_ON_WRITE, &drop1)))
		ksft_exit_fail_msg("nomem: cannot read the counters: %s\n", strerror(errno));
	if (patched)
		ksft_print_msg("nomem: %s: %s +%ld, %s +%ld, failslab times %ld -> %ld\n", name,
			       ROTHP_VM_SPLIT_ON_WRITE, split1 - split0, ROTHP_VM_DROP_ON_WRITE,
			       drop1 - drop0, times0, times1);
	else
		ksft_print_msg("nomem: %s: failslab times %ld -> %ld\n", name, times0, times1);
	way_report(way, 0, NULL, done);

	snprintf(who, sizeof(who), "nomem: after %s", name);
	same = rothp_file_is(&orig, fd, model, fsize, who);
	same = rothp_map_is(&orig, p, model, len, who) && same;
	way_report(way, 1, NULL, same);

	way_report(way, 2, skip_series, huge && split1 == split0 && drop1 - drop0 == 1);
	way_report(way, 3, skip_series, times1 == 0);
}

static void case_nomem(const struct wr_case *c)
{
	const struct rothp_case *rc = c->rc;
	const char *skip, *broken, *skip_series = NULL;
	char why[2 * PATH_MAX];
	int fd, wfd, way, i;
	void *buf;
	char *p;

	broken = failslab_missing(&skip, why, sizeof(why));
	if (skip) {
		rothp_report(rc, 0, skip, false);
		for (way = 0; way < NR_NOMEM_WAYS; way++) {
			for (i = 0; i < nomem_way.nr; i++)
				way_report(way, i, skip, false);
		}
		rothp_report(rc, 1, skip, false);
		rothp_report(rc, 2, skip, false);
		return;
	}
	make_copy();
	fd = collapse_copy(rc, &p);
	if (broken) {
		ksft_print_msg("nomem: %s\n", broken);
		for (way = 0; way < NR_NOMEM_WAYS; way++) {
			for (i = 0; i < nomem_way.nr; i++)
				way_report(way, i, NULL, false);
		}
		rothp_report(rc, 1, NULL, false);
		rothp_report(rc, 2, NULL, false);
		munmap(p, len);
		close(fd);
		rothp_scratch_remove(copy);
		return;
	}
	skip_series = patched ? large_folio_skip() : ROTHP_NO_SPLIT_ON_WRITE;

	failslab_save();
	mif_fd = open(MAKE_IT_FAIL, O_WRONLY);
	if (mif_fd < 0)
		ksft_exit_fail_msg("%s: %s\n", MAKE_IT_FAIL, strerror(errno));
	if (posix_memalign(&buf, PAGE, PAGE))
		ksft_exit_fail_msg("posix_memalign: %s\n", strerror(errno));
	/*
	 * Opened for write before anything is armed (6.12 drops the THPs of
	 * an ext4 file here). The timestamps are updated now, so that the
	 * write's own update finds the inode's block cached rather than
	 * allocating for it the one failure meant for the split.
	 */
	wfd = rothp_open_checked(copy, O_RDWR);
	if (futimens(wfd, NULL))
		ksft_print_msg("nomem: futimens: %s\n", strerror(errno));
	for (way = 0; way < NR_NOMEM_WAYS; way++)
		nomem_write(fd, wfd, p, way, buf, skip_series);
	close(wfd);

	close(mif_fd);
	mif_fd = -1;
	rothp_fault_restore();
	rothp_report(rc, 1, NULL, disk_matches(rc->name, fd, p));
	rothp_report(rc, 2, NULL, failslab_restored());
	free(buf);
	close(fd);
	rothp_scratch_remove(copy);
}

/* The cases, in the order main() runs them: their results, then how each runs. */
enum part { ODIRECT, PUNCH, OPEN, NOMEM };

static const struct rothp_case results[] = {
	[ODIRECT] = ROTHP_CASE("odirect", race_results),
	[PUNCH] = ROTHP_CASE("punch", race_results),
	[OPEN] = ROTHP_CASE("open", buffered_results),
	[NOMEM] = ROTHP_CASE("nomem", nomem_results),
};

#define RACE(i, step, probe, buffered, inval)	\
	{ &results[i], race_case, step, probe, buffered, inval }

static const struct wr_case cases[] = {
	[ODIRECT] = RACE(ODIRECT, step_odirect, probe_odirect, false, false),
	[PUNCH] = RACE(PUNCH, step_punch, probe_punch, false, true),
	[OPEN] = RACE(OPEN, step_open, NULL, true, true),
	[NOMEM] = { &results[NOMEM], case_nomem, NULL, NULL, false },
};

_Static_assert(ARRAY_SIZE(cases) == ARRAY_SIZE(results), "a case without its results");

int main(int argc, char **argv)
{
	const char *fs;
	size_t i;
	int cpus;
	long v;

	/* The children print too: whole lines, each in one write. */
	setvbuf(stdout, NULL, _IOLBF, 0);
	dir = rothp_test_init(argc, argv, prog, sizeof(prog));
	fs = rothp_fs_name(dir, &large);
	ksft_set_plan(rothp_cases_plan(results, ARRAY_SIZE(results)) +
		      NR_NOMEM_WAYS * nomem_way.nr);

	cpus = rothp_nr_cpus();
	if (cpus < 2)
		ksft_exit_fail_msg("%d usable CPU: a race needs 2, and the harness gives 2\n",
				   cpus);
	patched = !rothp_vmstat(ROTHP_VM_SPLIT_ON_WRITE, &v) &&
		  !rothp_vmstat(ROTHP_VM_DROP_ON_WRITE, &v);
	orig.buf = rothp_read_whole(prog, &orig.size);
	fsize = orig.size;
	len = ROTHP_ALIGN_DOWN(fsize, PMD);
	nblk = len / PMD;
	if (nblk <= NOMEM_STORE_BLOCK)
		ksft_exit_fail_msg("%s has %ld whole 2 MiB blocks, fewer than %d\n", prog, nblk,
				   NOMEM_STORE_BLOCK + 1);
	model = mmap(NULL, fsize, PROT_READ | PROT_WRITE, MAP_SHARED | MAP_ANONYMOUS, -1, 0);
	st = mmap(NULL, sizeof(*st), PROT_READ | PROT_WRITE, MAP_SHARED | MAP_ANONYMOUS, -1, 0);
	if (model == MAP_FAILED || st == MAP_FAILED)
		ksft_exit_fail_msg("mmap: %s\n", strerror(errno));
	rnd_state = ((uint64_t)getpid() << 32) ^ (uint64_t)(rothp_now() * 1e9);
	if (rothp_thp_save() || rothp_thp_set_str("enabled", "never"))
		ksft_exit_fail_msg("cannot set THP never\n");
	ksft_print_msg("%s/%s (%s%s); %s; %zu bytes, %ld whole blocks; %d CPUs; THP never\n",
		       dir, COPY_NAME, fs,
		       large > 0 ? ", large folios" : large ? "" : ", no large folios",
		       patched ? "kernel has " ROTHP_VM_SPLIT_ON_WRITE : ROTHP_NO_SPLIT_ON_WRITE,
		       fsize, nblk, cpus);

	for (i = 0; i < ARRAY_SIZE(cases); i++)
		cases[i].run(&cases[i]);

	rothp_thp_restore();
	munmap(model, fsize);
	munmap(st, sizeof(*st));
	free(orig.buf);
	ksft_finished();
}
