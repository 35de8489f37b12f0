#!/usr/bin/env bash
# time_to_verdict.sh: how fast fabricbench gets to an answer, and what that
# costs in fidelity and scale. Four parts, each printing its figures and a
# ratio; none is a test (no exit status depends on a speed):
#
#   imb      IMB-style side-by-side rounds on NP ranks at 8 B, 64 KiB and
#            4 MiB all-reduce: bench/raw_allreduce with fixed counts, the way
#            Intel MPI Benchmarks counts (1000 iterations, 400 at 4 MiB; IMB
#            itself is not packaged for Debian, so the repository's raw MPI
#            loop stands in for it), against fabricbench's adaptive counts
#            (warm-up median, then iterations to --precision). Prints each
#            tool's per-round times and spread (max/min over the rounds).
#   sweep    the wall time of fabricbench's default sweep (allreduce,
#            allgather, sendrecv; 8 B..64 MiB x2; both placements) against
#            the raw loop running the same ops, sizes, placements, warm-ups
#            and the iteration counts fabricbench chose; both timed inside
#            the process (after MPI_Init), so mpirun's start-up is left out.
#   throttle `run --profile smoke` on the multi-host test bed (4 hosts x 2
#            ranks, scripts/testbed/) healthy, then with one host throttled
#            to 100 Mbit/s: both wall times and their ratio (goal <= 1.5),
#            and whether the throttled host was named. Needs root; skipped
#            without it. Takes the test bed lock (/tmp/fabricbench-testbed.lock).
#   scale    bench/reporter_scale at 512 and 4096 ranks (rank 0's merge,
#            analysis and writers on synthetic inputs), then `fabricbench
#            report` on each resulting JSON: seconds and peak memory (goal at
#            4096: under 1 s and 256 MB).
#
#   bench/time_to_verdict.sh [BUILD_DIR] [PART...]   (default: ./build, all parts)
#
# Knobs: ROUNDS=3 (imb), NP=2 (imb, sweep), KEEP=DIR (keep the JSON files).
set -euo pipefail
export LC_ALL=C

