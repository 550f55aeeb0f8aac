//! Round-trip properties for every zoolock-wire record: value → encode (the
//! byte count matches `encoded_len`) → decode → the same value, both bare and
//! through `encode_frame` + `FrameDecoder`. A few golden byte strings from the
//! protocol reference pin the layouts the properties cannot see.

mod common;

use core::fmt::Debug;

use common::{MULTI_OPS, MULTI_READ_OPS, NOT_REQUEST_OPS, REQUEST_OPS};
use proptest::prelude::*;
use proptest::test_runner::{Config, TestRunner};
use zoolock_wire::{
    Acl, Bytes, BytesMut, ConnectRequest, ConnectResponse, CreateMode, CreateRequest, DEFAULT_MAX_FRAME_LEN,
    DecodeError, DecodeErrorKind, Encode, ErrorCode, FrameDecoder, Id, LEN_PREFIX, MultiResult, OpCode, Perms,
    ReplyHeader, Request, RequestFrame, RequestHeader, Response, ServerMessage, Stat, Xid,
};

/// Cases per proptest block. The per-opcode loops run this many per opcode.
const CASES: u32 = 192;

fn config() -> Config {
    Config { cases: CASES, failure_persistence: None, ..Config::default() }
}

/// Encodes `value` after a junk prefix (encode must append, and write exactly
/// `encoded_len` bytes), decodes it back, then does the same through a frame.
fn check_roundtrip<T, F>(value: &T, decode: F) -> Result<(), TestCaseError>
where
    T: Encode + PartialEq + Debug,
    F: Fn(&[u8]) -> Result<T, DecodeError>,
{
    const JUNK: &[u8] = b"\xde\xad\xbe\xef";
    let mut buf = BytesMut::from(JUNK);
    value.encode(&mut buf);
    prop_assert_eq!(&buf[..JUNK.len()], JUNK, "encode must append, not overwrite");
    let body = buf.split_off(JUNK.len()).freeze();
    prop_assert_eq!(body.len(), value.encoded_len(), "encoded_len disagrees with the bytes written");
    prop_assert_eq!(&value.to_bytes(), &body, "to_bytes disagrees with encode");

    let decoded = decode(&body).map_err(|e| TestCaseError::fail(format!("decode failed: {e} ({e:?})")))?;
    prop_assert_eq!(&decoded, value);

    let mut wire = BytesMut::new();
    zoolock_wire::encode_frame(value, DEFAULT_MAX_FRAME_LEN, &mut wire)
        .map_err(|e| TestCaseError::fail(format!("encode_frame failed: {e}")))?;
    prop_assert_eq!(wire.len(), LEN_PREFIX + body.len());
    prop_assert_eq!(&wire[..LEN_PREFIX], &u32::try_from(body.len()).unwrap().to_be_bytes()[..]);
    let payload = FrameDecoder::default()
        .decode(&mut wire)
        .map_err(|e| TestCaseError::fail(format!("frame decode failed: {e}")))?
        .ok_or_else(|| TestCaseError::fail("a complete frame was not returned"))?;
    prop_assert!(wire.is_empty(), "the frame decoder left {} bytes", wire.len());
    prop_assert_eq!(&payload, &body);
    let decoded = decode(&payload).map_err(|e| TestCaseError::fail(format!("decode after framing failed: {e}")))?;
    prop_assert_eq!(&decoded, value);
    Ok(())
}

/// Runs `check` for `CASES` values of `strategy`, naming `what` on failure.
fn run<S: Strategy>(what: impl core::fmt::Display, strategy: S, check: impl Fn(S::Value) -> Result<(), TestCaseError>)
where
    S::Value: Debug,
{
    let mut runner = TestRunner::new(config());
    if let Err(e) = runner.run(&strategy, check) {
        panic!("{what}: {e}");
    }
}

// ---- handshake ---------------------------------------------------------------

proptest! {
    #![proptest_config(config())]

    #[test]
    fn connect_request_roundtrips(req in common::connect_request()) {
        check_roundtrip(&req, ConnectRequest::decode)?;
    }

    #[test]
    fn connect_response_roundtrips(rsp in common::connect_response()) {
        check_roundtrip(&rsp, ConnectResponse::decode)?;
    }
}

