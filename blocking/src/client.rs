//! [`Client`]: the blocking handle to one ZooKeeper session.

use std::sync::Arc;
use std::time::Instant;

use futures_lite::StreamExt;
use zoolock_smol::{Acl, Bytes, CreateMode, MultiResult, Stat};
use zoolock_smol::{
    ConnectionState, ElectionKind, ElectionParticipant, Error, LockKind, LockOptions, LockSpec, Options,
    SemaphoreOptions,
};
use zoolock_smol::{Op, Participant};

use crate::{
    HolderChanges, LeaderChanges, LeaderLatch, LeaderSelector, Lock, ReadWriteLock, Semaphore, SharedCount, wait,
};

/// Connects to `connect` (a ZooKeeper connect string, with an optional
/// chroot) and waits for the first session, as `zoolock_smol::connect` does;
/// the session's event loop runs on a background thread until the last clone
/// and handle is dropped or [`Client::close`] is called.
///
/// Fails as the async connect does: [`Error::Unreachable`] when no server
/// answered within the connect time-out, a dial or handshake error
/// otherwise.
pub fn connect(connect: &str, options: Options) -> Result<Client, Error> {
    let runtime = Arc::new(zoolock_smol::SmolRuntime::new());
    wait(zoolock_smol::Client::connect(runtime, connect, options)).map(Client::from_async)
}

/// A session with ZooKeeper, shared by every clone and by the recipes made
/// from it; the blocking face of `zoolock_smol::Client`. Dropping every clone
/// and handle closes the session in the background.
#[derive(Clone, Debug)]
pub struct Client {
    inner: zoolock_smol::Client,
}

impl Client {
    /// Wraps an async client (from `zoolock-smol` or `zoolock-tokio`): its
    /// event loop keeps running where it was spawned.
    pub fn from_async(inner: zoolock_smol::Client) -> Client {
        Client { inner }
    }

    /// The async client underneath, for code that has a runtime at hand.
    pub fn as_async(&self) -> &zoolock_smol::Client {
        &self.inner
    }

    /// The connection state last reported by the event loop (`None` once it
    /// stopped).
    pub fn state(&self) -> Option<ConnectionState> {
        self.inner.state()
    }

    /// When the server was last heard from.
    pub fn last_heard(&self) -> Option<Instant> {
        self.inner.last_heard()
    }

    /// The current session id (0 before the first session).
    pub fn session_id(&self) -> i64 {
        self.inner.session_id()
    }

    /// How many recipes the client keeps registered: 0 once every handle
    /// is dropped and its deletes applied (see the async
    /// `Client::registered_recipes`).
    pub fn registered_recipes(&self) -> usize {
        self.inner.registered_recipes()
    }

    /// The current connection state, then every change. Fails with
    /// [`Error::ClientClosed`] once the session ended.
    pub fn state_changes(&self) -> Result<StateChanges, Error> {
        self.inner.state_changes().map(|rx| StateChanges { rx })
    }

    /// Closes the session for every clone and handle and waits until it is
    /// closed (see `zoolock_smol::Client::close`): connected, the server has
    /// deleted our lock and lease nodes when it returns. Afterwards
    /// requests, acquires and new handles fail with [`Error::ClientClosed`];
    /// releasing a hold returns `Ok(())`.
    pub fn close(&self) -> Result<(), Error> {
        wait(self.inner.close())
    }

    /// Replaces the servers the client dials, keeping its session and
    /// chroot (see `zoolock_smol::Client::update_servers`); returns whether
    /// the list changed. A different chroot is [`Error::Misuse`].
    pub fn update_servers(&self, connect_string: &str) -> Result<bool, Error> {
        wait(self.inner.update_servers(connect_string))
    }

    /// The servers the session dials now (see `zoolock_smol::Client::servers`).
    pub fn servers(&self) -> Result<Vec<String>, Error> {
        wait(self.inner.servers())
    }

