//! Transcript tests of `MultiLock`: acquire in list order, roll back and
//! release in reverse, report every error; Curator 5.4.0's `multilock` trace.

mod transcript;

use zoolock_core::wire::{ErrorCode, EventType};
use zoolock_core::{
    ApiMisuse, ConnectionState, Recipe, RecipeEvent, RequestError, ZkPath,
    recipes::{LockConfig, MultiLock, OpPlan},
};

use transcript::{Answer, Harness, acquired, at, held_watch, kids, listing, member, name, other, uuid_of};

const BASE: &str = "/traces/multilock";

fn multi(plan: OpPlan, n: usize, seed: u64) -> Harness<MultiLock> {
    let paths = (1..=n).map(|i| ZkPath::new(&format!("{BASE}/lock-{i}")).unwrap()).collect();
    // Curator's own sequence does not watch a held node.
    let config = LockConfig::new(seed).with_plan(plan).with_watch_held(plan != OpPlan::Curator);
    Harness::new(MultiLock::new(paths, config).unwrap())
}

/// Takes every member of `h` (parents present, uncontended), member `i`
/// getting sequence `i`. With `plan` Pipelined, each member is quiet: its
/// listing carries a child watch, which is its held node's watch, so its
/// grant sends nothing (ARCHITECTURE §6.1).
fn take_all(h: &mut Harness<MultiLock>, plan: OpPlan, n: usize) -> Vec<String> {
    h.run(|m| m.acquire(at(0), None)).unwrap();
    let mut nodes = vec![];
    for i in 0..n {
        let node = h.answer(at(1), &format!("create2 {BASE}/lock-{}/", i + 1), Answer::Seq(i as i32));
        h.answer(at(1), &listing(&format!("{BASE}/lock-{}", i + 1), plan == OpPlan::Pipelined), kids(&[name(&node)]));
        h.assert_never_sent(&held_watch(&node));
        nodes.push(node);
    }
    assert_eq!(h.events(), vec![acquired(&nodes[0], 1000)]);
    nodes
}

/// Trace `multilock/A.conn1`: lock-1 then lock-2 (each making its missing
/// parents), then released lock-2 first.
#[test]
fn curator_trace_in_order_then_reverse() {
    let mut h = multi(OpPlan::Curator, 2, 1);
    h.run(|m| m.acquire(at(0), None)).unwrap();
    let one = h.create_making_parents(1, "create2 /traces/multilock/lock-1/_c_<uuid>-lock- [ES]", 1, 1);
    h.answer(at(8), "getChildren2 /traces/multilock/lock-1", kids(&[name(&one)]));
    assert!(h.events().is_empty(), "nothing until every member is held");
    let two = h.create_making_parents(9, "create2 /traces/multilock/lock-2/_c_<uuid>-lock- [ES]", 2, 3);
    h.answer(at(15), "getChildren2 /traces/multilock/lock-2", kids(&[name(&two)]));
    // The first member's node and token.
    assert_eq!(h.events(), vec![acquired(&one, 1000)]);
    assert_eq!(h.recipe.hold_count(), 1);
    let holders: Vec<String> = h.recipe.holders().iter().map(|x| x.unwrap().0.to_string()).collect();
    assert_eq!(holders, [one.clone(), two.clone()]);
    assert_ne!(uuid_of(&one), uuid_of(&two), "members draw distinct UUIDs");

    h.run(|m| m.release(at(16))).unwrap();
    // Curator plan: one member at a time.
    assert_eq!(h.sent().last().unwrap(), "delete /traces/multilock/lock-2/_c_<uuid>-lock-0000000000");
    h.answer(at(17), "delete /traces/multilock/lock-2/", Answer::Empty);
    assert!(h.events().is_empty());
    h.answer(at(18), "delete /traces/multilock/lock-1/", Answer::Empty);
    assert_eq!(h.events(), vec![RecipeEvent::Released]);
    h.assert_idle();
    assert!(h.recipe.is_quiescent());
    assert_eq!(
        h.log,
        [
            "create2 /traces/multilock/lock-1/_c_<uuid>-lock- [ES]",
            "exists /traces",
            "exists /traces/multilock",
            "createContainer /traces/multilock [C]",
            "exists /traces/multilock/lock-1",
            "createContainer /traces/multilock/lock-1 [C]",
            "create2 /traces/multilock/lock-1/_c_<uuid>-lock- [ES]",
            "getChildren2 /traces/multilock/lock-1",
            "create2 /traces/multilock/lock-2/_c_<uuid>-lock- [ES]",
            "exists /traces",
            "exists /traces/multilock",
            "exists /traces/multilock/lock-2",
            "createContainer /traces/multilock/lock-2 [C]",
            "create2 /traces/multilock/lock-2/_c_<uuid>-lock- [ES]",
            "getChildren2 /traces/multilock/lock-2",
            "delete /traces/multilock/lock-2/_c_<uuid>-lock-0000000000",
            "delete /traces/multilock/lock-1/_c_<uuid>-lock-0000000000",
        ]
    );
}

