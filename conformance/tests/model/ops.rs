//! Single ops: results, error codes and the order in which errors win,
//! Stat arithmetic, sequential names, zxids, ACLs, framing.

use bytes::Bytes;
use zoolock_core::wire::{
    Acl, AuthPacket, CheckVersionRequest, CreateMode, CreateRequest, CreateTtlRequest, ErrorCode, Id, OpCode, Perms,
    Request, Response, SetAclRequest, Stat, WatcherType, WatchesRequest, Xid,
};
use zoolock_model::{CloseReason, ModelConfig, StandaloneCheck};

use crate::*;

const P: CreateMode = CreateMode::PERSISTENT;
const E: CreateMode = CreateMode::EPHEMERAL;
const PS: CreateMode = CreateMode::PERSISTENT_SEQUENTIAL;
const ES: CreateMode = CreateMode::EPHEMERAL_SEQUENTIAL;

fn acl(perms: i32, scheme: &str, id: &str) -> Acl {
    Acl { perms: Perms(perms), id: Id { scheme: scheme.into(), id: id.into() } }
}

fn with_acl(path: &str, acl: Vec<Acl>) -> Request {
    Request::Create(CreateRequest { path: path.into(), data: None, acl, flags: P })
}

fn auth(scheme: &str, credential: &str) -> Request {
    Request::Auth(AuthPacket { auth_type: 0, scheme: scheme.into(), auth: Some(Bytes::from(credential.to_string())) })
}

/// A server with `/a` (persistent) and `/e` (ephemeral of the returned client).
fn setup() -> (Zk, Cli) {
    let mut zk = Zk::new();
    let mut c = zk.open();
    assert_eq!(created(zk.call(&mut c, create("/a", P))), "/a");
    assert_eq!(created(zk.call(&mut c, create("/e", E))), "/e");
    (zk, c)
}

#[test]
fn create_results_and_errors() {
    let (mut zk, mut c) = setup();
    let digest_only = vec![acl(31, "digest", "u:x")];
    let cases: Vec<(Request, Result<&str, ErrorCode>)> = vec![
        (create("/a/b", P), Ok("/a/b")),
        (create2("/a/c", E), Ok("/a/c")),
        (create("/a/s-", PS), Ok("/a/s-0000000002")),
        (create("/a/", PS), Ok("/a/0000000003")),
        (create("/a/b", P), Err(ErrorCode::NODE_EXISTS)),
        (create("/", P), Err(ErrorCode::NODE_EXISTS)),
        (create("/missing/x", P), Err(ErrorCode::NO_NODE)),
        (create("/e/x", P), Err(ErrorCode::NO_CHILDREN_FOR_EPHEMERALS)),
        (create("/a/", P), Err(ErrorCode::BAD_ARGUMENTS)),
        (create("a", P), Err(ErrorCode::BAD_ARGUMENTS)),
        (create("", P), Err(ErrorCode::BAD_ARGUMENTS)),
        (create("/a/\u{0}x", P), Err(ErrorCode::BAD_ARGUMENTS)),
        (create("/a/.", P), Err(ErrorCode::BAD_ARGUMENTS)),
        (create("/a/b\u{1}", P), Err(ErrorCode::BAD_ARGUMENTS)),
        (create("/a/x", CreateMode(7)), Err(ErrorCode::BAD_ARGUMENTS)),
        (create("/a/x", CreateMode(-1)), Err(ErrorCode::BAD_ARGUMENTS)),
        (create("/a/x", CreateMode::PERSISTENT_WITH_TTL), Err(ErrorCode::UNIMPLEMENTED)),
        (with_acl("/a/x", vec![]), Err(ErrorCode::INVALID_ACL)),
        (with_acl("/a/x", vec![acl(31, "world", "someone")]), Err(ErrorCode::INVALID_ACL)),
        (with_acl("/a/x", vec![acl(31, "auth", "")]), Err(ErrorCode::INVALID_ACL)),
        (with_acl("/a/x", vec![acl(31, "digest", "nocolon")]), Err(ErrorCode::INVALID_ACL)),
        (with_acl("/a/d", digest_only), Ok("/a/d")),
        (create("/a/d/x", P), Err(ErrorCode::NO_AUTH)),
    ];
    for (i, (req, want)) in cases.into_iter().enumerate() {
        let got = zk.call(&mut c, req.clone());
        match want {
            Ok(path) => assert_eq!(created(got), path, "case {i}: {req:?}"),
            Err(e) => assert_eq!(got, Err(e), "case {i}: {req:?}"),
        }
    }
    assert!(!zk.is_closed(&c), "error replies keep the connection open");
}

