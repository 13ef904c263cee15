// SPDX-License-Identifier: GPL-2.0
/*
 * Files: small reads and writes, whole-file buffers, copies removed at exit
 * (with the settings, see util_settings.c), and the model checks of tests
 * that write to files and compare them with what they must hold.
 */
#define _GNU_SOURCE
#include <errno.h>
#include <fcntl.h>
#include <signal.h>
#include <stdarg.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>
#include <sys/stat.h>

#include "kselftest.h"
#include "util_cache.h"
#include "util_core.h"
#include "util_files.h"
#include "util_settings.h"

#define NR_SCRATCH	8

/* Files to remove at exit (rothp_scratch_add()), and the process that made them. */
static char scratch_path[NR_SCRATCH][PATH_MAX];
static pid_t scratch_owner;

/* The first line of a small file, without its newline: 0, or -1 (errno). */
int rothp_read_line(const char *path, char *buf, size_t len)
{
	ssize_t n;
	int fd;

	fd = open(path, O_RDONLY);
	if (fd < 0)
		return -1;
	n = read(fd, buf, len - 1);
	close(fd);
	if (n < 0)
		return -1;
	buf[n] = '\0';
	buf[strcspn(buf, "\n")] = '\0';
	return 0;
}

/* A number alone in a small file (sysfs, procfs): 0, or -1 (errno). */
int rothp_read_long(const char *path, long *val)
{
	char buf[64], *end;

	if (rothp_read_line(path, buf, sizeof(buf)))
		return -1;
	errno = 0;
	*val = strtol(buf, &end, 10);
	if (errno || end == buf || *end) {
		errno = EINVAL;
		return -1;
	}
	return 0;
}

/*
 * Write s to a file (sysfs, procfs, tracefs, cgroupfs) opened O_WRONLY |
 * flags, saying why if it fails when say is true: 0, or -1.
 */
int rothp_write_file(const char *path, const char *s, int flags, bool say)
{
	ssize_t n;
	int fd;

	fd = open(path, O_WRONLY | flags);
	if (fd < 0) {
		if (say)
			ksft_print_msg("open %s: %s\n", path, strerror(errno));
		return -1;
	}
	n = write(fd, s, strlen(s));
	if (n != (ssize_t)strlen(s)) {
		if (say)
			ksft_print_msg("write '%s' to %s: %s\n", s, path,
				       n < 0 ? strerror(errno) : "short write");
		close(fd);
		return -1;
	}
	return close(fd) ? -1 : 0;
}

/* Write val to a sysfs or procfs file, saying why if it fails. */
int rothp_write_text(const char *path, const char *val)
{
	return rothp_write_file(path, val, 0, true);
}

/* Write all of buf to fd, at most chunk bytes a write(2) unless chunk is 0. */
int rothp_write_all(int fd, const char *buf, size_t len, size_t chunk)
{
	ssize_t n;

	while (len) {
		n = write(fd, buf, chunk && len > chunk ? chunk : len);
		if (n <= 0)
			return -1;
		buf += n;
		len -= n;
	}
	return 0;
}

/* The whole of a file in a malloc()ed buffer, or exit failing. */
char *rothp_read_whole(const char *path, size_t *size)
{
	struct stat st;
	size_t off;
	ssize_t n;
	char *buf;
	int fd;

	fd = open(path, O_RDONLY);
	if (fd < 0 || fstat(fd, &st))
		ksft_exit_fail_msg("%s: %s\n", path, strerror(errno));
	*size = st.st_size;
	buf = malloc(*size ? *size : 1);
	if (!buf)
		ksft_exit_fail_msg("malloc %zu: %s\n", *size, strerror(errno));
	for (off = 0; off < *size; off += n) {
		n = pread(fd, buf + off, *size - off, off);
		if (n <= 0)
			ksft_exit_fail_msg("pread %s: %s\n", path, n ? strerror(errno) : "short");
	}
	close(fd);
	return buf;
}

/* A malloc()ed copy of len bytes, or exit failing. */
char *rothp_memdup(const void *buf, size_t len)
{
	char *m = malloc(len ? len : 1);

	if (!m)
		ksft_exit_fail_msg("malloc %zu: %s\n", len, strerror(errno));
	memcpy(m, buf, len);
	return m;
}

