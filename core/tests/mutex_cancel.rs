//! Transcript tests for [`Mutex`] (see `mutex_harness` for how ops are
//! rendered and answered): cancelling an acquire at every stage, and revocation.

use bytes::Bytes;
use zoolock_core::recipes::REVOKE_MESSAGE;
use zoolock_core::wire::EventType;
use zoolock_core::{ConnectionState, Recipe, RecipeEvent, RequestError, recipes::OpPlan};

mod mutex_harness;
mod transcript;

use mutex_harness::*;
use transcript::at;

// ---- cancellation -----------------------------------------------------------------------

/// Cancel with the create's reply pending: the create may land, so a
/// prefix lookup goes out at once; the create's reply names the node and it
/// is deleted (once, though the lookup finds it too).
#[test]
fn cancel_while_create_reply_pending_deletes_the_landed_node() {
    for plan in [OpPlan::Curator, OpPlan::Pipelined] {
        let mut t = T::new(plan);
        t.acquire(None);
        let mut sent = vec!["create2 /app/lock/_c_<U0>-lock- [ES]".to_string()];
        if plan == OpPlan::Pipelined {
            sent.push(LIST_W.into());
        }
        assert_eq!(t.ops(), sent);
        t.cancel();
        assert_eq!(t.ops(), ["getChildren /app/lock"]);
        t.no_events();
        let own = t.own(0, 3);
        t.reply("create2 /app/lock/_c_<U0>-lock- [ES]", created(&full(&own), 30));
        assert_eq!(t.ops(), ["delete /app/lock/_c_<U0>-lock-0000000003"]);
        if plan == OpPlan::Pipelined {
            t.reply(LIST_W, children(&[&own]));
            t.no_ops();
        }
        t.reply("getChildren /app/lock", names(&[&own]));
        t.no_ops();
        t.reply("delete /app/lock/_c_<U0>-lock-0000000003", empty());
        t.no_events();
        t.assert_quiescent();
    }
}

/// Cancel after the create's ConnectionLoss: nothing can be sent until the
/// reconnect; then the prefix lookup finds the node and deletes it.
#[test]
fn cancel_after_create_connection_loss_finds_and_deletes_by_prefix() {
    let mut t = T::create_unknown(OpPlan::Curator);
    t.cancel();
    t.no_ops();
    assert!(!t.m.is_quiescent(), "a lookup is owed");
    t.session(ConnectionState::Reconnected);
    assert_eq!(t.ops(), ["getChildren /app/lock"]);
    let own = t.own(0, 3);
    t.reply("getChildren /app/lock", names(&[&other(1, 1), &own]));
    t.cleanup_done("delete /app/lock/_c_<U0>-lock-0000000003", empty());
}

/// The lookup itself dropping is retried on the next reconnect; not found
/// (or NoNode) ends it.
#[test]
fn cancel_lookup_is_retried_until_answered() {
    let mut t = T::creating(OpPlan::Curator);
    t.cancel();
    assert_eq!(t.ops(), ["getChildren /app/lock"]);
    t.disconnect();
    t.no_ops();
    t.session(ConnectionState::Reconnected);
    assert_eq!(t.ops(), ["getChildren /app/lock"]);
    t.reply("getChildren /app/lock", no_node());
    t.assert_quiescent();
}

/// A prefix lookup cut short by the end of the session is not dropped: the
/// create may have landed before the server noticed the expiry, so the next
/// session looks again and deletes what it finds.
#[test]
fn cancel_lookup_survives_session_expiry() {
    let mut t = T::creating(OpPlan::Curator);
    t.cancel();
    assert_eq!(t.ops(), ["getChildren /app/lock"]);
    t.end(RequestError::SessionExpired, ConnectionState::Lost);
    t.no_events();
    t.no_ops();
    assert!(!t.m.is_quiescent());
    t.session(ConnectionState::Connected);
    assert_eq!(t.ops(), ["getChildren /app/lock"]);
    let own = t.own(0, 3);
    t.reply("getChildren /app/lock", names(&[&own]));
    t.cleanup_done("delete /app/lock/_c_<U0>-lock-0000000003", empty());
}

