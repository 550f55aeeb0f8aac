//! Proptest strategies shared by the zoolock-wire integration tests: one per
//! record, plus per-opcode strategies for request and reply bodies.
//!
//! Every strategy only produces values that survive a round trip by design:
//! no null ustrings (they are an error), no null vectors (they decode as
//! empty), reply bodies only when the header says OK, and multi ops only of
//! the types the multi kind allows.
#![allow(dead_code)] // each test crate uses a different subset

use proptest::collection::vec;
use proptest::prelude::*;
use proptest::strategy::BoxedStrategy;
use zoolock_wire::{
    Acl, AddWatchMode, AddWatchRequest, AuthPacket, Bytes, CheckVersionRequest, ClientInfo, ConnectRequest,
    ConnectResponse, CreateMode, CreateRequest, CreateTtlRequest, DeleteRequest, ErrorCode, EventType, Id, KeeperState,
    MultiResult, OpCode, PASSWORD_LEN, PathRequest, PathWatchRequest, Perms, ReconfigRequest, ReplyHeader, Request,
    RequestFrame, Response, SaslRequest, ServerMessage, SetAclRequest, SetDataRequest, SetWatches, SetWatches2, Stat,
    WatcherEvent, WatcherType, WatchesRequest, Xid,
};

/// Every opcode that has a [`Request`] variant, in enum order.
pub(crate) const REQUEST_OPS: &[OpCode] = &[
    OpCode::CREATE,
    OpCode::DELETE,
    OpCode::EXISTS,
    OpCode::GET_DATA,
    OpCode::SET_DATA,
    OpCode::GET_ACL,
    OpCode::SET_ACL,
    OpCode::GET_CHILDREN,
    OpCode::SYNC,
    OpCode::PING,
    OpCode::GET_CHILDREN2,
    OpCode::CHECK,
    OpCode::MULTI,
    OpCode::CREATE2,
    OpCode::RECONFIG,
    OpCode::CHECK_WATCHES,
    OpCode::REMOVE_WATCHES,
    OpCode::CREATE_CONTAINER,
    OpCode::DELETE_CONTAINER,
    OpCode::CREATE_TTL,
    OpCode::MULTI_READ,
    OpCode::AUTH,
    OpCode::SET_WATCHES,
    OpCode::SASL,
    OpCode::GET_EPHEMERALS,
    OpCode::GET_ALL_CHILDREN_NUMBER,
    OpCode::SET_WATCHES2,
    OpCode::ADD_WATCH,
    OpCode::WHO_AM_I,
    OpCode::CLOSE_SESSION,
];

/// Opcodes allowed inside a multi (14).
pub(crate) const MULTI_OPS: &[OpCode] = &[
    OpCode::CREATE,
    OpCode::DELETE,
    OpCode::SET_DATA,
    OpCode::CHECK,
    OpCode::CREATE2,
    OpCode::CREATE_CONTAINER,
    OpCode::CREATE_TTL,
];

/// Opcodes allowed inside a multiRead (22).
pub(crate) const MULTI_READ_OPS: &[OpCode] = &[OpCode::GET_DATA, OpCode::GET_CHILDREN];

/// Named codes the codec knows but that are not client requests.
pub(crate) const NOT_REQUEST_OPS: &[OpCode] = &[OpCode::NOTIFICATION, OpCode::CREATE_SESSION, OpCode::ERROR];

/// Strings: empty, ASCII paths, Curator-style lock names and arbitrary
/// non-ASCII UTF-8 (multi-byte and astral characters included).
pub(crate) fn string() -> BoxedStrategy<String> {
    prop_oneof![
        1 => Just(String::new()),
        3 => "(/[a-z0-9_.-]{1,12}){1,4}",
        1 => "_c_[0-9a-f]{8}-[0-9a-f]{4}-[0-9a-f]{4}-[0-9a-f]{4}-[0-9a-f]{12}-lock-[0-9]{10}",
        2 => "/[a-zéüß日本語ロック🔒𝄞]{1,10}",
        2 => "\\PC{0,24}",
        1 => any::<String>(),
    ]
    .boxed()
}

