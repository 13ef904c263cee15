# SPDX-License-Identifier: GPL-2.0
"""Tests of itrace and bench/itrace.c, on made-up traces: reduce keeps one
record per change of page and the instruction count; replay counts what
tlb_model's TwoLevel counts for the same keys, in every geometry (the x86
cores and the Arm Cortex-A76), and in those it is given only; the traced
pages get the guest's keys (2 MiB where the guest had the block
PMD-mapped; 16 KiB pages and 32 MiB blocks on a 16 KiB guest); the trace
says the architecture of its code; the REALMAP and maps parsers."""
import os
import random
import struct
import subprocess
import tempfile
import unittest

from rothp import itrace, tlb_model

TOP = os.path.dirname(os.path.dirname(os.path.dirname(os.path.dirname(
    os.path.abspath(__file__)))))
PMD = tlb_model.PMD


def build(tmp):
    out = os.path.join(tmp, 'itrace')
    subprocess.run(['cc', '-O2', '-Wall', '-Wextra', '-Werror', '-o', out,
                    os.path.join(TOP, 'bench', 'itrace.c')], check=True)
    return out


class TestItrace(unittest.TestCase):
    def setUp(self):
        self.tmp = tempfile.TemporaryDirectory()
        self.bin = build(self.tmp.name)

    def tearDown(self):
        self.tmp.cleanup()

    def path(self, name):
        return os.path.join(self.tmp.name, name)

    def test_reduce(self):
        log = ('==1== Lackey\nSB 04001000\nSB 04001010\nSB 04002000\nSB 04001ff0\n'
               'SB 04001000\n==1==   guest instrs:  1,234\n')
        r = subprocess.run([self.bin, 'reduce', self.path('t.bin')], input=log,
                           capture_output=True, text=True, check=True)
        self.assertEqual(r.stdout.split(), ['instrs', '1234', 'sbs', '5', 'records', '3'])
        with open(self.path('t.bin'), 'rb') as f:
            data = f.read()
        self.assertEqual(struct.unpack('<3Q', data), (0x4001, 0x4002, 0x4001))

    def test_reduce_refuses_other_logs(self):
        r = subprocess.run([self.bin, 'reduce', self.path('t.bin')], input='hello\n',
                           capture_output=True, text=True)
        self.assertEqual(r.returncode, 1)
        self.assertIn('guest instrs', r.stderr)

    def test_replay_matches_the_model(self):
        rnd = random.Random(5)
        pages = [rnd.randrange(0x1000, 0x1000 + 6000) for _ in range(40000)]
        # Every page of the first 1024 pages maps to two 2 MiB blocks.
        huge = {p: ((0x7f00000 + (p - 0x1000) * 4096) // PMD) << 1 | 1
                for p in range(0x1000, 0x1400)}
        with open(self.path('t.bin'), 'wb') as f:
            f.write(struct.pack(f'<{len(pages)}Q', *pages))
        with open(self.path('pages'), 'w') as f:
            f.write(''.join(f'{p:x} {k:x}\n' for p, k in huge.items()))
        r = subprocess.run([self.bin, 'replay', self.path('t.bin'), self.path('pages')] +
                           itrace.geometry_specs(), capture_output=True, text=True, check=True)
        got = {w[0]: (int(w[2]), int(w[4]), int(w[6]))
               for w in (line.split() for line in r.stdout.split('\n')) if w}
        self.assertEqual(set(got), {'skl', 'zen2', 'a76'})
        keys, last = [], None
        for p in pages:
            k = huge.get(p, p << 1)
            if k != last:
                keys.append(('2m' if k & 1 else '4k', k >> 1))
            last = k
        for g in tlb_model.GEOMETRIES:
            tlb = tlb_model.TwoLevel(g)
            res = [tlb.access(k) for k in keys]
            self.assertEqual(got[g], (len(keys), sum(x >= 1 for x in res),
                                      sum(x == 2 for x in res)), g)

    def test_replay_of_some_geometries(self):
        # 49 pages cycled: the A76's 48-entry L1 misses every time after the
        # first round, its L2 (256 sets of 5) holds them all.
        pages = list(range(0x1000, 0x1000 + 49)) * 3
        with open(self.path('t.bin'), 'wb') as f:
            f.write(struct.pack(f'<{len(pages)}Q', *pages))
        with open(self.path('pages'), 'w') as f:
            f.write('')
        r = subprocess.run([self.bin, 'replay', self.path('t.bin'), self.path('pages')] +
                           itrace.geometry_specs(('a76',)), capture_output=True, text=True,
                           check=True)
        self.assertEqual(r.stdout, f'a76 accesses {3 * 49} l1_misses {3 * 49} walks 49\n')

    def test_page_keys(self):
        traced = itrace.text_maps(
            '00631000-00a00000 r-xp 00231000 fe:00 1 /usr/lib/gcc/x/12/cc1\n'
            '04001000-04003000 r-xp 00001000 fe:00 2 /usr/lib/x/libfoo.so.1.2.3\n'
            '05000000-05001000 rw-p 00000000 fe:00 2 /usr/lib/x/libfoo.so.1.2.3\n')
        self.assertEqual(len(traced), 2)
        guest = itrace.realmaps(
            'REALMAP always cc1 /mnt/ext4/gcc/cc1 0x555555831000 0x5555569f5000 0x231000 8 1 '
            '0x400000\n'
            'REALMAP run cc1 /mnt/ext4/gcc/cc1 0x1 0x2 0x0 8 8 -\n'
            'REALMAP always cc1 /mnt/ext4/gcc/lib/libfoo.so.1 0x7f0000001000 0x7f0000003000 '
            '0x1000 0 0 -\n')
        self.assertEqual(set(guest), {'cc1', 'libfoo.so.1'})
        names = {os.path.realpath('/usr/lib/x/libfoo.so.1.2.3'): 'libfoo.so.1'}
        keys = dict(itrace.page_keys(traced, guest, names))
        # cc1's offset 0x400000 is the PMD-mapped block, at the guest's address.
        self.assertEqual(keys[0x800], (0x555555a00000 // PMD) << 1 | 1)
        self.assertEqual(keys[0x7ff], (0x5555559ff000 // 4096) << 1)
        self.assertEqual(keys[0x4001], (0x7f0000001000 // 4096) << 1)
        self.assertEqual(len(keys), (0xa00000 - 0x631000) // 4096 + 2)

    def test_eligible_map(self):
        # cc1 not a PIE: text from 0x431000, file offset 0x31000, to 0x1600000;
        # its whole aligned blocks are 0x600000..0x1600000, 8 of them, one
        # of which (its last) bench_real left out as ending past EOF.
        guest = itrace.realmaps(
            'REALMAP always cc1 /mnt/ext4/gcc/cc1 0x431000 0x1600000 0x31000 7 2 '
            '0x200000,0x400000\n'
            'REALMAP always cc1 /mnt/ext4/gcc/lib/libc.so.6 0x7f0000028000 0x7f000019d000 '
            '0x28000 0 0 -\n'
            'REALMAP always cc1 /mnt/ext4/x/skewed 0x7f0000401000 0x7f0000a01000 0x0 0 0 -\n')
        bound = itrace.eligible_map(guest)
        self.assertEqual(sorted(bound['cc1']['huge']), [0x200000 * i for i in range(1, 8)])
        self.assertEqual(bound['libc.so.6']['huge'], set())
        # Not congruent: no block at an aligned address is at an aligned offset.
        self.assertEqual(bound['skewed']['huge'], set())
        self.assertEqual(guest['cc1']['huge'], {0x200000, 0x400000})	# left as it was
        self.assertEqual(bound['cc1']['start'], 0x431000)
        # A file bench_real could not look at (-1): what the guest had huge.
        guest['cc1']['eligible'] = -1
        self.assertEqual(itrace.eligible_map(guest)['cc1']['huge'], {0x200000, 0x400000})

    def test_page_keys_16k(self):
        # A guest of 16 KiB pages: keys in 16 KiB pages and 32 MiB blocks.
        traced = itrace.text_maps('00400000-00410000 r-xp 02000000 fe:00 1 /x/cc1\n'
                                  '00600000-00604000 r-xp 04000000 fe:00 1 /x/cc1\n')
        guest = itrace.realmaps('REALMAP always cc1 /mnt/ext4/gcc/cc1 0xaaaa00000000 '
                                '0xaaaa08000000 0x0 4 1 0x2000000\n')
        keys = dict(itrace.page_keys(traced, guest, {}, page=16384))
        self.assertEqual(keys[0x400], (0xaaaa02000000 // (32 << 20)) << 1 | 1)
        self.assertEqual(keys[0x40f], keys[0x400])
        self.assertEqual(keys[0x600], (0xaaaa04000000 // 16384) << 1)
        self.assertEqual(keys[0x603], keys[0x600])

    def test_trace_arch(self):
        self.assertIsNone(itrace.trace_arch(self.tmp.name))
        for machine, arch in (('x86_64', 'x86_64'), ('aarch64', 'arm64')):
            with open(self.path(itrace.ARCH), 'w') as f:
                f.write(machine + '\n')
            self.assertEqual(itrace.trace_arch(self.tmp.name), arch)

    def test_ldd_names(self):
        names = itrace.ldd_names('\tlinux-vdso.so.1 (0x7ff)\n'
                                 '\tlibz.so.1 => /lib/x/libz.so.1 (0x7f)\n'
                                 '\t/lib64/ld-linux-x86-64.so.2 (0x7f)\n')
        self.assertIn('libz.so.1', names.values())
        self.assertIn('ld-linux-x86-64.so.2', names.values())


if __name__ == '__main__':
    unittest.main()
