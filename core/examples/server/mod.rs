//! Where the examples connect: `ZOOLOCK_CONNECT` when it is set, else an
//! embedded in-memory ZooKeeper (`zoolock_model::TestingServer`), so that an
//! example runs on a machine with no ZooKeeper at all. (The same helper as
//! `examples/server.rs` at the repository's root, for the driver's examples.)

use std::sync::mpsc;
use std::thread::JoinHandle;

/// The connect string, and the embedded server when one was started (it
/// serves until this is dropped).
pub(crate) struct Server {
    pub(crate) connect: String,
    embedded: Option<(mpsc::Sender<()>, JoinHandle<()>)>,
}

impl Server {
    /// `ZOOLOCK_CONNECT`, or an embedded server on a thread of its own (the
    /// model server runs on tokio, whichever runtime the example uses).
    pub(crate) fn from_env() -> Result<Server, Box<dyn std::error::Error>> {
        if let Ok(connect) = std::env::var("ZOOLOCK_CONNECT") {
            return Ok(Server { connect, embedded: None });
        }
        let (addr_tx, addr_rx) = mpsc::channel();
        let (stop_tx, stop_rx) = mpsc::channel::<()>();
        let thread = std::thread::spawn(move || {
            let rt = tokio::runtime::Builder::new_current_thread().enable_all().build().expect("a tokio runtime");
            rt.block_on(async move {
                let server = zoolock_model::TestingServer::start().await;
                let _ = addr_tx.send(server.connect_string().to_owned());
                // Serve until the example is done (or gone).
                let _ = tokio::task::spawn_blocking(move || stop_rx.recv()).await;
                server.stop().await;
            });
        });
        let connect = addr_rx.recv().map_err(|_| "the embedded ZooKeeper did not start")?;
        eprintln!("ZOOLOCK_CONNECT is not set: using an embedded in-memory ZooKeeper at {connect}");
        Ok(Server { connect, embedded: Some((stop_tx, thread)) })
    }
}

impl Drop for Server {
    fn drop(&mut self) {
        if let Some((stop, thread)) = self.embedded.take() {
            let _ = stop.send(());
            let _ = thread.join();
        }
    }
}
