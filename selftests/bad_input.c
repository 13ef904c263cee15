// SPDX-License-Identifier: GPL-2.0
/*
 * bad_input <dir>: madvise(MADV_HUGEPAGE/MADV_COLLAPSE), process_madvise()
 * and the THP sysfs and sysctl knobs given bad or unusual input. Every case
 * asserts the exact result the kernel documents and returns, and that
 * nothing was harmed: the text mapped from a copy of textprog still reads
 * as the file, a knob keeps its value. The runner scans the console for
 * kernel reports separately.
 *
 * Where the errno comes from (mm/madvise.c, mm/khugepaged.c, 6.12):
 *  - do_madvise(): unknown advice, a start not page-aligned, a length that
 *    rounds up to 0 or makes start + length wrap: EINVAL. A zero length:
 *    0, nothing done.
 *  - madvise_walk_vmas(): a range not wholly mapped is advised where it is
 *    mapped, then fails with ENOMEM (unless a VMA's own advice failed).
 *  - madvise_collapse(): thp_vma_allowable_order() refuses the VMA (file
 *    open for write, special mapping, anonymous VMA without anon_vma, a
 *    VMA too small for one aligned PMD): EINVAL. In 6.12 a block it cannot
 *    map because the range has no page table at PUD level
 *    (find_pmd_or_thp_or_none() -> SCAN_PMD_NULL) also gives EINVAL, through
 *    madvise_collapse_errno(), although the page cache was collapsed; the
 *    series allocates the page table and maps it.
 *  - process_madvise(): flags != 0: EINVAL; a bad pidfd: EBADF; advice
 *    other than COLD, PAGEOUT, WILLNEED, COLLAPSE: EINVAL; no ptrace read
 *    access (mm_access()): EACCES; another process without CAP_SYS_NICE:
 *    EPERM; a task without mm (zombie) or gone: ESRCH.
 *  - khugepaged/prompt_collapse_store() and pages_to_scan_store() use
 *    kstrtoul()/kstrtouint(): anything but a decimal number in range,
 *    optionally followed by one newline, is EINVAL. enabled_store():
 *    EINVAL for a word it does not know. fs.elf_text_thp_align is
 *    proc_dointvec_minmax() with range 0..1: EINVAL outside it.
 *
 * Cases that need the series (prompt_collapse, elf_text_thp_align) are
 * skipped on a kernel without it, saying so. Where the series changes what
 * a case leaves (a range with no page table; the blocks of an r-x mapping
 * that reaches past the end of its file, which its hint maps), the case
 * expects 6.12's result where the prompt_collapse knob is missing, the
 * series' where it is there.
 *
 * Each test function's results are named in its table below, the knob
 * writes in theirs: the plan is their sum. A result's name is its table
 * entry followed by what it expects ("fails with EINVAL, state intact").
 */
#define _GNU_SOURCE
#include <dirent.h>
#include <errno.h>
#include <fcntl.h>
#include <grp.h>
#include <limits.h>
#include <signal.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>
#include <sys/mman.h>
#include <sys/prctl.h>
#include <sys/stat.h>
#include <sys/syscall.h>
#include <sys/uio.h>
#include <sys/wait.h>

#include "kselftest.h"
#include "rothp_util.h"

#ifndef __NR_memfd_secret
#define __NR_memfd_secret	447
#endif

#define PMD			ROTHP_PMD_SIZE
#define PUD_SIZE		(1UL << 30)
#define NOBODY			65534
#define NO_ELF_ALIGN		"kernel lacks fs.elf_text_thp_align (baseline 6.12)"
#define MEMFD_LEN		(2 * PMD)
/* Where user space ends: x86-64 with 4-level page tables, arm64 with 48-bit VAs. */
#if defined(__aarch64__)
#define USER_VA_END		(1UL << 48)
#else
#define USER_VA_END		(1UL << 47)
#endif

static char *file_buf;		/* the contents of the copy */
static size_t file_len;		/* its whole 2 MiB blocks from offset 0 */
static char *main_map;		/* a private r-x mapping of file_len bytes */

static int sys_pidfd_open(pid_t pid)
{
	return syscall(__NR_pidfd_open, pid, 0);
}

static long sys_process_madvise(int pidfd, const struct iovec *iov, size_t n, int advice,
				unsigned int flags)
{
	return syscall(__NR_process_madvise, pidfd, iov, n, advice, flags);
}

static const char *errname(int err)
{
	const char *name = err ? strerrorname_np(err) : "0";

	return name ? name : "?";
}

/* madvise(), with MADV_COLLAPSE retried on a transient EAGAIN. */
static int madv(void *addr, size_t len, int advice, int *err)
{
	int rc;

	if (advice == MADV_COLLAPSE)
		return rothp_madv_collapse(addr, len, err);
	rc = madvise(addr, len, advice);
	*err = rc ? errno : 0;
	return rc;
}

/* The main mapping still reads as the file. */
static bool main_intact(void)
{
	return !memcmp(main_map, file_buf, file_len);
}

/*
 * One result: the call returned rc with errno err; want_err 0 means it must
 * return want_rc. intact says whether the state checks after it passed.
 */
static void report_name(const char *name, long rc, int err, long want_rc, int want_err,
			bool intact)
{
	bool ok = want_err ? rc == -1 && err == want_err : rc == want_rc && !err;

	ksft_print_msg("%s: rc %ld errno %s%s\n", name, rc, errname(err),
		       intact ? "" : "; state NOT intact");
	if (want_err)
		ksft_test_result(ok && intact, "%s: fails with %s, state intact\n", name,
				 errname(want_err));
	else
		ksft_test_result(ok && intact, "%s: returns %ld, state intact\n", name, want_rc);
}

/* Result i of case c, as report_name(). */
static void report(const struct rothp_case *c, int i, long rc, int err, long want_rc,
		   int want_err, bool intact)
{
	char name[ROTHP_RESULT_MAX];

	rothp_case_result_checked(name, c, i);
	report_name(name, rc, err, want_rc, want_err, intact);
}

/* Does the VMA holding addr have the two-letter VmFlags flag? 1, 0, or -1. */
static int vma_flag(const void *addr, const char *flag)
{
	char line[512];

	if (rothp_smaps_line(getpid(), (unsigned long)addr, "VmFlags", line, sizeof(line)))
		return -1;
	return rothp_vmflag(line, flag);
}

/*
 * Map len bytes of fd from offset 0 at a 2 MiB-aligned address with at
 * least 2 MiB unmapped on either side (until something else is mapped).
 */
