#!/usr/bin/env bash
# Side-by-side benchmark: zoolock vs Curator 5.4.0 vs the raw protocol limit, in one run
# against one throwaway ZooKeeper (forceSync=no) on a free loopback port.
#
#   bash scripts/bench-vs-curator.sh
#
# Builds `zoolock` and `zk-rawcycle` (release), compiles bench/java/CuratorBench.java
# against Debian's jars, then runs every comparison BENCH_RUNS times, interleaved
# (zoolock, Curator and raw in turn, the order flipped on every other run, so slow
# phases of a shared machine hit every side), and prints medians and ratios:
#
#   mutex-uncontended, acked release   zoolock vs raw 2rtt (≥0.9×, p99 ≤2× raw p99),
#                                      vs raw 3rtt and vs Curator (for information)
#   mutex-uncontended, pipelined       zoolock --pipelined-release vs raw 1rtt (≥0.9×)
#   mutex-contended, K clients         zoolock vs Curator (≥2×)
#   read-lock                          zoolock vs Curator (≥2×)
#   semaphore, L leases                zoolock vs Curator (≥2×)
#   waiters                            zoolock once (rss < 64 MiB, 0 FIFO violations, 0 leftovers)
#
# Everything lands in BENCH_OUT: raw.jsonl (every JSON line as printed), runs.tsv
# (key, run, status, JSON or reason), runs/ (each run's stdout and stderr),
# table.md (machine, versions and the table, ready for BENCHMARKS.md), table.txt,
# summary.json (the medians), build.log, javac.log, zk-server.log.
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
#   BENCH_WAITERS=10000          waiters workload: waiters ...
#   BENCH_PATHS=100              ... spread over this many mutex paths
#   BENCH_RUN_TIMEOUT=300        seconds before one run is killed and counted FAILED
#   BENCH_OUT=DIR                output folder (default: a fresh mktemp folder)
#   BENCH_STRICT=1               exit 3 when a target is missed
#   BENCH_JAVA_OPTS="..."        extra JVM options for CuratorBench
#   ZK_JAVA_DIR=PATH             where the jars live (default /usr/share/java)
#   CARGO_TARGET_DIR             honoured when locating the release binaries
set -euo pipefail

ROOT=$(cd "$(dirname "${BASH_SOURCE[0]}")/.." && pwd -P)
cd "$ROOT"

die() {
    echo "bench-vs-curator: $*" >&2
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
RUN_TIMEOUT=${BENCH_RUN_TIMEOUT:-300}
for v in RUNS CYCLES CONTENDED_CYCLES CLIENTS LEASES WAITERS PATHS RUN_TIMEOUT; do
    positive "BENCH_$v" "${!v}"
done
JAVA_DIR=${ZK_JAVA_DIR:-/usr/share/java}
read -r -a JAVA_OPTS <<<"${BENCH_JAVA_OPTS:-}"

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
            echo "bench-vs-curator: could not stop the ZooKeeper in $ZK_DIR" >&2
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
    echo "- Rust: $(rustc -V 2>/dev/null || echo 'rustc not found'), release profile; zoolock at $GIT_REV"
    echo "- Runs: $RUNS per comparison, interleaved; medians shown. Cycles: $CYCLES" \
        "(mutex-contended: $CONTENDED_CYCLES acquisitions over $CLIENTS sessions; semaphore: $LEASES leases;" \
        "waiters: $WAITERS on $PATHS paths, once); 200 warm-up cycles each"
} >"$OUT/machine.md"
cat "$OUT/machine.md"

# ---- build ---------------------------------------------------------------------------

