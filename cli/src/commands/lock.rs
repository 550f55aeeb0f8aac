//! `lock`, `read-lock`, `write-lock`, `semaphore` and `elect`: wait for the
//! lock (or the leadership), run CMD while holding it, release it when CMD
//! exits.

use std::convert::Infallible;
use std::io;
use std::time::Duration;

use futures_lite::StreamExt;
use tokio::sync::watch;
use zoolock_tokio::{
    Client, ElectionKind, Error, Hold, HoldStatus, LeadershipPolicy, LockOptions, LossReason, SemaphoreOptions,
};

use crate::args::{Global, HoldArgs, Kind};
use crate::exit::{self, Failure, Outcome};
use crate::progress::Progress;
use crate::supervise::{self, Ending, Loss, Policy};

/// How a semaphore is sized.
#[derive(Debug, Clone)]
pub(super) enum Size {
    /// A fixed number of leases.
    Leases(u32),
    /// The shared count at this path.
    Count(String),
}

/// Which lock to take.
#[derive(Debug, Clone)]
pub(super) enum Target {
    /// A mutex, optionally revocable.
    Mutex { revocable: bool },
    /// The read half of a read-write lock.
    Read,
    /// The write half of a read-write lock.
    Write,
    /// One lease of a semaphore, optionally revocable.
    Semaphore { size: Size, revocable: bool },
    /// One term of leadership of an election, as participant `id`, ended
    /// as `policy` says.
    Elect { id: String, election: ElectionKind, policy: LeadershipPolicy },
}

/// Reports `hold`'s status on `tx` until dropped; never completes. Every
/// hold has a status stream of its own (`Held` again after a reconnect
/// included), so nothing is polled.
async fn watch(hold: &Hold, tx: &watch::Sender<HoldStatus>) -> Infallible {
    let mut changes = hold.status_changes();
    while let Some(status) = changes.next().await {
        tx.send_replace(status);
    }
    tx.send_replace(HoldStatus::Lost);
    std::future::pending().await
}

/// The supervision policy from the options, checked against the session
/// timeout. An election under the session policy has no grace: a
/// suspension ends nothing.
fn policy(global: &Global, hold: &HoldArgs, recipe: &Target) -> Result<Policy, Failure> {
    let session = global.session_timeout;
    if let Target::Elect { policy: LeadershipPolicy::Session, .. } = recipe {
        if hold.grace.is_some() {
            let message = "--grace does not apply under --policy session: a suspension ends nothing";
            return Err(Failure::new(exit::USAGE, message));
        }
        let kill_after = hold.kill_after.unwrap_or(session / 6);
        return Ok(Policy { grace: None, kill_after, stale_after: session * 2 / 3 });
    }
    let grace = hold.grace.unwrap_or(session / 6);
    let kill_after = hold.kill_after.unwrap_or(session / 6);
    if grace >= session {
        return Err(Failure::new(
            exit::USAGE,
            format!(
                "--grace {} must be below the session timeout {}",
                humantime::format_duration(grace),
                humantime::format_duration(session)
            ),
        ));
    }
    Ok(Policy { grace: Some(grace), kill_after, stale_after: session * 2 / 3 })
}

/// Waits for the lock, then runs CMD under [`supervise::supervise`].
pub(super) async fn run(global: &Global, hold: HoldArgs, recipe: Target) -> Outcome {
    let policy = policy(global, &hold, &recipe)?;
    let argv = hold.argv();
    let Some((program, args)) = argv.split_first() else {
        return Err(Failure::new(exit::USAGE, "no command to run"));
    };
    let mut signals =
        crate::signals::install().map_err(|e| Failure::new(exit::FAILURE, format!("cannot handle signals: {e}")))?;

    let client = tokio::select! {
        client = super::connect(global, hold.data.as_deref()) => client?,
        Some(sig) = signals.recv() => return Ok(exit::signal_code(sig.signal as i32)),
    };
    let close_limit = Duration::from_secs(2).min(global.session_timeout);

    let progress = Progress::new();
    let (kind, leases) = queue_of(&recipe);
    let look = || held_by(&client, &hold.path, kind, leases);
    let acquired = tokio::select! {
        held = acquire(&client, &hold, recipe, &progress) => held,
        never = progress.run(&hold.path, look) => match never {},
        Some(sig) = signals.recv() => {
            progress.clear();
            super::close(&client, close_limit).await;
            return Ok(exit::signal_code(sig.signal as i32));
        }
    };
    progress.clear();
    let held = match acquired {
        Ok(held) => held,
        Err(Error::TimedOut) => {
            let holder = held_by(&client, &hold.path, kind, leases).await;
            super::close(&client, close_limit).await;
            let path = &hold.path;
            let message = match (hold.wait_limit(), holder) {
                (Some(Duration::ZERO), Some(holder)) => format!("{path} is held by {holder}"),
                (Some(Duration::ZERO), None) => format!("{path} is taken"),
                (limit, holder) => format!(
                    "timed out after {} waiting for {path}{}",
                    humantime::format_duration(limit.unwrap_or_default()),
                    holder.map(|h| format!(", held by {h}")).unwrap_or_default()
                ),
            };
            return Err(Failure::new(hold.conflict_exit_code, message));
        }
        Err(e) => {
            super::close(&client, close_limit).await;
            return Err(super::request_failed(&format!("cannot lock {}", hold.path), &e));
        }
    };
    let token = held.fencing_token().0;
    tracing::info!(node = held.node(), token, "acquired");

    let mut command = tokio::process::Command::new(program);
    command.args(args).env("ZOOLOCK_FENCING_TOKEN", token.to_string()).env("ZOOLOCK_NODE", held.node());
    #[cfg(target_os = "linux")]
    supervise::prepare_cmd(&mut command);
    let mut child = match command.spawn() {
        Ok(child) => child,
        Err(e) => {
            let code = match e.kind() {
                io::ErrorKind::NotFound => exit::NOT_FOUND,
                _ => exit::CANNOT_EXECUTE,
            };
            release(held, global.session_timeout).await;
            super::close(&client, close_limit).await;
            return Err(Failure::new(code, format!("cannot run {program}: {e}")));
        }
    };

    let (tx, mut rx) = watch::channel(HoldStatus::Held);
    let last_heard = || client.last_heard();
    let ending = tokio::select! {
        ending = supervise::supervise(&mut child, &mut rx, held.revocation_requested(), &mut signals, policy, &last_heard) => ending,
        never = watch(&held, &tx) => match never {},
    };
    // The hold says whether its loss was the maximum hold's doing.
    let expired = hold.max_hold.filter(|_| held.loss() == Some(LossReason::MaxHold));
    finish(ending, held, &client, &hold.path, global, policy, expired).await
}

