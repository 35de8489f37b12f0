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
import re
import shutil
import signal
import socket
import stat
import subprocess
import sys
import tempfile
import time
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
        (["sweep", "--timeout", "1e309"], r"--timeout inf: must be at most 604800 seconds"),
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


class HostileFiles(unittest.TestCase, OneLine):
    """Schema-valid (or nearly) files built to break the reader or mislead."""

    def setUp(self):
        self.dir = tempfile.TemporaryDirectory()
        self.base = golden("run_a.json")

    def tearDown(self):
        self.dir.cleanup()

    def write(self, doc=None, text=None, name="hostile.json"):
        path = os.path.join(self.dir.name, name)
        with open(path, "w", encoding="utf-8") as f:
            f.write(text if text is not None else json.dumps(doc))
        return path

    def variant(self, change):
        doc = copy.deepcopy(self.base)
        change(doc)
        return self.write(doc)

    def test_out_of_range_integers_are_refused_not_wrapped(self):
        big = 2**63 - 1
        cases = [
            (lambda d: d["pairs"]["links"][0].update({"from": big}), r"pairs/links/0/from: 9223372036854775807 is not an"),
            (lambda d: d["pairs"].update({"intra_node": [intra(0, {"from": 0, "to": big, "bandwidth_gbs": 1.0,
                                                                  "latency_us": 1.0})]}),
             r"pairs/intra_node/0/links/0/to: 9223372036854775807 is not an"),
            (lambda d: d["run"].update({"ranks": 4294967297}), r"run/ranks: 4294967297 is not an integer"),
            (lambda d: d["records"][0].update({"bytes": 1e20}), r"records/0/bytes: 1e\+20 is not an integer"),
            (lambda d: d["records"][0].update({"iterations": 2**32}), r"records/0/iterations: 4294967296 is not an"),
        ]
        for change, pattern in cases:
            with self.subTest(pattern=pattern):
                path = self.variant(change)
                self.assert_one_line(run("report", path, timeout=30), 2, re_file(path) + pattern)

    def test_fields_that_disagree_are_refused_with_the_field_named(self):
        def empty_hosts(d):
            d["pairs"]["hosts"] = []
            d["pairs"]["links"] = []
            d["pairs"]["intra_node"] = [intra(0, {"from": 0, "to": 1, "bandwidth_gbs": 1.0, "latency_us": 1.0})]
            d["findings"] = []
        cases = [
            (empty_hosts, r"pairs.hosts: 0 names for the 2 nodes of run.nodes"),
            (lambda d: d["run"].update({"nodes": 3}), r"run.hostnames: 2 names for the 3 nodes of run.nodes"),
            (lambda d: d["run"].update({"ranks": 15}), r"run.ranks: 15, but run.ranks_per_node adds up to 16"),
            (lambda d: d["scaling"]["levels"][0]["groups"][0].update({"nodes": [7]}),
             r"scaling/levels/0/groups/0/nodes/0: node 7 is not one of the 2 nodes"),
        ]
        for change, pattern in cases:
            with self.subTest(pattern=pattern):
                path = self.variant(change)
                self.assert_one_line(run("report", path, timeout=30), 2, re_file(path) + pattern)

    def test_per_record_wrong_elements_fail_the_verdict(self):
        def corrupt(d):
            d["records"][0]["wrong"] = 7
            d["status"]["wrong_elements"] = 0
            d["status"]["data_ok"] = True
        proc = run("report", self.variant(corrupt), timeout=30)
        self.assertEqual(proc.returncode, 3, proc.stdout + proc.stderr)
        self.assertIn("7 wrong elements", proc.stdout)
        self.assertNotIn("Verdict: OK", proc.stdout)

    def test_deep_nesting_is_refused_at_parse_time(self):
        text = json.dumps(self.base)[:-1] + ', "x": ' + "[" * 100000 + "]" * 100000 + "}"
        path = self.write(text=text)
        self.assert_one_line(run("report", path, timeout=30), 2, re_file(path) + r"nested deeper than 64 levels at x/0/0")

    def test_number_beyond_a_double_exits_2_naming_the_file(self):
        text = json.dumps(self.base).replace('"busbw_gbs": 45.0', '"busbw_gbs": 1e309', 1)
        path = self.write(text=text)
        self.assert_one_line(run("report", path, timeout=30), 2, re_file(path) + r"a number is out of range.*1e309")

    def test_long_strings_in_pattern_fields_are_checked_without_recursion(self):
        path = self.variant(lambda d: d["tool"].update({"version": "9" * 100000 + ".0.0"}))
        self.assertEqual(run("report", "-q", path, timeout=30).returncode, run("report", "-q", ARGS.golden + "/run_a.json").returncode)
        path = self.variant(lambda d: d["tool"].update({"version": "9" * 100000}))
        self.assert_one_line(run("report", path, timeout=30), 2, r"tool/version: .* does not match")

    def test_many_unique_items_are_checked_quickly(self):
        path = self.variant(lambda d: d["tool"].update({"transports": [f"t{i}" for i in range(100000)]}))
        # The bound is a hang's, not a speed: the quadratic check took hours
        # under the sanitizers; n log n takes seconds even on a loaded machine
        # (the unit test SchemaValidator.UniqueItems* holds the ratio).
        proc = run("report", path, timeout=300)
        self.assertIn(proc.returncode, (0, 2), proc.stderr)
        path = self.variant(lambda d: d["tool"].update({"transports": [f"t{i}" for i in range(100000)] + ["t5"]}))
        self.assert_one_line(run("report", path, timeout=300), 2, r"tool/transports: items 5 and 100000 are equal")

    def test_output_size_is_bounded_by_the_input(self):
        hosts = [f"host-{i:05d}" for i in range(2000)]
        def many(d):
            d["run"].update({"nodes": 2000, "hostnames": hosts, "ranks_per_node": [8] * 2000, "ranks": 16000})
            d["pairs"].update({"hosts": hosts, "intra_node": []})
            d["findings"] = []
            d.pop("scaling")
        path = self.variant(many)
        html = os.path.join(self.dir.name, "out.html")
        proc = run("report", "-q", path, "--html", html, timeout=120)
        self.assertIn(proc.returncode, (0, 1, 3), proc.stderr)
        self.assertLess(os.path.getsize(html), 50 * os.path.getsize(path))
        proc = run("report", path, timeout=120)
        self.assertLess(len(proc.stdout), 50 * os.path.getsize(path))