/// Node data and other jute buffers: null, empty, or some bytes.
pub(crate) fn data() -> BoxedStrategy<Option<Bytes>> {
    prop_oneof![Just(None), Just(Some(Bytes::new())), vec(any::<u8>(), 1..96).prop_map(|v| Some(Bytes::from(v))),]
        .boxed()
}

/// A vector of `elem`: often empty, else a few elements.
pub(crate) fn list<T: Clone + core::fmt::Debug + 'static>(elem: BoxedStrategy<T>) -> BoxedStrategy<Vec<T>> {
    prop_oneof![1 => Just(Vec::new()), 3 => vec(elem, 1..6)].boxed()
}

/// A named constant or any other raw value: codes stay open sets.
fn code(named: &'static [i32]) -> BoxedStrategy<i32> {
    prop_oneof![3 => proptest::sample::select(named), 1 => any::<i32>()].boxed()
}

pub(crate) fn create_mode() -> BoxedStrategy<CreateMode> {
    code(&[0, 1, 2, 3, 4, 5, 6]).prop_map(CreateMode).boxed()
}

pub(crate) fn error_code() -> BoxedStrategy<ErrorCode> {
    code(&[0, -2, -4, -6, -101, -103, -110, -111, -112, -115, -127]).prop_map(ErrorCode).boxed()
}

/// A non-OK error code.
pub(crate) fn failure_code() -> BoxedStrategy<ErrorCode> {
    error_code().prop_filter("not OK", |e| !e.is_ok()).boxed()
}

pub(crate) fn stat() -> BoxedStrategy<Stat> {
    (
        (any::<i64>(), any::<i64>(), any::<i64>(), any::<i64>()),
        (any::<i32>(), any::<i32>(), any::<i32>()),
        (any::<i64>(), any::<i32>(), any::<i32>(), any::<i64>()),
    )
        .prop_map(
            |(
                (czxid, mzxid, ctime, mtime),
                (version, cversion, aversion),
                (ephemeral_owner, data_length, num_children, pzxid),
            )| Stat {
                czxid,
                mzxid,
                ctime,
                mtime,
                version,
                cversion,
                aversion,
                ephemeral_owner,
                data_length,
                num_children,
                pzxid,
            },
        )
        .boxed()
}

pub(crate) fn id() -> BoxedStrategy<Id> {
    prop_oneof![
        Just(Id { scheme: "world".into(), id: "anyone".into() }),
        Just(Id { scheme: "auth".into(), id: String::new() }),
        (string(), string()).prop_map(|(scheme, id)| Id { scheme, id }),
    ]
    .boxed()
}

pub(crate) fn acl() -> BoxedStrategy<Acl> {
    (code(&[1, 2, 4, 8, 16, 31]), id()).prop_map(|(perms, id)| Acl { perms: Perms(perms), id }).boxed()
}

pub(crate) fn acls() -> BoxedStrategy<Vec<Acl>> {
    list(acl())
}

pub(crate) fn strings() -> BoxedStrategy<Vec<String>> {
    list(string())
}

pub(crate) fn client_info() -> BoxedStrategy<ClientInfo> {
    (string(), string()).prop_map(|(auth_scheme, user)| ClientInfo { auth_scheme, user }).boxed()
}

pub(crate) fn connect_request() -> BoxedStrategy<ConnectRequest> {
    (any::<i32>(), any::<i64>(), any::<i32>(), any::<i64>(), password(), proptest::option::of(any::<bool>()))
        .prop_map(|(protocol_version, last_zxid_seen, timeout_ms, session_id, passwd, read_only)| ConnectRequest {
            protocol_version,
            last_zxid_seen,
            timeout_ms,
            session_id,
            passwd,
            read_only,
        })
        .boxed()
}

pub(crate) fn connect_response() -> BoxedStrategy<ConnectResponse> {
    (any::<i32>(), any::<i32>(), any::<i64>(), password(), proptest::option::of(any::<bool>()))
        .prop_map(|(protocol_version, timeout_ms, session_id, passwd, read_only)| ConnectResponse {
            protocol_version,
            timeout_ms,
            session_id,
            passwd,
            read_only,
        })
        .boxed()
}

