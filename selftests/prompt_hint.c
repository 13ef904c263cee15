// SPDX-License-Identifier: GPL-2.0
/*
 * prompt_hint <dir>: prompt collapse as a hint that the caller serves
 * itself. madvise(MADV_HUGEPAGE) newly set on an executable file mapping,
 * and with THP "always" the mmap() of one and the text execve() maps,
 * collapse every 2 MiB block of the range into a THP in the page cache and
 * PMD-map it before returning to user space, in the calling thread: on its
 * CPU time, charged to its memory cgroup, keeping no file or mount
 * reference. khugepaged is 6.12's and does no prompt work;
 * khugepaged/prompt_collapse=0 is 6.12's behaviour.
 *
 *  pin     The test disk's device mounted again on a new mount point (a
 *          new mount: the guest kernel has no loop device and the guest no
 *          mkfs.ext4 or mkfs.xfs to make a file system of its own). A file
 *          there is mapped r-x and hinted (madvise; mmap with THP always,
 *          from a cold page cache; madvise in a memory cgroup
 *          too small for a THP, so that the collapse fails), unmapped and
 *          closed, and the mount unmounted at once: no EBUSY. Unlinked at
 *          the end, the file gives its blocks back: nothing held its inode
 *          either.
 *  memcg   textprog in a new memory cgroup, its file dropped from the page
 *          cache, madvises its text: the cgroup's memory.stat file_thp
 *          covers every block, and its file grows as the whole page cache
 *          does (charged to the cgroup, not left to the root). With
 *          memory.max below a THP the collapse fails cleanly: madvise
 *          returns 0, the text stays small, textprog lives on, and what it
 *          read is the cgroup's.
 *  fair    A neighbour's populated 256 MiB MADV_HUGEPAGE heap, and a flooder
 *          calling madvise(MADV_HUGEPAGE) in a loop on a 1 GiB sparse
 *          read-only file mapping, keep khugepaged busy; textprog's text
 *          is PMD-mapped when its madvise() returns, and within 1 s of it,
 *          with khugepaged's default tunables ("default") and while it
 *          scans every 100 ms ("fast").
 *  budget  With that flood, and khugepaged scanning every 20 ms so that
 *          its CPU time is tens of ticks, that time over 10 s with
 *          prompt_collapse=1 is within 1.1x (+ 7 ticks) of 10 s with 0.
 *  storm   THP always: 300 execs of a small dynamic PIE and 300 of textprog,
 *          two loops on two CPUs, while a third process forks: every exec
 *          succeeds and textprog's text is PMD-mapped right after each.
 *
 * pin, memcg (the second time), the flood and the storm each end by
 * reading the kernel log (/dev/kmsg) for reports of trouble logged since
 * the part before; the host fails the whole run on them too, from the
 * console, but this says when they came.
 *
 * On a kernel without prompt_collapse (baseline 6.12) the results that
 * need the hint are skipped (ROTHP_NO_PROMPT), budget whole; the others
 * hold on both kernels and run on both. The results are named in the
 * tables below: the plan is their sum.
 */
#define _GNU_SOURCE
#include <dirent.h>
#include <errno.h>
#include <fcntl.h>
#include <poll.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>
#include <sys/mman.h>
#include <sys/mount.h>
#include <sys/stat.h>
#include <sys/statfs.h>
#include <sys/wait.h>

#include "kselftest.h"
#include "rothp_util.h"
#include "util_cgroup.h"
#include "util_kmsg.h"

/* A constant in a result's name, which holds no printf conversion (skip_case()). */
#define STR_(x)		#x
#define STR(x)		STR_(x)

#define MIN_BLOCKS	8		/* textprog's eligible blocks, at least */
#define MAX_BLOCKS	64
#define MAX_PRINT	5		/* reports of one kind printed */

/* pin */
#define MNT_DIR		"/tmp/prompt_hint.mnt"
#define PIN_NAME	"prompt_hint.pin"
#define PIN_CHILD_MS	(120 * 1000)
#define UMOUNT_RETRY_MS	(5 * 1000)	/* after an EBUSY: did it pass? */
#define FREE_MS		(10 * 1000)
#define FREE_PERCENT	90		/* of the file's blocks, given back */

/*
 * memcg. SMALL_MAX is below one THP (2 MiB) whatever else the cgroup
 * holds, so no reclaim can make a THP's charge fit; textprog, a static
 * program, lives in it (its text is page cache, reclaimable).
 */
#define CG_NAME		"rothp_prompt_hint"
#define SMALL_MAX	"1536K"
/*
 * memory.stat is exact after mm/memcontrol.c's periodic flush, every
 * FLUSH_TIME (2 s); the page cache outside the cgroup may still move by
 * a little (journal, atime): that, at most, in kB.
 */
#define STAT_FLUSH_MS	2200
#define CACHE_TOL_KB	512
#define SMALL_TOUCH	"touch 512"	/* every 512th stub: a few pages */

/* fair, budget and the flood */
#define NEIGHBOUR_MIB	256
#define FLOOD_NAME	"prompt_hint.sparse"
#define FLOOD_BYTES	(1UL << 30)
#define FLOOD_PAUSE_MS	1		/* between the flooder's rounds */
#define FAIR_S		1
#define FAIR_MS		(FAIR_S * 1000)
#define POLL_MS		20
#define FAST_PAGES	"65536"		/* pages_to_scan: 128 blocks a pass */
#define BUDGET_SLEEP	"20"		/* scan_sleep_millisecs in the windows */
#define HEAP_MS		(180 * 1000)	/* for khugepaged to collapse the heap */
#define WINDOW_S	5
#define RATIO		1.1
/*
 * /proc/PID/stat gives utime and stime (their sum is the exact runtime,
 * cputime_adjust()) each truncated to whole ticks of USER_HZ: a reading is
 * up to 2 ticks low, a difference of two up to 2 ticks off either way.
 * prompt_collapse=1's windows are back to back, one difference, up to 2
 * ticks high; 0's two windows are two differences, up to 4 ticks low,
 * which 1.1x makes 4.4: 6.4 ticks in all, so with 7 the truncation alone
 * cannot fail the check. 7 ticks are 70 ms of the 10 s.
 */
#define SLACK_TICKS	7

/* storm */
#define SMALL_PROG	"pieprog_small"	/* 256 KiB of text: no whole 2 MiB block */
#define STORM_EXECS	300
#define EXEC_MS		(60 * 1000)	/* for one exec of the small program */
#define STORM_MS	(600 * 1000)	/* for a loop */
#define FORK_ANON	(8UL << 20)	/* the forker's anonymous region */

static char prog[PATH_MAX], small_prog[PATH_MAX];
static const char *dir;
static const char *skip;	/* why the hint's results are skipped, or NULL */
static struct rothp_kmsg kmsg;
static char kmsg_why[128];
static const char *kmsg_skip;
static char memcg_why[256];
static const char *memcg_skip;
static struct rothp_cgroup cg;

/* Skip every result of case c, saying why. */
static void skip_case(const struct rothp_case *c, const char *why)
{
	int i;

	for (i = 0; i < c->nr; i++)
		rothp_report(c, i, why, false);
}

/* Result i of c: no report of trouble logged since the last look. */
static void report_log(const struct rothp_case *c, int i)
{
	long n = rothp_kmsg_splats(&kmsg, c->name, MAX_PRINT);

	rothp_report(c, i, n < 0 ? kmsg_skip : NULL, n == 0);
}

/* --- pin ---------------------------------------------------------------- */

