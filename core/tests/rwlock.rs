//! Transcript tests of `ReadWriteLock`: replies fed by hand, exact op and
//! event sequences checked, including Curator 5.4.0's recorded `rwlock` trace.

mod transcript;

use zoolock_core::wire::{Bytes, ErrorCode, EventType, Request};
use zoolock_core::{
    ApiMisuse, Client, ConnectString, Recipe, RecipeEvent, SessionConfig, ZkPath,
    recipes::{LockConfig, OpPlan, Part, ReadWriteLock},
};

use transcript::{Answer, Harness, acquired, at, held_watch, kids, listing, member, name, other, uuid_of};

const BASE: &str = "/traces/rwlock";
const READ: Part = Part::Read;
const WRITE: Part = Part::Write;

fn lock(plan: OpPlan, seed: u64) -> Harness<ReadWriteLock> {
    // Curator's own sequence does not watch a held node.
    let config = LockConfig::new(seed)
        .with_plan(plan)
        .with_data(Bytes::from_static(b"127.0.0.1"))
        .with_watch_held(plan != OpPlan::Curator);
    Harness::new(ReadWriteLock::new(ZkPath::new(BASE).unwrap(), config))
}

/// Curator plan: the write half holds node `seq`, granted alone at t=2, and
/// a read acquire (a downgrade) starts at t=3. Returns the write node too.
fn downgrading(seed: u64, seq: i32) -> (Harness<ReadWriteLock>, String) {
    let mut h = lock(OpPlan::Curator, seed);
    let w = acquire_created(&mut h, WRITE, seq);
    h.answer(at(2), "getChildren2", kids(&[name(&w)]));
    h.run(|l| l.acquire_read(at(3), None)).unwrap();
    (h, w)
}

/// Other clients' nodes of these kinds, queued in this order: the n-th
/// (from 0) has sequence n and is client n+1's.
fn queue<const N: usize>(kinds: [&str; N]) -> [String; N] {
    let mut n = 0;
    kinds.map(|kind| {
        n += 1;
        other(n, kind, u32::from(n - 1))
    })
}

/// Starts an acquire of the `READ` or `WRITE` half at t=0 and answers its
/// create at t=1 with sequence `seq`. Returns the node's path.
fn acquire_created(h: &mut Harness<ReadWriteLock>, half: Part, seq: i32) -> String {
    let kind = if half == READ {
        h.run(|l| l.acquire_read(at(0), None)).unwrap();
        "__READ__"
    } else {
        h.run(|l| l.acquire_write(at(0), None)).unwrap();
        "__WRIT__"
    };
    h.answer(at(1), &format!("create2 {BASE}/_c_<uuid>-{kind} [ES]"), Answer::Seq(seq))
}

/// Releases the `READ` or `WRITE` half at `at(t)`; the delete of its node
/// (sequence `seq`) is answered at `at(t + 1)`, and the half reports Released.
fn release_half(h: &mut Harness<ReadWriteLock>, half: Part, t: u64, seq: u32) {
    let kind = if half == READ {
        h.run(|l| l.release_read(at(t))).unwrap();
        "__READ__"
    } else {
        h.run(|l| l.release_write(at(t))).unwrap();
        "__WRIT__"
    };
    h.answer(at(t + 1), &format!("delete {BASE}/_c_<uuid>-{kind}{seq:010}"), Answer::Empty);
    assert_eq!(h.events(), vec![member(half.index(), RecipeEvent::Released)]);
}

/// The watched predecessor `pred` (a name) is deleted at `at(t)`, and the
/// listing at `at(t + 1)` shows our node `ours` alone: `granted` is reported.
fn pred_gone_then_granted(h: &mut Harness<ReadWriteLock>, t: u64, pred: &str, ours: &str, granted: RecipeEvent) {
    h.watch(at(t), EventType::NODE_DELETED, &format!("{BASE}/{pred}"));
    h.answer(at(t + 1), &format!("getChildren2 {BASE}"), kids(&[name(ours)]));
    assert_eq!(h.events(), vec![granted]);
}

fn read_acquired(node: &str, czxid: i64) -> RecipeEvent {
    member(READ.index(), acquired(node, czxid))
}

