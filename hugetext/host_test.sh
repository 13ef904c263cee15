#!/bin/bash
# SPDX-License-Identifier: GPL-2.0
# host_test.sh [HUGETEXT|DIR]: checks of hugetext that hold on any Linux host,
# with any kernel configuration, printed as KTAP. The argument is the binary
# or the directory that holds it (default: this script's directory). The
# permission checks run the tool as nobody through setpriv(1) and need root;
# the checks of a program with 2 MiB of text need a C compiler and a static
# libc, those of signals a C compiler; make install needs rst2man. Without
# them those checks skip, saying why. Exit status: 0 if no check failed.
[ -n "${BASH_VERSION:-}" ] || exec bash "$0" "$@"
# The signal checks need the default dispositions. A shell started as a
# background job of a non-interactive shell (cmd &, nohup, some CI runners)
# has SIGINT and SIGQUIT ignored, passes that on to every program, and no
# shell can undo it: restart under env(1), which can (coreutils >= 8.31).
if [ -z "${HOST_TEST_SIGNALS:-}" ] && env --default-signal=HUP true 2>/dev/null; then
	HOST_TEST_SIGNALS=default exec env --default-signal=HUP,INT,QUIT,TERM bash "$0" "$@"
fi
set -euo pipefail

here=$(cd "$(dirname "$0")" && pwd -P)
bin=${1:-$here}
[ -d "$bin" ] && bin=$bin/hugetext
if [ ! -x "$bin" ] || [ -d "$bin" ]; then
	echo "Bail out! $bin is not an executable" >&2
	exit 1
fi
bin=$(cd "$(dirname "$bin")" && pwd -P)/$(basename "$bin")

planned=47
n=0
failed=0
work=$(mktemp -d)
chmod 755 "$work"	# nobody runs programs from it
pids=()
cleanup() {
	local p

	for p in "${pids[@]}"; do
		kill -KILL "$p" 2>/dev/null || true
	done
	rm -rf "$work"
}
trap cleanup EXIT

ok() {	# ok STATUS DESCRIPTION: one result, STATUS 0 for a pass
	n=$((n + 1))
	if [ "$1" -eq 0 ]; then
		echo "ok $n $2"
	else
		echo "not ok $n $2"
		failed=$((failed + 1))
	fi
}

check() {	# check DESCRIPTION COMMAND...: passes if COMMAND succeeds
	local desc=$1

	shift
	if "$@"; then
		ok 0 "$desc"
	else
		ok 1 "$desc"
	fi
}

skip() {	# skip DESCRIPTION REASON
	n=$((n + 1))
	echo "ok $n $1 # SKIP $2"
}

note() {	# note FILE...: their lines as KTAP diagnostics
	sed 's/^/# /' "$@"
}

diag() {	# diag TEXT: one diagnostic line
	echo "# $*"
}

tool() {	# tool NAME ARGS...: run hugetext; NAME.out, NAME.err, status in rc
	local name=$1

	shift
	rc=0
	"$bin" "$@" >"$work/$name.out" 2>"$work/$name.err" </dev/null || rc=$?
}

stat_of() {	# stat_of PID: /proc/PID/stat into s, without a fork
	read -r s 2>/dev/null <"/proc/$1/stat"
}

