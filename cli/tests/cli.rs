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

// ---- the acceptance test ---------------------------------------------------------------

#[test]
fn concurrent_processes_never_overlap_and_leave_nothing_behind() {
    const WORKERS: usize = 8;
    const CYCLES: usize = 50;
    let Some((addr, path)) = server_path("exclusion") else { return };
    let dir = scratch("exclusion");
    // An atomic mkdir marks the critical section: a second process inside it
    // at the same time fails the mkdir and exits 99. Each section appends its
    // fencing token, in section order.
    let section =
        r#"mkdir "$D/cs" || exit 99; echo "$ZOOLOCK_FENCING_TOKEN" >> "$D/tokens"; sleep 0.002; rmdir "$D/cs""#;
    let started = Instant::now();
    let workers: Vec<_> = (0..WORKERS)
        .map(|_| {
            let (addr, path, dir) = (addr.clone(), path.clone(), dir.clone());
            thread::spawn(move || {
                (0..CYCLES)
                    .map(|_| {
                        let status = zoolock(&addr)
                            .args(["lock", &path, "--timeout", "60s", "--", "sh", "-c", section])
                            .env("D", &dir)
                            .status()
                            .expect("run zoolock");
                        code(status)
                    })
                    .collect::<Vec<i32>>()
            })
        })
        .collect();
    let codes: Vec<i32> = workers.into_iter().flat_map(|w| w.join().unwrap()).collect();
    let took = started.elapsed();
    eprintln!("{WORKERS} processes x {CYCLES} cycles of `zoolock lock` took {took:.2?}");

    let violations = codes.iter().filter(|&&c| c == 99).count();
    assert_eq!(violations, 0, "critical sections overlapped {violations} times");
    let failures: Vec<_> = codes.iter().filter(|&&c| c != 0).collect();
    assert!(failures.is_empty(), "non-zero exits: {failures:?}");
    assert_eq!(codes.len(), WORKERS * CYCLES);

    let tokens: Vec<i64> = std::fs::read_to_string(dir.join("tokens"))
        .unwrap()
        .lines()
        .map(|l| l.parse().expect("fencing token is an i64"))
        .collect();
    assert_eq!(tokens.len(), WORKERS * CYCLES);
    assert!(tokens.windows(2).all(|w| w[0] < w[1]), "fencing tokens not increasing in section order");
    assert!(!dir.join("cs").exists());

    assert_empty_and_remove(&addr, &path, Duration::ZERO);
    std::fs::remove_dir_all(&dir).unwrap();
}

// ---- what CMD sees and what zoolock returns ---------------------------------------------

#[test]
fn cmd_gets_the_fencing_token_and_node() {
    let Some((addr, path)) = server_path("env") else { return };
    let out = output(zoolock(&addr).args([
        "lock",
        &path,
        "--",
        "sh",
        "-c",
        r#"echo "$ZOOLOCK_FENCING_TOKEN"; echo "$ZOOLOCK_NODE""#,
    ]));
    assert!(out.status.success(), "{out:?}");
    let stdout = String::from_utf8(out.stdout).unwrap();
    let mut lines = stdout.lines();
    let token: i64 = lines.next().unwrap().parse().expect("token is an i64");
    assert!(token > 0);
    let node = lines.next().unwrap();
    assert!(node.starts_with(&format!("{path}/_c_")), "{node}");
    assert!(node.contains("-lock-"), "{node}");
    assert_empty_and_remove(&addr, &path, Duration::ZERO);
}

#[test]
fn exit_status_is_cmds() {
    let Some((addr, path)) = server_path("status") else { return };
    let out = output(zoolock(&addr).args(["lock", &path, "--", "sh", "-c", "exit 7"]));
    assert_eq!(code(out.status), 7);
    // A CMD killed by a signal gives 128+N, as in a shell.
    let out = output(zoolock(&addr).args(["lock", &path, "--", "sh", "-c", "kill -9 $$"]));
    assert_eq!(code(out.status), 128 + 9);
    // A CMD that cannot be found: 127, and the lock is released.
    let out = output(zoolock(&addr).args(["lock", &path, "--", "/nonexistent/zoolock-test-cmd"]));
    assert_eq!(code(out.status), 127, "{out:?}");
    assert_empty_and_remove(&addr, &path, Duration::ZERO);
}

