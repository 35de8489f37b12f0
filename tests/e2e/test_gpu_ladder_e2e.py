#!/usr/bin/env python3
"""The GPU-count ladder inside a node, end to end under mpirun.

Four local MPI ranks stand in for the GPUs of one node: without a GPU
topology the sets are in rank order (and the output says so); with a
recorded PCIe server's sysfs tree (two GPUs per switch, one switch per
socket) the closest pair shares a switch and the spread pair crosses the
sockets. Job time and cost per job follow the projection, the JSON validates
against the schema, `report` shows the ladder in text and HTML, and bad
values exit 2 with one line.
"""
import argparse
import json
import os
import subprocess
import sys
import tempfile
import unittest

ARGS = None
JOB = ["--grad-bytes", "1M", "--compute-ms", "20", "--steps", "1000", "--price-per-gpu-hour", "1",
       "--price", "2:2.5,4:4,8:8"]
QUICK = ["--transport", "mpi", "--sizes", "64K", "--scale-bytes", "256K", "--min-time-ms", "1", "--warmup", "1",
         "--pair-bytes", "64K"]


def mpirun(np_, *args):
    cmd = [ARGS.mpirun, "--allow-run-as-root", "--oversubscribe", "--bind-to", "none", "-q", "-np", str(np_),
           ARGS.binary, *args]
    return subprocess.run(cmd, capture_output=True, text=True, timeout=300)


