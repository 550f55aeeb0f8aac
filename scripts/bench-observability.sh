#!/usr/bin/env bash
# What zoolock's metrics and spans cost (issue 39): the uncontended mutex
# cycle of `zl-observed-cycle` (async API, acknowledged release) under four
# observers, each run a process of its own:
#
#   off         the driver built without `metrics`, no tracing subscriber
#   none        built with `metrics`; no recorder and no subscriber installed
#   recorder    built with `metrics`; metrics-util's debugging recorder installed
#   subscriber  built with `metrics`; a tracing-subscriber fmt layer at INFO
#               (the spans' level) writing to a sink
#
# `none` against `off` is what the instrumentation costs when nobody
# listens; `recorder` and `subscriber` against `none` what listening costs.
#
# 1. Wall time: BENCH_RUNS rounds, the four interleaved (the order rotates
#    every round), on one private ZooKeeper 3.8 (forceSync=no); medians of
#    the client's CPU time per cycle (from /proc/thread-self/schedstat: the
#    observers' cost is CPU in this process), of the throughput and of the
#    cycle latency, with the ratios to `none`.
# 2. Instructions (if valgrind is installed; BENCH_CALLGRIND=0 skips): each
#    observer under callgrind at 300 and at 1,300 counted cycles; the
#    difference of the totals over 1,000 is the user-space instructions per
#    cycle (start-up, connect and warm-up cancel out). Not the CPU's load:
#    only what the code does, though that moves a little too (how many
#    event-loop turns find nothing ready depends on timing), so it runs
#    BENCH_CALLGRIND_RUNS rounds and prints the median and each round.
#
#   bash scripts/bench-observability.sh
#
# Environment:
#   BENCH_RUNS=N          rounds (default 7)
#   BENCH_CYCLES=N        counted cycles per run (default 3000, after 200 warm-up)
#   BENCH_CALLGRIND=0|1   the instruction counts (default 1 when valgrind is there)
#   BENCH_CALLGRIND_RUNS=N  rounds of them (default 3; medians)
#   BENCH_CONNECT=H:P     an existing server instead of a private one
#   BENCH_OUT=DIR         runs.jsonl, callgrind.txt, build.log, zk-server.log (default: a temp dir)
#   CARGO_TARGET_DIR      as cargo reads it (default: target/ in the tree)
set -euo pipefail

ROOT=$(cd "$(dirname "${BASH_SOURCE[0]}")/.." && pwd)
RUNS=${BENCH_RUNS:-7}
CYCLES=${BENCH_CYCLES:-3000}
OUT=${BENCH_OUT:-$(mktemp -d /tmp/bench-observability.XXXXXX)}
TARGET_DIR=${CARGO_TARGET_DIR:-$ROOT/target}
CALLGRIND=${BENCH_CALLGRIND:-$(command -v valgrind >/dev/null && echo 1 || echo 0)}
CALLGRIND_RUNS=${BENCH_CALLGRIND_RUNS:-3}
mkdir -p "$OUT"

die() {
    echo "bench-observability: $*" >&2
    exit 1
}

# Two builds of one binary: without the driver's metrics, then with them.
build() {
    (cd "$ROOT" && cargo build --release -p zoolock-bench --bin zl-observed-cycle "$@") >>"$OUT/build.log" 2>&1 ||
        die "build failed, see $OUT/build.log"
}
: >"$OUT/build.log"
build --features observed
cp "$TARGET_DIR/release/zl-observed-cycle" "$OUT/zl-observed-cycle-off"
build --features observed,metrics
cp "$TARGET_DIR/release/zl-observed-cycle" "$OUT/zl-observed-cycle-metrics"

ZK_DIR=
cleanup() {
    if [[ -n $ZK_DIR ]]; then
        cp "$ZK_DIR/server.log" "$OUT/zk-server.log" 2>/dev/null || true
        bash "$ROOT/scripts/zk-server.sh" stop "$ZK_DIR" >/dev/null 2>&1 || true
        rm -rf "$ZK_DIR"
    fi
}
trap cleanup EXIT

if [[ -n ${BENCH_CONNECT:-} ]]; then
    ZK=$BENCH_CONNECT
else
    ZK_DIR=$(mktemp -d /tmp/bench-observability-zk.XXXXXX)
    ZK=$(ZK_FORCE_SYNC=no bash "$ROOT/scripts/zk-server.sh" start "$ZK_DIR")
fi

# command_of OBSERVER: the binary and its --observe for OBSERVER, one a line.
command_of() {
    case $1 in
    off) printf '%s\n%s\n' "$OUT/zl-observed-cycle-off" none ;;
    *) printf '%s\n%s\n' "$OUT/zl-observed-cycle-metrics" "$1" ;;
    esac
}

