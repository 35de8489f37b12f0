#!/usr/bin/env python3
"""fabricbench under a real single-node Slurm cluster.

Starts munged, slurmctld and slurmd from Debian's packages on this machine,
with a generated slurm.conf, keys, state and sockets in a fresh temporary
folder and free TCP ports, so that two runs cannot meet. Then:
  - `srun --mpi=pmix -n 4 fabricbench run --profile smoke`: the four tasks
    form one MPI world through Slurm's PMIx plugin (no mpirun);
  - the documented batch script, scripts/slurm/fabricbench.sbatch, under
    `sbatch --wait`;
  - `salloc -n 4 mpirun fabricbench ...`: Open MPI's launcher inside an
    allocation;
  - a bad option's exit code (2) comes back through srun.
Each run's exit code is checked and its JSON validated against the schema.
Every daemon started here is stopped at the end, on failure too (and dies
with this process if it is killed).

Needs root (the daemons run as root); exits 77 (skipped) without it or when
the Slurm and munge programs are missing.
"""
import argparse
import ctypes
import glob
import json
import os
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
PROGRAMS = ("munged", "slurmctld", "slurmd", "srun", "sbatch", "salloc", "sinfo", "squeue", "scancel",
            "scontrol")
# Four tasks on a machine that may have two cores: Open MPI under srun does not
# know it is oversubscribed and would spin at full speed in every wait.
CLIENT_ENV = {"OMPI_MCA_mpi_yield_when_idle": "1"}


def free_port():
    with socket.socket(socket.AF_INET, socket.SOCK_STREAM) as s:
        s.bind(("127.0.0.1", 0))
        return s.getsockname()[1]


def die_with_parent():
    # Daemons in the foreground, killed with this process whatever ends it.
    PR_SET_PDEATHSIG = 1
    ctypes.CDLL("libc.so.6", use_errno=True).prctl(PR_SET_PDEATHSIG, signal.SIGTERM)


def tail(path, lines=30):
    try:
        with open(path, encoding="utf-8", errors="replace") as f:
            return "".join(f.readlines()[-lines:])
    except OSError as e:
        return f"({path}: {e})"


