//! Observing who holds a lock or leads an election, without polling: a
//! stream over core's [`Observer`](zoolock_core::recipes::Observer), which
//! lists the queue again on each change its child watch reports (etcd's
//! `Election.Observe`; Curator's `getLeader` plus a listener).

use std::pin::Pin;
use std::task::{Context, Poll};

use futures_channel::mpsc;
use futures_lite::{Stream, StreamExt};
use zoolock_core::ApiMisuse;
use zoolock_core::recipes::{ElectionKind, LockKind, Observer, election_participants};
use zoolock_core::{Participant, RecipeEvent, ZkPath};

use crate::client::{Client, Owner, Registration};
use crate::error::Error;
use crate::task::RecipeSink;

/// The holder of an observed lock path at each change
/// ([`Client::observe`]): `Some(participant)` (its node and data) or `None`
/// when nobody is queued. The first item is the holder found by the first
/// listing. A failure is an `Err` item; the observation goes on (a lost
/// session's watches are set again on the next one). Dropping the stream
/// stops observing.
pub struct HolderChanges {
    rx: mpsc::UnboundedReceiver<Result<Option<Participant>, Error>>,
    /// Keeps the observer registered until the stream goes.
    _recipe: Owner<Registration>,
}

impl std::fmt::Debug for HolderChanges {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.debug_struct("HolderChanges").field("recipe", &self._recipe.id()).finish_non_exhaustive()
    }
}

/// An observer's sink: passes each holder (or the failure that ends the
/// observation) to its stream.
struct HolderSink(mpsc::UnboundedSender<Result<Option<Participant>, Error>>);

impl RecipeSink for HolderSink {
    fn deliver(&self, event: RecipeEvent) {
        let item = match event {
            RecipeEvent::Holder(holder) => Ok(holder),
            RecipeEvent::Failed(e) => Err(Error::from(e)),
            other => {
                tracing::trace!(?other, "observer event");
                return;
            }
        };
        let _ = self.0.unbounded_send(item);
    }
}

impl Stream for HolderChanges {
    type Item = Result<Option<Participant>, Error>;

    fn poll_next(mut self: Pin<&mut Self>, cx: &mut Context<'_>) -> Poll<Option<Self::Item>> {
        let item = std::task::ready!(Pin::new(&mut self.rx).poll_next(cx));
        Poll::Ready(item.map(|item| item.map_err(|e| self._recipe.client.inner.named(e))))
    }
}

/// An election's leader id at each change ([`Client::observe_leader`]);
/// `None` when nobody is queued.
pub type LeaderChanges = Pin<Box<dyn Stream<Item = Result<Option<String>, Error>> + Send>>;

impl Client {
    /// Observes who holds the lock at `path` (of `kind`'s layout; an
    /// election's leader for [`LockKind::LeaderSelector`] and
    /// [`LockKind::LeaderLatch`]): the holder now,
    /// then each change, told by a watch on the queue (one listing and the
    /// holder's data per change, no polling). For a read-write lock or a
    /// semaphore the holder is the oldest node.
    ///
    /// ```no_run
    /// # async fn example(client: &zoolock_tokio::Client) -> Result<(), zoolock_tokio::Error> {
    /// # use zoolock_tokio::StreamExt;
    /// # use zoolock_tokio::LockKind;
    /// let mut holders = client.observe("/app/lock", LockKind::Mutex).await?;
    /// while let Some(holder) = holders.next().await {
    ///     println!("held by {:?}", holder?.map(|p| p.path));
    /// }
    /// # Ok(()) }
    /// ```
    ///
    /// # Errors
    ///
    /// [`Error::Path`] for an invalid path; [`Error::Misuse`] (`NoLayout`)
    /// for a multi-lock, which has no queue of its own;
    /// [`Error::ClientClosed`] once the client is closed.
    ///
    /// # Cancel safety
    ///
    /// Cancel-safe: an observer registered for a dropped call is dropped.
    pub async fn observe(&self, path: &str, kind: LockKind) -> Result<HolderChanges, Error> {
        let layout = kind.layout().ok_or(Error::Misuse(ApiMisuse::NoLayout(kind)))?;
        let queue = layout.queue(&ZkPath::new(path)?)?;
        self.observe_with(Observer::new(queue, layout.sort_key())).await
    }

    /// Observes who leads the election at `path`: the leader's id now, then
    /// each change (a new term of the same participant included), as
    /// Curator's `getLeader()` would read it.
    ///
    /// ```no_run
    /// # async fn example(client: &zoolock_tokio::Client) -> Result<(), zoolock_tokio::Error> {
    /// # use zoolock_tokio::StreamExt;
    /// # use zoolock_tokio::ElectionKind;
    /// let mut leaders = client.observe_leader("/app/leader", ElectionKind::Selector).await?;
    /// while let Some(leader) = leaders.next().await {
    ///     println!("leader: {:?}", leader?);
    /// }
    /// # Ok(()) }
    /// ```
    ///
    /// # Errors
    ///
    /// As [`Client::observe`].
    ///
    /// # Cancel safety
    ///
    /// As [`Client::observe`].
    pub async fn observe_leader(&self, path: &str, kind: ElectionKind) -> Result<LeaderChanges, Error> {
        let changes = self.observe_with(Observer::election(ZkPath::new(path)?, kind)).await?;
        Ok(Box::pin(
            changes.map(|holder| holder.map(|h| election_participants(h.as_slice()).into_iter().next().map(|p| p.id))),
        ))
    }

    async fn observe_with(&self, observer: Observer) -> Result<HolderChanges, Error> {
        let (tx, rx) = mpsc::unbounded();
        let reserved = self.reserve::<Observer>();
        let id = reserved.handle().id();
        self.register(reserved, observer, std::sync::Arc::new(HolderSink(tx)))?;
        Ok(HolderChanges { rx, _recipe: Owner::new(self.clone(), Registration::new(id)) })
    }
}
