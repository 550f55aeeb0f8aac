#!/usr/bin/env python3
"""The report of scripts/bench-vs-peers.sh: reads OUT/runs.tsv, writes table.md,
table.txt and summary.json, prints the table and exits 3 when a target is missed.

    python3 scripts/bench-report.py OUT RUNS CLIENTS LEASES WARMUP

Ratios are of medians, except where a target holds "in every run": there each
run's zoolock figure is divided by the same run's raw figure and the smallest
ratio is the one judged.
"""

import json
import os
import statistics
import sys

out, runs, clients, leases, warmup = sys.argv[1], int(sys.argv[2]), sys.argv[3], sys.argv[4], int(sys.argv[5])

ok, failed = {}, {}
with open(os.path.join(out, "runs.tsv"), encoding="utf-8") as f:
    for raw in f:
        key, run, status, detail = raw.rstrip("\n").split("\t", 3)
        if status == "ok":
            ok.setdefault(key, {})[int(run)] = json.loads(detail)
        else:
            failed.setdefault(key, []).append(detail)

ONCE = ("zl-waiters", "zl-waiters-scaled", "zl0-waiters", "zl0-waiters-scaled")
BASELINE = os.environ.get("BENCH_BASELINE", "")


def values(key, field):
    return [r[field] for r in ok.get(key, {}).values() if isinstance(r.get(field), (int, float))]


def med(key, field):
    vals = values(key, field)
    return statistics.median(vals) if vals else None


def runs_note(key):
    n_ok, n = len(ok.get(key, {})), (1 if key in ONCE else runs)
    return "" if n_ok == n else f" ({n_ok}/{n} ok)"


def rate(key):
    v = med(key, "cycles_per_sec")
    return "FAILED" if v is None else f"{v:,.0f}/s{runs_note(key)}"


def ratio(a, b):
    return None if a is None or b is None or b == 0 else a / b


def per_run_min(a, b):
    """The smallest same-run ratio of cycles/s, over the runs both sides finished."""
    ra, rb = ok.get(a, {}), ok.get(b, {})
    rs = [ra[i]["cycles_per_sec"] / rb[i]["cycles_per_sec"] for i in ra if i in rb and rb[i].get("cycles_per_sec")]
    return min(rs) if rs else None


def per_run_range(a, b):
    """The smallest and largest same-run ratio of cycles/s."""
    ra, rb = ok.get(a, {}), ok.get(b, {})
    rs = [ra[i]["cycles_per_sec"] / rb[i]["cycles_per_sec"] for i in ra if i in rb and rb[i].get("cycles_per_sec")]
    return (min(rs), max(rs)) if rs else (None, None)


def swing(key):
    """A side's run-to-run swing: its fastest run ÷ its slowest."""
    vals = values(key, "cycles_per_sec")
    return max(vals) / min(vals) if len(vals) > 1 and min(vals) > 0 else None


def requests_per_cycle(key):
    """Requests the server received per cycle (warm-up included), median over runs."""
    vals = [r["server_requests"] / (r["cycles"] + warmup) for r in ok.get(key, {}).values()
            if isinstance(r.get("server_requests"), int) and isinstance(r.get("cycles"), int)]
    return statistics.median(vals) if vals else None


rows, missed = [], 0
ran = set(ok) | set(failed)  # BENCH_ONLY may have left comparisons out


def verdict(r, test, inputs):
    global missed
    if r is None or any(not ok.get(k) for k in inputs):
        return "FAILED"
    good = test(r)
    missed += 0 if good else 1
    note = " (some runs FAILED)" if any(failed.get(k) for k in inputs) else ""
    return ("yes" if good else "NO") + note


def row(name, zl, cur, zkc, raw, r, target, met):
    rows.append([name, zl or "—", cur or "—", zkc or "—", raw or "—", "—" if r is None else f"{r:.2f}×", target, met])


