//! Recipe-level replay: zoolock's [`Client`] and lock recipes, in the Curator
//! op plan of the recorded Curator ([`OpPlan::Curator`] for 5.4,
//! [`OpPlan::Curator57`] for 5.5 to 5.7), driven through a whole recorded scenario.
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
//!   `base_path`. Every recipe runs with the summary's Curator's plan and the node data
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
//!
//! [`OpPlan::Curator`]: zoolock_core::recipes::OpPlan::Curator
//! [`OpPlan::Curator57`]: zoolock_core::recipes::OpPlan::Curator57
//! [`Mutex::make_revocable`]: zoolock_core::recipes::Mutex::make_revocable
//! [`ReadWriteLock`]: zoolock_core::recipes::ReadWriteLock
//! [`Participants`]: zoolock_core::recipes::Participants
//! [`Revoker`]: zoolock_core::recipes::Revoker

mod outcomes;
mod scenario;
mod uuids;

use std::collections::{HashMap, HashSet, VecDeque};
use std::path::{Path, PathBuf};
use std::time::Duration;

use bytes::{BufMut, Bytes, BytesMut};
use zoolock_core::{
    Client, ClientEvent, ConnectString, ConnectionState, Instant, RecipeEvent, RecipeId, Rng, SessionConfig,
    SessionStatus,
};
use zoolock_wire::{LEN_PREFIX, OpCode, Request, RequestFrame, RequestHeader, Response, ServerMessage, Xid};

use crate::decode::DecodedFrame;
use crate::replay::harness::{Chunking, Rules, Wire, Written, WrittenFrame, describe};
use crate::replay::{Location, MismatchKind, ReplayError};
use crate::trace::{Direction, Frame, Scenario, Trace};
use outcomes::{Expectation, Logged, unwrap_member};
use scenario::{ConnInfo, ItemKind, Summary, Timeline, TraceLock, Watches, counted, strip_ensemble};
use uuids::{UuidMap, compare_bodies};

/// The node Curator's EnsembleTracker reads and watches.
pub const ENSEMBLE_CONFIG_PATH: &str = "/zookeeper/config";

/// Virtual time of the scenario's origin.
const START: Instant = Instant::from_millis(1_000);

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
    let lock = TraceLock::from_summary(&summary)?;
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

// ---- the run ---------------------------------------------------------------------------

/// What every client of a scenario shares.
#[derive(Clone, Copy)]
struct Scene<'a> {
    summary: &'a Summary,
    lock: &'a TraceLock,
    config: &'a RecipeReplayConfig,
    origin_us: u64,
}

/// What the recipe replay keeps of every event: connection states in order,
/// recipe events for the outcome checks. A `Failed` event is a mismatch at once.
#[derive(Debug, Default)]
struct EventLog {
    lock_recipe: Option<RecipeId>,
    participants: Option<RecipeId>,
    revoker: Option<RecipeId>,
    states: VecDeque<ConnectionState>,
    events: Vec<Logged>,
}

impl Rules<Client> for EventLog {
    fn event(&mut self, wire: &Wire<Client>, event: ClientEvent) -> Result<(), ReplayError> {
        match event {
            ClientEvent::State(ConnectionState::Closed) => Ok(()),
            ClientEvent::State(state) => {
                self.states.push_back(state);
                Ok(())
            }
            ClientEvent::Recipe { recipe, event } => {
                if let (_, RecipeEvent::Failed(_)) = unwrap_member(&event) {
                    let got = format!("{event:?} from {}", self.role_name(recipe));
                    return Err(wire.mismatch(MismatchKind::Outcome, "no failure (Curator's call did not throw)", got));
                }
                self.events.push(Logged { at: wire.now, recipe, event, consumed: false });
                Ok(())
            }
            other => Err(wire.mismatch(MismatchKind::Outcome, "only recipe and state events", format!("{other:?}"))),
        }
    }
}

impl EventLog {
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
}

