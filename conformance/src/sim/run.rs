//! The simulation itself: configuration, scheduler, network, faults, user
//! script and oracles. See the module docs of [`crate::sim`].

use std::collections::{BTreeSet, VecDeque};
use std::panic::{AssertUnwindSafe, catch_unwind};
use std::time::Duration;

use bytes::{Bytes, BytesMut};
use zoolock_core::recipes::{BoxedLock, READ, REVOKE_MESSAGE, SharedCount, WRITE, count_bytes};
use zoolock_core::{
    ApiMisuse, Client, ClientEvent, ConnectString, ConnectionState, Handle, Instant, IoCommand, LockConfig, MultiLock,
    Mutex, OpPlan, ReadWriteLock, RecipeEvent, RequestError, Rng, Semaphore, SemaphoreMutex, SessionConfig, SharedLock,
    SharedSemaphore, Ticket, ZkPath,
};

use super::oracle::{Fencing, Mode, check_exclusion, check_lease_limits};
use crate::decode::StreamDecoder;
use crate::trace::Direction;
use zoolock_model::{ConnId, ModelConfig, ZkModel};

/// Which recipe the clients of one simulation use.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum RecipeKind {
    /// `Mutex` on one path.
    Mutex,
    /// `ReadWriteLock` on one path; each acquire is a read or a write.
    ReadWriteLock,
    /// `Semaphore` with `SimConfig::leases` leases, one lease per acquire.
    Semaphore,
    /// `SemaphoreMutex` on one path.
    SemaphoreMutex,
    /// `MultiLock` of the write half of a read-write lock on one path and a
    /// mutex on another, beside plain read-write locks on the first and
    /// mutexes on the second.
    MultiLock,
}

impl RecipeKind {
    /// Every kind, in the order seeds cycle through them.
    pub const ALL: [RecipeKind; 5] = [
        RecipeKind::Mutex,
        RecipeKind::ReadWriteLock,
        RecipeKind::Semaphore,
        RecipeKind::SemaphoreMutex,
        RecipeKind::MultiLock,
    ];

    /// The kind a seed uses (`seed % 5`).
    pub fn for_seed(seed: u64) -> RecipeKind {
        RecipeKind::ALL[(seed % 5) as usize]
    }
}

/// Knobs of one simulation. [`SimConfig::for_seed`] draws them from the seed.
#[derive(Debug, Clone)]
#[non_exhaustive]
pub struct SimConfig {
    /// The recipe every client uses.
    pub kind: RecipeKind,
    /// Number of clients.
    pub clients: usize,
    /// Semaphore leases (Semaphore only).
    pub leases: usize,
    /// The op plan of every recipe.
    pub plan: OpPlan,
    /// The session timeout T.
    pub session_timeout: Duration,
    /// Faults are injected in `[0, fault_phase)`.
    pub fault_phase: Duration,
    /// Number of faults in the plan.
    pub faults: usize,
    /// New acquires start only before this instant.
    pub active_phase: Duration,
    /// Longest hold before the script releases.
    pub max_hold: Duration,
    /// Livelock guard: the run fails after this many steps.
    pub max_steps: usize,
    /// Holders a Mutex role allows: 1 is a mutex; more is a deliberately
    /// broken predicate, which the exclusion oracle must catch.
    pub mutex_leases: usize,
    /// User tasks per client, sharing its one lock handle (a `SharedLock`
    /// or `SharedSemaphore` queue).
    pub tasks: usize,
    /// Semaphore only: sized by a shared count (seeded with `leases`) that
    /// the script sets to 1..=clients now and then.
    pub resize: bool,
    /// Resized semaphore only, a deliberately broken sizing the oracle must
    /// catch: the semaphores read another count than the one the script
    /// sets, seeded with `clients + 1`.
    pub wrong_count: bool,
    /// Semaphore only: revocable leases, which the script revokes now and
    /// then; a holder asked gives its lease back at once.
    pub revocable: bool,
}

/// Children of a run's seed ([`Rng::fork`]): the configuration, then the
/// clients (one each, forked again per incarnation).
const FORK_CONFIG: u64 = 0;
const FORK_CLIENTS: u64 = 1;

impl SimConfig {
    /// The configuration of `seed`: kind `seed % 5`, 2 to 5 clients, the
    /// Curator plan one time in four, T = 6 s, up to 24 faults in the first
    /// 60 s, new acquires until 70 s.
    pub fn for_seed(seed: u64) -> SimConfig {
        let mut rng = Rng::with_seed(Rng::fork(seed, FORK_CONFIG));
        let kind = RecipeKind::for_seed(seed);
        let clients = 2 + below(&mut rng, 4) as usize;
        let leases = 1 + below(&mut rng, (clients - 1) as u64) as usize;
        let plan = if below(&mut rng, 4) == 0 { OpPlan::Curator } else { OpPlan::Pipelined };
        let faults = below(&mut rng, 25) as usize;
        let tasks = 1 + below(&mut rng, 3) as usize;
        // Drawn last, so the draws above stay what they were for old seeds.
        let resize = kind == RecipeKind::Semaphore && below(&mut rng, 2) == 0;
        let revocable = kind == RecipeKind::Semaphore && below(&mut rng, 2) == 0;
        SimConfig {
            wrong_count: false,
            resize,
            revocable,
            mutex_leases: 1,
            tasks,
            kind,
            clients,
            leases,
            plan,
            session_timeout: Duration::from_secs(6),
            fault_phase: Duration::from_secs(60),
            faults,
            active_phase: Duration::from_secs(70),
            max_hold: Duration::from_secs(2),
            max_steps: 200_000,
        }
    }
}

/// What a successful run did.
#[derive(Debug, Clone, Default)]
#[non_exhaustive]
pub struct SimReport {
    /// Steps taken.
    pub steps: usize,
    /// Holds that began (leases and multi-lock members counted one by one).
    pub holds: usize,
    /// Faults injected.
    pub faults: usize,
    /// Acquires that timed out or failed.
    pub unsuccessful: usize,
    /// Sessions renewed after `Lost`.
    pub restarts: usize,
    /// Shared count writes (resized semaphore).
    pub resizes: usize,
    /// Revocation requests that reached a lease holder.
    pub revocations: usize,
}

/// A failed run: the seed, what went wrong, and the newest trace lines.
#[derive(Debug, Clone)]
pub struct SimFailure {
    /// The seed to replay with `SIM_SEED`.
    pub seed: u64,
    /// The broken oracle or the panic message.
    pub message: String,
    /// The last trace lines, oldest first.
    pub trace: Vec<String>,
}

impl std::fmt::Display for SimFailure {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        writeln!(f, "SIM_SEED={} failed: {}", self.seed, self.message)?;
        writeln!(f, "last {} trace lines:", self.trace.len())?;
        for line in &self.trace {
            writeln!(f, "  {line}")?;
        }
        write!(f, "replay: SIM_SEED={} cargo test -p zoolock-conformance --test sim -- replay --nocapture", self.seed)
    }
}

/// Runs one seed with its [`SimConfig::for_seed`] configuration, panics
/// included.
pub fn run_seed(seed: u64) -> Result<SimReport, SimFailure> {
    run_with(seed, SimConfig::for_seed(seed))
}

