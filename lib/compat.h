/* SPDX-License-Identifier: GPL-2.0 */
/*
 * The kernel's numbers that hugetext and the tests both use and that a C
 * library older than the kernel may not define yet: one copy, so that the
 * two can never disagree on one.
 */
#ifndef __ROTHP_COMPAT_H
#define __ROTHP_COMPAT_H

/* include/uapi/asm-generic/mman-common.h */
#ifndef MADV_COLLAPSE
#define MADV_COLLAPSE		25
#endif

/*
 * System calls from 424 on have one number on every architecture but alpha:
 * these are x86-64's (arch/x86/entry/syscalls/syscall_64.tbl) and arm64's
 * (include/uapi/asm-generic/unistd.h) alike.
 */
#ifndef __NR_pidfd_open
#define __NR_pidfd_open		434
#endif
#ifndef __NR_process_madvise
#define __NR_process_madvise	440
#endif

#endif /* __ROTHP_COMPAT_H */
