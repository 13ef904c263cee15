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

/*
 * The breakpoint a uprobe writes over the probed instruction
 * (UPROBE_SWBP_INSN), little-endian: x86-64's int3, arm64's BRK #0x5
 * (BRK64_OPCODE_UPROBES in arch/arm64/include/asm/debug-monitors.h).
 */
#if defined(__x86_64__)
#define ROTHP_UPROBE_INSN	0xccU
#define ROTHP_UPROBE_INSN_SIZE	1
#define ROTHP_UPROBE_INSN_NAME	"int3"
#elif defined(__aarch64__)
#define ROTHP_UPROBE_INSN	0xd42000a0U
#define ROTHP_UPROBE_INSN_SIZE	4
#define ROTHP_UPROBE_INSN_NAME	"brk #0x5"
#endif

/* Uprobe events, named "group/name" as uprobe_events takes them. */
int rothp_uprobe_add(const char *event, const char *path, unsigned long off, bool say);
int rothp_uprobe_remove(const char *event);
long rothp_uprobe_hits(const char *event, const char *path);

#endif /* __ROTHP_UTIL_TRACE_H */
