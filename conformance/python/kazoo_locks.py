#!/usr/bin/env python3
"""kazoo's lock recipes against one ZooKeeper server (zoolock's model, usually).

    python3 conformance/python/kazoo_locks.py HOST:PORT [BASE_PATH]

Run by conformance/tests/foreign_clients.rs against `TestingServer` (the code
behind `zoolock serve`). Every contender is its own KazooClient (its own
session) on its own thread:

  * Lock:            2 contenders x 10 cycles on one path; no two holds overlap.
  * ReadLock/WriteLock: 2 readers and 1 writer x 5 cycles; the writer never
                     overlaps anyone, and the two readers must share at least once.
  * Semaphore(max_leases=2): 3 contenders x 5 cycles; never more than 2 holders.

A hold runs from the moment acquire() returned to just before release(), on
time.monotonic(), bracketed by a shared in-process "inside" counter that is
checked as well. Afterwards every lock path (and the semaphore's lease path)
must have no children. Prints one summary line and exits 0; any violation
prints a reason and exits 1.
"""

import sys
import threading
import time

from kazoo.client import KazooClient
from kazoo.recipe.lock import Lock, ReadLock, Semaphore, WriteLock

TIMEOUT = 30.0
failures = []
failures_lock = threading.Lock()


def fail(msg):
    with failures_lock:
        failures.append(msg)
    print("kazoo_locks: FAIL: " + msg, file=sys.stderr, flush=True)


def connect(hosts):
    client = KazooClient(hosts=hosts, timeout=10.0)
    client.start(timeout=15.0)
    return client


class Gauge:
    """How many contenders of each kind are inside; checks the rules on entry."""

    def __init__(self, name, limit_total, exclusive_kinds=()):
        self.name = name
        self.limit_total = limit_total
        self.exclusive_kinds = set(exclusive_kinds)
        self.inside = {}
        self.max_total = 0
        self.shared_seen = 0
        self.mutex = threading.Lock()

    def enter(self, kind, who):
        with self.mutex:
            self.inside[kind] = self.inside.get(kind, 0) + 1
            total = sum(self.inside.values())
            self.max_total = max(self.max_total, total)
            if total > self.limit_total:
                fail(f"{self.name}: {who} entered with {total} inside (limit {self.limit_total}): {self.inside}")
            for k in self.exclusive_kinds:
                if self.inside.get(k, 0) and total > 1:
                    fail(f"{self.name}: {who} overlaps an exclusive {k} hold: {self.inside}")
            if total > 1 and not self.exclusive_kinds.intersection(k for k, n in self.inside.items() if n):
                self.shared_seen += 1

    def leave(self, kind):
        with self.mutex:
            self.inside[kind] -= 1


def overlaps(holds, conflicting):
    """Pairs of (who, kind, enter, exit) holds that overlap in time and conflict."""
    bad = []
    for i, a in enumerate(holds):
        for b in holds[i + 1:]:
            if conflicting(a, b) and a[2] < b[3] and b[2] < a[3]:
                bad.append((a, b))
    return bad


def contend(hosts, who, make_lock, kind, cycles, gauge, holds, hold_s, pause_s):
    client = connect(hosts)
    try:
        for i in range(cycles):
            lock = make_lock(client)
            if not lock.acquire(timeout=TIMEOUT):
                fail(f"{gauge.name}: {who} could not acquire within {TIMEOUT}s (cycle {i})")
                return
            enter = time.monotonic()
            gauge.enter(kind, who)
            time.sleep(hold_s)
            gauge.leave(kind)
            exit_ = time.monotonic()
            lock.release()
            holds.append((who, kind, enter, exit_))
            time.sleep(pause_s * (i % 3))
    except Exception as e:  # noqa: BLE001 - report anything as a failure
        fail(f"{gauge.name}: {who}: {type(e).__name__}: {e}")
    finally:
        client.stop()
        client.close()


def run_all(threads):
    for t in threads:
        t.start()
    for t in threads:
        t.join(timeout=120)
        if t.is_alive():
            fail(f"thread {t.name} still running after 120s")


