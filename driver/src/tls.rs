//! TLS (the `tls` feature): the settings [`TlsOptions`] built from PEM or
//! a rustls configuration, the request a transport gets
//! ([`TlsConnect`]), and how a rustls error inside an I/O error becomes a
//! [`TlsError`]. The crypto provider is the application's process default
//! when it installed one, else the one a feature names (`ring`, then
//! `aws-lc-rs`); with neither, building from PEM fails with
//! [`TlsConfigError::NoCryptoProvider`].

use std::fmt;
use std::io;
use std::path::{Path, PathBuf};
use std::sync::{Arc, Mutex, PoisonError};

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
/// Made with [`TlsOptions::reloading_files`], the files are read again at
/// each new connection, so certificates that rotate on disk are presented
/// without a restart. Clones share the files and what was last read.
#[derive(Clone)]
pub struct TlsOptions {
    config: Arc<rustls::ClientConfig>,
    server_name: Option<ServerName<'static>>,
    files: Option<Arc<TlsFiles>>,
}

/// PEM files read again at each new connection, and the last configuration
/// they gave.
#[derive(Debug)]
struct TlsFiles {
    ca: PathBuf,
    cert: Option<PathBuf>,
    key: Option<PathBuf>,
    /// The last good configuration, and why the last read failed (if it did).
    last: Mutex<(Arc<rustls::ClientConfig>, Option<TlsConfigError>)>,
}

impl TlsFiles {
    /// The configuration for a new connection: the files as they are now,
    /// or, when one fails to load, the last good configuration (the failure
    /// is kept for [`TlsOptions::reload_error`] and logged).
    fn current(&self) -> Arc<rustls::ClientConfig> {
        let loaded = TlsOptions::from_files(&self.ca, self.cert.as_deref(), self.key.as_deref());
        let mut last = self.last.lock().unwrap_or_else(PoisonError::into_inner);
        match loaded {
            Ok(options) => *last = (options.config, None),
            Err(error) => {
                tracing::warn!(%error, "TLS files did not load: the connection uses the last good configuration");
                last.1 = Some(error);
            }
        }
        last.0.clone()
    }
}

