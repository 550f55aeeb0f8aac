//! Renders decoded frames as JSON, one object per frame.
//!
//! Conventions: field names follow the jute record definitions (camelCase);
//! 64-bit session ids, zxids and config ids are hex strings (`"0x1f"`, and
//! `"-0x1"` for negative values such as a notification's zxid); byte buffers
//! are `{"utf8": ...}` when valid UTF-8, else `{"hex": ...}`, and `null` for a
//! null buffer; every code (opcode, error, event type, ...) is a number with a
//! `*_name` companion (`null` when the value is unknown).

use serde_json::{Map, Value, json};
use zoolock_wire::{
    Acl, ClientInfo, ConnectRequest, ConnectResponse, Encode, ErrorCode, MultiResult, OpCode, Request, RequestFrame,
    Response, ServerMessage, Stat,
};

use crate::decode::DecodedFrame;
use crate::trace::Frame;

/// A 64-bit id or zxid as `0x…` (`-0x…` when negative).
pub fn hex64(v: i64) -> String {
    if v < 0 { format!("-{:#x}", v.unsigned_abs()) } else { format!("{v:#x}") }
}

/// A jute buffer: `null`, `{"utf8": text}` or `{"hex": digits}`.
pub fn data(v: Option<&[u8]>) -> Value {
    match v {
        None => Value::Null,
        Some(bytes) => match std::str::from_utf8(bytes) {
            Ok(text) => json!({ "utf8": text }),
            Err(_) => json!({ "hex": hex::encode(bytes) }),
        },
    }
}

/// An opcode's name, or its number when unknown.
pub fn op_name(op: OpCode) -> String {
    op.to_string()
}

fn name(n: Option<&str>) -> Value {
    n.map_or(Value::Null, Value::from)
}

/// A Stat record.
pub fn stat(s: &Stat) -> Value {
    json!({
        "czxid": hex64(s.czxid),
        "mzxid": hex64(s.mzxid),
        "ctime": s.ctime,
        "mtime": s.mtime,
        "version": s.version,
        "cversion": s.cversion,
        "aversion": s.aversion,
        "ephemeralOwner": hex64(s.ephemeral_owner),
        "dataLength": s.data_length,
        "numChildren": s.num_children,
        "pzxid": hex64(s.pzxid),
    })
}

/// An ACL list as `[{perms, scheme, id}]`.
pub fn acl(list: &[Acl]) -> Value {
    list.iter().map(|a| json!({ "perms": a.perms.0, "scheme": a.id.scheme, "id": a.id.id })).collect()
}

fn client_infos(list: &[ClientInfo]) -> Value {
    list.iter().map(|c| json!({ "authScheme": c.auth_scheme, "user": c.user })).collect()
}

fn strings(list: &[String]) -> Value {
    list.iter().map(|s| Value::from(s.as_str())).collect()
}

/// A ConnectRequest with every field.
pub fn connect_request(r: &ConnectRequest) -> Value {
    json!({
        "protocolVersion": r.protocol_version,
        "lastZxidSeen": hex64(r.last_zxid_seen),
        "timeOut": r.timeout_ms,
        "sessionId": hex64(r.session_id),
        "passwd": r.passwd.as_ref().map(hex::encode),
        "readOnly": r.read_only,
    })
}

/// A ConnectResponse with every field.
pub fn connect_response(r: &ConnectResponse) -> Value {
    json!({
        "protocolVersion": r.protocol_version,
        "timeOut": r.timeout_ms,
        "sessionId": hex64(r.session_id),
        "passwd": r.passwd.as_ref().map(hex::encode),
        "readOnly": r.read_only,
    })
}

