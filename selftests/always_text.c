// SPDX-License-Identifier: GPL-2.0
/*
 * always_text <dir>: with THP "always", a real program run again and again,
 * each run short-lived, gets its text into 2 MiB page cache folios within
 * seconds, and each new process of it maps them with PMDs. The program is
 * gcc's cc1 (<dir>/gcc/cc1, its libraries in <dir>/gcc/lib, put there by
 * image.sh): ~20 MiB of text, 2 MiB-congruent, with whole 2 MiB blocks.
 *
 * cc1 compiles a generated C file, read from a pipe, to assembly on
 * another pipe, in a new process each run, with khugepaged's default
 * tunables. After each run a probe counts the eligible blocks of cc1's text
 * that are cached (touched by the runs) and those that are one PMD-sized
 * folio (rothp_cache_blocks(): mincore(), pagemap and kpageflags through a
 * mapping khugepaged cannot use, so looking changes nothing).
 *
 * Checks: every run exits 0 with the assembly of a reference run made with
 * THP "never"; on the patched kernel, at least HUGE_PERCENT% of the touched
 * blocks are huge within BOUND_S seconds, a new cc1 process maps its text
 * with PMDs, and every prompt collapse request is accounted for. The runs
 * start from a cold page cache, so the first one reads cc1 from the disk,
 * which under TCG alone takes seconds: the bound counts from its end (its
 * start is printed too). Collapse may start during it, so that is generous
 * by at most one run's time, which is printed. Baseline
 * 6.12, which has no prompt collapse (khugepaged reaches a short-lived
 * process, if at all, in its periodic scan), skips those, printing what it
 * measured.
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
#include <sys/stat.h>
#include <sys/wait.h>

#include "kselftest.h"
#include "rothp_util.h"

#define NR_FUNCS	6	/* functions in the generated source */
#define HUGE_PERCENT	95
#define BOUND_S		10	/* seconds after the first run: see below */
#define LIMIT_S		30	/* runs stop then, to say how long it took */
#define POST_RUNS	2	/* runs made after the text became huge */
#define MAX_BLOCKS	64
#define ALIVE_TIMEOUT_MS	(60 * 1000)
#define SETTLE_TIMEOUT_MS	(60 * 1000)
#define ERR_PATH	"/tmp/always_text.err"

static char cc1[PATH_MAX], libdir[PATH_MAX], ld_path[PATH_MAX + 32];
static char *src;
static size_t src_len;

/* A cc1 process compiling from its stdin to its stdout. */
struct cc1_proc {
	pid_t pid;
	int in;			/* its stdin */
	int out;		/* its stdout */
	double start;
};

/* What one run gave. */
struct cc1_result {
	int status;		/* from waitpid() */
	size_t len;		/* bytes of assembly */
	uint64_t hash;
	double secs;
};

/*
 * NR_FUNCS functions with loops, a switch, structs and floating point, and
 * one that calls them all: enough for -O2 to run its inliner, loop and
 * vector passes, small enough for a run to take about a second under TCG.
 * No #include: the guest has no headers.
 */
static void make_source(void)
{
	FILE *fp = open_memstream(&src, &src_len);
	int i;

	if (!fp)
		ksft_exit_fail_msg("open_memstream: %s\n", strerror(errno));
	for (i = 0; i < NR_FUNCS; i++) {
		fprintf(fp, "struct s%d { int k[8]; long v; double w; };\n", i);
		fprintf(fp, "static long f%d(const int *a, int n, struct s%d *s, long seed)\n{\n",
			i, i);
		fprintf(fp, "\tlong acc = seed + %d;\n\tint i, j;\n\n", i * 7 + 3);
		fprintf(fp, "\tfor (i = 0; i < n; i++) {\n");
		fprintf(fp, "\t\tacc += (a[i] * %d) ^ (acc >> %d);\n", i + 13, i % 13 + 1);
		fprintf(fp, "\t\tfor (j = 0; j < 8; j++)\n");
		fprintf(fp, "\t\t\ts->k[j] += (a[(i + j) %% n] * %d) >> (j & 3);\n\t}\n",
			i % 5 + 3);
		fprintf(fp, "\tswitch (acc & 7) {\n");
		fprintf(fp, "\tcase 0: acc += %d; break;\n", i * 3);
		fprintf(fp, "\tcase 1: acc ^= %d; break;\n", i * 5);
		fprintf(fp, "\tcase 2: acc -= s->k[%d]; break;\n", i % 8);
		fprintf(fp, "\tcase 3: acc *= %d; break;\n", i % 9 + 2);
		fprintf(fp, "\tdefault: acc += s->v; break;\n\t}\n");
		fprintf(fp, "\ts->v = acc;\n");
		fprintf(fp, "\ts->w = s->w * %d.5 + (double)acc / (n + %d);\n", i % 7, i + 1);
		fprintf(fp, "\treturn acc + (long)s->w;\n}\n\n");
	}
	fprintf(fp, "long run_all(const int *a, int n)\n{\n\tlong acc = 0;\n\n");
	for (i = 0; i < NR_FUNCS; i++)
		fprintf(fp, "\t{ static struct s%d s; acc = f%d(a, n, &s, acc); }\n", i, i);
	fprintf(fp, "\treturn acc;\n}\n");
	if (fclose(fp))
		ksft_exit_fail_msg("generating the source: %s\n", strerror(errno));
}

