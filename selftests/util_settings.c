// SPDX-License-Identifier: GPL-2.0
/*
 * Settings saved and restored: one table of every knob a test changes, the
 * THP sysfs knobs, the prompt collapse switch, sysctls, fault injection
 * knobs and trace events. A save pushes a knob's path and value; each
 * kind's restore pops its own, the last saved first; what is left is
 * restored at exit and on SIGINT/SIGTERM, with rothp_scratch_copy()'s files
 * removed.
 */
#define _GNU_SOURCE
#include <errno.h>
#include <signal.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

#include "kselftest.h"
#include "util_core.h"
#include "util_files.h"
#include "util_prompt.h"
#include "util_settings.h"

/*
 * Room for the THP knobs, the prompt collapse switch, a few sysctls, a
 * fault injection capability's knobs and a few trace events.
 */
#define NR_SAVED		32
#define NR_SYSCTL_SAVED		4

/* The THP knobs rothp_thp_save() saves, in the order they are restored. */
static const char * const thp_knobs[] = {
	"khugepaged/scan_sleep_millisecs",
	"khugepaged/alloc_sleep_millisecs",
	"khugepaged/pages_to_scan",
	"khugepaged/max_ptes_none",
	"khugepaged/defrag",
	"defrag",
	"enabled",
};

#define NR_THP_KNOBS	ARRAY_SIZE(thp_knobs)

/* Who restores a saved knob, besides the exit and signal handlers. */
enum knob_kind {
	KNOB_SYSCTL,	/* rothp_sysctl_restore() */
	KNOB_THP,	/* rothp_thp_restore() */
	KNOB_FAULT,	/* rothp_fault_restore() */
	KNOB_TRACE,	/* rothp_trace_restore() */
};

/* One saved knob: its file, the value to write back, and who restores it. */
struct saved_knob {
	char path[160];
	char val[64];
	enum knob_kind kind;
};

static struct saved_knob saved[NR_SAVED];
static volatile sig_atomic_t nr_saved;

static int nr_saved_of(enum knob_kind kind)
{
	int i, n = 0;

	for (i = 0; i < nr_saved; i++)
		n += saved[i].path[0] && saved[i].kind == kind;
	return n;
}

/* Push a knob; the caller checked there is room. */
static void knob_push(const char *path, const char *val, enum knob_kind kind)
{
	struct saved_knob *k = &saved[nr_saved];

	snprintf(k->path, sizeof(k->path), "%s", path);
	snprintf(k->val, sizeof(k->val), "%s", val);
	k->kind = kind;
	nr_saved = nr_saved + 1;
	rothp_restore_at_exit();
}

/*
 * Write back the saved knobs of one kind, the last saved first, and forget
 * them: 0, or -1 if one could not be written (said).
 */
static int knobs_restore(enum knob_kind kind)
{
	int i, ret = 0;

	for (i = nr_saved - 1; i >= 0; i--) {
		if (!saved[i].path[0] || saved[i].kind != kind)
			continue;
		if (rothp_write_text(saved[i].path, saved[i].val))
			ret = -1;
		saved[i].path[0] = '\0';
	}
	while (nr_saved > 0 && !saved[nr_saved - 1].path[0])
		nr_saved = nr_saved - 1;
	return ret;
}

/* The process that registered the restore: only it puts settings back. */
static pid_t restore_owner;

/*
 * Everything saved is restored at exit and on SIGINT/SIGTERM, by the
 * process that saved it: a forked child that exits, or is interrupted
 * with its parent, must not put the knobs back under a parent that is
 * still using them (failslab armed, THP "always").
 */
static void restore_all(void)
{
	if (getpid() != restore_owner)
		return;
	rothp_fault_restore();
	rothp_trace_restore();
	rothp_sysctl_restore();
	rothp_thp_restore();
	rothp_scratch_remove_all();
}

