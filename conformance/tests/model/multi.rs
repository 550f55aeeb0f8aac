//! multi atomicity and per-op results, multiRead, and containers.

use std::time::Duration;

use zoolock_core::wire::{
    CheckVersionRequest, CreateMode, ErrorCode, EventType, MultiResult, OpCode, Request, Response, Stat,
};
use zoolock_model::ModelConfig;

use crate::*;

const P: CreateMode = CreateMode::PERSISTENT;

fn check(path: &str, version: i32) -> Request {
    Request::Check(CheckVersionRequest { path: path.into(), version })
}

fn results(r: Result<Response, ErrorCode>) -> Vec<MultiResult> {
    match r {
        Ok(Response::Multi(results)) => results,
        other => panic!("not a multi reply: {other:?}"),
    }
}

fn ok(op: OpCode, response: Response) -> MultiResult {
    MultiResult::Ok { op, response }
}

#[test]
fn multi_success_results() {
    let (mut zk, mut c, mut w) = Zk::two_sessions();
    zk.call(&mut w, exists("/m", true)).unwrap_err();
    let before = zk.m.zxid();
    let ops = vec![
        create("/m", P),
        create2("/m/c2", P),
        container("/m/box"),
        Request::Create2(create_req("/m/s-", b"", CreateMode::PERSISTENT_SEQUENTIAL)),
        set_data("/m", b"v", 0),
        check("/m", 1),
        delete("/m/c2", 0),
    ];
    let got = results(zk.call(&mut c, Request::Multi(ops)));
    let zxid = before + 1;
    assert_eq!(zk.m.zxid(), zxid, "one zxid for the whole multi");
    let box_stat = zk.stat("/m/box");
    assert_eq!(box_stat.czxid, zxid);
    let m_stat = zk.stat("/m");
    assert_eq!(
        got,
        [
            ok(OpCode::CREATE, Response::Path("/m".into())),
            // 3.8.0: create2 inside a multi answers like create.
            ok(OpCode::CREATE, Response::Path("/m/c2".into())),
            ok(OpCode::CREATE2, Response::Create2 { path: "/m/box".into(), stat: box_stat }),
            ok(OpCode::CREATE, Response::Path("/m/s-0000000002".into())),
            // The Stat as of the setData: three children, the delete came later.
            ok(OpCode::SET_DATA, Response::Stat(Stat { cversion: 3, num_children: 3, ..m_stat })),
            ok(OpCode::CHECK, Response::Empty),
            ok(OpCode::DELETE, Response::Empty),
        ]
    );
    assert_eq!(m_stat.version, 1);
    assert_eq!(names(zk.call(&mut c, get_children("/m", false))), ["box", "s-0000000002"]);
    assert_eq!(zk.take(&mut w), [note(EventType::NODE_CREATED, "/m")]);
    // With the ZOOKEEPER-4026 fix, create2 answers type 15 with the Stat.
    let mut config = ModelConfig::default();
    config.multi_create2_as_create = false;
    let mut zk = Zk::with(config);
    let mut c = zk.open();
    let got = results(zk.call(&mut c, Request::Multi(vec![create2("/x", P)])));
    assert_eq!(got, [ok(OpCode::CREATE2, Response::Create2 { path: "/x".into(), stat: zk.stat("/x") })]);
}

