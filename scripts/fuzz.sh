#!/usr/bin/env bash
# Runs each libFuzzer target of tests/fuzz for a bounded time, as many at
# once as there are cores (FABRICBENCH_FUZZ_JOBS), and fails on a crash that
# is not a known one.
#
#   scripts/fuzz.sh [--time SECONDS] [--build DIR] [TARGET...]
#
# Needs a build with FABRICBENCH_FUZZ=ON (the asan preset: `cmake --preset
# asan && cmake --build --preset asan`). Each target starts from a copy of
# tests/fuzz/corpus/<target> (the committed corpus is never written) and runs
# in libFuzzer's fork mode, which goes on after a crash, so one known defect
# does not end the search. Every crashing, hanging or leaking input is then
# run again alone; one that fails again fails the run, unless its signature
# (the kind of failure and the first frame in src/, or the harness's defect
# line) is that of a reproducer in tests/fuzz/known-crash/<target>, a defect
# found and not fixed yet (none is now; the folder exists only while one is).
# The inputs are kept under DIR/fuzz-run/<target>/artifacts.
set -euo pipefail
root=$(cd "$(dirname "$0")/.." && pwd -P)
cd "$root"

seconds=60
build=build/asan
targets=()
while (($#)); do
    case "$1" in
        --time) seconds=$2; shift 2 ;;
        --build) build=$2; shift 2 ;;
        -h|--help) sed -n '2,/^set -euo/p' "$0" | sed '$d' | sed 's/^# \{0,1\}//'; exit 0 ;;
        -*) echo "fuzz.sh: unknown option $1" >&2; exit 2 ;;
        *) targets+=("$1"); shift ;;
    esac
