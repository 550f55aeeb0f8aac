//! Taking leases: quantities, timeouts, own leases gone, connection loss.

use crate::*;

#[test]
fn qty_two_takes_leases_one_at_a_time() {
    let mut t = acquiring(3, 2, curator());
    let first = take_free_lease(&mut t, 0, 0, &[]);
    assert_eq!(t.events(), vec![], "nothing is reported before the whole qty is held");
    let second = take_free_lease(&mut t, 1, 1, &[&name(&first)]);
    assert_eq!(t.events(), vec![acquired(&first, 200), acquired(&second, 201)]);
    // The next lease starts only after the mutex node's delete.
    assert_eq!(t.sent(), [taken_ops(1, 0), taken_ops(3, 1)].concat());
    assert_eq!(t.r.leases(), vec![first.as_str(), second.as_str()]);
    assert_eq!(t.r.lease_token(&second), Some(FencingToken(201)));
    t.cmd(|s, now| s.return_all(now));
    assert_eq!(t.sent(), vec!["delete /s/leases/_c_U2-lease-0000000000", "delete /s/leases/_c_U4-lease-0000000001"]);
    t.answer(empty());
    t.answer(no_node()); // already gone: fine
    assert_eq!(t.events(), vec![RecipeEvent::Released, RecipeEvent::Released]);
    assert!(t.r.leases().is_empty());
    assert!(t.r.is_quiescent());
}

#[test]
fn qty_zero_and_a_second_concurrent_acquire_are_refused() {
    let mut t = T::new(Semaphore::new(p("/s"), 1, curator()));
    assert_eq!(t.cmd(|s, now| s.acquire(now, 0, None)), Err(ApiMisuse::ZeroQuantity));
    assert!(t.sent().is_empty());
    t.cmd(|s, now| s.acquire(now, 1, None)).unwrap();
    assert!(t.cmd(|s, now| s.acquire(now, 1, None)).is_err());
    assert_eq!(t.sent(), vec!["create2 /s/locks/_c_U1-lock- f3"]);
    assert!(t.cmd(|s, now| s.return_lease(now, "/s/leases/nope")).is_err());
}

#[test]
fn timeout_waiting_for_a_lease_returns_every_lease_of_the_call() {
    let mut t = T::new(Semaphore::new(p("/s"), 2, curator()));
    let deadline = at(5000);
    t.cmd(|s, now| s.acquire(now, 2, Some(deadline))).unwrap();
    let (first, lease) = second_lease_waits(&mut t, "_c_x-lease-0000000007");
    assert_eq!(t.r.poll_timeout(), Some(deadline));
    t.advance_to(at(5000));
    // Curator runs the loop once more at the deadline.
    assert_eq!(t.sent(), vec!["getChildren2 /s/leases w"]);
    assert_eq!(t.events(), vec![]);
    t.answer_children(&["_c_x-lease-0000000007", &name(&first), &name(&lease)]);
    assert_eq!(
        t.sent(),
        vec![
            "delete /s/leases/_c_U4-lease-0000000001",
            "checkWatches /s/leases t3",
            "delete /s/locks/_c_U3-lock-0000000001",
            "delete /s/leases/_c_U2-lease-0000000000",
        ]
    );
    assert_eq!(t.events(), vec![RecipeEvent::TimedOut]);
    assert!(t.r.leases().is_empty());
    assert!(!t.r.is_quiescent(), "deletes still in flight");
    for _ in 0..4 {
        t.answer(empty());
    }
    assert_eq!(t.events(), vec![]);
    assert!(t.r.is_quiescent());
    assert_eq!(t.r.poll_timeout(), None);
}

#[test]
fn timeout_waiting_for_the_mutex_deletes_only_the_mutex_node() {
    let mut t = T::new(Semaphore::new(p("/s"), 2, curator()));
    t.cmd(|s, now| s.acquire(now, 1, Some(at(3000)))).unwrap();
    let lock = t.answer_create(5, 105);
    t.answer_children(&["_c_other-lock-0000000004", &name(&lock)]);
    t.answer(exists_ok().map(|r| match r {
        Response::Stat(stat) => Response::Data { data: None, stat },
        other => other,
    }));
    assert_eq!(
        t.sent(),
        vec!["create2 /s/locks/_c_U1-lock- f3", "getChildren2 /s/locks", "getData /s/locks/_c_other-lock-0000000004 w"]
    );
    assert_eq!(t.r.poll_timeout(), Some(at(3000)));
    t.advance_to(at(3000));
    assert_eq!(t.sent(), vec!["getChildren2 /s/locks"]);
    t.answer_children(&["_c_other-lock-0000000004", &name(&lock)]);
    t.answer(Ok(Response::Data { data: None, stat: stat(4) }));
    assert_eq!(t.sent(), vec!["getData /s/locks/_c_other-lock-0000000004 w", "delete /s/locks/_c_U1-lock-0000000005"]);
    assert_eq!(t.events(), vec![RecipeEvent::TimedOut]);
    // Behind the internal lock's holder, who is next in line for a lease;
    // the same position again at the deadline is not reported twice.
    assert_eq!(t.queued, [(2, 2)]);
    t.answer(empty());
    assert!(t.r.is_quiescent());
    assert!(t.r.leases().is_empty());
}

