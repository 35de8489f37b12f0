#!/usr/bin/env bash
# One GPU check in one go, for a bare machine with a GPU, CUDA (nvcc), cmake,
# ninja, make and Python with PyTorch (whose wheel brings NCCL); no MPI, no
# network, no packages. Needs the .carry/ folder that scripts/gpu-prepare.sh
# fills (header-only libraries, googletest, nccl-tests, nvbandwidth, Boost's
# program_options). Steps, each with its own time limit (their sum is at most
# 8 minutes, checked below):
#   1. build, side by side: fabricbench (CUDA on, MPI off), nccl-tests'
#      sendrecv_perf and all_reduce_perf (MPI=0, against the NCCL the machine
#      has) and nvbandwidth (Boost from the carried folder);
#   2. record nvidia-smi -q, nvidia-smi topo -m, driver, CUDA and NCCL versions;
#   3. the host-logic tests, then every GPU test case in its own process;
#   4. one run with NCCL_DEBUG=INFO, one under CUDA_LAUNCH_BLOCKING=1, and the
#      refusal of --gpus with --allow-shared-gpu;
#   5. fabricbench against nccl-tests: send/recv (one rank to itself) and
#      all-reduce at 1 MiB, 64 MiB and 1 GiB, the same iteration counts;
#   6. the topology probe's host<->device and local copies against
#      nvbandwidth's (or, when nvbandwidth could not be built, against the
#      same copies made through PyTorch, which the summary says);
#   7. `fabricbench run` end to end (probe, then sweep), then two processes
#      on the one GPU, each its own host to NCCL (NCCL_HOSTID), whose run
#      records what NCCL's connection log says it used;
#   8. the summary: every step, then the comparison table, last.
# Logs, JSONs and the summary are written to build/gpu-check/results (or
# FABRICBENCH_GPU_CHECK_WORK); when $OUT is set, two files go there at the
# end, whatever happened: summary.txt and gpu-check.tar.gz (everything else),
# since the device machine returns at most 8 files from $OUT. It never
# changes GPU clocks, power limits or modes.
# Usage:
#   scripts/gpu-check.sh [--build-only]
# NCCL is found through NCCL_ROOT, else PyTorch's wheel (nvidia.nccl), else
# the CUDA toolkit. nccl-tests (v2.17 and newer) includes nccl_device.h with
# NCCL 2.28 and newer: when the wheel has no such header, the NCCL headers
# carried by gpu-prepare.sh (this machine's CUDA toolkit's) are used if they
# are the wheel's version, which the summary says.
# Every step is a command `timeout -k` can run: shell functions are exported
# (export -f) with the variables they read and run through bash -c.
# FABRICBENCH_GPU_CHECK_STANDIN=DIR (tests/system/test_gpu_check.py) skips the
# builds and takes every binary from DIR: a dry run of the step wiring.
# shellcheck disable=SC2317
set -uo pipefail
root="$(cd "$(dirname "${BASH_SOURCE[0]}")/.." && pwd)"
cd "$root" || exit 1
build="${FABRICBENCH_GPU_BUILD:-$root/build/gpu-check}"
carry="${FABRICBENCH_CARRY_DIR:-$root/.carry}"
standin="${FABRICBENCH_GPU_CHECK_STANDIN:-}"
# Everything is written to $out (the work folder); $OUT gets the summary and
# one archive of the rest at the end.
out="${FABRICBENCH_GPU_CHECK_WORK:-$build/results}"
deliver="${OUT:-}"
build_only=0
[[ "${1:-}" == "--build-only" ]] && build_only=1
rm -rf "$out"
mkdir -p "$build" "$out"
export out

