//! The simulated network: links with latency, partitions and drops, and the
//! plumbing that moves bytes between the clients and the model.

use super::*;

/// Something travelling server → client.
#[derive(Debug)]
pub(super) enum Down {
    Bytes(Bytes),
    /// The server closed the connection after the bytes before it.
    Close,
}

/// One TCP connection between a client and the model.
#[derive(Debug)]
pub(super) struct Link {
    pub(super) conn: ConnId,
    pub(super) up: VecDeque<(Instant, Bytes)>,
    pub(super) down: VecDeque<(Instant, Down)>,
    pub(super) to_model: BytesMut,
    pub(super) from_model: BytesMut,
    /// Nothing moves before this instant (stall).
    pub(super) stalled_until: Instant,
    /// Apply the next client bytes, drop the replies, then reset.
    pub(super) lose_replies: bool,
    /// The model's output for this connection is being thrown away.
    pub(super) dropping: bool,
    /// Decodes frames for the trace when `SIM_TRACE_FRAMES` is set.
    pub(super) decoder: Option<StreamDecoder>,
    /// The ConnectResponse has gone by (later frames start with a reply header).
    pub(super) answered: bool,
    /// Items queued server → client so far, and items delivered: an item
    /// queued as the `n`-th has reached the client once `delivered >= n`.
    pub(super) pushed: u64,
    pub(super) delivered: u64,
    /// The same for items client → server.
    pub(super) up_pushed: u64,
    pub(super) up_delivered: u64,
}

impl Link {
    pub(super) fn new(conn: ConnId) -> Link {
        Link {
            conn,
            up: VecDeque::new(),
            down: VecDeque::new(),
            to_model: BytesMut::new(),
            from_model: BytesMut::new(),
            stalled_until: Instant::ZERO,
            lose_replies: false,
            dropping: false,
            decoder: trace_frames().then(StreamDecoder::new),
            answered: false,
            pushed: 0,
            delivered: 0,
            up_pushed: 0,
            up_delivered: 0,
        }
    }

    pub(super) fn next_up(&self) -> Option<Instant> {
        self.up.front().map(|(at, _)| (*at).max(self.stalled_until))
    }

    pub(super) fn next_down(&self) -> Option<Instant> {
        self.down.front().map(|(at, _)| (*at).max(self.stalled_until))
    }
}

/// True if `bytes` hold a frame with a non-negative xid: a request rather
/// than a ping or an auth packet. (A ConnectRequest starts with protocol
/// version 0 and passes too; losing its answer is a fine fault as well.)
pub(super) fn has_request(bytes: &[u8]) -> bool {
    let mut rest = bytes;
    while rest.len() >= 8 {
        let len = u32::from_be_bytes([rest[0], rest[1], rest[2], rest[3]]) as usize;
        let xid = i32::from_be_bytes([rest[4], rest[5], rest[6], rest[7]]);
        if xid >= 0 {
            return true;
        }
        let Some(next) = rest.get(4 + len..) else { break };
        rest = next;
    }
    false
}

/// Counts the replies with error NoNode among the whole frames of `bytes`
/// (reply header: xid, zxid, err), skipping a leading ConnectResponse.
pub(super) fn count_no_node(bytes: &[u8], answered: &mut bool) -> usize {
    let mut n = 0;
    let mut rest = bytes;
    while rest.len() >= 4 {
        let len = u32::from_be_bytes([rest[0], rest[1], rest[2], rest[3]]) as usize;
        let Some(frame) = rest.get(4..4 + len) else { break };
        if !*answered {
            *answered = true;
        } else if frame.len() >= 16 {
            let xid = i32::from_be_bytes([frame[0], frame[1], frame[2], frame[3]]);
            let err = i32::from_be_bytes([frame[12], frame[13], frame[14], frame[15]]);
            if xid >= 0 && err == -101 {
                n += 1;
            }
        }
        rest = &rest[4 + len..];
    }
    n
}

