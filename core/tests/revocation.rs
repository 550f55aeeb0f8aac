//! Transcript tests of revocation (the revocable side in `Mutex`, and
//! `Revoker`) and of `Participants`, against Curator 5.4.0's `revocation` trace.

mod transcript;

use zoolock_core::recipes::policy::SortKey;
use zoolock_core::wire::{Bytes, ErrorCode, EventType, Request};
use zoolock_core::{
    ApiMisuse, ConnectionState, Participant, RecipeEvent, RequestError, ZkPath,
    recipes::{LockConfig, LockKind, Mutex, OpPlan, Participants, Revoker},
};

use transcript::{Answer, Harness, acquired, at, kids, name, other};

const BASE: &str = "/traces/revocation";

fn mutex(plan: OpPlan, seed: u64) -> Harness<Mutex> {
    // Curator's own sequence does not watch a held node.
    let config = LockConfig::new(seed)
        .with_plan(plan)
        .with_data(Bytes::from_static(b"127.0.0.1"))
        .with_watch_held(plan != OpPlan::Curator);
    Harness::new(Mutex::new(ZkPath::new(BASE).unwrap(), config))
}

fn p(path: &str) -> ZkPath {
    ZkPath::new(path).unwrap()
}

/// The `Participants` event of a listing without data: `names` under `dir`,
/// in this order.
fn listed_without_data(dir: &str, names: &[&str]) -> RecipeEvent {
    RecipeEvent::Participants(
        names.iter().map(|n| Participant { path: format!("{dir}/{n}"), data: None, stat: None }).collect(),
    )
}

/// Trace `revocation/A.conn1`: a revocable holder creates its node with empty
/// data, watches its own node before listing, re-reads it on NodeDataChanged,
/// sees `__REVOKE__`, and checks its watch off before the delete.
#[test]
fn curator_trace_revocable_holder_a() {
    let mut h = mutex(OpPlan::Curator, 1);
    h.recipe.make_revocable().unwrap();
    h.run(|m| m.acquire(at(0), None)).unwrap();
    let node = h.create_making_parents(1, "create2 /traces/revocation/_c_<uuid>-lock- [ES]", 1, 1);
    h.answer(at(6), "getData /traces/revocation/_c_<uuid>-lock-0000000000 w", Answer::Data(b""));
    h.answer(at(7), "getChildren2 /traces/revocation", kids(&[name(&node)]));
    assert_eq!(h.events(), vec![acquired(&node, 1000)]);

    // B's Revoker writes __REVOKE__.
    h.watch(at(8), EventType::NODE_DATA_CHANGED, &node);
    h.answer(at(9), "getData /traces/revocation/_c_<uuid>-lock-0000000000 w", Answer::Data(b"__REVOKE__"));
    assert_eq!(h.events(), vec![RecipeEvent::RevocationRequested]);

    // The listener releases.
    h.run(|m| m.release(at(10))).unwrap();
    // The server sends the NodeDeleted of our own node before the delete reply.
    h.answer(at(11), "checkWatches /traces/revocation/_c_<uuid>-lock-0000000000 type=3", Answer::Empty);
    h.watch(at(11), EventType::NODE_DELETED, &node);
    h.answer(at(12), "delete /traces/revocation/_c_<uuid>-lock-0000000000", Answer::Empty);
    assert_eq!(h.events(), vec![RecipeEvent::Released]);
    h.assert_idle();
    assert_eq!(
        h.log,
        [
            "create2 /traces/revocation/_c_<uuid>-lock- [ES]",
            "exists /traces",
            "exists /traces/revocation",
            "createContainer /traces/revocation [C]",
            "create2 /traces/revocation/_c_<uuid>-lock- [ES]",
            "getData /traces/revocation/_c_<uuid>-lock-0000000000 w",
            "getChildren2 /traces/revocation",
            "getData /traces/revocation/_c_<uuid>-lock-0000000000 w",
            "checkWatches /traces/revocation/_c_<uuid>-lock-0000000000 type=3",
            "delete /traces/revocation/_c_<uuid>-lock-0000000000",
        ]
    );
    // Revocable nodes carry empty data, whatever the configured data.
    for op in &h.sent_ops {
        if let Request::Create2(c) = op.op.request() {
            assert_eq!(c.data.as_deref(), Some(&b""[..]));
        }
    }
    assert!(h.recipe.is_quiescent());
}

