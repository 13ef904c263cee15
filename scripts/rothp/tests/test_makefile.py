# SPDX-License-Identifier: GPL-2.0
"""Tests of the Makefile's own list of targets: `make help` names every
target a user runs, and only targets that exist."""
import os
import re
import unittest

TOP = os.path.dirname(os.path.dirname(os.path.dirname(os.path.dirname(os.path.abspath(__file__)))))
MAKEFILE = os.path.join(TOP, 'Makefile')
# A rule's first line: TARGET: PREREQUISITES (not a variable's :=).
RULE = re.compile(r'^([a-z][\w-]*):(?!=)', re.M)
# In help's lines: "make TARGET" or "make TARGET | TARGET | ...".
HELP_NAMES = re.compile(r"'\s+make ([\w-]+(?: \| [\w-]+)*)")


def read_makefile():
    with open(MAKEFILE) as f:
        return f.read()


def phony(text):
    """The targets .PHONY lists, its continuation lines joined."""
    m = re.search(r'^\.PHONY:((?:.*\\\n)*.*)$', text, re.M)
    return set(m.group(1).replace('\\\n', ' ').split())


def help_targets(text):
    """The targets the help recipe names."""
    recipe = text[text.index('\nhelp:'):]
    recipe = recipe[:recipe.index('\n\n')]
    return {t for m in HELP_NAMES.finditer(recipe) for t in m.group(1).split(' | ')}


class HelpTest(unittest.TestCase):
    def setUp(self):
        self.text = read_makefile()
        self.rules = set(RULE.findall(self.text))

    def test_phony_are_the_rules(self):
        self.assertEqual(phony(self.text), self.rules)

    def test_help_names_rules(self):
        self.assertEqual(help_targets(self.text) - self.rules, set())

    def test_every_rule_in_help(self):
        self.assertEqual(self.rules - help_targets(self.text) - {'help'}, set())


if __name__ == '__main__':
    unittest.main()
