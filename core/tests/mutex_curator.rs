//! Transcript tests for [`Mutex`] (see `mutex_harness` for how ops are
//! rendered and answered): the Curator plan: acquire (parents, retries, timeouts, reentrancy) and connection loss.

use std::time::Duration;

use bytes::Bytes;
use zoolock_core::wire::{ErrorCode, EventType};
use zoolock_core::{
    ApiMisuse, ConnectionState, FencingToken, Recipe, RecipeEvent, RequestError,
    recipes::{OpPlan, RetryPolicy},
};

mod mutex_harness;
mod transcript;

use mutex_harness::*;
use transcript::at;

// ---- Curator plan: acquire ----------------------------------------------------------------

/// mutex-uncontended, with two missing ancestors: create2 → NoNode, then
/// Curator 5.4's top-down mkdirs (exists, createContainer; never `/`), then
/// create2 again with the same UUID, one listing, Acquired with czxid.
#[test]
fn curator_uncontended_creates_missing_parents_top_down_with_same_uuid() {
    let mut t = T::new(OpPlan::Curator);
    t.acquire(None);
    assert_eq!(t.ops(), ["create2 /app/lock/_c_<U0>-lock- [ES]"]);
    assert_eq!(t.create_data, [Bytes::from_static(DATA)], "Curator's default data");
    t.reply("create2 /app/lock/_c_<U0>-lock- [ES]", no_node());
    assert_eq!(t.ops(), ["exists /app"]);
    t.reply("exists /app", no_node());
    assert_eq!(t.ops(), ["createContainer /app [C]"]);
    t.reply("createContainer /app [C]", created("/app", 5));
    assert_eq!(t.ops(), ["exists /app/lock"]);
    t.reply("exists /app/lock", no_node());
    assert_eq!(t.ops(), ["createContainer /app/lock [C]"]);
    t.reply("createContainer /app/lock [C]", created("/app/lock", 6));
    assert_eq!(t.ops(), ["create2 /app/lock/_c_<U0>-lock- [ES]"], "same UUID after mkdirs");
    let own = t.own(0, 0);
    t.reply("create2 /app/lock/_c_<U0>-lock- [ES]", created(&full(&own), 7));
    assert_eq!(t.ops(), ["getChildren2 /app/lock"]);
    t.no_events();
    t.reply("getChildren2 /app/lock", children(&[&own]));
    assert_eq!(t.events(), [acquired(&full(&own), 7)], "the token is the create2 Stat's czxid");
    assert_eq!(t.m.holder(), Some((full(&own).as_str(), FencingToken(7))));
    assert_eq!(t.m.hold_count(), 1);
    t.no_ops();
    assert_eq!(t.m.poll_timeout(), None);
}

/// Curator 5.7.1 (CURATOR-715): the same acquire, but mkdirs probes from the
/// node's parent up to the first ancestor that exists, then makes the missing
/// ones top-down without probing them again; one request per round trip still.
#[test]
fn curator57_probes_missing_parents_bottom_up() {
    let mut t = T::new(OpPlan::Curator57);
    t.acquire(None);
    assert_eq!(t.ops(), ["create2 /app/lock/_c_<U0>-lock- [ES]"]);
    t.reply("create2 /app/lock/_c_<U0>-lock- [ES]", no_node());
    assert_eq!(t.ops(), ["exists /app/lock"]);
    t.reply("exists /app/lock", no_node());
    assert_eq!(t.ops(), ["exists /app"]);
    t.reply("exists /app", exists(2));
    assert_eq!(t.ops(), ["createContainer /app/lock [C]"]);
    t.reply("createContainer /app/lock [C]", created("/app/lock", 6));
    assert_eq!(t.ops(), ["create2 /app/lock/_c_<U0>-lock- [ES]"], "same UUID after mkdirs");
    let own = t.own(0, 0);
    t.reply("create2 /app/lock/_c_<U0>-lock- [ES]", created(&full(&own), 7));
    assert_eq!(t.ops(), ["getChildren2 /app/lock"], "no pipelined listing: Curator's sequence");
    t.reply("getChildren2 /app/lock", children(&[&own]));
    assert_eq!(t.events(), [acquired(&full(&own), 7)]);
    t.no_ops();
}

