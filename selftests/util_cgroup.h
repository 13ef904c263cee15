/* SPDX-License-Identifier: GPL-2.0 */
/*
 * Memory cgroups, cgroup v2: the hierarchy mounted and the memory
 * controller given to the root's children when the guest has not done it,
 * both put back by rothp_memcg_teardown() or at exit; child cgroups made,
 * joined, read and removed (at exit too, if the test has not).
 */
#ifndef __ROTHP_UTIL_CGROUP_H
#define __ROTHP_UTIL_CGROUP_H

#include <limits.h>
#include <stddef.h>
#include <sys/types.h>

/* Where cgroup v2 is mounted, by the guest or by rothp_memcg_setup(). */
#define ROTHP_CGROUP_ROOT	"/sys/fs/cgroup"

/* A child of the root cgroup this process made. */
struct rothp_cgroup {
	char path[PATH_MAX];	/* "" once removed, or when it could not be made */
};

int rothp_memcg_setup(char *why, size_t len);
void rothp_memcg_teardown(void);

int rothp_cgroup_create(struct rothp_cgroup *cg, const char *name);
int rothp_cgroup_remove(struct rothp_cgroup *cg);
int rothp_cgroup_set(const struct rothp_cgroup *cg, const char *file, const char *val);
int rothp_cgroup_read_long(const struct rothp_cgroup *cg, const char *file, long *val);
int rothp_cgroup_field(const struct rothp_cgroup *cg, const char *file, const char *name,
		       long *val);
int rothp_cgroup_join(const struct rothp_cgroup *cg, pid_t pid);
int rothp_cgroup_leave(pid_t pid);

#endif /* __ROTHP_UTIL_CGROUP_H */
