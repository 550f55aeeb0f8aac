//! An in-memory ZooKeeper server, itself sans-IO, speaking the server side of
//! the wire protocol through `zoolock-wire`. It behaves like a standalone
//! ZooKeeper 3.8.0 unless [`ModelConfig`] says otherwise.
//!
//! # Driving it
//!
//! Inputs take `now` ([`zoolock_core::Instant`]); the model never reads a
//! clock:
//!
//! * [`ZkModel::connect`] accepts a TCP connection and returns its [`ConnId`];
//! * [`ZkModel::handle_bytes`] consumes the complete frames at the front of
//!   the buffer (a partial frame stays there);
//! * [`ZkModel::disconnect`] reports that the client went away;
//! * [`ZkModel::handle_timeout`] fires session expiry, the container/TTL
//!   reaper and the sessionless-connection timeout.
//!
//! Drain after every input, in this order: [`ZkModel::poll_writable`] and
//! [`ZkModel::poll_transmit`] for every connection with bytes to write (one
//! input can write to many connections: notifications), then
//! [`ZkModel::poll_close`] (the server closes the connection *after* writing
//! what it queued before, e.g. the closeSession reply or the expired answer),
//! then [`ZkModel::poll_timeout`].
//!
//! # What is modelled
//!
//! * **Data tree** with every Stat field as `DataNode.copyStat` fills it:
//!   czxid, mzxid, pzxid, ctime/mtime (`epoch_ms` + `now`), version, the
//!   client-visible cversion (`2 × child creates − numChildren`), aversion,
//!   ephemeralOwner (0 for containers and TTL nodes), dataLength,
//!   numChildren. Null data stays null. `/zookeeper`, `/zookeeper/quota` and
//!   `/zookeeper/config` exist as on a fresh server, so a fresh root shows
//!   cversion -1. `""` is an alias of `/` for lookups, as in `DataTree`.
//! * **Zxids**: every write request takes the next zxid before it is checked,
//!   so failed writes (and failed multis) consume one too, as do session
//!   creation, closeSession, expiry and each container deletion. Reads,
//!   pings, auth and watch requests do not. Reply headers carry the last
//!   zxid; the Unimplemented reply to an unknown opcode carries -1.
//! * **Sequential names** from the parent's internal child-create counter,
//!   `%010d` (so a wrapped counter gives `-2147483648`).
//! * **Containers** (opcode 19) are reaped once empty after having had a
//!   child, and **TTL nodes** (opcode 21, only with `extended_types`) once
//!   empty and unmodified for longer than their TTL; each deletion is its own
//!   transaction and fires NodeDeleted and NodeChildrenChanged. The reaper
//!   runs `container_delay` after a candidate appears (default: at once, on
//!   the next `handle_timeout`); a container that becomes empty because its
//!   child container was reaped goes on the following pass.
//! * **Sessions**: ids `session_id_base + n`; 16-byte passwords derived from
//!   the seed and the id; timeouts clamped to `[min, max]` (2 and 20 ticks by
//!   default); expiry exactly one negotiated timeout after the last packet
//!   (the real server rounds up to a tick). Reconnect with id and password
//!   first closes any other connection bound to the session (even with a
//!   wrong password, as the server does), then re-binds it with the new
//!   timeout; a wrong password or an unknown/expired session gets the
//!   invalid answer (timeOut 0, session 0, 16 zero bytes) and a close. A
//!   client whose lastZxidSeen is ahead of the model is closed without an
//!   answer. closeSession deletes the ephemerals (one zxid), answers, then
//!   closes. The readOnly byte is echoed (as `false`) only if the client sent
//!   one.
//! * **Watches**: see `watches.rs`. One-shot data/exist/child watches, with
//!   the right event types and one notification per connection per trigger;
//!   persistent and persistent-recursive (addWatch); checkWatches and
//!   removeWatches (types 1–3; 4 and 5 do not exist in 3.8 and are a
//!   MarshallingError; checkWatches succeeds if *any* connection has a
//!   watch of that kind at the path, as 3.8.0 does); setWatches/setWatches2
//!   catch-up per the table in
//!   `zk-wire.md` §5, catch-up events before the reply. Notifications carry
//!   zxid -1 (3.8). A notification caused by a request is queued before that
//!   request's reply, and to other connections at once.
//! * **Multi** is atomic: ops see earlier ops' effects, and a failure gives
//!   OK / the error / RuntimeInconsistency per op with nothing applied (the
//!   zxid is still consumed). multiRead answers each op on its own. A create2
//!   inside a multi is answered as a plain create (3.8.0,
//!   `multi_create2_as_create`); createContainer and createTTL inside a multi
//!   get type 15 with the Stat.
//! * **Errors and check order** as `PrepRequestProcessor` /
//!   `FinalRequestProcessor`: see `txn.rs` and `ops.rs`. Paths are validated
//!   where the server validates them, and only there (reads do plain
//!   lookups, so an invalid path is simply NoNode; exists rejects only a NUL).
//! * **ACLs** are enforced (unless `enforce_acls` is off): READ for getData,
//!   getChildren(2), getAllChildrenNumber, multiRead ops and check; READ or
//!   ADMIN for getACL (digest ids masked as `user:x` without ADMIN); CREATE on
//!   the parent for creates; DELETE on the parent for deletes; WRITE for
//!   setData; ADMIN for setACL. exists and sync are not checked (as in
//!   ZooKeeper). Schemes: `world:anyone`, `digest` (SHA-1, as
//!   `DigestAuthenticationProvider`), `ip` (exact or CIDR, against
//!   `client_ip`), and `auth` (expanded to the caller's digest ids at create
//!   and setACL; InvalidACL without one). Auth packets: `digest` and `ip`
//!   succeed (reply xid echoed, zxid 0); any other scheme gets AuthFailed and
//!   a close. Identities belong to the connection, as in ZooKeeper, so a
//!   client re-sends them after a reconnect.
//! * **Framing**: a length prefix above `max_frame_len` (jute.maxbuffer) or
//!   negative, a ConnectRequest that does not decode, or a frame shorter than
//!   a request header closes the connection without a reply. A request body
//!   that does not decode is answered MarshallingError and the connection
//!   stays open (a malformed multi consumes a zxid, as in ZooKeeper).
//!   Unknown opcodes get Unimplemented (zxid -1) and a close; so do
//!   createSession (-10) and sasl (102), which the model does not implement.
//!   reconfig is ReconfigDisabled (a write, so it consumes a zxid).
//! * **Oddities of 3.8.0, checked against the real server**: a standalone
//!   `check` that succeeds is never answered (see [`StandaloneCheck`]); a
//!   deleteContainer (20) sent by a client is always BadArguments (3.8 reads
//!   its body as raw path bytes, so the length prefix puts a NUL in the
//!   path), consuming a zxid; createContainer with any flags makes a
//!   container, and create with flags 4 a persistent node.
//!
//! # What is not modelled
//!
//! Quorums, leader election and observers (the model is one standalone
//! server, or, with [`ModelConfig::follower`], one follower whose leader
//! expires sessions from relayed touches and whose connections can be cut
//! off from it: `isolation.rs`; `sync` just echoes the path); read-only mode; local
//! sessions; SASL, Kerberos, x509 and the `super` user; quotas; four-letter
//! words; request throttling and `maxClientCnxns`; the tick rounding of
//! session expiry; the connection-level `SessionMoved` race; the
//! `maxNeverUsedIntervalMs` of never-used containers; 3.9's notification
//! zxids (available with `notification_txn_zxid`); ZOOKEEPER-4743's skip of
//! version -1 (versions wrap as in 3.8.0). Trailing bytes after a request
//! body are a MarshallingError here (Java ignores them), because the wire
//! codec decodes whole frames. getChildren lists names sorted (ZooKeeper's
//! order is unspecified) and ephemerals of a closing session are deleted in
//! path order.