/// The trace corpus' shape: `/traces` exists, only the base is missing.
#[test]
fn curator_mkdirs_skips_existing_ancestors() {
    let mut t = T::creating(OpPlan::Curator);
    t.reply("create2 /app/lock/_c_<U0>-lock- [ES]", no_node());
    assert_eq!(t.ops(), ["exists /app"]);
    t.reply("exists /app", exists(2));
    assert_eq!(t.ops(), ["exists /app/lock"]);
    t.reply("exists /app/lock", no_node());
    assert_eq!(t.ops(), ["createContainer /app/lock [C]"]);
    // Another client made it first: NodeExists is ignored.
    t.reply("createContainer /app/lock [C]", err(ErrorCode::NODE_EXISTS));
    assert_eq!(t.ops(), ["create2 /app/lock/_c_<U0>-lock- [ES]"]);
    let own = t.own(0, 3);
    t.reply("create2 /app/lock/_c_<U0>-lock- [ES]", created(&full(&own), 9));
    t.reply_list_and_acquire(&own, 9);
}

/// A NodeExists on the first parent as well (a concurrent mkdirs).
#[test]
fn curator_mkdirs_ignores_node_exists_on_every_parent() {
    let mut t = T::creating(OpPlan::Curator);
    t.reply("create2 /app/lock/_c_<U0>-lock- [ES]", no_node());
    t.ops();
    t.reply("exists /app", no_node());
    t.ops();
    t.reply("createContainer /app [C]", err(ErrorCode::NODE_EXISTS));
    assert_eq!(t.ops(), ["exists /app/lock"]);
    t.reply("exists /app/lock", exists(3));
    assert_eq!(t.ops(), ["create2 /app/lock/_c_<U0>-lock- [ES]"]);
    t.no_events();
}

/// A server without containers answers createContainer with Unimplemented:
/// the parent is made persistent instead, the way Curator's
/// `dontUseContainerParents()` makes it (create, opcode 1, flags 0), and the
/// rest of the parents follow suit.
#[test]
fn curator_container_unimplemented_falls_back_to_persistent_create() {
    let mut t = T::creating(OpPlan::Curator);
    t.reply("create2 /app/lock/_c_<U0>-lock- [ES]", no_node());
    t.ops();
    t.reply("exists /app", no_node());
    assert_eq!(t.ops(), ["createContainer /app [C]"]);
    t.reply("createContainer /app [C]", err(ErrorCode::UNIMPLEMENTED));
    assert_eq!(t.ops(), ["create /app [P]"]);
    t.reply("create /app [P]", path_reply("/app"));
    assert_eq!(t.ops(), ["exists /app/lock"]);
    t.reply("exists /app/lock", no_node());
    assert_eq!(t.ops(), ["create /app/lock [P]"]);
    t.reply("create /app/lock [P]", path_reply("/app/lock"));
    assert_eq!(t.ops(), ["create2 /app/lock/_c_<U0>-lock- [ES]"]);
    t.no_events();
}

/// `container_parents = false` is `dontUseContainerParents()`: create
/// (opcode 1) with flags 0 from the start.
#[test]
fn curator_persistent_parents_when_containers_are_off() {
    let mut c = config(OpPlan::Curator);
    c.container_parents = false;
    let mut t = T::with_config(c);
    t.acquire(None);
    t.ops();
    t.reply("create2 /app/lock/_c_<U0>-lock- [ES]", no_node());
    t.ops();
    t.reply("exists /app", exists(1));
    t.ops();
    t.reply("exists /app/lock", no_node());
    assert_eq!(t.ops(), ["create /app/lock [P]"]);
    t.reply("create /app/lock [P]", path_reply("/app/lock"));
    assert_eq!(t.ops(), ["create2 /app/lock/_c_<U0>-lock- [ES]"]);
}

/// Unimplemented when parents are already persistent is a real failure.
#[test]
fn curator_persistent_parent_unimplemented_fails() {
    let mut c = config(OpPlan::Curator);
    c.container_parents = false;
    let mut t = T::with_config(c);
    t.acquire(None);
    t.ops();
    t.reply("create2 /app/lock/_c_<U0>-lock- [ES]", no_node());
    t.ops();
    t.reply("exists /app", no_node());
    t.ops();
    t.reply("create /app [P]", err(ErrorCode::UNIMPLEMENTED));
    assert_eq!(t.events(), [failed(RequestError::Server(ErrorCode::UNIMPLEMENTED))]);
    t.assert_quiescent();
}

/// A nested acquire through the holding handle sends nothing, reports
/// Acquired at once with the same node and token; only the last release
/// deletes, and (Curator plan) Released follows the delete's reply.
#[test]
fn curator_reentrant_acquire_and_release() {
    let mut t = T::new(OpPlan::Curator);
    let own = t.curator_acquire_free(0, 0, 11);
    t.acquire(None);
    t.acquire(Some(0));
    t.no_ops();
    assert_eq!(t.events(), [acquired(&full(&own), 11), acquired(&full(&own), 11)]);
    assert_eq!(t.m.hold_count(), 3);
    t.release();
    t.release();
    t.no_ops();
    t.no_events();
    assert_eq!(t.m.hold_count(), 1);
    t.release();
    assert_eq!(t.ops(), [format!("delete {BASE}/_c_<U0>-lock-0000000000")]);
    t.no_events();
    t.reply("delete /app/lock/_c_<U0>-lock-0000000000", empty());
    assert_eq!(t.events(), [RecipeEvent::Released]);
    assert_eq!(t.m.hold_count(), 0);
    assert_eq!(t.m.holder(), None);
    t.assert_quiescent();
}

