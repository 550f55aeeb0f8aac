//! Session configuration.

use core::time::Duration;

use zoolock_wire::DEFAULT_MAX_FRAME_LEN;

use crate::acl::AclPolicy;
use crate::connect_string::ConnectString;

use super::sasl::SaslConfig;

/// The default of [`SessionConfig::max_misbehaving_connections`].
pub const DEFAULT_MAX_MISBEHAVING_CONNECTIONS: u32 = 3;

/// How a [`Session`](super::Session) connects and times itself.
#[derive(Debug, Clone)]
#[non_exhaustive]
pub struct SessionConfig {
    /// Hosts (shuffled from `seed`) and optional chroot.
    pub connect_string: ConnectString,
    /// Requested session timeout; the server clamps it and every timer derives
    /// from the negotiated value.
    pub session_timeout: Duration,
    /// Seeds host shuffling and reconnect jitter.
    pub seed: u64,
    /// Whether a read-only server is acceptable (sent in the handshake).
    pub can_be_read_only: bool,
    /// Largest frame accepted or sent.
    pub max_frame_len: usize,
    /// Upper bound of the random pause before each reconnect attempt (herd
    /// avoidance, as the Java client's 0–1 s); capped at a tenth of the timeout.
    pub reconnect_jitter: Duration,
    /// Per-attempt limit for TCP connect plus handshake; `None` means the
    /// session timeout divided by the number of hosts, as the Java client does.
    pub connect_timeout: Option<Duration>,
    /// The SASL mechanism (DIGEST-MD5, or GSSAPI from the driver), run after
    /// every handshake before any other request; `None` for no SASL.
    pub sasl: Option<SaslConfig>,
    /// Consecutive connections on which the server may misbehave (a wrong
    /// xid, an undecodable frame, a reply to nothing) before the session
    /// ends with [`RequestError::ServerMisbehaved`](crate::RequestError).
    /// A reply that matches its request resets the count. The session also
    /// gives up at a misbehaving connection once the session timeout has
    /// passed since the first of the run, whichever comes first. At least 1.
    pub max_misbehaving_connections: u32,
    /// End the session with [`ConnectionState::Unreachable`](super::ConnectionState::Unreachable)
    /// when, before its first handshake, every host of one full cycle failed
    /// to connect (the transport reported each dial as failed: refused, not
    /// resolved, a failed TLS handshake) instead of trying again. A host that
    /// accepts and then does not answer, or a dial the session itself timed
    /// out, does not count: such a cycle keeps trying. Never applies once a
    /// session has been established, nor to a session renewed after an
    /// expiry. Off by default (the Java client keeps trying); the async
    /// driver turns it on so that `connect` fails fast.
    pub give_up_unreachable: bool,
    /// Create the chroot's root when it is missing, as a Curator namespace
    /// is: after the handshake of every new session (before any request
    /// goes out, and before `Connected` is reported), and again whenever a
    /// create directly under the client's `/` answers NoNode (then the
    /// create is retried, at most three times). `None` (the default) never
    /// creates it. Ignored without a chroot.
    pub create_chroot: Option<ChrootPolicy>,
    /// Confirm, while anything is held, that the quorum still keeps the
    /// session alive (a `sync`, which only the leader answers, every sixth
    /// of the session timeout), and bound the session's lease by it (see
    /// [`Session::lease`](super::Session::lease)). On by default; off, a
    /// server cut off from the quorum that keeps answering pings keeps holds
    /// `Held` while the leader expires the session.
    pub confirm_quorum: bool,
    /// The servers' `tickTime`, which a client cannot see: the quorum lease
    /// is derived from it. `None` (the default) assumes half the negotiated
    /// timeout, the largest tickTime a server at its default
    /// `minSessionTimeout` (2 × tickTime) would grant that timeout with.
    /// Set it when the servers' `minSessionTimeout` is lowered below
    /// 2 × tickTime.
    pub tick_time: Option<Duration>,
    /// Follow the ensemble's membership: read `/zookeeper/config` (outside
    /// the chroot) with a watch once per session, and replace the host list
    /// with its members whenever it changes, keeping the chroot (see
    /// [`Session::update_hosts`](super::Session::update_hosts)). Off by
    /// default here, so a session sends only what it is asked to; the
    /// async driver turns it on (`Options::follow_ensemble`), as Curator's
    /// `EnsembleTracker` is on by default.
    pub follow_ensemble: bool,
    /// Keep each answered request's send and reply instants for
    /// [`Session::poll_timing`](super::Session::poll_timing) (a latency
    /// histogram by operation; see [`RequestTiming`](super::RequestTiming)
    /// for what is timed). Off by default: nothing is kept. The driver turns
    /// it on with its `metrics` feature.
    pub request_timings: bool,
}

