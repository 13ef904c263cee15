// SPDX-License-Identifier: GPL-2.0
/*
 * collapse_text <dir>: MADV_COLLAPSE of a running program's text on <dir>
 * makes every eligible 2 MiB block of it PMD-mapped, with intact contents;
 * a second process of the same program then gets PMD mappings at fault time
 * without any madvise, because do_set_pmd() (mm/memory.c) maps a PMD-sized
 * page cache folio whole and only checks VM_NOHUGEPAGE/prctl, not sysfs.
 *
 * Each part's results are named in its table below: the plan is their sum.
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

#include "kselftest.h"
#include "rothp_util.h"

/* TEXT_PAGES (4096) stubs of 4 KiB: at least 8 aligned 2 MiB blocks. */
#define MIN_BLOCKS	8
#define PUD_SIZE	(1UL << 30)
#define NO_PUD_MAP	"6.12 returns EINVAL where no page table is above the PMD (baseline 6.12)"

static const char *const untouched_results[] = {
	"MADV_COLLAPSE maps an untouched range",
	"the mapping reads what the file holds",
};

/*
 * Map len bytes of fd at the start of a 1 GiB where nothing else is mapped,
 * so that no page table exists above its PMDs: a PROT_NONE reservation of
 * 2 GiB maps nothing. *res is the reservation, for munmap() of 2 GiB.
 */
static char *map_alone(const char *what, int fd, size_t len, int prot, int flags, char **res)
{
	char *p;

	*res = mmap(NULL, 2 * PUD_SIZE, PROT_NONE, MAP_PRIVATE | MAP_ANONYMOUS | MAP_NORESERVE,
		    -1, 0);
	if (*res == MAP_FAILED)
		ksft_exit_fail_msg("%s: reserving 2 GiB: %s\n", what, strerror(errno));
	p = (char *)(((unsigned long)*res + PUD_SIZE - 1) & ~(PUD_SIZE - 1));
	if (mmap(p, len, prot, flags | MAP_FIXED, fd, 0) != p)
		ksft_exit_fail_msg("%s: mapping: %s\n", what, strerror(errno));
	return p;
}

/*
 * untouched: the program's file mapped where nothing else is mapped in the
 * same 1 GiB, then MADV_COLLAPSE before any access. Nothing has allocated a
 * page table there, and 6.12's collapse_pte_mapped_thp() gives up on a
 * missing PUD (EINVAL) after collapsing the page cache; the series maps the
 * THPs.
 */
static void check_untouched(const struct rothp_case *c, const char *prog)
{
	const char *skip = NULL;
	uint64_t want, got;
	long blocks, pmd;
	struct stat st;
	char *res, *p, knob[16];
	size_t len;
	int fd, err;

	fd = open(prog, O_RDONLY);
	if (fd < 0 || fstat(fd, &st))
		ksft_exit_fail_msg("untouched: %s: %s\n", prog, strerror(errno));
	blocks = st.st_size / ROTHP_PMD_SIZE;
	len = blocks * ROTHP_PMD_SIZE;
	p = map_alone("untouched", fd, len, PROT_READ | PROT_EXEC, MAP_PRIVATE, &res);
	if (rothp_file_hash(fd, 0, len, &want))
		ksft_exit_fail_msg("untouched: reading %s: %s\n", prog, strerror(errno));

	rothp_madv_collapse(p, len, &err);
	pmd = rothp_file_pmd_mapped(getpid(), (unsigned long)p);
	ksft_print_msg("untouched: %ld blocks at %p: MADV_COLLAPSE %s, FilePmdMapped %ld kB\n",
		       blocks, p, err ? strerror(err) : "0", pmd / 1024);
	if (err == EINVAL && rothp_thp_read_str(ROTHP_PROMPT_KNOB, knob, sizeof(knob)))
		skip = NO_PUD_MAP;
	rothp_report(c, 0, skip, !err && blocks > 0 && pmd == (long)len);
	got = rothp_hash(p, len);
	rothp_report(c, 1, NULL, got == want);
	munmap(res, 2 * PUD_SIZE);
	close(fd);
}

#define TMPFS_DIR	"/mnt/tmpfs"
#define SHMEM_FILE	TMPFS_DIR "/collapse_text.shmem"
#define SHMEM_BLOCKS	4

static const char *const shmem_results[] = {
	"MADV_COLLAPSE maps an untouched tmpfs range as it maps a file's",
	"the tmpfs mapping reads what was written",
};

/*
 * untouched tmpfs: the same with a shmem file on the guest's tmpfs. Patch 9 allocates the
 * missing page tables in madvise_collapse() for every file collapse, shmem
 * included: MADV_COLLAPSE of an untouched tmpfs range returns 0 and maps
 * it with PMDs (ShmemPmdMapped), where 6.12 collapses the page cache and
 * returns EINVAL.
 */
