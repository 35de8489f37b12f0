#!/usr/bin/env bash
# fidelity.sh: does fabricbench time MPI_Allreduce as a bare MPI loop does?
#
# Runs bench/raw_allreduce (a plain MPI loop) and fabricbench's mpi transport
# side by side on 2 ranks, at 8 B, 64 KiB and 4 MiB, with the same fixed
# warm-up and iteration counts for both, interleaved over several rounds, and
# compares the medians. PASS when fabricbench's median is within TOLERANCE
# (5 %) of the raw loop's at every size; exits 1 on any FAIL, 2 on a usage or
# run error. Builds nothing: point it at a build folder that has both binaries.
#
#   bench/fidelity.sh [BUILD_DIR]          (default: $BUILD_DIR, else ./build)
#
# Knobs (environment):
#   ROUNDS=15         rounds; each runs both tools once per size
#   SIZES="8:20000:1000 64K:2000:100 4M:200:10"
#                     size:iterations:warm-up triples (bytes, K/M suffixes)
#   TOLERANCE=0.05    allowed |fabricbench/raw - 1|
#   NP=2              ranks
#   BIND=core         mpirun --bind-to value (core, none, ...)
#   MPIRUN_ARGS=...   extra mpirun arguments
#   KEEP=DIR          keep the per-run JSON and samples in DIR
set -euo pipefail

BUILD_DIR=${1:-${BUILD_DIR:-./build}}
ROUNDS=${ROUNDS:-15}
SIZES=${SIZES:-"8:20000:1000 64K:2000:100 4M:200:10"}
TOLERANCE=${TOLERANCE:-0.05}
NP=${NP:-2}
BIND=${BIND:-core}
read -r -a EXTRA <<<"${MPIRUN_ARGS:-}"

RAW=$BUILD_DIR/bench/raw_allreduce
FB=$BUILD_DIR/src/fabricbench
for exe in "$RAW" "$FB"; do
  if [[ ! -x $exe ]]; then
    echo "fidelity.sh: $exe not found or not executable (build first; was MPI found?)" >&2
    exit 2
  fi
done
command -v mpirun >/dev/null || { echo "fidelity.sh: mpirun not on PATH" >&2; exit 2; }
command -v python3 >/dev/null || { echo "fidelity.sh: python3 not on PATH" >&2; exit 2; }

if [[ -n ${KEEP:-} ]]; then
  WORK=$KEEP
  mkdir -p "$WORK"
else
  WORK=$(mktemp -d)
  trap 'rm -rf "$WORK"' EXIT
fi
SAMPLES=$WORK/samples.txt # lines: tool size_bytes round time_us
: >"$SAMPLES"

MPIRUN=(mpirun --allow-run-as-root --oversubscribe -np "$NP" --map-by core --bind-to "$BIND" "${EXTRA[@]}")

to_bytes() {
  python3 -c '
import sys
t = sys.argv[1].upper().rstrip("B")
scale = {"K": 1 << 10, "M": 1 << 20, "G": 1 << 30}.get(t[-1:], 1)
print(int(t[:-1] if scale != 1 else t) * scale)' "$1"
}

run_raw() { # round bytes iters warmup
  local out
  out=$("${MPIRUN[@]}" "$RAW" -n "$3" -w "$4" -r 1 "$2") || { echo "fidelity.sh: raw_allreduce failed" >&2; exit 2; }
  read -r bytes time_us <<<"$out"
  [[ $bytes == "$2" ]] || { echo "fidelity.sh: raw_allreduce printed '$out'" >&2; exit 2; }
  echo "raw $2 $1 $time_us" >>"$SAMPLES"
}

