#!/usr/bin/env python3
"""End-to-end tests of the fabricbench binary under mpirun.

Runs the real binary with 1 to 4 local ranks, validates every JSON file it
writes against the schema, parses the CSV, checks the bus-bandwidth factors,
that each bad input exits 2 with one line naming it, and that an interrupted
run leaves a valid JSON file of what finished.
"""
import argparse
import csv
import json
import os
import re
import signal
import subprocess
import sys
import tempfile
import time
import unittest

ARGS = None


def mpirun(np_, *args, **kw):
    cmd = [ARGS.mpirun, "--allow-run-as-root", "--oversubscribe", "--bind-to", "none", "-q", "-np", str(np_),
           ARGS.binary, *args]
    return subprocess.run(cmd, capture_output=True, text=True, timeout=kw.get("timeout", 300))


def validate(test, path):
    proc = subprocess.run([sys.executable, ARGS.validator, ARGS.schema, path], capture_output=True, text=True)
    test.assertEqual(proc.returncode, 0, f"{path} does not validate: {proc.stderr}")


# `run`'s GPU-count ladder and pair matrix at 64 KiB instead of their
# defaults (256 MiB and 64 MiB). The runs that pass it check what each phase
# writes or prints, never a bandwidth at a size; the large copies were most of
# each run's time (the more so under the sanitizers).
SMALL_PHASES = ["--scale-bytes", "64K", "--pair-bytes", "64K"]


def factor(op, n):
    if op == "allreduce":
        return 2.0 * (n - 1) / n
    if op in ("allgather", "reducescatter", "alltoall"):
        return (n - 1) / n
    return 1.0


