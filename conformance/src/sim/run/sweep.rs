//! Many seeds at once, on threads, with their reports summed.

use super::*;

/// The outcome of [`sweep`].
#[derive(Debug, Clone, Default)]
#[non_exhaustive]
pub struct SweepOutcome {
    /// Runs made.
    pub runs: u64,
    /// The failed runs, sorted by seed.
    pub failures: Vec<SimFailure>,
    /// The passed runs' reports, summed.
    pub totals: SimReport,
}

/// Runs `count` seeds from `start` on `threads` threads.
pub fn sweep(start: u64, count: u64, threads: usize) -> SweepOutcome {
    let next = std::sync::atomic::AtomicU64::new(start);
    let outcome = std::sync::Mutex::new(SweepOutcome::default());
    std::thread::scope(|s| {
        for _ in 0..threads.max(1) {
            s.spawn(|| {
                loop {
                    let seed = next.fetch_add(1, std::sync::atomic::Ordering::Relaxed);
                    if seed >= start.saturating_add(count) {
                        break;
                    }
                    let result = run_seed(seed);
                    let mut out = outcome.lock().unwrap_or_else(|e| e.into_inner());
                    out.runs += 1;
                    match result {
                        Ok(r) => {
                            let t = &mut out.totals;
                            t.steps += r.steps;
                            t.holds += r.holds;
                            t.faults += r.faults;
                            t.unsuccessful += r.unsuccessful;
                            t.restarts += r.restarts;
                            t.resizes += r.resizes;
                            t.revocations += r.revocations;
                            t.outside_deletes += r.outside_deletes;
                            t.expiries += r.expiries;
                            t.requeues += r.requeues;
                            t.isolations += r.isolations;
                            t.freezes += r.freezes;
                            t.resumed_holding += r.resumed_holding;
                            t.held_isolated += r.held_isolated;
                            t.lease_saves += r.lease_saves;
                            t.quorum_drops += r.quorum_drops;
                        }
                        Err(f) => out.failures.push(f),
                    }
                }
            });
        }
    });
    let mut outcome = outcome.into_inner().unwrap_or_else(|e| e.into_inner());
    outcome.failures.sort_by_key(|f| f.seed);
    outcome
}
