//! Codec benchmarks on the lock recipe's hot paths: decoding a large
//! getChildren2 reply of Curator-style lock nodes, and encoding / decoding the
//! create2 request that makes a lock node.

use std::hint::black_box;

use criterion::{Criterion, Throughput, criterion_main};
use zoolock_wire::{
    Acl, Bytes, BytesMut, CreateMode, CreateRequest, DEFAULT_MAX_FRAME_LEN, Encode, ErrorCode, FrameDecoder, OpCode,
    ReplyHeader, Request, RequestFrame, Response, ServerMessage, Stat, Xid, encode_frame,
};

/// Children in the getChildren2 reply.
const CHILDREN: usize = 10_000;

/// A deterministic v4-looking UUID (8-4-4-4-12 lowercase hex) from a seed.
fn uuid(seed: u64) -> String {
    // splitmix64, twice, for 128 bits.
    let mix = |mut z: u64| {
        z = z.wrapping_add(0x9e37_79b9_7f4a_7c15);
        z = (z ^ (z >> 30)).wrapping_mul(0xbf58_476d_1ce4_e5b9);
        z = (z ^ (z >> 27)).wrapping_mul(0x94d0_49bb_1331_11eb);
        z ^ (z >> 31)
    };
    let hi = mix(seed.wrapping_mul(2));
    let lo = mix(seed.wrapping_mul(2) + 1);
    let hi = (hi & !0xf000) | 0x4000; // version 4
    let lo = (lo & !(0xc << 60)) | (0x8 << 60); // variant 10xx
    format!(
        "{:08x}-{:04x}-{:04x}-{:04x}-{:012x}",
        hi >> 32,
        (hi >> 16) & 0xffff,
        hi & 0xffff,
        lo >> 48,
        lo & 0xffff_ffff_ffff
    )
}

/// A Curator lock node name: `_c_<uuid>-lock-<10 digits>`.
fn lock_node(i: usize) -> String {
    format!("_c_{}-lock-{:010}", uuid(i as u64), 12_345 + i)
}

/// The payload of a getChildren2 reply (xid 7) listing `CHILDREN` lock nodes.
fn children2_reply() -> Bytes {
    let children: Vec<String> = (0..CHILDREN).map(lock_node).collect();
    assert_eq!(children[0].len(), 55);
    let msg = ServerMessage::Reply {
        header: ReplyHeader { xid: Xid(7), zxid: 0x1_0000_2a3b, err: ErrorCode::OK },
        response: Some(Response::Children2 {
            children,
            stat: Stat {
                czxid: 2,
                mzxid: 2,
                pzxid: 0x1_0000_2a3b,
                cversion: 20_000,
                num_children: 10_000,
                ..Stat::default()
            },
        }),
    };
    msg.to_bytes()
}

/// The create2 request that makes a lock node.
fn create2_frame() -> RequestFrame {
    RequestFrame::new(
        Xid(42),
        Request::Create2(CreateRequest {
            path: format!("/locks/job/_c_{}-lock-", uuid(99)),
            data: Some(Bytes::from_static(b"127.0.0.1")),
            acl: Acl::open_unsafe(),
            flags: CreateMode::EPHEMERAL_SEQUENTIAL,
        }),
    )
}

fn decode_children2(c: &mut Criterion) {
    let payload = children2_reply();
    let lookup = |xid: Xid| (xid == Xid(7)).then_some(OpCode::GET_CHILDREN2);
    // Sanity: the payload fits a default frame and decodes to 10,000 names.
    assert!(payload.len() <= DEFAULT_MAX_FRAME_LEN);
    match ServerMessage::decode(&payload, lookup) {
        Ok(ServerMessage::Reply { response: Some(Response::Children2 { children, .. }), .. }) => {
            assert_eq!(children.len(), CHILDREN);
        }
        other => panic!("unexpected decode result: {other:?}"),
    }

    let mut group = c.benchmark_group("get_children2_reply_10k");
    group.throughput(Throughput::Elements(CHILDREN as u64));
    group.bench_function("decode/elements", |b| b.iter(|| ServerMessage::decode(black_box(&payload), lookup)));
    group.throughput(Throughput::Bytes(payload.len() as u64));
    group.bench_function("decode/bytes", |b| b.iter(|| ServerMessage::decode(black_box(&payload), lookup)));
    group.finish();
}

fn create2_request(c: &mut Criterion) {
    let frame = create2_frame();
    let mut wire = BytesMut::new();
    encode_frame(&frame, DEFAULT_MAX_FRAME_LEN, &mut wire).expect("fits");
    let framed_len = wire.len();
    let payload = FrameDecoder::default().decode(&mut wire).expect("valid").expect("complete");
    assert_eq!(RequestFrame::decode(&payload).as_ref(), Ok(&frame));

    let mut group = c.benchmark_group("create2_request");
    group.throughput(Throughput::Bytes(framed_len as u64));
    let mut buf = BytesMut::with_capacity(framed_len);
    group.bench_function("encode_frame", |b| {
        b.iter(|| {
            buf.clear();
            encode_frame(black_box(&frame), DEFAULT_MAX_FRAME_LEN, &mut buf).expect("fits");
            black_box(buf.len())
        })
    });
    group.throughput(Throughput::Bytes(payload.len() as u64));
    group.bench_function("decode", |b| b.iter(|| RequestFrame::decode(black_box(&payload))));
    group.finish();

    // Keep the encoded size visible next to the figures.
    assert_eq!(frame.encoded_len() + 4, framed_len);
}

/// Every codec benchmark (what `criterion_group!` would generate, minus the
/// undocumented `pub fn` the workspace lints refuse).
fn benches() {
    let mut criterion = Criterion::default().configure_from_args();
    decode_children2(&mut criterion);
    create2_request(&mut criterion);
}

criterion_main!(benches);
