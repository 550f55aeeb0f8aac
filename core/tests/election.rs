//! Elections (Curator's `LeaderSelector` and `LeaderLatch` layouts), the
//! observer, and lock names as a value, as transcripts.

mod transcript;

use zoolock_core::recipes::policy::SortKey;
use zoolock_core::recipes::{ElectionKind, LockEvent, SortRule, election_leader, election_participants};
use zoolock_core::wire::{ErrorCode, EventType, Request};
use zoolock_core::{
    ApiMisuse, ConnectionState, Participant, RecipeEvent, ZkPath,
    recipes::{Election, LeadershipPolicy, LockConfig, LockName, Mutex, Observer},
};

use transcript::{Answer, Harness, acquired, at, held_watch, kids, listing, mask, name};

const BASE: &str = "/app/leader";

/// A participant's `event`, as the client hands it on: typed, the
/// election's own.
fn election_event(event: LockEvent) -> RecipeEvent {
    RecipeEvent::Election(event)
}

/// A participant's term beginning through `node`.
fn elected(node: &str, czxid: i64) -> RecipeEvent {
    election_event(LockEvent::Acquired { node: node.to_string().into(), token: zoolock_core::FencingToken(czxid) })
}

fn election(kind: ElectionKind, id: &str) -> Harness<Election> {
    Harness::new(Election::new(ZkPath::new(BASE).unwrap(), LockConfig::new(1), kind, id))
}

/// The data of the last create sent.
fn created_data(h: &Harness<Election>) -> Vec<u8> {
    let op = h.sent_ops.iter().rev().find_map(|op| match op.op.request() {
        Request::Create2(r) => Some(r.data.clone().unwrap_or_default()),
        _ => None,
    });
    op.expect("a create was sent").to_vec()
}

/// Starts and is granted leadership by a listing with `ahead` (none).
fn lead(h: &mut Harness<Election>, node_name: &str, seq: i32) -> String {
    h.run(|e| e.start(at(0))).unwrap();
    assert_eq!(h.sent(), [format!("create2 {BASE}/_c_<uuid>-{node_name} [ES]"), listing(BASE, true)]);
    let node = h.answer(at(1), "create2", Answer::Seq(seq));
    h.answer(at(1), &listing(BASE, true), kids(&[name(&node)]));
    assert_eq!(h.events(), [elected(&node, 1000 + i64::from(seq))]);
    assert!(h.recipe.is_leader());
    node
}

#[test]
fn a_latch_participant_queues_under_latch_with_its_id_as_data() {
    let mut h = election(ElectionKind::Latch, "node-a");
    assert!(h.sent().is_empty(), "nothing before start");
    lead(&mut h, "latch-", 3);
    assert_eq!(created_data(&h), b"node-a");
    assert_eq!(h.run(|e| e.start(at(2))), Err(ApiMisuse::AcquireInProgress));
}

#[test]
fn a_selector_writes_its_id_or_the_default_data_when_it_has_none() {
    let mut h = election(ElectionKind::Selector, "node-b");
    lead(&mut h, "lock-", 1);
    assert_eq!(created_data(&h), b"node-b");
    let config = LockConfig::new(1).with_data(bytes::Bytes::from_static(b"10.0.0.7"));
    let mut h = Harness::new(Election::new(ZkPath::new(BASE).unwrap(), config, ElectionKind::Selector, ""));
    lead(&mut h, "lock-", 1);
    assert_eq!(created_data(&h), b"10.0.0.7");
    // A latch writes its id even when empty, as Curator's does.
    let config = LockConfig::new(1).with_data(bytes::Bytes::from_static(b"10.0.0.7"));
    let mut h = Harness::new(Election::new(ZkPath::new(BASE).unwrap(), config, ElectionKind::Latch, ""));
    lead(&mut h, "latch-", 1);
    assert_eq!(created_data(&h), b"");
}

