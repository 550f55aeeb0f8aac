#!/usr/bin/env bash
# Side-by-side benchmark: zoolock vs Curator 5.4.0 vs zookeeper-client 0.11 (Rust)
# vs the raw protocol limit, in one run against one throwaway ZooKeeper
# (forceSync=no) on a free loopback port.
#
#   bash scripts/bench-vs-peers.sh
#
# Runs scripts/install-deps.sh when ZooKeeper, Curator's jars or javac are missing,
# builds `zoolock` and `zk-rawcycle` (release), `zkclient-bench` (bench/zkclient, its
# own workspace: zookeeper-client comes from crates.io), compiles
# bench/java/CuratorBench.java against Debian's jars, then runs every comparison
# BENCH_RUNS times, interleaved (the sides in turn, the order flipped on every other
# run, so slow phases of a shared machine hit every side), after one unrecorded round
# that warms the server's JVM, and prints medians and ratios:
#
#   mutex-uncontended, acked release   zoolock vs raw 2rtt (≥0.9× in every run, p99 ≤2× raw
#                                      p99), vs zookeeper-client with its release awaited
#                                      (≥1.5×); vs raw 3rtt and Curator for information
#   mutex-uncontended, pipelined       zoolock --pipelined-release vs raw 1rtt (≥0.9× in
#                                      every run); zookeeper-client's drop-release beside it
#   mutex-contended, K clients         zoolock vs zookeeper-client (≥1.25×), vs Curator (≥2×),
#                                      vs the raw K-session handoff chain (≥0.85×)
#   read-lock                          zoolock vs Curator (≥2×)
#   semaphore, L leases                zoolock vs Curator (≥2×)
#   blocking API                       zoolock's uncontended mutex through zoolock-blocking
#                                      (`zl-blocking-cycle`), acked and pipelined, beside the
#                                      async runs in the same groups (information)
#   held-node watch                    zoolock's mutex (acked), contended mutex and semaphore
#                                      with and without the watch on held nodes
#                                      (--no-held-watch): its cost in cycles/s and requests
#   waiters                            zoolock once at M and once at 10·M waiters (10·P paths):
#                                      0 FIFO violations, 0 leftovers, RSS and drain time per
#                                      waiter at 10·M within 1.5× of those at M
#   held-10k, held-100k                N distinct locks held at once by one session (N tasks,
#                                      one lock each; N = BENCH_HELD and BENCH_HELD_SCALED):
#                                      time to acquire all and to release all, RSS per held
#                                      lock (and per idle registered zoolock handle), CPU;
#                                      zoolock vs zookeeper-client (acquire rate ≥1.2×,
#                                      ≤2,500 B/lock; 100k: all acquired and released in
#                                      <120 s); Curator at BENCH_CURATOR_HELD locks in the
#                                      held-10k group (a thread per held lock: information)
#   tasks                              K = 1, 16, 128 tasks on one session each cycling its
#                                      own lock: cycles/s, zoolock vs zookeeper-client (128:
#                                      ≥1.0×); Curator at 128 threads (information)
#
# Every run also records the requests the server received during it (ZooKeeper's
# `mntr` zk_packets_received, before and after), divided by the cycles run
# (warm-up included): the request count per cycle or handoff of each side, which
# does not depend on the machine's load.
#
# Everything lands in BENCH_OUT: raw.jsonl (every JSON line, with "server_requests"
# added), runs.tsv (key, run, status, JSON or reason), runs/ (each run's stdout and
# stderr), table.md (machine, versions and the tables, ready for BENCHMARKS.md),
# table.txt, summary.json (the medians), build.log, javac.log, zk-server.log.
#
# A run that fails (non-zero exit, no JSON line, timeout) is shown as FAILED and makes
# the script exit 1 at the end; the other runs still go ahead. Missed targets are
# reported, and fail the script only with BENCH_STRICT=1 (exit 3).
#
# Environment:
#   BENCH_RUNS=3                 runs per comparison
#   BENCH_CYCLES=5000            cycles per uncontended / read-lock / semaphore run
#   BENCH_CONTENDED_CYCLES=3000  acquisitions per mutex-contended run
#   BENCH_CLIENTS=8              sessions in mutex-contended
#   BENCH_LEASES=3               semaphore leases
#   BENCH_WAITERS=10000          waiters workload: waiters (and 10× as many) ...
#   BENCH_PATHS=100              ... spread over this many mutex paths (and 10× as many)
#   BENCH_SCALE=10               the factor of the second waiters run (1: skip it)
#   BENCH_HELD=10000             held-10k: locks held at once
#   BENCH_HELD_SCALED=100000     held-100k: locks held at once
#   BENCH_CURATOR_HELD=1000      Curator's held row (a thread per lock)
#   BENCH_TASK_CYCLES=5000       cycles per tasks run (over all K tasks)
#   BENCH_RUN_TIMEOUT=300        seconds before one run is killed and counted FAILED
#   BENCH_SERVER_WARMUP=1        one unrecorded round of every comparison before run 1 (0: none)
#   BENCH_OUT=DIR                output folder (default: a fresh mktemp folder)
#   BENCH_STRICT=1               exit 3 when a target is missed
#   BENCH_ONLY="A B"             run only these comparisons: mutex-acked mutex-pipelined
#                                contended read-lock semaphore waiters held-10k
#                                held-100k tasks (default: all)
#   BENCH_BASELINE=REV           also run zoolock as of git revision REV (built in a throwaway
#                                worktree): its runs (keys zl0-*) join the mutex-acked,
#                                mutex-pipelined, contended, read-lock, semaphore, waiters and
#                                held-10k comparisons, interleaved with the current tree's, and the
#                                report shows now ÷ then beside each side's run-to-run swing (for
#                                held-10k: RSS per held lock and per idle handle, which must not grow)
#   BENCH_JAVA_OPTS="..."        extra JVM options for CuratorBench
#   ZK_JAVA_DIR=PATH             where the jars live (default /usr/share/java)
#   CARGO_TARGET_DIR             honoured when locating the release binaries
set -euo pipefail

