#!/usr/bin/env python3
"""The Kubernetes launch example, scripts/kubernetes/mpijob.yaml, checked
without a cluster: it validates against the MPIJob v2beta1 schema
(mpijob-v2beta1.schema.json, which refuses unknown fields), and it holds
together as a fabricbench job: one launcher whose -np is workers x slots,
one GPU per slot requested, an RDMA device requested, an SSH server started
on each worker (the launcher reaches them over SSH), every volume mounted
exists, and the launcher runs `fabricbench run --transport nccl` with
options the real binary accepts. The schema is shown to refuse the example
with each of a few mistakes, so a pass means something."""
import argparse
import copy
import json
import os
import subprocess
import sys
import tempfile
import unittest

try:
    import yaml
except ImportError:
    print("test_mpijob.py needs PyYAML (Debian: python3-yaml; scripts/setup.sh --test installs it)", file=sys.stderr)
    sys.exit(1)

ARGS = None


class MpiJob(unittest.TestCase):
    @classmethod
    def setUpClass(cls):
        with open(ARGS.manifest, encoding="utf-8") as f:
            cls.doc = yaml.safe_load(f)
        cls.dir = tempfile.TemporaryDirectory()

    @classmethod
    def tearDownClass(cls):
        cls.dir.cleanup()

    def validate(self, doc):
        path = os.path.join(self.dir.name, "mpijob.json")
        with open(path, "w", encoding="utf-8") as f:
            json.dump(doc, f)
        return subprocess.run([sys.executable, ARGS.validator, ARGS.schema, path], capture_output=True, text=True)

    def replica(self, name):
        return self.doc["spec"]["mpiReplicaSpecs"][name]

    def container(self, name):
        containers = self.replica(name)["template"]["spec"]["containers"]
        self.assertEqual(len(containers), 1)
        return containers[0]

    def test_validates_against_the_schema(self):
        proc = self.validate(self.doc)
        self.assertEqual(proc.returncode, 0, proc.stdout + proc.stderr)

    def test_the_schema_refuses_mistakes(self):
        def spec(d):
            return d["spec"]

        def worker(d):
            return d["spec"]["mpiReplicaSpecs"]["Worker"]["template"]["spec"]

        mistakes = {
            "old api version": lambda d: d.update(apiVersion="kubeflow.org/v1"),
            "misspelt field": lambda d: worker(d)["containers"][0].update(volumeMount=[]),
            "bad clean policy": lambda d: spec(d)["runPolicy"].update(cleanPodPolicy="Never"),
            "replicas as text": lambda d: spec(d)["mpiReplicaSpecs"]["Worker"].update(replicas="2"),
            "no launcher": lambda d: spec(d)["mpiReplicaSpecs"].pop("Launcher"),
            "unknown replica type": lambda d: spec(d)["mpiReplicaSpecs"].update(Chief={"template": {}}),
            "bad quantity": lambda d: worker(d)["containers"][0]["resources"]["limits"].update(
                {"nvidia.com/gpu": "eight"}),
            "volume of two kinds": lambda d: worker(d)["volumes"][0].update(hostPath={"path": "/dev/shm"}),
        }
        for what, change in mistakes.items():
            with self.subTest(mistake=what):
                doc = copy.deepcopy(self.doc)
                change(doc)
                proc = self.validate(doc)
                self.assertNotEqual(proc.returncode, 0, f"the schema took the example with a {what}")

    def test_ranks_slots_and_gpus_agree(self):
        spec = self.doc["spec"]
        self.assertEqual(self.replica("Launcher").get("replicas", 1), 1)
        workers = self.replica("Worker")["replicas"]
        slots = spec["slotsPerWorker"]
        command = self.container("Launcher")["command"]
        self.assertEqual(command[0], "mpirun")
        np_ = int(command[command.index("-np") + 1])
        self.assertEqual(np_, workers * slots, "-np is workers x slotsPerWorker: one rank per GPU")
        limits = self.container("Worker")["resources"]["limits"]
        self.assertEqual(int(limits["nvidia.com/gpu"]), slots, "one GPU per slot")

    def test_workers_serve_ssh_and_request_rdma(self):
        worker = self.container("Worker")
        self.assertIn("/usr/sbin/sshd -D", " ".join(worker["command"]), "the launcher reaches workers over SSH")
        limits = worker["resources"]["limits"]
        self.assertTrue([k for k in limits if k.startswith("rdma/") or "rdma" in k.lower()],
                        f"no RDMA device requested in {sorted(limits)}")
        self.assertIn("IPC_LOCK", worker["securityContext"]["capabilities"]["add"])
        volumes = {v["name"] for v in self.replica("Worker")["template"]["spec"]["volumes"]}
        for mount in worker["volumeMounts"]:
            self.assertIn(mount["name"], volumes)

    def test_launcher_runs_fabricbench_on_the_gpus_with_valid_options(self):
        command = self.container("Launcher")["command"]
        args = command[command.index("fabricbench") + 1:]
        self.assertEqual(args[0], "run")
        self.assertEqual(args[args.index("--transport") + 1], "nccl")
        # The real binary takes the same arguments (the JSON written here):
        # on this machine, without a GPU, they get as far as choosing the
        # transport, which refuses with its one line; an unknown option
        # would stop them first with another.
        args[args.index("--json") + 1] = os.path.join(self.dir.name, "r.json")
        proc = subprocess.run([ARGS.binary, *args], capture_output=True, text=True, timeout=120)
        self.assertEqual(proc.returncode, 2, proc.stdout + proc.stderr)
        self.assertRegex(proc.stderr, r"^fabricbench: error: (no CUDA device visible on \S+ \(.+\); use "
                                      r"--transport mpi|--transport nccl: this build has no NCCL transport)")
        proc = subprocess.run([ARGS.binary, *args, "--no-such-option"], capture_output=True, text=True, timeout=60)
        self.assertEqual(proc.returncode, 2)
        self.assertIn("no-such-option", proc.stderr)

if __name__ == "__main__":
    parser = argparse.ArgumentParser()
    for name in ("--manifest", "--schema", "--validator", "--binary"):
        parser.add_argument(name, required=True)
    ARGS, rest = parser.parse_known_args()
    unittest.main(argv=[sys.argv[0], "-v", *rest])
