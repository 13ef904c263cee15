// SPDX-License-Identifier: GPL-2.0
/*
 * Mappings: /proc/PID/maps and smaps entries (their lines parsed by
 * ../lib/kinfo.c, as hugetext parses them), the eligible 2 MiB blocks of
 * a file VMA, MADV_COLLAPSE retried on EAGAIN, and 2 MiB-aligned mappings.
 */
#define _GNU_SOURCE
#include <errno.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>
#include <sys/mman.h>
#include <sys/stat.h>

#include "kselftest.h"
#include "util_core.h"
#include "util_maps.h"

/* How long rothp_madv_collapse() retries an MADV_COLLAPSE failing with EAGAIN. */
#define COLLAPSE_RETRY_S	5.0

static FILE *open_proc(pid_t pid, const char *name)
{
	char path[64];

	snprintf(path, sizeof(path), "/proc/%d/%s", (int)pid, name);
	return fopen(path, "r");
}

/* The VMA of pid that contains addr. */
int rothp_find_vma(pid_t pid, unsigned long addr, struct rothp_vma *vma)
{
	FILE *fp = open_proc(pid, "maps");
	char *line = NULL;
	size_t cap = 0;
	int ret = -1;

	if (!fp)
		return -1;
	while (getline(&line, &cap, fp) > 0) {
		if (!rothp_vma_parse(line, vma) && addr >= vma->start && addr < vma->end) {
			ret = 0;
			break;
		}
	}
	free(line);
	fclose(fp);
	return ret;
}

/*
 * The line "<field>: ..." of the smaps entry of pid's VMA holding addr,
 * whole but for its newline, in buf: 0, or -1 if there is none.
 */
int rothp_smaps_line(pid_t pid, unsigned long addr, const char *field, char *buf, size_t len)
{
	FILE *fp = open_proc(pid, "smaps");
	size_t flen = strlen(field), cap = 0;
	struct rothp_vma vma;
	char *line = NULL;
	bool inside = false;
	int ret = -1;

	if (!fp)
		return -1;
	while (getline(&line, &cap, fp) > 0) {
		if (!rothp_vma_parse(line, &vma)) {
			if (inside)
				break;
			inside = addr >= vma.start && addr < vma.end;
			continue;
		}
		if (inside && !strncmp(line, field, flen) && line[flen] == ':') {
			snprintf(buf, len, "%.*s", (int)strcspn(line, "\n"), line);
			ret = 0;
			break;
		}
	}
	free(line);
	fclose(fp);
	return ret;
}

/* One "<field>: N kB" line of the smaps entry of pid's VMA at addr, in bytes; -1. */
long rothp_smaps_field(pid_t pid, unsigned long addr, const char *field)
{
	char line[256];
	long kb;

	if (rothp_smaps_line(pid, addr, field, line, sizeof(line)) ||
	    rothp_field_value(line, field, &kb))
		return -1;
	return kb * 1024;
}

/* FilePmdMapped of the VMA of pid containing addr, in bytes; -1 on error. */
long rothp_file_pmd_mapped(pid_t pid, unsigned long addr)
{
	return rothp_smaps_field(pid, addr, "FilePmdMapped");
}

/*
 * The 2 MiB blocks of a file VMA that can be PMD-mapped: aligned in virtual
 * memory, wholly inside the VMA, at a 2 MiB-aligned file offset (the kernel
 * requires vaddr and offset congruent, thp_vma_suitable_order()), and ending
 * within the file (collapse cannot read a folio past EOF).
 */
static long eligible_blocks(const struct rothp_vma *vma, off_t file_size)
{
	unsigned long addr, off;
	long n = 0;

	for (addr = ROTHP_ALIGN_UP(vma->start, ROTHP_PMD_SIZE);
	     addr + ROTHP_PMD_SIZE <= vma->end && addr + ROTHP_PMD_SIZE > addr;
	     addr += ROTHP_PMD_SIZE) {
		off = vma->offset + (addr - vma->start);
		if (off % ROTHP_PMD_SIZE)
			continue;
		if (off + ROTHP_PMD_SIZE > (unsigned long)file_size)
			continue;
		n++;
	}
	return n;
}

long rothp_vma_eligible_blocks(const struct rothp_vma *vma)
{
	struct stat st;

	if (vma->path[0] != '/' || stat(vma->path, &st))
		return -1;
	if (st.st_ino != vma->inode)
		return -1;	/* replaced or deleted since it was mapped */
	return eligible_blocks(vma, st.st_size);
}