#![cfg_attr(docsrs, feature(doc_cfg))]

mod acl;
mod config;
mod digest;
mod isolation;
mod multi;
mod ops;
mod path;
mod server;
mod session;
mod tree;
mod txn;
mod watches;

#[cfg(feature = "server")]
pub mod testing_server;

use std::collections::{BTreeMap, VecDeque};

use bytes::{Bytes, BytesMut};
use zoolock_core::Instant;
use zoolock_wire::{Acl, DecodeError, OpCode, Stat};

pub use config::{ModelConfig, StandaloneCheck};
#[cfg(feature = "server")]
pub use testing_server::{TestingServer, ThreadedServer};

use server::Conn;
use session::Sessions;
use tree::DataTree;
use watches::Watches;

/// Identifies one accepted connection. Never reused.
#[derive(Debug, Clone, Copy, PartialEq, Eq, PartialOrd, Ord, Hash)]
pub struct ConnId(pub u64);

/// Why the server closed a connection.
#[derive(Debug, Clone, PartialEq, Eq, thiserror::Error)]
#[non_exhaustive]
pub enum CloseReason {
    /// The client sent closeSession; the reply went out first.
    #[error("the client closed its session")]
    SessionClosed,
    /// The session expired while this connection was bound to it.
    #[error("session 0x{0:x} expired")]
    SessionExpired(i64),
    /// The handshake named an unknown or expired session, or a wrong
    /// password; the invalid answer went out first.
    #[error("the handshake named an invalid session")]
    InvalidSession,
    /// Another connection re-attached this connection's session.
    #[error("session 0x{0:x} moved to another connection")]
    SessionMoved(i64),
    /// The client has seen a newer zxid than the server has.
    #[error("client zxid 0x{client:x} is ahead of the server's 0x{server:x}")]
    ClientAhead {
        /// lastZxidSeen from the ConnectRequest.
        client: i64,
        /// The model's last zxid.
        server: i64,
    },
    /// An opcode the server does not serve; the Unimplemented reply went out first.
    #[error("unimplemented opcode {0}")]
    Unimplemented(OpCode),
    /// An auth packet with an unknown scheme; the AuthFailed reply went out first.
    #[error("authentication failed")]
    AuthFailed,
    /// The connection's server lost the leader for `syncLimit × tickTime`
    /// and shut its clients' connections (a follower only).
    #[error("the server lost the leader")]
    LeaderLost,
    /// The bytes could not be framed or decoded.
    #[error("malformed input: {0}")]
    Malformed(DecodeError),
    /// No ConnectRequest arrived within the sessionless timeout.
    #[error("no handshake in time")]
    HandshakeTimeout,
    /// The connection held more watches than `ModelConfig::max_watches`.
    #[error("more than {0} watches")]
    TooManyWatches(usize),
}

