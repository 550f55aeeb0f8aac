//! [`Observer`]: who holds a lock path (who leads an election), told on
//! every change by watches rather than found by polling (etcd's
//! `Election.Observe`; Curator's `getLeader` plus a listener).

use zoolock_wire::Response;

use super::election::ElectionKind;
use super::kit::Outbox;
use super::participants::{Participants, ParticipantsEvent};
use super::policy::SortKey;
use crate::error::RequestError;
use crate::path::ZkPath;
use crate::recipe::{OpId, Participant, Recipe, RecipeEvent, RecipeOp};
use crate::session::{ConnectionState, WatchEvent};
use crate::time::Instant;

/// Watches a lock path's queue ([`Participants::watching`]) and reports
/// [`RecipeEvent::Holder`] whenever the holder changes: the first
/// participant in sort order whose node still exists (for a mutex, a
/// selector or a latch, the holder or leader; for a read-write lock or a
/// semaphore's leases, the oldest node). A new node of the same holder (it
/// released and queued again first) is a change. The holder's data is read
/// with the listing, so a selector's or latch's leader id comes with it.
/// Failures are reported as `Failed`; a session's loss resumes on the next.
#[derive(Debug)]
pub struct Observer {
    participants: Participants,
    /// The last holder reported (`Some(None)`: nobody), `None` before the
    /// first report.
    last: Option<Option<Participant>>,
    out: Outbox<ObserverEvent>,
}

impl Observer {
    /// Observes the lock path `base` whose children sort by `key`.
    pub fn new(base: ZkPath, key: SortKey) -> Observer {
        Observer { participants: Participants::watching(base, key), last: None, out: Outbox::default() }
    }

    /// Observes an election's leader.
    pub fn election(base: ZkPath, kind: ElectionKind) -> Observer {
        Observer::new(base, kind.lock_name().sort_key())
    }

    /// The holder last reported (`None` before the first listing, or when
    /// nobody holds it).
    pub fn holder(&self) -> Option<&Participant> {
        self.last.as_ref().and_then(Option::as_ref)
    }

    fn drain(&mut self) {
        while let Some(event) = self.participants.poll_event() {
            match event {
                ParticipantsEvent::Listed(list) => {
                    let holder = list.into_iter().find(|p| p.data.is_some());
                    let same = self
                        .last
                        .as_ref()
                        .is_some_and(|last| last.as_ref().map(|p| &p.path) == holder.as_ref().map(|p| &p.path));
                    if !same {
                        self.last = Some(holder.clone());
                        self.out.emit(ObserverEvent::Holder(holder));
                    }
                }
                ParticipantsEvent::Failed(error) => self.out.emit(ObserverEvent::Failed(error)),
            }
        }
    }
}

impl Recipe for Observer {
    type Event = ObserverEvent;

    fn handle_reply(&mut self, now: Instant, op: OpId, result: Result<Response, RequestError>) {
        self.participants.handle_reply(now, op, result);
        self.drain();
    }

    fn handle_watch(&mut self, now: Instant, event: &WatchEvent) {
        self.participants.handle_watch(now, event);
        self.drain();
    }

    fn handle_session(&mut self, now: Instant, state: ConnectionState) {
        self.participants.handle_session(now, state);
        self.drain();
    }

    fn handle_timeout(&mut self, _now: Instant) {}

    fn poll_op(&mut self) -> Option<RecipeOp> {
        self.participants.poll_op()
    }

    fn poll_event(&mut self) -> Option<ObserverEvent> {
        self.out.poll_event()
    }

    fn poll_timeout(&self) -> Option<Instant> {
        None
    }

    fn is_quiescent(&self) -> bool {
        true
    }

    fn holds(&self) -> bool {
        false
    }
}

/// What an [`Observer`] reports: a new holder ([`RecipeEvent::Holder`] at
/// the client) or a listing that failed ([`RecipeEvent::Failed`]).
#[derive(Debug, Clone, PartialEq, Eq)]
#[non_exhaustive]
pub enum ObserverEvent {
    /// The holder changed: who holds now (`None`: nobody).
    Holder(Option<Participant>),
    /// A listing failed.
    Failed(RequestError),
}

impl From<ObserverEvent> for RecipeEvent {
    fn from(event: ObserverEvent) -> RecipeEvent {
        match event {
            ObserverEvent::Holder(holder) => RecipeEvent::Holder(holder),
            ObserverEvent::Failed(error) => RecipeEvent::Failed(error),
        }
    }
}
