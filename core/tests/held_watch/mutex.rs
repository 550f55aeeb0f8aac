//! The mutex's held-node watch: quiet or contended, waiters, revocable, plans.

use crate::*;

// ---- mutex: the quiet lock's child watch ------------------------------------------------

/// A quiet Pipelined acquire lists with a child watch and its grant sends
/// nothing. Children changes elsewhere are nothing to it; the first change
/// of the base's children sends exactly one `exists <own> w` (the child
/// watch is used up, and may have fired for anyone queueing); later ones
/// send nothing more. The node's deletion then is `Lost`.
#[test]
fn quiet_grant_is_watched_by_its_listing() {
    let mut h = mutex();
    let node = held(&mut h, 0);
    assert_eq!(h.recipe.holder().map(|(n, _)| n.to_string()), Some(node.clone()));
    h.watch(at(2), EventType::NODE_CHILDREN_CHANGED, "/app");
    h.watch(at(2), EventType::NODE_CHILDREN_CHANGED, &node);
    assert!(h.sent().is_empty(), "not the base path");
    h.children_changed(at(3), BASE, &[&node]);
    h.watch(at(3), EventType::NODE_CHILDREN_CHANGED, BASE);
    assert!(h.sent().is_empty(), "one exists, once");
    h.answer_held_watch(at(4), &node);
    assert!(h.events().is_empty());
    assert_eq!(h.recipe.hold_count(), 1);
    h.watch(at(5), EventType::NODE_DELETED, &node);
    lost(&mut h);
}

/// Someone deletes the held node: `Lost` at once, the hold count drops to
/// 0, nothing is sent, releasing is refused (nothing is held), and a later
/// acquire starts afresh with a new node and a new protection UUID, quiet
/// again (the lost acquire was granted by its first listing).
#[test]
fn deleting_the_held_node_loses_the_hold() {
    let mut h = mutex();
    let node = watched(&mut h, 0);
    h.watch(at(3), EventType::NODE_DELETED, &node);
    lost(&mut h);
    assert!(matches!(h.run(|m| m.release(at(4))), Err(ApiMisuse::NotHeld)));
    // A later acquire works, and is watched through its own listing.
    let again = held(&mut h, 1);
    assert_ne!(transcript::uuid_of(&again), transcript::uuid_of(&node), "a new protection UUID");
    // The old node's deletion, told twice, is nothing to the new hold.
    h.watch(at(5), EventType::NODE_DELETED, &node);
    assert!(h.events().is_empty());
    assert!(h.sent().is_empty());
    assert_eq!(h.recipe.hold_count(), 1);
}

/// Held through the child watch, the node's deletion by someone else is
/// told as a change of the base's children: the exists that follows finds
/// no node, and the hold is `Lost`. The same when the exists a Curator-plan
/// grant sends finds no node (deleted between the listing and the exists).
#[test]
fn held_watch_answered_no_node_loses_the_hold() {
    let mut h = mutex();
    let node = held(&mut h, 0);
    h.children_changed(at(2), BASE, &[&node]);
    h.answer(at(3), &held_watch(&node), Answer::Err(ErrorCode::NO_NODE));
    lost(&mut h);

    let mut h = mutex_with(LockConfig::new(1).with_plan(OpPlan::Curator));
    h.run(|m| m.acquire(at(0), None)).unwrap();
    let node = h.answer(at(1), "create2", Answer::Seq(0));
    h.answer(at(2), &listing(BASE, false), kids(&[name(&node)]));
    assert_eq!(h.events(), [acquired(&node, 1000)]);
    assert_eq!(h.sent(), [format!("create2 {BASE}/_c_<uuid>-lock- [ES]"), listing(BASE, false), held_watch(&node)]);
    h.answer(at(3), &held_watch(&node), Answer::Err(ErrorCode::NO_NODE));
    lost(&mut h);
}

/// A data change on the held node uses up its watch: a new `exists <own> w`
/// arms it again, and nothing is reported. Other event kinds on it change
/// nothing. A deletion after the re-arm is still told.
#[test]
fn data_change_on_the_held_node_rearms_the_watch() {
    let mut h = mutex();
    let node = watched(&mut h, 0);
    h.watch(at(3), EventType::NODE_DATA_CHANGED, &node);
    assert_eq!(h.sent(), [held_watch(&node)]);
    assert!(h.events().is_empty());
    h.answer_held_watch(at(4), &node);
    assert!(h.events().is_empty());
    assert!(h.sent().is_empty());
    assert_eq!(h.recipe.hold_count(), 1);
    h.watch(at(5), EventType::NODE_CREATED, &node);
    h.watch(at(5), EventType::NODE_CHILDREN_CHANGED, &node);
    h.watch(at(5), EventType::NODE_CHILDREN_CHANGED, BASE);
    assert!(h.events().is_empty());
    assert!(h.sent().is_empty());
    h.watch(at(6), EventType::NODE_DELETED, &node);
    lost(&mut h);
}

