// SPDX-License-Identifier: GPL-2.0
/*
 * write_open <dir>: what happens when a file whose page cache holds
 * read-only file THPs is opened for write. It works on a copy of textprog
 * in <dir>, never executed, so that opening it for write cannot fail with
 * ETXTBSY nor disturb the textprog of the other tests, and the THPs counted
 * are this file's alone; the copy is removed at the end.
 *
 * Linux 6.12: do_dentry_open() (fs/open.c), for FMODE_WRITE, when
 * filemap_nr_thps() of the mapping is not 0, unmaps the whole file
 * (unmap_mapping_range()) and truncates all of its page cache
 * (truncate_inode_pages()). nr_thps is only counted by collapse_file()
 * (mm/khugepaged.c) for mappings without large folio support
 * (filemap_nr_thps_inc(), include/linux/pagemap.h): ext4 in 6.12. Those
 * results are named "6.12: ...".
 *
 * With the series, the open leaves the page cache and the PMD mappings
 * alone; a THP is split back to base pages only when a write reaches it
 * (file_thp_split_for_write(), from __filemap_get_folio() and
 * do_page_mkwrite()), and /proc/vmstat thp_file_split_on_write counts one
 * per THP split (thp_file_drop_on_write one per THP that would not split
 * and was removed). A kernel without the counter is taken for baseline 6.12
 * and those checks are skipped, saying so.
 *
 * "touch": with the file open for write, a pwrite() into block 1, a store
 * through a MAP_SHARED mapping into block 2, a punched hole in block 3, an
 * O_DIRECT write into block 4, a pwrite() into block 5 and a MAP_SHARED
 * store into block 6 while a pipe holds a reference to their THP (splice()
 * from the file), and the same into blocks 7 and 8 while a pipe holds one
 * taken by vmsplice() from the r-x mapping, read back as written, through
 * pread() and the r-x mapping; on the series exactly those eight blocks
 * stop being PMD-sized folios (the four held ones are dropped, as they
 * cannot split: counted in thp_file_drop_on_write), every other block stays
 * one, and stays PMD-mapped. The writes and stores into held THPs return
 * within HELD_BOUND_MS, as their median: the writer does not wait for the
 * pipe's reference (earlier versions of the series backed off in 20 ms
 * sleeps, 60 ms in all, before dropping it, each time); the median keeps
 * one slow step of the emulated guest from failing the check, and every
 * latency is printed.
 *
 * XFS mappings support large folios (xfs_icache.c), so nr_thps stays 0 and a
 * write open leaves the page cache and the PMD mappings alone on both.
 *
 * Every file system type the ext4 driver registers (ext4, ext3, and ext2
 * with EXT4_USE_FOR_EXT2) declares FS_THP_SPLIT_AT_WRITE. ext2 by its own
 * driver (fs/ext2) does not: on it the series splits every THP of the file
 * at the open (khugepaged_split_for_write()), keeping the page cache, and
 * thp_file_split_on_write counts each one. No THP can come back while the
 * file is open for write, so "touch" then splits and drops nothing. A mount
 * is the ext4 driver's when /sys/fs/ext4/DEVICE exists.
 *
 * The results are named in the tables below, "touch" once for each way it
 * writes: the plan is their sum.
 */
#define _GNU_SOURCE
#include <errno.h>
#include <fcntl.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>
#include <sys/mman.h>
#include <sys/stat.h>
#include <sys/sysmacros.h>

#include "kselftest.h"
#include "rothp_util.h"

#define COPY_NAME	"write_open.copy"

/* What the write open is expected to do to the copy's THPs. */
enum write_open_mode {
	MODE_DROP,	/* 6.12 on a file system without large folios */
	MODE_LAZY,	/* the series: split where a write reaches, not on open */
	MODE_SPLIT_OPEN, /* the series, no FS_THP_SPLIT_AT_WRITE: split all at open */
	MODE_KEEP,	/* a file system with large folios: nr_thps stays 0 */
	MODE_UNKNOWN,	/* large folio support unknown */
};

