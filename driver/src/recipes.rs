//! The recipe constructors of [`Client`]: every lock kind, the semaphore,
//! the shared count, participants and revocation, and the per-lock settings
//! they take.

use futures_channel::oneshot;
use zoolock_core::recipes::ElectionKind;
use zoolock_core::recipes::policy::SortKey;
use zoolock_core::{Client as CoreClient, CoreMachine, Handle, Machine, Participant, RecipeEvent, RecipeId, ZkPath};

use crate::client::Client;
use crate::count::SharedCount;
use crate::error::Error;
use crate::lock::{Lock, ReadWriteLock};
use crate::options::LockOptions;
use crate::semaphore::Semaphore;
use crate::task::{Command, Sink};

/// How many leases a semaphore allows.
#[derive(Debug, Clone, PartialEq, Eq)]
#[non_exhaustive]
pub enum SemaphoreSize {
    /// A fixed count (a convention every participant must share, as in
    /// Curator).
    Leases(usize),
    /// The value of the shared count at `path` (Curator's
    /// `SharedCountReader`), created with `seed` if absent. Resized live:
    /// growing lets waiters in at once, shrinking takes no lease back.
    Count {
        /// The count node.
        path: String,
        /// Its value if it does not exist yet.
        seed: i32,
    },
}

/// Settings of a semaphore ([`Client::semaphore_with`]).
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

/// One lock of a multi-lock ([`Client::multi_lock_of`]): any lock kind.
#[derive(Debug, Clone)]
#[non_exhaustive]
pub enum LockSpec {
    /// A mutex on the path.
    Mutex(String),
    /// The read half of a read-write lock on the path.
    Read(String),
    /// The write half of a read-write lock on the path.
    Write(String),
    /// A semaphore mutex on the path.
    SemaphoreMutex(String),
    /// A multi-lock of these, taken in order.
    Multi(Vec<LockSpec>),
}

impl LockSpec {
    /// The lock's path, or its members' paths joined with `,`: the `path` of
    /// its log lines and metrics.
    fn label(&self) -> String {
        match self {
            LockSpec::Mutex(p) | LockSpec::Read(p) | LockSpec::Write(p) | LockSpec::SemaphoreMutex(p) => p.clone(),
            LockSpec::Multi(members) => members.iter().map(LockSpec::label).collect::<Vec<_>>().join(","),
        }
    }

    /// The `kind` label of its metrics.
    fn kind(&self) -> &'static str {
        match self {
            LockSpec::Mutex(_) => "mutex",
            LockSpec::Read(_) | LockSpec::Write(_) => "rwlock",
            LockSpec::SemaphoreMutex(_) => "semaphore_mutex",
            LockSpec::Multi(_) => "multi",
        }
    }
}

/// Which recipe's layout [`Client::participants`] reads.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
#[non_exhaustive]
pub enum ParticipantsOf {
    /// Mutex nodes (`lock-` key).
    Mutex,
    /// Read-write lock nodes (both kinds).
    ReadWriteLock,
    /// Semaphore leases (`leases/`).
    Semaphore,
    /// `LeaderLatch` nodes (`latch-` key). A `LeaderSelector` election is a
    /// mutex: [`ParticipantsOf::Mutex`].
    Latch,
}

impl ParticipantsOf {
    /// Where the queue of a lock at `path` with this layout lives, and how
    /// it sorts: what [`Client::participants`] lists and
    /// [`Client::observe`] watches.
    pub(crate) fn layout(self, path: &str) -> Result<(ZkPath, SortKey), Error> {
        use zoolock_core::recipes::policy::{LEASE_NAME, LOCK_NAME};
        let base = ZkPath::new(path)?;
        Ok(match self {
            ParticipantsOf::Mutex => (base, SortKey::curator(LOCK_NAME)),
            ParticipantsOf::ReadWriteLock => (base, SortKey::ReadWrite),
            ParticipantsOf::Semaphore => {
                (base.join(zoolock_core::recipes::SEMAPHORE_LEASES)?, SortKey::curator(LEASE_NAME))
            }
            ParticipantsOf::Latch => (base, ElectionKind::Latch.lock_name().sort_key()),
        })
    }
}

