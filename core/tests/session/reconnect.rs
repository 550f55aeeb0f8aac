//! Read timeout, suspension and reconnect; connect attempts and host rotation.

use crate::*;

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