#[test]
fn create_check_order() {
    let (mut zk, mut c) = setup();
    zk.call(&mut c, with_acl("/locked", vec![acl(1, "world", "anyone")])).unwrap();
    zk.call(&mut c, create("/locked2", P)).unwrap();
    let cases: Vec<(&str, Request, ErrorCode)> = vec![
        ("flags before path", create("bad", CreateMode(9)), ErrorCode::BAD_ARGUMENTS),
        ("flags before parent", create("/missing/x", CreateMode(9)), ErrorCode::BAD_ARGUMENTS),
        ("TTL mode before path", create("bad", CreateMode::PERSISTENT_WITH_TTL), ErrorCode::UNIMPLEMENTED),
        ("slash before ACL", with_acl("bad", vec![]), ErrorCode::BAD_ARGUMENTS),
        ("ACL before parent", with_acl("/missing/x", vec![]), ErrorCode::INVALID_ACL),
        // The full path is validated only after the parent lookup.
        ("parent before full path", create("/missing/x/", P), ErrorCode::NO_NODE),
        ("parent before exists", create("/missing/a", P), ErrorCode::NO_NODE),
        ("auth before full path", create("/locked/", P), ErrorCode::NO_AUTH),
        ("full path before exists", create("/a/", P), ErrorCode::BAD_ARGUMENTS),
        ("exists before ephemeral parent", create("/e", P), ErrorCode::NODE_EXISTS),
    ];
    for (what, req, want) in cases {
        assert_eq!(zk.call(&mut c, req), Err(want), "{what}");
    }
    // An ephemeral parent with a free child name: NoChildrenForEphemerals.
    assert_eq!(zk.call(&mut c, create("/e/x", P)), Err(ErrorCode::NO_CHILDREN_FOR_EPHEMERALS));
    let _ = zk.call(&mut c, delete("/locked2", -1));
}

#[test]
fn delete_results_and_check_order() {
    let (mut zk, mut c) = setup();
    zk.call(&mut c, create("/a/b", P)).unwrap();
    zk.call(&mut c, create("/a/b/c", P)).unwrap();
    zk.call(&mut c, set_data("/a/b", b"x", -1)).unwrap();
    let cases: Vec<(Request, Result<(), ErrorCode>)> = vec![
        (delete("/", -1), Err(ErrorCode::BAD_ARGUMENTS)),
        (delete("/zookeeper", -1), Err(ErrorCode::BAD_ARGUMENTS)),
        (delete("/zookeeper/config", -1), Err(ErrorCode::BAD_ARGUMENTS)),
        (delete("nope", -1), Err(ErrorCode::BAD_ARGUMENTS)),
        (delete("/missing/x", -1), Err(ErrorCode::NO_NODE)),
        (delete("/a/missing", -1), Err(ErrorCode::NO_NODE)),
        (delete("/a/", -1), Err(ErrorCode::NO_NODE)),
        // Version before children.
        (delete("/a/b", 5), Err(ErrorCode::BAD_VERSION)),
        (delete("/a/b", 1), Err(ErrorCode::NOT_EMPTY)),
        (delete("/a/b", -1), Err(ErrorCode::NOT_EMPTY)),
        (delete("/a/b/c", 0), Ok(())),
        (delete("/a/b", 1), Ok(())),
        (delete("/a/b", -1), Err(ErrorCode::NO_NODE)),
    ];
    for (i, (req, want)) in cases.into_iter().enumerate() {
        assert_eq!(zk.call(&mut c, req.clone()).map(|_| ()), want, "case {i}: {req:?}");
    }
}

#[test]
fn set_data_get_data_exists() {
    let (mut zk, mut c) = setup();
    let created_at = zk.m.zxid();
    zk.now = zk.now + std::time::Duration::from_millis(1500);
    let s = stat_of(zk.call(&mut c, set_data("/a", b"hello", 0)));
    assert_eq!((s.version, s.data_length, s.mzxid), (1, 5, zk.m.zxid()));
    assert_eq!(s.czxid, created_at - 1, "/a was created before /e");
    assert_eq!(s.mtime - s.ctime, 1500);
    assert_eq!(zk.call(&mut c, set_data("/a", b"x", 0)), Err(ErrorCode::BAD_VERSION));
    assert_eq!(zk.call(&mut c, set_data("/nope", b"x", -1)), Err(ErrorCode::NO_NODE));
    assert_eq!(zk.call(&mut c, set_data("/a/", b"x", -1)), Err(ErrorCode::BAD_ARGUMENTS));
    assert_eq!(zk.call(&mut c, set_data("", b"x", -1)), Err(ErrorCode::BAD_ARGUMENTS));
    match zk.call(&mut c, get_data("/a", false)) {
        Ok(Response::Data { data, stat }) => {
            assert_eq!(data.as_deref(), Some(&b"hello"[..]));
            assert_eq!(stat.version, 1);
        }
        other => panic!("{other:?}"),
    }
    assert_eq!(zk.call(&mut c, get_data("/nope", false)), Err(ErrorCode::NO_NODE));
    // Reads do plain lookups: an invalid path is just missing, "" is the root.
    assert_eq!(zk.call(&mut c, get_data("/a/", false)), Err(ErrorCode::NO_NODE));
    assert_eq!(names(zk.call(&mut c, get_children("", false))), ["a", "e", "zookeeper"]);
    assert_eq!(zk.call(&mut c, exists("/nope", false)), Err(ErrorCode::NO_NODE));
    assert_eq!(zk.call(&mut c, exists("/a\u{0}", false)), Err(ErrorCode::BAD_ARGUMENTS));
    assert_eq!(stat_of(zk.call(&mut c, exists("/e", false))).ephemeral_owner, c.session);
    // Null data stays null.
    let req = CreateRequest { path: "/null".into(), data: None, acl: Acl::open_unsafe(), flags: P };
    zk.call(&mut c, Request::Create(req)).unwrap();
    match zk.call(&mut c, get_data("/null", false)) {
        Ok(Response::Data { data: None, stat }) => assert_eq!(stat.data_length, 0),
        other => panic!("{other:?}"),
    }
}

