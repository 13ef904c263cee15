// SPDX-License-Identifier: GPL-2.0
/*
 * Driving textprog (progs/textprog.c) over two pipes: commands on its
 * stdin, one reply line each on its stdout, which must echo the command.
 */
#define _GNU_SOURCE
#include <errno.h>
#include <fcntl.h>
#include <limits.h>
#include <poll.h>
#include <signal.h>
#include <string.h>
#include <unistd.h>
#include <sys/wait.h>

#include "kselftest.h"
#include "textproc.h"
#include "util_cache.h"
#include "util_core.h"
#include "util_maps.h"

/* Generous per-reply limit: the guest is TCG, maybe with a KASAN kernel. */
#define REPLY_TIMEOUT_MS	(180 * 1000)

/* Read one reply line from textprog, waiting at most timeout_ms. */
static int textproc_read_line(struct textproc *tp, char *buf, size_t len, long timeout_ms)
{
	struct pollfd pfd = { .fd = fileno(tp->out), .events = POLLIN };
	int ret;

	do {
		ret = poll(&pfd, 1, timeout_ms);
	} while (ret < 0 && errno == EINTR);
	if (ret == 0) {
		ksft_print_msg("textprog %d: no reply within %ld s\n", (int)tp->pid,
			       timeout_ms / 1000);
		errno = ETIMEDOUT;
		return -1;
	}
	if (ret < 0 || !fgets(buf, len, tp->out)) {
		ksft_print_msg("textprog %d: no reply (it exited?)\n", (int)tp->pid);
		return -1;
	}
	buf[strcspn(buf, "\n")] = '\0';
	return 0;
}

/* Start "path action" with pipes on its stdin and stdout; wait for "ready". */
int textproc_start(struct textproc *tp, const char *path, const char *action)
{
	int to_child[2], from_child[2];
	char line[256];

	memset(tp, 0, sizeof(*tp));
	tp->pid = -1;
	if (pipe2(to_child, O_CLOEXEC))
		return -1;
	if (pipe2(from_child, O_CLOEXEC)) {
		close(to_child[0]);
		close(to_child[1]);
		return -1;
	}
	signal(SIGPIPE, SIG_IGN);	/* a dead child must not kill the test */
	fflush(NULL);
	tp->pid = fork();
	if (tp->pid < 0) {
		ksft_print_msg("fork: %s\n", strerror(errno));
		return -1;
	}
	if (!tp->pid) {
		dup2(to_child[0], STDIN_FILENO);
		dup2(from_child[1], STDOUT_FILENO);
		signal(SIGPIPE, SIG_DFL);
		execl(path, path, action, (char *)NULL);
		fprintf(stderr, "exec %s: %s\n", path, strerror(errno));
		_exit(127);
	}
	close(to_child[0]);
	close(from_child[1]);
	tp->in = fdopen(to_child[1], "w");
	tp->out = fdopen(from_child[0], "r");
	if (!tp->in || !tp->out)
		goto fail;
	if (textproc_read_line(tp, line, sizeof(line), REPLY_TIMEOUT_MS))
		goto fail;
	if (sscanf(line, "ready %lx %lx %d %d", &tp->start, &tp->end, &tp->action_rc,
		   &tp->action_errno) != 4) {
		ksft_print_msg("textprog %s: unexpected first line '%s'\n", action, line);
		goto fail;
	}
	return 0;
fail:
	textproc_stop(tp);
	return -1;
}

/* Send one command, read its one-line reply, which must echo the command. */
int textproc_cmd(struct textproc *tp, const char *cmd, char *reply, size_t len)
{
	size_t clen = strlen(cmd);

	if (!tp->in || fprintf(tp->in, "%s\n", cmd) < 0 || fflush(tp->in)) {
		ksft_print_msg("textprog %d: cannot send '%s'\n", (int)tp->pid, cmd);
		return -1;
	}
	if (textproc_read_line(tp, reply, len, REPLY_TIMEOUT_MS))
		return -1;
	if (strncmp(reply, cmd, clen) || (reply[clen] != ' ' && reply[clen])) {
		ksft_print_msg("textprog %d: '%s' got reply '%s'\n", (int)tp->pid, cmd, reply);
		return -1;
	}
	return 0;
}

