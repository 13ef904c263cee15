/* SPDX-License-Identifier: GPL-2.0 */
/*
 * tracefs: writing its files, trace events switched on with their state
 * saved in the settings table (util_settings.h), and uprobe events.
 */
#ifndef __ROTHP_UTIL_TRACE_H
#define __ROTHP_UTIL_TRACE_H

#include <stdbool.h>

/* Where the guest's init mounts tracefs; the tests' paths start here. */
#define ROTHP_TRACEFS		"/sys/kernel/tracing/"

int rothp_trace_write(const char *file, const char *s, int flags, bool say);
int rothp_trace_event_on(const char *event);

/* Uprobe events, named "group/name" as uprobe_events takes them. */
int rothp_uprobe_add(const char *event, const char *path, unsigned long off, bool say);
int rothp_uprobe_remove(const char *event);
long rothp_uprobe_hits(const char *event, const char *path);

#endif /* __ROTHP_UTIL_TRACE_H */
