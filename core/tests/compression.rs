//! Curator's gzip framing of node data (`GzipCompressionProvider`, on for
//! every read and write with Curator 5.8's `enableCompression()`): the codec
//! against bytes standard encoders wrote (Curator itself, GNU gzip, Python),
//! truncated and corrupted input, and the recipes that read and write it.

mod transcript;

use std::borrow::Cow;

use zoolock_core::gzip::{Compression, GzipError, MAX_DECOMPRESSED, compress, decode, decompress, is_gzip};
use zoolock_core::wire::Bytes;

/// Curator 5.4.0's `GzipCompressionProvider.compress` (Java 17) of
/// `__REVOKE__`, of nothing, of the count 7 and of a lock node's address.
const CURATOR_REVOKE: [u8; 30] = [
    0x1f, 0x8b, 0x08, 0x00, 0x00, 0x00, 0x00, 0x00, 0x00, 0x00, 0x8b, 0x8f, 0x0f, 0x72, 0x0d, 0xf3, 0xf7, 0x76, 0x8d,
    0x8f, 0x07, 0x00, 0xea, 0x2c, 0x89, 0xfb, 0x0a, 0x00, 0x00, 0x00,
];
const CURATOR_EMPTY: [u8; 20] = [
    0x1f, 0x8b, 0x08, 0x00, 0x00, 0x00, 0x00, 0x00, 0x00, 0x00, 0x03, 0x00, 0x00, 0x00, 0x00, 0x00, 0x00, 0x00, 0x00,
    0x00,
];
const CURATOR_COUNT_7: [u8; 24] = [
    0x1f, 0x8b, 0x08, 0x00, 0x00, 0x00, 0x00, 0x00, 0x00, 0x00, 0x63, 0x60, 0x60, 0x60, 0x07, 0x00, 0xbf, 0x4a, 0x20,
    0xbf, 0x04, 0x00, 0x00, 0x00,
];
const CURATOR_ADDR: [u8; 28] = [
    0x1f, 0x8b, 0x08, 0x00, 0x00, 0x00, 0x00, 0x00, 0x00, 0x00, 0x33, 0x34, 0xd0, 0x33, 0xd4, 0x33, 0xd2, 0x33, 0x06,
    0x00, 0x61, 0x5d, 0x14, 0xf6, 0x08, 0x00, 0x00, 0x00,
];
/// `gzip -c REVOKE` (GNU gzip 1.13): file name and mtime in the header.
const GNU_GZIP_REVOKE: [u8; 37] = [
    0x1f, 0x8b, 0x08, 0x08, 0xfc, 0xf8, 0x07, 0x6b, 0x00, 0x03, 0x52, 0x45, 0x56, 0x4f, 0x4b, 0x45, 0x00, 0x8b, 0x8f,
    0x0f, 0x72, 0x0d, 0xf3, 0xf7, 0x76, 0x8d, 0x8f, 0x07, 0x00, 0xea, 0x2c, 0x89, 0xfb, 0x0a, 0x00, 0x00, 0x00,
];
/// Python's `gzip.compress(b"__REVOKE__", mtime=0)`.
const PYTHON_REVOKE: [u8; 30] = [
    0x1f, 0x8b, 0x08, 0x00, 0x00, 0x00, 0x00, 0x00, 0x02, 0x03, 0x8b, 0x8f, 0x0f, 0x72, 0x0d, 0xf3, 0xf7, 0x76, 0x8d,
    0x8f, 0x07, 0x00, 0xea, 0x2c, 0x89, 0xfb, 0x0a, 0x00, 0x00, 0x00,
];
/// `__REVOKE__` with every optional header field (extra `abc`, comment
/// `note`, header CRC), built with Python's zlib and checked by its
/// `gzip.decompress`.
const ALL_FIELDS_REVOKE: [u8; 42] = [
    0x1f, 0x8b, 0x08, 0x16, 0x00, 0x00, 0x00, 0x00, 0x02, 0x03, 0x03, 0x00, 0x61, 0x62, 0x63, 0x6e, 0x6f, 0x74, 0x65,
    0x00, 0x1b, 0x31, 0x8b, 0x8f, 0x0f, 0x72, 0x0d, 0xf3, 0xf7, 0x76, 0x8d, 0x8f, 0x07, 0x00, 0xea, 0x2c, 0x89, 0xfb,
    0x0a, 0x00, 0x00, 0x00,
];

