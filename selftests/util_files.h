/* SPDX-License-Identifier: GPL-2.0 */
/*
 * Files: small reads and writes, whole-file buffers, copies removed at exit.
 */
#ifndef __ROTHP_UTIL_FILES_H
#define __ROTHP_UTIL_FILES_H

#include <stdbool.h>
#include <stddef.h>
#include <sys/types.h>

int rothp_read_line(const char *path, char *buf, size_t len);
int rothp_read_long(const char *path, long *val);
int rothp_write_text(const char *path, const char *val);
char *rothp_read_whole(const char *path, size_t *size);
char *rothp_memdup(const void *buf, size_t len);
int rothp_copy_file(const char *src, const char *dst);
int rothp_scratch_copy(const char *src, const char *dst);
void rothp_scratch_remove(const char *path);
void rothp_scratch_remove_all(void);

#endif /* __ROTHP_UTIL_FILES_H */
