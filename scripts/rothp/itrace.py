# SPDX-License-Identifier: GPL-2.0
"""itrace: the TLB gain of real code, from cc1's own instruction fetches.

    rothp-host cc1-trace OUT_DIR SRC_TREE ITRACE PRELOAD
        record the trace (make bench does): bench/itrace.c built as ITRACE,
        bench/itrace_maps.c as the shared object PRELOAD

record() runs the host's gcc cc1, the Debian binary the guest runs, on a
real file (the kernel tree's scripts/kallsyms.c, preprocessed with this
machine's headers) at -O2 under valgrind's lackey, which names the address
of every superblock the program enters (--trace-superblocks=yes,
--vex-guest-chase=no: a superblock is then one basic block) and counts the
instructions (--basic-counts=yes). Lackey was chosen over a QEMU TCG
plugin because Debian packages it whole (a plugin needs QEMU's
qemu-plugin.h, which no Debian package ships) and it runs the same
binaries and libraries as the guest, through the host's loader. itrace
reduce (bench/itrace.c) keeps one record per change of 4 KiB page; a
preloaded bench/itrace_maps.c writes where valgrind mapped each file.

replay() maps each traced page to the file and offset it holds, that to
the address the guest had there (bench_real's REALMAP lines of cc1 under
THP "always", the guest's own layout on each kernel) and to the TLB key of
the page size the guest had: the 2 MiB block where that block was
PMD-mapped, else the 4 KiB page (a guest of 16 KiB or 64 KiB pages: its
page, and its 32 MiB or 512 MiB block). itrace replay runs the keys
through the TLB model of the geometries the report names (those of the
guest's architecture in tlb_model.ARCH_GEOMETRIES), one access per basic
block (a block that runs on into the next page is one access, not two)
and one per block only when it changes page.

The trace is of the host's code: record() writes the host's architecture
in the trace (ARCH), and a guest of another one (an arm64 guest of an
x86-64 host) has other binaries, whose layout the trace does not follow;
trace_arch() says which it was.
"""
import os
import platform
import re
import subprocess

from . import tlb_model

PAGE = tlb_model.PAGE
PMD = tlb_model.PMD
SOURCE = 'scripts/kallsyms.c'
TRACE = 'trace.bin'
MAPS = 'maps.txt'
COUNTS = 'counts.txt'
LDD = 'ldd.txt'
ARCH = 'arch.txt'
REALMAP = re.compile(r'^REALMAP (\S+) (\S+) (\S+) (0x[0-9a-f]+) (0x[0-9a-f]+) (0x[0-9a-f]+|0) '
                     r'(-?\d+) (\d+) (\S+)\s*$')
MAPS_LINE = re.compile(r'^([0-9a-f]+)-([0-9a-f]+) (\S{4}) ([0-9a-f]+) \S+ \d+\s+(/\S.*)$')


class TraceError(Exception):
    """What went wrong in recording or replaying the trace, in one line."""


def run(cmd, **kw):
    try:
        return subprocess.run(cmd, check=True, capture_output=True, text=True, **kw)
    except FileNotFoundError as e:
        raise TraceError(f'{cmd[0]} missing: sudo make deps') from e
    except subprocess.CalledProcessError as e:
        raise TraceError(f'{" ".join(cmd[:3])} ... failed: {e.stderr.strip()[-300:]}') from e


