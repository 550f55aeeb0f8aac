//! `poll_timeout` and `handle_timeout`: every timer is in the future.

use crate::*;

// ---- 16. poll_timeout is always in the future after handle_timeout ----------------------

/// Fires every timer up to `until`: just before each deadline (nothing may
/// happen) and exactly at it. The network is silent: every dial connects and
/// nothing is ever answered.
fn run_until(sim: &mut Sim, until: u64) -> Vec<u64> {
    let mut fired = Vec::new();
    while let Some(t) = sim.s.poll_timeout() {
        if t > at(until) {
            break;
        }
        if t > sim.now {
            sim.now = Instant::from_nanos(t.as_nanos() - 1);
            sim.tick();
            sim.assert_quiet();
            assert_eq!(sim.s.poll_timeout(), Some(t), "nothing is due before the deadline");
        }
        sim.now = t;
        sim.tick();
        fired.push(t.as_nanos() / 1_000_000);
        for io in sim.io() {
            if let IoCommand::Connect { .. } = io {
                sim.connected();
            }
        }
        let _ = sim.tx();
        let _ = sim.events();
    }
    sim.set(until);
    fired
}

#[test]
fn poll_timeout_after_handle_timeout_is_after_now_in_every_phase() {
    for jitter in [Duration::ZERO, Duration::from_millis(700)] {
        let cfg = config("a:1,b:2,c:3", 10_000).with_reconnect_jitter(jitter);
        let mut sim = Sim::new(cfg);
        // Idle → Connecting → Handshaking → timeouts around the ring, with cycle pauses.
        run_until(&mut sim, 20_000);
        assert!(!sim.s.is_ended());
        assert_eq!(sim.s.session_id(), 0, "no session yet, so it never expires");
        // A handshake, then connected timers: pings, then the read timeout.
        while sim.s.status() != SessionStatus::Handshaking {
            let t = sim.s.poll_timeout().unwrap();
            sim.now = t;
            sim.tick();
            for io in sim.io() {
                if let IoCommand::Connect { .. } = io {
                    sim.connected();
                }
            }
        }
        let _ = sim.tx();
        sim.feed_ok(&connect_response(NEGOTIATED, 0x1234, Some(false)));
        let _ = sim.events();
        let start = sim.now.as_nanos() / 1_000_000;
        let fired = run_until(&mut sim, start + 30_000);
        assert!(fired.len() > 3, "pings, read timeout and reconnect attempts fired: {fired:?}");
        // The silent network means the session expired client-side at some point.
        assert!(sim.s.is_ended(), "{:?}", sim.s.status());
        assert_eq!(sim.s.status(), SessionStatus::Expired);
        assert_eq!(sim.s.poll_timeout(), None);
    }

    // Closing and Closed.
    let mut sim = connected("h:1");
    sim.s.close(sim.now);
    assert_eq!(sim.sent(), [RequestFrame::new(Xid(1), Request::CloseSession)]);
    let fired = run_until(&mut sim, 60_000);
    assert_eq!(fired, [6_010]);
    assert_eq!(sim.s.status(), SessionStatus::Closed);
    sim.tick_at(70_000);
}

#[test]
fn handle_timeout_at_a_deadline_between_attempts_dials_at_once() {
    // With zero jitter a failed attempt is retried at the same instant, in the
    // same handle_timeout, rather than leaving a deadline equal to now.
    let mut sim = Sim::new(config("a:1,b:2", 10_000));
    sim.tick_at(0);
    assert!(matches!(sim.io().as_slice(), [IoCommand::Connect { host: HostId(0), .. }]));
    sim.tick_at(5_000);
    assert!(matches!(sim.io().as_slice(), [IoCommand::Close, IoCommand::Connect { host: HostId(1), .. }]));
    assert_eq!(sim.s.status(), SessionStatus::Connecting);
    assert_eq!(sim.s.poll_timeout(), Some(at(10_000)));
    // The second failure completes a cycle: a real pause instead.
    sim.tick_at(10_000);
    assert_eq!(sim.io(), [IoCommand::Close]);
    assert_eq!(sim.s.poll_timeout(), Some(at(11_000)));
}
