//! zoolock-core's Session, Client and lock recipes against the model,
//! in-process: a tiny in-memory pipe per client and one virtual clock. No TCP.

use std::time::Duration;

use bytes::BytesMut;
use zoolock_core::{
    Client, ClientEvent, ConnectString, ConnectionState, FencingToken, Handle, Instant, IoCommand, RecipeEvent,
    SessionConfig, ZkPath,
    recipes::{LockConfig, Mutex, OpPlan, Semaphore},
};
use zoolock_model::{ConnId, ModelConfig, ZkModel};

/// One zoolock client and its end of the pipe.
struct Peer {
    client: Client,
    conn: Option<ConnId>,
    to_model: BytesMut,
    events: Vec<ClientEvent>,
}

/// The model plus clients, on one virtual clock.
struct World {
    model: ZkModel,
    now: Instant,
    peers: Vec<Peer>,
}

impl World {
    fn new() -> World {
        World { model: ZkModel::new(ModelConfig::default()), now: Instant::ZERO, peers: Vec::new() }
    }

    fn add_client(&mut self, seed: u64) -> usize {
        let config = SessionConfig::new(ConnectString::parse("127.0.0.1:2181").unwrap(), seed)
            .with_session_timeout(Duration::from_secs(10))
            .with_reconnect_jitter(Duration::ZERO);
        let client = Client::new(config, self.now);
        self.peers.push(Peer { client, conn: None, to_model: BytesMut::new(), events: Vec::new() });
        // The session dials on its first timer, due now.
        self.advance(0);
        self.peers.len() - 1
    }

    /// Moves bytes both ways until nothing moves.
    fn pump(&mut self) {
        for _ in 0..10_000 {
            let mut progressed = false;
            for p in &mut self.peers {
                while let Some(io) = p.client.poll_io() {
                    progressed = true;
                    match io {
                        IoCommand::Connect { .. } => {
                            p.conn = Some(self.model.connect(self.now));
                            p.to_model.clear();
                            p.client.handle_connected(self.now);
                        }
                        IoCommand::Close => {
                            if let Some(conn) = p.conn.take() {
                                self.model.disconnect(self.now, conn);
                            }
                        }
                        _ => {}
                    }
                }
                let mut out = BytesMut::new();
                if p.client.poll_transmit(&mut out) > 0 {
                    progressed = true;
                    if let Some(conn) = p.conn {
                        p.to_model.extend_from_slice(&out);
                        self.model.handle_bytes(self.now, conn, &mut p.to_model);
                    }
                }
                while let Some(ev) = p.client.poll_event() {
                    progressed = true;
                    p.events.push(ev);
                }
            }
            while let Some(conn) = self.model.poll_writable() {
                progressed = true;
                self.deliver(conn);
            }
            while let Some(conn) = self.model.poll_close() {
                progressed = true;
                self.deliver(conn);
                if let Some(p) = self.peers.iter_mut().find(|p| p.conn == Some(conn)) {
                    p.conn = None;
                    p.client.handle_disconnected(self.now);
                }
            }
            if !progressed {
                return;
            }
        }
        panic!("the pipe never went quiet");
    }

    fn deliver(&mut self, conn: ConnId) {
        let mut buf = BytesMut::new();
        self.model.poll_transmit(conn, &mut buf);
        if buf.is_empty() {
            return;
        }
        if let Some(p) = self.peers.iter_mut().find(|p| p.conn == Some(conn)) {
            p.client.handle_bytes(self.now, &mut buf).unwrap();
        }
    }

    /// Runs every timer up to `now + ms`, in order.
    fn advance(&mut self, ms: u64) {
        let end = self.now + Duration::from_millis(ms);
        loop {
            let next = self
                .peers
                .iter()
                .filter_map(|p| p.client.poll_timeout())
                .chain(self.model.poll_timeout())
                .min()
                .filter(|t| *t <= end);
            let Some(t) = next else { break };
            self.now = self.now.max(t);
            self.model.handle_timeout(self.now);
            for p in &mut self.peers {
                if p.client.poll_timeout().is_some_and(|t| t <= self.now) {
                    p.client.handle_timeout(self.now);
                }
            }
            self.pump();
        }
        self.now = end;
        self.pump();
    }

