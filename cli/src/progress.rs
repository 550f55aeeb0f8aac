//! The progress line shown on stderr while waiting for a lock, when stderr
//! is a terminal: `waiting for /x: 3 in queue, 3.2s`, rewritten every 250 ms
//! and cleared once the wait ends.
//!
//! The queue length comes from listing the lock path's participants. Our own
//! node is not known before the lock is granted, so no position is shown.

use std::cell::Cell;
use std::convert::Infallible;
use std::io::{IsTerminal, Write};
use std::time::Duration;

use tokio::time::{Instant, MissedTickBehavior};
use zoolock_tokio::{Client, ParticipantsOf};

const EVERY: Duration = Duration::from_millis(250);

/// A progress line for one wait.
#[derive(Debug)]
pub(crate) struct Progress {
    enabled: bool,
    shown: Cell<bool>,
}

impl Progress {
    /// A progress line, shown only if stderr is a terminal.
    pub(crate) fn new() -> Progress {
        Progress { enabled: std::io::stderr().is_terminal(), shown: Cell::new(false) }
    }

    /// Redraws the line until dropped; never completes. Does nothing when
    /// stderr is not a terminal. The first line appears after 250 ms, so a
    /// quick grant prints nothing.
    pub(crate) async fn run(&self, client: &Client, path: &str, kind: ParticipantsOf) -> Infallible {
        if !self.enabled {
            return std::future::pending().await;
        }
        let start = Instant::now();
        let mut ticker = tokio::time::interval_at(start + EVERY, EVERY);
        ticker.set_missed_tick_behavior(MissedTickBehavior::Delay);
        let mut count: Option<usize> = None;
        ticker.tick().await;
        loop {
            // List again each round; redraw the elapsed time meanwhile.
            let listing = client.participants(path, kind);
            tokio::pin!(listing);
            loop {
                tokio::select! {
                    list = &mut listing => {
                        if let Ok(list) = list {
                            count = Some(list.len());
                        }
                        break;
                    }
                    _ = ticker.tick() => self.draw(path, kind, count, start.elapsed()),
                }
            }
            self.draw(path, kind, count, start.elapsed());
            ticker.tick().await;
        }
    }

    fn draw(&self, path: &str, kind: ParticipantsOf, count: Option<usize>, elapsed: Duration) {
        let line = render(path, kind, count, elapsed);
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
fn render(path: &str, kind: ParticipantsOf, count: Option<usize>, elapsed: Duration) -> String {
    let secs = elapsed.as_secs_f64();
    match (count, kind) {
        (None, _) => format!("waiting for {path}: {secs:.1}s"),
        (Some(n), ParticipantsOf::Semaphore) => {
            format!("waiting for {path}: {n} lease{} in use, {secs:.1}s", if n == 1 { "" } else { "s" })
        }
        (Some(n), _) => format!("waiting for {path}: {n} in queue, {secs:.1}s"),
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn lines() {
        let t = Duration::from_millis(3240);
        assert_eq!(render("/x", ParticipantsOf::Mutex, None, t), "waiting for /x: 3.2s");
        assert_eq!(render("/x", ParticipantsOf::Mutex, Some(3), t), "waiting for /x: 3 in queue, 3.2s");
        assert_eq!(render("/s", ParticipantsOf::Semaphore, Some(1), t), "waiting for /s: 1 lease in use, 3.2s");
        assert_eq!(render("/s", ParticipantsOf::Semaphore, Some(2), t), "waiting for /s: 2 leases in use, 3.2s");
    }
}
