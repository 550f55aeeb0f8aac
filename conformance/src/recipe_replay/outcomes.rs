//! The application side of a recipe replay: the summary's calls run on the
//! recipes, and the outcomes Curator recorded are checked against the events
//! zoolock reported.

use std::collections::VecDeque;

use serde_json::Value;
use zoolock_core::{
    ApiMisuse, Client, ConnectionState, CoreMachine, Handle, Instant, Machine, RecipeEvent, RecipeId, Rng, ZkPath,
    recipes::{
        LockConfig, LockKind, LockRecipe, MultiLock, Mutex, Part, Participants, ReadWriteLock, Revoker, Semaphore,
        SemaphoreMutex,
    },
};

use super::scenario::{Action, Step, parse_action, parse_state};
use super::{ClientRun, START};
use crate::replay::{Location, MismatchKind, ReplayError};

#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub(super) enum Role {
    Lock,
    Participants,
    Revoker,
}

/// The typed handles of the recipes a replay made (the event log knows
/// their ids).
#[derive(Debug, Default)]
pub(super) struct Handles {
    lock: Option<LockHandle>,
    participants: Option<Handle<Participants>>,
    revoker: Option<Handle<Revoker>>,
}

/// The scenario's lock recipe, by kind.
#[derive(Debug, Clone, Copy)]
enum LockHandle {
    Mutex(Handle<Mutex>),
    ReadWrite(Handle<ReadWriteLock>),
    SemaphoreMutex(Handle<SemaphoreMutex>),
    Semaphore(Handle<Semaphore>),
    Multi(Handle<MultiLock>),
}

impl LockHandle {
    fn id(self) -> RecipeId {
        match self {
            LockHandle::Mutex(h) => h.id(),
            LockHandle::ReadWrite(h) => h.id(),
            LockHandle::SemaphoreMutex(h) => h.id(),
            LockHandle::Semaphore(h) => h.id(),
            LockHandle::Multi(h) => h.id(),
        }
    }
}

/// A lock kind whose own commands a scenario runs (beyond the lock
/// capability): its handle, if the scenario's lock is one.
trait LockOfKind: Machine<CoreMachine> {
    const NAME: &'static str;
    fn handle(lock: LockHandle) -> Option<Handle<Self>>;
}

impl LockOfKind for Mutex {
    const NAME: &'static str = "mutex";
    fn handle(lock: LockHandle) -> Option<Handle<Mutex>> {
        match lock {
            LockHandle::Mutex(h) => Some(h),
            _ => None,
        }
    }
}

impl LockOfKind for Semaphore {
    const NAME: &'static str = "semaphore";
    fn handle(lock: LockHandle) -> Option<Handle<Semaphore>> {
        match lock {
            LockHandle::Semaphore(h) => Some(h),
            _ => None,
        }
    }
}

#[derive(Debug, Clone, PartialEq, Eq)]
pub(super) enum Want {
    Acquired { lease: Option<String> },
    TimedOut,
    Released,
    Participants(Vec<String>),
    RevokeSent,
    RevocationRequested,
}

#[derive(Debug, Clone)]
pub(super) enum Expect {
    Recipe { role: Role, half: Option<usize>, want: Want },
    State(ConnectionState),
}

#[derive(Debug, Clone)]
pub(super) struct Expectation {
    pub(super) at: Location,
    /// Absolute microseconds by which it must have been reported.
    pub(super) due_us: u64,
    pub(super) not_before: Instant,
    pub(super) what: Expect,
}

#[derive(Debug)]
pub(super) struct Logged {
    pub(super) at: Instant,
    pub(super) recipe: RecipeId,
    pub(super) event: RecipeEvent,
    pub(super) consumed: bool,
}

/// `Member { members, event }` unwrapped: the outermost index and the
/// member's event.
pub(super) fn unwrap_member(event: &RecipeEvent) -> (Option<usize>, RecipeEvent) {
    match event {
        RecipeEvent::Member { members, event } => (members.first().copied(), RecipeEvent::from(event.clone())),
        e => (None, e.clone()),
    }
}

/// A recipe's own view of the connection, which mirrors the states checked.
pub(super) fn mirrors_connection(event: &RecipeEvent) -> bool {
    matches!(unwrap_member(event).1, RecipeEvent::Suspended | RecipeEvent::Reconnected | RecipeEvent::Lost)
}

