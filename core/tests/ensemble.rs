//! Transcript tests of following the ensemble's membership
//! ([`SessionConfig::follow_ensemble`]) and of [`Session::update_hosts`] /
//! [`Client::update_servers`]: the read of `/zookeeper/config` outside the
//! chroot, once per session; the host list replaced with the chroot kept; a
//! malformed config ignored; a connection whose host was removed moved to a
//! remaining one with the same session.
//!
//! As in `session.rs`: the fake server negotiates 9 s, reconnect jitter is zero.

mod support;

use support::{Sim, config, connect_response, notification, ok, p, stat, state_ev};
use zoolock_core::wire::{
    Bytes, ErrorCode, EventType, PathWatchRequest, Request, RequestFrame, Response, SetWatches, Xid,
};
use zoolock_core::{
    ApiMisuse, Client, ConnectString, ConnectionState, EnsembleConfigError, EnsembleUpdate, HostAddr, Instant,
    IoCommand, Op, SessionConfig, SessionStatus, Suspension,
};

const NEGOTIATED: i32 = 9_000;

fn following(connect: &str) -> SessionConfig {
    config(connect, 10_000).with_follow_ensemble(true)
}

fn read_config(xid: i32) -> RequestFrame {
    RequestFrame::new(Xid(xid), Request::GetData(PathWatchRequest { path: "/zookeeper/config".into(), watch: true }))
}

fn config_data(xid: i32, zxid: i64, text: &str) -> zoolock_core::wire::BytesMut {
    ok(xid, zxid, Response::Data { data: Some(Bytes::from(text.to_owned())), stat: stat(zxid) })
}

fn host(s: &str) -> HostAddr {
    ConnectString::parse(s).unwrap().hosts()[0].clone()
}

fn sorted(hosts: &[HostAddr]) -> Vec<String> {
    let mut v: Vec<String> = hosts.iter().map(ToString::to_string).collect();
    v.sort();
    v
}

/// The address of the one dial the session asked for.
fn dialled(sim: &mut Sim) -> HostAddr {
    match sim.io().as_slice() {
        [IoCommand::Connect { addr, .. }] => addr.clone(),
        other => panic!("expected one dial, got {other:?}"),
    }
}

/// A session established on `connect` that has sent its membership read
/// (xid 1) and nothing else.
fn established(connect: &str) -> (Sim, HostAddr) {
    let mut sim = Sim::new(following(connect));
    sim.tick_at(0);
    let first = dialled(&mut sim);
    sim.set(5);
    sim.connected();
    let _ = sim.sent_connect();
    sim.set(10);
    sim.feed_ok(&connect_response(NEGOTIATED, 0x1234, Some(false)));
    assert_eq!(sim.events(), [state_ev(ConnectionState::Connected)]);
    // A server path: not `/app/zookeeper/config` (CURATOR-667).
    assert_eq!(sim.sent(), [read_config(1)]);
    (sim, first)
}

#[test]
fn members_replace_the_hosts_and_the_chroot_stays() {
    let (mut sim, first) = established("a:1,b:2/app");
    let other = if first == host("a:1") { "b:2" } else { "a:1" };
    // The connected host stays a member; a new one joins, the other leaves.
    let data = format!(
        "server.1={h}:2888:3888:participant;{c}\nserver.7=10.0.0.7:2888:3888:observer;0.0.0.0:2187\nversion=100000003",
        h = first.host,
        c = first,
    );
    sim.set(20);
    sim.feed_ok(&config_data(1, 3, &data));
    assert_eq!(sim.s.last_ensemble_update(), Some(&EnsembleUpdate::Replaced));
    assert_eq!(sorted(sim.s.hosts()), sorted(&[first.clone(), host("10.0.0.7:2187")]));
    assert!(!sim.s.hosts().contains(&host(other)));
    // No move: the connection's host remains.
    sim.assert_quiet();
    assert_eq!(sim.s.status(), SessionStatus::Connected);
    // Requests keep the chroot (CURATOR-593/611).
    sim.submit(Op::get_data(&p("/x"), false));
    assert_eq!(
        sim.sent(),
        [RequestFrame::new(Xid(2), Request::GetData(PathWatchRequest { path: "/app/x".into(), watch: false }))]
    );
    // The next dial after a disconnect goes to the new member.
    sim.set(30);
    sim.disconnected();
    let events = sim.events();
    assert_eq!(events.last(), Some(&state_ev(ConnectionState::Suspended)));
    sim.tick_at(30);
    assert_eq!(dialled(&mut sim), host("10.0.0.7:2187"));
}