class Injection(unittest.TestCase):
    def setUp(self):
        self.dir = tempfile.TemporaryDirectory()

    def tearDown(self):
        self.dir.cleanup()

    def write(self, doc):
        path = os.path.join(self.dir.name, "in.json")
        with open(path, "w", encoding="utf-8") as f:
            json.dump(doc, f)
        return path

    def test_escape_codes_from_a_file_never_reach_the_terminal(self):
        doc = golden("run_a.json")
        evil = "a-node-1\x1b]0;owned\x07\x1b[2J\u009b31m"
        doc["run"]["hostnames"][0] = evil
        doc["pairs"]["hosts"][0] = evil
        proc = run("report", self.write(doc), timeout=60)
        self.assertIn(proc.returncode, (0, 1, 3), proc.stderr)
        self.assertNotIn("\x1b", proc.stdout)
        self.assertNotIn("\x07", proc.stdout)
        self.assertNotIn("\u009b", proc.stdout)
        self.assertIn("\\x1b]0;owned", proc.stdout)

    def test_csv_cells_from_a_file_cannot_be_formulas(self):
        doc = golden("run_a.json")
        record = {k: doc["records"][0][k] for k in ("op", "dtype", "redop", "root", "placement", "bytes", "count",
                                                   "ranks")}
        record["skipped"] = '=HYPERLINK("http://example.invalid","x")'
        doc["records"].append(record)
        csv_path = os.path.join(self.dir.name, "out.csv")
        proc = run("report", "-q", self.write(doc), "--csv", csv_path, timeout=60)
        self.assertIn(proc.returncode, (0, 1, 3), proc.stderr)
        with open(csv_path, encoding="utf-8") as f:
            text = f.read()
        self.assertIn("\"'=HYPERLINK(", text)
        self.assertNotIn(",=HYPERLINK", text)
        self.assertNotIn(',"=HYPERLINK', text)


class Unchecked(unittest.TestCase):
    def test_no_check_writes_data_ok_null_and_reports_say_not_checked(self):
        if not ARGS.mpirun:
            self.skipTest("built without MPI")
        with tempfile.TemporaryDirectory() as d:
            path = os.path.join(d, "r.json")
            proc = mpirun(2, "sweep", "--transport", "mpi", "--sizes", "64", "--ops", "allreduce", "--no-check",
                          "--json", path)
            self.assertEqual(proc.returncode, 0, proc.stderr)
            with open(path, encoding="utf-8") as f:
                status = json.load(f)["status"]
            self.assertIsNone(status["data_ok"])
            self.assertFalse(status["checked"])
            proc = run("report", path)
            self.assertEqual(proc.returncode, 0, proc.stderr)
            self.assertIn("data not checked (--no-check)", proc.stdout)
            self.assertNotIn("every checked element was right", proc.stdout)


def children(pid):
    """Child pids from /proc (no procps needed)."""
    out = []
    for entry in os.listdir("/proc"):
        if not entry.isdigit():
            continue
        try:
            with open(f"/proc/{entry}/stat", encoding="utf-8") as f:
                fields = f.read().rsplit(")", 1)[1].split()
        except OSError:
            continue
        if int(fields[1]) == pid:
            out.append(entry)
    return out


def ended(pid):
    """Whether process `pid` has exited: a zombie not yet reaped, or gone."""
    try:
        with open(f"/proc/{pid}/stat", encoding="utf-8") as f:
            return f.read().rsplit(")", 1)[1].split()[0] == "Z"
    except (OSError, IndexError):
        return True


