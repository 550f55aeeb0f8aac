//! Benchmark support for zoolock: the raw-protocol probe behind `zk-rawcycle`.
//!
//! The probe measures the physical limit of a lock cycle on one ZooKeeper
//! session, with no client logic at all: no session machine, no recipe, no
//! async runtime. It speaks frames encoded with [`zoolock_wire`] over a
//! blocking [`TcpStream`] with `TCP_NODELAY`, and runs one of three [`Plan`]s,
//! each cycle creating and deleting one ephemeral-sequential node under a fresh
//! parent. `scripts/bench-vs-peers.sh` puts its figures next to zoolock's and
//! Curator's.

mod chain;

pub use chain::{ChainSummary, run_chain};

use std::collections::VecDeque;
use std::fmt;
use std::io::{self, Read, Write};
use std::net::{TcpStream, ToSocketAddrs};
use std::time::{Duration, Instant, SystemTime, UNIX_EPOCH};

use zoolock_wire::{
    Acl, Bytes, BytesMut, ConnectRequest, ConnectResponse, CreateMode, CreateRequest, DeleteRequest, ErrorCode,
    FrameDecoder, OpCode, PASSWORD_LEN, PathWatchRequest, Request, RequestFrame, Response, ServerMessage, WatcherEvent,
    Xid, encode_frame,
};

/// Session timeout asked for in the handshake.
pub const SESSION_TIMEOUT_MS: i32 = 10_000;

/// How long a blocking read or write may stall before the probe gives up.
pub const IO_TIMEOUT: Duration = Duration::from_secs(30);

/// The lock node's data, as Curator writes it by default (the local address).
const NODE_DATA: &[u8] = b"127.0.0.1";

/// Digits in a ZooKeeper sequence suffix.
const SEQ_DIGITS: usize = 10;

/// How the requests of one cycle are spread over round trips.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Plan {
    /// create, then getChildren, then delete, each waiting for its reply
    /// (Curator's order): three round trips.
    ThreeRtt,
    /// create and getChildren written back to back, both replies awaited,
    /// then delete: two round trips.
    TwoRtt,
    /// create, getChildren and a delete of the predicted sequence name in one
    /// write: one round trip, an upper bound no lock can reach.
    OneRtt,
}

impl Plan {
    /// Every plan, slowest first.
    pub const ALL: [Plan; 3] = [Plan::ThreeRtt, Plan::TwoRtt, Plan::OneRtt];

    /// The plan's name on the command line and in the JSON output.
    pub fn name(self) -> &'static str {
        match self {
            Plan::ThreeRtt => "3rtt",
            Plan::TwoRtt => "2rtt",
            Plan::OneRtt => "1rtt",
        }
    }

    /// Parses a plan name (`3rtt`, `2rtt`, `1rtt`).
    pub fn parse(s: &str) -> Option<Plan> {
        Plan::ALL.into_iter().find(|p| p.name() == s)
    }
}

impl fmt::Display for Plan {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.write_str(self.name())
    }
}

/// Why a probe run failed.
#[derive(Debug)]
pub enum ProbeError {
    /// Connecting, reading or writing failed.
    Io(io::Error),
    /// The server sent something the codec rejected, or a reply that does not
    /// fit the request it answers.
    Protocol(String),
    /// The server answered a request with a non-OK error code.
    Server {
        /// The request's opcode.
        op: OpCode,
        /// The path the request named.
        path: String,
        /// The server's error code.
        err: ErrorCode,
    },
}

impl fmt::Display for ProbeError {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        match self {
            ProbeError::Io(e) => write!(f, "I/O error: {e}"),
            ProbeError::Protocol(m) => write!(f, "protocol error: {m}"),
            ProbeError::Server { op, path, err } => write!(f, "{op} {path} failed: {err} ({})", err.0),
        }
    }
}

impl std::error::Error for ProbeError {}

impl From<io::Error> for ProbeError {
    fn from(e: io::Error) -> Self {
        ProbeError::Io(e)
    }
}

/// One request sent and not yet answered.
#[derive(Debug)]
struct Pending {
    xid: Xid,
    op: OpCode,
    path: String,
}

/// One ZooKeeper session over a blocking socket, speaking codec frames only.
#[derive(Debug)]
pub struct RawSession {
    stream: TcpStream,
    rx: BytesMut,
    tx: BytesMut,
    decoder: FrameDecoder,
    next_xid: i32,
    pending: VecDeque<Pending>,
    session_id: i64,
    /// Watch notifications read and not yet taken by [`RawSession::wait_event`].
    events: VecDeque<WatcherEvent>,
}

