//! `zoolock serve`'s limits, each tested with raw sockets: the frame limit,
//! the per-address connection limit, the handshake deadline, the bound on
//! output a client leaves unread, and the bound on watches per session.

use std::io::{BufRead, BufReader, ErrorKind, Read, Write};
use std::net::TcpStream;
use std::process::{Child, Command, Stdio};
use std::thread;
use std::time::{Duration, Instant};

use nix::sys::signal::{Signal, kill};
use nix::unistd::Pid;

const BIN: &str = env!("CARGO_BIN_EXE_zoolock");

/// `zoolock serve` with extra flags; stopped (SIGTERM) when dropped.
struct Serve {
    child: Child,
    addr: String,
}

impl Serve {
    fn start(flags: &[&str]) -> Serve {
        let mut child = Command::new(BIN)
            .env_remove("ZOOLOCK_CONNECT")
            .args(["serve", "--port", "0"])
            .args(flags)
            .stdin(Stdio::null())
            .stdout(Stdio::piped())
            .spawn()
            .unwrap();
        let mut line = String::new();
        BufReader::new(child.stdout.take().unwrap()).read_line(&mut line).unwrap();
        Serve { child, addr: line.trim().to_owned() }
    }

    fn connect(&self) -> TcpStream {
        let s = TcpStream::connect(&self.addr).unwrap();
        s.set_nodelay(true).unwrap();
        s
    }
}

impl Drop for Serve {
    fn drop(&mut self) {
        let _ = kill(Pid::from_raw(i32::try_from(self.child.id()).unwrap()), Signal::SIGTERM);
        let _ = self.child.wait();
    }
}

fn frame(payload: &[u8]) -> Vec<u8> {
    let mut f = u32::try_from(payload.len()).unwrap().to_be_bytes().to_vec();
    f.extend_from_slice(payload);
    f
}

fn string(out: &mut Vec<u8>, s: &[u8]) {
    out.extend_from_slice(&i32::try_from(s.len()).unwrap().to_be_bytes());
    out.extend_from_slice(s);
}

fn connect_request() -> Vec<u8> {
    let mut p = Vec::new();
    p.extend_from_slice(&0i32.to_be_bytes()); // protocolVersion
    p.extend_from_slice(&0i64.to_be_bytes()); // lastZxidSeen
    p.extend_from_slice(&10_000i32.to_be_bytes()); // timeOut
    p.extend_from_slice(&0i64.to_be_bytes()); // sessionId
    string(&mut p, &[0; 16]); // passwd
    p.push(0); // readOnly
    frame(&p)
}

/// create (opcode 1) of a persistent node, world:anyone.
fn create(xid: i32, path: &str, data: &[u8]) -> Vec<u8> {
    let mut p = Vec::new();
    p.extend_from_slice(&xid.to_be_bytes());
    p.extend_from_slice(&1i32.to_be_bytes());
    string(&mut p, path.as_bytes());
    string(&mut p, data);
    p.extend_from_slice(&1i32.to_be_bytes()); // one ACL entry
    p.extend_from_slice(&31i32.to_be_bytes());
    string(&mut p, b"world");
    string(&mut p, b"anyone");
    p.extend_from_slice(&0i32.to_be_bytes()); // persistent
    frame(&p)
}

/// A path read with a watch flag: exists (3) or getData (4).
fn read(xid: i32, op: i32, path: &str, watch: bool) -> Vec<u8> {
    let mut p = Vec::new();
    p.extend_from_slice(&xid.to_be_bytes());
    p.extend_from_slice(&op.to_be_bytes());
    string(&mut p, path.as_bytes());
    p.push(u8::from(watch));
    frame(&p)
}

fn ping() -> Vec<u8> {
    let mut p = (-2i32).to_be_bytes().to_vec();
    p.extend_from_slice(&11i32.to_be_bytes());
    frame(&p)
}

