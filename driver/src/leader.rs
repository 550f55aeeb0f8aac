//! Leader election, Curator-compatible (DESIGN §4.12): a [`LeaderSelector`]
//! participant is a mutex on the election path whose node data is its id (as
//! Curator's `LeaderSelector` with `setId`); a [`LeaderLatch`] is the same
//! queue under the node name `latch-` (Curator's `LeaderLatch`). Leadership
//! is a lock hold, so it has a hold's loss signals (`Suspended`, `Lost`) and
//! nothing here re-implements them: this file only queues, re-queues and
//! reads the queue.

use std::future::Future;
use std::sync::Arc;
use std::time::Duration;

use futures_lite::{Stream, StreamExt};
use zoolock_core::recipes::LockName;
use zoolock_core::{FencingToken, ZkPath};

use crate::client::Client;
use crate::error::Error;
use crate::hold::{HoldStatus, StatusChanges, Watched};
use crate::lock::{Guard, Lock};
use crate::options::LockOptions;

/// Which of Curator's two election layouts a path has.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Default)]
#[non_exhaustive]
pub enum Election {
    /// Curator's `LeaderSelector`: a mutex (`lock-` nodes) whose node data is
    /// the participant id.
    #[default]
    Selector,
    /// Curator's `LeaderLatch`: `latch-` nodes, the lowest leads.
    Latch,
}

impl Election {
    /// Its participants' node name (`lock-` or `latch-`).
    pub fn lock_name(self) -> LockName {
        match self {
            Election::Selector => LockName::lock(),
            Election::Latch => LockName::latch(),
        }
    }
}

/// One participant of an election, in queue order (Curator's
/// `Participant`: its id and whether it leads).
#[derive(Debug, Clone, PartialEq, Eq)]
#[non_exhaustive]
pub struct LeaderParticipant {
    /// Its id: the node data, as UTF-8 (invalid bytes replaced).
    pub id: String,
    /// Whether it leads now (the first node in the queue).
    pub is_leader: bool,
    /// Its node's full path.
    pub node: String,
}

impl Client {
    /// A participant `id` of the election at `path`, in Curator's
    /// `LeaderSelector` layout: the id is its node data (Curator's `setId`),
    /// so Curator participants on the same path see it, and it sees them.
    /// Nothing is queued until [`LeaderSelector::leadership`] or
    /// [`LeaderSelector::run`].
    ///
    /// ```no_run
    /// # async fn example(client: &zoolock_driver::Client) -> Result<(), zoolock_driver::Error> {
    /// let selector = client.leader_selector("/app/leader", "worker-1").await?;
    /// let leadership = selector.leadership().await?; // waits until we lead
    /// let work = async { /* lead */ };
    /// futures_lite::future::or(async { let _ = leadership.lost().await; }, work).await;
    /// leadership.release().await?; // the next participant leads
    /// # Ok(()) }
    /// ```
    ///
    /// # Errors
    ///
    /// [`Error::Path`] for an invalid path; [`Error::ClientClosed`] once the
    /// client is closed.
    ///
    /// # Cancel safety
    ///
    /// Cancel-safe: nothing is on the server until leadership is asked for.
    pub async fn leader_selector(&self, path: &str, id: &str) -> Result<LeaderSelector, Error> {
        self.leader_selector_with(path, id, LockOptions::default()).await
    }

    /// [`Client::leader_selector`] with lock settings (a maximum hold:
    /// [`LockOptions::max_hold`]); the node data is always the id.
    ///
    /// # Errors
    ///
    /// As [`Client::leader_selector`].
    pub async fn leader_selector_with(
        &self,
        path: &str,
        id: &str,
        options: LockOptions,
    ) -> Result<LeaderSelector, Error> {
        self.election_participant(path, Election::Selector, id, options).await
    }

    /// A participant `id` of the election at `path` in either layout, taking
    /// terms as [`LeaderSelector`] does. In the [`Election::Latch`] layout
    /// each term is one Curator `LeaderLatch` from `start()` to `close()`:
    /// [`LeaderSelector::leadership`] queues a `latch-` node, and releasing
    /// the [`Leadership`] deletes it (`zoolock elect --latch` runs CMD in
    /// one such term). [`Client::leader_latch`] is the latch that stays
    /// queued.
    ///
    /// # Errors
    ///
    /// As [`Client::leader_selector`].
    pub async fn election_participant(
        &self,
        path: &str,
        election: Election,
        id: &str,
        options: LockOptions,
    ) -> Result<LeaderSelector, Error> {
        let lock = self.election_lock(path, election, id, options).await?;
        Ok(LeaderSelector {
            lock,
            client: self.clone(),
            path: path.into(),
            id: id.into(),
            election,
            auto_requeue: false,
        })
    }

