//! The replay harness both replays stand on: virtual time, the recorded
//! connection's bookkeeping, the frames the machine writes, synthetic ping
//! answers and the close rules. It drives any [`Endpoint`] (a [`Session`] in
//! the session replay, a [`Client`] in the recipe replay); what a replay
//! checks beyond that lives in its [`Rules`].
//!
//! [`Session`]: zoolock_core::Session
//! [`Client`]: zoolock_core::Client

use std::collections::VecDeque;
use std::path::PathBuf;
use std::time::Duration;

use bytes::{BufMut, Bytes, BytesMut};
use zoolock_core::{Endpoint, Instant, IoCommand, Rng, SessionError};
use zoolock_wire::{
    ConnectRequest, Encode, ErrorCode, FrameDecoder, LEN_PREFIX, OpCode, ReplyHeader, RequestFrame, Xid,
};

use super::error::{Location, MismatchKind, ReplayError};
use crate::trace::{Close, ClosedBy};

/// Timer firings one wait may take before the harness calls it a loop.
const MAX_FIRINGS: usize = 100_000;

/// How server bytes are handed to the machine's `handle_bytes`.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Chunking {
    /// Each group of frames in one call.
    Whole,
    /// Split at random points drawn from `seed`: single bytes, splits inside
    /// the length prefix, and larger pieces.
    Random {
        /// Seed of the split points; print it when a replay fails.
        seed: u64,
    },
}

/// What a replay checks beyond the harness: every event the machine reports
/// goes through it, in order.
pub(crate) trait Rules<E: Endpoint> {
    /// Checks and keeps one event.
    fn event(&mut self, wire: &Wire<E>, event: E::Event) -> Result<(), ReplayError>;
}

/// A frame the machine wrote that the trace has not matched yet.
#[derive(Debug)]
pub(crate) struct Written {
    /// When it was written.
    pub(crate) at: Instant,
    /// Written while a ConnectResponse was being fed.
    pub(crate) during_handshake: bool,
    /// The frame.
    pub(crate) frame: WrittenFrame,
}

/// A decoded frame the machine wrote.
#[derive(Debug)]
pub(crate) enum WrittenFrame {
    /// The first frame of a connection.
    Connect(ConnectRequest),
    /// Any later frame, with its payload as written.
    Request(RequestFrame, Bytes),
}

/// The recorded connection being replayed.
#[derive(Debug)]
pub(crate) struct Link {
    /// Index of the connection among the replay's.
    pub(crate) index: usize,
    /// Its trace file.
    pub(crate) file: PathBuf,
    /// Virtual time of the recording's `t_us = 0`.
    pub(crate) base: Instant,
    /// The machine has the socket.
    pub(crate) open: bool,
    /// A handshake on this link established a session (pings are answered).
    pub(crate) handshake_done: bool,
    /// After this instant the recorded link forwarded nothing (pings die).
    pub(crate) link_down_after: Option<Instant>,
    /// When `handle_connected` was called.
    pub(crate) connected_at: Option<Instant>,
    /// When bytes were last fed.
    pub(crate) last_received_at: Option<Instant>,
    /// When the socket went away.
    pub(crate) closed_at: Option<Instant>,
    /// The machine closed it (`IoCommand::Close`), not the peer.
    pub(crate) closed_by_session: bool,
    /// Recorded client frames matched.
    pub(crate) frames_matched: usize,
    /// Pings the machine wrote.
    pub(crate) pings_sent: usize,
    /// Pings answered with a synthetic reply.
    pub(crate) pings_answered: usize,
    connect_seen: bool,
    outbound: BytesMut,
    inbound: BytesMut,
    decoder: FrameDecoder,
    written: VecDeque<Written>,
}

/// One machine driven through recorded connections. See the module docs.
#[derive(Debug)]
pub(crate) struct Wire<E> {
    machine: Option<E>,
    /// Virtual time.
    pub(crate) now: Instant,
    /// Where in the trace the replay is, for errors.
    pub(crate) at: Location,
    /// A Connect is out and `handle_connected` has not been called.
    pub(crate) dialing: bool,
    /// The connection being replayed, or the last one.
    pub(crate) link: Option<Link>,
    /// The highest zxid of an ordinary reply fed so far.
    pub(crate) max_zxid: i64,
    /// A ping written sooner than this after the previous write is an error.
    pub(crate) ping_gap: Duration,
    pings_due: usize,
    last_write: Option<Instant>,
    chunk_rng: Option<Rng>,
    during_handshake: bool,
}