#[test]
fn a_connection_whose_host_was_removed_moves_with_its_session() {
    let (mut sim, first) = established("a:1,b:2");
    sim.set(20);
    sim.feed_ok(&config_data(1, 3, "server.4=c:2888:3888:participant;c:3\nversion=4"));
    assert_eq!(sim.s.hosts(), [host("c:3")]);
    // Dropped at once, with its reason, and dialled again at a member.
    assert_eq!(sim.io(), [IoCommand::Close]);
    assert_eq!(sim.events(), [state_ev(ConnectionState::Suspended)]);
    assert_eq!(sim.s.suspension(), Suspension::ServerRemoved);
    sim.tick_at(20);
    let next = dialled(&mut sim);
    assert_eq!(next, host("c:3"));
    assert_ne!(next, first);
    sim.set(25);
    sim.connected();
    // The same session: its id (and password) in the handshake.
    assert_eq!(sim.sent_connect().session_id, 0x1234);
    sim.set(30);
    sim.feed_ok(&connect_response(NEGOTIATED, 0x1234, Some(false)));
    assert_eq!(sim.events(), [state_ev(ConnectionState::Reconnected)]);
    // The watch is re-armed by setWatches, not by a second read.
    assert_eq!(
        sim.sent(),
        [RequestFrame::new(
            Xid(2),
            Request::SetWatches(SetWatches {
                relative_zxid: 3,
                data_watches: vec!["/zookeeper/config".into()],
                exist_watches: vec![],
                child_watches: vec![],
            })
        )]
    );
    assert_eq!(sim.s.session_id(), 0x1234);
}

#[test]
fn a_malformed_config_keeps_the_hosts() {
    let (mut sim, _) = established("a:1,b:2");
    let before = sorted(sim.s.hosts());
    sim.set(20);
    sim.feed_ok(&config_data(1, 3, "server.1=a:2888:3888:participant;a:0"));
    assert!(matches!(
        sim.s.last_ensemble_update(),
        Some(EnsembleUpdate::Malformed(EnsembleConfigError::BadClientAddress(_)))
    ));
    assert_eq!(sorted(sim.s.hosts()), before);
    sim.assert_quiet();
    // Nothing a client can dial is no better.
    sim.feed_ok(&notification(EventType::NODE_DATA_CHANGED, "/zookeeper/config"));
    assert_eq!(sim.sent(), [read_config(2)]);
    sim.feed_ok(&config_data(2, 4, "version=5"));
    assert_eq!(sim.s.last_ensemble_update(), Some(&EnsembleUpdate::Malformed(EnsembleConfigError::NoServers)));
    assert_eq!(sorted(sim.s.hosts()), before);
    assert_eq!(sim.s.status(), SessionStatus::Connected);
}

