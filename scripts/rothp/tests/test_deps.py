# SPDX-License-Identifier: GPL-2.0
"""Tests of scripts/deps.sh and scripts/fetch.sh that change nothing on the
machine: an older pinned kernel source than the one installed is not
installed over it without ALLOW_DOWNGRADE=1, and fetch names what to run
when the pinned version is missing."""
import os
import subprocess
import unittest

TOP = os.path.dirname(os.path.dirname(os.path.dirname(os.path.dirname(os.path.abspath(__file__)))))
PKG = 'linux-source-6.12'


def installed():
    """The installed version of the kernel source package, or None."""
    r = subprocess.run(['dpkg-query', '-W', '-f=${Status} ${Version}', PKG],
                       capture_output=True, text=True)
    prefix = 'install ok installed '
    return r.stdout[len(prefix):] if r.stdout.startswith(prefix) else None


def run(script, *args, **env):
    e = dict(os.environ, **env)
    e.pop('ALLOW_DOWNGRADE', None)
    p = subprocess.run(['bash', os.path.join(TOP, 'scripts', script), *args], env=e,
                       capture_output=True, text=True)
    return p.returncode, p.stderr


class TestGroups(unittest.TestCase):
    """A word of DEPS that names nothing stops deps.sh before it installs
    anything, saying which word."""
    def test_unknown_group(self):
        rc, err = run('deps.sh', 'bench', 'benc')
        self.assertEqual(rc, 1)
        self.assertIn("DEPS: 'benc' is not bench, deb or matrix [CONFIG...]", err)

    def test_configuration_only_after_matrix(self):
        rc, err = run('deps.sh', 'deb', 'arm64')
        self.assertEqual(rc, 1)
        self.assertIn("'arm64' is not bench, deb or matrix", err)

    def test_unknown_configuration(self):
        rc, err = run('deps.sh', 'matrix', 'arm64', 'foo')
        self.assertEqual(rc, 1)
        self.assertIn("'foo' is not a configuration of make matrix (x86_64 ", err)


@unittest.skipIf(installed() is None, f'{PKG} is not installed: make deps installs it')
class TestKernelSource(unittest.TestCase):
    def test_no_silent_downgrade(self):
        rc, err = run('deps.sh', KERNEL_DEB_VERSION='6.12.1-1')
        self.assertEqual(rc, 1)
        self.assertIn(f'{PKG} {installed()} is installed, newer than the pinned 6.12.1-1', err)
        self.assertIn('ALLOW_DOWNGRADE=1', err)

    def test_fetch_says_what_to_run(self):
        rc, err = run('fetch.sh', KERNEL_DEB_VERSION='6.12.1-1')
        self.assertEqual(rc, 1)
        self.assertIn(f'{PKG} 6.12.1-1 is not installed (installed: {installed()}): '
                      "run 'sudo make deps'", err)


if __name__ == '__main__':
    unittest.main()
