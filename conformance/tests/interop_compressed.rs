//! Interop with Curator's gzip framing of node data (issue 24): Curator
//! 5.4.0's `GzipCompressionProvider`, through `setData().compressed()` and
//! `getData().decompressed()`, which is what every write and read of Curator
//! 5.8+ built with `enableCompression()` goes through. A zoolock client with
//! `Compression::Gzip` writes what such a Curator client reads, and reads
//! what it writes; plain data fails Curator's decompressing read. Same
//! set-up and skipping rules as `interop.rs`.

use std::time::Duration;

use zoolock_tokio::{Client, Compression, LockOptions, Options};

use zoolock_testkit::java::{Java, Peer, java_or_skip, within};

async fn connect(addr: &str, compression: Compression) -> Client {
    let options = Options::default().connect_timeout(Duration::from_secs(15)).compression(compression);
    zoolock_tokio::connect(addr, options).await.expect("zoolock connect")
}

/// Curator's decompressed read of `path`, as bytes.
async fn curator_read(peer: &mut Peer, path: &str) -> Vec<u8> {
    peer.send("GZIP_GET", path);
    let words = peer.expect("DATA").await;
    let hex = words[2].strip_prefix('x').expect("x<hex>");
    (0..hex.len()).step_by(2).map(|i| u8::from_str_radix(&hex[i..i + 2], 16).expect("hex")).collect()
}

fn hex(bytes: &[u8]) -> String {
    bytes.iter().map(|b| format!("{b:02x}")).collect()
}

#[tokio::test(flavor = "multi_thread", worker_threads = 4)]
async fn interop_gzip_node_data() {
    let test = "interop_gzip_node_data";
    let Some(addr) = zoolock_testkit::real_server(test) else { return };
    let Some(java) = java_or_skip(test) else { return };
    let root = format!("/zoolock-interop-{}-gzip", std::process::id());
    let jv = Java::start(java, &addr).await;
    let mut curator = jv.peer("gz");
    let (gz, plain) = (connect(&addr, Compression::Gzip).await, connect(&addr, Compression::None).await);

    // zoolock's gzipped lock data and revocation, read by Curator.
    let lock = gz.mutex_with(&format!("{root}/mutex"), LockOptions::default().data("worker-1".into())).await.unwrap();
    let held = lock.acquire().await.unwrap();
    assert_eq!(curator_read(&mut curator, held.node()).await, b"worker-1");
    gz.revoke(held.node()).await.unwrap();
    assert_eq!(curator_read(&mut curator, held.node()).await, b"__REVOKE__");
    held.release().await.unwrap();

    // Curator's gzipped `__REVOKE__` reaches a zoolock holder, gzip or not.
    for client in [&gz, &plain] {
        let guard = client.revocable_mutex(&format!("{root}/revocable")).await.unwrap().acquire().await.unwrap();
        if std::ptr::eq(client, &gz) {
            assert_eq!(curator_read(&mut curator, guard.node()).await, b"", "gzipped empty data");
        }
        curator.send("GZIP_SET", &format!("{} x{}", guard.node(), hex(b"__REVOKE__")));
        curator.expect("SET").await;
        within("the revocation request", guard.revocation_requested()).await;
        guard.release().await.unwrap();
    }

    // A count: zoolock writes it gzipped, Curator reads it; Curator writes
    // one gzipped, zoolock reads it.
    let count_path = format!("{root}/count");
    let count = gz.shared_count(&count_path, 5).await.unwrap();
    assert_eq!(curator_read(&mut curator, &count_path).await, [0, 0, 0, 5]);
    let other = format!("{root}/count2");
    plain.create(&other, &[0, 0, 0, 1], zoolock_tokio::CreateMode::PERSISTENT).await.unwrap();
    curator.send("GZIP_SET", &format!("{other} x{}", hex(&[0, 0, 0, 9])));
    curator.expect("SET").await;
    assert_eq!(plain.shared_count(&other, 0).await.unwrap().get().value, 9);
    drop(count);

    // Plain data is what Curator's decompressing read refuses.
    let plain_node = format!("{root}/plain");
    plain.create(&plain_node, b"__REVOKE__", zoolock_tokio::CreateMode::PERSISTENT).await.unwrap();
    curator.send("GZIP_GET", &plain_node);
    let refused = curator.next_or_error(Duration::from_secs(10)).await.expect("a reply");
    assert_eq!(refused[0], "ERROR", "Curator decompressed plain data: {refused:?}");
    assert!(refused.join(" ").contains("Not in GZip format"), "{refused:?}");

    for path in [count_path, other, plain_node, format!("{root}/mutex"), format!("{root}/revocable"), root.clone()] {
        let _ = plain.delete(&path, None).await;
    }
    for c in [gz, plain] {
        c.close().await.unwrap();
    }
}
