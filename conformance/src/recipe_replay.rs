//! Recipe-level replay: zoolock's [`Client`] and lock recipes, in the Curator
//! op plan ([`OpPlan::Curator`]), driven through a whole recorded scenario.
//!
//! For each scenario folder (`zk-trace/1` connection files plus
//! `summary.json`) every client (`A`, `B`, `C`) is replayed on its own: the
//! recorded server frames play the server, the summary's steps play the
//! application, and the client frames zoolock writes must equal the recorded
//! ones, structurally. The rules (see also `traces/README.md`):
//!
//! * **One timeline per client.** The client's connection files (in order)
//!   and its summary steps are merged on absolute time: frames at the file
//!   header's `t0_unix_us` plus `t_us`, steps at `summary.t0_unix_ms` plus
//!   `t_ms`. Virtual time follows it, so the recipes' deadlines (for example
//!   `acquire(300 ms)`) run on recorded time. At equal times, server frames and
//!   closes come before steps, and steps before client frames. If zoolock
//!   needs longer than the recording (it dials or expires later), the rest of
//!   the timeline is shifted by the difference.
//! * **The recipe.** The scenario's lock type comes from the summary's
//!   `description` (`InterProcessMutex`, `InterProcessReadWriteLock`,
//!   `InterProcessSemaphoreMutex`, `InterProcessSemaphoreV2 maxLeases=N`,
//!   `InterProcessMultiLock` over `BASE/...` paths) and its lock path from
//!   `base_path`. Every recipe runs with [`OpPlan::Curator`] and the node data
//!   of the client's first recorded create2 with data (Curator's default,
//!   `127.0.0.1` in this corpus; revocable locks write empty data anyway).
//! * **Actions.** `CuratorFramework.start` creates the [`Client`] (its first
//!   dial is held until the first recorded connection; a held dial stands for
//!   a connect that has not been answered yet). `acquire`, `acquire(N ms)`
//!   (deadline = call time + N), `acquire (reentrant)`, `acquire (revocable)`
//!   ([`Mutex::make_revocable`] first), `release`, `release (inner|outer|from
//!   listener)`, `readLock.*` / `writeLock.*` (the two halves of a
//!   [`ReadWriteLock`]), `returnLease` (the semaphore's oldest lease),
//!   `getParticipantNodes` (a [`Participants`] recipe, paths only, as
//!   Curator), `Revoker.attemptRevoke(..)` (a [`Revoker`] on the node path
//!   given as the step's result) and `CuratorFramework.close`
//!   ([`Client::close`]).
//!   `release (after losing the session)` does nothing: Curator's release
//!   sends a delete of the lost node from the new session and gets NoNode;
//!   zoolock's lock queues that delete by itself when the session is lost and
//!   sends it once the new session is connected, so that automatic delete is
//!   what matches the recorded frame.
//! * **Sessions.** A connection file whose ConnectRequest has session id 0,
//!   after the client had a session, needs a new one: zoolock's session must
//!   be expired by then (by its own timer, or by the server's expired answer
//!   in the previous file; the harness waits for it, shifting the timeline),
//!   and [`Client::restart_session`] replaces it.
//! * **Client frames.** Every recorded client frame, except pings and the
//!   EnsembleTracker's (below), must be the next frame zoolock wrote: the
//!   ConnectRequest field by field, a request by opcode and body bytes, with
//!   two allowances. Xids are remapped (learned on first use). Protection
//!   prefixes `_c_<uuid>-` may carry a different UUID, as long as the mapping
//!   between recorded and zoolock UUIDs stays one to one for the whole client.
//!   setWatches path lists compare as sets.
//! * **Skipped: Curator's EnsembleTracker.** `getData /zookeeper/config` with
//!   watch and `checkWatches /zookeeper/config` are not lock traffic: they
//!   are skipped, with their replies and any notification for
//!   `/zookeeper/config`, and `/zookeeper/config` is dropped from a
//!   reconnect's setWatches lists (the watch those reads left). Nothing else
//!   is skipped.
//! * **Server frames** are fed one by one with zoolock's xids and UUIDs (the
//!   recorded replies name Curator's nodes; zoolock must see its own).
//!   Sequence numbers, zxids and everything else stay as recorded. Frames
//!   marked `dropped` never reached the client and are not fed; replies to
//!   skipped requests and recorded pings are not fed either.
//! * **Pings** zoolock writes are not compared; they are answered at once with
//!   a synthetic reply unless the link is down (the socket is closed, or a
//!   blackhole partition has started: after the last frame forwarded before
//!   the first dropped one).
//! * **Closes.** `by: client` means the client gave up by itself: zoolock must
//!   close the socket within [`RecipeReplayConfig::close_tolerance`] of the
//!   recorded time, and not earlier. Any other close is
//!   [`Client::handle_disconnected`] if the socket is still open.
//! * **Outcomes.** The user-visible results must match the summary: an
//!   acquire that returned `true` is an [`RecipeEvent::Acquired`] whose token
//!   is the czxid of the recorded create2 reply for that node (and, for a
//!   semaphore, whose node is the recorded lease), `false` is `TimedOut`, a
//!   release is `Released` (not for an inner reentrant release),
//!   `getParticipantNodes` is `Participants` with the recorded paths,
//!   `attemptRevoke` is `RevokeSent`, the revocation listener is
//!   `RevocationRequested`, and the recorded connection states are zoolock's
//!   [`ConnectionState`]s in the same order (Curator's `RECONNECTED` after
//!   `LOST` is the new session's `Connected`). Each must have been reported
//!   no earlier than its call and by the time the call returned (the event's
//!   time, for an event), checked at the client's next call and at the end,
//!   so that clock skew between the recorder and the proxy does not matter.
//!   A `Failed` event is a mismatch at once. At the end, every zoolock event
//!   must have been accounted for, except a recipe's own `Suspended`,
//!   `Reconnected` and `Lost`, which mirror the connection states.
//!
//! The first mismatch stops that client's replay; the other clients go on.
//! Mismatches are [`ReplayError`]s naming the trace file and line (or the
//! summary step) with what was expected and what zoolock did.

use std::collections::{HashMap, HashSet, VecDeque};
use std::fs;
use std::ops::Range;
use std::path::{Path, PathBuf};
use std::time::Duration;

use bytes::{BufMut, Bytes, BytesMut};
use serde_json::Value;
use zoolock_core::recipes::{READ, WRITE};
use zoolock_core::{
    ApiMisuse, Client, ClientEvent, ConnectString, ConnectionState, Instant, IoCommand, LockConfig, LockRecipe,
    MultiLock, Mutex, OpPlan, Participants, ReadWriteLock, Recipe, RecipeEvent, RecipeId, Revoker, Semaphore,
    SemaphoreMutex, SessionConfig, SessionStatus, ZkPath,
};
use zoolock_wire::{
    ConnectRequest, Encode, ErrorCode, FrameDecoder, LEN_PREFIX, OpCode, ReplyHeader, Request, RequestFrame,
    RequestHeader, Response, ServerMessage, SetWatches, Xid,
};

use crate::decode::{DecodedFrame, StreamDecoder, TraceDecodeError};
use crate::replay::{Location, MismatchKind, ReplayError, blackhole_start};
use crate::trace::{Close, ClosedBy, Direction, Entry, Frame, Scenario, Trace};

/// The node Curator's EnsembleTracker reads and watches.
pub const ENSEMBLE_CONFIG_PATH: &str = "/zookeeper/config";

/// Virtual time of the scenario's origin.
const START: Instant = Instant::from_millis(1_000);
/// Bound on timer firings in one advance.
const MAX_FIRINGS: usize = 100_000;
/// Curator's protection prefix before the UUID.
const PROTECTION: &[u8] = b"_c_";
/// A UUID in text form.
const UUID_LEN: usize = 36;

/// How a recipe replay builds and drives its clients.
#[derive(Debug, Clone)]
#[non_exhaustive]
pub struct RecipeReplayConfig {
    /// Seed of each client's session and recipes (mixed with the client's
    /// name, so clients differ).
    pub seed: u64,
    /// Upper bound of the sessions' reconnect pause.
    pub reconnect_jitter: Duration,
    /// Slack allowed between a recorded client-side close and zoolock's.
    pub close_tolerance: Duration,
}

impl Default for RecipeReplayConfig {
    fn default() -> Self {
        RecipeReplayConfig {
            seed: 1,
            reconnect_jitter: Duration::from_millis(10),
            close_tolerance: Duration::from_millis(100),
        }
    }
}