impl fmt::Debug for TlsOptions {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.debug_struct("TlsOptions")
            .field("client_auth", &self.config.client_auth_cert_resolver.has_certs())
            .field("server_name", &self.server_name)
            .field("reloading", &self.files.as_ref().map(|f| &f.ca))
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
        Ok(TlsOptions { config: Arc::new(config), server_name: None, files: None })
    }

    /// From PEM files (as [`TlsOptions::from_files`]) that are read again
    /// at each new connection (each reconnect, each new client), so a
    /// certificate, key or CA bundle rotated on disk is used from the next
    /// connection on. A read that fails (a file missing, half written, not
    /// PEM) leaves the last good configuration in use for that connection;
    /// [`TlsOptions::reload_error`] then names the file and the reason.
    ///
    /// # Errors
    ///
    /// As [`TlsOptions::from_files`], when the files do not load now.
    pub fn reloading_files(ca: &Path, cert: Option<&Path>, key: Option<&Path>) -> Result<TlsOptions, TlsConfigError> {
        let first = Self::from_files(ca, cert, key)?;
        let files = TlsFiles {
            ca: ca.to_path_buf(),
            cert: cert.map(Path::to_path_buf),
            key: key.map(Path::to_path_buf),
            last: Mutex::new((first.config.clone(), None)),
        };
        Ok(TlsOptions { files: Some(Arc::new(files)), ..first })
    }

    /// Why the files of [`TlsOptions::reloading_files`] failed to load at
    /// the last new connection, naming the file (that connection used the
    /// last good configuration); `None` when they loaded, or when these
    /// options do not reload.
    pub fn reload_error(&self) -> Option<TlsConfigError> {
        let files = self.files.as_ref()?;
        files.last.lock().unwrap_or_else(PoisonError::into_inner).1.clone()
    }

    /// From a ready rustls configuration (custom verifiers, protocol
    /// versions, a crypto provider of the application's choosing, ...).
    pub fn from_config(config: Arc<rustls::ClientConfig>) -> TlsOptions {
        TlsOptions { config, server_name: None, files: None }
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
        let config = match &self.files {
            Some(files) => files.current(),
            None => self.config.clone(),
        };
        Ok(TlsConnect { config, server_name })
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

    /// A self-signed CA certificate (P-256), for the PEM parsing only.
    const TEST_CA: &str = "\
-----BEGIN CERTIFICATE-----
MIIBlTCCATugAwIBAgIUcN/Arpeb4a9X8D2nBptc4pt54g8wCgYIKoZIzj0EAwIw
HzEdMBsGA1UEAwwUem9vbG9jayB1bml0IHRlc3QgQ0EwIBcNMjYxMTI3MjIwNjI4
WhgPMjEyNjExMDMyMjA2MjhaMB8xHTAbBgNVBAMMFHpvb2xvY2sgdW5pdCB0ZXN0
IENBMFkwEwYHKoZIzj0CAQYIKoZIzj0DAQcDQgAE/lVE+BHSSv/wUejYDvg0uykz
5ecxeR5uu1/2lDE9lbdObdnMBmUk5XBkHguuKX6urXUXLw4wuN9AKi1IVInCY6NT
MFEwHQYDVR0OBBYEFIezgQZUtJo02v0ud10Ngfj9e9EKMB8GA1UdIwQYMBaAFIez
gQZUtJo02v0ud10Ngfj9e9EKMA8GA1UdEwEB/wQFMAMBAf8wCgYIKoZIzj0EAwID
SAAwRQIgMytvwCnMxDTcgXkPWDtAJTdaVbNQyFEQzjSppCDg/cMCIQDdBzicmA89
wJB0CIL55etww6f/tB7lNIOcOVzLcqWuyA==
-----END CERTIFICATE-----
";

    /// The files are read at each new connection; one that fails to load
    /// is named, and the last good configuration serves meanwhile.
    #[cfg(any(feature = "ring", feature = "aws-lc-rs"))]
    #[test]
    fn reloading_files_keep_the_last_good_configuration() {
        let dir = std::env::temp_dir().join(format!("zoolock-tls-reload-{}", std::process::id()));
        std::fs::create_dir_all(&dir).unwrap();
        let ca = dir.join("ca.pem");
        std::fs::write(&ca, "not pem").unwrap();
        let e = TlsOptions::reloading_files(&ca, None, None).unwrap_err();
        assert_eq!(e, TlsConfigError::NoCertificate { what: ca.display().to_string() });
        std::fs::write(&ca, TEST_CA).unwrap();
        let options = TlsOptions::reloading_files(&ca, None, None).unwrap();
        let first = options.connect_to("localhost").unwrap().config;
        assert_eq!(options.reload_error(), None);
        std::fs::write(&ca, "half written").unwrap();
        let kept = options.clone().connect_to("localhost").unwrap().config;
        assert!(Arc::ptr_eq(&first, &kept), "the last good configuration");
        assert_eq!(options.reload_error(), Some(TlsConfigError::NoCertificate { what: ca.display().to_string() }));
        std::fs::write(&ca, TEST_CA).unwrap();
        let again = options.connect_to("localhost").unwrap().config;
        assert!(!Arc::ptr_eq(&first, &again), "read again");
        assert_eq!(options.reload_error(), None);
        assert_eq!(TlsOptions::from_pem(TEST_CA.as_bytes(), None).unwrap().reload_error(), None);
        std::fs::remove_dir_all(&dir).unwrap();
    }

    #[cfg(not(any(feature = "ring", feature = "aws-lc-rs")))]
    #[test]
    fn without_a_provider_feature_pem_needs_an_installed_one() {
        assert_eq!(TlsOptions::from_pem(b"not pem", None).unwrap_err(), TlsConfigError::NoCryptoProvider);
    }
}
