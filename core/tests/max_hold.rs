//! `LockConfig::max_hold`: a hold that reaches its limit is `Lost` (told as
//! `Expired` first) at exactly the grant's `now` plus the limit, its node is
//! deleted, and the next in line (another client) gets the lock.

mod transcript;

use std::time::Duration;

use zoolock_core::wire::EventType;
use zoolock_core::{
    Recipe, RecipeEvent, ZkPath,
    recipes::{Election, ElectionKind, LockConfig, LockEvent, Mutex, Semaphore},
};

use transcript::{Answer, Harness, acquired, at, held_watch, kids, listing, mask, name};

const BASE: &str = "/app/lock";
const LIMIT: Duration = Duration::from_secs(5);

fn mutex(seed: u64) -> Harness<Mutex> {
    Harness::new(Mutex::new(ZkPath::new(BASE).unwrap(), LockConfig::new(seed).max_hold(LIMIT)))
}

/// Acquires the free lock, granted by the reply at `at(granted)`.
fn held(h: &mut Harness<Mutex>, granted: u64) -> String {
    h.run(|m| m.acquire(at(0), None)).unwrap();
    let node = h.answer(at(granted), "create2", Answer::Seq(1));
    h.answer(at(granted), &listing(BASE, true), kids(&[name(&node)]));
    assert_eq!(h.events(), [acquired(&node, 1001)]);
    h.sent();
    node
}

#[test]
fn a_hold_is_lost_at_exactly_its_max_hold_and_its_node_is_deleted() {
    let mut h = mutex(1);
    let node = held(&mut h, 7);
    // The timer runs from the grant's `now`, not from the acquire.
    assert_eq!(h.recipe.poll_timeout(), Some(at(5007)));
    h.timeout(at(5006));
    assert!(h.events().is_empty(), "not a moment early");
    assert_eq!(h.recipe.hold_count(), 1);
    h.timeout(at(5007));
    assert_eq!(h.events(), [RecipeEvent::Expired { node: node.clone().into() }, RecipeEvent::Lost]);
    assert_eq!(h.sent(), [format!("delete {}", mask(&node))]);
    assert_eq!((h.recipe.hold_count(), h.recipe.holder()), (0, None));
    assert_eq!(h.recipe.poll_timeout(), None, "no timer once expired");
    h.answer(at(5008), "delete", Answer::Empty);
    // Our own delete's notification changes nothing.
    h.watch(at(5008), EventType::NODE_CHILDREN_CHANGED, BASE);
    assert!(h.events().is_empty());
    h.assert_idle();
    assert!(h.recipe.is_quiescent());
    // Releasing the lost hold is refused as not held; a new acquire works.
    assert!(h.run(|m| m.release(at(5009))).is_err());
    h.run(|m| m.acquire(at(5010), None)).unwrap();
    assert_eq!(h.sent()[0], format!("create2 {BASE}/_c_<uuid>-lock- [ES]"));
}

#[test]
fn no_max_hold_no_timer() {
    let mut h = Harness::new(Mutex::new(ZkPath::new(BASE).unwrap(), LockConfig::new(1)));
    let node = held(&mut h, 7);
    assert_eq!(h.recipe.poll_timeout(), None);
    h.timeout(at(1_000_000));
    assert!(h.events().is_empty());
    assert_eq!(h.recipe.holder().map(|(n, _)| n.to_string()), Some(node));
}

#[test]
fn a_waiter_in_another_client_gets_the_lock_when_the_holder_expires() {
    let mut a = mutex(1);
    let a_node = held(&mut a, 7);
    // Client B queues behind A.
    let mut b = mutex(2);
    b.run(|m| m.acquire(at(10), None)).unwrap();
    b.sent();
    let b_node = b.answer(at(11), "create2", Answer::Seq(2));
    b.answer(at(11), &listing(BASE, true), kids(&[name(&a_node), name(&b_node)]));
    assert_eq!(b.sent(), [held_watch(&b_node), format!("getData {} w", mask(&a_node))]);
    b.answer_held_watch(at(12), &b_node);
    b.answer(at(12), "getData", Answer::Data(b""));
    assert!(b.events().is_empty());
    assert_eq!(b.recipe.poll_timeout(), None, "a waiter's max hold has not started");
    // A hangs; at its limit it is lost and its node deleted.
    a.timeout(at(5007));
    assert_eq!(a.events(), [RecipeEvent::Expired { node: a_node.clone().into() }, RecipeEvent::Lost]);
    assert_eq!(a.sent(), [format!("delete {}", mask(&a_node))]);
    a.answer(at(5008), "delete", Answer::Empty);
    // The server tells B: its predecessor is gone, and B holds the lock.
    b.watch(at(5009), EventType::NODE_DELETED, &a_node);
    assert_eq!(b.events(), [acquired(&b_node, 1002)]);
    assert_eq!(b.recipe.poll_timeout(), Some(at(5009) + LIMIT), "B's own limit runs from its grant");
}