impl RawSession {
    /// Connects to `addr` (`HOST:PORT`), sets `TCP_NODELAY` and opens a new
    /// session with a [`SESSION_TIMEOUT_MS`] timeout.
    pub fn connect(addr: &str) -> Result<RawSession, ProbeError> {
        let mut last = None;
        let mut stream = None;
        for sa in addr.to_socket_addrs()? {
            match TcpStream::connect_timeout(&sa, Duration::from_secs(5)) {
                Ok(s) => {
                    stream = Some(s);
                    break;
                }
                Err(e) => last = Some(e),
            }
        }
        let stream = match (stream, last) {
            (Some(s), _) => s,
            (None, Some(e)) => return Err(e.into()),
            (None, None) => return Err(ProbeError::Protocol(format!("{addr} resolves to no address"))),
        };
        stream.set_nodelay(true)?;
        stream.set_read_timeout(Some(IO_TIMEOUT))?;
        stream.set_write_timeout(Some(IO_TIMEOUT))?;
        let mut session = RawSession {
            stream,
            rx: BytesMut::with_capacity(64 * 1024),
            tx: BytesMut::with_capacity(4 * 1024),
            decoder: FrameDecoder::default(),
            next_xid: 1,
            pending: VecDeque::new(),
            session_id: 0,
            events: VecDeque::new(),
        };
        let hello = ConnectRequest {
            protocol_version: 0,
            last_zxid_seen: 0,
            timeout_ms: SESSION_TIMEOUT_MS,
            session_id: 0,
            passwd: Some(Bytes::from_static(&[0; PASSWORD_LEN])),
            read_only: Some(false),
        };
        encode_frame(&hello, usize::MAX, &mut session.tx).map_err(|e| ProbeError::Protocol(e.to_string()))?;
        session.flush()?;
        let frame = session.read_frame()?;
        let resp = ConnectResponse::decode(&frame).map_err(|e| ProbeError::Protocol(format!("handshake: {e}")))?;
        if resp.is_expired() {
            return Err(ProbeError::Protocol("the server refused the session".into()));
        }
        session.session_id = resp.session_id;
        Ok(session)
    }

    /// The session id the server assigned.
    pub fn session_id(&self) -> i64 {
        self.session_id
    }

    /// Encodes `request` into the send buffer; nothing is written until
    /// [`RawSession::flush`].
    pub fn queue(&mut self, request: Request) -> Result<(), ProbeError> {
        let xid = Xid(self.next_xid);
        self.next_xid = self.next_xid.wrapping_add(1).max(1);
        let op = request.op_code();
        let path = request.path().unwrap_or_default().to_owned();
        let frame = RequestFrame::new(xid, request);
        encode_frame(&frame, usize::MAX, &mut self.tx).map_err(|e| ProbeError::Protocol(e.to_string()))?;
        self.pending.push_back(Pending { xid, op, path });
        Ok(())
    }

    /// Writes everything queued in one `write_all`.
    pub fn flush(&mut self) -> Result<(), ProbeError> {
        if !self.tx.is_empty() {
            self.stream.write_all(&self.tx)?;
            self.tx.clear();
        }
        Ok(())
    }

    /// Reads the reply to the oldest pending request, skipping pings and
    /// keeping notifications for [`RawSession::wait_event`]. A non-OK error
    /// code is [`ProbeError::Server`].
    pub fn recv(&mut self) -> Result<Response, ProbeError> {
        let (pending, err, response) = self.recv_reply()?;
        if !err.is_ok() {
            return Err(ProbeError::Server { op: pending.op, path: pending.path, err });
        }
        response.ok_or_else(|| ProbeError::Protocol(format!("{} reply without a body", pending.op)))
    }

    /// Like [`RawSession::recv`], but a non-OK error code is returned as
    /// `Err(code)` rather than failing the probe.
    pub fn recv_code(&mut self) -> Result<Result<Option<Response>, ErrorCode>, ProbeError> {
        let (_, err, response) = self.recv_reply()?;
        Ok(if err.is_ok() { Ok(response) } else { Err(err) })
    }