static const char *const pin_madvise_results[] = {
	"the test disk's file system mounts again on a new mount point",
	"open, mmap r-x and MADV_HUGEPAGE of a file there succeed",
	"every 2 MiB block of the mapping PMD-mapped when madvise() returns",
	"munmap, close, then umount at once: umount succeeds, no EBUSY",
};

static const char *const pin_mmap_results[] = {
	"the test disk's file system mounts again on a new mount point",
	"open and mmap r-x of a file there, not cached, with THP always succeed",
	"every 2 MiB block of the mapping PMD-mapped when mmap() returns",
	"munmap, close, then umount at once: umount succeeds, no EBUSY",
};

static const char *const pin_memcg_results[] = {
	"the test disk's file system mounts again on a new mount point",
	"in a memory cgroup with memory.max " SMALL_MAX
	": open, mmap r-x and MADV_HUGEPAGE succeed",
	"no block PMD-mapped: a THP does not fit the cgroup",
	"munmap, close, then umount at once: umount succeeds, no EBUSY",
};

static const char *const pin_end_results[] = {
	"the file's blocks are freed once it is unlinked: nothing holds its inode",
	"no report of trouble in the kernel log",
};

enum pin_kind { PIN_MADVISE, PIN_MMAP, PIN_MEMCG };

/* What the child of a pin variant did, in memory shared with the parent. */
enum pin_stage { STAGE_JOIN, STAGE_OPEN, STAGE_MMAP, STAGE_MADVISE, STAGE_MUNMAP,
		 STAGE_CLOSE, STAGE_DONE };

static const char *const stage_names[] = { "joining the cgroup", "open", "mmap", "madvise",
					    "munmap", "close", "done" };

struct pin_out {
	enum pin_stage stage;	/* STAGE_DONE, or the step that failed */
	int err;		/* its errno */
	long pmd;		/* FilePmdMapped of the mapping, bytes */
	int umount_rc, umount_err;
	double umount_s;	/* how long umount() took */
};

/* The test disk's mount: device, type, and the root of its file system there. */
struct disk_mount {
	char src[PATH_MAX];
	char type[32];
	char root[PATH_MAX];
};

/*
 * The mount whose mount point is path, from /proc/self/mountinfo ("ID
 * PARENT MAJ:MIN ROOT POINT OPTIONS [TAGS] - TYPE SOURCE SUPEROPTIONS");
 * the last one listed, which is on top. 0, or -1.
 */
static int find_mount(const char *path, struct disk_mount *dm)
{
	char real[PATH_MAX], root[PATH_MAX], point[PATH_MAX], type[32], src[PATH_MAX];
	char *line = NULL, *sep;
	size_t cap = 0;
	int ret = -1;
	FILE *fp;

	if (!realpath(path, real))
		return -1;
	fp = fopen("/proc/self/mountinfo", "r");
	if (!fp)
		return -1;
	while (getline(&line, &cap, fp) > 0) {
		sep = strstr(line, " - ");
		if (!sep || sscanf(line, "%*d %*d %*s %4095s %4095s", root, point) != 2 ||
		    sscanf(sep + 3, "%31s %4095s", type, src) != 2 || strcmp(point, real))
			continue;
		snprintf(dm->src, sizeof(dm->src), "%s", src);
		snprintf(dm->type, sizeof(dm->type), "%s", type);
		snprintf(dm->root, sizeof(dm->root), "%s", root);
		ret = 0;
	}
	free(line);
	fclose(fp);
	return ret;
}

/*
 * The child: the steps of a variant on path, len bytes mapped from offset
 * 0, then umount at once, even after a failed step, so that the mount does
 * not outlive it. Only _exit(): the atexit handlers are the parent's.
 */
static void pin_child(enum pin_kind k, const char *path, size_t len, struct pin_out *o)
{
	char *p = MAP_FAILED;
	double t;
	int fd = -1;

	o->stage = STAGE_JOIN;
	if (k == PIN_MEMCG && rothp_cgroup_join(&cg, 0))
		goto out;
	o->stage = STAGE_OPEN;
	fd = open(path, O_RDONLY);
	if (fd < 0)
		goto out;
	o->stage = STAGE_MMAP;
	p = rothp_map_aligned(fd, len, 0, 0, PROT_READ | PROT_EXEC);
	if (p == MAP_FAILED)
		goto out;
	if (k != PIN_MMAP) {
		o->stage = STAGE_MADVISE;
		if (madvise(p, len, MADV_HUGEPAGE))
			goto out;
	}
	o->pmd = rothp_file_pmd_mapped(getpid(), (unsigned long)p);
	o->stage = STAGE_MUNMAP;
	if (munmap(p, len))
		goto out;
	p = MAP_FAILED;
	o->stage = STAGE_CLOSE;
	if (close(fd)) {
		fd = -1;
		goto out;
	}
	fd = -1;
	o->stage = STAGE_DONE;
out:
	if (o->stage != STAGE_DONE)
		o->err = errno;
	if (p != MAP_FAILED)
		munmap(p, len);
	if (fd >= 0)
		close(fd);
	t = rothp_now();
	o->umount_rc = umount2(MNT_DIR, 0);
	o->umount_err = o->umount_rc ? errno : 0;
	o->umount_s = rothp_now() - t;
	_exit(0);
}

/* After a failed umount: does it pass later? Then detach it, whatever. */
static void umount_after(const char *who)
{
	double t0 = rothp_now();
	int err = 0;

	while (umount2(MNT_DIR, 0)) {
		err = errno;
		if (err == EINVAL || err == ENOENT) {
			ksft_print_msg("%s: %s is not mounted any more\n", who, MNT_DIR);
			return;
		}
		if (rothp_now() - t0 >= UMOUNT_RETRY_MS / 1000.0) {
			ksft_print_msg("%s: umount still fails %d s later (%s): detaching it\n",
				       who, UMOUNT_RETRY_MS / 1000, strerror(err));
			if (umount2(MNT_DIR, MNT_DETACH))
				ksft_print_msg("%s: umount2(MNT_DETACH): %s\n", who,
					       strerror(errno));
			return;
		}
		usleep(50 * 1000);
	}
	ksft_print_msg("%s: umount succeeded %.2f s later\n", who, rothp_now() - t0);
}

/* One variant, on the file at path through a fresh mount of dm. */
static void pin_variant(const struct rothp_case *c, enum pin_kind k, const struct disk_mount *dm,
			const char *path, size_t len, struct pin_out *o)
{
	const char *who = c->name;
	char why[PATH_MAX + 64];
	bool child_ok, steps_ok;
	pid_t pid;
	int i;

	if (k == PIN_MEMCG && memcg_skip) {
		skip_case(c, memcg_skip);
		return;
	}
	if (k == PIN_MEMCG && rothp_cgroup_set(&cg, "memory.max", SMALL_MAX))
		ksft_exit_fail_msg("%s: cannot set memory.max %s\n", who, SMALL_MAX);
	/* The file read afresh by the hint, not found huge from the variant before. */
	if (rothp_drop_caches())
		ksft_exit_fail_msg("drop_caches: %s\n", strerror(errno));
	if (mount(dm->src, MNT_DIR, dm->type, 0, NULL)) {
		ksft_print_msg("%s: mount -t %s %s %s: %s\n", who, dm->type, dm->src, MNT_DIR,
			       strerror(errno));
		rothp_report(c, 0, NULL, false);
		snprintf(why, sizeof(why), "no fresh mount of %s", dm->src);
		for (i = 1; i < c->nr; i++)
			rothp_report(c, i, why, false);
		return;
	}
	rothp_report(c, 0, NULL, true);

	memset(o, 0, sizeof(*o));
	o->pmd = -1;
	if (k == PIN_MMAP)
		rothp_thp_set_checked("enabled", "always");
	pid = rothp_fork_checked();
	if (!pid)
		pin_child(k, path, len, o);
	child_ok = !rothp_child_wait(pid, PIN_CHILD_MS, who, NULL);
	if (k == PIN_MMAP)
		rothp_thp_set_checked("enabled", "madvise");
	if (k == PIN_MEMCG && rothp_cgroup_set(&cg, "memory.max", "max"))
		ksft_exit_fail_msg("%s: cannot set memory.max back to max\n", who);

	steps_ok = child_ok && o->stage == STAGE_DONE;
	if (!steps_ok)
		ksft_print_msg("%s: %s failed: %s\n", who, stage_names[o->stage],
			       strerror(o->err));
	ksft_print_msg("%s: FilePmdMapped %ld of %zu kB; umount after %.3f s: %s\n", who,
		       o->pmd >= 0 ? o->pmd / 1024 : -1, len >> 10, o->umount_s,
		       o->umount_rc ? strerror(o->umount_err) : "ok");
	rothp_report(c, 1, NULL, steps_ok);
	if (k == PIN_MEMCG)
		rothp_report(c, 2, NULL, steps_ok && o->pmd == 0);
	else
		rothp_report(c, 2, skip, steps_ok && o->pmd == (long)len);
	rothp_report(c, 3, NULL, child_ok && !o->umount_rc);
	if (!child_ok || o->umount_rc)
		umount_after(who);
}

