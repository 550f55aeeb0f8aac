//! Connections: accepting, framing, the handshake, output queues, closing,
//! and the timers (session expiry, the container/TTL reaper, the sessionless
//! timeout). Requests after the handshake go to `ops.rs`.

use bytes::{Bytes, BytesMut};
use zoolock_core::Instant;
use zoolock_wire::{
    ConnectRequest, ConnectResponse, Encode, ErrorCode, FrameDecoder, Id, KeeperState, PASSWORD_LEN, ReplyHeader,
    Response, ServerMessage, WatcherEvent, Xid, encode_frame,
};

use super::isolation::Isolation;
use super::tree::Change;
use super::watches::Fired;
use super::{CloseReason, ConnId, ZkModel};

#[derive(Debug, Clone, Copy, PartialEq, Eq)]
enum ConnState {
    /// Waiting for the ConnectRequest.
    Handshake { deadline: Option<Instant> },
    /// Bound to a session.
    Open { session: i64 },
    /// Closed by the server; `out` may still hold its last bytes.
    Closed,
}

/// One accepted connection.
#[derive(Debug)]
pub(crate) struct Conn {
    state: ConnState,
    /// Bytes waiting for `poll_transmit`.
    pub(crate) out: BytesMut,
    /// Listed in `writable` already.
    pub(crate) queued: bool,
    /// The connection's identities (`ip` first, then what auth packets add).
    pub(crate) auth: Vec<Id>,
    /// Its server lost the leader (`isolation.rs`).
    pub(crate) isolated: Option<Box<Isolation>>,
}

impl Conn {
    pub(crate) fn is_closed(&self) -> bool {
        self.state == ConnState::Closed
    }

    pub(crate) fn session(&self) -> Option<i64> {
        match self.state {
            ConnState::Open { session } => Some(session),
            _ => None,
        }
    }

    pub(crate) fn handshake_deadline(&self) -> Option<Instant> {
        match self.state {
            ConnState::Handshake { deadline } => deadline,
            _ => None,
        }
    }
}

impl ZkModel {
    // ---- inputs --------------------------------------------------------------------

    /// A client opened a TCP connection.
    pub fn connect(&mut self, now: Instant) -> ConnId {
        self.next_conn += 1;
        let id = ConnId(self.next_conn);
        let deadline = self.config.sessionless_timeout.map(|t| now + t);
        let ip = Id { scheme: "ip".into(), id: self.config.client_ip.clone() };
        self.conns.insert(
            id,
            Conn {
                state: ConnState::Handshake { deadline },
                out: BytesMut::new(),
                queued: false,
                auth: vec![ip],
                isolated: None,
            },
        );
        id
    }

    /// Bytes from the client. Every complete frame at the front of `buf` is
    /// consumed and answered; a partial frame stays. Input for a connection
    /// the server closed (or never knew) is discarded.
    pub fn handle_bytes(&mut self, now: Instant, conn: ConnId, buf: &mut BytesMut) {
        let decoder = FrameDecoder::new(self.config.max_frame_len);
        loop {
            let state = match self.conns.get(&conn) {
                Some(c) if !c.is_closed() => c.state,
                _ => {
                    buf.clear();
                    return;
                }
            };
            let frame = match decoder.decode(buf) {
                Ok(Some(frame)) => frame,
                Ok(None) => return,
                Err(e) => {
                    buf.clear();
                    self.close(conn, CloseReason::Malformed(e));
                    return;
                }
            };
            match state {
                ConnState::Handshake { .. } => self.handshake(now, conn, &frame),
                ConnState::Open { session } if self.is_isolated(conn) => {
                    self.isolated_frame(now, conn, session, frame);
                }
                ConnState::Open { session } => {
                    self.touch(session, now);
                    self.request(now, conn, session, frame);
                }
                ConnState::Closed => {}
            }
        }
    }

    /// The client closed the connection (or it broke). The session lives on
    /// until it expires; the connection's watches are gone.
    pub fn disconnect(&mut self, _now: Instant, conn: ConnId) {
        if let Some(c) = self.conns.remove(&conn) {
            self.unbind(conn, c.session());
        }
    }

    /// Runs whatever is due at `now`: session expiry, the reaper, and the
    /// sessionless-connection timeout.
    pub fn handle_timeout(&mut self, now: Instant) {
        self.quorum_timers(now);
        for session in self.sessions.expired(now) {
            self.expire(now, session);
        }
        let stale: Vec<ConnId> = self
            .conns
            .iter()
            .filter(|(_, c)| c.handshake_deadline().is_some_and(|d| d <= now))
            .map(|(id, _)| *id)
            .collect();
        for conn in stale {
            self.close(conn, CloseReason::HandshakeTimeout);
        }
        if self.reap_at.is_some_and(|t| t <= now) {
            self.reap(now);
        }
    }

