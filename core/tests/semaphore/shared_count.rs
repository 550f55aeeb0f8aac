//! A semaphore sized by a shared count (issue 18), and revocation.

use crate::*;

// ---- sized by a shared count (issue 18) ----------------------------------------------------

fn count_data(n: i32, version: i32) -> Result<Response, RequestError> {
    Ok(Response::Data { data: Some(count_bytes(n)), stat: Stat { version, mzxid: i64::from(version), ..stat(5) } })
}

#[test]
fn a_count_sized_semaphore_waits_for_the_count_and_lets_a_waiter_in_when_it_grows() {
    let count = SharedCount::new(p("/n"), 1, curator());
    let mut t = T::new(Semaphore::with_count(p("/s"), count, curator()));
    assert_eq!(t.sent(), vec!["create2 /n f0", "getData /n w"]);
    t.cmd(|s, now| s.acquire(now, 1, None)).unwrap();
    assert!(t.sent().is_empty(), "no lease is sought before the size is known");
    t.answer(Err(RequestError::Server(ErrorCode::NODE_EXISTS)));
    t.answer(count_data(1, 3));
    assert_eq!(t.events(), vec![RecipeEvent::Count { value: 1, version: 3 }]);
    let lease = list_lease(&mut t, 0, 1, &["_c_x-lease-0000000000"]);
    assert_eq!(t.queued.last(), Some(&(1, 2)), "two leases of one: waiting");
    assert_eq!((t.r.max_leases(), t.r.available()), (1, Some(0)));
    // Someone sets 2: the count is re-read and the waiter lists again at once.
    t.watch(EventType::NODE_DATA_CHANGED, "/n");
    t.answer(count_data(2, 4));
    t.answer_children(&["_c_x-lease-0000000000", &name(&lease)]);
    t.answer(empty()); // checkWatches
    t.answer(empty()); // delete the lock node
    assert_eq!(t.events(), vec![RecipeEvent::Count { value: 2, version: 4 }, acquired(&lease, 201)]);
    assert_eq!(t.r.lease_limit(&lease), Some(2));
    // Shrinking keeps the lease; an older version never goes back.
    t.watch(EventType::NODE_DATA_CHANGED, "/n");
    t.answer(count_data(0, 2));
    assert_eq!(t.events(), vec![]);
    t.watch(EventType::NODE_DATA_CHANGED, "/n");
    t.answer(count_data(-1, 6));
    assert_eq!(t.events(), vec![RecipeEvent::Count { value: -1, version: 6 }]);
    assert_eq!((t.r.max_leases(), t.r.leases()), (0, vec![lease.as_str()]));
    // Foreign bytes: reported, the last good size stays.
    t.watch(EventType::NODE_DATA_CHANGED, "/n");
    t.answer(Ok(Response::Data { data: Some(Bytes::from_static(b"xy")), stat: Stat { version: 7, ..stat(5) } }));
    assert_eq!(t.events(), vec![RecipeEvent::CountMalformed { len: 2 }]);
    assert_eq!(t.r.max_leases(), 0);
}

#[test]
fn a_revocable_lease_is_told_of_a_revocation_request() {
    let mut sem = Semaphore::new(p("/s"), 2, pipelined());
    sem.make_revocable();
    let mut t = T::new(sem);
    t.cmd(|s, now| s.acquire(now, 1, None)).unwrap();
    t.answer_ensure("/s/locks");
    t.answer_create_alone(0, 100);
    t.answer_ensure("/s/leases");
    let Request::Create2(create) = t.front() else { panic!("expected the lease's create") };
    assert_eq!(create.data.as_deref(), Some(&b""[..]), "a revocable lease node has empty data");
    let lease = t.answer_create(0, 200);
    let shown = "/s/leases/_c_U2-lease-0000000000"; // `lease`, its uuid normalized
    assert_eq!(t.sent()[5..], [format!("getData {shown} w"), "getChildren2 /s/leases w".into()]);
    t.answer(Ok(Response::Data { data: Some(Bytes::new()), stat: stat(200) }));
    t.answer_children(&[&name(&lease)]);
    t.answer(empty()); // checkWatches
    t.answer(empty()); // delete the lock node
    assert_eq!(t.events(), vec![acquired(&lease, 200)]);
    t.sent();
    t.watch(EventType::NODE_DATA_CHANGED, &lease);
    assert_eq!(t.sent(), vec![format!("getData {shown} w")]);
    t.answer(Ok(Response::Data { data: Some(Bytes::from_static(REVOKE_MESSAGE)), stat: stat(200) }));
    assert_eq!(t.events(), vec![RecipeEvent::LeaseRevocationRequested { node: lease.clone().into() }]);
    // Giving it back checks off the revocation watch and deletes the node.
    t.cmd(|s, now| s.return_lease(now, &lease)).unwrap();
    assert_eq!(t.sent(), vec![format!("checkWatches {shown} t3"), format!("delete {shown}")]);
}
