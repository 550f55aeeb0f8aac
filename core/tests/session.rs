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

// ---- 1. first connect ------------------------------------------------------------------

#[test]
fn first_connect_dials_then_sends_exactly_one_connect_request() {
    let mut sim = Sim::new(config("127.0.0.1:2181", 10_000));
    assert_eq!(sim.s.status(), SessionStatus::Disconnected);
    assert_eq!(sim.s.poll_timeout(), Some(at(0)));
    sim.assert_quiet();

    sim.tick_at(0);
    assert_eq!(sim.io(), [IoCommand::Connect { host: HostId(0), addr: addr("127.0.0.1", 2181) }]);
    assert_eq!(sim.s.status(), SessionStatus::Connecting);
    assert_eq!(sim.s.poll_timeout(), Some(at(10_000)), "connect timeout T/1 host");
    sim.assert_quiet();

    sim.set(5);
    sim.connected();
    assert_eq!(sim.s.status(), SessionStatus::Handshaking);
    let bytes = sim.tx();
    let expected = hex("0000002d 00000000 0000000000000000 00002710 0000000000000000 00000010
         00000000000000000000000000000000 00");
    assert_eq!(&bytes[..], &expected[..], "a 45-byte ConnectRequest behind its length prefix");
    let frames = split_frames(bytes);
    assert_eq!(
        ConnectRequest::decode(&frames[0]).unwrap(),
        ConnectRequest {
            protocol_version: 0,
            last_zxid_seen: 0,
            timeout_ms: 10_000,
            session_id: 0,
            passwd: Some(Bytes::from_static(&[0; PASSWORD_LEN])),
            read_only: Some(false),
        }
    );
    // The handshake deadline is the one the connect attempt started with.
    assert_eq!(sim.s.poll_timeout(), Some(at(10_000)));
    sim.assert_quiet();

    sim.set(10);
    sim.feed_ok(&connect_response(NEGOTIATED, 0x1234, Some(false)));
    assert_eq!(sim.events(), [state_ev(ConnectionState::Connected)]);
    assert_eq!(sim.s.status(), SessionStatus::Connected);
    assert_eq!(sim.s.session_id(), 0x1234);
    assert_eq!(sim.s.negotiated_timeout(), Some(Duration::from_millis(9_000)));
    assert_eq!(sim.s.connected_host(), Some(HostId(0)));
    assert!(!sim.s.is_read_only());
    // Ping after T/3 from the last send (t=5), read timeout 2T/3 after the last receive (t=10).
    assert_eq!(sim.s.poll_timeout(), Some(at(3_005)));
    sim.assert_quiet();
}

#[test]
fn requests_wait_for_the_handshake_then_go_out_in_submit_order_with_the_chroot() {
    let mut sim = Sim::new(config("127.0.0.1:2181/app", 10_000));
    let a = sim.submit(Op::get_data(&p("/a"), false));
    sim.tick_at(0);
    assert!(matches!(sim.io().as_slice(), [IoCommand::Connect { .. }]));
    let b = sim.submit(Op::create(&p("/b"), Bytes::new(), Acl::open_unsafe(), CreateMode::PERSISTENT));
    let create1 = Request::Create(CreateRequest {
        path: "/c-".into(),
        data: Some(Bytes::new()),
        acl: Acl::open_unsafe(),
        flags: CreateMode::PERSISTENT_SEQUENTIAL,
    });
    let c = sim.submit(Op::from_request(create1).unwrap());
    sim.assert_quiet();
    sim.set(5);
    sim.connected();
    let _ = sim.sent_connect();
    let d = sim.submit(Op::get_data(&p("/"), false));
    let e = sim.submit(Op::delete(&p("/e"), Some(3)));
    assert_eq!([a, b, c, d, e].map(RequestId::get), [0, 1, 2, 3, 4]);
    sim.assert_quiet();

    sim.set(10);
    sim.feed_ok(&connect_response(NEGOTIATED, 0x1234, Some(false)));
    assert_eq!(sim.events(), [state_ev(ConnectionState::Connected)]);
    assert_eq!(
        sim.sent(),
        [
            frame(1, get_data("/app/a", false)),
            frame(2, create2("/app/b", CreateMode::PERSISTENT)),
            frame(
                3,
                Request::Create(CreateRequest {
                    path: "/app/c-".into(),
                    data: Some(Bytes::new()),
                    acl: Acl::open_unsafe(),
                    flags: CreateMode::PERSISTENT_SEQUENTIAL,
                })
            ),
            frame(4, get_data("/app", false)),
            frame(5, Request::Delete(zoolock_core::wire::DeleteRequest { path: "/app/e".into(), version: 3 })),
        ]
    );
    assert_eq!(sim.s.in_flight(), 5);

    sim.set(20);
    let mut replies = ok(1, 11, data(b"va", 3));
    replies.extend_from_slice(&ok(2, 12, Response::Create2 { path: "/app/b".into(), stat: stat(12) }));
    replies.extend_from_slice(&ok(3, 13, Response::Path("/app/c-0000000007".into())));
    replies.extend_from_slice(&ok(4, 13, data(b"root", 1)));
    replies.extend_from_slice(&err(5, 13, ErrorCode::BAD_VERSION));
    sim.feed_ok(&replies);
    assert_eq!(
        sim.events(),
        [
            reply_ev(0, Ok(data(b"va", 3))),
            reply_ev(1, Ok(Response::Create2 { path: "/b".into(), stat: stat(12) })),
            reply_ev(2, Ok(Response::Path("/c-0000000007".into()))),
            reply_ev(3, Ok(data(b"root", 1))),
            reply_ev(4, Err(RequestError::Server(ErrorCode::BAD_VERSION))),
        ]
    );
    assert_eq!(sim.s.in_flight(), 0);
    assert_eq!(sim.s.last_zxid(), 13);

    // Once connected, a submit goes out at once with the next xid.
    let f = sim.submit(Op::exists(&p("/f"), false));
    assert_eq!(f.get(), 5);
    assert_eq!(sim.sent(), [frame(6, exists("/app/f", false))]);
    sim.assert_quiet();
}

#[test]
fn chroot_is_stripped_from_notification_paths() {
    let mut sim = connected("127.0.0.1:2181/app");
    sim.submit_watch(Op::get_data(&p("/"), true), 1);
    sim.submit_watch(Op::get_children(&p("/w"), true), 2);
    assert_eq!(sim.sent(), [frame(1, get_data("/app", true)), frame(2, get_children("/app/w", true))]);
    let mut bytes = ok(1, 5, data(b"", 5));
    bytes.extend_from_slice(&ok(2, 5, children(&["x"], 5)));
    bytes.extend_from_slice(&notification(EventType::NODE_DATA_CHANGED, "/app"));
    bytes.extend_from_slice(&notification(EventType::NODE_CHILDREN_CHANGED, "/app/w"));
    sim.feed_ok(&bytes);
    assert_eq!(
        sim.events(),
        [
            reply_ev(0, Ok(data(b"", 5))),
            reply_ev(1, Ok(children(&["x"], 5))),
            watch_ev(1, EventType::NODE_DATA_CHANGED, "/"),
            watch_ev(2, EventType::NODE_CHILDREN_CHANGED, "/w"),
        ]
    );
}

// ---- 2. handshake variants -------------------------------------------------------------

#[test]
fn connect_response_without_the_read_only_byte_is_accepted() {
    let mut sim = Sim::new(config("h:1", 10_000));
    sim.tick_at(0);
    sim.dial_connected();
    let short = connect_response(NEGOTIATED, 0x99, None);
    assert_eq!(short.len(), 4 + 36);
    sim.feed_ok(&short);
    assert_eq!(sim.events(), [state_ev(ConnectionState::Connected)]);
    assert_eq!(sim.s.session_id(), 0x99);
    assert!(!sim.s.is_read_only());
}

#[test]
fn read_only_server_gives_connected_read_only() {
    let mut cfg = config("h:1", 10_000);
    cfg.can_be_read_only = true;
    let mut sim = Sim::new(cfg);
    sim.tick_at(0);
    let _ = sim.io();
    sim.connected();
    assert_eq!(sim.sent_connect().read_only, Some(true));
    sim.feed_ok(&connect_response(NEGOTIATED, 0x99, Some(true)));
    assert_eq!(sim.events(), [state_ev(ConnectionState::ConnectedReadOnly)]);
    assert!(sim.s.is_read_only());
    assert_eq!(sim.s.status(), SessionStatus::Connected);

    // A later read-write server: Reconnected, and the flag clears.
    sim.set(100);
    sim.disconnected();
    assert_eq!(sim.events(), [state_ev(ConnectionState::Suspended)]);
    sim.tick();
    sim.dial_connected();
    sim.feed_ok(&connect_response(NEGOTIATED, 0x99, Some(false)));
    assert_eq!(sim.events(), [state_ev(ConnectionState::Reconnected)]);
    assert!(!sim.s.is_read_only());
}

// ---- 3. pings and lastZxid -------------------------------------------------------------

/// A handshake answered after a third of the timeout (the ConnectRequest
/// stalled on its way): the ping that is already due goes out with the
/// handshake's answer, and no timer is handed out already due (found by the
/// simulator, seed 217328).
#[test]
fn late_handshake_pings_at_once() {
    let mut sim = Sim::new(config("h:1", 10_000));
    sim.tick_at(0);
    sim.io();
    sim.set(5);
    sim.connected();
    sim.sent_connect();
    sim.set(4_000);
    sim.feed_ok(&connect_response(NEGOTIATED, 0x1234, Some(false)));
    assert_eq!(sim.events(), [state_ev(ConnectionState::Connected)]);
    assert_eq!(sim.sent(), [ping_frame()], "T/3 = 3 s passed since the ConnectRequest");
    assert_eq!(sim.s.poll_timeout(), Some(at(7_000)), "the next ping T/3 after this one");
    support::check_deadline(&sim.s, at(4_000));
}

#[test]
fn ping_after_a_third_of_the_timeout_without_sending() {
    let mut sim = connected("h:1");
    // Last send t=5 (ConnectRequest), last receive t=10.
    sim.tick_at_deadline(3_005);
    let bytes = sim.tx();
    assert_eq!(&bytes[..], &hex("00000008 fffffffe 0000000b")[..], "ping: xid -2, op 11");
    sim.assert_quiet();
    assert_eq!(sim.s.in_flight(), 0, "pings are not in the FIFO");
    // Next ping T/3 later, unless the read timeout (t=10 + 6 s) comes first.
    assert_eq!(sim.s.poll_timeout(), Some(at(6_005)));

    sim.set(3_100);
    sim.feed_ok(&ok(-2, 777, Response::Empty));
    sim.assert_quiet();
    assert_eq!(sim.s.last_zxid(), 0, "a ping reply never moves lastZxid");
    assert_eq!(sim.s.poll_timeout(), Some(at(6_005)));

    // Any request counts as traffic and pushes the next ping back.
    sim.set(4_000);
    sim.submit(Op::sync(&p("/s")));
    assert_eq!(sim.sent().len(), 1);
    sim.tick_at_deadline(7_000);
    assert_eq!(sim.sent(), [ping_frame()]);
    // The ping reply comes back in order before the sync reply; both are matched.
    sim.set(7_100);
    let mut bytes = ok(-2, 5, Response::Empty);
    bytes.extend_from_slice(&ok(1, 6, Response::Path("/s".into())));
    sim.feed_ok(&bytes);
    assert_eq!(sim.events(), [reply_ev(0, Ok(Response::Path("/s".into())))]);
    assert_eq!(sim.s.poll_timeout(), Some(at(10_000)));
    assert_eq!(sim.s.last_zxid(), 6);
}

#[test]
fn last_zxid_advances_only_from_ordinary_replies_with_positive_zxid() {
    let mut sim = connected("h:1");
    sim.s.add_auth(sim.now, "digest", Bytes::from_static(b"u:p")).unwrap();
    sim.submit_watch(Op::get_data(&p("/a"), true), 1);
    sim.submit(Op::delete(&p("/b"), None));
    sim.submit(Op::delete(&p("/c"), None));
    sim.submit(Op::delete(&p("/d"), None));
    assert_eq!(sim.sent().len(), 5);

    sim.feed_ok(&err(-4, 300, ErrorCode::OK));
    assert_eq!(sim.s.last_zxid(), 0, "auth replies do not count");
    sim.feed_ok(&ok(1, 40, data(b"", 40)));
    assert_eq!(sim.s.last_zxid(), 40);
    sim.feed_ok(&ok(-2, 500, Response::Empty));
    assert_eq!(sim.s.last_zxid(), 40, "ping replies do not count");
    let mut note = notification(EventType::NODE_DATA_CHANGED, "/a");
    // A 3.9 server puts the txn zxid in the notification header: still not counted.
    note[8..16].copy_from_slice(&600i64.to_be_bytes()); // after the prefix and xid
    sim.feed_ok(&note);
    assert_eq!(sim.s.last_zxid(), 40, "notifications do not count");
    sim.feed_ok(&err(2, 41, ErrorCode::NO_NODE));
    assert_eq!(sim.s.last_zxid(), 41, "error replies count");
    sim.feed_ok(&err(3, 0, ErrorCode::NO_NODE));
    sim.feed_ok(&err(4, -1, ErrorCode::NO_NODE));
    assert_eq!(sim.s.last_zxid(), 41, "zxid <= 0 never counts");
    assert_eq!(
        sim.events(),
        [
            reply_ev(0, Ok(data(b"", 40))),
            watch_ev(1, EventType::NODE_DATA_CHANGED, "/a"),
            reply_ev(1, Err(RequestError::Server(ErrorCode::NO_NODE))),
            reply_ev(2, Err(RequestError::Server(ErrorCode::NO_NODE))),
            reply_ev(3, Err(RequestError::Server(ErrorCode::NO_NODE))),
        ]
    );
}

// ---- 4. read timeout, suspension and reconnect -----------------------------------------

#[test]
fn read_timeout_suspends_then_reconnect_resends_auth_watches_and_queued_requests() {
    let mut sim = connected("127.0.0.1:2181/app");
    sim.set(100);
    sim.s.add_auth(sim.now, "digest", Bytes::from_static(b"u:p")).unwrap();
    sim.submit_watch(Op::get_data(&p("/d"), true), 1);
    sim.submit_watch(Op::exists(&p("/e"), true), 2);
    sim.submit_watch(Op::get_children(&p("/c"), true), 3);
    assert_eq!(
        sim.sent(),
        [
            auth_frame("digest", b"u:p"),
            frame(1, get_data("/app/d", true)),
            frame(2, exists("/app/e", true)),
            frame(3, get_children("/app/c", true)),
        ]
    );
    sim.set(200);
    let mut bytes = err(-4, 0, ErrorCode::OK);
    bytes.extend_from_slice(&ok(1, 20, data(b"d", 20)));
    bytes.extend_from_slice(&err(2, 21, ErrorCode::NO_NODE));
    bytes.extend_from_slice(&ok(3, 22, children(&[], 22)));
    sim.feed_ok(&bytes);
    assert_eq!(
        sim.events(),
        [
            reply_ev(0, Ok(data(b"d", 20))),
            reply_ev(1, Err(RequestError::Server(ErrorCode::NO_NODE))),
            reply_ev(2, Ok(children(&[], 22))),
        ]
    );
    assert_eq!(sim.s.last_zxid(), 22);

    sim.set(300);
    let lost = sim.submit(Op::get_data(&p("/x"), false));
    assert_eq!(sim.sent(), [frame(4, get_data("/app/x", false))]);
    // Ping at 300 + 3 s; the server stays silent.
    sim.tick_at(3_300);
    assert_eq!(sim.sent(), [ping_frame()]);
    // Read timeout: 2T/3 after the last receive at t=200.
    sim.tick_at_deadline(6_200);
    assert_eq!(sim.io(), [IoCommand::Close, IoCommand::Connect { host: HostId(0), addr: addr("127.0.0.1", 2181) }]);
    assert_eq!(sim.events(), [loss(lost.get()), state_ev(ConnectionState::Suspended)]);
    assert_eq!(sim.s.status(), SessionStatus::Connecting);
    assert_eq!(sim.s.in_flight(), 0);
    assert_eq!(sim.tx().len(), 0);

    // Requests submitted while suspended are held, not failed.
    sim.set(6_300);
    let q1 = sim.submit(Op::delete(&p("/q"), None));
    let q2 = sim.submit_watch(Op::get_data(&p("/d2"), true), 1);
    sim.assert_quiet();

    sim.set(6_400);
    sim.connected();
    assert_eq!(sim.sent_connect(), reconnect_request(22));
    sim.set(6_500);
    sim.feed_ok(&connect_response(NEGOTIATED, 0x1234, Some(false)));
    assert_eq!(sim.events(), [state_ev(ConnectionState::Reconnected)]);
    assert_eq!(
        sim.sent(),
        [
            auth_frame("digest", b"u:p"),
            frame(
                5,
                Request::SetWatches(SetWatches {
                    relative_zxid: 22,
                    data_watches: vec!["/app/d".into()],
                    exist_watches: vec!["/app/e".into()],
                    child_watches: vec!["/app/c".into()],
                })
            ),
            frame(6, delete("/app/q")),
            frame(7, get_data("/app/d2", true)),
        ]
    );
    // Catch-up notification, then the setWatches reply (silent), then the queued replies.
    let mut bytes = err(-4, 0, ErrorCode::OK);
    bytes.extend_from_slice(&notification(EventType::NODE_DATA_CHANGED, "/app/d"));
    bytes.extend_from_slice(&ok(5, 30, Response::Empty));
    bytes.extend_from_slice(&ok(6, 31, Response::Empty));
    bytes.extend_from_slice(&ok(7, 31, data(b"2", 31)));
    sim.feed_ok(&bytes);
    assert_eq!(
        sim.events(),
        [
            watch_ev(1, EventType::NODE_DATA_CHANGED, "/d"),
            reply_ev(q1.get(), Ok(Response::Empty)),
            reply_ev(q2.get(), Ok(data(b"2", 31))),
        ]
    );
    assert_eq!(sim.s.last_zxid(), 31);
    assert_eq!(sim.s.status(), SessionStatus::Connected);
}

#[test]
fn reconnect_without_watches_or_auth_sends_only_the_queue() {
    let mut sim = suspended("h:1", 1_000);
    assert_eq!(sim.io(), [], "the driver reported the drop; no Close is owed");
    let q = sim.submit(Op::sync(&p("/a")));
    sim.tick();
    let _ = sim.io();
    sim.connected();
    assert_eq!(sim.sent_connect(), reconnect_request(0));
    sim.feed_ok(&connect_response(NEGOTIATED, 0x1234, Some(false)));
    assert_eq!(sim.events(), [state_ev(ConnectionState::Reconnected)]);
    assert_eq!(sim.sent(), [frame(1, Request::Sync(zoolock_core::wire::PathRequest { path: "/a".into() }))]);
    sim.feed_ok(&ok(1, 3, Response::Path("/a".into())));
    assert_eq!(sim.events(), [reply_ev(q.get(), Ok(Response::Path("/a".into())))]);
}

#[test]
fn resumed_session_with_a_different_id_is_misbehaviour() {
    let mut sim = suspended("a:1,b:2", 100);
    sim.tick();
    assert!(matches!(sim.io().as_slice(), [IoCommand::Connect { host: HostId(1), .. }]));
    sim.connected();
    let _ = sim.sent_connect();
    let e = sim.feed(&connect_response(NEGOTIATED, 0x9999, Some(false))).unwrap_err();
    assert_eq!(e, SessionError::ServerMisbehaved(Misbehavior::SessionIdChanged { asked: 0x1234, got: 0x9999 }));
    assert_eq!(sim.io(), [IoCommand::Close]);
    assert_eq!(sim.events(), [], "still suspended; no second Suspended");
    assert_eq!(sim.s.session_id(), 0x1234);
    sim.tick();
    assert!(matches!(sim.io().as_slice(), [IoCommand::Connect { host: HostId(0), .. }]));
}

// ---- 5. connect attempts and host rotation ---------------------------------------------

#[test]
fn connect_and_handshake_timeouts_rotate_hosts_and_a_full_cycle_pauses() {
    let mut sim = Sim::new(config("a:1,b:2,c:3", 9_000));
    let mut dialed = Vec::new();
    sim.tick_at(0);
    match sim.io().as_slice() {
        [IoCommand::Connect { host: HostId(0), addr }] => dialed.push(addr.clone()),
        other => panic!("{other:?}"),
    }
    // Connect timeout T/3 hosts = 3 s, while Connecting.
    sim.tick_at_deadline(3_000);
    match sim.io().as_slice() {
        [IoCommand::Close, IoCommand::Connect { host: HostId(1), addr }] => dialed.push(addr.clone()),
        other => panic!("{other:?}"),
    }
    assert_eq!(sim.events(), []);

    // The same deadline covers the handshake.
    sim.set(3_500);
    sim.connected();
    let _ = sim.sent_connect();
    sim.tick_at_deadline(6_000);
    match sim.io().as_slice() {
        [IoCommand::Close, IoCommand::Connect { host: HostId(2), addr }] => dialed.push(addr.clone()),
        other => panic!("{other:?}"),
    }
    assert_eq!(sim.events(), []);
    assert_eq!(sim.tx().len(), 0, "nothing is sent on a fresh socket before handle_connected");

    // The third failure completes a cycle: an extra pause of min(1 s, T/10).
    sim.set(6_100);
    sim.disconnected();
    sim.assert_quiet();
    assert_eq!(sim.s.status(), SessionStatus::Disconnected);
    sim.tick_at_deadline(7_000);
    assert_eq!(sim.io(), [IoCommand::Connect { host: HostId(0), addr: dialed[0].clone() }]);

    let mut sorted = dialed.clone();
    sorted.sort_by_key(|a| a.port);
    assert_eq!(sorted, [addr("a", 1), addr("b", 2), addr("c", 3)], "each host once per cycle");
    assert_eq!(sim.s.session_id(), 0);
    assert_eq!(sim.events(), [], "failed attempts before a session are silent");
}

#[test]
fn eof_before_connect_response_tries_the_next_host_without_expiry() {
    let mut sim = Sim::new(config("a:1,b:2", 10_000));
    sim.submit(Op::sync(&p("/x")));
    sim.tick_at(0);
    assert!(matches!(sim.io().as_slice(), [IoCommand::Connect { host: HostId(0), .. }]));
    sim.set(5);
    sim.connected();
    let _ = sim.sent_connect();
    sim.set(6);
    sim.disconnected();
    sim.assert_quiet();
    assert_eq!(sim.s.status(), SessionStatus::Disconnected);
    assert_eq!(sim.s.poll_timeout(), Some(at(6)), "jitter is zero: dial again at once");
    sim.tick();
    assert!(matches!(sim.io().as_slice(), [IoCommand::Connect { host: HostId(1), .. }]));
    sim.set(7);
    sim.connected();
    let _ = sim.sent_connect();
    sim.feed_ok(&connect_response(NEGOTIATED, 0x1234, Some(false)));
    assert_eq!(sim.events(), [state_ev(ConnectionState::Connected)]);
    assert_eq!(sim.sent().len(), 1, "the queued request survived the refusal");

    // A refusal while reconnecting an existing session: still no expiry, no second Suspended.
    sim.set(100);
    sim.disconnected();
    assert_eq!(sim.events(), [loss(0), state_ev(ConnectionState::Suspended)]);
    sim.tick();
    assert!(matches!(sim.io().as_slice(), [IoCommand::Connect { host: HostId(0), .. }]));
    sim.connected();
    assert_eq!(sim.sent_connect(), reconnect_request(0));
    sim.set(101);
    sim.disconnected();
    sim.assert_quiet();
    assert_eq!(sim.s.status(), SessionStatus::Disconnected);
    sim.tick();
    assert!(matches!(sim.io().as_slice(), [IoCommand::Connect { host: HostId(1), .. }]));
    sim.connected();
    assert_eq!(sim.sent_connect(), reconnect_request(0));
    sim.feed_ok(&connect_response(NEGOTIATED, 0x1234, Some(false)));
    assert_eq!(sim.events(), [state_ev(ConnectionState::Reconnected)]);
}

#[test]
fn a_successful_handshake_resets_the_failed_cycle() {
    let mut sim = Sim::new(config("a:1,b:2", 9_000));
    sim.tick_at(0);
    let _ = sim.io();
    sim.disconnected(); // host 0 refused: 1 of 2
    sim.tick();
    assert!(matches!(sim.io().as_slice(), [IoCommand::Connect { host: HostId(1), .. }]));
    sim.connected();
    let _ = sim.sent_connect();
    sim.feed_ok(&connect_response(NEGOTIATED, 0x1234, Some(false)));
    assert_eq!(sim.events(), [state_ev(ConnectionState::Connected)]);
    sim.set(50);
    sim.disconnected();
    assert_eq!(sim.events(), [state_ev(ConnectionState::Suspended)]);
    sim.tick();
    assert!(matches!(sim.io().as_slice(), [IoCommand::Connect { host: HostId(0), .. }]));
    sim.disconnected(); // 1 of 2 again: no pause
    assert_eq!(sim.s.poll_timeout(), Some(at(50)));
    sim.tick();
    assert!(matches!(sim.io().as_slice(), [IoCommand::Connect { host: HostId(1), .. }]));
    sim.disconnected(); // 2 of 2: pause min(1 s, T/10)
    assert_eq!(sim.s.poll_timeout(), Some(at(950)));
}

/// The session of [`config`] that gives up on a first cycle of failed dials.
fn giving_up(connect: &str) -> Sim {
    Sim::new(config(connect, 9_000).with_give_up_unreachable(true))
}

/// Takes the dial the session asked for, to `host`, and fails it.
fn refuse(sim: &mut Sim, host: usize) {
    match sim.io().as_slice() {
        [IoCommand::Connect { host: HostId(h), .. }] => assert_eq!(*h, host),
        other => panic!("{other:?}"),
    }
    sim.disconnected();
}

#[test]
fn a_cycle_of_failed_dials_before_any_session_ends_it_unreachable() {
    let mut sim = giving_up("a:1,b:2,c:3");
    let queued = sim.submit(Op::sync(&p("/x")));
    sim.tick_at(0);
    refuse(&mut sim, 0);
    sim.assert_quiet();
    assert_eq!(sim.s.poll_timeout(), Some(at(0)), "jitter is zero: the next host at once");
    sim.set(40);
    sim.tick();
    refuse(&mut sim, 1);
    assert_eq!(sim.events(), []);
    sim.tick();
    assert_eq!(sim.s.status(), SessionStatus::Connecting, "two of three hosts: not a cycle yet");
    refuse(&mut sim, 2);
    // The third failed dial completes the cycle: no pause, no further dial.
    assert_eq!(sim.events(), end_events(&[queued.get()], RequestError::Unreachable, ConnectionState::Unreachable));
    assert_eq!(sim.io(), [], "the socket was already gone");
    sim.assert_ended(SessionStatus::Unreachable);
    assert_eq!(RequestError::Unreachable.code(), ErrorCode::CONNECTION_LOSS, "a local condition, no server code");
}

#[test]
fn without_give_up_failed_dials_keep_trying() {
    let mut sim = Sim::new(config("a:1", 9_000));
    sim.tick_at(0);
    for cycle in 0..5 {
        refuse(&mut sim, 0);
        sim.assert_quiet();
        let next = 900 * (cycle + 1);
        sim.tick_at_deadline(next);
    }
    assert_eq!(sim.s.status(), SessionStatus::Connecting);
}

#[test]
fn a_silent_host_or_a_timed_out_dial_keeps_the_cycle_trying() {
    // Host 0 refuses; host 1 accepts and never answers the handshake.
    let mut sim = giving_up("a:1,b:2");
    sim.tick_at(0);
    refuse(&mut sim, 0);
    sim.tick();
    sim.dial_connected();
    sim.tick_at_deadline(4_500); // T/2 hosts
    assert!(matches!(sim.io().as_slice(), [IoCommand::Close]));
    sim.assert_quiet();
    assert_eq!(sim.s.status(), SessionStatus::Disconnected, "one dial got through: try again after the pause");

    // Host 0 refuses again; host 1's dial never completes, and the session times it out.
    sim.tick_at_deadline(5_400);
    refuse(&mut sim, 0);
    sim.tick();
    assert!(matches!(sim.io().as_slice(), [IoCommand::Connect { host: HostId(1), .. }]));
    sim.tick_at_deadline(9_900);
    assert!(matches!(sim.io().as_slice(), [IoCommand::Close]));
    sim.assert_quiet();

    // Host 0 refuses; host 1 accepts and closes before answering.
    sim.tick_at_deadline(10_800);
    refuse(&mut sim, 0);
    sim.tick();
    sim.dial_connected();
    sim.disconnected();
    sim.assert_quiet();
    assert_eq!(sim.s.status(), SessionStatus::Disconnected);

    // A cycle of two failed dials ends it.
    sim.tick_at_deadline(11_700);
    refuse(&mut sim, 0);
    sim.tick();
    refuse(&mut sim, 1);
    assert_eq!(sim.events(), [state_ev(ConnectionState::Unreachable)]);
    sim.assert_ended(SessionStatus::Unreachable);
}

#[test]
fn after_a_session_failed_dials_keep_trying_until_expiry() {
    let mut sim = Sim::new(config("a:1,b:2", 10_000).with_give_up_unreachable(true));
    assert_eq!(sim.establish(NEGOTIATED), []);
    sim.set(100);
    sim.disconnected();
    assert_eq!(sim.events(), [state_ev(ConnectionState::Suspended)]);
    // Cycles of refusals: a pause of T/10 after each, never Unreachable.
    let mut now = 100;
    for _ in 0..9 {
        sim.tick_at(now);
        refuse(&mut sim, 1);
        sim.tick();
        refuse(&mut sim, 0);
        sim.assert_quiet();
        assert_eq!(sim.s.status(), SessionStatus::Disconnected);
        now += 900;
        assert_eq!(sim.s.poll_timeout(), Some(at(now)));
    }
    // 9 s (the negotiated T) after the disconnect the session is lost, as before.
    sim.tick_at(9_100);
    assert_eq!(sim.events(), [state_ev(ConnectionState::Lost)]);
    sim.assert_ended(SessionStatus::Expired);
}

#[test]
fn reconnect_jitter_is_bounded_by_a_tenth_of_the_timeout() {
    let cfg = config("a:1,b:2,c:3", 10_000).with_reconnect_jitter(Duration::from_secs(5));
    let mut sim = Sim::new(cfg);
    sim.establish(NEGOTIATED);
    for _ in 0..50 {
        sim.now = sim.now.saturating_add(Duration::from_millis(10));
        if sim.s.status() == SessionStatus::Connected {
            sim.disconnected();
            let _ = sim.events();
        } else {
            let pause = sim.s.poll_timeout().unwrap().saturating_duration_since(sim.now);
            assert!(pause <= Duration::from_millis(900), "jitter {pause:?} exceeds T/10");
            sim.now = sim.s.poll_timeout().unwrap();
            sim.resume(NEGOTIATED);
            assert_eq!(sim.events(), [state_ev(ConnectionState::Reconnected)]);
        }
    }
}

// ---- 6. expiry from the handshake ------------------------------------------------------

#[test]
fn expired_handshake_fails_everything_and_ends_the_session() {
    let mut sim = Sim::new(config("h:1", 10_000));
    sim.submit(Op::sync(&p("/a")));
    sim.submit(Op::delete(&p("/b"), None));
    sim.tick_at(0);
    let _ = sim.io();
    sim.set(5);
    sim.connected();
    let _ = sim.sent_connect();
    sim.set(10);
    let mut bytes = expired_response();
    bytes.extend_from_slice(&ok(1, 1, Response::Empty)); // ignored: the session is over
    sim.feed_ok(&bytes);
    assert!(sim.inbuf.is_empty());
    assert_eq!(sim.io(), [IoCommand::Close]);
    assert_eq!(sim.events(), end_events(&[0, 1], RequestError::SessionExpired, ConnectionState::Lost));
    sim.assert_ended(SessionStatus::Expired);
    assert_eq!(sim.s.add_auth(sim.now, "digest", Bytes::new()), Err(ApiMisuse::SessionEnded));
    sim.s.close(sim.now);
    sim.tick_at(100_000);
    sim.disconnected();
    sim.assert_quiet();
    assert_eq!(sim.s.status(), SessionStatus::Expired);
}

#[test]
fn expired_handshake_on_reconnect_clears_watches() {
    let mut sim = watching(&[(Op::get_data(&p("/w"), true), 1)]);
    sim.feed_ok(&ok(1, 5, data(b"", 5)));
    let in_flight = sim.submit(Op::sync(&p("/a")));
    assert_eq!(sim.sent().len(), 1);
    let _ = sim.events();
    sim.set(100);
    sim.disconnected();
    assert_eq!(sim.events(), [loss(in_flight.get()), state_ev(ConnectionState::Suspended)]);
    let queued = sim.submit(Op::sync(&p("/b")));
    sim.tick();
    let _ = sim.io();
    sim.connected();
    assert_eq!(sim.sent_connect(), reconnect_request(5));
    sim.feed_ok(&expired_response());
    assert_eq!(sim.io(), [IoCommand::Close]);
    assert_eq!(
        sim.events(),
        [reply_ev(queued.get(), Err(RequestError::SessionExpired)), state_ev(ConnectionState::Lost)]
    );
    assert!(!sim.s.remove_watch("/w", WatchKind::Data, WatcherId(1)), "the watch table was cleared");
    assert_eq!(sim.s.poll_timeout(), None);
}

// ---- 7. client-side expiry -------------------------------------------------------------

#[test]
fn disconnected_for_the_negotiated_timeout_loses_the_session() {
    let mut sim = Sim::new(config("a:1,b:2,c:3", 10_000));
    sim.establish(NEGOTIATED);
    let held = {
        sim.set(1_000);
        sim.disconnected();
        assert_eq!(sim.events(), [state_ev(ConnectionState::Suspended)]);
        sim.submit(Op::sync(&p("/q")))
    };
    // Attempts time out after T/3 = 3 s each; the session expires at 1 000 + 9 000.
    sim.tick_at(1_000);
    assert!(matches!(sim.io().as_slice(), [IoCommand::Connect { host: HostId(1), .. }]));
    sim.tick_at(4_000);
    assert!(matches!(sim.io().as_slice(), [IoCommand::Close, IoCommand::Connect { host: HostId(2), .. }]));
    sim.set(4_100);
    sim.connected();
    assert_eq!(sim.sent_connect(), reconnect_request(0));
    sim.tick_at(7_000);
    assert!(matches!(sim.io().as_slice(), [IoCommand::Close, IoCommand::Connect { host: HostId(0), .. }]));
    assert_eq!(sim.events(), []);
    sim.tick_at_deadline(10_000);
    assert_eq!(sim.io(), [IoCommand::Close]);
    assert_eq!(
        sim.events(),
        [reply_ev(held.get(), Err(RequestError::SessionExpired)), state_ev(ConnectionState::Lost)]
    );
    assert_eq!(sim.s.status(), SessionStatus::Expired);
    assert_eq!(sim.s.poll_timeout(), None);
}

#[test]
fn expiry_deadline_wins_over_a_later_reconnect_pause() {
    // Idle between attempts when T runs out: Lost without a Close (no socket).
    let mut sim = Sim::new(config("a:1", 10_000));
    sim.establish(NEGOTIATED);
    sim.set(1_000);
    sim.disconnected();
    let _ = sim.events();
    for t in [1_000, 2_000, 3_000, 4_000, 5_000, 6_000, 7_000, 8_000, 9_000] {
        sim.tick_at(t);
        assert!(matches!(sim.io().as_slice(), [IoCommand::Connect { .. }]));
        sim.disconnected();
        sim.assert_quiet();
    }
    // One host, so every refusal completes a cycle and pauses T/10: the
    // attempt at 9 900 fails too, the next would be at 10 800, and the
    // expiry at 10 000 comes first.
    sim.tick_at(9_900);
    assert!(matches!(sim.io().as_slice(), [IoCommand::Connect { .. }]));
    sim.disconnected();
    sim.assert_quiet();
    sim.tick_at(9_950);
    sim.assert_quiet();
    assert_eq!(sim.s.poll_timeout(), Some(at(10_000)));
    sim.tick_at(10_000);
    assert_eq!(sim.io(), []);
    assert_eq!(sim.events(), [state_ev(ConnectionState::Lost)]);
}

// ---- 8. -112 reply ---------------------------------------------------------------------

#[test]
fn session_expired_reply_loses_the_session() {
    let mut sim = connected("h:1");
    sim.submit_watch(Op::get_data(&p("/w"), true), 4);
    sim.submit(Op::sync(&p("/a")));
    sim.submit(Op::sync(&p("/b")));
    assert_eq!(sim.sent().len(), 3);
    sim.feed_ok(&err(1, 50, ErrorCode::SESSION_EXPIRED));
    assert_eq!(sim.io(), [IoCommand::Close]);
    assert_eq!(sim.events(), end_events(&[0, 1, 2], RequestError::SessionExpired, ConnectionState::Lost));
    assert_eq!(sim.s.status(), SessionStatus::Expired);
    assert!(!sim.s.remove_watch("/w", WatchKind::Data, WatcherId(4)));
    assert_eq!(sim.s.poll_timeout(), None);
}

// ---- 9. xid matching -------------------------------------------------------------------

#[test]
fn reply_xid_out_of_order_drops_the_connection() {
    let mut sim = connected("h:1");
    for path in ["/a", "/b", "/c"] {
        sim.submit(Op::sync(&p(path)));
    }
    assert_eq!(sim.sent().len(), 3);
    sim.set(20);
    let mut bytes = ok(1, 5, Response::Path("/a".into()));
    bytes.extend_from_slice(&ok(3, 5, Response::Path("/c".into())));
    bytes.extend_from_slice(&ok(2, 5, Response::Path("/b".into())));
    let e = sim.feed(&bytes).unwrap_err();
    assert_eq!(e, SessionError::ServerMisbehaved(Misbehavior::UnexpectedXid { expected: Some(2), got: 3 }));
    assert!(sim.inbuf.is_empty(), "the rest of the stream is discarded");
    assert_eq!(sim.io(), [IoCommand::Close]);
    assert_eq!(
        sim.events(),
        [reply_ev(0, Ok(Response::Path("/a".into()))), loss(1), loss(2), state_ev(ConnectionState::Suspended)]
    );
    assert_eq!(sim.s.status(), SessionStatus::Disconnected);
    assert_eq!(sim.s.in_flight(), 0);
    assert_eq!(sim.s.poll_timeout(), Some(at(20)));
    sim.tick();
    assert!(matches!(sim.io().as_slice(), [IoCommand::Connect { .. }]));
}

#[test]
fn reply_for_an_unknown_xid_drops_the_connection() {
    let mut sim = connected("h:1");
    let e = sim.feed(&err(9, 5, ErrorCode::NO_NODE)).unwrap_err();
    assert_eq!(e, SessionError::ServerMisbehaved(Misbehavior::UnexpectedXid { expected: None, got: 9 }));
    assert_eq!(sim.io(), [IoCommand::Close]);
    assert_eq!(sim.events(), [state_ev(ConnectionState::Suspended)]);

    // The C client's setWatches xid is not special to us either.
    let mut sim = connected("h:1");
    sim.submit(Op::sync(&p("/a")));
    let _ = sim.sent();
    let e = sim.feed(&ok(-8, 5, Response::Empty)).unwrap_err();
    assert_eq!(e, SessionError::ServerMisbehaved(Misbehavior::UnexpectedXid { expected: Some(1), got: -8 }));
    assert_eq!(sim.events(), [loss(0), state_ev(ConnectionState::Suspended)]);
}

/// Submits a sync and answers it with its xid plus 1000; returns the error
/// and the request's id.
fn misbehave(sim: &mut Sim) -> (SessionError, RequestId) {
    let id = sim.submit(Op::sync(&p("/a")));
    let sent = sim.sent();
    let xid = sent.last().expect("the sync went out").header.xid.0;
    let e = sim.feed(&ok(xid + 1000, 5, Response::Path("/a".into()))).unwrap_err();
    let expected = SessionError::ServerMisbehaved(Misbehavior::UnexpectedXid { expected: Some(xid), got: xid + 1000 });
    assert_eq!(e, expected);
    assert!(sim.inbuf.is_empty());
    assert_eq!(sim.io(), [IoCommand::Close]);
    (e, id)
}

/// After a dropped connection: dial at once (no jitter), connect and resume
/// 5 ms later.
fn resume(sim: &mut Sim) {
    sim.tick();
    assert!(matches!(sim.io().as_slice(), [IoCommand::Connect { .. }]));
    sim.now = sim.now + Duration::from_millis(5);
    sim.connected();
    assert_eq!(sim.sent_connect().session_id, 0x1234);
    sim.feed_ok(&connect_response(NEGOTIATED, 0x1234, Some(false)));
    assert_eq!(sim.events(), [state_ev(ConnectionState::Reconnected)]);
}

#[test]
fn a_server_that_misbehaves_on_every_connection_ends_the_session() {
    let mut sim = connected("h:1");
    assert_eq!(zoolock_core::DEFAULT_MAX_MISBEHAVING_CONNECTIONS, 3);
    for _ in 0..2 {
        let (_, id) = misbehave(&mut sim);
        assert_eq!(sim.events(), [loss(id.get()), state_ev(ConnectionState::Suspended)]);
        assert_eq!(sim.s.status(), SessionStatus::Disconnected);
        resume(&mut sim);
    }
    // A request queued behind the one the server answers wrongly.
    let (e, id) = {
        let id = sim.submit(Op::sync(&p("/a")));
        let queued = sim.submit(Op::sync(&p("/b")));
        let sent = sim.sent();
        assert_eq!(sent.len(), 2);
        let xid = sent[0].header.xid.0;
        let e = sim.feed(&ok(xid + 1000, 5, Response::Path("/a".into()))).unwrap_err();
        assert_eq!(sim.io(), [IoCommand::Close]);
        (e, (id, queued))
    };
    let gave_up = RequestError::ServerMisbehaved(e);
    assert_eq!(
        sim.events(),
        end_events(&[id.0.get(), id.1.get()], gave_up.clone(), ConnectionState::ServerMisbehaved(e))
    );
    sim.assert_ended(SessionStatus::ServerMisbehaved(e));
    assert_eq!(sim.s.status().end_error(), Some(gave_up.clone()));
    assert_eq!(ConnectionState::ServerMisbehaved(e).end_error(), Some(gave_up.clone()));
    assert_eq!(gave_up.code(), ErrorCode::CONNECTION_LOSS, "blamed on the server, not one of its result codes");
    sim.tick_at(60_000);
    sim.assert_quiet();
}

#[test]
fn a_matched_reply_resets_the_misbehaving_count() {
    let mut sim = connected("h:1");
    for _ in 0..2 {
        misbehave(&mut sim);
        sim.events();
        resume(&mut sim);
    }
    // A good exchange on the third connection, then another lie: the run
    // starts again at one.
    let id = sim.submit(Op::sync(&p("/ok")));
    let xid = sim.sent()[0].header.xid.0;
    sim.feed_ok(&ok(xid, 5, Response::Path("/ok".into())));
    assert_eq!(sim.events(), [reply_ev(id.get(), Ok(Response::Path("/ok".into())))]);
    for _ in 0..2 {
        misbehave(&mut sim);
        sim.events();
        assert_eq!(sim.s.status(), SessionStatus::Disconnected);
        resume(&mut sim);
    }
    let (e, _) = misbehave(&mut sim);
    assert_eq!(sim.s.status(), SessionStatus::ServerMisbehaved(e));
}

#[test]
fn misbehaving_for_a_session_timeout_ends_the_session_before_the_count() {
    let mut sim = Sim::new(config("h:1", 10_000).with_max_misbehaving_connections(100));
    assert_eq!(sim.establish(NEGOTIATED), []);
    misbehave(&mut sim); // t=10, the first of the run
    sim.events();
    resume(&mut sim);
    sim.set(5_000);
    misbehave(&mut sim);
    sim.events();
    assert_eq!(sim.s.status(), SessionStatus::Disconnected);
    resume(&mut sim);
    // T = 9 s after the first: the next lie is the last.
    sim.set(9_010);
    let (e, id) = misbehave(&mut sim);
    assert_eq!(
        sim.events(),
        [reply_ev(id.get(), Err(RequestError::ServerMisbehaved(e))), state_ev(ConnectionState::ServerMisbehaved(e))]
    );
}

#[test]
fn undecodable_handshakes_end_the_session_too() {
    let mut sim = Sim::new(config("h:1", 10_000));
    let mut last = None;
    for attempt in 0..3 {
        // Past the pause after a failed cycle of hosts.
        sim.now = sim.now + Duration::from_secs(2);
        sim.tick();
        assert!(matches!(sim.io().as_slice(), [IoCommand::Connect { .. }]), "attempt {attempt}");
        sim.connected();
        let _ = sim.sent_connect();
        // A ConnectResponse cut short inside its password.
        let e = sim
            .feed(&[0, 0, 0, 20, 0, 0, 0, 0, 0, 0, 0x23, 0x28, 0, 0, 0, 0, 0, 0, 0x12, 0x34, 0, 0, 0, 16])
            .unwrap_err();
        assert!(matches!(e, SessionError::Decode(_)), "{e:?}");
        assert_eq!(sim.io(), [IoCommand::Close]);
        last = Some(e);
    }
    let e = last.unwrap();
    assert_eq!(sim.events(), [state_ev(ConnectionState::ServerMisbehaved(e))]);
    assert_eq!(sim.s.status(), SessionStatus::ServerMisbehaved(e));
}

#[test]
fn unimplemented_reply_overtaking_fails_only_its_request_and_drops_the_connection() {
    let mut sim = connected("h:1");
    sim.submit(Op::sync(&p("/a")));
    sim.submit(Op::check_watches(&p("/b"), zoolock_core::wire::WatcherType::DATA));
    sim.submit(Op::sync(&p("/c")));
    assert_eq!(sim.sent().len(), 3);
    sim.feed_ok(&err(2, 0, ErrorCode::UNIMPLEMENTED));
    assert_eq!(sim.io(), [IoCommand::Close]);
    assert_eq!(
        sim.events(),
        [
            reply_ev(1, Err(RequestError::Server(ErrorCode::UNIMPLEMENTED))),
            loss(0),
            loss(2),
            state_ev(ConnectionState::Suspended),
        ]
    );
    assert_eq!(sim.s.status(), SessionStatus::Disconnected);
}

#[test]
fn unimplemented_reply_at_the_head_is_an_ordinary_error() {
    let mut sim = connected("h:1");
    sim.submit(Op::check_watches(&p("/b"), zoolock_core::wire::WatcherType::DATA));
    sim.submit(Op::sync(&p("/c")));
    assert_eq!(sim.sent().len(), 2);
    sim.feed_ok(&err(1, 0, ErrorCode::UNIMPLEMENTED));
    assert_eq!(sim.events(), [reply_ev(0, Err(RequestError::Server(ErrorCode::UNIMPLEMENTED)))]);
    assert_eq!(sim.io(), []);
    assert_eq!(sim.s.status(), SessionStatus::Connected);
    // The server then closes the connection.
    sim.disconnected();
    assert_eq!(sim.events(), [loss(1), state_ev(ConnectionState::Suspended)]);
}

// ---- 10. malformed frames --------------------------------------------------------------

#[test]
fn oversized_length_prefix_is_a_decode_error() {
    let mut sim = connected("h:1");
    sim.submit(Op::sync(&p("/a")));
    let _ = sim.sent();
    let e = sim.feed(&hex("7fffffff 0000")).unwrap_err();
    assert_eq!(
        e,
        SessionError::Decode(DecodeError {
            kind: DecodeErrorKind::FrameTooLarge { len: 0x7fff_ffff, max: DEFAULT_MAX_FRAME_LEN },
            offset: 0,
        })
    );
    assert!(sim.inbuf.is_empty());
    assert_eq!(sim.io(), [IoCommand::Close]);
    assert_eq!(sim.events(), [loss(0), state_ev(ConnectionState::Suspended)]);
}

#[test]
fn negative_length_prefix_is_a_decode_error() {
    let mut sim = connected("h:1");
    let e = sim.feed(&hex("fffffffe")).unwrap_err();
    assert_eq!(e, SessionError::Decode(DecodeError { kind: DecodeErrorKind::NegativeLength(-2), offset: 0 }));
    assert_eq!(sim.io(), [IoCommand::Close]);
    assert_eq!(sim.events(), [state_ev(ConnectionState::Suspended)]);
}

#[test]
fn truncated_reply_body_is_a_decode_error() {
    let mut sim = connected("h:1");
    sim.submit(Op::get_data(&p("/a"), false));
    let _ = sim.sent();
    let whole = ok(1, 5, data(b"value", 5));
    // Cut the Stat short and fix the length prefix to match.
    let payload = &whole[4..whole.len() - 10];
    let mut bytes = (payload.len() as u32).to_be_bytes().to_vec();
    bytes.extend_from_slice(payload);
    let e = sim.feed(&bytes).unwrap_err();
    assert!(
        matches!(&e, SessionError::Decode(DecodeError { kind: DecodeErrorKind::Truncated, .. })),
        "unexpected error {e:?}"
    );
    assert!(sim.inbuf.is_empty());
    assert_eq!(sim.io(), [IoCommand::Close]);
    assert_eq!(sim.events(), [loss(0), state_ev(ConnectionState::Suspended)]);
}

#[test]
fn garbage_instead_of_a_connect_response_tries_the_next_host() {
    let mut sim = Sim::new(config("a:1,b:2", 10_000));
    sim.tick_at(0);
    sim.dial_connected();
    let e = sim.feed(&hex("0000000a 00000000 0000 0000 0000")).unwrap_err();
    assert!(matches!(e, SessionError::Decode(_)), "{e:?}");
    assert_eq!(sim.io(), [IoCommand::Close]);
    assert_eq!(sim.events(), [], "no session yet, so nothing is suspended");
    sim.tick();
    assert!(matches!(sim.io().as_slice(), [IoCommand::Connect { host: HostId(1), .. }]));
}

// ---- 11. watches -----------------------------------------------------------------------

#[test]
fn get_data_registers_a_data_watch_only_on_success() {
    let mut sim = connected("h:1");
    sim.submit_watch(Op::get_data(&p("/a"), true), 1);
    assert_eq!(sim.sent(), [frame(1, get_data("/a", true))]);
    sim.feed_ok(&err(1, 5, ErrorCode::NO_NODE));
    sim.feed_ok(&notification(EventType::NODE_CREATED, "/a"));
    assert_eq!(sim.events(), [reply_ev(0, Err(RequestError::Server(ErrorCode::NO_NODE)))]);

    sim.submit_watch(Op::get_data(&p("/a"), true), 1);
    assert_eq!(sim.sent(), [frame(2, get_data("/a", true))]);
    sim.feed_ok(&ok(2, 6, data(b"x", 6)));
    sim.feed_ok(&notification(EventType::NODE_DATA_CHANGED, "/a"));
    assert_eq!(sim.events(), [reply_ev(1, Ok(data(b"x", 6))), watch_ev(1, EventType::NODE_DATA_CHANGED, "/a")]);
}

#[test]
fn exists_on_a_missing_node_leaves_an_exist_watch() {
    let mut sim = watching(&[(Op::exists(&p("/e"), true), 2)]);
    sim.feed_ok(&err(1, 5, ErrorCode::NO_NODE));
    sim.feed_ok(&notification(EventType::NODE_CREATED, "/e"));
    assert_eq!(
        sim.events(),
        [reply_ev(0, Err(RequestError::Server(ErrorCode::NO_NODE))), watch_ev(2, EventType::NODE_CREATED, "/e")]
    );
    // exists on an existing node: a data watch, fired by delete.
    sim.submit_watch(Op::exists(&p("/e"), true), 2);
    let _ = sim.sent();
    sim.feed_ok(&ok(2, 6, Response::Stat(stat(6))));
    sim.feed_ok(&notification(EventType::NODE_DELETED, "/e"));
    assert_eq!(sim.events(), [reply_ev(1, Ok(Response::Stat(stat(6)))), watch_ev(2, EventType::NODE_DELETED, "/e")]);
    // Any other error leaves no watch.
    sim.submit_watch(Op::exists(&p("/e"), true), 2);
    let _ = sim.sent();
    sim.feed_ok(&err(3, 7, ErrorCode::NO_AUTH));
    sim.feed_ok(&notification(EventType::NODE_CREATED, "/e"));
    assert_eq!(sim.events(), [reply_ev(2, Err(RequestError::Server(ErrorCode::NO_AUTH)))]);
}

#[test]
fn get_children_watch_fires_on_children_changed_and_delete_only() {
    let mut sim = watching(&[(Op::get_children(&p("/c"), true), 3)]);
    sim.feed_ok(&ok(1, 5, children(&["x", "y"], 5)));
    sim.feed_ok(&notification(EventType::NODE_DATA_CHANGED, "/c"));
    sim.feed_ok(&notification(EventType::NODE_CREATED, "/c"));
    sim.feed_ok(&notification(EventType::NODE_CHILDREN_CHANGED, "/c"));
    assert_eq!(
        sim.events(),
        [reply_ev(0, Ok(children(&["x", "y"], 5))), watch_ev(3, EventType::NODE_CHILDREN_CHANGED, "/c")]
    );
    sim.submit_watch(Op::get_children(&p("/c"), true), 3);
    let _ = sim.sent();
    sim.feed_ok(&ok(2, 6, children(&[], 6)));
    sim.feed_ok(&notification(EventType::NODE_DELETED, "/c"));
    assert_eq!(sim.events(), [reply_ev(1, Ok(children(&[], 6))), watch_ev(3, EventType::NODE_DELETED, "/c")]);
}

#[test]
fn one_notification_fans_out_to_every_matching_watcher_once() {
    let mut sim = watched(&[
        (Op::get_data(&p("/f"), true), 1, 5, Ok(data(b"", 5))),
        (Op::exists(&p("/f"), true), 2, 5, Ok(Response::Stat(stat(5)))),
        (Op::get_children(&p("/f"), true), 3, 5, Ok(children(&[], 5))),
        (Op::get_data(&p("/f"), true), 1, 5, Ok(data(b"", 5))), // same watcher twice: delivered once
        (Op::get_data(&p("/g"), true), 1, 5, Ok(data(b"", 5))),
    ]);
    sim.feed_ok(&notification(EventType::NODE_DELETED, "/f"));
    assert_eq!(
        sim.events(),
        [
            watch_ev(1, EventType::NODE_DELETED, "/f"),
            watch_ev(2, EventType::NODE_DELETED, "/f"),
            watch_ev(3, EventType::NODE_DELETED, "/f"),
        ]
    );
    // One-shot: a second notification finds nobody.
    sim.feed_ok(&notification(EventType::NODE_DELETED, "/f"));
    sim.feed_ok(&notification(EventType::NODE_CREATED, "/f"));
    assert_eq!(sim.events(), []);
    sim.feed_ok(&notification(EventType::NODE_DATA_CHANGED, "/g"));
    sim.feed_ok(&notification(EventType::NODE_DATA_CHANGED, "/g"));
    assert_eq!(sim.events(), [watch_ev(1, EventType::NODE_DATA_CHANGED, "/g")]);
}

#[test]
fn remove_watch_and_remove_watcher_forget_registrations_locally() {
    let mut sim = watched(&[
        (Op::get_data(&p("/r"), true), 1, 5, Ok(data(b"", 5))),
        (Op::get_data(&p("/r"), true), 2, 5, Ok(data(b"", 5))),
        (Op::get_children(&p("/s"), true), 2, 5, Ok(children(&[], 5))),
        (Op::exists(&p("/t"), true), 2, 5, Err(ErrorCode::NO_NODE)),
    ]);

    assert!(sim.s.remove_watch("/r", WatchKind::Data, WatcherId(1)));
    assert!(!sim.s.remove_watch("/r", WatchKind::Data, WatcherId(1)));
    assert!(!sim.s.remove_watch("/r", WatchKind::Child, WatcherId(2)), "wrong kind");
    assert!(!sim.s.remove_watch("/t", WatchKind::Data, WatcherId(2)), "an exist watch, not a data watch");
    sim.feed_ok(&notification(EventType::NODE_DATA_CHANGED, "/r"));
    assert_eq!(sim.events(), [watch_ev(2, EventType::NODE_DATA_CHANGED, "/r")]);

    sim.s.remove_watcher(WatcherId(2));
    sim.feed_ok(&notification(EventType::NODE_CHILDREN_CHANGED, "/s"));
    sim.feed_ok(&notification(EventType::NODE_CREATED, "/t"));
    assert_eq!(sim.events(), []);
    assert_eq!(sim.io(), []);
    assert_eq!(sim.s.status(), SessionStatus::Connected);

    // A removed watch is not re-armed after a reconnect.
    sim.set(100);
    sim.disconnected();
    let _ = sim.events();
    sim.resume(NEGOTIATED);
    assert_eq!(sim.sent(), [], "no watch left, so no setWatches");
}

#[test]
fn a_watch_needs_a_watcher() {
    let mut sim = connected("h:1");
    assert_eq!(sim.s.submit(sim.now, Op::get_data(&p("/a"), true), None), Err(ApiMisuse::WatchWithoutWatcher));
    assert_eq!(sim.s.submit(sim.now, Op::exists(&p("/a"), true), None), Err(ApiMisuse::WatchWithoutWatcher));
    assert_eq!(sim.s.submit(sim.now, Op::get_children(&p("/a"), true), None), Err(ApiMisuse::WatchWithoutWatcher));
    sim.assert_quiet();
    // No id was used up; a watcher without a watch flag is simply ignored.
    assert_eq!(sim.s.submit(sim.now, Op::get_data(&p("/a"), false), Some(WatcherId(1))).map(RequestId::get), Ok(0));
    assert_eq!(sim.sent(), [frame(1, get_data("/a", false))]);
    sim.feed_ok(&ok(1, 5, data(b"", 5)));
    sim.feed_ok(&notification(EventType::NODE_DATA_CHANGED, "/a"));
    assert_eq!(sim.events(), [reply_ev(0, Ok(data(b"", 5)))]);
}

#[test]
fn watched_read_lost_with_the_connection_registers_nothing() {
    let mut sim = watching(&[(Op::get_data(&p("/a"), true), 1)]);
    sim.set(100);
    sim.disconnected();
    assert_eq!(sim.events(), [loss(0), state_ev(ConnectionState::Suspended)]);
    sim.resume(NEGOTIATED);
    assert_eq!(sim.events(), [state_ev(ConnectionState::Reconnected)]);
    assert_eq!(sim.sent(), [], "no setWatches for a watch that never registered");
}

#[test]
fn set_watches_lists_are_sorted_and_split_by_kind() {
    let mut sim = watched(&[
        (Op::get_data(&p("/z"), true), 1, 5, Ok(data(b"", 5))),
        (Op::get_data(&p("/a"), true), 2, 6, Ok(data(b"", 6))),
        (Op::exists(&p("/m"), true), 1, 7, Err(ErrorCode::NO_NODE)),
        (Op::get_children(&p("/a"), true), 1, 8, Ok(children(&[], 8))),
        (Op::exists(&p("/b"), true), 3, 9, Ok(Response::Stat(stat(9)))),
    ]);
    sim.set(100);
    sim.disconnected();
    let _ = sim.events();
    sim.resume(NEGOTIATED);
    assert_eq!(sim.events(), [state_ev(ConnectionState::Reconnected)]);
    assert_eq!(
        sim.sent(),
        [frame(
            6,
            Request::SetWatches(SetWatches {
                relative_zxid: 9,
                data_watches: vec!["/a".into(), "/b".into(), "/z".into()],
                exist_watches: vec!["/m".into()],
                child_watches: vec!["/a".into()],
            })
        )]
    );
    // A catch-up NodeCreated for the exist watch, then the reply.
    let mut bytes = notification(EventType::NODE_CREATED, "/m");
    bytes.extend_from_slice(&ok(6, 9, Response::Empty));
    sim.feed_ok(&bytes);
    assert_eq!(sim.events(), [watch_ev(1, EventType::NODE_CREATED, "/m")]);
    assert_eq!(sim.s.in_flight(), 0);
}

// ---- 12. auth --------------------------------------------------------------------------

#[test]
fn auth_packets_use_xid_minus_4_outside_the_fifo() {
    let mut sim = Sim::new(config("h:1", 10_000));
    sim.s.add_auth(sim.now, "digest", Bytes::from_static(b"a:b")).unwrap();
    sim.submit(Op::sync(&p("/q")));
    assert_eq!(sim.establish(NEGOTIATED), [auth_frame("digest", b"a:b"), frame(1, Request::Sync(path_req("/q")))]);
    sim.submit(Op::sync(&p("/a")));
    sim.s.add_auth(sim.now, "digest", Bytes::from_static(b"u:p")).unwrap();
    sim.submit(Op::sync(&p("/b")));
    assert_eq!(
        sim.sent(),
        [
            frame(2, Request::Sync(path_req("/a"))),
            auth_frame("digest", b"u:p"),
            frame(3, Request::Sync(path_req("/b"))),
        ]
    );
    assert_eq!(sim.s.in_flight(), 3, "the auth packet is not in flight");
    // The server answers auth out of the pipeline, overtaking ordinary replies.
    let mut bytes = err(-4, 0, ErrorCode::OK);
    bytes.extend_from_slice(&ok(1, 5, Response::Path("/q".into())));
    bytes.extend_from_slice(&err(-4, 0, ErrorCode::OK));
    bytes.extend_from_slice(&ok(2, 5, Response::Path("/a".into())));
    bytes.extend_from_slice(&ok(3, 5, Response::Path("/b".into())));
    sim.feed_ok(&bytes);
    assert_eq!(
        sim.events(),
        [
            reply_ev(0, Ok(Response::Path("/q".into()))),
            reply_ev(1, Ok(Response::Path("/a".into()))),
            reply_ev(2, Ok(Response::Path("/b".into()))),
        ]
    );
    assert_eq!(sim.io(), []);
}

#[test]
fn auth_failed_reply_is_terminal() {
    let mut sim = connected("h:1");
    sim.submit(Op::sync(&p("/a")));
    sim.s.add_auth(sim.now, "digest", Bytes::from_static(b"u:bad")).unwrap();
    assert_eq!(sim.sent().len(), 2);
    sim.feed_ok(&err(-4, 0, ErrorCode::AUTH_FAILED));
    assert_eq!(sim.io(), [IoCommand::Close]);
    assert_eq!(sim.events(), [reply_ev(0, Err(RequestError::AuthFailed)), state_ev(ConnectionState::AuthFailed)]);
    sim.assert_ended(SessionStatus::AuthFailed);
    // The server then closes; nothing more happens.
    sim.disconnected();
    sim.tick_at(60_000);
    sim.assert_quiet();
}

// ---- 13. close -------------------------------------------------------------------------

#[test]
fn close_when_connected_sends_close_session_and_waits_for_its_reply() {
    let mut sim = connected("h:1");
    sim.set(1_000);
    sim.submit(Op::sync(&p("/a")));
    let _ = sim.sent();
    sim.s.close(sim.now);
    let bytes = sim.tx();
    assert_eq!(&bytes[..], &hex("00000008 00000002 fffffff5")[..], "closeSession: xid 2, op -11");
    assert_eq!(sim.s.status(), SessionStatus::Closing);
    assert_eq!(sim.s.submit(sim.now, Op::sync(&p("/b")), None), Err(ApiMisuse::SessionEnded));
    assert_eq!(sim.s.poll_timeout(), Some(at(7_000)), "closing deadline 2T/3");
    sim.s.close(sim.now); // idempotent
    sim.assert_quiet();
    sim.tick_at(6_999);
    sim.assert_quiet();

    sim.feed_ok(&ok(1, 5, Response::Path("/a".into())));
    assert_eq!(sim.events(), [reply_ev(0, Ok(Response::Path("/a".into())))]);
    sim.feed_ok(&ok(2, 6, Response::Empty));
    assert_eq!(sim.events(), [state_ev(ConnectionState::Closed)]);
    assert_eq!(sim.io(), [IoCommand::Close]);
    assert_eq!(sim.s.status(), SessionStatus::Closed);
    assert_eq!(sim.s.poll_timeout(), None);
}

#[test]
fn closing_deadline_ends_the_session() {
    let mut sim = connected("h:1");
    sim.set(1_000);
    sim.submit(Op::sync(&p("/a")));
    sim.s.close(sim.now);
    assert_eq!(sim.sent().len(), 2);
    // No pings while closing.
    sim.tick_at(4_500);
    sim.assert_quiet();
    sim.tick_at(7_000);
    assert_eq!(sim.io(), [IoCommand::Close]);
    assert_eq!(sim.events(), [reply_ev(0, Err(RequestError::Closed)), state_ev(ConnectionState::Closed)]);
    assert_eq!(sim.s.status(), SessionStatus::Closed);
}

#[test]
fn connection_drop_while_closing_ends_closed() {
    let mut sim = connected("h:1");
    sim.submit(Op::sync(&p("/a")));
    sim.s.close(sim.now);
    let _ = sim.tx();
    sim.disconnected();
    assert_eq!(sim.io(), [], "the driver reported the drop");
    assert_eq!(sim.events(), [reply_ev(0, Err(RequestError::Closed)), state_ev(ConnectionState::Closed)]);
    assert_eq!(sim.s.poll_timeout(), None);
}

#[test]
fn close_while_disconnected_is_immediate() {
    // While dialing: the socket being opened is closed.
    let mut sim = Sim::new(config("h:1", 10_000));
    sim.submit(Op::sync(&p("/a")));
    sim.tick_at(0);
    let _ = sim.io();
    sim.submit(Op::sync(&p("/b")));
    sim.s.close(sim.now);
    assert_eq!(sim.io(), [IoCommand::Close]);
    assert_eq!(sim.events(), end_events(&[0, 1], RequestError::Closed, ConnectionState::Closed));
    sim.assert_ended(SessionStatus::Closed);
    assert_eq!(sim.s.add_auth(sim.now, "digest", Bytes::new()), Err(ApiMisuse::SessionEnded));

    // While suspended between attempts: no socket, so no Close.
    let mut sim = suspended("h:1", 100);
    let q = sim.submit(Op::sync(&p("/q")));
    sim.s.close(sim.now);
    assert_eq!(sim.io(), []);
    assert_eq!(sim.events(), [reply_ev(q.get(), Err(RequestError::Closed)), state_ev(ConnectionState::Closed)]);
    assert_eq!(sim.tx().len(), 0);

    // While handshaking: nothing but the ConnectRequest was ever sent.
    let mut sim = Sim::new(config("h:1", 10_000));
    sim.tick_at(0);
    let _ = sim.io();
    sim.connected();
    sim.s.close(sim.now);
    assert_eq!(sim.tx().len(), 0, "the unsent ConnectRequest is dropped");
    assert_eq!(sim.io(), [IoCommand::Close]);
    assert_eq!(sim.events(), [state_ev(ConnectionState::Closed)]);
}

// ---- 14. partial frames ----------------------------------------------------------------

/// Three queued requests (one watched) and a server stream answering them.
fn scripted_stream() -> (Sim, Vec<u8>) {
    let mut sim = Sim::new(config("h:1/app", 10_000));
    sim.submit_watch(Op::get_data(&p("/a"), true), 1);
    sim.submit(Op::create(&p("/b"), Bytes::from_static(b"x"), Acl::open_unsafe(), CreateMode::EPHEMERAL));
    sim.submit(Op::get_children(&p("/"), false));
    sim.tick_at(0);
    sim.dial_connected();
    let mut s = connect_response(NEGOTIATED, 0x77, None);
    s.extend_from_slice(&ok(1, 10, data(b"hello", 9)));
    s.extend_from_slice(&ok(-2, 10, Response::Empty));
    s.extend_from_slice(&ok(2, 11, Response::Create2 { path: "/app/b".into(), stat: stat(11) }));
    s.extend_from_slice(&notification(EventType::NODE_DELETED, "/app/a"));
    s.extend_from_slice(&ok(3, 11, children(&["a", "b"], 11)));
    (sim, s.to_vec())
}

fn expected_script_events() -> Vec<support::Ev> {
    vec![
        state_ev(ConnectionState::Connected),
        reply_ev(0, Ok(data(b"hello", 9))),
        reply_ev(1, Ok(Response::Create2 { path: "/b".into(), stat: stat(11) })),
        watch_ev(1, EventType::NODE_DELETED, "/a"),
        reply_ev(2, Ok(children(&["a", "b"], 11))),
    ]
}

#[test]
fn whole_stream_gives_the_script_events() {
    let (mut sim, stream) = scripted_stream();
    sim.feed_ok(&stream);
    assert!(sim.inbuf.is_empty());
    assert_eq!(sim.events(), expected_script_events());
    assert_eq!(sim.sent().len(), 3);
}

#[test]
fn byte_at_a_time_gives_the_same_events_and_keeps_partial_frames_buffered() {
    let (mut sim, stream) = scripted_stream();
    // Frame boundaries in the stream.
    let mut ends = Vec::new();
    let mut pos = 0;
    while pos < stream.len() {
        let len = u32::from_be_bytes(stream[pos..pos + 4].try_into().unwrap()) as usize;
        pos += 4 + len;
        ends.push(pos);
    }
    let mut events = Vec::new();
    let mut frame_start = 0;
    for (i, b) in stream.iter().enumerate() {
        sim.feed_ok(&[*b]);
        if ends.contains(&(i + 1)) {
            assert!(sim.inbuf.is_empty(), "a complete frame is consumed");
            frame_start = i + 1;
        } else {
            assert_eq!(sim.inbuf.len(), i + 1 - frame_start, "a partial frame stays in the caller's buffer");
            assert_eq!(sim.s.poll_event(), None, "no event before a frame is complete");
        }
        events.extend(sim.events());
    }
    assert_eq!(events, expected_script_events());
}

#[test]
fn every_split_point_gives_the_same_events() {
    let (_, stream) = scripted_stream();
    for cut in 0..=stream.len() {
        let (mut sim, _) = scripted_stream();
        sim.feed_ok(&stream[..cut]);
        let mut events = sim.events();
        sim.feed_ok(&stream[cut..]);
        events.extend(sim.events());
        assert_eq!(events, expected_script_events(), "split at {cut}");
        assert!(sim.inbuf.is_empty());
    }
}

#[test]
fn partial_frame_is_left_in_the_callers_buffer() {
    let mut sim = connected("h:1");
    sim.submit(Op::sync(&p("/a")));
    let _ = sim.sent();
    let whole = ok(1, 5, Response::Path("/a".into()));
    let mut buf = BytesMut::from(&whole[..3]);
    sim.s.handle_bytes(sim.now, &mut buf).unwrap();
    assert_eq!(&buf[..], &whole[..3], "inside the length prefix");
    buf.extend_from_slice(&whole[3..whole.len() - 1]);
    sim.s.handle_bytes(sim.now, &mut buf).unwrap();
    assert_eq!(&buf[..], &whole[..whole.len() - 1], "inside the body");
    assert_eq!(sim.events(), []);
    buf.extend_from_slice(&whole[whole.len() - 1..]);
    buf.extend_from_slice(&whole[..6]); // the start of some next frame
    sim.s.handle_bytes(sim.now, &mut buf).unwrap();
    assert_eq!(&buf[..], &whole[..6]);
    assert_eq!(sim.events(), [reply_ev(0, Ok(Response::Path("/a".into())))]);
}

// ---- 15. oversized requests ------------------------------------------------------------

#[test]
fn oversized_request_is_refused_locally_and_the_session_stays_healthy() {
    let mut sim = Sim::new(config("h:1", 10_000).with_max_frame_len(1_024));
    let early = sim.submit(Op::set_data(&p("/big"), Bytes::from(vec![0u8; 2_000]), None));
    sim.tick_at(0);
    sim.dial_connected();
    sim.feed_ok(&connect_response(NEGOTIATED, 0x1234, Some(false)));
    // setData: 8 header + 8 path + 2 004 data + 4 version.
    let too_large = Err(RequestError::TooLarge { len: 2_024, max: 1_024 });
    assert_eq!(sim.events(), [state_ev(ConnectionState::Connected), reply_ev(early.get(), too_large.clone())]);
    assert_eq!(sim.tx().len(), 0);

    let late = sim.submit(Op::set_data(&p("/big"), Bytes::from(vec![0u8; 2_000]), None));
    assert_eq!(sim.events(), [reply_ev(late.get(), too_large)]);
    assert_eq!(sim.tx().len(), 0, "nothing transmitted");
    assert_eq!(sim.s.in_flight(), 0);
    assert_eq!(sim.io(), []);
    assert_eq!(sim.s.status(), SessionStatus::Connected);

    let fine = sim.submit(Op::set_data(&p("/big"), Bytes::from(vec![0u8; 100]), None));
    let sent = sim.sent();
    assert_eq!(sent.len(), 1);
    assert_eq!(sent[0].header.op, OpCode::SET_DATA);
    sim.feed_ok(&ok(sent[0].header.xid.0, 5, Response::Stat(stat(5))));
    assert_eq!(sim.events(), [reply_ev(fine.get(), Ok(Response::Stat(stat(5))))]);
}

// ---- 16. poll_timeout is always in the future after handle_timeout ----------------------

/// Fires every timer up to `until`: just before each deadline (nothing may
/// happen) and exactly at it. The network is silent: every dial connects and
/// nothing is ever answered.
fn run_until(sim: &mut Sim, until: u64) -> Vec<u64> {
    let mut fired = Vec::new();
    while let Some(t) = sim.s.poll_timeout() {
        if t > at(until) {
            break;
        }
        if t > sim.now {
            sim.now = Instant::from_nanos(t.as_nanos() - 1);
            sim.tick();
            sim.assert_quiet();
            assert_eq!(sim.s.poll_timeout(), Some(t), "nothing is due before the deadline");
        }
        sim.now = t;
        sim.tick();
        fired.push(t.as_nanos() / 1_000_000);
        for io in sim.io() {
            if let IoCommand::Connect { .. } = io {
                sim.connected();
            }
        }
        let _ = sim.tx();
        let _ = sim.events();
    }
    sim.set(until);
    fired
}

#[test]
fn poll_timeout_after_handle_timeout_is_after_now_in_every_phase() {
    for jitter in [Duration::ZERO, Duration::from_millis(700)] {
        let cfg = config("a:1,b:2,c:3", 10_000).with_reconnect_jitter(jitter);
        let mut sim = Sim::new(cfg);
        // Idle → Connecting → Handshaking → timeouts around the ring, with cycle pauses.
        run_until(&mut sim, 20_000);
        assert!(!sim.s.is_ended());
        assert_eq!(sim.s.session_id(), 0, "no session yet, so it never expires");
        // A handshake, then connected timers: pings, then the read timeout.
        while sim.s.status() != SessionStatus::Handshaking {
            let t = sim.s.poll_timeout().unwrap();
            sim.now = t;
            sim.tick();
            for io in sim.io() {
                if let IoCommand::Connect { .. } = io {
                    sim.connected();
                }
            }
        }
        let _ = sim.tx();
        sim.feed_ok(&connect_response(NEGOTIATED, 0x1234, Some(false)));
        let _ = sim.events();
        let start = sim.now.as_nanos() / 1_000_000;
        let fired = run_until(&mut sim, start + 30_000);
        assert!(fired.len() > 3, "pings, read timeout and reconnect attempts fired: {fired:?}");
        // The silent network means the session expired client-side at some point.
        assert!(sim.s.is_ended(), "{:?}", sim.s.status());
        assert_eq!(sim.s.status(), SessionStatus::Expired);
        assert_eq!(sim.s.poll_timeout(), None);
    }

    // Closing and Closed.
    let mut sim = connected("h:1");
    sim.s.close(sim.now);
    assert_eq!(sim.sent(), [RequestFrame::new(Xid(1), Request::CloseSession)]);
    let fired = run_until(&mut sim, 60_000);
    assert_eq!(fired, [6_010]);
    assert_eq!(sim.s.status(), SessionStatus::Closed);
    sim.tick_at(70_000);
}

#[test]
fn handle_timeout_at_a_deadline_between_attempts_dials_at_once() {
    // With zero jitter a failed attempt is retried at the same instant, in the
    // same handle_timeout, rather than leaving a deadline equal to now.
    let mut sim = Sim::new(config("a:1,b:2", 10_000));
    sim.tick_at(0);
    assert!(matches!(sim.io().as_slice(), [IoCommand::Connect { host: HostId(0), .. }]));
    sim.tick_at(5_000);
    assert!(matches!(sim.io().as_slice(), [IoCommand::Close, IoCommand::Connect { host: HostId(1), .. }]));
    assert_eq!(sim.s.status(), SessionStatus::Connecting);
    assert_eq!(sim.s.poll_timeout(), Some(at(10_000)));
    // The second failure completes a cycle: a real pause instead.
    sim.tick_at(10_000);
    assert_eq!(sim.io(), [IoCommand::Close]);
    assert_eq!(sim.s.poll_timeout(), Some(at(11_000)));
}

// ---- helpers used above ----------------------------------------------------------------

fn path_req(path: &str) -> zoolock_core::wire::PathRequest {
    zoolock_core::wire::PathRequest { path: path.into() }
}