static void restore_signal(int sig)
{
	restore_all();
	signal(sig, SIG_DFL);
	raise(sig);
}

void rothp_restore_at_exit(void)
{
	static bool registered;
	struct sigaction sa;

	if (registered)
		return;
	registered = true;
	restore_owner = getpid();
	atexit(restore_all);
	memset(&sa, 0, sizeof(sa));
	sa.sa_handler = restore_signal;
	sigaction(SIGINT, &sa, NULL);
	sigaction(SIGTERM, &sa, NULL);
}

/* Read a numeric sysctl, name relative to /proc/sys; -1 if it is not there. */
int rothp_sysctl_read(const char *name, long *val)
{
	char path[PATH_MAX];

	snprintf(path, sizeof(path), ROTHP_SYSCTL_DIR "%s", name);
	return rothp_read_long(path, val);
}

/* Save a numeric sysctl; it is restored at exit and on SIGINT/SIGTERM. */
int rothp_sysctl_save(const char *name)
{
	char path[160], val[32];
	long v;

	if (nr_saved_of(KNOB_SYSCTL) >= NR_SYSCTL_SAVED || nr_saved >= NR_SAVED || strlen(name) >= 64) {
		ksft_print_msg("cannot save sysctl %s: no room\n", name);
		return -1;
	}
	if (rothp_sysctl_read(name, &v)) {
		ksft_print_msg("cannot read %s%s: %s\n", ROTHP_SYSCTL_DIR, name, strerror(errno));
		return -1;
	}
	snprintf(path, sizeof(path), ROTHP_SYSCTL_DIR "%s", name);
	snprintf(val, sizeof(val), "%ld", v);
	knob_push(path, val, KNOB_SYSCTL);
	return 0;
}

/*
 * The series aligns a PIE's load bias to the PMD size only if that leaves
 * it 16 random bits (elf_thp_keeps_randomness() in fs/binfmt_elf.c):
 * vm.mmap_rnd_bits of at least 16 + log2(PMD size / page size), 25 with
 * 4 KiB pages. x86-64's default of 28 is enough; arm64's (18) is not.
 */
#define ROTHP_PIE_MIN_RND_BITS	16

long rothp_pie_rnd_bits_needed(void)
{
	return ROTHP_PIE_MIN_RND_BITS + __builtin_ctzl(ROTHP_PMD_SIZE / ROTHP_PAGE_SIZE);
}

/*
 * For the tests and benchmarks that start aligned PIEs: raise
 * vm.mmap_rnd_bits to rothp_pie_rnd_bits_needed() where it is lower
 * (arm64), saved and put back at exit, and say so; where it cannot be
 * raised, say that the series will not align.
 */
void rothp_pie_rnd_bits_raise(void)
{
	long val, need;
	char buf[32];

	/* Without THP there is no PMD size, and nothing to align to. */
	if (!rothp_hpage_pmd_size())
		return;
	need = rothp_pie_rnd_bits_needed();
	if (rothp_sysctl_read(ROTHP_RND_BITS, &val) || val >= need)
		return;
	snprintf(buf, sizeof(buf), "%ld", need);
	if (rothp_sysctl_save(ROTHP_RND_BITS) ||
	    rothp_write_text(ROTHP_SYSCTL_DIR ROTHP_RND_BITS, buf))
		ksft_print_msg("%s is %ld and cannot be raised to %ld: the series will not align PIEs\n",
			       ROTHP_RND_BITS, val, need);
	else
		ksft_print_msg("%s raised from %ld to %ld for this run: below that the series leaves PIEs where 6.12 puts them, to keep 16 random bits\n",
			       ROTHP_RND_BITS, val, need);
}

/* Restore the saved sysctls, the last saved first. */
void rothp_sysctl_restore(void)
{
	knobs_restore(KNOB_SYSCTL);
}

