// SPDX-License-Identifier: GPL-2.0
/*
 * bench_prompt <dir>: prompt collapse, the series' collapse of executable
 * file text by the task that asks for it (madvise(MADV_HUGEPAGE), or an
 * mmap() or execve() under THP "always"), before it returns to user space:
 * how soon text is PMD-mapped, on a quiet and on a busy machine, and what
 * that costs where there is nothing to collapse.
 *
 * Text after madvise(MADV_HUGEPAGE). THP "enabled" at madvise, khugepaged's
 * default tunables (4096 PTEs a pass, 10 s sleeps). A program of <dir>
 * starts with its text in small folios, faulted in, none of it PMD-mapped,
 * and is told to MADV_HUGEPAGE its text; its stubs are then run every
 * POLL_MS (on 6.12 a block khugepaged collapsed is PMD-mapped at the next
 * fault) until at least PERCENT% of the eligible 2 MiB blocks of its text
 * are PMD-mapped (FilePmdMapped). A time not reached is reported as its cap.
 *
 *   prompt_collapse_s        textprog (20 MiB of text, 2 MiB-congruent), a
 *                            neighbour process having registered a
 *                            populated 256 MiB heap of 4 KiB pages with
 *                            khugepaged first, as on a machine where
 *                            khugepaged has work (6.12 scans the heap's
 *                            128 PMDs first, 8 a pass); cap CAP_S
 *   prompt_collapse_quiet_s  the median of QUIET_RUNS such times without
 *                            the neighbour, khugepaged idle beforehand
 *   pie_prompt_collapse_s    the same of pieprog, a dynamically linked PIE
 *                            as gcc links it by default (6 MiB of text,
 *                            4 KiB p_align), quiet, median of PIE_RUNS; a
 *                            run whose load bias leaves no eligible block
 *                            (6.12: 511 runs in 512) counts as CAP_S
 *   prompt_collapse_flood_s  textprog while khugepaged is flooded: the
 *                            neighbour's heap, and a flooder process
 *                            calling madvise() without end on a 1 GiB
 *                            sparse read-only file mapping (MADV_HUGEPAGE,
 *                            then MADV_NOHUGEPAGE, so that each
 *                            MADV_HUGEPAGE sets VM_HUGEPAGE anew); cap
 *                            FLOOD_CAP_S
 *
 * What it costs.
 *
 *   madvise_call_us   one madvise(MADV_HUGEPAGE) of textprog's text segment,
 *                     mapped r-x in a process of its own and PMD-mapped
 *                     already (MADV_COLLAPSE on both kernels): the steady
 *                     state of a program that calls it again. Each of
 *                     MADV_PROCS processes times BATCHES batches of
 *                     PER_BATCH calls (so that a coarse guest clock still
 *                     measures it); the median over the processes of
 *                     their median batch, in microseconds. Several
 *                     processes: with one, the figure moved by up to
 *                     1.7x between boots of the same kernels under TCG,
 *                     and each process brings its own addresses and
 *                     kernel stack, which a median does not hang on.
 *   khugepaged_cpu_s  khugepaged's CPU time, utime + stime of its thread
 *                     in /proc/PID/stat, over a fixed window of the
 *                     flood: CPU_ROUNDS rounds of CPU_ROUND_S s, in each
 *                     of which a new neighbour heap is registered and
 *                     khugepaged, scanning every 100 ms, collapses all of
 *                     it, the same work on both kernels. The stat fields
 *                     count clock ticks (USER_HZ, 100 a second), so each
 *                     reading is short of the truth by less than a tick;
 *                     the window holds the collapse of CPU_ROUNDS heaps
 *                     (768 MiB copied), for one tick to be a small share
 *                     of the total, which is printed.
 *   exec_storm_s      THP "always": STORM_LOOPS loops, each pinned to a CPU,
 *                     of STORM_EXECS execs each of pieprog_small, a small
 *                     dynamically linked PIE (256 KiB of stubs, no whole
 *                     2 MiB block of text; libc's has none either),
 *                     waiting for each; the wall time of all of them, the
 *                     median of STORM_RUNS. What the series adds to exec
 *                     and mmap() where there is nothing to collapse.
 *
 * A real program under THP "always": gcc's cc1 (<dir>/gcc/cc1, ~20 MiB of
 * 2 MiB-congruent text, 8 eligible blocks, its libraries in <dir>/gcc/lib,
 * put there by image.sh) compiling a generated CC1_FUNCS-function C file,
 * one process after the other, its page cache read afresh in small folios
 * first; its text polled every CC1_POLL_MS:
 *
 *   always_text_mib_3s  the most of cc1's text PMD-mapped (FilePmdMapped,
 *                       MiB) within ALWAYS_WINDOW_S s of its first exec,
 *                       the machine quiet
 *   always_busy_s       the seconds from its first exec until PERCENT% of
 *                       its eligible blocks are PMD-mapped, while every
 *                       CPU runs a nice-0 spinner pinned to it; cap
 *                       ALWAYS_CAP_S. On 6.12 only khugepaged, at nice
 *                       19, collapses text.
 *
 * Each change of what cc1 has PMD-mapped is noted, and so are the trace
 * events that say who collapsed what and why a block was left
 * (mm_khugepaged_prompt_collapse, the series' only, and
 * mm_khugepaged_collapse_file).
 *
 * Prints "BENCH <metric> <value> <unit>" lines and "# ..." notes. Exits 1,
 * printing "# error: ..." and no further BENCH line, when a run could not
 * be made.
 */