#[test]
fn a_selector_with_auto_requeue_queues_again_after_its_term() {
    let e = Election::new(ZkPath::new(BASE).unwrap(), LockConfig::new(1), ElectionKind::Selector, "a");
    let mut h = Harness::new(e.auto_requeue(true));
    let node = lead(&mut h, "lock-", 1);
    h.run(|e| e.resign(at(5))).unwrap();
    assert_eq!(h.events(), [election_event(LockEvent::Released)]);
    let sent = h.sent();
    assert_eq!(sent[0], format!("delete {}", mask(&node)));
    assert_eq!(sent[1], format!("create2 {BASE}/_c_<uuid>-lock- [ES]"), "queued again at once");
    assert!(h.recipe.is_queued() && !h.recipe.is_leader());
    // Closing abandons the new wait: nothing more is queued.
    h.run(|e| e.close(at(6)));
    assert!(!h.recipe.is_queued());
    assert_eq!(h.run(|e| e.start(at(7))), Err(ApiMisuse::ElectionClosed));
}

#[test]
fn a_selector_without_auto_requeue_stops_after_its_term() {
    let mut h = election(ElectionKind::Selector, "a");
    let node = lead(&mut h, "lock-", 1);
    assert_eq!(h.run(|e| e.start(at(2))), Err(ApiMisuse::AcquireInProgress));
    h.run(|e| e.resign(at(5))).unwrap();
    assert_eq!(h.events(), [election_event(LockEvent::Released)]);
    assert_eq!(h.sent(), [format!("delete {}", mask(&node))]);
    assert_eq!(h.run(|e| e.resign(at(6))), Err(ApiMisuse::NotHeld));
    h.answer(at(6), "delete", Answer::Empty);
    assert!(h.recipe.is_quiescent());
    // It may be started again (Curator's requeue).
    h.run(|e| e.start(at(7))).unwrap();
    assert_eq!(h.sent()[0], format!("create2 {BASE}/_c_<uuid>-lock- [ES]"));
}

#[test]
fn a_latch_whose_node_is_deleted_loses_leadership_and_queues_again() {
    let mut h = election(ElectionKind::Latch, "a");
    let node = lead(&mut h, "latch-", 1);
    h.watch(at(5), EventType::NODE_DELETED, &node);
    assert_eq!(h.events(), [election_event(LockEvent::Lost)]);
    assert_eq!(h.sent()[0], format!("create2 {BASE}/_c_<uuid>-latch- [ES]"));
    assert!(h.recipe.is_queued());
}

#[test]
fn after_a_session_expiry_a_latch_queues_again_once_the_new_session_connects() {
    let mut h = election(ElectionKind::Latch, "a");
    lead(&mut h, "latch-", 1);
    h.session(at(5), ConnectionState::Suspended);
    assert_eq!(h.events(), [election_event(LockEvent::Suspended)]);
    assert!(h.recipe.is_leader(), "suspended leadership is not yet lost");
    h.session(at(6), ConnectionState::Lost);
    assert_eq!(h.events(), [election_event(LockEvent::Lost)]);
    assert!(!h.sent().iter().any(|s| s.starts_with("create2")), "no create before the new session");
    assert!(h.recipe.is_queued());
    h.session(at(7), ConnectionState::Connected);
    assert!(h.sent().iter().any(|s| s.starts_with(&format!("create2 {BASE}/_c_<uuid>-latch- [ES]"))));
}