    /// Starts a participant `id` of the `LeaderLatch` election at `path`
    /// (Curator's `LeaderLatch(client, path, id)` and `start()`): it queues
    /// at once and leads while its node is the lowest, until
    /// [`LeaderLatch::close`] (or until the latch is dropped, which closes
    /// it silently). A lost hold re-queues with a new node, as Curator's
    /// latch resets.
    ///
    /// ```no_run
    /// # async fn example(client: &zoolock_driver::Client) -> Result<(), zoolock_driver::Error> {
    /// use zoolock_driver::CloseMode;
    /// let latch = client.leader_latch("/app/latch", "worker-1").await?;
    /// latch.leadership().await?; // Curator's await()
    /// assert_eq!(latch.leader().await?.as_deref(), Some("worker-1"));
    /// latch.close(CloseMode::NotifyLeader).await?;
    /// # Ok(()) }
    /// ```
    ///
    /// # Errors
    ///
    /// [`Error::Path`] for an invalid path; [`Error::ClientClosed`] once the
    /// client is closed.
    ///
    /// # Cancel safety
    ///
    /// Cancel-safe: a latch dropped before it was returned closes silently.
    pub async fn leader_latch(&self, path: &str, id: &str) -> Result<LeaderLatch, Error> {
        self.leader_latch_with(path, id, LockOptions::default()).await
    }

    /// [`Client::leader_latch`] with lock settings (a maximum hold:
    /// [`LockOptions::max_hold`]; each term is re-queued when it ends).
    ///
    /// # Errors
    ///
    /// As [`Client::leader_latch`].
    pub async fn leader_latch_with(&self, path: &str, id: &str, options: LockOptions) -> Result<LeaderLatch, Error> {
        let lock = self.election_lock(path, Election::Latch, id, options).await?;
        Ok(LeaderLatch::start(self.clone(), lock, path.into(), id.into()))
    }

    /// The id of the election's leader at `path` now (Curator's
    /// `getLeader().getId()`), `None` when nobody is queued. One listing
    /// and one read per participant, as [`Client::participants`].
    ///
    /// # Errors
    ///
    /// [`Error::Path`] for an invalid path; the listing's failure.
    pub async fn leader(&self, path: &str, election: Election) -> Result<Option<String>, Error> {
        Ok(self.election(path, election).await?.into_iter().find(|p| p.is_leader).map(|p| p.id))
    }

    /// The election's participants at `path` in queue order, the leader
    /// first (Curator's `getParticipants()`). A node that vanished while
    /// being read is left out; the first one left leads.
    ///
    /// # Errors
    ///
    /// [`Error::Path`] for an invalid path; the listing's failure.
    pub async fn election(&self, path: &str, election: Election) -> Result<Vec<LeaderParticipant>, Error> {
        let base = ZkPath::new(path)?;
        let key = election.lock_name().sort_key();
        let list = self.participants_by(zoolock_core::recipes::Participants::new(base, key)).await?;
        Ok(list
            .into_iter()
            .filter_map(|p| Some((p.path, p.data?)))
            .enumerate()
            .map(|(i, (node, data))| LeaderParticipant {
                id: String::from_utf8_lossy(&data).into_owned(),
                is_leader: i == 0,
                node,
            })
            .collect())
    }

    /// The lock a participant of `election` queues with: its id as node data.
    async fn election_lock(
        &self,
        path: &str,
        election: Election,
        id: &str,
        options: LockOptions,
    ) -> Result<Lock, Error> {
        let options = options.name(election.lock_name()).data(bytes::Bytes::copy_from_slice(id.as_bytes()));
        self.mutex_with(path, options).await
    }
}

/// A participant of a `LeaderSelector` election (from
/// [`Client::leader_selector`]). Clone it freely: clones are one participant
/// (one node at a time on the server), as [`Lock`] clones are.
#[derive(Debug, Clone)]
pub struct LeaderSelector {
    lock: Lock,
    client: Client,
    path: Arc<str>,
    id: Arc<str>,
    election: Election,
    auto_requeue: bool,
}

impl LeaderSelector {
    /// Its participant id (its node data).
    pub fn id(&self) -> &str {
        &self.id
    }

