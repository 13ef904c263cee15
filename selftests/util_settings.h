/* SPDX-License-Identifier: GPL-2.0 */
/*
 * Settings a test changes and must put back: the THP sysfs knobs, the
 * prompt collapse switch, sysctls, fault injection knobs and trace events,
 * saved in one table and restored, the last saved first, by the test or at
 * exit and on SIGINT/SIGTERM.
 */
#ifndef __ROTHP_UTIL_SETTINGS_H
#define __ROTHP_UTIL_SETTINGS_H

#include <stddef.h>

/* sysctls, named relative to ROTHP_SYSCTL_DIR. */
#define ROTHP_SYSCTL_DIR	"/proc/sys/"
/* The series' switch for the 2 MiB-aligned load bias of PIEs; 6.12 has none. */
#define ROTHP_ELF_ALIGN_SYSCTL	"fs/elf_text_thp_align"
int rothp_sysctl_read(const char *name, long *val);
int rothp_sysctl_save(const char *name);
void rothp_sysctl_restore(void);
/* The sysctl whose value patch 4's alignment of PIEs depends on. */
#define ROTHP_RND_BITS		"vm/mmap_rnd_bits"
long rothp_pie_rnd_bits_needed(void);
void rothp_pie_rnd_bits_raise(void);

/*
 * Fault injection (Documentation/fault-injection/fault-injection.rst): the
 * debugfs knobs of one capability and the make-it-fail of the task it is
 * to fail, each with the value the test gives it, in a table in the order
 * they are written. Saved in that order, they are restored in the reverse
 * one.
 */
struct rothp_fault_knob {
	const char *path;
	const char *val;	/* written by rothp_fault_set(), unless NULL */
};

int rothp_fault_save(const struct rothp_fault_knob *knobs, size_t n);
int rothp_fault_set(const struct rothp_fault_knob *knobs, size_t n);
int rothp_fault_restore(void);

/* A tracefs enable file, for rothp_trace_event_on() (util_trace.h). */
int rothp_trace_save(const char *path);
void rothp_trace_restore(void);

/* THP sysfs knobs, relative to ROTHP_THP_SYSFS, e.g. "khugepaged/defrag". */
int rothp_thp_read_str(const char *knob, char *buf, size_t len);
int rothp_thp_set_str(const char *knob, const char *val);
int rothp_thp_save(void);
/* The prompt collapse switch too, when saved: -1 (ENOENT) without one. */
int rothp_prompt_save(long *on);
void rothp_thp_restore(void);

/*
 * rothp_thp_set_str(), or exit failing: a macro, so that the totals it
 * prints are the test's (see rothp_result()). Benchmarks have
 * rothp_bench_thp_set().
 */
#define rothp_thp_set_checked(knob, val) do {				\
	const char *__knob = (knob), *__val = (val);			\
									\
	if (rothp_thp_set_str(__knob, __val))				\
		ksft_exit_fail_msg("cannot set THP %s=%s\n", __knob, __val);	\
} while (0)

/* khugepaged's tunables: 100 ms sleeps, or its defaults (10 s and 60 s). */
int rothp_thp_khugepaged_fast(void);
int rothp_thp_khugepaged_defaults(void);
int rothp_khugepaged_kick(void);

/* What is saved, and rothp_scratch_copy()'s files, go at exit and on signals. */
void rothp_restore_at_exit(void);

#endif /* __ROTHP_UTIL_SETTINGS_H */