class Sweep(unittest.TestCase):
    def setUp(self):
        self.dir = tempfile.TemporaryDirectory()
        self.json = os.path.join(self.dir.name, "r.json")
        self.csv = os.path.join(self.dir.name, "r.csv")

    def tearDown(self):
        self.dir.cleanup()

    def test_four_ranks_default_ops_json_csv_and_factors(self):
        proc = mpirun(4, "sweep", "-b", "8", "-e", "64M", "-f", "4", "--json", self.json, "--csv", self.csv,
                      "--label", "provider a, rack 2")
        self.assertEqual(proc.returncode, 0, proc.stderr)
        for header in ("# allreduce on 4 ranks", "# allgather on 4 ranks", "# sendrecv on 4 ranks", "busbw"):
            self.assertIn(header, proc.stdout)
        self.assertIn("Out of bounds values : 0 OK", proc.stdout)
        validate(self, self.json)
        with open(self.json, encoding="utf-8") as f:
            doc = json.load(f)
        self.assertTrue(doc["status"]["complete"])
        self.assertTrue(doc["status"]["data_ok"])
        self.assertEqual(doc["run"]["ranks"], 4)
        self.assertEqual(doc["run"]["label"], "provider a, rack 2")
        self.assertEqual(doc["run"]["nodes"], 1)
        self.assertEqual(doc["run"]["ranks_per_node"], [4])
        self.assertEqual(doc["run"]["transport"], "mpi")
        measured = [r for r in doc["records"] if "busbw_gbs" in r]
        # All-gather under 16 B per rank (8 B and 32 B on 4 ranks) is skipped, as nccl-tests rounds.
        self.assertEqual(len(measured), 3 * 12 * 2 - 4)
        for r in measured:
            self.assertEqual(r["wrong"], 0)
            self.assertGreater(r["algbw_gbs"], 0)
            self.assertAlmostEqual(r["busbw_gbs"] / r["algbw_gbs"], factor(r["op"], 4), places=12)
            self.assertAlmostEqual(r["algbw_gbs"], r["bytes"] / r["time_us"] / 1e3, places=9)
        with open(self.csv, newline="", encoding="utf-8") as f:
            rows = list(csv.DictReader(f))
        self.assertEqual(len(rows), len(doc["records"]))
        for row, rec in zip(rows, doc["records"]):
            # The run's identity on every row, so CSVs of several runs concatenate.
            self.assertEqual(row["start_utc"], doc["run"]["start_utc"])
            self.assertEqual(row["label"], "provider a, rack 2")
            self.assertEqual(row["hostnames"], " ".join(doc["run"]["hostnames"]))
            self.assertEqual(row["op"], rec["op"])
            self.assertEqual(int(row["bytes"]), rec["bytes"])
            if "busbw_gbs" in rec:
                self.assertAlmostEqual(float(row["busbw_gbs"]), rec["busbw_gbs"], places=9)
            else:
                self.assertEqual(row["busbw_gbs"], "")
                self.assertTrue(row["skipped"])

    def test_run_csv_writes_each_section_beside_the_records(self):
        proc = mpirun(2, "run", "--sizes", "1K", *SMALL_PHASES, "--csv", self.csv, "--label", "lab", "-q")
        self.assertEqual(proc.returncode, 0, proc.stderr)
        # Two ranks on one node: the GPU-count ladder and the pairs within the node ran.
        for section in ("gpu_ladder", "pairs"):
            with self.subTest(section=section):
                with open(os.path.join(self.dir.name, f"r.{section}.csv"), newline="", encoding="utf-8") as f:
                    rows = list(csv.DictReader(f))
                self.assertGreater(len(rows), 0)
                for row in rows:
                    self.assertEqual(row["label"], "lab")
                    self.assertTrue(row["start_utc"].endswith("Z"))
                    self.assertNotEqual(row["hostnames"], "")
                    self.assertNotIn(None, row.values())
        names = os.listdir(self.dir.name)
        self.assertFalse([n for n in names if n.startswith(".")], names)  # no temporary left

    def test_every_op_and_dtype_on_one_to_three_ranks(self):
        for n in (1, 2, 3):
            proc = mpirun(n, "sweep", "--ops", "all", "--dtype", "int8,uint8,int32,int64,float,double", "--redop",
                          "sum,prod,min,max", "--root", str(n - 1), "--sizes", "4K,100K", "--iters", "3",
                          "--warmup", "1", "--json", self.json, "-q")
            self.assertEqual(proc.returncode, 0, proc.stderr)
            validate(self, self.json)
            with open(self.json, encoding="utf-8") as f:
                doc = json.load(f)
            self.assertEqual(doc["status"]["wrong_elements"], 0)
            ops = {r["op"] for r in doc["records"]}
            self.assertEqual(len(ops), 7)
            for r in doc["records"]:
                self.assertIn("busbw_gbs", r, r)
                self.assertAlmostEqual(r["busbw_gbs"], r["algbw_gbs"] * factor(r["op"], n), places=9)

    def test_no_subcommand_runs_the_suite(self):
        proc = mpirun(2, "--sizes", "1K", "--iters", "2", "--scale-bytes", "64K", "--json", self.json)
        self.assertEqual(proc.returncode, 0, proc.stderr)
        validate(self, self.json)

    def test_interrupted_run_leaves_valid_json_of_what_finished(self):
        cmd = [ARGS.mpirun, "--allow-run-as-root", "--oversubscribe", "--bind-to", "none", "-q", "-np", "2",
               ARGS.binary, "sweep", "--ops", "allreduce,allgather,sendrecv,alltoall", "--sizes", "1K,64K",
               "--iters", "5000", "--json", self.json]
        proc = subprocess.Popen(cmd, stdout=subprocess.DEVNULL, stderr=subprocess.DEVNULL, start_new_session=True)
        deadline = time.time() + 120
        records = 0
        try:
            while time.time() < deadline and proc.poll() is None:
                time.sleep(0.05)
                if not os.path.exists(self.json):
                    continue
                try:
                    with open(self.json, encoding="utf-8") as f:
                        records = len(json.load(f)["records"])
                except ValueError:
                    self.fail("the JSON file was half-written while the run was going")
                if records > 0:
                    break
        finally:
            os.killpg(proc.pid, signal.SIGKILL)
            proc.wait()
        self.assertGreater(records, 0, "no op finished before the deadline")
        validate(self, self.json)
        with open(self.json, encoding="utf-8") as f:
            doc = json.load(f)
        self.assertFalse(doc["status"]["complete"])
        # The ops that finished, in the order they ran, and not the last: on
        # a loaded machine (or under the sanitizers) a second op may finish
        # between the poll and the kill, so the file holds a prefix of them.
        order = ["allreduce", "allgather", "sendrecv", "alltoall"]
        seen = [op for op in order if any(r["op"] == op for r in doc["records"])]
        self.assertEqual(seen, order[:len(seen)])
        self.assertLess(len(seen), len(order))


