//! Golden tests over the recorded Curator 5.4.0 corpus in `traces/`: every
//! frame decodes completely, re-encodes to the identical bytes, and agrees with
//! the recording proxy's own convenience decode.

use std::path::{Path, PathBuf};

use bytes::BytesMut;
use serde_json::{Map, Value};
use zoolock_conformance::json::hex64;
use zoolock_conformance::trace::jsonl_files_under;
use zoolock_conformance::{DecodedFrame, Direction, Frame, Scenario, StreamDecoder, Trace};
use zoolock_wire::{Encode, ServerMessage};

fn traces_root() -> PathBuf {
    Path::new(env!("CARGO_MANIFEST_DIR")).join("traces")
}

fn corpus_files() -> Vec<PathBuf> {
    jsonl_files_under(&traces_root()).expect("walk traces/")
}

/// Re-encodes the record inside `decoded` with its own `Encode` impl.
fn reencode(decoded: &DecodedFrame) -> BytesMut {
    let mut buf = BytesMut::new();
    let expected_len = match decoded {
        DecodedFrame::ConnectRequest(r) => {
            r.encode(&mut buf);
            r.encoded_len()
        }
        DecodedFrame::ConnectResponse(r) => {
            r.encode(&mut buf);
            r.encoded_len()
        }
        DecodedFrame::Request(r) => {
            r.encode(&mut buf);
            r.encoded_len()
        }
        DecodedFrame::Server { message, .. } => {
            message.encode(&mut buf);
            message.encoded_len()
        }
    };
    assert_eq!(buf.len(), expected_len, "encoded_len disagrees with encode for {decoded:?}");
    buf
}

/// Compares one proxy convenience field, when present, with our value.
/// Returns whether a comparison happened.
fn check_field(frame: &Frame, file: &Path, key: &str, ours: Value) -> bool {
    match frame.fields.get(key) {
        None => false,
        Some(theirs) => {
            assert_eq!(theirs, &ours, "{}:{}: field {key:?}", file.display(), frame.line);
            true
        }
    }
}

/// Checks every convenience field the proxy wrote for this frame and returns
/// how many were compared.
fn check_convenience(frame: &Frame, file: &Path, decoded: &DecodedFrame) -> usize {
    let f = |key: &str, ours: Value| usize::from(check_field(frame, file, key, ours));
    let at = format!("{}:{}", file.display(), frame.line);
    match decoded {
        DecodedFrame::ConnectRequest(r) => {
            assert_eq!(frame.fields.get("connect"), Some(&Value::Bool(true)), "{at}");
            f("protocolVersion", r.protocol_version.into())
                + f("lastZxidSeen", r.last_zxid_seen.into())
                + f("timeOut", r.timeout_ms.into())
                + f("sessionId", hex64(r.session_id).into())
                + f("passwdLen", r.passwd.as_ref().map_or(Value::Null, |p| p.len().into()))
                + f("readOnly", r.read_only.into())
        }
        DecodedFrame::ConnectResponse(r) => {
            assert_eq!(frame.fields.get("connect"), Some(&Value::Bool(true)), "{at}");
            f("protocolVersion", r.protocol_version.into())
                + f("timeOut", r.timeout_ms.into())
                + f("sessionId", hex64(r.session_id).into())
                + f("passwdLen", r.passwd.as_ref().map_or(Value::Null, |p| p.len().into()))
                + f("readOnly", r.read_only.into())
        }
        DecodedFrame::Request(r) => {
            assert!(!frame.fields.contains_key("connect"), "{at}: connect flag on a later frame");
            // The proxy records a path exactly when the body starts with one.
            assert_eq!(frame.fields.contains_key("path"), r.request.path().is_some(), "{at}: path presence");
            f("xid", r.header.xid.0.into())
                + f("opcode", r.header.op.0.into())
                + f("op", r.header.op.name().into())
                + f("path", r.request.path().into())
        }
        DecodedFrame::Server { message, reply_to } => {
            assert!(!frame.fields.contains_key("connect"), "{at}: connect flag on a later frame");
            let header = message.header();
            let reply_to = match message {
                ServerMessage::Notification { .. } => Value::from("watch-event"),
                ServerMessage::Reply { .. } => reply_to.expect("replies know their request").name().into(),
            };
            f("xid", header.xid.0.into())
                + f("zxid", header.zxid.into())
                + f("err", header.err.0.into())
                + f("reply_to", reply_to)
        }
    }
}

