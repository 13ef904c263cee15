// SPDX-License-Identifier: GPL-2.0
/*
 * always_text <dir>: with THP "always", a real program starts with its text
 * PMD-mapped, run after run, from a cold page cache on. The program is
 * gcc's cc1 (<dir>/gcc/cc1, its libraries in <dir>/gcc/lib, put there by
 * image.sh): ~20 MiB of text, 2 MiB-congruent, with whole 2 MiB blocks.
 *
 * With the series, under THP "always" the mmap() of an executable file
 * mapping hints it, and binfmt_elf maps a program's text so at execve():
 * before the call returns to user space, the calling task collapses each
 * aligned 2 MiB block of it, reading in what is not cached, and maps it
 * with a PMD. cc1 compiles a generated C file, read from a pipe, to
 * assembly on another pipe, in a new process each run, traced: its exec
 * stops it (PTRACE_O_TRACEEXEC), then PTRACE_SYSCALL stops it at the end
 * of execve() and at the entry of its first system call, which the
 * dynamic loader makes after a few instructions of its own, before any of
 * cc1's text has run: that is "at its start", the return from execve()
 * and its work done. The test reads the smaps of its text there, then
 * lets it go. (Ptrace stops, not signals: a signal pending on the return
 * from execve(), such as the SIGTRAP plain PTRACE_TRACEME sends or a
 * single-step trap, stops the hint before it starts, and the series then
 * leaves the text to khugepaged.)
 *
 * Checks: every run exits 0 with the assembly of a reference run made with
 * THP "never"; with prompt_collapse=0 cc1 starts with none of its text
 * PMD-mapped (6.12's behaviour); with 1, from a cold page cache and in
 * every run after, it starts with every eligible block of its text
 * PMD-mapped; mmap(PROT_READ | PROT_EXEC) of a copy of textprog returns
 * with it PMD-mapped, whether it was cached in small folios or not cached
 * at all (an mmap() reads text in whole, as execve() does: a dynamic
 * loader maps a library to run it), while mmap(PROT_READ) of it reads
 * nothing in when it is not in the page cache. Baseline 6.12, which has no prompt
 * collapse (a
 * short-lived process gets huge text only if khugepaged's periodic scan
 * reaches it), skips what needs it, printing what it measured, and checks
 * the rest.
 *
 * The results are named in the table below: the plan is its size.
 */
#define _GNU_SOURCE
#include <errno.h>
#include <fcntl.h>
#include <signal.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>
#include <sys/mman.h>
#include <sys/ptrace.h>
#include <sys/stat.h>
#include <sys/wait.h>

#include "kselftest.h"
#include "rothp_util.h"

#define NR_FUNCS	6	/* functions in the generated source */
#define RUNS		3	/* with prompt collapse, the first from a cold cache */
#define MAX_BLOCKS	64
#define ERR_PATH	"/tmp/always_text.err"
#define COPY_NAME	"always_text.copy"

static char cc1[PATH_MAX], libdir[PATH_MAX], ld_path[PATH_MAX + 32];
static char *src;
static size_t src_len;

/* A cc1 process compiling from its stdin to its stdout. */
struct cc1_proc {
	pid_t pid;
	int in;			/* its stdin */
	int out;		/* its stdout */
	double start;
	long eligible;		/* eligible blocks of its text; -1 if unknown */
	long first_pmd;		/* FilePmdMapped of its text at its first system call */
	int early_status;	/* from waitpid(), when it ended while traced */
	bool reaped;		/* ... which it did */
};

/* What one run gave. */
struct cc1_result {
	int status;		/* from waitpid() */
	size_t len;		/* bytes of assembly */
	uint64_t hash;
	double secs;
};

/*
 * NR_FUNCS functions for cc1 (rothp_cc1_source()): enough for -O2 to run
 * its inliner, loop and vector passes, small enough for a run to take
 * about a second under TCG.
 */
static void make_source(void)
{
	FILE *fp = open_memstream(&src, &src_len);

	if (!fp)
		ksft_exit_fail_msg("open_memstream: %s\n", strerror(errno));
	rothp_cc1_source(fp, NR_FUNCS);
	if (fclose(fp))
		ksft_exit_fail_msg("generating the source: %s\n", strerror(errno));
}

/*
 * cc1's text VMA in pid's maps: the executable mapping of cc1 itself. 0,
 * or -1 when there is none (yet).
 */
