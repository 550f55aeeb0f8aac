//! Leader election, Curator-compatible (ARCHITECTURE §6.2): async handles over
//! core's [`Election`](CoreElection) machine, which owns every election rule
//! (the layout and id, re-queueing, the session gate, max hold). A
//! [`LeaderSelector`] takes terms of leadership in Curator's
//! `LeaderSelector` layout, each a [`Leadership`] with a hold's loss signals;
//! a [`LeaderLatch`] is Curator's `LeaderLatch`. This file only carries
//! commands to the machine and its events to the tasks.
//!
//! One registered machine is one participant (one node at a time on the
//! server). A one-off term ([`LeaderSelector::leadership`]) registers its
//! own participant and closes it when the term ends or the wait is dropped,
//! so a cancelled wait leaves nothing behind; [`LeaderSelector::run`] with
//! `auto_requeue` and a latch keep one participant that core re-queues.

use std::sync::Arc;
use std::time::Duration;

use zoolock_core::recipes::{
    Election as CoreElection, ElectionKind, ElectionParticipant, LeadershipPolicy, LockEvent, Term, TermFailure,
};
use zoolock_core::{ApiMisuse, Client as CoreClient, Handle, Instant, RecipeEvent, ZkPath};

use crate::acquire::{self, Signalled};
use crate::client::{Client, Inner, Owner, Registration};
use crate::error::Error;
use crate::hold::{self, Hold, QueuePosition};
use crate::latch::CloseMode;
use crate::metrics::{Gauge, Labels, Series};
use crate::options::LockOptions;
use crate::runtime::BoxFuture;
use crate::task::{Command, RecipeSink};
use crate::{HoldStatus, LossReason};

/// What a participant's handles and its event sink share. Core's
/// [`Election`](CoreElection) keeps the terms, the position and the
/// failures ([`Term`]); the handles read them there.
#[derive(Debug, Default)]
pub(crate) struct ElectionState {
    /// A latch closed by its owner, and how.
    pub(crate) closed: Option<CloseMode>,
    /// Whether the participant leads, as the metrics last said.
    leading: bool,
    /// The current term's hold gauge (and duration), while it lasts.
    held: Option<Gauge>,
}

pub(crate) type ElectionShared = Signalled<ElectionState>;

/// A participant's sink: its handles' shared state, with what the log and
/// the metrics name it by, and the policy its leading is judged under.
struct ElectionSink {
    shared: Arc<ElectionShared>,
    path: Arc<str>,
    path_label: bool,
    policy: LeadershipPolicy,
    /// Its metric handles, registered on first use.
    series: Series,
}

impl RecipeSink for ElectionSink {
    fn deliver(&self, event: RecipeEvent) {
        let RecipeEvent::Election(event) = event else {
            return tracing::trace!(path = %self.path, ?event, "not an election's event");
        };
        let labels = Labels::new("election", &self.path, self.path_label, &self.series);
        on_event(&self.shared, &self.path, &labels, self.policy, event);
    }
}

/// What a participant's handles ask of its machine.
#[derive(Debug, Clone, Copy)]
pub(crate) enum ElectionOp {
    /// Queue for leadership.
    Start,
    /// End term `n` if it is still the current one.
    Resign { term: u64 },
    /// Close the participant: leave the queue, end any term.
    Close,
}

/// A participant's command: `op`, to the machine behind `handle`; a
/// refusal (core records it) wakes `shared`'s waits.
pub(crate) struct ElectionCommand {
    handle: Handle<CoreElection>,
    shared: Arc<ElectionShared>,
    op: ElectionOp,
}

/// Runs a participant's command on the event loop; a refusal fails the
/// waits (core counts it among the participant's failures).
pub(crate) fn run(client: &mut CoreClient, now: Instant, command: ElectionCommand) {
    let ElectionCommand { handle, shared, op } = command;
    let done = client.with(now, handle, |e, now| match op {
        ElectionOp::Start => e.start(now),
        ElectionOp::Resign { term } => {
            let current = e.term().is_some_and(|t| t.n == term);
            if current && e.is_leader() { e.resign(now) } else { Ok(()) }
        }
        ElectionOp::Close => {
            e.close(now);
            Ok(())
        }
    });
    // A participant gone from core reads as ended: its waits see that.
    if !matches!(done, Ok(Ok(()))) {
        shared.notify();
    }
}

