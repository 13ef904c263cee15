// SPDX-License-Identifier: GPL-2.0
/*
 * bench_real: how much of the text of real programs and of their shared
 * libraries is PMD-mapped within WINDOW_S seconds of exec.
 *
 *   bench_real <dir>
 *
 * The programs, each with the shared libraries ldd resolves for it in its
 * own <dir>/<name>/lib (image.sh copies them; the loader comes from the
 * initramfs, as PT_INTERP names it):
 *   cc1      gcc's compiler proper (<dir>/gcc/cc1) on a generated C file
 *   clang    Debian's clang, its front end (-cc1) on the same file: the
 *            program is small, its text is in libclang-cpp and libLLVM
 *   python3  the interpreter (its text is in the program) on a short
 *            script: JSON, regular expressions and zlib
 *
 * Each runs again and again for WINDOW_S seconds from its first exec, its
 * page cache dropped first and free memory written
 * (rothp_bench_fresh_cache(): under QEMU's TCG, copying into memory that
 * held the last window's text was 10 to 100 times slower), its text
 * mappings polled every POLL_MS: the most blocks each r-x file mapping had
 * PMD-mapped at one poll is what it got. Two ways to get huge text, each
 * measured on its own:
 *   always   THP "always", the program started as it is
 *   run      THP "madvise", the program started by "hugetext run"
 *
 * Both modes are watched before either is reported: a library with
 * eligible blocks that one mode's processes had not yet mapped when its
 * window ended (clang's first process still reading in libclang-cpp
 * before the loader maps libLLVM) counts in that mode with the blocks the
 * other mode saw, none PMD-mapped, so that a slow start lowers the share
 * rather than shrinking what it is a share of.
 *
 * A block is eligible when it is a whole 2 MiB-aligned block of a text
 * mapping at a 2 MiB-aligned file offset, inside the file
 * (rothp_vma_eligible_blocks()). The notes say of each mapping with none
 * why: smaller than a block, its address and file offset not congruent
 * modulo 2 MiB (how it was linked or loaded), or no whole aligned block
 * inside it.
 *
 * Prints, for each mode, program and text mapping:
 *   REALMAP <mode> <prog> <path> <start> <end> <offset> <eligible> <pmd>
 *           <offsets>
 * (<offsets>: the file offsets of the blocks PMD-mapped at that poll,
 * comma-separated, or "-"), which the report's TLB replay of cc1 reads;
 * "BENCH real_text_eligible_blocks_<mode>_<prog>", the eligible blocks of
 * a program and its libraries, and, where there are any,
 * "BENCH real_text_huge_share_<mode>_<prog>" and
 * "BENCH real_text_first_share_<mode>_<prog>" (the first process alone,
 * from the cold page cache: what a program run once gets); "..._<mode>" (its programs
 * together) and "BENCH real_text_huge_share" (both modes, every program
 * and library): PMD-mapped blocks over eligible blocks. (Debian's python3
 * is not a PIE: its 2.7 MiB of text hold no whole aligned 2 MiB block, and
 * its libraries are smaller than one; it has none, in any kernel.)
 */
#define _GNU_SOURCE
#include <errno.h>
#include <fcntl.h>
#include <signal.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>
#include <sys/prctl.h>
#include <sys/stat.h>
#include <sys/utsname.h>
#include <sys/wait.h>

#include "rothp_util.h"

#define WINDOW_S	3
#define POLL_MS		50
#define CC1_FUNCS	2
#define MAX_FILES	64
#define SRC		"/tmp/bench_real.c"
#define ERR		"/tmp/bench_real.err"
#define PY_SCRIPT							\
	"import json, re, zlib\n"					\
	"d = [{'k': i, 'v': str(i) * 3} for i in range(2000)]\n"	\
	"s = json.dumps(d)\n"						\
	"assert json.loads(s) == d\n"					\
	"print(len(zlib.compress(s.encode())), len(re.findall(r'\\d+', s)))\n"

