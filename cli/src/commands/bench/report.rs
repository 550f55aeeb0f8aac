//! A bench result: ordered fields, printed as one JSON line or as text.
//!
//! The JSON is written by hand: every key is a fixed identifier and every
//! value a number or a fixed word, so no escaping is needed and the CLI
//! needs no JSON dependency.

use std::fmt::Write;
use std::time::Duration;

/// One value in the report.
#[derive(Debug, Clone)]
enum Value {
    Int(u64),
    Float(f64),
    Word(&'static str),
}

/// The fields of a run, in output order.
#[derive(Debug)]
pub(super) struct Report {
    fields: Vec<(&'static str, Value)>,
}

/// Keys whose nonzero value fails the run (exit 1).
const VIOLATION_KEYS: &[&str] = &["fencing_violations", "overlap_violations", "fifo_violations", "leftover_nodes"];

impl Report {
    /// A report for `workload`, from zoolock.
    pub(super) fn new(workload: &'static str) -> Report {
        let mut r = Report { fields: Vec::new() };
        r.add_word("impl", "zoolock");
        r.add_word("workload", workload);
        r
    }

    /// Adds (or replaces) an integer field.
    pub(super) fn add_int(&mut self, key: &'static str, value: u64) {
        self.set(key, Value::Int(value));
    }

    /// Adds (or replaces) a fixed-word field.
    pub(super) fn add_word(&mut self, key: &'static str, value: &'static str) {
        self.set(key, Value::Word(value));
    }

    /// Adds (or replaces) a decimal field.
    pub(super) fn add_float(&mut self, key: &'static str, value: f64) {
        self.set(key, Value::Float(value));
    }

    fn set(&mut self, key: &'static str, value: Value) {
        match self.fields.iter_mut().find(|(k, _)| *k == key) {
            Some(slot) => slot.1 = value,
            None => self.fields.push((key, value)),
        }
    }

    /// `seconds`, `cycles_per_sec`, `p50_us` and `p99_us` from `cycles`
    /// done in `elapsed` with per-cycle `samples` (µs; sorted here).
    pub(super) fn add_timing(&mut self, cycles: u64, elapsed: Duration, samples: &mut [u64]) {
        let secs = elapsed.as_secs_f64();
        self.add_float("seconds", secs);
        let rate = if secs > 0.0 { cycles as f64 / secs } else { 0.0 };
        self.add_float("cycles_per_sec", rate);
        samples.sort_unstable();
        self.add_int("p50_us", percentile(samples, 50));
        self.add_int("p99_us", percentile(samples, 99));
    }

    /// The sum of the violation counters (0 for a clean run).
    pub(super) fn violations(&self) -> u64 {
        self.fields
            .iter()
            .filter(|(k, _)| VIOLATION_KEYS.contains(k))
            .map(|(_, v)| if let Value::Int(n) = v { *n } else { 0 })
            .sum()
    }

    /// One JSON object on one line.
    pub(super) fn json(&self) -> String {
        let mut out = String::from("{");
        for (i, (key, value)) in self.fields.iter().enumerate() {
            if i > 0 {
                out.push(',');
            }
            let _ = write!(out, "\"{key}\":");
            match value {
                Value::Int(n) => {
                    let _ = write!(out, "{n}");
                }
                // Finite by construction; JSON has no NaN, so guard anyway.
                Value::Float(x) if x.is_finite() => {
                    let _ = write!(out, "{x:.3}");
                }
                Value::Float(_) => out.push('0'),
                Value::Word(w) => {
                    let _ = write!(out, "\"{w}\"");
                }
            }
        }
        out.push('}');
        out
    }

    /// A short human-readable summary (ends with a newline).
    pub(super) fn text(&self) -> String {
        let mut out = String::new();
        let get = |key: &str| self.fields.iter().find(|(k, _)| *k == key).map(|(_, v)| v.clone());
        let show = |v: Option<Value>| match v {
            Some(Value::Int(n)) => n.to_string(),
            Some(Value::Float(x)) => format!("{x:.0}"),
            Some(Value::Word(w)) => w.to_owned(),
            None => "?".to_owned(),
        };
        let _ = writeln!(
            out,
            "zoolock bench {}: {} cycles in {} s, {} cycles/s, p50 {} us, p99 {} us",
            show(get("workload")),
            show(get("cycles")),
            match get("seconds") {
                Some(Value::Float(x)) => format!("{x:.3}"),
                other => show(other),
            },
            show(get("cycles_per_sec")),
            show(get("p50_us")),
            show(get("p99_us")),
        );
        let rest: Vec<String> = self
            .fields
            .iter()
            .filter(|(k, _)| {
                !matches!(*k, "impl" | "workload" | "cycles" | "seconds" | "cycles_per_sec" | "p50_us" | "p99_us")
            })
            .map(|(k, v)| format!("{k}={}", show(Some(v.clone()))))
            .collect();
        if !rest.is_empty() {
            let _ = writeln!(out, "  {}", rest.join(" "));
        }
        out
    }
}

/// The nearest-rank `p`th percentile of sorted `samples` (0 if empty).
fn percentile(sorted: &[u64], p: u64) -> u64 {
    if sorted.is_empty() {
        return 0;
    }
    let n = sorted.len() as u64;
    // ceil(p * n / 100), at least 1: the rank of the sample.
    let rank = (p * n).div_ceil(100).max(1);
    sorted[usize::try_from(rank - 1).unwrap_or(0).min(sorted.len() - 1)]
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn percentiles_are_nearest_rank() {
        let v: Vec<u64> = (1..=100).collect();
        assert_eq!(percentile(&v, 50), 50);
        assert_eq!(percentile(&v, 99), 99);
        assert_eq!(percentile(&[7], 99), 7);
        assert_eq!(percentile(&[], 50), 0);
        assert_eq!(percentile(&[1, 2, 3], 50), 2);
    }

    #[test]
    fn json_is_one_flat_line_and_violations_count() {
        let mut r = Report::new("waiters");
        r.add_int("cycles", 3);
        r.add_timing(3, Duration::from_millis(1500), &mut [30, 10, 20]);
        r.add_int("fifo_violations", 0);
        r.add_int("leftover_nodes", 0);
        assert_eq!(r.violations(), 0);
        let json = r.json();
        assert!(json.starts_with("{\"impl\":\"zoolock\",\"workload\":\"waiters\",\"cycles\":3,"), "{json}");
        assert!(json.contains("\"seconds\":1.500,\"cycles_per_sec\":2.000,\"p50_us\":20,\"p99_us\":30"), "{json}");
        assert!(!json.contains('\n'));
        r.add_int("leftover_nodes", 2);
        assert_eq!(r.violations(), 2);
        assert!(r.text().contains("leftover_nodes=2"));
    }
}
