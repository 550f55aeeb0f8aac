//! No server needed: usage errors, unreachable servers, `zoolock serve`.

use crate::*;

// ---- no server needed -----------------------------------------------------------------------

#[test]
fn usage_errors_exit_64_and_unreachable_servers_69() {
    let out = output(Command::new(BIN).args(["lock", "relative/path", "--", "true"]));
    assert_eq!(code(out.status), 64, "{out:?}");
    let out = output(Command::new(BIN).args(["lock", "/x"]));
    assert_eq!(code(out.status), 64, "{out:?}");
    let out = output(Command::new(BIN).args(["lock", "/x", "--grace", "10s", "--", "true"]));
    assert_eq!(code(out.status), 64, "grace not below the session timeout: {out:?}");
    let out = output(Command::new(BIN).args(["elect", "/x", "--policy", "session", "--grace", "1s", "--", "true"]));
    assert_eq!(code(out.status), 64, "a grace under the session policy: {out:?}");
    let out = output(Command::new(BIN).args(["elect", "/x", "--policy", "lenient", "--", "true"]));
    assert_eq!(code(out.status), 64, "an unknown policy: {out:?}");
    let out = output(Command::new(BIN).arg("--help"));
    assert!(out.status.success());
    assert!(String::from_utf8(out.stdout).unwrap().contains("Exit codes:"));

    // A port nothing listens on (bound, then released).
    let port = TcpListener::bind("127.0.0.1:0").unwrap().local_addr().unwrap().port();
    let out = output(Command::new(BIN).env("ZOOLOCK_CONNECT", format!("127.0.0.1:{port}")).args([
        "--connect-timeout",
        "500ms",
        "lock",
        "/x",
        "--",
        "true",
    ]));
    assert_eq!(code(out.status), 69, "{out:?}");
}

/// With the default 15 s connect timeout, a refused port and a host that
/// does not resolve exit 69 within 5 s, with one line naming the cause.
#[test]
fn unreachable_servers_exit_69_at_once_naming_the_cause() {
    let port = TcpListener::bind("127.0.0.1:0").unwrap().local_addr().unwrap().port();
    for (hosts, cause) in
        [(format!("127.0.0.1:{port}"), "refused"), ("no-such-host.invalid:2181".to_owned(), "does not resolve")]
    {
        let started = Instant::now();
        let out = output(zoolock(&hosts).args(["holders", "/x"]));
        let took = started.elapsed();
        assert_eq!(code(out.status), 69, "{out:?}");
        let stderr = String::from_utf8(out.stderr).unwrap();
        let lines: Vec<&str> = stderr.lines().collect();
        assert_eq!(lines.len(), 1, "one error line: {stderr}");
        assert!(lines[0].contains(&hosts) && lines[0].to_lowercase().contains(cause), "{stderr}");
        assert!(took < Duration::from_secs(5), "{hosts}: exit after {took:?}");
    }
}

// ---- zoolock serve (no real server needed) ---------------------------------------------

#[test]
fn serve_runs_the_model_until_sigterm() {
    let (mut server, addr) = common::spawn_serve();
    assert!(addr.parse::<SocketAddr>().is_ok_and(|a| a.ip().is_loopback() && a.port() != 0), "printed {addr:?}");

    let out = output(zoolock(&addr).args(["lock", "/x", "--", "sh", "-c", "test -n \"$ZOOLOCK_NODE\""]));
    assert_eq!(code(out.status), 0, "{out:?}");
    let out = output(zoolock(&addr).args(["holders", "/x"]));
    assert_eq!(code(out.status), 0, "{out:?}");
    assert!(out.stdout.is_empty(), "the lock was released: {out:?}");

    signal(&server, Signal::SIGTERM);
    let status = wait_with_limit(&mut server, Duration::from_secs(10));
    assert_eq!(code(status), 0, "{status:?}");
    assert!(TcpStream::connect(&addr).is_err(), "nothing listens on {addr} any more");
}