fn ok(data: &[u8]) -> Vec<u8> {
    decompress(data, MAX_DECOMPRESSED).unwrap()
}

#[test]
fn reads_what_standard_encoders_write() {
    assert_eq!(ok(&CURATOR_REVOKE), b"__REVOKE__");
    assert_eq!(ok(&CURATOR_EMPTY), b"");
    assert_eq!(ok(&CURATOR_COUNT_7), [0, 0, 0, 7]);
    assert_eq!(ok(&CURATOR_ADDR), b"10.1.2.3");
    assert_eq!(ok(&GNU_GZIP_REVOKE), b"__REVOKE__");
    assert_eq!(ok(&PYTHON_REVOKE), b"__REVOKE__");
    assert_eq!(ok(&ALL_FIELDS_REVOKE), b"__REVOKE__");
}

#[test]
fn writes_what_it_reads_with_java_header() {
    // Curator's empty bytes but for the OS byte Java 16+ writes.
    let mut empty = CURATOR_EMPTY;
    empty[9] = 0xff;
    assert_eq!(compress(b""), empty);
    let big: Vec<u8> = (0..200_000u32).map(|i| (i % 251) as u8 ^ (i / 997) as u8).collect();
    for data in [&b"__REVOKE__"[..], &[0, 0, 0, 7], b"10.1.2.3", &big] {
        let framed = compress(data);
        assert_eq!(framed[..10], [0x1f, 0x8b, 8, 0, 0, 0, 0, 0, 0, 0xff]);
        assert_eq!(ok(&framed), data);
        assert_eq!(Compression::Gzip.encode(Bytes::copy_from_slice(data)), framed);
    }
    assert_eq!(Compression::None.encode(Bytes::from_static(b"x")), Bytes::from_static(b"x"));
}

#[test]
fn plain_data_is_not_gzip() {
    for plain in [&b""[..], b"__REVOKE__", &[0, 0, 0, 7], b"10.1.2.3", &[0x1f, 0x8b, 7, 0]] {
        assert!(!is_gzip(plain));
        assert_eq!(decode(plain, 16), Ok(Cow::Borrowed(plain)));
    }
    assert_eq!(decompress(b"__REVOKE__", 16), Err(GzipError::NotGzip));
    assert_eq!(decompress(&[0x1f, 0x8b, 7, 0], 16), Err(GzipError::NotGzip));
    assert_eq!(decode(&CURATOR_REVOKE, 16).unwrap(), &b"__REVOKE__"[..]);
}

#[test]
fn every_truncation_fails() {
    for source in [&CURATOR_REVOKE[..], &GNU_GZIP_REVOKE, &ALL_FIELDS_REVOKE, &CURATOR_EMPTY] {
        for len in 0..source.len() {
            let result = decompress(&source[..len], MAX_DECOMPRESSED);
            assert!(result.is_err(), "{len} of {} bytes: {result:?}", source.len());
        }
    }
    assert_eq!(decompress(&CURATOR_REVOKE[..5], 16), Err(GzipError::Truncated));
    assert_eq!(decompress(&[0x1f, 0x8b], 16), Err(GzipError::Truncated));
    assert_eq!(decompress(&[], 16), Err(GzipError::Truncated));
}

