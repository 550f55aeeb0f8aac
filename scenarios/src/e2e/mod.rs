//! The scenarios every transport runs end to end: a transport's
//! `tests/e2e.rs` makes one `#[test]` per scenario with
//! [`e2e_tests!`](crate::e2e_tests) (the list, in `list.rs`), each calling
//! [`run`] with its [`TestRuntime`] and the scenario.
//!
//! Every scenario takes an [`Env`]: the server (the real one from
//! `ZOOLOCK_TEST_CONNECT`, which `bash .ci/run` starts and sets; without it,
//! the in-process model server of `zoolock-testkit`, so the scenarios never
//! skip) and the runtime under test, used for connecting, sleeping and
//! spawning, so the same code runs on tokio and on smol. Paths are unique per
//! runtime, process and scenario, so the scenarios run in parallel against
//! one server.
//!
//! `ZOOLOCK_TEST_SEED=N` replays the randomized cancellation runs.

use std::future::Future;
use std::pin::Pin;
use std::sync::atomic::{AtomicBool, AtomicUsize, Ordering};
use std::sync::{Arc, Mutex as StdMutex};
use std::task::{Context, Poll};
use std::time::{Duration, Instant};

use futures_channel::oneshot;
use futures_lite::{StreamExt, future};
use zoolock_driver::{Acl, Bytes, CreateMode, ErrorCode, MultiResult};
use zoolock_driver::{ApiMisuse, Op, RequestError, ZkPath};
use zoolock_driver::{
    Client, ConnectionState, Error, Guard, Hold, HoldStatus, Lock, LockKind, OpPlan, Options, ReadWriteLock, Runtime,
    Suspension,
};

mod cancellation;
mod chroot;
mod compressed;
mod connect_errors;
mod election;
mod holders;
mod list;
mod loss;
mod many;
mod resized;
mod rw_sharing;
mod semaphore_api;
mod session;
pub use cancellation::{
    cancellation_multi_lock, cancellation_mutex, cancellation_rwlock, cancellation_semaphore,
    cancellation_semaphore_mutex,
};
pub use chroot::{chroot_recreated, chroot_unavailable};
pub use compressed::compressed_data;
pub use connect_errors::{
    connect_refused_or_unresolved_fails_fast, connect_to_a_silent_server_times_out,
    refusals_after_a_session_keep_trying,
};
pub use election::{
    election_cancelled_wait, election_latch, election_node_deleted, election_policy_on_a_short_cut,
    election_run_requeues, election_selector, max_hold, observe,
};
pub use holders::{fenced_writes, participants, queue_positions, revocation};
pub use loss::{
    loss_lease_deleted, loss_lost_after_session_timeout, loss_node_deleted, loss_quorum_unconfirmed, loss_renewal,
    loss_suspended_then_reconnected,
};
pub use many::many_locks_at_once;
pub use resized::{lease_revocation, semaphore_resized, shared_count};
pub use rw_sharing::rwlock_sharing;
pub use semaphore_api::semaphore_try_acquire_and_acquire_one;
pub use session::{chroot_created, close_session, connection_states, path_errors_name_the_path, plain_ops};
use zoolock_testkit::proxy::Proxy;

use crate::TestRuntime;

/// Runs `scenario` on `R` against the scenarios' server, blocking the test's
/// thread until it ends; a failed assertion panics the test.
pub fn run<R: TestRuntime>(scenario: impl AsyncFnOnce(&Env)) {
    R::block_on(async { scenario(&Env::new(R::runtime(), R::LABEL)).await })
}

// ---- environment ---------------------------------------------------------------------

/// The server and the runtime a scenario runs on ([`run`] makes it).
#[derive(Clone)]
pub struct Env {
    addr: String,
    runtime: Arc<dyn Runtime>,
    label: &'static str,
}

impl Env {
    /// The scenarios' server (see the module docs) on `runtime`.
    fn new(runtime: Arc<dyn Runtime>, label: &'static str) -> Env {
        Env { addr: zoolock_testkit::any_server(), runtime, label }
    }

    fn options() -> Options {
        Options::default().connect_timeout(Duration::from_secs(10))
    }

    async fn client(&self) -> Client {
        self.client_with(Env::options()).await
    }

    /// `N` sessions, connected one after the other.
    async fn clients<const N: usize>(&self) -> [Client; N] {
        let mut clients = Vec::with_capacity(N);
        for _ in 0..N {
            clients.push(self.client().await);
        }
        clients.try_into().unwrap_or_else(|_| unreachable!("N clients"))
    }

