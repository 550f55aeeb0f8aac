//! What a client and its locks are configured with: [`Options`] per client,
//! [`LockOptions`] per lock. Plain settings, read by the client and the
//! recipe constructors alike.

use std::time::Duration;

use bytes::Bytes;
use zoolock_core::recipes::{LeadershipPolicy, LockName, SemaphoreSize};
use zoolock_core::{
    Compression, SaslConfig,
    recipes::{OpPlan, RetryPolicy},
};

use crate::security::{AclPolicy, AuthInfo};
#[cfg(feature = "tls")]
use crate::tls::TlsOptions;

/// How to connect and how recipes behave.
#[derive(Debug, Clone)]
#[non_exhaustive]
pub struct Options {
    /// Requested session timeout.
    pub session_timeout: Duration,
    /// How long [`Client::connect`](crate::Client::connect) waits for the first session.
    pub connect_timeout: Duration,
    /// The recipes' op plan.
    pub plan: OpPlan,
    /// Lock node data; `None` writes the local address of the connection,
    /// as Curator does.
    pub lock_data: Option<Bytes>,
    /// How the recipes frame the data they write: lock and lease node data,
    /// revocation requests, shared counts. [`Compression::Gzip`] for fleets
    /// whose Curator clients run with `enableCompression()` (Curator 5.8+),
    /// which read only gzip. Data is read plain or gzip either way; plain
    /// operations ([`Client::create`](crate::Client::create),
    /// [`Client::set_data`](crate::Client::set_data), ...) write bytes as
    /// given.
    pub compression: Compression,
    /// Seed for protection ids, host order and jitter; `None` draws one from
    /// the OS.
    pub seed: Option<u64>,
    /// Start a new session by itself after the session expired (on by
    /// default, as Curator and kazoo do). Held guards and leases report
    /// `Lost` and stay lost; acquires under way re-queue on the new session
    /// with a new node; every handle keeps working. Off: the client ends
    /// with the session.
    pub renew_session: bool,
    /// Create missing parents of lock paths as containers (ZooKeeper 3.6+;
    /// persistent nodes on servers that lack them). Off: persistent nodes.
    pub container_parents: bool,
    /// How often and how long to pause before re-creating a lock node that
    /// vanished while waiting (Curator's NoNode retry).
    pub retry: RetryPolicy,
    /// Keep the connect string's chroot (`host:port/app`) in place, as
    /// Curator keeps a `namespace("app")` (on by default): each new session
    /// creates it when missing before [`Client::connect`](crate::Client::connect)
    /// returns (or before a renewed session serves), and when it vanishes
    /// later (ZooKeeper reaps an empty container; an operator may delete
    /// it) the next create directly under `/` (a lock's parent, say) makes
    /// it again and goes on. Its levels are containers as Curator's
    /// namespace is (persistent with [`Options::container_parents`] off, or
    /// on a server without containers), with the [`Options::acl`] ACLs.
    /// `connect` fails with `RequestError::ChrootUnavailable` if it cannot be
    /// created (NoAuth, say); later, that error fails the create that found
    /// it gone. Off: never created; a missing chroot makes every lock fail
    /// with NoNode.
    pub create_chroot: bool,
    /// addAuth credentials, sent before the first request and after every
    /// reconnect.
    pub auth: Vec<AuthInfo>,
    /// The ACL of every node this client creates: lock and lease nodes, the
    /// parents created for them, shared counts, the chroot's levels (by their
    /// server path, `/app`) and
    /// [`Client::create`](crate::Client::create) (ops passed to a fenced
    /// write carry their own). `None` is `world:anyone:cdrwa`, as Curator's
    /// default.
    pub acl: Option<AclPolicy>,
    /// TLS for every connection; `None` is plaintext (the `tls` feature).
    #[cfg(feature = "tls")]
    pub tls: Option<TlsOptions>,
    /// The SASL mechanism (DIGEST-MD5, or GSSAPI with the `gssapi`
    /// feature), run after every handshake before any other request.
    pub sasl: Option<SaslConfig>,
    /// Consecutive connections on which the server may break the protocol
    /// (wrong xid, undecodable reply, reply to nothing) before the client
    /// gives up with `RequestError::ServerMisbehaved` (3; see
    /// the core's `SessionConfig::max_misbehaving_connections`). Such a session is
    /// never renewed.
    pub max_misbehaving_connections: u32,
    /// Watch every held lock and lease node, so that its deletion by anyone
    /// else makes that hold `Lost` at once (on by default; ARCHITECTURE §6.1).
    /// Off only to measure what the watch costs (`zoolock bench
    /// --no-held-watch`): a hold whose node is deleted then reads `Held`
    /// until the next reconnect checks it.
    pub watch_held: bool,
    /// Label the per-lock metrics (feature `metrics`) with the lock path
    /// (on by default). Turn it off when locks are made per entity
    /// (`/orders/1234`): each path would be a series of its own; the
    /// `kind` label stays.
    pub metrics_path_label: bool,
    /// While anything is held, confirm at a steady rate (a `sync` every
    /// sixth of the session timeout, which only the leader answers) that
    /// the quorum still keeps the session alive, and read holds `Suspended`
    /// ([`Suspension::QuorumUnconfirmed`](crate::Suspension)) when it does
    /// not in time (on by default; ARCHITECTURE.md §7). Off: a server cut off
    /// from the quorum that keeps answering pings keeps holds `Held` while
    /// the leader expires the session. No request is added while nothing
    /// is held.
    pub confirm_quorum: bool,
    /// The servers' `tickTime`, which a client cannot see; the quorum
    /// confirmation's bound derives from it. `None` (the default) assumes
    /// half the negotiated session timeout, which holds when the servers'
    /// `minSessionTimeout` is at its default (2 × tickTime). Set it when
    /// that is lowered (or the session timeout is below 2 × tickTime).
    pub tick_time: Option<Duration>,
    /// Follow the ensemble's membership, as Curator's `EnsembleTracker`
    /// does (on by default): after each new session, read
    /// `/zookeeper/config` (outside the chroot) with a watch, and whenever
    /// the servers change, dial only current members, keeping the chroot.
    /// A connection to a server that left moves to a remaining one with the
    /// same session. Off: the client dials the connect string's hosts until
    /// [`Client::update_servers`](crate::Client::update_servers) says
    /// otherwise (for clients behind a load balancer or a virtual IP, whose
    /// members' own addresses they cannot reach).
    pub follow_ensemble: bool,
}

