//! The live progress on stderr: per recipe, who holds it, how many queue,
//! acquisitions so far and per second.
//!
//! On a terminal a block of lines is redrawn 4 times a second and erased at
//! the end (the summary follows on stdout). Otherwise (a log, a pipe) one
//! plain line is printed each second, so the output reads as a history.
//!
//! Holders and counts come from the workers' board; the queue comes from
//! the server: the participants of each queue path, listed by the monitor
//! client, minus the holders. Each worker's name is its lock node data, so
//! a holder whose node is still there (a semaphore lease holder deleting its
//! internal mutex node) is not counted as waiting.

use std::collections::VecDeque;
use std::io::{IsTerminal, Write};
use std::sync::Arc;
use std::time::{Duration, Instant};

use tokio::sync::watch;
use tokio::time::MissedTickBehavior;
use zoolock_tokio::{Client, LockKind};

use super::board::{Board, Live, RECIPES};
use super::tree::Tree;
use super::workers::stopped;

/// Redraw interval on a terminal.
const TTY_EVERY: Duration = Duration::from_millis(250);
/// Line interval otherwise.
const PLAIN_EVERY: Duration = Duration::from_secs(1);
/// The acquisitions/s figure is averaged over this much recent time.
const RATE_WINDOW: Duration = Duration::from_secs(1);

/// One recipe's row at one moment.
#[derive(Debug, Clone, PartialEq)]
struct Row {
    recipe: LockKind,
    live: Live,
    /// Waiting participants, `None` if the listing failed.
    queue: Option<usize>,
    /// Acquisitions per second over the last [`RATE_WINDOW`].
    rate: f64,
}

/// Shows progress until `stop`, then erases what it drew.
pub(crate) async fn run(
    board: Arc<Board>,
    monitor: Client,
    tree: Tree,
    duration: Duration,
    mut stop: watch::Receiver<bool>,
) {
    let tty = std::io::stderr().is_terminal();
    let every = if tty { TTY_EVERY } else { PLAIN_EVERY };
    let start = Instant::now();
    let mut ticker = tokio::time::interval_at(tokio::time::Instant::now() + every, every);
    ticker.set_missed_tick_behavior(MissedTickBehavior::Delay);
    // Counting from zero at the start gives the first line a rate too.
    let mut history: VecDeque<(Instant, [u64; 3])> = VecDeque::from([(start, [0; 3])]);
    let mut drawn = 0;
    // The holders column only grows, so the other columns stay put.
    let mut width = 7;
    loop {
        tokio::select! {
            biased;
            () = stopped(&mut stop) => break,
            _ = ticker.tick() => {}
        }
        // A listing slower than a tick must not hold up the stop.
        let queues = tokio::select! {
            biased;
            () = stopped(&mut stop) => break,
            queues = list(&monitor, &tree) => queues,
        };
        let now = Instant::now();
        let live = board.live();
        let counts = live.each_ref().map(|l| l.acquisitions);
        history.push_back((now, counts));
        while history.len() > 2 && history.get(1).is_some_and(|(t, _)| now.duration_since(*t) >= RATE_WINDOW) {
            history.pop_front();
        }
        let rows: Vec<Row> = RECIPES
            .into_iter()
            .zip(live)
            .zip(queues)
            .enumerate()
            .map(|(i, ((recipe, live), listed))| Row {
                recipe,
                queue: listed.map(|names| queued(&names, &live.holders)),
                rate: rate(&history, i),
                live,
            })
            .collect();
        let elapsed = start.elapsed();
        let mut err = std::io::stderr().lock();
        if tty {
            let block = render_block(&rows, elapsed, duration, &mut width);
            let _ = write!(err, "{}{}", erase(drawn), block.join("\n"));
            // Leave the cursor at the end of the last line, so a redraw only
            // has to go back up.
            drawn = block.len();
        } else {
            let _ = writeln!(err, "{}", render_plain(&rows, elapsed));
        }
        let _ = err.flush();
    }
    if tty && drawn > 0 {
        let mut err = std::io::stderr().lock();
        let _ = write!(err, "{}", erase(drawn));
        let _ = err.flush();
    }
}

/// The waiters: participants whose owner (by node data) holds nothing.
/// A node that vanished before its data was read has ended its wait.
fn queued(participants: &[Option<String>], holders: &[String]) -> usize {
    participants.iter().flatten().filter(|owner| !holders.contains(owner)).count()
}

/// The owners of each recipe's queue path's participants (`None`: the
/// listing failed; an inner `None`: that node vanished meanwhile). The
/// semaphore's queue is its internal mutex, where lease waiters line up.
async fn list(monitor: &Client, tree: &Tree) -> [Option<Vec<Option<String>>>; 3] {
    let mut queues = [None, None, None];
    for (queue, recipe) in queues.iter_mut().zip(RECIPES) {
        let kind = if recipe == LockKind::Semaphore { LockKind::Mutex } else { recipe };
        *queue =
            monitor.participants(&tree.queue_path(recipe), kind).await.ok().map(|list| {
                list.into_iter().map(|p| p.data.map(|d| String::from_utf8_lossy(&d).into_owned())).collect()
            });
    }
    queues
}

