//! [`Client`]: the async handle to one ZooKeeper session and its recipes.

use std::collections::hash_map::RandomState;
use std::hash::{BuildHasher, Hasher};
use std::sync::Arc;
use std::sync::atomic::{AtomicUsize, Ordering};

use bytes::Bytes;
use futures_channel::{mpsc, oneshot};
use futures_lite::future;
use zoolock_core::wire::{Acl, CreateMode, Response, Stat};
use zoolock_core::{
    ChrootPolicy, Client as CoreClient, ConnectString, ConnectionState, Op, RecipeId, SessionConfig, ZkPath,
    recipes::{LockConfig, SharedLockConfig},
};

use crate::error::Error;
use crate::options::{LockOptions, Options};
use crate::runtime::Runtime;
use crate::task::{Command, DriverTask, LoopShared};

pub(crate) struct Inner {
    pub(crate) commands: mpsc::UnboundedSender<Command>,
    /// Makes recipe handles here, on the caller's side ([`Client::register`]).
    pub(crate) reserver: zoolock_core::Reserver,
    pub(crate) shared: Arc<LoopShared>,
    pub(crate) options: Options,
    /// The client's seed; each lock's is forked from it.
    pub(crate) seed: u64,
    /// Locks made so far (the index of the next lock's seed).
    pub(crate) locks_made: std::sync::atomic::AtomicU64,
    /// The lock settings built last, shared by every lock made with the
    /// same ones (one copy of the ACL and data for thousands of locks).
    pub(crate) lock_settings: std::sync::Mutex<Option<Arc<LockConfig>>>,
    pub(crate) runtime: Arc<dyn Runtime>,
}

impl Inner {
    pub(crate) fn send(&self, command: Command) -> Result<(), Error> {
        self.commands.unbounded_send(command).map_err(|_| self.shared.closed())
    }

    /// `e`, naming this client if it is a [`Error::ClientClosed`] that does
    /// not yet: every error that reaches a caller from the event loop
    /// passes here.
    pub(crate) fn named(&self, e: Error) -> Error {
        e.named(|| self.shared.name())
    }

    /// Completes once the event loop has run every command sent before.
    pub(crate) async fn flush(&self) -> Result<(), Error> {
        let (tx, rx) = oneshot::channel();
        self.send(Command::Flush(tx))?;
        rx.await.map_err(|_| self.shared.closed())
    }

    /// The ACL [`Options::acl`] gives a node created at `path`
    /// (`world:anyone:cdrwa` without a policy, as Curator's default).
    pub(crate) fn acl_for(&self, path: &str) -> Vec<Acl> {
        self.options.acl.as_ref().map_or_else(Acl::open_unsafe, |policy| policy.acl_for(path).to_vec())
    }

    pub(crate) fn lock_config(&self) -> SharedLockConfig {
        self.lock_config_with(&LockOptions::default())
    }

    /// What the next lock with options `lock` is built from: its own seed,
    /// and settings shared with the locks made before it with the same
    /// data, time limit and name.
    pub(crate) fn lock_config_with(&self, lock: &LockOptions) -> SharedLockConfig {
        let n = self.locks_made.fetch_add(1, std::sync::atomic::Ordering::Relaxed);
        let seed = zoolock_core::Rng::fork(self.seed, n);
        let data = lock.data.clone().or_else(|| self.options.lock_data.clone()).unwrap_or_else(|| {
            let ip = self.shared.read(|s| s.local_ip).flatten();
            ip.map(|ip| Bytes::from(ip.to_string())).unwrap_or_default()
        });
        let mut last = self.lock_settings.lock().unwrap_or_else(std::sync::PoisonError::into_inner);
        let same = |c: &&Arc<LockConfig>| c.data == data && c.max_hold == lock.max_hold && c.name == lock.name;
        if let Some(config) = last.as_ref().filter(same) {
            return SharedLockConfig::new(config.clone(), seed);
        }
        let config = Arc::new(self.lock_settings_with(lock, data));
        *last = Some(config.clone());
        SharedLockConfig::new(config, seed)
    }

