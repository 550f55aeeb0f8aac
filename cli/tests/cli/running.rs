//! Running CMD: the acceptance test, what CMD sees and what zoolock returns.

use crate::*;

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