if "zl-mutex-acked" in ran:
    # mutex-uncontended, acked release
    zl, cur, zkc, r2, r3 = "zl-mutex-acked", "cur-mutex", "zkc-mutex-acked", "raw-2rtt", "raw-3rtt"
    r = per_run_min(zl, r2)
    row("mutex acked vs raw 2rtt (lowest run)", rate(zl), rate(cur), rate(zkc), rate(r2), r, "≥ 0.9× raw, every run",
        verdict(r, lambda x: x >= 0.9, [zl, r2]))
    z99, w99 = med(zl, "p99_us"), med(r2, "p99_us")
    r = ratio(z99, w99)
    row("mutex acked p99 vs raw 2rtt p99", "FAILED" if z99 is None else f"{z99:,.0f} µs", None, None,
        "FAILED" if w99 is None else f"{w99:,.0f} µs", r, "≤ 2× raw p99", verdict(r, lambda x: x <= 2.0, [zl, r2]))
    r = ratio(med(zl, "cycles_per_sec"), med(zkc, "cycles_per_sec"))
    row("mutex acked vs zookeeper-client (release awaited)", rate(zl), rate(cur), rate(zkc), rate(r2), r, "≥ 1.5×",
        verdict(r, lambda x: x >= 1.5, [zl, zkc]))
    row("mutex acked vs Curator", rate(zl), rate(cur), rate(zkc), rate(r2),
        ratio(med(zl, "cycles_per_sec"), med(cur, "cycles_per_sec")), "(info)", "—")
    row("mutex acked vs raw 3rtt", rate(zl), None, None, rate(r3),
        ratio(med(zl, "cycles_per_sec"), med(r3, "cycles_per_sec")), "(info)", "—")
if "zl-mutex-pipelined" in ran:
    # pipelined release
    zl, zkc, r1 = "zl-mutex-pipelined", "zkc-mutex-drop", "raw-1rtt"
    r = per_run_min(zl, r1)
    row("mutex pipelined vs raw 1rtt (lowest run)", rate(zl), None, rate(zkc) + " (drop)", rate(r1), r,
        "≥ 0.9× raw, every run", verdict(r, lambda x: x >= 0.9, [zl, r1]))
    row("mutex pipelined vs zookeeper-client drop-release", rate(zl), None, rate(zkc), rate(r1),
        ratio(med(zl, "cycles_per_sec"), med(zkc, "cycles_per_sec")), "(info)", "—")
# the blocking API (zoolock-blocking, `zl-blocking-cycle`) beside the async one, same runs
for release, zl, zlb in (("acked", "zl-mutex-acked", "zlb-mutex-acked"),
                         ("pipelined", "zl-mutex-pipelined", "zlb-mutex-pipelined")):
    if zlb not in ran:
        continue
    b99, a99 = med(zlb, "p99_us"), med(zl, "p99_us")
    p99s = "—" if b99 is None or a99 is None else f"; p99 {b99:,.0f} vs {a99:,.0f} µs"
    row(f"mutex {release}, blocking API ÷ async API", f"{rate(zlb)} blocking, {rate(zl)} async{p99s}", None, None,
        None, ratio(med(zlb, "cycles_per_sec"), med(zl, "cycles_per_sec")), "(info)", "—")
if "zl-contended" in ran:
    # contended
    zl, cur, zkc, chain = "zl-contended", "cur-contended", "zkc-contended", "raw-chain"
    name = f"mutex contended, {clients} clients"
    for other, label, target, test in ((zkc, "zookeeper-client", "≥ 1.25×", lambda x: x >= 1.25),
                                       (cur, "Curator", "≥ 2×", lambda x: x >= 2.0),
                                       (chain, "raw chain", "≥ 0.85× raw", lambda x: x >= 0.85)):
        r = ratio(med(zl, "cycles_per_sec"), med(other, "cycles_per_sec"))
        row(f"{name} vs {label}", rate(zl), rate(cur), rate(zkc), rate(chain), r, target, verdict(r, test, [zl, other]))
