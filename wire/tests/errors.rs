//! Malformed input: every decode error kind, with the offset it must name.
//! Offsets count from the start of the frame payload.

mod common;

use proptest::prelude::*;
use zoolock_wire::{
    ConnectRequest, ConnectResponse, DecodeError, DecodeErrorKind, Encode, ErrorCode, OpCode, ReplyHeader, Request,
    RequestFrame, Response, ServerMessage, Xid,
};

/// A hand-built payload.
#[derive(Default)]
struct W(Vec<u8>);

impl W {
    fn new() -> Self {
        W::default()
    }
    fn int(mut self, v: i32) -> Self {
        self.0.extend_from_slice(&v.to_be_bytes());
        self
    }
    fn long(mut self, v: i64) -> Self {
        self.0.extend_from_slice(&v.to_be_bytes());
        self
    }
    fn byte(mut self, v: u8) -> Self {
        self.0.push(v);
        self
    }
    fn raw(mut self, v: &[u8]) -> Self {
        self.0.extend_from_slice(v);
        self
    }
    /// A length-prefixed string or buffer.
    fn string(self, v: &[u8]) -> Self {
        self.int(i32::try_from(v.len()).unwrap()).raw(v)
    }
    /// A request header.
    fn req(xid: i32, op: OpCode) -> Self {
        W::new().int(xid).int(op.0)
    }
    /// A reply header.
    fn reply(xid: i32, zxid: i64, err: ErrorCode) -> Self {
        W::new().int(xid).long(zxid).int(err.0)
    }
    /// A multi header.
    fn multi_header(self, op: OpCode, done: bool, err: i32) -> Self {
        self.int(op.0).byte(u8::from(done)).int(err)
    }
    fn terminator(self) -> Self {
        self.multi_header(OpCode::ERROR, true, -1)
    }
    fn len(&self) -> usize {
        self.0.len()
    }
}

fn err(kind: DecodeErrorKind, offset: usize) -> DecodeError {
    DecodeError { kind, offset }
}

fn lookup(op: OpCode) -> impl Fn(Xid) -> Option<OpCode> {
    move |_| Some(op)
}

// ---- truncation ---------------------------------------------------------------

#[test]
fn truncated_headers() {
    // ReplyHeader: xid fits, zxid (offset 4) does not.
    let short = W::new().int(5).raw(&[0; 6]);
    assert_eq!(ServerMessage::decode(&short.0, lookup(OpCode::DELETE)), Err(err(DecodeErrorKind::Truncated, 4)));
    // Empty frame.
    assert_eq!(ServerMessage::decode(&[], lookup(OpCode::DELETE)), Err(err(DecodeErrorKind::Truncated, 0)));
    // RequestHeader: the opcode (offset 4) is cut.
    assert_eq!(RequestFrame::decode(&[0, 0, 0, 1, 0, 0]), Err(err(DecodeErrorKind::Truncated, 4)));
}

#[test]
fn truncated_connect_records() {
    let full = ConnectRequest { read_only: Some(true), ..common::sample_connect_request() }.to_bytes();
    assert_eq!(full.len(), 45);
    assert_eq!(ConnectRequest::decode(&full[..3]), Err(err(DecodeErrorKind::Truncated, 0)));
    assert_eq!(ConnectRequest::decode(&full[..20]), Err(err(DecodeErrorKind::Truncated, 16)));
    assert_eq!(ConnectRequest::decode(&full[..26]), Err(err(DecodeErrorKind::Truncated, 24)));
    assert_eq!(
        ConnectRequest::decode(&full[..30]),
        Err(err(DecodeErrorKind::LengthExceedsFrame { len: 16, remaining: 2 }, 24))
    );
    // Without the last byte it is the valid pre-3.4 form.
    assert_eq!(ConnectRequest::decode(&full[..44]).unwrap().read_only, None);

    let rsp = ConnectResponse { read_only: Some(false), ..common::sample_connect_response() }.to_bytes();
    assert_eq!(ConnectResponse::decode(&rsp[..10]), Err(err(DecodeErrorKind::Truncated, 8)));
    assert_eq!(
        ConnectResponse::decode(&rsp[..35]),
        Err(err(DecodeErrorKind::LengthExceedsFrame { len: 16, remaining: 15 }, 16))
    );
}