/// Runs one seed with an explicit configuration, panics included.
pub fn run_with(seed: u64, config: SimConfig) -> Result<SimReport, SimFailure> {
    let mut sim = Sim::new(seed, config);
    let outcome = catch_unwind(AssertUnwindSafe(|| sim.run()));
    let message = match outcome {
        Ok(Ok(report)) => return Ok(report),
        Ok(Err(message)) => message,
        Err(panic) => {
            let text = panic
                .downcast_ref::<String>()
                .cloned()
                .or_else(|| panic.downcast_ref::<&str>().map(|s| s.to_string()))
                .unwrap_or_else(|| "a panic".into());
            format!("panic: {text}")
        }
    };
    Err(SimFailure { seed, message, trace: sim.trace.iter().cloned().collect() })
}

/// The outcome of [`sweep`].
#[derive(Debug, Clone, Default)]
#[non_exhaustive]
pub struct SweepOutcome {
    /// Runs made.
    pub runs: u64,
    /// The failed runs, sorted by seed.
    pub failures: Vec<SimFailure>,
    /// The passed runs' reports, summed.
    pub totals: SimReport,
}

/// Runs `count` seeds from `start` on `threads` threads.
pub fn sweep(start: u64, count: u64, threads: usize) -> SweepOutcome {
    let next = std::sync::atomic::AtomicU64::new(start);
    let outcome = std::sync::Mutex::new(SweepOutcome::default());
    std::thread::scope(|s| {
        for _ in 0..threads.max(1) {
            s.spawn(|| {
                loop {
                    let seed = next.fetch_add(1, std::sync::atomic::Ordering::Relaxed);
                    if seed >= start.saturating_add(count) {
                        break;
                    }
                    let result = run_seed(seed);
                    let mut out = outcome.lock().unwrap_or_else(|e| e.into_inner());
                    out.runs += 1;
                    match result {
                        Ok(r) => {
                            let t = &mut out.totals;
                            t.steps += r.steps;
                            t.holds += r.holds;
                            t.faults += r.faults;
                            t.unsuccessful += r.unsuccessful;
                            t.restarts += r.restarts;
                            t.resizes += r.resizes;
                            t.revocations += r.revocations;
                        }
                        Err(f) => out.failures.push(f),
                    }
                }
            });
        }
    });
    let mut outcome = outcome.into_inner().unwrap_or_else(|e| e.into_inner());
    outcome.failures.sort_by_key(|f| f.seed);
    outcome
}

// ---- randomness helpers ----------------------------------------------------------------

fn below(rng: &mut Rng, n: u64) -> u64 {
    if n == 0 { 0 } else { rng.next_u64() % n }
}

fn chance(rng: &mut Rng, per_mille: u64) -> bool {
    below(rng, 1000) < per_mille
}

fn between(rng: &mut Rng, lo: Duration, hi: Duration) -> Duration {
    lo + rng.duration_up_to(hi.saturating_sub(lo))
}

// ---- the network -----------------------------------------------------------------------

/// Something travelling server → client.
#[derive(Debug)]
enum Down {
    Bytes(Bytes),
    /// The server closed the connection after the bytes before it.
    Close,
}

/// One TCP connection between a client and the model.
#[derive(Debug)]
struct Link {
    conn: ConnId,
    up: VecDeque<(Instant, Bytes)>,
    down: VecDeque<(Instant, Down)>,
    to_model: BytesMut,
    from_model: BytesMut,
    /// Nothing moves before this instant (stall).
    stalled_until: Instant,
    /// Apply the next client bytes, drop the replies, then reset.
    lose_replies: bool,
    /// The model's output for this connection is being thrown away.
    dropping: bool,
    /// Decodes frames for the trace when `SIM_TRACE_FRAMES` is set.
    decoder: Option<StreamDecoder>,
    /// The ConnectResponse has gone by (later frames start with a reply header).
    answered: bool,
}

impl Link {
    fn new(conn: ConnId) -> Link {
        Link {
            conn,
            up: VecDeque::new(),
            down: VecDeque::new(),
            to_model: BytesMut::new(),
            from_model: BytesMut::new(),
            stalled_until: Instant::ZERO,
            lose_replies: false,
            dropping: false,
            decoder: trace_frames().then(StreamDecoder::new),
            answered: false,
        }
    }

    fn next_up(&self) -> Option<Instant> {
        self.up.front().map(|(at, _)| (*at).max(self.stalled_until))
    }

    fn next_down(&self) -> Option<Instant> {
        self.down.front().map(|(at, _)| (*at).max(self.stalled_until))
    }
}

/// True if `bytes` hold a frame with a non-negative xid: a request rather
/// than a ping or an auth packet. (A ConnectRequest starts with protocol
/// version 0 and passes too; losing its answer is a fine fault as well.)
fn has_request(bytes: &[u8]) -> bool {
    let mut rest = bytes;
    while rest.len() >= 8 {
        let len = u32::from_be_bytes([rest[0], rest[1], rest[2], rest[3]]) as usize;
        let xid = i32::from_be_bytes([rest[4], rest[5], rest[6], rest[7]]);
        if xid >= 0 {
            return true;
        }
        let Some(next) = rest.get(4 + len..) else { break };
        rest = next;
    }
    false
}

/// Counts the replies with error NoNode among the whole frames of `bytes`
/// (reply header: xid, zxid, err), skipping a leading ConnectResponse.
fn count_no_node(bytes: &[u8], answered: &mut bool) -> usize {
    let mut n = 0;
    let mut rest = bytes;
    while rest.len() >= 4 {
        let len = u32::from_be_bytes([rest[0], rest[1], rest[2], rest[3]]) as usize;
        let Some(frame) = rest.get(4..4 + len) else { break };
        if !*answered {
            *answered = true;
        } else if frame.len() >= 16 {
            let xid = i32::from_be_bytes([frame[0], frame[1], frame[2], frame[3]]);
            let err = i32::from_be_bytes([frame[12], frame[13], frame[14], frame[15]]);
            if xid >= 0 && err == -101 {
                n += 1;
            }
        }
        rest = &rest[4 + len..];
    }
    n
}

fn trace_frames() -> bool {
    std::env::var_os("SIM_TRACE_FRAMES").is_some()
}

/// Each whole frame of `bytes`, decoded (for the trace only).
fn describe_frames(decoder: &mut StreamDecoder, dir: Direction, bytes: &[u8]) -> Vec<String> {
    let mut out = Vec::new();
    let mut rest = bytes;
    while rest.len() >= 4 {
        let len = u32::from_be_bytes([rest[0], rest[1], rest[2], rest[3]]) as usize;
        let Some(frame) = rest.get(4..4 + len) else { break };
        out.push(match decoder.decode(dir, frame) {
            Ok(f) => format!("{f:?}"),
            Err(e) => format!("undecodable: {e}"),
        });
        rest = &rest[4 + len..];
    }
    out
}

// ---- clients ---------------------------------------------------------------------------

/// Which recipe a client runs.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
enum Role {
    Mutex,
    Rw,
    Semaphore,
    SemaphoreMutex,
    Multi,
}

#[derive(Debug, Clone)]
struct Hold {
    path: String,
    node: String,
    token: i64,
    mode: Mode,
    /// Leases: the limit in force when it was granted.
    limit: usize,
}

#[derive(Debug, Clone, Copy)]
struct Pending {
    mode: Mode,
    since: Instant,
}

/// A client's one lock handle, shared by its tasks: every lock kind through
/// the lock capability, or the semaphore.
#[derive(Debug, Clone, Copy)]
enum Shared {
    Lock(Handle<SharedLock>),
    Semaphore(Handle<SharedSemaphore>),
}

