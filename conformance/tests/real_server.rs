//! Against the real ZooKeeper from `ZOOLOCK_TEST_CONNECT` (started by
//! `.ci/run`): the codec on live bytes, and the session machine driven over
//! blocking TCP. Skipped, with the reason printed, when the variable is unset;
//! failing when it is set and the server is unreachable.

use std::time::Duration;

use bytes::Bytes;
use zoolock_conformance::blocking::BlockingDriver;
use zoolock_core::wire::{
    Acl, CheckVersionRequest, ConnectResponse, CreateMode, CreateRequest, DeleteRequest, Encode, ErrorCode, EventType,
    MultiResult, OpCode, PathWatchRequest, Request, RequestFrame, Response, ServerMessage, SetDataRequest,
};
use zoolock_core::{
    ConnectString, ConnectionState, Op, RequestError, RequestId, Session, SessionConfig, SessionEvent, SessionStatus,
    WatchEvent, WatcherId, ZkPath,
};
use zoolock_testkit::raw::RawConn;

/// A raw connection that checks what it reads re-encodes byte-identically.
struct Raw(RawConn);

impl Raw {
    fn connect(addr: &str, session_id: i64, passwd: Bytes) -> (Raw, ConnectResponse) {
        let (conn, resp, frame) = RawConn::connect(addr, session_id, passwd);
        assert_eq!(resp.to_bytes(), frame, "ConnectResponse re-encodes byte-identically");
        (Raw(conn), resp)
    }

    fn read_frame(&mut self) -> Option<Bytes> {
        self.0.read_frame()
    }

    /// Sends one request and returns its reply, checking the golden property:
    /// the live reply decodes completely and re-encodes to the same bytes.
    fn call(&mut self, request: Request) -> (ErrorCode, Option<Response>) {
        let xid = self.0.next_xid();
        let op = request.op_code();
        self.0.write(&RequestFrame::new(xid, request));
        let frame = self.read_frame().expect("reply");
        let msg = ServerMessage::decode(&frame, |x| (x == xid).then_some(op)).unwrap();
        assert_eq!(msg.to_bytes(), frame, "{op} reply re-encodes byte-identically");
        match msg {
            ServerMessage::Reply { header, response } => {
                assert_eq!(header.xid, xid);
                (header.err, response)
            }
            other => panic!("unexpected {other:?}"),
        }
    }
}

fn create(path: &str, mode: CreateMode) -> Request {
    Request::Create2(CreateRequest {
        path: path.into(),
        data: Some(Bytes::from_static(b"d")),
        acl: Acl::open_unsafe(),
        flags: mode,
    })
}

fn unique(prefix: &str) -> String {
    let nanos = std::time::SystemTime::now().duration_since(std::time::UNIX_EPOCH).unwrap().as_nanos();
    format!("/{prefix}-{}-{nanos}", std::process::id())
}