/// A resumed session's ConnectRequest (16-byte password, readOnly left
/// out), for tests that change one field or cut the encoding.
pub(crate) fn sample_connect_request() -> ConnectRequest {
    ConnectRequest {
        protocol_version: 0,
        last_zxid_seen: 0x1234,
        timeout_ms: 30_000,
        session_id: 0x0100_0002_a3b4_0000,
        passwd: Some(Bytes::from_static(&[7; PASSWORD_LEN])),
        read_only: None,
    }
}

/// The 36-byte ConnectResponse (readOnly left out) to a sample request.
pub(crate) fn sample_connect_response() -> ConnectResponse {
    ConnectResponse {
        protocol_version: 0,
        timeout_ms: 10_000,
        session_id: 0x0100_0002_a3b4_0000,
        passwd: Some(Bytes::from_static(b"0123456789abcdef")),
        read_only: None,
    }
}

/// Usually a real 16-byte password, sometimes any buffer.
fn password() -> BoxedStrategy<Option<Bytes>> {
    prop_oneof![
        3 => proptest::array::uniform::<_, PASSWORD_LEN>(any::<u8>()).prop_map(|p| Some(Bytes::copy_from_slice(&p))),
        1 => data(),
    ]
    .boxed()
}

fn create_request() -> BoxedStrategy<CreateRequest> {
    (string(), data(), acls(), create_mode())
        .prop_map(|(path, data, acl, flags)| CreateRequest { path, data, acl, flags })
        .boxed()
}

fn path_watch() -> BoxedStrategy<PathWatchRequest> {
    (string(), any::<bool>()).prop_map(|(path, watch)| PathWatchRequest { path, watch }).boxed()
}

fn path_only() -> BoxedStrategy<PathRequest> {
    string().prop_map(|path| PathRequest { path }).boxed()
}

fn watches() -> BoxedStrategy<WatchesRequest> {
    (string(), code(&[1, 2, 3, 4, 5]))
        .prop_map(|(path, t)| WatchesRequest { path, watcher_type: WatcherType(t) })
        .boxed()
}

/// setWatches lists; setWatches2 adds two more to the same four fields.
fn set_watches() -> BoxedStrategy<SetWatches> {
    (any::<i64>(), strings(), strings(), strings())
        .prop_map(|(relative_zxid, data_watches, exist_watches, child_watches)| SetWatches {
            relative_zxid,
            data_watches,
            exist_watches,
            child_watches,
        })
        .boxed()
}

fn optional_string() -> BoxedStrategy<Option<String>> {
    proptest::option::of(string()).boxed()
}

/// Ops for a multi (14) or multiRead (22) request.
fn multi_ops(allowed: &'static [OpCode]) -> BoxedStrategy<Vec<Request>> {
    let ops: Vec<BoxedStrategy<Request>> = allowed.iter().map(|&op| request_for(op)).collect();
    list(proptest::strategy::Union::new(ops).boxed())
}