/// Only `__REVOKE__` on our own node counts; other data, other paths and
/// other event kinds do not.
#[test]
fn revocation_needs_the_exact_message_on_our_node() {
    let mut h = mutex(OpPlan::Pipelined, 2);
    h.recipe.make_revocable().unwrap();
    h.run(|m| m.acquire(at(0), None)).unwrap();
    // Revocable: no pipelined listing before the own-node watch.
    assert_eq!(h.sent(), ["create2 /traces/revocation/_c_<uuid>-lock- [ES]"]);
    let node = h.answer(at(1), "create2", Answer::Seq(3));
    h.answer(at(2), "getData /traces/revocation/_c_<uuid>-lock-0000000003 w", Answer::Data(b""));
    h.answer(at(3), "getChildren2", kids(&[name(&node)]));
    assert_eq!(h.events(), vec![acquired(&node, 1003)]);
    h.sent();
    h.watch(at(4), EventType::NODE_DATA_CHANGED, &node);
    h.answer(at(5), "getData /traces/revocation/_c_<uuid>-lock-0000000003 w", Answer::Data(b"__REVOKE__x"));
    h.sent();
    h.watch(at(6), EventType::NODE_DATA_CHANGED, &format!("{BASE}/{}", other(1, "lock-", 9)));
    h.watch(at(7), EventType::NODE_CREATED, &node);
    assert!(h.sent().is_empty());
    assert!(h.events().is_empty());
    // NoNode on the re-read is no revocation: our node is gone, so the
    // hold is lost (ARCHITECTURE §6.1), with nothing left to delete.
    h.watch(at(8), EventType::NODE_DATA_CHANGED, &node);
    assert_eq!(h.sent(), ["getData /traces/revocation/_c_<uuid>-lock-0000000003 w"]);
    h.answer(at(9), "getData", Answer::Err(ErrorCode::NO_NODE));
    assert_eq!(h.events(), vec![RecipeEvent::Lost]);
    assert_eq!(h.recipe.hold_count(), 0);
    assert!(h.sent().is_empty());
    h.assert_idle();
}

/// A waiter can be asked to revoke too (the watch is armed before listing).
#[test]
fn a_revocable_waiter_sees_revocation() {
    let mut h = mutex(OpPlan::Curator, 3);
    h.recipe.make_revocable().unwrap();
    h.run(|m| m.acquire(at(0), None)).unwrap();
    let node = h.answer(at(1), "create2", Answer::Seq(1));
    h.answer(at(2), "getData", Answer::Data(b""));
    h.answer(at(3), "getChildren2", kids(&[other(1, "lock-", 0), name(&node)]));
    h.answer(at(4), "getData /traces/revocation/_c_<uuid>-lock-0000000000 w", Answer::Data(b""));
    h.watch(at(5), EventType::NODE_DATA_CHANGED, &node);
    h.answer(at(6), "getData /traces/revocation/_c_<uuid>-lock-0000000001 w", Answer::Data(b"__REVOKE__"));
    assert_eq!(h.events(), vec![RecipeEvent::RevocationRequested]);
    // Cancelling the wait removes the node.
    h.sent();
    h.run(|m| m.cancel(at(7)));
    assert_eq!(h.sent(), ["delete /traces/revocation/_c_<uuid>-lock-0000000001"]);
}

/// `make_revocable` only applies before an acquire.
#[test]
fn make_revocable_before_acquire_only() {
    let mut h = mutex(OpPlan::Pipelined, 4);
    h.run(|m| m.acquire(at(0), None)).unwrap();
    assert_eq!(h.recipe.make_revocable(), Err(ApiMisuse::RevocableAfterAcquire));
}

