/* SPDX-License-Identifier: GPL-2.0 */
/*
 * Mappings: /proc/PID/maps and smaps, the 2 MiB blocks of a file VMA that
 * can be PMD-mapped, MADV_COLLAPSE, and mappings at a chosen alignment.
 */
#ifndef __ROTHP_UTIL_MAPS_H
#define __ROTHP_UTIL_MAPS_H

#include <stddef.h>
#include <sys/types.h>

#include "kinfo.h"	/* struct rothp_vma, the line parsers hugetext uses too */

int rothp_find_vma(pid_t pid, unsigned long addr, struct rothp_vma *vma);
int rothp_smaps_line(pid_t pid, unsigned long addr, const char *field, char *buf, size_t len);
long rothp_smaps_field(pid_t pid, unsigned long addr, const char *field);
long rothp_file_pmd_mapped(pid_t pid, unsigned long addr);
long rothp_vma_eligible_blocks(const struct rothp_vma *vma);
long rothp_pmd_blocks(unsigned long start, unsigned long end);

int rothp_madv_collapse(void *addr, size_t len, int *err);
int rothp_collapse_mapping(const char *who, char *p, size_t len, int *err, long *pmd);
void *rothp_map_aligned(int fd, size_t len, off_t offset, size_t misalign, int prot);
void rothp_touch(const void *p, size_t len, size_t step);

/* The first len bytes of fd mapped private, prot, 2 MiB-aligned, or exit failing. */
#define rothp_map_checked(fd, len, prot) ({				\
	char *__p = rothp_map_aligned((fd), (len), 0, 0, (prot));	\
									\
	if (__p == MAP_FAILED)						\
		ksft_exit_fail_msg("mmap: %s\n", strerror(errno));	\
	__p;								\
})

/* ... r-x, as text is mapped. */
#define rothp_map_text(fd, len)	rothp_map_checked((fd), (len), PROT_READ | PROT_EXEC)

#endif /* __ROTHP_UTIL_MAPS_H */