/// NoNode on the release's delete (expiry, or cleaned up already) ends it too.
#[test]
fn curator_release_delete_no_node_is_released() {
    let mut t = T::new(OpPlan::Curator);
    t.curator_acquire_free(0, 4, 11);
    t.release();
    t.ops();
    t.release_done("delete /app/lock/_c_<U0>-lock-0000000004", no_node());
}

/// mutex-contended, client B, with more contenders: watch only the
/// immediate predecessor (sorted by sequence, not server order), re-list on
/// every wake-up, acquire when first.
#[test]
fn curator_contended_watches_immediate_predecessor() {
    let mut t = T::new(OpPlan::Curator);
    t.acquire(None);
    let own = t.curator_create(0, 7, 70);
    let (f5, f6, f9) = (other(1, 5), other(2, 6), other(3, 9));
    t.reply("getChildren2 /app/lock", children(&[&f9, &own, &f6, &f5]));
    assert_eq!(t.ops(), ["getData /app/lock/_c_<F2>-lock-0000000006 w"]);
    t.reply("getData /app/lock/_c_<F2>-lock-0000000006 w", data(b"10.0.0.2"));
    t.no_ops();
    assert_eq!(t.m.poll_timeout(), None, "no deadline, no timer");
    // Noise: the successor and an unrelated path change nothing.
    t.watch(EventType::NODE_DELETED, &full(&f9));
    t.watch(EventType::NODE_DELETED, "/elsewhere");
    t.no_ops();
    t.wake_relists(EventType::NODE_DELETED, &f6);
    t.reply("getChildren2 /app/lock", children(&[&own, &f9, &f5]));
    assert_eq!(t.ops(), ["getData /app/lock/_c_<F1>-lock-0000000005 w"]);
    t.reply("getData /app/lock/_c_<F1>-lock-0000000005 w", data(b""));
    t.no_events();
    t.wake_relists(EventType::NODE_DELETED, &f5);
    t.reply("getChildren2 /app/lock", children(&[&f9, &own]));
    assert_eq!(t.events(), [acquired(&full(&own), 70)]);
    t.no_ops();
}

/// Any event on the predecessor wakes the waiter (Curator re-lists for a
/// NodeDataChanged too, as the revocation trace shows).
#[test]
fn curator_data_change_on_predecessor_relists() {
    let (mut t, f1, _) = T::waiting_behind_one(OpPlan::Curator, 1);
    t.wake_relists(EventType::NODE_DATA_CHANGED, &f1);
}

/// The predecessor is released between the listing and the watch: getData
/// answers NoNode and the machine re-lists at once (no wait, no timer).
#[test]
fn curator_predecessor_gone_before_watch_relists_at_once() {
    let mut t = T::new(OpPlan::Curator);
    t.acquire(Some(60_000));
    let own = t.curator_create(0, 2, 20);
    let f1 = other(1, 1);
    t.reply("getChildren2 /app/lock", children(&[&own, &f1]));
    t.ops();
    t.reply("getData /app/lock/_c_<F1>-lock-0000000001 w", no_node());
    assert_eq!(t.ops(), ["getChildren2 /app/lock"]);
    assert_eq!(t.m.poll_timeout(), None);
    t.reply("getChildren2 /app/lock", children(&[&own]));
    assert_eq!(t.events(), [acquired(&full(&own), 20)]);
}

/// A watch event that arrives while getData is still in flight (e.g. from a
/// watch armed earlier) is remembered: the machine re-lists right after the
/// reply instead of waiting (the lost-wakeup rule, reference §3.6).
#[test]
fn curator_watch_during_get_data_relists_after_reply() {
    let mut t = T::new(OpPlan::Curator);
    t.acquire(None);
    let own = t.curator_create(0, 2, 20);
    let f1 = other(1, 1);
    t.reply("getChildren2 /app/lock", children(&[&own, &f1]));
    assert_eq!(t.ops(), ["getData /app/lock/_c_<F1>-lock-0000000001 w"]);
    t.watch(EventType::NODE_DELETED, &full(&f1));
    t.no_ops();
    t.reply("getData /app/lock/_c_<F1>-lock-0000000001 w", data(b"x"));
    t.reply_list_and_acquire(&own, 20);
}

