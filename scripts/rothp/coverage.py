# SPDX-License-Identifier: GPL-2.0
"""coverage: the share of the lines the series adds that the kselftests ran.

    rothp-host coverage OBJ GCDA_DIR SRC BASE..SERIES GAPS OUT_DIR

OBJ is the coverage kernel's build directory (its .gcno files), GCDA_DIR the
counters the guest saved (any tree: each .gcda is matched to its .gcno by
its path below OBJ), SRC the kernel git tree and BASE..SERIES the series.
GAPS lists, per function, why its added lines do not run in the tests
("file function: reason"; "-" as the function for lines outside any);
lines without a reason are listed as such.

An added line counts when gcov knows it as code in some profiled object:
comments, declarations and code that the configuration compiles out are not
lines to run. A line counts as executed when any object ran it (a static
inline function of a header runs in each object that calls it).

Writes OUT_DIR/coverage.json (key added_lines_executed_share) and
OUT_DIR/coverage.md; exits 1 when the share is below the target and some
line that did not run has no reason in GAPS.
"""

import collections
import json
import os
import re
import shutil
import subprocess
import sys
import tempfile

TARGET = 0.90


def added_lines(src, rng):
    """{path: {line: text}} of the lines the series adds to C files."""
    out = subprocess.run(["git", "-C", src, "diff", "-U0", "--no-color", "--no-ext-diff",
                          "--src-prefix=a/", "--dst-prefix=b/", rng,
                          "--", "*.c", "*.h"], check=True,
                         capture_output=True, text=True).stdout
    added = collections.defaultdict(dict)
    path = None
    line = 0
    for l in out.splitlines():
        if l.startswith("+++ "):
            path = None if l == "+++ /dev/null" else l[6:]
        elif l.startswith("@@"):
            m = re.match(r"@@ -\S+ \+(\d+)(?:,(\d+))? @@", l)
            line = int(m.group(1))
        elif path and l.startswith("+"):
            added[path][line] = l[1:]
            line += 1
    return added


def tree_path(name, src, obj):
    """A gcov file name as a path in the source tree, or None."""
    p = name if os.path.isabs(name) else os.path.join(obj, name)
    p = os.path.realpath(p)
    root = os.path.realpath(src) + os.sep
    return p[len(root):] if p.startswith(root) else None


def gcov_json(obj, gcda_dir):
    """Every gcov JSON document of the saved counters, and the objects."""
    docs, objs = [], []
    real_obj = os.path.realpath(obj)
    with tempfile.TemporaryDirectory() as tmp:
        for root, _, files in os.walk(gcda_dir):
            for f in files:
                if not f.endswith(".gcda"):
                    continue
                gcda = os.path.join(root, f)
                # The guest names the counters by the build's absolute
                # path; what follows the object directory is the object.
                rel = os.path.relpath(gcda, gcda_dir)
                key = real_obj.lstrip("/") + "/"
                rel = rel.split(key, 1)[1] if key in rel else rel
                gcno = os.path.join(obj, rel[:-5] + ".gcno")
                if not os.path.exists(gcno):
                    sys.exit(f"coverage: {rel}: no {gcno}: the counters are not of "
                             f"the kernel built in {obj}")
                d = os.path.join(tmp, os.path.dirname(rel))
                os.makedirs(d, exist_ok=True)
                shutil.copy(gcda, d)
                shutil.copy(gcno, d)
                r = subprocess.run(["gcov", "-t", "-j", "-o", d,
                                    os.path.join(d, f)], cwd=obj,
                                   capture_output=True, text=True)
                if r.returncode != 0:
                    sys.exit(f"coverage: gcov {rel}: {r.stderr.strip()}")
                docs.append(json.loads(r.stdout))
                objs.append(rel[:-5] + ".o")
    return docs, sorted(objs)


def line_counts(docs, src, obj):
    """{path: {line: (count, function)}}, counts summed over objects."""
    lines = collections.defaultdict(dict)
    for doc in docs:
        for f in doc["files"]:
            path = tree_path(f["file"], src, obj)
            if path is None:
                continue
            funcs = [(fn["start_line"], fn["end_line"], fn["demangled_name"])
                     for fn in f["functions"]]
            for ln in f["lines"]:
                n = ln["line_number"]
                fn = next((name for s, e, name in funcs if s <= n <= e), "")
                old = lines[path].get(n, (0, fn))
                lines[path][n] = (old[0] + ln["count"], old[1] or fn)
    return lines