#[test]
fn failed_multi_applies_nothing() {
    let cases: Vec<(&str, Vec<Request>, usize, ErrorCode)> = vec![
        ("bad version in check", vec![create("/a/x", P), check("/a", 5), create("/a/y", P)], 1, ErrorCode::BAD_VERSION),
        ("exists", vec![create("/a/x", P), create("/a/x", P), delete("/a", -1)], 1, ErrorCode::NODE_EXISTS),
        ("first op", vec![delete("/nope", -1), create("/a/x", P)], 0, ErrorCode::NO_NODE),
        ("last op", vec![set_data("/a", b"x", -1), create("/a/x", P), delete("/a", -1)], 2, ErrorCode::NOT_EMPTY),
        ("sees earlier ops", vec![delete("/a/k", -1), set_data("/a/k", b"", -1)], 1, ErrorCode::NO_NODE),
        ("bad path", vec![create("/a/x", P), create("/a/", P)], 1, ErrorCode::BAD_ARGUMENTS),
    ];
    for (what, ops, at, code) in cases {
        let (mut zk, mut c, mut w) = Zk::writer_and_watcher(
            [create("/a", P), create("/a/k", P)],
            [get_children("/a", true), get_data("/a", true)],
        );
        let paths = zk.m.paths();
        let a = zk.stat("/a");
        let zxid = zk.m.zxid();
        let n = ops.len();
        let xid = zk.send(&mut c, Request::Multi(ops));
        let reply = zk.take(&mut c);
        let want: Vec<MultiResult> = (0..n)
            .map(|i| {
                MultiResult::Error(match i.cmp(&at) {
                    std::cmp::Ordering::Less => ErrorCode::OK,
                    std::cmp::Ordering::Equal => code,
                    std::cmp::Ordering::Greater => ErrorCode::RUNTIME_INCONSISTENCY,
                })
            })
            .collect();
        assert_eq!(
            reply,
            [Msg::Reply { xid, zxid: zxid + 1, err: ErrorCode::OK, rsp: Some(Response::Multi(want.clone())) }],
            "{what}"
        );
        assert_eq!(MultiResult::first_failure(&want), Some((at, code)));
        assert_eq!(zk.m.paths(), paths, "{what}: nothing applied");
        assert_eq!(zk.stat("/a"), a, "{what}: parent untouched");
        assert_eq!(zk.m.zxid(), zxid + 1, "{what}: the zxid is consumed");
        assert!(zk.take(&mut w).is_empty(), "{what}: no watch fired");
        // The sequence counter did not move either.
        assert_eq!(created(zk.call(&mut c, create("/a/s-", CreateMode::PERSISTENT_SEQUENTIAL))), "/a/s-0000000001");
    }
}

#[test]
fn multi_fires_watches_in_op_order() {
    let (mut zk, mut c, mut w) =
        Zk::writer_and_watcher([create("/a", P)], [get_children("/a", true), get_data("/a", true)]);
    zk.call(&mut w, exists("/a/x", true)).unwrap_err();
    zk.call(&mut c, Request::Multi(vec![create("/a/x", P), set_data("/a", b"1", -1)])).unwrap();
    assert_eq!(
        zk.take(&mut w),
        [
            note(EventType::NODE_CREATED, "/a/x"),
            note(EventType::NODE_CHILDREN_CHANGED, "/a"),
            note(EventType::NODE_DATA_CHANGED, "/a"),
        ]
    );
}

#[test]
fn malformed_multi_is_a_marshalling_error() {
    let mut zk = Zk::new();
    let mut c = zk.open();
    let zxid = zk.m.zxid();
    // A read op inside a multi (14) does not decode.
    let mut frame = BytesMut::new();
    let body = framed(&RequestFrame::new(Xid(1), Request::MultiRead(vec![get_data("/", false)])));
    frame.extend_from_slice(&body);
    frame[11] = 14; // the header's opcode: multiRead (22) → multi (14)
    c.expect_op(1, OpCode::MULTI);
    zk.send_bytes(&mut c, &frame);
    assert_eq!(zk.take(&mut c), [Msg::Reply { xid: 1, zxid: zxid + 1, err: ErrorCode::MARSHALLING_ERROR, rsp: None }]);
    assert!(!zk.is_closed(&c));
}

