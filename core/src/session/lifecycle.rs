//! The connection under a session: dialling the next host, dropping a
//! connection, reconnecting after a pause, and ending the session.

use super::*;

impl Session {
    pub(super) fn start_attempt(&mut self, now: Instant) {
        let Some(addr) = self.hosts.get(self.next_host).cloned() else {
            // The connect string guarantees at least one host.
            self.end(End::Closed);
            return;
        };
        let host = self.next_host;
        self.next_host = (self.next_host + 1) % self.hosts.len();
        self.phase = Phase::Connecting { host, deadline: now + self.connect_timeout() };
        self.socket_open = true;
        self.io.push_back(IoCommand::Connect { host: HostId(host), addr });
    }

    pub(super) fn close_socket(&mut self) {
        if self.socket_open {
            self.socket_open = false;
            self.io.push_back(IoCommand::Close);
        }
        self.outbound.clear();
    }

    /// Schedules the next attempt: a seeded pause, longer after a whole cycle of
    /// hosts has failed. The extra pause is T/10 (1 s at most; ZooKeeper's
    /// Java client waits 1 s): short enough that, once a lost quorum
    /// returns, every client is back about as soon as the servers serve.
    /// Clients of the old sessions that come back late hold up the lock
    /// queue until their nodes are deleted (by themselves, or by the server
    /// a session timeout after the new leader starts). A cycle in which
    /// every dial failed ends a session that never connected instead, when
    /// [`SessionConfig::give_up_unreachable`] says so.
    pub(super) fn schedule_reconnect(&mut self, now: Instant) {
        let t = self.timeout();
        let mut pause = self.rng.duration_up_to(self.config.reconnect_jitter.min(t / 10));
        if self.failed_in_cycle >= self.hosts.len() {
            let unreachable = self.unreachable_in_cycle >= self.hosts.len();
            self.failed_in_cycle = 0;
            self.unreachable_in_cycle = 0;
            if unreachable && self.config.give_up_unreachable && !self.ever_connected {
                return self.end(End::Unreachable);
            }
            pause += Duration::from_secs(1).min(t / 10);
        }
        self.phase = Phase::Idle { at: now + pause };
    }

    /// The current connection is unusable: fail what it carried and move on.
    pub(super) fn drop_connection(&mut self, now: Instant) {
        self.quorum.disconnected();
        match self.phase {
            Phase::Connecting { .. } | Phase::Handshaking { .. } => {
                self.close_socket();
                self.failed_in_cycle += 1;
                self.schedule_reconnect(now);
            }
            Phase::Connected { .. } => {
                self.suspension = self.why_drop.take().unwrap_or(Suspension::Disconnected);
                self.quorum.settled();
                self.close_socket();
                self.fail_in_flight(RequestError::ConnectionLoss);
                self.ensemble_interrupted();
                self.disconnected_at.get_or_insert(now);
                if let Some(root) = self.root.as_mut() {
                    root.interrupted();
                }
                // A connection whose state was never reported (the root
                // check of a new session was under way) suspends nothing.
                if self.announce.take().is_none() {
                    self.events.push_back(SessionEvent::State(ConnectionState::Suspended));
                }
                self.schedule_reconnect(now);
            }
            Phase::Closing { .. } => self.end(End::Closed),
            Phase::Idle { .. } | Phase::Ended(_) => self.close_socket(),
        }
    }

    /// The server broke the protocol on this connection: drop it, or give up
    /// on the server when this run of misbehaving connections is too long
    /// (by count or by the session timeout).
    pub(super) fn misbehaved(&mut self, now: Instant, error: SessionError) {
        if matches!(self.phase, Phase::Ended(_) | Phase::Closing { .. }) {
            // Closing anyway: the close is what the user asked for.
            return self.drop_connection(now);
        }
        self.misbehaved = self.misbehaved.saturating_add(1);
        let since = *self.misbehaving_since.get_or_insert(now);
        if self.misbehaved >= self.config.max_misbehaving_connections.max(1) || now >= since + self.timeout() {
            self.end(End::ServerMisbehaved(error));
        } else {
            self.drop_connection(now);
        }
    }

    /// Terminal transition: everything outstanding fails, watches are dropped.
    pub(super) fn end(&mut self, end: End) {
        if matches!(self.phase, Phase::Ended(_)) {
            return;
        }
        self.phase = Phase::Ended(end);
        self.close_socket();
        let (error, state) = match end {
            End::Closed => (RequestError::Closed, ConnectionState::Closed),
            End::Expired => (RequestError::SessionExpired, ConnectionState::Lost),
            End::AuthFailed => (RequestError::AuthFailed, ConnectionState::AuthFailed),
            End::SaslRequired => (RequestError::SaslAuthRequired, ConnectionState::AuthFailed),
            End::Sasl(e) => (RequestError::Sasl(e), ConnectionState::SaslFailed(e)),
            End::ServerMisbehaved(e) => (RequestError::ServerMisbehaved(e), ConnectionState::ServerMisbehaved(e)),
            End::Unreachable => (RequestError::Unreachable, ConnectionState::Unreachable),
            End::ChrootUnavailable(code) => {
                (RequestError::ChrootUnavailable(code), ConnectionState::ChrootUnavailable(code))
            }
        };
        self.sasl = None;
        self.announce = None;
        self.fail_in_flight(error.clone());
        let parked = core::mem::take(&mut self.parked);
        for q in parked.into_iter().chain(core::mem::take(&mut self.queued)) {
            self.events.push_back(SessionEvent::Reply { id: q.id, result: Err(error.clone()) });
        }
        self.watches.clear();
        self.events.push_back(SessionEvent::State(state));
    }

    pub(super) fn fail_in_flight(&mut self, error: RequestError) {
        for p in core::mem::take(&mut self.in_flight) {
            if let Purpose::User { id, .. } = p.purpose {
                self.events.push_back(SessionEvent::Reply { id, result: Err(error.clone()) });
            }
        }
    }
}
