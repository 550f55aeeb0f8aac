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

use zoolock_core::recipes::{Election as CoreElection, ElectionKind, ElectionParticipant, LeadershipPolicy};
use zoolock_core::{ApiMisuse, Client as CoreClient, FencingToken, Handle, Instant, RecipeEvent, ZkPath};

use crate::acquire::{self, Signalled};
use crate::client::{Client, Owner, Registration};
use crate::error::Error;
use crate::hold::{self, Hold, QueuePosition};
use crate::latch::CloseMode;
use crate::metrics::{Gauge, Labels, Series};
use crate::options::LockOptions;
use crate::runtime::BoxFuture;
use crate::task::{Command, RecipeSink};
use crate::{HoldStatus, LossReason};

/// One term as the tasks see it.
#[derive(Debug, Clone)]
pub(crate) struct TermState {
    /// Its number: terms of one participant count up from 1.
    pub(crate) n: u64,
    node: String,
    token: FencingToken,
    pub(crate) status: HoldStatus,
    /// Why it was (or is being) lost: core's `Expired` comes before `Lost`.
    loss: Option<LossReason>,
}

/// What a participant's handles and its event sink share.
#[derive(Debug, Default)]
pub(crate) struct ElectionState {
    /// The number of the last term granted.
    granted: u64,
    /// The current term (kept once lost, until the next one).
    pub(crate) term: Option<TermState>,
    /// Where the wait stands in the queue.
    position: Option<QueuePosition>,
    /// Failures so far, and the last one.
    pub(crate) failures: u64,
    pub(crate) failure: Option<Error>,
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

/// A participant's command: `op`, to the machine behind `handle`, whose
/// refusal `shared`'s waits fail with.
pub(crate) struct ElectionCommand {
    handle: Handle<CoreElection>,
    shared: Arc<ElectionShared>,
    op: ElectionOp,
}

/// Runs a participant's command on the event loop; a refusal fails the
/// waits.
pub(crate) fn run(client: &mut CoreClient, now: Instant, command: ElectionCommand) {
    let ElectionCommand { handle, shared, op } = command;
    let done = client.with(now, handle, |e, now| match op {
        ElectionOp::Start => e.start(now),
        ElectionOp::Resign { term } => {
            let current = shared.peek(|s| s.term.as_ref().is_some_and(|t| t.n == term));
            if current && e.is_leader() { e.resign(now) } else { Ok(()) }
        }
        ElectionOp::Close => {
            e.close(now);
            Ok(())
        }
    });
    let refused = match done {
        Ok(Ok(())) => return,
        Ok(Err(e)) | Err(e) => e,
    };
    shared.with(|s| {
        s.failures += 1;
        s.failure = Some(Error::Misuse(refused));
    });
}

/// Carries one election event to the tasks, then tells the metrics whether
/// the participant leads under `policy`. Every failure ends the wait: core
/// reports none it recovers from (a wait cut by a session expiry is queued
/// again on the renewed session without one).
fn on_event(shared: &ElectionShared, path: &str, labels: &Labels<'_>, policy: LeadershipPolicy, event: RecipeEvent) {
    carry(shared, path, labels, event);
    shared.with(|s| {
        let leads = s.term.as_ref().is_some_and(|t| leads(policy, t.status));
        if leads != s.leading {
            s.leading = leads;
            crate::metrics::leading(labels, leads);
        }
        let ended = s.term.as_ref().is_none_or(|t| t.status == HoldStatus::Lost);
        match (&s.held, ended) {
            (None, false) => s.held = Some(Gauge::held(labels)),
            (Some(_), true) => s.held = None,
            _ => {}
        }
    });
}

/// [`on_event`]'s first part: the event into the shared state.
fn carry(shared: &ElectionShared, path: &str, labels: &Labels<'_>, event: RecipeEvent) {
    match event {
        RecipeEvent::Acquired { node, token } => {
            tracing::debug!(%path, %node, token = token.0, "leadership gained");
            shared.with(|s| {
                s.granted += 1;
                s.term = Some(TermState { n: s.granted, node, token, status: HoldStatus::Held, loss: None });
                s.position = None;
            });
        }
        RecipeEvent::Released => {
            tracing::debug!(%path, "leadership given up");
            shared.with(|s| s.term = None);
        }
        status @ (RecipeEvent::Suspended | RecipeEvent::Reconnected | RecipeEvent::Lost) => {
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
            shared.with(|s| {
                if let Some(t) = s.term.as_mut() {
                    t.status = new;
                    if new == HoldStatus::Lost {
                        t.loss.get_or_insert(LossReason::SessionOrNode);
                    }
                }
            });
        }
        RecipeEvent::Expired { node } => {
            tracing::warn!(%path, %node, "leadership held past its max hold: lost");
            shared.with(|s| {
                if let Some(t) = s.term.as_mut() {
                    t.loss = Some(LossReason::MaxHold);
                }
            });
        }
        RecipeEvent::Queued { position, total } => {
            shared.with(|s| s.position = Some(QueuePosition { position, total }));
        }
        end @ (RecipeEvent::Failed(_) | RecipeEvent::Refused(_) | RecipeEvent::TimedOut) => {
            let Some(error) = acquire::acquire_end(&end) else { return };
            tracing::debug!(%path, %error, "election failed");
            shared.with(|s| {
                s.failures += 1;
                s.failure = Some(error);
            });
        }
        other => tracing::trace!(%path, ?other, "election event"),
    }
}

/// A registered core election: one participant. Dropping the last handle
/// closes it (its node is deleted) and drops the machine.
pub(crate) struct Candidate {
    recipe: Owner<Registration>,
    handle: Handle<CoreElection>,
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