impl<E: Endpoint> Wire<E> {
    /// A harness at `start`; the machine may come later ([`Wire::set_machine`]).
    pub(crate) fn new(machine: Option<E>, start: Instant, chunking: Chunking) -> Wire<E> {
        let chunk_rng = match chunking {
            Chunking::Whole => None,
            Chunking::Random { seed } => Some(Rng::with_seed(seed)),
        };
        Wire {
            machine,
            now: start,
            at: Location { file: PathBuf::new(), line: 0 },
            dialing: false,
            link: None,
            max_zxid: 0,
            ping_gap: Duration::ZERO,
            pings_due: 0,
            last_write: None,
            chunk_rng,
            during_handshake: false,
        }
    }

    /// The machine, once there is one.
    pub(crate) fn machine(&self) -> Option<&E> {
        self.machine.as_ref()
    }

    /// The machine, to call it directly; [`Wire::settle`] afterwards.
    pub(crate) fn machine_mut(&mut self) -> Option<&mut E> {
        self.machine.as_mut()
    }

    /// Puts the machine in place.
    pub(crate) fn set_machine(&mut self, machine: E) {
        self.machine = Some(machine);
    }

    /// Whether the machine has the socket.
    pub(crate) fn is_open(&self) -> bool {
        self.link.as_ref().is_some_and(|l| l.open)
    }

    // ---- time ----------------------------------------------------------------------

    /// Runs every timer due up to `target`, then sets the clock to it.
    pub(crate) fn advance_to(&mut self, target: Instant, rules: &mut impl Rules<E>) -> Result<(), ReplayError> {
        for _ in 0..MAX_FIRINGS {
            match self.machine.as_ref().and_then(E::poll_timeout) {
                Some(due) if due <= target => {
                    self.now = self.now.max(due);
                    let now = self.now;
                    if let Some(machine) = &mut self.machine {
                        machine.handle_timeout(now);
                    }
                    self.settle(rules)?;
                }
                _ => {
                    self.now = self.now.max(target);
                    return Ok(());
                }
            }
        }
        Err(self.mismatch(MismatchKind::Timer, "timers that settle", "more than 100000 timer firings"))
    }

    /// Runs timers until `done` holds, moving time as far as needed (never
    /// past `give_up`); returns whether it holds.
    pub(crate) fn advance_until<R: Rules<E>>(
        &mut self,
        give_up: Option<Instant>,
        rules: &mut R,
        done: impl Fn(&Wire<E>, &R) -> bool,
    ) -> Result<bool, ReplayError> {
        for _ in 0..MAX_FIRINGS {
            if done(self, rules) {
                return Ok(true);
            }
            match self.machine.as_ref().and_then(E::poll_timeout) {
                Some(due) if give_up.is_none_or(|g| due <= g) => self.advance_to(due.max(self.now), rules)?,
                _ => return Ok(false),
            }
        }
        Err(self.mismatch(MismatchKind::Timer, "timers that settle", "more than 100000 timer firings"))
    }

    /// Runs the timers up to `until` with no server reachable: every connect
    /// attempt is refused at once.
    pub(crate) fn advance_offline(&mut self, until: Instant, rules: &mut impl Rules<E>) -> Result<(), ReplayError> {
        if self.is_open() {
            return Err(self.mismatch(MismatchKind::Connect, "no open connection", "a connection still open"));
        }
        self.refuse_dial(rules)?;
        for _ in 0..MAX_FIRINGS {
            match self.machine.as_ref().and_then(E::poll_timeout) {
                Some(due) if due <= until => {
                    self.advance_to(due, rules)?;
                    self.refuse_dial(rules)?;
                }
                _ => {
                    self.now = self.now.max(until);
                    return Ok(());
                }
            }
        }
        Err(self.mismatch(MismatchKind::Timer, "timers that settle", "more than 100000 timer firings"))
    }

    fn refuse_dial(&mut self, rules: &mut impl Rules<E>) -> Result<(), ReplayError> {
        if self.dialing {
            self.dialing = false;
            let now = self.now;
            if let Some(machine) = &mut self.machine {
                machine.handle_disconnected(now);
            }
            self.settle(rules)?;
        }
        Ok(())
    }

    // ---- connections ---------------------------------------------------------------