pub(super) fn trace_frames() -> bool {
    std::env::var_os("SIM_TRACE_FRAMES").is_some()
}

/// Each whole frame of `bytes`, decoded (for the trace only).
pub(super) fn describe_frames(decoder: &mut StreamDecoder, dir: Direction, bytes: &[u8]) -> Vec<String> {
    let mut out = Vec::new();
    let mut rest = bytes;
    while rest.len() >= 4 {
        let len = u32::from_be_bytes([rest[0], rest[1], rest[2], rest[3]]) as usize;
        let Some(frame) = rest.get(4..4 + len) else { break };
        out.push(match decoder.decode(dir, frame) {
            Ok(f) => format!("{f:?}"),
            Err(e) => format!("undecodable: {e}"),
        });
        rest = &rest[4 + len..];
    }
    out
}

impl Sim {
    pub(super) fn down_latency(&mut self, i: usize) -> Duration {
        let c = &self.clients[i];
        let extra = if self.now < c.slow_until { c.slow_extra } else { Duration::ZERO };
        let base = c.latency + extra;
        base + self.rng.duration_up_to(Duration::from_millis(5))
    }

    /// Everything the client wants done, and its events.
    pub(super) fn drain_client(&mut self, i: usize) -> Result<(), String> {
        for _ in 0..1000 {
            let mut progressed = false;
            while let Some(io) = self.clients[i].client.poll_io() {
                progressed = true;
                match io {
                    IoCommand::Connect { .. } => {
                        self.close_link(i);
                        let latency = self.down_latency(i);
                        self.clients[i].connecting = Some(self.now + latency);
                    }
                    IoCommand::Close => {
                        self.log(|| format!("c{i} closes its connection"));
                        self.clients[i].connecting = None;
                        self.close_link(i);
                    }
                    _ => {}
                }
            }
            let mut out = BytesMut::new();
            if self.clients[i].client.poll_transmit(&mut out) > 0 {
                progressed = true;
                let latency = self.down_latency(i);
                let now = self.now;
                if let Some(link) = self.clients[i].link.as_mut() {
                    let at = link.up.back().map_or(now + latency, |(last, _)| (*last).max(now + latency));
                    link.up.push_back((at, out.freeze()));
                    link.up_pushed += 1;
                }
            }
            while let Some(event) = self.clients[i].client.poll_event() {
                progressed = true;
                self.client_event(i, event)?;
            }
            if !progressed {
                return Ok(());
            }
        }
        Err(format!("client {i} never went quiet"))
    }

    /// The client's end of its connection goes; the server learns at once.
    pub(super) fn close_link(&mut self, i: usize) {
        if let Some(link) = self.clients[i].link.take() {
            self.model.disconnect(self.now, link.conn);
            self.drain_model();
        }
    }

    /// Reset: both ends learn, the bytes in flight are gone.
    pub(super) fn reset(&mut self, i: usize) -> Result<(), String> {
        if self.is_frozen(i) {
            self.reset_frozen(i);
            return Ok(());
        }
        if self.clients[i].link.is_some() {
            self.close_link(i);
            let now = self.now;
            self.clients[i].client.handle_disconnected(now);
            self.drain_client(i)?;
        }
        Ok(())
    }

    pub(super) fn complete_connect(&mut self, i: usize) -> Result<(), String> {
        self.clients[i].connecting = None;
        let now = self.now;
        if now < self.server_down_until || now < self.clients[i].refuse_until {
            self.log(|| format!("c{i} connect refused"));
            self.clients[i].client.handle_disconnected(now);
        } else {
            let conn = self.model.connect(now);
            self.log(|| format!("c{i} connected as {conn:?}"));
            self.clients[i].link = Some(Link::new(conn));
            self.clients[i].client.handle_connected(now);
        }
        self.drain_client(i)
    }

