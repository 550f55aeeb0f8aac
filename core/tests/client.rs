//! Client multiplexer tests: routing of replies, watches and state changes
//! between plain requests and several recipes on one session.

use std::time::Duration;

use bytes::{Bytes, BytesMut};
use zoolock_core::wire::{
    ConnectRequest, ConnectResponse, ErrorCode, EventType, FrameDecoder, KeeperState, OpCode, ReplyHeader, Request,
    RequestFrame, Response, ServerMessage, Stat, WatcherEvent, Xid, encode_frame,
};
use zoolock_core::{
    ApiMisuse, Client, ClientEvent, ClientRecipe, ConnectString, ConnectionState, FencingToken, Instant, IoCommand,
    Machine, Machines, Op, OpId, Recipe, RecipeEvent, RecipeOp, RequestError, SessionConfig, WatchEvent, ZkPath,
    recipes::Outbox,
};

/// A recipe that reads one node with a watch once connected and reports what it sees.
struct Probe {
    path: ZkPath,
    out: Outbox,
    events: Vec<RecipeEvent>,
    log: Vec<String>,
    deadline: Option<Instant>,
    /// A read is in flight: not quiescent until its reply.
    busy: bool,
    /// What `holds` answers (set by the tests).
    holding: bool,
}

impl Probe {
    fn new(path: &str) -> Probe {
        Probe {
            path: ZkPath::new(path).unwrap(),
            out: Outbox::default(),
            events: vec![],
            log: vec![],
            deadline: None,
            busy: false,
            holding: false,
        }
    }

    fn read(&mut self, _now: Instant) {
        self.out.send(Op::get_data(&self.path, true));
        self.busy = true;
    }
}

impl Recipe for Probe {
    type Event = RecipeEvent;
    fn handle_reply(&mut self, _now: Instant, op: OpId, result: Result<Response, RequestError>) {
        self.log.push(format!("reply {} {:?}", op.get(), result.as_ref().map(|_| ()).map_err(Clone::clone)));
        self.busy = false;
        if let Ok(Response::Data { stat, .. }) = result {
            self.events
                .push(RecipeEvent::Acquired { node: self.path.to_string().into(), token: FencingToken(stat.czxid) });
        }
    }
    fn handle_watch(&mut self, _now: Instant, event: &WatchEvent) {
        self.log.push(format!("watch {} {}", event.event_type, event.path));
        self.events.push(RecipeEvent::RevocationRequested);
    }
    fn handle_session(&mut self, now: Instant, state: ConnectionState) {
        self.log.push(format!("state {state:?}"));
        if state == ConnectionState::Connected {
            self.read(now);
        }
    }
    fn handle_timeout(&mut self, now: Instant) {
        self.log.push(format!("timeout {now}"));
        self.deadline = None;
    }
    fn poll_op(&mut self) -> Option<RecipeOp> {
        self.out.poll_op()
    }
    fn poll_event(&mut self) -> Option<RecipeEvent> {
        (!self.events.is_empty()).then(|| self.events.remove(0))
    }
    fn poll_timeout(&self) -> Option<Instant> {
        self.deadline
    }
    fn is_quiescent(&self) -> bool {
        self.out.no_ops() && !self.busy
    }

    fn holds(&self) -> bool {
        self.holding
    }
}

/// These tests' clients hold probes only.
type TestClient = Client<Probe>;

impl Machines for Probe {
    fn recipe(&self) -> &dyn ClientRecipe {
        self
    }

    fn recipe_mut(&mut self) -> &mut dyn ClientRecipe {
        self
    }
}

impl Machine<Probe> for Probe {
    fn into_machine(self) -> Probe {
        self
    }

    fn from_machine(machine: &mut Probe) -> Option<&mut Probe> {
        Some(machine)
    }

    fn from_machine_ref(machine: &Probe) -> Option<&Probe> {
        Some(machine)
    }
}

/// A hand-driven server end: decodes what the client sends, encodes answers.
struct Server {
    out: BytesMut,
    decoder: FrameDecoder,
    handshaken: bool,
}

impl Server {
    fn new() -> Server {
        Server { out: BytesMut::new(), decoder: FrameDecoder::default(), handshaken: false }
    }

