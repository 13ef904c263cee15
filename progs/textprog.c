// SPDX-License-Identifier: GPL-2.0
/*
 * textprog: a static executable with TEXT_PAGES pages of code (textprog_blob.S),
 * linked so that its text is 2 MiB-congruent, for the rothp tests to turn
 * into read-only file THPs. The same source, built with a smaller TEXT_PAGES
 * and BLOB_ALIGN, makes the PIE and static-PIE variants (selftests/Makefile)
 * that the elf_align test starts to see where the ELF loader puts their text.
 *
 *   textprog none|collapse|hugepage   do that to the text, print
 *       "ready <start> <end> <rc> <errno>", then serve commands on stdin:
 *       run, sum, collapse, hugepage, exit, and for bench_itlb chain, dance,
 *       nohuge, random, touch (see usage()).
 *   textprog run                      call every stub once and exit 0 if all ok
 *   textprog demo [seconds]           MADV_HUGEPAGE the text and report, in
 *       plain words, whether and how fast it became PMD-mapped
 *   textprog demo-pie PIE [seconds]   run "PIE demo seconds" (a build of
 *       this program as a PIE), vm.mmap_rnd_bits raised for it first where
 *       it keeps the series from aligning a PIE
 */
#define _GNU_SOURCE
#include <errno.h>
#include <fcntl.h>
#include <inttypes.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>
#include <sys/mman.h>
#include <sys/stat.h>
#include <sys/sysmacros.h>
#include <sys/utsname.h>

#include "rothp_util.h"

#ifndef TEXT_PAGES
#define TEXT_PAGES 4096
#endif
#ifndef BLOB_ALIGN
#define BLOB_ALIGN 0x200000
#endif

#if BLOB_ALIGN == 0x200000 && TEXT_PAGES % 512
#error "a 2 MiB-aligned blob needs TEXT_PAGES a multiple of 512 (whole 2 MiB blocks)"
#endif
#if BLOB_ALIGN % 4096 || BLOB_ALIGN > 0x200000
#error "BLOB_ALIGN must be a multiple of 4096, at most 2 MiB"
#endif

#define STUB_SIZE	ROTHP_STUB_SIZE
#define BLOB_SIZE	((unsigned long)TEXT_PAGES * STUB_SIZE)

extern const char rothp_blob_start[];
extern const char rothp_blob_end[];

typedef int (*stub_fn)(void);

#define MAX_REPS	64

static struct rothp_vma text;

/*
 * A random cyclic permutation of 0..n-1 (one cycle through all n), by
 * Sattolo's algorithm: for i from n-1 down to 1, swap next[i] with
 * next[rand % i]. Following next[] from any index visits every index once
 * before it comes back. Tools that model the sequence must do the same.
 */
static void cycle_perm(uint64_t seed, uint32_t *next, long n)
{
	uint64_t state = seed;
	uint32_t tmp;
	long i, j;

	for (i = 0; i < n; i++)
		next[i] = i;
	for (i = n - 1; i > 0; i--) {
		j = rothp_rand64(&state) % (uint64_t)i;
		tmp = next[i];
		next[i] = next[j];
		next[j] = tmp;
	}
}

static void usage(const char *prog)
{
	fprintf(stderr,
		"usage: %s none|collapse|hugepage   act on the text, then serve stdin:\n"
		"         run       call every stub: 'run <ok> <calls>'\n"
		"         sum       'sum <memory hash> <file hash>' of the stubs\n"
		"         collapse  MADV_COLLAPSE the text: 'collapse <rc> <errno>'\n"
		"         hugepage  MADV_HUGEPAGE the text: 'hugepage <rc> <errno>'\n"
		"         nohuge    MADV_NOHUGEPAGE the text: 'nohuge <rc> <errno>'\n"
		"         random    MADV_RANDOM the text: 'random <rc> <errno>'\n"
		"         touch S   call every S-th stub: 'touch S <ok> <calls>'\n"
		"         chain SEED PAGES CALLS REPS   run the chain of stubs 0..PAGES-1\n"
		"                   in the random cyclic order of SEED, PAGES calls to warm\n"
		"                   up, then REPS timed runs of CALLS calls:\n"
		"                   'chain SEED PAGES CALLS REPS <ok> <median ns/call>\n"
		"                   <min ns/call> <order hash>'\n"
		"         dance     copy the text's 2 MiB blocks to anonymous huge pages\n"
		"                   and mremap() them over it: 'dance <rc> <errno> <us>'\n"
		"         exit\n"
		"       %s run               call every stub once\n"
		"       %s demo [seconds]    show the text becoming huge\n"
		"       %s demo-pie PIE [seconds]\n"
		"                            run 'PIE demo seconds' (default 30),\n"
		"                            vm.mmap_rnd_bits raised first if the\n"
		"                            series needs it to align a PIE\n",
		prog, prog, prog, prog);
}

