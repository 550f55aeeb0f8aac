//! A TCP proxy to a test server that a test can cut, freeze or take down:
//! how the loss, renewal and connect-error scenarios of every face (async
//! and blocking) and the Kerberos renewal in `zoolock-scenarios` make a
//! connection fail.

use std::io::{Read, Write};
use std::net::{Shutdown, TcpListener, TcpStream};
use std::sync::atomic::{AtomicBool, Ordering};
use std::sync::{Arc, Mutex as StdMutex};
use std::time::Duration;

/// A TCP proxy to the server on 127.0.0.1, on plain threads (so it serves
/// either runtime). `cut` closes every connection and refuses new ones;
/// `freeze` stops forwarding without closing anything (a silent network);
/// `down` closes every connection and the listening port, so dials are
/// refused, until `restore` listens on the same port again.
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
    Down,
}

struct ProxyShared {
    mode: StdMutex<ProxyMode>,
    sockets: StdMutex<Vec<TcpStream>>,
    stop: AtomicBool,
}

impl ProxyShared {
    fn mode(&self) -> ProxyMode {
        *self.mode.lock().unwrap()
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
            mode: StdMutex::new(ProxyMode::Open),
            sockets: StdMutex::new(Vec::new()),
            stop: AtomicBool::new(false),
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
                let (s1, s2) = (s.clone(), s.clone());
                std::thread::spawn(move || pump(down, up, &s1));
                std::thread::spawn(move || pump(u2, d2, &s2));
            }
        });
        Proxy { addr, shared }
    }

    /// Closes every connection and refuses new ones.
    pub fn cut(&self) {
        *self.shared.mode.lock().unwrap() = ProxyMode::Cut;
        self.shared.close_all();
    }

    /// Stops forwarding without closing anything (a silent network).
    pub fn freeze(&self) {
        *self.shared.mode.lock().unwrap() = ProxyMode::Frozen;
    }

    /// Closes every connection and the listening port: dials are refused.
    pub fn down(&self) {
        *self.shared.mode.lock().unwrap() = ProxyMode::Down;
        self.shared.close_all();
    }

    /// Forwards again (listening on the same port after `down`).
    pub fn restore(&self) {
        *self.shared.mode.lock().unwrap() = ProxyMode::Open;
    }
}

impl Drop for Proxy {
    fn drop(&mut self) {
        self.shared.stop.store(true, Ordering::SeqCst);
        self.shared.close_all();
    }
}

fn pump(mut from: TcpStream, mut to: TcpStream, shared: &ProxyShared) {
    let _ = from.set_read_timeout(Some(Duration::from_millis(10)));
    let mut buf = [0u8; 16 * 1024];
    while !shared.stop.load(Ordering::SeqCst) {
        match shared.mode() {
            ProxyMode::Frozen => {
                std::thread::sleep(Duration::from_millis(5));
                continue;
            }
            ProxyMode::Cut | ProxyMode::Down => break,
            ProxyMode::Open => {}
        }
        match from.read(&mut buf) {
            Ok(0) => break,
            Ok(n) => {
                if to.write_all(&buf[..n]).is_err() {
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