# vs Curator
for name, zl, cur in (("read-lock", "zl-read-lock", "cur-read-lock"),
                      (f"semaphore, {leases} leases", "zl-semaphore", "cur-semaphore")):
    if zl not in ran:
        continue
    r = ratio(med(zl, "cycles_per_sec"), med(cur, "cycles_per_sec"))
    row(name + " vs Curator", rate(zl), rate(cur), None, None, r, "≥ 2× Curator", verdict(r, lambda x: x >= 2.0, [zl, cur]))

# the current tree ÷ the baseline revision (BENCH_BASELINE), same runs: no regression beyond
# the run-to-run swing means a ratio of medians no lower than 1 ÷ the larger side's swing
if BASELINE:
    for name, zl in (("mutex acked", "zl-mutex-acked"), ("mutex pipelined", "zl-mutex-pipelined"),
                     (f"mutex contended, {clients} clients", "zl-contended"), ("read-lock", "zl-read-lock"),
                     (f"semaphore, {leases} leases", "zl-semaphore")):
        then = "zl0-" + zl[len("zl-"):]
        if zl not in ran or then not in ran:
            continue
        r = ratio(med(zl, "cycles_per_sec"), med(then, "cycles_per_sec"))
        sw = max((x for x in (swing(zl), swing(then)) if x is not None), default=None)
        lo, hi = per_run_range(zl, then)
        spread = "" if lo is None else f"; same-run {lo:.2f}–{hi:.2f}×"
        row(f"{name}: now ÷ {BASELINE}", f"{rate(zl)} now, {rate(then)} then{spread}", None, None,
            "—" if sw is None else f"swing {sw:.2f}×", r, "≥ 1 ÷ swing",
            verdict(r, lambda x, sw=sw: sw is None or x >= 1 / sw, [zl, then]))

# the held-node watch (ARCHITECTURE §6.1): with it (the default) ÷ without it
for name, zl, bare in (("mutex acked", "zl-mutex-acked", "zl-mutex-acked-nowatch"),
                       (f"mutex contended, {clients} clients", "zl-contended", "zl-contended-nowatch"),
                       (f"semaphore, {leases} leases", "zl-semaphore", "zl-semaphore-nowatch")):
    if zl not in ran:
        continue
    q, qb = requests_per_cycle(zl), requests_per_cycle(bare)
    extra = "—" if q is None or qb is None else f"{q - qb:+.2f} requests/cycle"
    row(f"held-node watch cost: {name} (with ÷ without)", rate(zl), None, None, f"{rate(bare)} without; {extra}",
        ratio(med(zl, "cycles_per_sec"), med(bare, "cycles_per_sec")), "(info)", "—")


# waiters
def waiters_row(key):
    global missed
    w = next(iter(ok.get(key, {}).values()), None)
    if w is None:
        rows.append([f"waiters ({key})", "FAILED"] + ["—"] * 4 + ["0 FIFO violations, 0 leftovers", "FAILED"])
        return None
    good = w.get("fifo_violations") == 0 and w.get("leftover_nodes") == 0
    missed += 0 if good else 1
    n = w.get("waiters") or 1
    per = (w.get("rss_mib", 0) * 1024 / n, w.get("drain_ms", 0) * 1e3 / n)
    desc = (f"drain {w.get('drain_ms', 0):,.0f} ms ({per[1]:,.1f} µs/waiter), rss {w.get('rss_mib', 0):,.1f} MiB "
            f"({per[0]:,.2f} KiB/waiter), {w.get('fifo_violations')} FIFO violations, "
            f"{w.get('leftover_nodes')} leftovers")
    rows.append([f"waiters, {n:,} on {w.get('paths')} paths", desc, "—", "—", "—", "—",
                 "0 FIFO violations, 0 leftovers", "yes" if good else "NO"])
    return per