#[test]
fn truncated_bodies() {
    // Stat cut inside pzxid (offset 60).
    assert_eq!(Response::decode(OpCode::EXISTS, &[0; 67]), Err(err(DecodeErrorKind::Truncated, 60)));
    // delete: the version (offset 8 + 4 + 2) is cut.
    let delete = W::req(1, OpCode::DELETE).string(b"/a").raw(&[0xff, 0xff]);
    assert_eq!(RequestFrame::decode(&delete.0), Err(err(DecodeErrorKind::Truncated, 14)));
    // exists: the watch flag is missing entirely.
    let exists = W::req(1, OpCode::EXISTS).string(b"/a");
    assert_eq!(RequestFrame::decode(&exists.0), Err(err(DecodeErrorKind::Truncated, exists.len())));
    // A multi whose terminator never comes.
    let multi = W::req(1, OpCode::MULTI).multi_header(OpCode::CHECK, false, -1).string(b"/c").int(3).raw(&[0xff, 0xff]);
    assert_eq!(RequestFrame::decode(&multi.0), Err(err(DecodeErrorKind::Truncated, 8 + 9 + 6 + 4)));
    // getChildren2 reply: children fine, Stat missing.
    let children2 = W::reply(3, 1, ErrorCode::OK).int(1).string(b"kid");
    assert_eq!(
        ServerMessage::decode(&children2.0, lookup(OpCode::GET_CHILDREN2)),
        Err(err(DecodeErrorKind::Truncated, children2.len()))
    );
}

proptest! {
    #![proptest_config(ProptestConfig { cases: 256, failure_persistence: None, ..ProptestConfig::default() })]

    /// Every strict prefix of a request frame fails as truncated (or as a
    /// length that no longer fits), at an offset inside the prefix.
    #[test]
    fn every_prefix_of_a_request_is_truncated(frame in common::request_frame(), cut in any::<prop::sample::Index>()) {
        let bytes = frame.to_bytes();
        let cut = cut.index(bytes.len());
        let e = RequestFrame::decode(&bytes[..cut]).unwrap_err();
        prop_assert!(
            matches!(e.kind, DecodeErrorKind::Truncated | DecodeErrorKind::LengthExceedsFrame { .. }),
            "{:?}", e
        );
        prop_assert!(e.offset <= cut, "offset {} beyond the {} bytes given", e.offset, cut);
        if let DecodeErrorKind::LengthExceedsFrame { remaining, .. } = e.kind {
            // The length prefix itself arrived; `remaining` counts what follows it.
            prop_assert_eq!(remaining, cut - e.offset - 4);
        }
    }

    /// The same for server messages that carry a body.
    #[test]
    fn every_prefix_of_a_reply_is_truncated((op, msg) in common::server_message(), cut in any::<prop::sample::Index>()) {
        let bytes = msg.to_bytes();
        let with_body = match &msg {
            ServerMessage::Notification { .. } => true,
            ServerMessage::Reply { header, .. } => header.err.is_ok(),
        };
        let cut = if with_body { cut.index(bytes.len()) } else { cut.index(ReplyHeader::LEN) };
        let e = ServerMessage::decode(&bytes[..cut], |_| Some(op)).unwrap_err();
        prop_assert!(
            matches!(e.kind, DecodeErrorKind::Truncated | DecodeErrorKind::LengthExceedsFrame { .. }),
            "{:?}", e
        );
        prop_assert!(e.offset <= cut);
    }
}

// ---- lengths ------------------------------------------------------------------

