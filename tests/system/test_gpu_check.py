#!/usr/bin/env python3
"""A dry run of scripts/gpu-check.sh on a machine with no GPU.

The GPU check is run once per lent GPU machine, so its wiring must hold
before it gets there. With FABRICBENCH_GPU_CHECK_STANDIN the script builds
nothing and takes every binary (fabricbench, its GPU tests, nccl-tests,
nvbandwidth, nvidia-smi, nvcc) from a folder of stand-ins written here,
which answer as the real ones do (tables, JSON files, exit codes), one GPU
test case failing and one step ignoring SIGTERM. Checked: every step
records a result (the machine-information step too, a shell function run
under timeout), the failing case and the hung step are FAILs with their
reasons while the rest go on, $OUT holds exactly the summary and one
archive (the device machine returns at most 8 files) with every log in the
archive, the carried NCCL headers are taken when the library lacks
nccl_device.h, and the comparison table gives ratios only for the rows that
compare on one GPU.
"""
import argparse
import os
import stat
import subprocess
import sys
import tarfile
import tempfile
import textwrap
import unittest

ARGS = None

FABRICBENCH = r'''#!/usr/bin/env python3
import json, sys
args = sys.argv[1:]
def json_path():
    return args[args.index("--json") + 1] if "--json" in args else None
if args[:1] == ["version"]:
    print("fabricbench 0.0.0 (stand-in)")
    sys.exit(0)
if "--allow-shared-gpu" in args and "--gpus" in args:
    print("fabricbench: error: --allow-shared-gpu cannot be combined with --gpus", file=sys.stderr)
    sys.exit(2)
path = json_path()
if "--allow-shared-gpu" in args and path:
    # Two processes meeting in a folder: rank 0 writes what NCCL used.
    import os
    if os.environ.get("FABRICBENCH_RANK") == "0":
        ranks = [{"rank": r, "host": "standin", "version": "2.28.9+cuda13.0", "network": "Socket", "nics": ["eth0"],
                  "gdr": None, "coll_channels": 2,
                  "paths": [{"between": "within_node", "via": "NET/Socket/0", "connections": 4}]} for r in (0, 1)]
        json.dump({"records": [], "nccl": {"ranks": ranks, "notes": []},
                   "verdicts": [{"level": "WARN", "kind": "nccl", "cause_kind": "net_within_node",
                                 "reason": "NCCL connected ranks of one node through the network"}]}, open(path, "w"))
    print("# stand-in fabricbench", " ".join(args))
    sys.exit(0)
if args[:1] == ["sweep"] and path:
    sizes = {"1M": 1 << 20, "64M": 64 << 20, "1G": 1 << 30}
    records = []
    for op in ("sendrecv", "allreduce"):
        for size in args[args.index("--sizes") + 1].split(","):
            for placement in ("out_of_place", "in_place"):
                b = sizes[size]
                t = b / 1e9 * 1e6 / 500  # 500 GB/s
                records.append({"op": op, "bytes": b, "placement": placement, "time_us": t,
                                "algbw_gbs": b / t / 1e3, "busbw_gbs": 0.0})
    json.dump({"records": records}, open(path, "w"))
elif args[:1] in (["topo"], ["run"]) and path:
    json.dump({"topology": {"nodes": [{"gpus": [{"h2d_gbs": 55.0, "d2h_gbs": 54.0, "local_copy_gbs": 2100.0},
                                                 {"h2d_gbs": 50.0}]}]}}, open(path, "w"))
print("# stand-in fabricbench", " ".join(args))
'''

GPU_TESTS = r'''#!/bin/sh
case "$1" in
  --gtest_list_tests) printf 'NcclTransport.\n  Passes\n  Fails\n' ;;
  --gtest_filter=NcclTransport.Fails) echo "[  FAILED  ] NcclTransport.Fails"; exit 1 ;;
  *) echo "[  PASSED  ] 1 test." ;;
esac
'''

