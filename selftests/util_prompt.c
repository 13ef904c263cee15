// SPDX-License-Identifier: GPL-2.0
/*
 * Prompt collapse: its switch and the tests' settings, watching what a
 * hint maps, the busy neighbour, and textproc_wait_huge().
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

/* rothp_hint_wait()'s interval between reads of smaps. */
#define HINT_POLL_MS		10
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

/*
 * Where the prompt collapse tests start from, the THP knobs saved: unless
 * skip (rothp_prompt_skip(): the kernel has no switch), the switch saved
 * with them, and turned on if it was off; THP "madvise" and khugepaged's
 * default tunables. 0, or -1 with why saying what failed.
 */
int rothp_prompt_setup(const char *skip, char *why, size_t len)
{
	long on;

	if (!skip) {
		if (rothp_prompt_save(&on)) {
			snprintf(why, len, "cannot read %s: %s", ROTHP_PROMPT_KNOB,
				 strerror(errno));
			return -1;
		}
		if (on != 1 && rothp_prompt_set(1)) {
			snprintf(why, len, "cannot set prompt_collapse=1");
			return -1;
		}
	}
	if (rothp_thp_set_str("enabled", "madvise")) {
		snprintf(why, len, "cannot set THP enabled=madvise");
		return -1;
	}
	if (rothp_thp_khugepaged_defaults()) {
		snprintf(why, len, "cannot set khugepaged's default tunables");
		return -1;
	}
	return 0;
}

/*
 * Read FilePmdMapped of pid's VMA at addr until eligible blocks of it are
 * PMD-mapped or cap_ms have passed, every HINT_POLL_MS, touching nothing:
 * what a hint mapped, not what a fault would. The first read comes at
 * once, as a hint is done when the call that made it returns. Returns the
 * milliseconds it took, or -1 after cap_ms or when smaps cannot be read
 * (hw->blocks is -1 then, if it never could); hw says what was seen.
 */
long rothp_hint_wait(pid_t pid, unsigned long addr, long eligible, long cap_ms,
		     struct rothp_hint_wait *hw)
{
	double t0 = rothp_now();
	long pmd;

	memset(hw, 0, sizeof(*hw));
	hw->eligible = eligible;
	hw->at_once = -1;
	hw->blocks = -1;
	for (;;) {
		pmd = rothp_file_pmd_mapped(pid, addr);
		hw->secs = rothp_now() - t0;
		if (pmd < 0)
			return -1;
		hw->blocks = pmd / (long)ROTHP_PMD_SIZE;
		if (hw->at_once < 0)
			hw->at_once = hw->blocks;
		if (eligible > 0 && hw->blocks >= eligible)
			return (long)(hw->secs * 1000);
		if (hw->secs * 1000 >= cap_ms)
			return -1;
		usleep(HINT_POLL_MS * 1000);
	}
}

/* Were all the blocks there to map PMD-mapped within the poll? */
bool rothp_hint_done(const struct rothp_hint_wait *hw)
{
	return hw->eligible > 0 && hw->blocks >= hw->eligible;
}

/* Say what rothp_hint_wait() saw, and whether it took the poll. */
void rothp_hint_print(const char *who, const struct rothp_hint_wait *hw)
{
	if (rothp_hint_done(hw) && hw->at_once >= hw->eligible)
		ksft_print_msg("%s: all %ld eligible blocks PMD-mapped at once\n", who,
			       hw->eligible);
	else if (rothp_hint_done(hw))
		ksft_print_msg("%s: %ld of %ld eligible blocks PMD-mapped at once, all of them only %.3f s later\n",
			       who, hw->at_once, hw->eligible, hw->secs);
	else
		ksft_print_msg("%s: %ld of %ld eligible blocks PMD-mapped at once, %ld after %.3f s\n",
			       who, hw->at_once, hw->eligible, hw->blocks, hw->secs);
}

/*
 * Have textprog madvise(MADV_HUGEPAGE) its text ("hugepage"), then watch
 * its text with rothp_hint_wait() for ROTHP_HINT_MS: textprog had returned
 * from madvise() when it replied. Returns madvise()'s result (0, or -1 as
 * when it cannot be asked); *hw says what was seen, its eligible blocks
 * counted from textprog's maps first, and it is said as who.
 */
int textproc_hint(struct textproc *tp, const char *who, struct rothp_hint_wait *hw)
{
	long eligible = textproc_eligible(tp);
	double t0 = rothp_now();
	int rc;

	rc = textproc_hugepage(tp, who, NULL);
	ksft_print_msg("%s: madvise(MADV_HUGEPAGE) rc %d, %.3f s from the command to its reply\n",
		       who, rc, rothp_now() - t0);
	rothp_hint_wait(tp->pid, tp->start, eligible, ROTHP_HINT_MS, hw);
	rothp_hint_print(who, hw);
	return rc;
}

/*
 * MADV_NOHUGEPAGE, then textproc_hint(): VM_HUGEPAGE is newly set again,
 * so the series hints the text again. -1 when the first call fails.
 */
int textproc_rehint(struct textproc *tp, const char *who, struct rothp_hint_wait *hw)
{
	char reply[64];
	int rc = -1, err = 0;

	memset(hw, 0, sizeof(*hw));
	if (textproc_cmd(tp, "nohuge", reply, sizeof(reply)) ||
	    sscanf(reply, "nohuge %d %d", &rc, &err) != 2 || rc) {
		ksft_print_msg("%s: MADV_NOHUGEPAGE: rc %d, %s\n", who, rc,
			       rc ? strerror(err) : "no reply");
		return -1;
	}
	return textproc_hint(tp, who, hw);
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
