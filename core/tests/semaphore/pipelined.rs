//! The Pipelined plan.

use crate::*;

#[test]
fn pipelined_plan_sends_create_and_listing_back_to_back() {
    let mut t = acquiring(2, 1, pipelined());
    // A handle's first create on each base goes behind one createContainer
    // of the base, in the same round trip.
    assert_eq!(
        t.sent(),
        vec!["createContainer /s/locks f4", "create2 /s/locks/_c_U1-lock- f3", "getChildren2 /s/locks"]
    );
    t.answer_ensure("/s/locks");
    let lock = t.answer_create(0, 100);
    assert!(t.sent().is_empty());
    t.answer_children(&[&name(&lock)]);
    assert_eq!(
        t.sent(),
        vec!["createContainer /s/leases f4", "create2 /s/leases/_c_U2-lease- f3", "getChildren2 /s/leases w"]
    );
    t.answer_ensure("/s/leases");
    let lease = t.answer_create_alone(0, 200);
    // The held lease is watched by its listing's child watch (no
    // checkWatches, no exists); the internal mutex node is not watched.
    assert_eq!(t.sent(), vec!["delete /s/locks/_c_U1-lock-0000000000"]);
    // Reported once the mutex node's delete is queued; it stays guaranteed.
    assert_eq!(t.events(), vec![acquired(&lease, 200)]);
    t.cmd(|s, now| s.return_lease(now, &lease)).unwrap();
    assert_eq!(t.sent(), vec!["delete /s/leases/_c_U2-lease-0000000000"]);
    assert_eq!(t.events(), vec![RecipeEvent::Released]);
    assert!(!t.r.is_quiescent());
    t.answer(Err(RequestError::ConnectionLoss)); // the mutex delete: retried after the reconnect
    t.answer(empty());
    t.session(ConnectionState::Suspended);
    t.session(ConnectionState::Reconnected);
    assert_eq!(t.sent(), vec!["delete /s/locks/_c_U1-lock-0000000000"]);
    t.answer(empty());
    assert!(t.r.is_quiescent());
}

#[test]
fn pipelined_plan_takes_the_next_lease_in_the_same_round_trip() {
    let mut t = acquiring(2, 2, pipelined());
    t.answer_ensure("/s/locks");
    t.answer_create_alone(0, 100);
    t.answer_ensure("/s/leases");
    t.answer_create_alone(0, 200);
    // One createContainer per base and handle: not for the second lease.
    let mut expected = taken_ops_pipelined(1, 0);
    expected.insert(0, "createContainer /s/locks f4".into());
    expected.insert(3, "createContainer /s/leases f4".into());
    expected.extend(["create2 /s/locks/_c_U3-lock- f3".into(), "getChildren2 /s/locks".into()]);
    assert_eq!(t.sent(), expected);
    assert_eq!(t.events(), vec![]);
}
