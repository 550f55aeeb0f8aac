//! Property test: a [`Client`] with a waiting [`Mutex`] acquire, driven
//! against a server that completes every handshake and then sends arbitrary
//! bytes (garbage, oversized length prefixes, well-framed replies to nothing,
//! notifications and pings with arbitrary bodies).
//!
//! Checked on every run:
//! - nothing panics;
//! - every `handle_bytes` error comes with a `Close` for that connection;
//! - the session never reconnects after `max_misbehaving_connections`
//!   misbehaving connections in a row, nor after a misbehaving connection
//!   once the session timeout has passed since the first of the run;
//! - when it gives up, the end is typed (`ServerMisbehaved` carrying the last
//!   error), the waiting acquire fails with the same error, nothing dials
//!   again and the session is not renewed, even with renewal on;
//! - the only other ends are the typed ones the bytes can ask for (an auth
//!   reply with AuthFailed, a SessionClosedRequireSaslAuth reply).
//!
//! No frame carries an xid that is in flight, so no reply can be a good
//! exchange and the misbehaving run is never reset.

mod support;

use std::time::Duration;

use proptest::collection::vec;
use proptest::prelude::*;
use support::connect_response;
use zoolock_core::wire::{BytesMut, DEFAULT_MAX_FRAME_LEN};
use zoolock_core::{
    Client, ClientEvent, ConnectString, Instant, IoCommand, RecipeEvent, RequestError, SessionConfig, SessionError,
    SessionStatus, ZkPath,
    recipes::{LockConfig, Mutex},
};

/// An xid no request of this test ever has: special ones, negatives and
/// values far above any xid the session allocates here.
fn foreign_xid() -> impl Strategy<Value = i32> {
    prop_oneof![Just(-1), Just(-2), Just(-4), (1 << 30)..=i32::MAX, i32::MIN..-4]
}

/// What the server sends in one go.
fn chunk() -> impl Strategy<Value = Vec<u8>> {
    prop_oneof![
        // Raw bytes: an incomplete, oversized or garbled frame. The xid's
        // top byte is forced into 0x40..0x7f so it is never in flight.
        vec(any::<u8>(), 0..48).prop_map(|mut b| {
            if let Some(x) = b.get_mut(4) {
                *x = (*x & 0x3f) | 0x40;
            }
            b
        }),
        // A well-framed reply header (and arbitrary body) for a foreign xid.
        (foreign_xid(), any::<i64>(), any::<i32>(), vec(any::<u8>(), 0..32)).prop_map(|(xid, zxid, err, body)| {
            let mut payload = Vec::new();
            payload.extend_from_slice(&xid.to_be_bytes());
            payload.extend_from_slice(&zxid.to_be_bytes());
            payload.extend_from_slice(&err.to_be_bytes());
            payload.extend_from_slice(&body);
            let mut frame = u32::try_from(payload.len()).unwrap().to_be_bytes().to_vec();
            frame.extend_from_slice(&payload);
            frame
        }),
        // A length prefix over the limit, nothing behind it.
        (u32::try_from(DEFAULT_MAX_FRAME_LEN).unwrap() + 1..=u32::MAX).prop_map(|len| len.to_be_bytes().to_vec()),
    ]
}

#[derive(Debug, Clone)]
struct Connection {
    /// (pause before, bytes) pairs.
    chunks: Vec<(u64, Vec<u8>)>,
}

fn connection() -> impl Strategy<Value = Connection> {
    vec((0u64..400, chunk()), 1..5).prop_map(|chunks| Connection { chunks })
}

struct Harness {
    client: Client,
    now: Instant,
    timeout: Duration,
    max: u32,
    buf: BytesMut,
    connects: usize,
    failures: Vec<RequestError>,
}

impl Harness {
    /// Drains the client; returns the transport commands.
    fn drain(&mut self) -> Vec<IoCommand> {
        let io: Vec<IoCommand> = std::iter::from_fn(|| self.client.poll_io()).collect();
        self.connects += io.iter().filter(|c| matches!(c, IoCommand::Connect { .. })).count();
        let mut sink = BytesMut::new();
        let _ = self.client.poll_transmit(&mut sink);
        while let Some(event) = self.client.poll_event() {
            if let ClientEvent::Recipe { event: RecipeEvent::Failed(e), .. } = event {
                self.failures.push(e);
            }
        }
        io
    }

