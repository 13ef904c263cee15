# SPDX-License-Identifier: GPL-2.0
"""Unit tests of the rothp package: "rothp-host selftest" runs them. They
build their fixtures, made-up run directories, in temporary directories;
none of them is a result."""
