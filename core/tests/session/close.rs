//! Closing the session.

use crate::*;

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