/// A request body (without the header). Multi ops are `{"ops": [{op, opcode, req}]}`.
pub fn request_body(req: &Request) -> Value {
    match req {
        Request::Create(r) | Request::Create2(r) | Request::CreateContainer(r) => json!({
            "path": r.path,
            "data": data(r.data.as_deref()),
            "acl": acl(&r.acl),
            "flags": r.flags.0,
            "flags_name": name(r.flags.name()),
        }),
        Request::CreateTtl(r) => json!({
            "path": r.path,
            "data": data(r.data.as_deref()),
            "acl": acl(&r.acl),
            "flags": r.flags.0,
            "flags_name": name(r.flags.name()),
            "ttl": r.ttl,
        }),
        Request::Delete(r) => json!({ "path": r.path, "version": r.version }),
        Request::Exists(r) | Request::GetData(r) | Request::GetChildren(r) | Request::GetChildren2(r) => {
            json!({ "path": r.path, "watch": r.watch })
        }
        Request::GetAcl(r)
        | Request::Sync(r)
        | Request::DeleteContainer(r)
        | Request::GetEphemerals(r)
        | Request::GetAllChildrenNumber(r) => json!({ "path": r.path }),
        Request::SetData(r) => json!({ "path": r.path, "data": data(r.data.as_deref()), "version": r.version }),
        Request::SetAcl(r) => json!({ "path": r.path, "acl": acl(&r.acl), "version": r.version }),
        Request::Check(r) => json!({ "path": r.path, "version": r.version }),
        Request::Multi(ops) | Request::MultiRead(ops) => {
            let ops: Vec<Value> = ops
                .iter()
                .map(|op| json!({ "op": op_name(op.op_code()), "opcode": op.op_code().0, "req": request_body(op) }))
                .collect();
            json!({ "ops": ops })
        }
        Request::Reconfig(r) => json!({
            "joiningServers": r.joining_servers,
            "leavingServers": r.leaving_servers,
            "newMembers": r.new_members,
            "curConfigId": hex64(r.cur_config_id),
        }),
        Request::CheckWatches(r) | Request::RemoveWatches(r) => {
            json!({ "path": r.path, "type": r.watcher_type.0, "type_name": name(r.watcher_type.name()) })
        }
        Request::Auth(r) => json!({ "type": r.auth_type, "scheme": r.scheme, "auth": data(r.auth.as_deref()) }),
        Request::SetWatches(r) => json!({
            "relativeZxid": hex64(r.relative_zxid),
            "dataWatches": strings(&r.data_watches),
            "existWatches": strings(&r.exist_watches),
            "childWatches": strings(&r.child_watches),
        }),
        Request::SetWatches2(r) => json!({
            "relativeZxid": hex64(r.relative_zxid),
            "dataWatches": strings(&r.data_watches),
            "existWatches": strings(&r.exist_watches),
            "childWatches": strings(&r.child_watches),
            "persistentWatches": strings(&r.persistent_watches),
            "persistentRecursiveWatches": strings(&r.persistent_recursive_watches),
        }),
        Request::Sasl(r) => json!({ "token": r.token.as_ref().map(hex::encode) }),
        Request::AddWatch(r) => json!({ "path": r.path, "mode": r.mode.0, "mode_name": name(r.mode.name()) }),
        Request::Ping | Request::WhoAmI | Request::CloseSession => json!({}),
        // `Request` is non-exhaustive: a variant added to the codec later still
        // renders, as its Debug form plus its exact encoding.
        other => unrendered(other, other.to_bytes()),
    }
}

/// A reply body. Multi results are `{"results": [...]}`.
pub fn response_body(rsp: &Response) -> Value {
    match rsp {
        Response::Empty => json!({}),
        Response::Path(p) => json!({ "path": p }),
        Response::Create2 { path, stat: s } => json!({ "path": path, "stat": stat(s) }),
        Response::Stat(s) => json!({ "stat": stat(s) }),
        Response::Data { data: d, stat: s } => json!({ "data": data(d.as_deref()), "stat": stat(s) }),
        Response::Acl { acl: a, stat: s } => json!({ "acl": acl(a), "stat": stat(s) }),
        Response::Children(c) => json!({ "children": strings(c) }),
        Response::Children2 { children, stat: s } => json!({ "children": strings(children), "stat": stat(s) }),
        Response::Multi(results) => json!({ "results": results.iter().map(multi_result).collect::<Vec<_>>() }),
        Response::Sasl(token) => json!({ "token": token.as_ref().map(hex::encode) }),
        Response::Count(n) => json!({ "totalNumber": n }),
        Response::AddWatch(e) => json!({ "err": e.0, "err_name": name(e.name()) }),
        Response::WhoAmI(infos) => json!({ "clientInfo": client_infos(infos) }),
        // See `request_body`.
        other => unrendered(other, other.to_bytes()),
    }
}

