// SPDX-License-Identifier: GPL-2.0
/*
 * Prompt collapse: its switch, queue and counters, rothp_prompt_settle(),
 * the busy neighbour, and textproc_wait_huge().
 */
#define _GNU_SOURCE
#include <errno.h>
#include <fcntl.h>
#include <poll.h>
#include <signal.h>
#include <string.h>
#include <unistd.h>
#include <sys/mman.h>
#include <sys/wait.h>

#include "kselftest.h"
#include "textproc.h"
#include "util_core.h"
#include "util_files.h"
#include "util_maps.h"
#include "util_prompt.h"
#include "util_settings.h"

#define PROMPT_POLL_MS		20
/* How long the counters may trail a pending count of 0. */
#define PROMPT_SETTLE_MS	2000
/* How long a neighbour may take to populate its heap. */
#define NEIGHBOUR_READY_MS	(180 * 1000)

/* NULL when the running kernel has prompt collapse, else why to skip. */
const char *rothp_prompt_skip(void)
{
	if (access(ROTHP_THP_SYSFS ROTHP_PROMPT_KNOB, F_OK))
		return ROTHP_NO_PROMPT;
	return NULL;
}

/* The prompt_collapse switch: 0 with *on set, -1 (ENOENT) when absent. */
int rothp_prompt_read(long *on)
{
	return rothp_read_long(ROTHP_THP_SYSFS ROTHP_PROMPT_KNOB, on);
}

int rothp_prompt_set(long on)
{
	char buf[32];

	snprintf(buf, sizeof(buf), "%lu", (unsigned long)on);
	return rothp_thp_set_str(ROTHP_PROMPT_KNOB, buf);
}

/* Requests queued now: 0 with *pending set, -1 (ENOENT) when absent. */
int rothp_prompt_pending(long *pending)
{
	return rothp_read_long(ROTHP_THP_SYSFS ROTHP_PROMPT_PENDING, pending);
}

/*
 * Wait until no request is pending: the milliseconds it took, or -1 after
 * timeout_ms or when the count cannot be read. *pending is the last count
 * read (-1 if none could be).
 */
long rothp_prompt_wait_idle(long timeout_ms, long *pending)
{
	double start = rothp_now();
	long ms;

	for (;;) {
		if (rothp_prompt_pending(pending)) {
			*pending = -1;
			return -1;
		}
		ms = (long)((rothp_now() - start) * 1000);
		if (!*pending)
			return ms;
		if (ms >= timeout_ms)
			return -1;
		usleep(PROMPT_POLL_MS * 1000);
	}
}

/* The four counters; -1 (ENOENT) if this kernel lacks any of them. */
int rothp_prompt_stat_read(struct rothp_prompt_stat *st)
{
	if (rothp_vmstat("thp_prompt_collapse_queued", &st->queued) ||
	    rothp_vmstat("thp_prompt_collapse_served", &st->served) ||
	    rothp_vmstat("thp_prompt_collapse_failed", &st->failed) ||
	    rothp_vmstat("thp_prompt_collapse_dropped", &st->dropped))
		return -1;
	return 0;
}

static bool prompt_balanced(const struct rothp_prompt_stat *b, const struct rothp_prompt_stat *a)
{
	return a->queued - b->queued ==
	       (a->served - b->served) + (a->failed - b->failed) + (a->dropped - b->dropped);
}

/*
 * End an interval that started quiescent (no request pending, counters in
 * before): wait up to timeout_ms for the queue to empty, read the counters
 * into after, and check that every request made in the interval was served,
 * failed or dropped. The counters get PROMPT_SETTLE_MS to catch up with a
 * pending count of 0; needing that is said, as it is worth knowing.
 * Returns 0 when they balance, -1 if requests stayed pending, -2 if the
 * counters do not balance or cannot be read.
 */
int rothp_prompt_settle(const struct rothp_prompt_stat *before, struct rothp_prompt_stat *after,
			long timeout_ms, const char *who)
{
	long pending, ms;
	double t;
	bool ok;

	ms = rothp_prompt_wait_idle(timeout_ms, &pending);
	if (rothp_prompt_stat_read(after)) {
		ksft_print_msg("%s: cannot read the thp_prompt_collapse counters\n", who);
		return -2;
	}
	t = rothp_now();
	ok = prompt_balanced(before, after);
	while (ms >= 0 && !ok && rothp_now() - t < PROMPT_SETTLE_MS / 1000.0) {
		usleep(PROMPT_POLL_MS * 1000);
		if (rothp_prompt_stat_read(after))
			return -2;
		ok = prompt_balanced(before, after);
	}
	ksft_print_msg("%s: queued +%ld, served +%ld, failed +%ld, dropped +%ld; pending %ld%s\n",
		       who, after->queued - before->queued, after->served - before->served,
		       after->failed - before->failed, after->dropped - before->dropped,
		       pending, ms < 0 ? " (timed out)" : "");
	if (ms < 0) {
		ksft_print_msg("%s: requests still pending after %.1f s\n", who,
			       timeout_ms / 1000.0);
		return -1;
	}
	if (!ok) {
		ksft_print_msg("%s: queued != served + failed + dropped with no request pending\n",
			       who);
		return -2;
	}
	if (rothp_now() - t > PROMPT_POLL_MS / 1000.0)
		ksft_print_msg("%s: the counters balanced only %.2f s after pending read 0\n", who,
			       rothp_now() - t);
	return 0;
}

