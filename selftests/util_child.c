// SPDX-License-Identifier: GPL-2.0
/*
 * Forked children: fork() without repeating the parent's output or running
 * its restore handler, reaping with a timeout, and errors counted in memory
 * shared with the children and printed a bounded number of times.
 */
#define _GNU_SOURCE
#include <ctype.h>
#include <dirent.h>
#include <errno.h>
#include <signal.h>
#include <stdarg.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>
#include <sys/stat.h>
#include <sys/wait.h>

#include "kselftest.h"
#include "util_child.h"
#include "util_core.h"

/*
 * An unexpected error in a forked child, or in the parent: counted in
 * *errors, and printed with the pid, after who unless that is NULL, the
 * first max times *reports is counted. Both counters may be in memory
 * shared with the children; a test resets *reports where it wants a new
 * allowance (a round, ...).
 */
void rothp_child_error(long *errors, long *reports, long max, const char *who,
		       const char *fmt, ...)
{
	char msg[512];
	va_list ap;

	rothp_shared_add(errors, 1);
	if (rothp_shared_add(reports, 1) > max)
		return;
	va_start(ap, fmt);
	vsnprintf(msg, sizeof(msg), fmt, ap);
	va_end(ap);
	if (who)
		ksft_print_msg("%s [%d]: %s\n", who, (int)getpid(), msg);
	else
		ksft_print_msg("[%d] %s\n", (int)getpid(), msg);
}

/*
 * fork() once stdio is flushed, so that the child cannot print again what
 * the parent had buffered. The child dies of SIGINT and SIGTERM, rather
 * than run the handler that restores what the parent saved and removes its
 * files (util_settings.c): that is the parent's to do, once.
 */
pid_t rothp_fork(void)
{
	pid_t pid;

	fflush(NULL);
	pid = fork();
	if (!pid) {
		signal(SIGINT, SIG_DFL);
		signal(SIGTERM, SIG_DFL);
	}
	return pid;
}

/*
 * Reap the child pid, killing it with SIGKILL if it still runs timeout_ms
 * from now (*killed is set then, unless killed is NULL); a negative
 * timeout waits as long as it takes. A killed child still there
 * ROTHP_KILL_WAIT_MS later, stuck in the kernel, is left behind rather
 * than hang the test. Returns 0 if it exited with status 0, else -1,
 * saying why as who unless who is NULL.
 */
int rothp_child_wait(pid_t pid, long timeout_ms, const char *who, bool *killed)
{
	double end = rothp_now() + timeout_ms / 1000.0;
	bool sent = false;
	int status = 0;
	pid_t got;

	if (pid <= 0)
		return -1;	/* the fork failed: nothing to reap */
	for (;;) {
		got = waitpid(pid, &status, timeout_ms < 0 ? 0 : WNOHANG);
		if (got < 0 && errno == EINTR)
			continue;
		if (got)
			break;
		if (rothp_now() < end) {
			usleep(10 * 1000);
			continue;
		}
		if (sent) {
			if (who)
				ksft_print_msg("%s: still there %d s after SIGKILL, leaving it\n",
					       who, ROTHP_KILL_WAIT_MS / 1000);
			return -1;
		}
		if (who)
			ksft_print_msg("%s: still running after %ld s, killing it\n", who,
				       timeout_ms / 1000);
		kill(pid, SIGKILL);
		sent = true;
		if (killed)
			*killed = true;
		end = rothp_now() + ROTHP_KILL_WAIT_MS / 1000.0;
	}
	if (got < 0) {
		if (who)
			ksft_print_msg("%s: waitpid: %s\n", who, strerror(errno));
		return -1;
	}
	if (WIFEXITED(status) && !WEXITSTATUS(status))
		return 0;
	if (!who)
		return -1;
	if (WIFSIGNALED(status))
		ksft_print_msg("%s: killed by signal %d\n", who, WTERMSIG(status));
	else
		ksft_print_msg("%s: exit status %d\n", who, WEXITSTATUS(status));
	return -1;
}

/*
 * A child of parent, found by the parent field of every process's
 * /proc/PID/stat (CONFIG_PROC_CHILDREN may be off), that runs the file exe
 * (NULL: any), waiting up to wait_ms for one: its PID, or -1.
 */
pid_t rothp_child_of(pid_t parent, const struct stat *exe, long wait_ms)
{
	char path[300], buf[512], *p;
	double end = rothp_now() + wait_ms / 1000.0;
	struct dirent *d;
	pid_t pid = -1;
	struct stat st;
	int ppid;
	FILE *fp;
	DIR *dir;

	for (;;) {
		dir = opendir("/proc");
		while (dir && pid < 0 && (d = readdir(dir))) {
			if (!isdigit((unsigned char)d->d_name[0]))
				continue;
			snprintf(path, sizeof(path), "/proc/%s/stat", d->d_name);
			fp = fopen(path, "r");
			if (!fp)
				continue;
			if (!fgets(buf, sizeof(buf), fp))
				buf[0] = '\0';
			fclose(fp);
			/* "pid (comm) state ppid ...": comm may hold anything */
			p = strrchr(buf, ')');
			if (!p || sscanf(p + 1, " %*c %d", &ppid) != 1 || ppid != parent)
				continue;
			/* Not yet exe (a fork before its exec): not it. */
			snprintf(path, sizeof(path), "/proc/%s/exe", d->d_name);
			if (exe && (stat(path, &st) || st.st_dev != exe->st_dev ||
				    st.st_ino != exe->st_ino))
				continue;
			pid = atoi(d->d_name);
		}
		if (dir)
			closedir(dir);
		if (pid > 0 || rothp_now() >= end)
			return pid;
		usleep(10 * 1000);
	}
}
