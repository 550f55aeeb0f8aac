//! Watches: event types, one-shot, fan-out, ordering against replies,
//! persistent and recursive watches, check/remove, setWatches catch-up.

use zoolock_core::wire::{
    Acl, AddWatchMode, AddWatchRequest, CreateMode, ErrorCode, EventType, Request, Response, SetAclRequest, SetWatches,
    SetWatches2, WatcherType, WatchesRequest,
};
use zoolock_model::ModelConfig;

use crate::*;

const P: CreateMode = CreateMode::PERSISTENT;
const CREATED: EventType = EventType::NODE_CREATED;
const DELETED: EventType = EventType::NODE_DELETED;
const CHANGED: EventType = EventType::NODE_DATA_CHANGED;
const CHILDREN: EventType = EventType::NODE_CHILDREN_CHANGED;

fn two() -> (Zk, Cli, Cli) {
    let (mut zk, mut w, mut x) = Zk::two_sessions();
    zk.call(&mut x, create("/a", P)).unwrap();
    let _ = zk.take(&mut w);
    (zk, w, x)
}

#[test]
fn each_registration_fires_its_event_type() {
    // (the watch set on /a, the write made by the other session and whether
    // it succeeds, the events)
    let cases: Vec<(&str, Request, Request, bool, Vec<Msg>)> = vec![
        ("exists on missing → created", exists("/a/n", true), create("/a/n", P), true, vec![note(CREATED, "/a/n")]),
        (
            "exists on existing → data changed",
            exists("/a", true),
            set_data("/a", b"1", -1),
            true,
            vec![note(CHANGED, "/a")],
        ),
        ("getData → data changed", get_data("/a", true), set_data("/a", b"1", -1), true, vec![note(CHANGED, "/a")]),
        ("getData → deleted", get_data("/a", true), delete("/a", -1), true, vec![note(DELETED, "/a")]),
        ("exists → deleted", exists("/a", true), delete("/a", -1), true, vec![note(DELETED, "/a")]),
        (
            "getChildren → children changed (create)",
            get_children("/a", true),
            create("/a/c", P),
            true,
            vec![note(CHILDREN, "/a")],
        ),
        (
            "getChildren2 → children changed (delete)",
            get_children2("/", true),
            delete("/a", -1),
            true,
            vec![note(CHILDREN, "/")],
        ),
        ("getChildren → deleted", get_children("/a", true), delete("/a", -1), true, vec![note(DELETED, "/a")]),
        ("getChildren ignores data changes", get_children("/a", true), set_data("/a", b"1", -1), true, vec![]),
        ("getData ignores child changes", get_data("/a", true), create("/a/c", P), true, vec![]),
        ("getData on missing sets nothing", get_data("/a/n", true), create("/a/n", P), true, vec![]),
        (
            "setACL fires nothing",
            get_data("/a", true),
            Request::SetAcl(SetAclRequest { path: "/a".into(), acl: Acl::open_unsafe(), version: -1 }),
            true,
            vec![],
        ),
        ("a failed write fires nothing", get_data("/a", true), set_data("/a", b"1", 9), false, vec![]),
    ];
    for (what, watch, write, write_ok, want) in cases {
        let (mut zk, mut w, mut x) = two();
        let _ = zk.call(&mut w, watch);
        let result = zk.call(&mut x, write);
        assert_eq!(result.is_ok(), write_ok, "{what}: the write's result {result:?}");
        assert_eq!(zk.take(&mut w), want, "{what}");
        assert!(zk.notes(&mut x).is_empty(), "{what}: the writer has no watch");
    }
}

#[test]
fn standard_watches_are_one_shot() {
    let (mut zk, mut w, mut x) = two();
    zk.call(&mut w, get_data("/a", true)).unwrap();
    zk.call(&mut x, set_data("/a", b"1", -1)).unwrap();
    zk.call(&mut x, set_data("/a", b"2", -1)).unwrap();
    assert_eq!(zk.take(&mut w), [note(CHANGED, "/a")]);
    assert_eq!(zk.m.watch_count(), 0);
}

