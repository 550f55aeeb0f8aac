//! Cancellation scenarios: acquires dropped at random points while others
//! hold and wait; nothing is leaked and exclusion holds.

use super::*;

/// Core's seeded PRNG with the draws the cancellation runs make;
/// reproducible from the printed seed.
#[derive(Clone)]
struct Rng(zoolock_driver::sans_io::Rng);

impl Rng {
    fn new(seed: u64) -> Rng {
        Rng(zoolock_driver::sans_io::Rng::with_seed(seed))
    }

    fn next(&mut self) -> u64 {
        self.0.next_u64()
    }

    fn below(&mut self, n: u64) -> u64 {
        self.next() % n
    }

    fn chance(&mut self, percent: u64) -> bool {
        self.below(100) < percent
    }

    fn ms(&mut self, max: u64) -> Duration {
        Duration::from_micros(self.below(max * 1000 + 1))
    }
}

fn seed() -> u64 {
    match std::env::var("ZOOLOCK_TEST_SEED").ok().and_then(|s| s.parse().ok()) {
        Some(seed) => seed,
        None => {
            let nanos = std::time::SystemTime::now().duration_since(std::time::UNIX_EPOCH).unwrap().as_nanos();
            (nanos as u64) | 1
        }
    }
}

/// How an acquire's holds count against the others.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
enum Mode {
    /// A mutex-like lock, or a write lock.
    Exclusive,
    Read,
    Leases,
}

/// What an acquire handed out: one guard, or an acquire's leases.
struct Held {
    mode: Mode,
    holds: Vec<Hold>,
}

impl Held {
    fn new(mode: Mode, holds: impl IntoIterator<Item = impl Into<Hold>>) -> Held {
        Held { mode, holds: holds.into_iter().map(Into::into).collect() }
    }

    async fn release(self, drop_it: bool) -> Result<(), Error> {
        if !drop_it {
            for hold in self.holds {
                hold.release().await?;
            }
        }
        Ok(())
    }
}

type AcquireFuture = Pin<Box<dyn Future<Output = Result<Held, Error>> + Send>>;
/// Starts one acquire: `(timeout, random)`; `random` picks among variants
/// (read or write, lease count).
type Acquire = Arc<dyn Fn(Option<Duration>, u64) -> AcquireFuture + Send + Sync>;

#[derive(Debug, Default)]
struct Counts {
    exclusive: usize,
    readers: usize,
    leases: usize,
    last_token: i64,
}

#[derive(Debug, Default)]
struct Tally {
    granted: AtomicUsize,
    dropped: AtomicUsize,
    dropped_unpolled: AtomicUsize,
    dropped_after_poll: AtomicUsize,
    timed_out: AtomicUsize,
}

struct Shared {
    counts: StdMutex<Counts>,
    lease_limit: usize,
    tally: Tally,
}

impl Shared {
    fn enter(&self, held: &Held) -> Result<(), String> {
        let mut c = self.counts.lock().unwrap();
        match (held.mode, held.holds.first()) {
            (Mode::Exclusive, Some(g)) => {
                if c.exclusive + c.readers + c.leases > 0 {
                    return Err(format!("exclusive grant {} while held: {c:?}", g.node()));
                }
                if g.fencing_token().0 <= c.last_token {
                    return Err(format!("fencing token {:?} after {}", g.fencing_token(), c.last_token));
                }
                c.last_token = g.fencing_token().0;
                c.exclusive += 1;
            }
            (Mode::Read, Some(g)) => {
                if c.exclusive > 0 {
                    return Err(format!("read grant {} while a writer holds: {c:?}", g.node()));
                }
                c.readers += 1;
            }
            (Mode::Leases, _) => {
                c.leases += held.holds.len();
                if c.leases > self.lease_limit {
                    return Err(format!("{} leases out of {}", c.leases, self.lease_limit));
                }
            }
            (mode, None) => return Err(format!("a {mode:?} grant without a hold")),
        }
        self.tally.granted.fetch_add(1, Ordering::Relaxed);
        Ok(())
    }

