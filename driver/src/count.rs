//! [`SharedCount`]: an async handle over core's
//! [`SharedCount`](zoolock_core::recipes::SharedCount), Curator's
//! `SharedCount` (a 4-byte big-endian int in a node, versioned
//! compare-and-set, watched). It also sizes a semaphore
//! ([`crate::Client::semaphore_sized_by`]).

use std::collections::VecDeque;
use std::sync::Arc;

use futures_channel::oneshot;
use futures_lite::Stream;
use zoolock_core::recipes::SharedCount as CoreCount;
use zoolock_core::{Client as CoreClient, Handle, Instant, RecipeEvent, ZkPath};

use crate::acquire::Signalled;
use crate::client::{Client, Owner, Registration};
use crate::error::Error;
use crate::task::{Command, RecipeSink};

/// A count's value and the node version it was read at (the version to
/// give [`SharedCount::try_set`]).
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
#[non_exhaustive]
pub struct VersionedCount {
    /// The value.
    pub value: i32,
    /// The count node's data version.
    pub version: i32,
}

#[derive(Debug, Default)]
struct State {
    value: Option<VersionedCount>,
    /// The node held something else than a 4-byte int (its length).
    malformed: Option<usize>,
    /// Writes waiting for their outcome, in call order.
    writes: VecDeque<oneshot::Sender<Result<bool, Error>>>,
}

/// A shared count (Curator's `SharedCount`), kept up to date by a watch.
/// Clones share one watch.
#[derive(Clone)]
pub struct SharedCount {
    handle: Owner<Registration>,
    typed: Handle<CoreCount>,
    shared: Arc<Signalled<State>>,
    path: Arc<str>,
}

impl std::fmt::Debug for SharedCount {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.debug_struct("SharedCount").field("path", &self.path).field("value", &self.get()).finish()
    }
}

/// A count's sink: its handles' shared state, and its path for the log.
struct CountSink {
    shared: Arc<Signalled<State>>,
    path: Arc<str>,
}

impl RecipeSink for CountSink {
    fn deliver(&self, event: RecipeEvent) {
        on_event(&self.shared, &self.path, event);
    }
}

/// A write a count's handles ask of the event loop ([`run`]).
#[derive(Debug, Clone, Copy)]
pub(crate) enum CountWrite {
    /// Write `n` whatever the version.
    Set(i32),
    /// Write `n` if the node is still at `version`.
    TrySet { version: i32, n: i32 },
}

/// A count's command: the write, to the count behind `handle`, whose
/// outcome `shared` waits for (the waiter is dropped if the count is gone).
pub(crate) struct CountCommand {
    handle: Handle<CoreCount>,
    shared: Arc<Signalled<State>>,
    write: CountWrite,
}

/// Runs a count's command on the event loop.
pub(crate) fn run(client: &mut CoreClient, now: Instant, command: CountCommand) {
    let CountCommand { handle, shared, write } = command;
    let written = client.with(now, handle, |c, now| match write {
        CountWrite::Set(n) => c.set(now, n),
        CountWrite::TrySet { version, n } => c.try_set(now, version, n),
    });
    if written.is_err() {
        shared.with(|s| s.writes.pop_back());
    }
}

fn on_event(shared: &Signalled<State>, path: &str, event: RecipeEvent) {
    match event {
        RecipeEvent::Count { value, version } => {
            tracing::debug!(%path, value, version, "shared count changed");
            shared.with(|s| s.value = Some(VersionedCount { value, version }));
        }
        RecipeEvent::CountWritten(outcome) => {
            if let Some(tx) = shared.with(|s| s.writes.pop_front()) {
                let _ = tx.send(outcome.map_err(Error::from));
            }
        }
        RecipeEvent::CountMalformed { len } => {
            tracing::warn!(%path, len, "shared count node does not hold a 4-byte int");
            shared.with(|s| s.malformed = Some(len));
        }
        other => tracing::trace!(%path, ?other, "shared count event"),
    }
}

