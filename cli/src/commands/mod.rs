//! The subcommands, and what they share: connecting and closing.

pub(crate) mod bench;
mod count;
pub(crate) mod demo;
mod generate;
mod holders;
mod leader;
mod lock;
mod revoke;
mod security;
pub(crate) mod serve;
mod watch;

use std::time::Duration;

use zoolock_tokio::{Client, ElectionKind, Error, Options};

use crate::args::{Cli, Command, Global};
use crate::exit::{self, Failure, Outcome};

/// Runs the parsed command line.
pub(crate) async fn run(cli: Cli) -> Outcome {
    let global = &cli.global;
    match cli.command {
        Command::Lock { hold, revocable } => lock::run(global, hold, lock::Target::Mutex { revocable }).await,
        Command::ReadLock { hold } => lock::run(global, hold, lock::Target::Read).await,
        Command::WriteLock { hold } => lock::run(global, hold, lock::Target::Write).await,
        Command::Semaphore { hold, size, revocable } => {
            let size = match (size.leases, size.leases_from) {
                (_, Some(count)) => lock::Size::Count(count),
                (leases, None) => lock::Size::Leases(leases.unwrap_or(1)),
            };
            lock::run(global, hold, lock::Target::Semaphore { size, revocable }).await
        }
        Command::Elect { hold, election } => {
            let id = election.id.unwrap_or_else(leader::default_id);
            let recipe = lock::Target::Elect { id, election: election_of(election.latch), policy: election.policy };
            lock::run(global, hold, recipe).await
        }
        Command::Leader { path, latch, json, watch: true } => {
            let kind = if latch { crate::args::Kind::Latch } else { crate::args::Kind::Election };
            watch::run(global, &path, Some(kind), json).await
        }
        Command::Leader { path, latch, json, watch: false } => {
            leader::run(global, &path, election_of(latch), json).await
        }
        Command::Count { action } => count::run(global, action).await,
        Command::Holders { path, kind, json, watch: true, .. } => watch::run(global, &path, kind, json).await,
        Command::Holders { path, kind, size, json, watch: false } => {
            holders::run(global, &path, kind, size, json).await
        }
        Command::Revoke { path, node } => revoke::run(global, path.as_deref(), node.as_deref()).await,
        Command::Serve(args) => serve::run(args).await,
        Command::Demo(args) => demo::run(global, args).await,
        Command::Bench(args) => bench::run(global, args).await,
        Command::Completions { shell } => generate::completions(shell),
        Command::Man { subcommand } => generate::man(subcommand.as_deref()),
    }
}

/// Connects with the global options; `data` is the lock node data.
async fn connect(global: &Global, data: Option<&str>) -> Result<Client, Failure> {
    connect_with(global, data, Options::default()).await
}

/// [`connect`] from `options` rather than the defaults.
async fn connect_with(global: &Global, data: Option<&str>, options: Options) -> Result<Client, Failure> {
    let mut options = options.session_timeout(global.session_timeout);
    options.connect_timeout = global.connect_timeout;
    if global.compress {
        options = options.compression(zoolock_tokio::Compression::Gzip);
    }
    if let Some(data) = data {
        options = options.lock_data(data.as_bytes().to_vec().into());
    }
    let connect = global.connect_string();
    options = security::apply(&global.security, options)?;
    tracing::debug!(connect, "connecting");
    zoolock_tokio::connect(connect, options).await.map_err(|e| match e {
        Error::ConnectString(e) => Failure::new(exit::USAGE, format!("bad --connect {connect:?}: {e}")),
        Error::Request(zoolock_tokio::RequestError::AuthFailed) => {
            let gssapi = global.security.sasl_mechanism == Some(crate::args::SaslMechanism::Gssapi);
            let which = match &global.security.sasl_user {
                _ if gssapi => "the server refused our Kerberos (SASL GSSAPI) authentication".to_owned(),
                Some(user) => format!("SASL authentication as {user} failed (wrong user or ZOOLOCK_SASL_PASSWORD?)"),
                None => "the server rejected the --auth credentials".to_owned(),
            };
            Failure::new(exit::UNAVAILABLE, format!("cannot connect to {connect}: {which}"))
        }
        e => Failure::new(exit::UNAVAILABLE, format!("cannot connect to {connect}: {e}")),
    })
}

/// Closes the session (deleting our ephemeral nodes at once), waiting at
/// most `limit`: an unreachable server lets the session expire instead.
async fn close(client: &Client, limit: Duration) {
    match tokio::time::timeout(limit, client.close()).await {
        Ok(Ok(())) => {}
        Ok(Err(error)) => tracing::debug!(%error, "close"),
        Err(_) => tracing::warn!("the session did not close within {limit:?}; it will expire on the server"),
    }
}

/// The election layout for `--latch`.
fn election_of(latch: bool) -> ElectionKind {
    if latch { ElectionKind::Latch } else { ElectionKind::Selector }
}

/// A request failed after connecting.
fn request_failed(what: &str, e: &Error) -> Failure {
    use zoolock_tokio::RequestError;
    let code = match e {
        Error::Path(_) => exit::USAGE,
        // The server's answer to a request (NoNode, NoAuth, ...), or a
        // recipe's own verdict on it.
        Error::Request(
            RequestError::Server(_)
            | RequestError::TooLarge { .. }
            | RequestError::RetriesExhausted(_)
            | RequestError::NodeVanished
            | RequestError::ChrootUnavailable(_)
            | RequestError::Refused(_),
        ) => exit::FAILURE,
        Error::Request(_) | Error::ClientClosed(_) | Error::ConnectTimeout(_) => exit::UNAVAILABLE,
        _ => exit::FAILURE,
    };
    Failure::new(code, format!("{what}: {e}"))
}
