//! Transcript tests of the chroot's root kept in place
//! ([`SessionConfig::create_chroot`], a Curator namespace's behaviour): the
//! check after the handshake of a new session, the repair when a create
//! under `/` answers NoNode, and their bounds and typed failures.
//!
//! As in `session.rs`: the session asks for a 10 s timeout, the fake server
//! negotiates 9 s, and reconnect jitter is zero.

mod support;

use support::{Sim, config, connect_response, err, ok, p, reply_ev, stat, state_ev};
use zoolock_core::wire::{
    Acl, Bytes, CreateMode, CreateRequest, ErrorCode, PathWatchRequest, Request, RequestFrame, Response, Xid,
};
use zoolock_core::{
    AclPolicy, ChrootPolicy, ConnectionState, IoCommand, Op, ROOT_RETRIES, RequestError, SessionConfig, SessionStatus,
};

const NEGOTIATED: i32 = 9_000;

fn keeping(connect: &str) -> SessionConfig {
    config(connect, 10_000).with_create_chroot(ChrootPolicy::new(AclPolicy::default()))
}

fn frame(xid: i32, request: Request) -> RequestFrame {
    RequestFrame::new(Xid(xid), request)
}

fn exists(path: &str) -> Request {
    Request::Exists(PathWatchRequest { path: path.into(), watch: false })
}

fn get_data(path: &str) -> Request {
    Request::GetData(PathWatchRequest { path: path.into(), watch: false })
}

fn container(path: &str, acl: Vec<Acl>) -> Request {
    Request::CreateContainer(CreateRequest {
        path: path.into(),
        data: Some(Bytes::new()),
        acl,
        flags: CreateMode::CONTAINER,
    })
}

fn persistent(path: &str) -> Request {
    Request::Create(CreateRequest {
        path: path.into(),
        data: Some(Bytes::new()),
        acl: Acl::open_unsafe(),
        flags: CreateMode::PERSISTENT,
    })
}

fn create2(path: &str) -> Request {
    Request::Create2(CreateRequest {
        path: path.into(),
        data: Some(Bytes::new()),
        acl: Acl::open_unsafe(),
        flags: CreateMode::PERSISTENT,
    })
}

fn create_op(path: &str) -> Op {
    Op::create(&p(path), Bytes::new(), Acl::open_unsafe(), CreateMode::PERSISTENT)
}

fn made(path: &str, zxid: i64) -> Response {
    Response::Create2 { path: path.into(), stat: stat(zxid) }
}

/// Dials at t=0, connects at t=5, and the server grants session 0x1234 at
/// t=10: the handshake is done, its answer not yet drained.
fn handshake(sim: &mut Sim) {
    sim.tick_at(0);
    assert!(matches!(sim.io().as_slice(), [IoCommand::Connect { .. }]));
    sim.set(5);
    sim.connected();
    let _ = sim.sent_connect();
    sim.set(10);
    sim.feed_ok(&connect_response(NEGOTIATED, 0x1234, Some(false)));
}

/// A session on `connect` whose root was there at the handshake (one
/// exists): `Connected`, nothing in flight, next xid 2.
fn established(connect: &str, root: &str) -> Sim {
    let mut sim = Sim::new(keeping(connect));
    handshake(&mut sim);
    assert_eq!(sim.sent(), [frame(1, exists(root))]);
    assert_eq!(sim.events(), []);
    sim.feed_ok(&ok(1, 2, Response::Stat(stat(2))));
    assert_eq!(sim.events(), [state_ev(ConnectionState::Connected)]);
    sim.assert_quiet();
    sim
}