fn write_acquired(node: &str, czxid: i64) -> RecipeEvent {
    member(WRITE.index(), acquired(node, czxid))
}

/// Trace `rwlock/A.conn1`: the first reader finds the base path missing,
/// makes it, holds at once, releases.
#[test]
fn curator_trace_reader_a() {
    let mut h = lock(OpPlan::Curator, 1);
    h.run(|l| l.acquire_read(at(0), None)).unwrap();
    let node = h.create_making_parents(1, "create2 /traces/rwlock/_c_<uuid>-__READ__ [ES]", 1, 1);
    h.answer(at(6), "getChildren2 /traces/rwlock", kids(&[name(&node)]));
    assert_eq!(h.events(), vec![read_acquired(&node, 1000)]);
    assert_eq!(h.recipe.read_hold_count(), 1);

    release_half(&mut h, READ, 7, 0);
    h.assert_idle();
    assert_eq!(
        h.log,
        [
            "create2 /traces/rwlock/_c_<uuid>-__READ__ [ES]",
            "exists /traces",
            "exists /traces/rwlock",
            "createContainer /traces/rwlock [C]",
            "create2 /traces/rwlock/_c_<uuid>-__READ__ [ES]",
            "getChildren2 /traces/rwlock",
            "delete /traces/rwlock/_c_<uuid>-__READ__0000000000",
        ]
    );
    // Curator's default data, the local address.
    let Request::Create2(create) = h.sent_ops[0].op.request() else { panic!() };
    assert_eq!(create.data.as_deref(), Some(&b"127.0.0.1"[..]));
    assert!(h.recipe.is_quiescent());
}

/// Trace `rwlock/B.conn1`: a reader behind a reader shares the lock.
#[test]
fn curator_trace_reader_b_shares() {
    let mut h = lock(OpPlan::Curator, 2);
    let node = acquire_created(&mut h, READ, 1);
    h.answer(at(2), "getChildren2 /traces/rwlock", kids(&[other(0xa, "__READ__", 0), name(&node)]));
    assert_eq!(h.events(), vec![read_acquired(&node, 1001)]);
    release_half(&mut h, READ, 3, 1);
    assert_eq!(
        h.log,
        [
            "create2 /traces/rwlock/_c_<uuid>-__READ__ [ES]",
            "getChildren2 /traces/rwlock",
            "delete /traces/rwlock/_c_<uuid>-__READ__0000000001",
        ]
    );
}

/// Trace `rwlock/C.conn1`: the writer waits on its immediate predecessor
/// (B's read node, not A's), acquires once it goes, then downgrades the
/// Curator 5.4.0 way: an ordinary sequential `__READ__` node.
#[test]
fn curator_trace_writer_c_and_downgrade() {
    let mut h = lock(OpPlan::Curator, 3);
    let a = other(0xa, "__READ__", 0);
    let b = other(0xb, "__READ__", 1);
    let w = acquire_created(&mut h, WRITE, 2);
    // The server's (unsorted) order, as recorded.
    h.answer(at(2), "getChildren2 /traces/rwlock", kids(&[a.clone(), name(&w), b.clone()]));
    h.answer(at(3), &format!("getData /traces/rwlock/{} w", transcript::mask(&b)), Answer::Data(b"127.0.0.1"));
    assert_eq!(
        h.sent(),
        [
            "create2 /traces/rwlock/_c_<uuid>-__WRIT__ [ES]",
            "getChildren2 /traces/rwlock",
            "getData /traces/rwlock/_c_<uuid>-__READ__0000000001 w",
        ]
    );
    assert!(h.events().is_empty());
    // A's release does not concern C; B's does.
    h.watch(at(4), EventType::NODE_DELETED, &format!("{BASE}/{a}"));
    assert!(h.sent().is_empty());
    pred_gone_then_granted(&mut h, 5, &b, &w, write_acquired(&w, 1002));

    // Downgrade: read while holding write.
    h.run(|l| l.acquire_read(at(7), None)).unwrap();
    let r = h.answer(at(8), "create2 /traces/rwlock/_c_<uuid>-__READ__ [ES]", Answer::Seq(3));
    h.answer(at(9), "getChildren2 /traces/rwlock", kids(&[name(&w), name(&r)]));
    assert_eq!(h.events(), vec![read_acquired(&r, 1003)]);
    release_half(&mut h, WRITE, 10, 2);
    assert_eq!(h.recipe.read_holder().map(|(n, _)| n.to_string()), Some(r.clone()));
    release_half(&mut h, READ, 12, 3);
    h.assert_idle();
    assert_eq!(
        h.log,
        [
            "create2 /traces/rwlock/_c_<uuid>-__WRIT__ [ES]",
            "getChildren2 /traces/rwlock",
            "getData /traces/rwlock/_c_<uuid>-__READ__0000000001 w",
            "getChildren2 /traces/rwlock",
            "create2 /traces/rwlock/_c_<uuid>-__READ__ [ES]",
            "getChildren2 /traces/rwlock",
            "delete /traces/rwlock/_c_<uuid>-__WRIT__0000000002",
            "delete /traces/rwlock/_c_<uuid>-__READ__0000000003",
        ]
    );
    // The halves draw distinct UUIDs.
    assert_ne!(uuid_of(&w), uuid_of(&r));
}

