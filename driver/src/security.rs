//! Secured ZooKeeper: credentials sent with addAuth, the ACL policy of lock
//! nodes, TLS settings for the transports, and how connection failures that
//! no retry can fix (a certificate, a wrong port) end the session.

use std::fmt;
use std::io;
use std::path::Path;
use std::sync::Arc;

use bytes::Bytes;
use rustls::pki_types::pem::PemObject;
use rustls::pki_types::{CertificateDer, PrivateKeyDer, ServerName};
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

/// Why TLS settings could not be built (a local problem: files, PEM).
#[derive(Debug, Clone, PartialEq, Eq, thiserror::Error)]
#[non_exhaustive]
pub enum TlsConfigError {
    /// A file could not be read.
    #[error("cannot read {path}: {reason}")]
    Read {
        /// The file.
        path: String,
        /// The OS error.
        reason: String,
    },
    /// A PEM input holds no certificate.
    #[error("{what}: no PEM certificate found")]
    NoCertificate {
        /// Which input (`CA bundle`, `client certificate`, or a path).
        what: String,
    },
    /// A PEM input holds no private key (PKCS#8, PKCS#1 or SEC1).
    #[error("{what}: no PEM private key (PKCS#8, PKCS#1 or SEC1) found")]
    NoKey {
        /// Which input.
        what: String,
    },
    /// A CA certificate was rejected as a trust anchor.
    #[error("{what}: not a usable CA certificate: {reason}")]
    BadCa {
        /// Which input.
        what: String,
        /// Why.
        reason: String,
    },
    /// A client certificate without its key, or a key without its certificate.
    #[error("a client certificate and its key go together")]
    CertWithoutKey,
    /// rustls refused the certificate and key (for example they do not match).
    #[error("client certificate and key: {0}")]
    ClientIdentity(String),
    /// The server name override is not a DNS name or IP address.
    #[error("invalid TLS server name `{0}`")]
    ServerName(String),
}

/// TLS for the connection to every server: built from a CA bundle and an
/// optional client certificate and key (mutual TLS), or from a rustls
/// `ClientConfig`. The name checked against the server's certificate is the
/// host of the connect string unless [`TlsOptions::server_name`] overrides it.
#[derive(Clone)]
pub struct TlsOptions {
    config: Arc<rustls::ClientConfig>,
    server_name: Option<ServerName<'static>>,
}

impl fmt::Debug for TlsOptions {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.debug_struct("TlsOptions")
            .field("client_auth", &self.config.client_auth_cert_resolver.has_certs())
            .field("server_name", &self.server_name)
            .finish()
    }
}

fn read_file(path: &Path) -> Result<Vec<u8>, TlsConfigError> {
    std::fs::read(path)
        .map_err(|e| TlsConfigError::Read { path: path.display().to_string(), reason: e.kind().to_string() })
}

fn certs(pem: &[u8], what: &str) -> Result<Vec<CertificateDer<'static>>, TlsConfigError> {
    let certs: Vec<_> = CertificateDer::pem_slice_iter(pem).filter_map(Result::ok).collect();
    if certs.is_empty() {
        return Err(TlsConfigError::NoCertificate { what: what.to_string() });
    }
    Ok(certs)
}

impl TlsOptions {
    /// From PEM bytes: `ca` holds one or more trusted CA certificates;
    /// `client` is `(certificate chain, private key)` for mutual TLS, the
    /// key in PKCS#8, PKCS#1 or SEC1 form.
    pub fn from_pem(ca: &[u8], client: Option<(&[u8], &[u8])>) -> Result<TlsOptions, TlsConfigError> {
        Self::build(ca, "CA bundle", client.map(|(c, k)| (c, "client certificate", k, "client key")))
    }

    /// From PEM files (see [`TlsOptions::from_pem`]); errors name the file.
    pub fn from_files(ca: &Path, cert: Option<&Path>, key: Option<&Path>) -> Result<TlsOptions, TlsConfigError> {
        let ca_pem = read_file(ca)?;
        let identity = match (cert, key) {
            (Some(c), Some(k)) => {
                Some((read_file(c)?, c.display().to_string(), read_file(k)?, k.display().to_string()))
            }
            (None, None) => None,
            _ => return Err(TlsConfigError::CertWithoutKey),
        };
        Self::build(
            &ca_pem,
            &ca.display().to_string(),
            identity.as_ref().map(|(c, cn, k, kn)| (&c[..], cn.as_str(), &k[..], kn.as_str())),
        )
    }

    fn build(ca: &[u8], ca_name: &str, client: Option<(&[u8], &str, &[u8], &str)>) -> Result<Self, TlsConfigError> {
        let mut roots = rustls::RootCertStore::empty();
        for cert in certs(ca, ca_name)? {
            roots.add(cert).map_err(|e| TlsConfigError::BadCa { what: ca_name.to_string(), reason: e.to_string() })?;
        }
        let provider = Arc::new(rustls::crypto::ring::default_provider());
        let builder = rustls::ClientConfig::builder_with_provider(provider)
            .with_safe_default_protocol_versions()
            .map_err(|e| TlsConfigError::ClientIdentity(e.to_string()))?
            .with_root_certificates(roots);
        let config = match client {
            None => builder.with_no_client_auth(),
            Some((cert, cert_name, key, key_name)) => {
                let chain = certs(cert, cert_name)?;
                let key = PrivateKeyDer::from_pem_slice(key)
                    .map_err(|_| TlsConfigError::NoKey { what: key_name.to_string() })?;
                builder.with_client_auth_cert(chain, key).map_err(|e| TlsConfigError::ClientIdentity(e.to_string()))?
            }
        };
        Ok(TlsOptions { config: Arc::new(config), server_name: None })
    }