/* The target clang -cc1 compiles for: the machine the benchmark runs on. */
#if defined(__aarch64__)
#define CLANG_TRIPLE	"aarch64-unknown-linux-gnu"
#else
#define CLANG_TRIPLE	"x86_64-unknown-linux-gnu"
#endif

struct program {
	const char *name;
	const char *bin;		/* in <dir> */
	const char *lib;		/* its libraries, in <dir> */
	const char *args[12];		/* after argv[0] */
};

static const struct program programs[] = {
	{ "cc1", "gcc/cc1", "gcc/lib",
	  { "-quiet", "-nostdinc", "-O2", "-o", "/dev/null", SRC } },
	{ "clang", "clang/clang", "clang/lib",
	  { "-cc1", "-triple", CLANG_TRIPLE, "-O2", "-emit-obj", "-o",
	    "/dev/null", SRC } },
	{ "python3", "python3/python3", "python3/lib",
	  { "-I", "-S", "-B", "-c", PY_SCRIPT } },
};

enum mode { MODE_ALWAYS, MODE_RUN, NR_MODES };
static const char *const mode_names[NR_MODES] = { "always", "run" };

/* One text mapping seen in the program's processes. */
struct text_file {
	struct rothp_vma vma;		/* at the poll that saw the most PMD-mapped */
	long eligible;			/* ... its eligible blocks; -1: file not looked at */
	long pmd;			/* the most PMD-mapped at one poll */
	long pmd_first;			/* ... of the first process, from a cold cache */
	unsigned long *huge;		/* file offsets of those blocks */
};

struct seen {
	struct text_file f[MAX_FILES];
	int nr, runs, polls;
	struct rothp_scrub scrub;	/* before the window */
	long eligible, pmd, first;	/* summed over its mappings (report()) */
};

static const char *dir;
static char hugetext[PATH_MAX];

static void die_with_parent(pid_t parent)
{
	if (prctl(PR_SET_PDEATHSIG, SIGKILL) || getppid() != parent)
		_exit(126);
}

static void path_in_dir(char *buf, size_t len, const char *name)
{
	if (snprintf(buf, len, "%s/%s", dir, name) >= (int)len)
		rothp_bench_fail("path too long: %s/%s", dir, name);
	if (access(buf, R_OK))
		rothp_bench_fail("%s: %s", buf, strerror(errno));
}

/* One process of p, through hugetext run in MODE_RUN; stderr to ERR. */
static pid_t start(const struct program *p, enum mode m)
{
	char bin[PATH_MAX], lib[PATH_MAX], env[PATH_MAX + 32];
	char *argv[20], *envp[] = { env, NULL };
	pid_t parent = getpid(), pid;
	int i, n = 0, fd;

	path_in_dir(bin, sizeof(bin), p->bin);
	path_in_dir(lib, sizeof(lib), p->lib);
	snprintf(env, sizeof(env), "LD_LIBRARY_PATH=%s", lib);
	if (m == MODE_RUN) {
		argv[n++] = hugetext;
		argv[n++] = "run";
		argv[n++] = "-q";
		argv[n++] = "--";
	}
	argv[n++] = bin;
	for (i = 0; p->args[i]; i++)
		argv[n++] = (char *)p->args[i];
	argv[n] = NULL;
	pid = rothp_fork();
	if (pid)
		return pid;
	die_with_parent(parent);
	/* Its own process group: hugetext run's CMD and watch die with it. */
	setpgid(0, 0);
	fd = open(ERR, O_WRONLY | O_CREAT | O_TRUNC, 0644);
	if (fd < 0 || dup2(fd, STDERR_FILENO) < 0 || dup2(fd, STDOUT_FILENO) < 0)
		_exit(126);
	execve(argv[0], argv, envp);
	_exit(127);
}

/*
 * The process that runs the program: pid, or under hugetext run its child
 * once it runs the program bin (hugetext's watch is a grandchild).
 */
static pid_t program_pid(pid_t pid, enum mode m, const struct stat *bin)
{
	return m == MODE_RUN ? rothp_child_of(pid, bin, 0) : pid;
}