def rank_pid(launcher, rank):
    """The pid of world rank `rank` among the launcher's children."""
    deadline = time.time() + 30
    while time.time() < deadline:
        for kid in children(launcher):
            try:
                with open(f"/proc/{kid}/environ", "rb") as f:
                    env = f.read().split(b"\0")
            except OSError:
                continue
            if f"OMPI_COMM_WORLD_RANK={rank}".encode() in env:
                return int(kid)
        time.sleep(0.2)
    raise AssertionError(f"rank {rank} did not start")


class Deadlines(unittest.TestCase):
    """--timeout on the MPI path, signals and a killed rank: the run ends, says why, and saves."""

    def setUp(self):
        if not ARGS.mpirun:
            self.skipTest("built without MPI")
        self.dir = tempfile.TemporaryDirectory()
        self.json = os.path.join(self.dir.name, "r.json")

    def tearDown(self):
        self.dir.cleanup()

    def start(self, np_, *extra):
        sweep = ["sweep", "--transport", "mpi", "--ops", "allreduce,allgather,sendrecv", "-b", "1K", "-e", "64K",
                 "--min-time-ms", "300", "--json", self.json, *extra]
        if np_ == 0:
            cmd = [ARGS.binary, *sweep]
        else:
            cmd = [ARGS.mpirun, "--allow-run-as-root", "--oversubscribe", "--bind-to", "none", "-q", "-np", str(np_),
                   ARGS.binary, *sweep]
        return subprocess.Popen(cmd, stdout=subprocess.PIPE, stderr=subprocess.PIPE, text=True,
                                start_new_session=True)

    def wait_for_sweep(self, proc):
        # The first save comes as the sweep starts; the sweep then lasts long
        # enough (seconds per op) for what the test does next.
        deadline = time.time() + 60
        while time.time() < deadline and proc.poll() is None:
            try:
                with open(self.json, encoding="utf-8") as f:
                    json.load(f)
                return
            except (OSError, ValueError):
                pass
            time.sleep(0.1)
        if proc.poll() is None:
            os.killpg(proc.pid, signal.SIGKILL)
        out, err = proc.communicate()
        self.fail(f"the sweep did not start in time (exit {proc.returncode}): {out[-500:]} {err[-2000:]}")

    def finish(self, proc, within):
        try:
            _, err = proc.communicate(timeout=within)
        except subprocess.TimeoutExpired:
            os.killpg(proc.pid, signal.SIGKILL)
            proc.communicate()
            self.fail(f"the run did not end within {within} s")
        with open(self.json, encoding="utf-8") as f:
            status = json.load(f)["status"]
        self.assertFalse(status["complete"])
        return err, status

    def test_a_stopped_rank_ends_the_run_after_the_timeout_with_exit_4(self):
        proc = self.start(4, "--timeout", "5")
        self.wait_for_sweep(proc)
        stopped = rank_pid(proc.pid, 2)
        os.kill(stopped, signal.SIGSTOP)
        try:
            err, status = self.finish(proc, 120)  # a hang, not a slow end, fails this
        finally:
            try:
                os.kill(stopped, signal.SIGKILL)
            except ProcessLookupError:
                pass
        self.assertEqual(proc.returncode, 4, err)
        self.assertRegex(err, r"fabricbench: error: timeout: rank \d on \S+ waited more than 5 s in the sweep "
                              r"phase, (allreduce|allgather|sendrecv) at \d+ KiB \(--timeout 5\)")
        self.assertRegex(status["reason"], r"^timeout: rank \d on \S+ waited more than 5 s in the sweep phase")

    def test_a_rank_stopped_before_mpi_is_up_ends_the_job_at_the_deadline(self):
        # Rank 1 stops before MPI_Init, so rank 0 waits in MPI's own start-up:
        # the watchdog covers it (the job once hung until killed from outside).
        sweep = ["sweep", "--sizes", "64", "--ops", "allreduce", "--timeout", "3", "--json", self.json]
        cmd = [ARGS.mpirun, "--allow-run-as-root", "--oversubscribe", "--bind-to", "none", "-q", "-np", "1",
               ARGS.binary, *sweep, ":", "-np", "1", "sh", "-c", 'kill -STOP $$; exec "$0" "$@"', ARGS.binary, *sweep]
        proc = subprocess.Popen(cmd, stdout=subprocess.PIPE, stderr=subprocess.PIPE, text=True, start_new_session=True)
        try:
            _, err = proc.communicate(timeout=120)  # a hang, not a slow end, fails this
        except subprocess.TimeoutExpired:
            os.killpg(proc.pid, signal.SIGKILL)
            proc.communicate()
            self.fail("the job did not end after the deadline")
        self.assertEqual(proc.returncode, 4, err)
        lines = [l for l in err.splitlines() if l.startswith("fabricbench: ")]
        self.assertEqual(lines, ["fabricbench: error: timeout: rank 0 on " + socket.gethostname() +
                                 " waited more than 3 s in the MPI start-up phase (--timeout 3)"], err)
        self.assertFalse(os.path.exists(self.json))  # the ranks never met: nothing to record

    def test_sigint_saves_and_exits_5(self):
        proc = self.start(0)
        self.wait_for_sweep(proc)
        proc.send_signal(signal.SIGINT)
        err, status = self.finish(proc, 60)
        self.assertEqual(proc.returncode, 5, err)
        self.assertIn("fabricbench: error: interrupted by SIGINT", err)
        self.assertTrue(status["reason"].startswith("interrupted by SIGINT"), status)

    def test_an_interrupt_keeps_every_point_it_printed(self):
        # Ctrl-C to mpirun in the middle of an op (3 of all-reduce's 11 sizes
        # printed, 2 s or more each; mpirun may pass the rows on late on a
        # loaded machine): the file holds every printed row, not only the ops
        # that had ended.
        cmd = [ARGS.mpirun, "--allow-run-as-root", "--oversubscribe", "--bind-to", "none", "-q", "-np", "2",
               ARGS.binary, "sweep", "--transport", "mpi", "--ops", "allreduce", "-b", "1K", "-e", "1M",
               "--min-time-ms", "1000", "--max-time-ms", "1500", "--json", self.json]
        proc = subprocess.Popen(cmd, stdout=subprocess.PIPE, stderr=subprocess.PIPE, text=True,
                                start_new_session=True)
        rows = []
        while len(rows) < 3:
            line = proc.stdout.readline()
            if not line:
                break
            fields = line.split()
            if fields and fields[0].isdigit():
                rows.append((int(fields[0]), fields[2]))
        self.assertEqual(len(rows), 3, "the sweep ended before printing 3 rows")
        proc.send_signal(signal.SIGINT)
        err, _ = self.finish(proc, 60)
        self.assertNotEqual(proc.returncode, 0, err)
        with open(self.json, encoding="utf-8") as f:
            records = json.load(f)["records"]
        kept = {(r["bytes"], r["dtype"]) for r in records if r["op"] == "allreduce" and r.get("time_us") is not None}
        self.assertLessEqual(set(rows), kept, f"printed {rows}, kept {sorted(kept)}")
        self.assertLess(len(kept), 11, "the interrupt came after all-reduce had ended: it tests nothing")

    def test_sigterm_to_mpirun_ends_the_run_within_seconds_and_saves_the_reason(self):
        proc = self.start(2)
        self.wait_for_sweep(proc)
        proc.send_signal(signal.SIGTERM)
        err, status = self.finish(proc, 60)  # it ends (in about a second), never hangs
        self.assertNotEqual(proc.returncode, 0)  # mpirun's own status when it is the one signalled
        # mpirun sends the ranks SIGCONT, SIGTERM a second later, then
        # SIGKILL within milliseconds: rank 0 saves on the first, with the
        # reason, and writes nothing more (a write then could be cut between
        # naming its file and the rename), so the reason is always there.
        self.assertEqual(status["reason"], f"interrupted by SIGTERM from the launcher on {socket.gethostname()} "
                                           "(rank 0) in the sweep phase: the launcher was interrupted, or another "
                                           "rank ended first (its error is above)")
        self.assertEqual(self.left_behind(), [])

    def test_sigterm_to_mpirun_saves_the_reason_while_the_disk_syncs_slowly(self):
        # Rank 0 saves on the launcher's SIGCONT and SIGKILL follows two
        # seconds later: a save that waited for fsync (3 s here, injected
        # with strace; a busy disk in CI) was killed before its rename, and
        # the file kept the save before it, without the reason.
        strace = shutil.which("strace")
        self.assertIsNotNone(strace, "strace is a test dependency (scripts/setup.sh --test)")
        proc = self.start(2)
        self.wait_for_sweep(proc)
        tracer = subprocess.Popen([strace, "-f", "-o", os.devnull, "-e", "trace=fsync", "-e",
                                   "inject=fsync:delay_enter=3000000", "-p", str(rank_pid(proc.pid, 0))],
                                  stdout=subprocess.DEVNULL, stderr=subprocess.PIPE, text=True)
        try:
            attached = False
            for line in tracer.stderr:  # "strace: Process N attached with 4 threads"
                attached = "attached" in line
                if attached:
                    break
            if not attached:
                os.killpg(proc.pid, signal.SIGKILL)
                proc.communicate()
                self.fail("strace did not attach to rank 0")
            proc.send_signal(signal.SIGTERM)
            err, status = self.finish(proc, 60)
        finally:
            tracer.wait(timeout=30)
        self.assertNotEqual(proc.returncode, 0)
        self.assertEqual(status["reason"], f"interrupted by SIGTERM from the launcher on {socket.gethostname()} "
                                           "(rank 0) in the sweep phase: the launcher was interrupted, or another "
                                           "rank ended first (its error is above)", err)
        self.assertEqual(self.left_behind(), [])

    def left_behind(self):
        return [n for n in os.listdir(self.dir.name) if n != "r.json"]

    def test_sigterm_to_one_rank_is_saved_as_that_rank_s(self):
        # The signalled rank tells rank 0 before it ends; the launcher's
        # SIGTERM to the rest then changes nothing.
        proc = self.start(3)
        self.wait_for_sweep(proc)
        os.kill(rank_pid(proc.pid, 2), signal.SIGTERM)
        err, status = self.finish(proc, 60)
        expected = f"interrupted by SIGTERM on {socket.gethostname()} (rank 2) in the sweep phase"
        self.assertEqual(status["reason"], expected)
        self.assertEqual([l for l in err.splitlines() if l.startswith("fabricbench: ")],
                         ["fabricbench: error: " + expected], err)
        self.assertEqual(self.left_behind(), [])

    def test_a_stopped_rank_0_is_saved_as_stopped_not_as_waiting(self):
        # The others' deadline passes while rank 0 is stopped; they tell it
        # their reason and end. Continued, rank 0 saves theirs, with its own
        # stop, not "rank 0 waited". (mpirun ends a job with SIGCONT, SIGTERM
        # and SIGKILL odls_base_sigkill_timeout seconds apart, and a rank
        # continued by its SIGCONT may not run before the SIGKILL: 30 s apart
        # here, and the test continues rank 0 once the others have ended.
        # Rank 0 alone writes the file, so the file is final once rank 0 has
        # ended; mpirun then only sleeps through the rest of those steps, a
        # minute, before it exits: the test ends it there instead.)
        sweep = ["sweep", "--transport", "mpi", "--ops", "allreduce", "-b", "1K", "-e", "64K", "--min-time-ms", "300",
                 "--json", self.json, "--timeout", "4"]
        proc = subprocess.Popen([ARGS.mpirun, "--allow-run-as-root", "--oversubscribe", "--bind-to", "none", "-q",
                                 "--mca", "odls_base_sigkill_timeout", "30", "-np", "3", ARGS.binary, *sweep],
                                stdout=subprocess.PIPE, stderr=subprocess.PIPE, text=True, start_new_session=True)
        self.wait_for_sweep(proc)
        stopped = rank_pid(proc.pid, 0)
        others = [rank_pid(proc.pid, r) for r in (1, 2)]
        os.kill(stopped, signal.SIGSTOP)
        try:
            deadline = time.time() + 60
            while time.time() < deadline and not all(ended(pid) for pid in others):
                time.sleep(0.1)
            os.kill(stopped, signal.SIGCONT)
            deadline = time.time() + 120  # a hang, not a slow end, fails this
            while time.time() < deadline and not ended(stopped):
                time.sleep(0.1)
            rank_0_ended = ended(stopped)
            os.killpg(proc.pid, signal.SIGKILL)
            proc.communicate()
            self.assertTrue(rank_0_ended, "rank 0 did not end within 120 s of its SIGCONT")
        finally:
            try:
                os.kill(stopped, signal.SIGKILL)
            except ProcessLookupError:
                pass
        with open(self.json, encoding="utf-8") as f:
            status = json.load(f)["status"]
        self.assertFalse(status["complete"])
        host = re.escape(socket.gethostname())
        self.assertRegex(status["reason"], rf"^timeout: rank [12] on {host} waited more than 4 s in the sweep phase"
                                           rf".*; rank 0 on {host} did not run for \d+\.\d s before this \(stopped, "
                                           r"or starved of CPU\)$")
        self.assertEqual(self.left_behind(), [])

    def test_a_deadline_on_a_loaded_host_says_the_host_is_loaded(self):
        # Every rank and a busy loop on one CPU: a rank waits for a CPU most
        # of the time, and the reason says a batch may simply be that slow.
        cpu = min(os.sched_getaffinity(0))
        pin = lambda: os.sched_setaffinity(0, {cpu})  # noqa: E731
        busy = subprocess.Popen([sys.executable, "-c", "while True: pass"], preexec_fn=pin)
        try:
            sweep = ["sweep", "--transport", "mpi", "--ops", "allreduce", "-b", "1K", "-e", "64K", "--min-time-ms",
                     "300", "--json", self.json, "--timeout", "4"]
            proc = subprocess.Popen([ARGS.mpirun, "--allow-run-as-root", "--oversubscribe", "--bind-to", "none", "-q",
                                     "-np", "3", ARGS.binary, *sweep], stdout=subprocess.PIPE, stderr=subprocess.PIPE,
                                    text=True, start_new_session=True, preexec_fn=pin)
            self.wait_for_sweep(proc)
            stopped = rank_pid(proc.pid, 2)
            os.kill(stopped, signal.SIGSTOP)
            try:
                err, status = self.finish(proc, 120)
            finally:
                try:
                    os.kill(stopped, signal.SIGKILL)
                except ProcessLookupError:
                    pass
        finally:
            busy.kill()
            busy.wait()
        self.assertRegex(status["reason"], r"^timeout: rank [01] on \S+ waited more than 4 s in the sweep phase, "
                                           r"allreduce at \d+ KiB \(--timeout 4\); this host is loaded: rank [01] "
                                           r"waited \d+\.\d s of those \d+\.\d s for a CPU, so one batch may take "
                                           r"longer than the deadline: raise --timeout, or run fewer ranks per core$")

    def test_a_killed_rank_ends_the_run_within_seconds(self):
        proc = self.start(3)
        self.wait_for_sweep(proc)
        os.kill(rank_pid(proc.pid, 1), signal.SIGKILL)
        self.finish(proc, 60)  # it ends (in about a second), never hangs
        self.assertNotEqual(proc.returncode, 0)


