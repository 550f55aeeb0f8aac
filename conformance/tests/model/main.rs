//! The in-memory ZooKeeper model ([`zoolock_model`]) driven with
//! wire-encoded frames, zoolock's core recipes run against it in-process,
//! and the [`TestingServer`](zoolock_model::testing_server) with the
//! real tokio client.
//!
//! The harness here plays raw clients: it encodes requests with
//! `zoolock-wire`, feeds them to the model, and decodes what the model
//! transmits, in order.

mod multi;
mod ops;
mod recipes;
mod server;
mod sessions;
mod watches;

use std::collections::{BTreeSet, HashMap};
use std::time::Duration;

use bytes::{Bytes, BytesMut};
use zoolock_core::Instant;
use zoolock_core::wire::{
    Acl, ConnectRequest, ConnectResponse, CreateMode, CreateRequest, DeleteRequest, Encode, ErrorCode, EventType,
    FrameDecoder, OpCode, PathRequest, PathWatchRequest, Request, RequestFrame, Response, ServerMessage,
    SetDataRequest, Stat, Xid, encode_frame,
};
use zoolock_model::{CloseReason, ConnId, ModelConfig, ZkModel};

/// What a raw client received, in order.
#[derive(Debug, Clone, PartialEq, Eq)]
pub(crate) enum Msg {
    /// A watch notification.
    Note { zxid: i64, event: EventType, path: String },
    /// A reply (pings are xid -2, auth -4).
    Reply { xid: i32, zxid: i64, err: ErrorCode, rsp: Option<Response> },
}

/// A note, for comparisons (header zxid -1, as 3.8 sends).
pub(crate) fn note(event: EventType, path: &str) -> Msg {
    Msg::Note { zxid: -1, event, path: path.into() }
}

/// The model on a virtual clock.
pub(crate) struct Zk {
    pub(crate) m: ZkModel,
    pub(crate) now: Instant,
    closed: BTreeSet<ConnId>,
}

/// A raw client connection.
pub(crate) struct Cli {
    pub(crate) id: ConnId,
    pub(crate) session: i64,
    pub(crate) passwd: Bytes,
    pub(crate) timeout_ms: i32,
    next_xid: i32,
    ops: HashMap<i32, OpCode>,
    inbuf: BytesMut,
    /// Everything received and not yet taken.
    pub(crate) log: Vec<Msg>,
    handshaken: bool,
    /// The raw ConnectResponse.
    pub(crate) connect: Option<ConnectResponse>,
}

pub(crate) fn framed(msg: &impl Encode) -> BytesMut {
    let mut buf = BytesMut::new();
    encode_frame(msg, usize::MAX, &mut buf).unwrap();
    buf
}

pub(crate) fn connect_request(session_id: i64, passwd: Bytes, timeout_ms: i32, last_zxid: i64) -> ConnectRequest {
    ConnectRequest {
        protocol_version: 0,
        last_zxid_seen: last_zxid,
        timeout_ms,
        session_id,
        passwd: Some(passwd),
        read_only: Some(false),
    }
}

impl Cli {
    /// Declares the opcode behind `xid` for frames sent by hand.
    pub(crate) fn expect_op(&mut self, xid: i32, op: OpCode) {
        self.ops.insert(xid, op);
    }
}

impl Zk {
    pub(crate) fn new() -> Zk {
        Zk::with(ModelConfig::default())
    }

    pub(crate) fn with(config: ModelConfig) -> Zk {
        Zk { m: ZkModel::new(config), now: Instant::ZERO, closed: BTreeSet::new() }
    }

    /// A fresh model with two sessions, opened in this order.
    pub(crate) fn two_sessions() -> (Zk, Cli, Cli) {
        let mut zk = Zk::new();
        let first = zk.open();
        let second = zk.open();
        (zk, first, second)
    }

    /// A fresh model with a writer session `c` that has made `writes` and a
    /// watcher session `w` (opened second) that has set `watches`; every one
    /// of these requests succeeds.
    pub(crate) fn writer_and_watcher(
        writes: impl IntoIterator<Item = Request>,
        watches: impl IntoIterator<Item = Request>,
    ) -> (Zk, Cli, Cli) {
        let (mut zk, mut c, mut w) = Zk::two_sessions();
        for req in writes {
            zk.call(&mut c, req).unwrap();
        }
        for req in watches {
            zk.call(&mut w, req).unwrap();
        }
        (zk, c, w)
    }