/* Free bytes of the file system holding dir, after a syncfs(): -1 on error. */
static long long fs_free(int dfd)
{
	struct statfs sf;

	if (syncfs(dfd) || fstatfs(dfd, &sf))
		return -1;
	return (long long)sf.f_bfree * sf.f_bsize;
}

static void test_pin(const struct rothp_case *variants, const struct rothp_case *end)
{
	struct disk_mount dm;
	struct pin_out *o;
	char copy[PATH_MAX], path[PATH_MAX + 64], why[PATH_MAX + 64];
	long long before, now = -1, want;
	struct stat st;
	double t0;
	size_t len;
	int dfd, k;

	if (find_mount(dir, &dm) || strcmp(dm.root, "/")) {
		snprintf(why, sizeof(why), "%s is not the root of a mount in /proc/self/mountinfo",
			 dir);
		for (k = PIN_MADVISE; k <= PIN_MEMCG; k++)
			skip_case(&variants[k], why);
		skip_case(end, why);
		return;
	}
	ksft_print_msg("pin: %s is %s (%s), mounted again on %s for each variant\n", dir, dm.src,
		       dm.type, MNT_DIR);
	if (mkdir(MNT_DIR, 0755) && errno != EEXIST)
		ksft_exit_fail_msg("mkdir %s: %s\n", MNT_DIR, strerror(errno));
	rothp_scratch_copy_checked(copy, prog, dir, PIN_NAME);
	if (stat(copy, &st))
		ksft_exit_fail_msg("%s: %s\n", copy, strerror(errno));
	len = ROTHP_ALIGN_DOWN((size_t)st.st_size, ROTHP_PMD_SIZE);
	snprintf(path, sizeof(path), MNT_DIR "/%s", PIN_NAME);
	o = mmap(NULL, sizeof(*o), PROT_READ | PROT_WRITE, MAP_SHARED | MAP_ANONYMOUS, -1, 0);
	if (o == MAP_FAILED)
		ksft_exit_fail_msg("mmap: %s\n", strerror(errno));

	pin_variant(&variants[PIN_MADVISE], PIN_MADVISE, &dm, path, len, o);
	pin_variant(&variants[PIN_MMAP], PIN_MMAP, &dm, path, len, o);
	pin_variant(&variants[PIN_MEMCG], PIN_MEMCG, &dm, path, len, o);
	munmap(o, sizeof(*o));
	if (rmdir(MNT_DIR))
		ksft_print_msg("rmdir %s: %s\n", MNT_DIR, strerror(errno));

	/* Unlinked, with nothing holding it, the inode is evicted and its blocks freed. */
	dfd = open(dir, O_RDONLY | O_DIRECTORY);
	if (dfd < 0)
		ksft_exit_fail_msg("%s: %s\n", dir, strerror(errno));
	before = fs_free(dfd);
	want = (long long)st.st_blocks * 512 * FREE_PERCENT / 100;
	rothp_scratch_remove(copy);
	t0 = rothp_now();
	while (before >= 0 && rothp_now() - t0 < FREE_MS / 1000.0) {
		now = fs_free(dfd);
		if (now < 0 || now - before >= want)
			break;
		usleep(100 * 1000);
	}
	ksft_print_msg("pin: unlinking the %lld kB file freed %lld kB within %.1f s\n",
		       (long long)st.st_blocks / 2,
		       before >= 0 && now >= 0 ? (now - before) >> 10 : -1, rothp_now() - t0);
	close(dfd);
	rothp_report(end, 0, NULL, before >= 0 && now >= 0 && now - before >= want);
	report_log(end, 1);
}

/* --- memcg -------------------------------------------------------------- */

static const char *const memcg_results[] = {
	"MADV_HUGEPAGE of textprog's text in a new memory cgroup returns 0",
	"every eligible block PMD-mapped when madvise() returns",
	"the cgroup's memory.stat file_thp covers every eligible block",
	"the cgroup's memory.stat file grows as the page cache does, by what was read in",
	TEXTPROC_FINISH_RESULTS,
};

static const char *const memcg_small_results[] = {
	"memory.max " SMALL_MAX ", less than a THP: MADV_HUGEPAGE returns 0",
	"the text stays small: no block PMD-mapped or huge in the page cache",
	"textprog lives on: no OOM kill, its stubs still return their index",
	"what textprog read is charged to the cgroup: the page cache outside it grows by at most "
	STR(CACHE_TOL_KB) " kB",
	"no report of trouble in the kernel log",
	TEXTPROC_FINISH_RESULTS,
};

/* What the cgroup and the page cache hold; sizes in kB. */
struct memsnap {
	long cg_file, cg_thp;	/* the cgroup's memory.stat file and file_thp */
	long all_file;		/* the page cache of the whole system (nr_file_pages) */
	long oom_kill;		/* the cgroup's memory.events */
	long resident;		/* pages of the text's eligible blocks in the page cache */
	long huge;		/* ... of those blocks, one THP each */
};

/* The file offset of the first eligible block of textprog's text, and how many there are. */
static int text_blocks(struct textproc *tp, off_t *first, long *nr)
{
	struct rothp_vma vma;

	if (rothp_find_vma(tp->pid, tp->start, &vma))
		return -1;
	*nr = rothp_vma_eligible_blocks(&vma);
	*first = vma.offset + (ROTHP_ALIGN_UP(vma.start, ROTHP_PMD_SIZE) - vma.start);
	return *nr >= MIN_BLOCKS && *nr <= MAX_BLOCKS ? 0 : -1;
}

