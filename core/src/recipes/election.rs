//! [`Election`]: Curator's leader elections, which are its lock queue under
//! another name. A `LeaderSelector` participant is an `InterProcessMutex` on
//! the leader path (`lock-` nodes) whose node data is the participant id,
//! re-queued after each term when `autoRequeue` is set; a `LeaderLatch`
//! participant is the same protected ephemeral-sequential queue under the
//! name `latch-`, with the id as data, led by its lowest node until it
//! closes. Both sort by the sequence after the name, as Curator's
//! `LockInternals.getSortedChildren` does, so mixed fleets elect together.

use alloc::string::String;
use alloc::vec::Vec;

use bytes::Bytes;
use zoolock_wire::Response;

use super::config::SharedLockConfig;
use super::lock_event::LockEvent;
use super::mutex::Mutex;
use super::naming::LockName;
use super::participants::Participants;
use super::queue::{Packed, SessionGate};
use crate::error::{ApiMisuse, RequestError};
use crate::hold_status::{HoldChange, HoldStatus, LossReason};
use crate::path::ZkPath;
use crate::recipe::{FencingToken, OpId, Participant, Recipe, RecipeEvent, RecipeOp};
use crate::session::{ConnectionState, WatchEvent};
use crate::time::Instant;

/// Which of Curator's election recipes a participant speaks.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
#[non_exhaustive]
pub enum ElectionKind {
    /// `LeaderSelector`: `lock-` nodes (an `InterProcessMutex`), the id as
    /// data (Curator writes its default data, the local address, when the
    /// id is empty). A term ends when the leader resigns; it queues again
    /// only with [`Election::auto_requeue`].
    Selector,
    /// `LeaderLatch`: `latch-` nodes, the id as data (empty too). The lowest
    /// node leads until it closes; a participant whose node was lost queues
    /// again (Curator's `reset`).
    Latch,
}

impl ElectionKind {
    /// Its kind in the one list of kinds.
    pub fn lock_kind(self) -> super::LockKind {
        match self {
            ElectionKind::Selector => super::LockKind::LeaderSelector,
            ElectionKind::Latch => super::LockKind::LeaderLatch,
        }
    }

    /// The node name and sort rule of this layout.
    pub fn lock_name(self) -> LockName {
        match self {
            ElectionKind::Selector => LockName::lock(),
            ElectionKind::Latch => LockName::latch(),
        }
    }

    /// A one-shot listing of the participants on `base`, with each node's
    /// data (the id), in queue order; [`election_participants`] and
    /// [`election_leader`] read it as Curator's `getParticipants` and
    /// `getLeader` do.
    pub fn participants(self, base: ZkPath) -> Participants {
        Participants::new(base, self.lock_name().sort_key())
    }
}

/// When a term of leadership ends by itself: Curator's
/// `ConnectionStateErrorPolicy`, as a participant's setting.
///
/// Either way the term's hold reports the connection as it is (`Suspended`
/// when it drops, then `Reconnected` or `Lost`); the policy decides whether
/// a suspended term still *leads* ([`Election::leads`]), so whether a
/// runner of terms (the driver's `LeaderSelector::run`, a latch's
/// leadership reports) ends or keeps it.
///
/// The risk of [`LeadershipPolicy::Session`]: while the connection is down
/// the participant cannot know that its session lives. The server may
/// expire it (and grant the next term) before this participant hears
/// `Lost`, so for that window two participants lead. Only fencing closes
/// it: a resource that refuses a write carrying an older token than one it
/// has seen (the term's [`FencingToken`]) turns the old leader's late
/// writes away. Choose it when leadership churn costs more than that, and
/// the writes are fenced.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Default)]
#[non_exhaustive]
pub enum LeadershipPolicy {
    /// Curator's `StandardConnectionStateErrorPolicy`, its default: a
    /// dropped connection (`Suspended`) ends leadership, as the session's
    /// loss does.
    #[default]
    Standard,
    /// Curator's `SessionConnectionStateErrorPolicy`: only the session's
    /// loss (`Lost`: an expiry, the node deleted, the maximum hold) ends
    /// leadership; a suspended leader still leads until then.
    Session,
}

