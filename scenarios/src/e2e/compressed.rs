//! Issue 24: clients that gzip their data (Curator 5.8's
//! `enableCompression()`, zoolock's `Options::compression`) and clients that
//! do not, on the same paths.

use std::time::Duration;

use futures_lite::StreamExt;
use zoolock_driver::Bytes;
use zoolock_driver::sans_io::gzip;
use zoolock_driver::{Compression, LockKind, LockOptions};

use super::{Env, close_all, remove_tree};

/// A gzip client writes lock node data, revocations and counts gzipped; a
/// plain client reads them all (participants, revocation, count), and the
/// gzip client reads the plain client's in turn.
pub async fn compressed_data(env: &Env) {
    let root = env.path("compressed");
    let gz = env.client_with(Env::options().compression(Compression::Gzip)).await;
    let plain = env.client().await;

    // Lock node data, empty for a revocable lock, gzipped either way.
    let path = format!("{root}/mutex");
    let with_data = LockOptions::default().data(Bytes::from_static(b"worker-1"));
    let held = gz.mutex_with(&path, with_data).await.unwrap().acquire().await.unwrap();
    let (raw, _) = plain.get_data(held.node()).await.unwrap();
    assert!(gzip::is_gzip(&raw), "{raw:?}");
    assert_eq!(gzip::decompress(&raw, 64).unwrap(), b"worker-1");
    let listed = plain.participants(&path, LockKind::Mutex).await.unwrap();
    assert_eq!(listed[0].data.as_deref(), Some(&b"worker-1"[..]), "participants decompress");
    held.release().await.unwrap();

    // Revocation both ways: gzip holder, plain revoker; plain holder, gzip revoker.
    for (holder, revoker) in [(&gz, &plain), (&plain, &gz)] {
        let path = format!("{root}/revocable");
        let guard = holder.revocable_mutex(&path).await.unwrap().acquire().await.unwrap();
        let (raw, _) = revoker.get_data(guard.node()).await.unwrap();
        assert_eq!(gzip::is_gzip(&raw), std::ptr::eq(holder, &gz), "empty data framed by the holder's setting");
        revoker.revoke(guard.node()).await.unwrap();
        env.within(Duration::from_secs(5), "revocation request", guard.revocation_requested()).await;
        let (raw, _) = revoker.get_data(guard.node()).await.unwrap();
        assert_eq!(gzip::is_gzip(&raw), std::ptr::eq(revoker, &gz), "revoke framed by the revoker's setting");
        guard.release().await.unwrap();
    }

    // A count seeded and set gzipped, read plain; set plain, read gzipped.
    let path = format!("{root}/count");
    let cg = gz.shared_count(&path, 5).await.unwrap();
    let (raw, _) = plain.get_data(&path).await.unwrap();
    assert_eq!(gzip::decompress(&raw, 4).unwrap(), [0, 0, 0, 5]);
    let cp = plain.shared_count(&path, 0).await.unwrap();
    assert_eq!(cp.get().value, 5);
    let mut changes = cg.changes();
    assert_eq!(changes.next().await.unwrap().value, 5);
    cp.set(8).await.unwrap();
    assert_eq!(&plain.get_data(&path).await.unwrap().0[..], [0, 0, 0, 8]);
    let seen = env.within(Duration::from_secs(5), "the plain write", changes.next()).await.unwrap();
    assert_eq!(seen.value, 8);
    assert!(cg.try_set(seen.version, 9).await.unwrap());
    assert!(gzip::is_gzip(&plain.get_data(&path).await.unwrap().0));
    let mut changes = cp.changes();
    while env.within(Duration::from_secs(5), "the gzip write", changes.next()).await.unwrap().value != 9 {}

    drop((cg, cp));
    remove_tree(&plain, &root).await;
    close_all(&[&gz, &plain]).await;
}