# Step limits in seconds. The whole script must fit one 10-minute call with
# margin: their sum is at most 480. FABRICBENCH_GPU_CHECK_BUILD_S lengthens
# the build for --build-only on a small machine.
# The GPU tests are 14 processes (each starts CUDA and NCCL, a few seconds
# on a fresh machine), so they get 120 s; the build's 210 s is about 2.5
# times what the three targets take on 16 cores with the compiled fmt
# (measured with -j2 here; docs/guides/nccl.md, Checking on a GPU machine).
limit_build=${FABRICBENCH_GPU_CHECK_BUILD_S:-210} limit_info=10 limit_logic=15 limit_gpu_tests=105 limit_debug=15
limit_blocking=15 limit_refusal=5 limit_nccl_tests=30 limit_fabricbench=20 limit_copies=15 limit_topo=10 limit_run=15
limit_nccl_used=15
total=$((limit_build + limit_info + limit_logic + limit_gpu_tests + limit_debug + limit_blocking + limit_refusal +
  limit_nccl_tests + limit_fabricbench + limit_copies + limit_topo + limit_run + limit_nccl_used))
if ((total > 480 && build_only == 0)); then
  echo "gpu-check: the step limits add up to ${total} s, over 480 s" >&2
  exit 2
fi

declare -a names results
record() { names+=("$1"); results+=("$2"); echo "== $1: $2"; }
summary() {
  {
    echo
    echo "fabricbench gpu-check summary ($(date -u +%Y-%m-%dT%H:%M:%SZ), logs in ${deliver:+gpu-check.tar.gz, }$out)"
    printf '%-62s  %s\n' "step" "result"
    for i in "${!names[@]}"; do printf '%-62s  %s\n' "${names[$i]}" "${results[$i]}"; done
    if [[ -s "$out/nccl-used.txt" ]]; then
      echo
      echo "what NCCL used (two processes on one GPU, NCCL_HOSTID):"
      grep -E '^(rank|note|verdict|no |NCCL)' "$out/nccl-used.txt" | head -8
    fi
    if [[ -s "$out/compare.txt" ]]; then
      echo
      cat "$out/compare.txt"
    fi
  } | tee "$out/summary.txt"
  # Two files in $OUT: the summary, and one archive of every log and result.
  if [[ -n "$deliver" ]]; then
    mkdir -p "$deliver"
    cp "$out/summary.txt" "$deliver/summary.txt"
    tar -C "$out" -czf "$deliver/gpu-check.tar.gz" . 2>/dev/null || echo "gpu-check: could not write $deliver/gpu-check.tar.gz"
  fi
}
trap summary EXIT

# A command, or a shell function (exported, run through bash -c, since
# timeout runs programs only), with a limit; -k: a child that ignores SIGTERM
# is killed 10 s later.
run_limited() {  # run_limited SECONDS COMMAND...
  local limit="$1"
  shift
  if declare -F "$1" > /dev/null; then
    export -f "$1"
    timeout -k 10 "$limit" bash -c '"$@"' step "$@"
  else
    timeout -k 10 "$limit" "$@"
  fi
}

[[ -n "$standin" || -d "$carry/include" ]] ||
  { record "carried folder" "FAIL (no $carry/include; run scripts/gpu-prepare.sh)"; exit 1; }

# CUDA: nvcc on the PATH, else the usual place.
nvcc="$(command -v nvcc || echo /usr/local/cuda/bin/nvcc)"
[[ -x "$nvcc" ]] || { record "CUDA" "FAIL (no nvcc)"; exit 1; }
cuda_home="$(dirname "$(dirname "$(readlink -f "$nvcc")")")"
record "CUDA" "$cuda_home ($("$nvcc" --version | grep -o 'release [0-9.]*'))"

# NCCL: a wheel ships lib/libnccl.so.2 without the libnccl.so link the linker
# looks for, so a private folder with both names is made; it is NCCL_HOME for
# nccl-tests too.
nccl_root="${NCCL_ROOT:-}"
if [[ -z "$nccl_root" ]]; then
  nccl_root="$(python3 - 2>/dev/null <<'PY'
import importlib.util
spec = importlib.util.find_spec("nvidia.nccl")
if spec is not None and spec.submodule_search_locations:
    print(list(spec.submodule_search_locations)[0])