    async fn client_with(&self, options: Options) -> Client {
        self.client_at(&self.addr.clone(), options).await
    }

    async fn client_at(&self, addr: &str, options: Options) -> Client {
        match Client::connect(self.runtime.clone(), addr, options).await {
            Ok(client) => client,
            Err(e) => panic!("cannot connect to {addr} (ZOOLOCK_TEST_CONNECT={}): {e}", self.addr),
        }
    }

    async fn sleep(&self, d: Duration) {
        self.runtime.sleep_until(std::time::Instant::now() + d).await;
    }

    /// `f`'s output, or `None` once `d` has passed (dropping `f`).
    async fn timeout<T>(&self, d: Duration, f: impl Future<Output = T>) -> Option<T> {
        future::or(async { Some(f.await) }, async {
            self.sleep(d).await;
            None
        })
        .await
    }

    /// `f`'s output; panics if it takes longer than `d`.
    async fn within<T>(&self, d: Duration, what: &str, f: impl Future<Output = T>) -> T {
        match self.timeout(d, f).await {
            Some(v) => v,
            None => panic!("{what}: not done within {d:?}"),
        }
    }

    fn spawn<T: Send + 'static>(&self, f: impl Future<Output = T> + Send + 'static) -> Task<T> {
        let (tx, rx) = oneshot::channel();
        self.runtime.spawn(Box::pin(async move {
            let _ = tx.send(f.await);
        }));
        Task(rx)
    }

    /// A lock path of its own for this runtime, process and scenario.
    fn path(&self, name: &str) -> String {
        format!("/zoolock-e2e-{}-{}-{name}", self.label, std::process::id())
    }
}

/// A spawned future's output.
struct Task<T>(oneshot::Receiver<T>);

impl<T> Task<T> {
    /// The output if the task has finished.
    fn try_take(&mut self) -> Option<T> {
        self.0.try_recv().ok().flatten()
    }
}

impl<T> Future for Task<T> {
    type Output = T;

    fn poll(mut self: Pin<&mut Self>, cx: &mut Context<'_>) -> Poll<T> {
        match Pin::new(&mut self.0).poll(cx) {
            Poll::Ready(Ok(v)) => Poll::Ready(v),
            Poll::Ready(Err(_)) => panic!("a spawned task panicked or was dropped"),
            Poll::Pending => Poll::Pending,
        }
    }
}

/// Children of `path` (none if it does not exist), sorted.
async fn children(client: &Client, path: &str) -> Vec<String> {
    match client.get_children(path).await {
        Ok((mut names, _)) => {
            names.sort();
            names
        }
        Err(Error::Request(RequestError::Server(code))) if code == ErrorCode::NO_NODE => Vec::new(),
        Err(e) => panic!("get_children({path}): {e}"),
    }
}

/// Waits (a background delete may still be on its way) until `path` has no
/// children; panics with the leftovers after 5 s.
async fn assert_empty(env: &Env, client: &Client, path: &str) {
    let deadline = Instant::now() + Duration::from_secs(5);
    loop {
        let left = children(client, path).await;
        if left.is_empty() {
            return;
        }
        if Instant::now() > deadline {
            panic!("{path} still has children after 5 s: {left:?}");
        }
        env.sleep(Duration::from_millis(20)).await;
    }
}

/// Waits until `path` has `n` children.
async fn wait_children(env: &Env, client: &Client, path: &str, n: usize) {
    let deadline = Instant::now() + Duration::from_secs(5);
    loop {
        let now = children(client, path).await;
        if now.len() == n {
            return;
        }
        if Instant::now() > deadline {
            panic!("{path}: expected {n} children, have {now:?}");
        }
        env.sleep(Duration::from_millis(10)).await;
    }
}

/// Deletes `path` and everything under it (test clean-up; NoNode is fine).
async fn remove_tree(client: &Client, path: &str) {
    for child in children(client, path).await {
        Box::pin(remove_tree(client, &format!("{path}/{child}"))).await;
    }
    match client.delete(path, None).await {
        Ok(()) => {}
        Err(Error::Request(RequestError::Server(code))) if code == ErrorCode::NO_NODE => {}
        Err(e) => panic!("delete({path}): {e}"),
    }
}

async fn close_all(clients: &[&Client]) {
    for c in clients {
        c.close().await.expect("close");
    }
}

