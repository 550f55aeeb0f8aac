//! [`Semaphore`] and [`Lease`]: async handles over the counting semaphore.

use std::sync::{Arc, Mutex as StdMutex};
use std::time::Duration;

use futures_channel::oneshot;
use zoolock_core::recipes::Semaphore as CoreSemaphore;
use zoolock_core::{ApiMisuse, Client as CoreClient, FencingToken, Instant, RecipeEvent, RecipeId, ZkPath};

use crate::client::{Client, RecipeHandle};
use crate::error::Error;
use crate::task::Command;

type Grant = Result<Vec<(String, FencingToken)>, Error>;

#[derive(Debug, Default)]
struct State {
    want: usize,
    got: Vec<(String, FencingToken)>,
    /// The acquire under way: its ticket and reply.
    waiter: Option<(u64, oneshot::Sender<Grant>)>,
    next_ticket: u64,
}

/// A counting semaphore (Curator's `InterProcessSemaphoreV2` layout). One
/// handle runs one acquire at a time (a second concurrent one fails with
/// [`Error::Misuse`]); leases from earlier acquires stay held meanwhile.
#[derive(Clone)]
pub struct Semaphore {
    handle: Arc<RecipeHandle>,
    state: Arc<StdMutex<State>>,
}

impl std::fmt::Debug for Semaphore {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.debug_struct("Semaphore").field("recipe", &self.handle.id).finish()
    }
}

fn return_lease(client: &mut CoreClient, now: Instant, id: RecipeId, node: &str) -> Result<(), Error> {
    tracing::debug!(?id, %node, "returning lease");
    client.command(now, id, |s: &mut CoreSemaphore, now| s.return_lease(now, node))??;
    Ok(())
}

fn lock(state: &StdMutex<State>) -> std::sync::MutexGuard<'_, State> {
    state.lock().unwrap_or_else(|e| e.into_inner())
}

impl Semaphore {
    pub(crate) async fn new(client: Client, base: ZkPath, leases: usize) -> Result<Semaphore, Error> {
        let config = client.inner.lock_config();
        let state = Arc::new(StdMutex::new(State::default()));
        let sink_state = state.clone();
        let sink = Box::new(move |c: &mut CoreClient, now, id, event| {
            let mut s = lock(&sink_state);
            match event {
                RecipeEvent::Acquired { node, token } => {
                    s.got.push((node, token));
                    if s.got.len() >= s.want {
                        let got = std::mem::take(&mut s.got);
                        let delivered = match s.waiter.take() {
                            Some((_, w)) => w.send(Ok(got.clone())).is_ok(),
                            None => false,
                        };
                        drop(s);
                        if delivered {
                            tracing::debug!(?id, leases = got.len(), "leases granted");
                        } else {
                            tracing::debug!(?id, "leases granted to a dropped acquire: returning them");
                            for (node, _) in &got {
                                let _ = return_lease(c, now, id, node);
                            }
                        }
                    }
                }
                RecipeEvent::TimedOut => {
                    s.got.clear();
                    if let Some((_, w)) = s.waiter.take() {
                        let _ = w.send(Err(Error::TimedOut));
                    }
                }
                RecipeEvent::Failed(e) => {
                    s.got.clear();
                    if let Some((_, w)) = s.waiter.take() {
                        let _ = w.send(Err(e.into()));
                    }
                }
                RecipeEvent::Suspended | RecipeEvent::Lost => tracing::warn!(?id, ?event, "semaphore leases"),
                other => tracing::trace!(?other, "semaphore event"),
            }
        });
        let id = client.add_recipe(Box::new(CoreSemaphore::new(base, leases, config)), sink).await?;
        Ok(Semaphore { handle: Arc::new(RecipeHandle { client, id }), state })
    }

    /// Completes once this semaphore owes the server nothing: no acquire
    /// under way, no lease held through it, and every returned lease's
    /// delete applied by the server. Dropping a [`Lease`] and then awaiting
    /// this is a return acknowledged by the server, on the delete's own
    /// reply. Fails with the session's error if the session ends first.
    pub async fn settled(&self) -> Result<(), Error> {
        crate::task::settled(&self.handle.client, self.handle.id).await
    }

    /// Takes `qty` leases, waiting as long as needed.
    pub async fn acquire(&self, qty: usize) -> Result<Vec<Lease>, Error> {
        self.acquire_inner(qty, None).await
    }