    /// A mutex (Curator's `InterProcessMutex`) at `path`. Clones of the
    /// returned [`Lock`] share one queue: they are granted in call order.
    /// Fails with [`Error::Path`] for an invalid path (naming it) and
    /// [`Error::ClientClosed`] after [`Client::close`].
    pub fn mutex(&self, path: &str) -> Result<Lock, Error> {
        wait(self.inner.mutex(path)).map(Lock::from_async)
    }

    /// A mutex with `options` (lock node data, acquire plan, ...).
    pub fn mutex_with(&self, path: &str, options: LockOptions) -> Result<Lock, Error> {
        wait(self.inner.mutex_with(path, options)).map(Lock::from_async)
    }

    /// A revocable mutex: holders learn of [`Client::revoke`] through
    /// [`crate::Hold::revocation_requested`].
    pub fn revocable_mutex(&self, path: &str) -> Result<Lock, Error> {
        wait(self.inner.revocable_mutex(path)).map(Lock::from_async)
    }

    /// A read-write lock (Curator's `InterProcessReadWriteLock`): its read
    /// and write halves, a new participant ([`ReadWriteLock`]: reads share
    /// across handles and take turns through one).
    pub fn read_write_lock(&self, path: &str) -> Result<ReadWriteLock, Error> {
        wait(self.inner.read_write_lock(path)).map(ReadWriteLock::from_async)
    }

    /// A read-write lock with `options`.
    pub fn read_write_lock_with(&self, path: &str, options: LockOptions) -> Result<ReadWriteLock, Error> {
        wait(self.inner.read_write_lock_with(path, options)).map(ReadWriteLock::from_async)
    }

    /// A non-reentrant mutex over a one-lease semaphore (Curator's
    /// `InterProcessSemaphoreMutex`).
    pub fn semaphore_mutex(&self, path: &str) -> Result<Lock, Error> {
        wait(self.inner.semaphore_mutex(path)).map(Lock::from_async)
    }

    /// A lock over several mutexes, taken in order and held together
    /// (Curator's `InterProcessMultiLock`).
    pub fn multi_lock(&self, paths: &[&str]) -> Result<Lock, Error> {
        wait(self.inner.multi_lock(paths)).map(Lock::from_async)
    }

    /// The lock `spec` describes, with `options` (any lock kind; see the
    /// async `lock_of`).
    pub fn lock_of(&self, spec: LockSpec, options: LockOptions) -> Result<Lock, Error> {
        wait(self.inner.lock_of(spec, options)).map(Lock::from_async)
    }

    /// A multi-lock over any members (mutexes, read or write halves).
    pub fn multi_lock_of(&self, members: Vec<LockSpec>) -> Result<Lock, Error> {
        wait(self.inner.multi_lock_of(members)).map(Lock::from_async)
    }

    /// A semaphore of `leases` leases (Curator's `InterProcessSemaphoreV2`).
    pub fn semaphore(&self, path: &str, leases: usize) -> Result<Semaphore, Error> {
        wait(self.inner.semaphore(path, leases)).map(Semaphore::from_async)
    }

    /// A semaphore with `options` (sized by a shared count, revocable).
    pub fn semaphore_with(&self, path: &str, options: SemaphoreOptions) -> Result<Semaphore, Error> {
        wait(self.inner.semaphore_with(path, options)).map(Semaphore::from_async)
    }

    /// A shared integer at `path` (Curator's `SharedCount`), created with
    /// `seed` if missing.
    pub fn shared_count(&self, path: &str, seed: i32) -> Result<SharedCount, Error> {
        wait(self.inner.shared_count(path, seed)).map(SharedCount::from_async)
    }

    /// Who holds and waits at the lock or semaphore at `path`.
    pub fn participants(&self, path: &str, kind: LockKind) -> Result<Vec<Participant>, Error> {
        wait(self.inner.participants(path, kind))
    }

    /// A participant `id` of the election at `path` (Curator's
    /// `LeaderSelector` layout: the id is its node data).
    pub fn leader_selector(&self, path: &str, id: &str) -> Result<LeaderSelector, Error> {
        wait(self.inner.leader_selector(path, id)).map(LeaderSelector::from_async)
    }

