#!/usr/bin/env bash
# Installs the Debian packages fabricbench needs to build and test.
# Idempotent: installs only what is missing. Needs root (or sudo).
#
#   scripts/setup.sh          what building and running needs (the quick start)
#   scripts/setup.sh --test   also what only the test suite uses
set -euo pipefail

packages=(
  build-essential cmake ninja-build git pkg-config
  openmpi-bin libopenmpi-dev
  libcli11-dev libfmt-dev nlohmann-json3-dev libgtest-dev
  python3 python3-jsonschema
  iproute2 util-linux procps
)
# Test-only: a single-node Slurm cluster (tests/system/test_slurm.py), the
# Debian package's build, install and man page (tests/system/test_package.py);
# clang-format for the format check, clang-tidy for scripts/clang-tidy.sh;
# headless Chromium to render the HTML report (tests/e2e/test_report_e2e.py);
# clang, its sanitizer and libFuzzer runtimes and llvm-symbolizer for the asan
# preset and the fuzz targets; strace to slow a rank's fsync
# (tests/e2e/test_safety_e2e.py); PyYAML to read the Kubernetes example
# (tests/system/test_mpijob.py); nftables to make a test-bed host lose
# packets (tests/multihost/test_multihost.py).
test_packages=(
  chromium
  clang-format-14 clang-tidy-14
  clang libclang-rt-14-dev llvm
  slurmctld slurmd slurm-client munge
  dpkg-dev file man-db binutils
  strace
  python3-yaml
  nftables
)

case "${1:-}" in
  --test) packages+=("${test_packages[@]}") ;;
  "") ;;
  *) echo "usage: scripts/setup.sh [--test]" >&2; exit 2 ;;
esac

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
