//! What the CLI test files share: finding the real server, starting the
//! embedded one.

// Each test file uses a different part of it.
#![allow(dead_code)]

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

/// Starts `zoolock serve --port 0` and returns it with the address it
/// printed; the caller decides how to stop it.
pub(crate) fn spawn_serve() -> (std::process::Child, String) {
    use std::io::BufRead;
    use std::process::{Command, Stdio};
    let mut child = Command::new(env!("CARGO_BIN_EXE_zoolock"))
        .args(["serve", "--port", "0"])
        .stdin(Stdio::null())
        .stdout(Stdio::piped())
        .spawn()
        .expect("run zoolock serve");
    let mut line = String::new();
    std::io::BufReader::new(child.stdout.take().expect("piped stdout")).read_line(&mut line).expect("read the address");
    let addr = line.trim().to_owned();
    assert!(addr.parse::<std::net::SocketAddr>().is_ok(), "zoolock serve printed {line:?}");
    (child, addr)
}

/// `zoolock serve --port 0`, killed on drop.
pub(crate) struct Served {
    pub(crate) child: std::process::Child,
    pub(crate) addr: String,
}

impl Served {
    pub(crate) fn start() -> Served {
        let (child, addr) = spawn_serve();
        Served { child, addr }
    }
}

impl Drop for Served {
    fn drop(&mut self) {
        let _ = self.child.kill();
        let _ = self.child.wait();
    }
}
