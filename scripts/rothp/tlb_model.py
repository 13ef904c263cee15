# SPDX-License-Identifier: GPL-2.0
"""tlb_model: the instruction TLBs of documented x86 and arm64 cores, fed
the call sequence bench_itlb ran and the page sizes its text had.

bench_itlb prints, for each timed run, the seed of its random cyclic order
of stubs, the blob's address and which 2 MiB blocks were PMD-mapped
("ITLB run ..."). This module rebuilds the same order (splitmix64 and
Sattolo's algorithm, as cycle_perm() in progs/textprog.c),
checks it against the FNV-1a hash the guest printed, and runs the stub
addresses through a two-level TLB model with LRU replacement:

* one access per call: the instruction fetch of the stub's page (4 KiB, or
  the 2 MiB block when the block was PMD-mapped);
* an L1 miss looks the L2 up; an L2 miss is a page walk; both fill;
* set index = page number (4 KiB or 2 MiB units) modulo the number of sets.

The stubs are 4 KiB apart on every kernel (STUB). A kernel with another
base page (arm64 with 16 KiB or 64 KiB pages) has another PMD size too
(pmd_size(): 32 MiB, 512 MiB); model_run() takes the page size, and the
keys '4k' and '2m' then stand for that base page and that PMD block. The
geometries are the same for every page size: each of their arrays is
taken to hold one entry per page or block whatever its size (true of the
sizes their sources list; not of the Cortex-A76's L1 iTLB at 512 MiB,
which holds at most 32 MiB and splits larger blocks, modelled as one
entry still).

Not modelled: the jump table's data loads (they share Intel's STLB), the
caller's page, next-page prefetch, the page-walk caches, and arm64's
contiguous bit (16 PTEs that one TLB entry may hold).

Geometries (entries, ways), with their sources:

Intel Skylake (client and server cores): Intel 64 and IA-32 Architectures
Optimization Reference Manual, 248966-045 (February 2022), Table 2-15:
L1 ITLB 4 KiB 128 entries 8-way; L1 ITLB 2 MiB 8 entries per thread (CPUID
leaf 2 descriptor 0x76: fully associative); STLB shared by 4 KiB and 2 MiB
pages, 1536 entries, 12-way.

AMD Zen 2: Software Optimization Guide for AMD Family 17h Models 30h and
Greater, via https://7-cpu.com/cpu/Zen2.html: L1 ITLB 64 entries, fully
associative, all page sizes; L2 ITLB 512 entries, 8-way, 4 KiB and 2 MiB
pages.

Arm Cortex-A76: Arm Cortex-A76 Core Technical Reference Manual (Arm DDI
100798), A5.2 "TLB organization": instruction L1 TLB 48 entries, fully
associative, caching 4KB, 16KB, 64KB, 2MB and 32MB granules; L2 TLB shared
by instructions and data, 1280 entries, 5-way set associative (256 sets),
storing 4KB, 16KB, 64KB, 2MB, 32MB, 512MB and 1GB mappings. The Neoverse
N1 Core Technical Reference Manual (Arm 100616) gives the N1 the same
TLBs. A76 and N1 are the cores of e.g. AWS Graviton2 and Ampere Altra.

Which geometries a run is modelled with follows its guest's architecture
(ARCH_GEOMETRIES): the x86 cores for x86-64, the Arm core for arm64.
"""

FNV_BASIS = 0xcbf29ce484222325
FNV_PRIME = 0x100000001b3
M64 = (1 << 64) - 1
PAGE = 4096
PMD = 2 << 20
# The distance of bench_itlb's stubs (ROTHP_STUB_SIZE), whatever the page.
STUB = 4096

# name: (title, L1 levels by page size, L2 (entries, ways) shared by both)
# An L1 spec is (entries, ways) per page size; the same tuple object for
# both sizes means one array holds both.
_ZEN2_L1 = (64, 64)
_A76_L1 = (48, 48)
GEOMETRIES = {
    'skl': ('Intel Skylake', {'4k': (128, 8), '2m': (8, 8)}, (1536, 12)),
    'zen2': ('AMD Zen 2', {'4k': _ZEN2_L1, '2m': _ZEN2_L1}, (512, 8)),
    'a76': ('Arm Cortex-A76', {'4k': _A76_L1, '2m': _A76_L1}, (1280, 5)),
}
# The geometries of a guest architecture (make's ARCH), in report order.
ARCH_GEOMETRIES = {
    'x86_64': ('skl', 'zen2'),
    'arm64': ('a76',),
}
DEFAULT_ARCH = 'x86_64'
# The base page sizes of each architecture's kernels.
PAGE_SIZES = {'x86_64': (4096,), 'arm64': (4096, 16384, 65536)}
# uname -m, QEMU's and make's names of the architectures.
ARCH_NAMES = {'x86_64': 'x86_64', 'amd64': 'x86_64', 'x86': 'x86_64',
              'arm64': 'arm64', 'aarch64': 'arm64'}