fn read_frame(s: &mut TcpStream) -> std::io::Result<Vec<u8>> {
    let mut len = [0; 4];
    s.read_exact(&mut len)?;
    let mut payload = vec![0; usize::try_from(u32::from_be_bytes(len)).unwrap()];
    s.read_exact(&mut payload)?;
    Ok(payload)
}

/// A reply's (xid, err).
fn reply(s: &mut TcpStream) -> (i32, i32) {
    s.set_read_timeout(Some(Duration::from_secs(5))).unwrap();
    let p = read_frame(s).expect("a reply");
    let int = |at: usize| i32::from_be_bytes([p[at], p[at + 1], p[at + 2], p[at + 3]]);
    (int(0), int(12))
}

fn handshake(s: &mut TcpStream) {
    s.write_all(&connect_request()).unwrap();
    s.set_read_timeout(Some(Duration::from_secs(5))).unwrap();
    let response = read_frame(s).expect("a ConnectResponse");
    assert_eq!(response.len(), 37, "a ConnectResponse with readOnly");
}

/// Reads (and discards) until the server closes the connection; false if it
/// is still open after `limit`.
fn closed_within(s: &mut TcpStream, limit: Duration) -> bool {
    let deadline = Instant::now() + limit;
    let mut buf = vec![0; 64 * 1024];
    loop {
        let left = deadline.saturating_duration_since(Instant::now());
        if left.is_zero() {
            return false;
        }
        s.set_read_timeout(Some(left)).unwrap();
        match s.read(&mut buf) {
            Ok(0) => return true,
            Ok(_) => {}
            Err(e) if e.kind() == ErrorKind::ConnectionReset => return true,
            Err(e) if matches!(e.kind(), ErrorKind::WouldBlock | ErrorKind::TimedOut) => return false,
            Err(e) => panic!("read: {e}"),
        }
    }
}

#[test]
fn a_length_prefix_over_the_frame_limit_closes_the_connection() {
    let serve = Serve::start(&["--max-frame", "4096"]);
    // Before the handshake: a 2 GiB prefix, nothing behind it.
    let mut s = serve.connect();
    s.write_all(&0x7fff_ffffu32.to_be_bytes()).unwrap();
    assert!(closed_within(&mut s, Duration::from_secs(2)));
    // After it: a frame under the limit is served, one over it is not.
    let mut s = serve.connect();
    handshake(&mut s);
    s.write_all(&create(1, "/small", &[b'x'; 3000])).unwrap();
    assert_eq!(reply(&mut s), (1, 0));
    let big = create(2, "/big", &[b'x'; 5000]);
    // Only the prefix and a little of the body: the server must not wait
    // for (or make room for) the rest.
    s.write_all(&big[..64]).unwrap();
    assert!(closed_within(&mut s, Duration::from_secs(2)));
    // The server carries on.
    let mut s = serve.connect();
    handshake(&mut s);
    s.write_all(&read(1, 3, "/big", false)).unwrap();
    assert_eq!(reply(&mut s), (1, -101), "NoNode: the oversized create never ran");
}

#[test]
fn connections_per_address_are_limited() {
    let serve = Serve::start(&["--max-client-cnxns", "3"]);
    let mut open: Vec<TcpStream> = (0..3).map(|_| serve.connect()).collect();
    for s in &mut open {
        handshake(s);
    }
    let mut fourth = serve.connect();
    assert!(closed_within(&mut fourth, Duration::from_secs(2)), "the fourth connection stays open");
    // One goes away: there is room again.
    drop(open.pop());
    let deadline = Instant::now() + Duration::from_secs(5);
    loop {
        let mut s = serve.connect();
        let _ = s.write_all(&connect_request());
        s.set_read_timeout(Some(Duration::from_secs(2))).unwrap();
        if read_frame(&mut s).is_ok() {
            break;
        }
        assert!(Instant::now() < deadline, "no room after a connection closed");
        thread::sleep(Duration::from_millis(50));
    }
    // The ones still open work.
    open[0].write_all(&ping()).unwrap();
    assert_eq!(reply(&mut open[0]).0, -2);
}

