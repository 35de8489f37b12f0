#!/usr/bin/env bash
# fidelity.sh: does fabricbench time MPI_Allreduce as a bare MPI loop does?
#
# Runs bench/raw_allreduce (a plain MPI loop) and fabricbench's mpi transport
# side by side on 2 ranks at 8 B, 64 KiB and 4 MiB (float, sum, out of place),
# with the same fixed warm-up and iteration counts for both, interleaved over
# several rounds, and compares them. Exit status: 0 when fabricbench is
# within TOLERANCE (5 %) of the raw loop at every size; 1 on a FAIL; 3 when
# nothing failed but some size had fewer than 3 quiet rounds (a busy machine:
# no verdict); 2 on a usage or run error. Builds nothing: point it at a build
# folder holding both binaries (build/src/fabricbench, build/bench/raw_allreduce).
#
#   bench/fidelity.sh [BUILD_DIR]          (default: $BUILD_DIR, else ./build)
#
# Knobs (environment):
#   ROUNDS=15         rounds at most; each runs every tool once per size
#   MAX_SECONDS=100   start no new round after this many seconds (once
#                     MIN_ROUNDS=5 rounds are done), so that a busy machine
#                     does not stretch the run far past two minutes
#   SIZES="8:50000:2000 64K:5000:200 4M:300:10"
#                     size:iterations:warm-up triples (bytes; K, M suffixes)
#   TOLERANCE=0.05    allowed |fabricbench/raw - 1|
#   GATE=paired       which ratio decides PASS: paired (median of the per-round
#                     ratios over the quiet rounds) or medians (ratio of the
#                     two medians over all rounds)
#   CLEAN=1.5         a round is quiet when no other task competed for the
#                     cores during its runs (runnable tasks in /proc/loadavg,
#                     sampled every 20 ms) and every tool ran within CLEAN
#                     times its own best round at that size; the other rounds
#                     were disturbed and are left out of the paired ratio
#   DIAG=0            1: also run "raw -t funneled -p" (the raw loop with
#                     fabricbench's MPI thread level and per-iteration
#                     MPI_Wtime), to see how much of a gap those two explain
#   NP=2              ranks
#   BIND=core         mpirun --bind-to value (core, none, ...)
#   MPIRUN_ARGS=...   extra mpirun arguments (word-split)
#   KEEP=DIR          keep the JSON files, the samples and the load samples in DIR
set -euo pipefail
export LC_ALL=C # a dot in $EPOCHREALTIME and in the numbers python reads

BUILD_DIR=${1:-${BUILD_DIR:-./build}}
ROUNDS=${ROUNDS:-15}
MAX_SECONDS=${MAX_SECONDS:-100}
MIN_ROUNDS=${MIN_ROUNDS:-5}
SIZES=${SIZES:-"8:50000:2000 64K:5000:200 4M:300:10"}
TOLERANCE=${TOLERANCE:-0.05}
GATE=${GATE:-paired}
CLEAN=${CLEAN:-1.5}
DIAG=${DIAG:-0}
NP=${NP:-2}
BIND=${BIND:-core}
read -r -a EXTRA <<<"${MPIRUN_ARGS:-}"

die() { echo "fidelity.sh: $*" >&2; exit 2; }
RAW=$BUILD_DIR/bench/raw_allreduce
FB=$BUILD_DIR/src/fabricbench
for exe in "$RAW" "$FB"; do
  [[ -x $exe ]] || die "$exe not found or not executable (build first; was MPI found?)"
done
command -v mpirun >/dev/null || die "mpirun not on PATH"
command -v python3 >/dev/null || die "python3 not on PATH"
[[ $GATE == paired || $GATE == medians ]] || die "GATE=$GATE: choose paired or medians"
[[ $ROUNDS =~ ^[1-9][0-9]*$ ]] || die "ROUNDS=$ROUNDS: must be 1 or more"
[[ $MAX_SECONDS =~ ^[0-9]+$ && $MIN_ROUNDS =~ ^[0-9]+$ ]] || die "MAX_SECONDS and MIN_ROUNDS must be whole numbers"

if [[ -n ${KEEP:-} ]]; then
  WORK=$KEEP
  mkdir -p "$WORK"
else
  WORK=$(mktemp -d)
fi
SAMPLES=$WORK/samples.txt # one line per run: tool size_bytes round time_us start end
LOAD=$WORK/load.txt       # one line per 20 ms: time runnable_tasks
: >"$SAMPLES"

# Other jobs on the machine: the number of runnable tasks (the 4th field of
# /proc/loadavg), sampled every 20 ms for the whole run. While a tool runs,
# its NP ranks and this sampler are runnable; anything beyond is someone else
# competing for the cores.
python3 -c '
import sys, time
out = open(sys.argv[1], "w", buffering=1)
while True:
    with open("/proc/loadavg") as f:
        running = f.read().split()[3].split("/")[0]
    out.write(f"{time.time():.3f} {running}\n")
    time.sleep(0.02)' "$LOAD" &
