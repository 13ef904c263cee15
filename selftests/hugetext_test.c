// SPDX-License-Identifier: GPL-2.0
/*
 * hugetext_test <dir>: the hugetext tool (installed next to this binary)
 * against textprog and pieprog on <dir>:
 *
 *  - status of a running textprog: its text mapping, as many eligible
 *    2 MiB blocks as rothp_vma_eligible_blocks() counts, none PMD-mapped,
 *    valid JSON with the documented keys;
 *  - collapse PID: every eligible block PMD-mapped (FilePmdMapped), and
 *    status says so; the text still matches the file and runs;
 *  - the reasons: no_madvise (enabled=madvise without MADV_HUGEPAGE, gone
 *    after it), thp_never, misaligned (a mapping of this process);
 *  - errors: a PID that does not exist, collapse as nobody;
 *  - run -- textprog: PMD-mapped when it prints "ready", exit status
 *    passed on; run -- pieprog, which only the series makes congruent;
 *  - run --libs: a program (this one, as "hugetext_test --map-text FILE")
 *    that maps a file r-x after its exec stop, as a dynamic loader maps a
 *    library, has it PMD-mapped within the window (THP "madvise", so
 *    that nothing else collapses it); with --libs 0 it stays small.
 *
 * Everything but the pieprog run works on 6.12 without the series, as
 * MADV_COLLAPSE of file text and process_madvise(MADV_COLLAPSE) are 6.1's.
 *
 * Each part's results are named in its table below: the plan is their sum.
 */
#define _GNU_SOURCE
#include <ctype.h>
#include <dirent.h>
#include <errno.h>
#include <fcntl.h>
#include <grp.h>
#include <stdarg.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>
#include <sys/mman.h>
#include <sys/stat.h>
#include <sys/wait.h>

#include "kselftest.h"
#include "rothp_util.h"

#define NOBODY		65534

static char tool[PATH_MAX];

/* What one run of hugetext printed and how it ended. */
struct tool_run {
	int rc;			/* exit status, or -1 */
	char *out, *err;
};

static void tool_free(struct tool_run *r)
{
	free(r->out);
	free(r->err);
	r->out = NULL;
	r->err = NULL;
}

/* All that was written to a memfd, as a string. */
static char *memfd_read(int fd)
{
	off_t len = lseek(fd, 0, SEEK_END);
	char *buf = malloc(len > 0 ? len + 1 : 1);

	if (!buf || len < 0 || pread(fd, buf, len, 0) != len) {
		free(buf);
		return NULL;
	}
	buf[len] = '\0';
	return buf;
}

/* Run hugetext with args (NULL-terminated) as uid (or as is if -1). */
static void tool_run(struct tool_run *r, int uid, const char *arg0, ...)
{
	const char *argv[16];
	int status, i = 0, out, err;
	va_list ap;
	pid_t pid;

	argv[i++] = tool;
	argv[i++] = arg0;
	va_start(ap, arg0);
	while (i < 15 && (argv[i] = va_arg(ap, const char *)))
		i++;
	va_end(ap);
	argv[i] = NULL;

	r->rc = -1;
	out = memfd_create("hugetext.out", 0);
	err = memfd_create("hugetext.err", 0);
	if (out < 0 || err < 0)
		ksft_exit_fail_msg("memfd_create: %s\n", strerror(errno));
	fflush(NULL);
	pid = fork();
	if (pid < 0)
		ksft_exit_fail_msg("fork: %s\n", strerror(errno));
	if (!pid) {
		dup2(out, STDOUT_FILENO);
		dup2(err, STDERR_FILENO);
		if (uid >= 0 && (setgroups(0, NULL) || setgid(uid) || setuid(uid)))
			_exit(126);
		execv(tool, (char **)argv);
		_exit(127);
	}
	if (waitpid(pid, &status, 0) == pid && WIFEXITED(status))
		r->rc = WEXITSTATUS(status);
	r->out = memfd_read(out);
	r->err = memfd_read(err);
	close(out);
	close(err);
	if (!r->out || !r->err)
		ksft_exit_fail_msg("cannot read hugetext's output\n");
}