/// Carries one election event to the tasks (core's [`Election`](CoreElection)
/// has noted it in its terms: this wakes those who read them), then tells
/// the metrics whether the participant leads under `policy`. Every failure
/// ends the wait: core reports none it recovers from (a wait cut by a
/// session expiry is queued again on the renewed session without one).
fn on_event(shared: &ElectionShared, path: &str, labels: &Labels<'_>, policy: LeadershipPolicy, event: LockEvent) {
    // What the event does to the term the metrics follow.
    let change = match event {
        LockEvent::Acquired { node, token } => {
            tracing::debug!(%path, %node, token = token.0, "leadership gained");
            Some(TermChange::Began)
        }
        LockEvent::Released => {
            tracing::debug!(%path, "leadership given up");
            Some(TermChange::Ended)
        }
        status @ (LockEvent::Suspended | LockEvent::Reconnected | LockEvent::Lost) => {
            let Some(new) = status.hold_change().map(HoldStatus::after) else { return };
            match new {
                HoldStatus::Lost => tracing::warn!(%path, "leadership lost"),
                HoldStatus::Suspended => tracing::info!(%path, "leadership suspended: the connection dropped"),
                _ => tracing::info!(%path, "leadership confirmed after the reconnect"),
            }
            match new {
                HoldStatus::Lost => crate::metrics::lost(labels),
                HoldStatus::Suspended => crate::metrics::suspended(labels),
                _ => {}
            }
            Some(if new == HoldStatus::Lost { TermChange::Ended } else { TermChange::Now(new) })
        }
        LockEvent::Expired { node } => {
            tracing::warn!(%path, %node, "leadership held past its max hold: lost");
            None
        }
        LockEvent::Queued { .. } | LockEvent::RevocationRequested | LockEvent::LeaseLost { .. } => None,
        // Core keeps it as the failure the waits read (`failure_since`).
        end @ (LockEvent::TimedOut | LockEvent::Failed(_) | LockEvent::Refused(_)) => {
            tracing::debug!(%path, event = ?end, "election wait ended without a term");
            None
        }
        LockEvent::CleanupFailed { path: node, error } => {
            crate::metrics::cleanup_failed(labels);
            tracing::warn!(%path, %node, %error, "election node clean-up failed");
            None
        }
    };
    // Wakes the handles, whatever the event.
    shared.with(|s| {
        let status = match change {
            None => return,
            Some(TermChange::Began) => Some(HoldStatus::Held),
            Some(TermChange::Ended) => None,
            // A connection change under no term (a wait's) changes nothing.
            Some(TermChange::Now(_)) if s.held.is_none() => return,
            Some(TermChange::Now(status)) => Some(status),
        };
        let leads = status.is_some_and(|st| policy.leads_with(st));
        if leads != s.leading {
            s.leading = leads;
            crate::metrics::leading(labels, leads);
        }
        match (&s.held, status.is_some()) {
            (None, true) => s.held = Some(Gauge::held(labels)),
            (Some(_), false) => s.held = None,
            _ => {}
        }
    });
}

/// A participant's machine core does not have: not yet (the loop adds it
/// on its next turn; its waits wait), or no more (the loop has exited: the
/// error they end with).
pub(crate) fn not_in_core(inner: &Inner) -> Option<Error> {
    inner.shared.read(|s| s.finished).unwrap_or(true).then(|| inner.shared.closed())
}

/// The error a wait for a term ends with, for core's reason.
pub(crate) fn failure_error(failure: &TermFailure, inner: &Inner) -> Error {
    match failure {
        TermFailure::TimedOut => Error::TimedOut,
        TermFailure::Failed(e) => Error::from(e.clone()),
        TermFailure::Refused(e) => Error::Misuse(e.clone()),
        // A reason a later core adds: the wait has ended all the same.
        _ => inner.shared.closed(),
    }
}

