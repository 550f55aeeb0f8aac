//! Reply bodies. A body is not self-describing: decoding needs the opcode of
//! the request it answers.

use alloc::string::String;
use alloc::vec::Vec;

use bytes::{BufMut, Bytes, BytesMut};

use crate::Encode;
use crate::codes::{ErrorCode, OpCode, Xid};
use crate::data::{Acl, ClientInfo, Stat};
use crate::error::{DecodeError, DecodeErrorKind};
use crate::header::{ReplyHeader, WatcherEvent};
use crate::multi::{self, MultiResult};
use crate::primitive::{
    Field, PResult, buffer, buffer_len, complete, fail, int, put_buffer, put_ustring, to_decode_error, ustring,
    ustring_len,
};

/// A reply body, by layout.
#[derive(Debug, Clone, PartialEq, Eq)]
#[non_exhaustive]
pub enum Response {
    /// No body: delete, ping, check, checkWatches, removeWatches, auth,
    /// setWatches, setWatches2, deleteContainer, closeSession.
    Empty,
    /// create (1) and sync (9): a path.
    Path(String),
    /// create2 (15), createContainer (19), createTTL (21): path and the new node's Stat.
    Create2 {
        /// The created path, sequence suffix included.
        path: String,
        /// The new node's Stat.
        stat: Stat,
    },
    /// exists (3), setData (5), setACL (7).
    Stat(Stat),
    /// getData (4) and reconfig (16).
    Data {
        /// Node data; `None` is Java's null.
        data: Option<Bytes>,
        /// Node Stat.
        stat: Stat,
    },
    /// getACL (6).
    Acl {
        /// The node's ACL.
        acl: Vec<Acl>,
        /// Node Stat.
        stat: Stat,
    },
    /// getChildren (8) and getEphemerals (103): names (or paths), unordered.
    Children(Vec<String>),
    /// getChildren2 (12): names plus the parent's Stat.
    Children2 {
        /// Child names, unordered.
        children: Vec<String>,
        /// The parent's Stat.
        stat: Stat,
    },
    /// multi (14) and multiRead (22).
    Multi(Vec<MultiResult>),
    /// sasl (102).
    Sasl(Option<Bytes>),
    /// getAllChildrenNumber (104).
    Count(i32),
    /// addWatch (106): an ErrorResponse body, always 0 in practice.
    AddWatch(ErrorCode),
    /// whoAmI (107).
    WhoAmI(Vec<ClientInfo>),
}

impl Response {
    /// Decodes the body of a successful reply to a request of type `op`.
    pub fn decode(op: OpCode, body: &[u8]) -> Result<Response, DecodeError> {
        complete(body, |i| Response::parse(op, i))
    }

    pub(crate) fn parse(op: OpCode, i: &[u8]) -> PResult<'_, Response> {
        match op {
            OpCode::DELETE
            | OpCode::PING
            | OpCode::CHECK
            | OpCode::CHECK_WATCHES
            | OpCode::REMOVE_WATCHES
            | OpCode::DELETE_CONTAINER
            | OpCode::AUTH
            | OpCode::SET_WATCHES
            | OpCode::SET_WATCHES2
            | OpCode::CLOSE_SESSION => Ok((i, Response::Empty)),
            OpCode::CREATE | OpCode::SYNC => {
                let (i, path) = ustring(i)?;
                Ok((i, Response::Path(path)))
            }
            OpCode::CREATE2 | OpCode::CREATE_CONTAINER | OpCode::CREATE_TTL => {
                let (i, path) = ustring(i)?;
                let (i, stat) = Stat::parse(i)?;
                Ok((i, Response::Create2 { path, stat }))
            }
            OpCode::EXISTS | OpCode::SET_DATA | OpCode::SET_ACL => {
                let (i, stat) = Stat::parse(i)?;
                Ok((i, Response::Stat(stat)))
            }
            OpCode::GET_DATA | OpCode::RECONFIG => {
                let (i, data) = buffer(i)?;
                let (i, stat) = Stat::parse(i)?;
                Ok((i, Response::Data { data, stat }))
            }
            OpCode::GET_ACL => {
                let (i, acl) = Vec::<Acl>::parse(i)?;
                let (i, stat) = Stat::parse(i)?;
                Ok((i, Response::Acl { acl, stat }))
            }
            OpCode::GET_CHILDREN | OpCode::GET_EPHEMERALS => {
                let (i, children) = Vec::<String>::parse(i)?;
                Ok((i, Response::Children(children)))
            }
            OpCode::GET_CHILDREN2 => {
                let (i, children) = Vec::<String>::parse(i)?;
                let (i, stat) = Stat::parse(i)?;
                Ok((i, Response::Children2 { children, stat }))
            }
            OpCode::MULTI | OpCode::MULTI_READ => {
                let (i, results) = multi::parse_results(i)?;
                Ok((i, Response::Multi(results)))
            }
            OpCode::SASL => {
                let (i, token) = buffer(i)?;
                Ok((i, Response::Sasl(token)))
            }
            OpCode::GET_ALL_CHILDREN_NUMBER => {
                let (i, n) = int(i)?;
                Ok((i, Response::Count(n)))
            }
            OpCode::ADD_WATCH => {
                let (i, e) = int(i)?;
                Ok((i, Response::AddWatch(ErrorCode(e))))
            }
            OpCode::WHO_AM_I => {
                let (i, infos) = Vec::<ClientInfo>::parse(i)?;
                Ok((i, Response::WhoAmI(infos)))
            }
            OpCode::NOTIFICATION | OpCode::CREATE_SESSION | OpCode::ERROR => fail(i, DecodeErrorKind::NotARequest(op)),
            OpCode(other) => fail(i, DecodeErrorKind::UnknownOpCode(other)),
        }
    }
}

