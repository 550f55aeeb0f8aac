//! [`MultiLock`]: Curator's `InterProcessMultiLock`. All of several locks
//! (any [`LockRecipe`]), or none.

use alloc::boxed::Box;
use alloc::collections::BTreeSet;
use alloc::vec::Vec;

use zoolock_wire::Response;

use alloc::string::String;

use super::capability::{BoxedLock, LockRecipe, OnePartLock, Part};
use super::config::SharedLockConfig;
use super::kit::{OpRouter, Outbox};
use super::lock_event::{LockEvent, PartEvent};
use super::mutex::Mutex;
use super::rwlock::member_seed;
use crate::error::{ApiMisuse, RequestError};
use crate::path::ZkPath;
use crate::recipe::{FencingToken, OpId, Recipe, RecipeOp};
use crate::session::{ConnectionState, WatchEvent};
use crate::time::Instant;

#[derive(Debug)]
enum State {
    Idle,
    /// Member `next` is acquiring; every member before it is held.
    Acquiring {
        next: usize,
    },
    Held,
    /// Releasing members one at a time: `current` is in flight, `remaining`
    /// follow in order. `outcome` is reported at the end (`None`: a release
    /// or a cancellation, which report `Released` / nothing).
    Releasing {
        current: Option<usize>,
        remaining: Vec<usize>,
        outcome: Option<LockEvent>,
        release: bool,
        /// Then acquire again from the first member (a held member was lost
        /// during the acquire).
        restart: bool,
    },
}

/// How many times one acquire starts over because a member it already held
/// lost its node; then it fails, as a lock whose path keeps vanishing does.
const MAX_RESTARTS: u32 = 3;

/// All-or-nothing over several locks, like Curator's `InterProcessMultiLock`:
/// each member is any [`LockRecipe`] part (a mutex, one half of a read-write
/// lock, a semaphore mutex, another multi-lock). A member owns its recipe, so
/// a read-write lock member is a separate participant from any other handle.
///
/// - [`MultiLock::acquire`] takes the members one at a time in list order
///   (use one global order everywhere to avoid deadlocks; nothing is sorted).
///   Every member waits until the *same* deadline. Curator gives each member
///   the full timeout afresh (worst case n × timeout); the shared deadline is
///   stricter and bounds the whole acquire.
/// - The first member that times out or fails stops the acquire (Curator goes
///   on after an exception and only then rolls back). The members already held
///   are released in reverse order, one at a time, and then `TimedOut` or
///   `Failed(that error)` is reported. Errors of the rollback come as
///   `Member { index, Failed(..) }` before it.
/// - Once every member is held: `Acquired` with the **first** member's node
///   and fencing token. A multi-lock holder always holds the first member, so
///   that token increases from one holder to the next. Every member's node
///   and token is available from [`MultiLock::holders`].
/// - [`MultiLock::release`] releases every member in reverse list order, one at
///   a time, reports each member's error as `Member { index, Failed(..) }`, and
///   ends with `Released`.
/// - Acquiring again while held only counts up (reentrant per handle).
/// - While held, connection events are merged: `Suspended` once when the
///   first member reports it, `Reconnected` once all suspended members have
///   verified their nodes, `Lost` once when any member loses its node (then
///   release to drop the rest). Other member events, and every member event
///   outside the held state, come as `Member { index, event }`.
///
/// The members' ops leave through the recipe kit's op router. After every input the
/// members' ops and events are collected in index order.
pub struct MultiLock {
    members: Vec<Member>,
    state: State,
    holds: u32,
    deadline: Option<Instant>,
    suspended: BTreeSet<usize>,
    lost: bool,
    /// The session is ending: a member's `Lost` is the session's, and the
    /// member under way fails with the session's error on its own.
    session_ending: bool,
    /// Restarts of the acquire under way (see [`MAX_RESTARTS`]).
    restarts: u32,
    out: Outbox<PartEvent>,
    router: OpRouter<usize>,
}

/// One member: a lock recipe and which of its parts this multi-lock takes.
struct Member {
    lock: BoxedLock,
    part: Part,
}

