//! Session-level replays of the Curator 5.4.0 corpus: a `zoolock_core::Session`
//! is driven through recorded connections (see `zoolock_conformance::replay`)
//! and must write the same frames as the recorded client, structurally.
//!
//! * every fresh session that ends normally (handshake, requests,
//!   checkWatches, closeSession);
//! * `mutex-reconnect/B`: a dropped connection, then a same-session reconnect
//!   with setWatches;
//! * `session-expiry-server/A`: a blackholed connection given up at the read
//!   timeout, then the server's expired answer;
//! * `session-expiry/A`: a cut connection, then expiry by the session's own
//!   timer while every reconnect is refused.
//!
//! Each replay runs twice: server bytes whole, and split at random points
//! (the seed is printed on failure; `ZOOLOCK_REPLAY_SEED` overrides it).

use std::path::{Path, PathBuf};
use std::time::Duration;

use zoolock_conformance::replay::{
    Chunking, MismatchKind, ReplayConfig, ReplayError, ReplayReport, SessionReplay, replay_session,
};
use zoolock_conformance::trace::jsonl_files_under;
use zoolock_conformance::{Direction, Trace};
use zoolock_core::{ConnectionState, Op, RequestError, SessionEvent, SessionStatus, WatchEvent, WatcherId, ZkPath};
use zoolock_wire::{ConnectRequest, EventType, OpCode, RequestFrame};

const WATCHER: WatcherId = WatcherId(1);

fn traces_root() -> PathBuf {
    Path::new(env!("CARGO_MANIFEST_DIR")).join("traces/curator-5.4.0")
}

fn load(rel: &str) -> Trace {
    let path = traces_root().join(rel);
    Trace::load(&path).unwrap_or_else(|e| panic!("{e}"))
}

fn base_seed() -> u64 {
    std::env::var("ZOOLOCK_REPLAY_SEED").ok().and_then(|s| s.parse().ok()).unwrap_or(0x5eed_2026)
}

/// Whole frames, then random chunks with a seed derived from `salt`.
fn chunkings(salt: u64) -> [Chunking; 2] {
    [Chunking::Whole, Chunking::Random { seed: base_seed() ^ salt.wrapping_mul(0x9e37_79b9_7f4a_7c15) }]
}

fn config(chunking: Chunking) -> ReplayConfig {
    ReplayConfig::new().with_chunking(chunking).with_seed(7).with_watcher(WATCHER)
}

/// Runs `f`, panicking with the chunking (and so the seed) on failure.
fn run<T>(what: &str, chunking: Chunking, f: impl FnOnce() -> Result<T, ReplayError>) -> T {
    f().unwrap_or_else(|e| panic!("{what} ({chunking:?}): {e}"))
}

/// The reports of replaying client `name`'s only connection
/// (`{name}.conn1.jsonl`) under each of `chunkings(salt)`.
fn single_connection_replays(name: &str, salt: u64) -> Vec<ReplayReport> {
    let trace = load(&format!("{name}.conn1.jsonl"));
    chunkings(salt)
        .into_iter()
        .map(|chunking| run(name, chunking, || replay_session(std::slice::from_ref(&trace), config(chunking))))
        .collect()
}

fn first_connect(trace: &Trace) -> ConnectRequest {
    let frame = trace.frames().find(|f| f.dir == Direction::C2s).expect("a client frame");
    ConnectRequest::decode(&frame.payload).expect("a ConnectRequest")
}

fn has_close_session(trace: &Trace) -> bool {
    trace
        .frames()
        .filter(|f| f.dir == Direction::C2s)
        .skip(1)
        .any(|f| RequestFrame::decode(&f.payload).is_ok_and(|r| r.header.op == OpCode::CLOSE_SESSION))
}

fn watch_events(report: &ReplayReport) -> Vec<(WatcherId, WatchEvent)> {
    report
        .events
        .iter()
        .filter_map(|e| match &e.event {
            SessionEvent::Watch { watcher, event } => Some((*watcher, event.clone())),
            _ => None,
        })
        .collect()
}

/// Every submitted request got exactly one reply, and it came from the server.
fn assert_all_answered_by_server(what: &str, report: &ReplayReport) {
    assert!(report.unanswered.is_empty(), "{what}: unanswered {:?}", report.unanswered);
    for s in &report.submitted {
        let replies: Vec<_> = report
            .events
            .iter()
            .filter(|e| matches!(&e.event, SessionEvent::Reply { id, .. } if *id == s.id))
            .collect();
        assert_eq!(replies.len(), 1, "{what}: {} ({}) has {} replies", s.at, s.op, replies.len());
        match &replies[0].event {
            SessionEvent::Reply { result: Ok(_) | Err(RequestError::Server(_)), .. } => {}
            other => panic!("{what}: {}: {other:?}", s.at),
        }
    }
}

