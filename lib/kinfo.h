/* SPDX-License-Identifier: GPL-2.0 */
/*
 * kinfo: what the kernel says of itself and of a process, read one way for
 * hugetext, which users install, and for the test library: the kernel's
 * configuration, the lines of /proc/PID/maps, smaps and status, and a
 * "NAME: N" field of a /proc file. Plain C and libc, no kselftest.h, so
 * that the static hugetext links it.
 */
#ifndef __ROTHP_KINFO_H
#define __ROTHP_KINFO_H

#include <limits.h>
#include <stdbool.h>
#include <stddef.h>

/*
 * The value of an option in a kernel config. A module, =m, is above 0 as
 * =y is, and both users take "> 0" for "set": the code is in the kernel
 * once the module is loaded. The options rothp looks up are bool and can
 * never be =m; ROTHP_KCONFIG_M tells a tristate's module from built-in.
 */
enum rothp_kconfig {
	ROTHP_KCONFIG_UNKNOWN = -1,	/* no kernel config could be read */
	ROTHP_KCONFIG_N = 0,		/* "is not set", or no line at all */
	ROTHP_KCONFIG_Y = 1,
	ROTHP_KCONFIG_M = 2,
};

/* name ("CONFIG_...") in the config at path, gzip-compressed if gz. */
int rothp_kconfig_file(const char *path, bool gz, const char *name);
/*
 * name in the running kernel's config: /boot/config-RELEASE, else
 * /proc/config.gz, both under root ("" for none). release NULL is
 * uname(2)'s. src names the file the answer came from, without root, or
 * says that there was none.
 */
int rothp_kconfig_running(const char *root, const char *release, const char *name,
			  char *src, size_t srclen);

/* One line of /proc/PID/maps, or the header line of an smaps entry. */
struct rothp_vma {
	unsigned long start;
	unsigned long end;
	unsigned long offset;		/* file offset of start, in bytes */
	char perms[5];
	unsigned int dev_major;
	unsigned int dev_minor;
	unsigned long inode;		/* 0 for an anonymous mapping */
	char path[PATH_MAX];		/* "" for an anonymous mapping */
};

int rothp_vma_parse(const char *line, struct rothp_vma *vma);
int rothp_field_value(const char *line, const char *name, long *val);
int rothp_field_read(const char *path, const char *name, char sep, long *val);
bool rothp_vmflag(const char *line, const char *flag);

/*
 * The PMD-mapped blocks of [start, end) in the process whose
 * /proc/PID/pagemap fd is open: PAGEMAP_SCAN (Linux 6.7) returns the range
 * of a present huge PMD with PAGE_IS_HUGE (pagemap_scan_thp_entry() in
 * fs/proc/task_mmu.c); a THP mapped by PTEs is not. huge[b] is set for
 * each such block b of the pmd-sized blocks from start aligned down to pmd,
 * b < nr. 0, or -1 (errno) where the kernel lacks PAGEMAP_SCAN.
 */
int rothp_scan_pmd(int fd, unsigned long start, unsigned long end, unsigned long pmd,
		   bool *huge, long nr);

#endif /* __ROTHP_KINFO_H */