impl LeadershipPolicy {
    /// Both policies, for parsers and tests.
    pub const ALL: [LeadershipPolicy; 2] = [LeadershipPolicy::Standard, LeadershipPolicy::Session];

    /// Whether a term that has not ended still leads, `suspended` when its
    /// connection dropped and has not come back.
    pub fn leads(self, suspended: bool) -> bool {
        !suspended || self == LeadershipPolicy::Session
    }

    /// Whether a term whose hold reads `status` leads: a held one always,
    /// a suspended one as [`LeadershipPolicy::leads`] says, an ended one
    /// (or none) never. Handles judge their term's status by this.
    pub fn leads_with(self, status: HoldStatus) -> bool {
        match status {
            HoldStatus::Held => true,
            HoldStatus::Suspended => self.leads(true),
            HoldStatus::Lost | HoldStatus::NotHeld => false,
        }
    }

    /// Its name on command lines and in reports: `standard` or `session`.
    pub fn name(self) -> &'static str {
        match self {
            LeadershipPolicy::Standard => "standard",
            LeadershipPolicy::Session => "session",
        }
    }

    /// The policy named `name` ([`LeadershipPolicy::name`]), `None` for
    /// any other name.
    pub fn from_name(name: &str) -> Option<LeadershipPolicy> {
        LeadershipPolicy::ALL.into_iter().find(|p| p.name() == name)
    }
}

/// One participant of an election, as Curator's `Participant`.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct ElectionParticipant {
    /// Its node's full path.
    pub node: String,
    /// Its id: the node data as UTF-8 (invalid bytes replaced, as Java's
    /// `new String(bytes, "UTF-8")` does).
    pub id: String,
    /// Whether it leads: the first participant whose node still exists.
    pub is_leader: bool,
}

/// Curator's `getParticipants` over a listing from
/// [`ElectionKind::participants`]: nodes that vanished before their data
/// was read are left out, and the first remaining one leads.
pub fn election_participants(list: &[Participant]) -> Vec<ElectionParticipant> {
    let mut out: Vec<ElectionParticipant> = Vec::with_capacity(list.len());
    for p in list {
        let Some(data) = &p.data else { continue };
        let id = String::from_utf8_lossy(data).into_owned();
        out.push(ElectionParticipant { node: p.path.clone(), id, is_leader: out.is_empty() });
    }
    out
}

/// Curator's `getLeader` over a listing: the first participant whose node
/// still exists. `None` where Curator returns its dummy participant (id
/// `""`, not leader): nobody is queued.
pub fn election_leader(list: &[Participant]) -> Option<ElectionParticipant> {
    election_participants(list).into_iter().next()
}

/// A term of leadership as the participant knows it: the current one, or
/// the last one, kept once lost until the next is granted (so its holder
/// reads the loss, and why).
#[derive(Debug, Clone, PartialEq, Eq)]
#[non_exhaustive]
pub struct Term {
    /// Its number: a participant's terms count up from 1.
    pub n: u64,
    /// Our election node.
    pub node: alloc::sync::Arc<str>,
    /// The node's czxid.
    pub token: FencingToken,
    /// As the events left it: `Held`, `Suspended` or `Lost`.
    pub status: HoldStatus,
    /// Why it was (or is being) lost: `Expired` comes before `Lost`.
    pub loss: Option<LossReason>,
}

/// Why a wait for a term ended without one.
#[derive(Debug, Clone, PartialEq, Eq)]
#[non_exhaustive]
pub enum TermFailure {
    /// The wait's deadline passed.
    TimedOut,
    /// The server failed a request the participant cannot recover from.
    Failed(RequestError),
    /// A start (or a re-queue) was refused: the caller's mistake.
    Refused(ApiMisuse),
}

