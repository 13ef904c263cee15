// SPDX-License-Identifier: GPL-2.0
/*
 * bench_write_open <dir>: what opening a file for write costs when its page
 * cache holds read-only file THPs.
 *
 * Each of RUNS runs writes a 64 MiB file of pseudo-random bytes in <dir>,
 * drops the page cache, maps the file r-x private at a 2 MiB-aligned
 * address and MADV_COLLAPSEs it, then unmaps it. It then opens the file
 * O_RDWR and reads all of it back with pread() in 1 MiB chunks, timing the
 * open() and the preads (not the residency check or the hashing), and
 * checks that the bytes read are the bytes written. Right after the open, a
 * fresh MAP_SHARED read-only mapping, never touched, tells through mincore()
 * how much of the file's page cache the open left.
 *
 * Baseline 6.12's do_dentry_open() (fs/open.c) truncates the whole page
 * cache of a file opened for write while filemap_nr_thps() is not 0 (ext4:
 * no large folio support), so everything is read from the disk again; the
 * rothp series keeps the page cache and its THPs, splitting one only where
 * a write reaches it.
 *
 * Before the open, the same preads from the collapsed cache with no writer
 * are timed too: write_open_floor_s, what no kernel can beat on this
 * machine (under TCG, copying to user memory is most of it).
 *
 * Then, with the file mapped r-x private again (its THPs PMD-mapped, on the
 * series), it opens the file O_RDWR, maps it MAP_SHARED read-write and
 * stores into each 2 MiB block once, each store the byte already there:
 * shared_write_fault_us times each of those first stores, a write fault
 * that on the series splits the block's THP first (the block was read back
 * above, so neither kernel reads the disk for it).
 *
 * Prints "BENCH write_open_reread_s <s> s", "BENCH write_open_floor_s <s>
 * s", "BENCH write_open_cache_kept <fraction> ratio" and "BENCH
 * shared_write_fault_us <us> us", the medians of the runs (of every store,
 * for the last), and "# ..." notes. Exits 1, printing "# error: ..." and no BENCH
 * line, when a run could not be made.
 */
#define _GNU_SOURCE
#include <errno.h>
#include <fcntl.h>
#include <stdarg.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>
#include <sys/mman.h>
#include <sys/utsname.h>

#include "rothp_util.h"

#define FILE_NAME	"bench_write_open.dat"
#define FILE_SIZE	(64UL << 20)
#define CHUNK		(1UL << 20)
#define RUNS		3
#define SEED		0x726f746870ULL		/* "rothp" */

/* A word at a time: FNV-1a over bytes is slow under TCG. */
#define HASH_BASIS	0xcbf29ce484222325ULL
#define HASH_PRIME	0x100000001b3ULL

static char path[PATH_MAX];
static uint64_t *buf;

/* Pseudo-random words, from SEED: the same bytes in every run. */
static void fill(uint64_t *w, size_t len, uint64_t *state)
{
	size_t i;

	for (i = 0; i < len / sizeof(*w); i++)
		w[i] = rothp_rand64(state);
}

static uint64_t hash_words(uint64_t h, const uint64_t *w, size_t len)
{
	size_t i;

	for (i = 0; i < len / sizeof(*w); i++) {
		h ^= w[i];
		h *= HASH_PRIME;
		h ^= h >> 32;
	}
	return h;
}

/* Write the file afresh, fsync it; return the hash of what was written. */
static uint64_t create_file(void)
{
	uint64_t state = SEED, h = HASH_BASIS;
	off_t off;
	int fd;

	/* Removed at the end of the run, or at exit and on SIGINT/SIGTERM. */
	if (rothp_scratch_add(path))
		rothp_bench_fail("%s: %s", path, strerror(errno));
	unlink(path);
	fd = open(path, O_WRONLY | O_CREAT | O_EXCL | O_CLOEXEC, 0644);
	if (fd < 0)
		rothp_bench_fail("create %s: %s", path, strerror(errno));
	for (off = 0; off < (off_t)FILE_SIZE; off += CHUNK) {
		fill(buf, CHUNK, &state);
		h = hash_words(h, buf, CHUNK);
		if (rothp_pwrite_full(fd, buf, CHUNK, off))
			rothp_bench_fail("write %s: %s", path, strerror(errno));
	}
	if (fsync(fd))
		rothp_bench_fail("fsync %s: %s", path, strerror(errno));
	if (close(fd))
		rothp_bench_fail("close %s: %s", path, strerror(errno));
	return h;
}