/// Curator 5.7 (CURATOR-696): a latch whose session was replaced while its
/// old node lingers (the server has not yet expired the old session, whose
/// node still sorts first) must not lead on that node. 5.4 kept the old path
/// as its own and led beside the next leader; 5.7 reads its node's
/// ephemeralOwner first. zoolock deletes its old node once the new session
/// connects, and its node is only ever the one its create in the current
/// session made: if the old one stays (the delete refused), it waits behind
/// it like any other.
#[test]
fn a_latch_never_leads_on_its_node_from_a_replaced_session() {
    let mut h = election(ElectionKind::Latch, "a");
    let old = lead(&mut h, "latch-", 1);
    h.session(at(5), ConnectionState::Lost);
    h.events();
    h.session(at(6), ConnectionState::Connected);
    let sent = h.sent();
    assert_eq!(sent[0], format!("delete {}", mask(&old)), "the old node is deleted first: {sent:?}");
    assert!(sent.iter().any(|s| s.starts_with(&format!("create2 {BASE}/_c_<uuid>-latch- [ES]"))));
    // The delete is refused (an ACL), so the old node stays until the server
    // expires the old session.
    h.answer(at(7), "delete", Answer::Err(ErrorCode::NO_AUTH));
    h.events();
    let new = h.answer(at(7), "create2", Answer::Seq(2));
    h.answer(at(7), "getChildren2", kids(&[name(&old), name(&new)]));
    assert!(!h.recipe.is_leader(), "led on the old session's node");
    assert!(!h.events().iter().any(|e| matches!(e, RecipeEvent::Election(LockEvent::Acquired { .. }))));
    let sent = h.sent();
    assert!(sent.contains(&format!("getData {} w", mask(&old))), "watches the stale node: {sent:?}");
    // The server expires the old session: its node goes, and the latch leads on its own.
    h.answer_held_watch(at(8), &new);
    h.answer(at(8), "getData", Answer::Data(b"a"));
    h.watch(at(9), EventType::NODE_DELETED, &old);
    if h.sent().iter().any(|s| s.starts_with("getChildren2")) {
        h.answer(at(9), "getChildren2", kids(&[name(&new)]));
    }
    assert_eq!(h.events(), [elected(&new, 1002)]);
    assert!(h.recipe.is_leader());
}

/// A blip (Suspended, then the same session back with the node): the
/// events are the same under both policies, and the node is kept; only
/// whether the suspended term leads differs (Curator's standard policy
/// counts `SUSPENDED` as an error state, its session policy only `LOST`).
#[test]
fn the_policy_decides_whether_a_suspended_term_leads() {
    for policy in LeadershipPolicy::ALL {
        for kind in [ElectionKind::Selector, ElectionKind::Latch] {
            let e = Election::new(ZkPath::new(BASE).unwrap(), LockConfig::new(1), kind, "a");
            let mut h = Harness::new(e.leadership_policy(policy));
            assert_eq!(h.recipe.policy(), policy);
            let node_name = if kind == ElectionKind::Latch { "latch-" } else { "lock-" };
            lead(&mut h, node_name, 1);
            assert!(h.recipe.leads());
            h.session(at(5), ConnectionState::Suspended);
            assert_eq!(h.events(), [election_event(LockEvent::Suspended)]);
            assert!(h.recipe.is_leader(), "{policy:?} {kind:?}: the node is kept");
            assert_eq!(h.recipe.leads(), policy == LeadershipPolicy::Session, "{policy:?} {kind:?}");
            h.session(at(6), ConnectionState::Lost);
            assert_eq!(h.events(), [election_event(LockEvent::Lost)]);
            assert!(!h.recipe.leads(), "{policy:?} {kind:?}: a lost session ends the term");
        }
    }
    assert_eq!(Election::new(ZkPath::new(BASE).unwrap(), LockConfig::new(1), ElectionKind::Latch, "").policy(), {
        LeadershipPolicy::Standard
    });
    for policy in LeadershipPolicy::ALL {
        assert_eq!(LeadershipPolicy::from_name(policy.name()), Some(policy));
    }
    assert_eq!(LeadershipPolicy::from_name("Session"), None);
}

/// A participant waiting behind a leader (a selector without re-queue).
fn waiting_selector(renew: bool) -> Harness<Election> {
    let e = Election::new(ZkPath::new(BASE).unwrap(), LockConfig::new(1), ElectionKind::Selector, "b");
    let mut h = Harness::new(e.renewing(renew));
    h.run(|e| e.start(at(0))).unwrap();
    h.sent();
    let node = h.answer(at(1), "create2", Answer::Seq(2));
    let leader = format!("_c_00000001-0000-4000-8000-000000000001-lock-{:010}", 1);
    h.answer(at(1), &listing(BASE, true), kids(&[leader, name(&node)]));
    h.sent();
    assert!(h.recipe.is_queued());
    h
}