/// One user task of a client.
#[derive(Debug)]
struct SimTask {
    /// The ticket of the acquire under way or of the hold.
    ticket: Option<Ticket>,
    pending: Option<Pending>,
    holds: Vec<Hold>,
    /// Told `Suspended` for its hold and not yet `Reconnected`.
    suspended: bool,
    /// The hold was lost: let it go.
    must_release: bool,
    next_action: Instant,
}

struct SimClient {
    client: Client,
    shared: Shared,
    role: Role,
    incarnation: u64,
    link: Option<Link>,
    /// A connect in progress completes at this instant.
    connecting: Option<Instant>,
    /// Connects are refused before this instant (partition).
    refuse_until: Instant,
    latency: Duration,
    slow_until: Instant,
    slow_extra: Duration,
    tasks: Vec<SimTask>,
    next_ticket: u64,
    /// The session said Suspended and not yet Reconnected.
    session_suspended: bool,
    /// The semaphore said `Suspended` and has not answered it with
    /// `Reconnected` or `Lost` yet (the async handle's lease status).
    leases_suspended: bool,
    /// An injected expiry hit this session; the news has not arrived.
    doomed: bool,
    /// NoNode replies received since a task's acquire last ended.
    no_node_replies: usize,
    closing: bool,
}

impl SimClient {
    fn counts(&self) -> bool {
        !self.session_suspended && !self.doomed && !self.closing
    }

    fn idle(&self) -> bool {
        self.tasks.iter().all(|t| t.pending.is_none() && t.holds.is_empty() && !t.must_release)
    }

    fn quiescent_id(&self) -> Option<zoolock_core::RecipeId> {
        Some(match self.shared {
            Shared::Lock(h) => h.id,
            Shared::Semaphore(h) => h.id,
        })
    }

    fn task_of(&self, ticket: Ticket) -> Option<usize> {
        self.tasks.iter().position(|t| t.ticket == Some(ticket))
    }
}

/// The lock paths.
const ROOT: &str = "/sim";
/// The shared count of a resized semaphore (outside `/sim`: it is
/// persistent, and stays).
const SIZE: &str = "/size";
/// The count a broken sizing reads instead ([`SimConfig::wrong_count`]).
const WRONG_SIZE: &str = "/size-wrong";
const LOCK: &str = "/sim/lock";
const MULTI_A: &str = "/sim/a";
const MULTI_B: &str = "/sim/b";

/// Scheduled things; the order breaks nothing, ties are broken at random.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
enum Due {
    Fault,
    Connect(usize),
    Up(usize),
    Down(usize),
    ClientTimer(usize),
    ModelTimer,
    Action(usize, usize),
    Milestone,
}

#[derive(Debug, Clone, Copy, PartialEq, Eq)]
enum Fault {
    Reset(usize),
    Stall(usize, Duration),
    Partition(usize, Duration),
    Restart(Duration),
    Expire(usize),
    LoseReply(usize),
    Slow(usize, Duration, Duration),
    SlowServer(Duration, Duration),
}

#[derive(Debug, Clone, Copy, PartialEq, Eq, PartialOrd, Ord)]
enum Phase {
    /// Faults and new acquires.
    Active,
    /// No new acquires; everything must resolve by the liveness bound.
    Draining,
    /// Nothing scheduled by the script; waiting for releases to land.
    Settling,
    /// Every client closed; waiting for the server to forget them.
    Closing,
    Done,
}

/// One simulation. Build with [`Sim::new`], run with [`Sim::run`].
pub struct Sim {
    seed: u64,
    config: SimConfig,
    rng: Rng,
    now: Instant,
    model: ZkModel,
    clients: Vec<SimClient>,
    faults: VecDeque<(Instant, Fault)>,
    server_down_until: Instant,
    phase: Phase,
    milestone: Instant,
    steps: usize,
    report: SimReport,
    /// Per path: the highest token of any hold, and of any write hold.
    fencing: Fencing,
    /// Every size the script gave the count (and its seed).
    count_values: BTreeSet<usize>,
    trace: VecDeque<String>,
}

const TRACE_LINES: usize = 80;

/// NoNode replies that show a spent retry budget (four attempts, each with a
/// NoNode create before and after making the parents).
const NO_NODE_BUDGET: usize = 8;

impl Sim {
    /// A simulation of `seed` with `config`.
    pub fn new(seed: u64, config: SimConfig) -> Sim {
        let mut rng = Rng::with_seed(seed);
        // ZooKeeper's reaper runs every 60 s; reaping at once (the model's
        // default) makes a slow client lose the probe/create race with the
        // reaper on every retry and exhaust its NoNode budget, which is
        // Curator's behaviour too. One second keeps the churn without that.
        let model = ZkModel::new(ModelConfig::default().with_seed(seed).with_container_delay(Duration::from_secs(1)));
        let t = config.session_timeout;
        let mut faults = Vec::new();
        for _ in 0..config.faults {
            let at = Instant::ZERO + rng.duration_up_to(config.fault_phase);
            let c = below(&mut rng, config.clients as u64) as usize;
            let fault = match below(&mut rng, 8) {
                0 => Fault::Reset(c),
                1 => Fault::Stall(c, between(&mut rng, t / 3, t * 13 / 10)),
                2 => Fault::Partition(c, between(&mut rng, t / 3, t * 3 / 2)),
                3 => Fault::Restart(between(&mut rng, Duration::from_millis(10), t / 3)),
                4 => Fault::Expire(c),
                5 => Fault::LoseReply(c),
                6 => Fault::SlowServer(
                    between(&mut rng, Duration::from_millis(50), Duration::from_millis(400)),
                    between(&mut rng, Duration::from_secs(1), t * 2),
                ),
                _ => Fault::Slow(
                    c,
                    between(&mut rng, Duration::from_millis(50), Duration::from_millis(400)),
                    between(&mut rng, Duration::from_secs(1), t * 2),
                ),
            };
            faults.push((at, fault));
        }
        faults.sort_by_key(|(at, _)| *at);
        let milestone = Instant::ZERO + config.active_phase;
        let mut sim = Sim {
            seed,
            config,
            rng,
            now: Instant::ZERO,
            model,
            clients: Vec::new(),
            faults: faults.into(),
            server_down_until: Instant::ZERO,
            phase: Phase::Active,
            milestone,
            steps: 0,
            report: SimReport::default(),
            fencing: Fencing::default(),
            count_values: BTreeSet::new(),
            trace: VecDeque::new(),
        };
        sim.count_values.insert(sim.config.leases);
        for i in 0..sim.config.clients {
            let client = sim.new_client(i, 0);
            sim.clients.push(client);
        }
        sim
    }

    fn log(&mut self, line: impl FnOnce() -> String) {
        let limit = if trace_frames() { TRACE_LINES * 20 } else { TRACE_LINES };
        if self.trace.len() >= limit {
            self.trace.pop_front();
        }
        let line = format!("{} {}", self.now, line());
        self.trace.push_back(line);
    }

    fn role_for(&mut self, _index: usize) -> Role {
        match self.config.kind {
            RecipeKind::Mutex => Role::Mutex,
            RecipeKind::ReadWriteLock => Role::Rw,
            RecipeKind::Semaphore => Role::Semaphore,
            RecipeKind::SemaphoreMutex => Role::SemaphoreMutex,
            RecipeKind::MultiLock => match below(&mut self.rng, 10) {
                0..=2 => Role::Mutex,
                3..=4 => Role::Rw,
                _ => Role::Multi,
            },
        }
    }