/// What an event does to the term the metrics follow.
enum TermChange {
    Began,
    Now(HoldStatus),
    Ended,
}

/// A registered core election: one participant. Dropping the last handle
/// closes it (its node is deleted) and drops the machine.
pub(crate) struct Candidate {
    recipe: Owner<Registration>,
    pub(crate) handle: Handle<CoreElection>,
    pub(crate) shared: Arc<ElectionShared>,
    pub(crate) path: Arc<str>,
    /// Whether a suspended term still leads.
    pub(crate) policy: LeadershipPolicy,
    /// A selector's claim on its one participant, given back on drop.
    _claim: Option<Claim>,
}

/// A [`LeaderSelector`]'s claim to queue: one participant per selector
/// (and its clones) at a time, as Curator refuses a second `start()`.
#[derive(Debug)]
pub(crate) struct Claim(Arc<std::sync::atomic::AtomicBool>);

impl Claim {
    /// Takes `busy`, or fails with `AcquireInProgress` while another call
    /// holds it.
    fn take(busy: &Arc<std::sync::atomic::AtomicBool>) -> Result<Claim, Error> {
        use std::sync::atomic::Ordering;
        match busy.compare_exchange(false, true, Ordering::AcqRel, Ordering::Acquire) {
            Ok(_) => Ok(Claim(busy.clone())),
            Err(_) => Err(Error::Misuse(ApiMisuse::AcquireInProgress)),
        }
    }
}

impl Drop for Claim {
    fn drop(&mut self) {
        self.0.store(false, std::sync::atomic::Ordering::Release);
    }
}

impl std::fmt::Debug for Candidate {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.debug_struct("Candidate").field("path", &self.path).field("recipe", &self.recipe.id()).finish()
    }
}

impl Candidate {
    /// Registers a participant `id` of `kind` at `path`, started at once.
    pub(crate) async fn start(
        client: &Client,
        path: &str,
        kind: ElectionKind,
        id: &str,
        options: &LockOptions,
        requeue: bool,
        claim: Option<Claim>,
    ) -> Result<Arc<Candidate>, Error> {
        let base = ZkPath::new(path)?;
        let config = client.inner.lock_config_with(options);
        let machine = CoreElection::new(base, config, kind, id)
            .auto_requeue(requeue)
            .renewing(client.inner.options.renew_session)
            .leadership_policy(options.leadership);
        let shared = Arc::new(ElectionShared::default());
        let path: Arc<str> = path.into();
        let path_label = client.inner.options.metrics_path_label;
        let sink = ElectionSink {
            shared: shared.clone(),
            path: path.clone(),
            path_label,
            policy: options.leadership,
            series: Series::default(),
        };
        let reserved = client.reserve::<CoreElection>();
        let handle = reserved.handle();
        client.register(reserved, machine, Arc::new(sink))?;
        let participant = Arc::new(Candidate {
            recipe: Owner::new(client.clone(), Registration::new(handle.id())),
            handle,
            shared,
            path,
            policy: options.leadership,
            _claim: claim,
        });
        participant.command(ElectionOp::Start)?;
        Ok(participant)
    }

    pub(crate) fn client(&self) -> &Client {
        &self.recipe.client
    }

    /// Queues `op` on the event loop; a refusal fails the waits.
    pub(crate) fn command(&self, op: ElectionOp) -> Result<(), Error> {
        let command = ElectionCommand { handle: self.handle, shared: self.shared.clone(), op };
        self.client().inner.send(Command::Election(command))
    }

    /// Reads the participant's machine in core (`None` once it is gone).
    pub(crate) fn read<T>(&self, f: impl FnOnce(&CoreElection) -> T) -> Option<T> {
        self.client().inner.shared.read_recipe(self.handle, f)
    }

