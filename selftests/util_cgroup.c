// SPDX-License-Identifier: GPL-2.0
/*
 * Memory cgroups (Documentation/admin-guide/cgroup-v2.rst). The guest's
 * init mounts no cgroup hierarchy: rothp_memcg_setup() mounts cgroup v2
 * where the kernel made room for it and enables the memory controller for
 * the root's children, remembering which of the two it did, so that
 * rothp_memcg_teardown(), or exit, undoes exactly that. The root cgroup is
 * exempt from the rule that a cgroup with children holds no process: the
 * test stays there, its children go in and out.
 */
#define _GNU_SOURCE
#include <errno.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>
#include <sys/mount.h>
#include <sys/stat.h>

#include "kinfo.h"
#include "kselftest.h"
#include "util_cgroup.h"
#include "util_core.h"
#include "util_files.h"

#define NR_MADE			4
/* How long a cgroup whose last process was just reaped may still be busy. */
#define REMOVE_RETRY_MS		2000

static bool mounted_here;	/* rothp_memcg_setup() mounted cgroup v2 */
static bool controller_here;	/* ... and wrote "+memory" to the root's subtree_control */
static bool registered;
static pid_t owner;		/* the process that did, the only one to undo it */
static char made[NR_MADE][PATH_MAX];

/* Is tok one of the space-separated words of list? */
static bool has_token(const char *list, const char *tok)
{
	size_t len = strlen(tok);
	const char *p;

	for (p = strstr(list, tok); p; p = strstr(p + 1, tok)) {
		if ((p == list || p[-1] == ' ') && (p[len] == ' ' || !p[len]))
			return true;
	}
	return false;
}

/* The path of one of the cgroup's files in path: 0, or -1 (ENAMETOOLONG). */
static int cg_file(char *path, size_t len, const struct rothp_cgroup *cg, const char *file)
{
	int n = snprintf(path, len, "%s/%s", cg->path, file);

	if (n < 0 || (size_t)n >= len) {
		errno = ENAMETOOLONG;
		return -1;
	}
	return 0;
}

/* Move every process of the cgroup at dir to the root: 0, or -1. */
static int evacuate(const char *dir)
{
	char path[PATH_MAX], line[32];
	int n, ret = 0;
	FILE *fp;

	n = snprintf(path, sizeof(path), "%s/cgroup.procs", dir);
	if (n < 0 || (size_t)n >= sizeof(path))
		return -1;
	fp = fopen(path, "r");
	if (!fp)
		return -1;
	while (fgets(line, sizeof(line), fp)) {
		line[strcspn(line, "\n")] = '\0';
		if (rothp_write_file(ROTHP_CGROUP_ROOT "/cgroup.procs", line, 0, false))
			ret = -1;
	}
	fclose(fp);
	return ret;
}

static void forget(const char *path)
{
	int i;

	for (i = 0; i < NR_MADE; i++) {
		if (!strcmp(made[i], path))
			made[i][0] = '\0';
	}
}

/* rmdir() a cgroup emptied, retrying while its last exit completes: 0, or -1 (errno). */
static int remove_dir(const char *dir)
{
	double end = rothp_now() + REMOVE_RETRY_MS / 1000.0;

	evacuate(dir);
	while (rmdir(dir)) {
		if (errno == ENOENT)
			break;
		if (errno != EBUSY || rothp_now() >= end)
			return -1;
		usleep(20 * 1000);
		evacuate(dir);
	}
	forget(dir);
	return 0;
}

/* Undo what rothp_memcg_setup() did, the cgroups made first; quiet. */
void rothp_memcg_teardown(void)
{
	int i;

	if (!owner || getpid() != owner)
		return;		/* a forked child: the parent undoes it */
	for (i = 0; i < NR_MADE; i++) {
		if (made[i][0])
			remove_dir(made[i]);
	}
	if (controller_here &&
	    !rothp_write_file(ROTHP_CGROUP_ROOT "/cgroup.subtree_control", "-memory", 0, false))
		controller_here = false;
	if (mounted_here && !umount(ROTHP_CGROUP_ROOT))
		mounted_here = false;
}

/*
 * cgroup v2 with the memory controller available to children of the root:
 * 0, or -1 with why (len bytes) saying what is missing, for a skip. What
 * it changes is undone by rothp_memcg_teardown() or at exit (not when a
 * signal kills the test: the guest reboots after its tests).
 */
