#!/usr/bin/env bash
# Runs clang-tidy (the repository's .clang-tidy) over fabricbench's sources,
# using the compile commands of a configured build.
#   scripts/clang-tidy.sh [build-dir] [file...]
# build-dir defaults to build/dev (configured with `cmake --preset dev` if it
# is not there yet); without files, every .cpp under src/. Exits non-zero when
# clang-tidy reports a warning.
set -euo pipefail
cd "$(dirname "$0")/.."

build="${1:-build/dev}"
shift || true
tidy="$(command -v clang-tidy-14 || command -v clang-tidy || true)"
if [[ -z "$tidy" ]]; then
  echo "fabricbench: error: clang-tidy not found (scripts/setup.sh installs clang-tidy-14)" >&2
  exit 2
fi
if [[ ! -f "$build/compile_commands.json" ]]; then
  if [[ "$build" == build/dev ]]; then
    cmake --preset dev >/dev/null
  else
    echo "fabricbench: error: $build/compile_commands.json not found (configure that build first)" >&2
    exit 2
  fi
fi
# The generated sources (git hash, embedded data) must exist for the files that
# include them.
cmake --build "$build" --target fabricbench_git_version >/dev/null

if (($# > 0)); then
  files=("$@")
else
  mapfile -t files < <(find src -name '*.cpp' | sort)
fi
# GCC-only warning flags in the compile commands are not clang-tidy's business.
"$tidy" -p "$build" --quiet --warnings-as-errors='*' --extra-arg=-Wno-unknown-warning-option "${files[@]}"
