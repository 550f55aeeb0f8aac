//! Client requests: one record type per body layout, and [`Request`], which
//! ties each opcode to its body.

use alloc::string::String;
use alloc::vec::Vec;

use bytes::{BufMut, Bytes, BytesMut};

use crate::Encode;
use crate::codes::{AddWatchMode, CreateMode, OpCode, WatcherType};
use crate::data::{Acl, acls_len};
use crate::error::{DecodeError, DecodeErrorKind};
use crate::header::RequestHeader;
use crate::multi;
use crate::primitive::{
    PResult, USTRING_MIN, boolean, buffer, buffer_len, complete, fail, int, long, put_bool, put_buffer, put_strings,
    put_ustring, put_vector, strings_len, ustring, ustring_len, vector,
};

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

/// delete (2).
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct DeleteRequest {
    /// Node to delete.
    pub path: String,
    /// Expected data version; -1 matches any.
    pub version: i32,
}

/// A path plus a watch flag: exists (3), getData (4), getChildren (8), getChildren2 (12).
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct PathWatchRequest {
    /// Node to read.
    pub path: String,
    /// Whether to leave a watch.
    pub watch: bool,
}

/// A bare path: getACL (6), sync (9), deleteContainer (20), getEphemerals (103),
/// getAllChildrenNumber (104).
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct PathRequest {
    /// The path (a prefix for getEphemerals).
    pub path: String,
}

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

/// check (13), valid inside multi.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct CheckVersionRequest {
    /// Node to check.
    pub path: String,
    /// Required data version.
    pub version: i32,
}

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

/// checkWatches (17) and removeWatches (18).
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct WatchesRequest {
    /// The watched path.
    pub path: String,
    /// Which kind of watch.
    pub watcher_type: WatcherType,
}

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

/// addWatch (106).
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct AddWatchRequest {
    /// Path to watch.
    pub path: String,
    /// Persistent or persistent-recursive.
    pub mode: AddWatchMode,
}

/// sasl (102).
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct SaslRequest {
    /// The SASL token.
    pub token: Option<Bytes>,
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
        Ok(match op {
            OpCode::CREATE => map(create(i)?, Request::Create),
            OpCode::CREATE2 => map(create(i)?, Request::Create2),
            OpCode::CREATE_CONTAINER => map(create(i)?, Request::CreateContainer),
            OpCode::CREATE_TTL => {
                let (i, path) = ustring(i)?;
                let (i, data) = buffer(i)?;
                let (i, acl) = vector(i, Acl::MIN_LEN, Acl::parse)?;
                let (i, flags) = int(i)?;
                let (i, ttl) = long(i)?;
                (i, Request::CreateTtl(CreateTtlRequest { path, data, acl, flags: CreateMode(flags), ttl }))
            }
            OpCode::DELETE => {
                let (i, path) = ustring(i)?;
                let (i, version) = int(i)?;
                (i, Request::Delete(DeleteRequest { path, version }))
            }
            OpCode::EXISTS => map(path_watch(i)?, Request::Exists),
            OpCode::GET_DATA => map(path_watch(i)?, Request::GetData),
            OpCode::GET_CHILDREN => map(path_watch(i)?, Request::GetChildren),
            OpCode::GET_CHILDREN2 => map(path_watch(i)?, Request::GetChildren2),
            OpCode::GET_ACL => map(path_only(i)?, Request::GetAcl),
            OpCode::SYNC => map(path_only(i)?, Request::Sync),
            OpCode::DELETE_CONTAINER => map(path_only(i)?, Request::DeleteContainer),
            OpCode::GET_EPHEMERALS => map(path_only(i)?, Request::GetEphemerals),
            OpCode::GET_ALL_CHILDREN_NUMBER => map(path_only(i)?, Request::GetAllChildrenNumber),
            OpCode::SET_DATA => {
                let (i, path) = ustring(i)?;
                let (i, data) = buffer(i)?;
                let (i, version) = int(i)?;
                (i, Request::SetData(SetDataRequest { path, data, version }))
            }
            OpCode::SET_ACL => {
                let (i, path) = ustring(i)?;
                let (i, acl) = vector(i, Acl::MIN_LEN, Acl::parse)?;
                let (i, version) = int(i)?;
                (i, Request::SetAcl(SetAclRequest { path, acl, version }))
            }
            OpCode::CHECK => {
                let (i, path) = ustring(i)?;
                let (i, version) = int(i)?;
                (i, Request::Check(CheckVersionRequest { path, version }))
            }
            OpCode::MULTI => map(multi::parse_ops(i, OpCode::MULTI)?, Request::Multi),
            OpCode::MULTI_READ => map(multi::parse_ops(i, OpCode::MULTI_READ)?, Request::MultiRead),
            OpCode::RECONFIG => {
                let (i, joining_servers) = optional_ustring(i)?;
                let (i, leaving_servers) = optional_ustring(i)?;
                let (i, new_members) = optional_ustring(i)?;
                let (i, cur_config_id) = long(i)?;
                (i, Request::Reconfig(ReconfigRequest { joining_servers, leaving_servers, new_members, cur_config_id }))
            }
            OpCode::CHECK_WATCHES => map(watches(i)?, Request::CheckWatches),
            OpCode::REMOVE_WATCHES => map(watches(i)?, Request::RemoveWatches),
            OpCode::AUTH => {
                let (i, auth_type) = int(i)?;
                let (i, scheme) = ustring(i)?;
                let (i, auth) = buffer(i)?;
                (i, Request::Auth(AuthPacket { auth_type, scheme, auth }))
            }
            OpCode::SET_WATCHES => {
                let (i, relative_zxid) = long(i)?;
                let (i, data_watches) = strings(i)?;
                let (i, exist_watches) = strings(i)?;
                let (i, child_watches) = strings(i)?;
                (i, Request::SetWatches(SetWatches { relative_zxid, data_watches, exist_watches, child_watches }))
            }
            OpCode::SET_WATCHES2 => {
                let (i, relative_zxid) = long(i)?;
                let (i, data_watches) = strings(i)?;
                let (i, exist_watches) = strings(i)?;
                let (i, child_watches) = strings(i)?;
                let (i, persistent_watches) = strings(i)?;
                let (i, persistent_recursive_watches) = strings(i)?;
                (
                    i,
                    Request::SetWatches2(SetWatches2 {
                        relative_zxid,
                        data_watches,
                        exist_watches,
                        child_watches,
                        persistent_watches,
                        persistent_recursive_watches,
                    }),
                )
            }
            OpCode::SASL => {
                let (i, token) = buffer(i)?;
                (i, Request::Sasl(SaslRequest { token }))
            }
            OpCode::ADD_WATCH => {
                let (i, path) = ustring(i)?;
                let (i, mode) = int(i)?;
                (i, Request::AddWatch(AddWatchRequest { path, mode: AddWatchMode(mode) }))
            }
            OpCode::PING => (i, Request::Ping),
            OpCode::WHO_AM_I => (i, Request::WhoAmI),
            OpCode::CLOSE_SESSION => (i, Request::CloseSession),
            OpCode::NOTIFICATION | OpCode::CREATE_SESSION | OpCode::ERROR => {
                return fail(i, DecodeErrorKind::NotARequest(op));
            }
            OpCode(other) => return fail(i, DecodeErrorKind::UnknownOpCode(other)),
        })
    }
}

