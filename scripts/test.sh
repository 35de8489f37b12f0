#!/usr/bin/env bash
# Installs what is needed, builds fabricbench with warnings as errors and runs
# the whole test suite (unit, MPI with 1-4 ranks, end to end, the fuzz corpora
# replayed; multi-host, a single-node Slurm cluster and the Debian package when
# run as root), then the sanitizer stage (scripts/test-sanitizers.sh: the
# suite built with AddressSanitizer and UndefinedBehaviorSanitizer, then each
# fuzz target for a bounded time). Arguments go to both ctest runs.
set -euo pipefail
cd "$(dirname "$0")/.."

scripts/setup.sh --test
cmake --preset ci >/dev/null
cmake --build --preset ci
ctest --preset ci "$@"
scripts/test-sanitizers.sh "$@"