/// Member 2 times out at the shared deadline: its node is deleted, member 1
/// is released, then `TimedOut`.
#[test]
fn second_member_times_out_and_the_first_is_released() {
    let mut h = multi(OpPlan::Curator, 2, 2);
    h.run(|m| m.acquire(at(0), Some(at(500)))).unwrap();
    let one = h.answer(at(1), "create2 /traces/multilock/lock-1/", Answer::Seq(0));
    h.answer(at(2), "getChildren2 /traces/multilock/lock-1", kids(&[name(&one)]));
    let two = h.answer(at(3), "create2 /traces/multilock/lock-2/", Answer::Seq(4));
    let holder = other(7, "lock-", 3);
    h.answer(at(4), "getChildren2 /traces/multilock/lock-2", kids(&[name(&two), holder.clone()]));
    h.answer(at(5), "getData /traces/multilock/lock-2/_c_<uuid>-lock-0000000003 w", Answer::Data(b"x"));
    // The same deadline as the whole acquire.
    assert_eq!(h.recipe.poll_timeout(), Some(at(500)));
    h.sent();
    h.timeout(at(500));
    h.answer(at(501), "getChildren2 /traces/multilock/lock-2", kids(&[name(&two), holder.clone()]));
    h.answer(at(502), "getData /traces/multilock/lock-2/_c_<uuid>-lock-0000000003 w", Answer::Data(b"x"));
    assert!(h.events().is_empty(), "the outcome waits for the rollback");
    assert_eq!(
        h.sent(),
        [
            "getChildren2 /traces/multilock/lock-2",
            "getData /traces/multilock/lock-2/_c_<uuid>-lock-0000000003 w",
            "delete /traces/multilock/lock-2/_c_<uuid>-lock-0000000004",
            "delete /traces/multilock/lock-1/_c_<uuid>-lock-0000000000",
        ]
    );
    h.answer(at(503), "delete /traces/multilock/lock-2/", Answer::Empty);
    h.answer(at(504), "delete /traces/multilock/lock-1/", Answer::Empty);
    assert_eq!(h.events(), vec![RecipeEvent::TimedOut]);
    assert_eq!(h.recipe.hold_count(), 0);
    assert!(h.recipe.holders().iter().all(Option::is_none));
    assert!(h.recipe.is_quiescent());
    // Usable again.
    h.run(|m| m.acquire(at(600), None)).unwrap();
    assert_eq!(h.sent(), ["create2 /traces/multilock/lock-1/_c_<uuid>-lock- [ES]"]);
}

/// The first member failure stops the acquire; the members held are released
/// in reverse, then the error is reported.
#[test]
fn member_failure_rolls_back_in_reverse() {
    let mut h = multi(OpPlan::Pipelined, 3, 3);
    h.run(|m| m.acquire(at(0), None)).unwrap();
    for i in 0..2 {
        let node = h.answer(at(1), &format!("create2 {BASE}/lock-{}/", i + 1), Answer::Seq(0));
        h.answer(at(1), &listing(&format!("{BASE}/lock-{}", i + 1), true), kids(&[name(&node)]));
        h.assert_never_sent(&held_watch(&node));
    }
    h.sent();
    h.answer(at(2), "create2 /traces/multilock/lock-3/", Answer::Err(ErrorCode::NO_AUTH));
    // The pipelined listing of lock-3 is still answered by the server.
    h.answer(at(2), &listing("/traces/multilock/lock-3", true), kids::<&str>(&[]));
    assert_eq!(
        h.sent(),
        [
            "delete /traces/multilock/lock-2/_c_<uuid>-lock-0000000000",
            "delete /traces/multilock/lock-1/_c_<uuid>-lock-0000000000",
        ]
    );
    assert_eq!(h.events(), vec![RecipeEvent::Failed(RequestError::Server(ErrorCode::NO_AUTH))]);
    h.answer(at(3), "delete", Answer::Empty);
    h.answer(at(3), "delete", Answer::Empty);
    h.assert_idle();
    assert!(h.recipe.is_quiescent());
}

/// Release goes last-first and reports each member's error, then `Released`.
#[test]
fn release_reports_every_member_error() {
    let mut h = multi(OpPlan::Curator, 3, 4);
    take_all(&mut h, OpPlan::Curator, 3);
    h.run(|m| m.release(at(10))).unwrap();
    h.answer(at(11), "delete /traces/multilock/lock-3/", Answer::Err(ErrorCode::NO_AUTH));
    h.answer(at(12), "delete /traces/multilock/lock-2/", Answer::Empty);
    h.answer(at(13), "delete /traces/multilock/lock-1/", Answer::Err(ErrorCode::BAD_VERSION));
    assert_eq!(
        h.events(),
        vec![
            member(2, RecipeEvent::Failed(RequestError::Server(ErrorCode::NO_AUTH))),
            member(0, RecipeEvent::Failed(RequestError::Server(ErrorCode::BAD_VERSION))),
            RecipeEvent::Released,
        ]
    );
    h.assert_idle();
    assert!(matches!(h.run(|m| m.release(at(14))), Err(ApiMisuse::NotHeld)));
}