fn state_at(report: &ReplayReport, state: ConnectionState) -> zoolock_core::Instant {
    report
        .events
        .iter()
        .find(|e| e.event == SessionEvent::State(state))
        .unwrap_or_else(|| panic!("no {state:?} in {:?}", report.states()))
        .at
}

#[test]
fn every_fresh_session_that_ends_normally_replays() {
    let files = jsonl_files_under(&traces_root()).expect("walk traces/");
    let mut replayed = Vec::new();
    let mut skipped = Vec::new();
    for (i, path) in files.iter().enumerate() {
        let trace = Trace::load(path).unwrap_or_else(|e| panic!("{e}"));
        let rel = path.strip_prefix(traces_root()).unwrap().display().to_string();
        if first_connect(&trace).session_id != 0 || !has_close_session(&trace) {
            skipped.push(rel);
            continue;
        }
        for chunking in chunkings(i as u64) {
            let report = run(&rel, chunking, || {
                let mut replay = SessionReplay::new(&trace, config(chunking))?;
                replay.replay_connection(&trace)?;
                assert_eq!(replay.session().status(), SessionStatus::Closed, "{rel}");
                assert_eq!(replay.session().poll_timeout(), None, "{rel}");
                replay.finish()
            });
            assert_eq!(report.states(), [ConnectionState::Connected, ConnectionState::Closed], "{rel}");
            assert_all_answered_by_server(&rel, &report);
            let conn = &report.connections[0];
            assert!(conn.closed_by_session, "{rel}: the session closes after closeSession's reply");
            // Every recorded client frame except pings was matched.
            let recorded = trace
                .frames()
                .filter(|f| f.dir == Direction::C2s)
                .filter(|f| RequestFrame::decode(&f.payload).map_or(true, |r| r.header.op != OpCode::PING))
                .count();
            assert_eq!(conn.frames_matched, recorded, "{rel}");
            for (watcher, _) in watch_events(&report) {
                assert_eq!(watcher, WATCHER);
            }
        }
        replayed.push(rel);
    }
    assert_eq!(replayed.len(), 21, "replayed {replayed:?}");
    skipped.sort();
    assert_eq!(
        skipped,
        [
            "mutex-reconnect/B.conn1.jsonl",
            "mutex-reconnect/B.conn2.jsonl",
            "session-expiry-server/A.conn1.jsonl",
            "session-expiry-server/A.conn2.jsonl",
            "session-expiry/A.conn1.jsonl",
        ]
    );
}

#[test]
fn waiter_gets_the_watch_event_for_its_predecessor() {
    for report in single_connection_replays("mutex-contended/B", 1) {
        let events = watch_events(&report);
        assert_eq!(events.len(), 1, "{events:?}");
        let (watcher, event) = &events[0];
        assert_eq!(*watcher, WATCHER);
        assert_eq!(event.event_type, EventType::NODE_DELETED);
        assert!(event.path.starts_with("/traces/mutex-contended/_c_") && event.path.ends_with("-lock-0000000000"));
    }
}

#[test]
fn semaphore_watch_removed_by_check_watches_is_not_delivered() {
    // A gets NodeChildrenChanged on $base/leases after its checkWatches: the
    // client has already forgotten the watcher.
    for report in single_connection_replays("semaphore-mutex/A", 2) {
        assert!(watch_events(&report).iter().all(|(_, e)| !e.path.ends_with("/leases")), "{report:?}");
    }
}