ROOT=$(cd "$(dirname "${BASH_SOURCE[0]}")/.." && pwd -P)
cd "$ROOT"

die() {
    echo "bench-vs-peers: $*" >&2
    exit 2
}

positive() {
    local name=$1 value=$2
    [[ $value =~ ^[1-9][0-9]*$ ]] || die "$name must be a positive whole number, not '$value'"
}

RUNS=${BENCH_RUNS:-3}
CYCLES=${BENCH_CYCLES:-5000}
CONTENDED_CYCLES=${BENCH_CONTENDED_CYCLES:-3000}
CLIENTS=${BENCH_CLIENTS:-8}
LEASES=${BENCH_LEASES:-3}
WAITERS=${BENCH_WAITERS:-10000}
PATHS=${BENCH_PATHS:-100}
SCALE=${BENCH_SCALE:-10}
RUN_TIMEOUT=${BENCH_RUN_TIMEOUT:-300}
HELD=${BENCH_HELD:-10000}
HELD_SCALED=${BENCH_HELD_SCALED:-100000}
CURATOR_HELD=${BENCH_CURATOR_HELD:-1000}
TASK_CYCLES=${BENCH_TASK_CYCLES:-5000}
BASELINE=${BENCH_BASELINE:-}
AS_BASELINE=0
# ZooKeeper's JVM compiles its request path during the first thousands of
# requests; without an unrecorded round first, the side that runs first in run 1
# (zoolock: run 1 goes in forward order) bears that warm-up alone, which is what
# the slowest-run ratios then pick up.
SERVER_WARMUP=${BENCH_SERVER_WARMUP:-1}
WARMING=0
# Every side runs this many uncounted cycles first (their defaults).
WARMUP_CYCLES=200
for v in RUNS CYCLES CONTENDED_CYCLES CLIENTS LEASES WAITERS PATHS SCALE RUN_TIMEOUT HELD HELD_SCALED CURATOR_HELD \
    TASK_CYCLES; do
    positive "BENCH_$v" "${!v}"