    /// Waits for a term after term `after` (whatever its status by then),
    /// at most `timeout`, reporting the queue position to `progress`.
    async fn next_term(
        &self,
        after: u64,
        timeout: Option<Duration>,
        progress: &mut (dyn FnMut(QueuePosition) + Send),
    ) -> Result<Term, Error> {
        let inner = &self.client().inner;
        let span = acquire::acquire_span(&self.path);
        let term = async {
            loop {
                let listener = self.shared.changed.listen();
                let closed = self.shared.peek(|s| s.closed.is_some());
                let ready = match self.read(|e| match e.term() {
                    Some(t) if t.n > after => Some(Ok(t.clone())),
                    _ => e.failure_since(after).cloned().map(Err),
                }) {
                    None => not_in_core(inner).map(Err),
                    Some(None) if closed => Some(Err(Error::Misuse(ApiMisuse::ElectionClosed))),
                    Some(ready) => ready.map(|r| r.map_err(|f| failure_error(&f, inner))),
                };
                if let Some(ready) = ready {
                    return ready.map_err(|e| inner.named(e));
                }
                listener.await;
            }
        };
        let runtime = self.client().inner.runtime.clone();
        let deadline = timeout.map(|d| runtime.now() + d);
        let bounded = futures_lite::future::or(term, async {
            let Some(at) = deadline else { return std::future::pending().await };
            runtime.sleep_until(at).await;
            // As a lock's: a free election is taken even past the deadline
            // (`-n`): time out only once a listing has queued us behind
            // someone.
            loop {
                let listener = self.shared.changed.listen();
                // Not in core yet: not queued either (one gone with the
                // loop ends the wait above).
                if self.read(|e| e.position().is_some()).unwrap_or(false) {
                    return Err(Error::TimedOut);
                }
                listener.await;
            }
        });
        let position =
            || self.read(|e| e.position()).flatten().map(|(position, total)| QueuePosition { position, total });
        let term = acquire::with_progress(&self.shared.changed, position, progress, bounded).await;
        if let Ok(t) = &term {
            span.record_grant(&t.node, t.token);
        }
        term
    }

    /// The status of term `n`, as core's events left it (`Lost` once it is
    /// over, or the participant is gone: the hold asking has not been
    /// released).
    fn term_status(&self, n: u64) -> HoldStatus {
        self.read(|e| e.term().filter(|t| t.n == n).map(|t| t.status)).flatten().unwrap_or(HoldStatus::Lost)
    }

    /// Whether term `n` still leads, judged now (the lease included).
    pub(crate) fn leads(&self, n: u64) -> bool {
        self.policy.leads_with(hold::effective(&self.client().inner, self.term_status(n)))
    }

    /// Ends term `n` if it is still the current one.
    fn resign(&self, n: u64) -> Result<(), Error> {
        self.command(ElectionOp::Resign { term: n })
    }
}

impl Drop for Candidate {
    fn drop(&mut self) {
        // Before the recipe handle's own drop: commands run in order, so the
        // machine is closed (its node deleted) before it is dropped.
        let _ = self.command(ElectionOp::Close);
    }
}

impl Client {
    /// A participant `id` of the election at `path`, in Curator's
    /// `LeaderSelector` layout: the id is its node data (Curator's `setId`),
    /// so Curator participants on the same path see it, and it sees them.
    /// Nothing is queued until [`LeaderSelector::leadership`] or
    /// [`LeaderSelector::run`].
    ///
    /// ```no_run
    /// # async fn example(client: &zoolock_tokio::Client) -> Result<(), zoolock_tokio::Error> {
    /// let selector = client.leader_selector("/app/leader", "worker-1").await?;
    /// let leadership = selector.leadership().await?; // waits until we lead
    /// // Lead beside this, polled first (`tokio::select!` with `biased;`, or
    /// // any race of two futures); stop leading when it completes.
    /// let status = leadership.lost().await;
    /// println!("leadership reads {status:?}: stop leading");
    /// leadership.release().await?; // the next participant leads
    /// # Ok(()) }
    /// ```
    ///
    /// # Errors
    ///
    /// [`Error::Path`] for an invalid path.
    ///
    /// # Cancel safety
    ///
    /// Cancel-safe: nothing is on the server until leadership is asked for.
    pub async fn leader_selector(&self, path: &str, id: &str) -> Result<LeaderSelector, Error> {
        self.election_participant(path, ElectionKind::Selector, id, LockOptions::default()).await
    }