/// One participant of a leader election on `base` (see [`ElectionKind`]).
///
/// Commands: [`Election::start`] queues, [`Election::resign`] ends a term
/// (the leader gives leadership up), [`Election::close`] leaves for good.
/// Events are the lock's: `Acquired` (leadership gained, with the node and
/// its fencing token), `Released` (a term given up), `Suspended` /
/// `Reconnected` (leadership uncertain / confirmed), `Expired` then `Lost`
/// (leadership lost), `Queued`, `Failed`. After a term ends the participant
/// queues again by itself when it re-queues (see [`ElectionKind`]). A wait
/// (or a re-queue) cut by a session expiry queues again once the renewed
/// session is connected, without a `Failed` (with renewal off it fails).
#[derive(Debug)]
pub struct Election {
    mutex: Mutex,
    kind: ElectionKind,
    requeue: bool,
    /// Wants leadership: between `start` and `close` (or a term's end that
    /// does not re-queue).
    wanted: bool,
    closed: bool,
    /// A re-queue waits for the session to come back.
    parked: bool,
    policy: LeadershipPolicy,
    /// The term under way was told `Suspended` and not yet answered.
    suspended: bool,
    gate: SessionGate,
    events: alloc::collections::VecDeque<LockEvent>,
    /// Terms granted so far.
    terms: u64,
    /// The current term, or the last one lost.
    term: Option<Term>,
    /// Where the wait stood at its last listing.
    position: Option<Packed>,
    /// The last wait that ended without a term: the terms granted by
    /// then, and why.
    failure: Option<(u64, TermFailure)>,
}

impl Election {
    /// A participant with id `id` on `base`, in `kind`'s layout. The
    /// config's name is replaced by the layout's, and its data by the id
    /// (a selector with an empty id keeps the config's data, as Curator
    /// writes its default data then). Nothing is sent before
    /// [`Election::start`].
    pub fn new(base: ZkPath, config: impl Into<SharedLockConfig>, kind: ElectionKind, id: &str) -> Election {
        let config = config.into().modified(|config| {
            config.name = kind.lock_name();
            if kind == ElectionKind::Latch || !id.is_empty() {
                config.data = Bytes::copy_from_slice(id.as_bytes());
            }
        });
        Election {
            mutex: Mutex::new(base, config),
            kind,
            requeue: kind == ElectionKind::Latch,
            wanted: false,
            closed: false,
            parked: false,
            policy: LeadershipPolicy::Standard,
            suspended: false,
            gate: SessionGate::new(true),
            events: alloc::collections::VecDeque::new(),
            terms: 0,
            term: None,
            position: None,
            failure: None,
        }
    }

    /// Whether the participant queues again after a term ends (Curator's
    /// `autoRequeue` for a selector; on by default for a latch).
    pub fn auto_requeue(mut self, requeue: bool) -> Election {
        self.requeue = requeue;
        self
    }

    /// Whether a session expiry waits for the renewed session (the
    /// client's [`set_renew_session`](crate::Client::set_renew_session);
    /// on by default) or ends the participation with `Failed`.
    pub fn renewing(mut self, renew: bool) -> Election {
        self.gate = SessionGate::new(renew);
        self
    }

    /// Whether a suspended term still leads ([`LeadershipPolicy`];
    /// [`LeadershipPolicy::Standard`] by default).
    pub fn leadership_policy(mut self, policy: LeadershipPolicy) -> Election {
        self.policy = policy;
        self
    }

    /// The policy it was made with.
    pub fn policy(&self) -> LeadershipPolicy {
        self.policy
    }

    /// The layout.
    pub fn kind(&self) -> ElectionKind {
        self.kind
    }

    /// The leader path.
    pub fn base(&self) -> &ZkPath {
        self.mutex.base()
    }

    /// Queues for leadership (Curator's `start`/`requeue`). Fails with
    /// `AcquireInProgress` while queued or leading, and with
    /// `ElectionClosed` after [`Election::close`]; a refusal is also kept
    /// as the last failure ([`Election::failure_since`]): it ends the wait
    /// for a term.
    pub fn start(&mut self, now: Instant) -> Result<(), ApiMisuse> {
        let refused = if self.closed {
            ApiMisuse::ElectionClosed
        } else if self.wanted || !self.mutex.is_idle() {
            ApiMisuse::AcquireInProgress
        } else {
            self.wanted = true;
            self.queue(now);
            return Ok(());
        };
        self.fail(TermFailure::Refused(refused.clone()));
        Err(refused)
    }

