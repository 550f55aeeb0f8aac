//! Arbitrary bytes never make a decoder panic. Inputs are random byte strings
//! and inputs biased toward the interesting paths: plausible headers and
//! opcodes followed by random bytes, and valid encodings with a few mutations.
//!
//! Besides "no panic", every outcome is checked for consistency: an error
//! names an offset inside the input, and a decoded value re-encodes to exactly
//! `encoded_len` bytes that decode back to the same value.

mod common;

use core::fmt::Debug;

use common::{NOT_REQUEST_OPS, REQUEST_OPS};
use proptest::collection::vec;
use proptest::prelude::*;
use proptest::sample::Index;
use zoolock_wire::{
    BytesMut, ConnectRequest, ConnectResponse, DEFAULT_MAX_FRAME_LEN, DecodeError, Encode, FrameDecoder, LEN_PREFIX,
    OpCode, Request, RequestFrame, Response, ServerMessage, Xid,
};

/// Cases per property; the whole wire suite must stay well under 20 s in debug.
const CASES: u32 = 4096;

/// Opcodes every body decoder is tried with: all known ones plus a few unknown.
fn all_ops() -> Vec<OpCode> {
    let mut ops = REQUEST_OPS.to_vec();
    ops.extend_from_slice(NOT_REQUEST_OPS);
    ops.extend([OpCode(10), OpCode(23), OpCode(999), OpCode(i32::MIN)]);
    ops
}

/// One edit applied to a valid encoding.
#[derive(Debug, Clone)]
enum Mutation {
    FlipBit(Index, u8),
    /// Overwrites four bytes with an interesting i32 (lengths, counts, codes).
    SetInt(Index, i32),
    Truncate(Index),
    Insert(Index, u8),
    Remove(Index),
}

fn interesting_int() -> impl Strategy<Value = i32> {
    prop_oneof![
        prop::sample::select(vec![-1, -2, 0, 1, 2, 4, 8, 9, 16, 0x7fff_ffff, i32::MIN, 0x0010_0000]),
        0..600,
        any::<i32>(),
    ]
}

fn mutation() -> impl Strategy<Value = Mutation> {
    prop_oneof![
        (any::<Index>(), 0u8..8).prop_map(|(i, b)| Mutation::FlipBit(i, b)),
        (any::<Index>(), interesting_int()).prop_map(|(i, v)| Mutation::SetInt(i, v)),
        any::<Index>().prop_map(Mutation::Truncate),
        (any::<Index>(), any::<u8>()).prop_map(|(i, b)| Mutation::Insert(i, b)),
        any::<Index>().prop_map(Mutation::Remove),
    ]
}

fn mutate(mut bytes: Vec<u8>, mutations: &[Mutation]) -> Vec<u8> {
    for m in mutations {
        let len = bytes.len();
        match m {
            Mutation::Insert(i, b) => bytes.insert(i.index(len + 1), *b),
            _ if len == 0 => {}
            Mutation::FlipBit(i, bit) => bytes[i.index(len)] ^= 1 << bit,
            Mutation::SetInt(i, v) if len >= 4 => {
                let at = i.index(len - 3);
                bytes[at..at + 4].copy_from_slice(&v.to_be_bytes());
            }
            Mutation::SetInt(..) => {}
            Mutation::Truncate(i) => bytes.truncate(i.index(len)),
            Mutation::Remove(i) => {
                bytes.remove(i.index(len));
            }
        }
    }
    bytes
}

fn mutated<T: Encode + Debug>(valid: impl Strategy<Value = T>) -> impl Strategy<Value = Vec<u8>> {
    (valid, vec(mutation(), 1..4)).prop_map(|(v, m)| mutate(v.to_bytes().to_vec(), &m))
}

/// Inputs for the decoders, random and biased.
fn input() -> impl Strategy<Value = Vec<u8>> {
    let any_op = prop::sample::select(all_ops()).prop_map(|op| op.0);
    let xid = prop_oneof![Just(-1), Just(-2), Just(-4), Just(-8), 1..16, any::<i32>()];
    let tail = vec(any::<u8>(), 0..256);
    prop_oneof![
        3 => vec(any::<u8>(), 0..512),
        // A request header with a real opcode.
        2 => (xid.clone(), any_op.clone(), tail.clone()).prop_map(|(xid, op, tail)| {
            let mut b = xid.to_be_bytes().to_vec();
            b.extend_from_slice(&op.to_be_bytes());
            b.extend_from_slice(&tail);
            b
        }),
        // A reply header, mostly OK, then random bytes.
        2 => (xid, any::<i64>(), prop_oneof![3 => Just(0), 1 => any::<i32>()], tail.clone()).prop_map(
            |(xid, zxid, err, tail)| {
                let mut b = xid.to_be_bytes().to_vec();
                b.extend_from_slice(&zxid.to_be_bytes());
                b.extend_from_slice(&err.to_be_bytes());
                b.extend_from_slice(&tail);
                b
            }
        ),
        // A multi op list with random headers and small counts.
        1 => vec((any_op, any::<bool>(), interesting_int(), vec(any::<u8>(), 0..24)), 0..5).prop_map(|ops| {
            let mut b = Vec::new();
            for (op, done, n, body) in ops {
                b.extend_from_slice(&op.to_be_bytes());
                b.push(u8::from(done));
                b.extend_from_slice(&n.to_be_bytes());
                b.extend_from_slice(&body);
            }
            b
        }),
        3 => mutated(common::request_frame()),
        3 => mutated(common::server_message().prop_map(|(_, m)| m)),
        1 => mutated(common::connect_request()),
        1 => mutated(common::connect_response()),
        2 => prop::sample::select(REQUEST_OPS).prop_flat_map(|op| mutated(common::response_for(op))),
    ]
}