    fn new_client(&mut self, index: usize, incarnation: u64) -> SimClient {
        let seed = Rng::fork(Rng::fork(self.seed, FORK_CLIENTS + index as u64), incarnation);
        let cs = ConnectString::parse("127.0.0.1:2181").expect("a valid connect string");
        let session = SessionConfig::new(cs, seed).with_session_timeout(self.config.session_timeout);
        let mut client = Client::new(session, self.now);
        // Sessions renew by themselves; the queues re-queue acquires on it.
        client.set_renew_session(true);
        let role = self.role_for(index);
        let config = LockConfig::new(Rng::fork(seed, 0)).with_plan(self.config.plan);
        let member = |i: u64| {
            let mut c = config.clone();
            c.seed = Rng::fork(c.seed, i);
            c
        };
        let path = |p: &str| ZkPath::new(p).expect("a valid path");
        let multi = self.config.kind == RecipeKind::MultiLock;
        let (mutex_path, rw_path) = if multi { (MULTI_B, MULTI_A) } else { (LOCK, LOCK) };
        let lock: Option<BoxedLock> = match role {
            Role::Mutex => {
                Some(Box::new(Mutex::with_leases(path(mutex_path), config.clone(), self.config.mutex_leases)))
            }
            Role::Rw => Some(Box::new(ReadWriteLock::new(path(rw_path), config.clone()))),
            Role::SemaphoreMutex => Some(Box::new(SemaphoreMutex::new(path(LOCK), config.clone()))),
            Role::Multi => {
                // A mixed multi-lock: a write half and a mutex, as Curator's
                // InterProcessMultiLock takes any InterProcessLock.
                let members: Vec<(BoxedLock, usize)> = vec![
                    (Box::new(ReadWriteLock::new(path(MULTI_A), member(0))), WRITE),
                    (Box::new(Mutex::new(path(MULTI_B), member(1))), 0),
                ];
                Some(Box::new(MultiLock::of(members).expect("two valid members")))
            }
            Role::Semaphore => None,
        };
        let shared = match lock {
            Some(lock) => Shared::Lock(client.add(self.now, SharedLock::new(lock, true))),
            None => {
                let mut sem = if self.config.resize {
                    let (count, seed) = match self.config.wrong_count {
                        false => (SIZE, self.config.leases),
                        true => (WRONG_SIZE, self.config.clients + 1),
                    };
                    let seed = i32::try_from(seed).unwrap_or(1);
                    Semaphore::with_count(path(LOCK), SharedCount::new(path(count), seed, config.clone()), config)
                } else {
                    Semaphore::new(path(LOCK), self.config.leases, config)
                };
                if self.config.revocable {
                    sem.make_revocable();
                }
                Shared::Semaphore(client.add(self.now, SharedSemaphore::new(sem, true)))
            }
        };
        let latency = between(&mut self.rng, Duration::from_millis(1), Duration::from_millis(30));
        let tasks = (0..self.config.tasks.max(1))
            .map(|_| SimTask {
                ticket: None,
                pending: None,
                holds: Vec::new(),
                suspended: false,
                must_release: false,
                next_action: self.now + between(&mut self.rng, Duration::from_millis(100), Duration::from_secs(2)),
            })
            .collect();
        SimClient {
            client,
            shared,
            role,
            incarnation,
            link: None,
            connecting: None,
            refuse_until: Instant::ZERO,
            latency,
            slow_until: Instant::ZERO,
            slow_extra: Duration::ZERO,
            tasks,
            next_ticket: 0,
            session_suspended: false,
            leases_suspended: false,
            doomed: false,
            no_node_replies: 0,
            closing: false,
        }
    }

    /// Runs to the end; `Err` names the broken oracle.
    pub fn run(&mut self) -> Result<SimReport, String> {
        for i in 0..self.clients.len() {
            self.drain_client(i)?;
        }
        while self.phase != Phase::Done {
            self.step()?;
        }
        self.report.steps = self.steps;
        Ok(self.report.clone())
    }

    fn candidates(&self) -> Vec<(Instant, Due)> {
        let mut due = Vec::new();
        if let Some((at, _)) = self.faults.front() {
            due.push((*at, Due::Fault));
        }
        due.push((self.milestone, Due::Milestone));
        if let Some(t) = self.model.poll_timeout() {
            due.push((t, Due::ModelTimer));
        }
        for (i, c) in self.clients.iter().enumerate() {
            if let Some(t) = c.connecting {
                due.push((t, Due::Connect(i)));
            }
            if let Some(link) = &c.link {
                if let Some(t) = link.next_up() {
                    due.push((t, Due::Up(i)));
                }
                if let Some(t) = link.next_down() {
                    due.push((t, Due::Down(i)));
                }
            }
            if let Some(t) = c.client.poll_timeout() {
                due.push((t, Due::ClientTimer(i)));
            }
            if self.phase <= Phase::Draining {
                for (k, t) in c.tasks.iter().enumerate() {
                    due.push((t.next_action, Due::Action(i, k)));
                }
            }
        }
        due
    }

    /// Runs the earliest due thing (random tie-break), drains, checks.
    pub fn step(&mut self) -> Result<(), String> {
        self.steps += 1;
        if self.steps > self.config.max_steps {
            return Err(format!("livelock: more than {} steps", self.config.max_steps));
        }
        let due = self.candidates();
        let Some(t) = due.iter().map(|(t, _)| *t).min() else {
            return Err("nothing is scheduled".into());
        };
        let ready: Vec<Due> = due.iter().filter(|(at, _)| *at == t).map(|(_, d)| *d).collect();
        let pick = ready[below(&mut self.rng, ready.len() as u64) as usize];
        if t < self.now {
            let detail = match pick {
                Due::ClientTimer(i) => format!(
                    " (session {:?}, recipe {:?})",
                    self.clients[i].client.session().poll_timeout(),
                    self.clients[i].quiescent_id().and_then(|id| self.clients[i].client.recipe(id)?.poll_timeout())
                ),
                _ => String::new(),
            };
            return Err(format!("{pick:?} is due at {t}, in the past{detail}"));
        }
        self.now = t;
        match pick {
            Due::Fault => {
                let (_, fault) = self.faults.pop_front().expect("a fault is due");
                self.inject(fault)?;
            }
            Due::Milestone => self.milestone()?,
            Due::ModelTimer => {
                self.model.handle_timeout(self.now);
                self.drain_model();
            }
            Due::Connect(i) => self.complete_connect(i)?,
            Due::Up(i) => self.deliver_up(i)?,
            Due::Down(i) => self.deliver_down(i)?,
            Due::ClientTimer(i) => {
                let now = self.now;
                let before =
                    self.clients[i].quiescent_id().and_then(|id| self.clients[i].client.recipe(id)?.poll_timeout());
                self.clients[i].client.handle_timeout(now);
                let after =
                    self.clients[i].quiescent_id().and_then(|id| self.clients[i].client.recipe(id)?.poll_timeout());
                self.log(|| format!("c{i} timer: recipe {before:?} -> {after:?}"));
                self.drain_client(i)?;
            }
            Due::Action(i, k) => self.action(i, k)?,
        }
        self.check_exclusion()
    }

    // ---- plumbing ----------------------------------------------------------------------

    fn down_latency(&mut self, i: usize) -> Duration {
        let c = &self.clients[i];
        let extra = if self.now < c.slow_until { c.slow_extra } else { Duration::ZERO };
        let base = c.latency + extra;
        base + self.rng.duration_up_to(Duration::from_millis(5))
    }