    /// The lock settings of the client's options with `lock`'s and `data`.
    fn lock_settings_with(&self, lock: &LockOptions, data: Bytes) -> LockConfig {
        // (Each lock's seed is its own: this one is not used.)
        let mut config = LockConfig::new(self.seed)
            .with_plan(self.options.plan)
            .with_data(data)
            .with_compression(self.options.compression);
        config.container_parents = self.options.container_parents;
        config.retry = self.options.retry;
        config.watch_held = self.options.watch_held;
        config.max_hold = lock.max_hold;
        config.name = lock.name.clone();
        match &self.options.acl {
            Some(policy) => config.with_acl_policy(policy.clone()),
            None => config,
        }
    }
}

/// A ZooKeeper session with its event loop. Cheap to clone; the session is
/// closed when the last clone and every handle made from it are dropped, or
/// by [`Client::close`].
///
/// A dropped connection is re-established with the same session (holds are
/// `Suspended`, then held again). Once the session has expired
/// ([`ConnectionState::Lost`]), the client starts a new one by itself
/// ([`Options::renew_session`], on by default): holds of the old session are
/// `Lost` for good, acquires under way re-queue on the new session, and every
/// handle keeps working. With renewal off the client ends with the session
/// and every request fails with `SessionExpired`.
#[derive(Clone)]
pub struct Client {
    pub(crate) inner: Arc<Inner>,
}

impl std::fmt::Debug for Client {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.debug_struct("Client").field("options", &self.inner.options).finish()
    }
}

fn os_seed() -> u64 {
    let mut h = RandomState::new().build_hasher();
    h.write_u64(0x5eed);
    h.finish()
}

impl Client {
    /// Connects to `connect_string` (`host:port,...[/chroot]`) and waits for
    /// the session, at most `options.connect_timeout`.
    ///
    /// Once connected, a lost connection is retried until the session
    /// expires.
    ///
    /// # Errors
    ///
    /// * [`Error::ConnectString`] for a malformed connect string.
    /// * [`Error::Unreachable`] (carrying the last failure) as soon as every
    ///   host has failed to connect once, refused or not resolved, before any
    ///   session.
    /// * [`Error::ConnectTimeout`] when a host accepts but no session comes
    ///   of it within `options.connect_timeout`.
    /// * [`Error::Tls`] for a certificate either side refuses, or TLS
    ///   against a plaintext port (and the reverse).
    /// * [`Error::Request`]: `AuthFailed` for rejected credentials,
    ///   `SaslAuthRequired`, `ServerMisbehaved`, or `ChrootUnavailable` when
    ///   the chroot is missing and cannot be created
    ///   ([`Options::create_chroot`]).
    ///
    /// # Cancel safety
    ///
    /// Cancel-safe: dropping the future closes the session being set up, in
    /// the background; nothing is left on the server but what the session's
    /// end removes.
    pub async fn connect(runtime: Arc<dyn Runtime>, connect_string: &str, options: Options) -> Result<Client, Error> {
        let cs = ConnectString::parse(connect_string)?;
        let hosts = cs.hosts().len();
        let seed = options.seed.unwrap_or_else(os_seed);
        let origin = runtime.now();
        let mut config = SessionConfig::new(cs, seed)
            .with_session_timeout(options.session_timeout)
            .with_max_misbehaving_connections(options.max_misbehaving_connections)
            .with_give_up_unreachable(true)
            .with_request_timings(cfg!(feature = "metrics"));
        config = config.with_confirm_quorum(options.confirm_quorum);
        config = config.with_follow_ensemble(options.follow_ensemble);
        if let Some(tick) = options.tick_time {
            config = config.with_tick_time(tick);
        }
        if let Some(sasl) = &options.sasl {
            config = config.with_sasl(sasl.clone());
        }
        if options.create_chroot {
            let acl = options.acl.clone().unwrap_or_default();
            config = config.with_create_chroot(ChrootPolicy::new(acl).with_containers(options.container_parents));
        }
        let mut core = CoreClient::new(config, zoolock_core::Instant::ZERO);
        for auth in &options.auth {
            // A new session cannot have ended: this never fails.
            let _ = core.add_auth(zoolock_core::Instant::ZERO, &auth.scheme, auth.credentials.clone());
        }
        core.set_renew_session(options.renew_session);
        let reserver = core.reserver();
        let (commands, rx) = mpsc::unbounded();
        let shared = Arc::new(LoopShared::new(origin, connect_string, core));
        let span = tracing::info_span!("zoolock", hosts = %connect_string, session = tracing::field::Empty);
        let mut task = DriverTask::new(runtime.clone(), origin, shared.clone(), rx, span);
        #[cfg(feature = "tls")]
        {
            task.security.tls = options.tls.clone();
        }
        task.security.watch.set_hosts(hosts);
        runtime.spawn(Box::pin(task));
        let connect_timeout = options.connect_timeout;
        let client = Client {
            inner: Arc::new(Inner {
                commands,
                reserver,
                shared,
                options,
                seed,
                locks_made: std::sync::atomic::AtomicU64::new(0),
                lock_settings: std::sync::Mutex::new(None),
                runtime: runtime.clone(),
            }),
        };
        let deadline = runtime.now() + connect_timeout;
        let authenticated = !client.inner.options.auth.is_empty();
        let wait = async {
            client.wait_connected().await?;
            if authenticated {
                // The server checks credentials on arrival and closes the
                // connection on AuthFailed: one round trip after them tells.
                // NoAuth only says "/" is not ours to read.
                match client.exists("/").await {
                    Err(Error::Request(zoolock_core::RequestError::Server(code)))
                        if code == zoolock_core::wire::ErrorCode::NO_AUTH => {}
                    other => drop(other?),
                }
            }
            Ok(())
        };
        let timeout = async {
            runtime.sleep_until(deadline).await;
            Err(Error::ConnectTimeout(connect_timeout))
        };
        match future::or(wait, timeout).await {
            Ok(()) => Ok(client),
            Err(e) => {
                client.close_in_background();
                Err(e)
            }
        }
    }

