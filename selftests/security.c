// SPDX-License-Identifier: GPL-2.0
/*
 * security <dir>: writes into PMD-mapped private text stay private, and
 * an unprivileged user cannot collapse, split or reconfigure anything.
 * Each case works on its own copy of textprog, so a failure cannot leak
 * into the file other tests run.
 *
 *  a. procmem: a pwrite() through /proc/self/mem (FOLL_FORCE) into the
 *     PMD-mapped r-x text of a private mapping. GUP faults for write,
 *     wp_huge_pmd() (mm/memory.c) splits just that PMD of a file VMA and
 *     the PTE fault copies the page: the writer sees the new byte; the
 *     file, its page cache (still one clean huge folio) and a second
 *     process do not, nor does the file after drop_caches.
 *  b. ptrace: PTRACE_POKETEXT into a child's PMD-mapped text, the same
 *     path through access_process_vm(): the child runs the changed stub,
 *     the file and page cache stay as they were; poking the old word back
 *     makes the stub right again.
 *  c. uprobe: a uprobe event on a stub of PMD-mapped text.
 *     uprobe_write_opcode() (kernel/events/uprobes.c) reads the page with
 *     FOLL_SPLIT_PMD and replaces it with an anonymous copy holding int3
 *     (BRK #0x5 on arm64), so the probed block is PTE-mapped in the
 *     process while the probe is there; the stub still returns its value
 *     and the probe counts hits.
 *     On removal the copy is dropped for the page cache page, and as that
 *     is part of a huge folio collapse_pte_mapped_thp() retracts the page
 *     table, so the block is PMD-mapped again at the next fault. The file
 *     and its page cache never change.
 *  d. unprivileged: uid 65534 cannot process_madvise() a root process
 *     (mm_access() in process_madvise() fails the PTRACE_MODE_READ check:
 *     EACCES), open its /proc/PID/mem (EACCES), ptrace it (EPERM), or open
 *     the THP knobs or drop_caches for write (EACCES). What it can do is
 *     MADV_HUGEPAGE its own r-x mapping of the target's file (through a
 *     descriptor root opened): with the series that hint maps the blocks
 *     with PMDs in its own mm only. The target stays PTE-mapped; root then
 *     collapses it, so the refusals mattered.
 *
 * Each part's results are named in its table below: the plan is their sum.
 */
#define _GNU_SOURCE
#include <errno.h>
#include <fcntl.h>
#include <grp.h>
#include <signal.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>
#include <sys/mman.h>
#include <sys/mount.h>
#include <sys/ptrace.h>
#include <sys/stat.h>
#include <sys/syscall.h>
#include <sys/uio.h>
#include <sys/wait.h>

#include "kselftest.h"
#include "rothp_util.h"

#define PMD			ROTHP_PMD_SIZE
#define NOBODY			65534
#define PROBE_STUB		1000	/* in the second 2 MiB block of stubs */
/* The word PTRACE_POKETEXT changes: the aligned one that holds the stub's value. */
#define POKE_OFF		ROTHP_ALIGN_DOWN(ROTHP_STUB_IMM, sizeof(long))
#define UPROBE_NAME		"rothp_sec/stub"

static char prog[PATH_MAX];
static const char *dir;
static uint64_t prog_hash;	/* of the whole of textprog */
static size_t prog_size;

/* A copy of textprog for one case. */
struct copy {
	char path[PATH_MAX];
	int fd;
	off_t stub0;		/* file offset of stub 0 */
	long nr_stubs;
};

static void copy_make(struct copy *c, const char *name)
{
	rothp_scratch_copy_checked(c->path, prog, dir, "security.%s.tmp", name);
	c->fd = rothp_open_checked(c->path, O_RDONLY);
	c->nr_stubs = rothp_find_stubs(c->fd, &c->stub0);
	if (c->nr_stubs <= PROBE_STUB)
		ksft_exit_fail_msg("%s: %ld stubs\n", c->path, c->nr_stubs);
}

