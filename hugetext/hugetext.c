// SPDX-License-Identifier: GPL-2.0
/*
 * hugetext: show, and make, huge pages for the program text of a process.
 *
 *   hugetext status [--json] [PID]     which 2 MiB blocks of each text mapping
 *                                      can be PMD-mapped, which are, and why not
 *   hugetext collapse PID|--self       MADV_COLLAPSE them through process_madvise(2)
 *   hugetext run [--strict] -- CMD     start CMD with its text collapsed before
 *                                      its first instruction
 *
 * Documentation/hugetext.rst is the manual, with the JSON schema.
 */
#define _GNU_SOURCE
#include <ctype.h>
#include <dirent.h>
#include <errno.h>
#include <fcntl.h>
#include <getopt.h>
#include <limits.h>
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
#include <sys/ptrace.h>
#include <sys/stat.h>
#include <sys/syscall.h>
#include <sys/sysmacros.h>
#include <sys/uio.h>
#include <sys/utsname.h>
#include <sys/wait.h>

#ifndef MADV_COLLAPSE
#define MADV_COLLAPSE		25
#endif
#ifndef __NR_pidfd_open
#define __NR_pidfd_open		434
#endif
#ifndef __NR_process_madvise
#define __NR_process_madvise	440
#endif

/* PAGEMAP_SCAN (Linux 6.7), as include/uapi/linux/fs.h defines it. */
#define HT_PAGE_IS_PRESENT	0x08
#define HT_PAGE_IS_HUGE		0x40

struct ht_page_region {
	uint64_t start;
	uint64_t end;
	uint64_t categories;
};

struct ht_pm_scan_arg {
	uint64_t size;
	uint64_t flags;
	uint64_t start;
	uint64_t end;
	uint64_t walk_end;
	uint64_t vec;
	uint64_t vec_len;
	uint64_t max_pages;
	uint64_t category_inverted;
	uint64_t category_mask;
	uint64_t category_anyof_mask;
	uint64_t return_mask;
};

#define HT_PAGEMAP_SCAN		_IOWR('f', 16, struct ht_pm_scan_arg)

#define PMD_SIZE		(2UL << 20)
#define ARRAY_SIZE(a)		(sizeof(a) / sizeof((a)[0]))
#define ALIGN_UP(x, a)		(((x) + (a) - 1) & ~((a) - 1))
#define ALIGN_DOWN(x, a)	((x) & ~((a) - 1))
#define THP_SYSFS		"/sys/kernel/mm/transparent_hugepage/"
#define JSON_VERSION		1

#define EXIT_USAGE		2
#define EXIT_PARTIAL		3
#define EXIT_STRICT		125

/* The state of one 2 MiB block of a text mapping. */
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
	[BLK_MISALIGNED]	= "address and file offset differ modulo 2 MiB",
	[BLK_BEYOND_EOF]	= "reaches past the end of the file",
};

/* What stops the eligible blocks of a whole mapping from becoming huge. */
enum reason {
	R_WRITE_OPEN,		/* a process has the file open for writing */
	R_THP_NEVER,		/* sysfs enabled=never */
	R_PROCESS_DISABLED,	/* prctl(PR_SET_THP_DISABLE) */
	R_NOHUGEPAGE,		/* madvise(MADV_NOHUGEPAGE), VmFlags "nh" */
	R_NO_MADVISE,		/* enabled=madvise without VM_HUGEPAGE */
	R_NO_CONFIG,		/* CONFIG_READ_ONLY_THP_FOR_FS is not set */
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

static const char * const reason_text[NR_REASONS] = {
	[R_WRITE_OPEN]		= "the file is open for writing",
	[R_THP_NEVER]		= "THP enabled=never (khugepaged and faults; collapse ignores it)",
	[R_PROCESS_DISABLED]	= "THP disabled for the process by prctl(PR_SET_THP_DISABLE)",
	[R_NOHUGEPAGE]		= "madvise(MADV_NOHUGEPAGE) on the mapping",
	[R_NO_MADVISE]		= "THP enabled=madvise and no MADV_HUGEPAGE (khugepaged; collapse ignores it)",
	[R_NO_CONFIG]		= "the kernel lacks CONFIG_READ_ONLY_THP_FOR_FS",
	[R_KERNEL_SAYS_NO]	= "the kernel reports THPeligible 0",
};

/* Reasons MADV_COLLAPSE ignores: it does not look at the sysfs mode. */
#define COLLAPSE_IGNORES	((1U << R_THP_NEVER) | (1U << R_NO_MADVISE) | \
				 (1U << R_KERNEL_SAYS_NO))