def intra(node, *links):
    return {"node": node, "host": f"a-node-{node + 1}", "links": list(links)}


def re_file(path):
    import re
    return "^fabricbench: error: " + re.escape(path) + ": "


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

    def test_run_refuses_targets_the_final_rename_cannot_replace(self):
        # Results are renamed onto their target at the end: an immutable or
        # append-only file, or a file mounted over the target, made that
        # rename fail (exit 4) after the whole run. Refused before measuring.
        if not ARGS.mpirun:
            self.skipTest("built without MPI")
        if os.geteuid() != 0:
            self.skipTest("chattr and mount --bind need root")
        sweep = ["sweep", "--transport", "mpi", "--sizes", "64", "--ops", "allreduce"]
        for letter, flag, why in (("i", "--json", r"is immutable \(chattr \+i\)"),
                                  ("a", "--csv", r"is append-only \(chattr \+a\)")):
            with self.subTest(chattr=letter):
                target = os.path.join(self.dir.name, f"locked-{letter}")
                with open(target, "w", encoding="utf-8") as f:
                    f.write("precious")
                if shutil.which("chattr") is None or shutil.which("lsattr") is None:
                    self.skipTest("chattr/lsattr are not installed")
                flagged = subprocess.run(["chattr", "+" + letter, target], capture_output=True, text=True)
                if flagged.returncode != 0:
                    self.skipTest(f"this file system takes no chattr +{letter}: {flagged.stderr.strip()}")
                try:
                    proc = mpirun(1, *sweep, flag, target)
                    self.assert_one_line(proc, 2, f"^fabricbench: error: {flag} .*locked-{letter}: {why}, so the "
                                                  f"finished result cannot be renamed over it; clear the flag "
                                                  f"\\(chattr -{letter} ")
                    self.assertNotIn("allreduce on", proc.stdout)  # refused before the run
                finally:
                    subprocess.run(["chattr", "-" + letter, target], check=True)
                with open(target, encoding="utf-8") as f:
                    self.assertEqual(f.read(), "precious")
        with self.subTest(case="mount point"):
            source = os.path.join(self.dir.name, "source")
            target = os.path.join(self.dir.name, "mounted")
            for path, text in ((source, "mounted over"), (target, "underneath")):
                with open(path, "w", encoding="utf-8") as f:
                    f.write(text)
            bound = subprocess.run(["mount", "--bind", source, target], capture_output=True, text=True)
            if bound.returncode != 0:
                self.skipTest(f"mount --bind is not allowed here: {bound.stderr.strip()}")
            try:
                proc = mpirun(1, *sweep, "--json", target)
                self.assert_one_line(proc, 2, r"^fabricbench: error: --json .*mounted: is a mount point .*, so the "
                                              r"finished result cannot be renamed over it; unmount it \(umount ")
                self.assertNotIn("allreduce on", proc.stdout)
                # report's --html goes through the same check.
                proc = run("report", self.input, "--html", target)
                self.assert_one_line(proc, 2, r"^fabricbench: error: --html .*mounted: is a mount point")
            finally:
                subprocess.run(["umount", target], check=True)
            with open(target, encoding="utf-8") as f:
                self.assertEqual(f.read(), "underneath")
        left = [n for n in os.listdir(self.dir.name) if n.startswith(".")]
        self.assertEqual(left, [])  # no probe or temporary stayed

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