    /// The next watch notification: one read earlier, or the next to arrive.
    pub fn wait_event(&mut self) -> Result<WatcherEvent, ProbeError> {
        loop {
            if let Some(event) = self.events.pop_front() {
                return Ok(event);
            }
            let frame = self.read_frame()?;
            match ServerMessage::decode(&frame, |_| None).map_err(|e| ProbeError::Protocol(format!("event: {e}")))? {
                ServerMessage::Notification { event, .. } => self.events.push_back(event),
                ServerMessage::Reply { header, .. } if header.xid.is_ordinary() => {
                    return Err(ProbeError::Protocol(format!("reply xid {} while waiting for an event", header.xid.0)));
                }
                ServerMessage::Reply { .. } => {}
            }
        }
    }

    fn recv_reply(&mut self) -> Result<(Pending, ErrorCode, Option<Response>), ProbeError> {
        loop {
            let frame = self.read_frame()?;
            let expected = self.pending.front().map(|p| (p.xid, p.op));
            let msg = ServerMessage::decode(&frame, |xid| expected.filter(|(x, _)| *x == xid).map(|(_, op)| op))
                .map_err(|e| ProbeError::Protocol(format!("reply: {e}")))?;
            let (header, response) = match msg {
                ServerMessage::Notification { event, .. } => {
                    self.events.push_back(event);
                    continue;
                }
                ServerMessage::Reply { header, response } => (header, response),
            };
            if !header.xid.is_ordinary() {
                continue;
            }
            let Some(pending) = self.pending.pop_front() else {
                return Err(ProbeError::Protocol(format!("reply xid {} with nothing pending", header.xid.0)));
            };
            return Ok((pending, header.err, response));
        }
    }

    /// Sends closeSession and waits for its reply, so the server drops the
    /// session at once instead of after the timeout.
    pub fn close(mut self) -> Result<(), ProbeError> {
        self.queue(Request::CloseSession)?;
        self.flush()?;
        self.recv().map(drop)
    }

    fn read_frame(&mut self) -> Result<Bytes, ProbeError> {
        let mut chunk = [0u8; 64 * 1024];
        loop {
            if let Some(frame) =
                self.decoder.decode(&mut self.rx).map_err(|e| ProbeError::Protocol(format!("framing: {e}")))?
            {
                return Ok(frame);
            }
            let n = self.stream.read(&mut chunk)?;
            if n == 0 {
                return Err(ProbeError::Io(io::Error::new(io::ErrorKind::UnexpectedEof, "the server closed")));
            }
            self.rx.extend_from_slice(chunk.get(..n).unwrap_or_default());
        }
    }
}

/// Throughput and latency of the counted cycles of one run: the fields every
/// side's JSON line carries (`zk-rawcycle`, `zk-clientbench`).
#[derive(Debug, Clone, PartialEq)]
pub struct Timing {
    /// Counted cycles (warm-up excluded).
    pub cycles: u64,
    /// Wall time of the counted cycles.
    pub seconds: f64,
    /// `cycles / seconds`.
    pub cycles_per_sec: f64,
    /// Median cycle latency in microseconds.
    pub p50_us: f64,
    /// 99th percentile cycle latency in microseconds.
    pub p99_us: f64,
}

impl Timing {
    /// The timing of `latencies.len()` cycles done in `elapsed` (sorts `latencies`).
    pub fn new(latencies: &mut [Duration], elapsed: Duration) -> Timing {
        latencies.sort_unstable();
        let seconds = elapsed.as_secs_f64();
        let cycles = u64::try_from(latencies.len()).unwrap_or(u64::MAX);
        #[allow(clippy::cast_precision_loss)]
        let cycles_per_sec = if seconds > 0.0 { cycles as f64 / seconds } else { 0.0 };
        let us = |d: Duration| d.as_secs_f64() * 1e6;
        Timing {
            cycles,
            seconds,
            cycles_per_sec,
            p50_us: us(percentile(latencies, 0.50)),
            p99_us: us(percentile(latencies, 0.99)),
        }
    }

    /// The JSON members `"cycles":…,"seconds":…,"cycles_per_sec":…,"p50_us":…,"p99_us":…`.
    pub fn json_members(&self) -> String {
        format!(
            "\"cycles\":{},\"seconds\":{:.6},\"cycles_per_sec\":{:.1},\"p50_us\":{:.1},\"p99_us\":{:.1}",
            self.cycles, self.seconds, self.cycles_per_sec, self.p50_us, self.p99_us
        )
    }
}

impl fmt::Display for Timing {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        write!(
            f,
            "{} cycles in {:.3} s = {:.0} cycles/s, p50 {:.1} µs, p99 {:.1} µs",
            self.cycles, self.seconds, self.cycles_per_sec, self.p50_us, self.p99_us
        )
    }
}

