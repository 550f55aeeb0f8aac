//! What the CLI test files share: finding the real server, starting the
//! embedded one.

// Each test file uses a different part of it.
#![allow(dead_code)]

/// The real server from `ZOOLOCK_TEST_CONNECT`, or `None` (with a message)
/// if the tests that need it should skip (see `zoolock_testkit::real_server`).
pub(crate) fn server() -> Option<String> {
    zoolock_testkit::real_server("this CLI test")
}

/// A fresh scratch directory, `zoolock-<test file>-<name>-<pid>-<nanos>`
/// in the temporary directory.
pub(crate) fn scratch(name: &str) -> std::path::PathBuf {
    let nanos = std::time::SystemTime::now().duration_since(std::time::UNIX_EPOCH).unwrap().as_nanos();
    let file = env!("CARGO_CRATE_NAME");
    let dir = std::env::temp_dir().join(format!("zoolock-{file}-{name}-{}-{nanos}", std::process::id()));
    std::fs::create_dir_all(&dir).unwrap();
    dir
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
