//! `zoolock serve [--port P] [limits]`: the in-memory model served on
//! loopback, for tests that want a ZooKeeper without Java, with ZooKeeper's
//! limits on what one client can make it hold.

use std::io::Write;
use std::time::Duration;

use clap::Args;
use zoolock_model::ModelConfig;
use zoolock_model::TestingServer;

use crate::exit::{self, Failure, Outcome};
use crate::signals;

/// What `zoolock serve` takes. Every limit closes the offending connection
/// (the session, if any, lives on until it expires), as ZooKeeper does.
#[derive(Debug, Args)]
#[command(after_help = AFTER_HELP)]
pub(crate) struct ServeArgs {
    /// The loopback port to listen on (0: any free port).
    #[arg(long, value_name = "P", default_value_t = 0)]
    pub(crate) port: u16,
    /// Largest frame a client may send, in bytes (ZooKeeper's
    /// jute.maxbuffer, 1 MiB). A longer length prefix closes the connection
    /// before anything is read or allocated for the frame.
    #[arg(long, value_name = "BYTES", default_value_t = zoolock_tokio::sans_io::wire::JUTE_MAXBUFFER,
          value_parser = frame_len)]
    pub(crate) max_frame: usize,
    /// Connections one client address may hold open at once (ZooKeeper's
    /// maxClientCnxns). One more is closed as soon as it is accepted.
    /// 0: no limit.
    #[arg(long, value_name = "N", default_value_t = 60)]
    pub(crate) max_client_cnxns: usize,
    /// How long a new connection has to send its handshake before it is
    /// closed (ZooKeeper's sessionlessCnxnTimeout). 0s: no deadline.
    #[arg(long, value_name = "D", value_parser = crate::args::duration, default_value = "10s")]
    pub(crate) handshake_timeout: Duration,
    /// Output one connection may have waiting for its client to read, in
    /// bytes. A client that stops reading is dropped once more piles up;
    /// the server never waits for it. 0: no limit.
    #[arg(long, value_name = "BYTES", default_value_t = 16 << 20)]
    pub(crate) max_queued: usize,
    /// Watches one session may hold (data and child registrations
    /// together). A request that leaves more closes its connection after the
    /// reply, and those watches go with it. 0: no limit.
    #[arg(long, value_name = "N", default_value_t = 100_000)]
    pub(crate) max_watches: usize,
}

/// A frame limit: from 64 bytes (a handshake fits) to the largest length a
/// frame's i32 prefix can carry.
fn frame_len(s: &str) -> Result<usize, String> {
    let n: usize = s.parse().map_err(|e| format!("{e}"))?;
    let max = usize::try_from(i32::MAX).unwrap_or(usize::MAX);
    if (64..=max).contains(&n) { Ok(n) } else { Err(format!("must be from 64 to {max}")) }
}

const AFTER_HELP: &str = "\
A client that breaks a limit loses its connection, not its session: the
session expires after its timeout unless the client reconnects. The
defaults are ZooKeeper's where it has one (jute.maxbuffer, maxClientCnxns,
sessionlessCnxnTimeout).";

impl ServeArgs {
    /// The model's configuration: the defaults with these limits.
    fn config(&self) -> ModelConfig {
        let nonzero = |n: usize| (n > 0).then_some(n);
        ModelConfig::default()
            .with_max_frame_len(self.max_frame)
            .with_max_client_cnxns(nonzero(self.max_client_cnxns))
            .with_sessionless_timeout((!self.handshake_timeout.is_zero()).then_some(self.handshake_timeout))
            .with_max_queued_bytes(nonzero(self.max_queued))
            .with_max_watches(nonzero(self.max_watches))
    }
}

/// Serves on `127.0.0.1:port` (0: any free port), prints the connect string
/// on stdout, and stops on SIGINT, SIGTERM or SIGHUP, exiting 0.
pub(super) async fn run(args: ServeArgs) -> Outcome {
    let mut signals =
        signals::install().map_err(|e| Failure::new(exit::FAILURE, format!("cannot install signal handlers: {e}")))?;
    let port = args.port;
    let server = TestingServer::start_on(port, args.config())
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

#[cfg(test)]
mod tests {
    use clap::Parser;

    use crate::args::{Cli, Command};

    #[test]
    fn the_flag_defaults_are_the_models() {
        let cli = Cli::try_parse_from(["zoolock", "serve"]).expect("parses");
        let Command::Serve(args) = cli.command else { panic!("not serve") };
        let (ours, model) = (args.config(), zoolock_model::ModelConfig::default());
        assert_eq!(ours.max_frame_len, model.max_frame_len);
        assert_eq!(ours.max_client_cnxns, model.max_client_cnxns);
        assert_eq!(ours.sessionless_timeout, model.sessionless_timeout);
        assert_eq!(ours.max_queued_bytes, model.max_queued_bytes);
        assert_eq!(ours.max_watches, model.max_watches);
        let cli = Cli::try_parse_from(["zoolock", "serve", "--max-client-cnxns", "0", "--handshake-timeout", "0s"])
            .expect("parses");
        let Command::Serve(args) = cli.command else { panic!("not serve") };
        assert_eq!(args.config().max_client_cnxns, None);
        assert_eq!(args.config().sessionless_timeout, None);
    }
}
