/* SPDX-License-Identifier: GPL-2.0 */
/*
 * The page cache: residency, reading a file back in small folios, dropping
 * it, and what it holds of each 2 MiB block of a file.
 */
#ifndef __ROTHP_UTIL_CACHE_H
#define __ROTHP_UTIL_CACHE_H

#include <limits.h>
#include <stdbool.h>
#include <stddef.h>
#include <sys/types.h>

double rothp_resident_fraction(void *addr, size_t len);
int rothp_prewarm(const char *path);
int rothp_drop_caches(void);
int rothp_fresh_cache(const char *path, char *why, size_t len);

/* rothp_fresh_cache(), or exit failing. */
#define rothp_fresh_cache_checked(path) do {				\
	char __why[PATH_MAX + 64];					\
									\
	if (rothp_fresh_cache((path), __why, sizeof(__why)))		\
		ksft_exit_fail_msg("%s\n", __why);			\
} while (0)

/* One 2 MiB block of a file as the page cache holds it. */
struct rothp_cache_block {
	off_t offset;		/* file offset, 2 MiB-aligned */
	int resident;		/* pages of it in the page cache, of 512 */
	int dirty;		/* ... of those dirty */
	int writeback;		/* ... under writeback */
	bool huge;		/* all 512 one PMD-sized folio */
};

int rothp_cache_blocks(int fd, off_t offset, long nr, struct rothp_cache_block *blk);
long rothp_cache_huge(const char *path, off_t offset, long nr, long *resident);

#endif /* __ROTHP_UTIL_CACHE_H */