class GpuLadder(unittest.TestCase):
    def setUp(self):
        self.dir = tempfile.TemporaryDirectory()
        self.json = os.path.join(self.dir.name, "r.json")

    def tearDown(self):
        self.dir.cleanup()

    def load(self):
        proc = subprocess.run([sys.executable, ARGS.validator, ARGS.schema, self.json], capture_output=True, text=True)
        self.assertEqual(proc.returncode, 0, proc.stderr)
        with open(self.json, encoding="utf-8") as f:
            return json.load(f)["gpu_ladder"]

    def check_job(self, ladder):
        points = ladder["projection"]
        self.assertEqual(points[0]["gpus"], 1)
        self.assertEqual(points[0]["step_ms"], 20)
        for p in points:
            self.assertAlmostEqual(p["job_hours"], 1000 * p["step_ms"] / 3.6e6)
            self.assertAlmostEqual(p["cost_per_job"], p["job_hours"] * p["gpus"] * 1.0)
        servers = {s["gpus"]: s for s in ladder["servers"]}
        self.assertEqual(sorted(servers), [2, 4, 8])
        self.assertEqual(servers[8]["why_not"], "not measured: a node here has 4 GPUs")
        by_gpus = {p["gpus"]: p for p in points if p["choice"] != "spread"}
        for n in (2, 4):
            self.assertAlmostEqual(servers[n]["cost_per_job"], by_gpus[n]["job_hours"] * servers[n]["price_per_hour"])
        cheapest = min((2, 4), key=lambda n: servers[n]["cost_per_job"])
        fastest = min((2, 4), key=lambda n: servers[n]["job_hours"])
        self.assertEqual(ladder["cheapest_gpus"], cheapest)
        self.assertEqual(ladder["fastest_gpus"], fastest)

    def test_run_in_rank_order_without_a_gpu_topology(self):
        proc = mpirun(4, "run", *QUICK, "--no-measure", *JOB, "--json", self.json)
        self.assertEqual(proc.returncode, 0, proc.stderr)
        self.assertIn("# GPU-count ladder inside each node (4 GPUs per node", proc.stdout)
        self.assertIn("sets in rank order (the first k local ranks)", proc.stdout)
        self.assertIn("# cheapest per job:", proc.stdout)
        ladder = self.load()
        self.assertFalse(ladder["from_topology"])
        self.assertEqual([(l["gpus"], l["choice"], l["sets"][0]["gpus"]) for l in ladder["levels"] if
                          l["op"] == "allgather"], [(2, "rank-order", [0, 1]), (4, "rank-order", [0, 1, 2, 3])])
        for level in ladder["levels"]:
            self.assertEqual(level["sets"][0]["wrong"], 0)
            self.assertGreater(level["busbw_median_gbs"], 0)
        self.check_job(ladder)
        html = os.path.join(self.dir.name, "r.html")
        report = subprocess.run([ARGS.binary, "report", self.json, "--html", html], capture_output=True, text=True)
        self.assertEqual(report.returncode, 0, report.stderr)
        self.assertIn("# GPU-count ladder inside each node", report.stdout)
        with open(html, encoding="utf-8") as f:
            page = f.read()
        self.assertIn('id="gpu-ladder-0"', page)
        self.assertIn("Job time and cost per job against GPU count", page)

    def test_run_on_a_recorded_pcie_server_picks_closest_and_spread_sets(self):
        root = os.path.join(self.dir.name, "pcie4-roce")
        subprocess.run([ARGS.make_fixture, "pcie4-roce", root, "pcie4-roce"], check=True)
        proc = mpirun(4, "run", *QUICK, "--no-measure", "--sysfs-root", os.path.join(root, "sys"), "--procfs-root",
                      os.path.join(root, "proc"), *JOB, "--json", self.json)
        self.assertEqual(proc.returncode, 0, proc.stderr)
        self.assertIn("sets from the GPU link matrix", proc.stdout)
        ladder = self.load()
        self.assertTrue(ladder["from_topology"])
        self.assertEqual([(l["gpus"], l["choice"], l["path"], l["sets"][0]["gpus"]) for l in ladder["levels"]
                          if l["op"] == "allgather"],
                         [(2, "closest", "PIX", [0, 1]), (2, "spread", "SYS", [0, 2]), (4, "any", "SYS", [0, 1, 2, 3])])
        self.assertEqual([(p["gpus"], p["choice"]) for p in ladder["projection"]],
                         [(1, "any"), (2, "closest"), (2, "spread"), (4, "any")])
        self.check_job(ladder)

    def test_scale_runs_it_and_no_gpu_ladder_skips_it(self):
        proc = mpirun(2, "scale", "--transport", "mpi", "--scale-bytes", "64K", "--min-time-ms", "1",
                      "--json", self.json)
        self.assertEqual(proc.returncode, 0, proc.stderr)
        self.assertIn("# GPU-count ladder inside each node (2 GPUs per node", proc.stdout)
        self.assertEqual([l["gpus"] for l in self.load()["levels"]], [2, 2])
        proc = mpirun(2, "scale", "--transport", "mpi", "--scale-bytes", "64K", "--min-time-ms", "1",
                      "--no-gpu-ladder", "--json", self.json)
        self.assertEqual(proc.returncode, 0, proc.stderr)
        self.assertNotIn("GPU-count ladder", proc.stdout)
        with open(self.json, encoding="utf-8") as f:
            self.assertNotIn("gpu_ladder", json.load(f))

    def test_each_bad_value_exits_2_with_one_line(self):
        job = ["--grad-bytes", "1M", "--compute-ms", "20"]
        cases = [
            (["run", *job, "--steps", "1", "--price", "4:x"], r"--price 4:x: 'x' is not a price"),
            (["scale", *job, "--steps", "0"], r"--steps 0: must be a whole number of steps, 1 or more$"),
            (["run", *job, "--price", "4:4"], r"--price: the cost per job needs the job length \(--steps N\)$"),
            (["scale", "--steps", "5"], r"--steps: the job needs the training projection"),
            (["sweep", "--steps", "5"], r"--steps: sweep does not use it"),
        ]
        for args, message in cases:
            with self.subTest(args=args):
                proc = mpirun(2, *args)
                self.assertEqual(proc.returncode, 2, proc.stdout + proc.stderr)
                lines = [l for l in proc.stderr.splitlines() if l.strip()]
                self.assertEqual(len(lines), 1, proc.stderr)
                self.assertRegex(lines[0], "^fabricbench: error: " + message)


if __name__ == "__main__":
    parser = argparse.ArgumentParser()
    parser.add_argument("--binary", required=True)
    parser.add_argument("--mpirun", required=True)
    parser.add_argument("--schema", required=True)
    parser.add_argument("--validator", required=True)
    parser.add_argument("--make-fixture", required=True)
    ARGS, rest = parser.parse_known_args()
    unittest.main(argv=[sys.argv[0], "-v", *rest])