    pub(super) fn deliver_up(&mut self, i: usize) -> Result<(), String> {
        let now = self.now;
        let Some(link) = self.clients[i].link.as_mut() else { return Ok(()) };
        let Some((_, bytes)) = link.up.pop_front() else { return Ok(()) };
        link.up_delivered += 1;
        let frames = link.decoder.as_mut().map(|d| describe_frames(d, Direction::C2s, &bytes));
        for f in frames.into_iter().flatten() {
            self.log(|| format!("c{i} >> {f}"));
        }
        let Some(link) = self.clients[i].link.as_mut() else { return Ok(()) };
        link.to_model.extend_from_slice(&bytes);
        let conn = link.conn;
        let mut buf = std::mem::take(&mut link.to_model);
        // Only a batch with a real request (xid >= 0, not a ping) loses its replies.
        let lose = link.lose_replies && has_request(&bytes);
        link.dropping = lose;
        self.model.handle_bytes(now, conn, &mut buf);
        if let Some(link) = self.clients[i].link.as_mut() {
            link.to_model = buf;
        }
        self.drain_model();
        self.outside_news_travels(i);
        if lose {
            self.log(|| format!("c{i}: request applied, replies lost, connection reset"));
            self.reset(i)?;
        }
        Ok(())
    }

    pub(super) fn deliver_down(&mut self, i: usize) -> Result<(), String> {
        let now = self.now;
        let Some(link) = self.clients[i].link.as_mut() else { return Ok(()) };
        let Some((_, item)) = link.down.pop_front() else { return Ok(()) };
        link.delivered += 1;
        match item {
            Down::Bytes(bytes) => {
                let frames = link.decoder.as_mut().map(|d| describe_frames(d, Direction::S2c, &bytes));
                for f in frames.into_iter().flatten() {
                    self.log(|| format!("c{i} << {f}"));
                }
                let Some(link) = self.clients[i].link.as_mut() else { return Ok(()) };
                let no_node = count_no_node(&bytes, &mut link.answered);
                self.clients[i].no_node_replies += no_node;
                let Some(link) = self.clients[i].link.as_mut() else { return Ok(()) };
                link.from_model.extend_from_slice(&bytes);
                let mut buf = std::mem::take(&mut link.from_model);
                let result = self.clients[i].client.handle_bytes(now, &mut buf);
                if let Some(link) = self.clients[i].link.as_mut() {
                    link.from_model = buf;
                }
                if let Err(e) = result {
                    return Err(format!("c{i}: session error on the model's bytes: {e}"));
                }
            }
            Down::Close => {
                self.log(|| format!("c{i}: the server closed the connection"));
                self.clients[i].link = None;
                self.clients[i].client.handle_disconnected(now);
            }
        }
        self.drain_client(i)?;
        self.outside_news_travels(i);
        Ok(())
    }

    /// Moves the model's output into the pipes.
    pub(super) fn drain_model(&mut self) {
        loop {
            let mut progressed = false;
            while let Some(conn) = self.model.poll_writable() {
                progressed = true;
                self.take_output(conn, false);
            }
            while let Some(conn) = self.model.poll_close() {
                progressed = true;
                self.take_output(conn, true);
            }
            if !progressed {
                return;
            }
        }
    }

    pub(super) fn take_output(&mut self, conn: ConnId, close: bool) {
        let mut buf = BytesMut::new();
        self.model.poll_transmit(conn, &mut buf);
        let Some(i) = self.clients.iter().position(|c| c.link.as_ref().is_some_and(|l| l.conn == conn)) else {
            return;
        };
        let latency = self.down_latency(i);
        let now = self.now;
        let link = self.clients[i].link.as_mut().expect("found above");
        if link.dropping {
            return;
        }
        let at = link.down.back().map_or(now + latency, |(last, _)| (*last).max(now + latency));
        if !buf.is_empty() {
            link.down.push_back((at, Down::Bytes(buf.freeze())));
            link.pushed += 1;
        }
        if close {
            link.down.push_back((at, Down::Close));
            link.pushed += 1;
        }
    }
}
