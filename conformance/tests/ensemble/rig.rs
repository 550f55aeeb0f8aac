//! The rig's own check (of the link proxies of `scripts/zk-ensemble.sh`, not
//! of zoolock): what a silently isolated follower still answers.

use std::time::Duration;

use crate::partition::{DEBIAN, healthy, left_out_of_ci};
use crate::workload::blocking;
use crate::{ensemble_with, serial};
use zoolock_testkit::raw::RawConn;
use zoolock_tokio::sans_io::wire::{Bytes, PathRequest, PathWatchRequest, Request, RequestFrame, Xid};

/// Sends `request` on `conn` (with the next xid; a ping with its own) and
/// waits `within` for a reply with that xid (other frames are skipped): the
/// time it took, or `None`.
fn raw_call(conn: &mut RawConn, request: Request, within: Duration) -> Option<Duration> {
    let xid = if matches!(request, Request::Ping) { Xid(-2) } else { conn.next_xid() };
    let started = std::time::Instant::now();
    conn.write(&RequestFrame::new(xid, request));
    while started.elapsed() < within {
        let frame = conn.read_frame_within(within.saturating_sub(started.elapsed()))??;
        let got = frame.get(..4).and_then(|b| b.try_into().ok()).map(i32::from_be_bytes);
        if got == Some(xid.0) {
            return Some(started.elapsed());
        }
    }
    None
}

/// The rig's own check (asserts the proxy, not zoolock): while its links are
/// silent, an isolated follower still answers a client's ping and a read,
/// but not a `sync` (which it forwards to the leader). Also reports whether
/// a ping sent after that unanswered `sync` is answered (ZooKeeper keeps a
/// session's requests in order).
#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn partition_rig_isolated_follower_answers() {
    let name = "partition-rig";
    if left_out_of_ci(name) {
        return;
    }
    let _serial = serial().await;
    let Some(ens) = ensemble_with(name, &DEBIAN.env()) else { return };
    healthy(&ens).await;
    let report = blocking({
        let ens = ens.clone();
        move || {
            let leader = ens.leader();
            let f = (1..=3).find(|&n| n != leader).expect("a follower");
            let (mut conn, _, _) = RawConn::connect(&ens.addr(f), 0, Bytes::from_static(&[0; 16]));
            let sync = || Request::Sync(PathRequest { path: "/".to_owned() });
            let short = Duration::from_secs(2);
            let before = raw_call(&mut conn, sync(), short);
            ens.isolate(f, "silent");
            std::thread::sleep(Duration::from_millis(500));
            let ping = raw_call(&mut conn, Request::Ping, short);
            let read =
                raw_call(&mut conn, Request::Exists(PathWatchRequest { path: "/".to_owned(), watch: false }), short);
            let isolated_sync = raw_call(&mut conn, sync(), Duration::from_secs(3));
            let ping_after = raw_call(&mut conn, Request::Ping, short);
            ens.heal();
            (f, before, ping, read, isolated_sync, ping_after)
        }
    })
    .await;
    let (f, before, ping, read, isolated_sync, ping_after) = report;
    let ms = |d: Option<Duration>| d.map_or("no answer".to_owned(), |d| format!("{:.1} ms", d.as_secs_f64() * 1000.0));
    println!(
        "partition {name}: follower {f}: sync before the isolation {}; silent isolation: ping {}, exists {}, sync {} (3 s), \
         a ping after that sync {} (2 s)",
        ms(before),
        ms(ping),
        ms(read),
        ms(isolated_sync),
        ms(ping_after)
    );
    assert!(before.is_some(), "{name}: sync unanswered before the isolation");
    assert!(ping.is_some() && read.is_some(), "{name}: the isolated follower stopped answering at once");
    assert!(isolated_sync.is_none(), "{name}: the isolated follower answered a sync: the links are not silent");
}
