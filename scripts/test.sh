#!/usr/bin/env bash
# Installs what is needed, builds fabricbench with warnings as errors and runs
# the whole test suite (unit, MPI with 1-4 ranks, end to end, the fuzz corpora
# replayed; multi-host, a single-node Slurm cluster and the Debian package when
# run as root). The sanitizer build and the fuzzers are
# scripts/test-sanitizers.sh. Arguments go to ctest.
set -euo pipefail
cd "$(dirname "$0")/.."

scripts/setup.sh --test
cmake --preset ci >/dev/null
cmake --build --preset ci
ctest --preset ci "$@"
