//! Request and reply headers, and the watch notification body.

use alloc::string::String;

use bytes::{BufMut, BytesMut};

use crate::Encode;
use crate::codes::{ErrorCode, EventType, KeeperState, OpCode, Xid};
use crate::primitive::{PResult, int, long, put_ustring, ustring, ustring_len};

/// `xid, type`: 8 bytes before every request body.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Hash)]
pub struct RequestHeader {
    /// Request id, echoed in the reply.
    pub xid: Xid,
    /// The request type.
    pub op: OpCode,
}

impl RequestHeader {
    /// Encoded size.
    pub const LEN: usize = 8;

    pub(crate) fn parse(i: &[u8]) -> PResult<'_, RequestHeader> {
        let (i, xid) = int(i)?;
        let (i, op) = int(i)?;
        Ok((i, RequestHeader { xid: Xid(xid), op: OpCode(op) }))
    }
}

impl Encode for RequestHeader {
    fn encoded_len(&self) -> usize {
        Self::LEN
    }

    fn encode(&self, buf: &mut BytesMut) {
        buf.put_i32(self.xid.0);
        buf.put_i32(self.op.0);
    }
}

/// `xid, zxid, err`: 16 bytes before every reply body.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Hash)]
pub struct ReplyHeader {
    /// The request's xid, or -1 / -2 / -4 for notifications, pings and auth.
    pub xid: Xid,
    /// The server's last processed zxid when it replied.
    pub zxid: i64,
    /// The result; a body follows only when OK.
    pub err: ErrorCode,
}

impl ReplyHeader {
    /// Encoded size.
    pub const LEN: usize = 16;

    pub(crate) fn parse(i: &[u8]) -> PResult<'_, ReplyHeader> {
        let (i, xid) = int(i)?;
        let (i, zxid) = long(i)?;
        let (i, err) = int(i)?;
        Ok((i, ReplyHeader { xid: Xid(xid), zxid, err: ErrorCode(err) }))
    }
}

impl Encode for ReplyHeader {
    fn encoded_len(&self) -> usize {
        Self::LEN
    }

    fn encode(&self, buf: &mut BytesMut) {
        buf.put_i32(self.xid.0);
        buf.put_i64(self.zxid);
        buf.put_i32(self.err.0);
    }
}

/// The body of a watch notification (reply xid -1). The path is the server
/// path, chroot included.
#[derive(Debug, Clone, PartialEq, Eq, Hash)]
pub struct WatcherEvent {
    /// What happened.
    pub event_type: EventType,
    /// Always SyncConnected from a server.
    pub state: KeeperState,
    /// The node the event is about.
    pub path: String,
}

impl WatcherEvent {
    pub(crate) fn parse(i: &[u8]) -> PResult<'_, WatcherEvent> {
        let (i, event_type) = int(i)?;
        let (i, state) = int(i)?;
        let (i, path) = ustring(i)?;
        Ok((i, WatcherEvent { event_type: EventType(event_type), state: KeeperState(state), path }))
    }
}

impl Encode for WatcherEvent {
    fn encoded_len(&self) -> usize {
        8 + ustring_len(&self.path)
    }

    fn encode(&self, buf: &mut BytesMut) {
        buf.put_i32(self.event_type.0);
        buf.put_i32(self.state.0);
        put_ustring(buf, &self.path);
    }
}
