//! Scenarios of issue 24 (item 5): `connect` fails fast, with the cause,
//! when no host can be reached at all; a host that accepts and stays silent
//! still gets the whole connect timeout; and once a session exists, refused
//! dials are retried as before.

use std::io::ErrorKind;
use std::net::TcpListener;
use std::sync::Arc;
use std::sync::atomic::{AtomicBool, Ordering};
use std::time::{Duration, Instant};

use futures_lite::StreamExt;
use zoolock_driver::{Client, ConnectionState, DialError, Error, Options};

use super::{Env, Proxy};

/// A loopback port nobody listens on (bound, then released).
fn refused_port() -> u16 {
    TcpListener::bind("127.0.0.1:0").unwrap().local_addr().unwrap().port()
}

/// A listener that accepts every connection and never writes or closes
/// (until dropped): a server that hangs before the handshake.
struct Silent {
    addr: String,
    stop: Arc<AtomicBool>,
}

impl Silent {
    fn start() -> Silent {
        let listener = TcpListener::bind("127.0.0.1:0").unwrap();
        listener.set_nonblocking(true).unwrap();
        let addr = listener.local_addr().unwrap().to_string();
        let stop = Arc::new(AtomicBool::new(false));
        let done = stop.clone();
        std::thread::spawn(move || {
            let mut held = Vec::new();
            while !done.load(Ordering::SeqCst) {
                match listener.accept() {
                    Ok((socket, _)) => held.push(socket),
                    Err(_) => std::thread::sleep(Duration::from_millis(5)),
                }
            }
        });
        Silent { addr, stop }
    }
}

impl Drop for Silent {
    fn drop(&mut self) {
        self.stop.store(true, Ordering::SeqCst);
    }
}

/// `Client::connect` to `hosts` with the default 15 s connect timeout: its
/// error and how long it took.
async fn connect_error(env: &Env, hosts: &str, options: Options) -> (Error, Duration) {
    let started = Instant::now();
    match Client::connect(env.runtime.clone(), hosts, options).await {
        Ok(_) => panic!("connected to {hosts}"),
        Err(e) => (e, started.elapsed()),
    }
}

/// Every host refuses, or does not resolve: `connect` gives up after one
/// cycle, in well under the 15 s connect timeout, naming the last failure.
pub async fn connect_refused_or_unresolved_fails_fast(env: &Env) {
    let port = refused_port();
    let (error, took) = connect_error(env, &format!("127.0.0.1:{port}"), Options::default()).await;
    let want = format!("127.0.0.1:{port}");
    match &error {
        Error::Unreachable(DialError::Io { addr, kind: ErrorKind::ConnectionRefused, message }) => {
            assert_eq!(addr, &want);
            assert!(message.to_lowercase().contains("refused"), "{message}");
        }
        other => panic!("{other:?}"),
    }
    assert!(error.to_string().contains("refused"), "the message names the cause: {error}");
    assert!(took < Duration::from_secs(2), "a refused port took {took:?}");

    // Resolution stays on this machine (`.invalid` never resolves).
    let (error, took) = connect_error(env, "no-such-host.invalid:2181", Options::default()).await;
    match &error {
        Error::Unreachable(DialError::NotResolved { addr, .. }) => assert_eq!(addr, "no-such-host.invalid:2181"),
        other => panic!("{other:?}"),
    }
    assert!(error.to_string().contains("does not resolve"), "{error}");
    assert!(took < Duration::from_secs(5), "an unresolvable host took {took:?}");

    // Three hosts, each failing: one cycle (a reconnect pause of at most a
    // second between dials), then the last cause.
    let hosts = format!("127.0.0.1:{},no-such-host.invalid:2181,127.0.0.1:{}", refused_port(), refused_port());
    let (error, took) = connect_error(env, &hosts, Options::default()).await;
    assert!(matches!(error, Error::Unreachable(_)), "{error:?}");
    assert!(took < Duration::from_secs(4), "three failing hosts took {took:?}");
}

/// A server that accepts and never answers the handshake is not
/// unreachable: `connect` waits for the whole (configured) connect timeout,
/// alone or beside a refusing host.
pub async fn connect_to_a_silent_server_times_out(env: &Env) {
    let silent = Silent::start();
    let limit = Duration::from_millis(1500);
    for hosts in [silent.addr.clone(), format!("{},127.0.0.1:{}", silent.addr, refused_port())] {
        // Each attempt may take T/hosts: with T = 1 s, whole cycles of
        // unanswered handshakes pass before the connect timeout, and none
        // of them counts as unreachable.
        let options = Options::default().session_timeout(Duration::from_secs(1)).connect_timeout(limit);
        let (error, took) = connect_error(env, &hosts, options).await;
        assert_eq!(error, Error::ConnectTimeout(limit), "{hosts}");
        assert!(took >= limit, "{hosts}: gave up after {took:?}, before the connect timeout");
        assert!(took < limit + Duration::from_secs(1), "{hosts}: took {took:?}");
    }
}

/// Once a session exists, a server that refuses every dial is retried
/// (cycle after cycle) until it listens again: the session resumes.
pub async fn refusals_after_a_session_keep_trying(env: &Env) {
    let proxy = Proxy::start(&env.addr);
    let options = Env::options().session_timeout(Duration::from_secs(6));
    let client = env.client_at(&proxy.addr, options).await;
    let mut states = client.state_changes().unwrap();
    assert_eq!(states.next().await, Some(ConnectionState::Connected));

    proxy.down();
    assert_eq!(states.next().await, Some(ConnectionState::Suspended));
    // Several cycles of refusals (each pauses T/10 = 0.6 s at most).
    env.sleep(Duration::from_millis(2500)).await;
    assert_eq!(client.state(), Some(ConnectionState::Suspended));
    proxy.restore();
    let next = env.within(Duration::from_secs(5), "the reconnect", states.next()).await;
    assert_eq!(next, Some(ConnectionState::Reconnected));
    client.exists("/").await.unwrap();
    client.close().await.unwrap();
}
