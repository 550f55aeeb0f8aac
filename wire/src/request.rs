//! Client requests: one record type per body layout, and [`Request`], which
//! ties each opcode to its body.

use alloc::string::String;
use alloc::vec::Vec;

use bytes::{Bytes, BytesMut};

use crate::Encode;
use crate::codes::{AddWatchMode, CreateMode, OpCode, WatcherType};
use crate::data::Acl;
use crate::error::{DecodeError, DecodeErrorKind};
use crate::header::RequestHeader;
use crate::multi;
use crate::primitive::{Field, PResult, complete, fail, record};

record! {
    /// create (1), create2 (15) and createContainer (19).
    #[derive(Debug, Clone, PartialEq, Eq)]
    pub struct CreateRequest {
        /// Requested path; the server appends a suffix for sequential modes.
        pub path: String,
        /// Node data; `None` is Java's null.
        pub data: Option<Bytes>,
        /// The new node's ACL (must not be empty).
        pub acl: Vec<Acl>,
        /// The create mode.
        pub flags: CreateMode,
    }
}

record! {
    /// createTTL (21).
    #[derive(Debug, Clone, PartialEq, Eq)]
    pub struct CreateTtlRequest {
        /// Requested path.
        pub path: String,
        /// Node data.
        pub data: Option<Bytes>,
        /// The new node's ACL.
        pub acl: Vec<Acl>,
        /// PERSISTENT_WITH_TTL or PERSISTENT_SEQUENTIAL_WITH_TTL.
        pub flags: CreateMode,
        /// Time to live in ms.
        pub ttl: i64,
    }
}

record! {
    /// delete (2).
    #[derive(Debug, Clone, PartialEq, Eq)]
    pub struct DeleteRequest {
        /// Node to delete.
        pub path: String,
        /// Expected data version; -1 matches any.
        pub version: i32,
    }
}

record! {
    /// A path plus a watch flag: exists (3), getData (4), getChildren (8), getChildren2 (12).
    #[derive(Debug, Clone, PartialEq, Eq)]
    pub struct PathWatchRequest {
        /// Node to read.
        pub path: String,
        /// Whether to leave a watch.
        pub watch: bool,
    }
}

record! {
    /// A bare path: getACL (6), sync (9), deleteContainer (20), getEphemerals (103),
    /// getAllChildrenNumber (104).
    #[derive(Debug, Clone, PartialEq, Eq)]
    pub struct PathRequest {
        /// The path (a prefix for getEphemerals).
        pub path: String,
    }
}

record! {
    /// setData (5).
    #[derive(Debug, Clone, PartialEq, Eq)]
    pub struct SetDataRequest {
        /// Node to write.
        pub path: String,
        /// New data.
        pub data: Option<Bytes>,
        /// Expected data version; -1 matches any.
        pub version: i32,
    }
}

record! {
    /// setACL (7).
    #[derive(Debug, Clone, PartialEq, Eq)]
    pub struct SetAclRequest {
        /// Node whose ACL to set.
        pub path: String,
        /// The new ACL.
        pub acl: Vec<Acl>,
        /// Expected ACL version; -1 matches any.
        pub version: i32,
    }
}

record! {
    /// check (13), valid inside multi.
    #[derive(Debug, Clone, PartialEq, Eq)]
    pub struct CheckVersionRequest {
        /// Node to check.
        pub path: String,
        /// Required data version.
        pub version: i32,
    }
}

record! {
    /// reconfig (16). Absent member lists are Java nulls.
    #[derive(Debug, Clone, PartialEq, Eq)]
    pub struct ReconfigRequest {
        /// Servers to add (incremental reconfig).
        pub joining_servers: Option<String>,
        /// Servers to remove (incremental reconfig).
        pub leaving_servers: Option<String>,
        /// Full new membership (bulk reconfig).
        pub new_members: Option<String>,
        /// Expected current config version, or -1.
        pub cur_config_id: i64,
    }
}

record! {
    /// checkWatches (17) and removeWatches (18).
    #[derive(Debug, Clone, PartialEq, Eq)]
    pub struct WatchesRequest {
        /// The watched path.
        pub path: String,
        /// Which kind of watch.
        pub watcher_type: WatcherType,
    }
}

record! {
    /// auth (100), sent with xid -4.
    #[derive(Debug, Clone, PartialEq, Eq)]
    pub struct AuthPacket {
        /// Always 0.
        pub auth_type: i32,
        /// Auth scheme, for example `digest`.
        pub scheme: String,
        /// Credentials, for example `user:password`.
        pub auth: Option<Bytes>,
    }
}