    /// Starts bookkeeping for the recorded connection `file`, the previous one
    /// having ended. The machine must dial before its first client frame.
    pub(crate) fn open_link(&mut self, index: usize, file: PathBuf, base: Instant) -> Result<(), ReplayError> {
        if self.is_open() {
            return Err(self.mismatch(
                MismatchKind::Close,
                "the previous connection closed before the next one",
                "it is still open",
            ));
        }
        self.at = Location { file: file.clone(), line: 0 };
        self.link = Some(Link {
            index,
            file,
            base,
            open: false,
            handshake_done: false,
            link_down_after: None,
            connected_at: None,
            last_received_at: None,
            closed_at: None,
            closed_by_session: false,
            frames_matched: 0,
            pings_sent: 0,
            pings_answered: 0,
            connect_seen: false,
            outbound: BytesMut::new(),
            inbound: BytesMut::new(),
            decoder: FrameDecoder::default(),
            written: VecDeque::new(),
        });
        Ok(())
    }

    /// The recorded ConnectRequest: the machine must be dialing; it is
    /// connected, and the first frame it writes must equal `want`.
    pub(crate) fn connect(&mut self, want: &ConnectRequest, rules: &mut impl Rules<E>) -> Result<(), ReplayError> {
        if !self.dialing {
            return Err(self.mismatch(MismatchKind::Connect, "IoCommand::Connect before the ConnectRequest", "none"));
        }
        self.dialing = false;
        self.link_changed(true, rules)?;
        match self.pop_written() {
            Some(Written { frame: WrittenFrame::Connect(got), .. }) if got == *want => {
                self.matched();
                Ok(())
            }
            Some(other) => Err(self.mismatch(MismatchKind::ConnectRequest, format!("{want:?}"), describe(&other))),
            None => Err(self.mismatch(MismatchKind::MissingFrame, format!("{want:?}"), "nothing written")),
        }
    }

    /// The recorded socket comes up (`open`) or goes down now: the link
    /// notes when, the machine is told (`handle_connected` or
    /// `handle_disconnected`), and what it does in answer is settled.
    fn link_changed(&mut self, open: bool, rules: &mut impl Rules<E>) -> Result<(), ReplayError> {
        let now = self.now;
        if let Some(link) = &mut self.link {
            link.open = open;
            let at = if open { &mut link.connected_at } else { &mut link.closed_at };
            *at = Some(now);
        }
        if let Some(machine) = &mut self.machine {
            if open {
                machine.handle_connected(now);
            } else {
                machine.handle_disconnected(now);
            }
        }
        self.settle(rules)
    }

