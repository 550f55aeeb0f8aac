//! What the server sends: the handshake's answer, the SASL exchange, and
//! every later frame (replies matched to the xid FIFO, pings, watch
//! notifications), with the chroot stripped from what reaches the client.

use super::*;

impl Session {
    pub(super) fn handle_handshake(&mut self, now: Instant, frame: &[u8]) -> Result<(), SessionError> {
        let Phase::Handshaking { host, .. } = self.phase else {
            return Ok(());
        };
        let response = ConnectResponse::decode(frame)?;
        if response.is_expired() {
            self.end(End::Expired);
            return Ok(());
        }
        if self.session_id != 0 && response.session_id != self.session_id {
            return Err(Misbehavior::SessionIdChanged { asked: self.session_id, got: response.session_id }.into());
        }
        self.session_id = response.session_id;
        if let Some(passwd) = response.passwd {
            self.passwd = passwd;
        }
        self.negotiated = Some(Duration::from_millis(u64::try_from(response.timeout_ms).unwrap_or(0)));
        self.read_only = response.read_only.unwrap_or(false);
        self.phase = Phase::Connected { host };
        self.confirm(self.handshake_sent);
        self.quorum.arrived(self.handshake_sent, now);
        // Answered once the leader created or revalidated (touched) the
        // session; a read-only server answers without one.
        if !self.read_only {
            self.quorum.leader_touched(self.handshake_sent);
        }
        self.failed_in_cycle = 0;
        self.unreachable_in_cycle = 0;
        self.disconnected_at = None;
        let state = match (self.reported, self.read_only) {
            (_, true) => ConnectionState::ConnectedReadOnly,
            (false, false) => ConnectionState::Connected,
            (true, false) => ConnectionState::Reconnected,
        };
        self.ever_connected = true;
        if let Some(sasl) = &self.config.sasl {
            // SASL first, after every handshake; the rest waits for it.
            let random = [self.rng.next_u64(), self.rng.next_u64()];
            let server = self.hosts.get(host).map_or("", |h| h.host.as_str());
            let started = sasl.client().start(server, random);
            let token = match started.and_then(|mut m| Ok((m.initial_response()?, m))) {
                Ok((token, exchange)) => {
                    self.sasl = Some((exchange, state));
                    token
                }
                Err(e) => {
                    self.end(End::Sasl(e));
                    return Ok(());
                }
            };
            self.send(now, Request::Sasl(SaslRequest { token: Some(Bytes::from(token)) }), Purpose::Sasl);
            return Ok(());
        }
        self.ready(now, state);
        Ok(())
    }

    /// Pings when a third of the timeout has passed since the last send.
    /// (No ping during SASL: a server that requires it refuses anything
    /// else until it completes.)
    pub(super) fn ping_if_due(&mut self, now: Instant) {
        if matches!(self.phase, Phase::Connected { .. })
            && self.sasl.is_none()
            && now >= self.last_send + self.timeout() / 3
        {
            let ping = RequestFrame::new(Xid::PING, Request::Ping);
            let _ = encode_frame(&ping, usize::MAX, &mut self.outbound);
            self.last_send = now;
            self.quorum.touched(now, self.timeout());
            self.pings.push_back(now);
        }
    }

    /// The connection is usable (after the handshake, and SASL if any):
    /// send credentials and watches; then, if the chroot's root is owed a
    /// check, start it (a new session reports `state` once it is done);
    /// otherwise report `state` and send the waiting requests.
    pub(super) fn ready(&mut self, now: Instant, state: ConnectionState) {
        // Order after a handshake: credentials, watches, the root's check,
        // then queued requests.
        for (scheme, auth) in self.auth.clone() {
            self.send_auth(now, &scheme, auth);
        }
        if !self.watches.is_empty() || self.ensemble_armed() {
            self.send_set_watches(now);
        }
        self.read_ensemble_if_owed(now);
        if !self.start_root_check(now, state) {
            self.announce_state(state);
            self.flush(now);
        }
    }

    pub(super) fn announce_state(&mut self, state: ConnectionState) {
        self.reported = true;
        self.events.push_back(SessionEvent::State(state));
    }