    /// A participant `id` of the election at `path` in either layout, with
    /// lock settings ([`LockOptions::max_hold`] bounds each term; the node
    /// name and data are the layout's and the id). In the
    /// [`ElectionKind::Latch`] layout each term of [`LeaderSelector::leadership`]
    /// is one Curator `LeaderLatch` from `start()` to `close()` (`zoolock
    /// elect --latch` runs CMD in one); [`Client::leader_latch`] is the latch
    /// that stays queued.
    ///
    /// # Errors
    ///
    /// [`Error::Path`] for an invalid path.
    ///
    /// # Cancel safety
    ///
    /// As [`Client::leader_selector`].
    pub async fn election_participant(
        &self,
        path: &str,
        kind: ElectionKind,
        id: &str,
        options: LockOptions,
    ) -> Result<LeaderSelector, Error> {
        ZkPath::new(path)?;
        Ok(LeaderSelector {
            client: self.clone(),
            path: path.into(),
            id: id.into(),
            kind,
            options: Arc::new(options),
            auto_requeue: false,
            busy: Arc::default(),
        })
    }

    /// The id of the election's leader at `path` now (Curator's
    /// `getLeader().getId()`), `None` when nobody is queued. One listing
    /// and one read per participant, as [`Client::participants`].
    ///
    /// # Errors
    ///
    /// [`Error::Path`] for an invalid path; the listing's failure.
    ///
    /// # Cancel safety
    ///
    /// Cancel-safe: it only reads.
    pub async fn leader(&self, path: &str, kind: ElectionKind) -> Result<Option<String>, Error> {
        Ok(self.election(path, kind).await?.into_iter().find(|p| p.is_leader).map(|p| p.id))
    }

    /// The election's participants at `path` in queue order, the leader
    /// first (Curator's `getParticipants()`): a node that vanished while
    /// being read is left out, and the first one left leads.
    ///
    /// # Errors
    ///
    /// [`Error::Path`] for an invalid path; the listing's failure.
    ///
    /// # Cancel safety
    ///
    /// Cancel-safe: it only reads.
    pub async fn election(&self, path: &str, kind: ElectionKind) -> Result<Vec<ElectionParticipant>, Error> {
        let list = self.participants_by(kind.participants(ZkPath::new(path)?)).await?;
        Ok(zoolock_core::recipes::election_participants(&list))
    }
}

/// A participant of an election (from [`Client::leader_selector`] or
/// [`Client::election_participant`]): its path, id and settings. Each
/// [`LeaderSelector::leadership`] call queues as one participant with
/// this id; [`LeaderSelector::run`] keeps one participant for all its terms.
/// One at a time: a selector and its clones refuse a second call while a
/// participant is queued or leading (until its `Leadership` is dropped).
#[derive(Debug, Clone)]
pub struct LeaderSelector {
    client: Client,
    path: Arc<str>,
    id: Arc<str>,
    kind: ElectionKind,
    options: Arc<LockOptions>,
    auto_requeue: bool,
    /// Set while a participant of this selector (or a clone) is queued or
    /// leading.
    busy: Arc<std::sync::atomic::AtomicBool>,
}

impl LeaderSelector {
    /// Its participant id (its node data).
    pub fn id(&self) -> &str {
        &self.id
    }

    /// Re-queue after each term in [`LeaderSelector::run`] (Curator's
    /// `autoRequeue()`: core queues the participant again as soon as a term
    /// ends); off by default, as in Curator.
    #[must_use]
    pub fn auto_requeue(mut self, on: bool) -> Self {
        self.auto_requeue = on;
        self
    }

