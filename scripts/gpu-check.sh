#!/usr/bin/env bash
# One GPU check for a bare machine with CUDA, cmake and ninja (no MPI, no
# packages, no network), given the .carry/ folder made by scripts/gpu-prepare.sh:
#   1. build with CUDA against the carried headers, without MPI;
#   2. run the host-logic tests and the GPU tests;
#   3. sweep with one rank (--gpus 1), with CUDA graphs, and with 2 and 4
#      processes on the one GPU (FABRICBENCH_BOOTSTRAP, distinct NCCL_HOSTID,
#      --allow-shared-gpu: a functional check, not a measurement);
#   4. print a summary table last.
# It never changes GPU clocks, power limits or modes. Usage:
#   scripts/gpu-check.sh [--build-only]
# NCCL is found through NCCL_ROOT, else the Python wheel (nvidia.nccl), else
# the CUDA toolkit.
set -uo pipefail
root="$(cd "$(dirname "${BASH_SOURCE[0]}")/.." && pwd)"
cd "$root"
build="${FABRICBENCH_GPU_BUILD:-$root/build/gpu-check}"
carry="${FABRICBENCH_CARRY_DIR:-$root/.carry}"
out="$build/gpu-check-results"
build_only=0
[[ "${1:-}" == "--build-only" ]] && build_only=1
declare -a names results
record() { names+=("$1"); results+=("$2"); echo "== $1: $2"; }
summary() {
  echo
  echo "fabricbench gpu-check summary"
  printf '%-44s %s\n' "step" "result"
  for i in "${!names[@]}"; do printf '%-44s %s\n' "${names[$i]}" "${results[$i]}"; done
}
trap summary EXIT

[[ -d "$carry/include" ]] || { record "carried folder" "FAIL (no $carry; run scripts/gpu-prepare.sh)"; exit 1; }

# NCCL: a wheel ships lib/libnccl.so.2 without the libnccl.so link the linker
# looks for, so a private folder with both names is made.
nccl_root="${NCCL_ROOT:-}"
if [[ -z "$nccl_root" ]]; then
  nccl_root="$(python3 -c 'import nvidia.nccl, os; print(os.path.dirname(nvidia.nccl.__file__))' 2>/dev/null || true)"
fi
if [[ -z "$nccl_root" ]]; then
  nccl_root="$(find / -path /proc -prune -o -name nccl.h -path '*nvidia/nccl/include/*' -print 2>/dev/null | head -1 | xargs -r dirname | xargs -r dirname)"
fi
cmake_nccl=()
if [[ -n "$nccl_root" && -e "$nccl_root/include/nccl.h" ]]; then
  lib="$(ls "$nccl_root"/lib/libnccl.so* 2>/dev/null | head -1)"
  mkdir -p "$build/nccl/lib"
  ln -sfn "$nccl_root/include" "$build/nccl/include"
  ln -sf "$lib" "$build/nccl/lib/libnccl.so"
  cmake_nccl=(-DNCCL_ROOT="$build/nccl")
  export LD_LIBRARY_PATH="$nccl_root/lib${LD_LIBRARY_PATH:+:$LD_LIBRARY_PATH}"
  record "NCCL" "$nccl_root"
else
  record "NCCL" "from the CUDA toolkit"
fi

jobs="$(nproc)"
if cmake -S . -B "$build" -G Ninja -DCMAKE_BUILD_TYPE=Release -DFABRICBENCH_CUDA=ON -DFABRICBENCH_MPI=OFF \
     -DFABRICBENCH_CARRY_DIR="$carry" -DCMAKE_CUDA_ARCHITECTURES="${FABRICBENCH_CUDA_ARCHS:-90-real}" \
     "${cmake_nccl[@]}" ${FABRICBENCH_CHECK_CMAKE_ARGS:-} > "$build.configure.log" 2>&1 &&
   timeout 300 cmake --build "$build" -j "$jobs" --target fabricbench fabricbench_gpu_tests fabricbench_gpu_logic_tests \
     > "$build.build.log" 2>&1; then
  record "build (CUDA on, MPI off, carried deps)" "ok"
else
  record "build (CUDA on, MPI off, carried deps)" "FAIL (see $build.configure.log / $build.build.log)"
  tail -30 "$build.build.log" "$build.configure.log" 2>/dev/null
  exit 1
fi
[[ $build_only == 1 ]] && exit 0

bin="$build/src/fabricbench"
mkdir -p "$out"
failed=0
step() {  # step NAME SECONDS COMMAND...
  local name="$1" limit="$2"; shift 2
  local log="$out/$(echo "$name" | tr -c 'a-zA-Z0-9' '_').log"
  if timeout "$limit" "$@" > "$log" 2>&1; then
    record "$name" "ok $(grep -m1 -o 'avg bus bandwidth : [0-9.]* GB/s' "$log" | tail -1)"
  else
    record "$name" "FAIL rc=$? (log $log)"; tail -20 "$log"; failed=1
  fi
}

step "host-logic tests" 120 "$build/tests/fabricbench_gpu_logic_tests"
step "GPU tests" 300 "$build/tests/fabricbench_gpu_tests"
step "topology (topo, with copy bandwidths)" 90 "$bin" topo --json "$out/topo.json"
step "sweep, 1 rank" 90 "$bin" sweep --gpus 1 --ops all --dtype float,bfloat16,fp8e4m3 -b 8 -e 256M -f 8 --json "$out/one.json"
step "sweep, 1 rank, CUDA graph" 90 "$bin" sweep --gpus 1 --graph --ops allreduce -b 8 -e 256M -f 8 --json "$out/graph.json"

processes() {  # processes N: N ranks on the one GPU, launcher-free
  local n="$1" dir pids=() rc=0
  dir="$(mktemp -d)"
  for ((r = 0; r < n; r++)); do
    FABRICBENCH_BOOTSTRAP="$dir" FABRICBENCH_RANK=$r FABRICBENCH_WORLD_SIZE=$n NCCL_HOSTID="gpu-check-$r" \
      "$bin" sweep --allow-shared-gpu --timeout 60 --ops all -b 8 -e 16M -f 16 --json "$out/procs$n.$r.json" &
    pids+=($!)
  done
  for p in "${pids[@]}"; do wait "$p" || rc=1; done
  rm -rf "$dir"
  return $rc
}
step "sweep, 2 processes on one GPU" 150 bash -c "$(declare -f processes); bin='$bin' out='$out'; processes 2"
step "sweep, 4 processes on one GPU" 150 bash -c "$(declare -f processes); bin='$bin' out='$out'; processes 4"
exit $failed