    /// Takes the client's pending bytes and decodes them into request frames.
    fn take(&mut self, client: &mut TestClient) -> Vec<RequestFrame> {
        let _ = client.poll_transmit(&mut self.out);
        let mut frames = vec![];
        while let Some(frame) = self.decoder.decode(&mut self.out).unwrap() {
            if !self.handshaken {
                ConnectRequest::decode(&frame).unwrap();
                self.handshaken = true;
            } else {
                frames.push(RequestFrame::decode(&frame).unwrap());
            }
        }
        frames
    }

    fn send(client: &mut TestClient, now: Instant, msg: &impl zoolock_core::wire::Encode) {
        let mut buf = BytesMut::new();
        encode_frame(msg, usize::MAX, &mut buf).unwrap();
        client.handle_bytes(now, &mut buf).unwrap();
    }

    fn reply(client: &mut TestClient, now: Instant, xid: Xid, zxid: i64, err: ErrorCode, response: Option<Response>) {
        Server::send(client, now, &ServerMessage::Reply { header: ReplyHeader { xid, zxid, err }, response });
    }

    fn notify(client: &mut TestClient, now: Instant, event_type: EventType, path: &str) {
        let header = ReplyHeader { xid: Xid::NOTIFICATION, zxid: -1, err: ErrorCode::OK };
        let event = WatcherEvent { event_type, state: KeeperState::SYNC_CONNECTED, path: path.into() };
        Server::send(client, now, &ServerMessage::Notification { header, event });
    }
}

fn t(ms: u64) -> Instant {
    Instant::from_millis(ms)
}

/// Takes `client` through its first connect: it dials at t(0), is connected
/// at t(1) with nothing to send before the handshake's answer, and gets
/// `resp` at t(2). Returns the server side.
fn handshake(client: &mut TestClient, resp: &ConnectResponse) -> Server {
    client.handle_timeout(t(0));
    assert!(matches!(client.poll_io(), Some(IoCommand::Connect { .. })));
    client.handle_connected(t(1));
    let mut server = Server::new();
    assert!(server.take(client).is_empty());
    Server::send(client, t(2), resp);
    server
}

fn connected_client() -> (TestClient, Server) {
    let cs = ConnectString::parse("127.0.0.1:2181").unwrap();
    let mut client =
        TestClient::for_machines(SessionConfig::new(cs, 1).with_session_timeout(Duration::from_secs(10)), t(0));
    let resp = ConnectResponse {
        protocol_version: 0,
        timeout_ms: 10_000,
        session_id: 0x1234,
        passwd: Some(Bytes::from_static(&[7; 16])),
        read_only: Some(false),
    };
    let server = handshake(&mut client, &resp);
    (client, server)
}

fn drain(client: &mut TestClient) -> Vec<ClientEvent> {
    std::iter::from_fn(|| client.poll_event()).collect()
}

fn stat(czxid: i64) -> Stat {
    Stat { czxid, mzxid: czxid, pzxid: czxid, ..Stat::default() }
}

#[test]
fn recipes_get_state_replies_and_their_own_watches() {
    let (mut client, mut server) = connected_client();
    let a = client.add(t(3), Probe::new("/a"));
    let b = client.add(t(3), Probe::new("/b"));
    assert_eq!(drain(&mut client), [ClientEvent::State(ConnectionState::Connected)]);
    // Recipes added after the handshake read when told to.
    client.with(t(4), a, |p, now| p.read(now)).unwrap();
    client.with(t(4), b, |p, now| p.read(now)).unwrap();
    let frames = server.take(&mut client);
    assert_eq!(frames.len(), 2);
    assert_eq!(frames[0].request.path(), Some("/a"));
    assert_eq!(frames[1].request.path(), Some("/b"));
    let data = |czxid| Some(Response::Data { data: Some(Bytes::new()), stat: stat(czxid) });
    Server::reply(&mut client, t(5), frames[0].header.xid, 10, ErrorCode::OK, data(5));
    Server::reply(&mut client, t(5), frames[1].header.xid, 10, ErrorCode::OK, data(6));
    assert_eq!(
        drain(&mut client),
        [
            ClientEvent::Recipe {
                recipe: a.id(),
                event: RecipeEvent::Acquired { node: "/a".into(), token: FencingToken(5) }
            },
            ClientEvent::Recipe {
                recipe: b.id(),
                event: RecipeEvent::Acquired { node: "/b".into(), token: FencingToken(6) }
            },
        ]
    );
    // The watch on /b goes to b only.
    Server::notify(&mut client, t(6), EventType::NODE_DATA_CHANGED, "/b");
    assert_eq!(drain(&mut client), [ClientEvent::Recipe { recipe: b.id(), event: RecipeEvent::RevocationRequested }]);
    let log_a = client.with(t(7), a, |p, _| p.log.clone()).unwrap();
    assert_eq!(log_a, ["reply 0 Ok(())"]);
    let log_b = client.with(t(7), b, |p, _| p.log.clone()).unwrap();
    assert_eq!(log_b, ["reply 0 Ok(())", "watch NodeDataChanged /b"]);
}