#[test]
fn connect_request_with_and_without_read_only() {
    let base = common::sample_connect_request();
    for read_only in [None, Some(false), Some(true)] {
        let req = ConnectRequest { read_only, ..base.clone() };
        let expected_len = 44 + usize::from(read_only.is_some());
        assert_eq!(req.encoded_len(), expected_len);
        let bytes = req.to_bytes();
        assert_eq!(bytes.len(), expected_len);
        assert_eq!(ConnectRequest::decode(&bytes).unwrap(), req);
    }
}

#[test]
fn connect_response_36_and_37_byte_forms() {
    let base = common::sample_connect_response();
    let short = base.to_bytes();
    assert_eq!(short.len(), 36);
    assert_eq!(ConnectResponse::decode(&short).unwrap(), base);

    for ro in [false, true] {
        let long = ConnectResponse { read_only: Some(ro), ..base.clone() };
        let bytes = long.to_bytes();
        assert_eq!(bytes.len(), 37);
        assert_eq!(bytes[36], u8::from(ro));
        assert_eq!(ConnectResponse::decode(&bytes).unwrap(), long);
    }

    // Java readers take any non-zero byte as true.
    let mut odd = BytesMut::from(&short[..]);
    odd.extend_from_slice(&[0x7f]);
    assert_eq!(ConnectResponse::decode(&odd).unwrap().read_only, Some(true));

    let expired = ConnectResponse { timeout_ms: 0, session_id: 0, passwd: Some(Bytes::from_static(&[0; 16])), ..base };
    assert!(ConnectResponse::decode(&expired.to_bytes()).unwrap().is_expired());
}

// ---- requests ----------------------------------------------------------------

/// Every opcode in `REQUEST_OPS`: the bare body round-trips under its own
/// opcode, and the whole frame (header included) round-trips too.
#[test]
fn every_request_variant_roundtrips() {
    for &op in REQUEST_OPS {
        run(op, common::request_for(op), |req| {
            prop_assert_eq!(req.op_code(), op);
            check_roundtrip(&req, |b| Request::decode(op, b))?;
            Ok(())
        });
        run(op, (any::<i32>(), common::request_for(op)), |(xid, req)| {
            let frame = RequestFrame::new(Xid(xid), req);
            prop_assert_eq!(frame.header, RequestHeader { xid: Xid(xid), op });
            prop_assert_eq!(frame.encoded_len(), RequestHeader::LEN + frame.request.encoded_len());
            check_roundtrip(&frame, RequestFrame::decode)?;
            Ok(())
        });
    }
}

/// The opcode list the tests iterate over is complete: every code the
/// decoder accepts as a request is in `REQUEST_OPS`, and every other code is
/// refused as unknown or as not-a-request.
#[test]
fn request_op_list_is_complete() {
    for raw in -64..=256 {
        let op = OpCode(raw);
        match Request::decode(op, &[]) {
            Err(DecodeError { kind: DecodeErrorKind::UnknownOpCode(n), offset: 0 }) => {
                assert_eq!(n, raw);
                assert!(!REQUEST_OPS.contains(&op) && op.name().is_none(), "{op} refused as unknown");
            }
            Err(DecodeError { kind: DecodeErrorKind::NotARequest(o), offset: 0 }) => {
                assert_eq!(o, op);
                assert!(NOT_REQUEST_OPS.contains(&op), "{op} refused as not a request");
            }
            _ => assert!(REQUEST_OPS.contains(&op), "{op} decodes as a request but is not tested"),
        }
    }
    // Every named opcode is either a request or one of the known non-requests.
    for raw in -64..=256 {
        let op = OpCode(raw);
        if op.name().is_some() {
            assert!(REQUEST_OPS.contains(&op) || NOT_REQUEST_OPS.contains(&op), "{op} is not covered");
        }
    }
}