/*
 * Send "hugepage": textprog madvise(MADV_HUGEPAGE)s its text. *t0 (if not
 * NULL) gets the time the command was sent. 0 if madvise returned 0.
 */
int textproc_hugepage(struct textproc *tp, const char *who, double *t0)
{
	char reply[128];
	int rc = -1, err = 0;

	if (t0)
		*t0 = rothp_now();
	if (textproc_cmd(tp, "hugepage", reply, sizeof(reply)) ||
	    sscanf(reply, "hugepage %d %d", &rc, &err) != 2)
		return -1;
	if (rc)
		ksft_print_msg("%s: MADV_HUGEPAGE: %s\n", who, strerror(err));
	return rc;
}

/* "run": 1 if every stub returned its index, 0 if not, -1 on error. */
int textproc_run(struct textproc *tp, long *calls)
{
	char reply[128];
	int ok;

	if (textproc_cmd(tp, "run", reply, sizeof(reply)) ||
	    sscanf(reply, "run %d %ld", &ok, calls) != 2)
		return -1;
	return ok == 1;
}

int textproc_sum(struct textproc *tp, uint64_t *memsum, uint64_t *filesum)
{
	char reply[128];
	unsigned long long m, f;

	if (textproc_cmd(tp, "sum", reply, sizeof(reply)) ||
	    sscanf(reply, "sum %llx %llx", &m, &f) != 2)
		return -1;
	*memsum = m;
	*filesum = f;
	return 0;
}

/* Eligible 2 MiB blocks of textprog's text VMA, from its /proc maps. */
long textproc_eligible(struct textproc *tp)
{
	struct rothp_vma vma;

	if (rothp_find_vma(tp->pid, tp->start, &vma)) {
		ksft_print_msg("textprog %d: no VMA at %#lx\n", (int)tp->pid, tp->start);
		return -1;
	}
	return rothp_vma_eligible_blocks(&vma);
}

/*
 * Check a textprog's contents and execution: *sum_ok if its stubs in memory
 * hash as the file does, *run_ok if every stub returns its index.
 */
bool textproc_sum_matches(struct textproc *tp, const char *who)
{
	uint64_t memsum = 0, filesum = 1;

	if (textproc_sum(tp, &memsum, &filesum))
		ksft_print_msg("%s: no sum reply\n", who);
	else if (memsum != filesum)
		ksft_print_msg("%s: memory hash %llx, file hash %llx\n", who,
			       (unsigned long long)memsum, (unsigned long long)filesum);
	return memsum == filesum;
}

void textproc_sum_and_run(struct textproc *tp, const char *who, bool *sum_ok, bool *run_ok)
{
	long calls = 0;
	int ok;

	*sum_ok = textproc_sum_matches(tp, who);

	ok = textproc_run(tp, &calls);
	if (ok != 1)
		ksft_print_msg("%s: run reply %d after %ld calls\n", who, ok, calls);
	*run_ok = ok == 1;
}

/* Ask textprog to exit and reap it: 0 if it exited with status 0. */
int textproc_stop(struct textproc *tp)
{
	int status = 0, i;
	pid_t ret = 0;

	if (tp->in) {
		fprintf(tp->in, "exit\n");
		fclose(tp->in);
		tp->in = NULL;
	}
	if (tp->out) {
		fclose(tp->out);
		tp->out = NULL;
	}
	if (tp->pid <= 0)
		return -1;
	/* EOF on its stdin also makes it exit; give it 30 s, then kill it. */
	for (i = 0; i < 3000; i++) {
		ret = waitpid(tp->pid, &status, WNOHANG);
		if (ret)
			break;
		usleep(10 * 1000);
	}
	if (!ret) {
		ksft_print_msg("textprog %d did not exit, killing it\n", (int)tp->pid);
		kill(tp->pid, SIGKILL);
		ret = waitpid(tp->pid, &status, 0);
	}
	tp->pid = -1;
	if (ret < 0)
		return -1;
	if (WIFEXITED(status) && !WEXITSTATUS(status))
		return 0;
	if (WIFEXITED(status))
		ksft_print_msg("textprog exited with status %d\n", WEXITSTATUS(status));
	else if (WIFSIGNALED(status))
		ksft_print_msg("textprog killed by signal %d\n", WTERMSIG(status));
	return -1;
}