#define _GNU_SOURCE
#include <dirent.h>
#include <errno.h>
#include <fcntl.h>
#include <poll.h>
#include <signal.h>
#include <spawn.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>
#include <sys/mman.h>
#include <sys/prctl.h>
#include <sys/resource.h>
#include <sys/utsname.h>
#include <sys/wait.h>

#include "rothp_util.h"

#define PERCENT		95
#define NEIGHBOUR_MIB	256
#define CAP_S		120
#define POLL_MS		20
#define QUIET_RUNS	3
#define PIE_RUNS	3
#define FLOOD_CAP_S	60
#define FLOOD_FILE_MIB	1024UL
#define QUIESCE_MS	1000
#define CHILD_READY_MS	(60 * 1000)

#define WARMUP		20
#define BATCHES		15
#define PER_BATCH	20000
#define MADV_PROCS	5

#define CPU_ROUNDS	3
#define CPU_ROUND_S	25

#define STORM_LOOPS	2
#define STORM_EXECS	1000
#define STORM_RUNS	3
#define STORM_WARMUP	20

#define CC1_FUNCS	400	/* for cc1 -O2 to run its passes for tens of s under TCG */
#define CC1_POLL_MS	50
#define ALWAYS_WINDOW_S	3
#define ALWAYS_CAP_S	60
#define MAX_SPINNERS	64
#define TRACE_LINES	40

#define MIB		(1UL << 20)
#define CC1_SRC		"/tmp/bench_prompt_cc1.c"
#define CC1_ERR		"/tmp/bench_prompt_cc1.err"
#define SPARSE_NAME	"bench_prompt.sparse"

static const char *dir;
static char prog[PATH_MAX], pie[PATH_MAX], small[PATH_MAX], sparse[PATH_MAX];
static char cc1[PATH_MAX], cc1_env[PATH_MAX + 32];
static bool has_prompt;

/* --- Common ---------------------------------------------------------- */

/*
 * Let khugepaged free the slots of the mms that exited, in the pass a write
 * to scan_sleep_millisecs starts: it is idle afterwards. (There is no
 * queue to wait for: the series collapses in the task that asks.)
 */
static void quiesce(void)
{
	if (rothp_khugepaged_kick())
		rothp_bench_fail("cannot write khugepaged/scan_sleep_millisecs");
	usleep(QUIESCE_MS * 1000);
}

/* A child dies with the benchmark, even one killed by the runner's timeout. */
static void die_with_parent(pid_t parent)
{
	if (prctl(PR_SET_PDEATHSIG, SIGKILL) || getppid() != parent)
		_exit(126);
}

/* Wait up to CHILD_READY_MS for a byte from a child on fd: 0, or -1. */
static int child_ready(int fd)
{
	struct pollfd pfd = { .fd = fd, .events = POLLIN };
	int ret;
	char c;

	do {
		ret = poll(&pfd, 1, CHILD_READY_MS);
	} while (ret < 0 && errno == EINTR);
	return ret > 0 && read(fd, &c, 1) == 1 ? 0 : -1;
}

static void kill_and_reap(pid_t *pid)
{
	if (*pid > 0) {
		kill(*pid, SIGKILL);
		waitpid(*pid, NULL, 0);
	}
	*pid = -1;
}

/* --- The flooder ------------------------------------------------------ */

/*
 * A process that calls madvise() on a 1 GiB mapping of a sparse file,
 * PROT_READ and 2 MiB-aligned, without end: MADV_HUGEPAGE, which registers
 * its mm with khugepaged and, on a design that queued the range for
 * khugepaged, would queue it, then MADV_NOHUGEPAGE, so that the next
 * MADV_HUGEPAGE sets VM_HUGEPAGE anew. The series does not hint a mapping
 * that is not executable: khugepaged's periodic scan is left with it, as
 * on 6.12. The heap khugepaged is busy with is the neighbour's, in a
 * process of its own: in this one, whose mmap_lock the loop holds for
 * write most of the time, khugepaged's trylock would skip it by chance.
 */
struct flooder {
	pid_t pid;
	long *calls;		/* madvise() calls made, shared with the child */
	double start;
};

static void flooder_child(int ready, long *calls)
{
	size_t len = FLOOD_FILE_MIB * MIB;
	char c = 'r', *p;
	int fd;

	fd = open(sparse, O_RDONLY);
	if (fd < 0)
		_exit(1);
	p = rothp_map_aligned(fd, len, 0, 0, PROT_READ);
	close(fd);
	if (p == MAP_FAILED)
		_exit(2);
	if (madvise(p, len, MADV_HUGEPAGE))
		_exit(3);
	if (write(ready, &c, 1) != 1)
		_exit(4);
	close(ready);
	for (;;) {
		if (madvise(p, len, MADV_NOHUGEPAGE) || madvise(p, len, MADV_HUGEPAGE))
			_exit(5);
		rothp_shared_add(calls, 2);
	}
}