/* Print what a run wrote to stderr, for the log. */
static void tool_note(const char *who, const struct tool_run *r)
{
	char *line, *save = NULL, *copy = strdup(r->err);

	if (!copy)
		return;
	for (line = strtok_r(copy, "\n", &save); line; line = strtok_r(NULL, "\n", &save))
		ksft_print_msg("%s: %s\n", who, line);
	free(copy);
}

/* A strict JSON validator: enough to say the output is JSON. */
static const char *json_value(const char *p, int depth);

static const char *json_ws(const char *p)
{
	while (*p == ' ' || *p == '\t' || *p == '\n' || *p == '\r')
		p++;
	return p;
}

static const char *json_string(const char *p)
{
	int i;

	if (*p++ != '"')
		return NULL;
	while (*p != '"') {
		if ((unsigned char)*p < 0x20)
			return NULL;
		if (*p++ != '\\')
			continue;
		if (*p == 'u') {
			for (i = 1; i <= 4; i++) {
				if (!isxdigit((unsigned char)p[i]))
					return NULL;
			}
			p += 5;
		} else if (strchr("\"\\/bfnrt", *p) && *p) {
			p++;
		} else {
			return NULL;
		}
	}
	return p + 1;
}

static const char *json_number(const char *p)
{
	const char *s;

	if (*p == '-')
		p++;
	if (*p == '0')
		p++;
	else if (isdigit((unsigned char)*p))
		while (isdigit((unsigned char)*p))
			p++;
	else
		return NULL;
	if (*p == '.') {
		s = ++p;
		while (isdigit((unsigned char)*p))
			p++;
		if (p == s)
			return NULL;
	}
	if (*p == 'e' || *p == 'E') {
		p++;
		if (*p == '+' || *p == '-')
			p++;
		s = p;
		while (isdigit((unsigned char)*p))
			p++;
		if (p == s)
			return NULL;
	}
	return p;
}

static const char *json_list(const char *p, int depth, char close, bool object)
{
	p = json_ws(p + 1);
	if (*p == close)
		return p + 1;
	for (;;) {
		p = json_ws(p);
		if (object) {
			p = json_string(p);
			if (!p)
				return NULL;
			p = json_ws(p);
			if (*p++ != ':')
				return NULL;
		}
		p = json_value(p, depth + 1);
		if (!p)
			return NULL;
		p = json_ws(p);
		if (*p == close)
			return p + 1;
		if (*p++ != ',')
			return NULL;
	}
}

static const char *json_value(const char *p, int depth)
{
	p = json_ws(p);
	if (depth > 32)
		return NULL;
	switch (*p) {
	case '{':
		return json_list(p, depth, '}', true);
	case '[':
		return json_list(p, depth, ']', false);
	case '"':
		return json_string(p);
	case 't':
		return strncmp(p, "true", 4) ? NULL : p + 4;
	case 'f':
		return strncmp(p, "false", 5) ? NULL : p + 5;
	case 'n':
		return strncmp(p, "null", 4) ? NULL : p + 4;
	}
	return json_number(p);
}

static bool json_valid(const char *doc)
{
	const char *end = json_value(doc, 0);

	return end && !*json_ws(end);
}

/*
 * hugetext prints each mapping object on a line of its own: the line that
 * holds needle (e.g. "\"path\": \"/mnt/ext4/textprog\""), copied to buf.
 */
static bool json_line(const char *doc, const char *needle, char *buf, size_t len)
{
	const char *p = strstr(doc, needle), *s, *e;

	if (!p)
		return false;
	for (s = p; s > doc && s[-1] != '\n'; s--)
		;
	e = strchr(p, '\n');
	if (!e)
		e = p + strlen(p);
	snprintf(buf, len, "%.*s", (int)(e - s), s);
	return true;
}

/* An integer member of a mapping line; -1 if absent. */
static long json_long(const char *line, const char *key)
{
	char needle[64];
	const char *p;

	snprintf(needle, sizeof(needle), "\"%s\": ", key);
	p = strstr(line, needle);
	return p && isdigit((unsigned char)p[strlen(needle)]) ? atol(p + strlen(needle)) : -1;
}