def check_empty(admin, path):
    if not admin.exists(path):
        return
    children = admin.get_children(path)
    if children:
        fail(f"{path} still has children: {children}")


def main():
    if len(sys.argv) < 2:
        print(__doc__, file=sys.stderr)
        return 2
    hosts = sys.argv[1]
    base = sys.argv[2] if len(sys.argv) > 2 else f"/kazoo-locks-{int(time.time() * 1000)}"
    started = time.monotonic()
    admin = connect(hosts)

    # -- Lock: 2 contenders x 10 --------------------------------------------------------------
    mutex_path = base + "/mutex"
    mutex_gauge = Gauge("Lock", 1, exclusive_kinds=("x",))
    mutex_holds = []
    run_all(
        [
            threading.Thread(
                name=f"lock-{who}",
                target=contend,
                args=(hosts, who, lambda c: Lock(c, mutex_path, who), "x", 10, mutex_gauge, mutex_holds, 0.003, 0.001),
            )
            for who in ("k1", "k2")
        ]
    )
    if len(mutex_holds) != 20:
        fail(f"Lock: {len(mutex_holds)} holds, expected 20")
    for a, b in overlaps(mutex_holds, lambda a, b: True):
        fail(f"Lock: holds overlap: {a} {b}")

    # -- ReadLock / WriteLock: 2 readers, 1 writer x 5 ---------------------------------------
    rw_path = base + "/rw"
    rw_gauge = Gauge("ReadLock/WriteLock", 2, exclusive_kinds=("w",))
    rw_holds = []
    rw = [("r1", ReadLock, "r"), ("r2", ReadLock, "r"), ("w1", WriteLock, "w")]
    run_all(
        [
            threading.Thread(
                name=f"rw-{who}",
                target=contend,
                args=(hosts, who, (lambda cls, w: lambda c: cls(c, rw_path, w))(cls, who), kind, 5, rw_gauge,
                      rw_holds, 0.05, 0.002),
            )
            for who, cls, kind in rw
        ]
    )
    if len(rw_holds) != 15:
        fail(f"ReadLock/WriteLock: {len(rw_holds)} holds, expected 15")
    for a, b in overlaps(rw_holds, lambda a, b: "w" in (a[1], b[1])):
        fail(f"ReadLock/WriteLock: a write hold overlaps: {a} {b}")
    readers_shared = bool(overlaps([h for h in rw_holds if h[1] == "r"], lambda a, b: a[0] != b[0]))
    if not readers_shared:
        fail("ReadLock/WriteLock: the two readers never held at the same time")

    # -- Semaphore(max_leases=2): 3 contenders x 5 -------------------------------------------
    sem_path = base + "/sem"
    sem_gauge = Gauge("Semaphore", 2)
    sem_holds = []
    run_all(
        [
            threading.Thread(
                name=f"sem-{who}",
                target=contend,
                args=(hosts, who, (lambda w: lambda c: Semaphore(c, sem_path, w, max_leases=2))(who), "s", 5,
                      sem_gauge, sem_holds, 0.03, 0.002),
            )
            for who in ("s1", "s2", "s3")
        ]
    )
    if len(sem_holds) != 15:
        fail(f"Semaphore: {len(sem_holds)} holds, expected 15")
    if sem_gauge.max_total < 2:
        fail(f"Semaphore: never 2 leases at once (max {sem_gauge.max_total})")

    # -- nothing left behind --------------------------------------------------------------------
    for path in (mutex_path, rw_path, sem_path, sem_path + "-__lock__"):
        check_empty(admin, path)
    admin.stop()
    admin.close()

    if failures:
        print(f"kazoo_locks: {len(failures)} violation(s)", flush=True)
        return 1
    print(
        f"kazoo_locks: ok: Lock {len(mutex_holds)} holds, ReadLock/WriteLock {len(rw_holds)} holds "
        f"(readers shared), Semaphore {len(sem_holds)} holds (max {sem_gauge.max_total} at once), "
        f"no lock nodes left, {time.monotonic() - started:.2f}s",
        flush=True,
    )
    return 0


if __name__ == "__main__":
    sys.exit(main())