    /// Everything the client wants done, and its events.
    fn drain_client(&mut self, i: usize) -> Result<(), String> {
        for _ in 0..1000 {
            let mut progressed = false;
            while let Some(io) = self.clients[i].client.poll_io() {
                progressed = true;
                match io {
                    IoCommand::Connect { .. } => {
                        self.close_link(i);
                        let latency = self.down_latency(i);
                        self.clients[i].connecting = Some(self.now + latency);
                    }
                    IoCommand::Close => {
                        self.log(|| format!("c{i} closes its connection"));
                        self.clients[i].connecting = None;
                        self.close_link(i);
                    }
                    _ => {}
                }
            }
            let mut out = BytesMut::new();
            if self.clients[i].client.poll_transmit(&mut out) > 0 {
                progressed = true;
                let latency = self.down_latency(i);
                let now = self.now;
                if let Some(link) = self.clients[i].link.as_mut() {
                    let at = link.up.back().map_or(now + latency, |(last, _)| (*last).max(now + latency));
                    link.up.push_back((at, out.freeze()));
                }
            }
            while let Some(event) = self.clients[i].client.poll_event() {
                progressed = true;
                self.client_event(i, event)?;
            }
            if !progressed {
                return Ok(());
            }
        }
        Err(format!("client {i} never went quiet"))
    }

    /// The client's end of its connection goes; the server learns at once.
    fn close_link(&mut self, i: usize) {
        if let Some(link) = self.clients[i].link.take() {
            self.model.disconnect(self.now, link.conn);
            self.drain_model();
        }
    }

    /// Reset: both ends learn, the bytes in flight are gone.
    fn reset(&mut self, i: usize) -> Result<(), String> {
        if self.clients[i].link.is_some() {
            self.close_link(i);
            let now = self.now;
            self.clients[i].client.handle_disconnected(now);
            self.drain_client(i)?;
        }
        Ok(())
    }

    fn complete_connect(&mut self, i: usize) -> Result<(), String> {
        self.clients[i].connecting = None;
        let now = self.now;
        if now < self.server_down_until || now < self.clients[i].refuse_until {
            self.log(|| format!("c{i} connect refused"));
            self.clients[i].client.handle_disconnected(now);
        } else {
            let conn = self.model.connect(now);
            self.log(|| format!("c{i} connected as {conn:?}"));
            self.clients[i].link = Some(Link::new(conn));
            self.clients[i].client.handle_connected(now);
        }
        self.drain_client(i)
    }

    fn deliver_up(&mut self, i: usize) -> Result<(), String> {
        let now = self.now;
        let Some(link) = self.clients[i].link.as_mut() else { return Ok(()) };
        let Some((_, bytes)) = link.up.pop_front() else { return Ok(()) };
        let frames = link.decoder.as_mut().map(|d| describe_frames(d, Direction::C2s, &bytes));
        for f in frames.into_iter().flatten() {
            self.log(|| format!("c{i} >> {f}"));
        }
        let Some(link) = self.clients[i].link.as_mut() else { return Ok(()) };
        link.to_model.extend_from_slice(&bytes);
        let conn = link.conn;
        let mut buf = std::mem::take(&mut link.to_model);
        // Only a batch with a real request (xid >= 0, not a ping) loses its replies.
        let lose = link.lose_replies && has_request(&bytes);
        link.dropping = lose;
        self.model.handle_bytes(now, conn, &mut buf);
        if let Some(link) = self.clients[i].link.as_mut() {
            link.to_model = buf;
        }
        self.drain_model();
        if lose {
            self.log(|| format!("c{i}: request applied, replies lost, connection reset"));
            self.reset(i)?;
        }
        Ok(())
    }

    fn deliver_down(&mut self, i: usize) -> Result<(), String> {
        let now = self.now;
        let Some(link) = self.clients[i].link.as_mut() else { return Ok(()) };
        let Some((_, item)) = link.down.pop_front() else { return Ok(()) };
        match item {
            Down::Bytes(bytes) => {
                let frames = link.decoder.as_mut().map(|d| describe_frames(d, Direction::S2c, &bytes));
                for f in frames.into_iter().flatten() {
                    self.log(|| format!("c{i} << {f}"));
                }
                let Some(link) = self.clients[i].link.as_mut() else { return Ok(()) };
                let no_node = count_no_node(&bytes, &mut link.answered);
                self.clients[i].no_node_replies += no_node;
                let Some(link) = self.clients[i].link.as_mut() else { return Ok(()) };
                link.from_model.extend_from_slice(&bytes);
                let mut buf = std::mem::take(&mut link.from_model);
                let result = self.clients[i].client.handle_bytes(now, &mut buf);
                if let Some(link) = self.clients[i].link.as_mut() {
                    link.from_model = buf;
                }
                if let Err(e) = result {
                    return Err(format!("c{i}: session error on the model's bytes: {e}"));
                }
            }
            Down::Close => {
                self.log(|| format!("c{i}: the server closed the connection"));
                self.clients[i].link = None;
                self.clients[i].client.handle_disconnected(now);
            }
        }
        self.drain_client(i)
    }

    /// Moves the model's output into the pipes.
    fn drain_model(&mut self) {
        loop {
            let mut progressed = false;
            while let Some(conn) = self.model.poll_writable() {
                progressed = true;
                self.take_output(conn, false);
            }
            while let Some(conn) = self.model.poll_close() {
                progressed = true;
                self.take_output(conn, true);
            }
            if !progressed {
                return;
            }
        }
    }

    fn take_output(&mut self, conn: ConnId, close: bool) {
        let mut buf = BytesMut::new();
        self.model.poll_transmit(conn, &mut buf);
        let Some(i) = self.clients.iter().position(|c| c.link.as_ref().is_some_and(|l| l.conn == conn)) else {
            return;
        };
        let latency = self.down_latency(i);
        let now = self.now;
        let link = self.clients[i].link.as_mut().expect("found above");
        if link.dropping {
            return;
        }
        let at = link.down.back().map_or(now + latency, |(last, _)| (*last).max(now + latency));
        if !buf.is_empty() {
            link.down.push_back((at, Down::Bytes(buf.freeze())));
        }
        if close {
            link.down.push_back((at, Down::Close));
        }
    }

    // ---- faults ------------------------------------------------------------------------

    fn inject(&mut self, fault: Fault) -> Result<(), String> {
        self.report.faults += 1;
        self.log(|| format!("FAULT {fault:?}"));
        match fault {
            Fault::Reset(i) => self.reset(i)?,
            Fault::Stall(i, d) => {
                let until = self.now + d;
                if let Some(link) = self.clients[i].link.as_mut() {
                    link.stalled_until = until;
                }
            }
            Fault::Partition(i, d) => {
                self.clients[i].refuse_until = self.now + d;
                self.reset(i)?;
            }
            Fault::Restart(d) => {
                self.server_down_until = self.now + d;
                for i in 0..self.clients.len() {
                    self.reset(i)?;
                }
            }
            Fault::Expire(i) => {
                let session = self.clients[i].client.session().session_id();
                if session != 0 && self.model.expire_session(self.now, session) {
                    self.clients[i].doomed = true;
                    self.drain_model();
                }
            }
            Fault::LoseReply(i) => {
                if let Some(link) = self.clients[i].link.as_mut() {
                    link.lose_replies = true;
                }
            }
            Fault::Slow(i, extra, d) => {
                self.clients[i].slow_extra = extra;
                self.clients[i].slow_until = self.now + d;
            }
            Fault::SlowServer(extra, d) => {
                for c in &mut self.clients {
                    c.slow_extra = extra;
                    c.slow_until = self.now + d;
                }
            }
        }
        Ok(())
    }