    /// Fault injection: expires `session` now, as the session tracker would.
    /// Returns false if there is no such session.
    pub fn expire_session(&mut self, now: Instant, session: i64) -> bool {
        if self.sessions.get(session).is_none() {
            return false;
        }
        self.expire(now, session);
        true
    }

    /// Fault injection: someone else (an operator, another client) deletes
    /// the childless node at `path`, firing the watches as any delete does.
    /// Returns false if there is no such node or it has children.
    pub fn delete_node(&mut self, now: Instant, path: &str) -> bool {
        if path == "/" || !self.tree.get(path).is_some_and(|n| n.children.is_empty()) {
            return false;
        }
        let zxid = self.next_zxid();
        let mut changes = Vec::new();
        self.tree.delete(path, zxid, &mut changes);
        self.fire(&changes, zxid);
        self.schedule_reaper(now);
        true
    }

    /// Fault injection: the server drops `conn` (as on a network error). The
    /// session lives on.
    pub fn drop_connection(&mut self, now: Instant, conn: ConnId) {
        self.disconnect(now, conn);
    }

    // ---- handshake -----------------------------------------------------------------

    fn handshake(&mut self, now: Instant, conn: ConnId, frame: &[u8]) {
        let req = match ConnectRequest::decode(frame) {
            Ok(req) => req,
            Err(e) => return self.close(conn, CloseReason::Malformed(e)),
        };
        if req.last_zxid_seen > self.zxid {
            return self.close(conn, CloseReason::ClientAhead { client: req.last_zxid_seen, server: self.zxid });
        }
        let timeout = req.timeout_ms.max(self.config.min_timeout_ms()).min(self.config.max_timeout_ms());
        let read_only = req.read_only.map(|_| false);
        if req.session_id == 0 {
            self.next_zxid();
            let session = self.sessions.create(now, timeout, conn);
            self.open(conn, session, timeout, read_only);
            return;
        }
        let session = req.session_id;
        if let Some(other) = self.sessions.get(session).and_then(|s| s.conn).filter(|c| *c != conn) {
            self.close(other, CloseReason::SessionMoved(session));
        }
        let password_ok = req.passwd.as_deref() == Some(&self.sessions.password(session)[..]);
        if password_ok && self.sessions.revalidate(session, now, timeout, conn) {
            self.open(conn, session, timeout, read_only);
        } else {
            self.send(
                conn,
                &ConnectResponse {
                    protocol_version: 0,
                    timeout_ms: 0,
                    session_id: 0,
                    passwd: Some(Bytes::from_static(&[0; PASSWORD_LEN])),
                    read_only,
                },
            );
            self.close(conn, CloseReason::InvalidSession);
        }
    }

    fn open(&mut self, conn: ConnId, session: i64, timeout_ms: i32, read_only: Option<bool>) {
        if let Some(c) = self.conns.get_mut(&conn) {
            c.state = ConnState::Open { session };
        }
        let passwd = Bytes::copy_from_slice(&self.sessions.password(session));
        self.send(
            conn,
            &ConnectResponse { protocol_version: 0, timeout_ms, session_id: session, passwd: Some(passwd), read_only },
        );
    }

    // ---- sessions ------------------------------------------------------------------

    /// Ends a session as closeSession does: one zxid, every ephemeral
    /// deleted with it (watches fire), the session forgotten.
    pub(crate) fn kill_session(&mut self, now: Instant, session: i64) {
        let zxid = self.next_zxid();
        let mut changes = Vec::new();
        for p in self.tree.ephemerals(session) {
            self.tree.delete(&p, zxid, &mut changes);
        }
        self.sessions.remove(session);
        self.fire(&changes, zxid);
        self.schedule_reaper(now);
    }

    fn expire(&mut self, now: Instant, session: i64) {
        let conn = self.sessions.get(session).and_then(|s| s.conn);
        self.kill_session(now, session);
        if let Some(conn) = conn {
            self.close(conn, CloseReason::SessionExpired(session));
        }
    }

    // ---- containers and TTL nodes --------------------------------------------------

    /// Arms the reaper for the earliest candidate, keeping an earlier schedule.
    pub(crate) fn schedule_reaper(&mut self, now: Instant) {
        let delay = self.config.container_delay;
        let mut at = None;
        if !self.tree.reap_candidates(self.wall_ms(now)).is_empty() {
            at = Some(now + delay);
        }
        if let Some(wall) = self.tree.next_ttl_expiry() {
            let since_origin = wall.saturating_sub(self.config.epoch_ms).max(0);
            let due = Instant::from_millis(u64::try_from(since_origin).unwrap_or(0)).max(now) + delay;
            at = Some(at.map_or(due, |a: Instant| a.min(due)));
        }
        self.reap_at = match (self.reap_at, at) {
            (Some(a), Some(b)) => Some(a.min(b)),
            (a, b) => a.or(b),
        };
    }