static char *map_holed(int fd, size_t len, int prot, int flags)
{
	size_t span = len + 4 * PMD;
	char *res, *p;

	res = mmap(NULL, span, PROT_NONE, MAP_PRIVATE | MAP_ANONYMOUS | MAP_NORESERVE, -1, 0);
	if (res == MAP_FAILED)
		ksft_exit_fail_msg("mmap %zu bytes: %s\n", span, strerror(errno));
	p = (char *)ROTHP_ALIGN_UP((unsigned long)res, PMD) + PMD;
	if (mmap(p, len, prot, flags | MAP_FIXED, fd, 0) == MAP_FAILED)
		ksft_exit_fail_msg("mmap fixed: %s\n", strerror(errno));
	munmap(res, p - res);
	munmap(p + len, res + span - (p + len));
	return p;
}

static const char *const args_results[] = {
	"MADV_HUGEPAGE, start not page-aligned",
	"MADV_COLLAPSE, start not page-aligned",
	"MADV_HUGEPAGE, start + length wraps around",
	"MADV_COLLAPSE, start + length wraps around",
	"MADV_HUGEPAGE, length SIZE_MAX",
	"MADV_COLLAPSE, length SIZE_MAX",
	"madvise, unknown advice 12345",
	"MADV_COLLAPSE, zero length",
	"MADV_HUGEPAGE, zero length",
};

/* Argument checks of madvise() itself, on the main mapping. */
static void test_args(const struct rothp_case *c)
{
	unsigned long m = (unsigned long)main_map;
	int rc, err;

	rc = madv(main_map + 1, PMD, MADV_HUGEPAGE, &err);
	report(c, 0, rc, err, 0, EINVAL, main_intact());
	rc = madv(main_map + 1, PMD, MADV_COLLAPSE, &err);
	report(c, 1, rc, err, 0, EINVAL, main_intact());

	/* start + len ends at 2 MiB past 0: end < start. */
	rc = madv(main_map, 0UL - m + PMD, MADV_HUGEPAGE, &err);
	report(c, 2, rc, err, 0, EINVAL, main_intact());
	rc = madv(main_map, 0UL - m + PMD, MADV_COLLAPSE, &err);
	report(c, 3, rc, err, 0, EINVAL, main_intact());

	/* PAGE_ALIGN(SIZE_MAX) is 0: "len_in && !len". */
	rc = madv(main_map, SIZE_MAX, MADV_HUGEPAGE, &err);
	report(c, 4, rc, err, 0, EINVAL, main_intact());
	rc = madv(main_map, SIZE_MAX, MADV_COLLAPSE, &err);
	report(c, 5, rc, err, 0, EINVAL, main_intact());

	rc = madv(main_map, file_len, 12345, &err);
	report(c, 6, rc, err, 0, EINVAL, main_intact());

	/* Zero length: 0 and nothing done; the copy has no page cached yet. */
	rc = madv(main_map, 0, MADV_COLLAPSE, &err);
	report(c, 7, rc, err, 0, 0, main_intact() && rothp_file_pmd_mapped(getpid(), m) == 0);
	rc = madv(main_map, 0, MADV_HUGEPAGE, &err);
	report(c, 8, rc, err, 0, 0, main_intact() && vma_flag(main_map, "hg") == 0);
}

static const char *const unmapped_results[] = {
	"MADV_COLLAPSE, kernel address",
	"MADV_HUGEPAGE, 64 TiB above user space",
	"MADV_COLLAPSE, unmapped range",
	"MADV_HUGEPAGE, unmapped range",
	"MADV_COLLAPSE, hole then 2 mapped blocks: those collapsed",
	"MADV_HUGEPAGE, last mapped block then a hole: that block advised",
	"MADV_COLLAPSE, a page of the stack",
};

/* Ranges that are not (wholly) mapped. */
static void test_unmapped(const struct rothp_case *c, int fd)
{
	char *hole, *p, stackvar = 0;
	long pmd, before;
	int rc, err;

	/* No VMA at all: a kernel address, and a huge range above user space. */
	rc = madv((void *)0xffffffff80000000UL, PMD, MADV_COLLAPSE, &err);
	report(c, 0, rc, err, 0, ENOMEM, main_intact());
	rc = madv((void *)USER_VA_END, 1UL << 46, MADV_HUGEPAGE, &err);
	report(c, 1, rc, err, 0, ENOMEM, main_intact());

	hole = mmap(NULL, 2 * PMD, PROT_NONE, MAP_PRIVATE | MAP_ANONYMOUS, -1, 0);
	if (hole == MAP_FAILED || munmap(hole, 2 * PMD))
		ksft_exit_fail_msg("mmap/munmap: %s\n", strerror(errno));
	rc = madv(hole, 2 * PMD, MADV_COLLAPSE, &err);
	report(c, 2, rc, err, 0, ENOMEM, main_intact());
	rc = madv(hole, 2 * PMD, MADV_HUGEPAGE, &err);
	report(c, 3, rc, err, 0, ENOMEM, main_intact());

	/*
	 * Partly mapped: a hole, then the first two blocks of a mapping. The
	 * mapped part is collapsed, the call still fails. Read first, so the
	 * range has page tables (see the SCAN_PMD_NULL case).
	 */
	p = map_holed(fd, file_len, PROT_READ | PROT_EXEC, MAP_PRIVATE);
	rothp_touch(p, file_len, ROTHP_PAGE_SIZE);
	before = rothp_file_pmd_mapped(getpid(), (unsigned long)p);
	rc = madv(p - PMD, 3 * PMD, MADV_COLLAPSE, &err);
	pmd = rothp_file_pmd_mapped(getpid(), (unsigned long)p);
	ksft_print_msg("partly mapped: FilePmdMapped %ld kB before, %ld kB after\n",
		       before / 1024, pmd / 1024);
	report(c, 4, rc, err, 0, ENOMEM,
	       before >= 0 && pmd - before == (long)(2 * PMD) && !memcmp(p, file_buf, file_len));

	/* The last block, then a hole: only the last block gets VM_HUGEPAGE. */
	rc = madv(p + file_len - PMD, 2 * PMD, MADV_HUGEPAGE, &err);
	report(c, 5, rc, err, 0, ENOMEM, vma_flag(p + file_len - PMD, "hg") == 1 &&
	       vma_flag(p, "hg") == 0 && !memcmp(p, file_buf, file_len));
	munmap(p, file_len);

	/* The stack VMA cannot hold an aligned 2 MiB block. */
	rc = madv((void *)ROTHP_ALIGN_DOWN((unsigned long)&stackvar, ROTHP_PAGE_SIZE),
		  ROTHP_PAGE_SIZE, MADV_COLLAPSE, &err);
	report(c, 6, rc, err, 0, EINVAL, main_intact());
}

