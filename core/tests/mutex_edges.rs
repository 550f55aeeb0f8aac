//! Transcript tests for [`Mutex`] (see `mutex_harness` for how ops are
//! rendered and answered): timers and further edges (reentrant counting, re-armed watches, a lost session in a retry pause).

use zoolock_core::recipes::REVOKE_MESSAGE;
use zoolock_core::wire::EventType;
use zoolock_core::{ConnectionState, Recipe, RecipeEvent, RequestError, recipes::OpPlan};

mod mutex_harness;
mod transcript;

use mutex_harness::*;
use transcript::at;

// ---- timers -----------------------------------------------------------------------------

/// `poll_timeout` never returns an instant at or before `now` once
/// `handle_timeout(now)` ran, whatever the state: a waiter past its deadline,
/// a retry pause, an early or late timer, and a spurious call. (Every
/// `T::timeout`, reply and event in this file checks the same.)
#[test]
fn poll_timeout_is_never_in_the_past_after_handle_timeout() {
    for plan in [OpPlan::Curator, OpPlan::Pipelined] {
        let mut t = T::new(plan);
        t.timeout(1);
        assert_eq!(t.m.poll_timeout(), None);
        t.acquire(Some(500));
        t.timeout(2);
        let ops = t.ops();
        let own = t.own(0, 1);
        t.reply("create2 /app/lock/_c_<U0>-lock- [ES]", created(&full(&own), 10));
        let list = if ops.len() == 1 {
            t.ops();
            LIST
        } else {
            t.quiet_listing()
        };
        // Own node missing → retry pause.
        t.reply(list, children(&[&other(1, 0)]));
        t.ops();
        let until = t.m.poll_timeout().unwrap();
        t.timeout(until.as_nanos() / 1_000_000 + 250); // served late
        let ops = t.ops();
        assert_eq!(ops[0], "create2 /app/lock/_c_<U1>-lock- [ES]");
        let own = t.own(1, 3);
        t.reply("delete /app/lock/_c_<U0>-lock-0000000001", empty());
        t.reply("create2 /app/lock/_c_<U1>-lock- [ES]", created(&full(&own), 30));
        if ops.len() == 1 {
            t.ops();
        }
        t.reply(list, children(&[&own, &other(1, 2)]));
        let watches = t.waiting_ops(&own, &[&other(1, 2)]);
        assert_eq!(t.ops(), watches);
        if plan == OpPlan::Pipelined {
            t.reply(&watches[0], exists(30));
        }
        t.reply("getData /app/lock/_c_<F1>-lock-0000000002 w", data(b""));
        assert_eq!(t.m.poll_timeout(), Some(at(500)));
        t.timeout(499);
        t.timeout(10_000); // served very late
        assert_eq!(t.ops(), ["getChildren2 /app/lock"]);
        t.timeout(10_001);
        t.timeout(10_001);
        assert_eq!(t.m.poll_timeout(), None);
    }
}

// ---- more edges --------------------------------------------------------------------------

/// Hold counting does not depend on when events are polled: a nested acquire
/// (or a release) issued before `Acquired` was drained counts the first hold.
#[test]
fn reentrant_counting_before_the_acquired_event_is_polled() {
    let mut t = T::creating(OpPlan::Pipelined);
    let own = t.own(0, 0);
    t.reply("create2 /app/lock/_c_<U0>-lock- [ES]", created(&full(&own), 5));
    t.reply(LIST_W, children(&[&own]));
    assert_eq!(t.m.hold_count(), 1, "held before the event is polled");
    // No watch sent: the listing's child watch is the held node's.
    t.no_ops();
    t.acquire(None);
    assert_eq!(t.m.hold_count(), 2);
    assert_eq!(t.events(), [acquired(&full(&own), 5), acquired(&full(&own), 5)]);
    assert_eq!(t.m.hold_count(), 2);
    t.release();
    t.no_ops();
    t.release();
    assert_eq!(t.ops(), ["delete /app/lock/_c_<U0>-lock-0000000000"]);
    // Released is queued; a new acquire completes before anything is polled,
    // and a nested acquire on it counts from the new hold.
    t.acquire(None);
    assert_eq!(t.ops(), ["create2 /app/lock/_c_<U1>-lock- [ES]", LIST_W]);
    let own2 = t.own(1, 1);
    t.reply("delete /app/lock/_c_<U0>-lock-0000000000", empty());
    t.reply("create2 /app/lock/_c_<U1>-lock- [ES]", created(&full(&own2), 6));
    t.reply(LIST_W, children(&[&own2]));
    t.acquire(None);
    assert_eq!(
        t.events(),
        [RecipeEvent::Released, acquired(&full(&own2), 6), acquired(&full(&own2), 6)],
        "events in the order things happened"
    );
    assert_eq!(t.m.hold_count(), 2);
    t.release();
    t.release();
    assert_eq!(t.ops(), ["delete /app/lock/_c_<U1>-lock-0000000001"]);
}

/// The revocation watch must survive a ConnectionLoss on its getData: the
/// read is sent again (Curator's foreground getData retries it).
#[test]
fn revocation_watch_is_rearmed_after_connection_loss() {
    let mut t = T::new(OpPlan::Curator);
    t.m.make_revocable().unwrap();
    t.acquire(None);
    t.ops();
    let own = t.own(0, 0);
    t.reply("create2 /app/lock/_c_<U0>-lock- [ES]", created(&full(&own), 8));
    assert_eq!(t.ops(), ["getData /app/lock/_c_<U0>-lock-0000000000 w", "getChildren2 /app/lock"]);
    t.disconnect();
    assert_eq!(t.ops(), ["getData /app/lock/_c_<U0>-lock-0000000000 w", "getChildren2 /app/lock"]);
    t.session(ConnectionState::Reconnected);
    t.no_ops();
    t.reply("getData /app/lock/_c_<U0>-lock-0000000000 w", data(b""));
    t.reply("getChildren2 /app/lock", children(&[&own]));
    assert_eq!(t.events(), [acquired(&full(&own), 8)]);
    // Armed: a revocation reaches the holder.
    t.watch(EventType::NODE_DATA_CHANGED, &full(&own));
    t.ops();
    t.reply("getData /app/lock/_c_<U0>-lock-0000000000 w", data(REVOKE_MESSAGE));
    assert_eq!(t.events(), [RecipeEvent::RevocationRequested]);
}

/// Lost during the retry pause: Failed, no create later; the vanished node is
/// still deleted by the next session.
#[test]
fn session_lost_during_retry_pause() {
    let mut t = T::new(OpPlan::Curator);
    t.acquire(None);
    t.curator_create(0, 1, 10);
    t.reply("getChildren2 /app/lock", children(&[&other(1, 0)]));
    assert_eq!(t.ops(), ["delete /app/lock/_c_<U0>-lock-0000000001"]);
    t.end_failing_acquire(RequestError::SessionExpired, ConnectionState::Lost);
    assert_eq!(t.m.poll_timeout(), None);
    t.timeout(10_000);
    t.no_ops();
    t.session(ConnectionState::Connected);
    t.cleanup_done("delete /app/lock/_c_<U0>-lock-0000000001", no_node());
}