#[test]
fn corrupted_bytes_never_decode_to_other_data() {
    for i in 0..CURATOR_REVOKE.len() {
        for flip in [0x01, 0x80, 0xff] {
            let mut bytes = CURATOR_REVOKE;
            bytes[i] ^= flip;
            let result = decompress(&bytes, MAX_DECOMPRESSED);
            // Unchecked: FTEXT, mtime, extra flags, OS, the padding bits
            // after the last deflate block. Magic, method, the stream and
            // the trailer are.
            if !(3..22).contains(&i) {
                assert!(result.is_err(), "byte {i} ^ {flip:#x}: {result:?}");
            } else {
                assert!(result.is_err() || result.as_deref() == Ok(b"__REVOKE__"), "byte {i}: {result:?}");
            }
        }
    }
    let mut bad_crc = CURATOR_REVOKE;
    bad_crc[22] ^= 1;
    assert_eq!(decompress(&bad_crc, 16), Err(GzipError::Checksum));
    let mut reserved = CURATOR_REVOKE;
    reserved[3] = 0x20;
    assert_eq!(decompress(&reserved, 16), Err(GzipError::Header));
    let mut header_crc = ALL_FIELDS_REVOKE;
    header_crc[20] ^= 1;
    assert_eq!(decompress(&header_crc, 16), Err(GzipError::Header));
    let mut trailing = CURATOR_REVOKE.to_vec();
    trailing.splice(22..22, [0]);
    assert_eq!(decompress(&trailing, 16), Err(GzipError::Corrupt));
}

#[test]
fn output_is_bounded_before_inflating() {
    assert_eq!(decompress(&CURATOR_REVOKE, 9), Err(GzipError::TooLarge { size: 10, limit: 9 }));
    assert_eq!(ok(&CURATOR_REVOKE[..]), b"__REVOKE__");
    // A stream that inflates past the length its trailer declares.
    let mut short = CURATOR_REVOKE;
    short[26] = 4;
    assert_eq!(decompress(&short, 16), Err(GzipError::Corrupt));
    let mut long = CURATOR_REVOKE;
    long[26] = 11;
    assert_eq!(decompress(&long, 16), Err(GzipError::Corrupt));
    // 16 MiB of zeros in 16 KiB: refused by the limit, nothing inflated.
    let bomb = compress(&vec![0; 16 << 20]);
    assert!(bomb.len() < 20_000);
    assert_eq!(decompress(&bomb, MAX_DECOMPRESSED), Err(GzipError::TooLarge { size: 16 << 20, limit: 1 << 20 }));
}

// ---- the recipes ------------------------------------------------------------------------

use transcript::{Answer, Harness, acquired, at, kids, other};
use zoolock_core::recipes::{SharedCount, count_value};
use zoolock_core::wire::{EventType, Request, Response, Stat};
use zoolock_core::{
    Participant, Recipe, RecipeEvent, ZkPath,
    recipes::{LockConfig, LockKind, Mutex, OpPlan, Participants, Revoker},
};

const BASE: &str = "/traces/revocation";

fn leak(bytes: Vec<u8>) -> &'static [u8] {
    Box::leak(bytes.into_boxed_slice())
}

fn mutex(compression: Compression, revocable: bool) -> Harness<Mutex> {
    let config = LockConfig::new(1)
        .with_plan(OpPlan::Curator)
        .with_data(Bytes::from_static(b"127.0.0.1"))
        .with_compression(compression);
    let mut h = Harness::new(Mutex::new(ZkPath::new(BASE).unwrap(), config));
    if revocable {
        h.recipe.make_revocable().unwrap();
    }
    h
}

/// The data of every create2 the harness saw.
fn created_data(h: &Harness<impl Recipe>) -> Vec<Bytes> {
    let data = |op: &zoolock_core::RecipeOp| match op.op.request() {
        Request::Create2(c) => c.data.clone(),
        _ => None,
    };
    h.sent_ops.iter().filter_map(data).collect()
}

