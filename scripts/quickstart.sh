#!/usr/bin/env bash
# Installs what is needed, builds fabricbench and runs the main job on this
# machine: with the NCCL transport when a GPU is visible, otherwise with the MPI
# host transport on a few local ranks. Extra arguments go to `fabricbench run`.
set -euo pipefail
cd "$(dirname "$0")/.."

scripts/setup.sh
# Only what the run needs: the fabricbench target, no tests, every core.
cmake --preset dev -DFABRICBENCH_TESTS=OFF >/dev/null
cmake --build --preset dev --target fabricbench -j "$(nproc)"

bin=build/dev/src/fabricbench
mpirun_args=(--oversubscribe --bind-to none)
[[ $(id -u) -eq 0 ]] && mpirun_args+=(--allow-run-as-root)

gpus=0
if command -v nvidia-smi >/dev/null 2>&1; then
  gpus=$(nvidia-smi -L 2>/dev/null | grep -c '^GPU' || true)
fi
if ((gpus > 0)); then
  ranks=$gpus
else
  ranks=4
fi
echo "quickstart: ${ranks} local ranks ($([[ $gpus -gt 0 ]] && echo "one per GPU" || echo "no GPU: MPI host transport"))" >&2
exec mpirun "${mpirun_args[@]}" -np "$ranks" "$bin" run --json fabricbench-result.json --csv fabricbench-result.csv "$@"
