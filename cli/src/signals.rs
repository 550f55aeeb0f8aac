//! The signals zoolock handles instead of dying: SIGINT, SIGTERM, SIGHUP.
//! While waiting they cancel the wait; while CMD runs they are forwarded to it,
//! except those CMD has already received from the terminal.
//!
//! CMD runs in zoolock's process group, so that it can use the terminal. When
//! that group is in the foreground, Ctrl-C (and a hangup) makes the kernel send
//! SIGINT (SIGHUP) to zoolock *and* to CMD. Forwarding it as well would deliver
//! it twice. On Linux the signals are read with their `siginfo` (through a
//! signalfd), and those the kernel sent (`SI_KERNEL`: the terminal driver) are
//! marked [`Received::from_terminal`]; the supervisor does not forward those
//! while CMD is still in zoolock's process group. Signals sent with `kill(2)`
//! (to zoolock's pid) are forwarded. Elsewhere every signal counts as sent
//! with `kill(2)`.

use std::io;

use nix::sys::signal::Signal;
use tokio::sync::mpsc;

/// The signals handled.
const HANDLED: [Signal; 3] = [Signal::SIGINT, Signal::SIGTERM, Signal::SIGHUP];

/// A signal zoolock received.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub(crate) struct Received {
    /// Which signal.
    pub(crate) signal: Signal,
    /// Sent by the kernel (the terminal driver: Ctrl-C, a hangup), which
    /// sends it to the whole foreground process group, not to zoolock alone.
    pub(crate) from_terminal: bool,
}

impl Received {
    /// A signal sent to zoolock's pid with `kill(2)`.
    #[cfg(test)]
    pub(crate) fn sent(signal: Signal) -> Received {
        Received { signal, from_terminal: false }
    }
}

/// Installs the handlers; every signal received afterwards arrives on the
/// returned channel.
///
/// On Linux the signals are blocked in the calling thread and read from a
/// signalfd by a thread of their own. Call it before any other thread
/// starts: threads inherit the mask of the thread that starts them (zoolock's
/// runtime is current-thread, and its blocking threads start later). A
/// signal mask also survives fork and exec, so whoever spawns a process
/// after this must clear it in the child, as
/// [`crate::supervise::prepare_cmd`] does for CMD.
#[cfg(target_os = "linux")]
pub(crate) fn install() -> io::Result<mpsc::UnboundedReceiver<Received>> {
    use nix::errno::Errno;
    use nix::libc::SI_KERNEL;
    use nix::sys::signal::SigSet;
    use nix::sys::signalfd::{SfdFlags, SignalFd};

    let mut mask = SigSet::empty();
    for sig in HANDLED {
        mask.add(sig);
    }
    // Blocked, the signals stay pending for the signalfd instead of taking
    // their default action (ending zoolock).
    mask.thread_block()?;
    let fd = SignalFd::with_flags(&mask, SfdFlags::SFD_CLOEXEC)?;
    let (tx, rx) = mpsc::unbounded_channel();
    std::thread::Builder::new().name("zoolock-signals".into()).spawn(move || {
        loop {
            match fd.read_signal() {
                Ok(Some(info)) => {
                    let Ok(signal) = Signal::try_from(info.ssi_signo as i32) else { continue };
                    let received = Received { signal, from_terminal: info.ssi_code == SI_KERNEL };
                    if tx.send(received).is_err() {
                        break;
                    }
                }
                Ok(None) | Err(Errno::EINTR) => {}
                Err(error) => {
                    tracing::warn!(%error, "cannot read signals");
                    break;
                }
            }
        }
    })?;
    Ok(rx)
}

/// Installs the handlers; every signal received afterwards arrives on the
/// returned channel. Needs a tokio runtime.
#[cfg(not(target_os = "linux"))]
pub(crate) fn install() -> io::Result<mpsc::UnboundedReceiver<Received>> {
    use tokio::signal::unix::{SignalKind, signal};

    let (tx, rx) = mpsc::unbounded_channel();
    for sig in HANDLED {
        let mut stream = signal(SignalKind::from_raw(sig as i32))?;
        let tx = tx.clone();
        tokio::spawn(async move {
            while stream.recv().await.is_some() {
                if tx.send(Received { signal: sig, from_terminal: false }).is_err() {
                    break;
                }
            }
        });
    }
    Ok(rx)
}
