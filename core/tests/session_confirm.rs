//! Quorum confirmation across a reconnect (issue 36): a confirmation that
//! came due while the session had no connection goes out as soon as the new
//! one serves, so the session never hands out a timer already due.

mod support;

use support::{Sim, check_deadline, config, state_ev};
use zoolock_core::ConnectionState;
use zoolock_core::wire::{OpCode, Request};

const NEGOTIATED: i32 = 9_000;

#[test]
fn a_confirmation_due_while_disconnected_goes_out_once_the_new_connection_serves() {
    let mut sim = Sim::new(config("h:1", 10_000));
    assert_eq!(sim.establish(NEGOTIATED), []);
    // Something is held: the first confirmation goes out at once.
    sim.s.set_confirming(sim.now, true);
    let sent = sim.sent();
    assert_eq!(sent.len(), 1);
    assert_eq!(sent[0].request.op_code(), OpCode::SYNC);
    // The connection drops before the answer; the next confirmation (due
    // T/6 = 1.5 s after the first) comes due while the session redials.
    sim.set(100);
    sim.disconnected();
    assert_eq!(sim.events(), [state_ev(ConnectionState::Suspended)]);
    sim.set(3_000);
    sim.resume(NEGOTIATED);
    assert_eq!(sim.events(), [state_ev(ConnectionState::Reconnected)]);
    // Sent with the handshake's answer, not left as a timer in the past.
    let sent = sim.sent();
    assert!(sent.iter().any(|f| matches!(f.request, Request::Sync(_))), "{sent:?}");
    check_deadline(&sim.s, sim.now);
}

#[test]
fn a_confirmation_answered_after_the_interval_is_followed_by_the_next_at_once() {
    let mut sim = Sim::new(config("h:1", 10_000));
    assert_eq!(sim.establish(NEGOTIATED), []);
    sim.s.set_confirming(sim.now, true);
    let sent = sim.sent();
    assert_eq!(sent.len(), 1);
    let xid = sent[0].header.xid.0;
    // Answered 2 s later (T/6 = 1.5 s): the next confirmation is due.
    sim.set(2_010);
    sim.feed_ok(&support::ok(xid, 1, zoolock_core::wire::Response::Path("/".into())));
    let sent = sim.sent();
    assert!(sent.iter().any(|f| matches!(f.request, Request::Sync(_))), "{sent:?}");
    check_deadline(&sim.s, sim.now);
}
