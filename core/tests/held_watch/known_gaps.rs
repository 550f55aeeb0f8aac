//! Cases once filed as core gaps, fixed since and kept as regressions: the
//! own node's watch across a re-list, a waiting node deleted.

use crate::*;

/// The own node's watch used up by a data change while a re-list is on its
/// way (the waiter is listing, not watching) must still be re-armed by the
/// grant: otherwise the hold is watched by nothing and its node's deletion
/// is never told. (The randomized mutex run finds it too: `MUTEX_SEEDS=527`,
/// seed 526.)
#[test]
fn a_data_change_on_the_own_node_during_a_relist_uses_its_watch_up() {
    let pred = other(1, "lock-", 0);
    let mut h = mutex();
    let node = waiting(&mut h, 1, std::slice::from_ref(&pred));
    h.watch(at(3), EventType::NODE_DATA_CHANGED, &format!("{BASE}/{pred}"));
    assert_eq!(h.sent(), [listing(BASE, false)]);
    h.watch(at(3), EventType::NODE_DATA_CHANGED, &node);
    assert!(h.sent().is_empty());
    h.answer(at(4), &listing(BASE, false), kids(&[name(&node)]));
    assert_eq!(h.events(), [acquired(&node, 1001)]);
    assert_eq!(h.sent(), [held_watch(&node)], "the grant watches the node again");
}

/// The same when the own node's exists is cut off by a drop while a re-list
/// is on its way: no watch was armed, so the grant must send it.
#[test]
fn an_own_watch_cut_off_during_a_relist_is_sent_again_at_the_grant() {
    let (look, pred) = (other(1, "lock-", 0), other(2, "lock-", 1));
    let mut h = mutex();
    let node = waiting(&mut h, 2, &[look.clone(), pred.clone()]);
    // The own watch used up; the look-ahead's listing re-arms it, alone.
    h.watch(at(3), EventType::NODE_DATA_CHANGED, &node);
    h.watch(at(3), EventType::NODE_DELETED, &format!("{BASE}/{look}"));
    h.answer(at(3), &listing(BASE, false), kids(&[pred.clone(), name(&node)]));
    assert_eq!(h.sent(), [listing(BASE, false), held_watch(&node)]);
    // A wake-up on the predecessor: re-list, behind that exists.
    h.watch(at(4), EventType::NODE_DATA_CHANGED, &format!("{BASE}/{pred}"));
    assert_eq!(h.sent(), [listing(BASE, false)]);
    // The drop fails both.
    h.answer(at(5), &held_watch(&node), Answer::Loss);
    h.answer(at(5), &listing(BASE, false), Answer::Loss);
    h.session(at(5), ConnectionState::Suspended);
    h.session(at(6), ConnectionState::Reconnected);
    let sent = h.sent();
    assert!(sent.iter().all(|op| *op == listing(BASE, false)), "{sent:?}");
    for _ in 0..sent.len() {
        h.answer(at(7), &listing(BASE, false), kids(&[name(&node)]));
    }
    assert_eq!(h.events(), [acquired(&node, 1002)]);
    assert_eq!(h.sent(), [held_watch(&node)], "no watch is armed on the node: the grant sends it");
}

/// A revocable waiter's own node deleted by someone else is told by its
/// data watch; as for any lock, a node known deleted is never granted: the
/// predecessor's deletion then must not hand off the lock (that hold would
/// be watched by nothing: the data watch is used up). (The randomized
/// mutex run finds it too: `MUTEX_SEEDS=2112`, seed 2111.) Older than the
/// own-node watch of waiters: revocable nodes never had it.
#[test]
fn a_revocable_waiting_node_deleted_is_never_granted() {
    let mut h = mutex();
    h.recipe.make_revocable().unwrap();
    h.run(|m| m.acquire(at(0), None)).unwrap();
    let node = h.answer(at(1), "create2", Answer::Seq(1));
    let pred = other(1, "lock-", 0);
    h.answer(at(2), "getData", Answer::Data(b""));
    h.answer(at(2), &listing(BASE, false), kids(&[pred.clone(), name(&node)]));
    h.answer(at(2), &format!("getData {BASE}/{} w", mask(&pred)), Answer::Data(b""));
    h.watch(at(3), EventType::NODE_DELETED, &node);
    h.watch(at(4), EventType::NODE_DELETED, &format!("{BASE}/{pred}"));
    let events = h.events();
    assert!(!events.iter().any(|e| matches!(e, RecipeEvent::Acquired { .. })), "{events:?}");
}

/// The same for a non-revocable waiter still watching (its predecessor's
/// getData out): its own node's deletion, told by its own watch, marks the
/// wait fired; the predecessor's getData then answering NoNode must re-list
/// and start over, not hand off a node known deleted (today it reports
/// `Acquired`, sends `exists <own> w`, and only that NoNode makes it `Lost`).
#[test]
fn a_waiting_node_deleted_then_its_predecessor_gone_is_never_granted() {
    let pred = other(1, "lock-", 0);
    let mut h = mutex();
    acquire_sends(&mut h, true);
    let node = h.answer(at(1), "create2", Answer::Seq(1));
    h.answer(at(1), &listing(BASE, true), kids(&[pred.clone(), name(&node)]));
    assert_eq!(h.sent(), [held_watch(&node), format!("getData {BASE}/{} w", mask(&pred))]);
    h.answer_held_watch(at(2), &node);
    h.watch(at(2), EventType::NODE_DELETED, &node);
    h.answer(at(3), "getData", Answer::Err(ErrorCode::NO_NODE));
    let events = h.events();
    assert!(!events.iter().any(|e| matches!(e, RecipeEvent::Acquired { .. })), "{events:?}");
    assert_eq!(h.sent(), [listing(BASE, false)]);
    started_over(&mut h, &node, &[]);
}
