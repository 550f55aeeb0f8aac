//! Plain operations and the session: create/read/write/delete and multi,
//! connection states, close, and a chroot made on connect.

use super::*;

fn server_error<T: std::fmt::Debug>(r: Result<T, Error>, code: ErrorCode) {
    match r {
        Err(Error::Request(RequestError::Server(c))) if c == code => {}
        other => panic!("expected {code:?}, got {other:?}"),
    }
}

/// create, get_data, set_data, exists, get_children, delete, multi.
pub async fn plain_ops(env: &Env) {
    let base = env.path("ops");
    let a = env.client().await;
    let (created, stat) = a.create(&base, b"hello", CreateMode::PERSISTENT).await.unwrap();
    assert_eq!(created, base);
    assert_eq!(stat.version, 0);
    server_error(a.create(&base, b"", CreateMode::PERSISTENT).await, ErrorCode::NODE_EXISTS);
    let (data, stat) = a.get_data(&base).await.unwrap();
    assert_eq!(&data[..], b"hello");
    assert_eq!(stat.data_length, 5);
    let stat = a.set_data(&base, b"world", Some(0)).await.unwrap();
    assert_eq!(stat.version, 1);
    server_error(a.set_data(&base, b"stale", Some(0)).await, ErrorCode::BAD_VERSION);
    assert_eq!(&a.get_data(&base).await.unwrap().0[..], b"world");
    assert!(a.exists(&base).await.unwrap().is_some());
    assert!(a.exists(&format!("{base}/missing")).await.unwrap().is_none());
    server_error(a.get_data(&format!("{base}/missing")).await, ErrorCode::NO_NODE);

    let child = format!("{base}/child");
    a.create(&child, b"c", CreateMode::PERSISTENT).await.unwrap();
    let (seq, stat) = a.create(&format!("{base}/seq-"), b"", CreateMode::EPHEMERAL_SEQUENTIAL).await.unwrap();
    assert!(seq.starts_with(&format!("{base}/seq-")) && seq.len() == base.len() + 5 + 10, "{seq}");
    assert_ne!(stat.ephemeral_owner, 0);
    let (mut names, stat) = a.get_children(&base).await.unwrap();
    names.sort();
    assert_eq!(names, vec!["child".to_owned(), seq.rsplit('/').next().unwrap().to_owned()]);
    assert_eq!(stat.num_children, 2);

    // multi: all or nothing.
    let p = |s: &str| ZkPath::new(s).unwrap();
    let m1 = format!("{base}/m1");
    let ops = vec![
        Op::create(&p(&m1), Bytes::from_static(b"m"), Acl::open_unsafe(), CreateMode::PERSISTENT),
        Op::set_data(&p(&child), Bytes::from_static(b"c2"), Some(0)),
        Op::delete(&p(&child), None),
    ];
    let results = a.multi(ops).await.unwrap();
    assert_eq!(results.len(), 3);
    assert!(results.iter().all(|r| matches!(r, MultiResult::Ok { .. })), "{results:?}");
    assert!(a.exists(&child).await.unwrap().is_none());
    assert!(a.exists(&m1).await.unwrap().is_some());
    let m2 = format!("{base}/m2");
    let ops = vec![
        Op::create(&p(&m2), Bytes::new(), Acl::open_unsafe(), CreateMode::PERSISTENT),
        Op::delete(&p(&format!("{base}/missing")), None),
    ];
    match a.multi(ops).await {
        Err(_) => {}
        Ok(results) => assert!(results.iter().any(|r| matches!(r, MultiResult::Error(_))), "{results:?}"),
    }
    assert!(a.exists(&m2).await.unwrap().is_none(), "a failed multi left its create behind");

    // Large values: writes that return Pending with bytes left, replies read
    // in many chunks, several of them in flight at once.
    let big: Vec<u8> = (0..900 * 1024).map(|i: u32| (i % 251) as u8).collect();
    let bigs: Vec<String> = (0..4).map(|i| format!("{base}/big{i}")).collect();
    let mode = CreateMode::PERSISTENT;
    let first = future::zip(a.create(&bigs[0], &big, mode), a.create(&bigs[1], &big, mode));
    let second = future::zip(a.create(&bigs[2], &big, mode), a.create(&bigs[3], &big, mode));
    let ((r0, r1), (r2, r3)) = future::zip(first, second).await;
    for r in [r0, r1, r2, r3] {
        r.unwrap();
    }
    for p in &bigs {
        assert!(a.get_data(p).await.unwrap().0[..] == big[..], "{p}: data differs");
    }
    let b = env.client().await;
    let reads = future::zip(b.get_data(&bigs[0]), b.get_data(&bigs[1])).await;
    assert!(reads.0.unwrap().0[..] == big[..] && reads.1.unwrap().0[..] == big[..]);
    b.close().await.unwrap();
    for p in &bigs {
        a.delete(p, None).await.unwrap();
    }

    server_error(a.delete(&base, None).await, ErrorCode::NOT_EMPTY);
    server_error(a.delete(&m1, Some(7)).await, ErrorCode::BAD_VERSION);
    a.delete(&m1, Some(0)).await.unwrap();
    a.delete(&seq, None).await.unwrap();
    a.delete(&base, None).await.unwrap();
    assert!(a.exists(&base).await.unwrap().is_none());
    assert!(matches!(a.get_data("not/absolute").await, Err(Error::Path(_))));
    a.close().await.unwrap();
}

