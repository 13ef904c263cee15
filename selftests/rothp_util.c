// SPDX-License-Identifier: GPL-2.0
/*
 * Helpers shared by the rothp kselftests and textprog: /proc parsing,
 * eligibility of 2 MiB blocks, THP sysfs settings and sysctls, page cache
 * control, checksums, driving a textprog child over pipes, and where the ELF
 * loader puts a program's text.
 */
#define _GNU_SOURCE
#include <elf.h>
#include <errno.h>
#include <fcntl.h>
#include <poll.h>
#include <sched.h>
#include <signal.h>
#include <stdarg.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>
#include <unistd.h>
#include <sys/ioctl.h>
#include <sys/mman.h>
#include <sys/stat.h>
#include <sys/statfs.h>
#include <sys/sysmacros.h>
#include <sys/types.h>
#include <sys/utsname.h>
#include <sys/wait.h>

#include <linux/fs.h>
#include <linux/magic.h>

#include "kselftest.h"
#include "rothp_util.h"

#ifndef EXT4_SUPER_MAGIC
#define EXT4_SUPER_MAGIC	0xEF53
#endif
#ifndef XFS_SUPER_MAGIC
#define XFS_SUPER_MAGIC		0x58465342
#endif
#ifndef TMPFS_MAGIC
#define TMPFS_MAGIC		0x01021994
#endif

#define THP_SYSFS		"/sys/kernel/mm/transparent_hugepage/"
#define SYSCTL_DIR		"/proc/sys/"
#define DROP_CACHES		"/proc/sys/vm/drop_caches"
#define IO_CHUNK		(1UL << 20)

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

/* Parse a /proc/PID/maps line (or an smaps header line); 0 if it is one. */
static int parse_maps_line(const char *line, struct rothp_vma *vma)
{
	size_t len;
	int pos = 0;

	if (sscanf(line, "%lx-%lx %4s %lx %x:%x %lu %n", &vma->start, &vma->end,
		   vma->perms, &vma->offset, &vma->dev_major, &vma->dev_minor,
		   &vma->inode, &pos) != 7 || !pos)
		return -1;

	len = strcspn(line + pos, "\n");
	if (len >= sizeof(vma->path))
		len = sizeof(vma->path) - 1;
	memcpy(vma->path, line + pos, len);
	vma->path[len] = '\0';
	return 0;
}

static FILE *open_proc(pid_t pid, const char *name)
{
	char path[64];

	snprintf(path, sizeof(path), "/proc/%d/%s", (int)pid, name);
	return fopen(path, "r");
}

struct vma_match {
	unsigned long addr;	/* a VMA containing addr, or else */
	const char *path;	/* the first VMA mapping path ... */
	const char *perms;	/* ... with these perms, unless NULL */
};

static bool vma_matches(const struct rothp_vma *vma, const struct vma_match *m)
{
	if (!m->path)
		return m->addr >= vma->start && m->addr < vma->end;
	return !strcmp(vma->path, m->path) && (!m->perms || !strcmp(vma->perms, m->perms));
}

static int find_vma(pid_t pid, const struct vma_match *m, struct rothp_vma *vma)
{
	FILE *fp = open_proc(pid, "maps");
	char *line = NULL;
	size_t cap = 0;
	int ret = -1;

	if (!fp)
		return -1;
	while (getline(&line, &cap, fp) > 0) {
		if (!parse_maps_line(line, vma) && vma_matches(vma, m)) {
			ret = 0;
			break;
		}
	}
	free(line);
	fclose(fp);
	return ret;
}

/* The VMA of pid that contains addr. */
int rothp_find_vma(pid_t pid, unsigned long addr, struct rothp_vma *vma)
{
	struct vma_match m = { .addr = addr };

	return find_vma(pid, &m, vma);
}

/* The first VMA of pid mapping path, with the given perms unless NULL. */
int rothp_find_vma_path(pid_t pid, const char *path, const char *perms, struct rothp_vma *vma)
{
	struct vma_match m = { .path = path, .perms = perms };

	return find_vma(pid, &m, vma);
}

/* FilePmdMapped of the VMA of pid containing addr, in bytes; -1 on error. */
long rothp_file_pmd_mapped(pid_t pid, unsigned long addr)
{
	return rothp_smaps_field(pid, addr, "FilePmdMapped");
}

/*
 * The 2 MiB blocks of a file VMA that can be PMD-mapped: aligned in virtual
 * memory, wholly inside the VMA, at a 2 MiB-aligned file offset (the kernel
 * requires vaddr and offset congruent, thp_vma_suitable_order()), and ending
 * within the file (collapse cannot read a folio past EOF).
 */
long rothp_eligible_blocks(const struct rothp_vma *vma, off_t file_size)
{
	unsigned long addr, off;
	long n = 0;

	for (addr = ROTHP_ALIGN_UP(vma->start, ROTHP_PMD_SIZE);
	     addr + ROTHP_PMD_SIZE <= vma->end && addr + ROTHP_PMD_SIZE > addr;
	     addr += ROTHP_PMD_SIZE) {
		off = vma->offset + (addr - vma->start);
		if (off % ROTHP_PMD_SIZE)
			continue;
		if (off + ROTHP_PMD_SIZE > (unsigned long)file_size)
			continue;
		n++;
	}
	return n;
}