impl Member {
    fn acquire(&mut self, now: Instant, deadline: Option<Instant>) -> Result<(), ApiMisuse> {
        self.lock.acquire_part(now, self.part, deadline)
    }

    fn release(&mut self, now: Instant) -> Result<(), ApiMisuse> {
        self.lock.release_part(now, self.part)
    }

    fn cancel(&mut self, now: Instant) {
        self.lock.cancel_part(now, self.part);
    }

    fn holder(&self) -> Option<(&str, FencingToken)> {
        self.lock.hold(self.part)
    }

    /// The member's next event for its part, with the members it came
    /// through if the member is a multi-lock passing on its own member's
    /// (events of other parts of its recipe are dropped: nobody else uses
    /// them).
    fn poll_event(&mut self) -> Option<(Vec<usize>, LockEvent)> {
        let one_part = self.lock.parts().len() <= 1;
        while let Some(PartEvent { part, member, event }) = self.lock.poll_event() {
            if one_part || part.index() == self.part.index() {
                return Some((member, event));
            }
        }
        None
    }
}

impl core::fmt::Debug for MultiLock {
    fn fmt(&self, f: &mut core::fmt::Formatter<'_>) -> core::fmt::Result {
        f.debug_struct("MultiLock").field("members", &self.members.len()).field("state", &self.state).finish()
    }
}

impl MultiLock {
    /// One [`Mutex`] per path, in this (acquisition) order. Each member gets a
    /// distinct seed derived from the config's. At least one path is needed.
    pub fn new(paths: Vec<ZkPath>, config: impl Into<SharedLockConfig>) -> Result<MultiLock, ApiMisuse> {
        let config = config.into();
        let members = paths
            .into_iter()
            .enumerate()
            .map(|(i, path)| {
                let member_config = config.with_seed(member_seed(config.seed(), i));
                (Box::new(Mutex::new(path, member_config)) as BoxedLock, Part::Whole)
            })
            .collect();
        MultiLock::of(members)
    }

    /// Any locks, each with the part to take ([`Part::Whole`] for single
    /// locks, [`Part::Read`] / [`Part::Write`] for a read-write lock; see
    /// [`LockRecipe::part`]), in acquisition order. Members must be idle and have distinct
    /// seeds (protection UUIDs). At least one member is needed.
    pub fn of(members: Vec<(BoxedLock, Part)>) -> Result<MultiLock, ApiMisuse> {
        if members.is_empty() {
            return Err(ApiMisuse::EmptyMultiLock);
        }
        let members = members
            .into_iter()
            .map(|(lock, asked)| {
                let part = lock.part(asked);
                Member { lock, part }
            })
            .collect();
        Ok(MultiLock {
            members,
            state: State::Idle,
            holds: 0,
            deadline: None,
            suspended: BTreeSet::new(),
            lost: false,
            session_ending: false,
            restarts: 0,
            out: Outbox::default(),
            router: OpRouter::default(),
        })
    }

    /// The number of members.
    pub fn len(&self) -> usize {
        self.members.len()
    }

    /// Never true: a multi-lock has at least one member.
    pub fn is_empty(&self) -> bool {
        self.members.is_empty()
    }

    /// Member `index`'s lock, for inspection.
    pub fn member(&self, index: usize) -> Option<&dyn LockRecipe> {
        self.members.get(index).map(|m| &*m.lock)
    }

    /// Every member's node while held (nested multi-locks' included), in
    /// acquisition order; empty otherwise.
    pub fn hold_nodes(&self) -> Vec<alloc::string::String> {
        if self.holder().is_none() {
            return Vec::new();
        }
        self.members.iter().flat_map(|m| m.lock.hold_nodes(m.part)).collect()
    }

    /// The first member's node and fencing token while every member is held
    /// (the multi-lock's own hold).
    pub fn holder(&self) -> Option<(&str, FencingToken)> {
        match self.state {
            State::Held if !self.lost => self.members.first()?.holder(),
            _ => None,
        }
    }