#[test]
fn a_new_session_makes_the_missing_levels_before_anything_else_goes_out() {
    let acl = Acl::creator_all();
    let policy = AclPolicy::default().with_prefix(p("/app"), acl.clone());
    let mut sim = Sim::new(config("h:1/app/x", 10_000).with_create_chroot(ChrootPolicy::new(policy)));
    let a = sim.submit(Op::get_data(&p("/a"), false));
    handshake(&mut sim);
    // Bottom-up probe: the root itself, then its parent; nothing reported
    // and no request of ours out until the root is there.
    assert_eq!(sim.sent(), [frame(1, exists("/app/x"))]);
    assert_eq!(sim.events(), []);
    let b = sim.submit(Op::get_data(&p("/b"), false));
    sim.feed_ok(&err(1, 2, ErrorCode::NO_NODE));
    assert_eq!(sim.sent(), [frame(2, exists("/app"))]);
    sim.feed_ok(&err(2, 2, ErrorCode::NO_NODE));
    // Top-down creates, as containers, with the policy's ACL for each server path.
    assert_eq!(sim.sent(), [frame(3, container("/app", acl.clone()))]);
    sim.feed_ok(&ok(3, 3, made("/app", 3)));
    assert_eq!(sim.sent(), [frame(4, container("/app/x", acl))]);
    assert_eq!(sim.events(), []);
    // Someone else made the last level meanwhile: as good.
    sim.feed_ok(&err(4, 4, ErrorCode::NODE_EXISTS));
    assert_eq!(sim.events(), [state_ev(ConnectionState::Connected)]);
    assert_eq!(sim.sent(), [frame(5, get_data("/app/x/a")), frame(6, get_data("/app/x/b"))]);
    assert_eq!((a.get(), b.get()), (0, 1));
    assert_eq!(sim.s.status(), SessionStatus::Connected);
}

#[test]
fn a_root_that_is_there_costs_one_exists_and_only_at_a_new_session() {
    let mut sim = established("h:1/app", "/app");
    // A reconnect of the same session checks nothing.
    sim.set(20);
    sim.disconnected();
    assert_eq!(sim.events(), [state_ev(ConnectionState::Suspended)]);
    sim.resume(NEGOTIATED);
    assert_eq!(sim.events(), [state_ev(ConnectionState::Reconnected)]);
    sim.submit(Op::exists(&p("/y"), false));
    assert_eq!(sim.sent(), [frame(2, exists("/app/y"))]);
}

#[test]
fn a_root_that_cannot_be_made_ends_a_new_session_with_a_typed_error() {
    let mut sim = Sim::new(keeping("h:1/app"));
    let a = sim.submit(create_op("/lock"));
    handshake(&mut sim);
    assert_eq!(sim.sent(), [frame(1, exists("/app"))]);
    sim.feed_ok(&err(1, 2, ErrorCode::NO_NODE));
    assert_eq!(sim.sent(), [frame(2, container("/app", Acl::open_unsafe()))]);
    sim.feed_ok(&err(2, 2, ErrorCode::NO_AUTH));
    let gone = RequestError::ChrootUnavailable(ErrorCode::NO_AUTH);
    assert_eq!(
        sim.events(),
        [reply_ev(a.get(), Err(gone.clone())), state_ev(ConnectionState::ChrootUnavailable(ErrorCode::NO_AUTH))]
    );
    assert_eq!(ConnectionState::ChrootUnavailable(ErrorCode::NO_AUTH).end_error(), Some(gone.clone()));
    assert_eq!(gone.code(), ErrorCode::NO_AUTH);
    assert!(matches!(sim.io().as_slice(), [IoCommand::Close]));
    sim.assert_ended(SessionStatus::ChrootUnavailable(ErrorCode::NO_AUTH));
}

#[test]
fn a_create_under_the_root_that_finds_it_gone_makes_it_again_and_is_resent() {
    let mut sim = established("h:1/app", "/app");
    let a = sim.submit(create_op("/lock"));
    // A create deeper down is no sign of the root: its NoNode goes through.
    let b = sim.submit(create_op("/lock/x"));
    assert_eq!(sim.sent(), [frame(2, create2("/app/lock")), frame(3, create2("/app/lock/x"))]);
    sim.feed_ok(&err(2, 5, ErrorCode::NO_NODE));
    assert_eq!(sim.sent(), [frame(4, exists("/app"))]);
    assert_eq!(sim.events(), []);
    // Requests wait while the root is checked.
    let c = sim.submit(Op::get_data(&p("/c"), false));
    sim.feed_ok(&err(3, 5, ErrorCode::NO_NODE));
    assert_eq!(sim.events(), [reply_ev(b.get(), Err(RequestError::Server(ErrorCode::NO_NODE)))]);
    sim.feed_ok(&err(4, 5, ErrorCode::NO_NODE));
    assert_eq!(sim.sent(), [frame(5, container("/app", Acl::open_unsafe()))]);
    sim.feed_ok(&ok(5, 6, made("/app", 6)));
    // The held create first (it is older), then what waited.
    assert_eq!(sim.sent(), [frame(6, create2("/app/lock")), frame(7, get_data("/app/c"))]);
    sim.feed_ok(&ok(6, 7, made("/app/lock", 7)));
    assert_eq!(sim.events(), [reply_ev(a.get(), Ok(made("/lock", 7)))]);
    assert_eq!(c.get(), 2);
    assert_eq!(sim.s.status(), SessionStatus::Connected);
}

