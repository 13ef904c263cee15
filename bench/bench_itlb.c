// SPDX-License-Identifier: GPL-2.0
/*
 * bench_itlb <dir>: what huge text buys and costs, with read-only file THP
 * and with the copy dance of hugify tools, on the same programs:
 * <dir>/textprog_big (BIG_TEXT_PAGES stubs, 256 MiB of text) and
 * <dir>/textprog (16 MiB).
 *
 * 1. iTLB sweep. textprog_big runs its stubs as a chain in a random cyclic
 *    order (each stub jumps to the next through a table, rothp_chain_run())
 *    over spans of SPAN_MIN to the whole blob, in three modes:
 *      4k    THP "never", MADV_NOHUGEPAGE, the page cache read afresh in
 *            small folios
 *      file  MADV_COLLAPSE of the text (read-only file THP)
 *      copy  the copy dance: the text's 2 MiB blocks copied to anonymous
 *            MADV_HUGEPAGE memory that is mremap()ed over them
 *    Before and after each timed run the backing is checked: which 2 MiB
 *    blocks of the span are PMD-mapped (PAGEMAP_SCAN, PAGE_IS_HUGE), and
 *    the VMA's FilePmdMapped or AnonHugePages and file. A run whose backing
 *    is not what its mode claims is refused: no line, and exit status 1.
 *    Each run prints "ITLB run <mode> <span> <seed> <pages> <calls>
 *    <median ns> <min ns> <order hash> <blob address> <block map>", from
 *    which rothp-host bench-report models the TLBs of documented cores; the
 *    hypervisor signature is on "ITLB accel", as wall times under TCG are
 *    not TLB figures.
 * 2. Collapse cost: MADV_COLLAPSE of textprog_big's text, its page cache
 *    read afresh in small folios, in microseconds per 2 MiB block made
 *    huge, against this guest's memcpy() of 2 MiB.
 * 3. Memory: NPROC textprogs with huge text, file THP against the copy
 *    dance: their Pss and Rss (smaps_rollup), anonymous huge pages, the
 *    file's page cache, and what making the text huge took in the first
 *    process and in the next ones.
 * 4. Partly used text: textprog with MADV_RANDOM, every PARTIAL_STRIDE-th
 *    stub run, so a quarter of its blocks' pages are read: the page cache
 *    of the blocks before and after MADV_COLLAPSE.
 * 5. What the copy dance loses: whether /proc/PID/maps still names the
 *    file at the text, and whether a uprobe on the file fires there.
 *
 * Prints "BENCH <metric> <value> <unit>" lines, the copy dance's as
 * "BENCH <metric>@copy ...", and "# ..." notes ("# progress: ..." for the
 * console). Exits 1, printing "# error: ...", when a measurement could not
 * be made as described.
 */
#define _GNU_SOURCE
#include <errno.h>
#include <fcntl.h>
#include <inttypes.h>
#include <stdarg.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>
#include <sys/ioctl.h>
#include <sys/mman.h>
#include <sys/stat.h>
#include <sys/utsname.h>

#include <linux/fs.h>

#if defined(__x86_64__)
#include <cpuid.h>
#endif

#include "rothp_util.h"

#define SPAN_MIN	(64UL << 10)
#define SPAN_STEP	2		/* each span twice the last: 32 MiB included */
#define CHAIN_CALLS	(1L << 18)
#define CHAIN_REPS	5
#define COLLAPSE_RUNS	3
#define MEMCPY_RUNS	21
#define NPROC		4
#define PARTIAL_STRIDE	4
#define PROBE_STUB	5
#define UPROBE_NAME	"rothp_bench/itlb_probe"

enum mode { MODE_4K, MODE_FILE, MODE_COPY };
static const char *const mode_name[] = { "4k", "file", "copy" };

/* A program under test and where its stubs are. */
struct prog {
	char path[PATH_MAX];
	struct stat st;
	off_t blob_off;		/* file offset of stub 0 */
	long pages;		/* stubs */
};

static struct prog big, small;
static int refused;

