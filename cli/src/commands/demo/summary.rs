//! The summary printed at the end: a table of acquisitions and wait times,
//! then one line per check, then the verdict.
//!
//! Every check is a claim the recipes make (exclusion, FIFO grants,
//! increasing fencing tokens, no leaked nodes), measured from what the
//! workers saw; the demo exits 1 if any fails.

use std::time::Duration;

use super::board::{RECIPES, Role, Tally};
use zoolock_tokio::LockKind;

/// Below this many grants per worker on average, fairness is not judged:
/// a short or interrupted run says too little.
const FAIRNESS_MIN_MEAN: f64 = 10.0;
/// The most the busiest mutex worker may get over the least busy one. FIFO
/// grants make the mutex a round robin, so counts differ by about one.
const MUTEX_MAX_RATIO: f64 = 1.5;

/// What the run produced, besides the board.
#[derive(Debug)]
pub(crate) struct Run {
    /// Which server, in words.
    pub(crate) server: String,
    /// The run's base path.
    pub(crate) base: String,
    /// How long the workers ran.
    pub(crate) elapsed: Duration,
    /// Stopped early by a signal.
    pub(crate) interrupted: bool,
    /// Nodes left under the base path after every worker closed, or why
    /// they could not be listed.
    pub(crate) leftovers: Result<Vec<String>, String>,
    /// Problems outside any worker (a worker that would not stop).
    pub(crate) problems: Vec<String>,
}

/// One check's outcome: passed, failed, or not judged (`None`).
#[derive(Debug, Clone, PartialEq)]
struct Check {
    ok: Option<bool>,
    what: &'static str,
    detail: String,
}

impl Check {
    fn new(ok: bool, what: &'static str, detail: String) -> Check {
        Check { ok: Some(ok), what, detail }
    }
}

/// The summary's lines and whether every check passed.
#[derive(Debug)]
pub(crate) struct Report {
    /// What to print, one line each.
    pub(crate) lines: Vec<String>,
    /// True if no check failed.
    pub(crate) pass: bool,
}

/// Builds the summary.
pub(crate) fn report(tallies: &[Tally; 3], run: &Run) -> Report {
    let mut lines = vec![
        format!(
            "zoolock demo: {:.1}s{} against {}",
            run.elapsed.as_secs_f64(),
            if run.interrupted { " (stopped early)" } else { "" },
            run.server
        ),
        format!("base path {}", run.base),
        String::new(),
    ];
    lines.extend(table(tallies, run.elapsed));
    lines.push(String::new());
    let checks = checks(tallies, run);
    let failed: Vec<&str> = checks.iter().filter(|c| c.ok == Some(false)).map(|c| c.what).collect();
    lines.push("checks".to_owned());
    for c in &checks {
        let mark = match c.ok {
            Some(true) => "ok  ",
            Some(false) => "FAIL",
            None => "skip",
        };
        lines.push(format!("  {mark}  {}: {}", c.what, c.detail));
    }
    if let Ok(nodes) = &run.leftovers {
        lines.extend(nodes.iter().take(10).map(|n| format!("          left: {n}")));
    }
    lines.extend(tallies.iter().flat_map(|t| t.errors.iter()).chain(&run.problems).map(|e| format!("  error: {e}")));
    lines.push(String::new());
    let judged = checks.iter().filter(|c| c.ok.is_some()).count();
    lines.push(if failed.is_empty() {
        format!("verdict: PASS ({judged} of {judged} checks passed)")
    } else {
        format!("verdict: FAIL ({} of {judged} checks failed: {})", failed.len(), failed.join(", "))
    });
    Report { lines, pass: failed.is_empty() }
}

