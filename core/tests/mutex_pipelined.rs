//! Transcript tests for [`Mutex`] (see `mutex_harness` for how ops are
//! rendered and answered): the Pipelined plan: one round trip, fast handoff, look-ahead.

use bytes::Bytes;
use zoolock_core::wire::{ErrorCode, EventType, Response};
use zoolock_core::{ConnectionState, Recipe, RecipeEvent, RequestError, recipes::OpPlan};

mod mutex_harness;
mod transcript;

use mutex_harness::*;
use transcript::at;

// ---- Pipelined plan -----------------------------------------------------------------------

/// Uncontended in one round trip: create2 and getChildren2 go out back to
/// back before any reply.
#[test]
fn pipelined_uncontended_is_one_round_trip() {
    let mut t = T::new(OpPlan::Pipelined);
    t.acquire(None);
    assert_eq!(t.ops(), ["create2 /app/lock/_c_<U0>-lock- [ES]", LIST_W]);
    assert_eq!(t.create_data, [Bytes::from_static(DATA)]);
    let own = t.own(0, 0);
    t.reply("create2 /app/lock/_c_<U0>-lock- [ES]", created(&full(&own), 3));
    t.no_ops();
    t.no_events();
    t.reply(LIST_W, children(&[&own]));
    assert_eq!(t.events(), [acquired(&full(&own), 3)]);
    // No op after the grant: the listing's child watch is the held node's
    // watch (ARCHITECTURE §6.1).
    t.assert_nothing_in_flight();
}

/// Release reports Released as soon as the delete is queued, so the next
/// acquire can ride in the same round trip; the delete stays guaranteed and
/// is re-sent after a ConnectionLoss.
#[test]
fn pipelined_release_is_immediate_and_the_delete_is_retried() {
    let mut t = T::holding(OpPlan::Pipelined, 3);
    t.release();
    assert_eq!(t.ops(), ["delete /app/lock/_c_<U0>-lock-0000000000"]);
    assert_eq!(t.events(), [RecipeEvent::Released]);
    assert_eq!(t.m.hold_count(), 0);
    assert!(!t.m.is_quiescent(), "the delete is still owed");
    // The last acquire was granted by its first listing: quiet.
    t.acquire(None);
    assert_eq!(t.ops(), ["create2 /app/lock/_c_<U1>-lock- [ES]", LIST_W]);
    t.disconnect();
    t.no_events();
    t.no_ops();
    t.session(ConnectionState::Reconnected);
    // The lost create's recovery, and the delete again.
    assert_eq!(t.ops(), ["getChildren /app/lock", "delete /app/lock/_c_<U0>-lock-0000000000"]);
    t.reply("getChildren /app/lock", names(&[]));
    assert_eq!(t.ops(), ["create2 /app/lock/_c_<U1>-lock- [ES]", LIST_W]);
    t.reply("delete /app/lock/_c_<U0>-lock-0000000000", empty());
    let own = t.own(1, 1);
    t.reply("create2 /app/lock/_c_<U1>-lock- [ES]", created(&full(&own), 9));
    t.reply(LIST_W, children(&[&own]));
    assert_eq!(t.events(), [acquired(&full(&own), 9)]);
    t.assert_nothing_in_flight();
}

/// A handle's first acquire sends one `createContainer` of the base ahead
/// of the pair, in the same round trip: a missing base is made there (three
/// requests, no NoNode create, no probes), an existing one answers
/// NodeExists. Later acquires of the handle send the pair alone.
#[test]
fn pipelined_first_acquire_makes_the_base_in_the_same_round_trip() {
    for base_exists in [false, true] {
        let mut t = T::new(OpPlan::Pipelined);
        t.auto_ensure = false;
        t.acquire(None);
        assert_eq!(t.ops(), ["createContainer /app/lock [C]", "create2 /app/lock/_c_<U0>-lock- [ES]", LIST_W]);
        let made = if base_exists { err(ErrorCode::NODE_EXISTS) } else { created("/app/lock", 2) };
        t.reply("createContainer /app/lock [C]", made);
        t.no_ops();
        let own = t.own(0, 0);
        t.reply("create2 /app/lock/_c_<U0>-lock- [ES]", created(&full(&own), 3));
        t.reply(LIST_W, children(&[&own]));
        assert_eq!(t.events(), [acquired(&full(&own), 3)]);
        t.no_ops();
        t.release();
        assert_eq!(t.ops(), ["delete /app/lock/_c_<U0>-lock-0000000000"]);
        t.reply("delete /app/lock/_c_<U0>-lock-0000000000", empty());
        t.events();
        t.acquire(None);
        assert_eq!(t.ops(), ["create2 /app/lock/_c_<U1>-lock- [ES]", LIST_W]);
    }
}

