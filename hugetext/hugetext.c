// SPDX-License-Identifier: GPL-2.0
/*
 * hugetext: show, and make, huge pages for the program text of a process.
 *
 *   hugetext status [--json] [PID|--self]
 *                                      which PMD-sized blocks of each text
 *                                      mapping can be PMD-mapped, which are,
 *                                      and why not
 *   hugetext collapse PID|--self       MADV_COLLAPSE them through process_madvise(2)
 *   hugetext run [--strict] [--libs S] -- CMD
 *                                      start CMD with its text collapsed before
 *                                      its first instruction, its libraries'
 *                                      as the loader maps them; signals for
 *                                      it reach it once
 *   hugetext help [COMMAND]            the usage of hugetext or of one command
 *
 * Documentation/hugetext.rst is the manual, with the JSON schema.
 * $HUGETEXT_ROOT, if set, is put before every /proc, /sys and /boot path the
 * tool reads (the host tests run it on a made-up procfs and sysfs); a
 * set-user-ID hugetext ignores it (secure_getenv(3)).
 */
#define _GNU_SOURCE
#include <ctype.h>
#include <dirent.h>
#include <errno.h>
#include <fcntl.h>
#include <getopt.h>
#include <limits.h>
#include <poll.h>
#include <signal.h>
#include <stdarg.h>
#include <stdbool.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>
#include <unistd.h>
#include <sys/ioctl.h>
#include <sys/prctl.h>
#include <sys/ptrace.h>
#include <sys/resource.h>
#include <sys/signalfd.h>
#include <sys/socket.h>
#include <sys/stat.h>
#include <sys/statfs.h>
#include <sys/syscall.h>
#include <sys/sysmacros.h>
#include <sys/uio.h>
#include <sys/utsname.h>
#include <sys/wait.h>

#include "compat.h"
#include "kinfo.h"

#define ARRAY_SIZE(a)		(sizeof(a) / sizeof((a)[0]))
#define ALIGN_UP(x, a)		(((x) + (a) - 1) & ~((a) - 1))
#define ALIGN_DOWN(x, a)	((x) & ~((a) - 1))
#define THP_SYSFS		"/sys/kernel/mm/transparent_hugepage/"
#define JSON_VERSION		1
#define HUGETEXT_VERSION	"1.2"	/* and :Version: in hugetext.rst */

/* statfs(2) f_type of the file systems status names (linux/magic.h). */
#define EXT4_MAGIC		0xef53UL
#define XFS_MAGIC		0x58465342UL
#define TMPFS_MAGIC		0x01021994UL
#define BTRFS_MAGIC		0x9123683eUL
#define F2FS_MAGIC		0xf2f52010UL
#define EROFS_MAGIC		0xe0f5e1e2UL
#define SQUASHFS_MAGIC		0x73717368UL
#define OVERLAYFS_MAGIC		0x794c7630UL
#define NFS_MAGIC		0x6969UL
#define FUSE_MAGIC		0x65735546UL

#define EXIT_USAGE		2
#define EXIT_PARTIAL		3
#define EXIT_STRICT		125

/* The state of one PMD-sized block of a text mapping. */
enum block_state {
	BLK_ELIGIBLE,		/* can be PMD-mapped, is not */
	BLK_PMD,		/* PMD-mapped */
	BLK_PARTIAL,		/* not wholly inside the mapping */
	BLK_MISALIGNED,		/* address and file offset not congruent */
	BLK_BEYOND_EOF,		/* reaches past the end of the file */
	NR_BLK,
};

static const char * const blk_name[NR_BLK] = {
	[BLK_ELIGIBLE]		= "eligible",
	[BLK_PMD]		= "pmd",
	[BLK_PARTIAL]		= "partial",
	[BLK_MISALIGNED]	= "misaligned",
	[BLK_BEYOND_EOF]	= "beyond_eof",
};

static const char * const blk_text[NR_BLK] = {
	[BLK_PARTIAL]		= "not wholly inside the mapping",
	[BLK_MISALIGNED]	= "address and file offset differ modulo the block size",
	[BLK_BEYOND_EOF]	= "reaches past the end of the file",
};

/* What stops the eligible blocks of a whole mapping from becoming huge. */
enum reason {
	R_WRITE_OPEN,		/* a process has the file open for writing */
	R_THP_NEVER,		/* sysfs enabled=never */
	R_PROCESS_DISABLED,	/* prctl(PR_SET_THP_DISABLE) */
	R_NOHUGEPAGE,		/* madvise(MADV_NOHUGEPAGE), VmFlags "nh" */
	R_NO_MADVISE,		/* enabled=madvise without VM_HUGEPAGE */
	R_NO_CONFIG,		/* no CONFIG_READ_ONLY_THP_FOR_FS, no large folios */
	R_KERNEL_SAYS_NO,	/* THPeligible: 0, none of the above */
	NR_REASONS,
};

static const char * const reason_name[NR_REASONS] = {
	[R_WRITE_OPEN]		= "write_open",
	[R_THP_NEVER]		= "thp_never",
	[R_PROCESS_DISABLED]	= "process_thp_disabled",
	[R_NOHUGEPAGE]		= "nohugepage",
	[R_NO_MADVISE]		= "no_madvise",
	[R_NO_CONFIG]		= "no_config",
	[R_KERNEL_SAYS_NO]	= "thp_ineligible",
};

/* R_NO_CONFIG's text depends on the file system: see reason_str(). */
static const char * const reason_text[NR_REASONS] = {
	[R_WRITE_OPEN]		= "the file is open for writing",
	[R_THP_NEVER]		= "THP enabled=never: khugepaged collapses nothing (collapse ignores it)",
	[R_PROCESS_DISABLED]	= "THP disabled for the process by prctl(PR_SET_THP_DISABLE)",
	[R_NOHUGEPAGE]		= "madvise(MADV_NOHUGEPAGE) on the mapping",
	[R_NO_MADVISE]		= "THP enabled=madvise and no MADV_HUGEPAGE (khugepaged; collapse ignores it)",
	[R_KERNEL_SAYS_NO]	= "the kernel reports THPeligible 0",
};

static const char no_config_text[] = "the kernel lacks CONFIG_READ_ONLY_THP_FOR_FS";

/* Reasons MADV_COLLAPSE ignores: it does not look at the sysfs mode. */
#define COLLAPSE_IGNORES	((1U << R_THP_NEVER) | (1U << R_NO_MADVISE) | \
				 (1U << R_KERNEL_SAYS_NO))

struct mapping {
	struct rothp_vma vma;		/* its line of /proc/PID/smaps */
	long long file_size;		/* -1: unknown (file replaced or deleted) */
	const char *fs;			/* file system name, NULL: unknown */
	bool shmem;			/* on tmpfs: shmem's THP, not the option's */
	int large_folios;		/* its page cache gets large folios: 1, 0, -1 */
	long pmd_kb;			/* FilePmdMapped, -1 if absent */
	int thp_eligible;		/* THPeligible, -1 if absent */
	bool hugepage, nohugepage;	/* VmFlags hg, nh */
	int writers;			/* 1 yes, 0 none found, -1 unknown */
	unsigned int reasons;		/* 1 << enum reason */
	long nr_blocks, eligible, pmd;
	unsigned char *blocks;		/* enum block_state of each */
};

struct target {
	pid_t pid;
	char comm[64];
	int thp_disabled;		/* prctl state: 1, 0, -1 unknown */
	bool pmd_detail;		/* PAGEMAP_SCAN worked */
	int nr_maps;
	struct mapping *maps;
};

struct system {
	char enabled[16];		/* "always", "madvise", "never", "" */
	char shmem_enabled[16];		/* "deny", "force", ... or "" */
	unsigned long pmd_size;		/* the block size: hpage_pmd_size, or read_system()'s */
	bool pmd_known;			/* hpage_pmd_size was read */
	int config;			/* CONFIG_READ_ONLY_THP_FOR_FS: enum rothp_kconfig */
	char config_src[128];
	char release[65];
};

static const char *prog = "hugetext";
static const char *root = "";		/* $HUGETEXT_ROOT */
static bool quiet;
static int main_argc;
static char **main_argv;

/* Set by run's signal handler: CMD, and the last signal that came for it. */
static volatile sig_atomic_t run_child, run_signal;

static void __attribute__((format(printf, 1, 2))) err_msg(const char *fmt, ...)
{
	va_list ap;

	fprintf(stderr, "%s: ", prog);
	va_start(ap, fmt);
	vfprintf(stderr, fmt, ap);
	va_end(ap);
}

/* A usage error: what was wrong, in one line, and where to look. */
static void __attribute__((format(printf, 2, 3))) usage_error(const char *cmd,
							      const char *fmt, ...)
{
	va_list ap;

	fprintf(stderr, "%s: ", prog);
	if (cmd)
		fprintf(stderr, "%s: ", cmd);
	va_start(ap, fmt);
	vfprintf(stderr, fmt, ap);
	va_end(ap);
	fprintf(stderr, "\ntry '%s help%s%s'\n", prog, cmd ? " " : "", cmd ? cmd : "");
}

static char *sys_path(char *buf, size_t len, const char *fmt, ...)
	__attribute__((format(printf, 3, 4)));

/*
 * A /proc, /sys or /boot path, under $HUGETEXT_ROOT. A path too long for
 * buf comes out empty, which no open() finds.
 */
