//! Transcript tests of DESIGN §4.10, "a hold ends when its node goes": every
//! held lock or lease node is watched (`exists <node> w`, sent with the grant
//! and not waited for), and its deletion by anyone else makes that hold, and
//! only that one, `Lost` at once. Revocable nodes rely on the data watch
//! their create arms; `LockConfig::watch_held(false)` (Curator's own
//! sequence, for trace replay) watches nothing.

mod transcript;

use zoolock_core::recipes::{READ, WRITE};
use zoolock_core::wire::{ErrorCode, EventType};
use zoolock_core::{
    ApiMisuse, ConnectionState, LockConfig, MultiLock, Mutex, OpPlan, ReadWriteLock, Recipe, RecipeEvent, RequestError,
    Semaphore, ZkPath,
};

use transcript::{Answer, Harness, acquired, at, held_watch, kids, mask, member, name};

const BASE: &str = "/app/lock";

fn mutex_with(config: LockConfig) -> Harness<Mutex> {
    Harness::new(Mutex::new(ZkPath::new(BASE).unwrap(), config))
}

/// A mutex with the default config: Pipelined plan, held nodes watched.
fn mutex() -> Harness<Mutex> {
    mutex_with(LockConfig::new(1))
}

/// Acquires the free lock (Pipelined plan): the create gets sequence `seq`,
/// the listing shows our node alone, `Acquired` is reported, and the grant
/// sends the held node's watch, which is left in flight. Returns the node.
fn granted(h: &mut Harness<Mutex>, seq: i32) -> String {
    h.run(|m| m.acquire(at(0), None)).unwrap();
    assert_eq!(h.sent(), [format!("create2 {BASE}/_c_<uuid>-lock- [ES]"), format!("getChildren2 {BASE}")]);
    let node = h.answer(at(1), "create2", Answer::Seq(seq));
    h.answer(at(1), "getChildren2", kids(&[name(&node)]));
    assert_eq!(h.events(), [acquired(&node, 1000 + i64::from(seq))]);
    assert_eq!(h.sent(), [held_watch(&node)]);
    node
}

