#!/usr/bin/env python3
"""The storage test end to end: `fabricbench storage` and `run --storage-path`
under mpirun with local ranks. Checks the accounting (files, bytes, per-node
rows), that no file is left in the folder (also after SIGTERM), the one-line
exit 2 for a folder that cannot be used, the buffered fallback where O_DIRECT
is refused, and the storage section of `report` and its HTML. Never a speed.
"""
import argparse
import json
import os
import shutil
import signal
import subprocess
import sys
import tempfile
import time
import unittest

ARGS = None
MIB = 1 << 20


def mpirun_cmd(np_, *args):
    return [ARGS.mpirun, "--allow-run-as-root", "--oversubscribe", "--bind-to", "none", "-q", "-np", str(np_),
            ARGS.binary, *args]


def mpirun(np_, *args, timeout=300):
    return subprocess.run(mpirun_cmd(np_, *args), capture_output=True, text=True, timeout=timeout)


def validate(test, path):
    proc = subprocess.run([sys.executable, ARGS.validator, ARGS.schema, path], capture_output=True, text=True)
    test.assertEqual(proc.returncode, 0, f"{path} does not validate: {proc.stderr}")


def rank_pid(launcher, rank):
    """The pid of world rank `rank` among the launcher's children (/proc only)."""
    deadline = time.time() + 30
    while time.time() < deadline:
        for entry in os.listdir("/proc"):
            if not entry.isdigit():
                continue
            try:
                with open(f"/proc/{entry}/stat", encoding="utf-8") as f:
                    parent = int(f.read().rsplit(")", 1)[1].split()[1])
                if parent != launcher:
                    continue
                with open(f"/proc/{entry}/environ", "rb") as f:
                    env = f.read().split(b"\0")
            except (OSError, ValueError, IndexError):
                continue
            if f"OMPI_COMM_WORLD_RANK={rank}".encode() in env:
                return int(entry)
        time.sleep(0.1)
    raise AssertionError(f"rank {rank} did not start")


def process_state(pid):
    """The state letter of /proc/PID/stat ("T" when stopped), or "" once it is gone."""
    try:
        with open(f"/proc/{pid}/stat", encoding="utf-8") as f:
            return f.read().rsplit(")", 1)[1].split()[0]
    except (OSError, IndexError):
        return ""


def wait_for_files(test, folder, count):
    deadline = time.time() + 120
    while time.time() < deadline:
        names = [n for n in os.listdir(folder) if n.startswith(".fabricbench-storage-")]
        try:
            if len(names) == count and all(os.stat(os.path.join(folder, n)).st_size > 0 for n in names):
                return
        except FileNotFoundError:
            pass
        time.sleep(0.05)
    test.fail("the files never grew")


def wait_until_empty(folder):
    deadline = time.time() + 10  # the ranks may outlive mpirun by a moment
    while os.listdir(folder) and time.time() < deadline:
        time.sleep(0.1)
    return os.listdir(folder)


