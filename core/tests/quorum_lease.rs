//! The session's lease and its quorum confirmation, on virtual time
//! (`session/lease.rs`; ARCHITECTURE.md §7): when confirmations go out, what
//! an answer vouches for, when a hold may read `Held`, and the dropped
//! connection when the quorum does not answer.
//!
//! The server negotiates 6 s: T/6 = 1 s between confirmations, the assumed
//! tick is T/2 = 3 s, so an answer vouches for frames sent 1.875 s before
//! its request, and the quorum bound is 5.7 s after the newest of them.

mod support;

use support::{Sim, at, config, ok};
use zoolock_core::wire::{OpCode, Request, Response};
use zoolock_core::{ConnectionState, IoCommand, Suspension};

const T: i32 = 6_000;

/// A session established at t=10 ms (see `Sim::establish`).
fn established() -> Sim {
    let mut sim = Sim::new(config("127.0.0.1:2181", T as u64));
    assert!(sim.establish(T).is_empty());
    sim
}

/// The xids of the syncs sent now, asserting that nothing else went out.
fn syncs(sim: &mut Sim) -> Vec<i32> {
    sim.sent()
        .into_iter()
        .map(|f| {
            assert_eq!(f.header.op, OpCode::SYNC, "only confirmations go out: {f:?}");
            assert!(matches!(&f.request, Request::Sync(r) if r.path == "/"), "a sync of the server's root");
            f.header.xid.0
        })
        .collect()
}

fn answer(sim: &mut Sim, xid: i32) {
    sim.feed_ok(&ok(xid, 0, Response::Path("/".into())));
}

#[test]
fn nothing_is_sent_while_nothing_is_held() {
    let mut sim = established();
    assert!(!sim.s.is_confirming());
    // Only the pings of an idle session, every T/3.
    sim.tick_at(2_010);
    let sent = sim.sent();
    assert_eq!(sent.len(), 1);
    assert_eq!(sent[0].header.op, OpCode::PING);
}

#[test]
fn holding_confirms_every_sixth_of_the_timeout_one_at_a_time() {
    let mut sim = established();
    sim.set(100);
    sim.s.set_confirming(sim.now, true);
    // The handshake's bound (5.7 s) is far: the first one interval later,
    // so a hold released before then costs nothing.
    assert_eq!(syncs(&mut sim), Vec::<i32>::new());
    sim.tick_at_deadline(1_100);
    assert_eq!(syncs(&mut sim), [1]);
    // Unanswered: no second one, however long it takes (up to the drop).
    sim.tick_at(2_500);
    let _ = sim.sent();
    answer(&mut sim, 1);
    // The next was due 1 s after the first was sent: it goes at once.
    assert_eq!(syncs(&mut sim), [2]);
    sim.set(2_600);
    answer(&mut sim, 2);
    assert_eq!(sim.s.poll_timeout(), Some(at(3_500)));
    // Turned off: nothing more but pings.
    sim.s.set_confirming(sim.now, false);
    assert!(sim.s.poll_timeout() > Some(at(3_500)));
    sim.tick_at(4_000);
    assert!(sim.sent().is_empty());
}

#[test]
fn holding_near_the_bound_confirms_at_once() {
    let mut sim = established();
    sim.set(4_000);
    sim.s.set_confirming(sim.now, true);
    assert_eq!(syncs(&mut sim), [1]);
}

#[test]
fn confirmation_off_in_the_config_sends_nothing() {
    let mut config = config("127.0.0.1:2181", T as u64);
    config.confirm_quorum = false;
    let mut sim = Sim::new(config);
    sim.establish(T);
    sim.s.set_confirming(sim.now, true);
    assert!(!sim.s.is_confirming());
    assert!(sim.sent().is_empty());
    // The lease is then the local bound alone: 2T/3 after the newest
    // answered question (the handshake, sent at 5 ms).
    assert_eq!(sim.s.lease().until, Some(at(5 + 4_000)));
    assert_eq!(sim.s.lease().lapse, Suspension::ServerSilent);
}

#[test]
fn an_answer_vouches_for_frames_sent_a_lookback_before_its_request() {
    let mut sim = established();
    // The handshake (sent at t=5) was answered: the leader touched then.
    assert_eq!(sim.s.quorum_confirmed_at(), Some(at(5)));
    sim.set(100);
    sim.s.set_confirming(sim.now, true);
    sim.tick_at(1_100);
    assert_eq!(syncs(&mut sim), [1]);
    // Held from the start: the earlier of the local bound (2T/3 after the
    // handshake) and the quorum bound (5.7 s after it).
    assert_eq!(sim.s.lease().until, Some(at(5 + 4_000)));
    assert_eq!(sim.s.lease().lapse, Suspension::ServerSilent);
    let mut xid = 1;
    for step in 1..=4 {
        answer(&mut sim, xid);
        sim.tick_at(1_100 + step * 1_000);
        xid += 1;
        assert_eq!(syncs(&mut sim), [xid]);
    }
    // The sync sent at 5.1 s vouches for the newest frame sent by 3.225 s:
    // the one at 3.1 s.
    answer(&mut sim, xid);
    assert_eq!(sim.s.quorum_confirmed_at(), Some(at(3_100)));
    // Now the quorum bound is the earlier (the local one is 5.1 s + 4 s).
    assert_eq!(sim.s.lease().until, Some(at(3_100 + 5_700)));
    assert_eq!(sim.s.lease().lapse, Suspension::QuorumUnconfirmed);
    assert!(sim.s.lease().is_valid(at(8_799)));
    assert!(!sim.s.lease().is_valid(at(8_800)));
}

