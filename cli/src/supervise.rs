//! Running CMD while the lock is held: makes it die with zoolock, forwards
//! zoolock's signals to it, stops it when the hold is lost or revoked, and
//! reports how it ended.
//!
//! The hold is seen as a stream of [`HoldStatus`] values (a `watch`
//! channel), so the policy can be tested without a server.

use std::future::Future;
use std::io;
use std::process::ExitStatus;
use std::time::Duration;

use nix::sys::signal::{Signal, kill};
use nix::unistd::{Pid, getpgid, getpgrp};
use tokio::process::Child;
use tokio::sync::{mpsc, watch};
use tokio::time::{Instant, sleep_until};
use zoolock_tokio::HoldStatus;

use crate::signals::Received;

/// How long a suspension is tolerated, and how long CMD gets after SIGTERM.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub(crate) struct Policy {
    /// A `Suspended` hold that is not `Held` again within this counts as
    /// lost; `None`: a suspension ends nothing, only `Lost` does (`elect
    /// --policy session`).
    pub(crate) grace: Option<Duration>,
    /// After a SIGTERM sent because of a loss or a revocation, SIGKILL
    /// follows if CMD is still running this much later.
    pub(crate) kill_after: Duration,
    /// Silence from the server after which the hold is stale whatever the
    /// grace says: two thirds of the session timeout, when the client would
    /// declare the connection dead. After a process pause this has usually
    /// passed already, so CMD is stopped at once.
    pub(crate) stale_after: Duration,
}

/// Why the hold counts as lost.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub(crate) enum Loss {
    /// The recipe reported the lock gone (session expired, node vanished).
    Lost,
    /// The connection stayed suspended longer than the grace period.
    SuspendedTooLong,
}

/// How CMD ended.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub(crate) enum Ending {
    /// CMD exited by itself (or after a signal zoolock forwarded to it).
    Exited(ExitStatus),
    /// CMD was sent SIGTERM because the holder was asked to release.
    Revoked(ExitStatus),
    /// CMD was stopped because the hold was lost.
    Lost(Loss, ExitStatus),
}

/// Sends `signal` to CMD's process (not its process group). Once CMD has
/// been reaped there is nobody to signal, and its pid may be someone else's,
/// so nothing is sent.
pub(crate) fn signal(child: &Child, signal: Signal) {
    let Some(pid) = child.id().and_then(|pid| i32::try_from(pid).ok()) else { return };
    if let Err(error) = kill(Pid::from_raw(pid), signal) {
        tracing::debug!(%error, ?signal, pid, "could not signal CMD");
    }
}

/// Prepares CMD's process between fork and exec (Linux):
///
/// * The kernel sends CMD SIGKILL when zoolock's main thread exits, for
///   whatever reason (SIGKILL, the OOM killer, a crash), so that CMD never
///   outlives the lock runner and never runs without the lock: the session
///   would expire and someone else would take the lock. (CMD's own children
///   are not covered: they would need CMD to do the same.) The parent-death
///   signal is tied to the thread that forks; zoolock forks from its main
///   thread (the runtime is current-thread), which lives as long as the
///   process. If zoolock died between the fork and the `prctl`, the signal
///   will never come: the parent pid has changed by then, so the child fails
///   instead of running CMD.
/// * The signals [`crate::signals::install`] blocked in zoolock are
///   unblocked: a signal mask survives exec, and CMD must get its signals.
///
/// This is the one `unsafe` in zoolock: `pre_exec` is unsafe, and the
/// workspace forbids `unsafe` elsewhere (the CLI crate denies it, and this
/// function alone allows it).
#[cfg(target_os = "linux")]
#[allow(unsafe_code)]
pub(crate) fn prepare_cmd(command: &mut tokio::process::Command) {
    use nix::sys::signal::{SigSet, SigmaskHow, sigprocmask};

    let parent = nix::unistd::getpid();
    let hook = move || -> io::Result<()> {
        sigprocmask(SigmaskHow::SIG_SETMASK, Some(&SigSet::empty()), None)?;
        nix::sys::prctl::set_pdeathsig(Signal::SIGKILL)?;
        if nix::unistd::getppid() != parent {
            return Err(io::Error::from(nix::errno::Errno::ESRCH));
        }
        Ok(())
    };
    // SAFETY: `pre_exec` runs `hook` in the forked child before exec, where
    // only async-signal-safe work is allowed (the parent may have had other
    // threads holding locks at the fork). `hook` makes three system calls,
    // sigprocmask, prctl(PR_SET_PDEATHSIG) and getppid, and touches no lock
    // and no heap: `parent` is a copied integer, the empty signal set lives
    // on the stack, and the error is built from a raw errno without
    // allocating.
    unsafe {
        command.pre_exec(hook);
    }
}