impl Client {
    /// A fair mutex on `path` (Curator's `InterProcessMutex` layout). Unlike
    /// Curator's, a second acquire by the same task waits its turn:
    /// reentrancy is explicit, with [`crate::Guard::reenter`].
    ///
    /// # Errors
    ///
    /// [`Error::Path`] for an invalid path; [`Error::ClientClosed`] once the
    /// client is closed.
    ///
    /// # Cancel safety
    ///
    /// Cancel-safe: dropping the future leaves nothing on the server (a
    /// lock's nodes are made by its acquires).
    ///
    /// ```no_run
    /// # async fn example(client: &zoolock_driver::Client) -> Result<(), zoolock_driver::Error> {
    /// let lock = client.mutex("/app/lock").await?;
    /// let guard = lock.acquire().await?;
    /// println!("holding {} with token {:?}", guard.node(), guard.fencing_token());
    /// guard.release().await?;
    /// # Ok(()) }
    /// ```
    pub async fn mutex(&self, path: &str) -> Result<Lock, Error> {
        self.mutex_with(path, LockOptions::default()).await
    }

    /// A mutex with its own settings (node data, revocable).
    pub async fn mutex_with(&self, path: &str, options: LockOptions) -> Result<Lock, Error> {
        self.one_lock(&LockSpec::Mutex(path.into()), &options).await
    }

    /// A revocable mutex: its holder gets [`crate::Hold::revocation_requested`].
    ///
    /// ```no_run
    /// # async fn example(client: &zoolock_driver::Client) -> Result<(), zoolock_driver::Error> {
    /// let lock = client.revocable_mutex("/app/lock").await?;
    /// let guard = lock.acquire().await?;
    /// guard.revocation_requested().await; // another process ran `client.revoke(node)`
    /// guard.release().await?;
    /// # Ok(()) }
    /// ```
    pub async fn revocable_mutex(&self, path: &str) -> Result<Lock, Error> {
        self.mutex_with(path, LockOptions::default().revocable(true)).await
    }

    /// The read and write halves of a read-write lock on `path`. Their
    /// fencing tokens order writers, and readers after writers, but not a
    /// downgrade's read hold before the next writer: see
    /// [`FencingToken`](crate::FencingToken) for what a resource compares.
    ///
    /// Write, then keep reading without letting another writer in between
    /// (Curator's downgrade). Acquiring the read half while holding the write
    /// half would wait for itself: `downgrade` is the way.
    ///
    /// ```no_run
    /// # async fn example(client: &zoolock_driver::Client) -> Result<(), zoolock_driver::Error> {
    /// let rw = client.read_write_lock("/app/rw").await?;
    /// let writing = rw.write.acquire().await?;
    /// let reading = writing.downgrade().await?; // a writer reads by downgrading
    /// writing.release().await?; // readers may enter now
    /// reading.release().await?;
    /// # Ok(()) }
    /// ```
    ///
    /// # Errors
    ///
    /// As [`Client::mutex`].
    pub async fn read_write_lock(&self, path: &str) -> Result<ReadWriteLock, Error> {
        self.read_write_lock_with(path, LockOptions::default()).await
    }

    /// A read-write lock with its own settings (Curator's `lockData`,
    /// revocable halves).
    pub async fn read_write_lock_with(&self, path: &str, options: LockOptions) -> Result<ReadWriteLock, Error> {
        let base = ZkPath::new(path)?;
        let mut rw = zoolock_core::ReadWriteLock::new(base, self.inner.lock_config_with(&options));
        if options.revocable {
            rw.make_revocable_read()?;
            rw.make_revocable_write()?;
        }
        let mut halves = Lock::register(self.clone(), Box::new(rw), path.to_owned(), "rwlock").await?.into_iter();
        match (halves.next(), halves.next()) {
            (Some(read), Some(write)) => Ok(ReadWriteLock { read, write }),
            _ => Err(Error::ClientClosed),
        }
    }