static int cc1_text(pid_t pid, struct rothp_vma *vma)
{
	char path[64], line[PATH_MAX + 128];
	FILE *fp;
	int ret = -1;

	snprintf(path, sizeof(path), "/proc/%d/maps", (int)pid);
	fp = fopen(path, "r");
	while (fp && ret && fgets(line, sizeof(line), fp)) {
		if (rothp_vma_parse(line, vma))
			continue;
		if (vma->perms[2] == 'x' && !strcmp(vma->path, cc1))
			ret = 0;
	}
	if (fp)
		fclose(fp);
	return ret;
}

/* waitpid() for c, through EINTR: 0, or -1 (said). */
static int cc1_wait(struct cc1_proc *c, int *status)
{
	while (waitpid(c->pid, status, 0) < 0) {
		if (errno != EINTR) {
			ksft_print_msg("waitpid %d: %s\n", (int)c->pid, strerror(errno));
			return -1;
		}
	}
	return 0;
}

/*
 * The new cc1 stopped itself (SIGSTOP) after PTRACE_TRACEME: have its exec
 * stop it (PTRACE_O_TRACEEXEC), then stop it at the end of execve() and at
 * the entry of its first system call (PTRACE_SYSCALL: ptrace stops, no
 * signal), read how much of its text is PMD-mapped there, and detach,
 * which lets it run. A cc1 that ends on the way keeps its status for
 * cc1_finish().
 */
static void cc1_first_syscall(struct cc1_proc *c)
{
	const int syscall_stop = SIGTRAP | 0x80;	/* PTRACE_O_TRACESYSGOOD */
	const long opts = PTRACE_O_TRACEEXEC | PTRACE_O_TRACESYSGOOD | PTRACE_O_EXITKILL;
	struct rothp_vma vma;
	int status, step;
	bool go;

	c->eligible = -1;
	c->first_pmd = -1;
	if (cc1_wait(c, &status))
		return;
	for (step = 0;; step++) {
		if (!WIFSTOPPED(status)) {
			/* It never got to run cc1: cc1_finish() says why. */
			c->early_status = status;
			c->reaped = true;
			return;
		}
		switch (step) {
		case 0:		/* its own SIGSTOP */
			go = WSTOPSIG(status) == SIGSTOP &&
			     !ptrace(PTRACE_SETOPTIONS, c->pid, 0, opts) &&
			     !ptrace(PTRACE_CONT, c->pid, 0, 0);
			break;
		case 1:		/* the exec */
			go = status >> 8 == (SIGTRAP | (PTRACE_EVENT_EXEC << 8)) &&
			     !ptrace(PTRACE_SYSCALL, c->pid, 0, 0);
			break;
		case 2:		/* the end of execve() */
			go = WSTOPSIG(status) == syscall_stop &&
			     !ptrace(PTRACE_SYSCALL, c->pid, 0, 0);
			break;
		default:	/* the entry of its first system call */
			go = false;
			if (WSTOPSIG(status) == syscall_stop && !cc1_text(c->pid, &vma)) {
				c->eligible = rothp_vma_eligible_blocks(&vma);
				c->first_pmd = rothp_file_pmd_mapped(c->pid, vma.start);
			}
			break;
		}
		if (!go || cc1_wait(c, &status))
			break;
	}
	if (c->first_pmd < 0)
		ksft_print_msg("cc1 %d: step %d, stop status %#x: its text not looked at\n",
			       (int)c->pid, step, status);
	if (ptrace(PTRACE_DETACH, c->pid, 0, 0))
		ksft_print_msg("cc1 %d: PTRACE_DETACH: %s\n", (int)c->pid, strerror(errno));
}

/*
 * Start "cc1 -quiet -nostdinc -O2 -o - -" with pipes on its stdin and
 * stdout, its stderr to ERR_PATH, and look at its text at its start
 * (cc1_first_syscall()). -nostdinc: the guest has no
 * headers, and without it cc1 fails looking for stdc-predef.h. The kernel
 * loads cc1 (its PT_INTERP is the loader the initramfs has); the libraries
 * come from <dir>/gcc/lib.
 */