    async fn wait_connected(&self) -> Result<(), Error> {
        loop {
            let listener = self.inner.shared.changed.listen();
            let (state, fatal, unreachable, end_error) = self
                .inner
                .shared
                .read(|s| ((s.connection, s.finished), s.fatal.clone(), s.unreachable.clone(), s.end_error.clone()))
                .ok_or_else(|| self.inner.shared.closed())?;
            if let Some(e) = fatal {
                return Err(Error::Tls(e));
            }
            if let Some(e) = unreachable {
                return Err(Error::Unreachable(e));
            }
            match state {
                (_, true) => return Err(self.inner.shared.closed()),
                (Some(ConnectionState::Connected | ConnectionState::ConnectedReadOnly), _) => return Ok(()),
                // Expired, refused, or given up on a misbehaving server.
                (
                    Some(
                        state @ (ConnectionState::Lost
                        | ConnectionState::AuthFailed
                        | ConnectionState::SaslFailed(_)
                        | ConnectionState::ServerMisbehaved(_)
                        | ConnectionState::Unreachable
                        | ConnectionState::ChrootUnavailable(_)),
                    ),
                    _,
                ) => {
                    // The session's own reason first: it tells a server that
                    // requires SASL from one that refused our credentials.
                    let reason = end_error.or_else(|| state.end_error());
                    return Err(Error::from(reason.unwrap_or(zoolock_core::RequestError::Closed)));
                }
                _ => listener.await,
            }
        }
    }

    /// Replaces the servers the client dials, for callers that learn of
    /// membership changes another way than [`Options::follow_ensemble`]
    /// (ZooKeeper's `updateServerList`). `connect_string` is parsed as at
    /// [`Client::connect`]; its chroot must be the client's own or absent
    /// (the chroot is fixed for the client's life): another one is
    /// [`Error::Misuse`] with [`ApiMisuse::ChrootChanged`](crate::ApiMisuse)
    /// and nothing changes. The session is kept: a connection to a server
    /// that is not in the new list moves to one that is, with the same
    /// session (holds read `Suspended`, then `Held` again once it is back,
    /// within the session timeout). A membership read later (with
    /// following on) replaces the list again. Returns whether the list
    /// changed. Fails with [`Error::ConnectString`] on a malformed string,
    /// and [`Error::ClientClosed`] once the client is closed; cancelling it
    /// may leave the change applied or not.
    pub async fn update_servers(&self, connect_string: &str) -> Result<bool, Error> {
        let servers = Box::new(ConnectString::parse(connect_string)?);
        let (reply, rx) = oneshot::channel();
        self.inner.send(Command::UpdateServers { servers, reply })?;
        Ok(rx.await.map_err(|_| self.inner.shared.closed())??)
    }