#[test]
fn the_in_flight_window_fills_with_requests_sent_and_frees_with_their_replies_or_the_connection() {
    let (mut client, mut server) = connected_client();
    assert!(client.has_room());
    let ids: Vec<_> = (0..zoolock_core::IN_FLIGHT_WINDOW)
        .map(|i| client.submit(t(3), Op::exists(&ZkPath::new(&format!("/n{i}")).unwrap(), false)).unwrap())
        .collect();
    assert_eq!(ids.len(), zoolock_core::IN_FLIGHT_WINDOW);
    assert!(!client.has_room(), "a window's worth of requests in flight");
    // The bound is soft: a request beyond it still goes out.
    client.submit(t(3), Op::exists(&ZkPath::new("/over").unwrap(), false)).unwrap();
    let frames = server.take(&mut client);
    assert_eq!(frames.len(), zoolock_core::IN_FLIGHT_WINDOW + 1);
    // Replies free the window one by one.
    for frame in &frames[..2] {
        Server::reply(&mut client, t(4), frame.header.xid, 10, ErrorCode::NO_NODE, None);
    }
    assert!(client.has_room());
    let answered = drain(&mut client).into_iter().filter(|e| matches!(e, ClientEvent::Reply { .. })).count();
    assert_eq!(answered, 2);
    // A lost connection fails what was in flight, and frees the window too.
    for i in 0..4 {
        client.submit(t(5), Op::exists(&ZkPath::new(&format!("/m{i}")).unwrap(), false)).unwrap();
    }
    assert!(!client.has_room());
    client.handle_disconnected(t(6));
    assert!(client.has_room());
    let failed =
        drain(&mut client).into_iter().filter(|e| matches!(e, ClientEvent::Reply { result: Err(_), .. })).count();
    assert_eq!(failed, zoolock_core::IN_FLIGHT_WINDOW + 1 - 2 + 4);
}

#[test]
fn one_notification_reaches_every_recipe_and_plain_watch_on_the_path() {
    let (mut client, mut server) = connected_client();
    let a = client.add(t(3), Probe::new("/x"));
    let b = client.add(t(3), Probe::new("/x"));
    client.with(t(4), a, |p, now| p.read(now)).unwrap();
    client.with(t(4), b, |p, now| p.read(now)).unwrap();
    let plain = client.submit(t(4), Op::exists(&ZkPath::new("/x").unwrap(), true)).unwrap();
    let frames = server.take(&mut client);
    assert_eq!(frames.len(), 3);
    for f in &frames[..2] {
        let data = Some(Response::Data { data: None, stat: stat(1) });
        Server::reply(&mut client, t(5), f.header.xid, 3, ErrorCode::OK, data);
    }
    Server::reply(&mut client, t(5), frames[2].header.xid, 3, ErrorCode::OK, Some(Response::Stat(stat(1))));
    let events = drain(&mut client);
    assert!(events.contains(&ClientEvent::Reply { id: plain, result: Ok(Response::Stat(stat(1))) }));
    Server::notify(&mut client, t(6), EventType::NODE_DELETED, "/x");
    let events = drain(&mut client);
    assert_eq!(events.len(), 3, "{events:?}");
    assert!(events.contains(&ClientEvent::Recipe { recipe: a.id(), event: RecipeEvent::RevocationRequested }));
    assert!(events.contains(&ClientEvent::Recipe { recipe: b.id(), event: RecipeEvent::RevocationRequested }));
    assert!(
        events.contains(&ClientEvent::Watch(WatchEvent { event_type: EventType::NODE_DELETED, path: "/x".into() }))
    );
}