alive() {	# alive PID: a process that has not exited
	local s

	stat_of "$1" || return 1
	s=${s##*) }
	[ "${s%% *}" != Z ] && [ "${s%% *}" != X ]
}

child_of() {	# child_of PID: print the PID of its child, waiting up to 5 s
	local i d s

	for ((i = 0; i < 100; i++)); do
		for d in /proc/[0-9]*; do
			stat_of "${d#/proc/}" || continue
			# run's watch, a grandchild, is a child for a moment
			case $s in
			*" (hugetxt-watch) "*) continue ;;
			esac
			s=${s##*) }
			s=${s#* }
			if [ "${s%% *}" = "$1" ]; then
				echo "${d#/proc/}"
				return 0
			fi
		done
		sleep 0.05
	done
	return 1
}

running() {	# running PID EXE: PID runs EXE, out of ptrace, within 5 s
	local i s

	for ((i = 0; i < 100; i++)); do
		if [ "$(readlink "/proc/$1/exe" 2>/dev/null)" = "$2" ]; then
			stat_of "$1" || return 1
			s=${s##*) }
			case ${s%% *} in
			S | R | D) return 0 ;;
			esac
		fi
		sleep 0.05
	done
	return 1
}

pgrp_of() {	# pgrp_of PID: print its process group
	local s

	stat_of "$1" || return 1
	s=${s##*) }
	s=${s#* }
	s=${s#* }
	echo "${s%% *}"
}

group_of() {	# group_of PGID: print the PIDs of the process group, but PGID
	local d s

	for d in /proc/[0-9]*; do
		[ "${d#/proc/}" != "$1" ] && stat_of "${d#/proc/}" || continue
		s=${s##*) }
		s=${s#* }
		s=${s#* }
		[ "${s%% *}" != "$1" ] || echo "${d#/proc/}"
	done
}

reap() {	# reap PID SECONDS: wait for a background job; its status in rc
	local i

	for ((i = 0; i < $2 * 20; i++)); do
		alive "$1" || break
		sleep 0.05
	done
	if alive "$1"; then
		diag "PID $1 still running after $2 s: killed"
		kill -KILL "$1" 2>/dev/null || true
	fi
	rc=0
	wait "$1" || rc=$?
}

usage_error_ok() {	# usage_error_ok NAME HINT: a one-line usage error in NAME
	local err=$work/$1.err

	[ "$rc" -eq 2 ] && [ ! -s "$work/$1.out" ] && [ "$(wc -l <"$err")" -eq 2 ] &&
		head -n 1 "$err" | grep -q '^hugetext: ' &&
		[ "$(tail -n 1 "$err")" = "try 'hugetext help$2'" ]
}

nobody=()
if [ "$(id -u)" -eq 0 ] && command -v setpriv >/dev/null; then
	nobody=(setpriv --reuid=65534 --regid=65534 --clear-groups)
fi
nobody_why="needs root and setpriv(1) to run as nobody"
python=$(command -v python3 || true)
cc=$(command -v "${CC:-cc}" || command -v gcc || true)

# sigtool: counts the signals it gets, or says how a command ended.
sigtool=$work/sigtool
sig_why=
if [ -z "$cc" ]; then
	sig_why="no C compiler to build a signal counter"
else
	cat >"$work/sigtool.c" <<'EOF'
/*
 * sigtool count READY COUNT: catch SIGHUP, SIGINT, SIGQUIT and SIGTERM,
 *   create READY, and 0.3 s after the first of them write how many came
 *   to COUNT and exit 0.
 * sigtool status CMD [ARG...]: run CMD and print how it ended, "exit N"
 *   or "signal N", with " core" if it dumped a core.
 */
#define _GNU_SOURCE
#include <signal.h>
#include <stdio.h>
#include <string.h>
#include <time.h>
#include <unistd.h>
#include <sys/wait.h>

static volatile sig_atomic_t got;

static void on_signal(int sig)
{
	(void)sig;
	got++;
}

static double now(void)
{
	struct timespec ts;

	clock_gettime(CLOCK_MONOTONIC, &ts);
	return ts.tv_sec + ts.tv_nsec / 1e9;
}

int main(int argc, char **argv)
{
	static const int sigs[] = { SIGHUP, SIGINT, SIGQUIT, SIGTERM };
	struct timespec tick = { 0, 10 * 1000 * 1000 };
	struct sigaction sa;
	sigset_t set, old;
	double end;
	int status;
	unsigned int i;
	FILE *fp;
	pid_t pid;

	if (argc >= 3 && !strcmp(argv[1], "status")) {
		fflush(NULL);
		pid = fork();
		if (!pid) {
			execvp(argv[2], argv + 2);
			_exit(127);
		}
		if (pid < 0 || waitpid(pid, &status, 0) != pid)
			return 1;
		if (WIFSIGNALED(status))
			printf("signal %d%s\n", WTERMSIG(status), WCOREDUMP(status) ? " core" : "");
		else
			printf("exit %d\n", WEXITSTATUS(status));
		return 0;
	}
	if (argc != 4 || strcmp(argv[1], "count"))
		return 2;
	memset(&sa, 0, sizeof(sa));
	sa.sa_handler = on_signal;
	sigemptyset(&set);
	for (i = 0; i < sizeof(sigs) / sizeof(sigs[0]); i++) {
		sigaction(sigs[i], &sa, NULL);
		sigaddset(&set, sigs[i]);
	}
	sigprocmask(SIG_BLOCK, &set, &old);
	fp = fopen(argv[2], "w");
	if (!fp || fclose(fp))
		return 1;
	while (!got)
		sigsuspend(&old);
	sigprocmask(SIG_SETMASK, &old, NULL);
	/* A second delivery, if any, follows within a fraction of that. */
	for (end = now() + 0.3; now() < end;)
		nanosleep(&tick, NULL);
	fp = fopen(argv[3], "w");
	if (!fp)
		return 1;
	fprintf(fp, "%d\n", (int)got);
	return fclose(fp) ? 1 : 0;
}
EOF
	"$cc" -O1 -o "$sigtool" "$work/sigtool.c" >"$work/sigtool.log" 2>&1 ||
		sig_why="cannot build a C program"
fi

echo "TAP version 13"
echo "1..$planned"

# help and version
r=0
for a in --help -h help; do
	tool help "$a"
	[ $rc -eq 0 ] && [ ! -s "$work/help.err" ] &&
		head -n 1 "$work/help.out" | grep -q '^usage: hugetext COMMAND' || r=1
done
for c in status collapse run; do
	for a in "help $c" "$c --help" "--help $c"; do
		read -ra words <<<"$a"
		tool help "${words[@]}"
		[ $rc -eq 0 ] && [ ! -s "$work/help.err" ] &&
			head -n 1 "$work/help.out" | grep -q "^usage: hugetext $c " || {
			diag "hugetext $a: exit $rc"
			r=1
		}
	done
done
ok $r "help, --help and help COMMAND print the usage on stdout and exit 0"

tool version --version
note "$work/version.out"
r=0
[ $rc -eq 0 ] && [ "$(wc -l <"$work/version.out")" -eq 1 ] &&
	grep -Eq '^hugetext [0-9]+\.[0-9]+' "$work/version.out" || r=1
ok $r "--version prints 'hugetext VERSION' and exits 0"

# usage errors
r=0
usage_case() {	# usage_case HINT ARGS...
	local hint=$1

	shift
	tool usage "$@"
	if ! usage_error_ok usage "$hint"; then
		diag "hugetext $*: exit $rc, stderr:"
		note "$work/usage.err"
		r=1
	fi
}
usage_case ""
usage_case "" bogus
usage_case "" --bogus
usage_case "" help bogus
usage_case " status" status --bogus
usage_case " status" status --json=1
usage_case " status" status 1 2
usage_case " status" status --self 1
usage_case " status" status 1 --self
usage_case " collapse" collapse
usage_case " collapse" collapse --self 1
usage_case " collapse" collapse -x 1
usage_case " run" run
usage_case " run" run --bogus -- true
usage_case " run" run --libs -- true
usage_case " run" run --libs=x -- true
usage_case " run" run --libs=-1 -- true
usage_case " run" run --libs=1e9 -- true
usage_case " run" run --libs=nan -- true
usage_case " run" run --libs=0x10 -- true
usage_case " run" run --libs=1e3 -- true
ok $r "usage errors: what was wrong in one line, a 'try hugetext help' hint, nothing on stdout, exit 2"

# PIDs, strictly
r=0
for p in +12 " 12" "12 " 12x "" -1 0 0x10 1e3 2147483648 99999999999999999999; do
	for c in status collapse; do
		tool pid "$c" -- "$p"
		if ! usage_error_ok pid " $c" || ! grep -qF "'$p' is not a PID" "$work/pid.err"; then
			diag "hugetext $c -- '$p': exit $rc"
			note "$work/pid.err"
			r=1
		fi
	done
done
for c in status collapse; do
	for p in -1 -12 -0; do
		tool pid "$c" "$p"
		if ! usage_error_ok pid " $c" || ! grep -qF "'$p' is not a PID" "$work/pid.err"; then
			diag "hugetext $c '$p': exit $rc"
			note "$work/pid.err"
			r=1
		fi
	done
done
ok $r "PIDs such as +12, ' 12', 12x, '', -1, -12, 0 and 2^31 are refused: 'not a PID', exit 2"

# a child's text mapping, in text and JSON
cp "$(command -v sleep)" "$work/sleeper"
"$work/sleeper" 60 &
child=$!
pids+=("$child")
disown "$child"
running "$child" "$work/sleeper" || true
tool status status "$child"
note "$work/status.out" "$work/status.err"
r=0
[ $rc -eq 0 ] && grep -qx "$work/sleeper" "$work/status.out" &&
	grep -q '^    file system ' "$work/status.out" &&
	grep -q '^summary: [0-9]* text mapping' "$work/status.out" || r=1
ok $r "status PID lists the child's text mapping, its file system and a summary line"

tool json status --json "$child"
if [ -z "$python" ]; then
	skip "status --json parses and has the documented keys" "no python3 to parse JSON"
else
	crc=0
	"$python" - "$work/json.out" "$work/sleeper" "$child" <<'EOF' >"$work/check" 2>&1 || crc=$?
import json, sys
doc = json.load(open(sys.argv[1]))
path, pid = sys.argv[2], int(sys.argv[3])
top = {"version", "pid", "comm", "system", "mappings", "summary"}
sysk = {"kernel", "pmd_size", "thp_enabled", "read_only_thp_for_fs",
        "config_source", "process_thp_disabled", "pmd_detail"}
mapk = {"path", "start", "end", "offset", "dev", "inode", "size", "file_size",
        "fs", "large_folios", "blocks", "eligible_blocks", "pmd_mapped_blocks",
        "file_pmd_mapped_kb", "thp_eligible", "vm_hugepage", "vm_nohugepage",
        "writers", "reasons", "ineligible"}
sumk = {"mappings", "blocks", "eligible_blocks", "pmd_mapped_blocks"}
reasons = {"write_open", "thp_never", "process_thp_disabled", "nohugepage",
           "no_madvise", "no_config", "thp_ineligible"}
blk = {"partial", "misaligned", "beyond_eof"}
assert set(doc) == top, doc.keys()
assert doc["version"] == 1 and doc["pid"] == pid
assert set(doc["system"]) == sysk, doc["system"].keys()
assert set(doc["summary"]) == sumk
assert doc["summary"]["mappings"] == len(doc["mappings"])
mine = [m for m in doc["mappings"] if m["path"] == path]
assert len(mine) == 1, "no single mapping of " + path
assert isinstance(mine[0]["fs"], str), mine[0]["fs"]
pmd = doc["system"]["pmd_size"] or 2 << 20
for m in doc["mappings"]:
    assert set(m) == mapk, m.keys()
    assert set(m["reasons"]) <= reasons, m["reasons"]
    # Every block is eligible or in one ineligible run.
    assert m["blocks"] == m["eligible_blocks"] + sum(r["blocks"] for r in m["ineligible"])
    assert all(r["reason"] in blk for r in m["ineligible"])
    assert 0 <= m["pmd_mapped_blocks"] <= m["eligible_blocks"]
    # A file with large folios is never said to lack a way to be huge.
    assert not (m["large_folios"] and "no_config" in m["reasons"]), m
    # Eligible blocks counted independently from the mapping's geometry.
    n = 0
    a = (m["start"] + pmd - 1) // pmd * pmd
    while a + pmd <= m["end"]:
        off = m["offset"] + a - m["start"]
        if off % pmd == 0 and (m["file_size"] is None or off + pmd <= m["file_size"]):
            n += 1
        a += pmd
    assert n == m["eligible_blocks"], (m["path"], n, m["eligible_blocks"])
print("ok")
EOF
	note "$work/check"
	r=0
	[ $rc -eq 0 ] && [ $crc -eq 0 ] || r=1
	ok $r "status --json parses and has the documented keys"
fi

tool self status
r=0
[ $rc -eq 0 ] && grep -qx "$bin" "$work/self.out" || r=1
tool self status --self
[ $rc -eq 0 ] && grep -qx "$bin" "$work/self.out" || r=1
tool self status -s --json
[ $rc -eq 0 ] && grep -qF "{\"path\": \"$bin\"" "$work/self.out" || r=1
ok $r "status, status --self and status -s --json list hugetext's own text mapping"

# awkward path names stay valid JSON
weird=$(printf '%s/we"ird\\ \377 name' "$work")
cp "$work/sleeper" "$weird"
"$weird" 60 &
wchild=$!
pids+=("$wchild")
disown "$wchild"
running "$wchild" "$weird" || true
if [ -z "$python" ]; then
	skip "status --json of a program named with a quote, a backslash and a non-UTF-8 byte" \
		"no python3 to parse JSON"
else
	crc=0
	tool weird status --json "$wchild"
	"$python" -c 'import json, sys
d = json.load(open(sys.argv[1], encoding="utf-8"))
assert any(m["path"].startswith(sys.argv[2]) and "we\"ird\\ \ufffd" in m["path"]
           for m in d["mappings"]), [m["path"] for m in d["mappings"]]' \
		"$work/weird.out" "$work" >"$work/check" 2>&1 || crc=$?
	note "$work/check"
	r=0
	[ $rc -eq 0 ] && [ $crc -eq 0 ] || r=1
	ok $r "status --json of a program named with a quote, a backslash and a non-UTF-8 byte"
fi

# bad PIDs
tool gone status 999999999
note "$work/gone.err"
r=0
[ $rc -eq 1 ] && [ ! -s "$work/gone.out" ] && grep -q "no process with PID 999999999" "$work/gone.err" || r=1
ok $r "status of a nonexistent PID: 'no process' on stderr only, exit 1"

tool nonsense collapse nonsense
note "$work/nonsense.err"
r=0
[ $rc -eq 2 ] && grep -q "not a PID" "$work/nonsense.err" || r=1
ok $r "collapse of a non-numeric PID: usage error, exit 2"

# permissions
if [ ${#nobody[@]} -gt 0 ]; then
	rc=0
	"${nobody[@]}" "$bin" collapse --self >"$work/out" 2>&1 || rc=$?
	note "$work/out"
	r=0
	[ $rc -eq 0 ] && grep -q '^summary: PID' "$work/out" || r=1
	ok $r "collapse --self as nobody succeeds"

	rc=0
	"${nobody[@]}" "$bin" collapse "$child" >"$work/out" 2>&1 || rc=$?
	note "$work/out"
	r=0
	[ $rc -eq 1 ] && grep -q "ptrace read access" "$work/out" || r=1
	ok $r "collapse of root's process as nobody: access denied message, exit 1"

	rc=0
	"${nobody[@]}" sh -c '"$1" 60 & p=$!; sleep 0.2; "$2" collapse $p; rc=$?; kill $p; exit $rc' \
		sh "$work/sleeper" "$bin" >"$work/out" 2>&1 || rc=$?
	note "$work/out"
	r=0
	[ $rc -eq 1 ] && grep -q "Operation not permitted.*CAP_SYS_NICE" "$work/out" || r=1
	ok $r "collapse of nobody's process as nobody: EPERM, needs CAP_SYS_NICE, exit 1"
else
	skip "collapse --self as nobody succeeds" "$nobody_why"
	skip "collapse of root's process as nobody: access denied message, exit 1" "$nobody_why"
	skip "collapse of nobody's process as nobody: EPERM, needs CAP_SYS_NICE, exit 1" \
		"$nobody_why"
fi

# run passes the exit status on, with the library watch on or off
tool run7 run -q -- sh -c 'exit 7'
note "$work/run7.err"
r=$((rc != 7))
tool run7 run -q --libs 0 -- sh -c 'exit 7'
note "$work/run7.err"
[ "$rc" = 7 ] || r=1
# A command that ends at once ends the library watch too: no 2 s wait.
t0=$(date +%s%N)
tool run7 run -q --libs 30 -- sh -c 'exit 7'
t1=$(date +%s%N)
[ "$rc" = 7 ] && [ $(((t1 - t0) / 1000000)) -lt 5000 ] || r=1
ok $r "run -- sh -c 'exit 7' exits 7 (--libs 0, --libs 30 without waiting 30 s)"

# A command killed by a signal: hugetext dies of it too, without a core
# of its own, so that a shell sees it (bash would report 143 for either).
if [ -n "$sig_why" ]; then
	skip "run of a command killed by SIGTERM, or by SIGQUIT with cores on, dies of it too, no core" \
		"$sig_why"
else
	rc=0
	(
		cd "$work"
		ulimit -c unlimited 2>/dev/null || true
		"$sigtool" status "$bin" run -q -- sh -c 'kill -TERM $$'
		"$sigtool" status "$bin" run -q -- sh -c 'kill -QUIT $$'
		"$sigtool" status "$bin" run -q -- sh -c 'exit 7'
	) >"$work/ends" 2>"$work/ends.err" || rc=$?
	# stderr apart: without CAP_SYS_NICE run warns that it ran CMD anyway.
	note "$work/ends"
	note "$work/ends.err"
	r=0
	[ $rc -eq 0 ] && [ "$(cat "$work/ends")" = "$(printf 'signal 15\nsignal 3\nexit 7')" ] || r=1
	ok $r "run of a command killed by SIGTERM, or by SIGQUIT with cores on, dies of it too, no core"
fi

tool missing run -q -- "$work/no such command"
note "$work/missing.err"
r=0
[ $rc -eq 127 ] && grep -q "cannot run" "$work/missing.err" || r=1
ok $r "run of a missing command: 'cannot run', exit 127"

# run reports what it collapsed, on stderr
tool report run -- "$work/sleeper" 0
note "$work/report.err"
if grep -q 'CAP_SYS_NICE' "$work/report.err"; then
	skip "run -- PROGRAM reports on the text of PROGRAM, not of hugetext, on stderr" \
		"collapsing another process needs CAP_SYS_NICE"
else
	r=0
	[ $rc -eq 0 ] && [ ! -s "$work/report.out" ] &&
		grep -q "^summary: PID [0-9]* (sleeper)" "$work/report.err" || r=1
	ok $r "run -- PROGRAM reports on the text of PROGRAM, not of hugetext, on stderr"
fi

# run without permission: a warning, or nothing run with --strict
if [ ${#nobody[@]} -gt 0 ]; then
	rc=0
	"${nobody[@]}" "$bin" run -- sh -c 'echo ran' >"$work/out" 2>&1 || rc=$?
	note "$work/out"
	r=0
	[ $rc -eq 0 ] && grep -q "^ran$" "$work/out" && grep -q "warning" "$work/out" || r=1
	ok $r "run as nobody warns and still runs the command"

	rc=0
	"${nobody[@]}" "$bin" run --strict -- sh -c 'echo ran' >"$work/out" 2>&1 || rc=$?
	note "$work/out"
	r=0
	[ $rc -eq 125 ] && ! grep -q "^ran$" "$work/out" || r=1
	ok $r "run --strict as nobody exits 125 without running the command"
else
	skip "run as nobody warns and still runs the command" "$nobody_why"
	skip "run --strict as nobody exits 125 without running the command" "$nobody_why"
fi

# A program with 4 MiB of 2 MiB-congruent text: whole eligible blocks,
# which collapse either makes huge or fails on, depending on the host.
big=$work/bigtext
big_why=
if [ -z "$cc" ]; then
	big_why="no C compiler to build a program with 4 MiB of text"
else
	cat >"$work/bigtext.c" <<'EOF'
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

/* 4 MiB of text that never runs, in whole, congruent 2 MiB blocks. */
__asm__(".text\n.p2align 21\n.fill 0x400000, 1, 0x90\n");

int main(int argc, char **argv)
{
	if (argc > 1 && !strcmp(argv[1], "wait")) {
		sleep(60);
		return 0;
	}
	puts("ran");
	return argc > 1 ? atoi(argv[1]) : 0;
}
EOF
	"$cc" -O1 -static -Wl,-z,max-page-size=0x200000 -o "$big" "$work/bigtext.c" \
		>"$work/cc.log" 2>&1 || big_why="cannot link a static C program (no static libc?)"
fi

if [ -n "$big_why" ]; then
	skip "collapse PID: the report on stdout, errors on stderr, a failure never silent" \
		"$big_why"
	skip "collapse -q PID: nothing on stdout, errors on stderr" "$big_why"
	skip "run -- PROGRAM: runs it, with a warning exactly when its text was not all collapsed" \
		"$big_why"
	skip "run --strict -- PROGRAM: runs it only if all its text was collapsed, else exits 125" \
		"$big_why"
else
	"$big" wait &
	bigpid=$!
	pids+=("$bigpid")
	disown "$bigpid"
	running "$bigpid" "$big" || true
	tool status status "$bigpid"
	note "$work/status.out"

	tool coll collapse "$bigpid"
	note "$work/coll.out" "$work/coll.err"
	r=0
	grep -Evq "^($big: (collapsed [0-9]+ of [0-9]+ blocks in |PMD-mapped blocks )|summary: PID )" \
		"$work/coll.out" && r=1
	grep -vq '^hugetext: ' "$work/coll.err" && r=1
	if [ $rc -eq 0 ]; then
		# all collapsed, or nothing to do
		[ ! -s "$work/coll.err" ] &&
			grep -q '^summary: PID [0-9]* (bigtext): .*, 0 failed' "$work/coll.out" || r=1
	else
		[ -s "$work/coll.err" ] || r=1
	fi
	if grep -Eq '^summary: .* [1-9][0-9]* failed' "$work/coll.out"; then
		grep -q "^hugetext: $big: block 0x" "$work/coll.err" && [ $rc -ne 0 ] || r=1
	fi
	ok $r "collapse PID: the report on stdout, errors on stderr, a failure never silent"

	tool collq collapse -q "$bigpid"
	note "$work/collq.err"
	r=0
	[ ! -s "$work/collq.out" ] && { [ $rc -eq 0 ] || [ -s "$work/collq.err" ]; } || r=1
	ok $r "collapse -q PID: nothing on stdout, errors on stderr"

	tool brun run -- "$big" 5
	note "$work/brun.err"
	r=0
	huge=0
	grep -q "^summary: PID [0-9]* (bigtext): [0-9]* blocks collapsed, 0 failed" \
		"$work/brun.err" && huge=1
	warned=0
	grep -q "^hugetext: warning: running $big" "$work/brun.err" && warned=1
	diag "text of bigtext all collapsed: $huge, warning: $warned"
	[ $rc -eq 5 ] && grep -qx ran "$work/brun.out" && [ $huge -ne $warned ] || r=1
	ok $r "run -- PROGRAM: runs it, with a warning exactly when its text was not all collapsed"

	tool bstrict run --strict -- "$big" 5
	note "$work/bstrict.err"
	r=0
	if [ $huge -eq 1 ]; then
		[ $rc -eq 5 ] && grep -qx ran "$work/bstrict.out" || r=1
	else
		[ $rc -eq 125 ] && [ ! -s "$work/bstrict.out" ] &&
			grep -q -- "--strict" "$work/bstrict.err" || r=1
	fi
	ok $r "run --strict -- PROGRAM: runs it only if all its text was collapsed, else exits 125"
	kill "$bigpid" 2>/dev/null || true
fi

# Signals to run go on to CMD, and run exits as CMD did.
"$bin" run -q -- "$work/sleeper" 30 >/dev/null 2>"$work/term.err" &
h=$!
pids+=("$h")
c=$(child_of "$h") || c=
r=0
if [ -n "$c" ] && running "$c" "$work/sleeper"; then
	kill -TERM "$h"
	reap "$h" 10
	diag "SIGTERM to hugetext: exit $rc"
	[ $rc -eq 143 ] && ! alive "$c" || r=1
else
	diag "CMD did not start"
	r=1
fi
note "$work/term.err"
ok $r "run -- sleep: SIGTERM to hugetext ends CMD, exit 143"

cat >"$work/trap.sh" <<'EOF'
trap 'kill "$s"; exit 7' TERM
"$1" 30 &
s=$!
: >"$2"
wait
EOF
"$bin" run -q -- sh "$work/trap.sh" "$work/sleeper" "$work/trap.ready" >/dev/null \
	2>"$work/trap.err" &
h=$!
pids+=("$h")
c=$(child_of "$h") || c=
r=0
for ((i = 0; i < 100; i++)); do
	[ -e "$work/trap.ready" ] && break
	sleep 0.05
done
if [ -n "$c" ] && [ -e "$work/trap.ready" ]; then
	g=$(child_of "$c") || g=
	kill -TERM "$h"
	reap "$h" 10
	diag "SIGTERM to hugetext running a script that exits 7 on SIGTERM: exit $rc"
	[ $rc -eq 7 ] && ! alive "$c" || r=1
	for ((i = 0; i < 40; i++)); do
		[ -n "$g" ] && alive "$g" || break
		sleep 0.05
	done
	[ -n "$g" ] && ! alive "$g" || r=1
else
	diag "the script did not start"
	r=1
fi
note "$work/trap.err"
ok $r "run -- a script trapping SIGTERM: the script gets it and exits 7, and so does hugetext"

# A background job of a script ignores SIGINT; job control (set -m) runs it
# with SIGINT as it was.
(
	set -m
	for s in INT HUP QUIT; do
		"$bin" run -q -- "$work/sleeper" 30 >/dev/null 2>&1 &
		h=$!
		c=$(child_of "$h") || c=
		if [ -n "$c" ] && running "$c" "$work/sleeper"; then
			kill -"$s" "$h"
			reap "$h" 10
			alive "$c" && echo "$s $rc alive" || echo "$s $rc gone"
		else
			kill -KILL "$h"
			echo "$s none"
		fi
	done
) >"$work/sigs" 2>&1 || true
note "$work/sigs"
r=0
grep -qx "INT 130 gone" "$work/sigs" && grep -qx "HUP 129 gone" "$work/sigs" &&
	grep -qx "QUIT 131 gone" "$work/sigs" || r=1
ok $r "run -- sleep: SIGINT, SIGHUP and SIGQUIT end CMD, exit 130, 129 and 131"

"$bin" run -q -- "$work/sleeper" 30 >/dev/null 2>&1 &
h=$!
pids+=("$h")
c=$(child_of "$h") || c=
mask=$(sed -n 's/^SigIgn:[[:space:]]*//p' "/proc/$h/status" 2>/dev/null || true)
if [ -z "$c" ] || ! running "$c" "$work/sleeper"; then
	ok 1 "run with SIGINT ignored: CMD ignores it too, and SIGTERM still ends it"
elif [ -z "$mask" ] || [ $((0x$mask & 2)) -eq 0 ]; then
	kill -KILL "$h" "$c" 2>/dev/null || true
	skip "run with SIGINT ignored: CMD ignores it too, and SIGTERM still ends it" \
		"this shell starts background jobs with SIGINT not ignored"
else
	cmask=$(sed -n 's/^SigIgn:[[:space:]]*//p' "/proc/$c/status")
	kill -INT "$h"
	sleep 0.2
	r=0
	alive "$h" && alive "$c" && [ $((0x$cmask & 2)) -ne 0 ] || r=1
	kill -TERM "$h"
	reap "$h" 10
	[ $rc -eq 143 ] && ! alive "$c" || r=1
	ok $r "run with SIGINT ignored: CMD ignores it too, and SIGTERM still ends it"
fi

# Each signal reaches CMD once, whoever sends it: kill of hugetext's PID
# (passed on), kill of its process group (not passed on: CMD is in it),
# kill of each process of the group in turn (systemd's way; not passed on),
# a terminal's ^C. hugetext leads a process group and session of its own.
count_runs() {	# count_runs HOW N: "COUNT/STATUS" of N runs killed HOW
	local how=$1 i j h out=""

	for ((i = 0; i < $2; i++)); do
		rm -f "$work/cnt.ready" "$work/cnt.count"
		setsid "$bin" run -q -- "$sigtool" count "$work/cnt.ready" "$work/cnt.count" \
			</dev/null >/dev/null 2>>"$work/cnt.err" &
		h=$!
		for ((j = 0; j < 100; j++)); do
			[ -e "$work/cnt.ready" ] && break
			sleep 0.05
		done
		if [ ! -e "$work/cnt.ready" ] || [ "$(pgrp_of "$h")" != "$h" ]; then
			kill -KILL "$h" 2>/dev/null || true
			reap "$h" 1
			out+=" none"
			continue
		fi
		case $how in
		pid) kill -TERM "$h" ;;
		group) kill -TERM -- "-$h" ;;
		each-first) kill -TERM "$h" $(group_of "$h") ;;
		each-last) kill -TERM $(group_of "$h") "$h" ;;
		esac
		reap "$h" 10
		out+=" $(cat "$work/cnt.count" 2>/dev/null || echo none)/$rc"
	done
	echo "${out# }"
}

once() {	# once RESULTS: every run counted 1 signal and exited 0
	[ -n "$1" ] && [ -z "$(printf '%s\n' $1 | grep -vx '1/0')" ]
}

count_desc=(
	"pid:10:run: kill -TERM of hugetext's PID reaches CMD once (10 runs)"
	"group:10:run: kill -TERM -- -PGID of hugetext's group reaches CMD once (10 runs)"
	"each-first:5:run: kill -TERM of each process of the group, hugetext first, reaches CMD once (5 runs)"
	"each-last:5:run: kill -TERM of each process of the group, hugetext last, reaches CMD once (5 runs)"
)
for d in "${count_desc[@]}"; do
	how=${d%%:*}
	d=${d#*:}
	if [ -n "$sig_why" ]; then
		skip "${d#*:}" "$sig_why"
		continue
	fi
	res=$(count_runs "$how" "${d%%:*}")
	diag "SIGTERMs CMD got/exit status: $res"
	r=0
	once "$res" || r=1
	ok $r "${d#*:}"
done
[ -s "$work/cnt.err" ] && note "$work/cnt.err"

if [ -n "$sig_why" ] || [ -z "$python" ]; then
	skip "run: a terminal's ^C to the foreground group reaches CMD once (5 runs)" \
		"${sig_why:-no python3 for a pseudo-terminal}"
else
	rc=0
	"$python" - "$bin" "$sigtool" "$work" >"$work/pty" 2>&1 <<'EOF' || rc=$?
import os, pty, sys, time

tool, sigtool, work = sys.argv[1:]
ready, count = work + "/pty.ready", work + "/pty.count"
res = []
for i in range(5):
    for f in (ready, count):
        if os.path.exists(f):
            os.unlink(f)
    # the child leads a session whose terminal is the pseudo-terminal
    pid, fd = pty.fork()
    if not pid:
        os.execv(tool, [tool, "run", "-q", "--", sigtool, "count", ready, count])
    for j in range(100):
        if os.path.exists(ready):
            break
        time.sleep(0.05)
    os.write(fd, b"\x03")
    _, status = os.waitpid(pid, 0)
    os.close(fd)
    n = open(count).read().strip() if os.path.exists(count) else "none"
    code = os.WEXITSTATUS(status) if os.WIFEXITED(status) else 128 + os.WTERMSIG(status)
    res.append("%s/%d" % (n, code))
print(" ".join(res))
EOF
	note "$work/pty"
	r=0
	[ $rc -eq 0 ] && once "$(cat "$work/pty")" || r=1
	ok $r "run: a terminal's ^C to the foreground group reaches CMD once (5 runs)"
fi

# A made-up procfs and sysfs (HUGETEXT_ROOT): a kernel without
# CONFIG_READ_ONLY_THP_FOR_FS whose file system gives text large folios, as
# ext4 from 6.16 and xfs do. The mapped files do not exist, so only
# FilePmdMapped says what is huge.
fake_root() {	# fake_root DIR CONFIG: CONFIG is not_set, y, m, none or gz
	local d=$1 pid=$1/proc/4242

	rm -rf "$d"
	mkdir -p "$pid" "$d/proc/sys/kernel" "$d/sys/kernel/mm/transparent_hugepage" "$d/boot"
	echo 6.12.0-fake >"$d/proc/sys/kernel/osrelease"
	echo 'always [madvise] never' >"$d/sys/kernel/mm/transparent_hugepage/enabled"
	echo 2097152 >"$d/sys/kernel/mm/transparent_hugepage/hpage_pmd_size"
	echo fakeprog >"$pid/comm"
	printf 'Name:\tfakeprog\nTHP_enabled:\t1\n' >"$pid/status"
	cat >"$pid/smaps" <<'EOF'
7f0000000000-7f0000800000 r-xp 00000000 08:01 1234 /nonexistent/half-huge
Size:               8192 kB
FilePmdMapped:      4096 kB
THPeligible:    0
VmFlags: rd ex mr mw me hg
7f0000a00000-7f0000e00000 r-xp 00a00000 08:01 1235 /nonexistent/all-huge
Size:               4096 kB
FilePmdMapped:      4096 kB
THPeligible:    0
VmFlags: rd ex mr mw me hg
7f0001000000-7f0001400000 r-xp 00000000 08:01 1236 /nonexistent/small
Size:               4096 kB
FilePmdMapped:         0 kB
THPeligible:    0
VmFlags: rd ex mr mw me hg
7f0002000000-7f0002021000 rw-p 00000000 00:00 0
Size:                132 kB
EOF
	{
		echo "CONFIG_TRANSPARENT_HUGEPAGE=y"
		case $2 in
		not_set) echo "# CONFIG_READ_ONLY_THP_FOR_FS is not set" ;;
		y | gz) echo "CONFIG_READ_ONLY_THP_FOR_FS=y" ;;
		m) echo "CONFIG_READ_ONLY_THP_FOR_FS=m" ;;
		esac
		echo "CONFIG_XFS_FS=y"
	} >"$work/config"
	case $2 in
	none) ;;
	gz) gzip -c "$work/config" >"$d/proc/config.gz" ;;
	*) cp "$work/config" "$d/boot/config-6.12.0-fake" ;;
	esac
}

section() {	# section FILE PATH: the lines of PATH's mapping in a status report
	awk -v p="$2" '$0 == p { on = 1; next } /^[^ ]/ { on = 0 } on' "$1"
}

fake=$work/root
fake_root "$fake" not_set
rc=0
HUGETEXT_ROOT=$fake "$bin" status 4242 >"$work/fake.out" 2>"$work/fake.err" || rc=$?
note "$work/fake.out" "$work/fake.err"
r=0
[ $rc -eq 0 ] && [ ! -s "$work/fake.err" ] || r=1
head -n 1 "$work/fake.out" | grep -q 'kernel 6.12.0-fake, THP enabled=madvise, CONFIG_READ_ONLY_THP_FOR_FS no (/boot/config-6.12.0-fake)' || r=1
grep -qx 'summary: 3 text mappings, 8 blocks, 8 eligible, 4 PMD-mapped (count from FilePmdMapped)' \
	"$work/fake.out" || r=1
section "$work/fake.out" /nonexistent/all-huge >"$work/s.all"
grep -q 'eligible 2, PMD-mapped 2' "$work/s.all" && ! grep -Eq 'blocked|at fault only' "$work/s.all" || r=1
section "$work/fake.out" /nonexistent/half-huge >"$work/s.half"
grep -q 'eligible 4, PMD-mapped 2' "$work/s.half" && grep -q 'large folios yes' "$work/s.half" &&
	grep -q '^    at fault only: ' "$work/s.half" && ! grep -q 'blocked' "$work/s.half" || r=1
section "$work/fake.out" /nonexistent/small >"$work/s.small"
grep -q '^    blocked: no_config: .*at fault' "$work/s.small" &&
	! grep -q 'nothing makes' "$work/s.small" || r=1
ok $r "status without CONFIG_READ_ONLY_THP_FOR_FS: PMD-mapped blocks are huge, not blocked: no_config"

rc=0
HUGETEXT_ROOT=$fake "$bin" status --json 4242 >"$work/fake.json" 2>&1 || rc=$?
r=0
jline() {	# jline PATH: the JSON line of PATH's mapping
	grep -F "{\"path\": \"$1\"" "$work/fake.json"
}
[ $rc -eq 0 ] || r=1
grep -q '"kernel": "6.12.0-fake", "pmd_size": 2097152, "thp_enabled": "madvise", "read_only_thp_for_fs": false, "config_source": "/boot/config-6.12.0-fake"' \
	"$work/fake.json" || r=1
jline /nonexistent/half-huge | grep -F '"large_folios": true' |
	grep -F '"pmd_mapped_blocks": 2' | grep -qF '"reasons": []' || r=1
jline /nonexistent/all-huge | grep -F '"large_folios": true' | grep -qF '"reasons": []' || r=1
jline /nonexistent/small | grep -F '"large_folios": null' | grep -qF '"reasons": ["no_config"]' || r=1
if [ -n "$python" ]; then
	"$python" -c 'import json, sys; json.load(open(sys.argv[1]))' "$work/fake.json" || r=1
fi
[ $r -eq 0 ] || note "$work/fake.json"
ok $r "status --json without the option: large_folios true and no no_config where blocks are PMD-mapped"

for mode in y m; do
	fake_root "$fake" $mode
	rc=0
	HUGETEXT_ROOT=$fake "$bin" status --json 4242 >"$work/fake.json" 2>&1 || rc=$?
	r=0
	[ $rc -eq 0 ] && grep -q '"read_only_thp_for_fs": true, "config_source": "/boot/config-6.12.0-fake"' \
		"$work/fake.json" && ! grep -q no_config "$work/fake.json" || r=1
	ok $r "a kernel config with CONFIG_READ_ONLY_THP_FOR_FS=$mode counts as set"
done

fake_root "$fake" none
rc=0
HUGETEXT_ROOT=$fake "$bin" status 4242 >"$work/fake.out" 2>&1 || rc=$?
r=0
[ $rc -eq 0 ] && grep -q 'CONFIG_READ_ONLY_THP_FOR_FS unknown (no kernel config found)' \
	"$work/fake.out" && ! grep -q no_config "$work/fake.out" || r=1
ok $r "no kernel config: the option is unknown, and no no_config"

if command -v gzip >/dev/null; then
	fake_root "$fake" gz
	rc=0
	HUGETEXT_ROOT=$fake "$bin" status --json 4242 >"$work/fake.json" 2>&1 || rc=$?
	r=0
	[ $rc -eq 0 ] && grep -q '"read_only_thp_for_fs": true, "config_source": "/proc/config.gz"' \
		"$work/fake.json" || r=1
	ok $r "the kernel config from /proc/config.gz when /boot has none"
else
	skip "the kernel config from /proc/config.gz when /boot has none" "no gzip"
fi

# The block size is hpage_pmd_size, here 32 MiB (as arm64 with 16 KiB
# pages has): 64 MiB mappings are 2 blocks, and an offset of 2 MiB is
# misaligned. Without hpage_pmd_size, 2 MiB blocks, and the report says so.
fake_root "$fake" y
echo 33554432 >"$fake/sys/kernel/mm/transparent_hugepage/hpage_pmd_size"
cat >"$fake/proc/4242/smaps" <<'EOF'
7f0000000000-7f0004000000 r-xp 00000000 08:01 1234 /nonexistent/big
Size:              65536 kB
FilePmdMapped:     32768 kB
THPeligible:    1
VmFlags: rd ex mr mw me hg
7f0008000000-7f000c000000 r-xp 00200000 08:01 1235 /nonexistent/shifted
Size:              65536 kB
FilePmdMapped:         0 kB
THPeligible:    1
VmFlags: rd ex mr mw me hg
EOF
rc=0
HUGETEXT_ROOT=$fake "$bin" status 4242 >"$work/fake.out" 2>"$work/fake.err" || rc=$?
note "$work/fake.out" "$work/fake.err"
r=0
[ $rc -eq 0 ] && [ ! -s "$work/fake.err" ] && ! grep -q 'PMD size unknown' "$work/fake.out" || r=1
section "$work/fake.out" /nonexistent/big |
	grep -qx '    32 MiB blocks 2, eligible 2, PMD-mapped 1 (FilePmdMapped 32768 kB)' || r=1
section "$work/fake.out" /nonexistent/shifted >"$work/s.shifted"
grep -qx '    32 MiB blocks 2, eligible 0, PMD-mapped 0 (FilePmdMapped 0 kB)' "$work/s.shifted" &&
	grep -q '^    ineligible: 2 blocks at 0x7f0008000000: misaligned' "$work/s.shifted" || r=1
grep -qx 'summary: 2 text mappings, 4 blocks, 2 eligible, 1 PMD-mapped (count from FilePmdMapped)' \
	"$work/fake.out" || r=1
rc=0
HUGETEXT_ROOT=$fake "$bin" status --json 4242 >"$work/fake.json" 2>&1 || rc=$?
[ $rc -eq 0 ] && grep -q '"pmd_size": 33554432,' "$work/fake.json" &&
	jline /nonexistent/big | grep -qF '"blocks": 2, "eligible_blocks": 2, "pmd_mapped_blocks": 1,' &&
	jline /nonexistent/shifted |
	grep -qF '"ineligible": [{"start": 139638110945280, "blocks": 2, "reason": "misaligned"}]' || {
	note "$work/fake.json"
	r=1
}
ok $r "hpage_pmd_size 32 MiB: 32 MiB blocks, counted and aligned by it, in text and JSON"

rm "$fake/sys/kernel/mm/transparent_hugepage/hpage_pmd_size"
rc=0
HUGETEXT_ROOT=$fake "$bin" status 4242 >"$work/fake.out" 2>&1 || rc=$?
r=0
[ $rc -eq 0 ] && grep -qx 'PMD size unknown (no /sys/kernel/mm/transparent_hugepage/hpage_pmd_size): 2 MiB blocks assumed' \
	"$work/fake.out" &&
	section "$work/fake.out" /nonexistent/big |
	grep -qx '    2 MiB blocks 32, eligible 32, PMD-mapped 16 (FilePmdMapped 32768 kB)' || r=1
rc=0
HUGETEXT_ROOT=$fake "$bin" status --json 4242 >"$work/fake.json" 2>&1 || rc=$?
[ $rc -eq 0 ] && grep -q '"pmd_size": 0,' "$work/fake.json" || r=1
[ $r -eq 0 ] || note "$work/fake.out" "$work/fake.json"
ok $r "no hpage_pmd_size: 2 MiB blocks, and the report says they are assumed"

# tmpfs gives a file huge folios by its mount's huge= option, which
# shmem_enabled deny and force override: a real file on a real tmpfs,
# described by a made-up mountinfo.
shm=
for d in /dev/shm /run/shm "${XDG_RUNTIME_DIR:-/nonexistent}" /run /tmp; do
	if [ "$(stat -f -c %T "$d" 2>/dev/null)" = tmpfs ] && [ -w "$d" ]; then
		shm=$(mktemp "$d/hugetext-test.XXXXXX") && break
	fi
done
if [ -z "$shm" ]; then
	skip "tmpfs: large folios by the mount's huge= option and shmem_enabled deny and force" \
		"no writable tmpfs"
else
	truncate -s 4M "$shm"
	dev=$(stat -c %d "$shm")
	ino=$(stat -c %i "$shm")
	major=$(((dev >> 8 & 0xfff) | (dev >> 32 & ~0xfff)))
	minor=$(((dev & 0xff) | (dev >> 12 & ~0xff)))
	r=0
	for c in never:-:no none:-:no always:-:yes within_size:-:yes advise:-:yes \
		always:deny:no none:force:yes; do
		huge=${c%%:*}
		shmem=${c#*:}
		shmem=${shmem%:*}
		want=${c##*:}
		fake_root "$fake" y
		printf '7f0003000000-7f0003400000 r-xp 00000000 %02x:%02x %s %s\n' "$major" \
			"$minor" "$ino" "$shm" >"$fake/proc/4242/smaps"
		opts=rw,size=65536k
		[ "$huge" = none ] || opts+=,huge=$huge
		mkdir -p "$fake/proc/self"
		{
			# another tmpfs, huge, first: the file's is found by its device
			echo "30 1 254:254 / /elsewhere rw - tmpfs tmpfs rw,huge=always"
			echo "31 1 $major:$minor / /shm rw,relatime shared:4 - tmpfs tmpfs $opts"
		} >"$fake/proc/self/mountinfo"
		case $shmem in
		deny) echo 'always within_size advise never [deny] force' ;;
		force) echo 'always within_size advise never deny [force]' ;;
		*) echo 'always within_size advise [never] deny force' ;;
		esac >"$fake/sys/kernel/mm/transparent_hugepage/shmem_enabled"
		rc=0
		HUGETEXT_ROOT=$fake "$bin" status 4242 >"$work/fake.out" 2>&1 || rc=$?
		HUGETEXT_ROOT=$fake "$bin" status --json 4242 >"$work/fake.json" 2>&1 || rc=$?
		[ "$want" = yes ] && j=true || j=false
		if [ $rc -ne 0 ] ||
			! section "$work/fake.out" "$shm" | grep -qx "    file system tmpfs, large folios $want" ||
			! jline "$shm" | grep -qF "\"fs\": \"tmpfs\", \"large_folios\": $j,"; then
			diag "huge=$huge, shmem_enabled $shmem: large folios not $want"
			note "$work/fake.out"
			r=1
		fi
	done
	rm -f "$shm"
	ok $r "tmpfs: large folios by the mount's huge= option and shmem_enabled deny and force"
fi

# A set-user-ID hugetext ignores HUGETEXT_ROOT: whoever runs it must not
# make it read their files as its owner.
suid_why=
if [ ${#nobody[@]} -eq 0 ]; then
	suid_why=$nobody_why
elif command -v findmnt >/dev/null &&
	findmnt -no OPTIONS -T "$work" 2>/dev/null | tr , '\n' | grep -qx nosuid; then
	suid_why="the temporary directory is mounted nosuid"
fi
if [ -n "$suid_why" ]; then
	skip "HUGETEXT_ROOT: used as is, ignored by a set-user-ID hugetext" "$suid_why"
else
	fake_root "$fake" y
	cp "$bin" "$work/plain-hugetext"
	cp "$bin" "$work/suid-hugetext"
	chmod 4755 "$work/suid-hugetext"
	# The made-up procfs has PID 4242, the real one hugetext's own.
	r=0
	"${nobody[@]}" env HUGETEXT_ROOT="$fake" "$work/plain-hugetext" status 4242 \
		>"$work/plain.out" 2>&1 || r=1
	"${nobody[@]}" env HUGETEXT_ROOT="$fake" "$work/suid-hugetext" status \
		>"$work/suid.out" 2>&1 || r=1
	head -n 1 "$work/plain.out" | grep -q 'kernel 6\.12\.0-fake,' || r=1
	head -n 1 "$work/suid.out" | grep -qF "kernel $(uname -r)," || r=1
	[ $r -eq 0 ] || note "$work/plain.out" "$work/suid.out"
	rm -f "$work/suid-hugetext"
	ok $r "HUGETEXT_ROOT: used as is, ignored by a set-user-ID hugetext"
fi

# make install, with the man page rendered from Documentation/hugetext.rst
rst2man=$(command -v rst2man || command -v rst2man.py || true)
inst_why=
if ! command -v make >/dev/null; then
	inst_why="no make"
elif [ -z "$rst2man" ]; then
	inst_why="no rst2man (Debian's python3-docutils; make deps installs it)"
elif [ -z "$cc" ]; then
	inst_why="no C compiler"
fi
dest=$work/dest
man1=$dest/usr/share/man/man1/hugetext.1
if [ -n "$inst_why" ]; then
	for t in "make install DESTDIR PREFIX=/usr: the binary and the man page, modes 755 and 644" \
		"the installed man page: one NAME section, section 1" \
		"the installed man page renders with man -l (or groff) without a warning" \
		"the installed hugetext --version matches the man page's version" \
		"the man page says how to turn off each behaviour of the series"; do
		skip "$t" "$inst_why"
	done
else
	rc=0
	make -C "$here" install DESTDIR="$dest" PREFIX=/usr OUTPUT="$work/build" \
		>"$work/install.log" 2>&1 || rc=$?
	[ $rc -eq 0 ] || note "$work/install.log"
	r=0
	[ $rc -eq 0 ] && [ -x "$dest/usr/bin/hugetext" ] && [ -f "$man1" ] &&
		[ "$(stat -c %a "$dest/usr/bin/hugetext")" = 755 ] &&
		[ "$(stat -c %a "$man1")" = 644 ] || r=1
	ok $r "make install DESTDIR PREFIX=/usr: the binary and the man page, modes 755 and 644"

	r=0
	[ -f "$man1" ] && [ "$(grep -c '^\.SH NAME$' "$man1")" -eq 1 ] &&
		grep -q '^\.TH "HUGETEXT" 1 ' "$man1" || r=1
	ok $r "the installed man page: one NAME section, section 1"

	mrc=0
	: >"$work/man.err"
	if [ ! -f "$man1" ]; then
		mrc=1
	elif command -v man >/dev/null; then
		MANWIDTH=80 man --warnings -l "$man1" >"$work/man.txt" 2>"$work/man.err" || mrc=$?
	elif command -v groff >/dev/null; then
		groff -man -Tutf8 -ww "$man1" >"$work/man.txt" 2>"$work/man.err" || mrc=$?
	else
		mrc=none
	fi
	if [ $mrc = none ]; then
		skip "the installed man page renders with man -l (or groff) without a warning" \
			"neither man nor groff"
	else
		note "$work/man.err"
		r=0
		[ $mrc = 0 ] && [ ! -s "$work/man.err" ] &&
			grep -Eq '^ *hugetext +- +show, +and +make, +2 +MiB' "$work/man.txt" || r=1
		[ $mrc = 0 ] || diag "man or groff: exit $mrc"
		ok $r "the installed man page renders with man -l (or groff) without a warning"
	fi

	v=$(sed -n 's/^\.TH "HUGETEXT" 1 "[^"]*" "\([^"]*\)".*/\1/p' "$man1" 2>/dev/null || true)
	iv=$("$dest/usr/bin/hugetext" --version 2>&1 || true)
	diag "man page version '$v', hugetext --version '$iv'"
	r=0
	[ -n "$v" ] && [ "$iv" = "hugetext $v" ] || r=1
	ok $r "the installed hugetext --version matches the man page's version"

	r=0
	tr -s '\n' ' ' <"$man1" >"$work/man.flat" 2>/dev/null || true
	for w in 'fs.elf_text_thp_align=0' 'khugepaged/prompt_collapse' 'Split at write' \
		'on by default' 'no knob'; do
		grep -qF -- "$w" "$work/man.flat" || {
			diag "man page lacks '$w'"
			r=1
		}
	done
	ok $r "the man page says how to turn off each behaviour of the series"
fi

echo "# $((n - failed)) of $n passed or skipped, $failed failed"
if [ $n -ne $planned ]; then
	echo "# $n results, $planned planned"
	exit 1
fi
[ $failed -eq 0 ]