/// The end of a scenario: `path` is left with no children (as `observer`
/// sees it), then removed, and `clients` are closed.
async fn finish(env: &Env, observer: &Client, path: &str, clients: &[&Client]) {
    assert_empty(env, observer, path).await;
    remove_tree(observer, path).await;
    close_all(clients).await;
}

/// [`finish`] for a semaphore at `path`: no lease and no node of its
/// internal lock is left.
async fn finish_semaphore(env: &Env, observer: &Client, path: &str, clients: &[&Client]) {
    assert_empty(env, observer, &format!("{path}/leases")).await;
    assert_empty(env, observer, &format!("{path}/locks")).await;
    remove_tree(observer, path).await;
    close_all(clients).await;
}

// ---- mutex ---------------------------------------------------------------------------

/// Exclusion between two clients, try_acquire and acquire_timeout while held,
/// release on guard drop, fencing tokens; in both op plans.
pub async fn mutex_exclusion(env: &Env) {
    for plan in [OpPlan::Pipelined, OpPlan::Curator] {
        let path = env.path(&format!("mutex-{plan:?}"));
        let a = env.client_with(Env::options().plan(plan)).await;
        let b = env.client_with(Env::options().plan(plan)).await;
        let la = a.mutex(&path).await.unwrap();
        let lb = b.mutex(&path).await.unwrap();

        let ga = la.acquire().await.unwrap();
        assert_eq!(ga.status(), HoldStatus::Held);
        assert_eq!(la.status(), HoldStatus::Held);
        assert!(ga.node().starts_with(&format!("{path}/_c_")), "{}", ga.node());
        assert!(lb.try_acquire().await.unwrap().is_none(), "try_acquire while held elsewhere");
        let started = Instant::now();
        let r = lb.acquire_timeout(Duration::from_millis(200)).await;
        assert!(matches!(r, Err(Error::TimedOut)), "{r:?}");
        assert!(started.elapsed() >= Duration::from_millis(190), "{:?}", started.elapsed());
        // Timed-out and refused attempts leave nothing behind.
        assert_eq!(children(&b, &path).await.len(), 1);

        let lb2 = lb.clone();
        let mut waiting = env.spawn(async move { lb2.acquire().await });
        env.sleep(Duration::from_millis(150)).await;
        assert!(waiting.try_take().is_none(), "acquired while held elsewhere");
        let t1 = ga.fencing_token();
        drop(ga); // released in the background
        let gb =
            env.within(Duration::from_secs(5), "acquire after the holder dropped its guard", waiting).await.unwrap();
        assert!(gb.fencing_token() > t1, "{:?} <= {t1:?}", gb.fencing_token());
        // b holds, so a's delete reached the server; a's handle stopped
        // reading the hold before that delete was written (a's answer to it
        // may still be on its way: see mutex_status_on_release).
        assert_eq!(la.status(), HoldStatus::NotHeld);
        assert!(la.try_acquire().await.unwrap().is_none());
        let t2 = gb.fencing_token();
        gb.release().await.unwrap();
        assert_eq!(lb.status(), HoldStatus::NotHeld);
        // In the pipelined plan `release` returns once the delete is queued;
        // another session's create can reach the server first. `settled` is
        // the server's answer to that delete.
        lb.settled().await.unwrap();
        let ga = la.try_acquire().await.unwrap().expect("free after release");
        assert!(ga.fencing_token() > t2);
        drop(ga);
        assert_empty(env, &b, &path).await;
        close_all(&[&a, &b]).await;
        let c = env.client().await;
        finish(env, &c, &path, &[&c]).await;
    }
}