/// mutex-timeout, client B: at the deadline the loop runs once more
/// (getChildren2, getData w), sees the deadline passed, deletes its node and
/// reports TimedOut. The predecessor's watch is left to fire harmlessly.
#[test]
fn curator_timeout_runs_the_loop_once_more_then_deletes() {
    let mut t = T::new(OpPlan::Curator);
    t.acquire(Some(300));
    let own = t.curator_create(0, 1, 20);
    let f0 = other(1, 0);
    t.set_time(5);
    t.reply("getChildren2 /app/lock", children(&[&own, &f0]));
    assert_eq!(t.ops(), ["getData /app/lock/_c_<F1>-lock-0000000000 w"]);
    t.set_time(10);
    t.reply("getData /app/lock/_c_<F1>-lock-0000000000 w", data(DATA));
    assert_eq!(t.m.poll_timeout(), Some(at(300)));
    t.timeout(299);
    t.no_ops();
    assert_eq!(t.m.poll_timeout(), Some(at(300)));
    t.timeout(300);
    assert_eq!(t.ops(), ["getChildren2 /app/lock"]);
    assert_eq!(t.m.poll_timeout(), None);
    t.reply("getChildren2 /app/lock", children(&[&own, &f0]));
    assert_eq!(t.ops(), ["getData /app/lock/_c_<F1>-lock-0000000000 w"]);
    t.no_events();
    t.reply("getData /app/lock/_c_<F1>-lock-0000000000 w", data(DATA));
    assert_eq!(t.ops(), ["delete /app/lock/_c_<U0>-lock-0000000001"]);
    assert_eq!(t.events(), [RecipeEvent::TimedOut]);
    // The stale watch fires later (trace line 9): nothing happens.
    t.watch(EventType::NODE_DELETED, &full(&f0));
    t.reply("delete /app/lock/_c_<U0>-lock-0000000001", empty());
    t.no_events();
    t.assert_quiescent();
    assert_eq!(t.m.poll_timeout(), None);
}

/// A free lock at the deadline is still taken (Curator's one more loop).
#[test]
fn curator_free_lock_at_the_deadline_is_taken() {
    let mut t = T::new(OpPlan::Curator);
    t.acquire(Some(100));
    let own = t.curator_create(0, 1, 20);
    let f0 = other(1, 0);
    t.reply("getChildren2 /app/lock", children(&[&own, &f0]));
    t.ops();
    t.reply("getData /app/lock/_c_<F1>-lock-0000000000 w", data(b""));
    t.timeout(150);
    t.reply_list_and_acquire(&own, 20);
    t.no_ops();
}

/// `acquire(0)`: a free lock is taken; a held one costs create, list,
/// getData and the delete, with no wait (reference §3.6).
#[test]
fn curator_zero_timeout() {
    let mut t = T::new(OpPlan::Curator);
    t.set_time(50);
    t.acquire(Some(50));
    let own = t.curator_create(0, 0, 5);
    t.reply("getChildren2 /app/lock", children(&[&own]));
    assert_eq!(t.events(), [acquired(&full(&own), 5)]);

    let mut t = T::new(OpPlan::Curator);
    t.set_time(50);
    t.acquire(Some(50));
    let own = t.curator_create(0, 1, 5);
    t.reply("getChildren2 /app/lock", children(&[&own, &other(1, 0)]));
    t.ops();
    t.reply("getData /app/lock/_c_<F1>-lock-0000000000 w", data(b""));
    assert_eq!(t.ops(), ["delete /app/lock/_c_<U0>-lock-0000000001"]);
    assert_eq!(t.events(), [RecipeEvent::TimedOut]);
    assert_eq!(t.m.poll_timeout(), None);
}

/// Our node is missing from a listing: delete it anyway (NoNode ignored),
/// pause per the retry policy (ExponentialBackoffRetry: the first pause is
/// exactly `base`), then a fresh create with a NEW UUID at the back of the queue.
#[test]
fn curator_own_node_missing_recreates_with_new_uuid_after_pause() {
    let mut t = T::new(OpPlan::Curator);
    t.acquire(None);
    let own = t.curator_create(0, 1, 20);
    t.set_time(1_000);
    t.reply("getChildren2 /app/lock", children(&[&other(1, 0)]));
    assert_eq!(t.ops(), ["delete /app/lock/_c_<U0>-lock-0000000001"]);
    t.no_events();
    assert_eq!(t.m.poll_timeout(), Some(at(1_100)), "retry 0 pauses exactly base (100 ms)");
    t.reply("delete /app/lock/_c_<U0>-lock-0000000001", no_node());
    t.timeout(1_099);
    t.no_ops();
    t.timeout(1_100);
    assert_eq!(t.ops(), ["create2 /app/lock/_c_<U1>-lock- [ES]"], "a new UUID");
    let own2 = t.own(1, 5);
    t.reply("create2 /app/lock/_c_<U1>-lock- [ES]", created(&full(&own2), 50));
    t.reply_list_and_acquire(&own2, 50);
    assert_ne!(own, own2);
}