/// Pipelined release then re-acquire: our own delete fires the child watch
/// of the released hold's listing, and would fire an exists watch on the
/// released node (ZooKeeper sends them before the delete's reply), while
/// the next acquire is under way, quiet again. Neither is a loss, nor a
/// reason to watch anything, neither then nor once the new node is held.
#[test]
fn a_released_nodes_deletion_is_ignored() {
    let mut h = mutex();
    let first = held(&mut h, 0);
    h.run(|m| m.release(at(3))).unwrap();
    assert_eq!(h.events(), [RecipeEvent::Released]);
    h.run(|m| m.acquire(at(3), None)).unwrap();
    assert_eq!(
        h.sent(),
        [format!("delete {}", mask(&first)), format!("create2 {BASE}/_c_<uuid>-lock- [ES]"), listing(BASE, true)]
    );
    h.watch(at(4), EventType::NODE_CHILDREN_CHANGED, BASE);
    h.watch(at(4), EventType::NODE_DELETED, &first);
    assert!(h.events().is_empty());
    assert!(h.sent().is_empty());
    h.answer(at(4), "delete", Answer::Empty);
    let second = h.answer(at(4), "create2", Answer::Seq(1));
    h.answer(at(4), &listing(BASE, true), kids(&[name(&second)]));
    assert_eq!(h.events(), [acquired(&second, 1001)]);
    assert!(h.sent().is_empty());
    // A late notification for the released node changes nothing either.
    h.watch(at(6), EventType::NODE_DELETED, &first);
    assert!(h.events().is_empty());
    assert!(h.sent().is_empty());
    assert_eq!(h.recipe.hold_count(), 1);
    assert_eq!(h.recipe.holder().map(|(n, _)| n.to_string()), Some(second));
}

/// After a drop of the same session, the verify is `exists <own> w`: it
/// watches the node itself from then on (a child watch may not outlive the
/// drop), and re-arms a node watch whose exists the drop cut off. Found
/// there, `Reconnected`; a deletion afterwards is told. Found missing,
/// `Lost`.
#[test]
fn reconnect_verifies_with_a_watch() {
    // Held through the child watch.
    let mut h = mutex();
    let node = held(&mut h, 0);
    h.session(at(3), ConnectionState::Suspended);
    assert_eq!(h.events(), [RecipeEvent::Suspended]);
    assert!(h.sent().is_empty());
    h.session(at(4), ConnectionState::Reconnected);
    assert_eq!(h.sent(), [held_watch(&node)]);
    assert!(h.events().is_empty(), "Reconnected waits for the verify");
    h.answer_held_watch(at(5), &node);
    assert_eq!(h.events(), [RecipeEvent::Reconnected]);
    // Watched by the node itself now: a children change sends nothing.
    h.watch(at(6), EventType::NODE_CHILDREN_CHANGED, BASE);
    assert!(h.sent().is_empty());
    h.watch(at(6), EventType::NODE_DELETED, &node);
    lost(&mut h);

    // The drop loses the exists sent once the child watch fired: no watch
    // is armed on the server.
    let mut h = mutex();
    let node = held(&mut h, 0);
    h.children_changed(at(2), BASE, &[&node]);
    h.answer(at(2), &held_watch(&node), Answer::Loss);
    assert!(h.events().is_empty());
    assert!(h.sent().is_empty(), "not re-sent on its own: the reconnect's verify re-arms it");
    h.session(at(3), ConnectionState::Suspended);
    assert_eq!(h.events(), [RecipeEvent::Suspended]);
    h.session(at(4), ConnectionState::Reconnected);
    assert_eq!(h.sent(), [held_watch(&node)]);
    h.answer_held_watch(at(5), &node);
    assert_eq!(h.events(), [RecipeEvent::Reconnected]);
    h.watch(at(6), EventType::NODE_DELETED, &node);
    lost(&mut h);

    // The node went while the connection was down.
    let mut h = mutex();
    let node = held(&mut h, 0);
    h.session(at(3), ConnectionState::Suspended);
    h.session(at(4), ConnectionState::Reconnected);
    assert_eq!(h.sent(), [held_watch(&node)]);
    h.answer(at(5), &held_watch(&node), Answer::Err(ErrorCode::NO_NODE));
    assert_eq!(h.events(), [RecipeEvent::Suspended, RecipeEvent::Lost]);
    assert_eq!(h.recipe.hold_count(), 0);
    assert!(h.sent().is_empty());
    h.assert_idle();
}