impl RecipeReplayConfig {
    /// The defaults: seed 1, 10 ms reconnect jitter, 100 ms close tolerance.
    pub fn new() -> Self {
        RecipeReplayConfig::default()
    }

    /// Sets the seed.
    pub fn with_seed(mut self, seed: u64) -> Self {
        self.seed = seed;
        self
    }
}

/// Client frames matched on one recorded connection.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct ConnectionTally {
    /// The connection file.
    pub file: PathBuf,
    /// Recorded client frames zoolock matched (ConnectRequest included).
    pub matched: usize,
    /// Recorded client frames to match: all but pings and the
    /// EnsembleTracker's.
    pub total: usize,
}

/// The replay of one client.
#[derive(Debug)]
pub struct ClientReport {
    /// The client's name (`A`, `B`, ...).
    pub client: String,
    /// One per connection file, in order.
    pub connections: Vec<ConnectionTally>,
    /// The first mismatch, if any.
    pub error: Option<ReplayError>,
}

/// The replay of one scenario.
#[derive(Debug)]
pub struct ScenarioReport {
    /// The scenario (folder) name.
    pub name: String,
    /// The folder.
    pub dir: PathBuf,
    /// One per client, by name.
    pub clients: Vec<ClientReport>,
}

impl ScenarioReport {
    /// True when every client matched.
    pub fn is_ok(&self) -> bool {
        self.clients.iter().all(|c| c.error.is_none())
    }

    /// Each failed client's name and first mismatch.
    pub fn errors(&self) -> impl Iterator<Item = (&str, &ReplayError)> + '_ {
        self.clients.iter().filter_map(|c| c.error.as_ref().map(|e| (c.client.as_str(), e)))
    }

    /// Every connection's tally, client by client.
    pub fn connections(&self) -> impl Iterator<Item = &ConnectionTally> + '_ {
        self.clients.iter().flat_map(|c| c.connections.iter())
    }
}

/// Loads the scenario folder `dir` and replays it.
pub fn replay_scenario_dir(dir: impl AsRef<Path>, config: &RecipeReplayConfig) -> Result<ScenarioReport, ReplayError> {
    let scenario = Scenario::load(dir)?;
    replay_scenario(&scenario, config)
}

/// Replays a loaded scenario. An error means it cannot be replayed at all
/// (no summary, unknown lock type or action); mismatches are in the report.
pub fn replay_scenario(scenario: &Scenario, config: &RecipeReplayConfig) -> Result<ScenarioReport, ReplayError> {
    let summary = Summary::parse(scenario)?;
    let lock = LockKind::from_summary(&summary)?;
    let mut by_client: Vec<(String, Vec<&Trace>)> = Vec::new();
    for trace in &scenario.traces {
        let name = client_name(trace);
        match by_client.iter_mut().find(|(n, _)| *n == name) {
            Some((_, traces)) => traces.push(trace),
            None => by_client.push((name, vec![trace])),
        }
    }
    by_client.sort_by(|a, b| a.0.cmp(&b.0));
    let origin_us = scenario
        .traces
        .iter()
        .filter_map(|t| t.header.t0_unix_us)
        .chain(std::iter::once(summary.t0_us))
        .min()
        .unwrap_or(summary.t0_us);
    let mut clients = Vec::new();
    for (name, mut traces) in by_client {
        traces.sort_by_key(|t| (t.header.conn.unwrap_or(u64::MAX), t.path.clone()));
        let scene = Scene { summary: &summary, lock: &lock, config, origin_us };
        clients.push(replay_client(&name, &traces, scene));
    }
    Ok(ScenarioReport { name: scenario.name.clone(), dir: scenario.dir.clone(), clients })
}

fn replay_client(name: &str, traces: &[&Trace], scene: Scene<'_>) -> ClientReport {
    let mut connections: Vec<ConnectionTally> =
        traces.iter().map(|t| ConnectionTally { file: t.path.clone(), matched: 0, total: 0 }).collect();
    let error = match Timeline::build(name, traces, scene.summary) {
        Ok(timeline) => {
            for (tally, conn) in connections.iter_mut().zip(&timeline.conns) {
                tally.total = conn.total;
            }
            match ClientRun::new(name, &scene, &timeline, connections.clone()) {
                Ok(mut run) => {
                    let result = run.run(&timeline);
                    connections = run.tallies;
                    result.err()
                }
                Err(e) => Some(e),
            }
        }
        Err(e) => Some(e),
    };
    ClientReport { client: String::from(name), connections, error }
}

/// `<scenario>/A` in the header, else the file name up to the first dot.
fn client_name(trace: &Trace) -> String {
    if let Some(label) = &trace.header.client {
        if let Some((_, name)) = label.rsplit_once('/') {
            return String::from(name);
        }
    }
    let file = trace.path.file_name().map(|f| f.to_string_lossy().into_owned()).unwrap_or_default();
    String::from(file.split('.').next().unwrap_or_default())
}

// ---- summary ---------------------------------------------------------------------------

/// The parts of `summary.json` the replay uses.
#[derive(Debug)]
struct Summary {
    path: PathBuf,
    description: String,
    base_path: String,
    t0_us: u64,
    steps: Vec<Step>,
}

#[derive(Debug, Clone)]
struct Step {
    line: usize,
    /// Absolute, microseconds since the epoch.
    at_us: u64,
    return_us: Option<u64>,
    client: String,
    kind: String,
    action: String,
    result: Value,
}

impl Summary {
    fn parse(scenario: &Scenario) -> Result<Summary, ReplayError> {
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
        Ok(Summary { path, description, base_path, t0_us, steps })
    }

    fn location(&self, step: &Step) -> Location {
        Location { file: self.path.clone(), line: step.line }
    }
}

fn ms_to_us(ms: f64) -> u64 {
    // Saturating float-to-int conversion: negative and NaN become 0.
    (ms * 1000.0).round() as u64
}

/// The 1-based line of the step with this `seq` (0 if not found).
fn step_line(text: &str, seq: u64) -> usize {
    let needle = format!("\"seq\":{seq},");
    text.lines()
        .position(|l| l.chars().filter(|c| !c.is_whitespace()).collect::<String>().contains(&needle))
        .map_or(0, |i| i + 1)
}

/// Which Curator recipe the scenario exercises.
#[derive(Debug, Clone, PartialEq, Eq)]
enum LockKind {
    Mutex,
    ReadWrite,
    SemaphoreMutex,
    Semaphore { max_leases: usize },
    MultiLock { paths: Vec<String> },
}

impl LockKind {
    fn from_summary(summary: &Summary) -> Result<LockKind, ReplayError> {
        let d = summary.description.as_str();
        let kind = if d.contains("InterProcessMultiLock") {
            let paths: Vec<String> = d
                .split(|c: char| c.is_whitespace() || matches!(c, '(' | ')' | ',' | ';'))
                .filter_map(|w| w.strip_prefix("BASE/"))
                .map(|rest| format!("{}/{rest}", summary.base_path.trim_end_matches('/')))
                .collect();
            if paths.is_empty() {
                return Err(ReplayError::Unsupported {
                    at: Location { file: summary.path.clone(), line: 0 },
                    reason: String::from("InterProcessMultiLock without BASE/... paths in the description"),
                });
            }
            LockKind::MultiLock { paths }
        } else if d.contains("InterProcessReadWriteLock") {
            LockKind::ReadWrite
        } else if d.contains("InterProcessSemaphoreMutex") {
            LockKind::SemaphoreMutex
        } else if d.contains("InterProcessSemaphoreV2") {
            let max_leases = d
                .split_once("maxLeases=")
                .and_then(|(_, rest)| {
                    rest.chars().take_while(char::is_ascii_digit).collect::<String>().parse::<usize>().ok()
                })
                .unwrap_or(1);
            LockKind::Semaphore { max_leases }
        } else if d.contains("InterProcessMutex") {
            LockKind::Mutex
        } else {
            return Err(ReplayError::Unsupported {
                at: Location { file: summary.path.clone(), line: 0 },
                reason: format!("no known Curator recipe in the description {d:?}"),
            });
        };
        Ok(kind)
    }
}

/// A recipe-level call from the summary.
#[derive(Debug, Clone, PartialEq, Eq)]
enum Action {
    Start,
    Close,
    Acquire {
        timeout: Option<Duration>,
        revocable: bool,
        half: Option<usize>,
    },
    Release {
        half: Option<usize>,
        reports: bool,
    },
    /// `release (after losing the session)`: zoolock's recipe already owns
    /// the cleanup.
    ReleaseLost,
    ReturnLease,
    Participants,
    Revoke,
}

