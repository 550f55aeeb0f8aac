//! ACLs and authentication as ZooKeeper's `fixupACL`, `checkACL` and the
//! built-in `digest` and `ip` providers do them. No `super` user, no SASL,
//! no x509.

use std::net::IpAddr;

use zoolock_wire::{Acl, ClientInfo, ErrorCode, Id, Perms};

use super::digest::digest_id;

/// The result of an auth packet.
#[derive(Debug, Clone, PartialEq, Eq)]
pub(crate) enum AuthOutcome {
    /// Credentials accepted; this id joins the connection's identities.
    Added(Id),
    /// Unknown scheme: the server answers AuthFailed and closes.
    Failed,
}

/// `ProviderRegistry` lookup plus `handleAuthentication`.
pub(crate) fn authenticate(scheme: &str, auth: &[u8], client_ip: &str) -> AuthOutcome {
    match scheme {
        "digest" => AuthOutcome::Added(Id { scheme: "digest".into(), id: digest_id(auth) }),
        "ip" => AuthOutcome::Added(Id { scheme: "ip".into(), id: client_ip.into() }),
        _ => AuthOutcome::Failed,
    }
}

/// `PrepRequestProcessor.fixupACL`: drop duplicates, refuse an empty list,
/// expand `auth` entries to the caller's authenticated ids, and validate
/// every other id with its provider. Any failure is InvalidACL.
pub(crate) fn fixup(acl: &[Acl], auth: &[Id]) -> Result<Vec<Acl>, ErrorCode> {
    let mut unique: Vec<&Acl> = Vec::with_capacity(acl.len());
    for a in acl {
        if !unique.contains(&a) {
            unique.push(a);
        }
    }
    if unique.is_empty() {
        return Err(ErrorCode::INVALID_ACL);
    }
    let mut out = Vec::new();
    for a in unique {
        match a.id.scheme.as_str() {
            "world" if a.id.id == "anyone" => out.push(a.clone()),
            "auth" => {
                // Only providers that count as authenticated (digest, not ip).
                let ids: Vec<&Id> = auth.iter().filter(|id| id.scheme == "digest").collect();
                if ids.is_empty() {
                    return Err(ErrorCode::INVALID_ACL);
                }
                out.extend(ids.into_iter().map(|id| Acl { perms: a.perms, id: id.clone() }));
            }
            "digest" if digest_valid(&a.id.id) => out.push(a.clone()),
            "ip" if ip_valid(&a.id.id) => out.push(a.clone()),
            _ => return Err(ErrorCode::INVALID_ACL),
        }
    }
    Ok(out)
}

/// `ZooKeeperServer.checkACL`: an empty ACL allows everything; otherwise some
/// entry sharing a bit with `perm` must match one of the caller's ids.
pub(crate) fn check(node_acl: &[Acl], perm: Perms, auth: &[Id], enforce: bool) -> Result<(), ErrorCode> {
    if !enforce || node_acl.is_empty() {
        return Ok(());
    }
    let allowed = node_acl.iter().any(|a| {
        a.perms.0 & perm.0 != 0
            && match a.id.scheme.as_str() {
                "world" => a.id.id == "anyone",
                "digest" => auth.iter().any(|id| id.scheme == "digest" && id.id == a.id.id),
                "ip" => auth.iter().any(|id| id.scheme == "ip" && ip_matches(&id.id, &a.id.id)),
                _ => false,
            }
    });
    if allowed { Ok(()) } else { Err(ErrorCode::NO_AUTH) }
}

/// getACL without ADMIN permission: digest ids come back as `user:x`.
pub(crate) fn masked(acl: &[Acl]) -> Vec<Acl> {
    acl.iter()
        .map(|a| {
            if a.id.scheme == "digest" {
                let user = a.id.id.split(':').next().unwrap_or_default();
                Acl { perms: a.perms, id: Id { scheme: "digest".into(), id: format!("{user}:x") } }
            } else {
                a.clone()
            }
        })
        .collect()
}

/// whoAmI: one entry per identity, the digest user without its hash.
pub(crate) fn client_infos(auth: &[Id]) -> Vec<ClientInfo> {
    auth.iter()
        .map(|id| ClientInfo {
            auth_scheme: id.scheme.clone(),
            user: if id.scheme == "digest" {
                id.id.split(':').next().unwrap_or_default().to_string()
            } else {
                id.id.clone()
            },
        })
        .collect()
}

