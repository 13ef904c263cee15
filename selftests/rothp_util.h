/* SPDX-License-Identifier: GPL-2.0 */
/*
 * Helpers shared by the rothp kselftests and by textprog, the
 * program whose text they turn into read-only file THPs.
 */
#ifndef __ROTHP_UTIL_H
#define __ROTHP_UTIL_H

#include <limits.h>
#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>
#include <stdio.h>
#include <sys/types.h>

#ifndef MADV_HUGEPAGE
#define MADV_HUGEPAGE 14
#endif
#ifndef MADV_COLLAPSE
#define MADV_COLLAPSE 25
#endif

/* x86-64 numbers, for C libraries that do not define them yet. */
#ifndef __NR_pidfd_open
#define __NR_pidfd_open		434
#endif
#ifndef __NR_process_madvise
#define __NR_process_madvise	440
#endif

#define ROTHP_PAGE_SIZE		4096UL
#define ROTHP_PMD_SIZE		(2UL << 20)
#define ROTHP_PMD_MASK		(~(ROTHP_PMD_SIZE - 1))
#define ROTHP_ALIGN_UP(x, a)	(((x) + (a) - 1) & ~((a) - 1))
#define ROTHP_ALIGN_DOWN(x, a)	((x) & ~((a) - 1))

/*
 * textprog's stubs: stub i, at the start of its 4 KiB page, is
 * "movl $i, %eax; ret" (b8 <i, 32-bit little-endian> c3).
 */
#define ROTHP_STUB_SIZE		4096UL
#define ROTHP_STUB_IMM		1	/* offset of the immediate in a stub */
/*
 * ... and its chain entry, for the iTLB benchmark (progs/textprog_blob.S):
 * %eax = i, then return if --%rcx is 0, else jump to ((void **)%rdi)[i].
 */
#define ROTHP_CHAIN_ENTRY	16

/* progs/textprog_blob.S: run calls (>= 1) chain entries from entry on. */
unsigned int rothp_chain_run(void *const *table, const void *entry, unsigned long calls);

/*
 * /proc/vmstat counters of the series: THPs split, and THPs dropped, when
 * their file is opened for write. Baseline 6.12 has neither.
 */
#define ROTHP_VM_SPLIT_ON_WRITE	"thp_file_split_on_write"
#define ROTHP_VM_DROP_ON_WRITE	"thp_file_drop_on_write"
#define ROTHP_NO_SPLIT_ON_WRITE	"kernel lacks " ROTHP_VM_SPLIT_ON_WRITE " (baseline 6.12)"

/* Generous per-reply limit: the guest is TCG, maybe with a KASAN kernel. */
#define ROTHP_REPLY_TIMEOUT_MS	(180 * 1000)

/* One line of /proc/PID/maps. */
struct rothp_vma {
	unsigned long start;
	unsigned long end;
	unsigned long offset;		/* file offset of start, in bytes */
	char perms[5];
	unsigned int dev_major;
	unsigned int dev_minor;
	unsigned long inode;
	char path[PATH_MAX];
};

/* What the ELF loader reads of a program: its type, PT_INTERP and text. */
struct rothp_elf {
	unsigned int type;		/* e_type: ET_EXEC, ET_DYN */
	bool interp;			/* it has a PT_INTERP */
	int nr_load;			/* PT_LOAD headers */
	unsigned long first_vaddr;	/* p_vaddr of the first PT_LOAD */
	unsigned long max_align;	/* largest p_align of a PT_LOAD */
	int nr_text;			/* executable, not writable PT_LOADs */
	unsigned long text_vaddr;	/* p_vaddr, p_offset, p_filesz and p_align */
	unsigned long text_offset;	/* of the first of those */
	unsigned long text_filesz;
	unsigned long text_align;
};

/* Most runs rothp_sample_placement() takes. */
#define ROTHP_MAX_RUNS		64

/* Where the kernel put a program's text in a number of runs. */
struct rothp_placement {
	int runs;		/* runs that started and were looked at */
	int ran_ok;		/* ... in which every stub ran and it exited 0 */
	int congruent;		/* ... with text start - file offset 2 MiB-aligned */
	int bias_aligned;	/* ... with a 2 MiB-aligned load bias */
	int at_vaddr;		/* ... with the text at its own p_vaddr (bias 0) */
	int with_blocks;	/* ... with at least one eligible 2 MiB block */
	long eligible_min;	/* fewest eligible 2 MiB blocks in a run */
	int distinct;		/* different text start addresses */
};

/* A running textprog, talked to over two pipes. */
struct textproc {
	pid_t pid;
	FILE *in;			/* its stdin: commands */
	FILE *out;			/* its stdout: replies */
	unsigned long start, end;	/* its text VMA, from "ready" */
	int action_rc, action_errno;	/* result of the initial action */
};