    /// Re-queue after each term in [`LeaderSelector::run`] (Curator's
    /// `autoRequeue()`); off by default, as in Curator.
    #[must_use]
    pub fn auto_requeue(mut self, on: bool) -> Self {
        self.auto_requeue = on;
        self
    }

    /// Queues and waits until this participant leads. The leadership lasts
    /// until it is released or dropped (the next participant leads), or
    /// lost ([`Leadership::lost`]).
    ///
    /// # Errors
    ///
    /// As [`Lock::acquire`].
    ///
    /// # Cancel safety
    ///
    /// Cancel-safe: dropping the future leaves the queue, and no node is
    /// left behind.
    pub async fn leadership(&self) -> Result<Leadership, Error> {
        self.lock.acquire().await.map(Leadership)
    }

    /// [`LeaderSelector::leadership`], waiting at most `timeout`.
    ///
    /// # Errors
    ///
    /// [`Error::TimedOut`] after `timeout`; otherwise as [`Lock::acquire`].
    ///
    /// # Cancel safety
    ///
    /// As [`LeaderSelector::leadership`].
    pub async fn leadership_timeout(&self, timeout: Duration) -> Result<Leadership, Error> {
        self.lock.acquire_timeout(timeout).await.map(Leadership)
    }

    /// [`LeaderSelector::leadership`], waiting at most `timeout` (`None`: as
    /// long as needed) and calling `progress` with the place in the queue
    /// whenever it changes, as [`Lock::acquire_with_progress`].
    ///
    /// # Errors
    ///
    /// As [`Lock::acquire_with_progress`].
    ///
    /// # Cancel safety
    ///
    /// As [`LeaderSelector::leadership`].
    pub async fn leadership_with_progress(
        &self,
        timeout: Option<Duration>,
        progress: impl FnMut(crate::QueuePosition) + Send,
    ) -> Result<Leadership, Error> {
        self.lock.acquire_with_progress(timeout, progress).await.map(Leadership)
    }

    /// Runs `lead` for each term (Curator's `takeLeadership`): waits for
    /// leadership, runs `lead` with it, and gives leadership up when `lead`
    /// returns or as soon as the leadership reads `Suspended` or `Lost`
    /// (then `lead`'s future is dropped, as Curator's listener adapter
    /// cancels a term). Returns after one term, or never with
    /// [`LeaderSelector::auto_requeue`] (drop the future to stop).
    ///
    /// ```no_run
    /// # async fn example(client: &zoolock_driver::Client) -> Result<(), zoolock_driver::Error> {
    /// let selector = client.leader_selector("/app/leader", "worker-1").await?.auto_requeue(true);
    /// selector
    ///     .run(|leadership| async move {
    ///         println!("leading with token {:?}", leadership.fencing_token());
    ///     })
    ///     .await?;
    /// # Ok(()) }
    /// ```
    ///
    /// # Errors
    ///
    /// An acquire's error (as [`Lock::acquire`]); a term's end is not one.
    ///
    /// # Cancel safety
    ///
    /// Cancel-safe: dropping the future leaves the queue or gives up the
    /// leadership under way (its node is deleted).
    pub async fn run<F, Fut>(&self, mut lead: F) -> Result<(), Error>
    where
        F: FnMut(Arc<Leadership>) -> Fut,
        Fut: Future<Output = ()>,
    {
        loop {
            let leadership = Arc::new(self.leadership().await?);
            let term = lead(leadership.clone());
            futures_lite::future::or(term, async {
                let _ = leadership.lost().await;
            })
            .await;
            if let Ok(leadership) = Arc::try_unwrap(leadership) {
                // A lost or suspended hold's release is not an error either.
                leadership.release().await?;
            }
            if !self.auto_requeue {
                return Ok(());
            }
        }
    }

    /// Whether this participant leads now, certainly (`Held`).
    pub fn has_leadership(&self) -> bool {
        self.lock.status() == HoldStatus::Held
    }

    /// The current leader's id (Curator's `getLeader()`), `None` when nobody
    /// is queued.
    ///
    /// # Errors
    ///
    /// The listing's failure.
    pub async fn leader(&self) -> Result<Option<String>, Error> {
        self.client.leader(&self.path, self.election).await
    }

    /// The participants in queue order, the leader first (Curator's
    /// `getParticipants()`).
    ///
    /// # Errors
    ///
    /// The listing's failure.
    pub async fn participants(&self) -> Result<Vec<LeaderParticipant>, Error> {
        self.client.election(&self.path, self.election).await
    }
}