/*
 * Start "cc1 -quiet -nostdinc -O2 -o - -" with pipes on its stdin and
 * stdout, its stderr to ERR_PATH. -nostdinc: the guest has no headers, and
 * without it cc1 fails looking for stdc-predef.h. The kernel loads cc1 (its
 * PT_INTERP is the loader the initramfs has); the libraries come from
 * <dir>/gcc/lib.
 */
static int cc1_start(struct cc1_proc *c)
{
	char *argv[] = { cc1, "-quiet", "-nostdinc", "-O2", "-o", "-", "-", NULL };
	char *envp[] = { ld_path, NULL };
	int in[2], out[2], err;

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
	return 0;
}

/* Print what cc1 said on stderr, a few lines. */
static void print_cc1_errors(void)
{
	char line[256];
	FILE *fp = fopen(ERR_PATH, "r");
	int n = 0;

	while (fp && n++ < 8 && fgets(line, sizeof(line), fp))
		ksft_print_msg("cc1: %s", line);
	if (fp)
		fclose(fp);
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
	if (waitpid(c->pid, &r->status, 0) != c->pid) {
		ksft_print_msg("waitpid %d: %s\n", (int)c->pid, strerror(errno));
		return -1;
	}
	r->secs = rothp_now() - c->start;
	if (!WIFEXITED(r->status) || WEXITSTATUS(r->status)) {
		if (WIFSIGNALED(r->status))
			ksft_print_msg("cc1 killed by signal %d\n", WTERMSIG(r->status));
		else
			ksft_print_msg("cc1 exit status %d\n", WEXITSTATUS(r->status));
		print_cc1_errors();
	}
	return ret;
}

static int cc1_run(struct cc1_result *r)
{
	struct cc1_proc c;

	if (cc1_start(&c))
		return -1;
	return cc1_finish(&c, r);
}

static bool cc1_ok(const struct cc1_result *r)
{
	return WIFEXITED(r->status) && !WEXITSTATUS(r->status) && r->len > 0;
}

/* The eligible blocks of cc1's text: cached (touched) ones and huge ones. */
struct probe {
	int fd;
	off_t first;		/* file offset of the first eligible block */
	long nr;		/* eligible blocks */
	int touched, huge;
	struct rothp_cache_block blk[MAX_BLOCKS];
};

static void probe(struct probe *pb)
{
	long i;

	if (rothp_cache_blocks(pb->fd, pb->first, pb->nr, pb->blk))
		ksft_exit_fail_msg("probing the page cache of %s: %s\n", cc1, strerror(errno));
	pb->touched = 0;
	pb->huge = 0;
	for (i = 0; i < pb->nr; i++) {
		pb->touched += pb->blk[i].resident > 0;
		pb->huge += pb->blk[i].huge;
	}
}

static void print_blocks(const struct probe *pb, const char *who)
{
	char line[MAX_BLOCKS * 12 + 1];
	size_t off = 0;
	long i;

	for (i = 0; i < pb->nr; i++)
		off += snprintf(line + off, sizeof(line) - off, " %d%s", pb->blk[i].resident,
				pb->blk[i].huge ? "H" : "");
	ksft_print_msg("%s: cached pages per block (H: one 2 MiB folio):%s\n", who, line);
}

static bool enough(const struct probe *pb)
{
	return pb->touched > 0 && pb->huge * 100 >= HUGE_PERCENT * pb->touched;
}