#[derive(Default)]
struct Totals {
    files: usize,
    frames: usize,
    fields_checked: usize,
}

fn check_trace(trace: &Trace, totals: &mut Totals) {
    let file = &trace.path;
    let mut decoder = StreamDecoder::new();
    let (mut c2s, mut s2c) = (0u64, 0u64);
    for frame in trace.frames() {
        let decoded = decoder
            .decode(frame.dir, &frame.payload)
            .unwrap_or_else(|e| panic!("{}:{}: {e}", file.display(), frame.line));
        assert_eq!(decoded.direction(), frame.dir);
        let bytes = reencode(&decoded);
        assert_eq!(
            hex::encode(&bytes),
            hex::encode(&frame.payload),
            "{}:{}: re-encoding differs",
            file.display(),
            frame.line
        );
        totals.fields_checked += check_convenience(frame, file, &decoded);
        match frame.dir {
            Direction::C2s => c2s += 1,
            Direction::S2c => s2c += 1,
        }
        totals.frames += 1;
    }
    let close = trace.close().unwrap_or_else(|| panic!("{}: no close event", file.display()));
    assert_eq!(close.frames_c2s, Some(c2s), "{}: frames_c2s", file.display());
    assert_eq!(close.frames_s2c, Some(s2c), "{}: frames_s2c", file.display());
    assert_eq!(close.partial_c2s, None);
    assert_eq!(close.partial_s2c, None);
    totals.files += 1;
}

#[test]
fn every_frame_decodes_and_reencodes_identically() {
    let mut totals = Totals::default();
    for path in corpus_files() {
        let trace = Trace::load(&path).unwrap_or_else(|e| panic!("{e}"));
        check_trace(&trace, &mut totals);
    }
    assert!(totals.files >= 20, "only {} trace files", totals.files);
    assert!(totals.frames >= 500, "only {} frames", totals.frames);
    // Nearly every frame carries 4+ convenience fields.
    assert!(totals.fields_checked >= 4 * totals.frames, "only {} fields checked", totals.fields_checked);
}

#[test]
fn corpus_has_every_scenario() {
    let scenarios = Scenario::load_all(traces_root().join("curator-5.4.0")).unwrap_or_else(|e| panic!("{e}"));
    let names: Vec<&str> = scenarios.iter().map(|s| s.name.as_str()).collect();
    assert!(scenarios.len() >= 11, "only {} scenarios: {names:?}", scenarios.len());
    for expected in zoolock_conformance::trace::CURATOR_SCENARIOS {
        assert!(names.contains(&expected), "missing scenario {expected}");
    }
    let frames: usize = scenarios.iter().flat_map(|s| &s.traces).map(|t| t.frames().count()).sum();
    assert!(frames >= 500, "only {frames} frames");
    for s in &scenarios {
        let summary = s.summary.as_ref().unwrap_or_else(|| panic!("{}: no summary.json", s.name));
        assert_eq!(summary.get("scenario").and_then(Value::as_str), Some(s.name.as_str()));
        // The listed files are exactly the traces found.
        let listed: Vec<&str> =
            summary.get("files").and_then(Value::as_array).into_iter().flatten().filter_map(Value::as_str).collect();
        let found: Vec<String> =
            s.traces.iter().map(|t| t.path.file_name().unwrap().to_string_lossy().into_owned()).collect();
        assert_eq!(listed, found, "{}: summary files", s.name);
        for t in &s.traces {
            check_header(s, t);
        }
    }
}

/// `A.conn2.jsonl` in `rwlock/` has header client `rwlock/A` and conn 2.
fn check_header(s: &Scenario, t: &Trace) {
    let stem = t.path.file_stem().unwrap().to_string_lossy().into_owned();
    let (client, conn) = stem.split_once(".conn").unwrap_or_else(|| panic!("odd file name {stem}"));
    assert_eq!(t.header.client.as_deref(), Some(format!("{}/{client}", s.name).as_str()), "{}", t.path.display());
    assert_eq!(t.header.conn, Some(conn.parse().unwrap()), "{}", t.path.display());
    assert_eq!(t.header.server.as_deref(), Some("zookeeper 3.8.0"));
    assert!(t.header.t0_unix_us.is_some());
    let fields: &Map<String, Value> = &t.header.fields;
    assert_eq!(fields.get("format"), Some(&Value::from("zk-trace/1")));
}