/// Pipelined: create2 and getChildren2 go out together; readers behind
/// readers hold without a watch.
#[test]
fn pipelined_readers_share() {
    let mut h = lock(OpPlan::Pipelined, 4);
    h.run(|l| l.acquire_read(at(0), None)).unwrap();
    // The read half is quiet: its listing carries a child watch.
    assert_eq!(h.sent(), ["create2 /traces/rwlock/_c_<uuid>-__READ__ [ES]", "getChildren2 /traces/rwlock w"]);
    let node = h.answer(at(1), "create2", Answer::Seq(3));
    let children = [other(1, "__READ__", 0), other(2, "__READ__", 1), other(3, "__READ__", 2), name(&node)];
    h.answer(at(1), "getChildren2 /traces/rwlock w", kids(&children));
    assert_eq!(h.events(), vec![read_acquired(&node, 1003)]);
    // No watch to wait on, and the listing's child watch is the held node's.
    assert!(h.sent().is_empty());
    h.assert_idle();
    // Pipelined release reports at once; the delete stays guaranteed.
    h.run(|l| l.release_read(at(2))).unwrap();
    assert_eq!(h.sent(), ["delete /traces/rwlock/_c_<uuid>-__READ__0000000003"]);
    assert_eq!(h.events(), vec![member(READ.index(), RecipeEvent::Released)]);
    assert!(!h.recipe.is_quiescent());
    h.answer(at(3), "delete", Answer::Empty);
    assert!(h.recipe.is_quiescent());
}

/// A writer watches the child just before its own, reader or writer.
#[test]
fn writer_waits_on_immediate_predecessor() {
    let mut h = lock(OpPlan::Curator, 5);
    let w = acquire_created(&mut h, WRITE, 3);
    let [r0, w1, r2] = queue(["__READ__", "__WRIT__", "__READ__"]);
    h.answer(at(2), "getChildren2", kids(&[name(&w), r2.clone(), w1.clone(), r0.clone()]));
    assert_eq!(
        h.sent(),
        [
            "create2 /traces/rwlock/_c_<uuid>-__WRIT__ [ES]",
            "getChildren2 /traces/rwlock",
            "getData /traces/rwlock/_c_<uuid>-__READ__0000000002 w"
        ]
    );
    assert_eq!(transcript::path_of(&h.pending[0]), format!("{BASE}/{r2}"));
    // The predecessor vanished before the watch could be set: list again.
    h.answer(at(3), "getData", Answer::Err(ErrorCode::NO_NODE));
    h.answer(at(4), "getChildren2", kids(&[name(&w), w1.clone(), r0.clone()]));
    assert_eq!(transcript::path_of(&h.pending[0]), format!("{BASE}/{w1}"));
    h.answer(at(5), "getData", Answer::Data(b""));
    h.watch(at(6), EventType::NODE_DELETED, &format!("{BASE}/{w1}"));
    h.answer(at(7), "getChildren2", kids(&[name(&w), r0.clone()]));
    assert_eq!(transcript::path_of(&h.pending[0]), format!("{BASE}/{r0}"));
    h.answer(at(8), "getData", Answer::Data(b""));
    assert!(h.events().is_empty());
    pred_gone_then_granted(&mut h, 9, &r0, &w, write_acquired(&w, 1003));
}

