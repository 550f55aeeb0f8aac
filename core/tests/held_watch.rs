//! Transcript tests of the held-node watch (ARCHITECTURE §6.1, "A hold ends
//! when its node goes"): every held lock or lease node is watched, and its
//! deletion by anyone else makes that hold, and only that one, `Lost` at
//! once.
//!
//! What watches it, at the least cost:
//! - a quiet lock (Pipelined plan, its last acquire granted by its first
//!   listing) lists with a child watch (`getChildren2 <base> w`); if that
//!   listing grants, the child watch is the held node's watch and the grant
//!   sends nothing. When the base's children change while held, the holder
//!   watches its node itself with one `exists <node> w`;
//! - a waiter watches its own node (`exists <own> w`) when it starts to
//!   wait, just before its predecessor's `getData <pred> w`, so its grant
//!   (often a fast handoff) sends nothing either;
//! - otherwise the grant sends `exists <node> w` (the Curator plan, a lock
//!   whose last acquire waited), not waited for;
//! - a pipelined semaphore lease is watched by its listing's child watch
//!   (no checkWatches, no exists); the Curator plan checks that watch off as
//!   Curator does and sends the exists;
//! - revocable nodes rely on the data watch their create arms;
//!   `LockConfig::watch_held(false)` (Curator's own sequence, for trace
//!   replay) watches nothing.

mod transcript;

use zoolock_core::recipes::Part;
use zoolock_core::wire::{ErrorCode, EventType};
use zoolock_core::{
    ApiMisuse, ConnectionState, Recipe, RecipeEvent, RequestError, ZkPath,
    recipes::{LockConfig, MultiLock, Mutex, OpPlan, ReadWriteLock, Semaphore},
};

use transcript::{Answer, Harness, acquired, at, held_watch, kids, listing, mask, member, name, other};

const BASE: &str = "/app/lock";

fn mutex_with(config: LockConfig) -> Harness<Mutex> {
    Harness::new(Mutex::new(ZkPath::new(BASE).unwrap(), config))
}

/// A mutex with the default config: Pipelined plan, held nodes watched.
fn mutex() -> Harness<Mutex> {
    mutex_with(LockConfig::new(1))
}

/// A Pipelined acquire starts: the create and, in the same round trip, the
/// listing, with a child watch when `quiet` (the mutex's last acquire, if
/// any, was granted by its first listing).
fn acquire_sends(h: &mut Harness<Mutex>, quiet: bool) {
    h.run(|m| m.acquire(at(0), None)).unwrap();
    assert_eq!(h.sent(), [format!("create2 {BASE}/_c_<uuid>-lock- [ES]"), listing(BASE, quiet)]);
}

/// Acquires the free lock quietly (Pipelined plan): the create gets
/// sequence `seq`, the listing, which carries a child watch, shows our node
/// alone, `Acquired` is reported, and the grant sends nothing: the listing's
/// child watch is the held node's watch. Returns the node.
fn held(h: &mut Harness<Mutex>, seq: i32) -> String {
    acquire_sends(h, true);
    let node = h.answer(at(1), "create2", Answer::Seq(seq));
    h.answer(at(1), &listing(BASE, true), kids(&[name(&node)]));
    assert_eq!(h.events(), [acquired(&node, 1000 + i64::from(seq))]);
    assert!(h.sent().is_empty(), "no exists: the listing's child watch tells the node's deletion");
    assert_eq!(h.recipe.hold_count(), 1);
    h.assert_idle();
    node
}

/// [`held`], then the base's children change (someone queued behind us):
/// the holder watches its node itself, with one `exists <node> w`, found.
/// Nothing to report. Returns the node.
fn watched(h: &mut Harness<Mutex>, seq: i32) -> String {
    let node = held(h, seq);
    h.children_changed(at(2), BASE, &[&node]);
    h.answer_held_watch(at(2), &node);
    assert!(h.events().is_empty());
    assert!(h.sent().is_empty());
    assert_eq!(h.recipe.hold_count(), 1);
    node
}

