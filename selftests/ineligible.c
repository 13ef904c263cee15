// SPDX-License-Identifier: GPL-2.0
/*
 * ineligible <dir>: text that must not become a read-only file THP, and the
 * one sysfs setting MADV_COLLAPSE ignores. Every case must leave contents
 * intact and not crash.
 *
 *  - misaligned: vaddr not congruent to the file offset modulo 2 MiB;
 *    thp_vma_suitable_order() (include/linux/huge_mm.h) fails, so
 *    __thp_vma_allowable_orders() (mm/huge_memory.c) allows no PMD order and
 *    madvise_collapse() (mm/khugepaged.c) returns -EINVAL.
 *  - open for write: file_thp_enabled() (include/linux/huge_mm.h) requires
 *    !inode_is_open_for_write(), so again -EINVAL.
 *  - enabled=never: khugepaged is not started and does not register the mm
 *    (hugepage_pmd_enabled(), khugepaged_enter_vma()), so MADV_HUGEPAGE text
 *    stays PTE-mapped.
 *  - MADV_COLLAPSE with enabled=never: madvise_collapse() asks
 *    thp_vma_allowable_order() without TVA_ENFORCE_SYSFS, and
 *    vma_file_bypass_thp_tuneables() (mm/huge_memory.c) then skips the sysfs
 *    mode ("MADV_COLLAPSE ignores tuneables"; madvise(2) documents it as
 *    independent of the system-wide THP settings): it succeeds.
 *
 * Each case's results are named in its table below: the plan is their sum.
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

#define NEVER_POLL_MS	3000
#define INTERVAL_MS	200

static const char *prog_path;

/* Hash a mapping of fd and the same bytes read with pread(); result i of c. */
static void check_contents(const struct rothp_case *c, int i, int fd, const void *p, size_t len)
{
	const char *name = c->name;
	uint64_t memsum = rothp_hash(p, len), filesum = ~memsum;

	if (rothp_file_hash(fd, 0, len, &filesum))
		ksft_print_msg("%s: pread: %s\n", name, strerror(errno));
	else if (memsum != filesum)
		ksft_print_msg("%s: mapping hash %llx, file hash %llx\n", name,
			       (unsigned long long)memsum, (unsigned long long)filesum);
	rothp_report(c, i, NULL, memsum == filesum);
}

/* The misaligned and open-for-write cases. */
static const char *const einval_results[] = {
	"MADV_COLLAPSE fails with EINVAL",
	"contents through the mapping match the file",
	"FilePmdMapped is 0 after reading it all",
};

/*
 * MADV_COLLAPSE must fail with EINVAL; reading the whole mapping must then
 * give the file's bytes, through PTEs only.
 */
static void expect_einval(const struct rothp_case *c, int fd, void *p, size_t len)
{
	const char *name = c->name;
	int rc, err;
	long pmd;

	rc = rothp_madv_collapse(p, len, &err);
	ksft_print_msg("%s: MADV_COLLAPSE rc %d errno %d (%s)\n", name, rc, err, strerror(err));
	rothp_report(c, 0, NULL, rc == -1 && err == EINVAL);

	check_contents(c, 1, fd, p, len);

	pmd = rothp_file_pmd_mapped(getpid(), (unsigned long)p);
	if (pmd)
		ksft_print_msg("%s: FilePmdMapped %ld kB\n", name, pmd / 1024);
	rothp_report(c, 2, NULL, pmd == 0);
}

/* Map textprog at 2 MiB + 4 KiB with offset 0: vaddr - offset is not aligned. */
static void test_misaligned(const struct rothp_case *c)
{
	struct stat st;
	size_t len;
	int fd;
	void *p;

	fd = open(prog_path, O_RDONLY);
	if (fd < 0 || fstat(fd, &st))
		ksft_exit_fail_msg("%s: %s\n", prog_path, strerror(errno));
	len = st.st_size;
	if (len < 8 * ROTHP_PMD_SIZE + ROTHP_PAGE_SIZE)
		ksft_exit_fail_msg("%s: %zu bytes, expected at least 16 MiB\n", prog_path, len);
	p = rothp_map_aligned(fd, len, 0, ROTHP_PAGE_SIZE, PROT_READ | PROT_EXEC);
	if (p == MAP_FAILED)
		ksft_exit_fail_msg("mmap %s: %s\n", prog_path, strerror(errno));
	ksft_print_msg("misaligned: %zu bytes at %p, offset 0\n", len, p);

	expect_einval(c, fd, p, len);
	munmap(p, len);
	close(fd);
}

/* A copy of textprog, held open O_RDWR while mapped and collapsed. */
static void test_open_for_write(const struct rothp_case *c, const char *dir)
{
	char tmp[PATH_MAX];
	struct stat st;
	int fd, wfd;
	size_t len;
	void *p;

	/* Written, fsync'd and dropped: no dirty pages (those fail collapse too). */
	rothp_scratch_copy_checked(tmp, prog_path, dir, "ineligible.tmp");
	wfd = open(tmp, O_RDWR);
	fd = open(tmp, O_RDONLY);
	if (wfd < 0 || fd < 0 || fstat(fd, &st))
		ksft_exit_fail_msg("%s: %s\n", tmp, strerror(errno));
	len = ROTHP_ALIGN_DOWN((size_t)st.st_size, ROTHP_PMD_SIZE);
	p = rothp_map_text(fd, len);
	ksft_print_msg("open-for-write: %zu MiB of %s at %p, O_RDWR fd held\n", len >> 20, tmp,
		       p);

	expect_einval(c, fd, p, len);
	munmap(p, len);
	close(fd);
	close(wfd);
	rothp_scratch_remove(tmp);
}