/// The result of one uncontended probe run.
#[derive(Debug, Clone, PartialEq)]
pub struct Summary {
    /// The plan that ran.
    pub plan: Plan,
    /// Its counted cycles.
    pub timing: Timing,
}

impl Summary {
    /// The single-line JSON object the bench script parses, keys in a fixed order.
    pub fn to_json(&self) -> String {
        format!(
            "{{\"impl\":\"raw\",\"workload\":\"mutex-uncontended\",\"plan\":\"{}\",{}}}",
            self.plan,
            self.timing.json_members()
        )
    }
}

impl fmt::Display for Summary {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        write!(f, "raw {}: {}", self.plan, self.timing)
    }
}

/// The nearest-rank percentile `p` (0 < p ≤ 1) of ascending `sorted`; 0 when empty.
pub fn percentile(sorted: &[Duration], p: f64) -> Duration {
    if sorted.is_empty() {
        return Duration::ZERO;
    }
    // Nearest rank: the smallest value with at least p·n values at or below it.
    #[allow(clippy::cast_precision_loss, clippy::cast_possible_truncation, clippy::cast_sign_loss)]
    let rank = (p * sorted.len() as f64).ceil() as usize;
    let idx = rank.clamp(1, sorted.len()) - 1;
    sorted.get(idx).copied().unwrap_or_default()
}

/// The sequence number at the end of a sequential node's path.
pub fn sequence_of(path: &str) -> Option<u64> {
    let digits = path.get(path.len().checked_sub(SEQ_DIGITS)?..)?;
    if digits.bytes().all(|b| b.is_ascii_digit()) { digits.parse().ok() } else { None }
}

/// Lock cycles on one session under a fresh parent, which [`Probe::new`]
/// creates and [`Probe::finish`] removes again.
#[derive(Debug)]
pub struct Probe {
    session: RawSession,
    parent: String,
    prefix: String,
    /// The sequence number the next create will get: the parent's cversion,
    /// which each child create advances by one (deletes leave it alone).
    next_seq: u64,
}

impl Probe {
    /// Creates a unique persistent parent for this run.
    pub fn new(mut session: RawSession) -> Result<Probe, ProbeError> {
        let nanos = SystemTime::now().duration_since(UNIX_EPOCH).map(|d| d.as_nanos()).unwrap_or_default();
        let parent = format!("/zoolock-bench-raw-{}-{nanos}", std::process::id());
        session.queue(Request::Create(CreateRequest {
            path: parent.clone(),
            data: None,
            acl: Acl::open_unsafe(),
            flags: CreateMode::PERSISTENT,
        }))?;
        session.flush()?;
        session.recv()?;
        // Curator's protected name shape: `_c_<36-char uuid>-lock-`.
        let uuid = format!("{:08x}-0000-4000-8000-{:012x}", std::process::id(), nanos & 0xffff_ffff_ffff);
        let prefix = format!("{parent}/_c_{uuid}-lock-");
        Ok(Probe { session, parent, prefix, next_seq: 0 })
    }

    /// The parent path of this run.
    pub fn parent(&self) -> &str {
        &self.parent
    }

    fn create(&self) -> Request {
        Request::Create2(CreateRequest {
            path: self.prefix.clone(),
            data: Some(Bytes::from_static(NODE_DATA)),
            acl: Acl::open_unsafe(),
            flags: CreateMode::EPHEMERAL_SEQUENTIAL,
        })
    }

    fn get_children(&self) -> Request {
        Request::GetChildren(PathWatchRequest { path: self.parent.clone(), watch: false })
    }

    fn delete(path: String) -> Request {
        Request::Delete(DeleteRequest { path, version: -1 })
    }

    /// Checks a create2 reply, advances the sequence and returns the path.
    fn created(&mut self, reply: Response) -> Result<String, ProbeError> {
        let Response::Create2 { path, .. } = reply else {
            return Err(ProbeError::Protocol(format!("create2 answered with {reply:?}")));
        };
        let seq = sequence_of(&path).ok_or_else(|| ProbeError::Protocol(format!("no sequence suffix: {path}")))?;
        self.next_seq = seq + 1;
        Ok(path)
    }

    /// Checks that a getChildren reply lists `ours`.
    fn listed(&self, reply: Response, ours: &str) -> Result<(), ProbeError> {
        let Response::Children(children) = reply else {
            return Err(ProbeError::Protocol(format!("getChildren answered with {reply:?}")));
        };
        let name = ours.rsplit('/').next().unwrap_or(ours);
        if children.iter().any(|c| c == name) {
            Ok(())
        } else {
            Err(ProbeError::Protocol(format!("{ours} missing from the listing {children:?}")))
        }
    }