#[test]
fn a_wait_cut_by_a_session_expiry_queues_again_without_a_failure() {
    let mut h = waiting_selector(true);
    h.session(at(5), ConnectionState::Lost);
    let events = h.events();
    assert!(!events.iter().any(|e| matches!(e, RecipeEvent::Election(LockEvent::Failed(_)))), "{events:?}");
    assert!(h.recipe.is_queued());
    assert!(!h.sent().iter().any(|s| s.starts_with("create2")), "no create before the new session");
    h.session(at(6), ConnectionState::Connected);
    assert!(h.sent().iter().any(|s| s.starts_with(&format!("create2 {BASE}/_c_<uuid>-lock- [ES]"))));
}

#[test]
fn without_renewal_a_session_expiry_fails_the_wait() {
    let mut h = waiting_selector(false);
    h.session(at(5), ConnectionState::Lost);
    assert_eq!(h.events(), [election_event(LockEvent::Failed(zoolock_core::RequestError::SessionExpired))]);
    assert!(!h.recipe.is_queued());
}

#[test]
fn a_waiting_participant_leads_when_the_leader_goes() {
    let mut h = election(ElectionKind::Latch, "b");
    h.run(|e| e.start(at(0))).unwrap();
    h.sent();
    let node = h.answer(at(1), "create2", Answer::Seq(2));
    let leader = format!("_c_00000001-0000-4000-8000-000000000001-latch-{:010}", 1);
    // A foreign `lock-` node on the path sorts by its whole name, after ours.
    h.answer(at(1), &listing(BASE, true), kids(&[leader.clone(), name(&node), "lock-0000000000".into()]));
    assert_eq!(h.sent(), [held_watch(&node), format!("getData {BASE}/{} w", mask(&leader))]);
    h.answer_held_watch(at(2), &node);
    h.answer(at(2), "getData", Answer::Data(b"a"));
    assert!(h.recipe.is_queued());
    h.watch(at(3), EventType::NODE_DELETED, &format!("{BASE}/{leader}"));
    // The foreign name has no sequence key: no fast handoff, a listing.
    h.answer(at(3), &listing(BASE, false), kids(&[name(&node), "lock-0000000000".into()]));
    assert_eq!(h.events(), [elected(&node, 1002)]);
}

/// A participant as the listing reports it: a node whose data was read has
/// its stat (the transcript answers with a zeroed one).
fn participant(path: &str, data: Option<&'static [u8]>) -> Participant {
    let stat = data.map(|_| zoolock_core::wire::Stat::default());
    Participant { path: path.into(), data: data.map(bytes::Bytes::from_static), stat }
}

#[test]
fn the_leader_is_the_first_participant_whose_node_still_exists() {
    let list = [participant("/l/a", None), participant("/l/b", Some(b"id-b")), participant("/l/c", Some(b""))];
    let all = election_participants(&list);
    let view: Vec<(&str, &str, bool)> = all.iter().map(|p| (p.node.as_str(), p.id.as_str(), p.is_leader)).collect();
    assert_eq!(view, [("/l/b", "id-b", true), ("/l/c", "", false)]);
    assert_eq!(election_leader(&list).map(|p| p.id), Some("id-b".into()));
    assert_eq!(election_leader(&[participant("/l/a", None)]), None, "Curator's dummy participant");
    let bad = [participant("/l/x", Some(b"\xff"))];
    assert_eq!(election_participants(&bad)[0].id, "\u{fffd}", "invalid UTF-8 replaced, as Java decodes it");
}