# observe [WRAPPER...] -- OBSERVER ARGS...: one run of the binary for OBSERVER.
observe() {
    local wrapper=()
    while [[ $1 != -- ]]; do
        wrapper+=("$1")
        shift
    done
    shift
    local observer=$1 cmd
    shift
    mapfile -t cmd < <(command_of "$observer")
    "${wrapper[@]}" "${cmd[0]}" --connect "$ZK" --observe "${cmd[1]}" "$@"
}

echo "# $(date -u '+%Y-%m-%d %H:%M UTC'), zoolock at $(git -C "$ROOT" rev-parse --short HEAD)," \
    "$(nproc) cores, load $(cut -d' ' -f1-3 /proc/loadavg), server $ZK, $RUNS rounds x $CYCLES cycles"

# Warms the server's JVM; not counted.
observe -- none --cycles "$CYCLES" >/dev/null

OBSERVERS=(off none recorder subscriber)
: >"$OUT/runs.jsonl"
for ((run = 0; run < RUNS; run++)); do
    for ((i = 0; i < 4; i++)); do
        observer=${OBSERVERS[$(((run + i) % 4))]}
        line=$(observe -- "$observer" --cycles "$CYCLES" --json)
        # The plain build's `none` is `off` in the tables.
        [[ $observer == off ]] && line=${line/\"observe\":\"none\"/\"observe\":\"off\"}
        echo "$line" | tee -a "$OUT/runs.jsonl"
    done
done
echo "# load at the end of the wall-time runs $(cut -d' ' -f1-3 /proc/loadavg)"

python3 - "$OUT/runs.jsonl" <<'EOF'
import json, statistics, sys
runs = [json.loads(l) for l in open(sys.argv[1]) if l.strip()]
by = {}
for r in runs:
    by.setdefault(r["observe"], []).append(r)
med = lambda name, key: statistics.median(r[key] for r in by[name])
base_cpu, base_cps = med("none", "cpu_us_per_cycle"), med("none", "cycles_per_sec")
print()
print("| observer | runs | CPU µs per cycle (median) | ÷ none | cycles/s (median) | ÷ none | p50 cycle µs (median) | CPU µs per cycle, each run | cycles/s, each run |")
print("|---|---:|---:|---:|---:|---:|---:|---|---|")
for name in ["off", "none", "recorder", "subscriber"]:
    if name not in by:
        continue
    rs = by[name]
    cpu, cps = med(name, "cpu_us_per_cycle"), med(name, "cycles_per_sec")
    each_cpu = ", ".join(f"{r['cpu_us_per_cycle']:.0f}" for r in rs)
    each = ", ".join(f"{r['cycles_per_sec']:,.0f}" for r in rs)
    print(f"| {name} | {len(rs)} | {cpu:.1f} | {cpu / base_cpu:.3f}× | {cps:,.0f} | {cps / base_cps:.3f}× "
          f"| {med(name, 'p50_us'):.1f} | {each_cpu} | {each} |")
EOF

if [[ $CALLGRIND == 1 ]]; then
    : >"$OUT/callgrind.txt"
    for ((rep = 0; rep < CALLGRIND_RUNS; rep++)); do
        for observer in "${OBSERVERS[@]}"; do
            for n in 300 1300; do
                out=$OUT/callgrind-$observer-$n-$rep.out
                observe valgrind --tool=callgrind --callgrind-out-file="$out" -- \
                    "$observer" --cycles "$n" --json >>"$OUT/callgrind-runs.jsonl" 2>>"$OUT/callgrind.log" ||
                    die "callgrind run failed, see $OUT/callgrind.log"
                echo "$rep $observer $n $(sed -n 's/^totals: //p' "$out")" >>"$OUT/callgrind.txt"
            done
        done
    done
    python3 - "$OUT/callgrind.txt" <<'EOF'
import statistics, sys
ir = {}
for line in open(sys.argv[1]):
    rep, observer, n, total = line.split()
    ir.setdefault(observer, {}).setdefault(rep, {})[int(n)] = int(total)
per = {o: sorted((v[1300] - v[300]) / 1000 for v in reps.values()) for o, reps in ir.items()}
base = statistics.median(per["none"])
print()
print("| observer | instructions per cycle (median) | ÷ none | − none | each round |")
print("|---|---:|---:|---:|---|")
for name in ["off", "none", "recorder", "subscriber"]:
    if name in per:
        m = statistics.median(per[name])
        each = ", ".join(f"{x:,.0f}" for x in per[name])
        print(f"| {name} | {m:,.0f} | {m / base:.3f}× | {m - base:+,.0f} | {each} |")
EOF
fi