static char *sys_path(char *buf, size_t len, const char *fmt, ...)
{
	va_list ap;
	int n, m;

	n = snprintf(buf, len, "%s", root);
	va_start(ap, fmt);
	m = n < (int)len ? vsnprintf(buf + n, len - n, fmt, ap) : 0;
	va_end(ap);
	if (n >= (int)len || m < 0 || m >= (int)len - n)
		buf[0] = '\0';
	return buf;
}

static double now(void)
{
	struct timespec ts;

	clock_gettime(CLOCK_MONOTONIC, &ts);
	return ts.tv_sec + ts.tv_nsec / 1e9;
}

/* First line of a small file, without its newline: 0, or -1 with errno. */
static int read_line(const char *path, char *buf, size_t len)
{
	FILE *fp = fopen(path, "r");
	int ret = 0;

	if (!fp)
		return -1;
	if (!fgets(buf, len, fp)) {
		errno = EIO;
		ret = -1;
	} else {
		buf[strcspn(buf, "\n")] = '\0';
	}
	fclose(fp);
	return ret;
}

/* The bracketed word of a THP sysfs choice, "always [madvise] never". */
static void read_choice(const char *name, char *word, size_t len)
{
	char buf[128], path[PATH_MAX], *l, *r;

	word[0] = '\0';
	if (read_line(sys_path(path, sizeof(path), THP_SYSFS "%s", name), buf, sizeof(buf)))
		return;
	l = strchr(buf, '[');
	r = l ? strchr(l, ']') : NULL;
	if (r) {
		*r = '\0';
		snprintf(word, len, "%s", l + 1);
	}
}

static void read_system(struct system *sys)
{
	struct utsname u;
	unsigned long v, page = sysconf(_SC_PAGESIZE);
	char buf[64], path[PATH_MAX], *end;

	memset(sys, 0, sizeof(*sys));
	/* uname(2) says the same, but only procfs can be made up for tests */
	if (read_line(sys_path(path, sizeof(path), "/proc/sys/kernel/osrelease"), sys->release,
		      sizeof(sys->release))) {
		uname(&u);
		snprintf(sys->release, sizeof(sys->release), "%s", u.release);
	}
	/*
	 * A power of two of a page or more, or the blocks make no sense.
	 * Without one, what a PMD maps with this page size: a page table page
	 * of 8-byte entries, 2 MiB with 4 KiB pages (x86-64, arm64), 32 MiB
	 * with 16 KiB and 512 MiB with 64 KiB (arm64).
	 */
	sys->pmd_size = page / 8 * page;
	if (!read_line(sys_path(path, sizeof(path), THP_SYSFS "hpage_pmd_size"), buf,
		       sizeof(buf))) {
		errno = 0;
		v = strtoul(buf, &end, 10);
		if (!errno && end != buf && !*end && !(v & (v - 1)) && v >= page) {
			sys->pmd_size = v;
			sys->pmd_known = true;
		}
	}
	read_choice("enabled", sys->enabled, sizeof(sys->enabled));
	read_choice("shmem_enabled", sys->shmem_enabled, sizeof(sys->shmem_enabled));
	sys->config = rothp_kconfig_running(root, sys->release, "CONFIG_READ_ONLY_THP_FOR_FS",
					    sys->config_src, sizeof(sys->config_src));
}

/* A size in bytes, in words: "2 MiB". */
static const char *size_str(unsigned long v, char *buf, size_t len)
{
	if (v >= 1UL << 30 && !(v & ((1UL << 30) - 1)))
		snprintf(buf, len, "%lu GiB", v >> 30);
	else if (v >= 1UL << 20 && !(v & ((1UL << 20) - 1)))
		snprintf(buf, len, "%lu MiB", v >> 20);
	else
		snprintf(buf, len, "%lu KiB", v >> 10);
	return buf;
}

/* The kernel's release is older than major.minor. */
static bool kernel_older(const struct system *sys, int major, int minor)
{
	int ma = 0, mi = 0;

	if (sscanf(sys->release, "%d.%d", &ma, &mi) != 2)
		return false;
	return ma < major || (ma == major && mi < minor);
}

/*
 * Whether the tmpfs of m gives its files huge folios at fault: by the huge=
 * option of its superblock, in the mountinfo line of m's device, unless
 * shmem_enabled is "deny" or "force", which override every mount. The
 * file was found at the same path by hugetext, so its own mountinfo
 * has it. 1 for huge=always, within_size and advise, 0 for huge=never or
 * no huge= (the default), -1 if the mount is not found.
 */
static int tmpfs_huge(const struct mapping *m, const struct system *sys)
{
	char path[PATH_MAX], *line = NULL, *sep, *type, *source, *opts, *o, *save;
	unsigned int major, minor;
	size_t cap = 0;
	int ret = -1;
	FILE *fp;

	if (!strcmp(sys->shmem_enabled, "deny"))
		return 0;
	if (!strcmp(sys->shmem_enabled, "force"))
		return 1;
	fp = fopen(sys_path(path, sizeof(path), "/proc/self/mountinfo"), "r");
	if (!fp)
		return -1;
	/* ID PARENT MAJOR:MINOR ROOT MOUNTPOINT OPTIONS [TAG...] - TYPE SOURCE SUPEROPTIONS */
	while (ret < 0 && getline(&line, &cap, fp) > 0) {
		if (sscanf(line, "%*u %*u %u:%u", &major, &minor) != 2 ||
		    major != m->vma.dev_major || minor != m->vma.dev_minor)
			continue;
		line[strcspn(line, "\n")] = '\0';
		sep = strstr(line, " - ");
		if (!sep)
			continue;
		type = strtok_r(sep + 3, " ", &save);
		source = type ? strtok_r(NULL, " ", &save) : NULL;
		opts = source ? strtok_r(NULL, " ", &save) : NULL;
		if (!opts || strcmp(type, "tmpfs"))
			continue;
		ret = 0;
		for (o = strtok_r(opts, ",", &save); o; o = strtok_r(NULL, ",", &save)) {
			if (!strncmp(o, "huge=", 5))
				ret = !strcmp(o + 5, "always") || !strcmp(o + 5, "within_size") ||
				      !strcmp(o + 5, "advise");
		}
	}
	free(line);
	fclose(fp);
	return ret;
}

/*
 * The file system of a mapped file, and whether its page cache gets large
 * folios of its own, which a fault maps with a PMD once one is PMD-sized,
 * with or without CONFIG_READ_ONLY_THP_FOR_FS: XFS since 5.18, ext4 since
 * 6.16 (ext2 and ext3 share its magic, and get them from the ext4 driver
 * only), tmpfs through shmem's own THP if its mount says so. Other file
 * systems: unknown.
 */
static void file_system(struct mapping *m, const struct system *sys)
{
	static const struct {
		unsigned long magic;
		const char *name;
	} names[] = {
		{ EXT4_MAGIC, "ext4" }, { XFS_MAGIC, "xfs" }, { TMPFS_MAGIC, "tmpfs" },
		{ BTRFS_MAGIC, "btrfs" }, { F2FS_MAGIC, "f2fs" }, { EROFS_MAGIC, "erofs" },
		{ SQUASHFS_MAGIC, "squashfs" }, { OVERLAYFS_MAGIC, "overlayfs" },
		{ NFS_MAGIC, "nfs" }, { FUSE_MAGIC, "fuse" },
	};
	struct statfs fs;
	unsigned long magic;
	size_t i;

	m->fs = NULL;
	m->large_folios = -1;
	if (statfs(m->vma.path, &fs))
		return;
	magic = (unsigned long)fs.f_type & 0xffffffffUL;
	m->fs = "other";
	for (i = 0; i < ARRAY_SIZE(names); i++) {
		if (names[i].magic == magic)
			m->fs = names[i].name;
	}
	if (magic == XFS_MAGIC)
		m->large_folios = !kernel_older(sys, 5, 18);
	else if (magic == EXT4_MAGIC)
		m->large_folios = !kernel_older(sys, 6, 16);
	else if (magic == TMPFS_MAGIC)
		m->large_folios = tmpfs_huge(m, sys);
	m->shmem = magic == TMPFS_MAGIC;
}

static bool is_text(const struct mapping *m)
{
	const char *perms = m->vma.perms;

	return perms[0] == 'r' && perms[1] != 'w' && perms[2] == 'x' && m->vma.inode;
}

/* The header line of a VMA in /proc/PID/smaps; 0 if it is one. */
static int parse_vma(const char *line, struct mapping *m)
{
	memset(m, 0, sizeof(*m));
	if (rothp_vma_parse(line, &m->vma))
		return -1;
	m->pmd_kb = -1;
	m->thp_eligible = -1;
	m->writers = -1;
	m->file_size = -1;
	m->large_folios = -1;
	return 0;
}

static int add_mapping(struct target *t, const struct mapping *m)
{
	struct mapping *maps = realloc(t->maps, (t->nr_maps + 1) * sizeof(*maps));

	if (!maps)
		return -1;
	t->maps = maps;
	t->maps[t->nr_maps++] = *m;
	return 0;
}

