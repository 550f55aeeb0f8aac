//! The multi-lock: a member lost during or after the acquire.

use crate::*;

// ---- multi-lock ----------------------------------------------------------------------

const MULTI: &str = "/traces/multilock";

/// A multi-lock whose first member loses its node (someone deleted it)
/// while the second is being acquired lets go of everything and starts over
/// (all or nothing, as a lock whose node vanished re-creates it): the
/// second member's attempt is abandoned, the first is acquired anew, and
/// the grant is reported once, with both members held.
#[test]
fn a_multilock_member_lost_during_the_acquire_starts_it_over() {
    let (mut h, one, two) = multilock_first_held();
    first_member_lost(&mut h, &one, &two, true);
    first_member_held(&mut h, 2);
    // lock-2 is free now: taken quietly too.
    let two = h.answer(at(4), &format!("create2 {MULTI}/lock-2/"), Answer::Seq(3));
    h.answer(at(4), &listing(&format!("{MULTI}/lock-2"), true), kids(&[name(&two)]));
    let events = h.events();
    assert_eq!(events.iter().filter(|e| matches!(e, RecipeEvent::Acquired { .. })).count(), 1, "{events:?}");
    assert_eq!(h.recipe.hold_count(), 1);
    assert!(h.recipe.holders().iter().all(Option::is_some));
    h.assert_never_sent(&held_watch(&two));
    h.assert_idle();
}

/// A multi-lock whose held member keeps being deleted while the acquire goes
/// on gives up after a few restarts, holding nothing.
#[test]
fn a_multilock_member_lost_again_and_again_fails() {
    let (mut h, mut one, mut two) = multilock_first_held();
    let mut seq = 10;
    for _ in 0..3 {
        first_member_lost(&mut h, &one, &two, true);
        one = first_member_held(&mut h, seq);
        two = second_member_waits(&mut h, seq + 1);
        seq += 2;
    }
    first_member_lost(&mut h, &one, &two, false);
    let events = h.events();
    assert_eq!(events.last(), Some(&RecipeEvent::Failed(RequestError::RetriesExhausted(3))), "{events:?}");
    assert!(!events.iter().any(|e| matches!(e, RecipeEvent::Acquired { .. })), "{events:?}");
    assert_eq!(h.recipe.hold_count(), 0);
    assert!(h.recipe.is_idle());
    h.assert_idle();
}

/// A pipelined two-member multi-lock with its first member held quietly and
/// the second member waiting (see [`first_member_held`] and
/// [`second_member_waits`]). Returns both members' nodes.
fn multilock_first_held() -> (Harness<MultiLock>, String, String) {
    let paths = (1..=2).map(|i| ZkPath::new(&format!("{MULTI}/lock-{i}")).unwrap()).collect();
    let mut h = Harness::new(MultiLock::new(paths, LockConfig::new(1).with_plan(OpPlan::Pipelined)).unwrap());
    h.run(|m| m.acquire(at(0), None)).unwrap();
    let one = first_member_held(&mut h, 0);
    let two = second_member_waits(&mut h, 1);
    (h, one, two)
}

/// The first member takes lock-1 with sequence `seq`, quietly: its listing
/// carries a child watch, its held watch, and nothing is sent for its node.
/// Returns the node.
fn first_member_held(h: &mut Harness<MultiLock>, seq: i32) -> String {
    let one = h.answer(at(1), &format!("create2 {MULTI}/lock-1/"), Answer::Seq(seq));
    h.answer(at(1), &listing(&format!("{MULTI}/lock-1"), true), kids(&[name(&one)]));
    h.assert_never_sent(&held_watch(&one));
    assert_eq!(h.events(), vec![]);
    one
}

/// The second member queues on lock-2 with sequence `seq` behind another
/// client's node: it watches its own node, then that predecessor, both
/// answered. Returns its node.
fn second_member_waits(h: &mut Harness<MultiLock>, seq: i32) -> String {
    let two = h.answer(at(2), &format!("create2 {MULTI}/lock-2/"), Answer::Seq(seq));
    let pred = other(7, "lock-", u32::try_from(seq - 1).unwrap());
    h.answer(at(2), &listing(&format!("{MULTI}/lock-2"), true), kids(&[pred.clone(), name(&two)]));
    h.answer_held_watch(at(2), &two);
    h.answer(at(2), &format!("getData {MULTI}/lock-2/{} w", mask(&pred)), Answer::Data(b""));
    assert_eq!(h.events(), vec![]);
    h.assert_idle();
    two
}

/// The first member's node `one` is deleted by someone else: told as a
/// change of lock-1's children, the member watches its node, finds it gone,
/// and is lost. Nothing is reported; the waiting second member lets its
/// node `two` go (its delete answered), and, when `restarts`, lock-1's
/// create and listing (quiet again) go out to start over.
fn first_member_lost(h: &mut Harness<MultiLock>, one: &str, two: &str, restarts: bool) {
    h.children_changed(at(3), &format!("{MULTI}/lock-1"), &[one]);
    h.answer(at(3), &held_watch(one), Answer::Err(ErrorCode::NO_NODE));
    let mut expected = vec![format!("delete {}", mask(two))];
    if restarts {
        assert_eq!(h.events(), vec![], "nothing is reported: the acquire goes on");
        assert_eq!(h.recipe.holders(), vec![None, None]);
        expected.push(format!("create2 {MULTI}/lock-1/_c_<uuid>-lock- [ES]"));
        expected.push(listing(&format!("{MULTI}/lock-1"), true));
    }
    assert_eq!(h.sent(), expected);
    h.answer(at(3), "delete", Answer::Empty);
}
