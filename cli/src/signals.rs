//! The signals zoolock handles instead of dying: SIGINT, SIGTERM, SIGHUP.
//! While waiting they cancel the wait; while CMD runs they are forwarded to it.

use std::io;

use nix::sys::signal::Signal;
use tokio::signal::unix::{SignalKind, signal};
use tokio::sync::mpsc;

/// Installs the handlers; every signal received afterwards arrives on the
/// returned channel. Needs a tokio runtime.
pub(crate) fn install() -> io::Result<mpsc::UnboundedReceiver<Signal>> {
    let (tx, rx) = mpsc::unbounded_channel();
    for (kind, sig) in [
        (SignalKind::interrupt(), Signal::SIGINT),
        (SignalKind::terminate(), Signal::SIGTERM),
        (SignalKind::hangup(), Signal::SIGHUP),
    ] {
        let mut stream = signal(kind)?;
        let tx = tx.clone();
        tokio::spawn(async move {
            while stream.recv().await.is_some() {
                if tx.send(sig).is_err() {
                    break;
                }
            }
        });
    }
    Ok(rx)
}