fn unrendered(value: &impl std::fmt::Debug, encoded: bytes::Bytes) -> Value {
    json!({ "unrendered": format!("{value:?}"), "hex": hex::encode(encoded) })
}

/// One multi result: `{op, opcode, rsp}` or `{err, err_name}`.
pub fn multi_result(r: &MultiResult) -> Value {
    match r {
        MultiResult::Ok { op, response } => {
            json!({ "op": op_name(*op), "opcode": op.0, "rsp": response_body(response) })
        }
        MultiResult::Error(e) => json!({ "err": e.0, "err_name": name(e.name()) }),
    }
}

fn err_fields(map: &mut Map<String, Value>, err: ErrorCode) {
    map.insert("err".into(), err.0.into());
    map.insert("err_name".into(), name(err.name()));
}

/// A request frame: `{xid, op, opcode, req}`.
pub fn request_frame(f: &RequestFrame) -> Map<String, Value> {
    let mut map = Map::new();
    map.insert("xid".into(), f.header.xid.0.into());
    map.insert("op".into(), op_name(f.header.op).into());
    map.insert("opcode".into(), f.header.op.0.into());
    map.insert("req".into(), request_body(&f.request));
    map
}

/// A server frame. Replies: `{xid, zxid, err, err_name, reply_to, rsp}` with
/// `rsp` only when `err` is 0. Notifications: `{xid, zxid, err, err_name,
/// event: {type, type_name, state, state_name, path}}`.
pub fn server_message(m: &ServerMessage, reply_to: Option<OpCode>) -> Map<String, Value> {
    let header = m.header();
    let mut map = Map::new();
    map.insert("xid".into(), header.xid.0.into());
    map.insert("zxid".into(), hex64(header.zxid).into());
    err_fields(&mut map, header.err);
    match m {
        ServerMessage::Notification { event, .. } => {
            map.insert("kind".into(), "notification".into());
            map.insert(
                "event".into(),
                json!({
                    "type": event.event_type.0,
                    "type_name": name(event.event_type.name()),
                    "state": event.state.0,
                    "state_name": name(event.state.name()),
                    "path": event.path,
                }),
            );
        }
        ServerMessage::Reply { response, .. } => {
            map.insert("kind".into(), "reply".into());
            map.insert("reply_to".into(), reply_to.map_or(Value::Null, |op| op_name(op).into()));
            if let Some(rsp) = response {
                map.insert("rsp".into(), response_body(rsp));
            }
        }
    }
    map
}

/// A decoded frame with `dir` and `kind` (`connect`, `request`, `reply`,
/// `notification`) and its fields.
pub fn decoded(frame: &DecodedFrame) -> Map<String, Value> {
    let mut map = match frame {
        DecodedFrame::ConnectRequest(r) => connect_map(connect_request(r)),
        DecodedFrame::ConnectResponse(r) => connect_map(connect_response(r)),
        DecodedFrame::Request(f) => {
            let mut map = request_frame(f);
            map.insert("kind".into(), "request".into());
            map
        }
        DecodedFrame::Server { message, reply_to } => server_message(message, *reply_to),
    };
    map.insert("dir".into(), frame.direction().as_str().into());
    map
}

fn connect_map(fields: Value) -> Map<String, Value> {
    let mut map = match fields {
        Value::Object(map) => map,
        other => Map::from_iter([("connect".to_owned(), other)]),
    };
    map.insert("kind".into(), "connect".into());
    map
}

/// [`decoded`] plus the frame's `t_us`, and `"dropped": true` when the proxy
/// did not forward it.
pub fn frame_record(frame: &Frame, decoded_frame: &DecodedFrame) -> Map<String, Value> {
    let mut map = decoded(decoded_frame);
    map.insert("t_us".into(), frame.t_us.into());
    if frame.dropped {
        map.insert("dropped".into(), true.into());
    }
    map
}