    /// From a ready rustls configuration (custom verifiers, protocol versions, ...).
    pub fn from_config(config: Arc<rustls::ClientConfig>) -> TlsOptions {
        TlsOptions { config, server_name: None }
    }

    /// Checks the servers' certificates against `name` instead of the host
    /// in the connect string.
    pub fn server_name(mut self, name: &str) -> Result<TlsOptions, TlsConfigError> {
        let parsed =
            ServerName::try_from(name.to_string()).map_err(|_| TlsConfigError::ServerName(name.to_string()))?;
        self.server_name = Some(parsed);
        Ok(self)
    }

    /// What a transport needs to open a TLS connection to `host`.
    pub(crate) fn connect_to(&self, host: &str) -> io::Result<TlsConnect> {
        let server_name = match &self.server_name {
            Some(name) => name.clone(),
            None => ServerName::try_from(host.to_string()).map_err(|_| {
                io::Error::new(io::ErrorKind::InvalidInput, format!("invalid TLS server name `{host}`"))
            })?,
        };
        Ok(TlsConnect { config: self.config.clone(), server_name })
    }
}

/// A TLS connection request for [`crate::Runtime::connect_tls`]: the rustls
/// configuration and the name to verify.
#[derive(Debug, Clone)]
#[non_exhaustive]
pub struct TlsConnect {
    /// The client configuration.
    pub config: Arc<rustls::ClientConfig>,
    /// The name the server's certificate must carry.
    pub server_name: ServerName<'static>,
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
        if let Some(e) = classify(error) {
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
        classify(error)
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

/// The TLS failure inside an I/O error, if any.
fn classify(error: &io::Error) -> Option<TlsError> {
    use rustls::{AlertDescription as A, Error as E};
    let inner = error.get_ref()?.downcast_ref::<E>()?;
    Some(match inner {
        E::InvalidCertificate(e) => {
            let what = format!("{e:?}");
            let hint = if what.starts_with("UnknownIssuer") {
                " (not signed by a trusted CA)"
            } else if what.starts_with("Expired") {
                " (expired)"
            } else if what.starts_with("NotValidForName") {
                " (not issued for this server name)"
            } else {
                ""
            };
            TlsError::ServerCertificate(format!("{what}{hint}"))
        }
        E::AlertReceived(
            alert @ (A::BadCertificate
            | A::CertificateRequired
            | A::UnknownCA
            | A::CertificateExpired
            | A::CertificateRevoked
            | A::CertificateUnknown
            | A::UnsupportedCertificate
            | A::AccessDenied),
        ) => TlsError::Rejected(format!("{alert:?}")),
        // TLS 1.2 servers answer a missing client certificate this way.
        E::AlertReceived(alert @ A::HandshakeFailure) => TlsError::Rejected(format!("{alert:?}")),
        other => TlsError::Handshake(other.to_string()),
    })
}

/// The driver's side of a secured connection: how to connect, and the
/// watch over failures.
#[derive(Debug, Default)]
pub(crate) struct ConnSecurity {
    pub(crate) tls: Option<TlsOptions>,
    pub(crate) watch: FailureWatch,
}

impl ConnSecurity {
    /// Opens a connection to `host:port`, over TLS when configured.
    pub(crate) fn connect(
        &mut self,
        runtime: &dyn crate::Runtime,
        host: String,
        port: u16,
    ) -> crate::BoxFuture<io::Result<Box<dyn crate::Conn>>> {
        match self.tls.as_ref().map(|t| t.connect_to(&host)) {
            None => runtime.connect(host, port),
            Some(Ok(tls)) => runtime.connect_tls(host, port, tls),
            Some(Err(e)) => Box::pin(async move { Err(e) }),
        }
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
    fn tls_errors_are_classified() {
        let w = |e: rustls::Error| io::Error::new(io::ErrorKind::InvalidData, e);
        let mut f = FailureWatch::default();
        let unknown = w(rustls::Error::InvalidCertificate(rustls::CertificateError::UnknownIssuer));
        assert!(
            matches!(f.connect_failed(&unknown, true), Some(TlsError::ServerCertificate(m)) if m.contains("UnknownIssuer"))
        );
        let refused = w(rustls::Error::AlertReceived(rustls::AlertDescription::CertificateRequired));
        assert!(matches!(f.read_failed(&refused), Some(TlsError::Rejected(_))));
        let eof = io::Error::from(io::ErrorKind::UnexpectedEof);
        assert_eq!(f.connect_failed(&eof, true), Some(TlsError::ClosedInHandshake));
        assert_eq!(f.connect_failed(&eof, false), None);
        assert_eq!(f.connect_failed(&io::Error::from(io::ErrorKind::ConnectionRefused), true), None);
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

    #[test]
    fn pem_errors_name_the_input() {
        let e = TlsOptions::from_pem(b"not pem", None).unwrap_err();
        assert_eq!(e, TlsConfigError::NoCertificate { what: "CA bundle".into() });
        let e = TlsOptions::from_files(Path::new("/nonexistent/ca.pem"), None, None).unwrap_err();
        assert!(matches!(e, TlsConfigError::Read { path, .. } if path == "/nonexistent/ca.pem"));
    }
}