#[test]
fn stat_fields_of_a_new_node() {
    let mut zk = Zk::new();
    let mut c = zk.open();
    zk.now = Instant::from_millis(250);
    let before = zk.m.zxid();
    let stat = stat_of(zk.call(&mut c, Request::Create2(create_req("/n", b"abc", E))));
    let zxid = before + 1;
    let wall = 1_700_000_000_250;
    assert_eq!(
        stat,
        Stat {
            czxid: zxid,
            mzxid: zxid,
            ctime: wall,
            mtime: wall,
            version: 0,
            cversion: 0,
            aversion: 0,
            ephemeral_owner: c.session,
            data_length: 3,
            num_children: 0,
            pzxid: zxid,
        }
    );
}

#[test]
fn fresh_tree_matches_a_fresh_server() {
    let mut zk = Zk::new();
    let mut c = zk.open();
    assert_eq!(names(zk.call(&mut c, get_children("/", false))), ["zookeeper"]);
    assert_eq!(names(zk.call(&mut c, get_children("/zookeeper", false))), ["config", "quota"]);
    let root = stat_of(zk.call(&mut c, get_children2("/", false)));
    assert_eq!((root.cversion, root.num_children, root.czxid, root.pzxid), (-1, 1, 0, 0));
    assert_eq!(stat_of(zk.call(&mut c, exists("/zookeeper", false))).cversion, -2);
    match zk.call(&mut c, Request::GetAcl(path_req("/zookeeper/config"))) {
        Ok(Response::Acl { acl, stat }) => {
            assert_eq!(acl, Acl::read_unsafe());
            assert_eq!(stat.aversion, -1);
        }
        other => panic!("{other:?}"),
    }
    assert_eq!(zk.call(&mut c, set_data("/zookeeper/config", b"x", -1)), Err(ErrorCode::NO_AUTH));
    assert_eq!(zk.call(&mut c, Request::GetAllChildrenNumber(path_req("/"))), Ok(Response::Count(3)));
}

#[test]
fn cversion_and_pzxid_arithmetic() {
    let (mut zk, mut c) = setup();
    for name in ["x", "y", "z"] {
        zk.call(&mut c, create(&format!("/a/{name}"), P)).unwrap();
    }
    let s = zk.stat("/a");
    assert_eq!((s.cversion, s.num_children, s.pzxid), (3, 3, zk.m.zxid()));
    zk.call(&mut c, delete("/a/y", -1)).unwrap();
    let s = zk.stat("/a");
    // Shown cversion = 2 × creates − numChildren = creates + deletes.
    assert_eq!((s.cversion, s.num_children, s.pzxid), (4, 2, zk.m.zxid()));
    // A failed child create moves nothing, but takes a zxid.
    let before = zk.stat("/a");
    assert_eq!(zk.call(&mut c, create("/a/x", P)), Err(ErrorCode::NODE_EXISTS));
    assert_eq!(zk.stat("/a"), before);
    // setData on a child does not touch the parent; mzxid of the parent stays.
    zk.call(&mut c, set_data("/a/x", b"1", -1)).unwrap();
    assert_eq!(zk.stat("/a"), before);
    // Root: "/a" and "/e" created on a fresh root (internal counter 2, three children).
    let root = zk.stat("/");
    assert_eq!((root.cversion, root.num_children), (1, 3));
}

#[test]
fn sequential_names_come_from_the_parent_counter() {
    let (mut zk, mut c) = setup();
    zk.call(&mut c, create("/q", P)).unwrap();
    let mut got = Vec::new();
    got.push(created(zk.call(&mut c, create("/q/lock-", ES))));
    zk.call(&mut c, create("/q/plain", P)).unwrap(); // counts
    assert_eq!(zk.call(&mut c, create("/q/plain", P)), Err(ErrorCode::NODE_EXISTS)); // does not
    got.push(created(zk.call(&mut c, create("/q/lock-", ES))));
    zk.call(&mut c, delete(&got[0], -1)).unwrap(); // does not
    got.push(created(zk.call(&mut c, create("/q/lock-", PS))));
    got.push(created(zk.call(&mut c, create("/q/", PS))));
    assert_eq!(got, ["/q/lock-0000000000", "/q/lock-0000000002", "/q/lock-0000000003", "/q/0000000004"]);
    let s = zk.stat("/q");
    assert_eq!((s.cversion + s.num_children) / 2, 5, "counter = (cversion + numChildren) / 2");
}

