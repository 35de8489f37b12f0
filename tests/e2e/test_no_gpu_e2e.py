#!/usr/bin/env python3
"""The real binary on a machine without a GPU or driver: --transport nccl
exits 2 with exactly one line, --transport auto falls back to mpi with a
one-line notice, --gpus says the same as nccl, and --gpus with
--allow-shared-gpu is refused before any GPU is looked for."""
import argparse
import re
import socket
import subprocess
import sys
import unittest

ARGS = None
# The reason is the CUDA error name and text, e.g. cudaErrorNoDevice or
# cudaErrorInsufficientDriver (no driver installed).
NO_DEVICE = (r"^fabricbench: error: no CUDA device visible on {host} \((cudaError\w+: [^\n]+|cudaGetDeviceCount "
             r"found 0 devices)\); use --transport mpi\n$")


def run(*args):
    return subprocess.run([ARGS.binary, *args], capture_output=True, text=True, timeout=120)


class NoGpu(unittest.TestCase):
    def test_nccl_exits_2_with_one_line(self):
        proc = run("sweep", "--transport", "nccl", "-e", "1K")
        self.assertEqual(proc.returncode, 2, proc.stderr)
        self.assertRegex(proc.stderr, NO_DEVICE.format(host=re.escape(socket.gethostname())))
        self.assertEqual(proc.stdout, "")

    def test_gpus_without_launcher_says_the_same(self):
        # Checked before a thread or a communicator slot is made: the largest
        # count is refused as fast as a small one.
        for gpus in ("2", "2147483647"):
            proc = run("sweep", "--gpus", gpus, "-e", "1K")
            self.assertEqual(proc.returncode, 2, proc.stderr)
            self.assertRegex(proc.stderr, NO_DEVICE.format(host=re.escape(socket.gethostname())))

    def test_gpus_with_shared_gpu_is_refused_in_one_line(self):
        # NCCL refuses two ranks on one GPU in one process: refused whatever
        # the machine has, so the answer is the same here as on a GPU node.
        for gpus in ("1", "4"):
            proc = run("sweep", "--gpus", gpus, "--allow-shared-gpu", "-e", "1K")
            self.assertEqual(proc.returncode, 2, proc.stderr)
            self.assertEqual(proc.stdout, "")
            self.assertRegex(proc.stderr, r"^fabricbench: error: --allow-shared-gpu cannot be combined with --gpus: "
                                          r"NCCL refuses two ranks on one GPU in one process; [^\n]+\n$")

    def test_auto_falls_back_to_mpi_with_a_notice(self):
        proc = run("sweep", "--transport", "auto", "-e", "64", "--ops", "allreduce")
        self.assertEqual(proc.returncode, 0, proc.stderr)
        lines = proc.stderr.splitlines()
        self.assertEqual(len(lines), 1, proc.stderr)
        self.assertRegex(lines[0], r"^fabricbench: notice: no CUDA device visible on .+ \(.+\); using the mpi "
                                   r"transport$")
        self.assertIn("transport mpi", proc.stdout)

    def test_bad_timeout_is_a_usage_error(self):
        proc = run("sweep", "--timeout", "0")
        self.assertEqual(proc.returncode, 2)
        self.assertEqual(proc.stderr, "fabricbench: error: --timeout 0: must be above 0 seconds\n")


def main():
    global ARGS
    parser = argparse.ArgumentParser()
    parser.add_argument("--binary", required=True)
    ARGS, rest = parser.parse_known_args()
    unittest.main(argv=[sys.argv[0], *rest])


if __name__ == "__main__":
    main()