static int cc1_start(struct cc1_proc *c)
{
	char *argv[] = { cc1, "-quiet", "-nostdinc", "-O2", "-o", "-", "-", NULL };
	char *envp[] = { ld_path, NULL };
	int in[2], out[2], err;

	memset(c, 0, sizeof(*c));
	if (pipe2(in, O_CLOEXEC))
		return -1;
	if (pipe2(out, O_CLOEXEC)) {
		close(in[0]);
		close(in[1]);
		return -1;
	}
	fflush(NULL);
	c->start = rothp_now();
	c->pid = fork();
	if (!c->pid) {
		err = open(ERR_PATH, O_WRONLY | O_CREAT | O_TRUNC, 0644);
		if (dup2(in[0], STDIN_FILENO) < 0 || dup2(out[1], STDOUT_FILENO) < 0 ||
		    err < 0 || dup2(err, STDERR_FILENO) < 0)
			_exit(126);
		if (ptrace(PTRACE_TRACEME, 0, 0, 0) || raise(SIGSTOP))
			_exit(125);
		execve(cc1, argv, envp);
		_exit(127);
	}
	close(in[0]);
	close(out[1]);
	c->in = in[1];
	c->out = out[0];
	if (c->pid < 0) {
		ksft_print_msg("fork: %s\n", strerror(errno));
		close(c->in);
		close(c->out);
		return -1;
	}
	cc1_first_syscall(c);
	return 0;
}

/* Feed it the source, read its assembly, reap it. */
static int cc1_finish(struct cc1_proc *c, struct cc1_result *r)
{
	char buf[16 * 1024];
	size_t off = 0;
	ssize_t n;
	int ret = 0;

	memset(r, 0, sizeof(*r));
	r->hash = rothp_hash_init();
	signal(SIGPIPE, SIG_IGN);	/* a cc1 that died must not kill the test */
	while (off < src_len) {
		n = write(c->in, src + off, src_len - off);
		if (n <= 0) {
			ksft_print_msg("cc1 %d: write to its stdin: %s\n", (int)c->pid,
				       strerror(errno));
			ret = -1;
			break;
		}
		off += n;
	}
	close(c->in);
	while ((n = read(c->out, buf, sizeof(buf))) > 0) {
		r->hash = rothp_hash_update(r->hash, buf, n);
		r->len += n;
	}
	close(c->out);
	if (c->reaped) {
		r->status = c->early_status;
	} else if (waitpid(c->pid, &r->status, 0) != c->pid) {
		ksft_print_msg("waitpid %d: %s\n", (int)c->pid, strerror(errno));
		return -1;
	}
	r->secs = rothp_now() - c->start;
	if (!WIFEXITED(r->status) || WEXITSTATUS(r->status)) {
		if (WIFSIGNALED(r->status))
			ksft_print_msg("cc1 killed by signal %d\n", WTERMSIG(r->status));
		else
			ksft_print_msg("cc1 exit status %d\n", WEXITSTATUS(r->status));
		rothp_cc1_print_errors(ERR_PATH);
	}
	return ret;
}

static int cc1_run(struct cc1_proc *c, struct cc1_result *r)
{
	if (cc1_start(c))
		return -1;
	return cc1_finish(c, r);
}

static bool cc1_ok(const struct cc1_result *r)
{
	return WIFEXITED(r->status) && !WEXITSTATUS(r->status) && r->len > 0;
}

/* Did c start with every eligible block of its text PMD-mapped? Said as who. */
static bool first_all_pmd(const struct cc1_proc *c, const char *who)
{
	ksft_print_msg("%s: cc1 %d at its first system call: FilePmdMapped %ld kB of %ld eligible blocks\n",
		       who, (int)c->pid, c->first_pmd >= 0 ? c->first_pmd / 1024 : -1, c->eligible);
	return c->eligible > 0 && c->first_pmd == c->eligible * (long)ROTHP_PMD_SIZE;
}

/* Is r the reference's output? Said as who when not. */
static bool same_output(const struct cc1_result *r, const struct cc1_result *ref, const char *who)
{
	if (cc1_ok(r) && r->hash == ref->hash && r->len == ref->len)
		return true;
	ksft_print_msg("%s: %zu bytes, hash %llx: not the reference output\n", who, r->len,
		       (unsigned long long)r->hash);
	return false;
}

/*
 * The whole 2 MiB blocks of a copy of textprog, dropped from the page
 * cache and, if small, read back in small folios, mapped under THP
 * "always" with prot in this process: how much of it is PMD-mapped and
 * cached when mmap() has returned. 0, or -1 (said).
 */
