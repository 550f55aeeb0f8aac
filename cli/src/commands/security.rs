//! The global security flags, applied to the client options.

use zoolock_tokio::{AclPolicy, Options, TlsOptions};

use crate::args::Security;
use crate::exit::{self, Failure};

/// Adds credentials, the ACL and TLS to `options`. A certificate or key
/// that cannot be used is a failure naming the file (exit 69).
pub(crate) fn apply(security: &Security, mut options: Options) -> Result<Options, Failure> {
    for auth in &security.auth {
        options = options.auth(&auth.scheme, &auth.credentials);
    }
    if let Some(user) = &security.sasl_user {
        let password = std::env::var("ZOOLOCK_SASL_PASSWORD")
            .map_err(|_| Failure::new(exit::USAGE, "--sasl-user needs the password in ZOOLOCK_SASL_PASSWORD"))?;
        options = options.sasl_digest(user, &password);
    }
    if let Some(acl) = &security.acl {
        options = options.acl(AclPolicy::new(acl.0.clone()));
    }
    let Some(ca) = &security.tls_ca else {
        if security.tls_cert.is_some() || security.tls_server_name.is_some() {
            return Err(Failure::new(exit::USAGE, "--tls-cert, --tls-key and --tls-server-name need --tls-ca"));
        }
        return Ok(options);
    };
    let tls_failed = |e| Failure::new(exit::UNAVAILABLE, format!("TLS: {e}"));
    let mut tls =
        TlsOptions::from_files(ca, security.tls_cert.as_deref(), security.tls_key.as_deref()).map_err(tls_failed)?;
    if let Some(name) = &security.tls_server_name {
        tls = tls.server_name(name).map_err(tls_failed)?;
    }
    Ok(options.tls(tls))
}