#[test]
fn one_notification_per_connection() {
    let (mut zk, mut w, mut x) = two();
    let mut v = zk.open();
    // The same connection registers data, exist and child watches, twice.
    for _ in 0..2 {
        zk.call(&mut w, get_data("/a", true)).unwrap();
        zk.call(&mut w, exists("/a", true)).unwrap();
        zk.call(&mut w, get_children("/a", true)).unwrap();
    }
    zk.call(&mut v, exists("/a", true)).unwrap();
    zk.call(&mut x, delete("/a", -1)).unwrap();
    // Data and child watchers of one connection get one NodeDeleted together.
    assert_eq!(zk.take(&mut w), [note(DELETED, "/a")]);
    assert_eq!(zk.take(&mut v), [note(DELETED, "/a")]);
    assert!(zk.take(&mut x).is_empty());
}

#[test]
fn notifications_precede_the_triggering_reply() {
    let (mut zk, _w, mut x) = two();
    zk.call(&mut x, get_children("/a", true)).unwrap();
    zk.call(&mut x, exists("/a/c", true)).unwrap_err();
    let xid = zk.send(&mut x, create("/a/c", P));
    let zxid = zk.m.zxid();
    assert_eq!(
        zk.take(&mut x),
        [
            note(CREATED, "/a/c"),
            note(CHILDREN, "/a"),
            Msg::Reply { xid, zxid, err: ErrorCode::OK, rsp: Some(Response::Path("/a/c".into())) },
        ]
    );
}

#[test]
fn notifications_reach_other_connections_at_once() {
    let (mut zk, mut w, mut x) = two();
    zk.call(&mut w, exists("/a/c", true)).unwrap_err();
    zk.send(&mut x, create("/a/c", P));
    // w has not sent anything since; its notification is already queued.
    assert_eq!(zk.m.poll_writable(), Some(w.id));
    assert_eq!(zk.take(&mut w), [note(CREATED, "/a/c")]);
}

#[test]
fn notification_zxid_follows_the_version() {
    let mut config = ModelConfig::default();
    config.notification_txn_zxid = true;
    let mut zk = Zk::with(config);
    let mut w = zk.open();
    zk.call(&mut w, exists("/n", true)).unwrap_err();
    zk.call(&mut w, create("/n", P)).unwrap();
    assert_eq!(zk.notes(&mut w), [Msg::Note { zxid: zk.m.zxid(), event: CREATED, path: "/n".into() }]);
}

#[test]
fn watches_belong_to_the_connection() {
    let (mut zk, mut w, mut x) = two();
    zk.call(&mut w, get_data("/a", true)).unwrap();
    zk.m.disconnect(zk.now, w.id);
    assert_eq!(zk.m.watch_count(), 0);
    zk.call(&mut x, set_data("/a", b"1", -1)).unwrap();
    assert!(zk.take(&mut w).is_empty());
}

fn add_watch(path: &str, mode: AddWatchMode) -> Request {
    Request::AddWatch(AddWatchRequest { path: path.into(), mode })
}

#[test]
fn persistent_and_recursive_watches() {
    let (mut zk, mut w, mut x) = two();
    assert_eq!(zk.call(&mut w, add_watch("/a", AddWatchMode::PERSISTENT)), Ok(Response::AddWatch(ErrorCode::OK)));
    let mut r = zk.open();
    zk.call(&mut r, add_watch("/a", AddWatchMode::PERSISTENT_RECURSIVE)).unwrap();
    zk.call(&mut x, set_data("/a", b"1", -1)).unwrap();
    zk.call(&mut x, create("/a/b", P)).unwrap();
    zk.call(&mut x, set_data("/a/b", b"1", -1)).unwrap();
    zk.call(&mut x, create("/a/b/c", P)).unwrap();
    zk.call(&mut x, delete("/a/b/c", -1)).unwrap();
    zk.call(&mut x, set_data("/a", b"2", -1)).unwrap();
    assert_eq!(
        zk.take(&mut w),
        [note(CHANGED, "/a"), note(CHILDREN, "/a"), note(CHANGED, "/a")],
        "persistent: this path's events, children included, and it stays"
    );
    assert_eq!(
        zk.take(&mut r),
        [
            note(CHANGED, "/a"),
            note(CREATED, "/a/b"),
            note(CHANGED, "/a/b"),
            note(CREATED, "/a/b/c"),
            note(DELETED, "/a/b/c"),
            note(CHANGED, "/a"),
        ],
        "recursive: the subtree, never NodeChildrenChanged"
    );
    // removeWatches (any) ends the persistent watch.
    let rm = |t| Request::RemoveWatches(WatchesRequest { path: "/a".into(), watcher_type: WatcherType(t) });
    assert_eq!(zk.call(&mut w, rm(3)), Ok(Response::Empty));
    zk.call(&mut x, set_data("/a", b"3", -1)).unwrap();
    assert!(zk.take(&mut w).is_empty());
}

