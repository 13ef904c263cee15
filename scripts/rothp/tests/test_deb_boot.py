# SPDX-License-Identifier: GPL-2.0
"""Tests of scripts/deb-boot.sh's refusals, on packages made here with
dpkg-deb in a scratch build directory: no kernel is built or booted. A
refusal names what is wrong and what to run."""
import os
import shutil
import subprocess
import tempfile
import unittest

TOP = os.path.dirname(os.path.dirname(os.path.dirname(os.path.dirname(os.path.abspath(__file__)))))
KREL = '6.12.118-rothp'


def fake_image(outdir, arch='amd64', files=(), version='6.12.118-1+rothp'):
    """A linux-image package of KREL for arch holding files (paths under
    /), in outdir: its path."""
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
                f.write('test\n')
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


if __name__ == '__main__':
    unittest.main()