/// The same when the base path was reaped: getChildren2 NoNode lists as empty.
#[test]
fn curator_base_reaped_while_listing_is_own_node_missing() {
    let mut t = T::new(OpPlan::Curator);
    t.acquire(None);
    t.curator_create(0, 1, 20);
    t.reply("getChildren2 /app/lock", no_node());
    assert_eq!(t.ops(), ["delete /app/lock/_c_<U0>-lock-0000000001"]);
    assert!(t.m.poll_timeout().is_some());
    t.no_events();
}

/// Retries exhausted: the policy allows `max_retries` re-creates, then
/// Failed(RetriesExhausted): the recipe's verdict, not a server code. Every pause is within Curator's bounds
/// `base × [1, 2^(n+1) - 1]`, capped at `max_pause`.
#[test]
fn curator_no_node_retries_exhausted_fails() {
    let mut c = config(OpPlan::Curator);
    c.retry = RetryPolicy { base: Duration::from_millis(100), max_retries: 3, max_pause: Duration::from_millis(500) };
    let mut t = T::with_config(c);
    t.acquire(None);
    let mut now = 0;
    for n in 0..=3u32 {
        let own = t.curator_create(n as usize, n, 20);
        t.reply("getChildren2 /app/lock", children(&[&other(1, 99)]));
        let delete = format!("delete /app/lock/_c_<U{n}>-lock-{n:010}");
        assert_eq!(t.ops(), std::slice::from_ref(&delete));
        t.reply(&delete, no_node());
        if n == 3 {
            assert_eq!(t.events(), [failed(RequestError::RetriesExhausted(3))]);
            assert_eq!(t.m.poll_timeout(), None);
            t.assert_quiescent();
            let _ = own;
            return;
        }
        t.no_events();
        let until = t.m.poll_timeout().expect("a retry pause");
        let pause = until.saturating_duration_since(at(now));
        let max = (100 * ((1u64 << (n + 1)) - 1)).min(500);
        assert!(pause >= Duration::from_millis(100) && pause <= Duration::from_millis(max), "pause {n}: {pause:?}");
        now = until.as_nanos() / 1_000_000;
        t.timeout(now);
    }
}

/// The second create2 NoNode after mkdirs (a container reaped in between) is
/// not retried inside the create: it takes the NoNode retry path (pause, new
/// UUID), and the new attempt runs mkdirs again.
#[test]
fn curator_second_create_no_node_takes_the_retry_path() {
    let mut t = T::creating(OpPlan::Curator);
    t.reply("create2 /app/lock/_c_<U0>-lock- [ES]", no_node());
    t.ops();
    t.reply("exists /app", exists(1));
    t.ops();
    t.reply("exists /app/lock", exists(2));
    assert_eq!(t.ops(), ["create2 /app/lock/_c_<U0>-lock- [ES]"]);
    t.reply("create2 /app/lock/_c_<U0>-lock- [ES]", no_node());
    t.no_ops();
    t.no_events();
    let until = t.m.poll_timeout().expect("a retry pause");
    t.timeout(until.as_nanos() / 1_000_000);
    assert_eq!(t.ops(), ["create2 /app/lock/_c_<U1>-lock- [ES]"]);
    t.reply("create2 /app/lock/_c_<U1>-lock- [ES]", no_node());
    assert_eq!(t.ops(), ["exists /app"], "a new attempt makes parents again");
}

// ---- Curator plan: connection loss ---------------------------------------------------------

/// ConnectionLoss on create2: after the reconnect, getChildren (opcode 8) of
/// the parent looks for our protection prefix; found → adopt it (an exists
/// reads its Stat for the fencing token), then list as usual.
#[test]
fn curator_create_connection_loss_adopts_the_landed_node() {
    let mut t = T::new(OpPlan::Curator);
    t.acquire(None);
    assert_eq!(t.ops(), ["create2 /app/lock/_c_<U0>-lock- [ES]"]);
    t.disconnect();
    t.no_ops();
    t.no_events();
    t.session(ConnectionState::Reconnected);
    assert_eq!(t.ops(), ["getChildren /app/lock"]);
    t.lookup_adopts_and_acquires(4, &[&other(1, 3)], 44);
}