#[test]
fn a_root_that_keeps_vanishing_gives_the_create_its_no_node_after_the_bound() {
    let mut sim = established("h:1/app", "/app");
    let a = sim.submit(create_op("/lock"));
    let mut xid = 2;
    for _ in 0..ROOT_RETRIES {
        assert_eq!(sim.sent(), [frame(xid, create2("/app/lock"))]);
        sim.feed_ok(&err(xid, 5, ErrorCode::NO_NODE));
        assert_eq!(sim.sent(), [frame(xid + 1, exists("/app"))]);
        sim.feed_ok(&ok(xid + 1, 5, Response::Stat(stat(5))));
        xid += 2;
    }
    assert_eq!(sim.sent(), [frame(xid, create2("/app/lock"))]);
    sim.feed_ok(&err(xid, 5, ErrorCode::NO_NODE));
    assert_eq!(sim.events(), [reply_ev(a.get(), Err(RequestError::Server(ErrorCode::NO_NODE)))]);
    sim.assert_quiet();
}

#[test]
fn a_root_that_cannot_be_made_later_fails_the_create_and_the_session_goes_on() {
    let mut sim = established("h:1/app", "/app");
    let a = sim.submit(create_op("/lock"));
    assert_eq!(sim.sent(), [frame(2, create2("/app/lock"))]);
    sim.feed_ok(&err(2, 5, ErrorCode::NO_NODE));
    assert_eq!(sim.sent(), [frame(3, exists("/app"))]);
    sim.feed_ok(&err(3, 5, ErrorCode::NO_NODE));
    assert_eq!(sim.sent(), [frame(4, container("/app", Acl::open_unsafe()))]);
    sim.feed_ok(&err(4, 5, ErrorCode::NO_AUTH));
    assert_eq!(sim.events(), [reply_ev(a.get(), Err(RequestError::ChrootUnavailable(ErrorCode::NO_AUTH)))]);
    assert_eq!(sim.s.status(), SessionStatus::Connected);
    sim.submit(Op::exists(&p("/y"), false));
    assert_eq!(sim.sent(), [frame(5, exists("/app/y"))]);
}

#[test]
fn a_check_cut_by_a_disconnect_runs_again_and_suspends_nothing_unreported() {
    let mut sim = Sim::new(keeping("h:1/app"));
    handshake(&mut sim);
    assert_eq!(sim.sent(), [frame(1, exists("/app"))]);
    sim.set(20);
    sim.disconnected();
    // Nothing was reported for that connection, so nothing is suspended.
    assert_eq!(sim.events(), []);
    sim.resume(NEGOTIATED);
    assert_eq!(sim.sent(), [frame(2, exists("/app"))]);
    sim.feed_ok(&ok(2, 3, Response::Stat(stat(3))));
    // The session's first report: Connected, not Reconnected.
    assert_eq!(sim.events(), [state_ev(ConnectionState::Connected)]);
}