/* touch: the blocks written to, in order, and how. */
enum touch_way {
	TOUCH_PWRITE, TOUCH_MMAP, TOUCH_PUNCH, TOUCH_DIRECT, TOUCH_HELD, TOUCH_HELD_MMAP,
	TOUCH_VMSPLICED, TOUCH_VMSPLICED_MMAP,
	NR_TOUCH
};
static const char * const touch_name[NR_TOUCH] = {
	"pwrite()", "a MAP_SHARED store", "a punched hole", "an O_DIRECT write",
	"pwrite() while a pipe holds the THP", "a MAP_SHARED store while a pipe holds the THP",
	"pwrite() while a vmspliced pipe holds the THP",
	"a MAP_SHARED store while a vmspliced pipe holds the THP",
};
#define TOUCH_BLOCKS	(NR_TOUCH + 3)	/* block 0 and the last two stay untouched */
#define TOUCH_OFF	(16UL << 10)	/* where in its block each touch lands */
#define TOUCH_LEN	4096UL
#define TOUCH_SPLITS	2	/* pwrite() and MAP_SHARED; hole and O_DIRECT do not count */
#define TOUCH_DROPS	4	/* the held ones */
#define HELD_BOUND_MS	50	/* a write into a held THP: no waiting */
_Static_assert(TOUCH_BLOCKS == 11, "touch's skip message counts 11 blocks");

static bool touch_held(enum touch_way way)
{
	return way >= TOUCH_HELD;
}

/*
 * Sectors read so far from the block device holding path, from the third
 * field of /sys/dev/block/MAJOR:MINOR/stat (Documentation/block/stat.rst).
 * On failure, why says what was missing.
 */
static int disk_sectors_read(const char *path, unsigned long long *sectors, char *why,
			     size_t len)
{
	char spath[64], buf[512];
	struct stat st;

	if (stat(path, &st)) {
		snprintf(why, len, "stat %s: %s", path, strerror(errno));
		return -1;
	}
	snprintf(spath, sizeof(spath), "/sys/dev/block/%u:%u/stat", major(st.st_dev),
		 minor(st.st_dev));
	if (rothp_read_line(spath, buf, sizeof(buf))) {
		snprintf(why, len, "no disk statistics for %s: %s: %s", path, spath,
			 strerror(errno));
		return -1;
	}
	if (sscanf(buf, "%*u %*u %llu", sectors) != 1) {
		snprintf(why, len, "%s: unexpected contents '%s'", spath, buf);
		return -1;
	}
	return 0;
}

/*
 * The type of the mount dir is on, as /proc/self/mounts names it (the
 * longest mount point that is a prefix of dir), in type.
 */
static const char *mount_type(const char *dir, char *type, size_t len)
{
	char mnt[PATH_MAX], fstype[64], line[PATH_MAX + 256];
	size_t best = 0, n;
	FILE *fp;

	snprintf(type, len, "unknown");
	fp = fopen("/proc/self/mounts", "r");
	if (!fp)
		return type;
	while (fgets(line, sizeof(line), fp)) {
		if (sscanf(line, "%*s %4095s %63s", mnt, fstype) != 2)
			continue;
		n = strlen(mnt);
		if (n < best || strncmp(dir, mnt, n))
			continue;
		if (dir[n] == '/' || dir[n] == '\0' || !strcmp(mnt, "/")) {
			best = n;
			snprintf(type, len, "%s", fstype);
		}
	}
	fclose(fp);
	return type;
}

/*
 * Is the file system dir is on served by the ext4 driver? It makes
 * /sys/fs/ext4/DEVICE for each of its mounts, whatever the type's name.
 */
static bool ext4_driver(const char *dir)
{
	char link[64], target[PATH_MAX], sysfs[PATH_MAX + 32];
	struct stat st;
	const char *name;
	ssize_t n;

	if (stat(dir, &st))
		return false;
	snprintf(link, sizeof(link), "/sys/dev/block/%u:%u", major(st.st_dev),
		 minor(st.st_dev));
	n = readlink(link, target, sizeof(target) - 1);
	if (n <= 0)
		return false;
	target[n] = '\0';
	name = strrchr(target, '/');
	name = name ? name + 1 : target;
	snprintf(sysfs, sizeof(sysfs), "/sys/fs/ext4/%s", name);
	return !access(sysfs, F_OK);
}

/*
 * Write into block b of the file as way says; mirror it in model. rx is the
 * file's r-x mapping; *ms is how long the write itself took. Returns 0, -1
 * on failure, 1 when the file system cannot punch holes (ext2), with model
 * left as the file is.
 */
