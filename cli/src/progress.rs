//! What a waiting command shows on stderr.
//!
//! On a terminal (or with `ZOOLOCK_PROGRESS=always`), a progress line
//! `waiting for /x: position 3 of 6 in queue, held by host-a, 3.2s`,
//! rewritten every 250 ms and cleared once the wait ends. Off a terminal
//! (cron, systemd, a pipe), where a rewritten line would be noise, one log
//! line `zoolock: still waiting for /x: position 3 of 6, held by host-a`
//! when the wait starts and again every 30 s, so a stuck job says who it is
//! stuck behind.
//!
//! The position is the one the acquire itself reports
//! ([`zoolock_tokio::Lock::acquire_with_progress`]), taken from the
//! listings it makes anyway. Naming the holder costs a data-less listing
//! of the lock path and a read of the holder's data at the start and every
//! 10 s on a terminal, every 30 s off it, whatever the length of the queue.

use std::cell::{Cell, RefCell};
use std::convert::Infallible;
use std::future::Future;
use std::io::{IsTerminal, Write};
use std::sync::{Arc, Mutex};
use std::time::Duration;

use tokio::time::{Instant, MissedTickBehavior};
use zoolock_tokio::QueuePosition;

/// How often the terminal line is redrawn.
const EVERY: Duration = Duration::from_millis(250);
/// How often the terminal line looks again for the holder.
const LOOK_EVERY: Duration = Duration::from_secs(10);
/// How often the log line is repeated off a terminal.
const LOG_EVERY: Duration = Duration::from_secs(30);
/// How long the first log line waits for the acquire's first position.
const FIRST_LOG_WITHIN: Duration = Duration::from_secs(1);

/// Where the wait is shown.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
enum Mode {
    /// A line rewritten in place.
    Terminal,
    /// A log line at the start and every [`LOG_EVERY`].
    Log,
}

/// What is shown for one wait.
#[derive(Debug)]
pub(crate) struct Progress {
    mode: Mode,
    shown: Cell<bool>,
    /// The acquire's last reported position.
    position: Arc<Mutex<Option<QueuePosition>>>,
    /// Who held the lock at the last look.
    holder: RefCell<Option<String>>,
}

impl Progress {
    /// A progress line when stderr is a terminal or `ZOOLOCK_PROGRESS` is
    /// `always`, log lines otherwise.
    pub(crate) fn new() -> Progress {
        let forced = std::env::var("ZOOLOCK_PROGRESS").is_ok_and(|v| v == "always");
        Progress {
            mode: if forced || std::io::stderr().is_terminal() { Mode::Terminal } else { Mode::Log },
            shown: Cell::new(false),
            position: Arc::new(Mutex::new(None)),
            holder: RefCell::new(None),
        }
    }

    /// What the acquire calls with each new position.
    pub(crate) fn recorder(&self) -> impl FnMut(QueuePosition) + Send + 'static {
        let position = self.position.clone();
        move |q| *position.lock().unwrap_or_else(|e| e.into_inner()) = Some(q)
    }

    fn position(&self) -> Option<QueuePosition> {
        *self.position.lock().unwrap_or_else(|e| e.into_inner())
    }

    /// Shows the wait until dropped; never completes. `look` reads who holds
    /// the lock now (`None`: nobody, or the listing failed). The first
    /// terminal line appears after 250 ms, so a quick grant prints nothing;
    /// the first log line once the acquire has queued (at most 1 s in).
    pub(crate) async fn run<F: Future<Output = Option<String>>>(&self, path: &str, look: impl Fn() -> F) -> Infallible {
        let start = Instant::now();
        let mut ticker = tokio::time::interval_at(start + EVERY, EVERY);
        ticker.set_missed_tick_behavior(MissedTickBehavior::Delay);
        let mut next_look = start;
        let mut next_log = Some(start);
        loop {
            ticker.tick().await;
            let now = Instant::now();
            match self.mode {
                Mode::Terminal => {
                    if now >= next_look {
                        let holder = look().await;
                        *self.holder.borrow_mut() = holder;
                        next_look = Instant::now() + LOOK_EVERY;
                    }
                    let line = render(path, self.position(), self.holder.borrow().as_deref(), start.elapsed());
                    self.draw(&line);
                }
                Mode::Log => {
                    let due = next_log.is_some_and(|at| now >= at);
                    let first_ready = self.position().is_some() || now >= start + FIRST_LOG_WITHIN;
                    if due && first_ready {
                        let holder = look().await;
                        eprintln!("zoolock: {}", still_waiting(path, self.position(), holder.as_deref()));
                        next_log = Some(now + LOG_EVERY);
                    }
                }
            }
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

/// The terminal line's text.
fn render(path: &str, position: Option<QueuePosition>, holder: Option<&str>, elapsed: Duration) -> String {
    let secs = elapsed.as_secs_f64();
    let held = holder.map(|h| format!("held by {h}, ")).unwrap_or_default();
    match position {
        None => format!("waiting for {path}: {held}{secs:.1}s"),
        Some(q) => format!("waiting for {path}: position {} of {} in queue, {held}{secs:.1}s", q.position, q.total),
    }
}

/// The log line's text.
fn still_waiting(path: &str, position: Option<QueuePosition>, holder: Option<&str>) -> String {
    let mut line = format!("still waiting for {path}");
    if let Some(q) = position {
        line += &format!(": position {} of {}", q.position, q.total);
    }
    if let Some(holder) = holder {
        line += &format!(", held by {holder}");
    }
    line
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn lines() {
        let t = Duration::from_millis(3240);
        assert_eq!(render("/x", None, None, t), "waiting for /x: 3.2s");
        let progress = Progress::new();
        let mut record = progress.recorder();
        record(QueuePosition::new(3, 6));
        let q = progress.position();
        assert_eq!(render("/x", q, None, t), "waiting for /x: position 3 of 6 in queue, 3.2s");
        assert_eq!(
            render("/x", q, Some("host-a"), t),
            "waiting for /x: position 3 of 6 in queue, held by host-a, 3.2s"
        );
        assert_eq!(still_waiting("/x", q, Some("host-a")), "still waiting for /x: position 3 of 6, held by host-a");
        assert_eq!(still_waiting("/x", None, None), "still waiting for /x");
    }
}