/* The reason is in the line's "reasons" (or "ineligible") list. */
static bool json_has(const char *line, const char *list, const char *word)
{
	char needle[64], quoted[64];
	const char *p, *e;

	snprintf(needle, sizeof(needle), "\"%s\": [", list);
	snprintf(quoted, sizeof(quoted), "\"%s\"", word);
	p = strstr(line, needle);
	if (!p)
		return false;
	e = strstr(p, "]");
	p = strstr(p, quoted);
	return p && e && p < e;
}

/* The status --json mapping line of path in pid, or exit failing. */
static void status_line(pid_t pid, const char *needle, char *buf, size_t len, struct tool_run *r)
{
	char spid[16];

	snprintf(spid, sizeof(spid), "%d", (int)pid);
	tool_run(r, -1, "status", "--json", spid, NULL);
	tool_note("status", r);
	if (r->rc || !json_line(r->out, needle, buf, len)) {
		ksft_print_msg("status --json %d: exit %d, no line with %s\n", (int)pid, r->rc,
			       needle);
		buf[0] = '\0';
	}
}

static const char * const top_keys[] = {
	"\"version\": 1", "\"pid\": ", "\"comm\": ", "\"system\": ", "\"kernel\": ",
	"\"pmd_size\": 2097152", "\"thp_enabled\": ", "\"read_only_thp_for_fs\": ",
	"\"config_source\": ", "\"process_thp_disabled\": ", "\"pmd_detail\": ",
	"\"mappings\": [", "\"summary\": ", NULL
};

static const char * const map_keys[] = {
	"path", "start", "end", "offset", "dev", "inode", "size", "file_size", "blocks",
	"eligible_blocks", "pmd_mapped_blocks", "file_pmd_mapped_kb", "thp_eligible",
	"vm_hugepage", "vm_nohugepage", "writers", "reasons", "ineligible", NULL
};

static bool has_keys(const char *doc, const char *line)
{
	char needle[64];
	bool ok = true;
	int i;

	for (i = 0; top_keys[i]; i++) {
		if (!strstr(doc, top_keys[i])) {
			ksft_print_msg("JSON lacks %s\n", top_keys[i]);
			ok = false;
		}
	}
	for (i = 0; map_keys[i]; i++) {
		snprintf(needle, sizeof(needle), "\"%s\": ", map_keys[i]);
		if (!strstr(line, needle)) {
			ksft_print_msg("mapping lacks %s\n", needle);
			ok = false;
		}
	}
	return ok;
}

/* A text line of output equal to s. */
static bool has_line(const char *out, const char *s)
{
	size_t n = strlen(s);
	const char *p;

	for (p = out; (p = strstr(p, s)); p += n) {
		if ((p == out || p[-1] == '\n') && (p[n] == '\n' || !p[n]))
			return true;
	}
	return false;
}

static const char *const textprog_results[] = {
	"status --json exits 0 with valid JSON",
	"status --json has the documented keys",
	"status: eligible blocks of textprog as rothp_vma_eligible_blocks counts",
	"status: no block PMD-mapped before collapse",
	"status (text) lists the textprog mapping and a summary",
	"collapse PID exits 0",
	"collapse: every eligible block PMD-mapped (FilePmdMapped)",
	"status after collapse: every eligible block PMD-mapped",
	"after collapse: text in memory matches the file",
	"after collapse: every stub returns its index",
	"madvise mode: no_madvise reported, and gone after MADV_HUGEPAGE",
	"enabled=never: thp_never reported",
	"collapse of a nonexistent PID: 'no process' message, exit 1",
	"collapse as nobody: permission message, exit 1",
};