record! {
    /// setWatches (101): re-arms watches after a reconnect.
    #[derive(Debug, Clone, Default, PartialEq, Eq)]
    pub struct SetWatches {
        /// The client's last seen zxid.
        pub relative_zxid: i64,
        /// Data watches on nodes that existed.
        pub data_watches: Vec<String>,
        /// Exists watches on missing nodes.
        pub exist_watches: Vec<String>,
        /// Child watches.
        pub child_watches: Vec<String>,
    }
}

record! {
    /// setWatches2 (105): setWatches plus persistent watches.
    #[derive(Debug, Clone, Default, PartialEq, Eq)]
    pub struct SetWatches2 {
        /// The client's last seen zxid.
        pub relative_zxid: i64,
        /// Data watches on nodes that existed.
        pub data_watches: Vec<String>,
        /// Exists watches on missing nodes.
        pub exist_watches: Vec<String>,
        /// Child watches.
        pub child_watches: Vec<String>,
        /// Persistent watches.
        pub persistent_watches: Vec<String>,
        /// Persistent recursive watches.
        pub persistent_recursive_watches: Vec<String>,
    }
}

record! {
    /// addWatch (106).
    #[derive(Debug, Clone, PartialEq, Eq)]
    pub struct AddWatchRequest {
        /// Path to watch.
        pub path: String,
        /// Persistent or persistent-recursive.
        pub mode: AddWatchMode,
    }
}

record! {
    /// sasl (102).
    #[derive(Debug, Clone, PartialEq, Eq)]
    pub struct SaslRequest {
        /// The SASL token.
        pub token: Option<Bytes>,
    }
}

/// A request body, tagged by opcode.
#[derive(Debug, Clone, PartialEq, Eq)]
#[non_exhaustive]
pub enum Request {
    /// create (1).
    Create(CreateRequest),
    /// delete (2).
    Delete(DeleteRequest),
    /// exists (3).
    Exists(PathWatchRequest),
    /// getData (4).
    GetData(PathWatchRequest),
    /// setData (5).
    SetData(SetDataRequest),
    /// getACL (6).
    GetAcl(PathRequest),
    /// setACL (7).
    SetAcl(SetAclRequest),
    /// getChildren (8).
    GetChildren(PathWatchRequest),
    /// sync (9).
    Sync(PathRequest),
    /// ping (11), no body.
    Ping,
    /// getChildren2 (12).
    GetChildren2(PathWatchRequest),
    /// check (13).
    Check(CheckVersionRequest),
    /// multi (14): write ops executed atomically.
    Multi(Vec<Request>),
    /// create2 (15).
    Create2(CreateRequest),
    /// reconfig (16).
    Reconfig(ReconfigRequest),
    /// checkWatches (17).
    CheckWatches(WatchesRequest),
    /// removeWatches (18).
    RemoveWatches(WatchesRequest),
    /// createContainer (19).
    CreateContainer(CreateRequest),
    /// deleteContainer (20).
    DeleteContainer(PathRequest),
    /// createTTL (21).
    CreateTtl(CreateTtlRequest),
    /// multiRead (22): getData / getChildren ops, each answered on its own.
    MultiRead(Vec<Request>),
    /// auth (100).
    Auth(AuthPacket),
    /// setWatches (101).
    SetWatches(SetWatches),
    /// sasl (102).
    Sasl(SaslRequest),
    /// getEphemerals (103).
    GetEphemerals(PathRequest),
    /// getAllChildrenNumber (104).
    GetAllChildrenNumber(PathRequest),
    /// setWatches2 (105).
    SetWatches2(SetWatches2),
    /// addWatch (106).
    AddWatch(AddWatchRequest),
    /// whoAmI (107), no body.
    WhoAmI,
    /// closeSession (-11), no body.
    CloseSession,
}

