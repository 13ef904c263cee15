#!/bin/sh
# SPDX-License-Identifier: GPL-2.0
# host_test.sh [HUGETEXT]: checks of hugetext that hold on any Linux host,
# with any kernel configuration, printed as KTAP. The permission checks run
# the tool as nobody through setpriv(1) and need root; without it they skip.
# Exit status: 0 if no check failed.

bin=${1:-./hugetext}
[ -x "$bin" ] || {
	echo "Bail out! $bin is not an executable" >&2
	exit 1
}
bin=$(cd "$(dirname "$bin")" && pwd -P)/$(basename "$bin")

n=0
failed=0
work=$(mktemp -d) || exit 1
chmod 755 "$work"	# nobody runs programs from it
pids=
cleanup() {
	for p in $pids; do
		kill "$p" 2>/dev/null
	done
	rm -rf "$work"
}
trap cleanup EXIT

ok() {	# ok CONDITION-STATUS DESCRIPTION
	n=$((n + 1))
	if [ "$1" -eq 0 ]; then
		echo "ok $n $2"
	else
		echo "not ok $n $2"
		failed=$((failed + 1))
	fi
}

skip() {	# skip DESCRIPTION REASON
	n=$((n + 1))
	echo "ok $n $1 # SKIP $2"
}

note() {	# note FILE: its lines as KTAP diagnostics
	sed 's/^/# /' "$1"
}

nobody=
if [ "$(id -u)" -eq 0 ] && command -v setpriv >/dev/null; then
	nobody="setpriv --reuid=65534 --regid=65534 --clear-groups"
fi
nobody_why="needs root and setpriv(1) to run as nobody"
python=$(command -v python3 || true)

echo "TAP version 13"
echo "1..16"

# 1: help
rc=0
"$bin" --help >"$work/help" || rc=1
for c in status collapse run; do
	"$bin" "$c" --help >"$work/help.$c" && grep -q "^usage: .* $c" "$work/help.$c" || rc=1
done
ok $rc "--help of the tool and of each command exits 0 with a usage line"

# 2, 3: a child's text mapping, in text and JSON
cp "$(command -v sleep)" "$work/sleeper"
"$work/sleeper" 60 &
child=$!
pids="$pids $child"
sleep 0.2
"$bin" status "$child" >"$work/status" 2>&1
rc=$?
note "$work/status"
[ $rc -eq 0 ] && grep -qx "$work/sleeper" "$work/status" &&
	grep -q '^summary: [0-9]* text mapping' "$work/status"
ok $? "status PID lists the child's text mapping and a summary line"

"$bin" status --json "$child" >"$work/status.json" 2>"$work/status.err"
rc=$?
if [ -z "$python" ]; then
	skip "status --json parses and has the documented keys" "no python3 to parse JSON"
else
	"$python" - "$work/status.json" "$work/sleeper" "$child" <<'EOF' >"$work/check" 2>&1
import json, sys
doc = json.load(open(sys.argv[1]))
path, pid = sys.argv[2], int(sys.argv[3])
top = {"version", "pid", "comm", "system", "mappings", "summary"}
sysk = {"kernel", "pmd_size", "thp_enabled", "read_only_thp_for_fs",
        "config_source", "process_thp_disabled", "pmd_detail"}
mapk = {"path", "start", "end", "offset", "dev", "inode", "size", "file_size",
        "blocks", "eligible_blocks", "pmd_mapped_blocks", "file_pmd_mapped_kb",
        "thp_eligible", "vm_hugepage", "vm_nohugepage", "writers", "reasons",
        "ineligible"}
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
pmd = 2 << 20
for m in doc["mappings"]:
    assert set(m) == mapk, m.keys()
    assert set(m["reasons"]) <= reasons, m["reasons"]
    # Every block is eligible or in one ineligible run.
    assert m["blocks"] == m["eligible_blocks"] + sum(r["blocks"] for r in m["ineligible"])
    assert all(r["reason"] in blk for r in m["ineligible"])
    assert 0 <= m["pmd_mapped_blocks"] <= m["eligible_blocks"]
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
	crc=$?
	note "$work/check"
	[ $rc -eq 0 ] && [ $crc -eq 0 ]
	ok $? "status --json parses and has the documented keys"
fi

# 4: its own text by default
"$bin" status >"$work/self" 2>&1
rc=$?
[ $rc -eq 0 ] && grep -qx "$bin" "$work/self"
ok $? "status without a PID lists hugetext's own text mapping"

# 5: awkward path names stay valid JSON
weird=$(printf '%s/we"ird\\ \377 name' "$work")
cp "$work/sleeper" "$weird"
"$weird" 60 &
wchild=$!
pids="$pids $wchild"
sleep 0.2
if [ -z "$python" ]; then
	skip "status --json of a program named with a quote, a backslash and a non-UTF-8 byte" \
		"no python3 to parse JSON"