/// A revocable holder takes `__REVOKE__` plain or gzipped (Curator with
/// compression writes the latter); other gzipped data, or gzip that does not
/// decode, is no revocation.
#[test]
fn revocable_holder_accepts_a_gzipped_revoke() {
    let mut h = mutex(Compression::None, true);
    h.run(|m| m.acquire(at(0), None)).unwrap();
    let node = h.create_making_parents(1, "create2 /traces/revocation/_c_<uuid>-lock- [ES]", 1, 1);
    h.answer(at(6), "getData /traces/revocation/_c_<uuid>-lock-0000000000 w", Answer::Data(b""));
    h.answer(at(7), "getChildren2 /traces/revocation", kids(&[transcript::name(&node)]));
    assert_eq!(h.events(), vec![acquired(&node, 1000)]);

    let mut corrupt = CURATOR_REVOKE;
    corrupt[23] ^= 1;
    let not_revoke = [leak(compress(b"__REVOKE_")), leak(compress(b"__REVOKE__!")), leak(corrupt.to_vec())];
    for (t, data) in (8..).step_by(2).zip(not_revoke) {
        h.watch(at(t), EventType::NODE_DATA_CHANGED, &node);
        h.answer(at(t + 1), "getData /traces/revocation/_c_<uuid>-lock-0000000000 w", Answer::Data(data));
        assert_eq!(h.events(), vec![], "{data:?}");
    }
    for (t, data) in [(20, &CURATOR_REVOKE[..]), (22, &GNU_GZIP_REVOKE), (24, b"__REVOKE__")] {
        h.watch(at(t), EventType::NODE_DATA_CHANGED, &node);
        h.answer(at(t + 1), "getData /traces/revocation/_c_<uuid>-lock-0000000000 w", Answer::Data(data));
        assert_eq!(h.events(), vec![RecipeEvent::RevocationRequested]);
    }
}

/// With `Compression::Gzip`, lock nodes carry gzipped data, revocable ones
/// gzipped emptiness (as Curator compresses an empty array); without, as given.
#[test]
fn lock_node_data_follows_the_compression_setting() {
    for (compression, revocable, expected) in [
        (Compression::None, false, &b"127.0.0.1"[..]),
        (Compression::None, true, b""),
        (Compression::Gzip, false, b"127.0.0.1"),
        (Compression::Gzip, true, b""),
    ] {
        let mut h = mutex(compression, revocable);
        h.run(|m| m.acquire(at(0), None)).unwrap();
        h.sent();
        let [data] = created_data(&h).try_into().expect("one create");
        let gzipped = compression == Compression::Gzip;
        assert_eq!(is_gzip(&data), gzipped, "{compression:?} revocable={revocable}");
        let plain = if gzipped { decompress(&data, 64).unwrap() } else { data.to_vec() };
        assert_eq!(plain, expected);
    }
}

/// The revoker writes `__REVOKE__` plain by default, gzipped when asked.
#[test]
fn revoker_writes_the_configured_framing() {
    let node = ZkPath::new("/l/_c_x-lock-0000000000").unwrap();
    for (compression, gzipped) in [(Compression::None, false), (Compression::Gzip, true)] {
        let mut revoker = Revoker::with_compression(node.clone(), compression);
        let op = revoker.poll_op().expect("the setData");
        let Request::SetData(set) = op.op.request() else { panic!("{:?}", op.op) };
        let data = set.data.clone().unwrap_or_default();
        assert_eq!(is_gzip(&data), gzipped);
        assert_eq!(decode(&data, 16).unwrap(), &b"__REVOKE__"[..]);
    }
    let mut plain = Revoker::new(node);
    let op = plain.poll_op().expect("the setData");
    assert!(matches!(op.op.request(), Request::SetData(s) if s.data.as_deref() == Some(&b"__REVOKE__"[..])));
}

/// Counts: 4 plain bytes (even ones that start like gzip) or gzip of 4 bytes.
#[test]
fn count_values_plain_or_gzipped() {
    assert_eq!(count_value(&[0, 0, 0, 7]), Some(7));
    assert_eq!(count_value(&CURATOR_COUNT_7), Some(7));
    assert_eq!(count_value(&[0x1f, 0x8b, 8, 0]), Some(0x1f8b_0800));
    assert_eq!(count_value(&compress(&[0, 0, 0, 0, 7])), None);
    assert_eq!(count_value(&CURATOR_COUNT_7[..20]), None);
    assert_eq!(count_value(b""), None);
}