/* Room for the knob at path, or -1 with errno ENOSPC (said). */
static int knob_room(const char *path)
{
	if (nr_saved < NR_SAVED && strlen(path) < sizeof(saved[0].path))
		return 0;
	ksft_print_msg("cannot save %s: no room\n", path);
	errno = ENOSPC;
	return -1;
}

/*
 * Save the knobs in their order: rothp_fault_restore() writes them back in
 * the reverse one, as exit and SIGINT/SIGTERM do, so that the knob armed
 * last, the probability, goes back first. 0, or -1 (said), with what was
 * saved before the failure still saved.
 */
int rothp_fault_save(const struct rothp_fault_knob *knobs, size_t n)
{
	char val[64];
	size_t i;

	for (i = 0; i < n; i++) {
		if (knob_room(knobs[i].path))
			return -1;
		if (rothp_read_line(knobs[i].path, val, sizeof(val))) {
			ksft_print_msg("cannot read %s: %s\n", knobs[i].path, strerror(errno));
			return -1;
		}
		knob_push(knobs[i].path, val, KNOB_FAULT);
	}
	return 0;
}

/* Write the knobs' values, in their order, skipping NULL ones: 0, or -1 (said). */
int rothp_fault_set(const struct rothp_fault_knob *knobs, size_t n)
{
	size_t i;

	for (i = 0; i < n; i++) {
		if (knobs[i].val && rothp_write_text(knobs[i].path, knobs[i].val))
			return -1;
	}
	return 0;
}

/* Put the fault injection knobs back: 0, or -1 if one could not be (said). */
int rothp_fault_restore(void)
{
	return knobs_restore(KNOB_FAULT);
}

/*
 * Save a trace event's enable file, restored by rothp_trace_restore(), at
 * exit and on SIGINT/SIGTERM. It reads "0" or "1", with a '*' after in
 * soft mode (event_enable_read()), which a write would refuse: the digit
 * alone is saved. -1 with errno, saying nothing, when it cannot be read.
 */
int rothp_trace_save(const char *path)
{
	char val[8];

	if (rothp_read_line(path, val, sizeof(val)))
		return -1;
	if (knob_room(path))
		return -1;
	knob_push(path, val[0] == '1' ? "1" : "0", KNOB_TRACE);
	return 0;
}

void rothp_trace_restore(void)
{
	knobs_restore(KNOB_TRACE);
}

/* Read a THP sysfs knob; for "a [b] c" choices, the bracketed one. */
int rothp_thp_read_str(const char *knob, char *buf, size_t len)
{
	char path[PATH_MAX], raw[256], *open_br, *close_br;

	snprintf(path, sizeof(path), ROTHP_THP_SYSFS "%s", knob);
	if (rothp_read_line(path, raw, sizeof(raw)))
		return -1;
	open_br = strchr(raw, '[');
	close_br = open_br ? strchr(open_br, ']') : NULL;
	if (open_br && close_br) {
		*close_br = '\0';
		snprintf(buf, len, "%s", open_br + 1);
	} else {
		snprintf(buf, len, "%s", raw);
	}
	return 0;
}

int rothp_thp_set_str(const char *knob, const char *val)
{
	char path[PATH_MAX];

	snprintf(path, sizeof(path), ROTHP_THP_SYSFS "%s", knob);
	return rothp_write_text(path, val);
}

static int thp_set_num(const char *knob, unsigned long val)
{
	char buf[32];

	snprintf(buf, sizeof(buf), "%lu", val);
	return rothp_thp_set_str(knob, buf);
}

/*
 * Save the THP knobs; they are restored by rothp_thp_restore(), at exit
 * and on SIGINT/SIGTERM.
 */