/* Time and polling. */
double rothp_now(void);
long rothp_wait_until(bool (*pred)(void *arg), void *arg, long timeout_ms, long interval_ms);

/* /proc/PID/maps and /proc/PID/smaps. */
int rothp_find_vma(pid_t pid, unsigned long addr, struct rothp_vma *vma);
int rothp_find_vma_path(pid_t pid, const char *path, const char *perms, struct rothp_vma *vma);
long rothp_file_pmd_mapped(pid_t pid, unsigned long addr);
long rothp_eligible_blocks(const struct rothp_vma *vma, off_t file_size);
long rothp_vma_eligible_blocks(const struct rothp_vma *vma);

/* Checksums and residency. */
uint64_t rothp_hash_init(void);
uint64_t rothp_hash_update(uint64_t hash, const void *buf, size_t len);
uint64_t rothp_hash(const void *buf, size_t len);
int rothp_file_hash(int fd, off_t offset, size_t len, uint64_t *hash);
double rothp_resident_fraction(void *addr, size_t len);

/* Files and mappings. */
/* How long rothp_madv_collapse() retries an MADV_COLLAPSE failing with EAGAIN. */
#define ROTHP_COLLAPSE_RETRY_S 5.0
int rothp_madv_collapse(void *addr, size_t len, int *err);
void *rothp_map_aligned(int fd, size_t len, off_t offset, size_t misalign, int prot);
int rothp_copy_file(const char *src, const char *dst);
int rothp_prewarm(const char *path);
int rothp_drop_caches(void);
/* Benchmarks: print "# error: ..." and exit 1, running the atexit handlers. */
void rothp_bench_fail(const char *fmt, ...) __attribute__((format(printf, 1, 2), noreturn));
int rothp_scratch_copy(const char *src, const char *dst);
void rothp_scratch_remove(const char *path);
long rothp_find_stubs(int fd, off_t *off);

/* Kernel facts. */
unsigned long rothp_hpage_pmd_size(void);
int rothp_kconfig(const char *name, char *src, size_t srclen);
const char *rothp_fs_name(const char *path, int *large_folios);
int rothp_vmstat(const char *name, long *val);
int rothp_disk_sectors_read(const char *path, unsigned long long *sectors, char *why,
			    size_t len);

/* sysctls under /proc/sys, e.g. "fs/elf_text_thp_align". */
int rothp_sysctl_read(const char *name, long *val);
int rothp_sysctl_write(const char *name, long val);
int rothp_sysctl_save(const char *name);
void rothp_sysctl_restore(void);

/* THP sysfs settings. */
int rothp_thp_read_str(const char *knob, char *buf, size_t len);
int rothp_thp_set_str(const char *knob, const char *val);
int rothp_thp_set_num(const char *knob, unsigned long val);
int rothp_thp_save(void);
void rothp_thp_restore(void);
int rothp_thp_khugepaged_fast(void);

/* textprog control. */
int textproc_start(struct textproc *tp, const char *path, const char *action);
int textproc_cmd(struct textproc *tp, const char *cmd, char *reply, size_t len);
int textproc_hugepage(struct textproc *tp, const char *who, double *t0);
int textproc_run(struct textproc *tp, long *calls);
int textproc_sum(struct textproc *tp, uint64_t *memsum, uint64_t *filesum);
int textproc_stop(struct textproc *tp);
long textproc_eligible(struct textproc *tp);
bool textproc_sum_matches(struct textproc *tp, const char *who);
void textproc_sum_and_run(struct textproc *tp, const char *who, bool *sum_ok, bool *run_ok);

/* ELF program headers, and where the kernel loads them. */
int rothp_elf_read(const char *path, struct rothp_elf *elf);
bool rothp_elf_text_congruent(const struct rothp_elf *elf);
long rothp_elf_text_blocks(const struct rothp_elf *elf);
int rothp_sample_placement(const char *path, const struct rothp_elf *elf, int runs,
			   struct rothp_placement *pl);

/*
 * Results. These are macros, not functions here, because kselftest.h keeps
 * its counters in each file that includes it: they must count in the test's.
 */

/* Skipped, naming the case and the reason skip, unless skip is NULL. */
#define rothp_result(skip, pass, fmt, ...) do {				\
	const char *__skip = (skip);					\
									\
	if (__skip)							\
		ksft_test_result_skip(fmt ": %s\n", ##__VA_ARGS__, __skip);	\
	else								\
		ksft_test_result(pass, fmt "\n", ##__VA_ARGS__);	\
} while (0)

/* Two results: the text in memory matches the file; every stub runs. */
#define textproc_check_sum_and_run(tp, who) do {			\
	const char *__who = (who);					\
	bool __sum_ok, __run_ok;					\
									\
	textproc_sum_and_run(tp, __who, &__sum_ok, &__run_ok);		\
	ksft_test_result(__sum_ok, "%s: text in memory matches the file\n", __who); \
	ksft_test_result(__run_ok, "%s: every stub returns its index\n", __who); \
} while (0)