/// A reader watches the first writer in the queue, not the nearest one.
#[test]
fn reader_waits_on_first_writer() {
    let mut h = lock(OpPlan::Curator, 6);
    let r = acquire_created(&mut h, READ, 4);
    let [r0, w1, r2, w3] = queue(["__READ__", "__WRIT__", "__READ__", "__WRIT__"]);
    h.answer(at(2), "getChildren2", kids(&[r0.clone(), name(&r), w3.clone(), r2.clone(), w1.clone()]));
    assert_eq!(transcript::path_of(&h.pending[0]), format!("{BASE}/{w1}"));
    h.answer(at(3), "getData /traces/rwlock/_c_<uuid>-__WRIT__0000000001 w", Answer::Data(b""));
    h.watch(at(4), EventType::NODE_DELETED, &format!("{BASE}/{w1}"));
    h.answer(at(5), "getChildren2", kids(&[r0.clone(), name(&r), w3.clone(), r2.clone()]));
    assert_eq!(transcript::path_of(&h.pending[0]), format!("{BASE}/{w3}"));
    h.answer(at(6), "getData /traces/rwlock/_c_<uuid>-__WRIT__0000000003 w", Answer::Data(b""));
    assert!(h.events().is_empty());
    h.watch(at(7), EventType::NODE_DELETED, &format!("{BASE}/{w3}"));
    // Readers ahead do not matter.
    h.answer(at(8), "getChildren2", kids(&[r0, name(&r), r2]));
    assert_eq!(h.events(), vec![read_acquired(&r, 1004)]);
}

/// Pipelined downgrade (Curator 5.5+, CURATOR-621): the read node is
/// EPHEMERAL and reuses the write node's sequence, so a writer that queued
/// meanwhile stays behind it after the write half is released.
#[test]
fn pipelined_downgrade_reuses_the_write_sequence() {
    let mut h = lock(OpPlan::Pipelined, 7);
    let w = acquire_created(&mut h, WRITE, 7);
    h.answer(at(1), &listing(BASE, true), kids(&[name(&w)]));
    assert_eq!(h.events(), vec![write_acquired(&w, 1007)]);

    // Another client's writer queues behind us.
    let queued = other(9, "__WRIT__", 8);
    h.run(|l| l.acquire_read(at(2), None)).unwrap();
    // Each half is quiet: its listing's child watch is its held node's watch.
    assert_eq!(
        h.sent(),
        [
            "create2 /traces/rwlock/_c_<uuid>-__WRIT__ [ES]",
            "getChildren2 /traces/rwlock w",
            "create2 /traces/rwlock/_c_<uuid>-__READ__0000000007 [E]",
            "getChildren2 /traces/rwlock w",
        ]
    );
    let r = h.answer(at(3), "create2 /traces/rwlock/_c_<uuid>-__READ__0000000007 [E]", Answer::Made(2000));
    h.answer(at(3), &listing(BASE, true), kids(&[queued.clone(), name(&r), name(&w)]));
    assert_eq!(h.events(), vec![read_acquired(&r, 2000)]);
    // The halves' ops leave under distinct ids (each reply finds its half).
    let ids: std::collections::BTreeSet<u64> = h.sent_ops.iter().map(|op| op.id.get()).collect();
    assert_eq!(ids.len(), h.sent_ops.len());

    h.run(|l| l.release_write(at(4))).unwrap();
    assert_eq!(h.sent(), ["delete /traces/rwlock/_c_<uuid>-__WRIT__0000000007"]);
    assert_eq!(h.events(), vec![member(WRITE.index(), RecipeEvent::Released)]);
    assert_eq!(h.recipe.read_hold_count(), 1);
    // That delete changes the base's children: the read half, held, now
    // watches its node itself; the released write half sends nothing.
    h.children_changed(at(4), BASE, &[&r]);

    // The queued writer (seen from its own client) still waits on our read node.
    let mut theirs = lock(OpPlan::Curator, 70);
    theirs.run(|l| l.acquire_write(at(5), None)).unwrap();
    let tw = theirs.answer(at(6), "create2", Answer::Seq(8));
    theirs.answer(at(7), "getChildren2", kids(&[name(&tw), name(&r)]));
    assert_eq!(transcript::path_of(&theirs.pending[0]), r);
}

