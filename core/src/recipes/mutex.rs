//! [`Mutex`]: Curator's `InterProcessMutex`. Fair, reentrant per handle,
//! optionally revocable.

use super::config::SharedLockConfig;
use super::lock_core::{LockCore, Rule, Shape};
use crate::error::ApiMisuse;
use crate::path::ZkPath;
use zoolock_wire::Response;

use super::capability::OnePartLock;
use super::lock_event::{LockEvent, PartEvent};
use crate::error::RequestError;
use crate::recipe::{FencingToken, OpId, Recipe, RecipeOp};
use crate::session::{ConnectionState, WatchEvent};
use crate::time::Instant;

/// A fair, reentrant lock on `base`, wire-compatible with Curator's
/// `InterProcessMutex`: nodes `_c_<uuid>-lock-<seq>`, first in sequence holds.
/// Another name ([`LockConfig::name`](super::LockConfig::name)) gives other layouts on the same
/// queue: `latch-` is Curator's `LeaderLatch`.
///
/// Reentrancy belongs to this handle: acquiring again while held only counts
/// up (no traffic, and `Acquired` is reported again at once), and the node is
/// deleted when the count returns to zero.
#[derive(Debug)]
pub struct Mutex {
    core: LockCore,
    /// Holds of the node whose token is `counted` (a czxid names one node);
    /// any other node the core holds counts once. Derived from the core's
    /// state, never from when events are polled.
    holds: u32,
    counted: Option<FencingToken>,
}

impl Mutex {
    /// A mutex on `base` (the lock path; nodes go underneath), built from a
    /// [`LockConfig`](super::LockConfig) or a [`SharedLockConfig`].
    pub fn new(base: ZkPath, config: impl Into<SharedLockConfig>) -> Mutex {
        Mutex::with_leases(base, config, 1)
    }

    /// The same nodes with the first `max_leases` of them holding: Curator's
    /// deprecated V1 `InterProcessSemaphore` rule. Not mutual exclusion for
    /// `max_leases > 1`; the simulator uses it as a deliberately broken mutex
    /// to show that its exclusion oracle notices.
    pub fn with_leases(base: ZkPath, config: impl Into<SharedLockConfig>, max_leases: usize) -> Mutex {
        let rule = Rule::Standard { max_leases: max_leases.max(1) };
        let config = config.into();
        let key = config.config().name.sort_key();
        let core = LockCore::new(config, base, None, key, rule);
        Mutex { core, holds: 0, counted: None }
    }

    /// The lock path.
    pub fn base(&self) -> &ZkPath {
        self.core.base()
    }

    /// Makes later acquires revocable: the node is created with empty data and
    /// its own data watched; a `__REVOKE__` write yields
    /// [`LockEvent::RevocationRequested`].
    pub fn make_revocable(&mut self) -> Result<(), ApiMisuse> {
        self.core.make_revocable()
    }

    /// Acquires, waiting until `deadline` (`None`: forever). Reported as
    /// `Acquired`, `TimedOut` or `Failed`.
    pub fn acquire(&mut self, now: Instant, deadline: Option<Instant>) -> Result<(), ApiMisuse> {
        if let Some(node) = self.core.held() {
            let event = LockEvent::Acquired { node: node.shared_path(), token: node.token };
            self.holds = self.hold_count() + 1;
            self.counted = Some(node.token);
            self.core.emit(event);
            return Ok(());
        }
        self.core.acquire(now, deadline, Shape::Sequential)
    }

    /// Releases one hold; the last one deletes the node.
    ///
    /// `now` is taken as every command takes it; a release needs no clock.
    pub fn release(&mut self, _now: Instant) -> Result<(), ApiMisuse> {
        let holds = self.hold_count();
        if holds == 0 {
            return Err(ApiMisuse::NotHeld);
        }
        self.holds = holds - 1;
        self.counted = self.core.held().map(|n| n.token);
        if self.holds > 0 {
            return Ok(());
        }
        self.counted = None;
        self.core.release()
    }

    /// Abandons an acquire in progress; no node is left behind.
    pub fn cancel(&mut self, now: Instant) {
        if self.core.is_acquiring() {
            self.core.cancel(now);
        }
    }

    /// How many holds are outstanding (0 when not held).
    pub fn hold_count(&self) -> u32 {
        match self.core.held() {
            Some(node) if self.counted == Some(node.token) => self.holds,
            Some(_) => 1,
            None => 0,
        }
    }

    /// Our node and fencing token while held.
    pub fn holder(&self) -> Option<(&str, FencingToken)> {
        self.core.held().map(|n| (n.path.as_str(), n.token))
    }

    /// True when neither held nor acquiring nor releasing.
    pub fn is_idle(&self) -> bool {
        self.core.is_idle()
    }

    /// True when nothing is in progress and nothing is owed to the server.
    pub fn is_quiescent(&self) -> bool {
        self.core.is_idle() && !self.core.has_cleanup()
    }
}

/// Every input and output goes to the lock core unchanged.
impl Recipe for Mutex {
    type Event = PartEvent;

    fn handle_reply(&mut self, now: Instant, op: OpId, result: Result<Response, RequestError>) {
        self.core.handle_reply(now, op, result);
    }

    fn handle_watch(&mut self, now: Instant, event: &WatchEvent) {
        self.core.handle_watch(now, event);
    }

    fn handle_session(&mut self, now: Instant, state: ConnectionState) {
        self.core.handle_session(now, state);
    }

    fn handle_timeout(&mut self, now: Instant) {
        self.core.handle_timeout(now);
    }

    fn poll_op(&mut self) -> Option<RecipeOp> {
        self.core.poll_op()
    }

    fn poll_event(&mut self) -> Option<PartEvent> {
        self.core.poll_event().map(PartEvent::whole)
    }

    fn poll_timeout(&self) -> Option<Instant> {
        self.core.poll_timeout()
    }

    fn is_quiescent(&self) -> bool {
        Mutex::is_quiescent(self)
    }

    fn holds(&self) -> bool {
        self.holder().is_some()
    }
}

/// Reentrant: a holder may take it again (counted).
impl OnePartLock for Mutex {
    fn acquire(&mut self, now: Instant, deadline: Option<Instant>) -> Result<(), ApiMisuse> {
        Mutex::acquire(self, now, deadline)
    }

    fn release(&mut self, now: Instant) -> Result<(), ApiMisuse> {
        Mutex::release(self, now)
    }

    fn cancel(&mut self, now: Instant) {
        Mutex::cancel(self, now);
    }

    fn holder(&self) -> Option<(&str, FencingToken)> {
        Mutex::holder(self)
    }

    fn is_idle(&self) -> bool {
        Mutex::is_idle(self)
    }

    fn reentrant(&self) -> bool {
        true
    }

    fn hold_count(&self) -> u32 {
        Mutex::hold_count(self)
    }

    fn path(&self) -> Option<&ZkPath> {
        Some(self.base())
    }
}