impl Default for Options {
    fn default() -> Self {
        Options {
            session_timeout: Duration::from_secs(10),
            connect_timeout: Duration::from_secs(15),
            confirm_quorum: true,
            tick_time: None,
            follow_ensemble: true,
            max_misbehaving_connections: zoolock_core::DEFAULT_MAX_MISBEHAVING_CONNECTIONS,
            plan: OpPlan::Pipelined,
            lock_data: None,
            compression: Compression::None,
            seed: None,
            renew_session: true,
            container_parents: true,
            retry: RetryPolicy::default(),
            create_chroot: true,
            auth: Vec::new(),
            acl: None,
            #[cfg(feature = "tls")]
            tls: None,
            sasl: None,
            watch_held: true,
            metrics_path_label: true,
        }
    }
}

impl Options {
    /// Sets the session timeout.
    pub fn session_timeout(mut self, session_timeout: Duration) -> Self {
        self.session_timeout = session_timeout;
        self
    }

    /// Sets [`Options::confirm_quorum`].
    pub fn confirm_quorum(mut self, confirm_quorum: bool) -> Self {
        self.confirm_quorum = confirm_quorum;
        self
    }

    /// Sets [`Options::tick_time`].
    pub fn tick_time(mut self, tick_time: Duration) -> Self {
        self.tick_time = Some(tick_time);
        self
    }

    /// Sets [`Options::follow_ensemble`].
    pub fn follow_ensemble(mut self, follow_ensemble: bool) -> Self {
        self.follow_ensemble = follow_ensemble;
        self
    }

    /// Sets how long [`Client::connect`](crate::Client::connect) waits for the first session.
    pub fn connect_timeout(mut self, connect_timeout: Duration) -> Self {
        self.connect_timeout = connect_timeout;
        self
    }