#[test]
fn timeout_exits_75_without_running_cmd() {
    let Some((addr, path)) = server_path("timeout") else { return };
    let dir = scratch("timeout");
    let marker = dir.join("marker");
    let mut holder = zoolock(&addr).args(["lock", &path, "--", "sleep", "30"]).spawn().unwrap();
    wait_for_participants(&addr, &path, LockKind::Mutex, 1);

    let started = Instant::now();
    let out = output(zoolock(&addr).args(["lock", &path, "--timeout", "300ms", "--", "touch"]).arg(&marker));
    let took = started.elapsed();
    assert_eq!(code(out.status), 75, "{out:?}");
    assert!(!marker.exists(), "CMD ran after a timeout");
    assert!(took >= Duration::from_millis(300) && took < Duration::from_secs(5), "{took:?}");
    assert!(String::from_utf8_lossy(&out.stderr).contains("timed out"), "{out:?}");
    // The timed-out waiter left nothing: only the holder remains.
    assert_eq!(participants(&addr, &path, LockKind::Mutex).len(), 1);

    // SIGTERM to zoolock goes to `sleep`, which dies of it: 128+15.
    signal(&holder, Signal::SIGTERM);
    assert_eq!(code(wait_with_limit(&mut holder, Duration::from_secs(10))), 128 + 15);
    assert_empty_and_remove(&addr, &path, Duration::ZERO);
    std::fs::remove_dir_all(&dir).unwrap();
}

#[test]
fn a_signal_while_waiting_cancels_the_wait() {
    let Some((addr, path)) = server_path("cancel") else { return };
    let mut holder = zoolock(&addr).args(["lock", &path, "--", "sleep", "30"]).spawn().unwrap();
    wait_for_participants(&addr, &path, LockKind::Mutex, 1);
    let mut waiter = zoolock(&addr).args(["lock", &path, "--", "true"]).spawn().unwrap();
    wait_for_participants(&addr, &path, LockKind::Mutex, 2);
    signal(&waiter, Signal::SIGINT);
    assert_eq!(code(wait_with_limit(&mut waiter, Duration::from_secs(10))), 128 + 2);
    assert_eq!(participants(&addr, &path, LockKind::Mutex).len(), 1, "the waiter's node is gone");
    signal(&holder, Signal::SIGTERM);
    wait_with_limit(&mut holder, Duration::from_secs(10));
    assert_empty_and_remove(&addr, &path, Duration::ZERO);
}

// ---- holders and revoke ------------------------------------------------------------------

#[test]
fn holders_lists_the_queue_with_data() {
    let Some((addr, path)) = server_path("holders") else { return };
    let out = output(zoolock(&addr).args(["holders", &path]));
    assert!(out.status.success() && out.stdout.is_empty(), "{out:?}");

    let mut holder =
        zoolock(&addr).args(["lock", &path, "--data", "first holder", "--", "sleep", "30"]).spawn().unwrap();
    wait_for_participants(&addr, &path, LockKind::Mutex, 1);
    let mut waiter = zoolock(&addr).args(["lock", &path, "--data", "second", "--", "true"]).spawn().unwrap();
    let list = wait_for_participants(&addr, &path, LockKind::Mutex, 2);

    let out = output(zoolock(&addr).args(["holders", &path]));
    assert!(out.status.success(), "{out:?}");
    let stdout = String::from_utf8(out.stdout).unwrap();
    let lines: Vec<&str> = stdout.lines().collect();
    assert_eq!(lines, [format!("0 holding {} first holder", list[0].0), format!("1 waiting {} second", list[1].0)]);
    assert!(lines[0].starts_with(&format!("0 holding {path}/_c_")));

    signal(&holder, Signal::SIGTERM);
    wait_with_limit(&mut holder, Duration::from_secs(10));
    assert_eq!(code(wait_with_limit(&mut waiter, Duration::from_secs(10))), 0);
    assert_empty_and_remove(&addr, &path, Duration::ZERO);
}

#[test]
fn revoke_stops_a_revocable_holder() {
    let Some((addr, path)) = server_path("revoke") else { return };
    let out = output(zoolock(&addr).args(["revoke", &path]));
    assert_eq!(code(out.status), 1, "no holder: {out:?}");

    let mut holder = zoolock(&addr).args(["lock", &path, "--revocable", "--", "sleep", "30"]).spawn().unwrap();
    let list = wait_for_participants(&addr, &path, LockKind::Mutex, 1);
    let started = Instant::now();
    let out = output(zoolock(&addr).args(["revoke", &path]));
    assert!(out.status.success(), "{out:?}");
    assert_eq!(String::from_utf8(out.stdout).unwrap().trim(), list[0].0);
    // The holder sends SIGTERM to `sleep`, releases, and exits with its status.
    assert_eq!(code(wait_with_limit(&mut holder, Duration::from_secs(10))), 128 + 15);
    eprintln!("revoked holder exited {:.2?} after the revoke", started.elapsed());
    assert_empty_and_remove(&addr, &path, Duration::ZERO);

    // --node names the node directly; a vanished node is an error.
    let out = output(zoolock(&addr).args(["revoke", "--node", &list[0].0]));
    assert_eq!(code(out.status), 1, "{out:?}");
}