#[test]
fn a_connection_without_a_handshake_is_closed_at_the_deadline() {
    let serve = Serve::start(&["--handshake-timeout", "300ms"]);
    let start = Instant::now();
    let mut silent = serve.connect();
    let mut partial = serve.connect();
    partial.write_all(&connect_request()[..20]).unwrap();
    assert!(closed_within(&mut silent, Duration::from_secs(3)), "a silent connection stays open");
    assert!(start.elapsed() >= Duration::from_millis(250), "closed before the deadline: {:?}", start.elapsed());
    assert!(closed_within(&mut partial, Duration::from_secs(3)), "a half handshake stays open");
    // A prompt handshake is unaffected, and outlives the deadline.
    let mut s = serve.connect();
    handshake(&mut s);
    thread::sleep(Duration::from_millis(600));
    s.write_all(&ping()).unwrap();
    assert_eq!(reply(&mut s).0, -2);
}

#[test]
fn a_client_that_never_reads_is_dropped_without_slowing_the_server() {
    let serve = Serve::start(&["--max-queued", "1048576"]);
    let mut hog = serve.connect();
    handshake(&mut hog);
    let data = vec![b'x'; 900_000];
    hog.write_all(&create(1, "/big", &data)).unwrap();
    assert_eq!(reply(&mut hog), (1, 0));
    // 200 reads of 900 kB: 180 MB, never read.
    let mut burst = Vec::new();
    for xid in 2..202 {
        burst.extend_from_slice(&read(xid, 4, "/big", false));
    }
    hog.write_all(&burst).unwrap();
    thread::sleep(Duration::from_millis(500));
    // Another client is served meanwhile. A server that blocked on the hog's
    // writes would never answer it; the bound is generous, for a loaded
    // machine (this is not a timing measurement).
    let mut other = serve.connect();
    let start = Instant::now();
    handshake(&mut other);
    other.write_all(&ping()).unwrap();
    assert_eq!(reply(&mut other).0, -2);
    assert!(start.elapsed() < Duration::from_secs(10), "the server was held up: {:?}", start.elapsed());
    // The hog was dropped: what it can still read ends well short of 180 MB.
    let mut total = 0usize;
    let mut buf = vec![0; 1 << 20];
    hog.set_read_timeout(Some(Duration::from_secs(5))).unwrap();
    let closed = loop {
        match hog.read(&mut buf) {
            Ok(0) => break true,
            Ok(n) => total += n,
            Err(e) if e.kind() == ErrorKind::ConnectionReset => break true,
            Err(_) => break false,
        }
    };
    assert!(closed, "the connection of a client that never reads stays open ({total} bytes read)");
    assert!(total < 50_000_000, "{total} bytes reached a client that never read");
}

#[test]
fn watches_per_session_are_limited() {
    let serve = Serve::start(&["--max-watches", "3"]);
    let mut s = serve.connect();
    handshake(&mut s);
    for (xid, path) in [(1, "/w1"), (2, "/w2"), (3, "/w3")] {
        s.write_all(&read(xid, 3, path, true)).unwrap();
        assert_eq!(reply(&mut s), (xid, -101));
    }
    // Again on a path already watched: no new registration.
    s.write_all(&read(4, 3, "/w1", true)).unwrap();
    assert_eq!(reply(&mut s), (4, -101));
    // A read without a watch is fine.
    s.write_all(&read(5, 3, "/w4", false)).unwrap();
    assert_eq!(reply(&mut s), (5, -101));
    // The fourth watch: answered, then the connection is closed.
    s.write_all(&read(6, 3, "/w4", true)).unwrap();
    assert_eq!(reply(&mut s), (6, -101));
    assert!(closed_within(&mut s, Duration::from_secs(2)), "a connection over the watch limit stays open");
}