/// A term of leadership: a hold of the election's lock, with the same loss
/// signals as a [`Guard`]. Dropping it gives leadership up in the
/// background; [`Leadership::release`] waits for that.
#[must_use = "leadership is given up as soon as it is dropped"]
#[derive(Debug)]
pub struct Leadership(Guard);

impl Leadership {
    /// As [`Guard::status`]: `Held` while leading for certain.
    pub fn status(&self) -> HoldStatus {
        self.0.status()
    }

    /// As [`Guard::lost`]: completes once the leadership reads `Suspended`
    /// or `Lost`.
    ///
    /// # Cancel safety
    ///
    /// Cancel-safe: it only waits.
    pub async fn lost(&self) -> HoldStatus {
        self.0.lost().await
    }

    /// As [`Guard::status_changes`].
    pub fn status_changes(&self) -> StatusChanges {
        self.0.status_changes()
    }

    /// The term's fencing token (its node's czxid): it increases from one
    /// leader to the next.
    pub fn fencing_token(&self) -> FencingToken {
        self.0.fencing_token()
    }

    /// Our election node.
    pub fn node(&self) -> &str {
        self.0.node()
    }

    /// Ends the term: the node is deleted and the next participant leads.
    ///
    /// # Errors
    ///
    /// As [`Guard::release`]; a lost leadership is not an error.
    ///
    /// # Cancel safety
    ///
    /// As [`Guard::release`].
    pub async fn release(self) -> Result<(), Error> {
        self.0.release().await
    }

    /// The hold underneath, for what only a guard does ([`Guard::fenced`]).
    pub fn guard(&self) -> &Guard {
        &self.0
    }
}

/// A latch's leadership changes ([`LeaderLatch::leadership_changes`]).
pub type LeadershipChanges = std::pin::Pin<Box<dyn Stream<Item = bool> + Send>>;

/// How [`LeaderLatch::close`] ends a latch (Curator's `CloseMode`).
#[derive(Debug, Clone, Copy, PartialEq, Eq, Default)]
#[non_exhaustive]
pub enum CloseMode {
    /// No last leadership change is reported (Curator's default).
    #[default]
    Silent,
    /// A leading latch reports `false` on [`LeaderLatch::leadership_changes`]
    /// as it closes (Curator's `NOTIFY_LEADER`: `notLeader()` is called).
    NotifyLeader,
}

/// What a latch's handles and its queueing task share.
#[derive(Debug, Default)]
struct LatchState {
    /// The current term's hold.
    guard: Option<Guard>,
    /// Whether the latch leads for certain (the term is `Held`).
    leading: bool,
    /// Closed, and how.
    closed: Option<CloseMode>,
    /// The queueing task's last error, reported by `leadership()`.
    failed: Option<Error>,
}

/// A started participant of a `LeaderLatch` election (from
/// [`Client::leader_latch`]). It stays queued (re-queueing after a lost
/// term) until closed or dropped.
#[derive(Debug)]
pub struct LeaderLatch {
    shared: Arc<Watched<LatchState>>,
    client: Client,
    path: Arc<str>,
    id: Arc<str>,
}

impl LeaderLatch {
    /// Spawns the task that queues `lock` until the latch closes.
    fn start(client: Client, lock: Lock, path: Arc<str>, id: Arc<str>) -> LeaderLatch {
        let shared = Arc::new(Watched::<LatchState>::default());
        let task = latch_task(lock, shared.clone());
        client.inner.runtime.spawn(Box::pin(task));
        LeaderLatch { shared, client, path, id }
    }

    /// Its participant id (its node data).
    pub fn id(&self) -> &str {
        &self.id
    }

    /// Whether this latch leads now, certainly (Curator's `hasLeadership()`).
    pub fn has_leadership(&self) -> bool {
        self.shared.peek(|s| s.closed.is_none() && s.guard.as_ref().is_some_and(|g| g.status() == HoldStatus::Held))
    }

    /// Completes once this latch leads (Curator's `await()`); at once if it
    /// does.
    ///
    /// # Errors
    ///
    /// [`Error::ClientClosed`] once the latch or the client is closed; the
    /// queueing's failure (as [`Lock::acquire`]).
    ///
    /// # Cancel safety
    ///
    /// Cancel-safe: it only waits; the latch stays queued.
    pub async fn leadership(&self) -> Result<(), Error> {
        loop {
            let listener = self.shared.changed.listen();
            let ready = self.shared.peek(|s| match (&s.closed, &s.failed) {
                (Some(_), _) => Some(Err(Error::ClientClosed)),
                (None, Some(e)) => Some(Err(e.clone())),
                (None, None) if s.leading => Some(Ok(())),
                _ => None,
            });
            if let Some(ready) = ready {
                return ready;
            }
            listener.await;
        }
    }