/* Map the file r-x private 2 MiB-aligned, MADV_COLLAPSE it, unmap it. */
static void collapse_file(void)
{
	long pmd;
	int fd, rc, err;
	char *p;

	fd = open(path, O_RDONLY | O_CLOEXEC);
	if (fd < 0)
		rothp_bench_fail("open %s: %s", path, strerror(errno));
	p = rothp_map_aligned(fd, FILE_SIZE, 0, 0, PROT_READ | PROT_EXEC);
	if (p == MAP_FAILED)
		rothp_bench_fail("mmap %s: %s", path, strerror(errno));
	close(fd);
	rc = rothp_madv_collapse(p, FILE_SIZE, &err);
	if (rc)
		printf("# MADV_COLLAPSE: %s (%d)\n", strerror(err), err);
	pmd = rothp_file_pmd_mapped(getpid(), (unsigned long)p);
	if (pmd < 0)
		rothp_bench_fail("cannot read FilePmdMapped of the mapping from /proc/self/smaps");
	printf("# collapsed: FilePmdMapped %ld kB of %lu\n", pmd / 1024, FILE_SIZE >> 10);
	if (!pmd)
		rothp_bench_fail("nothing PMD-mapped after MADV_COLLAPSE%s%s", rc ? ": " : "",
		     rc ? strerror(err) : "");
	munmap(p, FILE_SIZE);
}

/*
 * Open the file for write and read it all back: *secs is the time open()
 * and the preads took, *kept the fraction of the page cache there after the
 * open. Fails unless what is read hashes to hash.
 */
/* pread() all of the file in CHUNKs: the time the preads took; hash. */
static double read_all(int fd, uint64_t *hash)
{
	uint64_t h = HASH_BASIS;
	double t, secs = 0;
	off_t off;

	for (off = 0; off < (off_t)FILE_SIZE; off += CHUNK) {
		t = rothp_now();
		if (rothp_pread_full(fd, buf, CHUNK, off))
			rothp_bench_fail("pread %s: %s", path, strerror(errno));
		secs += rothp_now() - t;
		h = hash_words(h, buf, CHUNK);
	}
	*hash = h;
	return secs;
}

static void reread(uint64_t hash, double *secs, double *kept, double *floor_s)
{
	double t, t_open, t_read;
	uint64_t h;
	void *m;
	int fd;

	/* The floor: the same preads from the collapsed cache, no writer. */
	fd = open(path, O_RDONLY | O_CLOEXEC);
	if (fd < 0)
		rothp_bench_fail("open %s: %s", path, strerror(errno));
	*floor_s = read_all(fd, &h);
	close(fd);
	printf("# preads of the collapsed cache before the open %.6f s\n", *floor_s);

	t = rothp_now();
	fd = open(path, O_RDWR | O_CLOEXEC);
	t_open = rothp_now() - t;
	if (fd < 0)
		rothp_bench_fail("open(O_RDWR) %s: %s", path, strerror(errno));

	m = mmap(NULL, FILE_SIZE, PROT_READ, MAP_SHARED, fd, 0);
	if (m == MAP_FAILED)
		rothp_bench_fail("mmap %s: %s", path, strerror(errno));
	*kept = rothp_resident_fraction(m, FILE_SIZE);
	if (*kept < 0)
		rothp_bench_fail("mincore %s: %s", path, strerror(errno));
	munmap(m, FILE_SIZE);

	t_read = read_all(fd, &h);
	close(fd);
	if (h != hash)
		rothp_bench_fail("read back hash %016llx, written %016llx", (unsigned long long)h,
		     (unsigned long long)hash);
	*secs = t_open + t_read;
	printf("# open(O_RDWR) %.6f s, preads %.6f s, cache kept %.4f\n", t_open, t_read,
	       *kept);
}

/* The file's PMD-sized blocks: 32 of 2 MiB on x86-64. */
#define NR_BLOCKS	(FILE_SIZE / ROTHP_PMD_SIZE)

