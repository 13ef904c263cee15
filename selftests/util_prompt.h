/* SPDX-License-Identifier: GPL-2.0 */
/*
 * Prompt collapse: the series queues the 2 MiB ranges that
 * madvise(MADV_HUGEPAGE) asks for on a file VMA and wakes khugepaged to
 * serve them before its periodic scan. Its switch, queue and counters; a
 * busy neighbour for khugepaged; waiting for a textprog's text to be huge.
 */
#ifndef __ROTHP_UTIL_PROMPT_H
#define __ROTHP_UTIL_PROMPT_H

#include <stdbool.h>
#include <sys/types.h>

struct textproc;

/*
 * Under the THP sysfs directory: the switch ("1" or "0") and the number of
 * requests queued now (the series keeps at most 128). Baseline 6.12 has
 * neither, nor the four vmstat counters. rothp_prompt_save() (in
 * util_settings.h) saves the switch with the THP knobs.
 */
#define ROTHP_PROMPT_KNOB	"khugepaged/prompt_collapse"
#define ROTHP_PROMPT_PENDING	"khugepaged/prompt_collapse_pending"
#define ROTHP_NO_PROMPT		"kernel lacks prompt_collapse (baseline 6.12)"

/* /proc/vmstat thp_prompt_collapse_{queued,served,failed,dropped}. */
struct rothp_prompt_stat {
	long queued;	/* requests made, accepted or refused */
	long served;	/* ... whose every block ended huge */
	long failed;	/* ... served, some block not collapsed */
	long dropped;	/* ... refused (queue full) or flushed unserved */
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
int rothp_prompt_pending(long *pending);
long rothp_prompt_wait_idle(long timeout_ms, long *pending);
int rothp_prompt_stat_read(struct rothp_prompt_stat *st);
int rothp_prompt_settle(const struct rothp_prompt_stat *before, struct rothp_prompt_stat *after,
			long timeout_ms, const char *who);
int rothp_neighbour_start(struct rothp_neighbour *nb, unsigned long mib);
void rothp_neighbour_stop(struct rothp_neighbour *nb);
double textproc_wait_huge(struct textproc *tp, double t0, int percent, long cap_ms,
			  long interval_ms, struct rothp_huge_wait *hw);

#endif /* __ROTHP_UTIL_PROMPT_H */