#[test]
fn negative_lengths() {
    // ustring -2
    let f = W::req(1, OpCode::DELETE).int(-2).int(0);
    assert_eq!(RequestFrame::decode(&f.0), Err(err(DecodeErrorKind::NegativeLength(-2), 8)));
    // ustring i32::MIN
    let f = W::req(1, OpCode::SYNC).int(i32::MIN);
    assert_eq!(RequestFrame::decode(&f.0), Err(err(DecodeErrorKind::NegativeLength(i32::MIN), 8)));
    // vector count -3 (the ACL after "/a")
    let f = W::req(1, OpCode::SET_ACL).string(b"/a").int(-3).int(0);
    assert_eq!(RequestFrame::decode(&f.0), Err(err(DecodeErrorKind::NegativeLength(-3), 14)));
    // buffer -7 (setData data after "/a")
    let f = W::req(1, OpCode::SET_DATA).string(b"/a").int(-7).int(0);
    assert_eq!(RequestFrame::decode(&f.0), Err(err(DecodeErrorKind::NegativeLength(-7), 14)));
    // reply: children count -5
    let f = W::reply(2, 0, ErrorCode::OK).int(-5);
    assert_eq!(
        ServerMessage::decode(&f.0, lookup(OpCode::GET_CHILDREN)),
        Err(err(DecodeErrorKind::NegativeLength(-5), 16))
    );
}

#[test]
fn null_markers() {
    // A null ustring is an error where a value is required...
    let f = W::req(1, OpCode::DELETE).int(-1).int(0);
    assert_eq!(RequestFrame::decode(&f.0), Err(err(DecodeErrorKind::NullString, 8)));
    let f = W::reply(-1, -1, ErrorCode::OK).int(2).int(3).int(-1);
    assert_eq!(ServerMessage::decode(&f.0, |_| None), Err(err(DecodeErrorKind::NullString, 24)));
    // ...a null buffer is None...
    let f = W::req(1, OpCode::SET_DATA).string(b"/a").int(-1).int(0);
    let Request::SetData(r) = RequestFrame::decode(&f.0).unwrap().request else { panic!("not setData") };
    assert_eq!(r.data, None);
    // ...a null vector is empty...
    let f = W::reply(2, 0, ErrorCode::OK).int(-1);
    assert_eq!(
        ServerMessage::decode(&f.0, lookup(OpCode::GET_CHILDREN)).unwrap(),
        ServerMessage::Reply {
            header: ReplyHeader { xid: Xid(2), zxid: 0, err: ErrorCode::OK },
            response: Some(Response::Children(vec![]))
        }
    );
    // ...and reconfig's member lists are optional strings.
    let f = W::new().int(-1).string(b"server.3").int(-1).long(-1);
    let Request::Reconfig(r) = Request::decode(OpCode::RECONFIG, &f.0).unwrap() else { panic!("not reconfig") };
    assert_eq!((r.joining_servers, r.leaving_servers.as_deref(), r.new_members), (None, Some("server.3"), None));
    let f = W::new().int(-1).int(-9).int(-1).long(-1);
    assert_eq!(Request::decode(OpCode::RECONFIG, &f.0), Err(err(DecodeErrorKind::NegativeLength(-9), 4)));
}

#[test]
fn lengths_exceeding_the_frame() {
    let f = W::req(1, OpCode::SYNC).int(100).raw(b"abc");
    assert_eq!(RequestFrame::decode(&f.0), Err(err(DecodeErrorKind::LengthExceedsFrame { len: 100, remaining: 3 }, 8)));
    // A buffer one byte too long.
    let f = W::new().int(5).raw(b"four");
    assert_eq!(
        Request::decode(OpCode::SASL, &f.0),
        Err(err(DecodeErrorKind::LengthExceedsFrame { len: 5, remaining: 4 }, 0))
    );
    // Three children need at least 12 bytes; 11 are left.
    let f = W::new().int(3).raw(&[0; 11]);
    assert_eq!(
        Response::decode(OpCode::GET_CHILDREN, &f.0),
        Err(err(DecodeErrorKind::LengthExceedsFrame { len: 3, remaining: 11 }, 0))
    );
    // With 12 bytes the count is plausible: three empty names.
    let f = W::new().int(3).raw(&[0; 12]);
    assert_eq!(Response::decode(OpCode::GET_CHILDREN, &f.0), Ok(Response::Children(vec![String::new(); 3])));
}