/// A lock handle stops reading `Held` once its last guard is let go, before
/// the delete goes out: the server may hand the lock on as soon as it has
/// the delete, before its answer is back, and the old holder's handle must
/// not say `Held` beside the new holder. Here the answer is held back (a
/// frozen proxy keeps the delete from the server): the handle reads
/// `NotHeld` at once, the node is still there, and once the proxy forwards
/// again the release completes. In both plans.
pub async fn mutex_status_on_release(env: &Env) {
    for plan in [OpPlan::Pipelined, OpPlan::Curator] {
        let path = env.path(&format!("status-on-release-{plan:?}"));
        let proxy = Proxy::start(&env.addr);
        let a = env.client_at(&proxy.addr, Env::options().plan(plan).session_timeout(Duration::from_secs(10))).await;
        let observer = env.client().await;
        let la = a.mutex(&path).await.unwrap();
        let ga = la.acquire().await.unwrap();
        assert_eq!(la.status(), HoldStatus::Held);
        proxy.freeze(); // nothing reaches the server once it returns
        drop(ga);
        let deadline = Instant::now() + Duration::from_secs(1);
        while la.status() != HoldStatus::NotHeld {
            assert!(
                Instant::now() < deadline,
                "{plan:?}: the handle reads {:?} after its guard was dropped",
                la.status()
            );
            env.sleep(Duration::from_millis(5)).await;
        }
        assert_eq!(children(&observer, &path).await.len(), 1, "{plan:?}: the delete is held back");
        proxy.restore();
        env.within(Duration::from_secs(5), "the release's answer", la.settled()).await.unwrap();
        assert_eq!(la.status(), HoldStatus::NotHeld);
        close_all(&[&a]).await;
        finish(env, &observer, &path, &[&observer]).await;
    }
}

/// `client`'s mutex at `path`, acquired: the handle and the guard.
async fn held(client: &Client, path: &str) -> (Lock, Guard) {
    let lock = client.mutex(path).await.unwrap();
    let guard = lock.acquire().await.unwrap();
    (lock, guard)
}

/// Three waiters are served in the order they queued.
pub async fn mutex_fifo(env: &Env) {
    let path = env.path("fifo");
    let holder = env.client().await;
    let (_lh, gh) = held(&holder, &path).await;
    let order = Arc::new(StdMutex::new(Vec::new()));
    let mut clients = Vec::new();
    let mut tasks = Vec::new();
    for i in 1..=3 {
        let c = env.client().await;
        let lock = c.mutex(&path).await.unwrap();
        let (order, env2) = (order.clone(), env.clone());
        tasks.push(env.spawn(async move {
            let g = lock.acquire().await?;
            order.lock().unwrap().push((i, g.fencing_token()));
            env2.sleep(Duration::from_millis(30)).await;
            g.release().await
        }));
        clients.push(c);
        // Queue strictly one after the other.
        wait_children(env, &holder, &path, i + 1).await;
    }
    env.sleep(Duration::from_millis(50)).await;
    assert!(order.lock().unwrap().is_empty());
    gh.release().await.unwrap();
    for t in tasks {
        env.within(Duration::from_secs(10), "FIFO waiter", t).await.unwrap();
    }
    let order = order.lock().unwrap().clone();
    assert_eq!(order.iter().map(|(i, _)| *i).collect::<Vec<_>>(), vec![1, 2, 3]);
    assert!(order.windows(2).all(|w| w[0].1 < w[1].1), "tokens not increasing: {order:?}");
    assert_empty(env, &holder, &path).await;
    for c in &clients {
        c.close().await.unwrap();
    }
    remove_tree(&holder, &path).await;
    holder.close().await.unwrap();
}

/// Explicit reentrancy: `Guard::reenter` nests on the same node, counted as
/// Curator counts; a clone's acquire never gets another task's hold. An
/// acquire right after a dropped guard on the same handle, in both plans.
pub async fn mutex_reentrancy(env: &Env) {
    for plan in [OpPlan::Pipelined, OpPlan::Curator] {
        let path = env.path(&format!("reentrant-{plan:?}"));
        let a = env.client_with(Env::options().plan(plan)).await;
        let b = env.client().await;
        let la = a.mutex(&path).await.unwrap();
        let lb = b.mutex(&path).await.unwrap();
        let g1 = la.acquire().await.unwrap();
        let g2 = g1.reenter().await.unwrap();
        let g3 = g2.reenter().await.unwrap();
        assert!(la.clone().try_acquire().await.unwrap().is_none(), "a clone waits: no hold of another task");
        assert_eq!(g1.node(), g2.node());
        assert_eq!(g1.node(), g3.node());
        assert_eq!(g1.fencing_token(), g3.fencing_token());
        assert_eq!(children(&b, &path).await.len(), 1, "one node for all holds");
        g3.release().await.unwrap();
        drop(g2);
        assert!(lb.try_acquire().await.unwrap().is_none(), "still held once");
        assert_eq!(la.status(), HoldStatus::Held);
        assert_eq!(g1.status(), HoldStatus::Held);
        g1.release().await.unwrap();
        assert_eq!(la.status(), HoldStatus::NotHeld);
        // A pipelined release completes once its delete is queued: another
        // client sees the lock free once the server has applied it.
        la.settled().await.unwrap();
        let gb = lb.try_acquire().await.unwrap().expect("free after the last hold");
        drop(gb);

        // Drop, then at once acquire again on the same handle: in the
        // Curator plan the delete is still on its way; the acquire waits.
        for _ in 0..5 {
            let g = la.acquire().await.unwrap();
            drop(g);
            let g = env.within(Duration::from_secs(5), "acquire after drop", la.acquire()).await.unwrap();
            g.release().await.unwrap();
        }
        assert_empty(env, &b, &path).await;
        close_all(&[&a, &b]).await;
        cleanup(env, &[&path]).await;
    }
}