    /// The servers the session dials now, in the order it tries them
    /// (`host:port`; the connect string's hosts until the membership or
    /// [`Client::update_servers`] changes them).
    pub async fn servers(&self) -> Result<Vec<String>, Error> {
        let (reply, rx) = oneshot::channel();
        self.inner.send(Command::Servers(reply))?;
        rx.await.map_err(|_| self.inner.shared.closed())
    }

    /// The latest connection state.
    pub fn state(&self) -> Option<ConnectionState> {
        self.inner.shared.read(|s| s.connection).flatten()
    }

    /// The last instant the server is known to have held the session alive,
    /// on the runtime's clock: the send time of the newest request (or ping)
    /// it answered, so a reply read after a long pause proves nothing newer
    /// than its question. Together with the negotiated timeout this bounds
    /// how stale the connection state may be, even if this process was paused.
    pub fn last_heard(&self) -> Option<std::time::Instant> {
        self.inner.shared.lease.heard()
    }

    /// How many recipes the client's event loop keeps registered: one per
    /// lock, read-write lock, semaphore, shared count, election participant
    /// and observation, whatever its number of handles. A recipe goes once
    /// its last handle is dropped and it owes the server nothing (its
    /// deletes applied), so after every handle is gone and settled this
    /// reads 0: nothing of theirs stays behind.
    pub fn registered_recipes(&self) -> usize {
        self.inner.shared.recipes.load(Ordering::Relaxed)
    }

    /// The session id (0 before the first session).
    pub fn session_id(&self) -> i64 {
        self.inner.shared.read(|s| s.session_id).unwrap_or(0)
    }

    /// A stream of connection state changes, starting with the current one.
    pub fn state_changes(&self) -> Result<mpsc::UnboundedReceiver<ConnectionState>, Error> {
        let (tx, rx) = mpsc::unbounded();
        self.inner.send(Command::Subscribe(tx))?;
        Ok(rx)
    }

    /// Closes the session for every clone and handle, and waits until it is
    /// closed. Connected, this sends closeSession and waits for its answer,
    /// so the server has deleted our ephemeral nodes (locks, leases) by the
    /// time it returns; while disconnected it ends the session locally and
    /// the server drops the nodes at the session timeout. Acquires under way
    /// fail, held guards report [`crate::HoldStatus::Lost`], and later
    /// requests, acquires and handles fail with [`Error::ClientClosed`];
    /// releasing a hold is not an error then (its node went with the
    /// session). Closing an ended session does nothing. Dropping every clone and handle closes the session the same
    /// way, in the background.
    pub async fn close(&self) -> Result<(), Error> {
        self.inner.shared.update(|s| s.closed = true);
        if self.inner.send(Command::Close).is_err() {
            return Ok(());
        }
        loop {
            let listener = self.inner.shared.changed.listen();
            let done = self.inner.shared.read(|s| s.finished || s.ended).unwrap_or(true);
            if done {
                return Ok(());
            }
            listener.await;
        }
    }

    fn close_in_background(&self) {
        let _ = self.inner.send(Command::Close);
    }

    // ---- plain operations ------------------------------------------------------------

    async fn call(&self, op: Op) -> Result<Response, Error> {
        let (reply, rx) = oneshot::channel();
        self.inner.send(Command::Submit { op: Box::new(op), reply })?;
        let reply = rx.await.map_err(|_| self.inner.shared.closed())?;
        reply.map_err(|e| self.inner.named(e.into()))
    }

    /// Creates a node with the ACL [`Options::acl`] gives its path (as lock
    /// nodes get), so a policy such as `auth::cdrwa` protects every node
    /// this client makes; returns its path (with the sequence suffix) and
    /// Stat. Fails with the server's code (`NodeExists`, `NoNode` for a
    /// missing parent, `NoAuth`), or `Path` for an invalid path. Cancelling
    /// may leave the node created.
    pub async fn create(&self, path: &str, data: &[u8], mode: CreateMode) -> Result<(String, Stat), Error> {
        let acl = self.inner.acl_for(path);
        self.create_with_acl(path, data, mode, acl).await
    }