    /// A TCP connection with no handshake yet.
    pub(crate) fn raw(&mut self) -> Cli {
        let id = self.m.connect(self.now);
        Cli {
            id,
            session: 0,
            passwd: Bytes::new(),
            timeout_ms: 0,
            next_xid: 1,
            ops: HashMap::new(),
            inbuf: BytesMut::new(),
            log: Vec::new(),
            handshaken: false,
            connect: None,
        }
    }

    /// A new session with a 30 s requested timeout.
    pub(crate) fn open(&mut self) -> Cli {
        self.open_with(connect_request(0, Bytes::from_static(&[0; 16]), 30_000, 0))
    }

    /// A handshake with `req`; the ConnectResponse lands in `cli.connect`.
    pub(crate) fn open_with(&mut self, req: ConnectRequest) -> Cli {
        let mut c = self.raw();
        self.send_bytes(&mut c, &framed(&req));
        c
    }

    /// Feeds raw bytes and collects the output.
    pub(crate) fn send_bytes(&mut self, c: &mut Cli, bytes: &[u8]) {
        let mut buf = BytesMut::from(bytes);
        self.m.handle_bytes(self.now, c.id, &mut buf);
        self.pump(c);
    }

    /// Sends a request with the next xid; returns the xid.
    pub(crate) fn send(&mut self, c: &mut Cli, request: Request) -> i32 {
        let xid = c.next_xid;
        c.next_xid += 1;
        self.send_xid(c, xid, request);
        xid
    }

    /// Sends a request with an explicit xid.
    pub(crate) fn send_xid(&mut self, c: &mut Cli, xid: i32, request: Request) {
        c.ops.insert(xid, request.op_code());
        let frame = framed(&RequestFrame::new(Xid(xid), request));
        self.send_bytes(c, &frame);
    }

    /// Sends a request and returns its result; notifications stay in the log.
    pub(crate) fn call(&mut self, c: &mut Cli, request: Request) -> Result<Response, ErrorCode> {
        let xid = self.send(c, request);
        self.result(c, xid)
    }

    /// Takes the reply to `xid` out of the log.
    pub(crate) fn result(&mut self, c: &mut Cli, xid: i32) -> Result<Response, ErrorCode> {
        let idx = c
            .log
            .iter()
            .position(|m| matches!(m, Msg::Reply { xid: x, .. } if *x == xid))
            .unwrap_or_else(|| panic!("no reply to xid {xid}; log: {:?}", c.log));
        match c.log.remove(idx) {
            Msg::Reply { err, rsp, .. } if err.is_ok() => Ok(rsp.unwrap_or(Response::Empty)),
            Msg::Reply { err, .. } => Err(err),
            Msg::Note { .. } => unreachable!(),
        }
    }

    /// Reads whatever the model queued for `c`.
    pub(crate) fn pump(&mut self, c: &mut Cli) {
        while let Some(id) = self.m.poll_close() {
            self.closed.insert(id);
        }
        self.m.poll_transmit(c.id, &mut c.inbuf);
        let decoder = FrameDecoder::new(usize::MAX);
        while let Some(frame) = decoder.decode(&mut c.inbuf).unwrap() {
            if !c.handshaken {
                let rsp = ConnectResponse::decode(&frame).unwrap();
                c.handshaken = true;
                c.session = rsp.session_id;
                c.passwd = rsp.passwd.clone().unwrap_or_default();
                c.timeout_ms = rsp.timeout_ms;
                c.connect = Some(rsp);
                continue;
            }
            let ops = &c.ops;
            let msg = ServerMessage::decode(&frame, |xid| ops.get(&xid.0).copied()).unwrap();
            c.log.push(match msg {
                ServerMessage::Notification { header, event } => {
                    Msg::Note { zxid: header.zxid, event: event.event_type, path: event.path }
                }
                ServerMessage::Reply { header, response } => {
                    Msg::Reply { xid: header.xid.0, zxid: header.zxid, err: header.err, rsp: response }
                }
            });
        }
        assert!(c.inbuf.is_empty(), "partial frame from the model");
    }

    /// Takes everything `c` received so far.
    pub(crate) fn take(&mut self, c: &mut Cli) -> Vec<Msg> {
        self.pump(c);
        std::mem::take(&mut c.log)
    }

    /// The notifications `c` received so far (taken out of the log).
    pub(crate) fn notes(&mut self, c: &mut Cli) -> Vec<Msg> {
        self.pump(c);
        let (notes, rest) = std::mem::take(&mut c.log).into_iter().partition(|m| matches!(m, Msg::Note { .. }));
        c.log = rest;
        notes
    }