/*
 * Which of the nr 2 MiB blocks from start (2 MiB-aligned) pid maps with a
 * PMD, by PAGEMAP_SCAN (fs/proc/task_mmu.c: PAGE_IS_HUGE is set for a huge
 * PMD only, never for PTE-mapped pages): map[i] is 'H' when the whole block
 * i is, else 'p'; map[nr] is '\0'. Returns the number of 'H' blocks, or -1.
 */
static long pmd_map(pid_t pid, unsigned long start, long nr, char *map)
{
#ifdef PAGEMAP_SCAN
	struct page_region *vec;
	struct pm_scan_arg arg;
	char path[64];
	long i, n, huge = 0;
	unsigned long a, b, first, last;
	int fd, ret;

	vec = calloc(nr + 1, sizeof(*vec));
	if (!vec)
		return -1;
	snprintf(path, sizeof(path), "/proc/%d/pagemap", (int)pid);
	fd = open(path, O_RDONLY);
	if (fd < 0) {
		free(vec);
		return -1;
	}
	memset(&arg, 0, sizeof(arg));
	arg.size = sizeof(arg);
	arg.start = start;
	arg.end = start + nr * ROTHP_PMD_SIZE;
	arg.vec = (uintptr_t)vec;
	arg.vec_len = nr + 1;
	arg.category_mask = PAGE_IS_HUGE;
	arg.return_mask = PAGE_IS_HUGE;
	ret = ioctl(fd, PAGEMAP_SCAN, &arg);
	close(fd);
	if (ret < 0 || arg.walk_end != arg.end) {
		free(vec);
		return -1;
	}
	memset(map, 'p', nr);
	map[nr] = '\0';
	for (n = 0; n < ret; n++) {
		/* Whole blocks inside [vec.start, vec.end). */
		a = ROTHP_ALIGN_UP(vec[n].start, ROTHP_PMD_SIZE);
		b = ROTHP_ALIGN_DOWN(vec[n].end, ROTHP_PMD_SIZE);
		if (a >= b)
			continue;
		first = (a - start) / ROTHP_PMD_SIZE;
		last = (b - start) / ROTHP_PMD_SIZE;
		for (i = first; i < (long)last && i < nr; i++)
			map[i] = 'H';
	}
	for (i = 0; i < nr; i++)
		huge += map[i] == 'H';
	free(vec);
	return huge;
#else
	errno = ENOSYS;
	return -1;
#endif
}

/* One field of /proc/PID/smaps_rollup ("Pss", "Rss", ...), in bytes; -1. */
static long rothp_rollup_field(pid_t pid, const char *field)
{
	char path[64];
	long kb;

	snprintf(path, sizeof(path), "/proc/%d/smaps_rollup", (int)pid);
	return rothp_field_read(path, field, ':', &kb) ? -1 : kb * 1024;
}

/* A "# progress: " line, which boot.sh shows on the console. */
static void say(const char *fmt, ...)
{
	va_list ap;

	printf("# progress: ");
	va_start(ap, fmt);
	vprintf(fmt, ap);
	va_end(ap);
	printf("\n");
}

static void prog_init(struct prog *p, const char *dir, const char *name)
{
	int fd;

	if (snprintf(p->path, sizeof(p->path), "%s/%s", dir, name) >= (int)sizeof(p->path))
		rothp_bench_fail("path too long: %s", dir);
	fd = open(p->path, O_RDONLY);
	if (fd < 0 || fstat(fd, &p->st))
		rothp_bench_fail("%s: %s", p->path, strerror(errno));
	p->pages = rothp_find_stubs(fd, &p->blob_off);
	close(fd);
	if (p->pages <= 0)
		rothp_bench_fail("%s: no stubs", p->path);
	if (p->blob_off % ROTHP_PMD_SIZE || p->pages * ROTHP_STUB_SIZE < ROTHP_PMD_SIZE)
		rothp_bench_fail("%s: its %lu MiB of stubs at %#lx hold no aligned block of the PMD size %lu MiB",
				 p->path, p->pages * ROTHP_STUB_SIZE >> 20,
				 (unsigned long)p->blob_off, ROTHP_PMD_SIZE >> 20);
}