def record(out, src_tree, itrace, preload, cc='gcc'):
    """Trace cc1 compiling src_tree's SOURCE into out; returns the counts."""
    os.makedirs(out, exist_ok=True)
    cc1 = run([cc, '-print-prog-name=cc1']).stdout.strip()
    src = os.path.join(src_tree, SOURCE)
    pre = os.path.join(out, 'kallsyms.i')
    run([cc, '-E', '-P', '-I', os.path.join(src_tree, 'scripts/include'), '-o', pre, src])
    with open(os.path.join(out, LDD), 'w') as f:
        f.write(run(['ldd', cc1]).stdout)
    maps = os.path.join(out, MAPS)
    if os.path.exists(maps):
        os.unlink(maps)
    rfd, wfd = os.pipe()
    env = dict(os.environ, LD_PRELOAD=preload, ITRACE_MAPS=maps)
    reducer = subprocess.Popen([itrace, 'reduce', os.path.join(out, TRACE)], stdin=rfd,
                               stdout=subprocess.PIPE, stderr=subprocess.PIPE, text=True)
    os.close(rfd)
    try:
        vg = subprocess.run(['valgrind', '--tool=lackey', '--basic-counts=yes',
                             '--trace-superblocks=yes', '--vex-guest-chase=no',
                             f'--log-fd={wfd}', cc1, '-quiet', '-O2', '-o', '/dev/null', pre],
                            pass_fds=(wfd,), env=env, capture_output=True, text=True)
    except FileNotFoundError as e:
        raise TraceError('valgrind missing: sudo make deps (make bench installs it)') from e
    finally:
        os.close(wfd)
    rout, rerr = reducer.communicate()
    if vg.returncode:
        raise TraceError(f'cc1 under valgrind exited {vg.returncode}: {vg.stderr.strip()[-300:]}')
    if reducer.returncode:
        raise TraceError(f'itrace reduce: {rerr.strip()}')
    if not os.path.exists(maps):
        raise TraceError(f'{preload} wrote no maps (was it preloaded?)')
    with open(os.path.join(out, COUNTS), 'w') as f:
        f.write(rout)
    with open(os.path.join(out, ARCH), 'w') as f:
        f.write(platform.machine() + '\n')
    return read_counts(out)


def trace_arch(out):
    """The architecture of a recorded trace's code (tlb_model.arch_name()),
    None when the trace does not say (one recorded before it did)."""
    try:
        with open(os.path.join(out, ARCH)) as f:
            return tlb_model.arch_name(f.read().strip())
    except OSError:
        return None


def read_counts(out):
    """{'instrs', 'sbs', 'records'} of a recorded trace."""
    with open(os.path.join(out, COUNTS)) as f:
        words = f.read().split()
    return {words[i]: int(words[i + 1]) for i in range(0, len(words) - 1, 2)}


def text_maps(text):
    """The r-x file mappings of a maps file: (start, end, offset, path)."""
    out = []
    for line in text.split('\n'):
        m = MAPS_LINE.match(line)
        if m and m.group(3) == 'r-xp':
            out.append((int(m.group(1), 16), int(m.group(2), 16), int(m.group(4), 16),
                        m.group(5).strip()))
    return out


def realmaps(text, mode='always', prog='cc1'):
    """bench_real's REALMAP lines of one mode and program, by file name:
    {name: {'start', 'end', 'offset', 'huge': set of block file offsets}}."""
    out = {}
    for line in text.split('\n'):
        m = REALMAP.match(line)
        if not m or m.group(1) != mode or m.group(2) != prog:
            continue
        huge = set() if m.group(9) == '-' else {int(x, 16) for x in m.group(9).split(',')}
        out[os.path.basename(m.group(3))] = {
            'start': int(m.group(4), 16), 'end': int(m.group(5), 16),
            'offset': int(m.group(6), 16), 'eligible': int(m.group(7)), 'huge': huge}
    return out