/* The whole file, read after writing back and dropping the page cache. */
static bool copy_unchanged_on_disk(struct copy *c, const char *who)
{
	uint64_t h = ~prog_hash;

	if (rothp_drop_caches() || rothp_file_hash(c->fd, 0, prog_size, &h))
		ksft_print_msg("%s: drop_caches or read: %s\n", who, strerror(errno));
	if (h != prog_hash)
		ksft_print_msg("%s: file hash %llx, textprog %llx\n", who, (unsigned long long)h,
			       (unsigned long long)prog_hash);
	return h == prog_hash;
}

static void copy_remove(struct copy *c)
{
	close(c->fd);
	rothp_scratch_remove(c->path);
}

/* The 2 MiB page cache block of fd holding off: one clean huge folio? */
static bool cache_block_clean_huge(int fd, off_t off, const char *who)
{
	struct rothp_cache_block blk;

	if (rothp_cache_blocks(fd, ROTHP_ALIGN_DOWN(off, PMD), 1, &blk)) {
		ksft_print_msg("%s: page cache probe: %s\n", who, strerror(errno));
		return false;
	}
	ksft_print_msg("%s: page cache block at %#lx: %d resident, %d dirty, %d writeback, %s\n",
		       who, (unsigned long)blk.offset, blk.resident, blk.dirty, blk.writeback,
		       blk.huge ? "one huge folio" : "not one huge folio");
	return blk.huge && !blk.dirty && !blk.writeback;
}

/* pread() len bytes of fd at off and compare them with want. */
static bool file_reads(int fd, off_t off, const void *want, size_t len)
{
	unsigned char buf[16];

	if (len > sizeof(buf) || pread(fd, buf, len, off) != (ssize_t)len)
		return false;
	return !memcmp(buf, want, len);
}

/*
 * A second process maps the file afresh, privately, and reads len bytes
 * at off: do they equal want?
 */
static bool fresh_process_reads(const char *path, off_t off, const void *want, size_t len)
{
	size_t maplen;
	char *p;
	pid_t pid;
	int fd;

	pid = rothp_fork();
	if (!pid) {
		fd = open(path, O_RDONLY);
		if (fd < 0)
			_exit(2);
		maplen = ROTHP_ALIGN_UP(off + len, PMD);
		p = mmap(NULL, maplen, PROT_READ, MAP_PRIVATE, fd, 0);
		if (p == MAP_FAILED)
			_exit(3);
		_exit(memcmp(p + off, want, len) ? 1 : 0);
	}
	return !rothp_child_wait(pid, -1, "second process", NULL);
}

static const char *const procmem_results[] = {
	"private r-x mapping PMD-mapped by MADV_COLLAPSE",
	"pwrite through /proc/self/mem into r-x text works",
	"the writer reads the byte it wrote",
	"only the written block lost its PMD mapping",
	"pread of the file reads the old byte",
	"the page cache block is still one clean huge folio",
	"a second process mapping the file reads the old byte",
	"after drop_caches the file is unchanged",
};

static void test_procmem(const struct rothp_case *tc)
{
	unsigned char orig, val, now;
	struct copy c;
	long before, after;
	size_t len;
	off_t off;
	int memfd, rc, err;
	ssize_t n;
	char *p;

	copy_make(&c, "procmem");
	len = ROTHP_ALIGN_DOWN(prog_size, PMD);
	p = rothp_map_text(c.fd, len);
	rc = rothp_collapse_mapping("procmem", p, len, &err, &before);
	rothp_report(tc, 0, NULL, !rc && before == (long)len);

	/* A byte inside stub PROBE_STUB: its 2 MiB block is not the first. */
	off = c.stub0 + PROBE_STUB * ROTHP_STUB_SIZE + ROTHP_STUB_IMM;
	orig = p[off];
	val = orig ^ 0xff;
	memfd = open("/proc/self/mem", O_RDWR);
	n = memfd < 0 ? -1 : pwrite(memfd, &val, 1, (off_t)(unsigned long)(p + off));
	if (n != 1)
		ksft_print_msg("procmem: pwrite: %zd, %s\n", n, strerror(errno));
	if (memfd >= 0)
		close(memfd);
	rothp_report(tc, 1, NULL, n == 1);
	now = *(volatile unsigned char *)(p + off);
	rothp_report(tc, 2, NULL, now == val);

	after = rothp_file_pmd_mapped(getpid(), (unsigned long)p);
	ksft_print_msg("procmem: FilePmdMapped %ld kB before, %ld kB after the write\n",
		       before / 1024, after / 1024);
	rothp_report(tc, 3, NULL, after == before - (long)PMD);
	rothp_report(tc, 4, NULL, file_reads(c.fd, off, &orig, 1));
	rothp_report(tc, 5, NULL, cache_block_clean_huge(c.fd, off, "procmem"));
	rothp_report(tc, 6, NULL, fresh_process_reads(c.path, off, &orig, 1));
	munmap(p, len);
	rothp_report(tc, 7, NULL, copy_unchanged_on_disk(&c, "procmem"));
	copy_remove(&c);
}

