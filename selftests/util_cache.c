// SPDX-License-Identifier: GPL-2.0
/*
 * Page cache probes and control: rothp_cache_blocks() looks at a file's
 * 2 MiB blocks without changing them; rothp_fresh_cache() starts a test
 * with the file read back in small folios.
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

#include "kselftest.h"
#include "util_cache.h"
#include "util_core.h"
#include "util_maps.h"

#define DROP_CACHES		"/proc/sys/vm/drop_caches"

/* Bits of /proc/kpageflags (include/uapi/linux/kernel-page-flags.h). */
#define KPF_DIRTY		4
#define KPF_WRITEBACK		8
#define KPF_COMPOUND_HEAD	15
#define KPF_COMPOUND_TAIL	16
/* /proc/PID/pagemap entries (Documentation/admin-guide/mm/pagemap.rst). */
#define PM_PRESENT		(1ULL << 63)
#define PM_PFN_MASK		((1ULL << 55) - 1)
#define PMD_PAGES		(ROTHP_PMD_SIZE / ROTHP_PAGE_SIZE)

/* Fraction of the pages of [addr, addr+len) in the page cache, or -1. */
double rothp_resident_fraction(void *addr, size_t len)
{
	size_t i, pages = (len + ROTHP_PAGE_SIZE - 1) / ROTHP_PAGE_SIZE, in = 0;
	unsigned char *vec = malloc(pages ? pages : 1);

	if (!vec)
		return -1;
	if (mincore(addr, len, vec)) {
		free(vec);
		return -1;
	}
	for (i = 0; i < pages; i++)
		in += vec[i] & 1;
	free(vec);
	return pages ? (double)in / pages : 0;
}

/*
 * Read a whole file so its page cache holds small folios. POSIX_FADV_RANDOM
 * sets FMODE_RANDOM, so page_cache_sync_ra() (mm/readahead.c) only does
 * force_page_cache_ra() of the bytes asked for, in folios of the mapping's
 * minimum order, never the growing large folios of ordinary readahead.
 */
int rothp_prewarm(const char *path)
{
	char buf[64 * 1024];
	ssize_t n;
	int fd;

	fd = open(path, O_RDONLY);
	if (fd < 0)
		return -1;
	posix_fadvise(fd, 0, 0, POSIX_FADV_RANDOM);
	while ((n = read(fd, buf, sizeof(buf))) > 0)
		;
	close(fd);
	return n ? -1 : 0;
}

/* Write back dirty data, then drop clean page cache, dentries and inodes. */
int rothp_drop_caches(void)
{
	int fd, ret = 0;

	sync();
	fd = open(DROP_CACHES, O_WRONLY);
	if (fd < 0)
		return -1;
	if (write(fd, "3", 1) != 1)
		ret = -1;
	close(fd);
	return ret;
}

/*
 * Drop the page cache, then read path (unless NULL) back in small folios:
 * 0, or -1 with why saying what failed.
 */
int rothp_fresh_cache(const char *path, char *why, size_t len)
{
	if (rothp_drop_caches()) {
		snprintf(why, len, "drop_caches: %s", strerror(errno));
		return -1;
	}
	if (path && rothp_prewarm(path)) {
		snprintf(why, len, "cannot read %s: %s", path, strerror(errno));
		return -1;
	}
	return 0;
}

/*
 * Look at the 2 MiB block mapped at p, vec its mincore() bytes: touch its
 * cached pages, so that they are mapped, then read their PFNs (pagemap) and
 * flags (/proc/kpageflags, which reports a folio's flags for each of its
 * pages). It is one PMD-sized folio if all its pages are physically
 * contiguous from a 2 MiB-aligned PFN, a compound head followed by 511
 * tails: the page cache holds no folio larger than PMD size
 * (MAX_PAGECACHE_ORDER). (With the kernel's page and PMD sizes: 2 MiB and
 * 512 pages on x86-64.) ent and flags have room for PMD_PAGES entries.
 */
