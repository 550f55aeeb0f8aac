//! Interop with Apache Curator 5.4.0: Curator and zoolock clients contend on
//! the same paths against the real ZooKeeper from `ZOOLOCK_TEST_CONNECT`.
//!
//! The Curator side is `testkit/java/CuratorDriver.java`, compiled by
//! `zoolock_testkit::java` with `javac` against Debian's jars
//! (`/usr/share/java`, or `ZK_JAVA_DIR`) and driven over stdin/stdout with a
//! line protocol (see the Java file).
//! Every Curator contender id is its own ZooKeeper session on its own thread.
//!
//! Clock: both sides report wall-clock microseconds since the Unix epoch
//! (Java `Instant.now()`, Rust `SystemTime::now()`, both CLOCK_REALTIME on
//! the same machine), so critical sections from both processes lie on one
//! time line. A critical section runs from the moment acquire returned to the
//! moment just before release was called.
//!
//! Checks: no two exclusive holds overlap; holds are granted in the order of
//! their nodes' sequence numbers (FIFO across implementations); each side
//! lists the other's nodes in the same order; no node is left behind.
//!
//! Skipped, with the reason printed, when `ZOOLOCK_TEST_CONNECT` is unset, or
//! when java, javac or the jars are missing outside CI. With `CI` set (to
//! anything but `0`/`false`) a missing toolchain or jar fails the test:
//! `.ci/run` installs them.

use std::time::{Duration, Instant};

use tokio::task::JoinHandle;
use tokio::time::sleep;
use zoolock_tokio::{Client, Error, Guard, Lock, LockKind, OpPlan, Options};

mod holds;

use holds::{Hold, check_exclusion, max_concurrent, seq};
use zoolock_conformance::sim::Mode;

use zoolock_testkit::java::{Java, Peer, STEP, java_or_skip, now_us, within};

fn base_path(test: &str) -> String {
    format!("/zoolock-interop/{test}-{}-{}", std::process::id(), now_us())
}

async fn connect(addr: &str) -> Client {
    connect_plan(addr, OpPlan::default()).await
}

/// A zoolock client with the given op plan. The contention loops pair a
/// default (Pipelined) client with one in Curator's exact op sequence.
async fn connect_plan(addr: &str, plan: OpPlan) -> Client {
    let options = Options::default().session_timeout(Duration::from_secs(10)).plan(plan);
    within("zoolock connect", zoolock_tokio::connect(addr, options)).await.expect("zoolock connect")
}

async fn children(client: &Client, path: &str) -> Vec<String> {
    match client.get_children(path).await {
        Ok((mut names, _)) => {
            names.sort_by_key(|n| seq(n));
            names
        }
        Err(Error::Request(zoolock_tokio::RequestError::Server(code))) if code == zoolock_tokio::ErrorCode::NO_NODE => {
            Vec::new()
        }
        Err(e) => panic!("getChildren {path}: {e}"),
    }
}

/// Waits until `path` has exactly `n` children.
async fn wait_children(client: &Client, path: &str, n: usize) -> Vec<String> {
    let deadline = Instant::now() + STEP;
    loop {
        let names = children(client, path).await;
        if names.len() == n {
            return names;
        }
        assert!(Instant::now() < deadline, "{path}: expected {n} children, have {names:?}");
        sleep(Duration::from_millis(10)).await;
    }
}

/// No node left behind (the containers themselves may stay).
async fn assert_no_leaks(client: &Client, paths: &[String]) {
    for path in paths {
        wait_children(client, path, 0).await;
    }
}

async fn zoolock_participants(client: &Client, path: &str, kind: LockKind) -> Vec<String> {
    within("participants", client.participants(path, kind))
        .await
        .expect("participants")
        .into_iter()
        .map(|p| p.path)
        .collect()
}

fn spawn_acquire(lock: &Lock) -> JoinHandle<(Guard, i64)> {
    let lock = lock.clone();
    tokio::spawn(async move {
        let guard = lock.acquire().await.expect("zoolock acquire");
        (guard, now_us())
    })
}

async fn join<T>(what: &str, handle: JoinHandle<T>) -> T {
    within(what, handle).await.unwrap_or_else(|e| panic!("{what}: task failed: {e}"))
}

/// One interop test against the plain server: its name, the server address,
/// the Curator driver, an admin client and when it began.
struct Interop {
    test: &'static str,
    addr: String,
    jv: Java,
    admin: Client,
    started: Instant,
}

impl Interop {
    /// The set-up for `test` and the test's base path (named after it, less
    /// the `interop_` prefix), or `None` to skip when there is no server or
    /// no Java.
    async fn start(test: &'static str) -> Option<(Interop, String)> {
        let addr = zoolock_testkit::real_server(test)?;
        let java = java_or_skip(test)?;
        let started = Instant::now();
        let jv = Java::start(java, &addr).await;
        let admin = connect(&addr).await;
        let path = base_path(test.strip_prefix("interop_").unwrap_or(test));
        Some((Interop { test, addr, jv, admin, started }, path))
    }