/// Whether CMD is still in zoolock's process group, so that a signal the
/// terminal sent to that group has reached CMD too.
fn in_our_group(child: &Child) -> bool {
    let Some(pid) = child.id().and_then(|pid| i32::try_from(pid).ok()) else { return false };
    getpgid(Some(Pid::from_raw(pid))).is_ok_and(|group| group == getpgrp())
}

/// Waits for `child` to exit while watching the hold.
///
/// * `status`: the hold's status. `Suspended` starts the grace timer,
///   `Held` stops it; `Lost` (or any other status) is a loss at once, as is
///   the grace timer running out. A loss sends SIGTERM to CMD.
/// * `revoked`: completes when someone asked us to release; CMD gets SIGTERM.
/// * `signals`: signals zoolock received; each is forwarded to CMD, except
///   one the terminal sent to the process group CMD is still in (it has
///   reached CMD already: Ctrl-C must arrive once, not twice).
///
/// * `last_heard`: when the server was last heard from. A suspension counts
///   as a loss at `grace` after it is noticed or at `stale_after` after the
///   last contact, whichever comes first: after a process pause the
///   suspension is noticed late, and the hold may already be gone.
///
/// After a SIGTERM of our own, CMD gets `policy.kill_after` before SIGKILL.
/// Returns once CMD has exited, never earlier.
pub(crate) async fn supervise(
    child: &mut Child,
    status: &mut watch::Receiver<HoldStatus>,
    revoked: impl Future<Output = ()>,
    signals: &mut mpsc::UnboundedReceiver<Received>,
    policy: Policy,
    last_heard: &(dyn Fn() -> Option<std::time::Instant> + Sync),
) -> io::Result<Ending> {
    let mut revoked = std::pin::pin!(revoked);
    let mut was_revoked = false;
    let mut lost: Option<Loss> = None;
    let mut grace_deadline: Option<Instant> = None;
    let mut kill_deadline: Option<Instant> = None;
    let mut killed = false;
    let mut status_open = true;
    let mut signals_open = true;
    // Far enough to never fire; only used by disabled branches.
    let never = Instant::now() + Duration::from_secs(86_400 * 365);

    // The status may already be bad before the first change.
    let mut current = Some(*status.borrow_and_update());
    loop {
        if let Some(s) = current.take() {
            match s {
                HoldStatus::Held => grace_deadline = None,
                HoldStatus::Suspended if policy.grace.is_none() => {}
                HoldStatus::Suspended => {
                    grace_deadline.get_or_insert_with(|| {
                        let noticed = Instant::now() + policy.grace.unwrap_or_default();
                        match last_heard() {
                            Some(heard) => noticed.min(Instant::from_std(heard) + policy.stale_after),
                            None => noticed,
                        }
                    });
                }
                _ => lost = lost.or(Some(Loss::Lost)),
            }
            if lost.is_some() && kill_deadline.is_none() {
                tracing::warn!(?lost, "lock lost: sending SIGTERM to CMD");
                signal(child, Signal::SIGTERM);
                kill_deadline = Some(Instant::now() + policy.kill_after);
            }
        }
        tokio::select! {
            exit = child.wait() => {
                let exit = exit?;
                return Ok(match (lost, was_revoked) {
                    (Some(loss), _) => Ending::Lost(loss, exit),
                    (None, true) => Ending::Revoked(exit),
                    (None, false) => Ending::Exited(exit),
                });
            }
            changed = status.changed(), if status_open => match changed {
                Ok(()) => current = Some(*status.borrow_and_update()),
                // Nobody reports any more: keep the last status.
                Err(_) => status_open = false,
            },
            () = sleep_until(grace_deadline.unwrap_or(never)), if grace_deadline.is_some() && lost.is_none() => {
                lost = Some(Loss::SuspendedTooLong);
                grace_deadline = None;
                // Re-enter the status handling above to send SIGTERM.
                current = Some(HoldStatus::Lost);
            }
            () = &mut revoked, if !was_revoked => {
                was_revoked = true;
                if kill_deadline.is_none() {
                    tracing::info!("revocation requested: sending SIGTERM to CMD");
                    signal(child, Signal::SIGTERM);
                    kill_deadline = Some(Instant::now() + policy.kill_after);
                }
            }
            sig = signals.recv(), if signals_open => match sig {
                Some(Received { signal: sig, from_terminal }) => {
                    if from_terminal && in_our_group(child) {
                        tracing::info!(?sig, "CMD got the signal from the terminal too: not forwarded");
                    } else {
                        tracing::info!(?sig, "forwarding signal to CMD");
                        signal(child, sig);
                    }
                }
                None => signals_open = false,
            },
            () = sleep_until(kill_deadline.unwrap_or(never)), if kill_deadline.is_some() && !killed => {
                tracing::warn!("CMD still running {:?} after SIGTERM: sending SIGKILL", policy.kill_after);
                killed = true;
                if let Err(error) = child.start_kill() {
                    tracing::debug!(%error, "could not kill CMD");
                }
            }
        }
    }
}