/* status and collapse of a running textprog. */
static void test_textprog(const struct rothp_case *c, const char *prog, long *eligible_out)
{
	char needle[PATH_MAX + 16], line[4096], spid[16];
	struct tool_run r;
	struct textproc tp;
	struct rothp_vma vma;
	long eligible, pmd;
	bool sum_ok, run_ok;

	if (textproc_start(&tp, prog, "none"))
		ksft_exit_fail_msg("cannot start %s none\n", prog);
	if (rothp_find_vma(tp.pid, tp.start, &vma))
		ksft_exit_fail_msg("no text VMA in textprog %d\n", (int)tp.pid);
	eligible = rothp_vma_eligible_blocks(&vma);
	*eligible_out = eligible;
	snprintf(spid, sizeof(spid), "%d", (int)tp.pid);
	snprintf(needle, sizeof(needle), "{\"path\": \"%s\"", prog);

	status_line(tp.pid, needle, line, sizeof(line), &r);
	rothp_report(c, 0, NULL, !r.rc && json_valid(r.out));
	rothp_report(c, 1, NULL, line[0] && has_keys(r.out, line));
	ksft_print_msg("textprog %d: %ld eligible blocks; hugetext: %s\n", (int)tp.pid, eligible,
		       line);
	rothp_report(c, 2, NULL, eligible > 0 && json_long(line, "eligible_blocks") == eligible);
	rothp_report(c, 3, NULL, json_long(line, "pmd_mapped_blocks") == 0 &&
		     rothp_file_pmd_mapped(tp.pid, tp.start) == 0);
	tool_free(&r);

	tool_run(&r, -1, "status", spid, NULL);
	rothp_report(c, 4, NULL, !r.rc && has_line(r.out, prog) && strstr(r.out, "\nsummary: "));
	tool_free(&r);

	tool_run(&r, -1, "collapse", spid, NULL);
	ksft_print_msg("collapse: exit %d\n%s", r.rc, r.out);
	tool_note("collapse", &r);
	rothp_report(c, 5, NULL, r.rc == 0);
	tool_free(&r);
	pmd = rothp_file_pmd_mapped(tp.pid, tp.start);
	ksft_print_msg("collapse: FilePmdMapped %ld kB, expected %ld kB\n", pmd / 1024,
		       eligible * (long)ROTHP_PMD_SIZE / 1024);
	rothp_report(c, 6, NULL, eligible > 0 && pmd == eligible * (long)ROTHP_PMD_SIZE);

	status_line(tp.pid, needle, line, sizeof(line), &r);
	rothp_report(c, 7, NULL, eligible > 0 && json_long(line, "pmd_mapped_blocks") == eligible);
	tool_free(&r);
	textproc_sum_and_run(&tp, "after collapse", &sum_ok, &run_ok);
	rothp_report(c, 8, NULL, sum_ok);
	rothp_report(c, 9, NULL, run_ok);

	/* The reasons, on the same process. */
	rothp_thp_set_checked("enabled", "madvise");
	status_line(tp.pid, needle, line, sizeof(line), &r);
	tool_free(&r);
	if (json_has(line, "reasons", "no_madvise") && strstr(line, "\"vm_hugepage\": false")) {
		char reply[128];

		if (textproc_cmd(&tp, "hugepage", reply, sizeof(reply)))
			ksft_exit_fail_msg("textprog hugepage: no reply\n");
		status_line(tp.pid, needle, line, sizeof(line), &r);
		tool_free(&r);
		ksft_print_msg("after MADV_HUGEPAGE: %s\n", line);
		rothp_report(c, 10, NULL, line[0] && !json_has(line, "reasons", "no_madvise") &&
			     strstr(line, "\"vm_hugepage\": true"));
	} else {
		ksft_print_msg("enabled=madvise: %s\n", line);
		rothp_report(c, 10, NULL, false);
	}

	rothp_thp_set_checked("enabled", "never");
	status_line(tp.pid, needle, line, sizeof(line), &r);
	tool_free(&r);
	rothp_report(c, 11, NULL, json_has(line, "reasons", "thp_never"));
	rothp_thp_restore();

	/* Errors: no such process; collapse as nobody. */
	tool_run(&r, -1, "collapse", "999999999", NULL);
	tool_note("no such PID", &r);
	rothp_report(c, 12, NULL, r.rc == 1 && strstr(r.err, "no process with PID"));
	tool_free(&r);
	tool_run(&r, NOBODY, "collapse", spid, NULL);
	tool_note("as nobody", &r);
	rothp_report(c, 13, NULL, r.rc == 1 && (strstr(r.err, "ptrace read access") ||
					       strstr(r.err, "CAP_SYS_NICE")));
	tool_free(&r);

	if (textproc_stop(&tp))
		ksft_print_msg("textprog did not exit cleanly\n");
}

static const char *const misaligned_results[] = {
	"misaligned mapping: no eligible block, reason misaligned",
};