    /// Collects the contenders' holds (`cycles` each), runs `check` on them,
    /// checks that no node is left under `paths`, and reports.
    async fn contention(
        &self,
        tasks: Vec<JoinHandle<Vec<Hold>>>,
        cycles: usize,
        check: impl FnOnce(&[Hold]),
        paths: &[String],
        started: Instant,
    ) {
        let contenders = tasks.len();
        let holds = collect(tasks).await;
        assert_eq!(holds.len(), contenders * cycles);
        check(&holds);
        assert_no_leaks(&self.admin, paths).await;
        report(&format!("{} contention", self.test), &holds, started);
    }

    /// The end of a phase begun at `t`: no node is left under `paths`; says so.
    async fn phase_done(&self, phase: &str, paths: &[String], t: Instant) {
        assert_no_leaks(&self.admin, paths).await;
        println!("{} {phase}: ok, {:?}", self.test, t.elapsed());
    }

    /// Closes `clients` and the admin client.
    async fn close(self, clients: impl IntoIterator<Item = Client>) {
        for c in clients.into_iter().chain([self.admin]) {
            c.close().await.unwrap();
        }
        println!("{}: {:?}", self.test, self.started.elapsed());
    }
}

// ---- hand-offs ------------------------------------------------------------------------

/// A contender waiting for a lock that the other holds.
trait Waiter {
    /// What it holds once it acquired (Curator's node, a zoolock guard).
    type Held;
    /// It has not acquired yet.
    fn waiting(&mut self) -> bool;
    /// Waits for the acquire: what it holds, and when it acquired.
    async fn acquired(self) -> (Self::Held, i64);
}

impl Waiter for &mut Peer {
    type Held = String;
    fn waiting(&mut self) -> bool {
        self.try_next().is_none()
    }
    async fn acquired(self) -> (String, i64) {
        Peer::acquired(self).await.expect("the Curator waiter acquires")
    }
}

impl Waiter for JoinHandle<(Guard, i64)> {
    type Held = Guard;
    fn waiting(&mut self) -> bool {
        !self.is_finished()
    }
    async fn acquired(self) -> (Guard, i64) {
        join("zoolock waiter", self).await
    }
}

/// A zoolock release; returns the time just before it.
async fn zoolock_release(release: impl Future<Output = Result<(), Error>>) -> i64 {
    let exit = now_us();
    release.await.unwrap();
    exit
}

/// After `settle_ms` the waiter still waits (`why`: it must); once `release`
/// (returning when the holder let go) has run, the waiter acquires, and not
/// before. Returns what the waiter holds.
async fn handoff<W: Waiter>(mut waiter: W, settle_ms: u64, why: &str, release: impl Future<Output = i64>) -> W::Held {
    sleep(Duration::from_millis(settle_ms)).await;
    assert!(waiter.waiting(), "{why}");
    let exit = release.await;
    let (held, enter) = waiter.acquired().await;
    assert!(enter >= exit);
    held
}

// ---- holds and the checks ------------------------------------------------------------

/// How often the hold passed from one implementation to the other.
fn handoffs(holds: &[Hold]) -> usize {
    let mut sorted: Vec<&Hold> = holds.iter().collect();
    sorted.sort_by_key(|h| h.enter);
    sorted.windows(2).filter(|w| w[0].who.starts_with('c') != w[1].who.starts_with('c')).count()
}

fn pause(i: usize) -> Duration {
    Duration::from_millis([0, 1, 3][i % 3])
}

/// A Curator contender looping `cycles` times over acquire, hold, release.
async fn java_loop(
    mut peer: Peer,
    acquire: &'static str,
    args: String,
    release: &'static str,
    mode: Mode,
    cycles: usize,
) -> Vec<Hold> {
    let mut holds = Vec::new();
    for i in 0..cycles {
        let (node, enter) = peer.acquire(acquire, &args).await;
        sleep(Duration::from_millis(2)).await;
        let (exit, _) = peer.release(release).await;
        holds.push(Hold { who: peer.id.clone(), mode, node, enter, exit });
        sleep(pause(i)).await;
    }
    holds
}

/// Curator contenders c1 and c2, each taking the exclusive lock `path`
/// `cycles` times with the driver's `verbs` (acquire, release).
fn curator_loops(
    jv: &Java,
    (acquire, release): (&'static str, &'static str),
    path: &str,
    cycles: usize,
) -> Vec<JoinHandle<Vec<Hold>>> {
    ["c1", "c2"]
        .into_iter()
        .map(|id| tokio::spawn(java_loop(jv.peer(id), acquire, path.to_owned(), release, Mode::Exclusive, cycles)))
        .collect()
}

const MUTEX: (&str, &str) = ("MUTEX_ACQUIRE", "MUTEX_RELEASE");

