//! Sessions: handshake, negotiated timeouts, reconnect, wrong passwords,
//! closeSession, expiry, ephemerals, the sessionless timeout.

use std::time::Duration;

use bytes::Bytes;
use zoolock_core::wire::{ConnectRequest, CreateMode, ErrorCode, EventType, Request, Response};
use zoolock_model::{CloseReason, ModelConfig};

use crate::*;

const E: CreateMode = CreateMode::EPHEMERAL;
const P: CreateMode = CreateMode::PERSISTENT;

fn zeros() -> Bytes {
    Bytes::from_static(&[0; 16])
}

#[test]
fn handshake_negotiates_and_issues_ids() {
    let mut zk = Zk::new();
    let cases = [(30_000, 30_000), (1, 4_000), (100_000, 40_000), (-5, 4_000), (4_000, 4_000)];
    for (i, (asked, got)) in cases.into_iter().enumerate() {
        let zxid = zk.m.zxid();
        let c = zk.open_with(connect_request(0, zeros(), asked, 0));
        let rsp = c.connect.clone().unwrap();
        assert_eq!(rsp.timeout_ms, got, "asked {asked}");
        assert_eq!(rsp.session_id, 0x0100_0000_0000_0000 + i as i64 + 1);
        assert_eq!(rsp.passwd.as_ref().map(Bytes::len), Some(16));
        assert_ne!(rsp.passwd.as_deref(), Some(&[0u8; 16][..]));
        assert_eq!(rsp.read_only, Some(false));
        assert_eq!(zk.m.zxid(), zxid + 1, "createSession is a transaction");
        assert_eq!(zk.m.session_of(c.id), Some(rsp.session_id));
    }
    // A pre-3.4 client (no readOnly byte) gets the 36-byte answer.
    let mut req = connect_request(0, zeros(), 10_000, 0);
    req.read_only = None;
    let c = zk.open_with(req);
    assert_eq!(c.connect.unwrap().read_only, None);
    // Tick and bounds are configurable.
    let mut zk = Zk::with(ModelConfig::default().with_tick(Duration::from_millis(100)));
    let c = zk.open_with(connect_request(0, zeros(), 60_000, 0));
    assert_eq!(c.timeout_ms, 2_000);
    let bounds = ModelConfig::default().with_session_timeout_bounds(Duration::from_secs(1), Duration::from_secs(2));
    let mut zk = Zk::with(bounds);
    assert_eq!(zk.open_with(connect_request(0, zeros(), 500, 0)).timeout_ms, 1_000);
    // Passwords differ per session and seed.
    let mut a = Zk::with(ModelConfig::default().with_seed(1));
    let mut b = Zk::with(ModelConfig::default().with_seed(2));
    let (pa, pb) = (a.open().passwd, b.open().passwd);
    assert_ne!(pa, pb);
    assert_ne!(a.open().passwd, pa);
}

#[test]
fn reconnect_rebinds_the_session() {
    let mut zk = Zk::new();
    let mut c = zk.open();
    zk.call(&mut c, create("/e", E)).unwrap();
    zk.call(&mut c, get_data("/e", true)).unwrap();
    let zxid = zk.m.zxid();
    let mut c2 = zk.open_with(connect_request(c.session, c.passwd.clone(), 10_000, zxid));
    let rsp = c2.connect.clone().unwrap();
    assert_eq!((rsp.session_id, rsp.passwd.as_ref(), rsp.timeout_ms), (c.session, Some(&c.passwd), 10_000));
    assert_eq!(zk.m.zxid(), zxid, "re-validation is no transaction");
    // The old connection is closed; its watches are gone; the ephemeral stays.
    assert!(zk.is_closed(&c));
    assert_eq!(zk.close_reason(&c), Some(CloseReason::SessionMoved(c.session)));
    assert_eq!(zk.m.watch_count(), 0);
    assert_eq!(zk.m.ephemerals(c.session), ["/e"]);
    assert_eq!(zk.m.conn_of(c.session), Some(c2.id));
    assert!(zk.call(&mut c2, get_data("/e", false)).is_ok());
}