/// 3.8.0's addWatch registers a recursive watch in the child table too: a
/// standard watch that later overwrites the data table's mode leaves the
/// child table's, which still reports the node's deletion (found by the
/// differential test against the real server).
#[test]
fn recursive_watches_sit_in_both_tables() {
    let (mut zk, mut w, mut x) = two();
    zk.call(&mut w, add_watch("/r", AddWatchMode::PERSISTENT_RECURSIVE)).unwrap();
    let req = |t: i32| Request::CheckWatches(WatchesRequest { path: "/r".into(), watcher_type: WatcherType(t) });
    assert_eq!(zk.call(&mut w, req(1)), Ok(Response::Empty), "in the child table");
    assert_eq!(zk.call(&mut w, req(2)), Ok(Response::Empty), "in the data table");
    zk.call(&mut w, exists("/r", true)).unwrap_err();
    zk.call(&mut x, create("/r", P)).unwrap();
    zk.call(&mut x, set_data("/r", b"1", -1)).unwrap();
    zk.call(&mut x, delete("/r", -1)).unwrap();
    assert_eq!(
        zk.take(&mut w),
        [note(CREATED, "/r"), note(DELETED, "/r")],
        "the one-shot data watch, then the child table"
    );
}

#[test]
fn check_and_remove_watches() {
    let (mut zk, mut w, _x) = two();
    let req = |t: i32, remove: bool| {
        let r = WatchesRequest { path: "/a".into(), watcher_type: WatcherType(t) };
        if remove { Request::RemoveWatches(r) } else { Request::CheckWatches(r) }
    };
    let nw = Err(ErrorCode::NO_WATCHER);
    let ok = Ok(Response::Empty);
    assert_eq!(zk.call(&mut w, req(3, false)), nw);
    zk.call(&mut w, get_data("/a", true)).unwrap();
    assert_eq!(zk.call(&mut w, req(1, false)), nw, "no child watch");
    assert_eq!(zk.call(&mut w, req(2, false)), ok);
    assert_eq!(zk.call(&mut w, req(3, false)), ok);
    assert_eq!(zk.call(&mut w, req(1, true)), nw);
    assert_eq!(zk.call(&mut w, req(2, true)), ok);
    assert_eq!(zk.call(&mut w, req(2, true)), nw);
    zk.call(&mut w, get_children("/a", true)).unwrap();
    assert_eq!(zk.call(&mut w, req(3, true)), ok);
    assert_eq!(zk.m.watch_count(), 0);
    // Another connection's watches cannot be removed, but 3.8.0's
    // checkWatches counts any connection's watch at the path.
    let mut v = zk.open();
    zk.call(&mut w, get_data("/a", true)).unwrap();
    assert_eq!(zk.call(&mut v, req(2, true)), nw);
    assert_eq!(zk.call(&mut v, req(1, false)), nw);
    assert_eq!(zk.call(&mut v, req(2, false)), ok);
    assert_eq!(zk.call(&mut v, req(3, false)), ok);
}