PY
)"
fi
nccl_home=""
cmake_nccl=()
nccl_version_of() { grep -m3 -E 'define NCCL_(MAJOR|MINOR|PATCH) ' "$1" | awk '{print $3}' | paste -sd.; }
if [[ -n "$nccl_root" && -e "$nccl_root/include/nccl.h" ]]; then
  lib="$(find "$nccl_root/lib" -maxdepth 1 -name 'libnccl.so*' | sort | head -1)"
  nccl_home="$build/nccl"
  rm -rf "$nccl_home"
  mkdir -p "$nccl_home/lib"
  wheel_version="$(nccl_version_of "$nccl_root/include/nccl.h")"
  headers="$nccl_root/include" headers_note=""
  if [[ ! -e "$nccl_root/include/nccl_device.h" ]]; then
    # nccl-tests (v2.17+) includes nccl_device.h for NCCL 2.28+; the carried
    # headers stand in only when they are the same version as the library.
    if [[ -e "$carry/nccl/include/nccl_device.h" &&
      "$(nccl_version_of "$carry/nccl/include/nccl.h")" == "$wheel_version" ]]; then
      headers="$carry/nccl/include" headers_note=", headers carried (the wheel has no nccl_device.h)"
    else
      headers_note=", no nccl_device.h (nccl-tests v2.17+ needs it with NCCL 2.28+; carry NCCL $wheel_version's headers)"
    fi
  fi
  ln -sfn "$headers" "$nccl_home/include"
  ln -sf "$lib" "$nccl_home/lib/libnccl.so"
  ln -sf "$lib" "$nccl_home/lib/libnccl.so.2"
  cmake_nccl=(-DNCCL_ROOT="$nccl_home")
  export LD_LIBRARY_PATH="$nccl_root/lib${LD_LIBRARY_PATH:+:$LD_LIBRARY_PATH}"
  record "NCCL" "$nccl_root ($wheel_version$headers_note)"
elif [[ -e "$cuda_home/include/nccl.h" ]]; then
  nccl_home="$cuda_home"
  record "NCCL" "from the CUDA toolkit ($cuda_home)"
else
  record "NCCL" "FAIL (no nccl.h: set NCCL_ROOT, or install PyTorch's nvidia-nccl wheel)"
  exit 1
fi