    /// Waits for a term after term `after` (whatever its status by then),
    /// at most `timeout`, reporting the queue position to `progress`.
    async fn next_term(
        &self,
        after: u64,
        timeout: Option<Duration>,
        progress: &mut (dyn FnMut(QueuePosition) + Send),
    ) -> Result<TermState, Error> {
        let failures = self.shared.peek(|s| s.failures);
        let inner = &self.client().inner;
        let span = acquire::acquire_span(&self.path);
        let term = async {
            loop {
                let listener = self.shared.changed.listen();
                let ready = self.shared.peek(|s| match &s.term {
                    Some(t) if t.n > after => Some(Ok(t.clone())),
                    _ if s.failures > failures => Some(Err(s.failure.clone().unwrap_or_else(|| inner.shared.closed()))),
                    _ if s.closed.is_some() => Some(Err(Error::Misuse(ApiMisuse::ElectionClosed))),
                    _ => None,
                });
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
                if self.shared.peek(|s| s.position.is_some()) {
                    return Err(Error::TimedOut);
                }
                listener.await;
            }
        });
        let position = || self.shared.peek(|s| s.position);
        let term = acquire::with_progress(&self.shared.changed, position, progress, bounded).await;
        if let Ok(t) = &term {
            span.record_grant(&t.node, t.token);
        }
        term
    }

    /// The status the loop reported for term `n` (`Lost` once it is
    /// over: the hold asking has not been released).
    fn term_status(&self, n: u64) -> HoldStatus {
        self.shared.peek(|s| match &s.term {
            Some(t) if t.n == n => t.status,
            _ => HoldStatus::Lost,
        })
    }

    /// Whether term `n` still leads, judged now (the lease included).
    pub(crate) fn leads(&self, n: u64) -> bool {
        leads(self.policy, hold::effective(&self.client().inner, self.term_status(n)))
    }

    /// Ends term `n` if it is still the current one.
    fn resign(&self, n: u64) -> Result<(), Error> {
        self.command(ElectionOp::Resign { term: n })
    }
}

/// Whether a term with `status` leads under `policy` (core's rule,
/// [`LeadershipPolicy::leads`]): a suspended one only under the session
/// policy, an ended one never.
pub(crate) fn leads(policy: LeadershipPolicy, status: HoldStatus) -> bool {
    match status {
        HoldStatus::Held => true,
        HoldStatus::Suspended => policy.leads(true),
        // Lost, not held, and any status a later core adds: no lead.
        _ => false,
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
        let p = &self.participant;
        p.shared
            .peek(|s| s.term.as_ref().filter(|t| t.n == self.n && t.status == HoldStatus::Lost).and_then(|t| t.loss))
    }

    fn fence_nodes(&self) -> BoxFuture<Result<Option<Vec<String>>, Error>> {
        let node = self.participant.shared.peek(|s| {
            s.term.as_ref().filter(|t| t.n == self.n && t.status != HoldStatus::Lost).map(|t| vec![t.node.clone()])
        });
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
    fn new(participant: Arc<Candidate>, term: TermState) -> Leadership {
        let source = Arc::new(TermHold { participant, n: term.n });
        Leadership { hold: Hold::new(term.node.into(), term.token, source, None) }
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
