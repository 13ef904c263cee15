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

#define ROTHP_PAGE_SIZE		4096UL
#define ROTHP_PMD_SIZE		(2UL << 20)
#define ROTHP_PMD_MASK		(~(ROTHP_PMD_SIZE - 1))
#define ROTHP_ALIGN_UP(x, a)	(((x) + (a) - 1) & ~((a) - 1))
#define ROTHP_ALIGN_DOWN(x, a)	((x) & ~((a) - 1))

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
int rothp_madv_collapse(void *addr, size_t len, int *err);
void *rothp_map_aligned(int fd, size_t len, off_t offset, size_t misalign, int prot);
int rothp_copy_file(const char *src, const char *dst);
int rothp_prewarm(const char *path);
int rothp_drop_caches(void);

/* Kernel facts. */
unsigned long rothp_hpage_pmd_size(void);
int rothp_kconfig(const char *name, char *src, size_t srclen);
const char *rothp_fs_name(const char *path, int *large_folios);

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
int textproc_run(struct textproc *tp, long *calls);
int textproc_sum(struct textproc *tp, uint64_t *memsum, uint64_t *filesum);
int textproc_stop(struct textproc *tp);
long textproc_eligible(struct textproc *tp);

/*
 * Common start of every test binary: KTAP header, argument and environment
 * checks (skipping with a reason), drop_caches. Returns the directory; the
 * caller sets its own plan, as kselftest.h keeps its counters per file.
 */
const char *rothp_test_init(int argc, char **argv, char *prog, size_t len);

#endif /* __ROTHP_UTIL_H */
