//! Transcript tests of SASL DIGEST-MD5 in the [`Session`]: the exchange runs
//! after every handshake and before anything else, a refusal ends the
//! session typed, and a server that requires SASL of a session without it
//! ends it with `SaslAuthRequired`. The mechanism's arithmetic is checked
//! against RFC 2831's example in the unit tests; here the fake server
//! computes its proof the same way from the response we sent.

mod support;

use md5::{Digest, Md5};
use std::sync::Arc;
use support::{Sim, config, connect_response, err, ok, p, reply_ev, state_ev};
use zoolock_core::wire::{Bytes, ErrorCode, OpCode, Request, Response};

use zoolock_core::{
    ConnectionState, IoCommand, Op, RequestError, SaslClient, SaslConfig, SaslError, SaslMechanism, SessionStatus,
};

const NEGOTIATED: i32 = 9_000;
const CHALLENGE: &str = r#"realm="zk-sasl-md5",nonce="3q2+7wAAAAAAAA==",charset=utf-8,algorithm=md5-sess"#;

fn sasl_config() -> zoolock_core::SessionConfig {
    config("h:1", 10_000).with_sasl(SaslConfig::digest_md5("alice", "pw"))
}

fn field<'a>(text: &'a str, key: &str) -> &'a str {
    let start = text.find(&format!("{key}=")).unwrap_or_else(|| panic!("no {key} in {text}")) + key.len() + 1;
    let rest = &text[start..];
    match rest.strip_prefix('"') {
        Some(q) => &q[..q.find('"').unwrap()],
        None => rest.split(',').next().unwrap(),
    }
}

fn hex(b: &[u8]) -> String {
    b.iter().map(|x| format!("{x:02x}")).collect()
}

/// The server's view (RFC 2831 §2.1.2.1 and §2.1.3): `a2_prefix` is
/// `AUTHENTICATE` for the client's response, empty for rspauth.
fn digest(response: &str, password: &str, a2_prefix: &str) -> String {
    let (user, realm, nonce, cnonce, nc, qop, uri) = (
        field(response, "username"),
        field(response, "realm"),
        field(response, "nonce"),
        field(response, "cnonce"),
        field(response, "nc"),
        field(response, "qop"),
        field(response, "digest-uri"),
    );
    let secret = Md5::digest(format!("{user}:{realm}:{password}").as_bytes());
    let mut a1 = secret.to_vec();
    a1.extend_from_slice(format!(":{nonce}:{cnonce}").as_bytes());
    let ha1 = hex(&Md5::digest(&a1));
    let ha2 = hex(&Md5::digest(format!("{a2_prefix}:{uri}").as_bytes()));
    hex(&Md5::digest(format!("{ha1}:{nonce}:{nc}:{cnonce}:{qop}:{ha2}").as_bytes()))
}

/// The one SASL frame sent: its xid and token.
fn sasl_sent(sim: &mut Sim) -> (i32, Vec<u8>) {
    let sent = sim.sent();
    assert_eq!(sent.len(), 1, "only the SASL token goes out: {sent:?}");
    assert_eq!(sent[0].header.op, OpCode::SASL);
    let Request::Sasl(r) = &sent[0].request else { panic!("not sasl: {sent:?}") };
    (sent[0].header.xid.0, r.token.as_deref().unwrap_or_default().to_vec())
}

fn sasl_reply(xid: i32, token: &str) -> bytes::BytesMut {
    ok(xid, 0, Response::Sasl(Some(Bytes::from(token.to_owned()))))
}

/// Dials and answers the handshake; the SASL exchange starts.
fn handshake(sim: &mut Sim, at_ms: u64) {
    sim.tick_at(at_ms);
    sim.dial_connected();
    sim.feed_ok(&connect_response(NEGOTIATED, 0x1234, Some(false)));
}

/// Runs the exchange to success with a server that knows `pw`.
fn exchange(sim: &mut Sim) {
    let (xid, token) = sasl_sent(sim);
    assert!(token.is_empty(), "DIGEST-MD5 has no initial response");
    assert_eq!(sim.events(), [], "not connected before SASL completes");
    sim.feed_ok(&sasl_reply(xid, CHALLENGE));
    let (xid, token) = sasl_sent(sim);
    let response = String::from_utf8(token).unwrap();
    assert_eq!(field(&response, "username"), "alice");
    assert_eq!(field(&response, "digest-uri"), "zookeeper/zk-sasl-md5");
    assert_eq!(field(&response, "response"), digest(&response, "pw", "AUTHENTICATE"));
    sim.feed_ok(&sasl_reply(xid, &format!("rspauth={}", digest(&response, "pw", ""))));
}