fn map<T, U>((i, v): (&[u8], T), f: impl FnOnce(T) -> U) -> (&[u8], U) {
    (i, f(v))
}

fn create(i: &[u8]) -> PResult<'_, CreateRequest> {
    let (i, path) = ustring(i)?;
    let (i, data) = buffer(i)?;
    let (i, acl) = vector(i, Acl::MIN_LEN, Acl::parse)?;
    let (i, flags) = int(i)?;
    Ok((i, CreateRequest { path, data, acl, flags: CreateMode(flags) }))
}

fn path_watch(i: &[u8]) -> PResult<'_, PathWatchRequest> {
    let (i, path) = ustring(i)?;
    let (i, watch) = boolean(i)?;
    Ok((i, PathWatchRequest { path, watch }))
}

fn path_only(i: &[u8]) -> PResult<'_, PathRequest> {
    let (i, path) = ustring(i)?;
    Ok((i, PathRequest { path }))
}

fn watches(i: &[u8]) -> PResult<'_, WatchesRequest> {
    let (i, path) = ustring(i)?;
    let (i, t) = int(i)?;
    Ok((i, WatchesRequest { path, watcher_type: WatcherType(t) }))
}

fn strings(i: &[u8]) -> PResult<'_, Vec<String>> {
    vector(i, USTRING_MIN, ustring)
}

fn optional_ustring(i: &[u8]) -> PResult<'_, Option<String>> {
    // Peek the length: -1 is null, anything else is a normal string.
    let (rest, len) = int(i)?;
    if len == -1 { Ok((rest, None)) } else { ustring(i).map(|(r, s)| (r, Some(s))) }
}

fn optional_ustring_len(v: Option<&String>) -> usize {
    4 + v.map_or(0, String::len)
}

fn put_optional_ustring(buf: &mut BytesMut, v: Option<&String>) {
    match v {
        None => buf.put_i32(-1),
        Some(s) => put_ustring(buf, s),
    }
}

fn create_len(r: &CreateRequest) -> usize {
    ustring_len(&r.path) + buffer_len(r.data.as_deref()) + acls_len(&r.acl) + 4
}

fn put_create(buf: &mut BytesMut, r: &CreateRequest) {
    put_ustring(buf, &r.path);
    put_buffer(buf, r.data.as_deref());
    put_vector(buf, &r.acl, |b, a| a.encode(b));
    buf.put_i32(r.flags.0);
}