#[cfg(test)]
mod tests {
    use super::*;
    use bytes::Bytes;
    use zoolock_wire::{
        AddWatchMode, AddWatchRequest, AuthPacket, CheckVersionRequest, CreateMode, CreateRequest, CreateTtlRequest,
        DeleteRequest, PathRequest, PathWatchRequest, ReconfigRequest, ReplyHeader, SaslRequest, SetAclRequest,
        SetDataRequest, SetWatches, SetWatches2, WatcherType, WatchesRequest, Xid,
    };

    fn create() -> CreateRequest {
        CreateRequest {
            path: "/a".into(),
            data: Some(Bytes::from_static(b"127.0.0.1")),
            acl: Acl::open_unsafe(),
            flags: CreateMode::EPHEMERAL_SEQUENTIAL,
        }
    }

    fn all_requests() -> Vec<Request> {
        let pw = PathWatchRequest { path: "/p".into(), watch: true };
        let p = PathRequest { path: "/p".into() };
        let w = WatchesRequest { path: "/w".into(), watcher_type: WatcherType::ANY };
        vec![
            Request::Create(create()),
            Request::Delete(DeleteRequest { path: "/d".into(), version: -1 }),
            Request::Exists(pw.clone()),
            Request::GetData(pw.clone()),
            Request::SetData(SetDataRequest { path: "/s".into(), data: Some(Bytes::from_static(&[0xff])), version: 2 }),
            Request::GetAcl(p.clone()),
            Request::SetAcl(SetAclRequest { path: "/s".into(), acl: Acl::creator_all(), version: 1 }),
            Request::GetChildren(pw.clone()),
            Request::Sync(p.clone()),
            Request::Ping,
            Request::GetChildren2(pw),
            Request::Check(CheckVersionRequest { path: "/c".into(), version: 3 }),
            Request::Multi(vec![
                Request::Create(create()),
                Request::Check(CheckVersionRequest { path: "/c".into(), version: 3 }),
            ]),
            Request::Create2(create()),
            Request::Reconfig(ReconfigRequest {
                joining_servers: Some("server.1=h:1:2".into()),
                leaving_servers: None,
                new_members: None,
                cur_config_id: -1,
            }),
            Request::CheckWatches(w.clone()),
            Request::RemoveWatches(w),
            Request::CreateContainer(CreateRequest { flags: CreateMode::CONTAINER, data: None, ..create() }),
            Request::DeleteContainer(p.clone()),
            Request::CreateTtl(CreateTtlRequest {
                path: "/t".into(),
                data: None,
                acl: Acl::read_unsafe(),
                flags: CreateMode::PERSISTENT_WITH_TTL,
                ttl: 1000,
            }),
            Request::MultiRead(vec![Request::GetData(PathWatchRequest { path: "/r".into(), watch: false })]),
            Request::Auth(AuthPacket { auth_type: 0, scheme: "digest".into(), auth: Some(Bytes::from_static(b"u:p")) }),
            Request::SetWatches(SetWatches {
                relative_zxid: 0x85,
                data_watches: vec!["/a".into()],
                exist_watches: vec![],
                child_watches: vec!["/b".into()],
            }),
            Request::Sasl(SaslRequest { token: Some(Bytes::from_static(&[1, 2])) }),
            Request::GetEphemerals(p.clone()),
            Request::GetAllChildrenNumber(p),
            Request::SetWatches2(SetWatches2 { relative_zxid: 1, ..SetWatches2::default() }),
            Request::AddWatch(AddWatchRequest { path: "/aw".into(), mode: AddWatchMode::PERSISTENT_RECURSIVE }),
            Request::WhoAmI,
            Request::CloseSession,
        ]
    }

    fn all_responses() -> Vec<Response> {
        let s = Stat { czxid: 1, pzxid: 2, ephemeral_owner: 0x100000ee07e0003, ..Stat::default() };
        vec![
            Response::Empty,
            Response::Path("/p".into()),
            Response::Create2 { path: "/p".into(), stat: s },
            Response::Stat(s),
            Response::Data { data: None, stat: s },
            Response::Acl { acl: Acl::open_unsafe(), stat: s },
            Response::Children(vec!["a".into()]),
            Response::Children2 { children: vec!["a".into(), "b".into()], stat: s },
            Response::Multi(vec![
                MultiResult::Ok { op: OpCode::CREATE2, response: Response::Create2 { path: "/p".into(), stat: s } },
                MultiResult::Error(ErrorCode::NODE_EXISTS),
            ]),
            Response::Sasl(Some(Bytes::from_static(&[9]))),
            Response::Count(7),
            Response::AddWatch(ErrorCode::OK),
            Response::WhoAmI(vec![ClientInfo { auth_scheme: "ip".into(), user: "127.0.0.1".into() }]),
        ]
    }