done
[[ $SERVER_WARMUP =~ ^[01]$ ]] || die "BENCH_SERVER_WARMUP must be 0 or 1, not '$SERVER_WARMUP'"
JAVA_DIR=${ZK_JAVA_DIR:-/usr/share/java}
read -r -a JAVA_OPTS <<<"${BENCH_JAVA_OPTS:-}"

command -v cargo >/dev/null 2>&1 || die "cargo not found"
# A fresh machine: the server, Curator's jars and javac come from install-deps.sh.
need_deps=0
for jar in curator-recipes curator-framework curator-client zookeeper zookeeper-jute guava slf4j-api slf4j-simple; do
    [[ -f $JAVA_DIR/$jar.jar ]] || need_deps=1
done
command -v javac >/dev/null 2>&1 || need_deps=1
command -v python3 >/dev/null 2>&1 || need_deps=1
if ((need_deps)); then
    echo "installing the missing dependencies (scripts/install-deps.sh)"
    bash "$ROOT/scripts/install-deps.sh" || die "scripts/install-deps.sh failed"
fi
command -v python3 >/dev/null 2>&1 || die "python3 is needed to parse the JSON lines"
command -v cargo >/dev/null 2>&1 || die "cargo not found"
command -v timeout >/dev/null 2>&1 || die "timeout (coreutils) not found"

if [[ -n ${BENCH_OUT:-} ]]; then
    mkdir -p "$BENCH_OUT"
    OUT=$(cd "$BENCH_OUT" && pwd -P)
else
    OUT=$(mktemp -d "${TMPDIR:-/tmp}/zoolock-bench.XXXXXX")
fi
mkdir -p "$OUT/runs"
: >"$OUT/raw.jsonl"
: >"$OUT/runs.tsv"
echo "output folder: $OUT"

ZK_DIR=$(mktemp -d "${TMPDIR:-/tmp}/zoolock-bench-zk.XXXXXX")
ZK=""

cleanup() {
    local rc=$?
    trap - EXIT INT TERM
    if [[ -f $ZK_DIR/pid ]]; then
        bash "$ROOT/scripts/zk-server.sh" stop "$ZK_DIR" >/dev/null 2>&1 ||
            echo "bench-vs-peers: could not stop the ZooKeeper in $ZK_DIR" >&2
    fi
    if [[ -f $ZK_DIR/server.log ]]; then
        cp "$ZK_DIR/server.log" "$OUT/zk-server.log" 2>/dev/null || true
    fi
    rm -rf "$ZK_DIR"
    exit "$rc"
}
trap cleanup EXIT
trap 'exit 130' INT
trap 'exit 143' TERM

# ---- machine and versions ------------------------------------------------------------

pkg_version() {
    dpkg-query -W -f='${Version}' "$1" 2>/dev/null || echo "not installed"
}

