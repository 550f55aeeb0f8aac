//! A server that completes every handshake and then answers each request
//! with a wrong xid: the client gives up with a typed error (exit 69) within
//! the session timeout plus the connect timeout, instead of reconnecting
//! forever.

use std::io::{Read, Write};
use std::net::{TcpListener, TcpStream};
use std::process::{Command, Stdio};
use std::sync::Arc;
use std::sync::atomic::{AtomicUsize, Ordering};
use std::thread;
use std::time::{Duration, Instant};

const BIN: &str = env!("CARGO_BIN_EXE_zoolock");

/// One length-prefixed frame's payload, or `None` at end of stream.
fn read_frame(stream: &mut TcpStream) -> Option<Vec<u8>> {
    let mut len = [0; 4];
    stream.read_exact(&mut len).ok()?;
    let len = usize::try_from(u32::from_be_bytes(len)).ok()?;
    let mut payload = vec![0; len];
    stream.read_exact(&mut payload).ok()?;
    Some(payload)
}

fn write_frame(stream: &mut TcpStream, payload: &[u8]) -> std::io::Result<()> {
    let len = u32::try_from(payload.len()).expect("small frame");
    stream.write_all(&len.to_be_bytes())?;
    stream.write_all(payload)
}

/// Answers the ConnectRequest properly (session 0x1234, the requested
/// timeout), then every request with its xid plus 1000.
fn lie(mut stream: TcpStream) {
    let Some(connect) = read_frame(&mut stream) else { return };
    // protocolVersion i32, lastZxidSeen i64, timeOut i32, ...
    let timeout = connect.get(12..16).map_or([0, 0, 0x27, 0x10], |t| [t[0], t[1], t[2], t[3]]);
    let mut response = Vec::new();
    response.extend_from_slice(&0i32.to_be_bytes());
    response.extend_from_slice(&timeout);
    response.extend_from_slice(&0x1234i64.to_be_bytes());
    response.extend_from_slice(&16i32.to_be_bytes());
    response.extend_from_slice(&[7; 16]);
    response.push(0);
    if write_frame(&mut stream, &response).is_err() {
        return;
    }
    while let Some(request) = read_frame(&mut stream) {
        let xid = request.get(0..4).map_or(0, |x| i32::from_be_bytes([x[0], x[1], x[2], x[3]]));
        let mut reply = Vec::new();
        reply.extend_from_slice(&xid.wrapping_add(1000).to_be_bytes());
        reply.extend_from_slice(&1i64.to_be_bytes());
        reply.extend_from_slice(&0i32.to_be_bytes());
        if write_frame(&mut stream, &reply).is_err() {
            return;
        }
    }
}

/// Runs zoolock with `args` against a fresh lying server (session timeout
/// 4 s, connect timeout 5 s) and checks that it gives up in time with the
/// typed error and exit 69, after a bounded number of connections.
fn gives_up(args: &[&str]) {
    let listener = TcpListener::bind("127.0.0.1:0").unwrap();
    let addr = listener.local_addr().unwrap().to_string();
    let connections = Arc::new(AtomicUsize::new(0));
    let counted = Arc::clone(&connections);
    thread::spawn(move || {
        for stream in listener.incoming().flatten() {
            counted.fetch_add(1, Ordering::SeqCst);
            thread::spawn(move || lie(stream));
        }
    });

    let (session_timeout, connect_timeout) = (Duration::from_secs(4), Duration::from_secs(5));
    let start = Instant::now();
    let mut child = Command::new(BIN)
        .env_remove("ZOOLOCK_CONNECT")
        .args(["--connect", &addr, "--session-timeout", "4s", "--connect-timeout", "5s"])
        .args(args)
        .stdin(Stdio::null())
        .stdout(Stdio::piped())
        .stderr(Stdio::piped())
        .spawn()
        .unwrap();
    // Kill it well after the bound, so a hang fails the assertion below
    // rather than the whole test run.
    let limit = session_timeout + connect_timeout;
    let status = loop {
        if let Some(status) = child.try_wait().unwrap() {
            break status;
        }
        if start.elapsed() > limit * 2 {
            child.kill().unwrap();
            break child.wait().unwrap();
        }
        thread::sleep(Duration::from_millis(20));
    };
    let elapsed = start.elapsed();
    let mut stderr = String::new();
    child.stderr.take().unwrap().read_to_string(&mut stderr).unwrap();
    assert!(elapsed < limit, "{args:?} took {elapsed:?} (limit {limit:?}); stderr: {stderr}");
    assert_eq!(status.code(), Some(69), "{args:?}: stderr: {stderr}");
    assert!(
        stderr.contains("gave up on the server: server misbehaved") && stderr.contains("xid"),
        "{args:?}: not the typed error: {stderr}"
    );
    let n = connections.load(Ordering::SeqCst);
    let max = usize::try_from(zoolock_tokio::sans_io::DEFAULT_MAX_MISBEHAVING_CONNECTIONS).unwrap();
    assert!((1..=max).contains(&n), "{args:?}: {n} connections");
}

#[test]
fn holders_gives_up_on_a_server_that_answers_with_wrong_xids() {
    gives_up(&["holders", "/x"]);
}

#[test]
fn a_waiting_acquire_fails_on_a_server_that_answers_with_wrong_xids() {
    // The command never runs: the lock is never granted.
    gives_up(&["lock", "/x", "--", "false"]);
}
