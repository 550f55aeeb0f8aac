//! Recipe-level replays of the Curator 5.4.0 corpus (see
//! `zoolock_conformance::recipe_replay`): zoolock's `Client` and lock recipes,
//! in the Curator op plan, driven by every scenario's server frames and user
//! steps, must write every recorded client frame (xids, protection UUIDs, ping
//! timing and the EnsembleTracker's `/zookeeper/config` traffic aside) and
//! report the recorded outcomes. The negative tests show that the comparison
//! does fail: on a changed frame, a changed outcome, inconsistent UUIDs, and a
//! `/zookeeper/config` read that is not the EnsembleTracker's.

use std::fs;
use std::path::{Path, PathBuf};
use std::process::Command;

use bytes::Bytes;
use serde_json::Value;
use zoolock_conformance::recipe_replay::{RecipeReplayConfig, ScenarioReport, replay_scenario, replay_scenario_dir};
use zoolock_conformance::replay::{MismatchKind, ReplayError};
use zoolock_conformance::trace::CURATOR_SCENARIOS;
use zoolock_conformance::{Direction, Entry, Scenario};
use zoolock_wire::{OpCode, RequestFrame};

const BIN: &str = env!("CARGO_BIN_EXE_zk-trace");

/// Every scenario of the corpus; the test fails if one goes missing.
const SCENARIOS: [&str; 11] = CURATOR_SCENARIOS;

fn corpus() -> PathBuf {
    Path::new(env!("CARGO_MANIFEST_DIR")).join("traces/curator-5.4.0")
}

fn load(name: &str) -> Scenario {
    Scenario::load(corpus().join(name)).unwrap_or_else(|e| panic!("{e}"))
}

fn replay(scenario: &Scenario) -> ScenarioReport {
    replay_scenario(scenario, &RecipeReplayConfig::new()).unwrap_or_else(|e| panic!("{}: {e}", scenario.name))
}

fn describe(report: &ScenarioReport) -> String {
    let mut out = String::new();
    for conn in report.connections() {
        out.push_str(&format!("  {}: matched {}/{}\n", conn.file.display(), conn.matched, conn.total));
    }
    for (client, e) in report.errors() {
        out.push_str(&format!("  client {client}: {e}\n"));
    }
    out
}

/// The only error of `report`, which must be client `client`'s.
fn only_error<'r>(report: &'r ScenarioReport, client: &str) -> &'r ReplayError {
    let errors: Vec<_> = report.errors().collect();
    assert_eq!(errors.len(), 1, "exactly one failing client expected:\n{}", describe(report));
    let (who, error) = errors[0];
    assert_eq!(who, client, "{error}");
    error
}

fn mismatch_at(error: &ReplayError) -> (MismatchKind, PathBuf, usize) {
    match error {
        ReplayError::Mismatch { at, kind, .. } => (*kind, at.file.clone(), at.line),
        other => panic!("expected a mismatch, got {other}"),
    }
}

/// The trace of `file` (e.g. `B.conn1.jsonl`) in `scenario`.
fn trace_mut<'s>(scenario: &'s mut Scenario, file: &str) -> &'s mut zoolock_conformance::Trace {
    scenario
        .traces
        .iter_mut()
        .find(|t| t.path.file_name().is_some_and(|f| f == file))
        .unwrap_or_else(|| panic!("no {file}"))
}

/// Rewrites the payload of the `nth` client request with opcode `op`
/// (0-based); returns the frame's line.
fn edit_request(scenario: &mut Scenario, file: &str, op: OpCode, nth: usize, edit: impl FnOnce(&mut Vec<u8>)) -> usize {
    let trace = trace_mut(scenario, file);
    let frame = trace
        .entries
        .iter_mut()
        .filter_map(|e| match e {
            Entry::Frame(f) if f.dir == Direction::C2s => Some(f),
            _ => None,
        })
        .skip(1)
        .filter(|f| RequestFrame::decode(&f.payload).is_ok_and(|r| r.header.op == op))
        .nth(nth)
        .unwrap_or_else(|| panic!("no request {op} #{nth} in {file}"));
    let mut payload = frame.payload.to_vec();
    edit(&mut payload);
    frame.payload = Bytes::from(payload);
    frame.line
}