    fn assert_rendered(v: &Value) {
        let text = v.to_string();
        assert!(!text.contains("unrendered"), "fell back to Debug: {text}");
    }

    #[test]
    fn every_request_variant_renders() {
        let all = all_requests();
        assert_eq!(all.len(), 30, "update this test when the codec grows a variant");
        for r in &all {
            assert_rendered(&request_body(r));
        }
    }

    #[test]
    fn every_response_variant_renders() {
        for r in &all_responses() {
            assert_rendered(&response_body(r));
        }
    }

    #[test]
    fn create_request_shape() {
        let f = RequestFrame::new(Xid(3), Request::Create2(create()));
        let v = Value::Object(decoded(&DecodedFrame::Request(f)));
        assert_eq!(
            v,
            json!({
                "dir": "c2s", "kind": "request", "xid": 3, "op": "create2", "opcode": 15,
                "req": {
                    "path": "/a", "data": {"utf8": "127.0.0.1"},
                    "acl": [{"perms": 31, "scheme": "world", "id": "anyone"}],
                    "flags": 3, "flags_name": "EPHEMERAL_SEQUENTIAL",
                }
            })
        );
        assert_eq!(data(Some(&[0xff, 0x00])), json!({"hex": "ff00"}));
    }

    #[test]
    fn reply_and_notification_shape() {
        let header = ReplyHeader { xid: Xid(4), zxid: 0x12, err: ErrorCode::NO_NODE };
        let m = ServerMessage::Reply { header, response: None };
        let v = Value::Object(server_message(&m, Some(OpCode::EXISTS)));
        assert_eq!(
            v,
            json!({"xid": 4, "zxid": "0x12", "err": -101, "err_name": "NoNode", "kind": "reply", "reply_to": "exists"})
        );
        let m = ServerMessage::Notification {
            header: ReplyHeader { xid: Xid::NOTIFICATION, zxid: -1, err: ErrorCode::OK },
            event: zoolock_wire::WatcherEvent {
                event_type: zoolock_wire::EventType::NODE_DELETED,
                state: zoolock_wire::KeeperState::SYNC_CONNECTED,
                path: "/x".into(),
            },
        };
        let v = Value::Object(server_message(&m, None));
        assert_eq!(v["zxid"], "-0x1");
        assert_eq!(
            v["event"],
            json!({"type": 2, "type_name": "NodeDeleted", "state": 3, "state_name": "SyncConnected", "path": "/x"})
        );
    }

    #[test]
    fn connect_shapes() {
        let r = ConnectRequest {
            protocol_version: 0,
            last_zxid_seen: 0x85,
            timeout_ms: 9000,
            session_id: 0x100000ee07e0016,
            passwd: Some(Bytes::from_static(&[0xab; 16])),
            read_only: Some(false),
        };
        let v = Value::Object(decoded(&DecodedFrame::ConnectRequest(r)));
        assert_eq!(v["sessionId"], "0x100000ee07e0016");
        assert_eq!(v["lastZxidSeen"], "0x85");
        assert_eq!(v["passwd"], "ab".repeat(16));
        assert_eq!(v["kind"], "connect");
        assert_eq!(v["dir"], "c2s");
        let rsp = ConnectResponse { protocol_version: 0, timeout_ms: 0, session_id: 0, passwd: None, read_only: None };
        let v = Value::Object(decoded(&DecodedFrame::ConnectResponse(rsp)));
        assert_eq!(v["sessionId"], "0x0");
        assert_eq!(v["passwd"], Value::Null);
        assert_eq!(v["readOnly"], Value::Null);
        assert_eq!(v["dir"], "s2c");
        assert_eq!(hex64(i64::MIN), "-0x8000000000000000");
    }
}