#[test]
fn zxids_count_writes_failed_or_not() {
    let (mut zk, mut c) = setup();
    let z0 = zk.m.zxid();
    let cases: Vec<(Request, i64)> = vec![
        (get_data("/a", false), 0),
        (exists("/nope", true), 0),
        (get_children("/", false), 0),
        (Request::Sync(path_req("/a")), 0),
        (create("/a/1", P), 1),
        (create("/a/1", P), 1),
        (create("/nope/1", P), 1),
        (set_data("/a", b"", 7), 1),
        (delete("/nope", -1), 1),
        (Request::SetAcl(SetAclRequest { path: "/a".into(), acl: Acl::open_unsafe(), version: -1 }), 1),
        (Request::Multi(vec![]), 1),
        (
            Request::Reconfig(zoolock_core::wire::ReconfigRequest {
                joining_servers: None,
                leaving_servers: None,
                new_members: None,
                cur_config_id: -1,
            }),
            1,
        ),
    ];
    let mut expect = z0;
    for (req, cost) in cases {
        let xid = zk.send(&mut c, req.clone());
        expect += cost;
        let zxid = c.log.iter().find_map(|m| match m {
            Msg::Reply { xid: x, zxid, .. } if *x == xid => Some(*zxid),
            _ => None,
        });
        assert_eq!(zxid, Some(expect), "{req:?}");
        let _ = zk.result(&mut c, xid);
    }
    // A ping answers with the last zxid and xid -2, whatever xid was sent.
    zk.send_xid(&mut c, 77, Request::Ping);
    assert_eq!(zk.take(&mut c), [Msg::Reply { xid: -2, zxid: expect, err: ErrorCode::OK, rsp: Some(Response::Empty) }]);
}

#[test]
fn reconfig_is_disabled() {
    let (mut zk, mut c) = setup();
    let req = Request::Reconfig(zoolock_core::wire::ReconfigRequest {
        joining_servers: None,
        leaving_servers: None,
        new_members: Some("server.1=x".into()),
        cur_config_id: -1,
    });
    assert_eq!(zk.call(&mut c, req), Err(ErrorCode::RECONFIG_DISABLED));
}

#[test]
fn small_reads() {
    let (mut zk, mut c) = setup();
    zk.call(&mut c, create("/a/b", P)).unwrap();
    zk.call(&mut c, create("/a/b/c", P)).unwrap();
    zk.call(&mut c, create("/a/e1", E)).unwrap();
    let mut other = zk.open();
    zk.call(&mut other, create("/a/e2", E)).unwrap();
    assert_eq!(zk.call(&mut c, Request::Sync(path_req("/whatever"))), Ok(Response::Path("/whatever".into())));
    assert_eq!(zk.call(&mut c, Request::GetAllChildrenNumber(path_req("/a"))), Ok(Response::Count(4)));
    assert_eq!(zk.call(&mut c, Request::GetAllChildrenNumber(path_req("/nope"))), Err(ErrorCode::NO_NODE));
    let eph = |r| match r {
        Ok(Response::Children(mut v)) => {
            v.sort();
            v
        }
        other => panic!("{other:?}"),
    };
    assert_eq!(eph(zk.call(&mut c, Request::GetEphemerals(path_req("")))), ["/a/e1", "/e"]);
    assert_eq!(eph(zk.call(&mut c, Request::GetEphemerals(path_req("/")))), ["/a/e1", "/e"]);
    assert_eq!(eph(zk.call(&mut c, Request::GetEphemerals(path_req("/a")))), ["/a/e1"]);
    assert_eq!(eph(zk.call(&mut c, Request::GetEphemerals(path_req("/a/e")))), ["/a/e1"]);
    assert_eq!(eph(zk.call(&mut other, Request::GetEphemerals(path_req("/")))), ["/a/e2"]);
    match zk.call(&mut c, get_children2("/a", false)) {
        Ok(Response::Children2 { mut children, stat }) => {
            children.sort();
            assert_eq!(children, ["b", "e1", "e2"]);
            assert_eq!(stat.num_children, 3);
        }
        other => panic!("{other:?}"),
    }
}