// ---- the other recipes -------------------------------------------------------------------

#[test]
fn read_locks_share_and_write_locks_exclude() {
    let Some((addr, path)) = server_path("rw") else { return };
    let mut reader = zoolock(&addr).args(["read-lock", &path, "--", "sleep", "30"]).spawn().unwrap();
    wait_for_participants(&addr, &path, LockKind::ReadWriteLock, 1);
    let out = output(zoolock(&addr).args(["read-lock", &path, "--timeout", "5s", "--", "true"]));
    assert_eq!(code(out.status), 0, "a second reader gets in: {out:?}");
    let out = output(zoolock(&addr).args(["write-lock", &path, "--timeout", "300ms", "--", "true"]));
    assert_eq!(code(out.status), 75, "a writer waits for the reader: {out:?}");
    let out = output(zoolock(&addr).args(["holders", &path, "--kind", "rwlock"]));
    assert_eq!(String::from_utf8(out.stdout).unwrap().lines().count(), 1);
    signal(&reader, Signal::SIGTERM);
    wait_with_limit(&mut reader, Duration::from_secs(10));
    let out = output(zoolock(&addr).args(["write-lock", &path, "--timeout", "5s", "--", "true"]));
    assert_eq!(code(out.status), 0, "{out:?}");
    assert_empty_and_remove(&addr, &path, Duration::ZERO);
}

#[test]
fn semaphore_hands_out_n_leases() {
    let Some((addr, path)) = server_path("sem") else { return };
    let holders: Vec<Child> = (0..2)
        .map(|_| zoolock(&addr).args(["semaphore", &path, "--leases", "2", "--", "sleep", "30"]).spawn().unwrap())
        .collect();
    wait_for_participants(&addr, &path, LockKind::Semaphore, 2);
    let out = output(zoolock(&addr).args(["semaphore", &path, "--leases", "2", "--timeout", "300ms", "--", "true"]));
    assert_eq!(code(out.status), 75, "a third lease waits: {out:?}");
    let out = output(zoolock(&addr).args(["holders", &path, "--kind", "semaphore"]));
    assert_eq!(String::from_utf8(out.stdout).unwrap().lines().count(), 2);
    for mut h in holders {
        signal(&h, Signal::SIGTERM);
        assert_eq!(code(wait_with_limit(&mut h, Duration::from_secs(10))), 128 + 15);
    }
    let out = output(zoolock(&addr).args([
        "semaphore",
        &path,
        "--leases",
        "2",
        "--timeout",
        "5s",
        "--",
        "sh",
        "-c",
        r#"test "$ZOOLOCK_FENCING_TOKEN" -gt 0 && echo "$ZOOLOCK_NODE""#,
    ]));
    assert!(out.status.success(), "{out:?}");
    assert!(String::from_utf8(out.stdout).unwrap().starts_with(&format!("{path}/leases/")));
    let leases = format!("{path}/leases");
    assert_empty_and_remove(&addr, &leases, Duration::ZERO);
    with_client(&addr, async |c| {
        for p in [format!("{path}/locks"), path.clone()] {
            let _ = c.delete(&p, None).await;
        }
    });
}