    /// Whether the model closed `c`.
    pub(crate) fn is_closed(&mut self, c: &Cli) -> bool {
        while let Some(id) = self.m.poll_close() {
            self.closed.insert(id);
        }
        self.closed.contains(&c.id)
    }

    pub(crate) fn close_reason(&self, c: &Cli) -> Option<CloseReason> {
        self.m.close_reason(c.id).cloned()
    }

    /// Moves the clock forward and fires the model's timers.
    pub(crate) fn advance(&mut self, ms: u64) {
        self.now = self.now + Duration::from_millis(ms);
        self.m.handle_timeout(self.now);
        if let Some(t) = self.m.poll_timeout() {
            // Whatever is due now has been done: only the reaper may ask for
            // `now` again (its next pass), never for the past.
            assert!(t >= self.now, "poll_timeout {t} is in the past (now {})", self.now);
        }
    }

    /// Runs every timer due at `now` until none is.
    pub(crate) fn settle(&mut self) {
        for _ in 0..100 {
            match self.m.poll_timeout() {
                Some(t) if t <= self.now => self.m.handle_timeout(self.now),
                _ => return,
            }
        }
        panic!("timers keep firing at {}", self.now);
    }

    /// A node's Stat (from the model directly).
    pub(crate) fn stat(&self, path: &str) -> Stat {
        self.m.node(path).unwrap_or_else(|| panic!("{path} missing")).stat
    }
}

// ---- request builders ----------------------------------------------------------------

pub(crate) fn create_req(path: &str, data: &[u8], flags: CreateMode) -> CreateRequest {
    CreateRequest { path: path.into(), data: Some(Bytes::copy_from_slice(data)), acl: Acl::open_unsafe(), flags }
}

pub(crate) fn create(path: &str, flags: CreateMode) -> Request {
    Request::Create(create_req(path, b"", flags))
}

pub(crate) fn create2(path: &str, flags: CreateMode) -> Request {
    Request::Create2(create_req(path, b"", flags))
}

pub(crate) fn container(path: &str) -> Request {
    Request::CreateContainer(create_req(path, b"", CreateMode::CONTAINER))
}

pub(crate) fn delete(path: &str, version: i32) -> Request {
    Request::Delete(DeleteRequest { path: path.into(), version })
}

pub(crate) fn set_data(path: &str, data: &[u8], version: i32) -> Request {
    Request::SetData(SetDataRequest { path: path.into(), data: Some(Bytes::copy_from_slice(data)), version })
}

pub(crate) fn exists(path: &str, watch: bool) -> Request {
    Request::Exists(PathWatchRequest { path: path.into(), watch })
}

pub(crate) fn get_data(path: &str, watch: bool) -> Request {
    Request::GetData(PathWatchRequest { path: path.into(), watch })
}

pub(crate) fn get_children(path: &str, watch: bool) -> Request {
    Request::GetChildren(PathWatchRequest { path: path.into(), watch })
}

pub(crate) fn get_children2(path: &str, watch: bool) -> Request {
    Request::GetChildren2(PathWatchRequest { path: path.into(), watch })
}

pub(crate) fn path_req(path: &str) -> PathRequest {
    PathRequest { path: path.into() }
}

/// The path a create reply names.
pub(crate) fn created(r: Result<Response, ErrorCode>) -> String {
    match r {
        Ok(Response::Path(p)) | Ok(Response::Create2 { path: p, .. }) => p,
        other => panic!("not a create reply: {other:?}"),
    }
}

/// Sorted children from a getChildren reply.
pub(crate) fn names(r: Result<Response, ErrorCode>) -> Vec<String> {
    match r {
        Ok(Response::Children(mut c)) | Ok(Response::Children2 { children: mut c, .. }) => {
            c.sort();
            c
        }
        other => panic!("not a children reply: {other:?}"),
    }
}

/// The Stat in an exists/setData/getData/create2 reply.
pub(crate) fn stat_of(r: Result<Response, ErrorCode>) -> Stat {
    match r {
        Ok(Response::Stat(s)) | Ok(Response::Data { stat: s, .. }) | Ok(Response::Create2 { stat: s, .. }) => s,
        Ok(Response::Children2 { stat, .. }) | Ok(Response::Acl { stat, .. }) => stat,
        other => panic!("no stat in {other:?}"),
    }
}
