//! The oracle of every scenario: exclusion among holders that were not
//! told, fencing-token order, stale writes, stalls and leaked nodes.

use std::collections::BTreeMap;
use std::time::Duration;

use crate::harness::Ensemble;
use crate::workload::{Run, Section, Write};
use crate::{SESSION, STALL_US};
use zoolock_tokio::{ConnectionState, Error, Options};

#[derive(Debug, Default)]
pub(crate) struct Analysis {
    pub(crate) cycles: usize,
    pub(crate) per_sec: f64,
    pub(crate) stalls: usize,
    /// Each stall: when it began (ms into the run) and how long it lasted (ms).
    pub(crate) stall_list: Vec<(f64, f64)>,
    pub(crate) longest_gap_us: i64,
    /// Overlaps among sections never told Suspended/Lost (must be none).
    pub(crate) overlaps: Vec<String>,
    /// Overlaps counting each section until it stopped acting (abandoned
    /// ones until they were told): reported, not required.
    pub(crate) overlaps_incl_abandoned: usize,
    pub(crate) token_inversions: Vec<String>,
    /// Writes a fencing resource rejected (token below one it had seen).
    pub(crate) stale_writes: Vec<Write>,
    /// Those of them made before their writer had been told Suspended/Lost:
    /// exclusion broken among holders that were not told (fencing caught it).
    pub(crate) untold_stale_writes: Vec<Write>,
    pub(crate) abandoned: usize,
    pub(crate) transitions: BTreeMap<String, usize>,
}

pub(crate) fn analyse(run: &Run, extra_sections: &[Section], extra_writes: &[Write]) -> Analysis {
    let log = run.log();
    let mut sections: Vec<Section> = log.sections.iter().chain(extra_sections).cloned().collect();
    sections.sort_by_key(|s| s.enter);
    let mut a = Analysis { cycles: sections.len(), ..Analysis::default() };
    let secs = (run.deadline - run.start) as f64 / 1e6;
    a.per_sec = a.cycles as f64 / secs;
    a.abandoned = sections.iter().filter(|s| s.abandoned.is_some()).count();

    // Exclusion among sections never told to stop.
    let mut latest: Option<&Section> = None;
    for s in sections.iter().filter(|s| s.abandoned.is_none()) {
        if let Some(p) = latest {
            if s.enter < p.exit {
                a.overlaps.push(format!(
                    "{} [{:.1}, {:.1}] token {} overlaps {} [{:.1}, {:.1}] token {}",
                    s.who,
                    run.ms(s.enter),
                    run.ms(s.exit),
                    s.token,
                    p.who,
                    run.ms(p.enter),
                    run.ms(p.exit),
                    p.token
                ));
            }
        }
        if latest.is_none_or(|p| s.exit > p.exit) {
            latest = Some(s);
        }
    }
    // The same counting abandoned sections until they stopped; gaps and stalls.
    let mut max_exit: Option<i64> = None;
    for s in &sections {
        if let Some(m) = max_exit {
            if s.enter < m {
                a.overlaps_incl_abandoned += 1;
            } else {
                let gap = s.enter - m;
                a.longest_gap_us = a.longest_gap_us.max(gap);
                if gap > STALL_US {
                    a.stalls += 1;
                    a.stall_list.push((run.ms(m), gap as f64 / 1000.0));
                }
            }
        }
        max_exit = Some(max_exit.map_or(s.exit, |m| m.max(s.exit)));
    }
    // Fencing tokens strictly increase in enter order.
    for w in sections.windows(2) {
        if w[1].token <= w[0].token {
            a.token_inversions.push(format!(
                "{} token {} at {:.1} ms after {} token {} at {:.1} ms",
                w[1].who,
                w[1].token,
                run.ms(w[1].enter),
                w[0].who,
                w[0].token,
                run.ms(w[0].enter)
            ));
        }
    }
    // Replay every write against a resource that rejects lower tokens.
    let mut writes: Vec<Write> = log.writes.iter().chain(extra_writes).cloned().collect();
    writes.sort_by_key(|w| w.at);
    let mut max_token = i64::MIN;
    for w in writes {
        if w.token < max_token {
            a.stale_writes.push(w);
        } else {
            max_token = w.token;
        }
    }
    a.untold_stale_writes = a
        .stale_writes
        .iter()
        .filter(|w| {
            let told = sections.iter().find(|s| s.who == w.who && s.token == w.token).and_then(|s| s.abandoned);
            told.is_none_or(|(t, _)| w.at < t)
        })
        .cloned()
        .collect();
    for (_, _, state) in &log.transitions {
        *a.transitions.entry(format!("{state:?}")).or_default() += 1;
    }
    a
}