fn replace_once(bytes: &mut [u8], from: &[u8], to: &[u8]) {
    assert_eq!(from.len(), to.len());
    let at = bytes.windows(from.len()).position(|w| w == from).expect("pattern present");
    bytes[at..at + to.len()].copy_from_slice(to);
}

#[test]
fn every_scenario_replays_frame_for_frame() {
    let mut dirs: Vec<PathBuf> = fs::read_dir(corpus())
        .unwrap()
        .map(|e| e.unwrap().path())
        .filter(|p| p.join("summary.json").is_file())
        .collect();
    dirs.sort();
    let names: Vec<String> = dirs.iter().map(|d| d.file_name().unwrap().to_string_lossy().into_owned()).collect();
    for want in SCENARIOS {
        assert!(names.iter().any(|n| n == want), "scenario {want} missing from the corpus");
    }
    let mut failures = Vec::new();
    for dir in &dirs {
        let report = replay_scenario_dir(dir, &RecipeReplayConfig::new()).unwrap_or_else(|e| panic!("{e}"));
        let complete = report.connections().all(|c| c.total > 0 && c.matched == c.total);
        if !report.is_ok() || !complete {
            failures.push(format!("{}:\n{}", report.name, describe(&report)));
        }
        // One tally per connection file.
        let files =
            fs::read_dir(dir).unwrap().filter(|e| e.as_ref().unwrap().path().extension().is_some_and(|x| x == "jsonl"));
        assert_eq!(report.connections().count(), files.count(), "{}", report.name);
    }
    assert!(failures.is_empty(), "scenarios that do not replay:\n{}", failures.join("\n"));
}

/// Frame counts of a few connections, against the README's op tables
/// (ConnectRequest included; pings and `/zookeeper/config` traffic not).
#[test]
fn tallies_count_every_compared_client_frame() {
    let cases = [
        // Connect, create2 NoNode, exists ×2, createContainer, create2,
        // getChildren2, delete, closeSession.
        ("mutex-contended", "A.conn1.jsonl", 9),
        // Connect, create2, getChildren2, getData, getChildren2, delete, closeSession.
        ("mutex-contended", "B.conn1.jsonl", 7),
        // Connect, setWatches, getChildren2, getData, getChildren2, delete, closeSession.
        ("mutex-reconnect", "B.conn2.jsonl", 7),
        // The expired handshake.
        ("session-expiry-server", "A.conn2.jsonl", 1),
        // Connect, the lost node's delete, closeSession.
        ("session-expiry-server", "A.conn3.jsonl", 3),
    ];
    for (scenario, file, total) in cases {
        let report = replay(&load(scenario));
        let tally = report
            .connections()
            .find(|c| c.file.file_name().is_some_and(|f| f == file))
            .unwrap_or_else(|| panic!("{scenario}/{file}"));
        assert_eq!((tally.matched, tally.total), (total, total), "{scenario}/{file}\n{}", describe(&report));
    }
}

#[test]
fn a_changed_create2_path_is_a_frame_mismatch() {
    let mut scenario = load("mutex-contended");
    let line =
        edit_request(&mut scenario, "B.conn1.jsonl", OpCode::CREATE2, 0, |p| replace_once(p, b"-lock-", b"-lokk-"));
    let report = replay(&scenario);
    let (kind, file, at) = mismatch_at(only_error(&report, "B"));
    assert_eq!(kind, MismatchKind::Frame);
    assert!(file.ends_with("B.conn1.jsonl"), "{}", file.display());
    assert_eq!(at, line);
    let tally = report.connections().find(|c| c.file.ends_with("B.conn1.jsonl")).unwrap();
    assert!(tally.matched < tally.total, "{tally:?}");
}

#[test]
fn a_changed_flag_or_data_is_a_frame_mismatch() {
    // EPHEMERAL_SEQUENTIAL (3) recorded as EPHEMERAL (1): the flags are the
    // create2 body's last int.
    let mut scenario = load("mutex-uncontended");
    let line = edit_request(&mut scenario, "A.conn1.jsonl", OpCode::CREATE2, 1, |p| {
        *p.last_mut().unwrap() = 1;
    });
    let (kind, _, at) = mismatch_at(only_error(&replay(&scenario), "A"));
    assert_eq!((kind, at), (MismatchKind::Frame, line));

    // Other node data in the retried create2 (the data zoolock writes is
    // taken from the client's first create2).
    let mut scenario = load("mutex-uncontended");
    let line = edit_request(&mut scenario, "A.conn1.jsonl", OpCode::CREATE2, 1, |p| {
        replace_once(p, b"127.0.0.1", b"127.0.0.2")
    });
    let (kind, _, at) = mismatch_at(only_error(&replay(&scenario), "A"));
    assert_eq!((kind, at), (MismatchKind::Frame, line));
}