run_fb() { # round bytes iters warmup
  local json=$WORK/fb_r$1_$2.json time_us
  "${MPIRUN[@]}" "$FB" sweep --transport mpi --quiet --ops allreduce --dtype float --redop sum --sizes "$2" \
    --iters "$3" --warmup "$4" --no-check --inplace no --json "$json" >/dev/null ||
    { echo "fidelity.sh: fabricbench failed" >&2; exit 2; }
  time_us=$(python3 -c '
import json, sys
doc = json.load(open(sys.argv[1]))
rec = [r for r in doc["records"] if r["op"] == "allreduce" and r["placement"] == "out_of_place"
       and r["bytes"] == int(sys.argv[2]) and r.get("time_us") is not None]
if len(rec) != 1 or rec[0]["iterations"] != int(sys.argv[3]):
    sys.exit("unexpected records in " + sys.argv[1])
print(rec[0]["time_us"])' "$json" "$2" "$3") || exit 2
  echo "fb $2 $1 $time_us" >>"$SAMPLES"
}

echo "# fidelity: raw MPI_Allreduce loop vs fabricbench (mpi transport), $NP ranks, bind-to $BIND, $ROUNDS rounds"
echo "# $(nproc) CPUs, load average $(cut -d' ' -f1-3 /proc/loadavg), $(mpirun --version 2>/dev/null | head -1)"
start=$SECONDS
for ((round = 1; round <= ROUNDS; round++)); do
  for spec in $SIZES; do
    IFS=: read -r size iters warmup <<<"$spec"
    bytes=$(to_bytes "$size")
    # Alternate which tool goes first (A B, B A, ...) so that neither one
    # always runs right after the other.
    if ((round % 2)); then
      run_raw "$round" "$bytes" "$iters" "$warmup"
      run_fb "$round" "$bytes" "$iters" "$warmup"
    else
      run_fb "$round" "$bytes" "$iters" "$warmup"
      run_raw "$round" "$bytes" "$iters" "$warmup"
    fi
  done
  printf '# round %d/%d done (%ds)\n' "$round" "$ROUNDS" $((SECONDS - start))
done

python3 - "$SAMPLES" "$TOLERANCE" "$SIZES" <<'EOF'
import statistics, sys
samples, tolerance, sizes = sys.argv[1], float(sys.argv[2]), sys.argv[3].split()
data = {}
for line in open(samples):
    tool, size, rnd, t = line.split()
    data.setdefault(int(size), {}).setdefault(tool, []).append((int(rnd), float(t)))
iters = {}
for spec in sizes:
    s, n, w = spec.split(":")
    t = s.upper().rstrip("B")
    scale = {"K": 1 << 10, "M": 1 << 20, "G": 1 << 30}.get(t[-1:], 1)
    iters[int(t[:-1] if scale != 1 else t) * scale] = (int(n), int(w))

print("# per-round time_us (raw / fabricbench):")
for size in sorted(data):
    raw = [t for _, t in sorted(data[size]["raw"])]
    fb = [t for _, t in sorted(data[size]["fb"])]
    print(f"#  {size:>8} B  raw " + " ".join(f"{t:.4g}" for t in raw))
    print(f"#  {size:>8} B  fb  " + " ".join(f"{t:.4g}" for t in fb))

failed = False
print()
print(f"{'size (B)':>10} {'iters':>6} {'warmup':>6} {'raw med (us)':>13} {'fb med (us)':>12} {'fb/raw':>7} "
      f"{'paired':>7}  result")
for size in sorted(data):
    raw = dict(data[size]["raw"])
    fb = dict(data[size]["fb"])
    raw_med = statistics.median(raw.values())
    fb_med = statistics.median(fb.values())
    ratio = fb_med / raw_med
    # The median of the per-round ratios: each round's pair ran back to back
    # under the same machine load.
    paired = statistics.median(fb[r] / raw[r] for r in raw if r in fb)
    ok = abs(ratio - 1.0) <= tolerance
    failed |= not ok
    n, w = iters.get(size, ("?", "?"))
    print(f"{size:>10} {n:>6} {w:>6} {raw_med:>13.4f} {fb_med:>12.4f} {ratio:>7.3f} {paired:>7.3f}  "
          f"{'PASS' if ok else 'FAIL'}")
print(f"# PASS: |fb/raw - 1| <= {tolerance:g} (fb/raw = ratio of the medians; paired = median of per-round ratios)")
sys.exit(1 if failed else 0)
EOF