/* The text mappings of pid with their smaps fields. */
static int read_smaps(struct target *t)
{
	char path[PATH_MAX], *line = NULL;
	struct mapping cur;
	bool in_text = false;
	size_t cap = 0;
	FILE *fp;
	long v;

	fp = fopen(sys_path(path, sizeof(path), "/proc/%d/smaps", (int)t->pid), "r");
	if (!fp)
		return -1;
	while (getline(&line, &cap, fp) > 0) {
		if (isxdigit((unsigned char)line[0]) && !parse_vma(line, &cur)) {
			in_text = is_text(&cur);
			if (in_text && add_mapping(t, &cur))
				goto fail;
			continue;
		}
		if (!in_text)
			continue;
		if (!rothp_field_value(line, "FilePmdMapped", &v)) {
			t->maps[t->nr_maps - 1].pmd_kb = v;
		} else if (!rothp_field_value(line, "THPeligible", &v)) {
			t->maps[t->nr_maps - 1].thp_eligible = v;
		} else if (!strncmp(line, "VmFlags:", 8)) {
			t->maps[t->nr_maps - 1].hugepage = rothp_vmflag(line, "hg");
			t->maps[t->nr_maps - 1].nohugepage = rothp_vmflag(line, "nh");
		}
	}
	free(line);
	if (ferror(fp)) {
		fclose(fp);
		return -1;
	}
	fclose(fp);
	return 0;
fail:
	free(line);
	fclose(fp);
	errno = ENOMEM;
	return -1;
}

/* "THP_enabled: 0" in /proc/PID/status: the prctl(PR_SET_THP_DISABLE) state. */
static int read_thp_disabled(pid_t pid)
{
	char path[PATH_MAX];
	long v;

	if (rothp_field_read(sys_path(path, sizeof(path), "/proc/%d/status", (int)pid),
			     "THP_enabled", ':', &v))
		return -1;
	return !v;
}

/*
 * Mark the PMD-mapped blocks (rothp_scan_pmd()). It needs the same access
 * as smaps, no privilege. -1 where the kernel lacks PAGEMAP_SCAN (before 6.7).
 */
static int scan_pmd(int fd, struct mapping *m, unsigned long pmd)
{
	bool *huge = calloc(m->nr_blocks ? m->nr_blocks : 1, sizeof(*huge));
	long b;
	int ret;

	if (!huge)
		return -1;
	ret = rothp_scan_pmd(fd, m->vma.start, m->vma.end, pmd, huge, m->nr_blocks);
	for (b = 0; !ret && b < m->nr_blocks; b++) {
		if (huge[b] && m->blocks[b] == BLK_ELIGIBLE)
			m->blocks[b] = BLK_PMD;
	}
	free(huge);
	return ret;
}

/* Split each mapping into PMD-sized blocks and classify them. */
static int classify_blocks(struct target *t, const struct system *sys)
{
	unsigned long pmd = sys->pmd_size;
	char path[PATH_MAX];
	struct stat st;
	int fd, i;

	fd = open(sys_path(path, sizeof(path), "/proc/%d/pagemap", (int)t->pid), O_RDONLY);
	t->pmd_detail = fd >= 0;
	for (i = 0; i < t->nr_maps; i++) {
		struct mapping *m = &t->maps[i];
		unsigned long first = ALIGN_DOWN(m->vma.start, pmd), a, off;
		bool congruent = !((m->vma.start - m->vma.offset) & (pmd - 1));
		long b;

		if (m->vma.path[0] == '/' && !stat(m->vma.path, &st) && st.st_ino == m->vma.inode &&
		    st.st_dev == makedev(m->vma.dev_major, m->vma.dev_minor)) {
			m->file_size = st.st_size;
			file_system(m, sys);
		}
		m->nr_blocks = (ALIGN_UP(m->vma.end, pmd) - first) / pmd;
		m->blocks = calloc(m->nr_blocks, 1);
		if (!m->blocks) {
			if (fd >= 0)
				close(fd);
			return -1;
		}
		for (b = 0; b < m->nr_blocks; b++) {
			a = first + b * pmd;
			off = m->vma.offset + (a - m->vma.start);
			if (a < m->vma.start || a + pmd > m->vma.end)
				m->blocks[b] = BLK_PARTIAL;
			else if (!congruent)
				m->blocks[b] = BLK_MISALIGNED;
			else if (m->file_size >= 0 && off + pmd > (unsigned long)m->file_size)
				m->blocks[b] = BLK_BEYOND_EOF;
			else
				m->blocks[b] = BLK_ELIGIBLE;
		}
		if (t->pmd_detail && scan_pmd(fd, m, pmd))
			t->pmd_detail = false;
	}
	if (fd >= 0)
		close(fd);
	for (i = 0; i < t->nr_maps; i++) {
		struct mapping *m = &t->maps[i];
		long b;

		m->eligible = 0;
		m->pmd = 0;
		for (b = 0; b < m->nr_blocks; b++) {
			if (!t->pmd_detail && m->blocks[b] == BLK_PMD)
				m->blocks[b] = BLK_ELIGIBLE;
			m->eligible += m->blocks[b] == BLK_ELIGIBLE || m->blocks[b] == BLK_PMD;
			m->pmd += m->blocks[b] == BLK_PMD;
		}
		/* No per-block detail: the count FilePmdMapped gives. */
		if (!t->pmd_detail && m->pmd_kb > 0)
			m->pmd = m->pmd_kb * 1024 / (long)pmd;
		if (m->pmd > m->eligible)
			m->pmd = m->eligible;
	}
	return 0;
}

/*
 * Who has the text files open for writing: every /proc/N/fd/M that stats as
 * one of them, with O_WRONLY or O_RDWR in its fdinfo flags. A process whose
 * fds cannot be read leaves the answer unknown, unless a writer turns up.
 */
static void find_writers(struct target *t)
{
	char path[PATH_MAX], line[128];
	struct dirent *p, *f;
	bool blind = false;
	DIR *proc, *fds;
	struct stat st;
	unsigned int flags;
	FILE *fp;
	int i;

	for (i = 0; i < t->nr_maps; i++)
		t->maps[i].writers = 0;
	proc = opendir(sys_path(path, sizeof(path), "/proc"));
	if (!proc) {
		blind = true;
		goto out;
	}
	while ((p = readdir(proc))) {
		if (!isdigit((unsigned char)p->d_name[0]))
			continue;
		sys_path(path, sizeof(path), "/proc/%s/fd", p->d_name);
		fds = opendir(path);
		if (!fds) {
			if (errno != ENOENT)
				blind = true;
			continue;
		}
		while ((f = readdir(fds))) {
			if (f->d_name[0] == '.')
				continue;
			sys_path(path, sizeof(path), "/proc/%s/fd/%s", p->d_name, f->d_name);
			if (stat(path, &st) || !S_ISREG(st.st_mode))
				continue;
			for (i = 0; i < t->nr_maps; i++) {
				struct mapping *m = &t->maps[i];

				if (st.st_ino != m->vma.inode ||
				    st.st_dev != makedev(m->vma.dev_major, m->vma.dev_minor))
					continue;
				sys_path(path, sizeof(path), "/proc/%s/fdinfo/%s", p->d_name,
					 f->d_name);
				fp = fopen(path, "r");
				if (!fp)
					continue;
				while (fgets(line, sizeof(line), fp)) {
					if (sscanf(line, "flags: %o", &flags) == 1 &&
					    (flags & O_ACCMODE) != O_RDONLY)
						m->writers = 1;
				}
				fclose(fp);
			}
		}
		closedir(fds);
	}
	closedir(proc);
out:
	for (i = 0; i < t->nr_maps; i++) {
		if (blind && !t->maps[i].writers)
			t->maps[i].writers = -1;
	}
}

/*
 * Without CONFIG_READ_ONLY_THP_FOR_FS neither khugepaged nor MADV_COLLAPSE
 * makes huge pages of a regular file, but a fault still maps a PMD-sized
 * folio of a file system with large folios with a PMD: a PMD-mapped block
 * is huge whatever the config says, and its file system has large folios.
 * R_NO_CONFIG is for the files that have no other way.
 */
static bool no_collapse(const struct mapping *m, const struct system *sys)
{
	return sys->config == ROTHP_KCONFIG_N && !m->shmem;
}

static void find_reasons(struct target *t, const struct system *sys)
{
	int i;

	for (i = 0; i < t->nr_maps; i++) {
		struct mapping *m = &t->maps[i];
		unsigned int r = 0;

		if (no_collapse(m, sys) && (m->pmd > 0 || m->pmd_kb > 0))
			m->large_folios = 1;
		if (m->writers == 1)
			r |= 1U << R_WRITE_OPEN;
		if (!strcmp(sys->enabled, "never"))
			r |= 1U << R_THP_NEVER;
		if (t->thp_disabled == 1)
			r |= 1U << R_PROCESS_DISABLED;
		if (m->nohugepage)
			r |= 1U << R_NOHUGEPAGE;
		if (!strcmp(sys->enabled, "madvise") && !m->hugepage)
			r |= 1U << R_NO_MADVISE;
		if (no_collapse(m, sys) && m->large_folios != 1)
			r |= 1U << R_NO_CONFIG;
		/* THPeligible follows the option for regular files */
		if (!r && m->thp_eligible == 0 && !no_collapse(m, sys))
			r |= 1U << R_KERNEL_SAYS_NO;
		m->reasons = r;
	}
}

static void free_target(struct target *t)
{
	int i;

	for (i = 0; i < t->nr_maps; i++)
		free(t->maps[i].blocks);
	free(t->maps);
	t->maps = NULL;
	t->nr_maps = 0;
}

/* Explain why /proc/PID cannot be read. */
/*
 * run's library phase: CMD runs on and may end at any time; that it is
 * gone is no error then.
 */
static bool cmd_may_be_gone;

