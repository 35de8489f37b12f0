#!/usr/bin/env bash
# Installs what is needed, builds fabricbench with warnings as errors and runs
# the whole test suite (unit, MPI with 1-4 ranks, end to end, the fuzz corpora
# replayed; multi-host, a single-node Slurm cluster and the Debian package when
# run as root); then the same suite (less Slurm and the package) built with
# AddressSanitizer and UndefinedBehaviorSanitizer (the asan preset), and each
# libFuzzer target for a bounded time (FABRICBENCH_FUZZ_SECONDS, default 60).
# Arguments go to both ctest runs.
set -euo pipefail
cd "$(dirname "$0")/.."

scripts/setup.sh --test
cmake --preset ci >/dev/null
cmake --build --preset ci
ctest --preset ci "$@"

cmake --preset asan >/dev/null
cmake --build --preset asan
ctest --preset asan "$@"
scripts/fuzz.sh --time "${FABRICBENCH_FUZZ_SECONDS:-60}"