/* Send cmd; the reply must start with cmd's first word and "1" or "0". */
static void cmd_ok(struct textproc *tp, const char *cmd, char *reply, size_t len,
		   const char *want)
{
	if (textproc_cmd(tp, cmd, reply, len))
		rothp_bench_fail("textprog: no reply to '%s'", cmd);
	if (strncmp(reply, want, strlen(want)))
		rothp_bench_fail("textprog: '%s' replied '%s'", cmd, reply);
}

static void run_all(struct textproc *tp)
{
	long calls;

	if (textproc_run(tp, &calls) != 1)
		rothp_bench_fail("textprog's stubs do not run");
}

/* Stub 0's address in a running textprog. */
static unsigned long blob_addr(const struct textproc *tp, const struct prog *p)
{
	struct rothp_vma vma;

	if (rothp_find_vma(tp->pid, tp->start, &vma))
		rothp_bench_fail("no text VMA in textprog %d", tp->pid);
	return vma.start + (p->blob_off - vma.offset);
}

/* Make the text of a started textprog what mode says; returns the ms it took. */
static double make_mode(struct textproc *tp, enum mode m)
{
	char reply[128];
	double t0, us;
	int rc, err;

	run_all(tp);
	t0 = rothp_now();
	switch (m) {
	case MODE_4K:
		cmd_ok(tp, "nohuge", reply, sizeof(reply), "nohuge 0 ");
		break;
	case MODE_FILE:
		cmd_ok(tp, "collapse", reply, sizeof(reply), "collapse ");
		if (sscanf(reply, "collapse %d %d", &rc, &err) != 2 || rc)
			rothp_bench_fail("MADV_COLLAPSE of the text: %s", strerror(err));
		break;
	case MODE_COPY:
		cmd_ok(tp, "dance", reply, sizeof(reply), "dance ");
		if (sscanf(reply, "dance %d %d %lf", &rc, &err, &us) != 3 || rc)
			rothp_bench_fail("copy dance: %s", strerror(err));
		/* The process's own timing, without the pipe's round trip. */
		run_all(tp);
		return us / 1000;
	}
	t0 = (rothp_now() - t0) * 1000;
	run_all(tp);
	return t0;
}

/*
 * Check that the nr blocks from base are backed as mode m says; fills map
 * ('H' PMD-mapped, 'p' not). 0 if so; -1, saying why, if not.
 */
static int check_backing(struct textproc *tp, const struct prog *p, enum mode m,
			 unsigned long base, long nr, char *map)
{
	unsigned long end = base + nr * ROTHP_PMD_SIZE;
	struct rothp_vma vma;
	long huge, field;
	bool file;

	huge = pmd_map(tp->pid, base, nr, map);
	if (huge < 0 || rothp_find_vma(tp->pid, base, &vma)) {
		printf("# backing: cannot read pagemap or maps of %d: %s\n", tp->pid,
		       strerror(errno));
		return -1;
	}
	file = vma.inode == p->st.st_ino && !strcmp(vma.path, p->path);
	if (vma.end < end) {
		printf("# backing: VMA %lx-%lx does not hold the span %lx-%lx\n", vma.start,
		       vma.end, base, end);
		return -1;
	}
	field = rothp_smaps_field(tp->pid, base, m == MODE_COPY ? "AnonHugePages" :
							      "FilePmdMapped");
	switch (m) {
	case MODE_4K:
		if (huge || !file || field != 0) {
			printf("# backing: 4k claimed, %ld of %ld blocks PMD-mapped, file %d, ",
			       huge, nr, file);
			printf("FilePmdMapped %ld\n", field);
			return -1;
		}
		return 0;
	case MODE_FILE:
	case MODE_COPY:
		if (huge != nr || file != (m == MODE_FILE) ||
		    field < nr * (long)ROTHP_PMD_SIZE) {
			printf("# backing: %s claimed, %ld of %ld blocks PMD-mapped, VMA '%s', ",
			       mode_name[m], huge, nr, vma.path);
			printf("%s %ld kB\n", m == MODE_COPY ? "AnonHugePages" : "FilePmdMapped",
			       field / 1024);
			return -1;
		}
		return 0;
	}
	return -1;
}

