//! SASL GSSAPI (Kerberos V5, RFC 4752) through the system's GSSAPI library
//! (MIT krb5, via `libgssapi`): the core's [`SaslClient`] seam, as the Java
//! client's `GSSAPI` SASL client speaks it to ZooKeeper.
//!
//! Credentials come from the standard Kerberos environment, as every
//! Kerberos tool's do: the ticket cache (`KRB5CCNAME`, filled by `kinit`),
//! or a client keytab (`KRB5_CLIENT_KTNAME`) from which the library gets a
//! ticket by itself; `KRB5_CONFIG` names the realm's configuration. The
//! server's principal is `SERVICE/HOST`: the service `zookeeper` by
//! default, the host as written in the connect string unless overridden,
//! imported as a host-based service name so that krb5.conf's rules
//! (`dns_canonicalize_hostname`, `rdns`, `[domain_realm]`) canonicalize
//! it and pick its realm.
//!
//! The library's calls block: they read the cache and keytab, and may ask
//! the KDC (bounded by krb5.conf's KDC timeouts). They run on the driver's
//! task, once per connection.

use libgssapi::context::{ClientCtx, CtxFlags, SecurityContext};
use libgssapi::error::{Error as GssError, MajorFlags};
use libgssapi::name::Name;
use libgssapi::oid::{GSS_MECH_KRB5, GSS_NT_HOSTBASED_SERVICE};
use zoolock_core::{SaslClient, SaslError, SaslMechanism};

/// ZooKeeper's Kerberos service name (the Java client's
/// `zookeeper.sasl.client.username` default).
pub const DEFAULT_SERVICE: &str = "zookeeper";

/// RFC 4752 §3.3: the "no security layer" bit of the layer bitmask.
const NO_SECURITY_LAYER: u8 = 1;

/// SASL GSSAPI credentials from the Kerberos environment, for a server
/// principal `service/host`.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct GssapiClient {
    service: String,
    host: Option<String>,
}

impl Default for GssapiClient {
    fn default() -> Self {
        GssapiClient::new()
    }
}

impl GssapiClient {
    /// The service `zookeeper` on the host of each connection.
    pub fn new() -> Self {
        GssapiClient { service: DEFAULT_SERVICE.into(), host: None }
    }

    /// The server principal's service part (the Java client's
    /// `zookeeper.sasl.client.username`).
    pub fn service(mut self, service: &str) -> Self {
        self.service = service.into();
        self
    }

    /// The server principal's host part for every server, instead of the
    /// connect string's host (the host of the Java client's
    /// `zookeeper.server.principal`).
    pub fn host(mut self, host: &str) -> Self {
        self.host = Some(host.into());
        self
    }

    /// The host-based service name this client targets on `host`.
    fn target(&self, host: &str) -> String {
        format!("{}@{}", self.service, self.host.as_deref().unwrap_or(host))
    }
}

impl SaslClient for GssapiClient {
    fn mechanism(&self) -> &str {
        "GSSAPI"
    }

    fn start(&self, host: &str, _random: [u64; 2]) -> Result<Box<dyn SaslMechanism>, SaslError> {
        let target = self.target(host);
        let name = Name::new(target.as_bytes(), Some(GSS_NT_HOSTBASED_SERVICE)).map_err(|e| classify(&target, &e))?;
        let flags = CtxFlags::GSS_C_MUTUAL_FLAG | CtxFlags::GSS_C_INTEG_FLAG | CtxFlags::GSS_C_CONF_FLAG;
        let ctx = ClientCtx::new(None, name, flags, Some(GSS_MECH_KRB5));
        Ok(Box::new(Gssapi { ctx, target, step: Step::Context }))
    }
}

#[derive(Debug, Clone, Copy, PartialEq, Eq)]
enum Step {
    /// Establishing the Kerberos context (AP-REQ, AP-REP).
    Context,
    /// Context established; waiting for the server's wrapped layer offer.
    Layer,
    /// Sent our wrapped choice; the server's (empty) answer ends it.
    Chosen,
    Done,
}

/// One GSSAPI exchange.
#[derive(Debug)]
struct Gssapi {
    ctx: ClientCtx,
    target: String,
    step: Step,
}

impl SaslMechanism for Gssapi {
    /// The AP-REQ: getting it needs a ticket for the server, so this is
    /// where missing or refused credentials show.
    fn initial_response(&mut self) -> Result<Vec<u8>, SaslError> {
        match self.ctx.step(None, None) {
            Ok(Some(token)) => Ok(token.to_vec()),
            Ok(None) => Err(SaslError::Mechanism),
            Err(e) => Err(classify(&self.target, &e)),
        }
    }

