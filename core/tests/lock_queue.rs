//! Transcript tests of the shared-handle queues (`LockQueue`,
//! `LeaseQueue`): FIFO among tickets, explicit reentrancy, cancellation
//! wherever a ticket is, a grant to a cancelled ticket given back, the parts
//! of a read-write lock excluding each other with an explicit downgrade, and
//! acquires re-queued on a renewed session.

mod transcript;

use zoolock_core::recipes::{LeaseQueue, LeaseQueueEvent, LockEvent, QueueEvent, SemaphoreEvent};
use zoolock_core::{
    ApiMisuse, ConnectionState, RecipeEvent, RequestError, ZkPath,
    recipes::{LockConfig, LockQueue, Mutex, OpPlan, Part, ReadWriteLock, Semaphore, SemaphoreMutex, Ticket},
};

use transcript::{Answer, Harness, acquired, at, held_watch, kids, listing, mask, name};

const BASE: &str = "/app/lock";

fn shared_mutex(renew: bool) -> Harness<LockQueue> {
    let m = Mutex::new(ZkPath::new(BASE).unwrap(), LockConfig::new(3).with_plan(OpPlan::Pipelined));
    Harness::new(LockQueue::new(Box::new(m), renew))
}

/// A lock queue's event of `ticket`, from the plain event of the same name.
fn ticket(ticket: Ticket, event: RecipeEvent) -> RecipeEvent {
    let event = match event {
        RecipeEvent::Acquired { node, token } => LockEvent::Acquired { node, token },
        RecipeEvent::Queued { position, total } => LockEvent::Queued { position, total },
        RecipeEvent::Released => LockEvent::Released,
        RecipeEvent::TimedOut => LockEvent::TimedOut,
        RecipeEvent::Lost => LockEvent::Lost,
        RecipeEvent::Failed(e) => LockEvent::Failed(e),
        other => panic!("not a lock ticket's event: {other:?}"),
    };
    RecipeEvent::Lock(Box::new(QueueEvent::Ticket { ticket, event }))
}

/// A lease queue's event of `ticket`, from the plain event of the same name.
fn lease_ticket(ticket: Ticket, event: RecipeEvent) -> RecipeEvent {
    let event = match event {
        RecipeEvent::Acquired { node, token } => SemaphoreEvent::Acquired { node, token },
        RecipeEvent::Failed(e) => SemaphoreEvent::Failed(e),
        other => panic!("not a lease ticket's event: {other:?}"),
    };
    RecipeEvent::Leases(Box::new(LeaseQueueEvent::Ticket { ticket, event }))
}

/// Grants ticket `t` its node (sequence `seq`), uncontended. The mutex is
/// quiet (its last acquire, if any, was granted by its first listing): its
/// listing carries a child watch, the held node's watch, so the grant sends
/// nothing for the node (ARCHITECTURE §6.1).
fn grant(h: &mut Harness<LockQueue>, seq: i32) -> String {
    let node = h.answer(at(1), &format!("create2 {BASE}/"), Answer::Seq(seq));
    h.answer(at(1), &listing(BASE, true), kids(&[name(&node)]));
    h.assert_never_sent(&held_watch(&node));
    node
}

#[test]
fn tickets_queue_fifo_and_start_after_the_previous_release() {
    let mut h = shared_mutex(false);
    let t1 = h.run(|q| q.acquire(at(0), Part::Whole, None));
    let t2 = h.run(|q| q.acquire(at(0), Part::Whole, None));
    let _t3 = h.run(|q| q.acquire(at(0), Part::Whole, None));
    assert_eq!(h.sent().len(), 2, "only the first ticket works on the lock: create2 + getChildren2");
    let first = grant(&mut h, 0);
    assert_eq!(h.events(), vec![ticket(t1, acquired(&first, 1000))]);
    assert_eq!(h.recipe.waiting(Part::Whole), 2);
    // A second ticket is not a hold.
    assert_eq!(h.run(|q| q.release(at(2), t2)), Err(ApiMisuse::NotHeld));
    // Pipelined release: the delete is queued, `Released` at once, then the
    // next ticket's create rides along.
    assert_eq!(h.run(|q| q.release(at(3), t1)), Ok(false));
    assert_eq!(h.events(), vec![ticket(t1, RecipeEvent::Released)]);
    h.answer(at(4), &format!("delete {}", mask(&first)), Answer::Empty);
    let second = grant(&mut h, 1);
    assert_eq!(h.events(), vec![ticket(t2, acquired(&second, 1001))]);
    assert_eq!(h.recipe.holder(Part::Whole).map(|(t, _, _)| t), Some(t2));
}