#[test]
fn mutex_reconnect_resumes_the_session_with_set_watches() {
    let conn1 = load("mutex-reconnect/B.conn1.jsonl");
    let conn2 = load("mutex-reconnect/B.conn2.jsonl");
    for chunking in chunkings(3) {
        let (report, zxid) = run("mutex-reconnect/B", chunking, || {
            let mut replay = SessionReplay::new(&conn1, config(chunking))?;
            replay.replay_connection(&conn1)?;
            assert_eq!(replay.session().status(), SessionStatus::Disconnected);
            let zxid = replay.session().last_zxid();
            replay.replay_connection(&conn2)?;
            assert_eq!(replay.session().status(), SessionStatus::Closed);
            Ok((replay.finish()?, zxid))
        });
        // lastZxidSeen of the reconnect = the highest reply zxid of conn1.
        assert_eq!(zxid, 112);
        assert_eq!(first_connect(&conn2).last_zxid_seen, zxid);
        assert_eq!(
            report.states(),
            [
                ConnectionState::Connected,
                ConnectionState::Suspended,
                ConnectionState::Reconnected,
                ConnectionState::Closed
            ]
        );
        let [c1, c2] = &report.connections[..] else { panic!("{:?}", report.connections) };
        assert!(!c1.closed_by_session, "the proxy dropped conn1");
        assert_eq!(state_at(&report, ConnectionState::Suspended), c1.closed_at.unwrap());
        assert_eq!(c1.handshake.as_ref().unwrap().session_id, c2.handshake.as_ref().unwrap().session_id);
        assert!(c2.closed_by_session);
        assert_all_answered_by_server("mutex-reconnect/B", &report);
        // The predecessor's NodeDeleted reaches the watcher through the
        // re-armed watch.
        let events = watch_events(&report);
        assert_eq!(events.len(), 1, "{events:?}");
        assert_eq!(events[0].1.event_type, EventType::NODE_DELETED);
        assert!(events[0].1.path.ends_with("-lock-0000000000"));
    }
}

#[test]
fn blackholed_session_is_suspended_at_the_read_timeout_then_lost() {
    let conn1 = load("session-expiry-server/A.conn1.jsonl");
    let conn2 = load("session-expiry-server/A.conn2.jsonl");
    let t = Duration::from_millis(9000);
    let tick = Duration::from_millis(10);
    let lock = "/traces/session-expiry-server/_c_c4349184-26dd-4ab9-89e6-f24daea29a98-lock-0000000000";
    for chunking in chunkings(4) {
        let (report, release) = run("session-expiry-server/A", chunking, || {
            let mut replay = SessionReplay::new(&conn1, config(chunking))?;
            replay.replay_connection(&conn1)?;
            assert_eq!(replay.session().negotiated_timeout(), Some(t));
            // The application releases while suspended: queued, never sent.
            let release = replay.submit(Op::delete(&ZkPath::new(lock).unwrap(), None), None)?;
            replay.replay_connection(&conn2)?;
            let session = replay.session();
            assert_eq!(session.status(), SessionStatus::Expired);
            assert!(session.is_ended());
            assert_eq!(session.poll_timeout(), None);
            Ok((replay.finish()?, release))
        });
        assert_eq!(report.states(), [ConnectionState::Connected, ConnectionState::Suspended, ConnectionState::Lost]);
        let [c1, c2] = &report.connections[..] else { panic!("{:?}", report.connections) };
        // conn1: the session gave up 2T/3 after the last frame it received
        // (its ping was swallowed by the partition).
        assert!(c1.closed_by_session);
        assert!(c1.pings_sent >= 1 && c1.pings_answered == 0, "{c1:?}");
        let silent = c1.closed_at.unwrap() - c1.last_received_at.unwrap();
        let read_timeout = t * 2 / 3;
        assert!(silent + tick >= read_timeout && silent <= read_timeout + tick, "gave up after {silent:?}");
        assert_eq!(state_at(&report, ConnectionState::Suspended), c1.closed_at.unwrap());
        // conn2: expired answer, the session closes the socket itself.
        assert!(c2.handshake.as_ref().unwrap().is_expired());
        assert!(c2.closed_by_session);
        assert_eq!(c2.closed_at, c2.last_received_at);
        assert_eq!(state_at(&report, ConnectionState::Lost), c2.closed_at.unwrap());
        // The queued release fails with SessionExpired, before Lost.
        let reply = report.reply(release).expect("a reply for the release");
        assert_eq!(reply.event, SessionEvent::Reply { id: release, result: Err(RequestError::SessionExpired) });
        assert_eq!(reply.at, c2.closed_at.unwrap());
        let ordinary = report.submitted.iter().filter(|s| s.id != release).count();
        assert_eq!(ordinary, 8, "{:?}", report.submitted);
    }
}