/// Curator 5.4.0's downgrade (the Curator plan) uses a fresh sequence, so a
/// writer that queued meanwhile overtakes the reader once the write half is
/// released: the CURATOR-621 bug, reproduced on purpose for trace parity.
#[test]
fn curator_plan_downgrade_lets_a_queued_writer_overtake() {
    let (mut h, w) = downgrading(8, 7);
    let r = h.answer(at(4), "create2 /traces/rwlock/_c_<uuid>-__READ__ [ES]", Answer::Seq(9));
    let queued = other(9, "__WRIT__", 8);
    h.answer(at(5), "getChildren2", kids(&[name(&w), queued.clone(), name(&r)]));
    assert_eq!(h.events(), vec![write_acquired(&w, 1007), read_acquired(&r, 1009)]);
    let mut theirs = lock(OpPlan::Curator, 80);
    theirs.run(|l| l.acquire_write(at(5), None)).unwrap();
    let tw = theirs.answer(at(6), "create2", Answer::Seq(8));
    theirs.answer(at(7), "getChildren2", kids(&[name(&tw), name(&r)]));
    assert_eq!(theirs.events(), vec![write_acquired(&tw, 1008)]);
}

/// Read → write would wait on our own read node forever: refused, nothing sent.
#[test]
fn upgrade_is_refused() {
    let mut h = lock(OpPlan::Pipelined, 9);
    h.run(|l| l.acquire_read(at(0), None)).unwrap();
    // Refused while the read acquire is still under way, too.
    let err = h.run(|l| l.acquire_write(at(0), None)).unwrap_err();
    assert_eq!(err, ApiMisuse::UpgradeRefused);
    let r = h.answer(at(1), "create2", Answer::Seq(0));
    h.answer(at(1), &listing(BASE, true), kids(&[name(&r)]));
    assert_eq!(h.events(), vec![read_acquired(&r, 1000)]);
    h.assert_never_sent(&held_watch(&r));
    h.sent();
    assert!(matches!(h.run(|l| l.acquire_write(at(2), None)), Err(ApiMisuse::UpgradeRefused)));
    assert!(h.sent().is_empty());
    assert!(h.events().is_empty());
    // After the read release, write is fine.
    h.run(|l| l.release_read(at(3))).unwrap();
    h.answer(at(3), "delete", Answer::Empty);
    h.run(|l| l.acquire_write(at(4), None)).unwrap();
    assert_eq!(
        h.sent(),
        [
            "delete /traces/rwlock/_c_<uuid>-__READ__0000000000",
            "create2 /traces/rwlock/_c_<uuid>-__WRIT__ [ES]",
            // The write half never acquired: quiet.
            "getChildren2 /traces/rwlock w",
        ]
    );
}

/// Write then read (downgrade) then write again: the write half is simply
/// reentrant; both halves count holds.
#[test]
fn reentrant_halves() {
    let (mut h, w) = downgrading(10, 0);
    let r = h.answer(at(4), "create2", Answer::Seq(1));
    h.answer(at(5), "getChildren2", kids(&[name(&w), name(&r)]));
    h.events();
    h.sent();
    h.run(|l| l.acquire_write(at(6), None)).unwrap();
    h.run(|l| l.acquire_read(at(6), None)).unwrap();
    assert!(h.sent().is_empty());
    assert_eq!(h.events(), vec![write_acquired(&w, 1000), read_acquired(&r, 1001)]);
    assert_eq!((h.recipe.read_hold_count(), h.recipe.write_hold_count()), (2, 2));
    h.run(|l| l.release_write(at(7))).unwrap();
    h.run(|l| l.release_read(at(7))).unwrap();
    assert!(h.sent().is_empty());
    h.run(|l| l.release_write(at(8))).unwrap();
    h.run(|l| l.release_read(at(8))).unwrap();
    assert_eq!(
        h.sent(),
        ["delete /traces/rwlock/_c_<uuid>-__WRIT__0000000000", "delete /traces/rwlock/_c_<uuid>-__READ__0000000001",]
    );
    assert!(matches!(h.run(|l| l.release_read(at(9))), Err(ApiMisuse::NotHeld)));
    assert!(matches!(h.run(|l| l.release_write(at(9))), Err(ApiMisuse::NotHeld)));
}