/* Copy src to dst (created or truncated, mode 0755), then fsync dst. */
int rothp_copy_file(const char *src, const char *dst)
{
	int in, out, ret = -1;
	char *buf = malloc(ROTHP_IO_CHUNK);
	ssize_t n, w;

	if (!buf)
		return -1;
	in = open(src, O_RDONLY);
	if (in < 0)
		goto out_free;
	out = open(dst, O_WRONLY | O_CREAT | O_TRUNC, 0755);
	if (out < 0)
		goto out_in;
	while ((n = read(in, buf, ROTHP_IO_CHUNK)) > 0) {
		for (w = 0; w < n; ) {
			ssize_t r = write(out, buf + w, n - w);

			if (r <= 0)
				goto out_out;
			w += r;
		}
	}
	if (!n && !fsync(out))
		ret = 0;
out_out:
	if (close(out))
		ret = -1;
out_in:
	close(in);
out_free:
	free(buf);
	return ret;
}

/* Remove a file, or an empty directory: async-signal-safe. */
static int remove_path(const char *path)
{
	if (!unlink(path))
		return 0;
	return errno == EISDIR ? rmdir(path) : -1;
}

/* Only async-signal-safe calls: it runs from a signal handler too. */
void rothp_scratch_remove_all(void)
{
	int i;

	if (getpid() != scratch_owner)
		return;		/* a forked child exiting: the files are not its */
	for (i = 0; i < NR_SCRATCH; i++) {
		if (scratch_path[i][0])
			remove_path(scratch_path[i]);
		scratch_path[i][0] = '\0';
	}
}

/*
 * Have path removed at exit and on SIGINT/SIGTERM, unless
 * rothp_scratch_remove() removes it first: a file, or an empty directory,
 * that the test made, as rothp_scratch_copy()'s copies are. A path
 * registered already is no error. 0, or -1 with errno set (ENOSPC: all
 * NR_SCRATCH places are taken).
 */
int rothp_scratch_add(const char *path)
{
	int i, slot = -1;

	if (strlen(path) >= PATH_MAX) {
		errno = ENAMETOOLONG;
		return -1;
	}
	for (i = 0; i < NR_SCRATCH; i++) {
		if (!strcmp(scratch_path[i], path)) {
			slot = i;
			break;
		}
		if (slot < 0 && !scratch_path[i][0])
			slot = i;
	}
	if (slot < 0) {
		ksft_print_msg("cannot have %s removed at exit: more than %d scratch files\n", path,
			       NR_SCRATCH);
		errno = ENOSPC;
		return -1;
	}
	scratch_owner = getpid();
	memcpy(scratch_path[slot], path, strlen(path) + 1);
	rothp_restore_at_exit();
	return 0;
}

/*
 * Copy src to dst as rothp_copy_file() does (written, fsynced, closed), then
 * write back and drop the page cache, so that dst starts with none. dst is
 * removed at exit and on SIGINT/SIGTERM (rothp_scratch_add()).
 */
int rothp_scratch_copy(const char *src, const char *dst)
{
	if (rothp_scratch_add(dst) || rothp_copy_file(src, dst) || rothp_drop_caches())
		return -1;
	return 0;
}

/*
 * rothp_scratch_copy() of src to <dir>/<name>, name a printf format, with
 * that path in path, PATH_MAX bytes: 0, or -1 with errno set.
 */
int rothp_scratch_copy_at(char *path, const char *src, const char *dir, const char *fmt, ...)
{
	va_list ap;
	int n, m;

	n = snprintf(path, PATH_MAX, "%s/", dir);
	if (n < 0 || n >= PATH_MAX) {
		errno = ENAMETOOLONG;
		return -1;
	}
	va_start(ap, fmt);
	m = vsnprintf(path + n, PATH_MAX - n, fmt, ap);
	va_end(ap);
	if (m < 0 || m >= PATH_MAX - n) {
		errno = ENAMETOOLONG;
		return -1;
	}
	return rothp_scratch_copy(src, path);
}

/* Remove a file (or directory) of rothp_scratch_add() now. */
void rothp_scratch_remove(const char *path)
{
	int i;

	if (remove_path(path))
		ksft_print_msg("remove %s: %s\n", path, strerror(errno));
	for (i = 0; i < NR_SCRATCH; i++) {
		if (!strcmp(scratch_path[i], path))
			scratch_path[i][0] = '\0';
	}
}

/*
 * What a test's files hold first: the whole of path (textprog), or exit
 * failing if it has fewer than min bytes. For the start of a test, before
 * any result: the totals it would print are the library's, not the test's.
 */
void rothp_orig_read(struct rothp_orig *orig, const char *path, size_t min)
{
	orig->buf = rothp_read_whole(path, &orig->size);
	if (orig->size < min)
		ksft_exit_fail_msg("%s has %zu bytes, fewer than %zu\n", path, orig->size, min);
}

/* A new model of a file: what it holds first. */
char *rothp_model_new(const struct rothp_orig *orig)
{
	return rothp_memdup(orig->buf, orig->size);
}