/// Cancel while recovering a lost create reply (lookup in flight) and while
/// reading the adopted node's Stat: the node is deleted either way.
#[test]
fn cancel_during_create_recovery() {
    let mut t = T::create_unknown(OpPlan::Curator);
    t.session(ConnectionState::Reconnected);
    assert_eq!(t.ops(), ["getChildren /app/lock"]);
    t.cancel();
    assert_eq!(t.ops(), ["getChildren /app/lock"]);
    let own = t.own(0, 3);
    t.reply("getChildren /app/lock", names(&[&own]));
    t.no_ops();
    t.reply("getChildren /app/lock", names(&[&own]));
    t.cleanup_done("delete /app/lock/_c_<U0>-lock-0000000003", empty());

    let mut t = T::create_unknown(OpPlan::Curator);
    t.session(ConnectionState::Reconnected);
    t.ops();
    let own = t.own(0, 3);
    t.reply("getChildren /app/lock", names(&[&own]));
    assert_eq!(t.ops(), ["exists /app/lock/_c_<U0>-lock-0000000003"]);
    t.cancel();
    assert_eq!(t.ops(), ["delete /app/lock/_c_<U0>-lock-0000000003", "getChildren /app/lock"]);
    t.reply("exists /app/lock/_c_<U0>-lock-0000000003", exists(3));
    t.reply("delete /app/lock/_c_<U0>-lock-0000000003", empty());
    t.reply("getChildren /app/lock", names(&[]));
    t.no_events();
    t.assert_quiescent();
}

/// Cancel while making parents: the create never landed, a lookup confirms it.
#[test]
fn cancel_during_mkdirs() {
    let mut t = T::creating(OpPlan::Curator);
    t.reply("create2 /app/lock/_c_<U0>-lock- [ES]", no_node());
    assert_eq!(t.ops(), ["exists /app"]);
    t.cancel();
    assert_eq!(t.ops(), ["getChildren /app/lock"]);
    t.reply("exists /app", no_node());
    t.no_ops();
    t.reply("getChildren /app/lock", no_node());
    t.no_events();
    t.assert_quiescent();
}

/// Cancel while listing, watching or waiting: our node is deleted.
#[test]
fn cancel_while_listing_watching_or_waiting_deletes_own_node() {
    for plan in [OpPlan::Curator, OpPlan::Pipelined] {
        for stage in 0..3 {
            let mut t = T::new(plan);
            t.acquire(Some(1_000));
            let (own, list) = match plan {
                OpPlan::Curator => (t.curator_create(0, 1, 10), LIST),
                _ => {
                    t.ops();
                    let own = t.own(0, 1);
                    t.reply("create2 /app/lock/_c_<U0>-lock- [ES]", created(&full(&own), 10));
                    (own, LIST_W)
                }
            };
            let watches = t.waiting_ops(&own, &[&other(1, 0)]);
            if stage >= 1 {
                t.reply(list, children(&[&own, &other(1, 0)]));
                assert_eq!(t.ops(), watches);
            }
            if stage >= 2 {
                for watch in &watches {
                    t.reply(watch, if watch.starts_with("exists") { exists(10) } else { data(b"") });
                }
                assert_eq!(t.m.poll_timeout(), Some(at(1_000)));
            }
            t.cancel();
            assert_eq!(t.ops(), ["delete /app/lock/_c_<U0>-lock-0000000001"], "{plan:?} stage {stage}");
            assert_eq!(t.m.poll_timeout(), None);
            // Late replies and events of the abandoned attempt change nothing.
            match stage {
                0 => t.reply(list, children(&[&own])),
                1 => {
                    for watch in &watches {
                        t.reply(watch, if watch.starts_with("exists") { exists(10) } else { data(b"") });
                    }
                }
                _ => t.watch(EventType::NODE_DELETED, &full(&other(1, 0))),
            }
            t.no_ops();
            t.reply("delete /app/lock/_c_<U0>-lock-0000000001", empty());
            t.no_events();
            t.assert_quiescent();
            t.timeout(2_000);
            t.assert_quiescent();
        }
    }
}

/// Cancel during the retry pause before a re-create: the vanished node is
/// already being deleted, and no new node is ever created.
#[test]
fn cancel_during_retry_pause_creates_nothing() {
    let mut t = T::new(OpPlan::Curator);
    t.acquire(None);
    t.curator_create(0, 1, 10);
    t.reply("getChildren2 /app/lock", children(&[&other(1, 0)]));
    assert_eq!(t.ops(), ["delete /app/lock/_c_<U0>-lock-0000000001"]);
    let until = t.m.poll_timeout().expect("a retry pause");
    t.cancel();
    t.reply("delete /app/lock/_c_<U0>-lock-0000000001", no_node());
    t.timeout(until.as_nanos() / 1_000_000 + 1);
    t.no_ops();
    t.no_events();
    t.assert_quiescent();
    // And the handle is free for a new acquire.
    t.acquire(None);
    assert_eq!(t.ops(), ["create2 /app/lock/_c_<U1>-lock- [ES]"]);
}