/* Once memory.stat has been flushed: 0, or -1 (said). */
static int memsnap_take(struct memsnap *s, off_t first, long nr, const char *who)
{
	struct rothp_cache_block blk[MAX_BLOCKS];
	long i, pages;
	int fd, ret;

	memset(s, 0, sizeof(*s));
	usleep(STAT_FLUSH_MS * 1000);
	/* Fold the CPUs' vmstat deltas in; /proc/vmstat is exact after a second anyway. */
	rothp_write_file("/proc/sys/vm/stat_refresh", "1", 0, false);
	if (rothp_cgroup_field(&cg, "memory.stat", "file", &s->cg_file) ||
	    rothp_cgroup_field(&cg, "memory.stat", "file_thp", &s->cg_thp) ||
	    rothp_cgroup_field(&cg, "memory.events", "oom_kill", &s->oom_kill) ||
	    rothp_vmstat("nr_file_pages", &pages)) {
		ksft_print_msg("%s: cannot read %s's memory.stat or memory.events, or vmstat: %s\n",
			       who, cg.path, strerror(errno));
		return -1;
	}
	s->cg_file >>= 10;
	s->cg_thp >>= 10;
	s->all_file = pages * (ROTHP_PAGE_SIZE >> 10);
	fd = open(prog, O_RDONLY);
	ret = fd < 0 ? -1 : rothp_cache_blocks(fd, first, nr, blk);
	if (fd >= 0)
		close(fd);
	if (ret) {
		ksft_print_msg("%s: cannot look at the page cache of %s: %s\n", who, prog,
			       strerror(errno));
		return -1;
	}
	for (i = 0; i < nr; i++) {
		s->resident += blk[i].resident;
		s->huge += blk[i].huge;
	}
	return 0;
}

static void memsnap_print(const struct memsnap *b, const struct memsnap *a, const char *who)
{
	ksft_print_msg("%s: cgroup file %ld -> %ld kB, file_thp %ld -> %ld kB; page cache %+ld kB in all; text: %ld -> %ld pages cached, %ld -> %ld blocks huge\n",
		       who, b->cg_file, a->cg_file, b->cg_thp, a->cg_thp, a->all_file - b->all_file,
		       b->resident, a->resident, b->huge, a->huge);
}

/*
 * Start textprog ("none") inside the cgroup: the test joins it, forks
 * textprog there, and goes back to the root, so that textprog reads its
 * file in from its exec on as a member.
 */
static void start_in_cgroup(struct textproc *tp, const char *who)
{
	int rc;

	if (rothp_drop_caches())
		ksft_exit_fail_msg("drop_caches: %s\n", strerror(errno));
	if (rothp_cgroup_join(&cg, 0))
		ksft_exit_fail_msg("%s: cannot join %s\n", who, cg.path);
	rc = textproc_start(tp, prog, "none");
	if (rothp_cgroup_leave(0))
		ksft_exit_fail_msg("%s: cannot leave %s\n", who, cg.path);
	if (rc)
		ksft_exit_fail_msg("%s: cannot start %s\n", who, prog);
}

/* Drop what textprog has not mapped of its file from the page cache. */
static void drop_unmapped(const char *who)
{
	int fd = open(prog, O_RDONLY);

	if (fd < 0 || posix_fadvise(fd, 0, 0, POSIX_FADV_DONTNEED))
		ksft_print_msg("%s: POSIX_FADV_DONTNEED of %s failed\n", who, prog);
	if (fd >= 0)
		close(fd);
}

static void test_memcg(const struct rothp_case *c)
{
	struct memsnap b, a;
	struct textproc tp;
	long nr = 0, pmd, read_kb, d_cg, d_all;
	bool snaps;
	off_t first = 0;
	double t0;
	int rc;

	if (memcg_skip) {
		skip_case(c, memcg_skip);
		return;
	}
	if (rothp_cgroup_set(&cg, "memory.max", "max"))
		ksft_exit_fail_msg("memcg: cannot set memory.max max\n");
	start_in_cgroup(&tp, c->name);
	if (text_blocks(&tp, &first, &nr))
		ksft_exit_fail_msg("memcg: textprog's text has %ld eligible blocks, not %d to %d\n",
				   nr, MIN_BLOCKS, MAX_BLOCKS);
	drop_unmapped(c->name);
	snaps = !memsnap_take(&b, first, nr, c->name);
	rc = textproc_hugepage(&tp, c->name, &t0);
	pmd = rothp_file_pmd_mapped(tp.pid, tp.start);
	ksft_print_msg("memcg: madvise returned %d after %.3f s; %ld of %ld blocks PMD-mapped\n",
		       rc, rothp_now() - t0, pmd > 0 ? pmd / (long)ROTHP_PMD_SIZE : pmd, nr);
	snaps = !memsnap_take(&a, first, nr, c->name) && snaps;
	if (snaps)
		memsnap_print(&b, &a, c->name);
	rothp_report(c, 0, NULL, rc == 0);
	rothp_report(c, 1, skip, pmd == nr * (long)ROTHP_PMD_SIZE);
	rothp_report(c, 2, skip, snaps && a.cg_thp >= nr * (long)(ROTHP_PMD_SIZE >> 10));
	/* What was not cached of the blocks is read in, into THPs charged to the cgroup. */
	read_kb = (nr * (long)(ROTHP_PMD_SIZE / ROTHP_PAGE_SIZE) - b.resident) *
		  (long)(ROTHP_PAGE_SIZE >> 10);
	d_cg = a.cg_file - b.cg_file;
	d_all = a.all_file - b.all_file;
	if (snaps)
		ksft_print_msg("memcg: %ld kB to read in; the page cache grew %ld kB, the cgroup's %ld kB\n",
			       read_kb, d_all, d_cg);
	rothp_report(c, 3, skip, snaps && d_all >= read_kb - CACHE_TOL_KB &&
		     d_cg >= d_all - CACHE_TOL_KB);
	textproc_finish_case(c, &tp);
}

static void test_memcg_small(const struct rothp_case *c)
{
	struct memsnap b, a;
	struct textproc tp;
	char reply[128];
	long nr = 0, pmd, cur = -1, d_cg, d_all, calls = 0;
	bool snaps, alive;
	off_t first = 0;
	int rc, set, ok = 0;
	double t0;

	if (memcg_skip) {
		skip_case(c, memcg_skip);
		return;
	}
	start_in_cgroup(&tp, c->name);
	set = rothp_cgroup_set(&cg, "memory.max", SMALL_MAX);
	rothp_cgroup_read_long(&cg, "memory.current", &cur);
	ksft_print_msg("memcg small: memory.max %s, memory.current %ld kB\n", SMALL_MAX,
		       cur >= 0 ? cur >> 10 : -1);
	if (text_blocks(&tp, &first, &nr))
		ksft_exit_fail_msg("memcg small: textprog's text has %ld eligible blocks\n", nr);
	drop_unmapped(c->name);
	snaps = !memsnap_take(&b, first, nr, c->name);
	rc = textproc_hugepage(&tp, c->name, &t0);
	pmd = rothp_file_pmd_mapped(tp.pid, tp.start);
	ksft_print_msg("memcg small: madvise returned %d after %.3f s; FilePmdMapped %ld kB\n", rc,
		       rothp_now() - t0, pmd >= 0 ? pmd >> 10 : pmd);
	/* A few stubs, as a process that runs its text: what it reads is the cgroup's too. */
	if (!textproc_cmd(&tp, SMALL_TOUCH, reply, sizeof(reply)) &&
	    sscanf(reply, SMALL_TOUCH " %d %ld", &ok, &calls) != 2)
		ok = 0;
	snaps = !memsnap_take(&a, first, nr, c->name) && snaps;
	if (snaps)
		memsnap_print(&b, &a, c->name);
	alive = ok == 1 && calls > 0 && snaps && a.oom_kill == b.oom_kill;
	if (!alive)
		ksft_print_msg("memcg small: '%s' gave %d after %ld calls; oom_kill %ld -> %ld\n",
			       SMALL_TOUCH, ok, calls, b.oom_kill, a.oom_kill);
	d_cg = a.cg_file - b.cg_file;
	d_all = a.all_file - b.all_file;
	rothp_report(c, 0, NULL, !set && rc == 0);
	rothp_report(c, 1, NULL, pmd == 0 && snaps && a.huge == 0);
	rothp_report(c, 2, NULL, alive);
	rothp_report(c, 3, NULL, snaps && d_all - d_cg <= CACHE_TOL_KB);
	if (rothp_cgroup_set(&cg, "memory.max", "max"))
		ksft_exit_fail_msg("memcg small: cannot set memory.max back to max\n");
	report_log(c, 4);
	textproc_finish_case(c, &tp);
}