/// Multi with each allowed op type on its own, and mixed.
#[test]
fn multi_with_each_allowed_op_roundtrips() {
    for (kind, allowed) in [(OpCode::MULTI, MULTI_OPS), (OpCode::MULTI_READ, MULTI_READ_OPS)] {
        for &inner in allowed {
            let ops = proptest::collection::vec(common::request_for(inner), 1..4);
            run(format_args!("{kind} of {inner}"), ops, |ops| {
                let req = if kind == OpCode::MULTI { Request::Multi(ops) } else { Request::MultiRead(ops) };
                check_roundtrip(&RequestFrame::new(Xid(7), req), RequestFrame::decode)
            });
        }
        // The empty op list is just the terminator.
        let empty = if kind == OpCode::MULTI { Request::Multi(vec![]) } else { Request::MultiRead(vec![]) };
        assert_eq!(&empty.to_bytes()[..], &[0xff, 0xff, 0xff, 0xff, 0x01, 0xff, 0xff, 0xff, 0xff]);
        assert_eq!(Request::decode(kind, &empty.to_bytes()).unwrap(), empty);
    }
}

proptest! {
    #![proptest_config(config())]

    #[test]
    fn any_request_frame_roundtrips(frame in common::request_frame()) {
        check_roundtrip(&frame, RequestFrame::decode)?;
    }
}

// ---- replies -----------------------------------------------------------------

/// Every reply body under every opcode that uses it, bare and as a whole
/// server message (OK with a body, or an error code without one).
#[test]
fn every_response_roundtrips_under_each_opcode() {
    for &op in REQUEST_OPS {
        run(op, common::response_for(op), |rsp| check_roundtrip(&rsp, |b| Response::decode(op, b)));
        run(op, common::reply_for(op), |msg| {
            let ServerMessage::Reply { header, response } = &msg else {
                return Err(TestCaseError::fail("reply_for produced a notification"));
            };
            prop_assert_eq!(header.err.is_ok(), response.is_some());
            let lookup_xid = header.xid;
            check_roundtrip(&msg, |b| {
                ServerMessage::decode(b, |xid| {
                    assert_eq!(xid, lookup_xid, "lookup asked for another xid");
                    assert!(xid != Xid::PING && xid != Xid::NOTIFICATION, "lookup asked for a special xid");
                    Some(op)
                })
            })
        });
    }
}

/// Each `Response` variant decoded with each opcode whose reply has that
/// layout ([`common::reply_layouts`], spelled out so a change in the opcode
/// → layout map is caught here).
#[test]
fn response_layouts_per_opcode() {
    let cases = common::reply_layouts();
    let mut covered: Vec<OpCode> = Vec::new();
    for (rsp, ops) in &cases {
        for &op in *ops {
            assert_eq!(Response::decode(op, &rsp.to_bytes()).as_ref(), Ok(rsp), "{op}");
            covered.push(op);
        }
    }
    for op in REQUEST_OPS {
        assert!(covered.contains(op), "{op} has no reply layout case");
    }
}