/*
 * Start textprog at path ("none") with its text read afresh in small folios
 * (rothp_fresh_cache()) and faulted in by a run of its stubs: -1 when it
 * cannot be started, else 0, or 1 when some of its text is PMD-mapped
 * already (or that cannot be read). What goes wrong is said, as who.
 */
int textproc_start_small(struct textproc *tp, const char *path, const char *who)
{
	char why[PATH_MAX + 64];
	long calls, pmd;

	if (rothp_fresh_cache(path, why, sizeof(why))) {
		ksft_print_msg("%s: %s\n", who, why);
		return -1;
	}
	if (textproc_start(tp, path, "none")) {
		ksft_print_msg("%s: cannot start %s none\n", who, path);
		return -1;
	}
	if (textproc_run(tp, &calls) != 1)
		ksft_print_msg("%s: the first run failed\n", who);
	pmd = rothp_file_pmd_mapped(tp->pid, tp->start);
	if (!pmd)
		return 0;
	ksft_print_msg("%s: FilePmdMapped %ld kB before any madvise\n", who, pmd / 1024);
	return 1;
}

/*
 * For rothp_wait_until(): run the stubs, as the next fault after a
 * collapse maps the new folio with a PMD, then read FilePmdMapped. True
 * once it reaches pp->want, or when a run fails.
 */
bool textproc_pmd_reached(void *arg)
{
	struct textproc_pmd_poll *pp = arg;
	long calls;

	pp->polls++;
	if (textproc_run(pp->tp, &calls) != 1) {
		pp->run_failed = true;
		return true;	/* stop: the result is already a failure */
	}
	pp->pmd = rothp_file_pmd_mapped(pp->tp->pid, pp->tp->start);
	pp->at = rothp_now();
	if (pp->pmd > pp->max_pmd)
		pp->max_pmd = pp->pmd;
	return pp->want > 0 && pp->pmd >= pp->want;
}

/*
 * Start textprog at path ("none"), find its text VMA (*vma) and count its
 * eligible 2 MiB blocks (*eligible), run its stubs unless ran_ok is NULL,
 * and stop it: where the kernel put a program's text. *ran_ok says whether
 * every stub returned its index and it exited with status 0; without
 * ran_ok, a textprog that does not exit so fails the call. 0, or -1 (said)
 * when it could not be started or looked at.
 */
int textproc_sample(const char *path, struct rothp_vma *vma, long *eligible, bool *ran_ok)
{
	struct textproc tp;
	long calls = 0;
	int ran;

	if (textproc_start(&tp, path, "none")) {
		ksft_print_msg("%s: cannot start it\n", path);
		return -1;
	}
	if (rothp_find_vma(tp.pid, tp.start, vma)) {
		ksft_print_msg("%s: no VMA at %#lx\n", path, tp.start);
		textproc_stop(&tp);
		return -1;
	}
	*eligible = rothp_vma_eligible_blocks(vma);
	if (ran_ok) {
		ran = textproc_run(&tp, &calls);
		if (ran != 1)
			ksft_print_msg("%s: run reply %d after %ld calls\n", path, ran, calls);
		*ran_ok = ran == 1;
	}
	if (textproc_stop(&tp)) {
		if (!ran_ok) {
			ksft_print_msg("%s: it did not exit cleanly\n", path);
			return -1;
		}
		*ran_ok = false;
	}
	if (*eligible < 0) {
		ksft_print_msg("%s: cannot count the eligible blocks of %s\n", path, vma->path);
		return -1;
	}
	return 0;
}