static const char *const no_page_table_results[] = {
	"MADV_COLLAPSE, never-read block alone in its 1 GiB: PMD-mapped at once",
};

/* Its result on a kernel without the series, in its place. */
static const char *const no_page_table_base_results[] = {
	"MADV_COLLAPSE, never-read block alone in its 1 GiB (6.12: SCAN_PMD_NULL)",
};

static const struct rothp_case no_page_table_base = ROTHP_CASE(NULL, no_page_table_base_results);

/*
 * A never-read mapping alone in its own 1 GiB: no page table exists above
 * the PMD. In 6.12 collapse_pte_mapped_thp() then returns SCAN_PMD_NULL
 * and MADV_COLLAPSE fails with EINVAL, although collapse_file() made the
 * page cache block huge; reading it then maps that folio with a PMD. The
 * series ("MADV_COLLAPSE maps file THPs where no page table exists yet")
 * allocates the missing levels instead: 0, and PMD-mapped at once.
 */
static void test_no_page_table(const struct rothp_case *c, int fd)
{
	bool series = !rothp_prompt_skip();
	struct rothp_cache_block blk;
	size_t span = 3 * PUD_SIZE;
	long pmd_now, pmd_read;
	char *res, *p;
	int rc, err;

	res = mmap(NULL, span, PROT_NONE, MAP_PRIVATE | MAP_ANONYMOUS | MAP_NORESERVE, -1, 0);
	if (res == MAP_FAILED)
		ksft_exit_fail_msg("mmap 3 GiB PROT_NONE: %s\n", strerror(errno));
	p = (char *)ROTHP_ALIGN_UP((unsigned long)res, PUD_SIZE);
	if (mmap(p, PMD, PROT_READ, MAP_PRIVATE | MAP_FIXED, fd, 4 * PMD) == MAP_FAILED)
		ksft_exit_fail_msg("mmap fixed: %s\n", strerror(errno));
	/* Only our PROT_NONE reservation, never touched, shares that 1 GiB. */
	rc = madv(p, PMD, MADV_COLLAPSE, &err);
	pmd_now = rothp_file_pmd_mapped(getpid(), (unsigned long)p);
	memset(&blk, 0, sizeof(blk));
	if (rothp_cache_blocks(fd, 4 * PMD, 1, &blk))
		ksft_print_msg("page cache probe: %s\n", strerror(errno));
	rothp_touch(p, PMD, ROTHP_PAGE_SIZE);
	pmd_read = rothp_file_pmd_mapped(getpid(), (unsigned long)p);
	ksft_print_msg("no page table: page cache block huge %d; FilePmdMapped %ld kB, %ld kB after reading\n",
		       blk.huge, pmd_now / 1024, pmd_read / 1024);
	if (series)
		report(c, 0, rc, err, 0, 0, blk.huge && pmd_now == (long)PMD &&
		       !memcmp(p, file_buf + 4 * PMD, PMD));
	else
		report(&no_page_table_base, 0, rc, err, 0, EINVAL,
		       blk.huge && pmd_now == 0 && pmd_read == (long)PMD &&
		       !memcmp(p, file_buf + 4 * PMD, PMD));
	munmap(res, span);
}

static const char *const mappings_results[] = {
	"MADV_HUGEPAGE, PROT_NONE mapping",
	"MADV_COLLAPSE, PROT_NONE mapping: PMD-mapped",
	"MADV_COLLAPSE, MAP_SHARED PROT_READ mapping: PMD-mapped",
	"MADV_COLLAPSE, MAP_SHARED writable mapping",
	"MADV_HUGEPAGE, file open for write elsewhere",
	"MADV_COLLAPSE, file open for write elsewhere",
};

/* Mappings with odd protections or sharing. */
static void test_mappings(const struct rothp_case *c, const char *path, int fd)
{
	char *p;
	long pmd;
	int rc, err, wfd;

	/*
	 * PROT_NONE: __thp_vma_allowable_orders() does not look at the
	 * protection, so the range is collapsed and mapped with PROT_NONE
	 * PMDs (do_set_pmd() takes vm_page_prot); smaps counts them.
	 */
	p = rothp_map_checked(fd, file_len, PROT_READ);
	rothp_touch(p, file_len, ROTHP_PAGE_SIZE);
	if (mprotect(p, file_len, PROT_NONE))
		ksft_exit_fail_msg("mprotect: %s\n", strerror(errno));
	rc = madv(p, file_len, MADV_HUGEPAGE, &err);
	report(c, 0, rc, err, 0, 0, vma_flag(p, "hg") == 1);
	rc = madv(p, file_len, MADV_COLLAPSE, &err);
	pmd = rothp_file_pmd_mapped(getpid(), (unsigned long)p);
	ksft_print_msg("PROT_NONE: FilePmdMapped %ld kB of %zu kB\n", pmd / 1024, file_len >> 10);
	if (mprotect(p, file_len, PROT_READ))
		ksft_exit_fail_msg("mprotect: %s\n", strerror(errno));
	report(c, 1, rc, err, 0, 0, pmd == (long)file_len && !memcmp(p, file_buf, file_len));
	munmap(p, file_len);

	/* MAP_SHARED, read-only fd: file_thp_enabled() only asks about the inode. */
	p = rothp_map_aligned(fd, file_len, 0, 0, PROT_READ);
	munmap(p, file_len);
	p = mmap(p, file_len, PROT_READ, MAP_SHARED | MAP_FIXED_NOREPLACE, fd, 0);
	if (p == MAP_FAILED)
		ksft_exit_fail_msg("mmap shared: %s\n", strerror(errno));
	rothp_touch(p, file_len, ROTHP_PAGE_SIZE);
	rc = madv(p, file_len, MADV_COLLAPSE, &err);
	pmd = rothp_file_pmd_mapped(getpid(), (unsigned long)p);
	report(c, 2, rc, err, 0, 0, pmd == (long)file_len && !memcmp(p, file_buf, file_len));
	munmap(p, file_len);

	/* MAP_SHARED writable: the file is open for write. */
	wfd = open(path, O_RDWR);
	if (wfd < 0)
		ksft_exit_fail_msg("open %s O_RDWR: %s\n", path, strerror(errno));
	p = rothp_map_aligned(wfd, file_len, 0, 0, PROT_READ);
	munmap(p, file_len);
	p = mmap(p, file_len, PROT_READ | PROT_WRITE, MAP_SHARED | MAP_FIXED_NOREPLACE, wfd, 0);
	if (p == MAP_FAILED)
		ksft_exit_fail_msg("mmap shared writable: %s\n", strerror(errno));
	rothp_touch(p, file_len, ROTHP_PAGE_SIZE);
	rc = madv(p, file_len, MADV_COLLAPSE, &err);
	report(c, 3, rc, err, 0, EINVAL, !memcmp(p, file_buf, file_len));
	munmap(p, file_len);

	/* A private r-x mapping while another fd holds the file open for write. */
	p = rothp_map_text(fd, file_len);
	rothp_touch(p, file_len, ROTHP_PAGE_SIZE);
	rc = madv(p, file_len, MADV_HUGEPAGE, &err);
	report(c, 4, rc, err, 0, 0, vma_flag(p, "hg") == 1 && !memcmp(p, file_buf, file_len));
	rc = madv(p, file_len, MADV_COLLAPSE, &err);
	report(c, 5, rc, err, 0, EINVAL, !memcmp(p, file_buf, file_len));
	munmap(p, file_len);
	close(wfd);
}

