//! [`Semaphore`] and [`Lease`]: async handles over the counting semaphore.

use std::sync::{Arc, Mutex as StdMutex};
use std::time::Duration;

use futures_channel::oneshot;
use zoolock_core::recipes::Semaphore as CoreSemaphore;
use zoolock_core::{Client as CoreClient, FencingToken, Instant, RecipeEvent, RecipeId, ZkPath};

use crate::client::Client;
use crate::error::Error;
use crate::task::Command;

type Grant = Result<Vec<(String, FencingToken)>, Error>;

#[derive(Debug, Default)]
struct State {
    want: usize,
    got: Vec<(String, FencingToken)>,
    waiter: Option<oneshot::Sender<Grant>>,
}

struct Handle {
    client: Client,
    id: RecipeId,
}

impl Drop for Handle {
    fn drop(&mut self) {
        let _ = self.client.inner.send(Command::DropRecipe(self.id));
    }
}

/// A counting semaphore (Curator's `InterProcessSemaphoreV2` layout).
#[derive(Clone)]
pub struct Semaphore {
    handle: Arc<Handle>,
    state: Arc<StdMutex<State>>,
}

impl std::fmt::Debug for Semaphore {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.debug_struct("Semaphore").field("recipe", &self.handle.id).finish()
    }
}

fn return_lease(client: &mut CoreClient, now: Instant, id: RecipeId, node: &str) {
    let _ = client.command(now, id, |s: &mut CoreSemaphore, now| s.return_lease(now, node));
}

impl Semaphore {
    pub(crate) async fn new(client: Client, base: ZkPath, leases: usize) -> Result<Semaphore, Error> {
        let config = client.inner.lock_config();
        let state = Arc::new(StdMutex::new(State::default()));
        let sink_state = state.clone();
        let sink = Box::new(move |c: &mut CoreClient, now, id, event| {
            let mut s = sink_state.lock().unwrap_or_else(|e| e.into_inner());
            match event {
                RecipeEvent::Acquired { node, token } => {
                    s.got.push((node, token));
                    if s.got.len() >= s.want {
                        let got = std::mem::take(&mut s.got);
                        let delivered = match s.waiter.take() {
                            Some(w) => w.send(Ok(got.clone())).is_ok(),
                            None => false,
                        };
                        if !delivered {
                            for (node, _) in &got {
                                return_lease(c, now, id, node);
                            }
                        }
                    }
                }
                RecipeEvent::TimedOut => {
                    s.got.clear();
                    if let Some(w) = s.waiter.take() {
                        let _ = w.send(Err(Error::TimedOut));
                    }
                }
                RecipeEvent::Failed(e) => {
                    s.got.clear();
                    if let Some(w) = s.waiter.take() {
                        let _ = w.send(Err(e.into()));
                    }
                }
                other => tracing::trace!(?other, "semaphore event"),
            }
        });
        let id = client.add_recipe(Box::new(CoreSemaphore::new(base, leases, config)), sink).await?;
        Ok(Semaphore { handle: Arc::new(Handle { client, id }), state })
    }

    /// Takes `qty` leases, waiting as long as needed.
    pub async fn acquire(&self, qty: usize) -> Result<Vec<Lease>, Error> {
        self.acquire_inner(qty, None).await
    }

    /// Takes `qty` leases, waiting at most `timeout` for all of them.
    pub async fn acquire_timeout(&self, qty: usize, timeout: Duration) -> Result<Vec<Lease>, Error> {
        self.acquire_inner(qty, Some(timeout)).await
    }

    async fn acquire_inner(&self, qty: usize, timeout: Option<Duration>) -> Result<Vec<Lease>, Error> {
        let (tx, mut rx) = oneshot::channel();
        let (state, id) = (self.state.clone(), self.handle.id);
        let client = &self.handle.client;
        let mut cancel_on_drop = CancelOnDrop { sem: self.clone(), armed: true };
        client
            .inner
            .run(move |c, now| {
                {
                    let mut s = state.lock().unwrap_or_else(|e| e.into_inner());
                    s.want = qty;
                    s.got.clear();
                    s.waiter = Some(tx);
                }
                let started =
                    c.command(now, id, |sem: &mut CoreSemaphore, now| sem.acquire(now, qty, timeout.map(|d| now + d)));
                let started = started.and_then(|r| r);
                if started.is_err() {
                    state.lock().unwrap_or_else(|e| e.into_inner()).waiter = None;
                }
                started
            })
            .await??;
        let grant = (&mut rx).await.map_err(|_| Error::ClientClosed)?;
        cancel_on_drop.armed = false;
        let leases = grant?;
        Ok(leases.into_iter().map(|(node, token)| Lease { sem: self.clone(), node, token, returned: false }).collect())
    }
}

/// Cancels an acquire whose future was dropped; the sink returns leases
/// granted to nobody.
struct CancelOnDrop {
    sem: Semaphore,
    armed: bool,
}

impl Drop for CancelOnDrop {
    fn drop(&mut self) {
        if !self.armed {
            return;
        }
        if let Ok(mut s) = self.sem.state.lock() {
            s.waiter = None;
        }
        let id = self.sem.handle.id;
        let _ = self.sem.handle.client.inner.send(Command::Run(Box::new(move |c, now| {
            let _ = c.command(now, id, |sem: &mut CoreSemaphore, now| sem.cancel(now));
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

    /// Returns the lease (deletes its node).
    pub async fn release(mut self) -> Result<(), Error> {
        self.returned = true;
        let (id, node) = (self.sem.handle.id, self.node.clone());
        self.sem.handle.client.inner.run(move |c, now| return_lease(c, now, id, &node)).await
    }
}

impl Drop for Lease {
    fn drop(&mut self) {
        if self.returned {
            return;
        }
        let (id, node) = (self.sem.handle.id, self.node.clone());
        let _ =
            self.sem.handle.client.inner.send(Command::Run(Box::new(move |c, now| return_lease(c, now, id, &node))));
    }
}
