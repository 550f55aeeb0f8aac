//! `holders --watch` and `leader --watch` (issue 39): exactly one line per
//! change of holder across five handoffs, nothing sent while idle (the
//! requests counted by a proxy in front of the server, pings left out), and
//! exit 0 on Ctrl-C. Black-box, against the embedded server (`zoolock
//! serve`); the holders are `zoolock lock` and `zoolock elect` processes
//! whose CMD waits for a line on its stdin.

use std::io::{BufRead, BufReader, Write};
use std::process::{Child, ChildStdin, Command, Stdio};
use std::sync::mpsc::{self, Receiver, RecvTimeoutError};
use std::thread;
use std::time::{Duration, Instant};

use nix::sys::signal::{Signal, kill};
use nix::unistd::Pid;
use serde_json::Value;
use zoolock_testkit::proxy::Proxy;

mod common;

use common::Served;

const BIN: &str = env!("CARGO_BIN_EXE_zoolock");

/// Longest wait for one expected line (a liveness bound, not a timing
/// assertion).
const STEP: Duration = Duration::from_secs(20);

/// Handoffs between holders.
const HANDOFFS: usize = 5;

fn zoolock(addr: &str) -> Command {
    let mut c = Command::new(BIN);
    c.env_remove("ZOOLOCK_CONNECT").args(["--connect", addr]).stdin(Stdio::null());
    c
}

/// A watcher: the child and its stdout lines.
struct Watcher {
    child: Child,
    lines: Receiver<String>,
}

impl Watcher {
    fn start(addr: &str, args: &[&str]) -> Watcher {
        let mut child = zoolock(addr).args(args).stdout(Stdio::piped()).spawn().expect("run zoolock --watch");
        let stdout = child.stdout.take().expect("piped stdout");
        let (tx, lines) = mpsc::channel();
        thread::spawn(move || {
            for line in BufReader::new(stdout).lines() {
                let Ok(line) = line else { break };
                if tx.send(line).is_err() {
                    break;
                }
            }
        });
        Watcher { child, lines }
    }

    fn next(&self, what: &str) -> String {
        match self.lines.recv_timeout(STEP) {
            Ok(line) => line,
            Err(e) => panic!("{what}: no line within {STEP:?} ({e:?})"),
        }
    }

    /// Fails if a line is waiting: each change has had its one line.
    fn nothing_more(&self) {
        match self.lines.recv_timeout(Duration::from_millis(200)) {
            Err(RecvTimeoutError::Timeout) => {}
            other => panic!("a line nobody changed anything for: {other:?}"),
        }
    }

    /// Ctrl-C: exit 0, and no line after the last change's.
    fn interrupt(mut self) {
        kill(Pid::from_raw(self.child.id() as i32), Signal::SIGINT).unwrap();
        let deadline = Instant::now() + STEP;
        let status = loop {
            if let Some(status) = self.child.try_wait().unwrap() {
                break status;
            }
            assert!(Instant::now() < deadline, "the watcher ignored SIGINT");
            thread::sleep(Duration::from_millis(20));
        };
        assert_eq!(status.code(), Some(0), "{status:?}");
        assert!(self.lines.try_iter().next().is_none(), "a line after the last change");
    }
}

/// A holder whose CMD runs until a line arrives on its stdin.
struct Holder {
    child: Child,
    stdin: ChildStdin,
}

impl Holder {
    fn start(addr: &str, args: &[&str]) -> Holder {
        let mut child = zoolock(addr)
            .args(args)
            .args(["--", "sh", "-c", "read _"])
            .stdin(Stdio::piped())
            .spawn()
            .expect("run a zoolock holder");
        let stdin = child.stdin.take().expect("piped stdin");
        Holder { child, stdin }
    }

    /// Ends CMD, so zoolock releases; waits for it to exit 0.
    fn release(mut self) {
        self.stdin.write_all(b"\n").unwrap();
        let status = self.child.wait().unwrap();
        assert!(status.success(), "{status:?}");
    }
}