SHORT_SWEEP = ["sweep", "-b", "1K", "-e", "64K", "-n", "2", "-w", "1", "--ops", "allreduce", "-q"]
# A group without a launcher that met and reached its transport: on a machine
# without a GPU its rank 0 says so in one line (exit 2) after the meeting's
# collectives ran; with one, it measures.
NO_TRANSPORT = r"^fabricbench: error: (no CUDA device visible on |--transport mpi needs mpirun)"


def gpu_visible():
    try:
        proc = subprocess.run(["nvidia-smi", "-L"], capture_output=True, text=True, timeout=60)
    except (OSError, subprocess.TimeoutExpired):
        return False
    return proc.returncode == 0 and "GPU 0" in proc.stdout


GPU = None


def have_gpu():
    global GPU  # pylint: disable=global-statement
    if GPU is None:
        GPU = gpu_visible()
    return GPU


def start_member(folder, rank, size, *args, label="run", json_path=None):
    """One process of a launcher-free group meeting in `folder`."""
    env = {k: v for k, v in os.environ.items() if not k.startswith(("OMPI_", "PMIX_", "PMI_", "SLURM_"))}
    env.update(FABRICBENCH_BOOTSTRAP=folder, FABRICBENCH_RANK=str(rank), FABRICBENCH_WORLD_SIZE=str(size),
               NCCL_HOSTID=f"{label}-{rank}")
    cmd = [ARGS.binary, *(args or SHORT_SWEEP), "--label", label, "--timeout", "5"]
    if size > 1:
        cmd.append("--allow-shared-gpu")  # the ranks of one machine may share its one GPU
    if json_path:
        cmd += ["--json", json_path]
    return subprocess.Popen(cmd, env=env, stdout=subprocess.PIPE, stderr=subprocess.PIPE, text=True)


