//! What a recipe replay reads of a scenario: the summary's steps, the lock
//! type, and each client's timeline of connections, frames and steps.

use std::fs;
use std::path::PathBuf;
use std::time::Duration;

use bytes::Bytes;
use serde_json::Value;
use zoolock_core::{
    ConnectionState,
    recipes::{LockKind, OpPlan, Part},
};
use zoolock_wire::{ConnectRequest, Request, SetWatches};

use super::ENSEMBLE_CONFIG_PATH;
use crate::decode::{DecodedFrame, StreamDecoder};
use crate::replay::{Location, ReplayError, blackhole_start};
use crate::trace::{Close, Direction, Entry, Frame, Scenario, Trace};

// ---- summary ---------------------------------------------------------------------------

/// The op plan that reproduces Curator `version`'s wire sequence: 5.4's
/// [`OpPlan::Curator`], or [`OpPlan::Curator57`] for 5.5 to 5.7 (what those
/// releases changed on the wire is the same set); `None` for others.
fn plan_of(version: &str) -> Option<OpPlan> {
    let mut parts = version.split('.').map(|p| p.parse::<u32>().ok());
    match (parts.next()??, parts.next()??) {
        (5, 4) => Some(OpPlan::Curator),
        (5, 5..=7) => Some(OpPlan::Curator57),
        _ => None,
    }
}

/// The parts of `summary.json` the replay uses.
#[derive(Debug)]
pub(super) struct Summary {
    pub(super) path: PathBuf,
    pub(super) description: String,
    pub(super) base_path: String,
    pub(super) t0_us: u64,
    pub(super) steps: Vec<Step>,
    /// The op plan of the recorded Curator (its `curator` version).
    pub(super) plan: OpPlan,
}

#[derive(Debug, Clone)]
pub(super) struct Step {
    pub(super) line: usize,
    /// Absolute, microseconds since the epoch.
    pub(super) at_us: u64,
    pub(super) return_us: Option<u64>,
    pub(super) client: String,
    pub(super) kind: String,
    pub(super) action: String,
    pub(super) result: Value,
}

impl Summary {
    pub(super) fn parse(scenario: &Scenario) -> Result<Summary, ReplayError> {
        let path = scenario.dir.join("summary.json");
        let unsupported = |reason: &str| ReplayError::Unsupported {
            at: Location { file: path.clone(), line: 0 },
            reason: String::from(reason),
        };
        let Some(summary) = &scenario.summary else {
            return Err(unsupported("no summary.json"));
        };
        let text = fs::read_to_string(&path).unwrap_or_default();
        let t0_ms = summary.get("t0_unix_ms").and_then(Value::as_f64).ok_or_else(|| unsupported("no t0_unix_ms"))?;
        let t0_us = ms_to_us(t0_ms);
        let base_path =
            summary.get("base_path").and_then(Value::as_str).ok_or_else(|| unsupported("no base_path"))?.to_owned();
        let description = summary.get("description").and_then(Value::as_str).unwrap_or_default().to_owned();
        let curator = summary.get("curator").and_then(Value::as_str).unwrap_or("5.4.0");
        let plan = plan_of(curator).ok_or_else(|| unsupported(&format!("no op plan for Curator {curator}")))?;
        let mut steps = Vec::new();
        for step in summary.get("steps").and_then(Value::as_array).ok_or_else(|| unsupported("no steps"))? {
            let seq = step.get("seq").and_then(Value::as_u64);
            let field = |name: &str| step.get(name).and_then(Value::as_str).map(str::to_owned);
            let (Some(t_ms), Some(client), Some(kind), Some(action)) =
                (step.get("t_ms").and_then(Value::as_f64), field("client"), field("kind"), field("action"))
            else {
                return Err(unsupported(&format!("step {seq:?} lacks t_ms, client, kind or action")));
            };
            steps.push(Step {
                line: seq.map_or(0, |seq| step_line(&text, seq)),
                at_us: t0_us.saturating_add(ms_to_us(t_ms)),
                return_us: step.get("t_return_ms").and_then(Value::as_f64).map(|t| t0_us.saturating_add(ms_to_us(t))),
                client,
                kind,
                action,
                result: step.get("result").cloned().unwrap_or(Value::Null),
            });
        }
        Ok(Summary { path, description, base_path, t0_us, steps, plan })
    }

    pub(super) fn location(&self, step: &Step) -> Location {
        Location { file: self.path.clone(), line: step.line }
    }
}

