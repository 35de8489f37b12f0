#!/usr/bin/env bash
# Fills .carry/ (ignored by git, never committed) with what a bare GPU
# machine lacks to build and check fabricbench:
#   include/    CLI11, nlohmann json and fmt headers, from this machine's
#               Debian packages;
#   lib/        Debian's compiled fmt (libfmt.so.9: glibc 2.33 and GCC 11's
#               libstdc++ or newer), linked instead of header-only fmt, which
#               doubles every file's compile time;
#   nccl/include/ the NCCL headers of this machine's CUDA toolkit (nccl.h,
#               nccl_device.h, nccl_device/): nccl-tests from v2.17 includes
#               nccl_device.h with NCCL 2.28 and newer, which PyTorch's NCCL
#               wheel may not ship; gpu-check.sh uses them only when their
#               version is the wheel's;
#   googletest/ the googletest sources (Debian's googletest package);
#   nccl-tests/ NVIDIA's nccl-tests sources, copied from a checkout fetched
#               beside the project (built there with MPI=0);
#   nvbandwidth/ NVIDIA's nvbandwidth sources, likewise;
#   boost/      what nvbandwidth needs of Boost.program_options: the headers
#               its one Boost include reaches (found with the compiler's -M)
#               plus boost/config, and the static library built by Debian
#               (libboost-program-options-dev), since the GPU machine has no
#               Boost.
# Usage:
#   scripts/gpu-prepare.sh --nccl-tests DIR --nvbandwidth DIR [--boost PREFIX] [CARRY_DIR]
# or the same through FABRICBENCH_NCCL_TESTS_SRC, FABRICBENCH_NVBANDWIDTH_SRC
# and FABRICBENCH_BOOST_PREFIX. PREFIX holds include/boost/program_options.hpp
# and lib/ (or lib/<multiarch>/) libboost_program_options.a; default /usr.
# Then carry the checkout with .carry/ to the GPU machine and run
# scripts/gpu-check.sh.
set -euo pipefail
root="$(cd "$(dirname "${BASH_SOURCE[0]}")/.." && pwd)"
nccl_tests="${FABRICBENCH_NCCL_TESTS_SRC:-}"
nvbandwidth="${FABRICBENCH_NVBANDWIDTH_SRC:-}"
boost="${FABRICBENCH_BOOST_PREFIX:-/usr}"
carry="$root/.carry"
while (($#)); do
  case "$1" in
    --nccl-tests) nccl_tests="$2"; shift 2 ;;
    --nvbandwidth) nvbandwidth="$2"; shift 2 ;;
    --boost) boost="$2"; shift 2 ;;
    -h | --help) sed -n '2,33p' "$0"; exit 0 ;;
    -*) echo "gpu-prepare: unknown option $1" >&2; exit 2 ;;
    *) carry="$1"; shift ;;
  esac
done
include="${FABRICBENCH_PREPARE_INCLUDE:-/usr/include}"
fmt_lib="${FABRICBENCH_PREPARE_FMT_LIB:-$(find /usr/lib -maxdepth 2 -name 'libfmt.so.[0-9]*.*' 2>/dev/null | sort | head -1)}"
nccl_include="${FABRICBENCH_PREPARE_NCCL_INCLUDE:-/usr/local/cuda/include}"
gtest_src="${FABRICBENCH_PREPARE_GTEST:-/usr/src/googletest}"

fail() { echo "gpu-prepare: $*" >&2; exit 1; }
for need in "$include/CLI/CLI.hpp" "$include/nlohmann/json.hpp" "$include/fmt/format.h" "$gtest_src/CMakeLists.txt"; do
  [[ -e "$need" ]] || fail "missing $need (apt-get install libcli11-dev nlohmann-json3-dev libfmt-dev googletest)"
done
[[ -n "$nccl_tests" ]] || fail "no nccl-tests sources given (--nccl-tests DIR or FABRICBENCH_NCCL_TESTS_SRC)"
[[ -e "$nccl_tests/src/Makefile" && -e "$nccl_tests/src/sendrecv.cu" && -e "$nccl_tests/src/all_reduce.cu" ]] ||
  fail "$nccl_tests is not an nccl-tests checkout (no src/Makefile, src/sendrecv.cu, src/all_reduce.cu)"
[[ -n "$nvbandwidth" ]] || fail "no nvbandwidth sources given (--nvbandwidth DIR or FABRICBENCH_NVBANDWIDTH_SRC)"
[[ -e "$nvbandwidth/nvbandwidth.cpp" && -e "$nvbandwidth/CMakeLists.txt" ]] ||
  fail "$nvbandwidth is not an nvbandwidth checkout (no nvbandwidth.cpp, CMakeLists.txt)"
