//! `zoolock holders` never guesses wrong (issue 40): without `--kind` it
//! reads the layout from PATH's node names, marks every holder, refuses a
//! `--kind` the nodes contradict, and reads nodes written by Curator as it
//! reads its own. Black-box, against the embedded server (`zoolock serve`).

use std::process::{Child, Command, Output, Stdio};
use std::thread;
use std::time::{Duration, Instant};

use nix::sys::signal::{Signal, kill};
use nix::unistd::Pid;
use serde_json::{Value, json};

mod common;

use common::Served;

const BIN: &str = env!("CARGO_BIN_EXE_zoolock");

fn zoolock(addr: &str) -> Command {
    let mut c = Command::new(BIN);
    c.env_remove("ZOOLOCK_CONNECT").args(["--connect", addr]).stdin(Stdio::null());
    c
}

fn output(args: &[&str], addr: &str) -> Output {
    zoolock(addr).args(args).output().expect("run zoolock")
}

/// `holders --json PATH [ARGS]`, which must succeed, parsed.
fn holders_json(addr: &str, path: &str, args: &[&str]) -> Value {
    let out = output(&[&["holders", "--json", path][..], args].concat(), addr);
    assert!(out.status.success(), "holders {path} {args:?} failed: {out:?}");
    serde_json::from_str(std::str::from_utf8(&out.stdout).unwrap()).expect("one JSON value")
}

/// Whether each participant holds, in queue order.
fn holding(value: &Value) -> Vec<bool> {
    let list = value["participants"].as_array().unwrap_or_else(|| panic!("no participants: {value}"));
    list.iter().map(|p| p["holding"].as_bool().unwrap_or_else(|| panic!("no holding: {p}"))).collect()
}

/// Waits until `holders --json PATH --kind KIND` succeeds listing `n`
/// participants (until then PATH may show only part of its layout, which
/// `--kind` may not admit yet).
fn wait_for(addr: &str, path: &str, kind: &str, n: usize) -> Value {
    let deadline = Instant::now() + Duration::from_secs(15);
    loop {
        let out = output(&["holders", "--json", path, "--kind", kind], addr);
        if out.status.success() {
            let value: Value = serde_json::from_slice(&out.stdout).expect("one JSON value");
            if value["participants"].as_array().is_some_and(|l| l.len() == n) {
                return value;
            }
        }
        assert!(Instant::now() < deadline, "{path} never had {n} participants: {out:?}");
        thread::sleep(Duration::from_millis(20));
    }
}

/// `holders PATH --kind KIND` must fail (exit 1), naming what PATH has.
fn assert_refused(addr: &str, path: &str, kind: &str, has: &str) {
    let out = output(&["holders", path, "--kind", kind], addr);
    assert_eq!(out.status.code(), Some(1), "--kind {kind} on {path}: {out:?}");
    assert!(out.stdout.is_empty(), "nothing printed on a refusal: {out:?}");
    let stderr = String::from_utf8_lossy(&out.stderr);
    assert!(stderr.contains(path) && stderr.contains(has) && stderr.contains(kind), "--kind {kind}: {stderr}");
}

fn spawn(addr: &str, args: &[&str]) -> Child {
    zoolock(addr).args(args).spawn().expect("run zoolock")
}

fn stop(children: impl IntoIterator<Item = Child>) {
    for mut child in children {
        kill(Pid::from_raw(i32::try_from(child.id()).unwrap()), Signal::SIGTERM).unwrap();
        child.wait().unwrap();
    }
}