/// A server without containers answers the base's container create
/// Unimplemented: parents are made as plain persistent nodes from then on.
#[test]
fn pipelined_base_create_unimplemented_makes_persistent_parents() {
    let mut t = T::new(OpPlan::Pipelined);
    t.auto_ensure = false;
    t.acquire(None);
    assert_eq!(t.ops(), ["createContainer /app/lock [C]", "create2 /app/lock/_c_<U0>-lock- [ES]", LIST_W]);
    t.reply("createContainer /app/lock [C]", err(ErrorCode::UNIMPLEMENTED));
    t.reply("create2 /app/lock/_c_<U0>-lock- [ES]", no_node());
    t.reply(LIST_W, no_node());
    assert_eq!(t.ops(), ["exists /app/lock"]);
    t.reply("exists /app/lock", no_node());
    assert_eq!(t.ops(), ["exists /app"]);
    t.reply("exists /app", exists(1));
    assert_eq!(t.ops(), ["create /app/lock [P]"]);
    t.reply("create /app/lock [P]", path_reply("/app/lock"));
    assert_eq!(t.ops(), ["create2 /app/lock/_c_<U0>-lock- [ES]", LIST_W]);
}

/// Bottom-up probing stops at the first ancestor that exists: the ones
/// above it are never read (they may deny READ to this client).
#[test]
fn pipelined_parent_probe_stops_at_the_deepest_existing_ancestor() {
    let mut t = T::pipelined_base_missing();
    t.reply("exists /app/lock", Ok(Response::Stat(stat(1))));
    assert_eq!(t.ops(), ["create2 /app/lock/_c_<U0>-lock- [ES]", LIST_W]);
    t.no_events();
}

/// Missing parents: both replies of the pair are NoNode; the listing's is
/// ignored, mkdirs runs bottom-up (CURATOR-715), then the pair goes out again
/// with the same UUID.
#[test]
fn pipelined_no_node_create_ignores_the_listing_and_makes_parents() {
    let mut t = T::pipelined_base_missing();
    t.no_ops();
    t.no_events();
    t.reply("exists /app/lock", no_node());
    assert_eq!(t.ops(), ["exists /app"]);
    t.reply("exists /app", no_node());
    assert_eq!(t.ops(), ["createContainer /app [C]"]);
    t.reply("createContainer /app [C]", created("/app", 1));
    // Known missing from the probe: made without another exists.
    assert_eq!(t.ops(), ["createContainer /app/lock [C]"]);
    t.reply("createContainer /app/lock [C]", created("/app/lock", 2));
    assert_eq!(t.ops(), ["create2 /app/lock/_c_<U0>-lock- [ES]", LIST_W]);
    let own = t.own(0, 0);
    t.reply("create2 /app/lock/_c_<U0>-lock- [ES]", created(&full(&own), 3));
    t.reply(LIST_W, children(&[&own]));
    assert_eq!(t.events(), [acquired(&full(&own), 3)]);
    t.assert_nothing_in_flight();
}

/// ConnectionLoss on the pair: the listing's failure is stale; recovery as
/// in the Curator plan, then the pair again with the same UUID.
#[test]
fn pipelined_create_connection_loss_recovers_then_sends_the_pair_again() {
    let mut t = T::create_unknown(OpPlan::Pipelined);
    t.no_ops();
    t.session(ConnectionState::Reconnected);
    assert_eq!(t.ops(), ["getChildren /app/lock"]);
    t.reply("getChildren /app/lock", names(&[]));
    assert_eq!(t.ops(), ["create2 /app/lock/_c_<U0>-lock- [ES]", LIST_W]);

    // Found: adopted, then listed (no listing is in flight for it).
    let mut t = T::create_unknown(OpPlan::Pipelined);
    t.session(ConnectionState::Reconnected);
    t.ops();
    t.lookup_adopts_and_acquires(2, &[], 22);
}