    fn leave(&self, held: &Held) {
        let mut c = self.counts.lock().unwrap();
        match held.mode {
            Mode::Exclusive => c.exclusive -= 1,
            Mode::Read => c.readers -= 1,
            Mode::Leases => c.leases -= held.holds.len(),
        }
    }
}

/// Checks a grant against every other holder, holds briefly, lets go.
async fn hold(env: &Env, shared: &Shared, rng: &mut Rng, held: Held) -> Result<(), String> {
    shared.enter(&held)?;
    if rng.chance(30) {
        env.sleep(rng.ms(5)).await;
    }
    shared.leave(&held);
    held.release(rng.chance(50)).await.map_err(|e| format!("release: {e}"))
}

/// Full acquires only, until `stop`: the contention.
async fn holder_lane(
    env: Env,
    acquire: Acquire,
    mut rng: Rng,
    shared: Arc<Shared>,
    stop: Arc<AtomicBool>,
) -> Result<(), String> {
    while !stop.load(Ordering::SeqCst) {
        let r = rng.next();
        match env.timeout(Duration::from_secs(10), acquire(None, r)).await {
            Some(Ok(held)) => {
                shared.enter(&held)?;
                env.sleep(rng.ms(10)).await;
                shared.leave(&held);
                held.release(rng.chance(50)).await.map_err(|e| format!("holder release: {e}"))?;
            }
            Some(Err(e)) => return Err(format!("holder acquire: {e}")),
            None => return Err("holder: acquire hung for 10 s".into()),
        }
        env.sleep(rng.ms(10)).await;
    }
    Ok(())
}

/// Starts acquires and drops them at random points until `drops` of them
/// were dropped unfinished.
async fn dropper_lane(
    env: Env,
    acquire: Acquire,
    mut rng: Rng,
    shared: Arc<Shared>,
    drops: usize,
) -> Result<(), String> {
    let mut dropped = 0;
    let handle = |r: Result<Held, Error>| -> Result<Option<Held>, String> {
        match r {
            Ok(held) => Ok(Some(held)),
            Err(Error::TimedOut) => {
                shared.tally.timed_out.fetch_add(1, Ordering::Relaxed);
                Ok(None)
            }
            Err(e) => Err(format!("acquire: {e}")),
        }
    };
    while dropped < drops {
        let r = rng.next();
        if rng.chance(10) {
            // Now and then a full acquire, so the lane also holds.
            match env.timeout(Duration::from_secs(10), acquire(None, r)).await {
                Some(Ok(held)) => hold(&env, &shared, &mut rng, held).await?,
                Some(Err(e)) => return Err(format!("full acquire: {e}")),
                None => return Err("acquire hung for 10 s".into()),
            }
            continue;
        }
        let timeout = if rng.chance(25) { Some(rng.ms(20)) } else { None };
        match rng.below(10) {
            0 => {
                // Dropped before its first poll.
                drop(acquire(timeout, r));
                dropped += 1;
                shared.tally.dropped_unpolled.fetch_add(1, Ordering::Relaxed);
            }
            1..=5 => {
                // Dropped after a random delay, wherever it is by then.
                let delay = rng.ms(20);
                match env.timeout(delay, acquire(timeout, r)).await {
                    None => {
                        dropped += 1;
                        shared.tally.dropped.fetch_add(1, Ordering::Relaxed);
                    }
                    Some(done) => {
                        if let Some(held) = handle(done)? {
                            hold(&env, &shared, &mut rng, held).await?;
                        }
                    }
                }
            }
            _ => {
                // Polled once, then left alone (a grant may land unseen) and dropped.
                let mut fut = acquire(timeout, r);
                match future::poll_once(&mut fut).await {
                    Some(done) => {
                        if let Some(held) = handle(done)? {
                            hold(&env, &shared, &mut rng, held).await?;
                        }
                    }
                    None => {
                        env.sleep(rng.ms(20)).await;
                        drop(fut);
                        dropped += 1;
                        shared.tally.dropped_after_poll.fetch_add(1, Ordering::Relaxed);
                    }
                }
            }
        }
    }
    Ok(())
}

