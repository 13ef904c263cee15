// SPDX-License-Identifier: GPL-2.0
/*
 * The core of the rothp helper library: time and polling, hashes, kernel
 * facts, numbers, CPUs, and rothp_test_init().
 */
#define _GNU_SOURCE
#include <errno.h>
#include <stdarg.h>
#include <sched.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>
#include <unistd.h>
#include <sys/statfs.h>
#include <sys/utsname.h>

#include <linux/magic.h>

#include "kinfo.h"
#include "kselftest.h"
#include "util_cache.h"
#include "util_core.h"
#include "util_elf.h"
#include "util_files.h"

#ifndef EXT4_SUPER_MAGIC
#define EXT4_SUPER_MAGIC	0xEF53
#endif
#ifndef XFS_SUPER_MAGIC
#define XFS_SUPER_MAGIC		0x58465342
#endif
#ifndef TMPFS_MAGIC
#define TMPFS_MAGIC		0x01021994
#endif

/* 64-bit FNV-1a; textprog and the tests must agree on it. */
#define FNV64_BASIS		0xcbf29ce484222325ULL
#define FNV64_PRIME		0x100000001b3ULL

double rothp_now(void)
{
	struct timespec ts;

	clock_gettime(CLOCK_MONOTONIC, &ts);
	return ts.tv_sec + ts.tv_nsec / 1e9;
}

/*
 * Call pred(arg) every interval_ms until it returns true or timeout_ms has
 * passed. Returns the milliseconds it took, or -1 on timeout.
 */
long rothp_wait_until(bool (*pred)(void *arg), void *arg, long timeout_ms, long interval_ms)
{
	double start = rothp_now();
	long elapsed;

	for (;;) {
		bool done = pred(arg);

		elapsed = (long)((rothp_now() - start) * 1000);
		if (done)
			return elapsed;
		if (elapsed >= timeout_ms)
			return -1;
		usleep(interval_ms * 1000);
	}
}

uint64_t rothp_hash_init(void)
{
	return FNV64_BASIS;
}

uint64_t rothp_hash_update(uint64_t hash, const void *buf, size_t len)
{
	const unsigned char *p = buf;
	size_t i;

	for (i = 0; i < len; i++) {
		hash ^= p[i];
		hash *= FNV64_PRIME;
	}
	return hash;
}

uint64_t rothp_hash(const void *buf, size_t len)
{
	return rothp_hash_update(rothp_hash_init(), buf, len);
}

/* Hash len bytes of fd from offset, read with pread(). */
int rothp_file_hash(int fd, off_t offset, size_t len, uint64_t *hash)
{
	uint64_t h = rothp_hash_init();
	char *buf = malloc(ROTHP_IO_CHUNK);
	ssize_t n;

	if (!buf)
		return -1;
	while (len) {
		n = pread(fd, buf, len < ROTHP_IO_CHUNK ? len : ROTHP_IO_CHUNK, offset);
		if (n <= 0) {
			if (!n)
				errno = EIO;	/* the file is shorter than asked */
			free(buf);
			return -1;
		}
		h = rothp_hash_update(h, buf, n);
		offset += n;
		len -= n;
	}
	free(buf);
	*hash = h;
	return 0;
}

/* The PMD size THP uses, in bytes; 0 if the kernel has no THP. */
unsigned long rothp_hpage_pmd_size(void)
{
	char buf[32];

	if (rothp_read_line(ROTHP_THP_SYSFS "hpage_pmd_size", buf, sizeof(buf)))
		return 0;
	return strtoul(buf, NULL, 10);
}

/*
 * The sizes are cached in plain statics: the tests' threads may race to
 * fill them, but only ever store the same value, relaxed.
 */
unsigned long rothp_page_size(void)
{
	static unsigned long cached;
	unsigned long size = __atomic_load_n(&cached, __ATOMIC_RELAXED);
	long v;

	if (size)
		return size;
	v = sysconf(_SC_PAGESIZE);
	if (v <= 0 || (v & (v - 1))) {
		fprintf(stderr, "rothp: sysconf(_SC_PAGESIZE) says %ld: no page size\n", v);
		exit(1);
	}
	size = v;
	__atomic_store_n(&cached, size, __ATOMIC_RELAXED);
	return size;
}