impl Request {
    /// The opcode that goes in the request header.
    pub fn op_code(&self) -> OpCode {
        match self {
            Request::Create(_) => OpCode::CREATE,
            Request::Delete(_) => OpCode::DELETE,
            Request::Exists(_) => OpCode::EXISTS,
            Request::GetData(_) => OpCode::GET_DATA,
            Request::SetData(_) => OpCode::SET_DATA,
            Request::GetAcl(_) => OpCode::GET_ACL,
            Request::SetAcl(_) => OpCode::SET_ACL,
            Request::GetChildren(_) => OpCode::GET_CHILDREN,
            Request::Sync(_) => OpCode::SYNC,
            Request::Ping => OpCode::PING,
            Request::GetChildren2(_) => OpCode::GET_CHILDREN2,
            Request::Check(_) => OpCode::CHECK,
            Request::Multi(_) => OpCode::MULTI,
            Request::Create2(_) => OpCode::CREATE2,
            Request::Reconfig(_) => OpCode::RECONFIG,
            Request::CheckWatches(_) => OpCode::CHECK_WATCHES,
            Request::RemoveWatches(_) => OpCode::REMOVE_WATCHES,
            Request::CreateContainer(_) => OpCode::CREATE_CONTAINER,
            Request::DeleteContainer(_) => OpCode::DELETE_CONTAINER,
            Request::CreateTtl(_) => OpCode::CREATE_TTL,
            Request::MultiRead(_) => OpCode::MULTI_READ,
            Request::Auth(_) => OpCode::AUTH,
            Request::SetWatches(_) => OpCode::SET_WATCHES,
            Request::Sasl(_) => OpCode::SASL,
            Request::GetEphemerals(_) => OpCode::GET_EPHEMERALS,
            Request::GetAllChildrenNumber(_) => OpCode::GET_ALL_CHILDREN_NUMBER,
            Request::SetWatches2(_) => OpCode::SET_WATCHES2,
            Request::AddWatch(_) => OpCode::ADD_WATCH,
            Request::WhoAmI => OpCode::WHO_AM_I,
            Request::CloseSession => OpCode::CLOSE_SESSION,
        }
    }

    /// The path the request is about, when its body starts with one.
    pub fn path(&self) -> Option<&str> {
        match self {
            Request::Create(r) | Request::Create2(r) | Request::CreateContainer(r) => Some(&r.path),
            Request::CreateTtl(r) => Some(&r.path),
            Request::Delete(r) => Some(&r.path),
            Request::Exists(r) | Request::GetData(r) | Request::GetChildren(r) | Request::GetChildren2(r) => {
                Some(&r.path)
            }
            Request::SetData(r) => Some(&r.path),
            Request::GetAcl(r)
            | Request::Sync(r)
            | Request::DeleteContainer(r)
            | Request::GetEphemerals(r)
            | Request::GetAllChildrenNumber(r) => Some(&r.path),
            Request::SetAcl(r) => Some(&r.path),
            Request::Check(r) => Some(&r.path),
            Request::CheckWatches(r) | Request::RemoveWatches(r) => Some(&r.path),
            Request::AddWatch(r) => Some(&r.path),
            _ => None,
        }
    }

    /// Decodes a body of type `op` that fills all of `body`.
    pub fn decode(op: OpCode, body: &[u8]) -> Result<Request, DecodeError> {
        complete(body, |i| Request::parse(op, i))
    }