/// A count of `i32::MAX` in a tiny frame is refused from the count alone,
/// before any allocation. Had the decoder reserved `count` elements first, the
/// request (tens of GiB for these element types) would abort the test process.
#[test]
fn absurd_vector_counts_are_refused_before_allocating() {
    let max = 0x7fff_ffff;
    let too_many = |remaining: usize, offset: usize| {
        err(DecodeErrorKind::LengthExceedsFrame { len: max as usize, remaining }, offset)
    };
    // children (ustring vector) in a reply
    let f = W::reply(4, 0, ErrorCode::OK).int(max).raw(b"tiny");
    assert_eq!(ServerMessage::decode(&f.0, lookup(OpCode::GET_CHILDREN)).unwrap_err(), too_many(4, 16));
    assert_eq!(ServerMessage::decode(&f.0, lookup(OpCode::GET_CHILDREN2)).unwrap_err(), too_many(4, 16));
    // ACL vector in a reply and in a create
    assert_eq!(ServerMessage::decode(&f.0, lookup(OpCode::GET_ACL)).unwrap_err(), too_many(4, 16));
    let f = W::req(1, OpCode::CREATE).string(b"/n").int(-1).int(max).int(0);
    assert_eq!(RequestFrame::decode(&f.0).unwrap_err(), too_many(4, 18));
    // whoAmI ClientInfo vector
    let f = W::new().int(max);
    assert_eq!(Response::decode(OpCode::WHO_AM_I, &f.0).unwrap_err(), too_many(0, 0));
    // setWatches2's last list
    let f = W::new().long(0).int(0).int(0).int(0).int(0).int(max).raw(&[1, 2, 3]);
    assert_eq!(Request::decode(OpCode::SET_WATCHES2, &f.0).unwrap_err(), too_many(3, 24));
    // a buffer
    let f = W::reply(4, 0, ErrorCode::OK).int(max);
    assert_eq!(ServerMessage::decode(&f.0, lookup(OpCode::GET_DATA)).unwrap_err(), too_many(0, 16));
}

// ---- UTF-8 --------------------------------------------------------------------

#[test]
fn invalid_utf8_points_at_the_length_prefix() {
    for bad in [&[0xff, 0xfe][..], &[b'/', 0xc3][..], &[0xc0, 0x80][..], &[0xed, 0xa0, 0x80][..], &[0x80][..]] {
        // The create path is the first field after the header.
        let f = W::req(1, OpCode::CREATE).string(bad).int(-1).int(0).int(0);
        assert_eq!(RequestFrame::decode(&f.0), Err(err(DecodeErrorKind::InvalidUtf8, 8)), "{bad:x?}");
    }
    // The id of the second ACL entry of a create.
    let prefix = W::req(1, OpCode::CREATE).string(b"/n").int(-1).int(2).int(31).string(b"world").string(b"anyone");
    let at = prefix.len() + 4 + 4 + 6; // perms, scheme "digest"
    let f = prefix.int(31).string(b"digest").string(b"u:\xff").int(0);
    assert_eq!(RequestFrame::decode(&f.0), Err(err(DecodeErrorKind::InvalidUtf8, at)));
    // A notification path (after 16 header bytes and type/state).
    let f = W::reply(-1, -1, ErrorCode::OK).int(2).int(3).string(b"/x\xfe");
    assert_eq!(ServerMessage::decode(&f.0, |_| None), Err(err(DecodeErrorKind::InvalidUtf8, 24)));
    // The second child in a getChildren reply.
    let f = W::reply(5, 0, ErrorCode::OK).int(2).string(b"ok").string(b"\xe6\x97");
    assert_eq!(
        ServerMessage::decode(&f.0, lookup(OpCode::GET_CHILDREN)),
        Err(err(DecodeErrorKind::InvalidUtf8, 16 + 4 + 6))
    );
    // Valid multi-byte UTF-8 is fine.
    let f = W::req(1, OpCode::SYNC).string("/ロック/🔒".as_bytes());
    assert_eq!(RequestFrame::decode(&f.0).unwrap().request.path(), Some("/ロック/🔒"));
}

// ---- opcodes ------------------------------------------------------------------