#[test]
fn codec_round_trips_live_replies() {
    let Some(addr) = zoolock_testkit::real_server("codec_round_trips_live_replies") else { return };
    let (mut raw, resp) = Raw::connect(&addr, 0, Bytes::from_static(&[0; 16]));
    assert!(resp.timeout_ms > 0 && resp.session_id != 0);
    let base = unique("zoolock-codec");

    let (err, r) = raw.call(create(&base, CreateMode::PERSISTENT));
    assert_eq!(err, ErrorCode::OK);
    let Some(Response::Create2 { path, stat }) = r else { panic!("{r:?}") };
    assert_eq!(path, base);
    assert!(stat.czxid > 0 && stat.czxid == stat.mzxid);

    let (err, r) = raw.call(create(&format!("{base}/lock-"), CreateMode::EPHEMERAL_SEQUENTIAL));
    assert_eq!(err, ErrorCode::OK);
    let Some(Response::Create2 { path, stat }) = r else { panic!("{r:?}") };
    assert_eq!(path, format!("{base}/lock-0000000000"));
    assert_eq!(stat.ephemeral_owner, resp.session_id);

    let (err, r) = raw.call(Request::GetChildren2(PathWatchRequest { path: base.clone(), watch: false }));
    assert_eq!(err, ErrorCode::OK);
    assert!(matches!(r, Some(Response::Children2 { ref children, .. }) if children == &["lock-0000000000"]));

    let (err, _) = raw.call(create(&base, CreateMode::PERSISTENT));
    assert_eq!(err, ErrorCode::NODE_EXISTS);
    let (err, r) = raw.call(Request::GetData(PathWatchRequest { path: format!("{base}/missing"), watch: false }));
    assert_eq!((err, r), (ErrorCode::NO_NODE, None));

    let (err, r) = raw.call(Request::SetData(SetDataRequest {
        path: base.clone(),
        data: Some(Bytes::from_static(b"xyz")),
        version: 0,
    }));
    assert_eq!(err, ErrorCode::OK);
    assert!(matches!(r, Some(Response::Stat(s)) if s.version == 1 && s.data_length == 3));

    // A failing multi: per-op results, header err 0.
    let (err, r) = raw.call(Request::Multi(vec![
        create(&format!("{base}/m"), CreateMode::PERSISTENT),
        Request::Check(CheckVersionRequest { path: base.clone(), version: 99 }),
        Request::Delete(DeleteRequest { path: format!("{base}/m"), version: -1 }),
    ]));
    assert_eq!(err, ErrorCode::OK);
    let Some(Response::Multi(results)) = r else { panic!("{r:?}") };
    assert_eq!(
        results,
        [
            MultiResult::Error(ErrorCode::OK),
            MultiResult::Error(ErrorCode::BAD_VERSION),
            MultiResult::Error(ErrorCode::RUNTIME_INCONSISTENCY)
        ]
    );
    assert_eq!(MultiResult::first_failure(&results), Some((1, ErrorCode::BAD_VERSION)));

    // A successful multi.
    let (err, r) = raw.call(Request::Multi(vec![
        create(&format!("{base}/m"), CreateMode::PERSISTENT),
        Request::Delete(DeleteRequest { path: format!("{base}/m"), version: -1 }),
    ]));
    assert_eq!(err, ErrorCode::OK);
    let Some(Response::Multi(results)) = r else { panic!("{r:?}") };
    // ZooKeeper 3.8.0 answers a create2 inside multi with a plain create
    // result (type 1, path only), not the Create2Response type 15.
    assert!(matches!(&results[0], MultiResult::Ok { op: OpCode::CREATE, response: Response::Path(_) }), "{results:?}");
    assert!(matches!(&results[1], MultiResult::Ok { op: OpCode::DELETE, response: Response::Empty }));

    let (err, _) = raw.call(Request::Delete(DeleteRequest { path: base.clone(), version: -1 }));
    assert_eq!(err, ErrorCode::NOT_EMPTY);
    let (err, _) = raw.call(Request::Delete(DeleteRequest { path: format!("{base}/lock-0000000000"), version: -1 }));
    assert_eq!(err, ErrorCode::OK);
    let (err, _) = raw.call(Request::Delete(DeleteRequest { path: base.clone(), version: -1 }));
    assert_eq!(err, ErrorCode::OK);

    let (err, _) = raw.call(Request::CloseSession);
    assert_eq!(err, ErrorCode::OK);
    assert_eq!(raw.read_frame(), None, "server closes after closeSession");
}

#[test]
fn wrong_password_gets_the_expired_answer() {
    let Some(addr) = zoolock_testkit::real_server("wrong_password_gets_the_expired_answer") else { return };
    let (mut live, resp) = Raw::connect(&addr, 0, Bytes::from_static(&[0; 16]));
    let (_, answer) = Raw::connect(&addr, resp.session_id, Bytes::from_static(&[9; 16]));
    assert!(answer.is_expired(), "{answer:?}");
    assert_eq!(answer.session_id, 0);
    assert_eq!(answer.passwd.as_deref(), Some(&[0u8; 16][..]));
    // The attempt also cut the session's live connection, but the session
    // itself survives: the right password resumes it.
    assert_eq!(live.read_frame(), None);
    let (mut resumed, again) = Raw::connect(&addr, resp.session_id, resp.passwd.clone().unwrap());
    assert_eq!(again.session_id, resp.session_id);
    assert_eq!(resumed.call(Request::CloseSession).0, ErrorCode::OK);
}

fn session_driver(addr: &str, seed: u64) -> BlockingDriver {
    let cs = ConnectString::parse(addr).unwrap();
    let config = SessionConfig::new(cs, seed).with_session_timeout(Duration::from_secs(6));
    BlockingDriver::new(|now| Session::new(config, now))
}

fn reply_to(id: RequestId) -> impl FnMut(&SessionEvent) -> bool {
    move |e| matches!(e, SessionEvent::Reply { id: got, .. } if *got == id)
}

fn result_of(events: &[SessionEvent], id: RequestId) -> Result<Response, RequestError> {
    events
        .iter()
        .find_map(|e| match e {
            SessionEvent::Reply { id: got, result } if *got == id => Some(result.clone()),
            _ => None,
        })
        .expect("reply")
}

