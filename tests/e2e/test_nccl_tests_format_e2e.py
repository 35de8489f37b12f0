#!/usr/bin/env python3
"""End-to-end tests of --format nccl-tests under mpirun.

Reads stdout the three ways scripts written for nccl-tests read it: busbw at a
fixed place from the end of each row, `grep "# Avg bus bandwidth"` (one line
per op here, each the mean busbw of that op's rows), and a strict regex of the
13 columns. Also NCCL_TESTS_MIN_BW above and below the measured bandwidth,
nccl-tests' -J and the unknown -F, and the start under an nccl-tests binary's
name.
"""
import argparse
import json
import os
import re
import subprocess
import sys
import tempfile
import unittest

ARGS = None

# nccl-tests' row: size count type redop root, then time algbw busbw #wrong
# out of place and the same in place.
NUM = r"(\d+(?:\.\d+)?(?:e[+-]\d+)?)"
ROW = re.compile(r"^\s*(\d+)\s+(\d+)\s+(\w+)\s+(\w+)\s+(-?\d+)"
                 rf"\s+{NUM}\s+{NUM}\s+{NUM}\s+(\d+|N/A)"
                 rf"\s+{NUM}\s+{NUM}\s+{NUM}\s+(\d+|N/A)\s*$")
# 1K, 4K, 16K, 64K.
SMALL = ["-b", "1K", "-e", "64K", "-f", "4", "--min-time-ms", "1", "--transport", "mpi"]


def mpirun(np_, *args, binary=None, env=None, timeout=300):
    cmd = [ARGS.mpirun, "--allow-run-as-root", "--oversubscribe", "--bind-to", "none", "-q", "-np", str(np_),
           binary or ARGS.binary, *args]
    full_env = dict(os.environ)
    full_env.pop("NCCL_TESTS_MIN_BW", None)
    full_env.update(env or {})
    return subprocess.run(cmd, capture_output=True, text=True, timeout=timeout, env=full_env)


def rows(stdout):
    return [l for l in stdout.splitlines() if l.strip() and not l.startswith("#")]


def blocks(stdout):
    """The lines of each op, from `# Collective test starting` to `concluded`."""
    found = {}
    current = None
    for line in stdout.splitlines():
        m = re.match(r"^# Collective test starting: (\S+)$", line)
        if m:
            current = m.group(1)
            found[current] = []
        elif line.startswith("# Collective test concluded:"):
            current = None
        elif current is not None:
            found[current].append(line)
    return found


