//! A deterministic simulation of zoolock clients contending for locks on the
//! in-memory ZooKeeper [`model`](zoolock_model), with injected faults and
//! oracles checked after every step (`ARCHITECTURE.md` at the repository's
//! root places it among the layers).
//!
//! # Parts
//!
//! * One virtual clock ([`zoolock_core::Instant`]), advanced only by the
//!   scheduler, and one seeded PRNG that owns every random choice.
//! * One [`ZkModel`](zoolock_model::ZkModel).
//! * N simulated clients: a [`zoolock_core::Client`] with one lock handle
//!   each, of the seed's [`LockKind`](zoolock_core::recipes::LockKind) ([`kind_for_seed`]: Mutex; ReadWriteLock, read or write
//!   at random per acquire; Semaphore with N leases; SemaphoreMutex; a mixed
//!   MultiLock of a read-write lock's write half and a mutex, beside plain
//!   read-write locks and mutexes on its two paths; an election participant,
//!   below). Every lock kind runs
//!   behind core's `LockQueue` (the semaphore behind `LeaseQueue`), and
//!   1 to 3 user tasks per client share the handle, as tasks share a cloned
//!   `Lock` in the async API. Half the semaphore seeds size it by a shared
//!   count that the script sets to 1..=clients now and then (plain setData,
//!   as `zoolock count set`), and half make its leases revocable, revoking a
//!   random held lease now and then (`__REVOKE__`); a holder asked gives
//!   its lease back at once. Half the other seeds connect their clients
//!   under the chroot `/sim`, which the sessions keep in place as a Curator
//!   namespace is kept: the container reaper takes it whenever every lock
//!   is idle, and the next create under it makes it again.
//! * Elections (`LockKind::LeaderSelector`, `LockKind::LeaderLatch`, kinds
//!   like the others): one `Election` participant per client in
//!   Curator's `LeaderSelector` or `LeaderLatch` layout, half of them with a
//!   maximum hold of leadership (0.3 to 3 s), selectors re-queueing after
//!   their terms three times in four. A leader resigns after a random term
//!   (and closes, once acquires stop); a participant queues again by itself
//!   when its layout says so. Each seed draws a leadership policy: under
//!   the standard one a leader told `Suspended` ends its term at once (as
//!   the driver's `LeaderSelector::run`), under the session one it rides
//!   the suspension out until `Reconnected` or `Lost`.
//! * Per-connection byte pipes with seeded latency and jitter. Delivery is in
//!   order (TCP); faults act on whole connections. Connecting takes one
//!   latency too, and is refused while the server is down or the client is
//!   partitioned.
//! * Scripted user actions: acquire (with or without a deadline), release
//!   after a random hold, cancel an acquire under way, close the client and
//!   open a new one. Sessions renew by themselves after `Lost`
//!   ([`set_renew_session`](zoolock_core::Client::set_renew_session)): holds
//!   are lost for good and acquires under way re-queue on the new session.
//!
//! `step()` takes the earliest due thing (fault, connect outcome, pipe
//! delivery, model or client timer, user action), breaks ties at random,
//! runs it, drains every output, and checks the oracles.
//!
//! # Faults
//!
//! Drawn from a seeded plan (up to 24 faults in the first 60 s of virtual
//! time; see [`SimConfig::for_seed`]); the rest of the run is quiet. T is the
//! session timeout (6 s).
//!
//! * **reset**: the connection dies with the bytes in flight both ways; the
//!   client gets `handle_disconnected`, the model `disconnect`.
//! * **stall**: the connection delivers nothing in either direction for
//!   between T/3 and 1.3 T, then resumes; past 2T/3 the client gives it up by
//!   itself (and past T the server expires the session).
//! * **partition**: a reset, then the client's connects are refused for
//!   between T/3 and 1.5 T (long ones end in expiry and `restart_session`).
//! * **server restart**: every connection is reset and connects are refused
//!   for up to T/3; the model keeps its state (ZooKeeper persists it), so the
//!   sessions survive.
//! * **session expiry**: `ZkModel::expire_session` on one client's session.
//! * **lost reply after commit**: the next batch the client sends that holds
//!   a real request (not a ping) is applied by the model, every reply is
//!   dropped, and the connection is reset.
//! * **slow client link / slow server**: 50 to 400 ms of extra latency each
//!   way, on one client's traffic or on everyone's, for 1 s to 2T.
//! * **isolated server** (issue 36; 0 to 2 per run, drawn apart): the server
//!   of a holder's connection is cut off from the quorum for T/2 to 3T and
//!   keeps answering its clients. The model runs as a follower
//!   (`ModelConfig::follower`, tickTime 2 or 3 s, syncLimit 5): only the
//!   leader expires sessions, one timeout after the relay (every tick/2)
//!   that last brought it a touch; the isolated connection's pings and
//!   reads are answered from the server's view when it was cut off, its
//!   writes and syncs (and what follows them) wait, its touches and the
//!   ones not yet relayed never reach the leader, and nothing the leader
//!   does reaches it. It heals, or after syncLimit × tickTime the server
//!   closes the connection (`isolation.rs` in the model).
//! * **frozen client** (issue 36; one run in three): a holder's process
//!   stops for T to 2T: nothing reaches it and no timer fires; what it sent
//!   still travels, and a reset meanwhile reaches it when it resumes. At
//!   the resume instant its holds are judged before it gets any input.
//!
//! Base latency is 1 to 30 ms per client plus up to 5 ms of jitter, so the
//! one-way latency stays below T/3 (the premise of the safety argument
//! below). The model's container reaper runs 1 s after a container empties
//! (ZooKeeper: every 60 s).