class Storage(unittest.TestCase):
    def setUp(self):
        self.tmp = tempfile.TemporaryDirectory()
        self.folder = os.path.join(self.tmp.name, "shared")
        os.mkdir(self.folder)
        self.json = os.path.join(self.tmp.name, "s.json")

    def tearDown(self):
        self.tmp.cleanup()

    def load(self):
        validate(self, self.json)
        with open(self.json, encoding="utf-8") as f:
            return json.load(f)

    def test_every_rank_writes_reads_and_removes_its_file(self):
        proc = mpirun(3, "storage", "--storage-path", self.folder, "--file-bytes", "3M", "--json", self.json)
        self.assertEqual(proc.returncode, 0, proc.stderr)
        self.assertEqual(os.listdir(self.folder), [])
        s = self.load()["storage"]
        self.assertEqual(s["path"], self.folder)
        self.assertEqual(s["file_bytes"], 3 * MIB)
        self.assertEqual((s["files_written"], s["files_removed"]), (3, 3))
        self.assertEqual(s["bytes_written"], 9 * MIB)
        self.assertEqual(s["bytes_read"], 9 * MIB)
        self.assertEqual(s["wrong_blocks"], 0)
        self.assertEqual(len(s["nodes"]), 1)
        self.assertEqual((s["nodes"][0]["files"], s["nodes"][0]["bytes"]), (3, 9 * MIB))
        self.assertAlmostEqual(s["write_gbs"], s["bytes_written"] / s["write_s"] / 1e9, places=9)
        self.assertAlmostEqual(s["read_gbs"], s["bytes_written"] / s["read_s"] / 1e9, places=9)
        self.assertIsNone(s["slowest_write_node"])  # one node: nobody to be slower than
        self.assertIn("# Storage in " + self.folder, proc.stdout)
        self.assertIn("# files removed afterwards: 3 of 3", proc.stdout)
        self.assertNotIn("nothing crosses a link", proc.stdout)

    def test_one_writer_per_node_and_an_odd_size_rounds_to_whole_blocks(self):
        proc = mpirun(2, "storage", "--storage-path", self.folder, "--file-bytes", "1000", "--storage-per-node",
                      "--json", self.json, "-q")
        self.assertEqual(proc.returncode, 0, proc.stderr)
        s = self.load()["storage"]
        self.assertTrue(s["per_node"])
        self.assertEqual(s["file_bytes"], 4096)
        self.assertEqual((s["files_written"], s["bytes_written"]), (1, 4096))
        self.assertEqual(os.listdir(self.folder), [])

    def test_the_io_mode_is_named_and_buffered_says_why(self):
        proc = mpirun(2, "storage", "--storage-path", self.folder, "--file-bytes", "1M", "--storage-buffered",
                      "--json", self.json, "-q")
        self.assertEqual(proc.returncode, 0, proc.stderr)
        s = self.load()["storage"]
        self.assertEqual((s["io_mode"], s["io_note"]), ("buffered", "--storage-buffered"))
        self.assertIn("buffered, cache dropped", proc.stdout)
        # tmpfs takes O_DIRECT from Linux 6.6 on and refuses it before: either
        # way the file says which, and why when buffered.
        if not os.path.isdir("/dev/shm"):
            return
        folder = tempfile.mkdtemp(dir="/dev/shm")
        try:
            proc = mpirun(2, "storage", "--storage-path", folder, "--file-bytes", "1M", "--json", self.json, "-q")
            self.assertEqual(proc.returncode, 0, proc.stderr)
            s = self.load()["storage"]
            self.assertIn(s["io_mode"], ("direct", "buffered"))
            self.assertEqual(s["io_note"] is None, s["io_mode"] == "direct", s)
            self.assertEqual(os.listdir(folder), [])
        finally:
            os.rmdir(folder)

    def test_a_folder_that_cannot_be_used_exits_2_with_one_line(self):
        afile = os.path.join(self.tmp.name, "afile")
        with open(afile, "w", encoding="utf-8") as f:
            f.write("x")
        cases = [
            (["storage", "--storage-path", os.path.join(self.tmp.name, "none")], "no such folder"),
            (["storage", "--storage-path", afile], "not a folder"),
            (["storage", "--storage-path", "/sys"], "cannot create a file there"),
            (["run", "--sizes", "1K", "--storage-path", afile], "not a folder"),
        ]
        for args, why in cases:
            proc = mpirun(2, *args)
            self.assertEqual(proc.returncode, 2, (args, proc.stdout, proc.stderr))
            lines = [l for l in proc.stderr.splitlines() if l.startswith("fabricbench:")]
            self.assertEqual(len(lines), 1, proc.stderr)
            self.assertIn(why, lines[0])
            self.assertNotIn("# allreduce", proc.stdout)  # refused before anything ran

    def test_run_with_a_storage_path_adds_the_section_and_report_shows_it(self):
        proc = mpirun(2, "run", "--sizes", "1K", "--ops", "allreduce", "--iters", "2", "--warmup", "1",
                      "--pair-bytes", "64K", "--storage-path", self.folder, "--file-bytes", "1M", "--json", self.json)
        self.assertEqual(proc.returncode, 0, proc.stderr)
        doc = self.load()
        self.assertEqual(doc["storage"]["files_written"], 2)
        self.assertTrue(doc["status"]["complete"])
        self.assertEqual(os.listdir(self.folder), [])
        html = os.path.join(self.tmp.name, "s.html")
        rep = subprocess.run([ARGS.binary, "report", self.json, "--html", html], capture_output=True, text=True,
                             timeout=60)
        self.assertEqual(rep.returncode, 0, rep.stderr)
        self.assertIn("# Storage in " + self.folder, rep.stdout)
        with open(html, encoding="utf-8") as f:
            page = f.read()
        self.assertIn('<section id="placement">', page)
        self.assertIn('<table class="storage">', page)

    def start(self, *extra):
        self.err = os.path.join(self.tmp.name, "err")
        with open(self.err, "w", encoding="utf-8") as err:
            # Large enough to be still writing when the signal or the stall comes.
            return subprocess.Popen(mpirun_cmd(2, "storage", "--storage-path", self.folder, "--file-bytes", "2G",
                                               "--json", self.json, *extra),
                                    stdout=subprocess.DEVNULL, stderr=err, start_new_session=True)

    def finish(self, proc, limit=60):
        try:
            proc.wait(timeout=limit)
        finally:
            if proc.poll() is None:
                os.killpg(proc.pid, signal.SIGKILL)
                proc.wait()
        with open(self.err, encoding="utf-8") as f:
            return f.read()

    def test_sigterm_while_writing_leaves_no_file_behind(self):
        proc = self.start()
        wait_for_files(self, self.folder, 2)
        proc.send_signal(signal.SIGTERM)
        self.finish(proc)
        self.assertNotEqual(proc.returncode, 0)
        self.assertEqual(wait_until_empty(self.folder), [])
        with open(self.json, encoding="utf-8") as f:
            doc = json.load(f)
        self.assertFalse(doc["status"]["complete"])
        self.assertNotIn("storage", doc)

    def test_a_stalled_rank_ends_in_the_deadline_and_leaves_no_file_behind(self):
        proc = self.start("--timeout", "3")
        wait_for_files(self, self.folder, 2)
        stopped = rank_pid(proc.pid, 1)
        os.kill(stopped, signal.SIGSTOP)
        try:
            err = self.finish(proc)
        finally:
            try:
                os.kill(stopped, signal.SIGKILL)
            except ProcessLookupError:
                pass
        self.assertEqual(proc.returncode, 4, err)
        self.assertRegex(err, r"fabricbench: error: timeout: rank 0 on \S+ waited more than 3 s in the storage phase")
        # Rank 0 removes its file at the deadline; mpirun then ends the
        # stopped rank with SIGCONT and SIGTERM, and it removes its own.
        self.assertEqual(wait_until_empty(self.folder), [])
        with open(self.json, encoding="utf-8") as f:
            doc = json.load(f)
        self.assertFalse(doc["status"]["complete"])
        self.assertIn("storage phase", doc["status"]["reason"])

    def freeze_a_writer_mid_write(self, proc, rank):
        """Stops `rank` while its file is part written; returns its pid and file."""
        wait_for_files(self, self.folder, 2)
        pid = rank_pid(proc.pid, rank)
        os.kill(pid, signal.SIGSTOP)
        deadline = time.time() + 30
        while process_state(pid) != "T" and time.time() < deadline:
            time.sleep(0.01)
        self.assertEqual(process_state(pid), "T")
        names = [n for n in os.listdir(self.folder) if n[:-7].endswith(f"-r{rank}")]
        self.assertEqual(len(names), 1, names)
        path = os.path.join(self.folder, names[0])
        # Part written: the kill lands in the write, before the rank could
        # remove anything itself.
        self.assertLess(os.stat(path).st_size, 2 << 30)
        return pid, path

    def start_killable(self):
        # When one rank dies, mpirun ends the others with SIGCONT, then
        # SIGTERM odls_base_sigkill_timeout seconds later (1 s by default),
        # then SIGKILL as long again. 15 s here: a loaded machine's disk gets
        # time for the cleanup, so the cleanup under test decides the
        # outcome; the job then lasts about 30 s after the kill.
        self.err = os.path.join(self.tmp.name, "err")
        with open(self.err, "w", encoding="utf-8") as err:
            return subprocess.Popen(
                [ARGS.mpirun, "--allow-run-as-root", "--oversubscribe", "--bind-to", "none", "-q",
                 "--mca", "odls_base_sigkill_timeout", "15", "-np", "2", ARGS.binary, "storage", "--storage-path",
                 self.folder, "--file-bytes", "2G", "--json", self.json],
                stdout=subprocess.DEVNULL, stderr=err, start_new_session=True)

    def check_named(self, left, err, doc):
        """Every file still there is named in the error line and in the JSON."""
        named = doc.get("storage", {}).get("files_left", [])
        lines = [l for l in err.splitlines() if l.startswith("fabricbench: error: ")]
        for path in left:
            self.assertIn(path, named)
            self.assertTrue(any(path in l for l in lines), err)

    def test_a_rank_killed_while_writing_leaves_no_file_where_another_rank_reaches(self):
        proc = self.start_killable()
        pid, path = self.freeze_a_writer_mid_write(proc, 1)
        os.kill(pid, signal.SIGKILL)
        err = self.finish(proc, 120)
        self.assertNotEqual(proc.returncode, 0, err)
        # Rank 0 is on the same host: it removes rank 1's file with its own.
        left = [os.path.join(self.folder, n) for n in wait_until_empty(self.folder)]
        with open(self.json, encoding="utf-8") as f:
            doc = json.load(f)
        self.check_named(left, err, doc)
        self.assertEqual(left, [], err)
        self.assertFalse(os.path.exists(path))
        self.assertFalse(doc["status"]["complete"])
        self.assertNotIn("storage", doc)  # nothing left to name
        validate(self, self.json)

    def test_files_that_cannot_be_removed_are_named_in_the_error_line_and_the_json(self):
        if os.geteuid() != 0:
            self.skipTest("chattr +a needs root")
        if shutil.which("chattr") is None or shutil.which("lsattr") is None:
            self.skipTest("chattr/lsattr are not installed")
        probe = subprocess.run(["chattr", "+a", self.folder], capture_output=True, text=True)
        if probe.returncode != 0:
            self.skipTest(f"this file system takes no chattr +a: {probe.stderr.strip()}")
        try:
            # An append-only folder is refused up front: its files could never be removed.
            refused = mpirun(2, "storage", "--storage-path", self.folder, "--file-bytes", "1M")
            self.assertEqual(refused.returncode, 2, refused.stderr)
            lines = [l for l in refused.stderr.splitlines() if l.startswith("fabricbench:")]
            self.assertEqual(len(lines), 1, refused.stderr)
            self.assertIn("the folder is append-only (chattr +a)", lines[0])
            self.assertEqual(os.listdir(self.folder), [])
        finally:
            subprocess.run(["chattr", "-a", self.folder], check=True)
        # Made append-only mid-run, with a writer frozen, then killed: no rank
        # can remove a file, so rank 0 names both.
        proc = self.start_killable()
        try:
            pid, _ = self.freeze_a_writer_mid_write(proc, 1)
            subprocess.run(["chattr", "+a", self.folder], check=True)
            os.kill(pid, signal.SIGKILL)
            err = self.finish(proc, 120)
            left = sorted(os.path.join(self.folder, n) for n in os.listdir(self.folder))
        finally:
            subprocess.run(["chattr", "-a", self.folder], check=True)
        self.assertNotEqual(proc.returncode, 0, err)
        self.assertEqual(len(left), 2, left)
        validate(self, self.json)
        with open(self.json, encoding="utf-8") as f:
            doc = json.load(f)
        self.check_named(left, err, doc)
        self.assertRegex(err, r"fabricbench: error: while cleaning up: rank 0 on \S+ could not remove 2 storage test "
                              r"files of this run: .*Operation not permitted.*; delete them by hand")
        s = doc["storage"]
        self.assertFalse(doc["status"]["complete"])
        self.assertEqual(sorted(s["files_left"]), left)
        self.assertEqual((s["files_written"], s["files_removed"]), (2, 0))
        self.assertEqual((s["path"], s["file_bytes"]), (self.folder, 2 << 30))
        rep = subprocess.run([ARGS.binary, "report", self.json], capture_output=True, text=True, timeout=60)
        self.assertEqual(rep.returncode, 0, rep.stderr)
        self.assertIn("2 of 2 test files could not be removed from " + self.folder, rep.stdout)
        for path in left:
            os.unlink(path)


if __name__ == "__main__":
    parser = argparse.ArgumentParser()
    for name in ("--binary", "--mpirun", "--schema", "--validator"):
        parser.add_argument(name, required=True)
    ARGS, rest = parser.parse_known_args()
    unittest.main(argv=[sys.argv[0], "-v", *rest])