proptest! {
    #![proptest_config(config())]

    #[test]
    fn notification_roundtrips(msg in common::notification()) {
        check_roundtrip(&msg, |b| ServerMessage::decode(b, |xid| panic!("notification looked up xid {xid}")))?;
    }

    #[test]
    fn any_server_message_roundtrips((op, msg) in common::server_message()) {
        let lookup = |_: Xid| (op != OpCode::NOTIFICATION).then_some(op);
        check_roundtrip(&msg, |b| ServerMessage::decode(b, lookup))?;
    }

    #[test]
    fn multi_results_roundtrip(results in common::list(prop_oneof![
        common::response_for(OpCode::CREATE).prop_map(|r| MultiResult::Ok { op: OpCode::CREATE, response: r }),
        common::response_for(OpCode::CREATE2).prop_map(|r| MultiResult::Ok { op: OpCode::CREATE2, response: r }),
        common::response_for(OpCode::GET_DATA).prop_map(|r| MultiResult::Ok { op: OpCode::GET_DATA, response: r }),
        common::error_code().prop_map(MultiResult::Error),
    ].boxed())) {
        let first = MultiResult::first_failure(&results);
        let rsp = Response::Multi(results);
        for op in [OpCode::MULTI, OpCode::MULTI_READ] {
            check_roundtrip(&rsp, |b| Response::decode(op, b))?;
        }
        let Response::Multi(results) = rsp else { unreachable!() };
        if let Some((idx, code)) = first {
            prop_assert_eq!(&results[idx], &MultiResult::Error(code));
            prop_assert!(code != ErrorCode::OK && code != ErrorCode::RUNTIME_INCONSISTENCY);
        }
    }

    /// Stat has no decoder of its own: it round-trips inside an exists reply,
    /// and its 68 bytes are the eleven fields in order.
    #[test]
    fn stat_roundtrips(stat in common::stat()) {
        prop_assert_eq!(stat.encoded_len(), Stat::LEN);
        let mut expected = Vec::with_capacity(Stat::LEN);
        for v in [stat.czxid, stat.mzxid, stat.ctime, stat.mtime] {
            expected.extend_from_slice(&v.to_be_bytes());
        }
        for v in [stat.version, stat.cversion, stat.aversion] {
            expected.extend_from_slice(&v.to_be_bytes());
        }
        expected.extend_from_slice(&stat.ephemeral_owner.to_be_bytes());
        expected.extend_from_slice(&stat.data_length.to_be_bytes());
        expected.extend_from_slice(&stat.num_children.to_be_bytes());
        expected.extend_from_slice(&stat.pzxid.to_be_bytes());
        prop_assert_eq!(&stat.to_bytes()[..], &expected[..]);
        check_roundtrip(&Response::Stat(stat), |b| Response::decode(OpCode::EXISTS, b))?;
    }

    /// Acl and Id have no decoders of their own: they round-trip inside a
    /// setACL request and a getACL reply, and their layout is checked by hand.
    #[test]
    fn acl_and_id_roundtrip(acl in common::acls(), stat in common::stat(), version in any::<i32>()) {
        for a in &acl {
            prop_assert_eq!(a.id.encoded_len(), 8 + a.id.scheme.len() + a.id.id.len());
            prop_assert_eq!(a.encoded_len(), 4 + a.id.encoded_len());
            let bytes = a.to_bytes();
            prop_assert_eq!(&bytes[..4], &a.perms.0.to_be_bytes()[..]);
            prop_assert_eq!(&bytes[4..], &a.id.to_bytes()[..]);
            let id = a.id.to_bytes();
            let scheme_len = a.id.scheme.len();
            prop_assert_eq!(&id[..4], &u32::try_from(scheme_len).unwrap().to_be_bytes()[..]);
            prop_assert_eq!(&id[4..4 + scheme_len], a.id.scheme.as_bytes());
            prop_assert_eq!(&id[8 + scheme_len..], a.id.id.as_bytes());
        }
        let req = Request::SetAcl(zoolock_wire::SetAclRequest { path: "/p".into(), acl: acl.clone(), version });
        check_roundtrip(&req, |b| Request::decode(OpCode::SET_ACL, b))?;
        check_roundtrip(&Response::Acl { acl, stat }, |b| Response::decode(OpCode::GET_ACL, b))?;
    }
}

// ---- golden bytes from the protocol reference ---------------------------------

fn hex(s: &str) -> Vec<u8> {
    let s: String = s.chars().filter(char::is_ascii_hexdigit).collect();
    (0..s.len()).step_by(2).map(|i| u8::from_str_radix(&s[i..i + 2], 16).unwrap()).collect()
}

#[test]
fn golden_connect_request() {
    // New session, 30 s, readOnly = false: 45 bytes.
    let req = ConnectRequest {
        protocol_version: 0,
        last_zxid_seen: 0,
        timeout_ms: 30_000,
        session_id: 0,
        passwd: Some(Bytes::from_static(&[0; 16])),
        read_only: Some(false),
    };
    let mut wire = BytesMut::new();
    zoolock_wire::encode_frame(&req, DEFAULT_MAX_FRAME_LEN, &mut wire).unwrap();
    let expected = hex("0000002d 00000000 0000000000000000 00007530 0000000000000000 00000010 \
                        00000000000000000000000000000000 00");
    assert_eq!(&wire[..], &expected[..]);
}