static struct text_file *file_of(struct seen *s, const struct rothp_vma *vma)
{
	int i;

	for (i = 0; i < s->nr; i++) {
		if (!strcmp(s->f[i].vma.path, vma->path))
			return &s->f[i];
	}
	if (s->nr == MAX_FILES)
		rothp_bench_fail("more than %d text mappings", MAX_FILES);
	memset(&s->f[s->nr], 0, sizeof(s->f[0]));
	return &s->f[s->nr++];
}

/*
 * Look at each r-x file mapping of pid, the program's process: first is
 * whether it is the first process, from a cold page cache. A process that
 * ends meanwhile ends the look.
 */
static void poll_text(pid_t pid, struct seen *s, bool first)
{
	char path[64], *line = NULL;
	struct rothp_vma vma;
	struct text_file *f;
	size_t cap = 0;
	long nr, b, n, eligible;
	FILE *fp;
	int fd;
	bool *huge;

	snprintf(path, sizeof(path), "/proc/%d/maps", (int)pid);
	fp = fopen(path, "r");
	if (!fp)
		return;
	snprintf(path, sizeof(path), "/proc/%d/pagemap", (int)pid);
	fd = open(path, O_RDONLY);
	while (fd >= 0 && getline(&line, &cap, fp) > 0) {
		if (rothp_vma_parse(line, &vma) || strcmp(vma.perms, "r-xp") || vma.path[0] != '/')
			continue;
		f = file_of(s, &vma);
		eligible = rothp_vma_eligible_blocks(&vma);
		/*
		 * A loader maps an object linked without -z separate-code
		 * whole, r-x, before it maps the data over its end: the
		 * mapping's eligible blocks are those of the poll that saw the
		 * most PMD-mapped, or, as many seen, the fewest (the mapping
		 * once the loader is done with it).
		 */
		if (!f->vma.start) {
			f->vma = vma;
			f->eligible = eligible;
		}
		nr = (vma.end - ROTHP_ALIGN_DOWN(vma.start, ROTHP_PMD_SIZE) + ROTHP_PMD_SIZE - 1) /
			ROTHP_PMD_SIZE;
		huge = calloc(nr, sizeof(*huge));
		if (!huge)
			rothp_bench_fail("out of memory");
		if (rothp_scan_pmd(fd, vma.start, vma.end, ROTHP_PMD_SIZE, huge, nr)) {
			free(huge);
			if (errno == ESRCH)
				break;		/* it has exited */
			rothp_bench_fail("PAGEMAP_SCAN of %d: %s", (int)pid, strerror(errno));
		}
		for (b = n = 0; b < nr; b++)
			n += huge[b];
		if (first && n > f->pmd_first)
			f->pmd_first = n;
		if (n == f->pmd && eligible < f->eligible) {
			f->vma = vma;
			f->eligible = eligible;
		}
		if (n > f->pmd) {
			f->vma = vma;
			f->eligible = eligible;
			free(f->huge);
			f->huge = calloc(n, sizeof(*f->huge));
			if (!f->huge)
				rothp_bench_fail("out of memory");
			f->pmd = 0;
			for (b = 0; b < nr; b++) {
				if (huge[b])
					f->huge[f->pmd++] = ROTHP_ALIGN_DOWN(vma.start, ROTHP_PMD_SIZE) +
						b * ROTHP_PMD_SIZE - vma.start + vma.offset;
			}
		}
		free(huge);
	}
	if (fd >= 0)
		close(fd);
	free(line);
	fclose(fp);
}

/* Why a text mapping has no eligible block. */
static const char *not_eligible(const struct text_file *f)
{
	const struct rothp_vma *v = &f->vma;

	if (f->eligible < 0)
		return "the file could not be looked at";
	if (v->end - v->start < ROTHP_PMD_SIZE)
		return "smaller than a 2 MiB block";
	if ((v->start - v->offset) % ROTHP_PMD_SIZE)
		return "address and file offset not congruent modulo 2 MiB (linked or loaded so)";
	return "no whole 2 MiB-aligned block inside it";
}

