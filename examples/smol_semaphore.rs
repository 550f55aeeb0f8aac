//! Take a lease of a Curator-compatible semaphore (`InterProcessSemaphoreV2`
//! layout) on smol, work while watching the lease's loss signal, return the
//! lease, close.
//!
//! ```sh
//! ZOOLOCK_CONNECT=127.0.0.1:2181 cargo run -p zoolock-examples --example smol_semaphore
//! ```
//!
//! Without `ZOOLOCK_CONNECT` it starts an embedded in-memory ZooKeeper;
//! `ZOOLOCK_LOCK_PATH` defaults to `/zoolock-examples/semaphore`.

mod server;

use std::time::Duration;

use zoolock_smol::{HoldStatus, Options};

/// How many holders the semaphore admits at once.
const LEASES: usize = 2;

fn main() -> Result<(), Box<dyn std::error::Error>> {
    let server = server::Server::from_env()?;
    let connect = server.connect.clone();
    let path = std::env::var("ZOOLOCK_LOCK_PATH").unwrap_or_else(|_| "/zoolock-examples/semaphore".into());

    smol::block_on(async {
        let client = zoolock_smol::connect(&connect, Options::default()).await?;
        let semaphore = client.semaphore(&path, LEASES).await?;
        let lease = semaphore.acquire_one().await?;
        println!("acquired lease {} with fencing token {}", lease.node(), lease.fencing_token());

        // The critical section runs only while the lease is certain: stop
        // when the connection drops (Suspended) or the lease's node is gone
        // (Lost: the session expired, or someone deleted it).
        let trouble = async { Some(lease.lost().await) };
        let work = async {
            work().await;
            None
        };
        match smol::future::or(work, trouble).await {
            None => println!("work done"),
            Some(status) => {
                eprintln!("lease became {status:?}: stopped working");
                if status == HoldStatus::Lost {
                    return Err("lease lost".into());
                }
            }
        }

        lease.release().await?;
        println!("released");
        client.close().await?;
        Ok(())
    })
}

/// Stands in for the protected work.
async fn work() {
    smol::Timer::after(Duration::from_millis(200)).await;
}