class Cluster:
    """munged + slurmctld + slurmd on 127.0.0.1, everything under one folder."""

    def __init__(self):
        self.dir = tempfile.mkdtemp(prefix="fabricbench-slurm-")
        os.chmod(self.dir, 0o755)  # munged wants its socket folder readable by all
        self.procs = []
        self.node = socket.gethostname().split(".")[0]
        self.conf = os.path.join(self.dir, "slurm.conf")
        d = self.dir
        for sub in ("munge", "state", "spool"):
            os.mkdir(os.path.join(d, sub), 0o755)
        self.munge_socket = os.path.join(d, "munge", "socket")
        key = os.path.join(d, "munge", "munge.key")
        with open(key, "wb") as f:
            f.write(os.urandom(1024))
        os.chmod(key, 0o400)
        ctld_port, slurmd_port = free_port(), free_port()
        while slurmd_port == ctld_port:
            slurmd_port = free_port()
        # config_overrides: 4 CPUs whatever the machine has, so 4 tasks fit.
        conf = f"""\
ClusterName=fabricbench-test
SlurmctldHost={self.node}(127.0.0.1)
SlurmctldPort={ctld_port}
SlurmdPort={slurmd_port}
SlurmUser=root
SlurmdUser=root
AuthType=auth/munge
CredType=cred/munge
AuthInfo=socket={self.munge_socket}
StateSaveLocation={d}/state
SlurmdSpoolDir={d}/spool
SlurmctldPidFile={d}/slurmctld.pid
SlurmdPidFile={d}/slurmd.pid
SlurmctldLogFile={d}/slurmctld.log
SlurmdLogFile={d}/slurmd.log
ProctrackType=proctrack/linuxproc
TaskPlugin=task/none
JobAcctGatherType=jobacct_gather/none
AccountingStorageType=accounting_storage/none
SelectType=select/cons_tres
SelectTypeParameters=CR_Core
MpiDefault=none
ReturnToService=2
SlurmdParameters=config_overrides
GresTypes=gpu
NodeName={self.node} NodeAddr=127.0.0.1 CPUs=4 Sockets=1 CoresPerSocket=4 ThreadsPerCore=1 RealMemory=1000 Gres=gpu:8 State=UNKNOWN
PartitionName=test Nodes={self.node} Default=YES MaxTime=30 State=UP
"""
        with open(self.conf, "w", encoding="utf-8") as f:
            f.write(conf)
        # Eight GPUs for the scheduler to hand out, so the batch script's
        # --gpus-per-node=8 is granted as on a GPU cluster. Slurm wants a
        # character device per GPU: nodes with /dev/null's numbers (the job
        # finds no GPU behind them, which is what the tests expect).
        os.mkdir(os.path.join(d, "dev"), 0o755)
        for i in range(8):
            os.mknod(os.path.join(d, "dev", f"gpu{i}"), stat.S_IFCHR | 0o600, os.makedev(1, 3))
        with open(os.path.join(d, "gres.conf"), "w", encoding="utf-8") as f:
            f.write(f"NodeName={self.node} Name=gpu File={d}/dev/gpu[0-7]\n")
        # A clean environment for the clients: no SLURM_* from an enclosing job.
        self.env = {k: v for k, v in os.environ.items() if not k.startswith("SLURM_")}
        self.env.update(CLIENT_ENV, SLURM_CONF=self.conf)

    def start(self):
        d = self.dir
        self.spawn("munged", ["munged", "-F", f"--socket={self.munge_socket}", f"--key-file={d}/munge/munge.key",
                              f"--log-file={d}/munge/munged.log", f"--pid-file={d}/munge/munged.pid",
                              f"--seed-file={d}/munge/munged.seed"])
        self.wait_for(lambda: os.path.exists(self.munge_socket), "munged's socket", f"{d}/munge/munged.log")
        self.spawn("slurmctld", ["slurmctld", "-D", "-f", self.conf])
        self.spawn("slurmd", ["slurmd", "-D", "-f", self.conf])
        self.wait_for(self.node_idle, "the node to be idle", f"{d}/slurmctld.log", f"{d}/slurmd.log")

    def spawn(self, name, cmd):
        log = open(os.path.join(self.dir, f"{name}.out"), "w", encoding="utf-8")
        self.procs.append((name, subprocess.Popen(cmd, stdout=log, stderr=subprocess.STDOUT, env=self.env,
                                                  preexec_fn=die_with_parent)))
        log.close()

    def node_idle(self):
        proc = self.client(["sinfo", "-h", "-N", "-o", "%T"], check=False, timeout=30)
        return proc.returncode == 0 and proc.stdout.strip() == "idle"

    def wait_for(self, ready, what, *logs, seconds=90):
        deadline = time.monotonic() + seconds
        while time.monotonic() < deadline:
            for name, p in self.procs:
                if p.poll() is not None:
                    raise RuntimeError(f"{name} exited with {p.returncode} while waiting for {what}:\n"
                                       + tail(os.path.join(self.dir, f"{name}.out"))
                                       + "".join(tail(log) for log in logs))
            if ready():
                return
            time.sleep(0.5)
        raise RuntimeError(f"timed out waiting for {what}:\n" + "".join(tail(log) for log in logs))

    def client(self, cmd, check=True, timeout=300, extra_env=None):
        proc = subprocess.run(cmd, capture_output=True, text=True, timeout=timeout, cwd=self.dir,
                              env={**self.env, **(extra_env or {})})
        if check and proc.returncode != 0:
            raise AssertionError(f"{' '.join(cmd)} exited {proc.returncode}:\n{proc.stdout}\n{proc.stderr}")
        return proc

    def logs(self):
        return "".join(f"--- {name}\n{tail(os.path.join(self.dir, name))}"
                       for name in ("slurmctld.log", "slurmd.log"))

    def stop(self):
        # Jobs first (their slurmstepd processes are not slurmd's children),
        # then the daemons, newest first.
        if any(p.poll() is None for _, p in self.procs):
            self.client(["scancel", "--full", "--partition=test"], check=False, timeout=30)
            deadline = time.monotonic() + 30
            while time.monotonic() < deadline:
                proc = self.client(["squeue", "-h"], check=False, timeout=30)
                if proc.returncode != 0 or not proc.stdout.strip():
                    break
                time.sleep(0.5)
        for _, p in reversed(self.procs):
            if p.poll() is None:
                p.terminate()
        for _, p in reversed(self.procs):
            try:
                p.wait(timeout=20)
            except subprocess.TimeoutExpired:
                p.kill()
                p.wait()
        shutil.rmtree(self.dir, ignore_errors=True)