#[cfg(test)]
mod tests {
    use std::os::unix::process::ExitStatusExt;
    use std::process::Stdio;

    use super::*;

    fn spawn(script: &str) -> Child {
        tokio::process::Command::new("sh")
            .args(["-c", script])
            .stdin(Stdio::null())
            .stdout(Stdio::null())
            .kill_on_drop(true)
            .spawn()
            .expect("spawn sh")
    }

    /// Runs `setup`, then `body`; returns once `setup` has run.
    async fn spawn_ready(setup: &str, body: &str) -> Child {
        let mut child = tokio::process::Command::new("sh")
            .args(["-c", &format!("{setup}; echo ready; {body}")])
            .stdin(Stdio::null())
            .stdout(Stdio::piped())
            .kill_on_drop(true)
            .spawn()
            .expect("spawn sh");
        let mut ready = [0u8; 6];
        tokio::io::AsyncReadExt::read_exact(child.stdout.as_mut().unwrap(), &mut ready).await.unwrap();
        child
    }

    const GRACE: Duration = Duration::from_millis(300);

    const POLICY: Policy =
        Policy { grace: Some(GRACE), kill_after: Duration::from_millis(300), stale_after: Duration::from_secs(2) };

    struct Rig {
        status: watch::Sender<HoldStatus>,
        status_rx: watch::Receiver<HoldStatus>,
        signals: mpsc::UnboundedSender<Received>,
        signals_rx: mpsc::UnboundedReceiver<Received>,
    }

    impl Rig {
        /// Supervises `child` under [`POLICY`] with the rig's channels, never
        /// revoked, the server never heard from.
        async fn supervise(&mut self, child: &mut Child) -> io::Result<Ending> {
            self.supervise_beside(child, async {}).await
        }

        /// [`Rig::supervise`] with `beside` running alongside until it is
        /// done (it sends the test's statuses and signals).
        async fn supervise_beside(
            &mut self,
            child: &mut Child,
            beside: impl Future<Output = ()>,
        ) -> io::Result<Ending> {
            let beside = async {
                beside.await;
                std::future::pending::<()>().await
            };
            let supervised = async {
                tokio::select! {
                    e = supervise(child, &mut self.status_rx, std::future::pending(), &mut self.signals_rx, POLICY, &|| None) => e,
                    () = beside => unreachable!("`beside` stays pending once done"),
                }
            };
            // A child that ignores what it is sent must fail the test, not hang it.
            tokio::time::timeout(Duration::from_secs(20), supervised).await.expect("CMD did not end within 20 s")
        }
    }

