//! [`Semaphore`]: Curator's `InterProcessSemaphoreV2`. Up to `max_leases`
//! leases on a path, taken one at a time under an internal mutex.
//!
//! Layout (wire-compatible with Curator 5.4.0): the internal mutex is an
//! ordinary lock on `base/locks` (nodes `_c_<uuid>-lock-<seq>`), and each
//! lease is an EPHEMERAL_SEQUENTIAL node `base/leases/_c_<uuid>-lease-<seq>`.
//! One lease is taken like this, exactly as Curator does:
//!
//! 1. acquire the `locks` mutex;
//! 2. create a lease node and list `leases` with a child watch;
//! 3. while there are more than `max_leases` children (ours and foreign ones
//!    included), wait for the child watch *still holding the mutex*, then list
//!    again;
//! 4. once held: checkWatches on `leases`, then delete the mutex node.
//!
//! Only the mutex holder watches `leases`; everyone else queues on the mutex,
//! so waiters form a fair FIFO and nobody deadlocks on a count that includes
//! every waiter's node.
//!
//! Events of one `acquire(qty)`: when all `qty` leases are obtained, `qty`
//! [`RecipeEvent::Acquired`] events follow back to back (one per lease, in the
//! order obtained; `node` is the lease path, `token` its czxid). If the call
//! cannot complete (deadline, error), the leases it already obtained are
//! deleted and one `TimedOut` or `Failed` is reported instead; no `Acquired`
//! is ever reported for a lease that is not kept. `cancel` reports nothing.
//!
//! Plans: with [`OpPlan::Curator`](super::OpPlan::Curator) the next lease (or
//! the `Acquired` events) waits for the reply to the mutex node's delete, as
//! Curator's foreground release does; with `Pipelined` it follows as soon as
//! the delete is queued (the delete stays guaranteed), and every create2 goes
//! out with its getChildren2 in the same round trip.
//!
//! Sized by a [`SharedCount`] (Curator's `SharedCountReader` constructor):
//! the count is read and watched by the semaphore itself; an acquire waits
//! for its first value, and each new value is the limit from then on. A
//! waiter lists again at once, so growing lets it in; shrinking takes no
//! lease away (as in Curator), it only holds back later grants.
//!
//! Revocable ([`Semaphore::make_revocable`]): each lease node is created with
//! empty data and its data watched, as a revocable lock's node is; Curator's
//! `__REVOKE__` written into it is reported as
//! [`RecipeEvent::LeaseRevocationRequested`] for that lease.
//!
//! Vanished lease (Curator's MISSING_NODE): the lease node is deleted, the
//! watch checked off, the mutex node deleted, and after the retry policy's
//! pause the lease starts over with a new mutex node and a new lease node.
//!
//! [`RecipeEvent::Acquired`]: crate::recipe::RecipeEvent::Acquired
//! [`RecipeEvent::LeaseRevocationRequested`]: crate::recipe::RecipeEvent::LeaseRevocationRequested

use alloc::collections::{BTreeMap, BTreeSet};
use alloc::vec::Vec;

use zoolock_wire::WatcherType;

use super::config::SharedLockConfig;
use super::kit::{OpRouter, Outbox};
use super::lock_core::{LockCore, Rule, Shape};
use super::naming::LockName;
use super::policy::{LEASE_NAME, LOCK_NAME, SortKey};
use super::shared_count::{CountEvent, SharedCount};
use crate::error::{ApiMisuse, RequestError};
use crate::op::Op;
use crate::path::ZkPath;
use crate::recipe::{FencingToken, Recipe};
use crate::rng::Rng;
use crate::time::Instant;

mod drive;
mod event;
mod reactions;

pub use event::SemaphoreEvent;

/// Curator's `LOCK_PARENT`: the internal mutex's path under the semaphore.
pub const SEMAPHORE_LOCKS: &str = "locks";
/// Curator's `LEASE_PARENT`: where lease nodes live.
pub const SEMAPHORE_LEASES: &str = "leases";

