//! Suspension and session loss while holding or acquiring.

use crate::*;

#[test]
fn suspension_while_holding_is_reported_once_for_all_leases() {
    let mut t = acquiring(3, 2, curator());
    let first = take_free_lease(&mut t, 0, 0, &[]);
    let second = take_free_lease(&mut t, 1, 1, &[&name(&first)]);
    t.events();
    t.sent();
    t.session(ConnectionState::Suspended);
    assert_eq!(t.events(), vec![RecipeEvent::Suspended]);
    t.session(ConnectionState::Reconnected);
    assert_eq!(t.sent(), vec!["exists /s/leases/_c_U2-lease-0000000000", "exists /s/leases/_c_U4-lease-0000000001"]);
    t.answer(exists_ok());
    assert_eq!(t.events(), vec![]);
    t.answer(exists_ok());
    assert_eq!(t.events(), vec![RecipeEvent::Reconnected]);
    // Again, and this time one lease vanished: that lease alone is lost,
    // and the survivor is Reconnected (ARCHITECTURE §6.1).
    t.session(ConnectionState::Suspended);
    t.session(ConnectionState::Reconnected);
    t.answer(no_node());
    assert_eq!(t.events(), vec![RecipeEvent::Suspended, RecipeEvent::LeaseLost { node: first.clone().into() }]);
    assert_eq!(t.r.leases(), vec![second.as_str()]);
    t.answer(exists_ok());
    assert_eq!(t.events(), vec![RecipeEvent::Reconnected]);
    assert_eq!(t.r.leases(), vec![second.as_str()]);
}

#[test]
fn session_lost_while_holding_reports_lost() {
    let (mut t, lease) = holding_one(2);
    t.session(ConnectionState::Suspended);
    t.session(ConnectionState::Lost);
    // Each held lease is lost, then the handle.
    assert_eq!(
        t.events(),
        vec![RecipeEvent::Suspended, RecipeEvent::LeaseLost { node: lease.clone().into() }, RecipeEvent::Lost]
    );
    assert!(t.r.leases().is_empty());
    assert!(t.cmd(|s, now| s.return_lease(now, &lease)).is_err());
    // The server may not have expired the session yet: the next session
    // deletes the node if it is still there.
    assert!(!t.r.is_quiescent());
    assert!(t.idle_wire());
    t.sent();
    t.session(ConnectionState::Connected);
    assert_eq!(t.sent(), vec!["delete /s/leases/_c_U2-lease-0000000000"]);
    t.answer(no_node());
    assert_eq!(t.events(), vec![]);
    assert!(t.r.is_quiescent());
}

#[test]
fn a_suspension_is_answered_even_when_every_lease_was_returned_before_the_expiry() {
    // Found by the ensemble soak after a quorum loss: the holder returned
    // its lease while Suspended, the session then expired, and nothing
    // answered the Suspended; the async handle went on reporting every new
    // lease as Suspended.
    let (mut t, lease) = holding_one(2);
    t.session(ConnectionState::Suspended);
    assert_eq!(t.events(), vec![RecipeEvent::Suspended]);
    t.cmd(|s, now| s.return_lease(now, &lease)).unwrap();
    t.session(ConnectionState::Lost);
    let events = t.events();
    assert_eq!(events.last(), Some(&RecipeEvent::Lost), "{events:?}");
    assert_eq!(events.iter().filter(|e| **e == RecipeEvent::Lost).count(), 1, "{events:?}");
    // A session that ends with nothing reported and nothing held says nothing.
    let mut t = T::new(Semaphore::new(p("/s"), 2, curator()));
    t.session(ConnectionState::Lost);
    assert_eq!(t.events(), vec![]);
}

#[test]
fn session_lost_while_acquiring_fails_and_holding_is_lost() {
    let (mut t, held) = holding_one(1);
    // A second acquire waits for a lease (the first one is ours).
    t.cmd(|s, now| s.acquire(now, 1, None)).unwrap();
    list_lease(&mut t, 1, 1, &[&name(&held)]);
    assert!(t.idle_wire());
    t.session(ConnectionState::Lost);
    assert_eq!(
        t.events(),
        vec![
            RecipeEvent::LeaseLost { node: held.clone().into() },
            RecipeEvent::Lost,
            RecipeEvent::Failed(RequestError::SessionExpired)
        ]
    );
    assert!(t.idle_wire());
    t.sent();
    t.session(ConnectionState::Connected);
    assert_eq!(
        t.sent(),
        vec![
            "delete /s/locks/_c_U3-lock-0000000001",
            "delete /s/leases/_c_U2-lease-0000000000",
            "delete /s/leases/_c_U4-lease-0000000001",
        ]
    );
    // The handle works again on the new session.
    cleaned_up_then_afresh(&mut t, 3, no_node);
}