/// Quietly acquires with sequence `seq` behind `ahead` (other contenders'
/// names, the last one our predecessor): our own node is watched first, then
/// the predecessor (and the look-ahead node before it, if any), all answered.
/// Returns our node.
fn waiting(h: &mut Harness<Mutex>, seq: i32, ahead: &[String]) -> String {
    acquire_sends(h, true);
    let node = h.answer(at(1), "create2", Answer::Seq(seq));
    let names: Vec<String> = ahead.iter().cloned().chain([name(&node)]).collect();
    h.answer(at(1), &listing(BASE, true), kids(&names));
    let mut expected = vec![held_watch(&node)];
    expected.extend(ahead.iter().rev().take(2).map(|n| format!("getData {BASE}/{} w", mask(n))));
    assert_eq!(h.sent(), expected, "our own node first, then the predecessor and the look-ahead");
    h.answer_held_watch(at(2), &node);
    for _ in 1..expected.len() {
        h.answer(at(2), "getData", Answer::Data(b""));
    }
    assert!(h.events().is_empty());
    assert!(h.sent().is_empty());
    h.assert_idle();
    node
}

/// The hold through `node` is gone: `Lost` alone, no hold left, nothing to
/// send and nothing owed (the node is gone already).
fn lost(h: &mut Harness<Mutex>) {
    assert_eq!(h.events(), [RecipeEvent::Lost]);
    assert_eq!(h.recipe.hold_count(), 0);
    assert_eq!(h.recipe.holder(), None);
    assert!(h.sent().is_empty());
    h.assert_idle();
    assert!(h.recipe.is_quiescent());
}

/// The hold through `node` is released (Pipelined plan): its delete goes
/// out, `Released` at once, and the delete is answered.
fn released(h: &mut Harness<Mutex>, node: &str) {
    h.run(|m| m.release(at(3))).unwrap();
    assert_eq!(h.events(), [RecipeEvent::Released]);
    assert_eq!(h.sent(), [format!("delete {}", mask(node))]);
    h.answer(at(3), "delete", Answer::Empty);
    h.assert_idle();
}

/// The acquire's node `node` went missing: the listing without it deletes
/// it anyway (NoNode), and after the retry pause a new node is made, with a
/// new protection UUID, and listed in the same round trip, still with the
/// child watch (the same acquire, still quiet).
fn started_over(h: &mut Harness<Mutex>, node: &str, ahead: &[String]) {
    h.answer(at(3), &listing(BASE, false), kids(ahead));
    assert_eq!(h.sent(), [format!("delete {}", mask(node))]);
    assert!(h.events().is_empty(), "nothing was held");
    let pause = h.recipe.poll_timeout().expect("a retry pause");
    h.answer(pause, "delete", Answer::Err(ErrorCode::NO_NODE));
    h.timeout(pause);
    assert_eq!(h.sent(), [format!("create2 {BASE}/_c_<uuid>-lock- [ES]"), listing(BASE, true)]);
    let again = h.answer(pause, "create2", Answer::Seq(9));
    assert_ne!(transcript::uuid_of(&again), transcript::uuid_of(node), "a new protection UUID");
}

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

// ---- semaphore -----------------------------------------------------------------------

fn semaphore_with(max: usize, config: LockConfig) -> Harness<Semaphore> {
    Harness::new(Semaphore::new(ZkPath::new("/s").unwrap(), max, config))
}

/// A semaphore with the default config: Pipelined plan, held nodes watched.
fn semaphore(max: usize) -> Harness<Semaphore> {
    semaphore_with(max, LockConfig::new(2))
}

/// The internal mutex on `/s/locks` takes its node `seq`, listed alone. It
/// never watches its node, so none of its listings carries a child watch.
fn mutex_taken(h: &mut Harness<Semaphore>, seq: i32) -> String {
    let lock = h.answer(at(1), "create2 /s/locks/", Answer::Seq(seq));
    h.answer(at(1), &listing("/s/locks", false), kids(&[name(&lock)]));
    let lists: Vec<&String> = h.log.iter().filter(|op| op.starts_with("getChildren2 /s/locks")).collect();
    assert!(lists.iter().all(|op| **op == listing("/s/locks", false)), "{lists:?}");
    lock
}

