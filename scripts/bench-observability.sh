#!/usr/bin/env bash
# What zoolock's metrics and spans cost (issue 39): the uncontended mutex
# cycle of `zl-observed-cycle` (async API, driver built with `metrics`)
# with no metrics recorder and no tracing subscriber (`none`), with a
# metrics recorder (`recorder`), and with a tracing subscriber
# (`subscriber`), each a process of its own, interleaved (the order rotates
# every run), on one private ZooKeeper 3.8 (forceSync=no). Prints each run,
# then per observer the median throughput and cycle latency and the ratio
# of the throughput to `none`'s.
#
#   bash scripts/bench-observability.sh
#
# Environment:
#   BENCH_RUNS=N          runs per observer (default 5)
#   BENCH_CYCLES=N        counted cycles per run (default 3000, after 200 warm-up)
#   BENCH_CONNECT=H:P     an existing server instead of a private one
#   BENCH_OUT=DIR         where runs.jsonl and zk-server.log go (default: a temp dir)
#   CARGO_TARGET_DIR      as cargo reads it (default: target/ in the tree)
set -euo pipefail

ROOT=$(cd "$(dirname "${BASH_SOURCE[0]}")/.." && pwd)
RUNS=${BENCH_RUNS:-5}
CYCLES=${BENCH_CYCLES:-3000}
OUT=${BENCH_OUT:-$(mktemp -d /tmp/bench-observability.XXXXXX)}
TARGET_DIR=${CARGO_TARGET_DIR:-$ROOT/target}
mkdir -p "$OUT"

die() {
    echo "bench-observability: $*" >&2
    exit 1
}

(cd "$ROOT" && cargo build --release -p zoolock-bench --features observed --bin zl-observed-cycle) \
    >"$OUT/build.log" 2>&1 || die "build failed, see $OUT/build.log"
BIN=$TARGET_DIR/release/zl-observed-cycle

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

echo "# $(date -u '+%Y-%m-%d %H:%M UTC'), zoolock at $(git -C "$ROOT" rev-parse --short HEAD)," \
    "$(nproc) cores, load $(cut -d' ' -f1-3 /proc/loadavg), server $ZK, $RUNS runs x $CYCLES cycles"

# Warms the server's JVM; not counted.
"$BIN" --connect "$ZK" --observe none --cycles "$CYCLES" >/dev/null

OBSERVERS=(none recorder subscriber)
: >"$OUT/runs.jsonl"
for ((run = 0; run < RUNS; run++)); do
    for ((i = 0; i < 3; i++)); do
        observe=${OBSERVERS[$(((run + i) % 3))]}
        line=$("$BIN" --connect "$ZK" --observe "$observe" --cycles "$CYCLES" --json)
        echo "$line" | tee -a "$OUT/runs.jsonl"
    done
done
echo "# load at the end $(cut -d' ' -f1-3 /proc/loadavg)"

python3 - "$OUT/runs.jsonl" <<'EOF'
import json, statistics, sys
runs = [json.loads(l) for l in open(sys.argv[1]) if l.strip()]
by = {}
for r in runs:
    by.setdefault(r["observe"], []).append(r)
base = statistics.median(r["cycles_per_sec"] for r in by["none"])
print("| observer | runs | cycles/s (median) | p50 cycle µs (median) | p99 cycle µs (median) | ÷ none | cycles/s per run |")
print("|---|---:|---:|---:|---:|---:|---|")
for name in ["none", "recorder", "subscriber"]:
    rs = by.get(name, [])
    if not rs:
        continue
    cps = statistics.median(r["cycles_per_sec"] for r in rs)
    p50 = statistics.median(r["p50_us"] for r in rs)
    p99 = statistics.median(r["p99_us"] for r in rs)
    each = ", ".join(f"{r['cycles_per_sec']:,.0f}" for r in rs)
    print(f"| {name} | {len(rs)} | {cps:,.0f} | {p50:.1f} | {p99:.1f} | {cps / base:.3f}× | {each} |")
EOF