struct mapping {
	unsigned long start, end, offset, inode;
	unsigned int major, minor;
	char perms[5];
	char path[PATH_MAX];
	long long file_size;		/* -1: unknown (file replaced or deleted) */
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
	unsigned long pmd_size;		/* 0: no THP */
	int config;			/* CONFIG_READ_ONLY_THP_FOR_FS: 1, 0, -1 */
	char config_src[64];
	char release[65];
};

static const char *prog = "hugetext";
static bool quiet;

static void __attribute__((format(printf, 1, 2))) err_msg(const char *fmt, ...)
{
	va_list ap;

	fprintf(stderr, "%s: ", prog);
	va_start(ap, fmt);
	vfprintf(stderr, fmt, ap);
	va_end(ap);
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

/* Look CONFIG_READ_ONLY_THP_FOR_FS up in one config: 1, 0, or -1 if none. */
static int config_scan(FILE *fp)
{
	static const char name[] = "CONFIG_READ_ONLY_THP_FOR_FS";
	char line[512];
	bool any = false;

	while (fgets(line, sizeof(line), fp)) {
		if (!strncmp(line, "CONFIG_", 7) || !strncmp(line, "# CONFIG_", 9))
			any = true;
		if (!strncmp(line, name, sizeof(name) - 1) && line[sizeof(name) - 1] == '=')
			return line[sizeof(name)] == 'y';
	}
	return any ? 0 : -1;
}

/*
 * /boot/config-$(uname -r) first, then /proc/config.gz through gzip, which
 * spares a static binary a zlib (busybox has gzip too).
 */
static void read_config(struct system *sys)
{
	char path[PATH_MAX];
	FILE *fp;

	sys->config = -1;
	snprintf(sys->config_src, sizeof(sys->config_src), "no kernel config found");
	snprintf(path, sizeof(path), "/boot/config-%s", sys->release);
	fp = fopen(path, "r");
	if (fp) {
		sys->config = config_scan(fp);
		fclose(fp);
		if (sys->config >= 0) {
			snprintf(sys->config_src, sizeof(sys->config_src), "/boot/config");
			return;
		}
	}
	if (access("/proc/config.gz", R_OK))
		return;
	fflush(NULL);
	fp = popen("gzip -dc /proc/config.gz 2>/dev/null", "r");
	if (!fp)
		return;
	sys->config = config_scan(fp);
	pclose(fp);
	if (sys->config >= 0)
		snprintf(sys->config_src, sizeof(sys->config_src), "/proc/config.gz");
}

static void read_system(struct system *sys)
{
	struct utsname u;
	char buf[128], *l, *r;

	memset(sys, 0, sizeof(*sys));
	uname(&u);
	snprintf(sys->release, sizeof(sys->release), "%s", u.release);
	if (!read_line(THP_SYSFS "hpage_pmd_size", buf, sizeof(buf)))
		sys->pmd_size = strtoul(buf, NULL, 10);
	/* "always [madvise] never": the bracketed word */
	if (!read_line(THP_SYSFS "enabled", buf, sizeof(buf))) {
		l = strchr(buf, '[');
		r = l ? strchr(l, ']') : NULL;
		if (r) {
			*r = '\0';
			snprintf(sys->enabled, sizeof(sys->enabled), "%s", l + 1);
		}
	}
	read_config(sys);
}

static bool is_text(const struct mapping *m)
{
	return m->perms[0] == 'r' && m->perms[1] != 'w' && m->perms[2] == 'x' && m->inode;
}

/* The header line of a VMA in /proc/PID/smaps; 0 if it is one. */
static int parse_vma(const char *line, struct mapping *m)
{
	int n = 0;

	memset(m, 0, sizeof(*m));
	if (sscanf(line, "%lx-%lx %4s %lx %x:%x %lu %n", &m->start, &m->end, m->perms,
		   &m->offset, &m->major, &m->minor, &m->inode, &n) < 7 || !n)
		return -1;
	snprintf(m->path, sizeof(m->path), "%s", line + n);
	m->path[strcspn(m->path, "\n")] = '\0';
	m->pmd_kb = -1;
	m->thp_eligible = -1;
	m->writers = -1;
	m->file_size = -1;
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
	char path[64], *line = NULL;
	struct mapping cur;
	bool in_text = false;
	size_t cap = 0;
	FILE *fp;
	long v;

	snprintf(path, sizeof(path), "/proc/%d/smaps", (int)t->pid);
	fp = fopen(path, "r");
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
		if (sscanf(line, "FilePmdMapped: %ld kB", &v) == 1) {
			t->maps[t->nr_maps - 1].pmd_kb = v;
		} else if (sscanf(line, "THPeligible: %ld", &v) == 1) {
			t->maps[t->nr_maps - 1].thp_eligible = v;
		} else if (!strncmp(line, "VmFlags:", 8)) {
			t->maps[t->nr_maps - 1].hugepage = !!strstr(line, " hg");
			t->maps[t->nr_maps - 1].nohugepage = !!strstr(line, " nh");
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
	char path[64], line[256];
	int ret = -1, v;
	FILE *fp;

	snprintf(path, sizeof(path), "/proc/%d/status", (int)pid);
	fp = fopen(path, "r");
	if (!fp)
		return -1;
	while (fgets(line, sizeof(line), fp)) {
		if (sscanf(line, "THP_enabled: %d", &v) == 1) {
			ret = !v;
			break;
		}
	}
	fclose(fp);
	return ret;
}

/*
 * Mark the PMD-mapped blocks with PAGEMAP_SCAN: the ranges mapped by a
 * present huge PMD come back with PAGE_IS_HUGE (pagemap_scan_thp_entry() in
 * fs/proc/task_mmu.c); a THP mapped by PTEs does not. It needs the same
 * access as smaps, no privilege. -1 where the kernel lacks it (before 6.7).
 */
static int scan_pmd(int fd, struct mapping *m)
{
	struct ht_page_region vec[32];
	struct ht_pm_scan_arg arg;
	unsigned long addr = m->start, first = ALIGN_DOWN(m->start, PMD_SIZE), a;
	long i, n, b;

	while (addr < m->end) {
		memset(&arg, 0, sizeof(arg));
		arg.size = sizeof(arg);
		arg.start = addr;
		arg.end = m->end;
		arg.vec = (uintptr_t)vec;
		arg.vec_len = ARRAY_SIZE(vec);
		arg.category_mask = HT_PAGE_IS_HUGE | HT_PAGE_IS_PRESENT;
		arg.return_mask = HT_PAGE_IS_HUGE;
		n = ioctl(fd, HT_PAGEMAP_SCAN, &arg);
		if (n < 0)
			return -1;
		for (i = 0; i < n; i++) {
			for (a = ALIGN_UP(vec[i].start, PMD_SIZE); a + PMD_SIZE <= vec[i].end;
			     a += PMD_SIZE) {
				b = (a - first) / PMD_SIZE;
				if (b < m->nr_blocks && m->blocks[b] == BLK_ELIGIBLE)
					m->blocks[b] = BLK_PMD;
			}
		}
		if (n < (long)arg.vec_len || arg.walk_end <= addr)
			break;
		addr = arg.walk_end;
	}
	return 0;
}

/* Split each mapping into 2 MiB blocks and classify them. */
static int classify_blocks(struct target *t)
{
	char path[64];
	struct stat st;
	int fd, i;

	snprintf(path, sizeof(path), "/proc/%d/pagemap", (int)t->pid);
	fd = open(path, O_RDONLY);
	t->pmd_detail = fd >= 0;
	for (i = 0; i < t->nr_maps; i++) {
		struct mapping *m = &t->maps[i];
		unsigned long first = ALIGN_DOWN(m->start, PMD_SIZE), a, off;
		bool congruent = !((m->start - m->offset) & (PMD_SIZE - 1));
		long b;

		if (m->path[0] == '/' && !stat(m->path, &st) && st.st_ino == m->inode &&
		    st.st_dev == makedev(m->major, m->minor))
			m->file_size = st.st_size;
		m->nr_blocks = (ALIGN_UP(m->end, PMD_SIZE) - first) / PMD_SIZE;
		m->blocks = calloc(m->nr_blocks, 1);
		if (!m->blocks) {
			if (fd >= 0)
				close(fd);
			return -1;
		}
		for (b = 0; b < m->nr_blocks; b++) {
			a = first + b * PMD_SIZE;
			off = m->offset + (a - m->start);
			if (a < m->start || a + PMD_SIZE > m->end)
				m->blocks[b] = BLK_PARTIAL;
			else if (!congruent)
				m->blocks[b] = BLK_MISALIGNED;
			else if (m->file_size >= 0 && off + PMD_SIZE > (unsigned long)m->file_size)
				m->blocks[b] = BLK_BEYOND_EOF;
			else
				m->blocks[b] = BLK_ELIGIBLE;
		}
		if (t->pmd_detail && scan_pmd(fd, m))
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
			m->pmd = m->pmd_kb * 1024 / (long)PMD_SIZE;
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
	proc = opendir("/proc");
	if (!proc) {
		blind = true;
		goto out;
	}
	while ((p = readdir(proc))) {
		if (!isdigit((unsigned char)p->d_name[0]))
			continue;
		snprintf(path, sizeof(path), "/proc/%s/fd", p->d_name);
		fds = opendir(path);
		if (!fds) {
			if (errno != ENOENT)
				blind = true;
			continue;
		}
		while ((f = readdir(fds))) {
			if (f->d_name[0] == '.')
				continue;
			snprintf(path, sizeof(path), "/proc/%s/fd/%s", p->d_name, f->d_name);
			if (stat(path, &st) || !S_ISREG(st.st_mode))
				continue;
			for (i = 0; i < t->nr_maps; i++) {
				struct mapping *m = &t->maps[i];

				if (st.st_ino != m->inode ||
				    st.st_dev != makedev(m->major, m->minor))
					continue;
				snprintf(path, sizeof(path), "/proc/%s/fdinfo/%s", p->d_name,
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

static void find_reasons(struct target *t, const struct system *sys)
{
	int i;

	for (i = 0; i < t->nr_maps; i++) {
		struct mapping *m = &t->maps[i];
		unsigned int r = 0;

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
		if (sys->config == 0)
			r |= 1U << R_NO_CONFIG;
		if (!r && m->thp_eligible == 0)
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
static void proc_error(pid_t pid, const char *what, int err)
{
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
	char path[64];

	memset(t, 0, sizeof(*t));
	t->pid = pid;
	snprintf(path, sizeof(path), "/proc/%d/comm", (int)pid);
	if (read_line(path, t->comm, sizeof(t->comm))) {
		proc_error(pid, "comm", errno);
		return -1;
	}
	if (read_smaps(t)) {
		proc_error(pid, "smaps", errno);
		free_target(t);
		return -1;
	}
	t->thp_disabled = read_thp_disabled(pid);
	if (classify_blocks(t)) {
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
	fprintf(fp, ", \"pmd_size\": %lu, \"thp_enabled\": ", sys->pmd_size);
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
		unsigned long first = ALIGN_DOWN(m->start, PMD_SIZE);
		const char *sep = "";

		fprintf(fp, "%s\n  {\"path\": ", i ? "," : "");
		json_str(fp, m->path);
		fprintf(fp, ", \"start\": %lu, \"end\": %lu, \"offset\": %lu, ", m->start, m->end,
			m->offset);
		fprintf(fp, "\"dev\": \"%02x:%02x\", \"inode\": %lu, \"size\": %lu, ", m->major,
			m->minor, m->inode, m->end - m->start);
		fputs("\"file_size\": ", fp);
		if (m->file_size >= 0)
			fprintf(fp, "%lld", m->file_size);
		else
			fputs("null", fp);
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
				first + b * PMD_SIZE, e - b, blk_name[m->blocks[b]]);
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
	unsigned int r;
	int i;

	printf("PID %d (%s): kernel %s, THP enabled=%s, CONFIG_READ_ONLY_THP_FOR_FS %s (%s)\n",
	       (int)t->pid, t->comm, sys->release, sys->enabled[0] ? sys->enabled : "unavailable",
	       tristate(sys->config), sys->config_src);
	if (t->thp_disabled == 1)
		printf("THP disabled for this process by prctl(PR_SET_THP_DISABLE)\n");
	for (i = 0; i < t->nr_maps; i++) {
		const struct mapping *m = &t->maps[i];
		unsigned long first = ALIGN_DOWN(m->start, PMD_SIZE);

		printf("%s\n", m->path);
		printf("    %#lx-%#lx %.1f MiB at file offset %#lx\n", m->start, m->end,
		       (m->end - m->start) / 1048576.0, m->offset);
		printf("    2 MiB blocks %ld, eligible %ld, PMD-mapped %ld (FilePmdMapped %ld kB)\n",
		       m->nr_blocks, m->eligible, m->pmd, m->pmd_kb > 0 ? m->pmd_kb : 0);
		for (b = 0; b < m->nr_blocks; b = e) {
			for (e = b + 1; e < m->nr_blocks && m->blocks[e] == m->blocks[b]; e++)
				;
			if (m->blocks[b] == BLK_ELIGIBLE || m->blocks[b] == BLK_PMD)
				continue;
			printf("    ineligible: %ld block%s at %#lx: %s: %s\n", e - b,
			       e - b > 1 ? "s" : "", first + b * PMD_SIZE, blk_name[m->blocks[b]],
			       blk_text[m->blocks[b]]);
		}
		for (r = 0; r < NR_REASONS; r++) {
			if (m->reasons & (1U << r))
				printf("    blocked: %s: %s\n", reason_name[r], reason_text[r]);
		}
		if (m->writers < 0)
			printf("    open for writing: unknown (some processes' fds are unreadable)\n");
		tot_blocks += m->nr_blocks;
		tot_eligible += m->eligible;
		tot_pmd += m->pmd;
	}
	printf("summary: %d text mapping%s, %ld blocks, %ld eligible, %ld PMD-mapped (%s)\n",
	       t->nr_maps, t->nr_maps == 1 ? "" : "s", tot_blocks, tot_eligible, tot_pmd,
	       t->pmd_detail ? "per block from PAGEMAP_SCAN" : "count from FilePmdMapped");
}

static int parse_pid(const char *s, pid_t *pid)
{
	char *end;
	long v;

	errno = 0;
	v = strtol(s, &end, 10);
	if (errno || end == s || *end || v <= 0 || v > INT_MAX) {
		err_msg("'%s' is not a PID\n", s);
		return -1;
	}
	*pid = v;
	return 0;
}

static void status_usage(FILE *fp)
{
	fprintf(fp,
		"usage: %s status [--json] [PID]\n"
		"Show the text mappings (executable file mappings) of PID, by default\n"
		"of hugetext itself: their 2 MiB blocks, which can be PMD-mapped, which\n"
		"are, and why the others cannot.\n"
		"  -j, --json   machine-readable output (schema in the manual)\n"
		"  -h, --help   this help\n", prog);
}

static int cmd_status(int argc, char **argv)
{
	static const struct option opts[] = {
		{ "json", no_argument, NULL, 'j' },
		{ "help", no_argument, NULL, 'h' },
		{ "self", no_argument, NULL, 's' },
		{ NULL, 0, NULL, 0 }
	};
	struct system sys;
	struct target t;
	bool json = false;
	pid_t pid = getpid();
	int c;

	while ((c = getopt_long(argc, argv, "+jh", opts, NULL)) != -1) {
		switch (c) {
		case 'j':
			json = true;
			break;
		case 's':
			break;
		case 'h':
			status_usage(stdout);
			return 0;
		default:
			status_usage(stderr);
			return EXIT_USAGE;
		}
	}
	if (argc - optind > 1) {
		status_usage(stderr);
		return EXIT_USAGE;
	}
	if (argc - optind == 1 && parse_pid(argv[optind], &pid))
		return EXIT_USAGE;
	read_system(&sys);
	if (load_target(&t, pid, &sys, true))
		return 1;
	if (json)
		print_json(&t, &sys);
	else
		print_text(&t, &sys);
	free_target(&t);
	return fflush(stdout) ? 1 : 0;
}

/* The kernel's release is older than major.minor. */
static bool kernel_older(const struct system *sys, int major, int minor)
{
	int ma = 0, mi = 0;

	if (sscanf(sys->release, "%d.%d", &ma, &mi) != 2)
		return false;
	return ma < major || (ma == major && mi < minor);
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
		return "no free 2 MiB page";
	case EBUSY:
		return "memory cgroup charge failed";
	case EINVAL:
		return "the kernel refuses this range";
	}
	return "";
}

struct collapse_result {
	long tried, collapsed, already, failed;
	bool fatal;
};

/*
 * MADV_COLLAPSE of every eligible block not yet PMD-mapped, one
 * process_madvise() call per block, EAGAIN retried a few times. Reports
 * per mapping to out (stderr for run, stdout for collapse).
 */
static int collapse_target(pid_t pid, FILE *out, struct collapse_result *res)
{
	struct collapse_result z = { 0 };
	struct iovec probe = { NULL, 0 };
	struct system sys;
	struct target t, after;
	double t0;
	int pidfd, i, j, tries, err;

	*res = z;
	read_system(&sys);
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
	for (i = 0; i < t.nr_maps && !res->fatal; i++) {
		struct mapping *m = &t.maps[i];
		unsigned long first = ALIGN_DOWN(m->start, PMD_SIZE);
		long tried = 0, done = 0, failed = 0, b;
		unsigned int r;

		if (!m->eligible)
			continue;
		t0 = now();
		for (b = 0; b < m->nr_blocks && !res->fatal; b++) {
			struct iovec iov = {
				.iov_base = (void *)(first + b * PMD_SIZE),
				.iov_len = PMD_SIZE,
			};
			long rc = -1;

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
			fprintf(out, "%s: block %#lx: %s%s%s\n", m->path, (unsigned long)iov.iov_base,
				strerror(err), *errno_hint(err) ? ": " : "", errno_hint(err));
			if (err == EINVAL && (m->reasons & ~COLLAPSE_IGNORES)) {
				for (r = 0; r < NR_REASONS; r++) {
					if (m->reasons & ~COLLAPSE_IGNORES & (1U << r))
						fprintf(out, "%s:   likely because %s\n", m->path,
							reason_text[r]);
				}
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
		if (!res->fatal && tried && !quiet)
			fprintf(out, "%s: collapsed %ld of %ld blocks in %.2f s\n", m->path, done,
				tried, now() - t0);
	}
	close(pidfd);
	if (!quiet && !res->fatal && !load_target(&after, pid, &sys, false)) {
		for (i = 0; i < t.nr_maps; i++) {
			for (j = 0; j < after.nr_maps; j++) {
				if (after.maps[j].start != t.maps[i].start || !t.maps[i].eligible)
					continue;
				fprintf(out, "%s: PMD-mapped blocks %ld -> %ld of %ld eligible, FilePmdMapped %ld -> %ld kB\n",
					t.maps[i].path, t.maps[i].pmd, after.maps[j].pmd,
					after.maps[j].eligible, t.maps[i].pmd_kb,
					after.maps[j].pmd_kb);
			}
		}
		free_target(&after);
	}
	if (!quiet && !res->fatal)
		fprintf(out, "summary: PID %d (%s): %ld blocks collapsed, %ld failed, %ld already PMD-mapped\n",
			(int)pid, t.comm, res->collapsed, res->failed, res->already);
	free_target(&t);
	return 0;
}

static void collapse_usage(FILE *fp)
{
	fprintf(fp,
		"usage: %s collapse [-q] PID|--self\n"
		"MADV_COLLAPSE, through process_madvise(2), every eligible 2 MiB block of\n"
		"the text mappings of PID that is not PMD-mapped yet, and report what\n"
		"became huge. Another process needs CAP_SYS_NICE and ptrace read access.\n"
		"  -s, --self   collapse hugetext's own text\n"
		"  -q, --quiet  report errors only\n"
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
	int c;

	while ((c = getopt_long(argc, argv, "+sqh", opts, NULL)) != -1) {
		switch (c) {
		case 's':
			self = true;
			break;
		case 'q':
			quiet = true;
			break;
		case 'h':
			collapse_usage(stdout);
			return 0;
		default:
			collapse_usage(stderr);
			return EXIT_USAGE;
		}
	}
	if (self == (argc - optind == 1) || argc - optind > 1) {
		collapse_usage(stderr);
		return EXIT_USAGE;
	}
	if (self)
		pid = getpid();
	else if (parse_pid(argv[optind], &pid))
		return EXIT_USAGE;
	collapse_target(pid, stdout, &res);
	fflush(stdout);
	return collapse_exit(&res);
}

static void run_usage(FILE *fp)
{
	fprintf(fp,
		"usage: %s run [--strict] [-q] [--] CMD [ARG...]\n"
		"Start CMD stopped right after execve(2) (ptrace), MADV_COLLAPSE its text\n"
		"(the program and its ELF interpreter: libraries are mapped later), then\n"
		"let it run. Exits with CMD's exit status (128 + signal if killed).\n"
		"Needs what collapse needs; without it CMD runs anyway, with a warning.\n"
		"  --strict     do not run CMD unless every eligible block was collapsed\n"
		"               (exit %d)\n"
		"  -q, --quiet  no report, warnings only\n"
		"  -h, --help   this help\n", prog, EXIT_STRICT);
}

static int wait_status(int status)
{
	if (WIFEXITED(status))
		return WEXITSTATUS(status);
	if (WIFSIGNALED(status))
		return 128 + WTERMSIG(status);
	return 1;
}

static int cmd_run(int argc, char **argv)
{
	static const struct option opts[] = {
		{ "strict", no_argument, NULL, 'S' },
		{ "quiet", no_argument, NULL, 'q' },
		{ "help", no_argument, NULL, 'h' },
		{ NULL, 0, NULL, 0 }
	};
	struct collapse_result res;
	struct sigaction ign = { .sa_handler = SIG_IGN }, oint, oquit;
	bool strict = false, bad;
	int c, status, err;
	pid_t pid;

	while ((c = getopt_long(argc, argv, "+qh", opts, NULL)) != -1) {
		switch (c) {
		case 'S':
			strict = true;
			break;
		case 'q':
			quiet = true;
			break;
		case 'h':
			run_usage(stdout);
			return 0;
		default:
			run_usage(stderr);
			return EXIT_USAGE;
		}
	}
	if (optind >= argc) {
		run_usage(stderr);
		return EXIT_USAGE;
	}
	fflush(NULL);
	pid = fork();
	if (pid < 0) {
		err_msg("fork: %s\n", strerror(errno));
		return 1;
	}
	if (!pid) {
		/* Stopped with SIGTRAP once the exec succeeds. */
		if (ptrace(PTRACE_TRACEME, 0, NULL, NULL))
			err_msg("ptrace(PTRACE_TRACEME): %s: the text will not be collapsed\n",
				strerror(errno));
		execvp(argv[optind], argv + optind);
		err = errno;
		err_msg("cannot run %s: %s\n", argv[optind], strerror(err));
		_exit(err == ENOENT ? 127 : 126);
	}
	sigaction(SIGINT, &ign, &oint);
	sigaction(SIGQUIT, &ign, &oquit);
	for (;;) {
		if (waitpid(pid, &status, 0) < 0) {
			err_msg("waitpid: %s\n", strerror(errno));
			return 1;
		}
		if (!WIFSTOPPED(status))
			return wait_status(status);	/* the exec failed */
		if (WSTOPSIG(status) == SIGTRAP)
			break;
		/* A signal before the exec: deliver it. */
		ptrace(PTRACE_CONT, pid, NULL, (void *)(long)WSTOPSIG(status));
	}
	collapse_target(pid, stderr, &res);
	bad = res.fatal || res.failed;
	if (bad && strict) {
		err_msg("not all of the text of %s could be collapsed: not running it (--strict)\n",
			argv[optind]);
		kill(pid, SIGKILL);
		ptrace(PTRACE_DETACH, pid, NULL, NULL);
		waitpid(pid, &status, 0);
		return EXIT_STRICT;
	}
	if (bad)
		err_msg("warning: running %s with its text not (all) huge\n", argv[optind]);
	if (ptrace(PTRACE_DETACH, pid, NULL, NULL))
		err_msg("ptrace(PTRACE_DETACH): %s\n", strerror(errno));
	while (waitpid(pid, &status, 0) < 0) {
		if (errno != EINTR) {
			err_msg("waitpid: %s\n", strerror(errno));
			return 1;
		}
	}
	sigaction(SIGINT, &oint, NULL);
	sigaction(SIGQUIT, &oquit, NULL);
	return wait_status(status);
}

static void usage(FILE *fp)
{
	fprintf(fp,
		"usage: %s COMMAND [OPTIONS] [ARGS]\n"
		"Huge pages (2 MiB PMD mappings) for the program text of processes.\n"
		"  status [--json] [PID]       what is huge, what can be, and why not\n"
		"  collapse PID|--self         MADV_COLLAPSE the text of a running process\n"
		"  run [--strict] -- CMD ARGS  start CMD with its text collapsed\n"
		"'%s COMMAND --help' describes each; the manual is hugetext.rst.\n",
		prog, prog);
}

int main(int argc, char **argv)
{
	const char *cmd = argc > 1 ? argv[1] : NULL;

	if (!cmd) {
		usage(stderr);
		return EXIT_USAGE;
	}
	if (!strcmp(cmd, "-h") || !strcmp(cmd, "--help") || !strcmp(cmd, "help")) {
		usage(stdout);
		return 0;
	}
	if (!strcmp(cmd, "status"))
		return cmd_status(argc - 1, argv + 1);
	if (!strcmp(cmd, "collapse"))
		return cmd_collapse(argc - 1, argv + 1);
	if (!strcmp(cmd, "run"))
		return cmd_run(argc - 1, argv + 1);
	err_msg("unknown command '%s'\n", cmd);
	usage(stderr);
	return EXIT_USAGE;
}