/* The sparse file, made once and removed at exit. */
static void make_sparse(void)
{
	int fd;

	if (sparse[0])
		return;
	if (snprintf(sparse, sizeof(sparse), "%s/" SPARSE_NAME, dir) >= (int)sizeof(sparse) ||
	    rothp_scratch_add(sparse))
		rothp_bench_fail("cannot register %s/" SPARSE_NAME, dir);
	fd = open(sparse, O_WRONLY | O_CREAT | O_TRUNC, 0644);
	if (fd < 0 || ftruncate(fd, FLOOD_FILE_MIB * MIB))
		rothp_bench_fail("making the sparse file %s: %s", sparse, strerror(errno));
	close(fd);	/* not open for write while it is mapped */
}

static void flooder_start(struct flooder *fl)
{
	pid_t parent = getpid();
	int ready[2];

	make_sparse();
	fl->calls = mmap(NULL, sizeof(*fl->calls), PROT_READ | PROT_WRITE,
			 MAP_SHARED | MAP_ANONYMOUS, -1, 0);
	if (fl->calls == MAP_FAILED || pipe2(ready, O_CLOEXEC))
		rothp_bench_fail("flooder: %s", strerror(errno));
	fl->pid = rothp_fork();
	if (fl->pid < 0)
		rothp_bench_fail("fork: %s", strerror(errno));
	if (!fl->pid) {
		die_with_parent(parent);
		close(ready[0]);
		flooder_child(ready[1], fl->calls);
	}
	close(ready[1]);
	if (child_ready(ready[0]))
		rothp_bench_fail("the flooder did not start");
	close(ready[0]);
	fl->start = rothp_now();
}

/* Stop it: the madvise() calls it made per second. */
static double flooder_stop(struct flooder *fl)
{
	double secs = rothp_now() - fl->start;
	long calls = rothp_shared_get(fl->calls);
	int status = 0;

	if (waitpid(fl->pid, &status, WNOHANG))
		rothp_bench_fail("the flooder stopped by itself (status %#x)", status);
	kill_and_reap(&fl->pid);
	munmap(fl->calls, sizeof(*fl->calls));
	return secs > 0 ? calls / secs : 0;
}

/* --- Text after madvise(MADV_HUGEPAGE) -------------------------------- */

struct scene {
	const char *what;
	const char *path;	/* textprog or pieprog */
	bool neighbour;		/* the busy neighbour first */
	bool flood;		/* ... and the flooder */
	bool may_lack_blocks;	/* a PIE: its load bias may leave no eligible block */
	long cap_s;
};

/* One run: seconds from MADV_HUGEPAGE to PERCENT% PMD-mapped, or the cap. */
static double run_once(const struct scene *sc)
{
	struct rothp_neighbour nb = { .pid = -1, .ctl = -1 };
	struct flooder fl = { .pid = -1 };
	struct rothp_huge_wait hw;
	struct textproc tp;
	char reply[128];
	long calls, pmd, eligible;
	double t0, secs = -1, rate;
	int rc = -1, err = 0;

	quiesce();
	if (sc->neighbour && rothp_neighbour_start(&nb, NEIGHBOUR_MIB))
		rothp_bench_fail("%s: cannot start a %d MiB neighbour", sc->what, NEIGHBOUR_MIB);
	if (sc->flood)
		flooder_start(&fl);
	rothp_bench_fresh_cache(sc->path, NULL);
	if (textproc_start(&tp, sc->path, "none"))
		rothp_bench_fail("%s: cannot start %s", sc->what, sc->path);
	if (textproc_run(&tp, &calls) != 1)
		rothp_bench_fail("%s: the stubs do not run", sc->what);
	pmd = rothp_file_pmd_mapped(tp.pid, tp.start);
	if (pmd)
		rothp_bench_fail("%s: FilePmdMapped %ld kB before madvise", sc->what, pmd / 1024);
	eligible = textproc_eligible(&tp);
	if (eligible < 0 || (!eligible && !sc->may_lack_blocks))
		rothp_bench_fail("%s: the text has no eligible block", sc->what);

	if (eligible) {
		t0 = rothp_now();
		if (textproc_cmd(&tp, "hugepage", reply, sizeof(reply)) ||
		    sscanf(reply, "hugepage %d %d", &rc, &err) != 2 || rc)
			rothp_bench_fail("%s: MADV_HUGEPAGE of the text: %s", sc->what,
					 rc ? strerror(err) : "no reply");
		secs = textproc_wait_huge(&tp, t0, PERCENT, sc->cap_s * 1000L, POLL_MS, &hw);
		if (hw.run_failed)
			rothp_bench_fail("%s: a run of the stubs failed", sc->what);
		printf("# %s: %ld of %ld blocks PMD-mapped after %.3f s, %d polls%s\n", sc->what,
		       hw.blocks, hw.eligible, secs >= 0 ? secs : (double)sc->cap_s, hw.polls,
		       secs >= 0 ? "" : " (cap)");
	} else {
		printf("# %s: text at %#lx, no eligible 2 MiB block: never PMD-mapped, counted as the cap\n",
		       sc->what, tp.start);
	}
	if (!textproc_sum_matches(&tp, sc->what))
		rothp_bench_fail("%s: the text in memory differs from the file", sc->what);
	if (textproc_stop(&tp))
		rothp_bench_fail("%s: %s did not exit cleanly", sc->what, sc->path);
	if (sc->flood) {
		rate = flooder_stop(&fl);
		printf("# %s: the flooder made %.0f madvise() calls a second\n", sc->what, rate);
	}
	rothp_neighbour_stop(&nb);
	return secs >= 0 ? secs : sc->cap_s;
}