/*
 * Start textprog at path with its initial action, or exit failing; one
 * result: "<what> returns 0", the action's madvise() return value.
 */
#define textproc_start_checked(tp, path, action, what) do {		\
	const char *__what = (what);					\
									\
	if (textproc_start(tp, path, action))				\
		ksft_exit_fail_msg("cannot start %s %s\n", path, action); \
	if ((tp)->action_rc)						\
		ksft_print_msg("%s: rc %d, %s\n", __what, (tp)->action_rc, \
			       strerror((tp)->action_errno));		\
	ksft_test_result((tp)->action_rc == 0, "%s returns 0\n", __what); \
} while (0)

/*
 * Common start of every test binary: KTAP header, argument and environment
 * checks (skipping with a reason), drop_caches. Returns the directory; the
 * caller sets its own plan, as kselftest.h keeps its counters per file.
 */
const char *rothp_test_init(int argc, char **argv, char *prog, size_t len);

/* Prompt collapse */

/*
 * The series queues the 2 MiB ranges that madvise(MADV_HUGEPAGE) asks for
 * on a file VMA and wakes khugepaged to serve them before its periodic
 * scan. Under the THP sysfs directory: the switch ("1" or "0") and the
 * number of requests queued now, at most ROTHP_PROMPT_QUEUE_MAX. Baseline
 * 6.12 has neither, nor the four vmstat counters.
 */
#define ROTHP_PROMPT_KNOB	"khugepaged/prompt_collapse"
#define ROTHP_PROMPT_PENDING	"khugepaged/prompt_collapse_pending"
#define ROTHP_PROMPT_QUEUE_MAX	128
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
int rothp_thp_khugepaged_defaults(void);
int rothp_khugepaged_kick(void);
int rothp_neighbour_start(struct rothp_neighbour *nb, unsigned long mib);
void rothp_neighbour_stop(struct rothp_neighbour *nb);
double textproc_wait_huge(struct textproc *tp, double t0, int percent, long cap_ms,
			  long interval_ms, struct rothp_huge_wait *hw);

/* Page cache probes */

/* One 2 MiB block of a file as the page cache holds it. */
struct rothp_cache_block {
	off_t offset;		/* file offset, 2 MiB-aligned */
	int resident;		/* pages of it in the page cache, of 512 */
	int dirty;		/* ... of those dirty */
	int writeback;		/* ... under writeback */
	bool huge;		/* all 512 one PMD-sized folio */
};

int rothp_cache_blocks(int fd, off_t offset, long nr, struct rothp_cache_block *blk);
off_t rothp_elf_text_block_offset(const struct rothp_elf *elf);
int rothp_meminfo(const char *name, long *kb);
int rothp_scan_result_known(const char *name);

/* Random cyclic permutations (splitmix64, Sattolo's algorithm). */
uint64_t rothp_rand64(uint64_t *state);
void rothp_cycle_perm(uint64_t seed, uint32_t *next, long n);

/* Which of nr 2 MiB blocks from start are PMD-mapped in pid: 'H' or 'p'. */
long rothp_pmd_map(pid_t pid, unsigned long start, long nr, char *map);
long rothp_smaps_field(pid_t pid, unsigned long addr, const char *field);
long rothp_rollup_field(pid_t pid, const char *field);

/* A uprobe event "group/event" on path at a file offset, via tracefs. */
int rothp_uprobe_add(const char *group_event, const char *path, unsigned long off);
long rothp_uprobe_hits(const char *path, const char *event);
void rothp_uprobe_remove(const char *group_event);

/* Small numeric and file helpers. */
/*
 * Race tests: pin the calling process to online CPU number index modulo
 * the CPUs it may run on, so workers started with 0, 1, 2... run on
 * different CPUs, as they would on a real machine. Returns the CPU, or -1
 * (errno set) when the affinity cannot be read or set.
 */
int rothp_spread(int index);
int rothp_nr_cpus(void);

void rothp_sort(double *v, int n);
double rothp_median(double *v, int n);
int rothp_read_line(const char *path, char *buf, size_t len);
int rothp_write_text(const char *path, const char *val);
char *rothp_read_whole(const char *path, size_t *size);
char *rothp_read_stream(const char *path, size_t *len);
char *rothp_memdup(const void *buf, size_t len);

#endif /* __ROTHP_UTIL_H */
