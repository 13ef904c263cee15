/* SPDX-License-Identifier: GPL-2.0 */
/*
 * Files: small reads and writes, whole-file buffers, scratch files removed at exit,
 * and checks of a file, or a mapping of it, against a model of what it must
 * hold.
 */
#ifndef __ROTHP_UTIL_FILES_H
#define __ROTHP_UTIL_FILES_H

#include <stdbool.h>
#include <stddef.h>
#include <sys/types.h>

int rothp_read_line(const char *path, char *buf, size_t len);
int rothp_read_long(const char *path, long *val);
int rothp_write_file(const char *path, const char *s, int flags, bool say);
int rothp_write_text(const char *path, const char *val);
int rothp_write_all(int fd, const char *buf, size_t len, size_t chunk);
char *rothp_read_whole(const char *path, size_t *size);
char *rothp_memdup(const void *buf, size_t len);
int rothp_copy_file(const char *src, const char *dst);
int rothp_scratch_add(const char *path);
int rothp_scratch_copy(const char *src, const char *dst);
int rothp_scratch_copy_at(char *path, const char *src, const char *dir, const char *fmt, ...)
	__attribute__((format(printf, 4, 5)));
void rothp_scratch_remove(const char *path);
void rothp_scratch_remove_all(void);

/* rothp_scratch_copy_at(), or exit failing. */
#define rothp_scratch_copy_checked(path, src, dir, fmt, ...) do {	\
	const char *__ssrc = (src);					\
	char *__spath = (path);						\
									\
	if (rothp_scratch_copy_at(__spath, __ssrc, (dir), fmt, ##__VA_ARGS__))	\
		ksft_exit_fail_msg("copy %s to %s: %s\n", __ssrc, __spath,	\
				   strerror(errno));			\
} while (0)

/* open(path, flags), or exit failing. */
#define rothp_open_checked(path, flags) ({				\
	const char *__path = (path);					\
	int __fd = open(__path, (flags));				\
									\
	if (__fd < 0)							\
		ksft_exit_fail_msg("open %s: %s\n", __path, strerror(errno)); \
	__fd;								\
})

/*
 * What a test's files hold first (textprog's bytes), which a model of a
 * file starts from. say_written picks how a difference is announced:
 * "differs from what was written", or the two hashes.
 */
struct rothp_orig {
	char *buf;
	size_t size;
	bool say_written;
};

int rothp_pread_full(int fd, void *buf, size_t n, off_t off);
int rothp_pwrite_full(int fd, const void *buf, size_t n, off_t off);
void rothp_orig_read(struct rothp_orig *orig, const char *path, size_t min);
char *rothp_model_new(const struct rothp_orig *orig);
bool rothp_report_difference(const struct rothp_orig *orig, const char *who, const char *buf,
			     const char *model, size_t base, size_t n);
bool rothp_file_is(const struct rothp_orig *orig, int fd, const char *model, size_t size,
		   const char *who);
bool rothp_map_is(const struct rothp_orig *orig, const char *p, const char *model, size_t len,
		  const char *who);
bool rothp_disk_is(const struct rothp_orig *orig, int fd, const char *model, size_t size,
		   const char *who);

#endif /* __ROTHP_UTIL_FILES_H */