/* The r-xp VMA of /proc/self/exe that holds the stubs. */
static int find_text(struct rothp_vma *vma)
{
	unsigned long blob = (unsigned long)rothp_blob_start;
	struct stat exe;

	if (rothp_find_vma(getpid(), blob, vma)) {
		fprintf(stderr, "textprog: no VMA holds the stubs at %#lx\n", blob);
		return -1;
	}
	if (stat("/proc/self/exe", &exe)) {
		perror("textprog: stat /proc/self/exe");
		return -1;
	}
	if (strcmp(vma->perms, "r-xp") || vma->inode != exe.st_ino ||
	    makedev(vma->dev_major, vma->dev_minor) != exe.st_dev) {
		fprintf(stderr, "textprog: VMA %lx-%lx %s %s is not my text\n",
			vma->start, vma->end, vma->perms, vma->path);
		return -1;
	}
	if (blob % BLOB_ALIGN || (unsigned long)(rothp_blob_end - rothp_blob_start) !=
	    BLOB_SIZE) {
		fprintf(stderr, "textprog: blob %#lx size %#lx is not as built\n", blob,
			(unsigned long)(rothp_blob_end - rothp_blob_start));
		return -1;
	}
	return 0;
}

/*
 * Call every stub and check stub i returns i. Then read one byte of every
 * page of the text VMA, so the parts outside the blob (libc, padding) are
 * mapped too and every eligible block has been faulted.
 */
static int run_stubs(long *calls)
{
	unsigned long addr;
	unsigned char sink = 0;
	int i, bad = 0;

	for (i = 0; i < TEXT_PAGES; i++) {
		stub_fn fn = (stub_fn)(uintptr_t)(rothp_blob_start + i * STUB_SIZE);

		if (fn() != i)
			bad++;
	}
	*calls = TEXT_PAGES;
	for (addr = text.start; addr < text.end; addr += ROTHP_PAGE_SIZE)
		sink ^= *(volatile const unsigned char *)addr;
	(void)sink;
	if (bad)
		fprintf(stderr, "textprog: %d of %d stubs returned a wrong value\n", bad,
			TEXT_PAGES);
	return !bad;
}

/* Hash the stubs as mapped and as read from the file at the same offset. */
static int sums(uint64_t *memsum, uint64_t *filesum)
{
	unsigned long off = text.offset + ((unsigned long)rothp_blob_start - text.start);
	int fd, ret;

	*memsum = rothp_hash(rothp_blob_start, BLOB_SIZE);
	fd = open("/proc/self/exe", O_RDONLY);
	if (fd < 0)
		return -1;
	ret = rothp_file_hash(fd, off, BLOB_SIZE, filesum);
	close(fd);
	return ret;
}

/* The kernel's PMD size in words, "2 MiB" on x86-64: whole MiB on every arch. */
static const char *pmd_str(void)
{
	static char buf[32];

	if (!buf[0])
		snprintf(buf, sizeof(buf), "%lu MiB", ROTHP_PMD_SIZE >> 20);
	return buf;
}

/* MADV_COLLAPSE the PMD-sized blocks inside the text VMA. */
static int collapse(int *err)
{
	unsigned long start = ROTHP_ALIGN_UP(text.start, ROTHP_PMD_SIZE);
	unsigned long end = ROTHP_ALIGN_DOWN(text.end, ROTHP_PMD_SIZE);

	if (start >= end) {
		fprintf(stderr, "textprog: text %lx-%lx holds no %s block\n", text.start,
			text.end, pmd_str());
		*err = EINVAL;
		return -1;
	}
	return rothp_madv_collapse((void *)start, end - start, err);
}

/* madvise() of the whole text with advice: its result, *err its errno or 0. */
static int madv(int advice, int *err)
{
	int rc = madvise((void *)text.start, text.end - text.start, advice);

	*err = rc ? errno : 0;
	return rc;
}

/* Call every stride-th stub once. */
static int touch(long stride, long *calls)
{
	int i, bad = 0;

	*calls = 0;
	if (stride < 1)
		return 0;
	for (i = 0; i < TEXT_PAGES; i += stride, (*calls)++) {
		stub_fn fn = (stub_fn)(uintptr_t)(rothp_blob_start + i * STUB_SIZE);

		if (fn() != i)
			bad++;
	}
	return !bad;
}