//! # Oracles (after every step)
//!
//! Exclusion and fencing are defined once, in [`check_exclusion`] and
//! [`Fencing`]; the ensemble soak (`tests/ensemble/soak.rs`) checks real
//! clients on real servers with the same two.
//!
//! A task *holds* from its `Acquired` until it releases (the user stops
//! using the lock when it asks to release), is told `Lost`, or closes; the
//! hold *counts* (reads `Held`, as a handle reads it) while neither the
//! session nor the hold has said `Suspended` without a later
//! `Reconnected`, while the session's lease (`Session::lease`) is valid at
//! that instant, and while the client's session
//! has not been expired by an injected fault whose news is still on its way
//! (an injected expiry is the server deciding on its own; the timers make a
//! natural expiry reach the client as `Suspended` first, since the client
//! gives a silent connection up after 2T/3 and latency stays below T/3).
//!
//! 1. Exclusion, among all tasks of all clients (in-process holders count
//!    like any other): per lock path at most one counting exclusive holder
//!    (Mutex, SemaphoreMutex, MultiLock members), at most N counting
//!    semaphore leases (resized: for each counting lease, it and the
//!    counting leases with older nodes are at most the limit in force when
//!    it was granted, since its listing saw them all), at most one writer and never a writer alongside a
//!    reader (the script never downgrades). Each
//!    counting hold's node exists in the model, owned by the holder's current
//!    session.
//!    An election's term is an exclusive hold of its path, so this is the
//!    election's oracle: at most one participant believes it leads at any
//!    instant once the previous leader's loss was signalled. Beside it,
//!    Curator's `getLeader` read from the model (the first node in the
//!    layout's order, its data as the id) names that participant, and each
//!    participant's own `Election::leads` is what its events say under the
//!    seed's policy (a suspended term leads only under the session policy).
//! 2. Fencing: per path, an exclusive (or write, or lease) hold's token is
//!    greater than every earlier hold's; a read hold's is greater than every
//!    earlier write hold's.
//! 3. Liveness: after the active phase no new acquire starts, and by a bound
//!    every acquire has resolved and every hold has been released. For
//!    elections: every participant still queued (or waiting for a renewed
//!    session to queue in) leads in turn once faults stop.
//! 4. Hygiene: once everything settled every recipe is quiescent, every
//!    `Suspended` a semaphore reported has been answered (`Reconnected` or
//!    `Lost`: the async handle reports its leases' status from them), and the
//!    model has no ephemeral node; after every client closed and the timeouts
//!    passed, no node is left under `/sim` (except container parents that
//!    never had a child, left by an acquire cancelled while it created them;
//!    ZooKeeper 3.8 never reaps those either) and no session is left.
//! 5. Lease (issue 36): a counting hold's session is one the leader has not
//!    expired and cannot have expired yet (the model's leader-side deadline
//!    is ahead), checked after every step and right after a frozen client
//!    resumes, before any input. With `SimConfig::confirm_quorum` off, an
//!    isolated holder is caught (`tests/sim.rs`).
//! 6. No panic; no `ApiMisuse` from a command the script believes valid
//!    (acquires queue behind a release still under way); no
//!    `SessionError` (the model never misbehaves); no acquire ending in
//!    `Failed` with a server error (NoNode from the reaper and the like must
//!    be retried by the recipe), except `Failed(NoNode)` after at least 8
//!    NoNode replies: a slow client can lose the probe/create race with the
//!    reaper on every retry and spend its retry budget, as Curator would.
//!
//! # Running
//!
//! A failure reports `SIM_SEED=<n>` and the last 80 trace lines (user
//! actions, faults, connection states, recipe events). `SIM_TRACE_FRAMES=1`
//! also decodes every frame into the trace (and keeps 1,600 lines). Tests in
//! `conformance/tests/sim.rs`:
//!
//! ```text
//! # CI: 2,000 seeds (every kind of LockKind::ALL in turn) + regressions + determinism.
//! # About 25-60 s in debug on 2 cores; 2,000 seeds take ~3 s in release.
//! cargo test -p zoolock-conformance --test sim
//! # Replay one seed, with every frame in the trace:
//! SIM_SEED=1234 SIM_TRACE_FRAMES=1 cargo test -p zoolock-conformance --test sim -- replay --nocapture
//! # The long sweep (~2.5 min for 100,000 seeds in release on 2 cores):
//! SIM_SEEDS=100000 SIM_SEED_START=0 cargo test --release -p zoolock-conformance --test sim -- sweep --nocapture
//! ```
//!
//! `SIM_THREADS` sets the sweep's thread count (default: available
//! parallelism). A seed that fails goes into `REGRESSIONS` in
//! `tests/sim.rs` once fixed.

mod oracle;
mod run;

pub use oracle::{Fencing, Mode, check_exclusion, check_lease_limits};
pub use run::{Sim, SimConfig, SimFailure, SimReport, SweepOutcome, kind_for_seed, run_seed, run_with, sweep};