/// A node as tests and oracles see it.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct NodeInfo {
    /// The data (`None` is Java's null).
    pub data: Option<Bytes>,
    /// The Stat a client would get.
    pub stat: Stat,
    /// The ACL.
    pub acl: Vec<Acl>,
}

/// The in-memory ZooKeeper. See the module docs.
#[derive(Debug)]
pub struct ZkModel {
    config: ModelConfig,
    tree: DataTree,
    watches: Watches,
    sessions: Sessions,
    conns: BTreeMap<ConnId, Conn>,
    next_conn: u64,
    zxid: i64,
    writable: VecDeque<ConnId>,
    closing: VecDeque<ConnId>,
    close_reasons: BTreeMap<ConnId, CloseReason>,
    reap_at: Option<Instant>,
    /// The isolated connection whose request is being answered from its
    /// server's view (`isolation.rs`).
    answering: Option<ConnId>,
}

impl Default for ZkModel {
    fn default() -> Self {
        ZkModel::new(ModelConfig::default())
    }
}

impl ZkModel {
    /// A fresh server.
    pub fn new(config: ModelConfig) -> ZkModel {
        ZkModel {
            sessions: Sessions::new(config.session_id_base, config.seed),
            config,
            tree: DataTree::new(),
            watches: Watches::default(),
            conns: BTreeMap::new(),
            next_conn: 0,
            zxid: 0,
            writable: VecDeque::new(),
            closing: VecDeque::new(),
            close_reasons: BTreeMap::new(),
            reap_at: None,
            answering: None,
        }
    }