    pub(crate) fn parse(op: OpCode, i: &[u8]) -> PResult<'_, Request> {
        match op {
            OpCode::CREATE => body(i, Request::Create),
            OpCode::CREATE2 => body(i, Request::Create2),
            OpCode::CREATE_CONTAINER => body(i, Request::CreateContainer),
            OpCode::CREATE_TTL => body(i, Request::CreateTtl),
            OpCode::DELETE => body(i, Request::Delete),
            OpCode::EXISTS => body(i, Request::Exists),
            OpCode::GET_DATA => body(i, Request::GetData),
            OpCode::GET_CHILDREN => body(i, Request::GetChildren),
            OpCode::GET_CHILDREN2 => body(i, Request::GetChildren2),
            OpCode::GET_ACL => body(i, Request::GetAcl),
            OpCode::SYNC => body(i, Request::Sync),
            OpCode::DELETE_CONTAINER => body(i, Request::DeleteContainer),
            OpCode::GET_EPHEMERALS => body(i, Request::GetEphemerals),
            OpCode::GET_ALL_CHILDREN_NUMBER => body(i, Request::GetAllChildrenNumber),
            OpCode::SET_DATA => body(i, Request::SetData),
            OpCode::SET_ACL => body(i, Request::SetAcl),
            OpCode::CHECK => body(i, Request::Check),
            OpCode::MULTI => {
                let (i, ops) = multi::parse_ops(i, OpCode::MULTI)?;
                Ok((i, Request::Multi(ops)))
            }
            OpCode::MULTI_READ => {
                let (i, ops) = multi::parse_ops(i, OpCode::MULTI_READ)?;
                Ok((i, Request::MultiRead(ops)))
            }
            OpCode::RECONFIG => body(i, Request::Reconfig),
            OpCode::CHECK_WATCHES => body(i, Request::CheckWatches),
            OpCode::REMOVE_WATCHES => body(i, Request::RemoveWatches),
            OpCode::AUTH => body(i, Request::Auth),
            OpCode::SET_WATCHES => body(i, Request::SetWatches),
            OpCode::SET_WATCHES2 => body(i, Request::SetWatches2),
            OpCode::SASL => body(i, Request::Sasl),
            OpCode::ADD_WATCH => body(i, Request::AddWatch),
            OpCode::PING => Ok((i, Request::Ping)),
            OpCode::WHO_AM_I => Ok((i, Request::WhoAmI)),
            OpCode::CLOSE_SESSION => Ok((i, Request::CloseSession)),
            OpCode::NOTIFICATION | OpCode::CREATE_SESSION | OpCode::ERROR => fail(i, DecodeErrorKind::NotARequest(op)),
            OpCode(other) => fail(i, DecodeErrorKind::UnknownOpCode(other)),
        }
    }

    /// The body record, for encoding; `None` for the multi op lists (written
    /// by [`multi`]) and the bodiless requests.
    fn record(&self) -> Option<&dyn Encode> {
        Some(match self {
            Request::Create(r) | Request::Create2(r) | Request::CreateContainer(r) => r,
            Request::CreateTtl(r) => r,
            Request::Delete(r) => r,
            Request::Exists(r) | Request::GetData(r) | Request::GetChildren(r) | Request::GetChildren2(r) => r,
            Request::GetAcl(r)
            | Request::Sync(r)
            | Request::DeleteContainer(r)
            | Request::GetEphemerals(r)
            | Request::GetAllChildrenNumber(r) => r,
            Request::SetData(r) => r,
            Request::SetAcl(r) => r,
            Request::Check(r) => r,
            Request::Reconfig(r) => r,
            Request::CheckWatches(r) | Request::RemoveWatches(r) => r,
            Request::Auth(r) => r,
            Request::SetWatches(r) => r,
            Request::SetWatches2(r) => r,
            Request::Sasl(r) => r,
            Request::AddWatch(r) => r,
            Request::Multi(_) | Request::MultiRead(_) | Request::Ping | Request::WhoAmI | Request::CloseSession => {
                return None;
            }
        })
    }
}

/// Parses a body record and tags it with its variant.
fn body<T: Field>(i: &[u8], variant: impl FnOnce(T) -> Request) -> PResult<'_, Request> {
    let (i, record) = T::parse(i)?;
    Ok((i, variant(record)))
}

impl Encode for Request {
    fn encoded_len(&self) -> usize {
        match self {
            Request::Multi(ops) | Request::MultiRead(ops) => multi::ops_len(ops),
            _ => self.record().map_or(0, Encode::encoded_len),
        }
    }

    fn encode(&self, buf: &mut BytesMut) {
        match self {
            Request::Multi(ops) | Request::MultiRead(ops) => multi::put_ops(buf, ops),
            _ => {
                if let Some(record) = self.record() {
                    record.encode(buf);
                }
            }
        }
    }
}

/// A whole client frame after the handshake: header plus body.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct RequestFrame {
    /// The xid and opcode.
    pub header: RequestHeader,
    /// The body; its opcode equals `header.op`.
    pub request: Request,
}

impl RequestFrame {
    /// Builds a frame whose header opcode matches the body.
    pub fn new(xid: crate::Xid, request: Request) -> Self {
        RequestFrame { header: RequestHeader { xid, op: request.op_code() }, request }
    }

    /// Decodes a whole request frame payload.
    pub fn decode(frame: &[u8]) -> Result<Self, DecodeError> {
        complete(frame, |i| {
            let (i, header) = RequestHeader::parse(i)?;
            let (i, request) = Request::parse(header.op, i)?;
            Ok((i, RequestFrame { header, request }))
        })
    }
}

impl Encode for RequestFrame {
    fn encoded_len(&self) -> usize {
        RequestHeader::LEN + self.request.encoded_len()
    }

    fn encode(&self, buf: &mut BytesMut) {
        // The header opcode is the one given; a mismatched body is the caller's
        // choice (used to test servers against bad input).
        self.header.encode(buf);
        self.request.encode(buf);
    }
}