static int probe_block(int pagemap, int kpageflags, const char *p, const unsigned char *vec,
		       uint64_t *ent, uint64_t *flags, struct rothp_cache_block *blk)
{
	off_t pos = (off_t)((unsigned long)p / ROTHP_PAGE_SIZE) * sizeof(ent[0]);
	size_t i, ent_len = PMD_PAGES * sizeof(ent[0]);
	uint64_t pfn, pfn0;
	bool whole = true;

	for (i = 0; i < PMD_PAGES; i++) {
		if (vec[i] & 1)
			(void)*(volatile const char *)(p + i * ROTHP_PAGE_SIZE);
	}
	if (pread(pagemap, ent, ent_len, pos) != (ssize_t)ent_len)
		return -1;
	pfn0 = ent[0] & PM_PFN_MASK;
	for (i = 0; i < PMD_PAGES; i++) {
		flags[i] = 0;
		if (!(ent[i] & PM_PRESENT)) {
			whole = false;	/* not cached, or reclaimed since */
			continue;
		}
		pfn = ent[i] & PM_PFN_MASK;
		if (!pfn) {
			errno = EPERM;	/* PFNs read as 0 without CAP_SYS_ADMIN */
			return -1;
		}
		if (pread(kpageflags, &flags[i], sizeof(flags[i]), pfn * sizeof(flags[i])) !=
		    sizeof(flags[i]))
			return -1;
		blk->dirty += !!(flags[i] & (1ULL << KPF_DIRTY));
		blk->writeback += !!(flags[i] & (1ULL << KPF_WRITEBACK));
		if (pfn != pfn0 + i)
			whole = false;
	}
	if (!whole || pfn0 % PMD_PAGES || !(flags[0] & (1ULL << KPF_COMPOUND_HEAD)))
		return 0;
	for (i = 1; i < PMD_PAGES; i++) {
		if (!(flags[i] & (1ULL << KPF_COMPOUND_TAIL)))
			return 0;
	}
	blk->huge = true;
	return 0;
}

/*
 * Look at nr 2 MiB blocks of the file fd from offset (2 MiB-aligned) in the
 * page cache: how many pages of each are cached (mincore()), dirty and
 * under writeback, and whether it is one PMD-sized folio (probe_block()).
 * The probe mapping is PROT_READ, MADV_RANDOM and one page off 2 MiB
 * congruence: its faults read nothing ahead and only map cached pages, it
 * can never be PMD-mapped, khugepaged can collapse nothing through it, and
 * no fault in it asks for a collapse. So looking changes nothing. Needs
 * root, for the PFNs.
 */
int rothp_cache_blocks(int fd, off_t offset, long nr, struct rothp_cache_block *blk)
{
	size_t len = nr * ROTHP_PMD_SIZE, i, j;
	int pagemap, kpageflags, ret = -1, err;
	uint64_t *ent, *flags;
	unsigned char *vec;
	char *p;

	p = rothp_map_aligned(fd, len, offset, ROTHP_PAGE_SIZE, PROT_READ);
	if (p == MAP_FAILED)
		return -1;
	vec = malloc(nr * PMD_PAGES);
	ent = malloc(2 * PMD_PAGES * sizeof(*ent));
	flags = ent ? ent + PMD_PAGES : NULL;
	pagemap = open("/proc/self/pagemap", O_RDONLY);
	kpageflags = open("/proc/kpageflags", O_RDONLY);
	if (!vec || !ent || pagemap < 0 || kpageflags < 0)
		goto out;
	if (madvise(p, len, MADV_RANDOM) || mincore(p, len, vec))
		goto out;
	for (i = 0; i < (size_t)nr; i++) {
		memset(&blk[i], 0, sizeof(blk[i]));
		blk[i].offset = offset + i * ROTHP_PMD_SIZE;
		for (j = 0; j < PMD_PAGES; j++)
			blk[i].resident += vec[i * PMD_PAGES + j] & 1;
		if (blk[i].resident &&
		    probe_block(pagemap, kpageflags, p + i * ROTHP_PMD_SIZE, vec + i * PMD_PAGES,
				ent, flags, &blk[i]))
			goto out;
	}
	ret = 0;
out:
	err = errno;
	if (kpageflags >= 0)
		close(kpageflags);
	if (pagemap >= 0)
		close(pagemap);
	free(ent);
	free(vec);
	munmap(p, len);
	errno = err;
	return ret;
}

/*
 * How many of nr 2 MiB blocks of the file at path, from offset (2 MiB-aligned),
 * the page cache holds as one PMD-sized folio each (rothp_cache_blocks()),
 * and in *resident, unless it is NULL, how many of their pages it holds.
 * -1, said, when it cannot be looked at.
 */
long rothp_cache_huge(const char *path, off_t offset, long nr, long *resident)
{
	struct rothp_cache_block *blk = calloc(nr > 0 ? nr : 1, sizeof(*blk));
	long i, huge = -1, pages = 0;
	int fd = open(path, O_RDONLY);

	if (fd < 0 || !blk || rothp_cache_blocks(fd, offset, nr, blk)) {
		ksft_print_msg("cannot look at the page cache of %s: %s\n", path, strerror(errno));
		goto out;
	}
	for (i = huge = 0; i < nr; i++) {
		huge += blk[i].huge;
		pages += blk[i].resident;
	}
	if (resident)
		*resident = pages;
out:
	if (fd >= 0)
		close(fd);
	free(blk);
	return huge;
}