static const void *chain_entry(uint32_t i)
{
	return rothp_blob_start + i * STUB_SIZE + ROTHP_CHAIN_ENTRY;
}

/*
 * Run the stubs 0..pages-1 as a chain in the cyclic order of seed: pages
 * calls to fault them in and warm up, then reps timed runs, each of the
 * given number of calls from stub 0. Each run ends on the stub calls - 1
 * steps after stub 0, which rothp_chain_run() returns: a check that the
 * chain ran as built.
 */
static int chain(uint64_t seed, long pages, long calls, int reps, double *med, double *min,
		 uint64_t *hash)
{
	double t[MAX_REPS], t0;
	const void **table;
	uint32_t *next, last;
	long i;
	int r, ok = 1;

	if (pages < 1 || pages > TEXT_PAGES || calls < 1 || reps < 1 || reps > MAX_REPS)
		return 0;
	next = malloc(pages * sizeof(*next));
	table = malloc(pages * sizeof(*table));
	if (!next || !table) {
		free(next);
		free(table);
		return 0;
	}
	if (!rothp_is_chain_entry(chain_entry(0), 0)) {
		fprintf(stderr, "textprog: no chain entry in the stubs\n");
		ok = 0;
		goto out;
	}
	cycle_perm(seed, next, pages);
	*hash = rothp_hash(next, pages * sizeof(*next));
	for (i = 0; i < pages; i++)
		table[i] = chain_entry(next[i]);
	for (last = 0, i = 1; i < pages; i++)
		last = next[last];
	if (rothp_chain_run((void *const *)table, chain_entry(0), pages) != last)
		ok = 0;
	for (last = 0, i = 1; i < calls; i++)
		last = next[last];
	for (r = 0; r < reps; r++) {
		t0 = rothp_now();
		if (rothp_chain_run((void *const *)table, chain_entry(0), calls) != last)
			ok = 0;
		t[r] = (rothp_now() - t0) * 1e9 / calls;
	}
	*med = rothp_median(t, reps);
	*min = t[0];
out:
	free(next);
	free(table);
	return ok;
}

/*
 * The copy dance of hugify tools: copy the 2 MiB blocks of the text to an
 * anonymous, 2 MiB-aligned MADV_HUGEPAGE region, make it r-x, and
 * mremap() it over the text. The text is then anonymous memory: no file
 * behind it in /proc/PID/maps, nothing for a uprobe on the file to hit.
 */
static int dance(int *err, double *us)
{
	unsigned long start = ROTHP_ALIGN_UP(text.start, ROTHP_PMD_SIZE);
	unsigned long end = ROTHP_ALIGN_DOWN(text.end, ROTHP_PMD_SIZE);
	size_t len = end - start, span = len + ROTHP_PMD_SIZE;
	char *base, *anon;
	double t0 = rothp_now();
	void *p;

	*err = EINVAL;
	if (start >= end)
		return -1;
	base = mmap(NULL, span, PROT_READ | PROT_WRITE, MAP_PRIVATE | MAP_ANONYMOUS, -1, 0);
	if (base == MAP_FAILED)
		goto fail;
	anon = (char *)ROTHP_ALIGN_UP((unsigned long)base, ROTHP_PMD_SIZE);
	if (anon > base)
		munmap(base, anon - base);
	if (base + span > anon + len)
		munmap(anon + len, base + span - (anon + len));
	if (madvise(anon, len, MADV_HUGEPAGE))
		goto fail;
	memcpy(anon, (const void *)start, len);
	if (mprotect(anon, len, PROT_READ | PROT_EXEC))
		goto fail;
	p = mremap(anon, len, len, MREMAP_MAYMOVE | MREMAP_FIXED, (void *)start);
	if (p == MAP_FAILED)
		goto fail;
	*us = (rothp_now() - t0) * 1e6;
	*err = 0;
	return 0;
fail:
	*err = errno;
	return -1;
}

