//! Black-box tests of the `zoolock` binary against the real server from
//! `ZOOLOCK_TEST_CONNECT` (`bash .ci/run` starts one and sets it). Without
//! the variable the server tests are skipped with a message; with it set
//! and the server unreachable they fail.

use std::io::{Read, Write};
use std::net::{Shutdown, SocketAddr, TcpListener, TcpStream};
use std::process::{Child, Command, ExitStatus, Output, Stdio};
use std::sync::atomic::{AtomicBool, Ordering};
use std::sync::{Arc, Mutex};
use std::thread;
use std::time::{Duration, Instant, SystemTime, UNIX_EPOCH};

use nix::sys::signal::{Signal, kill};
use nix::unistd::Pid;
use zoolock_tokio::{LockKind, Options};

mod common;

use common::{scratch, server};

const BIN: &str = env!("CARGO_BIN_EXE_zoolock");

/// A fresh lock path for one test.
fn unique_path(name: &str) -> String {
    let nanos = SystemTime::now().duration_since(UNIX_EPOCH).unwrap().subsec_nanos();
    format!("/zoolock-cli-{name}-{}-{nanos}", std::process::id())
}

/// The real server's address and a fresh lock path on it; `None` (the test
/// is skipped) without a server.
fn server_path(name: &str) -> Option<(String, String)> {
    Some((server()?, unique_path(name)))
}

fn zoolock(addr: &str) -> Command {
    let mut c = Command::new(BIN);
    c.env_remove("ZOOLOCK_CONNECT").arg("--connect").arg(addr).stdin(Stdio::null());
    c
}

fn output(cmd: &mut Command) -> Output {
    cmd.output().expect("run zoolock")
}

fn code(status: ExitStatus) -> i32 {
    status.code().unwrap_or_else(|| panic!("zoolock died by a signal: {status:?}"))
}

/// Runs `f` on a small tokio runtime with a client connected to `addr`.
fn with_client<T>(addr: &str, f: impl AsyncFnOnce(&zoolock_tokio::Client) -> T) -> T {
    let rt = tokio::runtime::Builder::new_current_thread().enable_all().build().unwrap();
    rt.block_on(async {
        let client = zoolock_tokio::connect(addr, Options::default()).await.expect("test client connects");
        let out = f(&client).await;
        client.close().await.unwrap();
        out
    })
}

/// The participants of `path` (full node path and data).
fn participants(addr: &str, path: &str, kind: LockKind) -> Vec<(String, String)> {
    with_client(addr, async |c| {
        c.participants(path, kind)
            .await
            .unwrap()
            .into_iter()
            .map(|p| (p.path, String::from_utf8_lossy(&p.data.unwrap_or_default()).into_owned()))
            .collect()
    })
}

/// Waits until `path` has `n` participants.
fn wait_for_participants(addr: &str, path: &str, kind: LockKind, n: usize) -> Vec<(String, String)> {
    let deadline = Instant::now() + Duration::from_secs(20);
    loop {
        let list = participants(addr, path, kind);
        if list.len() == n {
            return list;
        }
        assert!(Instant::now() < deadline, "{path}: waited for {n} participants, have {list:?}");
        thread::sleep(Duration::from_millis(50));
    }
}

/// Asserts `path` has no children (waiting up to `patience` for them to go), then deletes it.
fn assert_empty_and_remove(addr: &str, path: &str, patience: Duration) {
    let deadline = Instant::now() + patience;
    with_client(addr, async |c| {
        loop {
            let children = match c.get_children(path).await {
                Ok((children, _)) => children,
                Err(e) => panic!("get_children({path}): {e}"),
            };
            if children.is_empty() {
                break;
            }
            assert!(Instant::now() < deadline, "leftover nodes under {path}: {children:?}");
            tokio::time::sleep(Duration::from_millis(100)).await;
        }
        // Remove the path and any layout folders (read-write lock, semaphore).
        for sub in ["leases", "locks"] {
            let _ = c.delete(&format!("{path}/{sub}"), None).await;
        }
        c.delete(path, None).await.unwrap();
    });
}

/// Sends `signal` to a process this test started.
fn signal(child: &Child, signal: Signal) {
    kill(Pid::from_raw(i32::try_from(child.id()).unwrap()), signal).unwrap();
}

/// Waits for a background zoolock at most `limit`.
fn wait_with_limit(child: &mut Child, limit: Duration) -> ExitStatus {
    let deadline = Instant::now() + limit;
    loop {
        if let Some(status) = child.try_wait().unwrap() {
            return status;
        }
        if Instant::now() >= deadline {
            let _ = child.kill();
            panic!("zoolock (pid {}) still running after {limit:?}", child.id());
        }
        thread::sleep(Duration::from_millis(20));
    }
}

// The tests, one file per concern: tests/cli/<concern>.rs. This file stays
// the crate root (not tests/cli/main.rs) so that `mod common;` above finds
// tests/common/mod.rs, which other test files share.
mod cli {
    mod foreign;
    mod losing;
    mod offline;
    mod recipes;
    mod running;
}