impl Encode for Request {
    fn encoded_len(&self) -> usize {
        match self {
            Request::Create(r) | Request::Create2(r) | Request::CreateContainer(r) => create_len(r),
            Request::CreateTtl(r) => ustring_len(&r.path) + buffer_len(r.data.as_deref()) + acls_len(&r.acl) + 4 + 8,
            Request::Delete(r) => ustring_len(&r.path) + 4,
            Request::Exists(r) | Request::GetData(r) | Request::GetChildren(r) | Request::GetChildren2(r) => {
                ustring_len(&r.path) + 1
            }
            Request::GetAcl(r)
            | Request::Sync(r)
            | Request::DeleteContainer(r)
            | Request::GetEphemerals(r)
            | Request::GetAllChildrenNumber(r) => ustring_len(&r.path),
            Request::SetData(r) => ustring_len(&r.path) + buffer_len(r.data.as_deref()) + 4,
            Request::SetAcl(r) => ustring_len(&r.path) + acls_len(&r.acl) + 4,
            Request::Check(r) => ustring_len(&r.path) + 4,
            Request::Multi(ops) | Request::MultiRead(ops) => multi::ops_len(ops),
            Request::Reconfig(r) => {
                optional_ustring_len(r.joining_servers.as_ref())
                    + optional_ustring_len(r.leaving_servers.as_ref())
                    + optional_ustring_len(r.new_members.as_ref())
                    + 8
            }
            Request::CheckWatches(r) | Request::RemoveWatches(r) => ustring_len(&r.path) + 4,
            Request::Auth(r) => 4 + ustring_len(&r.scheme) + buffer_len(r.auth.as_deref()),
            Request::SetWatches(r) => {
                8 + strings_len(&r.data_watches) + strings_len(&r.exist_watches) + strings_len(&r.child_watches)
            }
            Request::SetWatches2(r) => {
                8 + strings_len(&r.data_watches)
                    + strings_len(&r.exist_watches)
                    + strings_len(&r.child_watches)
                    + strings_len(&r.persistent_watches)
                    + strings_len(&r.persistent_recursive_watches)
            }
            Request::Sasl(r) => buffer_len(r.token.as_deref()),
            Request::AddWatch(r) => ustring_len(&r.path) + 4,
            Request::Ping | Request::WhoAmI | Request::CloseSession => 0,
        }
    }

    fn encode(&self, buf: &mut BytesMut) {
        match self {
            Request::Create(r) | Request::Create2(r) | Request::CreateContainer(r) => put_create(buf, r),
            Request::CreateTtl(r) => {
                put_ustring(buf, &r.path);
                put_buffer(buf, r.data.as_deref());
                put_vector(buf, &r.acl, |b, a| a.encode(b));
                buf.put_i32(r.flags.0);
                buf.put_i64(r.ttl);
            }
            Request::Delete(r) => {
                put_ustring(buf, &r.path);
                buf.put_i32(r.version);
            }
            Request::Exists(r) | Request::GetData(r) | Request::GetChildren(r) | Request::GetChildren2(r) => {
                put_ustring(buf, &r.path);
                put_bool(buf, r.watch);
            }
            Request::GetAcl(r)
            | Request::Sync(r)
            | Request::DeleteContainer(r)
            | Request::GetEphemerals(r)
            | Request::GetAllChildrenNumber(r) => put_ustring(buf, &r.path),
            Request::SetData(r) => {
                put_ustring(buf, &r.path);
                put_buffer(buf, r.data.as_deref());
                buf.put_i32(r.version);
            }
            Request::SetAcl(r) => {
                put_ustring(buf, &r.path);
                put_vector(buf, &r.acl, |b, a| a.encode(b));
                buf.put_i32(r.version);
            }
            Request::Check(r) => {
                put_ustring(buf, &r.path);
                buf.put_i32(r.version);
            }
            Request::Multi(ops) | Request::MultiRead(ops) => multi::put_ops(buf, ops),
            Request::Reconfig(r) => {
                put_optional_ustring(buf, r.joining_servers.as_ref());
                put_optional_ustring(buf, r.leaving_servers.as_ref());
                put_optional_ustring(buf, r.new_members.as_ref());
                buf.put_i64(r.cur_config_id);
            }
            Request::CheckWatches(r) | Request::RemoveWatches(r) => {
                put_ustring(buf, &r.path);
                buf.put_i32(r.watcher_type.0);
            }
            Request::Auth(r) => {
                buf.put_i32(r.auth_type);
                put_ustring(buf, &r.scheme);
                put_buffer(buf, r.auth.as_deref());
            }
            Request::SetWatches(r) => {
                buf.put_i64(r.relative_zxid);
                put_strings(buf, &r.data_watches);
                put_strings(buf, &r.exist_watches);
                put_strings(buf, &r.child_watches);
            }
            Request::SetWatches2(r) => {
                buf.put_i64(r.relative_zxid);
                put_strings(buf, &r.data_watches);
                put_strings(buf, &r.exist_watches);
                put_strings(buf, &r.child_watches);
                put_strings(buf, &r.persistent_watches);
                put_strings(buf, &r.persistent_recursive_watches);
            }
            Request::Sasl(r) => put_buffer(buf, r.token.as_deref()),
            Request::AddWatch(r) => {
                put_ustring(buf, &r.path);
                buf.put_i32(r.mode.0);
            }
            Request::Ping | Request::WhoAmI | Request::CloseSession => {}
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