    /// Reads the listing in flight (which must name `path`), then deletes
    /// `path` in a round trip of its own.
    fn listed_then_delete(&mut self, path: String) -> Result<(), ProbeError> {
        let reply = self.session.recv()?;
        self.listed(reply, &path)?;
        self.session.queue(Probe::delete(path))?;
        self.session.flush()?;
        self.session.recv()?;
        Ok(())
    }

    /// One create / getChildren / delete cycle under `plan`.
    pub fn cycle(&mut self, plan: Plan) -> Result<(), ProbeError> {
        match plan {
            Plan::ThreeRtt => {
                self.session.queue(self.create())?;
                self.session.flush()?;
                let reply = self.session.recv()?;
                let path = self.created(reply)?;
                self.session.queue(self.get_children())?;
                self.session.flush()?;
                self.listed_then_delete(path)?;
            }
            Plan::TwoRtt => {
                self.session.queue(self.create())?;
                self.session.queue(self.get_children())?;
                self.session.flush()?;
                let reply = self.session.recv()?;
                let path = self.created(reply)?;
                self.listed_then_delete(path)?;
            }
            Plan::OneRtt => {
                let predicted = format!("{}{:0width$}", self.prefix, self.next_seq, width = SEQ_DIGITS);
                self.session.queue(self.create())?;
                self.session.queue(self.get_children())?;
                self.session.queue(Probe::delete(predicted.clone()))?;
                self.session.flush()?;
                let reply = self.session.recv()?;
                let path = self.created(reply)?;
                if path != predicted {
                    return Err(ProbeError::Protocol(format!("created {path}, predicted {predicted}")));
                }
                let reply = self.session.recv()?;
                self.listed(reply, &path)?;
                self.session.recv()?;
            }
        }
        Ok(())
    }

    /// Runs `warmup` uncounted cycles, then `cycles` timed ones.
    pub fn run(&mut self, plan: Plan, warmup: u64, cycles: u64) -> Result<Summary, ProbeError> {
        for _ in 0..warmup {
            self.cycle(plan)?;
        }
        let mut lat = Vec::with_capacity(usize::try_from(cycles).unwrap_or(0));
        let start = Instant::now();
        for _ in 0..cycles {
            let t = Instant::now();
            self.cycle(plan)?;
            lat.push(t.elapsed());
        }
        Ok(Summary { plan, timing: Timing::new(&mut lat, start.elapsed()) })
    }

    /// Deletes the parent and closes the session.
    pub fn finish(mut self) -> Result<(), ProbeError> {
        self.session.queue(Probe::delete(self.parent.clone()))?;
        self.session.flush()?;
        self.session.recv()?;
        self.session.close()
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn plans_round_trip_their_names() {
        for plan in Plan::ALL {
            assert_eq!(Plan::parse(plan.name()), Some(plan));
        }
        assert_eq!(Plan::parse("4rtt"), None);
    }

    #[test]
    fn nearest_rank_percentiles() {
        let v: Vec<Duration> = (1..=100).map(Duration::from_micros).collect();
        assert_eq!(percentile(&v, 0.50), Duration::from_micros(50));
        assert_eq!(percentile(&v, 0.99), Duration::from_micros(99));
        assert_eq!(percentile(&v, 1.0), Duration::from_micros(100));
        assert_eq!(percentile(&[Duration::from_micros(7)], 0.99), Duration::from_micros(7));
        assert_eq!(percentile(&[], 0.5), Duration::ZERO);
    }

    #[test]
    fn sequence_suffixes() {
        assert_eq!(sequence_of("/p/_c_x-lock-0000000042"), Some(42));
        assert_eq!(sequence_of("/p/_c_x-lock-"), None);
        assert_eq!(sequence_of("42"), None);
    }

    #[test]
    fn json_has_the_agreed_keys() {
        let timing = Timing { cycles: 5, seconds: 0.5, cycles_per_sec: 10.0, p50_us: 1.0, p99_us: 2.0 };
        let s = Summary { plan: Plan::TwoRtt, timing };
        assert_eq!(
            s.to_json(),
            r#"{"impl":"raw","workload":"mutex-uncontended","plan":"2rtt","cycles":5,"seconds":0.500000,"cycles_per_sec":10.0,"p50_us":1.0,"p99_us":2.0}"#
        );
    }
}