// ---- session ---------------------------------------------------------------------------

/// The connection-state stream starts with Connected and ends with Closed.
pub async fn connection_states(env: &Env) {
    let a = env.client().await;
    assert_eq!(a.state(), Some(ConnectionState::Connected));
    assert_ne!(a.session_id(), 0);
    let mut states = a.state_changes().unwrap();
    let first = env.within(Duration::from_secs(1), "first state", states.next()).await;
    assert_eq!(first, Some(ConnectionState::Connected));
    a.close().await.unwrap();
    let next = env.within(Duration::from_secs(1), "closed state", states.next()).await;
    assert_eq!(next, Some(ConnectionState::Closed));
    assert_eq!(a.state(), Some(ConnectionState::Closed));
    let mut late = a.state_changes().unwrap();
    assert_eq!(late.next().await, Some(ConnectionState::Closed), "a late subscriber sees the current state");
    drop(a);
    // The event loop ends once every handle is gone: the streams end.
    assert_eq!(env.within(Duration::from_secs(2), "stream end", states.next()).await, None);
}

/// close() ends the session: its ephemeral nodes and locks go at once, later
/// requests fail; dropping every handle closes it too.
pub async fn close_session(env: &Env) {
    let path = env.path("close");
    let observer = env.client().await;
    let a = env.client().await;
    let eph = env.path("close-ephemeral");
    a.create(&eph, b"", CreateMode::EPHEMERAL).await.unwrap();
    let (la, ga) = held(&a, &path).await;
    let sem = env.path("close-semaphore");
    let mut lease = a.semaphore(&sem, 2).await.unwrap().acquire(1).await.unwrap();
    assert!(observer.exists(&eph).await.unwrap().is_some());
    // An acquire under way when the session closes fails.
    let other = env.path("close-contended");
    let go = observer.mutex(&other).await.unwrap().acquire().await.unwrap();
    let lo = a.mutex(&other).await.unwrap();
    let pending = env.spawn(async move { lo.acquire().await });
    wait_children(env, &observer, &other, 2).await;
    let session = a.session_id();
    // Each closed-session error names this client: its connect string and
    // its session, in the value and in the message.
    let names_a = |e: &Error| match e {
        Error::ClientClosed(name) => {
            let message = e.to_string();
            name.connect_string() == env.addr
                && name.session_id() == session
                && message.contains(&env.addr)
                && message.contains(&format!("{session:#x}"))
        }
        _ => false,
    };
    env.within(Duration::from_secs(5), "close", a.close()).await.unwrap();
    let failed = env.within(Duration::from_secs(1), "acquire under way at close", pending).await;
    // You closed it: ClientClosed, not a session end the server chose.
    assert!(failed.as_ref().is_err_and(names_a), "{failed:?}");
    assert_eq!(children(&observer, &other).await.len(), 1);
    drop(go);
    assert_empty(env, &observer, &other).await;
    remove_tree(&observer, &other).await;
    // Gone at once: closeSession deletes the ephemerals before it answers.
    assert!(observer.exists(&eph).await.unwrap().is_none(), "ephemeral node survived close()");
    assert!(children(&observer, &path).await.is_empty(), "lock node survived close()");
    assert_eq!(ga.status(), HoldStatus::Lost);
    // After close: requests, acquires and new handles fail with
    // ClientClosed (Error::ClientClosed's docs); releases succeed, the close
    // having ended the holds (Hold::release's docs).
    let got = a.get_data(&eph).await;
    assert!(got.as_ref().is_err_and(names_a), "{got:?}");
    let acquired = la.acquire().await;
    assert!(acquired.as_ref().is_err_and(names_a), "{acquired:?}");
    let made = a.mutex(&path).await;
    assert!(made.as_ref().is_err_and(names_a), "{made:?}");
    let made = a.semaphore(&sem, 2).await;
    assert!(made.as_ref().is_err_and(names_a), "{made:?}");
    let made = a.shared_count(&env.path("close-count"), 1).await;
    assert!(made.as_ref().is_err_and(names_a), "{made:?}");
    assert_eq!(ga.release().await, Ok(())); // nothing left to release: not an error
    let lease = lease.pop().unwrap();
    assert_eq!(lease.status(), HoldStatus::Lost);
    assert_eq!(lease.release().await, Ok(()));
    assert!(children(&observer, &format!("{sem}/leases")).await.is_empty(), "lease survived close()");
    remove_tree(&observer, &sem).await;
    a.close().await.unwrap(); // idempotent
    let gb = observer.mutex(&path).await.unwrap().try_acquire().await.unwrap().expect("free after close");
    drop(gb);

    // Dropping every handle closes the session in the background (well
    // before the 10 s session timeout).
    let b = env.client().await;
    let eph2 = env.path("drop-ephemeral");
    b.create(&eph2, b"", CreateMode::EPHEMERAL).await.unwrap();
    let (lb, gb) = held(&b, &path).await;
    drop((b, lb, gb));
    let deadline = Instant::now() + Duration::from_secs(3);
    while observer.exists(&eph2).await.unwrap().is_some() {
        assert!(Instant::now() < deadline, "dropping every handle did not close the session");
        env.sleep(Duration::from_millis(20)).await;
    }
    finish(env, &observer, &path, &[&observer]).await;
}