#[test]
fn acls_are_enforced() {
    let (mut zk, mut owner) = setup();
    assert_eq!(zk.call(&mut owner, auth("digest", "alice:secret")), Ok(Response::Empty));
    let auth_acl = vec![acl(31, "auth", "")];
    zk.call(&mut owner, with_acl("/private", auth_acl)).unwrap();
    zk.call(&mut owner, with_acl("/readable", vec![acl(1, "world", "anyone"), acl(31, "auth", "")])).unwrap();
    // The auth id was expanded to the digest id.
    let alice = format!("alice:{}", {
        let Ok(Response::Acl { acl, .. }) = zk.call(&mut owner, Request::GetAcl(path_req("/private"))) else {
            panic!()
        };
        assert_eq!(acl.len(), 1);
        assert_eq!(acl[0].id.scheme, "digest");
        acl[0].id.id.split_once(':').unwrap().1.to_string()
    });
    assert!(alice.ends_with('='), "base64 SHA-1: {alice}");

    let mut stranger = zk.open();
    let cases: Vec<(Request, Result<(), ErrorCode>)> = vec![
        (get_data("/private", false), Err(ErrorCode::NO_AUTH)),
        (get_children("/private", false), Err(ErrorCode::NO_AUTH)),
        (exists("/private", false), Ok(())),
        (Request::GetAcl(path_req("/private")), Err(ErrorCode::NO_AUTH)),
        (set_data("/private", b"x", -1), Err(ErrorCode::NO_AUTH)),
        (create("/private/x", P), Err(ErrorCode::NO_AUTH)),
        (get_data("/readable", false), Ok(())),
        (set_data("/readable", b"x", -1), Err(ErrorCode::NO_AUTH)),
        (
            Request::SetAcl(SetAclRequest { path: "/readable".into(), acl: Acl::open_unsafe(), version: -1 }),
            Err(ErrorCode::NO_AUTH),
        ),
    ];
    for (req, want) in cases {
        assert_eq!(zk.call(&mut stranger, req.clone()).map(|_| ()), want, "{req:?}");
    }
    // Without ADMIN, getACL masks digest ids.
    match zk.call(&mut stranger, Request::GetAcl(path_req("/readable"))) {
        Ok(Response::Acl { acl: got, .. }) => assert_eq!(got[1].id.id, "alice:x"),
        other => panic!("{other:?}"),
    }
    // The same credentials on another connection grant access.
    assert_eq!(zk.call(&mut stranger, auth("digest", "alice:secret")), Ok(Response::Empty));
    assert!(zk.call(&mut stranger, get_data("/private", false)).is_ok());
    // A wrong password is a different id.
    let mut eve = zk.open();
    zk.call(&mut eve, auth("digest", "alice:guess")).unwrap();
    assert_eq!(zk.call(&mut eve, get_data("/private", false)), Err(ErrorCode::NO_AUTH));
    // Deleting needs DELETE on the parent, not on the node.
    zk.call(&mut owner, create("/private/child", P)).unwrap();
    assert_eq!(zk.call(&mut eve, delete("/private/child", -1)), Err(ErrorCode::NO_AUTH));
    // ip ACLs match the configured client address.
    zk.call(&mut owner, with_acl("/local", vec![acl(31, "ip", "127.0.0.0/8")])).unwrap();
    zk.call(&mut owner, with_acl("/remote", vec![acl(31, "ip", "10.1.2.3")])).unwrap();
    assert!(zk.call(&mut eve, get_data("/local", false)).is_ok());
    assert_eq!(zk.call(&mut eve, get_data("/remote", false)), Err(ErrorCode::NO_AUTH));
    // Enforcement can be turned off.
    let mut open = Zk::with(ModelConfig::default().with_enforce_acls(false));
    let mut c = open.open();
    open.call(&mut c, with_acl("/r", vec![acl(1, "world", "anyone")])).unwrap();
    assert!(open.call(&mut c, set_data("/r", b"x", -1)).is_ok());
}

#[test]
fn set_acl_versions_and_errors() {
    let (mut zk, mut c) = setup();
    let set = |path: &str, acl: Vec<Acl>, version| Request::SetAcl(SetAclRequest { path: path.into(), acl, version });
    let s = stat_of(zk.call(&mut c, set("/a", vec![acl(31, "world", "anyone")], 0)));
    assert_eq!(s.aversion, 1);
    assert_eq!(zk.call(&mut c, set("/a", Acl::open_unsafe(), 0)), Err(ErrorCode::BAD_VERSION));
    assert_eq!(zk.call(&mut c, set("/nope", Acl::open_unsafe(), -1)), Err(ErrorCode::NO_NODE));
    // ACL validity is checked before the node lookup.
    assert_eq!(zk.call(&mut c, set("/nope", vec![], -1)), Err(ErrorCode::INVALID_ACL));
    assert_eq!(zk.call(&mut c, set("/a/", vec![], -1)), Err(ErrorCode::BAD_ARGUMENTS));
    // setACL does not touch mzxid or version.
    let s2 = zk.stat("/a");
    assert_eq!((s2.version, s2.mzxid), (0, s.mzxid));
}

#[test]
fn auth_packets_and_who_am_i() {
    let (mut zk, mut c) = setup();
    zk.send_xid(&mut c, -4, auth("digest", "bob:pw"));
    assert_eq!(zk.take(&mut c), [Msg::Reply { xid: -4, zxid: 0, err: ErrorCode::OK, rsp: Some(Response::Empty) }]);
    match zk.call(&mut c, Request::WhoAmI) {
        Ok(Response::WhoAmI(infos)) => {
            let got: Vec<(String, String)> = infos.into_iter().map(|i| (i.auth_scheme, i.user)).collect();
            assert_eq!(got, [("ip".into(), "127.0.0.1".into()), ("digest".into(), "bob".into())]);
        }
        other => panic!("{other:?}"),
    }
    zk.send_xid(&mut c, -4, auth("kerberos", "x"));
    assert_eq!(zk.take(&mut c), [Msg::Reply { xid: -4, zxid: 0, err: ErrorCode::AUTH_FAILED, rsp: None }]);
    assert!(zk.is_closed(&c));
    assert_eq!(zk.close_reason(&c), Some(CloseReason::AuthFailed));
}