# The host-logic tests hang and ignore SIGTERM: timeout -k must kill them.
HUNG = '''#!/bin/sh
trap '' TERM
sleep 120
'''

NCCL_TESTS = r'''#!/bin/sh
size=1048576
while [ $# -gt 0 ]; do
  case "$1" in -b) case "$2" in 1M) size=1048576;; 64M) size=67108864;; 1G) size=1073741824;; esac; shift;; esac
  shift
done
echo "#       size         count      type   redop    root     time   algbw   busbw #wrong     time   algbw   busbw #wrong"
t=$(awk -v s=$size 'BEGIN { printf "%.2f", s / 1e9 * 1e6 / 505 }')
echo "  $size  $((size / 4))  float  sum  -1  $t  505.00  0.00  0  0.10  0.00  0.00  0"
'''

NVBANDWIDTH = r'''#!/bin/sh
for t in host_to_device_memcpy_ce device_to_host_memcpy_ce device_local_copy; do
  echo "Running $t."
  echo "           0"
  echo " 0     56.00"
  echo "SUM $t 56.00"
done
'''


def write(path, text):
    with open(path, "w", encoding="utf-8") as f:
        f.write(text)
    os.chmod(path, os.stat(path).st_mode | stat.S_IXUSR | stat.S_IXGRP | stat.S_IXOTH)


def nccl_header(folder, version):
    major, minor, patch = version
    os.makedirs(folder, exist_ok=True)
    with open(os.path.join(folder, "nccl.h"), "w", encoding="utf-8") as f:
        f.write(f"#define NCCL_MAJOR {major}\n#define NCCL_MINOR {minor}\n#define NCCL_PATCH {patch}\n")