#[test]
fn unknown_opcodes() {
    for raw in [10, 23, 99, 108, 999, -2, -12, i32::MIN, i32::MAX] {
        let op = OpCode(raw);
        assert_eq!(Request::decode(op, &[]), Err(err(DecodeErrorKind::UnknownOpCode(raw), 0)));
        assert_eq!(Response::decode(op, &[]), Err(err(DecodeErrorKind::UnknownOpCode(raw), 0)));
        let f = W::req(3, op).string(b"/whatever");
        assert_eq!(RequestFrame::decode(&f.0), Err(err(DecodeErrorKind::UnknownOpCode(raw), 8)));
        let f = W::reply(3, 0, ErrorCode::OK);
        assert_eq!(ServerMessage::decode(&f.0, lookup(op)), Err(err(DecodeErrorKind::UnknownOpCode(raw), 16)));
    }
    for op in [OpCode::NOTIFICATION, OpCode::CREATE_SESSION, OpCode::ERROR] {
        assert_eq!(Request::decode(op, &[]), Err(err(DecodeErrorKind::NotARequest(op), 0)));
        assert_eq!(Response::decode(op, &[]), Err(err(DecodeErrorKind::NotARequest(op), 0)));
        let f = W::req(3, op);
        assert_eq!(RequestFrame::decode(&f.0), Err(err(DecodeErrorKind::NotARequest(op), 8)));
    }
}

#[test]
fn ops_not_allowed_inside_multi() {
    // multi: a check, then a getData (read op) at offset 8 + 9 + 10.
    let check = W::new().string(b"/c").int(0);
    let f = W::req(1, OpCode::MULTI)
        .multi_header(OpCode::CHECK, false, -1)
        .raw(&check.0)
        .multi_header(OpCode::GET_DATA, false, -1)
        .string(b"/d")
        .byte(0)
        .terminator();
    assert_eq!(
        RequestFrame::decode(&f.0),
        Err(err(DecodeErrorKind::NotAllowedInMulti(OpCode::GET_DATA, OpCode::MULTI), 8 + 9 + check.len()))
    );
    // multiRead: a write op.
    let f = W::req(1, OpCode::MULTI_READ).multi_header(OpCode::CREATE, false, -1).string(b"/n").int(-1).int(0).int(0);
    assert_eq!(
        RequestFrame::decode(&f.0),
        Err(err(DecodeErrorKind::NotAllowedInMulti(OpCode::CREATE, OpCode::MULTI_READ), 8))
    );
    // Nested multis, pings, and unknown types are refused at their header.
    for (inner, kind) in [
        (OpCode::MULTI, OpCode::MULTI),
        (OpCode::MULTI_READ, OpCode::MULTI_READ),
        (OpCode::MULTI_READ, OpCode::MULTI),
        (OpCode::PING, OpCode::MULTI),
        (OpCode::EXISTS, OpCode::MULTI_READ),
        (OpCode::GET_CHILDREN2, OpCode::MULTI_READ),
        (OpCode(999), OpCode::MULTI),
    ] {
        let f = W::new().multi_header(inner, false, -1).terminator().terminator();
        assert_eq!(Request::decode(kind, &f.0), Err(err(DecodeErrorKind::NotAllowedInMulti(inner, kind), 0)));
    }
    // An invalid result type in a multi reply.
    let f = W::new().multi_header(OpCode::DELETE, false, 0).multi_header(OpCode::EXISTS, false, 0).terminator();
    assert_eq!(Response::decode(OpCode::MULTI, &f.0), Err(err(DecodeErrorKind::InvalidMultiResult(3), 9)));
}

// ---- trailing bytes -----------------------------------------------------------

