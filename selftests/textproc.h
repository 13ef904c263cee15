/* SPDX-License-Identifier: GPL-2.0 */
/*
 * The tests' side of textprog's protocol: start it with pipes on its stdin
 * and stdout, send one-line commands, read one-line replies.
 */
#ifndef __ROTHP_TEXTPROC_H
#define __ROTHP_TEXTPROC_H

#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>
#include <stdio.h>
#include <sys/types.h>

/* A running textprog, talked to over two pipes. */
struct textproc {
	pid_t pid;
	FILE *in;			/* its stdin: commands */
	FILE *out;			/* its stdout: replies */
	unsigned long start, end;	/* its text VMA, from "ready" */
	int action_rc, action_errno;	/* result of the initial action */
};

int textproc_start(struct textproc *tp, const char *path, const char *action);
int textproc_cmd(struct textproc *tp, const char *cmd, char *reply, size_t len);
int textproc_hugepage(struct textproc *tp, const char *who, double *t0);
int textproc_run(struct textproc *tp, long *calls);
int textproc_sum(struct textproc *tp, uint64_t *memsum, uint64_t *filesum);
int textproc_stop(struct textproc *tp);
long textproc_eligible(struct textproc *tp);
bool textproc_sum_matches(struct textproc *tp, const char *who);
void textproc_sum_and_run(struct textproc *tp, const char *who, bool *sum_ok, bool *run_ok);
int textproc_start_small(struct textproc *tp, const char *path, const char *who);

struct rothp_vma;
int textproc_sample(const char *path, struct rothp_vma *vma, long *eligible, bool *ran_ok);

/*
 * A textprog's PMD mappings polled by rothp_wait_until() with
 * textproc_pmd_reached(): tp and want set by the caller, the rest by the
 * polls.
 */
struct textproc_pmd_poll {
	struct textproc *tp;
	long want;		/* > 0: stop once FilePmdMapped is that many bytes */
	long pmd;		/* FilePmdMapped at the last poll, bytes */
	long max_pmd;		/* ... the most seen */
	int polls;
	bool run_failed;	/* a run of the stubs went wrong: polling stopped */
	double at;		/* rothp_now() when FilePmdMapped was last read */
};

bool textproc_pmd_reached(void *arg);

/*
 * textproc_start_small(), or exit failing: 0, or -1 when some of the text
 * is PMD-mapped already (said).
 */
#define textproc_start_fresh(tp, path, who) ({				\
	const char *__fpath = (path);					\
	int __fr = textproc_start_small((tp), __fpath, (who));		\
									\
	if (__fr < 0)							\
		ksft_exit_fail_msg("cannot start %s afresh\n", __fpath);	\
	__fr ? -1 : 0;							\
})

/*
 * Results i and i + 1 of case c (util_core.h), which its table names with
 * TEXTPROC_CHECK_RESULTS: the text in memory matches the file, and every
 * stub returns its index.
 */
#define TEXTPROC_CHECK_RESULTS						\
	"text in memory matches the file",				\
	"every stub returns its index"

#define textproc_check_case(c, i, tp) do {				\
	const struct rothp_case *__cc = (c);				\
	int __ci = (i);							\
	bool __csum_ok, __crun_ok;					\
									\
	textproc_sum_and_run(tp, __cc->name, &__csum_ok, &__crun_ok);	\
	rothp_report(__cc, __ci, NULL, __csum_ok);			\
	rothp_report(__cc, __ci + 1, NULL, __crun_ok);			\
} while (0)

/*
 * The last three results of case c, whose table ends with
 * TEXTPROC_FINISH_RESULTS: textproc_check_case()'s two, then textprog,
 * stopped, exits with status 0.
 */
#define TEXTPROC_FINISH_RESULTS						\
	TEXTPROC_CHECK_RESULTS,						\
	"textprog exits with status 0"

#define textproc_finish_case(c, tp) do {				\
	const struct rothp_case *__fc = (c);				\
									\
	textproc_check_case(__fc, __fc->nr - 3, tp);			\
	rothp_report(__fc, __fc->nr - 1, NULL, !textproc_stop(tp));	\
} while (0)

/*
 * Start textprog at path with its initial action, or exit failing: true
 * when the action's madvise() returned 0, else false, saying so as what,
 * for the test to report as a result of its case tables.
 */
#define textproc_start_action(tp, path, action, what) ({		\
	const char *__what = (what);					\
									\
	if (textproc_start(tp, path, action))				\
		ksft_exit_fail_msg("cannot start %s %s\n", path, action); \
	if ((tp)->action_rc)						\
		ksft_print_msg("%s: rc %d, %s\n", __what, (tp)->action_rc, \
			       strerror((tp)->action_errno));		\
	(tp)->action_rc == 0;						\
})

#endif /* __ROTHP_TEXTPROC_H */
