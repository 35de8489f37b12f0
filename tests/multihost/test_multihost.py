#!/usr/bin/env python3
"""Multi-node behaviour on a real multi-host test bed.

Four hosts on this machine (network namespaces joined by a bridge, Open MPI
launching into them through an rsh agent, scripts/testbed/), two ranks each.
Checks the scaling ladder's levels, groups and efficiencies; that the pair
matrix names exactly the host whose link is throttled with tc, and exactly
the pair whose traffic is throttled; that the configuration check names the
host whose interface has another MTU and the host launched with its own
environment; and that `fabricbench run` prints the ladder and the matrix and
writes JSON that validates.

Also: latency islands (a group of hosts whose crossing traffic is slowed),
the bisection test's halvings and arithmetic, and the storage test from all
hosts into one shared folder, with its files removed after SIGTERM.

Throttled and unthrottled links are compared by large factors only (100 Mbit/s
against links that run at hundreds of MB/s), never by absolute figures.
Needs root; exits 77 (skipped) without it.
"""
import argparse
import json
import os
import re
import signal
import statistics
import subprocess
import sys
import tempfile
import time
import unittest

ARGS = None
HOSTS = ["node0", "node1", "node2", "node3"]
RATE = "100mbit"
# Small messages and few iterations: a throttled link moves 12.5 MB/s.
COMMON = ["--iters", "4", "--warmup", "1", "-q"]
# Name only what runs below a fifth of the median: the throttled links run at
# a fortieth, while the test bed's own noise (8 ranks on 2 shared cores, and
# tc's queues slowing a throttled host's other traffic) reaches a half.
FINDINGS = ["--outlier-drop", "0.8"]


TESTBED_ENV = {"FB_TESTBED_PREFIX": "fbt", "FB_TESTBED_HOSTPREFIX": "node"}


def testbed(*args, check=True, timeout=600, env=None):
    proc = subprocess.run([ARGS.testbed, *args], capture_output=True, text=True, timeout=timeout,
                          env={**os.environ, **TESTBED_ENV, **(env or {})})
    if check and proc.returncode != 0:
        raise RuntimeError(f"testbed {' '.join(args)} failed ({proc.returncode}):\n{proc.stdout}\n{proc.stderr}")
    return proc


def fabricbench(json_path, *args, np=8):
    proc = testbed("mpirun", "-np", str(np), "-q", ARGS.binary, *args, "--json", json_path, check=False)
    with open(json_path, encoding="utf-8") as f:
        doc = json.load(f)
    return proc, doc


def timed_fabricbench(json_path, *args):
    start = time.monotonic()
    proc, doc = fabricbench(json_path, *args)
    return proc, doc, time.monotonic() - start


def validate(test, path):
    proc = subprocess.run([sys.executable, ARGS.validator, ARGS.schema, path], capture_output=True, text=True)
    test.assertEqual(proc.returncode, 0, proc.stderr)