#[test]
fn trailing_bytes() {
    let frame = W::req(1, OpCode::DELETE).string(b"/a").int(-1);
    let n = frame.len();
    let f = frame.raw(b"xyz");
    assert_eq!(RequestFrame::decode(&f.0), Err(err(DecodeErrorKind::TrailingBytes(3), n)));
    // A bodiless request with a stray byte.
    let f = W::req(-2, OpCode::PING).byte(0);
    assert_eq!(RequestFrame::decode(&f.0), Err(err(DecodeErrorKind::TrailingBytes(1), 8)));
    // A body that should be empty.
    assert_eq!(Response::decode(OpCode::DELETE, &[0]), Err(err(DecodeErrorKind::TrailingBytes(1), 0)));
    // ConnectRequest: 45 bytes is the longest form.
    let f = W::new().int(0).long(0).int(0).long(0).string(&[0; 16]).byte(0).byte(0);
    assert_eq!(ConnectRequest::decode(&f.0), Err(err(DecodeErrorKind::TrailingBytes(1), 45)));
    let f = W::new().int(0).int(0).long(0).string(&[0; 16]).byte(1).raw(&[0, 0]);
    assert_eq!(ConnectResponse::decode(&f.0), Err(err(DecodeErrorKind::TrailingBytes(2), 37)));
    // An OK reply with bytes after its body.
    let f = W::reply(6, 0, ErrorCode::OK).string(b"/p").byte(9);
    assert_eq!(ServerMessage::decode(&f.0, lookup(OpCode::SYNC)), Err(err(DecodeErrorKind::TrailingBytes(1), 22)));
    // A notification with bytes after the event.
    let f = W::reply(-1, -1, ErrorCode::OK).int(1).int(3).string(b"/p").raw(&[0; 4]);
    assert_eq!(ServerMessage::decode(&f.0, |_| None), Err(err(DecodeErrorKind::TrailingBytes(4), 30)));
}

#[test]
fn error_reply_ignores_trailing_garbage() {
    let f = W::reply(6, 0x42, ErrorCode::NO_NODE).raw(b"\xff\xff garbage that is not a body");
    assert_eq!(
        ServerMessage::decode(&f.0, lookup(OpCode::GET_DATA)),
        Ok(ServerMessage::Reply {
            header: ReplyHeader { xid: Xid(6), zxid: 0x42, err: ErrorCode::NO_NODE },
            response: None
        })
    );
    // The same for an auth failure (xid -4, no lookup).
    let f = W::reply(-4, 0, ErrorCode::AUTH_FAILED).raw(&[1, 2, 3]);
    assert_eq!(
        ServerMessage::decode(&f.0, |xid| panic!("auth reply looked up xid {xid}")),
        Ok(ServerMessage::Reply {
            header: ReplyHeader { xid: Xid::AUTH, zxid: 0, err: ErrorCode::AUTH_FAILED },
            response: None
        })
    );
}

// ---- xids ---------------------------------------------------------------------

#[test]
fn unknown_xid() {
    for xid in [42, -8, -3, i32::MAX, i32::MIN] {
        let f = W::reply(xid, 0, ErrorCode::OK);
        assert_eq!(ServerMessage::decode(&f.0, |_| None), Err(err(DecodeErrorKind::UnknownXid(xid), 0)));
        // Also for error replies: without a pending request nothing is known.
        let f = W::reply(xid, 0, ErrorCode::NO_NODE);
        assert_eq!(ServerMessage::decode(&f.0, |_| None), Err(err(DecodeErrorKind::UnknownXid(xid), 0)));
    }
    // Pings and auth replies need no lookup.
    for xid in [Xid::PING, Xid::AUTH] {
        let f = W::reply(xid.0, 7, ErrorCode::OK);
        let msg = ServerMessage::decode(&f.0, |x| panic!("looked up {x}")).unwrap();
        assert_eq!(
            msg,
            ServerMessage::Reply {
                header: ReplyHeader { xid, zxid: 7, err: ErrorCode::OK },
                response: Some(Response::Empty)
            }
        );
    }
    // The lookup is asked with the reply's xid.
    let f = W::reply(77, 0, ErrorCode::OK).int(12);
    let msg = ServerMessage::decode(&f.0, |x| (x == Xid(77)).then_some(OpCode::GET_ALL_CHILDREN_NUMBER)).unwrap();
    assert_eq!(msg.header().xid, Xid(77));
}

#[test]
fn error_display_names_kind_and_offset() {
    let e = err(DecodeErrorKind::LengthExceedsFrame { len: 100, remaining: 3 }, 8);
    assert_eq!(e.to_string(), "length 100 exceeds the 3 bytes left in the frame at offset 8");
    let e = err(DecodeErrorKind::NotAllowedInMulti(OpCode::GET_DATA, OpCode::MULTI), 17);
    assert_eq!(e.to_string(), "opcode getData is not allowed inside multi at offset 17");
    assert_eq!(err(DecodeErrorKind::UnknownOpCode(10), 0).to_string(), "unknown opcode 10 at offset 0");
    assert_eq!(OpCode(10).to_string(), "OpCode(10)");
}