/// The case: two readers holding, a writer waiting. Without
/// `--kind` the JSON names the read-write layout and marks both readers;
/// the text marks them too; `--kind mutex` and `--kind semaphore` are
/// refused.
#[test]
fn two_readers_and_a_waiting_writer_are_read_as_a_read_write_lock() {
    let server = Served::start();
    let addr = &server.addr;
    let path = "/rw";
    let mut children = Vec::new();
    for (i, verb) in ["read-lock", "read-lock", "write-lock"].into_iter().enumerate() {
        let data = format!("{verb}-{i}");
        children.push(spawn(addr, &[verb, path, "--data", &data, "--", "sleep", "30"]));
        wait_for(addr, path, "rwlock", i + 1);
    }
    let value = holders_json(addr, path, &[]);
    assert_eq!(value["kind"], json!("rwlock"), "{value}");
    assert_eq!(holding(&value), [true, true, false], "{value}");
    let data: Vec<_> = value["participants"].as_array().unwrap().iter().map(|p| p["data"].clone()).collect();
    assert_eq!(data, [json!("read-lock-0"), json!("read-lock-1"), json!("write-lock-2")]);

    let out = output(&["holders", path], addr);
    assert!(out.status.success(), "{out:?}");
    let text = String::from_utf8(out.stdout).unwrap();
    let states: Vec<_> = text.lines().map(|l| l.split(' ').take(2).collect::<Vec<_>>().join(" ")).collect();
    assert_eq!(states, ["0 holding", "1 holding", "2 waiting"], "{text}");
    assert!(text.lines().all(|l| l.contains("__READ__") || l.contains("__WRIT__")), "{text}");

    for kind in ["mutex", "semaphore", "latch", "election"] {
        assert_refused(addr, path, kind, "__READ__");
    }
    stop(children);
}

