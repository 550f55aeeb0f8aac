//! [`ModelConfig`]: the knobs of the in-memory server.

use core::time::Duration;

use zoolock_wire::JUTE_MAXBUFFER;

/// How a standalone `check` (opcode 13 outside a multi) is answered.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Default)]
#[non_exhaustive]
pub enum StandaloneCheck {
    /// ZooKeeper 3.8.0 as observed (the default): the check runs as a write
    /// (a zxid is consumed); a failure is answered with its error (NoNode,
    /// NoAuth, BadVersion, BadArguments), but a success is never answered
    /// (the server fails to serialize its reply) and the connection stays
    /// open, so a client waiting in FIFO order sees the next reply "out of
    /// order".
    #[default]
    Unanswered,
    /// ZooKeeper 3.8.5+ / 3.9.3+ (ZOOKEEPER-2623): Unimplemented, then the
    /// connection is closed.
    Reject,
}

/// Configuration of a [`ZkModel`](super::ZkModel). `ModelConfig::default()`
/// behaves like a fresh standalone ZooKeeper 3.8.0 with `tickTime=2000`.
#[derive(Debug, Clone)]
#[non_exhaustive]
pub struct ModelConfig {
    /// Seeds the session passwords (the real server derives them from a
    /// secret and the session id; so does the model).
    pub seed: u64,
    /// `tickTime`. The session timeout bounds default to 2 and 20 ticks.
    pub tick: Duration,
    /// The server is a follower of a quorum (`isolation.rs`): its clients'
    /// touches reach the leader, which alone expires sessions, in its
    /// replies to the leader's pings (every `tick / 2`, at a phase drawn
    /// from the seed), and a session expires one timeout after the relay
    /// that last touched it; a connection can be isolated from the leader
    /// ([`ZkModel::isolate`](crate::ZkModel::isolate)). Off (the default):
    /// a standalone server, each packet touching its session at once.
    pub follower: bool,
    /// `syncLimit`: an isolated follower gives up (closes its clients'
    /// connections) `sync_limit × tick` after it lost the leader.
    pub sync_limit: u32,
    /// `minSessionTimeout`; `None` = 2 × tick.
    pub min_session_timeout: Option<Duration>,
    /// `maxSessionTimeout`; `None` = 20 × tick.
    pub max_session_timeout: Option<Duration>,
    /// Session ids are `session_id_base + n` for n = 1, 2, ... (the real
    /// server puts its id in the top byte and a timestamp below it).
    pub session_id_base: i64,
    /// Wall clock (ms since the Unix epoch) at `Instant::ZERO`; ctime and mtime
    /// are `epoch_ms + now`.
    pub epoch_ms: i64,
    /// Delay between a container (or TTL node) becoming deletable and the
    /// reaper deleting it. The real server checks every 60 s
    /// (`znode.container.checkIntervalMs`); the default, zero, reaps on the
    /// next `handle_timeout`, which `poll_timeout` asks for at once.
    pub container_delay: Duration,
    /// `zookeeper.extendedTypesEnabled`: allow TTL nodes (createTTL and the
    /// TTL create modes). Off by default, as in ZooKeeper, which then answers
    /// Unimplemented.
    pub extended_types: bool,
    /// Enforce node ACLs (see the module docs for what is checked). On by
    /// default; off behaves like `zookeeper.skipACL=yes`.
    pub enforce_acls: bool,
    /// `jute.maxbuffer` (1 MiB): a client frame longer than this closes the
    /// connection without a reply. The length prefix alone decides: nothing
    /// is allocated for a frame over the limit.
    pub max_frame_len: usize,
    /// Drop a connection that sends no ConnectRequest within this time
    /// (`zookeeper.nio.sessionlessCnxnTimeout`, 10 s); `None` never.
    pub sessionless_timeout: Option<Duration>,
    /// `maxClientCnxns` (60): connections one client address may hold open
    /// at once; one more is closed as soon as it is accepted, before it can
    /// send anything. Enforced by
    /// `TestingServer` (feature `server`), since the model itself has
    /// no addresses. `None`: no limit.
    pub max_client_cnxns: Option<usize>,
    /// Bytes one connection may have waiting for the client to read (16 MiB):
    /// a client that stops reading is dropped (as on a network error; its
    /// session lives on) instead of making the server hold its output.
    /// Enforced by `TestingServer` (feature `server`), which never
    /// waits for a slow reader. `None`: no limit.
    pub max_queued_bytes: Option<usize>,
    /// Watch registrations one session's connection may hold (100,000; the
    /// data and child tables counted together, as `wchs` reports them). A
    /// request that leaves more closes the connection after its reply, as an
    /// oversized frame does, and its watches go with it; the session lives
    /// on. ZooKeeper has no such limit. `None`: no limit.
    pub max_watches: Option<usize>,
    /// How a standalone `check` is answered.
    pub standalone_check: StandaloneCheck,
    /// ZooKeeper 3.8.0 answers a create2 inside a multi with a plain create
    /// result (type 1, path only; ZOOKEEPER-4026). `false` answers type 15
    /// with the Stat, as fixed servers do.
    pub multi_create2_as_create: bool,
    /// ZooKeeper 3.9 (ZOOKEEPER-4655) puts the triggering transaction's zxid
    /// in notification headers; 3.8 and the default put -1. SetWatches
    /// catch-up events carry -1 either way.
    pub notification_txn_zxid: bool,
    /// The client address every connection gets as its `ip` identity (used by
    /// `ip:` ACLs and whoAmI).
    pub client_ip: String,
}