/// One row of the setWatches catch-up table (zk-wire.md §5).
struct Row {
    what: &'static str,
    list: &'static str,
    /// The writes (each succeeds) that bring the node to its "now" state
    /// after the client's zxid.
    change: Vec<Request>,
    /// The catch-up event, if any.
    event: Option<EventType>,
    /// Whether the watch is armed afterwards: checked with these later
    /// writes, which fire this event.
    armed: Option<(Vec<Request>, EventType)>,
}

/// Makes each of `writes` on `x`; each succeeds.
fn write_all(zk: &mut Zk, x: &mut Cli, writes: Vec<Request>) {
    for req in writes {
        zk.call(x, req).unwrap();
    }
}

#[test]
fn set_watches_catch_up_table() {
    let rows = [
        Row {
            what: "data, node gone",
            list: "data",
            change: vec![delete("/a", -1)],
            event: Some(DELETED),
            armed: None,
        },
        Row {
            what: "data, changed since",
            list: "data",
            change: vec![set_data("/a", b"1", -1)],
            event: Some(CHANGED),
            armed: None,
        },
        Row {
            what: "data, unchanged",
            list: "data",
            change: vec![],
            event: None,
            armed: Some((vec![set_data("/a", b"1", -1)], CHANGED)),
        },
        Row {
            what: "data, only children changed",
            list: "data",
            change: vec![create("/a/c", P)],
            event: None,
            armed: Some((vec![delete("/a/c", -1), delete("/a", -1)], DELETED)),
        },
        Row {
            what: "exist, node there now",
            list: "exist",
            change: vec![create("/n", P)],
            event: Some(CREATED),
            armed: None,
        },
        Row {
            what: "exist, still missing",
            list: "exist",
            change: vec![],
            event: None,
            armed: Some((vec![create("/n", P)], CREATED)),
        },
        Row {
            what: "exist, created and deleted during the outage: missed",
            list: "exist",
            change: vec![create("/n", P), delete("/n", -1)],
            event: None,
            armed: Some((vec![create("/n", P)], CREATED)),
        },
        Row {
            what: "child, node gone",
            list: "child",
            change: vec![delete("/a", -1)],
            event: Some(DELETED),
            armed: None,
        },
        Row {
            what: "child, children changed since",
            list: "child",
            change: vec![create("/a/c", P), delete("/a/c", -1)],
            event: Some(CHILDREN),
            armed: None,
        },
        Row {
            what: "child, only data changed",
            list: "child",
            change: vec![set_data("/a", b"1", -1)],
            event: None,
            armed: Some((vec![create("/a/c", P)], CHILDREN)),
        },
    ];
    for row in rows {
        for v2 in [false, true] {
            let (mut zk, _w, mut x) = two();
            let last_seen = zk.m.zxid();
            write_all(&mut zk, &mut x, row.change.clone());
            let mut w = zk.open();
            let path = if row.list == "exist" { "/n" } else { "/a" };
            let list = vec![path.to_string()];
            let (data, exist, child) = match row.list {
                "data" => (list, vec![], vec![]),
                "exist" => (vec![], list, vec![]),
                _ => (vec![], vec![], list),
            };
            let req = if v2 {
                Request::SetWatches2(SetWatches2 {
                    relative_zxid: last_seen,
                    data_watches: data,
                    exist_watches: exist,
                    child_watches: child,
                    ..SetWatches2::default()
                })
            } else {
                Request::SetWatches(SetWatches {
                    relative_zxid: last_seen,
                    data_watches: data,
                    exist_watches: exist,
                    child_watches: child,
                })
            };
            let xid = zk.send(&mut w, req);
            let mut want: Vec<Msg> = row.event.map(|e| note(e, path)).into_iter().collect();
            want.push(Msg::Reply { xid, zxid: zk.m.zxid(), err: ErrorCode::OK, rsp: Some(Response::Empty) });
            assert_eq!(zk.take(&mut w), want, "{} (v2: {v2})", row.what);
            match &row.armed {
                Some((trigger, event)) => {
                    write_all(&mut zk, &mut x, trigger.clone());
                    let event = *event;
                    assert_eq!(zk.notes(&mut w), [note(event, path)], "{}: re-armed", row.what);
                }
                None => assert_eq!(zk.m.watch_count(), 0, "{}: not re-armed", row.what),
            }
        }
    }
}

