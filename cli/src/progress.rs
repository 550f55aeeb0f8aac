//! The progress line shown on stderr while waiting for a lock, when stderr
//! is a terminal (or `ZOOLOCK_PROGRESS=always`):
//! `waiting for /x: position 3 of 6 in queue, 3.2s`, rewritten every 250 ms
//! and cleared once the wait ends.
//!
//! The position is the one the acquire itself reports
//! ([`zoolock_tokio::Lock::acquire_with_progress`]), taken from the
//! listings it makes anyway: drawing the line sends no request at all,
//! however long the queue.

use std::cell::Cell;
use std::convert::Infallible;
use std::io::{IsTerminal, Write};
use std::sync::{Arc, Mutex};
use std::time::Duration;

use tokio::time::{Instant, MissedTickBehavior};
use zoolock_tokio::QueuePosition;

const EVERY: Duration = Duration::from_millis(250);

/// A progress line for one wait.
#[derive(Debug)]
pub(crate) struct Progress {
    enabled: bool,
    shown: Cell<bool>,
    /// The acquire's last reported position.
    position: Arc<Mutex<Option<QueuePosition>>>,
}

impl Progress {
    /// A progress line, shown only if stderr is a terminal or
    /// `ZOOLOCK_PROGRESS` is `always`.
    pub(crate) fn new() -> Progress {
        let forced = std::env::var("ZOOLOCK_PROGRESS").is_ok_and(|v| v == "always");
        Progress {
            enabled: forced || std::io::stderr().is_terminal(),
            shown: Cell::new(false),
            position: Arc::new(Mutex::new(None)),
        }
    }

    /// What the acquire calls with each new position.
    pub(crate) fn recorder(&self) -> impl FnMut(QueuePosition) + Send + 'static {
        let position = self.position.clone();
        move |q| *position.lock().unwrap_or_else(|e| e.into_inner()) = Some(q)
    }

    /// Redraws the line until dropped; never completes. Does nothing when
    /// not enabled. The first line appears after 250 ms, so a quick grant
    /// prints nothing.
    pub(crate) async fn run(&self, path: &str) -> Infallible {
        if !self.enabled {
            return std::future::pending().await;
        }
        let start = Instant::now();
        let mut ticker = tokio::time::interval_at(start + EVERY, EVERY);
        ticker.set_missed_tick_behavior(MissedTickBehavior::Delay);
        loop {
            ticker.tick().await;
            let position = *self.position.lock().unwrap_or_else(|e| e.into_inner());
            self.draw(&render(path, position, start.elapsed()));
        }
    }

    fn draw(&self, line: &str) {
        let mut err = std::io::stderr().lock();
        let _ = write!(err, "\r\x1b[2K{line}");
        let _ = err.flush();
        self.shown.set(true);
    }

    /// Erases the line if one was drawn.
    pub(crate) fn clear(&self) {
        if self.shown.replace(false) {
            let mut err = std::io::stderr().lock();
            let _ = write!(err, "\r\x1b[2K");
            let _ = err.flush();
        }
    }
}

impl Drop for Progress {
    fn drop(&mut self) {
        self.clear();
    }
}

/// The line's text.
fn render(path: &str, position: Option<QueuePosition>, elapsed: Duration) -> String {
    let secs = elapsed.as_secs_f64();
    match position {
        None => format!("waiting for {path}: {secs:.1}s"),
        Some(q) => format!("waiting for {path}: position {} of {} in queue, {secs:.1}s", q.position, q.total),
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn lines() {
        let t = Duration::from_millis(3240);
        assert_eq!(render("/x", None, t), "waiting for /x: 3.2s");
        let progress = Progress::new();
        let mut record = progress.recorder();
        record(QueuePosition::new(3, 6));
        let q = *progress.position.lock().unwrap();
        assert_eq!(render("/x", q, t), "waiting for /x: position 3 of 6 in queue, 3.2s");
    }
}