/*
 * The first store into each 2 MiB block through a MAP_SHARED mapping, with
 * the file's r-x private mapping holding its THPs PMD-mapped meanwhile: the
 * microseconds of each store, in us[NR_BLOCKS]. Each store goes to the
 * second page of its block.
 */
static void shared_stores(double *us)
{
	volatile char *w;
	char *rx, c;
	long pmd;
	double t;
	int fd, b;

	fd = open(path, O_RDWR | O_CLOEXEC);
	if (fd < 0)
		rothp_bench_fail("open(O_RDWR) %s: %s", path, strerror(errno));
	rx = rothp_map_aligned(fd, FILE_SIZE, 0, 0, PROT_READ | PROT_EXEC);
	w = mmap(NULL, FILE_SIZE, PROT_READ | PROT_WRITE, MAP_SHARED, fd, 0);
	if (rx == MAP_FAILED || w == MAP_FAILED)
		rothp_bench_fail("mmap %s: %s", path, strerror(errno));
	for (b = 0; b < (int)NR_BLOCKS; b++)
		(void)*(volatile char *)(rx + b * ROTHP_PMD_SIZE);
	pmd = rothp_file_pmd_mapped(getpid(), (unsigned long)rx);
	printf("# before the stores: FilePmdMapped %ld kB of the r-x mapping\n",
	       pmd < 0 ? -1 : pmd / 1024);
	for (b = 0; b < (int)NR_BLOCKS; b++) {
		size_t off = b * ROTHP_PMD_SIZE + ROTHP_PAGE_SIZE;

		c = rx[off];
		t = rothp_now();
		w[off] = c;
		us[b] = (rothp_now() - t) * 1e6;
	}
	munmap((void *)w, FILE_SIZE);
	munmap(rx, FILE_SIZE);
	close(fd);
	printf("# first stores through MAP_SHARED: median %.1f us of %lu blocks\n",
	       rothp_median(us, NR_BLOCKS), NR_BLOCKS);
}

int main(int argc, char **argv)
{
	double secs[RUNS], kept[RUNS], floor_s[RUNS], *store_us;
	const char *fs;
	struct utsname u;
	uint64_t hash;
	int i, large;

	setvbuf(stdout, NULL, _IOLBF, 0);
	if (argc != 2)
		rothp_bench_fail("usage: %s <dir>", argv[0]);
	fs = rothp_fs_name(argv[1], &large);
	if (!strcmp(fs, "tmpfs"))
		rothp_bench_fail("%s is tmpfs: shmem THPs are not read-only file THPs", argv[1]);
	if (!rothp_hpage_pmd_size())
		rothp_bench_fail("no THP: cannot read %shpage_pmd_size", ROTHP_THP_SYSFS);
	if (!NR_BLOCKS)
		rothp_bench_fail("the %lu MiB file holds no block of the PMD size %lu MiB",
				 FILE_SIZE >> 20, ROTHP_PMD_SIZE >> 20);
	buf = malloc(CHUNK);
	store_us = calloc(RUNS * NR_BLOCKS, sizeof(*store_us));
	if (!buf || !store_us)
		rothp_bench_fail("out of memory");
	uname(&u);
	printf("# kernel %s, %lu MiB file in %s (%s), %d runs\n", u.release, FILE_SIZE >> 20,
	       argv[1], fs, RUNS);
	if (snprintf(path, sizeof(path), "%s/" FILE_NAME, argv[1]) >= (int)sizeof(path))
		rothp_bench_fail("path too long: %s", argv[1]);

	for (i = 0; i < RUNS; i++) {
		printf("# run %d\n", i + 1);
		hash = create_file();
		if (rothp_drop_caches())
			rothp_bench_fail("drop_caches: %s", strerror(errno));
		collapse_file();
		reread(hash, &secs[i], &kept[i], &floor_s[i]);
		shared_stores(&store_us[i * NR_BLOCKS]);
		rothp_scratch_remove(path);
	}

	printf("BENCH write_open_reread_s %.6f s\n", rothp_median(secs, RUNS));
	printf("BENCH write_open_floor_s %.6f s\n", rothp_median(floor_s, RUNS));
	printf("BENCH write_open_cache_kept %.4f ratio\n", rothp_median(kept, RUNS));
	printf("BENCH shared_write_fault_us %.1f us\n", rothp_median(store_us, RUNS * NR_BLOCKS));
	return 0;
}