/// Runs `lanes` dropping clients (`drops` drops in all) and one holding
/// client against the same lock, then checks that every path in `check` is
/// empty while the clients are still connected, and again after they close.
async fn cancellation_run(
    env: &Env,
    name: &str,
    lanes: usize,
    drops: usize,
    lease_limit: usize,
    make: impl Fn(Client) -> Pin<Box<dyn Future<Output = Acquire>>>,
    check: &[String],
) {
    let seed = seed();
    let started = Instant::now();
    let shared = Arc::new(Shared { counts: StdMutex::new(Counts::default()), lease_limit, tally: Tally::default() });
    let stop = Arc::new(AtomicBool::new(false));
    let mut clients = Vec::new();
    let mut droppers = Vec::new();
    for lane in 0..lanes {
        let c = env.client().await;
        let acquire = make(c.clone()).await;
        let rng = Rng::new(zoolock_driver::sans_io::Rng::fork(seed, lane as u64 + 1));
        let per_lane = drops / lanes + usize::from(lane < drops % lanes);
        droppers.push(env.spawn(dropper_lane(env.clone(), acquire, rng, shared.clone(), per_lane)));
        clients.push(c);
    }
    let h = env.client().await;
    let acquire = make(h.clone()).await;
    let holder = env.spawn(holder_lane(
        env.clone(),
        acquire,
        Rng::new(zoolock_driver::sans_io::Rng::fork(seed, 0)),
        shared.clone(),
        stop.clone(),
    ));
    clients.push(h);
    let mut failures = Vec::new();
    for d in droppers {
        if let Err(e) = d.await {
            failures.push(e);
        }
    }
    stop.store(true, Ordering::SeqCst);
    if let Err(e) = holder.await {
        failures.push(e);
    }
    if !failures.is_empty() {
        // Who holds what: each node with the session that owns it.
        let observer = env.client().await;
        let sessions: Vec<String> = clients.iter().map(|c| format!("{:#x}", c.session_id())).collect();
        let mut nodes = Vec::new();
        for path in check {
            for child in children(&observer, path).await {
                let node = format!("{path}/{child}");
                let owner = observer.exists(&node).await.ok().flatten().map(|s| format!("{:#x}", s.ephemeral_owner));
                nodes.push(format!("{node} owned by {owner:?}"));
            }
        }
        panic!("{name} (seed {seed}): {failures:?}\nclients' sessions (holder last): {sessions:?}\nnodes: {nodes:#?}");
    }
    // Every dropped acquire cleaned up after itself while its session lives on.
    let observer = env.client().await;
    for path in check {
        assert_empty(env, &observer, path).await;
    }
    for c in &clients {
        c.close().await.unwrap();
    }
    for path in check {
        assert_empty(env, &observer, path).await;
    }
    let t = &shared.tally;
    eprintln!(
        "[{}] {name}: {} drops ({} before the first poll, {} at a random await, {} after one poll), {} grants, \
         {} timeouts, {lanes}+1 clients, {:.1?} (seed {seed})",
        env.label,
        t.dropped.load(Ordering::Relaxed)
            + t.dropped_unpolled.load(Ordering::Relaxed)
            + t.dropped_after_poll.load(Ordering::Relaxed),
        t.dropped_unpolled.load(Ordering::Relaxed),
        t.dropped.load(Ordering::Relaxed),
        t.dropped_after_poll.load(Ordering::Relaxed),
        t.granted.load(Ordering::Relaxed),
        t.timed_out.load(Ordering::Relaxed),
        started.elapsed(),
    );
    observer.close().await.unwrap();
}

/// The `make` of [`cancellation_run`] for a recipe at one path: `open`
/// gets each client and its own copy of `path`.
fn at_path<F: Future<Output = Acquire> + 'static>(
    path: &str,
    open: impl Fn(Client, String) -> F,
) -> impl Fn(Client) -> Pin<Box<dyn Future<Output = Acquire>>> {
    let path = path.to_owned();
    move |c| Box::pin(open(c, path.clone()))
}

fn lock_acquire(lock: Lock) -> Acquire {
    Arc::new(move |timeout, _| {
        let lock = lock.clone();
        Box::pin(async move {
            match timeout {
                Some(d) => lock.acquire_timeout(d).await,
                None => lock.acquire().await,
            }
            .map(|g| Held::new(Mode::Exclusive, [g]))
        })
    })
}