#[test]
fn cut_session_expires_by_its_own_timer_while_reconnects_are_refused() {
    let conn1 = load("session-expiry/A.conn1.jsonl");
    let t = Duration::from_millis(2000);
    for chunking in chunkings(5) {
        let report = run("session-expiry/A", chunking, || {
            let mut replay = SessionReplay::new(&conn1, config(chunking))?;
            replay.replay_connection(&conn1)?;
            assert_eq!(replay.session().negotiated_timeout(), Some(t));
            let until = replay.now() + t * 2;
            replay.advance_offline(until)?;
            assert_eq!(replay.session().status(), SessionStatus::Expired);
            replay.finish()
        });
        assert_eq!(report.states(), [ConnectionState::Connected, ConnectionState::Suspended, ConnectionState::Lost]);
        let suspended = state_at(&report, ConnectionState::Suspended);
        assert_eq!(suspended, report.connections[0].closed_at.unwrap());
        assert_eq!(state_at(&report, ConnectionState::Lost) - suspended, t);
    }
}

#[test]
fn the_ping_schedule_is_checked_and_pings_are_answered() {
    // B waits about 9 s for the lock: the session pings every T/3 and the
    // harness answers each one.
    let trace = load("session-expiry-server/B.conn1.jsonl");
    let report = run("session-expiry-server/B", Chunking::Whole, || {
        replay_session(std::slice::from_ref(&trace), config(Chunking::Whole))
    });
    let conn = &report.connections[0];
    assert!(conn.pings_sent >= 2, "{conn:?}");
    assert_eq!(conn.pings_sent, conn.pings_answered);
}

// ---- the replayer reports mismatches ------------------------------------------------

/// `rel` with `edit` applied to its text, parsed under the original path.
fn edited(rel: &str, edit: impl FnOnce(&str) -> String) -> Trace {
    let path = traces_root().join(rel);
    let text = std::fs::read_to_string(&path).unwrap();
    Trace::parse(&path, &edit(&text)).unwrap()
}

fn mismatch_of(err: ReplayError) -> (String, MismatchKind) {
    match &err {
        ReplayError::Mismatch { at, kind, .. } => {
            (format!("{}:{}", at.file.file_name().unwrap().to_string_lossy(), at.line), *kind)
        }
        other => panic!("expected a mismatch, got {other}"),
    }
}

#[test]
fn a_missing_set_watches_is_reported_at_the_next_request() {
    let conn1 = load("mutex-reconnect/B.conn1.jsonl");
    // Drop the recorded setWatches (line 4) and its reply: the session's own
    // setWatches is then where the trace has getData.
    let conn2 = edited("mutex-reconnect/B.conn2.jsonl", |text| {
        text.lines()
            .filter(|l| !l.contains("\"op\":\"setWatches\"") && !l.contains("\"reply_to\":\"setWatches\""))
            .map(|l| format!("{l}\n"))
            .collect()
    });
    let mut replay = SessionReplay::new(&conn1, ReplayConfig::new()).unwrap();
    replay.replay_connection(&conn1).unwrap();
    let err = replay.replay_connection(&conn2).unwrap_err();
    let msg = err.to_string();
    assert_eq!(mismatch_of(err), (String::from("B.conn2.jsonl:4"), MismatchKind::Frame), "{msg}");
    assert!(msg.contains("SetWatches") && msg.contains("GetData"), "{msg}");
}

#[test]
fn a_client_close_the_session_would_not_make_is_reported() {
    // Pretend the recorded client gave up after 3 s instead of 6 s.
    let conn1 = edited("session-expiry-server/A.conn1.jsonl", |text| {
        text.replace("{\"t_us\":6331730,\"event\":\"close\"", "{\"t_us\":3400000,\"event\":\"close\"")
    });
    let mut replay = SessionReplay::new(&conn1, ReplayConfig::new()).unwrap();
    let err = replay.replay_connection(&conn1).unwrap_err();
    let msg = err.to_string();
    assert_eq!(mismatch_of(err).1, MismatchKind::Close, "{msg}");
}

#[test]
fn a_different_requested_timeout_is_a_connect_request_mismatch() {
    let conn1 = load("mutex-reconnect/B.conn1.jsonl");
    // conn2 asks for 20 s instead of the 10 s the session was configured with.
    let conn2 = edited("mutex-reconnect/B.conn2.jsonl", |text| {
        text.replacen(
            "000000000000000000000070000027100100000ee07e0012",
            "00000000000000000000007000004e200100000ee07e0012",
            1,
        )
    });
    let mut replay = SessionReplay::new(&conn1, ReplayConfig::new()).unwrap();
    replay.replay_connection(&conn1).unwrap();
    let err = replay.replay_connection(&conn2).unwrap_err();
    let msg = err.to_string();
    assert_eq!(mismatch_of(err), (String::from("B.conn2.jsonl:2"), MismatchKind::ConnectRequest), "{msg}");
}