pub(super) fn ms_to_us(ms: f64) -> u64 {
    // Saturating float-to-int conversion: negative and NaN become 0.
    (ms * 1000.0).round() as u64
}

/// The 1-based line of the step with this `seq` (0 if not found).
pub(super) fn step_line(text: &str, seq: u64) -> usize {
    let needle = format!("\"seq\":{seq},");
    text.lines()
        .position(|l| l.chars().filter(|c| !c.is_whitespace()).collect::<String>().contains(&needle))
        .map_or(0, |i| i + 1)
}

/// The lock a scenario exercises: the kind whose Curator class its
/// description names first, and what the description adds.
#[derive(Debug, Clone, PartialEq, Eq)]
pub(super) struct TraceLock {
    pub(super) kind: LockKind,
    /// A semaphore's `maxLeases=N` (1 when not given).
    pub(super) max_leases: usize,
    /// A multi-lock's member paths (`BASE/...` in the description).
    pub(super) paths: Vec<String>,
}

impl TraceLock {
    pub(super) fn from_summary(summary: &Summary) -> Result<TraceLock, ReplayError> {
        let d = summary.description.as_str();
        let unsupported =
            |reason: String| ReplayError::Unsupported { at: Location { file: summary.path.clone(), line: 0 }, reason };
        let kind = LockKind::named_in(d)
            .ok_or_else(|| unsupported(format!("no known Curator recipe in the description {d:?}")))?;
        let mut lock = TraceLock { kind, max_leases: 1, paths: Vec::new() };
        if kind == LockKind::MultiLock {
            lock.paths = d
                .split(|c: char| c.is_whitespace() || matches!(c, '(' | ')' | ',' | ';'))
                .filter_map(|w| w.strip_prefix("BASE/"))
                .map(|rest| format!("{}/{rest}", summary.base_path.trim_end_matches('/')))
                .collect();
            if lock.paths.is_empty() {
                return Err(unsupported(String::from(
                    "InterProcessMultiLock without BASE/... paths in the description",
                )));
            }
        }
        if kind == LockKind::Semaphore {
            lock.max_leases = d
                .split_once("maxLeases=")
                .and_then(|(_, rest)| {
                    rest.chars().take_while(char::is_ascii_digit).collect::<String>().parse::<usize>().ok()
                })
                .unwrap_or(1);
        }
        Ok(lock)
    }
}

/// A recipe-level call from the summary.
#[derive(Debug, Clone, PartialEq, Eq)]
pub(super) enum Action {
    Start,
    Close,
    Acquire {
        timeout: Option<Duration>,
        revocable: bool,
        half: Option<Part>,
    },
    Release {
        half: Option<Part>,
        reports: bool,
    },
    /// `release (after losing the session)`: zoolock's recipe already owns
    /// the cleanup.
    ReleaseLost,
    ReturnLease,
    Participants,
    Revoke,
}

pub(super) fn parse_action(action: &str) -> Option<Action> {
    if action.starts_with("CuratorFramework.start") {
        return Some(Action::Start);
    }
    if action == "CuratorFramework.close" {
        return Some(Action::Close);
    }
    if action == "returnLease" {
        return Some(Action::ReturnLease);
    }
    if action == "getParticipantNodes" {
        return Some(Action::Participants);
    }
    if action.starts_with("Revoker.attemptRevoke") {
        return Some(Action::Revoke);
    }
    let (half, rest) = if let Some(rest) = action.strip_prefix("readLock.") {
        (Some(Part::Read), rest)
    } else if let Some(rest) = action.strip_prefix("writeLock.") {
        (Some(Part::Write), rest)
    } else {
        (None, action)
    };
    if let Some(args) = rest.strip_prefix("acquire") {
        return match args {
            "" | " (reentrant)" | " (holding write)" => Some(Action::Acquire { timeout: None, revocable: false, half }),
            " (revocable)" => Some(Action::Acquire { timeout: None, revocable: true, half }),
            _ => {
                let ms = args.strip_prefix('(')?.strip_suffix(" ms)")?.trim().parse::<u64>().ok()?;
                Some(Action::Acquire { timeout: Some(Duration::from_millis(ms)), revocable: false, half })
            }
        };
    }
    match rest {
        "release" | "release (outer)" | "release (from listener)" => Some(Action::Release { half, reports: true }),
        "release (inner)" => Some(Action::Release { half, reports: false }),
        "release (after losing the session)" => Some(Action::ReleaseLost),
        _ => None,
    }
}