#[test]
fn multi_read_answers_each_op() {
    let mut zk = Zk::new();
    let mut c = zk.open();
    zk.call(&mut c, Request::Create(create_req("/r", b"data", P))).unwrap();
    zk.call(&mut c, create("/r/k", P)).unwrap();
    let zxid = zk.m.zxid();
    let ops =
        vec![get_children("/r", false), get_data("/nope", false), get_data("/r", false), get_children("/x", false)];
    let got = results(zk.call(&mut c, Request::MultiRead(ops)));
    assert_eq!(
        got,
        [
            ok(OpCode::GET_CHILDREN, Response::Children(vec!["k".into()])),
            MultiResult::Error(ErrorCode::NO_NODE),
            ok(
                OpCode::GET_DATA,
                Response::Data { data: Some(bytes::Bytes::from_static(b"data")), stat: zk.stat("/r") }
            ),
            MultiResult::Error(ErrorCode::NO_NODE),
        ]
    );
    assert_eq!(zk.m.zxid(), zxid, "multiRead is no transaction");
}

#[test]
fn containers_are_reaped_once_empty() {
    let (mut zk, mut c, mut w) = Zk::two_sessions();
    zk.call(&mut c, container("/locks")).unwrap();
    zk.call(&mut c, container("/locks/job")).unwrap();
    zk.call(&mut c, container("/never-used")).unwrap();
    let node = created(zk.call(&mut c, create("/locks/job/n-", CreateMode::EPHEMERAL_SEQUENTIAL)));
    zk.call(&mut w, exists("/locks/job", true)).unwrap();
    zk.call(&mut w, get_children("/locks", true)).unwrap();
    assert_eq!(zk.m.poll_timeout().filter(|t| *t <= zk.now), None, "nothing to reap yet");
    let zxid = zk.m.zxid();
    zk.call(&mut c, delete(&node, -1)).unwrap();
    assert_eq!(zk.m.poll_timeout(), Some(zk.now), "the reaper wants to run at once");
    assert!(zk.m.node("/locks/job").is_some(), "deleted by the reaper, not by the delete");
    zk.settle();
    assert!(zk.m.node("/locks/job").is_none());
    assert!(zk.m.node("/locks").is_none(), "the parent container goes on the next pass");
    assert!(zk.m.node("/never-used").is_some(), "a container that never had a child stays");
    assert_eq!(zk.m.zxid(), zxid + 3, "each reaped container is a transaction");
    assert_eq!(
        zk.take(&mut w),
        [note(EventType::NODE_DELETED, "/locks/job"), note(EventType::NODE_CHILDREN_CHANGED, "/locks")]
    );
    assert_eq!(zk.m.poll_timeout(), Some(zk.now + Duration::from_millis(30_000)), "only session expiry left");
    // A create under the reaped parent gets NoNode, as the recipes expect.
    assert_eq!(zk.call(&mut c, create("/locks/job/n-", CreateMode::EPHEMERAL_SEQUENTIAL)), Err(ErrorCode::NO_NODE));
}

#[test]
fn container_reaper_delay_and_ephemeral_children() {
    let config = ModelConfig::default()
        .with_container_delay(Duration::from_secs(60))
        .with_session_timeout_bounds(Duration::from_secs(1), Duration::from_secs(600));
    let mut zk = Zk::with(config);
    let mut c = zk.open_with(connect_request(0, bytes::Bytes::from_static(&[0; 16]), 600_000, 0));
    let mut other = zk.open_with(connect_request(0, bytes::Bytes::from_static(&[0; 16]), 4_000, 0));
    zk.call(&mut c, container("/box")).unwrap();
    zk.call(&mut other, create("/box/e", CreateMode::EPHEMERAL)).unwrap();
    // The child goes with its session; the container follows after the delay.
    zk.advance(4_000);
    assert!(zk.m.node("/box/e").is_none());
    zk.advance(59_999);
    assert!(zk.m.node("/box").is_some());
    zk.advance(1);
    assert!(zk.m.node("/box").is_none());
    // A container refilled before the reaper runs is kept.
    zk.call(&mut c, container("/box2")).unwrap();
    zk.call(&mut c, create("/box2/a", P)).unwrap();
    zk.call(&mut c, delete("/box2/a", -1)).unwrap();
    zk.advance(30_000);
    zk.call(&mut c, create("/box2/b", P)).unwrap();
    zk.advance(30_000);
    assert!(zk.m.node("/box2").is_some());
}