/* The median of n runs of a scene, its runs numbered in their notes. */
static double median_of(const struct scene *sc, int n)
{
	struct scene one = *sc;
	double t[16];
	char what[64];
	int i;

	for (i = 0; i < n && i < 16; i++) {
		snprintf(what, sizeof(what), "%s run %d", sc->what, i + 1);
		one.what = what;
		t[i] = run_once(&one);
	}
	return rothp_median(t, i);
}

/* --- madvise_call_us --------------------------------------------------- */

/*
 * In a process of its own: map textprog's text segment r-x, as the loader
 * maps it, fault it in, MADV_HUGEPAGE it WARMUP times and MADV_COLLAPSE it
 * (the text PMD-mapped on both kernels), then time BATCHES batches of
 * PER_BATCH calls: the median batch, in microseconds per call.
 */
static double madvise_process(int n)
{
	double t[BATCHES], t0, sum = 0;
	long pmd0, pmd1;
	size_t len;
	int i, j, err;
	char *p;

	p = rothp_elf_map_text(prog, false, &len);
	if (p == MAP_FAILED)
		rothp_bench_fail("mapping the text of %s: %s", prog, strerror(errno));
	rothp_touch(p, len, ROTHP_PAGE_SIZE);
	for (i = 0; i < WARMUP; i++)
		if (madvise(p, len, MADV_HUGEPAGE))
			rothp_bench_fail("madvise(MADV_HUGEPAGE): %s", strerror(errno));
	if (rothp_madv_collapse(p, len, &err))
		printf("# madvise: process %d: MADV_COLLAPSE: %s\n", n, strerror(err));
	pmd0 = rothp_file_pmd_mapped(getpid(), (unsigned long)p);
	for (i = 0; i < BATCHES; i++) {
		t0 = rothp_now();
		for (j = 0; j < PER_BATCH; j++)
			if (madvise(p, len, MADV_HUGEPAGE))
				rothp_bench_fail("madvise(MADV_HUGEPAGE): %s", strerror(errno));
		t[i] = (rothp_now() - t0) * 1e6 / PER_BATCH;
		sum += t[i];
	}
	pmd1 = rothp_file_pmd_mapped(getpid(), (unsigned long)p);
	rothp_sort(t, BATCHES);
	printf("# madvise: process %d: %zu kB range, FilePmdMapped %ld kB before, %ld kB after; %d batches of %d calls: min %.2f us, mean %.2f us, max %.2f us\n",
	       n, len >> 10, pmd0 / 1024, pmd1 / 1024, BATCHES, PER_BATCH, t[0], sum / BATCHES,
	       t[BATCHES - 1]);
	munmap(p, len);
	return rothp_median(t, BATCHES);
}

static double madvise_us(void)
{
	double v[MADV_PROCS];
	int fd[2], i, status;
	pid_t pid;

	quiesce();
	rothp_bench_fresh_cache(prog, NULL);
	for (i = 0; i < MADV_PROCS; i++) {
		if (pipe2(fd, O_CLOEXEC))
			rothp_bench_fail("pipe: %s", strerror(errno));
		pid = rothp_fork();
		if (pid < 0)
			rothp_bench_fail("fork: %s", strerror(errno));
		if (!pid) {
			close(fd[0]);
			v[i] = madvise_process(i + 1);
			_exit(write(fd[1], &v[i], sizeof(v[i])) == sizeof(v[i]) ? 0 : 1);
		}
		close(fd[1]);
		if (read(fd[0], &v[i], sizeof(v[i])) != sizeof(v[i]) ||
		    waitpid(pid, &status, 0) != pid || !WIFEXITED(status) || WEXITSTATUS(status))
			rothp_bench_fail("madvise: process %d failed", i + 1);
		close(fd[0]);
	}
	rothp_sort(v, MADV_PROCS);
	printf("# madvise: the %d processes' medians from %.2f to %.2f us\n", MADV_PROCS, v[0],
	       v[MADV_PROCS - 1]);
	return rothp_median(v, MADV_PROCS);
}

/* --- khugepaged_cpu_s ------------------------------------------------- */

/* The pid of the khugepaged kernel thread. */
static pid_t khugepaged_pid(void)
{
	char path[64], comm[32], *end;
	struct dirent *e;
	pid_t pid = -1;
	long n;
	DIR *d;

	d = opendir("/proc");
	if (!d)
		rothp_bench_fail("/proc: %s", strerror(errno));
	while (pid < 0 && (e = readdir(d))) {
		n = strtol(e->d_name, &end, 10);
		if (n <= 0 || *end)
			continue;
		snprintf(path, sizeof(path), "/proc/%ld/comm", n);
		if (!rothp_read_line(path, comm, sizeof(comm)) && !strcmp(comm, "khugepaged"))
			pid = n;
	}
	closedir(d);
	if (pid < 0)
		rothp_bench_fail("no khugepaged thread in /proc");
	return pid;
}

