//! Reentrancy, foreign children, a lease vanishing on reconnect, an acquire
//! right after a cancel.

use crate::*;

#[test]
fn semaphore_mutex_is_not_reentrant() {
    let mut t = T::new(SemaphoreMutex::new(p("/m"), curator()));
    t.cmd(|m, now| m.acquire(now, None)).unwrap();
    assert!(t.r.is_acquiring());
    assert!(t.cmd(|m, now| m.acquire(now, None)).is_err());
    let lease = take_free_lease(&mut t, 0, 0, &[]);
    assert_eq!(t.events(), vec![acquired(&lease, 200)]);
    assert_eq!(t.cmd(|m, now| m.acquire(now, None)), Err(ApiMisuse::NotReentrant));
    assert_eq!(t.r.holder(), Some((lease.as_str(), FencingToken(200))));
    t.sent();
    t.cmd(|m, now| m.release(now)).unwrap();
    assert_eq!(t.sent(), vec!["delete /m/leases/_c_U2-lease-0000000000"]);
    t.answer(empty());
    assert_eq!(t.events(), vec![RecipeEvent::Released]);
    assert!(t.r.is_quiescent());
    t.cmd(|m, now| m.acquire(now, None)).unwrap();
    assert_eq!(t.sent(), vec!["create2 /m/locks/_c_U3-lock- f3"]);
}

#[test]
fn foreign_children_count_and_wake_ups_on_other_paths_are_ignored() {
    let mut t = acquiring(2, 1, curator());
    let lease = list_lease(&mut t, 0, 3, &["readme", "_c_x-lease-0000000001"]);
    t.sent();
    t.watch(EventType::NODE_CHILDREN_CHANGED, "/s/locks");
    t.watch(EventType::NODE_DELETED, "/s/leases/_c_x-lease-0000000001");
    assert!(t.idle_wire());
    t.watch(EventType::NODE_CHILDREN_CHANGED, "/s/leases");
    t.answer_children(&["readme", &name(&lease)]);
    t.answer(empty());
    t.answer(empty());
    assert_eq!(t.events(), vec![acquired(&lease, 203)]);
}

#[test]
fn a_lease_of_the_call_vanishing_on_reconnect_fails_the_call() {
    let mut t = acquiring(2, 2, curator());
    let (first, lease) = second_lease_waits(&mut t, "_c_x-lease-0000000005");
    t.session(ConnectionState::Suspended);
    assert_eq!(t.sent(), vec!["getChildren2 /s/leases w"], "every connection event wakes the waiter");
    t.session(ConnectionState::Reconnected);
    assert_eq!(t.sent(), vec!["exists /s/locks/_c_U3-lock-0000000001", "exists /s/leases/_c_U2-lease-0000000000"]);
    assert_eq!(t.events(), vec![], "nothing was reported as held");
    t.answer_children(&["_c_x-lease-0000000005", &name(&first), &name(&lease)]);
    t.answer(exists_ok());
    t.answer(no_node());
    assert_eq!(t.sent(), vec!["delete /s/leases/_c_U4-lease-0000000001", "delete /s/locks/_c_U3-lock-0000000001"]);
    assert_eq!(t.events(), vec![RecipeEvent::Failed(RequestError::NodeVanished)]);
    t.answer(empty());
    t.answer(empty());
    assert!(t.r.is_quiescent());
}

#[test]
fn an_acquire_right_after_a_cancel_waits_for_the_mutex_release() {
    let mut t = acquiring(1, 1, curator());
    list_lease(&mut t, 0, 1, &["_c_x-lease-0000000000"]);
    t.sent();
    t.cmd(|s, now| s.cancel(now));
    t.cmd(|s, now| s.acquire(now, 1, None)).unwrap();
    assert_eq!(t.sent(), vec!["delete /s/leases/_c_U2-lease-0000000001", "delete /s/locks/_c_U1-lock-0000000000"]);
    t.answer(empty());
    assert!(t.sent().is_empty());
    t.answer(empty());
    assert_eq!(t.sent(), vec!["create2 /s/locks/_c_U3-lock- f3"]);
    let lease = take_free_lease(&mut t, 1, 2, &[]);
    assert_eq!(t.events(), vec![acquired(&lease, 202)]);
}