/// Concurrent acquires on one handle queue: a timed one behind a waiting
/// one times out (no error, no hold), the waiting one is not disturbed, and
/// a third gets the lock after the first.
pub async fn mutex_concurrent_on_one_handle(env: &Env) {
    let path = env.path("one-handle");
    let [a, b] = env.clients().await;
    let la = a.mutex(&path).await.unwrap();
    let gb = b.mutex(&path).await.unwrap().acquire().await.unwrap();
    let la2 = la.clone();
    let first = env.spawn(async move { la2.acquire().await });
    wait_children(env, &a, &path, 2).await;
    let second = la.acquire_timeout(Duration::from_millis(100)).await;
    assert!(matches!(second, Err(Error::TimedOut)), "{second:?}");
    let la3 = la.clone();
    let mut third = env.spawn(async move { la3.acquire().await });
    env.sleep(Duration::from_millis(50)).await;
    assert_eq!(children(&a, &path).await.len(), 2, "the third waits in the process, not on the server");
    gb.release().await.unwrap();
    let g = env.within(Duration::from_secs(5), "the first acquire", first).await.unwrap();
    env.sleep(Duration::from_millis(50)).await;
    assert!(third.try_take().is_none(), "the third waits for the first's release");
    g.release().await.unwrap();
    let g3 = env.within(Duration::from_secs(5), "the third acquire", third).await.unwrap();
    g3.release().await.unwrap();
    finish(env, &a, &path, &[&a, &b]).await;
}

/// Counts holders inside a critical section; every overlap is recorded.
#[derive(Default)]
struct Section {
    inside: AtomicUsize,
    overlaps: AtomicUsize,
    entries: AtomicUsize,
}

impl Section {
    async fn run(&self, env: &Env, hold: Duration) {
        if self.inside.fetch_add(1, Ordering::SeqCst) != 0 {
            self.overlaps.fetch_add(1, Ordering::SeqCst);
        }
        self.entries.fetch_add(1, Ordering::SeqCst);
        env.sleep(hold).await;
        self.inside.fetch_sub(1, Ordering::SeqCst);
    }
}

/// 8 tasks × 30 acquires through clones of one `Lock`, beside a second
/// client on the same path: no overlapping holds, no errors.
pub async fn shared_handle_exclusion(env: &Env) {
    let path = env.path("shared-handle");
    let [a, b] = env.clients().await;
    let lock = a.mutex(&path).await.unwrap();
    let other = b.mutex(&path).await.unwrap();
    let section = Arc::new(Section::default());
    let errors = Arc::new(AtomicUsize::new(0));
    let mut tasks = Vec::new();
    for i in 0..9 {
        let lock = if i < 8 { lock.clone() } else { other.clone() };
        let (env2, section, errors) = (env.clone(), section.clone(), errors.clone());
        tasks.push(env.spawn(async move {
            for _ in 0..30 {
                match lock.acquire().await {
                    Ok(g) => {
                        assert_eq!(g.status(), HoldStatus::Held);
                        section.run(&env2, Duration::from_micros(300)).await;
                        if g.release().await.is_err() {
                            errors.fetch_add(1, Ordering::SeqCst);
                        }
                    }
                    Err(e) => {
                        eprintln!("acquire failed: {e}");
                        errors.fetch_add(1, Ordering::SeqCst);
                    }
                }
            }
        }));
    }
    for t in tasks {
        env.within(Duration::from_secs(120), "the shared-handle tasks", t).await;
    }
    assert_eq!(section.overlaps.load(Ordering::SeqCst), 0, "overlapping holds");
    assert_eq!(errors.load(Ordering::SeqCst), 0, "errors");
    assert_eq!(section.entries.load(Ordering::SeqCst), 270);
    lock.settled().await.unwrap();
    finish(env, &b, &path, &[&a, &b]).await;
}