    /// Ends this term: the node is deleted and `Released` reported; with
    /// re-queueing on, the participant queues again at once. Fails with
    /// `NotHeld` when not leading.
    pub fn resign(&mut self, now: Instant) -> Result<(), ApiMisuse> {
        if !self.is_leader() {
            return Err(ApiMisuse::NotHeld);
        }
        self.mutex.release(now)?;
        self.drain(now);
        Ok(())
    }

    /// Leaves the election for good: a wait is abandoned (its node
    /// deleted, nothing reported), a term ends with `Released`, and nothing
    /// is queued again. Closing twice does nothing.
    pub fn close(&mut self, now: Instant) {
        self.closed = true;
        self.wanted = false;
        self.parked = false;
        if self.is_leader() {
            let _ = self.mutex.release(now);
        } else {
            self.mutex.cancel(now);
        }
        self.drain(now);
    }

    /// Whether this participant leads now (its node is first; `Suspended`
    /// leadership still counts until `Lost`).
    pub fn is_leader(&self) -> bool {
        self.mutex.holder().is_some()
    }

    /// Whether this participant leads under its [`LeadershipPolicy`]: it
    /// holds the first node and, under the standard policy, its connection
    /// has not dropped since the grant (or came back with the node).
    pub fn leads(&self) -> bool {
        self.is_leader() && self.policy.leads(self.suspended)
    }

    /// Whether it waits in the queue (or for a session to queue in).
    pub fn is_queued(&self) -> bool {
        self.wanted && !self.is_leader()
    }

    /// Our node and its fencing token while leading.
    pub fn leadership(&self) -> Option<(&str, FencingToken)> {
        self.mutex.holder()
    }

    /// The current term, or the last one (lost) until the next is granted;
    /// `None` before the first and once a term is given up.
    pub fn term(&self) -> Option<&Term> {
        self.term.as_ref()
    }

    /// Where the wait for a term stood at its last listing: (how many
    /// nodes go before ours, how many the listing held); `None` before the
    /// first listing and while a term lasts.
    pub fn position(&self) -> Option<(usize, usize)> {
        self.position.map(Packed::get)
    }

    /// How many terms were granted so far.
    pub fn terms(&self) -> u64 {
        self.terms
    }

    /// Why the wait for the term after term `after` ended without it, if it
    /// did: the last failure, once `after` terms had been granted (a
    /// failure before that ended an earlier wait).
    pub fn failure_since(&self, after: u64) -> Option<&TermFailure> {
        self.failure.as_ref().filter(|(at, _)| *at >= after).map(|(_, f)| f)
    }

    /// True when nothing is in progress and nothing is owed to the server.
    pub fn is_quiescent(&self) -> bool {
        !self.wanted && self.mutex.is_quiescent()
    }

    fn queue(&mut self, now: Instant) {
        if !self.gate.up {
            self.parked = true;
            return;
        }
        self.parked = false;
        if let Err(e) = self.mutex.acquire(now, None) {
            self.wanted = false;
            self.report(LockEvent::Refused(e));
        }
    }

    /// A term or a wait ended: queue again, or stop wanting.
    fn after_term(&mut self, now: Instant) {
        if self.wanted && self.requeue && !self.closed {
            self.queue(now);
        } else {
            self.wanted = false;
        }
    }