class Slurm(unittest.TestCase):
    @classmethod
    def setUpClass(cls):
        cls.cluster = Cluster()
        try:
            cls.cluster.start()
        except BaseException:
            cls.cluster.stop()
            raise

    @classmethod
    def tearDownClass(cls):
        cls.cluster.stop()

    def setUp(self):
        self.out = tempfile.mkdtemp(dir=self.cluster.dir)

    def check_result(self, proc, path, ranks):
        self.assertEqual(proc.returncode, 0, proc.stdout + proc.stderr + self.cluster.logs())
        check = subprocess.run([sys.executable, ARGS.validator, ARGS.schema, path], capture_output=True, text=True)
        self.assertEqual(check.returncode, 0, check.stderr)
        with open(path, encoding="utf-8") as f:
            doc = json.load(f)
        # One world of `ranks` ranks, not `ranks` worlds of one: a launch that
        # did not wire the tasks together gives each its own MPI_COMM_WORLD.
        self.assertEqual(doc["run"]["ranks"], ranks)
        self.assertEqual(doc["run"]["nodes"], 1)
        self.assertTrue(doc["status"]["complete"])
        self.assertTrue(doc["status"]["data_ok"])
        self.assertEqual({r["op"] for r in doc["records"]}, {"allreduce", "allgather", "sendrecv"})
        return doc

    def test_srun_pmix(self):
        path = os.path.join(self.out, "srun.json")
        proc = self.cluster.client(["srun", "--mpi=pmix", "-n", "4", "-t", "10", ARGS.binary, "run", "--profile",
                                    "smoke", "--transport", "mpi", "--json", path], check=False)
        self.check_result(proc, path, 4)
        self.assertEqual(proc.stdout.count("# allreduce on 4 ranks"), 1, proc.stdout)
        self.assertIn("Out of bounds values : 0 OK", proc.stdout)

    def test_sbatch_script(self):
        proc = self.cluster.client(["sbatch", "--wait", "-N", "1", "--ntasks-per-node=4", "-t", "10",
                                    f"--chdir={self.out}", ARGS.sbatch_script, "--profile", "smoke",
                                    "--transport", "mpi", "-q"], check=False,
                                   extra_env={"FABRICBENCH": ARGS.binary})
        job = proc.stdout.split()[-1] if proc.stdout.split() else "?"
        log = tail(os.path.join(self.out, f"fabricbench-{job}.out"))
        self.assertEqual(proc.returncode, 0, proc.stdout + proc.stderr + log + self.cluster.logs())
        self.assertRegex(proc.stdout, r"^Submitted batch job \d+$")
        self.check_result(proc, os.path.join(self.out, f"fabricbench-{job}.json"), 4)
        self.assertTrue(os.path.getsize(os.path.join(self.out, f"fabricbench-{job}.csv")) > 0)
        self.assertIn("Out of bounds values : 0 OK", log)

    def test_sbatch_script_asks_for_the_gpus_and_measures_them(self):
        # Without --transport the script runs `--transport nccl`: on this
        # machine (no GPU) the job fails with the one-line reason instead of
        # measuring host memory; the scheduler granted the GPUs it asks for.
        proc = self.cluster.client(["sbatch", "--wait", "-N", "1", "--ntasks-per-node=2", "-t", "10",
                                    f"--chdir={self.out}", ARGS.sbatch_script, "--profile", "smoke", "-q"],
                                   check=False, extra_env={"FABRICBENCH": ARGS.binary})
        job = proc.stdout.split()[-1] if proc.stdout.split() else "?"
        log = tail(os.path.join(self.out, f"fabricbench-{job}.out"))
        self.assertNotEqual(proc.returncode, 0, proc.stdout + proc.stderr + log)
        self.assertRegex(log, r"fabricbench: error: (no CUDA device visible on \S+ \(.+\); use --transport mpi|"
                              r"--transport nccl: this build has no NCCL transport)")
        self.assertNotIn("# allreduce on", log)
        shown = self.cluster.client(["scontrol", "show", "job", job], check=False)
        self.assertRegex(shown.stdout, r"TresPerNode=(gres:)?gpu:8", shown.stdout + shown.stderr)

    def test_mpirun_in_allocation(self):
        path = os.path.join(self.out, "salloc.json")
        proc = self.cluster.client(["salloc", "-n", "4", "-t", "10", "mpirun", "--allow-run-as-root", "--bind-to",
                                    "none", ARGS.binary, "run", "--profile", "smoke", "--transport", "mpi",
                                    "-q", "--json", path], check=False)
        self.check_result(proc, path, 4)

    def test_exit_code_through_srun(self):
        proc = self.cluster.client(["srun", "--mpi=pmix", "-n", "2", "-t", "5", ARGS.binary, "run", "--profile",
                                    "smoke", "--ops", "nosuchop"], check=False)
        self.assertEqual(proc.returncode, 2, proc.stdout + proc.stderr)
        errors = [line for line in proc.stderr.splitlines() if line.startswith("fabricbench: error:")]
        self.assertEqual(len(errors), 1, proc.stderr)
        self.assertIn("nosuchop", errors[0])


if __name__ == "__main__":
    parser = argparse.ArgumentParser()
    for name in ("--binary", "--sbatch-script", "--schema", "--validator"):
        parser.add_argument(name, required=True)
    ARGS, rest = parser.parse_known_args()
    ARGS.binary = os.path.abspath(ARGS.binary)
    ARGS.sbatch_script = os.path.abspath(ARGS.sbatch_script)
    if os.geteuid() != 0:
        print("the Slurm tests start slurmctld, slurmd and munged as root: skipped (run ctest as root)")
        sys.exit(77)
    missing = [p for p in PROGRAMS if shutil.which(p) is None]
    if missing:
        print(f"the Slurm tests need {', '.join(missing)} (Debian: slurmctld slurmd slurm-client munge; "
              "scripts/setup.sh --test installs them): skipped")
        sys.exit(77)
    unittest.main(argv=[sys.argv[0], "-v", *rest])