/// Cancel while held or idle does nothing (release is the way out).
#[test]
fn cancel_when_not_acquiring_is_a_no_op() {
    let mut t = T::new(OpPlan::Curator);
    t.cancel();
    t.assert_quiescent();
    held(&mut t, 0, 5);
    t.cancel();
    t.no_ops();
    assert_eq!(t.m.hold_count(), 1);
}

// ---- revocation -------------------------------------------------------------------------

/// The revocation trace, client A: a revocable node has empty data; getData
/// on our own node (watch) goes out BEFORE getChildren2; a NodeDataChanged
/// re-reads it with the watch; `__REVOKE__` → RevocationRequested; release
/// checks the watch off (checkWatches type 3) and then deletes.
#[test]
fn curator_revocable_lock() {
    let mut t = T::new(OpPlan::Curator);
    t.m.make_revocable().unwrap();
    t.acquire(None);
    assert_eq!(t.ops(), ["create2 /app/lock/_c_<U0>-lock- [ES]"]);
    assert_eq!(t.create_data, [Bytes::new()], "revocable nodes carry empty data");
    let own = t.own(0, 0);
    t.reply("create2 /app/lock/_c_<U0>-lock- [ES]", created(&full(&own), 8));
    assert_eq!(t.ops(), ["getData /app/lock/_c_<U0>-lock-0000000000 w", "getChildren2 /app/lock"]);
    t.reply("getData /app/lock/_c_<U0>-lock-0000000000 w", data(b""));
    t.reply("getChildren2 /app/lock", children(&[&own]));
    assert_eq!(t.events(), [acquired(&full(&own), 8)]);
    // A data change that is not a revocation: re-armed, nothing reported.
    t.watch(EventType::NODE_DATA_CHANGED, &full(&own));
    assert_eq!(t.ops(), ["getData /app/lock/_c_<U0>-lock-0000000000 w"]);
    t.reply("getData /app/lock/_c_<U0>-lock-0000000000 w", data(b"hello"));
    t.no_events();
    // Revoker.attemptRevoke.
    t.watch(EventType::NODE_DATA_CHANGED, &full(&own));
    assert_eq!(t.ops(), ["getData /app/lock/_c_<U0>-lock-0000000000 w"]);
    t.reply("getData /app/lock/_c_<U0>-lock-0000000000 w", data(REVOKE_MESSAGE));
    assert_eq!(t.events(), [RecipeEvent::RevocationRequested]);
    t.release();
    assert_eq!(
        t.ops(),
        ["checkWatches /app/lock/_c_<U0>-lock-0000000000 type=3", "delete /app/lock/_c_<U0>-lock-0000000000"]
    );
    t.reply("checkWatches /app/lock/_c_<U0>-lock-0000000000 type=3", empty());
    // The deletion fires our own data watch before the delete's reply.
    t.watch(EventType::NODE_DELETED, &full(&own));
    t.no_ops();
    t.release_done("delete /app/lock/_c_<U0>-lock-0000000000", empty());
}

/// A revocable waiter can be asked to revoke as well; other event types on
/// our node are ignored and do not re-arm the watch.
#[test]
fn curator_revocable_waiter() {
    let mut t = T::new(OpPlan::Curator);
    t.m.make_revocable().unwrap();
    t.acquire(None);
    t.ops();
    let own = t.own(0, 1);
    t.reply("create2 /app/lock/_c_<U0>-lock- [ES]", created(&full(&own), 8));
    t.ops();
    t.reply("getData /app/lock/_c_<U0>-lock-0000000001 w", data(b""));
    let f0 = other(1, 0);
    t.reply("getChildren2 /app/lock", children(&[&own, &f0]));
    assert_eq!(t.ops(), ["getData /app/lock/_c_<F1>-lock-0000000000 w"]);
    t.reply("getData /app/lock/_c_<F1>-lock-0000000000 w", data(b""));
    t.watch(EventType::NODE_DATA_CHANGED, &full(&own));
    assert_eq!(t.ops(), ["getData /app/lock/_c_<U0>-lock-0000000001 w"]);
    t.reply("getData /app/lock/_c_<U0>-lock-0000000001 w", data(REVOKE_MESSAGE));
    assert_eq!(t.events(), [RecipeEvent::RevocationRequested]);
    t.watch(EventType::NODE_CREATED, &full(&own));
    t.no_ops();
}