/// Slot of the internal mutex core; lease cores get slots from 1 up.
const MUTEX_SLOT: u64 = 0;

/// The internal mutex's and the leases' node names.
static MUTEX_NAME: LockName = LockName::known(LOCK_NAME);
static LEASE_NODE_NAME: LockName = LockName::known(LEASE_NAME);

/// The member an outgoing op came from, so its reply goes back there. The
/// semaphore's own ops (checkWatches) have no route: their replies are not
/// needed.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
enum Member {
    /// A core: the mutex or one lease.
    Core(u64),
    /// The size's shared count.
    Count,
}

/// Where one lease of an acquire stands.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
enum Phase {
    /// The internal mutex core is still finishing an earlier release, or
    /// the size's shared count has not been read yet.
    MutexBusy,
    /// Waiting for the internal mutex.
    Mutex,
    /// Mutex held; the lease core in `slot` is acquiring.
    Lease { slot: u64 },
    /// Lease `slot` held; waiting for the internal mutex's release.
    Unlocking { slot: u64 },
    /// Our lease vanished: pausing before starting this lease over.
    Pause { until: Instant },
}

#[derive(Debug)]
struct Acquiring {
    qty: usize,
    deadline: Option<Instant>,
    /// Leases obtained by this call, not yet reported.
    got: Vec<u64>,
    phase: Phase,
    /// Vanished-lease retries used for the current lease.
    retries: u32,
}

/// A counting semaphore on `base`, wire-compatible with Curator's
/// `InterProcessSemaphoreV2` (see the module docs for the layout and the
/// events).
///
/// Several acquires may be made in turn on one handle; each lease is held
/// until returned with [`Semaphore::return_lease`] or
/// [`Semaphore::return_all`]. Every returned lease is reported as
/// [`RecipeEvent::Released`] (Curator plan: after the delete's reply;
/// Pipelined plan: at once, the delete staying guaranteed).
///
/// While an acquire waits, [`RecipeEvent::Queued`] tells where it stands:
/// queued on the internal lock, `position` is one more than that lock's
/// (its holder is next in line for a lease); holding it and waiting for a
/// lease to come back, `position` is 1 and `total` the lease count, ours
/// included.
///
/// Each held lease node is watched: a lease whose node is deleted (by
/// anyone else) or found missing after a reconnect is reported alone, as
/// [`RecipeEvent::LeaseLost`], and the others keep their status; `Lost`
/// follows once no lease is left. Connection events are reported once for
/// the handle: `Suspended` when the connection drops, then, after a
/// reconnect of the same session has verified every held lease,
/// `Reconnected` for the survivors ([`Semaphore::leases`] lists them).
/// Session expiry (or close) reports `LeaseLost` for every held lease, then
/// `Lost`, and `Failed` for an acquire under way.
///
/// Drain order after any input or command: [`Recipe::poll_op`] (ops leave in
/// Curator's order: after a lease is held, checkWatches on `leases` before the
/// mutex node's delete), then [`Recipe::poll_event`], then
/// [`Recipe::poll_timeout`].
///
/// [`RecipeEvent::Released`]: crate::recipe::RecipeEvent::Released
/// [`RecipeEvent::Queued`]: crate::recipe::RecipeEvent::Queued
/// [`RecipeEvent::LeaseLost`]: crate::recipe::RecipeEvent::LeaseLost
#[derive(Debug)]
pub struct Semaphore {
    base: ZkPath,
    leases_path: ZkPath,
    max_leases: usize,
    /// The shared count that sizes the semaphore, if any.
    count: Option<SharedCount>,
    /// Lease nodes are watched for revocation.
    revocable: bool,
    /// How many lease nodes the last listing held.
    listed: Option<usize>,
    /// Leases asked to be given back before their acquire completed.
    revoke_pending: BTreeSet<u64>,
    config: SharedLockConfig,
    rng: Rng,
    mutex: LockCore,
    cores: BTreeMap<u64, LockCore>,
    next_slot: u64,
    /// Reported leases, in the order obtained.
    held: Vec<u64>,
    /// Returned leases whose `Released` has not been reported yet.
    returning: BTreeSet<u64>,
    acquiring: Option<Acquiring>,
    /// Held leases still being checked after a reconnect.
    verifying: BTreeSet<u64>,
    /// `Suspended` was reported and not yet answered.
    suspended: bool,
    router: OpRouter<Member>,
    out: Outbox<SemaphoreEvent>,
}