#[test]
fn ttl_nodes_when_enabled() {
    let mut zk = Zk::with(ModelConfig::default().with_extended_types(true));
    let mut c = zk.open();
    let ttl = |path: &str, flags, ttl| {
        Request::CreateTtl(CreateTtlRequest { path: path.into(), data: None, acl: Acl::open_unsafe(), flags, ttl })
    };
    let t = CreateMode::PERSISTENT_WITH_TTL;
    assert_eq!(zk.call(&mut c, ttl("/t", t, 0)), Err(ErrorCode::BAD_ARGUMENTS));
    assert_eq!(zk.call(&mut c, ttl("/t", t, 1 << 48)), Err(ErrorCode::BAD_ARGUMENTS));
    assert_eq!(zk.call(&mut c, ttl("/t", P, 100)), Err(ErrorCode::BAD_ARGUMENTS));
    assert_eq!(zk.call(&mut c, create("/t", t)), Err(ErrorCode::BAD_ARGUMENTS), "create (1) carries no TTL");
    let path = created(zk.call(&mut c, ttl("/t-", CreateMode::PERSISTENT_SEQUENTIAL_WITH_TTL, 1000)));
    assert_eq!(path, "/t-0000000000");
    assert_eq!(zk.stat(&path).ephemeral_owner, 0, "the TTL marker is hidden");
    zk.call(&mut c, ttl("/busy", t, 1000)).unwrap();
    zk.call(&mut c, create("/busy/child", P)).unwrap();
    zk.advance(1000);
    assert!(zk.m.node(&path).is_some(), "not before the TTL has passed");
    zk.advance(1);
    zk.settle();
    assert!(zk.m.node(&path).is_none(), "reaped once empty past its TTL");
    assert!(zk.m.node("/busy").is_some(), "a TTL node with children stays");
    // Disabled (the default): Unimplemented, connection open.
    let mut zk = Zk::new();
    let mut c = zk.open();
    assert_eq!(zk.call(&mut c, ttl("/t", t, 100)), Err(ErrorCode::UNIMPLEMENTED));
    assert!(!zk.is_closed(&c));
}

#[test]
fn standalone_check() {
    let (mut zk, mut c) = setup();
    let check = |path: &str, version| Request::Check(CheckVersionRequest { path: path.into(), version });
    let before = zk.m.zxid();
    // 3.8.0: a passing check is applied but never answered.
    let xid = zk.send(&mut c, check("/a", 0));
    assert!(zk.take(&mut c).is_empty(), "no reply to xid {xid}");
    assert_eq!(zk.call(&mut c, check("/a", 3)), Err(ErrorCode::BAD_VERSION));
    assert_eq!(zk.call(&mut c, check("/nope", -1)), Err(ErrorCode::NO_NODE));
    assert_eq!(zk.call(&mut c, check("/a/", -1)), Err(ErrorCode::BAD_ARGUMENTS));
    assert_eq!(zk.m.zxid(), before + 4, "3.8.0 runs check as a write");
    assert!(!zk.is_closed(&c));
    let mut zk = Zk::with(ModelConfig::default().with_standalone_check(StandaloneCheck::Reject));
    let mut c = zk.open();
    let xid = zk.send(&mut c, check("/", -1));
    assert_eq!(zk.take(&mut c), [Msg::Reply { xid, zxid: -1, err: ErrorCode::UNIMPLEMENTED, rsp: None }]);
    assert_eq!(zk.close_reason(&c), Some(CloseReason::Unimplemented(OpCode::CHECK)));
}

#[test]
fn delete_container_from_a_client_is_bad_arguments() {
    let (mut zk, mut c) = setup();
    zk.call(&mut c, container("/box")).unwrap();
    let before = zk.m.zxid();
    for p in ["/box", "/a", "/nope", "/zookeeper"] {
        assert_eq!(zk.call(&mut c, Request::DeleteContainer(path_req(p))), Err(ErrorCode::BAD_ARGUMENTS), "{p}");
    }
    assert_eq!(zk.m.zxid(), before + 4, "each one a write");
    assert!(zk.m.node("/box").is_some());
}