    /// Creates a node with `acl` whatever [`Options::acl`] says; otherwise
    /// as [`Client::create`]. An empty or malformed ACL is the server's to
    /// refuse (`InvalidACL`).
    pub async fn create_with_acl(
        &self,
        path: &str,
        data: &[u8],
        mode: CreateMode,
        acl: Vec<Acl>,
    ) -> Result<(String, Stat), Error> {
        let p = if mode.is_sequential() { ZkPath::new_sequential_prefix(path)? } else { ZkPath::new(path)? };
        match self.call(Op::create(&p, Bytes::copy_from_slice(data), acl, mode)).await? {
            Response::Create2 { path, stat } => Ok((path, stat)),
            _ => Err(unexpected(zoolock_core::wire::OpCode::CREATE2)),
        }
    }

    /// Reads a node's data and Stat.
    pub async fn get_data(&self, path: &str) -> Result<(Bytes, Stat), Error> {
        match self.call(Op::get_data(&ZkPath::new(path)?, false)).await? {
            Response::Data { data, stat } => Ok((data.unwrap_or_default(), stat)),
            _ => Err(unexpected(zoolock_core::wire::OpCode::GET_DATA)),
        }
    }

    /// Writes a node's data; `version` `None` matches any.
    pub async fn set_data(&self, path: &str, data: &[u8], version: Option<i32>) -> Result<Stat, Error> {
        match self.call(Op::set_data(&ZkPath::new(path)?, Bytes::copy_from_slice(data), version)).await? {
            Response::Stat(stat) => Ok(stat),
            _ => Err(unexpected(zoolock_core::wire::OpCode::SET_DATA)),
        }
    }

    /// Deletes a node; `version` `None` matches any.
    pub async fn delete(&self, path: &str, version: Option<i32>) -> Result<(), Error> {
        self.call(Op::delete(&ZkPath::new(path)?, version)).await.map(|_| ())
    }

    /// Lists a node's children (unordered) and its Stat.
    pub async fn get_children(&self, path: &str) -> Result<(Vec<String>, Stat), Error> {
        match self.call(Op::get_children(&ZkPath::new(path)?, false)).await? {
            Response::Children2 { children, stat } => Ok((children, stat)),
            _ => Err(unexpected(zoolock_core::wire::OpCode::GET_CHILDREN2)),
        }
    }

    /// A node's Stat, or `None` if it does not exist.
    pub async fn exists(&self, path: &str) -> Result<Option<Stat>, Error> {
        match self.call(Op::exists(&ZkPath::new(path)?, false)).await {
            Ok(Response::Stat(stat)) => Ok(Some(stat)),
            Err(Error::Request(zoolock_core::RequestError::Server(code)))
                if code == zoolock_core::wire::ErrorCode::NO_NODE =>
            {
                Ok(None)
            }
            Ok(_) => Err(unexpected(zoolock_core::wire::OpCode::EXISTS)),
            Err(e) => Err(e),
        }
    }

    /// Runs ops atomically; returns each op's result.
    pub async fn multi(&self, ops: Vec<Op>) -> Result<Vec<zoolock_core::wire::MultiResult>, Error> {
        match self.call(Op::multi(ops)?).await? {
            Response::Multi(results) => Ok(results),
            _ => Err(unexpected(zoolock_core::wire::OpCode::MULTI)),
        }
    }
}