/* utime + stime of a task, in clock ticks, from /proc/PID/stat. */
static long task_ticks(pid_t pid)
{
	unsigned long utime, stime;
	char path[64], buf[1024], *p;

	snprintf(path, sizeof(path), "/proc/%d/stat", (int)pid);
	if (rothp_read_line(path, buf, sizeof(buf)))
		rothp_bench_fail("%s: %s", path, strerror(errno));
	/*
	 * After "(comm)": state ppid pgrp session tty_nr tpgid flags minflt
	 * cminflt majflt cmajflt, then utime and stime.
	 */
	p = strrchr(buf, ')');
	if (!p || sscanf(p + 1, "%*s %*s %*s %*s %*s %*s %*s %*s %*s %*s %*s %lu %lu", &utime,
			 &stime) != 2)
		rothp_bench_fail("%s: cannot parse '%s'", path, buf);
	return utime + stime;
}

/*
 * The task's run time in ms at nanosecond precision, from the
 * se.sum_exec_runtime line of /proc/PID/sched, which only a kernel with
 * CONFIG_SCHED_DEBUG has: -1 without it. For the notes.
 */
static double task_runtime_ms(pid_t pid)
{
	char path[64], line[256];
	double ms = -1;
	FILE *fp;

	snprintf(path, sizeof(path), "/proc/%d/sched", (int)pid);
	fp = fopen(path, "r");
	if (!fp)
		return -1;
	while (fgets(line, sizeof(line), fp))
		if (!strncmp(line, "se.sum_exec_runtime", 19) && strchr(line, ':') &&
		    sscanf(strchr(line, ':') + 1, "%lf", &ms) == 1)
			break;
	fclose(fp);
	return ms;
}

/*
 * The seconds of CPU khugepaged spends in a window of CPU_ROUNDS rounds of
 * the flood, CPU_ROUND_S s each: in each, a neighbour populates its heap
 * and registers it, and khugepaged, scanning every 100 ms, collapses all of
 * it before the round ends (checked: else the window would not hold the
 * same work on both kernels). The flooder runs throughout.
 */
static double khugepaged_cpu(void)
{
	struct rothp_neighbour nb = { .pid = -1, .ctl = -1 };
	struct flooder fl = { .pid = -1 };
	long hz = sysconf(_SC_CLK_TCK), ticks0, ticks, huge_kb;
	double start, secs, ms0, ms1, rate;
	pid_t kh = khugepaged_pid();
	char path[64];
	int r;

	if (hz <= 0)
		rothp_bench_fail("sysconf(_SC_CLK_TCK): %ld", hz);
	if (rothp_thp_khugepaged_fast())
		rothp_bench_fail("cannot set khugepaged's tunables");
	flooder_start(&fl);
	quiesce();
	start = rothp_now();
	ticks0 = task_ticks(kh);
	ms0 = task_runtime_ms(kh);
	for (r = 1; r <= CPU_ROUNDS; r++) {
		if (rothp_neighbour_start(&nb, NEIGHBOUR_MIB))
			rothp_bench_fail("khugepaged: round %d: cannot start a %d MiB neighbour", r,
					 NEIGHBOUR_MIB);
		while (rothp_now() < start + r * CPU_ROUND_S)
			usleep(50 * 1000);
		snprintf(path, sizeof(path), "/proc/%d/smaps_rollup", (int)nb.pid);
		if (rothp_field_read(path, "AnonHugePages", ':', &huge_kb))
			rothp_bench_fail("%s: no AnonHugePages", path);
		printf("# khugepaged: round %d: %ld of the heap's %d MiB huge at its end\n", r,
		       huge_kb >> 10, NEIGHBOUR_MIB);
		if (huge_kb < NEIGHBOUR_MIB * 1024L)
			rothp_bench_fail("khugepaged: round %d: the heap not all huge within %d s",
					 r, CPU_ROUND_S);
		rothp_neighbour_stop(&nb);
	}
	ticks = task_ticks(kh) - ticks0;
	ms1 = task_runtime_ms(kh);
	secs = rothp_now() - start;
	rate = flooder_stop(&fl);
	if (rothp_thp_khugepaged_defaults())
		rothp_bench_fail("cannot set khugepaged's default tunables");
	printf("# khugepaged: pid %d, %ld ticks of 1/%ld s in %.1f s; one tick is %.1f%% of that; the flooder made %.0f madvise() calls a second\n",
	       (int)kh, ticks, hz, secs, ticks ? 100.0 / ticks : 100.0, rate);
	if (ms0 >= 0 && ms1 >= 0)
		printf("# khugepaged: se.sum_exec_runtime %.3f s in the same window\n",
		       (ms1 - ms0) / 1000);
	return (double)ticks / hz;
}

/* --- exec_storm_s ----------------------------------------------------- */

/* Run pieprog_small once and wait for it: 0 if it exited 0. */
static int run_small(void)
{
	char *argv[] = { small, "run", NULL };
	char *envp[] = { NULL };
	posix_spawn_file_actions_t fa;
	int rc, status;
	pid_t pid;

	if (posix_spawn_file_actions_init(&fa))
		return -1;
	rc = posix_spawn_file_actions_addopen(&fa, STDOUT_FILENO, "/dev/null", O_WRONLY, 0);
	if (!rc)
		rc = posix_spawn(&pid, small, &fa, NULL, argv, envp);
	posix_spawn_file_actions_destroy(&fa);
	if (rc) {
		errno = rc;
		return -1;
	}
	if (waitpid(pid, &status, 0) != pid)
		return -1;
	return WIFEXITED(status) && !WEXITSTATUS(status) ? 0 : -1;
}