/// A request body of type `op`. Panics on an opcode without a request body.
pub(crate) fn request_for(op: OpCode) -> BoxedStrategy<Request> {
    match op {
        OpCode::CREATE => create_request().prop_map(Request::Create).boxed(),
        OpCode::DELETE => (string(), any::<i32>())
            .prop_map(|(path, version)| Request::Delete(DeleteRequest { path, version }))
            .boxed(),
        OpCode::EXISTS => path_watch().prop_map(Request::Exists).boxed(),
        OpCode::GET_DATA => path_watch().prop_map(Request::GetData).boxed(),
        OpCode::SET_DATA => (string(), data(), any::<i32>())
            .prop_map(|(path, data, version)| Request::SetData(SetDataRequest { path, data, version }))
            .boxed(),
        OpCode::GET_ACL => path_only().prop_map(Request::GetAcl).boxed(),
        OpCode::SET_ACL => (string(), acls(), any::<i32>())
            .prop_map(|(path, acl, version)| Request::SetAcl(SetAclRequest { path, acl, version }))
            .boxed(),
        OpCode::GET_CHILDREN => path_watch().prop_map(Request::GetChildren).boxed(),
        OpCode::SYNC => path_only().prop_map(Request::Sync).boxed(),
        OpCode::PING => Just(Request::Ping).boxed(),
        OpCode::GET_CHILDREN2 => path_watch().prop_map(Request::GetChildren2).boxed(),
        OpCode::CHECK => (string(), any::<i32>())
            .prop_map(|(path, version)| Request::Check(CheckVersionRequest { path, version }))
            .boxed(),
        OpCode::MULTI => multi_ops(MULTI_OPS).prop_map(Request::Multi).boxed(),
        OpCode::CREATE2 => create_request().prop_map(Request::Create2).boxed(),
        OpCode::RECONFIG => (optional_string(), optional_string(), optional_string(), any::<i64>())
            .prop_map(|(joining_servers, leaving_servers, new_members, cur_config_id)| {
                Request::Reconfig(ReconfigRequest { joining_servers, leaving_servers, new_members, cur_config_id })
            })
            .boxed(),
        OpCode::CHECK_WATCHES => watches().prop_map(Request::CheckWatches).boxed(),
        OpCode::REMOVE_WATCHES => watches().prop_map(Request::RemoveWatches).boxed(),
        OpCode::CREATE_CONTAINER => create_request().prop_map(Request::CreateContainer).boxed(),
        OpCode::DELETE_CONTAINER => path_only().prop_map(Request::DeleteContainer).boxed(),
        OpCode::CREATE_TTL => (string(), data(), acls(), create_mode(), any::<i64>())
            .prop_map(|(path, data, acl, flags, ttl)| {
                Request::CreateTtl(CreateTtlRequest { path, data, acl, flags, ttl })
            })
            .boxed(),
        OpCode::MULTI_READ => multi_ops(MULTI_READ_OPS).prop_map(Request::MultiRead).boxed(),
        OpCode::AUTH => (any::<i32>(), string(), data())
            .prop_map(|(auth_type, scheme, auth)| Request::Auth(AuthPacket { auth_type, scheme, auth }))
            .boxed(),
        OpCode::SET_WATCHES => set_watches().prop_map(Request::SetWatches).boxed(),
        OpCode::SASL => data().prop_map(|token| Request::Sasl(SaslRequest { token })).boxed(),
        OpCode::GET_EPHEMERALS => path_only().prop_map(Request::GetEphemerals).boxed(),
        OpCode::GET_ALL_CHILDREN_NUMBER => path_only().prop_map(Request::GetAllChildrenNumber).boxed(),
        OpCode::SET_WATCHES2 => (set_watches(), strings(), strings())
            .prop_map(|(w, persistent_watches, persistent_recursive_watches)| {
                Request::SetWatches2(SetWatches2 {
                    relative_zxid: w.relative_zxid,
                    data_watches: w.data_watches,
                    exist_watches: w.exist_watches,
                    child_watches: w.child_watches,
                    persistent_watches,
                    persistent_recursive_watches,
                })
            })
            .boxed(),
        OpCode::ADD_WATCH => (string(), code(&[0, 1]))
            .prop_map(|(path, mode)| Request::AddWatch(AddWatchRequest { path, mode: AddWatchMode(mode) }))
            .boxed(),
        OpCode::WHO_AM_I => Just(Request::WhoAmI).boxed(),
        OpCode::CLOSE_SESSION => Just(Request::CloseSession).boxed(),
        other => panic!("no request body for {other}"),
    }
}

/// Any request of any opcode.
pub(crate) fn request() -> BoxedStrategy<Request> {
    proptest::strategy::Union::new(REQUEST_OPS.iter().map(|&op| request_for(op))).boxed()
}

/// A request frame with any xid.
pub(crate) fn request_frame() -> BoxedStrategy<RequestFrame> {
    (any::<i32>(), request()).prop_map(|(xid, req)| RequestFrame::new(Xid(xid), req)).boxed()
}