    fn rig() -> Rig {
        let (status, status_rx) = watch::channel(HoldStatus::Held);
        let (signals, signals_rx) = mpsc::unbounded_channel();
        Rig { status, status_rx, signals, signals_rx }
    }

    /// Supervises a CMD that runs until it is killed, the hold already
    /// `status` at the start and the server last heard from at `heard`;
    /// returns the ending and how long it took.
    async fn supervise_sleeper_after(status: HoldStatus, heard: Option<std::time::Instant>) -> (Ending, Duration) {
        let mut r = rig();
        let mut child = spawn("exec sleep 30");
        let started = Instant::now();
        r.status.send_replace(status);
        let ending =
            supervise(&mut child, &mut r.status_rx, std::future::pending(), &mut r.signals_rx, POLICY, &|| heard)
                .await
                .unwrap();
        (ending, started.elapsed())
    }

    /// CMD ended by the SIGTERM sent for `loss`.
    fn terminated(loss: Loss) -> Ending {
        Ending::Lost(loss, ExitStatus::from_raw(Signal::SIGTERM as i32))
    }

    #[tokio::test]
    async fn exit_status_passes_through() {
        let mut r = rig();
        let mut child = spawn("exit 7");
        let ending = r.supervise(&mut child).await.unwrap();
        assert_eq!(ending, Ending::Exited(ExitStatus::from_raw(7 << 8)));
    }

    #[tokio::test]
    async fn suspension_shorter_than_grace_is_tolerated() {
        let mut r = rig();
        let mut child = spawn("sleep 0.8; exit 3");
        let status = r.status.clone();
        let flap = async move {
            tokio::time::sleep(Duration::from_millis(100)).await;
            status.send_replace(HoldStatus::Suspended);
            tokio::time::sleep(Duration::from_millis(150)).await;
            status.send_replace(HoldStatus::Held);
            // A second short suspension gets a fresh grace period.
            tokio::time::sleep(Duration::from_millis(100)).await;
            status.send_replace(HoldStatus::Suspended);
            tokio::time::sleep(Duration::from_millis(200)).await;
            status.send_replace(HoldStatus::Held);
        };
        let ending = r.supervise_beside(&mut child, flap).await.unwrap();
        assert_eq!(ending, Ending::Exited(ExitStatus::from_raw(3 << 8)));
    }

    #[tokio::test]
    async fn suspension_after_a_long_silence_terminates_at_once() {
        // As after a process pause: the server was last heard from long ago.
        let heard = std::time::Instant::now().checked_sub(Duration::from_secs(10));
        let (ending, took) = supervise_sleeper_after(HoldStatus::Suspended, heard).await;
        assert_eq!(ending, terminated(Loss::SuspendedTooLong));
        assert!(took < GRACE, "{took:?}");
    }

    #[tokio::test]
    async fn without_grace_a_suspension_ends_nothing_and_a_loss_ends_cmd() {
        // `elect --policy session`: suspended from the start, the server
        // silent for long, and CMD still runs to its end.
        let mut r = rig();
        let mut child = spawn("sleep 0.5; exit 3");
        r.status.send_replace(HoldStatus::Suspended);
        let heard = std::time::Instant::now().checked_sub(Duration::from_secs(10));
        let policy = Policy { grace: None, ..POLICY };
        let ending =
            supervise(&mut child, &mut r.status_rx, std::future::pending(), &mut r.signals_rx, policy, &|| heard)
                .await
                .unwrap();
        assert_eq!(ending, Ending::Exited(ExitStatus::from_raw(3 << 8)));
        let mut child = spawn("exec sleep 30");
        r.status.send_replace(HoldStatus::Lost);
        let ending =
            supervise(&mut child, &mut r.status_rx, std::future::pending(), &mut r.signals_rx, policy, &|| heard)
                .await
                .unwrap();
        assert_eq!(ending, terminated(Loss::Lost));
    }

    #[tokio::test]
    async fn suspension_past_grace_terminates() {
        let (ending, took) = supervise_sleeper_after(HoldStatus::Suspended, None).await;
        assert_eq!(ending, terminated(Loss::SuspendedTooLong));
        assert!(took >= GRACE && took < Duration::from_secs(5), "{took:?}");
    }

