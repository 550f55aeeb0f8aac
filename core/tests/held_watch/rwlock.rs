//! The read-write lock: each half watched and lost apart.

use crate::*;

// ---- read-write lock -----------------------------------------------------------------

/// The write half's held node and a downgrade's read node are each watched
/// (each half is quiet: its listing's child watch is its held watch), and
/// each deletion is reported as its own half's `Lost`: the write node's,
/// told as a change of the base's children, makes both halves watch their
/// nodes, and the write half's exists finds it gone.
#[test]
fn each_rwlock_half_is_watched_and_lost_apart() {
    let config = LockConfig::new(3);
    let mut h = Harness::new(ReadWriteLock::new(ZkPath::new(BASE).unwrap(), config));
    h.run(|l| l.acquire_write(at(0), None)).unwrap();
    let write = h.answer(at(1), "create2", Answer::Seq(7));
    h.answer(at(1), &listing(BASE, true), kids(&[name(&write)]));
    assert_eq!(h.events(), [member(Part::Write.index(), acquired(&write, 1007))]);
    assert_eq!(h.sent(), [format!("create2 {BASE}/_c_<uuid>-__WRIT__ [ES]"), listing(BASE, true)]);

    // The downgrade: the read node reuses the write node's sequence.
    h.run(|l| l.acquire_read(at(3), None)).unwrap();
    let read = h.answer(at(4), "create2", Answer::Made(2000));
    h.answer(at(4), &listing(BASE, true), kids(&[name(&read), name(&write)]));
    assert_eq!(h.events(), [member(Part::Read.index(), acquired(&read, 2000))]);
    assert_eq!(h.sent(), [format!("create2 {} [E]", mask(&read)), listing(BASE, true)]);
    h.assert_idle();

    // The write node goes: the write half alone is lost.
    h.children_changed(at(6), BASE, &[&read, &write]);
    h.answer_held_watch(at(6), &read);
    assert!(h.events().is_empty());
    h.answer(at(6), &held_watch(&write), Answer::Err(ErrorCode::NO_NODE));
    assert_eq!(h.events(), [member(Part::Write.index(), RecipeEvent::Lost)]);
    assert_eq!((h.recipe.write_hold_count(), h.recipe.read_hold_count()), (0, 1));
    assert!(h.sent().is_empty());
    // Then the read node: the read half is lost.
    h.watch(at(7), EventType::NODE_DELETED, &read);
    assert_eq!(h.events(), [member(Part::Read.index(), RecipeEvent::Lost)]);
    assert_eq!((h.recipe.write_hold_count(), h.recipe.read_hold_count()), (0, 0));
    assert!(h.sent().is_empty());
    h.assert_idle();
    assert!(h.recipe.is_quiescent());
}