/// `DigestAuthenticationProvider.isValid`: exactly two non-empty-trailing
/// parts around `:` (Java's `split` drops trailing empty strings).
fn digest_valid(id: &str) -> bool {
    let mut parts: Vec<&str> = id.split(':').collect();
    while parts.last() == Some(&"") {
        parts.pop();
    }
    parts.len() == 2
}

/// An address, optionally with a `/bits` mask.
fn parse_cidr(expr: &str) -> Option<(IpAddr, u32)> {
    let (addr, bits) = match expr.split_once('/') {
        Some((a, b)) => (a, Some(b.parse::<u32>().ok()?)),
        None => (expr, None),
    };
    let addr: IpAddr = addr.parse().ok()?;
    let max = if addr.is_ipv4() { 32 } else { 128 };
    let bits = bits.unwrap_or(max);
    (bits <= max).then_some((addr, bits))
}

fn ip_valid(expr: &str) -> bool {
    parse_cidr(expr).is_some()
}

fn ip_matches(client: &str, expr: &str) -> bool {
    let (Ok(client), Some((net, bits))) = (client.parse::<IpAddr>(), parse_cidr(expr)) else {
        return false;
    };
    match (client, net) {
        (IpAddr::V4(c), IpAddr::V4(n)) => {
            let mask = if bits == 0 { 0 } else { u32::MAX << (32 - bits) };
            u32::from(c) & mask == u32::from(n) & mask
        }
        (IpAddr::V6(c), IpAddr::V6(n)) => {
            let mask = if bits == 0 { 0 } else { u128::MAX << (128 - bits) };
            u128::from(c) & mask == u128::from(n) & mask
        }
        _ => false,
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn acl(perms: i32, scheme: &str, id: &str) -> Acl {
        Acl { perms: Perms(perms), id: Id { scheme: scheme.into(), id: id.into() } }
    }

    fn id(scheme: &str, id: &str) -> Id {
        Id { scheme: scheme.into(), id: id.into() }
    }

    #[test]
    fn fixup_rules() {
        let digest = id("digest", "u:hash");
        assert_eq!(fixup(&[], &[]), Err(ErrorCode::INVALID_ACL));
        assert_eq!(fixup(&[acl(31, "world", "someone")], &[]), Err(ErrorCode::INVALID_ACL));
        assert_eq!(fixup(&[acl(31, "auth", "")], &[id("ip", "127.0.0.1")]), Err(ErrorCode::INVALID_ACL));
        assert_eq!(fixup(&[acl(31, "auth", "")], std::slice::from_ref(&digest)), Ok(vec![acl(31, "digest", "u:hash")]));
        assert_eq!(fixup(&[acl(1, "digest", "u:")], &[]), Err(ErrorCode::INVALID_ACL));
        assert_eq!(fixup(&[acl(1, "ip", "10.0.0.0/8")], &[]), Ok(vec![acl(1, "ip", "10.0.0.0/8")]));
        assert_eq!(fixup(&[acl(1, "ip", "nope")], &[]), Err(ErrorCode::INVALID_ACL));
        assert_eq!(fixup(&[acl(1, "sasl", "x")], &[]), Err(ErrorCode::INVALID_ACL));
        let twice = [acl(31, "world", "anyone"), acl(31, "world", "anyone")];
        assert_eq!(fixup(&twice, &[]).map(|v| v.len()), Ok(1));
    }

    #[test]
    fn check_rules() {
        let ip = [id("ip", "127.0.0.1")];
        assert_eq!(check(&[], Perms::ALL, &[], true), Ok(()));
        assert_eq!(check(&[acl(1, "world", "anyone")], Perms::READ, &[], true), Ok(()));
        assert_eq!(check(&[acl(1, "world", "anyone")], Perms::WRITE, &[], true), Err(ErrorCode::NO_AUTH));
        assert_eq!(check(&[acl(1, "world", "anyone")], Perms::WRITE, &[], false), Ok(()));
        assert_eq!(check(&[acl(2, "ip", "127.0.0.0/8")], Perms::WRITE, &ip, true), Ok(()));
        assert_eq!(check(&[acl(2, "ip", "10.0.0.1")], Perms::WRITE, &ip, true), Err(ErrorCode::NO_AUTH));
        let d = [id("digest", "u:h")];
        assert_eq!(check(&[acl(16, "digest", "u:h")], Perms::READ | Perms::ADMIN, &d, true), Ok(()));
    }
}