    // ---- the user script ---------------------------------------------------------------

    fn schedule(&mut self, i: usize, k: usize, lo: Duration, hi: Duration) {
        let d = between(&mut self.rng, lo, hi);
        if let Some(t) = self.clients[i].tasks.get_mut(k) {
            t.next_action = self.now + d;
        }
    }

    fn action(&mut self, i: usize, k: usize) -> Result<(), String> {
        if k == 0 && self.phase == Phase::Active && !self.clients[i].closing {
            self.admin(i)?;
        }
        let now = self.now;
        let c = &self.clients[i];
        let Some(task) = c.tasks.get(k) else { return Ok(()) };
        if c.closing {
            self.reopen_if_closed(i)?;
            if self.clients[i].closing {
                self.schedule(i, k, Duration::from_millis(100), Duration::from_secs(1));
            }
        } else if task.must_release || !task.holds.is_empty() {
            self.release(i, k)?;
            let hold = self.config.max_hold;
            self.schedule(i, k, Duration::from_millis(1), hold);
        } else if task.pending.is_some() {
            if self.phase == Phase::Active && chance(&mut self.rng, 150) {
                self.cancel(i, k)?;
            }
            self.schedule(i, k, Duration::from_millis(200), Duration::from_secs(3));
        } else if self.phase == Phase::Active {
            if k == 0 && c.idle() && chance(&mut self.rng, 40) {
                self.log(|| format!("c{i} closes its client"));
                self.clients[i].closing = true;
                self.clients[i].client.close(now);
                self.drain_client(i)?;
                self.schedule(i, k, Duration::from_millis(1), Duration::from_millis(500));
            } else {
                self.acquire(i, k)?;
                let hold = self.config.max_hold;
                self.schedule(i, k, Duration::from_millis(1), hold);
            }
        } else {
            self.schedule(i, k, Duration::from_millis(500), Duration::from_secs(1));
        }
        Ok(())
    }

    /// Now and then, client `i` resizes the semaphore (plain setData on the
    /// count, as `zoolock count set` or Curator's `setCount`), or asks a
    /// holder of a revocable lease for it back (Curator's `Revoker`).
    fn admin(&mut self, i: usize) -> Result<(), String> {
        let now = self.now;
        if self.config.resize && chance(&mut self.rng, 100) {
            let n = 1 + below(&mut self.rng, self.config.clients as u64) as i32;
            let op = zoolock_core::Op::set_data(&ZkPath::new(SIZE).expect("a valid path"), count_bytes(n), None);
            self.clients[i].client.submit(now, op).map_err(|e| self.misuse(i, "resize", e))?;
            self.report.resizes += 1;
            self.count_values.insert(n as usize);
            self.log(|| format!("c{i} sets the count to {n}"));
        }
        if self.config.revocable && chance(&mut self.rng, 100) {
            let held: Vec<String> = self
                .clients
                .iter()
                .flat_map(|c| c.tasks.iter().flat_map(|t| t.holds.iter().map(|h| h.node.clone())))
                .collect();
            if !held.is_empty() {
                let node = held[below(&mut self.rng, held.len() as u64) as usize].clone();
                let path = ZkPath::new(&node).map_err(|e| format!("{e:?}"))?;
                let op = zoolock_core::Op::set_data(&path, Bytes::from_static(REVOKE_MESSAGE), None);
                self.clients[i].client.submit(now, op).map_err(|e| self.misuse(i, "revoke", e))?;
                self.log(|| format!("c{i} revokes {node}"));
            }
        }
        self.drain_client(i)
    }

    fn reopen_if_closed(&mut self, i: usize) -> Result<(), String> {
        if self.clients[i].closing && self.clients[i].client.session().is_ended() {
            self.close_link(i);
            let incarnation = self.clients[i].incarnation + 1;
            let fresh = self.new_client(i, incarnation);
            self.log(|| format!("c{i} reopened (incarnation {incarnation}, {:?})", fresh.role));
            self.clients[i] = fresh;
            self.drain_client(i)?;
        }
        Ok(())
    }

    fn misuse(&self, i: usize, what: &str, e: ApiMisuse) -> String {
        format!("c{i}: {what} was refused: {e:?}")
    }

    fn acquire(&mut self, i: usize, k: usize) -> Result<(), String> {
        let now = self.now;
        let deadline = if chance(&mut self.rng, 500) {
            Some(now + self.rng.duration_up_to(self.config.session_timeout * 2))
        } else {
            None
        };
        let read = self.rng.next_u64() % 2 == 0;
        let c = &mut self.clients[i];
        let (mode, part) = match c.role {
            Role::Mutex | Role::SemaphoreMutex | Role::Multi => (Mode::Exclusive, 0),
            Role::Semaphore => (Mode::Lease, 0),
            Role::Rw if read => (Mode::Read, READ),
            Role::Rw => (Mode::Write, WRITE),
        };
        let ticket = Ticket(c.next_ticket);
        c.next_ticket += 1;
        let task = &mut c.tasks[k];
        task.ticket = Some(ticket);
        task.pending = Some(Pending { mode, since: now });
        task.suspended = false;
        let result = match c.shared {
            Shared::Lock(h) => c.client.with(now, h, |q, now| q.acquire(now, ticket, part, deadline)),
            Shared::Semaphore(h) => c.client.with(now, h, |q, now| q.acquire(now, ticket, 1, deadline)),
        };
        match result {
            Ok(Ok(())) => self.log(|| format!("c{i}.{k} acquire {mode:?} {ticket:?} deadline {deadline:?}")),
            Ok(Err(e)) | Err(e) => return Err(self.misuse(i, "acquire", e)),
        }
        self.drain_client(i)
    }

    fn quiescent(&self, i: usize) -> bool {
        let c = &self.clients[i];
        let id = match c.shared {
            Shared::Lock(h) => h.id,
            Shared::Semaphore(h) => h.id,
        };
        c.client.recipe(id).is_some_and(|r| r.is_quiescent())
    }

    fn release(&mut self, i: usize, k: usize) -> Result<(), String> {
        let now = self.now;
        let c = &mut self.clients[i];
        let task = &mut c.tasks[k];
        let lost = std::mem::take(&mut task.must_release);
        let holds = std::mem::take(&mut task.holds);
        let ticket = task.ticket.take();
        task.suspended = false;
        let result = match (c.shared, ticket) {
            (Shared::Lock(h), Some(ticket)) => c.client.with(now, h, |q, now| q.release(now, ticket).map(|_| ())),
            (Shared::Semaphore(h), _) => c.client.with(now, h, |q, now| {
                holds.iter().map(|hold| q.return_lease(now, &hold.node)).find(Result::is_err).unwrap_or(Ok(()))
            }),
            (Shared::Lock(_), None) => Ok(Err(ApiMisuse::NotHeld)),
        };
        self.log(|| format!("c{i}.{k} release{}", if lost { " (after Lost)" } else { "" }));
        match result {
            Ok(Ok(())) => {}
            // After Lost the hold may already be gone.
            Ok(Err(ApiMisuse::NotHeld)) if lost => {}
            Ok(Err(e)) | Err(e) => return Err(self.misuse(i, "release", e)),
        }
        self.drain_client(i)
    }

