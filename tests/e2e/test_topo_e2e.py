#!/usr/bin/env python3
"""End-to-end tests of `fabricbench topo`: on this machine (whatever it has)
and on fixture trees, each JSON file validated against the schema."""
import argparse
import json
import os
import re
import socket
import subprocess
import sys
import tempfile
import unittest

ARGS = None


def mpirun(np_, *args, env=None):
    cmd = [ARGS.mpirun, "--allow-run-as-root", "--oversubscribe", "--bind-to", "none", "-q", "-np", str(np_),
           ARGS.binary, *args]
    return subprocess.run(cmd, capture_output=True, text=True, timeout=300, env=env)


def mpirun_mpmd(contexts, env=None):
    """One mpirun with an application context per (ranks, extra args, command) of `contexts`."""
    cmd = [ARGS.mpirun, "--allow-run-as-root", "--oversubscribe", "--bind-to", "none", "-q"]
    for i, (np_, extra, args) in enumerate(contexts):
        if i:
            cmd.append(":")
        cmd += ["-np", str(np_), *extra, ARGS.binary, *args]
    return subprocess.run(cmd, capture_output=True, text=True, timeout=300, env=env)


def validate(test, path):
    proc = subprocess.run([sys.executable, ARGS.validator, ARGS.schema, path], capture_output=True, text=True)
    test.assertEqual(proc.returncode, 0, f"{path} does not validate: {proc.stderr}")