class Verdicts(unittest.TestCase):
    """The result file carries its verdicts; `report` computes the same list
    again; a provider's references replace the built-in ones."""

    def setUp(self):
        self.dir = tempfile.TemporaryDirectory()
        self.json = os.path.join(self.dir.name, "r.json")

    def tearDown(self):
        self.dir.cleanup()

    @staticmethod
    def printed(stdout):
        # "#   WARN kind      subject: reason" lines of the summary, in order.
        out = []
        for line in stdout.splitlines():
            parts = line.split(None, 3)
            if len(parts) == 4 and parts[0] == "#" and parts[1] in ("OK", "INFO", "WARN", "FAIL"):
                out.append((parts[1], parts[2]))
        return out

    def test_the_file_s_verdicts_are_what_report_prints_worst_first(self):
        proc = mpirun(2, "run", "--sizes", "1K,64K", "--iters", "2", "--warmup", "1", *SMALL_PHASES, "--json",
                      self.json, "--expect", "allreduce.busbw>=1000000")
        self.assertEqual(proc.returncode, 3, proc.stderr)
        validate(self, self.json)
        with open(self.json, encoding="utf-8") as f:
            verdicts = json.load(f)["verdicts"]
        levels = [v["level"] for v in verdicts]
        rank = {"FAIL": 3, "WARN": 2, "OK": 1, "INFO": 0}
        self.assertEqual(levels, sorted(levels, key=lambda l: -rank[l]), "worst first")
        self.assertEqual(verdicts[0]["kind"], "gate")
        self.assertIn("achievable", [v["kind"] for v in verdicts])
        for v in verdicts:
            if v["level"] in ("WARN", "FAIL"):
                self.assertTrue(v.get("cause") and v.get("fix"), v)
        again = subprocess.run([ARGS.binary, "report", self.json, "--expect", "allreduce.busbw>=1000000"],
                               capture_output=True, text=True, timeout=60)
        self.assertEqual(again.returncode, 3, again.stderr)
        self.assertEqual(self.printed(again.stdout), [(v["level"], v["kind"]) for v in verdicts])
        self.assertEqual(self.printed(proc.stdout), [(v["level"], v["kind"]) for v in verdicts])

    def test_a_provider_s_references_replace_the_built_in_ones(self):
        spec = os.path.join(self.dir.name, "provider.json")
        with open(spec, "w", encoding="utf-8") as f:
            json.dump({"schema": "fabricbench.expectations/2", "warn_at": 0.9, "fail_below": 0.7, "references": [
                {"id": "provider-pcie-h2d", "label": "provider's promise", "figure": "topo.h2d_gbs", "match": {},
                 "points": [{"bytes": 0, "gbs": 1000}], "source": "the provider's spec sheet"}]}, f)
        proc = subprocess.run([ARGS.binary, "report", os.path.join(ARGS.golden, "run_a.json"), "--expectations",
                               spec, "--expect-reference"], capture_output=True, text=True, timeout=60)
        self.assertEqual(proc.returncode, 3, proc.stdout + proc.stderr)
        self.assertIn("provider's promise", proc.stdout)
        self.assertIn("source: the provider's spec sheet", proc.stdout)
        self.assertNotIn("pcie-gen5-x16-h2d", proc.stdout)  # replaced
        self.assertIn("infiniband-ndr-400", proc.stdout)  # other figures keep the built-in ones
        with open(spec, "w", encoding="utf-8") as f:
            f.write('{"schema": "fabricbench.expectations/2"}')
        bad = subprocess.run([ARGS.binary, "report", os.path.join(ARGS.golden, "run_a.json"), "--expectations",
                              spec], capture_output=True, text=True, timeout=60)
        self.assertEqual(bad.returncode, 2)
        self.assertEqual(len(bad.stderr.strip().splitlines()), 1, bad.stderr)
        self.assertTrue(bad.stderr.startswith(f"fabricbench: error: --expectations {spec}: "), bad.stderr)