impl Semaphore {
    /// A semaphore on `base` allowing `max_leases` concurrent leases (a
    /// convention every participant must share, as in Curator).
    pub fn new(base: ZkPath, max_leases: usize, config: impl Into<SharedLockConfig>) -> Semaphore {
        let config = config.into();
        let locks = child(&base, SEMAPHORE_LOCKS);
        let leases_path = child(&base, SEMAPHORE_LEASES);
        let rng = Rng::with_seed(config.seed());
        let mutex_config = config.with_seed(Rng::fork(config.seed(), MUTEX_SLOT)).modified(|c| {
            // The internal mutex is held only for a moment, and nobody acts
            // on it: its node needs no watch.
            c.watch_held = false;
            // Nor a time limit: it is the semaphore's, not the caller's, hold.
            c.max_hold = None;
        });
        let mutex = LockCore::new(
            mutex_config,
            locks,
            Some(&MUTEX_NAME),
            SortKey::curator(LOCK_NAME),
            Rule::Standard { max_leases: 1 },
        );
        Semaphore {
            base,
            leases_path,
            max_leases,
            count: None,
            revocable: false,
            listed: None,
            revoke_pending: BTreeSet::new(),
            config,
            rng,
            mutex,
            cores: BTreeMap::new(),
            next_slot: MUTEX_SLOT + 1,
            held: Vec::new(),
            returning: BTreeSet::new(),
            acquiring: None,
            verifying: BTreeSet::new(),
            suspended: false,
            router: OpRouter::default(),
            out: Outbox::default(),
        }
    }

    /// A semaphore on `base` sized by `count` (Curator's
    /// `InterProcessSemaphoreV2(client, path, SharedCountReader)`); a count
    /// below zero allows no lease.
    pub fn with_count(base: ZkPath, count: SharedCount, config: impl Into<SharedLockConfig>) -> Semaphore {
        let mut sem = Semaphore::new(base, 0, config);
        sem.count = Some(count);
        sem.take_count_ops();
        sem
    }

    /// Makes every lease from now on revocable (see the module docs).
    pub fn make_revocable(&mut self) {
        self.revocable = true;
    }

    /// Changes the limit: a waiter lists again and decides by it; held
    /// leases are kept whatever it becomes.
    pub fn set_max_leases(&mut self, now: Instant, max_leases: usize) {
        self.max_leases = max_leases;
        if let Some(Phase::Lease { slot }) = self.phase() {
            self.on_core(slot, |c| c.set_max_leases(max_leases));
        }
        self.pump(now);
    }

    /// The size's shared count, if the semaphore has one.
    pub fn count(&self) -> Option<&SharedCount> {
        self.count.as_ref()
    }

    /// Leases left free by the last listing of `leases` this handle made
    /// (the limit in force minus the nodes listed); `None` before any.
    pub fn available(&self) -> Option<usize> {
        self.listed.map(|n| self.max_leases.saturating_sub(n))
    }

    /// The semaphore path.
    pub fn base(&self) -> &ZkPath {
        &self.base
    }

    /// The lease limit.
    pub fn max_leases(&self) -> usize {
        self.max_leases
    }

    // ---- commands ------------------------------------------------------------------