done
((${#targets[@]})) || targets=(result_reader gate size expectations folder_group)
build_abs=$(realpath -m "$build")

export ASAN_OPTIONS=${ASAN_OPTIONS:-detect_leaks=1}
export UBSAN_OPTIONS=${UBSAN_OPTIONS:-print_stacktrace=1:halt_on_error=1}
# A single input may take this long before it counts as a hang (seconds).
per_input_timeout=10
libfuzzer_limits=(-timeout="$per_input_timeout" -rss_limit_mb=2048 -max_len=65536)

# The file of the first stack frame in the project's src/, from a sanitizer
# report on stdin. Frames end in their location, absolute or relative to the
# build folder (compiler caches rewrite paths): "... in f(int) build/asan/../../src/x.cpp:3:7".
first_src_frame() {
    local line loc
    while read -r line; do
        [[ $line =~ ^#[0-9]+\ 0x[0-9a-f]+\ in\  ]] || continue
        loc=${line##* }
        loc=${loc%%:*}
        [[ $loc == /* ]] || loc=$build_abs/$loc
        loc=$(realpath -m --relative-to="$root" "$loc")
        if [[ $loc == src/* ]]; then
            echo "$loc"
            return
        fi
    done
    echo "(no frame in src/)"
}

# The signature of one failing input: what failed and where.
signature() { # BINARY INPUT
    local log
    # A crashing input leaves its scratch folder behind: keep those in the run's folder.
    log=$(TMPDIR=$work timeout $((per_input_timeout * 3)) "$1" "${libfuzzer_limits[@]}" -runs=1 "$2" 2>&1 || true)
    local defect kind where
    defect=$(grep -m1 -o 'fabricbench-fuzz: defect: [^:]*' <<<"$log" | sed 's/^fabricbench-fuzz: defect: //' || true)
    if [[ -n $defect ]]; then
        echo "defect $defect"
        return
    fi
    kind=$(grep -m1 -oE 'ERROR: (AddressSanitizer|LeakSanitizer|libFuzzer): [a-zA-Z-]+|runtime error' <<<"$log" |
        sed -E 's/^ERROR: //' || true)
    [[ -n $kind ]] || kind="no failure when run alone"
    echo "$kind $(first_src_frame <<<"$log")"
}

# One target: fuzzes it, then writes its summary line and its status (0, or
# 1 for a new defect) into its folder. No status file: it did not finish.
fuzz_one() { # TARGET
    local target=$1
    local bin=$build/tests/fuzz/fuzz_$target
    local work=$build/fuzz-run/$target
    rm -rf "$work"
    mkdir -p "$work/corpus" "$work/artifacts"
    cp tests/fuzz/corpus/"$target"/* "$work/corpus/"

    local -A known=()
    local f
    if [[ -d tests/fuzz/known-crash/$target ]]; then
        for f in tests/fuzz/known-crash/"$target"/*; do
            [[ -f $f ]] || continue
            known["$(signature "$bin" "$f")"]=$(basename "$f")
        done
    fi

    echo "fuzz.sh: $target for ${seconds}s (${#known[@]} known defect signatures)" >&2
    # fork=1: one worker per target (the harness around it mostly waits);
    # crashes, hangs and OOMs are kept and the search goes on.
    TMPDIR=$work "$bin" "${libfuzzer_limits[@]}" -fork=1 -ignore_crashes=1 -ignore_timeouts=1 -ignore_ooms=1 \
        -print_funcs=0 -max_total_time="$seconds" -artifact_prefix="$work/artifacts/" "$work/corpus" >"$work/log" 2>&1 || true
    # Fork mode reports "#<executions>: cov: ..." as it goes.
    local line execs
    line=$(grep -E '^#[0-9]+: cov:' "$work/log" | tail -1 || true)
    execs=$(sed -E 's/^#([0-9]+):.*/\1/' <<<"$line")
    if [[ -z $execs ]]; then
        echo "fuzz.sh: $target: no progress line in $work/log" >&2
        tail -20 "$work/log" >&2
        return 1
    fi

    local new=0 old=0 a sig result=0
    for a in "$work"/artifacts/*; do
        [[ -f $a ]] || continue
        sig=$(signature "$bin" "$a")
        if [[ -n ${known[$sig]+x} ]]; then
            old=$((old + 1))
        elif [[ $sig == "no failure when run alone"* ]]; then
            # A hang or OOM that depended on the machine's load: kept, not fatal.
            echo "fuzz.sh: $target: $(basename "$a") did not fail when run alone" >&2
        else
            new=$((new + 1))
            result=1
            echo "fuzz.sh: $target: NEW defect: $sig" >&2
            echo "  input: $a ($(stat -c %s "$a") bytes); run it: $bin $a" >&2
        fi
    done
    printf '%-14s %6ss %12s %9s %9s %6s %6s\n' "$target" "$seconds" "$execs" "$((execs / seconds))" \
        "$(find "$work/corpus" -type f | wc -l)" "$old" "$new" >"$work/summary"
    echo "$result" >"$work/status"
}

for target in "${targets[@]}"; do
    bin=$build/tests/fuzz/fuzz_$target
    [[ -x $bin ]] || { echo "fuzz.sh: $bin missing; build with FABRICBENCH_FUZZ=ON (cmake --preset asan)" >&2; exit 2; }
    rm -rf "$build/fuzz-run/$target"
done
# As many targets at once as there are cores, each for the full time: the
# same search as one after the other, in a fraction of the wall time.
at_once=${FABRICBENCH_FUZZ_JOBS:-$(nproc)}
for target in "${targets[@]}"; do
    while (($(jobs -rp | wc -l) >= at_once)); do wait -n || true; done
    fuzz_one "$target" &
done
wait

status=0
summary=()
for target in "${targets[@]}"; do
    work=$build/fuzz-run/$target
    if [[ ! -f $work/status ]]; then
        echo "fuzz.sh: $target did not finish (see $work/log)" >&2
        status=1
        continue
    fi
    [[ $(cat "$work/status") == 0 ]] || status=1
    summary+=("$(cat "$work/summary")")
done

printf '%-14s %7s %12s %9s %9s %6s %6s\n' target time executions exec/s corpus known new
((${#summary[@]} == 0)) || printf '%s\n' "${summary[@]}"
exit $status
