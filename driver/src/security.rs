//! Secured ZooKeeper: credentials sent with addAuth, the ACL policy of lock
//! nodes, and how connection failures that no retry can fix (a certificate,
//! a wrong port) end the session. TLS settings are in `tls` (the `tls`
//! feature); a plaintext client still detects a TLS port.

use std::fmt;
use std::io;

use bytes::Bytes;
pub use zoolock_core::{AclParseError, AclPolicy, parse_acl};

/// One addAuth credential: a scheme (`digest`, ...) and its bytes
/// (`user:password` for digest). Sent before the first request and again
/// after every reconnect. Its `Debug` output hides the credentials.
#[derive(Clone, PartialEq, Eq)]
pub struct AuthInfo {
    /// The scheme.
    pub scheme: String,
    /// The credentials.
    pub credentials: Bytes,
}

impl fmt::Debug for AuthInfo {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.debug_struct("AuthInfo").field("scheme", &self.scheme).field("credentials", &"<hidden>").finish()
    }
}

impl AuthInfo {
    /// Parses `SCHEME:CREDENTIALS` (`digest:alice:secret`), the CLI's form.
    pub fn parse(text: &str) -> Option<AuthInfo> {
        let (scheme, credentials) = text.split_once(':')?;
        (!scheme.is_empty() && !credentials.is_empty()).then(|| AuthInfo {
            scheme: scheme.to_string(),
            credentials: Bytes::copy_from_slice(credentials.as_bytes()),
        })
    }
}

/// A connection failure that retrying cannot fix; it ends the session.
#[derive(Debug, Clone, PartialEq, Eq, thiserror::Error)]
#[non_exhaustive]
pub enum TlsError {
    /// The server's certificate did not verify: unknown CA, expired, wrong
    /// name, ...
    #[error("the server's TLS certificate was rejected: {0}")]
    ServerCertificate(String),
    /// The server refused our certificate, or wanted one we did not send.
    #[error("the server rejected the TLS handshake ({0}): check the client certificate")]
    Rejected(String),
    /// The TLS handshake failed otherwise (no common version or cipher suite,
    /// or the peer does not speak TLS).
    #[error("TLS handshake failed: {0}")]
    Handshake(String),
    /// The server closed the connection during the TLS handshake, before
    /// any session: most likely a plaintext port.
    #[error("the server closed the connection during the TLS handshake (is it a TLS port?)")]
    ClosedInHandshake,
    /// The server closed every connection before answering the ZooKeeper
    /// handshake, before any session: most likely a TLS port spoken to in
    /// plaintext.
    #[error("the server closed {0} connections before answering the handshake (a TLS port spoken to in plaintext?)")]
    PlaintextRefused(u32),
    /// The runtime cannot open TLS connections.
    #[error("this runtime does not support TLS")]
    Unsupported,
}

/// How many connections per host closed unanswered, before any session,
/// make a plaintext client give up (the Netty TLS port closes at once). A
/// server that is not serving yet (an ensemble member during an election)
/// closes the same way, so the budget grows with the number of hosts.
const UNANSWERED_PER_HOST: u32 = 3;

/// Tells fatal connection failures from ones a reconnect may fix; the
/// driver feeds it each connection's outcome.
#[derive(Debug, Default)]
pub(crate) struct FailureWatch {
    /// A session has been established (later closes are ordinary outages).
    pub(crate) had_session: bool,
    /// Bytes arrived on the current connection.
    pub(crate) heard: bool,
    unanswered: u32,
    /// Hosts in the connect string (at least one).
    hosts: u32,
}

impl FailureWatch {
    /// Sets the number of hosts the session cycles through.
    pub(crate) fn set_hosts(&mut self, hosts: usize) {
        self.hosts = u32::try_from(hosts).unwrap_or(u32::MAX);
    }

    /// A new connection is up.
    pub(crate) fn connected(&mut self) {
        self.heard = false;
    }