/// Fast handoff: every child in the last listing has a 10-digit key, so when
/// the predecessor is deleted the listing minus that node decides. A node
/// further up still in that listing (here the look-ahead node, whose
/// deletion has not been told: the predecessor gave up) may still be there,
/// so the waiter re-lists rather than pay a getData answered NoNode first;
/// once the listing has nothing ahead but the watched predecessor, its
/// deletion is the grant, with no op at all.
#[test]
fn pipelined_fast_handoff_skips_the_relist() {
    let mut t = T::new(OpPlan::Pipelined);
    let (f1, f2, f9) = (other(1, 1), other(2, 2), other(3, 9));
    let own = t.wait_behind(true, 3, &[&f9, &f2, &f1], &[&f2, &f1]);
    t.watch(EventType::NODE_DELETED, &full(&f2));
    assert_eq!(t.ops(), ["getChildren2 /app/lock"], "no getData on a remembered node further up");
    t.reply("getChildren2 /app/lock", children(&[&f9, &f1, &own]));
    assert_eq!(t.ops(), ["getData /app/lock/_c_<F1>-lock-0000000001 w"]);
    t.reply("getData /app/lock/_c_<F1>-lock-0000000001 w", data(b""));
    t.no_ops();
    t.handed_off(&f1, &own);
    // Released and acquired again: the handoff state does not leak into it.
    t.release();
    t.ops();
    t.events();
}

/// The queue position comes from the listings the waiter makes anyway:
/// the first listing, then one fewer per predecessor handed off; a listing
/// that changes nothing reports nothing.
#[test]
fn queue_position_from_each_listing() {
    let mut t = T::new(OpPlan::Pipelined);
    let (f1, f2, f9) = (other(1, 1), other(2, 2), other(3, 9));
    t.wait_behind(true, 3, &[&f9, &f2, &f1], &[&f2, &f1]);
    assert_eq!(t.queued, [(2, 4)], "two ahead of ours, four in all");
    t.wake_relists(EventType::NODE_DELETED, &f2);
    let own = t.own(0, 3);
    t.reply("getChildren2 /app/lock", children(&[&f9, &f1, &own]));
    assert_eq!(t.ops(), ["getData /app/lock/_c_<F1>-lock-0000000001 w"]);
    t.reply("getData /app/lock/_c_<F1>-lock-0000000001 w", data(b""));
    t.no_events();
    assert_eq!(t.queued, [(2, 4), (1, 3)], "the handed-off predecessor counts off");
    t.watch(EventType::NODE_DELETED, &full(&f1));
    assert_eq!(t.events().len(), 1, "acquired");
    assert_eq!(t.queued.len(), 2, "acquired: no position");

    let (mut t, f4, own) = T::waiting_behind_one(OpPlan::Curator, 4);
    t.wake_relists(EventType::NODE_DATA_CHANGED, &f4);
    t.reply("getChildren2 /app/lock", children(&[&f4, &own]));
    assert_eq!(t.ops(), ["getData /app/lock/_c_<F1>-lock-0000000004 w"]);
    t.no_events();
    assert_eq!(t.queued, [(1, 2)], "the same position is reported once");
}

/// The look-ahead: with two or more ahead, the node just ahead of the
/// predecessor is watched too. In a FIFO queue it goes first (it held), and
/// the waiter re-lists while the predecessor holds; the predecessor's
/// deletion then finds nothing ahead in that listing and is the grant, with
/// no op: no round trip on the handoff.
#[test]
fn pipelined_look_ahead_relists_before_the_handoff() {
    let mut t = T::new(OpPlan::Pipelined);
    let (f1, f2, f3, f9) = (other(1, 1), other(2, 2), other(3, 3), other(4, 9));
    let own = t.wait_behind(true, 4, &[&f9, &f3, &f2, &f1], &[&f3, &f2]);
    assert_eq!(t.queued, [(3, 5)]);
    // f1 goes: nothing is watched on it (two ahead of the predecessor).
    t.deleted_quietly(&f1);
    // The look-ahead node goes: list while f3 holds.
    t.look_relists(&f2, &[&f9, &f3, &own]);
    t.no_ops();
    t.no_events();
    assert_eq!(t.queued, [(3, 5), (1, 3)]);
    t.handed_off(&f3, &own);
    // A later deletion of an old look-ahead name is nothing to a holder.
    t.deleted_quietly(&f2);
}

