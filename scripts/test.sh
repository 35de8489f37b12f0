#!/usr/bin/env bash
# Installs what is needed, builds fabricbench with warnings as errors and runs
# the whole test suite (unit, MPI with 1-4 ranks, end to end; multi-host, a
# single-node Slurm cluster and the Debian package when run as root).
set -euo pipefail
cd "$(dirname "$0")/.."

scripts/setup.sh --test
cmake --preset ci >/dev/null
cmake --build --preset ci
ctest --preset ci "$@"
