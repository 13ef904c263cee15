// SPDX-License-Identifier: GPL-2.0
/*
 * bench_pie <dir>: how much of a default-built PIE's text the ELF loader
 * places where it can be PMD-mapped.
 *
 * Starts <dir>/pieprog (dynamically linked PIE, 6 MiB of text, 4 KiB
 * p_align) RUNS times. In each run it counts the whole 2 MiB-aligned blocks
 * of virtual memory inside the text VMA (the r-xp mapping of the file), and
 * how many of them are eligible for a PMD mapping: at a 2 MiB-aligned file
 * offset, i.e. the text is 2 MiB-congruent (rothp_vma_eligible_blocks()).
 * Baseline 6.12 gives the load bias 4 KiB granularity, so the text is
 * congruent in about one run of 512; the rothp series aligns the bias to
 * 2 MiB when the text has a congruent whole block. THP settings and
 * fs.elf_text_thp_align are left as they are, and only noted.
 *
 * Prints "BENCH pie_text_eligible_share <eligible/whole> ratio", over all
 * runs, and "# ..." notes. Exits 1, printing "# error: ..." and no BENCH
 * line, when a run could not be looked at.
 */
#define _GNU_SOURCE
#include <elf.h>
#include <errno.h>
#include <stdarg.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>
#include <sys/stat.h>
#include <sys/utsname.h>

#include "rothp_util.h"

#define PROG		"pieprog"
#define RUNS		32
#define KNOB		ROTHP_ELF_ALIGN_SYSCTL

/*
 * Start path once; count the whole 2 MiB-aligned blocks of virtual memory
 * inside its text VMA, and the eligible ones.
 */
static void sample_one(const char *path, const struct stat *st, int run, long *whole,
		       long *eligible)
{
	struct rothp_vma vma;

	if (textproc_sample(path, &vma, eligible, NULL))
		rothp_bench_fail("run %d: cannot look at the text of %s", run, path);
	if (strcmp(vma.perms, "r-xp") || vma.inode != st->st_ino)
		rothp_bench_fail("run %d: VMA %#lx-%#lx %s %s is not the text of %s", run, vma.start,
				 vma.end, vma.perms, vma.path, path);
	*whole = rothp_pmd_blocks(vma.start, vma.end);
	printf("# run %d: text %#lx-%#lx offset %#lx, %ld whole blocks, %ld eligible\n", run,
	       vma.start, vma.end, vma.offset, *whole, *eligible);
}

int main(int argc, char **argv)
{
	char path[PATH_MAX], mode[64];
	struct rothp_elf elf;
	struct utsname u;
	struct stat st;
	long whole, eligible, total_whole = 0, total_eligible = 0, knob;
	int i, large;

	setvbuf(stdout, NULL, _IOLBF, 0);
	if (argc != 2)
		rothp_bench_fail("usage: %s <dir holding " PROG ">", argv[0]);
	if (snprintf(path, sizeof(path), "%s/" PROG, argv[1]) >= (int)sizeof(path))
		rothp_bench_fail("path too long: %s", argv[1]);
	if (access(path, X_OK) || stat(path, &st))
		rothp_bench_fail("%s: %s", path, strerror(errno));
	if (rothp_elf_read(path, &elf))
		rothp_bench_fail("%s: %s", path, strerror(errno));
	if (elf.type != ET_DYN || !elf.interp)
		rothp_bench_fail("%s is not a dynamically linked PIE", path);

	uname(&u);
	printf("# kernel %s, %s on %s\n", u.release, path, rothp_fs_name(argv[1], &large));
	printf("# %s: R+X vaddr %#lx offset %#lx filesz %#lx p_align %#lx\n", PROG,
	       elf.text_vaddr, elf.text_offset, elf.text_filesz, elf.text_align);
	if (rothp_thp_read_str("enabled", mode, sizeof(mode)))
		snprintf(mode, sizeof(mode), "unknown");
	if (rothp_sysctl_read(KNOB, &knob))
		printf("# THP enabled=%s, no /proc/sys/" KNOB "\n", mode);
	else
		printf("# THP enabled=%s, /proc/sys/" KNOB " %ld\n", mode, knob);
	/* arm64's default vm.mmap_rnd_bits leaves the series no room to align. */
	rothp_pie_rnd_bits_raise();

	for (i = 0; i < RUNS; i++) {
		sample_one(path, &st, i + 1, &whole, &eligible);
		total_whole += whole;
		total_eligible += eligible;
	}
	if (!total_whole)
		rothp_bench_fail("no whole 2 MiB block in the text of %s in %d runs", path, RUNS);

	printf("# pie: %d runs, %ld whole blocks, %ld eligible\n", RUNS, total_whole,
	       total_eligible);
	printf("BENCH pie_text_eligible_share %.6f ratio\n",
	       (double)total_eligible / total_whole);
	return 0;
}