static const char *const deleted_results[] = {
	"MADV_COLLAPSE, mapped file unlinked: PMD-mapped",
};

/* A copy that is unlinked while mapped: still a regular file, not open for write. */
static void test_deleted(const struct rothp_case *c, const char *dir, const char *src)
{
	char path[PATH_MAX], *p;
	long pmd;
	int fd, rc, err;

	rothp_scratch_copy_checked(path, src, dir, "bad_input.deleted.tmp");
	fd = rothp_open_checked(path, O_RDONLY);
	p = rothp_map_text(fd, file_len);
	close(fd);
	rothp_scratch_remove(path);
	rothp_touch(p, file_len, ROTHP_PAGE_SIZE);
	rc = madv(p, file_len, MADV_COLLAPSE, &err);
	pmd = rothp_file_pmd_mapped(getpid(), (unsigned long)p);
	report(c, 0, rc, err, 0, 0, pmd == (long)file_len && !memcmp(p, file_buf, file_len));
	munmap(p, file_len);
}

static const char *const past_eof_results[] = {
	"MADV_HUGEPAGE, r-x mapping past the end of its file (series: blocks within PMD-mapped)",
};

/*
 * An r-x mapping of four blocks over a file of two and a half, nothing of
 * it cached: the series' hint reads in, collapses and maps the two whole
 * blocks within the file, and leaves the one the end of the file cuts and
 * the one past it; 6.12 only sets VM_HUGEPAGE. Neither touches anything
 * past the end of the file, which would be SIGBUS to read.
 */
static void test_past_eof(const struct rothp_case *c, const char *dir, const char *src)
{
	bool series = !rothp_prompt_skip();
	size_t size = 5 * PMD / 2, len = 4 * PMD;
	char path[PATH_MAX], *p;
	int fd, rc, err;
	long pmd;

	rothp_scratch_copy_checked(path, src, dir, "bad_input.short.tmp");
	if (truncate(path, size))
		ksft_exit_fail_msg("truncate %s: %s\n", path, strerror(errno));
	fd = rothp_open_checked(path, O_RDONLY);
	if (rothp_drop_caches())
		ksft_exit_fail_msg("drop_caches: %s\n", strerror(errno));
	p = rothp_map_text(fd, len);
	rc = madv(p, len, MADV_HUGEPAGE, &err);
	pmd = rothp_file_pmd_mapped(getpid(), (unsigned long)p);
	ksft_print_msg("past the end of the file: FilePmdMapped %ld kB after MADV_HUGEPAGE\n",
		       pmd / 1024);
	report(c, 0, rc, err, 0, 0, (!series || pmd == (long)(2 * PMD)) &&
	       vma_flag(p, "hg") == 1 && !memcmp(p, file_buf, size));
	munmap(p, len);
	close(fd);
	rothp_scratch_remove(path);
}

static const char *const special_results[] = {
	"MADV_COLLAPSE, memfd (shmem): PMD-mapped",
	"MADV_COLLAPSE, memfd_secret",
	"mmap of /proc/self/status",
	"mmap of /proc/meminfo",
	"mmap of a sysfs attribute (THP enabled)",
	"MADV_COLLAPSE, /dev/zero private, never written",
	"MADV_COLLAPSE, /dev/zero private, written: anonymous THPs",
};

