//! The recipe constructors of [`Client`]: every lock kind, the semaphore,
//! the shared count, participants and revocation, and the per-lock settings
//! they take.

use std::sync::Arc;

use futures_channel::oneshot;
use zoolock_core::recipes::{LockKind, LockSpec, SemaphoreSize, SemaphoreSpec};
use zoolock_core::{
    ApiMisuse, CoreMachine, Machine, Participant, RecipeEvent, RecipeId, Reserved, ZkPath, recipes::Participants,
};

use crate::client::Client;
use crate::count::SharedCount;
use crate::error::Error;
use crate::lock::{Lock, ReadWriteLock};
use crate::options::{LockOptions, SemaphoreOptions};
use crate::semaphore::Semaphore;
use crate::task::{Command, RecipeSink, Sink};

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
    /// # async fn example(client: &zoolock_tokio::Client) -> Result<(), zoolock_tokio::Error> {
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
        self.lock_of(LockSpec::Mutex(path.into()), options).await
    }

    /// A revocable mutex: its holder gets [`crate::Hold::revocation_requested`].
    ///
    /// ```no_run
    /// # async fn example(client: &zoolock_tokio::Client) -> Result<(), zoolock_tokio::Error> {
    /// let lock = client.revocable_mutex("/app/lock").await?;
    /// let guard = lock.acquire().await?;
    /// guard.revocation_requested().await; // another process ran `client.revoke(node)`
    /// guard.release().await?;
    /// # Ok(()) }
    /// ```
    pub async fn revocable_mutex(&self, path: &str) -> Result<Lock, Error> {
        self.mutex_with(path, LockOptions::default().revocable(true)).await
    }

    /// The read and write halves of a read-write lock on `path`: a new
    /// participant, whose reads share with other handles' and take turns
    /// among themselves ([`ReadWriteLock`]'s sharing rule). Their
    /// fencing tokens order writers, and readers after writers, but not a
    /// downgrade's read hold before the next writer: see
    /// [`FencingToken`](crate::FencingToken) for what a resource compares.
    ///
    /// Write, then keep reading without letting another writer in between
    /// (Curator's downgrade). Acquiring the read half while holding the write
    /// half would wait for itself: `downgrade` is the way.
    ///
    /// ```no_run
    /// # async fn example(client: &zoolock_tokio::Client) -> Result<(), zoolock_tokio::Error> {
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
        let spec = LockSpec::Read(path.into());
        let (rw, _) = spec.build(self.inner.lock_config_with(&options), options.revocable).map_err(spec_error)?;
        let mut halves = Lock::register(self.clone(), rw, &spec)?.into_iter();
        match (halves.next(), halves.next()) {
            (Some(read), Some(write)) => Ok(ReadWriteLock { read, write }),
            _ => Err(self.inner.shared.closed()),
        }
    }

    /// A non-reentrant mutex built on a one-lease semaphore
    /// (Curator's `InterProcessSemaphoreMutex`).
    ///
    /// ```no_run
    /// # async fn example(client: &zoolock_tokio::Client) -> Result<(), zoolock_tokio::Error> {
    /// let lock = client.semaphore_mutex("/app/once").await?;
    /// if let Some(guard) = lock.try_acquire().await? {
    ///     guard.release().await?;
    /// }
    /// # Ok(()) }
    /// ```
    pub async fn semaphore_mutex(&self, path: &str) -> Result<Lock, Error> {
        self.lock_of(LockSpec::SemaphoreMutex(path.into()), LockOptions::default()).await
    }

    /// All of `paths` as one lock (mutexes), taken in order and released in
    /// reverse.
    ///
    /// ```no_run
    /// # async fn example(client: &zoolock_tokio::Client) -> Result<(), zoolock_tokio::Error> {
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
    /// # async fn example(client: &zoolock_tokio::Client) -> Result<(), zoolock_tokio::Error> {
    /// # use zoolock_tokio::LockSpec;
    /// let lock = client
    ///     .multi_lock_of(vec![LockSpec::Write("/app/table".into()), LockSpec::SemaphoreMutex("/app/job".into())])
    ///     .await?;
    /// lock.acquire().await?.release().await?;
    /// # Ok(()) }
    /// ```
    pub async fn multi_lock_of(&self, members: Vec<LockSpec>) -> Result<Lock, Error> {
        self.lock_of(LockSpec::Multi(members), LockOptions::default()).await
    }

    /// The lock `spec` describes, with its own settings: any lock kind
    /// through one call ([`Client::mutex_with`], [`Client::semaphore_mutex`]
    /// and [`Client::multi_lock_of`] are this with their spec). A read or
    /// write half asked for alone is a read-write lock of its own, whose
    /// other half nobody holds in this process.
    ///
    /// # Errors
    ///
    /// [`Error::Path`] for an invalid path; [`Error::Misuse`] for a
    /// multi-lock of nothing; [`Error::ClientClosed`] once the client is
    /// closed.
    ///
    /// # Cancel safety
    ///
    /// Cancel-safe, as [`Client::mutex`].
    pub async fn lock_of(&self, spec: LockSpec, options: LockOptions) -> Result<Lock, Error> {
        let (recipe, part) =
            spec.build(self.inner.lock_config_with(&options), options.revocable).map_err(spec_error)?;
        Lock::register(self.clone(), recipe, &spec)?
            .into_iter()
            .nth(part.index())
            .ok_or_else(|| self.inner.shared.closed())
    }

    /// A counting semaphore with `leases` leases on `path`
    /// (Curator's `InterProcessSemaphoreV2`).
    ///
    /// ```no_run
    /// # async fn example(client: &zoolock_tokio::Client) -> Result<(), zoolock_tokio::Error> {
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
    /// # async fn example(client: &zoolock_tokio::Client) -> Result<(), zoolock_tokio::Error> {
    /// # use zoolock_tokio::SemaphoreOptions;
    /// let pool = client.semaphore_with("/app/pool", SemaphoreOptions::sized_by("/app/pool-size", 1)).await?;
    /// client.shared_count("/app/pool-size", 1).await?.set(4).await?; // four leases from now on
    /// # Ok(()) }
    /// ```
    pub async fn semaphore_with(&self, path: &str, options: SemaphoreOptions) -> Result<Semaphore, Error> {
        let spec = SemaphoreSpec::new(path, options.size, options.revocable);
        ZkPath::new(path)?;
        let config = self.inner.lock_config_with(&LockOptions { max_hold: options.max_hold, ..LockOptions::default() });
        if let SemaphoreSize::Count { path, seed } = &spec.size {
            // As Curator's started SharedCount: the count exists and holds
            // an int before the semaphore uses it (else CountMalformed).
            drop(self.shared_count(path, *seed).await?);
        }
        let semaphore = spec.build(config).map_err(spec_error)?;
        Semaphore::new(self.clone(), semaphore)
    }

    /// A shared count (Curator's `SharedCount`): the node at `path` holding
    /// a 4-byte big-endian int, created with `seed` if absent. Completes
    /// once its value is known.
    ///
    /// ```no_run
    /// # async fn example(client: &zoolock_tokio::Client) -> Result<(), zoolock_tokio::Error> {
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
    /// `kind` picks the layout ([`LockKind::layout`]); a multi-lock has no
    /// queue of its own ([`ApiMisuse::NoLayout`]).
    ///
    /// ```no_run
    /// # async fn example(client: &zoolock_tokio::Client) -> Result<(), zoolock_tokio::Error> {
    /// # use zoolock_tokio::LockKind;
    /// for p in client.participants("/app/lock", LockKind::Mutex).await? {
    ///     println!("{p:?}"); // holder first
    /// }
    /// # Ok(()) }
    /// ```
    pub async fn participants(&self, path: &str, kind: LockKind) -> Result<Vec<Participant>, Error> {
        let recipe = Participants::of(kind, ZkPath::new(path)?).map_err(spec_error)?;
        self.participants_by(recipe).await
    }

    /// Runs a participants listing to its answer.
    pub(crate) async fn participants_by(&self, recipe: Participants) -> Result<Vec<Participant>, Error> {
        match self.one_shot(recipe).await? {
            RecipeEvent::Participants(list) => Ok(list),
            RecipeEvent::Failed(e) => Err(self.inner.named(e.into())),
            _ => Err(self.inner.shared.closed()),
        }
    }

    /// Asks the holder of lock node `node` to release it (writes
    /// `__REVOKE__`, as Curator's `Revoker`; gzipped with
    /// [`Options::compression`](crate::Options::compression)).
    ///
    /// ```no_run
    /// # async fn example(client: &zoolock_tokio::Client) -> Result<(), zoolock_tokio::Error> {
    /// # use zoolock_tokio::LockKind;
    /// if let Some(holder) = client.participants("/app/lock", LockKind::Mutex).await?.first() {
    ///     client.revoke(&holder.path).await?;
    /// }
    /// # Ok(()) }
    /// ```
    pub async fn revoke(&self, node: &str) -> Result<(), Error> {
        let node = ZkPath::new(node)?;
        let revoker = zoolock_core::recipes::Revoker::with_compression(node, self.inner.options.compression);
        match self.one_shot(revoker).await? {
            RecipeEvent::RevokeSent => Ok(()),
            RecipeEvent::Failed(e) => Err(self.inner.named(e.into())),
            _ => Err(self.inner.shared.closed()),
        }
    }

    /// Runs a one-shot recipe to its first event, then drops it.
    async fn one_shot<R: Machine<CoreMachine> + 'static>(&self, recipe: R) -> Result<RecipeEvent, Error> {
        let (tx, rx) = oneshot::channel();
        let reserved = self.reserve::<R>();
        let id = reserved.handle().id();
        self.register(reserved, recipe, Arc::new(FirstEvent(std::sync::Mutex::new(Some(tx)))))?;
        // Dropped with the future too, so an abandoned call leaves nothing.
        let _drop = DropOnExit { client: self, id };
        rx.await.map_err(|_| self.inner.shared.closed())
    }

    /// A handle for a recipe of type `R`, made here, to be registered with
    /// [`Client::register`].
    pub(crate) fn reserve<R>(&self) -> Reserved<R> {
        self.inner.reserver.reserve()
    }

    /// Registers `recipe` on the event loop under the handle reserved for
    /// it, with `sink` for its events (before any is delivered). Commands
    /// through the handle may follow at once: the loop runs them in order.
    ///
    /// # Errors
    ///
    /// [`Error::ClientClosed`] once the client is closed: every handle is
    /// made here, and none after `close`.
    pub(crate) fn register<R: Machine<CoreMachine>>(
        &self,
        reserved: Reserved<R>,
        recipe: R,
        sink: Sink,
    ) -> Result<(), Error> {
        if self.inner.shared.read(|s| s.closed).unwrap_or(true) {
            return Err(self.inner.shared.closed());
        }
        self.inner.send(Command::Register { recipe: Box::new(reserved.with(recipe)), sink })
    }
}

/// The sink of a one-shot recipe: passes on its first event.
struct FirstEvent(std::sync::Mutex<Option<oneshot::Sender<RecipeEvent>>>);

impl RecipeSink for FirstEvent {
    fn deliver(&self, event: RecipeEvent) {
        if let Some(tx) = self.0.lock().ok().and_then(|mut tx| tx.take()) {
            let _ = tx.send(event);
        }
    }
}

/// A lock description that does not build: a bad path is the caller's
/// [`Error::Path`], as everywhere else.
fn spec_error(e: ApiMisuse) -> Error {
    match e {
        ApiMisuse::InvalidPath(e) => Error::Path(e),
        e => Error::Misuse(e),
    }
}

/// Drops a one-shot recipe when its call ends, however it ends.
struct DropOnExit<'a> {
    client: &'a Client,
    id: RecipeId,
}

impl Drop for DropOnExit<'_> {
    fn drop(&mut self) {
        let _ = self.client.inner.send(Command::Retire(self.id));
    }
}