/// A zoolock contender doing the same with a `Lock`.
async fn zoolock_loop(who: String, lock: Lock, mode: Mode, cycles: usize) -> Vec<Hold> {
    let mut holds = Vec::new();
    for i in 0..cycles {
        let guard = within(&who, lock.acquire()).await.expect("zoolock acquire");
        let enter = now_us();
        sleep(Duration::from_millis(2)).await;
        let exit = now_us();
        let node = guard.node().to_owned();
        within(&who, guard.release()).await.expect("zoolock release");
        holds.push(Hold { who: who.clone(), mode, node, enter, exit });
        sleep(pause(i + 1)).await;
    }
    holds
}

async fn collect(tasks: Vec<JoinHandle<Vec<Hold>>>) -> Vec<Hold> {
    let mut all = Vec::new();
    for task in tasks {
        all.extend(join("contender", task).await);
    }
    all.sort_by_key(|h| h.enter);
    all
}

fn report(test: &str, holds: &[Hold], started: Instant) {
    let curator = holds.iter().filter(|h| h.who.starts_with('c')).count();
    println!(
        "{test}: {} holds ({curator} Curator, {} zoolock), {} handoffs between implementations, \
         at most {} at once, {:?}",
        holds.len(),
        holds.len() - curator,
        handoffs(holds),
        max_concurrent(holds),
        started.elapsed()
    );
}

// ---- (a) mutex ---------------------------------------------------------------------------

#[tokio::test(flavor = "multi_thread", worker_threads = 4)]
async fn interop_mutex() {
    let Some((it, path)) = Interop::start("interop_mutex").await else { return };
    let (jv, admin) = (&it.jv, &it.admin);
    let (z1, z2) = (connect(&it.addr).await, connect_plan(&it.addr, OpPlan::Curator).await);

    // Two Curator and two zoolock contenders, 8 cycles each.
    const CYCLES: usize = 8;
    let mut tasks = curator_loops(jv, MUTEX, &path, CYCLES);
    for (who, client) in [("z1", &z1), ("z2", &z2)] {
        let lock = client.mutex(&path).await.unwrap();
        tasks.push(tokio::spawn(zoolock_loop(who.into(), lock, Mode::Exclusive, CYCLES)));
    }
    it.contention(tasks, CYCLES, |holds| check_exclusion(holds, true), std::slice::from_ref(&path), it.started).await;

    // A zoolock waiter between two Curator contenders gives up; the Curator
    // successor re-targets its watch and still gets the lock in order.
    let t = Instant::now();
    let (mut c3, mut c4) = (jv.peer("c3"), jv.peer("c4"));
    let (c3_node, _) = c3.acquire("MUTEX_ACQUIRE", &path).await;
    let z1_lock = z1.mutex(&path).await.unwrap();
    let z1_wait = tokio::spawn(async move { z1_lock.acquire_timeout(Duration::from_millis(500)).await.map(|_| ()) });
    wait_children(admin, &path, 2).await;
    c4.start_acquire("MUTEX_ACQUIRE", &path);
    let queued = wait_children(admin, &path, 3).await;
    assert!(matches!(join("z1 timed acquire", z1_wait).await, Err(Error::TimedOut)));
    wait_children(admin, &path, 2).await;
    let why = "Curator waiter acquired while a Curator holder held";
    let c4_node = handoff(&mut c4, 100, why, async { c3.release("MUTEX_RELEASE").await.0 }).await;
    assert!(c4_node.ends_with(&queued[2]) && c3_node.ends_with(&queued[0]), "{queued:?} {c3_node} {c4_node}");
    c4.release("MUTEX_RELEASE").await;
    assert_no_leaks(admin, std::slice::from_ref(&path)).await;

    // And the reverse: a Curator waiter between two zoolock contenders times out.
    let (l1, l2) = (z1.mutex(&path).await.unwrap(), z2.mutex(&path).await.unwrap());
    let g1 = within("z1", l1.acquire()).await.unwrap();
    c3.start_acquire("MUTEX_ACQUIRE", &format!("{path} 500"));
    wait_children(admin, &path, 2).await;
    let z2_wait = spawn_acquire(&l2);
    wait_children(admin, &path, 3).await;
    assert!(c3.acquired().await.is_none(), "Curator waiter should time out");
    wait_children(admin, &path, 2).await;
    let why = "zoolock waiter acquired while a zoolock holder held";
    let g2 = handoff(z2_wait, 100, why, zoolock_release(g1.release())).await;
    g2.release().await.unwrap();
    it.phase_done("timeouts between foreign waiters", std::slice::from_ref(&path), t).await;

    it.close([z1, z2]).await;
}

// ---- (b) read-write lock -------------------------------------------------------------------