    /// Acquires `qty` leases, waiting until `deadline` (`None`: forever). The
    /// deadline covers the whole call, the internal mutex included; as in
    /// Curator, a free mutex and a free lease are taken even when it has
    /// already passed. Reported as `qty` × `Acquired`, or `TimedOut` /
    /// `Failed` with every lease of this call returned.
    pub fn acquire(&mut self, now: Instant, qty: usize, deadline: Option<Instant>) -> Result<(), ApiMisuse> {
        if qty == 0 {
            return Err(ApiMisuse::ZeroQuantity);
        }
        if self.acquiring.is_some() {
            return Err(ApiMisuse::AcquireInProgress);
        }
        self.acquiring = Some(Acquiring { qty, deadline, got: Vec::new(), phase: Phase::Mutex, retries: 0 });
        self.start_lease(now);
        self.pump(now);
        Ok(())
    }

    /// Returns one held lease: its node is deleted (guaranteed; NoNode is
    /// fine) and `Released` reported.
    pub fn return_lease(&mut self, now: Instant, lease: &str) -> Result<(), ApiMisuse> {
        let slot = self
            .held
            .iter()
            .copied()
            .find(|s| self.cores.get(s).and_then(|c| c.held()).is_some_and(|n| n.path.as_str() == lease))
            .ok_or(ApiMisuse::NotHeld)?;
        self.return_slot(slot);
        self.pump(now);
        Ok(())
    }

    /// Returns every held lease, in the order they were obtained.
    pub fn return_all(&mut self, now: Instant) {
        for slot in self.held.clone() {
            self.return_slot(slot);
        }
        self.pump(now);
    }

    /// Abandons an acquire in progress. Nothing is left behind: the mutex
    /// node, the pending lease node (also one whose create reply was lost)
    /// and the leases this call already obtained are all deleted. Nothing is
    /// reported.
    pub fn cancel(&mut self, now: Instant) {
        self.abort(now, None);
        self.pump(now);
    }

    /// Ends the acquire under way, deleting every node it made or obtained,
    /// and reports `event`.
    fn abort(&mut self, now: Instant, event: Option<SemaphoreEvent>) {
        let Some(acq) = self.acquiring.take() else { return };
        match acq.phase {
            Phase::Mutex | Phase::MutexBusy => {
                if self.mutex.is_acquiring() {
                    self.mutex.cancel(now);
                    self.drain(MUTEX_SLOT);
                }
            }
            Phase::Lease { slot } | Phase::Unlocking { slot } => {
                self.on_core(slot, |c| c.cancel(now));
                self.release_mutex();
            }
            Phase::Pause { .. } => {}
        }
        self.drop_leases(now, &acq.got);
        if let Some(event) = event {
            self.out.emit(event);
        }
    }

    /// The held lease paths, in the order obtained.
    pub fn leases(&self) -> Vec<&str> {
        self.held.iter().filter_map(|s| self.cores.get(s)?.held()).map(|n| n.path.as_str()).collect()
    }

    /// A held lease's fencing token (its node's czxid).
    pub fn lease_token(&self, lease: &str) -> Option<FencingToken> {
        self.held.iter().filter_map(|s| self.cores.get(s)?.held()).find(|n| n.path.as_str() == lease).map(|n| n.token)
    }

    /// The limit in force when a held lease was granted (its listing held
    /// at most that many lease nodes).
    pub fn lease_limit(&self, lease: &str) -> Option<usize> {
        let slot = self
            .held
            .iter()
            .find(|s| self.cores.get(s).and_then(|c| c.held()).is_some_and(|n| n.path.as_str() == lease))?;
        self.cores.get(slot)?.granted_under()
    }

    /// True while an acquire is under way.
    pub fn is_acquiring(&self) -> bool {
        self.acquiring.is_some()
    }

    /// True when nothing is in progress, nothing is held and nothing is owed
    /// to the server.
    pub fn is_quiescent(&self) -> bool {
        self.acquiring.is_none()
            && self.held.is_empty()
            && self.returning.is_empty()
            && self.mutex.is_idle()
            && !self.mutex.has_cleanup()
            && self.cores.values().all(|c| c.is_idle() && !c.has_cleanup())
    }

    // ---- mechanism -----------------------------------------------------------------