static void proc_error(pid_t pid, const char *what, int err)
{
	if ((err == ENOENT || err == ESRCH) && cmd_may_be_gone)
		return;
	if (err == ENOENT || err == ESRCH)
		err_msg("no process with PID %d\n", (int)pid);
	else if (err == EACCES || err == EPERM)
		err_msg("cannot read %s of PID %d: %s (it needs ptrace read access: the same user, or CAP_SYS_PTRACE)\n",
			what, (int)pid, strerror(err));
	else
		err_msg("cannot read %s of PID %d: %s\n", what, (int)pid, strerror(err));
}

/* Everything status reports; writers is the costly /proc scan. */
static int load_target(struct target *t, pid_t pid, const struct system *sys, bool writers)
{
	char path[PATH_MAX];

	memset(t, 0, sizeof(*t));
	t->pid = pid;
	if (read_line(sys_path(path, sizeof(path), "/proc/%d/comm", (int)pid), t->comm,
		      sizeof(t->comm))) {
		proc_error(pid, "comm", errno);
		return -1;
	}
	if (read_smaps(t)) {
		proc_error(pid, "smaps", errno);
		free_target(t);
		return -1;
	}
	t->thp_disabled = read_thp_disabled(pid);
	if (classify_blocks(t, sys)) {
		err_msg("out of memory\n");
		free_target(t);
		return -1;
	}
	if (writers)
		find_writers(t);
	find_reasons(t, sys);
	return 0;
}

/* JSON string: escape quotes, backslashes, controls; invalid UTF-8 as U+FFFD. */
static void json_str(FILE *fp, const char *s)
{
	const unsigned char *p = (const unsigned char *)s;
	int n, i;

	fputc('"', fp);
	while (*p) {
		if (*p == '"' || *p == '\\') {
			fprintf(fp, "\\%c", *p++);
		} else if (*p < 0x20 || *p == 0x7f) {
			fprintf(fp, "\\u%04x", *p++);
		} else if (*p < 0x80) {
			fputc(*p++, fp);
		} else {
			n = (*p & 0xe0) == 0xc0 && *p >= 0xc2 ? 1 :
			    (*p & 0xf0) == 0xe0 ? 2 : (*p & 0xf8) == 0xf0 && *p <= 0xf4 ? 3 : 0;
			for (i = 1; n && i <= n; i++) {
				if ((p[i] & 0xc0) != 0x80)
					n = 0;
			}
			if (n == 2 && ((*p == 0xe0 && p[1] < 0xa0) || (*p == 0xed && p[1] >= 0xa0)))
				n = 0;
			if (n == 3 && ((*p == 0xf0 && p[1] < 0x90) || (*p == 0xf4 && p[1] >= 0x90)))
				n = 0;
			if (!n) {
				fputs("\\ufffd", fp);
				p++;
			} else {
				fwrite(p, 1, n + 1, fp);
				p += n + 1;
			}
		}
	}
	fputc('"', fp);
}

static const char *tristate(int v)
{
	return v > 0 ? "yes" : v == 0 ? "no" : "unknown";
}

static void json_tristate(FILE *fp, int v)
{
	fputs(v > 0 ? "true" : v == 0 ? "false" : "null", fp);
}

/* A reason of m, in words. */
static const char *reason_str(const struct mapping *m, unsigned int r)
{
	static char buf[320];

	if (r != R_NO_CONFIG)
		return reason_text[r];
	if (m->large_folios == 0)
		snprintf(buf, sizeof(buf),
			 "%s, and %s has no large folios in this kernel: nothing makes the file's page cache huge",
			 no_config_text, m->fs);
	else
		snprintf(buf, sizeof(buf),
			 "%s: neither khugepaged nor MADV_COLLAPSE collapses the file; only a file system with large folios (xfs; ext4 from 6.16) gets huge pages at fault",
			 no_config_text);
	return buf;
}

/*
 * One object per line: the mappings and their runs of ineligible blocks
 * ("start", "blocks", "reason"), so that line tools can pick them out too.
 */
static void print_json(const struct target *t, const struct system *sys)
{
	long tot_blocks = 0, tot_eligible = 0, tot_pmd = 0, b, e;
	FILE *fp = stdout;
	int i;
	unsigned int r;

	fprintf(fp, "{\"version\": %d, \"pid\": %d, \"comm\": ", JSON_VERSION, (int)t->pid);
	json_str(fp, t->comm);
	fputs(",\n \"system\": {\"kernel\": ", fp);
	json_str(fp, sys->release);
	fprintf(fp, ", \"pmd_size\": %lu, \"thp_enabled\": ", sys->pmd_known ? sys->pmd_size : 0);
	if (sys->enabled[0])
		json_str(fp, sys->enabled);
	else
		fputs("null", fp);
	fputs(", \"read_only_thp_for_fs\": ", fp);
	json_tristate(fp, sys->config);
	fputs(", \"config_source\": ", fp);
	json_str(fp, sys->config_src);
	fputs(", \"process_thp_disabled\": ", fp);
	json_tristate(fp, t->thp_disabled);
	fprintf(fp, ", \"pmd_detail\": \"%s\"},\n \"mappings\": [", t->pmd_detail ?
		"pagemap_scan" : "smaps");
	for (i = 0; i < t->nr_maps; i++) {
		const struct mapping *m = &t->maps[i];
		unsigned long first = ALIGN_DOWN(m->vma.start, sys->pmd_size);
		const char *sep = "";

		fprintf(fp, "%s\n  {\"path\": ", i ? "," : "");
		json_str(fp, m->vma.path);
		fprintf(fp, ", \"start\": %lu, \"end\": %lu, \"offset\": %lu, ", m->vma.start,
			m->vma.end, m->vma.offset);
		fprintf(fp, "\"dev\": \"%02x:%02x\", \"inode\": %lu, \"size\": %lu, ",
			m->vma.dev_major, m->vma.dev_minor, m->vma.inode,
			m->vma.end - m->vma.start);
		fputs("\"file_size\": ", fp);
		if (m->file_size >= 0)
			fprintf(fp, "%lld", m->file_size);
		else
			fputs("null", fp);
		fputs(", \"fs\": ", fp);
		if (m->fs)
			json_str(fp, m->fs);
		else
			fputs("null", fp);
		fputs(", \"large_folios\": ", fp);
		json_tristate(fp, m->large_folios);
		fprintf(fp, ", \"blocks\": %ld, \"eligible_blocks\": %ld, ", m->nr_blocks,
			m->eligible);
		fprintf(fp, "\"pmd_mapped_blocks\": %ld, ", m->pmd);
		fputs("\"file_pmd_mapped_kb\": ", fp);
		if (m->pmd_kb >= 0)
			fprintf(fp, "%ld", m->pmd_kb);
		else
			fputs("null", fp);
		fputs(", \"thp_eligible\": ", fp);
		json_tristate(fp, m->thp_eligible);
		fprintf(fp, ", \"vm_hugepage\": %s, \"vm_nohugepage\": %s, \"writers\": ",
			m->hugepage ? "true" : "false", m->nohugepage ? "true" : "false");
		json_tristate(fp, m->writers);
		fputs(", \"reasons\": [", fp);
		for (r = 0; r < NR_REASONS; r++) {
			if (m->reasons & (1U << r)) {
				fprintf(fp, "%s\"%s\"", sep, reason_name[r]);
				sep = ", ";
			}
		}
		fputs("], \"ineligible\": [", fp);
		sep = "";
		for (b = 0; b < m->nr_blocks; b = e) {
			for (e = b + 1; e < m->nr_blocks && m->blocks[e] == m->blocks[b]; e++)
				;
			if (m->blocks[b] == BLK_ELIGIBLE || m->blocks[b] == BLK_PMD)
				continue;
			fprintf(fp, "%s{\"start\": %lu, \"blocks\": %ld, \"reason\": \"%s\"}", sep,
				first + b * sys->pmd_size, e - b, blk_name[m->blocks[b]]);
			sep = ", ";
		}
		fputs("]}", fp);
		tot_blocks += m->nr_blocks;
		tot_eligible += m->eligible;
		tot_pmd += m->pmd;
	}
	fprintf(fp, "\n ],\n \"summary\": {\"mappings\": %d, \"blocks\": %ld, ", t->nr_maps,
		tot_blocks);
	fprintf(fp, "\"eligible_blocks\": %ld, \"pmd_mapped_blocks\": %ld}}\n", tot_eligible,
		tot_pmd);
}