class CpuCap:
    """A cgroup holding its processes to `percent` of one core: the cpu
    controller (cgroup v1's, else v2's cpu.max) mounted in a folder of its own,
    so ranks started in the test bed's namespaces (whose /sys is their own)
    can join it by pid. A slow CPU is what a slow rank is on the MPI transport:
    its work runs on the host."""

    def __init__(self, folder, percent):
        self.mount = os.path.join(folder, "cgroup")
        os.makedirs(self.mount, exist_ok=True)
        self.v1 = subprocess.run(["mount", "-t", "cgroup", "-o", "cpu", "fbcpu", self.mount],
                                 capture_output=True).returncode == 0
        if not self.v1:
            subprocess.run(["mount", "-t", "cgroup2", "none", self.mount], check=True, capture_output=True)
            with open(os.path.join(self.mount, "cgroup.subtree_control"), "w", encoding="ascii") as f:
                f.write("+cpu")
        self.group = os.path.join(self.mount, "fabricbench-slow-rank")
        os.makedirs(self.group, exist_ok=True)
        period = 10000
        if self.v1:
            self.write("cpu.cfs_period_us", str(period))
            self.write("cpu.cfs_quota_us", str(period * percent // 100))
        else:
            self.write("cpu.max", f"{period * percent // 100} {period}")

    def write(self, name, value):
        with open(os.path.join(self.group, name), "w", encoding="ascii") as f:
            f.write(value)

    def wrapper(self, ranks):
        """A command prefix that puts the listed world ranks in the cgroup, then runs the rest."""
        pattern = "|".join(str(r) for r in ranks)
        return ["sh", "-c", f'case "$OMPI_COMM_WORLD_RANK" in {pattern}) echo $$ > {self.group}/cgroup.procs;; esac; '
                'exec "$0" "$@"']

    def __enter__(self):
        return self

    def __exit__(self, *exc):
        subprocess.run(["rmdir", self.group], capture_output=True)
        subprocess.run(["umount", self.mount], capture_output=True)


class TestBedCase(unittest.TestCase):
    """4 hosts x 2 slots, up for the class; every test starts unthrottled."""
    HOST_COUNT = 4

    @classmethod
    def setUpClass(cls):
        testbed("down", check=False)
        testbed("up", str(cls.HOST_COUNT), "--slots", "2", "--subnet", "10.77.9")
        cls.dir = tempfile.TemporaryDirectory()

    @classmethod
    def tearDownClass(cls):
        testbed("down", check=False)
        cls.dir.cleanup()

    def setUp(self):
        testbed("unthrottle", check=False)
        self.json = os.path.join(self.dir.name, f"{self.id().split('.')[-1]}.json")

    def tearDown(self):
        testbed("unthrottle", check=False)


class MultiHost(TestBedCase):
    def test_ladder_levels_groups_and_efficiencies(self):
        proc, doc = fabricbench(self.json, "scale", "--scale-bytes", "1M", *COMMON)
        self.assertEqual(proc.returncode, 0, proc.stderr)
        validate(self, self.json)
        self.assertEqual(doc["run"]["nodes"], 4)
        self.assertEqual(doc["run"]["ranks_per_node"], [2, 2, 2, 2])
        self.assertEqual(doc["run"]["hostnames"], HOSTS)
        levels = doc["scaling"]["levels"]
        shape = {(l["kind"], l["nodes_per_group"], l["op"]): l for l in levels}
        for op in ("allreduce", "allgather"):
            one, two, four, rail = (shape[("nodes", 1, op)], shape[("nodes", 2, op)], shape[("nodes", 4, op)],
                                    shape[("rail", 4, op)])
            self.assertEqual([g["hosts"] for g in one["groups"]], [[h] for h in HOSTS])
            self.assertEqual([g["hosts"] for g in two["groups"]], [HOSTS[:2], HOSTS[2:]])
            self.assertEqual([g["hosts"] for g in four["groups"]], [HOSTS])
            self.assertEqual([g["ranks"] for g in one["groups"]], [2] * 4)
            self.assertEqual([g["ranks"] for g in two["groups"]], [4] * 2)
            self.assertEqual([g["ranks"] for g in four["groups"]], [8])
            self.assertEqual(len(rail["groups"]), 2)  # one per local rank
            self.assertEqual([g["ranks"] for g in rail["groups"]], [4, 4])
            self.assertEqual(one["efficiency"], 1.0)
            base = statistics.median(g["busbw_gbs"] for g in one["groups"])
            for level in (one, two, four, rail):
                values = [g["busbw_gbs"] for g in level["groups"]]
                self.assertAlmostEqual(level["busbw_median_gbs"], statistics.median(values), places=9)
                self.assertAlmostEqual(level["busbw_min_gbs"], min(values), places=9)
                self.assertAlmostEqual(level["efficiency"], level["busbw_median_gbs"] / base, places=9)
                self.assertTrue(all(g["wrong"] == 0 for g in level["groups"]))

    def test_slow_host_is_named(self):
        testbed("throttle", "node2", RATE)
        proc, doc = fabricbench(self.json, "p2p", "--pair-bytes", "1M", *FINDINGS, *COMMON)
        self.assertEqual(proc.returncode, 0, proc.stderr)
        validate(self, self.json)
        findings = doc["findings"]
        self.assertEqual([(f["kind"], f["hosts"]) for f in findings], [("slow_node", ["node2"])], findings)
        self.assertIn("slow node node2", proc.stdout)
        # The verdict the file carries: the node, its pair figures, a cause and a fix naming it.
        slow = [v for v in doc["verdicts"] if v.get("cause_kind") == "slow_node"]
        self.assertEqual(len(slow), 1, doc["verdicts"])
        self.assertEqual((slow[0]["level"], slow[0]["hosts"]), ("WARN", ["node2"]))
        self.assertIn("node2", slow[0]["fix"])
        self.assertTrue(slow[0]["cause"])
        figures = {e["what"]: e["value"] for e in slow[0]["evidence"]}
        self.assertAlmostEqual(figures["links of node2"], findings[0]["value_gbs"], places=9)
        self.assertAlmostEqual(figures["median of the nodes"], findings[0]["reference_gbs"], places=9)
        self.assertIn("#        fix: leave node2 out", proc.stdout)
        # Confirmed by the second pass: node2 again with each healthy node, apart from the first pass's load.
        self.assertTrue(findings[0]["confirmed"], findings)
        self.assertEqual(findings[0]["metric"], "bandwidth")
        checks = findings[0]["checks"]
        self.assertEqual(sorted(c["hosts"][1] for c in checks), ["node0", "node1", "node3"], checks)
        self.assertTrue(all(c["slow"] and c["hosts"][0] == "node2" for c in checks), checks)
        self.assertIn("; confirmed: slow again with node", findings[0]["message"])
        self.assertNotIn("unconfirmed", doc)
        links = {(l["from"], l["to"]): l["bandwidth_gbs"] for l in doc["pairs"]["links"]}
        self.assertEqual(len(links), 12)
        slow = [v for (a, b), v in links.items() if 2 in (a, b)]
        fast = [v for (a, b), v in links.items() if 2 not in (a, b)]
        self.assertGreater(min(fast), 5 * max(slow))

    def test_slow_link_is_named(self):
        testbed("throttle-pair", "node0", "node3", RATE)
        proc, doc = fabricbench(self.json, "p2p", "--pair-bytes", "1M", *FINDINGS, *COMMON)
        self.assertEqual(proc.returncode, 0, proc.stderr)
        validate(self, self.json)
        findings = doc["findings"]
        self.assertEqual([(f["kind"], f["hosts"]) for f in findings], [("slow_link", ["node0", "node3"])], findings)
        self.assertIn("slow link node0 <-> node3", proc.stdout)

    def named(self, doc):
        return sorted((f["kind"], f["hosts"]) for f in doc["findings"])

    def test_two_slow_hosts_of_different_severity_are_both_named(self):
        # Half the hosts slow: the median link is slow, the healthy pair is the reference.
        testbed("throttle", "node1", RATE)
        testbed("throttle", "node3", "300mbit")
        proc, doc = fabricbench(self.json, "p2p", "--pair-bytes", "1M", "--bisection-halvings", "0", *FINDINGS,
                                *COMMON)
        self.assertEqual(proc.returncode, 0, proc.stderr)
        validate(self, self.json)
        self.assertEqual(self.named(doc), [("slow_node", ["node1"]), ("slow_node", ["node3"])], doc["findings"])
        self.assertTrue(all(f["confirmed"] for f in doc["findings"]))
        # Each is confirmed with the healthy hosts only (node0, node2).
        for f in doc["findings"]:
            self.assertEqual(sorted(c["hosts"][1] for c in f["checks"]), ["node0", "node2"], f)
        warned = sorted(v["hosts"][0] for v in doc["verdicts"] if v.get("cause_kind") == "slow_node")
        self.assertEqual(warned, ["node1", "node3"])

    def test_a_slow_host_and_a_slow_link_at_once_are_both_named(self):
        testbed("throttle", "node1", RATE)
        testbed("throttle-pair", "node0", "node3", RATE)
        proc, doc = fabricbench(self.json, "p2p", "--pair-bytes", "1M", "--bisection-halvings", "0", *FINDINGS,
                                *COMMON)
        self.assertEqual(proc.returncode, 0, proc.stderr)
        validate(self, self.json)
        self.assertEqual(self.named(doc), [("slow_link", ["node0", "node3"]), ("slow_node", ["node1"])],
                         doc["findings"])
        link = next(f for f in doc["findings"] if f["kind"] == "slow_link")
        self.assertEqual(link["checks"][0]["hosts"], ["node0", "node3"])  # the link measured again
        self.assertTrue(link["checks"][0]["slow"])
        self.assertIn("confirmed: slow again when measured apart", link["message"])

    # One NIC of a host slow: node2's rail 1 (its local rank 1's TCP ports,
    # testbed.sh throttle-rail) at 100 Mbit/s, its rail 0 and every other
    # host fast. The node's summed links keep half their speed, which the
    # threshold here (a fifth) does not name; rail 1's own matrix names the
    # NIC, confirmed on rail 1 with the healthy hosts, and never the node.
    def test_a_slow_nic_is_named_as_its_rails_not_as_its_node(self):
        testbed("throttle-rail", "node2", "1", RATE)
        rail_ports = os.path.join(os.path.dirname(ARGS.testbed), "rail-ports.sh")
        proc = testbed("mpirun", "-np", "8", "-q", rail_ports, ARGS.binary, "p2p", "--pair-bytes", "1M",
                       "--bisection-halvings", "0", *FINDINGS, *COMMON, "--json", self.json, check=False)
        self.assertEqual(proc.returncode, 0, proc.stdout + proc.stderr)
        validate(self, self.json)
        with open(self.json, encoding="utf-8") as f:
            doc = json.load(f)
        found = [(f["kind"], f["hosts"], f.get("rail")) for f in doc["findings"]]
        self.assertEqual(found, [("slow_nic", ["node2"], 1)], (doc["findings"], doc.get("unconfirmed")))
        nic = doc["findings"][0]
        self.assertTrue(nic["confirmed"])
        self.assertEqual(sorted(c["hosts"][1] for c in nic["checks"]), ["node0", "node1", "node3"], nic["checks"])
        self.assertTrue(all(c["slow"] for c in nic["checks"]), nic["checks"])
        self.assertIn("slow NIC of node2 on rail 1", nic["message"])
        for f in doc.get("unconfirmed", []):
            self.assertEqual(f["hosts"], ["node2"], f)
        # Each rail's links in the file: node2's rail 1 far below its rail 0.
        rails = doc["pairs"]["rails"]
        self.assertEqual([r["rail"] for r in rails], [0, 1])
        per_rail = [{(l["from"], l["to"]): l["bandwidth_gbs"] for l in r["links"]} for r in rails]
        for links in per_rail:
            self.assertEqual(len(links), 12)
        slow = [v for (a, b), v in per_rail[1].items() if 2 in (a, b)]
        node2_rail0 = [v for (a, b), v in per_rail[0].items() if 2 in (a, b)]
        self.assertGreater(min(node2_rail0), 5 * max(slow))
        warns = [v for v in doc["verdicts"] if v.get("cause_kind") == "slow_nic"]
        self.assertEqual([(v["level"], v["subject"]) for v in warns], [("WARN", "node2 rail 1")], doc["verdicts"])
        self.assertIn("rail 1 NIC of node2", warns[0]["fix"])
        self.assertFalse([v for v in doc["verdicts"] if v.get("cause_kind") in ("slow_node", "slow_link")])

    # node2 and node3 behind one shared uplink at 200 Mbit/s (testbed.sh
    # uplink: a second bridge joined to the first by one shaped link): each
    # host fast with its own group, every pair across slow. No host or link
    # stands out (half the links are slow); the uplink is named, confirmed by
    # pairs across measured again, and its sides are the bisection's first
    # cut, which measures it oversubscribed (two pairs share the link).
    def test_a_slow_shared_uplink_is_named_and_is_the_bisections_first_cut(self):
        testbed("uplink", "200mbit", "node2", "node3")
        proc, doc = fabricbench(self.json, "p2p", "--pair-bytes", "1M", *FINDINGS, *COMMON)
        self.assertEqual(proc.returncode, 0, proc.stdout + proc.stderr)
        validate(self, self.json)
        found = [(f["kind"], f["hosts"]) for f in doc["findings"]]
        self.assertEqual(found, [("slow_uplink", ["node2", "node3"])], (doc["findings"], doc.get("unconfirmed")))
        uplink = doc["findings"][0]
        self.assertTrue(uplink["confirmed"])
        self.assertIn("slow uplink between {node0, node1} and {node2, node3}", uplink["message"])
        self.assertGreaterEqual(len(uplink["checks"]), 2)
        self.assertTrue(all(c["slow"] for c in uplink["checks"]), uplink["checks"])
        for c in uplink["checks"]:
            self.assertNotEqual(c["nodes"][0] >= 2, c["nodes"][1] >= 2, c)  # across
        for f in doc.get("unconfirmed", []):
            self.assertNotIn(f["kind"], ("slow_node", "slow_nic"), f)
        warns = [v for v in doc["verdicts"] if v.get("cause_kind") == "slow_uplink"]
        self.assertEqual([(v["level"], v["subject"]) for v in warns], [("WARN", "uplink of node2, node3")])
        self.assertIn("bad nodes:    uplink of node2, node3 (slow uplink)", proc.stdout)
        # The bisection cuts along the uplink first, and finds it oversubscribed.
        bisection = doc["bisection"]
        first = bisection["halvings"][0]
        self.assertEqual((first["source"], sorted(first["half_a"] + first["half_b"])), ("islands", [0, 1, 2, 3]))
        self.assertEqual(sorted([sorted(first["half_a"]), sorted(first["half_b"])]), [[0, 1], [2, 3]])
        self.assertGreater(first["oversubscription"], bisection["limit"], bisection)
        self.assertIn("oversubscribed", bisection["message"])
        self.assertIn("all 3 possible halvings measured", bisection["message"])

    # A host losing 5% of its packets: TCP recovers most losses at once and
    # now and then waits out a retransmission timeout, so at 1-16 MiB the
    # lossy host's links measure anywhere from a tenth of the others to as
    # fast as they are, run to run. At 64 MiB, the default, each of its
    # links runs at 8-30% of the others (under the sanitizers: 0.08-0.16
    # GB/s against 0.55-0.81) in both passes, each at another fraction: the
    # product's default threshold (half the median) names every one of them,
    # so the host is slow with all its partners, named as the node and
    # confirmed, while the test bed's noise leaves the healthy links above
    # three quarters. The stricter fifth the other tests use would split the
    # lossy host's links into slow and healthy ones, so this test keeps the
    # default.
    def test_a_lossy_host_is_named_as_the_node_and_no_healthy_host_or_link_is(self):
        testbed("loss", "node2", "5")
        proc, doc = fabricbench(self.json, "p2p", "--bisection-halvings", "0", *COMMON)
        self.assertEqual(proc.returncode, 0, proc.stderr)
        validate(self, self.json)
        context = (doc["findings"], doc.get("unconfirmed"), doc["pairs"]["links"])
        self.assertIn(("slow_node", ["node2"], True),
                      [(f["kind"], f["hosts"], f["confirmed"]) for f in doc["findings"]], context)
        for f in doc["findings"]:
            self.assertIn("node2", f["hosts"], context)
            self.assertTrue(f["confirmed"])
        for f in doc.get("unconfirmed", []):
            self.assertFalse(f["confirmed"])
            self.assertTrue(f["message"].startswith("not confirmed: "), f)
        infos = [v for v in doc["verdicts"] if v.get("cause_kind") == "not_confirmed"]
        self.assertEqual(len(infos), len(doc.get("unconfirmed", [])))
        self.assertTrue(all(v["level"] == "INFO" for v in infos))
        warned = [v for v in doc["verdicts"] if v["level"] in ("WARN", "FAIL") and v["kind"] == "finding"]
        self.assertTrue(warned, doc["verdicts"])
        self.assertTrue(all("node2" in v["hosts"] for v in warned), warned)
        self.assertRegex(proc.stdout, r"bad nodes: +node2 \(slow node\)", proc.stdout)

    def test_a_host_with_another_mtu_or_environment_is_named(self):
        # node2's interface at another MTU; node3's ranks launched with NCCL_PROTO forced (MPMD contexts).
        mtu = testbed("exec", "node2", "cat", "/sys/class/net/eth0/mtu").stdout.strip()
        testbed("exec", "node2", "ip", "link", "set", "dev", "eth0", "mtu", "1400")
        try:
            args = [ARGS.binary, "topo", "--no-measure", "-q", "--json", self.json]
            # -x belongs to its app context: the second one repeats what
            # testbed.sh forwards to the first (a sanitizer build's options).
            forwarded = [x for v in ("ASAN_OPTIONS", "UBSAN_OPTIONS", "LSAN_OPTIONS") if os.environ.get(v)
                         for x in ("-x", v)]
            proc = testbed("mpirun", "-q", "-np", "6", "--host", "node0:2,node1:2,node2:2", *args, ":", "-np", "2",
                           "--host", "node3:2", "-x", "NCCL_PROTO=LL", *forwarded, *args, check=False)
        finally:
            testbed("exec", "node2", "ip", "link", "set", "dev", "eth0", "mtu", mtu)
        self.assertEqual(proc.returncode, 0, proc.stderr)
        validate(self, self.json)
        with open(self.json, encoding="utf-8") as f:
            doc = json.load(f)
        topo = doc["topology"]
        self.assertEqual([(c["host"], c["ranks"]) for c in topo["configuration"]],
                         [("node0", [0, 1]), ("node1", [2, 3]), ("node2", [4, 5]), ("node3", [6, 7])])
        found = [(a["kind"], a["host"]) for a in topo["anomalies"]]
        self.assertEqual(found, [("setting_drift", "node3"), ("nccl_forced", "node3"), ("mtu_mismatch", "node2")],
                         topo["anomalies"])
        details = {a["kind"]: a["detail"] for a in topo["anomalies"]}
        self.assertIn(f"MTU 1400; most ranks (6 of 8) have {mtu}", details["mtu_mismatch"])
        self.assertIn("NCCL_PROTO=LL; most ranks (6 of 8) have NCCL_PROTO unset", details["setting_drift"])
        # Each is a verdict with a cause and a fix that name its host.
        warned = {v["cause_kind"]: v for v in doc["verdicts"] if v["level"] == "WARN"}
        for kind, host in (("setting_drift", "node3"), ("nccl_forced", "node3"), ("mtu_mismatch", "node2")):
            self.assertEqual(warned[kind]["hosts"], [host], warned[kind])
            self.assertTrue(warned[kind]["cause"], warned[kind])
            self.assertIn(host, warned[kind]["fix"], warned[kind])
        self.assertIn("NCCL_PROTO", warned["nccl_forced"]["fix"])
        self.assertIn("MTU", warned["mtu_mismatch"]["fix"])

    def test_uneven_ranks_per_node_are_refused_with_one_line(self):
        # 7 ranks on 4 hosts with 2 slots each: the last host gets one.
        proc = testbed("mpirun", "-np", "7", "-q", ARGS.binary, "scale", "--scale-bytes", "64K", *COMMON,
                       check=False)
        self.assertEqual(proc.returncode, 2, proc.stdout + proc.stderr)
        lines = [l for l in proc.stderr.splitlines() if l.startswith("fabricbench:")]
        self.assertEqual(len(lines), 1, proc.stderr)
        self.assertIn("uneven ranks per node", lines[0])

    def test_full_run_prints_ladder_matrix_and_names_the_throttled_host(self):
        testbed("throttle", "node1", RATE)
        proc, doc = fabricbench(self.json, "run", "--sizes", "64K", "--ops", "allreduce", "--scale-bytes", "1M",
                                "--pair-bytes", "1M", *FINDINGS, "--grad-bytes", "1M", "--compute-ms", "50",
                                "--iters", "4", "--warmup", "1")
        self.assertEqual(proc.returncode, 0, proc.stderr)
        validate(self, self.json)
        for text in ("# allreduce on 8 ranks", "# Scaling ladder", "# Node pairs", "# Projected data-parallel",
                     "slow node node1"):
            self.assertIn(text, proc.stdout)
        self.assertTrue(doc["status"]["complete"])
        self.assertTrue(doc["status"]["data_ok"])
        self.assertEqual([(f["kind"], f["hosts"]) for f in doc["findings"]], [("slow_node", ["node1"])],
                         doc["findings"])
        points = doc["scaling"]["projection"]["points"]
        self.assertEqual([p["nodes"] for p in points], [1, 2, 4])
        self.assertEqual([p["gpus"] for p in points], [2, 4, 8])
        for p in points:
            self.assertAlmostEqual(p["efficiency"], p["speedup"] / p["gpus"], places=9)
        # The MPI library's algorithm is not known: null with the reason, and
        # each NIC's wire rate is the all-reduce lower bound on 4 nodes of 2
        # ranks, one NIC per rank (no RDMA NIC here): busbw x (k-1)/(n-1).
        self.assertIn("NIC wire", proc.stdout)
        self.assertIn("Algorithm: the MPI library's own choice", proc.stdout)
        for r in doc["records"]:
            self.assertIsNone(r["algorithm"])
            self.assertIsNone(r["protocol"])
            self.assertIn("MPI library", r["algorithm_note"])
            self.assertEqual(r["nic_wire_basis"], "lower_bound")
            self.assertEqual(r["nic_wire_nics"], 2)
            self.assertAlmostEqual(r["nic_wire_gbs"], r["busbw_gbs"] * 3 / 7, places=9)
        # Inside each host: its 2 ranks as a 2-GPU node, every host at once.
        self.assertIn("# GPU-count ladder inside each node (2 GPUs per node", proc.stdout)
        ladder = doc["gpu_ladder"]
        for level in ladder["levels"]:
            self.assertEqual(level["gpus"], 2)
            self.assertEqual([s["host"] for s in level["sets"]], HOSTS)
            self.assertTrue(all(s["wrong"] == 0 and s["busbw_gbs"] > 0 for s in level["sets"]))
        self.assertEqual([p["gpus"] for p in ladder["projection"]], [1, 2])

    # The smoke profile's budget: the whole run ends within it. The margin
    # covers what lies outside the tool's clock (mpirun starting 8 processes
    # in 4 namespaces, MPI_Init and MPI_Finalize) on a loaded 2-core machine.
    SMOKE_BUDGET_S = 60
    LAUNCH_MARGIN_S = 30

    def test_smoke_with_a_throttled_host_ends_within_its_budget_and_names_it(self):
        testbed("throttle", "node2", RATE)
        proc, doc, wall = timed_fabricbench(self.json, "run", "--profile", "smoke", *FINDINGS)
        self.assertEqual(proc.returncode, 0, proc.stderr)
        validate(self, self.json)
        self.assertLess(wall, self.SMOKE_BUDGET_S + self.LAUNCH_MARGIN_S, proc.stdout)
        self.assertLessEqual(doc["status"]["duration_s"], self.SMOKE_BUDGET_S)
        self.assertTrue(doc["status"]["complete"])
        self.assertEqual(doc["budget"]["seconds"], self.SMOKE_BUDGET_S)
        # Named by the quick pass, first, and in the final findings.
        health = doc["health"]
        self.assertEqual([(f["kind"], f["hosts"]) for f in health["findings"]], [("slow_node", ["node2"])],
                         proc.stdout)
        self.assertLess(health["seconds"], 20)
        self.assertEqual([(f["kind"], f["hosts"]) for f in doc["findings"]], [("slow_node", ["node2"])],
                         doc["findings"])
        first = proc.stdout.find("slow node node2")
        self.assertGreaterEqual(first, 0, proc.stdout)
        self.assertLess(first, proc.stdout.find("# allreduce on 8 ranks"), "named before the sweep")
        # The smoke profile halves what is left once a host is named
        # (--on-finding halve): the phases after it share half.
        self.assertAlmostEqual(doc["budget"]["shortened_at_s"], health["seconds"], delta=1.0)
        shortened = proc.stdout.find("# budget: a host is named; the rest of the run keeps half of the")
        self.assertGreater(shortened, first, proc.stdout)
        self.assertLess(shortened, proc.stdout.find("# allreduce on 8 ranks"))
        sweep = doc["budget"]["phases"][1]
        self.assertEqual(sweep["phase"], "sweep")
        self.assertLess(sweep["share_s"], (self.SMOKE_BUDGET_S - doc["budget"]["shortened_at_s"]) / 2)
        # What the budget cut is listed, in the budget and on each record.
        cuts = doc["budget"]["cuts"]
        self.assertTrue(cuts, "a link at 100 Mbit/s cannot carry the whole smoke suite in 60 s")
        self.assertTrue(all(c["reason"] == "budget" for c in cuts))
        cut_records = [r for r in doc["records"] if r.get("cut") == "budget"]
        self.assertEqual(len(cut_records), sum(1 for c in cuts if c["phase"] == "sweep"))
        self.assertIn("# cut (budget):", proc.stdout)
        # 2 ranks per host: the GPU-count ladder inside each host is a phase too.
        self.assertEqual([p["phase"] for p in doc["budget"]["phases"]],
                         ["health", "sweep", "ladder", "gpu_ladder", "pairs"])
        self.assertTrue("gpu_ladder" in doc or any(c["phase"] == "gpu_ladder" for c in cuts))

    # The default profile inside a budget, with a host at 100 Mbit/s: the
    # run ends within 1.1 x its budget by its own clock (launch and MPI
    # start lie outside it: the margin), no phase runs far past its share,
    # every node pair has a bandwidth figure (a link too slow for the 64 MiB
    # message is measured with a smaller one) and the host is named,
    # confirmed, and nothing else.
    RUN_BUDGET_S = 60

    def test_run_with_a_throttled_host_ends_within_its_budget_and_names_it(self):
        testbed("throttle", "node2", RATE)
        budget = self.RUN_BUDGET_S
        proc, doc, wall = timed_fabricbench(self.json, "run", "--budget", f"{budget}s", *FINDINGS)
        self.assertEqual(proc.returncode, 0, proc.stderr)
        validate(self, self.json)
        self.assertLessEqual(doc["status"]["duration_s"], 1.1 * budget, proc.stdout)
        self.assertLess(wall, 1.1 * budget + self.LAUNCH_MARGIN_S, proc.stdout)
        for phase in doc["budget"]["phases"]:
            self.assertLessEqual(phase["used_s"], phase["share_s"] + 0.1 * budget, doc["budget"]["phases"])
        self.assertEqual([(f["kind"], f["hosts"]) for f in doc["findings"]], [("slow_node", ["node2"])], proc.stdout)
        self.assertTrue(doc["findings"][0]["confirmed"])
        links = doc["pairs"]["links"]
        self.assertEqual(sorted((l["from"], l["to"]) for l in links if l["bandwidth_gbs"]),
                         [(a, b) for a in range(4) for b in range(4) if a != b], proc.stdout)
        for l in links:
            if 2 in (l["from"], l["to"]):
                self.assertLess(l["bytes"], doc["pairs"]["bytes"], l)
        self.assertIn("bad nodes:    node2 (slow node)", proc.stdout)

    def slow_rank_run(self, budget):
        """One rank on each of two hosts (2 ranks on this machine's cores),
        rank 1 held to a tenth of a core, run with `budget` (which sets the
        pace rounds' share; the phases after them run at small sizes, as
        nothing here reads their figures). Checks that rank 1 is named with
        its host, confirmed by the second round, and that the collective lost
        twice the others' work to it per iteration or more; returns the
        finding."""
        with CpuCap(self.dir.name, 10) as cap:
            proc = testbed("mpirun", "-np", "2", "--map-by", "node", "-q", *cap.wrapper([1]), ARGS.binary, "run",
                           "--budget", budget, "--sizes", "1K", "--scale-bytes", "64K", "--pair-bytes", "64K",
                           "--json", self.json, check=False)
        self.assertEqual(proc.returncode, 0, proc.stdout + proc.stderr)
        validate(self, self.json)
        with open(self.json, encoding="utf-8") as f:
            doc = json.load(f)
        found = doc["stragglers"]["found"]
        self.assertEqual([(s["kind"], s["ranks"], s["host"], s["confirmed"]) for s in found],
                         [("slow_rank", [1], "node1", True)], proc.stdout)
        slow = found[0]
        self.assertGreaterEqual(slow["lost_us"], 2.0 * slow["reference_us"], slow)
        self.assertIn(" on average", slow["message"])
        self.assertEqual(len(doc["stragglers"]["rounds"]), 2)
        self.assertIn("it is node1's only rank, so a slow rank and a slow node are one here", proc.stdout)
        warns = [v for v in doc["verdicts"] if v["level"] == "WARN" and v["subject"] == "rank 1 on node1"]
        self.assertEqual(len(warns), 1, doc["verdicts"])
        return slow

    # With room for work of several of the quota's 1 ms slices (the others'
    # 5 ms, as far as the held rank's pace, timed over 24 fills or more,
    # lets it fit: 3 to 4 ms under the sanitizers), the held rank comes late
    # to nearly every collective, in both rounds.
    def test_a_slow_rank_is_named_after_a_second_round(self):
        slow = self.slow_rank_run("60s")
        self.assertGreaterEqual(slow["late"], 0.75 * slow["iterations"])
        # Named on one of the two rules, with that rule's evidence and words:
        # its work 1.5x the others' or more, or (a CPU quota lets it work at
        # full speed inside each slice) late by twice their work or more.
        ref = slow["reference_us"]
        if slow["work_us"] >= 1.5 * ref:
            self.assertIn("its work took", slow["message"])
        else:
            self.assertGreaterEqual(slow["lateness_us"], 2.0 * ref, slow)
            self.assertIn("so the time was lost outside it", slow["message"])

    # A short budget leaves room for shorter work, about the quota's slice or
    # less: the held rank is then on time in many collectives and some 9 ms
    # late in the rest. Named all the same, on the time lost (judged on the
    # count of late iterations alone, it went unnamed in one run of six).
    def test_a_slow_rank_with_short_work_is_named_on_the_time_lost(self):
        slow = self.slow_rank_run("20s")
        self.assertGreaterEqual(slow["late"], 0.25 * slow["iterations"], slow)

    # A healthy run ends within its budget, names no host and cuts nothing
    # (it uses about a third of the budget on a 2-core machine). A sanitizer
    # build runs several times slower, so there only the listing is checked:
    # whatever was cut is listed the same way in the JSON (budget and
    # records) and the table.
    def test_smoke_healthy_ends_within_its_budget_and_cuts_nothing(self):
        proc, doc, wall = timed_fabricbench(self.json, "run", "--profile", "smoke", *FINDINGS)
        self.assertEqual(proc.returncode, 0, proc.stderr)
        validate(self, self.json)
        self.assertLess(wall, self.SMOKE_BUDGET_S + self.LAUNCH_MARGIN_S, proc.stdout)
        self.assertLessEqual(doc["status"]["duration_s"], self.SMOKE_BUDGET_S)
        self.assertTrue(doc["status"]["complete"])
        self.assertEqual(doc["budget"]["seconds"], self.SMOKE_BUDGET_S)
        self.assertEqual(doc["findings"], [])
        self.assertEqual(doc["health"]["findings"], [])
        # 8 ranks on this machine's cores: the pace round would time the
        # scheduler, so it says so and judges no rank.
        if len(os.sched_getaffinity(0)) < 8:
            self.assertRegex(doc["stragglers"]["shared"],
                             r"^8 ranks share \d+ CPU cores of one machine \(node0, node1, node2, node3\)")
            self.assertEqual(doc["stragglers"]["found"], [])
            self.assertIn("# pace round: not run: 8 ranks share", proc.stdout)
        # Nothing accused: a suspect the second pass cleared may be printed,
        # only ever as "not confirmed" (INFO), and it is never a finding.
        named = [l for l in proc.stdout.splitlines() if re.search(r"slow (node|link) node\d", l)]
        self.assertTrue(all("not confirmed: " in l for l in named), named)
        if named:
            self.assertTrue(doc.get("unconfirmed") or doc["health"].get("unconfirmed"), named)
        cuts = doc["budget"]["cuts"]
        self.assertTrue(all(c["reason"] == "budget" for c in cuts))
        cut_records = [r for r in doc["records"] if "cut" in r]
        self.assertTrue(all(r["cut"] == "budget" for r in cut_records))
        self.assertEqual(len(cut_records), sum(1 for c in cuts if c["phase"] == "sweep"))
        self.assertIn("budget 60 s", proc.stdout)
        self.assertNotIn("shortened_at_s", doc["budget"])
        self.assertNotIn("# budget: a host is named", proc.stdout)
        if not os.environ.get("ASAN_OPTIONS"):
            self.assertEqual(cuts, [], proc.stdout)
        if cuts:
            self.assertIn(f"; {len(cuts)} cut", proc.stdout)
            self.assertEqual(proc.stdout.count("#   cut (budget):"), len(cuts), proc.stdout)
        else:
            self.assertIn("nothing cut", proc.stdout)
            self.assertNotIn("# cut (budget):", proc.stdout)

    def test_random_pair_rounds_still_name_the_throttled_host(self):
        # The linear-time mode forced on 4 hosts: 2 rounds in a seeded random
        # order, so each host meets 2 of its 3 peers.
        testbed("throttle", "node3", RATE)
        proc, doc = fabricbench(self.json, "p2p", "--pair-bytes", "1M", "--pair-full-limit", "2", "--pair-peers",
                                "2", *FINDINGS, *COMMON)
        self.assertEqual(proc.returncode, 0, proc.stderr)
        validate(self, self.json)
        self.assertEqual(doc["pairs"]["mode"], "random")
        self.assertEqual(len(doc["pairs"]["rounds"]), 2)
        links = {(l["from"], l["to"]) for l in doc["pairs"]["links"]}
        self.assertEqual(len(links), 8)  # 2 rounds x 2 pairs x both directions
        self.assertEqual([(f["kind"], f["hosts"]) for f in doc["findings"]], [("slow_node", ["node3"])],
                         doc["findings"])
    def test_pipeline_projection_takes_the_slowest_stage_link(self):
        # pp 2 on 4 hosts: stages {node0, node1} and {node2, node3}, links
        # node0 -> node2 and node1 -> node3; node2 throttled makes the first
        # the slowest. tp 2 within each host, so 2 replicas.
        testbed("throttle", "node2", RATE)
        model = ["--tp", "2", "--pp", "2", "--hidden", "512", "--seq", "256", "--layers", "8", "--micro-batches",
                 "4", "--compute-ms", "100"]
        proc, doc = fabricbench(self.json, "run", "--sizes", "64K", "--ops", "allreduce", "--scale-bytes", "64K",
                                "--pair-bytes", "1M", *FINDINGS, *model, "--no-measure", "--iters", "4", "--warmup",
                                "1", "--price-per-node-hour", "10")
        self.assertEqual(proc.returncode, 0, proc.stderr)
        validate(self, self.json)
        self.assertIn("# Projected model-parallel training: tp 2 x pp 2 x dp 2 on 8 ranks (4 nodes)", proc.stdout)
        self.assertIn("# PP stage link node 0 -> node 2 (the slowest between stages)", proc.stdout)
        mp = doc["model_parallel"]
        self.assertEqual((mp["tp"], mp["pp"], mp["dp"], mp["nodes"], mp["gpus"]), (2, 2, 2, 4, 8))
        activation = 512 * 256 * 2
        self.assertEqual(mp["activation_bytes"], activation)
        self.assertEqual((mp["tp_allreduce"]["groups"], mp["tp_allreduce"]["ranks"]), (4, 2))
        link = mp["pp_link"]
        self.assertEqual((link["from"], link["to"]), (0, 2))
        links = {(l["from"], l["to"]): l for l in doc["pairs"]["links"]}
        self.assertAlmostEqual(link["bandwidth_gbs"], links[(0, 2)]["bandwidth_gbs"] / 2, places=9)
        self.assertAlmostEqual(link["latency_us"], links[(0, 2)]["latency_us"], places=9)
        self.assertAlmostEqual(link["transfer_us"], link["latency_us"] + activation / (link["bandwidth_gbs"] * 1e3),
                               places=6)
        p = mp["projection"]
        self.assertAlmostEqual(p["bubble_fraction"], 1 / 5, places=12)
        slot = 100 / 16 + 4 * 4 * mp["tp_allreduce"]["time_us"] / 1e3 + 2 * link["transfer_us"] / 1e3
        self.assertAlmostEqual(p["step_ms"], 5 * slot, places=6)
        self.assertAlmostEqual(p["bubble_ms"], slot, places=6)
        self.assertAlmostEqual(p["efficiency"], 100 / (4 * p["step_ms"]), places=9)
        self.assertIn("# Cost of model-parallel training (tp 2 x pp 2 x dp 2, 8 ranks):", proc.stdout)
        # pp 3 does not divide 4 nodes: one line, exit 2.
        proc = testbed("mpirun", "-np", "8", "-q", ARGS.binary, "run", "--pp", "3", "--hidden", "8", "--seq", "8",
                       "--layers", "3", "--compute-ms", "1", check=False)
        self.assertEqual(proc.returncode, 2, proc.stdout + proc.stderr)
        lines = [l for l in proc.stderr.splitlines() if l.startswith("fabricbench:")]
        self.assertEqual(lines, ["fabricbench: error: --pp 3: must divide the 4 nodes (one pipeline stage per block "
                                 "of nodes)"], proc.stderr)

    def rank_pid(self, rank, marker):
        """The pid of world rank `rank` of the run whose command line holds `marker` (any host: one pid space)."""
        deadline = time.time() + 60
        while time.time() < deadline:
            for entry in os.listdir("/proc"):
                if not entry.isdigit():
                    continue
                try:
                    with open(f"/proc/{entry}/cmdline", "rb") as f:
                        cmdline = f.read()
                    with open(f"/proc/{entry}/environ", "rb") as f:
                        env = f.read().split(b"\0")
                except OSError:
                    continue
                if marker.encode() in cmdline and f"OMPI_COMM_WORLD_RANK={rank}".encode() in env and \
                        cmdline.startswith(ARGS.binary.encode()):
                    return int(entry)
            time.sleep(0.2)
        self.fail(f"rank {rank} did not start")

    def test_sigterm_to_a_rank_on_another_host_is_saved_as_that_host_s(self):
        # Rank 5 runs on node2; its reason reaches rank 0 on node0 over the
        # bridge before the launcher stops the rest.
        cmd = [ARGS.testbed, "mpirun", "-np", "8", "-q", ARGS.binary, "sweep", "--transport", "mpi", "--ops",
               "allreduce,allgather", "-b", "1K", "-e", "64K", "--min-time-ms", "300", "--json", self.json]
        proc = subprocess.Popen(cmd, stdout=subprocess.DEVNULL, stderr=subprocess.PIPE, text=True,
                                start_new_session=True, env={**os.environ, **TESTBED_ENV})
        try:
            deadline = time.time() + 120
            while time.time() < deadline and not os.path.exists(self.json):
                time.sleep(0.1)
            os.kill(self.rank_pid(5, self.json), signal.SIGTERM)
            _, err = proc.communicate(timeout=120)
        finally:
            if proc.poll() is None:
                os.killpg(proc.pid, signal.SIGKILL)
                proc.wait()
        with open(self.json, encoding="utf-8") as f:
            status = json.load(f)["status"]
        self.assertFalse(status["complete"])
        self.assertEqual(status["reason"], "interrupted by SIGTERM on node2 (rank 5) in the sweep phase")
        self.assertIn("fabricbench: error: interrupted by SIGTERM on node2 (rank 5) in the sweep phase", err)


def splitmix64_halvings(nodes, count, seed):
    """The halvings fabricbench documents: splitmix64 from the seed, a
    Fisher-Yates shuffle drawing next() % (i + 1), the first half paired with
    the second."""
    mask = (1 << 64) - 1
    state = seed
    out = []
    for _ in range(count):
        order = list(range(nodes))
        for i in range(nodes - 1, 0, -1):
            state = (state + 0x9E3779B97F4A7C15) & mask
            z = state
            z = ((z ^ (z >> 30)) * 0xBF58476D1CE4E5B9) & mask
            z = ((z ^ (z >> 27)) * 0x94D049BB133111EB) & mask
            z ^= z >> 31
            j = z % (i + 1)
            order[i], order[j] = order[j], order[i]
        half = nodes // 2
        out.append((order[:half], order[half:2 * half]))
    return out


def planned_halvings(nodes, count, seed, island_of=None):
    """The halvings fabricbench documents measuring: the latency islands'
    cut (when there are two or more), the node order's, then the seeded
    random ones, no cut twice."""
    out, seen = [], set()

    def add(a, b, source):
        key = tuple(sorted((tuple(sorted(a)), tuple(sorted(b)))))
        if len(out) < count and key not in seen:
            seen.add(key)
            out.append((a, b, source))

    half = nodes // 2
    if island_of and len(set(island_of)) >= 2:
        order = sorted(range(nodes), key=lambda n: island_of[n])
        add(order[:half], order[half:2 * half], "islands")
    add(list(range(half)), list(range(half, 2 * half)), "node order")
    for a, b in splitmix64_halvings(nodes, 16 * count + 16, seed):
        add(a, b, "random")
    return out


class Placement(TestBedCase):
    """Latency islands, the bisection test and shared storage across the 4
    hosts. The islands come from a group whose crossing traffic is slowed
    (this kernel has no netem delay: a low rate with no token bucket makes
    each crossing message queue, a thousand times the test bed's own
    latency); the bisection and storage tests are checked for their
    accounting, never a speed."""

    def setUp(self):
        super().setUp()
        self.folder = os.path.join(self.dir.name, f"{self.id().split('.')[-1]}-storage")
        os.mkdir(self.folder)

    def check_bisection(self, b, halvings, seed, island_of=None):
        self.assertEqual(b["seed"], seed)
        self.assertEqual(b["ranks_per_node"], 2)
        self.assertEqual(b["wrong"], 0)
        self.assertEqual(len(b["halvings"]), halvings)
        for h, (a, other, source) in zip(b["halvings"], planned_halvings(4, halvings, seed, island_of)):
            self.assertEqual((h["half_a"], h["half_b"], h["source"]), (a, other, source))
            self.assertEqual([(p["a"], p["b"]) for p in h["pairs"]], list(zip(a, other)))
            self.assertEqual([(p["host_a"], p["host_b"]) for p in h["pairs"]],
                             [(HOSTS[x], HOSTS[y]) for x, y in zip(a, other)])
            alone = sum(p["isolated_gbs"] for p in h["pairs"])
            loaded = sum(p["loaded_gbs"] for p in h["pairs"])
            self.assertTrue(all(p["loaded_gbs"] > 0 and p["isolated_gbs"] > 0 for p in h["pairs"]))
            self.assertAlmostEqual(h["isolated_gbs"], alone, places=9)
            self.assertAlmostEqual(h["loaded_gbs"], loaded, places=9)
            self.assertAlmostEqual(h["oversubscription"], alone / loaded, places=9)
        worst = max(h["oversubscription"] for h in b["halvings"])
        self.assertAlmostEqual(b["oversubscription"], worst, places=12)
        self.assertEqual(b["blocking"], worst > b["limit"])

    def test_a_slowed_group_is_a_latency_island(self):
        testbed("slow-group", "128kbit", "node2", "node3")
        proc, doc = fabricbench(self.json, "p2p", "--pair-bytes", "4K", "--bisection-halvings", "1", "-q")
        self.assertEqual(proc.returncode, 0, proc.stderr)
        validate(self, self.json)
        islands = doc["islands"]
        latencies = {f"{l['from']}-{l['to']}": l["latency_us"] for l in doc["pairs"]["links"]}
        # Every pair across, not only enough of them to split the chain, is
        # slower than every pair within by the islands' own ratio.
        within = [l["latency_us"] for l in doc["pairs"]["links"] if (l["from"] < 2) == (l["to"] < 2)]
        across = [l["latency_us"] for l in doc["pairs"]["links"] if (l["from"] < 2) != (l["to"] < 2)]
        self.assertEqual((len(within), len(across)), (4, 8), latencies)
        self.assertGreaterEqual(min(across), islands["min_ratio"] * max(within), f"pair latencies (us): {latencies}")
        self.assertEqual([i["hosts"] for i in islands["islands"]], [HOSTS[:2], HOSTS[2:]],
                         f"{islands['message']}; pair latencies (us): {latencies}")
        self.assertEqual([i["name"] for i in islands["islands"]], ["A", "B"])
        self.assertGreaterEqual(islands["ratio"], islands["min_ratio"])
        self.assertAlmostEqual(islands["ratio"],
                               islands["cross_island_latency_us"] / islands["in_island_latency_us"], places=9)
        self.assertIn("# 2 latency islands: A (node0, node1); B (node2, node3)", proc.stdout)
        self.check_bisection(doc["bisection"], 1, 1, [0, 0, 1, 1])
        self.assertEqual(doc["bisection"]["halvings"][0]["source"], "islands")

    def test_a_throttled_pair_leaves_one_island_and_the_bisection_accounts(self):
        testbed("throttle-pair", "node0", "node3", RATE)
        # The test bed's own latency noise (8 ranks on 2 shared cores) reaches
        # about 3x between pairs: a split must be 4x here.
        proc, doc = fabricbench(self.json, "p2p", "--pair-bytes", "256K", "--island-ratio", "4",
                                "--bisection-seed", "7", *COMMON)
        self.assertEqual(proc.returncode, 0, proc.stderr)
        validate(self, self.json)
        self.assertEqual([i["hosts"] for i in doc["islands"]["islands"]], [HOSTS], doc["islands"]["message"])
        self.assertIsNone(doc["islands"]["ratio"])
        self.check_bisection(doc["bisection"], 3, 7)
        self.assertIn("# bisection: ", proc.stdout)

    def test_storage_from_every_host_at_once(self):
        proc, doc = fabricbench(self.json, "storage", "--storage-path", self.folder, "--file-bytes", "2M", "-q")
        self.assertEqual(proc.returncode, 0, proc.stderr)
        validate(self, self.json)
        s = doc["storage"]
        self.assertEqual((s["files_written"], s["files_removed"]), (8, 8))
        self.assertEqual(s["bytes_written"], 8 * 2 * 2**20)
        self.assertEqual([(n["host"], n["files"], n["bytes"]) for n in s["nodes"]],
                         [(h, 2, 2 * 2 * 2**20) for h in HOSTS])
        self.assertIn(s["slowest_write_node"], range(4))
        self.assertIn(s["slowest_read_node"], range(4))
        self.assertIn(f"slowest node to write {HOSTS[s['slowest_write_node']]}", s["message"])
        self.assertEqual(os.listdir(self.folder), [])
        proc, doc = fabricbench(self.json, "storage", "--storage-path", self.folder, "--file-bytes", "1M",
                                "--storage-per-node", "-q")
        self.assertEqual(proc.returncode, 0, proc.stderr)
        self.assertEqual([n["files"] for n in doc["storage"]["nodes"]], [1, 1, 1, 1])
        self.assertEqual(os.listdir(self.folder), [])

    def test_storage_files_are_removed_on_every_host_after_sigterm(self):
        cmd = [ARGS.testbed, "mpirun", "-np", "8", "-q", ARGS.binary, "storage", "--storage-path", self.folder,
               "--file-bytes", "1G", "--json", self.json]
        proc = subprocess.Popen(cmd, stdout=subprocess.DEVNULL, stderr=subprocess.DEVNULL, start_new_session=True,
                                env={**os.environ, **TESTBED_ENV})
        try:
            deadline = time.time() + 120
            while time.time() < deadline:
                names = [n for n in os.listdir(self.folder) if n.startswith(".fabricbench-storage-")]
                if len(names) == 8 and all(os.stat(os.path.join(self.folder, n)).st_size > 0 for n in names):
                    break
                time.sleep(0.05)
            else:
                self.fail("the 8 files never grew")
            self.assertEqual(sorted({n.split("-")[2] for n in names}), HOSTS)  # every host wrote
            proc.send_signal(signal.SIGTERM)
            proc.wait(timeout=60)
        finally:
            if proc.poll() is None:
                os.killpg(proc.pid, signal.SIGKILL)
                proc.wait()
        deadline = time.time() + 10  # remote ranks may outlive mpirun by a moment
        while os.listdir(self.folder) and time.time() < deadline:
            time.sleep(0.1)
        self.assertEqual(os.listdir(self.folder), [])


class ThreeHosts(TestBedCase):
    """3 hosts with long names, 2 ranks each: a slow host is the one both of
    whose links are slow while the third link is not."""
    HOST_COUNT = 3
    PREFIX = "gpu-node-rack07-b"

    @classmethod
    def setUpClass(cls):
        cls.saved_env = dict(TESTBED_ENV)
        TESTBED_ENV.update({"FB_TESTBED_PREFIX": "fbt3", "FB_TESTBED_HOSTPREFIX": cls.PREFIX})
        super().setUpClass()

    @classmethod
    def tearDownClass(cls):
        super().tearDownClass()
        TESTBED_ENV.clear()
        TESTBED_ENV.update(cls.saved_env)

    def test_a_slow_host_among_three_is_named_and_a_healthy_bed_names_none(self):
        hosts = [f"{self.PREFIX}{i}" for i in range(3)]
        proc, doc = fabricbench(self.json, "p2p", "--pair-bytes", "1M", *FINDINGS, *COMMON, np=6)
        self.assertEqual(proc.returncode, 0, proc.stderr)
        self.assertEqual(doc["run"]["hostnames"], hosts)
        self.assertEqual(doc["findings"], [])
        testbed("throttle", hosts[1], RATE)
        proc, doc = fabricbench(self.json, "p2p", "--pair-bytes", "1M", *FINDINGS, *COMMON, np=6)
        self.assertEqual(proc.returncode, 0, proc.stderr)
        validate(self, self.json)
        self.assertEqual([(f["kind"], f["hosts"]) for f in doc["findings"]], [("slow_node", [hosts[1]])],
                         (doc["findings"], doc["pairs"]["links"]))
        f = doc["findings"][0]
        self.assertTrue(f["confirmed"])
        self.assertEqual(sorted(c["hosts"][1] for c in f["checks"]), [hosts[0], hosts[2]])
        self.assertIn(f"slow node {hosts[1]}", proc.stdout)


class DownedLink(unittest.TestCase):
    """A link that goes down mid-run: Open MPI's calls would wait for minutes
    (its own daemon timeout ended such a run after 478 s, without a word from
    fabricbench); the --timeout deadline names the wait and saves the file."""

    @classmethod
    def setUpClass(cls):
        testbed("down", check=False)
        testbed("up", "2", "--slots", "2", "--subnet", "10.77.9")
        cls.dir = tempfile.TemporaryDirectory()

    @classmethod
    def tearDownClass(cls):
        testbed("down", check=False)  # also ends an mpirun still waiting for the unreachable host
        cls.dir.cleanup()

    def read_status(self, path):
        try:
            with open(path, encoding="utf-8") as f:
                doc = json.load(f)
        except (OSError, ValueError):
            return None
        return doc

    def test_a_downed_link_ends_in_the_timeout_with_the_reason_saved(self):
        path = os.path.join(self.dir.name, "downed.json")
        err_path = os.path.join(self.dir.name, "downed.err")
        cmd = [ARGS.testbed, "mpirun", "-np", "4", "-q", ARGS.binary, "sweep", "--transport", "mpi", "--ops",
               "allreduce,allgather", "--sizes", "1K,16M", "--min-time-ms", "2000", "--timeout", "10", "--json",
               path]
        with open(err_path, "w", encoding="utf-8") as err:
            proc = subprocess.Popen(cmd, stdout=subprocess.DEVNULL, stderr=err, start_new_session=True,
                                    env={**os.environ, "FB_TESTBED_PREFIX": "fbt", "FB_TESTBED_HOSTPREFIX": "node"})
        try:
            deadline = time.time() + 120
            while time.time() < deadline:
                doc = self.read_status(path)
                if doc and doc["records"]:
                    break
                time.sleep(0.2)
            else:
                self.fail("no record was saved before the link went down")
            testbed("exec", "node1", "ip", "link", "set", "eth0", "down")
            down = time.time()
            reason = None
            while time.time() < down + 90 and reason is None:
                doc = self.read_status(path)
                reason = doc["status"].get("reason") if doc else None
                time.sleep(0.5)
            self.assertIsNotNone(reason, "no reason was saved after the link went down")
            self.assertRegex(reason, r"^timeout: rank \d on node[01] waited more than 10 s in the sweep phase, "
                                     r"all(reduce|gather) at \d+ [KM]iB")
            self.assertFalse(doc["status"]["complete"])
            validate(self, path)
            with open(err_path, encoding="utf-8") as f:
                self.assertIn("fabricbench: error: timeout: rank", f.read())
        finally:
            try:
                os.killpg(proc.pid, 9)
            except ProcessLookupError:
                pass
            proc.wait()


class TimedResult(unittest.TextTestResult):
    """Each test's wall time after its verdict: what keeps the suite inside CI's time is seen in its log."""

    def startTest(self, test):
        self.started = time.monotonic()
        super().startTest(test)

    def stopTest(self, test):
        super().stopTest(test)
        self.stream.writeln(f"    {time.monotonic() - self.started:.1f} s")
        self.stream.flush()


if __name__ == "__main__":
    parser = argparse.ArgumentParser()
    for name in ("--binary", "--testbed", "--schema", "--validator"):
        parser.add_argument(name, required=True)
    ARGS, rest = parser.parse_known_args()
    if os.geteuid() != 0:
        print("multi-host tests need root (network namespaces, tc): skipped")
        sys.exit(77)
    unittest.main(argv=[sys.argv[0], *rest], testRunner=unittest.TextTestRunner(verbosity=2, resultclass=TimedResult))
