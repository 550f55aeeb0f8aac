//! Length-prefix framing: `FrameDecoder` on partial, exact, back-to-back,
//! oversized and negative frames, byte-by-byte and randomly chunked feeds, and
//! `encode_frame`'s size limit.

mod common;

use proptest::prelude::*;
use zoolock_wire::{
    Bytes, BytesMut, DEFAULT_MAX_FRAME_LEN, DecodeError, DecodeErrorKind, Encode, EncodeError, FrameDecoder,
    JUTE_MAXBUFFER, LEN_PREFIX, Request, RequestFrame, SetDataRequest, Xid, encode_frame,
};

/// A length-prefixed frame around `payload`.
fn framed(payload: &[u8]) -> Vec<u8> {
    let mut out = u32::try_from(payload.len()).unwrap().to_be_bytes().to_vec();
    out.extend_from_slice(payload);
    out
}

fn set_data(len: usize) -> RequestFrame {
    RequestFrame::new(
        Xid(9),
        Request::SetData(SetDataRequest { path: "/big".into(), data: Some(Bytes::from(vec![0xab; len])), version: -1 }),
    )
}

#[test]
fn defaults() {
    assert_eq!(JUTE_MAXBUFFER, 0xf_ffff);
    assert_eq!(FrameDecoder::default().max_frame_len(), DEFAULT_MAX_FRAME_LEN);
    const { assert!(DEFAULT_MAX_FRAME_LEN > JUTE_MAXBUFFER) };
    assert_eq!(FrameDecoder::new(77).max_frame_len(), 77);
}

#[test]
fn incomplete_prefix_leaves_buffer_untouched() {
    let dec = FrameDecoder::default();
    let whole = framed(b"hello");
    for cut in 0..LEN_PREFIX {
        let mut buf = BytesMut::from(&whole[..cut]);
        assert_eq!(dec.decode(&mut buf), Ok(None), "cut at {cut}");
        assert_eq!(&buf[..], &whole[..cut], "cut at {cut}");
        assert_eq!(dec.peek_len(&buf), Ok(None));
    }
}

#[test]
fn incomplete_body_is_none_and_keeps_bytes() {
    let dec = FrameDecoder::default();
    let whole = framed(b"hello world");
    for cut in LEN_PREFIX..whole.len() {
        let mut buf = BytesMut::from(&whole[..cut]);
        assert_eq!(dec.decode(&mut buf), Ok(None), "cut at {cut}");
        assert_eq!(&buf[..], &whole[..cut], "cut at {cut}");
        assert_eq!(dec.peek_len(&buf), Ok(Some(11)));
    }
}

#[test]
fn incomplete_body_then_rest_arrives() {
    let dec = FrameDecoder::default();
    let whole = framed(b"split body");
    let mut buf = BytesMut::from(&whole[..7]);
    assert_eq!(dec.decode(&mut buf), Ok(None));
    buf.extend_from_slice(&whole[7..]);
    assert_eq!(dec.decode(&mut buf), Ok(Some(Bytes::from_static(b"split body"))));
    assert!(buf.is_empty());
}

#[test]
fn exactly_complete_frame() {
    let dec = FrameDecoder::default();
    let mut buf = BytesMut::from(&framed(b"exact")[..]);
    assert_eq!(dec.decode(&mut buf), Ok(Some(Bytes::from_static(b"exact"))));
    assert!(buf.is_empty());
    assert_eq!(dec.decode(&mut buf), Ok(None));
}

#[test]
fn empty_frame() {
    let dec = FrameDecoder::default();
    let mut buf = BytesMut::from(&[0u8, 0, 0, 0][..]);
    assert_eq!(dec.decode(&mut buf), Ok(Some(Bytes::new())));
    assert!(buf.is_empty());
}

#[test]
fn two_frames_back_to_back() {
    let dec = FrameDecoder::default();
    let mut bytes = framed(b"first");
    bytes.extend_from_slice(&framed(b"second frame"));
    bytes.extend_from_slice(&[0, 0]); // start of a third prefix
    let mut buf = BytesMut::from(&bytes[..]);
    assert_eq!(dec.decode(&mut buf), Ok(Some(Bytes::from_static(b"first"))));
    assert_eq!(dec.decode(&mut buf), Ok(Some(Bytes::from_static(b"second frame"))));
    assert_eq!(dec.decode(&mut buf), Ok(None));
    assert_eq!(&buf[..], &[0, 0]);
}

#[test]
fn negative_length_is_an_error() {
    let dec = FrameDecoder::default();
    for raw in [-1i32, -2, i32::MIN] {
        let mut buf = BytesMut::from(&raw.to_be_bytes()[..]);
        let expected = DecodeError { kind: DecodeErrorKind::NegativeLength(raw), offset: 0 };
        assert_eq!(dec.decode(&mut buf), Err(expected));
        assert_eq!(dec.peek_len(&buf), Err(expected));
    }
}