    fn cancel(&mut self, i: usize, k: usize) -> Result<(), String> {
        let now = self.now;
        let c = &mut self.clients[i];
        let task = &mut c.tasks[k];
        task.pending = None;
        let Some(ticket) = task.ticket.take() else { return Ok(()) };
        let result = match c.shared {
            Shared::Lock(h) => c.client.with(now, h, |q, now| q.cancel(now, ticket)),
            Shared::Semaphore(h) => c.client.with(now, h, |q, now| q.cancel(now, ticket)),
        };
        self.log(|| format!("c{i}.{k} cancel {ticket:?}"));
        if let Err(e) = result {
            return Err(self.misuse(i, "cancel", e));
        }
        self.drain_client(i)
    }

    // ---- events ------------------------------------------------------------------------

    fn client_event(&mut self, i: usize, event: ClientEvent) -> Result<(), String> {
        match event {
            ClientEvent::State(state) => {
                self.log(|| format!("c{i} state {state:?}"));
                let c = &mut self.clients[i];
                match state {
                    ConnectionState::Suspended => c.session_suspended = true,
                    ConnectionState::Connected | ConnectionState::Reconnected => c.session_suspended = false,
                    ConnectionState::Lost => {
                        // Holds get their own `Lost`; acquires under way
                        // re-queue on the session the client renews by itself.
                        c.session_suspended = false;
                        c.doomed = false;
                        if !c.closing {
                            self.report.restarts += 1;
                        }
                    }
                    ConnectionState::Closed => {
                        for t in &mut c.tasks {
                            t.holds.clear();
                            t.pending = None;
                            t.ticket = None;
                            t.must_release = false;
                        }
                        if !c.closing {
                            return Err(format!("c{i}: the session closed by itself"));
                        }
                    }
                    _ => {}
                }
                Ok(())
            }
            ClientEvent::Recipe { event: RecipeEvent::Ticket { ticket, event }, .. } => {
                match self.clients[i].task_of(ticket) {
                    Some(k) => self.ticket_event(i, k, *event),
                    None => {
                        // A cancelled acquire reports nothing; anything else
                        // for a ticket no task owns is a bug.
                        self.log(|| format!("c{i} {ticket:?} (no task) {event:?}"));
                        match *event {
                            RecipeEvent::Acquired { node, .. } => {
                                Err(format!("c{i}: {ticket:?} was granted {node} after it was cancelled"))
                            }
                            _ => Ok(()),
                        }
                    }
                }
            }
            ClientEvent::Recipe { event, .. } => self.handle_event(i, event),
            _ => Ok(()),
        }
    }

    /// An untagged event: a semaphore's status for every lease it holds.
    fn handle_event(&mut self, i: usize, event: RecipeEvent) -> Result<(), String> {
        self.log(|| format!("c{i} {event:?}"));
        if !matches!(self.clients[i].shared, Shared::Semaphore(_)) {
            return Ok(());
        }
        match event {
            RecipeEvent::Suspended => self.clients[i].leases_suspended = true,
            RecipeEvent::Reconnected | RecipeEvent::Lost => self.clients[i].leases_suspended = false,
            _ => {}
        }
        let now = self.now;
        if let RecipeEvent::LeaseRevocationRequested { node } = &event {
            // The holder gives the lease back at once.
            let task = self.clients[i].tasks.iter_mut().find(|t| t.holds.iter().any(|h| h.node == *node));
            let Some(task) = task else {
                return Err(format!("c{i}: revocation requested for {node}, which no task holds"));
            };
            task.next_action = now;
            self.report.revocations += 1;
            return Ok(());
        }
        for t in &mut self.clients[i].tasks {
            if t.holds.is_empty() {
                continue;
            }
            match event {
                RecipeEvent::Suspended => t.suspended = true,
                RecipeEvent::Reconnected => t.suspended = false,
                RecipeEvent::Lost => {
                    // The leases no longer count (`suspended`); the task
                    // returns what is left of them.
                    t.suspended = true;
                    t.must_release = true;
                    t.next_action = now;
                }
                _ => {}
            }
        }
        Ok(())
    }

    fn ticket_event(&mut self, i: usize, k: usize, event: RecipeEvent) -> Result<(), String> {
        self.log(|| format!("c{i}.{k} {event:?}"));
        let now = self.now;
        let c = &mut self.clients[i];
        let no_node = c.no_node_replies;
        let task = &mut c.tasks[k];
        match event {
            RecipeEvent::Acquired { node, token } => {
                let Some(pending) = task.pending else {
                    return Err(format!("c{i}.{k}: Acquired {node} without an acquire under way"));
                };
                task.pending = None;
                c.no_node_replies = 0;
                let holds = match (c.role, c.shared) {
                    (Role::Multi, Shared::Lock(h)) => {
                        let members = c
                            .client
                            .with(now, h, |q, _| {
                                q.inner_mut().as_any_mut().downcast_mut::<MultiLock>().map(|m| {
                                    m.holders()
                                        .into_iter()
                                        .map(|h| h.map(|(n, t)| (n.to_string(), t.0)))
                                        .collect::<Vec<_>>()
                                })
                            })
                            .map_err(|e| format!("{e:?}"))?
                            .ok_or("the multi-lock role runs a MultiLock")?;
                        let mut holds = Vec::new();
                        for (member, (path, mode)) in
                            members.into_iter().zip([(MULTI_A, Mode::Write), (MULTI_B, Mode::Exclusive)])
                        {
                            let Some((node, token)) = member else {
                                return Err(format!("c{i}: multi-lock Acquired but {path} is not held"));
                            };
                            holds.push(Hold { path: path.into(), node, token, mode, limit: 1 });
                        }
                        holds
                    }
                    _ => {
                        let multi = self.config.kind == RecipeKind::MultiLock;
                        let path = match (multi, pending.mode) {
                            (true, Mode::Read | Mode::Write) => MULTI_A,
                            (true, _) => MULTI_B,
                            (false, _) => LOCK,
                        };
                        let limit = match c.shared {
                            Shared::Semaphore(h) => c
                                .client
                                .with(now, h, |q, _| q.inner().lease_limit(&node))
                                .map_err(|e| format!("{e:?}"))?
                                .ok_or_else(|| format!("c{i}: Acquired {node} but the semaphore does not hold it"))?,
                            Shared::Lock(_) => 1,
                        };
                        vec![Hold { path: path.into(), node, token: token.0, mode: pending.mode, limit }]
                    }
                };
                self.report.holds += holds.len();
                let since = pending.since;
                for h in holds {
                    if h.mode == Mode::Lease && self.config.resize && !self.count_values.contains(&h.limit) {
                        return Err(format!(
                            "c{i}.{k}: {} granted under {} leases, a size the count never had",
                            h.node, h.limit
                        ));
                    }
                    self.fence(i, k, &h)?;
                    self.log(|| {
                        format!(
                            "c{i}.{k} HOLDS {:?} {} token {} limit {} (waited since {since})",
                            h.mode, h.node, h.token, h.limit
                        )
                    });
                    self.clients[i].tasks[k].holds.push(h);
                }
                Ok(())
            }
            RecipeEvent::Failed(RequestError::RetriesExhausted(_))
                if task.pending.is_some() && no_node >= NO_NODE_BUDGET =>
            {
                // A slow client can lose the probe/create race with the
                // container reaper on every retry; giving up once the retry
                // budget is spent is Curator's behaviour (attemptLock).
                task.pending = None;
                task.ticket = None;
                c.no_node_replies = 0;
                self.report.unsuccessful += 1;
                self.log(|| format!("c{i}.{k}: NoNode retry budget spent ({no_node} NoNode replies)"));
                Ok(())
            }
            RecipeEvent::Failed(
                e @ (RequestError::Server(_)
                | RequestError::RetriesExhausted(_)
                | RequestError::NodeVanished
                | RequestError::UnexpectedResponse { .. }
                | RequestError::Refused(_)),
            ) if task.pending.is_some() => {
                // The server refused something the recipe should have handled
                // (NoNode from the container reaper, NodeExists, ...), or
                // the recipe gave up early.
                Err(format!("c{i}.{k}: the acquire failed with {e:?} after {no_node} NoNode replies"))
            }
            RecipeEvent::Refused(e) if c.role != Role::Rw => Err(self.misuse(i, "a queued acquire", e)),
            RecipeEvent::TimedOut | RecipeEvent::Failed(_) | RecipeEvent::Refused(_) => {
                // (A read-write lock refuses a write while another task of
                // the client holds the read half: the upgrade rule.)
                if task.pending.take().is_some() {
                    task.ticket = None;
                    c.no_node_replies = 0;
                    self.report.unsuccessful += 1;
                }
                Ok(())
            }
            RecipeEvent::Suspended => {
                task.suspended = true;
                Ok(())
            }
            RecipeEvent::Reconnected => {
                task.suspended = false;
                Ok(())
            }
            RecipeEvent::Lost => {
                task.suspended = false;
                if !task.holds.is_empty() {
                    task.must_release = true;
                    task.next_action = now;
                }
                task.holds.clear();
                Ok(())
            }
            _ => Ok(()),
        }
    }

