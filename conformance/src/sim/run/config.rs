//! A run's configuration, drawn from its seed.

use super::*;

/// The kind a fresh seed runs: [`LockKind::ALL`] in turn. A seed recorded
/// in a list keeps its kind beside it ([`SimConfig::for_seed_and_kind`]), so
/// a new kind re-maps fresh seeds only.
pub fn kind_for_seed(seed: u64) -> LockKind {
    let kinds = LockKind::ALL;
    kinds[(seed % kinds.len() as u64) as usize]
}

/// Knobs of one simulation. [`SimConfig::for_seed`] draws them from the seed.
#[derive(Debug, Clone)]
#[non_exhaustive]
pub struct SimConfig {
    /// The lock kind of the run: every client's, except that a multi-lock
    /// run mixes multi-locks (of a read-write lock's write half and a mutex)
    /// with plain read-write locks and mutexes on their paths.
    pub kind: LockKind,
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
    /// User tasks per client, sharing its one lock handle (a `LockQueue`
    /// or `LeaseQueue` queue).
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
    /// Held nodes are watched ([`LockConfig::watch_held`]); off, a
    /// deliberately broken configuration the oracle must catch once a held
    /// node is deleted from outside.
    pub watch_held: bool,
    /// Clients connect under the chroot `/sim` and keep it in place
    /// ([`SessionConfig::create_chroot`]): the container reaper takes it
    /// whenever every lock is idle, and the sessions make it again. Not with
    /// `resize` (its count lives outside `/sim`).
    pub chroot: bool,
    /// Elections only: the participants' maximum hold of leadership
    /// ([`LockConfig::max_hold`]), or none.
    pub election_max_hold: Option<Duration>,
    /// Selector only: participants re-queue after each term (Curator's
    /// `autoRequeue`); a latch always does after a loss.
    pub auto_requeue: bool,
    /// Elections only: whether a suspended term still leads. The runner of
    /// terms (the script, as the driver's `LeaderSelector::run`) ends a
    /// term on `Suspended` under the standard policy and rides it out
    /// under the session policy.
    pub election_policy: LeadershipPolicy,
    /// Elections only, a deliberately broken participant the oracles must
    /// catch: it goes on believing it leads after it was told `Lost`.
    pub ignore_loss: bool,
    /// The model's `tickTime` (2 or 3 s; T/2, the most a client assumes,
    /// at most). The model runs as a follower (`ModelConfig::follower`):
    /// the leader hears of touches every tick/2, and its `syncLimit` (5)
    /// times this is how long an isolated server keeps its clients.
    pub model_tick: Duration,
    /// Times a holder's server is cut off from the quorum while it keeps
    /// answering its clients (`partition.rs`), for T/2 to 3T.
    pub isolations: usize,
    /// Times a holder's process is frozen for longer than T (up to 2T).
    pub freezes: usize,
    /// The sessions confirm the quorum while holding
    /// ([`SessionConfig::confirm_quorum`]); off, a deliberately broken
    /// configuration the lease oracle must catch under isolation.
    pub confirm_quorum: bool,
    /// The simulated handles judge the session's lease when a hold is read;
    /// off, a deliberately broken reading (events only) the oracles must
    /// catch after a freeze.
    pub judge_lease: bool,
}

/// Children of a run's seed ([`Rng::fork`]): the configuration, then the
/// clients (one each, forked again per incarnation).
pub(super) const FORK_CONFIG: u64 = 0;
pub(super) const FORK_CLIENTS: u64 = 1;
/// The outside deletes' schedule, drawn apart so that the other faults of
/// a seed stay what they were before outside deletes existed. (Clients
/// fork `FORK_CLIENTS + index` with index < 5.)
pub(super) const FORK_OUTSIDE: u64 = 1000;
/// The election knobs, drawn apart so that a seed's other draws stay what
/// they were before elections existed.
pub(super) const FORK_ELECTION: u64 = 1001;
/// Issue 36's faults (isolation, freeze) and the model's tick, drawn apart.
pub(super) const FORK_QUORUM: u64 = 1002;
/// Outside deletes per run: 0 to this many.
pub(super) const MAX_OUTSIDE_DELETES: u64 = 3;

impl SimConfig {
    /// The configuration of a fresh `seed`: its kind is [`kind_for_seed`].
    pub fn for_seed(seed: u64) -> SimConfig {
        SimConfig::for_seed_and_kind(seed, kind_for_seed(seed))
    }

    /// The configuration of `seed` running `kind`: 2 to 5 clients, the
    /// Curator plan one time in four, T = 6 s, up to 24 faults in the first
    /// 60 s, new acquires until 70 s.
    pub fn for_seed_and_kind(seed: u64, kind: LockKind) -> SimConfig {
        let mut rng = Rng::with_seed(Rng::fork(seed, FORK_CONFIG));
        let clients = 2 + below(&mut rng, 4) as usize;
        let leases = 1 + below(&mut rng, (clients - 1) as u64) as usize;
        let plan = if below(&mut rng, 4) == 0 { OpPlan::Curator } else { OpPlan::Pipelined };
        let faults = below(&mut rng, 25) as usize;
        let tasks = 1 + below(&mut rng, 3) as usize;
        // Drawn last, so the draws above stay what they were for old seeds.
        let resize = kind == LockKind::Semaphore && below(&mut rng, 2) == 0;
        let revocable = kind == LockKind::Semaphore && below(&mut rng, 2) == 0;
        let chroot = !resize && below(&mut rng, 2) == 0;
        let mut election = Rng::with_seed(Rng::fork(seed, FORK_ELECTION));
        let elects = kind.election().is_some();
        let election_max_hold = (elects && below(&mut election, 2) == 0)
            .then(|| between(&mut election, Duration::from_millis(300), Duration::from_secs(3)));
        let auto_requeue = kind == LockKind::LeaderSelector && below(&mut election, 4) != 0;
        let election_policy = match elects && below(&mut election, 2) == 0 {
            true => LeadershipPolicy::Session,
            false => LeadershipPolicy::Standard,
        };
        // One participant per client: an election has no shared queue.
        let tasks = if elects { 1 } else { tasks };
        let mut quorum = Rng::with_seed(Rng::fork(seed, FORK_QUORUM));
        let model_tick = Duration::from_millis(2000 + 1000 * below(&mut quorum, 2));
        let isolations = below(&mut quorum, 3) as usize;
        let freezes = usize::from(below(&mut quorum, 3) == 0);
        SimConfig {
            model_tick,
            isolations,
            freezes,
            confirm_quorum: true,
            judge_lease: true,
            election_max_hold,
            auto_requeue,
            election_policy,
            ignore_loss: false,
            watch_held: true,
            chroot,
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
