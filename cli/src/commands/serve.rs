//! `zoolock serve [--port P]`: the in-memory model served on loopback, for
//! tests that want a ZooKeeper without Java.

use std::io::Write;

use zoolock_model::ModelConfig;
use zoolock_model::TestingServer;

use crate::exit::{self, Failure, Outcome};
use crate::signals;

/// Serves on `127.0.0.1:port` (0: any free port), prints the connect string
/// on stdout, and stops on SIGINT, SIGTERM or SIGHUP, exiting 0.
pub(super) async fn run(port: u16) -> Outcome {
    let mut signals =
        signals::install().map_err(|e| Failure::new(exit::FAILURE, format!("cannot install signal handlers: {e}")))?;
    let server = TestingServer::start_on(port, ModelConfig::default())
        .await
        .map_err(|e| Failure::new(exit::UNAVAILABLE, format!("cannot listen on 127.0.0.1:{port}: {e}")))?;
    {
        let mut out = std::io::stdout().lock();
        let _ = writeln!(out, "{}", server.connect_string());
        let _ = out.flush();
    }
    let signal = signals.recv().await;
    tracing::info!(?signal, "stopping");
    server.stop().await;
    Ok(0)
}
