//! `zoolock elect` and `zoolock leader` against Curator 5.4.0 participants
//! on the real server from `ZOOLOCK_TEST_CONNECT` (issue 27): zoolock
//! processes and Curator `LeaderSelector`s (`setId`, `autoRequeue`) take
//! turns on one path, in both layouts; no two terms overlap, and
//! `zoolock leader PATH` names a participant while they run (inside a
//! zoolock term: that very participant).
//!
//! Terms lie on one time line: CMD writes `date +%s%6N` (wall-clock
//! microseconds) as it starts and ends, the Curator driver reports the same
//! clock. Skipped without a server, or without java or the jars outside CI
//! (with `CI` set, they fail).

use std::collections::HashSet;
use std::process::Stdio;
use std::time::{Duration, Instant, SystemTime, UNIX_EPOCH};

mod common;

use zoolock_testkit::java::{Java, Peer, STEP, java_or_skip, within};

const BIN: &str = env!("CARGO_BIN_EXE_zoolock");
/// zoolock terms per zoolock participant.
const ZOOLOCK_TERMS: usize = 3;

fn unique_path(name: &str) -> String {
    let nanos = SystemTime::now().duration_since(UNIX_EPOCH).unwrap().subsec_nanos();
    format!("/zoolock-cli-{name}-{}-{nanos}", std::process::id())
}

/// `zoolock --connect ADDR ARGS...`.
fn zoolock(addr: &str, args: &[&str]) -> tokio::process::Command {
    let mut c = tokio::process::Command::new(BIN);
    c.env_remove("ZOOLOCK_CONNECT").arg("--connect").arg(addr).args(args).stdin(Stdio::null());
    c
}

/// One term: who led, and from when to when (µs).
#[derive(Debug, Clone)]
struct Term {
    who: String,
    enter: i64,
    exit: i64,
}

/// No two terms overlap.
fn assert_no_overlap(terms: &mut [Term]) {
    terms.sort_by_key(|t| t.enter);
    for w in terms.windows(2) {
        assert!(w[0].enter <= w[0].exit, "{:?}", w[0]);
        assert!(w[0].exit <= w[1].enter, "terms overlap:\n  {:?}\n  {:?}", w[0], w[1]);
    }
}

/// A Curator participant's terms, from its `LEADER`/`RESIGN` lines until `STOPPED`.
async fn curator_terms(mut peer: Peer, id: String) -> Vec<Term> {
    let mut terms = Vec::new();
    let mut enter = None;
    loop {
        let words = peer.next().await;
        match words[0].as_str() {
            "LEADER" => enter = Some(Peer::micros(&words, 2)),
            "RESIGN" => terms.push(Term {
                who: id.clone(),
                enter: enter.take().expect("RESIGN without LEADER"),
                exit: Peer::micros(&words, 2),
            }),
            "STOPPED" => return terms,
            other => panic!("java {}: unexpected {other}", peer.id),
        }
    }
}

/// Runs `zoolock elect` `ZOOLOCK_TERMS` times as `id` (exit codes 0, 1, 2...:
/// elect exits with CMD's). CMD records its term, the environment elect
/// gives it, and what `zoolock leader` says meanwhile.
async fn zoolock_terms(addr: String, path: String, id: String, latch: bool) -> Vec<Term> {
    let dir = common::scratch(&format!("elect-{id}"));
    let mut terms = Vec::new();
    for k in 0..ZOOLOCK_TERMS {
        let log = dir.join(format!("term-{k}"));
        let leader_flag = if latch { " --latch" } else { "" };
        let script = format!(
            "date +%s%6N > {log}.enter; echo \"$ZOOLOCK_NODE\" > {log}.node; \
             {BIN} --connect {addr} leader {path}{leader_flag} > {log}.leader; \
             sleep 0.2; date +%s%6N > {log}.exit; exit {k}",
            log = log.display()
        );
        let mut args = vec!["elect", &path, "--id", &id, "--timeout", "60s"];
        if latch {
            args.push("--latch");
        }
        args.extend(["--", "sh", "-c", &script]);
        let out = within("zoolock elect", zoolock(&addr, &args).output()).await.unwrap();
        assert_eq!(out.status.code(), Some(k as i32), "elect exits with CMD's code: {out:?}");
        let read = |ext: &str| std::fs::read_to_string(format!("{}.{ext}", log.display())).unwrap().trim().to_owned();
        let node = read("node");
        let name = if latch { "-latch-" } else { "-lock-" };
        assert!(node.starts_with(&format!("{path}/_c_")) && node.contains(name), "ZOOLOCK_NODE={node}");
        assert_eq!(read("leader"), id, "`zoolock leader` inside {id}'s term");
        terms.push(Term {
            who: id.clone(),
            enter: read("enter").parse().unwrap(),
            exit: read("exit").parse().unwrap(),
        });
    }
    terms
}

