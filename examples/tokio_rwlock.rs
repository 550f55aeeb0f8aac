//! A read-write lock on tokio: two readers hold at once, a writer waits for
//! both, then writes and downgrades to a read without letting another
//! writer in between.
//!
//! ```sh
//! ZOOLOCK_CONNECT=127.0.0.1:2181 cargo run -p zoolock-examples --example tokio_rwlock
//! ```
//!
//! Without `ZOOLOCK_CONNECT` it starts an embedded in-memory ZooKeeper;
//! `ZOOLOCK_LOCK_PATH` defaults to `/zoolock-examples/rwlock`.
//!
//! Each reader has its own handle (one `read_write_lock` call each): reads
//! through separate handles share, while reads through one handle take
//! turns (the sharing rule on `zoolock_tokio::ReadWriteLock`).

mod server;

use std::time::Duration;

use zoolock_tokio::Options;

#[tokio::main(flavor = "current_thread")]
async fn main() -> Result<(), Box<dyn std::error::Error>> {
    let server = server::Server::from_env()?;
    let connect = server.connect.clone();
    let path = std::env::var("ZOOLOCK_LOCK_PATH").unwrap_or_else(|_| "/zoolock-examples/rwlock".into());

    let client = zoolock_tokio::connect(&connect, Options::default()).await?;
    // Two readers, each with its own handle, hold at once.
    let reader_a = client.read_write_lock(&path).await?;
    let reader_b = client.read_write_lock(&path).await?;
    let a = reader_a.read.acquire().await?;
    let b = reader_b.read.acquire().await?;
    println!("acquired read {} with fencing token {}", a.node(), a.fencing_token());
    println!("readers share: {} and {} hold at once", a.node(), b.node());

    // A writer waits for both readers.
    let writer = client.read_write_lock(&path).await?;
    let waiting = writer.write.acquire_timeout(Duration::from_millis(200)).await;
    println!("writer waits while readers hold: {}", waiting.is_err());
    if waiting.is_ok() {
        return Err("a writer got in beside two readers".into());
    }
    a.release().await?;
    b.release().await?;

    let w = writer.write.acquire().await?;
    println!("acquired write {} with fencing token {}", w.node(), w.fencing_token());
    // Keep reading what was written, with no writer in between: downgrade.
    let r = w.downgrade().await?;
    w.release().await?;
    println!("downgraded to read {}", r.node());
    r.release().await?;
    for rw in [&reader_a, &reader_b, &writer] {
        rw.read.settled().await?;
    }
    println!("released");
    client.close().await?;
    Ok(())
}