/// Pipelined plan: the lease node `seq` is created and listed, with the
/// leases' child watch as every lease listing, after `before`. The lease is
/// held, watched by that child watch: neither a checkWatches nor an exists
/// goes out, only the internal mutex node's delete, answered. Returns the
/// lease.
fn lease_taken(h: &mut Harness<Semaphore>, seq: i32, lock: &str, before: &[String]) -> String {
    let lease = h.answer(at(1), "create2 /s/leases/", Answer::Seq(seq));
    let names: Vec<String> = before.iter().cloned().chain([name(&lease)]).collect();
    h.answer(at(1), &listing("/s/leases", true), kids(&names));
    h.answer(at(2), &format!("delete {}", mask(lock)), Answer::Empty);
    assert!(!h.log.iter().any(|op| op.starts_with("checkWatches")), "{:?}", h.log);
    h.assert_never_sent(&held_watch(&lease));
    lease
}

/// Two leases from one `acquire(2)`, both held and watched: the second
/// lease's create changes the leases' children, which ZooKeeper tells (to
/// the first lease's listing's child watch) before the create's reply, so
/// the first lease watches its node itself; the second is watched by its
/// own listing's child watch.
fn two_leases() -> (Harness<Semaphore>, String, String) {
    let mut h = semaphore(2);
    h.run(|s| s.acquire(at(0), 2, None)).unwrap();
    let lock0 = mutex_taken(&mut h, 0);
    let first = lease_taken(&mut h, 0, &lock0, &[]);
    let lock1 = mutex_taken(&mut h, 1);
    h.children_changed(at(1), "/s/leases", &[&first]);
    let second = h.answer(at(1), "create2 /s/leases/", Answer::Seq(1));
    h.answer(at(1), &listing("/s/leases", true), kids(&[name(&first), name(&second)]));
    h.answer_held_watch(at(2), &first);
    h.answer(at(2), &format!("delete {}", mask(&lock1)), Answer::Empty);
    h.assert_never_sent(&held_watch(&second));
    assert_eq!(h.events(), [acquired(&first, 1000), acquired(&second, 1001)]);
    h.assert_idle();
    assert_eq!(h.recipe.leases(), [first.as_str(), second.as_str()]);
    h.sent();
    (h, first, second)
}

/// One lease node deleted: its own watch tells it, exactly `LeaseLost` for
/// it; the other lease stays held, and the same deletion, told to its child
/// watch, makes it watch its node. That one deleted too: its `LeaseLost`,
/// then `Lost`.
#[test]
fn each_lease_is_lost_alone_then_the_handle() {
    let (mut h, first, second) = two_leases();
    h.watch(at(3), EventType::NODE_DELETED, &first);
    assert_eq!(h.events(), [RecipeEvent::LeaseLost { node: first.clone() }]);
    assert_eq!(h.recipe.leases(), [second.as_str()]);
    assert!(h.sent().is_empty());
    h.children_changed(at(3), "/s/leases", &[&second]);
    h.answer_held_watch(at(3), &second);
    assert!(h.events().is_empty());
    h.watch(at(4), EventType::NODE_DELETED, &second);
    assert_eq!(h.events(), [RecipeEvent::LeaseLost { node: second.clone() }, RecipeEvent::Lost]);
    assert!(h.recipe.leases().is_empty());
    assert!(h.sent().is_empty());
    h.assert_idle();
    assert!(h.recipe.is_quiescent());
}

/// Pipelined plan: a lease's grant sends no checkWatches and no exists (its
/// listing's child watch is its watch); the first change of the leases'
/// children sends exactly one `exists <lease> w`, later ones nothing. The
/// lease deleted: `LeaseLost`, then `Lost`; the same when that exists finds
/// no node.
#[test]
fn pipelined_lease_is_watched_by_its_listing() {
    for gone_before_the_exists in [false, true] {
        let mut h = semaphore(2);
        h.run(|s| s.acquire(at(0), 1, None)).unwrap();
        let lock = mutex_taken(&mut h, 0);
        let lease = lease_taken(&mut h, 0, &lock, &[other(1, "lease-", 7)]);
        assert_eq!(h.events(), [acquired(&lease, 1000)]);
        h.assert_idle();
        h.sent();
        h.watch(at(3), EventType::NODE_CHILDREN_CHANGED, "/s/locks");
        assert!(h.sent().is_empty(), "not the leases' path");
        h.children_changed(at(3), "/s/leases", &[&lease]);
        h.watch(at(3), EventType::NODE_CHILDREN_CHANGED, "/s/leases");
        assert!(h.sent().is_empty(), "one exists, once");
        if gone_before_the_exists {
            h.answer(at(4), &held_watch(&lease), Answer::Err(ErrorCode::NO_NODE));
        } else {
            h.answer_held_watch(at(4), &lease);
            assert!(h.events().is_empty());
            h.watch(at(5), EventType::NODE_DELETED, &lease);
        }
        assert_eq!(h.events(), [RecipeEvent::LeaseLost { node: lease.clone() }, RecipeEvent::Lost]);
        assert!(h.recipe.leases().is_empty());
        assert!(h.sent().is_empty());
        h.assert_idle();
    }
}