#[test]
fn golden_open_acl_and_lock_create() {
    let acl = Request::SetAcl(zoolock_wire::SetAclRequest { path: String::new(), acl: Acl::open_unsafe(), version: 0 });
    let open_acl = hex("00000001 0000001f 00000005 776f726c64 00000006 616e796f6e65");
    assert_eq!(open_acl.len(), 27);
    assert_eq!(&acl.to_bytes()[4..4 + 27], &open_acl[..]);
    assert_eq!(Acl::open_unsafe()[0].id, Id { scheme: "world".into(), id: "anyone".into() });
    assert_eq!(Acl::open_unsafe()[0].perms, Perms::ALL);

    // create (op 1, xid 1) of /locks/lock- with empty data, OPEN_ACL_UNSAFE, flags 3.
    let frame = RequestFrame::new(
        Xid(1),
        Request::Create(CreateRequest {
            path: "/locks/lock-".into(),
            data: Some(Bytes::new()),
            acl: Acl::open_unsafe(),
            flags: CreateMode::EPHEMERAL_SEQUENTIAL,
        }),
    );
    let mut wire = BytesMut::new();
    zoolock_wire::encode_frame(&frame, DEFAULT_MAX_FRAME_LEN, &mut wire).unwrap();
    let mut expected = hex("0000003b 00000001 00000001 0000000c");
    expected.extend_from_slice(b"/locks/lock-");
    expected.extend_from_slice(&hex("00000000"));
    expected.extend_from_slice(&open_acl);
    expected.extend_from_slice(&hex("00000003"));
    assert_eq!(&wire[..], &expected[..]);
}

#[test]
fn golden_trace_frames_decode() {
    // Frames from the synthetic lock trace in the protocol reference (§12).
    let create = hex("0000000100000001000000172f6c6f636b732f6a6f622f782d386332652d6c6f636b2d0000000000000001\
                      0000001f00000005776f726c6400000006616e796f6e6500000003");
    let frame = RequestFrame::decode(&create).unwrap();
    assert_eq!(frame.header, RequestHeader { xid: Xid(1), op: OpCode::CREATE });
    assert_eq!(frame.request.path(), Some("/locks/job/x-8c2e-lock-"));
    assert_eq!(&frame.to_bytes()[..], &create[..]);

    let children = hex("000000020000000000000021000000000000000200000016782d386332652d6c6f636b2d3030303030303030\
                        303100000016782d373761612d6c6f636b2d30303030303030303030");
    let msg = ServerMessage::decode(&children, |_| Some(OpCode::GET_CHILDREN)).unwrap();
    assert_eq!(
        msg,
        ServerMessage::Reply {
            header: ReplyHeader { xid: Xid(2), zxid: 0x21, err: ErrorCode::OK },
            response: Some(Response::Children(vec!["x-8c2e-lock-0000000001".into(), "x-77aa-lock-0000000000".into()])),
        }
    );
    assert_eq!(&msg.to_bytes()[..], &children[..]);

    let event = hex("ffffffff0000000000000022000000000000000200000003000000212f6c6f636b732f6a6f622f782d373761\
                     612d6c6f636b2d30303030303030303030");
    let msg = ServerMessage::decode(&event, |_| None).unwrap();
    let ServerMessage::Notification { header, event: ev } = &msg else { panic!("not a notification: {msg:?}") };
    assert_eq!(header.zxid, 0x22);
    assert_eq!(ev.event_type, zoolock_wire::EventType::NODE_DELETED);
    assert_eq!(ev.state, zoolock_wire::KeeperState::SYNC_CONNECTED);
    assert_eq!(ev.path, "/locks/job/x-77aa-lock-0000000000");
    assert_eq!(&msg.to_bytes()[..], &event[..]);

    let ping = hex("fffffffe000000000000002100000000");
    let msg = ServerMessage::decode(&ping, |_| None).unwrap();
    assert_eq!(
        msg,
        ServerMessage::Reply {
            header: ReplyHeader { xid: Xid::PING, zxid: 0x21, err: ErrorCode::OK },
            response: Some(Response::Empty)
        }
    );
}
