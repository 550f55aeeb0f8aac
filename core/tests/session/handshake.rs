//! The first connect, the handshake's variants, pings and lastZxid.

use crate::*;

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