/// Not found after the reconnect → create2 again with the SAME UUID; a
/// NoNode lookup (parent gone) counts as not found.
#[test]
fn curator_create_connection_loss_not_found_recreates_with_same_uuid() {
    let mut t = T::create_unknown(OpPlan::Curator);
    t.session(ConnectionState::Reconnected);
    assert_eq!(t.ops(), ["getChildren /app/lock"]);
    t.reply("getChildren /app/lock", names(&[&other(1, 3)]));
    assert_eq!(t.ops(), ["create2 /app/lock/_c_<U0>-lock- [ES]"]);
    t.disconnect();
    t.session(ConnectionState::Reconnected);
    assert_eq!(t.ops(), ["getChildren /app/lock"]);
    t.reply("getChildren /app/lock", no_node());
    assert_eq!(t.ops(), ["create2 /app/lock/_c_<U0>-lock- [ES]"]);
    assert_eq!(t.uuids.len(), 1);
    t.no_events();
}

/// The lookup itself dropping waits for the next reconnect and looks again;
/// the adopt's exists dropping does the same.
#[test]
fn curator_create_recovery_survives_further_drops() {
    let mut t = T::create_unknown(OpPlan::Curator);
    t.session(ConnectionState::Reconnected);
    t.ops();
    t.disconnect();
    t.no_ops();
    t.session(ConnectionState::Reconnected);
    assert_eq!(t.ops(), ["getChildren /app/lock"]);
    let own = t.own(0, 4);
    t.reply("getChildren /app/lock", names(&[&own]));
    assert_eq!(t.ops(), ["exists /app/lock/_c_<U0>-lock-0000000004"]);
    t.disconnect();
    t.no_ops();
    t.session(ConnectionState::Reconnected);
    assert_eq!(t.ops(), ["getChildren /app/lock"]);
    t.reply("getChildren /app/lock", names(&[&own]));
    t.ops();
    // Gone between the lookup and the exists: create again (same UUID).
    t.reply("exists /app/lock/_c_<U0>-lock-0000000004", no_node());
    assert_eq!(t.ops(), ["create2 /app/lock/_c_<U0>-lock- [ES]"]);
}

/// ConnectionLoss on the listing or on the predecessor's getData: re-list
/// (the request waits in the session for the reconnect).
#[test]
fn curator_connection_loss_while_listing_or_watching_relists() {
    let mut t = T::new(OpPlan::Curator);
    t.acquire(None);
    let own = t.curator_create(0, 2, 20);
    t.disconnect();
    assert_eq!(t.ops(), ["getChildren2 /app/lock"]);
    t.session(ConnectionState::Reconnected);
    t.no_ops();
    let f1 = other(1, 1);
    t.reply("getChildren2 /app/lock", children(&[&own, &f1]));
    assert_eq!(t.ops(), ["getData /app/lock/_c_<F1>-lock-0000000001 w"]);
    t.disconnect();
    assert_eq!(t.ops(), ["getChildren2 /app/lock"]);
    t.session(ConnectionState::Reconnected);
    t.no_ops();
    t.reply("getChildren2 /app/lock", children(&[&own, &f1]));
    assert_eq!(t.ops(), ["getData /app/lock/_c_<F1>-lock-0000000001 w"]);
    t.no_events();
}

/// mutex-reconnect, client B: Suspended while waiting wakes the loop; the
/// re-list is queued at once and the reconnect adds nothing (trace B.conn2:
/// getChildren2, getData w, NodeDeleted, getChildren2).
#[test]
fn curator_suspended_while_waiting_queues_a_relist() {
    let (mut t, f0, own) = T::waiting_behind_one(OpPlan::Curator, 0);
    t.session(ConnectionState::Suspended);
    assert_eq!(t.ops(), ["getChildren2 /app/lock"]);
    t.no_events();
    t.session(ConnectionState::Reconnected);
    t.no_ops();
    t.no_events();
    t.reply("getChildren2 /app/lock", children(&[&own, &f0]));
    assert_eq!(t.ops(), ["getData /app/lock/_c_<F1>-lock-0000000000 w"]);
    t.reply("getData /app/lock/_c_<F1>-lock-0000000000 w", data(DATA));
    t.watch(EventType::NODE_DELETED, &full(&f0));
    t.reply_list_and_acquire(&own, 100);
}