class NcclTestsFormat(unittest.TestCase):
    def setUp(self):
        self.dir = tempfile.TemporaryDirectory()
        self.json = os.path.join(self.dir.name, "r.json")

    def tearDown(self):
        self.dir.cleanup()

    def check_parsers(self, np_):
        proc = mpirun(np_, "sweep", "--ops", "allreduce,allgather,broadcast", *SMALL, "--format", "nccl-tests",
                      "--json", self.json)
        self.assertEqual(proc.returncode, 0, proc.stderr)
        out = proc.stdout
        self.assertNotIn("\x1b", out)
        self.assertRegex(out, r"(?m)^# nThread 1 nGpus 1 minBytes 1024 maxBytes 65536 step: 4\(factor\) "
                              r"warmup iters: \d+ agg iters: 1 validation: 1 graph: 0$")
        with open(self.json, encoding="utf-8") as f:
            records = [r for r in json.load(f)["records"] if "busbw_gbs" in r]
        # Parser 3: every line that is not a comment is a 13-column row.
        body = rows(out)
        self.assertEqual(len(body), 3 * 4)
        for line in body:
            self.assertRegex(line, ROW)
            fields = line.split()
            self.assertEqual(len(fields), 13, line)
            # nccl-tests' widths: %12li size, then two spaces between columns.
            self.assertEqual(line[:12].strip(), fields[0])
            self.assertEqual(line[12:14], "  ")
        by_op = blocks(out)
        self.assertEqual(list(by_op), ["all_reduce_perf", "all_gather_perf", "broadcast_perf"])
        names = {"all_reduce_perf": "allreduce", "all_gather_perf": "allgather", "broadcast_perf": "broadcast"}
        for binary, lines in by_op.items():
            op = names[binary]
            op_rows = [l for l in lines if not l.startswith("#")]
            self.assertEqual(len(op_rows), 4)
            mine = sorted((r for r in records if r["op"] == op), key=lambda r: (r["bytes"], r["placement"]))
            for line in op_rows:
                f = line.split()
                self.assertEqual(f[4], "0" if op == "broadcast" else "-1", line)
                # Parser 1: busbw at a fixed place from the end (out of place
                # 6th from the end, in place 2nd).
                size = int(f[0])
                oop = [r for r in mine if r["bytes"] == size and r["placement"] == "out_of_place"][0]
                inp = [r for r in mine if r["bytes"] == size and r["placement"] == "in_place"][0]
                self.assertAlmostEqual(float(f[-6]), oop["busbw_gbs"], delta=0.0051 + 1e-9)
                self.assertAlmostEqual(float(f[-2]), inp["busbw_gbs"], delta=0.0051 + 1e-9)
                self.assertAlmostEqual(float(f[-7]), oop["algbw_gbs"], delta=0.0051 + 1e-9)
                self.assertEqual(f[-5], "0")
                self.assertEqual(f[-1], "0")
            # Parser 2: the op's `# Avg bus bandwidth` is the mean busbw of its
            # rows, both placements, as nccl-tests averages.
            avg = [l for l in lines if l.startswith("# Avg bus bandwidth")]
            self.assertEqual(len(avg), 1, lines)
            m = re.match(r"^# Avg bus bandwidth    : (\S+) $", avg[0])
            self.assertIsNotNone(m, avg[0])
            mean = sum(r["busbw_gbs"] for r in mine) / len(mine)
            self.assertAlmostEqual(float(m.group(1)), mean, delta=abs(mean) * 1e-5 + 1e-9)
            printed = [float(l.split()[-6]) for l in op_rows] + [float(l.split()[-2]) for l in op_rows]
            self.assertAlmostEqual(float(m.group(1)), sum(printed) / len(printed), delta=0.006)
            self.assertIn("# Out of bounds values : 0 OK", lines)
        # One grep over the whole stdout: one line per op.
        self.assertEqual(len(re.findall(r"(?m)^# Avg bus bandwidth", out)), 3)

    def test_two_ranks_three_parsers(self):
        self.check_parsers(2)

    def test_four_ranks_three_parsers(self):
        self.check_parsers(4)

    def test_default_table_prints_minus_one_root(self):
        proc = mpirun(2, "sweep", "--ops", "allreduce", *SMALL)
        self.assertEqual(proc.returncode, 0, proc.stderr)
        table = [l for l in rows(proc.stdout) if re.match(r"^\s+\d+\s+\d+\s+float\s+sum\s", l)]
        self.assertEqual(len(table), 4)
        for line in table:
            self.assertEqual(line.split()[4], "-1")

    def test_no_check_prints_na(self):
        proc = mpirun(2, "sweep", "--ops", "allreduce", *SMALL, "--no-check", "--format", "nccl-tests")
        self.assertEqual(proc.returncode, 0, proc.stderr)
        for line in rows(proc.stdout):
            self.assertRegex(line, ROW)
            self.assertEqual(line.split()[-5], "N/A")
            self.assertEqual(line.split()[-1], "N/A")
        self.assertIn("# Out of bounds values : not checked (--no-check)", proc.stdout)

    def test_skipped_size_is_a_comment(self):
        # 8 B holds fewer float elements than there are ranks for all-gather.
        proc = mpirun(4, "sweep", "--ops", "allgather", "-b", "8", "-e", "1K", "-f", "4", "--min-time-ms", "1",
                      "--transport", "mpi", "--format", "nccl-tests")
        self.assertEqual(proc.returncode, 0, proc.stderr)
        self.assertRegex(proc.stdout, r"(?m)^# skipped 8 B float: ")
        for line in rows(proc.stdout):
            self.assertRegex(line, ROW)
        self.assertEqual(len(rows(proc.stdout)), 2)

    def test_min_bw_below_and_above(self):
        low = mpirun(2, "sweep", "--ops", "allreduce", *SMALL, "--format", "nccl-tests",
                     env={"NCCL_TESTS_MIN_BW": "0.000000001"})
        self.assertEqual(low.returncode, 0, low.stderr)
        self.assertRegex(low.stdout, r"(?m)^# Avg bus bandwidth    : \S+ OK$")
        high = mpirun(2, "sweep", "--ops", "allreduce", *SMALL, "--format", "nccl-tests",
                      env={"NCCL_TESTS_MIN_BW": "1000000"})
        self.assertEqual(high.returncode, 3, high.stdout + high.stderr)
        self.assertRegex(high.stdout, r"(?m)^# Avg bus bandwidth    : \S+ FAILED$")
        self.assertRegex(high.stderr, r"fabricbench: FAILED: allreduce avg bus bandwidth \S+ GB/s is below 90% of "
                                      r"NCCL_TESTS_MIN_BW=1e\+06")
        # In the default table too.
        table = mpirun(2, "sweep", "--ops", "allreduce", *SMALL, env={"NCCL_TESTS_MIN_BW": "1000000"})
        self.assertEqual(table.returncode, 3, table.stderr)

    def test_min_bw_not_a_number(self):
        proc = mpirun(2, "sweep", *SMALL, env={"NCCL_TESTS_MIN_BW": "fast"}, timeout=60)
        self.assertEqual(proc.returncode, 2, proc.stdout + proc.stderr)
        lines = [l for l in proc.stderr.splitlines() if l.strip()]
        self.assertEqual(lines, ["fabricbench: error: NCCL_TESTS_MIN_BW=fast: must be a number of GB/s, 0 or above"])

    def test_output_file_flags_say_what_to_use(self):
        cases = [
            (["-J", "out.json"], r"^fabricbench: error: fabricbench has no -J: .*--json FILE"),
            (["--output_file", "out.json"], r"^fabricbench: error: fabricbench has no -J: .*--json FILE"),
            (["-F", "out.csv"], r"^fabricbench: error: fabricbench has no -F: .*--csv FILE"),
            (["--format", "csv"], r"^fabricbench: error: --format"),
        ]
        for args, message in cases:
            with self.subTest(args=args):
                proc = mpirun(2, "sweep", *SMALL, *args, timeout=60)
                self.assertEqual(proc.returncode, 2, proc.stdout + proc.stderr)
                lines = [l for l in proc.stderr.splitlines() if l.strip()]
                self.assertEqual(len(lines), 1, proc.stderr)
                self.assertRegex(lines[0], message)
                self.assertNotIn("did you mean", lines[0])

    def test_started_as_all_reduce_perf(self):
        link = os.path.join(self.dir.name, "all_reduce_perf")
        os.symlink(os.path.abspath(ARGS.binary), link)
        proc = mpirun(2, *SMALL, binary=link)
        self.assertEqual(proc.returncode, 0, proc.stderr)
        self.assertEqual(list(blocks(proc.stdout)), ["all_reduce_perf"])
        body = rows(proc.stdout)
        self.assertEqual(len(body), 4)
        for line in body:
            self.assertRegex(line, ROW)
            self.assertEqual(line.split()[3], "sum")
        other = mpirun(2, *SMALL, "--ops", "allgather", binary=link, timeout=60)
        self.assertEqual(other.returncode, 2, other.stdout + other.stderr)
        self.assertEqual([l for l in other.stderr.splitlines() if l.strip()],
                         ["fabricbench: error: --ops: as all_reduce_perf fabricbench runs allreduce alone; for other "
                          "ops run fabricbench sweep --ops"])

    def test_smoke_profile(self):
        proc = mpirun(2, "run", "--profile", "smoke", "--transport", "mpi", "--format", "nccl-tests",
                      "--json", self.json)
        self.assertEqual(proc.returncode, 0, proc.stderr)
        body = rows(proc.stdout)
        self.assertGreater(len(body), 0)
        for line in body:
            self.assertRegex(line, ROW)
        for binary, lines in blocks(proc.stdout).items():
            self.assertEqual(len([l for l in lines if l.startswith("# Avg bus bandwidth")]), 1, binary)


if __name__ == "__main__":
    parser = argparse.ArgumentParser()
    parser.add_argument("--binary", required=True)
    parser.add_argument("--mpirun", required=True)
    ARGS, rest = parser.parse_known_args()
    unittest.main(argv=[sys.argv[0], "-v", *rest])