    /// One pass of the container manager: each candidate is deleted in its
    /// own transaction (deleteContainer).
    fn reap(&mut self, now: Instant) {
        self.reap_at = None;
        for p in self.tree.reap_candidates(self.wall_ms(now)) {
            let zxid = self.next_zxid();
            let mut changes = Vec::new();
            self.tree.delete(&p, zxid, &mut changes);
            self.fire(&changes, zxid);
        }
        self.schedule_reaper(now);
    }

    // ---- output --------------------------------------------------------------------

    /// Takes the next zxid (a transaction).
    pub(crate) fn next_zxid(&mut self) -> i64 {
        self.zxid += 1;
        self.zxid
    }

    /// Queues one frame for `conn`.
    pub(crate) fn send(&mut self, conn: ConnId, msg: &impl Encode) {
        let Some(c) = self.conns.get_mut(&conn) else { return };
        if c.is_closed() {
            return;
        }
        if c.isolated.is_some() && self.answering != Some(conn) {
            let mut bytes = BytesMut::new();
            if encode_frame(msg, i32::MAX as usize, &mut bytes).is_ok() {
                self.hold_output(conn, &bytes);
            }
            return;
        }
        // The server sends whatever it must; the client enforces its own limit.
        if encode_frame(msg, i32::MAX as usize, &mut c.out).is_ok() && !c.queued && !c.out.is_empty() {
            c.queued = true;
            self.writable.push_back(conn);
        }
    }

    /// Queues a reply with an explicit header zxid.
    pub(crate) fn send_reply(&mut self, conn: ConnId, xid: Xid, zxid: i64, err: ErrorCode, response: Option<Response>) {
        let response = if err.is_ok() { response } else { None };
        self.send(conn, &ServerMessage::Reply { header: ReplyHeader { xid, zxid, err }, response });
    }

    /// Queues a reply stamped with the last zxid.
    pub(crate) fn reply(&mut self, conn: ConnId, xid: Xid, result: Result<Response, ErrorCode>) {
        let zxid = self.zxid;
        match result {
            Ok(response) => self.send_reply(conn, xid, zxid, ErrorCode::OK, Some(response)),
            Err(err) => self.send_reply(conn, xid, zxid, err, None),
        }
    }

    /// Queues the notifications of applied changes. A watcher whose
    /// connection may not READ the node (the deleted node's last ACL, the
    /// parent's for NodeChildrenChanged) is not told, though its watch is
    /// used up, as ZooKeeper 3.8.4 and Debian's 3.8.0 (CVE-2024-23944) do.
    pub(crate) fn fire(&mut self, changes: &[Change], txn_zxid: i64) {
        let zxid = if self.config.notification_txn_zxid { txn_zxid } else { -1 };
        for change in changes {
            for fired in self.watches.fire(change) {
                let acl = match change {
                    Change::Deleted(_, acl) if fired.event == zoolock_wire::EventType::NODE_DELETED => {
                        Some(acl.clone())
                    }
                    _ => self.tree.get(&fired.path).map(|n| n.acl.clone()),
                };
                if acl.is_some_and(|acl| self.allowed(fired.conn, &acl, zoolock_wire::Perms::READ).is_err()) {
                    continue;
                }
                self.notify(fired, zxid);
            }
        }
    }

    /// Queues one notification.
    pub(crate) fn notify(&mut self, fired: Fired, zxid: i64) {
        let event = WatcherEvent { event_type: fired.event, state: KeeperState::SYNC_CONNECTED, path: fired.path };
        let header = ReplyHeader { xid: Xid::NOTIFICATION, zxid, err: ErrorCode::OK };
        self.send(fired.conn, &ServerMessage::Notification { header, event });
    }

    /// Closes `conn` from the server side, after the bytes already queued.
    pub(crate) fn close(&mut self, conn: ConnId, reason: CloseReason) {
        if self.hold_close(conn, &reason) {
            return;
        }
        let Some(c) = self.conns.get_mut(&conn) else { return };
        if c.is_closed() {
            return;
        }
        let session = c.session();
        c.state = ConnState::Closed;
        if c.out.is_empty() {
            self.conns.remove(&conn);
        }
        self.unbind(conn, session);
        self.close_reasons.insert(conn, reason);
        self.closing.push_back(conn);
    }

    fn unbind(&mut self, conn: ConnId, session: Option<i64>) {
        self.watches.remove_conn(conn);
        if let Some(s) = session.and_then(|id| self.sessions.get_mut(id)) {
            if s.conn == Some(conn) {
                s.conn = None;
            }
        }
    }
}