static void print_text(const struct target *t, const struct system *sys)
{
	long tot_blocks = 0, tot_eligible = 0, tot_pmd = 0, b, e;
	char size[32];
	unsigned int r;
	int i;

	printf("PID %d (%s): kernel %s, THP enabled=%s, CONFIG_READ_ONLY_THP_FOR_FS %s (%s)\n",
	       (int)t->pid, t->comm, sys->release, sys->enabled[0] ? sys->enabled : "unavailable",
	       tristate(sys->config), sys->config_src);
	size_str(sys->pmd_size, size, sizeof(size));
	if (!sys->pmd_known)
		printf("PMD size unknown (no %shpage_pmd_size): %s blocks assumed\n", THP_SYSFS,
		       size);
	if (t->thp_disabled == 1)
		printf("THP disabled for this process by prctl(PR_SET_THP_DISABLE)\n");
	for (i = 0; i < t->nr_maps; i++) {
		const struct mapping *m = &t->maps[i];
		unsigned long pmd = sys->pmd_size, first = ALIGN_DOWN(m->vma.start, pmd);

		printf("%s\n", m->vma.path);
		printf("    %#lx-%#lx %.1f MiB at file offset %#lx\n", m->vma.start, m->vma.end,
		       (m->vma.end - m->vma.start) / 1048576.0, m->vma.offset);
		printf("    file system %s, large folios %s\n", m->fs ? m->fs : "unknown",
		       tristate(m->large_folios));
		printf("    %s blocks %ld, eligible %ld, PMD-mapped %ld (FilePmdMapped %ld kB)\n",
		       size, m->nr_blocks, m->eligible, m->pmd, m->pmd_kb > 0 ? m->pmd_kb : 0);
		for (b = 0; b < m->nr_blocks; b = e) {
			for (e = b + 1; e < m->nr_blocks && m->blocks[e] == m->blocks[b]; e++)
				;
			if (m->blocks[b] == BLK_ELIGIBLE || m->blocks[b] == BLK_PMD)
				continue;
			printf("    ineligible: %ld block%s at %#lx: %s: %s\n", e - b,
			       e - b > 1 ? "s" : "", first + b * pmd, blk_name[m->blocks[b]],
			       blk_text[m->blocks[b]]);
		}
		/* What keeps the eligible blocks that are not PMD-mapped small. */
		for (r = 0; r < NR_REASONS && m->pmd < m->eligible; r++) {
			if (m->reasons & (1U << r))
				printf("    blocked: %s: %s\n", reason_name[r], reason_str(m, r));
		}
		if (m->pmd < m->eligible && no_collapse(m, sys) && m->large_folios == 1)
			printf("    at fault only: %s, so nothing collapses the file, but %s gives it large folios: a fault maps a PMD-sized one with a PMD (MADV_HUGEPAGE readahead makes them)\n",
			       no_config_text, m->fs ? m->fs : "its file system");
		if (m->pmd < m->eligible && m->writers < 0)
			printf("    open for writing: unknown (some processes' fds are unreadable)\n");
		tot_blocks += m->nr_blocks;
		tot_eligible += m->eligible;
		tot_pmd += m->pmd;
	}
	printf("summary: %d text mapping%s, %ld blocks, %ld eligible, %ld PMD-mapped (%s)\n",
	       t->nr_maps, t->nr_maps == 1 ? "" : "s", tot_blocks, tot_eligible, tot_pmd,
	       t->pmd_detail ? "per block from PAGEMAP_SCAN" : "count from FilePmdMapped");
}

/* What a PID is, for the messages that refuse one. */
#define PID_RULE		"a PID is 1 to 2147483647, in decimal digits only"

/*
 * A PID as the kernel prints it: decimal digits, 1 to INT_MAX, nothing
 * else. strtol() would take "+12", " 12" and "-1" as well.
 */
static int parse_pid(const char *cmd, const char *s, pid_t *pid)
{
	unsigned long v = 0;
	const char *p;

	for (p = s; *p; p++) {
		if (*p < '0' || *p > '9')
			break;
		v = v * 10 + (*p - '0');
		if (v > INT_MAX)
			break;
	}
	if (p == s || *p || !v) {
		usage_error(cmd, "'%s' is not a PID (" PID_RULE ")", s);
		return -1;
	}
	*pid = v;
	return 0;
}

/*
 * getopt_long(), and in *arg the index of the argument its answer came
 * from: optind moves past a cluster such as -jx, or -12, only once it has
 * taken all of it.
 */
static int next_option(int argc, char **argv, const char *shorts,
		       const struct option *longs, int *arg)
{
	int before = optind, c;

	c = getopt_long(argc, argv, shorts, longs, NULL);
	*arg = optind > before ? optind - 1 : optind;
	return c;
}

/* next_option() returned '?' (opterr is 0) for arg: say what was wrong. */
static int bad_option(const char *cmd, const char *arg)
{
	const char *eq = strchr(arg, '=');

	if (!optopt)
		usage_error(cmd, "unknown option '%s'", arg);
	else if (!strncmp(arg, "--", 2) && eq)
		usage_error(cmd, "option '%.*s' takes no value", (int)(eq - arg), arg);
	else if (isdigit(optopt) && arg[0] == '-' && isdigit((unsigned char)arg[1]))
		usage_error(cmd, "'%s' is not a PID (" PID_RULE ")", arg);
	else
		usage_error(cmd, "unknown option '-%c'", optopt);
	return EXIT_USAGE;
}

/* 0 if everything printed reached stdout, else 1 with a message. */
static int stdout_status(void)
{
	if (!fflush(stdout) && !ferror(stdout))
		return 0;
	err_msg("cannot write the output: %s\n", strerror(errno));
	return 1;
}

static void status_usage(FILE *fp)
{
	fprintf(fp,
		"usage: %s status [--json] [PID|--self]\n"
		"Show the text mappings (executable file mappings) of PID, by default\n"
		"of hugetext itself: their PMD-sized blocks (2 MiB on x86-64), which\n"
		"can be PMD-mapped, which are, and why the others are not.\n"
		"  -j, --json   machine-readable output (schema in the manual)\n"
		"  -s, --self   hugetext's own text (the default)\n"
		"  -h, --help   this help\n", prog);
}

/*
 * The target of status and collapse after their options: one PID, or
 * --self (the caller itself), not both; with neither, the caller too when
 * self_default, else a usage error. Returns 0 with *pid set, or EXIT_USAGE.
 */
static int target_pid(const char *cmd, int argc, char **argv, bool self,
		      bool self_default, pid_t *pid)
{
	if (argc - optind > 1) {
		usage_error(cmd, "unexpected argument '%s' after the PID", argv[optind + 1]);
		return EXIT_USAGE;
	}
	if (self && argc - optind == 1) {
		usage_error(cmd, "a PID and --self: give one of them");
		return EXIT_USAGE;
	}
	if (argc - optind == 1)
		return parse_pid(cmd, argv[optind], pid) ? EXIT_USAGE : 0;
	if (!self && !self_default) {
		usage_error(cmd, "no PID (or --self) given");
		return EXIT_USAGE;
	}
	*pid = getpid();
	return 0;
}

static int cmd_status(int argc, char **argv)
{
	static const struct option opts[] = {
		{ "json", no_argument, NULL, 'j' },
		{ "self", no_argument, NULL, 's' },
		{ "help", no_argument, NULL, 'h' },
		{ NULL, 0, NULL, 0 }
	};
	struct system sys;
	struct target t;
	bool json = false, self = false;
	pid_t pid = getpid();
	int c, arg;

	opterr = 0;
	while ((c = next_option(argc, argv, "+jsh", opts, &arg)) != -1) {
		switch (c) {
		case 'j':
			json = true;
			break;
		case 's':
			self = true;
			break;
		case 'h':
			status_usage(stdout);
			return stdout_status();
		default:
			return bad_option("status", argv[arg]);
		}
	}
	if (target_pid("status", argc, argv, self, true, &pid))
		return EXIT_USAGE;
	read_system(&sys);
	if (load_target(&t, pid, &sys, true))
		return 1;
	if (json)
		print_json(&t, &sys);
	else
		print_text(&t, &sys);
	free_target(&t);
	return stdout_status();
}

/* An error that ends the whole collapse, explained; false if not one. */
static bool fatal_error(int err, pid_t pid, const struct system *sys)
{
	switch (err) {
	case EPERM:
		err_msg("process_madvise(MADV_COLLAPSE) of PID %d: %s: collapsing another process's text needs CAP_SYS_NICE as well as ptrace read access (run as root)\n",
			(int)pid, strerror(err));
		return true;
	case EACCES:
		err_msg("process_madvise(MADV_COLLAPSE) of PID %d: %s: no ptrace read access to it (another user's process, or a set-user-ID one)\n",
			(int)pid, strerror(err));
		return true;
	case ENOSYS:
		err_msg("process_madvise(2) is not available: %s (Linux 5.10 or later is needed)\n",
			strerror(err));
		return true;
	case ESRCH:
		if (!cmd_may_be_gone)
			err_msg("PID %d exited\n", (int)pid);
		return true;
	case EINVAL:
		if (!kernel_older(sys, 6, 1))
			return false;
		err_msg("process_madvise(MADV_COLLAPSE): %s: kernel %s is older than 6.1, which added MADV_COLLAPSE\n",
			strerror(err), sys->release);
		return true;
	}
	return false;
}

static const char *errno_hint(int err)
{
	switch (err) {
	case EAGAIN:
		return "transient (a page was busy): retry";
	case ENOMEM:
		return "no free huge page";
	case EBUSY:
		return "memory cgroup charge failed";
	case EINVAL:
		return "the kernel refuses this range";
	}
	return "";
}

/*
 * After an EINVAL: the reasons found that MADV_COLLAPSE does not ignore,
 * on stderr. False if there is none.
 */
static bool explain_einval(const struct mapping *m, const struct system *sys)
{
	unsigned int r, why = m->reasons & ~COLLAPSE_IGNORES & ~(1U << R_NO_CONFIG);
	bool any = false;

	for (r = 0; r < NR_REASONS; r++) {
		if (why & (1U << r)) {
			err_msg("%s:   likely because %s\n", m->vma.path, reason_text[r]);
			any = true;
		}
	}
	if (no_collapse(m, sys)) {
		err_msg("%s:   likely because %s\n", m->vma.path, no_config_text);
		any = true;
	}
	return any;
}