/// Issue 18: the count is 1, one holder, one waiter; `count set 2` lets the
/// waiter in within a second, the holder still holding.
#[test]
fn count_set_resizes_a_running_semaphore() {
    let Some(addr) = server() else { return };
    let (path, count) = (unique_path("sized"), unique_path("sized-count"));
    let out = output(zoolock(&addr).args(["count", "get", &count]));
    assert_eq!(code(out.status), 1, "no count yet: {out:?}");
    assert!(output(zoolock(&addr).args(["count", "set", &count, "1"])).status.success());
    let sized = ["semaphore", &path, "--leases-from", &count, "--"];
    let mut holder = zoolock(&addr).args(sized).args(["sleep", "30"]).spawn().unwrap();
    wait_for_participants(&addr, &path, LockKind::Semaphore, 1);
    let entered = scratch("sized").join("entered");
    let touch = format!("touch {} && sleep 30", entered.display());
    let waiter = zoolock(&addr).args(sized).args(["sh", "-c", &touch]).spawn().unwrap();
    wait_for_participants(&addr, &path, LockKind::Semaphore, 2); // its lease node, waiting
    thread::sleep(Duration::from_millis(300));
    assert!(!entered.exists(), "a second lease out of one");

    let out = output(zoolock(&addr).args(["count", "set", &count, "2"]));
    let set_at = Instant::now();
    assert_eq!(String::from_utf8_lossy(&out.stdout).trim(), "2", "{out:?}");
    while !entered.exists() {
        assert!(set_at.elapsed() < Duration::from_secs(1), "the waiter is not in 1 s after `count set 2`");
        thread::sleep(Duration::from_millis(10));
    }
    eprintln!("the waiter got in {:.2?} after `count set 2`", set_at.elapsed());
    assert!(holder.try_wait().unwrap().is_none(), "the holder was not to release");
    let out = output(zoolock(&addr).args(["count", "get", &count]));
    assert_eq!(String::from_utf8(out.stdout).unwrap().trim(), "2");
    let out = output(zoolock(&addr).args(["holders", &path, "--kind", "semaphore", "--leases-from", &count]));
    let text = String::from_utf8(out.stdout).unwrap();
    assert_eq!(text.lines().next(), Some("size 2 remaining 0"), "{text}");
    assert_eq!(text.lines().count(), 3, "{text}");

    for mut h in [holder, waiter] {
        signal(&h, Signal::SIGTERM);
        assert_eq!(code(wait_with_limit(&mut h, Duration::from_secs(10))), 128 + 15);
    }
    assert_empty_and_remove(&addr, &format!("{path}/leases"), Duration::from_secs(5));
    with_client(&addr, async |c| {
        for p in [format!("{path}/locks"), path.clone(), count.clone()] {
            let _ = c.delete(&p, None).await;
        }
    });
}

/// Issue 18: a revocable lease holder asked to give its lease up stops its
/// CMD, and the lease node is gone.
#[test]
fn revoke_node_stops_a_revocable_lease_holder() {
    let Some((addr, path)) = server_path("revocable-lease") else { return };
    let args = ["semaphore", &path, "--leases", "2", "--revocable", "--", "sleep", "30"];
    let mut holder = zoolock(&addr).args(args).spawn().unwrap();
    let list = wait_for_participants(&addr, &path, LockKind::Semaphore, 1);
    let out = output(zoolock(&addr).args(["revoke", "--node", &list[0].0]));
    assert!(out.status.success(), "{out:?}");
    assert_eq!(code(wait_with_limit(&mut holder, Duration::from_secs(10))), 128 + 15);
    assert_empty_and_remove(&addr, &format!("{path}/leases"), Duration::ZERO);
    with_client(&addr, async |c| {
        assert!(c.exists(&list[0].0).await.unwrap().is_none(), "the lease node is gone");
        for p in [format!("{path}/locks"), path.clone()] {
            let _ = c.delete(&p, None).await;
        }
    });
}

// ---- losing the lock -----------------------------------------------------------------------

/// A TCP relay to the server that can be cut: after [`Proxy::cut`] every
/// relayed connection is shut down and new ones are closed at once.
struct Proxy {
    addr: SocketAddr,
    cut: Arc<AtomicBool>,
    streams: Arc<Mutex<Vec<TcpStream>>>,
    /// Every byte the clients sent, in order.
    sent: Arc<Mutex<Vec<u8>>>,
}