/* Stop a child we are not tracing yet: seize and interrupt it. */
static int trace_stop(pid_t pid)
{
	int status;

	if (ptrace(PTRACE_SEIZE, pid, 0, 0) || ptrace(PTRACE_INTERRUPT, pid, 0, 0))
		return -1;
	if (waitpid(pid, &status, __WALL) != pid || !WIFSTOPPED(status))
		return -1;
	return 0;
}

/* Replace the word at addr of a stopped tracee; 0 if it reads back. */
static int poke(pid_t pid, unsigned long addr, long word)
{
	long back;

	if (ptrace(PTRACE_POKETEXT, pid, addr, word))
		return -1;
	errno = 0;
	back = ptrace(PTRACE_PEEKTEXT, pid, addr, 0);
	return errno || back != word ? -1 : 0;
}

/* The stub's word at POKE_OFF with another value for the stub to return. */
static long stub_word(long word, uint32_t imm)
{
	_Static_assert(ROTHP_STUB_IMM - POKE_OFF + sizeof(imm) <= sizeof(word),
		       "the stub's value spans two words");
	memcpy((char *)&word + (ROTHP_STUB_IMM - POKE_OFF), &imm, sizeof(imm));
	return word;
}

static const char *const ptrace_results[] = {
	"child's MADV_COLLAPSE of its text returns 0",
	"child's text is PMD-mapped",
	"PEEKTEXT reads stub %d as the file has it",
	"POKETEXT of a new immediate into the stub reads back",
	"the child runs the poked stub (run reply %d)",
	"the child's text differs, the file it reads does not",
	"only the poked block lost its PMD mapping",
	"pread of the file reads the old stub",
	"the page cache block is still one clean huge folio",
	"a second process mapping the file reads the old stub",
	"with the old word poked back the child is right and exits 0",
	"after drop_caches the file is unchanged",
};