def finish(procs, timeout=240):
    """(returncode, stdout, stderr) of each, killing all of them past `timeout`."""
    deadline = time.monotonic() + timeout
    out = []
    try:
        for p in procs:
            o, e = p.communicate(timeout=max(1.0, deadline - time.monotonic()))
            out.append((p.returncode, o, e))
    finally:
        for p in procs:
            if p.poll() is None:
                p.kill()
                p.communicate()
    return out


def await_path(path, procs, timeout=60):
    """Waits until `path` exists (while `procs` still run)."""
    deadline = time.monotonic() + timeout
    while not os.path.exists(path):
        if time.monotonic() > deadline or any(p.poll() is not None for p in procs):
            raise AssertionError(f"{path} did not appear")
        time.sleep(0.02)


def error_lines(stderr):
    return [l for l in stderr.splitlines() if l.strip()]


class GroupChecks:
    def assert_ran(self, results, label="run", json_path=None):
        """A group whose members met, every one of them done."""
        (code0, _, err0), *others = results
        if have_gpu():
            self.assertEqual(code0, 0, err0)
            if json_path:
                with open(json_path, encoding="utf-8") as f:
                    doc = json.load(f)
                self.assertTrue(doc["status"]["complete"])
                self.assertEqual(doc["run"]["label"], label)
                self.assertEqual(doc["run"]["ranks"], len(results))
        else:
            self.assertEqual(code0, 2, err0)
            lines = error_lines(err0)
            self.assertEqual(len(lines), 1, err0)
            self.assertRegex(lines[0], NO_TRANSPORT)
        for code, _, err in others:
            self.assertEqual(code, code0, err)
            self.assertEqual(error_lines(err), [])


