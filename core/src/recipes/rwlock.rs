//! [`ReadWriteLock`]: Curator's `InterProcessReadWriteLock`. Two lock loops
//! on one base path: readers share, writers exclude everyone, and the queue is
//! one FIFO by sequence number, so neither side starves.

use alloc::string::String;

use zoolock_wire::Response;

use super::capability::{LockRecipe, Part};
use super::config::{OpPlan, SharedLockConfig};
use super::kit::{OpRouter, Outbox};
use super::lock_core::{LockCore, Rule, Shape};
use super::lock_event::{LockEvent, PartEvent};
use super::naming::LockName;
use super::policy::{READ_NAME, SortKey, WRITE_NAME};
use crate::error::{ApiMisuse, RequestError};
use crate::path::ZkPath;
use crate::recipe::{FencingToken, OpId, Recipe, RecipeOp};
use crate::rng::Rng;
use crate::session::{ConnectionState, WatchEvent};
use crate::time::Instant;

/// The halves' node names.
static READ_LOCK: LockName = LockName::known(READ_NAME);
static WRITE_LOCK: LockName = LockName::known(WRITE_NAME);

/// The place of each half in `ReadWriteLock::halves`.
const READ: usize = 0;
const WRITE: usize = 1;

/// The seed of member `index` of a composite recipe.
pub(crate) fn member_seed(seed: u64, index: usize) -> u64 {
    Rng::fork(seed, u64::try_from(index).unwrap_or(u64::MAX))
}

/// A read-write lock on `base`, wire-compatible with Curator's
/// `InterProcessReadWriteLock`: nodes `_c_<uuid>-__READ__<seq>` and
/// `_c_<uuid>-__WRIT__<seq>` share one sequence. A writer holds once its node
/// is first among all children; a reader holds once no `__WRIT__` node is ahead
/// of its own (it watches the *first* writer, as Curator does).
///
/// Events are [`PartEvent`]s naming the half ([`Part::Read`] or
/// [`Part::Write`]); a client reports them as
/// [`RecipeEvent::Member`](crate::RecipeEvent::Member) under the half's
/// [`Part::index`].
///
/// Each half is reentrant per handle, like [`Mutex`](super::Mutex): acquiring
/// a held half again only counts up and reports `Acquired` at once.
///
/// - **Downgrade** (hold write, then acquire read) always succeeds at once:
///   the read rule short-circuits while this handle holds the write half.
///   With [`OpPlan::Curator`] the read node is an ordinary sequential node,
///   exactly as Curator 5.4.0 creates it (so a writer that queued meanwhile
///   overtakes the reader once the write half is released, CURATOR-621). With
///   [`OpPlan::Pipelined`] and [`OpPlan::Curator57`] it is an EPHEMERAL node named with the write node's
///   sequence suffix (Curator 5.5+'s fix), so it stays ahead of every queued
///   writer after the write half is released. Either way the read node is
///   created after those writers' nodes, so its fencing token (czxid) is
///   higher than theirs although it is granted first: see [`FencingToken`] for
///   what a resource should compare.
/// - **Upgrade** (hold or be acquiring read, then acquire write) would wait
///   on our own read node forever; [`ReadWriteLock::acquire_write`] refuses it
///   with [`ApiMisuse::UpgradeRefused`] instead of queueing.
///
/// The Pipelined plan's fast handoff (skip the re-list when a watched
/// predecessor goes) is used by the read half only: a downgrading holder can
/// put a read node ahead of a queued writer after that writer listed.
///
/// The halves' ops leave through the recipe kit's op router. After every input the
/// halves' ops and events are collected, read half first.
#[derive(Debug)]
pub struct ReadWriteLock {
    /// The read half, then the write half (their [`Part::index`]).
    halves: [Half; 2],
    plan: OpPlan,
    out: Outbox<PartEvent>,
    router: OpRouter<usize>,
}