/// A missing chroot is created before connect returns (Curator's namespace
/// is), so locks under it work at once; with `create_chroot(false)` it is not.
pub async fn chroot_created(env: &Env) {
    let root = env.path("chroot");
    let observer = env.client().await;
    let missing = format!("{}{root}/app", env.addr);
    let off = env.client_at(&missing, Env::options().create_chroot(false)).await;
    assert!(observer.exists(&root).await.unwrap().is_none(), "created although create_chroot(false)");
    off.close().await.unwrap();
    let a = env.client_at(&missing, Env::options()).await;
    assert!(observer.exists(&format!("{root}/app")).await.unwrap().is_some(), "the chroot was not created");
    let lock = a.mutex("/lock").await.unwrap();
    let g = lock.acquire().await.unwrap();
    assert_eq!(g.node().rsplit_once('/').map(|(dir, _)| dir), Some("/lock"), "paths are client paths");
    assert_eq!(children(&observer, &format!("{root}/app/lock")).await.len(), 1);
    g.release().await.unwrap();
    lock.settled().await.unwrap();
    // A second client finds it there.
    let b = env.client_at(&missing, Env::options()).await;
    close_all(&[&a, &b]).await;
    remove_tree(&observer, &root).await;
    observer.close().await.unwrap();
}

/// Errors name what failed: a path the caller got wrong is in the message
/// (`Error::Path`, the caller's fault, whatever call it came through).
pub async fn path_errors_name_the_path(env: &Env) {
    let a = env.client().await;
    let made = a.mutex("no-slash").await;
    let Err(Error::Path(e)) = &made else { panic!("{made:?}") };
    assert_eq!(e.path(), "no-slash");
    assert!(made.unwrap_err().to_string().contains("no-slash"));
    for bad in ["/trailing/", "/a//b"] {
        let got = a.read_write_lock(bad).await;
        assert!(matches!(&got, Err(Error::Path(e)) if e.path() == bad), "{got:?}");
        assert!(got.unwrap_err().to_string().contains(bad));
    }
    let got = a.get_data("relative/node").await;
    assert!(got.is_err_and(|e| matches!(e, Error::Path(_)) && e.to_string().contains("relative/node")));
    a.close().await.unwrap();
}
