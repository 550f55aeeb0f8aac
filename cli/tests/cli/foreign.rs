//! Foreign clients (Curator, kazoo) through `zoolock serve`.

use crate::*;

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