/// Holding through a drop: Suspended, then on the same session's reconnect
/// an exists on our node verifies it before Reconnected is reported. Where
/// held nodes are watched (the Pipelined plan's config here), that exists
/// also re-arms the held node's watch.
#[test]
fn held_suspended_then_reconnected_verifies_own_node() {
    for plan in [OpPlan::Curator, OpPlan::Pipelined] {
        let mut t = T::new(plan);
        let own = full(&held(&mut t, 0, 20));
        let verify = match plan {
            OpPlan::Curator => "exists /app/lock/_c_<U0>-lock-0000000000",
            _ => "exists /app/lock/_c_<U0>-lock-0000000000 w",
        };
        t.session(ConnectionState::Suspended);
        assert_eq!(t.events(), [RecipeEvent::Suspended]);
        t.no_ops();
        t.session(ConnectionState::Reconnected);
        assert_eq!(t.ops(), [verify]);
        t.no_events();
        t.reply(verify, exists(20));
        assert_eq!(t.events(), [RecipeEvent::Reconnected]);
        assert_eq!(t.m.holder(), Some((own.as_str(), FencingToken(20))));
        // Another drop during the check: checked again on the next reconnect.
        t.session(ConnectionState::Suspended);
        t.session(ConnectionState::Reconnected);
        t.ops();
        t.disconnect();
        assert_eq!(t.events(), [RecipeEvent::Suspended, RecipeEvent::Suspended]);
        t.session(ConnectionState::Reconnected);
        assert_eq!(t.ops(), [verify]);
        t.reply(verify, exists(20));
        assert_eq!(t.events(), [RecipeEvent::Reconnected]);
    }
}

/// The node is gone after the reconnect (deleted by someone): Lost.
#[test]
fn held_reconnected_but_node_gone_is_lost() {
    let mut t = T::holding(OpPlan::Curator, 20);
    t.session(ConnectionState::Suspended);
    t.session(ConnectionState::Reconnected);
    t.ops();
    t.reply("exists /app/lock/_c_<U0>-lock-0000000000", no_node());
    assert_eq!(t.events(), [RecipeEvent::Suspended, RecipeEvent::Lost]);
    assert_eq!(t.m.hold_count(), 0);
    assert_eq!(t.m.holder(), None);
    assert!(matches!(t.m.release(t.now), Err(ApiMisuse::NotHeld)));
    t.assert_quiescent();
}

/// session-expiry, client A: the session is lost while holding → Lost. The
/// old node is never used again; the next session deletes it (NoNode) as
/// Curator's later release does.
#[test]
fn held_session_lost_reports_lost_and_the_next_session_deletes_the_node() {
    let mut t = T::holding(OpPlan::Curator, 20);
    t.session(ConnectionState::Suspended);
    t.end(RequestError::SessionExpired, ConnectionState::Lost);
    assert_eq!(t.events(), [RecipeEvent::Suspended, RecipeEvent::Lost]);
    t.no_ops();
    assert_eq!(t.m.hold_count(), 0);
    assert!(matches!(t.m.release(t.now), Err(ApiMisuse::NotHeld)));
    // A new session.
    t.session(ConnectionState::Connected);
    t.cleanup_done("delete /app/lock/_c_<U0>-lock-0000000000", no_node());
}

/// Lost while waiting: Failed(SessionExpired) once, nothing more for the old
/// node on the dead session; a stale watch is ignored; the next session only
/// deletes the old node, and a new acquire starts afresh with a new UUID.
#[test]
fn waiting_session_lost_fails_and_never_trusts_the_old_node() {
    let (mut t, f0, _) = T::waiting_behind_one(OpPlan::Curator, 0);
    t.end_failing_acquire(RequestError::SessionExpired, ConnectionState::Lost);
    t.no_ops();
    assert_eq!(t.m.poll_timeout(), None);
    t.deleted_quietly(&f0);
    t.session(ConnectionState::Connected);
    assert_eq!(t.ops(), ["delete /app/lock/_c_<U0>-lock-0000000001"]);
    t.acquire(None);
    assert_eq!(t.ops(), ["create2 /app/lock/_c_<U1>-lock- [ES]"]);
    t.reply("delete /app/lock/_c_<U0>-lock-0000000001", no_node());
    let own = t.own(1, 2);
    t.reply("create2 /app/lock/_c_<U1>-lock- [ES]", created(&full(&own), 30));
    t.reply_list_and_acquire(&own, 30);
}

/// The same with requests in flight: the session fails them with
/// SessionExpired before reporting Lost. One Failed, nothing sent for the old
/// node on the dead session.
#[test]
fn session_lost_with_requests_in_flight_fails_once() {
    // Listing.
    let mut t = T::new(OpPlan::Curator);
    t.acquire(None);
    t.curator_create(0, 1, 10);
    t.end_failing_acquire(RequestError::SessionExpired, ConnectionState::Lost);
    drop_rejected(&mut t);
    // Watching.
    let mut t = T::new(OpPlan::Curator);
    t.acquire(None);
    let own = t.curator_create(0, 1, 10);
    t.reply("getChildren2 /app/lock", children(&[&own, &other(1, 0)]));
    t.ops();
    t.end_failing_acquire(RequestError::SessionExpired, ConnectionState::Lost);
    drop_rejected(&mut t);
    // Creating.
    let mut t = T::creating(OpPlan::Curator);
    t.end_failing_acquire(RequestError::SessionExpired, ConnectionState::Lost);
    drop_rejected(&mut t);
}