/// Tasks queued on one handle are granted in the order they asked.
pub async fn shared_handle_fifo(env: &Env) {
    let path = env.path("shared-fifo");
    let a = env.client().await;
    let (lock, first) = held(&a, &path).await;
    let order = Arc::new(StdMutex::new(Vec::new()));
    let mut tasks = Vec::new();
    for i in 0..6 {
        let (lock, order) = (lock.clone(), order.clone());
        let mut task = Box::pin(async move {
            let g = lock.acquire().await.unwrap();
            order.lock().unwrap().push(i);
            g.release().await.unwrap();
        });
        // The first poll queues the acquire (its ticket and command go out
        // before it first waits), so the acquires queue in this order
        // however the runtime schedules the tasks.
        assert!(future::poll_once(&mut task).await.is_none(), "granted while the lock is held");
        tasks.push(env.spawn(task));
    }
    first.release().await.unwrap();
    for t in tasks {
        env.within(Duration::from_secs(10), "the queued tasks", t).await;
    }
    assert_eq!(*order.lock().unwrap(), (0..6).collect::<Vec<_>>(), "grants in call order");
    lock.settled().await.unwrap();
    remove_tree(&a, &path).await;
    a.close().await.unwrap();
}

/// Tasks sharing one `Semaphore` each get their own leases, never more than
/// the limit at once.
pub async fn semaphore_shared_handle(env: &Env) {
    let path = env.path("sem-shared");
    let a = env.client().await;
    let sem = a.semaphore(&path, 2).await.unwrap();
    let inside = Arc::new(AtomicUsize::new(0));
    let peak = Arc::new(AtomicUsize::new(0));
    let mut tasks = Vec::new();
    for _ in 0..5 {
        let (sem, env2, inside, peak) = (sem.clone(), env.clone(), inside.clone(), peak.clone());
        tasks.push(env.spawn(async move {
            for _ in 0..6 {
                let leases = sem.acquire(1).await.unwrap();
                assert_eq!(leases.len(), 1);
                let now = inside.fetch_add(1, Ordering::SeqCst) + 1;
                peak.fetch_max(now, Ordering::SeqCst);
                assert_eq!(leases[0].status(), HoldStatus::Held);
                env2.sleep(Duration::from_millis(2)).await;
                inside.fetch_sub(1, Ordering::SeqCst);
                for l in leases {
                    l.release().await.unwrap();
                }
            }
        }));
    }
    for t in tasks {
        env.within(Duration::from_secs(60), "the semaphore tasks", t).await;
    }
    assert!(peak.load(Ordering::SeqCst) <= 2, "more than 2 leases at once");
    sem.settled().await.unwrap();
    assert_empty(env, &a, &format!("{path}/leases")).await;
    remove_tree(&a, &path).await;
    a.close().await.unwrap();
}

// ---- read-write lock -----------------------------------------------------------------