    /// Fires timers until a connection is dialed; false once the session has
    /// ended instead.
    fn dial(&mut self) -> bool {
        loop {
            let io = self.drain();
            if io.iter().any(|c| matches!(c, IoCommand::Connect { .. })) {
                return true;
            }
            let Some(at) = self.client.poll_timeout() else {
                assert!(self.client.session().is_ended(), "a live session without a timer");
                return false;
            };
            self.now = self.now.max(at);
            self.client.handle_timeout(self.now);
        }
    }
}

fn run(max: u32, timeout_ms: u64, renew: bool, connections: Vec<Connection>) {
    let timeout = Duration::from_millis(timeout_ms);
    let config = SessionConfig::new(ConnectString::parse("h:1").unwrap(), 9)
        .with_session_timeout(timeout)
        .with_max_misbehaving_connections(max);
    let mut client = Client::new(config, Instant::ZERO);
    client.set_renew_session(renew);
    let lock = client.add(Instant::ZERO, Mutex::new(ZkPath::new("/lock").unwrap(), LockConfig::new(3)));
    client.with(Instant::ZERO, lock, |m, now| m.acquire(now, None)).unwrap().unwrap();
    let mut h =
        Harness { client, now: Instant::ZERO, timeout, max, buf: BytesMut::new(), connects: 0, failures: Vec::new() };

    // Consecutive misbehaving connections, the first one's time, the last error.
    let mut run_len = 0u32;
    let mut first: Option<Instant> = None;
    let mut last: Option<SessionError> = None;
    // After the given connections, keep lying with garbage until the client
    // gives up: it must, within `max` more connections.
    let tail = (0..max).map(|_| Connection { chunks: vec![(0, vec![0, 0, 0, 8, 0x40, 0, 0, 0, 0, 0, 0, 0])] });
    for conn in connections.into_iter().chain(tail) {
        if !h.dial() {
            break;
        }
        assert!(run_len < h.max, "dialed again after {run_len} misbehaving connections");
        h.client.handle_connected(h.now);
        h.buf.clear();
        h.buf.extend_from_slice(&connect_response(i32::try_from(timeout_ms).unwrap(), 0x1234, Some(false)));
        h.client.handle_bytes(h.now, &mut h.buf).expect("a valid handshake");
        h.drain();
        let mut misbehaved = false;
        for (pause, bytes) in conn.chunks {
            // Less than T/3 in all, so the client's own timers keep quiet.
            h.now = h.now + Duration::from_millis(pause / 8);
            h.buf.extend_from_slice(&bytes);
            match h.client.handle_bytes(h.now, &mut h.buf) {
                Ok(()) => {}
                Err(e) => {
                    assert!(h.drain().contains(&IoCommand::Close), "no Close after {e}");
                    misbehaved = true;
                    last = Some(e);
                    break;
                }
            }
            if h.client.session().is_ended() {
                break;
            }
        }
        if misbehaved {
            run_len += 1;
            first.get_or_insert(h.now);
        } else if !h.client.session().is_ended() {
            // The server hangs up after its bytes: not misbehaviour.
            h.client.handle_disconnected(h.now);
            h.drain();
        }
        if h.client.session().is_ended() {
            break;
        }
    }
    h.drain();

    let status = h.client.session().status();
    match status {
        SessionStatus::ServerMisbehaved(e) => {
            assert_eq!(Some(e), last, "the end carries the last misbehaviour");
            let by_time = first.is_some_and(|f| h.now >= f + h.timeout);
            assert!(run_len == h.max || by_time, "gave up after {run_len} of {} connections", h.max);
            assert_eq!(h.failures, [RequestError::ServerMisbehaved(e)], "the waiting acquire fails with it");
        }
        SessionStatus::AuthFailed | SessionStatus::SaslRequired => {
            let error = status.end_error().unwrap();
            assert_eq!(h.failures, [error]);
        }
        other => panic!("the client did not give up: {other:?} after {run_len} misbehaving connections"),
    }
    assert!(h.connects <= 64, "{} connects", h.connects);
    // Terminal, never renewed.
    h.now = h.now + h.timeout * 10;
    h.client.handle_timeout(h.now);
    assert!(h.drain().is_empty());
    assert_eq!(h.client.renewals(), 0);
    assert_eq!(h.client.session().status(), status);
    assert_eq!(h.client.poll_timeout(), None);
}

proptest! {
    #![proptest_config(ProptestConfig { cases: 256, ..ProptestConfig::default() })]

    #[test]
    fn arbitrary_server_bytes_end_in_a_typed_error_after_bounded_reconnects(
        max in 1u32..6,
        timeout_ms in 2_000u64..20_000,
        renew in any::<bool>(),
        connections in vec(connection(), 0..12),
    ) {
        run(max, timeout_ms, renew, connections);
    }
}