impl Proxy {
    fn start(upstream: &str) -> Proxy {
        let upstream = upstream.split(['/', ',']).next().unwrap().to_owned();
        let listener = TcpListener::bind("127.0.0.1:0").unwrap();
        let addr = listener.local_addr().unwrap();
        let cut = Arc::new(AtomicBool::new(false));
        let streams = Arc::new(Mutex::new(Vec::new()));
        let sent = Arc::new(Mutex::new(Vec::new()));
        let (c, s, record) = (cut.clone(), streams.clone(), sent.clone());
        thread::spawn(move || {
            for client in listener.incoming() {
                let Ok(client) = client else { continue };
                if c.load(Ordering::SeqCst) {
                    continue;
                }
                let Ok(server) = TcpStream::connect(&upstream) else { continue };
                let mut list = s.lock().unwrap();
                list.push(client.try_clone().unwrap());
                list.push(server.try_clone().unwrap());
                drop(list);
                for (mut from, mut to, record) in [
                    (client.try_clone().unwrap(), server.try_clone().unwrap(), Some(record.clone())),
                    (server.try_clone().unwrap(), client.try_clone().unwrap(), None),
                ] {
                    thread::spawn(move || {
                        let mut buf = [0u8; 8192];
                        while let Ok(n) = from.read(&mut buf) {
                            if let Some(record) = &record {
                                record.lock().unwrap().extend_from_slice(&buf[..n]);
                            }
                            if n == 0 || to.write_all(&buf[..n]).is_err() {
                                break;
                            }
                        }
                        let _ = to.shutdown(Shutdown::Both);
                    });
                }
            }
        });
        Proxy { addr, cut, streams, sent }
    }

    /// The opcodes of the requests the (one) relayed client sent after its
    /// ConnectRequest, pings included.
    fn opcodes(&self) -> Vec<i32> {
        let sent = self.sent.lock().unwrap();
        let mut frames = Vec::new();
        let mut rest = &sent[..];
        while rest.len() >= 4 {
            let len = u32::from_be_bytes(rest[..4].try_into().unwrap()) as usize;
            if rest.len() < 4 + len {
                break;
            }
            frames.push(&rest[4..4 + len]);
            rest = &rest[4 + len..];
        }
        frames
            .iter()
            .skip(1)
            .filter(|f| f.len() >= 8)
            .map(|f| i32::from_be_bytes(f[4..8].try_into().unwrap()))
            .collect()
    }

    fn cut(&self) {
        self.cut.store(true, Ordering::SeqCst);
        for s in self.streams.lock().unwrap().drain(..) {
            let _ = s.shutdown(Shutdown::Both);
        }
    }
}

/// The progress line shows the waiter's place in the queue from the lock's
/// own listings: behind a holder and five waiters, a waiter that draws the
/// line about eight times sends one create, one listing and one watch,
/// never a request per waiter or per redraw (the old line listed the
/// participants and read each one's data on every tick). Naming the holder
/// costs a data-less listing and one read of the holder's data, once when
/// the line starts (then every 10 s) and once for the time-out message.
#[test]
fn the_progress_line_sends_no_request_per_waiter() {
    let Some((addr, path)) = server_path("progress") else { return };
    let mut holder = zoolock(&addr).args(["lock", &path, "--", "sleep", "30"]).spawn().unwrap();
    wait_for_participants(&addr, &path, LockKind::Mutex, 1);
    let mut waiters = Vec::new();
    for n in 2..=6 {
        waiters.push(zoolock(&addr).args(["lock", &path, "--", "true"]).spawn().unwrap());
        wait_for_participants(&addr, &path, LockKind::Mutex, n);
    }
    let proxy = Proxy::start(&addr);
    let out = output(zoolock(&proxy.addr.to_string()).env("ZOOLOCK_PROGRESS", "always").args([
        "lock",
        &path,
        "--timeout",
        "2s",
        "--",
        "true",
    ]));
    assert_eq!(code(out.status), 75, "{out:?}");
    let stderr = String::from_utf8_lossy(&out.stderr);
    let lines = stderr.matches("position 6 of 7 in queue, held by ").count();
    assert!(lines >= 5, "the line was drawn {lines} times: {stderr:?}");
    let ops = proxy.opcodes();
    let count = |op: i32| ops.iter().filter(|o| **o == op).count();
    eprintln!("{lines} progress lines; requests by opcode: {ops:?}");
    // createContainer 19 and create2 15, then getChildren2 12 and getData 4 (the predecessor
    // watch and the fast handoff's look-ahead watch) once, and the listing
    // and the predecessor watch once more at the deadline (Curator runs its
    // loop once more then; the look-ahead watch still stands); the
    // timed-out waiter then deletes its node (2) and closes (-11). Pings
    // (11) are the session's. The old line sent 1 + 6 requests per redraw:
    // about 50 here; a data read per waiter would be 5 more.
    assert_eq!(count(15), 1, "{ops:?}");
    // createContainer (19): the handle's first create carries its base's
    // container create in the same write, once.
    assert!(count(19) <= 1, "one base preamble, none per waiter or redraw: {ops:?}");
    // The holder's two looks add two listings and two data reads.
    assert!(count(12) <= 2 + 2, "listings of the lock loop and the holder looks, none per waiter or redraw: {ops:?}");
    // One more getData per session: the ensemble's membership
    // (`/zookeeper/config`, read once with a watch; Options::follow_ensemble).
    assert!(
        count(4) <= 3 + 2 + 1,
        "the two watches, the deadline's and the holder's data, the membership, no read per waiter: {ops:?}"
    );
    // exists (3): the waiter watches its own node once it waits (ARCHITECTURE §6.1).
    assert!(count(3) <= 1, "one watch on the waiter's own node, none per redraw: {ops:?}");
    assert!(ops.iter().all(|o| [19, 15, 12, 4, 3, 2, 11, -11].contains(o)), "{ops:?}");

    signal(&holder, Signal::SIGTERM);
    assert_eq!(code(wait_with_limit(&mut holder, Duration::from_secs(10))), 128 + 15);
    for mut waiter in waiters {
        assert_eq!(code(wait_with_limit(&mut waiter, Duration::from_secs(10))), 0);
    }
    assert_empty_and_remove(&addr, &path, Duration::from_secs(5));
}