/// Acquiring again while held only counts up.
#[test]
fn reentrant_hold() {
    let mut h = multi(OpPlan::Pipelined, 2, 5);
    let nodes = take_all(&mut h, OpPlan::Pipelined, 2);
    h.sent();
    h.run(|m| m.acquire(at(5), None)).unwrap();
    assert!(h.sent().is_empty());
    assert_eq!(h.events(), vec![acquired(&nodes[0], 1000)]);
    h.run(|m| m.release(at(6))).unwrap();
    assert!(h.sent().is_empty());
    h.run(|m| m.release(at(7))).unwrap();
    // Pipelined: all deletes queued at once, last member first.
    assert_eq!(
        h.sent(),
        [
            "delete /traces/multilock/lock-2/_c_<uuid>-lock-0000000001",
            "delete /traces/multilock/lock-1/_c_<uuid>-lock-0000000000",
        ]
    );
    assert_eq!(h.events(), vec![RecipeEvent::Released]);
}

/// While held, the members' connection events are merged into one.
#[test]
fn connection_events_are_merged_while_held() {
    let mut h = multi(OpPlan::Curator, 2, 6);
    take_all(&mut h, OpPlan::Curator, 2);
    h.sent();
    h.session(at(10), ConnectionState::Suspended);
    assert_eq!(h.events(), vec![RecipeEvent::Suspended]);
    h.session(at(11), ConnectionState::Reconnected);
    // Each member verifies its node.
    assert_eq!(
        h.sent(),
        [
            "exists /traces/multilock/lock-1/_c_<uuid>-lock-0000000000",
            "exists /traces/multilock/lock-2/_c_<uuid>-lock-0000000001",
        ]
    );
    h.answer(at(12), "exists", Answer::Stat);
    assert!(h.events().is_empty(), "lock-2 not verified yet");
    h.answer(at(12), "exists", Answer::Stat);
    assert_eq!(h.events(), vec![RecipeEvent::Reconnected]);

    h.session(at(20), ConnectionState::Suspended);
    h.session(at(21), ConnectionState::Reconnected);
    h.answer(at(22), "exists /traces/multilock/lock-1/", Answer::Err(ErrorCode::NO_NODE));
    h.answer(at(22), "exists /traces/multilock/lock-2/", Answer::Stat);
    assert_eq!(h.events(), vec![RecipeEvent::Suspended, RecipeEvent::Lost]);
    assert!(matches!(h.run(|m| m.acquire(at(23), None)), Err(ApiMisuse::MemberLost)));
    // Release drops what is left: only lock-2.
    h.run(|m| m.release(at(24))).unwrap();
    h.answer(at(25), "delete /traces/multilock/lock-2/", Answer::Empty);
    assert_eq!(h.events(), vec![RecipeEvent::Released]);
    h.assert_idle();
}

/// Cancelling mid-acquire cancels the waiting member and releases the held
/// ones; nothing is reported.
#[test]
fn cancel_rolls_back() {
    let mut h = multi(OpPlan::Curator, 2, 7);
    h.run(|m| m.acquire(at(0), None)).unwrap();
    let one = h.answer(at(1), "create2 /traces/multilock/lock-1/", Answer::Seq(0));
    h.answer(at(2), "getChildren2", kids(&[name(&one)]));
    let two = h.answer(at(3), "create2 /traces/multilock/lock-2/", Answer::Seq(1));
    let holder = other(1, "lock-", 0);
    h.answer(at(4), "getChildren2", kids(&[holder.clone(), name(&two)]));
    h.answer(at(5), "getData", Answer::Data(b""));
    h.sent();
    h.run(|m| m.cancel(at(6)));
    assert_eq!(
        h.sent(),
        [
            "delete /traces/multilock/lock-2/_c_<uuid>-lock-0000000001",
            "delete /traces/multilock/lock-1/_c_<uuid>-lock-0000000000",
        ]
    );
    h.answer(at(7), "delete", Answer::Empty);
    h.answer(at(7), "delete", Answer::Empty);
    assert!(h.events().is_empty());
    assert!(h.recipe.is_quiescent());
    // A late event from the cancelled wait does nothing.
    h.watch(at(8), EventType::NODE_DELETED, &format!("{BASE}/lock-2/{holder}"));
    assert!(h.sent().is_empty());
}

#[test]
fn needs_a_path() {
    assert!(MultiLock::new(vec![], LockConfig::new(0)).is_err());
}
