//! Watch registration, notifications and setWatches.

use crate::*;

// ---- 11. watches -----------------------------------------------------------------------

#[test]
fn get_data_registers_a_data_watch_only_on_success() {
    let mut sim = connected("h:1");
    sim.submit_watch(Op::get_data(&p("/a"), true), 1);
    assert_eq!(sim.sent(), [frame(1, get_data("/a", true))]);
    sim.feed_ok(&err(1, 5, ErrorCode::NO_NODE));
    sim.feed_ok(&notification(EventType::NODE_CREATED, "/a"));
    assert_eq!(sim.events(), [reply_ev(0, Err(RequestError::Server(ErrorCode::NO_NODE)))]);

    sim.submit_watch(Op::get_data(&p("/a"), true), 1);
    assert_eq!(sim.sent(), [frame(2, get_data("/a", true))]);
    sim.feed_ok(&ok(2, 6, data(b"x", 6)));
    sim.feed_ok(&notification(EventType::NODE_DATA_CHANGED, "/a"));
    assert_eq!(sim.events(), [reply_ev(1, Ok(data(b"x", 6))), watch_ev(1, EventType::NODE_DATA_CHANGED, "/a")]);
}

#[test]
fn exists_on_a_missing_node_leaves_an_exist_watch() {
    let mut sim = watching(&[(Op::exists(&p("/e"), true), 2)]);
    sim.feed_ok(&err(1, 5, ErrorCode::NO_NODE));
    sim.feed_ok(&notification(EventType::NODE_CREATED, "/e"));
    assert_eq!(
        sim.events(),
        [reply_ev(0, Err(RequestError::Server(ErrorCode::NO_NODE))), watch_ev(2, EventType::NODE_CREATED, "/e")]
    );
    // exists on an existing node: a data watch, fired by delete.
    sim.submit_watch(Op::exists(&p("/e"), true), 2);
    let _ = sim.sent();
    sim.feed_ok(&ok(2, 6, Response::Stat(stat(6))));
    sim.feed_ok(&notification(EventType::NODE_DELETED, "/e"));
    assert_eq!(sim.events(), [reply_ev(1, Ok(Response::Stat(stat(6)))), watch_ev(2, EventType::NODE_DELETED, "/e")]);
    // Any other error leaves no watch.
    sim.submit_watch(Op::exists(&p("/e"), true), 2);
    let _ = sim.sent();
    sim.feed_ok(&err(3, 7, ErrorCode::NO_AUTH));
    sim.feed_ok(&notification(EventType::NODE_CREATED, "/e"));
    assert_eq!(sim.events(), [reply_ev(2, Err(RequestError::Server(ErrorCode::NO_AUTH)))]);
}

#[test]
fn get_children_watch_fires_on_children_changed_and_delete_only() {
    let mut sim = watching(&[(Op::get_children(&p("/c"), true), 3)]);
    sim.feed_ok(&ok(1, 5, children(&["x", "y"], 5)));
    sim.feed_ok(&notification(EventType::NODE_DATA_CHANGED, "/c"));
    sim.feed_ok(&notification(EventType::NODE_CREATED, "/c"));
    sim.feed_ok(&notification(EventType::NODE_CHILDREN_CHANGED, "/c"));
    assert_eq!(
        sim.events(),
        [reply_ev(0, Ok(children(&["x", "y"], 5))), watch_ev(3, EventType::NODE_CHILDREN_CHANGED, "/c")]
    );
    sim.submit_watch(Op::get_children(&p("/c"), true), 3);
    let _ = sim.sent();
    sim.feed_ok(&ok(2, 6, children(&[], 6)));
    sim.feed_ok(&notification(EventType::NODE_DELETED, "/c"));
    assert_eq!(sim.events(), [reply_ev(1, Ok(children(&[], 6))), watch_ev(3, EventType::NODE_DELETED, "/c")]);
}

#[test]
fn one_notification_fans_out_to_every_matching_watcher_once() {
    let mut sim = watched(&[
        (Op::get_data(&p("/f"), true), 1, 5, Ok(data(b"", 5))),
        (Op::exists(&p("/f"), true), 2, 5, Ok(Response::Stat(stat(5)))),
        (Op::get_children(&p("/f"), true), 3, 5, Ok(children(&[], 5))),
        (Op::get_data(&p("/f"), true), 1, 5, Ok(data(b"", 5))), // same watcher twice: delivered once
        (Op::get_data(&p("/g"), true), 1, 5, Ok(data(b"", 5))),
    ]);
    sim.feed_ok(&notification(EventType::NODE_DELETED, "/f"));
    assert_eq!(
        sim.events(),
        [
            watch_ev(1, EventType::NODE_DELETED, "/f"),
            watch_ev(2, EventType::NODE_DELETED, "/f"),
            watch_ev(3, EventType::NODE_DELETED, "/f"),
        ]
    );
    // One-shot: a second notification finds nobody.
    sim.feed_ok(&notification(EventType::NODE_DELETED, "/f"));
    sim.feed_ok(&notification(EventType::NODE_CREATED, "/f"));
    assert_eq!(sim.events(), []);
    sim.feed_ok(&notification(EventType::NODE_DATA_CHANGED, "/g"));
    sim.feed_ok(&notification(EventType::NODE_DATA_CHANGED, "/g"));
    assert_eq!(sim.events(), [watch_ev(1, EventType::NODE_DATA_CHANGED, "/g")]);
}