/* Files that are not on a disk file system. */
static void test_special_files(const struct rothp_case *c)
{
	/* 4 KiB of a pattern, each copy tagged: a unit of data, not a page. */
	unsigned char pattern[4096];
	char *p, buf[64], why[192];
	size_t off;
	long pmd;
	int fd, rc, err, i;
	bool same;

	/* memfd: shmem; MADV_COLLAPSE forces huge pages (shmem_huge_force). */
	fd = memfd_create("bad_input", 0);
	if (fd < 0)
		ksft_exit_fail_msg("memfd_create: %s\n", strerror(errno));
	for (i = 0; i < (int)sizeof(pattern); i++)
		pattern[i] = (unsigned char)(i * 7 + 1);
	for (off = 0; off < MEMFD_LEN; off += sizeof(pattern)) {
		pattern[0] = (unsigned char)(off / sizeof(pattern));
		if (pwrite(fd, pattern, sizeof(pattern), off) != sizeof(pattern))
			ksft_exit_fail_msg("memfd write: %s\n", strerror(errno));
	}
	p = rothp_map_aligned(fd, MEMFD_LEN, 0, 0, PROT_READ);
	munmap(p, MEMFD_LEN);
	p = mmap(p, MEMFD_LEN, PROT_READ | PROT_WRITE, MAP_SHARED | MAP_FIXED_NOREPLACE, fd, 0);
	if (p == MAP_FAILED)
		ksft_exit_fail_msg("mmap memfd: %s\n", strerror(errno));
	rothp_touch(p, MEMFD_LEN, ROTHP_PAGE_SIZE);
	rc = madv(p, MEMFD_LEN, MADV_COLLAPSE, &err);
	pmd = rothp_smaps_field(getpid(), (unsigned long)p, "ShmemPmdMapped");
	same = true;
	for (off = 0; off < MEMFD_LEN; off += sizeof(pattern)) {
		pattern[0] = (unsigned char)(off / sizeof(pattern));
		same &= !memcmp(p + off, pattern, sizeof(pattern));
	}
	ksft_print_msg("memfd: ShmemPmdMapped %ld kB\n", pmd / 1024);
	report(c, 0, rc, err, 0, 0, pmd == (long)MEMFD_LEN && same);
	munmap(p, MEMFD_LEN);
	close(fd);

	/* memfd_secret(): its mapping is never a THP (file_thp_enabled()). */
	fd = syscall(__NR_memfd_secret, 0);
	if (fd < 0) {
		snprintf(why, sizeof(why), "memfd_secret: %s%s", strerror(errno),
			 errno == ENOSYS ?
			 " (CONFIG_SECRETMEM is off, or the direct map cannot be changed: arm64 without rodata=full)" :
			 "");
		rothp_report(c, 1, why, false);
	} else {
		if (ftruncate(fd, PMD))
			ksft_exit_fail_msg("ftruncate secretmem: %s\n", strerror(errno));
		p = mmap(NULL, PMD, PROT_READ | PROT_WRITE, MAP_SHARED, fd, 0);
		if (p == MAP_FAILED) {
			snprintf(why, sizeof(why), "mmap: %s", strerror(errno));
			rothp_report(c, 1, why, false);
		} else {
			p[0] = 1;
			rc = madv(p, PMD, MADV_COLLAPSE, &err);
			report(c, 1, rc, err, 0, EINVAL, p[0] == 1);
			munmap(p, PMD);
		}
		close(fd);
	}

	/* procfs: a pid file has no ->mmap; a proc_ops file's ->mmap gives EIO. */
	fd = open("/proc/self/status", O_RDONLY);
	p = mmap(NULL, ROTHP_PAGE_SIZE, PROT_READ, MAP_PRIVATE, fd, 0);
	err = p == MAP_FAILED ? errno : 0;
	report(c, 2, p == MAP_FAILED ? -1 : 0, err, 0, ENODEV,
	       fd >= 0 && read(fd, buf, sizeof(buf)) > 0 && main_intact());
	if (p != MAP_FAILED)
		munmap(p, ROTHP_PAGE_SIZE);
	close(fd);
	fd = open("/proc/meminfo", O_RDONLY);
	p = mmap(NULL, ROTHP_PAGE_SIZE, PROT_READ, MAP_PRIVATE, fd, 0);
	err = p == MAP_FAILED ? errno : 0;
	report(c, 3, p == MAP_FAILED ? -1 : 0, err, 0, EIO,
	       fd >= 0 && read(fd, buf, sizeof(buf)) > 0 && main_intact());
	if (p != MAP_FAILED)
		munmap(p, ROTHP_PAGE_SIZE);
	close(fd);

	/* sysfs: a text attribute has no mmap (kernfs_fop_mmap()). */
	fd = open(ROTHP_THP_SYSFS "enabled", O_RDONLY);
	p = mmap(NULL, ROTHP_PAGE_SIZE, PROT_READ, MAP_PRIVATE, fd, 0);
	err = p == MAP_FAILED ? errno : 0;
	report(c, 4, p == MAP_FAILED ? -1 : 0, err, 0, ENODEV,
	       fd >= 0 && read(fd, buf, sizeof(buf)) > 0 && main_intact());
	if (p != MAP_FAILED)
		munmap(p, ROTHP_PAGE_SIZE);
	close(fd);

	/* /dev/zero, MAP_PRIVATE: an anonymous VMA (mmap_zero()). */
	fd = open("/dev/zero", O_RDONLY);
	if (fd < 0)
		ksft_exit_fail_msg("open /dev/zero: %s\n", strerror(errno));
	p = rothp_map_checked(fd, 2 * PMD, PROT_READ | PROT_WRITE);
	/* Never written: no anon_vma, so no THP order is allowed. */
	rc = madv(p, 2 * PMD, MADV_COLLAPSE, &err);
	report(c, 5, rc, err, 0, EINVAL, vma_flag(p, "hg") == 0 && main_intact());
	/* Written: an ordinary anonymous collapse. */
	for (off = 0; off < 2 * PMD; off += ROTHP_PAGE_SIZE)
		p[off] = (char)(off / ROTHP_PAGE_SIZE) | 1;
	rc = madv(p, 2 * PMD, MADV_COLLAPSE, &err);
	pmd = rothp_smaps_field(getpid(), (unsigned long)p, "AnonHugePages");
	same = true;
	for (off = 0; off < 2 * PMD; off += ROTHP_PAGE_SIZE)
		same &= p[off] == ((char)(off / ROTHP_PAGE_SIZE) | 1) && !p[off + 1];
	ksft_print_msg("/dev/zero private: AnonHugePages %ld kB\n", pmd / 1024);
	report(c, 6, rc, err, 0, 0, pmd == (long)(2 * PMD) && same);
	munmap(p, 2 * PMD);
	close(fd);
}

static const char *const pci_bar_results[] = {
	"MADV_COLLAPSE, sysfs PCI BAR mapping",
	"MADV_HUGEPAGE, sysfs PCI BAR mapping",
};

/*
 * A sysfs PCI BAR (resourceN) mapping: VM_IO | VM_PFNMAP, so VM_NO_KHUGEPAGED
 * (and a special huge VMA): MADV_COLLAPSE is refused with EINVAL. Its memory
 * is never read. MADV_HUGEPAGE only sets VM_HUGEPAGE; the series must not
 * hint such a VMA (it is neither executable nor a regular file's), and
 * nothing of it is read.
 */
static void test_pci_bar(const struct rothp_case *c)
{
	char path[PATH_MAX], line[256], found[PATH_MAX] = "", why[PATH_MAX + 16];
	unsigned long long start, end, flags;
	struct dirent *de;
	int fd = -1, rc, err, n;
	DIR *d;
	char *p;

	d = opendir("/sys/bus/pci/devices");
	while (d && !found[0] && (de = readdir(d))) {
		FILE *fp;

		if (de->d_name[0] == '.')
			continue;
		snprintf(path, sizeof(path), "/sys/bus/pci/devices/%s/resource", de->d_name);
		fp = fopen(path, "r");
		for (n = 0; fp && fgets(line, sizeof(line), fp) && n < 6; n++) {
			if (sscanf(line, "%llx %llx %llx", &start, &end, &flags) != 3)
				break;
			/* IORESOURCE_MEM, at least a page */
			if (!(flags & 0x200) || end - start + 1 < ROTHP_PAGE_SIZE)
				continue;
			snprintf(found, sizeof(found), "/sys/bus/pci/devices/%s/resource%d",
				 de->d_name, n);
			break;
		}
		if (fp)
			fclose(fp);
	}
	if (d)
		closedir(d);
	if (!found[0]) {
		for (n = 0; n < c->nr; n++)
			rothp_report(c, n, "no memory BAR found", false);
		return;
	}
	fd = open(found, O_RDONLY);
	p = fd < 0 ? MAP_FAILED : mmap(NULL, ROTHP_PAGE_SIZE, PROT_READ, MAP_SHARED, fd, 0);
	if (p == MAP_FAILED) {
		ksft_print_msg("%s: %s\n", found, strerror(errno));
		snprintf(why, sizeof(why), "cannot map %s", found);
		for (n = 0; n < c->nr; n++)
			rothp_report(c, n, why, false);
		if (fd >= 0)
			close(fd);
		return;
	}
	ksft_print_msg("PCI BAR: %s mapped at %p\n", found, p);
	rc = madv(p, ROTHP_PAGE_SIZE, MADV_COLLAPSE, &err);
	report(c, 0, rc, err, 0, EINVAL, main_intact());
	rc = madv(p, ROTHP_PAGE_SIZE, MADV_HUGEPAGE, &err);
	report(c, 1, rc, err, 0, 0, vma_flag(p, "hg") == 1 && main_intact());
	munmap(p, ROTHP_PAGE_SIZE);
	close(fd);
}

