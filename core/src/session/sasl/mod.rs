//! The SASL seam: ZooKeeper's SASL exchange (opcode 102, before any other
//! request, after every handshake) drives any mechanism through
//! [`SaslMechanism`], one exchange per connection, made by a
//! [`SaslClient`]. DIGEST-MD5 lives here (pure Rust); GSSAPI (Kerberos)
//! needs the system's libraries and so lives in the driver, behind its
//! `gssapi` feature. The core never calls a system library: a mechanism
//! that does is the caller's code.

mod digest;

use alloc::boxed::Box;
use alloc::string::String;
use alloc::sync::Arc;
use alloc::vec::Vec;
use core::fmt;

use digest::DigestMd5;

/// Why a SASL exchange failed on the client's side, before or without a
/// verdict of the server (a server that refuses the exchange ends the
/// session as [`AuthFailed`](crate::RequestError::AuthFailed) instead).
/// Never renewed by itself: a new session would meet the same condition.
#[derive(Debug, Clone, Copy, PartialEq, Eq, thiserror::Error)]
#[non_exhaustive]
pub enum SaslError {
    /// The server's token is not a valid step of the mechanism.
    #[error("SASL: the server's token is not a valid step of the exchange")]
    BadChallenge,
    /// The server could not prove its identity (DIGEST-MD5's `rspauth`, or
    /// Kerberos mutual authentication): it is not the server we meant.
    #[error("SASL: the server failed to prove its identity")]
    BadServerProof,
    /// The server sent more after the exchange had finished.
    #[error("SASL: the server sent more after the exchange finished")]
    Unexpected,
    /// No credentials to authenticate with: for Kerberos, no ticket in the
    /// cache (`KRB5CCNAME`, `kinit`) and no client keytab
    /// (`KRB5_CLIENT_KTNAME`).
    #[error(
        "no Kerberos credentials: no ticket in the credentials cache (KRB5CCNAME; run kinit) \
         and no client keytab (KRB5_CLIENT_KTNAME)"
    )]
    NoCredentials,
    /// The credentials exist but are expired (a ticket past its end time).
    #[error("the Kerberos ticket has expired (run kinit again)")]
    CredentialsExpired,
    /// The credentials were refused by the KDC: a stale keytab (the key
    /// was changed since) or a wrong password.
    #[error("the KDC refused the client's credentials (stale keytab or wrong key)")]
    CredentialsRejected,
    /// The KDC does not know the server's principal (a wrong service name
    /// or host, see the `--sasl-service` and `--sasl-host` options).
    #[error("the KDC does not know the server's principal (check the SASL service name and host)")]
    UnknownServer,
    /// No KDC of the realm answered.
    #[error("no KDC of the realm answered")]
    KdcUnreachable,
    /// Any other failure of the mechanism's library (details in the log).
    #[error("the SASL mechanism failed (see the log for the library's message)")]
    Mechanism,
}

/// One SASL exchange on one connection, client side. Made by
/// [`SaslClient::start`] after each handshake and dropped when the
/// exchange ends or the connection does.
pub trait SaslMechanism: Send + fmt::Debug {
    /// The first token to send (empty when the mechanism has none, as
    /// DIGEST-MD5). Fails when the client has nothing to authenticate with.
    fn initial_response(&mut self) -> Result<Vec<u8>, SaslError>;

    /// The server's token in; the next token out, or `None` when there is
    /// nothing more to send. Fails when the token is not a valid step or
    /// the mechanism's library refuses to go on.
    fn evaluate_challenge(&mut self, challenge: &[u8]) -> Result<Option<Vec<u8>>, SaslError>;

    /// True once the exchange has succeeded on the client's side (the
    /// server's proof, if the mechanism has one, was checked).
    fn is_complete(&self) -> bool;
}

/// Makes a [`SaslMechanism`] for each connection.
pub trait SaslClient: Send + Sync + fmt::Debug {
    /// The mechanism's SASL name (`DIGEST-MD5`, `GSSAPI`), for logs.
    fn mechanism(&self) -> &str;

    /// An exchange with the server `host` (as written in the connect
    /// string); `random` is fresh randomness from the session's seed (for
    /// nonces). Fails when the mechanism cannot start at all (no
    /// credentials, say).
    fn start(&self, host: &str, random: [u64; 2]) -> Result<Box<dyn SaslMechanism>, SaslError>;
}

/// DIGEST-MD5 credentials (ZooKeeper's `DigestLoginModule` users), a
/// [`SaslClient`]. Its `Debug` output hides the password.
#[derive(Clone, PartialEq, Eq)]
#[non_exhaustive]
pub struct DigestMd5Client {
    /// The user.
    pub user: String,
    /// The password.
    pub password: String,
    /// The SASL service name (`zookeeper`, as the Java client's default).
    pub protocol: String,
    /// The server name in the digest-uri (`zk-sasl-md5`, ZooKeeper's).
    pub server_name: String,
}

impl fmt::Debug for DigestMd5Client {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.debug_struct("DigestMd5Client")
            .field("user", &self.user)
            .field("password", &"<hidden>")
            .field("protocol", &self.protocol)
            .field("server_name", &self.server_name)
            .finish()
    }
}

impl DigestMd5Client {
    /// DIGEST-MD5 as `user` with `password`, for ZooKeeper's defaults.
    pub fn new(user: &str, password: &str) -> Self {
        DigestMd5Client {
            user: user.into(),
            password: password.into(),
            protocol: digest::ZK_PROTOCOL.into(),
            server_name: digest::ZK_SERVER_NAME.into(),
        }
    }
}

impl SaslClient for DigestMd5Client {
    fn mechanism(&self) -> &str {
        "DIGEST-MD5"
    }

    fn start(&self, _host: &str, random: [u64; 2]) -> Result<Box<dyn SaslMechanism>, SaslError> {
        let cnonce = alloc::format!("{:016x}{:016x}", random[0], random[1]);
        Ok(Box::new(DigestMd5::new(&self.user, &self.password, &self.protocol, &self.server_name, cnonce)))
    }
}

/// The session's SASL setting: which mechanism authenticates every
/// connection of the session.
#[derive(Clone, Debug)]
pub struct SaslConfig {
    client: Arc<dyn SaslClient>,
}

impl SaslConfig {
    /// DIGEST-MD5 as `user` with `password`, for ZooKeeper's defaults.
    pub fn digest_md5(user: &str, password: &str) -> Self {
        SaslConfig::new(Arc::new(DigestMd5Client::new(user, password)))
    }

    /// Any mechanism (GSSAPI comes from the driver's `gssapi` feature).
    pub fn new(client: Arc<dyn SaslClient>) -> Self {
        SaslConfig { client }
    }

    /// The mechanism's SASL name.
    pub fn mechanism(&self) -> &str {
        self.client.mechanism()
    }

    pub(crate) fn client(&self) -> &dyn SaslClient {
        &*self.client
    }
}
