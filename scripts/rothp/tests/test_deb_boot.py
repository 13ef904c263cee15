# SPDX-License-Identifier: GPL-2.0
"""Tests of scripts/deb-boot.sh on packages made here with dpkg-deb in a
scratch build directory, no kernel built or booted: its refusals, each
naming what is wrong and what to run, and its verdict on what the guest
wrote, with a stand-in for QEMU that writes given check lines."""
import os
import shutil
import subprocess
import tempfile
import unittest

TOP = os.path.dirname(os.path.dirname(os.path.dirname(os.path.dirname(os.path.abspath(__file__)))))
KREL = '6.12.118-rothp'


def fake_image(outdir, arch='amd64', files=(), version='6.12.118-1+rothp', text='test\n'):
    """A linux-image package of KREL for arch holding files (paths under
    /, each holding text), in outdir: its path."""
    root = tempfile.mkdtemp()
    try:
        os.makedirs(os.path.join(root, 'DEBIAN'))
        with open(os.path.join(root, 'DEBIAN', 'control'), 'w') as f:
            f.write(f'Package: linux-image-{KREL}\nVersion: {version}\n'
                    f'Architecture: {arch}\nMaintainer: test <test@localhost>\n'
                    'Description: a test package\n')
        for path in files:
            full = os.path.join(root, path.lstrip('/'))
            os.makedirs(os.path.dirname(full), exist_ok=True)
            with open(full, 'w') as f:
                f.write(text)
        deb = os.path.join(outdir, f'linux-image-{KREL}_{version}_{arch}.deb')
        subprocess.run(['dpkg-deb', '--root-owner-group', '-Zgzip', '--build', root, deb],
                       check=True, capture_output=True)
        return deb
    finally:
        shutil.rmtree(root)


@unittest.skipIf(shutil.which('dpkg-deb') is None, 'dpkg-deb is missing: the tests make packages')
class TestRefusals(unittest.TestCase):
    def setUp(self):
        self.build = tempfile.mkdtemp()
        self.out = os.path.join(self.build, 'deb', 'test')
        os.makedirs(self.out)

    def tearDown(self):
        shutil.rmtree(self.build)

    def run_boot(self):
        # Only what the script needs from the caller: nothing of the
        # project's variables (ARCH, PREEMPT, ROTHP_*) leaks in.
        env = {k: os.environ[k] for k in ('PATH', 'HOME', 'LANG') if k in os.environ}
        env['BUILD'] = self.build
        p = subprocess.run(['bash', os.path.join(TOP, 'scripts', 'deb-boot.sh'), 'test'],
                           env=env, capture_output=True, text=True, timeout=120)
        return p.returncode, p.stderr

    def test_no_package(self):
        rc, err = self.run_boot()
        self.assertEqual(rc, 1)
        self.assertIn('no linux-image package in', err)
        self.assertIn('run make deb first', err)

    def test_several_packages(self):
        fake_image(self.out)
        fake_image(self.out, version='6.12.118-2+rothp')
        rc, err = self.run_boot()
        self.assertEqual(rc, 1)
        self.assertIn('several linux-image packages in', err)
        self.assertIn('run make deb again', err)

    def test_other_architecture(self):
        fake_image(self.out, arch='arm64')
        rc, err = self.run_boot()
        self.assertEqual(rc, 1)
        self.assertIn(f'linux-image-{KREL}_6.12.118-1+rothp_arm64.deb is for arm64: '
                      'deb-boot.sh boots amd64 packages only', err)

    def test_no_kernel(self):
        fake_image(self.out, files=[f'/boot/config-{KREL}'])
        rc, err = self.run_boot()
        self.assertEqual(rc, 1)
        self.assertIn(f'lacks ./boot/vmlinuz-{KREL} or ./boot/config-{KREL}', err)


# A stand-in for qemu-system-x86_64: writes $STUB_CHECKS (printf %b) to
# the file of the second -serial, as the guest's /init would.
STUB_QEMU = """#!/bin/bash
n=0
while [ $# -gt 0 ]; do
	if [ "$1" = -serial ]; then
		n=$((n + 1))
		[ $n = 2 ] && out=${2#file:}
		shift
	fi
	shift
done
printf '%b' "$STUB_CHECKS" >"$out"
"""