    /// Sends the requests that waited (held-back creates first, as they are
    /// older), then a quorum confirmation if one came due while the
    /// connection was not serving (it went out on none, or it waited for the
    /// handshake, SASL or the chroot's root), then a ping if the handshake
    /// took so long that one is already due (a timer handed out already due
    /// would never be met on time).
    pub(super) fn flush(&mut self, now: Instant) {
        while let Some(q) = self.parked.pop_front().or_else(|| self.queued.pop_front()) {
            self.send_user(now, q);
        }
        self.confirm_if_due(now);
        self.ping_if_due(now);
    }

    /// The server's SASL token (or refusal) for our exchange.
    pub(super) fn handle_sasl(&mut self, now: Instant, err: ErrorCode, response: Option<Response>) {
        let Some((exchange, state)) = self.sasl.as_mut() else { return };
        let state = *state;
        // A refused exchange (wrong user or password) comes back as
        // AuthFailed, or SessionClosedRequireSaslAuth when the server
        // requires SASL, and the server closes the connection.
        let token = match (err, response) {
            (ErrorCode::OK, Some(Response::Sasl(token))) => token.unwrap_or_default(),
            _ => return self.end(End::AuthFailed),
        };
        match exchange.evaluate_challenge(&token) {
            Ok(Some(next)) => {
                self.send(now, Request::Sasl(SaslRequest { token: Some(Bytes::from(next)) }), Purpose::Sasl);
            }
            Ok(None) if exchange.is_complete() => {
                self.sasl = None;
                self.ready(now, state);
            }
            // Nothing more to say, yet not complete: the server's last step
            // did not prove it.
            Ok(None) => self.end(End::Sasl(SaslError::BadServerProof)),
            Err(e) => self.end(End::Sasl(e)),
        }
    }

    pub(super) fn handle_message(&mut self, now: Instant, frame: &[u8]) -> Result<(), SessionError> {
        let in_flight = &self.in_flight;
        let decoded = ServerMessage::decode(frame, |xid| in_flight.iter().find(|p| p.xid == xid.0).map(|p| p.op));
        let message = match decoded {
            Ok(m) => m,
            Err(e) => {
                if let DecodeErrorKind::UnknownXid(got) = e.kind {
                    let expected = self.in_flight.front().map(|p| p.xid);
                    return Err(Misbehavior::UnexpectedXid { expected, got }.into());
                }
                return Err(e.into());
            }
        };
        match message {
            ServerMessage::Notification { event, .. } => {
                if event.path == crate::ensemble::CONFIG_PATH {
                    self.ensemble_notified(now, event.event_type);
                }
                let path = to_client_path(self.chroot.as_deref(), &event.path);
                for watcher in self.watches.fire(&path, event.event_type) {
                    let event = WatchEvent { event_type: event.event_type, path: path.clone() };
                    self.events.push_back(SessionEvent::Watch { watcher, event });
                }
                Ok(())
            }
            // A server that requires SASL refuses anything else from an
            // unauthenticated session, then closes the connection.
            ServerMessage::Reply { header, .. } if header.err == ErrorCode::SESSION_CLOSED_REQUIRE_SASL_AUTH => {
                let sasl = self.in_flight.front().is_some_and(|p| matches!(p.purpose, Purpose::Sasl));
                self.end(if sasl { End::AuthFailed } else { End::SaslRequired });
                Ok(())
            }
            ServerMessage::Reply { header, response } => match header.xid {
                Xid::PING => {
                    if let Some(sent) = self.pings.pop_front() {
                        self.timings.answered(OpCode::PING, sent, now);
                        self.confirm(sent);
                        self.quorum.arrived(sent, now);
                    }
                    Ok(())
                }
                Xid::AUTH => {
                    if header.err == ErrorCode::AUTH_FAILED {
                        self.end(End::AuthFailed);
                    }
                    Ok(())
                }
                Xid(xid) => self.handle_reply(now, xid, header.zxid, header.err, response),
            },
        }
    }