impl Default for ModelConfig {
    fn default() -> Self {
        ModelConfig {
            seed: 0x5eed,
            tick: Duration::from_millis(2000),
            follower: false,
            sync_limit: 5,
            min_session_timeout: None,
            max_session_timeout: None,
            session_id_base: 0x0100_0000_0000_0000,
            epoch_ms: 1_700_000_000_000,
            container_delay: Duration::ZERO,
            extended_types: false,
            enforce_acls: true,
            max_frame_len: JUTE_MAXBUFFER,
            sessionless_timeout: Some(Duration::from_secs(10)),
            max_client_cnxns: Some(60),
            max_queued_bytes: Some(16 << 20),
            max_watches: Some(100_000),
            standalone_check: StandaloneCheck::default(),
            multi_create2_as_create: true,
            notification_txn_zxid: false,
            client_ip: "127.0.0.1".into(),
        }
    }
}

impl ModelConfig {
    /// Sets the seed of the session passwords.
    pub fn with_seed(mut self, seed: u64) -> Self {
        self.seed = seed;
        self
    }

    /// Makes the server a follower of a quorum (see [`ModelConfig::follower`]).
    pub fn with_follower(mut self, follower: bool) -> Self {
        self.follower = follower;
        self
    }

    /// Sets `syncLimit` (in ticks).
    pub fn with_sync_limit(mut self, sync_limit: u32) -> Self {
        self.sync_limit = sync_limit;
        self
    }

    /// Sets `tickTime` (the default timeout bounds follow it).
    pub fn with_tick(mut self, tick: Duration) -> Self {
        self.tick = tick;
        self
    }

    /// Sets the container reaper delay.
    pub fn with_container_delay(mut self, container_delay: Duration) -> Self {
        self.container_delay = container_delay;
        self
    }

    /// Enables or disables TTL nodes.
    pub fn with_extended_types(mut self, extended_types: bool) -> Self {
        self.extended_types = extended_types;
        self
    }

    /// Enables or disables ACL enforcement.
    pub fn with_enforce_acls(mut self, enforce_acls: bool) -> Self {
        self.enforce_acls = enforce_acls;
        self
    }

    /// Sets how a standalone check is answered.
    pub fn with_standalone_check(mut self, standalone_check: StandaloneCheck) -> Self {
        self.standalone_check = standalone_check;
        self
    }

    /// Sets `jute.maxbuffer`, the largest client frame.
    pub fn with_max_frame_len(mut self, max_frame_len: usize) -> Self {
        self.max_frame_len = max_frame_len;
        self
    }

    /// Sets the handshake deadline of a new connection (`None`: never).
    pub fn with_sessionless_timeout(mut self, sessionless_timeout: Option<Duration>) -> Self {
        self.sessionless_timeout = sessionless_timeout;
        self
    }

    /// Sets `maxClientCnxns`, open connections per client address (`None`:
    /// no limit).
    pub fn with_max_client_cnxns(mut self, max_client_cnxns: Option<usize>) -> Self {
        self.max_client_cnxns = max_client_cnxns;
        self
    }

    /// Sets the bytes a connection may have waiting for its client (`None`:
    /// no limit).
    pub fn with_max_queued_bytes(mut self, max_queued_bytes: Option<usize>) -> Self {
        self.max_queued_bytes = max_queued_bytes;
        self
    }

    /// Sets the watch registrations a session's connection may hold
    /// (`None`: no limit).
    pub fn with_max_watches(mut self, max_watches: Option<usize>) -> Self {
        self.max_watches = max_watches;
        self
    }

    /// Sets the negotiated timeout bounds explicitly.
    pub fn with_session_timeout_bounds(mut self, min: Duration, max: Duration) -> Self {
        self.min_session_timeout = Some(min);
        self.max_session_timeout = Some(max);
        self
    }

    /// The negotiated-timeout floor in ms.
    pub(crate) fn min_timeout_ms(&self) -> i32 {
        ms(self.min_session_timeout.unwrap_or(self.tick * 2))
    }

    /// The negotiated-timeout ceiling in ms.
    pub(crate) fn max_timeout_ms(&self) -> i32 {
        ms(self.max_session_timeout.unwrap_or(self.tick * 20))
    }
}

fn ms(d: Duration) -> i32 {
    i32::try_from(d.as_millis()).unwrap_or(i32::MAX)
}