/* One loop: pinned to a CPU, ready, then STORM_EXECS runs once go closes. */
static void storm_loop(pid_t parent, int index, int ready, int go)
{
	char c = 'r';
	int i;

	die_with_parent(parent);
	if (rothp_spread(index) < 0 || write(ready, &c, 1) != 1)
		_exit(2);
	close(ready);
	while (read(go, &c, 1) < 0 && errno == EINTR)
		;
	for (i = 0; i < STORM_EXECS; i++) {
		if (run_small()) {
			printf("# exec storm: loop %d: run %d of %s failed: %s\n", index, i + 1,
			       small, strerror(errno));
			_exit(3);
		}
	}
	_exit(0);
}

static double exec_storm_once(void)
{
	pid_t parent = getpid(), pid[STORM_LOOPS];
	int ready[2], go[2], i, status;
	double t0;

	if (pipe2(ready, O_CLOEXEC) || pipe2(go, O_CLOEXEC))
		rothp_bench_fail("pipe: %s", strerror(errno));
	for (i = 0; i < STORM_LOOPS; i++) {
		pid[i] = rothp_fork();
		if (pid[i] < 0)
			rothp_bench_fail("fork: %s", strerror(errno));
		if (!pid[i]) {
			close(ready[0]);
			close(go[1]);
			storm_loop(parent, i, ready[1], go[0]);
		}
	}
	close(ready[1]);
	close(go[0]);
	for (i = 0; i < STORM_LOOPS; i++)
		if (child_ready(ready[0]))
			rothp_bench_fail("exec storm: a loop did not start");
	close(ready[0]);
	t0 = rothp_now();
	close(go[1]);
	for (i = 0; i < STORM_LOOPS; i++)
		if (waitpid(pid[i], &status, 0) != pid[i] || !WIFEXITED(status) ||
		    WEXITSTATUS(status))
			rothp_bench_fail("exec storm: loop %d failed (status %#x)", i, status);
	return rothp_now() - t0;
}

static double exec_storm(const char *label)
{
	double t[STORM_RUNS];
	int i;

	for (i = 0; i < STORM_WARMUP; i++)
		if (run_small())
			rothp_bench_fail("%s does not run: %s", small, strerror(errno));
	for (i = 0; i < STORM_RUNS; i++) {
		t[i] = exec_storm_once();
		printf("# exec storm%s: run %d: %d loops of %d execs in %.3f s\n", label, i + 1,
		       STORM_LOOPS, STORM_EXECS, t[i]);
	}
	return rothp_median(t, STORM_RUNS);
}

/* --- cc1 under THP always --------------------------------------------- */

/* cc1 compiling CC1_SRC, one process after the other. */
struct cc1_loop {
	pid_t pid;		/* the process now, -1 before the first */
	int runs;		/* processes started */
	double first;		/* rothp_now() just before the first one */
};

/*
 * A cc1 process: "cc1 -quiet -nostdinc -O2 -o /dev/null CC1_SRC", its
 * stderr in CC1_ERR. -nostdinc: without it cc1 looks for stdc-predef.h.
 * The kernel loads cc1 (its PT_INTERP is the loader the initramfs has);
 * the libraries come from <dir>/gcc/lib.
 */
static pid_t cc1_start(void)
{
	char *argv[] = { cc1, "-quiet", "-nostdinc", "-O2", "-o", "/dev/null", CC1_SRC, NULL };
	char *envp[] = { cc1_env, NULL };
	pid_t parent = getpid(), pid;
	int fd;

	pid = rothp_fork();
	if (pid)
		return pid;
	die_with_parent(parent);
	fd = open(CC1_ERR, O_WRONLY | O_CREAT | O_TRUNC, 0644);
	if (fd < 0 || dup2(fd, STDERR_FILENO) < 0)
		_exit(126);
	execve(cc1, argv, envp);
	_exit(127);
}

static void cc1_fail(int status)
{
	rothp_cc1_print_errors(CC1_ERR);
	rothp_bench_fail("cc1 ended with status %#x", status);
}

/* Start the first cc1, or the next one once the last has exited. */
static void cc1_next(struct cc1_loop *l)
{
	int status = 0;
	pid_t got;

	if (l->pid > 0) {
		got = waitpid(l->pid, &status, WNOHANG);
		if (!got)
			return;
		if (got != l->pid || !WIFEXITED(status) || WEXITSTATUS(status))
			cc1_fail(status);
	}
	if (!l->runs)
		l->first = rothp_now();
	l->pid = cc1_start();
	if (l->pid < 0)
		rothp_bench_fail("fork: %s", strerror(errno));
	l->runs++;
}

/*
 * The text of cc1 in process pid, once it runs cc1: its eligible blocks
 * and FilePmdMapped, bytes. False before the exec, or when it cannot be
 * read.
 */
static bool cc1_text(pid_t pid, long *eligible, long *pmd)
{
	struct rothp_vma vma;
	char path[64], *line = NULL;
	size_t cap = 0;
	bool found = false;
	FILE *fp;

	snprintf(path, sizeof(path), "/proc/%d/maps", (int)pid);
	fp = fopen(path, "r");
	if (!fp)
		return false;
	while (!found && getline(&line, &cap, fp) > 0)
		found = !rothp_vma_parse(line, &vma) && !strcmp(vma.perms, "r-xp") &&
			!strcmp(vma.path, cc1);
	free(line);
	fclose(fp);
	if (!found)
		return false;
	*eligible = rothp_vma_eligible_blocks(&vma);
	*pmd = rothp_file_pmd_mapped(pid, vma.start);
	return *eligible >= 0 && *pmd >= 0;
}