# ---- 1. builds, side by side ----------------------------------------------
jobs="$(nproc)"
arch="${FABRICBENCH_CUDA_ARCHS:-90}"
build_fabricbench() {
  # shellcheck disable=SC2086 # extra arguments are a list
  cmake -S . -B "$build/fabricbench" -G Ninja -DCMAKE_BUILD_TYPE=Release -DFABRICBENCH_CUDA=ON -DFABRICBENCH_MPI=OFF \
    -DFABRICBENCH_CARRY_DIR="$carry" -DCMAKE_CUDA_ARCHITECTURES="${arch}-real" -DCMAKE_CUDA_COMPILER="$nvcc" \
    $cmake_nccl_words ${FABRICBENCH_CHECK_CMAKE_ARGS:-} &&
    cmake --build "$build/fabricbench" -j "$jobs" --target fabricbench fabricbench_gpu_tests fabricbench_gpu_logic_tests
}
build_nccl_tests() {
  [[ -e "$carry/nccl-tests/src/Makefile" ]] || { echo "no nccl-tests in $carry (scripts/gpu-prepare.sh)"; return 1; }
  mkdir -p "$build/nccl-tests-src"
  cp -r "$carry/nccl-tests/." "$build/nccl-tests-src/"
  make -C "$build/nccl-tests-src/src" -j "$jobs" MPI=0 CUDA_HOME="$cuda_home" NCCL_HOME="$nccl_home" \
    NVCC_GENCODE="-gencode=arch=compute_${arch},code=sm_${arch}" BUILDDIR="$build/nccl-tests" \
    "$build/nccl-tests/sendrecv_perf" "$build/nccl-tests/all_reduce_perf"
}
build_nvbandwidth() {
  local src="$carry/nvbandwidth" obj="$build/nvbandwidth" boost="$carry/boost"
  [[ -e "$src/nvbandwidth.cpp" ]] || { echo "no nvbandwidth in $carry (scripts/gpu-prepare.sh)"; return 1; }
  [[ -e "$boost/include/boost/program_options.hpp" ]] || { echo "no Boost headers in $boost"; return 1; }
  [[ -e "$cuda_home/include/nvml.h" || -e "$cuda_home/targets/x86_64-linux/include/nvml.h" ]] ||
    { echo "no nvml.h in the CUDA toolkit (the NVML development files are not installed)"; return 1; }
  mkdir -p "$obj"
  # nvbandwidth's own CMake wants an installed Boost; its sources are built
  # directly, as its CMakeLists.txt lists them.
  local sources=(testcase.cpp testcases_ce.cpp testcases_sm.cpp kernels.cu memcpy.cpp nvbandwidth.cpp
    multinode_memcpy.cpp multinode_testcases.cpp output.cpp json_output.cpp json/jsoncpp.cpp)
  local objects=() pids=() s o rc=0
  for s in "${sources[@]}"; do
    o="$obj/$(echo "$s" | tr '/' '_').o"
    objects+=("$o")
    "$nvcc" -std=c++17 -O3 -gencode "arch=compute_${arch},code=sm_${arch}" -I"$src" -I"$boost/include" \
      -DGIT_VERSION="\"carried\"" -Xcompiler -w -c "$src/$s" -o "$o" &
    pids+=($!)
  done
  for s in "${pids[@]}"; do wait "$s" || rc=1; done
  ((rc == 0)) || return 1
  "$nvcc" -o "$obj/nvbandwidth" "${objects[@]}" "$boost/lib/libboost_program_options.a" \
    -L"$cuda_home/lib64/stubs" -L"$cuda_home/targets/x86_64-linux/lib/stubs" -lnvidia-ml -lcuda
}
if [[ -n "$standin" ]]; then
  # A dry run: nothing is built, every binary comes from the stand-in folder.
  build_fabricbench() { echo "stand-in: no build"; }
  build_nccl_tests() { echo "stand-in: no build"; }
  build_nvbandwidth() { echo "stand-in: no build"; }
fi
cmake_nccl_words="${cmake_nccl[*]}"  # one -DNCCL_ROOT=... word at most: arrays do not export
FABRICBENCH_CHECK_CMAKE_ARGS="${FABRICBENCH_CHECK_CMAKE_ARGS:-}"
export build carry arch jobs nvcc cuda_home nccl_home cmake_nccl_words FABRICBENCH_CHECK_CMAKE_ARGS
run_limited "$limit_build" build_fabricbench > "$out/build_fabricbench.log" 2>&1 &
pid_fb=$!
run_limited "$limit_build" build_nccl_tests > "$out/build_nccl_tests.log" 2>&1 &
pid_nt=$!
run_limited "$limit_build" build_nvbandwidth > "$out/build_nvbandwidth.log" 2>&1 &
pid_nvb=$!
built() {  # built NAME PID LOG
  if wait "$2"; then
    record "build: $1" "ok"
    return 0
  fi
  record "build: $1" "FAIL (log $3)"
  tail -15 "$3"
  return 1
}
built "fabricbench (CUDA on, MPI off)" "$pid_fb" "$out/build_fabricbench.log" || exit 1
have_nccl_tests=0
built "nccl-tests (MPI=0)" "$pid_nt" "$out/build_nccl_tests.log" && have_nccl_tests=1
have_nvbandwidth=0
built "nvbandwidth" "$pid_nvb" "$out/build_nvbandwidth.log" && have_nvbandwidth=1
((build_only == 1)) && exit 0