#[test]
fn container_flag_and_opcode() {
    let (mut zk, mut c) = setup();
    // The opcode decides: flags 4 with create (1) make a persistent node.
    match zk.call(&mut c, Request::Create(create_req("/p4", b"", CreateMode::CONTAINER))) {
        Ok(Response::Path(p)) => assert_eq!(p, "/p4"),
        other => panic!("{other:?}"),
    }
    zk.call(&mut c, create("/p4/x", P)).unwrap();
    zk.call(&mut c, delete("/p4/x", -1)).unwrap();
    zk.advance(1);
    zk.settle();
    assert!(zk.m.node("/p4").is_some(), "not a container");
    // createContainer answers path + Stat.
    match zk.call(&mut c, container("/box")) {
        Ok(Response::Create2 { path, stat }) => {
            assert_eq!(path, "/box");
            assert_eq!(stat.ephemeral_owner, 0);
        }
        other => panic!("{other:?}"),
    }
}

#[test]
fn unknown_opcodes_close_after_unimplemented() {
    for op in [10i32, 0, -1, 999, 102, -10] {
        let mut zk = Zk::new();
        let mut c = zk.open();
        let mut frame = BytesMut::new();
        frame.extend_from_slice(&8i32.to_be_bytes());
        frame.extend_from_slice(&5i32.to_be_bytes());
        frame.extend_from_slice(&op.to_be_bytes());
        // A request pipelined behind it is never answered.
        frame.extend_from_slice(&framed(&RequestFrame::new(Xid(6), get_data("/", false))));
        c.expect_op(5, OpCode(op));
        zk.send_bytes(&mut c, &frame);
        assert_eq!(zk.take(&mut c), [Msg::Reply { xid: 5, zxid: -1, err: ErrorCode::UNIMPLEMENTED, rsp: None }]);
        assert!(zk.is_closed(&c), "op {op}");
        assert_eq!(zk.close_reason(&c), Some(CloseReason::Unimplemented(OpCode(op))));
        // The session survives the close.
        assert_eq!(zk.m.sessions(), [c.session]);
    }
}

#[test]
fn malformed_input() {
    // A body that does not decode: MarshallingError, connection open.
    let mut zk = Zk::new();
    let mut c = zk.open();
    let mut frame = BytesMut::new();
    frame.extend_from_slice(&11i32.to_be_bytes());
    frame.extend_from_slice(&3i32.to_be_bytes());
    frame.extend_from_slice(&1i32.to_be_bytes()); // getData
    frame.extend_from_slice(&[0, 0, 0]); // truncated path length
    c.expect_op(3, OpCode::GET_DATA);
    zk.send_bytes(&mut c, &frame);
    assert_eq!(
        zk.take(&mut c),
        [Msg::Reply { xid: 3, zxid: zk.m.zxid(), err: ErrorCode::MARSHALLING_ERROR, rsp: None }]
    );
    assert!(!zk.is_closed(&c));
    assert!(zk.call(&mut c, get_data("/", false)).is_ok());
    // A frame shorter than a request header closes.
    zk.send_bytes(&mut c, &[0, 0, 0, 3, 1, 2, 3]);
    assert!(zk.is_closed(&c));
    assert!(matches!(zk.close_reason(&c), Some(CloseReason::Malformed(_))));
    // A length above jute.maxbuffer closes at once, before the body arrives.
    let mut c = zk.open();
    zk.send_bytes(&mut c, &0x0010_0000i32.to_be_bytes());
    assert!(zk.is_closed(&c));
    // A negative length too.
    let mut c = zk.open();
    zk.send_bytes(&mut c, &(-2i32).to_be_bytes());
    assert!(zk.is_closed(&c));
    // A four-letter word before the handshake is just a huge length.
    let mut c = zk.raw();
    zk.send_bytes(&mut c, b"ruok");
    assert!(zk.is_closed(&c));
    assert!(zk.take(&mut c).is_empty());
    // A ConnectRequest that does not decode.
    let mut c = zk.raw();
    zk.send_bytes(&mut c, &[0, 0, 0, 2, 0, 0]);
    assert!(zk.is_closed(&c));
    // Input after the close is ignored.
    zk.send_bytes(&mut c, &framed(&RequestFrame::new(Xid(1), get_data("/", false))));
    assert!(zk.take(&mut c).is_empty());
}

#[test]
fn frames_split_anywhere() {
    let mut zk = Zk::new();
    let mut c = zk.raw();
    let mut bytes = framed(&connect_request(0, Bytes::from_static(&[0; 16]), 10_000, 0)).to_vec();
    bytes.extend_from_slice(&framed(&RequestFrame::new(Xid(1), create("/x", P))));
    bytes.extend_from_slice(&framed(&RequestFrame::new(Xid(2), get_children("/", false))));
    let mut buf = BytesMut::new();
    for b in bytes {
        buf.extend_from_slice(&[b]);
        zk.m.handle_bytes(zk.now, c.id, &mut buf);
    }
    assert!(buf.is_empty());
    // Register the ops for decoding, then read.
    let _ = &mut c;
    let mut out = BytesMut::new();
    zk.m.poll_transmit(c.id, &mut out);
    let decoder = FrameDecoder::new(usize::MAX);
    let frames: Vec<_> = std::iter::from_fn(|| decoder.decode(&mut out).unwrap()).collect();
    assert_eq!(frames.len(), 3);
    let ops = [(1, OpCode::CREATE), (2, OpCode::GET_CHILDREN)];
    let op_for = |x: Xid| ops.iter().find(|(i, _)| *i == x.0).map(|(_, o)| *o);
    let r1 = ServerMessage::decode(&frames[1], op_for).unwrap();
    let r2 = ServerMessage::decode(&frames[2], op_for).unwrap();
    assert_eq!(r1.header().xid, Xid(1));
    match r2 {
        ServerMessage::Reply { response: Some(Response::Children(mut c)), .. } => {
            c.sort();
            assert_eq!(c, ["x", "zookeeper"], "a pipelined read sees the write before it");
        }
        other => panic!("{other:?}"),
    }
}