#[test]
fn invalid_sessions_get_the_expired_answer() {
    let mut zk = Zk::new();
    let c = zk.open();
    let mut wrong = c.passwd.to_vec();
    wrong[0] ^= 1;
    let cases: Vec<(&str, ConnectRequest)> = vec![
        ("wrong password", connect_request(c.session, Bytes::from(wrong), 10_000, 0)),
        ("zero password", connect_request(c.session, zeros(), 10_000, 0)),
        ("null password", ConnectRequest { passwd: None, ..connect_request(c.session, zeros(), 10_000, 0) }),
        ("unknown session", connect_request(c.session + 100, zeros(), 10_000, 0)),
    ];
    for (what, req) in cases {
        let mut bad = zk.open_with(req);
        let rsp = bad.connect.clone().unwrap();
        assert_eq!((rsp.timeout_ms, rsp.session_id), (0, 0), "{what}");
        assert_eq!(rsp.passwd.as_deref(), Some(&[0u8; 16][..]), "{what}");
        assert!(zk.is_closed(&bad), "{what}");
        assert_eq!(zk.close_reason(&bad), Some(CloseReason::InvalidSession), "{what}");
        assert!(zk.take(&mut bad).is_empty());
    }
    // Even a wrong password first closes the connection bound to the session
    // (ZooKeeper closes before it checks), but the session lives on.
    assert!(zk.is_closed(&c));
    assert_eq!(zk.m.sessions(), [c.session]);
}

#[test]
fn a_client_ahead_of_the_server_is_refused() {
    let mut zk = Zk::new();
    let mut c = zk.open_with(connect_request(0, zeros(), 10_000, 99));
    assert!(c.connect.is_none(), "no answer at all");
    assert!(zk.is_closed(&c));
    assert_eq!(zk.close_reason(&c), Some(CloseReason::ClientAhead { client: 99, server: 0 }));
    assert!(zk.take(&mut c).is_empty());
    assert!(zk.m.sessions().is_empty());
}

#[test]
fn close_session_deletes_ephemerals_then_answers_and_closes() {
    let (mut zk, mut c, mut w) = Zk::writer_and_watcher(
        [create("/p", P), create("/p/e1", E), create("/p/e2", E)],
        [exists("/p/e1", true), get_children("/p", true)],
    );
    let xid = zk.send(&mut c, Request::CloseSession);
    let zxid = zk.m.zxid();
    assert_eq!(zk.take(&mut c), [Msg::Reply { xid, zxid, err: ErrorCode::OK, rsp: Some(Response::Empty) }]);
    assert!(zk.is_closed(&c));
    assert_eq!(zk.close_reason(&c), Some(CloseReason::SessionClosed));
    assert!(zk.m.sessions().iter().all(|s| *s != c.session));
    assert_eq!(zk.m.children("/p"), Some(vec![]));
    // Both deletes carry the closeSession zxid.
    assert_eq!(zk.stat("/p").pzxid, zxid);
    assert_eq!(zk.take(&mut w), [note(EventType::NODE_DELETED, "/p/e1"), note(EventType::NODE_CHILDREN_CHANGED, "/p")]);
    // The session cannot be resumed.
    let again = zk.open_with(connect_request(c.session, c.passwd.clone(), 10_000, zxid));
    assert_eq!(again.connect.unwrap().timeout_ms, 0);
}

