//! Smoke tests of `zoolock bench`: every workload, small, against an
//! embedded `zoolock serve` (always) and against the real server from
//! `ZOOLOCK_TEST_CONNECT` (skipped with a message when unset; a set variable
//! with nothing answering fails, as in `cli.rs`). Each run's one JSON line is
//! parsed and checked; the figures themselves are not judged here.

use std::collections::BTreeMap;
use std::net::TcpListener;
use std::process::{Command, Output, Stdio};
use std::time::Instant;

mod common;

use common::{Served, server};

const BIN: &str = env!("CARGO_BIN_EXE_zoolock");

fn bench(addr: &str, args: &[&str]) -> Output {
    Command::new(BIN)
        .env_remove("ZOOLOCK_CONNECT")
        .args(["--connect", addr, "--connect-timeout", "5s", "bench"])
        .args(args)
        .stdin(Stdio::null())
        .output()
        .expect("run zoolock bench")
}

/// A JSON value as the bench writes them: a number or a word.
#[derive(Debug, Clone, PartialEq)]
enum Value {
    Num(f64),
    Str(String),
}

/// Parses the bench's one-line, flat JSON object (string and number
/// values; no nesting or escapes, which the bench never writes).
fn parse_flat_json(line: &str) -> BTreeMap<String, Value> {
    let body = line.trim().strip_prefix('{').and_then(|s| s.strip_suffix('}')).unwrap_or_else(|| {
        panic!("not one JSON object: {line:?}");
    });
    let mut out = BTreeMap::new();
    for field in body.split(',') {
        let (key, value) = field.split_once(':').unwrap_or_else(|| panic!("bad field {field:?} in {line:?}"));
        let key = key.trim().strip_prefix('"').and_then(|k| k.strip_suffix('"')).expect("quoted key");
        let value = match value.trim().strip_prefix('"').and_then(|v| v.strip_suffix('"')) {
            Some(word) => Value::Str(word.to_owned()),
            None => Value::Num(value.trim().parse().unwrap_or_else(|e| panic!("{key}: {value:?}: {e}"))),
        };
        assert!(out.insert(key.to_owned(), value).is_none(), "duplicate key {key} in {line:?}");
    }
    out
}

fn num(fields: &BTreeMap<String, Value>, key: &str) -> f64 {
    match fields.get(key) {
        Some(Value::Num(n)) => *n,
        other => panic!("{key}: expected a number, got {other:?} in {fields:?}"),
    }
}

fn word<'a>(fields: &'a BTreeMap<String, Value>, key: &str) -> &'a str {
    match fields.get(key) {
        Some(Value::Str(s)) => s,
        other => panic!("{key}: expected a string, got {other:?} in {fields:?}"),
    }
}

/// Runs one workload with `--json` and checks what every run must report.
fn run_one(addr: &str, workload: &str, extra: &[&str], cycles: u64) -> BTreeMap<String, Value> {
    let mut args = vec!["--workload", workload, "--json", "--warmup", "10"];
    args.extend_from_slice(extra);
    let out = bench(addr, &args);
    let stdout = String::from_utf8_lossy(&out.stdout);
    assert_eq!(out.status.code(), Some(0), "{workload} {extra:?}: {out:?}");
    assert_eq!(stdout.lines().count(), 1, "exactly one line on stdout: {stdout:?}");
    let f = parse_flat_json(&stdout);
    assert_eq!(word(&f, "impl"), "zoolock");
    assert_eq!(word(&f, "workload"), workload);
    assert_eq!(num(&f, "cycles"), cycles as f64, "{f:?}");
    assert!(num(&f, "seconds") > 0.0, "{f:?}");
    assert!(num(&f, "cycles_per_sec") > 0.0, "{f:?}");
    assert!(num(&f, "p50_us") <= num(&f, "p99_us"), "{f:?}");
    assert_eq!(num(&f, "leftover_nodes"), 0.0, "{f:?}");
    f
}

