#!/usr/bin/env python3
"""The man page matches the binary and renders cleanly.

Every subcommand that `fabricbench --help` lists has an entry under
SUBCOMMANDS and the page lists no other; the page carries the project's
version; `man --warnings` renders it without a warning.

usage: test_man_page.py --binary FABRICBENCH --page fabricbench.1 --version X.Y.Z
"""
import argparse
import os
import re
import shutil
import subprocess
import sys
import unittest

ARGS = None


class ManPage(unittest.TestCase):
    @classmethod
    def setUpClass(cls):
        with open(ARGS.page, encoding="utf-8") as f:
            cls.page = f.read()

    def section(self, name):
        match = re.search(rf"^\.SH {name}\n(.*?)(?=^\.SH )", self.page, re.M | re.S)
        self.assertIsNotNone(match, f"no {name} section")
        return match.group(1)

    def test_subcommands_match_help(self):
        help_text = subprocess.run([ARGS.binary, "--help"], capture_output=True, text=True, check=True).stdout
        listed = help_text.split("Subcommands:", 1)[1]
        from_help = re.findall(r"^  (\w+)\s", listed, re.M)
        self.assertIn("run", from_help)
        from_page = re.findall(r"^\.TP\n\.B (\w+)$", self.section("SUBCOMMANDS"), re.M)
        self.assertEqual(sorted(from_page), sorted(from_help))

    def test_version_and_exit_codes(self):
        self.assertRegex(self.page, re.compile(rf'^\.TH FABRICBENCH 1 "" "fabricbench {re.escape(ARGS.version)}"', re.M))
        codes = re.findall(r"^\.TP\n\.B (\d)$", self.section("EXIT STATUS"), re.M)
        self.assertEqual(codes, ["0", "1", "2", "3", "4"])

    @unittest.skipIf(shutil.which("man") is None, "man is not installed")
    def test_renders_without_warnings(self):
        proc = subprocess.run(["man", "--warnings", "-l", "-P", "cat", ARGS.page], capture_output=True, text=True,
                              env={**os.environ, "MANWIDTH": "80", "LC_ALL": "C.UTF-8"})
        self.assertEqual(proc.returncode, 0, proc.stderr)
        self.assertEqual(proc.stderr, "")
        self.assertIn("EXIT STATUS", proc.stdout)


if __name__ == "__main__":
    parser = argparse.ArgumentParser()
    for name in ("--binary", "--page", "--version"):
        parser.add_argument(name, required=True)
    ARGS, rest = parser.parse_known_args()
    unittest.main(argv=[sys.argv[0], "-v", *rest])
