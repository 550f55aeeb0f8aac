//! The semaphore's leases: each watched and lost alone.

use crate::*;

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
    assert_eq!(h.events(), [RecipeEvent::LeaseLost { node: first.clone().into() }]);
    assert_eq!(h.recipe.leases(), [second.as_str()]);
    assert!(h.sent().is_empty());
    h.children_changed(at(3), "/s/leases", &[&second]);
    h.answer_held_watch(at(3), &second);
    assert!(h.events().is_empty());
    h.watch(at(4), EventType::NODE_DELETED, &second);
    assert_eq!(h.events(), [RecipeEvent::LeaseLost { node: second.clone().into() }, RecipeEvent::Lost]);
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
        assert_eq!(h.events(), [RecipeEvent::LeaseLost { node: lease.clone().into() }, RecipeEvent::Lost]);
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
    assert_eq!(h.events(), [RecipeEvent::LeaseLost { node: lease.clone().into() }, RecipeEvent::Lost]);
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