static const char *const never_results[] = {
	"MADV_HUGEPAGE of the text returns 0",
	"text stays PTE-mapped for %d s",
	"every stub returns its index",
	"text in memory matches the file",
	"textprog exits with status 0",
};

static void test_never_khugepaged(const struct rothp_case *c)
{
	struct textproc tp;
	/* As soon as a byte is PMD-mapped, or a run fails. */
	struct textproc_pmd_poll st = { .tp = &tp, .want = 1 };
	long ms;
	bool ok;

	/*
	 * Small folios first: on a large-folio file system (XFS) a fault in a
	 * VM_HUGEPAGE VMA reads ahead PMD-sized folios and maps them with a PMD
	 * whatever "enabled" says (do_sync_mmap_readahead() in mm/filemap.c,
	 * do_set_pmd() in mm/memory.c). This case is about khugepaged.
	 */
	if (rothp_prewarm(prog_path))
		ksft_exit_fail_msg("cannot read %s\n", prog_path);
	/* hugepage_madvise() only sets VM_HUGEPAGE: it succeeds under never. */
	ok = textproc_start_action(&tp, prog_path, "hugepage", "never: MADV_HUGEPAGE of the text");
	rothp_report(c, 0, NULL, ok);

	ms = rothp_wait_until(textproc_pmd_reached, &st, NEVER_POLL_MS, INTERVAL_MS);
	ksft_print_msg("never: largest FilePmdMapped in %d s: %ld kB\n", NEVER_POLL_MS / 1000,
		       st.max_pmd / 1024);
	rothp_report(c, 1, NULL, st.max_pmd == 0, NEVER_POLL_MS / 1000);
	if (ms >= 0 && st.max_pmd)
		ksft_print_msg("never: PMD mapping seen after %.1f s\n", ms / 1000.0);
	rothp_report(c, 2, NULL, !st.run_failed);

	rothp_report(c, 3, NULL, textproc_sum_matches(&tp, "never"));
	rothp_report(c, 4, NULL, !textproc_stop(&tp));
}

/* MADV_COLLAPSE under never; then the contents, named as their own case. */
static const char *const never_collapse_results[] = {
	"MADV_COLLAPSE returns 0 (6.12 ignores enabled)",
	"MADV_COLLAPSE PMD-maps every block",
};

static const char *const contents_results[] = {
	"contents through the mapping match the file",
};

static void test_never_collapse(const struct rothp_case *c, const struct rothp_case *contents)
{
	struct stat st;
	size_t len;
	long pmd;
	int fd, rc, err;
	void *p;

	/* Cold page cache, so the collapse really builds the huge pages. */
	if (rothp_drop_caches())
		ksft_exit_fail_msg("drop_caches: %s\n", strerror(errno));
	fd = open(prog_path, O_RDONLY);
	if (fd < 0 || fstat(fd, &st))
		ksft_exit_fail_msg("%s: %s\n", prog_path, strerror(errno));
	len = ROTHP_ALIGN_DOWN((size_t)st.st_size, ROTHP_PMD_SIZE);
	p = rothp_map_text(fd, len);

	rc = rothp_madv_collapse(p, len, &err);
	ksft_print_msg("never: MADV_COLLAPSE of %zu MiB: rc %d errno %d (%s)\n", len >> 20, rc,
		       err, strerror(err));
	rothp_report(c, 0, NULL, rc == 0);

	pmd = rothp_file_pmd_mapped(getpid(), (unsigned long)p);
	ksft_print_msg("never: FilePmdMapped %ld kB of %zu kB\n", pmd / 1024, len >> 10);
	rothp_report(c, 1, NULL, pmd == (long)len);
	check_contents(contents, 0, fd, p, len);
	munmap(p, len);
	close(fd);
}

/* The cases, in the order main() runs them. */
enum part { MISALIGNED, OPEN_FOR_WRITE, NEVER, NEVER_COLLAPSE, NEVER_CONTENTS };

static const struct rothp_case cases[] = {
	[MISALIGNED] = ROTHP_CASE("misaligned", einval_results),
	[OPEN_FOR_WRITE] = ROTHP_CASE("open-for-write", einval_results),
	[NEVER] = ROTHP_CASE("never", never_results),
	[NEVER_COLLAPSE] = ROTHP_CASE("never", never_collapse_results),
	[NEVER_CONTENTS] = ROTHP_CASE("never-collapse", contents_results),
};

int main(int argc, char **argv)
{
	char prog[PATH_MAX], enabled[64];
	const char *dir;

	dir = rothp_test_init(argc, argv, prog, sizeof(prog));
	prog_path = prog;
	ksft_set_plan(rothp_cases_plan(cases, ARRAY_SIZE(cases)));

	test_misaligned(&cases[MISALIGNED]);
	test_open_for_write(&cases[OPEN_FOR_WRITE], dir);

	if (rothp_thp_save())
		ksft_exit_fail_msg("cannot save THP settings\n");
	if (rothp_thp_set_str("enabled", "never") || rothp_thp_khugepaged_fast())
		ksft_exit_fail_msg("cannot set THP settings\n");
	rothp_thp_read_str("enabled", enabled, sizeof(enabled));
	ksft_print_msg("THP enabled=%s, khugepaged tuned to scan every 100 ms\n", enabled);
	test_never_khugepaged(&cases[NEVER]);
	test_never_collapse(&cases[NEVER_COLLAPSE], &cases[NEVER_CONTENTS]);
	rothp_thp_restore();

	ksft_finished();
}