class Progress(unittest.TestCase):
    def test_the_progress_line_never_reaches_stdout(self):
        # Long enough for the line to appear (it waits 2 s); stdout is a pipe,
        # as for a parser or a file, and must hold table text alone.
        # Bytes, not text: text mode would turn a carriage return into a newline.
        proc = subprocess.run([ARGS.mpirun, "--allow-run-as-root", "--oversubscribe", "--bind-to", "none", "-q", "-np",
                               "2", ARGS.binary, "sweep", "--ops", "allreduce", "--sizes", "4M,8M,16M",
                               "--min-time-ms", "1000", "--max-time-ms", "2000", "--progress", "on"], capture_output=True, timeout=300)
        self.assertEqual(proc.returncode, 0, proc.stderr)
        # At least a second per size and placement (adaptive iterations): the
        # line shows from 2 s on, so before the third size at the latest.
        self.assertIn(b"\x1b[K", proc.stderr)
        self.assertNotIn(b"\x1b", proc.stdout)
        self.assertNotIn(b"\r", proc.stdout)
        self.assertIn(b"# allreduce on 2 ranks", proc.stdout)


    def test_run_prints_a_line_per_phase_on_stderr_under_mpirun(self):
        # stderr is a pipe here, as under a launcher: one line per phase as it
        # starts, numbered, with its share of the default budget, then the
        # whole run's time; stdout holds none of it. -q silences them. The
        # ladder and the pairs are small: the lines name their phases only.
        with tempfile.TemporaryDirectory() as d:
            path = os.path.join(d, "r.json")
            proc = mpirun(2, "run", "--transport", "mpi", "--sizes", "1K,64K", *SMALL_PHASES, "--json", path)
            self.assertEqual(proc.returncode, 0, proc.stderr)
            lines = proc.stderr.splitlines()
            phases = [l for l in lines if re.match(r"^fabricbench: \[\d+/\d+\] ", l)]
            self.assertEqual([re.match(r"^fabricbench: \[(\d+)/(\d+)\] (\S+):", l).groups() for l in phases],
                             [("1", "4", "topology"), ("2", "4", "sweep"), ("3", "4", "gpu_ladder"),
                              ("4", "4", "pairs")], proc.stderr)
            self.assertIn("sweep: allreduce, allgather, sendrecv at 2 sizes from 1 KiB to 64 KiB; at most 5 min (its "
                          "share of the 10 min --budget)", phases[1])
            self.assertRegex(lines[-1], r"^fabricbench: done in \d+ s \(--budget 10 min; 0 cut\)$")
            self.assertNotIn("fabricbench: [", proc.stdout)
            with open(path, encoding="utf-8") as f:
                self.assertEqual(json.load(f)["budget"]["seconds"], 600)  # the default budget
            quiet = mpirun(2, "run", "--transport", "mpi", "--sizes", "1K", *SMALL_PHASES, "-q", "--budget", "none",
                           "--json", path)
            self.assertEqual(quiet.returncode, 0, quiet.stderr)
            self.assertEqual(quiet.stderr, "")
            with open(path, encoding="utf-8") as f:
                self.assertNotIn("budget", json.load(f))  # --budget none: no bound
            unbounded = mpirun(2, "run", "--transport", "mpi", "--sizes", "1K", *SMALL_PHASES, "--budget", "none")
            self.assertIn("; no --budget: as long as it takes;", unbounded.stderr)


