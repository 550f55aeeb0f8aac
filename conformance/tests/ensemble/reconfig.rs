//! Dynamic reconfiguration (issue 37): every server of a real ensemble is
//! replaced while a client holds a lock and another waits for it.
//!
//! The ensemble starts with `ZK_RECONFIG=1` (`reconfigEnabled=true`,
//! `skipACL=yes`, each member's client address in its dynamic config). The
//! holder and two waiters connect with a chroot and follow the membership
//! (`Options::follow_ensemble`, on by default). Three times: a new server
//! (4, 5, 6) starts and is added with an incremental `reconfig`, then an
//! original one (1, 2, 3) is removed with `reconfig` and stopped. The
//! `reconfig` requests go over a raw connection (opcode 16; zoolock has no
//! `reconfig` API). Then:
//!
//! * the holder's session is the one it began with, and its hold reads
//!   `Held` again (a move to a remaining member suspends it while the
//!   session reconnects), never `Lost`;
//! * no waiter has acquired meanwhile (no overlap);
//! * both clients dial only the new members, with their chroot;
//! * a client given only the new servers sees the held lock node;
//! * released, the lock goes to each waiter in turn (their sections do
//!   not overlap), and then back to the holder.

use std::collections::BTreeSet;
use std::time::{Duration, Instant};

use zoolock_testkit::raw::RawConn;
use zoolock_tokio::sans_io::EnsembleConfig;
use zoolock_tokio::sans_io::wire::{Bytes, ErrorCode, OpCode, ReconfigRequest, Request, RequestFrame, ServerMessage};
use zoolock_tokio::{Client, HoldStatus, Options};

use crate::{ensemble_with, serial};

/// Long enough for the leader changes a removal causes.
const SESSION: Duration = Duration::from_secs(8);
const CHROOT: &str = "/reconfig";
/// Clients queued behind the holder.
const WAITERS: usize = 2;
/// How long each waiter holds once it acquires.
const WAITER_HOLD: Duration = Duration::from_millis(100);

/// The client port in a `server.N=...;127.0.0.1:PORT` line.
fn client_addr(line: &str) -> String {
    line.rsplit_once(';').map(|(_, c)| c.to_owned()).expect("a client address")
}

/// The member ids of the published configuration (as the admin client,
/// which has no chroot, reads it).
async fn members(admin: &Client) -> Option<BTreeSet<u64>> {
    let (data, _) = admin.get_data("/zookeeper/config").await.ok()?;
    let config = EnsembleConfig::parse(&data).ok()?;
    Some(config.members().iter().map(|m| m.id).collect())
}

/// Sends one `reconfig` to `addr` over a raw connection; `Ok` when the
/// server answered OK, else what happened (a leader change may drop the
/// connection before the answer, with the change committed or not).
fn send_reconfig(addr: &str, joining: Option<String>, leaving: Option<String>) -> Result<(), String> {
    let (mut conn, _, _) = RawConn::connect(addr, 0, Bytes::from_static(&[0; 16]));
    let xid = conn.next_xid();
    let request =
        ReconfigRequest { joining_servers: joining, leaving_servers: leaving, new_members: None, cur_config_id: -1 };
    conn.write(&RequestFrame::new(xid, Request::Reconfig(request)));
    loop {
        let frame = match conn.read_frame_within(Duration::from_secs(15)) {
            Some(Some(frame)) => frame,
            Some(None) => return Err("connection closed".into()),
            None => return Err("no answer in 15 s".into()),
        };
        match ServerMessage::decode(&frame, |_| Some(OpCode::RECONFIG)) {
            Ok(ServerMessage::Reply { header, .. }) if header.xid == xid => {
                return if header.err == ErrorCode::OK { Ok(()) } else { Err(format!("{:?}", header.err)) };
            }
            Ok(_) => {}
            Err(e) => return Err(format!("undecodable answer: {e}")),
        }
    }
}

/// Runs one reconfig through `addr` until the published membership is
/// `want` (retrying when the answer was lost and the change did not land).
async fn reconfig(admin: &Client, addr: &str, joining: Option<String>, leaving: Option<String>, want: &BTreeSet<u64>) {
    let deadline = Instant::now() + Duration::from_secs(60);
    loop {
        let (a, j, l) = (addr.to_owned(), joining.clone(), leaving.clone());
        let sent = tokio::task::spawn_blocking(move || send_reconfig(&a, j, l)).await.expect("reconfig task");
        let settle = Instant::now() + Duration::from_secs(10);
        while Instant::now() < settle {
            if members(admin).await.as_ref() == Some(want) {
                return;
            }
            tokio::time::sleep(Duration::from_millis(200)).await;
        }
        assert!(Instant::now() < deadline, "reconfig to {want:?} did not land (last answer: {sent:?})");
        eprintln!("reconfig: membership not yet {want:?} (answer {sent:?}); again");
    }
}