#[test]
fn reentry_is_explicit_and_counted() {
    let mut h = shared_mutex(false);
    let t1 = h.run(|q| q.acquire(at(0), Part::Whole, None));
    let node = grant(&mut h, 0);
    h.events();
    h.sent();
    h.run(|q| q.reenter(at(1), t1)).unwrap();
    h.run(|q| q.reenter(at(1), t1)).unwrap();
    assert_eq!(h.run(|q| q.inner().hold_count(Part::Whole)), 3, "the recipe keeps the one count");
    assert!(h.events().is_empty(), "a re-entry's report stays in the queue");
    assert_eq!(h.run(|q| q.hold_status(t1)), zoolock_core::HoldStatus::Held);
    let t9 = h.run(|q| q.acquire(at(1), Part::Whole, None));
    h.run(|q| q.cancel(at(1), t9));
    assert_eq!(h.run(|q| q.reenter(at(1), t9)), Err(ApiMisuse::NotHeld));
    assert_eq!(h.run(|q| q.release(at(1), t1)), Ok(true));
    assert_eq!(h.run(|q| q.release(at(1), t1)), Ok(true));
    assert!(h.sent().is_empty(), "no delete while a re-entry is held");
    assert_eq!(h.run(|q| q.release(at(2), t1)), Ok(false));
    assert_eq!(h.sent(), vec![format!("delete {}", mask(&node))]);
}

#[test]
fn the_semaphore_mutex_is_not_reentrant() {
    let sm = SemaphoreMutex::new(ZkPath::new(BASE).unwrap(), LockConfig::new(1));
    let mut h = Harness::new(LockQueue::new(Box::new(sm), false));
    let t1 = h.run(|q| q.acquire(at(0), Part::Whole, None));
    let lock = h.answer(at(1), &format!("create2 {BASE}/locks/"), Answer::Seq(0));
    h.answer(at(1), &format!("getChildren2 {BASE}/locks"), kids(&[name(&lock)]));
    let lease = h.answer(at(1), &format!("create2 {BASE}/leases/"), Answer::Seq(0));
    h.answer(at(1), &format!("getChildren2 {BASE}/leases"), kids(&[name(&lease)]));
    assert!(h.events().contains(&ticket(t1, acquired(&lease, 1000))));
    assert_eq!(h.run(|q| q.reenter(at(1), t1)), Err(ApiMisuse::NotReentrant));
}

#[test]
fn cancel_removes_a_ticket_wherever_it_is_and_gives_a_grant_back() {
    let mut h = shared_mutex(false);
    let t1 = h.run(|q| q.acquire(at(0), Part::Whole, None));
    let t2 = h.run(|q| q.acquire(at(0), Part::Whole, None));
    // Queued: gone without a trace.
    h.run(|q| q.cancel(at(1), t2));
    assert_eq!(h.recipe.waiting(Part::Whole), 0);
    // Granted but not handed out: released.
    let node = grant(&mut h, 0);
    h.events();
    h.sent();
    h.run(|q| q.cancel(at(2), t1));
    assert_eq!(h.sent(), vec![format!("delete {}", mask(&node))]);
    assert!(h.recipe.holder(Part::Whole).is_none());
    // Tickets that are done are ignored.
    h.run(|q| q.cancel(at(3), t2));
}

#[test]
fn a_queued_ticket_times_out_at_its_deadline_without_touching_the_server() {
    let mut h = shared_mutex(false);
    let _t1 = h.run(|q| q.acquire(at(0), Part::Whole, None));
    let t2 = h.run(|q| q.acquire(at(0), Part::Whole, Some(at(50))));
    h.sent();
    use zoolock_core::Recipe;
    assert_eq!(h.recipe.poll_timeout(), Some(at(50)));
    h.timeout(at(50));
    assert_eq!(h.events(), vec![ticket(t2, RecipeEvent::TimedOut)]);
    assert!(h.sent().is_empty());
    assert_eq!(h.recipe.poll_timeout(), None);
}