static int map_copy(const char *copy, bool small, int prot, long *pmd_blocks, long *resident,
		    long *nblk)
{
	char why[PATH_MAX + 64];
	struct stat st;
	size_t len;
	char *p;
	int fd;

	if (rothp_fresh_cache(small ? copy : NULL, why, sizeof(why))) {
		ksft_print_msg("%s\n", why);
		return -1;
	}
	fd = open(copy, O_RDONLY);
	if (fd < 0 || fstat(fd, &st)) {
		ksft_print_msg("%s: %s\n", copy, strerror(errno));
		if (fd >= 0)
			close(fd);
		return -1;
	}
	*nblk = st.st_size / ROTHP_PMD_SIZE;
	len = *nblk * ROTHP_PMD_SIZE;
	p = rothp_map_aligned(fd, len, 0, 0, prot);
	if (p == MAP_FAILED) {
		ksft_print_msg("mmap %s: %s\n", copy, strerror(errno));
		close(fd);
		return -1;
	}
	*pmd_blocks = rothp_file_pmd_mapped(getpid(), (unsigned long)p);
	if (*pmd_blocks > 0)
		*pmd_blocks /= (long)ROTHP_PMD_SIZE;
	rothp_cache_huge(copy, 0, *nblk, resident);
	munmap(p, len);
	close(fd);
	return 0;
}

static const char *const always_results[] = {
	"cc1 has 2 MiB-congruent text with eligible 2 MiB blocks",
	"reference run with THP never exits 0 with assembly",
	"prompt_collapse=0, THP always: cc1 starts with none of its text PMD-mapped",
	"THP always, cold page cache: each cc1 run starts with every eligible block PMD-mapped",
	"every cc1 run exits 0 with the reference assembly",
	"THP always: mmap(PROT_READ | PROT_EXEC) of a file cached small returns it PMD-mapped",
	"THP always: mmap(PROT_READ | PROT_EXEC) of a file not in the page cache returns it PMD-mapped",
	"THP always: mmap(PROT_READ) of a file not in the page cache reads nothing in",
};

static const struct rothp_case always = ROTHP_CASE(NULL, always_results);

