#!/usr/bin/env python3
"""The Debian package, built, installed, used and removed on this machine.

Builds the .deb with `cpack -G DEB` from the build tree, checks that its
Depends names the package of every library the binary loads (a library no
package owns, such as a CUDA runtime from NVIDIA's installer, must sit in
the binary's RUNPATH instead) and Open MPI's launcher, that apt resolves
everything it needs on a machine with nothing installed, installs it with
apt-get, runs the installed `fabricbench version` and a 2-rank smoke run
under mpirun whose JSON validates against the installed schema, reads the
installed man page, then removes the package and checks nothing is left.

Needs root (it installs into /usr); exits 77 (skipped) without it, or when a
fabricbench package is already installed (it is not replaced).
"""
import argparse
import glob
import json
import os
import re
import subprocess
import sys
import tempfile
import unittest

ARGS = None
APT = ["apt-get", "-y", "-q", "-o", "DPkg::Lock::Timeout=300", "--no-install-recommends"]
ENV = {**os.environ, "DEBIAN_FRONTEND": "noninteractive", "LC_ALL": "C"}


def run(*cmd, check=True, timeout=600, **kw):
    proc = subprocess.run(cmd, capture_output=True, text=True, timeout=timeout, env=kw.pop("env", ENV), **kw)
    if check and proc.returncode != 0:
        raise AssertionError(f"{' '.join(cmd)} exited {proc.returncode}:\n{proc.stdout}\n{proc.stderr}")
    return proc


def installed(package):
    proc = run("dpkg-query", "-W", "-f=${Status}", package, check=False)
    return proc.returncode == 0 and "install ok installed" in proc.stdout


def owning_package(path):
    """The package that ships `path`, trying the /usr-merged spellings, or None."""
    real = os.path.realpath(path)
    candidates = {path, real}
    for p in list(candidates):
        if p.startswith("/usr/lib/"):
            candidates.add(p[len("/usr"):])
        elif p.startswith("/lib/"):
            candidates.add("/usr" + p)
    for p in sorted(candidates):
        proc = run("dpkg-query", "-S", p, check=False)
        if proc.returncode == 0:
            # "libfmt9:amd64: /usr/lib/x86_64-linux-gnu/libfmt.so.9.1.0"
            return proc.stdout.split(":")[0].split(",")[0].strip()
    return None


def depends_names(field):
    """Package names of a Depends field (alternatives included)."""
    names = set()
    for clause in field.split(","):
        for alt in clause.split("|"):
            alt = alt.strip()
            if alt:
                names.add(re.split(r"[\s(:]", alt, maxsplit=1)[0])
    return names