#[test]
fn sasl_runs_after_each_handshake_before_any_other_request() {
    let mut sim = Sim::new(sasl_config());
    sim.submit(Op::sync(&p("/a")));
    sim.s.add_auth(sim.now, "digest", Bytes::from_static(b"u:p")).unwrap();
    handshake(&mut sim, 0);
    // No ping while SASL is under way.
    sim.tick_at(4_000);
    exchange(&mut sim);
    assert_eq!(sim.events(), [state_ev(ConnectionState::Connected)]);
    let sent = sim.sent();
    assert_eq!(sent.iter().map(|f| f.header.op).collect::<Vec<_>>(), [OpCode::AUTH, OpCode::SYNC], "then the rest");

    // Again after a reconnect, before the queued request.
    sim.disconnected();
    assert_eq!(sim.events(), [reply_ev(0, Err(RequestError::ConnectionLoss)), state_ev(ConnectionState::Suspended)]);
    sim.submit(Op::sync(&p("/b")));
    handshake(&mut sim, 5_000);
    exchange(&mut sim);
    assert_eq!(sim.events(), [state_ev(ConnectionState::Reconnected)]);
    let sent = sim.sent();
    assert_eq!(sent.iter().map(|f| f.header.op).collect::<Vec<_>>(), [OpCode::AUTH, OpCode::SYNC]);
}

#[test]
fn a_refused_exchange_ends_the_session_with_auth_failed() {
    for code in [ErrorCode::AUTH_FAILED, ErrorCode::SESSION_CLOSED_REQUIRE_SASL_AUTH] {
        let mut sim = Sim::new(sasl_config());
        sim.submit(Op::sync(&p("/a")));
        handshake(&mut sim, 0);
        let (xid, _) = sasl_sent(&mut sim);
        sim.feed_ok(&sasl_reply(xid, CHALLENGE));
        let (xid, _) = sasl_sent(&mut sim);
        sim.feed_ok(&err(xid, 0, code));
        assert_eq!(sim.io(), [IoCommand::Close]);
        assert_eq!(
            sim.events(),
            [reply_ev(0, Err(RequestError::AuthFailed)), state_ev(ConnectionState::AuthFailed)],
            "{code:?}"
        );
        assert_eq!(sim.s.status(), SessionStatus::AuthFailed);
        assert_eq!(sim.s.poll_timeout(), None);
    }
}

#[test]
fn a_wrong_server_proof_ends_the_session() {
    let mut sim = Sim::new(sasl_config());
    handshake(&mut sim, 0);
    let (xid, _) = sasl_sent(&mut sim);
    sim.feed_ok(&sasl_reply(xid, CHALLENGE));
    let (xid, _) = sasl_sent(&mut sim);
    sim.feed_ok(&sasl_reply(xid, "rspauth=0123456789abcdef0123456789abcdef"));
    // The server is to blame, not our credentials: typed as such.
    assert_eq!(sim.events(), [state_ev(ConnectionState::SaslFailed(SaslError::BadServerProof))]);
    assert_eq!(sim.s.status(), SessionStatus::SaslFailed(SaslError::BadServerProof));
    assert!(sim.s.is_ended());
}

/// A mechanism that cannot start (as GSSAPI without a ticket): the seam's
/// contract, with a client that has no credentials.
#[derive(Debug)]
struct NoCredentials;

impl SaslClient for NoCredentials {
    fn mechanism(&self) -> &str {
        "TEST"
    }

    fn start(&self, host: &str, _: [u64; 2]) -> Result<Box<dyn SaslMechanism>, SaslError> {
        assert_eq!(host, "h", "the mechanism gets the connect string's host");
        Err(SaslError::NoCredentials)
    }
}

#[test]
fn a_mechanism_that_cannot_start_ends_the_session_at_once_typed() {
    let config = config("h:1", 10_000).with_sasl(SaslConfig::new(Arc::new(NoCredentials)));
    let mut sim = Sim::new(config);
    sim.submit(Op::sync(&p("/a")));
    handshake(&mut sim, 0);
    // Nothing goes to the server; the connection closes and the session ends.
    assert!(sim.sent().is_empty());
    assert_eq!(sim.io(), [IoCommand::Close]);
    let failed = RequestError::Sasl(SaslError::NoCredentials);
    assert_eq!(
        sim.events(),
        [reply_ev(0, Err(failed.clone())), state_ev(ConnectionState::SaslFailed(SaslError::NoCredentials))]
    );
    assert_eq!(sim.s.status().end_error(), Some(failed));
    assert_eq!(sim.s.poll_timeout(), None);
}

#[test]
fn a_server_requiring_sasl_ends_a_session_without_it_typed() {
    let mut sim = Sim::new(config("h:1", 10_000));
    assert_eq!(sim.establish(NEGOTIATED), []);
    sim.submit(Op::sync(&p("/a")));
    sim.submit(Op::sync(&p("/b")));
    let sent = sim.sent();
    sim.feed_ok(&err(sent[0].header.xid.0, 0, ErrorCode::SESSION_CLOSED_REQUIRE_SASL_AUTH));
    assert_eq!(sim.io(), [IoCommand::Close]);
    assert_eq!(
        sim.events(),
        [
            reply_ev(0, Err(RequestError::SaslAuthRequired)),
            reply_ev(1, Err(RequestError::SaslAuthRequired)),
            state_ev(ConnectionState::AuthFailed)
        ]
    );
    assert_eq!(sim.s.status(), SessionStatus::SaslRequired);
    assert_eq!(sim.s.status().end_error(), Some(RequestError::SaslAuthRequired));
}