unsigned long rothp_pmd_size(void)
{
	static unsigned long cached;
	unsigned long size = __atomic_load_n(&cached, __ATOMIC_RELAXED);

	if (size)
		return size;
	size = rothp_hpage_pmd_size();
	if (!size || (size & (size - 1)) || size <= rothp_page_size()) {
		fprintf(stderr, "rothp: no PMD size: %shpage_pmd_size %s (a kernel without THP?)\n",
			ROTHP_THP_SYSFS, size ? "is not a power of two above the page size" :
			"cannot be read");
		exit(1);
	}
	__atomic_store_n(&cached, size, __ATOMIC_RELAXED);
	return size;
}

/*
 * Look name (e.g. "CONFIG_READ_ONLY_THP_FOR_FS") up in the running kernel's
 * config: in the file $ROTHP_KCONFIG names, if it is a config, else where
 * hugetext looks (rothp_kconfig_running()). Returns enum rothp_kconfig,
 * > 0 for set (=y or =m); src names where the answer came from.
 */
int rothp_kconfig(const char *name, char *src, size_t srclen)
{
	const char *env = getenv("ROTHP_KCONFIG");
	int ret;

	if (env && *env) {
		ret = rothp_kconfig_file(env, false, name);
		if (ret != ROTHP_KCONFIG_UNKNOWN) {
			snprintf(src, srclen, "%s", env);
			return ret;
		}
	}
	return rothp_kconfig_running("", NULL, name, src, srclen);
}

/*
 * Name the file system holding path, and say in *large_folios whether 6.12
 * gives its page cache large folio support: XFS does (fs/xfs/xfs_icache.c
 * calls mapping_set_folio_min_order()), tmpfs does (mm/shmem.c calls
 * mapping_set_large_folios()), ext4 does not (nothing in fs/ext4 does).
 * -1 when unknown. That matters because CONFIG_READ_ONLY_THP_FOR_FS bookkeeping
 * (filemap_nr_thps_inc() in include/linux/pagemap.h) skips such mappings.
 */
const char *rothp_fs_name(const char *path, int *large_folios)
{
	struct statfs fs;

	*large_folios = -1;
	if (statfs(path, &fs))
		return "unknown";
	switch ((unsigned long)fs.f_type) {
	case EXT4_SUPER_MAGIC:
		*large_folios = 0;
		return "ext4";
	case XFS_SUPER_MAGIC:
		*large_folios = 1;
		return "xfs";
	case TMPFS_MAGIC:
		*large_folios = 1;
		return "tmpfs";
	}
	return "other";
}

/*
 * Read a /proc/vmstat counter: 0 with *val set, or -1 with errno ENOENT if
 * this kernel has no such counter.
 */
int rothp_vmstat(const char *name, long *val)
{
	return rothp_field_read("/proc/vmstat", name, ' ', val);
}

/* A /proc/meminfo field in kB: 0 with *kb set, -1 if there is none. */
int rothp_meminfo(const char *name, long *kb)
{
	return rothp_field_read("/proc/meminfo", name, ':', kb);
}

/* Sort n doubles in place, ascending. */
static int cmp_double(const void *a, const void *b)
{
	double x = *(const double *)a, y = *(const double *)b;

	return (x > y) - (x < y);
}

void rothp_sort(double *v, int n)
{
	qsort(v, n, sizeof(*v), cmp_double);
}

/* The median of n doubles (sorts them). */
double rothp_median(double *v, int n)
{
	rothp_sort(v, n);
	return n % 2 ? v[n / 2] : (v[n / 2 - 1] + v[n / 2]) / 2;
}

/* splitmix64: the next 64-bit pseudo-random number of *state. */
uint64_t rothp_rand64(uint64_t *state)
{
	uint64_t z = (*state += 0x9e3779b97f4a7c15ULL);

	z = (z ^ (z >> 30)) * 0xbf58476d1ce4e5b9ULL;
	z = (z ^ (z >> 27)) * 0x94d049bb133111ebULL;
	return z ^ (z >> 31);
}