/// Releases and closes, and picks the exit code.
async fn finish(
    ending: io::Result<Ending>,
    held: Hold,
    client: &Client,
    path: &str,
    global: &Global,
    policy: Policy,
    expired: Option<Duration>,
) -> Outcome {
    let close_limit = Duration::from_secs(2).min(global.session_timeout);
    let ending = match ending {
        Ok(ending) => ending,
        Err(e) => {
            release(held, global.session_timeout).await;
            super::close(client, close_limit).await;
            return Err(Failure::new(exit::FAILURE, format!("cannot wait for the command: {e}")));
        }
    };
    match ending {
        Ending::Exited(status) | Ending::Revoked(status) => {
            release(held, global.session_timeout).await;
            super::close(client, close_limit).await;
            Ok(exit::child_code(status))
        }
        Ending::Lost(loss, status) => {
            // No release: the hold is gone or unreachable. Closing the
            // session (or its expiry) deletes the node if it is still there.
            drop(held);
            super::close(client, close_limit).await;
            let why = match (loss, expired) {
                (Loss::Lost, Some(d)) => format!("it was held for --max-hold {}", humantime::format_duration(d)),
                (Loss::Lost, None) => "the session expired or the lock node was deleted".to_owned(),
                (Loss::SuspendedTooLong, _) => {
                    format!(
                        "the connection was suspended longer than {}",
                        humantime::format_duration(policy.grace.unwrap_or_default())
                    )
                }
            };
            Err(Failure::new(
                exit::LOCK_LOST,
                format!("lost the lock on {path} ({why}); the command was stopped ({status})"),
            ))
        }
    }
}

async fn release(held: Hold, limit: Duration) {
    match tokio::time::timeout(limit, held.release()).await {
        Ok(Ok(())) => {}
        Ok(Err(error)) => tracing::warn!(%error, "release failed; closing the session deletes the node"),
        Err(_) => tracing::warn!("release did not complete within {limit:?}; closing the session"),
    }
}

/// The queue layout of `recipe` for [`super::holders::list`], and a
/// semaphore's size when it is fixed.
fn queue_of(recipe: &Target) -> (Kind, Option<usize>) {
    match recipe {
        Target::Mutex { .. } => (Kind::Mutex, None),
        Target::Read | Target::Write => (Kind::Rwlock, None),
        Target::Semaphore { size: Size::Leases(n), .. } => (Kind::Semaphore, Some(*n as usize)),
        Target::Semaphore { size: Size::Count(_), .. } => (Kind::Semaphore, None),
        Target::Elect { election: ElectionKind::Latch, .. } => (Kind::Latch, None),
        Target::Elect { .. } => (Kind::Election, None),
    }
}

/// Who holds `path` now, for the waiting line and the time-out message;
/// `None` when nobody does or the listing failed.
async fn held_by(client: &Client, path: &str, kind: Kind, leases: Option<usize>) -> Option<String> {
    match super::holders::holder(client, path, kind, leases).await {
        Ok(holder) => holder,
        Err(error) => {
            tracing::debug!(%error, path, "cannot list the holders");
            None
        }
    }
}

/// Creates the lock and waits for it (at most `--timeout`; not at all with
/// `--nonblock`), reporting the queue position to `progress`.
async fn acquire(client: &Client, hold: &HoldArgs, recipe: Target, progress: &Progress) -> Result<Hold, Error> {
    let path = hold.path.as_str();
    let mut options = LockOptions::default();
    if let Some(max_hold) = hold.max_hold {
        options = options.max_hold(max_hold);
    }
    let lock = match recipe {
        Target::Mutex { revocable } => client.mutex_with(path, options.revocable(revocable)).await?,
        Target::Read => client.read_write_lock_with(path, options).await?.read,
        Target::Write => client.read_write_lock_with(path, options).await?.write,
        Target::Semaphore { size, revocable } => {
            let mut options = match size {
                Size::Leases(n) => SemaphoreOptions::leases(n as usize),
                Size::Count(count) => SemaphoreOptions::sized_by(&count, 1),
            };
            if let Some(max_hold) = hold.max_hold {
                options = options.max_hold(max_hold);
            }
            let semaphore = client.semaphore_with(path, options.revocable(revocable)).await?;
            let lease = semaphore.acquire_one_with_progress(hold.wait_limit(), progress.recorder()).await?;
            return Ok(Hold::from(lease));
        }
        Target::Elect { id, election, policy } => {
            let participant = client.election_participant(path, election, &id, options.leadership(policy)).await?;
            let term = participant.leadership_with_progress(hold.wait_limit(), progress.recorder()).await?;
            return Ok(term.into());
        }
    };
    let guard = lock.acquire_with_progress(hold.wait_limit(), progress.recorder()).await?;
    Ok(guard.into())
}