// ---- mutex: quiet or contended ----------------------------------------------------------

/// Whether an acquire lists with the child watch depends on the last one: a
/// quiet acquire that has to wait still lists with it (its last acquire
/// was granted at once); the acquire after that contended one lists without
/// it, and its grant, at the first listing, sends the exists; the acquire
/// after that quiet one lists with it again, and its grant sends nothing.
#[test]
fn a_contended_acquire_makes_the_next_list_without_the_watch() {
    let mut h = mutex();
    let first = held(&mut h, 0);
    released(&mut h, &first);

    // Contended: handed off, with nothing sent at the grant.
    let pred = other(1, "lock-", 1);
    let second = waiting(&mut h, 2, std::slice::from_ref(&pred));
    h.watch(at(4), EventType::NODE_DELETED, &format!("{BASE}/{pred}"));
    assert_eq!(h.events(), [acquired(&second, 1002)]);
    assert!(h.sent().is_empty(), "our own node is watched since the wait began");
    released(&mut h, &second);

    // The next acquire lists without the child watch; its grant watches the node.
    acquire_sends(&mut h, false);
    let third = h.answer(at(6), "create2", Answer::Seq(3));
    h.answer(at(6), &listing(BASE, false), kids(&[name(&third)]));
    assert_eq!(h.events(), [acquired(&third, 1003)]);
    assert_eq!(h.sent(), [held_watch(&third)]);
    h.answer_held_watch(at(6), &third);
    h.watch(at(7), EventType::NODE_CHILDREN_CHANGED, BASE);
    assert!(h.sent().is_empty(), "watched by the node itself");
    released(&mut h, &third);

    // That one was quiet: the next lists with the child watch again.
    held(&mut h, 4);
}

/// Re-lists never carry the child watch: a quiet acquire that waits lists
/// again without it after its predecessor's wake-up, and the grant by that
/// listing sends nothing (its own node is watched since the wait began).
/// The first listing's child watch firing later is nothing to the holder.
#[test]
fn a_relist_never_carries_the_child_watch() {
    let mut h = mutex();
    let pred = other(1, "lock-", 0);
    let node = waiting(&mut h, 1, std::slice::from_ref(&pred));
    h.watch(at(3), EventType::NODE_DATA_CHANGED, &format!("{BASE}/{pred}"));
    assert_eq!(h.sent(), [listing(BASE, false)]);
    h.answer(at(3), &listing(BASE, false), kids(&[name(&node)]));
    assert_eq!(h.events(), [acquired(&node, 1001)]);
    assert!(h.sent().is_empty());
    h.watch(at(4), EventType::NODE_CHILDREN_CHANGED, BASE);
    assert!(h.sent().is_empty(), "held through its own node's watch");
    h.watch(at(5), EventType::NODE_DELETED, &node);
    lost(&mut h);
}

// ---- mutex: waiters watch their own node ------------------------------------------------

/// A waiter sends `exists <own> w` right before its predecessor's
/// `getData <pred> w`; the fast handoff's grant then sends nothing, and the
/// watch on the waiting node is the held node's: its deletion is `Lost`.
#[test]
fn a_waiter_watches_its_own_node_before_its_predecessor() {
    let mut h = mutex();
    let (look, pred) = (other(1, "lock-", 0), other(2, "lock-", 1));
    let node = waiting(&mut h, 2, &[look.clone(), pred.clone()]);
    h.watch(at(3), EventType::NODE_DELETED, &format!("{BASE}/{look}"));
    assert_eq!(h.sent(), [listing(BASE, false)], "the look-ahead's listing");
    h.answer(at(3), &listing(BASE, false), kids(&[pred.clone(), name(&node)]));
    assert!(h.sent().is_empty(), "our own node and the predecessor are watched already");
    h.watch(at(4), EventType::NODE_DELETED, &format!("{BASE}/{pred}"));
    assert_eq!(h.events(), [acquired(&node, 1002)]);
    assert!(h.sent().is_empty(), "the fast handoff's grant sends nothing");
    h.watch(at(5), EventType::NODE_DELETED, &node);
    lost(&mut h);
}