#[test]
fn read_and_write_parts_exclude_each_other_in_process_except_a_downgrade() {
    let rw = ReadWriteLock::new(ZkPath::new(BASE).unwrap(), LockConfig::new(5));
    let mut h = Harness::new(LockQueue::new(Box::new(rw), false));
    let t1 = h.run(|q| q.acquire(at(0), Part::Write, None));
    let write = h.answer(at(1), &format!("create2 {BASE}/"), Answer::Seq(0));
    h.answer(at(1), &listing(BASE, true), kids(&[name(&write)]));
    assert_eq!(h.events(), vec![ticket(t1, acquired(&write, 1000))]);
    h.assert_never_sent(&held_watch(&write));
    h.sent();
    // Another task's read waits in the process: nothing is sent.
    let t2 = h.run(|q| q.acquire(at(2), Part::Read, None));
    assert!(h.sent().is_empty(), "a read beside the process's own write hold");
    // The writer downgrades: granted at once, ahead of the queued read.
    let t3 = h.run(|q| q.downgrade(at(3), t1)).unwrap();
    let sent = h.sent();
    assert!(sent[0].contains("__READ__0000000000"), "the write node's sequence: {sent:?}");
    let read = h.answer(at(4), &format!("create2 {BASE}/"), Answer::Made(1001));
    if h.pending.front().is_some_and(|op| transcript::describe(op).starts_with("getChildren2")) {
        h.answer(at(4), &format!("getChildren2 {BASE}"), kids(&[name(&write), name(&read)]));
    }
    assert_eq!(h.events(), vec![ticket(t3, acquired(&read, 1001))]);
    assert_eq!(h.run(|q| q.downgrade(at(4), t2)), Err(ApiMisuse::NotHeld));
}

#[test]
fn renewal_parks_the_acquire_and_loses_the_hold_for_good() {
    let mut h = shared_mutex(true);
    let t1 = h.run(|q| q.acquire(at(0), Part::Whole, None));
    grant(&mut h, 0);
    h.events();
    let t2 = h.run(|q| q.acquire(at(1), Part::Whole, None));
    h.sent();
    // The session expires: the hold is lost, and the next acquire waits for
    // the new session instead of failing.
    h.session(at(3), ConnectionState::Lost);
    let events = h.events();
    assert!(events.contains(&ticket(t1, RecipeEvent::Lost)), "{events:?}");
    assert!(
        !events.iter().any(
            |e| matches!(e, RecipeEvent::Lock(q) if matches!(**q, QueueEvent::Ticket { ticket, .. } if ticket == t2))
        ),
        "{events:?}"
    );
    assert!(!h.sent().iter().any(|op| op.starts_with("create2")), "nothing starts on an expired session");
    assert_eq!(h.run(|q| q.release(at(3), t1)), Ok(true), "releasing a lost hold is no error");
    h.session(at(4), ConnectionState::Connected);
    let sent = h.sent();
    assert!(sent.iter().any(|op| op.starts_with(&format!("create2 {BASE}/"))), "a new node: {sent:?}");
}

#[test]
fn without_renewal_queued_acquires_fail_with_the_session() {
    let mut h = shared_mutex(false);
    let t1 = h.run(|q| q.acquire(at(0), Part::Whole, None));
    let t2 = h.run(|q| q.acquire(at(0), Part::Whole, None));
    h.session(at(1), ConnectionState::Lost);
    let events = h.events();
    assert!(events.contains(&ticket(t1, RecipeEvent::Failed(RequestError::SessionExpired))), "{events:?}");
    assert!(events.contains(&ticket(t2, RecipeEvent::Failed(RequestError::SessionExpired))), "{events:?}");
    // A later acquire fails at once, typed.
    let t3 = h.run(|q| q.acquire(at(2), Part::Whole, None));
    assert_eq!(h.events(), vec![ticket(t3, RecipeEvent::Failed(RequestError::SessionExpired))]);
}