    /// A non-reentrant mutex built on a one-lease semaphore
    /// (Curator's `InterProcessSemaphoreMutex`).
    ///
    /// ```no_run
    /// # async fn example(client: &zoolock_driver::Client) -> Result<(), zoolock_driver::Error> {
    /// let lock = client.semaphore_mutex("/app/once").await?;
    /// if let Some(guard) = lock.try_acquire().await? {
    ///     guard.release().await?;
    /// }
    /// # Ok(()) }
    /// ```
    pub async fn semaphore_mutex(&self, path: &str) -> Result<Lock, Error> {
        self.one_lock(&LockSpec::SemaphoreMutex(path.into()), &LockOptions::default()).await
    }

    /// All of `paths` as one lock (mutexes), taken in order and released in
    /// reverse.
    ///
    /// ```no_run
    /// # async fn example(client: &zoolock_driver::Client) -> Result<(), zoolock_driver::Error> {
    /// let both = client.multi_lock(&["/app/a", "/app/b"]).await?;
    /// let guard = both.acquire().await?; // holds /app/a and /app/b, or neither
    /// guard.release().await?;
    /// # Ok(()) }
    /// ```
    pub async fn multi_lock(&self, paths: &[&str]) -> Result<Lock, Error> {
        self.multi_lock_of(paths.iter().map(|p| LockSpec::Mutex((*p).into())).collect()).await
    }

    /// Any locks as one, as Curator's `InterProcessMultiLock(List<InterProcessLock>)`:
    /// taken in order, all or nothing, released in reverse. Each member is a
    /// participant of its own (a read or write member is not a half of any
    /// other handle's read-write lock).
    ///
    /// ```no_run
    /// # async fn example(client: &zoolock_driver::Client) -> Result<(), zoolock_driver::Error> {
    /// use zoolock_driver::LockSpec;
    /// let lock = client
    ///     .multi_lock_of(vec![LockSpec::Write("/app/table".into()), LockSpec::SemaphoreMutex("/app/job".into())])
    ///     .await?;
    /// lock.acquire().await?.release().await?;
    /// # Ok(()) }
    /// ```
    pub async fn multi_lock_of(&self, members: Vec<LockSpec>) -> Result<Lock, Error> {
        self.one_lock(&LockSpec::Multi(members), &LockOptions::default()).await
    }

    /// Builds the core recipe of a lock spec (members of a multi-lock each
    /// get their own seed).
    fn build(&self, spec: &LockSpec, options: &LockOptions) -> Result<zoolock_core::recipes::BoxedLock, Error> {
        use zoolock_core::recipes::{MultiLock, Part, ReadWriteLock, SemaphoreMutex};
        let config = self.inner.lock_config_with(options);
        Ok(match spec {
            LockSpec::Mutex(path) => {
                let mut m = zoolock_core::Mutex::new(ZkPath::new(path)?, config);
                if options.revocable {
                    m.make_revocable()?;
                }
                Box::new(m)
            }
            LockSpec::SemaphoreMutex(path) => Box::new(SemaphoreMutex::new(ZkPath::new(path)?, config)),
            LockSpec::Read(path) | LockSpec::Write(path) => Box::new(ReadWriteLock::new(ZkPath::new(path)?, config)),
            LockSpec::Multi(members) => {
                let members = members
                    .iter()
                    .map(|m| {
                        let part = match m {
                            LockSpec::Read(_) => Part::Read,
                            LockSpec::Write(_) => Part::Write,
                            _ => Part::Whole,
                        };
                        Ok((self.build(m, options)?, part))
                    })
                    .collect::<Result<Vec<_>, Error>>()?;
                Box::new(MultiLock::of(members)?)
            }
        })
    }

