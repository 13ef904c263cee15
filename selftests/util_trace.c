// SPDX-License-Identifier: GPL-2.0
/*
 * tracefs: its files, trace events a test switches on, put back through the
 * settings table (at exit and on signals too), and uprobe events on a file.
 */
#define _GNU_SOURCE
#include <errno.h>
#include <fcntl.h>
#include <limits.h>
#include <stdio.h>
#include <string.h>
#include <unistd.h>

#include "util_files.h"
#include "util_settings.h"
#include "util_trace.h"

/*
 * Write s to file, a path under ROTHP_TRACEFS, opened O_WRONLY | flags,
 * saying why if it fails when say is true: 0, or -1 with errno.
 */
int rothp_trace_write(const char *file, const char *s, int flags, bool say)
{
	char path[PATH_MAX];

	if (snprintf(path, sizeof(path), ROTHP_TRACEFS "%s", file) >= (int)sizeof(path)) {
		errno = ENAMETOOLONG;
		return -1;
	}
	return rothp_write_file(path, s, flags, say);
}

/*
 * Switch a trace event, named "group/name", on, its state saved first:
 * rothp_trace_restore() puts it back, as exit and SIGINT/SIGTERM do. -1
 * with errno, ENOENT (nothing saved) when the kernel has no such event.
 */
int rothp_trace_event_on(const char *event)
{
	char path[PATH_MAX];

	snprintf(path, sizeof(path), ROTHP_TRACEFS "events/%s/enable", event);
	if (rothp_trace_save(path))
		return -1;
	return rothp_write_file(path, "1", 0, false);
}

/*
 * Define a uprobe event, named "group/name", on the instruction at file
 * offset off of path, and switch it on: 0, or -1 with errno (no tracefs,
 * no CONFIG_UPROBE_EVENTS, or refused), saying why when say is true. What
 * a failure leaves defined is deleted.
 */
int rothp_uprobe_add(const char *event, const char *path, unsigned long off, bool say)
{
	char cmd[PATH_MAX + 128], file[PATH_MAX];
	int err;

	snprintf(cmd, sizeof(cmd), "p:%s %s:%#lx", event, path, off);
	snprintf(file, sizeof(file), "events/%s/enable", event);
	if (rothp_trace_write("uprobe_events", cmd, O_APPEND, say))
		return -1;
	if (rothp_trace_write(file, "1", 0, say)) {
		err = errno;
		rothp_uprobe_remove(event);
		errno = err;
		return -1;
	}
	return 0;
}

/* Switch a uprobe event off and delete it, if it is defined: 0, or -1 with errno. */
int rothp_uprobe_remove(const char *event)
{
	char enable[PATH_MAX], cmd[PATH_MAX];

	snprintf(enable, sizeof(enable), ROTHP_TRACEFS "events/%s/enable", event);
	if (access(enable, F_OK))
		return 0;
	snprintf(cmd, sizeof(cmd), "-:%s", event);
	if (rothp_write_file(enable, "0", 0, false) ||
	    rothp_trace_write("uprobe_events", cmd, O_APPEND, false))
		return -1;
	return 0;
}

/*
 * The hits of a uprobe event on path, from uprobe_profile, which names an
 * event without its group (probes_profile_seq_show()); -1 when it has no
 * such line.
 */
long rothp_uprobe_hits(const char *event, const char *path)
{
	char line[PATH_MAX + 128], file[PATH_MAX + 128], name[128];
	const char *want = strchr(event, '/') ? strchr(event, '/') + 1 : event;
	unsigned long hits;
	long ret = -1;
	FILE *fp;

	fp = fopen(ROTHP_TRACEFS "uprobe_profile", "r");
	if (!fp)
		return -1;
	while (fgets(line, sizeof(line), fp)) {
		if (sscanf(line, "%s %127s %lu", file, name, &hits) == 3 &&
		    !strcmp(file, path) && !strcmp(name, want))
			ret = hits;
	}
	fclose(fp);
	return ret;
}