class GpuCheckDryRun(unittest.TestCase):
    @classmethod
    def setUpClass(cls):
        cls.tmp = tempfile.TemporaryDirectory()
        root = cls.tmp.name
        standin = os.path.join(root, "standin")
        os.makedirs(standin)
        write(os.path.join(standin, "fabricbench"), FABRICBENCH)
        write(os.path.join(standin, "fabricbench_gpu_tests"), GPU_TESTS)
        write(os.path.join(standin, "fabricbench_gpu_logic_tests"), HUNG)
        write(os.path.join(standin, "sendrecv_perf"), NCCL_TESTS)
        write(os.path.join(standin, "all_reduce_perf"), NCCL_TESTS)
        write(os.path.join(standin, "nvbandwidth"), NVBANDWIDTH)
        write(os.path.join(standin, "nvidia-smi"), "#!/bin/sh\necho 'GPU 0: NVIDIA H200 (stand-in)'\n")
        write(os.path.join(standin, "nvcc"), "#!/bin/sh\necho 'Cuda compilation tools, release 13.0, V13.0.48'\n")
        # A wheel-like NCCL without nccl_device.h, and carried headers of its version.
        nccl = os.path.join(root, "nccl")
        nccl_header(os.path.join(nccl, "include"), (2, 28, 9))
        os.makedirs(os.path.join(nccl, "lib"))
        open(os.path.join(nccl, "lib", "libnccl.so.2"), "w").close()
        carry = os.path.join(root, "carry")
        nccl_header(os.path.join(carry, "nccl", "include"), (2, 28, 9))
        open(os.path.join(carry, "nccl", "include", "nccl_device.h"), "w").close()
        cls.out = os.path.join(root, "out")
        env = {**os.environ, "PATH": standin + os.pathsep + os.environ.get("PATH", ""),
               "FABRICBENCH_GPU_CHECK_STANDIN": standin, "NCCL_ROOT": nccl, "OUT": cls.out,
               "FABRICBENCH_GPU_BUILD": os.path.join(root, "build"), "FABRICBENCH_CARRY_DIR": carry}
        cls.proc = subprocess.run(["bash", ARGS.script], capture_output=True, text=True, env=env, timeout=300,
                                  stdin=subprocess.DEVNULL)
        with open(os.path.join(cls.out, "summary.txt"), encoding="utf-8") as f:
            cls.summary = f.read()
        cls.results = {}
        for line in cls.summary.splitlines():
            name, _, result = line.partition("  ")
            if result.strip():
                cls.results[name.strip()] = result.strip()

    @classmethod
    def tearDownClass(cls):
        cls.tmp.cleanup()

    def result(self, prefix, exact=False):
        found = [v for k, v in self.results.items() if (k == prefix if exact else k.startswith(prefix))]
        self.assertEqual(len(found), 1, f"{prefix!r} in\n{self.summary}")
        return found[0]

    def test_every_step_records_a_result(self):
        self.assertEqual(self.proc.returncode, 1, self.proc.stdout[-3000:] + self.proc.stderr[-2000:])
        self.assertIn("release 13.0", self.result("CUDA", exact=True))
        for step in ("build: fabricbench", "build: nccl-tests", "build: nvbandwidth",
                     "machine: nvidia-smi, versions", "GPU test NcclTransport.Passes", "NCCL_DEBUG=INFO run",
                     "CUDA_LAUNCH_BLOCKING=1 sweep", "--gpus 1 --allow-shared-gpu", "nccl-tests: sendrecv_perf",
                     "fabricbench: sendrecv, allreduce", "topology probe", "nvbandwidth: H2D",
                     "fabricbench run --profile smoke", "NCCL's connection log: 2 processes on one GPU"):
            self.assertEqual(self.result(step), "ok", step)
        self.assertIn("rank 1: NCCL 2.28.9+cuda13.0, network Socket, NICs eth0", self.summary)
        self.assertIn("verdict WARN net_within_node", self.summary)

    def test_failures_say_why_and_the_rest_goes_on(self):
        self.assertTrue(self.result("GPU test NcclTransport.Fails").startswith("FAIL rc=1 "))
        # Ignores SIGTERM: killed by timeout -k, named as over its limit.
        self.assertRegex(self.result("host-logic tests"), r"^FAIL rc=137 \(over \d+ s\)")

    def test_out_holds_the_summary_and_one_archive(self):
        self.assertEqual(sorted(os.listdir(self.out)), ["gpu-check.tar.gz", "summary.txt"])
        with tarfile.open(os.path.join(self.out, "gpu-check.tar.gz")) as tar:
            names = {os.path.basename(n) for n in tar.getnames()}
        for kept in ("versions.txt", "nvidia-smi-q.txt", "nccl-tests.txt", "fabricbench-compare.json", "copies.txt",
                     "compare.txt", "topo.json", "run.json", "build_fabricbench.log", "summary.txt"):
            self.assertIn(kept, names)

    def test_carried_nccl_headers_stand_in_for_a_wheel_without_nccl_device_h(self):
        self.assertIn("2.28.9, headers carried", self.result("NCCL", exact=True))

    def test_only_comparable_rows_get_a_ratio(self):
        rows = [line.split() for line in self.summary.splitlines() if line.startswith(("sendrecv ", "allreduce "))]
        self.assertEqual(len(rows), 12, self.summary)
        for f in rows:
            op, size, placement, ratio = f[0], f[1], f[2], f[7]
            if placement == "out_of_place" and size in ("64M", "1G"):
                self.assertAlmostEqual(float(ratio), 505 / 500, places=2, msg=" ".join(f))
            else:
                self.assertEqual(ratio, "-", " ".join(f))
                self.assertIn("not comparable on one GPU", " ".join(f))
        copies = [line.split() for line in self.summary.splitlines() if line.startswith(("host->device", "device-"))]
        self.assertEqual(len(copies), 3, self.summary)
        self.assertAlmostEqual(float(copies[0][3]), 55 / 56, places=3)


if __name__ == "__main__":
    parser = argparse.ArgumentParser()
    parser.add_argument("--script", required=True)
    ARGS, rest = parser.parse_known_args()
    unittest.main(argv=[sys.argv[0], "-v", *rest])