/* The cc1 kept alive on a pipe: its text VMA and how much of it is PMD-mapped. */
struct alive {
	pid_t pid;
	unsigned long addr;	/* in its text */
	long pmd;		/* FilePmdMapped, bytes; -1 while not cc1 yet */
	bool waiting;		/* blocked reading its stdin */
};

/* Blocked in read(0, ...)? /proc/PID/syscall starts with "0 0x0 " then. */
static bool reading_stdin(pid_t pid)
{
	char path[64], buf[128];
	ssize_t n;
	int fd;

	snprintf(path, sizeof(path), "/proc/%d/syscall", (int)pid);
	fd = open(path, O_RDONLY);
	if (fd < 0)
		return false;
	n = read(fd, buf, sizeof(buf) - 1);
	close(fd);
	if (n <= 0)
		return false;
	buf[n] = '\0';
	return !strncmp(buf, "0 0x0 ", 6);
}

static bool alive_settled(void *arg)
{
	struct alive *a = arg;
	struct rothp_vma vma;

	a->pmd = -1;
	if (rothp_find_vma(a->pid, a->addr, &vma) || strcmp(vma.path, cc1))
		return false;	/* not exec()ed yet */
	a->waiting = reading_stdin(a->pid);
	a->pmd = rothp_file_pmd_mapped(a->pid, a->addr);
	return a->waiting;
}

static const char *const always_results[] = {
	"cc1 has 2 MiB-congruent text with eligible 2 MiB blocks",
	"reference run with THP never exits 0 with assembly",
	"every cc1 run exits 0 with the reference assembly",
	"%d%% of the blocks cc1 touched are huge within %d s of the first run",
	"a new cc1 process maps its text with PMDs (FilePmdMapped > 0)",
	"the new cc1 process exits 0 with the reference assembly",
	"prompt collapse requests were queued, and all served, failed or dropped",
};

static const struct rothp_case always = ROTHP_CASE(NULL, always_results);