#[test]
fn the_watch_is_set_once_per_session_and_not_after_close() {
    let (mut sim, _) = established("a:1,b:2");
    let same = "server.1=a:2888:3888;a:1\nserver.2=b:2888:3888:participant;b:2\nversion=3";
    sim.set(20);
    // The read is lost with its connection: read again after the reconnect.
    sim.disconnected();
    assert_eq!(sim.events(), [state_ev(ConnectionState::Suspended)]);
    sim.resume(NEGOTIATED);
    assert_eq!(sim.events(), [state_ev(ConnectionState::Reconnected)]);
    assert_eq!(sim.sent(), [read_config(2)]);
    sim.feed_ok(&config_data(2, 3, same));
    assert_eq!(sim.s.last_ensemble_update(), Some(&EnsembleUpdate::Unchanged));
    // Reconnects re-arm it with setWatches only.
    for _ in 0..2 {
        sim.disconnected();
        let _ = sim.events();
        sim.resume(NEGOTIATED);
        let _ = sim.events();
        let sent = sim.sent();
        assert_eq!(sent.len(), 1);
        assert!(matches!(&sent[0].request, Request::SetWatches(w) if w.data_watches == ["/zookeeper/config"]));
        sim.feed_ok(&ok(sent[0].header.xid.0, 4, Response::Empty));
    }
    // Its firing reads again, once.
    sim.feed_ok(&notification(EventType::NODE_DATA_CHANGED, "/zookeeper/config"));
    let sent = sim.sent();
    assert_eq!(sent.len(), 1);
    assert_eq!(sent[0].request, read_config(0).request);
    let xid = sent[0].header.xid.0;
    sim.feed_ok(&config_data(xid, 5, same));
    assert_eq!(sim.s.last_ensemble_update(), Some(&EnsembleUpdate::Unchanged));
    sim.assert_quiet();
    // Closing: a late notification reads nothing.
    sim.s.close(sim.now);
    assert!(matches!(sim.sent().as_slice(), [f] if f.request == Request::CloseSession));
    sim.feed_ok(&notification(EventType::NODE_DATA_CHANGED, "/zookeeper/config"));
    assert_eq!(sim.sent(), []);
}

#[test]
fn a_server_without_the_config_node_is_not_asked_again() {
    let (mut sim, _) = established("a:1");
    sim.set(20);
    sim.feed_ok(&support::err(1, 2, ErrorCode::NO_NODE));
    sim.disconnected();
    let _ = sim.events();
    sim.resume(NEGOTIATED);
    let _ = sim.events();
    assert_eq!(sim.sent(), []);
}

#[test]
fn following_off_reads_nothing() {
    let mut sim = Sim::new(config("a:1/app", 10_000));
    assert_eq!(sim.establish(NEGOTIATED), []);
}

#[test]
fn update_servers_keeps_the_chroot_and_refuses_another() {
    let cs = ConnectString::parse("a:1,b:2/app").unwrap();
    let mut client = Client::new(SessionConfig::new(cs, 3), Instant::ZERO);
    let other = ConnectString::parse("c:3/other").unwrap();
    assert_eq!(client.update_servers(Instant::ZERO, &other), Err(ApiMisuse::ChrootChanged));
    assert_eq!(sorted(client.session().hosts()), ["a:1", "b:2"]);
    let new = ConnectString::parse("c:3,d:4").unwrap();
    assert_eq!(client.update_servers(Instant::ZERO, &new), Ok(true));
    assert_eq!(sorted(client.session().hosts()), ["c:3", "d:4"]);
    let same_root = ConnectString::parse("d:4,c:3/app").unwrap();
    assert_eq!(client.update_servers(Instant::ZERO, &same_root), Ok(false));
}

#[test]
fn a_dial_to_a_removed_host_is_dropped_and_a_member_dialled() {
    let mut sim = Sim::new(following("a:1"));
    sim.tick_at(0);
    assert_eq!(dialled(&mut sim), host("a:1"));
    // Still dialling when the list changes (update_servers, before any session).
    assert!(sim.s.update_hosts(sim.now, vec![host("c:3"), host("c:3")]));
    assert_eq!(sim.s.hosts(), [host("c:3")]);
    assert_eq!(sim.io(), [IoCommand::Close]);
    sim.tick_at(0);
    assert_eq!(dialled(&mut sim), host("c:3"));
    // The same list again changes nothing; an empty one is refused.
    assert!(!sim.s.update_hosts(sim.now, vec![host("c:3")]));
    assert!(!sim.s.update_hosts(sim.now, vec![]));
    sim.assert_quiet();
}