class Package(unittest.TestCase):
    @classmethod
    def setUpClass(cls):
        cls.dir = tempfile.TemporaryDirectory()
        proc = run(ARGS.cpack, "-G", "DEB", "--config", ARGS.cpack_config, "-B", cls.dir.name)
        debs = glob.glob(os.path.join(cls.dir.name, "*.deb"))
        if len(debs) != 1:
            raise AssertionError(f"cpack made {debs}:\n{proc.stdout}\n{proc.stderr}")
        cls.deb = debs[0]
        cls.tree = os.path.join(cls.dir.name, "tree")
        run("dpkg-deb", "-x", cls.deb, cls.tree)

    @classmethod
    def tearDownClass(cls):
        cls.dir.cleanup()

    def field(self, name):
        return run("dpkg-deb", "-f", self.deb, name).stdout.strip()

    def test_1_contents(self):
        self.assertEqual(self.field("Package"), "fabricbench")
        self.assertEqual(self.field("Version"), ARGS.version)
        for path in ("usr/bin/fabricbench", "usr/share/man/man1/fabricbench.1.gz",
                     "usr/share/fabricbench/result.schema.json", "usr/share/doc/fabricbench/copyright",
                     "usr/share/doc/fabricbench/examples/fabricbench.sbatch",
                     "usr/share/doc/fabricbench/examples/mpijob.yaml"):
            self.assertTrue(os.path.isfile(os.path.join(self.tree, path)), path)
        with open(os.path.join(self.tree, "usr/share/fabricbench/result.schema.json"), encoding="utf-8") as f, \
                open(ARGS.schema, encoding="utf-8") as g:
            self.assertEqual(json.load(f), json.load(g))

    def test_2_depends_cover_every_library(self):
        depends = depends_names(self.field("Depends"))
        self.assertIn("openmpi-bin", depends, "mpirun comes from openmpi-bin")
        binary = os.path.join(self.tree, "usr/bin/fabricbench")
        dynamic = run("objdump", "-p", binary).stdout
        needed = re.findall(r"^\s*NEEDED\s+(\S+)", dynamic, re.M)
        runpath = re.findall(r"^\s*(?:RUNPATH|RPATH)\s+(\S+)", dynamic, re.M)
        runpath_dirs = runpath[0].split(":") if runpath else []
        resolved = dict(re.findall(r"^\s*(\S+) => (/\S+)", run("ldd", binary).stdout, re.M))
        self.assertTrue(needed)
        for lib in needed:
            self.assertIn(lib, resolved, f"{lib} is not found by the loader")
            package = owning_package(resolved[lib])
            if package is None:
                self.assertIn(os.path.dirname(resolved[lib]), runpath_dirs,
                              f"{lib} ({resolved[lib]}) belongs to no package and is not in the RUNPATH")
            else:
                self.assertIn(package, depends, f"{lib} comes from {package}, which Depends lacks")

    def test_2a_cuda_and_nccl_are_declared(self):
        # A build with the NCCL transport needs the CUDA runtime and NCCL: the
        # package names the Debian package that ships each (Depends) or, for
        # one no package on this machine ships, NVIDIA's repository package
        # for it (Recommends), and says so in its description.
        binary = os.path.join(self.tree, "usr/bin/fabricbench")
        needed = re.findall(r"^\s*NEEDED\s+(\S+)", run("objdump", "-p", binary).stdout, re.M)
        cuda = [lib for lib in needed if re.match(r"libcudart\.so\.\d+$|libnccl\.so\.2$", lib)]
        if not cuda:
            self.assertIn("transports: mpi", run(binary, "version", check=False).stdout)
            self.skipTest("built without the NCCL transport: no CUDA library to declare")
        declared = depends_names(self.field("Depends")) | depends_names(self.field("Recommends"))
        resolved = dict(re.findall(r"^\s*(\S+) => (/\S+)", run("ldd", binary).stdout, re.M))
        for lib in cuda:
            with self.subTest(lib=lib):
                owner = owning_package(resolved[lib]) if lib in resolved else None
                if owner is not None:
                    self.assertIn(owner, depends_names(self.field("Depends")))
                elif lib.startswith("libnccl"):
                    self.assertIn("libnccl2", declared)
                else:
                    major = lib.rsplit(".", 1)[1]
                    self.assertTrue([p for p in declared if re.fullmatch(rf"cuda-cudart-{major}-\d+", p)], declared)
                self.assertIn(lib, self.field("Description"))

    def test_2b_resolves_on_an_empty_system(self):
        # apt's simulation against an empty dpkg status: what installing the
        # package on a machine with nothing installed would take, resolved from
        # the distribution's archive.
        policy = run("apt-cache", "policy", "libopenmpi3").stdout
        if "Candidate: (none)" in policy or "Candidate:" not in policy:
            self.skipTest("apt has no package lists (apt-get update) to resolve dependencies against")
        status = os.path.join(self.dir.name, "empty-status")
        open(status, "w", encoding="utf-8").close()
        proc = run("apt-get", "-s", "-o", f"Dir::State::status={status}", "install", self.deb, check=False)
        self.assertEqual(proc.returncode, 0, proc.stdout + proc.stderr)
        installs = set(re.findall(r"^Inst (\S+)", proc.stdout, re.M))
        for package in ("fabricbench", "openmpi-bin", "libopenmpi3", "libfmt9", "libstdc++6"):
            self.assertIn(package, installs)

    def test_3_install_run_remove(self):
        if installed("fabricbench"):
            self.skipTest("a fabricbench package is already installed; not replacing it")
        try:
            run(*APT, "install", self.deb)
            self.assertTrue(installed("fabricbench"))
            binary = "/usr/bin/fabricbench"
            self.assertEqual(run("dpkg-query", "-S", binary).stdout.split(":")[0], "fabricbench")

            proc = run(binary, "version")
            self.assertRegex(proc.stdout, rf"^fabricbench {re.escape(ARGS.version)} ")
            self.assertIn("transports: mpi", proc.stdout)

            out = os.path.join(self.dir.name, "smoke.json")
            proc = run("mpirun", "--allow-run-as-root", "--oversubscribe", "--bind-to", "none", "-np", "2",
                       binary, "run", "--profile", "smoke", "--transport", "mpi", "-q", "--json", out, check=False)
            self.assertEqual(proc.returncode, 0, proc.stdout + proc.stderr)
            proc = run(sys.executable, ARGS.validator, "/usr/share/fabricbench/result.schema.json", out, check=False)
            self.assertEqual(proc.returncode, 0, proc.stderr)
            with open(out, encoding="utf-8") as f:
                doc = json.load(f)
            self.assertEqual(doc["run"]["ranks"], 2)
            self.assertEqual(doc["tool"]["version"], ARGS.version)
            self.assertTrue(doc["status"]["complete"])
            self.assertTrue(doc["status"]["data_ok"])
            self.assertTrue(doc["records"])

            page = run("man", "-w", "fabricbench").stdout.strip()
            self.assertEqual(page, "/usr/share/man/man1/fabricbench.1.gz")
            proc = run("man", "--warnings", "-P", "cat", "fabricbench", env={**ENV, "MANWIDTH": "80"})
            self.assertEqual(proc.stderr, "")
            self.assertIn("srun --mpi=pmix", proc.stdout)
        finally:
            if installed("fabricbench"):
                run(*APT, "purge", "fabricbench", check=False)
        self.assertFalse(installed("fabricbench"))
        for path in ("/usr/bin/fabricbench", "/usr/share/man/man1/fabricbench.1.gz", "/usr/share/fabricbench",
                     "/usr/share/doc/fabricbench"):
            self.assertFalse(os.path.exists(path), f"{path} is left after purging the package")


if __name__ == "__main__":
    parser = argparse.ArgumentParser()
    for name in ("--cpack", "--cpack-config", "--version", "--schema", "--validator"):
        parser.add_argument(name, required=True)
    ARGS, rest = parser.parse_known_args()
    if os.geteuid() != 0:
        print("the package test installs into /usr and needs root: skipped")
        sys.exit(77)
    unittest.main(argv=[sys.argv[0], "-v", *rest])