/// [`granted`], and the watch's exists is answered: nothing more to say or
/// send, the lock is held.
fn held(h: &mut Harness<Mutex>, seq: i32) -> String {
    let node = granted(h, seq);
    h.answer_held_watch(at(2), &node);
    assert!(h.events().is_empty());
    assert!(h.sent().is_empty());
    assert_eq!(h.recipe.hold_count(), 1);
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

// ---- mutex ---------------------------------------------------------------------------

/// Pipelined grant: `Acquired` first, then `exists <own> w` in the same
/// round trip as anything else; its reply changes nothing.
#[test]
fn pipelined_grant_watches_the_held_node() {
    let mut h = mutex();
    let node = held(&mut h, 0);
    assert_eq!(h.recipe.holder().map(|(n, _)| n.to_string()), Some(node));
    h.assert_idle();
}

/// Someone deletes the held node: `Lost` at once, the hold count drops to
/// 0, nothing is sent, releasing is refused (nothing is held), and a later
/// acquire starts afresh with a new node and a new protection UUID.
#[test]
fn deleting_the_held_node_loses_the_hold() {
    let mut h = mutex();
    let node = held(&mut h, 0);
    h.watch(at(3), EventType::NODE_DELETED, &node);
    lost(&mut h);
    assert!(matches!(h.run(|m| m.release(at(4))), Err(ApiMisuse::NotHeld)));
    // A later acquire works, and watches its own new node.
    let again = held(&mut h, 1);
    assert_ne!(transcript::uuid_of(&again), transcript::uuid_of(&node), "a new protection UUID");
    // The old node's deletion, told twice, is nothing to the new hold.
    h.watch(at(5), EventType::NODE_DELETED, &node);
    assert!(h.events().is_empty());
    assert!(h.sent().is_empty());
    assert_eq!(h.recipe.hold_count(), 1);
}

/// The watch's exists finds no node (deleted between the grant's listing
/// and the exists): the hold is `Lost`.
#[test]
fn held_watch_answered_no_node_loses_the_hold() {
    let mut h = mutex();
    let node = granted(&mut h, 0);
    h.answer(at(2), &held_watch(&node), Answer::Err(ErrorCode::NO_NODE));
    lost(&mut h);
}

/// A data change on the held node uses up the watch: a new `exists <own> w`
/// arms it again, and nothing is reported. Other event kinds on it change
/// nothing. A deletion after the re-arm is still told.
#[test]
fn data_change_on_the_held_node_rearms_the_watch() {
    let mut h = mutex();
    let node = held(&mut h, 0);
    h.watch(at(3), EventType::NODE_DATA_CHANGED, &node);
    assert_eq!(h.sent(), [held_watch(&node)]);
    assert!(h.events().is_empty());
    h.answer_held_watch(at(4), &node);
    assert!(h.events().is_empty());
    assert!(h.sent().is_empty());
    assert_eq!(h.recipe.hold_count(), 1);
    h.watch(at(5), EventType::NODE_CREATED, &node);
    h.watch(at(5), EventType::NODE_CHILDREN_CHANGED, &node);
    assert!(h.events().is_empty());
    assert!(h.sent().is_empty());
    h.watch(at(6), EventType::NODE_DELETED, &node);
    lost(&mut h);
}

/// Pipelined release then re-acquire: our own delete fires the released
/// node's watch (ZooKeeper sends it before the delete's reply), while the
/// next acquire is under way. It is not a loss, neither then nor once the
/// new node is held.
#[test]
fn a_released_nodes_deletion_is_ignored() {
    let mut h = mutex();
    let first = held(&mut h, 0);
    h.run(|m| m.release(at(3))).unwrap();
    assert_eq!(h.events(), [RecipeEvent::Released]);
    h.run(|m| m.acquire(at(3), None)).unwrap();
    assert_eq!(
        h.sent(),
        [
            format!("delete {}", mask(&first)),
            format!("create2 {BASE}/_c_<uuid>-lock- [ES]"),
            format!("getChildren2 {BASE}"),
        ]
    );
    h.watch(at(4), EventType::NODE_DELETED, &first);
    assert!(h.events().is_empty());
    assert!(h.sent().is_empty());
    h.answer(at(4), "delete", Answer::Empty);
    let second = h.answer(at(4), "create2", Answer::Seq(1));
    h.answer(at(4), "getChildren2", kids(&[name(&second)]));
    assert_eq!(h.events(), [acquired(&second, 1001)]);
    assert_eq!(h.sent(), [held_watch(&second)]);
    h.answer_held_watch(at(5), &second);
    // A late notification for the released node changes nothing either.
    h.watch(at(6), EventType::NODE_DELETED, &first);
    assert!(h.events().is_empty());
    assert!(h.sent().is_empty());
    assert_eq!(h.recipe.hold_count(), 1);
    assert_eq!(h.recipe.holder().map(|(n, _)| n.to_string()), Some(second));
}

/// After a drop of the same session, the verify is `exists <own> w`: it
/// re-arms the watch whose own exists the drop may have cut off. Found
/// there, `Reconnected`; a deletion afterwards is told. Found missing,
/// `Lost`.
#[test]
fn reconnect_verifies_with_a_watch() {
    let mut h = mutex();
    let node = granted(&mut h, 0);
    // The drop loses the grant's exists: no watch is armed on the server.
    h.answer(at(2), &held_watch(&node), Answer::Loss);
    assert!(h.events().is_empty());
    assert!(h.sent().is_empty(), "not re-sent on its own: the reconnect's verify re-arms it");
    h.session(at(3), ConnectionState::Suspended);
    assert_eq!(h.events(), [RecipeEvent::Suspended]);
    assert!(h.sent().is_empty());
    h.session(at(4), ConnectionState::Reconnected);
    assert_eq!(h.sent(), [held_watch(&node)]);
    assert!(h.events().is_empty(), "Reconnected waits for the verify");
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

fn semaphore(max: usize) -> Harness<Semaphore> {
    Harness::new(Semaphore::new(ZkPath::new("/s").unwrap(), max, LockConfig::new(2)))
}

/// The internal mutex on `/s/locks` takes its node `seq`, listed alone.
fn mutex_taken(h: &mut Harness<Semaphore>, seq: i32) -> String {
    let lock = h.answer(at(1), "create2 /s/locks/", Answer::Seq(seq));
    h.answer(at(1), "getChildren2 /s/locks", kids(&[name(&lock)]));
    lock
}

/// The lease node `seq` is created and listed after `before`; then the
/// leases' child watch is checked off, the held lease is watched, and the
/// internal mutex node is deleted, all answered. Returns the lease.
fn lease_taken(h: &mut Harness<Semaphore>, seq: i32, lock: &str, before: &[String]) -> String {
    let lease = h.answer(at(1), "create2 /s/leases/", Answer::Seq(seq));
    let listing: Vec<String> = before.iter().cloned().chain([name(&lease)]).collect();
    h.answer(at(1), "getChildren2 /s/leases w", kids(&listing));
    h.answer(at(2), "checkWatches /s/leases", Answer::Empty);
    h.answer_held_watch(at(2), &lease);
    h.answer(at(2), &format!("delete {}", mask(lock)), Answer::Empty);
    lease
}

/// Two leases from one `acquire(2)`, both held and watched.
fn two_leases() -> (Harness<Semaphore>, String, String) {
    let mut h = semaphore(2);
    h.run(|s| s.acquire(at(0), 2, None)).unwrap();
    let lock0 = mutex_taken(&mut h, 0);
    let first = lease_taken(&mut h, 0, &lock0, &[]);
    let lock1 = mutex_taken(&mut h, 1);
    let second = lease_taken(&mut h, 1, &lock1, &[name(&first)]);
    assert_eq!(h.events(), [acquired(&first, 1000), acquired(&second, 1001)]);
    h.assert_idle();
    assert_eq!(h.recipe.leases(), [first.as_str(), second.as_str()]);
    h.sent();
    (h, first, second)
}

/// One lease node deleted: exactly `LeaseLost` for it; the other lease
/// stays held. The other one deleted too: its `LeaseLost`, then `Lost`.
#[test]
fn each_lease_is_lost_alone_then_the_handle() {
    let (mut h, first, second) = two_leases();
    h.watch(at(3), EventType::NODE_DELETED, &first);
    assert_eq!(h.events(), [RecipeEvent::LeaseLost { node: first.clone() }]);
    assert_eq!(h.recipe.leases(), [second.as_str()]);
    assert!(h.sent().is_empty());
    h.watch(at(4), EventType::NODE_DELETED, &second);
    assert_eq!(h.events(), [RecipeEvent::LeaseLost { node: second.clone() }, RecipeEvent::Lost]);
    assert!(h.recipe.leases().is_empty());
    assert!(h.sent().is_empty());
    h.assert_idle();
    assert!(h.recipe.is_quiescent());
}

/// The internal mutex node is never watched: not at its grant (each lease
/// only), not by the reconnect's verify while it is held, and its deletion
/// (our own, once a lease is held) tells nothing.
#[test]
fn the_semaphore_mutex_node_is_never_watched() {
    let (h, first, second) = two_leases();
    let watched: Vec<String> = h.log.iter().filter(|op| op.starts_with("exists")).cloned().collect();
    assert_eq!(watched, [held_watch(&first), held_watch(&second)]);

    // A drop while the internal mutex is held (the lease's create in flight).
    let mut h = semaphore(2);
    h.run(|s| s.acquire(at(0), 1, None)).unwrap();
    let lock = mutex_taken(&mut h, 0);
    h.sent();
    h.answer(at(2), "create2 /s/leases/", Answer::Loss);
    h.answer(at(2), "getChildren2 /s/leases w", Answer::Loss);
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
    let watched: Vec<String> =
        h.log.iter().filter(|op| op.starts_with("exists") && op.ends_with(" w")).cloned().collect();
    assert_eq!(watched, [held_watch(&lease)], "the lease alone");
    h.assert_idle();
}

// ---- read-write lock -----------------------------------------------------------------

/// The write half's held node and a downgrade's read node are each watched,
/// and each deletion is reported as its own half's `Lost`.
#[test]
fn each_rwlock_half_is_watched_and_lost_apart() {
    let config = LockConfig::new(3);
    let mut h = Harness::new(ReadWriteLock::new(ZkPath::new(BASE).unwrap(), config));
    h.run(|l| l.acquire_write(at(0), None)).unwrap();
    let write = h.answer(at(1), "create2", Answer::Seq(7));
    h.answer(at(1), "getChildren2", kids(&[name(&write)]));
    assert_eq!(h.events(), [member(WRITE, acquired(&write, 1007))]);
    assert_eq!(
        h.sent(),
        [format!("create2 {BASE}/_c_<uuid>-__WRIT__ [ES]"), format!("getChildren2 {BASE}"), held_watch(&write)]
    );
    h.answer_held_watch(at(2), &write);

    // The downgrade: the read node reuses the write node's sequence.
    h.run(|l| l.acquire_read(at(3), None)).unwrap();
    let read = h.answer(at(4), "create2", Answer::Made(2000));
    h.answer(at(4), "getChildren2", kids(&[name(&read), name(&write)]));
    assert_eq!(h.events(), [member(READ, acquired(&read, 2000))]);
    assert_eq!(h.sent(), [format!("create2 {} [E]", mask(&read)), format!("getChildren2 {BASE}"), held_watch(&read)]);
    h.answer_held_watch(at(5), &read);

    // The write node goes: the write half alone is lost.
    h.watch(at(6), EventType::NODE_DELETED, &write);
    assert_eq!(h.events(), [member(WRITE, RecipeEvent::Lost)]);
    assert_eq!((h.recipe.write_hold_count(), h.recipe.read_hold_count()), (0, 1));
    assert!(h.sent().is_empty());
    // Then the read node: the read half is lost.
    h.watch(at(7), EventType::NODE_DELETED, &read);
    assert_eq!(h.events(), [member(READ, RecipeEvent::Lost)]);
    assert_eq!((h.recipe.write_hold_count(), h.recipe.read_hold_count()), (0, 0));
    assert!(h.sent().is_empty());
    h.assert_idle();
    assert!(h.recipe.is_quiescent());
}

/// A multi-lock whose first member loses its node (someone deleted it)
/// while the second is being acquired lets go of everything and starts over
/// (all or nothing, as a lock whose node vanished re-creates it): the
/// second member's attempt is abandoned, the first is acquired anew, and
/// the grant is reported once, with both members held.
#[test]
fn a_multilock_member_lost_during_the_acquire_starts_it_over() {
    const MULTI: &str = "/traces/multilock";
    let (mut h, one) = multilock_first_held(MULTI);
    h.watch(at(2), EventType::NODE_DELETED, &one);
    assert_eq!(h.events(), vec![], "nothing is reported: the acquire goes on");
    assert_eq!(h.recipe.holders(), vec![None, None]);
    // The abandoned attempt on lock-2 (still in flight) is cleaned up once
    // its create lands; lock-1 is acquired again.
    let stale = abandoned_second(&mut h, MULTI, 0);
    let again = h.answer(at(3), &format!("create2 {MULTI}/lock-1/"), Answer::Seq(1));
    h.answer(at(3), &format!("getChildren2 {MULTI}/lock-1"), kids(&[name(&again)]));
    h.answer(at(3), &format!("delete {}", mask(&stale)), Answer::Empty);
    h.answer_held_watch(at(3), &again);
    let two = h.answer(at(4), &format!("create2 {MULTI}/lock-2/"), Answer::Seq(2));
    h.answer(at(4), &format!("getChildren2 {MULTI}/lock-2"), kids(&[name(&two)]));
    let events = h.events();
    assert_eq!(events.iter().filter(|e| matches!(e, RecipeEvent::Acquired { .. })).count(), 1, "{events:?}");
    assert_eq!(h.recipe.hold_count(), 1);
    assert!(h.recipe.holders().iter().all(Option::is_some));
}

/// A multi-lock whose held member keeps being deleted while the acquire goes
/// on gives up after a few restarts, holding nothing.
#[test]
fn a_multilock_member_lost_again_and_again_fails() {
    const MULTI: &str = "/traces/multilock";
    let (mut h, mut one) = multilock_first_held(MULTI);
    let mut seq = 10;
    for round in 0..4 {
        h.watch(at(2), EventType::NODE_DELETED, &one);
        let stale = abandoned_second(&mut h, MULTI, seq);
        if round == 3 {
            break;
        }
        one = h.answer(at(3), &format!("create2 {MULTI}/lock-1/"), Answer::Seq(seq + 1));
        h.answer(at(3), &format!("getChildren2 {MULTI}/lock-1"), kids(&[name(&one)]));
        h.answer(at(3), &format!("delete {}", mask(&stale)), Answer::Empty);
        h.answer_held_watch(at(3), &one);
        seq += 2;
    }
    let events = h.events();
    assert_eq!(events.last(), Some(&RecipeEvent::Failed(RequestError::RetriesExhausted(3))), "{events:?}");
    assert!(!events.iter().any(|e| matches!(e, RecipeEvent::Acquired { .. })), "{events:?}");
    assert_eq!(h.recipe.hold_count(), 0);
    assert!(h.recipe.is_idle());
}

/// The second member's abandoned attempt: its create (which landed, as
/// `seq`) and listing are answered, and so is the lookup for its node that
/// the cancellation sent; its node is then deleted. Returns that node.
fn abandoned_second(h: &mut Harness<MultiLock>, base: &str, seq: i32) -> String {
    let stale = h.answer(at(3), &format!("create2 {base}/lock-2/"), Answer::Seq(seq));
    h.answer(at(3), &format!("getChildren2 {base}/lock-2"), kids(&[name(&stale)]));
    h.answer(at(3), &format!("getChildren {base}/lock-2"), kids(&[name(&stale)]));
    let sent = h.sent();
    assert!(sent.contains(&format!("delete {}", mask(&stale))), "the abandoned node is deleted: {sent:?}");
    stale
}

/// A pipelined two-member multi-lock with its first member held (and
/// watched) and the second member's create and listing in flight.
fn multilock_first_held(base: &str) -> (Harness<MultiLock>, String) {
    let paths = (1..=2).map(|i| ZkPath::new(&format!("{base}/lock-{i}")).unwrap()).collect();
    let mut h = Harness::new(MultiLock::new(paths, LockConfig::new(1).with_plan(OpPlan::Pipelined)).unwrap());
    h.run(|m| m.acquire(at(0), None)).unwrap();
    let one = h.answer(at(1), &format!("create2 {base}/lock-1/"), Answer::Seq(0));
    h.answer(at(1), &format!("getChildren2 {base}/lock-1"), kids(&[name(&one)]));
    h.answer_held_watch(at(1), &one);
    assert_eq!(h.events(), vec![]);
    (h, one)
}