fn call(
    d: &mut BlockingDriver,
    op: Op,
    watcher: Option<WatcherId>,
) -> (Result<Response, RequestError>, Vec<SessionEvent>) {
    let now = d.now();
    let id = d.machine().submit(now, op, watcher).unwrap();
    let events = d.run_until(Duration::from_secs(10), reply_to(id)).unwrap();
    (result_of(&events, id), events)
}

/// Runs `d` until it reports a watch event, which must be `watcher`'s
/// `event_type` at `path`.
fn expect_watch(d: &mut BlockingDriver, watcher: WatcherId, event_type: EventType, path: &str) {
    let events = d.run_until(Duration::from_secs(10), |e| matches!(e, SessionEvent::Watch { .. })).unwrap();
    let want = SessionEvent::Watch { watcher, event: WatchEvent { event_type, path: path.into() } };
    assert_eq!(events.last(), Some(&want));
}

#[test]
fn session_serves_requests_watches_chroot_and_close() {
    let Some(addr) = zoolock_testkit::real_server("session_serves_requests_watches_chroot_and_close") else { return };
    let root = unique("zoolock-session");
    let root_path = ZkPath::new(&root).unwrap();

    // Session A: plain, creates the chroot.
    let mut a = session_driver(&addr, 1);
    let events = a.run_until(Duration::from_secs(10), |e| matches!(e, SessionEvent::State(_))).unwrap();
    assert_eq!(events.last(), Some(&SessionEvent::State(ConnectionState::Connected)));
    let (r, _) = call(&mut a, Op::create(&root_path, Bytes::new(), Acl::open_unsafe(), CreateMode::PERSISTENT), None);
    assert!(r.is_ok(), "{r:?}");

    // Session B: chrooted at `root`.
    let mut b = session_driver(&format!("{addr}{root}"), 2);
    let lock = ZkPath::new_sequential_prefix("/lock-").unwrap();
    let (r, _) = call(
        &mut b,
        Op::create(&lock, Bytes::from_static(b"b"), Acl::open_unsafe(), CreateMode::EPHEMERAL_SEQUENTIAL),
        None,
    );
    let Ok(Response::Create2 { path, stat }) = r else { panic!("{r:?}") };
    assert_eq!(path, "/lock-0000000000", "chroot stripped from the reply");
    assert_eq!(stat.ephemeral_owner, b.machine().session_id());
    let node = ZkPath::new(&path).unwrap();

    // B watches its node; A changes it through the full path.
    let (r, _) = call(&mut b, Op::get_data(&node, true), Some(WatcherId(5)));
    assert!(matches!(r, Ok(Response::Data { ref data, .. }) if data.as_deref() == Some(&b"b"[..])), "{r:?}");
    let full = ZkPath::new(&format!("{root}/lock-0000000000")).unwrap();
    let (r, _) = call(&mut a, Op::set_data(&full, Bytes::from_static(b"__REVOKE__"), None), None);
    assert!(r.is_ok(), "{r:?}");
    expect_watch(&mut b, WatcherId(5), EventType::NODE_DATA_CHANGED, "/lock-0000000000");

    // An exists watch on a missing node fires on create.
    let missing = ZkPath::new("/later").unwrap();
    let (r, _) = call(&mut b, Op::exists(&missing, true), Some(WatcherId(6)));
    assert_eq!(r, Err(RequestError::Server(ErrorCode::NO_NODE)));
    let later = ZkPath::new(&format!("{root}/later")).unwrap();
    call(&mut a, Op::create(&later, Bytes::new(), Acl::open_unsafe(), CreateMode::EPHEMERAL), None).0.unwrap();
    expect_watch(&mut b, WatcherId(6), EventType::NODE_CREATED, "/later");

    // Closing B deletes its ephemeral node at once.
    let now = b.now();
    b.machine().close(now);
    b.run_until(Duration::from_secs(10), |e| *e == SessionEvent::State(ConnectionState::Closed)).unwrap();
    assert_eq!(b.machine().status(), SessionStatus::Closed);
    let (r, _) = call(&mut a, Op::get_children(&root_path, false), None);
    let Ok(Response::Children2 { children, .. }) = r else { panic!("{r:?}") };
    assert_eq!(children, ["later"]);

    // Clean up: A's ephemeral goes with its session, then the root.
    let now = a.now();
    a.machine().close(now);
    a.run_until(Duration::from_secs(10), |e| *e == SessionEvent::State(ConnectionState::Closed)).unwrap();
    let mut c = session_driver(&addr, 3);
    let (r, _) = call(&mut c, Op::delete(&root_path, None), None);
    assert!(r.is_ok(), "{r:?}");
    let now = c.now();
    c.machine().close(now);
    c.run_until(Duration::from_secs(10), |e| *e == SessionEvent::State(ConnectionState::Closed)).unwrap();
}