/// A shared count reads Curator's gzipped value, reports gzip that does not
/// hold an int as malformed, and writes gzip when configured.
#[test]
fn shared_count_reads_and_writes_gzip() {
    let config = LockConfig::new(1).with_compression(Compression::Gzip);
    let mut count = SharedCount::new(ZkPath::new("/app/n").unwrap(), 5, config);
    let mut ops = std::iter::from_fn(|| count.poll_op()).collect::<Vec<_>>().into_iter();
    let (create, read) = (ops.next().unwrap(), ops.next().unwrap());
    let Request::Create2(c) = create.op.request() else { panic!("{:?}", create.op) };
    assert_eq!(decompress(c.data.as_deref().unwrap(), 4).unwrap(), [0, 0, 0, 5]);
    count.handle_reply(at(1), create.id, Ok(Response::Empty));
    let stat = |version| Stat { version, mzxid: i64::from(version), ..Stat::default() };
    let data = Some(Bytes::from_static(&CURATOR_COUNT_7));
    count.handle_reply(at(1), read.id, Ok(Response::Data { data, stat: stat(3) }));
    assert_eq!(count.poll_event().map(RecipeEvent::from), Some(RecipeEvent::Count { value: 7, version: 3 }));

    count.handle_watch(
        at(2),
        &zoolock_core::WatchEvent { event_type: EventType::NODE_DATA_CHANGED, path: "/app/n".into() },
    );
    let reread = count.poll_op().expect("a re-read");
    let mut corrupt = CURATOR_COUNT_7;
    corrupt[17] ^= 1;
    let data = Some(Bytes::copy_from_slice(&corrupt));
    count.handle_reply(at(3), reread.id, Ok(Response::Data { data, stat: stat(4) }));
    assert_eq!(count.poll_event().map(RecipeEvent::from), Some(RecipeEvent::CountMalformed { len: 24 }));
    assert_eq!(count.value(), Some((7, 3)));

    count.set(at(4), 9);
    let write = count.poll_op().expect("the setData");
    let Request::SetData(set) = write.op.request() else { panic!("{:?}", write.op) };
    assert_eq!(count_value(set.data.as_deref().unwrap()), Some(9));
    assert!(is_gzip(set.data.as_deref().unwrap()));
}

/// Participants' data is reported decompressed; gzip that does not decode
/// is reported as it is.
#[test]
fn participants_data_is_decompressed() {
    let (a, b, c) = (other(0xa, "lock-", 0), other(0xb, "lock-", 1), other(0xc, "lock-", 2));
    let mut h = Harness::new(Participants::of(LockKind::Mutex, ZkPath::new(BASE).unwrap()).unwrap());
    h.answer(at(1), "getChildren2", kids(&[c.as_str(), b.as_str(), a.as_str()]));
    let truncated = &CURATOR_ADDR[..27];
    h.answer(at(2), "getData", Answer::Data(&CURATOR_ADDR));
    h.answer(at(2), "getData", Answer::Data(b"10.0.0.2"));
    h.answer(at(2), "getData", Answer::Data(leak(truncated.to_vec())));
    let data = |bytes: &[u8]| Some(Bytes::copy_from_slice(bytes));
    assert_eq!(
        h.events(),
        vec![RecipeEvent::Participants(vec![
            Participant {
                path: format!("{BASE}/{a}"),
                data: data(b"10.1.2.3"),
                stat: Some(zoolock_core::wire::Stat::default())
            },
            Participant {
                path: format!("{BASE}/{b}"),
                data: data(b"10.0.0.2"),
                stat: Some(zoolock_core::wire::Stat::default())
            },
            Participant {
                path: format!("{BASE}/{c}"),
                data: data(truncated),
                stat: Some(zoolock_core::wire::Stat::default())
            },
        ])]
    );
}