static void test_ptrace(const struct rothp_case *tc)
{
	uint64_t memsum = 0, filesum = 0, blobsum = 0;
	unsigned char orig[8];
	struct rothp_vma vma;
	struct textproc tp;
	unsigned long addr;
	long word = 0, eligible, full, pmd, calls;
	struct copy c;
	off_t off;
	bool ok;
	int ran;

	copy_make(&c, "ptrace");
	ok = textproc_start_action(&tp, c.path, "collapse",
				   "ptrace: child's MADV_COLLAPSE of its text");
	rothp_report(tc, 0, NULL, ok);
	eligible = textproc_eligible(&tp);
	full = eligible * (long)PMD;
	pmd = rothp_file_pmd_mapped(tp.pid, tp.start);
	ksft_print_msg("ptrace: child FilePmdMapped %ld kB, %ld eligible blocks\n", pmd / 1024,
		       eligible);
	rothp_report(tc, 1, NULL, eligible > 1 && pmd == full);

	if (rothp_find_vma(tp.pid, tp.start, &vma))
		ksft_exit_fail_msg("ptrace: no text VMA\n");
	off = c.stub0 + PROBE_STUB * ROTHP_STUB_SIZE + POKE_OFF;
	addr = vma.start + (off - vma.offset);
	if (pread(c.fd, orig, sizeof(orig), off) != sizeof(orig) ||
	    rothp_file_hash(c.fd, c.stub0, c.nr_stubs * ROTHP_STUB_SIZE, &blobsum))
		ksft_exit_fail_msg("ptrace: read %s: %s\n", c.path, strerror(errno));

	ok = !trace_stop(tp.pid);
	if (ok) {
		errno = 0;
		word = ptrace(PTRACE_PEEKTEXT, tp.pid, addr, 0);
		ok = !errno && !memcmp(&word, orig, sizeof(word));
	}
	rothp_report(tc, 2, NULL, ok, PROBE_STUB);
	ok = ok && !poke(tp.pid, addr, stub_word(word, 0x7eadbeef));
	ptrace(PTRACE_DETACH, tp.pid, 0, 0);
	rothp_report(tc, 3, NULL, ok);

	/* textprog counts the stubs that returned a wrong value: one. */
	ran = textproc_run(&tp, &calls);
	rothp_report(tc, 4, NULL, ran == 0, ran);
	if (textproc_sum(&tp, &memsum, &filesum))
		ksft_print_msg("ptrace: no sum reply\n");
	ksft_print_msg("ptrace: child memory %llx, its file %llx, textprog %llx\n",
		       (unsigned long long)memsum, (unsigned long long)filesum,
		       (unsigned long long)blobsum);
	rothp_report(tc, 5, NULL, memsum != filesum && filesum == blobsum);

	pmd = rothp_file_pmd_mapped(tp.pid, tp.start);
	ksft_print_msg("ptrace: child FilePmdMapped %ld kB after the poke\n", pmd / 1024);
	rothp_report(tc, 6, NULL, pmd == full - (long)PMD);
	rothp_report(tc, 7, NULL, file_reads(c.fd, off, orig, sizeof(orig)));
	rothp_report(tc, 8, NULL, cache_block_clean_huge(c.fd, off, "ptrace"));
	rothp_report(tc, 9, NULL, fresh_process_reads(c.path, off, orig, sizeof(orig)));

	ok = !trace_stop(tp.pid) && !poke(tp.pid, addr, word);
	ptrace(PTRACE_DETACH, tp.pid, 0, 0);
	ran = textproc_run(&tp, &calls);
	rothp_report(tc, 10, NULL, ok && ran == 1 && textproc_sum_matches(&tp, "ptrace") &&
		     !textproc_stop(&tp));
	rothp_report(tc, 11, NULL, copy_unchanged_on_disk(&c, "ptrace"));
	copy_remove(&c);
}

static void uprobe_remove(void)
{
	if (rothp_uprobe_remove(UPROBE_NAME))
		ksft_print_msg("disable or remove uprobe: %s\n", strerror(errno));
}

static const char *const uprobe_results[] = {
	"child's MADV_COLLAPSE of its text returns 0",
	"child's text is PMD-mapped",
	"probe on stub %d at file offset %#lx enabled",
	"only the probed block is PTE-mapped while the probe is there",
	"the process's text has " ROTHP_UPROBE_INSN_NAME " at the probe (%#x)",
	"every stub, the probed one too, returns its index",
	"the probe was hit",
	"pread of the file reads the stub while the probe is there",
	"probe disabled and removed",
	"after removal text, file and page cache are as before",
	"the probed block is PMD-mapped again",
	"textprog exits 0; after drop_caches the file is unchanged",
};

/*
 * Skip what is left of the uprobe results, the case's first being result
 * number first: each named by the reason alone.
 */
static void uprobe_skip_rest(const struct rothp_case *tc, unsigned int first, const char *why)
{
	while (ksft_test_num() < first + tc->nr)
		ksft_test_result_skip("%s: %s\n", tc->name, why);
}