    #[tokio::test]
    async fn loss_terminates_at_once() {
        let mut r = rig();
        let mut child = spawn("exec sleep 30");
        let status = r.status.clone();
        let started = Instant::now();
        let lose = async move {
            tokio::time::sleep(Duration::from_millis(50)).await;
            status.send_replace(HoldStatus::Lost);
        };
        let ending = r.supervise_beside(&mut child, lose).await.unwrap();
        assert_eq!(ending, terminated(Loss::Lost));
        assert!(started.elapsed() < GRACE, "{:?}", started.elapsed());
    }

    #[tokio::test]
    async fn a_lost_status_before_the_start_counts() {
        let (ending, _) = supervise_sleeper_after(HoldStatus::NotHeld, None).await;
        assert_eq!(ending, terminated(Loss::Lost));
    }

    #[tokio::test]
    async fn sigterm_ignored_means_sigkill_after_kill_after() {
        let mut r = rig();
        // The shell ignores TERM (once it says so); its short sleeps end by themselves.
        let mut child = spawn_ready("trap '' TERM", "while :; do sleep 0.05; done").await;
        r.status.send_replace(HoldStatus::Lost);
        let started = Instant::now();
        let ending = r.supervise(&mut child).await.unwrap();
        assert_eq!(ending, Ending::Lost(Loss::Lost, ExitStatus::from_raw(Signal::SIGKILL as i32)));
        assert!(started.elapsed() >= POLICY.kill_after, "{:?}", started.elapsed());
    }

    #[tokio::test]
    async fn revocation_sends_sigterm() {
        let mut r = rig();
        let mut child = spawn("exec sleep 30");
        let revoked = tokio::time::sleep(Duration::from_millis(50));
        let ending =
            supervise(&mut child, &mut r.status_rx, revoked, &mut r.signals_rx, POLICY, &|| None).await.unwrap();
        assert_eq!(ending, Ending::Revoked(ExitStatus::from_raw(Signal::SIGTERM as i32)));
    }

    #[tokio::test]
    async fn signals_are_forwarded_and_the_child_decides() {
        let mut r = rig();
        // The shell traps TERM and exits 42: a forwarded signal is not a
        // kill. (TERM rather than INT: a shell started with INT ignored, as
        // under a background job of a non-interactive shell, cannot trap it.)
        let mut child = spawn_ready("trap 'exit 42' TERM", "while :; do sleep 0.05; done").await;
        let signals = r.signals.clone();
        let send = async move {
            tokio::time::sleep(Duration::from_millis(150)).await;
            signals.send(Received::sent(Signal::SIGTERM)).unwrap();
        };
        let ending = r.supervise_beside(&mut child, send).await.unwrap();
        assert_eq!(ending, Ending::Exited(ExitStatus::from_raw(42 << 8)));
    }

    #[tokio::test]
    async fn a_terminal_signal_is_not_forwarded_to_cmd_in_our_group() {
        let mut r = rig();
        // CMD would exit 42 on SIGINT; it shares our process group, so the
        // terminal has signalled it already and zoolock must not. Only the
        // SIGTERM of the later loss ends it.
        let mut child = spawn_ready("trap 'exit 42' INT", "while :; do sleep 0.05; done").await;
        let signals = r.signals.clone();
        let status = r.status.clone();
        let send = async move {
            tokio::time::sleep(Duration::from_millis(150)).await;
            signals.send(Received { signal: Signal::SIGINT, from_terminal: true }).unwrap();
            tokio::time::sleep(Duration::from_millis(300)).await;
            status.send_replace(HoldStatus::Lost);
        };
        let ending = r.supervise_beside(&mut child, send).await.unwrap();
        assert_eq!(ending, terminated(Loss::Lost));
    }

    #[tokio::test]
    async fn a_closed_status_channel_keeps_the_last_status() {
        let mut r = rig();
        let mut child = spawn("sleep 0.3; exit 0");
        drop(r.status);
        let ending =
            supervise(&mut child, &mut r.status_rx, std::future::pending(), &mut r.signals_rx, POLICY, &|| None)
                .await
                .unwrap();
        assert_eq!(ending, Ending::Exited(ExitStatus::from_raw(0)));
    }
}