static void check_untouched_shmem(const struct rothp_case *c)
{
	const char *skip = NULL, *fs;
	uint64_t want, state = 0x73686d656dULL;
	char *res, *p, *buf, knob[16];
	size_t len = SHMEM_BLOCKS * ROTHP_PMD_SIZE, i;
	long pmd;
	int fd, err, large;

	fs = rothp_fs_name(TMPFS_DIR, &large);
	if (strcmp(fs, "tmpfs")) {
		ksft_print_msg("untouched tmpfs: %s is %s\n", TMPFS_DIR, fs);
		for (i = 0; i < (size_t)c->nr; i++)
			ksft_test_result_skip("untouched tmpfs: no tmpfs mounted on " TMPFS_DIR "\n");
		return;
	}
	buf = malloc(len);
	if (!buf)
		ksft_exit_fail_msg("untouched tmpfs: out of memory\n");
	for (i = 0; i < len / sizeof(uint64_t); i++)
		((uint64_t *)buf)[i] = rothp_rand64(&state);
	want = rothp_hash(buf, len);
	fd = open(SHMEM_FILE, O_RDWR | O_CREAT | O_TRUNC, 0644);
	if (fd < 0 || write(fd, buf, len) != (ssize_t)len)
		ksft_exit_fail_msg("untouched tmpfs: writing %s: %s\n", SHMEM_FILE, strerror(errno));
	free(buf);
	p = map_alone("untouched tmpfs", fd, len, PROT_READ, MAP_SHARED, &res);

	rothp_madv_collapse(p, len, &err);
	pmd = rothp_smaps_field(getpid(), (unsigned long)p, "ShmemPmdMapped");
	ksft_print_msg("untouched tmpfs: %d blocks at %p: MADV_COLLAPSE %s, ShmemPmdMapped %ld kB\n",
		       SHMEM_BLOCKS, p, err ? strerror(err) : "0", pmd / 1024);
	if (err == EINVAL && rothp_thp_read_str(ROTHP_PROMPT_KNOB, knob, sizeof(knob)))
		skip = NO_PUD_MAP;
	rothp_report(c, 0, skip, !err && pmd == (long)len);
	rothp_report(c, 1, NULL, rothp_hash(p, len) == want);
	munmap(res, 2 * PUD_SIZE);
	close(fd);
	unlink(SHMEM_FILE);
}

static const char *const collapse_results[] = {
	"MADV_COLLAPSE of the text returns 0",
	"text has at least %d eligible 2 MiB blocks",
	"every eligible block is PMD-mapped after MADV_COLLAPSE",
	TEXTPROC_CHECK_RESULTS,
};

static const char *const refault_results[] = {
	"second process PMD-maps every eligible block at fault",
	TEXTPROC_CHECK_RESULTS,
};

static const char *const end_results[] = {
	"both textprog processes exit with status 0",
};

/* The parts, in the order main() runs them. */
enum part { COLLAPSE, REFAULT, UNTOUCHED, UNTOUCHED_SHMEM, END };

static const struct rothp_case cases[] = {
	[COLLAPSE] = ROTHP_CASE("collapse", collapse_results),
	[REFAULT] = ROTHP_CASE("refault", refault_results),
	[UNTOUCHED] = ROTHP_CASE("untouched", untouched_results),
	[UNTOUCHED_SHMEM] = ROTHP_CASE(NULL, shmem_results),
	[END] = ROTHP_CASE(NULL, end_results),
};

int main(int argc, char **argv)
{
	const struct rothp_case *c = &cases[COLLAPSE];
	char prog[PATH_MAX];
	struct textproc first, second;
	long eligible, pmd, calls;
	int ok, stop1, stop2;

	rothp_test_init(argc, argv, prog, sizeof(prog));
	ksft_set_plan(rothp_cases_plan(cases, ARRAY_SIZE(cases)));

	/* First process: MADV_COLLAPSE of its own text, before running it. */
	ok = textproc_start_action(&first, prog, "collapse", "collapse: MADV_COLLAPSE of the text");
	rothp_report(c, 0, NULL, ok);

	eligible = textproc_eligible(&first);
	ksft_print_msg("text %lx-%lx: %ld eligible 2 MiB blocks\n", first.start, first.end,
		       eligible);
	rothp_report(c, 1, NULL, eligible >= MIN_BLOCKS, MIN_BLOCKS);

	/*
	 * madvise_collapse() turns the collapse_file() result into
	 * SCAN_PTE_MAPPED_HUGEPAGE and calls collapse_pte_mapped_thp() with
	 * install_pmd, so the caller is PMD-mapped on return, not at next fault.
	 */
	pmd = rothp_file_pmd_mapped(first.pid, first.start);
	ksft_print_msg("collapse: FilePmdMapped %ld kB, expected %ld kB\n", pmd / 1024,
		       eligible * (long)ROTHP_PMD_SIZE / 1024);
	rothp_report(c, 2, NULL, eligible > 0 && pmd == eligible * (long)ROTHP_PMD_SIZE);
	textproc_check_case(c, 3, &first);

	/*
	 * Second process, no madvise: the page cache now holds PMD-sized folios,
	 * which the fault path (filemap_map_pages() -> filemap_map_pmd(), or
	 * finish_fault()) maps with a PMD whatever the sysfs "enabled" mode.
	 */
	if (textproc_start(&second, prog, "none"))
		ksft_exit_fail_msg("cannot start %s none\n", prog);
	ok = textproc_run(&second, &calls);
	pmd = rothp_file_pmd_mapped(second.pid, second.start);
	ksft_print_msg("refault: FilePmdMapped %ld kB, expected %ld kB\n", pmd / 1024,
		       eligible * (long)ROTHP_PMD_SIZE / 1024);
	c = &cases[REFAULT];
	rothp_report(c, 0, NULL, eligible > 0 && pmd == eligible * (long)ROTHP_PMD_SIZE);
	if (ok != 1)
		ksft_print_msg("refault: first run reply %d\n", ok);
	textproc_check_case(c, 1, &second);

	check_untouched(&cases[UNTOUCHED], prog);
	check_untouched_shmem(&cases[UNTOUCHED_SHMEM]);

	stop1 = textproc_stop(&first);
	stop2 = textproc_stop(&second);
	rothp_report(&cases[END], 0, NULL, !stop1 && !stop2);
	ksft_finished();
}