    /// Takes `qty` leases, waiting at most `timeout` for all of them.
    ///
    /// ```no_run
    /// # async fn example(client: &zoolock_driver::Client) -> Result<(), zoolock_driver::Error> {
    /// use std::time::Duration;
    /// let pool = client.semaphore("/app/pool", 5).await?;
    /// let leases = pool.acquire_timeout(2, Duration::from_secs(1)).await?;
    /// drop(leases); // returned in the background, like `release` without waiting
    /// # Ok(()) }
    /// ```
    pub async fn acquire_timeout(&self, qty: usize, timeout: Duration) -> Result<Vec<Lease>, Error> {
        self.acquire_inner(qty, Some(timeout)).await
    }

    async fn acquire_inner(&self, qty: usize, timeout: Option<Duration>) -> Result<Vec<Lease>, Error> {
        let (tx, rx) = oneshot::channel();
        let ticket = {
            let mut s = lock(&self.state);
            s.next_ticket += 1;
            s.next_ticket
        };
        let (state, id) = (self.state.clone(), self.handle.id);
        let mut pending = PendingLeases { sem: self.clone(), ticket, rx: Some(rx) };
        let started = self
            .handle
            .client
            .inner
            .run(move |c, now| {
                let deadline = timeout.map(|d| now + d);
                let started = c.command(now, id, |sem: &mut CoreSemaphore, now| sem.acquire(now, qty, deadline));
                let started = started.and_then(|r| r);
                if started.is_ok() {
                    // Events come after this job, so the reply is in place in time.
                    let mut s = lock(&state);
                    s.want = qty;
                    s.got.clear();
                    s.waiter = Some((ticket, tx));
                }
                started
            })
            .await;
        match started {
            Ok(Ok(())) => {}
            Ok(Err(e)) => {
                pending.rx = None;
                return Err(e.into());
            }
            Err(e) => {
                pending.rx = None;
                return Err(e);
            }
        }
        let grant = match pending.rx.as_mut() {
            Some(rx) => rx.await.map_err(|_| Error::ClientClosed),
            None => Err(Error::ClientClosed),
        };
        pending.rx = None;
        let leases = grant??;
        Ok(leases.into_iter().map(|(node, token)| Lease { sem: self.clone(), node, token, returned: false }).collect())
    }
}

/// An acquire in flight. Dropping it cancels the acquire if it is still
/// under way, and returns leases granted to it that it never handed out.
struct PendingLeases {
    sem: Semaphore,
    ticket: u64,
    rx: Option<oneshot::Receiver<Grant>>,
}

impl Drop for PendingLeases {
    fn drop(&mut self) {
        let Some(mut rx) = self.rx.take() else { return };
        rx.close();
        let granted = match rx.try_recv() {
            Ok(Some(Ok(leases))) => leases,
            _ => Vec::new(),
        };
        let (state, id, ticket) = (self.sem.state.clone(), self.sem.handle.id, self.ticket);
        tracing::trace!(?id, ticket, granted = granted.len(), "semaphore acquire dropped");
        let _ = self.sem.handle.client.inner.send(Command::Run(Box::new(move |c, now| {
            for (node, _) in &granted {
                let _ = return_lease(c, now, id, node);
            }
            let mine = {
                let mut s = lock(&state);
                if s.waiter.as_ref().is_some_and(|(t, _)| *t == ticket) {
                    s.waiter = None;
                    s.got.clear();
                    true
                } else {
                    false
                }
            };
            if mine {
                let _ = c.command(now, id, |sem: &mut CoreSemaphore, now| sem.cancel(now));
            }
        })));
    }
}

/// One held lease. Dropping it returns it in the background.
#[derive(Debug)]
pub struct Lease {
    sem: Semaphore,
    node: String,
    token: FencingToken,
    returned: bool,
}

impl Lease {
    /// The lease node.
    pub fn node(&self) -> &str {
        &self.node
    }

    /// The lease node's czxid.
    pub fn fencing_token(&self) -> FencingToken {
        self.token
    }

    /// Returns the lease: its node is deleted, a guaranteed delete that is
    /// retried across reconnects. Completes once the return is under way
    /// (unlike [`crate::Guard::release`], it does not wait for the delete's
    /// reply in the Curator plan). Returning a lease whose session has ended
    /// is not an error: there is nothing left to return.
    pub async fn release(mut self) -> Result<(), Error> {
        self.returned = true;
        let (id, node) = (self.sem.handle.id, self.node.clone());
        match self.sem.handle.client.inner.run(move |c, now| return_lease(c, now, id, &node)).await? {
            Err(Error::Misuse(ApiMisuse::InvalidState(_))) => Ok(()),
            other => other,
        }
    }
}

impl Drop for Lease {
    fn drop(&mut self) {
        if self.returned {
            return;
        }
        let (id, node) = (self.sem.handle.id, self.node.clone());
        let _ = self.sem.handle.client.inner.send(Command::Run(Box::new(move |c, now| {
            let _ = return_lease(c, now, id, &node);
        })));
    }
}