/// A timed-out writer goes round once more at the deadline (Curator's loop),
/// then deletes its node and reports `TimedOut`.
#[test]
fn timed_out_writer_deletes_its_node() {
    let mut h = lock(OpPlan::Curator, 11);
    h.run(|l| l.acquire_write(at(0), Some(at(300)))).unwrap();
    let w = h.answer(at(1), "create2", Answer::Seq(1));
    let r0 = other(1, "__READ__", 0);
    h.answer(at(2), "getChildren2", kids(&[r0.clone(), name(&w)]));
    h.answer(at(3), "getData /traces/rwlock/_c_<uuid>-__READ__0000000000 w", Answer::Data(b""));
    assert_eq!(h.recipe.poll_timeout(), Some(at(300)));
    h.timeout(at(300));
    h.answer(at(301), "getChildren2", kids(&[r0.clone(), name(&w)]));
    h.answer(at(302), "getData /traces/rwlock/_c_<uuid>-__READ__0000000000 w", Answer::Data(b""));
    assert_eq!(h.events(), vec![member(WRITE.index(), RecipeEvent::TimedOut)]);
    h.answer(at(303), "delete /traces/rwlock/_c_<uuid>-__WRIT__0000000001", Answer::Empty);
    h.assert_idle();
    assert_eq!(h.recipe.write_hold_count(), 0);
    assert_eq!(h.recipe.poll_timeout(), None);
    assert!(h.recipe.is_quiescent());
    h.sent();
    // A late watch event from the abandoned wait changes nothing.
    h.watch(at(400), EventType::NODE_DELETED, &format!("{BASE}/{r0}"));
    assert!(h.sent().is_empty());
    assert!(h.events().is_empty());
}

/// Our node vanished (someone deleted it, or an expiry): delete it anyway,
/// pause, and re-create with a new UUID at the back of the queue.
#[test]
fn missing_own_node_is_recreated() {
    let mut h = lock(OpPlan::Curator, 12);
    let first = acquire_created(&mut h, READ, 5);
    h.answer(at(2), "getChildren2", kids(&[other(1, "__WRIT__", 4)]));
    assert_eq!(
        h.sent(),
        [
            "create2 /traces/rwlock/_c_<uuid>-__READ__ [ES]",
            "getChildren2 /traces/rwlock",
            "delete /traces/rwlock/_c_<uuid>-__READ__0000000005",
        ]
    );
    h.answer(at(3), "delete", Answer::Err(ErrorCode::NO_NODE));
    let pause = h.recipe.poll_timeout().expect("a retry pause");
    h.timeout(pause);
    let second = h.answer(pause, "create2 /traces/rwlock/_c_<uuid>-__READ__ [ES]", Answer::Seq(6));
    assert_ne!(uuid_of(&first), uuid_of(&second));
    h.answer(pause, "getChildren2", kids(&[name(&second)]));
    assert_eq!(h.events(), vec![read_acquired(&second, 1006)]);
}

/// Cancelling a waiting read deletes its node; nothing is reported.
#[test]
fn cancel_read_leaves_no_node() {
    let mut h = lock(OpPlan::Curator, 13);
    let r = acquire_created(&mut h, READ, 2);
    h.answer(at(2), "getChildren2", kids(&[other(1, "__WRIT__", 1), name(&r)]));
    h.answer(at(3), "getData", Answer::Data(b""));
    h.run(|l| l.cancel_read(at(4)));
    assert_eq!(h.sent().last().map(String::as_str), Some("delete /traces/rwlock/_c_<uuid>-__READ__0000000002"));
    h.answer(at(5), "delete", Answer::Empty);
    assert!(h.events().is_empty());
    assert!(h.recipe.is_quiescent());
}

