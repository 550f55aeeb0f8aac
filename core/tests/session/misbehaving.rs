//! A misbehaving server: replies out of xid order, malformed frames.

use crate::*;

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