#[tokio::test(flavor = "multi_thread", worker_threads = 4)]
async fn interop_read_write_lock() {
    let Some((it, path)) = Interop::start("interop_read_write_lock").await else { return };
    let (jv, admin) = (&it.jv, &it.admin);
    let zs = [connect(&it.addr).await, connect_plan(&it.addr, OpPlan::Curator).await, connect(&it.addr).await];
    let mut halves = Vec::new();
    for z in &zs {
        halves.push(z.read_write_lock(&path).await.unwrap());
    }

    // 1. A Curator writer holds: zoolock readers wait, then share the lock.
    let (mut cw, mut cr1, mut cr2) = (jv.peer("cw"), jv.peer("cr1"), jv.peer("cr2"));
    cw.acquire("WRITE_ACQUIRE", &path).await;
    let (r1, r2) = (spawn_acquire(&halves[0].read), spawn_acquire(&halves[1].read));
    wait_children(admin, &path, 3).await;
    sleep(Duration::from_millis(200)).await;
    assert!(!r1.is_finished() && !r2.is_finished(), "zoolock reader acquired under a Curator writer");
    let (exit, _) = cw.release("WRITE_RELEASE").await;
    let ((g1, e1), (g2, e2)) = (join("zr1", r1).await, join("zr2", r2).await);
    assert!(e1 >= exit && e2 >= exit);
    // Both readers hold at once.
    g1.release().await.unwrap();
    g2.release().await.unwrap();

    // 2. A zoolock writer holds: Curator readers wait, then share the lock.
    let gw = within("zw", halves[2].write.acquire()).await.unwrap();
    cr1.start_acquire("READ_ACQUIRE", &path);
    cr2.start_acquire("READ_ACQUIRE", &path);
    wait_children(admin, &path, 3).await;
    sleep(Duration::from_millis(200)).await;
    assert!(cr1.try_next().is_none() && cr2.try_next().is_none(), "Curator reader acquired under a zoolock writer");
    let exit = now_us();
    gw.release().await.unwrap();
    let (_, e1) = cr1.acquired().await.unwrap();
    let (_, e2) = cr2.acquired().await.unwrap();
    assert!(e1 >= exit && e2 >= exit);
    cr1.release("READ_RELEASE").await;
    cr2.release("READ_RELEASE").await;

    // 3. Readers of both kinds share; writers of both kinds queue behind them
    //    and behind each other.
    let gr = within("zr", halves[0].read.acquire()).await.unwrap();
    cr1.acquire("READ_ACQUIRE", &path).await;
    let zw = spawn_acquire(&halves[1].write);
    wait_children(admin, &path, 3).await;
    cw.start_acquire("WRITE_ACQUIRE", &path);
    wait_children(admin, &path, 4).await;
    sleep(Duration::from_millis(100)).await;
    gr.release().await.unwrap();
    let why = "zoolock writer acquired while a Curator reader held";
    let gw = handoff(zw, 200, why, async { cr1.release("READ_RELEASE").await.0 }).await;
    let why = "Curator writer acquired while a zoolock writer held";
    handoff(&mut cw, 200, why, zoolock_release(gw.release())).await;
    cw.release("WRITE_RELEASE").await;
    it.phase_done("handoffs", std::slice::from_ref(&path), it.started).await;

    // 4. Downgrade (write -> read -> release write) with a writer of the other
    //    kind queued behind it.
    //    a. zoolock downgrades (default plan: Curator 5.5+'s shape, the read
    //       node reuses the write node's sequence): the queued Curator writer
    //       stays blocked until the read is released.
    let t = Instant::now();
    let zw_half = &halves[0].write;
    let gw = within("zw", zw_half.acquire()).await.unwrap();
    cw.start_acquire("WRITE_ACQUIRE", &path);
    wait_children(admin, &path, 2).await;
    let gr = within("zoolock downgrade", gw.downgrade()).await.unwrap();
    assert_eq!(seq(gr.node()), seq(gw.node()), "zoolock's downgrade read node reuses the write sequence");
    wait_children(admin, &path, 3).await;
    gw.release().await.unwrap();
    wait_children(admin, &path, 2).await;
    handoff(&mut cw, 200, "Curator writer overtook zoolock's downgraded reader", zoolock_release(gr.release())).await;
    //    b. Curator downgrades with a zoolock writer queued.
    let zw = spawn_acquire(&halves[1].write);
    wait_children(admin, &path, 2).await;
    let held_write = children(admin, &path).await[0].clone();
    cw.send("DOWNGRADE", "");
    let words = cw.expect("DOWNGRADED").await;
    let read_node = words[2].clone();
    if seq(&read_node) == seq(&held_write) {
        // Curator 5.5+ (CURATOR-621 fixed): the read node stays ahead.
        let why = "zoolock writer overtook Curator's downgraded reader";
        let g = handoff(zw, 200, why, async { cw.release("READ_RELEASE").await.0 }).await;
        g.release().await.unwrap();
    } else {
        // Curator 5.4.0 (CURATOR-621 open): the downgrade read node is a new
        // sequential node behind the queued writer, so that writer is first
        // and acquires while the reader still holds, exactly as a queued
        // Curator 5.4.0 writer would. zoolock follows the node order.
        let (g, _) = join("zw", zw).await;
        assert!(seq(g.node()) < seq(&read_node), "{} vs {read_node}", g.node());
        println!(
            "interop_read_write_lock: Curator 5.4.0 downgrade puts its read node {read_node} behind the queued \
             writer {}; the writer holds while the downgraded reader does (CURATOR-621, fixed in 5.5.0)",
            g.node()
        );
        g.release().await.unwrap();
        cw.release("READ_RELEASE").await;
    }
    it.phase_done("downgrades", std::slice::from_ref(&path), t).await;

    // 5. Mixed loop: a Curator writer and reader, a zoolock writer and two
    //    zoolock readers.
    let t = Instant::now();
    const CYCLES: usize = 6;
    let tasks = vec![
        tokio::spawn(java_loop(cw, "WRITE_ACQUIRE", path.clone(), "WRITE_RELEASE", Mode::Write, CYCLES)),
        tokio::spawn(java_loop(cr1, "READ_ACQUIRE", path.clone(), "READ_RELEASE", Mode::Read, CYCLES)),
        tokio::spawn(zoolock_loop("zw".into(), halves[0].write.clone(), Mode::Write, CYCLES)),
        tokio::spawn(zoolock_loop("zr1".into(), halves[1].read.clone(), Mode::Read, CYCLES)),
        tokio::spawn(zoolock_loop("zr2".into(), halves[2].read.clone(), Mode::Read, CYCLES)),
    ];
    it.contention(tasks, CYCLES, |holds| check_exclusion(holds, true), std::slice::from_ref(&path), t).await;

    drop(halves);
    it.close(zs).await;
}