    /// Queues and waits until this participant leads. The leadership lasts
    /// until it is released or dropped (the next participant leads), or
    /// lost ([`Hold::lost`]).
    ///
    /// # Errors
    ///
    /// [`Error::Misuse`] (`AcquireInProgress`) while another call on this
    /// selector (or a clone) is queued or leading: one participant per
    /// selector, as Curator refuses a second `start()`; the session's end
    /// when it comes first ([`Error::Request`] with the reason, or
    /// [`Error::ClientClosed`]); the server's refusal of the participant's
    /// requests (say `NoAuth`).
    ///
    /// # Cancel safety
    ///
    /// Cancel-safe: dropping the future leaves the queue; the node, if made,
    /// is deleted.
    pub async fn leadership(&self) -> Result<Leadership, Error> {
        self.leadership_with_progress(None, |_| {}).await
    }

    /// [`LeaderSelector::leadership`], waiting at most `timeout`.
    ///
    /// # Errors
    ///
    /// [`Error::TimedOut`] after `timeout` (the participant has left the
    /// queue then); otherwise as [`LeaderSelector::leadership`].
    ///
    /// # Cancel safety
    ///
    /// As [`LeaderSelector::leadership`].
    pub async fn leadership_timeout(&self, timeout: Duration) -> Result<Leadership, Error> {
        self.leadership_with_progress(Some(timeout), |_| {}).await
    }

    /// [`LeaderSelector::leadership`], waiting at most `timeout` (`None`: as
    /// long as needed) and calling `progress` with the place in the queue
    /// whenever it changes (from the listings the wait makes anyway, as
    /// [`crate::Lock::acquire_with_progress`]).
    ///
    /// # Errors
    ///
    /// As [`LeaderSelector::leadership_timeout`].
    ///
    /// # Cancel safety
    ///
    /// As [`LeaderSelector::leadership`].
    pub async fn leadership_with_progress(
        &self,
        timeout: Option<Duration>,
        mut progress: impl FnMut(QueuePosition) + Send,
    ) -> Result<Leadership, Error> {
        let claim = Claim::take(&self.busy)?;
        let participant =
            Candidate::start(&self.client, &self.path, self.kind, &self.id, &self.options, false, Some(claim)).await?;
        let term = participant.next_term(0, timeout, &mut progress).await?;
        Ok(Leadership::new(participant, term))
    }

    /// Runs `lead` for each term (Curator's `takeLeadership`): waits for
    /// leadership and runs the future `lead` makes of it. The term ends
    /// when that future completes (dropping the [`Leadership`] in it gives
    /// leadership up), or as soon as it no longer leads under the
    /// selector's [`LockOptions::leadership`]: when it reads `Suspended` or
    /// `Lost` under the standard policy, `Lost` alone under the session
    /// policy (a suspended term goes on, its status reading `Suspended`
    /// until the connection is back). Then the future is dropped, as
    /// Curator's listener adapter cancels a term. Returns after one term, or never with
    /// [`LeaderSelector::auto_requeue`] (drop the future to stop).
    ///
    /// ```no_run
    /// # async fn example(client: &zoolock_tokio::Client) -> Result<(), zoolock_tokio::Error> {
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
    /// As [`LeaderSelector::leadership`] (a second call while one runs is
    /// refused the same way); a term's end is not an error.
    ///
    /// # Cancel safety
    ///
    /// Cancel-safe: dropping the future leaves the queue or ends the term
    /// under way (its node is deleted).
    pub async fn run<F, Fut>(&self, mut lead: F) -> Result<(), Error>
    where
        F: FnMut(Leadership) -> Fut,
        Fut: std::future::Future<Output = ()>,
    {
        let requeue = self.auto_requeue;
        let claim = Claim::take(&self.busy)?;
        let participant =
            Candidate::start(&self.client, &self.path, self.kind, &self.id, &self.options, requeue, Some(claim))
                .await?;
        let mut after = 0;
        loop {
            let term = participant.next_term(after, None, &mut |_| {}).await?;
            let n = term.n;
            after = n;
            let p = &participant;
            // Reads `Held` while the term leads under the policy.
            let leading = || if p.leads(n) { HoldStatus::Held } else { HoldStatus::Lost };
            let ended = hold::wait_lost(&p.client().inner, &p.shared.changed, leading);
            futures_lite::future::or(lead(Leadership::new(p.clone(), term)), async {
                let _ = ended.await;
            })
            .await;
            if !requeue {
                return Ok(());
            }
        }
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
        self.client.leader(&self.path, self.kind).await
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
        self.client.election(&self.path, self.kind).await
    }
}

