//! Black-box tests of `zoolock demo`: a short run against the embedded
//! server must pass every check and leave no node behind, an interrupted
//! run must still print its summary, and (with `ZOOLOCK_TEST_CONNECT`) the
//! same holds against a real ZooKeeper. Without the variable the real-server
//! test is skipped with a message; with it set and the server unreachable it
//! fails.

use std::process::{Command, Output, Stdio};
use std::thread;
use std::time::Duration;

use nix::sys::signal::{Signal, kill};
use nix::unistd::Pid;
use zoolock_tokio::Options;

mod common;

use common::server;

const BIN: &str = env!("CARGO_BIN_EXE_zoolock");

/// The checks every passing summary lists as `ok`.
const CHECKS: [&str; 9] = [
    "mutex exclusion",
    "rwlock exclusion",
    "semaphore exclusion",
    "FIFO",
    "fencing tokens",
    "fenced writes",
    "fairness",
    "worker errors",
    "leftover nodes: 0 under the base path",
];

/// `zoolock demo ARGS`, never picking up a ZOOLOCK_CONNECT from the caller.
fn demo(args: &[&str]) -> Command {
    let mut c = Command::new(BIN);
    c.env_remove("ZOOLOCK_CONNECT").arg("demo").args(args).stdin(Stdio::null());
    c
}

/// Asserts a passing run: exit 0, every check `ok`, the PASS verdict; and
/// progress lines on stderr (not a terminal, so plain lines).
fn assert_passed(out: &Output) -> (String, String) {
    let stdout = String::from_utf8_lossy(&out.stdout).into_owned();
    let stderr = String::from_utf8_lossy(&out.stderr).into_owned();
    assert_eq!(out.status.code(), Some(0), "stdout:\n{stdout}\nstderr:\n{stderr}");
    for check in CHECKS {
        assert!(stdout.contains(&format!("  ok    {check}")), "check {check:?} not ok:\n{stdout}");
    }
    assert!(!stdout.contains("FAIL"), "{stdout}");
    assert!(stdout.trim_end().ends_with("verdict: PASS (9 of 9 checks passed)"), "{stdout}");
    assert!(stderr.contains("] mutex held by "), "no progress line:\n{stderr}");
    (stdout, stderr)
}

/// The base path the summary reports.
fn base_path(stdout: &str) -> String {
    let line = stdout.lines().find_map(|l| l.strip_prefix("base path ")).expect("a base path line");
    line.trim().to_owned()
}

#[test]
fn embedded_run_passes_every_check() {
    let out = demo(&["--duration", "2s"]).output().expect("run zoolock");
    let (stdout, stderr) = assert_passed(&out);
    assert!(stderr.contains("using the embedded in-memory ZooKeeper at 127.0.0.1:"), "{stderr}");
    assert!(stdout.contains("against the embedded in-memory ZooKeeper"), "{stdout}");
    for row in ["mutex ", "rwlock read ", "rwlock write ", "semaphore (2 leases) "] {
        assert!(stdout.lines().any(|l| l.starts_with(row)), "no {row:?} row:\n{stdout}");
    }
}

#[test]
fn interrupted_run_still_summarizes() {
    let child = demo(&["--duration", "60s", "--mutex-workers", "2", "--semaphore-workers", "3"])
        .stdout(Stdio::piped())
        .stderr(Stdio::piped())
        .spawn()
        .expect("run zoolock");
    thread::sleep(Duration::from_millis(1500));
    kill(Pid::from_raw(i32::try_from(child.id()).unwrap()), Signal::SIGINT).unwrap();
    let out = child.wait_with_output().unwrap();
    let (stdout, stderr) = assert_passed(&out);
    assert!(stdout.contains("(stopped early)"), "{stdout}");
    assert!(stderr.contains("stopping early"), "{stderr}");
}

#[test]
fn real_server_run_passes_and_cleans_up() {
    let Some(addr) = server() else { return };
    let out = demo(&["--duration", "2s", "--connect", &addr]).output().expect("run zoolock");
    let (stdout, stderr) = assert_passed(&out);
    assert!(stderr.contains(&format!("using the ZooKeeper at {addr}")), "{stderr}");
    let base = base_path(&stdout);
    let rt = tokio::runtime::Builder::new_current_thread().enable_all().build().unwrap();
    let exists = rt.block_on(async {
        let client = zoolock_tokio::connect(&addr, Options::default()).await.expect("test client connects");
        let exists = client.exists(&base).await.expect("exists");
        client.close().await.unwrap();
        exists
    });
    assert!(exists.is_none(), "{base} is still there");
}
