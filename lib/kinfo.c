// SPDX-License-Identifier: GPL-2.0
/*
 * kinfo: the kernel's configuration, the lines of /proc/PID/maps, smaps
 * and status, and the fields of /proc files, for hugetext and the test
 * library alike (kinfo.h).
 */
#define _GNU_SOURCE
#include <errno.h>
#include <fcntl.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>
#include <sys/ioctl.h>
#include <sys/utsname.h>
#include <sys/wait.h>

#include "kinfo.h"

/*
 * Look name up in the text of a kernel config. Text without a line that
 * starts "CONFIG_" or "# CONFIG_" (an empty file, or not a config at all)
 * is no answer, so that the caller looks elsewhere; in a config, an
 * option without a line is n, as Kconfig leaves out the options whose
 * dependencies are not met.
 */
static int kconfig_scan(FILE *fp, const char *name)
{
	size_t len = strlen(name), cap = 0;
	int ret = ROTHP_KCONFIG_UNKNOWN;
	char *line = NULL;
	bool config = false;

	while (getline(&line, &cap, fp) > 0) {
		if (!strncmp(line, "CONFIG_", 7) || !strncmp(line, "# CONFIG_", 9))
			config = true;
		if (strncmp(line, name, len) || line[len] != '=')
			continue;
		ret = line[len + 1] == 'y' ? ROTHP_KCONFIG_Y :
		      line[len + 1] == 'm' ? ROTHP_KCONFIG_M : ROTHP_KCONFIG_N;
		break;
	}
	free(line);
	if (ret == ROTHP_KCONFIG_UNKNOWN && config)
		ret = ROTHP_KCONFIG_N;
	return ret;
}

/*
 * A compressed config through gzip -dc, which spares a static binary a
 * zlib (the guest's busybox has gzip too). No shell, so that any path
 * will do.
 */
static int kconfig_gz(const char *path, const char *name)
{
	int fd[2], status, null, ret = ROTHP_KCONFIG_UNKNOWN;
	pid_t pid;
	FILE *fp;

	if (pipe2(fd, O_CLOEXEC))
		return ret;
	fflush(NULL);	/* or the child's exit writes the buffers again */
	pid = fork();
	if (pid < 0) {
		close(fd[0]);
		close(fd[1]);
		return ret;
	}
	if (!pid) {
		null = open("/dev/null", O_WRONLY);
		if (null < 0 || dup2(fd[1], STDOUT_FILENO) < 0 || dup2(null, STDERR_FILENO) < 0)
			_exit(127);
		execlp("gzip", "gzip", "-dc", "--", path, (char *)NULL);
		_exit(127);
	}
	close(fd[1]);
	fp = fdopen(fd[0], "r");
	if (fp) {
		ret = kconfig_scan(fp, name);
		fclose(fp);
	} else {
		close(fd[0]);
	}
	while (waitpid(pid, &status, 0) < 0 && errno == EINTR)
		;
	return ret;
}

int rothp_kconfig_file(const char *path, bool gz, const char *name)
{
	FILE *fp;
	int ret;

	/* No gzip started for a file that is not there. */
	if (gz)
		return access(path, R_OK) ? ROTHP_KCONFIG_UNKNOWN : kconfig_gz(path, name);
	fp = fopen(path, "r");
	if (!fp)
		return ROTHP_KCONFIG_UNKNOWN;
	ret = kconfig_scan(fp, name);
	fclose(fp);
	return ret;
}

int rothp_kconfig_running(const char *root, const char *release, const char *name,
			  char *src, size_t srclen)
{
	char path[PATH_MAX];
	struct utsname u;
	int ret = ROTHP_KCONFIG_UNKNOWN;

	if (!release) {
		uname(&u);
		release = u.release;
	}
	/* A path too long for path is a file that is not there. */
	if (snprintf(path, sizeof(path), "%s/boot/config-%s", root, release) < (int)sizeof(path))
		ret = rothp_kconfig_file(path, false, name);
	if (ret != ROTHP_KCONFIG_UNKNOWN) {
		snprintf(src, srclen, "/boot/config-%s", release);
		return ret;
	}
	if (snprintf(path, sizeof(path), "%s/proc/config.gz", root) < (int)sizeof(path))
		ret = rothp_kconfig_file(path, true, name);
	snprintf(src, srclen, "%s", ret == ROTHP_KCONFIG_UNKNOWN ? "no kernel config found" :
		 "/proc/config.gz");
	return ret;
}

/*
 * "START-END PERMS OFFSET MAJOR:MINOR INODE [PATH]": 0 if line is one,
 * with vma set, else -1. The path is the rest of the line, spaces and a
 * " (deleted)" included.
 */