struct collapse_result {
	long tried, collapsed, already, failed;
	bool fatal;
	bool interrupted;		/* run: a signal came for CMD */
};

/*
 * MADV_COLLAPSE of every eligible block not yet PMD-mapped, one
 * process_madvise() call per block, EAGAIN retried a few times. Errors go
 * to stderr; the report, unless quiet, to out (stderr for run, stdout for
 * collapse).
 */
static int collapse_target(pid_t pid, FILE *out, struct collapse_result *res)
{
	struct collapse_result z = { 0 };
	struct iovec probe = { NULL, 0 };
	struct system sys;
	struct target t, after;
	char size[32];
	double t0;
	int pidfd, i, j, tries, err;

	*res = z;
	read_system(&sys);
	if (!sys.pmd_known)
		err_msg("warning: cannot read %shpage_pmd_size: %s blocks assumed\n", THP_SYSFS,
			size_str(sys.pmd_size, size, sizeof(size)));
	if (load_target(&t, pid, &sys, true)) {
		res->fatal = true;
		return -1;
	}
	pidfd = syscall(__NR_pidfd_open, pid, 0);
	if (pidfd < 0) {
		err = errno;
		if (err == ENOSYS)
			err_msg("pidfd_open(2) is not available: %s (Linux 5.3 or later is needed)\n",
				strerror(err));
		else
			err_msg("pidfd_open(%d): %s\n", (int)pid, strerror(err));
		free_target(&t);
		res->fatal = true;
		return -1;
	}
	/*
	 * An empty range first: process_madvise() checks the advice, ptrace
	 * access and CAP_SYS_NICE before it looks at the ranges, so this says
	 * whether collapsing can work at all, even with nothing eligible.
	 */
	if (syscall(__NR_process_madvise, pidfd, &probe, 1, MADV_COLLAPSE, 0) < 0) {
		err = errno;
		if (!fatal_error(err, pid, &sys))
			err_msg("process_madvise(MADV_COLLAPSE) of PID %d: %s%s\n", (int)pid,
				strerror(err), err == EINVAL ?
				": this kernel does not take MADV_COLLAPSE from process_madvise(2)" : "");
		res->fatal = true;
	}
	for (i = 0; i < t.nr_maps && !res->fatal && !res->interrupted; i++) {
		struct mapping *m = &t.maps[i];
		unsigned long first = ALIGN_DOWN(m->vma.start, sys.pmd_size);
		long tried = 0, done = 0, failed = 0, b;

		if (!m->eligible)
			continue;
		t0 = now();
		for (b = 0; b < m->nr_blocks && !res->fatal; b++) {
			struct iovec iov = {
				.iov_base = (void *)(first + b * sys.pmd_size),
				.iov_len = sys.pmd_size,
			};
			long rc = -1;

			if (run_signal) {
				res->interrupted = true;
				break;
			}
			if (m->blocks[b] == BLK_PMD)
				res->already++;
			if (m->blocks[b] != BLK_ELIGIBLE)
				continue;
			tried++;
			for (tries = 0; tries < 4; tries++) {
				rc = syscall(__NR_process_madvise, pidfd, &iov, 1, MADV_COLLAPSE, 0);
				err = rc < 0 ? errno : 0;
				if (rc >= 0 || err != EAGAIN)
					break;
				usleep(50 * 1000);
			}
			if (rc >= 0) {
				done++;
				continue;
			}
			if (fatal_error(err, pid, &sys)) {
				res->fatal = true;
				break;
			}
			failed++;
			err_msg("%s: block %#lx: %s%s%s\n", m->vma.path,
				(unsigned long)iov.iov_base, strerror(err),
				*errno_hint(err) ? ": " : "", errno_hint(err));
			if (err == EINVAL && explain_einval(m, &sys)) {
				/* the rest of the mapping would fail the same way */
				for (j = b + 1; j < m->nr_blocks; j++) {
					failed += m->blocks[j] == BLK_ELIGIBLE;
					tried += m->blocks[j] == BLK_ELIGIBLE;
				}
				break;
			}
		}
		res->tried += tried;
		res->collapsed += done;
		res->failed += failed;
		if (!res->fatal && !res->interrupted && tried && !quiet)
			fprintf(out, "%s: collapsed %ld of %ld blocks in %.2f s\n", m->vma.path,
				done, tried, now() - t0);
	}
	close(pidfd);
	if (res->fatal || res->interrupted || quiet) {
		free_target(&t);
		return 0;
	}
	if (!load_target(&after, pid, &sys, false)) {
		for (i = 0; i < t.nr_maps; i++) {
			for (j = 0; j < after.nr_maps; j++) {
				if (after.maps[j].vma.start != t.maps[i].vma.start ||
				    !t.maps[i].eligible)
					continue;
				fprintf(out, "%s: PMD-mapped blocks %ld -> %ld of %ld eligible, FilePmdMapped %ld -> %ld kB\n",
					t.maps[i].vma.path, t.maps[i].pmd, after.maps[j].pmd,
					after.maps[j].eligible, t.maps[i].pmd_kb,
					after.maps[j].pmd_kb);
			}
		}
		free_target(&after);
	}
	fprintf(out, "summary: PID %d (%s): %ld blocks collapsed, %ld failed, %ld already PMD-mapped\n",
		(int)pid, t.comm, res->collapsed, res->failed, res->already);
	free_target(&t);
	return 0;
}

static void collapse_usage(FILE *fp)
{
	fprintf(fp,
		"usage: %s collapse [-q] PID|--self\n"
		"MADV_COLLAPSE, through process_madvise(2), every eligible PMD-sized block\n"
		"of the text mappings of PID that is not PMD-mapped yet, and report what\n"
		"became huge. Another process needs CAP_SYS_NICE and ptrace read access.\n"
		"  -s, --self   collapse hugetext's own text\n"
		"  -q, --quiet  no report: errors only (on standard error)\n"
		"  -h, --help   this help\n"
		"Exit status: 0 all collapsed (or nothing to do), 1 nothing collapsed\n"
		"because of an error, 3 some blocks collapsed and some failed.\n", prog);
}

static int collapse_exit(const struct collapse_result *res)
{
	if (res->fatal || (res->failed && !res->collapsed))
		return 1;
	return res->failed ? EXIT_PARTIAL : 0;
}

static int cmd_collapse(int argc, char **argv)
{
	static const struct option opts[] = {
		{ "self", no_argument, NULL, 's' },
		{ "quiet", no_argument, NULL, 'q' },
		{ "help", no_argument, NULL, 'h' },
		{ NULL, 0, NULL, 0 }
	};
	struct collapse_result res;
	bool self = false;
	pid_t pid = 0;
	int c, rc, arg;

	opterr = 0;
	while ((c = next_option(argc, argv, "+sqh", opts, &arg)) != -1) {
		switch (c) {
		case 's':
			self = true;
			break;
		case 'q':
			quiet = true;
			break;
		case 'h':
			collapse_usage(stdout);
			return stdout_status();
		default:
			return bad_option("collapse", argv[arg]);
		}
	}
	if (target_pid("collapse", argc, argv, self, false, &pid))
		return EXIT_USAGE;
	collapse_target(pid, stdout, &res);
	rc = collapse_exit(&res);
	return stdout_status() ? 1 : rc;
}

/* How long run watches for the libraries the loader maps, by default; how often. */
#define LIBS_WINDOW_S		2.0
#define LIBS_POLL_MS		10
#define LIBS_WINDOW_MAX		3600.0

static void run_usage(FILE *fp)
{
	fprintf(fp,
		"usage: %s run [--strict] [-q] [--libs SECONDS] [--] CMD [ARG...]\n"
		"Start CMD stopped right after execve(2) (ptrace), MADV_COLLAPSE its text\n"
		"(the program and its ELF interpreter), then let it run, and collapse the\n"
		"text of the shared libraries its loader maps in the first %g seconds.\n"
		"SIGHUP, SIGINT, SIGQUIT and SIGTERM sent to hugetext alone\n"
		"are passed on to CMD; sent to its process group, they reach CMD there.\n"
		"Exits with CMD's exit status, or dies of the signal that killed CMD.\n"
		"Needs what collapse needs; without it CMD runs anyway, with a warning.\n"
		"The report and the warnings go to standard error.\n"
		"  --strict     do not run CMD unless every eligible block was collapsed\n"
		"               (exit %d; the libraries' blocks do not count)\n"
		"  --libs SECONDS  watch for libraries that long (default %g; 0: none)\n"
		"  -q, --quiet  no report, errors and warnings only\n"
		"  -h, --help   this help\n", prog, LIBS_WINDOW_S, EXIT_STRICT, LIBS_WINDOW_S);
}

/*
 * End as CMD ended: with its exit status, or killed by the signal that
 * killed it, as timeout(1) does, so that a shell running hugetext sees the
 * ^C and stops too. Core dumps go off first, as CMD may have dumped one:
 * RLIMIT_CORE for a core file, PR_SET_DUMPABLE for a core_pattern pipe,
 * which ignores RLIMIT_CORE. 128 + N if the signal does not kill (the
 * init of a PID namespace ignores it).
 */
static int end_as_cmd(int status)
{
	struct rlimit no_core = { 0, 0 };
	sigset_t set;
	int sig;

	if (WIFEXITED(status))
		return WEXITSTATUS(status);
	if (!WIFSIGNALED(status))
		return 1;
	sig = WTERMSIG(status);
	fflush(NULL);
	setrlimit(RLIMIT_CORE, &no_core);
	prctl(PR_SET_DUMPABLE, 0);
	signal(sig, SIG_DFL);
	sigemptyset(&set);
	sigaddset(&set, sig);
	sigprocmask(SIG_UNBLOCK, &set, NULL);
	raise(sig);
	return 128 + sig;
}