/// What a [`Leadership`]'s [`Hold`] asks of its participant: term `n`.
#[derive(Debug)]
struct TermHold {
    participant: Arc<Candidate>,
    n: u64,
}

impl hold::Source for TermHold {
    fn client(&self) -> &Client {
        self.participant.client()
    }

    fn path(&self) -> &str {
        &self.participant.path
    }

    fn changed(&self) -> &event_listener::Event {
        &self.participant.shared.changed
    }

    fn reported(&self) -> HoldStatus {
        self.participant.term_status(self.n)
    }

    fn revoked(&self) -> bool {
        false
    }

    fn loss(&self) -> Option<LossReason> {
        let lost = |t: &&Term| t.n == self.n && t.status == HoldStatus::Lost;
        self.participant.read(|e| e.term().filter(lost).and_then(|t| t.loss)).flatten()
    }

    fn fence_nodes(&self) -> BoxFuture<Result<Option<Vec<String>>, Error>> {
        let live = |t: &&Term| t.n == self.n && t.status != HoldStatus::Lost;
        let node = self.participant.read(|e| e.term().filter(live).map(|t| vec![String::from(&*t.node)])).flatten();
        Box::pin(async move { Ok(node) })
    }

    /// Completes once the resignation is under way: the node's delete is
    /// queued (guaranteed).
    fn release(&self) -> BoxFuture<Result<(), Error>> {
        let resigned = self.participant.resign(self.n);
        let inner = self.participant.client().inner.clone();
        Box::pin(async move {
            resigned?;
            // Answered once the command has run.
            inner.flush().await
        })
    }

    fn release_in_background(&self) {
        let _ = self.participant.resign(self.n);
    }
}

/// A term of leadership: a [`Hold`] of the participant's election node
/// (node, fencing token, status, `lost()`, status changes, fenced writes,
/// release; reached through `Deref`), with the same loss signals as a
/// [`crate::Guard`]. `Lost` also after [`LockOptions::max_hold`]. A
/// re-queueing participant queues again once the term ends.
/// `Hold::from(leadership)` gives the plain hold.
///
/// Dropping it gives leadership up in the background;
/// [`Hold::release`] does it at once.
#[must_use = "leadership is given up as soon as it is dropped"]
#[derive(Debug)]
pub struct Leadership {
    hold: Hold,
}

impl std::ops::Deref for Leadership {
    type Target = Hold;

    fn deref(&self) -> &Hold {
        &self.hold
    }
}

impl AsRef<Hold> for Leadership {
    fn as_ref(&self) -> &Hold {
        &self.hold
    }
}

impl From<Leadership> for Hold {
    fn from(leadership: Leadership) -> Hold {
        leadership.hold
    }
}

impl Leadership {
    fn new(participant: Arc<Candidate>, term: Term) -> Leadership {
        let source = Arc::new(TermHold { participant, n: term.n });
        Leadership { hold: Hold::new(term.node, term.token, source, None) }
    }

    /// Ends the term (as [`Hold::release`]): the node's delete is queued
    /// (guaranteed) and the next participant leads. A lost or suspended
    /// term's release is not an error.
    ///
    /// # Errors
    ///
    /// [`Error::ClientClosed`] once the client's event loop has ended (the
    /// session's end deletes the node then).
    ///
    /// # Cancel safety
    ///
    /// Cancel-safe: the term ends whether or not the future is awaited.
    pub async fn release(self) -> Result<(), Error> {
        self.hold.release().await
    }
}
