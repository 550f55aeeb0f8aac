//! Transcripts compared with the recorded Curator 5.4.0 traces.

use crate::*;

// ---- Curator traces ------------------------------------------------------------------

#[test]
fn uncontended_with_missing_parents_matches_trace_a() {
    let base = "/traces/semaphore-v2";
    let mut t = T::new(Semaphore::new(p(base), 2, curator()));
    t.cmd(|s, now| s.acquire(now, 1, None)).unwrap();
    let lease = first_client(&mut t, base);
    assert_eq!(t.r.leases(), vec![lease.as_str()]);
    // B's lease arrives: the child watch left armed by the last listing fires
    // and is ignored.
    t.watch(EventType::NODE_CHILDREN_CHANGED, &format!("{base}/leases"));
    assert!(t.idle_wire());
    t.cmd(|s, now| s.return_lease(now, &lease)).unwrap();
    t.answer(empty());
    assert_eq!(t.events(), vec![RecipeEvent::Released]);
    assert!(t.r.is_quiescent());
    assert_eq!(t.log, with_base(A_OPS, base));
    assert_eq!(t.log, trace_ops("semaphore-v2", "A.conn1.jsonl", base));
}

#[test]
fn semaphore_mutex_uncontended_matches_trace_a() {
    let base = "/traces/semaphore-mutex";
    let mut t = T::new(SemaphoreMutex::new(p(base), curator()));
    t.cmd(|m, now| m.acquire(now, None)).unwrap();
    let lease = first_client(&mut t, base);
    assert_eq!(t.r.holder(), Some((lease.as_str(), FencingToken(14))));
    t.watch(EventType::NODE_CHILDREN_CHANGED, &format!("{base}/leases"));
    t.cmd(|m, now| m.release(now)).unwrap();
    t.answer(empty());
    assert_eq!(t.events(), vec![RecipeEvent::Released]);
    assert_eq!(t.r.holder(), None);
    assert_eq!(t.cmd(|m, now| m.release(now)), Err(ApiMisuse::NotHeld));
    assert_eq!(t.log, trace_ops("semaphore-mutex", "A.conn1.jsonl", base));
}

#[test]
fn second_client_with_a_free_lease_matches_trace_b() {
    let base = "/traces/semaphore-v2";
    let a_lease = format!("{base}/leases/_c_036ccb59-721e-4729-b7b0-1beba76ce963-lease-0000000000");
    let mut t = T::new(Semaphore::new(p(base), 2, curator()));
    t.cmd(|s, now| s.acquire(now, 1, None)).unwrap();
    t.answer_create_alone(1, 20);
    let lease = t.answer_create(1, 21);
    t.answer_children(&[&name(&a_lease), &name(&lease)]);
    t.answer(empty());
    t.answer(empty());
    assert_eq!(t.events(), vec![acquired(&lease, 21)]);
    t.watch(EventType::NODE_CHILDREN_CHANGED, &format!("{base}/leases"));
    t.cmd(|s, now| s.return_all(now));
    t.answer(empty());
    assert_eq!(t.events(), vec![RecipeEvent::Released]);
    assert_eq!(t.log, trace_ops("semaphore-v2", "B.conn1.jsonl", base));
}

/// C finds N+1 leases, waits holding the mutex, re-lists on the child watch,
/// gets its lease, checks the watch off and deletes its lock node.
fn contended<R: Recipe<Event: Into<RecipeEvent>>>(t: &mut T<R>, base: &str, others: &[&str], after: &[&str]) -> String {
    let lock = t.answer_create_alone(2, 30);
    let lease = t.answer_create(2, 31);
    let mut all: Vec<&str> = others.to_vec();
    let own = name(&lease);
    all.push(&own);
    t.answer_children(&all);
    t.sent();
    assert!(t.idle_wire(), "waiting on the child watch");
    assert_eq!(t.events(), vec![]);
    assert_eq!(t.r.poll_timeout(), None, "untimed");
    t.watch(EventType::NODE_CHILDREN_CHANGED, &format!("{base}/leases"));
    assert_eq!(t.sent(), vec![format!("getChildren2 {base}/leases w")]);
    let mut rest: Vec<&str> = after.to_vec();
    rest.push(&own);
    t.answer_children(&rest);
    assert_eq!(
        t.sent(),
        vec![format!("checkWatches {base}/leases t3"), normalize(&format!("delete {lock}"), &mut t.uuids),]
    );
    t.answer(empty());
    t.answer(empty());
    assert_eq!(t.events(), vec![acquired(&lease, 31)]);
    lease
}

#[test]
fn contended_waits_holding_the_mutex_matches_trace_c() {
    let base = "/traces/semaphore-v2";
    let a = "_c_036ccb59-721e-4729-b7b0-1beba76ce963-lease-0000000000";
    let b = "_c_653da8f7-9eb2-4845-a4ad-97e01855521f-lease-0000000001";
    let mut t = T::new(Semaphore::new(p(base), 2, curator()));
    t.cmd(|s, now| s.acquire(now, 1, None)).unwrap();
    let lease = contended(&mut t, base, &[a, b], &[b]);
    // Holding the internal lock, waiting for a lease: next in line, three
    // leases listed (ours included); the listing that grants reports none.
    assert_eq!(t.queued, [(1, 3)]);
    t.watch(EventType::NODE_CHILDREN_CHANGED, &format!("{base}/leases"));
    t.cmd(|s, now| s.return_lease(now, &lease)).unwrap();
    t.answer(empty());
    assert_eq!(t.events(), vec![RecipeEvent::Released]);
    assert_eq!(t.log, trace_ops("semaphore-v2", "C.conn1.jsonl", base));
}

#[test]
fn semaphore_mutex_contended_matches_trace_b() {
    let base = "/traces/semaphore-mutex";
    let a = "_c_4e8419d8-b450-4bea-837b-9f5204bd10d2-lease-0000000000";
    let mut t = T::new(SemaphoreMutex::new(p(base), curator()));
    t.cmd(|m, now| m.acquire(now, None)).unwrap();
    let _ = contended(&mut t, base, &[a], &[]);
    t.cmd(|m, now| m.release(now)).unwrap();
    t.answer(empty());
    assert_eq!(t.events(), vec![RecipeEvent::Released]);
    let mut expected = trace_ops("semaphore-mutex", "B.conn1.jsonl", base);
    // The recorded lock node has sequence 1 and lease 1; ours used 2.
    for op in &mut expected {
        *op = op.replace("-0000000001", "-0000000002");
    }
    assert_eq!(t.log, expected);
}
