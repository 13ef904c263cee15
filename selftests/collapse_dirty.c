// SPDX-License-Identifier: GPL-2.0
/*
 * collapse_dirty <dir>: MADV_COLLAPSE of file text that was just written and
 * not yet written back. An installer writes a program with write(2), closes
 * it, and a loader or the program asks for its text to be collapsed. 6.12
 * refuses: collapse_file() (mm/khugepaged.c) only starts writeback of a
 * dirty folio and fails with SCAN_FAIL, which MADV_COLLAPSE reports as
 * EINVAL, "never collapsible". The series writes the range back and tries
 * once more; if it still cannot collapse, it says EAGAIN.
 *
 * Each part writes textprog's bytes (or changes some of them) in <dir>,
 * maps the file's whole 2 MiB blocks r-x, 2 MiB-congruent, and calls
 * MADV_COLLAPSE at once:
 *   nosync        a new file written with write(2), closed, no fsync
 *   fsync         the same with fsync before close (clean: 0 on any kernel)
 *   rewrite       part of that collapsed file rewritten with write(2), closed
 *   mmap-shared   a written and fsynced file changed through a MAP_SHARED
 *                 mapping, unmapped and closed
 * Checks: 0 or EAGAIN, never EINVAL (EINVAL on a kernel without the retry,
 * 6.12, is a skip that says so); after 0, every block PMD-mapped; the
 * mapping, pread() and, after fsync and drop_caches, the disk read exactly
 * what was written, before and after the collapse.
 *
 * Every part dirties the first block. On a mapping without large folios
 * (ext4), 6.12's collapse_file() writes the whole file back and waits once
 * it has collapsed a block (filemap_write_and_wait(), so that no dirty folio
 * is in transit when do_dentry_open() truncates): MADV_COLLAPSE of a file
 * whose first block is clean collapses the dirty blocks after it too.
 * On xfs the write open keeps 2 MiB folios, which a write dirties in place
 * and MADV_COLLAPSE maps as they are: rewrite collapses there on any kernel.
 *
 * THP "enabled" is "never" meanwhile, so that khugepaged and prompt collapse
 * leave the files alone: only MADV_COLLAPSE collapses, and it ignores that
 * setting.
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

#include "kselftest.h"
#include "rothp_util.h"

#define MIN_SIZE	(16UL << 20)
#define CHUNK		(128UL << 10)	/* write(2) size, as cp uses */
#define NR_FILES	3
/* The scan result the series gives dirty or writeback folios. */
#define SCAN_DIRTY	"page_dirty_or_writeback"
#define NO_RETRY	"kernel lacks the MADV_COLLAPSE writeback retry: 6.12 fails dirty text with EINVAL (baseline 6.12)"

/* rewrite: what is written again, XORed with REWRITE_XOR. */
#define REWRITE_XOR	0xa5
static const struct {
	size_t off, len;
} rewrites[] = {
	{ 1UL << 20, 4096 },			/* the first block: see below */
	{ (3UL << 20) + 4096, 1UL << 20 },	/* inside one block */
	{ (8UL << 20) - (32UL << 10), 64UL << 10 },	/* across two */
	{ (13UL << 20) + 100, 5 },		/* a few bytes */
};

/* mmap-shared: one whole block, and 256 bytes every 256 KiB. */
#define SHARED_XOR	0x3c
#define SHARED_BLOCK	(4UL << 20)
#define SHARED_STRIDE	(256UL << 10)
#define SHARED_LEN	256

#define SCAN_FILE_FORMAT	ROTHP_TRACEFS "events/huge_memory/mm_khugepaged_scan_file/format"

/*
 * Does khugepaged know the scan result called name ("page_filled", ...)?
 * The mm_khugepaged_scan_file tracepoint prints every result by name, so
 * its format lists them all. 1 if it does, 0 if not, -1 if tracefs cannot
 * be read.
 */