    /// Sets the op plan.
    pub fn plan(mut self, plan: OpPlan) -> Self {
        self.plan = plan;
        self
    }

    /// Sets the lock node data.
    pub fn lock_data(mut self, lock_data: Bytes) -> Self {
        self.lock_data = Some(lock_data);
        self
    }

    /// Sets how recipes frame the data they write.
    pub fn compression(mut self, compression: Compression) -> Self {
        self.compression = compression;
        self
    }

    /// Sets the seed.
    pub fn seed(mut self, seed: u64) -> Self {
        self.seed = Some(seed);
        self
    }

    /// Sets how many misbehaving connections in a row end the session.
    pub fn max_misbehaving_connections(mut self, max_misbehaving_connections: u32) -> Self {
        self.max_misbehaving_connections = max_misbehaving_connections;
        self
    }

    /// Turns session renewal after expiry on or off (on by default).
    pub fn renew_session(mut self, renew_session: bool) -> Self {
        self.renew_session = renew_session;
        self
    }

    /// Creates missing parents as containers (default) or persistent nodes.
    pub fn container_parents(mut self, container_parents: bool) -> Self {
        self.container_parents = container_parents;
        self
    }

    /// Sets the NoNode retry policy of lock recipes.
    pub fn retry(mut self, retry: RetryPolicy) -> Self {
        self.retry = retry;
        self
    }

    /// Keeps the chroot in place (default) or never creates it.
    pub fn create_chroot(mut self, create_chroot: bool) -> Self {
        self.create_chroot = create_chroot;
        self
    }

    /// Sets the ACL policy of every node the client creates.
    pub fn acl(mut self, acl: AclPolicy) -> Self {
        self.acl = Some(acl);
        self
    }

    /// Connects over TLS (the `tls` feature).
    #[cfg(feature = "tls")]
    pub fn tls(mut self, tls: TlsOptions) -> Self {
        self.tls = Some(tls);
        self
    }

    /// Watches held nodes (on by default; see [`Options::watch_held`]).
    pub fn watch_held(mut self, watch_held: bool) -> Self {
        self.watch_held = watch_held;
        self
    }

    /// Labels per-lock metrics with the path (on by default; see [`Options::metrics_path_label`]).
    pub fn metrics_path_label(mut self, metrics_path_label: bool) -> Self {
        self.metrics_path_label = metrics_path_label;
        self
    }

    /// Adds an addAuth credential (`auth("digest", "alice:secret")`); any
    /// number. [`Client::connect`](crate::Client::connect) fails with `AuthFailed` if the server
    /// rejects one.
    pub fn auth(mut self, scheme: &str, credentials: impl AsRef<[u8]>) -> Self {
        self.auth
            .push(AuthInfo { scheme: scheme.to_string(), credentials: Bytes::copy_from_slice(credentials.as_ref()) });
        self
    }

    /// Authenticates with SASL DIGEST-MD5 as `user` (a `DigestLoginModule`
    /// user of the server's JAAS configuration) after every (re)connect.
    /// [`Client::connect`](crate::Client::connect) fails with `AuthFailed` on a wrong password.
    pub fn sasl_digest(mut self, user: &str, password: &str) -> Self {
        self.sasl = Some(SaslConfig::digest_md5(user, password));
        self
    }

    /// Authenticates with SASL GSSAPI (Kerberos) after every (re)connect,
    /// with the credentials of the Kerberos environment (`KRB5CCNAME`,
    /// `KRB5_CLIENT_KTNAME`, `KRB5_CONFIG`) for the server principal that
    /// `client` names. [`Client::connect`](crate::Client::connect) fails
    /// at once with `RequestError::Sasl`
    /// when there are no credentials, the KDC refuses them or does not
    /// know the server, and with `AuthFailed` when the server refuses us.
    #[cfg(feature = "gssapi")]
    pub fn sasl_gssapi(mut self, client: crate::GssapiClient) -> Self {
        self.sasl = Some(SaslConfig::new(std::sync::Arc::new(client)));
        self
    }
}