BUILD_DIR=${1:-${BUILD_DIR:-./build}}
shift || true
PARTS=("$@")
((${#PARTS[@]})) || PARTS=(imb sweep throttle scale)
ROUNDS=${ROUNDS:-3}
NP=${NP:-2}
HERE=$(cd "$(dirname "$0")" && pwd)
FB=$BUILD_DIR/src/fabricbench
RAW=$BUILD_DIR/bench/raw_allreduce
SCALE=$BUILD_DIR/bench/reporter_scale
die() { echo "time_to_verdict.sh: $*" >&2; exit 2; }
for exe in "$FB" "$RAW" "$SCALE"; do [[ -x $exe ]] || die "$exe not found (build first)"; done
if [[ -n ${KEEP:-} ]]; then WORK=$KEEP; mkdir -p "$WORK"; else WORK=$(mktemp -d); trap 'rm -rf "$WORK"' EXIT; fi
MPIRUN=(mpirun --allow-run-as-root --oversubscribe --bind-to none -q -np "$NP")

json_field() { python3 -c 'import json,sys; d=json.load(open(sys.argv[1])); print(eval(sys.argv[2], {"d": d}))' "$@"; }

part_imb() {
  echo "# imb: 2 tools x $ROUNDS rounds, allreduce float sum out of place, $NP ranks"
  echo "#   raw: bench/raw_allreduce, IMB-style fixed counts (IMB is not packaged for Debian: this loop stands in)"
  echo "#   fabricbench: adaptive (median warm-up, then iterations to --precision 1%, at most --max-time-ms 100)"
  local spec size iters r out raw fbj
  for spec in 8:1000 64K:1000 4M:400; do
    IFS=: read -r size iters <<<"$spec"
    raw=() fbt=() fbi=() fbp=()
    for ((r = 1; r <= ROUNDS; r++)); do
      out=$("${MPIRUN[@]}" "$RAW" -n "$iters" -w 10 "$size" | head -1)
      raw+=("$(cut -d' ' -f2 <<<"$out")")
      fbj=$WORK/imb_${size}_$r.json
      "${MPIRUN[@]}" "$FB" sweep --transport mpi -q --ops allreduce --sizes "$size" --inplace no --no-check \
        --json "$fbj" >/dev/null
      fbt+=("$(json_field "$fbj" 'd["records"][0]["time_us"]')")
      fbi+=("$(json_field "$fbj" 'd["records"][0]["iterations"]')")
      fbp+=("$(json_field "$fbj" 'round(100 * d["records"][0].get("precision", float("nan")), 2)')")
    done
    python3 - "$size" "$iters" "${raw[*]}" "${fbt[*]}" "${fbi[*]}" "${fbp[*]}" <<'PY'
import sys
size, iters, raw, fb, fbi, fbp = sys.argv[1], sys.argv[2], *[a.split() for a in sys.argv[3:]]
raw, fb = [float(x) for x in raw], [float(x) for x in fb]
print(f"{size:>6}  raw ({iters} iters) us: {' '.join(f'{x:.2f}' for x in raw):<30} spread {max(raw)/min(raw):.2f}x")
print(f"{'':>6}  fabricbench us:       {' '.join(f'{x:.2f}' for x in fb):<30} spread {max(fb)/min(fb):.2f}x"
      f"  (iterations {' '.join(fbi)}; precision % {' '.join(fbp)})")
print(f"{'':>6}  median fabricbench/raw {sorted(fb)[len(fb)//2] / sorted(raw)[len(raw)//2]:.2f}")
PY
  done
}

part_sweep() {
  echo "# sweep: fabricbench's default sweep vs the raw loop on the same ops, sizes, placements and counts; $NP ranks"
  local fbj=$WORK/sweep.json t0 t1 op place flag sizes raw_wall=0 w
  t0=$EPOCHREALTIME
  "${MPIRUN[@]}" "$FB" sweep --transport mpi -q --json "$fbj" >/dev/null
  t1=$EPOCHREALTIME
  for op in allreduce allgather sendrecv; do
    for place in out_of_place in_place; do
      flag=()
      [[ $place == in_place ]] && flag=(-i)
      sizes=$(python3 -c '
import json, sys
d = json.load(open(sys.argv[1]))
print(" ".join(str(r["bytes"]) + "@" + str(r["iterations"]) for r in d["records"]
               if r["op"] == sys.argv[2] and r["placement"] == sys.argv[3] and "iterations" in r))' "$fbj" "$op" "$place")
      [[ -n $sizes ]] || continue
      # shellcheck disable=SC2086 # one word per size
      w=$("${MPIRUN[@]}" "$RAW" -o "$op" "${flag[@]}" -w 5 $sizes | sed -n 's/^# wall //p')
      raw_wall=$(python3 -c "print($raw_wall + $w)")
    done
  done
  python3 - "$(json_field "$fbj" 'd["status"]["duration_s"]')" "$raw_wall" "$t0" "$t1" <<'PY'
import sys
fb, raw, t0, t1 = map(float, sys.argv[1:])
print(f"  fabricbench sweep: {fb:.2f} s in the process ({t1 - t0:.2f} s with mpirun); raw loop: {raw:.2f} s")
print(f"  ratio fabricbench/raw: {fb / raw:.2f}")
PY
  # Where the sweep's time went (the JSON's sweep_cost), and the same sweep
  # out of place only, the points IMB-MPI1's Allreduce, Allgather and
  # PingPong measure (goal: timed share >= 0.70).
  "${MPIRUN[@]}" "$FB" sweep --transport mpi -q --inplace no --json "$WORK/sweep_oop.json" >/dev/null
  python3 - "$fbj" "$WORK/sweep_oop.json" <<'PY'
import json, sys
for label, path in (("both placements", sys.argv[1]), ("out of place only", sys.argv[2])):
    c = json.load(open(path))["sweep_cost"]
    parts = " ".join(f"{k[:-2]} {c[k]:.2f}" for k in ("fill_s", "check_s", "warmup_s", "timed_s", "samples_s",
                                                       "agree_s", "output_s", "other_s"))
    print(f"  {label}: {c['points']} points, wall {c['wall_s']:.2f} s: {parts}; timed share {c['timed_share']:.2f}")
PY
}

part_throttle() {
  if [[ $(id -u) != 0 ]]; then echo "# throttle: skipped (the test bed needs root)"; return; fi
  local tb=$HERE/../scripts/testbed/testbed.sh healthy throttled named
  export FB_TESTBED_PREFIX=fbt FB_TESTBED_HOSTPREFIX=node
  exec 9>/tmp/fabricbench-testbed.lock
  flock 9
  "$tb" down >/dev/null 2>&1 || true
  "$tb" up 4 --slots 2 --subnet 10.77.9 >/dev/null
  smoke() { # json -> wall seconds
    local t0=$EPOCHREALTIME
    "$tb" mpirun -np 8 -q "$FB" run --profile smoke -q --outlier-drop 0.8 --json "$1" >/dev/null
    python3 -c "print($EPOCHREALTIME - $t0)"
  }
  healthy=$(smoke "$WORK/healthy.json")
  "$tb" throttle node2 100mbit >/dev/null
  throttled=$(smoke "$WORK/throttled.json")
  "$tb" down >/dev/null 2>&1 || true
  flock -u 9
  named=$(json_field "$WORK/throttled.json" '[f["hosts"] for f in d["findings"]]')
  python3 - "$healthy" "$throttled" "$named" \
    "$(json_field "$WORK/throttled.json" 'len(d["budget"]["cuts"])')" \
    "$(json_field "$WORK/throttled.json" 'd["health"]["seconds"]')" \
    "$(json_field "$WORK/healthy.json" 'len(d["budget"]["cuts"])')" <<'PY'
import sys
healthy, throttled = float(sys.argv[1]), float(sys.argv[2])
print(f"# throttle: run --profile smoke on 4 hosts x 2 ranks (budget 60 s, --on-finding halve)")
print(f"  healthy {healthy:.1f} s ({sys.argv[6]} cut); node2 at 100 Mbit/s {throttled:.1f} s ({sys.argv[4]} cut; "
      f"named {sys.argv[3]} {float(sys.argv[5]):.1f} s into the run)")
print(f"  ratio throttled/healthy: {throttled / healthy:.2f} (goal <= 1.5)")
PY
}

part_scale() {
  echo "# scale: rank 0's merge, analysis and writers on synthetic inputs (8 ranks a node), then report"
  local ranks json
  for ranks in 512 4096; do
    json=$WORK/scale_$ranks.json
    "$SCALE" "$ranks" "$json" | sed 's/^/  /'
    python3 - "$FB" "$json" "$ranks" <<'PY'
import resource, subprocess, sys, time
t0 = time.monotonic()
proc = subprocess.run([sys.argv[1], "report", "-q", sys.argv[2]], capture_output=True, text=True)
wall = time.monotonic() - t0
peak = resource.getrusage(resource.RUSAGE_CHILDREN).ru_maxrss / 1024
print(f"  report on {sys.argv[3]} ranks: {wall:.3f} s, peak {peak:.1f} MB, exit {proc.returncode}")
PY
  done
}

for part in "${PARTS[@]}"; do
  case $part in
    imb | sweep | throttle | scale) "part_$part" ;;
    *) die "unknown part '$part' (imb, sweep, throttle, scale)" ;;
  esac
done