#[test]
fn state_changes_reach_every_recipe_and_the_user() {
    let cs = ConnectString::parse("127.0.0.1:2181").unwrap();
    let mut client = TestClient::for_machines(SessionConfig::new(cs, 1), t(0));
    let a = client.add(t(0), Probe::new("/a"));
    let resp = ConnectResponse {
        protocol_version: 0,
        timeout_ms: 6_000,
        session_id: 9,
        passwd: Some(Bytes::from_static(&[1; 16])),
        read_only: None,
    };
    let mut server = handshake(&mut client, &resp);
    // The probe reacts to Connected by reading: the op goes out in the same pump.
    let frames = server.take(&mut client);
    assert_eq!(frames.len(), 1);
    assert_eq!(frames[0].header.op, OpCode::GET_DATA);
    client.handle_disconnected(t(3));
    assert_eq!(
        drain(&mut client),
        [ClientEvent::State(ConnectionState::Connected), ClientEvent::State(ConnectionState::Suspended)]
    );
    let log = client.with(t(4), a, |p, _| p.log.clone()).unwrap();
    assert_eq!(log, ["state Connected", "reply 0 Err(ConnectionLoss)", "state Suspended"]);
}

#[test]
fn a_retired_recipe_is_removed_once_quiescent_and_reported_after_its_events() {
    let (mut client, mut server) = connected_client();
    let idle = client.add(t(3), Probe::new("/idle"));
    client.retire(t(3), idle.id()).unwrap();
    assert_eq!(drain(&mut client), [ClientEvent::State(ConnectionState::Connected), ClientEvent::Retired(idle.id())]);
    assert_eq!(client.retire(t(3), idle.id()), Err(ApiMisuse::UnknownRecipe(idle.id().get())));

    let a = client.add(t(3), Probe::new("/a"));
    client.with(t(4), a, |p, now| p.read(now)).unwrap();
    let frames = server.take(&mut client);
    client.retire(t(4), a.id()).unwrap();
    assert_eq!(drain(&mut client), []);
    // Commands still reach it until it is quiescent.
    assert_eq!(client.with(t(4), a, |p, _| p.busy), Ok(true));
    let data = Some(Response::Data { data: None, stat: stat(1) });
    Server::reply(&mut client, t(5), frames[0].header.xid, 3, ErrorCode::OK, data);
    let acquired = RecipeEvent::Acquired { node: "/a".into(), token: FencingToken(1) };
    assert_eq!(
        drain(&mut client),
        [ClientEvent::Recipe { recipe: a.id(), event: acquired }, ClientEvent::Retired(a.id())]
    );
    assert!(client.recipe(a.id()).is_none());
}

#[test]
fn a_quiescence_notice_comes_once_the_recipe_owes_nothing() {
    let (mut client, mut server) = connected_client();
    let a = client.add(t(3), Probe::new("/a"));
    assert_eq!(drain(&mut client), [ClientEvent::State(ConnectionState::Connected)]);
    client.notify_quiescent(t(3), a.id()).unwrap();
    assert_eq!(drain(&mut client), [ClientEvent::Quiescent(a.id())]);
    client.with(t(4), a, |p, now| p.read(now)).unwrap();
    let frames = server.take(&mut client);
    client.notify_quiescent(t(4), a.id()).unwrap();
    assert_eq!(drain(&mut client), []);
    let data = Some(Response::Data { data: None, stat: stat(1) });
    Server::reply(&mut client, t(5), frames[0].header.xid, 3, ErrorCode::OK, data);
    let acquired = RecipeEvent::Acquired { node: "/a".into(), token: FencingToken(1) };
    assert_eq!(
        drain(&mut client),
        [ClientEvent::Recipe { recipe: a.id(), event: acquired }, ClientEvent::Quiescent(a.id())]
    );
    // Once per call; the recipe stays registered.
    client.with(t(6), a, |p, now| p.read(now)).unwrap();
    assert_eq!(drain(&mut client), []);
    assert!(client.recipe(a.id()).is_some());
    client.remove_recipe(a.id());
    assert_eq!(client.notify_quiescent(t(6), a.id()), Err(ApiMisuse::UnknownRecipe(a.id().get())));
}

