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

    def finish(self, proc):
        try:
            proc.wait(timeout=60)
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

if __name__ == "__main__":
    parser = argparse.ArgumentParser()
    for name in ("--binary", "--mpirun", "--schema", "--validator"):
        parser.add_argument(name, required=True)
    ARGS, rest = parser.parse_known_args()
    unittest.main(argv=[sys.argv[0], "-v", *rest])