#[test]
fn a_free_lease_is_taken_even_after_the_deadline() {
    let mut t = T::new(Semaphore::new(p("/s"), 1, curator()));
    let now = t.now;
    t.cmd(|s, _| s.acquire(now, 1, Some(now))).unwrap();
    let lease = take_free_lease(&mut t, 0, 0, &[]);
    assert_eq!(t.events(), vec![acquired(&lease, 200)]);
}

#[test]
fn own_lease_missing_releases_the_mutex_and_starts_over() {
    let mut t = acquiring(1, 1, curator());
    t.answer_create_alone(0, 100);
    let lease = t.answer_create(0, 200);
    t.answer_children(&["_c_x-lease-0000000009"]);
    let mut expected = listing_ops(1);
    expected.extend([
        "delete /s/leases/_c_U2-lease-0000000000".into(),
        "checkWatches /s/leases t3".into(),
        "delete /s/locks/_c_U1-lock-0000000000".into(),
    ]);
    assert_eq!(t.sent(), expected);
    assert_eq!(t.events(), vec![]);
    t.answer(no_node()); // the lease is gone: fine
    t.answer(empty());
    t.answer(empty());
    // The retry policy's pause, then a new mutex node and a new lease node.
    let pause = t.r.poll_timeout().expect("retry pause");
    assert!(pause > t.now && pause <= t.now + Duration::from_millis(400));
    assert!(t.sent().is_empty());
    t.advance_to(pause);
    let lease2 = take_free_lease(&mut t, 1, 1, &[]);
    assert_ne!(lease, lease2);
    assert_eq!(t.sent(), taken_ops(3, 1));
    assert_eq!(t.events(), vec![acquired(&lease2, 201)]);
}

#[test]
fn own_lease_missing_too_often_fails() {
    let mut config = curator();
    config.retry.max_retries = 1;
    let mut t = acquiring(1, 1, config);
    for round in 0..2u32 {
        let lock = t.answer_create(round, 100);
        t.answer_children(&[&name(&lock)]);
        t.answer_create(round, 200);
        t.answer_children(&[]);
        for _ in 0..3 {
            t.answer(empty());
        }
        if round == 0 {
            let pause = t.r.poll_timeout().unwrap();
            t.advance_to(pause);
        }
    }
    assert_eq!(t.events(), vec![RecipeEvent::Failed(RequestError::RetriesExhausted(1))]);
    assert!(t.r.is_quiescent());
    assert_eq!(t.r.poll_timeout(), None);
}

#[test]
fn connection_loss_on_the_lease_create_recovers_by_prefix() {
    let mut t = acquiring(1, 1, curator());
    t.answer_create_alone(0, 100);
    let Request::Create2(req) = t.front() else { panic!() };
    let landed = format!("{}0000000003", req.path);
    t.answer(Err(RequestError::ConnectionLoss));
    t.session(ConnectionState::Suspended);
    assert!(t.idle_wire());
    t.session(ConnectionState::Reconnected);
    assert_eq!(
        t.sent(),
        vec![
            "create2 /s/locks/_c_U1-lock- f3",
            "getChildren2 /s/locks",
            "create2 /s/leases/_c_U2-lease- f3",
            // zoolock confirms the held mutex node survived the drop.
            "exists /s/locks/_c_U1-lock-0000000000",
            "getChildren /s/leases",
        ]
    );
    t.answer(exists_ok());
    t.answer_names(&["_c_x-lease-0000000001", &name(&landed)]);
    assert_eq!(t.sent(), vec!["exists /s/leases/_c_U2-lease-0000000003"]);
    t.answer(Ok(Response::Stat(stat(203))));
    assert_eq!(t.sent(), vec!["getChildren2 /s/leases w"]);
    t.answer_children(&[&name(&landed)]);
    t.answer(empty());
    t.answer(empty());
    assert_eq!(t.events(), vec![acquired(&landed, 203)], "no Suspended: nothing was held yet");
}