    /// Starts (or restarts) the current lease with the internal mutex.
    fn start_lease(&mut self, now: Instant) {
        let can_start = self.can_start();
        let Some(acq) = self.acquiring.as_mut() else { return };
        if !can_start {
            // The previous release is still in flight (Curator plan), or
            // the size is not known yet.
            acq.phase = Phase::MutexBusy;
            return;
        }
        acq.phase = Phase::Mutex;
        let deadline = acq.deadline;
        let started = self.mutex.acquire(now, deadline, Shape::Sequential);
        self.drain(MUTEX_SLOT);
        if let Err(refused) = started {
            // Unreachable while idle; fail rather than hang.
            self.fail_acquire(now, SemaphoreEvent::Refused(refused));
        }
    }

    /// The mutex is ours: create the lease.
    fn start_lease_node(&mut self, now: Instant) {
        let Some(acq) = self.acquiring.as_mut() else { return };
        let slot = self.next_slot;
        self.next_slot += 1;
        let config = self.config.with_seed(Rng::fork(self.config.seed(), slot));
        let mut core = LockCore::new(
            config,
            self.leases_path.clone(),
            Some(&LEASE_NODE_NAME),
            SortKey::curator(LEASE_NAME),
            Rule::Count { max_leases: self.max_leases },
        )
        .deferring_missing()
        .with_revocable(self.revocable);
        if slot > MUTEX_SLOT + 1 {
            // The handle's first lease sent the one `createContainer(leases)`.
            core.assume_base();
        }
        acq.phase = Phase::Lease { slot };
        let deadline = acq.deadline;
        let started = core.acquire(now, deadline, Shape::Sequential);
        self.cores.insert(slot, core);
        self.drain(slot);
        if let Err(refused) = started {
            self.release_mutex();
            self.fail_acquire(now, SemaphoreEvent::Refused(refused));
        }
    }

    /// Deletes the internal mutex node if it is held (Curator's `finally`).
    /// True if a release was started.
    fn release_mutex(&mut self) -> bool {
        let released = self.mutex.held().is_some() && self.mutex.release().is_ok();
        self.drain(MUTEX_SLOT);
        released
    }

    /// Curator's `removeWatchers()` on the lease path after a listing.
    fn check_lease_watch(&mut self) {
        let op = Op::check_watches(&self.leases_path, WatcherType::ANY);
        self.send_own(op);
    }

    fn send_own(&mut self, op: Op) {
        self.out.send(op);
    }

    fn return_slot(&mut self, slot: u64) {
        self.held.retain(|s| *s != slot);
        if self.verifying.remove(&slot) {
            self.finish_verify();
        }
        if self.on_core(slot, |c| c.release().is_ok()) == Some(true) {
            self.returning.insert(slot);
        }
    }

    /// Deletes leases that will not be kept, without any event.
    fn drop_leases(&mut self, now: Instant, slots: &[u64]) {
        for slot in slots {
            self.on_core(*slot, |c| c.cancel(now));
        }
    }

    /// Ends the acquire: return what it obtained and report `event`.
    fn fail_acquire(&mut self, now: Instant, event: SemaphoreEvent) {
        if let Some(acq) = self.acquiring.take() {
            self.drop_leases(now, &acq.got);
        }
        self.out.emit(event);
    }

    /// Lease `slot` is ours and the mutex is free again.
    fn commit(&mut self, now: Instant, slot: u64) {
        let Some(acq) = self.acquiring.as_mut() else { return };
        acq.got.push(slot);
        if acq.got.len() < acq.qty {
            acq.retries = 0;
            self.start_lease(now);
            return;
        }
        if !acq.got.iter().all(|s| self.cores.get(s).is_some_and(|c| c.held().is_some())) {
            // A lease vanished (found missing on a reconnect) before the
            // call completed: return the others rather than report less.
            return self.fail_acquire(now, SemaphoreEvent::Failed(RequestError::NodeVanished));
        }
        let got = core::mem::take(&mut acq.got);
        self.acquiring = None;
        for slot in got {
            if let Some(node) = self.cores.get(&slot).and_then(|c| c.held()) {
                self.out.emit(SemaphoreEvent::Acquired { node: node.shared_path(), token: node.token });
                self.held.push(slot);
            }
        }
        for slot in core::mem::take(&mut self.revoke_pending) {
            self.report_revocation(slot);
        }
    }

