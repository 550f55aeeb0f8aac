//! The simulation itself: configuration, scheduler, network, faults, user
//! script and oracles. See the module docs of [`crate::sim`].

mod checks;
mod config;
mod election;
mod events;
mod faults;
mod lease;
mod net;
mod partition;
mod script;
mod sweep;

use config::{FORK_CLIENTS, FORK_OUTSIDE, FORK_QUORUM, MAX_OUTSIDE_DELETES};
pub use config::{SimConfig, kind_for_seed};
use net::{Down, Link, trace_frames};
use std::collections::{BTreeSet, VecDeque};
use std::panic::{AssertUnwindSafe, catch_unwind};
use std::time::Duration;
pub use sweep::{SweepOutcome, sweep};

use bytes::{Bytes, BytesMut};
use zoolock_core::recipes::{
    BoxedLock, ElectionKind, LeadershipPolicy, REVOKE_MESSAGE, SemaphoreSize, SemaphoreSpec, count_bytes,
};
use zoolock_core::{
    AclPolicy, ApiMisuse, ChrootPolicy, Client, ClientEvent, ConnectString, ConnectionState, Handle, Instant,
    IoCommand, RecipeEvent, RequestError, Rng, SessionConfig, ZkPath,
    recipes::{Election, LeaseQueue, LockConfig, LockKind, LockQueue, LockSpec, Mutex, OpPlan, Part, Ticket},
};

use super::oracle::{Fencing, Mode, check_exclusion, check_lease_limits};
use crate::decode::StreamDecoder;
use crate::trace::Direction;
use zoolock_model::{ConnId, ModelConfig, ZkModel};

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
    /// Held nodes deleted from outside.
    pub outside_deletes: usize,
    /// Times the chroot `/sim` appeared in the model ([`SimConfig::chroot`]
    /// runs): made at the start, and again after each time it was reaped.
    pub roots_made: usize,
    /// Elections: terms ended by the maximum hold (`Expired`).
    pub expiries: usize,
    /// Elections: participants that queued again by themselves.
    pub requeues: usize,
    /// Holders' connections cut off from the leader.
    pub isolations: usize,
    /// Holders frozen past their session.
    pub freezes: usize,
    /// Frozen clients that resumed holding by their events (their holds
    /// judged by the lease at the resume instant).
    pub resumed_holding: usize,
    /// Steps after which a hold read `Held` on an isolated connection
    /// (legitimately: the leader's deadline still ahead).
    pub held_isolated: usize,
    /// Sessions the leader expired while a hold on them read `Held` by its
    /// events alone, and `Suspended` by the lease.
    pub lease_saves: usize,
    /// Connections a session dropped because the quorum did not confirm it
    /// in time (`Suspension::QuorumUnconfirmed`).
    pub quorum_drops: usize,
    /// Elections under the standard policy: terms their runner ended on
    /// `Suspended`.
    pub terms_ended_suspended: usize,
    /// Elections under the session policy: terms that read `Suspended`,
    /// then `Reconnected`, and went on.
    pub terms_kept_suspended: usize,
}

/// A failed run: the seed, what went wrong, and the newest trace lines.
#[derive(Debug, Clone)]
pub struct SimFailure {
    /// The seed to replay with `SIM_SEED`.
    pub seed: u64,
    /// Its kind, to record beside the seed (`SIM_KIND` replays it).
    pub kind: LockKind,
    /// The broken oracle or the panic message.
    pub message: String,
    /// The last trace lines, oldest first.
    pub trace: Vec<String>,
}

impl std::fmt::Display for SimFailure {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        writeln!(f, "SIM_SEED={} SIM_KIND={} failed: {}", self.seed, self.kind.label(), self.message)?;
        writeln!(f, "last {} trace lines:", self.trace.len())?;
        for line in &self.trace {
            writeln!(f, "  {line}")?;
        }
        write!(
            f,
            "replay: SIM_SEED={} SIM_KIND={} cargo test -p zoolock-conformance --test sim -- replay --nocapture",
            self.seed,
            self.kind.label()
        )
    }
}