/// Curator participants `ca`, `cb` and zoolock participants `z1`, `z2` on
/// one election path, in the selector or the latch layout.
async fn take_turns(test: &str, latch: bool) {
    let Some(addr) = common::server() else { return };
    let Some(java) = java_or_skip(test) else { return };
    let started = Instant::now();
    let jv = Java::start(java, &addr).await;
    let path = unique_path(test);
    let mut curator = Vec::new();
    for id in ["ca", "cb"] {
        let peer = jv.peer(id);
        if latch {
            peer.send("LATCH_START", &format!("{path} {id} 300 {ZOOLOCK_TERMS}"));
        } else {
            peer.send("SELECTOR_START", &format!("{path} {id} 300"));
        }
        curator.push(tokio::spawn(curator_terms(peer, id.to_owned())));
    }
    let ours: Vec<_> = ["z1", "z2"]
        .into_iter()
        .map(|id| tokio::spawn(zoolock_terms(addr.clone(), path.clone(), id.to_owned(), latch)))
        .collect();

    // Meanwhile `zoolock leader` names a participant, and --json lists them.
    let ids: HashSet<&str> = ["ca", "cb", "z1", "z2"].into();
    let mut named = HashSet::new();
    let leader_args: Vec<&str> = if latch { vec!["leader", &path, "--latch"] } else { vec!["leader", &path] };
    while !ours.iter().all(|t| t.is_finished()) {
        let out = within("zoolock leader", zoolock(&addr, &leader_args).output()).await.unwrap();
        if out.status.success() {
            let leader = String::from_utf8(out.stdout).unwrap().trim().to_owned();
            assert!(ids.contains(leader.as_str()), "zoolock leader printed {leader:?}");
            named.insert(leader);
        } else {
            // Between two terms with nobody queued: exit 1, said on stderr.
            assert_eq!(out.status.code(), Some(1), "{out:?}");
        }
        let json_args = [&leader_args[..], &["--json"]].concat();
        let out = within("zoolock leader --json", zoolock(&addr, &json_args).output()).await.unwrap();
        let list: serde_json::Value = serde_json::from_slice(&out.stdout).expect("JSON");
        let list = list.as_array().expect("an array");
        assert!(list.iter().filter(|p| p["leader"] == true).count() <= 1, "{list:?}");
        assert!(list.iter().all(|p| ids.contains(p["id"].as_str().unwrap())), "{list:?}");
        tokio::time::sleep(Duration::from_millis(100)).await;
    }
    let mut terms = Vec::new();
    for task in ours {
        terms.extend(within("zoolock participant", task).await.unwrap());
    }
    if !latch {
        for id in ["ca", "cb"] {
            jv.send(&format!("SELECTOR_STOP {id}"));
        }
    }
    for task in curator {
        let theirs = within("Curator participant", task).await.unwrap();
        assert!(!theirs.is_empty(), "a Curator participant never led");
        terms.extend(theirs);
    }
    for id in ["z1", "z2"] {
        assert_eq!(terms.iter().filter(|t| t.who == id).count(), ZOOLOCK_TERMS, "{id}'s terms");
    }
    assert_no_overlap(&mut terms);
    assert!(named.len() >= 2, "zoolock leader named only {named:?}");
    println!("{test}: {} terms, leaders named {named:?}, {:?}", terms.len(), started.elapsed());
    assert!(started.elapsed() < STEP * 4);
}

#[tokio::test(flavor = "multi_thread", worker_threads = 4)]
async fn elect_takes_turns_with_curator_leader_selectors() {
    take_turns("elect_selector", false).await;
}