    /// Every member's node and fencing token, `None` for members not held.
    pub fn holders(&self) -> Vec<Option<(&str, FencingToken)>> {
        self.members.iter().map(|m| m.holder()).collect()
    }

    /// Outstanding holds (0 when not held).
    pub fn hold_count(&self) -> u32 {
        self.holds
    }

    /// True when neither held nor acquiring nor releasing.
    pub fn is_idle(&self) -> bool {
        matches!(self.state, State::Idle)
    }

    /// True when nothing is in progress and no member owes the server work.
    pub fn is_quiescent(&self) -> bool {
        matches!(self.state, State::Idle) && self.out.no_ops() && self.members.iter().all(|m| m.lock.is_quiescent())
    }

    /// Acquires every member, waiting until `deadline` (`None`: forever).
    /// Reported as `Acquired`, `TimedOut` or `Failed`.
    pub fn acquire(&mut self, now: Instant, deadline: Option<Instant>) -> Result<(), ApiMisuse> {
        match self.state {
            State::Held if self.lost => {
                return Err(ApiMisuse::MemberLost);
            }
            State::Held => {
                self.holds += 1;
                if let Some(event) = self.acquired_event() {
                    self.out.emit(PartEvent::whole(event));
                }
                return Ok(());
            }
            State::Idle => {}
            _ => return Err(ApiMisuse::AcquireInProgress),
        }
        let first = self.members.first_mut().ok_or(ApiMisuse::EmptyMultiLock)?;
        first.acquire(now, deadline)?;
        self.deadline = deadline;
        self.restarts = 0;
        self.lost = false;
        self.suspended.clear();
        self.state = State::Acquiring { next: 0 };
        self.collect(now);
        Ok(())
    }

    /// Releases one hold; the last one releases every member, last first.
    pub fn release(&mut self, now: Instant) -> Result<(), ApiMisuse> {
        if !matches!(self.state, State::Held) || self.holds == 0 {
            return Err(ApiMisuse::NotHeld);
        }
        self.holds -= 1;
        if self.holds > 0 {
            return Ok(());
        }
        let remaining = (0..self.members.len()).collect();
        self.state = State::Releasing { current: None, remaining, outcome: None, release: true, restart: false };
        self.advance_release(now);
        self.collect(now);
        Ok(())
    }

    /// Abandons an acquire in progress: the acquiring member is cancelled and
    /// the members already held are released, last first. Nothing is reported.
    pub fn cancel(&mut self, now: Instant) {
        if let State::Acquiring { next } = self.state {
            if let Some(m) = self.members.get_mut(next) {
                m.cancel(now);
            }
            // Its cleanup goes out first, then the releases.
            self.collect(now);
            self.roll_back(now, next, None);
            self.collect(now);
        }
    }

    fn acquired_event(&self) -> Option<LockEvent> {
        let (node, token) = self.members.first()?.holder()?;
        Some(LockEvent::Acquired { node: node.into(), token })
    }

    /// Releases members `0..upto` in reverse, then reports `outcome`.
    fn roll_back(&mut self, now: Instant, upto: usize, outcome: Option<LockEvent>) {
        let remaining = (0..upto).collect();
        self.state = State::Releasing { current: None, remaining, outcome, release: false, restart: false };
        self.advance_release(now);
    }

    /// Acquires again from the first member (after a restart's releases).
    fn restart(&mut self, now: Instant) {
        self.state = State::Acquiring { next: 0 };
        let deadline = self.deadline;
        let started = self.members.first_mut().map(|m| m.acquire(now, deadline));
        if let Some(Err(e)) = started {
            self.roll_back(now, 0, Some(LockEvent::Refused(e)));
        }
    }