/// Runs one seed with its [`SimConfig::for_seed`] configuration, panics
/// included.
pub fn run_seed(seed: u64) -> Result<SimReport, SimFailure> {
    run_with(seed, SimConfig::for_seed(seed))
}

/// Runs one seed with an explicit configuration, panics included.
pub fn run_with(seed: u64, config: SimConfig) -> Result<SimReport, SimFailure> {
    let kind = config.kind;
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
    Err(SimFailure { seed, kind, message, trace: sim.trace.iter().cloned().collect() })
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

// ---- clients ---------------------------------------------------------------------------

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
    Lock(Handle<LockQueue>),
    Semaphore(Handle<LeaseQueue>),
    Election(Handle<Election>),
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
    /// The kind of its lock.
    role: LockKind,
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
    /// Frozen (`partition.rs`): nothing reaches the client before this.
    frozen_until: Instant,
    /// It has not been judged at its resume instant yet.
    resume_pending: bool,
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
            Shared::Lock(h) => h.id(),
            Shared::Semaphore(h) => h.id(),
            Shared::Election(h) => h.id(),
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
    /// A frozen client resumes (judged before any input reaches it).
    Resume(usize),
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
    /// Someone else deletes a held lock node (an operator, a buggy client);
    /// the number of times it was put off for want of a held node.
    OutsideDelete(u32),
    /// A holder's server is cut off from the leader for this long; the
    /// times it was put off for want of a holder.
    Isolate(Duration, u32),
    /// The isolated connection of a client reaches the leader again.
    Heal(usize, ConnId),
    /// A holder is frozen for this long; the times it was put off.
    Freeze(Duration, u32),
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

/// Where the news of an outside delete stands for its holder. A watch on
/// the node tells it with the notification queued at the delete; a child
/// watch on the lock path (a hold granted by a listing that armed one) only
/// says that some child changed, and the holder's exists, sent on it, tells
/// with its NoNode: one more round trip.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
enum News {
    /// The notification is the `n`-th item down the link.
    Down(u64),
    /// The notification arrived; what the client sent in reaction is the
    /// `n`-th item up the link.
    Up(u64),
    /// Its reply is the `n`-th item down the link.
    Reply(u64),
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
    /// Whether `/sim` existed after the last step (for `roots_made`).
    root_present: bool,
    /// Per path: the highest token of any hold, and of any write hold.
    fencing: Fencing,
    /// Every size the script gave the count (and its seed).
    count_values: BTreeSet<usize>,
    /// Held nodes deleted from outside, while the news may still be on its
    /// way: node → (holder, its connection, where the news stands). The
    /// hold does not count until the news has arrived; after, a holder that
    /// still has it is a failure.
    outside_deleted: std::collections::BTreeMap<String, (usize, ConnId, News)>,
    /// Sessions whose holds the lease alone kept from reading `Held` after
    /// the leader expired them.
    lease_saves: BTreeSet<i64>,
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
        let model = ZkModel::new(
            ModelConfig::default()
                .with_seed(seed)
                .with_container_delay(Duration::from_secs(1))
                .with_tick(config.model_tick)
                .with_follower(true),
        );
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
        let mut outside = Rng::with_seed(Rng::fork(seed, FORK_OUTSIDE));
        for _ in 0..below(&mut outside, MAX_OUTSIDE_DELETES + 1) {
            let at = Instant::ZERO + outside.duration_up_to(config.fault_phase);
            faults.push((at, Fault::OutsideDelete(0)));
        }
        let mut quorum = Rng::with_seed(Rng::fork(Rng::fork(seed, FORK_QUORUM), 1));
        for _ in 0..config.isolations {
            let at = Instant::ZERO + quorum.duration_up_to(config.fault_phase);
            faults.push((at, Fault::Isolate(between(&mut quorum, t / 2, t * 3), 0)));
        }
        for _ in 0..config.freezes {
            let at = Instant::ZERO + quorum.duration_up_to(config.fault_phase);
            let d = between(&mut quorum, t + Duration::from_millis(1), t * 2);
            faults.push((at, Fault::Freeze(d, 0)));
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
            root_present: false,
            fencing: Fencing::default(),
            count_values: BTreeSet::new(),
            outside_deleted: std::collections::BTreeMap::new(),
            lease_saves: BTreeSet::new(),
            trace: VecDeque::new(),
        };
        sim.count_values.insert(sim.config.leases);
        for i in 0..sim.config.clients {
            let client = sim.new_client(i, 0);
            sim.clients.push(client);
        }
        sim
    }

    /// `server`, one of the lock paths, as a client sees it.
    fn client_path<'a>(&self, server: &'a str) -> &'a str {
        match self.config.chroot {
            true => server.strip_prefix(ROOT).unwrap_or(server),
            false => server,
        }
    }

    /// A node path a client reported, as the model knows it.
    fn server_path(&self, client: &str) -> String {
        match self.config.chroot {
            true => format!("{ROOT}{client}"),
            false => client.to_owned(),
        }
    }

    fn log(&mut self, line: impl FnOnce() -> String) {
        let limit = if trace_frames() { TRACE_LINES * 20 } else { TRACE_LINES };
        if self.trace.len() >= limit {
            self.trace.pop_front();
        }
        let line = format!("{} {}", self.now, line());
        self.trace.push_back(line);
    }

    fn role_for(&mut self, _index: usize) -> LockKind {
        match self.config.kind {
            LockKind::MultiLock => match below(&mut self.rng, 10) {
                0..=2 => LockKind::Mutex,
                3..=4 => LockKind::ReadWriteLock,
                _ => LockKind::MultiLock,
            },
            kind => kind,
        }
    }

    /// The lock a client of `role` takes, on the paths as clients see them
    /// (a read-write lock is built whole, its halves are the parts); `None`
    /// for the semaphore. A kind that is one lock on one path runs here with
    /// no change (its holds are checked as exclusive).
    fn spec(&self, role: LockKind) -> Option<LockSpec> {
        let path = |p: &str| self.client_path(p).to_owned();
        let multi = self.config.kind == LockKind::MultiLock;
        match role {
            // A mixed multi-lock: a write half and a mutex, as Curator's
            // InterProcessMultiLock takes any InterProcessLock.
            LockKind::MultiLock => {
                Some(LockSpec::Multi(vec![LockSpec::Write(path(MULTI_A)), LockSpec::Mutex(path(MULTI_B))]))
            }
            // The multi-lock's members, beside it.
            LockKind::Mutex if multi => LockSpec::of(role, path(MULTI_B)),
            LockKind::ReadWriteLock if multi => LockSpec::of(role, path(MULTI_A)),
            _ => LockSpec::of(role, path(LOCK)),
        }
    }

    /// The semaphore of a semaphore run: sized by a shared count (the right
    /// one or, deliberately broken, another) or by `leases`.
    fn semaphore_spec(&self) -> SemaphoreSpec {
        let size = if self.config.resize {
            let (count, seed) = match self.config.wrong_count {
                false => (SIZE, self.config.leases),
                true => (WRONG_SIZE, self.config.clients + 1),
            };
            SemaphoreSize::Count { path: self.client_path(count).to_owned(), seed: i32::try_from(seed).unwrap_or(1) }
        } else {
            SemaphoreSize::Leases(self.config.leases)
        };
        SemaphoreSpec::new(self.client_path(LOCK), size, self.config.revocable)
    }

    fn new_client(&mut self, index: usize, incarnation: u64) -> SimClient {
        let seed = Rng::fork(Rng::fork(self.seed, FORK_CLIENTS + index as u64), incarnation);
        let root = if self.config.chroot { ROOT } else { "" };
        let cs = ConnectString::parse(&format!("127.0.0.1:2181{root}")).expect("a valid connect string");
        let mut session = SessionConfig::new(cs, seed).with_session_timeout(self.config.session_timeout);
        session.confirm_quorum = self.config.confirm_quorum;
        if self.config.chroot {
            session = session.with_create_chroot(ChrootPolicy::new(AclPolicy::default()));
        }
        let mut client = Client::new(session, self.now);
        // Sessions renew by themselves; the queues re-queue acquires on it.
        client.set_renew_session(true);
        let role = self.role_for(index);
        let config =
            LockConfig::new(Rng::fork(seed, 0)).with_plan(self.config.plan).with_watch_held(self.config.watch_held);
        let shared = match self.spec(role) {
            Some(spec) => {
                let lock: BoxedLock = match spec {
                    // The deliberately broken predicate the exclusion oracle
                    // must catch.
                    LockSpec::Mutex(p) if self.config.mutex_leases != 1 => {
                        let base = ZkPath::new(&p).expect("a valid path");
                        Box::new(Mutex::with_leases(base, config, self.config.mutex_leases))
                    }
                    spec => spec.build(config, false).expect("a valid lock").0,
                };
                Shared::Lock(client.add(self.now, LockQueue::new(lock, true)))
            }
            None if role == LockKind::Semaphore => {
                let sem = self.semaphore_spec().build(config).expect("a valid semaphore");
                Shared::Semaphore(client.add(self.now, LeaseQueue::new(sem, true)))
            }
            None => {
                let Some(kind) = role.election() else { panic!("the simulator has no scenario for {role:?} yet") };
                let mut config = config;
                config.max_hold = self.config.election_max_hold;
                let id = format!("c{index}.{incarnation}");
                let requeue = kind == ElectionKind::Latch || self.config.auto_requeue;
                let path = ZkPath::new(self.client_path(LOCK)).expect("a valid path");
                let election = Election::new(path, config, kind, &id)
                    .auto_requeue(requeue)
                    .leadership_policy(self.config.election_policy);
                Shared::Election(client.add(self.now, election))
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
            session_suspended: false,
            leases_suspended: false,
            doomed: false,
            no_node_replies: 0,
            closing: false,
            frozen_until: Instant::ZERO,
            resume_pending: false,
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
            // A frozen client takes nothing up before it resumes; what it
            // sent still travels.
            let at = |t| self.after_freeze(i, t);
            if c.resume_pending {
                due.push((c.frozen_until, Due::Resume(i)));
            }
            if let Some(t) = c.connecting {
                due.push((at(t), Due::Connect(i)));
            }
            if let Some(link) = &c.link {
                if let Some(t) = link.next_up() {
                    due.push((t, Due::Up(i)));
                }
                if let Some(t) = link.next_down() {
                    due.push((at(t), Due::Down(i)));
                }
            }
            if let Some(t) = c.client.poll_timeout() {
                due.push((at(t), Due::ClientTimer(i)));
            }
            if self.phase <= Phase::Draining {
                for (k, t) in c.tasks.iter().enumerate() {
                    due.push((at(t.next_action), Due::Action(i, k)));
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
        // A client resuming is judged before anything reaches it.
        let resume = ready.iter().copied().find(|d| matches!(d, Due::Resume(_)));
        let pick = resume.unwrap_or_else(|| ready[below(&mut self.rng, ready.len() as u64) as usize]);
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
            Due::Resume(i) => self.resume(i),
        }
        if self.config.chroot {
            let present = self.model.node(ROOT).is_some();
            if present && !self.root_present {
                self.report.roots_made += 1;
            }
            self.root_present = present;
        }
        self.check_lease()?;
        self.check_exclusion()?;
        self.check_leader_view()
    }
}