/// The Curator plan (held nodes watched) is unchanged: the grant checks the
/// leases' child watch off, as Curator does, then watches the lease with
/// `exists <lease> w`; a change of the leases' children is then nothing to
/// the holder, the lease's deletion is.
#[test]
fn curator_plan_lease_checks_the_watch_off_and_watches_the_node() {
    let mut h = semaphore_with(2, LockConfig::new(2).with_plan(OpPlan::Curator));
    h.run(|s| s.acquire(at(0), 1, None)).unwrap();
    let lock = mutex_taken(&mut h, 0);
    let lease = h.answer(at(1), "create2 /s/leases/", Answer::Seq(0));
    h.sent();
    h.answer(at(1), &listing("/s/leases", true), kids(&[name(&lease)]));
    assert_eq!(
        h.sent(),
        ["checkWatches /s/leases type=3".to_string(), held_watch(&lease), format!("delete {}", mask(&lock))]
    );
    h.answer(at(2), "checkWatches", Answer::Empty);
    h.answer_held_watch(at(2), &lease);
    h.answer(at(2), "delete", Answer::Empty);
    assert_eq!(h.events(), [acquired(&lease, 1000)], "once the mutex node is deleted");
    h.watch(at(3), EventType::NODE_CHILDREN_CHANGED, "/s/leases");
    assert!(h.sent().is_empty(), "watched by the node itself");
    assert!(h.events().is_empty());
    h.watch(at(4), EventType::NODE_DELETED, &lease);
    assert_eq!(h.events(), [RecipeEvent::LeaseLost { node: lease.clone() }, RecipeEvent::Lost]);
    h.assert_idle();
}

/// The internal mutex node is never watched: none of its listings carries
/// a child watch, its grant sends no exists (each lease is watched, the
/// first by the exists its children change called for, the second by its
/// listing), not by the reconnect's verify while it is held, and its
/// deletion (our own, once a lease is held) tells nothing.
#[test]
fn the_semaphore_mutex_node_is_never_watched() {
    let (h, first, _) = two_leases();
    let watched: Vec<String> = h.log.iter().filter(|op| op.starts_with("exists")).cloned().collect();
    assert_eq!(watched, [held_watch(&first)]);
    assert!(h.log.iter().filter(|op| op.contains("/s/locks")).all(|op| !op.ends_with(" w")), "{:?}", h.log);

    // A drop while the internal mutex is held (the lease's create in flight).
    let mut h = semaphore(2);
    h.run(|s| s.acquire(at(0), 1, None)).unwrap();
    let lock = mutex_taken(&mut h, 0);
    h.sent();
    h.answer(at(2), "create2 /s/leases/", Answer::Loss);
    h.answer(at(2), &listing("/s/leases", true), Answer::Loss);
    h.session(at(3), ConnectionState::Suspended);
    h.session(at(4), ConnectionState::Reconnected);
    assert_eq!(
        h.sent(),
        [
            // The mutex node is verified, without a watch.
            format!("exists {}", mask(&lock)),
            // The lease's create is looked up by its protection prefix.
            "getChildren /s/leases".to_string(),
        ]
    );
    h.answer(at(5), "exists", Answer::Stat);
    h.answer(at(5), "getChildren /s/leases", kids::<&str>(&[]));
    let lease = lease_taken(&mut h, 0, &lock, &[]);
    assert_eq!(h.events(), [acquired(&lease, 1000)]);
    let watched: Vec<&String> = h.log.iter().filter(|op| op.ends_with(" w")).collect();
    assert_eq!(watched, [&listing("/s/leases", true), &listing("/s/leases", true)], "the leases' listings alone");
    h.assert_idle();
}