/// Both halves are driven through a `Client` by its typed handle.
#[test]
fn usable_as_a_client_recipe() {
    let config = SessionConfig::new(ConnectString::parse("127.0.0.1:2181").unwrap(), 14);
    let mut client = Client::new(config, at(0));
    let rw = client.add(at(0), ReadWriteLock::new(ZkPath::new(BASE).unwrap(), LockConfig::new(14)));
    client.with(at(0), rw, |l, now| l.acquire_write(now, None)).unwrap().unwrap();
    assert_eq!(client.with(at(0), rw, |l, _| l.base().as_str().to_owned()).unwrap(), BASE);
}

/// Cancelling during the pause before a re-create creates nothing.
#[test]
fn cancel_during_retry_pause_creates_nothing() {
    let mut h = lock(OpPlan::Curator, 15);
    acquire_created(&mut h, READ, 5);
    h.answer(at(2), "getChildren2", kids(&[other(1, "__WRIT__", 4)]));
    h.answer(at(3), "delete", Answer::Err(ErrorCode::NO_NODE));
    assert!(h.recipe.poll_timeout().is_some());
    h.sent();
    h.run(|l| l.cancel_read(at(4)));
    assert_eq!(h.recipe.poll_timeout(), None);
    h.timeout(at(10_000));
    assert!(h.sent().is_empty());
    assert!(h.events().is_empty());
    assert!(h.recipe.is_quiescent());
}

/// A downgrade by another client (Curator 5.5+ or our Pipelined plan) puts a
/// read node with the released write node's sequence *ahead* of a queued
/// writer. So the write half never takes the fast handoff: on its
/// predecessor's deletion it lists again and finds the reader.
#[test]
fn pipelined_writer_relists_after_a_downgrade_ahead() {
    let r7 = other(1, "__READ__", 7);
    // The holder downgraded (R7 created) and then released its write node.
    let (mut h, w) = behind_a_writer_that_goes(16, WRITE, 8);
    assert!(h.events().is_empty(), "must not acquire from the stale listing");
    assert_eq!(h.sent(), ["getChildren2 /traces/rwlock"]);
    h.answer(at(4), "getChildren2", kids(&[name(&w), r7.clone()]));
    assert_eq!(h.sent(), ["getData /traces/rwlock/_c_<uuid>-__READ__0000000007 w"]);
    h.answer(at(5), "getData", Answer::Data(b""));
    pred_gone_then_granted(&mut h, 6, &r7, &w, write_acquired(&w, 1008));
}

/// Pipelined plan: our `half`'s node `seq` waits on another client's writer
/// node just before it (watching our own node first), which is deleted at
/// t=3. Returns our node too.
fn behind_a_writer_that_goes(seed: u64, half: Part, seq: i32) -> (Harness<ReadWriteLock>, String) {
    let mut h = lock(OpPlan::Pipelined, seed);
    let writer = other(1, "__WRIT__", u32::try_from(seq - 1).unwrap());
    let ours = acquire_created(&mut h, half, seq);
    h.answer(at(1), &listing(BASE, true), kids(&[writer.clone(), name(&ours)]));
    h.answer_held_watch(at(2), &ours);
    h.answer(at(2), &format!("getData {BASE}/_c_<uuid>-__WRIT__{:010} w", seq - 1), Answer::Data(b""));
    h.sent();
    h.watch(at(3), EventType::NODE_DELETED, &format!("{BASE}/{writer}"));
    (h, ours)
}

/// A reader may take the fast handoff: the only nodes that can appear ahead
/// of it are downgrade readers, which it shares with.
#[test]
fn pipelined_reader_takes_the_fast_handoff() {
    let (mut h, r) = behind_a_writer_that_goes(17, READ, 4);
    // No re-list, and no op at all: our node is watched since the wait began.
    assert!(h.sent().is_empty());
    assert_eq!(h.events(), vec![read_acquired(&r, 1004)]);
    h.assert_idle();
}