/* A mapping of textprog in this process, 4 KiB off 2 MiB congruence. */
static void test_misaligned(const struct rothp_case *c, const char *prog)
{
	char needle[64], line[4096];
	struct tool_run r;
	struct stat st;
	void *p;
	int fd;

	fd = open(prog, O_RDONLY);
	if (fd < 0 || fstat(fd, &st))
		ksft_exit_fail_msg("%s: %s\n", prog, strerror(errno));
	p = rothp_map_aligned(fd, st.st_size, 0, ROTHP_PAGE_SIZE, PROT_READ | PROT_EXEC);
	if (p == MAP_FAILED)
		ksft_exit_fail_msg("mmap %s: %s\n", prog, strerror(errno));
	snprintf(needle, sizeof(needle), "\"start\": %lu,", (unsigned long)p);
	status_line(getpid(), needle, line, sizeof(line), &r);
	tool_free(&r);
	ksft_print_msg("misaligned mapping at %p: %s\n", p, line);
	rothp_report(c, 0, NULL,
		     json_long(line, "eligible_blocks") == 0 && json_long(line, "blocks") > 1 &&
		     strstr(line, "\"reason\": \"misaligned\""));
	munmap(p, st.st_size);
	close(fd);
}

/* pieprog's status, then its run (in main()). */
static const char *const pie_results[] = {
	"status of pieprog: its eligible blocks, misaligned exactly when not congruent",
	"run -- pieprog: every eligible block PMD-mapped",
};

/* status of pieprog, whose text is congruent or not by where it was loaded. */
static void test_pie_status(const struct rothp_case *c, const char *pie)
{
	char needle[PATH_MAX + 16], line[4096];
	struct rothp_vma vma;
	struct textproc tp;
	struct tool_run r;
	bool congruent;
	long eligible;

	if (textproc_start(&tp, pie, "none"))
		ksft_exit_fail_msg("cannot start %s none\n", pie);
	if (rothp_find_vma(tp.pid, tp.start, &vma))
		ksft_exit_fail_msg("no text VMA in pieprog %d\n", (int)tp.pid);
	eligible = rothp_vma_eligible_blocks(&vma);
	congruent = !((vma.start - vma.offset) % ROTHP_PMD_SIZE);
	snprintf(needle, sizeof(needle), "{\"path\": \"%s\"", pie);
	status_line(tp.pid, needle, line, sizeof(line), &r);
	tool_free(&r);
	ksft_print_msg("pieprog %lx-%lx offset %lx, %scongruent, %ld eligible: %s\n", vma.start,
		       vma.end, vma.offset, congruent ? "" : "not ", eligible, line);
	rothp_report(c, 0, NULL, line[0] && json_long(line, "eligible_blocks") == eligible &&
		     congruent == !strstr(line, "\"reason\": \"misaligned\""));
	textproc_stop(&tp);
}

/*
 * hugetext run -- path none: once it prints "ready" the text must be
 * PMD-mapped, as hugetext collapsed it before the first instruction.
 * Returns its eligible blocks, or -1; *exit_ok if hugetext then exits 0.
 */
static long run_prog(const char *path, const char *who, long *pmd_out, bool *exit_ok)
{
	int to_child[2], from_child[2];
	struct textproc tp;
	struct rothp_vma vma;
	char line[256];
	long eligible = -1;
	pid_t child;

	memset(&tp, 0, sizeof(tp));
	*pmd_out = -1;
	*exit_ok = false;
	if (pipe2(to_child, O_CLOEXEC) || pipe2(from_child, O_CLOEXEC))
		ksft_exit_fail_msg("pipe: %s\n", strerror(errno));
	fflush(NULL);
	tp.pid = fork();
	if (tp.pid < 0)
		ksft_exit_fail_msg("fork: %s\n", strerror(errno));
	if (!tp.pid) {
		dup2(to_child[0], STDIN_FILENO);
		dup2(from_child[1], STDOUT_FILENO);
		execl(tool, tool, "run", "-q", "--", path, "none", (char *)NULL);
		_exit(127);
	}
	close(to_child[0]);
	close(from_child[1]);
	tp.in = fdopen(to_child[1], "w");
	tp.out = fdopen(from_child[0], "r");
	if (!tp.in || !tp.out || !fgets(line, sizeof(line), tp.out) ||
	    sscanf(line, "ready %lx %lx", &tp.start, &tp.end) != 2) {
		ksft_print_msg("%s: no ready line from hugetext run\n", who);
		textproc_stop(&tp);
		return -1;
	}
	child = rothp_child_of(tp.pid, NULL, 10000);
	if (child > 0 && !rothp_find_vma(child, tp.start, &vma)) {
		eligible = rothp_vma_eligible_blocks(&vma);
		*pmd_out = rothp_file_pmd_mapped(child, tp.start);
		ksft_print_msg("%s: pid %d text %lx-%lx, %ld eligible, FilePmdMapped %ld kB\n", who,
			       (int)child, tp.start, tp.end, eligible, *pmd_out / 1024);
	} else {
		ksft_print_msg("%s: cannot find the program's process\n", who);
	}
	/* hugetext exits with textprog's status, 0 after "exit". */
	*exit_ok = !textproc_stop(&tp);
	return eligible;
}