small = waiters_row("zl-waiters") if "zl-waiters" in ran else None
big = "zl-waiters-scaled" in ran
if big:
    large = waiters_row("zl-waiters-scaled")
    if small and large:
        for i, what in ((0, "RSS"), (1, "drain time")):
            r = ratio(large[i], small[i])
            row(f"waiters scaled: {what} per waiter", None, None, None, None, r, "≤ 1.5× the smaller run",
                verdict(r, lambda x: x <= 1.5, ["zl-waiters", "zl-waiters-scaled"]))


# waiters, now ÷ the baseline: per waiter, lower is better (one run each: information)
if BASELINE:
    for key in ("zl-waiters", "zl-waiters-scaled"):
        now, then = (next(iter(ok.get(k, {}).values()), None) for k in (key, "zl0-" + key[len("zl-"):]))
        if not now or not then:
            continue
        per = [(w.get("rss_mib", 0) * 1024 / (w.get("waiters") or 1), w.get("drain_ms", 0) * 1e3 / (w.get("waiters") or 1))
               for w in (now, then)]
        row(f"waiters, {now.get('waiters'):,}: now ÷ {BASELINE} (per waiter)",
            f"{per[0][0]:,.2f} KiB, {per[0][1]:,.1f} µs drain now; {per[1][0]:,.2f} KiB, {per[1][1]:,.1f} µs then",
            None, None, None, ratio(per[0][1], per[1][1]), "drain time ratio (info)", "—")


# issue 29: many locks on one session
# Clean-up requests per lock directory, which the server counts with the run: zoolock's
# tree walk lists each directory twice and deletes it; zookeeper-client's lists and deletes.
CLEANUP = {"zl": 3, "zl0": 3, "zkc": 2, "cur": 0}


def held_requests(key):
    """Server requests per held lock, acquire + release (clean-up taken off), median."""
    side = key.split("-", 1)[0]
    vals = [r["server_requests"] / r["locks"] - CLEANUP.get(side, 0) for r in ok.get(key, {}).values()
            if isinstance(r.get("server_requests"), int) and r.get("locks")]
    return statistics.median(vals) if vals else None


def held_cell(key):
    if not ok.get(key):
        return "FAILED" if key in ran else None
    parts = [f"{med(key, 'acquire_s'):.2f} s acquire", f"{med(key, 'release_s'):.2f} s release",
             f"{med(key, 'bytes_per_lock'):,.0f} B/lock"]
    if med(key, "cpu_s") is not None:
        parts.append(f"{med(key, 'cpu_s'):.2f} s CPU")
    return ", ".join(parts) + runs_note(key)


