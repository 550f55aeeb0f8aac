//! [`LeaderLatch`]: Curator's `LeaderLatch` over one participant of
//! core's election machine (as `leader.rs` registers it), kept queued and
//! re-queued by core until it is closed.

use std::sync::Arc;

use futures_lite::Stream;
use zoolock_core::ApiMisuse;
use zoolock_core::recipes::{Election as CoreElection, ElectionKind, ElectionParticipant};

use crate::client::Client;
use crate::error::Error;
use crate::leader::{Candidate, ElectionOp, failure_error, not_in_core};
use crate::options::LockOptions;

impl Client {
    /// Starts a participant `id` of the `LeaderLatch` election at `path`
    /// (Curator's `LeaderLatch(client, path, id)` and `start()`): it queues
    /// at once and leads while its node is the lowest, until
    /// [`LeaderLatch::close`] (or until the latch is dropped, which closes
    /// it silently). A lost term queues again with a new node, as Curator's
    /// latch resets; a term suspended by a dropped connection leads again
    /// once the same session is back, without re-queueing.
    ///
    /// ```no_run
    /// # async fn example(client: &zoolock_tokio::Client) -> Result<(), zoolock_tokio::Error> {
    /// # use zoolock_tokio::CloseMode;
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

    /// [`Client::leader_latch`] with lock settings ([`LockOptions::max_hold`]
    /// bounds each term, the latch then queues again;
    /// [`LockOptions::leadership`] says whether a suspended term leads).
    ///
    /// # Errors
    ///
    /// As [`Client::leader_latch`].
    ///
    /// # Cancel safety
    ///
    /// As [`Client::leader_latch`].
    pub async fn leader_latch_with(&self, path: &str, id: &str, options: LockOptions) -> Result<LeaderLatch, Error> {
        let participant = Candidate::start(self, path, ElectionKind::Latch, id, &options, true, None).await?;
        Ok(LeaderLatch { participant, id: id.into() })
    }
}

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

/// A latch's leadership changes ([`LeaderLatch::leadership_changes`]).
pub type LeadershipChanges = std::pin::Pin<Box<dyn Stream<Item = bool> + Send>>;

/// A started participant of a `LeaderLatch` election (from
/// [`Client::leader_latch`]). It stays queued, re-queued by core after a
/// lost term, until closed or dropped.
#[derive(Debug)]
pub struct LeaderLatch {
    participant: Arc<Candidate>,
    id: Arc<str>,
}

impl LeaderLatch {
    /// Its participant id (its node data).
    pub fn id(&self) -> &str {
        &self.id
    }

    /// Whether this latch leads now (Curator's `hasLeadership()`): under
    /// the standard policy ([`LockOptions::leadership`]) only while its
    /// status reads `Held`, under the session policy also while it reads
    /// `Suspended`.
    pub fn has_leadership(&self) -> bool {
        let p = &self.participant;
        if p.shared.peek(|s| s.closed.is_some()) {
            return false;
        }
        p.read(|e| e.term().map(|t| t.n)).flatten().is_some_and(|n| p.leads(n))
    }

    /// Completes once this latch leads (Curator's `await()`), as
    /// [`LeaderLatch::has_leadership`] counts it; at once if it does.
    ///
    /// # Errors
    ///
    /// [`Error::Misuse`] (`ElectionClosed`) once the latch is closed; the
    /// session's end, or the server's refusal of the latch's requests.
    ///
    /// # Cancel safety
    ///
    /// Cancel-safe: it only waits; the latch stays queued.
    pub async fn leadership(&self) -> Result<(), Error> {
        let p = &self.participant;
        let inner = &p.client().inner;
        // A failure since the last grant ends the wait: the latch will not
        // lead after it.
        let since = p.read(|e| e.terms()).unwrap_or(0);
        loop {
            let listener = p.shared.changed.listen();
            let ready = if p.shared.peek(|s| s.closed.is_some()) {
                Some(Err(Error::Misuse(ApiMisuse::ElectionClosed)))
            } else {
                match p.read(|e| match e.term() {
                    Some(t) if p.policy.leads_with(t.status) => Some(Ok(())),
                    _ => e.failure_since(since).cloned().map(Err),
                }) {
                    None => not_in_core(inner).map(Err),
                    Some(ready) => ready.map(|r| r.map_err(|f| failure_error(&f, inner))),
                }
            };
            if let Some(ready) = ready {
                return ready.map_err(|e| inner.named(e));
            }
            listener.await;
        }
    }

    /// Whether it leads, now and at every change (Curator's
    /// `LeaderLatchListener`: `true` is `isLeader()`, `false` `notLeader()`),
    /// as the events tell it: under the standard policy a dropped
    /// connection reports `false` (and `true` once the same session is back
    /// with the node), under the session policy only a lost term does.
    /// Ends once the latch is closed, after a last `false` with
    /// [`CloseMode::NotifyLeader`] if it led.
    pub fn leadership_changes(&self) -> LeadershipChanges {
        let p = &self.participant;
        let (shared, policy, handle) = (p.shared.clone(), p.policy, p.handle);
        // The loop's shared state, not the client: the stream must not keep
        // the session open.
        let core = p.client().inner.shared.clone();
        let leads_now = move |e: &CoreElection| e.term().is_some_and(|t| policy.leads_with(t.status));
        Box::pin(futures_lite::stream::unfold((shared, core, None::<bool>), move |(shared, core, last)| async move {
            loop {
                let listener = shared.changed.listen();
                let closed = shared.peek(|s| s.closed);
                let leading = core.read_recipe(handle, leads_now).unwrap_or(false);
                let next = match closed {
                    Some(CloseMode::NotifyLeader) if last == Some(true) => Some(false),
                    Some(_) => return None,
                    None if last != Some(leading) => Some(leading),
                    None => None,
                };
                if let Some(next) = next {
                    return Some((next, (shared, core, Some(next))));
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
    ///
    /// # Cancel safety
    ///
    /// Cancel-safe: it only reads.
    pub async fn leader(&self) -> Result<Option<String>, Error> {
        self.participant.client().leader(&self.participant.path, ElectionKind::Latch).await
    }

    /// The participants in queue order, the leader first (Curator's
    /// `getParticipants()`).
    ///
    /// # Errors
    ///
    /// The listing's failure.
    ///
    /// # Cancel safety
    ///
    /// Cancel-safe: it only reads.
    pub async fn participants(&self) -> Result<Vec<ElectionParticipant>, Error> {
        self.participant.client().election(&self.participant.path, ElectionKind::Latch).await
    }

    /// Leaves the election (Curator's `close(mode)`): the node's delete is
    /// queued (guaranteed) and the next participant leads.
    ///
    /// # Errors
    ///
    /// [`Error::ClientClosed`] once the client's event loop has ended (the
    /// session's end deletes the node then).
    ///
    /// # Cancel safety
    ///
    /// Cancel-safe: the latch is closed whether or not the future is
    /// awaited.
    pub async fn close(self, mode: CloseMode) -> Result<(), Error> {
        self.participant.shared.with(|s| s.closed = Some(mode));
        self.participant.command(ElectionOp::Close)?;
        self.participant.client().inner.flush().await
    }
}

impl Drop for LeaderLatch {
    fn drop(&mut self) {
        // Closed silently (unless closed already); the participant's drop
        // closes the machine.
        self.participant.shared.with(|s| {
            s.closed.get_or_insert(CloseMode::Silent);
        });
    }
}