/// A look-ahead listing that still shows nodes further up than the
/// look-ahead node (it gave up, or they hold): the waiter keeps its armed
/// predecessor watch (no second getData) and watches the new node just
/// ahead of the predecessor.
#[test]
fn pipelined_look_ahead_moves_up() {
    let mut t = T::new(OpPlan::Pipelined);
    let (f1, f2, f3) = (other(1, 1), other(2, 2), other(3, 3));
    let own = t.wait_behind(true, 4, &[&f3, &f2, &f1], &[&f3, &f2]);
    t.look_relists(&f2, &[&f1, &f3, &own]);
    assert_eq!(t.ops(), ["getData /app/lock/_c_<F1>-lock-0000000001 w"], "only the new look-ahead node");
    t.reply("getData /app/lock/_c_<F1>-lock-0000000001 w", data(b""));
    t.look_relists(&f1, &[&f3, &own]);
    t.no_ops();
    t.handed_off(&f3, &own);
}

/// The predecessor is deleted while the look-ahead's listing is on its way,
/// and the kept listing still has a node further up: no second listing; the
/// one on its way decides. With nothing further up, both deletions told are
/// the grant at once.
#[test]
fn pipelined_handoff_waits_for_the_look_ahead_listing() {
    let mut t = T::new(OpPlan::Pipelined);
    let (f1, f2, f3) = (other(1, 1), other(2, 2), other(3, 3));
    let own = t.wait_behind(true, 4, &[&f3, &f2, &f1], &[&f3, &f2]);
    t.wake_relists(EventType::NODE_DELETED, &f2);
    t.deleted_quietly(&f3);
    t.reply("getChildren2 /app/lock", children(&[&own]));
    assert_eq!(t.events(), [acquired(&full(&own), 100)]);
    // Nothing sent: our own node is watched since the wait began.
    t.assert_nothing_in_flight();

    let mut t = T::new(OpPlan::Pipelined);
    let own = t.wait_behind(true, 3, &[&f2, &f1], &[&f2, &f1]);
    t.wake_relists(EventType::NODE_DELETED, &f1);
    t.handed_off(&f2, &own);
    // The listing's late reply is nothing to a holder.
    t.reply("getChildren2 /app/lock", children(&[&own]));
    t.no_ops();
    t.no_events();
    t.assert_nothing_in_flight();
}

/// The look-ahead node is already gone when its getData arrives (NoNode):
/// list at once. A look-ahead listing that fails changes nothing: the
/// predecessor's watch still stands, and the connection's loss re-lists.
#[test]
fn pipelined_look_ahead_gone_or_failed() {
    let mut t = T::new(OpPlan::Pipelined);
    let (f1, f2) = (other(1, 1), other(2, 2));
    let own = t.listed(true, 3, &[&f1, &f2]);
    assert_eq!(
        t.ops(),
        [
            "exists /app/lock/_c_<U0>-lock-0000000003 w",
            "getData /app/lock/_c_<F2>-lock-0000000002 w",
            "getData /app/lock/_c_<F1>-lock-0000000001 w"
        ]
    );
    t.reply("exists /app/lock/_c_<U0>-lock-0000000003 w", exists(100));
    t.reply("getData /app/lock/_c_<F2>-lock-0000000002 w", data(b""));
    t.reply("getData /app/lock/_c_<F1>-lock-0000000001 w", no_node());
    assert_eq!(t.ops(), ["getChildren2 /app/lock"]);
    t.reply("getChildren2 /app/lock", Err(RequestError::ConnectionLoss));
    t.no_ops();
    t.no_events();
    t.session(ConnectionState::Suspended);
    assert_eq!(t.ops(), ["getChildren2 /app/lock"]);
    t.reply("getChildren2 /app/lock", children(&[&f2, &own]));
    // Our own node's watch is still armed (the session sets it again).
    assert_eq!(t.ops(), ["getData /app/lock/_c_<F2>-lock-0000000002 w"]);
    t.reply("getData /app/lock/_c_<F2>-lock-0000000002 w", data(b""));
    t.handed_off(&f2, &own);
}