bin="${standin:-$build/fabricbench/src}/fabricbench"
tests="${standin:-$build/fabricbench/tests}"
nt="${standin:-$build/nccl-tests}"
nvbandwidth_bin="${standin:-$build/nvbandwidth}/nvbandwidth"
export bin tests nt
failed=0
log_of() { echo "$out/$(echo "$1" | tr -c 'a-zA-Z0-9\n' '_').log"; }
step() {  # step NAME SECONDS COMMAND...: the output goes to $(log_of NAME)
  local name="$1" limit="$2" log rc
  shift 2
  log="$(log_of "$name")"
  run_limited "$limit" "$@" > "$log" 2>&1
  rc=$?
  if ((rc == 0)); then
    record "$name" "ok"
  else
    record "$name" "FAIL rc=$rc$( ((rc == 124 || rc == 137)) && echo " (over ${limit} s)") (log $(basename "$log"))"
    tail -15 "$log"
    failed=1
  fi
  return $rc
}

# ---- 2. what the machine is ----------------------------------------------
machine_info() {
  nvidia-smi -q > "$out/nvidia-smi-q.txt" 2>&1
  nvidia-smi topo -m > "$out/nvidia-smi-topo.txt" 2>&1
  {
    nvidia-smi --query-gpu=index,name,pci.bus_id,driver_version,memory.total --format=csv
    "$nvcc" --version | tail -2
    python3 -c 'import torch; print("torch", torch.__version__, "CUDA", torch.version.cuda, "NCCL",
      ".".join(map(str, torch.cuda.nccl.version())))'
    "$bin" version
  } > "$out/versions.txt" 2>&1
  cat "$out/versions.txt"
}
step "machine: nvidia-smi, versions" "$limit_info" machine_info

# ---- 3. tests, each GPU case in its own process ----------------------------
step "host-logic tests" "$limit_logic" "$tests/fabricbench_gpu_logic_tests" --gtest_brief=1
gpu_cases="$("$tests/fabricbench_gpu_tests" --gtest_list_tests 2>/dev/null |
  awk '/^[^ ]/ {suite=$1} /^  / {print suite $1}')"
gpu_deadline=$((SECONDS + limit_gpu_tests))
case_count=0
for case in $gpu_cases; do
  left=$((gpu_deadline - SECONDS))
  if ((left < 5)); then
    record "GPU test $case" "NOT RUN (the GPU tests' ${limit_gpu_tests} s are spent)"
    failed=1
    continue
  fi
  step "GPU test $case" "$left" "$tests/fabricbench_gpu_tests" --gtest_filter="$case"
  case_count=$((case_count + 1))
done
((case_count > 0)) || { record "GPU tests" "FAIL (none listed)"; failed=1; }

# ---- 4. debug log, launch blocking, the shared-GPU refusal -------------------
step "NCCL_DEBUG=INFO run (log kept)" "$limit_debug" env NCCL_DEBUG=INFO NCCL_DEBUG_SUBSYS=INIT,ENV,TUNING \
  "$bin" sweep --gpus 1 --ops allreduce,sendrecv --sizes 1M --iters 5 --warmup 1
step "CUDA_LAUNCH_BLOCKING=1 sweep (no hold)" "$limit_blocking" env CUDA_LAUNCH_BLOCKING=1 \
  "$bin" sweep --gpus 1 --ops allreduce,sendrecv --sizes 4K,1M --iters 20 --warmup 2 --timeout 5
refusal() {
  local err rc
  err="$("$bin" sweep --gpus 1 --allow-shared-gpu --sizes 1K 2>&1 >/dev/null)"
  rc=$?
  echo "exit $rc: $err"
  [[ $rc == 2 && $(printf '%s\n' "$err" | wc -l) == 1 && "$err" == "fabricbench: error: --allow-shared-gpu"* ]]
}
step "--gpus 1 --allow-shared-gpu: exit 2, one line" "$limit_refusal" refusal