/// Settings of one lock, beyond the client's [`Options`](crate::Options).
#[derive(Debug, Clone, Default)]
#[non_exhaustive]
pub struct LockOptions {
    /// Data of this lock's nodes (Curator's `lockData` of a read-write lock,
    /// a semaphore's node data); `None` uses [`Options::lock_data`](crate::Options::lock_data).
    pub data: Option<Bytes>,
    /// Revocable: the holder is told when someone asks it to release
    /// ([`crate::Hold::revocation_requested`]); its nodes have empty data.
    /// For a read-write lock, both halves.
    pub revocable: bool,
    /// The longest a hold may last: once this much has passed since the
    /// grant, the hold reads [`HoldStatus::Lost`](crate::HoldStatus::Lost)
    /// (its [`Hold::lost`](crate::Hold::lost) completes) and its node is
    /// deleted, so a holder that hangs with its session alive cannot block
    /// everyone forever. `None` (the default): no limit. For a semaphore,
    /// each lease on its own; for an election, each term.
    pub max_hold: Option<Duration>,
    /// The node name and sort rule of a mutex (Curator's
    /// `LockInternalsDriver`): `lock-` by default, `latch-` for a
    /// `LeaderLatch`, or a name of your own for a foreign layout. The
    /// read-write lock and the semaphore keep Curator's names.
    pub name: LockName,
    /// Elections only: whether a suspended term still leads (Curator's
    /// `ConnectionStateErrorPolicy`): [`LeadershipPolicy::Standard`] (the
    /// default) ends [`crate::LeaderSelector::run`]'s term and a latch's
    /// leadership on a dropped connection, [`LeadershipPolicy::Session`]
    /// only on `Lost`. A term's [`crate::Hold::status`] reads `Suspended`
    /// under both; see [`LeadershipPolicy`] for what the session policy
    /// risks and why it wants fenced writes.
    pub leadership: LeadershipPolicy,
}

impl LockOptions {
    /// Sets the node data.
    pub fn data(mut self, data: Bytes) -> Self {
        self.data = Some(data);
        self
    }

    /// Makes the lock revocable.
    pub fn revocable(mut self, revocable: bool) -> Self {
        self.revocable = revocable;
        self
    }

    /// Sets the longest a hold may last ([`LockOptions::max_hold`]).
    pub fn max_hold(mut self, max_hold: Duration) -> Self {
        self.max_hold = Some(max_hold);
        self
    }

    /// Sets the node name and sort rule ([`LockOptions::name`]).
    pub fn name(mut self, name: LockName) -> Self {
        self.name = name;
        self
    }

    /// Sets an election's policy ([`LockOptions::leadership`]).
    pub fn leadership(mut self, policy: LeadershipPolicy) -> Self {
        self.leadership = policy;
        self
    }
}

/// Settings of a semaphore ([`Client::semaphore_with`](crate::Client::semaphore_with)).
#[derive(Debug, Clone, PartialEq, Eq)]
#[non_exhaustive]
pub struct SemaphoreOptions {
    /// Its size.
    pub size: SemaphoreSize,
    /// Revocable: each lease's holder is told when someone asks for the
    /// lease back ([`crate::Hold::revocation_requested`]); lease nodes
    /// have empty data.
    pub revocable: bool,
    /// The longest each lease may be held ([`LockOptions::max_hold`]).
    pub max_hold: Option<std::time::Duration>,
}

impl SemaphoreOptions {
    /// `n` leases.
    pub fn leases(n: usize) -> Self {
        SemaphoreOptions { size: SemaphoreSize::Leases(n), revocable: false, max_hold: None }
    }

    /// Sized by the shared count at `count_path` (seeded with `seed`).
    pub fn sized_by(count_path: &str, seed: i32) -> Self {
        SemaphoreOptions {
            size: SemaphoreSize::Count { path: count_path.into(), seed },
            revocable: false,
            max_hold: None,
        }
    }

    /// Makes the leases revocable.
    pub fn revocable(mut self, revocable: bool) -> Self {
        self.revocable = revocable;
        self
    }

    /// Sets the longest each lease may be held: past it, the lease reads
    /// `Lost` and its node is deleted ([`LockOptions::max_hold`]).
    pub fn max_hold(mut self, max_hold: std::time::Duration) -> Self {
        self.max_hold = Some(max_hold);
        self
    }
}