    // ---- oracles -----------------------------------------------------------------------

    fn fence(&mut self, i: usize, k: usize, h: &Hold) -> Result<(), String> {
        if !self.clients[i].counts() || self.clients[i].tasks[k].suspended {
            return Ok(());
        }
        // A resized semaphore's leases are not ordered either (its limit is
        // above 1 at times).
        let leases = if self.config.resize { usize::MAX } else { self.config.leases };
        self.fencing.check(&format!("c{i}"), &h.path, &h.node, h.mode, h.token, leases)
    }

    /// Exclusion among every holder that was not told its hold is in doubt
    /// ([`check_exclusion`]); each counting hold's node exists in the model,
    /// owned by the holder's current session.
    fn check_exclusion(&self) -> Result<(), String> {
        let mut holds = Vec::new();
        let mut leases = Vec::new();
        for (i, c) in self.clients.iter().enumerate() {
            if !c.counts() {
                continue;
            }
            let session = c.client.session().session_id();
            for (k, t) in c.tasks.iter().enumerate() {
                if t.suspended {
                    continue;
                }
                for h in &t.holds {
                    match self.model.node(&h.node) {
                        Some(n) if n.stat.ephemeral_owner == session => {}
                        Some(n) => {
                            return Err(format!(
                                "c{i}.{k} holds {} but the model says its owner is 0x{:x}, not 0x{session:x}",
                                h.node, n.stat.ephemeral_owner
                            ));
                        }
                        None => return Err(format!("c{i}.{k} holds {} but the model has no such node", h.node)),
                    }
                    match h.mode {
                        Mode::Lease => leases.push(((i, k), h.path.as_str(), h.token, h.limit)),
                        mode => holds.push(((i, k), h.path.as_str(), mode)),
                    }
                }
            }
        }
        check_exclusion(holds, self.config.leases)?;
        check_lease_limits(leases)
    }

    /// A container chain that never had a lock node: an acquire cancelled
    /// while it created the parents leaves one (as Curator's would), and
    /// ZooKeeper 3.8 reaps only containers that once had a child
    /// (`maxNeverUsedIntervalMs` is 0). Tolerated by the leak oracle.
    fn never_used(&self, path: &str) -> bool {
        let Some(node) = self.model.node(path) else { return true };
        if node.stat.ephemeral_owner != 0 {
            return false;
        }
        let children = self.model.children(path).unwrap_or_default();
        if children.is_empty() {
            return node.stat.cversion == 0;
        }
        children.iter().all(|c| self.never_used(&format!("{path}/{c}")))
    }

    fn milestone(&mut self) -> Result<(), String> {
        let t = self.config.session_timeout;
        match self.phase {
            Phase::Active => {
                self.phase = Phase::Draining;
                // Every waiter is served in turn: each holder keeps the lock
                // at most `max_hold` (plus a scheduling slack), and a lost
                // session needs up to T to be noticed.
                let n = (self.clients.len() * self.config.tasks.max(1)) as u32;
                let bound = t * 3 + (self.config.max_hold + Duration::from_secs(3)) * (n + 1);
                self.log(|| format!("DRAIN: no new acquires; liveness bound {bound:?}"));
                self.milestone = self.now + bound;
            }
            Phase::Draining => {
                for (i, c) in self.clients.iter().enumerate() {
                    for (k, t) in c.tasks.iter().enumerate() {
                        if let Some(p) = t.pending {
                            return Err(format!(
                                "liveness: c{i}.{k}'s {:?} acquire since {} never resolved",
                                p.mode, p.since
                            ));
                        }
                        if !t.holds.is_empty() || t.must_release {
                            return Err(format!("liveness: c{i}.{k} still holds {:?}", t.holds));
                        }
                    }
                }
                self.phase = Phase::Settling;
                self.log(|| "SETTLE".into());
                self.milestone = self.now + t * 2;
            }
            Phase::Settling => {
                for i in 0..self.clients.len() {
                    if !self.clients[i].closing && !self.quiescent(i) {
                        return Err(format!("hygiene: c{i}'s recipe is not quiescent after settling"));
                    }
                    if !self.clients[i].closing && self.clients[i].leases_suspended {
                        return Err(format!(
                            "hygiene: c{i}'s semaphore said Suspended and never answered it (Reconnected or Lost)"
                        ));
                    }
                }
                for path in self.model.paths() {
                    let owner = self.model.node(&path).map_or(0, |n| n.stat.ephemeral_owner);
                    if owner != 0 {
                        return Err(format!("hygiene: {path} (owner 0x{owner:x}) is left after every hold ended"));
                    }
                }
                for i in 0..self.clients.len() {
                    if !self.clients[i].closing {
                        self.clients[i].closing = true;
                        let now = self.now;
                        self.clients[i].client.close(now);
                        self.drain_client(i)?;
                    }
                }
                self.phase = Phase::Closing;
                self.log(|| "CLOSE ALL".into());
                self.milestone = self.now + t * 2;
            }
            Phase::Closing => {
                let left: Vec<String> = self
                    .model
                    .paths()
                    .into_iter()
                    .filter(|p| p == ROOT || p.starts_with("/sim/"))
                    .filter(|p| !self.never_used(p))
                    .collect();
                if !left.is_empty() {
                    let stats: Vec<String> = left
                        .iter()
                        .map(|p| {
                            let st = self.model.node(p).map(|n| n.stat);
                            format!("{p} {st:?}")
                        })
                        .collect();
                    return Err(format!("hygiene: nodes left at the end: {stats:?}"));
                }
                let sessions = self.model.sessions();
                if !sessions.is_empty() {
                    return Err(format!("hygiene: sessions left at the end: {sessions:x?}"));
                }
                self.phase = Phase::Done;
            }
            Phase::Done => {}
        }
        Ok(())
    }
}