    /// Reacts to the mutex's events and passes them on.
    fn drain(&mut self, now: Instant) {
        while let Some(event) = self.mutex.poll_event().map(|e| e.event) {
            match &event {
                LockEvent::Suspended => self.suspended = true,
                LockEvent::Reconnected | LockEvent::Acquired { .. } | LockEvent::Released | LockEvent::Lost => {
                    self.suspended = false
                }
                _ => {}
            }
            let then = match &event {
                LockEvent::Released | LockEvent::Lost => Some(true),
                // A wait the session's expiry ended queues again on the
                // renewed session (a term's loss is `Lost`, above): nothing
                // failed that the caller must hear of.
                LockEvent::Failed(e) if self.mutex.is_idle() && self.wanted && self.gate.parks(e) => {
                    self.queue(now);
                    continue;
                }
                LockEvent::Failed(_) if self.mutex.is_idle() => Some(false),
                LockEvent::TimedOut => Some(false),
                _ => None,
            };
            self.report(event);
            match then {
                Some(true) => self.after_term(now),
                Some(false) => self.wanted = false,
                None => {}
            }
        }
    }
}

impl Election {
    /// Notes `event` in the term ledger, then reports it.
    fn report(&mut self, event: LockEvent) {
        match &event {
            LockEvent::Acquired { node, token } => {
                self.terms += 1;
                let status = HoldStatus::Held;
                self.term = Some(Term { n: self.terms, node: node.clone(), token: *token, status, loss: None });
                self.position = None;
            }
            LockEvent::Released => self.term = None,
            LockEvent::Expired { .. } => {
                if let Some(t) = self.term.as_mut() {
                    t.loss = Some(LossReason::MaxHold);
                }
            }
            LockEvent::Queued { position, total } => self.position = Some(Packed::new(*position, *total)),
            LockEvent::TimedOut => self.fail(TermFailure::TimedOut),
            LockEvent::Failed(e) => self.fail(TermFailure::Failed(e.clone())),
            LockEvent::Refused(e) => self.fail(TermFailure::Refused(e.clone())),
            other => {
                // A lost term stays lost.
                let live = self.term.as_mut().filter(|t| t.status != HoldStatus::Lost);
                if let (Some(change), Some(t)) = (other.hold_change(), live) {
                    t.status = HoldStatus::after(change);
                    if change == HoldChange::Lost {
                        t.loss.get_or_insert(LossReason::SessionOrNode);
                    }
                }
            }
        }
        self.events.push_back(event);
    }

    fn fail(&mut self, failure: TermFailure) {
        self.failure = Some((self.terms, failure));
    }
}

/// An [`Election`] participant's event, its own type: the client hands it
/// on as [`RecipeEvent::Election`] (see there), not flattened as a lock's.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct ElectionEvent(pub LockEvent);

impl From<ElectionEvent> for RecipeEvent {
    fn from(ElectionEvent(event): ElectionEvent) -> RecipeEvent {
        RecipeEvent::Election(event)
    }
}

impl Recipe for Election {
    type Event = ElectionEvent;

    fn handle_reply(&mut self, now: Instant, op: OpId, result: Result<Response, RequestError>) {
        self.mutex.handle_reply(now, op, result);
        self.drain(now);
    }

    fn handle_watch(&mut self, now: Instant, event: &WatchEvent) {
        self.mutex.handle_watch(now, event);
        self.drain(now);
    }

    fn handle_session(&mut self, now: Instant, state: ConnectionState) {
        if let Some(_ended) = self.gate.on_state(state) {
            // The session ended for good: no term can follow.
            self.wanted = false;
            self.parked = false;
        }
        self.mutex.handle_session(now, state);
        self.drain(now);
        if self.gate.up && self.parked && self.wanted {
            self.queue(now);
            self.drain(now);
        }
    }

    fn handle_timeout(&mut self, now: Instant) {
        self.mutex.handle_timeout(now);
        self.drain(now);
    }

    fn poll_op(&mut self) -> Option<RecipeOp> {
        self.mutex.poll_op()
    }

    fn poll_event(&mut self) -> Option<ElectionEvent> {
        self.events.pop_front().map(ElectionEvent)
    }

    fn poll_timeout(&self) -> Option<Instant> {
        self.mutex.poll_timeout()
    }

    fn is_quiescent(&self) -> bool {
        Election::is_quiescent(self)
    }

    fn holds(&self) -> bool {
        self.is_leader()
    }
}