class BadInput(unittest.TestCase):
    CASES = [
        (["--ops", "allreduce,bogus"], r"--ops: unknown op 'bogus'"),
        (["--dtype", "float128"], r"--dtype: unknown dtype 'float128'"),
        (["--redop", "mean"], r"--redop: unknown redop 'mean'"),
        (["-b", "1M", "-e", "8K"], r"-b/--min-bytes 1M is above -e/--max-bytes 8K"),
        (["-f", "1"], r"-f/--step-factor 1 must be above 1"),
        (["--sizes", "8,10"], r"--sizes: 10 B is not a whole number of float elements \(4 B each\)"),
        (["--ops", "broadcast", "--root", "2"], r"--root 2: there are only 2 ranks \(0 to 1\)"),
        (["--json", "/nonexistent-dir/r.json"], r"--json /nonexistent-dir/r.json: cannot write there"),
        (["--csv", "/nonexistent-dir/r.csv"], r"--csv /nonexistent-dir/r.csv: cannot write there"),
        # A build with CUDA on a machine without a GPU, or a build without it.
        (["--transport", "nccl"], r"no CUDA device visible on \S+ \(.+\); use --transport mpi$|"
                                  r"--transport nccl: this build has no NCCL transport"),
        (["--dtype", "half"], r"--dtype half: the mpi transport has no half type"),
        (["--dtype", "float,fp8e4m3"], r"--dtype fp8e4m3: the mpi transport has no fp8e4m3 type"),
        (["--redop", "avg"], r"--redop avg: the mpi transport has no avg reduction"),
        (["--frobnicate"], r"frobnicate"),
    ]

    def test_each_bad_input_exits_2_with_one_line(self):
        for args, message in self.CASES:
            with self.subTest(args=args):
                # The host transport explicitly: on a machine with CUDA but no
                # GPU, `auto` adds a one-line notice that it falls back to it.
                extra = [] if "--transport" in args else ["--transport", "mpi"]
                sizes = [] if {"--sizes", "-b", "-f"} & set(args) else ["--sizes", "64"]
                proc = mpirun(2, "sweep", *sizes, *extra, *args, timeout=60)
                self.assertEqual(proc.returncode, 2, proc.stdout + proc.stderr)
                lines = [l for l in proc.stderr.splitlines() if l.strip()]
                self.assertEqual(len(lines), 1, proc.stderr)
                self.assertTrue(lines[0].startswith("fabricbench: error: "), lines[0])
                self.assertRegex(lines[0], message)
                self.assertNotIn("MPI_ABORT", proc.stdout + proc.stderr)

    def test_a_launcherless_mode_under_mpirun_is_one_line_naming_it(self):
        # Every rank refuses it; only the lead says so, naming what was given.
        proc = mpirun(2, "sweep", "--gpus", "2", timeout=60)
        self.assertEqual(proc.returncode, 2, proc.stderr)
        self.assertEqual(proc.stderr.count("fabricbench: error:"), 1, proc.stderr)
        self.assertIn("fabricbench: error: --gpus is for processes started without a launcher; under mpirun or srun "
                      "run one rank per GPU", proc.stderr)
        cmd = [ARGS.mpirun, "--allow-run-as-root", "--oversubscribe", "--bind-to", "none", "-q", "-np", "2",
               "-x", "FABRICBENCH_BOOTSTRAP=/nonexistent", ARGS.binary, "sweep"]
        proc = subprocess.run(cmd, capture_output=True, text=True, timeout=60)
        self.assertEqual(proc.returncode, 2, proc.stderr)
        self.assertEqual(proc.stderr.count("fabricbench: error:"), 1, proc.stderr)
        self.assertIn("fabricbench: error: FABRICBENCH_BOOTSTRAP is for processes started without a launcher",
                      proc.stderr)


class PointToPointSweep(unittest.TestCase):
    """p2p --sweep: osu_latency, osu_bw and osu_bibw over sizes between two ranks."""

    def setUp(self):
        self.dir = tempfile.TemporaryDirectory()
        self.json = os.path.join(self.dir.name, "p.json")

    def tearDown(self):
        self.dir.cleanup()

    def check_sweep(self, doc, ranks, sizes):
        sweep = doc["p2p_sweep"]
        self.assertEqual(sweep["ranks"], ranks)
        self.assertEqual(sweep["wrong"], 0)
        self.assertTrue(doc["status"]["data_ok"])
        seen = [r["bytes"] for r in sweep["records"]]
        self.assertEqual(seen, sorted(seen), "records are not in size order")
        self.assertEqual(sorted(set(seen)), sizes)
        for size in sizes:
            tests = {r["test"]: r for r in sweep["records"] if r["bytes"] == size}
            self.assertEqual(set(tests), {"latency", "bw", "bibw"}, size)
            for r in tests.values():
                self.assertEqual(r["wrong"], 0)
                self.assertGreater(r["bandwidth_gbs"], 0)
                self.assertEqual(r["iterations"], 3)
            self.assertAlmostEqual(tests["latency"]["latency_us"], tests["latency"]["time_us"] / 2)
            self.assertEqual(tests["bw"]["window"], 4)
        self.assertNotIn("pairs", doc)

    def test_two_ranks_default_pair(self):
        proc = mpirun(2, "p2p", "--sweep", "-b", "1", "-e", "64K", "-f", "16", "--iters", "3", "--warmup", "1",
                      "--window", "4", "--transport", "mpi", "--json", self.json)
        self.assertEqual(proc.returncode, 0, proc.stderr)
        self.assertIn("# Point-to-point sweep: rank 0", proc.stdout)
        self.assertRegex(proc.stdout, r"#\s+size\s+latency\s+bw\s+bibw\s+#wrong")
        validate(self, self.json)
        with open(self.json, encoding="utf-8") as f:
            doc = json.load(f)
        self.check_sweep(doc, [0, 1], [1, 16, 256, 4096, 65536])

    def test_chosen_ranks_among_three(self):
        proc = mpirun(3, "p2p", "--sweep", "--sizes", "8,1K", "--ranks", "2,1", "--iters", "3", "--window", "4",
                      "--transport", "mpi", "-q", "--json", self.json)
        self.assertEqual(proc.returncode, 0, proc.stderr)
        validate(self, self.json)
        with open(self.json, encoding="utf-8") as f:
            doc = json.load(f)
        self.check_sweep(doc, [2, 1], [8, 1024])

    def test_a_rank_that_does_not_exist_exits_2(self):
        proc = mpirun(2, "p2p", "--sweep", "--ranks", "0,5", "--transport", "mpi")
        self.assertEqual(proc.returncode, 2, proc.stderr)
        self.assertIn("fabricbench: error: --ranks 5: there are only 2 ranks (0 to 1)", proc.stderr)