/// `zoolock ARGS -- CMD` where CMD says "got TERM" and exits 0 on SIGTERM.
fn holding_a_term_trapping_cmd(addr: &str, args: &[&str]) -> Child {
    zoolock(addr)
        .args(args)
        .args(["--", "sh", "-c", "trap 'echo got TERM; exit 0' TERM; while :; do sleep 0.05; done"])
        .stdout(Stdio::piped())
        .stderr(Stdio::piped())
        .spawn()
        .unwrap()
}

/// Waits for `holder` (see [`holding_a_term_trapping_cmd`]) to exit 70
/// after losing its lock, with CMD stopped by SIGTERM; returns how long
/// after `since` it exited, and its stderr.
fn stopped_with_70(holder: &mut Child, since: Instant) -> (Duration, String) {
    let status = wait_with_limit(holder, Duration::from_secs(10));
    let took = since.elapsed();
    let mut stdout = String::new();
    let mut stderr = String::new();
    holder.stdout.take().unwrap().read_to_string(&mut stdout).unwrap();
    holder.stderr.take().unwrap().read_to_string(&mut stderr).unwrap();
    assert_eq!(code(status), 70, "stdout {stdout:?} stderr {stderr:?}");
    assert_eq!(stdout.trim(), "got TERM", "CMD got SIGTERM");
    assert!(stderr.contains("lost the lock"), "{stderr}");
    (took, stderr)
}

#[test]
fn a_connection_suspended_past_grace_stops_cmd_and_exits_70() {
    let Some((addr, path)) = server_path("loss") else { return };
    let proxy = Proxy::start(&addr);
    let mut holder = holding_a_term_trapping_cmd(
        &proxy.addr.to_string(),
        &["--session-timeout", "3s", "lock", &path, "--grace", "300ms", "--kill-after", "300ms"],
    );
    wait_for_participants(&addr, &path, LockKind::Mutex, 1);
    thread::sleep(Duration::from_millis(200));
    let cut_at = Instant::now();
    proxy.cut();
    let (took, _) = stopped_with_70(&mut holder, cut_at);
    // Grace, then up to 2 s of bounded close.
    assert!(took >= Duration::from_millis(300) && took < Duration::from_secs(5), "{took:?}");
    eprintln!("exit 70 came {took:.2?} after the cut");
    // The server expires the session (3 s) and with it the node.
    assert_empty_and_remove(&addr, &path, Duration::from_secs(15));
}

// ---- no server needed -----------------------------------------------------------------------

/// Someone else deletes the lock node while CMD runs: the hold is `Lost` at
/// once (the node is watched), so CMD is stopped and the exit is 70, with no
/// grace (the grace is for a suspended connection, which may come back).
#[test]
fn a_deleted_lock_node_stops_cmd_and_exits_70() {
    let Some((addr, path)) = server_path("deleted") else { return };
    let mut holder = holding_a_term_trapping_cmd(&addr, &["lock", &path, "--grace", "5s", "--kill-after", "300ms"]);
    let holders = wait_for_participants(&addr, &path, LockKind::Mutex, 1);
    thread::sleep(Duration::from_millis(200));
    let deleted_at = Instant::now();
    with_client(&addr, async |c| c.delete(&holders[0].0, None).await.unwrap());
    let (took, stderr) = stopped_with_70(&mut holder, deleted_at);
    assert!(stderr.contains("node was deleted"), "{stderr}");
    assert!(took < Duration::from_secs(3), "{took:?}");
    eprintln!("exit 70 came {took:.2?} after the delete");
    assert_empty_and_remove(&addr, &path, Duration::from_secs(5));
}