#[test]
fn the_observer_reports_each_change_of_holder_from_watches() {
    let mut h = Harness::new(Observer::election(ZkPath::new(BASE).unwrap(), ElectionKind::Latch));
    assert_eq!(h.sent(), [format!("getChildren2 {BASE} w")]);
    h.answer(at(1), "getChildren2", kids(&["_c_1-latch-0000000002", "_c_2-latch-0000000001"]));
    let reads = [format!("getData {BASE}/_c_2-latch-0000000001"), format!("getData {BASE}/_c_1-latch-0000000002")];
    assert_eq!(h.sent(), reads, "in queue order");
    h.answer(at(2), "getData", Answer::Data(b"a"));
    h.answer(at(2), "getData", Answer::Data(b"b"));
    let first = participant(&format!("{BASE}/_c_2-latch-0000000001"), Some(b"a"));
    assert_eq!(h.events(), [RecipeEvent::Holder(Some(first))]);
    // Someone queues behind: the holder is the same, nothing is reported.
    h.watch(at(3), EventType::NODE_CHILDREN_CHANGED, BASE);
    h.answer(
        at(3),
        &format!("getChildren2 {BASE} w"),
        kids(&["_c_1-latch-0000000002", "_c_2-latch-0000000001", "_c_3-latch-0000000003"]),
    );
    for _ in 0..3 {
        h.answer(at(3), "getData", Answer::Data(b"x"));
    }
    assert!(h.events().is_empty());
    // The leader goes.
    h.watch(at(4), EventType::NODE_CHILDREN_CHANGED, BASE);
    h.answer(at(4), &format!("getChildren2 {BASE} w"), kids(&["_c_1-latch-0000000002"]));
    h.answer(at(4), "getData", Answer::Data(b"b"));
    let next = participant(&format!("{BASE}/_c_1-latch-0000000002"), Some(b"b"));
    assert_eq!(h.events(), [RecipeEvent::Holder(Some(next))]);
    // Everyone goes, and the path with them: an exists watch waits for it.
    h.watch(at(5), EventType::NODE_CHILDREN_CHANGED, BASE);
    h.answer(at(5), &format!("getChildren2 {BASE} w"), Answer::Err(zoolock_core::wire::ErrorCode::NO_NODE));
    assert_eq!(h.events(), [RecipeEvent::Holder(None)]);
    h.answer(at(5), &format!("exists {BASE} w"), Answer::Err(zoolock_core::wire::ErrorCode::NO_NODE));
    h.watch(at(6), EventType::NODE_CREATED, BASE);
    assert_eq!(h.sent().last().cloned(), Some(format!("getChildren2 {BASE} w")));
}

#[test]
fn an_unprotected_custom_name_has_no_protection_prefix() {
    let name = LockName::new("n_").unwrap().with_protection(false);
    let mut h = Harness::new(Mutex::new(ZkPath::new("/q").unwrap(), LockConfig::new(1).with_name(name)));
    h.run(|m| m.acquire(at(0), None)).unwrap();
    assert_eq!(h.sent()[0], "create2 /q/n_ [ES]");
    // Its reply lost, nothing can find it again: the attempt fails, and no
    // listing ever looks for an empty prefix.
    h.answer(at(1), "create2", Answer::Loss);
    assert_eq!(h.events(), [RecipeEvent::Failed(zoolock_core::RequestError::ConnectionLoss)]);
    h.session(at(2), ConnectionState::Reconnected);
    assert!(h.sent().iter().all(|s| !s.starts_with("getChildren")), "no orphan lookup by an empty prefix");
}

#[test]
fn the_trailing_digits_rule_sorts_by_the_sequence_and_turns_the_fast_handoff_off() {
    let rule = LockName::new("x-").unwrap().with_sort(SortRule::TrailingDigits).with_protection(false);
    assert_eq!(rule.sort_key(), SortKey::TrailingDigits);
    let mut h = Harness::new(Mutex::new(ZkPath::new("/q").unwrap(), LockConfig::new(1).with_name(rule)));
    h.run(|m| m.acquire(at(0), None)).unwrap();
    h.sent();
    let node = h.answer(at(1), "create2", Answer::Seq(5));
    // ZooKeeper's WriteLock names: `x-<session>-<seq>`: the session id
    // must not decide the order.
    let pred = "x-9999-0000000004";
    h.answer(at(1), &listing("/q", true), kids(&[name(&node).as_str(), "x-1111-0000000006", pred]));
    assert_eq!(h.sent(), [held_watch(&node), format!("getData /q/{pred} w")], "no look-ahead");
    h.answer_held_watch(at(2), &node);
    h.answer(at(2), "getData", Answer::Data(b""));
    h.watch(at(3), EventType::NODE_DELETED, &format!("/q/{pred}"));
    assert!(h.events().is_empty(), "no fast handoff: it lists again");
    assert_eq!(h.sent(), [listing("/q", false)]);
    h.answer(at(3), &listing("/q", false), kids(&[name(&node).as_str(), "x-1111-0000000006"]));
    assert_eq!(h.events(), [acquired(&node, 1005)]);
}