/// Waits (up to the session timeout and a margin) for `status` to read `Held`.
async fn held_again(status: impl Fn() -> HoldStatus) -> HoldStatus {
    let deadline = Instant::now() + SESSION + Duration::from_secs(4);
    loop {
        let s = status();
        if s == HoldStatus::Held || s == HoldStatus::Lost || Instant::now() >= deadline {
            return s;
        }
        tokio::time::sleep(Duration::from_millis(50)).await;
    }
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn reconfig_replaces_every_server_under_a_hold() {
    let _serial = serial().await;
    let Some(ens) = ensemble_with("reconfig", &[("ZK_RECONFIG", "1".to_owned())]) else {
        return;
    };
    let started = Instant::now();
    let options = || Options::default().session_timeout(SESSION);
    let admin = zoolock_tokio::connect(&ens.connect, options()).await.expect("admin connects");
    let chrooted = format!("{}{CHROOT}", ens.connect);
    let holder = zoolock_tokio::connect(&chrooted, options()).await.expect("holder connects");
    let session = holder.session_id();
    let lock = holder.mutex("/lock").await.expect("mutex");
    let guard = lock.acquire().await.expect("holder acquires");
    let node = guard.node().to_owned();
    let mut waiters = Vec::new();
    let mut sections = Vec::new();
    for _ in 0..WAITERS {
        let waiter = zoolock_tokio::connect(&chrooted, options()).await.expect("waiter connects");
        let waiting = waiter.mutex("/lock").await.expect("waiter's mutex");
        sections.push(tokio::spawn(async move {
            let g = waiting.acquire().await.expect("the waiter's acquire");
            let enter = Instant::now();
            tokio::time::sleep(WAITER_HOLD).await;
            let exit = Instant::now();
            g.release().await.expect("waiter releases");
            (enter, exit)
        }));
        waiters.push(waiter);
    }
    // Every waiter's node is queued before the first server goes.
    let queued = Instant::now() + Duration::from_secs(10);
    loop {
        let (children, _) = admin.get_children(&format!("{CHROOT}/lock")).await.expect("list the lock");
        if children.len() == 1 + WAITERS {
            break;
        }
        assert!(Instant::now() < queued, "waiters not queued: {children:?}");
        tokio::time::sleep(Duration::from_millis(20)).await;
    }

    let mut want: BTreeSet<u64> = [1, 2, 3].into();
    let mut new_addrs = Vec::new();
    for (old, new) in [(1, 4), (2, 5), (3, 6)] {
        let line = ens.join(new);
        let addr = client_addr(&line);
        // Added through a member that stays for this round, removed through the new one.
        let through = match old {
            1 => ens.addr(2),
            2 => ens.addr(3),
            _ => new_addrs.first().cloned().expect("server 4's address"),
        };
        want.insert(new as u64);
        reconfig(&admin, &through, Some(line), None, &want).await;
        want.remove(&(old as u64));
        reconfig(&admin, &addr, None, Some(old.to_string()), &want).await;
        ens.kill(old);
        new_addrs.push(addr);
        let status = held_again(|| guard.status()).await;
        assert_eq!(status, HoldStatus::Held, "the hold after server {old} was replaced by {new}");
        assert!(
            sections.iter().all(|w| !w.is_finished()),
            "a waiter acquired while the holder held (server {old} replaced)"
        );
        eprintln!("reconfig: server {old} replaced by {new} at {:?}", started.elapsed());
    }

    assert_eq!(holder.session_id(), session, "the holder kept its session");
    assert_eq!(guard.status(), HoldStatus::Held);
    let current: BTreeSet<String> = new_addrs.iter().cloned().collect();
    let clients = [("holder", &holder), ("admin", &admin)].into_iter().chain(waiters.iter().map(|w| ("waiter", w)));
    for (who, client) in clients {
        // A client learns the last change from its config watch, which can
        // come after the removed server is gone (a session that was on it
        // reads the config once it has reconnected): it follows within a
        // session's reconnect, not at once.
        let deadline = Instant::now() + SESSION + Duration::from_secs(4);
        let dials = loop {
            let dials: BTreeSet<String> = client.servers().await.expect("servers").into_iter().collect();
            if dials == current || Instant::now() >= deadline {
                break dials;
            }
            tokio::time::sleep(Duration::from_millis(50)).await;
        };
        assert_eq!(dials, current, "the {who} dials only the current members");
    }
    // A client given only the new servers sees the lock node, under the chroot.
    let fresh = zoolock_tokio::connect(&format!("{}{CHROOT}", new_addrs.join(",")), options())
        .await
        .expect("a client of the new servers connects");
    let (children, _) = fresh.get_children("/lock").await.expect("list the lock");
    let name = node.rsplit('/').next().unwrap_or_default();
    assert!(children.iter().any(|c| c == name), "{name} not among {children:?}");

    // The lock still moves: to each waiter in turn, then back to the holder.
    let released = Instant::now();
    guard.release().await.expect("release");
    let mut held = Vec::new();
    for w in sections {
        held.push(tokio::time::timeout(SESSION * 2, w).await.expect("the waiter acquires").expect("waiter task"));
    }
    held.sort();
    let mut free_from = released;
    for (enter, exit) in &held {
        assert!(*enter >= free_from, "a waiter entered before the previous holder left");
        free_from = *exit;
    }
    let again = tokio::time::timeout(SESSION, lock.acquire()).await.expect("the holder acquires again");
    again.expect("acquire").release().await.expect("release again");
    eprintln!(
        "scenario reconfig: 3 servers replaced in {:?}, session kept, hold Held after each round, 0 overlaps",
        started.elapsed()
    );
    for client in waiters.into_iter().chain([fresh, holder, admin]) {
        let _ = tokio::time::timeout(Duration::from_secs(5), client.close()).await;
    }
}