/* --- the flood, fair, budget -------------------------------------------- */

/* The flooder: a child calling madvise() on a sparse file mapping until told to stop. */
struct flood {
	pid_t pid;
	int ctl;		/* write end of a pipe: the child stops at its EOF */
	long *shared;		/* [0] madvise calls, [1] calls that failed */
	char path[PATH_MAX];
};

/*
 * Map the sparse file read-only, MADV_HUGEPAGE it (which registers the mm
 * with khugepaged, whose scan then walks 512 empty blocks), and until EOF
 * on ctl, each round: MADV_NOHUGEPAGE then MADV_HUGEPAGE of one 2 MiB
 * block in turn (a VMA newly made VM_HUGEPAGE each time, as a hint needs),
 * and MADV_HUGEPAGE of the whole, then a pause. Only _exit().
 */
static void flood_child(int ready, int ctl, const char *path, long *shared)
{
	struct pollfd pfd = { .fd = ctl, .events = POLLIN };
	size_t nr = FLOOD_BYTES / ROTHP_PMD_SIZE, i;
	char c = 'r', *p = MAP_FAILED, *piece;
	int fd, rc, ret;

	rothp_spread(1);
	fd = open(path, O_RDONLY);
	if (fd >= 0)
		p = rothp_map_aligned(fd, FLOOD_BYTES, 0, 0, PROT_READ);
	if (p == MAP_FAILED || madvise(p, FLOOD_BYTES, MADV_HUGEPAGE))
		_exit(1);
	if (write(ready, &c, 1) != 1)
		_exit(2);
	for (i = 0; ; i++) {
		piece = p + (i % nr) * ROTHP_PMD_SIZE;
		rc = madvise(piece, ROTHP_PMD_SIZE, MADV_NOHUGEPAGE);
		rc |= madvise(piece, ROTHP_PMD_SIZE, MADV_HUGEPAGE);
		rc |= madvise(p, FLOOD_BYTES, MADV_HUGEPAGE);
		rothp_shared_add(&shared[0], 3);
		if (rc)
			rothp_shared_add(&shared[1], 1);
		do {
			ret = poll(&pfd, 1, FLOOD_PAUSE_MS);
		} while (ret < 0 && errno == EINTR);
		if (ret)
			break;	/* EOF: stop */
	}
	_exit(0);
}

/* Make the 1 GiB sparse file and start the flooder: 0, or -1 (said). */
static int flood_start(struct flood *f)
{
	struct pollfd pfd = { .events = POLLIN };
	int ready[2], ctl[2], fd, ret;
	char c;

	f->pid = -1;
	f->ctl = -1;
	snprintf(f->path, sizeof(f->path), "%s/%s", dir, FLOOD_NAME);
	f->shared = mmap(NULL, 2 * sizeof(long), PROT_READ | PROT_WRITE,
			 MAP_SHARED | MAP_ANONYMOUS, -1, 0);
	if (f->shared == MAP_FAILED || rothp_scratch_add(f->path))
		return -1;
	fd = open(f->path, O_WRONLY | O_CREAT | O_TRUNC, 0644);
	if (fd < 0 || ftruncate(fd, FLOOD_BYTES) || close(fd)) {
		ksft_print_msg("flood: %s: %s\n", f->path, strerror(errno));
		return -1;
	}
	if (pipe2(ready, O_CLOEXEC) || pipe2(ctl, O_CLOEXEC))
		return -1;
	f->pid = rothp_fork();
	if (!f->pid) {
		close(ready[0]);
		close(ctl[1]);
		flood_child(ready[1], ctl[0], f->path, f->shared);
	}
	close(ready[1]);
	close(ctl[0]);
	f->ctl = ctl[1];
	pfd.fd = ready[0];
	do {
		ret = poll(&pfd, 1, 60 * 1000);
	} while (ret < 0 && errno == EINTR);
	ret = f->pid > 0 && ret > 0 && read(ready[0], &c, 1) == 1 ? 0 : -1;
	close(ready[0]);
	if (ret)
		ksft_print_msg("flood: the flooder did not start\n");
	else
		ksft_print_msg("flood: flooder %d madvises a %lu MiB sparse read-only mapping of %s\n",
			       (int)f->pid, FLOOD_BYTES >> 20, f->path);
	return ret;
}

/* Stop the flooder: 0 if it exited 0. */
static int flood_stop(struct flood *f)
{
	int ret;

	if (f->ctl >= 0)
		close(f->ctl);
	f->ctl = -1;
	ret = rothp_child_wait(f->pid, 30 * 1000, "flooder", NULL);
	f->pid = -1;
	return ret;
}

static const char *const fair_results[] = {
	"MADV_HUGEPAGE of the text returns 0",
	"every eligible block of the text PMD-mapped when madvise() returns",
	"every eligible block of the text PMD-mapped within " STR(FAIR_S) " s of madvise()",
	TEXTPROC_FINISH_RESULTS,
};

static void test_fair(const struct rothp_case *c)
{
	struct rothp_huge_wait hw;
	struct textproc tp;
	long eligible, pmd;
	double t0, secs;
	int pre, rc;

	pre = textproc_start_fresh(&tp, prog, c->name);
	eligible = textproc_eligible(&tp);
	rc = textproc_hugepage(&tp, c->name, &t0);
	pmd = rothp_file_pmd_mapped(tp.pid, tp.start);
	ksft_print_msg("%s: madvise returned %d after %.3f s, %ld of %ld blocks PMD-mapped then\n",
		       c->name, rc, rothp_now() - t0, pmd > 0 ? pmd / (long)ROTHP_PMD_SIZE : pmd,
		       eligible);
	rothp_report(c, 0, NULL, rc == 0);
	rothp_report(c, 1, skip, !pre && eligible >= MIN_BLOCKS &&
		     pmd == eligible * (long)ROTHP_PMD_SIZE);
	secs = textproc_wait_huge(&tp, t0, 100, FAIR_MS, POLL_MS, &hw);
	ksft_print_msg("%s: %ld of %ld blocks PMD-mapped %.3f s after madvise (%d polls)%s\n",
		       c->name, hw.blocks, hw.eligible, secs >= 0 ? secs : rothp_now() - t0,
		       hw.polls, hw.run_failed ? ", then a run failed" : "");
	rothp_report(c, 2, skip, !pre && secs >= 0 && hw.eligible >= MIN_BLOCKS);
	textproc_finish_case(c, &tp);
}

/* khugepaged's pid: the process named so (a kernel thread), or -1. */
static pid_t khugepaged_pid(void)
{
	char path[64], comm[32];
	struct dirent *de;
	pid_t pid = -1;
	int n;
	DIR *d;

	d = opendir("/proc");
	while (d && pid < 0 && (de = readdir(d))) {
		n = atoi(de->d_name);
		if (n <= 0)
			continue;
		snprintf(path, sizeof(path), "/proc/%d/comm", n);
		if (!rothp_read_line(path, comm, sizeof(comm)) && !strcmp(comm, "khugepaged"))
			pid = n;
	}
	if (d)
		closedir(d);
	return pid;
}

