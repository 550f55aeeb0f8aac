//! Losing the lock: a suspended connection, a deleted lock node.

use crate::*;

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