static uint64_t new_seed(void)
{
	uint64_t s = (uint64_t)(rothp_now() * 1e9) ^ ((uint64_t)getpid() << 32);

	return rothp_rand64(&s);
}

/* One mode of the sweep: a fresh textprog_big, every span. */
static void sweep(enum mode m)
{
	unsigned long base, span, max = big.pages * ROTHP_STUB_SIZE;
	long nr = (max + ROTHP_PMD_SIZE - 1) / ROTHP_PMD_SIZE, pages, nspan;
	double med, min, setup;
	char *map = malloc(nr + 1), *map2 = malloc(nr + 1);
	char cmd[128], reply[128], hash[32];
	struct textproc tp;
	uint64_t seed;
	int ok;

	if (!map || !map2)
		rothp_bench_fail("malloc");
	rothp_bench_thp_set("enabled", m == MODE_4K ? "never" : "madvise");
	rothp_bench_fresh_cache(big.path, NULL);
	if (textproc_start(&tp, big.path, "none"))
		rothp_bench_fail("cannot start %s", big.path);
	base = blob_addr(&tp, &big);
	setup = make_mode(&tp, m);
	say("itlb %s: text ready in %.1f ms", mode_name[m], setup);
	if (m != MODE_4K)
		printf("BENCH huge_text_setup_big_ms%s %.1f ms\n", m == MODE_COPY ? "@copy" : "",
		       setup);
	for (span = SPAN_MIN; span <= max; span *= SPAN_STEP) {
		pages = span / ROTHP_STUB_SIZE;
		nspan = (span + ROTHP_PMD_SIZE - 1) / ROTHP_PMD_SIZE;
		seed = new_seed();
		if (check_backing(&tp, &big, m, base, nspan, map)) {
			printf("# refused: itlb %s span %lu: backing before the run\n",
			       mode_name[m], span);
			refused++;
			continue;
		}
		snprintf(cmd, sizeof(cmd), "chain %" PRIu64 " %ld %ld %d", seed, pages,
			 CHAIN_CALLS, CHAIN_REPS);
		if (textproc_cmd(&tp, cmd, reply, sizeof(reply)) ||
		    sscanf(reply + strlen(cmd), " %d %lf %lf %31s", &ok, &med, &min, hash) != 4 ||
		    !ok)
			rothp_bench_fail("itlb %s span %lu: '%s' replied '%s'", mode_name[m], span,
					 cmd, reply);
		if (check_backing(&tp, &big, m, base, nspan, map2) || strcmp(map, map2)) {
			printf("# refused: itlb %s span %lu: backing changed during the run\n",
			       mode_name[m], span);
			refused++;
			continue;
		}
		printf("ITLB run %s %lu %" PRIu64 " %ld %ld %.3f %.3f %s %#lx %s\n", mode_name[m],
		       span, seed, pages, CHAIN_CALLS, med, min, hash, base, map);
		say("itlb %s span %lu KiB: %.1f ns/call (wall time)", mode_name[m], span >> 10,
			 med);
	}
	if (textproc_stop(&tp))
		rothp_bench_fail("textprog did not exit cleanly");
	free(map);
	free(map2);
}

/* Blocks of p's text page cache that are one PMD-sized folio; resident kB. */
static long cache_huge(const struct prog *p, off_t off, long nr, long *resident_kb)
{
	long pages, huge = rothp_cache_huge(p->path, off, nr, &pages);

	if (huge < 0)
		rothp_bench_fail("cannot probe the page cache of %s", p->path);
	if (resident_kb)
		*resident_kb = pages * (ROTHP_PAGE_SIZE >> 10);
	return huge;
}