#[test]
fn a_server_given_up_on_fails_queued_acquires_even_with_renewal() {
    use zoolock_core::{Misbehavior, SessionError};
    let cause = SessionError::ServerMisbehaved(Misbehavior::UnexpectedXid { expected: Some(3), got: 1003 });
    let gave_up = RequestError::ServerMisbehaved(cause);
    for renew in [true, false] {
        let mut h = shared_mutex(renew);
        let t1 = h.run(|q| q.acquire(at(0), Part::Whole, None));
        let t2 = h.run(|q| q.acquire(at(0), Part::Whole, None));
        h.session(at(1), ConnectionState::ServerMisbehaved(cause));
        let events = h.events();
        assert!(events.contains(&ticket(t1, RecipeEvent::Failed(gave_up.clone()))), "renew {renew}: {events:?}");
        assert!(events.contains(&ticket(t2, RecipeEvent::Failed(gave_up.clone()))), "renew {renew}: {events:?}");
        let t3 = h.run(|q| q.acquire(at(2), Part::Whole, None));
        assert_eq!(h.events(), vec![ticket(t3, RecipeEvent::Failed(gave_up.clone()))], "renew {renew}");
    }
    let sem = Semaphore::new(ZkPath::new(BASE).unwrap(), 2, LockConfig::new(9));
    let mut h = Harness::new(LeaseQueue::new(sem, true));
    let t1 = h.run(|q| q.acquire(at(0), 1, None)).unwrap();
    h.session(at(1), ConnectionState::ServerMisbehaved(cause));
    let events = h.events();
    assert!(events.contains(&lease_ticket(t1, RecipeEvent::Failed(gave_up.clone()))), "{events:?}");
}

#[test]
fn semaphore_tickets_each_get_their_own_leases() {
    let sem = Semaphore::new(ZkPath::new(BASE).unwrap(), 2, LockConfig::new(9));
    let mut h = Harness::new(LeaseQueue::new(sem, false));
    let t1 = h.run(|q| q.acquire(at(0), 1, None)).unwrap();
    let t2 = h.run(|q| q.acquire(at(0), 1, None)).unwrap();
    assert_eq!(h.recipe.waiting(), 1);
    assert_eq!(h.run(|q| q.acquire(at(0), 0, None)), Err(ApiMisuse::ZeroQuantity));
    for (t, seq) in [(t1, 0), (t2, 1)] {
        let lock = h.answer(at(1), &format!("create2 {BASE}/locks/"), Answer::Seq(seq));
        h.answer(at(1), &format!("getChildren2 {BASE}/locks"), kids(&[name(&lock)]));
        let lease = h.answer(at(1), &format!("create2 {BASE}/leases/"), Answer::Seq(seq));
        let leases: Vec<String> = (0..=seq).map(|s| format!("_c_x-lease-{s:010}")).collect();
        let mut listing = leases;
        listing.pop();
        listing.push(name(&lease));
        h.answer(at(1), &transcript::listing(&format!("{BASE}/leases"), true), kids(&listing));
        let events = h.events();
        assert!(events.contains(&lease_ticket(t, acquired(&lease, 1000 + i64::from(seq)))), "{events:?}");
        // The held lease is watched by that listing's child watch (no
        // checkWatches, no exists; the internal mutex node is not watched),
        // and that node is let go.
        h.answer(at(2), &format!("delete {}", mask(&lock)), Answer::Empty);
        h.assert_never_sent(&held_watch(&lease));
        assert!(!h.log.iter().any(|op| op.starts_with("checkWatches")), "{:?}", h.log);
    }
}

/// The ticket on ZooKeeper gets the position of each listing, tagged with
/// its ticket; a ticket still queued in the process behind it gets none
/// until its turn comes.
#[test]
fn the_acquire_under_way_reports_its_queue_position() {
    let mut h = shared_mutex(false);
    let t1 = h.run(|q| q.acquire(at(0), Part::Whole, None));
    let _t2 = h.run(|q| q.acquire(at(0), Part::Whole, None));
    let node = h.answer(at(1), &format!("create2 {BASE}/"), Answer::Seq(5));
    let ahead = ["_c_a-lock-0000000001", "_c_b-lock-0000000002"];
    h.answer(at(1), &format!("getChildren2 {BASE}"), kids(&[ahead[1], &name(&node), ahead[0]]));
    assert!(h.events().is_empty());
    let position = RecipeEvent::Queued { position: 2, total: 3 };
    assert_eq!(h.queued, vec![ticket(t1, position)], "ticket 2 is not on ZooKeeper yet");
    // The predecessor, then the fast handoff's look-ahead node.
    let watches = [format!("getData {BASE}/{} w", ahead[1]), format!("getData {BASE}/{} w", ahead[0])];
    assert!(h.sent().ends_with(&watches), "{:?}", h.sent());
}