impl Encode for Response {
    fn encoded_len(&self) -> usize {
        match self {
            Response::Empty => 0,
            Response::Path(p) => ustring_len(p),
            Response::Create2 { path, .. } => ustring_len(path) + Stat::LEN,
            Response::Stat(_) => Stat::LEN,
            Response::Data { data, .. } => buffer_len(data.as_deref()) + Stat::LEN,
            Response::Acl { acl, .. } => acl.field_len() + Stat::LEN,
            Response::Children(c) => c.field_len(),
            Response::Children2 { children, .. } => children.field_len() + Stat::LEN,
            Response::Multi(results) => multi::results_len(results),
            Response::Sasl(token) => buffer_len(token.as_deref()),
            Response::Count(_) | Response::AddWatch(_) => 4,
            Response::WhoAmI(infos) => infos.field_len(),
        }
    }

    fn encode(&self, buf: &mut BytesMut) {
        match self {
            Response::Empty => {}
            Response::Path(p) => put_ustring(buf, p),
            Response::Create2 { path, stat } => {
                put_ustring(buf, path);
                stat.encode(buf);
            }
            Response::Stat(stat) => stat.encode(buf),
            Response::Data { data, stat } => {
                put_buffer(buf, data.as_deref());
                stat.encode(buf);
            }
            Response::Acl { acl, stat } => {
                acl.put_field(buf);
                stat.encode(buf);
            }
            Response::Children(c) => c.put_field(buf),
            Response::Children2 { children, stat } => {
                children.put_field(buf);
                stat.encode(buf);
            }
            Response::Multi(results) => multi::put_results(buf, results),
            Response::Sasl(token) => put_buffer(buf, token.as_deref()),
            Response::Count(n) => buf.put_i32(*n),
            Response::AddWatch(e) => buf.put_i32(e.0),
            Response::WhoAmI(infos) => infos.put_field(buf),
        }
    }
}

/// A whole server frame after the handshake.
#[derive(Debug, Clone, PartialEq, Eq)]
pub enum ServerMessage {
    /// A watch notification (xid -1).
    Notification {
        /// The header (`xid` -1; `zxid` -1 before 3.9).
        header: ReplyHeader,
        /// The event.
        event: WatcherEvent,
    },
    /// A reply to a request, a ping (-2) or an auth packet (-4).
    Reply {
        /// The header.
        header: ReplyHeader,
        /// The body, present only when `header.err` is OK.
        response: Option<Response>,
    },
}

impl ServerMessage {
    /// Decodes a whole server frame. `op_for` gives the opcode of the pending
    /// request with an ordinary xid; pings and auth replies need no lookup.
    ///
    /// Bytes after the header of an error reply are ignored, as the Java
    /// client does.
    pub fn decode(frame: &[u8], op_for: impl FnOnce(Xid) -> Option<OpCode>) -> Result<Self, DecodeError> {
        let (body, header) = ReplyHeader::parse(frame).map_err(|e| to_decode_error(frame, e))?;
        if header.xid == Xid::NOTIFICATION {
            return complete(frame, |_| {
                let (i, event) = WatcherEvent::parse(body)?;
                Ok((i, ServerMessage::Notification { header, event }))
            });
        }
        let op = match header.xid {
            Xid::PING => OpCode::PING,
            Xid::AUTH => OpCode::AUTH,
            xid => match op_for(xid) {
                Some(op) => op,
                None => {
                    return Err(DecodeError { kind: DecodeErrorKind::UnknownXid(xid.0), offset: 0 });
                }
            },
        };
        if !header.err.is_ok() {
            return Ok(ServerMessage::Reply { header, response: None });
        }
        complete(frame, |_| {
            let (i, response) = Response::parse(op, body)?;
            Ok((i, ServerMessage::Reply { header, response: Some(response) }))
        })
    }

    /// The header of either kind of message.
    pub fn header(&self) -> &ReplyHeader {
        match self {
            ServerMessage::Notification { header, .. } | ServerMessage::Reply { header, .. } => header,
        }
    }
}

impl Encode for ServerMessage {
    fn encoded_len(&self) -> usize {
        ReplyHeader::LEN
            + match self {
                ServerMessage::Notification { event, .. } => event.encoded_len(),
                ServerMessage::Reply { response, .. } => response.as_ref().map_or(0, Encode::encoded_len),
            }
    }

    fn encode(&self, buf: &mut BytesMut) {
        match self {
            ServerMessage::Notification { header, event } => {
                header.encode(buf);
                event.encode(buf);
            }
            ServerMessage::Reply { header, response } => {
                header.encode(buf);
                if let Some(r) = response {
                    r.encode(buf);
                }
            }
        }
    }
}
