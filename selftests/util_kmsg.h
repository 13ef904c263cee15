/* SPDX-License-Identifier: GPL-2.0 */
/*
 * The kernel log, read through /dev/kmsg from the moment a test opens it:
 * the reports of a kernel in trouble (Oops, BUG, WARNING, KASAN, lockdep,
 * hangs, list and file system corruption) logged since, so that a test can
 * fail the case during which one appeared. The host fails the whole run on
 * any of them in the console too (scripts/rothp/ktap.py, whose list of
 * reports this one follows); this names the case.
 */
#ifndef __ROTHP_UTIL_KMSG_H
#define __ROTHP_UTIL_KMSG_H

#include <stdbool.h>

/* A reader of /dev/kmsg positioned after the records read so far. */
struct rothp_kmsg {
	int fd;			/* -1 when the log cannot be read */
	int err;		/* errno of the failed open */
	long records;		/* records read */
	long lost;		/* records overwritten before they were read */
};

int rothp_kmsg_open(struct rothp_kmsg *km);
long rothp_kmsg_splats(struct rothp_kmsg *km, const char *who, int max_print);
void rothp_kmsg_close(struct rothp_kmsg *km);
bool rothp_kmsg_is_splat(const char *msg);

#endif /* __ROTHP_UTIL_KMSG_H */