    /// The configuration.
    pub fn config(&self) -> &ModelConfig {
        &self.config
    }

    // ---- outputs -------------------------------------------------------------------

    /// Moves the bytes queued for `conn` into `dst`; returns how many.
    pub fn poll_transmit(&mut self, conn: ConnId, dst: &mut BytesMut) -> usize {
        let Some(c) = self.conns.get_mut(&conn) else { return 0 };
        let n = c.out.len();
        dst.extend_from_slice(&c.out);
        c.out.clear();
        c.queued = false;
        if c.is_closed() {
            self.conns.remove(&conn);
        }
        n
    }

    /// The next connection with bytes waiting for [`ZkModel::poll_transmit`]
    /// (each reported once until more bytes are queued).
    pub fn poll_writable(&mut self) -> Option<ConnId> {
        while let Some(id) = self.writable.pop_front() {
            if self.conns.get(&id).is_some_and(|c| !c.out.is_empty()) {
                return Some(id);
            }
        }
        None
    }

    /// The next connection the server closed. Write what
    /// [`ZkModel::poll_transmit`] still has for it, then close the socket.
    pub fn poll_close(&mut self) -> Option<ConnId> {
        self.closing.pop_front()
    }

    /// When [`ZkModel::handle_timeout`] next has work: a session expiry, the
    /// reaper, or a handshake deadline. `None` = nothing scheduled.
    pub fn poll_timeout(&self) -> Option<Instant> {
        let handshakes = self.conns.values().filter_map(|c| c.handshake_deadline());
        let quorum = self.quorum_timeout();
        self.sessions.next_deadline().into_iter().chain(self.reap_at).chain(handshakes).chain(quorum).min()
    }

    // ---- inspection ----------------------------------------------------------------

    /// The last zxid.
    pub fn zxid(&self) -> i64 {
        self.zxid
    }

    /// The node at `path`.
    pub fn node(&self, path: &str) -> Option<NodeInfo> {
        self.tree.get(path).map(|n| NodeInfo { data: n.data.clone(), stat: n.stat(), acl: n.acl.clone() })
    }

    /// The children of `path`, sorted.
    pub fn children(&self, path: &str) -> Option<Vec<String>> {
        self.tree.get(path).map(|n| n.children.iter().cloned().collect())
    }

    /// Every node path, sorted (system nodes included).
    pub fn paths(&self) -> Vec<String> {
        self.tree.paths().map(str::to_string).collect()
    }

    /// The live sessions.
    pub fn sessions(&self) -> Vec<i64> {
        self.sessions.ids().collect()
    }

    /// The session bound to `conn`, once its handshake succeeded.
    pub fn session_of(&self, conn: ConnId) -> Option<i64> {
        self.conns.get(&conn).and_then(Conn::session)
    }

    /// The connection a session is bound to.
    pub fn conn_of(&self, session: i64) -> Option<ConnId> {
        self.sessions.get(session).and_then(|s| s.conn)
    }

    /// The session's ephemeral nodes, sorted.
    pub fn ephemerals(&self, session: i64) -> Vec<String> {
        self.tree.ephemerals(session)
    }

    /// Why the server closed `conn`, if it did.
    pub fn close_reason(&self, conn: ConnId) -> Option<&CloseReason> {
        self.close_reasons.get(&conn)
    }

    /// Number of watch registrations (data + child tables).
    pub fn watch_count(&self) -> usize {
        self.watches.len()
    }

    /// Connections accepted and not yet gone.
    pub fn open_connections(&self) -> usize {
        self.conns.values().filter(|c| !c.is_closed()).count()
    }

    /// The wall clock (ms) the model stamps on nodes at `now`.
    pub fn wall_ms(&self, now: Instant) -> i64 {
        self.config.epoch_ms.saturating_add(i64::try_from(now.as_nanos() / 1_000_000).unwrap_or(i64::MAX))
    }
}