// ---- (c) semaphore ---------------------------------------------------------------------------

#[tokio::test(flavor = "multi_thread", worker_threads = 4)]
async fn interop_semaphore() {
    let Some((it, path)) = Interop::start("interop_semaphore").await else { return };
    let (leases, locks) = (format!("{path}/leases"), format!("{path}/locks"));
    let (jv, admin) = (&it.jv, &it.admin);
    let (z1, z2) = (connect(&it.addr).await, connect_plan(&it.addr, OpPlan::Curator).await);
    let (s1, s2) = (z1.semaphore(&path, 2).await.unwrap(), z2.semaphore(&path, 2).await.unwrap());

    // Full with one lease each side: a third contender of either kind times out.
    let (mut c1, mut c2) = (jv.peer("c1"), jv.peer("c2"));
    let (c1_node, _) = c1.acquire("SEM_ACQUIRE", &format!("{path} 2")).await;
    let mut l1 = within("z1", s1.acquire(1)).await.unwrap();
    let l1 = l1.pop().unwrap();
    c2.start_acquire("SEM_ACQUIRE", &format!("{path} 2 300"));
    assert!(c2.acquired().await.is_none(), "Curator got a third lease of 2");
    assert!(matches!(within("z2", s2.acquire_timeout(1, Duration::from_millis(300))).await, Err(Error::TimedOut)));
    let full = wait_children(admin, &leases, 2).await;
    assert!(c1_node.ends_with(&full[0]) && l1.node().ends_with(&full[1]), "{full:?}");
    // Waiters of both kinds get the leases as either kind returns one.
    let s2_wait = s2.clone();
    let z2_wait = tokio::spawn(async move { s2_wait.acquire(1).await.map(|mut l| (l.pop().unwrap(), now_us())) });
    wait_children(admin, &leases, 3).await;
    let (exit, _) = c1.release("SEM_RETURN").await;
    let (l2, enter) = join("z2", z2_wait).await.unwrap();
    assert!(enter >= exit);
    c2.start_acquire("SEM_ACQUIRE", &format!("{path} 2"));
    wait_children(admin, &leases, 3).await;
    handoff(&mut c2, 100, "Curator got a third lease of 2", zoolock_release(l1.release())).await;
    c2.release("SEM_RETURN").await;
    l2.release().await.unwrap();
    it.phase_done("handoffs", &[leases.clone(), locks.clone()], it.started).await;

    // Mixed loop: 2 Curator and 2 zoolock contenders on 2 leases.
    let t = Instant::now();
    const CYCLES: usize = 6;
    let mut tasks = vec![
        tokio::spawn(java_loop(c1, "SEM_ACQUIRE", format!("{path} 2"), "SEM_RETURN", Mode::Exclusive, CYCLES)),
        tokio::spawn(java_loop(c2, "SEM_ACQUIRE", format!("{path} 2"), "SEM_RETURN", Mode::Exclusive, CYCLES)),
    ];
    for (who, sem) in [("z1", s1.clone()), ("z2", s2.clone())] {
        tasks.push(tokio::spawn(async move {
            let mut holds = Vec::new();
            for i in 0..CYCLES {
                let lease = within(who, sem.acquire(1)).await.expect("zoolock lease").pop().unwrap();
                let enter = now_us();
                sleep(Duration::from_millis(3)).await;
                let exit = now_us();
                let node = lease.node().to_owned();
                lease.release().await.unwrap();
                holds.push(Hold { who: who.into(), mode: Mode::Exclusive, node, enter, exit });
                sleep(pause(i)).await;
            }
            holds
        }));
    }
    let at_most_two = |holds: &[Hold]| {
        let most = max_concurrent(holds);
        assert!(most <= 2, "{most} holders of a 2-lease semaphore: {holds:#?}");
    };
    it.contention(tasks, CYCLES, at_most_two, &[leases, locks], t).await;

    drop((s1, s2));
    it.close([z1, z2]).await;
}