    /// `LeaseRevocationRequested` for held lease `slot`.
    fn report_revocation(&mut self, slot: u64) {
        if let Some(node) = self.held.contains(&slot).then(|| self.cores.get(&slot)).flatten().and_then(|c| c.held()) {
            self.out.emit(SemaphoreEvent::LeaseRevocationRequested { node: node.shared_path() });
        }
    }

    /// The mutex is free and the size known: a lease may start.
    fn can_start(&self) -> bool {
        self.mutex.is_idle() && self.count.as_ref().is_none_or(|c| c.value().is_some())
    }

    /// Moves the count's ops out.
    fn take_count_ops(&mut self) {
        while let Some(op) = self.count.as_mut().and_then(|c| c.poll_op()) {
            self.router.forward(&mut self.out, Member::Count, op);
        }
    }

    /// Applies the count's events: a new value is the new limit; the
    /// events go on to the user.
    fn take_count_events(&mut self, now: Instant) {
        while let Some(event) = self.count.as_mut().and_then(|c| c.poll_event()) {
            if let CountEvent::Value { value, .. } = event {
                self.set_max_leases(now, usize::try_from(value).unwrap_or(0));
            }
            self.out.emit(SemaphoreEvent::Count(event));
        }
    }

    /// Our lease vanished (or its create found no parent): Curator's
    /// MISSING_NODE path. The mutex is already being released.
    fn retry_lease(&mut self, now: Instant) {
        let policy = self.config.config().retry;
        let Some(acq) = self.acquiring.as_mut() else { return };
        if acq.retries >= policy.max_retries {
            let error = RequestError::RetriesExhausted(policy.max_retries);
            return self.fail_acquire(now, SemaphoreEvent::Failed(error));
        }
        let pause = policy.pause(acq.retries, &mut self.rng);
        acq.retries += 1;
        acq.phase = Phase::Pause { until: now.saturating_add(pause) };
    }

    /// `Suspended`, once per connection drop.
    fn report_suspended(&mut self) {
        if !self.suspended {
            self.suspended = true;
            self.out.emit(SemaphoreEvent::Suspended);
        }
    }

    /// Every held lease was checked after a reconnect: the survivors are
    /// `Reconnected` (those found missing were reported one by one).
    fn finish_verify(&mut self) {
        if !self.verifying.is_empty() || !self.suspended {
            return;
        }
        self.suspended = false;
        self.out.emit(SemaphoreEvent::Reconnected);
    }

    /// Held lease `slot` is gone (its node was deleted, or found missing on
    /// a reconnect): `LeaseLost` for it alone, and `Lost` once no lease is
    /// left (which also answers a `Suspended`).
    fn lease_lost(&mut self, slot: u64) {
        self.held.retain(|s| *s != slot);
        self.verifying.remove(&slot);
        if let Some(node) = self.cores.get_mut(&slot).and_then(|c| c.take_lost()) {
            self.out.emit(SemaphoreEvent::LeaseLost { node: node.as_str().into() });
        }
        if self.held.is_empty() {
            self.verifying.clear();
            self.suspended = false;
            self.out.emit(SemaphoreEvent::Lost);
        } else {
            self.finish_verify();
        }
    }

    fn slots(&self) -> Vec<u64> {
        self.cores.keys().copied().collect()
    }

    fn phase(&self) -> Option<Phase> {
        self.acquiring.as_ref().map(|a| a.phase)
    }

    fn in_got(&self, slot: u64) -> bool {
        self.acquiring.as_ref().is_some_and(|a| a.got.contains(&slot))
    }
}

/// `base/name`; both parts are valid, so this cannot fail in practice.
fn child(base: &ZkPath, name: &str) -> ZkPath {
    base.join(name).unwrap_or_else(|_| base.clone())
}