/// Readers share, a writer excludes, downgrade works, upgrade is refused.
pub async fn rwlock(env: &Env) {
    let path = env.path("rwlock");
    let [a, b, c] = env.clients().await;
    let ReadWriteLock { read: ra, write: wa } = a.read_write_lock(&path).await.unwrap();
    let ReadWriteLock { read: rb, write: wb } = b.read_write_lock(&path).await.unwrap();
    let ReadWriteLock { read: rc, write: wc } = c.read_write_lock(&path).await.unwrap();

    // Readers share.
    let ga = ra.acquire().await.unwrap();
    let gb = env.within(Duration::from_secs(5), "second reader", rb.acquire()).await.unwrap();
    assert!(ga.node().contains("__READ__") && gb.node().contains("__READ__"));
    // A writer is excluded.
    assert!(wc.try_acquire().await.unwrap().is_none());
    assert!(matches!(wc.acquire_timeout(Duration::from_millis(150)).await, Err(Error::TimedOut)));
    // A write through the reader's own pair waits for the process's read
    // hold (it could be another task's), and the read hold is undisturbed.
    assert!(wa.try_acquire().await.unwrap().is_none(), "write beside the process's own read");
    let up = wa.acquire_timeout(Duration::from_millis(100)).await;
    assert!(matches!(up, Err(Error::TimedOut)), "{up:?}");
    assert_eq!(ga.status(), HoldStatus::Held);
    // (Listed by c, so after the delete of its timed-out write node.)
    assert_eq!(children(&c, &path).await.len(), 2, "no write node left by the waiting write");

    let wc2 = wc.clone();
    let mut writer = env.spawn(async move { wc2.acquire().await });
    wait_children(env, &a, &path, 3).await;
    ga.release().await.unwrap();
    env.sleep(Duration::from_millis(50)).await;
    assert!(writer.try_take().is_none(), "writer in while a reader holds");
    drop(gb);
    let gw = env.within(Duration::from_secs(5), "writer after the readers", writer).await.unwrap();
    assert!(gw.node().contains("__WRIT__"));
    // Readers are excluded by the writer, also the writer's own pair's.
    assert!(ra.try_acquire().await.unwrap().is_none());
    assert!(rc.try_acquire().await.unwrap().is_none(), "a read of the writer's pair waits too");

    // Downgrade: the writer takes the read half at once, then lets go of
    // the write half; other readers join, writers stay out.
    let gr = env.within(Duration::from_secs(1), "downgrade", gw.downgrade()).await.unwrap();
    assert!(gr.node().contains("__READ__"));
    let wtoken = gw.fencing_token();
    gw.release().await.unwrap();
    assert_eq!(rc.status(), HoldStatus::Held);
    assert_eq!(wc.status(), HoldStatus::NotHeld);
    // Another client's reader joins once the server has the (pipelined)
    // delete: only the downgrade's read node is left. (Not `wc.settled()`:
    // the pair still holds a read.)
    wait_children(env, &a, &path, 1).await;
    let ga = ra.try_acquire().await.unwrap().expect("a reader joins after the downgrade");
    assert!(wb.try_acquire().await.unwrap().is_none(), "writer excluded by readers");
    assert!(gr.fencing_token() > wtoken, "the read node is younger than the write node");
    drop(gr);
    drop(ga);
    let gw = env.within(Duration::from_secs(5), "writer once every reader left", wa.acquire()).await.unwrap();
    gw.release().await.unwrap();
    finish(env, &b, &path, &[&a, &b, &c]).await;
}

// ---- semaphores ----------------------------------------------------------------------

/// Three leases: the fourth waits until one is returned; qty 2.
pub async fn semaphore(env: &Env) {
    let path = env.path("semaphore");
    let leases_path = format!("{path}/leases");
    let [a, b, c] = env.clients().await;
    let sa = a.semaphore(&path, 3).await.unwrap();
    let sb = b.semaphore(&path, 3).await.unwrap();
    let sc = c.semaphore(&path, 3).await.unwrap();

    let mut held = sa.acquire(2).await.unwrap();
    assert_eq!(held.len(), 2);
    held.extend(sa.acquire(1).await.unwrap());
    assert_ne!(held[0].node(), held[1].node());
    assert_eq!(children(&a, &leases_path).await.len(), 3);
    let holders = a.participants(&path, LockKind::Semaphore).await.unwrap();
    assert_eq!(holders.len(), 3);

    assert!(matches!(sb.acquire_timeout(1, Duration::from_millis(150)).await, Err(Error::TimedOut)));
    let sb2 = sb.clone();
    let mut fourth = env.spawn(async move { sb2.acquire(1).await });
    env.sleep(Duration::from_millis(150)).await;
    assert!(fourth.try_take().is_none(), "a fourth lease out of three");
    held.pop().unwrap().release().await.unwrap();
    let lb = env.within(Duration::from_secs(5), "the fourth lease", fourth).await.unwrap();
    assert_eq!(lb.len(), 1);

    // qty 2 needs two free leases.
    let sc2 = sc.clone();
    let mut pair = env.spawn(async move { sc2.acquire(2).await });
    env.sleep(Duration::from_millis(150)).await;
    assert!(pair.try_take().is_none());
    drop(held.pop()); // one free: not enough
    env.sleep(Duration::from_millis(150)).await;
    assert!(pair.try_take().is_none(), "two leases granted with one free");
    drop(held.pop());
    let lc = env.within(Duration::from_secs(5), "two leases", pair).await.unwrap();
    assert_eq!(lc.len(), 2);
    let names = children(&a, &leases_path).await;
    assert_eq!(names.len(), 3, "{names:?}");
    assert!(lc[0].fencing_token() != lc[1].fencing_token());

    drop(lb);
    drop(lc);
    finish_semaphore(env, &a, &path, &[&a, &b, &c]).await;
}

