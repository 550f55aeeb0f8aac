//! Framing under arbitrary TCP segmentation: each direction of every recorded
//! connection is rebuilt as a length-prefixed byte stream and fed to
//! [`FrameDecoder`] in chunks of many sizes (single bytes, splits inside the
//! 4-byte prefix, random sizes). The frames that come out must be exactly the
//! recorded ones.

use std::path::Path;
use std::sync::OnceLock;

use bytes::{BufMut, Bytes, BytesMut};
use proptest::prelude::*;
use zoolock_conformance::trace::jsonl_files_under;
use zoolock_conformance::{Direction, Trace};
use zoolock_wire::{FrameDecoder, LEN_PREFIX};

/// One direction of one connection.
struct Stream {
    label: String,
    frames: Vec<Bytes>,
    bytes: Vec<u8>,
    /// Offset of each frame's length prefix in `bytes`.
    starts: Vec<usize>,
}

fn streams() -> &'static [Stream] {
    static STREAMS: OnceLock<Vec<Stream>> = OnceLock::new();
    STREAMS.get_or_init(|| {
        let root = Path::new(env!("CARGO_MANIFEST_DIR")).join("traces");
        let mut out = Vec::new();
        for path in jsonl_files_under(&root).expect("walk traces/") {
            let trace = Trace::load(&path).unwrap_or_else(|e| panic!("{e}"));
            for dir in [Direction::C2s, Direction::S2c] {
                let frames: Vec<Bytes> = trace.frames().filter(|f| f.dir == dir).map(|f| f.payload.clone()).collect();
                let mut bytes = Vec::new();
                let mut starts = Vec::new();
                for f in &frames {
                    starts.push(bytes.len());
                    bytes.put_u32(u32::try_from(f.len()).unwrap());
                    bytes.extend_from_slice(f);
                }
                out.push(Stream { label: format!("{} {dir}", path.display()), frames, bytes, starts });
            }
        }
        assert!(out.len() >= 40, "only {} streams", out.len());
        assert!(out.iter().map(|s| s.frames.len()).sum::<usize>() >= 500);
        out
    })
}

/// Feeds `stream` in chunks whose sizes come from `sizes` (each at least 1),
/// draining every complete frame after each chunk, as a socket reader would.
fn feed(stream: &[u8], mut sizes: impl Iterator<Item = usize>) -> Vec<Bytes> {
    let decoder = FrameDecoder::default();
    let mut buf = BytesMut::new();
    let mut out = Vec::new();
    let mut pos = 0;
    while pos < stream.len() {
        let n = sizes.next().expect("sizes ran out").clamp(1, stream.len() - pos);
        buf.extend_from_slice(&stream[pos..pos + n]);
        pos += n;
        while let Some(frame) = decoder.decode(&mut buf).expect("valid stream") {
            out.push(frame);
        }
    }
    assert!(buf.is_empty(), "{} bytes left undecoded", buf.len());
    out
}

fn assert_same(stream: &Stream, got: &[Bytes], how: &str) {
    assert_eq!(got.len(), stream.frames.len(), "{}: frame count ({how})", stream.label);
    for (i, (g, want)) in got.iter().zip(&stream.frames).enumerate() {
        assert_eq!(g, want, "{}: frame {i} differs ({how})", stream.label);
    }
}

#[test]
fn whole_stream_at_once() {
    for s in streams() {
        assert_same(s, &feed(&s.bytes, std::iter::repeat(usize::MAX)), "one chunk");
    }
}

#[test]
fn one_byte_at_a_time() {
    for s in streams() {
        assert_same(s, &feed(&s.bytes, std::iter::repeat(1)), "1-byte chunks");
    }
}

#[test]
fn splits_inside_every_length_prefix() {
    for s in streams() {
        for &start in &s.starts {
            for k in 1..LEN_PREFIX {
                let cut = start + k;
                let sizes = [cut, usize::MAX].into_iter();
                assert_same(s, &feed(&s.bytes, sizes), &format!("split at {cut}"));
            }
        }
    }
}

#[test]
fn every_small_chunk_size() {
    for s in streams() {
        for n in 1..=16 {
            assert_same(s, &feed(&s.bytes, std::iter::repeat(n)), &format!("{n}-byte chunks"));
        }
    }
}

proptest! {
    #![proptest_config(ProptestConfig::with_cases(128))]

    /// Random chunk patterns, mixing tiny and large reads, cycled over each stream.
    #[test]
    fn random_chunk_sizes(pattern in prop::collection::vec(prop_oneof![1usize..=5, 1usize..=300], 1..64)) {
        for s in streams() {
            let got = feed(&s.bytes, pattern.iter().copied().cycle());
            prop_assert_eq!(&got, &s.frames, "{} with pattern {:?}", s.label, pattern);
        }
    }
}
