//! Transcript tests of the sans-IO [`Session`] on virtual time: every state
//! transition and timer, with the exact commands, bytes and events it yields.
//!
//! Unless a test says otherwise the session asks for a 10 s timeout, the fake
//! server negotiates 9 s (so T/3 = 3 s and 2T/3 = 6 s), and reconnect jitter is
//! zero so that every deadline is exact.

mod support;

use std::time::Duration;

use support::{
    PASSWD, Sim, at, config, connect_response, end_events, err, expired_response, notification, ok, p, reply_ev,
    split_frames, stat, state_ev, watch_ev,
};
use zoolock_core::wire::{
    Acl, AuthPacket, Bytes, BytesMut, ConnectRequest, CreateMode, CreateRequest, DEFAULT_MAX_FRAME_LEN, DecodeError,
    DecodeErrorKind, ErrorCode, EventType, OpCode, PASSWORD_LEN, Request, RequestFrame, Response, SetWatches, Xid,
};
use zoolock_core::{
    ApiMisuse, ConnectionState, HostAddr, HostId, Instant, IoCommand, Misbehavior, Op, RequestError, RequestId,
    SessionError, SessionStatus, WatchKind, WatcherId,
};

const NEGOTIATED: i32 = 9_000;

fn hex(s: &str) -> Vec<u8> {
    let s: String = s.chars().filter(|c| !c.is_whitespace()).collect();
    (0..s.len()).step_by(2).map(|i| u8::from_str_radix(&s[i..i + 2], 16).unwrap()).collect()
}

fn addr(host: &str, port: u16) -> HostAddr {
    HostAddr { host: host.into(), port }
}

fn frame(xid: i32, request: Request) -> RequestFrame {
    RequestFrame::new(Xid(xid), request)
}

fn get_data(path: &str, watch: bool) -> Request {
    Request::GetData(zoolock_core::wire::PathWatchRequest { path: path.into(), watch })
}

fn exists(path: &str, watch: bool) -> Request {
    Request::Exists(zoolock_core::wire::PathWatchRequest { path: path.into(), watch })
}

fn get_children(path: &str, watch: bool) -> Request {
    Request::GetChildren2(zoolock_core::wire::PathWatchRequest { path: path.into(), watch })
}

fn delete(path: &str) -> Request {
    Request::Delete(zoolock_core::wire::DeleteRequest { path: path.into(), version: -1 })
}

fn create2(path: &str, mode: CreateMode) -> Request {
    Request::Create2(CreateRequest {
        path: path.into(),
        data: Some(Bytes::new()),
        acl: Acl::open_unsafe(),
        flags: mode,
    })
}

fn data(v: &'static [u8], zxid: i64) -> Response {
    Response::Data { data: Some(Bytes::from_static(v)), stat: stat(zxid) }
}

fn children(names: &[&str], zxid: i64) -> Response {
    Response::Children2 { children: names.iter().map(|n| String::from(*n)).collect(), stat: stat(zxid) }
}

fn ping_frame() -> RequestFrame {
    RequestFrame::new(Xid::PING, Request::Ping)
}

fn auth_frame(scheme: &str, auth: &'static [u8]) -> RequestFrame {
    RequestFrame::new(
        Xid::AUTH,
        Request::Auth(AuthPacket { auth_type: 0, scheme: scheme.into(), auth: Some(Bytes::from_static(auth)) }),
    )
}

fn reconnect_request(last_zxid: i64) -> ConnectRequest {
    ConnectRequest {
        protocol_version: 0,
        last_zxid_seen: last_zxid,
        timeout_ms: 10_000,
        session_id: 0x1234,
        passwd: Some(Bytes::from_static(&PASSWD)),
        read_only: Some(false),
    }
}

fn loss(id: u64) -> support::Ev {
    reply_ev(id, Err(RequestError::ConnectionLoss))
}

/// A session connected at t=10 with T = 9 s and nothing in flight.
fn connected(connect: &str) -> Sim {
    let mut sim = Sim::new(config(connect, 10_000));
    assert_eq!(sim.establish(NEGOTIATED), []);
    sim
}

/// A session [`connected`] to `connect` whose transport dropped at `ms`:
/// Suspended is reported.
fn suspended(connect: &str, ms: u64) -> Sim {
    let mut sim = connected(connect);
    sim.set(ms);
    sim.disconnected();
    assert_eq!(sim.events(), [state_ev(ConnectionState::Suspended)]);
    sim
}

/// A session [`connected`] to `h:1` that sent these watching reads,
/// `(op, watcher)` in order, not yet answered.
fn watching(reads: &[(Op, u64)]) -> Sim {
    let mut sim = connected("h:1");
    for (op, watcher) in reads {
        sim.submit_watch(op.clone(), *watcher);
    }
    assert_eq!(sim.sent().len(), reads.len());
    sim
}

/// [`watching`], the reads' replies `(zxid, reply)` (xids 1, 2, …) then read
/// at once; each is reported.
fn watched(reads: &[(Op, u64, i64, Result<Response, ErrorCode>)]) -> Sim {
    let sent: Vec<(Op, u64)> = reads.iter().map(|(op, watcher, ..)| (op.clone(), *watcher)).collect();
    let mut sim = watching(&sent);
    let mut bytes = BytesMut::new();
    for (xid, (.., zxid, reply)) in (1..).zip(reads) {
        bytes.extend_from_slice(&match reply {
            Ok(response) => ok(xid, *zxid, response.clone()),
            Err(code) => err(xid, *zxid, *code),
        });
    }
    sim.feed_ok(&bytes);
    assert_eq!(sim.events().len(), reads.len());
    sim
}

fn path_req(path: &str) -> zoolock_core::wire::PathRequest {
    zoolock_core::wire::PathRequest { path: path.into() }
}

// The tests, one file per concern: tests/session/<concern>.rs. This file stays
// the crate root (not tests/session/main.rs) so that `mod support;` above finds
// tests/support/mod.rs, which other test files share.
mod session {
    mod auth;
    mod close;
    mod expiry;
    mod frames;
    mod handshake;
    mod misbehaving;
    mod reconnect;
    mod timers;
    mod watches;
}