else
	"$bin" status --json "$wchild" >"$work/weird.json" 2>&1 &&
		"$python" -c 'import json, sys
d = json.load(open(sys.argv[1], encoding="utf-8"))
assert any(m["path"].startswith(sys.argv[2]) and "we\"ird\\ \ufffd" in m["path"]
           for m in d["mappings"]), [m["path"] for m in d["mappings"]]' \
		"$work/weird.json" "$work" >"$work/check" 2>&1
	rc=$?
	note "$work/check"
	ok $rc "status --json of a program named with a quote, a backslash and a non-UTF-8 byte"
fi

# 6, 7: bad PIDs
"$bin" status 999999999 >"$work/out" 2>&1
rc=$?
note "$work/out"
[ $rc -eq 1 ] && grep -q "no process with PID 999999999" "$work/out"
ok $? "status of a nonexistent PID: 'no process' message, exit 1"

"$bin" collapse nonsense >"$work/out" 2>&1
rc=$?
note "$work/out"
[ $rc -eq 2 ] && grep -q "not a PID" "$work/out"
ok $? "collapse of a non-numeric PID: usage error, exit 2"

# 8: collapse of its own text needs no privilege
if [ -n "$nobody" ]; then
	$nobody "$bin" collapse --self >"$work/out" 2>&1
	rc=$?
	note "$work/out"
	[ $rc -eq 0 ] && grep -q '^summary: PID' "$work/out"
	ok $? "collapse --self as nobody succeeds"
else
	skip "collapse --self as nobody succeeds" "$nobody_why"
fi

# 9, 10: collapse without permission
if [ -n "$nobody" ]; then
	$nobody "$bin" collapse "$child" >"$work/out" 2>&1
	rc=$?
	note "$work/out"
	[ $rc -eq 1 ] && grep -q "ptrace read access" "$work/out"
	ok $? "collapse of root's process as nobody: access denied message, exit 1"

	$nobody sh -c '"$1" 60 & p=$!; sleep 0.2; "$2" collapse $p; rc=$?; kill $p; exit $rc' \
		sh "$work/sleeper" "$bin" >"$work/out" 2>&1
	rc=$?
	note "$work/out"
	[ $rc -eq 1 ] && grep -q "Operation not permitted.*CAP_SYS_NICE" "$work/out"
	ok $? "collapse of nobody's process as nobody: EPERM, needs CAP_SYS_NICE, exit 1"
else
	skip "collapse of root's process as nobody: access denied message, exit 1" "$nobody_why"
	skip "collapse of nobody's process as nobody: EPERM, needs CAP_SYS_NICE, exit 1" \
		"$nobody_why"
fi

# 11-13: run passes the exit status on
"$bin" run -q -- sh -c 'exit 7' >"$work/out" 2>&1
rc=$?
note "$work/out"
ok $((rc != 7)) "run -- sh -c 'exit 7' exits 7"

"$bin" run -q -- sh -c 'kill -TERM $$' >"$work/out" 2>&1
rc=$?
ok $((rc != 143)) "run of a command killed by SIGTERM exits 143"

"$bin" run -q -- "$work/no such command" >"$work/out" 2>&1
rc=$?
note "$work/out"
[ $rc -eq 127 ] && grep -q "cannot run" "$work/out"
ok $? "run of a missing command: 'cannot run', exit 127"

# 14: run reports what it collapsed
"$bin" run -- "$work/sleeper" 0 >"$work/out" 2>&1
rc=$?
note "$work/out"
[ $rc -eq 0 ] && grep -q "^summary: PID [0-9]* (sleeper)" "$work/out"
ok $? "run -- PROGRAM reports on the text of PROGRAM, not of hugetext"

# 15, 16: run without permission: a warning, or nothing run with --strict
if [ -n "$nobody" ]; then
	$nobody "$bin" run -- sh -c 'echo ran' >"$work/out" 2>&1
	rc=$?
	note "$work/out"
	[ $rc -eq 0 ] && grep -q "^ran$" "$work/out" && grep -q "warning" "$work/out"
	ok $? "run as nobody warns and still runs the command"

	$nobody "$bin" run --strict -- sh -c 'echo ran' >"$work/out" 2>&1
	rc=$?
	note "$work/out"
	[ $rc -eq 125 ] && ! grep -q "^ran$" "$work/out"
	ok $? "run --strict as nobody exits 125 without running the command"
else
	skip "run as nobody warns and still runs the command" "$nobody_why"
	skip "run --strict as nobody exits 125 without running the command" "$nobody_why"
fi

echo "# $((n - failed)) of $n passed or skipped, $failed failed"
[ $failed -eq 0 ]