/// Trace `revocation/B.conn1`, the waiter's side: the setData on its
/// predecessor wakes it (NodeDataChanged); it re-lists and re-watches, then
/// acquires on NodeDeleted.
#[test]
fn curator_trace_waiter_b_wakes_on_data_change() {
    let mut h = mutex(OpPlan::Curator, 5);
    let a = format!("{BASE}/{}", other(0xa, "lock-", 0));
    h.run(|m| m.acquire(at(0), None)).unwrap();
    let node = h.answer(at(1), "create2 /traces/revocation/_c_<uuid>-lock- [ES]", Answer::Seq(1));
    h.answer(at(2), "getChildren2 /traces/revocation", kids(&[name(&a), name(&node)]));
    h.answer(at(3), "getData /traces/revocation/_c_<uuid>-lock-0000000000 w", Answer::Data(b""));
    h.watch(at(4), EventType::NODE_DATA_CHANGED, &a);
    h.answer(at(5), "getChildren2 /traces/revocation", kids(&[name(&a), name(&node)]));
    h.answer(at(6), "getData /traces/revocation/_c_<uuid>-lock-0000000000 w", Answer::Data(b"__REVOKE__"));
    assert!(h.events().is_empty());
    h.watch(at(7), EventType::NODE_DELETED, &a);
    h.answer(at(8), "getChildren2 /traces/revocation", kids(&[name(&node)]));
    assert_eq!(h.events(), vec![acquired(&node, 1001)]);
    h.run(|m| m.release(at(9))).unwrap();
    h.answer(at(10), "delete /traces/revocation/_c_<uuid>-lock-0000000001", Answer::Empty);
    assert_eq!(h.events(), vec![RecipeEvent::Released]);
}

/// `Revoker.attemptRevoke`: one setData of `__REVOKE__`, any version.
#[test]
fn revoker_sends_one_set_data() {
    let node = format!("{BASE}/{}", other(0xa, "lock-", 0));
    let mut h = Harness::new(Revoker::new(p(&node)));
    assert_eq!(h.sent(), ["setData /traces/revocation/_c_<uuid>-lock-0000000000 '__REVOKE__' v-1"]);
    h.answer(at(1), "setData", Answer::Stat);
    assert_eq!(h.events(), vec![RecipeEvent::RevokeSent]);
    h.assert_idle();
    // Again on request.
    h.run(|r| r.revoke(at(2))).unwrap();
    assert_eq!(h.run(|r| r.revoke(at(2))), Err(ApiMisuse::RequestInProgress));
    h.answer(at(3), "setData /traces/revocation/_c_<uuid>-lock-0000000000 '__REVOKE__' v-1", Answer::Stat);
    assert_eq!(h.events(), vec![RecipeEvent::RevokeSent]);
    assert_eq!(h.recipe.node().as_str(), node);
}

/// NoNode: the holder is already gone and nothing was revoked; reported.
#[test]
fn revoker_reports_no_node() {
    let mut h = Harness::new(Revoker::new(p("/traces/revocation/gone")));
    h.answer(at(1), "setData /traces/revocation/gone", Answer::Err(ErrorCode::NO_NODE));
    assert_eq!(h.events(), vec![RecipeEvent::Failed(RequestError::Server(ErrorCode::NO_NODE))]);
}

/// Connection loss: the idempotent write goes out again after the reconnect;
/// a session end while owed fails it.
#[test]
fn revoker_retries_after_connection_loss() {
    let mut h = Harness::new(Revoker::new(p("/traces/revocation/x")));
    h.answer(at(1), "setData", Answer::Loss);
    assert!(h.events().is_empty());
    h.sent();
    h.session(at(2), ConnectionState::Suspended);
    assert!(h.sent().is_empty());
    h.session(at(3), ConnectionState::Reconnected);
    assert_eq!(h.sent(), ["setData /traces/revocation/x '__REVOKE__' v-1"]);
    h.answer(at(4), "setData", Answer::Loss);
    h.session(at(5), ConnectionState::Lost);
    assert_eq!(h.events(), vec![RecipeEvent::Failed(RequestError::SessionExpired)]);
    h.session(at(6), ConnectionState::Connected);
    assert!(h.sent().is_empty());
}