static int scan_result_known(const char *name)
{
	const size_t cap = 64 * 1024;
	char quoted[128], *buf;
	ssize_t n;
	size_t len = 0;
	int fd, ret = -1;

	snprintf(quoted, sizeof(quoted), "\"%s\"", name);
	buf = malloc(cap);
	fd = open(SCAN_FILE_FORMAT, O_RDONLY);
	if (!buf || fd < 0)
		goto out;
	while (len < cap - 1 && (n = read(fd, buf + len, cap - 1 - len)) > 0)
		len += n;
	buf[len] = '\0';
	if (len)
		ret = strstr(buf, quoted) != NULL;
out:
	if (fd >= 0)
		close(fd);
	free(buf);
	return ret;
}

static char prog[PATH_MAX];
static const char *dir;
/* textprog's bytes, and how a difference from them is said */
static struct rothp_orig orig = { .say_written = true };
static size_t len;		/* the whole 2 MiB blocks from offset 0 */
static int retry_known;		/* scan_result_known(SCAN_DIRTY) */
static char files[NR_FILES][PATH_MAX];

/* Part i's file, <dir>/cd_<name>.copy, removed at exit if the part does not. */
static const char *file_path(int i, const char *name)
{
	if (snprintf(files[i], sizeof(files[i]), "%s/cd_%s.copy", dir, name) >=
	    (int)sizeof(files[i]))
		ksft_exit_fail_msg("path too long: %s\n", dir);
	if (rothp_scratch_add(files[i]))
		ksft_exit_fail_msg("%s: %s\n", files[i], strerror(errno));
	return files[i];
}

/* A new file holding textprog's bytes, written with write(2), then closed. */
static void write_new(const char *path, bool do_fsync)
{
	int fd;

	unlink(path);
	fd = open(path, O_WRONLY | O_CREAT | O_EXCL, 0755);
	if (fd < 0)
		ksft_exit_fail_msg("create %s: %s\n", path, strerror(errno));
	if (rothp_write_all(fd, orig.buf, orig.size, CHUNK))
		ksft_exit_fail_msg("write %s: %s\n", path, strerror(errno));
	if (do_fsync && fsync(fd))
		ksft_exit_fail_msg("fsync %s: %s\n", path, strerror(errno));
	if (close(fd))
		ksft_exit_fail_msg("close %s: %s\n", path, strerror(errno));
}

/* A part that collapses a dirty file, and one that collapses a clean one. */
static const char *const dirty_results[] = {
	"the r-x mapping reads what was written, before MADV_COLLAPSE",
	"MADV_COLLAPSE returns 0 or EAGAIN, not EINVAL",
	"every 2 MiB block is PMD-mapped once MADV_COLLAPSE returned 0",
	"the mapping and pread read what was written, after MADV_COLLAPSE",
	"the disk holds what was written",
};

static const char *const clean_results[] = {
	"the r-x mapping reads what was written, before MADV_COLLAPSE",
	"MADV_COLLAPSE returns 0",
	"every 2 MiB block is PMD-mapped once MADV_COLLAPSE returned 0",
	"the mapping and pread read what was written, after MADV_COLLAPSE",
};

/* The first check of a part: the mapping reads what was written. */
static void check_before(const struct rothp_case *c, const char *p, const char *model)
{
	rothp_report(c, 0, NULL, rothp_map_is(&orig, p, model, len, c->name));
}

/* What the page cache holds of the file's whole blocks, for the record. */
static void print_cache(const char *who, int fd)
{
	long nr = len / ROTHP_PMD_SIZE, i, cached = 0, dirty = 0, wb = 0, huge = 0;
	struct rothp_cache_block *blk = calloc(nr, sizeof(*blk));

	if (!blk || rothp_cache_blocks(fd, 0, nr, blk)) {
		ksft_print_msg("%s: cannot look at the page cache: %s\n", who, strerror(errno));
		free(blk);
		return;
	}
	for (i = 0; i < nr; i++) {
		cached += blk[i].resident;
		dirty += blk[i].dirty;
		wb += blk[i].writeback;
		huge += blk[i].huge;
	}
	ksft_print_msg("%s: page cache of the %ld blocks: %ld pages, %ld dirty, %ld under writeback; %ld blocks one 2 MiB folio\n",
		       who, nr, cached, dirty, wb, huge);
	free(blk);
}

