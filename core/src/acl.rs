//! ACLs as users write them: ZooKeeper's CLI syntax (`scheme:id:perms`,
//! comma-separated) and a policy that picks an ACL by path prefix, in the
//! spirit of Curator's `ACLProvider`.

use alloc::string::{String, ToString};
use alloc::vec::Vec;

use zoolock_wire::{Acl, Id, Perms};

use crate::path::ZkPath;

/// Why an ACL text does not parse.
#[derive(Debug, Clone, PartialEq, Eq, thiserror::Error)]
#[non_exhaustive]
pub enum AclParseError {
    /// The text holds no entry.
    #[error("empty ACL")]
    Empty,
    /// An entry is not `scheme:id:perms`.
    #[error("ACL entry `{0}` is not scheme:id:perms")]
    Malformed(String),
    /// A permission letter is not one of `cdrwa`.
    #[error("ACL entry `{entry}`: unknown permission `{letter}` (use c, d, r, w, a)")]
    UnknownPermission {
        /// The entry.
        entry: String,
        /// The letter.
        letter: char,
    },
}

/// Parses one permission string (`cdrwa`, any order, each letter at most
/// meaningful once) as ZooKeeper's CLI does.
fn parse_perms(entry: &str, text: &str) -> Result<Perms, AclParseError> {
    if text.is_empty() {
        return Err(AclParseError::Malformed(entry.to_string()));
    }
    let mut perms = Perms(0);
    for letter in text.chars() {
        perms = perms
            | match letter {
                'r' => Perms::READ,
                'w' => Perms::WRITE,
                'c' => Perms::CREATE,
                'd' => Perms::DELETE,
                'a' => Perms::ADMIN,
                _ => return Err(AclParseError::UnknownPermission { entry: entry.to_string(), letter }),
            };
    }
    Ok(perms)
}

/// Parses ZooKeeper's CLI ACL syntax: `scheme:id:perms[,scheme:id:perms...]`.
/// The id may itself hold colons (`digest:alice:HASH=:cdrwa`,
/// `ip:10.0.0.0/8:r`); the scheme ends at the first colon and the
/// permissions start after the last. `auth::cdrwa` means whoever the
/// session is authenticated as; `world:anyone:r` anybody.
pub fn parse_acl(text: &str) -> Result<Vec<Acl>, AclParseError> {
    let mut out = Vec::new();
    for entry in text.split(',').map(str::trim).filter(|e| !e.is_empty()) {
        let malformed = || AclParseError::Malformed(entry.to_string());
        let (scheme, rest) = entry.split_once(':').ok_or_else(malformed)?;
        let (id, perms) = rest.rsplit_once(':').ok_or_else(malformed)?;
        if scheme.is_empty() {
            return Err(malformed());
        }
        let perms = parse_perms(entry, perms)?;
        out.push(Acl { perms, id: Id { scheme: scheme.to_string(), id: id.to_string() } });
    }
    if out.is_empty() {
        return Err(AclParseError::Empty);
    }
    Ok(out)
}

/// Which ACL a node gets: the ACL of the longest matching path prefix, else
/// the default. A prefix matches its own path and everything below it
/// (`/app` matches `/app` and `/app/x`, not `/apple`).
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct AclPolicy {
    default: Vec<Acl>,
    prefixes: Vec<(ZkPath, Vec<Acl>)>,
}

impl Default for AclPolicy {
    /// `world:anyone:cdrwa` everywhere (ZooKeeper's `OPEN_ACL_UNSAFE`, as
    /// Curator's default provider).
    fn default() -> Self {
        AclPolicy::new(Acl::open_unsafe())
    }
}

impl AclPolicy {
    /// `default` for every path.
    pub fn new(default: Vec<Acl>) -> Self {
        AclPolicy { default, prefixes: Vec::new() }
    }

    /// `acl` for `prefix` and everything below it. A later call for the same
    /// prefix replaces the earlier one.
    pub fn with_prefix(mut self, prefix: ZkPath, acl: Vec<Acl>) -> Self {
        self.prefixes.retain(|(p, _)| *p != prefix);
        self.prefixes.push((prefix, acl));
        self
    }

    /// The default ACL.
    pub fn default_acl(&self) -> &[Acl] {
        &self.default
    }

    /// The ACL for a node at `path`.
    pub fn acl_for(&self, path: &str) -> &[Acl] {
        self.prefixes
            .iter()
            .filter(|(prefix, _)| is_under(path, prefix.as_str()))
            .max_by_key(|(prefix, _)| prefix.as_str().len())
            .map_or(&self.default[..], |(_, acl)| &acl[..])
    }
}

fn is_under(path: &str, prefix: &str) -> bool {
    prefix == "/" || path.strip_prefix(prefix).is_some_and(|rest| rest.is_empty() || rest.starts_with('/'))
}

#[cfg(test)]
mod tests {
    use super::*;
    use alloc::vec;

    fn acl(scheme: &str, id: &str, perms: i32) -> Acl {
        Acl { perms: Perms(perms), id: Id { scheme: scheme.into(), id: id.into() } }
    }

    #[test]
    fn parses_cli_syntax() {
        assert_eq!(parse_acl("auth::cdrwa").unwrap(), vec![acl("auth", "", 31)]);
        assert_eq!(parse_acl("world:anyone:r").unwrap(), vec![acl("world", "anyone", 1)]);
        assert_eq!(
            parse_acl("digest:alice:X/Yz+1=:cdrwa, ip:10.0.0.0/8:rw").unwrap(),
            vec![acl("digest", "alice:X/Yz+1=", 31), acl("ip", "10.0.0.0/8", 3)]
        );
        assert_eq!(parse_acl("world:anyone:ad").unwrap(), vec![acl("world", "anyone", 16 | 8)]);
    }

    #[test]
    fn rejects_bad_text() {
        assert_eq!(parse_acl(""), Err(AclParseError::Empty));
        assert_eq!(parse_acl(" , "), Err(AclParseError::Empty));
        assert_eq!(parse_acl("world"), Err(AclParseError::Malformed("world".into())));
        assert_eq!(parse_acl("world:anyone"), Err(AclParseError::Malformed("world:anyone".into())));
        assert_eq!(parse_acl(":x:r"), Err(AclParseError::Malformed(":x:r".into())));
        assert_eq!(parse_acl("auth::"), Err(AclParseError::Malformed("auth::".into())));
        assert_eq!(
            parse_acl("auth::rwx"),
            Err(AclParseError::UnknownPermission { entry: "auth::rwx".into(), letter: 'x' })
        );
    }

    #[test]
    fn longest_prefix_wins() {
        let creator = Acl::creator_all();
        let read = Acl::read_unsafe();
        let policy = AclPolicy::default()
            .with_prefix(ZkPath::new("/app").unwrap(), creator.clone())
            .with_prefix(ZkPath::new("/app/public").unwrap(), read.clone());
        assert_eq!(policy.acl_for("/other"), &Acl::open_unsafe()[..]);
        assert_eq!(policy.acl_for("/apple"), &Acl::open_unsafe()[..]);
        assert_eq!(policy.acl_for("/app"), &creator[..]);
        assert_eq!(policy.acl_for("/app/lock/_c_x-lock-"), &creator[..]);
        assert_eq!(policy.acl_for("/app/public"), &read[..]);
        assert_eq!(policy.acl_for("/app/public/x"), &read[..]);
        let root = AclPolicy::default().with_prefix(ZkPath::new("/").unwrap(), read.clone());
        assert_eq!(root.acl_for("/anything"), &read[..]);
    }
}