fn shared_semaphore() -> Harness<LeaseQueue> {
    let sem = Semaphore::new(ZkPath::new(BASE).unwrap(), 4, LockConfig::new(9).with_plan(OpPlan::Pipelined));
    Harness::new(LeaseQueue::new(sem, false))
}

/// Acquires `qty` leases of the 4-lease semaphore, uncontended (sequences
/// from `seq`), and checks the ticket got them all; returns the ticket and
/// the lease nodes. Each lease is taken under the internal mutex, as
/// Curator takes them, and that node is let go each time.
fn grant_leases(h: &mut Harness<LeaseQueue>, qty: usize, seq: i32) -> (Ticket, Vec<String>) {
    let t = h.run(|q| q.acquire(at(0), qty, None)).unwrap();
    let mut leases = Vec::new();
    for i in 0..qty {
        let seq = seq + i32::try_from(i).unwrap();
        let lock = h.answer(at(1), &format!("create2 {BASE}/locks/"), Answer::Seq(seq));
        h.answer(at(1), &format!("getChildren2 {BASE}/locks"), kids(&[name(&lock)]));
        leases.push(h.answer(at(1), &format!("create2 {BASE}/leases/"), Answer::Seq(seq)));
        let names: Vec<String> = leases.iter().map(|l| name(l)).collect();
        h.answer(at(1), &listing(&format!("{BASE}/leases"), true), kids(&names));
        h.answer(at(2), &format!("delete {}", mask(&lock)), Answer::Empty);
    }
    let events = h.events();
    for lease in &leases {
        let token = 1000 + i64::from(seq) + i64::try_from(leases.iter().position(|l| l == lease).unwrap()).unwrap();
        assert!(events.contains(&lease_ticket(t, acquired(lease, token))), "{events:?}");
    }
    h.sent();
    (t, leases)
}

/// A grant that never reached its caller (its acquire was dropped as the
/// grant came): the cancel that follows returns every lease of the ticket
/// by itself, reports nothing for it, and nothing is left on the server or
/// in the queue.
#[test]
fn cancel_racing_a_complete_semaphore_grant_returns_its_leases() {
    let mut h = shared_semaphore();
    let (t, leases) = grant_leases(&mut h, 2, 0);
    h.run(|q| q.cancel(at(3), t));
    let deletes: Vec<String> = leases.iter().map(|l| format!("delete {}", mask(l))).collect();
    assert_eq!(h.sent(), deletes, "both leases are returned");
    let events = h.events();
    assert!(
        !events.iter().any(|e| matches!(e, RecipeEvent::Leases(l) if matches!(**l, LeaseQueueEvent::Ticket { .. }))),
        "nothing is reported for it: {events:?}"
    );
    for lease in &leases {
        h.answer(at(4), &format!("delete {}", mask(lease)), Answer::Empty);
    }
    h.assert_idle();
    assert!(h.recipe.is_quiescent(), "nothing held, queued or owed");
    // Its leases are no longer anyone's: returning one is refused, a second
    // cancel does nothing.
    assert_eq!(h.run(|q| q.return_lease(at(5), &leases[0])), Err(ApiMisuse::NotHeld));
    h.run(|q| q.cancel(at(5), t));
    assert!(h.sent().is_empty());
}

/// Leases handed out are the caller's: one it returned, or one lost, is not
/// returned again by a cancel of its ticket; the rest are.
#[test]
fn cancel_returns_only_the_leases_the_ticket_still_holds() {
    let mut h = shared_semaphore();
    let (t, leases) = grant_leases(&mut h, 3, 0);
    h.run(|q| q.return_lease(at(3), &leases[0])).unwrap();
    assert_eq!(h.sent(), vec![format!("delete {}", mask(&leases[0]))]);
    h.answer(at(3), &format!("delete {}", mask(&leases[0])), Answer::Empty);
    // The second lease's node is deleted by someone else: lost.
    h.watch(at(4), zoolock_core::wire::EventType::NODE_DELETED, &leases[1]);
    let events = h.events();
    assert!(
        events.contains(&RecipeEvent::Leases(Box::new(LeaseQueueEvent::Semaphore(SemaphoreEvent::LeaseLost {
            node: leases[1].clone().into()
        })))),
        "{events:?}"
    );
    h.sent();
    h.run(|q| q.cancel(at(5), t));
    assert_eq!(h.sent(), vec![format!("delete {}", mask(&leases[2]))], "only the lease still held");
    h.answer(at(6), &format!("delete {}", mask(&leases[2])), Answer::Empty);
    h.assert_idle();
    assert!(h.recipe.is_quiescent());
}