/// Waits until PATH has `n` nodes (`holders --json`).
fn wait_for_nodes(addr: &str, path: &str, kind: &str, n: usize) {
    let deadline = Instant::now() + STEP;
    loop {
        let out = zoolock(addr).args(["holders", "--json", path, "--kind", kind]).output().unwrap();
        if out.status.success() {
            let value: Value = serde_json::from_slice(&out.stdout).unwrap();
            if value["participants"].as_array().is_some_and(|l| l.len() == n) {
                return;
            }
        }
        assert!(Instant::now() < deadline, "{path} never had {n} nodes");
        thread::sleep(Duration::from_millis(20));
    }
}

/// Runs HANDOFFS + 1 holders in turn under a watcher: `holder(k)` starts the
/// k-th (queued behind the previous ones), `who(line)` reads the holder a
/// line names (`None`: nobody). Each change gets exactly one line, and
/// while nothing changes the watcher sends nothing.
fn handoffs(
    watcher_args: &[&str],
    kind: &str,
    holder: impl Fn(&str, usize) -> Vec<String>,
    who: impl Fn(&str) -> Option<String>,
) {
    let served = Served::start();
    let proxy = Proxy::start(&served.addr);
    let path = watcher_args[1];
    let watcher = Watcher::start(&proxy.addr, watcher_args);
    assert_eq!(who(&watcher.next("the first line")), None, "nobody holds an empty path");
    let mut holders = Vec::new();
    for k in 0..=HANDOFFS {
        let args = holder(path, k);
        holders.push(Holder::start(&served.addr, &args.iter().map(String::as_str).collect::<Vec<_>>()));
        wait_for_nodes(&served.addr, path, kind, k + 1);
        if k == 0 {
            assert_eq!(who(&watcher.next("the first holder")).as_deref(), Some("h0"));
        }
    }
    watcher.nothing_more();
    for (k, h) in holders.into_iter().enumerate() {
        h.release();
        let want = (k < HANDOFFS).then(|| format!("h{}", k + 1));
        assert_eq!(who(&watcher.next(&format!("the change after h{k}"))), want);
    }
    watcher.nothing_more();
    // Idle: not one request (the observer's watch is armed, pings aside).
    let before = proxy.requests();
    thread::sleep(Duration::from_secs(2));
    assert_eq!(proxy.requests(), before, "requests sent while nothing changed");
    watcher.interrupt();
}

#[test]
fn holders_watch_prints_one_line_per_change_and_nothing_while_idle() {
    let path = format!("/watch-holders-{}", std::process::id());
    handoffs(
        &["holders", &path, "--watch", "--kind", "mutex"],
        "mutex",
        |path, k| ["lock", path, "--data", &format!("h{k}")].map(str::to_owned).to_vec(),
        |line| {
            let data = line.split(' ').next().and_then(|w| w.strip_prefix("data=")).expect("data=");
            assert!(line.contains(" node=") && line.contains(" token=") && line.contains(" held_for="), "{line}");
            (data != "-").then(|| data.to_owned())
        },
    );
}

#[test]
fn leader_watch_json_prints_one_object_per_change() {
    let path = format!("/watch-leader-{}", std::process::id());
    handoffs(
        &["leader", &path, "--watch", "--json"],
        "election",
        |path, k| ["elect", path, "--id", &format!("h{k}")].map(str::to_owned).to_vec(),
        |line| {
            let value: Value = serde_json::from_str(line).expect("one JSON object per line");
            match value["id"].as_str() {
                Some(id) => {
                    assert!(value["token"].as_i64().is_some() && value["held_for_ms"].as_u64().is_some(), "{line}");
                    assert!(value["node"].as_str().is_some_and(|n| n.contains("-lock-")), "{line}");
                    Some(id.to_owned())
                }
                None => None,
            }
        },
    );
}