/// How a missing chroot is created: each missing level, top-down, with the
/// ACL `acl` picks for its server path (`/app`), as a container (Curator
/// creates its namespace with `ZKPaths.mkdirs(.., asContainers = true)`;
/// ZooKeeper reaps it once empty, and the session makes it again) or, with
/// `containers` off or on a server without containers, a persistent node.
#[derive(Debug, Clone, PartialEq, Eq)]
#[non_exhaustive]
pub struct ChrootPolicy {
    /// ACL of each created level.
    pub acl: AclPolicy,
    /// Containers (opcode 19) rather than persistent nodes.
    pub containers: bool,
}

impl ChrootPolicy {
    /// Containers with ACLs from `acl`.
    pub fn new(acl: AclPolicy) -> Self {
        ChrootPolicy { acl, containers: true }
    }

    /// Containers (default) or persistent nodes.
    pub fn with_containers(mut self, containers: bool) -> Self {
        self.containers = containers;
        self
    }
}

impl SessionConfig {
    /// Defaults: 10 s session timeout, no read-only servers, ZooKeeper's frame
    /// limit, up to 1 s reconnect jitter.
    pub fn new(connect_string: ConnectString, seed: u64) -> Self {
        SessionConfig {
            connect_string,
            session_timeout: Duration::from_secs(10),
            seed,
            can_be_read_only: false,
            max_frame_len: DEFAULT_MAX_FRAME_LEN,
            reconnect_jitter: Duration::from_secs(1),
            connect_timeout: None,
            sasl: None,
            max_misbehaving_connections: DEFAULT_MAX_MISBEHAVING_CONNECTIONS,
            give_up_unreachable: false,
            create_chroot: None,
            confirm_quorum: true,
            tick_time: None,
            follow_ensemble: false,
            request_timings: false,
        }
    }

    /// Sets the requested session timeout.
    pub fn with_session_timeout(mut self, session_timeout: Duration) -> Self {
        self.session_timeout = session_timeout;
        self
    }

    /// Sets [`SessionConfig::confirm_quorum`].
    pub fn with_confirm_quorum(mut self, confirm_quorum: bool) -> Self {
        self.confirm_quorum = confirm_quorum;
        self
    }

    /// Sets [`SessionConfig::tick_time`].
    pub fn with_tick_time(mut self, tick_time: Duration) -> Self {
        self.tick_time = Some(tick_time);
        self
    }

    /// Sets [`SessionConfig::follow_ensemble`].
    pub fn with_follow_ensemble(mut self, follow_ensemble: bool) -> Self {
        self.follow_ensemble = follow_ensemble;
        self
    }

    /// Sets [`SessionConfig::request_timings`].
    pub fn with_request_timings(mut self, request_timings: bool) -> Self {
        self.request_timings = request_timings;
        self
    }

    /// Sets the reconnect jitter bound.
    pub fn with_reconnect_jitter(mut self, reconnect_jitter: Duration) -> Self {
        self.reconnect_jitter = reconnect_jitter;
        self
    }

    /// Sets the per-attempt connect timeout.
    pub fn with_connect_timeout(mut self, connect_timeout: Duration) -> Self {
        self.connect_timeout = Some(connect_timeout);
        self
    }

    /// Authenticates with SASL after every handshake.
    pub fn with_sasl(mut self, sasl: SaslConfig) -> Self {
        self.sasl = Some(sasl);
        self
    }

    /// Sets how many consecutive misbehaving connections end the session.
    pub fn with_max_misbehaving_connections(mut self, max_misbehaving_connections: u32) -> Self {
        self.max_misbehaving_connections = max_misbehaving_connections;
        self
    }

    /// Sets the frame limit.
    pub fn with_max_frame_len(mut self, max_frame_len: usize) -> Self {
        self.max_frame_len = max_frame_len;
        self
    }

    /// Ends a session that never connected after a cycle of failed dials.
    pub fn with_give_up_unreachable(mut self, give_up_unreachable: bool) -> Self {
        self.give_up_unreachable = give_up_unreachable;
        self
    }

    /// Creates a missing chroot (see [`SessionConfig::create_chroot`]).
    pub fn with_create_chroot(mut self, create_chroot: ChrootPolicy) -> Self {
        self.create_chroot = Some(create_chroot);
        self
    }
}