/// The acquisitions and wait-time table, one row per role.
fn table(tallies: &[Tally; 3], elapsed: Duration) -> Vec<String> {
    let mut lines = vec![format!(
        "{:<22} {:>7} {:>9} {:>8}  {:>8} {:>8} {:>8} {:>8}  {}",
        "wait for the lock", "workers", "acquired", "per s", "p50", "p90", "p99", "max", "per worker min-max"
    )];
    let secs = elapsed.as_secs_f64().max(1e-3);
    for (recipe, tally) in RECIPES.into_iter().zip(tallies) {
        for (role, waits) in roles(tally) {
            let counts = counts(tally, role);
            let label = match recipe {
                LockKind::Semaphore => format!("{} ({} leases)", role.label(), tally.leases),
                _ => role.label().to_owned(),
            };
            let mut sorted = waits.to_vec();
            sorted.sort_unstable();
            let pct = |p| percentile(&sorted, p).map_or_else(|| "-".to_owned(), format_duration);
            let spread = match (counts.iter().min(), counts.iter().max()) {
                (Some(min), Some(max)) => format!("{min}-{max}"),
                _ => "-".to_owned(),
            };
            lines.push(format!(
                "{label:<22} {:>7} {:>9} {:>8.1}  {:>8} {:>8} {:>8} {:>8}  {spread}",
                counts.len(),
                waits.len(),
                waits.len() as f64 / secs,
                pct(50.0),
                pct(90.0),
                pct(99.0),
                pct(100.0),
            ));
        }
    }
    lines
}

/// Each role that has workers on this recipe, with its waits.
fn roles(tally: &Tally) -> Vec<(Role, &[Duration])> {
    let mut roles: Vec<Role> = tally.per_worker.values().map(|(role, _)| *role).collect();
    roles.sort();
    roles.dedup();
    roles.into_iter().map(|r| (r, tally.waits.get(&r).map_or(&[][..], |w| &w[..]))).collect()
}

/// Grants per worker of one role.
fn counts(tally: &Tally, role: Role) -> Vec<u64> {
    tally.per_worker.values().filter(|(r, _)| *r == role).map(|(_, n)| *n).collect()
}

fn checks(tallies: &[Tally; 3], run: &Run) -> Vec<Check> {
    let [mutex, rw, sem] = tallies;
    let mut checks = vec![
        Check::new(
            mutex.overlaps == 0,
            "mutex exclusion",
            format!("{} overlapping holds, at most {} holder at once", mutex.overlaps, mutex.max_concurrent),
        ),
        Check::new(
            rw.overlaps == 0,
            "rwlock exclusion",
            format!("{} grants beside a writer, or of a writer beside anyone", rw.overlaps),
        ),
        Check::new(
            sem.overlaps == 0 && sem.max_concurrent <= sem.leases,
            "semaphore exclusion",
            format!("at most {} of {} leases held at once", sem.max_concurrent, sem.leases),
        ),
        Check::new(
            mutex.fifo_violations == 0 && rw.fifo_violations == 0,
            "FIFO",
            format!(
                "{} mutex and {} writer grants out of lock-node sequence order",
                mutex.fifo_violations, rw.fifo_violations
            ),
        ),
        Check::new(
            mutex.token_regressions == 0 && rw.token_regressions == 0,
            "fencing tokens",
            format!(
                "strictly increasing across {} mutex and {} writer holds ({} not)",
                mutex.ordered_grants,
                rw.ordered_grants,
                mutex.token_regressions + rw.token_regressions
            ),
        ),
    ];
    let (accepted, rejected) =
        (mutex.resource.accepted + rw.resource.accepted, mutex.resource.rejected + rw.resource.rejected);
    checks.push(Check::new(
        rejected == 0,
        "fenced writes",
        format!("{rejected} of {} writes rejected for a stale token", accepted + rejected),
    ));
    checks.push(fairness(tallies));
    let errors = tallies.iter().map(|t| t.errors.len()).sum::<usize>() + run.problems.len();
    checks.push(Check::new(errors == 0, "worker errors", errors.to_string()));
    checks.push(match &run.leftovers {
        Ok(nodes) => Check::new(
            nodes.is_empty(),
            "leftover nodes",
            format!("{} under the base path after every client closed", nodes.len()),
        ),
        Err(e) => Check::new(false, "leftover nodes", format!("unknown, the listing failed: {e}")),
    });
    checks
}