/* The signals run passes on to CMD. */
static const int run_signals[] = { SIGHUP, SIGINT, SIGQUIT, SIGTERM };
static pid_t run_pgrp;
static bool run_leader;
static int watch_fd = -1;		/* hugetext's end of the watch's socket */

/*
 * The watch tells, of a signal for hugetext, whether CMD got it as well,
 * which siginfo cannot: kill(2) of a process group and of one PID both
 * say SI_USER and the sender, and only a terminal's signals SI_KERNEL.
 * It is a grandchild of hugetext (so that CMD stays its only child), in its
 * process group and cgroup, with the signals run passes on blocked and
 * read from a signalfd. A signal sent to the process group (a terminal's
 * ^C, ^\ or hangup, kill -- -PGID, a shell's SIGHUP to its jobs) reaches
 * it in the same kill(2) as hugetext and CMD, and so does one sent to each
 * process of a cgroup in turn, as systemd stops a service; one sent to
 * hugetext's PID alone does not. Asked with a signal's number, the watch
 * answers whether it got that signal in the last WATCH_KEEP seconds,
 * waiting up to WATCH_WAIT for it: a process group has it once kill(2)
 * returns, a cgroup once a loop has run. It exits with hugetext, at the
 * end of the socket.
 */
#define WATCH_WAIT		0.1	/* seconds */
#define WATCH_KEEP		1.0
/* For ps: not "hugetext", so that pkill hugetext and pgrep -f leave it be. */
#define WATCH_NAME		"hugetxt-watch"

/* Take the signals the watch got off its signalfd, with the time of each. */
static void watch_drain(int sfd, double *seen)
{
	struct signalfd_siginfo si;

	while (read(sfd, &si, sizeof(si)) == sizeof(si)) {
		if (si.ssi_signo < 32)
			seen[si.ssi_signo] = now();
	}
}

/* The watch's name, as its comm and as its command line. */
static void watch_name(void)
{
	char *start = main_argv[0], *end = start;
	size_t n = strlen(WATCH_NAME);
	int i;

	prctl(PR_SET_NAME, WATCH_NAME);
	/* The arguments lie end to end, as the kernel put them: blank them. */
	for (i = 0; i < main_argc; i++) {
		if (main_argv[i] != end)
			return;
		end += strlen(end) + 1;
	}
	memset(start, 0, end - start);
	memcpy(start, WATCH_NAME, n < (size_t)(end - start) ? n : (size_t)(end - start) - 1);
}

static void __attribute__((noreturn)) watch(int fd)
{
	double seen[32] = { 0 }, end;
	struct pollfd p[2];
	unsigned char q, a;
	sigset_t set;
	int sfd, null, std;
	size_t i;

	sigemptyset(&set);
	for (i = 0; i < ARRAY_SIZE(run_signals); i++)
		sigaddset(&set, run_signals[i]);
	sigprocmask(SIG_BLOCK, &set, NULL);
	sfd = signalfd(-1, &set, SFD_NONBLOCK | SFD_CLOEXEC);
	null = open("/dev/null", O_RDWR);
	if (sfd < 0 || null < 0 || chdir("/"))
		_exit(1);
	/* Hold no terminal, and no pipe that someone reads to its end. */
	for (std = 0; std < 3; std++)
		dup2(null, std);
	if (null > 2)
		close(null);
	watch_name();
	p[0].fd = fd;
	p[0].events = POLLIN;
	p[1].fd = sfd;
	p[1].events = POLLIN;
	for (;;) {
		if (poll(p, 2, -1) < 0 && errno != EINTR)
			_exit(1);
		watch_drain(sfd, seen);
		if (!p[0].revents)
			continue;
		if (read(fd, &q, 1) != 1 || q >= 32)
			_exit(0);
		end = now() + WATCH_WAIT;
		for (;;) {
			watch_drain(sfd, seen);
			a = seen[q] > 0 && now() - seen[q] <= WATCH_KEEP;
			if (a || now() >= end)
				break;
			poll(&p[1], 1, (int)((end - now()) * 1000) + 1);
		}
		seen[q] = 0;
		if (write(fd, &a, 1) != 1)
			_exit(0);
	}
}

/* Start the watch, with the signals to pass on blocked: its socket, or -1. */
static int start_watch(void)
{
	int sv[2], status;
	pid_t pid;

	if (socketpair(AF_UNIX, SOCK_STREAM | SOCK_CLOEXEC, 0, sv))
		return -1;
	pid = fork();
	if (!pid) {
		close(sv[0]);
		prctl(PR_SET_NAME, WATCH_NAME);
		if (!fork())
			watch(sv[1]);
		_exit(0);
	}
	close(sv[1]);
	if (pid < 0) {
		close(sv[0]);
		return -1;
	}
	while (waitpid(pid, &status, 0) < 0 && errno == EINTR)
		;
	return sv[0];
}

/*
 * Whether the watch got sig as well: 1 yes, 0 no, -1 no watch (none, or
 * it did not answer). Async-signal-safe.
 */
static int watch_saw(int sig)
{
	struct pollfd p = { .fd = watch_fd, .events = POLLIN };
	unsigned char q = sig, a;

	if (watch_fd < 0)
		return -1;
	if (send(watch_fd, &q, 1, MSG_NOSIGNAL) == 1 &&
	    poll(&p, 1, (int)((WATCH_WAIT + 1) * 1000)) == 1 && read(watch_fd, &a, 1) == 1)
		return a;
	close(watch_fd);
	watch_fd = -1;
	return -1;
}

/*
 * A signal for hugetext goes on to CMD unless CMD got it as well: it is in
 * hugetext's process group and the watch got the same signal. Without the
 * watch only what the kernel sends to a whole group (a terminal's ^C, ^\
 * or hangup) counts as got. Async-signal-safe; the signals run passes on
 * are blocked while it runs.
 */
static void forward_signal(int sig, siginfo_t *si, void *ctx)
{
	pid_t pid = run_child;
	int saved = errno, got = 0;

	(void)ctx;
	if (pid > 0) {
		if (getpgid(pid) == run_pgrp) {
			got = watch_saw(sig);
			if (got < 0)
				got = si->si_code == SI_KERNEL && !(sig == SIGHUP && run_leader);
		}
		if (!got)
			kill(pid, sig);
		run_signal = sig;
	}
	errno = saved;
}

/*
 * The next change of CMD: a ptrace stop if traced, else its end. Its PID is
 * forgotten before it is reaped, so that no signal goes to a PID reused.
 */
static int wait_cmd(pid_t pid, int *status, bool traced)
{
	siginfo_t si;

	for (;;) {
		memset(&si, 0, sizeof(si));
		if (!waitid(P_PID, pid, &si, WEXITED | WNOWAIT | (traced ? WSTOPPED : 0)))
			break;
		if (errno != EINTR)
			goto fail;
	}
	if (si.si_code == CLD_EXITED || si.si_code == CLD_KILLED || si.si_code == CLD_DUMPED)
		run_child = 0;
	while (waitpid(pid, status, traced ? WUNTRACED : 0) < 0) {
		if (errno != EINTR)
			goto fail;
	}
	return 0;
fail:
	err_msg("waiting for %d: %s\n", (int)pid, strerror(errno));
	return -1;
}

/*
 * A sum of the start and end of each text mapping of pid (r-x, a file),
 * which changes when the loader maps one: 0 if its maps cannot be read.
 */
static unsigned long text_maps_sum(pid_t pid)
{
	char path[PATH_MAX], *line = NULL;
	unsigned long sum = 0;
	struct rothp_vma vma;
	size_t cap = 0;
	FILE *fp;

	fp = fopen(sys_path(path, sizeof(path), "/proc/%d/maps", (int)pid), "r");
	if (!fp)
		return 0;
	while (getline(&line, &cap, fp) > 0) {
		if (!rothp_vma_parse(line, &vma) && !strcmp(vma.perms, "r-xp") &&
		    vma.path[0] == '/')
			sum = sum * 31 + (vma.start ^ (vma.end << 7));
	}
	free(line);
	fclose(fp);
	return sum;
}

/* The program pid runs: its /proc/PID/exe's device and inode, or 0s. */
static void cmd_exe(pid_t pid, struct stat *st)
{
	char path[PATH_MAX];

	if (stat(sys_path(path, sizeof(path), "/proc/%d/exe", (int)pid), st))
		memset(st, 0, sizeof(*st));
}

/*
 * The shared libraries: the loader maps them after the exec stop, with CMD
 * running. For window seconds, or until CMD ends, runs another program
 * (execve() again: that one is not collapsed) or a signal comes for it,
 * look at its text mappings every LIBS_POLL_MS and collapse what appeared
 * since last, the sum of text_maps_sum() taken at the exec stop
 * (collapse_target() skips what is PMD-mapped already). A library
 * dlopen()ed later is left to the kernel's policy.
 */