// ---- read-write lock -----------------------------------------------------------------

/// The write half's held node and a downgrade's read node are each watched
/// (each half is quiet: its listing's child watch is its held watch), and
/// each deletion is reported as its own half's `Lost`: the write node's,
/// told as a change of the base's children, makes both halves watch their
/// nodes, and the write half's exists finds it gone.
#[test]
fn each_rwlock_half_is_watched_and_lost_apart() {
    let config = LockConfig::new(3);
    let mut h = Harness::new(ReadWriteLock::new(ZkPath::new(BASE).unwrap(), config));
    h.run(|l| l.acquire_write(at(0), None)).unwrap();
    let write = h.answer(at(1), "create2", Answer::Seq(7));
    h.answer(at(1), &listing(BASE, true), kids(&[name(&write)]));
    assert_eq!(h.events(), [member(Part::Write.index(), acquired(&write, 1007))]);
    assert_eq!(h.sent(), [format!("create2 {BASE}/_c_<uuid>-__WRIT__ [ES]"), listing(BASE, true)]);

    // The downgrade: the read node reuses the write node's sequence.
    h.run(|l| l.acquire_read(at(3), None)).unwrap();
    let read = h.answer(at(4), "create2", Answer::Made(2000));
    h.answer(at(4), &listing(BASE, true), kids(&[name(&read), name(&write)]));
    assert_eq!(h.events(), [member(Part::Read.index(), acquired(&read, 2000))]);
    assert_eq!(h.sent(), [format!("create2 {} [E]", mask(&read)), listing(BASE, true)]);
    h.assert_idle();

    // The write node goes: the write half alone is lost.
    h.children_changed(at(6), BASE, &[&read, &write]);
    h.answer_held_watch(at(6), &read);
    assert!(h.events().is_empty());
    h.answer(at(6), &held_watch(&write), Answer::Err(ErrorCode::NO_NODE));
    assert_eq!(h.events(), [member(Part::Write.index(), RecipeEvent::Lost)]);
    assert_eq!((h.recipe.write_hold_count(), h.recipe.read_hold_count()), (0, 1));
    assert!(h.sent().is_empty());
    // Then the read node: the read half is lost.
    h.watch(at(7), EventType::NODE_DELETED, &read);
    assert_eq!(h.events(), [member(Part::Read.index(), RecipeEvent::Lost)]);
    assert_eq!((h.recipe.write_hold_count(), h.recipe.read_hold_count()), (0, 0));
    assert!(h.sent().is_empty());
    h.assert_idle();
    assert!(h.recipe.is_quiescent());
}

// ---- multi-lock ----------------------------------------------------------------------

const MULTI: &str = "/traces/multilock";

/// A multi-lock whose first member loses its node (someone deleted it)
/// while the second is being acquired lets go of everything and starts over
/// (all or nothing, as a lock whose node vanished re-creates it): the
/// second member's attempt is abandoned, the first is acquired anew, and
/// the grant is reported once, with both members held.
#[test]
fn a_multilock_member_lost_during_the_acquire_starts_it_over() {
    let (mut h, one, two) = multilock_first_held();
    first_member_lost(&mut h, &one, &two, true);
    first_member_held(&mut h, 2);
    // lock-2 is free now: taken quietly too.
    let two = h.answer(at(4), &format!("create2 {MULTI}/lock-2/"), Answer::Seq(3));
    h.answer(at(4), &listing(&format!("{MULTI}/lock-2"), true), kids(&[name(&two)]));
    let events = h.events();
    assert_eq!(events.iter().filter(|e| matches!(e, RecipeEvent::Acquired { .. })).count(), 1, "{events:?}");
    assert_eq!(h.recipe.hold_count(), 1);
    assert!(h.recipe.holders().iter().all(Option::is_some));
    h.assert_never_sent(&held_watch(&two));
    h.assert_idle();
}

