#!/usr/bin/env python3
"""End-to-end tests of --budget and --precision under mpirun on this machine.

A budget that cannot hold the sweep ends the run within it (plus a launch
margin) and lists every cut in the table, the JSON (which validates) and the
report; precision is recorded per point; bad values exit 2 with one line;
and 32 oversubscribed ranks complete `run --profile smoke` with valid JSON
(a correctness check, not a timing).
"""
import argparse
import json
import os
import subprocess
import sys
import tempfile
import time
import unittest

ARGS = None


def mpirun(np_, *args, timeout=600):
    cmd = [ARGS.mpirun, "--allow-run-as-root", "--oversubscribe", "--bind-to", "none", "-q", "-np", str(np_),
           ARGS.binary, *args]
    start = time.monotonic()
    proc = subprocess.run(cmd, capture_output=True, text=True, timeout=timeout)
    return proc, time.monotonic() - start


def validate(test, path):
    proc = subprocess.run([sys.executable, ARGS.validator, ARGS.schema, path], capture_output=True, text=True)
    test.assertEqual(proc.returncode, 0, f"{path} does not validate: {proc.stderr}")


class Budget(unittest.TestCase):
    def setUp(self):
        self.dir = tempfile.TemporaryDirectory()
        self.json = os.path.join(self.dir.name, "out.json")

    def tearDown(self):
        self.dir.cleanup()

    def test_a_budget_too_short_for_the_sweep_cuts_and_lists_what_it_cut(self):
        # 3 ops x 2 placements x 8 sizes, each asking for 2 s (no iteration
        # cap ends a small size sooner): 96 s of measuring that a 3 s budget
        # cannot hold. A point is cut when its share holds fewer than
        # --min-iters iterations (fewer than it asked for but at least that
        # many is a budgeted point, not a cut), so the floor is set where no
        # machine fits it at the larger sizes in 3 s: 100,000 iterations of
        # a 4 MiB all-reduce.
        budget = 3
        min_iters = 100000
        unbudgeted = 3 * 2 * 8 * 2.0
        proc, wall = mpirun(2, "sweep", "--transport", "mpi", "--budget", f"{budget}s", "--min-time-ms", "2000",
                            "--min-iters", str(min_iters), "--max-iters", "1000000",
                            "--sizes", "8,1K,4K,16K,64K,256K,1M,4M", "--json", self.json)
        self.assertEqual(proc.returncode, 0, proc.stderr)
        validate(self, self.json)
        with open(self.json, encoding="utf-8") as f:
            doc = json.load(f)
        self.assertTrue(doc["status"]["complete"])
        # Near the budget on an idle machine; on a loaded one each check and
        # warm-up stretches, so the bound is a factor of the time the sweep
        # would take without a budget, never a figure close to the budget.
        self.assertLess(doc["status"]["duration_s"], unbudgeted / 4)
        self.assertLess(wall, unbudgeted / 2)
        cuts = doc["budget"]["cuts"]
        self.assertTrue(cuts)
        self.assertEqual(doc["budget"]["seconds"], budget)
        self.assertEqual([p["phase"] for p in doc["budget"]["phases"]], ["sweep"])
        cut_records = [r for r in doc["records"] if r.get("cut") == "budget"]
        self.assertEqual(len(cut_records), len(cuts))
        self.assertEqual(len(doc["records"]), 3 * 2 * 8)  # every point is there, measured or cut
        for c in cuts:
            self.assertEqual((c["phase"], c["reason"]), ("sweep", "budget"))
            self.assertIn(c["action"], ("skipped", "fewer iterations"))
        for r in cut_records:
            if "skipped" in r:
                self.assertTrue(r["skipped"].startswith("budget"))
            else:
                self.assertLess(r["iterations"], min_iters)
        self.assertIn("# cut (budget): sweep:", proc.stdout)
        self.assertIn(f"# budget {budget} s", proc.stdout)
        report = subprocess.run([ARGS.binary, "report", self.json], capture_output=True, text=True)
        self.assertIn("# budget", report.stdout, report.stderr)
        self.assertEqual(report.stdout.count("cut (budget)"), len(cuts))

    def test_precision_is_recorded_and_fixed_counts_are_kept(self):
        proc, _ = mpirun(2, "sweep", "--transport", "mpi", "--ops", "allreduce", "--sizes", "4K,64K", "--json",
                         self.json)
        self.assertEqual(proc.returncode, 0, proc.stderr)
        validate(self, self.json)
        with open(self.json, encoding="utf-8") as f:
            doc = json.load(f)
        self.assertNotIn("budget", doc)
        for r in doc["records"]:
            self.assertGreaterEqual(r["precision"], 0)
            self.assertNotIn("cut", r)
            # Judged against the 1% default, and where the point's time went.
            self.assertEqual(r["precision_met"], r["precision"] <= 0.01, r)
            self.assertGreaterEqual(r["batches"], 4, r)
            self.assertTrue(1 <= r["warmups"] <= 5, r)
            parts = sum(r[k] for k in ("spent_fill_ms", "spent_check_ms", "spent_warmup_ms", "spent_timed_ms",
                                       "spent_samples_ms", "spent_agree_ms"))
            self.assertAlmostEqual(parts, r["spent_total_ms"], delta=1e-3)
        cost = doc["sweep_cost"]
        self.assertEqual(cost["points"], len(doc["records"]))
        self.assertAlmostEqual(cost["timed_s"], sum(r["spent_timed_ms"] for r in doc["records"]) / 1e3, delta=1e-6)
        self.assertAlmostEqual(cost["timed_share"], cost["timed_s"] / cost["wall_s"], delta=1e-9)
        missed = sum(1 for r in doc["records"] if not r["precision_met"])
        if missed:
            self.assertIn(f"# precision: {missed} of {len(doc['records'])} points missed --precision", proc.stdout)
        else:
            self.assertNotIn("# precision:", proc.stdout)
        proc, _ = mpirun(2, "sweep", "--transport", "mpi", "--ops", "allreduce", "--sizes", "4K", "--iters", "7",
                         "--precision", "0.001", "--json", self.json)
        self.assertEqual(proc.returncode, 0, proc.stderr)
        with open(self.json, encoding="utf-8") as f:
            doc = json.load(f)
        self.assertEqual({r["iterations"] for r in doc["records"]}, {7})
        # A fixed count is one batch and no precision target applies.
        self.assertEqual({r["batches"] for r in doc["records"]}, {1})
        self.assertTrue(all("precision_met" not in r for r in doc["records"]))

    def test_bad_budget_and_precision_exit_2_with_one_line(self):
        for args, text in ((["--budget", "0"], "--budget"), (["--budget", "soon"], "--budget"),
                           (["--budget", "-5s"], "--budget"), (["--precision", "100"], "--precision"),
                           (["--precision", "-1"], "--precision"), (["--pair-peers", "0"], "--pair-peers"),
                           (["--pair-seed", "0"], "--pair-seed"),
                           (["--budget", "none", "--on-finding", "halve"], "--on-finding halve: only with --budget"),
                           (["--on-finding", "stop"], "--on-finding: unknown")):
            proc = subprocess.run([ARGS.binary, "run", *args], capture_output=True, text=True)
            self.assertEqual(proc.returncode, 2, (args, proc.stderr))
            lines = [l for l in proc.stderr.splitlines() if l.strip()]
            self.assertEqual(len(lines), 1, proc.stderr)
            self.assertTrue(lines[0].startswith("fabricbench: error: " + text), lines[0])

    # The sanitizer stage leaves it to the first stage: 32 sanitized ranks on
    # 2 cores took 100 s there, and run no code the 2- to 8-rank runs do not.
    @unittest.skipIf(os.environ.get("ASAN_OPTIONS"), "run by the unsanitized stage")
    def test_32_oversubscribed_ranks_complete_the_smoke_profile(self):
        proc, _ = mpirun(32, "run", "--profile", "smoke", "--transport", "mpi", "-q", "--json", self.json,
                         timeout=900)
        self.assertEqual(proc.returncode, 0, proc.stdout[-3000:] + proc.stderr[-3000:])
        validate(self, self.json)
        with open(self.json, encoding="utf-8") as f:
            doc = json.load(f)
        self.assertTrue(doc["status"]["complete"])
        self.assertTrue(doc["status"]["data_ok"])
        self.assertEqual(doc["run"]["ranks"], 32)
        self.assertEqual(doc["budget"]["seconds"], 60)
        self.assertEqual(len(doc["records"]), 3 * 2 * 11)  # 16 B..16 MiB x4, 3 ops, 2 placements


if __name__ == "__main__":
    parser = argparse.ArgumentParser()
    for name in ("--binary", "--mpirun", "--schema", "--validator"):
        parser.add_argument(name, required=True)
    ARGS, rest = parser.parse_known_args()
    unittest.main(argv=[sys.argv[0], "-v", *rest])
