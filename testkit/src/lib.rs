//! What zoolock's tests share, written once.
//!
//! * [`real_server`]: the real ZooKeeper from `ZOOLOCK_TEST_CONNECT`, for tests
//!   that need the real thing (Curator interop, server-specific behaviour).
//!   Unset, the test skips with a message, except under CI, where a missing
//!   server is a failure. Set but not answering is a failure everywhere.
//! * [`any_server`]: for scenarios the in-memory model serves faithfully (the
//!   transports' shared scenarios, `zoolock-scenarios`): the real server when one is
//!   configured, else one in-process model server ([`TestingServer`]) shared
//!   by the whole test binary, so these tests never skip on a developer
//!   machine. CI runs them against the real server.
//! * [`in_ci`]: the CI switch (`CI` set to anything but empty, `0` or `false`).
//! * [`proxy::Proxy`]: a TCP proxy a test can cut, freeze or take down.
//! * [`raw::RawConn`]: a connection that speaks frames only, for tests that
//!   check what the server sends.
//! * `java` (feature `java`): Curator in a JVM, compiled from
//!   `java/CuratorDriver.java` and driven line by line, for the interop tests.
//!
//! [`TestingServer`]: zoolock_model::TestingServer

#[cfg(feature = "java")]
pub mod java;
pub mod proxy;
pub mod raw;

use std::net::{TcpStream, ToSocketAddrs};
use std::sync::OnceLock;
use std::time::Duration;

use zoolock_model::{ModelConfig, TestingServer};

/// The variable naming the real test server (`bash .ci/run` sets it).
pub const CONNECT_VAR: &str = "ZOOLOCK_TEST_CONNECT";

/// True under CI, where tests must fail rather than skip.
pub fn in_ci() -> bool {
    std::env::var("CI").is_ok_and(|v| !v.is_empty() && v != "0" && !v.eq_ignore_ascii_case("false"))
}

/// The real server's connect string, or `None` (after printing why `test`
/// skips). Panics under CI when it is unset, and whenever it is set but no
/// host of it answers.
pub fn real_server(test: &str) -> Option<String> {
    let addr = match std::env::var(CONNECT_VAR) {
        Ok(addr) if !addr.trim().is_empty() => addr.trim().to_owned(),
        _ => {
            assert!(!in_ci(), "{test}: CI is set but {CONNECT_VAR} is not: the real-server test cannot run");
            eprintln!(
                "skipped {test}: {CONNECT_VAR} is not set (`bash .ci/run` starts a ZooKeeper and sets it; \
                 or `export {CONNECT_VAR}=$(bash scripts/zk-server.sh start DIR)`)"
            );
            return None;
        }
    };
    assert!(answers(&addr), "{CONNECT_VAR}={addr} is set but no server answers there");
    Some(addr)
}

/// The real server when one is configured, else the in-process model server
/// of this test binary (started on first use, stopped when the process ends).
pub fn any_server() -> String {
    match std::env::var(CONNECT_VAR) {
        Ok(addr) if !addr.trim().is_empty() => {
            let addr = addr.trim().to_owned();
            assert!(answers(&addr), "{CONNECT_VAR}={addr} is set but no server answers there");
            addr
        }
        _ => model_server().to_owned(),
    }
}

/// Whether some host of `connect` accepts a TCP connection.
fn answers(connect: &str) -> bool {
    let hosts = connect.split('/').next().unwrap_or_default();
    hosts.split(',').any(|host| {
        host.to_socket_addrs()
            .map(|mut a| a.any(|a| TcpStream::connect_timeout(&a, Duration::from_secs(2)).is_ok()))
            .unwrap_or(false)
    })
}

/// One model server per process, on its own tokio runtime thread (the tests
/// using it may run on any runtime, or none). Scenario tests open many
/// connections from one address, so `maxClientCnxns` is off.
fn model_server() -> &'static str {
    static SERVER: OnceLock<String> = OnceLock::new();
    SERVER.get_or_init(|| {
        let (tx, rx) = std::sync::mpsc::channel();
        std::thread::Builder::new()
            .name(String::from("zoolock-testkit-server"))
            .spawn(move || {
                let runtime = match tokio::runtime::Builder::new_multi_thread().worker_threads(1).enable_all().build() {
                    Ok(runtime) => runtime,
                    Err(e) => return drop(tx.send(Err(e.to_string()))),
                };
                runtime.block_on(async move {
                    let mut config = ModelConfig::default();
                    config.max_client_cnxns = None;
                    match TestingServer::start_with(config).await {
                        Ok(server) => {
                            let _ = tx.send(Ok(server.connect_string().to_owned()));
                            // Serve until the process exits.
                            std::future::pending::<()>().await;
                            drop(server);
                        }
                        Err(e) => drop(tx.send(Err(e.to_string()))),
                    }
                });
            })
            .map_err(|e| e.to_string())
            .and_then(|_| rx.recv().map_err(|e| e.to_string())?)
            .map(|addr| {
                eprintln!("{CONNECT_VAR} is not set: using the in-process model server at {addr}");
                addr
            })
            .unwrap_or_else(|e| panic!("cannot start the in-process model server: {e}"))
    })
}
