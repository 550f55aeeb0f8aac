//! Auth packets.

use crate::*;

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