def read_gaps(path):
    """{(file, function): reason} from the GAPS file."""
    gaps = {}
    if not path or not os.path.exists(path):
        return gaps
    with open(path) as fh:
        for no, l in enumerate(fh, 1):
            l = l.strip()
            if not l or l.startswith("#"):
                continue
            m = re.match(r"(\S+)\s+(\S+):\s+(.+)$", l)
            if not m:
                sys.exit(f"coverage: {path}:{no}: not 'file function: reason'")
            gaps[(m.group(1), m.group(2))] = m.group(3)
    return gaps


def report(obj, gcda_dir, src, rng, gaps_file, out):
    """Write coverage.json and coverage.md to OUT; the exit status."""
    added = added_lines(src, rng)
    docs, objs = gcov_json(obj, gcda_dir)
    if not docs:
        sys.exit(f"coverage: no .gcda under {gcda_dir}: did the guest save them?")
    counts = line_counts(docs, src, obj)
    gaps = read_gaps(gaps_file)
    used_gaps = set()

    files, missed = [], []
    total = ran = 0
    for path in sorted(added):
        code = {n: counts[path][n] for n in added[path] if n in counts.get(path, {})}
        hit = [n for n, (c, _) in code.items() if c > 0]
        files.append({"file": path, "added": len(added[path]),
                      "code": len(code), "executed": len(hit),
                      "profiled": path in counts})
        total += len(code)
        ran += len(hit)
        for n in sorted(code):
            c, fn = code[n]
            if c:
                continue
            reason = gaps.get((path, fn or "-"))
            if reason:
                used_gaps.add((path, fn or "-"))
            missed.append({"file": path, "line": n, "function": fn,
                           "text": added[path][n].strip(), "reason": reason})
    share = ran / total if total else 0.0
    unexplained = [m for m in missed if not m["reason"]]
    stale = sorted(set(gaps) - used_gaps)

    os.makedirs(out, exist_ok=True)
    result = {
        "added_lines_executed_share": round(share, 4),
        "target": TARGET,
        "added_code_lines": total,
        "added_code_lines_executed": ran,
        "objects": objs,
        "files": files,
        "not_executed": missed,
        "not_executed_without_reason": len(unexplained),
        "stale_gaps": [f"{p} {f}" for p, f in stale],
    }
    with open(os.path.join(out, "coverage.json"), "w") as fh:
        json.dump(result, fh, indent=1)
        fh.write("\n")

    md = ["# Coverage of the lines the series adds", "",
          f"Executed by the kselftests: **{ran} of {total}** added lines of "
          f"code, share **{share:.3f}** (target {TARGET:.2f}).", "",
          "Profiled objects: " + ", ".join(f"`{o}`" for o in objs) + ".", "",
          "| file | added lines | of which code | executed |",
          "|---|---:|---:|---:|"]
    for f in files:
        note = "" if f["profiled"] else " (no line of code in a profiled object)"
        md.append(f"| {f['file']}{note} | {f['added']} | {f['code']} | {f['executed']} |")
    md += ["", "## Added lines never executed", ""]
    if not missed:
        md.append("None.")
    by_fn = collections.OrderedDict()
    for m in missed:
        by_fn.setdefault((m["file"], m["function"]), []).append(m)
    for (path, fn), ms in by_fn.items():
        md.append(f"### {path} {fn or '(file scope)'}: {len(ms)} line(s)")
        md.append("")
        md.append(f"Why: {ms[0]['reason'] or '**no reason given**'}")
        md.append("")
        md += [f"    {m['line']:5d}  {m['text']}" for m in ms]
        md.append("")
    if stale:
        md += ["## Reasons for functions that now run (or no longer exist)", ""]
        md += [f"- {p} {f}" for p, f in stale]
    with open(os.path.join(out, "coverage.md"), "w") as fh:
        fh.write("\n".join(md) + "\n")

    print(f"coverage: {ran} of {total} added lines of code executed: "
          f"added_lines_executed_share {share:.3f} (target {TARGET:.2f}); "
          f"{len(missed)} not executed, {len(unexplained)} without a reason")
    if share < TARGET and unexplained:
        return 1
    return 0