/*
 * MADV_COLLAPSE of the whole mapping, once, as it comes; then, after an
 * EAGAIN, retried as rothp_madv_collapse() does, to see whether it gets
 * there. Three checks: the first call's result, the PMD mappings after a
 * 0, the contents.
 */
static void collapse_checked(const struct rothp_case *c, char *p, int fd, const char *model,
			     bool dirty)
{
	const char *who = c->name;
	long dirty_kb = -1, wb_kb = -1, pmd;
	int rc, err, final, final_err;
	const char *skip = NULL;
	char why[128];
	double t;

	print_cache(who, fd);
	rothp_meminfo("Dirty", &dirty_kb);
	rothp_meminfo("Writeback", &wb_kb);
	t = rothp_now();
	rc = madvise(p, len, MADV_COLLAPSE);
	err = rc ? errno : 0;
	t = rothp_now() - t;
	ksft_print_msg("%s: before MADV_COLLAPSE Dirty %ld kB, Writeback %ld kB; MADV_COLLAPSE of %zu MiB: %s in %.2f s\n",
		       who, dirty_kb, wb_kb, len >> 20, rc ? strerror(err) : "0", t);
	if (!dirty) {
		rothp_report(c, 1, NULL, !rc);
	} else {
		if (rc && err == EINVAL && !retry_known)
			skip = NO_RETRY;
		rothp_report(c, 1, skip, !rc || err == EAGAIN);
	}

	final = rc;
	final_err = err;
	if (rc && err == EAGAIN) {
		final = rothp_madv_collapse(p, len, &final_err);
		ksft_print_msg("%s: MADV_COLLAPSE again: %s\n", who,
			       final ? strerror(final_err) : "0");
	}
	pmd = rothp_file_pmd_mapped(getpid(), (unsigned long)p);
	ksft_print_msg("%s: FilePmdMapped %ld of %zu kB\n", who, pmd / 1024, len >> 10);
	snprintf(why, sizeof(why), "MADV_COLLAPSE failed with %s", strerror(final_err));
	rothp_report(c, 2, final ? why : NULL, pmd == (long)len);

	rothp_report(c, 3, NULL, rothp_map_is(&orig, p, model, len, who) &&
		     rothp_file_is(&orig, fd, model, orig.size, who));
}

/* The last check of a part: write back, drop the cache, read the disk. */
static void check_disk(const struct rothp_case *c, char *p, int fd, const char *model)
{
	munmap(p, len);
	rothp_report(c, 4, NULL, rothp_disk_is(&orig, fd, model, orig.size, c->name));
	close(fd);
}

static void test_nosync(const struct rothp_case *c)
{
	const char *path = file_path(0, c->name);
	char *p;
	int fd;

	write_new(path, false);
	fd = rothp_open_checked(path, O_RDONLY);
	p = rothp_map_text(fd, len);
	check_before(c, p, orig.buf);
	collapse_checked(c, p, fd, orig.buf, true);
	check_disk(c, p, fd, orig.buf);
	rothp_scratch_remove(path);
}

/* fsync, then rewrite: the second part starts from the first's collapse. */
static void test_fsync_rewrite(const struct rothp_case *fc, const struct rothp_case *rw)
{
	const char *who = fc->name, *path = file_path(1, who);
	long split0 = 0, split1 = 0;
	char *p, *model;
	size_t i;
	int fd, wfd;

	write_new(path, true);
	fd = rothp_open_checked(path, O_RDONLY);
	p = rothp_map_text(fd, len);
	check_before(fc, p, orig.buf);
	collapse_checked(fc, p, fd, orig.buf, false);

	who = rw->name;
	model = rothp_model_new(&orig);
	rothp_vmstat(ROTHP_VM_SPLIT_ON_WRITE, &split0);
	wfd = rothp_open_checked(path, O_WRONLY);
	for (i = 0; i < ARRAY_SIZE(rewrites); i++) {
		size_t off = rewrites[i].off, n = rewrites[i].len, j;

		if (off + n > len)
			ksft_exit_fail_msg("%s is too small: %zu bytes\n", prog, orig.size);
		for (j = off; j < off + n; j++)
			model[j] ^= REWRITE_XOR;
		if (lseek(wfd, off, SEEK_SET) != (off_t)off ||
		    rothp_write_all(wfd, model + off, n, CHUNK))
			ksft_exit_fail_msg("%s: write at %#zx: %s\n", who, off, strerror(errno));
	}
	if (close(wfd))
		ksft_exit_fail_msg("%s: close: %s\n", who, strerror(errno));
	if (!rothp_vmstat(ROTHP_VM_SPLIT_ON_WRITE, &split1))
		ksft_print_msg("%s: %s +%ld\n", who, ROTHP_VM_SPLIT_ON_WRITE, split1 - split0);
	check_before(rw, p, model);
	collapse_checked(rw, p, fd, model, true);
	check_disk(rw, p, fd, model);
	free(model);
	rothp_scratch_remove(path);
}