/// A look-ahead listing answered at the deadline, before the timer ran, that
/// does not grant ends the wait as the watch's own reply would: delete and
/// TimedOut, no timer left already due.
#[test]
fn pipelined_look_ahead_listing_at_the_deadline_times_out() {
    let mut t = T::new(OpPlan::Pipelined);
    let (f1, f2) = (other(1, 1), other(2, 2));
    t.acquire(Some(300));
    t.ops();
    let own = t.own(0, 3);
    t.reply("create2 /app/lock/_c_<U0>-lock- [ES]", created(&full(&own), 100));
    t.reply(LIST_W, children(&[&f1, &f2, &own]));
    assert_eq!(
        t.ops(),
        [
            "exists /app/lock/_c_<U0>-lock-0000000003 w",
            "getData /app/lock/_c_<F2>-lock-0000000002 w",
            "getData /app/lock/_c_<F1>-lock-0000000001 w"
        ]
    );
    t.reply("exists /app/lock/_c_<U0>-lock-0000000003 w", exists(100));
    t.reply("getData /app/lock/_c_<F2>-lock-0000000002 w", data(b""));
    t.reply("getData /app/lock/_c_<F1>-lock-0000000001 w", data(b""));
    t.set_time(250);
    t.wake_relists(EventType::NODE_DELETED, &f1);
    t.set_time(300);
    t.reply("getChildren2 /app/lock", children(&[&f2, &own]));
    assert_eq!(t.ops(), ["delete /app/lock/_c_<U0>-lock-0000000003"]);
    assert_eq!(t.events(), [RecipeEvent::TimedOut]);
    assert_eq!(t.m.poll_timeout(), None);
}

/// Fast handoff straight to Acquired: predecessor deleted, nothing else ahead.
#[test]
fn pipelined_fast_handoff_acquires_without_any_op() {
    let (mut t, f4, own) = T::waiting_behind_one(OpPlan::Pipelined, 4);
    t.handed_off(&f4, &own);
}

/// The watched predecessor is already gone when the getData arrives
/// (NoNode): as if its deletion had fired. Nothing else ahead: acquired
/// with no re-list; another node ahead: re-list.
#[test]
fn pipelined_gone_predecessor_is_a_handoff() {
    let mut t = T::new(OpPlan::Pipelined);
    let f4 = other(1, 4);
    let own = t.listed(true, 5, &[&f4]);
    assert_eq!(t.ops(), ["exists /app/lock/_c_<U0>-lock-0000000005 w", "getData /app/lock/_c_<F1>-lock-0000000004 w"]);
    t.reply("exists /app/lock/_c_<U0>-lock-0000000005 w", exists(100));
    t.reply("getData /app/lock/_c_<F1>-lock-0000000004 w", no_node());
    assert_eq!(t.events(), [acquired(&full(&own), 100)]);
    // Nothing sent: our own node is watched since the wait began.
    t.assert_nothing_in_flight();

    let mut t = T::new(OpPlan::Pipelined);
    let (f1, f2) = (other(1, 1), other(2, 2));
    let own = t.listed(true, 3, &[&f1, &f2]);
    let watches = t.waiting_ops(&own, &[&f2, &f1]);
    assert_eq!(t.ops(), watches);
    t.reply(&watches[0], exists(100));
    t.reply("getData /app/lock/_c_<F2>-lock-0000000002 w", no_node());
    assert_eq!(t.ops(), ["getChildren2 /app/lock"]);
    t.no_events();

    // The Curator plan re-lists on NoNode, as Curator does.
    let (mut t, f4, _) = T::waiting_behind_one(OpPlan::Curator, 4);
    t.wake_relists(EventType::NODE_DELETED, &f4);
}