/* The CPUs this process may run on: sched_getaffinity(), at least 1. */
int rothp_nr_cpus(void)
{
	cpu_set_t set;

	if (sched_getaffinity(0, sizeof(set), &set))
		return 1;
	return CPU_COUNT(&set) ? CPU_COUNT(&set) : 1;
}

int rothp_spread(int index)
{
	cpu_set_t set, one;
	int cpu, n = 0;

	if (sched_getaffinity(0, sizeof(set), &set))
		return -1;
	if (!CPU_COUNT(&set)) {
		errno = EINVAL;
		return -1;
	}
	index %= CPU_COUNT(&set);
	for (cpu = 0; cpu < CPU_SETSIZE; cpu++) {
		if (!CPU_ISSET(cpu, &set))
			continue;
		if (n++ == index)
			break;
	}
	CPU_ZERO(&one);
	CPU_SET(cpu, &one);
	if (sched_setaffinity(0, sizeof(one), &one))
		return -1;
	return cpu;
}

static const char *test_init(int argc, char **argv, char *prog, size_t len, bool any_pmd)
{
	char src[PATH_MAX], why[PATH_MAX + 128];
	const char *dir, *fs;
	unsigned long pmd;
	struct utsname u;
	int large, cfg, fits;

	ksft_print_header();
	if (argc < 2)
		ksft_exit_fail_msg("usage: %s <dir holding textprog>\n", argv[0]);
	dir = argv[1];
	if (geteuid())
		ksft_exit_skip("needs root: it writes drop_caches and THP sysfs knobs\n");
	pmd = rothp_hpage_pmd_size();
	if (!pmd)
		ksft_exit_skip("no THP: cannot read %shpage_pmd_size\n", ROTHP_THP_SYSFS);
	cfg = rothp_kconfig("CONFIG_READ_ONLY_THP_FOR_FS", src, sizeof(src));
	if (!cfg)
		ksft_exit_skip("CONFIG_READ_ONLY_THP_FOR_FS is not set (%s)\n", src);
	if (cfg < 0)
		ksft_print_msg("%s: not checking CONFIG_READ_ONLY_THP_FOR_FS\n", src);
	fs = rothp_fs_name(dir, &large);
	if (!strcmp(fs, "tmpfs"))
		ksft_exit_skip("%s is tmpfs: shmem THPs are not read-only file THPs\n", dir);
	if (snprintf(prog, len, "%s/textprog", dir) >= (int)len)
		ksft_exit_fail_msg("path too long: %s\n", dir);
	if (access(prog, X_OK))
		ksft_exit_fail_msg("%s: %s\n", prog, strerror(errno));
	fits = rothp_elf_text_fits(prog, why, sizeof(why));
	if (fits < 0)
		ksft_exit_fail_msg("%s: %s\n", prog, strerror(errno));
	if (!fits && !any_pmd)
		ksft_exit_skip("%s\n", why);
	if (!fits)
		ksft_print_msg("%s\n", why);
	if (rothp_drop_caches())
		ksft_exit_fail_msg("drop_caches: %s\n", strerror(errno));
	uname(&u);
	ksft_print_msg("kernel %s, %s on %s\n", u.release, prog, fs);
	return dir;
}

const char *rothp_test_init(int argc, char **argv, char *prog, size_t len)
{
	return test_init(argc, argv, prog, len, false);
}

const char *rothp_test_init_any_pmd(int argc, char **argv, char *prog, size_t len)
{
	return test_init(argc, argv, prog, len, true);
}

int rothp_cases_plan(const struct rothp_case *cases, size_t n)
{
	int plan = 0;
	size_t i;

	for (i = 0; i < n; i++)
		plan += cases[i].nr;
	return plan;
}

const char *rothp_case_result(char *buf, size_t len, const struct rothp_case *c, int i, ...)
{
	size_t pre = 0;
	va_list ap;
	int n;

	if (i < 0 || i >= c->nr)
		return NULL;
	if (c->name) {
		n = snprintf(buf, len, "%s: ", c->name);
		if (n < 0 || (size_t)n >= len)
			return NULL;
		pre = n;
	}
	va_start(ap, i);
	n = vsnprintf(buf + pre, len - pre, c->results[i], ap);
	va_end(ap);
	if (n < 0 || (size_t)n >= len - pre)
		return NULL;
	return buf;
}
