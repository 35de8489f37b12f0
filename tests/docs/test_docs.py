#!/usr/bin/env python3
"""The README and the guides say what the binary does.

- Every command in a ```sh block of README.md and docs/guides/*.md runs
  against the built binary and exits 0, or with the code a
  `<!-- doc-test: exit N -->` line just above the block names. A block is
  skipped only when the line above it says what it needs and this machine
  lacks: `<!-- doc-test: needs-gpu -->`, `needs-cluster`, `needs-install`
  (installs packages, builds or installs the project) or `needs-network`.
  The commands of one file run in order, in one scratch folder, so a later
  block can read the files an earlier one wrote; `fabricbench` is the built
  binary, and `mpirun` adds --oversubscribe (and --allow-run-as-root as root).
- README.md has at most 300 lines.
- `fabricbench help` lists exactly the guides, and `fabricbench help TOPIC`
  prints each file as it is.
- No table repeats the option reference (a row that starts with an option),
  and every --flag the docs name exists in some `fabricbench SUBCOMMAND
  --help`, or is one of the other tools' flags listed below.

usage: test_docs.py --binary FABRICBENCH --mpirun MPIRUN --source-dir DIR
"""
import argparse
import glob
import os
import re
import shlex
import subprocess
import sys
import tempfile
import time
import unittest

ARGS = None

README_MAX_LINES = 300
COMMAND_TIMEOUT_S = 180
NEEDS = {"needs-gpu", "needs-cluster", "needs-install", "needs-network"}

# Flags of other tools that the docs show (mpirun, srun, sbatch, cmake, cpack,
# the project's scripts, compilers): not fabricbench's, so not in its --help.
OTHER_TOOLS_FLAGS = {
    "--allow-run-as-root", "--oversubscribe", "--hostfile", "--map-by", "--bind-to",  # mpirun
    "--with-pmix",  # Open MPI's configure
    "--mpi", "--ntasks-per-node", "--gpus-per-node", "--wait",  # srun, sbatch
    "--preset", "--build", "--install", "--prefix", "--target", "--dry-run",  # cmake, ctest, clang-format
    "--test",  # scripts/setup.sh
    "--nccl-tests", "--nvbandwidth", "--boost", "--build-only",  # scripts/gpu-prepare.sh, gpu-check.sh
    "--time",  # scripts/fuzz.sh
    "--warnings",  # man
    "--ipc", "--ulimit",  # docker run
    "--help", "--version",  # every subcommand's, and CLI11's own
}


def doc_files():
    root = ARGS.source_dir
    return [os.path.join(root, "README.md")] + sorted(glob.glob(os.path.join(root, "docs", "guides", "*.md")))


def read(path):
    with open(path, encoding="utf-8") as f:
        return f.read()


def blocks(text):
    """(language, marker, body) of each fenced block; marker is the
    doc-test comment on the last non-empty line before the fence, or ''."""
    found = []
    lines = text.split("\n")
    i = 0
    while i < len(lines):
        fence = re.match(r"^```(\S*)\s*$", lines[i])
        if not fence:
            i += 1
            continue
        marker = ""
        j = i - 1
        while j >= 0 and not lines[j].strip():
            j -= 1
        if j >= 0:
            m = re.match(r"^<!-- doc-test: (.+?) -->$", lines[j].strip())
            if m:
                marker = m.group(1)
        end = i + 1
        while end < len(lines) and not lines[end].startswith("```"):
            end += 1
        found.append((fence.group(1), marker, "\n".join(lines[i + 1:end])))
        i = end + 1
    return found


def commands(body):
    """The block's commands: one a line, a trailing backslash continues it."""
    result, current = [], ""
    for line in body.split("\n"):
        if line.rstrip().endswith("\\"):
            current += line.rstrip()[:-1] + " "
            continue
        current += line
        if current.strip() and not current.strip().startswith("#"):
            result.append(current.strip())
        current = ""
    return result


def help_of(*args):
    return subprocess.run([ARGS.binary, *args, "--help"], capture_output=True, text=True, check=True).stdout


def subcommands():
    listed = help_of().split("Subcommands:", 1)[1]
    return re.findall(r"^  (\w+)\s", listed, re.M)


def flags_in(text):
    return set(re.findall(r"(?<![\w-])(--[a-z][a-z0-9-]*)", text))