def arch_name(name):
    """make's name (x86_64, arm64) of an architecture as uname -m, QEMU
    (qemu-system-NAME) or make names it; None when it is none of those."""
    return ARCH_NAMES.get(name.lower().removeprefix('qemu-system-'))


def pmd_size(page):
    """The PMD block of a base page size: a page-sized table of 8-byte
    entries maps page / 8 pages (2 MiB at 4 KiB, 32 MiB at 16 KiB, 512 MiB
    at 64 KiB)."""
    return page * (page // 8)


def size_label(size):
    """4K, 2M, 32M, ...: a page size as the tables name it."""
    return f'{size >> 20}M' if size >= 1 << 20 else f'{size >> 10}K'


def splitmix64(state):
    state = (state + 0x9e3779b97f4a7c15) & M64
    z = state
    z = ((z ^ (z >> 30)) * 0xbf58476d1ce4e5b9) & M64
    z = ((z ^ (z >> 27)) * 0x94d049bb133111eb) & M64
    return state, z ^ (z >> 31)


def cycle_perm(seed, n):
    """next[] of a random cyclic permutation, as textprog's cycle_perm()."""
    nxt = list(range(n))
    state = seed & M64
    for i in range(n - 1, 0, -1):
        state, r = splitmix64(state)
        j = r % i
        nxt[i], nxt[j] = nxt[j], nxt[i]
    return nxt


def perm_hash(nxt):
    """rothp_hash() of next[] as the guest's little-endian uint32_t array."""
    h = FNV_BASIS
    for v in nxt:
        for b in v.to_bytes(4, 'little'):
            h = ((h ^ b) * FNV_PRIME) & M64
    return h


class SetAssoc:
    """entries/ways sets, LRU; keys are (page size, page number)."""

    def __init__(self, entries, ways):
        self.nsets = entries // ways
        self.ways = ways
        self.sets = [[] for _ in range(self.nsets)]

    def access(self, key):
        s = self.sets[key[1] % self.nsets]
        if key in s:
            if s[-1] != key:
                s.remove(key)
                s.append(key)
            return True
        if len(s) >= self.ways:
            del s[0]
        s.append(key)
        return False


class TwoLevel:
    def __init__(self, geometry):
        _, l1, l2 = GEOMETRIES[geometry]
        arrays = {}
        self.l1 = {}
        for size, spec in l1.items():
            if id(spec) not in arrays:
                arrays[id(spec)] = SetAssoc(*spec)
            self.l1[size] = arrays[id(spec)]
        self.l2 = SetAssoc(*l2)

    def access(self, key):
        """0: L1 hit, 1: L1 miss, L2 hit, 2: page walk."""
        if self.l1[key[0]].access(key):
            return 0
        return 1 if self.l2.access(key) else 2


def page_keys(base, pages, block_map, page=PAGE):
    """The TLB key of each stub of the span: its PMD block (2 MiB at 4 KiB
    pages) when that block is 'H' in block_map, else its page."""
    pmd = pmd_size(page)
    keys = []
    for i in range(pages):
        addr = base + i * STUB
        blk = (addr - base) // pmd
        if blk < len(block_map) and block_map[blk] == 'H':
            keys.append(('2m', addr // pmd))
        else:
            keys.append(('4k', addr // page))
    return keys


def model_run(seed, pages, base, block_map, geometries=GEOMETRIES, want_hash=None, page=PAGE):
    """Model one run of pages stubs: warm up with one full cycle, count over
    the next. page is the guest's base page size, block_map has one letter
    per PMD block of it (pmd_size()).

    Returns {'translations': distinct pages, geometry: {'l1': misses per
    1000 calls, 'l2': walks per 1000 calls}}. The cycle is periodic, so the
    second cycle is the steady state the guest timed.
    """
    nxt = cycle_perm(seed, pages)
    if want_hash is not None and perm_hash(nxt) != want_hash:
        raise ValueError(f'order of seed {seed} over {pages} pages does not hash '
                         f'to the guest\'s {want_hash:016x}')
    keys = page_keys(base, pages, block_map, page)
    seq = []
    cur = 0
    for _ in range(pages):
        seq.append(keys[cur])
        cur = nxt[cur]
    out = {'translations': len(set(keys))}
    for g in geometries:
        tlb = TwoLevel(g)
        for k in seq:
            tlb.access(k)
        l1 = l2 = 0
        for k in seq:
            r = tlb.access(k)
            l1 += r >= 1
            l2 += r == 2
        out[g] = {'l1': 1000.0 * l1 / pages, 'l2': 1000.0 * l2 / pages}
    return out