/// The waiting node deleted by someone else: told by its own watch, the
/// waiter lists again (without the child watch), finds its node missing,
/// deletes it anyway and starts over after the retry pause with a new node.
/// Waiting on the predecessor, the re-list goes at once; with the
/// predecessor's getData still out, once that is answered; and the same when
/// the own node's exists itself answers NoNode.
#[test]
fn own_node_deleted_while_waiting_starts_over() {
    let pred = other(1, "lock-", 0);

    // Waiting on the predecessor.
    let mut h = mutex();
    let node = waiting(&mut h, 1, std::slice::from_ref(&pred));
    h.watch(at(3), EventType::NODE_DELETED, &node);
    assert_eq!(h.sent(), [listing(BASE, false)]);
    assert!(h.events().is_empty());
    started_over(&mut h, &node, std::slice::from_ref(&pred));

    // The predecessor's getData still out: deleted after our exists was answered.
    let mut h = mutex();
    acquire_sends(&mut h, true);
    let node = h.answer(at(1), "create2", Answer::Seq(1));
    h.answer(at(1), &listing(BASE, true), kids(&[pred.clone(), name(&node)]));
    assert_eq!(h.sent(), [held_watch(&node), format!("getData {BASE}/{} w", mask(&pred))]);
    h.answer_held_watch(at(2), &node);
    h.watch(at(2), EventType::NODE_DELETED, &node);
    assert!(h.sent().is_empty(), "the getData is answered first");
    h.answer(at(2), "getData", Answer::Data(b""));
    assert_eq!(h.sent(), [listing(BASE, false)]);
    started_over(&mut h, &node, std::slice::from_ref(&pred));

    // Deleted before our exists could watch it.
    let mut h = mutex();
    acquire_sends(&mut h, true);
    let node = h.answer(at(1), "create2", Answer::Seq(1));
    h.answer(at(1), &listing(BASE, true), kids(&[pred.clone(), name(&node)]));
    assert_eq!(h.sent(), [held_watch(&node), format!("getData {BASE}/{} w", mask(&pred))]);
    h.answer(at(2), &held_watch(&node), Answer::Err(ErrorCode::NO_NODE));
    assert!(h.sent().is_empty(), "the getData is answered first");
    h.answer(at(2), "getData", Answer::Data(b""));
    assert_eq!(h.sent(), [listing(BASE, false)]);
    assert!(h.events().is_empty());
    started_over(&mut h, &node, std::slice::from_ref(&pred));
}

/// A data change on the waiting node uses its watch up: nothing is sent
/// then, and the grant watches the node again. And when a listing that
/// finds the predecessor's watch already armed needs our node's watch
/// again, the exists goes alone; answered NoNode, the waiter lists again.
#[test]
fn a_data_change_on_the_waiting_node_uses_its_watch_up() {
    let pred = other(1, "lock-", 0);
    let mut h = mutex();
    let node = waiting(&mut h, 1, std::slice::from_ref(&pred));
    h.watch(at(3), EventType::NODE_DATA_CHANGED, &node);
    assert!(h.sent().is_empty());
    assert!(h.events().is_empty());
    h.watch(at(4), EventType::NODE_DELETED, &format!("{BASE}/{pred}"));
    assert_eq!(h.events(), [acquired(&node, 1001)]);
    assert_eq!(h.sent(), [held_watch(&node)], "the grant watches the node again");
    h.answer_held_watch(at(4), &node);
    h.watch(at(5), EventType::NODE_DELETED, &node);
    lost(&mut h);

    // The look-ahead's listing keeps the armed predecessor watch and
    // re-arms our own.
    let (look, pred) = (other(1, "lock-", 0), other(2, "lock-", 1));
    let mut h = mutex();
    let node = waiting(&mut h, 2, &[look.clone(), pred.clone()]);
    h.watch(at(3), EventType::NODE_DATA_CHANGED, &node);
    h.watch(at(3), EventType::NODE_DELETED, &format!("{BASE}/{look}"));
    assert_eq!(h.sent(), [listing(BASE, false)]);
    h.answer(at(3), &listing(BASE, false), kids(&[pred.clone(), name(&node)]));
    assert_eq!(h.sent(), [held_watch(&node)], "no second getData on the predecessor");
    h.answer(at(4), &held_watch(&node), Answer::Err(ErrorCode::NO_NODE));
    assert_eq!(h.sent(), [listing(BASE, false)]);
    assert!(h.events().is_empty());
    started_over(&mut h, &node, std::slice::from_ref(&pred));
}