/// What a [`zoolock_core::Client`] does with ops submitted to an ended
/// session: answers them at once with the session's error. Nothing may
/// come of it but more cleanup for a later session.
fn drop_rejected(t: &mut T) {
    for op in t.ops() {
        assert!(op.starts_with("delete "), "only cleanup after the session ended: {op}");
    }
    t.fail_in_flight(RequestError::SessionExpired);
    t.no_ops();
    t.no_events();
}

/// A lost session while a create's outcome is unknown: Failed, and the next
/// session looks for the protection prefix and deletes what it finds
/// (Curator's CURATOR-498 handling of a session change during a protected create).
#[test]
fn creating_session_lost_the_next_session_finds_and_deletes_by_prefix() {
    let mut t = T::create_unknown(OpPlan::Curator);
    t.end_failing_acquire(RequestError::SessionExpired, ConnectionState::Lost);
    t.no_ops();
    t.session(ConnectionState::Connected);
    assert_eq!(t.ops(), ["getChildren /app/lock"]);
    let own = t.own(0, 3);
    t.reply("getChildren /app/lock", names(&[&other(1, 2), &own]));
    t.cleanup_done("delete /app/lock/_c_<U0>-lock-0000000003", empty());

    // The same when the create is still in flight as the session ends.
    let mut t = T::creating(OpPlan::Pipelined);
    t.end_failing_acquire(RequestError::SessionExpired, ConnectionState::Lost);
    t.no_ops();
    t.session(ConnectionState::Connected);
    assert_eq!(t.ops(), ["getChildren /app/lock"]);
    t.reply("getChildren /app/lock", names(&[]));
    t.assert_quiescent();
}

/// Closed: the acquire fails with Closed; a hold is reported Lost; the
/// server removed the ephemerals, so nothing is owed.
#[test]
fn closed_session() {
    let (mut t, _, _) = T::waiting_behind_one(OpPlan::Curator, 0);
    t.end_failing_acquire(RequestError::Closed, ConnectionState::Closed);
    t.assert_quiescent();

    let mut t = T::holding(OpPlan::Curator, 20);
    t.end(RequestError::Closed, ConnectionState::Closed);
    assert_eq!(t.events(), [RecipeEvent::Lost]);
    t.assert_quiescent();

    let mut t = T::creating(OpPlan::Curator);
    t.end_failing_acquire(RequestError::Closed, ConnectionState::Closed);
    t.assert_quiescent();
}

/// A release whose delete hits ConnectionLoss: re-sent after the reconnect,
/// and (Curator plan) Released only once it is answered OK or NoNode.
#[test]
fn curator_release_delete_is_resent_after_reconnect() {
    let mut t = T::holding(OpPlan::Curator, 20);
    t.release();
    assert_eq!(t.ops(), ["delete /app/lock/_c_<U0>-lock-0000000000"]);
    t.disconnect();
    t.no_ops();
    t.no_events();
    assert_eq!(t.m.acquire(t.now, None), Err(ApiMisuse::AcquireInProgress), "still releasing");
    t.session(ConnectionState::Reconnected);
    assert_eq!(t.ops(), ["delete /app/lock/_c_<U0>-lock-0000000000"]);
    t.release_done("delete /app/lock/_c_<U0>-lock-0000000000", empty());
}

/// Commands out of place are refused and change nothing.
#[test]
fn api_misuse() {
    let mut t = T::new(OpPlan::Curator);
    assert!(matches!(t.m.release(t.now), Err(ApiMisuse::NotHeld)), "release when not held");
    t.acquire(None);
    t.ops();
    assert_eq!(t.m.acquire(t.now, None), Err(ApiMisuse::AcquireInProgress), "acquire while acquiring");
    assert!(matches!(t.m.release(t.now), Err(ApiMisuse::NotHeld)), "release while acquiring");
    assert_eq!(t.m.make_revocable(), Err(ApiMisuse::RevocableAfterAcquire), "revocable only before acquire");
    t.no_ops();
    t.no_events();
    assert_eq!(t.m.hold_count(), 0);
    // The acquire goes on undisturbed.
    let own = t.own(0, 0);
    t.reply("create2 /app/lock/_c_<U0>-lock- [ES]", created(&full(&own), 1));
    t.reply_list_and_acquire(&own, 1);
    t.release();
    t.ops();
    assert!(matches!(t.m.release(t.now), Err(ApiMisuse::NotHeld)), "release twice");
}
