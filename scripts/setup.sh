#!/usr/bin/env bash
# Installs the Debian packages fabricbench needs to build and test.
# Idempotent: installs only what is missing. Needs root (or sudo).
#   scripts/setup.sh          what building and running needs (the quick start)
#   scripts/setup.sh --test   also what only the test suite needs (scripts/test.sh):
#                             clang, its sanitizer and libFuzzer runtimes and
#                             llvm-symbolizer, for the asan preset and the fuzz targets
set -euo pipefail

packages=(
  build-essential cmake ninja-build git pkg-config
  openmpi-bin libopenmpi-dev
  libcli11-dev libfmt-dev nlohmann-json3-dev libgtest-dev
  python3 python3-jsonschema
  chromium
  iproute2 util-linux procps
)
if [[ ${1:-} == --test ]]; then
  packages+=(clang libclang-rt-14-dev llvm)
elif [[ $# -gt 0 ]]; then
  echo "usage: setup.sh [--test]" >&2
  exit 2
fi

missing=()
for p in "${packages[@]}"; do
  if ! dpkg-query -W -f='${Status}' "$p" 2>/dev/null | grep -q "install ok installed"; then
    missing+=("$p")
  fi
done

if ((${#missing[@]} == 0)); then
  echo "setup: all packages present" >&2
  exit 0
fi

sudo=()
if [[ $(id -u) -ne 0 ]]; then
  command -v sudo >/dev/null || { echo "setup: need root or sudo to install: ${missing[*]}" >&2; exit 2; }
  sudo=(sudo)
fi
echo "setup: installing ${missing[*]}" >&2
export DEBIAN_FRONTEND=noninteractive
"${sudo[@]}" apt-get update -qq
"${sudo[@]}" apt-get install -y -qq --no-install-recommends "${missing[@]}" >/dev/null