// ---- (d) semaphore mutex -----------------------------------------------------------------------

#[tokio::test(flavor = "multi_thread", worker_threads = 4)]
async fn interop_semaphore_mutex() {
    let Some((it, path)) = Interop::start("interop_semaphore_mutex").await else { return };
    let jv = &it.jv;
    let (z1, z2) = (connect(&it.addr).await, connect_plan(&it.addr, OpPlan::Curator).await);

    const CYCLES: usize = 6;
    let mut tasks = curator_loops(jv, ("SEMMUTEX_ACQUIRE", "SEMMUTEX_RELEASE"), &path, CYCLES);
    for (who, client) in [("z1", &z1), ("z2", &z2)] {
        let lock = client.semaphore_mutex(&path).await.unwrap();
        tasks.push(tokio::spawn(zoolock_loop(who.into(), lock, Mode::Exclusive, CYCLES)));
    }
    // Nodes are lease nodes: leases are created under the internal lock, so
    // their sequence order is the grant order.
    let leases_in_order = |holds: &[Hold]| {
        for h in holds {
            assert!(h.node.starts_with(&format!("{path}/leases/")), "{h:?}");
        }
        check_exclusion(holds, true);
    };
    let paths = [format!("{path}/leases"), format!("{path}/locks")];
    it.contention(tasks, CYCLES, leases_in_order, &paths, it.started).await;

    it.close([z1, z2]).await;
}

// ---- (e) revocation --------------------------------------------------------------------------

#[tokio::test(flavor = "multi_thread", worker_threads = 4)]
async fn interop_revocation() {
    let Some((it, path)) = Interop::start("interop_revocation").await else { return };
    let (jv, admin) = (&it.jv, &it.admin);
    let z1 = connect(&it.addr).await;

    // Curator's Revoker asks a zoolock holder to release.
    let (mut c1, mut revoker) = (jv.peer("c1"), jv.peer("revoker"));
    let lock = z1.revocable_mutex(&path).await.unwrap();
    let guard = within("z1", lock.acquire()).await.unwrap();
    c1.start_acquire("MUTEX_ACQUIRE", &path);
    wait_children(admin, &path, 2).await;
    revoker.send("REVOKE", guard.node());
    revoker.expect("REVOKE_SENT").await;
    // Requests since this acquire began count, so awaiting after the
    // request has arrived still sees it.
    within("zoolock revocation_requested", guard.revocation_requested()).await;
    let why = "Curator waiter acquired before the zoolock holder released";
    handoff(&mut c1, 100, why, zoolock_release(guard.release())).await;
    c1.release("MUTEX_RELEASE").await;
    it.phase_done("Curator revokes zoolock", std::slice::from_ref(&path), it.started).await;

    // zoolock's revoke asks a Curator holder to release.
    let t = Instant::now();
    let (node, _) = c1.acquire("REVOCABLE_ACQUIRE", &path).await;
    let waiter = spawn_acquire(&z1.mutex(&path).await.unwrap());
    wait_children(admin, &path, 2).await;
    within("zoolock revoke", admin.revoke(&node)).await.unwrap();
    c1.expect("REVOKE_REQUESTED").await;
    let (exit, _) = c1.released().await;
    let (g, enter) = join("z1 waiter", waiter).await;
    assert!(enter >= exit);
    g.release().await.unwrap();
    it.phase_done("zoolock revokes Curator", std::slice::from_ref(&path), t).await;

    // Revoking waiters: both implementations watch their own node while they
    // wait, so a request made then is delivered (and acted on once held).
    let t = Instant::now();
    let mut c2 = jv.peer("c2");
    c1.acquire("MUTEX_ACQUIRE", &path).await;
    let z_waiter = spawn_acquire(&z1.revocable_mutex(&path).await.unwrap());
    wait_children(admin, &path, 2).await;
    let z_node = zoolock_participants(admin, &path, LockKind::Mutex).await[1].clone();
    revoker.send("REVOKE", &z_node);
    revoker.expect("REVOKE_SENT").await;
    c2.start_acquire("REVOCABLE_ACQUIRE", &path);
    wait_children(admin, &path, 3).await;
    let c2_node = revoker.participants("mutex", &path).await[2].clone();
    within("zoolock revoke", admin.revoke(&c2_node)).await.unwrap();
    c2.expect("REVOKE_REQUESTED").await;
    c1.release("MUTEX_RELEASE").await;
    let (g, _) = join("revoked zoolock waiter", z_waiter).await;
    assert_eq!(g.node(), z_node);
    within("revocation asked while waiting", g.revocation_requested()).await;
    let exit = now_us();
    g.release().await.unwrap();
    let (node, enter) = c2.acquired().await.unwrap();
    assert_eq!(node, c2_node);
    assert!(enter >= exit);
    // Curator's listener already ran; its release follows the acquire.
    c2.released().await;
    it.phase_done("of waiters, both ways", std::slice::from_ref(&path), t).await;

    drop(lock);
    it.close([z1]).await;
}

