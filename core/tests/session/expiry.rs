//! Expiry: told by the handshake, on the client side, and by a -112 reply.

use crate::*;

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