#[test]
fn inconsistent_protection_uuids_are_a_mismatch() {
    // Curator retries the create2 after mkdirs with the same protection UUID;
    // a different one in the retry must not be matched.
    let mut scenario = load("mutex-contended");
    let line = edit_request(&mut scenario, "A.conn1.jsonl", OpCode::CREATE2, 1, |p| {
        let at = p.windows(3).position(|w| w == b"_c_").unwrap() + 3;
        p[at] = if p[at] == b'0' { b'1' } else { b'0' };
    });
    let report = replay(&scenario);
    let error = only_error(&report, "A");
    let (kind, _, at) = mismatch_at(error);
    assert_eq!((kind, at), (MismatchKind::Frame, line));
    assert!(error.to_string().contains("UUID"), "{error}");
}

#[test]
fn a_changed_outcome_is_an_outcome_mismatch() {
    // B's blocked acquire recorded as having returned false.
    let mut scenario = load("mutex-contended");
    let steps = scenario.summary.as_mut().unwrap()["steps"].as_array_mut().unwrap();
    let step = steps.iter_mut().find(|s| s["client"] == "B" && s["action"] == "acquire").unwrap();
    step["result"] = Value::Bool(false);
    let (kind, file, _) = mismatch_at(only_error(&replay(&scenario), "B"));
    assert_eq!(kind, MismatchKind::Outcome);
    assert!(file.ends_with("summary.json"));

    // A connection state Curator did not report.
    let mut scenario = load("mutex-reconnect");
    let steps = scenario.summary.as_mut().unwrap()["steps"].as_array_mut().unwrap();
    let step = steps.iter_mut().find(|s| s["action"] == "connection state SUSPENDED").unwrap();
    step["action"] = Value::from("connection state LOST");
    let (kind, _, _) = mismatch_at(only_error(&replay(&scenario), "B"));
    assert_eq!(kind, MismatchKind::Outcome);

    // The participants in another order.
    let mut scenario = load("revocation");
    let steps = scenario.summary.as_mut().unwrap()["steps"].as_array_mut().unwrap();
    let step = steps.iter_mut().find(|s| s["action"] == "getParticipantNodes").unwrap();
    step["result"].as_array_mut().unwrap().reverse();
    let (kind, _, _) = mismatch_at(only_error(&replay(&scenario), "B"));
    assert_eq!(kind, MismatchKind::Outcome);
}

#[test]
fn only_the_ensemble_trackers_reads_are_skipped() {
    // `getData /zookeeper/config` without a watch is not the EnsembleTracker's:
    // zoolock never sends it, so the replay must miss it.
    let mut scenario = load("mutex-uncontended");
    let line = edit_request(&mut scenario, "A.conn1.jsonl", OpCode::GET_DATA, 0, |p| {
        *p.last_mut().unwrap() = 0;
    });
    let (kind, _, at) = mismatch_at(only_error(&replay(&scenario), "A"));
    assert_eq!(at, line);
    assert!(matches!(kind, MismatchKind::Frame | MismatchKind::MissingFrame), "{kind}");
}

fn run(args: &[&str]) -> (bool, String) {
    let out = Command::new(BIN).args(args).output().expect("run zk-trace");
    (out.status.success(), String::from_utf8_lossy(&out.stdout).into_owned())
}