static void test_uprobe(const struct rothp_case *tc)
{
	unsigned int first = ksft_test_num();
	char memp[64];
	unsigned char orig[8];
	uint32_t seen = 0;
	struct rothp_vma vma;
	struct textproc tp;
	unsigned long addr;
	long eligible, full, pmd, calls, hits;
	struct copy c;
	off_t off;
	int fd, ran;
	bool ok;

	if (access(ROTHP_TRACEFS "uprobe_events", F_OK))
		mount("nodev", ROTHP_TRACEFS, "tracefs", 0, NULL);
	if (access(ROTHP_TRACEFS "uprobe_events", W_OK)) {
		uprobe_skip_rest(tc, first,
				 "no " ROTHP_TRACEFS "uprobe_events (CONFIG_UPROBE_EVENTS off?)");
		return;
	}
	uprobe_remove();	/* a leftover of an interrupted run */

	copy_make(&c, "uprobe");
	ok = textproc_start_action(&tp, c.path, "collapse",
				   "uprobe: child's MADV_COLLAPSE of its text");
	rothp_report(tc, 0, NULL, ok);
	eligible = textproc_eligible(&tp);
	full = eligible * (long)PMD;
	pmd = rothp_file_pmd_mapped(tp.pid, tp.start);
	rothp_report(tc, 1, NULL, eligible > 1 && pmd == full);
	if (rothp_find_vma(tp.pid, tp.start, &vma))
		ksft_exit_fail_msg("uprobe: no text VMA\n");
	off = c.stub0 + PROBE_STUB * ROTHP_STUB_SIZE;
	addr = vma.start + (off - vma.offset);
	if (pread(c.fd, orig, sizeof(orig), off) != sizeof(orig))
		ksft_exit_fail_msg("uprobe: read %s: %s\n", c.path, strerror(errno));

	ok = !rothp_uprobe_add(UPROBE_NAME, c.path, off, true);
	rothp_report(tc, 2, NULL, ok, PROBE_STUB, (unsigned long)off);
	if (!ok) {
		uprobe_remove();
		textproc_stop(&tp);
		copy_remove(&c);
		uprobe_skip_rest(tc, first, "the probe could not be set up");
		return;
	}

	/* FOLL_SPLIT_PMD: the probed block is PTE-mapped in the process. */
	pmd = rothp_file_pmd_mapped(tp.pid, tp.start);
	ksft_print_msg("uprobe: FilePmdMapped %ld kB with the probe, %ld kB before\n", pmd / 1024,
		       full / 1024);
	rothp_report(tc, 3, NULL, pmd == full - (long)PMD);
	snprintf(memp, sizeof(memp), "/proc/%d/mem", (int)tp.pid);
	fd = open(memp, O_RDONLY);
	if (fd < 0 || pread(fd, &seen, ROTHP_UPROBE_INSN_SIZE, addr) != ROTHP_UPROBE_INSN_SIZE)
		ksft_print_msg("uprobe: read %s: %s\n", memp, strerror(errno));
	if (fd >= 0)
		close(fd);
	rothp_report(tc, 4, NULL, seen == ROTHP_UPROBE_INSN, seen);
	ran = textproc_run(&tp, &calls);
	rothp_report(tc, 5, NULL, ran == 1);
	hits = rothp_uprobe_hits(UPROBE_NAME, c.path);
	ksft_print_msg("uprobe: %ld hits after one run\n", hits);
	rothp_report(tc, 6, NULL, hits > 0);
	/*
	 * pread() only: any new mapping of the file, rothp_cache_blocks()'s
	 * too, would get the breakpoint installed by uprobe_mmap().
	 */
	rothp_report(tc, 7, NULL, file_reads(c.fd, off, orig, sizeof(orig)));

	uprobe_remove();
	rothp_report(tc, 8, NULL, rothp_uprobe_hits(UPROBE_NAME, c.path) < 0);
	ran = textproc_run(&tp, &calls);
	rothp_report(tc, 9, NULL, ran == 1 && textproc_sum_matches(&tp, "uprobe removed") &&
		     file_reads(c.fd, off, orig, sizeof(orig)) &&
		     cache_block_clean_huge(c.fd, off, "uprobe removed"));
	/*
	 * uprobe_write_opcode() restoring a page of a huge folio calls
	 * collapse_pte_mapped_thp(): the run above refaulted the block whole.
	 */
	pmd = rothp_file_pmd_mapped(tp.pid, tp.start);
	ksft_print_msg("uprobe: FilePmdMapped %ld kB after removal and a run\n", pmd / 1024);
	rothp_report(tc, 10, NULL, pmd == full);
	ok = !textproc_stop(&tp);
	rothp_report(tc, 11, NULL, ok && copy_unchanged_on_disk(&c, "uprobe"));
	copy_remove(&c);
}