/// An error must point inside the input; a value must survive re-encoding.
fn consistent<T: Encode + PartialEq + Debug>(
    input: &[u8],
    result: Result<T, DecodeError>,
    decode: impl Fn(&[u8]) -> Result<T, DecodeError>,
) -> Result<(), TestCaseError> {
    match result {
        Ok(value) => {
            let bytes = value.to_bytes();
            prop_assert_eq!(bytes.len(), value.encoded_len());
            let again = decode(&bytes).map_err(|e| TestCaseError::fail(format!("re-decode of {value:?}: {e}")))?;
            prop_assert_eq!(again, value);
        }
        Err(e) => prop_assert!(e.offset <= input.len(), "offset {} beyond {} bytes: {:?}", e.offset, input.len(), e),
    }
    Ok(())
}

fn decode_everything(input: &[u8]) -> Result<(), TestCaseError> {
    consistent(input, ConnectRequest::decode(input), ConnectRequest::decode)?;
    consistent(input, ConnectResponse::decode(input), ConnectResponse::decode)?;
    consistent(input, RequestFrame::decode(input), RequestFrame::decode)?;
    for op in all_ops() {
        consistent(input, Request::decode(op, input), |b| Request::decode(op, b))?;
        consistent(input, Response::decode(op, input), |b| Response::decode(op, b))?;
        let lookup = move |_: Xid| Some(op);
        consistent(input, ServerMessage::decode(input, lookup), |b| ServerMessage::decode(b, lookup))?;
    }
    let none = |_: Xid| None;
    consistent(input, ServerMessage::decode(input, none), |b| ServerMessage::decode(b, none))?;
    Ok(())
}

proptest! {
    #![proptest_config(ProptestConfig { cases: CASES, failure_persistence: None, ..ProptestConfig::default() })]

    #[test]
    fn decoders_never_panic(input in input()) {
        decode_everything(&input)?;
    }

    /// The frame decoder over a random stream in random chunks: it never
    /// panics, never returns a payload over the limit, consumes exactly prefix
    /// plus payload, and leaves the buffer as it was when it needs more.
    #[test]
    fn frame_decoder_never_panics(
        stream in prop_oneof![
            vec(any::<u8>(), 0..512),
            // Small plausible length prefixes, so frames actually complete.
            vec((0u32..48, vec(any::<u8>(), 0..48)), 0..8).prop_map(|frames| {
                let mut b = Vec::new();
                for (len, body) in frames {
                    b.extend_from_slice(&len.to_be_bytes());
                    b.extend_from_slice(&body);
                }
                b
            }),
        ],
        chunks in vec(1usize..40, 0..64),
        max in prop_oneof![Just(DEFAULT_MAX_FRAME_LEN), 0usize..64],
    ) {
        let dec = FrameDecoder::new(max);
        let mut buf = BytesMut::new();
        let mut rest = &stream[..];
        let mut chunks = chunks.into_iter();
        'feed: while !rest.is_empty() {
            let n = chunks.next().unwrap_or(rest.len()).min(rest.len());
            buf.extend_from_slice(&rest[..n]);
            rest = &rest[n..];
            loop {
                let before = buf.clone();
                match dec.decode(&mut buf) {
                    Ok(Some(payload)) => {
                        prop_assert!(payload.len() <= max);
                        prop_assert_eq!(&before[..LEN_PREFIX], &u32::try_from(payload.len()).unwrap().to_be_bytes()[..]);
                        prop_assert_eq!(&before[LEN_PREFIX..LEN_PREFIX + payload.len()], &payload[..]);
                        prop_assert_eq!(&before[LEN_PREFIX + payload.len()..], &buf[..]);
                        decode_everything(&payload)?;
                    }
                    Ok(None) => {
                        prop_assert_eq!(&before, &buf);
                        break;
                    }
                    Err(e) => {
                        prop_assert_eq!(e.offset, 0);
                        break 'feed;
                    }
                }
            }
        }
    }
}