static int touch_block(const char *path, int wfd, enum touch_way way, long b, char *model,
		       char *rx, double *ms)
{
	off_t off = b * ROTHP_PMD_SIZE + TOUCH_OFF;
	loff_t head = b * ROTHP_PMD_SIZE;
	int dfd, pfd[2], ret = -1;
	struct iovec iov;
	ssize_t held;
	double t0;
	size_t i;
	char *m;
	void *buf;

	for (i = 0; i < TOUCH_LEN; i++)
		model[off + i] = way == TOUCH_PUNCH ? 0 : (char)~model[off + i];
	switch (way) {
	case TOUCH_PWRITE:
		ret = pwrite(wfd, model + off, TOUCH_LEN, off) == (ssize_t)TOUCH_LEN ? 0 : -1;
		break;
	case TOUCH_MMAP:
		m = mmap(NULL, ROTHP_PMD_SIZE, PROT_READ | PROT_WRITE, MAP_SHARED, wfd,
			 b * ROTHP_PMD_SIZE);
		if (m == MAP_FAILED)
			break;
		memcpy(m + TOUCH_OFF, model + off, TOUCH_LEN);
		ret = munmap(m, ROTHP_PMD_SIZE);
		break;
	case TOUCH_PUNCH:
		ret = fallocate(wfd, FALLOC_FL_PUNCH_HOLE | FALLOC_FL_KEEP_SIZE, off, TOUCH_LEN);
		if (ret && errno == EOPNOTSUPP)
			ret = pread(wfd, model + off, TOUCH_LEN, off) == (ssize_t)TOUCH_LEN ? 1 : -1;
		break;
	case TOUCH_DIRECT:
		dfd = open(path, O_RDWR | O_DIRECT);
		if (dfd < 0)
			break;
		if (!posix_memalign(&buf, TOUCH_LEN, TOUCH_LEN)) {
			memcpy(buf, model + off, TOUCH_LEN);
			ret = pwrite(dfd, buf, TOUCH_LEN, off) == (ssize_t)TOUCH_LEN ? 0 : -1;
			free(buf);
		}
		close(dfd);
		break;
	case TOUCH_HELD:
	case TOUCH_HELD_MMAP:
	case TOUCH_VMSPLICED:
	case TOUCH_VMSPLICED_MMAP:
		/*
		 * splice() from the file, or vmsplice() from the r-x mapping,
		 * leaves a reference to the THP in the pipe, so it cannot
		 * split: the write, or the write fault of the store, must drop
		 * it from the page cache and write to a new small folio. The
		 * pipe keeps the old bytes.
		 */
		if (pipe(pfd))
			break;
		if (way == TOUCH_HELD || way == TOUCH_HELD_MMAP) {
			held = splice(wfd, &head, pfd[1], NULL, TOUCH_LEN, 0);
		} else {
			iov.iov_base = rx + head;
			iov.iov_len = TOUCH_LEN;
			held = vmsplice(pfd[1], &iov, 1, 0);
		}
		if (held == (ssize_t)TOUCH_LEN && (way == TOUCH_HELD || way == TOUCH_VMSPLICED)) {
			t0 = rothp_now();
			ret = pwrite(wfd, model + off, TOUCH_LEN, off) == (ssize_t)TOUCH_LEN ?
			      0 : -1;
			*ms = (rothp_now() - t0) * 1e3;
		} else if (held == (ssize_t)TOUCH_LEN) {
			m = mmap(NULL, ROTHP_PMD_SIZE, PROT_READ | PROT_WRITE, MAP_SHARED, wfd,
				 b * ROTHP_PMD_SIZE);
			if (m != MAP_FAILED) {
				t0 = rothp_now();
				memcpy(m + TOUCH_OFF, model + off, TOUCH_LEN);
				*ms = (rothp_now() - t0) * 1e3;
				ret = munmap(m, ROTHP_PMD_SIZE);
			}
		}
		close(pfd[0]);
		close(pfd[1]);
		break;
	default:
		break;
	}
	return ret;
}

/* touch: these for each way, then the counters and the mapping. */
static const char *const touch_way_results[] = {
	"%s into block %ld reads back through pread and the mapping",
	"after %s, blocks 1-%ld are split, the others still huge",
};

static const char *const touch_end_results[] = {
	"%s +%d, %s +%d",
	"every untouched block is still PMD-mapped",
	"writes into a held THP return within %d ms (median)",
};

static const struct rothp_case touch_way = ROTHP_CASE("touch", touch_way_results);
static const struct rothp_case touch_end = ROTHP_CASE("touch", touch_end_results);