/// One result inside a multi (14) reply: the result types a server writes
/// for write ops, or an ErrorResult.
fn multi_write_result() -> BoxedStrategy<MultiResult> {
    prop_oneof![
        string().prop_map(|p| MultiResult::Ok { op: OpCode::CREATE, response: Response::Path(p) }),
        (string(), stat()).prop_map(|(path, stat)| MultiResult::Ok {
            op: OpCode::CREATE2,
            response: Response::Create2 { path, stat }
        }),
        Just(MultiResult::Ok { op: OpCode::DELETE, response: Response::Empty }),
        stat().prop_map(|s| MultiResult::Ok { op: OpCode::SET_DATA, response: Response::Stat(s) }),
        Just(MultiResult::Ok { op: OpCode::CHECK, response: Response::Empty }),
        error_code().prop_map(MultiResult::Error),
    ]
    .boxed()
}

/// One result inside a multiRead (22) reply.
fn multi_read_result() -> BoxedStrategy<MultiResult> {
    prop_oneof![
        strings().prop_map(|c| MultiResult::Ok { op: OpCode::GET_CHILDREN, response: Response::Children(c) }),
        (data(), stat())
            .prop_map(|(data, stat)| MultiResult::Ok { op: OpCode::GET_DATA, response: Response::Data { data, stat } }),
        error_code().prop_map(MultiResult::Error),
    ]
    .boxed()
}

/// Each reply layout by example, with the opcodes whose successful reply
/// has it: the opcode → layout map, spelled out here rather than taken from
/// the decoder so that a change in it is caught.
pub(crate) fn reply_layouts() -> Vec<(Response, &'static [OpCode])> {
    let stat = Stat { czxid: 1, mzxid: 2, ctime: 3, mtime: 4, version: 5, ..Stat::default() };
    vec![
        (
            Response::Empty,
            &[
                OpCode::DELETE,
                OpCode::PING,
                OpCode::CHECK,
                OpCode::CHECK_WATCHES,
                OpCode::REMOVE_WATCHES,
                OpCode::DELETE_CONTAINER,
                OpCode::AUTH,
                OpCode::SET_WATCHES,
                OpCode::SET_WATCHES2,
                OpCode::CLOSE_SESSION,
            ],
        ),
        (Response::Path("/a/b-0000000001".into()), &[OpCode::CREATE, OpCode::SYNC]),
        (
            Response::Create2 { path: "/ロック".into(), stat },
            &[OpCode::CREATE2, OpCode::CREATE_CONTAINER, OpCode::CREATE_TTL],
        ),
        (Response::Stat(stat), &[OpCode::EXISTS, OpCode::SET_DATA, OpCode::SET_ACL]),
        (Response::Data { data: None, stat }, &[OpCode::GET_DATA, OpCode::RECONFIG]),
        (Response::Data { data: Some(Bytes::new()), stat }, &[OpCode::GET_DATA, OpCode::RECONFIG]),
        (Response::Acl { acl: Acl::open_unsafe(), stat }, &[OpCode::GET_ACL]),
        (Response::Children(vec!["a".into(), "é".into()]), &[OpCode::GET_CHILDREN, OpCode::GET_EPHEMERALS]),
        (Response::Children2 { children: vec![], stat }, &[OpCode::GET_CHILDREN2]),
        (
            Response::Multi(vec![
                MultiResult::Ok { op: OpCode::CHECK, response: Response::Empty },
                MultiResult::Error(ErrorCode::BAD_VERSION),
            ]),
            &[OpCode::MULTI],
        ),
        (
            Response::Multi(vec![
                MultiResult::Ok { op: OpCode::GET_CHILDREN, response: Response::Children(vec!["x".into()]) },
                MultiResult::Error(ErrorCode::NO_NODE),
            ]),
            &[OpCode::MULTI_READ],
        ),
        (Response::Sasl(Some(Bytes::from_static(b"token"))), &[OpCode::SASL]),
        (Response::Count(-3), &[OpCode::GET_ALL_CHILDREN_NUMBER]),
        (Response::AddWatch(ErrorCode::OK), &[OpCode::ADD_WATCH]),
        (
            Response::WhoAmI(vec![ClientInfo { auth_scheme: "ip".into(), user: "127.0.0.1".into() }]),
            &[OpCode::WHO_AM_I],
        ),
    ]
}