/* hugetext run of textprog, in main(). */
static const char *const run_results[] = {
	"run -- textprog: every eligible block PMD-mapped at its first output",
	"run passes the exit status on (0 after exit, 2 for a usage error)",
};

/*
 * hugetext_test --map-text FILE, run by hugetext run: what a dynamic
 * loader does after the exec stop, map FILE r-x (at a 2 MiB-aligned
 * address, its whole blocks) and read a byte of each block, then print
 * "mapped ADDR LEN" and wait for a line on standard input.
 */
static int map_text_child(const char *path)
{
	struct stat st;
	char line[16];
	size_t len;
	void *p;
	int fd;

	fd = open(path, O_RDONLY);
	if (fd < 0 || fstat(fd, &st))
		return 1;
	len = ROTHP_ALIGN_DOWN((size_t)st.st_size, ROTHP_PMD_SIZE);
	p = rothp_map_aligned(fd, len, 0, 0, PROT_READ | PROT_EXEC);
	if (p == MAP_FAILED)
		return 1;
	/* A page of each block read, as a program runs some of a library. */
	rothp_touch(p, len, ROTHP_PMD_SIZE);
	printf("mapped %lx %zx\n", (unsigned long)p, len);
	fflush(stdout);
	return fgets(line, sizeof(line), stdin) ? 0 : 1;
}

static const char *const libs_results[] = {
	"run --libs 5: a file CMD maps r-x after its exec stop is PMD-mapped within the window",
	"run --libs 0: the same mapping stays small",
};

/* hugetext run [--libs W] -- self --map-text prog, for each of W 5 and 0. */
static void test_libs(const struct rothp_case *c, const char *self, const char *prog)
{
	static const char *const windows[] = { "5", "0" };
	struct stat self_st;
	struct textproc tp;
	unsigned long addr;
	long pmd = -1;
	double t0;
	char line[256];
	size_t len = 0;
	pid_t child;
	int i, to_child[2], from_child[2];
	bool ok;

	if (stat(self, &self_st))
		ksft_exit_fail_msg("%s: %s\n", self, strerror(errno));
	rothp_thp_set_checked("enabled", "madvise");
	for (i = 0; i < 2; i++) {
		if (rothp_drop_caches())
			ksft_exit_fail_msg("drop_caches: %s\n", strerror(errno));
		memset(&tp, 0, sizeof(tp));
		if (pipe2(to_child, O_CLOEXEC) || pipe2(from_child, O_CLOEXEC))
			ksft_exit_fail_msg("pipe: %s\n", strerror(errno));
		fflush(NULL);
		tp.pid = rothp_fork_checked();
		if (!tp.pid) {
			dup2(to_child[0], STDIN_FILENO);
			dup2(from_child[1], STDOUT_FILENO);
			execl(tool, tool, "run", "-q", "--libs", windows[i], "--", self, "--map-text",
			      prog, (char *)NULL);
			_exit(127);
		}
		close(to_child[0]);
		close(from_child[1]);
		tp.in = fdopen(to_child[1], "w");
		tp.out = fdopen(from_child[0], "r");
		ok = tp.in && tp.out && fgets(line, sizeof(line), tp.out) &&
		     sscanf(line, "mapped %lx %zx", &addr, &len) == 2;
		child = ok ? rothp_child_of(tp.pid, &self_st, 10000) : -1;
		/* The window opens at the exec stop: wait out 5 s, or 2 s for 0. */
		t0 = rothp_now();
		while (child > 0 && rothp_now() - t0 < (i ? 2 : 8)) {
			pmd = rothp_file_pmd_mapped(child, addr);
			if (!i && pmd == (long)len)
				break;
			usleep(50 * 1000);
		}
		ksft_print_msg("run --libs %s: %s mapped at %lx, %zu kB: FilePmdMapped %ld kB after %.2f s\n",
			       windows[i], prog, addr, len >> 10, pmd / 1024, rothp_now() - t0);
		ok = !textproc_stop(&tp) && ok && child > 0 && len > 0;
		rothp_report(c, i, NULL, ok && pmd == (i ? 0 : (long)len));
	}
}