[[ -e "$boost/include/boost/program_options.hpp" ]] ||
  fail "no $boost/include/boost/program_options.hpp (apt-get install libboost-program-options-dev, or --boost PREFIX)"
boost_lib="$(find "$boost/lib" -maxdepth 2 -name libboost_program_options.a 2>/dev/null | head -1)"
[[ -n "$boost_lib" ]] || fail "no libboost_program_options.a under $boost/lib (apt-get install libboost-program-options-dev)"

[[ -n "$fmt_lib" && -e "$fmt_lib" ]] || fail "no compiled fmt (libfmt.so.N.M.P) under /usr/lib (apt-get install libfmt-dev)"
[[ -e "$nccl_include/nccl.h" && -e "$nccl_include/nccl_device.h" ]] ||
  fail "no nccl.h and nccl_device.h in $nccl_include (FABRICBENCH_PREPARE_NCCL_INCLUDE: the CUDA toolkit's NCCL)"

rm -rf "$carry"
mkdir -p "$carry/include" "$carry/lib" "$carry/nccl/include" "$carry/boost/include" "$carry/boost/lib"
cp -r "$include/CLI" "$include/nlohmann" "$include/fmt" "$carry/include/"
# Under its soname (libfmt.so.9), which the linked binary looks for, and the
# linker's name.
fmt_soname="$(basename "$fmt_lib" | sed -E 's/^(libfmt\.so\.[0-9]+).*/\1/')"
cp -L "$fmt_lib" "$carry/lib/$fmt_soname"
ln -s "$fmt_soname" "$carry/lib/libfmt.so"
cp -r "$nccl_include/nccl.h" "$nccl_include/nccl_device.h" "$carry/nccl/include/"
[[ -d "$nccl_include/nccl_device" ]] && cp -r "$nccl_include/nccl_device" "$carry/nccl/include/"
cp -r "$gtest_src" "$carry/googletest"
# Sources only: no .git, no build output.
copy_tree() {  # copy_tree FROM TO
  mkdir -p "$2"
  tar -C "$1" --exclude=./.git --exclude=./build -cf - . | tar -C "$2" -xf -
}
copy_tree "$nccl_tests" "$carry/nccl-tests"
copy_tree "$nvbandwidth" "$carry/nvbandwidth"
# Boost: every header the include reaches, with nvcc's and the host
# compiler's view alike, plus boost/config whole (it picks headers by
# compiler and standard library).
headers="$(mktemp)"
for defs in "" "-D__CUDACC__ -D__NVCC__"; do
  # shellcheck disable=SC2086,SC1003 # $defs is a list of flags; '\\' is a backslash
  echo '#include <boost/program_options.hpp>' |
    g++ -std=c++17 $defs -I"$boost/include" -M -x c++ - | tr -d '\\' | tr ' ' '\n' | grep '/boost/' >> "$headers"
done
(cd "$boost/include" && sort -u "$headers" | sed "s|^$boost/include/||" | grep '^boost/' |
  xargs cp --parents -t "$carry/boost/include")
rm -f "$headers"
cp -r "$boost/include/boost/config" "$carry/boost/include/boost/"
cp "$boost_lib" "$carry/boost/lib/"
{
  echo "Made by scripts/gpu-prepare.sh on $(date -u +%Y-%m-%dT%H:%MZ):"
  echo "  include/, lib/, googletest/: for building fabricbench with -DFABRICBENCH_CARRY_DIR=<this folder>"
  echo "  lib/$fmt_soname from $fmt_lib"
  echo "  nccl/include/ from $nccl_include (NCCL $(grep -m3 -E 'define NCCL_(MAJOR|MINOR|PATCH) ' "$nccl_include/nccl.h" | awk '{print $3}' | paste -sd.))"
  echo "  nccl-tests/ from $nccl_tests ($(git -C "$nccl_tests" describe --always --tags 2>/dev/null || echo 'no git'))"
  echo "  nvbandwidth/ from $nvbandwidth ($(git -C "$nvbandwidth" describe --always --tags 2>/dev/null || echo 'no git'))"
  echo "  boost/ from $boost ($(basename "$boost_lib"), $(grep -m1 'define BOOST_LIB_VERSION' "$boost/include/boost/version.hpp" | cut -d'"' -f2))"
} > "$carry/README"
echo "gpu-prepare: $(du -sh "$carry" | cut -f1) in $carry"