#[test]
fn removed_recipe_gets_nothing_and_ops_after_expiry_fail_in_place() {
    let (mut client, mut server) = connected_client();
    let a = client.add(t(3), Probe::new("/a"));
    client.with(t(4), a, |p, now| p.read(now)).unwrap();
    let frames = server.take(&mut client);
    assert!(client.remove_recipe(a.id()).is_some());
    assert!(client.remove_recipe(a.id()).is_none());
    let data = Some(Response::Data { data: None, stat: stat(1) });
    Server::reply(&mut client, t(5), frames[0].header.xid, 3, ErrorCode::OK, data);
    assert_eq!(drain(&mut client), [ClientEvent::State(ConnectionState::Connected)]);
    assert_eq!(client.with(t(6), a, |p, _| p.log.len()), Err(ApiMisuse::UnknownRecipe(a.id().get())));

    // A reply with SessionExpired ends the session; a later op fails at once.
    let b = client.add(t(7), Probe::new("/b"));
    let id = client.submit(t(7), Op::sync(&ZkPath::new("/b").unwrap())).unwrap();
    let frames = server.take(&mut client);
    Server::reply(&mut client, t(8), frames[0].header.xid, 3, ErrorCode::SESSION_EXPIRED, None);
    assert_eq!(
        drain(&mut client),
        [
            ClientEvent::Reply { id, result: Err(RequestError::SessionExpired) },
            ClientEvent::State(ConnectionState::Lost)
        ]
    );
    client.with(t(9), b, |p, now| p.read(now)).unwrap();
    let log = client.with(t(9), b, |p, _| p.log.clone()).unwrap();
    assert_eq!(log, ["state Lost", "reply 0 Err(SessionExpired)"]);
    assert_eq!(client.submit(t(9), Op::sync(&ZkPath::root())), Err(ApiMisuse::SessionEnded));
}

#[test]
fn recipe_timers_are_part_of_poll_timeout() {
    let (mut client, _server) = connected_client();
    let mut probe = Probe::new("/a");
    probe.deadline = Some(t(50));
    let a = client.add(t(3), probe);
    assert_eq!(client.poll_timeout(), Some(t(50)));
    client.handle_timeout(t(50));
    let log = client.with(t(51), a, |p, _| p.log.clone()).unwrap();
    assert_eq!(log, ["timeout 50.000ms"]);
    assert!(client.poll_timeout().unwrap() > t(50));
}

/// A handle works on the client that made it only: on another client the
/// command does not run, even where that client has a recipe of the same
/// kind under the same id.
#[test]
fn a_handle_of_another_client_is_refused() {
    let (mut client, _server) = connected_client();
    let (mut other, _other_server) = connected_client();
    let a = client.add(t(3), Probe::new("/a"));
    let b = other.add(t(3), Probe::new("/b"));
    assert_eq!(a.id(), b.id());
    assert_eq!(other.with(t(3), a, |p, _| p.path.to_string()), Err(ApiMisuse::ForeignHandle));
    assert_eq!(client.with(t(3), b, |p, _| p.path.to_string()), Err(ApiMisuse::ForeignHandle));
    assert_eq!(client.with(t(3), a, |p, _| p.path.to_string()), Ok("/a".to_string()));
    assert_eq!(other.with(t(3), b, |p, _| p.path.to_string()), Ok("/b".to_string()));
}