impl ReadWriteLock {
    /// A read-write lock on `base` (the lock path; nodes go underneath). The
    /// two halves draw their UUIDs from distinct seeds derived from
    /// the config's seed.
    pub fn new(base: ZkPath, config: impl Into<SharedLockConfig>) -> ReadWriteLock {
        let config = config.into();
        let plan = config.config().plan;
        let read_config = config.with_seed(member_seed(config.seed(), READ));
        let write_config = config.with_seed(member_seed(config.seed(), WRITE));
        // A downgrade (ours in the Pipelined plan, or Curator 5.5+'s) creates
        // a read node with the held write node's sequence, i.e. *ahead* of
        // every queued writer, after those writers listed. The fast handoff's
        // premise ("nodes ahead can only disappear") fails for writers, so the
        // write half always lists again. (Readers keep it: the only nodes
        // that can appear ahead of them are readers, which they share with.)
        let read = LockCore::new(read_config, base.clone(), Some(&READ_LOCK), SortKey::ReadWrite, Rule::Read);
        let write =
            LockCore::new(write_config, base, Some(&WRITE_LOCK), SortKey::ReadWrite, Rule::Standard { max_leases: 1 })
                .without_fast_handoff();
        ReadWriteLock {
            halves: [Half { core: read, holds: 0 }, Half { core: write, holds: 0 }],
            plan,
            out: Outbox::default(),
            router: OpRouter::default(),
        }
    }

    /// The lock path.
    pub fn base(&self) -> &ZkPath {
        self.halves[WRITE].core.base()
    }

    /// Makes later read acquires revocable (empty node data, a watch on the
    /// node, [`LockEvent::RevocationRequested`] on `__REVOKE__`).
    pub fn make_revocable_read(&mut self) -> Result<(), ApiMisuse> {
        self.halves[READ].core.make_revocable()
    }

    /// Makes later write acquires revocable.
    pub fn make_revocable_write(&mut self) -> Result<(), ApiMisuse> {
        self.halves[WRITE].core.make_revocable()
    }

    /// Acquires the read half, waiting until `deadline` (`None`: forever).
    /// Reported as a [`Part::Read`] `Member` with `Acquired`, `TimedOut` or
    /// `Failed`. While this handle holds the write half it is a downgrade and
    /// succeeds without waiting.
    pub fn acquire_read(&mut self, now: Instant, deadline: Option<Instant>) -> Result<(), ApiMisuse> {
        if self.reenter(READ) {
            return Ok(());
        }
        let shape = match (self.halves[WRITE].core.held(), self.plan) {
            // Curator 5.5+ (CURATOR-621): reuse the write node's sequence.
            (Some(write), plan) if plan.downgrade_keeps_sequence() => {
                Shape::Fixed(String::from(SortKey::ReadWrite.key(write.name())))
            }
            // Curator 5.4.0 creates an ordinary sequential node.
            _ => Shape::Sequential,
        };
        self.halves[READ].core.set_holds_write(self.halves[WRITE].core.held().is_some());
        let result = self.halves[READ].core.acquire(now, deadline, shape);
        // One `createContainer(base)` per handle: the halves share the base.
        self.halves[WRITE].core.assume_base();
        self.collect();
        result
    }

    /// Acquires the write half, waiting until `deadline` (`None`: forever).
    /// Reported as a [`Part::Write`] `Member`. Refused while this handle
    /// holds the read half (or is acquiring it) without the write half: that
    /// upgrade would wait on its own read node forever.
    pub fn acquire_write(&mut self, now: Instant, deadline: Option<Instant>) -> Result<(), ApiMisuse> {
        if self.reenter(WRITE) {
            return Ok(());
        }
        if self.halves[READ].core.held().is_some() || self.halves[READ].core.is_acquiring() {
            return Err(ApiMisuse::UpgradeRefused);
        }
        let result = self.halves[WRITE].core.acquire(now, deadline, Shape::Sequential);
        self.halves[READ].core.assume_base();
        self.collect();
        result
    }

    /// Releases one hold of the read half; the last one deletes its node.
    ///
    /// `now` is taken as every command takes it; a release needs no clock.
    pub fn release_read(&mut self, _now: Instant) -> Result<(), ApiMisuse> {
        self.release_half(READ)
    }

    /// Releases one hold of the write half; the last one deletes its node. A
    /// read hold taken meanwhile (downgrade) continues.
    ///
    /// `now` is taken as every command takes it; a release needs no clock.
    pub fn release_write(&mut self, _now: Instant) -> Result<(), ApiMisuse> {
        self.release_half(WRITE)
    }