#[test]
fn a_custom_name_sorts_after_the_name_like_curator() {
    let n = LockName::new("n_").unwrap();
    let key = n.sort_key();
    let mut v = vec!["_c_b-n_0000000002".to_string(), "_c_a-n_0000000001".to_string(), "other".to_string()];
    key.sort(&mut v);
    assert_eq!(v, ["_c_a-n_0000000001", "_c_b-n_0000000002", "other"]);
}

#[test]
fn the_observer_lists_anew_on_a_renewed_session_and_resends_after_a_drop() {
    let mut h = Harness::new(Observer::new(ZkPath::new("/q").unwrap(), LockName::lock().sort_key()));
    // The first listing meets a dropped connection: sent again on reconnect.
    h.answer(at(1), "getChildren2 /q w", Answer::Loss);
    h.session(at(2), ConnectionState::Reconnected);
    h.answer(at(2), "getChildren2 /q w", kids(&["_c_1-lock-0000000001"]));
    h.answer(at(2), "getData /q/_c_1-lock-0000000001", Answer::Data(b"x"));
    assert!(matches!(h.events().as_slice(), [RecipeEvent::Holder(Some(_))]));
    h.sent();
    // The session is lost, and its watches with it: nothing until a new
    // one connects, then a fresh listing with a watch.
    h.session(at(3), ConnectionState::Lost);
    assert!(h.sent().is_empty());
    h.session(at(4), ConnectionState::Connected);
    assert_eq!(h.sent(), ["getChildren2 /q w"]);
    h.answer(at(4), "getChildren2 /q w", kids::<&str>(&[]));
    assert_eq!(h.events(), [RecipeEvent::Holder(None)]);
    h.assert_idle();
}

/// Core keeps the terms: the driver's handles read the current one (and
/// the last one lost, with why), the wait's position and the failure that
/// ended a wait, here, not from a ledger of their own.
#[test]
fn the_participant_keeps_its_terms_position_and_failures() {
    use zoolock_core::recipes::TermFailure;
    use zoolock_core::{HoldStatus, LossReason, RequestError};

    let mut h = waiting_selector(false);
    assert_eq!(h.recipe.term(), None);
    assert_eq!(h.recipe.position(), Some((1, 2)), "one node ahead of two");
    assert_eq!(h.recipe.failure_since(0), None);
    h.session(at(5), ConnectionState::Lost);
    h.events();
    assert_eq!(h.recipe.failure_since(0), Some(&TermFailure::Failed(RequestError::SessionExpired)));
    assert_eq!(h.recipe.failure_since(1), None, "it ended the wait before any term");

    let mut h = election(ElectionKind::Latch, "a");
    let node = lead(&mut h, "latch-", 1);
    let term = h.recipe.term().expect("leading").clone();
    assert_eq!((term.n, &*term.node, term.status, term.loss), (1, node.as_str(), HoldStatus::Held, None));
    assert_eq!(h.recipe.position(), None, "no position while leading");
    h.session(at(5), ConnectionState::Suspended);
    h.events();
    assert_eq!(h.recipe.term().map(|t| t.status), Some(HoldStatus::Suspended));
    h.watch(at(6), EventType::NODE_DELETED, &node);
    assert_eq!(h.events(), [election_event(LockEvent::Lost)]);
    let lost = h.recipe.term().expect("the lost term is kept until the next");
    assert_eq!((lost.n, lost.status, lost.loss), (1, HoldStatus::Lost, Some(LossReason::SessionOrNode)));
    h.session(at(7), ConnectionState::Reconnected);
    assert_eq!(h.recipe.term().map(|t| t.status), Some(HoldStatus::Lost), "a lost term stays lost");
    assert_eq!(h.recipe.terms(), 1);
    // A refused start is the failure a waiter hears.
    assert_eq!(h.run(|e| e.start(at(8))), Err(ApiMisuse::AcquireInProgress));
    assert_eq!(h.recipe.failure_since(1), Some(&TermFailure::Refused(ApiMisuse::AcquireInProgress)));
}