    /// Starts the next member release, or finishes.
    fn advance_release(&mut self, now: Instant) {
        let State::Releasing { current, remaining, outcome, release, restart } = &mut self.state else { return };
        while let Some(idx) = remaining.pop() {
            let Some(m) = self.members.get_mut(idx) else { continue };
            // Members hold once each (reentrancy is counted here, not in
            // them); a member whose hold was lost has nothing to release.
            if m.holder().is_some() && m.release(now).is_ok() {
                *current = Some(idx);
                return;
            }
        }
        let outcome = outcome.take();
        let release = *release;
        if *restart {
            return self.restart(now);
        }
        self.state = State::Idle;
        self.holds = 0;
        if release {
            self.out.emit(PartEvent::whole(LockEvent::Released));
        } else if let Some(event) = outcome {
            self.out.emit(PartEvent::whole(event));
        }
    }

    /// Moves members' ops and events out, driving the sequence, until nothing
    /// more happens.
    fn collect(&mut self, now: Instant) {
        loop {
            let mut progressed = false;
            for idx in 0..self.members.len() {
                let Some(m) = self.members.get_mut(idx) else { continue };
                while let Some(op) = m.lock.poll_op() {
                    self.router.forward(&mut self.out, idx, op);
                }
                if let Some((member, event)) = self.members.get_mut(idx).and_then(|m| m.poll_event()) {
                    progressed = true;
                    if member.is_empty() {
                        self.on_member_event(now, idx, event);
                    } else {
                        // A member multi-lock's member's own event: passed on.
                        self.out.emit(PartEvent { part: Part::Whole, member: through(idx, member), event });
                    }
                }
            }
            if !progressed {
                return;
            }
        }
    }

    fn on_member_event(&mut self, now: Instant, idx: usize, event: LockEvent) {
        match (&mut self.state, event) {
            // Where the member being acquired stands is where the whole
            // acquire stands.
            (State::Acquiring { next }, event @ LockEvent::Queued { .. }) if *next == idx => {
                self.out.emit(PartEvent::whole(event));
            }
            (State::Acquiring { next }, LockEvent::Acquired { .. }) if *next == idx => {
                let following = idx + 1;
                if following == self.members.len() {
                    self.state = State::Held;
                    self.holds = 1;
                    if let Some(event) = self.acquired_event() {
                        self.out.emit(PartEvent::whole(event));
                    }
                    return;
                }
                *next = following;
                let deadline = self.deadline;
                let started = self.members.get_mut(following).map(|m| m.acquire(now, deadline));
                if let Some(Err(e)) = started {
                    // A member that refuses (it was handed over busy) ends
                    // the acquire; the refusal is ours, not the server's.
                    self.roll_back(now, following, Some(LockEvent::Refused(e)));
                }
            }
            (State::Acquiring { next }, LockEvent::TimedOut) if *next == idx => {
                self.roll_back(now, idx, Some(LockEvent::TimedOut));
            }
            (State::Acquiring { next }, LockEvent::Failed(e)) if *next == idx => {
                self.roll_back(now, idx, Some(LockEvent::Failed(e)));
            }
            // A member already held lost its node (someone deleted it) while
            // a later one is being acquired: all or nothing, so the members
            // are let go and the acquire starts over, as a lock whose node
            // vanished does, a few times at most. (At a session's end the
            // member under way fails with the session's error by itself.)
            (State::Acquiring { next }, LockEvent::Lost) if idx < *next && !self.session_ending => {
                let next = *next;
                if let Some(m) = self.members.get_mut(next) {
                    m.cancel(now);
                }
                if self.restarts >= MAX_RESTARTS {
                    let error = RequestError::RetriesExhausted(MAX_RESTARTS);
                    return self.roll_back(now, next, Some(LockEvent::Failed(error)));
                }
                self.restarts += 1;
                let remaining = (0..next).collect();
                self.state =
                    State::Releasing { current: None, remaining, outcome: None, release: false, restart: true };
                self.advance_release(now);
            }
            (State::Releasing { current, .. }, event @ (LockEvent::Released | LockEvent::Failed(_)))
                if *current == Some(idx) =>
            {
                *current = None;
                self.suspended.remove(&idx);
                if let LockEvent::Failed(e) = event {
                    self.out.emit(member(idx, LockEvent::Failed(e)));
                }
                self.advance_release(now);
            }
            (State::Held, LockEvent::Suspended) => {
                if self.suspended.is_empty() && !self.lost {
                    self.out.emit(PartEvent::whole(LockEvent::Suspended));
                }
                self.suspended.insert(idx);
            }
            (State::Held, LockEvent::Reconnected) => {
                if self.suspended.remove(&idx) && self.suspended.is_empty() && !self.lost {
                    self.out.emit(PartEvent::whole(LockEvent::Reconnected));
                }
            }
            (State::Held, LockEvent::Lost) => {
                self.suspended.remove(&idx);
                if !self.lost {
                    self.lost = true;
                    self.out.emit(PartEvent::whole(LockEvent::Lost));
                }
            }
            (_, event) => {
                match event {
                    LockEvent::Suspended => {
                        self.suspended.insert(idx);
                    }
                    LockEvent::Reconnected | LockEvent::Lost => {
                        self.suspended.remove(&idx);
                    }
                    _ => {}
                }
                self.out.emit(member(idx, event));
            }
        }
    }
}