    pub(super) fn handle_reply(
        &mut self,
        now: Instant,
        xid: i32,
        zxid: i64,
        err: ErrorCode,
        response: Option<Response>,
    ) -> Result<(), SessionError> {
        let head = self.in_flight.front().map(|p| p.xid);
        if head != Some(xid) {
            // The server answers an unknown opcode at once, out of order, then
            // closes the connection.
            if err == ErrorCode::UNIMPLEMENTED {
                if let Some(pos) = self.in_flight.iter().position(|p| p.xid == xid) {
                    match self.in_flight.remove(pos).map(|p| p.purpose) {
                        Some(Purpose::User { id, .. }) => {
                            self.events.push_back(SessionEvent::Reply { id, result: Err(RequestError::Server(err)) });
                        }
                        // No containers on this server: persistent levels
                        // after the reconnect.
                        Some(Purpose::Root) => self.root.iter_mut().for_each(RootKeeper::no_containers),
                        _ => {}
                    }
                    self.drop_connection(now);
                    return Ok(());
                }
            }
            return Err(Misbehavior::UnexpectedXid { expected: head, got: xid }.into());
        }
        let Some(entry) = self.in_flight.pop_front() else {
            return Ok(());
        };
        self.timings.answered(entry.op, entry.sent, now);
        // A reply to the request it answers: the server is behaving.
        self.misbehaved = 0;
        self.misbehaving_since = None;
        if err != ErrorCode::SESSION_EXPIRED {
            self.confirm(entry.sent);
        }
        self.quorum.arrived(entry.sent, now);
        if err.is_ok() && entry.op.is_forwarded_to_leader() {
            let tick = self.tick();
            self.quorum.leader_answered(entry.sent, tick);
        }
        if zxid > 0 {
            self.last_zxid = self.last_zxid.max(zxid);
        }
        if err == ErrorCode::SESSION_EXPIRED {
            if let Purpose::User { id, .. } = entry.purpose {
                self.events.push_back(SessionEvent::Reply { id, result: Err(RequestError::SessionExpired) });
            }
            self.end(End::Expired);
            return Ok(());
        }
        match entry.purpose {
            Purpose::User { id, watch, retry: Some(retry) } if err == ErrorCode::NO_NODE && retry.1 < ROOT_RETRIES => {
                let (request, retries) = *retry;
                self.root_lost(now, Queued { id, request, watch, retries: Some(retries + 1) });
            }
            Purpose::User { id, watch, .. } => {
                if let Some(w) = watch {
                    self.register_watch(w, err);
                }
                let result = match response {
                    Some(r) if err.is_ok() => Ok(self.strip_chroot(r)),
                    _ => Err(RequestError::Server(err)),
                };
                self.events.push_back(SessionEvent::Reply { id, result });
            }
            Purpose::SetWatches => {}
            Purpose::Confirm => {
                self.quorum.settled();
                // An answer later than the interval: the next one is due now
                // (its timer would otherwise be handed out in the past).
                self.confirm_if_due(now);
            }
            Purpose::Root => self.on_root_reply(now, err),
            Purpose::Ensemble => self.on_ensemble_reply(now, err, response),
            Purpose::Sasl => self.handle_sasl(now, err, response),
            Purpose::Close => self.end(End::Closed),
        }
        Ok(())
    }

    pub(super) fn register_watch(&mut self, w: PendingWatch, err: ErrorCode) {
        let kind = match (w.read, err) {
            (WatchRead::Exists, ErrorCode::OK) | (WatchRead::Data, ErrorCode::OK) => WatchKind::Data,
            (WatchRead::Exists, ErrorCode::NO_NODE) => WatchKind::Exist,
            (WatchRead::Children, ErrorCode::OK) => WatchKind::Child,
            _ => return,
        };
        self.watches.add(&w.path, kind, w.watcher);
    }

    pub(super) fn strip_chroot(&self, response: Response) -> Response {
        let Some(root) = self.chroot.as_deref() else {
            return response;
        };
        match response {
            Response::Path(p) => Response::Path(to_client_path(Some(root), &p)),
            Response::Create2 { path, stat } => Response::Create2 { path: to_client_path(Some(root), &path), stat },
            Response::Multi(results) => Response::Multi(
                results
                    .into_iter()
                    .map(|r| match r {
                        MultiResult::Ok { op, response } => {
                            MultiResult::Ok { op, response: self.strip_chroot(response) }
                        }
                        e => e,
                    })
                    .collect(),
            ),
            other => other,
        }
    }
}