int rothp_vma_parse(const char *line, struct rothp_vma *vma)
{
	int pos = 0;

	if (sscanf(line, "%lx-%lx %4s %lx %x:%x %lu %n", &vma->start, &vma->end, vma->perms,
		   &vma->offset, &vma->dev_major, &vma->dev_minor, &vma->inode, &pos) != 7 ||
	    !pos)
		return -1;
	snprintf(vma->path, sizeof(vma->path), "%.*s", (int)strcspn(line + pos, "\n"),
		 line + pos);
	return 0;
}

/* The number of a line "NAME<sep>N...": 0 with *val set, or -1. */
static int field_parse(const char *line, const char *name, char sep, long *val)
{
	size_t len = strlen(name);

	if (strncmp(line, name, len) || line[len] != sep || sscanf(line + len + 1, "%ld", val) != 1)
		return -1;
	return 0;
}

/*
 * The number of a line "NAME: N" or "NAME: N kB", as smaps, smaps_rollup
 * and status print them (in kB where they say so): 0 with *val set, or
 * -1 if line is not name's.
 */
int rothp_field_value(const char *line, const char *name, long *val)
{
	return field_parse(line, name, ':', val);
}

/*
 * The number of the first line of the file at path that is name's: "NAME:
 * N" where sep is ':' (smaps_rollup, status, meminfo), "NAME N" where it is
 * ' ' (vmstat). 0 with *val set, or -1 with errno set, ENOENT when no line
 * is name's. Whole lines, however long, so that the rest of a long line
 * is never taken for one.
 */
int rothp_field_read(const char *path, const char *name, char sep, long *val)
{
	int ret = -1, err = ENOENT;
	char *line = NULL;
	size_t cap = 0;
	FILE *fp;

	fp = fopen(path, "r");
	if (!fp)
		return -1;
	while (getline(&line, &cap, fp) > 0) {
		if (!field_parse(line, name, sep, val)) {
			ret = 0;
			break;
		}
	}
	if (ret && ferror(fp))
		err = errno;	/* a read failed: the line may be there */
	free(line);
	fclose(fp);
	if (ret)
		errno = err;
	return ret;
}

/*
 * Whether the smaps line "VmFlags: rd ex mr ..." holds the two-letter
 * flag: a whole word, so that a flag can never match part of another.
 */
bool rothp_vmflag(const char *line, const char *flag)
{
	size_t len = strlen(flag), n;
	const char *p;

	if (strncmp(line, "VmFlags:", 8))
		return false;
	for (p = line + 8; *p; p += n) {
		p += strspn(p, " \t\n");
		n = strcspn(p, " \t\n");
		if (n == len && !strncmp(p, flag, len))
			return true;
	}
	return false;
}

/* PAGEMAP_SCAN (Linux 6.7), as include/uapi/linux/fs.h defines it. */
#define KI_PAGE_IS_PRESENT	0x08
#define KI_PAGE_IS_HUGE		0x40

struct ki_page_region {
	uint64_t start;
	uint64_t end;
	uint64_t categories;
};

struct ki_pm_scan_arg {
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

#define KI_PAGEMAP_SCAN		_IOWR('f', 16, struct ki_pm_scan_arg)

int rothp_scan_pmd(int fd, unsigned long start, unsigned long end, unsigned long pmd,
		   bool *huge, long nr)
{
	struct ki_page_region vec[32];
	struct ki_pm_scan_arg arg;
	unsigned long addr = start, first = start & ~(pmd - 1), a;
	long i, n, b;

	while (addr < end) {
		memset(&arg, 0, sizeof(arg));
		arg.size = sizeof(arg);
		arg.start = addr;
		arg.end = end;
		arg.vec = (uintptr_t)vec;
		arg.vec_len = sizeof(vec) / sizeof(vec[0]);
		arg.category_mask = KI_PAGE_IS_HUGE | KI_PAGE_IS_PRESENT;
		arg.return_mask = KI_PAGE_IS_HUGE;
		n = ioctl(fd, KI_PAGEMAP_SCAN, &arg);
		if (n < 0)
			return -1;
		for (i = 0; i < n; i++) {
			for (a = (vec[i].start + pmd - 1) & ~(pmd - 1); a + pmd <= vec[i].end;
			     a += pmd) {
				b = (a - first) / pmd;
				if (b < nr)
					huge[b] = true;
			}
		}
		if (n < (long)arg.vec_len || arg.walk_end <= addr)
			break;
		addr = arg.walk_end;
	}
	return 0;
}