#[test]
fn cli_replays_the_corpus() {
    let root = corpus();
    let dirs: Vec<String> = SCENARIOS.iter().map(|s| root.join(s).display().to_string()).collect();
    let mut args = vec!["replay"];
    args.extend(dirs.iter().map(String::as_str));
    let (ok, stdout) = run(&args);
    assert!(ok, "{stdout}");
    for scenario in SCENARIOS {
        assert!(stdout.contains(&format!("{scenario}: OK")), "{stdout}");
    }
    let files: usize = SCENARIOS
        .iter()
        .map(|s| {
            fs::read_dir(root.join(s))
                .unwrap()
                .filter(|e| e.as_ref().unwrap().path().extension().is_some_and(|x| x == "jsonl"))
                .count()
        })
        .sum();
    assert_eq!(stdout.lines().filter(|l| l.contains(": matched ")).count(), files, "{stdout}");
    for line in stdout.lines().filter(|l| l.contains(": matched ")) {
        let counts = line.rsplit(": matched ").next().unwrap().trim_end_matches(" frames");
        let (n, m) = counts.split_once('/').unwrap();
        assert_eq!(n, m, "{line}");
    }
    // The corpus root stands for its scenario folders.
    let (ok, stdout) = run(&["replay", root.to_str().unwrap()]);
    assert!(ok, "{stdout}");
    assert!(stdout.contains("replayed 11 scenario(s): all matched"), "{stdout}");
}

#[test]
fn cli_fails_on_a_corrupted_copy() {
    let src = corpus().join("mutex-contended");
    let dst =
        Path::new(env!("CARGO_TARGET_TMPDIR")).join(format!("recipe-replay-{}/mutex-contended", std::process::id()));
    fs::create_dir_all(&dst).unwrap();
    for entry in fs::read_dir(&src).unwrap() {
        let path = entry.unwrap().path();
        fs::copy(&path, dst.join(path.file_name().unwrap())).unwrap();
    }
    // B's create2 path, `-lock-` → `-lokk-`, in the authoritative hex.
    let file = dst.join("B.conn1.jsonl");
    let text = fs::read_to_string(&file).unwrap();
    let mut line_no = 0;
    let lines: Vec<String> = text
        .lines()
        .enumerate()
        .map(|(i, l)| {
            let mut v: Value = serde_json::from_str(l).unwrap();
            if line_no == 0 && v["op"] == "create2" {
                line_no = i + 1;
                let hex = v["hex"].as_str().unwrap().replacen("2d6c6f636b2d", "2d6c6f6b6b2d", 1);
                v["hex"] = Value::from(hex);
            }
            v.to_string()
        })
        .collect();
    assert!(line_no > 0);
    fs::write(&file, lines.join("\n") + "\n").unwrap();
    let (ok, stdout) = run(&["replay", dst.to_str().unwrap()]);
    assert!(!ok, "{stdout}");
    assert!(stdout.contains("mutex-contended: FAIL (client B)"), "{stdout}");
    assert!(stdout.contains(&format!("B.conn1.jsonl:{line_no}: frame mismatch")), "{stdout}");
    assert!(stdout.contains("A.conn1.jsonl: matched 9/9 frames"), "{stdout}");
    let _ = fs::remove_dir_all(dst.parent().unwrap());
}

#[test]
fn cli_usage_errors() {
    let out = Command::new(BIN).args(["replay"]).output().unwrap();
    assert_eq!(out.status.code(), Some(2));
    let out = Command::new(BIN).args(["replay", "/nonexistent/folder"]).output().unwrap();
    assert_eq!(out.status.code(), Some(1));
}

#[test]
fn a_frame_the_trace_lacks_is_a_mismatch() {
    // Without the recorded closeSession (and its reply), zoolock's closeSession
    // is left over when the connection ends.
    let mut scenario = load("mutex-uncontended");
    let trace = trace_mut(&mut scenario, "A.conn1.jsonl");
    let close_xid = trace
        .frames()
        .filter(|f| f.dir == Direction::C2s)
        .skip(1)
        .filter_map(|f| RequestFrame::decode(&f.payload).ok())
        .find(|r| r.header.op == OpCode::CLOSE_SESSION)
        .map(|r| r.header.xid.0)
        .unwrap();
    trace.entries.retain(|e| match e {
        Entry::Frame(f) => f.payload.get(..4) != Some(&close_xid.to_be_bytes()[..]),
        _ => true,
    });
    let (kind, file, _) = mismatch_at(only_error(&replay(&scenario), "A"));
    assert_eq!(kind, MismatchKind::UnexpectedFrame);
    assert!(file.ends_with("A.conn1.jsonl"));
}