# ---- 5. fabricbench against nccl-tests -------------------------------------
iters=50
warmup=10
sizes=(1M 64M 1G)
if ((have_nccl_tests == 1)); then
  nccl_tests_runs() {
    local op size
    for op in sendrecv all_reduce; do
      for size in $sizes_list; do
        echo "## $op $size"
        "$nt/${op}_perf" -b "$size" -e "$size" -g 1 -n "$iters" -w "$warmup" -c 0 || return 1
      done
    done
  }
  name="nccl-tests: sendrecv_perf, all_reduce_perf"
  sizes_list="${sizes[*]}"
  export iters warmup sizes_list
  step "$name" "$limit_nccl_tests" nccl_tests_runs
  cp "$(log_of "$name")" "$out/nccl-tests.txt"
else
  record "nccl-tests: sendrecv_perf, all_reduce_perf" "NOT RUN (nccl-tests did not build)"
  failed=1
fi
step "fabricbench: sendrecv, allreduce (same sizes, iterations)" "$limit_fabricbench" "$bin" sweep --gpus 1 \
  --ops sendrecv,allreduce --sizes "$(IFS=,; echo "${sizes[*]}")" --iters "$iters" --warmup "$warmup" --inplace both \
  --json "$out/fabricbench-compare.json" -q

# ---- 6. copies: the probe against nvbandwidth --------------------------------
# A build without MPI has no launcher: one process meets itself in a folder.
step "topology probe (copy bandwidths)" "$limit_topo" env FABRICBENCH_BOOTSTRAP="$(mktemp -d)" FABRICBENCH_RANK=0 \
  FABRICBENCH_WORLD_SIZE=1 "$bin" topo --json "$out/topo.json"
if ((have_nvbandwidth == 1)); then
  name="nvbandwidth: H2D, D2H, device-local (64 MiB)"
  step "$name" "$limit_copies" "$nvbandwidth_bin" \
    -t host_to_device_memcpy_ce device_to_host_memcpy_ce device_local_copy -b 64 -i 5
  cp "$(log_of "$name")" "$out/copies.txt"
  copies_source="nvbandwidth"
else
  # The documented alternative: the probe's own method (cudaMemcpyAsync of
  # 64 MiB, pinned host memory, best of 5 after 2 warm-ups, CUDA events),
  # made through PyTorch's allocator and copy engine path.
  torch_copies() {
    python3 - <<'PY'
import torch
n = 64 << 20
host = torch.empty(n, dtype=torch.uint8, pin_memory=True)
a = torch.empty(n, dtype=torch.uint8, device="cuda:0")
b = torch.empty_like(a)
def best(copy):
    times = []
    for i in range(7):
        start, stop = torch.cuda.Event(enable_timing=True), torch.cuda.Event(enable_timing=True)
        start.record(); copy(); stop.record(); stop.synchronize()
        if i >= 2:
            times.append(start.elapsed_time(stop))
    return n / (min(times) * 1e-3) / 1e9
print("SUM host_to_device_memcpy_ce", best(lambda: a.copy_(host, non_blocking=True)))
print("SUM device_to_host_memcpy_ce", best(lambda: host.copy_(a, non_blocking=True)))
print("SUM device_local_copy", best(lambda: b.copy_(a, non_blocking=True)))
PY
  }
  name="copies through PyTorch (nvbandwidth did not build)"
  step "$name" "$limit_copies" torch_copies
  cp "$(log_of "$name")" "$out/copies.txt"
  copies_source="PyTorch copies (nvbandwidth did not build: see build_nvbandwidth.log)"
fi

# ---- 7. the whole run, end to end ----------------------------------------------
step "fabricbench run --profile smoke --gpus 1 (probe, then sweep)" "$limit_run" "$bin" run --profile smoke --gpus 1 \
  --json "$out/run.json"

