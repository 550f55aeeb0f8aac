//! Feeds arbitrary bytes to every zoolock-wire decoder. Besides "never panics",
//! it checks that errors point inside the input and that whatever decodes
//! re-encodes to `encoded_len` bytes which decode to the same value.
#![no_main]

use core::fmt::Debug;

use libfuzzer_sys::fuzz_target;
use zoolock_wire::{
    BytesMut, ConnectRequest, ConnectResponse, DEFAULT_MAX_FRAME_LEN, DecodeError, Encode, FrameDecoder, LEN_PREFIX,
    OpCode, Request, RequestFrame, Response, ServerMessage, Xid,
};

/// Every opcode the codec knows, plus a few it does not.
const OPS: &[i32] = &[
    0, 1, 2, 3, 4, 5, 6, 7, 8, 9, 11, 12, 13, 14, 15, 16, 17, 18, 19, 20, 21, 22, 100, 101, 102, 103, 104, 105, 106,
    107, -10, -11, -1, 10, 23, 999,
];

fn consistent<T: Encode + PartialEq + Debug>(
    input: &[u8],
    result: Result<T, DecodeError>,
    decode: impl Fn(&[u8]) -> Result<T, DecodeError>,
) {
    match result {
        Ok(value) => {
            let bytes = value.to_bytes();
            assert_eq!(bytes.len(), value.encoded_len(), "{value:?}");
            match decode(&bytes) {
                Ok(again) => assert_eq!(again, value),
                Err(e) => panic!("{value:?} re-encoded to bytes that fail to decode: {e}"),
            }
        }
        Err(e) => assert!(e.offset <= input.len(), "offset {} beyond {} bytes: {e:?}", e.offset, input.len()),
    }
}

fn decode_everything(data: &[u8]) {
    consistent(data, ConnectRequest::decode(data), ConnectRequest::decode);
    consistent(data, ConnectResponse::decode(data), ConnectResponse::decode);
    consistent(data, RequestFrame::decode(data), RequestFrame::decode);
    for &raw in OPS {
        let op = OpCode(raw);
        consistent(data, Request::decode(op, data), |b| Request::decode(op, b));
        consistent(data, Response::decode(op, data), |b| Response::decode(op, b));
        let lookup = move |_: Xid| Some(op);
        consistent(data, ServerMessage::decode(data, lookup), |b| ServerMessage::decode(b, lookup));
    }
    let none = |_: Xid| None;
    consistent(data, ServerMessage::decode(data, none), |b| ServerMessage::decode(b, none));
}

/// Runs the frame decoder over `stream` fed in `chunk`-byte pieces.
fn frames(stream: &[u8], chunk: usize, max: usize) {
    let dec = FrameDecoder::new(max);
    let mut buf = BytesMut::new();
    for piece in stream.chunks(chunk) {
        buf.extend_from_slice(piece);
        loop {
            let before = buf.clone();
            match dec.decode(&mut buf) {
                Ok(Some(payload)) => {
                    assert!(payload.len() <= max);
                    assert_eq!(before.len(), LEN_PREFIX + payload.len() + buf.len());
                    decode_everything(&payload);
                }
                Ok(None) => {
                    assert_eq!(before, buf);
                    break;
                }
                Err(_) => return,
            }
        }
    }
}

fuzz_target!(|data: &[u8]| {
    decode_everything(data);
    // The first byte picks the chunk size and the frame limit for the stream.
    if let Some((&knob, stream)) = data.split_first() {
        let chunk = usize::from(knob >> 1).max(1);
        let max = if knob & 1 == 0 { DEFAULT_MAX_FRAME_LEN } else { 64 };
        frames(stream, chunk, max);
    }
});