    async fn one_lock(&self, spec: &LockSpec, options: &LockOptions) -> Result<Lock, Error> {
        let recipe = self.build(spec, options)?;
        Lock::register(self.clone(), recipe, spec.label(), spec.kind())
            .await?
            .into_iter()
            .next()
            .ok_or(Error::ClientClosed)
    }

    /// A counting semaphore with `leases` leases on `path`
    /// (Curator's `InterProcessSemaphoreV2`).
    ///
    /// ```no_run
    /// # async fn example(client: &zoolock_driver::Client) -> Result<(), zoolock_driver::Error> {
    /// let pool = client.semaphore("/app/pool", 3).await?;
    /// let lease = pool.acquire_one().await?;
    /// lease.release().await?;
    /// if let Some(two) = pool.try_acquire(2).await? {
    ///     drop(two); // returned in the background
    /// }
    /// # Ok(()) }
    /// ```
    ///
    /// # Errors
    ///
    /// [`Error::Path`] for an invalid path; [`Error::ClientClosed`] once the
    /// client is closed.
    pub async fn semaphore(&self, path: &str, leases: usize) -> Result<Semaphore, Error> {
        self.semaphore_with(path, SemaphoreOptions::leases(leases)).await
    }

    /// A semaphore with its own settings: sized by a shared count, or with
    /// revocable leases. A count is created with its seed if absent, and
    /// must hold a 4-byte int ([`Error::CountMalformed`] otherwise).
    ///
    /// ```no_run
    /// # async fn example(client: &zoolock_driver::Client) -> Result<(), zoolock_driver::Error> {
    /// use zoolock_driver::SemaphoreOptions;
    /// let pool = client.semaphore_with("/app/pool", SemaphoreOptions::sized_by("/app/pool-size", 1)).await?;
    /// client.shared_count("/app/pool-size", 1).await?.set(4).await?; // four leases from now on
    /// # Ok(()) }
    /// ```
    pub async fn semaphore_with(&self, path: &str, options: SemaphoreOptions) -> Result<Semaphore, Error> {
        use zoolock_core::recipes::{Semaphore as CoreSemaphore, SharedCount as CoreCount};
        let base = ZkPath::new(path)?;
        let mut config = self.inner.lock_config();
        config.max_hold = options.max_hold;
        let mut semaphore = match options.size {
            SemaphoreSize::Leases(n) => CoreSemaphore::new(base, n, config),
            SemaphoreSize::Count { path, seed } => {
                // As Curator's started SharedCount: the count exists and holds
                // an int before the semaphore uses it (else CountMalformed).
                drop(self.shared_count(&path, seed).await?);
                let count = CoreCount::new(ZkPath::new(&path)?, seed, config.clone());
                CoreSemaphore::with_count(base, count, config)
            }
        };
        if options.revocable {
            semaphore.make_revocable();
        }
        Semaphore::new(self.clone(), semaphore).await
    }

    /// A shared count (Curator's `SharedCount`): the node at `path` holding
    /// a 4-byte big-endian int, created with `seed` if absent. Completes
    /// once its value is known.
    ///
    /// ```no_run
    /// # async fn example(client: &zoolock_driver::Client) -> Result<(), zoolock_driver::Error> {
    /// let count = client.shared_count("/app/pool-size", 1).await?;
    /// let seen = count.get();
    /// if !count.try_set(seen.version, seen.value + 1).await? {
    ///     // someone else wrote first
    /// }
    /// # Ok(()) }
    /// ```
    pub async fn shared_count(&self, path: &str, seed: i32) -> Result<SharedCount, Error> {
        SharedCount::new(self.clone(), ZkPath::new(path)?, seed).await
    }

