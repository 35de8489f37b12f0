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


class Outputs(unittest.TestCase, OneLine):
    def setUp(self):
        self.dir = tempfile.TemporaryDirectory()
        self.input = os.path.join(self.dir.name, "in.json")
        with open(self.input, "w", encoding="utf-8") as f:
            json.dump(golden("run_a.json"), f)
        with open(self.input, encoding="utf-8") as f:
            self.original = f.read()

    def tearDown(self):
        self.dir.cleanup()

    def test_report_refuses_to_overwrite_its_input(self):
        for flag in ("--csv", "--html"):
            with self.subTest(flag=flag):
                self.assert_one_line(run("report", self.input, flag, self.input), 2, r"is an input of this report")
                with open(self.input, encoding="utf-8") as f:
                    self.assertEqual(f.read(), self.original)

    def test_report_refuses_one_file_for_two_outputs(self):
        out = os.path.join(self.dir.name, "out")
        self.assert_one_line(run("report", self.input, "--csv", out, "--html", out), 2, r"one file for two outputs")
        self.assertFalse(os.path.exists(out))

    def test_report_refuses_non_regular_targets(self):
        fifo = os.path.join(self.dir.name, "fifo")
        os.mkfifo(fifo)
        self.assert_one_line(run("report", self.input, "--csv", fifo), 2, r"--csv .*fifo: is a fifo, not a regular file")
        self.assertTrue(stat.S_ISFIFO(os.lstat(fifo).st_mode))
        self.assert_one_line(run("report", self.input, "--html", self.dir.name), 2, r"is a folder")

    def test_run_refuses_bad_targets_before_measuring(self):
        if not ARGS.mpirun:
            self.skipTest("built without MPI")
        fifo = os.path.join(self.dir.name, "fifo")
        os.mkfifo(fifo)
        same = os.path.join(self.dir.name, "same")
        cases = [
            (["--json", self.dir.name], r"--json .*: is a folder, not a regular file"),
            (["--csv", self.dir.name], r"--csv .*: is a folder, not a regular file"),
            (["--json", fifo], r"--json .*: is a fifo"),
            (["--json", same, "--csv", same], r"one file for two outputs"),
        ]
        for args, pattern in cases:
            with self.subTest(args=args):
                proc = mpirun(1, "sweep", "--transport", "mpi", "--sizes", "64", "--ops", "allreduce", *args)
                self.assert_one_line(proc, 2, pattern)
                self.assertNotIn("allreduce on", proc.stdout)  # refused before the run
        self.assertTrue(stat.S_ISFIFO(os.lstat(fifo).st_mode))
        self.assertFalse(os.path.exists(same))

    def test_result_files_leave_no_temporary_and_follow_no_planted_link(self):
        if not ARGS.mpirun:
            self.skipTest("built without MPI")
        victim = os.path.join(self.dir.name, "victim")
        with open(victim, "w", encoding="utf-8") as f:
            f.write("precious")
        target = os.path.join(self.dir.name, "r.json")
        # The old writer used "<target>.tmp.<pid>"; plant links for a range of pids.
        for pid in range(os.getpid() + 1, os.getpid() + 200):
            os.symlink(victim, f"{target}.tmp.{pid}")
        proc = mpirun(1, "sweep", "--transport", "mpi", "--sizes", "64", "--ops", "allreduce", "--json", target)
        self.assertEqual(proc.returncode, 0, proc.stderr)
        with open(victim, encoding="utf-8") as f:
            self.assertEqual(f.read(), "precious")
        with open(target, encoding="utf-8") as f:
            self.assertTrue(json.load(f)["status"]["complete"])
        left = [n for n in os.listdir(self.dir.name) if n.startswith(".r.json")]
        self.assertEqual(left, [])


if __name__ == "__main__":
    parser = argparse.ArgumentParser()
    parser.add_argument("--binary", required=True)
    parser.add_argument("--mpirun", default="")
    parser.add_argument("--golden", required=True)
    ARGS, rest = parser.parse_known_args()
    unittest.main(argv=[sys.argv[0], "-v", *rest])