/* What the 4 KiB page at off holds instead of the model's: for diagnostics. */
static const char *page_kind(const struct rothp_orig *orig, const char *page, size_t off,
			     size_t n)
{
	size_t i;

	for (i = 0; i < n && !page[i]; i++)
		;
	if (i == n)
		return "all zeros";
	if (off + n <= orig->size && !memcmp(page, orig->buf + off, n))
		return "textprog's bytes (stale)";
	return "other bytes";
}

/* Print where buf, at file offset base, first differs from the model: true if it does. */
bool rothp_report_difference(const struct rothp_orig *orig, const char *who, const char *buf,
			     const char *model, size_t base, size_t n)
{
	size_t i, page, plen;

	for (i = 0; i < n && buf[i] == model[base + i]; i++)
		;
	if (i == n)
		return false;
	page = ROTHP_ALIGN_DOWN(i, ROTHP_PAGE_SIZE);
	plen = n - page < ROTHP_PAGE_SIZE ? n - page : ROTHP_PAGE_SIZE;
	ksft_print_msg("%s: first difference at %#zx: %#x, expected %#x; that page is %s\n", who,
		       base + i, (unsigned char)buf[i], (unsigned char)model[base + i],
		       page_kind(orig, buf + page, base + page, plen));
	return true;
}

/* pwrite() (out) or pread() all n bytes at off: 0, or -1 with errno set. */
static int pio_full(int fd, char *p, size_t n, off_t off, bool out)
{
	ssize_t r;

	while (n) {
		r = out ? pwrite(fd, p, n, off) : pread(fd, p, n, off);
		if (r <= 0) {
			if (!r)
				errno = out ? ENOSPC : ENODATA;
			return -1;
		}
		p += r;
		off += r;
		n -= r;
	}
	return 0;
}

/*
 * pread() all n bytes at off: 0, or -1 with errno set (ENODATA when the
 * file ends first).
 */
int rothp_pread_full(int fd, void *buf, size_t n, off_t off)
{
	return pio_full(fd, buf, n, off, false);
}

/*
 * pwrite() all n bytes at off: 0, or -1 with errno set (ENOSPC when a
 * write writes nothing).
 */
int rothp_pwrite_full(int fd, const void *buf, size_t n, off_t off)
{
	return pio_full(fd, (char *)buf, n, off, true);	/* only read from */
}

/* Does pread() of fd give exactly model, size bytes? Says where it differs if not. */
bool rothp_file_is(const struct rothp_orig *orig, int fd, const char *model, size_t size,
		   const char *who)
{
	struct stat st;
	uint64_t hash;
	size_t off;
	ssize_t n;
	char *buf;

	if (fstat(fd, &st) || (size_t)st.st_size != size) {
		ksft_print_msg("%s: size %lld, expected %zu\n", who, (long long)st.st_size, size);
		return false;
	}
	if (rothp_file_hash(fd, 0, size, &hash)) {
		ksft_print_msg("%s: pread: %s\n", who, strerror(errno));
		return false;
	}
	if (hash == rothp_hash(model, size))
		return true;
	if (orig->say_written)
		ksft_print_msg("%s: pread differs from what was written\n", who);
	else
		ksft_print_msg("%s: file hash %llx, expected %llx\n", who, (unsigned long long)hash,
			       (unsigned long long)rothp_hash(model, size));
	buf = malloc(ROTHP_IO_CHUNK);
	for (off = 0; buf && off < size; off += n) {
		n = pread(fd, buf, size - off < ROTHP_IO_CHUNK ? size - off : ROTHP_IO_CHUNK, off);
		if (n <= 0 || rothp_report_difference(orig, who, buf, model, off, n))
			break;
	}
	free(buf);
	return false;
}

/*
 * Does fd's file read as model, size bytes, from the disk? Written back and
 * its page cache dropped first, so nothing may map it any more; who, with
 * ", disk" after it, names it in what is printed, as rothp_file_is().
 */
bool rothp_disk_is(const struct rothp_orig *orig, int fd, const char *model, size_t size,
		   const char *who)
{
	char disk_who[128];

	if (fsync(fd) || rothp_drop_caches())
		ksft_print_msg("%s: fsync or drop_caches: %s\n", who, strerror(errno));
	snprintf(disk_who, sizeof(disk_who), "%s, disk", who);
	return rothp_file_is(orig, fd, model, size, disk_who);
}

/* Does the mapping p, the first len bytes of the file, read as the model? */
bool rothp_map_is(const struct rothp_orig *orig, const char *p, const char *model, size_t len,
		  const char *who)
{
	if (rothp_hash(p, len) == rothp_hash(model, len))
		return true;
	if (orig->say_written)
		ksft_print_msg("%s: the mapping differs from what was written\n", who);
	rothp_report_difference(orig, who, p, model, 0, len);
	return false;
}