    /// A recorded close at `t`. `by: client` means the client gave up by
    /// itself: unless it has closed already, the machine must close within
    /// `tolerance` of `t`, and not earlier. Any other close is the peer's.
    pub(crate) fn close(
        &mut self,
        close: &Close,
        t: Instant,
        tolerance: Duration,
        rules: &mut impl Rules<E>,
    ) -> Result<(), ReplayError> {
        let by_client = close.by == ClosedBy::Client;
        if self.is_open() && by_client {
            self.advance_to(t + tolerance, rules)?;
            if self.is_open() {
                return Err(self.mismatch(
                    MismatchKind::Close,
                    format!("the session to close the connection by {} (recorded client close)", t + tolerance),
                    "still open",
                ));
            }
        } else if self.is_open() {
            self.advance_to(t, rules)?;
            if self.is_open() {
                self.link_changed(false, rules)?;
            }
        }
        let closed = self.link.as_ref().and_then(|l| l.closed_at.filter(|_| l.closed_by_session));
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

    /// The end of the recorded connection: it must be closed with nothing
    /// left over in either direction.
    pub(crate) fn end_link(&mut self, rules: &mut impl Rules<E>) -> Result<&Link, ReplayError> {
        self.settle(rules)?;
        self.at.line = 0;
        let Some(link) = &self.link else {
            return Err(self.mismatch(MismatchKind::Connect, "a connection", "none"));
        };
        if link.open {
            return Err(self.mismatch(MismatchKind::Close, "the connection closed at the end of the trace", "open"));
        }
        if let Some(w) = link.written.front() {
            return Err(self.mismatch(MismatchKind::UnexpectedFrame, "nothing more on this connection", describe(w)));
        }
        if !link.inbound.is_empty() || !link.outbound.is_empty() {
            let got = format!("{} bytes in, {} bytes out", link.inbound.len(), link.outbound.len());
            return Err(self.mismatch(MismatchKind::Leftover, "no partial frames", got));
        }
        Ok(link)
    }

    /// The next frame the machine wrote on this connection.
    pub(crate) fn pop_written(&mut self) -> Option<Written> {
        self.link.as_mut().and_then(|l| l.written.pop_front())
    }

    /// A frame the machine wrote that nothing matched, if any.
    pub(crate) fn unmatched(&self) -> Option<&Written> {
        self.link.as_ref().and_then(|l| l.written.front())
    }

    /// Counts one recorded client frame as matched.
    pub(crate) fn matched(&mut self) {
        if let Some(link) = &mut self.link {
            link.frames_matched += 1;
        }
    }

    // ---- bytes ---------------------------------------------------------------------

    /// Feeds framed server bytes at the current time (chunked as configured),
    /// then settles. The connection must stay open until every byte is in,
    /// and every byte must be consumed. `handshake`: the bytes carry a
    /// ConnectResponse (frames written meanwhile are marked).
    pub(crate) fn feed(&mut self, bytes: &[u8], handshake: bool, rules: &mut impl Rules<E>) -> Result<(), ReplayError> {
        if !self.is_open() {
            return Err(self.mismatch(
                MismatchKind::Close,
                "the connection open to receive the server's frame",
                "the session has closed it",
            ));
        }
        self.during_handshake = handshake;
        let pushed = self.push(bytes, rules);
        self.during_handshake = false;
        let undelivered = pushed?;
        if undelivered > 0 {
            return Err(self.mismatch(
                MismatchKind::Close,
                "the connection open for the rest of the server's frames",
                format!("closed by the session with {undelivered} bytes still to deliver"),
            ));
        }
        if let Some(link) = &self.link {
            if !link.inbound.is_empty() {
                let got = format!("{} bytes left in the buffer", link.inbound.len());
                return Err(self.mismatch(MismatchKind::Leftover, "every fed byte consumed", got));
            }
        }
        self.settle(rules)
    }

    /// Hands `bytes` to the machine, whole or in random pieces, draining
    /// after each; stops when the connection closes and returns how many
    /// bytes were left undelivered.
    fn push(&mut self, bytes: &[u8], rules: &mut impl Rules<E>) -> Result<usize, ReplayError> {
        let mut rest = bytes;
        while !rest.is_empty() {
            let n = self.chunk_len(rest.len());
            let now = self.now;
            let Some(link) = self.link.as_mut().filter(|l| l.open) else {
                return Ok(rest.len());
            };
            let (chunk, tail) = rest.split_at(n);
            rest = tail;
            link.inbound.extend_from_slice(chunk);
            link.last_received_at = Some(now);
            let result = match &mut self.machine {
                Some(machine) => machine.handle_bytes(now, &mut link.inbound),
                None => Ok(()),
            };
            self.drain(rules)?;
            result.map_err(|source| self.session_error(source))?;
        }
        Ok(0)
    }

    fn chunk_len(&mut self, remaining: usize) -> usize {
        let Some(rng) = &mut self.chunk_rng else {
            return remaining;
        };
        let r = rng.next_u64();
        let upto = |n: u64| usize::try_from(1 + (r >> 8) % n).unwrap_or(1);
        let n = match r % 4 {
            0 => 1,
            1 => upto(LEN_PREFIX as u64),
            2 => upto(24),
            _ => upto(u64::try_from(remaining).unwrap_or(u64::MAX)),
        };
        n.clamp(1, remaining)
    }

    /// Drains every output, then answers the pings written meanwhile.
    pub(crate) fn settle(&mut self, rules: &mut impl Rules<E>) -> Result<(), ReplayError> {
        self.drain(rules)?;
        while self.pings_due > 0 {
            self.pings_due -= 1;
            let header = ReplyHeader { xid: Xid::PING, zxid: self.max_zxid, err: ErrorCode::OK };
            let mut bytes = BytesMut::new();
            bytes.put_u32(u32::try_from(ReplyHeader::LEN).unwrap_or(16));
            header.encode(&mut bytes);
            if let Some(link) = &mut self.link {
                link.pings_answered += 1;
            }
            self.push(&bytes, rules)?;
        }
        Ok(())
    }

    /// Takes every output of the machine: transport commands, written frames
    /// and events (through `rules`).
    fn drain(&mut self, rules: &mut impl Rules<E>) -> Result<(), ReplayError> {
        let Some(machine) = &mut self.machine else { return Ok(()) };
        let mut io = Vec::new();
        while let Some(cmd) = machine.poll_io() {
            io.push(cmd);
        }
        let mut written = BytesMut::new();
        let _ = machine.poll_transmit(&mut written);
        let mut events = Vec::new();
        while let Some(event) = machine.poll_event() {
            events.push(event);
        }
        for cmd in io {
            match cmd {
                IoCommand::Connect { .. } => {
                    if self.dialing || self.is_open() {
                        return Err(self.mismatch(
                            MismatchKind::Connect,
                            "a Connect only when no socket is open",
                            "a second Connect",
                        ));
                    }
                    self.dialing = true;
                }
                IoCommand::Close => match &mut self.link {
                    Some(link) if link.open => {
                        link.open = false;
                        link.closed_at = Some(self.now);
                        link.closed_by_session = true;
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
            rules.event(self, event)?;
        }
        Ok(())
    }

    /// Splits written bytes into frames: pings are checked against their
    /// schedule and answered (while the recorded link was up); the rest wait
    /// for the trace.
    fn take_frames(&mut self, written: &[u8]) -> Result<(), ReplayError> {
        let now = self.now;
        let previous_write = self.last_write.replace(now);
        let Some(link) = self.link.as_mut().filter(|l| l.open) else {
            let got = format!("{} bytes", written.len());
            return Err(self.mismatch(MismatchKind::UnexpectedFrame, "no bytes without an open connection", got));
        };
        link.outbound.extend_from_slice(written);
        let mut frames = Vec::new();
        loop {
            match link.decoder.decode(&mut link.outbound) {
                Ok(Some(payload)) => {
                    let first = !link.connect_seen;
                    link.connect_seen = true;
                    frames.push((first, payload));
                }
                Ok(None) => break,
                Err(e) => return Err(self.mismatch(MismatchKind::Frame, "a well-framed stream", e.to_string())),
            }
        }
        for (first, payload) in frames {
            let frame = if first {
                ConnectRequest::decode(&payload).map(WrittenFrame::Connect)
            } else {
                RequestFrame::decode(&payload).map(|f| WrittenFrame::Request(f, Bytes::copy_from_slice(&payload)))
            };
            let frame = frame.map_err(|e| {
                self.mismatch(MismatchKind::Frame, "a frame that decodes", format!("{e} in {payload:02x?}"))
            })?;
            if let WrittenFrame::Request(r, _) = &frame {
                if r.header.op == OpCode::PING {
                    self.ping(previous_write)?;
                    continue;
                }
            }
            let during_handshake = self.during_handshake;
            if let Some(link) = &mut self.link {
                link.written.push_back(Written { at: now, during_handshake, frame });
            }
        }
        Ok(())
    }

    fn ping(&mut self, previous: Option<Instant>) -> Result<(), ReplayError> {
        let now = self.now;
        if let Some(previous) = previous {
            if now - previous < self.ping_gap {
                return Err(self.mismatch(
                    MismatchKind::Ping,
                    format!("a ping only after {:?} without writing", self.ping_gap),
                    format!("a ping {:?} after the previous write", now - previous),
                ));
            }
        }
        let Some(link) = &mut self.link else { return Ok(()) };
        link.pings_sent += 1;
        if link.open && link.handshake_done && link.link_down_after.is_none_or(|down| now <= down) {
            self.pings_due += 1;
        }
        Ok(())
    }

    // ---- errors --------------------------------------------------------------------

    /// The machine did something other than the recording, at [`Wire::at`].
    pub(crate) fn mismatch(
        &self,
        kind: MismatchKind,
        expected: impl Into<String>,
        got: impl Into<String>,
    ) -> ReplayError {
        self.mismatch_at(self.at.line, kind, expected, got)
    }

    /// The same at another line of the current file.
    pub(crate) fn mismatch_at(
        &self,
        line: usize,
        kind: MismatchKind,
        expected: impl Into<String>,
        got: impl Into<String>,
    ) -> ReplayError {
        let at = Location { file: self.at.file.clone(), line };
        ReplayError::Mismatch { at, kind, expected: expected.into(), got: got.into() }
    }

    /// The trace cannot be replayed.
    pub(crate) fn unsupported(&self, reason: String) -> ReplayError {
        ReplayError::Unsupported { at: self.at.clone(), reason }
    }

    fn session_error(&self, source: SessionError) -> ReplayError {
        ReplayError::Session { at: self.at.clone(), source }
    }
}

/// A written frame, for a mismatch message.
pub(crate) fn describe(written: &Written) -> String {
    match &written.frame {
        WrittenFrame::Connect(c) => format!("{c:?}"),
        WrittenFrame::Request(r, _) => format!("{r:?}"),
    }
}