static int touch_plan(void)
{
	return NR_TOUCH * touch_way.nr + touch_end.nr;
}

/*
 * touch: its results, or as many skipped, named by skip alone, when skip
 * is set: why nothing can be touched (no THPs, no writer).
 */
static void touch(const char *path, int fd, int wfd, char *p, size_t len, off_t size,
		  enum write_open_mode mode, const char *skip)
{
	struct rothp_cache_block blk[TOUCH_BLOCKS];
	long split0 = 0, split1 = 0, drop0 = 0, drop1 = 0, pmd, b, i, bad;
	double ms, held_ms[NR_TOUCH], slowest = 0;
	int nheld = 0;
	int ret;
	const char *skip_blocks = skip, *skip_count = skip, *skip_way;
	uint64_t want, got_file = 0, got_map;
	char *model;
	bool lazy;
	int way;

	if (!skip && len < TOUCH_BLOCKS * ROTHP_PMD_SIZE)
		skip = "the file has fewer whole 2 MiB blocks than touch writes into (11)";
	if (skip) {
		for (i = 0; i < touch_plan(); i++)
			ksft_test_result_skip("%s: %s\n", touch_way.name, skip);
		return;
	}
	if (mode == MODE_DROP)
		skip_blocks = skip_count = "6.12: the open dropped every THP of the file";
	else if (mode == MODE_SPLIT_OPEN)
		skip_blocks = "the open split every THP of the file";
	else if (mode == MODE_KEEP)
		skip_blocks = "large folios: the file system writes through them";
	else if (mode == MODE_UNKNOWN)
		skip_blocks = skip_count = "large folio support of the file system unknown";
	if (!skip_count && (rothp_vmstat(ROTHP_VM_SPLIT_ON_WRITE, &split0) ||
			    rothp_vmstat(ROTHP_VM_DROP_ON_WRITE, &drop0)))
		skip_count = ROTHP_NO_SPLIT_ON_WRITE;

	model = malloc(size);
	if (!model || pread(fd, model, size, 0) != size)
		ksft_exit_fail_msg("touch: cannot read %s: %s\n", path, strerror(errno));

	for (way = 0; way < NR_TOUCH; way++) {
		b = way + 1;
		ms = 0;
		ret = touch_block(path, wfd, way, b, model, p, &ms);
		if (ret < 0)
			ksft_print_msg("touch: %s into block %ld: %s\n", touch_name[way], b,
				       strerror(errno));
		if (touch_held(way)) {
			ksft_print_msg("touch: %s took %.2f ms\n", touch_name[way], ms);
			held_ms[nheld++] = ms;
			if (ms > slowest)
				slowest = ms;
		}
		want = rothp_hash(model, size);
		if (rothp_file_hash(fd, 0, size, &got_file))
			ksft_print_msg("touch: pread: %s\n", strerror(errno));
		got_map = rothp_hash(p, len);
		skip_way = ret == 1 ? "the file system cannot punch holes (EOPNOTSUPP)" : NULL;
		rothp_report(&touch_way, 0, skip_way,
			     got_file == want && got_map == rothp_hash(model, len),
			     touch_name[way], b);

		if (rothp_cache_blocks(fd, 0, TOUCH_BLOCKS, blk))
			ksft_exit_fail_msg("touch: cannot probe the page cache of %s\n", path);
		bad = -1;
		for (i = 0; i < TOUCH_BLOCKS; i++)
			if (blk[i].huge != (i < 1 || i > b))
				bad = i;
		if (bad >= 0 && !skip_blocks)
			ksft_print_msg("touch: block %ld is %sa huge folio (%d pages cached)\n",
				       bad, blk[bad].huge ? "" : "not ", blk[bad].resident);
		rothp_report(&touch_way, 1, skip_blocks ? skip_blocks : skip_way, bad < 0,
			     touch_name[way], b);
	}