/*
 * What uid 65534 tries, in the order unpriv_child() tries it: one result
 * each, "<what> fails with <errno name>", or skipped as "<what>".
 */
static const char *const unpriv_what[] = {
	"process_madvise(MADV_COLLAPSE) of a root process",
	"process_madvise(MADV_PAGEOUT) of a root process",
	"open /proc/PID/mem of a root process for write",
	"PTRACE_ATTACH to a root process",
	"open khugepaged/prompt_collapse for write",
	"open /proc/sys/vm/drop_caches for write",
	"open THP enabled for write",
};

#define NR_UNPRIV	ARRAY_SIZE(unpriv_what)

static const struct {
	long want_rc;
	int want_err;
} unpriv_want[NR_UNPRIV] = {
	{ -1, EACCES }, { -1, EACCES }, { -1, EACCES }, { -1, EPERM },
	{ -1, EACCES }, { -1, EACCES }, { -1, EACCES },
};

struct unpriv_result {
	long rc[NR_UNPRIV];
	int err[NR_UNPRIV];
	int hint_rc, hint_err;	/* its own MADV_HUGEPAGE */
	long hint_pmd;		/* its mapping's FilePmdMapped after it */
};

static long open_wr(const char *path)
{
	int fd = open(path, O_WRONLY);

	if (fd >= 0)
		close(fd);
	return fd < 0 ? -1 : 0;
}

static void unpriv_child(int out, pid_t target, const struct iovec *iov, int fd)
{
	size_t len = ROTHP_ALIGN_DOWN(prog_size, PMD);
	struct unpriv_result r;
	char path[64], *p;
	int pidfd;

	memset(&r, 0, sizeof(r));
	pidfd = syscall(__NR_pidfd_open, target, 0);
	if (pidfd < 0 || setgroups(0, NULL) || setresgid(NOBODY, NOBODY, NOBODY) ||
	    setresuid(NOBODY, NOBODY, NOBODY))
		_exit(2);
	r.rc[0] = syscall(__NR_process_madvise, pidfd, iov, 1, MADV_COLLAPSE, 0);
	r.err[0] = r.rc[0] < 0 ? errno : 0;
	r.rc[1] = syscall(__NR_process_madvise, pidfd, iov, 1, MADV_PAGEOUT, 0);
	r.err[1] = r.rc[1] < 0 ? errno : 0;
	snprintf(path, sizeof(path), "/proc/%d/mem", (int)target);
	r.rc[2] = open_wr(path);
	r.err[2] = r.rc[2] < 0 ? errno : 0;
	r.rc[3] = ptrace(PTRACE_ATTACH, target, 0, 0);
	r.err[3] = r.rc[3] < 0 ? errno : 0;
	if (!r.rc[3])
		ptrace(PTRACE_DETACH, target, 0, 0);
	r.rc[4] = open_wr(ROTHP_THP_SYSFS ROTHP_PROMPT_KNOB);
	r.err[4] = r.rc[4] < 0 ? errno : 0;
	r.rc[5] = open_wr("/proc/sys/vm/drop_caches");
	r.err[5] = r.rc[5] < 0 ? errno : 0;
	r.rc[6] = open_wr(ROTHP_THP_SYSFS "enabled");
	r.err[6] = r.rc[6] < 0 ? errno : 0;
	/* Its own mapping of the file the target runs. */
	r.hint_rc = -2;
	r.hint_pmd = -1;
	p = rothp_map_aligned(fd, len, 0, 0, PROT_READ | PROT_EXEC);
	if (p != MAP_FAILED) {
		r.hint_rc = madvise(p, len, MADV_HUGEPAGE);
		r.hint_err = r.hint_rc ? errno : 0;
		r.hint_pmd = rothp_file_pmd_mapped(getpid(), (unsigned long)p);
	}
	if (write(out, &r, sizeof(r)) != sizeof(r))
		_exit(3);
	_exit(0);
}