    /// A held half is acquired again: count it and report it at once.
    fn reenter(&mut self, part: usize) -> bool {
        let Some(half) = self.halves.get_mut(part) else { return false };
        let Some(node) = half.core.held() else { return false };
        let event = LockEvent::Acquired { node: node.shared_path(), token: node.token };
        half.holds += 1;
        self.out.emit(member(part, event));
        true
    }

    fn release_half(&mut self, part: usize) -> Result<(), ApiMisuse> {
        let Some(half) = self.halves.get_mut(part) else { return Err(ApiMisuse::NotHeld) };
        if half.core.held().is_none() || half.holds == 0 {
            return Err(ApiMisuse::NotHeld);
        }
        half.holds -= 1;
        if half.holds > 0 {
            return Ok(());
        }
        let result = half.core.release();
        self.collect();
        result
    }

    /// Abandons a read acquire in progress; no node is left behind.
    pub fn cancel_read(&mut self, now: Instant) {
        if self.halves[READ].core.is_acquiring() {
            self.halves[READ].core.cancel(now);
        }
        self.collect();
    }

    /// Abandons a write acquire in progress; no node is left behind.
    pub fn cancel_write(&mut self, now: Instant) {
        if self.halves[WRITE].core.is_acquiring() {
            self.halves[WRITE].core.cancel(now);
        }
        self.collect();
    }

    /// Outstanding holds of the read half.
    pub fn read_hold_count(&self) -> u32 {
        self.halves[READ].holds
    }

    /// Outstanding holds of the write half.
    pub fn write_hold_count(&self) -> u32 {
        self.halves[WRITE].holds
    }

    /// The read node and its fencing token while the read half is held.
    pub fn read_holder(&self) -> Option<(&str, FencingToken)> {
        self.halves[READ].core.held().map(|n| (n.path.as_str(), n.token))
    }

    /// The write node and its fencing token while the write half is held.
    pub fn write_holder(&self) -> Option<(&str, FencingToken)> {
        self.halves[WRITE].core.held().map(|n| (n.path.as_str(), n.token))
    }

    /// True when the half `part` names ([`LockRecipe::part`]) is neither
    /// held nor acquiring nor releasing.
    pub fn is_idle(&self, part: Part) -> bool {
        let half = match part {
            Part::Read => &self.halves[READ],
            Part::Whole | Part::Write => &self.halves[WRITE],
        };
        half.core.is_idle()
    }

    /// True when neither half has anything in progress or owed to the server.
    pub fn is_quiescent(&self) -> bool {
        self.out.no_ops()
            && self.halves[READ].core.is_idle()
            && self.halves[WRITE].core.is_idle()
            && !self.halves[READ].core.has_cleanup()
            && !self.halves[WRITE].core.has_cleanup()
    }

    /// Moves the halves' ops and events out (read half first), keeps the hold
    /// counts, and keeps the downgrade short-circuit equal to "this handle
    /// holds the write half".
    fn collect(&mut self) {
        for (part, half) in self.halves.iter_mut().enumerate() {
            while let Some(op) = half.core.poll_op() {
                self.router.forward(&mut self.out, part, op);
            }
            while let Some(event) = half.core.poll_event() {
                match &event {
                    LockEvent::Acquired { .. } => half.holds = 1,
                    LockEvent::Lost | LockEvent::Released => half.holds = 0,
                    _ => {}
                }
                self.out.emit(member(part, event));
            }
        }
        self.halves[READ].core.set_holds_write(self.halves[WRITE].core.held().is_some());
    }
}

/// One half: its lock loop and this handle's holds of it.
#[derive(Debug)]
struct Half {
    core: LockCore,
    holds: u32,
}

/// The event of the half at `index`.
fn member(index: usize, event: LockEvent) -> PartEvent {
    PartEvent::new(if index == READ { Part::Read } else { Part::Write }, event)
}

impl Recipe for ReadWriteLock {
    type Event = PartEvent;