#[test]
fn remove_watch_and_remove_watcher_forget_registrations_locally() {
    let mut sim = watched(&[
        (Op::get_data(&p("/r"), true), 1, 5, Ok(data(b"", 5))),
        (Op::get_data(&p("/r"), true), 2, 5, Ok(data(b"", 5))),
        (Op::get_children(&p("/s"), true), 2, 5, Ok(children(&[], 5))),
        (Op::exists(&p("/t"), true), 2, 5, Err(ErrorCode::NO_NODE)),
    ]);

    assert!(sim.s.remove_watch("/r", WatchKind::Data, WatcherId(1)));
    assert!(!sim.s.remove_watch("/r", WatchKind::Data, WatcherId(1)));
    assert!(!sim.s.remove_watch("/r", WatchKind::Child, WatcherId(2)), "wrong kind");
    assert!(!sim.s.remove_watch("/t", WatchKind::Data, WatcherId(2)), "an exist watch, not a data watch");
    sim.feed_ok(&notification(EventType::NODE_DATA_CHANGED, "/r"));
    assert_eq!(sim.events(), [watch_ev(2, EventType::NODE_DATA_CHANGED, "/r")]);

    sim.s.remove_watcher(WatcherId(2));
    sim.feed_ok(&notification(EventType::NODE_CHILDREN_CHANGED, "/s"));
    sim.feed_ok(&notification(EventType::NODE_CREATED, "/t"));
    assert_eq!(sim.events(), []);
    assert_eq!(sim.io(), []);
    assert_eq!(sim.s.status(), SessionStatus::Connected);

    // A removed watch is not re-armed after a reconnect.
    sim.set(100);
    sim.disconnected();
    let _ = sim.events();
    sim.resume(NEGOTIATED);
    assert_eq!(sim.sent(), [], "no watch left, so no setWatches");
}

#[test]
fn a_watch_needs_a_watcher() {
    let mut sim = connected("h:1");
    assert_eq!(sim.s.submit(sim.now, Op::get_data(&p("/a"), true), None), Err(ApiMisuse::WatchWithoutWatcher));
    assert_eq!(sim.s.submit(sim.now, Op::exists(&p("/a"), true), None), Err(ApiMisuse::WatchWithoutWatcher));
    assert_eq!(sim.s.submit(sim.now, Op::get_children(&p("/a"), true), None), Err(ApiMisuse::WatchWithoutWatcher));
    sim.assert_quiet();
    // No id was used up; a watcher without a watch flag is simply ignored.
    assert_eq!(sim.s.submit(sim.now, Op::get_data(&p("/a"), false), Some(WatcherId(1))).map(RequestId::get), Ok(0));
    assert_eq!(sim.sent(), [frame(1, get_data("/a", false))]);
    sim.feed_ok(&ok(1, 5, data(b"", 5)));
    sim.feed_ok(&notification(EventType::NODE_DATA_CHANGED, "/a"));
    assert_eq!(sim.events(), [reply_ev(0, Ok(data(b"", 5)))]);
}

#[test]
fn watched_read_lost_with_the_connection_registers_nothing() {
    let mut sim = watching(&[(Op::get_data(&p("/a"), true), 1)]);
    sim.set(100);
    sim.disconnected();
    assert_eq!(sim.events(), [loss(0), state_ev(ConnectionState::Suspended)]);
    sim.resume(NEGOTIATED);
    assert_eq!(sim.events(), [state_ev(ConnectionState::Reconnected)]);
    assert_eq!(sim.sent(), [], "no setWatches for a watch that never registered");
}

#[test]
fn set_watches_lists_are_sorted_and_split_by_kind() {
    let mut sim = watched(&[
        (Op::get_data(&p("/z"), true), 1, 5, Ok(data(b"", 5))),
        (Op::get_data(&p("/a"), true), 2, 6, Ok(data(b"", 6))),
        (Op::exists(&p("/m"), true), 1, 7, Err(ErrorCode::NO_NODE)),
        (Op::get_children(&p("/a"), true), 1, 8, Ok(children(&[], 8))),
        (Op::exists(&p("/b"), true), 3, 9, Ok(Response::Stat(stat(9)))),
    ]);
    sim.set(100);
    sim.disconnected();
    let _ = sim.events();
    sim.resume(NEGOTIATED);
    assert_eq!(sim.events(), [state_ev(ConnectionState::Reconnected)]);
    assert_eq!(
        sim.sent(),
        [frame(
            6,
            Request::SetWatches(SetWatches {
                relative_zxid: 9,
                data_watches: vec!["/a".into(), "/b".into(), "/z".into()],
                exist_watches: vec!["/m".into()],
                child_watches: vec!["/a".into()],
            })
        )]
    );
    // A catch-up NodeCreated for the exist watch, then the reply.
    let mut bytes = notification(EventType::NODE_CREATED, "/m");
    bytes.extend_from_slice(&ok(6, 9, Response::Empty));
    sim.feed_ok(&bytes);
    assert_eq!(sim.events(), [watch_ev(1, EventType::NODE_CREATED, "/m")]);
    assert_eq!(sim.s.in_flight(), 0);
}