#[test]
fn reads_vouch_for_nothing_writes_do() {
    let mut sim = established();
    sim.set(3_000);
    let _ = sim.submit(zoolock_core::Op::get_data(&support::p("/a"), false));
    let _ = sim.sent();
    sim.feed_ok(&ok(1, 0, Response::Data { data: None, stat: support::stat(1) }));
    assert_eq!(sim.s.quorum_confirmed_at(), Some(at(5)), "a read is answered by the server alone");
    sim.set(4_000);
    let _ = sim.submit(zoolock_core::Op::sync(&support::p("/a")));
    let _ = sim.sent();
    sim.feed_ok(&ok(2, 0, Response::Path("/a".into())));
    // Sent at 4 s: vouches for frames by 2.125 s, the handshake's only
    // (the read at 3 s is too recent).
    assert_eq!(sim.s.quorum_confirmed_at(), Some(at(5)));
    sim.set(5_500);
    let _ = sim.submit(zoolock_core::Op::sync(&support::p("/a")));
    let _ = sim.sent();
    sim.feed_ok(&ok(3, 0, Response::Path("/a".into())));
    assert_eq!(sim.s.quorum_confirmed_at(), Some(at(3_000)));
}

#[test]
fn a_quorum_that_does_not_answer_drops_the_connection_as_unconfirmed() {
    let mut sim = established();
    sim.set(100);
    sim.s.set_confirming(sim.now, true);
    sim.tick_at(1_100);
    assert_eq!(syncs(&mut sim), [1]);
    // The server goes on answering pings (a follower cut off from the
    // leader), never the sync: the connection is dropped at the quorum
    // bound (the sync is long overdue by then).
    let mut ms = 100;
    while sim.s.connected_host().is_some() {
        let next = sim.s.poll_timeout().unwrap();
        ms = next.as_nanos() / 1_000_000;
        sim.tick_at(ms);
        for f in sim.sent() {
            if f.header.op == OpCode::PING {
                sim.feed_ok(&support::framed(&zoolock_core::wire::ReplyHeader {
                    xid: zoolock_core::wire::Xid::PING,
                    zxid: 0,
                    err: zoolock_core::wire::ErrorCode::OK,
                }));
            }
        }
        assert!(ms <= 5_705, "still connected at {ms} ms");
    }
    assert_eq!(ms, 5_705, "dropped at the quorum bound");
    // The pings kept the local bound ahead: the quorum's lapsed first.
    assert_eq!(sim.s.lease().until, Some(at(5_705)));
    assert_eq!(sim.s.lease().lapse, Suspension::QuorumUnconfirmed);
    assert_eq!(sim.s.suspension(), Suspension::QuorumUnconfirmed);
    assert!(sim.events().contains(&support::state_ev(ConnectionState::Suspended)));
    // Off to the next server at once (no reconnect jitter here).
    assert!(matches!(sim.io().as_slice(), [IoCommand::Close, IoCommand::Connect { .. }]));
    // A new connection whose handshake succeeds renews the bound: the
    // leader revalidated (touched) the session.
    sim.set(5_800);
    sim.connected();
    let _ = sim.sent_connect();
    sim.set(5_810);
    sim.feed_ok(&support::connect_response(T, 0x1234, Some(false)));
    assert_eq!(sim.s.quorum_confirmed_at(), Some(at(5_800)));
    assert!(sim.s.lease().is_valid(at(5_810)));
}

#[test]
fn a_read_only_server_vouches_for_nothing() {
    let mut config = config("127.0.0.1:2181", T as u64);
    config.can_be_read_only = true;
    let mut sim = Sim::new(config);
    sim.tick_at(0);
    sim.dial_connected();
    sim.set(10);
    sim.feed_ok(&support::connect_response(T, 0x1234, Some(true)));
    assert_eq!(sim.s.quorum_confirmed_at(), None);
    sim.s.set_confirming(sim.now, true);
    assert_eq!(sim.s.lease().until, None, "nothing vouches for a hold");
}

#[test]
fn an_ended_session_has_no_lease() {
    let mut sim = established();
    sim.s.close(sim.now);
    sim.feed_ok(&ok(1, 0, Response::Empty));
    assert_eq!(sim.s.lease().until, None);
}