    fn evaluate_challenge(&mut self, challenge: &[u8]) -> Result<Option<Vec<u8>>, SaslError> {
        match self.step {
            Step::Context => {
                let token = self.ctx.step(Some(challenge), None).map_err(|e| classify(&self.target, &e))?;
                if self.ctx.is_complete() {
                    self.step = Step::Layer;
                }
                // As Java's client: an established context with nothing
                // more to say still answers, with an empty token.
                Ok(Some(token.map(|t| t.to_vec()).unwrap_or_default()))
            }
            Step::Layer => {
                // RFC 4752 §3.1: the offer is 4 bytes, a layer bitmask and
                // the server's maximum buffer; we take no security layer
                // (ZooKeeper's connections carry none) and send no
                // authorization identity (the server then uses ours).
                let offer = self.ctx.unwrap(challenge).map_err(|e| classify(&self.target, &e))?;
                if offer.len() != 4 || offer[0] & NO_SECURITY_LAYER == 0 {
                    return Err(SaslError::BadChallenge);
                }
                let choice = [NO_SECURITY_LAYER, 0, 0, 0];
                let wrapped = self.ctx.wrap(false, &choice).map_err(|e| classify(&self.target, &e))?;
                self.step = Step::Chosen;
                Ok(Some(wrapped.to_vec()))
            }
            Step::Chosen if challenge.is_empty() => {
                self.step = Step::Done;
                Ok(None)
            }
            Step::Chosen | Step::Done => Err(SaslError::Unexpected),
        }
    }

    fn is_complete(&self) -> bool {
        self.step == Step::Done
    }
}

// krb5's com_err codes (krb5.h), as GSSAPI reports them in `minor`.
const KRB5KDC_ERR_S_PRINCIPAL_UNKNOWN: i32 = -1_765_328_377;
const KRB5KDC_ERR_C_PRINCIPAL_UNKNOWN: i32 = -1_765_328_378;
const KRB5KDC_ERR_PREAUTH_FAILED: i32 = -1_765_328_360;
const KRB5KRB_AP_ERR_BAD_INTEGRITY: i32 = -1_765_328_353;
const KRB5KRB_AP_ERR_TKT_EXPIRED: i32 = -1_765_328_352;
const KRB5_CC_NOTFOUND: i32 = -1_765_328_243;
const KRB5_KDC_UNREACH: i32 = -1_765_328_228;
const KRB5_REALM_CANT_RESOLVE: i32 = -1_765_328_164;
const KRB5_FCC_NOFILE: i32 = -1_765_328_189;
const KRB5_KT_NOTFOUND: i32 = -1_765_328_203;

/// Who is to blame for a GSSAPI failure; the library's own text goes to
/// the log, where the details (principal, realm, cache) are.
fn classify(target: &str, e: &GssError) -> SaslError {
    let minor = e.minor as i32;
    let kind = match minor {
        KRB5KDC_ERR_S_PRINCIPAL_UNKNOWN => SaslError::UnknownServer,
        KRB5KDC_ERR_PREAUTH_FAILED | KRB5KRB_AP_ERR_BAD_INTEGRITY | KRB5KDC_ERR_C_PRINCIPAL_UNKNOWN => {
            SaslError::CredentialsRejected
        }
        KRB5KRB_AP_ERR_TKT_EXPIRED => SaslError::CredentialsExpired,
        KRB5_KDC_UNREACH | KRB5_REALM_CANT_RESOLVE => SaslError::KdcUnreachable,
        KRB5_FCC_NOFILE | KRB5_CC_NOTFOUND | KRB5_KT_NOTFOUND => SaslError::NoCredentials,
        _ if routine(e) == MajorFlags::GSS_S_CREDENTIALS_EXPIRED.bits() => SaslError::CredentialsExpired,
        _ if routine(e) == MajorFlags::GSS_S_NO_CRED.bits() => SaslError::NoCredentials,
        _ if [MajorFlags::GSS_S_BAD_MIC.bits(), MajorFlags::GSS_S_BAD_SIG.bits()].contains(&routine(e)) => {
            SaslError::BadServerProof
        }
        _ if routine(e) == MajorFlags::GSS_S_DEFECTIVE_TOKEN.bits() => SaslError::BadChallenge,
        _ => SaslError::Mechanism,
    };
    tracing::warn!(target: "zoolock::sasl", "GSSAPI for {target}: {e} (minor {minor}): {kind}");
    kind
}

/// The routine-error field of a major status (RFC 2744 §3.9.1): a value,
/// not a set of bits.
fn routine(e: &GssError) -> u32 {
    e.major.bits() & (0xff << 16)
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn the_target_is_service_at_host_unless_overridden() {
        assert_eq!(GssapiClient::new().target("zk1.example"), "zookeeper@zk1.example");
        assert_eq!(GssapiClient::new().service("zk").host("localhost").target("127.0.0.1"), "zk@localhost");
    }
}
