//! What the CLI test files share: finding the real server.

use std::net::{TcpStream, ToSocketAddrs};
use std::time::Duration;

/// The real server from `ZOOLOCK_TEST_CONNECT`, or `None` (with a message)
/// if the tests that need it should skip. Panics if the variable is set but
/// nothing answers there.
pub(crate) fn server() -> Option<String> {
    let addr = match std::env::var("ZOOLOCK_TEST_CONNECT") {
        Ok(s) if !s.trim().is_empty() => s.trim().to_owned(),
        _ => {
            eprintln!("skipped: ZOOLOCK_TEST_CONNECT is not set (bash .ci/run starts a server and sets it)");
            return None;
        }
    };
    let hosts = addr.split('/').next().unwrap_or_default();
    let reachable = hosts.split(',').any(|host| {
        host.to_socket_addrs()
            .map(|mut a| a.any(|a| TcpStream::connect_timeout(&a, Duration::from_secs(2)).is_ok()))
            .unwrap_or(false)
    });
    assert!(reachable, "ZOOLOCK_TEST_CONNECT={addr} is set but no server answers there");
    Some(addr)
}