long rothp_vma_eligible_blocks(const struct rothp_vma *vma)
{
	struct stat st;

	if (vma->path[0] != '/' || stat(vma->path, &st))
		return -1;
	if (st.st_ino != vma->inode)
		return -1;	/* replaced or deleted since it was mapped */
	return rothp_eligible_blocks(vma, st.st_size);
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
	char *buf = malloc(IO_CHUNK);
	ssize_t n;

	if (!buf)
		return -1;
	while (len) {
		n = pread(fd, buf, len < IO_CHUNK ? len : IO_CHUNK, offset);
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

/* Fraction of the pages of [addr, addr+len) in the page cache, or -1. */
double rothp_resident_fraction(void *addr, size_t len)
{
	size_t i, pages = (len + ROTHP_PAGE_SIZE - 1) / ROTHP_PAGE_SIZE, in = 0;
	unsigned char *vec = malloc(pages ? pages : 1);

	if (!vec)
		return -1;
	if (mincore(addr, len, vec)) {
		free(vec);
		return -1;
	}
	for (i = 0; i < pages; i++)
		in += vec[i] & 1;
	free(vec);
	return pages ? (double)in / pages : 0;
}

/*
 * madvise(MADV_COLLAPSE), retried a few times on EAGAIN, which means a page
 * was transiently busy (madvise_collapse_errno() in mm/khugepaged.c). Returns
 * the last madvise() result; *err is its errno, or 0. Notes go to stderr, as
 * textprog's stdout is its reply pipe.
 */
int rothp_madv_collapse(void *addr, size_t len, int *err)
{
	double end = rothp_now() + ROTHP_COLLAPSE_RETRY_S;
	int rc, tries = 0;

	/*
	 * EAGAIN is MADV_COLLAPSE's "transient, try again": a folio was
	 * locked, off the LRU or had an extra reference, typically from
	 * a fault of a task running the text on another CPU while the
	 * range was being unmapped. Retry for a while, as a caller should.
	 */
	for (;;) {
		rc = madvise(addr, len, MADV_COLLAPSE);
		*err = rc ? errno : 0;
		if (!rc || *err != EAGAIN || rothp_now() >= end)
			break;
		tries++;
		usleep(50 * 1000);
	}
	if (tries)
		fprintf(stderr, "MADV_COLLAPSE of %p: EAGAIN %d time(s), %s\n", addr, tries,
			rc ? "giving up" : "then done");
	return rc;
}

/*
 * Map len bytes of fd from offset, MAP_PRIVATE, at a 2 MiB-aligned address
 * plus misalign (a multiple of the page size). The address is found by
 * reserving a PROT_NONE area large enough, mapping over it with MAP_FIXED,
 * and unmapping what is left of the reservation.
 */
void *rothp_map_aligned(int fd, size_t len, off_t offset, size_t misalign, int prot)
{
	size_t span = len + misalign + ROTHP_PMD_SIZE;
	char *base, *addr, *p, *end;

	base = mmap(NULL, span, PROT_NONE, MAP_PRIVATE | MAP_ANONYMOUS | MAP_NORESERVE, -1, 0);
	if (base == MAP_FAILED)
		return MAP_FAILED;
	addr = (char *)ROTHP_ALIGN_UP((unsigned long)base, ROTHP_PMD_SIZE) + misalign;
	p = mmap(addr, len, prot, MAP_PRIVATE | MAP_FIXED, fd, offset);
	if (p == MAP_FAILED) {
		int err = errno;

		munmap(base, span);
		errno = err;
		return MAP_FAILED;
	}
	end = addr + ROTHP_ALIGN_UP(len, ROTHP_PAGE_SIZE);
	if (addr > base)
		munmap(base, addr - base);
	if (base + span > end)
		munmap(end, base + span - end);
	return p;
}

/* Copy src to dst (created or truncated, mode 0755), then fsync dst. */
int rothp_copy_file(const char *src, const char *dst)
{
	int in, out, ret = -1;
	char *buf = malloc(IO_CHUNK);
	ssize_t n, w;

	if (!buf)
		return -1;
	in = open(src, O_RDONLY);
	if (in < 0)
		goto out_free;
	out = open(dst, O_WRONLY | O_CREAT | O_TRUNC, 0755);
	if (out < 0)
		goto out_in;
	while ((n = read(in, buf, IO_CHUNK)) > 0) {
		for (w = 0; w < n; ) {
			ssize_t r = write(out, buf + w, n - w);

			if (r <= 0)
				goto out_out;
			w += r;
		}
	}
	if (!n && !fsync(out))
		ret = 0;
out_out:
	if (close(out))
		ret = -1;
out_in:
	close(in);
out_free:
	free(buf);
	return ret;
}

/*
 * Read a whole file so its page cache holds small folios. POSIX_FADV_RANDOM
 * sets FMODE_RANDOM, so page_cache_sync_ra() (mm/readahead.c) only does
 * force_page_cache_ra() of the bytes asked for, in folios of the mapping's
 * minimum order, never the growing large folios of ordinary readahead.
 */
int rothp_prewarm(const char *path)
{
	char buf[64 * 1024];
	ssize_t n;
	int fd;

	fd = open(path, O_RDONLY);
	if (fd < 0)
		return -1;
	posix_fadvise(fd, 0, 0, POSIX_FADV_RANDOM);
	while ((n = read(fd, buf, sizeof(buf))) > 0)
		;
	close(fd);
	return n ? -1 : 0;
}

/* Write back dirty data, then drop clean page cache, dentries and inodes. */
int rothp_drop_caches(void)
{
	int fd, ret = 0;

	sync();
	fd = open(DROP_CACHES, O_WRONLY);
	if (fd < 0)
		return -1;
	if (write(fd, "3", 1) != 1)
		ret = -1;
	close(fd);
	return ret;
}

/* Is b the start of stub i of textprog? */
static bool is_stub(const unsigned char *b, uint32_t i)
{
	uint32_t imm;

	memcpy(&imm, b + ROTHP_STUB_IMM, sizeof(imm));
	return b[0] == 0xb8 && imm == i && b[ROTHP_STUB_IMM + sizeof(imm)] == 0xc3;
}

/*
 * Find textprog's stubs in the file fd: the longest run of 4 KiB pages, at
 * 4 KiB-aligned file offsets, whose starts are stubs 0, 1, 2, ... It needs
 * no symbol table, so it works on a stripped copy too. Returns the number of
 * stubs, with *off the file offset of stub 0; 0 if there is none, -1 on a
 * read error.
 */
long rothp_find_stubs(int fd, off_t *off)
{
	unsigned char *buf = malloc(IO_CHUNK);
	off_t pos = 0, run_start = 0;
	long run = 0, best = 0;
	size_t i;
	ssize_t n;

	if (!buf)
		return -1;
	while ((n = pread(fd, buf, IO_CHUNK, pos)) > 0) {
		for (i = 0; i + ROTHP_STUB_IMM + 5 <= (size_t)n; i += ROTHP_STUB_SIZE) {
			if (run && is_stub(buf + i, run)) {
				run++;
			} else if (is_stub(buf + i, 0)) {
				run_start = pos + i;
				run = 1;
			} else {
				run = 0;
			}
			if (run > best) {
				best = run;
				*off = run_start;
			}
		}
		pos += n;
	}
	free(buf);
	return n < 0 ? -1 : best;
}

/* The first line of a small file, without its newline: 0, or -1 (errno). */
int rothp_read_line(const char *path, char *buf, size_t len)
{
	ssize_t n;
	int fd;

	fd = open(path, O_RDONLY);
	if (fd < 0)
		return -1;
	n = read(fd, buf, len - 1);
	close(fd);
	if (n < 0)
		return -1;
	buf[n] = '\0';
	buf[strcspn(buf, "\n")] = '\0';
	return 0;
}

/* The PMD size THP uses, in bytes; 0 if the kernel has no THP. */
unsigned long rothp_hpage_pmd_size(void)
{
	char buf[32];

	if (rothp_read_line(THP_SYSFS "hpage_pmd_size", buf, sizeof(buf)))
		return 0;
	return strtoul(buf, NULL, 10);
}

/* Scan a kernel config for name: 1 if =y or =m, 0 if not set, -1 if no config. */
static int kconfig_scan(FILE *fp, const char *name)
{
	size_t nlen = strlen(name);
	char line[512];
	bool config = false;

	while (fgets(line, sizeof(line), fp)) {
		if (strstr(line, "CONFIG_"))
			config = true;
		if (!strncmp(line, name, nlen) && line[nlen] == '=')
			return line[nlen + 1] == 'y' || line[nlen + 1] == 'm';
	}
	return config ? 0 : -1;
}

/*
 * Look name (e.g. "CONFIG_READ_ONLY_THP_FOR_FS") up in the running kernel's
 * config: the file named by $ROTHP_KCONFIG, /boot/config-$(uname -r), or
 * /proc/config.gz through zcat (static binaries carry no zlib, but busybox
 * has zcat). Returns 1 if set, 0 if not, -1 if no config could be read; src
 * names where the answer came from.
 */
int rothp_kconfig(const char *name, char *src, size_t srclen)
{
	struct utsname u;
	char path[PATH_MAX];
	const char *env = getenv("ROTHP_KCONFIG");
	FILE *fp;
	int ret;

	snprintf(src, srclen, "no readable kernel config");
	if (env && *env) {
		snprintf(path, sizeof(path), "%s", env);
	} else {
		uname(&u);
		snprintf(path, sizeof(path), "/boot/config-%s", u.release);
	}
	fp = fopen(path, "r");
	if (fp) {
		ret = kconfig_scan(fp, name);
		fclose(fp);
		if (ret >= 0) {
			snprintf(src, srclen, "%s", path);
			return ret;
		}
	}
	if (access("/proc/config.gz", R_OK))
		return -1;
	fflush(NULL);	/* popen() forks: do not duplicate buffered output */
	fp = popen("zcat /proc/config.gz 2>/dev/null", "r");
	if (!fp)
		return -1;
	ret = kconfig_scan(fp, name);
	pclose(fp);
	if (ret >= 0)
		snprintf(src, srclen, "/proc/config.gz");
	return ret;
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
 * The number after "name<sep>" on a line of a /proc file: 0 with *val set,
 * or -1 with errno ENOENT if there is no such line.
 */
static int proc_field(const char *path, const char *name, char sep, long *val)
{
	size_t nlen = strlen(name);
	char line[256];
	int ret = -1;
	FILE *fp;

	fp = fopen(path, "r");
	if (!fp)
		return -1;
	errno = ENOENT;
	while (fgets(line, sizeof(line), fp)) {
		if (!strncmp(line, name, nlen) && line[nlen] == sep &&
		    sscanf(line + nlen + 1, "%ld", val) == 1) {
			ret = 0;
			break;
		}
	}
	fclose(fp);
	return ret;
}

/*
 * Read a /proc/vmstat counter: 0 with *val set, or -1 with errno ENOENT if
 * this kernel has no such counter.
 */
int rothp_vmstat(const char *name, long *val)
{
	return proc_field("/proc/vmstat", name, ' ', val);
}

/*
 * Sectors read so far from the block device holding path, from the third
 * field of /sys/dev/block/MAJOR:MINOR/stat (Documentation/block/stat.rst).
 * On failure, why says what was missing.
 */
int rothp_disk_sectors_read(const char *path, unsigned long long *sectors, char *why,
			    size_t len)
{
	char spath[PATH_MAX], buf[512];
	struct stat st;

	if (stat(path, &st)) {
		snprintf(why, len, "stat %s: %s", path, strerror(errno));
		return -1;
	}
	snprintf(spath, sizeof(spath), "/sys/dev/block/%u:%u/stat", major(st.st_dev),
		 minor(st.st_dev));
	if (rothp_read_line(spath, buf, sizeof(buf))) {
		snprintf(why, len, "no disk statistics for %s: %s: %s", path, spath,
			 strerror(errno));
		return -1;
	}
	if (sscanf(buf, "%*u %*u %llu", sectors) != 1) {
		snprintf(why, len, "%s: unexpected contents '%s'", spath, buf);
		return -1;
	}
	return 0;
}

/* Read a THP sysfs knob; for "a [b] c" choices, the bracketed one. */
int rothp_thp_read_str(const char *knob, char *buf, size_t len)
{
	char path[PATH_MAX], raw[256], *open_br, *close_br;

	snprintf(path, sizeof(path), THP_SYSFS "%s", knob);
	if (rothp_read_line(path, raw, sizeof(raw)))
		return -1;
	open_br = strchr(raw, '[');
	close_br = open_br ? strchr(open_br, ']') : NULL;
	if (open_br && close_br) {
		*close_br = '\0';
		snprintf(buf, len, "%s", open_br + 1);
	} else {
		snprintf(buf, len, "%s", raw);
	}
	return 0;
}

/* Write val to a sysfs or procfs file, saying why if it fails. */
int rothp_write_text(const char *path, const char *val)
{
	ssize_t n;
	int fd;

	fd = open(path, O_WRONLY);
	if (fd < 0) {
		ksft_print_msg("open %s: %s\n", path, strerror(errno));
		return -1;
	}
	n = write(fd, val, strlen(val));
	if (n != (ssize_t)strlen(val)) {
		ksft_print_msg("write '%s' to %s: %s\n", val, path,
			       n < 0 ? strerror(errno) : "short write");
		close(fd);
		return -1;
	}
	close(fd);
	return 0;
}

int rothp_thp_set_str(const char *knob, const char *val)
{
	char path[PATH_MAX];

	snprintf(path, sizeof(path), THP_SYSFS "%s", knob);
	return rothp_write_text(path, val);
}

int rothp_thp_set_num(const char *knob, unsigned long val)
{
	char buf[32];

	snprintf(buf, sizeof(buf), "%lu", val);
	return rothp_thp_set_str(knob, buf);
}

/* The knobs saved and restored, in the order they are restored. */
static const char * const thp_knobs[] = {
	"khugepaged/scan_sleep_millisecs",
	"khugepaged/alloc_sleep_millisecs",
	"khugepaged/pages_to_scan",
	"khugepaged/max_ptes_none",
	"khugepaged/defrag",
	"defrag",
	"enabled",
};

#define NR_THP_KNOBS	ARRAY_SIZE(thp_knobs)

static char thp_saved[NR_THP_KNOBS][64];
static volatile sig_atomic_t thp_saved_valid;

void rothp_thp_restore(void)
{
	size_t i;

	if (!thp_saved_valid)
		return;
	thp_saved_valid = 0;
	for (i = 0; i < NR_THP_KNOBS; i++)
		rothp_thp_set_str(thp_knobs[i], thp_saved[i]);
}

#define NR_SCRATCH	8

/* Files made by rothp_scratch_copy(), and the process that made them. */
static char scratch_path[NR_SCRATCH][PATH_MAX];
static pid_t scratch_owner;

/* Only async-signal-safe calls: it runs from restore_signal() too. */
static void scratch_remove_all(void)
{
	int i;

	if (getpid() != scratch_owner)
		return;		/* a forked child exiting: the files are not its */
	for (i = 0; i < NR_SCRATCH; i++) {
		if (scratch_path[i][0])
			unlink(scratch_path[i]);
		scratch_path[i][0] = '\0';
	}
}

/* Everything saved is restored at exit and on SIGINT/SIGTERM. */
static void restore_all(void)
{
	rothp_sysctl_restore();
	rothp_thp_restore();
	scratch_remove_all();
}

static void restore_signal(int sig)
{
	restore_all();
	signal(sig, SIG_DFL);
	raise(sig);
}

static void register_restore(void)
{
	static bool registered;
	struct sigaction sa;

	if (registered)
		return;
	registered = true;
	atexit(restore_all);
	memset(&sa, 0, sizeof(sa));
	sa.sa_handler = restore_signal;
	sigaction(SIGINT, &sa, NULL);
	sigaction(SIGTERM, &sa, NULL);
}

/*
 * Copy src to dst as rothp_copy_file() does (written, fsynced, closed), then
 * write back and drop the page cache, so that dst starts with none. dst is
 * removed at exit and on SIGINT/SIGTERM, unless rothp_scratch_remove() was
 * called for it first.
 */
int rothp_scratch_copy(const char *src, const char *dst)
{
	int i, slot = -1;

	if (strlen(dst) >= PATH_MAX) {
		errno = ENAMETOOLONG;
		return -1;
	}
	for (i = 0; i < NR_SCRATCH; i++) {
		if (!strcmp(scratch_path[i], dst)) {
			slot = i;
			break;
		}
		if (slot < 0 && !scratch_path[i][0])
			slot = i;
	}
	if (slot < 0) {
		ksft_print_msg("cannot copy to %s: more than %d scratch files\n", dst, NR_SCRATCH);
		errno = ENOSPC;
		return -1;
	}
	scratch_owner = getpid();
	memcpy(scratch_path[slot], dst, strlen(dst) + 1);
	register_restore();
	if (rothp_copy_file(src, dst) || rothp_drop_caches())
		return -1;
	return 0;
}

/* Remove a file made by rothp_scratch_copy() now. */
void rothp_scratch_remove(const char *path)
{
	int i;

	if (unlink(path))
		ksft_print_msg("unlink %s: %s\n", path, strerror(errno));
	for (i = 0; i < NR_SCRATCH; i++) {
		if (!strcmp(scratch_path[i], path))
			scratch_path[i][0] = '\0';
	}
}

/* Save the THP settings; they are restored at exit and on SIGINT/SIGTERM. */
int rothp_thp_save(void)
{
	size_t i;

	for (i = 0; i < NR_THP_KNOBS; i++) {
		if (rothp_thp_read_str(thp_knobs[i], thp_saved[i], sizeof(thp_saved[i]))) {
			ksft_print_msg("cannot read %s%s: %s\n", THP_SYSFS, thp_knobs[i],
				       strerror(errno));
			return -1;
		}
	}
	thp_saved_valid = 1;
	register_restore();
	return 0;
}

/* Read a numeric sysctl, name relative to /proc/sys; -1 if it is not there. */
int rothp_sysctl_read(const char *name, long *val)
{
	char path[PATH_MAX], buf[64], *end;

	snprintf(path, sizeof(path), SYSCTL_DIR "%s", name);
	if (rothp_read_line(path, buf, sizeof(buf)))
		return -1;
	errno = 0;
	*val = strtol(buf, &end, 10);
	if (errno || end == buf || *end) {
		errno = EINVAL;
		return -1;
	}
	return 0;
}

int rothp_sysctl_write(const char *name, long val)
{
	char path[PATH_MAX], buf[32];

	snprintf(path, sizeof(path), SYSCTL_DIR "%s", name);
	snprintf(buf, sizeof(buf), "%ld", val);
	return rothp_write_text(path, buf);
}

#define NR_SYSCTL_SAVED	4

static struct {
	char name[64];
	long val;
} sysctl_saved[NR_SYSCTL_SAVED];
static volatile sig_atomic_t nr_sysctl_saved;

/* Restore the saved sysctls, the last saved first. */
void rothp_sysctl_restore(void)
{
	while (nr_sysctl_saved > 0) {
		nr_sysctl_saved--;
		rothp_sysctl_write(sysctl_saved[nr_sysctl_saved].name,
				   sysctl_saved[nr_sysctl_saved].val);
	}
}

/* Save a numeric sysctl; it is restored at exit and on SIGINT/SIGTERM. */
int rothp_sysctl_save(const char *name)
{
	int i = nr_sysctl_saved;
	long val;

	if (i >= NR_SYSCTL_SAVED || strlen(name) >= sizeof(sysctl_saved[i].name)) {
		ksft_print_msg("cannot save sysctl %s: no room\n", name);
		return -1;
	}
	if (rothp_sysctl_read(name, &val)) {
		ksft_print_msg("cannot read %s%s: %s\n", SYSCTL_DIR, name, strerror(errno));
		return -1;
	}
	snprintf(sysctl_saved[i].name, sizeof(sysctl_saved[i].name), "%s", name);
	sysctl_saved[i].val = val;
	nr_sysctl_saved = i + 1;
	register_restore();
	return 0;
}

/*
 * khugepaged tunables: sleep_ms between passes of 4096 PTEs (8 PMDs),
 * alloc_ms after an allocation failure; max_ptes_none and defrag at their
 * defaults (HPAGE_PMD_NR - 1 and 1, khugepaged_init()), so that a changed
 * host value cannot stop a collapse.
 */
static int thp_khugepaged_set(unsigned long sleep_ms, unsigned long alloc_ms)
{
	unsigned long nr = rothp_hpage_pmd_size() / ROTHP_PAGE_SIZE;

	if (!nr)
		return -1;
	if (rothp_thp_set_num("khugepaged/scan_sleep_millisecs", sleep_ms) ||
	    rothp_thp_set_num("khugepaged/alloc_sleep_millisecs", alloc_ms) ||
	    rothp_thp_set_num("khugepaged/pages_to_scan", 4096) ||
	    rothp_thp_set_num("khugepaged/max_ptes_none", nr - 1) ||
	    rothp_thp_set_num("khugepaged/defrag", 1))
		return -1;
	return 0;
}

/*
 * Make khugepaged scan often: 100 ms sleeps and 4096 PTEs (8 PMDs) a pass.
 * max_ptes_none and defrag are set to their defaults (HPAGE_PMD_NR - 1 and
 * 1, khugepaged_init()), so a changed host value cannot stop a collapse.
 */
int rothp_thp_khugepaged_fast(void)
{
	return thp_khugepaged_set(100, 100);
}

/* Read one reply line from textprog, waiting at most timeout_ms. */
static int textproc_read_line(struct textproc *tp, char *buf, size_t len, long timeout_ms)
{
	struct pollfd pfd = { .fd = fileno(tp->out), .events = POLLIN };
	int ret;

	do {
		ret = poll(&pfd, 1, timeout_ms);
	} while (ret < 0 && errno == EINTR);
	if (ret == 0) {
		ksft_print_msg("textprog %d: no reply within %ld s\n", (int)tp->pid,
			       timeout_ms / 1000);
		errno = ETIMEDOUT;
		return -1;
	}
	if (ret < 0 || !fgets(buf, len, tp->out)) {
		ksft_print_msg("textprog %d: no reply (it exited?)\n", (int)tp->pid);
		return -1;
	}
	buf[strcspn(buf, "\n")] = '\0';
	return 0;
}

/* Start "path action" with pipes on its stdin and stdout; wait for "ready". */
int textproc_start(struct textproc *tp, const char *path, const char *action)
{
	int to_child[2], from_child[2];
	char line[256];

	memset(tp, 0, sizeof(*tp));
	tp->pid = -1;
	if (pipe2(to_child, O_CLOEXEC))
		return -1;
	if (pipe2(from_child, O_CLOEXEC)) {
		close(to_child[0]);
		close(to_child[1]);
		return -1;
	}
	signal(SIGPIPE, SIG_IGN);	/* a dead child must not kill the test */
	fflush(NULL);
	tp->pid = fork();
	if (tp->pid < 0) {
		ksft_print_msg("fork: %s\n", strerror(errno));
		return -1;
	}
	if (!tp->pid) {
		dup2(to_child[0], STDIN_FILENO);
		dup2(from_child[1], STDOUT_FILENO);
		signal(SIGPIPE, SIG_DFL);
		execl(path, path, action, (char *)NULL);
		fprintf(stderr, "exec %s: %s\n", path, strerror(errno));
		_exit(127);
	}
	close(to_child[0]);
	close(from_child[1]);
	tp->in = fdopen(to_child[1], "w");
	tp->out = fdopen(from_child[0], "r");
	if (!tp->in || !tp->out)
		goto fail;
	if (textproc_read_line(tp, line, sizeof(line), ROTHP_REPLY_TIMEOUT_MS))
		goto fail;
	if (sscanf(line, "ready %lx %lx %d %d", &tp->start, &tp->end, &tp->action_rc,
		   &tp->action_errno) != 4) {
		ksft_print_msg("textprog %s: unexpected first line '%s'\n", action, line);
		goto fail;
	}
	return 0;
fail:
	textproc_stop(tp);
	return -1;
}

/* Send one command, read its one-line reply, which must echo the command. */
int textproc_cmd(struct textproc *tp, const char *cmd, char *reply, size_t len)
{
	size_t clen = strlen(cmd);

	if (!tp->in || fprintf(tp->in, "%s\n", cmd) < 0 || fflush(tp->in)) {
		ksft_print_msg("textprog %d: cannot send '%s'\n", (int)tp->pid, cmd);
		return -1;
	}
	if (textproc_read_line(tp, reply, len, ROTHP_REPLY_TIMEOUT_MS))
		return -1;
	if (strncmp(reply, cmd, clen) || (reply[clen] != ' ' && reply[clen])) {
		ksft_print_msg("textprog %d: '%s' got reply '%s'\n", (int)tp->pid, cmd, reply);
		return -1;
	}
	return 0;
}

/*
 * Send "hugepage": textprog madvise(MADV_HUGEPAGE)s its text. *t0 (if not
 * NULL) gets the time the command was sent. 0 if madvise returned 0.
 */
int textproc_hugepage(struct textproc *tp, const char *who, double *t0)
{
	char reply[128];
	int rc = -1, err = 0;

	if (t0)
		*t0 = rothp_now();
	if (textproc_cmd(tp, "hugepage", reply, sizeof(reply)) ||
	    sscanf(reply, "hugepage %d %d", &rc, &err) != 2)
		return -1;
	if (rc)
		ksft_print_msg("%s: MADV_HUGEPAGE: %s\n", who, strerror(err));
	return rc;
}

/* "run": 1 if every stub returned its index, 0 if not, -1 on error. */
int textproc_run(struct textproc *tp, long *calls)
{
	char reply[128];
	int ok;

	if (textproc_cmd(tp, "run", reply, sizeof(reply)) ||
	    sscanf(reply, "run %d %ld", &ok, calls) != 2)
		return -1;
	return ok == 1;
}

int textproc_sum(struct textproc *tp, uint64_t *memsum, uint64_t *filesum)
{
	char reply[128];
	unsigned long long m, f;

	if (textproc_cmd(tp, "sum", reply, sizeof(reply)) ||
	    sscanf(reply, "sum %llx %llx", &m, &f) != 2)
		return -1;
	*memsum = m;
	*filesum = f;
	return 0;
}

/* Eligible 2 MiB blocks of textprog's text VMA, from its /proc maps. */
long textproc_eligible(struct textproc *tp)
{
	struct rothp_vma vma;

	if (rothp_find_vma(tp->pid, tp->start, &vma)) {
		ksft_print_msg("textprog %d: no VMA at %#lx\n", (int)tp->pid, tp->start);
		return -1;
	}
	return rothp_vma_eligible_blocks(&vma);
}

/*
 * Check a textprog's contents and execution: *sum_ok if its stubs in memory
 * hash as the file does, *run_ok if every stub returns its index.
 */
bool textproc_sum_matches(struct textproc *tp, const char *who)
{
	uint64_t memsum = 0, filesum = 1;

	if (textproc_sum(tp, &memsum, &filesum))
		ksft_print_msg("%s: no sum reply\n", who);
	else if (memsum != filesum)
		ksft_print_msg("%s: memory hash %llx, file hash %llx\n", who,
			       (unsigned long long)memsum, (unsigned long long)filesum);
	return memsum == filesum;
}

void textproc_sum_and_run(struct textproc *tp, const char *who, bool *sum_ok, bool *run_ok)
{
	long calls = 0;
	int ok;

	*sum_ok = textproc_sum_matches(tp, who);

	ok = textproc_run(tp, &calls);
	if (ok != 1)
		ksft_print_msg("%s: run reply %d after %ld calls\n", who, ok, calls);
	*run_ok = ok == 1;
}

/* Ask textprog to exit and reap it: 0 if it exited with status 0. */
int textproc_stop(struct textproc *tp)
{
	int status = 0, i;
	pid_t ret = 0;

	if (tp->in) {
		fprintf(tp->in, "exit\n");
		fclose(tp->in);
		tp->in = NULL;
	}
	if (tp->out) {
		fclose(tp->out);
		tp->out = NULL;
	}
	if (tp->pid <= 0)
		return -1;
	/* EOF on its stdin also makes it exit; give it 30 s, then kill it. */
	for (i = 0; i < 3000; i++) {
		ret = waitpid(tp->pid, &status, WNOHANG);
		if (ret)
			break;
		usleep(10 * 1000);
	}
	if (!ret) {
		ksft_print_msg("textprog %d did not exit, killing it\n", (int)tp->pid);
		kill(tp->pid, SIGKILL);
		ret = waitpid(tp->pid, &status, 0);
	}
	tp->pid = -1;
	if (ret < 0)
		return -1;
	if (WIFEXITED(status) && !WEXITSTATUS(status))
		return 0;
	if (WIFEXITED(status))
		ksft_print_msg("textprog exited with status %d\n", WEXITSTATUS(status));
	else if (WIFSIGNALED(status))
		ksft_print_msg("textprog killed by signal %d\n", WTERMSIG(status));
	return -1;
}

/*
 * Read the ELF header and program headers of a 64-bit executable. Fails
 * (ENOEXEC) unless it has an executable, not writable PT_LOAD: its text.
 */
int rothp_elf_read(const char *path, struct rothp_elf *elf)
{
	Elf64_Ehdr eh;
	Elf64_Phdr ph;
	int fd, i, ret = -1;

	memset(elf, 0, sizeof(*elf));
	fd = open(path, O_RDONLY);
	if (fd < 0)
		return -1;
	errno = ENOEXEC;
	if (pread(fd, &eh, sizeof(eh), 0) != sizeof(eh) ||
	    memcmp(eh.e_ident, ELFMAG, SELFMAG) || eh.e_ident[EI_CLASS] != ELFCLASS64 ||
	    eh.e_phentsize != sizeof(ph))
		goto out;
	elf->type = eh.e_type;
	for (i = 0; i < eh.e_phnum; i++) {
		if (pread(fd, &ph, sizeof(ph), eh.e_phoff + i * sizeof(ph)) != sizeof(ph)) {
			errno = ENOEXEC;
			goto out;
		}
		if (ph.p_type == PT_INTERP)
			elf->interp = true;
		if (ph.p_type != PT_LOAD)
			continue;
		if (!elf->nr_load++)
			elf->first_vaddr = ph.p_vaddr;
		if (ph.p_align > elf->max_align)
			elf->max_align = ph.p_align;
		if ((ph.p_flags & (PF_X | PF_W)) != PF_X || elf->nr_text++)
			continue;
		elf->text_vaddr = ph.p_vaddr;
		elf->text_offset = ph.p_offset;
		elf->text_filesz = ph.p_filesz;
		elf->text_align = ph.p_align;
	}
	errno = ENOEXEC;
	if (elf->nr_text)
		ret = 0;
out:
	close(fd);
	return ret;
}

/* Is the text's p_vaddr congruent to its p_offset modulo 2 MiB? */
bool rothp_elf_text_congruent(const struct rothp_elf *elf)
{
	return !((elf->text_vaddr - elf->text_offset) % ROTHP_PMD_SIZE);
}

/* Whole 2 MiB-aligned blocks of addresses in p_vaddr..p_vaddr+p_filesz of the text. */
long rothp_elf_text_blocks(const struct rothp_elf *elf)
{
	unsigned long start = ROTHP_ALIGN_UP(elf->text_vaddr, ROTHP_PMD_SIZE);
	unsigned long end = ROTHP_ALIGN_DOWN(elf->text_vaddr + elf->text_filesz, ROTHP_PMD_SIZE);

	return end > start ? (end - start) / ROTHP_PMD_SIZE : 0;
}

/* Count one run's text VMA into pl; starts holds the earlier runs' starts. */
static void placement_add(struct rothp_placement *pl, const struct rothp_elf *elf,
			  const struct rothp_vma *vma, long eligible, bool ok,
			  const unsigned long *starts)
{
	unsigned long bias = vma->start - ROTHP_ALIGN_DOWN(elf->text_vaddr, ROTHP_PAGE_SIZE);
	int i;

	pl->ran_ok += ok;
	pl->congruent += !((vma->start - vma->offset) % ROTHP_PMD_SIZE);
	pl->bias_aligned += !(bias % ROTHP_PMD_SIZE);
	pl->at_vaddr += !bias;
	pl->with_blocks += eligible > 0;
	if (!pl->runs || eligible < pl->eligible_min)
		pl->eligible_min = eligible;
	for (i = 0; i < pl->runs && starts[i] != vma->start; i++)
		;
	pl->distinct += i == pl->runs;
	pl->runs++;
}

/*
 * Start path once with "none", find its text VMA, count its eligible blocks,
 * run every stub and stop it. 0 if all that could be done; *ok says whether
 * the stubs ran right and it exited with status 0.
 */
static int sample_one(const char *path, struct rothp_vma *vma, long *eligible, bool *ok)
{
	struct textproc tp;
	long calls;
	int ran;

	if (textproc_start(&tp, path, "none")) {
		ksft_print_msg("%s: cannot start it\n", path);
		return -1;
	}
	if (rothp_find_vma(tp.pid, tp.start, vma)) {
		ksft_print_msg("%s: no VMA at %#lx\n", path, tp.start);
		textproc_stop(&tp);
		return -1;
	}
	*eligible = rothp_vma_eligible_blocks(vma);
	ran = textproc_run(&tp, &calls);
	if (ran != 1)
		ksft_print_msg("%s: run reply %d after %ld calls\n", path, ran, calls);
	*ok = ran == 1;
	if (textproc_stop(&tp))
		*ok = false;
	if (*eligible < 0) {
		ksft_print_msg("%s: cannot count the eligible blocks of %s\n", path, vma->path);
		return -1;
	}
	return 0;
}

/*
 * Start the textprog variant at path runs times and record where its text
 * was (elf holds its program headers). Returns 0 when every run could be
 * looked at; pl counts the runs that were either way.
 */
int rothp_sample_placement(const char *path, const struct rothp_elf *elf, int runs,
			   struct rothp_placement *pl)
{
	unsigned long starts[ROTHP_MAX_RUNS];
	struct rothp_vma vma;
	long eligible;
	bool ok;

	memset(pl, 0, sizeof(*pl));
	pl->eligible_min = -1;
	if (runs > ROTHP_MAX_RUNS)
		runs = ROTHP_MAX_RUNS;
	while (pl->runs < runs) {
		if (sample_one(path, &vma, &eligible, &ok))
			return -1;
		ksft_print_msg("%s run %d: text %#lx-%#lx offset %#lx, %ld eligible%s\n", path,
			       pl->runs + 1, vma.start, vma.end, vma.offset, eligible,
			       ok ? "" : ", did not run right");
		placement_add(pl, elf, &vma, eligible, ok, starts);
		starts[pl->runs - 1] = vma.start;
	}
	ksft_print_msg("%s: %d runs, %d distinct, %d ran right, %d 2 MiB-congruent\n", path,
		       pl->runs, pl->distinct, pl->ran_ok, pl->congruent);
	ksft_print_msg("%s: load bias 2 MiB-aligned in %d, 0 in %d; eligible blocks in %d, min %ld\n",
		       path, pl->bias_aligned, pl->at_vaddr, pl->with_blocks, pl->eligible_min);
	return 0;
}

const char *rothp_test_init(int argc, char **argv, char *prog, size_t len)
{
	const char *dir, *fs;
	unsigned long pmd;
	struct utsname u;
	char src[PATH_MAX];
	int large, cfg;

	ksft_print_header();
	if (argc < 2)
		ksft_exit_fail_msg("usage: %s <dir holding textprog>\n", argv[0]);
	dir = argv[1];
	if (geteuid())
		ksft_exit_skip("needs root: it writes drop_caches and THP sysfs knobs\n");
	pmd = rothp_hpage_pmd_size();
	if (!pmd)
		ksft_exit_skip("no THP: cannot read %shpage_pmd_size\n", THP_SYSFS);
	if (pmd != ROTHP_PMD_SIZE)
		ksft_exit_skip("PMD size is %lu, these tests assume 2 MiB\n", pmd);
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
	if (rothp_drop_caches())
		ksft_exit_fail_msg("drop_caches: %s\n", strerror(errno));
	uname(&u);
	ksft_print_msg("kernel %s, %s on %s\n", u.release, prog, fs);
	return dir;
}

void rothp_bench_fail(const char *fmt, ...)
{
	va_list ap;

	printf("# error: ");
	va_start(ap, fmt);
	vprintf(fmt, ap);
	va_end(ap);
	printf("\n");
	exit(1);
}

/* Prompt collapse */

#define PROMPT_POLL_MS		20
/* How long the counters may trail a pending count of 0. */
#define PROMPT_SETTLE_MS	2000
/* How long a neighbour may take to populate its heap. */
#define NEIGHBOUR_READY_MS	(180 * 1000)

static int read_long(const char *path, long *val)
{
	char buf[64], *end;

	if (rothp_read_line(path, buf, sizeof(buf)))
		return -1;
	errno = 0;
	*val = strtol(buf, &end, 10);
	if (errno || end == buf || *end) {
		errno = EINVAL;
		return -1;
	}
	return 0;
}

/* NULL when the running kernel has prompt collapse, else why to skip. */
const char *rothp_prompt_skip(void)
{
	if (access(THP_SYSFS ROTHP_PROMPT_KNOB, F_OK))
		return ROTHP_NO_PROMPT;
	return NULL;
}

/* The prompt_collapse switch: 0 with *on set, -1 (ENOENT) when absent. */
int rothp_prompt_read(long *on)
{
	return read_long(THP_SYSFS ROTHP_PROMPT_KNOB, on);
}

int rothp_prompt_set(long on)
{
	return rothp_thp_set_num(ROTHP_PROMPT_KNOB, on);
}

/* Requests queued now: 0 with *pending set, -1 (ENOENT) when absent. */
int rothp_prompt_pending(long *pending)
{
	return read_long(THP_SYSFS ROTHP_PROMPT_PENDING, pending);
}

/*
 * Wait until no request is pending: the milliseconds it took, or -1 after
 * timeout_ms or when the count cannot be read. *pending is the last count
 * read (-1 if none could be).
 */
long rothp_prompt_wait_idle(long timeout_ms, long *pending)
{
	double start = rothp_now();
	long ms;

	for (;;) {
		if (rothp_prompt_pending(pending)) {
			*pending = -1;
			return -1;
		}
		ms = (long)((rothp_now() - start) * 1000);
		if (!*pending)
			return ms;
		if (ms >= timeout_ms)
			return -1;
		usleep(PROMPT_POLL_MS * 1000);
	}
}

/* The four counters; -1 (ENOENT) if this kernel lacks any of them. */
int rothp_prompt_stat_read(struct rothp_prompt_stat *st)
{
	if (rothp_vmstat("thp_prompt_collapse_queued", &st->queued) ||
	    rothp_vmstat("thp_prompt_collapse_served", &st->served) ||
	    rothp_vmstat("thp_prompt_collapse_failed", &st->failed) ||
	    rothp_vmstat("thp_prompt_collapse_dropped", &st->dropped))
		return -1;
	return 0;
}

static bool prompt_balanced(const struct rothp_prompt_stat *b, const struct rothp_prompt_stat *a)
{
	return a->queued - b->queued ==
	       (a->served - b->served) + (a->failed - b->failed) + (a->dropped - b->dropped);
}

/*
 * End an interval that started quiescent (no request pending, counters in
 * before): wait up to timeout_ms for the queue to empty, read the counters
 * into after, and check that every request made in the interval was served,
 * failed or dropped. The counters get PROMPT_SETTLE_MS to catch up with a
 * pending count of 0; needing that is said, as it is worth knowing.
 * Returns 0 when they balance, -1 if requests stayed pending, -2 if the
 * counters do not balance or cannot be read.
 */
int rothp_prompt_settle(const struct rothp_prompt_stat *before, struct rothp_prompt_stat *after,
			long timeout_ms, const char *who)
{
	long pending, ms;
	double t;
	bool ok;

	ms = rothp_prompt_wait_idle(timeout_ms, &pending);
	if (rothp_prompt_stat_read(after)) {
		ksft_print_msg("%s: cannot read the thp_prompt_collapse counters\n", who);
		return -2;
	}
	t = rothp_now();
	ok = prompt_balanced(before, after);
	while (ms >= 0 && !ok && rothp_now() - t < PROMPT_SETTLE_MS / 1000.0) {
		usleep(PROMPT_POLL_MS * 1000);
		if (rothp_prompt_stat_read(after))
			return -2;
		ok = prompt_balanced(before, after);
	}
	ksft_print_msg("%s: queued +%ld, served +%ld, failed +%ld, dropped +%ld; pending %ld%s\n",
		       who, after->queued - before->queued, after->served - before->served,
		       after->failed - before->failed, after->dropped - before->dropped,
		       pending, ms < 0 ? " (timed out)" : "");
	if (ms < 0) {
		ksft_print_msg("%s: requests still pending after %.1f s\n", who,
			       timeout_ms / 1000.0);
		return -1;
	}
	if (!ok) {
		ksft_print_msg("%s: queued != served + failed + dropped with no request pending\n",
			       who);
		return -2;
	}
	if (rothp_now() - t > PROMPT_POLL_MS / 1000.0)
		ksft_print_msg("%s: the counters balanced only %.2f s after pending read 0\n", who,
			       rothp_now() - t);
	return 0;
}

/*
 * khugepaged's default tunables (khugepaged_init(), mm/khugepaged.c): 10 s
 * sleeps between passes of 4096 pages, 60 s after an allocation failure.
 */
int rothp_thp_khugepaged_defaults(void)
{
	return thp_khugepaged_set(10000, 60000);
}

/*
 * Make khugepaged scan now: a write to scan_sleep_millisecs, even of its
 * value, ends its sleep (scan_sleep_millisecs_store()). That pass also
 * frees the slots of mms that have exited.
 */
int rothp_khugepaged_kick(void)
{
	char buf[32];

	if (rothp_thp_read_str("khugepaged/scan_sleep_millisecs", buf, sizeof(buf)))
		return -1;
	return rothp_thp_set_str("khugepaged/scan_sleep_millisecs", buf);
}

/*
 * The neighbour: populate an anonymous heap with 4 KiB pages (MADV_NOHUGEPAGE
 * while touching it, whatever THP "enabled" says), then MADV_HUGEPAGE it,
 * which registers the mm with khugepaged (hugepage_madvise() ->
 * khugepaged_enter_vma()) with every 2 MiB block of it to collapse. Only
 * _exit(): the atexit handlers are the parent's.
 */
static void neighbour_child(int ready, int ctl, unsigned long mib)
{
	size_t off, len = mib << 20;
	char c = 'r', *p;

	p = mmap(NULL, len, PROT_READ | PROT_WRITE, MAP_PRIVATE | MAP_ANONYMOUS, -1, 0);
	if (p == MAP_FAILED)
		_exit(1);
	if (madvise(p, len, MADV_NOHUGEPAGE))
		_exit(2);
	for (off = 0; off < len; off += ROTHP_PAGE_SIZE)
		p[off] = (char)(off / ROTHP_PAGE_SIZE) | 1;
	if (madvise(p, len, MADV_HUGEPAGE))
		_exit(3);
	if (write(ready, &c, 1) != 1)
		_exit(4);
	/* Until killed, or the parent is gone (EOF). */
	while (read(ctl, &c, 1) < 0 && errno == EINTR)
		;
	_exit(0);
}

/*
 * Start a neighbour with a heap of mib MiB and wait until it is registered
 * with khugepaged. It is killed by rothp_neighbour_stop(), and exits by
 * itself when its parent does.
 */
int rothp_neighbour_start(struct rothp_neighbour *nb, unsigned long mib)
{
	struct pollfd pfd = { .events = POLLIN };
	int ready[2], ctl[2], ret;
	double t0 = rothp_now();
	char c;

	nb->pid = -1;
	nb->ctl = -1;
	nb->mib = mib;
	if (pipe2(ready, O_CLOEXEC))
		return -1;
	if (pipe2(ctl, O_CLOEXEC)) {
		close(ready[0]);
		close(ready[1]);
		return -1;
	}
	fflush(NULL);
	nb->pid = fork();
	if (!nb->pid) {
		close(ready[0]);
		close(ctl[1]);
		neighbour_child(ready[1], ctl[0], mib);
	}
	close(ready[1]);
	close(ctl[0]);
	nb->ctl = ctl[1];
	if (nb->pid < 0) {
		ksft_print_msg("fork: %s\n", strerror(errno));
		close(ready[0]);
		rothp_neighbour_stop(nb);
		return -1;
	}
	pfd.fd = ready[0];
	do {
		ret = poll(&pfd, 1, NEIGHBOUR_READY_MS);
	} while (ret < 0 && errno == EINTR);
	ret = ret > 0 && read(ready[0], &c, 1) == 1 ? 0 : -1;
	close(ready[0]);
	if (ret) {
		ksft_print_msg("neighbour %d: not ready within %d s\n", (int)nb->pid,
			       NEIGHBOUR_READY_MS / 1000);
		rothp_neighbour_stop(nb);
		return -1;
	}
	ksft_print_msg("neighbour %d: %lu MiB of 4 KiB pages registered with khugepaged in %.1f s\n",
		       (int)nb->pid, mib, rothp_now() - t0);
	return 0;
}

void rothp_neighbour_stop(struct rothp_neighbour *nb)
{
	if (nb->ctl >= 0)
		close(nb->ctl);
	nb->ctl = -1;
	if (nb->pid > 0) {
		kill(nb->pid, SIGKILL);
		waitpid(nb->pid, NULL, 0);
	}
	nb->pid = -1;
}

struct huge_poll {
	struct textproc *tp;
	struct rothp_huge_wait *hw;
	int percent;
	double t0, at;		/* start; when enough was seen */
};

static bool huge_enough(void *arg)
{
	struct huge_poll *hp = arg;
	long calls, pmd;

	hp->hw->polls++;
	if (textproc_run(hp->tp, &calls) != 1) {
		hp->hw->run_failed = true;
		return true;	/* stop: the result is already a failure */
	}
	pmd = rothp_file_pmd_mapped(hp->tp->pid, hp->tp->start);
	hp->hw->blocks = pmd > 0 ? pmd / (long)ROTHP_PMD_SIZE : 0;
	hp->at = rothp_now() - hp->t0;
	return hp->hw->blocks * 100 >= hp->percent * hp->hw->eligible;
}

/*
 * Run a textprog's stubs every interval_ms (the next fault after a collapse
 * maps the new folio with a PMD) until at least percent of the eligible
 * blocks of its text are PMD-mapped. Returns the seconds since t0 (a
 * rothp_now() time) it took, or -1 once cap_ms since t0 have passed, a run
 * failed or the blocks cannot be counted; hw says what was seen.
 */
double textproc_wait_huge(struct textproc *tp, double t0, int percent, long cap_ms,
			  long interval_ms, struct rothp_huge_wait *hw)
{
	struct huge_poll hp = { .tp = tp, .hw = hw, .percent = percent, .t0 = t0 };
	long left;

	memset(hw, 0, sizeof(*hw));
	hw->eligible = textproc_eligible(tp);
	if (hw->eligible <= 0)
		return -1;
	left = cap_ms - (long)((rothp_now() - t0) * 1000);
	if (rothp_wait_until(huge_enough, &hp, left > 0 ? left : 0, interval_ms) < 0 ||
	    hw->run_failed)
		return -1;
	return hp.at;
}

/* Page cache probes */

/* Bits of /proc/kpageflags (include/uapi/linux/kernel-page-flags.h). */
#define KPF_DIRTY		4
#define KPF_WRITEBACK		8
#define KPF_COMPOUND_HEAD	15
#define KPF_COMPOUND_TAIL	16
/* /proc/PID/pagemap entries (Documentation/admin-guide/mm/pagemap.rst). */
#define PM_PRESENT		(1ULL << 63)
#define PM_PFN_MASK		((1ULL << 55) - 1)
#define PMD_PAGES		(ROTHP_PMD_SIZE / ROTHP_PAGE_SIZE)
#define SCAN_FILE_FORMAT	"/sys/kernel/tracing/events/huge_memory/mm_khugepaged_scan_file/format"

/*
 * Look at the 2 MiB block mapped at p, vec its mincore() bytes: touch its
 * cached pages, so that they are mapped, then read their PFNs (pagemap) and
 * flags (/proc/kpageflags, which reports a folio's flags for each of its
 * pages). It is one PMD-sized folio if all its pages are physically
 * contiguous from a 2 MiB-aligned PFN, a compound head followed by 511
 * tails: the page cache holds no folio larger than PMD size
 * (MAX_PAGECACHE_ORDER).
 */
static int probe_block(int pagemap, int kpageflags, const char *p, const unsigned char *vec,
		       struct rothp_cache_block *blk)
{
	uint64_t ent[PMD_PAGES], flags[PMD_PAGES], pfn, pfn0;
	off_t pos = (off_t)((unsigned long)p / ROTHP_PAGE_SIZE) * sizeof(ent[0]);
	bool whole = true;
	size_t i;

	for (i = 0; i < PMD_PAGES; i++) {
		if (vec[i] & 1)
			(void)*(volatile const char *)(p + i * ROTHP_PAGE_SIZE);
	}
	if (pread(pagemap, ent, sizeof(ent), pos) != sizeof(ent))
		return -1;
	pfn0 = ent[0] & PM_PFN_MASK;
	for (i = 0; i < PMD_PAGES; i++) {
		flags[i] = 0;
		if (!(ent[i] & PM_PRESENT)) {
			whole = false;	/* not cached, or reclaimed since */
			continue;
		}
		pfn = ent[i] & PM_PFN_MASK;
		if (!pfn) {
			errno = EPERM;	/* PFNs read as 0 without CAP_SYS_ADMIN */
			return -1;
		}
		if (pread(kpageflags, &flags[i], sizeof(flags[i]), pfn * sizeof(flags[i])) !=
		    sizeof(flags[i]))
			return -1;
		blk->dirty += !!(flags[i] & (1ULL << KPF_DIRTY));
		blk->writeback += !!(flags[i] & (1ULL << KPF_WRITEBACK));
		if (pfn != pfn0 + i)
			whole = false;
	}
	if (!whole || pfn0 % PMD_PAGES || !(flags[0] & (1ULL << KPF_COMPOUND_HEAD)))
		return 0;
	for (i = 1; i < PMD_PAGES; i++) {
		if (!(flags[i] & (1ULL << KPF_COMPOUND_TAIL)))
			return 0;
	}
	blk->huge = true;
	return 0;
}

/*
 * Look at nr 2 MiB blocks of the file fd from offset (2 MiB-aligned) in the
 * page cache: how many pages of each are cached (mincore()), dirty and
 * under writeback, and whether it is one PMD-sized folio (probe_block()).
 * The probe mapping is PROT_READ, MADV_RANDOM and one page off 2 MiB
 * congruence: its faults read nothing ahead and only map cached pages, it
 * can never be PMD-mapped, khugepaged can collapse nothing through it, and
 * no fault in it asks for a collapse. So looking changes nothing. Needs
 * root, for the PFNs.
 */
int rothp_cache_blocks(int fd, off_t offset, long nr, struct rothp_cache_block *blk)
{
	size_t len = nr * ROTHP_PMD_SIZE, i, j;
	int pagemap, kpageflags, ret = -1, err;
	unsigned char *vec;
	char *p;

	p = rothp_map_aligned(fd, len, offset, ROTHP_PAGE_SIZE, PROT_READ);
	if (p == MAP_FAILED)
		return -1;
	vec = malloc(nr * PMD_PAGES);
	pagemap = open("/proc/self/pagemap", O_RDONLY);
	kpageflags = open("/proc/kpageflags", O_RDONLY);
	if (!vec || pagemap < 0 || kpageflags < 0)
		goto out;
	if (madvise(p, len, MADV_RANDOM) || mincore(p, len, vec))
		goto out;
	for (i = 0; i < (size_t)nr; i++) {
		memset(&blk[i], 0, sizeof(blk[i]));
		blk[i].offset = offset + i * ROTHP_PMD_SIZE;
		for (j = 0; j < PMD_PAGES; j++)
			blk[i].resident += vec[i * PMD_PAGES + j] & 1;
		if (blk[i].resident &&
		    probe_block(pagemap, kpageflags, p + i * ROTHP_PMD_SIZE, vec + i * PMD_PAGES,
				&blk[i]))
			goto out;
	}
	ret = 0;
out:
	err = errno;
	if (kpageflags >= 0)
		close(kpageflags);
	if (pagemap >= 0)
		close(pagemap);
	free(vec);
	munmap(p, len);
	errno = err;
	return ret;
}

/* File offset of the first whole 2 MiB block of a 2 MiB-congruent text. */
off_t rothp_elf_text_block_offset(const struct rothp_elf *elf)
{
	return ROTHP_ALIGN_UP(elf->text_vaddr, ROTHP_PMD_SIZE) - elf->text_vaddr +
	       elf->text_offset;
}

/* A /proc/meminfo field in kB: 0 with *kb set, -1 if there is none. */
int rothp_meminfo(const char *name, long *kb)
{
	return proc_field("/proc/meminfo", name, ':', kb);
}

/*
 * Does khugepaged know the scan result called name ("page_filled", ...)?
 * The mm_khugepaged_scan_file tracepoint prints every result by name, so
 * its format lists them all. 1 if it does, 0 if not, -1 if tracefs cannot
 * be read.
 */
int rothp_scan_result_known(const char *name)
{
	const size_t cap = 64 * 1024;
	char quoted[128], *buf;
	ssize_t n;
	size_t len = 0;
	int fd, ret = -1;

	snprintf(quoted, sizeof(quoted), "\"%s\"", name);
	buf = malloc(cap);
	fd = open(SCAN_FILE_FORMAT, O_RDONLY);
	if (!buf || fd < 0)
		goto out;
	while (len < cap - 1 && (n = read(fd, buf + len, cap - 1 - len)) > 0)
		len += n;
	buf[len] = '\0';
	if (len)
		ret = strstr(buf, quoted) != NULL;
out:
	if (fd >= 0)
		close(fd);
	free(buf);
	return ret;
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

/* The whole of a file in a malloc()ed buffer, or exit failing. */
char *rothp_read_whole(const char *path, size_t *size)
{
	struct stat st;
	size_t off;
	ssize_t n;
	char *buf;
	int fd;

	fd = open(path, O_RDONLY);
	if (fd < 0 || fstat(fd, &st))
		ksft_exit_fail_msg("%s: %s\n", path, strerror(errno));
	*size = st.st_size;
	buf = malloc(*size ? *size : 1);
	if (!buf)
		ksft_exit_fail_msg("malloc %zu: %s\n", *size, strerror(errno));
	for (off = 0; off < *size; off += n) {
		n = pread(fd, buf + off, *size - off, off);
		if (n <= 0)
			ksft_exit_fail_msg("pread %s: %s\n", path, n ? strerror(errno) : "short");
	}
	close(fd);
	return buf;
}

/*
 * Read a file whose size stat() does not tell (tracefs, procfs) to its end:
 * a malloc()ed, NUL-terminated buffer, its length in *len; NULL with errno
 * set if it cannot be opened or read.
 */
char *rothp_read_stream(const char *path, size_t *len)
{
	size_t cap = 65536, off = 0;
	char *buf = malloc(cap), *bigger;
	ssize_t n;
	int fd;

	fd = open(path, O_RDONLY);
	if (fd < 0 || !buf) {
		free(buf);
		if (fd >= 0)
			close(fd);
		return NULL;
	}
	while ((n = read(fd, buf + off, cap - off - 1)) > 0) {
		off += n;
		if (cap - off > 1)
			continue;
		bigger = realloc(buf, cap * 2);
		if (!bigger) {
			n = -1;
			break;
		}
		buf = bigger;
		cap *= 2;
	}
	close(fd);
	if (n < 0) {
		free(buf);
		return NULL;
	}
	buf[off] = '\0';
	*len = off;
	return buf;
}

/* A malloc()ed copy of len bytes, or exit failing. */
char *rothp_memdup(const void *buf, size_t len)
{
	char *m = malloc(len ? len : 1);

	if (!m)
		ksft_exit_fail_msg("malloc %zu: %s\n", len, strerror(errno));
	memcpy(m, buf, len);
	return m;
}

/* splitmix64: the next 64-bit pseudo-random number of *state. */
uint64_t rothp_rand64(uint64_t *state)
{
	uint64_t z = (*state += 0x9e3779b97f4a7c15ULL);

	z = (z ^ (z >> 30)) * 0xbf58476d1ce4e5b9ULL;
	z = (z ^ (z >> 27)) * 0x94d049bb133111ebULL;
	return z ^ (z >> 31);
}

/*
 * A random cyclic permutation of 0..n-1 (one cycle through all n), by
 * Sattolo's algorithm: for i from n-1 down to 1, swap next[i] with
 * next[rand % i]. Following next[] from any index visits every index once
 * before it comes back. Tools that model the sequence must do the same.
 */
void rothp_cycle_perm(uint64_t seed, uint32_t *next, long n)
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

/*
 * Which of the nr 2 MiB blocks from start (2 MiB-aligned) pid maps with a
 * PMD, by PAGEMAP_SCAN (fs/proc/task_mmu.c: PAGE_IS_HUGE is set for a huge
 * PMD only, never for PTE-mapped pages): map[i] is 'H' when the whole block
 * i is, else 'p'; map[nr] is '\0'. Returns the number of 'H' blocks, or -1.
 */
long rothp_pmd_map(pid_t pid, unsigned long start, long nr, char *map)
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

/* One "<field>: N kB" line of the smaps entry of pid's VMA at addr, in bytes; -1. */
long rothp_smaps_field(pid_t pid, unsigned long addr, const char *field)
{
	FILE *fp = open_proc(pid, "smaps");
	size_t flen = strlen(field);
	struct rothp_vma vma;
	char *line = NULL;
	size_t cap = 0;
	bool inside = false;
	long kb, ret = -1;

	if (!fp)
		return -1;
	while (getline(&line, &cap, fp) > 0) {
		if (!parse_maps_line(line, &vma)) {
			if (inside)
				break;
			inside = addr >= vma.start && addr < vma.end;
			continue;
		}
		if (inside && !strncmp(line, field, flen) && line[flen] == ':' &&
		    sscanf(line + flen + 1, "%ld kB", &kb) == 1) {
			ret = kb * 1024;
			break;
		}
	}
	free(line);
	fclose(fp);
	return ret;
}

/* One field of /proc/PID/smaps_rollup ("Pss", "Rss", ...), in bytes; -1. */
long rothp_rollup_field(pid_t pid, const char *field)
{
	FILE *fp = open_proc(pid, "smaps_rollup");
	size_t flen = strlen(field);
	char *line = NULL;
	size_t cap = 0;
	long kb, ret = -1;

	if (!fp)
		return -1;
	while (getline(&line, &cap, fp) > 0) {
		if (!strncmp(line, field, flen) && line[flen] == ':' &&
		    sscanf(line + flen + 1, "%ld kB", &kb) == 1) {
			ret = kb * 1024;
			break;
		}
	}
	free(line);
	fclose(fp);
	return ret;
}

#define UPROBE_TRACEFS		"/sys/kernel/tracing"

static int tracefs_write(const char *file, const char *s, int flags)
{
	char path[256];
	ssize_t n;
	int fd;

	snprintf(path, sizeof(path), UPROBE_TRACEFS "/%s", file);
	fd = open(path, O_WRONLY | flags);
	if (fd < 0)
		return -1;
	n = write(fd, s, strlen(s));
	close(fd);
	return n == (ssize_t)strlen(s) ? 0 : -1;
}

/*
 * Define and enable the uprobe event group_event ("group/event") on the
 * instruction at file offset off of path. 0, or -1 (no tracefs, no
 * CONFIG_UPROBE_EVENTS, or refused).
 */
int rothp_uprobe_add(const char *group_event, const char *path, unsigned long off)
{
	char cmd[PATH_MAX + 128], file[160];

	snprintf(cmd, sizeof(cmd), "p:%s %s:%#lx\n", group_event, path, off);
	snprintf(file, sizeof(file), "events/%s/enable", group_event);
	if (tracefs_write("uprobe_events", cmd, O_APPEND))
		return -1;
	if (tracefs_write(file, "1", 0)) {
		rothp_uprobe_remove(group_event);
		return -1;
	}
	return 0;
}

/* Hits of the uprobe event named event on path (uprobe_profile), or -1. */
long rothp_uprobe_hits(const char *path, const char *event)
{
	char line[PATH_MAX + 128], file[PATH_MAX], name[128];
	unsigned long hits;
	long ret = -1;
	FILE *fp;

	fp = fopen(UPROBE_TRACEFS "/uprobe_profile", "r");
	if (!fp)
		return -1;
	while (fgets(line, sizeof(line), fp)) {
		if (sscanf(line, "%s %127s %lu", file, name, &hits) == 3 &&
		    !strcmp(file, path) && !strcmp(name, event))
			ret = hits;
	}
	fclose(fp);
	return ret;
}

/* Disable and delete the uprobe event group_event, if it is there. */
void rothp_uprobe_remove(const char *group_event)
{
	char cmd[160], file[160];

	snprintf(file, sizeof(file), "events/%s/enable", group_event);
	tracefs_write(file, "0", 0);
	snprintf(cmd, sizeof(cmd), "-:%s\n", group_event);
	tracefs_write("uprobe_events", cmd, O_APPEND);
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
