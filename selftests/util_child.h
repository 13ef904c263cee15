/* SPDX-License-Identifier: GPL-2.0 */
/*
 * Forked children: starting them, reaping them with a timeout, and the
 * counters a test shares with them in MAP_SHARED memory.
 */
#ifndef __ROTHP_UTIL_CHILD_H
#define __ROTHP_UTIL_CHILD_H

#include <stdbool.h>
#include <sys/types.h>

/* How long a child killed for running too long may take to go. */
#define ROTHP_KILL_WAIT_MS	(5 * 1000)

/*
 * Counters in memory shared with forked children, where several processes
 * count at once: atomic, and sequentially consistent, so that a parent
 * reading one after a child's write also sees what the child did before.
 */
static inline long rothp_shared_get(long *p)
{
	return __atomic_load_n(p, __ATOMIC_SEQ_CST);
}

static inline void rothp_shared_set(long *p, long val)
{
	__atomic_store_n(p, val, __ATOMIC_SEQ_CST);
}

/* Add n to *p: the new value. */
static inline long rothp_shared_add(long *p, long n)
{
	return __atomic_add_fetch(p, n, __ATOMIC_SEQ_CST);
}

void rothp_child_error(long *errors, long *reports, long max, const char *who,
		       const char *fmt, ...) __attribute__((format(printf, 5, 6)));

pid_t rothp_fork(void);
int rothp_child_wait(pid_t pid, long timeout_ms, const char *who, bool *killed);
struct stat;
pid_t rothp_child_of(pid_t parent, const struct stat *exe, long wait_ms);

/* rothp_fork(), or exit failing. */
#define rothp_fork_checked() ({						\
	pid_t __pid = rothp_fork();					\
									\
	if (__pid < 0)							\
		ksft_exit_fail_msg("fork: %s\n", strerror(errno));	\
	__pid;								\
})

#endif /* __ROTHP_UTIL_CHILD_H */