/// Trace `revocation/B.conn1` step 6: Curator's `getParticipantNodes` is one
/// getChildren2; paths come back in queue order.
#[test]
fn participants_paths_only_like_curator() {
    let a = other(0xa, "lock-", 0);
    let b = other(0xb, "lock-", 1);
    let mut h = Harness::new(Participants::of(LockKind::Mutex, p(BASE)).unwrap().without_data());
    assert_eq!(h.sent(), ["getChildren2 /traces/revocation"]);
    h.answer(at(1), "getChildren2", kids(&[b.clone(), a.clone()]));
    assert_eq!(h.events(), vec![listed_without_data(BASE, &[&a, &b])]);
    h.assert_idle();
}

/// With data (the default): one getData per child, in one round trip; a child
/// gone meanwhile has no data; foreign names count and sort by the key.
#[test]
fn participants_with_data() {
    let a = other(0xa, "lock-", 0);
    let b = other(0xb, "lock-", 1);
    let mut h = Harness::new(Participants::of(LockKind::Mutex, p(BASE)).unwrap());
    h.answer(at(1), "getChildren2", kids(&["zzz-foreign", b.as_str(), a.as_str()]));
    assert_eq!(
        h.sent(),
        [
            "getChildren2 /traces/revocation",
            "getData /traces/revocation/_c_<uuid>-lock-0000000000",
            "getData /traces/revocation/_c_<uuid>-lock-0000000001",
            "getData /traces/revocation/zzz-foreign",
        ]
    );
    h.answer(at(2), "getData", Answer::Data(b"10.0.0.1"));
    h.answer(at(2), "getData", Answer::Err(ErrorCode::NO_NODE));
    assert!(h.events().is_empty());
    h.answer(at(2), "getData", Answer::Data(b""));
    assert_eq!(
        h.events(),
        vec![RecipeEvent::Participants(vec![
            Participant {
                path: format!("{BASE}/{a}"),
                data: Some(Bytes::from_static(b"10.0.0.1")),
                stat: Some(Default::default())
            },
            Participant { path: format!("{BASE}/{b}"), data: None, stat: None },
            Participant {
                path: format!("{BASE}/zzz-foreign"),
                data: Some(Bytes::new()),
                stat: Some(Default::default())
            },
        ])]
    );
    // Once more on request.
    h.run(|x| x.refresh(at(3))).unwrap();
    assert_eq!(h.run(|x| x.refresh(at(3))), Err(ApiMisuse::RequestInProgress));
    h.answer(at(4), "getChildren2", Answer::Err(ErrorCode::NO_NODE));
    assert_eq!(h.events(), vec![RecipeEvent::Participants(vec![])]);
}

/// A missing base path lists as nobody.
#[test]
fn participants_of_a_missing_path() {
    let mut h = Harness::new(Participants::of(LockKind::Mutex, p("/nowhere")).unwrap());
    h.answer(at(1), "getChildren2 /nowhere", Answer::Err(ErrorCode::NO_NODE));
    assert_eq!(h.events(), vec![RecipeEvent::Participants(vec![])]);
    h.assert_idle();
}