	if (!skip_count && (rothp_vmstat(ROTHP_VM_SPLIT_ON_WRITE, &split1) ||
			    rothp_vmstat(ROTHP_VM_DROP_ON_WRITE, &drop1)))
		skip_count = ROTHP_NO_SPLIT_ON_WRITE;
	if (!skip_count)
		ksft_print_msg("touch: %s +%ld, %s +%ld\n", ROTHP_VM_SPLIT_ON_WRITE,
			       split1 - split0, ROTHP_VM_DROP_ON_WRITE, drop1 - drop0);
	/*
	 * write_begin and page_mkwrite split through the series; a punched
	 * hole and an O_DIRECT write go through truncation and invalidation,
	 * as they would on any THP; the held THP is dropped. On large folios
	 * nothing needs splitting.
	 */
	lazy = mode == MODE_LAZY;
	rothp_report(&touch_end, 0, skip_count, split1 - split0 == (lazy ? TOUCH_SPLITS : 0) &&
		     drop1 - drop0 == (lazy ? TOUCH_DROPS : 0),
		     ROTHP_VM_SPLIT_ON_WRITE, lazy ? TOUCH_SPLITS : 0, ROTHP_VM_DROP_ON_WRITE,
		     lazy ? TOUCH_DROPS : 0);

	/* The r-x mapping still PMD-maps every untouched block it maps. */
	for (i = 0; i < (long)len; i += ROTHP_PAGE_SIZE)
		(void)*(volatile char *)(p + i);
	pmd = rothp_file_pmd_mapped(getpid(), (unsigned long)p);
	ksft_print_msg("touch: FilePmdMapped %ld kB of %zu kB\n", pmd / 1024, len >> 10);
	rothp_report(&touch_end, 1, skip_blocks, pmd == (long)(len - NR_TOUCH * ROTHP_PMD_SIZE));
	ms = rothp_median(held_ms, nheld);
	ksft_print_msg("touch: writes into a held THP: median %.2f ms, slowest %.2f ms\n", ms,
		       slowest);
	rothp_report(&touch_end, 2, NULL, nheld > 0 && ms <= HELD_BOUND_MS, HELD_BOUND_MS);
	free(model);
}

/* The collapse, the open, and what the open did; 6.12's are named "6.12: ...". */
static const char *const open_results[] = {
	"MADV_COLLAPSE of a r-x private mapping of the copy returns 0",
	"every 2 MiB block of the mapping is PMD-mapped after MADV_COLLAPSE",
	"page cache of the range fully resident after MADV_COLLAPSE",
	"open(O_RDWR) of the collapsed file succeeds",
	"6.12: open(O_RDWR) drops the page cache of a file with THPs (resident 0)",
	"6.12: open(O_RDWR) unmaps the PMD mappings of a file with THPs",
	"open(O_RDWR) keeps the page cache fully resident (mincore 1.0)",
};

/*
 * What the open did to the mappings and the THPs: kept them, or, without
 * FS_THP_SPLIT_AT_WRITE, split them all. One of the two runs; the plan
 * counts the first.
 */
static const char *const kept_results[] = {
	"open(O_RDWR) keeps the PMD mappings (FilePmdMapped unchanged)",
	"open(O_RDWR) splits none of the file's %ld THPs (%s +0)",
};

static const char *const split_results[] = {
	"open(O_RDWR) splits every THP: no PMD mapping left (%s)",
	"open(O_RDWR) splits all of the file's %ld THPs (%s +%ld)",
};

_Static_assert(ARRAY_SIZE(kept_results) == ARRAY_SIZE(split_results),
	       "the plan counts kept_results for either");

static const char *const after_results[] = {
	"%s does not move",
	"reading the whole file back after open(O_RDWR) needs no read I/O",
	"contents through the mapping and pread unchanged by open(O_RDWR)",
};

enum part { OPEN, KEPT, AFTER };

static const struct rothp_case cases[] = {
	[OPEN] = ROTHP_CASE(NULL, open_results),
	[KEPT] = ROTHP_CASE(NULL, kept_results),
	[AFTER] = ROTHP_CASE(NULL, after_results),
};

static const struct rothp_case split_case = ROTHP_CASE(NULL, split_results);