held_rows = []
for label, zl, zkc, cur in (("held-10k", "zl-held-10k", "zkc-held-10k", "cur-held"),
                            ("held-100k", "zl-held-100k", "zkc-held-100k", None)):
    if zl not in ran:
        continue
    n = next((r.get("locks") for r in ok.get(zl, {}).values()), None) or label
    name = f"{n:,} locks held at once, one session" if isinstance(n, int) else label
    r = ratio(med(zl, "locks_per_sec"), med(zkc, "locks_per_sec"))
    row(f"{name}: acquire rate vs zookeeper-client", held_cell(zl), held_cell(cur) if cur else None, held_cell(zkc),
        None, r, "≥ 1.2×", verdict(r, lambda x: x >= 1.2, [zl, zkc]))
    b = med(zl, "bytes_per_lock")
    row(f"{name}: RSS per held lock", None if b is None else f"{b:,.0f} B", None,
        None if med(zkc, "bytes_per_lock") is None else f"{med(zkc, 'bytes_per_lock'):,.0f} B", None,
        ratio(b, med(zkc, "bytes_per_lock")), "≤ 2,500 B", verdict(b, lambda x: x <= 2500, [zl]))
    # per-lock memory, now ÷ the baseline revision (BENCH_BASELINE), alternated runs: it must not grow
    then = "zl0-" + zl[len("zl-"):]
    if BASELINE and then in ran:
        for what, field in (("RSS per held lock", "bytes_per_lock"), ("RSS per idle handle", "idle_bytes_per_lock")):
            now_b, then_b = med(zl, field), med(then, field)
            each = ", ".join(f"{v.get(field, 0):,.0f}" for v in ok.get(then, {}).values())
            row(f"{name}: {what}, now ÷ {BASELINE}",
                None if now_b is None else f"{now_b:,.0f} B now, {then_b or 0:,.0f} B then (each: {each})",
                None, None, None, ratio(now_b, then_b), "≤ 1× (no growth)",
                verdict(ratio(now_b, then_b), lambda x: x <= 1.0, [zl, then]))
    if label == "held-100k":
        vals = [v["acquire_s"] + v["release_s"] for v in ok.get(zl, {}).values()]
        worst = max(vals) if vals else None
        row(f"{name}: acquired + released (slowest run)", None if worst is None else f"{worst:.1f} s", None, None,
            None, None, "< 120 s", verdict(worst, lambda x: x < 120, [zl]))
    for key in (zl, then if BASELINE else None, zkc, cur):
        if key is None or key not in ran:
            continue
        q = held_requests(key)
        held_rows.append([key, f"{med(key, 'locks_per_sec') or 0:,.0f}", f"{med(key, 'acquire_s') or 0:.2f}",
                          f"{med(key, 'release_s') or 0:.2f}", f"{med(key, 'bytes_per_lock') or 0:,.0f}",
                          "—" if med(key, "idle_bytes_per_lock") is None else f"{med(key, 'idle_bytes_per_lock'):,.0f}",
                          "—" if med(key, "cpu_acquire_s") is None else f"{med(key, 'cpu_acquire_s'):.2f}",
                          "—" if med(key, "cpu_s") is None else f"{med(key, 'cpu_s'):.2f}",
                          "—" if q is None else f"{q:.2f}"])
held_header = ["run", "locks/s", "acquire s", "release s", "B/held lock", "B/idle handle", "CPU acquire s",
               "CPU s", "requests/lock"]
for k in (1, 16, 128):
    zl, zkc, cur = f"zl-tasks-{k}", f"zkc-tasks-{k}", f"cur-tasks-{k}"
    if zl not in ran:
        continue
    r = ratio(med(zl, "cycles_per_sec"), med(zkc, "cycles_per_sec"))
    target, test = ("≥ 1.0×", lambda x: x >= 1.0) if k == 128 else ("(info)", None)
    row(f"{k} task(s) each cycling its own lock, one session", rate(zl), rate(cur) if cur in ran else None, rate(zkc),
        None, r, target, verdict(r, test, [zl, zkc]) if test else "—")

header = ["workload", "zoolock", "Curator", "zookeeper-client", "raw", "ratio", "target", "met?"]

# Per side: medians and requests per cycle.
side_rows = []
for key in sorted(set(ok) | set(failed)):
    p50, p99, q = med(key, "p50_us"), med(key, "p99_us"), requests_per_cycle(key)
    side_rows.append([key, rate(key), "—" if p50 is None else f"{p50:,.0f}", "—" if p99 is None else f"{p99:,.0f}",
                      "—" if q is None else f"{q:.2f}"])
side_header = ["run", "cycles/s (median)", "p50 µs", "p99 µs", "server requests per cycle"]


def md_table(head, body, align):
    lines = ["| " + " | ".join(head) + " |", "|" + "|".join(align) + "|"]
    return lines + ["| " + " | ".join(c.replace("|", "\\|") for c in r) + " |" for r in body]


def txt_table(head, body):
    widths = [max(len(r[i]) for r in [head] + body) for i in range(len(head))]
    lines = ["  ".join(c.ljust(widths[i]) for i, c in enumerate(r)).rstrip() for r in [head] + body]
    lines.insert(1, "  ".join("-" * w for w in widths))
    return lines


with open(os.path.join(out, "machine.md"), encoding="utf-8") as f:
    machine = f.read()