    /// A participant `id` of the election at `path` in either layout, with
    /// lock settings (a maximum hold per term).
    pub fn election_participant(
        &self,
        path: &str,
        election: ElectionKind,
        id: &str,
        options: LockOptions,
    ) -> Result<LeaderSelector, Error> {
        wait(self.inner.election_participant(path, election, id, options)).map(LeaderSelector::from_async)
    }

    /// Starts a `LeaderLatch` participant `id` at `path`: it queues at once
    /// and leads while its node is the lowest, until closed or dropped.
    pub fn leader_latch(&self, path: &str, id: &str) -> Result<LeaderLatch, Error> {
        wait(self.inner.leader_latch(path, id)).map(LeaderLatch::from_async)
    }

    /// The id of the election's leader at `path` now, `None` when nobody is
    /// queued.
    pub fn leader(&self, path: &str, election: ElectionKind) -> Result<Option<String>, Error> {
        wait(self.inner.leader(path, election))
    }

    /// The election's participants at `path`, the leader first.
    pub fn election(&self, path: &str, election: ElectionKind) -> Result<Vec<ElectionParticipant>, Error> {
        wait(self.inner.election(path, election))
    }

    /// Observes who holds the lock at `path` (layout `kind`): the holder
    /// now, then each change, told by watches (no polling).
    pub fn observe(&self, path: &str, kind: LockKind) -> Result<HolderChanges, Error> {
        wait(self.inner.observe(path, kind)).map(HolderChanges::from_async)
    }

    /// Observes who leads the election at `path`: the leader's id now, then
    /// each change.
    pub fn observe_leader(&self, path: &str, kind: ElectionKind) -> Result<LeaderChanges, Error> {
        wait(self.inner.observe_leader(path, kind)).map(LeaderChanges::from_async)
    }

    /// Asks the holder of lock or lease node `node` to release it.
    pub fn revoke(&self, node: &str) -> Result<(), Error> {
        wait(self.inner.revoke(node))
    }

    /// Creates a node (see `zoolock_smol::Client::create`).
    pub fn create(&self, path: &str, data: &[u8], mode: CreateMode) -> Result<(String, Stat), Error> {
        wait(self.inner.create(path, data, mode))
    }

    /// Creates a node with `acl`.
    pub fn create_with_acl(
        &self,
        path: &str,
        data: &[u8],
        mode: CreateMode,
        acl: Vec<Acl>,
    ) -> Result<(String, Stat), Error> {
        wait(self.inner.create_with_acl(path, data, mode, acl))
    }

    /// Reads a node's data and Stat.
    pub fn get_data(&self, path: &str) -> Result<(Bytes, Stat), Error> {
        wait(self.inner.get_data(path))
    }

    /// Writes a node's data; `version` `None` matches any.
    pub fn set_data(&self, path: &str, data: &[u8], version: Option<i32>) -> Result<Stat, Error> {
        wait(self.inner.set_data(path, data, version))
    }

    /// Deletes a node; `version` `None` matches any.
    pub fn delete(&self, path: &str, version: Option<i32>) -> Result<(), Error> {
        wait(self.inner.delete(path, version))
    }

    /// Lists a node's children (unordered) and its Stat.
    pub fn get_children(&self, path: &str) -> Result<(Vec<String>, Stat), Error> {
        wait(self.inner.get_children(path))
    }

    /// A node's Stat, or `None` if it does not exist.
    pub fn exists(&self, path: &str) -> Result<Option<Stat>, Error> {
        wait(self.inner.exists(path))
    }

    /// Runs ops atomically; returns each op's result.
    pub fn multi(&self, ops: Vec<Op>) -> Result<Vec<MultiResult>, Error> {
        wait(self.inner.multi(ops))
    }
}

/// Connection state changes ([`Client::state_changes`]); each `next` blocks
/// until the next change, and the iterator ends with the session.
#[derive(Debug)]
pub struct StateChanges {
    rx: futures_channel::mpsc::UnboundedReceiver<ConnectionState>,
}

impl Iterator for StateChanges {
    type Item = ConnectionState;

    fn next(&mut self) -> Option<ConnectionState> {
        wait(self.rx.next())
    }
}