/* The parts, in the order main() runs them. */
enum part { TEXTPROG, MISALIGNED, RUN, PIE, LIBS };

static const struct rothp_case cases[] = {
	[TEXTPROG] = ROTHP_CASE(NULL, textprog_results),
	[MISALIGNED] = ROTHP_CASE(NULL, misaligned_results),
	[RUN] = ROTHP_CASE(NULL, run_results),
	[PIE] = ROTHP_CASE(NULL, pie_results),
	[LIBS] = ROTHP_CASE(NULL, libs_results),
};

int main(int argc, char **argv)
{
	char prog[PATH_MAX], pie[PATH_MAX], self[PATH_MAX], *slash;
	const char *no_align = NULL;
	struct tool_run r;
	long eligible, pmd;
	bool exit_ok;
	const char *dir;
	ssize_t n;

	if (argc == 3 && !strcmp(argv[1], "--map-text"))
		return map_text_child(argv[2]);
	dir = rothp_test_init(argc, argv, prog, sizeof(prog));
	n = readlink("/proc/self/exe", tool, sizeof(tool) - 16);
	if (n <= 0)
		ksft_exit_fail_msg("readlink /proc/self/exe: %s\n", strerror(errno));
	tool[n] = '\0';
	memcpy(self, tool, n + 1);
	slash = strrchr(tool, '/');
	snprintf(slash + 1, sizeof(tool) - (slash + 1 - tool), "hugetext");
	if (access(tool, X_OK))
		ksft_exit_fail_msg("%s: %s\n", tool, strerror(errno));
	snprintf(pie, sizeof(pie), "%s/pieprog", dir);
	ksft_set_plan(rothp_cases_plan(cases, ARRAY_SIZE(cases)));
	if (rothp_thp_save())
		ksft_exit_fail_msg("cannot save THP settings\n");

	test_textprog(&cases[TEXTPROG], prog, &eligible);
	test_misaligned(&cases[MISALIGNED], prog);

	/* run: a cold page cache, so that the run's collapse is what counts. */
	if (rothp_drop_caches())
		ksft_exit_fail_msg("drop_caches: %s\n", strerror(errno));
	eligible = run_prog(prog, "run textprog", &pmd, &exit_ok);
	rothp_report(&cases[RUN], 0, NULL, eligible > 0 && pmd == eligible * (long)ROTHP_PMD_SIZE);
	tool_run(&r, -1, "run", "-q", "--", prog, "bogus", NULL);
	rothp_report(&cases[RUN], 1, NULL, exit_ok && r.rc == 2);
	tool_free(&r);

	/* pieprog: congruent only with the series' aligned load bias. */
	rothp_pie_rnd_bits_raise();
	test_pie_status(&cases[PIE], pie);
	if (rothp_drop_caches())
		ksft_exit_fail_msg("drop_caches: %s\n", strerror(errno));
	eligible = run_prog(pie, "run pieprog", &pmd, &exit_ok);
	if (eligible == 0 && access(ROTHP_SYSCTL_DIR ROTHP_ELF_ALIGN_SYSCTL, F_OK))
		no_align = "no fs.elf_text_thp_align: 6.12 without the series loads a PIE at a 4 KiB-granular bias";
	rothp_report(&cases[PIE], 1, no_align,
		     eligible > 0 && pmd == eligible * (long)ROTHP_PMD_SIZE && exit_ok);

	test_libs(&cases[LIBS], self, prog);

	rothp_thp_restore();
	ksft_finished();
}
