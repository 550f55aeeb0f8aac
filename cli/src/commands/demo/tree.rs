//! The run's nodes: the lock paths under one base path, created before the
//! workers start, then checked for leftovers and removed afterwards.
//!
//! The parents are created as persistent nodes up front rather than left
//! to the recipes (which would create containers): a container can be
//! reaped whenever it is momentarily empty, which restarts its sequence
//! counter and would make the FIFO check compare numbers from two
//! counters; and a real server reaps containers only every minute, so the
//! demo removes its own parents to leave nothing behind.

use std::time::{SystemTime, UNIX_EPOCH};

use zoolock_tokio::RequestError;
use zoolock_tokio::sans_io::recipes::{SEMAPHORE_LEASES, SEMAPHORE_LOCKS};
use zoolock_tokio::{Client, Error};
use zoolock_tokio::{CreateMode, ErrorCode};

use zoolock_tokio::LockKind;

/// Where every demo run puts its base path.
pub(crate) const ROOT: &str = "/zoolock-demo";

/// The paths of one run.
#[derive(Debug, Clone)]
pub(crate) struct Tree {
    /// `/zoolock-demo/<pid>-<nanos>`: unique per run, so runs never meet.
    pub(crate) base: String,
}

impl Tree {
    /// A fresh base path for this run.
    pub(crate) fn fresh() -> Tree {
        let nanos = SystemTime::now().duration_since(UNIX_EPOCH).map(|d| d.as_nanos()).unwrap_or(0);
        Tree { base: format!("{ROOT}/{}-{nanos}", std::process::id()) }
    }

    /// The lock path of a recipe.
    pub(crate) fn path(&self, recipe: LockKind) -> String {
        format!("{}/{}", self.base, recipe.label())
    }

    /// Where a recipe's waiters queue: the lock path, or for the semaphore
    /// its internal mutex (`locks/`), where everyone waiting for a lease
    /// queues (only the mutex holder waits on `leases/` itself).
    pub(crate) fn queue_path(&self, recipe: LockKind) -> String {
        match recipe {
            LockKind::Semaphore => format!("{}/{SEMAPHORE_LOCKS}", self.path(recipe)),
            _ => self.path(recipe),
        }
    }

    /// Every parent node, parents before children.
    fn parents(&self) -> Vec<String> {
        let sem = self.path(LockKind::Semaphore);
        vec![
            self.base.clone(),
            self.path(LockKind::Mutex),
            self.path(LockKind::ReadWriteLock),
            sem.clone(),
            format!("{sem}/{SEMAPHORE_LOCKS}"),
            format!("{sem}/{SEMAPHORE_LEASES}"),
        ]
    }

    /// Creates the root (if missing), the base path and the lock paths.
    pub(crate) async fn create(&self, client: &Client) -> Result<(), Error> {
        for path in std::iter::once(ROOT.to_owned()).chain(self.parents()) {
            match client.create(&path, b"", CreateMode::PERSISTENT).await {
                Ok(_) => {}
                Err(e) if is(&e, ErrorCode::NODE_EXISTS) => {}
                Err(e) => return Err(e),
            }
        }
        Ok(())
    }

    /// Every node under the base path other than the parents this run
    /// created: lock and lease nodes that outlived their sessions.
    pub(crate) async fn leftovers(&self, client: &Client) -> Result<Vec<String>, Error> {
        let parents = self.parents();
        let mut found = Vec::new();
        let mut todo = vec![self.base.clone()];
        while let Some(path) = todo.pop() {
            let children = match client.get_children(&path).await {
                Ok((children, _)) => children,
                Err(e) if is(&e, ErrorCode::NO_NODE) => continue,
                Err(e) => return Err(e),
            };
            for child in children {
                let child = format!("{path}/{child}");
                if !parents.contains(&child) {
                    found.push(child.clone());
                }
                todo.push(child);
            }
        }
        found.sort();
        Ok(found)
    }

    /// Deletes the parents, children first, and the root if no other run
    /// uses it. A parent that still has children stays (and shows up as
    /// leftovers); one already gone is fine.
    pub(crate) async fn remove(&self, client: &Client) -> Result<(), Error> {
        for path in self.parents().iter().rev().chain(std::iter::once(&ROOT.to_owned())) {
            match client.delete(path, None).await {
                Ok(()) => {}
                Err(e) if is(&e, ErrorCode::NO_NODE) || is(&e, ErrorCode::NOT_EMPTY) => {}
                Err(e) => return Err(e),
            }
        }
        Ok(())
    }
}

/// Whether `e` is the server's answer `code`.
fn is(e: &Error, code: ErrorCode) -> bool {
    matches!(e, Error::Request(RequestError::Server(c)) if *c == code)
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn paths() {
        let tree = Tree { base: "/zoolock-demo/1-2".into() };
        assert_eq!(tree.path(LockKind::Mutex), "/zoolock-demo/1-2/mutex");
        assert_eq!(tree.queue_path(LockKind::ReadWriteLock), "/zoolock-demo/1-2/rwlock");
        assert_eq!(tree.queue_path(LockKind::Semaphore), "/zoolock-demo/1-2/semaphore/locks");
        assert!(Tree::fresh().base.starts_with("/zoolock-demo/"));
    }
}