/* What the polls of cc1's text saw. */
struct cc1_seen {
	long eligible;		/* eligible blocks of its text */
	long max_pmd;		/* the most FilePmdMapped seen, bytes */
	double reached;		/* seconds from the first exec to PERCENT%, or -1 */
	double mib16;		/* ... to 16 MiB PMD-mapped, or -1 */
	int polls, runs;
};

/*
 * The trace events that say why text was or was not collapsed: the
 * series' one per hint (its source, how many blocks it left PMD-mapped, the
 * result of the last that failed), and 6.12's one per file collapse, by a
 * hint or by khugepaged. Only notes: a kernel without them measures the
 * same.
 */
static const char *const cc1_events[] = {
	"huge_memory/mm_khugepaged_prompt_collapse",
	"huge_memory/mm_khugepaged_collapse_file",
};

/* Switch on those the kernel has, on an empty buffer: whether one is. */
static bool cc1_trace_begin(void)
{
	bool on = false;
	size_t i;

	for (i = 0; i < sizeof(cc1_events) / sizeof(cc1_events[0]); i++)
		if (!rothp_trace_event_on(cc1_events[i]))
			on = true;
	return on && !rothp_trace_write("trace", "", O_TRUNC, false);
}

/* Print what they recorded, TRACE_LINES lines at most, and put them back. */
static void cc1_trace_end(const char *who)
{
	FILE *fp = fopen(ROTHP_TRACEFS "trace", "r");
	char line[512];
	int n = 0;

	while (fp && fgets(line, sizeof(line), fp)) {
		if (line[0] == '#' || !strchr(line, '\n'))
			continue;
		if (n++ < TRACE_LINES)
			printf("# %s: trace: %s", who, line + strspn(line, " "));
	}
	if (fp)
		fclose(fp);
	if (n > TRACE_LINES)
		printf("# %s: trace: %d lines more\n", who, n - TRACE_LINES);
	rothp_trace_restore();
}

/*
 * Run cc1 again and again from a page cache read afresh in small folios,
 * polling its text, for cap_s seconds from the first exec, or until
 * PERCENT% of its eligible blocks are PMD-mapped if until_huge. Each
 * change of what is PMD-mapped is noted as who, with the trace events.
 */
static void cc1_watch(const char *who, double cap_s, bool until_huge, struct cc1_seen *s)
{
	struct cc1_loop l = { .pid = -1 };
	long eligible, pmd, want, last = -1;
	bool traced;
	double t;

	memset(s, 0, sizeof(*s));
	s->reached = -1;
	s->mib16 = -1;
	rothp_bench_fresh_cache(cc1, NULL);
	quiesce();
	traced = cc1_trace_begin();
	cc1_next(&l);
	for (;;) {
		usleep(CC1_POLL_MS * 1000);
		if (cc1_text(l.pid, &eligible, &pmd)) {
			t = rothp_now() - l.first;
			if (t > cap_s)
				break;
			if (pmd != last)
				printf("# %s: %.2f s: %ld kB PMD-mapped, cc1 process %d\n", who, t,
				       pmd >> 10, l.runs);
			last = pmd;
			s->eligible = eligible;
			if (pmd > s->max_pmd)
				s->max_pmd = pmd;
			want = (PERCENT * eligible + 99) / 100;
			if (s->reached < 0 && eligible > 0 && pmd >= want * (long)ROTHP_PMD_SIZE)
				s->reached = t;
			if (s->mib16 < 0 && pmd >= 16 * (long)MIB)
				s->mib16 = t;
		}
		s->polls++;
		if (rothp_now() - l.first > cap_s || (until_huge && s->reached >= 0))
			break;
		cc1_next(&l);
	}
	s->runs = l.runs;
	kill_and_reap(&l.pid);
	if (traced)
		cc1_trace_end(who);
	if (!s->eligible)
		rothp_bench_fail("cc1: no eligible block seen in its text (did it start?)");
}

/* A nice-0 spinner pinned to each CPU this process may run on. */
struct spinners {
	pid_t pid[MAX_SPINNERS];
	int n;
};

static void spinners_start(struct spinners *sp)
{
	pid_t parent = getpid();
	volatile unsigned long spin = 0;
	int i;

	sp->n = rothp_nr_cpus();
	if (sp->n > MAX_SPINNERS)
		sp->n = MAX_SPINNERS;
	for (i = 0; i < sp->n; i++) {
		sp->pid[i] = rothp_fork();
		if (sp->pid[i] < 0)
			rothp_bench_fail("fork: %s", strerror(errno));
		if (!sp->pid[i]) {
			die_with_parent(parent);
			if (rothp_spread(i) < 0 || setpriority(PRIO_PROCESS, 0, 0))
				_exit(2);
			for (;;)
				spin++;
		}
	}
}

/* Stop them, failing if one had stopped by itself: a CPU was not busy. */
static void spinners_stop(struct spinners *sp)
{
	int i, status = 0, dead = 0;

	for (i = 0; i < sp->n; i++) {
		if (waitpid(sp->pid[i], &status, WNOHANG))
			dead++;
		kill_and_reap(&sp->pid[i]);
	}
	if (dead)
		rothp_bench_fail("%d of %d spinners stopped by themselves", dead, sp->n);
}