struct perm_result {
	long rc_other;		/* process_madvise() of a sibling */
	int err_other;
	long pmd_before, pmd_after;	/* the sibling's FilePmdMapped */
	long rc_self;		/* process_madvise() of itself */
	int err_self;
};

/* Drop root for good: groups, gid, uid. */
static int become_nobody(void)
{
	if (setgroups(0, NULL) || setresgid(NOBODY, NOBODY, NOBODY) ||
	    setresuid(NOBODY, NOBODY, NOBODY))
		return -1;
	return 0;
}

/*
 * As nobody, dumpable, with a sibling of the same uid: ptrace read access
 * is granted, CAP_SYS_NICE is missing, so the sibling is EPERM; itself
 * needs no capability.
 */
static void perm_child(int out, char *map, size_t len)
{
	struct perm_result r = { .rc_other = -2, .rc_self = -2 };
	struct iovec iov = { .iov_base = map, .iov_len = len };
	int ctl[2], pidfd, self;
	char c;
	pid_t sib;

	if (become_nobody() || prctl(PR_SET_DUMPABLE, 1) || pipe(ctl))
		_exit(2);
	/* fork() copied no page table of the file mapping: fault it back. */
	rothp_touch(map, len, ROTHP_PAGE_SIZE);
	sib = fork();
	if (!sib) {
		close(ctl[1]);
		while (read(ctl[0], &c, 1) < 0 && errno == EINTR)
			;
		_exit(0);
	}
	close(ctl[0]);
	pidfd = sys_pidfd_open(sib);
	self = sys_pidfd_open(getpid());
	r.pmd_before = rothp_file_pmd_mapped(sib, (unsigned long)map);
	r.rc_other = sys_process_madvise(pidfd, &iov, 1, MADV_COLLAPSE, 0);
	r.err_other = r.rc_other < 0 ? errno : 0;
	r.pmd_after = rothp_file_pmd_mapped(sib, (unsigned long)map);
	r.rc_self = sys_process_madvise(self, &iov, 1, MADV_COLLAPSE, 0);
	r.err_self = r.rc_self < 0 ? errno : 0;
	close(ctl[1]);
	waitpid(sib, NULL, 0);
	if (write(out, &r, sizeof(r)) != sizeof(r))
		_exit(3);
	_exit(0);
}

static const char *const process_madvise_results[] = {
	"process_madvise(MADV_COLLAPSE) of another process as root: its text collapsed",
	"process_madvise, flags 1",
	"process_madvise, MADV_HUGEPAGE (not allowed remotely)",
	"process_madvise, pidfd -1",
	"process_madvise, a directory fd as pidfd",
	"process_madvise, 1025 iovecs (> UIO_MAXIOV)",
	"process_madvise, iovec at a bad address",
	"process_madvise, range not page-aligned",
	"process_madvise of a zombie",
	"process_madvise of a reaped process",
	"process_madvise(MADV_COLLAPSE) of a same-uid process without CAP_SYS_NICE",
	"process_madvise(MADV_COLLAPSE) of itself without privilege",
};

static void test_process_madvise(const struct rothp_case *c, const char *dir, const char *src)
{
	char path[PATH_MAX], *map;
	struct perm_result r;
	struct textproc tp;
	struct iovec iov, big[1025];
	siginfo_t si;
	long rc, pmd, want, eligible, calls;
	int pidfd, fd, err, status, pfd[2];
	pid_t pid;
	bool ok;

	rothp_scratch_copy_checked(path, src, dir, "bad_input.pm.tmp");
	if (rothp_prewarm(path))
		ksft_exit_fail_msg("read %s: %s\n", path, strerror(errno));

	/* Root, another process: its text is collapsed. */
	if (textproc_start(&tp, path, "none"))
		ksft_exit_fail_msg("cannot start %s\n", path);
	textproc_run(&tp, &calls);
	eligible = textproc_eligible(&tp);
	pmd = rothp_file_pmd_mapped(tp.pid, tp.start);
	pidfd = sys_pidfd_open(tp.pid);
	if (pidfd < 0)
		ksft_exit_fail_msg("pidfd_open: %s\n", strerror(errno));
	iov.iov_base = (void *)ROTHP_ALIGN_UP(tp.start, PMD);
	iov.iov_len = ROTHP_ALIGN_DOWN(tp.end, PMD) - (unsigned long)iov.iov_base;
	rc = sys_process_madvise(pidfd, &iov, 1, MADV_COLLAPSE, 0);
	err = rc < 0 ? errno : 0;
	want = eligible * (long)PMD;
	ksft_print_msg("process_madvise: FilePmdMapped %ld kB before, %ld kB after, %ld eligible\n",
		       pmd / 1024, rothp_file_pmd_mapped(tp.pid, tp.start) / 1024, eligible);
	report(c, 0, rc, err, iov.iov_len, 0, pmd == 0 && eligible > 0 &&
	       rothp_file_pmd_mapped(tp.pid, tp.start) == want &&
	       textproc_sum_matches(&tp, "process_madvise"));

	rc = sys_process_madvise(pidfd, &iov, 1, MADV_COLLAPSE, 1);
	err = rc < 0 ? errno : 0;
	report(c, 1, rc, err, 0, EINVAL, textproc_run(&tp, &calls) == 1);
	rc = sys_process_madvise(pidfd, &iov, 1, MADV_HUGEPAGE, 0);
	err = rc < 0 ? errno : 0;
	report(c, 2, rc, err, 0, EINVAL, textproc_run(&tp, &calls) == 1);
	rc = sys_process_madvise(-1, &iov, 1, MADV_COLLAPSE, 0);
	err = rc < 0 ? errno : 0;
	report(c, 3, rc, err, 0, EBADF, main_intact());
	fd = open("/", O_RDONLY | O_DIRECTORY);
	rc = sys_process_madvise(fd, &iov, 1, MADV_COLLAPSE, 0);
	err = rc < 0 ? errno : 0;
	report(c, 4, rc, err, 0, EBADF, main_intact());
	close(fd);
	memset(big, 0, sizeof(big));
	rc = sys_process_madvise(pidfd, big, 1025, MADV_COLLAPSE, 0);
	err = rc < 0 ? errno : 0;
	report(c, 5, rc, err, 0, EINVAL, main_intact());
	rc = sys_process_madvise(pidfd, (struct iovec *)8, 1, MADV_COLLAPSE, 0);
	err = rc < 0 ? errno : 0;
	report(c, 6, rc, err, 0, EFAULT, main_intact());
	iov.iov_base = (char *)iov.iov_base + 1;
	rc = sys_process_madvise(pidfd, &iov, 1, MADV_COLLAPSE, 0);
	err = rc < 0 ? errno : 0;
	report(c, 7, rc, err, 0, EINVAL, textproc_run(&tp, &calls) == 1);
	close(pidfd);
	ok = !textproc_stop(&tp);
	if (!ok)
		ksft_print_msg("textprog did not exit cleanly\n");

	/* A zombie has no mm; a reaped process no task. */
	fflush(NULL);
	pid = fork();
	if (!pid)
		_exit(0);
	pidfd = sys_pidfd_open(pid);
	waitid(P_PID, pid, &si, WEXITED | WNOWAIT);
	iov.iov_base = main_map;
	iov.iov_len = PMD;
	rc = sys_process_madvise(pidfd, &iov, 1, MADV_COLLAPSE, 0);
	err = rc < 0 ? errno : 0;
	report(c, 8, rc, err, 0, ESRCH, ok);
	waitpid(pid, &status, 0);
	rc = sys_process_madvise(pidfd, &iov, 1, MADV_COLLAPSE, 0);
	err = rc < 0 ? errno : 0;
	report(c, 9, rc, err, 0, ESRCH, main_intact());
	close(pidfd);

	/* Unprivileged, same uid: EPERM for the sibling, fine for itself. */
	fd = open(path, O_RDONLY);
	map = rothp_map_text(fd, file_len);
	close(fd);
	rothp_touch(map, file_len, ROTHP_PAGE_SIZE);
	if (pipe(pfd))
		ksft_exit_fail_msg("pipe: %s\n", strerror(errno));
	fflush(NULL);
	pid = fork();
	if (!pid) {
		close(pfd[0]);
		perm_child(pfd[1], map, file_len);
	}
	close(pfd[1]);
	memset(&r, 0, sizeof(r));
	r.rc_other = r.rc_self = -2;
	if (read(pfd[0], &r, sizeof(r)) != sizeof(r))
		ksft_print_msg("no result from the unprivileged child\n");
	close(pfd[0]);
	waitpid(pid, &status, 0);
	ksft_print_msg("as nobody: sibling FilePmdMapped %ld kB before, %ld kB after\n",
		       r.pmd_before / 1024, r.pmd_after / 1024);
	report(c, 10, r.rc_other, r.err_other, 0, EPERM,
	       r.pmd_before >= 0 && r.pmd_after == r.pmd_before);
	report(c, 11, r.rc_self, r.err_self, file_len, 0, !memcmp(map, file_buf, file_len));
	munmap(map, file_len);
}