notes = [
    "",
    "ratio: zoolock ÷ the comparison (medians; \"every run\" rows: the lowest same-run ratio). mutex = "
    "mutex-uncontended, one session. Acked release waits for the delete to be applied, as Curator's "
    "`release()` does (zookeeper-client: `Client::delete` awaited, its guard forgotten); pipelined release "
    "lets it ride with the next acquire (zookeeper-client: the guard's drop, a background delete). "
    "mutex contended: cycles/s = acquisitions/s over all sessions, latency = acquire wait; every holder "
    "yields once inside its critical section (the raw chain holds for no time). raw: `zk-rawcycle`, no "
    "client logic; 3rtt = create, getChildren, delete one after another (Curator's order), 2rtt = create + "
    "getChildren pipelined then delete, 1rtt = all three in one write (an upper bound no lock can reach), "
    "chain = K sessions, create + list in one write, getData-watch the predecessor, hold on its deletion "
    "(no re-list: it assumes a deleted predecessor had held, which a safe client cannot). Server requests "
    "per cycle: ZooKeeper's zk_packets_received during the run ÷ (cycles + warm-up), set-up included.",
    "",
    "held: N tasks on one session, each acquiring a lock of its own (`<base>/l<i>`, its parent made on "
    "demand), all held at once, then all released (acked). Acquire = first acquire call to the last grant; "
    "release = the go signal to the last delete applied. B/held lock = (VmRSS with all held − VmRSS before "
    "the first handle) ÷ N, read by the process itself; B/idle handle (zoolock only: zookeeper-client has no "
    "handle apart from the acquire) = (VmRSS with N registered `Lock` handles − before) ÷ N. CPU: "
    "/proc/self/stat utime + stime, every thread, 10 ms ticks. requests/lock: zk_packets_received during the "
    "run ÷ N, minus the clean-up's requests per lock directory (zoolock 3, zookeeper-client 2). Curator: a "
    "thread per held lock (its acquire blocks), so only at a smaller N. tasks: K tasks on one session, each "
    "cycling (acquire, acked release) a lock of its own until the cycles are done.",
]
try:
    with open("/proc/loadavg", encoding="utf-8") as f:
        notes += ["", "Load average at the end: " + " ".join(f.read().split()[:3]) + "."]
except OSError:
    pass
failures = sorted(f"- `{k}`: {d}" for k, ds in failed.items() for d in ds)
if failures:
    notes += ["", "Failed runs:", ""] + failures
md = md_table(header, rows, ["---"] + ["---:"] * 5 + ["---", "---"])
md_sides = md_table(side_header, side_rows, ["---"] + ["---:"] * 4)
if held_rows:
    md_sides += [""] + md_table(held_header, held_rows, ["---"] + ["---:"] * 8)
with open(os.path.join(out, "table.md"), "w", encoding="utf-8") as f:
    f.write(machine + "\n" + "\n".join(md) + "\n\n" + "\n".join(md_sides) + "\n" + "\n".join(notes) + "\n")
txt = txt_table(header, rows) + [""] + txt_table(side_header, side_rows)
if held_rows:
    txt += [""] + txt_table(held_header, held_rows)
with open(os.path.join(out, "table.txt"), "w", encoding="utf-8") as f:
    f.write("\n".join(txt) + "\n")
print("\n".join(txt))
if failures:
    print("\nfailed runs:\n" + "\n".join(failures))

summary = {key: {"ok_runs": len(ok.get(key, {})), "failed_runs": len(failed.get(key, [])),
                 "requests_per_cycle": requests_per_cycle(key),
                 **{f: med(key, f) for f in ("cycles_per_sec", "p50_us", "p99_us")}}
           for key in sorted(set(ok) | set(failed))}
with open(os.path.join(out, "summary.json"), "w", encoding="utf-8") as f:
    json.dump(summary, f, indent=2)
    f.write("\n")
print(f"\nmissed targets: {missed}")
sys.exit(3 if missed else 0)