TARGET_DIR=${CARGO_TARGET_DIR:-$ROOT/target}
[[ $TARGET_DIR == /* ]] || TARGET_DIR=$ROOT/$TARGET_DIR
ZOOLOCK_BIN=$TARGET_DIR/release/zoolock
RAWCYCLE_BIN=$TARGET_DIR/release/zk-rawcycle
ZOOLOCK_OK=1
CURATOR_OK=1

echo "building release binaries (log: $OUT/build.log)"
if ! cargo build --release -p zoolock -p zoolock-bench >"$OUT/build.log" 2>&1; then
    tail -n 20 "$OUT/build.log" >&2
    echo "bench-vs-curator: building zoolock failed; its runs will show as FAILED" >&2
    ZOOLOCK_OK=0
    cargo build --release -p zoolock-bench >>"$OUT/build.log" 2>&1 ||
        die "building zk-rawcycle failed too (see $OUT/build.log)"
fi
[[ -x $RAWCYCLE_BIN ]] || die "no $RAWCYCLE_BIN after the build"
if ((ZOOLOCK_OK)) && [[ ! -x $ZOOLOCK_BIN ]]; then ZOOLOCK_OK=0; fi

JAR_CP=""
for jar in curator-recipes curator-framework curator-client zookeeper zookeeper-jute guava slf4j-api slf4j-simple; do
    [[ -f $JAVA_DIR/$jar.jar ]] || die "missing $JAVA_DIR/$jar.jar (run scripts/install-deps.sh)"
    JAR_CP+="${JAR_CP:+:}$JAVA_DIR/$jar.jar"
done
CLASSES=$TARGET_DIR/bench-java
echo "compiling bench/java/CuratorBench.java (log: $OUT/javac.log)"
rm -rf "$CLASSES"
mkdir -p "$CLASSES"
if ! javac -nowarn -Xlint:-path -encoding UTF-8 -cp "$JAR_CP" -d "$CLASSES" \
    "$ROOT/bench/java/CuratorBench.java" >"$OUT/javac.log" 2>&1; then
    cat "$OUT/javac.log" >&2
    echo "bench-vs-curator: javac failed; the Curator runs will show as FAILED" >&2
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

# measure KEY RUN CMD...: runs one benchmark and keeps its last JSON line.
measure() {
    local key=$1 run=$2 base line rc=0 reason summary
    shift 2
    base=$OUT/runs/$key.$run
    timeout --kill-after=10 "$RUN_TIMEOUT" "$@" </dev/null >"$base.out" 2>"$base.err" || rc=$?
    line=$(grep '^{' "$base.out" | tail -n 1 || true)
    if ((rc == 0)) && [[ -n $line ]] &&
        summary=$(python3 -c '
import json, sys
v = json.loads(sys.argv[1])
if not isinstance(v, dict):
    raise SystemExit(1)
parts = []
for k, unit in (("cycles_per_sec", " cycles/s"), ("p50_us", " us p50"), ("p99_us", " us p99"),
                ("drain_ms", " ms drain"), ("rss_mib", " MiB rss"), ("fifo_violations", " FIFO violations"),
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

zoolock_run() {
    local key=$1 run=$2
    shift 2
    if ((ZOOLOCK_OK)); then
        measure "$key" "$run" "$ZOOLOCK_BIN" --connect "$ZK" bench "$@" --json
    else
        failed "$key" "$run" "zoolock did not build"
    fi
}

curator_run() {
    local key=$1 run=$2
    shift 2
    if ((CURATOR_OK)); then
        measure "$key" "$run" java "${JAVA_OPTS[@]}" -Dorg.slf4j.simpleLogger.defaultLogLevel=warn \
            -cp "$CLASSES:$JAR_CP" CuratorBench "$ZK" "$@"
    else
        failed "$key" "$run" "CuratorBench did not compile"
    fi
}

raw_run() {
    local plan=$1 run=$2
    measure "raw-$plan" "$run" "$RAWCYCLE_BIN" --connect "$ZK" --plan "$plan" --cycles "$CYCLES" --json
}

# step NAME RUN: one benchmark of the matrix, by name.
step() {
    local run=$2
    case $1 in
    zl-mutex-acked) zoolock_run zl-mutex-acked "$run" --workload mutex-uncontended --cycles "$CYCLES" ;;
    zl-mutex-pipelined)
        zoolock_run zl-mutex-pipelined "$run" --workload mutex-uncontended --cycles "$CYCLES" --pipelined-release
        ;;
    zl-contended)
        zoolock_run zl-contended "$run" --workload mutex-contended --cycles "$CONTENDED_CYCLES" --clients "$CLIENTS"
        ;;
    zl-read-lock) zoolock_run zl-read-lock "$run" --workload read-lock --cycles "$CYCLES" ;;
    zl-semaphore) zoolock_run zl-semaphore "$run" --workload semaphore --cycles "$CYCLES" --leases "$LEASES" ;;
    cur-mutex) curator_run cur-mutex "$run" mutex-uncontended "$CYCLES" ;;
    cur-contended) curator_run cur-contended "$run" mutex-contended "$CONTENDED_CYCLES" "$CLIENTS" ;;
    cur-read-lock) curator_run cur-read-lock "$run" read-lock "$CYCLES" ;;
    cur-semaphore) curator_run cur-semaphore "$run" semaphore "$CYCLES" 1 "$LEASES" ;;
    raw-3rtt | raw-2rtt | raw-1rtt) raw_run "${1#raw-}" "$run" ;;
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

started=$SECONDS
for ((run = 1; run <= RUNS; run++)); do
    echo "== run $run/$RUNS"
    group "$run" zl-mutex-acked cur-mutex raw-2rtt raw-3rtt
    group "$run" zl-mutex-pipelined raw-1rtt
    group "$run" zl-contended cur-contended
    group "$run" zl-read-lock cur-read-lock
    group "$run" zl-semaphore cur-semaphore
done
echo "== waiters (once)"
RUNS_SAVED=$RUNS
RUNS=1
zoolock_run zl-waiters 1 --workload waiters --waiters "$WAITERS" --paths "$PATHS"
RUNS=$RUNS_SAVED
echo "benchmarks took $((SECONDS - started)) s"

# ---- report --------------------------------------------------------------------------

report_rc=0
python3 - "$OUT" "$RUNS" "$CLIENTS" "$LEASES" "$WAITERS" "$PATHS" <<'PY' || report_rc=$?
import json, os, statistics, sys

out, runs, clients, leases, waiters, paths = sys.argv[1], int(sys.argv[2]), *sys.argv[3:7]

ok, failed = {}, {}
with open(os.path.join(out, "runs.tsv"), encoding="utf-8") as f:
    for raw in f:
        key, _run, status, detail = raw.rstrip("\n").split("\t", 3)
        if status == "ok":
            ok.setdefault(key, []).append(json.loads(detail))
        else:
            failed.setdefault(key, []).append(detail)

def med(key, field):
    vals = [r[field] for r in ok.get(key, []) if isinstance(r.get(field), (int, float))]
    return statistics.median(vals) if vals else None

def expected(key):
    return 1 if key == "zl-waiters" else runs

def runs_note(key):
    n_ok = len(ok.get(key, []))
    return "" if n_ok == expected(key) else f" ({n_ok}/{expected(key)} ok)"

def rate(key):
    v = med(key, "cycles_per_sec")
    return "FAILED" if v is None else f"{v:,.0f}/s{runs_note(key)}"

def lat(key):
    p50, p99 = med(key, "p50_us"), med(key, "p99_us")
    return "FAILED" if p50 is None or p99 is None else f"{p50:,.0f} / {p99:,.0f}"

def ratio(a, b):
    return None if a is None or b is None or b == 0 else a / b

rows, summary, missed = [], {}, 0

def row(name, zl, cur, raw, r, target, met, lats):
    rows.append([name, zl or "—", cur or "—", raw or "—", "—" if r is None else f"{r:.2f}×", target, met] + lats)

def verdict(r, test, inputs):
    global missed
    if r is None or any(len(ok.get(k, [])) == 0 for k in inputs):
        return "FAILED"
    if any(failed.get(k) for k in inputs):
        good = test(r)
        missed += 0 if good else 1
        return ("yes" if good else "NO") + " (some runs FAILED)"
    good = test(r)
    missed += 0 if good else 1
    return "yes" if good else "NO"

NO_LAT = ["—"]

# mutex-uncontended, acked release
zl, cur, r2, r3 = "zl-mutex-acked", "cur-mutex", "raw-2rtt", "raw-3rtt"
r = ratio(med(zl, "cycles_per_sec"), med(r2, "cycles_per_sec"))
row("mutex acked vs raw 2rtt", rate(zl), rate(cur), rate(r2), r, "≥ 0.9× raw",
    verdict(r, lambda x: x >= 0.9, [zl, r2]), [lat(zl), lat(cur), lat(r2)])
r = ratio(med(zl, "p99_us"), med(r2, "p99_us"))
z99, w99 = med(zl, "p99_us"), med(r2, "p99_us")
row("mutex acked p99 vs raw 2rtt p99",
    "FAILED" if z99 is None else f"{z99:,.0f} µs", None, "FAILED" if w99 is None else f"{w99:,.0f} µs", r,
    "≤ 2× raw p99", verdict(r, lambda x: x <= 2.0, [zl, r2]), ["", "", ""])
r = ratio(med(zl, "cycles_per_sec"), med(r3, "cycles_per_sec"))
row("mutex acked vs raw 3rtt", rate(zl), None, rate(r3), r, "(info)",
    "—", [lat(zl), "", lat(r3)])
r = ratio(med(zl, "cycles_per_sec"), med(cur, "cycles_per_sec"))
row("mutex acked vs Curator", rate(zl), rate(cur), None, r, "(info)", "—",
    [lat(zl), lat(cur), ""])
# pipelined release
zl, r1 = "zl-mutex-pipelined", "raw-1rtt"
r = ratio(med(zl, "cycles_per_sec"), med(r1, "cycles_per_sec"))
row("mutex pipelined vs raw 1rtt", rate(zl), None, rate(r1), r, "≥ 0.9× raw",
    verdict(r, lambda x: x >= 0.9, [zl, r1]), [lat(zl), "", lat(r1)])
# vs Curator
for name, zl, cur in ((f"mutex contended, {clients} clients", "zl-contended", "cur-contended"),
                      ("read-lock", "zl-read-lock", "cur-read-lock"),
                      (f"semaphore, {leases} leases", "zl-semaphore", "cur-semaphore")):
    r = ratio(med(zl, "cycles_per_sec"), med(cur, "cycles_per_sec"))
    row(name + " vs Curator", rate(zl), rate(cur), None, r, "≥ 2× Curator", verdict(r, lambda x: x >= 2.0, [zl, cur]),
        [lat(zl), lat(cur), ""])
# waiters
w = ok.get("zl-waiters", [None])[0]
if w is None:
    row(f"waiters, {waiters} on {paths} paths", "FAILED", None, None, None,
        "rss < 64 MiB, 0 FIFO violations, 0 leftovers", "FAILED", ["", "", ""])
else:
    good = (isinstance(w.get("rss_mib"), (int, float)) and w["rss_mib"] < 64
            and w.get("fifo_violations") == 0 and w.get("leftover_nodes") == 0)
    missed += 0 if good else 1
    def num(k):
        v = w.get(k)
        return f"{v:,.1f}" if isinstance(v, float) else str(v if v is not None else "?")
    desc = (f"drain {num('drain_ms')} ms, rss {num('rss_mib')} MiB, "
            f"{num('fifo_violations')} FIFO violations, {num('leftover_nodes')} leftovers")
    row(f"waiters, {w.get('waiters', waiters)} on {w.get('paths', paths)} paths", desc, None, None, None,
        "rss < 64 MiB, 0 FIFO violations, 0 leftovers", "yes" if good else "NO", ["", "", ""])

header = ["workload", "zoolock", "curator", "raw", "ratio", "target", "met?",
          "zoolock p50 / p99 µs", "curator p50 / p99 µs", "raw p50 / p99 µs"]

md = ["| " + " | ".join(header) + " |",
      "|" + "|".join(["---"] + ["---:"] * 4 + ["---", "---"] + ["---:"] * 3) + "|"]
md += ["| " + " | ".join(c.replace("|", "\\|") for c in r) + " |" for r in rows]
with open(os.path.join(out, "machine.md"), encoding="utf-8") as f:
    machine = f.read()
notes = [
    "",
    "ratio: zoolock ÷ the comparison (for the p99 row: zoolock p99 ÷ raw 2rtt p99). mutex = "
    "mutex-uncontended, one session. Acked release waits for the delete to be applied, as Curator's "
    "`release()` does; pipelined release lets it ride with the next acquire. mutex contended: cycles/s = "
    "acquisitions/s over all sessions, latency = acquire wait. raw: `zk-rawcycle`, one "
    "session, no client logic; 3rtt = create, getChildren, delete one after another (Curator's order), "
    "2rtt = create + getChildren pipelined then delete, 1rtt = all three in one write (an upper bound no "
    "lock can reach).",
]
failures = sorted(f"- `{k}`: {d}" for k, ds in failed.items() for d in ds)
try:
    with open("/proc/loadavg", encoding="utf-8") as f:
        notes += ["", "Load average at the end: " + " ".join(f.read().split()[:3]) + "."]
except OSError:
    pass
if failures:
    notes += ["", "Failed runs:", ""] + failures
with open(os.path.join(out, "table.md"), "w", encoding="utf-8") as f:
    f.write(machine + "\n" + "\n".join(md) + "\n" + "\n".join(notes) + "\n")

widths = [max(len(r[i]) for r in [header] + rows) for i in range(len(header))]
txt = ["  ".join(c.ljust(widths[i]) for i, c in enumerate(r)).rstrip() for r in [header] + rows]
txt.insert(1, "  ".join("-" * w for w in widths))
with open(os.path.join(out, "table.txt"), "w", encoding="utf-8") as f:
    f.write("\n".join(txt) + "\n")
print("\n".join(txt))
if failures:
    print("\nfailed runs:\n" + "\n".join(failures))

for key in sorted(set(ok) | set(failed)):
    summary[key] = {"ok_runs": len(ok.get(key, [])), "failed_runs": len(failed.get(key, [])),
                    **{f: med(key, f) for f in ("cycles_per_sec", "p50_us", "p99_us")}}
with open(os.path.join(out, "summary.json"), "w", encoding="utf-8") as f:
    json.dump(summary, f, indent=2)
    f.write("\n")
print(f"\nmissed targets: {missed}")
sys.exit(3 if missed else 0)
PY

echo
echo "Markdown table: $OUT/table.md"
echo "raw JSON lines: $OUT/raw.jsonl"
if ((report_rc != 0 && report_rc != 3)); then
    echo "bench-vs-curator: the report failed (exit $report_rc)" >&2
    exit 1
fi
if ((FAILURES > 0)); then
    echo "bench-vs-curator: $FAILURES run(s) FAILED" >&2
    exit 1
fi
if ((report_rc == 3)) && [[ ${BENCH_STRICT:-0} == 1 ]]; then
    echo "bench-vs-curator: targets missed (BENCH_STRICT=1)" >&2
    exit 3
fi