/// Every workload once, small.
fn every_workload(addr: &str) {
    let f = run_one(addr, "mutex-uncontended", &["--cycles", "50"], 50);
    assert_eq!(word(&f, "release"), "acked");
    let f = run_one(addr, "mutex-uncontended", &["--cycles", "50", "--pipelined-release"], 50);
    assert_eq!(word(&f, "release"), "pipelined");

    let f = run_one(addr, "mutex-contended", &["--cycles", "50", "--clients", "4"], 50);
    assert_eq!(num(&f, "clients"), 4.0);
    assert_eq!(num(&f, "fencing_violations"), 0.0, "{f:?}");
    assert_eq!(num(&f, "overlap_violations"), 0.0, "{f:?}");

    run_one(addr, "read-lock", &["--cycles", "50"], 50);

    let f = run_one(addr, "semaphore", &["--cycles", "50", "--leases", "2"], 50);
    assert_eq!(num(&f, "leases"), 2.0);

    // Every waiter is one cycle.
    let f = run_one(addr, "waiters", &["--waiters", "200", "--paths", "10"], 200);
    assert_eq!(num(&f, "waiters"), 200.0);
    assert_eq!(num(&f, "paths"), 10.0);
    assert_eq!(num(&f, "fifo_violations"), 0.0, "{f:?}");
    assert!(num(&f, "drain_ms") > 0.0, "{f:?}");
    assert!(num(&f, "rss_mib") > 0.0, "{f:?}");

    // Every held lock is one cycle.
    let f = run_one(addr, "held", &["--locks", "100"], 100);
    assert_eq!(num(&f, "locks"), 100.0);
    assert!(num(&f, "acquire_s") > 0.0 && num(&f, "release_s") > 0.0, "{f:?}");
    assert!(num(&f, "rss_held_kib") >= num(&f, "rss_before_kib"), "{f:?}");
    assert!(num(&f, "bytes_per_lock") >= 0.0, "{f:?}");

    let f = run_one(addr, "tasks", &["--cycles", "60", "--tasks", "4"], 60);
    assert_eq!(num(&f, "tasks"), 4.0);
}

#[test]
fn every_workload_against_zoolock_serve() {
    let started = Instant::now();
    let served = Served::start();
    every_workload(&served.addr);
    // The human summary, too.
    let out = bench(&served.addr, &["--workload", "mutex-uncontended", "--cycles", "20"]);
    assert_eq!(out.status.code(), Some(0), "{out:?}");
    assert!(String::from_utf8_lossy(&out.stdout).contains("cycles/s"), "{out:?}");
    eprintln!("zoolock serve: {:?}", started.elapsed());
}

#[test]
fn every_workload_against_the_server() {
    let Some(addr) = server() else { return };
    every_workload(&addr);
}

#[test]
fn bad_arguments_exit_64_and_no_server_69() {
    for args in [
        &["--workload", "nope"][..],
        &[][..],
        &["--workload", "mutex-uncontended", "--cycles", "0"][..],
        &["--workload", "semaphore", "--leases", "0"][..],
        &["--workload", "waiters", "--paths", "x"][..],
    ] {
        let out = bench("127.0.0.1:1", args);
        assert_eq!(out.status.code(), Some(64), "{args:?}: {out:?}");
    }
    // A loopback port nobody listens on.
    let port = TcpListener::bind("127.0.0.1:0").unwrap().local_addr().unwrap().port();
    let out = Command::new(BIN)
        .env_remove("ZOOLOCK_CONNECT")
        .args(["--connect", &format!("127.0.0.1:{port}"), "--connect-timeout", "1s", "bench"])
        .args(["--workload", "mutex-uncontended", "--json"])
        .stdin(Stdio::null())
        .output()
        .unwrap();
    assert_eq!(out.status.code(), Some(69), "{out:?}");
    assert!(out.stdout.is_empty(), "no JSON without a run: {out:?}");
}
