//! TLS (the `tls` feature): the settings [`TlsOptions`] built from PEM or
//! a rustls configuration, the request a transport gets
//! ([`TlsConnect`]), and how a rustls error inside an I/O error becomes a
//! [`TlsError`]. The crypto provider is the application's process default
//! when it installed one, else the one a feature names (`ring`, then
//! `aws-lc-rs`); with neither, building from PEM fails with
//! [`TlsConfigError::NoCryptoProvider`].

use std::fmt;
use std::io;
use std::path::Path;
use std::sync::Arc;

use rustls::crypto::CryptoProvider;
use rustls::pki_types::pem::PemObject;
use rustls::pki_types::{CertificateDer, PrivateKeyDer, ServerName};

use crate::security::TlsError;

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
    /// No crypto provider: the application installed no process default
    /// (`rustls::crypto::CryptoProvider::install_default`) and neither the
    /// `ring` nor the `aws-lc-rs` feature is on.
    #[error(
        "no TLS crypto provider: enable zoolock's `ring` or `aws-lc-rs` feature, or install a rustls default provider"
    )]
    NoCryptoProvider,
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
    /// key in PKCS#8, PKCS#1 or SEC1 form. Fails when an input holds no
    /// certificate or key, rustls rejects them, or there is no crypto
    /// provider (see the module docs).
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
        let provider = crypto_provider().ok_or(TlsConfigError::NoCryptoProvider)?;
        let mut roots = rustls::RootCertStore::empty();
        for cert in certs(ca, ca_name)? {
            roots.add(cert).map_err(|e| TlsConfigError::BadCa { what: ca_name.to_string(), reason: e.to_string() })?;
        }
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

    /// From a ready rustls configuration (custom verifiers, protocol
    /// versions, a crypto provider of the application's choosing, ...).
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

/// The application's process-wide default provider if it installed one,
/// else the one a feature selects.
fn crypto_provider() -> Option<Arc<CryptoProvider>> {
    if let Some(installed) = CryptoProvider::get_default() {
        return Some(installed.clone());
    }
    #[cfg(feature = "ring")]
    return Some(Arc::new(rustls::crypto::ring::default_provider()));
    #[cfg(all(feature = "aws-lc-rs", not(feature = "ring")))]
    return Some(Arc::new(rustls::crypto::aws_lc_rs::default_provider()));
    #[cfg(not(any(feature = "ring", feature = "aws-lc-rs")))]
    None
}

/// The TLS failure inside an I/O error, if any.
pub(crate) fn classify(error: &io::Error) -> Option<TlsError> {
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

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn tls_errors_are_classified() {
        let w = |e: rustls::Error| io::Error::new(io::ErrorKind::InvalidData, e);
        let mut f = crate::security::FailureWatch::default();
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

    #[cfg(any(feature = "ring", feature = "aws-lc-rs"))]
    #[test]
    fn pem_errors_name_the_input() {
        let e = TlsOptions::from_pem(b"not pem", None).unwrap_err();
        assert_eq!(e, TlsConfigError::NoCertificate { what: "CA bundle".into() });
        let e = TlsOptions::from_files(Path::new("/nonexistent/ca.pem"), None, None).unwrap_err();
        assert!(matches!(e, TlsConfigError::Read { path, .. } if path == "/nonexistent/ca.pem"));
    }

    #[cfg(not(any(feature = "ring", feature = "aws-lc-rs")))]
    #[test]
    fn without_a_provider_feature_pem_needs_an_installed_one() {
        assert_eq!(TlsOptions::from_pem(b"not pem", None).unwrap_err(), TlsConfigError::NoCryptoProvider);
    }
}