pub(crate) fn summary(name: &str, a: &Analysis) -> String {
    let t = |k: &str| a.transitions.get(k).copied().unwrap_or(0);
    format!(
        "scenario {name}: cycles {} ({:.1}/s), stalls {} (longest gap {} ms), transitions {{Suspended: {}, Reconnected: {}, Lost: {}}}",
        a.cycles,
        a.per_sec,
        a.stalls,
        a.longest_gap_us / 1000,
        t("Suspended"),
        t("Reconnected"),
        t("Lost")
    )
}

/// Checks what every scenario must satisfy, printing the details first.
pub(crate) fn check_common(name: &str, run: &Run, a: &Analysis) {
    let log = run.log();
    println!("{}", summary(name, a));
    println!(
        "  {name}: seed {:#x}, abandoned {}, overlaps incl. abandoned {}, stale writes rejected by fencing {} ({} before the writer was told), new sessions {}, errors {}",
        run.seed,
        a.abandoned,
        a.overlaps_incl_abandoned,
        a.stale_writes.len(),
        a.untold_stale_writes.len(),
        log.new_sessions,
        log.errors.len()
    );
    for (at, len) in &a.stall_list {
        println!("  {name}: stall from {at:.1} ms for {len:.1} ms");
    }
    for (t, who, e) in log.errors.iter().take(10) {
        println!("  {name}: error at {:.1} ms {who}: {e}", run.ms(*t));
    }
    for (t, who, s) in log.transitions.iter().filter(|(_, _, s)| *s != ConnectionState::Connected) {
        println!("  {name}: {:.1} ms {who} {s:?}", run.ms(*t));
    }
    assert!(a.overlaps.is_empty(), "{name}: exclusion broken among holders not told Suspended/Lost: {:#?}", a.overlaps);
    assert!(a.token_inversions.is_empty(), "{name}: fencing tokens not increasing: {:#?}", a.token_inversions);
}

/// Waits until the lock path has no children (or does not exist); panics
/// after `limit`. Returns how long it took.
pub(crate) async fn assert_no_leak(ens: &Ensemble, name: &str, path: &str, limit: Duration) -> Duration {
    let started = std::time::Instant::now();
    let client = zoolock_tokio::connect(&ens.connect, Options::default().session_timeout(SESSION))
        .await
        .unwrap_or_else(|e| panic!("{name}: leak check cannot connect: {e}"));
    let mut last = Vec::new();
    while started.elapsed() < limit {
        match client.get_children(path).await {
            Ok((children, _)) if children.is_empty() => {
                let _ = client.close().await;
                println!(
                    "  {name}: no lock nodes left ({} ms after the clients closed)",
                    started.elapsed().as_millis()
                );
                return started.elapsed();
            }
            Ok((children, _)) => last = children,
            Err(Error::Request(zoolock_tokio::RequestError::Server(code)))
                if code == zoolock_tokio::ErrorCode::NO_NODE =>
            {
                let _ = client.close().await;
                return started.elapsed();
            }
            Err(e) => println!("  {name}: leak check: {e}"),
        }
        tokio::time::sleep(Duration::from_millis(100)).await;
    }
    let _ = client.close().await;
    panic!("{name}: lock nodes leaked under {path} after {limit:?}: {last:?}");
}

/// Liveness after a fault, with no user code for it: each of the `clients`
/// workers (`c0`, `c1`, ...) held the lock (a section never told to stop)
/// that began after `after`, and then released it.
pub(crate) fn assert_every_client_cycles(name: &str, run: &Run, clients: usize, after: i64) {
    let log = run.log();
    for i in 0..clients {
        let who = format!("c{i}");
        let entered = log.sections.iter().filter(|s| s.who == who && s.enter > after && s.abandoned.is_none());
        let first = entered.map(|s| s.enter).min();
        let released = first.is_some_and(|t| log.releases.iter().any(|(at, w)| *w == who && *at > t));
        assert!(
            first.is_some() && released,
            "{name}: {who} did not hold and release the lock again after {:.1} ms (held: {}, released: {released})",
            run.ms(after),
            first.is_some()
        );
    }
    println!("  {name}: every client held and released again after {:.1} ms", run.ms(after));
}