class LauncherlessFolder(unittest.TestCase, GroupChecks):
    """FABRICBENCH_BOOTSTRAP: the meeting folder of processes started by hand."""

    def setUp(self):
        self.dir = tempfile.TemporaryDirectory()
        self.folder = os.path.join(self.dir.name, "meet")

    def tearDown(self):
        self.dir.cleanup()

    def test_a_symlink_is_refused_with_or_without_a_trailing_slash(self):
        os.mkdir(self.folder, 0o700)
        link = os.path.join(self.dir.name, "link")
        os.symlink(self.folder, link)
        for named in (link, link + "/", link + "//", link + "/."):
            with self.subTest(named=named):
                [(code, _, err)] = finish([start_member(named, 0, 1)], timeout=60)
                self.assertEqual(code, 2, err)
                lines = error_lines(err)
                self.assertEqual(len(lines), 1, err)
                self.assertRegex(lines[0], r"^fabricbench: error: FABRICBENCH_BOOTSTRAP .*link/*\.?: is a symlink")
        self.assertEqual(os.listdir(self.folder), [])

    def test_what_a_dead_group_left_is_not_read_by_the_next(self):
        # A rank 0 killed while its group waits for rank 1: its announcement
        # and exchange folder stay; plant an abort and a bad round file there.
        dead = start_member(self.folder, 0, 2)
        await_path(os.path.join(self.folder, "group"), [dead])
        dead.kill()
        dead.communicate()
        generations = [n for n in os.listdir(self.folder) if n.startswith("g.")]
        self.assertEqual(len(generations), 1, os.listdir(self.folder))
        with open(os.path.join(self.folder, generations[0], "abort"), "w", encoding="utf-8") as f:
            f.write("rank 1: the dead group failed\n")
        with open(os.path.join(self.folder, generations[0], "w_r0.1"), "w", encoding="utf-8") as f:
            f.write("abc")
        # Rank 1 first: the old announcement is not its group's.
        procs = [start_member(self.folder, 1, 2)]
        procs.insert(0, start_member(self.folder, 0, 2))
        results = finish(procs)
        self.assert_ran(results)
        self.assertNotIn("dead group", "".join(e for _, _, e in results))
        self.assertFalse(os.path.exists(self.folder), "the folder or a file in it was left behind")

    def test_a_second_group_in_a_folder_in_use_is_refused_at_once(self):
        first = start_member(self.folder, 0, 2)
        try:
            await_path(os.path.join(self.folder, "group"), [first])
            [(code, _, err)] = finish([start_member(self.folder, 0, 2, label="second")], timeout=60)
            self.assertEqual(code, 2, err)
            lines = error_lines(err)
            self.assertEqual(len(lines), 1, err)
            self.assertEqual(lines[0], f"fabricbench: error: FABRICBENCH_BOOTSTRAP {self.folder}: another group is "
                                       "using this folder (its rank 0 is running); give each group a folder of its own")
            rest = start_member(self.folder, 1, 2)
        except BaseException:
            first.kill()
            raise
        self.assert_ran(finish([first, rest]))
        self.assertFalse(os.path.exists(self.folder), "the folder or a file in it was left behind")

    # The sanitizer stage leaves it to the first stage: there the slower
    # starts nearly always split the groups, and a rank whose partner went to
    # the other group waits out the group's deadline (--timeout twice and a
    # minute: 70 s), idle, which checks nothing the first stage does not.
    @unittest.skipIf(os.environ.get("ASAN_OPTIONS"), "run by the unsanitized stage")
    def test_two_groups_started_at_once_in_one_folder_end_and_say_so(self):
        # Which process comes first is up to the scheduler: whatever the
        # order, every process ends (none hangs), with one line at most, and
        # either both groups ran or a line names the other group.
        procs = []
        for label in ("first", "second"):
            procs += [start_member(self.folder, r, 2, label=label) for r in range(2)]
        results = finish(procs)
        named = False
        for code, _, err in results:
            lines = error_lines(err)
            self.assertLessEqual(len(lines), 1, err)
            self.assertIn(code, (0, 2, 4), err)
            for line in lines:
                self.assertTrue(line.startswith("fabricbench: error"), line)
                if "another group is using this folder" in line:
                    self.assertIn(self.folder, line)
                    named = True
                elif code == 4:
                    # After the deadline: a rank 1 whose rank 0 was refused,
                    # or a rank 0 whose rank 1 went to the other group.
                    self.assertRegex(line, r"for rank 0 of its group to start it|waited \d+ ms in .* for rank\(s\) 1 "
                                           r"of its group")
                else:
                    self.assertRegex(line, NO_TRANSPORT)
        # A process waits past its deadline only when a process was refused.
        self.assertTrue(named or all(code != 4 for code, _, _ in results), results)
        self.assertFalse(os.path.exists(self.folder), "the folder or a file in it was left behind")


