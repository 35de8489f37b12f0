#!/usr/bin/env bash
# Fills .carry/ with what a bare GPU machine lacks to build and test
# fabricbench: the CLI11, nlohmann json and fmt headers (fmt is used
# header-only there) and the googletest sources, copied from this machine's
# Debian packages (libcli11-dev nlohmann-json3-dev libfmt-dev googletest).
# Carry the checkout with .carry/ to the GPU machine and run scripts/gpu-check.sh.
set -euo pipefail
root="$(cd "$(dirname "${BASH_SOURCE[0]}")/.." && pwd)"
carry="${1:-$root/.carry}"
include="${FABRICBENCH_PREPARE_INCLUDE:-/usr/include}"
gtest_src="${FABRICBENCH_PREPARE_GTEST:-/usr/src/googletest}"

for need in "$include/CLI/CLI.hpp" "$include/nlohmann/json.hpp" "$include/fmt/format.h" "$gtest_src/CMakeLists.txt"; do
  [[ -e "$need" ]] || { echo "gpu-prepare: missing $need (apt-get install libcli11-dev nlohmann-json3-dev libfmt-dev googletest)" >&2; exit 1; }
done
rm -rf "$carry"
mkdir -p "$carry/include"
cp -r "$include/CLI" "$include/nlohmann" "$include/fmt" "$carry/include/"
cp -r "$gtest_src" "$carry/googletest"
cat > "$carry/README" <<'TEXT'
Made by scripts/gpu-prepare.sh: header-only libraries and googletest sources
for building fabricbench with -DFABRICBENCH_CARRY_DIR=<this folder>.
TEXT
echo "gpu-prepare: $(du -sh "$carry" | cut -f1) in $carry"