/// Curator's connection state names.
pub(super) fn parse_state(name: &str) -> Option<ConnectionState> {
    match name {
        "CONNECTED" => Some(ConnectionState::Connected),
        "SUSPENDED" => Some(ConnectionState::Suspended),
        "RECONNECTED" => Some(ConnectionState::Reconnected),
        "LOST" => Some(ConnectionState::Lost),
        "READ_ONLY" => Some(ConnectionState::ConnectedReadOnly),
        _ => None,
    }
}

// ---- timeline --------------------------------------------------------------------------

/// One recorded connection of the client.
#[derive(Debug)]
pub(super) struct ConnInfo {
    pub(super) file: PathBuf,
    pub(super) t0_us: u64,
    pub(super) connect: ConnectRequest,
    pub(super) total: usize,
    /// `t_us` after which the link is down (blackhole), if frames were dropped.
    pub(super) link_down_us: Option<u64>,
}

#[derive(Debug)]
pub(super) enum ItemKind {
    ConnStart(usize),
    Frame(Frame, DecodedFrame),
    Close(Close),
    Step(Step),
}

#[derive(Debug)]
pub(super) struct Item {
    pub(super) at_us: u64,
    /// Tie-break at equal times: server frames and closes, then steps, then
    /// client frames.
    pub(super) rank: u8,
    pub(super) kind: ItemKind,
}

#[derive(Debug)]
pub(super) struct Timeline {
    pub(super) conns: Vec<ConnInfo>,
    pub(super) items: Vec<Item>,
    pub(super) session_timeout: Duration,
    pub(super) data: Bytes,
}

impl Timeline {
    pub(super) fn build(name: &str, traces: &[&Trace], summary: &Summary) -> Result<Timeline, ReplayError> {
        let mut conns = Vec::new();
        let mut trace_items = Vec::new();
        let mut data = None;
        for (index, trace) in traces.iter().enumerate() {
            let unsupported = |line: usize, reason: &str| ReplayError::Unsupported {
                at: Location { file: trace.path.clone(), line },
                reason: String::from(reason),
            };
            let t0_us = trace.header.t0_unix_us.ok_or_else(|| unsupported(1, "no t0_unix_us in the header"))?;
            let mut decoder = StreamDecoder::new();
            let mut connect = None;
            let mut total = 0;
            trace_items.push(Item { at_us: t0_us, rank: 0, kind: ItemKind::ConnStart(index) });
            for entry in &trace.entries {
                match entry {
                    Entry::Frame(frame) => {
                        let decoded = decoder.decode_frame(&trace.path, frame)?;
                        match &decoded {
                            DecodedFrame::ConnectRequest(r) => {
                                connect = Some(r.clone());
                                total += 1;
                            }
                            DecodedFrame::Request(r) => {
                                if counted(&r.request) {
                                    total += 1;
                                }
                                if let (None, Request::Create2(c)) = (&data, &r.request) {
                                    if c.data.as_ref().is_some_and(|d| !d.is_empty()) {
                                        data = c.data.clone();
                                    }
                                }
                            }
                            _ => {}
                        }
                        let rank = if frame.dir == Direction::C2s { 3 } else { 1 };
                        let at_us = t0_us.saturating_add(frame.t_us);
                        trace_items.push(Item { at_us, rank, kind: ItemKind::Frame(frame.clone(), decoded) });
                    }
                    Entry::Close(close) => {
                        let at_us = t0_us.saturating_add(close.t_us);
                        trace_items.push(Item { at_us, rank: 1, kind: ItemKind::Close(close.clone()) });
                    }
                    Entry::Raw(raw) => return Err(unsupported(raw.line, "raw (unframed) chunk")),
                    Entry::Other { .. } => {}
                }
            }
            let connect = connect.ok_or_else(|| unsupported(0, "no ConnectRequest"))?;
            conns.push(ConnInfo {
                file: trace.path.clone(),
                t0_us,
                connect,
                total,
                link_down_us: blackhole_start(trace),
            });
        }
        let first = conns.first().ok_or_else(|| ReplayError::Unsupported {
            at: Location { file: summary.path.clone(), line: 0 },
            reason: format!("no connection files for client {name}"),
        })?;
        let session_timeout = Duration::from_millis(u64::try_from(first.connect.timeout_ms).unwrap_or(0));
        let mut steps: Vec<Item> = summary
            .steps
            .iter()
            .filter(|s| s.client == name)
            .map(|s| Item { at_us: s.at_us, rank: 2, kind: ItemKind::Step(s.clone()) })
            .collect();
        steps.sort_by_key(|s| s.at_us);
        // Merge, keeping each stream's own order.
        let mut items = Vec::with_capacity(trace_items.len() + steps.len());
        let mut a = trace_items.into_iter().peekable();
        let mut b = steps.into_iter().peekable();
        loop {
            let take_a = match (a.peek(), b.peek()) {
                (Some(x), Some(y)) => (x.at_us, x.rank) <= (y.at_us, y.rank),
                (Some(_), None) => true,
                (None, Some(_)) => false,
                (None, None) => break,
            };
            items.extend(if take_a { a.next() } else { b.next() });
        }
        Ok(Timeline { conns, items, session_timeout, data: data.unwrap_or_default() })
    }
}