/// A handle reserved elsewhere (a driver's caller side) reaches its recipe
/// once added; reserved ids and added ones never collide; a reservation of
/// another client adds nothing.
#[test]
fn a_reserved_handle_reaches_its_recipe_once_added() {
    let (mut client, _server) = connected_client();
    let (other, _other_server) = connected_client();
    let reserver = client.reserver();
    let early = reserver.reserve::<Probe>();
    let handle = early.handle();
    assert!(
        matches!(client.with(t(3), handle, |p, _| p.path.to_string()), Err(ApiMisuse::UnknownRecipe(_))),
        "not added yet: the command does not run"
    );
    let added = client.add(t(3), Probe::new("/added"));
    assert_ne!(added.id(), handle.id(), "add and reserve share one counter");
    assert_eq!(client.add_new(t(3), early.with(Probe::new("/reserved"))), Ok(handle.id()));
    assert_eq!(client.with(t(3), handle, |p, _| p.path.to_string()), Ok("/reserved".to_string()));
    assert_eq!(client.with(t(3), added, |p, _| p.path.to_string()), Ok("/added".to_string()));
    let foreign = other.reserver().reserve::<Probe>();
    assert_eq!(client.add_new(t(3), foreign.with(Probe::new("/foreign"))), Err(ApiMisuse::ForeignHandle));
}

#[test]
fn plain_requests_are_validated() {
    let (mut client, _server) = connected_client();
    assert_eq!(Op::from_request(Request::Ping), Err(ApiMisuse::ReservedOp(OpCode::PING)));
    assert!(client.submit(t(3), Op::sync(&ZkPath::root())).is_ok());
    assert!(matches!(Op::from_request(Request::CloseSession), Err(ApiMisuse::ReservedOp(OpCode::CLOSE_SESSION))));
}

#[test]
fn a_renewed_session_keeps_trying_through_failed_dials() {
    let cs = ConnectString::parse("127.0.0.1:2181").unwrap();
    let config = SessionConfig::new(cs, 1).with_session_timeout(Duration::from_secs(10)).with_give_up_unreachable(true);
    let mut client = TestClient::for_machines(config, t(0));
    client.set_renew_session(true);
    let resp = ConnectResponse {
        protocol_version: 0,
        timeout_ms: 10_000,
        session_id: 0x1234,
        passwd: Some(Bytes::from_static(&[7; 16])),
        read_only: Some(false),
    };
    let mut server = handshake(&mut client, &resp);
    let id = client.submit(t(3), Op::sync(&ZkPath::new("/a").unwrap())).unwrap();
    let frames = server.take(&mut client);
    Server::reply(&mut client, t(4), frames[0].header.xid, 3, ErrorCode::SESSION_EXPIRED, None);
    assert_eq!(
        drain(&mut client),
        [
            ClientEvent::State(ConnectionState::Connected),
            ClientEvent::Reply { id, result: Err(RequestError::SessionExpired) },
            ClientEvent::State(ConnectionState::Lost)
        ]
    );
    // The renewed session's dials fail, cycle after cycle: it never gives up.
    let mut now = 4;
    for _ in 0..5 {
        let at = client.poll_timeout().unwrap();
        assert!(at >= t(now));
        now = at.as_nanos() / 1_000_000;
        client.handle_timeout(at);
        assert!(matches!(client.poll_io(), Some(IoCommand::Connect { .. })), "a dial at {now} ms");
        client.handle_disconnected(at);
        assert_eq!(drain(&mut client), []);
        assert!(!client.session().is_ended());
    }
    assert_eq!(client.renewals(), 1);
}

#[test]
fn a_renewed_session_dials_the_updated_servers() {
    let cs = ConnectString::parse("127.0.0.1:2181/app").unwrap();
    let mut client = TestClient::for_machines(SessionConfig::new(cs, 1), t(0));
    client.set_renew_session(true);
    let servers = ConnectString::parse("10.0.0.9:2181").unwrap();
    assert_eq!(client.update_servers(t(0), &servers), Ok(true));
    let resp = ConnectResponse {
        protocol_version: 0,
        timeout_ms: 10_000,
        session_id: 0x1234,
        passwd: Some(Bytes::from_static(&[7; 16])),
        read_only: Some(false),
    };
    let mut server = handshake(&mut client, &resp);
    client.submit(t(3), Op::sync(&ZkPath::new("/a").unwrap())).unwrap();
    let frames = server.take(&mut client);
    Server::reply(&mut client, t(4), frames[0].header.xid, 3, ErrorCode::SESSION_EXPIRED, None);
    let _ = drain(&mut client);
    assert_eq!(client.renewals(), 1);
    // The new session starts from the list in use, not the connect string's.
    let at = client.poll_timeout().unwrap();
    client.handle_timeout(at);
    match client.poll_io() {
        Some(IoCommand::Connect { addr, .. }) => assert_eq!(addr.to_string(), "10.0.0.9:2181"),
        other => panic!("expected a dial, got {other:?}"),
    }
}