#[test]
fn sessions_expire_without_traffic() {
    let mut zk = Zk::with(ModelConfig::default());
    let mut c = zk.open_with(connect_request(0, zeros(), 6_000, 0));
    let mut w = zk.open_with(connect_request(0, zeros(), 40_000, 0));
    zk.call(&mut c, create("/e", E)).unwrap();
    zk.call(&mut w, exists("/e", true)).unwrap();
    assert_eq!(zk.m.poll_timeout(), Some(zk.now + Duration::from_millis(6_000)));
    // Pings keep it alive: each packet pushes the deadline back.
    for _ in 0..4 {
        zk.advance(5_000);
        zk.send(&mut c, Request::Ping);
        let _ = zk.take(&mut c);
    }
    assert_eq!(zk.m.poll_timeout(), Some(zk.now + Duration::from_millis(6_000)));
    zk.advance(5_999);
    assert!(!zk.is_closed(&c));
    let zxid = zk.m.zxid();
    zk.advance(1);
    assert!(zk.is_closed(&c));
    assert_eq!(zk.close_reason(&c), Some(CloseReason::SessionExpired(c.session)));
    assert!(zk.m.node("/e").is_none());
    assert_eq!(zk.m.zxid(), zxid + 1, "expiry is a closeSession transaction");
    assert_eq!(zk.take(&mut w), [note(EventType::NODE_DELETED, "/e")]);
    assert!(zk.take(&mut c).is_empty(), "no reply: the connection just closes");
    // A reconnect now gets the expired answer.
    let again = zk.open_with(connect_request(c.session, c.passwd.clone(), 6_000, zk.m.zxid()));
    assert_eq!(again.connect.unwrap().timeout_ms, 0);
}

#[test]
fn a_disconnected_session_expires_and_a_reconnect_in_time_saves_it() {
    let mut zk = Zk::new();
    let mut c = zk.open_with(connect_request(0, zeros(), 10_000, 0));
    zk.call(&mut c, create("/e", E)).unwrap();
    zk.m.disconnect(zk.now, c.id);
    zk.advance(9_000);
    let c2 = zk.open_with(connect_request(c.session, c.passwd.clone(), 10_000, zk.m.zxid()));
    assert_eq!(c2.connect.unwrap().timeout_ms, 10_000);
    zk.advance(9_000);
    assert!(zk.m.node("/e").is_some(), "re-validation touched the session");
    zk.m.disconnect(zk.now, c2.id);
    zk.advance(10_000);
    assert!(zk.m.node("/e").is_none());
    assert!(zk.m.sessions().is_empty());
    assert_eq!(zk.m.poll_timeout(), None);
}

#[test]
fn expire_session_fault() {
    let mut zk = Zk::new();
    let mut c = zk.open();
    zk.call(&mut c, create("/e", E)).unwrap();
    assert!(zk.m.expire_session(zk.now, c.session));
    assert!(!zk.m.expire_session(zk.now, c.session));
    assert!(zk.is_closed(&c));
    assert!(zk.m.node("/e").is_none());
}

#[test]
fn sessionless_connections_time_out() {
    let mut zk = Zk::new();
    let c = zk.raw();
    assert_eq!(zk.m.poll_timeout(), Some(zk.now + Duration::from_secs(10)));
    zk.advance(10_000);
    assert!(zk.is_closed(&c));
    assert_eq!(zk.close_reason(&c), Some(CloseReason::HandshakeTimeout));
    assert_eq!(zk.m.poll_timeout(), None);
}

#[test]
fn ephemerals_of_each_session() {
    let (mut zk, mut a, mut b) = Zk::two_sessions();
    zk.call(&mut a, create("/a1", E)).unwrap();
    zk.call(&mut b, create("/b1", E)).unwrap();
    zk.call(&mut a, create("/a2", CreateMode::EPHEMERAL_SEQUENTIAL)).unwrap();
    assert_eq!(zk.m.ephemerals(a.session), ["/a1", "/a20000000002"]);
    zk.call(&mut b, delete("/a1", -1)).unwrap();
    assert_eq!(zk.m.ephemerals(a.session), ["/a20000000002"]);
    zk.call(&mut a, Request::CloseSession).unwrap();
    assert_eq!(zk.m.ephemerals(a.session), Vec::<String>::new());
    assert_eq!(zk.m.ephemerals(b.session), ["/b1"]);
}