int rothp_memcg_setup(char *why, size_t len)
{
	char ctrl[256] = "", sub[256] = "";

	if (!registered) {
		owner = getpid();
		atexit(rothp_memcg_teardown);
		registered = true;
	}
	if (access(ROTHP_CGROUP_ROOT "/cgroup.controllers", F_OK)) {
		if (mount("cgroup2", ROTHP_CGROUP_ROOT, "cgroup2", 0, NULL)) {
			snprintf(why, len, "no cgroup v2: mount cgroup2 on %s: %s",
				 ROTHP_CGROUP_ROOT, strerror(errno));
			return -1;
		}
		mounted_here = true;
	}
	if (rothp_read_line(ROTHP_CGROUP_ROOT "/cgroup.controllers", ctrl, sizeof(ctrl)) ||
	    !has_token(ctrl, "memory")) {
		snprintf(why, len, "no memory controller in cgroup v2 (controllers: '%s')", ctrl);
		rothp_memcg_teardown();
		return -1;
	}
	if (rothp_read_line(ROTHP_CGROUP_ROOT "/cgroup.subtree_control", sub, sizeof(sub))) {
		snprintf(why, len, "cannot read %s/cgroup.subtree_control: %s", ROTHP_CGROUP_ROOT,
			 strerror(errno));
		rothp_memcg_teardown();
		return -1;
	}
	if (!has_token(sub, "memory")) {
		if (rothp_write_file(ROTHP_CGROUP_ROOT "/cgroup.subtree_control", "+memory", 0,
				     false)) {
			snprintf(why, len, "cannot enable the memory controller: %s",
				 strerror(errno));
			rothp_memcg_teardown();
			return -1;
		}
		controller_here = true;
	}
	ksft_print_msg("cgroup v2 on %s%s, memory controller %s\n", ROTHP_CGROUP_ROOT,
		       mounted_here ? " (mounted here)" : "",
		       controller_here ? "enabled here" : "already enabled");
	return 0;
}

/*
 * Make the child cgroup name of the root, with no limit set yet: 0, or -1
 * with errno (an old one of that name is removed first).
 */
int rothp_cgroup_create(struct rothp_cgroup *cg, const char *name)
{
	int i, slot = -1;

	cg->path[0] = '\0';
	for (i = 0; i < NR_MADE && slot < 0; i++) {
		if (!made[i][0])
			slot = i;
	}
	if (slot < 0) {
		errno = ENOSPC;
		return -1;
	}
	snprintf(cg->path, sizeof(cg->path), ROTHP_CGROUP_ROOT "/%s", name);
	if (!access(cg->path, F_OK) && remove_dir(cg->path))
		ksft_print_msg("cannot remove an old %s: %s\n", cg->path, strerror(errno));
	if (mkdir(cg->path, 0755)) {
		cg->path[0] = '\0';
		return -1;
	}
	snprintf(made[slot], sizeof(made[slot]), "%s", cg->path);
	return 0;
}

/* Remove the cgroup, moving what is left in it to the root: 0, or -1 (said). */
int rothp_cgroup_remove(struct rothp_cgroup *cg)
{
	if (!cg->path[0])
		return 0;
	if (remove_dir(cg->path)) {
		ksft_print_msg("rmdir %s: %s\n", cg->path, strerror(errno));
		return -1;
	}
	cg->path[0] = '\0';
	return 0;
}

/* Write val to one of the cgroup's files, saying why if it fails: 0, or -1. */
int rothp_cgroup_set(const struct rothp_cgroup *cg, const char *file, const char *val)
{
	char path[PATH_MAX];

	if (cg_file(path, sizeof(path), cg, file))
		return -1;
	return rothp_write_file(path, val, 0, true);
}

/* A file of the cgroup that holds one number (memory.current, memory.peak). */
int rothp_cgroup_read_long(const struct rothp_cgroup *cg, const char *file, long *val)
{
	char path[PATH_MAX];

	if (cg_file(path, sizeof(path), cg, file))
		return -1;
	return rothp_read_long(path, val);
}

/* The "name N" line of a file of the cgroup (memory.stat, memory.events). */
int rothp_cgroup_field(const struct rothp_cgroup *cg, const char *file, const char *name,
		       long *val)
{
	char path[PATH_MAX];

	if (cg_file(path, sizeof(path), cg, file))
		return -1;
	return rothp_field_read(path, name, ' ', val);
}

/* Move process pid (0: the caller) into the cgroup: 0, or -1 (said). */
int rothp_cgroup_join(const struct rothp_cgroup *cg, pid_t pid)
{
	char path[PATH_MAX], val[32];

	if (cg_file(path, sizeof(path), cg, "cgroup.procs"))
		return -1;
	snprintf(val, sizeof(val), "%d", (int)(pid ? pid : getpid()));
	return rothp_write_file(path, val, 0, true);
}

/* Move process pid (0: the caller) back to the root cgroup: 0, or -1 (said). */
int rothp_cgroup_leave(pid_t pid)
{
	char val[32];

	snprintf(val, sizeof(val), "%d", (int)(pid ? pid : getpid()));
	return rothp_write_file(ROTHP_CGROUP_ROOT "/cgroup.procs", val, 0, true);
}