/// The body of a successful reply to a request of type `op`: values of the
/// layout [`reply_layouts`] gives it.
pub(crate) fn response_for(op: OpCode) -> BoxedStrategy<Response> {
    let layouts = reply_layouts();
    let Some((example, _)) = layouts.iter().find(|(_, ops)| ops.contains(&op)) else {
        panic!("no reply body for {op}")
    };
    match example {
        Response::Empty => Just(Response::Empty).boxed(),
        Response::Path(_) => string().prop_map(Response::Path).boxed(),
        Response::Create2 { .. } => {
            (string(), stat()).prop_map(|(path, stat)| Response::Create2 { path, stat }).boxed()
        }
        Response::Stat(_) => stat().prop_map(Response::Stat).boxed(),
        Response::Data { .. } => (data(), stat()).prop_map(|(data, stat)| Response::Data { data, stat }).boxed(),
        Response::Acl { .. } => (acls(), stat()).prop_map(|(acl, stat)| Response::Acl { acl, stat }).boxed(),
        Response::Children(_) => strings().prop_map(Response::Children).boxed(),
        Response::Children2 { .. } => {
            (strings(), stat()).prop_map(|(children, stat)| Response::Children2 { children, stat }).boxed()
        }
        Response::Multi(_) if op == OpCode::MULTI => list(multi_write_result()).prop_map(Response::Multi).boxed(),
        Response::Multi(_) => list(multi_read_result()).prop_map(Response::Multi).boxed(),
        Response::Sasl(_) => data().prop_map(Response::Sasl).boxed(),
        Response::Count(_) => any::<i32>().prop_map(Response::Count).boxed(),
        Response::AddWatch(_) => error_code().prop_map(Response::AddWatch).boxed(),
        Response::WhoAmI(_) => list(client_info()).prop_map(Response::WhoAmI).boxed(),
        other => panic!("no strategy for {other:?}"),
    }
}

/// A watch notification (xid -1).
pub(crate) fn notification() -> BoxedStrategy<ServerMessage> {
    (any::<i64>(), code(&[0]), code(&[1, 2, 3, 4]), code(&[3]), string())
        .prop_map(|(zxid, err, event_type, state, path)| ServerMessage::Notification {
            header: ReplyHeader { xid: Xid::NOTIFICATION, zxid, err: ErrorCode(err) },
            event: WatcherEvent { event_type: EventType(event_type), state: KeeperState(state), path },
        })
        .boxed()
}

/// An xid that the decoder resolves through the pending-request lookup
/// (anything but -1, -2 and -4).
pub(crate) fn lookup_xid() -> BoxedStrategy<Xid> {
    prop_oneof![
        3 => (1..i32::MAX).prop_map(Xid),
        1 => Just(Xid::SET_WATCHES),
        1 => any::<i32>().prop_filter("special xid", |x| ![-1, -2, -4].contains(x)).prop_map(Xid),
    ]
    .boxed()
}

/// A reply to a request of type `op` (with a lookup xid), either OK with a
/// body or failed without one. Pings and auth replies use their own xids.
pub(crate) fn reply_for(op: OpCode) -> BoxedStrategy<ServerMessage> {
    let xid = match op {
        OpCode::PING => Just(Xid::PING).boxed(),
        OpCode::AUTH => prop_oneof![Just(Xid::AUTH), lookup_xid()].boxed(),
        _ => lookup_xid(),
    };
    let zxid = any::<i64>();
    prop_oneof![
        3 => (xid.clone(), zxid, response_for(op)).prop_map(|(xid, zxid, response)| ServerMessage::Reply {
            header: ReplyHeader { xid, zxid, err: ErrorCode::OK },
            response: Some(response),
        }),
        1 => (xid, zxid, failure_code()).prop_map(|(xid, zxid, err)| ServerMessage::Reply {
            header: ReplyHeader { xid, zxid, err },
            response: None,
        }),
    ]
    .boxed()
}

/// Any server message, with the opcode the client would have pending for it.
pub(crate) fn server_message() -> BoxedStrategy<(OpCode, ServerMessage)> {
    prop_oneof![
        1 => notification().prop_map(|m| (OpCode::NOTIFICATION, m)),
        6 => proptest::sample::select(REQUEST_OPS).prop_flat_map(|op| reply_for(op).prop_map(move |m| (op, m))),
    ]
    .boxed()
}
