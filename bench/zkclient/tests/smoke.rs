//! Runs `zkclient-bench` against the real ZooKeeper from `ZOOLOCK_TEST_CONNECT`
//! (skipped, with the reason printed, when it is unset) and checks its JSON line.
//! Not part of `.ci/run`: this crate is a workspace of its own, built by
//! `scripts/bench-vs-peers.sh`; run with
//! `cargo test --manifest-path bench/zkclient/Cargo.toml`.

use std::process::Command;

const BIN: &str = env!("CARGO_BIN_EXE_zkclient-bench");

fn server() -> Option<String> {
    match std::env::var("ZOOLOCK_TEST_CONNECT") {
        Ok(addr) if !addr.trim().is_empty() => Some(addr.trim().split('/').next().unwrap_or_default().to_owned()),
        _ => {
            eprintln!("skipped: ZOOLOCK_TEST_CONNECT is not set");
            None
        }
    }
}

fn run(addr: &str, args: &[&str]) -> String {
    let out = Command::new(BIN)
        .args(["--connect", addr, "--cycles", "20", "--warmup", "2", "--json"])
        .args(args)
        .output()
        .expect("run zkclient-bench");
    let stderr = String::from_utf8_lossy(&out.stderr);
    assert!(out.status.success(), "zkclient-bench {args:?} failed ({}): {stderr}", out.status);
    let stdout = String::from_utf8(out.stdout).expect("UTF-8");
    let lines: Vec<&str> = stdout.lines().collect();
    assert_eq!(lines.len(), 1, "one line expected, got {stdout:?}");
    lines[0].to_owned()
}

#[test]
fn every_workload_prints_one_json_line_with_no_leftovers() {
    let Some(addr) = server() else { return };
    for (args, workload, release) in [
        (&["--workload", "mutex-uncontended"][..], "mutex-uncontended", "acked"),
        (&["--workload", "mutex-uncontended", "--release", "drop"][..], "mutex-uncontended", "drop"),
        (&["--workload", "mutex-contended", "--clients", "3"][..], "mutex-contended", "acked"),
    ] {
        let line = run(&addr, args);
        assert!(line.starts_with("{\"impl\":\"zookeeper-client\""), "{line}");
        assert!(line.contains(&format!("\"workload\":\"{workload}\"")), "{line}");
        assert!(line.contains(&format!("\"release\":\"{release}\"")), "{line}");
        assert!(line.contains("\"cycles\":20,"), "{line}");
        assert!(line.contains("\"overlap_violations\":0,\"leftover_nodes\":0}"), "{line}");
    }
}

#[test]
fn held_and_tasks_print_one_json_line_with_no_leftovers() {
    let Some(addr) = server() else { return };
    let line = run(&addr, &["--workload", "held", "--locks", "50"]);
    assert!(line.starts_with("{\"impl\":\"zookeeper-client\",\"workload\":\"held\""), "{line}");
    assert!(line.contains("\"locks\":50,\"cycles\":50,"), "{line}");
    assert!(line.contains("\"bytes_per_lock\":"), "{line}");
    assert!(line.ends_with("\"leftover_nodes\":0}"), "{line}");
    let line = run(&addr, &["--workload", "tasks", "--tasks", "4"]);
    assert!(line.contains("\"workload\":\"tasks\""), "{line}");
    assert!(line.contains("\"tasks\":4,\"cycles\":20,"), "{line}");
    assert!(line.ends_with("\"leftover_nodes\":0}"), "{line}");
}