# What NCCL's connection log says it used: two processes meet in a folder and
# share the GPU, each its own host to NCCL (NCCL_HOSTID), so NCCL connects
# them through its network transport (a functional check, not a figure).
nccl_used() {
  local dir pids=() rc=0 r
  dir="$(mktemp -d)"
  for r in 0 1; do
    env FABRICBENCH_BOOTSTRAP="$dir" FABRICBENCH_RANK="$r" FABRICBENCH_WORLD_SIZE=2 \
      NCCL_HOSTID="fabricbench-check-$r" "$bin" sweep --allow-shared-gpu --ops allreduce,sendrecv --sizes 1M \
      --iters 5 --warmup 2 -q --json "$out/nccl-used.json" > "$out/nccl-used-rank$r.txt" 2>&1 &
    pids+=($!)
  done
  for r in "${pids[@]}"; do wait "$r" || rc=1; done
  python3 - "$out/nccl-used.json" <<'PY' || rc=1
import json, sys
doc = json.load(open(sys.argv[1]))
usage = doc.get("nccl")
if not usage or not usage["ranks"]:
    sys.exit("no nccl section in the result: the connection log was not captured")
for r in usage["ranks"]:
    paths = ", ".join(f"{p['between']} {p['via']} ({p['connections']})" for p in r["paths"]) or "none"
    print(f"rank {r['rank']}: NCCL {r['version']}, network {r['network']}, NICs {' '.join(r['nics']) or '-'}, "
          f"GDR {r['gdr']}, channels {r['coll_channels']}; {paths}")
for note in usage["notes"]:
    print("note:", note)
for v in doc.get("verdicts", []):
    if v["kind"] == "nccl":
        print(f"verdict {v['level']} {v.get('cause_kind')}: {v['reason']}")
if not any(r["paths"] for r in usage["ranks"]):
    sys.exit("NCCL's log was captured but names no connection")
PY
  return $rc
}
step "NCCL's connection log: 2 processes on one GPU (NCCL_HOSTID)" "$limit_nccl_used" nccl_used
cp "$(log_of "NCCL's connection log: 2 processes on one GPU (NCCL_HOSTID)")" "$out/nccl-used.txt" 2> /dev/null

# ---- 8. the comparison table -------------------------------------------------------
python3 - "$out" "$iters" "$copies_source" > "$out/compare.txt" 2> "$out/compare.err" <<'PY'
import json, os, re, sys

out, iters, copies_source = sys.argv[1], sys.argv[2], sys.argv[3]
rows = []
unit = {"1M": 1 << 20, "64M": 64 << 20, "1G": 1 << 30}

# nccl-tests: "## op size" headers, then data lines of 13 fields:
# size count type redop root | time algbw busbw #wrong (out of place) | the same in place.
nccl = {}
path = os.path.join(out, "nccl-tests.txt")
if os.path.exists(path):
    op = None
    for line in open(path):
        m = re.match(r"## (\w+) (\S+)", line)
        if m:
            op = "allreduce" if m.group(1) == "all_reduce" else m.group(1)
            continue
        f = line.split()
        if op and len(f) >= 13 and f[0].isdigit():
            try:
                nccl[(op, int(f[0]), "out_of_place")] = (float(f[5]), float(f[6]), float(f[7]))
                nccl[(op, int(f[0]), "in_place")] = (float(f[9]), float(f[10]), float(f[11]))
            except ValueError:
                pass

fb = {}
path = os.path.join(out, "fabricbench-compare.json")
if os.path.exists(path):
    try:
        records = json.load(open(path)).get("records", [])
    except (OSError, ValueError) as e:
        print(f"fabricbench-compare.json unreadable: {e}")
        records = []
    for r in records:
        if isinstance(r, dict) and r.get("time_us") and all(k in r for k in ("op", "bytes", "placement")):
            fb.setdefault((r["op"], r["bytes"], r["placement"]),
                          (r["time_us"], r.get("algbw_gbs", 0.0), r.get("busbw_gbs", 0.0)))

print(f"fabricbench against nccl-tests, one rank on GPU 0, {iters} timed iterations each")
print(f"{'op':<10} {'size':>5} {'placement':<12} {'fb us':>9} {'nt us':>9} {'fb algbw':>9} {'nt algbw':>9} "
      f"{'fb/nt':>6}  note")