/// A multi-lock whose held member keeps being deleted while the acquire goes
/// on gives up after a few restarts, holding nothing.
#[test]
fn a_multilock_member_lost_again_and_again_fails() {
    let (mut h, mut one, mut two) = multilock_first_held();
    let mut seq = 10;
    for _ in 0..3 {
        first_member_lost(&mut h, &one, &two, true);
        one = first_member_held(&mut h, seq);
        two = second_member_waits(&mut h, seq + 1);
        seq += 2;
    }
    first_member_lost(&mut h, &one, &two, false);
    let events = h.events();
    assert_eq!(events.last(), Some(&RecipeEvent::Failed(RequestError::RetriesExhausted(3))), "{events:?}");
    assert!(!events.iter().any(|e| matches!(e, RecipeEvent::Acquired { .. })), "{events:?}");
    assert_eq!(h.recipe.hold_count(), 0);
    assert!(h.recipe.is_idle());
    h.assert_idle();
}

/// A pipelined two-member multi-lock with its first member held quietly and
/// the second member waiting (see [`first_member_held`] and
/// [`second_member_waits`]). Returns both members' nodes.
fn multilock_first_held() -> (Harness<MultiLock>, String, String) {
    let paths = (1..=2).map(|i| ZkPath::new(&format!("{MULTI}/lock-{i}")).unwrap()).collect();
    let mut h = Harness::new(MultiLock::new(paths, LockConfig::new(1).with_plan(OpPlan::Pipelined)).unwrap());
    h.run(|m| m.acquire(at(0), None)).unwrap();
    let one = first_member_held(&mut h, 0);
    let two = second_member_waits(&mut h, 1);
    (h, one, two)
}

/// The first member takes lock-1 with sequence `seq`, quietly: its listing
/// carries a child watch, its held watch, and nothing is sent for its node.
/// Returns the node.
fn first_member_held(h: &mut Harness<MultiLock>, seq: i32) -> String {
    let one = h.answer(at(1), &format!("create2 {MULTI}/lock-1/"), Answer::Seq(seq));
    h.answer(at(1), &listing(&format!("{MULTI}/lock-1"), true), kids(&[name(&one)]));
    h.assert_never_sent(&held_watch(&one));
    assert_eq!(h.events(), vec![]);
    one
}

/// The second member queues on lock-2 with sequence `seq` behind another
/// client's node: it watches its own node, then that predecessor, both
/// answered. Returns its node.
fn second_member_waits(h: &mut Harness<MultiLock>, seq: i32) -> String {
    let two = h.answer(at(2), &format!("create2 {MULTI}/lock-2/"), Answer::Seq(seq));
    let pred = other(7, "lock-", u32::try_from(seq - 1).unwrap());
    h.answer(at(2), &listing(&format!("{MULTI}/lock-2"), true), kids(&[pred.clone(), name(&two)]));
    h.answer_held_watch(at(2), &two);
    h.answer(at(2), &format!("getData {MULTI}/lock-2/{} w", mask(&pred)), Answer::Data(b""));
    assert_eq!(h.events(), vec![]);
    h.assert_idle();
    two
}

/// The first member's node `one` is deleted by someone else: told as a
/// change of lock-1's children, the member watches its node, finds it gone,
/// and is lost. Nothing is reported; the waiting second member lets its
/// node `two` go (its delete answered), and, when `restarts`, lock-1's
/// create and listing (quiet again) go out to start over.
fn first_member_lost(h: &mut Harness<MultiLock>, one: &str, two: &str, restarts: bool) {
    h.children_changed(at(3), &format!("{MULTI}/lock-1"), &[one]);
    h.answer(at(3), &held_watch(one), Answer::Err(ErrorCode::NO_NODE));
    let mut expected = vec![format!("delete {}", mask(two))];
    if restarts {
        assert_eq!(h.events(), vec![], "nothing is reported: the acquire goes on");
        assert_eq!(h.recipe.holders(), vec![None, None]);
        expected.push(format!("create2 {MULTI}/lock-1/_c_<uuid>-lock- [ES]"));
        expected.push(listing(&format!("{MULTI}/lock-1"), true));
    }
    assert_eq!(h.sent(), expected);
    h.answer(at(3), "delete", Answer::Empty);
}

// ---- known core gaps (ignored until fixed; `cargo test -- --ignored`) ---------------------

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
