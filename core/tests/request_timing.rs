//! Request timings (issue 39, the request-latency histogram): each answered
//! request's send and reply instants are the `now` values the session was
//! given, by opcode; pings are their own operation; nothing is kept when
//! timings are off, for a request that never got a reply, or beyond
//! `TIMINGS_KEPT` undrained.

mod support;

use std::time::Duration;

use support::{Sim, at, config, err, ok, p};
use zoolock_core::wire::{ErrorCode, OpCode, Response};
use zoolock_core::{Op, RequestTiming, TIMINGS_KEPT};

fn timed() -> Sim {
    let mut sim = Sim::new(config("h:1", 10_000).with_request_timings(true));
    sim.establish(10_000);
    sim
}

fn timings(sim: &mut Sim) -> Vec<RequestTiming> {
    std::iter::from_fn(|| sim.s.poll_timing()).collect()
}

fn timing(op: OpCode, sent: u64, answered: u64) -> RequestTiming {
    RequestTiming { op, sent: at(sent), answered: at(answered) }
}

#[test]
fn each_reply_is_timed_from_the_now_it_was_sent_at_to_the_now_it_was_read_at() {
    let mut sim = timed();
    assert_eq!(timings(&mut sim), [], "the handshake is not timed");
    sim.set(100);
    sim.submit(Op::sync(&p("/a")));
    sim.set(150);
    sim.submit(Op::get_data(&p("/b"), false));
    assert_eq!(sim.sent().len(), 2);
    assert_eq!(timings(&mut sim), [], "nothing answered yet");

    sim.set(400);
    sim.feed_ok(&ok(1, 5, Response::Path("/a".into())));
    // An error reply is an answer too.
    sim.set(1_000);
    sim.feed_ok(&err(2, 5, ErrorCode::NO_NODE));
    let got = timings(&mut sim);
    assert_eq!(got, [timing(OpCode::SYNC, 100, 400), timing(OpCode::GET_DATA, 150, 1_000)]);
    assert_eq!(got[0].latency(), Duration::from_millis(300));
    assert_eq!(got[1].latency(), Duration::from_millis(850));
    assert_eq!(sim.s.poll_timing(), None, "drained");
    assert_eq!(sim.s.timings_dropped(), 0);
}

#[test]
fn a_ping_is_timed_as_its_own_operation() {
    let mut sim = timed();
    sim.set(100);
    sim.submit(Op::delete(&p("/d"), None));
    assert_eq!(sim.sent().len(), 1);
    sim.set(107);
    sim.feed_ok(&ok(1, 6, Response::Empty));
    let ping_at = sim.s.poll_timeout().expect("a ping is due T/3 after the delete");
    sim.now = ping_at;
    sim.tick();
    assert_eq!(sim.sent().len(), 1, "the ping");
    // T/3 = 3,333.33 ms after the delete went out.
    assert_eq!(ping_at, at(100) + Duration::from_millis(10_000) / 3);
    sim.set(3_500);
    sim.feed_ok(&ok(-2, 6, Response::Empty));
    let ping = RequestTiming { op: OpCode::PING, sent: ping_at, answered: at(3_500) };
    assert_eq!(timings(&mut sim), [timing(OpCode::DELETE, 100, 107), ping]);
}

#[test]
fn a_request_that_never_got_a_reply_is_not_timed() {
    let mut sim = timed();
    sim.set(100);
    sim.submit(Op::sync(&p("/a")));
    assert_eq!(sim.sent().len(), 1);
    sim.set(200);
    sim.disconnected();
    let _ = sim.events();
    assert_eq!(timings(&mut sim), []);
    // Resent? No: a lost connection fails what it carried. The next
    // request on the new connection is timed on its own.
    sim.set(300);
    sim.resume(10_000);
    let _ = sim.events();
    sim.submit(Op::sync(&p("/b")));
    let xid = sim.sent().last().expect("the sync").header.xid.0;
    sim.set(320);
    sim.feed_ok(&ok(xid, 7, Response::Path("/b".into())));
    assert_eq!(timings(&mut sim), [timing(OpCode::SYNC, 300, 320)]);
}

#[test]
fn nothing_is_kept_when_timings_are_off() {
    let mut sim = Sim::new(config("h:1", 10_000));
    sim.establish(10_000);
    sim.set(100);
    sim.submit(Op::sync(&p("/a")));
    sim.set(400);
    sim.feed_ok(&ok(1, 5, Response::Path("/a".into())));
    assert_eq!(sim.events().len(), 1);
    assert_eq!(sim.s.poll_timing(), None);
}

#[test]
fn undrained_timings_beyond_the_bound_drop_the_oldest_and_are_counted() {
    let mut sim = timed();
    let extra = 5;
    let n = TIMINGS_KEPT + extra;
    for i in 0..n {
        sim.set(100 + i as u64);
        sim.submit(Op::sync(&p("/a")));
    }
    let _ = sim.sent();
    let mut replies = Vec::new();
    for xid in 1..=n {
        replies.extend_from_slice(&ok(xid as i32, 5, Response::Path("/a".into())));
    }
    sim.set(10_000);
    sim.feed_ok(&replies);
    assert_eq!(sim.s.timings_dropped(), extra as u64);
    let got = timings(&mut sim);
    assert_eq!(got.len(), TIMINGS_KEPT);
    assert_eq!(got[0], timing(OpCode::SYNC, 100 + extra as u64, 10_000), "the oldest went");
}
