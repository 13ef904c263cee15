// SPDX-License-Identifier: GPL-2.0
/*
 * collapse_text <dir>: MADV_COLLAPSE of a running program's text on <dir>
 * makes every eligible 2 MiB block of it PMD-mapped, with intact contents;
 * a second process of the same program then gets PMD mappings at fault time
 * without any madvise, because do_set_pmd() (mm/memory.c) maps a PMD-sized
 * page cache folio whole and only checks VM_NOHUGEPAGE/prctl, not sysfs.
 */
#define _GNU_SOURCE
#include <errno.h>
#include <fcntl.h>
#include <stdio.h>
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

/*
 * untouched: the program's file mapped where nothing else is mapped in the
 * same 1 GiB, then MADV_COLLAPSE before any access. Nothing has allocated a
 * page table there, and 6.12's collapse_pte_mapped_thp() gives up on a
 * missing PUD (EINVAL) after collapsing the page cache; the series maps the
 * THPs. Two checks.
 */
static void check_untouched(const char *prog)
{
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
	/* A reservation maps nothing, so it allocates no page table. */
	res = mmap(NULL, 2 * PUD_SIZE, PROT_NONE, MAP_PRIVATE | MAP_ANONYMOUS | MAP_NORESERVE,
		   -1, 0);
	if (res == MAP_FAILED)
		ksft_exit_fail_msg("untouched: reserving 2 GiB: %s\n", strerror(errno));
	p = (char *)(((unsigned long)res + PUD_SIZE - 1) & ~(PUD_SIZE - 1));
	if (mmap(p, len, PROT_READ | PROT_EXEC, MAP_PRIVATE | MAP_FIXED, fd, 0) != p)
		ksft_exit_fail_msg("untouched: mapping %s: %s\n", prog, strerror(errno));
	if (rothp_file_hash(fd, 0, len, &want))
		ksft_exit_fail_msg("untouched: reading %s: %s\n", prog, strerror(errno));

	rothp_madv_collapse(p, len, &err);
	pmd = rothp_file_pmd_mapped(getpid(), (unsigned long)p);
	ksft_print_msg("untouched: %ld blocks at %p: MADV_COLLAPSE %s, FilePmdMapped %ld kB\n",
		       blocks, p, err ? strerror(err) : "0", pmd / 1024);
	if (err == EINVAL && rothp_thp_read_str(ROTHP_PROMPT_KNOB, knob, sizeof(knob)))
		ksft_test_result_skip("untouched: MADV_COLLAPSE maps an untouched range: %s\n",
				      NO_PUD_MAP);
	else
		ksft_test_result(!err && blocks > 0 && pmd == (long)len,
				 "untouched: MADV_COLLAPSE maps an untouched range\n");
	got = rothp_hash(p, len);
	ksft_test_result(got == want, "untouched: the mapping reads what the file holds\n");
	munmap(res, 2 * PUD_SIZE);
	close(fd);
}

int main(int argc, char **argv)
{
	char prog[PATH_MAX];
	struct textproc first, second;
	long eligible, pmd, calls;
	int ok, stop1, stop2;

	rothp_test_init(argc, argv, prog, sizeof(prog));
	ksft_set_plan(11);

	/* First process: MADV_COLLAPSE of its own text, before running it. */
	textproc_start_checked(&first, prog, "collapse", "collapse: MADV_COLLAPSE of the text");

	eligible = textproc_eligible(&first);
	ksft_print_msg("text %lx-%lx: %ld eligible 2 MiB blocks\n", first.start, first.end,
		       eligible);
	ksft_test_result(eligible >= MIN_BLOCKS,
			 "collapse: text has at least %d eligible 2 MiB blocks\n", MIN_BLOCKS);

	/*
	 * madvise_collapse() turns the collapse_file() result into
	 * SCAN_PTE_MAPPED_HUGEPAGE and calls collapse_pte_mapped_thp() with
	 * install_pmd, so the caller is PMD-mapped on return, not at next fault.
	 */
	pmd = rothp_file_pmd_mapped(first.pid, first.start);
	ksft_print_msg("collapse: FilePmdMapped %ld kB, expected %ld kB\n", pmd / 1024,
		       eligible * (long)ROTHP_PMD_SIZE / 1024);
	ksft_test_result(eligible > 0 && pmd == eligible * (long)ROTHP_PMD_SIZE,
			 "collapse: every eligible block is PMD-mapped after MADV_COLLAPSE\n");
	textproc_check_sum_and_run(&first, "collapse");

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
	ksft_test_result(eligible > 0 && pmd == eligible * (long)ROTHP_PMD_SIZE,
			 "refault: second process PMD-maps every eligible block at fault\n");
	if (ok != 1)
		ksft_print_msg("refault: first run reply %d\n", ok);
	textproc_check_sum_and_run(&second, "refault");

	check_untouched(prog);

	stop1 = textproc_stop(&first);
	stop2 = textproc_stop(&second);
	ksft_test_result(!stop1 && !stop2, "both textprog processes exit with status 0\n");
	ksft_finished();
}