impl Client {
    /// Runs `ops` in one multi behind a check that each of `nodes` exists:
    /// the fenced write of [`crate::Hold::fenced`] (a guard's or a
    /// lease's). The results are the caller's ops' (the
    /// checks' are left out).
    pub(crate) async fn fenced(
        &self,
        nodes: &[String],
        ops: Vec<Op>,
    ) -> Result<Vec<zoolock_core::wire::MultiResult>, Error> {
        use zoolock_core::wire::{ErrorCode, MultiResult};
        let checks = nodes.len();
        let mut all = Vec::with_capacity(checks + ops.len());
        for node in nodes {
            all.push(Op::check(&ZkPath::new(node)?, -1));
        }
        all.extend(ops);
        let results = self.multi(all).await?;
        match MultiResult::first_failure(&results) {
            None if results.len() >= checks => Ok(results.into_iter().skip(checks).collect()),
            None => Err(unexpected(zoolock_core::wire::OpCode::MULTI)),
            Some((index, ErrorCode::NO_NODE)) if index < checks => {
                Err(Error::NotHeld { node: nodes.get(index).cloned().unwrap_or_default() })
            }
            Some((index, code)) if index < checks => Err(Error::Request(zoolock_core::RequestError::Server(code))),
            Some((index, code)) => Err(Error::FencedOpFailed { index: index - checks, code }),
        }
    }
}

/// A registered recipe as its handles share it: its id, and how many
/// [`Owner`]s it has.
pub(crate) trait Owned: Send + Sync + 'static {
    /// The recipe's id on the client.
    fn id(&self) -> RecipeId;

    /// The count [`Owner`] keeps.
    fn owners(&self) -> &AtomicUsize;
}

/// A registered recipe whose handles share nothing else.
pub(crate) struct Registration {
    id: RecipeId,
    owners: AtomicUsize,
}

impl Registration {
    pub(crate) fn new(id: RecipeId) -> Arc<Registration> {
        Arc::new(Registration { id, owners: AtomicUsize::new(0) })
    }
}

impl Owned for Registration {
    fn id(&self) -> RecipeId {
        self.id
    }

    fn owners(&self) -> &AtomicUsize {
        &self.owners
    }
}

/// A handle's share of a registered recipe, with the client: the one way a
/// recipe is dropped when its handles go. Handles count themselves rather
/// than by the `Arc`, which an event sink may share: the last owner dropped
/// drops the recipe (once it owes the server nothing), and a sink lives
/// until then.
pub(crate) struct Owner<T: Owned> {
    pub(crate) client: Client,
    pub(crate) recipe: Arc<T>,
}

impl<T: Owned> Owner<T> {
    /// One more owner of `recipe`.
    pub(crate) fn new(client: Client, recipe: Arc<T>) -> Owner<T> {
        recipe.owners().fetch_add(1, Ordering::Relaxed);
        Owner { client, recipe }
    }

    /// The recipe's id on the client.
    pub(crate) fn id(&self) -> RecipeId {
        self.recipe.id()
    }

    /// Waits until the recipe owes the server nothing (see
    /// [`Command::Settle`]). One `async fn` over the answer, so awaiting it
    /// adds a few words to the caller's task.
    pub(crate) async fn settled(&self) -> Result<(), Error> {
        let inner = &self.client.inner;
        let answer = settle(&self.client, self.id())?;
        let settled = answer.await.map_err(|_| inner.shared.closed())?;
        settled.map_err(|e| inner.named(e.into()))
    }
}

impl<T: Owned> Clone for Owner<T> {
    fn clone(&self) -> Owner<T> {
        Owner::new(self.client.clone(), self.recipe.clone())
    }
}

impl<T: Owned> Drop for Owner<T> {
    fn drop(&mut self) {
        if self.recipe.owners().fetch_sub(1, Ordering::AcqRel) == 1 {
            let _ = self.client.inner.send(Command::Retire(self.id()));
        }
    }
}

/// Asks to be told once recipe `id` owes the server nothing (see
/// [`Command::Settle`]); the handles' `settled` methods await the answer.
pub(crate) fn settle(client: &Client, id: RecipeId) -> Result<Settled, Error> {
    let (reply, rx) = oneshot::channel();
    client.inner.send(Command::Settle { recipe: id, reply })?;
    Ok(rx)
}

/// The answer [`settle`] asked for.
pub(crate) type Settled = oneshot::Receiver<Result<(), zoolock_core::RequestError>>;

/// The server answered `op` with a reply of another kind: its fault, no
/// result code it sent.
fn unexpected(op: zoolock_core::wire::OpCode) -> Error {
    Error::Request(zoolock_core::RequestError::UnexpectedResponse { op })
}
