//! Take a Curator-compatible mutex on tokio, work while watching for loss,
//! release, close.
//!
//! ```sh
//! ZOOLOCK_CONNECT=127.0.0.1:2181 cargo run -p zoolock-examples --example tokio_mutex
//! ```
//!
//! Without `ZOOLOCK_CONNECT` it starts an embedded in-memory ZooKeeper;
//! `ZOOLOCK_LOCK_PATH` defaults to `/zoolock-examples/mutex`.

mod server;

use std::time::Duration;

use zoolock_tokio::{HoldStatus, Options};

#[tokio::main(flavor = "current_thread")]
async fn main() -> Result<(), Box<dyn std::error::Error>> {
    let server = server::Server::from_env()?;
    let connect = server.connect.clone();
    let path = std::env::var("ZOOLOCK_LOCK_PATH").unwrap_or_else(|_| "/zoolock-examples/mutex".into());

    let client = zoolock_tokio::connect(&connect, Options::default()).await?;
    let lock = client.mutex(&path).await?;
    let guard = lock.acquire().await?;
    // Hand the token to the protected resource with every write, so it can
    // refuse a holder whose lock was taken over.
    println!("acquired {} with fencing token {}", guard.node(), guard.fencing_token().0);

    // The critical section runs only while the hold is certain: if the
    // connection drops (Suspended) or the session expires (Lost), stop.
    tokio::select! {
        () = work() => println!("work done"),
        status = guard.lost() => {
            eprintln!("hold became {status:?}: stopped working");
            if status == HoldStatus::Lost {
                return Err("lock lost".into());
            }
        }
    }

    guard.release().await?;
    println!("released");
    client.close().await?;
    Ok(())
}

/// Stands in for the protected work.
async fn work() {
    tokio::time::sleep(Duration::from_millis(200)).await;
}
