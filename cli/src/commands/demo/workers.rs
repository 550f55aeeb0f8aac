//! The workers: each has its own client (its own session) and loops
//! acquire → simulated work → release until told to stop.

use std::sync::Arc;
use std::time::{Duration, Instant};

use tokio::sync::watch;
use zoolock_tokio::{Client, Error, Hold, HoldStatus, Lock, Semaphore};

use super::board::{Board, Role, WorkerId};
use super::tree::Tree;

/// A worker's handle on its recipe.
#[derive(Debug)]
pub(crate) enum Handle {
    /// A mutex, or one half of a read-write lock.
    Lock(Lock),
    /// A semaphore; each acquire takes one lease.
    Semaphore(Semaphore),
}

impl Handle {
    /// Opens `role`'s recipe on `client`.
    pub(crate) async fn open(client: &Client, tree: &Tree, role: Role, leases: usize) -> Result<Handle, Error> {
        let path = tree.path(role.recipe());
        Ok(match role {
            Role::Mutex => Handle::Lock(client.mutex(&path).await?),
            Role::Reader => Handle::Lock(client.read_write_lock(&path).await?.read),
            Role::Writer => Handle::Lock(client.read_write_lock(&path).await?.write),
            Role::Lease => Handle::Semaphore(client.semaphore(&path, leases).await?),
        })
    }

    async fn acquire(&self) -> Result<Hold, Error> {
        match self {
            Handle::Lock(lock) => lock.acquire().await.map(Hold::from),
            Handle::Semaphore(sem) => sem.acquire_one().await.map(Hold::from),
        }
    }
}

/// Completes once `stop` says true (or its sender is gone).
pub(crate) async fn stopped(stop: &mut watch::Receiver<bool>) {
    while !*stop.borrow_and_update() {
        if stop.changed().await.is_err() {
            return;
        }
    }
}

/// Runs one worker until `stop`. A wait in progress is abandoned at the
/// stop (dropping an acquire leaves no node); a hold in progress finishes
/// its work and releases first. A failure is reported and ends the worker.
pub(crate) async fn run(
    id: WorkerId,
    handle: Handle,
    board: Arc<Board>,
    mut stop: watch::Receiver<bool>,
    hold: Duration,
) {
    loop {
        if *stop.borrow() {
            return;
        }
        let asked = Instant::now();
        let held = tokio::select! {
            biased;
            () = stopped(&mut stop) => return,
            held = handle.acquire() => held,
        };
        let held = match held {
            Ok(held) => held,
            Err(e) => return board.failed(&id, format!("acquire: {e}")),
        };
        let token = held.fencing_token().0;
        board.granted(&id, asked.elapsed(), token, held.node());
        // The critical section: an exclusive holder writes with its token,
        // but only while the hold is certain, as a real holder should.
        if id.role.exclusive() && held.status() == HoldStatus::Held {
            board.write(id.role.recipe(), token);
        }
        tokio::time::sleep(hold).await;
        board.releasing(&id);
        if let Err(e) = held.release().await {
            return board.failed(&id, format!("release: {e}"));
        }
    }
}