int main(int argc, char **argv)
{
	char prog[PATH_MAX], copy[PATH_MAX], why[PATH_MAX + 128], mtype[64];
	const char *dir, *fs, *skip_old, *skip_new, *skip_split, *skip_io;
	uint64_t memsum0 = 0, filesum0 = 0, memsum1 = 1, filesum1 = 1;
	unsigned long long sect0 = 0, sect1 = 0;
	long pmd, pmd_after, nthp, split0 = 0, split1 = 0, drop0 = 0, drop1 = 0;
	double frac, frac_after;
	enum write_open_mode mode;
	bool patched, io_ok, at_open;
	struct stat st;
	size_t len;
	int fd, wfd, rc, err, large;
	char *p;

	dir = rothp_test_init(argc, argv, prog, sizeof(prog));
	fs = rothp_fs_name(dir, &large);
	ksft_set_plan(rothp_cases_plan(cases, ARRAY_SIZE(cases)) + touch_plan());

	patched = !rothp_vmstat(ROTHP_VM_SPLIT_ON_WRITE, &split0);
	/*
	 * Every type the ext4 driver registers declares FS_THP_SPLIT_AT_WRITE
	 * (fs/ext4/super.c); the other file systems without large folios
	 * split at the open.
	 */
	mount_type(dir, mtype, sizeof(mtype));
	at_open = !ext4_driver(dir);
	if (!large && patched)
		mode = at_open ? MODE_SPLIT_OPEN : MODE_LAZY;
	else if (!large)
		mode = MODE_DROP;
	else
		mode = large > 0 ? MODE_KEEP : MODE_UNKNOWN;
	at_open = mode == MODE_SPLIT_OPEN;
	ksft_print_msg("%s; %s; mounted as %s%s\n", patched ? "kernel has " ROTHP_VM_SPLIT_ON_WRITE :
		       ROTHP_NO_SPLIT_ON_WRITE, large > 0 ? "large folios" :
		       large ? "large folios unknown" : "no large folios", mtype,
		       ext4_driver(dir) ? " by the ext4 driver" : "");

	rothp_scratch_copy_checked(copy, prog, dir, COPY_NAME);
	fd = open(copy, O_RDONLY);
	if (fd < 0 || fstat(fd, &st))
		ksft_exit_fail_msg("%s: %s\n", copy, strerror(errno));
	/* Whole 2 MiB blocks from offset 0: every one of them is eligible. */
	len = ROTHP_ALIGN_DOWN((size_t)st.st_size, ROTHP_PMD_SIZE);
	if (!len)
		ksft_exit_fail_msg("%s is smaller than 2 MiB\n", copy);
	p = rothp_map_text(fd, len);
	ksft_print_msg("%s (%s): %zu MiB mapped r-x private at %p\n", copy, fs, len >> 20, p);

	rc = rothp_madv_collapse(p, len, &err);
	if (rc)
		ksft_print_msg("MADV_COLLAPSE: %s (%d)\n", strerror(err), err);
	rothp_report(&cases[OPEN], 0, NULL, rc == 0);

	pmd = rothp_file_pmd_mapped(getpid(), (unsigned long)p);
	frac = rothp_resident_fraction(p, len);
	ksft_print_msg("after MADV_COLLAPSE: FilePmdMapped %ld kB of %zu kB, resident %.3f\n",
		       pmd / 1024, len >> 10, frac);
	rothp_report(&cases[OPEN], 1, NULL, pmd == (long)len);
	rothp_report(&cases[OPEN], 2, NULL, frac == 1.0);
	/* The copy is new: its THPs are the blocks just collapsed. */
	nthp = pmd > 0 ? pmd / (long)ROTHP_PMD_SIZE : 0;

	/*
	 * Checksums before the open; reading the whole file also brings its
	 * tail past the last 2 MiB block into the page cache, so that reading
	 * it back later needs no I/O when nothing was dropped.
	 */
	memsum0 = rothp_hash(p, len);
	if (rothp_file_hash(fd, 0, st.st_size, &filesum0))
		ksft_exit_fail_msg("pread %s: %s\n", copy, strerror(errno));
	if (patched && rothp_vmstat(ROTHP_VM_DROP_ON_WRITE, &drop0)) {
		ksft_print_msg("no %s in /proc/vmstat\n", ROTHP_VM_DROP_ON_WRITE);
		drop0 = -1;
	}
	if (patched)
		rothp_vmstat(ROTHP_VM_SPLIT_ON_WRITE, &split0);

	/* Keep it open for write until the checks are done. */
	wfd = open(copy, O_RDWR);
	if (wfd < 0)
		ksft_print_msg("open(O_RDWR): %s\n", strerror(errno));
	rothp_report(&cases[OPEN], 3, NULL, wfd >= 0);

	if (patched && (rothp_vmstat(ROTHP_VM_SPLIT_ON_WRITE, &split1) ||
			rothp_vmstat(ROTHP_VM_DROP_ON_WRITE, &drop1)))
		ksft_print_msg("cannot read the counters again: %s\n", strerror(errno));
	pmd_after = rothp_file_pmd_mapped(getpid(), (unsigned long)p);
	frac_after = rothp_resident_fraction(p, len);
	ksft_print_msg("after open(O_RDWR): FilePmdMapped %ld kB, resident fraction %.3f\n",
		       pmd_after / 1024, frac_after);
	if (patched)
		ksft_print_msg("%s +%ld (file had %ld THPs), %s +%ld\n", ROTHP_VM_SPLIT_ON_WRITE,
			       split1 - split0, nthp, ROTHP_VM_DROP_ON_WRITE, drop1 - drop0);

	/* Read it all back, through the mapping and with pread(). */
	why[0] = '\0';
	io_ok = !disk_sectors_read(copy, &sect0, why, sizeof(why));
	memsum1 = rothp_hash(p, len);
	if (rothp_file_hash(fd, 0, st.st_size, &filesum1))
		ksft_print_msg("pread %s: %s\n", copy, strerror(errno));
	if (io_ok)
		io_ok = !disk_sectors_read(copy, &sect1, why, sizeof(why));
	if (io_ok)
		ksft_print_msg("reading it back: %llu sectors read from the disk\n",
			       sect1 - sect0);
	else
		ksft_print_msg("%s\n", why);

	/* Which results apply: the 6.12 pins, the series' checks, or neither. */
	skip_old = NULL;
	skip_new = NULL;
	if (rc) {
		skip_old = "MADV_COLLAPSE failed: no THPs";
		skip_new = skip_old;
	} else if (wfd < 0) {
		skip_old = "open(O_RDWR) failed";
		skip_new = skip_old;
	} else if (mode == MODE_LAZY || mode == MODE_SPLIT_OPEN) {
		skip_old = "replaced: the kernel has " ROTHP_VM_SPLIT_ON_WRITE;
	} else if (mode == MODE_DROP) {
		skip_new = ROTHP_NO_SPLIT_ON_WRITE;
	} else if (mode == MODE_KEEP) {
		skip_old = "large folios: no nr_thps, nothing dropped";
	} else {
		skip_old = "large folio support of the file system unknown";
		skip_new = skip_old;
	}
	skip_split = skip_new;
	if (!skip_split && !patched)
		skip_split = ROTHP_NO_SPLIT_ON_WRITE;
	skip_io = skip_new;
	if (!skip_io && !io_ok)
		skip_io = why;

	/* 6.12, no large folios: nr_thps > 0, do_dentry_open() truncated it all. */
	rothp_report(&cases[OPEN], 4, skip_old, frac_after == 0.0);
	rothp_report(&cases[OPEN], 5, skip_old, pmd_after == 0);

	rothp_report(&cases[OPEN], 6, skip_new, frac_after == 1.0);
	/* Without FS_THP_SPLIT_AT_WRITE the open splits them all. */
	if (at_open) {
		rothp_report(&split_case, 0, skip_new, pmd_after == 0, mtype);
		rothp_report(&split_case, 1, skip_split, nthp > 0 && split1 - split0 == nthp,
			     nthp, ROTHP_VM_SPLIT_ON_WRITE, nthp);
	} else {
		rothp_report(&cases[KEPT], 0, skip_new, pmd_after == pmd);
		rothp_report(&cases[KEPT], 1, skip_split, nthp > 0 && split1 == split0, nthp,
			     ROTHP_VM_SPLIT_ON_WRITE);
	}
	rothp_report(&cases[AFTER], 0, skip_split, drop0 >= 0 && drop1 == drop0,
		     ROTHP_VM_DROP_ON_WRITE);
	rothp_report(&cases[AFTER], 1, skip_io, sect1 == sect0);

	/* Whatever was dropped or split, the contents must not change. */
	if (memsum1 != memsum0 || filesum1 != filesum0)
		ksft_print_msg("mapping hash %llx, was %llx; file hash %llx, was %llx\n",
			       (unsigned long long)memsum1, (unsigned long long)memsum0,
			       (unsigned long long)filesum1, (unsigned long long)filesum0);
	rothp_report(&cases[AFTER], 2, NULL, memsum1 == memsum0 && filesum1 == filesum0);

	touch(copy, fd, wfd, p, len, st.st_size, mode, rc || wfd < 0 ? skip_new : NULL);

	if (wfd >= 0)
		close(wfd);
	munmap(p, len);
	close(fd);
	rothp_scratch_remove(copy);
	ksft_finished();
}