static const char *const unpriv_target_results[] = {
	"the root target's text is PTE-mapped (%ld kB PMD)",
};

static const char *const unpriv_after_results[] = {
	"its MADV_HUGEPAGE of its own r-x mapping of the target's file: PMD-mapped there",
	"the target's text is still PTE-mapped and intact",
	"root's process_madvise(MADV_COLLAPSE) of the same target works",
};

/*
 * Say which whole 2 MiB blocks of c's file are one huge folio in the page
 * cache ('H') and which are not ('.'): where a hint that left blocks small
 * stopped, or was beaten to them.
 */
static void print_cache_blocks(const char *who, struct copy *c)
{
	struct rothp_cache_block blk[64];
	long nr = rothp_min_size(prog_size / PMD, ARRAY_SIZE(blk)), i;
	char map[ARRAY_SIZE(blk) + 1];

	if (rothp_cache_blocks(c->fd, 0, nr, blk)) {
		ksft_print_msg("%s: cannot look at the page cache: %s\n", who, strerror(errno));
		return;
	}
	for (i = 0; i < nr; i++)
		map[i] = blk[i].huge ? 'H' : '.';
	map[nr] = '\0';
	ksft_print_msg("%s: the file's blocks in the page cache: %s\n", who, map);
}

/* Three cases: the target, the refusals (unpriv_what), and after them. */
static void test_unprivileged(const struct rothp_case *tc)
{
	const struct rothp_case *refusals = &tc[1], *after = &tc[2];
	const char *prompt_skip = rothp_prompt_skip();
	char name[ROTHP_RESULT_MAX];
	struct unpriv_result r;
	struct textproc tp;
	struct iovec iov;
	struct copy c;
	long eligible, pmd, calls, rc;
	int pfd[2], pidfd, i;
	pid_t pid;

	/* THP "madvise" and hints on, so that its own MADV_HUGEPAGE hints. */
	if (rothp_thp_save() || (!prompt_skip && rothp_prompt_save(NULL)))
		ksft_exit_fail_msg("cannot save the THP settings\n");
	rothp_thp_set_checked("enabled", "madvise");
	if (!prompt_skip && rothp_prompt_set(1))
		ksft_exit_fail_msg("cannot set %s=1\n", ROTHP_PROMPT_KNOB);
	copy_make(&c, "unpriv");
	/* Small folios, so the text starts PTE-mapped even on XFS. */
	if (rothp_prewarm(c.path))
		ksft_exit_fail_msg("read %s: %s\n", c.path, strerror(errno));
	if (textproc_start(&tp, c.path, "none"))
		ksft_exit_fail_msg("cannot start %s\n", c.path);
	textproc_run(&tp, &calls);
	eligible = textproc_eligible(&tp);
	pmd = rothp_file_pmd_mapped(tp.pid, tp.start);
	rothp_report(tc, 0, NULL, eligible > 0 && pmd == 0, pmd / 1024);
	iov.iov_base = (void *)ROTHP_ALIGN_UP(tp.start, PMD);
	iov.iov_len = ROTHP_ALIGN_DOWN(tp.end, PMD) - (unsigned long)iov.iov_base;

	if (pipe(pfd))
		ksft_exit_fail_msg("pipe: %s\n", strerror(errno));
	pid = rothp_fork();
	if (!pid) {
		close(pfd[0]);
		unpriv_child(pfd[1], tp.pid, &iov, c.fd);
	}
	close(pfd[1]);
	memset(&r, 0, sizeof(r));
	if (read(pfd[0], &r, sizeof(r)) != sizeof(r)) {
		ksft_print_msg("unprivileged: no result from the child\n");
		for (i = 0; i < (int)NR_UNPRIV; i++)
			r.rc[i] = -2;
	}
	close(pfd[0]);
	rothp_child_wait(pid, -1, NULL, NULL);
	for (i = 0; i < refusals->nr; i++) {
		if (i == 4 && prompt_skip) {
			rothp_report(refusals, i, prompt_skip, false);
			continue;
		}
		ksft_print_msg("unprivileged: %s: rc %ld errno %s\n", unpriv_what[i],
			       r.rc[i], r.err[i] ? strerrorname_np(r.err[i]) : "0");
		rothp_case_result_checked(name, refusals, i);
		ksft_test_result(r.rc[i] == unpriv_want[i].want_rc &&
				 r.err[i] == unpriv_want[i].want_err,
				 "%s fails with %s\n", name,
				 strerrorname_np(unpriv_want[i].want_err));
	}

	ksft_print_msg("unprivileged: its own MADV_HUGEPAGE: rc %d (%s), FilePmdMapped %ld kB of %zu kB\n",
		       r.hint_rc, r.hint_rc ? strerror(r.hint_err) : "ok",
		       r.hint_pmd >= 0 ? r.hint_pmd / 1024 : -1,
		       ROTHP_ALIGN_DOWN(prog_size, PMD) >> 10);
	print_cache_blocks("unprivileged: after its hint", &c);
	rothp_report(after, 0, prompt_skip,
		     !r.hint_rc && r.hint_pmd == (long)ROTHP_ALIGN_DOWN(prog_size, PMD));

	/* The hint maps nothing in another mm: the target's stays as it was. */
	pmd = rothp_file_pmd_mapped(tp.pid, tp.start);
	rothp_report(after, 1, NULL, pmd == 0 && textproc_sum_matches(&tp, "unprivileged"));

	/* The control: root may, so the refusals above were what stopped it. */
	pidfd = syscall(__NR_pidfd_open, tp.pid, 0);
	rc = syscall(__NR_process_madvise, pidfd, &iov, 1, MADV_COLLAPSE, 0);
	if (rc < 0)
		ksft_print_msg("root process_madvise: %s\n", strerror(errno));
	if (pidfd >= 0)
		close(pidfd);
	pmd = rothp_file_pmd_mapped(tp.pid, tp.start);
	ksft_print_msg("root: process_madvise rc %ld, FilePmdMapped %ld kB\n", rc, pmd / 1024);
	rothp_report(after, 2, NULL, rc == (long)iov.iov_len && pmd == eligible * (long)PMD &&
		     textproc_run(&tp, &calls) == 1 && !textproc_stop(&tp));
	copy_remove(&c);
	rothp_thp_restore();
}