/// One layout's case: its path, the command that holds it, its `--kind`,
/// the JSON's `kind`, a name its nodes show, and who holds (in order).
type Case = (&'static str, &'static [&'static str], &'static str, &'static str, &'static str, &'static [bool]);

/// Every layout zoolock writes is recognised without `--kind`, and every
/// other `--kind` is refused: a mutex with a waiter, a semaphore of two
/// with a waiting lease, a LeaderLatch and a LeaderSelector election.
#[test]
fn every_layout_is_recognised_and_contradicting_kinds_are_refused() {
    let server = Served::start();
    let addr = &server.addr;
    let cases: [Case; 4] = [
        ("/mutex", &["lock"], "mutex", "mutex", "lock-", &[true, false]),
        ("/sem", &["semaphore", "--leases", "2"], "semaphore", "semaphore", "leases", &[true, true, true]),
        ("/latch", &["elect", "--latch"], "latch", "leader_latch", "latch-", &[true, false]),
        ("/selector", &["elect"], "mutex", "mutex", "lock-", &[true, false]),
    ];
    for (path, verb, kind, label, has, marks) in cases {
        let mut children = Vec::new();
        for i in 0..marks.len() {
            let data = format!("p{i}");
            let args = [verb, &[path][..], &["--data", &data, "--", "sleep", "30"]].concat();
            children.push(spawn(addr, &args));
            wait_for(addr, path, kind, i + 1);
        }
        let value = holders_json(addr, path, &[]);
        assert_eq!(value["kind"], json!(label), "{path}: {value}");
        // Without a size every lease node counts as holding (as --help says).
        assert_eq!(holding(&value), marks, "{path}: {value}");
        for other in ["mutex", "rwlock", "semaphore", "latch"].into_iter().filter(|k| *k != kind) {
            assert_refused(addr, path, other, has);
        }
        if kind == "semaphore" {
            let sized = holders_json(addr, path, &["--leases", "2"]);
            assert_eq!(holding(&sized), [true, true, false], "{sized}");
            assert_eq!((&sized["size"], &sized["remaining"]), (&json!(2), &json!(0)), "{sized}");
        }
        stop(children);
    }
    // A selector's nodes are `lock-` nodes: `--kind election` reads them,
    // with each participant's id.
    let child = spawn(addr, &["elect", "/selector", "--id", "me", "--", "sleep", "30"]);
    let value = wait_for(addr, "/selector", "election", 1);
    assert_eq!(value["kind"], json!("leader_selector"), "{value}");
    assert_eq!(value["participants"][0]["id"], json!("me"), "{value}");
    stop([child]);
}

/// No nodes: nobody, kind null. Foreign nodes only, or two layouts' nodes,
/// without `--kind`: refused, asking for it; a `--kind` among them is read.
#[test]
fn empty_foreign_and_mixed_paths_are_not_guessed() {
    let server = Served::start();
    let addr = &server.addr;
    assert_eq!(holders_json(addr, "/none", &[]), json!({ "path": "/none", "kind": null, "participants": [] }));
    let out = output(&["holders", "/none"], addr);
    assert!(out.status.success() && out.stdout.is_empty(), "{out:?}");

    // `count set` creates the node (and its parents): a foreign child.
    assert!(output(&["count", "set", "/foreign/config", "1"], addr).status.success());
    let out = output(&["holders", "/foreign"], addr);
    assert_eq!(out.status.code(), Some(1), "{out:?}");
    let stderr = String::from_utf8_lossy(&out.stderr);
    assert!(stderr.contains("cannot tell the layout of /foreign") && stderr.contains("--kind"), "{stderr}");
    let value = holders_json(addr, "/foreign", &["--kind", "mutex"]);
    assert_eq!(value["participants"][0]["node"], json!("/foreign/config"), "{value}");

    // A `locks` folder beside a mutex's node: two layouts.
    assert!(output(&["count", "set", "/mixed/locks", "1"], addr).status.success());
    let holder = spawn(addr, &["lock", "/mixed", "--", "sleep", "30"]);
    wait_for(addr, "/mixed", "mutex", 2);
    let out = output(&["holders", "/mixed", "--json"], addr);
    assert_eq!(out.status.code(), Some(1), "{out:?}");
    let stderr = String::from_utf8_lossy(&out.stderr);
    assert!(stderr.contains("`lock-` nodes and `leases`/`locks` folders"), "{stderr}");
    assert_refused(addr, "/mixed", "rwlock", "lock-");
    stop([holder]);
}

/// Nodes written by Curator 5 (testkit/java/CuratorDriver.java through
/// `zoolock serve`): two InterProcessReadWriteLock readers holding and a
/// writer waiting, an InterProcessMutex with a waiter, and a 2-lease
/// InterProcessSemaphoreV2 read as zoolock's own.
#[test]
fn nodes_written_by_curator_are_recognised() {
    let test = "nodes_written_by_curator_are_recognised";
    let Some(java) = zoolock_testkit::java::java_or_skip(test) else { return };
    let server = Served::start();
    let addr = server.addr.clone();
    let rt = tokio::runtime::Builder::new_multi_thread().worker_threads(2).enable_all().build().unwrap();
    rt.block_on(async {
        let jv = zoolock_testkit::java::Java::start(java, &addr).await;
        let mut peers: Vec<_> = (0..3).map(|i| jv.peer(&format!("rw{i}"))).collect();
        peers[0].acquire("READ_ACQUIRE", "/curator-rw").await;
        peers[1].acquire("READ_ACQUIRE", "/curator-rw").await;
        peers[2].start_acquire("WRITE_ACQUIRE", "/curator-rw");
        let mut mutex: Vec<_> = (0..2).map(|i| jv.peer(&format!("m{i}"))).collect();
        mutex[0].acquire("MUTEX_ACQUIRE", "/curator-mutex").await;
        mutex[1].start_acquire("MUTEX_ACQUIRE", "/curator-mutex");
        let mut sem = jv.peer("s0");
        sem.acquire("SEM_ACQUIRE", "/curator-sem 2").await;

        let addr2 = addr.clone();
        tokio::task::spawn_blocking(move || {
            let addr = &addr2;
            wait_for(addr, "/curator-rw", "rwlock", 3);
            let value = holders_json(addr, "/curator-rw", &[]);
            assert_eq!(value["kind"], json!("rwlock"), "{value}");
            assert_eq!(holding(&value), [true, true, false], "{value}");
            assert_refused(addr, "/curator-rw", "mutex", "__READ__");

            wait_for(addr, "/curator-mutex", "mutex", 2);
            let value = holders_json(addr, "/curator-mutex", &[]);
            assert_eq!((&value["kind"], holding(&value)), (&json!("mutex"), vec![true, false]), "{value}");
            assert_refused(addr, "/curator-mutex", "rwlock", "lock-");

            let value = holders_json(addr, "/curator-sem", &["--leases", "2"]);
            assert_eq!((&value["kind"], holding(&value)), (&json!("semaphore"), vec![true]), "{value}");
            assert_refused(addr, "/curator-sem", "mutex", "leases");
            println!("{test}: Curator's nodes read as rwlock (2 readers holding), mutex, semaphore");
        })
        .await
        .unwrap();
        drop(jv);
    });
}