/// A revocable mutex watches its own node with getData from the create on;
/// that watch tells the node's deletion too, so the grant sends no exists,
/// and the data watch's NodeDeleted on the held node is `Lost`.
#[test]
fn revocable_mutex_uses_its_data_watch() {
    let mut h = mutex();
    h.recipe.make_revocable().unwrap();
    h.run(|m| m.acquire(at(0), None)).unwrap();
    assert_eq!(h.sent(), [format!("create2 {BASE}/_c_<uuid>-lock- [ES]")]);
    let node = h.answer(at(1), "create2", Answer::Seq(0));
    assert_eq!(h.sent(), [format!("getData {} w", mask(&node)), format!("getChildren2 {BASE}")]);
    h.answer(at(2), "getData", Answer::Data(b""));
    h.answer(at(2), "getChildren2", kids(&[name(&node)]));
    assert_eq!(h.events(), [acquired(&node, 1000)]);
    assert!(h.sent().is_empty(), "no exists: the data watch is armed");
    h.watch(at(3), EventType::NODE_DELETED, &node);
    lost(&mut h);
    // Nothing is re-read or re-armed for the lost node.
    h.watch(at(4), EventType::NODE_DATA_CHANGED, &node);
    assert!(h.sent().is_empty());
    assert!(h.events().is_empty());
}

/// A revocable waiter's own-node getData answered NoNode (its node was
/// deleted before the watch was set) is no loss of a hold: nothing is held
/// yet. The acquire goes on; the listing then misses our node, which is
/// deleted anyway, and a new node is made after the retry pause.
#[test]
fn revocable_own_node_gone_before_the_grant_is_no_loss() {
    let mut h = mutex();
    h.recipe.make_revocable().unwrap();
    h.run(|m| m.acquire(at(0), None)).unwrap();
    let node = h.answer(at(1), "create2", Answer::Seq(0));
    h.answer(at(2), "getData", Answer::Err(ErrorCode::NO_NODE));
    assert!(h.events().is_empty(), "nothing was held");
    h.answer(at(2), "getChildren2", kids::<&str>(&[]));
    assert!(h.events().is_empty());
    assert_eq!(h.sent().last(), Some(&format!("delete {}", mask(&node))));
    let pause = h.recipe.poll_timeout().expect("the acquire goes on after a retry pause");
    h.answer(pause, "delete", Answer::Err(ErrorCode::NO_NODE));
    h.timeout(pause);
    assert_eq!(h.sent(), [format!("create2 {BASE}/_c_<uuid>-lock- [ES]")]);
}

/// The Curator plan watches the held node as well unless told not to (only
/// trace replay turns it off): after the listing that grants, the exists.
#[test]
fn curator_plan_watches_the_held_node_by_default() {
    let mut h = mutex_with(LockConfig::new(1).with_plan(OpPlan::Curator));
    h.run(|m| m.acquire(at(0), None)).unwrap();
    assert_eq!(h.sent(), [format!("create2 {BASE}/_c_<uuid>-lock- [ES]")]);
    let node = h.answer(at(1), "create2", Answer::Seq(0));
    assert_eq!(h.sent(), [format!("getChildren2 {BASE}")]);
    h.answer(at(2), "getChildren2", kids(&[name(&node)]));
    assert_eq!(h.events(), [acquired(&node, 1000)]);
    assert_eq!(h.sent(), [held_watch(&node)]);
    h.answer_held_watch(at(3), &node);
    h.watch(at(4), EventType::NODE_DELETED, &node);
    lost(&mut h);
}

/// `watch_held(false)`, in either plan: the grant sends nothing, a data
/// change re-arms nothing, and the reconnect's verify sets no watch.
#[test]
fn watch_held_off_watches_nothing() {
    for plan in [OpPlan::Pipelined, OpPlan::Curator] {
        let mut h = mutex_with(LockConfig::new(1).with_plan(plan).with_watch_held(false));
        h.run(|m| m.acquire(at(0), None)).unwrap();
        let node = h.answer(at(1), "create2", Answer::Seq(0));
        h.answer(at(2), "getChildren2", kids(&[name(&node)]));
        assert_eq!(h.events(), [acquired(&node, 1000)]);
        assert!(!h.log.iter().any(|op| op.starts_with("exists")), "{plan:?}: {:?}", h.log);
        assert!(!h.log.iter().any(|op| op.ends_with(" w")), "no child watch either, {plan:?}: {:?}", h.log);
        h.sent();
        h.watch(at(3), EventType::NODE_DATA_CHANGED, &node);
        assert!(h.sent().is_empty(), "{plan:?}");
        h.session(at(4), ConnectionState::Suspended);
        h.session(at(5), ConnectionState::Reconnected);
        assert_eq!(h.sent(), [format!("exists {}", mask(&node))], "{plan:?}");
        h.answer(at(6), "exists", Answer::Stat);
        assert_eq!(h.events(), [RecipeEvent::Suspended, RecipeEvent::Reconnected], "{plan:?}");
        assert_eq!(h.recipe.hold_count(), 1);
    }
}