    /// A connect (TCP plus TLS handshake) failed.
    pub(crate) fn connect_failed(&mut self, error: &io::Error, tls: bool) -> Option<TlsError> {
        if let Some(e) = classify_tls(error) {
            return Some(e);
        }
        if tls && !self.had_session && error.kind() == io::ErrorKind::UnexpectedEof {
            return Some(TlsError::ClosedInHandshake);
        }
        if error.kind() == io::ErrorKind::Unsupported {
            return Some(TlsError::Unsupported);
        }
        None
    }

    /// A read on an established connection failed (TLS 1.3 reports a
    /// refused client certificate here, after the handshake).
    pub(crate) fn read_failed(&mut self, error: &io::Error) -> Option<TlsError> {
        classify_tls(error)
    }

    /// The connection closed (EOF). Only counts before any session.
    pub(crate) fn closed(&mut self, tls: bool) -> Option<TlsError> {
        if self.had_session || self.heard || tls {
            self.unanswered = 0;
            return None;
        }
        self.unanswered += 1;
        let limit = UNANSWERED_PER_HOST.saturating_mul(self.hosts.max(1));
        (self.unanswered >= limit).then_some(TlsError::PlaintextRefused(self.unanswered))
    }
}

/// The TLS failure inside an I/O error, if any (none without TLS).
fn classify_tls(error: &io::Error) -> Option<TlsError> {
    #[cfg(feature = "tls")]
    return crate::tls::classify(error);
    #[cfg(not(feature = "tls"))]
    {
        let _ = error;
        None
    }
}

/// The driver's side of a secured connection: how to connect, and the
/// watch over failures.
#[derive(Debug, Default)]
pub(crate) struct ConnSecurity {
    #[cfg(feature = "tls")]
    pub(crate) tls: Option<crate::tls::TlsOptions>,
    pub(crate) watch: FailureWatch,
}

impl ConnSecurity {
    /// Whether connections use TLS.
    pub(crate) fn uses_tls(&self) -> bool {
        #[cfg(feature = "tls")]
        return self.tls.is_some();
        #[cfg(not(feature = "tls"))]
        false
    }

    /// Opens a connection to `host:port`, over TLS when configured.
    pub(crate) fn connect(
        &mut self,
        runtime: &dyn crate::Runtime,
        host: String,
        port: u16,
    ) -> crate::BoxFuture<io::Result<Box<dyn crate::Conn>>> {
        #[cfg(feature = "tls")]
        match self.tls.as_ref().map(|t| t.connect_to(&host)) {
            None => runtime.connect(host, port),
            Some(Ok(tls)) => runtime.connect_tls(host, port, tls),
            Some(Err(e)) => Box::pin(async move { Err(e) }),
        }
        #[cfg(not(feature = "tls"))]
        runtime.connect(host, port)
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn auth_text() {
        let a = AuthInfo::parse("digest:alice:s:ecret").unwrap();
        assert_eq!(a.scheme, "digest");
        assert_eq!(&a.credentials[..], b"alice:s:ecret");
        assert!(!format!("{a:?}").contains("ecret"));
        assert_eq!(AuthInfo::parse("digest"), None);
        assert_eq!(AuthInfo::parse(":x"), None);
        assert_eq!(AuthInfo::parse("digest:"), None);
    }

    #[test]
    fn plaintext_gives_up_after_unanswered_closes_before_a_session_only() {
        let mut f = FailureWatch::default();
        assert_eq!(f.closed(false), None);
        assert_eq!(f.closed(false), None);
        assert_eq!(f.closed(false), Some(TlsError::PlaintextRefused(3)));
        let mut f = FailureWatch::default();
        f.set_hosts(2);
        for _ in 0..5 {
            assert_eq!(f.closed(false), None);
        }
        assert_eq!(f.closed(false), Some(TlsError::PlaintextRefused(6)), "three per host");
        let mut f = FailureWatch { had_session: true, ..FailureWatch::default() };
        for _ in 0..5 {
            assert_eq!(f.closed(false), None);
        }
        let mut f = FailureWatch { heard: true, ..FailureWatch::default() };
        assert_eq!(f.closed(false), None);
    }
}