impl ClientRun<'_> {
    // ---- steps ---------------------------------------------------------------------

    pub(super) fn step(&mut self, step: &Step, t: Instant) -> Result<(), ReplayError> {
        self.advance_to(t)?;
        match step.kind.as_str() {
            "call" => {
                self.check_due(step.at_us)?;
                let action = parse_action(&step.action)
                    .ok_or_else(|| self.unsupported(format!("unknown action {:?}", step.action)))?;
                self.call(step, &action)?;
                self.settle()
            }
            "event" => self.expect_event(step),
            "observed" | "control" => Ok(()),
            other => Err(self.unsupported(format!("unknown step kind {other:?}"))),
        }
    }

    fn expect_event(&mut self, step: &Step) -> Result<(), ReplayError> {
        let what = if let Some(name) = step.action.strip_prefix("connection state ") {
            let mut state =
                parse_state(name).ok_or_else(|| self.unsupported(format!("unknown connection state {name:?}")))?;
            if state == ConnectionState::Reconnected && self.after_lost {
                // Curator reports its new session as RECONNECTED.
                state = ConnectionState::Connected;
            }
            self.after_lost = state == ConnectionState::Lost;
            Expect::State(state)
        } else if step.action == "RevocationListener.revocationRequested" {
            Expect::Recipe { role: Role::Lock, half: None, want: Want::RevocationRequested }
        } else {
            return Err(self.unsupported(format!("unknown event {:?}", step.action)));
        };
        self.expectations.push_back(Expectation {
            at: self.wire.at.clone(),
            due_us: step.at_us,
            not_before: START,
            what,
        });
        Ok(())
    }

    fn expect(&mut self, step: &Step, role: Role, half: Option<usize>, want: Want) {
        self.expectations.push_back(Expectation {
            at: self.wire.at.clone(),
            due_us: step.return_us.unwrap_or(step.at_us),
            not_before: self.now(),
            what: Expect::Recipe { role, half, want },
        });
    }

    fn call(&mut self, step: &Step, action: &Action) -> Result<(), ReplayError> {
        let now = self.now();
        match action {
            Action::Start => {
                if self.wire.machine().is_none() {
                    self.wire.set_machine(Client::new(self.session_config.clone(), now));
                }
                Ok(())
            }
            Action::Close => {
                if let Some(client) = self.wire.machine_mut() {
                    client.close(now);
                }
                Ok(())
            }
            Action::ReleaseLost => Ok(()),
            Action::Acquire { timeout, revocable, half } => {
                let deadline = timeout.map(|d| now + d);
                let (revocable, half) = (*revocable, *half);
                if revocable && self.lock.kind == LockKind::Mutex {
                    self.on_lock_recipe::<Mutex>(|m, _| m.make_revocable())?;
                }
                match (self.lock.kind, half) {
                    (LockKind::Semaphore, _) => self.on_lock_recipe::<Semaphore>(|s, now| s.acquire(now, 1, deadline)),
                    (LockKind::ReadWriteLock, None) => {
                        Err(self.unsupported(String::from("a read-write lock acquire names a half")))
                    }
                    // Every lock kind through the lock capability; an acquire
                    // of a held part is Curator's reentrant acquire.
                    (_, half) => self.on_lock(|l, now| {
                        let part = half.unwrap_or(Part::Whole);
                        match l.hold(part) {
                            Some(_) => l.reenter_part(now, part),
                            None => l.acquire_part(now, part, deadline),
                        }
                    }),
                }?;
                let want = match &step.result {
                    Value::Bool(true) => Want::Acquired { lease: None },
                    Value::Bool(false) => Want::TimedOut,
                    Value::String(lease) => Want::Acquired { lease: Some(lease.clone()) },
                    other => return Err(self.unsupported(format!("acquire result {other}"))),
                };
                self.expect(step, Role::Lock, half.map(Part::index), want);
                Ok(())
            }
            Action::Release { half, reports } => {
                let half = *half;
                match (self.lock.kind, half) {
                    (LockKind::Semaphore, _) => {
                        Err(self.unsupported(String::from("a semaphore returns leases (returnLease)")))
                    }
                    (LockKind::ReadWriteLock, None) => {
                        Err(self.unsupported(String::from("a read-write lock release names a half")))
                    }
                    (_, half) => self.on_lock(|l, now| l.release_part(now, half.unwrap_or(Part::Whole))),
                }?;
                if *reports {
                    self.expect(step, Role::Lock, half.map(Part::index), Want::Released);
                }
                Ok(())
            }
            Action::ReturnLease => {
                self.on_lock_recipe::<Semaphore>(|s, now| {
                    let lease = s.leases().first().map(|l| String::from(*l));
                    match lease {
                        Some(lease) => s.return_lease(now, &lease),
                        None => Err(ApiMisuse::NotHeld),
                    }
                })?;
                self.expect(step, Role::Lock, None, Want::Released);
                Ok(())
            }
            Action::Participants => {
                let want: Vec<String> = match &step.result {
                    Value::Array(paths) => paths.iter().filter_map(Value::as_str).map(str::to_owned).collect(),
                    other => return Err(self.unsupported(format!("getParticipantNodes result {other}"))),
                };
                match self.handles.participants {
                    Some(h) => self.command(h, |p, now| p.refresh(now))?,
                    None => {
                        let base = self.base_path()?;
                        // A multi-lock's base lists as a mutex's.
                        let kind = match self.lock.kind {
                            LockKind::MultiLock => LockKind::Mutex,
                            kind => kind,
                        };
                        let recipe = Participants::of(kind, base).map_err(|e| self.submit_error(e))?;
                        let handle = self.add(recipe.without_data());
                        self.handles.participants = Some(handle);
                        self.log.participants = Some(handle.id());
                    }
                }
                self.expect(step, Role::Participants, None, Want::Participants(want));
                Ok(())
            }
            Action::Revoke => {
                let Some(node) = step.result.as_str() else {
                    return Err(self.unsupported(String::from("attemptRevoke without the node path as its result")));
                };
                let node = self.uuids.zoolock_path(node);
                let node = ZkPath::new(&node).map_err(|e| self.submit_error(e.into()))?;
                match self.handles.revoker {
                    Some(h) => self.command(h, |r, now| r.revoke(now))?,
                    None => {
                        let handle = self.add(Revoker::new(node));
                        self.handles.revoker = Some(handle);
                        self.log.revoker = Some(handle.id());
                    }
                }
                self.expect(step, Role::Revoker, None, Want::RevokeSent);
                Ok(())
            }
        }
    }

    fn base_path(&self) -> Result<ZkPath, ReplayError> {
        ZkPath::new(&self.summary.base_path).map_err(|e| self.submit_error(e.into()))
    }

    fn lock_config(&self) -> LockConfig {
        LockConfig::new(Rng::fork(self.seed, 0))
            .with_plan(self.summary.plan)
            .with_data(self.data.clone())
            // Curator does not watch a held node; the traces are its sequences.
            .with_watch_held(false)
    }

    fn add<R: Machine<CoreMachine>>(&mut self, recipe: R) -> Handle<R> {
        let now = self.now();
        if self.wire.machine().is_none() {
            self.wire.set_machine(Client::new(self.session_config.clone(), now));
        }
        match self.wire.machine_mut() {
            Some(client) => client.add(now, recipe),
            None => unreachable!("the client was just put in place"),
        }
    }

    /// Runs `f` on the lock through the lock capability, creating it first.
    fn on_lock(
        &mut self,
        f: impl FnOnce(&mut dyn LockRecipe, Instant) -> Result<(), ApiMisuse>,
    ) -> Result<(), ReplayError> {
        match self.lock_handle()? {
            LockHandle::Mutex(h) => self.command(h, |l, now| f(l, now)),
            LockHandle::ReadWrite(h) => self.command(h, |l, now| f(l, now)),
            LockHandle::SemaphoreMutex(h) => self.command(h, |l, now| f(l, now)),
            LockHandle::Multi(h) => self.command(h, |l, now| f(l, now)),
            LockHandle::Semaphore(_) => Err(self.unsupported(String::from("a semaphore is not driven as a lock"))),
        }
    }

    /// Runs `f` on the lock recipe as an `R` (its own commands: a mutex's
    /// `make_revocable`, the semaphore's), creating it first.
    fn on_lock_recipe<R: LockOfKind>(
        &mut self,
        f: impl FnOnce(&mut R, Instant) -> Result<(), ApiMisuse>,
    ) -> Result<(), ReplayError> {
        let lock = self.lock_handle()?;
        match R::handle(lock) {
            Some(h) => self.command(h, f),
            None => Err(self.unsupported(format!("a {} command on the scenario's {lock:?}", R::NAME))),
        }
    }

    /// The lock recipe, created on first use.
    fn lock_handle(&mut self) -> Result<LockHandle, ReplayError> {
        if let Some(lock) = self.handles.lock {
            return Ok(lock);
        }
        let base = self.base_path()?;
        let config = self.lock_config();
        let lock = match self.lock.kind {
            LockKind::Mutex => LockHandle::Mutex(self.add(Mutex::new(base, config))),
            LockKind::ReadWriteLock => LockHandle::ReadWrite(self.add(ReadWriteLock::new(base, config))),
            LockKind::SemaphoreMutex => LockHandle::SemaphoreMutex(self.add(SemaphoreMutex::new(base, config))),
            LockKind::Semaphore => {
                let semaphore = Semaphore::new(base, self.lock.max_leases, config);
                LockHandle::Semaphore(self.add(semaphore))
            }
            LockKind::MultiLock => {
                let paths = self
                    .lock
                    .paths
                    .iter()
                    .map(|p| ZkPath::new(p))
                    .collect::<Result<Vec<_>, _>>()
                    .map_err(|e| self.submit_error(e.into()))?;
                let multi = MultiLock::new(paths, config).map_err(|e| self.submit_error(e))?;
                LockHandle::Multi(self.add(multi))
            }
            kind => return Err(self.unsupported(format!("a {} lock", kind.label()))),
        };
        self.handles.lock = Some(lock);
        self.log.lock_recipe = Some(lock.id());
        Ok(lock)
    }

    fn command<R: Machine<CoreMachine>>(
        &mut self,
        handle: Handle<R>,
        f: impl FnOnce(&mut R, Instant) -> Result<(), ApiMisuse>,
    ) -> Result<(), ReplayError> {
        let now = self.now();
        let result = match self.wire.machine_mut() {
            Some(client) => client.with(now, handle, f).and_then(|r| r),
            None => Err(ApiMisuse::UnknownRecipe(handle.id().get())),
        };
        result.map_err(|e| self.submit_error(e))
    }

    fn submit_error(&self, source: ApiMisuse) -> ReplayError {
        ReplayError::Submit { at: self.wire.at.clone(), source }
    }

    // ---- outcomes ------------------------------------------------------------------

    /// Checks every expectation due by `by_us`.
    fn check_due(&mut self, by_us: u64) -> Result<(), ReplayError> {
        let mut later = VecDeque::new();
        while let Some(exp) = self.expectations.pop_front() {
            if exp.due_us > by_us {
                later.push_back(exp);
                continue;
            }
            let saved = std::mem::replace(&mut self.wire.at, exp.at.clone());
            let result = self.verify(&exp);
            self.wire.at = saved;
            result?;
        }
        self.expectations = later;
        Ok(())
    }

    fn verify(&mut self, exp: &Expectation) -> Result<(), ReplayError> {
        match &exp.what {
            Expect::State(want) => match self.log.states.pop_front() {
                Some(got) if got == *want => Ok(()),
                Some(got) => Err(self.mismatch(MismatchKind::Outcome, format!("state {want:?}"), format!("{got:?}"))),
                None => Err(self.mismatch(MismatchKind::Outcome, format!("state {want:?}"), "no state reported")),
            },
            Expect::Recipe { role, half, want } => {
                let recipe = match role {
                    Role::Lock => self.log.lock_recipe,
                    Role::Participants => self.log.participants,
                    Role::Revoker => self.log.revoker,
                };
                let Some(recipe) = recipe else {
                    return Err(self.mismatch(MismatchKind::Outcome, format!("{want:?}"), "no such recipe"));
                };
                let found = self.log.events.iter().position(|l| {
                    let (index, event) = unwrap_member(&l.event);
                    !l.consumed
                        && l.recipe == recipe
                        && l.at >= exp.not_before
                        && (half.is_none() || index == *half)
                        && same_kind(want, &event)
                });
                let Some(pos) = found else {
                    let pending: Vec<String> = self
                        .log
                        .events
                        .iter()
                        .filter(|l| !l.consumed && l.recipe == recipe)
                        .map(|l| format!("{:?} at {}", l.event, l.at))
                        .collect();
                    let expected = match half {
                        Some(h) => format!("{want:?} from half {h}"),
                        None => format!("{want:?}"),
                    };
                    return Err(self.mismatch(
                        MismatchKind::Outcome,
                        format!("{expected} reported by the call's return"),
                        format!("unmatched events {pending:?}"),
                    ));
                };
                let event = self.log.events.get(pos).map(|l| unwrap_member(&l.event).1);
                if let Some(l) = self.log.events.get_mut(pos) {
                    l.consumed = true;
                }
                match (want, event) {
                    (Want::Acquired { lease }, Some(RecipeEvent::Acquired { node, token })) => {
                        let recorded = self.uuids.recorded_path(&node);
                        match self.created.get(&recorded) {
                            Some(czxid) if *czxid == token.0 => {}
                            Some(czxid) => {
                                return Err(self.mismatch(
                                    MismatchKind::Outcome,
                                    format!("fencing token {czxid} (czxid of {recorded})"),
                                    format!("{}", token.0),
                                ));
                            }
                            None => {
                                return Err(self.mismatch(
                                    MismatchKind::Outcome,
                                    "Acquired for a node this client created in the trace",
                                    format!("Acquired {node} (recorded {recorded})"),
                                ));
                            }
                        }
                        if let Some(lease) = lease {
                            if recorded.rsplit('/').next() != Some(lease.as_str()) {
                                return Err(self.mismatch(
                                    MismatchKind::Outcome,
                                    format!("lease {lease}"),
                                    format!("Acquired {recorded}"),
                                ));
                            }
                        }
                        Ok(())
                    }
                    (Want::Participants(paths), Some(RecipeEvent::Participants(list))) => {
                        let got: Vec<String> = list.iter().map(|p| self.uuids.recorded_path(&p.path)).collect();
                        if got != *paths {
                            return Err(self.mismatch(
                                MismatchKind::Outcome,
                                format!("participants {paths:?}"),
                                format!("{got:?}"),
                            ));
                        }
                        Ok(())
                    }
                    _ => Ok(()),
                }
            }
        }
    }

    pub(super) fn finish(&mut self) -> Result<(), ReplayError> {
        self.end_connection()?;
        self.settle()?;
        self.wire.at = Location { file: self.summary.path.clone(), line: 0 };
        self.check_due(u64::MAX)?;
        if let Some(state) = self.log.states.front() {
            let got = format!("{state:?} (and {} more)", self.log.states.len() - 1);
            return Err(self.mismatch(MismatchKind::Outcome, "no connection state Curator did not report", got));
        }
        let unmatched: Vec<String> = self
            .log
            .events
            .iter()
            // Queue positions are zoolock's own progress report; Curator
            // records none.
            .filter(|l| !l.consumed && !mirrors_connection(&l.event))
            .filter(|l| !matches!(unwrap_member(&l.event).1, RecipeEvent::Queued { .. }))
            .map(|l| format!("{:?} from {} at {}", l.event, self.log.role_name(l.recipe), l.at))
            .collect();
        if !unmatched.is_empty() {
            return Err(self.mismatch(
                MismatchKind::Outcome,
                format!("no events beyond the recorded outcomes of client {}", self.name),
                format!("{unmatched:?}"),
            ));
        }
        Ok(())
    }
}

/// True when `event` is the kind of outcome `want` names.
fn same_kind(want: &Want, event: &RecipeEvent) -> bool {
    matches!(
        (want, event),
        (Want::Acquired { .. }, RecipeEvent::Acquired { .. })
            | (Want::TimedOut, RecipeEvent::TimedOut)
            | (Want::Released, RecipeEvent::Released)
            | (Want::Participants(_), RecipeEvent::Participants(_))
            | (Want::RevokeSent, RecipeEvent::RevokeSent)
            | (Want::RevocationRequested, RecipeEvent::RevocationRequested)
    )
}
