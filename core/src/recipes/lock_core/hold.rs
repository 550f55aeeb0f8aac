//! The held node: the reconnect's check that it survived, its watch's
//! reply, its loss when it goes, its expiry at the maximum hold, and the
//! read that tells a revocation request.

use super::*;

impl LockCore {
    /// The reply to a Verify (`Reconnected` on success) or to the held
    /// node's watch (nothing to tell on success).
    pub(super) fn on_verify(&mut self, purpose_is_verify: bool, result: Result<Response, RequestError>) {
        if !purpose_is_verify && self.waiting_node().is_some() {
            // The waiting node's own watch: not armed if the node is gone
            // (look again and start over) or the connection dropped (the
            // grant arms it).
            match result {
                Ok(_) => {}
                Err(RequestError::Server(ErrorCode::NO_NODE)) => self.waiting_node_gone(),
                Err(_) => self.own_watched = false,
            }
            return;
        }
        if !matches!(self.state, State::Held { .. }) {
            return;
        }
        match (purpose_is_verify, result) {
            (true, Ok(_)) => self.out.emit(LockEvent::Reconnected),
            (false, Ok(_)) => {}
            (_, Err(RequestError::Server(ErrorCode::NO_NODE))) => self.hold_gone(),
            // Dropped: the next Reconnected verifies again, and re-arms.
            (_, Err(_)) => {}
        }
    }

    /// Our held node is gone (deleted by someone else, seen by its watch or
    /// by a read): the hold is `Lost`, at once and for good. Nothing is left
    /// to delete.
    pub(super) fn hold_gone(&mut self) {
        if !matches!(self.state, State::Held { .. }) {
            return;
        }
        let State::Held { node } = core::mem::replace(&mut self.state, State::Idle) else { return };
        self.rare_mut().lost = Some(node.path);
        self.attempt += 1;
        self.revoke_armed = false;
        self.out.emit(LockEvent::Lost);
    }

    /// The hold reached [`LockConfig::max_hold`]: it is `Lost` (told as
    /// `Expired` first) and its node deleted, so the next in line gets it.
    pub(super) fn expire(&mut self) {
        let State::Held { node } = core::mem::replace(&mut self.state, State::Idle) else { return };
        if let Some(rare) = self.rare.as_mut() {
            rare.hold_until = None;
        }
        if core::mem::take(&mut self.revoke_armed) {
            self.send(Op::check_watches(&node.path, WatcherType::ANY), Purpose::CheckWatches);
        }
        self.start_delete(node.path.clone());
        self.out.emit(LockEvent::Expired { node: node.shared_path() });
        self.rare_mut().lost = Some(node.path);
        self.attempt += 1;
        self.out.emit(LockEvent::Lost);
    }

    pub(super) fn on_revoke_read(&mut self, current: bool, result: Result<Response, RequestError>) {
        match result {
            Ok(Response::Data { data: Some(data), .. }) if super::super::revoker::is_revoke_message(&data) => {
                self.out.emit(LockEvent::RevocationRequested);
            }
            // Dropped before the watch was set: read again (the request waits
            // in the session for the reconnect), or revocation is lost.
            Err(RequestError::ConnectionLoss) if self.revoke_armed => {
                if let State::Held { node }
                | State::Listing { node }
                | State::Watching { node, .. }
                | State::Waiting { node, .. } = &self.state
                {
                    let path = node.path.clone();
                    self.send(Op::get_data(&path, true), Purpose::RevokeRead);
                }
            }
            // NoNode: our node is gone and the watch was not set; a hold
            // through it (this attempt's node) is lost.
            Err(RequestError::Server(ErrorCode::NO_NODE)) if current => self.hold_gone(),
            _ => {}
        }
    }
}
