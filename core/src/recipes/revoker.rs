//! [`Revoker`]: Curator's `Revoker.attemptRevoke`, one setData.

use bytes::Bytes;
use zoolock_wire::Response;

use super::kit::Outbox;
use super::lock_core::REVOKE_MESSAGE;
use crate::error::{ApiMisuse, RequestError};
use crate::gzip::{self, Compression};
use crate::op::Op;
use crate::path::ZkPath;
use crate::recipe::{OpId, Recipe, RecipeEvent, RecipeOp};
use crate::session::{ConnectionState, WatchEvent};
use crate::time::Instant;

/// Asks the holder of a lock node to give it up: `setData(node, "__REVOKE__",
/// version -1)`, which a revocable holder (Curator's `makeRevocable`, or
/// [`Mutex::make_revocable`](super::Mutex::make_revocable)) sees as
/// [`RecipeEvent::RevocationRequested`]. Revocation is cooperative: the holder
/// decides whether to release.
///
/// The request is queued at construction, so it goes out as soon as the
/// revoker is added to a [`Client`](crate::Client); [`Revoker::revoke`] sends it
/// again. Outcomes:
/// - OK: [`RecipeEvent::RevokeSent`].
/// - NoNode: `Failed(Server(NoNode))`. Curator ignores NoNode silently; we
///   report it so the caller knows nothing was revoked (the holder is already
///   gone).
/// - Connection loss: the write is idempotent, so it is sent again after the
///   reconnect.
/// - Anything else (NoAuth, session end): `Failed(error)`.
#[derive(Debug)]
pub struct Revoker {
    node: ZkPath,
    /// `__REVOKE__` as written (gzip for fleets with compression on).
    message: Bytes,
    /// The op in flight, if any.
    in_flight: Option<OpId>,
    /// The last attempt met a connection loss; resend on reconnect.
    retry: bool,
    out: Outbox<RevokeEvent>,
}

impl Revoker {
    /// A revoker for the lock node `node` (a full path, e.g. from
    /// [`Participants`](super::Participants)); the request is queued at once.
    pub fn new(node: ZkPath) -> Revoker {
        Revoker::with_compression(node, Compression::None)
    }

    /// As [`Revoker::new`], writing `__REVOKE__` framed by `compression`:
    /// a Curator holder built with `enableCompression()` recognises only the
    /// gzip form (zoolock holders recognise both).
    pub fn with_compression(node: ZkPath, compression: Compression) -> Revoker {
        let message = compression.encode(Bytes::from_static(REVOKE_MESSAGE));
        let mut revoker = Revoker { node, message, in_flight: None, retry: false, out: Outbox::default() };
        revoker.send();
        revoker
    }

    /// The node being revoked.
    pub fn node(&self) -> &ZkPath {
        &self.node
    }

    /// Writes `__REVOKE__` again (e.g. after the holder re-armed its watch).
    pub fn revoke(&mut self, _now: Instant) -> Result<(), ApiMisuse> {
        if self.in_flight.is_some() || self.retry {
            return Err(ApiMisuse::RequestInProgress);
        }
        self.send();
        Ok(())
    }

    fn send(&mut self) {
        self.retry = false;
        let op = Op::set_data(&self.node, self.message.clone(), None);
        self.in_flight = Some(self.out.send(op));
    }
}

/// Whether a holder's node data asks it to release: `__REVOKE__`, plain or
/// gzip-framed (Curator with compression writes the latter).
pub(crate) fn is_revoke_message(data: &[u8]) -> bool {
    gzip::decode(data, REVOKE_MESSAGE.len()).is_ok_and(|message| *message == *REVOKE_MESSAGE)
}

impl Recipe for Revoker {
    type Event = RevokeEvent;

    fn handle_reply(&mut self, _now: Instant, op: OpId, result: Result<Response, RequestError>) {
        if self.in_flight != Some(op) {
            return;
        }
        self.in_flight = None;
        match result {
            Ok(_) => self.out.emit(RevokeEvent::Sent),
            Err(RequestError::ConnectionLoss) => self.retry = true,
            Err(e) => self.out.emit(RevokeEvent::Failed(e)),
        }
    }

    fn handle_watch(&mut self, _now: Instant, _event: &WatchEvent) {}

    fn handle_session(&mut self, _now: Instant, state: ConnectionState) {
        match state {
            ConnectionState::Connected | ConnectionState::Reconnected | ConnectionState::ConnectedReadOnly => {
                if self.retry {
                    self.send();
                }
            }
            _ => {
                if let Some(error) = state.end_error().filter(|_| self.retry || self.in_flight.is_some()) {
                    self.retry = false;
                    self.in_flight = None;
                    self.out.emit(RevokeEvent::Failed(error));
                }
            }
        }
    }

    fn handle_timeout(&mut self, _now: Instant) {}

    fn poll_op(&mut self) -> Option<RecipeOp> {
        self.out.poll_op()
    }

    fn poll_event(&mut self) -> Option<RevokeEvent> {
        self.out.poll_event()
    }

    fn poll_timeout(&self) -> Option<Instant> {
        None
    }

    fn is_quiescent(&self) -> bool {
        self.in_flight.is_none() && !self.retry && self.out.no_ops()
    }

    fn holds(&self) -> bool {
        false
    }
}

/// What a [`Revoker`] reports: the request was written
/// ([`RecipeEvent::RevokeSent`] at the client) or could not be
/// ([`RecipeEvent::Failed`]).
#[derive(Debug, Clone, PartialEq, Eq)]
#[non_exhaustive]
pub enum RevokeEvent {
    /// The revocation request was written to the holder's node.
    Sent,
    /// It could not be.
    Failed(RequestError),
}

impl From<RevokeEvent> for RecipeEvent {
    fn from(event: RevokeEvent) -> RecipeEvent {
        match event {
            RevokeEvent::Sent => RecipeEvent::RevokeSent,
            RevokeEvent::Failed(error) => RecipeEvent::Failed(error),
        }
    }
}