CPU=$(grep -m1 '^model name' /proc/cpuinfo 2>/dev/null | cut -d: -f2- | sed 's/^ *//' || true)
RAM=$(awk '/^MemTotal:/ { printf "%.1f GiB", $2 / 1048576 }' /proc/meminfo 2>/dev/null || true)
GIT_REV=$(git rev-parse --short HEAD 2>/dev/null || echo unknown)
if [[ -n $(git status --porcelain 2>/dev/null | head -n 1) ]]; then GIT_REV+=" (uncommitted changes)"; fi
{
    echo "- Machine: $(nproc) cores (\`nproc\`), ${CPU:-unknown CPU}, ${RAM:-unknown} RAM, Linux $(uname -r)"
    echo "- Date: $(date -u '+%Y-%m-%d %H:%M UTC'); load average at start: $(cut -d' ' -f1-3 /proc/loadavg 2>/dev/null || echo unknown)"
    echo "- ZooKeeper: Debian \`zookeeper\` $(pkg_version zookeeper) (standalone, loopback, forceSync=no)"
    echo "- Curator: Debian \`libcurator-recipes-java\` $(pkg_version libcurator-recipes-java)," \
        "$(java -version 2>&1 | head -n 1 || echo 'java not found')"
    echo "- zookeeper-client: $(sed -n 's/^zookeeper-client = { version = "=\([^"]*\)".*/\1/p' "$ROOT/bench/zkclient/Cargo.toml")" \
        "(crates.io, its Curator-named lock \`LockPrefix::new_curator\`, tasks on a current-thread tokio runtime as \`zoolock bench\`; its sockets run through async-net, whose reactor has a thread of its own)"
    echo "- Rust: $(rustc -V 2>/dev/null || echo 'rustc not found'), release profile; zoolock at $GIT_REV"
    [[ -z $BASELINE ]] || echo "- Baseline (\`zl0-*\` runs): zoolock at $(git rev-parse --short "$BASELINE^{commit}" 2>/dev/null || echo "$BASELINE")"
    echo "- Runs: $RUNS per comparison, interleaved; medians shown. Cycles: $CYCLES" \
        "(mutex-contended: $CONTENDED_CYCLES acquisitions over $CLIENTS sessions; semaphore: $LEASES leases;" \
        "waiters: $WAITERS on $PATHS paths and $((WAITERS * SCALE)) on $((PATHS * SCALE)), once each;" \
        "held: $HELD and $HELD_SCALED locks, Curator $CURATOR_HELD; tasks: $TASK_CYCLES cycles); 200 warm-up cycles each"
} >"$OUT/machine.md"
cat "$OUT/machine.md"

# ---- build ---------------------------------------------------------------------------

TARGET_DIR=${CARGO_TARGET_DIR:-$ROOT/target}
[[ $TARGET_DIR == /* ]] || TARGET_DIR=$ROOT/$TARGET_DIR
ZOOLOCK_BIN=$TARGET_DIR/release/zoolock
RAWCYCLE_BIN=$TARGET_DIR/release/zk-rawcycle
BLOCKING_BIN=$TARGET_DIR/release/zl-blocking-cycle
ZKCLIENT_BIN=$TARGET_DIR/release/zkclient-bench
ZOOLOCK_OK=1
CURATOR_OK=1
ZKCLIENT_OK=1

echo "building release binaries (log: $OUT/build.log)"
if ! cargo build --release -p zoolock -p zoolock-bench >"$OUT/build.log" 2>&1; then
    tail -n 20 "$OUT/build.log" >&2
    echo "bench-vs-peers: building zoolock failed; its runs will show as FAILED" >&2
    ZOOLOCK_OK=0
    cargo build --release -p zoolock-bench >>"$OUT/build.log" 2>&1 ||
        die "building zk-rawcycle failed too (see $OUT/build.log)"
fi
[[ -x $RAWCYCLE_BIN ]] || die "no $RAWCYCLE_BIN after the build"
if ((ZOOLOCK_OK)) && [[ ! -x $ZOOLOCK_BIN || ! -x $BLOCKING_BIN ]]; then ZOOLOCK_OK=0; fi
BASELINE_BIN=$OUT/zoolock-baseline
BASELINE_OK=0
if [[ -n $BASELINE ]]; then
    echo "building zoolock at $BASELINE (log: $OUT/build.log)"
    rev=$(git rev-parse --verify --quiet "$BASELINE^{commit}") || die "BENCH_BASELINE: no commit '$BASELINE'"
    src=$OUT/baseline-src
    git worktree add --detach --quiet "$src" "$rev" >>"$OUT/build.log" 2>&1 || die "BENCH_BASELINE: cannot check out $rev"
    if cargo build --release -p zoolock --manifest-path "$src/Cargo.toml" --target-dir "$TARGET_DIR/baseline" \
        >>"$OUT/build.log" 2>&1 && cp "$TARGET_DIR/baseline/release/zoolock" "$BASELINE_BIN"; then
        BASELINE_OK=1
    else
        tail -n 20 "$OUT/build.log" >&2
        echo "bench-vs-peers: building zoolock at $BASELINE failed; its runs will show as FAILED" >&2
    fi
    git worktree remove --force "$src" >>"$OUT/build.log" 2>&1 || true
fi
echo "building zkclient-bench (bench/zkclient, its own workspace; log: $OUT/build.log)"
if ! cargo build --release --manifest-path "$ROOT/bench/zkclient/Cargo.toml" --target-dir "$TARGET_DIR" \
    >>"$OUT/build.log" 2>&1 || [[ ! -x $ZKCLIENT_BIN ]]; then
    tail -n 20 "$OUT/build.log" >&2
    echo "bench-vs-peers: building zkclient-bench failed; the zookeeper-client runs will show as FAILED" >&2
    ZKCLIENT_OK=0
fi

JAR_CP=""
for jar in curator-recipes curator-framework curator-client zookeeper zookeeper-jute guava slf4j-api slf4j-simple; do
    [[ -f $JAVA_DIR/$jar.jar ]] || die "missing $JAVA_DIR/$jar.jar (scripts/install-deps.sh did not provide it)"
    JAR_CP+="${JAR_CP:+:}$JAVA_DIR/$jar.jar"
done
CLASSES=$TARGET_DIR/bench-java
echo "compiling bench/java/CuratorBench.java (log: $OUT/javac.log)"
rm -rf "$CLASSES"
mkdir -p "$CLASSES"
if ! javac -nowarn -Xlint:-path -encoding UTF-8 -cp "$JAR_CP" -d "$CLASSES" \
    "$ROOT/bench/java/CuratorBench.java" >"$OUT/javac.log" 2>&1; then
    cat "$OUT/javac.log" >&2
    echo "bench-vs-peers: javac failed; the Curator runs will show as FAILED" >&2
    CURATOR_OK=0
fi

# ---- server --------------------------------------------------------------------------

ZK=$(ZK_FORCE_SYNC=no bash "$ROOT/scripts/zk-server.sh" start "$ZK_DIR")
echo "ZooKeeper at $ZK"

# ---- runs ----------------------------------------------------------------------------

FAILURES=0

# record KEY RUN STATUS DETAIL: one line of runs.tsv (DETAIL is a JSON line or a reason).
record() {
    local detail=${4//$'\t'/ }
    printf '%s\t%s\t%s\t%s\n' "$1" "$2" "$3" "${detail//$'\n'/ }" >>"$OUT/runs.tsv"
}

failed() {
    local key=$1 run=$2 reason=$3
    record "$key" "$run" FAILED "$reason"
    FAILURES=$((FAILURES + 1))
    printf '  %-20s run %d/%d  FAILED: %s\n' "$key" "$run" "$RUNS" "$reason"
}

# server_requests: the requests the server has received so far (mntr), or -1.
server_requests() {
    python3 - "$ZK" <<'PY' 2>/dev/null || echo -1
import socket, sys
host, port = sys.argv[1].rsplit(":", 1)
with socket.create_connection((host, int(port)), timeout=5) as s:
    s.sendall(b"mntr")
    data = b""
    while chunk := s.recv(65536):
        data += chunk
for line in data.decode().splitlines():
    k, _, v = line.partition("\t")
    if k == "zk_packets_received":
        print(int(v))
        break
else:
    print(-1)
PY
}

# measure KEY RUN CMD...: runs one benchmark and keeps its last JSON line, with
# "server_requests" (received by the server during the run) added.
measure() {
    local key=$1 run=$2 base line rc=0 reason summary before after
    shift 2
    if ((WARMING)); then
        timeout --kill-after=10 "$RUN_TIMEOUT" "$@" </dev/null >/dev/null 2>&1 || rc=$?
        printf '  %-20s server warm-up%s\n' "$key" "$( ((rc == 0)) || echo " (exit $rc)")"
        return 0
    fi
    base=$OUT/runs/$key.$run
    before=$(server_requests)
    timeout --kill-after=10 "$RUN_TIMEOUT" "$@" </dev/null >"$base.out" 2>"$base.err" || rc=$?
    after=$(server_requests)
    line=$(grep '^{' "$base.out" | tail -n 1 || true)
    if [[ -n $line ]] && ((before >= 0 && after >= before)); then
        line=$(python3 -c '
import json, sys
v = json.loads(sys.argv[1])
v["server_requests"] = int(sys.argv[2])
print(json.dumps(v, separators=(",", ":")))' "$line" "$((after - before))" 2>/dev/null || echo "$line")
    fi
    if ((rc == 0)) && [[ -n $line ]] &&
        summary=$(python3 -c '
import json, sys
v = json.loads(sys.argv[1])
if not isinstance(v, dict):
    raise SystemExit(1)
parts = []
for k, unit in (("cycles_per_sec", " cycles/s"), ("p50_us", " us p50"), ("p99_us", " us p99"),
                ("drain_ms", " ms drain"), ("rss_mib", " MiB rss"), ("acquire_s", " s acquire"),
                ("release_s", " s release"), ("bytes_per_lock", " B/lock"), ("cpu_s", " s cpu"), ("fifo_violations", " FIFO violations"),
                ("leftover_nodes", " leftover nodes")):
    if isinstance(v.get(k), (int, float)):
        parts.append(f"{v[k]:,.1f}{unit}" if isinstance(v[k], float) else f"{v[k]}{unit}")
print(", ".join(parts))' "$line" 2>/dev/null); then
        printf '%s\n' "$line" >>"$OUT/raw.jsonl"
        record "$key" "$run" ok "$line"
        printf '  %-20s run %d/%d  %s\n' "$key" "$run" "$RUNS" "$summary"
        return 0
    fi
    if ((rc == 124 || rc == 137)); then
        reason="timed out after ${RUN_TIMEOUT}s"
    elif ((rc != 0)); then
        reason=$({ grep -v -e '^[[:space:]]*at ' -e '^[[:space:]]*$' "$base.err" || true; } | tail -n 1 | cut -c1-200)
        reason="exit $rc: ${reason:-no message on stderr}"
    else
        reason="no JSON line on stdout"
    fi
    failed "$key" "$run" "$reason (see $base.err)"
}

# side_run BUILT WHY KEY RUN CMD...: measure CMD, or count the run FAILED for WHY
# when the side did not build (BUILT is 0).
side_run() {
    local built=$1 why=$2 key=$3 run=$4
    shift 4
    if ((built)); then
        measure "$key" "$run" "$@"
    else
        failed "$key" "$run" "$why"
    fi
}

zoolock_run() {
    local key=$1 run=$2
    shift 2
    if ((AS_BASELINE)); then
        side_run "$BASELINE_OK" "zoolock at $BASELINE did not build" "zl0-${key#zl-}" "$run" "$BASELINE_BIN" \
            --connect "$ZK" bench "$@" --json
    else
        side_run "$ZOOLOCK_OK" "zoolock did not build" "$key" "$run" "$ZOOLOCK_BIN" --connect "$ZK" bench "$@" --json
    fi
}

# zoolock_blocking_run KEY RUN ARGS...: zoolock's mutex cycle through zoolock-blocking.
zoolock_blocking_run() {
    local key=$1 run=$2
    shift 2
    side_run "$ZOOLOCK_OK" "zoolock did not build" "$key" "$run" "$BLOCKING_BIN" --connect "$ZK" "$@" --json
}

curator_run() {
    local key=$1 run=$2
    shift 2
    side_run "$CURATOR_OK" "CuratorBench did not compile" "$key" "$run" java "${JAVA_OPTS[@]}" \
        -Dorg.slf4j.simpleLogger.defaultLogLevel=warn -cp "$CLASSES:$JAR_CP" CuratorBench "$ZK" "$@"
}

zkclient_run() {
    local key=$1 run=$2
    shift 2
    side_run "$ZKCLIENT_OK" "zkclient-bench did not build" "$key" "$run" "$ZKCLIENT_BIN" --connect "$ZK" "$@" --json
}

raw_run() {
    local plan=$1 run=$2
    if [[ $plan == chain ]]; then
        measure raw-chain "$run" "$RAWCYCLE_BIN" --connect "$ZK" --plan chain --clients "$CLIENTS" \
            --cycles "$CONTENDED_CYCLES" --json
    else
        measure "raw-$plan" "$run" "$RAWCYCLE_BIN" --connect "$ZK" --plan "$plan" --cycles "$CYCLES" --json
    fi
}

# step NAME RUN: one benchmark of the matrix, by name.
step() {
    local run=$2
    case $1 in
    zl0-*) AS_BASELINE=1 step "zl-${1#zl0-}" "$run" ;;
    zl-mutex-acked) zoolock_run zl-mutex-acked "$run" --workload mutex-uncontended --cycles "$CYCLES" ;;
    zl-mutex-pipelined)
        zoolock_run zl-mutex-pipelined "$run" --workload mutex-uncontended --cycles "$CYCLES" --pipelined-release
        ;;
    zlb-mutex-acked) zoolock_blocking_run zlb-mutex-acked "$run" --cycles "$CYCLES" ;;
    zlb-mutex-pipelined) zoolock_blocking_run zlb-mutex-pipelined "$run" --cycles "$CYCLES" --pipelined-release ;;
    zl-contended)
        zoolock_run zl-contended "$run" --workload mutex-contended --cycles "$CONTENDED_CYCLES" --clients "$CLIENTS"
        ;;
    zl-mutex-acked-nowatch)
        zoolock_run zl-mutex-acked-nowatch "$run" --workload mutex-uncontended --cycles "$CYCLES" --no-held-watch
        ;;
    zl-contended-nowatch)
        zoolock_run zl-contended-nowatch "$run" --workload mutex-contended --cycles "$CONTENDED_CYCLES" \
            --clients "$CLIENTS" --no-held-watch
        ;;
    zl-semaphore-nowatch)
        zoolock_run zl-semaphore-nowatch "$run" --workload semaphore --cycles "$CYCLES" --leases "$LEASES" \
            --no-held-watch
        ;;
    zl-read-lock) zoolock_run zl-read-lock "$run" --workload read-lock --cycles "$CYCLES" ;;
    zl-semaphore) zoolock_run zl-semaphore "$run" --workload semaphore --cycles "$CYCLES" --leases "$LEASES" ;;
    cur-mutex) curator_run cur-mutex "$run" mutex-uncontended "$CYCLES" ;;
    cur-contended) curator_run cur-contended "$run" mutex-contended "$CONTENDED_CYCLES" "$CLIENTS" ;;
    cur-read-lock) curator_run cur-read-lock "$run" read-lock "$CYCLES" ;;
    cur-semaphore) curator_run cur-semaphore "$run" semaphore "$CYCLES" 1 "$LEASES" ;;
    zkc-mutex-acked) zkclient_run zkc-mutex-acked "$run" --workload mutex-uncontended --cycles "$CYCLES" ;;
    zkc-mutex-drop)
        zkclient_run zkc-mutex-drop "$run" --workload mutex-uncontended --cycles "$CYCLES" --release drop
        ;;
    zkc-contended)
        zkclient_run zkc-contended "$run" --workload mutex-contended --cycles "$CONTENDED_CYCLES" --clients "$CLIENTS"
        ;;
    zl-held-10k) zoolock_run zl-held-10k "$run" --workload held --locks "$HELD" ;;
    zkc-held-10k) zkclient_run zkc-held-10k "$run" --workload held --locks "$HELD" ;;
    cur-held) curator_run cur-held "$run" held "$CURATOR_HELD" ;;
    zl-held-100k) zoolock_run zl-held-100k "$run" --workload held --locks "$HELD_SCALED" ;;
    zkc-held-100k) zkclient_run zkc-held-100k "$run" --workload held --locks "$HELD_SCALED" ;;
    zl-tasks-* | zkc-tasks-*)
        local k=${1##*-} side=${1%%-*}
        if [[ $side == zl ]]; then
            zoolock_run "$1" "$run" --workload tasks --tasks "$k" --cycles "$TASK_CYCLES"
        else
            zkclient_run "$1" "$run" --workload tasks --tasks "$k" --cycles "$TASK_CYCLES"
        fi
        ;;
    cur-tasks-128) curator_run cur-tasks-128 "$run" tasks "$TASK_CYCLES" 128 ;;
    raw-3rtt | raw-2rtt | raw-1rtt | raw-chain) raw_run "${1#raw-}" "$run" ;;
    *) die "unknown step $1" ;;
    esac
}

# group RUN STEP...: the steps of one comparison, reversed on even runs.
group() {
    local run=$1 i
    shift
    local -a steps=("$@")
    if ((run % 2 == 0)); then
        for ((i = ${#steps[@]} - 1; i >= 0; i--)); do step "${steps[i]}" "$run"; done
    else
        for i in "${steps[@]}"; do step "$i" "$run"; done
    fi
}

# wanted NAME: whether comparison NAME runs (BENCH_ONLY lists them; empty: all).
wanted() {
    [[ -z ${BENCH_ONLY:-} || " $BENCH_ONLY " == *" $1 "* ]]
}

# baseline_of NAME: the baseline's run of NAME (BENCH_BASELINE), if there is one.
baseline_of() {
    [[ -z $BASELINE ]] || echo "zl0-${1#zl-}"
}

# every_group RUN: each comparison once.
every_group() {
    ! wanted mutex-acked ||
        group "$1" zl-mutex-acked zlb-mutex-acked cur-mutex zkc-mutex-acked raw-2rtt raw-3rtt zl-mutex-acked-nowatch \
            $(baseline_of zl-mutex-acked)
    ! wanted mutex-pipelined ||
        group "$1" zl-mutex-pipelined zlb-mutex-pipelined zkc-mutex-drop raw-1rtt $(baseline_of zl-mutex-pipelined)
    ! wanted contended ||
        group "$1" zl-contended cur-contended zkc-contended raw-chain zl-contended-nowatch $(baseline_of zl-contended)
    ! wanted read-lock || group "$1" zl-read-lock cur-read-lock $(baseline_of zl-read-lock)
    ! wanted semaphore || group "$1" zl-semaphore cur-semaphore zl-semaphore-nowatch $(baseline_of zl-semaphore)
    ! wanted held-10k || group "$1" zl-held-10k zkc-held-10k cur-held $(baseline_of zl-held-10k)
    # The 10k round warms the server; a 100k warm-up round would only add minutes.
    ! wanted held-100k || ((WARMING)) || group "$1" zl-held-100k zkc-held-100k
    ! wanted tasks || group "$1" zl-tasks-1 zkc-tasks-1 zl-tasks-16 zkc-tasks-16 zl-tasks-128 zkc-tasks-128 cur-tasks-128
}

started=$SECONDS
if ((SERVER_WARMUP)); then
    echo "== server warm-up (not recorded)"
    WARMING=1
    every_group 1
    WARMING=0
fi
for ((run = 1; run <= RUNS; run++)); do
    echo "== run $run/$RUNS"
    every_group "$run"
done
if wanted waiters; then
    echo "== waiters (once)"
    RUNS_SAVED=$RUNS
    RUNS=1
    for AS_BASELINE in 0 $([[ -z $BASELINE ]] || echo 1); do
        zoolock_run zl-waiters 1 --workload waiters --waiters "$WAITERS" --paths "$PATHS"
        if ((SCALE > 1)); then
            zoolock_run zl-waiters-scaled 1 --workload waiters --waiters "$((WAITERS * SCALE))" \
                --paths "$((PATHS * SCALE))"
        fi
    done
    AS_BASELINE=0
    RUNS=$RUNS_SAVED
fi
echo "benchmarks took $((SECONDS - started)) s"

# ---- report --------------------------------------------------------------------------

report_rc=0
BENCH_BASELINE=$BASELINE python3 "$ROOT/scripts/bench-report.py" "$OUT" "$RUNS" "$CLIENTS" "$LEASES" "$WARMUP_CYCLES" ||
    report_rc=$?

echo
echo "Markdown table: $OUT/table.md"
echo "raw JSON lines: $OUT/raw.jsonl"
if ((report_rc != 0 && report_rc != 3)); then
    echo "bench-vs-peers: the report failed (exit $report_rc)" >&2
    exit 1
fi
if ((FAILURES > 0)); then
    echo "bench-vs-peers: $FAILURES run(s) FAILED" >&2
    exit 1
fi
if ((report_rc == 3)) && [[ ${BENCH_STRICT:-0} == 1 ]]; then
    echo "bench-vs-peers: targets missed (BENCH_STRICT=1)" >&2
    exit 3
fi
