//! Holders, revoke and the other recipes (read-write locks, semaphores, counts).

use crate::*;

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
