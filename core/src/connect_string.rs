//! `host:port,host:port/chroot`, parsed once.

use alloc::string::String;
use alloc::vec::Vec;
use core::fmt;

use crate::path::{PathError, ZkPath};

/// ZooKeeper's default client port.
pub const DEFAULT_PORT: u16 = 2181;

/// One server address as written in the connect string; the driver resolves it.
#[derive(Debug, Clone, PartialEq, Eq, Hash)]
pub struct HostAddr {
    /// Host name or IP literal (IPv6 without brackets).
    pub host: String,
    /// TCP port.
    pub port: u16,
}

impl fmt::Display for HostAddr {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        if self.host.contains(':') {
            write!(f, "[{}]:{}", self.host, self.port)
        } else {
            write!(f, "{}:{}", self.host, self.port)
        }
    }
}

/// Why a connect string was rejected.
#[derive(Debug, Clone, PartialEq, Eq, thiserror::Error)]
#[non_exhaustive]
pub enum ConnectStringError {
    /// No hosts were given.
    #[error("connect string has no hosts")]
    NoHosts,
    /// A host entry is empty or malformed.
    #[error("invalid host entry {0:?}")]
    InvalidHost(String),
    /// A port is not a number in 1..=65535.
    #[error("invalid port in {0:?}")]
    InvalidPort(String),
    /// The chroot suffix is not a valid path.
    #[error("invalid chroot: {0}")]
    InvalidChroot(PathError),
}

/// A parsed connect string: the hosts in the order given, plus an optional chroot.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct ConnectString {
    hosts: Vec<HostAddr>,
    chroot: Option<ZkPath>,
}

impl ConnectString {
    /// Parses `host[:port][,host[:port]...][/chroot]`. A chroot of `/` is none.
    ///
    /// ```
    /// use zoolock_core::ConnectString;
    /// let cs = ConnectString::parse("zk1:2181,zk2,[::1]:2182/app").unwrap();
    /// let hosts: Vec<String> = cs.hosts().iter().map(|h| h.to_string()).collect();
    /// assert_eq!(hosts.len(), 3);
    /// assert_eq!(cs.hosts()[1].port, 2181); // the default port
    /// assert_eq!(cs.chroot().map(|c| c.as_str()), Some("/app"));
    /// ```
    pub fn parse(s: &str) -> Result<ConnectString, ConnectStringError> {
        let s = s.trim();
        let (hosts_part, chroot) = match s.find('/') {
            Some(idx) => {
                let (h, c) = s.split_at(idx);
                let chroot = ZkPath::new(c).map_err(ConnectStringError::InvalidChroot)?;
                (h, if chroot.is_root() { None } else { Some(chroot) })
            }
            None => (s, None),
        };
        let mut hosts = Vec::new();
        for entry in hosts_part.split(',').map(str::trim).filter(|e| !e.is_empty()) {
            hosts.push(parse_host(entry)?);
        }
        if hosts.is_empty() {
            return Err(ConnectStringError::NoHosts);
        }
        Ok(ConnectString { hosts, chroot })
    }

    /// The hosts in the order written.
    pub fn hosts(&self) -> &[HostAddr] {
        &self.hosts
    }

    /// The chroot, if any.
    pub fn chroot(&self) -> Option<&ZkPath> {
        self.chroot.as_ref()
    }

    /// The same chroot with other hosts (a membership change keeps the
    /// chroot: Curator's EnsembleTracker dropped it, CURATOR-593/611).
    /// `None` when `hosts` is empty.
    pub fn with_hosts(&self, hosts: Vec<HostAddr>) -> Option<ConnectString> {
        (!hosts.is_empty()).then(|| ConnectString { hosts, chroot: self.chroot.clone() })
    }
}

fn parse_port(entry: &str, port: &str) -> Result<u16, ConnectStringError> {
    match port.parse::<u16>() {
        Ok(p) if p > 0 => Ok(p),
        _ => Err(ConnectStringError::InvalidPort(String::from(entry))),
    }
}

fn parse_host(entry: &str) -> Result<HostAddr, ConnectStringError> {
    let invalid = || ConnectStringError::InvalidHost(String::from(entry));
    if let Some(rest) = entry.strip_prefix('[') {
        let (host, after) = rest.split_once(']').ok_or_else(invalid)?;
        let port = match after.strip_prefix(':') {
            Some(p) => parse_port(entry, p)?,
            None if after.is_empty() => DEFAULT_PORT,
            None => return Err(invalid()),
        };
        if host.is_empty() {
            return Err(invalid());
        }
        return Ok(HostAddr { host: String::from(host), port });
    }
    let (host, port) = match entry.rsplit_once(':') {
        Some((h, p)) => (h, parse_port(entry, p)?),
        None => (entry, DEFAULT_PORT),
    };
    if host.is_empty() || host.contains(':') || host.contains(char::is_whitespace) {
        return Err(invalid());
    }
    Ok(HostAddr { host: String::from(host), port })
}

#[cfg(test)]
mod tests {
    use super::*;
    use alloc::string::ToString;

    #[test]
    fn parses_hosts_ports_and_chroot() {
        let cs = ConnectString::parse("a:1,b, [::1]:3/app/x").unwrap();
        let hosts: Vec<String> = cs.hosts().iter().map(|h| h.to_string()).collect();
        assert_eq!(hosts, ["a:1", "b:2181", "[::1]:3"]);
        assert_eq!(cs.chroot().unwrap().as_str(), "/app/x");
        assert_eq!(ConnectString::parse("h:1/").unwrap().chroot(), None);
    }

    #[test]
    fn rejects_bad_strings() {
        assert_eq!(ConnectString::parse(""), Err(ConnectStringError::NoHosts));
        assert_eq!(ConnectString::parse("/x"), Err(ConnectStringError::NoHosts));
        assert!(matches!(ConnectString::parse("h:0"), Err(ConnectStringError::InvalidPort(_))));
        assert!(matches!(ConnectString::parse("h:x"), Err(ConnectStringError::InvalidPort(_))));
        assert!(matches!(ConnectString::parse("h:1/a/"), Err(ConnectStringError::InvalidChroot(_))));
        assert!(matches!(ConnectString::parse("[::1"), Err(ConnectStringError::InvalidHost(_))));
        assert!(matches!(ConnectString::parse(":5"), Err(ConnectStringError::InvalidHost(_))));
    }
}