/// Member `index`'s own event.
fn member(index: usize, event: LockEvent) -> PartEvent {
    PartEvent { part: Part::Whole, member: alloc::vec![index], event }
}

/// The member path of an event member `index` passed on from `member`.
fn through(index: usize, mut member: Vec<usize>) -> Vec<usize> {
    member.insert(0, index);
    member
}

impl Recipe for MultiLock {
    type Event = PartEvent;

    fn handle_reply(&mut self, now: Instant, op: OpId, result: Result<Response, RequestError>) {
        if let Some((idx, inner)) = self.router.take(op) {
            if let Some(m) = self.members.get_mut(idx) {
                m.lock.handle_reply(now, inner, result);
            }
        }
        self.collect(now);
    }

    fn handle_watch(&mut self, now: Instant, event: &WatchEvent) {
        // Members ignore paths that are not theirs.
        for m in &mut self.members {
            m.lock.handle_watch(now, event);
        }
        self.collect(now);
    }

    fn handle_session(&mut self, now: Instant, state: ConnectionState) {
        self.session_ending = state.end_error().is_some();
        for m in &mut self.members {
            m.lock.handle_session(now, state);
        }
        self.collect(now);
        self.session_ending = false;
    }

    fn handle_timeout(&mut self, now: Instant) {
        for m in &mut self.members {
            if m.lock.poll_timeout().is_some_and(|t| t <= now) {
                m.lock.handle_timeout(now);
            }
        }
        self.collect(now);
    }

    fn poll_op(&mut self) -> Option<RecipeOp> {
        self.out.poll_op()
    }

    fn poll_event(&mut self) -> Option<PartEvent> {
        self.out.poll_event()
    }

    fn poll_timeout(&self) -> Option<Instant> {
        self.members.iter().filter_map(|m| m.lock.poll_timeout()).min()
    }

    fn is_quiescent(&self) -> bool {
        MultiLock::is_quiescent(self)
    }

    fn holds(&self) -> bool {
        self.members.iter().any(|m| m.lock.holds())
    }
}

/// Reentrant; its hold is proven by every member's node.
impl OnePartLock for MultiLock {
    fn acquire(&mut self, now: Instant, deadline: Option<Instant>) -> Result<(), ApiMisuse> {
        MultiLock::acquire(self, now, deadline)
    }

    fn release(&mut self, now: Instant) -> Result<(), ApiMisuse> {
        MultiLock::release(self, now)
    }

    fn cancel(&mut self, now: Instant) {
        MultiLock::cancel(self, now);
    }

    fn holder(&self) -> Option<(&str, FencingToken)> {
        MultiLock::holder(self)
    }

    fn is_idle(&self) -> bool {
        MultiLock::is_idle(self)
    }

    fn reentrant(&self) -> bool {
        true
    }

    fn hold_count(&self) -> u32 {
        MultiLock::hold_count(self)
    }

    fn hold_nodes(&self) -> Vec<String> {
        MultiLock::hold_nodes(self)
    }

    fn member_holds(&self) -> Vec<Option<(&str, FencingToken)>> {
        self.holders()
    }
}