static int serve(void)
{
	char *line = NULL;
	size_t cap = 0;
	uint64_t memsum, filesum, seed, hash;
	long calls, stride, pages;
	double med, min, us;
	int rc, err, reps;

	while (getline(&line, &cap, stdin) > 0) {
		line[strcspn(line, "\r\n")] = '\0';
		if (!strcmp(line, "run")) {
			rc = run_stubs(&calls);
			printf("run %d %ld\n", rc, calls);
		} else if (!strcmp(line, "sum")) {
			if (sums(&memsum, &filesum))
				printf("sum error %d\n", errno);
			else
				printf("sum %llx %llx\n", (unsigned long long)memsum,
				       (unsigned long long)filesum);
		} else if (!strcmp(line, "collapse")) {
			rc = collapse(&err);
			printf("collapse %d %d\n", rc, err);
		} else if (!strcmp(line, "hugepage")) {
			rc = madv(MADV_HUGEPAGE, &err);
			printf("hugepage %d %d\n", rc, err);
		} else if (!strcmp(line, "nohuge")) {
			rc = madv(MADV_NOHUGEPAGE, &err);
			printf("nohuge %d %d\n", rc, err);
		} else if (!strcmp(line, "random")) {
			rc = madv(MADV_RANDOM, &err);
			printf("random %d %d\n", rc, err);
		} else if (sscanf(line, "touch %ld", &stride) == 1) {
			rc = touch(stride, &calls);
			printf("touch %ld %d %ld\n", stride, rc, calls);
		} else if (sscanf(line, "chain %" SCNu64 " %ld %ld %d", &seed, &pages, &calls,
				  &reps) == 4) {
			med = min = 0;
			hash = 0;
			rc = chain(seed, pages, calls, reps, &med, &min, &hash);
			printf("%s %d %.3f %.3f %016" PRIx64 "\n", line, rc, med, min, hash);
		} else if (!strcmp(line, "dance")) {
			us = 0;
			rc = dance(&err, &us);
			printf("dance %d %d %.0f\n", rc, err, us);
		} else if (!strcmp(line, "exit")) {
			break;
		} else {
			printf("error unknown command '%s'\n", line);
		}
		fflush(stdout);
	}
	free(line);
	return 0;
}

struct demo_state {
	long want;		/* bytes: eligible blocks * the PMD size */
	long pmd;		/* last FilePmdMapped, bytes */
};

static bool demo_touch(void *arg)
{
	struct demo_state *st = arg;
	long calls;

	run_stubs(&calls);
	st->pmd = rothp_file_pmd_mapped(getpid(), text.start);
	return st->want > 0 && st->pmd == st->want;
}

static unsigned long translations(unsigned long size, long pmd)
{
	if (pmd < 0)
		pmd = 0;
	return (size - pmd) / ROTHP_PAGE_SIZE + pmd / ROTHP_PMD_SIZE;
}

/* One "label  value" line of the demo report. */
#define FIELD	"  %-36s "

static void demo_config(const char *name)
{
	char src[PATH_MAX];
	int r = rothp_kconfig(name, src, sizeof(src));

	printf(FIELD "%s (%s)\n", name, r > 0 ? "yes" : r == 0 ? "no" : "unknown", src);
}

/*
 * A PMD-sized block can be PMD-mapped only where the address and the file
 * offset agree modulo the PMD size, which is fixed when the program is
 * linked and loaded: say so, and how to fix it, when they do not.
 */
static void demo_explain_alignment(const struct rothp_vma *vma)
{
	unsigned long skew = (vma->start - vma->offset) & (ROTHP_PMD_SIZE - 1);
	char label[64];

	snprintf(label, sizeof(label), "text %s-congruent", pmd_str());
	if (!skew) {
		printf(FIELD "yes (address - file offset = 0 mod %s)\n", label, pmd_str());
		return;
	}
	printf(FIELD "no: address - file offset = %#lx mod %s\n", label, skew, pmd_str());
	printf("  This text can never be PMD-mapped, because of how it was linked or\n"
	       "  loaded. Link it with -Wl,-z,max-page-size=%#lx (%s p_align:\n"
	       "  the loader then aligns it), or, for a PIE with 4 KiB p_align, run a\n"
	       "  kernel with the rothp series and fs.elf_text_thp_align=1.\n",
	       ROTHP_PMD_SIZE, pmd_str());
}