#[test]
fn the_session_confirms_the_quorum_while_any_recipe_holds_and_only_then() {
    let (mut client, mut server) = connected_client();
    let a = client.add(t(3), Probe::new("/a"));
    let b = client.add(t(3), Probe::new("/b"));
    let _ = drain(&mut client);
    assert!(!client.is_holding());
    assert!(!client.session().is_confirming());
    // `a` holds from 5 s (the handshake's bound is 9.5 s later: more than
    // two intervals of 1.67 s, so the first sync goes one interval later).
    client.with(t(5_000), a, |p, _| p.holding = true).unwrap();
    assert!(client.is_holding() && client.session().is_confirming());
    assert!(server.take(&mut client).is_empty(), "nothing at once");
    client.handle_timeout(t(6_667));
    let sent = server.take(&mut client);
    assert_eq!(sent.iter().map(|f| f.header.op).collect::<Vec<_>>(), [OpCode::SYNC]);
    // `b` holds too; `a` lets go: still confirming.
    client.with(t(6_700), b, |p, _| p.holding = true).unwrap();
    client.with(t(6_800), a, |p, _| p.holding = false).unwrap();
    assert!(client.session().is_confirming());
    // The last holder removed: off.
    let _ = client.remove_recipe(b.id());
    client.with(t(6_900), a, |_, _| ()).unwrap();
    assert!(!client.is_holding() && !client.session().is_confirming());
    Server::reply(&mut client, t(7_000), sent[0].header.xid, 0, ErrorCode::OK, Some(Response::Path("/".into())));
    client.handle_timeout(t(9_000));
    assert!(server.take(&mut client).iter().all(|f| f.header.op != OpCode::SYNC), "no sync once nothing is held");
}

#[test]
fn request_timings_pass_through_the_client_and_survive_a_renewal() {
    let cs = ConnectString::parse("127.0.0.1:2181").unwrap();
    let config = SessionConfig::new(cs, 1).with_session_timeout(Duration::from_secs(10)).with_request_timings(true);
    let mut client = TestClient::for_machines(config, t(0));
    client.set_renew_session(true);
    let resp = ConnectResponse {
        protocol_version: 0,
        timeout_ms: 10_000,
        session_id: 0x1234,
        passwd: Some(Bytes::from_static(&[7; 16])),
        read_only: Some(false),
    };
    let mut server = handshake(&mut client, &resp);
    client.submit(t(3), Op::get_data(&ZkPath::new("/a").unwrap(), false)).unwrap();
    client.submit(t(4), Op::sync(&ZkPath::new("/s").unwrap())).unwrap();
    let frames = server.take(&mut client);
    assert_eq!(frames.len(), 2);
    Server::reply(&mut client, t(9), frames[0].header.xid, 3, ErrorCode::NO_NODE, None);
    // The sync's answer expires the session; the client renews it at once,
    // within this input, and the timing is not lost with the old session.
    Server::reply(&mut client, t(15), frames[1].header.xid, 3, ErrorCode::SESSION_EXPIRED, None);
    assert_eq!(client.renewals(), 1);
    let timings: Vec<_> = std::iter::from_fn(|| client.poll_timing()).collect();
    assert_eq!(
        timings,
        [
            zoolock_core::RequestTiming { op: OpCode::GET_DATA, sent: t(3), answered: t(9) },
            zoolock_core::RequestTiming { op: OpCode::SYNC, sent: t(4), answered: t(15) },
        ]
    );
}