GOOD = [f'check release {KREL}', 'check enabled [always] madvise never',
        'check prompt_collapse 1', 'check elf_text_thp_align 0',
        f'check status PID 1 (hugetext): kernel {KREL}, THP enabled=always, '
        f'CONFIG_READ_ONLY_THP_FOR_FS yes (/boot/config-{KREL})', 'check done']


@unittest.skipIf(shutil.which('dpkg-deb') is None or shutil.which('cc') is None,
                 'dpkg-deb or cc is missing: the tests make packages and build hugetext')
class TestVerdict(unittest.TestCase):
    """What deb-boot.sh makes of the guest's check lines. One scratch build
    directory for the class: hugetext is built into it once."""
    @classmethod
    def setUpClass(cls):
        cls.build = tempfile.mkdtemp()
        cls.bin = os.path.join(cls.build, 'stub-bin')
        os.makedirs(cls.bin)
        for name, text in (('qemu-system-x86_64', STUB_QEMU), ('busybox', '#!/bin/sh\n')):
            path = os.path.join(cls.bin, name)
            with open(path, 'w') as f:
                f.write(text)
            os.chmod(path, 0o755)
        cls.n = 0

    @classmethod
    def tearDownClass(cls):
        shutil.rmtree(cls.build)

    def boot(self, lines):
        """deb-boot.sh on a package whose config sets THP always, the
        guest writing lines: (exit status, its output and errors)."""
        TestVerdict.n += 1
        name = f'test{self.n}'
        out = os.path.join(self.build, 'deb', name)
        os.makedirs(out)
        fake_image(out, files=[f'/boot/vmlinuz-{KREL}', f'/boot/config-{KREL}'],
                   text='CONFIG_TRANSPARENT_HUGEPAGE_ALWAYS=y\n')
        env = {k: os.environ[k] for k in ('HOME', 'LANG') if k in os.environ}
        env.update(PATH=self.bin + os.pathsep + os.environ['PATH'], BUILD=self.build,
                   STUB_CHECKS=''.join(line + '\\r\\n' for line in lines))
        p = subprocess.run(['bash', os.path.join(TOP, 'scripts', 'deb-boot.sh'), name],
                           env=env, capture_output=True, text=True, timeout=300)
        return p.returncode, p.stdout + p.stderr

    def test_all_checks_hold(self):
        rc, err = self.boot(GOOD)
        self.assertEqual(rc, 0, err)
        self.assertIn(f'{KREL} booted: THP enabled [always], prompt_collapse 1', err)

    def test_init_did_not_finish(self):
        rc, err = self.boot(GOOD[:-1])
        self.assertEqual(rc, 1)
        self.assertIn("the guest's /init did not finish its checks", err)

    def test_other_release(self):
        rc, err = self.boot(['check release 6.1.0-28-amd64'] + GOOD[1:])
        self.assertEqual(rc, 1)
        self.assertIn(f"reported release '6.1.0-28-amd64', not {KREL}", err)

    def test_thp_default_not_the_configs(self):
        rc, err = self.boot([GOOD[0], 'check enabled always [madvise] never'] + GOOD[2:])
        self.assertEqual(rc, 1)
        self.assertIn('not [always] as the packaged config sets', err)

    def test_no_knob(self):
        missing = 'cat: can\'t open \'/sys/kernel/mm/transparent_hugepage/khugepaged/prompt_collapse\''
        rc, err = self.boot(GOOD[:2] + [f'check prompt_collapse {missing}'] + GOOD[3:])
        self.assertEqual(rc, 1)
        self.assertIn(f'no khugepaged/prompt_collapse in {KREL}', err)

    def test_option_not_found(self):
        rc, err = self.boot(GOOD[:4] + [GOOD[4].replace('yes (/boot', 'unknown (/boot')] + GOOD[5:])
        self.assertEqual(rc, 1)
        self.assertIn('hugetext status did not find CONFIG_READ_ONLY_THP_FOR_FS=y', err)


if __name__ == '__main__':
    unittest.main()