impl SharedCount {
    /// Creates the node with `seed` if absent and waits for its first value.
    pub(crate) async fn new(client: Client, path: ZkPath, seed: i32) -> Result<SharedCount, Error> {
        let config = client.inner.lock_config().to_config();
        let shared = Arc::new(Signalled::<State>::default());
        let label: Arc<str> = path.as_str().into();
        let sink = Arc::new(CountSink { shared: shared.clone(), path: label.clone() });
        let reserved = client.reserve::<CoreCount>();
        let typed = reserved.handle();
        client.register(reserved, CoreCount::new(path, seed, config), sink)?;
        let handle = Owner::new(client, Registration::new(typed.id()));
        let count = SharedCount { handle, typed, shared, path: label };
        count.first_value().await?;
        Ok(count)
    }

    async fn first_value(&self) -> Result<VersionedCount, Error> {
        loop {
            let listener = self.shared.changed.listen();
            match self.shared.peek(|s| (s.value, s.malformed)) {
                (Some(v), _) => return Ok(v),
                (None, Some(len)) => return Err(Error::CountMalformed { path: self.path.to_string(), len }),
                (None, None) => {}
            }
            let inner = &self.handle.client.inner;
            let closed = inner.shared.changed.listen();
            let ended = inner.shared.read(|s| (s.finished || s.ended).then_some((s.closed, s.connection)));
            match ended {
                // The server ended the session (expired, refused): its reason.
                Some(Some((false, Some(state)))) if state.end_error().is_some() => {
                    return Err(
                        inner.named(Error::from(state.end_error().unwrap_or(zoolock_core::RequestError::Closed)))
                    );
                }
                Some(None) => {}
                _ => return Err(inner.shared.closed()),
            }
            futures_lite::future::or(listener, closed).await;
        }
    }

    /// The latest value seen (always known once the handle exists).
    pub fn get(&self) -> VersionedCount {
        self.shared.peek(|s| s.value).unwrap_or(VersionedCount { value: 0, version: -1 })
    }

    /// Writes `n`, whatever the current version (Curator's `setCount`).
    pub async fn set(&self, n: i32) -> Result<(), Error> {
        self.write(CountWrite::Set(n)).await.map(|_| ())
    }

    /// Writes `n` only if the node is still at `version` (from
    /// [`SharedCount::get`]); `Ok(false)` if someone wrote first, and the
    /// new value arrives shortly after (Curator's `trySetCount`). Version -1
    /// (a version wrapped after 2^31 writes) fails with
    /// `ApiMisuse::VersionOverflowed`,
    /// as in Curator 5.7: the server would write whatever the version.
    pub async fn try_set(&self, version: i32, n: i32) -> Result<bool, Error> {
        self.write(CountWrite::TrySet { version, n }).await
    }

    async fn write(&self, write: CountWrite) -> Result<bool, Error> {
        let (tx, rx) = oneshot::channel();
        let command = CountCommand { handle: self.typed, shared: self.shared.clone(), write };
        // The waiter and the command under one lock: outcomes come in call order.
        self.shared.with(|s| {
            s.writes.push_back(tx);
            self.handle.client.inner.send(Command::Count(command))
        })?;
        let inner = &self.handle.client.inner;
        rx.await.map_err(|_| inner.shared.closed())?.map_err(|e| inner.named(e))
    }

    /// The current value, then every newer one.
    pub fn changes(&self) -> std::pin::Pin<Box<dyn Stream<Item = VersionedCount> + Send>> {
        let shared = self.shared.clone();
        Box::pin(futures_lite::stream::unfold((shared, None::<VersionedCount>), |(shared, last)| async move {
            loop {
                let listener = shared.changed.listen();
                let now = shared.peek(|s| s.value);
                if now.is_some() && now != last {
                    return now.map(|v| (v, (shared, Some(v))));
                }
                listener.await;
            }
        }))
    }
}