/*
 * The neighbour: populate an anonymous heap with 4 KiB pages (MADV_NOHUGEPAGE
 * while touching it, whatever THP "enabled" says), then MADV_HUGEPAGE it,
 * which registers the mm with khugepaged (hugepage_madvise() ->
 * khugepaged_enter_vma()) with every 2 MiB block of it to collapse. Only
 * _exit(): the atexit handlers are the parent's.
 */
static void neighbour_child(int ready, int ctl, unsigned long mib)
{
	size_t off, len = mib << 20;
	char c = 'r', *p;

	p = mmap(NULL, len, PROT_READ | PROT_WRITE, MAP_PRIVATE | MAP_ANONYMOUS, -1, 0);
	if (p == MAP_FAILED)
		_exit(1);
	if (madvise(p, len, MADV_NOHUGEPAGE))
		_exit(2);
	for (off = 0; off < len; off += ROTHP_PAGE_SIZE)
		p[off] = (char)(off / ROTHP_PAGE_SIZE) | 1;
	if (madvise(p, len, MADV_HUGEPAGE))
		_exit(3);
	if (write(ready, &c, 1) != 1)
		_exit(4);
	/* Until killed, or the parent is gone (EOF). */
	while (read(ctl, &c, 1) < 0 && errno == EINTR)
		;
	_exit(0);
}

/*
 * Start a neighbour with a heap of mib MiB and wait until it is registered
 * with khugepaged. It is killed by rothp_neighbour_stop(), and exits by
 * itself when its parent does.
 */
int rothp_neighbour_start(struct rothp_neighbour *nb, unsigned long mib)
{
	struct pollfd pfd = { .events = POLLIN };
	int ready[2], ctl[2], ret;
	double t0 = rothp_now();
	char c;

	nb->pid = -1;
	nb->ctl = -1;
	nb->mib = mib;
	if (pipe2(ready, O_CLOEXEC))
		return -1;
	if (pipe2(ctl, O_CLOEXEC)) {
		close(ready[0]);
		close(ready[1]);
		return -1;
	}
	fflush(NULL);
	nb->pid = fork();
	if (!nb->pid) {
		close(ready[0]);
		close(ctl[1]);
		neighbour_child(ready[1], ctl[0], mib);
	}
	close(ready[1]);
	close(ctl[0]);
	nb->ctl = ctl[1];
	if (nb->pid < 0) {
		ksft_print_msg("fork: %s\n", strerror(errno));
		close(ready[0]);
		rothp_neighbour_stop(nb);
		return -1;
	}
	pfd.fd = ready[0];
	do {
		ret = poll(&pfd, 1, NEIGHBOUR_READY_MS);
	} while (ret < 0 && errno == EINTR);
	ret = ret > 0 && read(ready[0], &c, 1) == 1 ? 0 : -1;
	close(ready[0]);
	if (ret) {
		ksft_print_msg("neighbour %d: not ready within %d s\n", (int)nb->pid,
			       NEIGHBOUR_READY_MS / 1000);
		rothp_neighbour_stop(nb);
		return -1;
	}
	ksft_print_msg("neighbour %d: %lu MiB of 4 KiB pages registered with khugepaged in %.1f s\n",
		       (int)nb->pid, mib, rothp_now() - t0);
	return 0;
}

void rothp_neighbour_stop(struct rothp_neighbour *nb)
{
	if (nb->ctl >= 0)
		close(nb->ctl);
	nb->ctl = -1;
	if (nb->pid > 0) {
		kill(nb->pid, SIGKILL);
		waitpid(nb->pid, NULL, 0);
	}
	nb->pid = -1;
}

/*
 * Run a textprog's stubs every interval_ms (the next fault after a collapse
 * maps the new folio with a PMD) until at least percent of the eligible
 * blocks of its text are PMD-mapped. Returns the seconds since t0 (a
 * rothp_now() time) it took, or -1 once cap_ms since t0 have passed, a run
 * failed or the blocks cannot be counted; hw says what was seen.
 */
double textproc_wait_huge(struct textproc *tp, double t0, int percent, long cap_ms,
			  long interval_ms, struct rothp_huge_wait *hw)
{
	struct textproc_pmd_poll pp = { .tp = tp };
	long left, ms;

	memset(hw, 0, sizeof(*hw));
	hw->eligible = textproc_eligible(tp);
	if (hw->eligible <= 0)
		return -1;
	/* percent of the eligible blocks, rounded up to a whole block */
	pp.want = (percent * hw->eligible + 99) / 100 * (long)ROTHP_PMD_SIZE;
	left = cap_ms - (long)((rothp_now() - t0) * 1000);
	ms = rothp_wait_until(textproc_pmd_reached, &pp, left > 0 ? left : 0, interval_ms);
	hw->polls = pp.polls;
	hw->blocks = pp.pmd > 0 ? pp.pmd / (long)ROTHP_PMD_SIZE : 0;
	hw->run_failed = pp.run_failed;
	if (ms < 0 || hw->run_failed)
		return -1;
	return pp.at - t0;
}