/* Run p again and again for WINDOW_S s from its first exec, polling it. */
static void watch(const struct program *p, enum mode m, struct seen *s)
{
	char bin[PATH_MAX];
	struct stat st;
	double first;
	pid_t pid, prog;
	int status;

	memset(s, 0, sizeof(*s));
	path_in_dir(bin, sizeof(bin), p->bin);
	if (stat(bin, &st))
		rothp_bench_fail("%s: %s", bin, strerror(errno));
	/* Also writes the memory the last window's text held, untimed. */
	rothp_bench_fresh_cache(NULL, &s->scrub);
	first = rothp_now();
	pid = start(p, m);
	s->runs = 1;
	while (rothp_now() - first < WINDOW_S) {
		usleep(POLL_MS * 1000);
		prog = program_pid(pid, m, &st);
		if (prog > 0)
			poll_text(prog, s, s->runs == 1);
		s->polls++;
		if (waitpid(pid, &status, WNOHANG) != pid)
			continue;
		if (!WIFEXITED(status) || WEXITSTATUS(status)) {
			rothp_cc1_print_errors(ERR);
			rothp_bench_fail("%s (%s) ended with status %#x", p->name, mode_names[m],
					 status);
		}
		pid = start(p, m);
		s->runs++;
	}
	kill(-pid, SIGKILL);
	waitpid(pid, NULL, 0);
}

static const struct text_file *find_path(const struct seen *s, const char *path)
{
	int i;

	for (i = 0; i < s->nr; i++) {
		if (!strcmp(s->f[i].vma.path, path))
			return &s->f[i];
	}
	return NULL;
}

/*
 * Notes and REALMAP lines of p's mappings, printed as soon as p is
 * watched in mode m (a later failure keeps them in the log); their sums
 * go to s->eligible, s->pmd, s->first.
 */
static void report(const struct program *p, enum mode m, struct seen *s)
{
	struct text_file *f;
	long b;
	int i;

	s->eligible = s->pmd = s->first = 0;
	printf("# %s, %s: %d processes, %d polls in %d s\n", p->name, mode_names[m], s->runs,
	       s->polls, WINDOW_S);
	printf("# %s, %s: before it, %d MiB scrubbed in %.2f s: %ld huge pages, %ld fallbacks, %ld pages swapped out\n",
	       p->name, mode_names[m], ROTHP_BENCH_SCRUB_MIB, s->scrub.secs, s->scrub.thps,
	       s->scrub.fallback, s->scrub.swapped);
	for (i = 0; i < s->nr; i++) {
		f = &s->f[i];
		printf("REALMAP %s %s %s %#lx %#lx %#lx %ld %ld ", mode_names[m], p->name,
		       f->vma.path, f->vma.start, f->vma.end, f->vma.offset, f->eligible, f->pmd);
		for (b = 0; b < f->pmd; b++)
			printf("%s%#lx", b ? "," : "", f->huge[b]);
		printf("%s\n", f->pmd ? "" : "-");
		if (f->eligible > 0)
			printf("# %s, %s: %s: %ld KiB of text, %ld of %ld eligible blocks PMD-mapped\n",
			       p->name, mode_names[m], f->vma.path, (f->vma.end - f->vma.start) >> 10,
			       f->pmd, f->eligible);
		else
			printf("# %s, %s: %s: %ld KiB of text, no eligible block: %s\n", p->name,
			       mode_names[m], f->vma.path, (f->vma.end - f->vma.start) >> 10,
			       not_eligible(f));
		if (f->eligible > 0) {
			s->eligible += f->eligible;
			s->pmd += f->pmd;
			s->first += f->pmd_first;
		}
		free(f->huge);
		f->huge = NULL;
	}
	if (!s->nr)
		rothp_bench_fail("%s (%s): no text mapping seen (did it start?)", p->name,
				 mode_names[m]);
}

