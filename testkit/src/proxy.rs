//! A TCP proxy to a test server that a test can cut, freeze or take down:
//! how the loss, renewal and connect-error scenarios of every face (async
//! and blocking) and the Kerberos renewal in `zoolock-scenarios` make a
//! connection fail.

use std::io::{Read, Write};
use std::net::{Shutdown, TcpListener, TcpStream};
use std::sync::atomic::{AtomicBool, AtomicU64, Ordering};
use std::sync::{Arc, Mutex as StdMutex, RwLock};
use std::time::Duration;

/// A TCP proxy to the server on 127.0.0.1, on plain threads (so it serves
/// either runtime). `cut` closes every connection and refuses new ones;
/// `freeze` stops forwarding without closing anything (a silent network);
/// `isolate` plays a server cut off from the quorum; `down` closes every
/// connection and the listening port, so dials are refused, until `restore`
/// listens on the same port again. It counts the requests clients send
/// through it ([`Proxy::requests`]), so a test can tell that a client sends
/// nothing while idle.
pub struct Proxy {
    /// Where to connect: `127.0.0.1:PORT`.
    pub addr: String,
    shared: Arc<ProxyShared>,
}

#[derive(Debug, Clone, Copy, PartialEq, Eq)]
enum ProxyMode {
    Open,
    Cut,
    Frozen,
    /// Answers the client's pings itself, forwards nothing either way.
    Isolated,
    Down,
}

struct ProxyShared {
    /// Pumps hold it (read) from their mode check through their write, so a
    /// mode change returns only once no pump forwards under the old mode.
    mode: RwLock<ProxyMode>,
    sockets: StdMutex<Vec<TcpStream>>,
    stop: AtomicBool,
    /// Client frames forwarded to the server, pings left out.
    requests: AtomicU64,
}

impl ProxyShared {
    fn mode(&self) -> ProxyMode {
        *self.mode.read().unwrap()
    }

    fn set_mode(&self, mode: ProxyMode) -> ProxyMode {
        std::mem::replace(&mut *self.mode.write().unwrap(), mode)
    }

    fn close_all(&self) {
        for s in self.sockets.lock().unwrap().drain(..) {
            let _ = s.shutdown(Shutdown::Both);
        }
    }
}

impl Proxy {
    /// Listens on a free port of 127.0.0.1 and forwards to `upstream`.
    pub fn start(upstream: &str) -> Proxy {
        let listener = TcpListener::bind("127.0.0.1:0").unwrap();
        listener.set_nonblocking(true).unwrap();
        let addr = listener.local_addr().unwrap().to_string();
        let shared = Arc::new(ProxyShared {
            mode: RwLock::new(ProxyMode::Open),
            sockets: StdMutex::new(Vec::new()),
            stop: AtomicBool::new(false),
            requests: AtomicU64::new(0),
        });
        let (s, upstream) = (shared.clone(), upstream.to_owned());
        let at = addr.clone();
        std::thread::spawn(move || {
            let mut listener = Some(listener);
            while !s.stop.load(Ordering::SeqCst) {
                if s.mode() == ProxyMode::Down {
                    listener = None;
                } else if listener.is_none() {
                    // std sets SO_REUSEADDR: the port is free again at once.
                    listener = TcpListener::bind(&at).ok();
                    listener.iter().for_each(|l| l.set_nonblocking(true).unwrap());
                }
                let Some(accepted) = listener.as_ref().map(TcpListener::accept) else {
                    std::thread::sleep(Duration::from_millis(5));
                    continue;
                };
                let down = match accepted {
                    Ok((down, _)) => down,
                    Err(_) => {
                        std::thread::sleep(Duration::from_millis(5));
                        continue;
                    }
                };
                if matches!(s.mode(), ProxyMode::Cut | ProxyMode::Down) {
                    drop(down);
                    continue;
                }
                let Ok(up) = TcpStream::connect(&upstream) else { continue };
                let _ = down.set_nonblocking(false);
                let _ = (down.set_nodelay(true), up.set_nodelay(true));
                {
                    let mut sockets = s.sockets.lock().unwrap();
                    sockets.push(down.try_clone().unwrap());
                    sockets.push(up.try_clone().unwrap());
                }
                let (d2, u2) = (down.try_clone().unwrap(), up.try_clone().unwrap());
                let back = down.try_clone().unwrap();
                let (s1, s2) = (s.clone(), s.clone());
                // A connection made while isolated is never served (a
                // follower cut off from the leader cannot revalidate it).
                let served = s.mode() != ProxyMode::Isolated;
                let upward = Direction::Up { to: up, back: served.then_some(back) };
                std::thread::spawn(move || pump(down, upward, &s1));
                std::thread::spawn(move || pump(u2, Direction::Down(d2), &s2));
            }
        });
        Proxy { addr, shared }
    }

    /// Closes every connection and refuses new ones.
    pub fn cut(&self) {
        self.shared.set_mode(ProxyMode::Cut);
        self.shared.close_all();
    }

    /// Stops forwarding without closing anything (a silent network): once
    /// it returns, nothing more reaches either side until [`Proxy::restore`]
    /// (what the pumps read meanwhile is kept, and forwarded then).
    pub fn freeze(&self) {
        self.shared.set_mode(ProxyMode::Frozen);
    }

    /// Closes every connection and the listening port: dials are refused.
    pub fn down(&self) {
        self.shared.set_mode(ProxyMode::Down);
        self.shared.close_all();
    }

    /// Plays a ZooKeeper server cut off from the quorum that keeps its
    /// clients' connections: it answers each ping itself (as a follower
    /// does, without the leader) and forwards nothing else either way, so
    /// requests hang and the real server hears nothing of the session.
    /// New connections are accepted and never answered.
    pub fn isolate(&self) {
        self.shared.set_mode(ProxyMode::Isolated);
    }