SAMPLER=$!
# shellcheck disable=SC2064 # expand now: WORK and SAMPLER are fixed
if [[ -n ${KEEP:-} ]]; then trap "kill $SAMPLER 2>/dev/null" EXIT; else trap "kill $SAMPLER 2>/dev/null; rm -rf '$WORK'" EXIT; fi

MPIRUN=(mpirun --allow-run-as-root --oversubscribe -np "$NP" --map-by core --bind-to "$BIND" ${EXTRA[@]+"${EXTRA[@]}"})

TOOLS=(raw fb)
((DIAG)) && TOOLS+=(raw_tf_p)

to_bytes() {
  python3 -c '
import sys
t = sys.argv[1].upper().rstrip("B")
scale = {"K": 1 << 10, "M": 1 << 20, "G": 1 << 30}.get(t[-1:], 1)
print(int(t[:-1] if scale != 1 else t) * scale)' "$1" || die "bad size '$1'"
}

run_raw() { # tool round bytes iters warmup [raw_allreduce options]
  local tool=$1 round=$2 bytes=$3 iters=$4 warmup=$5 out got time_us t0
  shift 5
  t0=$EPOCHREALTIME
  out=$("${MPIRUN[@]}" "$RAW" "$@" -n "$iters" -w "$warmup" -r 1 "$bytes") || die "raw_allreduce failed"
  read -r got time_us <<<"$out"
  [[ $got == "$bytes" && -n $time_us ]] || die "raw_allreduce printed '$out'"
  echo "$tool $bytes $round $time_us $t0 $EPOCHREALTIME" >>"$SAMPLES"
}

run_fb() { # round bytes iters warmup
  local round=$1 bytes=$2 iters=$3 warmup=$4 json time_us t0 t1
  json=$WORK/fb_round${round}_${bytes}.json
  t0=$EPOCHREALTIME
  # --transport mpi: a build with NCCL would otherwise pick it where a GPU is.
  "${MPIRUN[@]}" "$FB" sweep --transport mpi --quiet --ops allreduce --dtype float --redop sum --sizes "$bytes" \
    --iters "$iters" --warmup "$warmup" --no-check --inplace no --json "$json" >/dev/null || die "fabricbench failed"
  t1=$EPOCHREALTIME
  time_us=$(python3 -c '
import json, sys
doc = json.load(open(sys.argv[1]))
rec = [r for r in doc["records"] if r["op"] == "allreduce" and r["placement"] == "out_of_place"
       and r["bytes"] == int(sys.argv[2]) and r.get("time_us") is not None]
if len(rec) != 1 or rec[0]["iterations"] != int(sys.argv[3]):
    sys.exit("fidelity.sh: unexpected records in " + sys.argv[1])
print(rec[0]["time_us"])' "$json" "$bytes" "$iters") || exit 2
  echo "fb $bytes $round $time_us $t0 $t1" >>"$SAMPLES"
}

run_tool() { # tool round bytes iters warmup
  case $1 in
    raw) run_raw "$@" ;;
    raw_tf_p) run_raw "$@" -t funneled -p ;;
    fb) shift; run_fb "$@" ;;
  esac
}