static void collapse_cost(void)
{
	double t[COLLAPSE_RUNS], m[MEMCPY_RUNS], t0, per, cp;
	struct rothp_elf elf;
	long nr, huge;
	size_t len;
	char *p, *src, *dst;
	int r, err;

	if (rothp_elf_read(big.path, &elf))
		rothp_bench_fail("%s: %s", big.path, strerror(errno));
	rothp_bench_thp_set("enabled", "madvise");
	for (r = 0; r < COLLAPSE_RUNS; r++) {
		rothp_bench_fresh_cache(big.path, NULL);
		p = rothp_elf_map_text(big.path, true, &len);
		if (p == MAP_FAILED)
			rothp_bench_fail("mapping the 2 MiB blocks of %s: %s", big.path,
					 strerror(errno));
		nr = len / ROTHP_PMD_SIZE;
		huge = cache_huge(&big, rothp_elf_text_block_offset(&elf), nr, NULL);
		if (huge)
			rothp_bench_fail("collapse: %ld blocks huge in a fresh page cache", huge);
		t0 = rothp_now();
		if (rothp_madv_collapse(p, len, &err))
			rothp_bench_fail("collapse: MADV_COLLAPSE of %zu MiB: %s", len >> 20,
					 strerror(err));
		t[r] = rothp_now() - t0;
		huge = cache_huge(&big, rothp_elf_text_block_offset(&elf), nr, NULL);
		munmap(p, len);
		if (huge != nr)
			rothp_bench_fail("collapse: %ld of %ld blocks huge after MADV_COLLAPSE", huge,
					 nr);
		t[r] = t[r] * 1e6 / nr;
		printf("# collapse run %d: %ld blocks, %.1f us per block\n", r + 1, nr, t[r]);
	}
	per = rothp_median(t, COLLAPSE_RUNS);

	src = aligned_alloc(ROTHP_PMD_SIZE, ROTHP_PMD_SIZE);
	dst = aligned_alloc(ROTHP_PMD_SIZE, ROTHP_PMD_SIZE);
	if (!src || !dst)
		rothp_bench_fail("malloc");
	memset(src, 0x5a, ROTHP_PMD_SIZE);
	memset(dst, 0, ROTHP_PMD_SIZE);
	for (r = 0; r < 3; r++)
		memcpy(dst, src, ROTHP_PMD_SIZE);
	for (r = 0; r < MEMCPY_RUNS; r++) {
		t0 = rothp_now();
		memcpy(dst, src, ROTHP_PMD_SIZE);
		__asm__ volatile("" : : "r"(dst) : "memory");
		m[r] = (rothp_now() - t0) * 1e6;
	}
	cp = rothp_median(m, MEMCPY_RUNS);
	free(src);
	free(dst);
	printf("BENCH collapse_us_per_2m %.1f us\n", per);
	printf("BENCH memcpy_us_per_2m %.1f us\n", cp);
	printf("BENCH collapse_over_memcpy %.2f x\n", per / cp);
	say("collapse: %.1f us per 2 MiB, memcpy %.1f us", per, cp);
}

/* Resident bytes of a whole file in the page cache (mincore). */
static long file_cache_kb(const struct prog *p)
{
	double frac;
	void *m;
	int fd = open(p->path, O_RDONLY);

	if (fd < 0)
		rothp_bench_fail("%s: %s", p->path, strerror(errno));
	m = mmap(NULL, p->st.st_size, PROT_READ, MAP_SHARED, fd, 0);
	close(fd);
	if (m == MAP_FAILED)
		rothp_bench_fail("mmap %s: %s", p->path, strerror(errno));
	frac = rothp_resident_fraction(m, p->st.st_size);
	munmap(m, p->st.st_size);
	return (long)(frac * p->st.st_size / 1024 + 0.5);
}