#[test]
fn set_watches2_rearms_persistent_watches_silently() {
    let (mut zk, mut w, mut x) = two();
    let last = zk.m.zxid();
    zk.call(&mut x, set_data("/a", b"during the outage", -1)).unwrap();
    zk.m.disconnect(zk.now, w.id);
    w = zk.open();
    let req = Request::SetWatches2(SetWatches2 {
        relative_zxid: last,
        persistent_watches: vec!["/a".into()],
        persistent_recursive_watches: vec!["/".into()],
        ..SetWatches2::default()
    });
    assert_eq!(zk.call(&mut w, req), Ok(Response::Empty));
    assert!(zk.take(&mut w).is_empty(), "no catch-up for persistent watches");
    zk.call(&mut x, set_data("/a", b"after", -1)).unwrap();
    zk.call(&mut x, set_data("/a", b"again", -1)).unwrap();
    // One notification per change, although two registrations match.
    assert_eq!(zk.take(&mut w), [note(CHANGED, "/a"), note(CHANGED, "/a")]);
}

#[test]
fn last_registration_sets_the_mode() {
    // 3.8: a standard watch registered over a persistent one replaces it.
    let (mut zk, mut w, mut x) = two();
    zk.call(&mut w, add_watch("/a", AddWatchMode::PERSISTENT)).unwrap();
    zk.call(&mut w, get_data("/a", true)).unwrap();
    zk.call(&mut x, set_data("/a", b"1", -1)).unwrap();
    zk.call(&mut x, set_data("/a", b"2", -1)).unwrap();
    assert_eq!(zk.take(&mut w), [note(CHANGED, "/a")]);
}

#[test]
fn a_connection_over_the_watch_limit_is_closed_and_its_session_lives_on() {
    let mut zk = Zk::with(ModelConfig::default().with_max_watches(Some(3)));
    let mut w = zk.open();
    let mut x = zk.open();
    for p in ["/w1", "/w2", "/w3"] {
        assert_eq!(zk.call(&mut w, exists(p, true)), Err(ErrorCode::NO_NODE));
    }
    // The same registration again is not a new one; a fired one-shot watch
    // makes room.
    assert_eq!(zk.call(&mut w, exists("/w1", true)), Err(ErrorCode::NO_NODE));
    zk.call(&mut x, create("/w1", P)).unwrap();
    assert_eq!(zk.notes(&mut w), [note(CREATED, "/w1")]);
    assert_eq!(zk.call(&mut w, get_children("/", true)).map(|_| ()), Ok(()));
    assert!(!zk.is_closed(&w));
    // One more: answered, then closed, its watches gone.
    let xid = zk.send(&mut w, exists("/w4", true));
    assert_eq!(zk.result(&mut w, xid), Err(ErrorCode::NO_NODE));
    assert!(zk.is_closed(&w));
    assert_eq!(zk.close_reason(&w), Some(zoolock_model::CloseReason::TooManyWatches(3)));
    zk.call(&mut x, create("/w2", P)).unwrap();
    // The session lives on: it resumes on a new connection, and re-arming
    // too many watches there closes that connection too.
    let resume = connect_request(w.session, w.passwd.clone(), 30_000, 0);
    let mut again = zk.open_with(resume);
    assert!(!zk.is_closed(&again));
    let paths = ["/a1", "/a2", "/a3", "/a4"].map(String::from).to_vec();
    let xid = zk.send(
        &mut again,
        Request::SetWatches(SetWatches {
            relative_zxid: 0,
            data_watches: vec![],
            exist_watches: paths,
            child_watches: vec![],
        }),
    );
    assert_eq!(zk.result(&mut again, xid), Ok(Response::Empty));
    assert!(zk.is_closed(&again));
    assert_eq!(zk.close_reason(&again), Some(zoolock_model::CloseReason::TooManyWatches(3)));
}