    /// Whether it leads, now and at every change (Curator's
    /// `LeaderLatchListener`: `true` is `isLeader()`, `false` `notLeader()`).
    /// Ends once the latch is closed, after a last `false` with
    /// [`CloseMode::NotifyLeader`] if it led.
    pub fn leadership_changes(&self) -> LeadershipChanges {
        let shared = self.shared.clone();
        Box::pin(futures_lite::stream::unfold((shared, None::<bool>), |(shared, last)| async move {
            loop {
                let listener = shared.changed.listen();
                let (leading, closed) = shared.peek(|s| (s.leading, s.closed));
                let next = match closed {
                    Some(CloseMode::NotifyLeader) if last == Some(true) => Some(false),
                    Some(_) => return None,
                    None if last != Some(leading) => Some(leading),
                    None => None,
                };
                if let Some(next) = next {
                    return Some((next, (shared, Some(next))));
                }
                listener.await;
            }
        }))
    }

    /// The current leader's id (Curator's `getLeader()`), `None` when nobody
    /// is queued.
    ///
    /// # Errors
    ///
    /// The listing's failure.
    pub async fn leader(&self) -> Result<Option<String>, Error> {
        self.client.leader(&self.path, Election::Latch).await
    }

    /// The participants in queue order, the leader first (Curator's
    /// `getParticipants()`).
    ///
    /// # Errors
    ///
    /// The listing's failure.
    pub async fn participants(&self) -> Result<Vec<LeaderParticipant>, Error> {
        self.client.election(&self.path, Election::Latch).await
    }

    /// Leaves the election (Curator's `close(mode)`): the node is deleted
    /// and the next participant leads.
    ///
    /// # Errors
    ///
    /// The release's failure (as [`Guard::release`]).
    ///
    /// # Cancel safety
    ///
    /// Cancel-safe: the latch is closed at the first poll; dropping the
    /// future then loses only the release's answer.
    pub async fn close(self, mode: CloseMode) -> Result<(), Error> {
        let guard = self.close_with(mode);
        match guard {
            Some(guard) => guard.release().await,
            None => Ok(()),
        }
    }

    /// Marks the latch closed and takes its hold, if any.
    fn close_with(&self, mode: CloseMode) -> Option<Guard> {
        self.shared.with(|s| {
            s.closed.get_or_insert(mode);
            s.leading = false;
            s.guard.take()
        })
    }
}

impl Drop for LeaderLatch {
    fn drop(&mut self) {
        // Closing silently; the guard's drop releases in the background.
        drop(self.close_with(CloseMode::Silent));
    }
}

/// Queues the latch's lock until the latch closes: each term's guard goes
/// into the shared state, `leading` follows its status, and a lost term is
/// let go and queued again.
async fn latch_task(lock: Lock, shared: Arc<Watched<LatchState>>) {
    let closed = || shared.peek(|s| s.closed.is_some());
    while !closed() {
        let acquire = async { Some(lock.acquire().await) };
        let close = async {
            loop {
                let listener = shared.changed.listen();
                if closed() {
                    return None;
                }
                listener.await;
            }
        };
        let guard = match futures_lite::future::or(acquire, close).await {
            None => return,
            Some(Ok(guard)) => guard,
            Some(Err(e)) => {
                shared.with(|s| s.failed = Some(e));
                return;
            }
        };
        let mut changes = guard.status_changes();
        let kept = shared.with(|s| {
            if s.closed.is_some() {
                return Err(guard);
            }
            s.guard = Some(guard);
            Ok(())
        });
        if let Err(guard) = kept {
            drop(guard.release().await);
            return;
        }
        // Follow the term until it is lost (or the latch closes, which
        // takes the guard and ends the stream's wait by its own event).
        loop {
            let next = futures_lite::future::or(async { changes.next().await }, async {
                loop {
                    let listener = shared.changed.listen();
                    if closed() {
                        return None;
                    }
                    listener.await;
                }
            })
            .await;
            match next {
                Some(HoldStatus::Held) => shared.with(|s| s.leading = s.closed.is_none()),
                Some(HoldStatus::Suspended) => shared.with(|s| s.leading = false),
                _ => break,
            }
        }
        let lost = shared.with(|s| {
            s.leading = false;
            s.guard.take()
        });
        if let Some(guard) = lost {
            // Lost: nothing to delete; let go and queue again.
            drop(guard.release().await);
        }
    }
}