class CommandLineHabits(unittest.TestCase):
    """nccl-tests' flags, mistakes and gates; parse errors need no launcher."""

    def fabricbench(self, *args):
        return subprocess.run([ARGS.binary, *args], capture_output=True, text=True, timeout=60)

    def test_each_mistake_exits_2_with_one_line(self):
        cases = [
            (["-t", "4"], r"^fabricbench: error: fabricbench has no -t: one rank per GPU, launched by mpirun"),
            (["sweep", "-g", "8"], r"^fabricbench: error: fabricbench has no -g: "),
            (["swep"], r"^fabricbench: error: 'swep' is not a subcommand; did you mean sweep\?$"),
            (["sweep", "--warmpu", "1"], r"did you mean --warmup\?$"),
            (["scale", "--dtype", "float"], r"--dtype: scale does not use it \(an option of run, sweep\)$"),
            (["p2p", "--ops", "allreduce"], r"--ops: p2p does not use it"),
            (["sweep", "--iters", "0"], r"--iters 0: must be 1 or above"),
            (["sweep", "--sizes", "1MB"], r"--sizes: '1MB' is ambiguous"),
            (["sweep", "-a", "7"], r"-a/--rank-time: unknown choice '7'"),
        ]
        for args, message in cases:
            with self.subTest(args=args):
                proc = self.fabricbench(*args)
                self.assertEqual(proc.returncode, 2, proc.stdout + proc.stderr)
                lines = [l for l in proc.stderr.splitlines() if l.strip()]
                self.assertEqual(len(lines), 1, proc.stderr)
                self.assertRegex(lines[0], message)

    def test_a_late_lead_still_prints_the_one_line(self):
        # The lead (rank 0) starts 2 s after the other ranks. They fail the
        # same command line at once; if they exited at once, mpirun would end
        # the job before the lead had said why.
        cmd = [ARGS.mpirun, "--allow-run-as-root", "--oversubscribe", "--bind-to", "none", "-q",
               "-np", "1", "sh", "-c", 'sleep 2; exec "$0" "$@"', ARGS.binary, "sweep", "--iters", "0", ":",
               "-np", "3", ARGS.binary, "sweep", "--iters", "0"]
        proc = subprocess.run(cmd, capture_output=True, text=True, timeout=120)
        self.assertEqual(proc.returncode, 2, proc.stdout + proc.stderr)
        lines = [l for l in proc.stderr.splitlines() if l.strip()]
        self.assertEqual(lines, ["fabricbench: error: --iters 0: must be 1 or above"], proc.stderr)

    def test_version_flag(self):
        proc = self.fabricbench("--version")
        self.assertEqual(proc.returncode, 0, proc.stderr)
        self.assertRegex(proc.stdout, r"^fabricbench \d+\.\d+\.\d+ \(git ")

    def test_headline_time_follows_rank_time_and_is_recorded(self):
        with tempfile.TemporaryDirectory() as d:
            path = os.path.join(d, "r.json")
            proc = mpirun(2, "sweep", "--sizes", "64,1K", "-n", "3", "-w", "1", "-a", "2", "--ops", "allreduce",
                          "--transport", "mpi", "--json", path)
            self.assertEqual(proc.returncode, 0, proc.stderr)
            validate(self, path)
            with open(path, encoding="utf-8") as f:
                doc = json.load(f)
        self.assertEqual(doc["run"]["rank_time"], "min")
        for r in doc["records"]:
            self.assertEqual(r["time_us"], r["time_min_us"])
            self.assertEqual(r["iterations"], 3)

    def test_gates_on_sweep_and_a_missing_reference_warns(self):
        proc = mpirun(2, "sweep", "--sizes", "1K", "-n", "2", "--ops", "allreduce", "--transport", "mpi",
                      "--expect", "allreduce.busbw>=1e12")
        self.assertEqual(proc.returncode, 3, proc.stdout + proc.stderr)
        self.assertIn("FAIL", proc.stdout)
        proc = mpirun(2, "sweep", "--sizes", "1K", "-n", "2", "--ops", "allreduce", "--transport", "mpi",
                      "--expect-reference", "--fail-on-warn")
        self.assertEqual(proc.returncode, 1, proc.stdout + proc.stderr)
        self.assertIn("give --expect", proc.stdout)