def not_comparable(op, size, placement):
    """Why a row says nothing about fabricbench on one GPU, or None."""
    if placement == "in_place":
        return "not comparable on one GPU: in place, one rank's op moves nothing (NCCL returns at once)"
    if size == "1M":
        return "not comparable on one GPU: at 1 MiB nccl-tests' host enqueue bounds its time"
    return None


for op in ("sendrecv", "allreduce"):
    for size in ("1M", "64M", "1G"):
        for placement in ("out_of_place", "in_place"):
            key = (op, unit[size], placement)
            a, b = fb.get(key), nccl.get(key)
            why = not_comparable(op, size, placement)
            if a is None or b is None:
                missing = " and ".join(n for n, v in (("fabricbench", a), ("nccl-tests", b)) if v is None)
                print(f"{op:<10} {size:>5} {placement:<12} {'-':>9} {'-':>9} {'-':>9} {'-':>9} {'-':>6}  "
                      f"no result from {missing}")
                continue
            if why:
                print(f"{op:<10} {size:>5} {placement:<12} {a[0]:>9.2f} {b[0]:>9.2f} {a[1]:>9.2f} {b[1]:>9.2f} "
                      f"{'-':>6}  {why}")
                continue
            ratio = f"{a[0] / b[0]:.3f}" if b[0] > 0 else "-"
            note = "time ratio (1 rank: a copy, busbw 0 in both)" if op == "allreduce" else "time ratio"
            print(f"{op:<10} {size:>5} {placement:<12} {a[0]:>9.2f} {b[0]:>9.2f} {a[1]:>9.2f} {b[1]:>9.2f} "
                  f"{ratio:>6}  {note}")


def find_gpus(node):
    if isinstance(node, dict):
        if isinstance(node.get("gpus"), list) and node["gpus"] and "h2d_gbs" in node["gpus"][0]:
            return node["gpus"]
        for v in node.values():
            g = find_gpus(v)
            if g:
                return g
    elif isinstance(node, list):
        for v in node:
            g = find_gpus(v)
            if g:
                return g
    return None

# The probe's figures: `topo`, else the end-to-end run's topology section.
probe = {}
for name in ("topo.json", "run.json"):
    path = os.path.join(out, name)
    try:
        gpus = find_gpus(json.load(open(path))) if os.path.exists(path) else None
    except (OSError, ValueError):
        gpus = None
    if gpus:
        probe = {"h2d": gpus[0].get("h2d_gbs"), "d2h": gpus[0].get("d2h_gbs"), "local": gpus[0].get("local_copy_gbs")}
        break

# nvbandwidth: the matrix row of GPU 0 (label 0) precedes its "SUM key value" line.
ref = {}
keys = {"host_to_device_memcpy_ce": "h2d", "device_to_host_memcpy_ce": "d2h", "device_local_copy": "local"}
path = os.path.join(out, "copies.txt")
if os.path.exists(path):
    first = None
    for line in open(path):
        f = line.split()
        if len(f) >= 2 and f[0] == "0":
            try:
                first = float(f[1])
            except ValueError:
                first = None
        if len(f) == 3 and f[0] == "SUM" and f[1] in keys:
            ref[keys[f[1]]] = first if first is not None else float(f[2])
            first = None

print()
print(f"topology probe against {copies_source}, GPU 0, 64 MiB copies (GB/s)")
print(f"{'copy':<14} {'probe':>9} {'reference':>10} {'probe/ref':>10}")
for k, label in (("h2d", "host->device"), ("d2h", "device->host"), ("local", "device-local")):
    a, b = probe.get(k), ref.get(k)
    if a is None or b is None or not b:
        print(f"{label:<14} {a if a is not None else '-':>9} {b if b is not None else '-':>10} {'-':>10}")
    else:
        print(f"{label:<14} {a:>9.1f} {b:>10.1f} {a / b:>10.3f}")
print("Both count each byte copied once, and both queue their copies behind a spin kernel and report the median "
      "of several samples.")
PY
exit $failed