fn parse_action(action: &str) -> Option<Action> {
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
        (Some(READ), rest)
    } else if let Some(rest) = action.strip_prefix("writeLock.") {
        (Some(WRITE), rest)
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
fn parse_state(name: &str) -> Option<ConnectionState> {
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
struct ConnInfo {
    file: PathBuf,
    t0_us: u64,
    connect: ConnectRequest,
    total: usize,
    /// `t_us` after which the link is down (blackhole), if frames were dropped.
    link_down_us: Option<u64>,
}

#[derive(Debug)]
enum ItemKind {
    ConnStart(usize),
    Frame(Frame, DecodedFrame),
    Close(Close),
    Step(Step),
}

#[derive(Debug)]
struct Item {
    at_us: u64,
    /// Tie-break at equal times: server frames and closes, then steps, then
    /// client frames.
    rank: u8,
    kind: ItemKind,
}

#[derive(Debug)]
struct Timeline {
    conns: Vec<ConnInfo>,
    items: Vec<Item>,
    session_timeout: Duration,
    data: Bytes,
}

impl Timeline {
    fn build(name: &str, traces: &[&Trace], summary: &Summary) -> Result<Timeline, ReplayError> {
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
                        let decoded =
                            decoder.decode(frame.dir, &frame.payload).map_err(|error| TraceDecodeError::Frame {
                                path: trace.path.clone(),
                                line: frame.line,
                                dir: frame.dir,
                                error,
                            })?;
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
fn counted(request: &Request) -> bool {
    match request {
        Request::Ping => false,
        Request::SetWatches(w) => !strip_ensemble(w).is_empty(),
        r => !is_ensemble_tracker(r),
    }
}

/// Curator's EnsembleTracker: `getData /zookeeper/config` with watch, and its
/// `checkWatches` at close.
fn is_ensemble_tracker(request: &Request) -> bool {
    match request {
        Request::GetData(r) => r.path == ENSEMBLE_CONFIG_PATH && r.watch,
        Request::CheckWatches(r) => r.path == ENSEMBLE_CONFIG_PATH,
        _ => false,
    }
}

/// setWatches without the EnsembleTracker's watch.
#[derive(Debug, Clone, PartialEq, Eq)]
struct Watches {
    relative_zxid: i64,
    lists: [Vec<String>; 3],
}

impl Watches {
    fn is_empty(&self) -> bool {
        self.lists.iter().all(Vec::is_empty)
    }
}

fn strip_ensemble(w: &SetWatches) -> Watches {
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

// ---- protection UUIDs ------------------------------------------------------------------

/// Byte ranges of the UUIDs in `_c_<uuid>-` prefixes.
fn uuid_spans(bytes: &[u8]) -> Vec<Range<usize>> {
    let mut out = Vec::new();
    let mut i = 0;
    while i + PROTECTION.len() + UUID_LEN < bytes.len() {
        let start = i + PROTECTION.len();
        let end = start + UUID_LEN;
        let found = bytes.get(i..start) == Some(PROTECTION)
            && bytes.get(start..end).is_some_and(is_uuid)
            && bytes.get(end) == Some(&b'-');
        if found {
            out.push(start..end);
            i = end + 1;
        } else {
            i += 1;
        }
    }
    out
}

fn is_uuid(b: &[u8]) -> bool {
    b.len() == UUID_LEN
        && b.iter()
            .enumerate()
            .all(|(i, c)| if matches!(i, 8 | 13 | 18 | 23) { *c == b'-' } else { c.is_ascii_hexdigit() })
}

/// The one-to-one correspondence between Curator's and zoolock's UUIDs.
#[derive(Debug, Default)]
struct UuidMap {
    to_zoolock: HashMap<String, String>,
    to_recorded: HashMap<String, String>,
}

impl UuidMap {
    /// Records that `recorded` is zoolock's `ours`; an error describes a
    /// conflict with what was learned before.
    fn learn(&mut self, recorded: &str, ours: &str) -> Result<(), String> {
        match (self.to_zoolock.get(recorded), self.to_recorded.get(ours)) {
            (Some(z), _) if z != ours => Err(format!("recorded UUID {recorded} was zoolock's {z} before, now {ours}")),
            (_, Some(r)) if r != recorded => {
                Err(format!("zoolock's UUID {ours} stood for recorded {r} before, now for {recorded}"))
            }
            _ => {
                self.to_zoolock.insert(recorded.to_owned(), ours.to_owned());
                self.to_recorded.insert(ours.to_owned(), recorded.to_owned());
                Ok(())
            }
        }
    }

    fn rewrite(map: &HashMap<String, String>, bytes: &mut [u8]) {
        for span in uuid_spans(bytes) {
            let Some(from) = bytes.get(span.clone()).and_then(|b| std::str::from_utf8(b).ok()) else { continue };
            if let Some(to) = map.get(from) {
                if let Some(dst) = bytes.get_mut(span) {
                    dst.copy_from_slice(to.as_bytes());
                }
            }
        }
    }

    /// Recorded UUIDs replaced by zoolock's (unknown ones are kept).
    fn zoolock_bytes(&self, bytes: &mut [u8]) {
        UuidMap::rewrite(&self.to_zoolock, bytes);
    }

    fn zoolock_path(&self, path: &str) -> String {
        let mut bytes = path.as_bytes().to_vec();
        self.zoolock_bytes(&mut bytes);
        String::from_utf8(bytes).unwrap_or_else(|_| path.to_owned())
    }

    /// zoolock's UUIDs replaced by the recorded ones.
    fn recorded_path(&self, path: &str) -> String {
        let mut bytes = path.as_bytes().to_vec();
        UuidMap::rewrite(&self.to_recorded, &mut bytes);
        String::from_utf8(bytes).unwrap_or_else(|_| path.to_owned())
    }
}

/// Compares request bodies with the UUIDs of protection prefixes left out;
/// returns the (recorded, zoolock) UUID pairs when everything else is equal.
fn compare_bodies(want: &[u8], got: &[u8]) -> Option<Vec<(String, String)>> {
    let spans = uuid_spans(want);
    if want.len() != got.len() || spans != uuid_spans(got) {
        return None;
    }
    let mut pairs = Vec::with_capacity(spans.len());
    let mut from = 0;
    for span in &spans {
        if want.get(from..span.start)? != got.get(from..span.start)? {
            return None;
        }
        let w = std::str::from_utf8(want.get(span.clone())?).ok()?;
        let g = std::str::from_utf8(got.get(span.clone())?).ok()?;
        pairs.push((w.to_owned(), g.to_owned()));
        from = span.end;
    }
    (want.get(from..)? == got.get(from..)?).then_some(pairs)
}

// ---- expectations ----------------------------------------------------------------------

#[derive(Debug, Clone, Copy, PartialEq, Eq)]
enum Role {
    Lock,
    Participants,
    Revoker,
}

#[derive(Debug, Clone, PartialEq, Eq)]
enum Want {
    Acquired { lease: Option<String> },
    TimedOut,
    Released,
    Participants(Vec<String>),
    RevokeSent,
    RevocationRequested,
}

#[derive(Debug, Clone)]
enum Expect {
    Recipe { role: Role, half: Option<usize>, want: Want },
    State(ConnectionState),
}

#[derive(Debug, Clone)]
struct Expectation {
    at: Location,
    /// Absolute microseconds by which it must have been reported.
    due_us: u64,
    not_before: Instant,
    what: Expect,
}

#[derive(Debug)]
struct Logged {
    at: Instant,
    recipe: RecipeId,
    event: RecipeEvent,
    consumed: bool,
}

/// `Member { index, event }` unwrapped.
fn unwrap_member(event: &RecipeEvent) -> (Option<usize>, &RecipeEvent) {
    match event {
        RecipeEvent::Member { index, event } => {
            let (_, inner) = unwrap_member(event);
            (Some(*index), inner)
        }
        e => (None, e),
    }
}

/// A recipe's own view of the connection, which mirrors the states checked.
fn mirrors_connection(event: &RecipeEvent) -> bool {
    matches!(unwrap_member(event).1, RecipeEvent::Suspended | RecipeEvent::Reconnected | RecipeEvent::Lost)
}

// ---- the run ---------------------------------------------------------------------------

/// A frame zoolock wrote and the trace has not matched yet.
#[derive(Debug)]
enum Emitted {
    Connect(ConnectRequest),
    Request(RequestFrame, Bytes),
}

#[derive(Debug)]
struct Conn {
    index: usize,
    file: PathBuf,
    open: bool,
    connect_seen: bool,
    handshake_done: bool,
    outbound: BytesMut,
    decoder: FrameDecoder,
    emitted: VecDeque<Emitted>,
    xids: HashMap<i32, i32>,
    skipped: HashSet<i32>,
    link_down_after: Option<Instant>,
    closed_at: Option<Instant>,
    closed_by_session: bool,
}

/// What every client of a scenario shares.
#[derive(Clone, Copy)]
struct Scene<'a> {
    summary: &'a Summary,
    lock: &'a LockKind,
    config: &'a RecipeReplayConfig,
    origin_us: u64,
}

struct ClientRun<'a> {
    name: &'a str,
    summary: &'a Summary,
    lock: &'a LockKind,
    config: &'a RecipeReplayConfig,
    seed: u64,
    session_config: SessionConfig,
    data: Bytes,
    origin_us: u64,
    shift: Duration,
    now: Instant,
    loc: Location,
    client: Option<Client>,
    lock_recipe: Option<RecipeId>,
    participants: Option<RecipeId>,
    revoker: Option<RecipeId>,
    dialing: bool,
    conn: Option<Conn>,
    tallies: Vec<ConnectionTally>,
    /// The current zoolock session completed a handshake.
    established: bool,
    max_zxid: i64,
    pings_due: usize,
    uuids: UuidMap,
    /// Recorded create2 replies: path → czxid.
    created: HashMap<String, i64>,
    states: VecDeque<ConnectionState>,
    events: Vec<Logged>,
    expectations: VecDeque<Expectation>,
    /// A LOST was recorded and no state since (Curator's next RECONNECTED is
    /// a new session).
    after_lost: bool,
}

impl<'a> ClientRun<'a> {
    fn new(
        name: &'a str,
        scene: &Scene<'a>,
        timeline: &Timeline,
        tallies: Vec<ConnectionTally>,
    ) -> Result<ClientRun<'a>, ReplayError> {
        let Scene { summary, lock, config, origin_us } = *scene;
        let connect_string = ConnectString::parse("127.0.0.1:2181").map_err(|e| ReplayError::Unsupported {
            at: Location { file: summary.path.clone(), line: 0 },
            reason: format!("connect string: {e}"),
        })?;
        let salt = name.bytes().fold(0u64, |h, b| h.wrapping_mul(131).wrapping_add(u64::from(b)));
        let seed = config.seed.wrapping_mul(0x9E37_79B9_7F4A_7C15).wrapping_add(salt);
        let session_config = SessionConfig::new(connect_string, seed)
            .with_session_timeout(timeline.session_timeout)
            .with_reconnect_jitter(config.reconnect_jitter);
        Ok(ClientRun {
            name,
            summary,
            lock,
            config,
            seed,
            session_config,
            data: timeline.data.clone(),
            origin_us,
            shift: Duration::ZERO,
            now: START,
            loc: Location { file: summary.path.clone(), line: 0 },
            client: None,
            lock_recipe: None,
            participants: None,
            revoker: None,
            dialing: false,
            conn: None,
            tallies,
            established: false,
            max_zxid: 0,
            pings_due: 0,
            uuids: UuidMap::default(),
            created: HashMap::new(),
            states: VecDeque::new(),
            events: Vec::new(),
            expectations: VecDeque::new(),
            after_lost: false,
        })
    }

    fn run(&mut self, timeline: &Timeline) -> Result<(), ReplayError> {
        for item in &timeline.items {
            let t = self.instant(item.at_us);
            match &item.kind {
                ItemKind::ConnStart(index) => {
                    let Some(info) = timeline.conns.get(*index) else { continue };
                    self.loc = Location { file: info.file.clone(), line: 1 };
                    self.start_connection(*index, info, t)?;
                }
                ItemKind::Frame(frame, decoded) => {
                    self.loc.line = frame.line;
                    match frame.dir {
                        Direction::C2s => self.client_frame(frame, decoded, t)?,
                        Direction::S2c => self.server_frame(frame, decoded, t)?,
                    }
                }
                ItemKind::Close(close) => {
                    self.loc.line = close.line;
                    self.close_event(close, t)?;
                }
                ItemKind::Step(step) => {
                    let saved = std::mem::replace(&mut self.loc, self.summary.location(step));
                    self.step(step, t)?;
                    self.loc = saved;
                }
            }
        }
        self.finish()
    }

    // ---- time ----------------------------------------------------------------------

    fn instant(&self, at_us: u64) -> Instant {
        START + Duration::from_micros(at_us.saturating_sub(self.origin_us)) + self.shift
    }

    /// Runs every timer due up to `target`, then sets the clock to it.
    fn advance_to(&mut self, target: Instant) -> Result<(), ReplayError> {
        for _ in 0..MAX_FIRINGS {
            match self.client.as_ref().and_then(Client::poll_timeout) {
                Some(due) if due <= target => {
                    self.now = self.now.max(due);
                    if let Some(client) = &mut self.client {
                        client.handle_timeout(self.now);
                    }
                    self.settle()?;
                }
                _ => {
                    self.now = self.now.max(target);
                    return Ok(());
                }
            }
        }
        Err(self.mismatch(MismatchKind::Timer, "timers that settle", "more than 100000 timer firings"))
    }

    /// Runs timers until `done` holds, moving time as far as needed (at most
    /// `limit` past now), and shifts the rest of the timeline by the delay
    /// past `recorded`.
    fn advance_until(
        &mut self,
        recorded_us: u64,
        limit: Duration,
        done: impl Fn(&ClientRun<'_>) -> bool,
    ) -> Result<bool, ReplayError> {
        let give_up = self.now + limit;
        for _ in 0..MAX_FIRINGS {
            if done(self) {
                break;
            }
            match self.client.as_ref().and_then(Client::poll_timeout) {
                Some(due) if due <= give_up => self.advance_to(due.max(self.now))?,
                _ => break,
            }
        }
        let recorded = self.instant(recorded_us);
        if self.now > recorded {
            self.shift += self.now - recorded;
        }
        Ok(done(self))
    }

    // ---- connections ---------------------------------------------------------------

    fn create_client(&mut self, now: Instant) {
        self.client = Some(Client::new(self.session_config.clone(), now));
    }

    fn start_connection(&mut self, index: usize, info: &ConnInfo, t: Instant) -> Result<(), ReplayError> {
        self.end_connection()?;
        if self.client.is_none() {
            self.create_client(t);
        }
        self.advance_to(t)?;
        let status = self.client.as_ref().map(|c| c.session().status());
        if info.connect.session_id == 0 && self.established {
            // The recording opens a new session: zoolock's must have expired.
            let limit = self.session_config.session_timeout * 3;
            let expired = self.advance_until(info.t0_us, limit, |r| {
                r.client.as_ref().is_some_and(|c| c.session().status() == SessionStatus::Expired)
            })?;
            if !expired {
                let got = format!("{:?}", self.client.as_ref().map(|c| c.session().status()));
                return Err(self.mismatch(
                    MismatchKind::Handshake,
                    "the session expired before the recorded client opened a new one",
                    got,
                ));
            }
            let now = self.now;
            if let Some(client) = &mut self.client {
                client.restart_session(now).map_err(|source| ReplayError::Submit { at: self.loc.clone(), source })?;
            }
            self.established = false;
            self.max_zxid = 0;
            self.settle()?;
        } else if info.connect.session_id != 0 && status == Some(SessionStatus::Expired) {
            return Err(self.mismatch(
                MismatchKind::Handshake,
                format!("a live session to resume as {:#x}", info.connect.session_id),
                "the session has expired",
            ));
        }
        let limit = self.session_config.session_timeout * 3;
        if !self.advance_until(info.t0_us, limit, |r| r.dialing)? {
            let got = format!("no connect attempt (status {:?})", self.client.as_ref().map(|c| c.session().status()));
            return Err(self.mismatch(MismatchKind::Connect, "the session to dial for this connection", got));
        }
        let t0 = self.instant(info.t0_us);
        self.conn = Some(Conn {
            index,
            file: info.file.clone(),
            open: false,
            connect_seen: false,
            handshake_done: false,
            outbound: BytesMut::new(),
            decoder: FrameDecoder::default(),
            emitted: VecDeque::new(),
            xids: HashMap::new(),
            skipped: HashSet::new(),
            link_down_after: info.link_down_us.map(|us| t0 + Duration::from_micros(us)),
            closed_at: None,
            closed_by_session: false,
        });
        Ok(())
    }

    fn end_connection(&mut self) -> Result<(), ReplayError> {
        if self.conn.is_none() {
            return Ok(());
        }
        self.settle()?;
        let Some(conn) = &self.conn else { return Ok(()) };
        let saved = std::mem::replace(&mut self.loc, Location { file: conn.file.clone(), line: 0 });
        let result = self.check_ended();
        self.loc = saved;
        result
    }

    /// The current connection is closed with nothing left over.
    fn check_ended(&self) -> Result<(), ReplayError> {
        let Some(conn) = &self.conn else { return Ok(()) };
        if conn.open {
            return Err(self.mismatch(MismatchKind::Close, "the connection closed at the end of the trace", "open"));
        }
        if let Some(e) = conn.emitted.front() {
            let got = describe_emitted(e);
            return Err(self.mismatch(MismatchKind::UnexpectedFrame, "nothing more on this connection", got));
        }
        if !conn.outbound.is_empty() {
            let got = format!("{} bytes of a partial frame", conn.outbound.len());
            return Err(self.mismatch(MismatchKind::Leftover, "whole frames", got));
        }
        Ok(())
    }

    fn close_event(&mut self, close: &Close, t: Instant) -> Result<(), ReplayError> {
        let tolerance = self.config.close_tolerance;
        let by_client = close.by == ClosedBy::Client;
        let open = self.conn.as_ref().is_some_and(|c| c.open);
        if open && by_client {
            self.advance_to(t + tolerance)?;
            if self.conn.as_ref().is_some_and(|c| c.open) {
                return Err(self.mismatch(
                    MismatchKind::Close,
                    format!("the session to close the connection by {} (recorded client close)", t + tolerance),
                    "still open",
                ));
            }
        } else if open {
            self.advance_to(t)?;
            if self.conn.as_ref().is_some_and(|c| c.open) {
                if let Some(conn) = &mut self.conn {
                    conn.open = false;
                    conn.closed_at = Some(self.now);
                }
                let now = self.now;
                if let Some(client) = &mut self.client {
                    client.handle_disconnected(now);
                }
                self.settle()?;
            }
        }
        let closed = self.conn.as_ref().and_then(|c| c.closed_at.filter(|_| c.closed_by_session));
        if let (true, Some(at)) = (by_client, closed) {
            if at + tolerance < t {
                return Err(self.mismatch(
                    MismatchKind::Close,
                    format!("the session to close the connection around {t}"),
                    format!("closed at {at}"),
                ));
            }
        }
        Ok(())
    }

    // ---- frames --------------------------------------------------------------------

    fn client_frame(&mut self, frame: &Frame, decoded: &DecodedFrame, t: Instant) -> Result<(), ReplayError> {
        self.advance_to(t)?;
        match decoded {
            DecodedFrame::ConnectRequest(want) => {
                if !self.dialing {
                    let got =
                        format!("no connect pending (status {:?})", self.client.as_ref().map(|c| c.session().status()));
                    return Err(self.mismatch(
                        MismatchKind::Connect,
                        "IoCommand::Connect before the ConnectRequest",
                        got,
                    ));
                }
                self.dialing = false;
                if let Some(conn) = &mut self.conn {
                    conn.open = true;
                }
                let now = self.now;
                if let Some(client) = &mut self.client {
                    client.handle_connected(now);
                }
                self.settle()?;
                match self.pop_emitted() {
                    Some(Emitted::Connect(got)) if got == *want => {
                        self.matched();
                        Ok(())
                    }
                    Some(other) => {
                        Err(self.mismatch(MismatchKind::ConnectRequest, format!("{want:?}"), describe_emitted(&other)))
                    }
                    None => Err(self.mismatch(MismatchKind::MissingFrame, format!("{want:?}"), "nothing written")),
                }
            }
            DecodedFrame::Request(want) => self.request_frame(frame, want),
            other => Err(self.unsupported(format!("client frame decoded as {other:?}"))),
        }
    }

    fn request_frame(&mut self, frame: &Frame, want: &RequestFrame) -> Result<(), ReplayError> {
        if !counted(&want.request) {
            if want.request != Request::Ping {
                if let Some(conn) = &mut self.conn {
                    conn.skipped.insert(want.header.xid.0);
                }
            }
            return Ok(());
        }
        let (got, got_payload) = match self.pop_emitted() {
            Some(Emitted::Request(got, payload)) => (got, payload),
            Some(other) => {
                return Err(self.mismatch(MismatchKind::Frame, describe(want), describe_emitted(&other)));
            }
            None => return Err(self.mismatch(MismatchKind::MissingFrame, describe(want), "nothing written")),
        };
        if got.header.op != want.header.op {
            return Err(self.mismatch(MismatchKind::Frame, describe(want), describe(&got)));
        }
        match (&want.request, &got.request) {
            (Request::SetWatches(w), Request::SetWatches(g)) => {
                let mut expected = strip_ensemble(w);
                for list in &mut expected.lists {
                    for path in list.iter_mut() {
                        *path = self.uuids.zoolock_path(path);
                    }
                    list.sort();
                }
                let mut actual = Watches {
                    relative_zxid: g.relative_zxid,
                    lists: [g.data_watches.clone(), g.exist_watches.clone(), g.child_watches.clone()],
                };
                for list in &mut actual.lists {
                    list.sort();
                }
                if expected != actual {
                    return Err(self.mismatch(
                        MismatchKind::Frame,
                        format!("setWatches {expected:?} (without {ENSEMBLE_CONFIG_PATH})"),
                        format!("setWatches {actual:?}"),
                    ));
                }
            }
            _ => {
                let body = RequestHeader::LEN;
                let pairs = match (frame.payload.get(body..), got_payload.get(body..)) {
                    (Some(w), Some(g)) => compare_bodies(w, g),
                    _ => None,
                };
                let Some(pairs) = pairs else {
                    return Err(self.mismatch(MismatchKind::Frame, describe(want), describe(&got)));
                };
                for (recorded, ours) in pairs {
                    if let Err(conflict) = self.uuids.learn(&recorded, &ours) {
                        return Err(self.mismatch(
                            MismatchKind::Frame,
                            format!("{} (consistent protection UUIDs)", describe(want)),
                            format!("{}: {conflict}", describe(&got)),
                        ));
                    }
                }
            }
        }
        let (trace_xid, xid) = (want.header.xid, got.header.xid);
        if trace_xid.is_ordinary() {
            if !xid.is_ordinary() {
                return Err(self.mismatch(MismatchKind::Xid, "an ordinary xid", xid.to_string()));
            }
            if let Some(conn) = &mut self.conn {
                conn.xids.insert(trace_xid.0, xid.0);
            }
        } else if trace_xid != xid {
            return Err(self.mismatch(MismatchKind::Xid, trace_xid.to_string(), xid.to_string()));
        }
        self.matched();
        Ok(())
    }

    fn server_frame(&mut self, frame: &Frame, decoded: &DecodedFrame, t: Instant) -> Result<(), ReplayError> {
        if frame.dropped {
            // Never reached the client.
            return Ok(());
        }
        self.advance_to(t)?;
        let mut payload = frame.payload.to_vec();
        let mut handshake = None;
        match decoded {
            DecodedFrame::ConnectResponse(r) => handshake = Some(r.is_expired()),
            DecodedFrame::Server { message: ServerMessage::Notification { event, .. }, .. } => {
                if event.path == ENSEMBLE_CONFIG_PATH {
                    return Ok(());
                }
            }
            DecodedFrame::Server { message: ServerMessage::Reply { header, response }, reply_to } => {
                let xid = header.xid;
                if xid == Xid::PING {
                    return Ok(());
                }
                if xid.is_ordinary() {
                    if self.conn.as_mut().is_some_and(|c| c.skipped.remove(&xid.0)) {
                        return Ok(());
                    }
                    let Some(ours) = self.conn.as_mut().and_then(|c| c.xids.remove(&xid.0)) else {
                        return Err(self.mismatch(
                            MismatchKind::Xid,
                            format!("a request with recorded xid {xid} written by zoolock"),
                            "none",
                        ));
                    };
                    if let Some(head) = payload.get_mut(..4) {
                        head.copy_from_slice(&ours.to_be_bytes());
                    }
                    if header.zxid > 0 {
                        self.max_zxid = self.max_zxid.max(header.zxid);
                    }
                    if let (Some(OpCode::CREATE2), Some(Response::Create2 { path, stat })) = (reply_to, response) {
                        self.created.insert(path.clone(), stat.czxid);
                    }
                }
            }
            other => return Err(self.unsupported(format!("server frame decoded as {other:?}"))),
        }
        if handshake.is_none() {
            self.uuids.zoolock_bytes(&mut payload);
        }
        if !self.conn.as_ref().is_some_and(|c| c.open) {
            return Err(self.mismatch(
                MismatchKind::Close,
                "the connection open to receive the server's frame",
                "zoolock has closed it",
            ));
        }
        let mut bytes = BytesMut::with_capacity(LEN_PREFIX + payload.len());
        bytes.put_u32(u32::try_from(payload.len()).unwrap_or(u32::MAX));
        bytes.extend_from_slice(&payload);
        self.push(&mut bytes)?;
        if let Some(expired) = handshake {
            if !expired {
                self.established = true;
                if let Some(conn) = &mut self.conn {
                    conn.handshake_done = true;
                }
            }
        }
        self.settle()
    }

    /// Hands framed server bytes to the client and takes what it does.
    fn push(&mut self, bytes: &mut BytesMut) -> Result<(), ReplayError> {
        let now = self.now;
        let result = match &mut self.client {
            Some(client) => client.handle_bytes(now, bytes),
            None => Ok(()),
        };
        self.drain()?;
        result.map_err(|source| ReplayError::Session { at: self.loc.clone(), source })?;
        if !bytes.is_empty() && self.conn.as_ref().is_some_and(|c| c.open) {
            let got = format!("{} bytes left in the buffer", bytes.len());
            return Err(self.mismatch(MismatchKind::Leftover, "every fed byte consumed", got));
        }
        Ok(())
    }

    /// Drains every output, then answers the pings written meanwhile.
    fn settle(&mut self) -> Result<(), ReplayError> {
        self.drain()?;
        while self.pings_due > 0 {
            self.pings_due -= 1;
            let header = ReplyHeader { xid: Xid::PING, zxid: self.max_zxid, err: ErrorCode::OK };
            let mut bytes = BytesMut::new();
            bytes.put_u32(u32::try_from(ReplyHeader::LEN).unwrap_or(16));
            header.encode(&mut bytes);
            self.push(&mut bytes)?;
        }
        Ok(())
    }

    /// Takes every output of the client: transport commands, written frames
    /// and events.
    fn drain(&mut self) -> Result<(), ReplayError> {
        let Some(client) = &mut self.client else { return Ok(()) };
        let mut io = Vec::new();
        while let Some(cmd) = client.poll_io() {
            io.push(cmd);
        }
        let mut written = BytesMut::new();
        let _ = client.poll_transmit(&mut written);
        let mut events = Vec::new();
        while let Some(event) = client.poll_event() {
            events.push(event);
        }
        for cmd in io {
            match cmd {
                IoCommand::Connect { .. } => {
                    if self.dialing || self.conn.as_ref().is_some_and(|c| c.open) {
                        return Err(self.mismatch(
                            MismatchKind::Connect,
                            "a Connect only when no socket is open",
                            "a second Connect",
                        ));
                    }
                    self.dialing = true;
                }
                IoCommand::Close => match &mut self.conn {
                    Some(conn) if conn.open => {
                        conn.open = false;
                        conn.closed_at = Some(self.now);
                        conn.closed_by_session = true;
                    }
                    _ => self.dialing = false,
                },
                other => {
                    return Err(self.mismatch(MismatchKind::Connect, "Connect or Close", format!("{other:?}")));
                }
            }
        }
        if !written.is_empty() {
            self.take_frames(&written)?;
        }
        for event in events {
            self.log_event(event)?;
        }
        Ok(())
    }

    fn take_frames(&mut self, written: &[u8]) -> Result<(), ReplayError> {
        let now = self.now;
        let Some(conn) = self.conn.as_mut().filter(|c| c.open) else {
            let got = format!("{} bytes", written.len());
            return Err(self.mismatch(MismatchKind::UnexpectedFrame, "no bytes without an open connection", got));
        };
        conn.outbound.extend_from_slice(written);
        let mut frames = Vec::new();
        loop {
            match conn.decoder.decode(&mut conn.outbound) {
                Ok(Some(payload)) => {
                    let first = !conn.connect_seen;
                    conn.connect_seen = true;
                    frames.push((first, payload));
                }
                Ok(None) => break,
                Err(e) => {
                    return Err(self.mismatch(MismatchKind::Frame, "a well-framed stream", e.to_string()));
                }
            }
        }
        for (first, payload) in frames {
            let emitted = if first {
                ConnectRequest::decode(&payload).map(Emitted::Connect)
            } else {
                RequestFrame::decode(&payload).map(|f| Emitted::Request(f, Bytes::copy_from_slice(&payload)))
            };
            let emitted = emitted.map_err(|e| {
                self.mismatch(MismatchKind::Frame, "a frame that decodes", format!("{e} in {payload:02x?}"))
            })?;
            let Some(conn) = &mut self.conn else { continue };
            if let Emitted::Request(r, _) = &emitted {
                if r.header.op == OpCode::PING {
                    let link_up =
                        conn.open && conn.handshake_done && conn.link_down_after.is_none_or(|down| now <= down);
                    if link_up {
                        self.pings_due += 1;
                    }
                    continue;
                }
            }
            conn.emitted.push_back(emitted);
        }
        Ok(())
    }

    fn log_event(&mut self, event: ClientEvent) -> Result<(), ReplayError> {
        match event {
            ClientEvent::State(ConnectionState::Closed) => Ok(()),
            ClientEvent::State(state) => {
                self.states.push_back(state);
                Ok(())
            }
            ClientEvent::Recipe { recipe, event } => {
                if let (_, RecipeEvent::Failed(_)) = unwrap_member(&event) {
                    let got = format!("{event:?} from {}", self.role_name(recipe));
                    return Err(self.mismatch(MismatchKind::Outcome, "no failure (Curator's call did not throw)", got));
                }
                self.events.push(Logged { at: self.now, recipe, event, consumed: false });
                Ok(())
            }
            other => Err(self.mismatch(MismatchKind::Outcome, "only recipe and state events", format!("{other:?}"))),
        }
    }

    fn pop_emitted(&mut self) -> Option<Emitted> {
        self.conn.as_mut().and_then(|c| c.emitted.pop_front())
    }

    fn matched(&mut self) {
        if let Some(index) = self.conn.as_ref().map(|c| c.index) {
            if let Some(tally) = self.tallies.get_mut(index) {
                tally.matched += 1;
            }
        }
    }

    // ---- steps ---------------------------------------------------------------------

    fn step(&mut self, step: &Step, t: Instant) -> Result<(), ReplayError> {
        self.advance_to(t)?;
        match step.kind.as_str() {
            "call" => {
                self.check_due(step.at_us)?;
                let action = parse_action(&step.action)
                    .ok_or_else(|| self.unsupported(format!("unknown action {:?}", step.action)))?;
                self.call(step, &action)?;
                self.settle()
            }
            "event" => self.expect_event(step),
            "observed" | "control" => Ok(()),
            other => Err(self.unsupported(format!("unknown step kind {other:?}"))),
        }
    }

    fn expect_event(&mut self, step: &Step) -> Result<(), ReplayError> {
        let what = if let Some(name) = step.action.strip_prefix("connection state ") {
            let mut state =
                parse_state(name).ok_or_else(|| self.unsupported(format!("unknown connection state {name:?}")))?;
            if state == ConnectionState::Reconnected && self.after_lost {
                // Curator reports its new session as RECONNECTED.
                state = ConnectionState::Connected;
            }
            self.after_lost = state == ConnectionState::Lost;
            Expect::State(state)
        } else if step.action == "RevocationListener.revocationRequested" {
            Expect::Recipe { role: Role::Lock, half: None, want: Want::RevocationRequested }
        } else {
            return Err(self.unsupported(format!("unknown event {:?}", step.action)));
        };
        self.expectations.push_back(Expectation { at: self.loc.clone(), due_us: step.at_us, not_before: START, what });
        Ok(())
    }

    fn expect(&mut self, step: &Step, role: Role, half: Option<usize>, want: Want) {
        self.expectations.push_back(Expectation {
            at: self.loc.clone(),
            due_us: step.return_us.unwrap_or(step.at_us),
            not_before: self.now,
            what: Expect::Recipe { role, half, want },
        });
    }

    fn call(&mut self, step: &Step, action: &Action) -> Result<(), ReplayError> {
        let now = self.now;
        match action {
            Action::Start => {
                if self.client.is_none() {
                    self.create_client(now);
                }
                Ok(())
            }
            Action::Close => {
                if let Some(client) = &mut self.client {
                    client.close(now);
                }
                Ok(())
            }
            Action::ReleaseLost => Ok(()),
            Action::Acquire { timeout, revocable, half } => {
                let deadline = timeout.map(|d| now + d);
                let (revocable, half) = (*revocable, *half);
                if revocable && matches!(self.lock, LockKind::Mutex) {
                    self.on_lock_recipe::<Mutex>(|m, _| m.make_revocable())?;
                }
                match (&self.lock, half) {
                    (LockKind::Semaphore { .. }, _) => {
                        self.on_lock_recipe::<Semaphore>(|s, now| s.acquire(now, 1, deadline))
                    }
                    (LockKind::ReadWrite, None) => {
                        Err(self.unsupported(String::from("a read-write lock acquire names a half")))
                    }
                    // Every lock kind through the lock capability; an acquire
                    // of a held part is Curator's reentrant acquire.
                    (_, half) => self.on_lock(|l, now| {
                        let part = half.unwrap_or(0);
                        match l.hold(part) {
                            Some(_) => l.reenter_part(now, part),
                            None => l.acquire_part(now, part, deadline),
                        }
                    }),
                }?;
                let want = match &step.result {
                    Value::Bool(true) => Want::Acquired { lease: None },
                    Value::Bool(false) => Want::TimedOut,
                    Value::String(lease) => Want::Acquired { lease: Some(lease.clone()) },
                    other => return Err(self.unsupported(format!("acquire result {other}"))),
                };
                self.expect(step, Role::Lock, half, want);
                Ok(())
            }
            Action::Release { half, reports } => {
                let half = *half;
                match (&self.lock, half) {
                    (LockKind::Semaphore { .. }, _) => {
                        Err(self.unsupported(String::from("a semaphore returns leases (returnLease)")))
                    }
                    (LockKind::ReadWrite, None) => {
                        Err(self.unsupported(String::from("a read-write lock release names a half")))
                    }
                    (_, half) => self.on_lock(|l, now| l.release_part(now, half.unwrap_or(0))),
                }?;
                if *reports {
                    self.expect(step, Role::Lock, half, Want::Released);
                }
                Ok(())
            }
            Action::ReturnLease => {
                self.on_lock_recipe::<Semaphore>(|s, now| {
                    let lease = s.leases().first().map(|l| String::from(*l));
                    match lease {
                        Some(lease) => s.return_lease(now, &lease),
                        None => Err(ApiMisuse::InvalidState("no lease held")),
                    }
                })?;
                self.expect(step, Role::Lock, None, Want::Released);
                Ok(())
            }
            Action::Participants => {
                let want: Vec<String> = match &step.result {
                    Value::Array(paths) => paths.iter().filter_map(Value::as_str).map(str::to_owned).collect(),
                    other => return Err(self.unsupported(format!("getParticipantNodes result {other}"))),
                };
                match self.participants {
                    Some(id) => self.command::<Participants>(id, |p, now| p.refresh(now))?,
                    None => {
                        let base = self.base_path()?;
                        let recipe = match self.lock {
                            LockKind::ReadWrite => Participants::for_rwlock(base),
                            LockKind::Semaphore { .. } | LockKind::SemaphoreMutex => {
                                Participants::for_semaphore(base).map_err(|e| self.submit_error(e.into()))?
                            }
                            _ => Participants::for_mutex(base),
                        };
                        self.participants = Some(self.add(Box::new(recipe.without_data())));
                    }
                }
                self.expect(step, Role::Participants, None, Want::Participants(want));
                Ok(())
            }
            Action::Revoke => {
                let Some(node) = step.result.as_str() else {
                    return Err(self.unsupported(String::from("attemptRevoke without the node path as its result")));
                };
                let node = self.uuids.zoolock_path(node);
                let node = ZkPath::new(&node).map_err(|e| self.submit_error(e.into()))?;
                match self.revoker {
                    Some(id) => self.command::<Revoker>(id, |r, now| r.revoke(now))?,
                    None => self.revoker = Some(self.add(Box::new(Revoker::new(node)))),
                }
                self.expect(step, Role::Revoker, None, Want::RevokeSent);
                Ok(())
            }
        }
    }

    fn base_path(&self) -> Result<ZkPath, ReplayError> {
        ZkPath::new(&self.summary.base_path).map_err(|e| self.submit_error(e.into()))
    }

    fn lock_config(&self) -> LockConfig {
        LockConfig::new(self.seed ^ 0x10c4).with_plan(OpPlan::Curator).with_data(self.data.clone())
    }

    fn add(&mut self, recipe: Box<dyn Recipe>) -> RecipeId {
        let now = self.now;
        match &mut self.client {
            Some(client) => client.add_recipe(now, recipe),
            None => {
                let mut client = Client::new(self.session_config.clone(), now);
                let id = client.add_recipe(now, recipe);
                self.client = Some(client);
                id
            }
        }
    }

    /// Runs `f` on the lock through the lock capability, creating it first.
    fn on_lock(
        &mut self,
        f: impl FnOnce(&mut dyn LockRecipe, Instant) -> Result<(), ApiMisuse>,
    ) -> Result<(), ReplayError> {
        let id = self.lock_id()?;
        let now = self.now;
        let result = match &mut self.client {
            Some(client) => client.command_lock(now, id, f).and_then(|r| r),
            None => Err(ApiMisuse::UnknownRecipe(id.0)),
        };
        result.map_err(|e| self.submit_error(e))
    }

    /// Runs `f` on the lock recipe as an `R` (its own commands: a mutex's
    /// `make_revocable`, the semaphore's), creating it first.
    fn on_lock_recipe<R: Recipe>(
        &mut self,
        f: impl FnOnce(&mut R, Instant) -> Result<(), ApiMisuse>,
    ) -> Result<(), ReplayError> {
        let id = self.lock_id()?;
        self.command(id, f)
    }

    /// The lock recipe, created on first use.
    fn lock_id(&mut self) -> Result<RecipeId, ReplayError> {
        Ok(match self.lock_recipe {
            Some(id) => id,
            None => {
                let base = self.base_path()?;
                let config = self.lock_config();
                let recipe: Box<dyn Recipe> = match self.lock {
                    LockKind::Mutex => Box::new(Mutex::new(base, config)),
                    LockKind::ReadWrite => Box::new(ReadWriteLock::new(base, config)),
                    LockKind::SemaphoreMutex => Box::new(SemaphoreMutex::new(base, config)),
                    LockKind::Semaphore { max_leases } => Box::new(Semaphore::new(base, *max_leases, config)),
                    LockKind::MultiLock { paths } => {
                        let paths = paths
                            .iter()
                            .map(|p| ZkPath::new(p))
                            .collect::<Result<Vec<_>, _>>()
                            .map_err(|e| self.submit_error(e.into()))?;
                        Box::new(MultiLock::new(paths, config).map_err(|e| self.submit_error(e))?)
                    }
                };
                let id = self.add(recipe);
                self.lock_recipe = Some(id);
                id
            }
        })
    }

    fn command<R: Recipe>(
        &mut self,
        id: RecipeId,
        f: impl FnOnce(&mut R, Instant) -> Result<(), ApiMisuse>,
    ) -> Result<(), ReplayError> {
        let now = self.now;
        let result = match &mut self.client {
            Some(client) => client.command::<R, _>(now, id, f).and_then(|r| r),
            None => Err(ApiMisuse::UnknownRecipe(id.0)),
        };
        result.map_err(|e| self.submit_error(e))
    }

    fn submit_error(&self, source: ApiMisuse) -> ReplayError {
        ReplayError::Submit { at: self.loc.clone(), source }
    }

    // ---- outcomes ------------------------------------------------------------------

    /// Checks every expectation due by `by_us`.
    fn check_due(&mut self, by_us: u64) -> Result<(), ReplayError> {
        let mut later = VecDeque::new();
        while let Some(exp) = self.expectations.pop_front() {
            if exp.due_us > by_us {
                later.push_back(exp);
                continue;
            }
            let saved = std::mem::replace(&mut self.loc, exp.at.clone());
            let result = self.verify(&exp);
            self.loc = saved;
            result?;
        }
        self.expectations = later;
        Ok(())
    }

    fn verify(&mut self, exp: &Expectation) -> Result<(), ReplayError> {
        match &exp.what {
            Expect::State(want) => match self.states.pop_front() {
                Some(got) if got == *want => Ok(()),
                Some(got) => Err(self.mismatch(MismatchKind::Outcome, format!("state {want:?}"), format!("{got:?}"))),
                None => Err(self.mismatch(MismatchKind::Outcome, format!("state {want:?}"), "no state reported")),
            },
            Expect::Recipe { role, half, want } => {
                let recipe = match role {
                    Role::Lock => self.lock_recipe,
                    Role::Participants => self.participants,
                    Role::Revoker => self.revoker,
                };
                let Some(recipe) = recipe else {
                    return Err(self.mismatch(MismatchKind::Outcome, format!("{want:?}"), "no such recipe"));
                };
                let found = self.events.iter().position(|l| {
                    let (index, event) = unwrap_member(&l.event);
                    !l.consumed
                        && l.recipe == recipe
                        && l.at >= exp.not_before
                        && (half.is_none() || index == *half)
                        && same_kind(want, event)
                });
                let Some(pos) = found else {
                    let pending: Vec<String> = self
                        .events
                        .iter()
                        .filter(|l| !l.consumed && l.recipe == recipe)
                        .map(|l| format!("{:?} at {}", l.event, l.at))
                        .collect();
                    let expected = match half {
                        Some(h) => format!("{want:?} from half {h}"),
                        None => format!("{want:?}"),
                    };
                    return Err(self.mismatch(
                        MismatchKind::Outcome,
                        format!("{expected} reported by the call's return"),
                        format!("unmatched events {pending:?}"),
                    ));
                };
                let event = self.events.get(pos).map(|l| unwrap_member(&l.event).1.clone());
                if let Some(l) = self.events.get_mut(pos) {
                    l.consumed = true;
                }
                match (want, event) {
                    (Want::Acquired { lease }, Some(RecipeEvent::Acquired { node, token })) => {
                        let recorded = self.uuids.recorded_path(&node);
                        match self.created.get(&recorded) {
                            Some(czxid) if *czxid == token.0 => {}
                            Some(czxid) => {
                                return Err(self.mismatch(
                                    MismatchKind::Outcome,
                                    format!("fencing token {czxid} (czxid of {recorded})"),
                                    format!("{}", token.0),
                                ));
                            }
                            None => {
                                return Err(self.mismatch(
                                    MismatchKind::Outcome,
                                    "Acquired for a node this client created in the trace",
                                    format!("Acquired {node} (recorded {recorded})"),
                                ));
                            }
                        }
                        if let Some(lease) = lease {
                            if recorded.rsplit('/').next() != Some(lease.as_str()) {
                                return Err(self.mismatch(
                                    MismatchKind::Outcome,
                                    format!("lease {lease}"),
                                    format!("Acquired {recorded}"),
                                ));
                            }
                        }
                        Ok(())
                    }
                    (Want::Participants(paths), Some(RecipeEvent::Participants(list))) => {
                        let got: Vec<String> = list.iter().map(|p| self.uuids.recorded_path(&p.path)).collect();
                        if got != *paths {
                            return Err(self.mismatch(
                                MismatchKind::Outcome,
                                format!("participants {paths:?}"),
                                format!("{got:?}"),
                            ));
                        }
                        Ok(())
                    }
                    _ => Ok(()),
                }
            }
        }
    }

    fn finish(&mut self) -> Result<(), ReplayError> {
        self.end_connection()?;
        self.settle()?;
        self.loc = Location { file: self.summary.path.clone(), line: 0 };
        self.check_due(u64::MAX)?;
        if let Some(state) = self.states.front() {
            let got = format!("{state:?} (and {} more)", self.states.len() - 1);
            return Err(self.mismatch(MismatchKind::Outcome, "no connection state Curator did not report", got));
        }
        let unmatched: Vec<String> = self
            .events
            .iter()
            // Queue positions are zoolock's own progress report; Curator
            // records none.
            .filter(|l| !l.consumed && !mirrors_connection(&l.event))
            .filter(|l| !matches!(unwrap_member(&l.event).1, RecipeEvent::Queued { .. }))
            .map(|l| format!("{:?} from {} at {}", l.event, self.role_name(l.recipe), l.at))
            .collect();
        if !unmatched.is_empty() {
            return Err(self.mismatch(
                MismatchKind::Outcome,
                format!("no events beyond the recorded outcomes of client {}", self.name),
                format!("{unmatched:?}"),
            ));
        }
        Ok(())
    }

    fn role_name(&self, id: RecipeId) -> &'static str {
        if Some(id) == self.lock_recipe {
            "the lock"
        } else if Some(id) == self.participants {
            "Participants"
        } else if Some(id) == self.revoker {
            "Revoker"
        } else {
            "an unknown recipe"
        }
    }

    fn mismatch(&self, kind: MismatchKind, expected: impl Into<String>, got: impl Into<String>) -> ReplayError {
        ReplayError::Mismatch { at: self.loc.clone(), kind, expected: expected.into(), got: got.into() }
    }

    fn unsupported(&self, reason: String) -> ReplayError {
        ReplayError::Unsupported { at: self.loc.clone(), reason }
    }
}

/// True when `event` is the kind of outcome `want` names.
fn same_kind(want: &Want, event: &RecipeEvent) -> bool {
    matches!(
        (want, event),
        (Want::Acquired { .. }, RecipeEvent::Acquired { .. })
            | (Want::TimedOut, RecipeEvent::TimedOut)
            | (Want::Released, RecipeEvent::Released)
            | (Want::Participants(_), RecipeEvent::Participants(_))
            | (Want::RevokeSent, RecipeEvent::RevokeSent)
            | (Want::RevocationRequested, RecipeEvent::RevocationRequested)
    )
}

fn describe(frame: &RequestFrame) -> String {
    format!("{:?}", frame.request)
}

fn describe_emitted(e: &Emitted) -> String {
    match e {
        Emitted::Connect(c) => format!("{c:?}"),
        Emitted::Request(r, _) => describe(r),
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    const U1: &str = "56e55bc4-230a-4140-b2d2-5f8ba3d28c4b";
    const U2: &str = "7f027929-100a-4b11-96c8-0a8a91fd9da1";

    #[test]
    fn finds_protection_uuids_only() {
        let path = format!("/b/_c_{U1}-lock-0000000001 /b/{U1}-lock- _c_{U2}x _c_{U2}-");
        let spans = uuid_spans(path.as_bytes());
        assert_eq!(spans.len(), 2);
        assert_eq!(&path[spans[0].clone()], U1);
        assert_eq!(&path[spans[1].clone()], U2);
        assert!(uuid_spans(format!("_c_{U1}").as_bytes()).is_empty());
    }

    #[test]
    fn bodies_compare_modulo_uuids() {
        let want = format!("/b/_c_{U1}-lock-");
        let got = format!("/b/_c_{U2}-lock-");
        assert_eq!(compare_bodies(want.as_bytes(), got.as_bytes()), Some(vec![(U1.to_owned(), U2.to_owned())]));
        assert_eq!(compare_bodies(want.as_bytes(), format!("/b/_c_{U2}-lokk-").as_bytes()), None);
        assert_eq!(compare_bodies(want.as_bytes(), format!("/b/_c_{U2}-lock-x").as_bytes()), None);
    }

    #[test]
    fn uuid_map_is_one_to_one() {
        let mut map = UuidMap::default();
        assert!(map.learn(U1, U2).is_ok());
        assert!(map.learn(U1, U2).is_ok());
        assert!(map.learn(U1, U1).is_err());
        assert!(map.learn(U2, U2).is_err());
        assert_eq!(map.zoolock_path(&format!("/b/_c_{U1}-lock-1")), format!("/b/_c_{U2}-lock-1"));
        assert_eq!(map.recorded_path(&format!("/b/_c_{U2}-lock-1")), format!("/b/_c_{U1}-lock-1"));
    }

    #[test]
    fn actions() {
        assert_eq!(
            parse_action("acquire(300 ms)"),
            Some(Action::Acquire { timeout: Some(Duration::from_millis(300)), revocable: false, half: None })
        );
        assert_eq!(
            parse_action("readLock.acquire (holding write)"),
            Some(Action::Acquire { timeout: None, revocable: false, half: Some(READ) })
        );
        assert_eq!(parse_action("writeLock.release"), Some(Action::Release { half: Some(WRITE), reports: true }));
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