echo "# fidelity: raw MPI_Allreduce loop vs fabricbench --transport mpi; $NP ranks, bind-to $BIND, $ROUNDS rounds"
echo "# $(nproc) CPUs, load average $(cut -d' ' -f1-3 /proc/loadavg); $(mpirun --version 2>/dev/null | head -1)"
start=$SECONDS
for ((round = 1; round <= ROUNDS; round++)); do
  for spec in $SIZES; do
    IFS=: read -r size iters warmup <<<"$spec"
    [[ $iters =~ ^[1-9][0-9]*$ && $warmup =~ ^[0-9]+$ ]] || die "SIZES entry '$spec': want size:iterations:warmup"
    bytes=$(to_bytes "$size")
    # The tools take turns going first (A B, B A, ...) so that neither always
    # runs right after the other.
    for ((k = 0; k < ${#TOOLS[@]}; k++)); do
      run_tool "${TOOLS[(k + round) % ${#TOOLS[@]}]}" "$round" "$bytes" "$iters" "$warmup"
    done
  done
  printf '# round %d/%d done (%ds)\n' "$round" "$ROUNDS" $((SECONDS - start))
  if ((round < ROUNDS && round >= MIN_ROUNDS && SECONDS - start >= MAX_SECONDS)); then
    echo "# stopping after $round rounds: MAX_SECONDS=$MAX_SECONDS reached (a busy machine?)"
    break
  fi
done

python3 - "$SAMPLES" "$LOAD" "$NP" "$TOLERANCE" "$GATE" "$CLEAN" "$SIZES" <<'EOF'
import bisect, statistics, sys

samples, load_file, nranks = sys.argv[1], sys.argv[2], int(sys.argv[3])
tolerance, gate, clean, sizes = float(sys.argv[4]), sys.argv[5], float(sys.argv[6]), sys.argv[7].split()

def to_bytes(text):
    t = text.upper().rstrip("B")
    scale = {"K": 1 << 10, "M": 1 << 20, "G": 1 << 30}.get(t[-1:], 1)
    return int(t[:-1] if scale != 1 else t) * scale

load = sorted(tuple(map(float, line.split())) for line in open(load_file) if len(line.split()) == 2)
load_times = [t for t, _ in load]

def busy(start, end):
    """Whether other tasks competed for the cores during most of [start, end]:
    the median count of runnable tasks exceeds this run's ranks + the sampler."""
    lo, hi = bisect.bisect_left(load_times, start), bisect.bisect_right(load_times, end)
    counts = [n for _, n in load[lo:hi]]
    return bool(counts) and statistics.median(counts) > nranks + 1

counts = {to_bytes(s.split(":")[0]): s.split(":")[1:] for s in sizes}
data = {}  # size -> tool -> {round: time_us}
crowded = {}  # size -> rounds in which some run was busy
for line in open(samples):
    tool, size, rnd, t, start, end = line.split()
    data.setdefault(int(size), {}).setdefault(tool, {})[int(rnd)] = float(t)
    if busy(float(start), float(end)):
        crowded.setdefault(int(size), set()).add(int(rnd))

print("# time_us per round (* = disturbed round, left out of 'paired'; b = other tasks were running):")
quiet = {}
for size in sorted(data):
    tools = data[size]
    rounds = sorted(set.intersection(*(set(runs) for runs in tools.values())))
    # Machine load only ever adds time: a round where any tool ran more than
    # CLEAN times slower than its own best round, or where other tasks
    # competed for the cores, was disturbed.
    best = {tool: min(runs[r] for r in rounds) for tool, runs in tools.items()}
    busy_rounds = crowded.get(size, set())
    quiet[size] = [r for r in rounds
                   if r not in busy_rounds and all(tools[t][r] <= clean * best[t] for t in tools)]
    for tool in sorted(tools):
        runs = tools[tool]
        marks = lambda r: ("" if r in quiet[size] else "*") + ("b" if r in busy_rounds else "")
        print(f"#  {size:>8} B  {tool:<8} " + " ".join(f"{runs[r]:.4g}{marks(r)}" for r in rounds))

def paired(a, b, rounds):
    return statistics.median(a[r] / b[r] for r in rounds)

diag = any("raw_tf_p" in tools for tools in data.values())
print()
header = (f"{'size (B)':>10} {'iters':>6} {'warmup':>6} {'raw med us':>11} {'fb med us':>11} "
          f"{'fb/raw':>7} {'paired':>7} {'quiet':>5}")
if diag:
    header += f" {'diag/raw':>9}"
print(header + "  result")
failed = noisy = False
for size in sorted(data):
    raw, fb = data[size]["raw"], data[size]["fb"]
    rounds = quiet[size]
    too_few = len(rounds) < 3
    if too_few:  # hardly a quiet round: pair them all, and say so
        rounds = sorted(set(raw) & set(fb))
    raw_med, fb_med = statistics.median(raw.values()), statistics.median(fb.values())
    medians = fb_med / raw_med
    pair = paired(fb, raw, rounds)
    ratio = pair if gate == "paired" else medians
    ok = abs(ratio - 1.0) <= tolerance
    if too_few:
        noisy = True
    elif not ok:
        failed = True
    n, w = counts.get(size, ("?", "?"))
    line = (f"{size:>10} {n:>6} {w:>6} {raw_med:>11.4f} {fb_med:>11.4f} "
            f"{medians:>7.3f} {pair:>7.3f} {len(quiet[size]):>5}")
    if diag:
        line += f" {paired(data[size]['raw_tf_p'], raw, rounds):>9.3f}"
    print(line + f"  {'PASS' if ok else 'FAIL'}{' (noisy)' if too_few else ''}")
print(f"# fb/raw: ratio of the medians over all rounds; paired: median of the per-round fb/raw over the "
      f"quiet rounds (no other task running, every tool within {clean:g}x of its best round); "
      f"PASS: |{gate} - 1| <= {tolerance:g}")
if diag:
    print("# diag/raw: like paired, for 'raw_allreduce -t funneled -p' (the raw loop with fabricbench's "
          "MPI thread level and per-iteration MPI_Wtime)")
if noisy:
    print("# (noisy): fewer than 3 quiet rounds (too few rounds, or a busy machine), so every round was "
          "paired; such a result settles nothing" + ("" if failed else " (exit status 3)"))
sys.exit(1 if failed else 3 if noisy else 0)
EOF