#[test]
fn watch_requests_with_bad_types() {
    let (mut zk, mut c) = setup();
    for t in [0, 4, 5, 9] {
        let req = Request::CheckWatches(WatchesRequest { path: "/a".into(), watcher_type: WatcherType(t) });
        assert_eq!(zk.call(&mut c, req), Err(ErrorCode::MARSHALLING_ERROR), "type {t}");
    }
    let req = Request::AddWatch(zoolock_core::wire::AddWatchRequest {
        path: "/a".into(),
        mode: zoolock_core::wire::AddWatchMode(2),
    });
    assert_eq!(zk.call(&mut c, req), Err(ErrorCode::MARSHALLING_ERROR));
}

mod props {
    use proptest::prelude::*;

    use super::*;

    const PATHS: [&str; 6] = ["/", "/a", "/a/b", "/a/b/c", "/c", "/a/"];

    fn request() -> impl Strategy<Value = Request> {
        let path = proptest::sample::select(&PATHS[..]).prop_map(str::to_string);
        let flags = (0i32..8).prop_map(CreateMode);
        prop_oneof![
            (path.clone(), flags.clone()).prop_map(|(p, f)| create(&p, f)),
            (path.clone(), flags.clone()).prop_map(|(p, f)| create2(&p, f)),
            path.clone().prop_map(|p| container(&p)),
            (path.clone(), -1i32..2).prop_map(|(p, v)| delete(&p, v)),
            (path.clone(), -1i32..2).prop_map(|(p, v)| set_data(&p, b"d", v)),
            (path.clone(), any::<bool>()).prop_map(|(p, w)| exists(&p, w)),
            (path.clone(), any::<bool>()).prop_map(|(p, w)| get_data(&p, w)),
            (path.clone(), any::<bool>()).prop_map(|(p, w)| get_children2(&p, w)),
            (path.clone(), 0i32..6)
                .prop_map(|(p, t)| Request::RemoveWatches(WatchesRequest { path: p, watcher_type: WatcherType(t) })),
            proptest::collection::vec((path, flags), 0..4)
                .prop_map(|ops| Request::Multi(ops.into_iter().map(|(p, f)| create(&p, f)).collect())),
            Just(Request::Ping),
        ]
    }

    proptest! {
        #![proptest_config(ProptestConfig::with_cases(128))]

        /// Random bytes never panic the model, before or after a handshake.
        #[test]
        fn random_bytes_never_panic(handshake in any::<bool>(), chunks in proptest::collection::vec(proptest::collection::vec(any::<u8>(), 0..64), 0..8)) {
            let mut zk = Zk::new();
            let mut c = if handshake { zk.open() } else { zk.raw() };
            for chunk in chunks {
                let mut buf = BytesMut::from(&chunk[..]);
                zk.m.handle_bytes(zk.now, c.id, &mut buf);
                let mut out = BytesMut::new();
                zk.m.poll_transmit(c.id, &mut out);
                while zk.m.poll_close().is_some() {}
            }
            zk.advance(60_000);
            let _ = &mut c;
        }

        /// Random requests from two sessions keep the tree consistent:
        /// every child exists, numChildren matches, cversion + numChildren is
        /// even, and ephemerals belong to live sessions.
        #[test]
        fn random_requests_keep_the_tree_consistent(ops in proptest::collection::vec((any::<bool>(), request()), 1..40)) {
            let mut zk = Zk::new();
            let mut a = zk.open();
            let mut b = zk.open();
            for (first, req) in ops {
                let c = if first { &mut a } else { &mut b };
                zk.send(c, req);
                let _ = zk.take(c);
                zk.settle();
            }
            for path in zk.m.paths() {
                let node = zk.m.node(&path).unwrap();
                let children = zk.m.children(&path).unwrap();
                prop_assert_eq!(node.stat.num_children as usize, children.len());
                prop_assert_eq!((node.stat.cversion + node.stat.num_children) % 2, 0);
                for child in children {
                    let full = if path == "/" { format!("/{child}") } else { format!("{path}/{child}") };
                    prop_assert!(zk.m.node(&full).is_some());
                }
                if node.stat.ephemeral_owner != 0 {
                    prop_assert!(zk.m.sessions().contains(&node.stat.ephemeral_owner));
                }
            }
        }
    }
}