/// Nobody starves, and the mutex's FIFO queue shares it evenly.
fn fairness(tallies: &[Tally; 3]) -> Check {
    let workers: usize = tallies.iter().map(|t| t.per_worker.len()).sum();
    let grants: u64 = tallies.iter().map(|t| t.acquisitions).sum();
    let mutex = counts(&tallies[0], Role::Mutex);
    let (min, max) = (mutex.iter().min().copied().unwrap_or(0), mutex.iter().max().copied().unwrap_or(0));
    let ratio = if min == 0 { f64::INFINITY } else { max as f64 / min as f64 };
    let detail = format!("mutex grants per worker {min}-{max} (max/min {ratio:.2}, limit {MUTEX_MAX_RATIO})");
    if workers == 0 || (grants as f64) / (workers as f64) < FAIRNESS_MIN_MEAN {
        return Check { ok: None, what: "fairness", detail: format!("too few grants to judge; {detail}") };
    }
    let starved: Vec<&str> =
        tallies.iter().flat_map(|t| &t.per_worker).filter(|(_, (_, n))| *n == 0).map(|(w, _)| w.as_str()).collect();
    if !starved.is_empty() {
        return Check::new(false, "fairness", format!("never granted: {}; {detail}", starved.join(" ")));
    }
    Check::new(mutex.is_empty() || ratio <= MUTEX_MAX_RATIO, "fairness", format!("every worker granted; {detail}"))
}

/// The nearest-rank percentile `p` (0-100] of sorted samples.
fn percentile(sorted: &[Duration], p: f64) -> Option<Duration> {
    if sorted.is_empty() {
        return None;
    }
    let rank = ((p / 100.0) * sorted.len() as f64).ceil() as usize;
    sorted.get(rank.clamp(1, sorted.len()) - 1).copied()
}

/// `850µs`, `36.1ms`, `2.40s`.
fn format_duration(d: Duration) -> String {
    if d < Duration::from_millis(1) {
        format!("{}µs", d.as_micros())
    } else if d < Duration::from_secs(1) {
        format!("{:.1}ms", d.as_secs_f64() * 1e3)
    } else {
        format!("{:.2}s", d.as_secs_f64())
    }
}

#[cfg(test)]
mod tests {
    use super::super::board::{Board, WorkerId};
    use super::*;

    const MS: Duration = Duration::from_millis(1);

    #[test]
    fn percentiles() {
        let v: Vec<Duration> = (1..=100).map(|n| MS * n).collect();
        assert_eq!(percentile(&v, 50.0), Some(MS * 50));
        assert_eq!(percentile(&v, 99.0), Some(MS * 99));
        assert_eq!(percentile(&v, 100.0), Some(MS * 100));
        assert_eq!(percentile(&v[..1], 50.0), Some(MS));
        assert_eq!(percentile(&[], 50.0), None);
    }

    #[test]
    fn durations() {
        assert_eq!(format_duration(Duration::from_micros(850)), "850µs");
        assert_eq!(format_duration(Duration::from_micros(36_140)), "36.1ms");
        assert_eq!(format_duration(Duration::from_millis(2400)), "2.40s");
    }

    fn run(leftovers: Result<Vec<String>, String>) -> Run {
        Run {
            server: "test".into(),
            base: "/zoolock-demo/1-2".into(),
            elapsed: Duration::from_secs(2),
            interrupted: false,
            leftovers,
            problems: Vec::new(),
        }
    }

    /// Two mutex workers taking turns `rounds` times each.
    fn board(rounds: u32) -> Board {
        let ws: Vec<WorkerId> = (1..=2).map(|n| WorkerId { role: Role::Mutex, name: format!("m{n}") }).collect();
        let board = Board::new(2, &ws);
        for i in 0..rounds * 2 {
            let w = &ws[(i % 2) as usize];
            board.granted(w, MS, i64::from(i) + 100, &format!("/b/mutex/_c_x-lock-{i:010}"));
            board.releasing(w);
        }
        board
    }

    #[test]
    fn clean_run_passes() {
        let r = report(&board(20).tallies(), &run(Ok(vec![])));
        let text = r.lines.join("\n");
        assert!(r.pass, "{text}");
        assert!(text.contains("ok    leftover nodes: 0 under"), "{text}");
        assert!(text.contains("ok    fairness: every worker granted"), "{text}");
        assert!(text.ends_with("verdict: PASS (9 of 9 checks passed)"), "{text}");
    }

    #[test]
    fn leftovers_and_short_runs() {
        let r = report(&board(2).tallies(), &run(Ok(vec!["/zoolock-demo/1-2/mutex/x".into()])));
        let text = r.lines.join("\n");
        assert!(!r.pass);
        assert!(text.contains("skip  fairness: too few grants"), "{text}");
        assert!(text.contains("left: /zoolock-demo/1-2/mutex/x"), "{text}");
        assert!(text.ends_with("verdict: FAIL (1 of 8 checks failed: leftover nodes)"), "{text}");
        assert!(!report(&board(20).tallies(), &run(Err("closed".into()))).pass);
    }
}