    fn mutex(&mut self, peer: usize, path: &str) -> Handle<Mutex> {
        let config = LockConfig::new(peer as u64 + 100).with_plan(OpPlan::Pipelined);
        let id = self.peers[peer].client.add(self.now, Mutex::new(ZkPath::new(path).unwrap(), config));
        self.pump();
        id
    }

    fn acquire(&mut self, peer: usize, id: Handle<Mutex>) {
        let now = self.now;
        self.peers[peer].client.with(now, id, |m, now| m.acquire(now, None)).unwrap().unwrap();
        self.pump();
    }

    fn release(&mut self, peer: usize, id: Handle<Mutex>) {
        let now = self.now;
        self.peers[peer].client.with(now, id, |m, now| m.release(now)).unwrap().unwrap();
        self.pump();
    }

    /// The recipe events of `peer` so far (taken).
    fn recipe_events(&mut self, peer: usize) -> Vec<RecipeEvent> {
        let events = std::mem::take(&mut self.peers[peer].events);
        events
            .into_iter()
            .filter_map(|e| match e {
                ClientEvent::Recipe { event, .. } => Some(event),
                _ => None,
            })
            .collect()
    }

    fn states(&mut self, peer: usize) -> Vec<ConnectionState> {
        let (states, rest): (Vec<_>, Vec<_>) =
            std::mem::take(&mut self.peers[peer].events).into_iter().partition(|e| matches!(e, ClientEvent::State(_)));
        self.peers[peer].events = rest;
        states
            .into_iter()
            .map(|e| match e {
                ClientEvent::State(s) => s,
                _ => unreachable!(),
            })
            .collect()
    }

    /// Paths outside `/zookeeper`.
    fn user_paths(&self) -> Vec<String> {
        self.model.paths().into_iter().filter(|p| p != "/" && !p.starts_with("/zookeeper")).collect()
    }
}

fn acquired(events: &[RecipeEvent]) -> Option<(String, FencingToken)> {
    events.iter().find_map(|e| match e {
        RecipeEvent::Acquired { node, token } => Some((String::from(&**node), *token)),
        _ => None,
    })
}

#[test]
fn two_sessions_contend_for_a_mutex() {
    let mut w = World::new();
    let a = w.add_client(1);
    let b = w.add_client(2);
    assert_eq!(w.states(a), [ConnectionState::Connected]);
    assert_eq!(w.states(b), [ConnectionState::Connected]);
    let ma = w.mutex(a, "/app/lock");
    let mb = w.mutex(b, "/app/lock");

    // A acquires on an empty server: parents are created as containers.
    w.acquire(a, ma);
    let (node_a, token_a) = acquired(&w.recipe_events(a)).expect("A holds the lock");
    assert!(node_a.starts_with("/app/lock/_c_"), "{node_a}");
    assert_eq!(w.model.node(&node_a).unwrap().stat.ephemeral_owner, w.peers[a].client.session().session_id());
    assert_eq!(token_a.0, w.model.node(&node_a).unwrap().stat.czxid);

    // B queues behind A.
    w.acquire(b, mb);
    assert_eq!(acquired(&w.recipe_events(b)), None);
    assert_eq!(w.model.children("/app/lock").unwrap().len(), 2);
    w.advance(5_000);
    assert_eq!(acquired(&w.recipe_events(b)), None, "pings keep both sessions; B still waits");

    // A releases: B gets it with a larger fencing token.
    w.release(a, ma);
    assert!(w.recipe_events(a).contains(&RecipeEvent::Released));
    let (node_b, token_b) = acquired(&w.recipe_events(b)).expect("B holds the lock after A released");
    assert!(token_b > token_a);
    assert_eq!(w.model.children("/app/lock").unwrap(), [node_b.rsplit('/').next().unwrap()]);

    // B releases: the lock node goes, and the reaper removes both containers.
    w.release(b, mb);
    assert!(w.recipe_events(b).contains(&RecipeEvent::Released));
    w.advance(1);
    assert_eq!(w.user_paths(), Vec::<String>::new());

    // Acquiring again re-creates the parents after the NoNode.
    w.acquire(a, ma);
    assert!(acquired(&w.recipe_events(a)).is_some());
    w.release(a, ma);
    w.advance(1);
    assert_eq!(w.user_paths(), Vec::<String>::new(), "no leaked nodes");
}