/// A child without a 10-digit Curator key (kazoo naming, or a wrapped
/// counter such as `-2147483648`, which sorts first) could sort ahead of
/// ours later, so the waiter re-lists instead of handing off.
#[test]
fn pipelined_foreign_child_in_the_listing_disables_fast_handoff() {
    // kazoo-style: the whole name is the key; it sorts after every Curator node.
    let mut t = T::new(OpPlan::Pipelined);
    let kazoo = "514e5a831836450cb1a56c741e990fd8__lock__0000000032";
    let f1 = other(1, 1);
    t.wait_behind(true, 2, &[&f1, kazoo], &[&f1]);
    t.wake_relists(EventType::NODE_DELETED, &f1);

    // A wrapped sequence counter: key "-2147483648" sorts before "0...".
    let mut t = T::new(OpPlan::Pipelined);
    let wrapped = "_c_00000002-0000-4000-8000-000000000000-lock--2147483648";
    let f1 = other(1, 1);
    t.wait_behind(true, 2, &[&f1, wrapped], &[&f1]);
    t.wake_relists(EventType::NODE_DELETED, &f1);

    // Ahead of ours, it is the node to watch.
    let mut t = T::new(OpPlan::Pipelined);
    let own = t.wait_behind(true, 2, &[wrapped], &[wrapped]);
    t.watch(EventType::NODE_DELETED, &full(wrapped));
    t.reply_list_and_acquire(&own, 100);
}

/// `fast_handoff = false` (and the Curator plan) always re-list.
#[test]
fn fast_handoff_off_relists() {
    let mut c = config(OpPlan::Pipelined);
    c.fast_handoff = false;
    let mut t = T::with_config(c);
    let f1 = other(1, 1);
    t.wait_behind(true, 2, &[&f1], &[&f1]);
    t.wake_relists(EventType::NODE_DELETED, &f1);
    t.no_events();

    let mut t = T::new(OpPlan::Curator);
    t.wait_behind(false, 2, &[&f1], &[&f1]);
    t.wake_relists(EventType::NODE_DELETED, &f1);
    t.no_events();
}

/// Only a deletion hands off; any other event on the predecessor re-lists.
#[test]
fn pipelined_other_events_on_the_predecessor_relist() {
    let (mut t, f1, _) = T::waiting_behind_one(OpPlan::Pipelined, 1);
    t.wake_relists(EventType::NODE_DATA_CHANGED, &f1);
    t.no_events();
}

/// The pipelined plan times out exactly as the Curator plan does.
#[test]
fn pipelined_timeout() {
    let mut t = T::new(OpPlan::Pipelined);
    t.acquire(Some(300));
    t.ops();
    let own = t.own(0, 1);
    let f0 = other(1, 0);
    t.reply("create2 /app/lock/_c_<U0>-lock- [ES]", created(&full(&own), 10));
    t.reply(LIST_W, children(&[&own, &f0]));
    assert_eq!(t.ops(), ["exists /app/lock/_c_<U0>-lock-0000000001 w", "getData /app/lock/_c_<F1>-lock-0000000000 w"]);
    t.reply("exists /app/lock/_c_<U0>-lock-0000000001 w", exists(10));
    t.reply("getData /app/lock/_c_<F1>-lock-0000000000 w", data(b""));
    assert_eq!(t.m.poll_timeout(), Some(at(300)));
    t.timeout(300);
    assert_eq!(t.ops(), ["getChildren2 /app/lock"]);
    t.reply("getChildren2 /app/lock", children(&[&own, &f0]));
    // Our own node is watched already: the predecessor's getData alone.
    assert_eq!(t.ops(), ["getData /app/lock/_c_<F1>-lock-0000000000 w"]);
    t.reply("getData /app/lock/_c_<F1>-lock-0000000000 w", data(b""));
    assert_eq!(t.ops(), ["delete /app/lock/_c_<U0>-lock-0000000001"]);
    assert_eq!(t.events(), [RecipeEvent::TimedOut]);
}

/// Revocable locks skip the pipelined listing: getData(own, watch) must come
/// before the listing, as in Curator.
#[test]
fn pipelined_revocable_reads_own_node_before_listing() {
    let mut t = T::new(OpPlan::Pipelined);
    t.m.make_revocable().unwrap();
    t.acquire(None);
    assert_eq!(t.ops(), ["create2 /app/lock/_c_<U0>-lock- [ES]"]);
    let own = t.own(0, 0);
    t.reply("create2 /app/lock/_c_<U0>-lock- [ES]", created(&full(&own), 1));
    assert_eq!(t.ops(), ["getData /app/lock/_c_<U0>-lock-0000000000 w", "getChildren2 /app/lock"]);
}