/*
 * Write val (len bytes) to path: the write()'s result, or -1 with *err the
 * errno of the open() or write().
 */
static long write_knob(const char *path, const char *val, size_t len, int *err)
{
	long n;
	int fd;

	*err = 0;
	fd = open(path, O_WRONLY);
	if (fd < 0) {
		*err = errno;
		return -1;
	}
	n = write(fd, val, len);
	if (n < 0)
		*err = errno;
	close(fd);
	return n;
}

/* "<label>: write "<val>"", a trailing newline said in words. */
static void knob_case(char *buf, size_t len, const char *label, const char *val)
{
	snprintf(buf, len, "%s: write \"%.*s\"%s", label, (int)strcspn(val, "\n"), val,
		 strchr(val, '\n') ? " + newline" : "");
}

/* What a knob write needs of the kernel; it is skipped without it. */
enum knob_need {
	KNOB_ANY,
	KNOB_SERIES,		/* prompt_collapse */
	KNOB_ELF_ALIGN,		/* fs.elf_text_thp_align */
};

/*
 * A write of val to the knob at path. With want_err set it must fail with
 * that errno and leave the knob's value as it was (if same, else just
 * readable); with want_err 0 it must write all of val. val NULL writes the
 * knob's own value and a newline. Its result is named "<label>: write
 * "<val>"", or "<label>: <skip_name>" when skipped if skip_name is set.
 */
struct knob_write {
	const char *path;
	const char *label;
	const char *val;
	int want_err;
	bool same;
	enum knob_need need;
	const char *skip_name;
};

#define PROMPT_PATH		(ROTHP_THP_SYSFS ROTHP_PROMPT_KNOB)
#define ELF_ALIGN_PATH		(ROTHP_SYSCTL_DIR ROTHP_ELF_ALIGN_SYSCTL)

static const struct knob_write knob_writes[] = {
	{ PROMPT_PATH, "prompt_collapse", "2", EINVAL, true, KNOB_SERIES, NULL },
	{ PROMPT_PATH, "prompt_collapse", "-1", EINVAL, true, KNOB_SERIES, NULL },
	{ PROMPT_PATH, "prompt_collapse", "abc", EINVAL, true, KNOB_SERIES, NULL },
	{ PROMPT_PATH, "prompt_collapse", "1x", EINVAL, true, KNOB_SERIES, NULL },
	{ PROMPT_PATH, "prompt_collapse", " 1", EINVAL, true, KNOB_SERIES, NULL },
	{ PROMPT_PATH, "prompt_collapse", "\n", EINVAL, true, KNOB_SERIES, NULL },
	{ PROMPT_PATH, "prompt_collapse", "18446744073709551616", EINVAL, true, KNOB_SERIES, NULL },
	/* sysfs_kf_write() returns 0 for an empty write, calling nothing. */
	{ PROMPT_PATH, "prompt_collapse", "", 0, true, KNOB_SERIES, "empty write" },
	/* What kstrtoul() accepts: the current value, newline-terminated. */
	{ PROMPT_PATH, "prompt_collapse", NULL, 0, true, KNOB_SERIES, "its own value + newline" },
	{ ROTHP_THP_SYSFS "khugepaged/pages_to_scan", "khugepaged/pages_to_scan", "0", EINVAL, true,
	  KNOB_ANY, NULL },
	{ ROTHP_THP_SYSFS "enabled", "enabled", "sometimes", EINVAL, true, KNOB_ANY, NULL },
	{ ELF_ALIGN_PATH, "fs.elf_text_thp_align", "2", EINVAL, true, KNOB_ELF_ALIGN, NULL },
	{ ELF_ALIGN_PATH, "fs.elf_text_thp_align", "-1", EINVAL, true, KNOB_ELF_ALIGN, NULL },
	{ ELF_ALIGN_PATH, "fs.elf_text_thp_align", "abc", EINVAL, true, KNOB_ELF_ALIGN, NULL },
};