int main(int argc, char **argv)
{
	struct cc1_result ref, r;
	struct cc1_proc c;
	struct rothp_elf elf;
	char prog[PATH_MAX], copy[PATH_MAX], who[32];
	const char *dir, *skip;
	long nblk = 0, pmd = -1, resident = -1, first_nr;
	int runs = 0, bad = 0, i, ret;
	bool blocks_ok, ref_ok, off_ok = false, all_ok = true;

	dir = rothp_test_init(argc, argv, prog, sizeof(prog));
	ksft_set_plan(rothp_cases_plan(&always, 1));
	if (snprintf(cc1, sizeof(cc1), "%s/gcc/cc1", dir) >= (int)sizeof(cc1) ||
	    snprintf(libdir, sizeof(libdir), "%s/gcc/lib", dir) >= (int)sizeof(libdir))
		ksft_exit_fail_msg("path too long: %s\n", dir);
	snprintf(ld_path, sizeof(ld_path), "LD_LIBRARY_PATH=%s", libdir);
	if (access(cc1, X_OK) || access(libdir, R_OK))
		ksft_exit_fail_msg("%s or %s: %s (image.sh puts gcc's cc1 and its libraries there)\n",
				   cc1, libdir, strerror(errno));
	skip = rothp_prompt_skip();
	ksft_print_msg("%s\n", skip ? skip : "kernel has prompt_collapse");

	/* 1. Where cc1's eligible blocks are. */
	if (rothp_elf_read(cc1, &elf))
		ksft_exit_fail_msg("%s: not a 64-bit ELF with text: %s\n", cc1, strerror(errno));
	first_nr = rothp_elf_text_blocks(&elf);
	ksft_print_msg("cc1 text: vaddr %#lx offset %#lx size %#lx, %ld whole 2 MiB blocks from offset %#llx\n",
		       elf.text_vaddr, elf.text_offset, elf.text_filesz, first_nr,
		       (unsigned long long)rothp_elf_text_block_offset(&elf));
	blocks_ok = rothp_elf_text_congruent(&elf) && first_nr > 0 && first_nr <= MAX_BLOCKS;
	rothp_report(&always, 0, NULL, blocks_ok);
	if (!blocks_ok)
		ksft_exit_fail_msg("nothing to measure in %s\n", cc1);
	make_source();
	ksft_print_msg("source: %d functions, %zu bytes\n", NR_FUNCS, src_len);

	/* 2. The reference: THP "never", so every page is a small folio. */
	if (rothp_thp_save())
		ksft_exit_fail_msg("cannot save the THP settings\n");
	if (!skip && rothp_prompt_save(NULL))
		ksft_exit_fail_msg("cannot read %s\n", ROTHP_PROMPT_KNOB);
	if (rothp_thp_set_str("enabled", "never") || rothp_drop_caches())
		ksft_exit_fail_msg("cannot set THP never and drop caches\n");
	if (cc1_run(&c, &ref))
		ksft_exit_fail_msg("cannot run %s\n", cc1);
	ksft_print_msg("reference (THP never): %.2f s, %zu bytes of assembly, hash %llx\n",
		       ref.secs, ref.len, (unsigned long long)ref.hash);
	ref_ok = cc1_ok(&ref);
	rothp_report(&always, 1, NULL, ref_ok);
	if (!ref_ok)
		ksft_exit_fail_msg("cc1 does not run here: nothing to compare with\n");

	/* 3. THP "always" without hints: 6.12's start, nothing huge yet. */
	if (rothp_thp_set_str("enabled", "always") || rothp_thp_khugepaged_defaults())
		ksft_exit_fail_msg("cannot set THP always with default khugepaged tunables\n");
	if (!skip) {
		if (rothp_prompt_set(0) || rothp_drop_caches())
			ksft_exit_fail_msg("cannot set %s=0 and drop caches\n", ROTHP_PROMPT_KNOB);
		if (cc1_run(&c, &r))
			ksft_exit_fail_msg("cannot run %s\n", cc1);
		runs++;
		bad += !same_output(&r, &ref, "prompt_collapse=0");
		ksft_print_msg("prompt_collapse=0: cc1 %d at its first system call: FilePmdMapped %ld kB, %ld eligible blocks\n",
			       (int)c.pid, c.first_pmd >= 0 ? c.first_pmd / 1024 : -1, c.eligible);
		off_ok = c.eligible > 0 && c.first_pmd == 0;
	}
	rothp_report(&always, 2, skip, off_ok);

	/* 4. With hints, from a cold page cache: run it again and again. */
	if ((!skip && rothp_prompt_set(1)) || rothp_drop_caches())
		ksft_exit_fail_msg("cannot set %s=1 and drop caches\n", ROTHP_PROMPT_KNOB);
	for (i = 0; i < RUNS; i++) {
		snprintf(who, sizeof(who), "run %d", i + 1);
		if (cc1_run(&c, &r))
			ksft_exit_fail_msg("cannot run %s\n", cc1);
		runs++;
		bad += !same_output(&r, &ref, who);
		all_ok &= first_all_pmd(&c, who);
		ksft_print_msg("%s: %.2f s\n", who, r.secs);
	}
	rothp_report(&always, 3, skip, all_ok);
	ksft_print_msg("%d runs, %d with other output than the reference\n", runs, bad);
	rothp_report(&always, 4, NULL, !bad);

	/* 5. The hint at mmap(): an executable mapping, then a read-only one. */
	rothp_scratch_copy_checked(copy, prog, dir, COPY_NAME);
	ret = map_copy(copy, true, PROT_READ | PROT_EXEC, &pmd, &resident, &nblk);
	ksft_print_msg("mmap r-x: %ld of %ld blocks PMD-mapped when it returned, %ld pages cached\n",
		       pmd, nblk, resident);
	rothp_report(&always, 5, skip, !ret && nblk > 0 && pmd == nblk);
	/* Text the loader maps is read in whole, as at exec. */
	ret = map_copy(copy, false, PROT_READ | PROT_EXEC, &pmd, &resident, &nblk);
	ksft_print_msg("mmap r-x, not cached: %ld of %ld blocks PMD-mapped when it returned, %ld pages cached\n",
		       pmd, nblk, resident);
	rothp_report(&always, 6, skip, !ret && nblk > 0 && pmd == nblk);
	ret = map_copy(copy, false, PROT_READ, &pmd, &resident, &nblk);
	ksft_print_msg("mmap r--, not cached: %ld of %ld blocks PMD-mapped when it returned, %ld pages cached\n",
		       pmd, nblk, resident);
	rothp_report(&always, 7, NULL, !ret && pmd == 0 && resident == 0);
	rothp_scratch_remove(copy);

	rothp_thp_restore();
	free(src);
	ksft_finished();
}
