// SPDX-License-Identifier: GPL-2.0
/*
 * write_open <dir>: pins what Linux 6.12 does when a file whose page cache
 * holds read-only file THPs is opened for write. A later patch changes this,
 * so the results are named "6.12: ...".
 *
 * do_dentry_open() (fs/open.c), for FMODE_WRITE, when filemap_nr_thps() of
 * the mapping is not 0, unmaps the whole file (unmap_mapping_range()) and
 * truncates all of its page cache (truncate_inode_pages()). nr_thps is only
 * counted by collapse_file() (mm/khugepaged.c) for mappings without large
 * folio support (filemap_nr_thps_inc(), include/linux/pagemap.h): ext4 in
 * 6.12. XFS mappings support large folios (xfs_icache.c), so there a write
 * open leaves the page cache and the PMD mappings alone.
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

int main(int argc, char **argv)
{
	char prog[PATH_MAX];
	const char *dir, *fs;
	uint64_t memsum = 0, filesum = 1;
	double frac, frac_after;
	long pmd, pmd_after;
	size_t len;
	struct stat st;
	int fd, wfd, rc, err, large;
	char *p;

	dir = rothp_test_init(argc, argv, prog, sizeof(prog));
	fs = rothp_fs_name(dir, &large);
	ksft_set_plan(7);

	fd = open(prog, O_RDONLY);
	if (fd < 0 || fstat(fd, &st))
		ksft_exit_fail_msg("%s: %s\n", prog, strerror(errno));
	/* Whole 2 MiB blocks from offset 0: every one of them is eligible. */
	len = ROTHP_ALIGN_DOWN((size_t)st.st_size, ROTHP_PMD_SIZE);
	if (!len)
		ksft_exit_fail_msg("%s is smaller than 2 MiB\n", prog);
	p = rothp_map_aligned(fd, len, 0, 0, PROT_READ | PROT_EXEC);
	if (p == MAP_FAILED)
		ksft_exit_fail_msg("mmap %s: %s\n", prog, strerror(errno));
	ksft_print_msg("%s (%s): %zu MiB mapped r-x private at %p\n", prog, fs, len >> 20, p);

	rc = rothp_madv_collapse(p, len, &err);
	if (rc)
		ksft_print_msg("MADV_COLLAPSE: %s (%d)\n", strerror(err), err);
	ksft_test_result(rc == 0, "6.12: MADV_COLLAPSE of a r-x private file mapping returns 0\n");

	pmd = rothp_file_pmd_mapped(getpid(), (unsigned long)p);
	frac = rothp_resident_fraction(p, len);
	ksft_print_msg("after MADV_COLLAPSE: FilePmdMapped %ld kB of %zu kB, resident %.3f\n",
		       pmd / 1024, len >> 10, frac);
	ksft_test_result(pmd > 0, "6.12: mapping is PMD-mapped after MADV_COLLAPSE\n");
	ksft_test_result(frac == 1.0,
			 "6.12: page cache of the range fully resident after MADV_COLLAPSE\n");

	/* Keep it open for write until the checks are done. */
	wfd = open(prog, O_RDWR);
	if (wfd < 0)
		ksft_print_msg("open(O_RDWR): %s\n", strerror(errno));
	ksft_test_result(wfd >= 0, "6.12: open(O_RDWR) of the collapsed file succeeds\n");

	pmd_after = rothp_file_pmd_mapped(getpid(), (unsigned long)p);
	frac_after = rothp_resident_fraction(p, len);
	ksft_print_msg("after open(O_RDWR): FilePmdMapped %ld kB, resident fraction %.3f\n",
		       pmd_after / 1024, frac_after);
	if (wfd < 0 || rc) {
		ksft_test_result_skip("6.12: page cache after open(O_RDWR): no collapse or no open\n");
		ksft_test_result_skip("6.12: PMD mapping after open(O_RDWR): no collapse or no open\n");
	} else if (!large) {
		/* nr_thps > 0: do_dentry_open() truncated the page cache. */
		ksft_test_result(frac_after == 0.0,
				 "6.12: open(O_RDWR) drops the file's page cache (resident 0)\n");
		ksft_test_result(pmd_after == 0,
				 "6.12: open(O_RDWR) unmaps the PMD mappings (FilePmdMapped 0)\n");
	} else if (large > 0) {
		/* nr_thps stays 0 for large-folio mappings: nothing is dropped. */
		ksft_test_result(frac_after == 1.0,
				 "6.12: open(O_RDWR) keeps a large-folio file's page cache\n");
		ksft_test_result(pmd_after == pmd,
				 "6.12: open(O_RDWR) keeps a large-folio file's PMD mappings\n");
	} else {
		ksft_test_result_skip("6.12: page cache after open(O_RDWR): %s: %s\n", fs,
				      "large folio support unknown");
		ksft_test_result_skip("6.12: PMD mapping after open(O_RDWR): %s: %s\n", fs,
				      "large folio support unknown");
	}

	/* Whatever was dropped, the mapping must read back the file. */
	memsum = rothp_hash(p, len);
	if (rothp_file_hash(fd, 0, len, &filesum))
		ksft_print_msg("pread %s: %s\n", prog, strerror(errno));
	if (memsum != filesum)
		ksft_print_msg("mapping hash %llx, file hash %llx\n",
			       (unsigned long long)memsum, (unsigned long long)filesum);
	ksft_test_result(memsum == filesum,
			 "6.12: contents through the mapping match the file after open(O_RDWR)\n");

	if (wfd >= 0)
		close(wfd);
	munmap(p, len);
	close(fd);
	ksft_finished();
}