/// The semaphore mutex: exclusion, not reentrant, release hands over.
pub async fn semaphore_mutex(env: &Env) {
    let path = env.path("semaphore-mutex");
    let [a, b] = env.clients().await;
    let la = a.semaphore_mutex(&path).await.unwrap();
    let lb = b.semaphore_mutex(&path).await.unwrap();
    let ga = la.acquire().await.unwrap();
    assert!(ga.node().starts_with(&format!("{path}/leases/")), "{}", ga.node());
    assert!(lb.try_acquire().await.unwrap().is_none());
    assert!(matches!(lb.acquire_timeout(Duration::from_millis(100)).await, Err(Error::TimedOut)));
    let again = ga.reenter().await;
    assert!(matches!(again, Err(Error::Misuse(ApiMisuse::NotReentrant))), "not reentrant: {again:?}");
    assert!(la.try_acquire().await.unwrap().is_none(), "a second task of the holder waits");
    assert_eq!(ga.status(), HoldStatus::Held);
    let lb2 = lb.clone();
    let mut waiting = env.spawn(async move { lb2.acquire().await });
    env.sleep(Duration::from_millis(100)).await;
    assert!(waiting.try_take().is_none());
    let t = ga.fencing_token();
    drop(ga);
    let gb = env.within(Duration::from_secs(5), "semaphore mutex hand-over", waiting).await.unwrap();
    assert!(gb.fencing_token() > t);
    gb.release().await.unwrap();
    lb.settled().await.unwrap(); // the (pipelined) delete applied, for the other client
    let ga = la.try_acquire().await.unwrap().expect("free again");
    ga.release().await.unwrap();
    finish_semaphore(env, &a, &path, &[&a, &b]).await;
}

// ---- multi-lock ----------------------------------------------------------------------

/// Both paths are held together; contention on the second rolls back the first.
pub async fn multi_lock(env: &Env) {
    let p1 = env.path("multi-1");
    let p2 = env.path("multi-2");
    let [a, b, c] = env.clients().await;
    let ma = a.multi_lock(&[&p1, &p2]).await.unwrap();
    let g = ma.acquire().await.unwrap();
    assert_eq!(children(&b, &p1).await.len(), 1);
    assert_eq!(children(&b, &p2).await.len(), 1);
    g.release().await.unwrap();
    assert_empty(env, &b, &p1).await;
    assert_empty(env, &b, &p2).await;

    // b holds the second path only.
    let gb = b.mutex(&p2).await.unwrap().acquire().await.unwrap();
    let mc = c.multi_lock(&[&p1, &p2]).await.unwrap();
    assert!(matches!(mc.acquire_timeout(Duration::from_millis(300)).await, Err(Error::TimedOut)));
    assert_empty(env, &b, &p1).await; // rolled back
    assert_eq!(children(&c, &p2).await.len(), 1);
    assert!(mc.try_acquire().await.unwrap().is_none());
    assert_empty(env, &b, &p1).await;

    // Waiting: the first path is held meanwhile, and both come once b lets go.
    let mc2 = mc.clone();
    let waiting = env.spawn(async move { mc2.acquire().await });
    wait_children(env, &b, &p1, 1).await;
    wait_children(env, &b, &p2, 2).await;
    assert!(a.mutex(&p1).await.unwrap().try_acquire().await.unwrap().is_none(), "first path held by the waiter");
    gb.release().await.unwrap();
    let gc = env.within(Duration::from_secs(5), "multi-lock", waiting).await.unwrap();
    assert_eq!(children(&b, &p1).await.len(), 1);
    assert_eq!(children(&b, &p2).await.len(), 1);
    drop(gc);
    assert_empty(env, &b, &p1).await;
    assert_empty(env, &b, &p2).await;
    remove_tree(&b, &p1).await;
    remove_tree(&b, &p2).await;
    close_all(&[&a, &b, &c]).await;
}

async fn wait_status(env: &Env, guard: &Guard, want: HoldStatus, within: Duration) {
    let deadline = Instant::now() + within;
    while guard.status() != want {
        assert!(Instant::now() < deadline, "hold status {:?}, wanted {want:?} within {within:?}", guard.status());
        env.sleep(Duration::from_millis(10)).await;
    }
}

/// Removes `paths` and everything under them, with a client of its own.
async fn cleanup(env: &Env, paths: &[&str]) {
    let c = env.client().await;
    for p in paths {
        remove_tree(&c, p).await;
    }
    c.close().await.unwrap();
}