/* The whole 2 MiB-aligned blocks of addresses in [start, end). */
long rothp_pmd_blocks(unsigned long start, unsigned long end)
{
	unsigned long first = ROTHP_ALIGN_UP(start, ROTHP_PMD_SIZE);
	unsigned long last = ROTHP_ALIGN_DOWN(end, ROTHP_PMD_SIZE);

	return last > first ? (last - first) / ROTHP_PMD_SIZE : 0;
}

/*
 * madvise(MADV_COLLAPSE), retried a few times on EAGAIN, which means a page
 * was transiently busy (madvise_collapse_errno() in mm/khugepaged.c). Returns
 * the last madvise() result; *err is its errno, or 0. Notes go to stderr, as
 * textprog's stdout is its reply pipe.
 */
int rothp_madv_collapse(void *addr, size_t len, int *err)
{
	double end = rothp_now() + COLLAPSE_RETRY_S;
	int rc, tries = 0;

	/*
	 * EAGAIN is MADV_COLLAPSE's "transient, try again": a folio was
	 * locked, off the LRU or had an extra reference, typically from
	 * a fault of a task running the text on another CPU while the
	 * range was being unmapped. Retry for a while, as a caller should.
	 */
	for (;;) {
		rc = madvise(addr, len, MADV_COLLAPSE);
		*err = rc ? errno : 0;
		if (!rc || *err != EAGAIN || rothp_now() >= end)
			break;
		tries++;
		usleep(50 * 1000);
	}
	if (tries)
		fprintf(stderr, "MADV_COLLAPSE of %p: EAGAIN %d time(s), %s\n", addr, tries,
			rc ? "giving up" : "then done");
	return rc;
}

/*
 * Fault in every page of the mapping p, len bytes from a 2 MiB-aligned
 * address, then MADV_COLLAPSE it (rothp_madv_collapse(): *err its errno);
 * *pmd gets the FilePmdMapped bytes of the mapping after. Prints both, as
 * who. The pages are read first, as text that runs has been: 6.12 maps
 * the THPs of a range only where it has page tables, and a range alone in
 * a 1 GiB nothing has faulted in has none (collapse_text's "untouched"
 * checks that case). Returns MADV_COLLAPSE's result.
 */
int rothp_collapse_mapping(const char *who, char *p, size_t len, int *err, long *pmd)
{
	int rc;

	rothp_touch(p, len, ROTHP_PAGE_SIZE);
	rc = rothp_madv_collapse(p, len, err);
	*pmd = rothp_file_pmd_mapped(getpid(), (unsigned long)p);
	ksft_print_msg("%s: MADV_COLLAPSE rc %d (%s), FilePmdMapped %ld of %zu kB\n", who, rc,
		       rc ? strerror(*err) : "ok", *pmd / 1024, len >> 10);
	return rc;
}

/*
 * Map len bytes of fd from offset, MAP_PRIVATE, at a 2 MiB-aligned address
 * plus misalign (a multiple of the page size). The address is found by
 * reserving a PROT_NONE area large enough, mapping over it with MAP_FIXED,
 * and unmapping what is left of the reservation.
 */
void *rothp_map_aligned(int fd, size_t len, off_t offset, size_t misalign, int prot)
{
	size_t span = len + misalign + ROTHP_PMD_SIZE;
	char *base, *addr, *p, *end;

	base = mmap(NULL, span, PROT_NONE, MAP_PRIVATE | MAP_ANONYMOUS | MAP_NORESERVE, -1, 0);
	if (base == MAP_FAILED)
		return MAP_FAILED;
	addr = (char *)ROTHP_ALIGN_UP((unsigned long)base, ROTHP_PMD_SIZE) + misalign;
	p = mmap(addr, len, prot, MAP_PRIVATE | MAP_FIXED, fd, offset);
	if (p == MAP_FAILED) {
		int err = errno;

		munmap(base, span);
		errno = err;
		return MAP_FAILED;
	}
	end = addr + ROTHP_ALIGN_UP(len, ROTHP_PAGE_SIZE);
	if (addr > base)
		munmap(base, addr - base);
	if (base + span > end)
		munmap(end, base + span - end);
	return p;
}

/* Read a byte every step bytes of [p, p+len), so the range has page tables. */
void rothp_touch(const void *p, size_t len, size_t step)
{
	size_t off;

	for (off = 0; off < len; off += step)
		(void)*(volatile const char *)((const char *)p + off);
}