static void test_shared(const struct rothp_case *c)
{
	const char *who = c->name, *path = file_path(2, who);
	size_t off, i;
	char *p, *s, *model;
	int fd, wfd;

	if (SHARED_BLOCK + ROTHP_PMD_SIZE > len)
		ksft_exit_fail_msg("%s is too small: %zu bytes\n", prog, orig.size);
	write_new(path, true);
	model = rothp_model_new(&orig);
	wfd = rothp_open_checked(path, O_RDWR);
	s = mmap(NULL, orig.size, PROT_READ | PROT_WRITE, MAP_SHARED, wfd, 0);
	if (s == MAP_FAILED)
		ksft_exit_fail_msg("%s: mmap: %s\n", who, strerror(errno));
	/* Only these pages get dirty. */
	for (i = SHARED_BLOCK; i < SHARED_BLOCK + ROTHP_PMD_SIZE; i++) {
		model[i] ^= SHARED_XOR;
		s[i] ^= SHARED_XOR;
	}
	for (off = 128; off + SHARED_LEN <= orig.size; off += SHARED_STRIDE) {
		for (i = off; i < off + SHARED_LEN; i++) {
			model[i] ^= SHARED_XOR;
			s[i] ^= SHARED_XOR;
		}
	}
	if (munmap(s, orig.size) || close(wfd))
		ksft_exit_fail_msg("%s: munmap or close: %s\n", who, strerror(errno));

	fd = rothp_open_checked(path, O_RDONLY);
	p = rothp_map_text(fd, len);
	check_before(c, p, model);
	collapse_checked(c, p, fd, model, true);
	check_disk(c, p, fd, model);
	free(model);
	rothp_scratch_remove(path);
}

/* The parts, in the order main() runs them. */
enum part { NOSYNC, FSYNC, REWRITE, SHARED };

static const struct rothp_case cases[] = {
	[NOSYNC] = ROTHP_CASE("nosync", dirty_results),
	[FSYNC] = ROTHP_CASE("fsync", clean_results),
	[REWRITE] = ROTHP_CASE("rewrite", dirty_results),
	[SHARED] = ROTHP_CASE("mmap-shared", dirty_results),
};

int main(int argc, char **argv)
{
	const char *fs;
	int large;

	dir = rothp_test_init(argc, argv, prog, sizeof(prog));
	ksft_set_plan(rothp_cases_plan(cases, ARRAY_SIZE(cases)));
	rothp_orig_read(&orig, prog, MIN_SIZE);
	len = ROTHP_ALIGN_DOWN(orig.size, ROTHP_PMD_SIZE);
	fs = rothp_fs_name(dir, &large);
	retry_known = scan_result_known(SCAN_DIRTY);
	ksft_print_msg("%s; %zu bytes of textprog, %zu MiB of whole blocks; scan result %s: %s\n",
		       fs, orig.size, len >> 20, SCAN_DIRTY,
		       retry_known > 0 ? "known" : retry_known ? "cannot read tracefs" :
		       "unknown (no writeback retry)");
	if (rothp_thp_save() || rothp_thp_set_str("enabled", "never"))
		ksft_exit_fail_msg("cannot set THP never\n");

	test_nosync(&cases[NOSYNC]);
	test_fsync_rewrite(&cases[FSYNC], &cases[REWRITE]);
	test_shared(&cases[SHARED]);

	free(orig.buf);
	ksft_finished();
}