/* NPROC textprogs with huge text in mode m: what they and the cache hold. */
static void measure_memory(enum mode m)
{
	const char *sfx = m == MODE_COPY ? "@copy" : "";
	struct textproc tp[NPROC];
	long pss = 0, rss = 0, anon = 0, pmd = 0, nr;
	unsigned long start;
	double first = 0, next = 0, ms;
	char map[64];
	int i;

	rothp_bench_thp_set("enabled", "madvise");
	rothp_bench_fresh_cache(small.path, NULL);
	for (i = 0; i < NPROC; i++) {
		if (textproc_start(&tp[i], small.path, "none"))
			rothp_bench_fail("cannot start %s", small.path);
		ms = make_mode(&tp[i], m);
		if (i)
			next += ms / (NPROC - 1);
		else
			first = ms;
		start = ROTHP_ALIGN_UP(tp[i].start, ROTHP_PMD_SIZE);
		nr = (ROTHP_ALIGN_DOWN(tp[i].end, ROTHP_PMD_SIZE) - start) / ROTHP_PMD_SIZE;
		if (nr < 1 || nr >= (long)sizeof(map) ||
		    check_backing(&tp[i], &small, m, start, nr, map))
			rothp_bench_fail("memory %s: process %d's text is not huge", mode_name[m],
					 i + 1);
	}
	for (i = 0; i < NPROC; i++) {
		pss += rothp_rollup_field(tp[i].pid, "Pss");
		rss += rothp_rollup_field(tp[i].pid, "Rss");
		anon += rothp_rollup_field(tp[i].pid, "AnonHugePages");
		pmd += rothp_rollup_field(tp[i].pid, "FilePmdMapped");
	}
	printf("BENCH mem_%dproc_pss_kb%s %ld kB\n", NPROC, sfx, pss >> 10);
	printf("BENCH mem_%dproc_rss_kb%s %ld kB\n", NPROC, sfx, rss >> 10);
	printf("BENCH mem_%dproc_anon_huge_kb%s %ld kB\n", NPROC, sfx, anon >> 10);
	printf("BENCH mem_%dproc_file_pmd_kb%s %ld kB\n", NPROC, sfx, pmd >> 10);
	printf("BENCH mem_file_cache_kb%s %ld kB\n", sfx, file_cache_kb(&small));
	printf("BENCH huge_text_setup_first_ms%s %.2f ms\n", sfx, first);
	printf("BENCH huge_text_setup_next_ms%s %.2f ms\n", sfx, next);
	for (i = 0; i < NPROC; i++)
		if (textproc_stop(&tp[i]))
			rothp_bench_fail("textprog did not exit cleanly");
	say("memory %s: %d processes, Pss %ld kB in all", mode_name[m], NPROC, pss >> 10);
}

/* A quarter of the text's pages read, then MADV_COLLAPSE: page cache of it. */
static void partly_used(void)
{
	long nr = small.pages * ROTHP_STUB_SIZE / ROTHP_PMD_SIZE, before, after, huge;
	char reply[128], cmd[32], want[32];
	struct textproc tp;
	int rc, err;

	rothp_bench_thp_set("enabled", "madvise");
	rothp_bench_fresh_cache(NULL, NULL);
	if (textproc_start(&tp, small.path, "none"))
		rothp_bench_fail("cannot start %s", small.path);
	cmd_ok(&tp, "random", reply, sizeof(reply), "random 0 ");
	snprintf(cmd, sizeof(cmd), "touch %d", PARTIAL_STRIDE);
	snprintf(want, sizeof(want), "touch %d 1 ", PARTIAL_STRIDE);
	cmd_ok(&tp, cmd, reply, sizeof(reply), want);
	cache_huge(&small, small.blob_off, nr, &before);
	cmd_ok(&tp, "collapse", reply, sizeof(reply), "collapse ");
	if (sscanf(reply, "collapse %d %d", &rc, &err) != 2)
		rothp_bench_fail("partial: MADV_COLLAPSE: no reply");
	huge = cache_huge(&small, small.blob_off, nr, &after);
	if (textproc_stop(&tp))
		rothp_bench_fail("textprog did not exit cleanly");
	printf("# partial: every %dth stub of %ld run; MADV_COLLAPSE rc %d (%s)\n",
	       PARTIAL_STRIDE, small.pages, rc, rc ? strerror(err) : "ok");
	printf("BENCH partial_text_cache_before_kb %ld kB\n", before);
	printf("BENCH partial_text_cache_after_kb %ld kB\n", after);
	printf("BENCH partial_text_blocks_huge %ld blocks\n", huge);
	printf("BENCH partial_text_blocks %ld blocks\n", nr);
	say("partial: page cache of the blocks %ld kB before, %ld kB after MADV_COLLAPSE",
		 before, after);
}