    fn handle_reply(&mut self, now: Instant, op: OpId, result: Result<Response, RequestError>) {
        match self.router.take(op) {
            Some((READ, inner)) => self.halves[READ].core.handle_reply(now, inner, result),
            Some((_, inner)) => self.halves[WRITE].core.handle_reply(now, inner, result),
            None => {}
        }
        self.collect();
    }

    fn handle_watch(&mut self, now: Instant, event: &WatchEvent) {
        // Both halves may watch the same node; each ignores paths not its own.
        self.halves[READ].core.handle_watch(now, event);
        self.halves[WRITE].core.handle_watch(now, event);
        self.collect();
    }

    fn handle_session(&mut self, now: Instant, state: ConnectionState) {
        self.halves[READ].core.handle_session(now, state);
        self.halves[WRITE].core.handle_session(now, state);
        self.collect();
    }

    fn handle_timeout(&mut self, now: Instant) {
        if self.halves[READ].core.poll_timeout().is_some_and(|t| t <= now) {
            self.halves[READ].core.handle_timeout(now);
        }
        if self.halves[WRITE].core.poll_timeout().is_some_and(|t| t <= now) {
            self.halves[WRITE].core.handle_timeout(now);
        }
        self.collect();
    }

    fn poll_op(&mut self) -> Option<RecipeOp> {
        self.out.poll_op()
    }

    fn poll_event(&mut self) -> Option<PartEvent> {
        self.out.poll_event()
    }

    fn poll_timeout(&self) -> Option<Instant> {
        match (self.halves[READ].core.poll_timeout(), self.halves[WRITE].core.poll_timeout()) {
            (Some(a), Some(b)) => Some(a.min(b)),
            (a, b) => a.or(b),
        }
    }

    fn is_quiescent(&self) -> bool {
        ReadWriteLock::is_quiescent(self)
    }

    fn holds(&self) -> bool {
        self.read_holder().is_some() || self.write_holder().is_some()
    }
}

/// Two parts, [`Part::Read`] and [`Part::Write`]; the whole lock is the
/// write half.
impl LockRecipe for ReadWriteLock {
    fn parts(&self) -> &'static [Part] {
        &[Part::Read, Part::Write]
    }

    fn path(&self) -> Option<&ZkPath> {
        Some(self.base())
    }

    fn part(&self, asked: Part) -> Part {
        match asked {
            Part::Read => Part::Read,
            Part::Whole | Part::Write => Part::Write,
        }
    }

    fn acquire_part(&mut self, now: Instant, part: Part, deadline: Option<Instant>) -> Result<(), ApiMisuse> {
        if self.hold(part).is_some() {
            return Err(ApiMisuse::AlreadyHeld);
        }
        match self.part(part) {
            Part::Read => self.acquire_read(now, deadline),
            Part::Whole | Part::Write => self.acquire_write(now, deadline),
        }
    }

    fn release_part(&mut self, now: Instant, part: Part) -> Result<(), ApiMisuse> {
        match self.part(part) {
            Part::Read => self.release_read(now),
            Part::Whole | Part::Write => self.release_write(now),
        }
    }

    fn cancel_part(&mut self, now: Instant, part: Part) {
        match self.part(part) {
            Part::Read => self.cancel_read(now),
            Part::Whole | Part::Write => self.cancel_write(now),
        }
    }

    fn hold(&self, part: Part) -> Option<(&str, FencingToken)> {
        match self.part(part) {
            Part::Read => self.read_holder(),
            Part::Whole | Part::Write => self.write_holder(),
        }
    }

    fn ready(&self, part: Part) -> bool {
        self.is_idle(part)
    }

    fn hold_count(&self, part: Part) -> u32 {
        let half = match self.part(part) {
            Part::Read => READ,
            Part::Whole | Part::Write => WRITE,
        };
        self.halves.get(half).filter(|h| h.core.held().is_some()).map_or(0, |h| h.holds)
    }

    fn reenter_part(&mut self, now: Instant, part: Part) -> Result<(), ApiMisuse> {
        if self.hold(part).is_none() {
            return Err(ApiMisuse::NotHeld);
        }
        match self.part(part) {
            Part::Read => self.acquire_read(now, None),
            Part::Whole | Part::Write => self.acquire_write(now, None),
        }
    }
}