/* utime + stime of pid from /proc/PID/stat, in ticks of USER_HZ; -1 on error. */
static long task_ticks(pid_t pid)
{
	char path[64], buf[1024], *p;
	unsigned long ut, st;

	snprintf(path, sizeof(path), "/proc/%d/stat", (int)pid);
	if (rothp_read_line(path, buf, sizeof(buf)))
		return -1;
	/* After the comm, in parentheses: fields 3 to 13, then utime (14) and stime (15). */
	p = strrchr(buf, ')');
	if (!p || sscanf(p + 1, " %*c %*d %*d %*d %*d %*d %*u %*u %*u %*u %*u %lu %lu",
			 &ut, &st) != 2)
		return -1;
	return ut + st;
}

/* One reading at a window's edge. */
struct budget_mark {
	long ticks;		/* khugepaged's utime + stime */
	long scans;		/* khugepaged/full_scans */
	long calls;		/* the flooder's madvise calls */
	double t;
};

static int budget_mark(struct budget_mark *m, pid_t kpid, const struct flood *f)
{
	m->t = rothp_now();
	m->ticks = task_ticks(kpid);
	m->calls = rothp_shared_get(&f->shared[0]);
	if (rothp_read_long(ROTHP_THP_SYSFS "khugepaged/full_scans", &m->scans))
		m->scans = -1;
	return m->ticks < 0 || m->scans < 0 ? -1 : 0;
}

static const char *const budget_results[] = {
	"khugepaged runs",
	"khugepaged completes full scans in every window: the flood keeps it busy",
	"khugepaged's CPU time with prompt_collapse=1 within " STR(RATIO) "x + " STR(SLACK_TICKS)
	" ticks of that with 0",
};

/*
 * Four windows of WINDOW_S, prompt_collapse 0, 1, 1, 0 (so that what
 * changes with time, the neighbour's heap collapsing, weighs on both), the
 * two with 1 back to back. The edges are marks 0 to 4; mark 2 is not read.
 */
static void test_budget(const struct rothp_case *c, const struct flood *f)
{
	struct budget_mark m[5];
	long off, on, hz = sysconf(_SC_CLK_TCK);
	bool marks = true, scans;
	pid_t kpid;
	int i;

	if (skip) {
		skip_case(c, skip);
		return;
	}
	kpid = khugepaged_pid();
	rothp_report(c, 0, NULL, kpid > 0);
	if (kpid <= 0) {
		for (i = 1; i < c->nr; i++)
			rothp_report(c, i, "no khugepaged thread", false);
		return;
	}
	/* More passes, more CPU time to compare; each pass as before. */
	rothp_thp_set_checked("khugepaged/scan_sleep_millisecs", BUDGET_SLEEP);
	if (rothp_prompt_set(0))
		ksft_exit_fail_msg("budget: cannot set prompt_collapse=0\n");
	usleep(500 * 1000);
	marks = !budget_mark(&m[0], kpid, f) && marks;
	sleep(WINDOW_S);
	if (rothp_prompt_set(1))
		ksft_exit_fail_msg("budget: cannot set prompt_collapse=1\n");
	marks = !budget_mark(&m[1], kpid, f) && marks;
	sleep(2 * WINDOW_S);
	if (rothp_prompt_set(0))
		ksft_exit_fail_msg("budget: cannot set prompt_collapse=0\n");
	marks = !budget_mark(&m[3], kpid, f) && marks;
	sleep(WINDOW_S);
	marks = !budget_mark(&m[4], kpid, f) && marks;
	if (rothp_prompt_set(1))
		ksft_exit_fail_msg("budget: cannot set prompt_collapse=1\n");

	off = (m[1].ticks - m[0].ticks) + (m[4].ticks - m[3].ticks);
	on = m[3].ticks - m[1].ticks;
	ksft_print_msg("budget: khugepaged %d, %ld ticks/s; prompt_collapse=0: %ld + %ld ticks, =1: %ld ticks; full scans %ld, %ld, %ld; flooder calls %ld, %ld, %ld\n",
		       (int)kpid, hz, m[1].ticks - m[0].ticks, m[4].ticks - m[3].ticks, on,
		       m[1].scans - m[0].scans, m[3].scans - m[1].scans, m[4].scans - m[3].scans,
		       m[1].calls - m[0].calls, m[3].calls - m[1].calls, m[4].calls - m[3].calls);
	ksft_print_msg("budget: windows of %.2f, %.2f and %.2f s\n", m[1].t - m[0].t,
		       m[3].t - m[1].t, m[4].t - m[3].t);
	scans = marks && m[1].scans > m[0].scans && m[3].scans > m[1].scans &&
		m[4].scans > m[3].scans;
	rothp_report(c, 1, NULL, scans);
	rothp_report(c, 2, NULL, marks && on <= RATIO * off + SLACK_TICKS);
}

static const char *const flood_results[] = {
	"the flooder's madvise() calls on its 1 GiB sparse mapping all return 0",
	"the flooder runs until stopped and exits 0",
	"nothing of the sparse file read in: a mapping without PROT_EXEC is not hinted",
	"no report of trouble in the kernel log",
};

/* Wait for khugepaged to make the neighbour's heap huge: the seconds it took, or -1. */
static double heap_wait(const struct rothp_neighbour *nb)
{
	char path[64];
	double t0 = rothp_now();
	long kb = 0;

	snprintf(path, sizeof(path), "/proc/%d/smaps_rollup", (int)nb->pid);
	while (rothp_now() - t0 < HEAP_MS / 1000.0) {
		if (rothp_field_read(path, "AnonHugePages", ':', &kb))
			break;
		if (kb >= (long)nb->mib << 10) {
			ksft_print_msg("flood: the neighbour's %lu MiB heap huge after %.1f s\n",
				       nb->mib, rothp_now() - t0);
			return rothp_now() - t0;
		}
		usleep(500 * 1000);
	}
	ksft_print_msg("flood: the neighbour's heap has %ld of %lu MiB huge after %.1f s; measuring anyway\n",
		       kb >> 10, nb->mib, rothp_now() - t0);
	return -1;
}

/* --- storm -------------------------------------------------------------- */

static const char *const storm_results[] = {
	STR(STORM_EXECS) " execs of " SMALL_PROG ", a dynamic PIE, all exit 0",
	STR(STORM_EXECS) " execs of textprog all start, run every stub right and exit 0",
	"textprog's text all PMD-mapped right after each of its execs",
	"a third process forks all the while: every fork succeeds, every child exits 0",
	"no report of trouble in the kernel log",
};

/* The storm's counters, shared with its three processes. */
struct storm {
	long small_ok, big_ok, big_huge;
	long forks, fork_bad;
	long errors, reports;
	long stop;		/* the forker stops once set */
	long ms[2];		/* how long each loop took */
	long cpu[2];		/* the CPU each loop ran on, -1 unpinned */
};

/* One exec of the small program, "run": its stdout (one line) thrown away. */
static bool exec_small(struct storm *st, int i)
{
	pid_t pid = rothp_fork();
	int null;

	if (!pid) {
		null = open("/dev/null", O_WRONLY);
		if (null >= 0)
			dup2(null, STDOUT_FILENO);
		execl(small_prog, small_prog, "run", (char *)NULL);
		_exit(127);
	}
	if (pid < 0) {
		rothp_child_error(&st->errors, &st->reports, MAX_PRINT, "storm", "fork: %s",
				  strerror(errno));
		return false;
	}
	if (!rothp_child_wait(pid, EXEC_MS, rothp_shared_get(&st->reports) < MAX_PRINT ?
			      SMALL_PROG : NULL, NULL))
		return true;
	rothp_child_error(&st->errors, &st->reports, MAX_PRINT, "storm",
			  "exec %d of %s run failed", i, small_prog);
	return false;
}

