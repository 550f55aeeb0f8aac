//! zoolock from plain threads (`zoolock-blocking`): no async anywhere in the
//! program. Two threads share one mutex handle; each takes the lock with a
//! time-out, works, and releases.
//!
//! ```sh
//! ZOOLOCK_CONNECT=127.0.0.1:2181 cargo run -p zoolock-examples --example blocking_mutex
//! ```
//!
//! Without `ZOOLOCK_CONNECT` it starts an embedded in-memory ZooKeeper;
//! `ZOOLOCK_LOCK_PATH` defaults to `/zoolock-examples/blocking-mutex`.

mod server;

use std::time::Duration;

fn main() -> Result<(), Box<dyn std::error::Error>> {
    let server = server::Server::from_env()?;
    let connect = server.connect.clone();
    let path = std::env::var("ZOOLOCK_LOCK_PATH").unwrap_or_else(|_| "/zoolock-examples/blocking-mutex".into());
    let client = zoolock_blocking::connect(&connect, zoolock_blocking::Options::default())?;
    let lock = client.mutex(&path)?;

    let workers: Vec<_> = (0..2)
        .map(|i| {
            let lock = lock.clone(); // clones queue FIFO on one handle
            std::thread::spawn(move || -> Result<(), zoolock_blocking::Error> {
                let guard = lock.acquire_timeout(Duration::from_secs(10))?;
                println!("acquired {} in thread {i} with fencing token {}", guard.node(), guard.fencing_token().0);
                std::thread::sleep(Duration::from_millis(50));
                println!("work done in thread {i}");
                guard.release()
            })
        })
        .collect();
    for worker in workers {
        worker.join().expect("worker panicked")?;
    }
    lock.settled()?;
    println!("released");
    client.close()?;
    Ok(())
}
