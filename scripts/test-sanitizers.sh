#!/usr/bin/env bash
# The sanitizer and fuzzing stage: the suite (less Slurm and the package)
# built with AddressSanitizer and UndefinedBehaviorSanitizer (the asan
# preset), then each libFuzzer target for a bounded time
# (FABRICBENCH_FUZZ_SECONDS, default 30). Arguments go to ctest.
set -euo pipefail
cd "$(dirname "$0")/.."

scripts/setup.sh --test
cmake --preset asan >/dev/null
cmake --build --preset asan
ctest --preset asan "$@"
scripts/fuzz.sh --time "${FABRICBENCH_FUZZ_SECONDS:-30}"