static double always_text_mib(void)
{
	struct cc1_seen s;

	cc1_watch("always, quiet", ALWAYS_WINDOW_S, false, &s);
	printf("# always, quiet: %ld eligible blocks; at most %ld kB PMD-mapped within %d s of the first exec; 16 MiB %s%.2f s; %d polls, %d cc1 processes\n",
	       s.eligible, s.max_pmd >> 10, ALWAYS_WINDOW_S,
	       s.mib16 >= 0 ? "after " : "not within ",
	       s.mib16 >= 0 ? s.mib16 : (double)ALWAYS_WINDOW_S, s.polls, s.runs);
	return (double)s.max_pmd / MIB;
}

static double always_busy(void)
{
	struct spinners sp;
	struct cc1_seen s;

	spinners_start(&sp);
	cc1_watch("always, busy", ALWAYS_CAP_S, true, &s);
	spinners_stop(&sp);
	printf("# always, busy: %d spinners; %ld eligible blocks; %ld kB PMD-mapped at most, %d%% of the blocks %s%.2f s; %d polls, %d cc1 processes\n",
	       sp.n, s.eligible, s.max_pmd >> 10, PERCENT,
	       s.reached >= 0 ? "after " : "not within ",
	       s.reached >= 0 ? s.reached : (double)ALWAYS_CAP_S, s.polls, s.runs);
	return s.reached >= 0 ? s.reached : ALWAYS_CAP_S;
}

/* --- main ------------------------------------------------------------- */

static void path_in_dir(char *buf, size_t len, const char *name)
{
	if (snprintf(buf, len, "%s/%s", dir, name) >= (int)len)
		rothp_bench_fail("path too long: %s/%s", dir, name);
	if (access(buf, X_OK))
		rothp_bench_fail("%s: %s", buf, strerror(errno));
}

static void prompt_set(long on)
{
	if (has_prompt && rothp_prompt_set(on))
		rothp_bench_fail("cannot set %s to %ld", ROTHP_PROMPT_KNOB, on);
}

int main(int argc, char **argv)
{
	struct scene busy = { .what = "busy", .path = prog, .neighbour = true, .cap_s = CAP_S };
	struct scene quiet = { .what = "quiet", .path = prog, .cap_s = CAP_S };
	struct scene pie_run = { .what = "pie", .path = pie, .may_lack_blocks = true,
				 .cap_s = CAP_S };
	struct scene flood = { .what = "flood", .path = prog, .neighbour = true, .flood = true,
			       .cap_s = FLOOD_CAP_S };
	struct utsname u;
	const char *skip;
	char why[256];

	dir = rothp_bench_start(argc, argv);
	/* arm64's default vm.mmap_rnd_bits leaves the series no room to align. */
	rothp_pie_rnd_bits_raise();
	path_in_dir(prog, sizeof(prog), "textprog");
	path_in_dir(pie, sizeof(pie), "pieprog");
	path_in_dir(small, sizeof(small), "pieprog_small");
	path_in_dir(cc1, sizeof(cc1), "gcc/cc1");
	snprintf(cc1_env, sizeof(cc1_env), "LD_LIBRARY_PATH=%s/gcc/lib", dir);
	skip = rothp_prompt_skip();
	has_prompt = !skip;
	if (rothp_prompt_setup(skip, why, sizeof(why)))
		rothp_bench_fail("%s", why);
	uname(&u);
	printf("# kernel %s, %d cpus, %s; %s\n", u.release, rothp_nr_cpus(), dir,
	       has_prompt ? "prompt_collapse=1" : ROTHP_NO_PROMPT);

	printf("BENCH prompt_collapse_s %.3f s\n", run_once(&busy));
	printf("BENCH prompt_collapse_quiet_s %.3f s\n", median_of(&quiet, QUIET_RUNS));
	printf("BENCH pie_prompt_collapse_s %.3f s\n", median_of(&pie_run, PIE_RUNS));
	printf("BENCH prompt_collapse_flood_s %.3f s\n", run_once(&flood));

	printf("BENCH madvise_call_us %.2f us\n", madvise_us());
	/*
	 * The same with prompt collapse off, in this boot: what the patched
	 * call costs over 6.12's code path, without the noise between boots.
	 */
	if (has_prompt) {
		prompt_set(0);
		printf("# madvise_call_us with prompt_collapse=0: %.2f us\n", madvise_us());
		prompt_set(1);
	}

	printf("BENCH khugepaged_cpu_s %.2f s\n", khugepaged_cpu());

	rothp_bench_thp_set("enabled", "always");
	printf("BENCH exec_storm_s %.3f s\n", exec_storm(""));
	if (has_prompt) {
		prompt_set(0);
		printf("# exec_storm_s with prompt_collapse=0: %.3f s\n",
		       exec_storm(" (prompt_collapse=0)"));
		prompt_set(1);
	}

	rothp_bench_cc1_source(CC1_SRC, CC1_FUNCS);
	printf("BENCH always_text_mib_3s %.1f MiB\n", always_text_mib());
	printf("BENCH always_busy_s %.3f s\n", always_busy());
	return 0;
}