/* One exec of textprog: its text looked at as soon as it is ready, run, stopped. */
static bool exec_big(struct storm *st, int i)
{
	struct textproc tp;
	long eligible, pmd, calls = 0;
	int ran;
	bool ok;

	if (textproc_start(&tp, prog, "none")) {
		rothp_child_error(&st->errors, &st->reports, MAX_PRINT, "storm",
				  "exec %d of textprog failed", i);
		return false;
	}
	eligible = textproc_eligible(&tp);
	pmd = rothp_file_pmd_mapped(tp.pid, tp.start);
	if (eligible >= MIN_BLOCKS && pmd == eligible * (long)ROTHP_PMD_SIZE)
		rothp_shared_add(&st->big_huge, 1);
	else if (!skip)
		rothp_child_error(&st->errors, &st->reports, MAX_PRINT, "storm",
				  "exec %d of textprog: FilePmdMapped %ld kB of %ld eligible blocks",
				  i, pmd >= 0 ? pmd >> 10 : pmd, eligible);
	ran = textproc_run(&tp, &calls);
	ok = ran == 1 && !textproc_stop(&tp);
	if (!ok)
		rothp_child_error(&st->errors, &st->reports, MAX_PRINT, "storm",
				  "exec %d of textprog: run gave %d after %ld calls, or it did not exit 0",
				  i, ran, calls);
	return ok;
}

/* Loop which (0: the small program, 1: textprog), on CPU which if pinned. Only _exit(). */
static void storm_loop(struct storm *st, int which, bool pin)
{
	double t0 = rothp_now();
	int i;

	st->cpu[which] = pin ? rothp_spread(which) : -1;
	for (i = 0; i < STORM_EXECS; i++) {
		if (which ? exec_big(st, i) : exec_small(st, i))
			rothp_shared_add(which ? &st->big_ok : &st->small_ok, 1);
	}
	rothp_shared_set(&st->ms[which], (long)((rothp_now() - t0) * 1000));
	_exit(0);
}

/*
 * The forker: fork, the child writing a byte to each 2 MiB block of an
 * anonymous region (THP "always": copies on write of huge pages) and
 * reading one of each block of textprog's file, mapped r-x, and exiting,
 * until told to stop. textprog is mapped (a hint at mmap) only once the
 * textprog loop's first exec is done and its blocks are huge: before, the
 * children's faults on its small folios would race that exec's collapse,
 * which the hint may then leave to khugepaged (a transient failure), and
 * "PMD-mapped right after each exec" would test the race, not the hint.
 * Only _exit().
 */
static void storm_forker(struct storm *st)
{
	char *text = MAP_FAILED, *anon;
	size_t len = 0, off;
	struct stat sb;
	int fd, status;
	pid_t pid;

	anon = mmap(NULL, FORK_ANON, PROT_READ | PROT_WRITE, MAP_PRIVATE | MAP_ANONYMOUS, -1, 0);
	fd = open(prog, O_RDONLY);
	if (anon == MAP_FAILED || fd < 0 || fstat(fd, &sb))
		_exit(1);
	for (off = 0; off < FORK_ANON; off += ROTHP_PAGE_SIZE)
		anon[off] = 1;
	len = ROTHP_ALIGN_DOWN((size_t)sb.st_size, ROTHP_PMD_SIZE);
	while (!rothp_shared_get(&st->stop)) {
		if (text == MAP_FAILED && rothp_shared_get(&st->big_ok) > 0) {
			text = rothp_map_aligned(fd, len, 0, 0, PROT_READ | PROT_EXEC);
			if (text == MAP_FAILED)
				_exit(2);
		}
		pid = fork();
		if (!pid) {
			for (off = 0; off < FORK_ANON; off += ROTHP_PMD_SIZE)
				anon[off]++;
			if (text != MAP_FAILED)
				rothp_touch(text, len, ROTHP_PMD_SIZE);
			_exit(0);
		}
		if (pid < 0 || waitpid(pid, &status, 0) != pid || !WIFEXITED(status) ||
		    WEXITSTATUS(status)) {
			rothp_shared_add(&st->fork_bad, 1);
			if (pid < 0)
				usleep(10 * 1000);
		}
		rothp_shared_add(&st->forks, 1);
	}
	_exit(0);
}

/*
 * The hints of the storm, as the series' trace event tells them, by
 * source and result, those that left a block small apart: what to say
 * when textprog's text was not all PMD-mapped. Nothing on a kernel
 * without the event.
 */
#define HINT_EVENT	"huge_memory/mm_khugepaged_prompt_collapse"
#define STORM_MARK	"prompt_hint: the storm starts"
#define HINT_KINDS	16

static bool storm_trace_start(void)
{
	if (skip || rothp_trace_write("trace_marker", STORM_MARK, 0, false))
		return false;
	if (!rothp_trace_event_on(HINT_EVENT))
		return true;
	ksft_print_msg("storm: no %s event (%s): the hints are not traced\n", HINT_EVENT,
		       strerror(errno));
	rothp_trace_restore();
	return false;
}

/* The value of "name=" in a trace line, as far as the next ',' or space, in buf. */
static void trace_field(const char *line, const char *name, char *buf, size_t len)
{
	const char *p = strstr(line, name);

	if (!p) {
		snprintf(buf, len, "?");
		return;
	}
	p += strlen(name);
	snprintf(buf, len, "%.*s", (int)strcspn(p, ", \n"), p);
}

static void storm_trace_report(void)
{
	char kinds[HINT_KINDS][128], line[1024], src[32], res[48], key[128];
	char nr[16], huge[16], skipped[16];
	int counts[HINT_KINDS] = { 0 }, n = 0, i;
	FILE *fp;

	rothp_trace_restore();
	fp = fopen(ROTHP_TRACEFS "trace", "r");
	while (fp && fgets(line, sizeof(line), fp)) {
		if (strstr(line, STORM_MARK)) {
			memset(counts, 0, sizeof(counts));
			n = 0;
			continue;
		}
		if (!strstr(line, "mm_khugepaged_prompt_collapse:"))
			continue;
		trace_field(line, "source=", src, sizeof(src));
		trace_field(line, "result=", res, sizeof(res));
		trace_field(line, " nr=", nr, sizeof(nr));
		trace_field(line, "huge=", huge, sizeof(huge));
		trace_field(line, "skipped=", skipped, sizeof(skipped));
		snprintf(key, sizeof(key), "%s %s%s", src, res,
			 atol(nr) != atol(huge) + atol(skipped) ? " (blocks left small)" : "");
		for (i = 0; i < n && strcmp(kinds[i], key); i++)
			;
		if (i == n && n < HINT_KINDS)
			snprintf(kinds[n++], sizeof(kinds[0]), "%s", key);
		if (i < n)
			counts[i]++;
	}
	if (fp)
		fclose(fp);
	for (i = 0; i < n; i++)
		ksft_print_msg("storm: traced hints: %s: %d\n", kinds[i], counts[i]);
	if (!n)
		ksft_print_msg("storm: no hint traced\n");
}

