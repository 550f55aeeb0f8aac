//! The global security flags, applied to the client options.

use zoolock_tokio::{AclPolicy, Options, TlsOptions};

use crate::args::{SaslMechanism, Security};
use crate::exit::{self, Failure};

/// Adds credentials, the ACL and TLS to `options`. A certificate or key
/// that cannot be used is a failure naming the file (exit 69).
pub(crate) fn apply(security: &Security, mut options: Options) -> Result<Options, Failure> {
    for auth in &security.auth {
        options = options.auth(&auth.scheme, &auth.credentials);
    }
    if let Some(file) = &security.auth_file {
        for auth in auth_file(file)? {
            options = options.auth(&auth.scheme, &auth.credentials);
        }
    }
    options = sasl(security, options)?;
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
    // Read again at each new connection: a holder that runs for days
    // presents the certificate rotated on disk at its next reconnect.
    let mut tls = TlsOptions::reloading_files(ca, security.tls_cert.as_deref(), security.tls_key.as_deref())
        .map_err(tls_failed)?;
    if let Some(name) = &security.tls_server_name {
        tls = tls.server_name(name).map_err(tls_failed)?;
    }
    Ok(options.tls(tls))
}

/// `--sasl-mechanism` with its options: digest-md5 needs `--sasl-user`,
/// gssapi a build with the `gssapi` feature.
fn sasl(security: &Security, options: Options) -> Result<Options, Failure> {
    let mechanism = match (security.sasl_mechanism, &security.sasl_user) {
        (Some(m), _) => m,
        (None, Some(_)) => SaslMechanism::DigestMd5,
        (None, None) => {
            if security.sasl_service.is_some() || security.sasl_host.is_some() {
                return Err(Failure::new(exit::USAGE, "--sasl-service and --sasl-host need --sasl-mechanism gssapi"));
            }
            return Ok(options);
        }
    };
    match mechanism {
        SaslMechanism::DigestMd5 => {
            let Some(user) = &security.sasl_user else {
                return Err(Failure::new(exit::USAGE, "--sasl-mechanism digest-md5 needs --sasl-user"));
            };
            let password = std::env::var("ZOOLOCK_SASL_PASSWORD")
                .map_err(|_| Failure::new(exit::USAGE, "--sasl-user needs the password in ZOOLOCK_SASL_PASSWORD"))?;
            Ok(options.sasl_digest(user, &password))
        }
        SaslMechanism::Gssapi => gssapi(security, options),
    }
}

#[cfg(feature = "gssapi")]
fn gssapi(security: &Security, options: Options) -> Result<Options, Failure> {
    let mut client = zoolock_tokio::GssapiClient::new();
    if let Some(service) = &security.sasl_service {
        client = client.service(service);
    }
    if let Some(host) = &security.sasl_host {
        client = client.host(host);
    }
    Ok(options.sasl_gssapi(client))
}

#[cfg(not(feature = "gssapi"))]
fn gssapi(_: &Security, _: Options) -> Result<Options, Failure> {
    Err(Failure::new(exit::USAGE, "--sasl-mechanism gssapi needs zoolock built with the `gssapi` feature"))
}

/// The credentials of `--auth-file`: one `SCHEME:CREDENTIALS` per line,
/// blank lines and `#` comments skipped. The file's contents never appear
/// in an error (a line is named by its number).
fn auth_file(file: &std::path::Path) -> Result<Vec<zoolock_tokio::AuthInfo>, Failure> {
    let text = std::fs::read_to_string(file)
        .map_err(|e| Failure::new(exit::USAGE, format!("cannot read --auth-file {}: {e}", file.display())))?;
    text.lines()
        .enumerate()
        .map(|(n, line)| (n, line.trim()))
        .filter(|(_, line)| !line.is_empty() && !line.starts_with('#'))
        .map(|(n, line)| {
            zoolock_tokio::AuthInfo::parse(line).ok_or_else(|| {
                Failure::new(
                    exit::USAGE,
                    format!("--auth-file {} line {}: not SCHEME:CREDENTIALS", file.display(), n + 1),
                )
            })
        })
        .collect()
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn auth_file_lines_and_comments() {
        let dir = std::env::temp_dir().join(format!("zoolock-auth-{}", std::process::id()));
        std::fs::write(&dir, "# ops\n\ndigest:alice:secret\n  ip:127.0.0.1  \n").unwrap();
        let auths = auth_file(&dir).unwrap();
        let pairs: Vec<_> = auths.iter().map(|a| (a.scheme.as_str(), &a.credentials[..])).collect();
        assert_eq!(pairs, [("digest", &b"alice:secret"[..]), ("ip", &b"127.0.0.1"[..])]);
        std::fs::write(&dir, "digest:alice:secret\nnocolon\n").unwrap();
        let e = auth_file(&dir).unwrap_err();
        assert_eq!(e.code, exit::USAGE);
        assert!(e.message.contains("line 2") && !e.message.contains("secret"), "{}", e.message);
        std::fs::remove_file(&dir).unwrap();
    }
}
