// SPDX-License-Identifier: GPL-2.0
/*
 * khugepaged_text <dir>: with THP "enabled" at madvise and khugepaged made
 * to scan every 100 ms, MADV_HUGEPAGE on a running program's text gets all
 * its eligible 2 MiB blocks PMD-mapped by khugepaged, contents intact.
 *
 * MADV_HUGEPAGE only sets VM_HUGEPAGE and registers the mm with khugepaged
 * (hugepage_madvise(), khugepaged_enter_vma() in mm/khugepaged.c); the
 * collapse happens in khugepaged_scan_mm_slot() -> hpage_collapse_scan_file()
 * -> collapse_file(), which retracts the page tables so the next fault maps
 * the new folio with a PMD. So the test keeps running the text while it polls.
 *
 * The results are named in the table below: the plan is its size.
 */
#define _GNU_SOURCE
#include <stdio.h>
#include <string.h>

#include "kselftest.h"
#include "rothp_util.h"

#define MIN_BLOCKS	8
#define TIMEOUT_MS	(60 * 1000)
#define INTERVAL_MS	200

static const char *const khugepaged_results[] = {
	"MADV_HUGEPAGE of the text returns 0",
	"text has at least %d eligible 2 MiB blocks",
	"every eligible block PMD-mapped within %d s",
	TEXTPROC_FINISH_RESULTS,
};

static const struct rothp_case khugepaged = ROTHP_CASE("khugepaged", khugepaged_results);

int main(int argc, char **argv)
{
	char prog[PATH_MAX], enabled[64];
	struct textproc tp;
	struct textproc_pmd_poll st = { .tp = &tp };
	long eligible, ms;
	bool ok;

	rothp_test_init(argc, argv, prog, sizeof(prog));
	ksft_set_plan(rothp_cases_plan(&khugepaged, 1));

	if (rothp_thp_save())
		ksft_exit_fail_msg("cannot save THP settings\n");
	if (rothp_thp_set_str("enabled", "madvise") || rothp_thp_khugepaged_fast())
		ksft_exit_fail_msg("cannot set THP settings\n");
	rothp_thp_read_str("enabled", enabled, sizeof(enabled));
	ksft_print_msg("THP enabled=%s, khugepaged scan/alloc sleep 100 ms, 4096 pages/scan\n",
		       enabled);

	/*
	 * Read the file first, so the text faults find small folios in the page
	 * cache. Otherwise, on a file system with large folios (XFS), a fault in
	 * a VM_HUGEPAGE VMA reads ahead PMD-sized folios itself
	 * (do_sync_mmap_readahead() in mm/filemap.c) and the PMD mappings would
	 * not show that khugepaged did anything.
	 */
	if (rothp_prewarm(prog))
		ksft_exit_fail_msg("cannot read %s\n", prog);

	ok = textproc_start_action(&tp, prog, "hugepage", "khugepaged: MADV_HUGEPAGE of the text");
	rothp_report(&khugepaged, 0, NULL, ok);

	eligible = textproc_eligible(&tp);
	ksft_print_msg("text %lx-%lx: %ld eligible 2 MiB blocks\n", tp.start, tp.end, eligible);
	rothp_report(&khugepaged, 1, NULL, eligible >= MIN_BLOCKS, MIN_BLOCKS);

	/* Every eligible block: no more can be. */
	st.want = eligible > 0 ? eligible * (long)ROTHP_PMD_SIZE : 0;
	ms = rothp_wait_until(textproc_pmd_reached, &st, TIMEOUT_MS, INTERVAL_MS);
	/*
	 * The poll stops at want or above; more than every eligible block
	 * would be a PMD over an unaligned offset or past EOF: a failure.
	 */
	if (ms >= 0 && !st.run_failed && st.pmd == st.want)
		ksft_print_msg("khugepaged: all %ld blocks PMD-mapped after %.1f s (%d polls)\n",
			       eligible, ms / 1000.0, st.polls);
	else
		ksft_print_msg("khugepaged: FilePmdMapped %ld kB of %ld kB after %d polls%s\n",
			       st.pmd / 1024, st.want / 1024, st.polls,
			       st.run_failed ? ", then a run failed" :
			       st.pmd > st.want ? ", more than the eligible blocks" : "");
	rothp_report(&khugepaged, 2, NULL,
		     ms >= 0 && !st.run_failed && st.want > 0 && st.pmd == st.want,
		     TIMEOUT_MS / 1000);

	textproc_finish_case(&khugepaged, &tp);
	rothp_thp_restore();
	ksft_finished();
}