#[tokio::test(flavor = "multi_thread", worker_threads = 4)]
async fn elect_latch_takes_turns_with_curator_leader_latches() {
    take_turns("elect_latch", true).await;
}

/// Waits until `zoolock leader PATH` prints `id`.
async fn until_leader(addr: &str, path: &str, id: &str) {
    let deadline = Instant::now() + STEP;
    loop {
        let out = zoolock(addr, &["leader", path]).output().await.unwrap();
        if String::from_utf8_lossy(&out.stdout).trim() == id {
            return;
        }
        assert!(Instant::now() < deadline, "{id} never led {path}: {out:?}");
        tokio::time::sleep(Duration::from_millis(50)).await;
    }
}

/// `elect` takes `lock`'s options: `-n` exits 75 naming the leader, a
/// signal reaches CMD, `--max-hold` stops CMD and exits 70 (for `lock` too,
/// with a waiter then let in); `holders --kind election` lists ids.
#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn elect_takes_locks_options_and_max_hold_stops_cmd() {
    let Some(addr) = common::server() else { return };
    let path = unique_path("elect-options");
    let out = zoolock(&addr, &["elect", &path, "-n", "--id", "first", "--", "true"]).output().await.unwrap();
    assert_eq!(out.status.code(), Some(0), "-n takes a free election: {out:?}");
    let mut leader = zoolock(&addr, &["elect", &path, "--id", "steady", "--", "sleep", "30"]).spawn().unwrap();
    until_leader(&addr, &path, "steady").await;
    let out = zoolock(&addr, &["elect", &path, "-n", "--id", "eager", "--", "true"]).output().await.unwrap();
    assert_eq!(out.status.code(), Some(75), "{out:?}");
    assert!(String::from_utf8_lossy(&out.stderr).contains("held by steady"), "{out:?}");
    let out = zoolock(&addr, &["holders", &path, "--kind", "election"]).output().await.unwrap();
    let listing = String::from_utf8(out.stdout).unwrap();
    assert!(
        listing.starts_with(&format!("0 holding {path}/_c_")) && listing.trim_end().ends_with(" steady"),
        "{listing}"
    );
    let out = zoolock(&addr, &["leader", &path, "--json"]).output().await.unwrap();
    let json: serde_json::Value = serde_json::from_slice(&out.stdout).unwrap();
    assert_eq!((json[0]["id"].as_str(), json[0]["leader"].as_bool()), (Some("steady"), Some(true)), "{json}");
    let pid = nix::unistd::Pid::from_raw(i32::try_from(leader.id().unwrap()).unwrap());
    nix::sys::signal::kill(pid, nix::sys::signal::Signal::SIGTERM).unwrap();
    let status = within("elect forwards SIGTERM", leader.wait()).await.unwrap();
    assert_eq!(status.code(), Some(128 + 15), "sleep's death by SIGTERM: {status:?}");
    let out = zoolock(&addr, &["leader", &path]).output().await.unwrap();
    assert_eq!(out.status.code(), Some(1), "nobody leads once it left: {out:?}");

    for (cmd, path) in [("lock", unique_path("max-hold-lock")), ("elect", unique_path("max-hold-elect"))] {
        let started = Instant::now();
        let holder = zoolock(&addr, &[cmd, &path, "--max-hold", "1s", "--", "sleep", "30"]).output();
        let waiter = async {
            tokio::time::sleep(Duration::from_millis(300)).await;
            zoolock(&addr, &[cmd, &path, "--", "true"]).output().await.unwrap()
        };
        let (holder, waiter) = tokio::join!(within("the holder", holder), within("the waiter", waiter));
        let (holder, took) = (holder.unwrap(), started.elapsed());
        assert_eq!(holder.status.code(), Some(70), "{cmd}: {holder:?}");
        assert!(
            String::from_utf8_lossy(&holder.stderr).contains("(it was held for --max-hold 1s)"),
            "{cmd}: {holder:?}"
        );
        assert!(took >= Duration::from_secs(1) && took < Duration::from_secs(5), "{cmd}: {took:?}");
        assert_eq!(waiter.status.code(), Some(0), "{cmd}: the waiter runs once the hold expired: {waiter:?}");
    }
}