int main(int argc, char **argv)
{
	struct rothp_prompt_stat before, after;
	struct cc1_result ref, r;
	struct cc1_proc c;
	struct rothp_elf elf;
	struct probe pb = { .fd = -1 };
	struct alive al;
	char prog[PATH_MAX], why[128];
	const char *dir, *skip;
	int runs = 0, bad = 0, post = -1, settle = 0;
	double t0, t, first_end = 0, met = -1, run_secs = 0;
	bool blocks_ok, ref_ok, stat_ok, balanced = false;

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
	pb.nr = rothp_elf_text_blocks(&elf);
	pb.first = rothp_elf_text_block_offset(&elf);
	ksft_print_msg("cc1 text: vaddr %#lx offset %#lx size %#lx, %ld whole 2 MiB blocks from offset %#llx\n",
		       elf.text_vaddr, elf.text_offset, elf.text_filesz, pb.nr,
		       (unsigned long long)pb.first);
	blocks_ok = rothp_elf_text_congruent(&elf) && pb.nr > 0 && pb.nr <= MAX_BLOCKS;
	rothp_report(&always, 0, NULL, blocks_ok);
	if (!blocks_ok)
		ksft_exit_fail_msg("nothing to measure in %s\n", cc1);
	pb.fd = open(cc1, O_RDONLY);
	if (pb.fd < 0)
		ksft_exit_fail_msg("%s: %s\n", cc1, strerror(errno));
	make_source();
	ksft_print_msg("source: %d functions, %zu bytes\n", NR_FUNCS, src_len);

	/* 2. The reference: THP "never", so every page is a small folio. */
	if (rothp_thp_save())
		ksft_exit_fail_msg("cannot save the THP settings\n");
	if (!skip) {
		if (rothp_prompt_save(NULL))
			ksft_exit_fail_msg("cannot read %s\n", ROTHP_PROMPT_KNOB);
		if (rothp_prompt_set(0))
			ksft_exit_fail_msg("cannot set %s\n", ROTHP_PROMPT_KNOB);
	}
	if (rothp_thp_set_str("enabled", "never") || rothp_drop_caches())
		ksft_exit_fail_msg("cannot set THP never and drop caches\n");
	if (cc1_run(&ref))
		ksft_exit_fail_msg("cannot run %s\n", cc1);
	probe(&pb);
	ksft_print_msg("reference (THP never): %.2f s, %zu bytes of assembly, hash %llx; %d blocks touched, %d huge\n",
		       ref.secs, ref.len, (unsigned long long)ref.hash, pb.touched, pb.huge);
	ref_ok = cc1_ok(&ref);
	rothp_report(&always, 1, NULL, ref_ok);
	if (!ref_ok)
		ksft_exit_fail_msg("cc1 does not run here: nothing to compare with\n");

	/* 3. THP "always", default khugepaged, cold cache: run it again and again. */
	if (rothp_thp_set_str("enabled", "always") || rothp_thp_khugepaged_defaults() ||
	    (!skip && rothp_prompt_set(1)) || rothp_drop_caches())
		ksft_exit_fail_msg("cannot set THP always with default khugepaged tunables\n");
	stat_ok = !skip && !rothp_prompt_stat_read(&before);
	t0 = rothp_now();
	for (;;) {
		if (cc1_run(&r))
			ksft_exit_fail_msg("cannot run %s\n", cc1);
		if (!runs++)
			first_end = rothp_now() - t0;
		run_secs += r.secs;
		if (!cc1_ok(&r) || r.hash != ref.hash || r.len != ref.len) {
			ksft_print_msg("run %d: %zu bytes, hash %llx: not the reference output\n",
				       runs, r.len, (unsigned long long)r.hash);
			bad++;
		}
		probe(&pb);
		t = rothp_now() - t0;
		ksft_print_msg("run %d: %.2f s; at %.1f s %d of %ld eligible blocks touched, %d huge\n",
			       runs, r.secs, t, pb.touched, pb.nr, pb.huge);
		if (met < 0 && enough(&pb)) {
			met = t;
			post = 0;
			print_blocks(&pb, "met");
		} else if (post >= 0 && ++post >= POST_RUNS) {
			break;
		}
		if (met < 0 && t - first_end >= LIMIT_S)
			break;
	}
	print_blocks(&pb, "last");
	ksft_print_msg("%d runs in %.1f s, %.2f s each on average\n", runs, rothp_now() - t0,
		       run_secs / runs);
	if (met >= 0)
		ksft_print_msg("%d%% of the touched blocks huge %.1f s after the first run started, %.1f s after it ended (bound %d s)\n",
			       HUGE_PERCENT, met, met - first_end, BOUND_S);
	else
		ksft_print_msg("%.1f s after the first run ended (it took %.1f s) only %d of %d touched blocks huge (want %d%%)\n",
			       rothp_now() - t0 - first_end, first_end, pb.huge, pb.touched,
			       HUGE_PERCENT);
	rothp_report(&always, 2, NULL, !bad);
	rothp_report(&always, 3, skip, met >= 0 && met - first_end <= BOUND_S, HUGE_PERCENT,
		     BOUND_S);

	/*
	 * 4. A new cc1, kept waiting for its input: PMD-mapped text. Its smaps
	 * is read once it waits, its start-up done.
	 */
	if (cc1_start(&c))
		ksft_exit_fail_msg("cannot run %s\n", cc1);
	al = (struct alive){ .pid = c.pid, .addr = elf.text_vaddr, .pmd = -1 };
	rothp_wait_until(alive_settled, &al, ALIVE_TIMEOUT_MS, 50);
	ksft_print_msg("new cc1 %d after %.1f s: FilePmdMapped %ld kB of its text, %s\n",
		       (int)c.pid, rothp_now() - c.start, al.pmd > 0 ? al.pmd / 1024 : al.pmd,
		       al.waiting ? "waiting for its input" : "timed out waiting for it to read");
	if (cc1_finish(&c, &r))
		ksft_exit_fail_msg("cannot finish %s\n", cc1);
	rothp_report(&always, 4, skip, al.pmd > 0);
	rothp_report(&always, 5, NULL, cc1_ok(&r) && r.hash == ref.hash && r.len == ref.len);

	/* 5. Every request queued was served, failed or dropped. */
	if (stat_ok) {
		settle = rothp_prompt_settle(&before, &after, SETTLE_TIMEOUT_MS, "prompt collapse");
		balanced = !settle && after.queued > before.queued;
	}
	snprintf(why, sizeof(why), "%s", skip ? skip : "cannot read the prompt collapse counters");
	rothp_report(&always, 6, skip || !stat_ok ? why : NULL, balanced);

	close(pb.fd);
	free(src);
	ksft_finished();
}