static void test_storm(const struct rothp_case *c)
{
	bool pin = rothp_nr_cpus() >= 2, loop_ok[2], forker_ok, traced;
	struct storm *st;
	pid_t pids[3];
	int i;

	st = mmap(NULL, sizeof(*st), PROT_READ | PROT_WRITE, MAP_SHARED | MAP_ANONYMOUS, -1, 0);
	if (st == MAP_FAILED)
		ksft_exit_fail_msg("mmap: %s\n", strerror(errno));
	memset(st, 0, sizeof(*st));
	rothp_thp_set_checked("enabled", "always");
	if (rothp_drop_caches())
		ksft_exit_fail_msg("drop_caches: %s\n", strerror(errno));
	traced = storm_trace_start();
	for (i = 0; i < 2; i++) {
		pids[i] = rothp_fork_checked();
		if (!pids[i])
			storm_loop(st, i, pin);
	}
	pids[2] = rothp_fork_checked();
	if (!pids[2])
		storm_forker(st);
	loop_ok[0] = !rothp_child_wait(pids[0], STORM_MS, "storm: " SMALL_PROG " loop", NULL);
	loop_ok[1] = !rothp_child_wait(pids[1], STORM_MS, "storm: textprog loop", NULL);
	rothp_shared_set(&st->stop, 1);
	forker_ok = !rothp_child_wait(pids[2], 60 * 1000, "storm: forker", NULL);
	rothp_thp_set_checked("enabled", "madvise");
	if (traced && st->big_huge != STORM_EXECS)
		storm_trace_report();
	else if (traced)
		rothp_trace_restore();

	if (pin)
		ksft_print_msg("storm: %d CPUs: the " SMALL_PROG " loop pinned to CPU %ld, textprog's to CPU %ld (sched_setaffinity)\n",
			       rothp_nr_cpus(), st->cpu[0], st->cpu[1]);
	else
		ksft_print_msg("storm: 1 CPU: the loops run unpinned, in turn\n");
	ksft_print_msg("storm: %s: %ld of %d exits 0 in %.1f s; textprog: %ld of %d ok, %ld with all text PMD-mapped, in %.1f s; %ld forks, %ld failed\n",
		       SMALL_PROG, st->small_ok, STORM_EXECS, st->ms[0] / 1000.0, st->big_ok,
		       STORM_EXECS, st->big_huge, st->ms[1] / 1000.0, st->forks, st->fork_bad);
	rothp_report(c, 0, NULL, loop_ok[0] && st->small_ok == STORM_EXECS);
	rothp_report(c, 1, NULL, loop_ok[1] && st->big_ok == STORM_EXECS);
	rothp_report(c, 2, skip, st->big_huge == STORM_EXECS);
	rothp_report(c, 3, NULL, forker_ok && st->forks > 0 && !st->fork_bad);
	report_log(c, 4);
	munmap(st, sizeof(*st));
}

/* --- main --------------------------------------------------------------- */

enum part { PIN_MADVISE_CASE, PIN_MMAP_CASE, PIN_MEMCG_CASE, PIN_END, MEMCG, MEMCG_SMALL,
	    FAIR_DEFAULT, FAIR_FAST, BUDGET, FLOOD, STORM };

static const struct rothp_case cases[] = {
	[PIN_MADVISE_CASE] = ROTHP_CASE("pin madvise", pin_madvise_results),
	[PIN_MMAP_CASE] = ROTHP_CASE("pin mmap", pin_mmap_results),
	[PIN_MEMCG_CASE] = ROTHP_CASE("pin memcg", pin_memcg_results),
	[PIN_END] = ROTHP_CASE("pin", pin_end_results),
	[MEMCG] = ROTHP_CASE("memcg", memcg_results),
	[MEMCG_SMALL] = ROTHP_CASE("memcg small", memcg_small_results),
	[FAIR_DEFAULT] = ROTHP_CASE("fair default", fair_results),
	[FAIR_FAST] = ROTHP_CASE("fair fast", fair_results),
	[BUDGET] = ROTHP_CASE("budget", budget_results),
	[FLOOD] = ROTHP_CASE("flood", flood_results),
	[STORM] = ROTHP_CASE("storm", storm_results),
};

int main(int argc, char **argv)
{
	struct rothp_neighbour nb;
	long huge, resident = -1;
	struct flood f;

	dir = rothp_test_init(argc, argv, prog, sizeof(prog));
	ksft_set_plan(rothp_cases_plan(cases, ARRAY_SIZE(cases)));
	skip = rothp_prompt_skip();
	ksft_print_msg("%s\n", skip ? skip : "kernel has prompt_collapse");
	if (snprintf(small_prog, sizeof(small_prog), "%s/%s", dir, SMALL_PROG) >=
	    (int)sizeof(small_prog) || access(small_prog, X_OK))
		ksft_exit_fail_msg("%s/%s: %s (image.sh puts it on every disk)\n", dir, SMALL_PROG,
				   strerror(errno));
	if (rothp_kmsg_open(&kmsg)) {
		snprintf(kmsg_why, sizeof(kmsg_why),
			 "cannot read /dev/kmsg: %s (the host still scans the console)",
			 strerror(errno));
		kmsg_skip = kmsg_why;
	}

	if (rothp_thp_save())
		ksft_exit_fail_msg("cannot save the THP settings\n");
	rothp_prompt_setup_checked(skip);
	if (rothp_memcg_setup(memcg_why, sizeof(memcg_why))) {
		memcg_skip = memcg_why;
	} else if (rothp_cgroup_create(&cg, CG_NAME)) {
		snprintf(memcg_why, sizeof(memcg_why), "cannot make %s/%s: %s", ROTHP_CGROUP_ROOT,
			 CG_NAME, strerror(errno));
		memcg_skip = memcg_why;
	}
	if (memcg_skip)
		ksft_print_msg("%s\n", memcg_skip);

	test_pin(&cases[PIN_MADVISE_CASE], &cases[PIN_END]);
	test_memcg(&cases[MEMCG]);
	test_memcg_small(&cases[MEMCG_SMALL]);

	/* The flood: khugepaged with its defaults has all of it to scan first. */
	if (rothp_neighbour_start(&nb, NEIGHBOUR_MIB))
		ksft_exit_fail_msg("cannot start a %d MiB neighbour\n", NEIGHBOUR_MIB);
	if (flood_start(&f))
		ksft_exit_fail_msg("cannot start the flooder\n");
	test_fair(&cases[FAIR_DEFAULT]);
	/* Then scanning every 100 ms, 128 blocks a pass: collapsing the heap, now. */
	if (rothp_thp_khugepaged_fast())
		ksft_exit_fail_msg("cannot make khugepaged scan every 100 ms\n");
	rothp_thp_set_checked("khugepaged/pages_to_scan", FAST_PAGES);
	test_fair(&cases[FAIR_FAST]);
	heap_wait(&nb);
	test_budget(&cases[BUDGET], &f);
	ksft_print_msg("flood: %ld madvise calls, %ld rounds with a failure\n",
		       rothp_shared_get(&f.shared[0]), rothp_shared_get(&f.shared[1]));
	rothp_report(&cases[FLOOD], 0, NULL, rothp_shared_get(&f.shared[0]) > 0 &&
		     !rothp_shared_get(&f.shared[1]));
	rothp_report(&cases[FLOOD], 1, NULL, !flood_stop(&f));
	rothp_neighbour_stop(&nb);
	huge = rothp_cache_huge(f.path, 0, FLOOD_BYTES / ROTHP_PMD_SIZE, &resident);
	ksft_print_msg("flood: %ld pages of the sparse file cached, %ld blocks huge\n", resident,
		       huge);
	rothp_report(&cases[FLOOD], 2, NULL, huge == 0 && resident == 0);
	rothp_scratch_remove(f.path);
	report_log(&cases[FLOOD], 3);
	if (rothp_thp_khugepaged_defaults())
		ksft_exit_fail_msg("cannot set khugepaged's default tunables\n");

	test_storm(&cases[STORM]);

	rothp_cgroup_remove(&cg);
	rothp_memcg_teardown();
	rothp_kmsg_close(&kmsg);
	rothp_thp_restore();
	ksft_finished();
}