class ModelParallel(unittest.TestCase):
    """--tp on 4 local ranks: the TP all-reduce measured on groups of tp ranks,
    the projection in the table, the JSON, the report and the HTML; bad
    combinations exit 2 with one line."""
    MODEL = ["--hidden", "256", "--seq", "64", "--layers", "8", "--compute-ms", "20"]
    QUICK = ["--transport", "mpi", "--iters", "4", "--warmup", "1"]

    def setUp(self):
        self.dir = tempfile.TemporaryDirectory()
        self.json = os.path.join(self.dir.name, "mp.json")

    def tearDown(self):
        self.dir.cleanup()

    def check_projection(self, doc, tp, groups):
        mp = doc["model_parallel"]
        self.assertEqual((mp["tp"], mp["pp"], mp["dp"], mp["gpus"], mp["nodes"]), (tp, 1, 4 // tp, 4, 1))
        self.assertEqual(mp["activation_bytes"], 256 * 64 * 2)  # bfloat16
        ar = mp["tp_allreduce"]
        self.assertEqual((ar["ranks"], ar["groups"], ar["bytes"], ar["dtype"], ar["wrong"]),
                         (tp, groups, 256 * 64 * 2, "float", 0))
        self.assertGreater(ar["time_us"], 0)
        self.assertIsNone(mp["pp_link"])
        p = mp["projection"]
        self.assertAlmostEqual(p["compute_ms"], 20 / tp, places=9)
        self.assertAlmostEqual(p["tp_comm_ms"], 4 * 8 * ar["time_us"] / 1e3, places=9)
        self.assertEqual((p["pp_comm_ms"], p["bubble_ms"], p["bubble_fraction"]), (0, 0, 0))
        self.assertAlmostEqual(p["step_ms"], p["compute_ms"] + p["tp_comm_ms"], places=9)
        self.assertAlmostEqual(p["speedup"], (4 // tp) * 20 / p["step_ms"], places=9)
        self.assertAlmostEqual(p["efficiency"], p["speedup"] / 4, places=9)

    def test_scale_tp2_table_json_report_and_html(self):
        proc = mpirun(4, "scale", "--tp", "2", *self.MODEL, *self.QUICK, "--scale-bytes", "64K",
                      "--price-per-gpu-hour", "2", "--json", self.json)
        self.assertEqual(proc.returncode, 0, proc.stderr)
        self.assertIn("# Projected model-parallel training: tp 2 x pp 1 x dp 2 on 4 ranks (1 node)", proc.stdout)
        self.assertIn("# TP all-reduce of 32 KiB (float) on 2 groups of 2 ranks within a node", proc.stdout)
        self.assertIn("TP comm (ms)", proc.stdout)
        self.assertIn("# Cost of model-parallel training (tp 2 x pp 1 x dp 2, 4 ranks):", proc.stdout)
        validate(self, self.json)
        with open(self.json, encoding="utf-8") as f:
            doc = json.load(f)
        self.check_projection(doc, 2, 2)
        report = subprocess.run([ARGS.binary, "report", self.json], capture_output=True, text=True, timeout=60)
        self.assertEqual(report.returncode, 0, report.stderr)
        self.assertIn("# Projected model-parallel training: tp 2 x pp 1 x dp 2", report.stdout)
        self.assertRegex(report.stdout, r"#   model parallel \(tp 2 x pp 1 x dp 2, 4 ranks\): step [0-9.]+ ms, "
                                        r"USD [0-9.]+ per 1000 steps")
        html = os.path.join(self.dir.name, "mp.html")
        report = subprocess.run([ARGS.binary, "report", self.json, "--html", html], capture_output=True, text=True,
                                timeout=60)
        self.assertEqual(report.returncode, 0, report.stderr)
        with open(html, encoding="utf-8") as f:
            page = f.read()
        self.assertIn('<section id="model-parallel">', page)
        self.assertIn("TP all-reduce of 32 KiB (float) on 2 groups of 2 ranks", page)
        self.assertIn('<p class="model-parallel-cost">', page)

    def test_run_tp4_one_group_of_all_four(self):
        proc = mpirun(4, "run", "--tp", "4", *self.MODEL, *self.QUICK, "--sizes", "64K", "--ops", "allreduce",
                      *SMALL_PHASES, "--no-measure", "--json", self.json)
        self.assertEqual(proc.returncode, 0, proc.stderr)
        self.assertIn("# Projected model-parallel training: tp 4 x pp 1 x dp 1 on 4 ranks", proc.stdout)
        self.assertIn("on 1 group of 4 ranks", proc.stdout)
        validate(self, self.json)
        with open(self.json, encoding="utf-8") as f:
            doc = json.load(f)
        self.assertTrue(doc["status"]["complete"])
        self.check_projection(doc, 4, 1)

    def test_bad_combinations_exit_2_with_one_line(self):
        cases = [
            (["scale", "--tp", "3", *self.MODEL], r"--tp 3: must divide the 4 ranks per node"),
            (["scale", "--tp", "8", *self.MODEL], r"--tp 8: must divide the 4 ranks per node"),
            (["run", "--pp", "2", *self.MODEL], r"--pp 2: must divide the 1 node "),
            (["scale", "--pp", "2", *self.MODEL], r"--pp 2: the pipeline projection uses the node-pair matrix"),
            (["run", "--tp", "2", "--layers", "8", "--compute-ms", "20"], r"--hidden: the model-parallel projection"),
            (["run", "--tp", "0"], r"--tp 0: must be between 1 and"),
            (["scale", "--hidden", "256"], r"--hidden: used only with --tp or --pp above 1"),
        ]
        for args, message in cases:
            with self.subTest(args=args):
                proc = mpirun(4, *args, "--transport", "mpi", timeout=60)
                self.assertEqual(proc.returncode, 2, proc.stdout + proc.stderr)
                lines = [l for l in proc.stderr.splitlines() if l.strip()]
                self.assertEqual(len(lines), 1, proc.stderr)
                self.assertRegex(lines[0], "^fabricbench: error: " + message)
                self.assertNotIn("MPI_ABORT", proc.stdout + proc.stderr)


class Version(unittest.TestCase):
    def test_version_names_transports_and_libraries(self):
        proc = subprocess.run([ARGS.binary, "version"], capture_output=True, text=True, timeout=60)
        self.assertEqual(proc.returncode, 0)
        self.assertRegex(proc.stdout, r"^fabricbench \d+\.\d+\.\d+ \(git [0-9a-z-]+\)")
        self.assertIn("transports: mpi", proc.stdout)
        self.assertIn("Open MPI", proc.stdout)


if __name__ == "__main__":
    parser = argparse.ArgumentParser()
    parser.add_argument("--binary", required=True)
    parser.add_argument("--mpirun", required=True)
    parser.add_argument("--schema", required=True)
    parser.add_argument("--validator", required=True)
    parser.add_argument("--golden", required=True)
    ARGS, rest = parser.parse_known_args()
    unittest.main(argv=[sys.argv[0], "-v", *rest])