#[test]
fn a_held_create_waits_through_a_disconnect_for_the_next_check() {
    let mut sim = established("h:1/app", "/app");
    let a = sim.submit(create_op("/lock"));
    assert_eq!(sim.sent(), [frame(2, create2("/app/lock"))]);
    sim.feed_ok(&err(2, 5, ErrorCode::NO_NODE));
    assert_eq!(sim.sent(), [frame(3, exists("/app"))]);
    sim.set(20);
    sim.disconnected();
    // The create was answered (NoNode, nothing done): held, not lost.
    assert_eq!(sim.events(), [state_ev(ConnectionState::Suspended)]);
    sim.resume(NEGOTIATED);
    assert_eq!(sim.events(), [state_ev(ConnectionState::Reconnected)]);
    assert_eq!(sim.sent(), [frame(4, exists("/app"))]);
    sim.feed_ok(&ok(4, 6, Response::Stat(stat(6))));
    assert_eq!(sim.sent(), [frame(5, create2("/app/lock"))]);
    sim.feed_ok(&ok(5, 7, made("/app/lock", 7)));
    assert_eq!(sim.events(), [reply_ev(a.get(), Ok(made("/lock", 7)))]);
}

#[test]
fn a_server_without_containers_gets_persistent_levels() {
    let mut sim = Sim::new(keeping("h:1/app"));
    handshake(&mut sim);
    assert_eq!(sim.sent(), [frame(1, exists("/app"))]);
    sim.feed_ok(&err(1, 2, ErrorCode::NO_NODE));
    assert_eq!(sim.sent(), [frame(2, container("/app", Acl::open_unsafe()))]);
    sim.feed_ok(&err(2, 2, ErrorCode::UNIMPLEMENTED));
    assert_eq!(sim.sent(), [frame(3, persistent("/app"))]);
    // The server hangs up after an unknown opcode: the check runs again
    // after the reconnect, with persistent levels from the start.
    sim.set(20);
    sim.disconnected();
    assert_eq!(sim.events(), []);
    sim.tick_at(20);
    sim.dial_connected();
    sim.feed_ok(&connect_response(NEGOTIATED, 0x1234, Some(false)));
    assert_eq!(sim.sent(), [frame(4, exists("/app"))]);
    sim.feed_ok(&err(4, 2, ErrorCode::NO_NODE));
    assert_eq!(sim.sent(), [frame(5, persistent("/app"))]);
    sim.feed_ok(&ok(5, 3, Response::Path("/app".into())));
    assert_eq!(sim.events(), [state_ev(ConnectionState::Connected)]);
}

#[test]
fn a_read_only_server_is_not_asked_to_create_and_the_check_waits() {
    let mut sim = Sim::new(keeping("h:1/app"));
    sim.tick_at(0);
    sim.dial_connected();
    sim.set(10);
    sim.feed_ok(&connect_response(NEGOTIATED, 0x1234, Some(true)));
    assert_eq!(sim.events(), [state_ev(ConnectionState::ConnectedReadOnly)]);
    sim.submit(Op::exists(&p("/y"), false));
    assert_eq!(sim.sent(), [frame(1, exists("/app/y"))]);
}

#[test]
fn without_the_policy_nothing_is_checked_or_held() {
    let mut sim = Sim::new(config("h:1/app", 10_000));
    let a = sim.submit(create_op("/lock"));
    handshake(&mut sim);
    assert_eq!(sim.events(), [state_ev(ConnectionState::Connected)]);
    assert_eq!(sim.sent(), [frame(1, create2("/app/lock"))]);
    sim.feed_ok(&err(1, 2, ErrorCode::NO_NODE));
    assert_eq!(sim.events(), [reply_ev(a.get(), Err(RequestError::Server(ErrorCode::NO_NODE)))]);
    sim.assert_quiet();
}

#[test]
fn a_close_during_the_check_sends_nothing_after_close_session() {
    let mut sim = Sim::new(keeping("h:1/app"));
    let a = sim.submit(create_op("/lock"));
    handshake(&mut sim);
    assert_eq!(sim.sent(), [frame(1, exists("/app"))]);
    sim.s.close(sim.now);
    assert_eq!(sim.sent(), [frame(2, Request::CloseSession)]);
    sim.feed_ok(&err(1, 2, ErrorCode::NO_NODE));
    assert_eq!(sim.sent(), []);
    sim.feed_ok(&ok(2, 3, Response::Empty));
    assert_eq!(sim.events(), [reply_ev(a.get(), Err(RequestError::Closed)), state_ev(ConnectionState::Closed)]);
}