struct ClientRun<'a> {
    name: &'a str,
    summary: &'a Summary,
    lock: &'a TraceLock,
    config: &'a RecipeReplayConfig,
    seed: u64,
    session_config: SessionConfig,
    data: Bytes,
    origin_us: u64,
    shift: Duration,
    wire: Wire<Client>,
    log: EventLog,
    /// The typed handles of the recipes the replay made.
    handles: outcomes::Handles,
    tallies: Vec<ConnectionTally>,
    /// Recorded xid → zoolock's, on the current connection.
    xids: HashMap<i32, i32>,
    /// Recorded requests zoolock does not send (the EnsembleTracker's), whose
    /// replies are not fed.
    skipped: HashSet<i32>,
    /// The current zoolock session completed a handshake.
    established: bool,
    uuids: UuidMap,
    /// Recorded create2 replies: path → czxid.
    created: HashMap<String, i64>,
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
        let seed = Rng::fork(config.seed, salt);
        // Curator sends no quorum confirmation, and a replay compares the op
        // plan with its frames: the confirmation (zoolock's own, ARCHITECTURE
        // §7) is off here and tested where it is defined (core's
        // quorum_lease tests, the e2e loss_quorum_unconfirmed, the simulator).
        let session_config = SessionConfig::new(connect_string, seed)
            .with_session_timeout(timeline.session_timeout)
            .with_reconnect_jitter(config.reconnect_jitter)
            .with_confirm_quorum(false);
        let mut wire = Wire::new(None, START, Chunking::Whole);
        wire.at = Location { file: summary.path.clone(), line: 0 };
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
            wire,
            log: EventLog::default(),
            handles: outcomes::Handles::default(),
            tallies,
            xids: HashMap::new(),
            skipped: HashSet::new(),
            established: false,
            uuids: UuidMap::default(),
            created: HashMap::new(),
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
                    self.start_connection(*index, info, t)?;
                }
                ItemKind::Frame(frame, decoded) => {
                    self.wire.at.line = frame.line;
                    match frame.dir {
                        Direction::C2s => self.client_frame(frame, decoded, t)?,
                        Direction::S2c => self.server_frame(frame, decoded, t)?,
                    }
                }
                ItemKind::Close(close) => {
                    self.wire.at.line = close.line;
                    self.wire.close(close, t, self.config.close_tolerance, &mut self.log)?;
                }
                ItemKind::Step(step) => {
                    let saved = std::mem::replace(&mut self.wire.at, self.summary.location(step));
                    self.step(step, t)?;
                    self.wire.at = saved;
                }
            }
        }
        self.finish()
    }

    // ---- time ----------------------------------------------------------------------

    fn instant(&self, at_us: u64) -> Instant {
        START + Duration::from_micros(at_us.saturating_sub(self.origin_us)) + self.shift
    }

    fn now(&self) -> Instant {
        self.wire.now
    }

    /// Runs every timer due up to `target`, then sets the clock to it.
    fn advance_to(&mut self, target: Instant) -> Result<(), ReplayError> {
        self.wire.advance_to(target, &mut self.log)
    }

    /// Drains every output, then answers the pings written meanwhile.
    fn settle(&mut self) -> Result<(), ReplayError> {
        self.wire.settle(&mut self.log)
    }

    /// Runs timers until `done` holds, moving time as far as needed (at most
    /// `limit` past now), and shifts the rest of the timeline by the delay
    /// past `recorded`.
    fn advance_until(
        &mut self,
        recorded_us: u64,
        limit: Duration,
        done: impl Fn(&Wire<Client>) -> bool,
    ) -> Result<bool, ReplayError> {
        let give_up = self.now() + limit;
        let held = self.wire.advance_until(Some(give_up), &mut self.log, |w, _| done(w))?;
        let recorded = self.instant(recorded_us);
        if self.now() > recorded {
            self.shift += self.now() - recorded;
        }
        Ok(held)
    }

    // ---- connections ---------------------------------------------------------------

    fn status(&self) -> Option<SessionStatus> {
        self.wire.machine().map(|c| c.session().status())
    }

    fn start_connection(&mut self, index: usize, info: &ConnInfo, t: Instant) -> Result<(), ReplayError> {
        self.end_connection()?;
        self.wire.at = Location { file: info.file.clone(), line: 1 };
        if self.wire.machine().is_none() {
            self.wire.set_machine(Client::new(self.session_config.clone(), t));
        }
        self.advance_to(t)?;
        let limit = self.session_config.session_timeout * 3;
        if info.connect.session_id == 0 && self.established {
            // The recording opens a new session: zoolock's must have expired.
            let expired = self.advance_until(info.t0_us, limit, |w| {
                w.machine().is_some_and(|c| c.session().status() == SessionStatus::Expired)
            })?;
            if !expired {
                let got = format!("{:?}", self.status());
                return Err(self.mismatch(
                    MismatchKind::Handshake,
                    "the session expired before the recorded client opened a new one",
                    got,
                ));
            }
            let now = self.now();
            if let Some(client) = self.wire.machine_mut() {
                client
                    .restart_session(now)
                    .map_err(|source| ReplayError::Submit { at: self.wire.at.clone(), source })?;
            }
            self.established = false;
            self.wire.max_zxid = 0;
            self.settle()?;
        } else if info.connect.session_id != 0 && self.status() == Some(SessionStatus::Expired) {
            return Err(self.mismatch(
                MismatchKind::Handshake,
                format!("a live session to resume as {:#x}", info.connect.session_id),
                "the session has expired",
            ));
        }
        if !self.advance_until(info.t0_us, limit, |w| w.dialing)? {
            let got = format!("no connect attempt (status {:?})", self.status());
            return Err(self.mismatch(MismatchKind::Connect, "the session to dial for this connection", got));
        }
        let t0 = self.instant(info.t0_us);
        self.wire.open_link(index, info.file.clone(), t0)?;
        self.wire.at.line = 1;
        if let Some(link) = &mut self.wire.link {
            link.link_down_after = info.link_down_us.map(|us| t0 + Duration::from_micros(us));
        }
        self.xids.clear();
        self.skipped.clear();
        Ok(())
    }

    /// The current connection ends with nothing left over; its tally is kept.
    fn end_connection(&mut self) -> Result<(), ReplayError> {
        if self.wire.link.is_none() {
            return Ok(());
        }
        let saved = self.wire.at.clone();
        let link = self.wire.end_link(&mut self.log)?;
        if let Some(tally) = self.tallies.get_mut(link.index) {
            tally.matched = link.frames_matched;
        }
        self.wire.link = None;
        self.wire.at = saved;
        Ok(())
    }

    // ---- frames --------------------------------------------------------------------

    fn client_frame(&mut self, frame: &Frame, decoded: &DecodedFrame, t: Instant) -> Result<(), ReplayError> {
        self.advance_to(t)?;
        match decoded {
            DecodedFrame::ConnectRequest(want) => self.wire.connect(want, &mut self.log),
            DecodedFrame::Request(want) => self.request_frame(frame, want),
            other => Err(self.unsupported(format!("client frame decoded as {other:?}"))),
        }
    }

    fn request_frame(&mut self, frame: &Frame, want: &RequestFrame) -> Result<(), ReplayError> {
        if !counted(&want.request) {
            if want.request != Request::Ping {
                self.skipped.insert(want.header.xid.0);
            }
            return Ok(());
        }
        let (got, got_payload) = match self.wire.pop_written() {
            Some(Written { frame: WrittenFrame::Request(got, payload), .. }) => (got, payload),
            Some(other) => return Err(self.mismatch(MismatchKind::Frame, describe_request(want), describe(&other))),
            None => return Err(self.mismatch(MismatchKind::MissingFrame, describe_request(want), "nothing written")),
        };
        if got.header.op != want.header.op {
            return Err(self.mismatch(MismatchKind::Frame, describe_request(want), describe_request(&got)));
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
                    return Err(self.mismatch(MismatchKind::Frame, describe_request(want), describe_request(&got)));
                };
                for (recorded, ours) in pairs {
                    if let Err(conflict) = self.uuids.learn(&recorded, &ours) {
                        return Err(self.mismatch(
                            MismatchKind::Frame,
                            format!("{} (consistent protection UUIDs)", describe_request(want)),
                            format!("{}: {conflict}", describe_request(&got)),
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
            self.xids.insert(trace_xid.0, xid.0);
        } else if trace_xid != xid {
            return Err(self.mismatch(MismatchKind::Xid, trace_xid.to_string(), xid.to_string()));
        }
        self.wire.matched();
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
            DecodedFrame::ConnectResponse(r) => handshake = Some(r),
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
                    if self.skipped.remove(&xid.0) {
                        return Ok(());
                    }
                    let Some(ours) = self.xids.remove(&xid.0) else {
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
                        self.wire.max_zxid = self.wire.max_zxid.max(header.zxid);
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
        let mut bytes = BytesMut::with_capacity(LEN_PREFIX + payload.len());
        bytes.put_u32(u32::try_from(payload.len()).unwrap_or(u32::MAX));
        bytes.extend_from_slice(&payload);
        self.wire.feed(&bytes, handshake.is_some(), &mut self.log)?;
        if let Some(response) = handshake.filter(|r| !r.is_expired()) {
            self.established = true;
            self.wire.ping_gap = Duration::from_millis(u64::try_from(response.timeout_ms).unwrap_or(0)) / 3;
            if let Some(link) = &mut self.wire.link {
                link.handshake_done = true;
            }
        }
        Ok(())
    }

    fn mismatch(&self, kind: MismatchKind, expected: impl Into<String>, got: impl Into<String>) -> ReplayError {
        self.wire.mismatch(kind, expected, got)
    }

    fn unsupported(&self, reason: String) -> ReplayError {
        self.wire.unsupported(reason)
    }
}

fn describe_request(frame: &RequestFrame) -> String {
    format!("{:?}", frame.request)
}