static void collapse_libraries(pid_t pid, double window, unsigned long last,
			       const struct stat *exe)
{
	double end = now() + window;
	struct collapse_result res;
	unsigned long cur;
	struct stat st;
	siginfo_t si;

	cmd_may_be_gone = true;
	while (now() < end && !run_signal) {
		usleep(LIBS_POLL_MS * 1000);
		memset(&si, 0, sizeof(si));
		if (!waitid(P_PID, pid, &si, WEXITED | WNOHANG | WNOWAIT) && si.si_pid == pid)
			break;
		cmd_exe(pid, &st);
		if (st.st_dev != exe->st_dev || st.st_ino != exe->st_ino)
			break;
		cur = text_maps_sum(pid);
		if (!cur || cur == last)
			continue;
		last = cur;
		collapse_target(pid, stderr, &res);
		if (res.fatal)
			break;
	}
	cmd_may_be_gone = false;
}

/* --libs SECONDS: 0 to LIBS_WINDOW_MAX, decimal. */
static int parse_window(const char *s, double *window)
{
	char *end;

	errno = 0;
	*window = strtod(s, &end);
	if (errno || end == s || *end || strspn(s, "0123456789.") != strlen(s) ||
	    !isdigit((unsigned char)s[0]) || *window > LIBS_WINDOW_MAX) {
		usage_error("run", "--libs '%s': not a number of seconds from 0 to %g", s,
			    LIBS_WINDOW_MAX);
		return EXIT_USAGE;
	}
	return 0;
}

static int cmd_run(int argc, char **argv)
{
	static const struct option opts[] = {
		{ "strict", no_argument, NULL, 'S' },
		{ "quiet", no_argument, NULL, 'q' },
		{ "libs", required_argument, NULL, 'L' },
		{ "help", no_argument, NULL, 'h' },
		{ NULL, 0, NULL, 0 }
	};
	struct sigaction fwd = {
		.sa_sigaction = forward_signal,
		.sa_flags = SA_SIGINFO | SA_RESTART,
	};
	struct sigaction old[ARRAY_SIZE(run_signals)];
	bool caught[ARRAY_SIZE(run_signals)];
	struct collapse_result res;
	bool strict = false, bad;
	double libs = LIBS_WINDOW_S;
	unsigned long maps_sum;
	sigset_t block, mask;
	struct stat exe;
	int c, status, err, arg;
	size_t i;
	pid_t pid;

	opterr = 0;
	while ((c = next_option(argc, argv, "+qh", opts, &arg)) != -1) {
		switch (c) {
		case 'S':
			strict = true;
			break;
		case 'q':
			quiet = true;
			break;
		case 'L':
			if (parse_window(optarg, &libs))
				return EXIT_USAGE;
			break;
		case 'h':
			run_usage(stdout);
			return stdout_status();
		default:
			if (optopt == 'L' && !strncmp(argv[arg], "--", 2)) {
				usage_error("run", "--libs needs a number of seconds");
				return EXIT_USAGE;
			}
			return bad_option("run", argv[arg]);
		}
	}
	if (optind >= argc) {
		usage_error("run", "no command to run");
		return EXIT_USAGE;
	}

	/*
	 * Catch the signals to pass on, blocked until the child's PID is
	 * known. One that is ignored (a background job's SIGINT) stays
	 * ignored, for CMD too, as a shell leaves it.
	 */
	sigemptyset(&block);
	for (i = 0; i < ARRAY_SIZE(run_signals); i++)
		sigaddset(&block, run_signals[i]);
	fwd.sa_mask = block;
	sigprocmask(SIG_BLOCK, &block, &mask);
	run_pgrp = getpgrp();
	run_leader = getsid(0) == getpid();
	for (i = 0; i < ARRAY_SIZE(run_signals); i++) {
		sigaction(run_signals[i], NULL, &old[i]);
		caught[i] = old[i].sa_handler != SIG_IGN;
		if (caught[i])
			sigaction(run_signals[i], &fwd, NULL);
	}
	fflush(NULL);
	pid = fork();
	if (pid < 0) {
		err_msg("fork: %s\n", strerror(errno));
		return 1;
	}
	if (!pid) {
		for (i = 0; i < ARRAY_SIZE(run_signals); i++) {
			if (caught[i])
				sigaction(run_signals[i], &old[i], NULL);
		}
		sigprocmask(SIG_SETMASK, &mask, NULL);
		/* Stopped with SIGTRAP once the exec succeeds. */
		if (ptrace(PTRACE_TRACEME, 0, NULL, NULL)) {
			err = errno;
			if (strict) {
				err_msg("ptrace(PTRACE_TRACEME): %s: cannot collapse the text of %s: not running it (--strict)\n",
					strerror(err), argv[optind]);
				_exit(EXIT_STRICT);
			}
			err_msg("warning: ptrace(PTRACE_TRACEME): %s: running %s with its text not collapsed\n",
				strerror(err), argv[optind]);
		}
		execvp(argv[optind], argv + optind);
		err = errno;
		err_msg("cannot run %s: %s\n", argv[optind], strerror(err));
		_exit(err == ENOENT ? 127 : 126);
	}
	run_child = pid;
	/* After CMD, so that a group signal the watch gets reached CMD too. */
	watch_fd = start_watch();
	sigprocmask(SIG_SETMASK, &mask, NULL);

	for (;;) {
		if (wait_cmd(pid, &status, true))
			return 1;
		if (!WIFSTOPPED(status))
			return end_as_cmd(status);	/* untraced, or it never ran CMD */
		if (WSTOPSIG(status) == SIGTRAP)
			break;
		/* A signal before the exec: deliver it. */
		ptrace(PTRACE_CONT, pid, NULL, (void *)(long)WSTOPSIG(status));
	}
	collapse_target(pid, stderr, &res);
	bad = res.fatal || res.failed || res.interrupted;
	/* A signal passed on meanwhile ends CMD before its first instruction. */
	if (bad && strict && !run_signal) {
		err_msg("not all of the text of %s could be collapsed: not running it (--strict)\n",
			argv[optind]);
		kill(pid, SIGKILL);
		ptrace(PTRACE_DETACH, pid, NULL, NULL);
		wait_cmd(pid, &status, false);
		return EXIT_STRICT;
	}
	if (bad && !run_signal)
		err_msg("warning: running %s with its text not (all) huge\n", argv[optind]);
	/* What the loader has not mapped yet: the libraries' phase sees it come. */
	maps_sum = text_maps_sum(pid);
	cmd_exe(pid, &exe);
	if (ptrace(PTRACE_DETACH, pid, NULL, NULL))
		err_msg("ptrace(PTRACE_DETACH): %s\n", strerror(errno));
	else if (!res.fatal && libs > 0)
		collapse_libraries(pid, libs, maps_sum, &exe);
	if (wait_cmd(pid, &status, false))
		return 1;
	return end_as_cmd(status);
}

static void usage(FILE *fp)
{
	fprintf(fp,
		"usage: %s COMMAND [OPTIONS] [ARGS]\n"
		"Huge pages (PMD mappings, 2 MiB on x86-64) for the program text of processes.\n"
		"  status [--json] [PID|--self]    what is huge, what can be, and why not\n"
		"  collapse [-q] PID|--self        MADV_COLLAPSE the text of a running process\n"
		"  run [--strict] [-q] [--libs S] -- CMD ARGS\n"
		"                                  start CMD with its text collapsed, and\n"
		"                                  its libraries as the loader maps them\n"
		"  help [COMMAND]                  this help, or the help of COMMAND\n"
		"  --version                       the version of hugetext\n"
		"The manual is hugetext(1).\n", prog);
}

static const struct command {
	const char *name;
	int (*run)(int argc, char **argv);
	void (*usage)(FILE *fp);
} commands[] = {
	{ "status", cmd_status, status_usage },
	{ "collapse", cmd_collapse, collapse_usage },
	{ "run", cmd_run, run_usage },
};

static const struct command *find_command(const char *name)
{
	size_t i;

	for (i = 0; i < ARRAY_SIZE(commands); i++) {
		if (!strcmp(commands[i].name, name))
			return &commands[i];
	}
	return NULL;
}

static bool is_help(const char *s)
{
	return !strcmp(s, "help") || !strcmp(s, "--help") || !strcmp(s, "-h");
}

int main(int argc, char **argv)
{
	const char *env = secure_getenv("HUGETEXT_ROOT");
	const struct command *c;

	main_argc = argc;
	main_argv = argv;
	if (env)
		root = env;
	if (argc < 2) {
		usage_error(NULL, "no command given");
		return EXIT_USAGE;
	}
	if (is_help(argv[1])) {
		if (argc > 3) {
			usage_error(NULL, "help takes one command, not also '%s'", argv[3]);
			return EXIT_USAGE;
		}
		c = argc == 3 ? find_command(argv[2]) : NULL;
		if (argc == 3 && !c) {
			usage_error(NULL, "no command '%s' to help with (status, collapse, run)",
				    argv[2]);
			return EXIT_USAGE;
		}
		if (c)
			c->usage(stdout);
		else
			usage(stdout);
		return stdout_status();
	}
	if (!strcmp(argv[1], "--version") || !strcmp(argv[1], "-V")) {
		if (argc > 2) {
			usage_error(NULL, "unexpected argument '%s' after --version", argv[2]);
			return EXIT_USAGE;
		}
		printf("%s %s\n", prog, HUGETEXT_VERSION);
		return stdout_status();
	}
	c = find_command(argv[1]);
	if (!c) {
		if (argv[1][0] == '-')
			usage_error(NULL, "unknown option '%s'", argv[1]);
		else
			usage_error(NULL, "unknown command '%s'", argv[1]);
		return EXIT_USAGE;
	}
	return c->run(argc - 1, argv + 1);
}