/*
 * The BENCH lines of p in mode m, once both modes are watched: other is p
 * in the other mode. A library with eligible blocks there that this
 * mode's processes had not mapped within WINDOW_S (a first process still
 * reading in the libraries mapped before it) counts with those blocks,
 * none PMD-mapped: the share is of what the program maps, not of what it
 * got to. *eligible and *pmd: the sums.
 */
static void report_share(const struct program *p, enum mode m, const struct seen *s,
			 const struct seen *other, long *eligible, long *pmd)
{
	const struct text_file *o;
	int i;

	*eligible = s->eligible;
	*pmd = s->pmd;
	for (i = 0; i < other->nr; i++) {
		o = &other->f[i];
		if (o->eligible <= 0 || find_path(s, o->vma.path))
			continue;
		printf("# %s, %s: %s: not mapped within %d s (%ld eligible blocks under %s): counted, none PMD-mapped\n",
		       p->name, mode_names[m], o->vma.path, WINDOW_S, o->eligible,
		       mode_names[m == MODE_ALWAYS ? MODE_RUN : MODE_ALWAYS]);
		*eligible += o->eligible;
	}
	printf("BENCH real_text_eligible_blocks_%s_%s %ld blocks\n", mode_names[m], p->name,
	       *eligible);
	if (*eligible) {
		printf("BENCH real_text_huge_share_%s_%s %.3f share\n", mode_names[m], p->name,
		       (double)*pmd / *eligible);
		/* The first process alone: what a program run once gets. */
		printf("BENCH real_text_first_share_%s_%s %.3f share\n", mode_names[m], p->name,
		       (double)s->first / *eligible);
	}
	else
		printf("# %s, %s: no eligible block in the program or its libraries (above): no share\n",
		       p->name, mode_names[m]);
}

static double share(long pmd, long eligible)
{
	return eligible ? (double)pmd / eligible : 0;
}

int main(int argc, char **argv)
{
	static const char *const enabled[NR_MODES] = { "always", "madvise" };
	long eligible, pmd, all_e = 0, all_p = 0, mode_e, mode_p;
	static struct seen s[NR_MODES][sizeof(programs) / sizeof(programs[0])];
	struct utsname u;
	size_t i;
	int m;

	dir = rothp_bench_start(argc, argv);
	/* hugetext is next to this program (image.sh). */
	if (readlink("/proc/self/exe", hugetext, sizeof(hugetext) - 16) < 0)
		rothp_bench_fail("/proc/self/exe: %s", strerror(errno));
	strcpy(strrchr(hugetext, '/') + 1, "hugetext");
	if (access(hugetext, X_OK))
		rothp_bench_fail("%s: %s", hugetext, strerror(errno));
	rothp_bench_cc1_source(SRC, CC1_FUNCS);
	uname(&u);
	printf("# kernel %s, %d cpus, %s\n", u.release, rothp_nr_cpus(), dir);

	/* Both modes watched before the shares: each reads the other's mappings. */
	for (m = 0; m < NR_MODES; m++) {
		rothp_bench_thp_set("enabled", enabled[m]);
		for (i = 0; i < sizeof(programs) / sizeof(programs[0]); i++) {
			watch(&programs[i], m, &s[m][i]);
			report(&programs[i], m, &s[m][i]);
		}
	}
	for (m = 0; m < NR_MODES; m++) {
		mode_e = mode_p = 0;
		for (i = 0; i < sizeof(programs) / sizeof(programs[0]); i++) {
			report_share(&programs[i], m, &s[m][i], &s[NR_MODES - 1 - m][i], &eligible,
				     &pmd);
			mode_e += eligible;
			mode_p += pmd;
		}
		printf("BENCH real_text_huge_share_%s %.3f share\n", mode_names[m],
		       share(mode_p, mode_e));
		all_e += mode_e;
		all_p += mode_p;
	}
	printf("BENCH real_text_huge_share %.3f share\n", share(all_p, all_e));
	return 0;
}