// ---- (f) participants --------------------------------------------------------------------------

#[tokio::test(flavor = "multi_thread", worker_threads = 4)]
async fn interop_participants() {
    let Some((it, path)) = Interop::start("interop_participants").await else { return };
    let (jv, admin) = (&it.jv, &it.admin);
    let (z1, z2) = (connect(&it.addr).await, connect(&it.addr).await);
    let mut lister = jv.peer("lister");

    // Mutex: zoolock holder, then Curator, zoolock, Curator waiters.
    let (mut c1, mut c2) = (jv.peer("c1"), jv.peer("c2"));
    let g1 = within("z1", z1.mutex(&path).await.unwrap().acquire()).await.unwrap();
    c1.start_acquire("MUTEX_ACQUIRE", &path);
    wait_children(admin, &path, 2).await;
    let w2 = spawn_acquire(&z2.mutex(&path).await.unwrap());
    wait_children(admin, &path, 3).await;
    c2.start_acquire("MUTEX_ACQUIRE", &path);
    wait_children(admin, &path, 4).await;
    let queue = lister.participants("mutex", &path).await;
    assert_eq!(queue, zoolock_participants(admin, &path, LockKind::Mutex).await);
    assert_eq!(queue.len(), 4);
    assert_eq!(queue[0], g1.node(), "both sides see the zoolock holder first");
    assert!(queue.windows(2).all(|w| seq(&w[0]) < seq(&w[1])), "{queue:?}");
    // Walk down the queue: each next holder is the next listed node, and both
    // sides keep agreeing.
    g1.release().await.unwrap();
    let (n1, _) = c1.acquired().await.unwrap();
    assert_eq!(n1, queue[1]);
    let rest = lister.participants("mutex", &path).await;
    assert_eq!(rest, queue[1..]);
    assert_eq!(rest, zoolock_participants(admin, &path, LockKind::Mutex).await);
    c1.release("MUTEX_RELEASE").await;
    let (g2, _) = join("z2", w2).await;
    assert_eq!(g2.node(), queue[2]);
    let rest = lister.participants("mutex", &path).await;
    assert_eq!(rest, queue[2..]);
    assert_eq!(rest, zoolock_participants(admin, &path, LockKind::Mutex).await);
    g2.release().await.unwrap();
    let (n2, _) = c2.acquired().await.unwrap();
    assert_eq!(n2, queue[3]);
    c2.release("MUTEX_RELEASE").await;
    assert_no_leaks(admin, std::slice::from_ref(&path)).await;
    assert!(lister.participants("mutex", &path).await.is_empty());
    assert!(zoolock_participants(admin, &path, LockKind::Mutex).await.is_empty());

    // Read-write lock: Curator writer holds; zoolock reader, Curator reader and
    // zoolock writer wait. Curator lists each half separately (filtered by
    // __READ__ / __WRIT__, in queue order); zoolock lists both in one order.
    let rw_path = format!("{path}-rw");
    let z1r = z1.read_write_lock(&rw_path).await.unwrap().read;
    let z2w = z2.read_write_lock(&rw_path).await.unwrap().write;
    let (mut cw, mut cr) = (jv.peer("cw"), jv.peer("cr"));
    let (cw_node, _) = cw.acquire("WRITE_ACQUIRE", &rw_path).await;
    let zr = spawn_acquire(&z1r);
    wait_children(admin, &rw_path, 2).await;
    cr.start_acquire("READ_ACQUIRE", &rw_path);
    wait_children(admin, &rw_path, 3).await;
    let zw = spawn_acquire(&z2w);
    wait_children(admin, &rw_path, 4).await;
    let all = zoolock_participants(admin, &rw_path, LockKind::ReadWriteLock).await;
    assert_eq!(all.len(), 4);
    assert_eq!(all[0], cw_node);
    assert!(all.windows(2).all(|w| seq(&w[0]) < seq(&w[1])), "{all:?}");
    let only = |marker: &str| all.iter().filter(|n| n.contains(marker)).cloned().collect::<Vec<_>>();
    assert_eq!(lister.participants("write", &rw_path).await, only("__WRIT__"));
    assert_eq!(lister.participants("read", &rw_path).await, only("__READ__"));
    assert_eq!(only("__WRIT__").len(), 2);
    cw.release("WRITE_RELEASE").await;
    let (gr, _) = join("zoolock reader", zr).await;
    let (cr_node, _) = cr.acquired().await.unwrap();
    assert_eq!([gr.node(), cr_node.as_str()], [all[1].as_str(), all[2].as_str()]);
    gr.release().await.unwrap();
    cr.release("READ_RELEASE").await;
    let (gw, _) = join("zoolock writer", zw).await;
    assert_eq!(gw.node(), all[3]);
    gw.release().await.unwrap();
    assert_no_leaks(admin, std::slice::from_ref(&rw_path)).await;

    // Semaphore: Curator returns bare lease names in server order, zoolock
    // full paths in sequence order; the same leases either way.
    let sem_path = format!("{path}-sem");
    let sem = z1.semaphore(&sem_path, 2).await.unwrap();
    let (c_lease, _) = c1.acquire("SEM_ACQUIRE", &format!("{sem_path} 2")).await;
    let z_lease = within("z1 lease", sem.acquire(1)).await.unwrap().pop().unwrap();
    let mut curator = lister.participants("semaphore", &sem_path).await;
    curator.sort_by_key(|n| seq(n));
    let ours = zoolock_participants(admin, &sem_path, LockKind::Semaphore).await;
    let expected = [c_lease.clone(), z_lease.node().to_owned()];
    assert_eq!(ours, expected);
    let leases_dir = format!("{sem_path}/leases/");
    let curator_full: Vec<String> = curator.iter().map(|n| format!("{leases_dir}{n}")).collect();
    assert_eq!(curator_full, expected);
    c1.release("SEM_RETURN").await;
    z_lease.release().await.unwrap();
    assert_no_leaks(admin, &[format!("{sem_path}/leases"), format!("{sem_path}/locks")]).await;

    drop(sem);
    it.close([z1, z2]).await;
}