class ConcurrentRuns(unittest.TestCase, GroupChecks):
    """Two runs at once on one machine keep to their own files."""

    def setUp(self):
        self.dir = tempfile.TemporaryDirectory()

    def tearDown(self):
        self.dir.cleanup()

    def start_mpirun(self, label, json_path):
        cmd = [ARGS.mpirun, "--allow-run-as-root", "--oversubscribe", "--bind-to", "none", "-q", "-np", "2",
               ARGS.binary, *SHORT_SWEEP, "--transport", "mpi", "--label", label, "--json", json_path]
        return subprocess.Popen(cmd, stdout=subprocess.PIPE, stderr=subprocess.PIPE, text=True)

    def load(self, path):
        with open(path, encoding="utf-8") as f:
            doc = json.load(f)
        self.assertTrue(doc["status"]["complete"], path)
        self.assertTrue(doc["records"], path)
        return doc

    def test_two_mpirun_runs_keep_their_own_results(self):
        if not ARGS.mpirun:
            self.skipTest("built without MPI")
        paths = {label: os.path.join(self.dir.name, f"{label}.json") for label in ("first", "second")}
        results = finish([self.start_mpirun(label, path) for label, path in paths.items()])
        for code, _, err in results:
            self.assertEqual(code, 0, err)
        for label, path in paths.items():
            self.assertEqual(self.load(path)["run"]["label"], label)
        self.assertEqual(sorted(os.listdir(self.dir.name)), ["first.json", "second.json"])  # no temporaries

    def test_two_mpirun_runs_on_one_file_leave_one_whole_document(self):
        if not ARGS.mpirun:
            self.skipTest("built without MPI")
        path = os.path.join(self.dir.name, "same.json")
        results = finish([self.start_mpirun(label, path) for label in ("first", "second")])
        for code, _, err in results:
            self.assertEqual(code, 0, err)
        doc = self.load(path)  # parses whole: one run's document, not a mix
        self.assertIn(doc["run"]["label"], ("first", "second"))
        self.assertEqual(doc["run"]["ranks"], 2)
        self.assertEqual(os.listdir(self.dir.name), ["same.json"])

    def test_two_launcherless_groups_in_sibling_folders_run_side_by_side(self):
        parent = os.path.join(self.dir.name, "meetings")
        os.mkdir(parent, 0o700)
        groups = {}
        for label in ("first", "second"):
            json_path = os.path.join(self.dir.name, f"{label}.json")
            groups[label] = (json_path, [start_member(os.path.join(parent, label), r, 2, label=label,
                                                      json_path=json_path) for r in range(2)])
        for label, (json_path, procs) in groups.items():
            with self.subTest(label=label):
                self.assert_ran(finish(procs), label=label, json_path=json_path)
        self.assertEqual(os.listdir(parent), [])  # both folders removed
        left = sorted(os.listdir(self.dir.name))
        self.assertEqual(left, ["first.json", "meetings", "second.json"] if have_gpu() else ["meetings"])


if __name__ == "__main__":
    parser = argparse.ArgumentParser()
    parser.add_argument("--binary", required=True)
    parser.add_argument("--mpirun", default="")
    parser.add_argument("--golden", required=True)
    ARGS, rest = parser.parse_known_args()
    unittest.main(argv=[sys.argv[0], "-v", *rest])
