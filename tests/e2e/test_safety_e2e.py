#!/usr/bin/env python3
"""Hostile input end to end: command lines, result files and output paths.

Every case here is a probe that once crashed, hung, clobbered a file or gave a
wrong answer. Each must now end with one `fabricbench: error:` line and the
documented exit code (or, for accepted input, a correct and safe output).
"""
import argparse
import copy
import json
import os
import stat
import subprocess
import sys
import tempfile
import unittest

ARGS = None


def run(*args, timeout=120, **kw):
    return subprocess.run([ARGS.binary, *args], capture_output=True, text=True, timeout=timeout, **kw)


def mpirun(np_, *args, timeout=120):
    cmd = [ARGS.mpirun, "--allow-run-as-root", "--oversubscribe", "--bind-to", "none", "-q", "-np", str(np_),
           ARGS.binary, *args]
    return subprocess.run(cmd, capture_output=True, text=True, timeout=timeout)


def golden(name):
    with open(os.path.join(ARGS.golden, name), encoding="utf-8") as f:
        return json.load(f)


class OneLine:
    def assert_one_line(self, proc, code, pattern):
        self.assertEqual(proc.returncode, code, proc.stdout + proc.stderr)
        lines = [l for l in proc.stderr.splitlines() if l.strip()]
        self.assertEqual(len(lines), 1, proc.stderr)
        self.assertTrue(lines[0].startswith("fabricbench: error: "), lines[0])
        self.assertRegex(lines[0], pattern)


class CommandLine(unittest.TestCase, OneLine):
    CASES = [
        (["sweep", "--sizes", ""], r"--sizes: empty value"),
        (["sweep", "--ops", ""], r"--ops: empty value"),
        (["sweep", "--json", ""], r"--json: empty value"),
        (["sweep", "--csv", ""], r"--csv: empty value"),
        (["report", "x.json", "--html", ""], r"--html: empty value"),
        (["scale", "--overlap", "nan"], r"--overlap nan: must be between 0 and 1"),
        (["sweep", "--price-per-gpu-hour", "inf"], r"--price-per-gpu-hour inf: must be a finite price"),
        (["sweep", "--price-per-gpu-hour", "-5"], r"--price-per-gpu-hour -5: must be a finite price"),
        (["report", "x.json", "--price-per-node-hour", "nan"], r"--price-per-node-hour nan: must be a finite price"),
        (["scale", "--nic-gbit-per-node", "nan"], r"--nic-gbit-per-node nan: must be above 0"),
        (["sweep", "--timeout", "1e309"], r"--timeout inf: must be above 0 and at most 604800 seconds"),
        (["sweep", "--min-time-ms", "inf"], r"--min-time-ms inf: must be a finite number above 0"),
        (["scale", "--params", "1e30", "--compute-ms", "1"], r"--params 1e\+30: the gradients would be above"),
        (["scale", "--params", "0.0001", "--compute-ms", "1"], r"--params 0.0001: must be a whole number"),
        (["scale", "--compute-ms", "inf", "--grad-bytes", "1M"], r"--compute-ms inf: must be above 0"),
        (["sweep", "-f", "1.0000001"], r"-f/--step-factor 1.0000001: the ladder from 8 to 64M would have more than"),
        (["sweep", "-f", "inf"], r"-f/--step-factor inf must be a finite number above 1"),
        (["sweep", "-e", "18446744073709551612"], r"-e/--max-bytes 18446744073709551612: above the largest"),
        (["sweep", "--iters", "0"], r"--iters 0: must be 1 or above"),
        (["sweep", "--check", "--no-check"], r"--check: cannot be combined with --no-check"),
    ]

    def test_each_bad_command_line_exits_2_before_running(self):
        for args, pattern in self.CASES:
            with self.subTest(args=args):
                self.assert_one_line(run(*args, timeout=30), 2, pattern)


if __name__ == "__main__":
    parser = argparse.ArgumentParser()
    parser.add_argument("--binary", required=True)
    parser.add_argument("--mpirun", default="")
    parser.add_argument("--golden", required=True)
    ARGS, rest = parser.parse_known_args()
    unittest.main(argv=[sys.argv[0], "-v", *rest])