class Topo(unittest.TestCase):
    def setUp(self):
        self.dir = tempfile.TemporaryDirectory()
        self.json = os.path.join(self.dir.name, "t.json")

    def tearDown(self):
        self.dir.cleanup()

    def fixture(self, name):
        root = os.path.join(self.dir.name, name)
        subprocess.run([ARGS.make_fixture, name, root, name], check=True)
        return root

    def test_this_machine(self):
        proc = mpirun(2, "topo", "--json", self.json)
        self.assertEqual(proc.returncode, 0, proc.stderr)
        self.assertIn("# topology: 1 node", proc.stdout)
        self.assertIn("host ", proc.stdout)
        validate(self, self.json)
        with open(self.json, encoding="utf-8") as f:
            doc = json.load(f)
        node = doc["topology"]["nodes"][0]
        if not node["gpus"] or node["gpu_status"]:
            self.assertIn("no GPU visible", proc.stdout)
        self.assertTrue(doc["status"]["complete"])
        self.assertEqual(doc["records"], [])

    def test_fixture_roots_by_option_and_environment(self):
        root = self.fixture("dgx-port-down")
        proc = mpirun(1, "topo", "--no-measure", "--sysfs-root", os.path.join(root, "sys"), "--procfs-root",
                      os.path.join(root, "proc"), "--json", self.json)
        self.assertEqual(proc.returncode, 0, proc.stderr)
        self.assertIn("dgx-port-down mlx5_3 port 1: nic_port_down: state DOWN", proc.stdout)
        self.assertIn("Ubuntu 22.04.4 LTS", proc.stdout)
        validate(self, self.json)
        with open(self.json, encoding="utf-8") as f:
            topo = json.load(f)["topology"]
        self.assertEqual(len(topo["nodes"][0]["nics"]), 10)
        self.assertEqual([a["kind"] for a in topo["anomalies"]], ["nic_port_down"])

        root = self.fixture("cloud-vm")
        env = dict(os.environ, FABRICBENCH_SYSFS_ROOT=os.path.join(root, "sys"),
                   FABRICBENCH_PROCFS_ROOT=os.path.join(root, "proc"))
        proc = mpirun(1, "topo", "--json", self.json, env=env)
        self.assertEqual(proc.returncode, 0, proc.stderr)
        self.assertIn("eth0", proc.stdout)
        self.assertIn("Debian GNU/Linux 12 (bookworm)", proc.stdout)
        validate(self, self.json)

    def test_probed_text_cannot_drive_the_terminal(self):
        # A model name with a clear-screen and a title sequence, an OS name
        # with a C1 control: printed escaped, recorded as they are.
        root = self.fixture("cloud-vm")
        cpuinfo = os.path.join(root, "proc", "cpuinfo")
        with open(cpuinfo, encoding="utf-8") as f:
            text = f.read()
        with open(cpuinfo, "w", encoding="utf-8") as f:
            f.write(text.replace("Intel(R) Xeon(R) CPU", "\x1b[2J\x1b]0;owned\x07Xeon"))
        os_release = os.path.join(root, "etc", "os-release")
        with open(os_release, encoding="utf-8") as f:
            text = f.read()
        with open(os_release, "w", encoding="utf-8") as f:
            f.write(text.replace("Debian GNU/Linux 12", "Debian\u009b2J 12"))
        proc = mpirun(1, "topo", "--no-measure", "--sysfs-root", os.path.join(root, "sys"), "--procfs-root",
                      os.path.join(root, "proc"), "--json", self.json)
        self.assertEqual(proc.returncode, 0, proc.stderr)
        for raw in ("\x1b", "\x07", "\u009b"):
            self.assertNotIn(raw, proc.stdout)
        self.assertIn("\\x1b[2J\\x1b]0;owned\\x07Xeon", proc.stdout)
        self.assertIn("Debian\\u009b2J 12", proc.stdout)
        validate(self, self.json)
        with open(self.json, encoding="utf-8") as f:
            node = json.load(f)["topology"]["nodes"][0]
        self.assertEqual(node["host"]["cpu_model"], "\x1b[2J\x1b]0;owned\x07Xeon @ 2.20GHz")
        self.assertTrue(node["host"]["os"].startswith("Debian\u009b2J 12"), node["host"]["os"])

    def test_bytes_that_are_not_utf8_are_recorded_as_bytes(self):
        # A host name, environment names and values, a probed model name and
        # the file's own name, each holding a byte that is not UTF-8: the run
        # ends well, the file is valid JSON and lists them, and each listed
        # string maps back (Latin-1) to its bytes. A label is typed: refused.
        root = self.fixture("cloud-vm")
        cpuinfo = os.path.join(root, "proc", "cpuinfo")
        with open(cpuinfo, "rb") as f:
            text = f.read()
        with open(cpuinfo, "wb") as f:
            f.write(text.replace(b"Intel(R) Xeon(R) CPU", b"Xeon\xff\xfe"))
        target = os.path.join(self.dir.name.encode(), b"t\xe9.json")
        env = {k.encode(): v.encode() for k, v in os.environ.items()}
        env[b"NCCL_SOCKET_IFNAME"] = b"eth\xff"
        env[b"NCCL_\xfeX"] = b"1"
        host = b"node-\xc3\x28"  # an invalid two-byte sequence
        cmd = ["topo", "--no-measure", "--sysfs-root", os.path.join(root, "sys"), "--procfs-root",
               os.path.join(root, "proc"), "--json", target]
        # Two ranks under mpirun; Open MPI itself refuses a host name that is
        # not ASCII, so the host name is tried on one rank started alone.
        proc = subprocess.run([ARGS.mpirun, "--allow-run-as-root", "--oversubscribe", "--bind-to", "none", "-q", "-np",
                               "2", ARGS.binary, *cmd], capture_output=True, env=env, timeout=300)
        self.assertEqual(proc.returncode, 0, proc.stderr.decode("utf-8", "replace"))
        self.assertEqual(proc.stderr, b"")
        named = ["unshare", "--uts", sys.executable, "-c",
                 "import os, socket, sys; socket.sethostname(sys.argv[1].encode('latin-1')); "
                 "os.execvp(sys.argv[2], sys.argv[2:])", host.decode("latin-1"), ARGS.binary]
        alone = subprocess.run(named + cmd[:-1] + [target + b".alone"], capture_output=True, env=env, timeout=300)
        self.assertEqual(alone.returncode, 0, alone.stderr.decode("utf-8", "replace"))
        with open(target + b".alone", "rb") as f:
            doc = json.loads(f.read().decode("utf-8"))
        self.assertEqual(doc["run"]["hostnames"][0].encode("latin-1"), host)
        self.assertEqual(doc["topology"]["configuration"][0]["host"].encode("latin-1"), host)
        self.assertIn("/run/hostnames/0", doc["byte_strings"]["values"])
        report = subprocess.run([ARGS.binary, "report", target + b".alone"], capture_output=True, timeout=120)
        self.assertEqual(report.returncode, 0, report.stderr)
        self.assertIn(host, report.stdout)  # read back to its bytes
        with open(target, "rb") as f:
            raw = f.read()
        raw.decode("utf-8")  # strict: the file is UTF-8
        copy = os.path.join(self.dir.name, "copy.json")
        with open(copy, "wb") as f:
            f.write(raw)
        validate(self, copy)
        doc = json.loads(raw)
        listed = doc["byte_strings"]
        self.assertIn("/run/environment/NCCL_SOCKET_IFNAME", listed["values"])
        self.assertIn("/run/environment/NCCL_\u00feX", listed["names"])
        self.assertEqual(doc["run"]["environment"]["NCCL_SOCKET_IFNAME"].encode("latin-1"), b"eth\xff")
        config = doc["topology"]["configuration"][0]["environment"]
        self.assertEqual(config["NCCL_\u00feX"].encode("latin-1"), b"1")
        node = doc["topology"]["nodes"][0]
        self.assertTrue(node["host"]["cpu_model"].encode("latin-1").startswith(b"Xeon\xff\xfe"))
        self.assertIn(target.decode("latin-1"), doc["run"]["command_line"])
        # Every listed string is a string of the document, and maps to bytes.
        for pointer in listed.get("values", []):
            value = doc
            for token in pointer.split("/")[1:]:
                token = token.replace("~1", "/").replace("~0", "~")
                value = value[int(token)] if isinstance(value, list) else value[token]
            value.encode("latin-1")
        report = subprocess.run([ARGS.binary, "report", target], capture_output=True, timeout=120)
        self.assertEqual(report.returncode, 0, report.stderr)
        # A label is typed text: refused up front, with one line.
        refused = subprocess.run([ARGS.binary, "sweep", "--label", b"x\xff", "--sizes", "64"], capture_output=True,
                                 timeout=120)
        self.assertEqual(refused.returncode, 2)
        self.assertEqual(refused.stderr.decode("utf-8", "replace").strip().splitlines(),
                         ["fabricbench: error: --label: not UTF-8 text: a label is shown and compared as text"])

    def test_inside_one_server_is_shown_and_judged(self):
        expected = {"pcie-switch-2x2": [], "pcie-switch-2-4": ["pcie_oversubscribed"],
                    "pcie-switch-acs": ["acs_redirect"], "pcie-switch-iommu": ["iommu_translated"],
                    "pcie-switch-mig": [], "pcie-switch-vm": []}
        for name, kinds in expected.items():
            root = self.fixture(name)
            proc = mpirun(1, "topo", "--sysfs-root", os.path.join(root, "sys"), "--procfs-root",
                          os.path.join(root, "proc"), "--json", self.json)
            self.assertEqual(proc.returncode, 0, proc.stderr)
            self.assertIn("  PCIe switch 0000:11:00.0 under 0000:10:01.0: GPUs 0, 1 below", proc.stdout)
            validate(self, self.json)
            with open(self.json, encoding="utf-8") as f:
                topo = json.load(f)["topology"]
            self.assertEqual([a["kind"] for a in topo["anomalies"]], kinds, name)
            node = topo["nodes"][0]
            self.assertEqual(node["gpus"][0]["pcie_switches"], ["0000:11:00.0"])
            if name == "pcie-switch-acs":
                self.assertIn("ACS on the PCIe bridges between GPUs: 6 redirect", proc.stdout)
            if name == "pcie-switch-iommu":
                self.assertEqual(node["iommu"]["mode"], "translated")
            if name == "pcie-switch-mig":
                self.assertEqual(node["gpus"][0]["mig_instances"], 7)
                self.assertIn("virtualization: MIG: 0000:13:00.0 split into 7 MIG instances", proc.stdout)
            if name == "pcie-switch-vm":
                self.assertEqual(node["virtualization"]["hypervisor"], "QEMU")
                self.assertIn("virtualization: virtual machine on QEMU", proc.stdout)

    def test_run_has_a_topology_section(self):
        proc = mpirun(2, "run", "--sizes", "1K", "--iters", "2", "--scale-bytes", "64K", "--no-measure",
                      "--json", self.json)
        self.assertEqual(proc.returncode, 0, proc.stderr)
        self.assertIn("# topology:", proc.stdout)
        validate(self, self.json)
        with open(self.json, encoding="utf-8") as f:
            doc = json.load(f)
        self.assertIn("topology", doc)
        self.assertTrue(doc["records"])


    def test_a_rank_with_its_own_environment_is_named(self):
        # What this machine itself has (interfaces of different MTUs, a port
        # down) is its own: the findings of four ranks alike, one record for
        # the node, none naming a rank.
        args = ["topo", "--no-measure", "--json", self.json]
        proc = mpirun(4, *args)
        self.assertEqual(proc.returncode, 0, proc.stderr)
        with open(self.json, encoding="utf-8") as f:
            topo = json.load(f)["topology"]
        self.assertEqual([c["ranks"] for c in topo["configuration"]], [[0, 1, 2, 3]])
        machine = [(a["kind"], a["host"], a["device"], a["detail"]) for a in topo["anomalies"]]
        for kind, _, device, detail in machine:
            self.assertNotIn(kind, ("setting_drift", "version_drift", "nccl_forced"), detail)
            self.assertNotIn("rank", device, detail)
        self.assertIn("software and settings (1 variant):", proc.stdout)

        # Rank 3 alone runs with NCCL_ALGO forced: drift from ranks 0-2, and a
        # forced algorithm, named on rank 3; the machine's own findings, alike
        # on both records, stay the node's, said once.
        proc = mpirun_mpmd([(3, [], args), (1, ["-x", "NCCL_ALGO=Ring"], args)])
        self.assertEqual(proc.returncode, 0, proc.stderr)
        validate(self, self.json)
        with open(self.json, encoding="utf-8") as f:
            topo = json.load(f)["topology"]
        host = topo["nodes"][0]["host"]["hostname"]
        self.assertEqual([c["ranks"] for c in topo["configuration"]], [[0, 1, 2], [3]])
        self.assertEqual(topo["configuration"][1]["environment"]["NCCL_ALGO"], "Ring")
        self.assertNotIn("NCCL_ALGO", topo["configuration"][0]["environment"])
        found = [(a["kind"], a["host"], a["device"], a["detail"]) for a in topo["anomalies"]]
        own = [f[:3] for f in found if f[2] == "rank 3"]
        self.assertEqual(own, [("setting_drift", host, "rank 3"), ("nccl_forced", host, "rank 3")])
        self.assertEqual([f for f in found if f[2] != "rank 3"], machine)
        self.assertIn(f"{host} rank 3: setting_drift: environment NCCL_ALGO=Ring; most ranks (3 of 4) have "
                      "NCCL_ALGO unset", proc.stdout)
        self.assertIn("software and settings (2 variants):", proc.stdout)

    def test_run_and_report_show_the_configuration_findings(self):
        args = ["run", "--ops", "allreduce", "--sizes", "1K", "--iters", "2", "--no-measure", "--json", self.json]
        proc = mpirun_mpmd([(1, [], args), (1, ["-x", "NCCL_PROTO=Simple"], args)])
        self.assertEqual(proc.returncode, 0, proc.stderr)
        self.assertIn("rank 1: nccl_forced: NCCL_PROTO=Simple (environment)", proc.stdout)
        validate(self, self.json)
        html = os.path.join(self.dir.name, "r.html")
        rep = subprocess.run([ARGS.binary, "report", self.json, "--html", html], capture_output=True, text=True,
                             timeout=120)
        self.assertEqual(rep.returncode, 0, rep.stderr)
        self.assertIn("nccl_forced", rep.stdout)
        self.assertIn("software and settings (2 variants):", rep.stdout)
        with open(html, encoding="utf-8") as f:
            page = f.read()
        self.assertIn('id="configuration-0"', page)
        self.assertIn("<b>nccl_forced</b>", page)
        self.assertIn("NCCL_PROTO=Simple", page)

    def test_auto_never_falls_back_to_host_memory_beside_gpus_it_cannot_use(self):
        # A node whose PCI bus holds NVIDIA GPUs that CUDA does not see (this
        # machine has none; a fixture tree stands for the node): `auto` exits
        # 2 with one line naming the node and the fix, before any output;
        # --transport mpi measures host memory on purpose; topo still reads it.
        root = self.fixture("dgx")
        roots = ["--sysfs-root", os.path.join(root, "sys"), "--procfs-root", os.path.join(root, "proc")]
        host = socket.gethostname()
        # (sweep, p2p and scale read /sys itself: the same check, not reachable here)
        for command in (["run", "--profile", "smoke"], ["run", "--sizes", "64", "--ops", "allreduce"]):
            with self.subTest(command=command):
                proc = mpirun(2, *command, *roots, "--json", self.json)
                self.assertEqual(proc.returncode, 2, proc.stdout + proc.stderr)
                self.assertEqual(proc.stdout, "")
                self.assertRegex(proc.stderr, rf"^fabricbench: error: {re.escape(host)} has 8 NVIDIA GPUs on its PCI "
                                              r"bus but (CUDA sees none \(.+\)|this build has no NCCL transport "
                                              r"\(build it with CUDA and NCCL\)): a run on host memory would not "
                                              r"measure them; .*nvidia-smi.*CUDA_VISIBLE_DEVICES.*--gpus-per-node.*"
                                              r"or pass --transport mpi to measure host memory on purpose\n$")
                self.assertFalse(os.path.exists(self.json))
        proc = mpirun(2, "run", "--profile", "smoke", "--transport", "mpi", *roots, "--json", self.json)
        self.assertEqual(proc.returncode, 0, proc.stderr)
        validate(self, self.json)
        proc = mpirun(1, "topo", "--no-measure", *roots)
        self.assertEqual(proc.returncode, 0, proc.stderr)

    def test_rdma_disabled_on_a_fixture_with_active_ports(self):
        root = self.fixture("dgx")
        roots = ["--sysfs-root", os.path.join(root, "sys"), "--procfs-root", os.path.join(root, "proc")]
        env = dict(os.environ, NCCL_IB_DISABLE="1", NCCL_IB_HCA="mlx5_0,mlx5_9")
        proc = mpirun(1, "topo", "--no-measure", *roots, "--json", self.json, env=env)
        self.assertEqual(proc.returncode, 0, proc.stderr)
        validate(self, self.json)
        with open(self.json, encoding="utf-8") as f:
            topo = json.load(f)["topology"]
        kinds = [a["kind"] for a in topo["anomalies"]]
        self.assertEqual(kinds, ["rdma_disabled", "nccl_device_missing"])
        self.assertIn("names no RDMA device mlx5_9", proc.stdout)
        # Without the settings the fixture is clean.
        clean = {k: v for k, v in os.environ.items() if not k.startswith("NCCL_")}
        proc = mpirun(1, "topo", "--no-measure", *roots, "--json", self.json, env=clean)
        with open(self.json, encoding="utf-8") as f:
            self.assertEqual(json.load(f)["topology"]["anomalies"], [])


if __name__ == "__main__":
    parser = argparse.ArgumentParser()
    parser.add_argument("--binary", required=True)
    parser.add_argument("--mpirun", required=True)
    parser.add_argument("--schema", required=True)
    parser.add_argument("--validator", required=True)
    parser.add_argument("--make-fixture", required=True)
    ARGS, rest = parser.parse_known_args()
    unittest.main(argv=[sys.argv[0], "-v", *rest])