#[test]
fn usage_errors_exit_64_and_unreachable_servers_69() {
    let out = output(Command::new(BIN).args(["lock", "relative/path", "--", "true"]));
    assert_eq!(code(out.status), 64, "{out:?}");
    let out = output(Command::new(BIN).args(["lock", "/x"]));
    assert_eq!(code(out.status), 64, "{out:?}");
    let out = output(Command::new(BIN).args(["lock", "/x", "--grace", "10s", "--", "true"]));
    assert_eq!(code(out.status), 64, "grace not below the session timeout: {out:?}");
    let out = output(Command::new(BIN).args(["elect", "/x", "--policy", "session", "--grace", "1s", "--", "true"]));
    assert_eq!(code(out.status), 64, "a grace under the session policy: {out:?}");
    let out = output(Command::new(BIN).args(["elect", "/x", "--policy", "lenient", "--", "true"]));
    assert_eq!(code(out.status), 64, "an unknown policy: {out:?}");
    let out = output(Command::new(BIN).arg("--help"));
    assert!(out.status.success());
    assert!(String::from_utf8(out.stdout).unwrap().contains("Exit codes:"));

    // A port nothing listens on (bound, then released).
    let port = TcpListener::bind("127.0.0.1:0").unwrap().local_addr().unwrap().port();
    let out = output(Command::new(BIN).env("ZOOLOCK_CONNECT", format!("127.0.0.1:{port}")).args([
        "--connect-timeout",
        "500ms",
        "lock",
        "/x",
        "--",
        "true",
    ]));
    assert_eq!(code(out.status), 69, "{out:?}");
}

/// With the default 15 s connect timeout, a refused port and a host that
/// does not resolve exit 69 within 5 s, with one line naming the cause.
#[test]
fn unreachable_servers_exit_69_at_once_naming_the_cause() {
    let port = TcpListener::bind("127.0.0.1:0").unwrap().local_addr().unwrap().port();
    for (hosts, cause) in
        [(format!("127.0.0.1:{port}"), "refused"), ("no-such-host.invalid:2181".to_owned(), "does not resolve")]
    {
        let started = Instant::now();
        let out = output(zoolock(&hosts).args(["holders", "/x"]));
        let took = started.elapsed();
        assert_eq!(code(out.status), 69, "{out:?}");
        let stderr = String::from_utf8(out.stderr).unwrap();
        let lines: Vec<&str> = stderr.lines().collect();
        assert_eq!(lines.len(), 1, "one error line: {stderr}");
        assert!(lines[0].contains(&hosts) && lines[0].to_lowercase().contains(cause), "{stderr}");
        assert!(took < Duration::from_secs(5), "{hosts}: exit after {took:?}");
    }
}

// ---- zoolock serve (no real server needed) ---------------------------------------------

#[test]
fn serve_runs_the_model_until_sigterm() {
    let (mut server, addr) = common::spawn_serve();
    assert!(addr.parse::<SocketAddr>().is_ok_and(|a| a.ip().is_loopback() && a.port() != 0), "printed {addr:?}");

    let out = output(zoolock(&addr).args(["lock", "/x", "--", "sh", "-c", "test -n \"$ZOOLOCK_NODE\""]));
    assert_eq!(code(out.status), 0, "{out:?}");
    let out = output(zoolock(&addr).args(["holders", "/x"]));
    assert_eq!(code(out.status), 0, "{out:?}");
    assert!(out.stdout.is_empty(), "the lock was released: {out:?}");

    signal(&server, Signal::SIGTERM);
    let status = wait_with_limit(&mut server, Duration::from_secs(10));
    assert_eq!(code(status), 0, "{status:?}");
    assert!(TcpStream::connect(&addr).is_err(), "nothing listens on {addr} any more");
}

// ---- foreign clients through zoolock serve (no real server needed) ----------------------

/// `zoolock serve --port 0`, stopped with SIGTERM on drop.
struct Served {
    child: Child,
    addr: String,
}

impl Served {
    fn start() -> Served {
        let (child, addr) = common::spawn_serve();
        Served { child, addr }
    }

