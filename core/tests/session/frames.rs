//! Partial frames in the read buffer, and oversized requests.

use crate::*;

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