def eligible_map(guest, page=PAGE):
    """realmaps()'s map with every eligible block huge: the whole
    PMD-aligned blocks of each mapping at PMD-aligned file offsets, as
    many as bench_real counted (it leaves out blocks that end past EOF,
    the last ones), and those the guest had huge. The most any kernel can
    make huge of that layout."""
    pmd = tlb_model.pmd_size(page)
    out = {}
    for name, g in guest.items():
        first = -(-g['start'] // pmd) * pmd
        blocks = [a - g['start'] + g['offset'] for a in range(first, g['end'] - pmd + 1, pmd)]
        blocks = [off for off in blocks if off % pmd == 0]
        n = g.get('eligible', len(blocks))
        # -1: bench_real could not look at the file; the blocks it saw huge
        # are huge in the bound too.
        out[name] = dict(g, huge=set(blocks[:n] if n >= 0 else []) | g['huge'])
    return out


def ldd_names(text):
    """{real path: the name the guest has the file under}: ldd's names
    ("libisl.so.23 => /lib/.../libisl.so.23"); maps name the file the
    link resolves to (libisl.so.23.2.0)."""
    out = {}
    for line in text.split('\n'):
        parts = line.split()
        if len(parts) >= 3 and parts[1] == '=>' and parts[2].startswith('/'):
            out[os.path.realpath(parts[2])] = parts[0]
        elif parts and parts[0].startswith('/'):
            out[os.path.realpath(parts[0])] = os.path.basename(parts[0])
    return out


def page_keys(traced, guest, names, page=PAGE):
    """(traced 4 KiB page, TLB key) for each page of a traced text mapping
    whose file the guest had mapped: its PMD block's key where the guest
    had that block PMD-mapped, else its page's, at the guest's address;
    page is the guest's page size (its PMD block: tlb_model.pmd_size()).
    Keys as bench/itrace.c takes them: (number << 1) | huge, the number in
    pages or in blocks."""
    pmd = tlb_model.pmd_size(page)
    pairs = []
    for start, end, offset, path in traced:
        g = guest.get(names.get(os.path.realpath(path), os.path.basename(path)))
        if g is None:
            continue
        for addr in range(start, end, PAGE):
            off = offset + addr - start
            gaddr = g['start'] + off - g['offset']
            if not g['start'] <= gaddr < g['end']:
                continue
            if off - off % pmd in g['huge']:
                key = (gaddr // pmd) << 1 | 1
            else:
                key = (gaddr // page) << 1
            pairs.append((addr // PAGE, key))
    return pairs


def geometry_specs(geometries=None):
    """tlb_model's geometries (those named, by default all) as
    bench/itrace.c takes them."""
    specs = []
    for g in geometries or tlb_model.GEOMETRIES:
        _, l1, l2 = tlb_model.GEOMETRIES[g]
        shared = 1 if l1['4k'] is l1['2m'] else 0
        specs.append(f'{g}:{l1["4k"][0]}:{l1["4k"][1]}:{l1["2m"][0]}:{l1["2m"][1]}:'
                     f'{shared}:{l2[0]}:{l2[1]}')
    return specs


def replay(out, itrace, guest, tag, geometries=None, page=PAGE):
    """Replay out's trace over the guest's map of cc1 (realmaps()), a guest
    of that page size, in those geometries (by default all); tag names the
    page table file. {geometry: {'l1_pki', 'walks_pki', 'accesses'}}, per
    1000 instructions."""
    geometries = tuple(geometries or tlb_model.GEOMETRIES)
    counts = read_counts(out)
    with open(os.path.join(out, MAPS)) as f:
        traced = text_maps(f.read())
    with open(os.path.join(out, LDD)) as f:
        names = ldd_names(f.read())
    pairs = page_keys(traced, guest, names, page)
    if not pairs:
        raise TraceError(f'no traced text mapping is one the guest mapped ({tag})')
    pages = os.path.join(out, f'pages-{tag}.txt')
    with open(pages, 'w') as f:
        f.write(''.join(f'{p:x} {k:x}\n' for p, k in pairs))
    res = run([itrace, 'replay', os.path.join(out, TRACE), pages] +
              geometry_specs(geometries)).stdout
    result = {}
    for line in res.split('\n'):
        w = line.split()
        if len(w) == 7:
            result[w[0]] = {'accesses': int(w[2]),
                            'l1_pki': 1000.0 * int(w[4]) / counts['instrs'],
                            'walks_pki': 1000.0 * int(w[6]) / counts['instrs']}
    if set(result) != set(geometries):
        raise TraceError(f'itrace replay printed {res.strip()!r}')
    return result