    /// Asserts that `zoolock holders --kind KIND PATH` lists nobody.
    fn assert_no_holders(&self, kind: &str, path: &str) {
        let out = output(zoolock(&self.addr).args(["holders", "--kind", kind, path]));
        assert_eq!(code(out.status), 0, "{out:?}");
        assert!(out.stdout.is_empty(), "{path} still has holders: {}", String::from_utf8_lossy(&out.stdout));
    }
}

impl Drop for Served {
    fn drop(&mut self) {
        signal(&self.child, Signal::SIGTERM);
        let status = wait_with_limit(&mut self.child, Duration::from_secs(10));
        if !thread::panicking() {
            assert_eq!(code(status), 0, "zoolock serve: {status:?}");
        }
    }
}

/// Curator 5.4.0 (testkit/java/CuratorDriver.java) takes and releases an
/// InterProcessMutex from 2 sessions, 10 times each, and a 2-lease
/// InterProcessSemaphoreV2 from 3, against `zoolock serve`; no hold conflicts
/// and nothing is left behind.
#[test]
fn curator_locks_through_zoolock_serve() {
    let test = "curator_locks_through_zoolock_serve";
    let Some(java) = zoolock_testkit::java::java_or_skip(test) else { return };
    let served = Served::start();
    let rt = tokio::runtime::Builder::new_multi_thread().worker_threads(2).enable_all().build().unwrap();
    rt.block_on(async {
        let jv = zoolock_testkit::java::Java::start(java, &served.addr).await;
        for (path, verbs, args, cycles, limit) in [
            ("/curator-mutex", ("MUTEX_ACQUIRE", "MUTEX_RELEASE"), "/curator-mutex".to_owned(), 10, 1),
            ("/curator-sem", ("SEM_ACQUIRE", "SEM_RETURN"), "/curator-sem 2".to_owned(), 5, 2),
        ] {
            let ids: &[&str] = if limit == 1 { &["c1", "c2"] } else { &["s1", "s2", "s3"] };
            let mut tasks = Vec::new();
            for id in ids {
                let mut peer = jv.peer(&format!("{id}{path}").replace('/', "-"));
                let args = args.clone();
                tasks.push(tokio::spawn(async move {
                    let mut holds = Vec::new();
                    for _ in 0..cycles {
                        let (_, enter) = peer.acquire(verbs.0, &args).await;
                        tokio::time::sleep(Duration::from_millis(3)).await;
                        let (exit, _) = peer.release(verbs.1).await;
                        holds.push((enter, exit));
                    }
                    holds
                }));
            }
            let mut events = Vec::new();
            for task in tasks {
                let holds = zoolock_testkit::java::within("contender", task).await.unwrap();
                assert_eq!(holds.len(), cycles);
                events.extend(holds.into_iter().flat_map(|(enter, exit)| [(enter, 1), (exit, -1)]));
            }
            events.sort_unstable();
            let (mut inside, mut most) = (0, 0);
            for (_, delta) in events {
                inside += delta;
                most = most.max(inside);
            }
            assert!(most <= limit, "{path}: {most} holders at once, limit {limit}");
            println!("{test}: {path}: {} holds, at most {most} at once", ids.len() * cycles);
        }
        drop(jv);
    });
    served.assert_no_holders("mutex", "/curator-mutex");
    served.assert_no_holders("semaphore", "/curator-sem");
}

/// kazoo (conformance/python/kazoo_locks.py: Lock, ReadLock/WriteLock,
/// Semaphore) against `zoolock serve`; the script checks itself.
#[test]
fn kazoo_locks_through_zoolock_serve() {
    let test = "kazoo_locks_through_zoolock_serve";
    let python = std::env::var("PYTHON").unwrap_or_else(|_| "python3".into());
    let importable = Command::new(&python).args(["-c", "import kazoo"]).output().is_ok_and(|o| o.status.success());
    if !importable {
        assert!(!zoolock_testkit::in_ci(), "{test}: kazoo is not importable (scripts/install-deps.sh installs it)");
        eprintln!("skipped {test}: `{python} -c 'import kazoo'` failed");
        return;
    }
    let served = Served::start();
    let script = concat!(env!("CARGO_MANIFEST_DIR"), "/../conformance/python/kazoo_locks.py");
    let mut child = Command::new(&python).arg(script).arg(&served.addr).stdin(Stdio::null()).spawn().unwrap();
    let status = wait_with_limit(&mut child, Duration::from_secs(180));
    assert!(status.success(), "{test}: kazoo_locks.py failed ({status}); see its output above");
}