#[test]
fn an_expired_holder_loses_the_lock_to_the_waiter() {
    let mut w = World::new();
    let a = w.add_client(1);
    let b = w.add_client(2);
    let ma = w.mutex(a, "/l");
    let mb = w.mutex(b, "/l");
    w.acquire(a, ma);
    assert!(acquired(&w.recipe_events(a)).is_some());
    w.acquire(b, mb);
    let session_a = w.peers[a].client.session().session_id();
    assert!(w.model.expire_session(w.now, session_a));
    w.pump();
    assert!(acquired(&w.recipe_events(b)).is_some(), "B's watch on A's node fired at once");
    // A sees the connection drop, reconnects and gets the expired answer.
    w.advance(3_000);
    let states = w.states(a);
    assert_eq!(states, [ConnectionState::Suspended, ConnectionState::Lost]);
    let events = w.recipe_events(a);
    assert!(events.contains(&RecipeEvent::Lost), "{events:?}");
    w.release(b, mb);
    w.advance(1);
    assert_eq!(w.user_paths(), Vec::<String>::new());
}

#[test]
fn a_reconnect_keeps_the_hold() {
    let mut w = World::new();
    let a = w.add_client(1);
    let ma = w.mutex(a, "/l");
    w.acquire(a, ma);
    let (node, _) = acquired(&w.recipe_events(a)).unwrap();
    let _ = w.states(a);
    // The server drops the connection; the session survives.
    let conn = w.peers[a].conn.unwrap();
    w.model.drop_connection(w.now, conn);
    w.peers[a].conn = None;
    w.peers[a].client.handle_disconnected(w.now);
    w.pump();
    w.advance(3_000);
    let states = w.states(a);
    assert!(states.contains(&ConnectionState::Suspended), "{states:?}");
    assert!(states.contains(&ConnectionState::Reconnected), "{states:?}");
    assert!(w.model.node(&node).is_some());
    let events = w.recipe_events(a);
    assert!(events.contains(&RecipeEvent::Reconnected), "{events:?}");
    w.release(a, ma);
    assert!(w.model.node(&node).is_none());
}

#[test]
fn a_two_lease_semaphore() {
    let mut w = World::new();
    let peers: Vec<usize> = (0..3).map(|i| w.add_client(i + 1)).collect();
    let ids: Vec<Handle<Semaphore>> = peers
        .iter()
        .map(|&p| {
            let sem = Semaphore::new(ZkPath::new("/sem").unwrap(), 2, LockConfig::new(p as u64 + 7));
            w.peers[p].client.add(w.now, sem)
        })
        .collect();
    for (&p, &id) in peers.iter().zip(&ids) {
        let now = w.now;
        w.peers[p].client.with(now, id, |s, now| s.acquire(now, 1, None)).unwrap().unwrap();
        w.pump();
    }
    let got: Vec<bool> = peers.iter().map(|&p| acquired(&w.recipe_events(p)).is_some()).collect();
    assert_eq!(got, [true, true, false]);
    let now = w.now;
    w.peers[0].client.with(now, ids[0], |s, now| s.return_all(now)).unwrap();
    w.pump();
    assert!(acquired(&w.recipe_events(2)).is_some(), "the third gets the freed lease");
}