class Docs(unittest.TestCase):
    @classmethod
    def setUpClass(cls):
        cls.docs = {path: read(path) for path in doc_files()}
        cls.help = {sub: help_of(sub) for sub in subcommands()}

    def test_readme_is_short(self):
        lines = self.docs[os.path.join(ARGS.source_dir, "README.md")].count("\n")
        self.assertLessEqual(lines, README_MAX_LINES)

    def test_help_lists_every_guide_and_prints_it(self):
        listing = subprocess.run([ARGS.binary, "help"], capture_output=True, text=True, check=True).stdout
        listed = re.findall(r"^  (\S+)  ", listing, re.M)
        files = sorted(os.path.basename(p)[:-3] for p in self.docs if "/docs/guides/" in p.replace(os.sep, "/"))
        self.assertTrue(files)
        self.assertEqual(sorted(listed), files)
        for topic in files:
            with self.subTest(topic=topic):
                printed = subprocess.run([ARGS.binary, "help", topic], capture_output=True, check=True).stdout
                with open(os.path.join(ARGS.source_dir, "docs", "guides", topic + ".md"), "rb") as f:
                    self.assertEqual(printed, f.read())

    def test_unknown_topic_is_one_line_and_exit_2(self):
        proc = subprocess.run([ARGS.binary, "help", "no-such-topic"], capture_output=True, text=True)
        self.assertEqual(proc.returncode, 2)
        self.assertEqual(proc.stdout, "")
        self.assertRegex(proc.stderr, r"^fabricbench: error: help: no topic 'no-such-topic' \(topics: [a-z, -]+\)\n$")

    def test_no_option_tables(self):
        for path, text in self.docs.items():
            for number, line in enumerate(text.split("\n"), 1):
                with self.subTest(file=os.path.basename(path), line=number):
                    self.assertNotRegex(line, r"^\|\s*`-", "an option table: the reference is --help")

    def test_every_flag_exists(self):
        known = set(OTHER_TOOLS_FLAGS)
        for text in self.help.values():
            known |= flags_in(text)
        for path, text in self.docs.items():
            stale = sorted(flags_in(text) - known)
            self.assertEqual(stale, [], f"{os.path.basename(path)}: not in any fabricbench SUBCOMMAND --help")

    def test_commands_use_their_subcommands_flags(self):
        for path, text in self.docs.items():
            for language, _, body in blocks(text):
                if language != "sh":
                    continue
                for command in commands(body):
                    words = command.split()
                    for at, word in enumerate(words):
                        if word != "fabricbench" or at + 1 >= len(words) or words[at + 1] not in self.help:
                            continue
                        sub = words[at + 1]
                        for flag in flags_in(" ".join(words[at + 2:]).split("#")[0]):
                            with self.subTest(file=os.path.basename(path), command=command, flag=flag):
                                self.assertIn(flag, flags_in(self.help[sub]) | {"--help"})

    def test_markers_are_known(self):
        for path, text in self.docs.items():
            for _, marker, _ in blocks(text):
                with self.subTest(file=os.path.basename(path), marker=marker):
                    self.assertTrue(marker == "" or marker in NEEDS or re.fullmatch(r"exit \d+", marker), marker)

    def test_commands_run(self):
        with tempfile.TemporaryDirectory() as tools:
            os.symlink(os.path.abspath(ARGS.binary), os.path.join(tools, "fabricbench"))
            extra = "--oversubscribe --bind-to none" + (" --allow-run-as-root" if os.geteuid() == 0 else "")
            with open(os.path.join(tools, "mpirun"), "w", encoding="utf-8") as f:
                f.write(f'#!/bin/sh\nexec {shlex.quote(ARGS.mpirun)} {extra} "$@"\n')
            os.chmod(os.path.join(tools, "mpirun"), 0o755)
            env = {**os.environ, "PATH": tools + os.pathsep + os.environ.get("PATH", "")}
            ran = 0
            for path, text in self.docs.items():
                with tempfile.TemporaryDirectory() as work:
                    for language, marker, body in blocks(text):
                        if language != "sh":
                            continue
                        if marker in NEEDS:
                            print(f"skipped ({marker}): {os.path.basename(path)}: {commands(body)[0]}",
                                  file=sys.stderr)
                            continue
                        expected = int(marker.split()[1]) if marker.startswith("exit ") else 0
                        for command in commands(body):
                            with self.subTest(file=os.path.basename(path), command=command):
                                start = time.monotonic()
                                proc = subprocess.run(["bash", "-c", command], cwd=work, env=env,
                                                      capture_output=True, text=True, timeout=COMMAND_TIMEOUT_S)
                                print(f"ran ({time.monotonic() - start:.1f} s, exit {proc.returncode}): "
                                      f"{os.path.basename(path)}: {command}", file=sys.stderr)
                                self.assertEqual(proc.returncode, expected,
                                                 f"{command}\nstdout:\n{proc.stdout[-2000:]}\nstderr:\n"
                                                 f"{proc.stderr[-2000:]}")
                                ran += 1
            self.assertGreater(ran, 0)


if __name__ == "__main__":
    parser = argparse.ArgumentParser()
    for name in ("--binary", "--mpirun", "--source-dir"):
        parser.add_argument(name, required=True)
    ARGS, rest = parser.parse_known_args()
    unittest.main(argv=[sys.argv[0], "-v", *rest])