/// The test: 1,000 acquires of a contended mutex dropped at random
/// points; no node is left and no two holders ever overlap.
pub async fn cancellation_mutex(env: &Env) {
    let drops = 1_000;
    let path = env.path("cancel-mutex");
    let make = at_path(&path, |c, p| async move { lock_acquire(c.mutex(&p).await.unwrap()) });
    cancellation_run(env, "mutex cancellation", 4, drops, 0, make, std::slice::from_ref(&path)).await;
    cleanup(env, &[&path]).await;
}

/// The same for the read-write lock: each attempt reads or writes.
pub async fn cancellation_rwlock(env: &Env) {
    let drops = 100;
    let path = env.path("cancel-rwlock");
    let make = at_path(&path, |c, p| async move {
        let ReadWriteLock { read, write } = c.read_write_lock(&p).await.unwrap();
        Arc::new(move |timeout: Option<Duration>, r: u64| -> AcquireFuture {
            let (read, write) = (read.clone(), write.clone());
            Box::pin(async move {
                let reading = r % 2 == 0;
                let lock = if reading { read } else { write };
                let g = match timeout {
                    Some(d) => lock.acquire_timeout(d).await?,
                    None => lock.acquire().await?,
                };
                Ok(Held::new(if reading { Mode::Read } else { Mode::Exclusive }, [g]))
            })
        }) as Acquire
    });
    cancellation_run(env, "read-write lock cancellation", 2, drops, 0, make, std::slice::from_ref(&path)).await;
    cleanup(env, &[&path]).await;
}

/// The same for the semaphore: 4 leases, taken 1 or 2 at a time by 3
/// clients. (With 3 leases, three clients each holding one lease of a
/// 2-lease acquire would wait for each other forever: Curator's semaphore
/// keeps the leases of a partial acquire. 4 always leaves one free.)
pub async fn cancellation_semaphore(env: &Env) {
    let drops = 100;
    let sem = env.path("cancel-semaphore");
    let make = at_path(&sem, |c, p| async move {
        let s = c.semaphore(&p, 4).await.unwrap();
        Arc::new(move |timeout: Option<Duration>, r: u64| -> AcquireFuture {
            let s = s.clone();
            Box::pin(async move {
                let qty = 1 + (r % 2) as usize;
                match timeout {
                    Some(d) => s.acquire_timeout(qty, d).await,
                    None => s.acquire(qty).await,
                }
                .map(|leases| Held::new(Mode::Leases, leases))
            })
        }) as Acquire
    });
    let paths = [format!("{sem}/leases"), format!("{sem}/locks")];
    cancellation_run(env, "semaphore cancellation", 2, drops, 4, make, &paths).await;
    cleanup(env, &[&sem]).await;
}

/// The same for the semaphore mutex.
pub async fn cancellation_semaphore_mutex(env: &Env) {
    let drops = 100;
    let smx = env.path("cancel-semaphore-mutex");
    let make = at_path(&smx, |c, p| async move { lock_acquire(c.semaphore_mutex(&p).await.unwrap()) });
    let paths = [format!("{smx}/leases"), format!("{smx}/locks")];
    cancellation_run(env, "semaphore mutex cancellation", 2, drops, 0, make, &paths).await;
    cleanup(env, &[&smx]).await;
}

/// The same for a multi-lock over two paths.
pub async fn cancellation_multi_lock(env: &Env) {
    let drops = 100;
    let (m1, m2) = (env.path("cancel-multi-1"), env.path("cancel-multi-2"));
    let (p1, p2) = (m1.clone(), m2.clone());
    let make = move |c: Client| -> Pin<Box<dyn Future<Output = Acquire>>> {
        let (p1, p2) = (p1.clone(), p2.clone());
        Box::pin(async move { lock_acquire(c.multi_lock(&[&p1, &p2]).await.unwrap()) })
    };
    cancellation_run(env, "multi-lock cancellation", 2, drops, 0, make, &[m1.clone(), m2.clone()]).await;
    cleanup(env, &[&m1, &m2]).await;
}