#[test]
fn too_large_is_rejected_from_the_prefix_alone() {
    let max = 1024;
    let dec = FrameDecoder::new(max);
    // Only the four prefix bytes have arrived: the error comes before any body.
    let mut buf = BytesMut::from(&1025u32.to_be_bytes()[..]);
    assert_eq!(
        dec.decode(&mut buf),
        Err(DecodeError { kind: DecodeErrorKind::FrameTooLarge { len: 1025, max }, offset: 0 })
    );
    // The limit itself is allowed.
    let mut buf = BytesMut::from(&1024u32.to_be_bytes()[..]);
    assert_eq!(dec.decode(&mut buf), Ok(None));
    assert_eq!(dec.peek_len(&buf), Ok(Some(1024)));

    // With the default limit: one byte over, and i32::MAX.
    let dec = FrameDecoder::default();
    for len in [DEFAULT_MAX_FRAME_LEN + 1, i32::MAX as usize] {
        let mut buf = BytesMut::from(&u32::try_from(len).unwrap().to_be_bytes()[..]);
        assert_eq!(
            dec.decode(&mut buf),
            Err(DecodeError { kind: DecodeErrorKind::FrameTooLarge { len, max: DEFAULT_MAX_FRAME_LEN }, offset: 0 })
        );
    }
}

#[test]
fn decoder_does_not_reserve_for_a_rejected_frame() {
    let dec = FrameDecoder::new(16);
    let mut buf = BytesMut::with_capacity(8);
    buf.extend_from_slice(&0x7fff_ffffu32.to_be_bytes());
    assert!(dec.decode(&mut buf).is_err());
    assert!(buf.capacity() < 1024, "capacity grew to {}", buf.capacity());
}

#[test]
fn encode_frame_refuses_too_large_payloads() {
    let big = set_data(DEFAULT_MAX_FRAME_LEN);
    let len = big.encoded_len();
    assert!(len > DEFAULT_MAX_FRAME_LEN);
    let mut buf = BytesMut::from(&b"kept"[..]);
    assert_eq!(
        encode_frame(&big, DEFAULT_MAX_FRAME_LEN, &mut buf),
        Err(EncodeError::FrameTooLarge { len, max: DEFAULT_MAX_FRAME_LEN })
    );
    assert_eq!(&buf[..], b"kept", "nothing may be written on refusal");

    // A payload of exactly the limit is framed; one byte more is not.
    let limit = set_data(100).encoded_len();
    let mut buf = BytesMut::new();
    assert_eq!(encode_frame(&set_data(100), limit, &mut buf), Ok(()));
    assert_eq!(buf.len(), LEN_PREFIX + limit);
    assert_eq!(FrameDecoder::new(limit).decode(&mut buf).unwrap().map(|b| b.len()), Some(limit));
    let mut buf = BytesMut::new();
    assert_eq!(
        encode_frame(&set_data(101), limit, &mut buf),
        Err(EncodeError::FrameTooLarge { len: limit + 1, max: limit })
    );
    assert!(buf.is_empty());
}

#[test]
fn byte_by_byte_feed_yields_the_same_frames() {
    let frames: Vec<RequestFrame> = (0..5).map(|i| set_data(i * 37)).collect();
    let mut wire = BytesMut::new();
    for f in &frames {
        encode_frame(f, DEFAULT_MAX_FRAME_LEN, &mut wire).unwrap();
    }
    let dec = FrameDecoder::default();
    let mut buf = BytesMut::new();
    let mut got = Vec::new();
    for &b in wire.iter() {
        buf.extend_from_slice(&[b]);
        while let Some(payload) = dec.decode(&mut buf).unwrap() {
            got.push(RequestFrame::decode(&payload).unwrap());
        }
    }
    assert!(buf.is_empty());
    assert_eq!(got, frames);
}

proptest! {
    #![proptest_config(ProptestConfig { cases: 256, failure_persistence: None, ..ProptestConfig::default() })]

    /// Any sequence of frames, fed in any chunking, comes out whole and in order.
    #[test]
    fn chunked_feed_yields_the_same_frames(
        frames in proptest::collection::vec(common::request_frame(), 0..6),
        cuts in proptest::collection::vec(1usize..64, 0..40),
    ) {
        let mut wire = Vec::new();
        for f in &frames {
            let mut b = BytesMut::new();
            encode_frame(f, DEFAULT_MAX_FRAME_LEN, &mut b).unwrap();
            wire.extend_from_slice(&b);
        }
        let dec = FrameDecoder::default();
        let mut buf = BytesMut::new();
        let mut got = Vec::new();
        let mut rest = &wire[..];
        let mut cuts = cuts.into_iter();
        while !rest.is_empty() {
            let n = cuts.next().unwrap_or(rest.len()).min(rest.len());
            buf.extend_from_slice(&rest[..n]);
            rest = &rest[n..];
            while let Some(payload) = dec.decode(&mut buf).unwrap() {
                got.push(RequestFrame::decode(&payload).unwrap());
            }
        }
        prop_assert!(buf.is_empty());
        prop_assert_eq!(got, frames);
    }
}