/* Does maps name the file at the stubs, and does a uprobe on the file fire? */
static void check_observable(enum mode m)
{
	const char *sfx = m == MODE_COPY ? "@copy" : "";
	struct rothp_vma vma;
	struct textproc tp;
	unsigned long addr;
	long hits, calls;
	bool named;

	rothp_bench_thp_set("enabled", "madvise");
	rothp_bench_fresh_cache(small.path, NULL);
	if (textproc_start(&tp, small.path, "none"))
		rothp_bench_fail("cannot start %s", small.path);
	make_mode(&tp, m);
	addr = blob_addr(&tp, &small) + PROBE_STUB * ROTHP_STUB_SIZE;
	if (rothp_find_vma(tp.pid, addr, &vma))
		rothp_bench_fail("no VMA at %#lx", addr);
	named = !strcmp(vma.path, small.path) && vma.inode == small.st.st_ino;
	printf("# observability %s: maps at stub %d: %lx-%lx %s '%s'\n", mode_name[m], PROBE_STUB,
	       vma.start, vma.end, vma.perms, vma.path);
	printf("BENCH text_maps_names_file%s %d flag\n", sfx, named);

	rothp_uprobe_remove(UPROBE_NAME);
	if (rothp_uprobe_add(UPROBE_NAME, small.path,
			     small.blob_off + PROBE_STUB * ROTHP_STUB_SIZE, false)) {
		printf("# observability: cannot set a uprobe (CONFIG_UPROBE_EVENTS?): %s\n",
		       strerror(errno));
	} else {
		if (textproc_run(&tp, &calls) != 1)
			rothp_bench_fail("textprog's stubs do not run with the uprobe");
		hits = rothp_uprobe_hits(UPROBE_NAME, small.path);
		rothp_uprobe_remove(UPROBE_NAME);
		printf("# observability %s: uprobe on file offset %#lx: %ld hits after a run\n",
		       mode_name[m], (unsigned long)(small.blob_off + PROBE_STUB * ROTHP_STUB_SIZE),
		       hits);
		printf("BENCH uprobe_fires%s %d flag\n", sfx, hits > 0);
	}
	if (textproc_stop(&tp))
		rothp_bench_fail("textprog did not exit cleanly");
}

/*
 * The hypervisor's CPUID signature ("TCGTCGTCGTCG", "KVMKVMKVM"), or "none".
 * arm64 has no CPUID and no such signature a program can read: "unknown"
 * there (the report takes the accelerator from qemu.cmd in any case).
 */
#if defined(__x86_64__)
static void hypervisor(char *sig)
{
	unsigned int a, b, c, d;

	strcpy(sig, "none");
	__cpuid(1, a, b, c, d);
	if (!(c & (1U << 31)))
		return;
	__cpuid(0x40000000, a, b, c, d);
	memcpy(sig, &b, 4);
	memcpy(sig + 4, &c, 4);
	memcpy(sig + 8, &d, 4);
	sig[12] = '\0';
	if (!sig[0])
		strcpy(sig, "unknown");
	for (a = 0; sig[a]; a++)
		if (sig[a] <= ' ')
			sig[a] = '_';
}
#else
static void hypervisor(char *sig)
{
	strcpy(sig, "unknown");
}
#endif

int main(int argc, char **argv)
{
	const char *dir = rothp_bench_start(argc, argv);
	struct utsname u;
	char sig[16];

	prog_init(&big, dir, "textprog_big");
	prog_init(&small, dir, "textprog");
	uname(&u);
	hypervisor(sig);
	printf("# kernel %s; %s: %ld stubs; %s: %ld stubs\n", u.release, big.path, big.pages,
	       small.path, small.pages);
	printf("ITLB accel %s\n", sig);

	sweep(MODE_4K);
	sweep(MODE_FILE);
	sweep(MODE_COPY);
	collapse_cost();
	measure_memory(MODE_FILE);
	measure_memory(MODE_COPY);
	partly_used();
	check_observable(MODE_FILE);
	check_observable(MODE_COPY);
	if (refused)
		rothp_bench_fail("%d iTLB runs refused: their backing was not what they claim",
				 refused);
	return 0;
}