/// Read-write participants: one queue for both kinds, or one kind.
#[test]
fn participants_of_a_rwlock() {
    let r0 = other(1, "__READ__", 0);
    let w1 = other(2, "__WRIT__", 1);
    let r2 = other(3, "__READ__", 2);
    let mut all = Harness::new(Participants::of(LockKind::ReadWriteLock, p("/rw")).unwrap().without_data());
    all.answer(at(1), "getChildren2 /rw", kids(&[r2.as_str(), w1.as_str(), r0.as_str()]));
    let paths = |e: Vec<RecipeEvent>| match e.as_slice() {
        [RecipeEvent::Participants(list)] => list.iter().map(|x| x.path.clone()).collect::<Vec<_>>(),
        other => panic!("{other:?}"),
    };
    assert_eq!(paths(all.events()), [format!("/rw/{r0}"), format!("/rw/{w1}"), format!("/rw/{r2}")]);
    let mut writers = Harness::new(
        Participants::of(LockKind::ReadWriteLock, p("/rw")).unwrap().containing("__WRIT__").without_data(),
    );
    writers.answer(at(1), "getChildren2 /rw", kids(&[r2.as_str(), w1.as_str(), r0.as_str()]));
    assert_eq!(paths(writers.events()), [format!("/rw/{w1}")]);
    let mut custom = Harness::new(Participants::new(p("/rw"), SortKey::ReadWrite).containing("__READ__"));
    custom.answer(at(1), "getChildren2 /rw", kids(&[r2.as_str(), w1.as_str(), r0.as_str()]));
    custom.answer(at(2), "getData /rw/_c_<uuid>-__READ__0000000000", Answer::Data(b"a"));
    custom.answer(at(2), "getData /rw/_c_<uuid>-__READ__0000000002", Answer::Data(b"b"));
    assert_eq!(paths(custom.events()), [format!("/rw/{r0}"), format!("/rw/{r2}")]);
}

/// Semaphore participants: the `leases` children, sorted by the lease key
/// (Curator returns them in server order).
#[test]
fn participants_of_a_semaphore() {
    let l3 = other(1, "lease-", 3);
    let l1 = other(2, "lease-", 1);
    let mut h = Harness::new(Participants::of(LockKind::Semaphore, p("/sem")).unwrap().without_data());
    h.answer(at(1), "getChildren2 /sem/leases", kids(&[l3.as_str(), l1.as_str()]));
    assert_eq!(h.events(), vec![listed_without_data("/sem/leases", &[&l1, &l3])]);
}

/// Connection loss mid-listing: what is owed goes out again after the
/// reconnect; a session end fails the listing.
#[test]
fn participants_survive_a_reconnect() {
    let a = other(0xa, "lock-", 0);
    let b = other(0xb, "lock-", 1);
    let mut h = Harness::new(Participants::of(LockKind::Mutex, p(BASE)).unwrap());
    h.answer(at(1), "getChildren2", Answer::Loss);
    h.sent();
    h.session(at(2), ConnectionState::Reconnected);
    assert_eq!(h.sent(), ["getChildren2 /traces/revocation"]);
    h.answer(at(3), "getChildren2", kids(&[a.as_str(), b.as_str()]));
    h.answer(at(4), "getData", Answer::Data(b"1"));
    h.answer(at(4), "getData", Answer::Loss);
    assert!(h.events().is_empty());
    h.sent();
    h.session(at(5), ConnectionState::Reconnected);
    assert_eq!(h.sent(), ["getData /traces/revocation/_c_<uuid>-lock-0000000001"]);
    h.answer(at(6), "getData", Answer::Data(b"2"));
    assert_eq!(
        h.events(),
        vec![RecipeEvent::Participants(vec![
            Participant {
                path: format!("{BASE}/{a}"),
                data: Some(Bytes::from_static(b"1")),
                stat: Some(Default::default())
            },
            Participant {
                path: format!("{BASE}/{b}"),
                data: Some(Bytes::from_static(b"2")),
                stat: Some(Default::default())
            },
        ])]
    );

    let mut lost = Harness::new(Participants::of(LockKind::Mutex, p(BASE)).unwrap());
    lost.answer(at(1), "getChildren2", Answer::Loss);
    lost.session(at(2), ConnectionState::Lost);
    assert_eq!(lost.events(), vec![RecipeEvent::Failed(RequestError::SessionExpired)]);
}