int rothp_thp_save(void)
{
	char val[NR_THP_KNOBS][64], path[160];
	size_t i;

	if (nr_saved + NR_THP_KNOBS > NR_SAVED) {
		ksft_print_msg("cannot save the THP settings: no room\n");
		return -1;
	}
	for (i = 0; i < NR_THP_KNOBS; i++) {
		if (rothp_thp_read_str(thp_knobs[i], val[i], sizeof(val[i]))) {
			ksft_print_msg("cannot read %s%s: %s\n", ROTHP_THP_SYSFS, thp_knobs[i],
				       strerror(errno));
			return -1;
		}
	}
	/* Pushed backwards, so that they are restored in thp_knobs[] order. */
	for (i = NR_THP_KNOBS; i-- > 0; ) {
		snprintf(path, sizeof(path), ROTHP_THP_SYSFS "%s", thp_knobs[i]);
		knob_push(path, val[i], KNOB_THP);
	}
	return 0;
}

/*
 * Save the prompt collapse switch with the THP knobs: restored by
 * rothp_thp_restore(), at exit and on SIGINT/SIGTERM. *on (unless NULL)
 * gets its value. -1 with errno when it cannot be read (ENOENT: baseline
 * 6.12 has none), saying nothing: the caller does.
 */
int rothp_prompt_save(long *on)
{
	char val[32];
	long v;

	if (rothp_prompt_read(&v))
		return -1;
	if (nr_saved >= NR_SAVED) {
		errno = ENOSPC;
		return -1;
	}
	snprintf(val, sizeof(val), "%ld", v);
	knob_push(ROTHP_THP_SYSFS ROTHP_PROMPT_KNOB, val, KNOB_THP);
	if (on)
		*on = v;
	return 0;
}

/* Restore the saved THP knobs and prompt collapse switch. */
void rothp_thp_restore(void)
{
	knobs_restore(KNOB_THP);
}

/*
 * khugepaged tunables: sleep_ms between passes of 8 PMDs' PTEs (4096 with
 * 4 KiB pages), alloc_ms after an allocation failure; pages_to_scan,
 * max_ptes_none and defrag at their defaults (HPAGE_PMD_NR * 8,
 * HPAGE_PMD_NR - 1 and 1, khugepaged_init()), so that a changed host value
 * cannot stop a collapse.
 */
static int thp_khugepaged_set(unsigned long sleep_ms, unsigned long alloc_ms)
{
	unsigned long nr = rothp_hpage_pmd_size() / ROTHP_PAGE_SIZE;

	if (!nr)
		return -1;
	if (thp_set_num("khugepaged/scan_sleep_millisecs", sleep_ms) ||
	    thp_set_num("khugepaged/alloc_sleep_millisecs", alloc_ms) ||
	    thp_set_num("khugepaged/pages_to_scan", 8 * nr) ||
	    thp_set_num("khugepaged/max_ptes_none", nr - 1) ||
	    thp_set_num("khugepaged/defrag", 1))
		return -1;
	return 0;
}

/*
 * Make khugepaged scan often: 100 ms sleeps and 4096 PTEs (8 PMDs) a pass.
 * max_ptes_none and defrag are set to their defaults (HPAGE_PMD_NR - 1 and
 * 1, khugepaged_init()), so a changed host value cannot stop a collapse.
 */
int rothp_thp_khugepaged_fast(void)
{
	return thp_khugepaged_set(100, 100);
}

/*
 * khugepaged's default tunables (khugepaged_init(), mm/khugepaged.c): 10 s
 * sleeps between passes of 4096 pages, 60 s after an allocation failure.
 */
int rothp_thp_khugepaged_defaults(void)
{
	return thp_khugepaged_set(10000, 60000);
}

/*
 * Make khugepaged scan now: a write to scan_sleep_millisecs, even of its
 * value, ends its sleep (scan_sleep_millisecs_store()). That pass also
 * frees the slots of mms that have exited.
 */
int rothp_khugepaged_kick(void)
{
	char buf[32];

	if (rothp_thp_read_str("khugepaged/scan_sleep_millisecs", buf, sizeof(buf)))
		return -1;
	return rothp_thp_set_str("khugepaged/scan_sleep_millisecs", buf);
}