/* The parts, in the order main() runs them. */
enum part { PROCMEM, PTRACE, UPROBE, UNPRIV, UNPRIV_REFUSALS, UNPRIV_AFTER };

static const struct rothp_case cases[] = {
	[PROCMEM] = ROTHP_CASE("procmem", procmem_results),
	[PTRACE] = ROTHP_CASE("ptrace", ptrace_results),
	[UPROBE] = ROTHP_CASE("uprobe", uprobe_results),
	[UNPRIV] = ROTHP_CASE("unprivileged", unpriv_target_results),
	[UNPRIV_REFUSALS] = ROTHP_CASE("unprivileged", unpriv_what),
	[UNPRIV_AFTER] = ROTHP_CASE("unprivileged", unpriv_after_results),
};

int main(int argc, char **argv)
{
	struct stat st;
	int fd;

	dir = rothp_test_init(argc, argv, prog, sizeof(prog));
	ksft_set_plan(rothp_cases_plan(cases, ARRAY_SIZE(cases)));

	fd = open(prog, O_RDONLY);
	if (fd < 0 || fstat(fd, &st) || rothp_file_hash(fd, 0, st.st_size, &prog_hash))
		ksft_exit_fail_msg("%s: %s\n", prog, strerror(errno));
	prog_size = st.st_size;
	close(fd);

	test_procmem(&cases[PROCMEM]);
	test_ptrace(&cases[PTRACE]);
	test_uprobe(&cases[UPROBE]);
	test_unprivileged(&cases[UNPRIV]);
	ksft_finished();
}