static int demo(int timeout_s)
{
	unsigned long size = text.end - text.start;
	struct demo_state st;
	struct utsname u;
	char enabled[64], label[64];
	double t0, took;
	long eligible, before, ms;
	int rc, err;

	uname(&u);
	printf("Read-only file THP demo: does this program's code get huge pages?\n");
	printf(FIELD "%s\n", "kernel", u.release);
	if (rothp_hpage_pmd_size() && !rothp_thp_read_str("enabled", enabled, sizeof(enabled)))
		printf(FIELD "available, enabled=%s\n", "transparent huge pages", enabled);
	else
		printf(FIELD "not available\n", "transparent huge pages");
	demo_config("CONFIG_TRANSPARENT_HUGEPAGE");
	demo_config("CONFIG_READ_ONLY_THP_FOR_FS");
	printf(FIELD "%s\n", "program file", text.path);
	printf(FIELD "%#lx-%#lx, %.1f MiB\n", "code mapping", text.start, text.end,
	       size / 1048576.0);
	if (!rothp_hpage_pmd_size()) {
		printf("Result: without transparent huge pages nothing can become huge.\n");
		return 1;
	}

	eligible = rothp_vma_eligible_blocks(&text);
	before = rothp_file_pmd_mapped(getpid(), text.start);
	snprintf(label, sizeof(label), "%s blocks that can be huge", pmd_str());
	printf(FIELD "%ld\n", label, eligible);
	demo_explain_alignment(&text);
	printf(FIELD "%ld kB\n", "huge-mapped before (FilePmdMapped)", before / 1024);

	t0 = rothp_now();
	rc = madv(MADV_HUGEPAGE, &err);
	took = rothp_now() - t0;
	if (rc)
		printf(FIELD "failed: %s\n", "madvise(MADV_HUGEPAGE)", strerror(err));
	else
		printf(FIELD "ok, took %.6f s\n", "madvise(MADV_HUGEPAGE)", took);

	printf("Running the code every 10 ms for up to %d s...\n", timeout_s);
	st.want = eligible > 0 ? eligible * (long)ROTHP_PMD_SIZE : 0;
	st.pmd = 0;
	t0 = rothp_now();
	ms = rothp_wait_until(demo_touch, &st, timeout_s * 1000L, 10);
	took = rothp_now() - t0;

	printf(FIELD "%ld kB\n", "huge-mapped after (FilePmdMapped)", st.pmd / 1024);
	printf(FIELD "%.2f s\n", "elapsed", took);
	snprintf(label, sizeof(label), "huge %s blocks", pmd_str());
	printf(FIELD "%ld of %ld\n", label,
	       st.pmd > 0 ? st.pmd / (long)ROTHP_PMD_SIZE : 0, eligible);
	printf(FIELD "%lu before, %lu after\n", "page translations for the code",
	       translations(size, before), translations(size, st.pmd));
	if (ms >= 0) {
		printf("Result: all %ld eligible blocks became huge pages.\n", eligible);
		return 0;
	}
	printf("Result: the code did not become huge within %d s.\n", timeout_s);
	return 1;
}

/*
 * The demo of a default-built PIE, started from here: the series aligns a
 * PIE's text only if that keeps 16 random bits, which arm64's default
 * vm.mmap_rnd_bits does not (Documentation/arm64.rst). Where the series is
 * there, the setting is raised before the PIE's exec, as an administrator
 * who wants PIE text huge would, said, and put back at exit
 * (rothp_pie_rnd_bits_raise()). 0 if the PIE's demo succeeded, else 1.
 */
static int demo_pie(const char *pie, const char *seconds)
{
	pid_t pid;

	if (!access(ROTHP_SYSCTL_DIR ROTHP_ELF_ALIGN_SYSCTL, F_OK))
		rothp_pie_rnd_bits_raise();
	pid = rothp_fork();
	if (pid < 0) {
		printf("fork: %s\n", strerror(errno));
		return 1;
	}
	if (!pid) {
		execl(pie, pie, "demo", seconds, (char *)NULL);
		fprintf(stderr, "%s: %s\n", pie, strerror(errno));
		_exit(127);
	}
	return rothp_child_wait(pid, -1, pie, NULL) ? 1 : 0;
}

int main(int argc, char **argv)
{
	const char *action = argc > 1 ? argv[1] : NULL;
	long calls;
	int rc = 0, err = 0, ok;

	if (!action) {
		usage(argv[0]);
		return 2;
	}
	if (!strcmp(action, "demo-pie")) {
		if (argc < 3) {
			usage(argv[0]);
			return 2;
		}
		return demo_pie(argv[2], argc > 3 ? argv[3] : "30");
	}
	if (find_text(&text))
		return 1;

	if (!strcmp(action, "run")) {
		ok = run_stubs(&calls);
		printf("run %d %ld\n", ok, calls);
		return ok ? 0 : 1;
	}
	if (!strcmp(action, "demo")) {
		int timeout_s = argc > 2 ? atoi(argv[2]) : 0;

		return demo(timeout_s > 0 ? timeout_s : 30);
	}
	if (!strcmp(action, "collapse")) {
		rc = collapse(&err);
	} else if (!strcmp(action, "hugepage")) {
		rc = madv(MADV_HUGEPAGE, &err);
	} else if (strcmp(action, "none")) {
		usage(argv[0]);
		return 2;
	}
	printf("ready %lx %lx %d %d\n", text.start, text.end, rc, err);
	fflush(stdout);
	return serve();
}