/* Write k's value, or skip it with the reason skip unless that is NULL. */
static void try_knob(const struct knob_write *k, const char *skip)
{
	char before[128] = "", after[128] = "", val[128], name[256];
	size_t len;
	long rc;
	int err;

	if (skip) {
		if (k->skip_name)
			snprintf(name, sizeof(name), "%s: %s", k->label, k->skip_name);
		else
			knob_case(name, sizeof(name), k->label, k->val);
		rothp_result(skip, false, "%s", name);
		return;
	}
	rothp_read_line(k->path, before, sizeof(before));
	if (k->val)
		snprintf(val, sizeof(val), "%s", k->val);
	else
		snprintf(val, sizeof(val), "%s\n", before);
	len = strlen(val);
	rc = write_knob(k->path, val, len, &err);
	rothp_read_line(k->path, after, sizeof(after));
	knob_case(name, sizeof(name), k->label, val);
	report_name(name, rc, err, k->want_err ? 0 : (long)len, k->want_err,
		    before[0] && after[0] && (!k->same || !strcmp(before, after)));
}

static void test_knobs(void)
{
	const char *prompt_skip = rothp_prompt_skip();
	bool elf_align = !access(ELF_ALIGN_PATH, F_OK);
	const char *skip;
	size_t i;

	if (rothp_thp_save())
		ksft_exit_fail_msg("cannot save the THP settings\n");
	/* Restored with the THP knobs: a write the kernel took wrongly does not last. */
	if (!prompt_skip && rothp_prompt_save(NULL))
		ksft_exit_fail_msg("cannot read %s: %s\n", ROTHP_PROMPT_KNOB, strerror(errno));
	if (elf_align && rothp_sysctl_save(ROTHP_ELF_ALIGN_SYSCTL))
		ksft_exit_fail_msg("cannot save %s\n", ROTHP_ELF_ALIGN_SYSCTL);
	for (i = 0; i < ARRAY_SIZE(knob_writes); i++) {
		skip = NULL;
		if (knob_writes[i].need == KNOB_SERIES)
			skip = prompt_skip;
		else if (knob_writes[i].need == KNOB_ELF_ALIGN && !elf_align)
			skip = NO_ELF_ALIGN;
		try_knob(&knob_writes[i], skip);
	}
	if (elf_align)
		rothp_sysctl_restore();
	rothp_thp_restore();
}

static const char *const end_results[] = {
	"MADV_COLLAPSE of the first mapping after all that: PMD-mapped",
	"textprog still collapses, runs and exits",
};

enum {
	ARGS, NO_PAGE_TABLE, UNMAPPED, MAPPINGS, DELETED, PAST_EOF, SPECIAL, PCI_BAR,
	PROCESS_MADVISE, END
};

/* In the order main() runs them; the knob writes come before END. */
static const struct rothp_case cases[] = {
	[ARGS] = ROTHP_CASE(NULL, args_results),
	[NO_PAGE_TABLE] = ROTHP_CASE(NULL, no_page_table_results),
	[UNMAPPED] = ROTHP_CASE(NULL, unmapped_results),
	[MAPPINGS] = ROTHP_CASE(NULL, mappings_results),
	[DELETED] = ROTHP_CASE(NULL, deleted_results),
	[PAST_EOF] = ROTHP_CASE(NULL, past_eof_results),
	[SPECIAL] = ROTHP_CASE(NULL, special_results),
	[PCI_BAR] = ROTHP_CASE(NULL, pci_bar_results),
	[PROCESS_MADVISE] = ROTHP_CASE(NULL, process_madvise_results),
	[END] = ROTHP_CASE(NULL, end_results),
};

int main(int argc, char **argv)
{
	char prog[PATH_MAX], path[PATH_MAX];
	const char *dir;
	size_t size;
	long calls;
	int fd, rc, err;

	dir = rothp_test_init(argc, argv, prog, sizeof(prog));
	ksft_set_plan(rothp_cases_plan(cases, ARRAY_SIZE(cases)) + ARRAY_SIZE(knob_writes));

	rothp_scratch_copy_checked(path, prog, dir, "bad_input.tmp");
	file_buf = rothp_read_whole(path, &size);
	file_len = ROTHP_ALIGN_DOWN(size, PMD);
	if (file_len < 8 * PMD)
		ksft_exit_fail_msg("%s: %zu bytes, expected at least 16 MiB\n", path, size);
	/*
	 * Small folios in the page cache (an XFS fault could read ahead
	 * PMD-sized ones and map them whole), then the main mapping read
	 * through: PTE-mapped, with page tables, nothing huge.
	 */
	rothp_fresh_cache_checked(path);
	fd = open(path, O_RDONLY);
	if (fd < 0)
		ksft_exit_fail_msg("open %s: %s\n", path, strerror(errno));
	main_map = rothp_map_text(fd, file_len);
	rothp_touch(main_map, file_len, ROTHP_PAGE_SIZE);
	ksft_print_msg("%s: %zu MiB mapped at %p, FilePmdMapped %ld kB\n", path, file_len >> 20,
		       main_map, rothp_file_pmd_mapped(getpid(), (unsigned long)main_map) / 1024);

	test_args(&cases[ARGS]);
	test_no_page_table(&cases[NO_PAGE_TABLE], fd);
	test_unmapped(&cases[UNMAPPED], fd);
	test_mappings(&cases[MAPPINGS], path, fd);
	test_deleted(&cases[DELETED], dir, prog);
	test_past_eof(&cases[PAST_EOF], dir, prog);
	test_special_files(&cases[SPECIAL]);
	test_pci_bar(&cases[PCI_BAR]);
	test_process_madvise(&cases[PROCESS_MADVISE], dir, prog);
	test_knobs();

	/* Last: the kernel still collapses text and runs programs. */
	rc = madv(main_map, file_len, MADV_COLLAPSE, &err);
	report(&cases[END], 0, rc, err, 0, 0,
	       rothp_file_pmd_mapped(getpid(), (unsigned long)main_map) == (long)file_len &&
	       main_intact());
	{
		struct textproc tp;
		int ok;

		if (textproc_start(&tp, prog, "collapse"))
			ksft_exit_fail_msg("cannot start %s\n", prog);
		ok = textproc_run(&tp, &calls);
		rothp_report(&cases[END], 1, NULL, tp.action_rc == 0 && ok == 1 &&
			     textproc_sum_matches(&tp, "final") && !textproc_stop(&tp));
	}
	munmap(main_map, file_len);
	close(fd);
	ksft_finished();
}
