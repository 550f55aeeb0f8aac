//! A raw ZooKeeper connection for tests: frames through the codec only, no
//! session logic, so a test sees exactly what the server sends.

use std::io::{ErrorKind, Read, Write};
use std::net::TcpStream;
use std::time::Duration;

use bytes::{Bytes, BytesMut};
use zoolock_wire::{ConnectRequest, ConnectResponse, Encode, FrameDecoder, Xid, encode_frame};

/// One TCP connection after its handshake.
#[derive(Debug)]
pub struct RawConn {
    stream: TcpStream,
    rx: BytesMut,
    decoder: FrameDecoder,
    next_xid: i32,
}

impl RawConn {
    /// Connects to `addr` and sends a ConnectRequest (10 s timeout) for
    /// `session_id` (0: a new session) with `passwd`. Returns the connection,
    /// the decoded ConnectResponse and its frame as read. Panics on failure:
    /// this is test code.
    pub fn connect(addr: &str, session_id: i64, passwd: Bytes) -> (RawConn, ConnectResponse, Bytes) {
        let stream = TcpStream::connect(addr).unwrap_or_else(|e| panic!("{addr} unreachable: {e}"));
        stream.set_read_timeout(Some(Duration::from_secs(10))).unwrap_or_else(|e| panic!("{e}"));
        stream.set_nodelay(true).unwrap_or_else(|e| panic!("{e}"));
        let mut conn = RawConn { stream, rx: BytesMut::new(), decoder: FrameDecoder::default(), next_xid: 1 };
        conn.write(&ConnectRequest {
            protocol_version: 0,
            last_zxid_seen: 0,
            timeout_ms: 10_000,
            session_id,
            passwd: Some(passwd),
            read_only: Some(false),
        });
        let frame = conn.read_frame().unwrap_or_else(|| panic!("{addr}: no ConnectResponse"));
        let resp = ConnectResponse::decode(&frame).unwrap_or_else(|e| panic!("{addr}: bad ConnectResponse: {e}"));
        (conn, resp, frame)
    }

    /// The next request xid (1, 2, ...).
    pub fn next_xid(&mut self) -> Xid {
        let xid = Xid(self.next_xid);
        self.next_xid += 1;
        xid
    }

    /// Writes one framed message.
    pub fn write(&mut self, msg: &impl Encode) {
        let mut buf = BytesMut::new();
        encode_frame(msg, usize::MAX, &mut buf).unwrap_or_else(|e| panic!("encode: {e}"));
        self.stream.write_all(&buf).unwrap_or_else(|e| panic!("write: {e}"));
    }

    /// [`RawConn::read_frame`] waiting `within` at most for each read:
    /// `None` if nothing complete came in time (what was read is kept for
    /// the next call), else what `read_frame` returns.
    pub fn read_frame_within(&mut self, within: Duration) -> Option<Option<Bytes>> {
        self.stream.set_read_timeout(Some(within)).unwrap_or_else(|e| panic!("{e}"));
        let got = loop {
            if let Some(frame) = self.decoder.decode(&mut self.rx).unwrap_or_else(|e| panic!("framing: {e}")) {
                break Some(Some(frame));
            }
            let mut chunk = [0u8; 65536];
            match self.stream.read(&mut chunk) {
                Ok(0) => break Some(None),
                Ok(n) => self.rx.extend_from_slice(chunk.get(..n).unwrap_or_default()),
                Err(e) if matches!(e.kind(), ErrorKind::WouldBlock | ErrorKind::TimedOut) => break None,
                Err(e) if e.kind() == ErrorKind::ConnectionReset => break Some(None),
                Err(e) => panic!("read: {e}"),
            }
        };
        self.stream.set_read_timeout(Some(Duration::from_secs(10))).unwrap_or_else(|e| panic!("{e}"));
        got
    }

    /// The next frame's payload, or `None` once the server has closed the
    /// connection (a reset counts as closed).
    pub fn read_frame(&mut self) -> Option<Bytes> {
        loop {
            if let Some(frame) = self.decoder.decode(&mut self.rx).unwrap_or_else(|e| panic!("framing: {e}")) {
                return Some(frame);
            }
            let mut chunk = [0u8; 65536];
            let n = match self.stream.read(&mut chunk) {
                Ok(n) => n,
                Err(e) if e.kind() == ErrorKind::ConnectionReset => 0,
                Err(e) => panic!("read: {e}"),
            };
            if n == 0 {
                return None;
            }
            self.rx.extend_from_slice(chunk.get(..n).unwrap_or_default());
        }
    }
}