    /// The request frames clients have sent to the server through the
    /// proxy so far (connect handshakes included), pings left out: what a
    /// server would count as work asked of it.
    pub fn requests(&self) -> u64 {
        self.shared.requests.load(Ordering::SeqCst)
    }

    /// Forwards again (listening on the same port after `down`). Ends every
    /// connection of an isolation: the requests it swallowed are gone.
    pub fn restore(&self) {
        if self.shared.set_mode(ProxyMode::Open) == ProxyMode::Isolated {
            self.shared.close_all();
        }
    }
}

impl Drop for Proxy {
    fn drop(&mut self) {
        self.shared.stop.store(true, Ordering::SeqCst);
        self.shared.close_all();
    }
}

/// Where a pump's bytes go.
enum Direction {
    /// Client to server: `to` is the server. `back` is the client's socket
    /// for a connection made before any isolation: while isolated, this
    /// direction answers pings through it.
    Up { to: TcpStream, back: Option<TcpStream> },
    /// Server to client.
    Down(TcpStream),
}

/// Moves bytes `from` → the direction's destination, counting the client's
/// requests on the way up.
fn pump(mut from: TcpStream, direction: Direction, shared: &ProxyShared) {
    let up = matches!(direction, Direction::Up { .. });
    let (mut to, mut back) = match direction {
        Direction::Up { to, back } => (to, back),
        Direction::Down(to) => (to, None),
    };
    let _ = from.set_read_timeout(Some(Duration::from_millis(10)));
    let mut buf = [0u8; 16 * 1024];
    // Client frames read while isolated, up to a whole frame.
    let mut pending = Vec::new();
    // Bytes read while (or just as) the proxy froze: forwarded on restore.
    let mut held = Vec::new();
    // Client frames forwarded, up to a whole frame, for the count.
    let mut counted = Vec::new();
    while !shared.stop.load(Ordering::SeqCst) {
        let mode = shared.mode();
        match mode {
            ProxyMode::Frozen => {
                std::thread::sleep(Duration::from_millis(5));
                continue;
            }
            ProxyMode::Isolated if back.is_none() => {
                std::thread::sleep(Duration::from_millis(5));
                continue;
            }
            ProxyMode::Cut | ProxyMode::Down => break,
            ProxyMode::Open if !held.is_empty() => {
                if forward_held(shared, &mut to, &mut held).is_err() {
                    break;
                }
                continue;
            }
            ProxyMode::Open | ProxyMode::Isolated => {}
        }
        match from.read(&mut buf) {
            Ok(0) => break,
            Ok(n) if mode == ProxyMode::Isolated => {
                pending.extend_from_slice(&buf[..n]);
                if let Some(client) = back.as_mut() {
                    if answer_pings(&mut pending, client).is_err() {
                        break;
                    }
                }
            }
            Ok(n) => {
                if up {
                    counted.extend_from_slice(&buf[..n]);
                    shared.requests.fetch_add(count_requests(&mut counted), Ordering::SeqCst);
                }
                held.extend_from_slice(&buf[..n]);
                if forward_held(shared, &mut to, &mut held).is_err() {
                    break;
                }
            }
            Err(e) if matches!(e.kind(), std::io::ErrorKind::WouldBlock | std::io::ErrorKind::TimedOut) => {}
            Err(_) => break,
        }
    }
    let _ = from.shutdown(Shutdown::Both);
    let _ = to.shutdown(Shutdown::Both);
}

/// Writes `held` to `to` if the proxy is open, under the mode's read lock: a
/// freeze that began meanwhile keeps the bytes until the restore.
fn forward_held(shared: &ProxyShared, to: &mut TcpStream, held: &mut Vec<u8>) -> std::io::Result<()> {
    let mode = shared.mode.read().unwrap();
    if *mode == ProxyMode::Open {
        to.write_all(held)?;
        held.clear();
    }
    Ok(())
}

/// Takes the whole request frame at the front of `pending` off it and
/// returns its xid (`Some(None)` for a frame too short to have one), or
/// `None` while the frame is incomplete.
fn take_frame(pending: &mut Vec<u8>) -> Option<Option<i32>> {
    let len = u32::from_be_bytes(pending.get(..4)?.try_into().ok()?) as usize;
    if pending.len() < 4 + len {
        return None;
    }
    let xid = pending.get(4..8).filter(|_| len >= 4).map(|b| i32::from_be_bytes([b[0], b[1], b[2], b[3]]));
    pending.drain(..4 + len);
    Some(xid)
}

/// The request frame's xid that marks a ping.
const PING_XID: i32 = -2;

/// Consumes the whole frames at the front of `pending` and counts those that
/// are not pings.
fn count_requests(pending: &mut Vec<u8>) -> u64 {
    let mut n = 0;
    while let Some(xid) = take_frame(pending) {
        n += u64::from(xid != Some(PING_XID));
    }
    n
}

/// Consumes the whole request frames at the front of `pending`, answering
/// each ping (xid -2) on `client` as a server does and dropping the rest.
fn answer_pings(pending: &mut Vec<u8>, client: &mut TcpStream) -> std::io::Result<()> {
    while let Some(xid) = take_frame(pending) {
        if xid == Some(PING_XID) {
            // Reply header: length 16, xid, zxid, err 0.
            let mut reply = Vec::with_capacity(20);
            reply.extend_from_slice(&16u32.to_be_bytes());
            reply.extend_from_slice(&PING_XID.to_be_bytes());
            reply.extend_from_slice(&0i64.to_be_bytes());
            reply.extend_from_slice(&0i32.to_be_bytes());
            client.write_all(&reply)?;
        }
    }
    Ok(())
}
