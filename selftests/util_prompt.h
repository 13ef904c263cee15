/* SPDX-License-Identifier: GPL-2.0 */
/*
 * Prompt collapse: with the series, madvise(MADV_HUGEPAGE) that newly sets
 * VM_HUGEPAGE on an executable file mapping (and, under THP "always", the
 * mmap() of one, execve() included) "hints" the range: before the call
 * returns to user space, the calling thread collapses each aligned 2 MiB
 * block and maps it with a PMD in its own mm. Its switch, and the settings
 * the prompt collapse tests start from; watching a mapping become
 * PMD-mapped once such a call has returned; a busy neighbour for
 * khugepaged; waiting for a textprog's text to be huge.
 */
#ifndef __ROTHP_UTIL_PROMPT_H
#define __ROTHP_UTIL_PROMPT_H

#include <stdbool.h>
#include <stddef.h>
#include <sys/types.h>

struct textproc;

/*
 * Under the THP sysfs directory: the switch, "1" (the default) or "0"
 * (no hints: 6.12's behaviour). Baseline 6.12 has no such file.
 * rothp_prompt_save() (in util_settings.h) saves it with the THP knobs.
 */
#define ROTHP_PROMPT_KNOB	"khugepaged/prompt_collapse"
#define ROTHP_NO_PROMPT		"kernel lacks prompt_collapse (baseline 6.12)"

/*
 * The hint is done before the call returns, so a hinted range is
 * PMD-mapped at once. The tests read it at once, and poll for at most
 * this long after, without faulting anything in, so that a late mapping
 * is told from a missing one; one that needed the poll is said.
 */
#define ROTHP_HINT_MS		1000

/* What rothp_hint_wait() saw of a mapping after a call that hints it. */
struct rothp_hint_wait {
	long eligible;		/* blocks that should be PMD-mapped */
	long at_once;		/* PMD-mapped at the first read, blocks */
	long blocks;		/* ... at the last read */
	double secs;		/* from the first read to the last */
};

/* A child holding an anonymous heap of 4 KiB pages registered with khugepaged. */
struct rothp_neighbour {
	pid_t pid;
	int ctl;		/* write end of a pipe: the child exits at its EOF */
	unsigned long mib;
};

/* What textproc_wait_huge() saw. */
struct rothp_huge_wait {
	long eligible;		/* eligible 2 MiB blocks of the text */
	long blocks;		/* PMD-mapped at the last poll */
	int polls;
	bool run_failed;	/* a run of the stubs went wrong */
};

const char *rothp_prompt_skip(void);
int rothp_prompt_read(long *on);
int rothp_prompt_set(long on);
int rothp_prompt_setup(const char *skip, char *why, size_t len);

/* rothp_prompt_setup(), or exit failing. */
#define rothp_prompt_setup_checked(skip) do {				\
	char __why[256];						\
									\
	if (rothp_prompt_setup((skip), __why, sizeof(__why)))		\
		ksft_exit_fail_msg("%s\n", __why);			\
} while (0)

long rothp_hint_wait(pid_t pid, unsigned long addr, long eligible, long cap_ms,
		     struct rothp_hint_wait *hw);
bool rothp_hint_done(const struct rothp_hint_wait *hw);
void rothp_hint_print(const char *who, const struct rothp_hint_wait *hw);
int textproc_hint(struct textproc *tp, const char *who, struct rothp_hint_wait *hw);
int textproc_rehint(struct textproc *tp, const char *who, struct rothp_hint_wait *hw);
int rothp_neighbour_start(struct rothp_neighbour *nb, unsigned long mib);
void rothp_neighbour_stop(struct rothp_neighbour *nb);
double textproc_wait_huge(struct textproc *tp, double t0, int percent, long cap_ms,
			  long interval_ms, struct rothp_huge_wait *hw);

#endif /* __ROTHP_UTIL_PROMPT_H */