    /// The nodes queued on a lock path, holder first, with their data.
    /// `kind` picks the layout and its sort key.
    ///
    /// ```no_run
    /// # async fn example(client: &zoolock_driver::Client) -> Result<(), zoolock_driver::Error> {
    /// use zoolock_driver::ParticipantsOf;
    /// for p in client.participants("/app/lock", ParticipantsOf::Mutex).await? {
    ///     println!("{p:?}"); // holder first
    /// }
    /// # Ok(()) }
    /// ```
    pub async fn participants(&self, path: &str, kind: ParticipantsOf) -> Result<Vec<Participant>, Error> {
        let (base, key) = kind.layout(path)?;
        let recipe = zoolock_core::recipes::Participants::new(base, key);
        self.participants_by(recipe).await
    }

    /// Runs a participants listing to its answer.
    pub(crate) async fn participants_by(
        &self,
        recipe: zoolock_core::recipes::Participants,
    ) -> Result<Vec<Participant>, Error> {
        match self.one_shot(recipe).await? {
            RecipeEvent::Participants(list) => Ok(list),
            RecipeEvent::Failed(e) => Err(e.into()),
            _ => Err(Error::ClientClosed),
        }
    }

    /// Asks the holder of lock node `node` to release it (writes
    /// `__REVOKE__`, as Curator's `Revoker`; gzipped with
    /// [`Options::compression`](crate::Options::compression)).
    ///
    /// ```no_run
    /// # async fn example(client: &zoolock_driver::Client) -> Result<(), zoolock_driver::Error> {
    /// use zoolock_driver::ParticipantsOf;
    /// if let Some(holder) = client.participants("/app/lock", ParticipantsOf::Mutex).await?.first() {
    ///     client.revoke(&holder.path).await?;
    /// }
    /// # Ok(()) }
    /// ```
    pub async fn revoke(&self, node: &str) -> Result<(), Error> {
        let node = ZkPath::new(node)?;
        let revoker = zoolock_core::recipes::Revoker::with_compression(node, self.inner.options.compression);
        match self.one_shot(revoker).await? {
            RecipeEvent::RevokeSent => Ok(()),
            RecipeEvent::Failed(e) => Err(e.into()),
            _ => Err(Error::ClientClosed),
        }
    }

    /// Runs a one-shot recipe to its first event, then drops it.
    async fn one_shot<R: Machine<CoreMachine> + 'static>(&self, recipe: R) -> Result<RecipeEvent, Error> {
        let (tx, rx) = oneshot::channel();
        let mut tx = Some(tx);
        let sink = move |_: Handle<R>| -> Sink {
            Box::new(move |event: RecipeEvent| {
                if let Some(tx) = tx.take() {
                    let _ = tx.send(event);
                }
            })
        };
        let handle = self.add_recipe(recipe, sink).await?;
        // Dropped with the future too, so an abandoned call leaves nothing.
        let _drop = DropOnExit { client: self, id: handle.id() };
        rx.await.map_err(|_| Error::ClientClosed)
    }

    /// Registers `recipe` on the event loop with the sink `sink` makes for
    /// its handle, and returns the handle: the only way the driver gets one.
    pub(crate) async fn add_recipe<R: Machine<CoreMachine> + 'static>(
        &self,
        recipe: R,
        sink: impl FnOnce(Handle<R>) -> Sink + Send + 'static,
    ) -> Result<Handle<R>, Error> {
        let (reply, rx) = oneshot::channel();
        self.inner.send(Command::AddRecipe(Box::new(move |client: &mut CoreClient, now| {
            let handle = client.add(now, recipe);
            let taken = reply.send(handle).is_ok();
            (handle.id(), sink(handle), taken)
        })))?;
        rx.await.map_err(|_| Error::ClientClosed)
    }
}

/// Drops a one-shot recipe when its call ends, however it ends.
struct DropOnExit<'a> {
    client: &'a Client,
    id: RecipeId,
}

impl Drop for DropOnExit<'_> {
    fn drop(&mut self) {
        let _ = self.client.inner.send(Command::DropRecipe(self.id));
    }
}