/// Moves from the end of a block of `lines` lines to its start and erases
/// it (nothing for 0 lines).
fn erase(lines: usize) -> String {
    match lines {
        0 => String::new(),
        1 => "\r\x1b[J".to_owned(),
        n => format!("\x1b[{}A\r\x1b[J", n - 1),
    }
}

/// Acquisitions per second of recipe `i` across the history window.
fn rate(history: &VecDeque<(Instant, [u64; 3])>, i: usize) -> f64 {
    match (history.front(), history.back()) {
        (Some((t0, c0)), Some((t1, c1))) if t1 > t0 => {
            c1[i].saturating_sub(c0[i]) as f64 / t1.duration_since(*t0).as_secs_f64()
        }
        _ => 0.0,
    }
}

/// `m1 m3`, or `-` for nobody.
fn holders(live: &Live) -> String {
    if live.holders.is_empty() { "-".to_owned() } else { live.holders.join(" ") }
}

fn queue(q: Option<usize>) -> String {
    q.map_or_else(|| "?".to_owned(), |n| n.to_string())
}

/// The terminal block: a header and one aligned line per recipe; the
/// holders column is at least `width` wide, and `width` grows to fit.
fn render_block(rows: &[Row], elapsed: Duration, duration: Duration, width: &mut usize) -> Vec<String> {
    let mut lines = vec![format!(
        "zoolock demo  {:.1}s / {:.0}s  (Ctrl-C stops early)",
        elapsed.as_secs_f64(),
        duration.as_secs_f64()
    )];
    *width = rows.iter().map(|r| holders(&r.live).len()).fold(*width, usize::max);
    let width = *width;
    for r in rows {
        lines.push(format!(
            "  {:<10} held by {:<width$}  queue {:>3}  acquired {:>7}  {:>7.1}/s",
            r.recipe.label(),
            holders(&r.live),
            queue(r.queue),
            r.live.acquisitions,
            r.rate,
        ));
    }
    lines
}

/// The one-line form for logs and pipes.
fn render_plain(rows: &[Row], elapsed: Duration) -> String {
    let parts: Vec<String> = rows
        .iter()
        .map(|r| {
            format!(
                "{} held by {}, queue {}, {} acquired, {:.1}/s",
                r.recipe.label(),
                holders(&r.live),
                queue(r.queue),
                r.live.acquisitions,
                r.rate
            )
        })
        .collect();
    format!("[{:>5.1}s] {}", elapsed.as_secs_f64(), parts.join(" | "))
}

#[cfg(test)]
mod tests {
    use super::*;

    fn rows() -> Vec<Row> {
        let live = |h: &[&str], n| Live { holders: h.iter().map(|s| s.to_string()).collect(), acquisitions: n };
        vec![
            Row { recipe: LockKind::Mutex, live: live(&["m2"], 412), queue: Some(3), rate: 81.25 },
            Row { recipe: LockKind::ReadWriteLock, live: live(&["r1", "r3"], 900), queue: None, rate: 0.0 },
            Row { recipe: LockKind::Semaphore, live: live(&[], 5), queue: Some(0), rate: 2.0 },
        ]
    }

    #[test]
    fn plain_line() {
        assert_eq!(
            render_plain(&rows(), Duration::from_millis(3040)),
            "[  3.0s] mutex held by m2, queue 3, 412 acquired, 81.2/s | \
             rwlock held by r1 r3, queue ?, 900 acquired, 0.0/s | \
             semaphore held by -, queue 0, 5 acquired, 2.0/s"
        );
    }

    #[test]
    fn block() {
        let mut width = 7;
        let block = render_block(&rows(), Duration::from_millis(3040), Duration::from_secs(10), &mut width);
        assert_eq!(width, 7);
        assert_eq!(block[0], "zoolock demo  3.0s / 10s  (Ctrl-C stops early)");
        assert_eq!(block[1], "  mutex      held by m2       queue   3  acquired     412     81.2/s");
        assert_eq!(block.len(), 4);
    }

    #[test]
    fn queue_lengths() {
        let names = |v: &[&str]| v.iter().map(|s| Some(s.to_string())).collect::<Vec<_>>();
        let holders = ["m1".to_owned()];
        assert_eq!(queued(&names(&["m1", "m2", "m3"]), &holders), 2);
        assert_eq!(queued(&[None, Some("m2".into())], &holders), 1);
        assert_eq!(queued(&[], &holders), 0);
    }

    #[test]
    fn erasing() {
        assert_eq!(erase(0), "");
        assert_eq!(erase(1), "\r\x1b[J");
        assert_eq!(erase(4), "\x1b[3A\r\x1b[J");
    }

    #[test]
    fn rate_over_window() {
        let t0 = Instant::now();
        let mut h = VecDeque::new();
        assert_eq!(rate(&h, 0), 0.0);
        h.push_back((t0, [0, 10, 0]));
        h.push_back((t0 + Duration::from_millis(500), [50, 10, 0]));
        assert!((rate(&h, 0) - 100.0).abs() < 1e-9);
        assert_eq!(rate(&h, 1), 0.0);
    }
}
