// SPDX-License-Identifier: GPL-2.0
/*
 * The kernel log through /dev/kmsg (Documentation/ABI/testing/dev-kmsg):
 * each read() gives one record, "PRIO,SEQ,TIME,FLAGS;MESSAGE\n" followed
 * by " KEY=VALUE" lines; with O_NONBLOCK, EAGAIN once every record has
 * been read, and EPIPE once when records were overwritten before this
 * reader got to them (it then goes on with the oldest one left). Reports
 * span several records, one a line: the lines that start them are counted.
 */
#define _GNU_SOURCE
#include <ctype.h>
#include <errno.h>
#include <fcntl.h>
#include <string.h>
#include <unistd.h>

#include "kselftest.h"
#include "util_kmsg.h"

#define KMSG_PATH	"/dev/kmsg"
/* A record's text is at most 1 KiB (PRINTK_MESSAGE_MAX); its KEY=VALUE lines come on top. */
#define RECORD_MAX	8192

/* Substrings that make a line a report: scripts/rothp/ktap.py's SPLATS. */
static const char *const splat_words[] = {
	"general protection fault",
	"BUG: ",
	"kernel BUG at",
	"------------[ cut here ]",
	"KASAN: ",
	"possible circular locking",
	"possible recursive locking",
	"inconsistent lock state",
	"suspicious RCU usage",
	"DEBUG_LOCKS_WARN_ON",
	"possible irq lock inversion",
	"bad unlock balance",
	"held lock freed",
	"lock held when returning",
	"INFO: lockdep is turned off",
	"Kernel panic",
	"soft lockup",
	"hard LOCKUP",
	"list_add corruption",
	"list_del corruption",
	"EXT4-fs error",
};

/* Boot banners of the debug options: they name them without reporting anything. */
static const char *const benign_words[] = {
	"RCU lockdep checking is enabled",
	"KernelAddressSanitizer initialized",
};

/* XFS finding its metadata corrupt: "XFS (<dev>): " then one of these. */
static const char *const xfs_corrupt[] = {
	"Metadata CRC error",
	"Metadata corruption",
	"Corruption",
};

static bool word_char(char c)
{
	return isalnum((unsigned char)c) || c == '_';
}

/* Does msg hold word with no letter, digit or '_' on either side? */
static bool has_word(const char *msg, const char *word)
{
	size_t len = strlen(word);
	const char *p;

	for (p = strstr(msg, word); p; p = strstr(p + 1, word)) {
		if ((p == msg || !word_char(p[-1])) && !word_char(p[len]))
			return true;
	}
	return false;
}

/* Does msg hold first, then later second? */
static bool has_both(const char *msg, const char *first, const char *second)
{
	const char *p = strstr(msg, first);

	return p && strstr(p + strlen(first), second);
}

/* Is one line of the kernel log the start of a report of trouble? */
bool rothp_kmsg_is_splat(const char *msg)
{
	const char *p;
	size_t i;

	for (i = 0; i < ARRAY_SIZE(benign_words); i++) {
		if (strstr(msg, benign_words[i]))
			return false;
	}
	for (i = 0; i < ARRAY_SIZE(splat_words); i++) {
		if (strstr(msg, splat_words[i]))
			return true;
	}
	if (has_word(msg, "Oops") || has_both(msg, "WARNING: ", " at ") ||
	    has_both(msg, "INFO: task ", " blocked for more than"))
		return true;
	for (p = strstr(msg, "XFS ("); p; p = strstr(p + 1, "XFS (")) {
		const char *close = strstr(p, "): ");

		for (i = 0; close && i < ARRAY_SIZE(xfs_corrupt); i++) {
			if (!strncmp(close + 3, xfs_corrupt[i], strlen(xfs_corrupt[i])))
				return true;
		}
	}
	return false;
}

/*
 * Start reading the kernel log at its end: only what is logged from now
 * on is looked at. 0, or -1 with errno (kept in km->err) when /dev/kmsg
 * cannot be read; rothp_kmsg_splats() then fails the same way.
 */
int rothp_kmsg_open(struct rothp_kmsg *km)
{
	memset(km, 0, sizeof(*km));
	km->fd = open(KMSG_PATH, O_RDONLY | O_NONBLOCK | O_CLOEXEC);
	if (km->fd >= 0 && lseek(km->fd, 0, SEEK_END) >= 0)
		return 0;
	km->err = errno;
	if (km->fd >= 0)
		close(km->fd);
	km->fd = -1;
	errno = km->err;
	return -1;
}

/*
 * Read the records logged since the last call (or the open): the number
 * of report lines among them, the first max_print of them printed as who;
 * -1 with errno when the log cannot be read. Records the kernel overwrote
 * before they were read are said, as a report among them went unseen.
 */
long rothp_kmsg_splats(struct rothp_kmsg *km, const char *who, int max_print)
{
	char rec[RECORD_MAX], *msg;
	long found = 0, lost = 0;
	ssize_t n;

	if (km->fd < 0) {
		errno = km->err;
		return -1;
	}
	for (;;) {
		n = read(km->fd, rec, sizeof(rec) - 1);
		if (n < 0 && errno == EINTR)
			continue;
		if (n < 0 && errno == EPIPE) {
			lost++;
			continue;
		}
		if (n < 0 && errno == EAGAIN)
			break;
		if (n < 0) {
			ksft_print_msg("%s: reading %s: %s\n", who, KMSG_PATH, strerror(errno));
			return -1;
		}
		if (!n)
			break;
		rec[n] = '\0';
		km->records++;
		msg = strchr(rec, ';');
		if (!msg)
			continue;
		msg++;
		msg[strcspn(msg, "\n")] = '\0';
		if (!rothp_kmsg_is_splat(msg))
			continue;
		if (found++ < max_print)
			ksft_print_msg("%s: kernel log: %s\n", who, msg);
	}
	if (found > max_print)
		ksft_print_msg("%s: %ld more report lines in the kernel log\n", who,
			       found - max_print);
	if (lost) {
		km->lost += lost;
		ksft_print_msg("%s: the kernel log overwrote records %ld time(s) before they were read\n",
			       who, lost);
	}
	return found;
}

void rothp_kmsg_close(struct rothp_kmsg *km)
{
	if (km->fd >= 0)
		close(km->fd);
	km->fd = -1;
}