#[test]
fn a_released_hold_stops_its_timer() {
    let mut h = mutex(1);
    let node = held(&mut h, 7);
    h.run(|m| m.release(at(100))).unwrap();
    assert_eq!(h.events(), [RecipeEvent::Released]);
    assert_eq!(h.sent(), [format!("delete {}", mask(&node))]);
    assert_eq!(h.recipe.poll_timeout(), None);
    h.timeout(at(5007));
    assert!(h.events().is_empty());
}

/// A semaphore lease expires on its own: `Expired` and `LeaseLost` for it,
/// its node deleted; the other lease, granted later, expires later.
#[test]
fn each_semaphore_lease_expires_on_its_own() {
    let mut h = Harness::new(Semaphore::new(ZkPath::new("/s").unwrap(), 2, LockConfig::new(2).max_hold(LIMIT)));
    let lease = |h: &mut Harness<Semaphore>, seq: i32, t: u64, before: &[String]| {
        h.run(|s| s.acquire(at(t), 1, None)).unwrap();
        let lock = h.answer(at(t), "create2 /s/locks/", Answer::Seq(seq));
        h.answer(at(t), &listing("/s/locks", false), kids(&[name(&lock)]));
        let lease = h.answer(at(t), "create2 /s/leases/", Answer::Seq(seq));
        let names: Vec<String> = before.iter().cloned().chain([name(&lease)]).collect();
        h.answer(at(t), &listing("/s/leases", true), kids(&names));
        h.answer(at(t), "delete", Answer::Empty);
        assert_eq!(h.events(), [acquired(&lease, 1000 + i64::from(seq))]);
        h.sent();
        lease
    };
    let first = lease(&mut h, 0, 1, &[]);
    h.watch(at(2), EventType::NODE_CHILDREN_CHANGED, "/s/leases");
    h.answer_held_watch(at(2), &first);
    let second = lease(&mut h, 1, 1000, &[name(&first)]);
    h.assert_idle();
    // (The internal mutex never expires: only the leases' timers are set.)
    assert_eq!(h.recipe.poll_timeout(), Some(at(5001)));
    h.timeout(at(5001));
    assert_eq!(
        h.events(),
        [RecipeEvent::Expired { node: first.clone().into() }, RecipeEvent::LeaseLost { node: first.clone().into() }]
    );
    assert_eq!(h.sent(), [format!("delete {}", mask(&first))]);
    assert_eq!(h.recipe.leases(), [second.as_str()]);
    assert_eq!(h.recipe.poll_timeout(), Some(at(6000)));
    h.timeout(at(6000));
    assert_eq!(
        h.events(),
        [
            RecipeEvent::Expired { node: second.clone().into() },
            RecipeEvent::LeaseLost { node: second.clone().into() },
            RecipeEvent::Lost
        ]
    );
    assert_eq!(h.sent(), [format!("delete {}", mask(&second))]);
}

/// Leadership has a maximum hold too: the term is lost at its limit, the
/// node deleted, and a participant that re-queues queues again.
#[test]
fn a_term_of_leadership_expires_and_the_participant_queues_again() {
    let config = LockConfig::new(1).max_hold(LIMIT);
    let election = Election::new(ZkPath::new(BASE).unwrap(), config, ElectionKind::Latch, "a");
    let mut h = Harness::new(election);
    h.run(|e| e.start(at(0))).unwrap();
    h.sent();
    let node = h.answer(at(3), "create2", Answer::Seq(1));
    h.answer(at(3), &listing(BASE, true), kids(&[name(&node)]));
    assert_eq!(
        h.events(),
        [RecipeEvent::Election(LockEvent::Acquired {
            node: node.as_str().into(),
            token: zoolock_core::FencingToken(1001)
        })]
    );
    h.timeout(at(5003));
    assert_eq!(
        h.events(),
        [LockEvent::Expired { node: node.clone().into() }, LockEvent::Lost].map(RecipeEvent::Election)
    );
    let sent = h.sent();
    assert_eq!(sent[0], format!("delete {}", mask(&node)));
    assert_eq!(sent[1], format!("create2 {BASE}/_c_<uuid>-latch- [ES]"), "queued again");
    assert!(h.recipe.is_queued());
}
