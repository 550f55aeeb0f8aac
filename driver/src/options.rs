//! What a client and its locks are configured with: [`Options`] per client,
//! [`LockOptions`] per lock. Plain settings, read by the client and the
//! recipe constructors alike.

use std::time::Duration;

use bytes::Bytes;
use zoolock_core::{OpPlan, RetryPolicy, SaslConfig};

use crate::security::{AclPolicy, AuthInfo, TlsOptions};

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
    /// Create the connect string's chroot (`host:port/app`) when it is
    /// missing, as persistent nodes with the lock ACL, once connected (on by
    /// default, as Curator creates its namespace). Off: a missing chroot
    /// makes every lock fail with NoNode.
    pub create_chroot: bool,
    /// addAuth credentials, sent before the first request and after every
    /// reconnect.
    pub auth: Vec<AuthInfo>,
    /// ACLs of lock nodes and of the parents created for them; `None` is
    /// `world:anyone:cdrwa`, as Curator's default.
    pub acl: Option<AclPolicy>,
    /// TLS for every connection; `None` is plaintext.
    pub tls: Option<TlsOptions>,
    /// SASL DIGEST-MD5 after every handshake, before any other request.
    pub sasl: Option<SaslConfig>,
    /// Consecutive connections on which the server may break the protocol
    /// (wrong xid, undecodable reply, reply to nothing) before the client
    /// gives up with `RequestError::ServerMisbehaved` (3; see
    /// [`SessionConfig::max_misbehaving_connections`](zoolock_core::SessionConfig::max_misbehaving_connections)). Such a session is
    /// never renewed.
    pub max_misbehaving_connections: u32,
}

impl Default for Options {
    fn default() -> Self {
        Options {
            session_timeout: Duration::from_secs(10),
            connect_timeout: Duration::from_secs(15),
            max_misbehaving_connections: zoolock_core::DEFAULT_MAX_MISBEHAVING_CONNECTIONS,
            plan: OpPlan::Pipelined,
            lock_data: None,
            seed: None,
            renew_session: true,
            container_parents: true,
            retry: RetryPolicy::default(),
            create_chroot: true,
            auth: Vec::new(),
            acl: None,
            tls: None,
            sasl: None,
        }
    }
}

impl Options {
    /// Sets the session timeout.
    pub fn session_timeout(mut self, timeout: Duration) -> Self {
        self.session_timeout = timeout;
        self
    }

    /// Sets how long [`Client::connect`](crate::Client::connect) waits for the first session.
    pub fn connect_timeout(mut self, timeout: Duration) -> Self {
        self.connect_timeout = timeout;
        self
    }

    /// Sets the op plan.
    pub fn plan(mut self, plan: OpPlan) -> Self {
        self.plan = plan;
        self
    }

    /// Sets the lock node data.
    pub fn lock_data(mut self, data: Bytes) -> Self {
        self.lock_data = Some(data);
        self
    }

    /// Sets the seed.
    pub fn seed(mut self, seed: u64) -> Self {
        self.seed = Some(seed);
        self
    }

    /// Sets how many misbehaving connections in a row end the session.
    pub fn max_misbehaving_connections(mut self, max: u32) -> Self {
        self.max_misbehaving_connections = max;
        self
    }

    /// Turns session renewal after expiry on or off (on by default).
    pub fn renew_session(mut self, renew: bool) -> Self {
        self.renew_session = renew;
        self
    }

    /// Creates missing parents as containers (default) or persistent nodes.
    pub fn container_parents(mut self, containers: bool) -> Self {
        self.container_parents = containers;
        self
    }

    /// Sets the NoNode retry policy of lock recipes.
    pub fn retry(mut self, retry: RetryPolicy) -> Self {
        self.retry = retry;
        self
    }

    /// Creates a missing chroot once connected (default) or not.
    pub fn create_chroot(mut self, create: bool) -> Self {
        self.create_chroot = create;
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

    /// Sets the ACL policy of lock nodes and their parents.
    pub fn acl(mut self, policy: AclPolicy) -> Self {
        self.acl = Some(policy);
        self
    }

    /// Connects over TLS.
    pub fn tls(mut self, tls: TlsOptions) -> Self {
        self.tls = Some(tls);
        self
    }

    /// Authenticates with SASL DIGEST-MD5 as `user` (a `DigestLoginModule`
    /// user of the server's JAAS configuration) after every (re)connect.
    /// [`Client::connect`](crate::Client::connect) fails with `AuthFailed` on a wrong password.
    pub fn sasl_digest(mut self, user: &str, password: &str) -> Self {
        self.sasl = Some(SaslConfig::digest_md5(user, password));
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
    /// ([`crate::Guard::revocation_requested`]); its nodes have empty data.
    /// For a read-write lock, both halves.
    pub revocable: bool,
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
}
