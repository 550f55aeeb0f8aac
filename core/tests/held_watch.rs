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

// The tests, one file per concern: tests/held_watch/<concern>.rs. This file stays
// the crate root (not tests/held_watch/main.rs) so that `mod transcript;` above finds
// tests/transcript/mod.rs, which other test files share.
mod held_watch {
    mod known_gaps;
    mod multilock;
    mod mutex;
    mod rwlock;
    mod semaphore;
}