/// A client request the comparison covers: not a ping, not the
/// EnsembleTracker's.
pub(super) fn counted(request: &Request) -> bool {
    match request {
        Request::Ping => false,
        Request::SetWatches(w) => !strip_ensemble(w).is_empty(),
        r => !is_ensemble_tracker(r),
    }
}

/// Curator's EnsembleTracker: `getData /zookeeper/config` with watch, and its
/// `checkWatches` at close.
pub(super) fn is_ensemble_tracker(request: &Request) -> bool {
    match request {
        Request::GetData(r) => r.path == ENSEMBLE_CONFIG_PATH && r.watch,
        Request::CheckWatches(r) => r.path == ENSEMBLE_CONFIG_PATH,
        _ => false,
    }
}

/// setWatches without the EnsembleTracker's watch.
#[derive(Debug, Clone, PartialEq, Eq)]
pub(super) struct Watches {
    pub(super) relative_zxid: i64,
    pub(super) lists: [Vec<String>; 3],
}

impl Watches {
    pub(super) fn is_empty(&self) -> bool {
        self.lists.iter().all(Vec::is_empty)
    }
}

pub(super) fn strip_ensemble(w: &SetWatches) -> Watches {
    let keep = |v: &[String]| -> Vec<String> {
        let mut v: Vec<String> = v.iter().filter(|p| *p != ENSEMBLE_CONFIG_PATH).cloned().collect();
        v.sort();
        v
    };
    Watches {
        relative_zxid: w.relative_zxid,
        lists: [keep(&w.data_watches), keep(&w.exist_watches), keep(&w.child_watches)],
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn actions() {
        assert_eq!(
            parse_action("acquire(300 ms)"),
            Some(Action::Acquire { timeout: Some(Duration::from_millis(300)), revocable: false, half: None })
        );
        assert_eq!(
            parse_action("readLock.acquire (holding write)"),
            Some(Action::Acquire { timeout: None, revocable: false, half: Some(Part::Read) })
        );
        assert_eq!(parse_action("writeLock.release"), Some(Action::Release { half: Some(Part::Write), reports: true }));
        assert_eq!(parse_action("release (inner)"), Some(Action::Release { half: None, reports: false }));
        assert_eq!(parse_action("release (after losing the session)"), Some(Action::ReleaseLost));
        assert_eq!(parse_action("Revoker.attemptRevoke(A's node)"), Some(Action::Revoke));
        assert_eq!(parse_action("acquire (sideways)"), None);
        assert_eq!(parse_action("unlock"), None);
    }

    #[test]
    fn ensemble_tracker_traffic() {
        use zoolock_wire::{PathWatchRequest, WatcherType, WatchesRequest};
        let read = |path: &str, watch| Request::GetData(PathWatchRequest { path: path.to_owned(), watch });
        assert!(!counted(&read(ENSEMBLE_CONFIG_PATH, true)));
        assert!(counted(&read(ENSEMBLE_CONFIG_PATH, false)));
        assert!(counted(&read("/traces/x", true)));
        let check = Request::CheckWatches(WatchesRequest {
            path: ENSEMBLE_CONFIG_PATH.to_owned(),
            watcher_type: WatcherType::ANY,
        });
        assert!(!counted(&check));
        let only_config = SetWatches { data_watches: vec![ENSEMBLE_CONFIG_PATH.to_owned()], ..SetWatches::default() };
        assert!(!counted(&Request::SetWatches(only_config)));
        let with_lock = SetWatches {
            data_watches: vec![ENSEMBLE_CONFIG_PATH.to_owned(), String::from("/traces/x")],
            ..SetWatches::default()
        };
        assert!(counted(&Request::SetWatches(with_lock)));
    }
}