// ---- (g) over mutual TLS -----------------------------------------------------------------

/// Curator (through `ZKClientConfig`'s system properties: Netty client socket,
/// PKCS12 key and trust stores) and zoolock (rustls, PEM) contend on one
/// mutex over the mutual-TLS port of the server in `ZOOLOCK_TEST_TLS_DIR`
/// (started by `.ci/run` with `scripts/zk-server.sh`, `ZK_SECURE=tls`).
#[tokio::test(flavor = "multi_thread", worker_threads = 4)]
async fn interop_mutex_over_tls() {
    let Some(dir) = std::env::var("ZOOLOCK_TEST_TLS_DIR").ok().filter(|d| !d.trim().is_empty()) else {
        eprintln!("skipped: ZOOLOCK_TEST_TLS_DIR is not set (`bash .ci/run` starts a TLS server and sets it)");
        return;
    };
    let Some(java) = java_or_skip("interop_mutex_over_tls") else { return };
    let dir = std::path::PathBuf::from(dir.trim());
    let tls = dir.join("tls");
    let read = |f: &str| std::fs::read_to_string(dir.join(f)).unwrap_or_else(|e| panic!("{f}: {e}")).trim().to_owned();
    let addr = format!("127.0.0.1:{}", read("tls_port"));
    let pass = read("tls/store.pass");
    let store = |kind: &str, file: &str| {
        [
            format!("-Dzookeeper.ssl.{kind}.location={}", tls.join(file).display()),
            format!("-Dzookeeper.ssl.{kind}.password={pass}"),
            format!("-Dzookeeper.ssl.{kind}.type=PKCS12"),
        ]
    };
    let mut jvm = vec![
        "-Dzookeeper.client.secure=true".to_owned(),
        "-Dzookeeper.clientCnxnSocket=org.apache.zookeeper.ClientCnxnSocketNetty".to_owned(),
    ];
    jvm.extend(store("keyStore", "client.p12"));
    jvm.extend(store("trustStore", "trust.p12"));

    let started = Instant::now();
    let path = base_path("mutex-tls");
    let jv = Java::start_with(java, &addr, &jvm).await;
    let tls_options = || {
        zoolock_tokio::TlsOptions::from_files(
            &tls.join("ca.pem"),
            Some(&tls.join("client.pem")),
            Some(&tls.join("client.key")),
        )
        .expect("test PKI")
    };
    let connect_tls = |plan: OpPlan| {
        let options = Options::default().session_timeout(Duration::from_secs(10)).plan(plan).tls(tls_options());
        within("zoolock TLS connect", zoolock_tokio::connect(&addr, options))
    };
    let admin = connect_tls(OpPlan::default()).await.expect("admin over TLS");
    let z1 = connect_tls(OpPlan::default()).await.expect("z1 over TLS");
    let it = Interop { test: "interop_mutex_over_tls", addr: addr.clone(), jv, admin, started };

    const CYCLES: usize = 6;
    let mut tasks = curator_loops(&it.jv, MUTEX, &path, CYCLES);
    let lock = z1.mutex(&path).await.unwrap();
    tasks.push(tokio::spawn(zoolock_loop("z1".into(), lock, Mode::Exclusive, CYCLES)));
    it.contention(tasks, CYCLES, |holds| check_exclusion(holds, true), std::slice::from_ref(&path), started).await;
    it.close([z1]).await;
}