/// The queue reports its semaphore's capacity when it changes: the limit,
/// and what the last listing left free.
#[test]
fn the_lease_queue_reports_its_capacity_when_it_changes() {
    let mut h = shared_semaphore();
    assert!(h.events().is_empty(), "nothing listed yet: nothing to report");
    let (_, _) = grant_leases(&mut h, 1, 0);
    // `grant_leases` took the events; list again through a second acquire.
    let t = h.run(|q| q.acquire(at(5), 1, None)).unwrap();
    let lock = h.answer(at(6), &format!("create2 {BASE}/locks/"), Answer::Seq(1));
    h.answer(at(6), &format!("getChildren2 {BASE}/locks"), kids(&[name(&lock)]));
    let lease = h.answer(at(6), &format!("create2 {BASE}/leases/"), Answer::Seq(1));
    h.answer(at(6), &listing(&format!("{BASE}/leases"), true), kids(&["_c_x-lease-0000000000", &name(&lease)]));
    let events = h.events();
    assert!(
        events.contains(&RecipeEvent::Leases(Box::new(LeaseQueueEvent::Capacity { limit: 4, available: Some(2) }))),
        "{events:?}"
    );
    assert!(events.contains(&lease_ticket(t, acquired(&lease, 1001))), "{events:?}");
}

/// A lock grant racing its cancel: the node is deleted, nothing is
/// reported to the cancelled ticket, the next ticket gets the lock, and
/// nothing is left once the deletes are answered.
#[test]
fn cancel_racing_a_lock_grant_deletes_the_node_and_moves_on() {
    let mut h = shared_mutex(false);
    let t1 = h.run(|q| q.acquire(at(0), Part::Whole, None));
    let t2 = h.run(|q| q.acquire(at(0), Part::Whole, None));
    let first = grant(&mut h, 0);
    assert_eq!(h.events(), vec![ticket(t1, acquired(&first, 1000))]);
    h.sent();
    h.run(|q| q.cancel(at(2), t1));
    // The delete, and (pipelined) the next ticket's acquire riding along.
    let sent = h.sent();
    assert_eq!(sent.first(), Some(&format!("delete {}", mask(&first))), "{sent:?}");
    let events = h.events();
    assert!(
        events.iter().all(
            |e| !matches!(e, RecipeEvent::Lock(q) if matches!(**q, QueueEvent::Ticket { ticket, .. } if ticket == t1))
        ),
        "{events:?}"
    );
    h.answer(at(3), &format!("delete {}", mask(&first)), Answer::Empty);
    let second = grant(&mut h, 1);
    assert_eq!(h.events(), vec![ticket(t2, acquired(&second, 1001))]);
    assert_eq!(h.run(|q| q.release(at(4), t2)), Ok(false));
    h.answer(at(5), &format!("delete {}", mask(&second)), Answer::Empty);
    h.assert_idle();
    assert!(h.recipe.is_quiescent(), "nothing held, queued or owed");
}

/// The capacity a grant's listing left is reported before the grant, so
/// whoever is handed the leases reads it.
#[test]
fn the_capacity_comes_before_the_grant_it_was_listed_for() {
    let mut h = shared_semaphore();
    let t = h.run(|q| q.acquire(at(0), 1, None)).unwrap();
    let lock = h.answer(at(1), &format!("create2 {BASE}/locks/"), Answer::Seq(0));
    h.answer(at(1), &format!("getChildren2 {BASE}/locks"), kids(&[name(&lock)]));
    let lease = h.answer(at(1), &format!("create2 {BASE}/leases/"), Answer::Seq(0));
    h.answer(at(1), &listing(&format!("{BASE}/leases"), true), kids(&[name(&lease)]));
    let events = h.events();
    let capacity = events
        .iter()
        .position(|e| *e == RecipeEvent::Leases(Box::new(LeaseQueueEvent::Capacity { limit: 4, available: Some(3) })));
    let granted = events.iter().position(|e| *e == lease_ticket(t, acquired(&lease, 1000)));
    assert!(capacity.is_some() && capacity < granted, "{events:?}");
}
