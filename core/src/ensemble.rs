//! The ensemble's published membership: the data of `/zookeeper/config`
//! (ZooKeeper 3.5+), parsed once into typed members.
//!
//! The node holds one `key=value` line per server and a version:
//!
//! ```text
//! server.1=10.0.0.1:2888:3888:participant;10.0.0.1:2181
//! server.4=10.0.0.4:2888:3888:observer;0.0.0.0:2181
//! version=100000000
//! ```
//!
//! The client address is the part after `;`: `[addr:]port`. A wildcard
//! address (`0.0.0.0`, `::`), or a port alone, names no host a client can
//! dial, so the host of the server's own address (before the first `:`) is
//! used instead: Curator turned such entries into `0.0.0.0:2181` and its
//! clients could no longer connect (CURATOR-384, fixed for wildcards by
//! CURATOR-664). Participants and observers both serve clients and are both
//! members. A server line without a client address serves no clients and is
//! left out. Keys other than `server.N` and `version` are ignored (later
//! servers may add some).
//!
//! A malformed node is the server's fault ([`EnsembleConfigError`]); the
//! session keeps its old host list when it sees one.

use alloc::string::String;
use alloc::vec::Vec;

use crate::connect_string::HostAddr;

/// Where ZooKeeper publishes its membership. A server path: a client's
/// chroot never applies to it (Curator prefixed its namespace onto it,
/// CURATOR-667).
pub const CONFIG_PATH: &str = "/zookeeper/config";

/// What a member does in the ensemble.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Hash)]
pub enum MemberRole {
    /// Votes (the default when the line names no role).
    Participant,
    /// Follows without voting; serves clients as well.
    Observer,
}

/// One server of the ensemble that serves clients.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct Member {
    /// The `N` of `server.N`.
    pub id: u64,
    /// Participant or observer.
    pub role: MemberRole,
    /// The address clients dial.
    pub client: HostAddr,
}

/// Why the data of `/zookeeper/config` was not understood.
#[derive(Debug, Clone, PartialEq, Eq, thiserror::Error)]
#[non_exhaustive]
pub enum EnsembleConfigError {
    /// The data is not UTF-8.
    #[error("ensemble config is not UTF-8")]
    NotUtf8,
    /// A line is not `key=value`.
    #[error("ensemble config line {0:?} is not key=value")]
    NotKeyValue(String),
    /// A `server.N` key whose `N` is not a number.
    #[error("ensemble config key {0:?} has no server number")]
    BadServerId(String),
    /// The same `server.N` twice.
    #[error("ensemble config names server {0} twice")]
    DuplicateServer(u64),
    /// A server's address part is malformed (host, ports or role).
    #[error("ensemble config server line {0:?} is malformed")]
    BadServer(String),
    /// A client address is malformed (host or port).
    #[error("ensemble config client address {0:?} is malformed")]
    BadClientAddress(String),
    /// `version=` is not a hexadecimal number.
    #[error("ensemble config version {0:?} is not hexadecimal")]
    BadVersion(String),
    /// No server with a client address: nothing a client could dial.
    #[error("ensemble config names no server with a client address")]
    NoServers,
}

/// The parsed membership: the members that serve clients, in `server.N`
/// order, and the config's version (hexadecimal in the node) if given.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct EnsembleConfig {
    members: Vec<Member>,
    version: Option<u64>,
}

impl EnsembleConfig {
    /// Parses the data of `/zookeeper/config`.
    ///
    /// ```
    /// use zoolock_core::EnsembleConfig;
    /// let data = b"server.1=127.0.0.1:2888:3888:participant;127.0.0.1:2181\n\
    ///              server.2=10.0.0.2:2888:3888:observer;0.0.0.0:2182\nversion=100000000";
    /// let config = EnsembleConfig::parse(data).unwrap();
    /// let hosts: Vec<String> = config.hosts().iter().map(|h| h.to_string()).collect();
    /// assert_eq!(hosts, ["127.0.0.1:2181", "10.0.0.2:2182"]);
    /// assert_eq!(config.version(), Some(0x1_0000_0000));
    /// ```
    pub fn parse(data: &[u8]) -> Result<EnsembleConfig, EnsembleConfigError> {
        let text = core::str::from_utf8(data).map_err(|_| EnsembleConfigError::NotUtf8)?;
        let mut members: Vec<Member> = Vec::new();
        let mut version = None;
        for line in text.lines().map(str::trim).filter(|l| !l.is_empty()) {
            let (key, value) = line.split_once('=').ok_or_else(|| EnsembleConfigError::NotKeyValue(line.into()))?;
            let (key, value) = (key.trim(), value.trim());
            if key == "version" {
                let v = u64::from_str_radix(value, 16).map_err(|_| EnsembleConfigError::BadVersion(value.into()))?;
                version = Some(v);
            } else if let Some(id) = key.strip_prefix("server.") {
                let id: u64 = id.parse().map_err(|_| EnsembleConfigError::BadServerId(key.into()))?;
                if members.iter().any(|m| m.id == id) {
                    return Err(EnsembleConfigError::DuplicateServer(id));
                }
                if let Some(member) = parse_server(id, value)? {
                    members.push(member);
                }
            }
        }
        if members.is_empty() {
            return Err(EnsembleConfigError::NoServers);
        }
        members.sort_by_key(|m| m.id);
        Ok(EnsembleConfig { members, version })
    }

    /// The members that serve clients, by server id.
    pub fn members(&self) -> &[Member] {
        &self.members
    }

    /// The config's version (the zxid of the reconfig that made it).
    pub fn version(&self) -> Option<u64> {
        self.version
    }

    /// The addresses to dial, by server id, without repeats.
    pub fn hosts(&self) -> Vec<HostAddr> {
        let mut hosts: Vec<HostAddr> = Vec::with_capacity(self.members.len());
        for m in &self.members {
            if !hosts.contains(&m.client) {
                hosts.push(m.client.clone());
            }
        }
        hosts
    }
}

/// `host:quorum:election[:role][|more addresses][;client]`; `None` for a
/// server without a client address.
fn parse_server(id: u64, value: &str) -> Result<Option<Member>, EnsembleConfigError> {
    let bad = || EnsembleConfigError::BadServer(value.into());
    let (server, client) = match value.split_once(';') {
        Some((s, c)) => (s.trim(), Some(c.trim())),
        None => (value, None),
    };
    // 3.6+ may list several addresses of one server, `|`-separated; the
    // role is on the last one.
    let last = server.rsplit('|').next().ok_or_else(bad)?;
    let first = server.split('|').next().ok_or_else(bad)?;
    let (first_host, _) = split_host(first).ok_or_else(bad)?;
    let (_, rest) = split_host(last).ok_or_else(bad)?;
    let fields: Vec<&str> = rest.split(':').collect();
    let role = match fields.as_slice() {
        [q, e] | [q, e, _] if !is_port(q) || !is_port(e) => return Err(bad()),
        [_, _] => MemberRole::Participant,
        [_, _, "participant"] => MemberRole::Participant,
        [_, _, "observer"] => MemberRole::Observer,
        _ => return Err(bad()),
    };
    let Some(client) = client.filter(|c| !c.is_empty()) else {
        return Ok(None);
    };
    let client = parse_client(client, first_host)?;
    Ok(Some(Member { id, role, client }))
}

/// `[addr:]port`, with a wildcard or missing address replaced by `server_host`.
fn parse_client(client: &str, server_host: &str) -> Result<HostAddr, EnsembleConfigError> {
    let bad = || EnsembleConfigError::BadClientAddress(client.into());
    let (host, port) = if is_port(client) {
        ("", client)
    } else {
        let (host, rest) = split_host(client).ok_or_else(bad)?;
        (host, rest)
    };
    let port = match port.parse::<u16>() {
        Ok(p) if p > 0 => p,
        _ => return Err(bad()),
    };
    let wildcard = matches!(host, "" | "0.0.0.0" | "::" | "0:0:0:0:0:0:0:0");
    let host = if wildcard { server_host } else { host };
    if host.is_empty() || host.contains(char::is_whitespace) {
        return Err(bad());
    }
    Ok(HostAddr { host: String::from(host), port })
}

/// Splits `host:rest` or `[v6]:rest` into the host (no brackets) and what
/// follows its `:`.
fn split_host(s: &str) -> Option<(&str, &str)> {
    if let Some(inner) = s.strip_prefix('[') {
        let (host, after) = inner.split_once(']')?;
        return Some((host, after.strip_prefix(':')?));
    }
    let (host, rest) = s.split_once(':')?;
    (!host.is_empty()).then_some((host, rest))
}

fn is_port(s: &str) -> bool {
    !s.is_empty() && s.bytes().all(|b| b.is_ascii_digit())
}

#[cfg(test)]
mod tests {
    use super::*;
    use alloc::string::ToString;

    fn hosts(data: &str) -> Vec<String> {
        EnsembleConfig::parse(data.as_bytes()).unwrap().hosts().iter().map(ToString::to_string).collect()
    }

    #[test]
    fn reads_participants_and_observers_in_id_order() {
        let data = "server.3=10.0.0.3:2888:3888:observer;10.0.0.3:2181\n\
                    server.1=10.0.0.1:2888:3888:participant;10.0.0.1:2181\n\
                    server.2=10.0.0.2:2888:3888;10.0.0.2:2182\n\
                    version=2000000a\n";
        let config = EnsembleConfig::parse(data.as_bytes()).unwrap();
        assert_eq!(config.version(), Some(0x2000_000a));
        let roles: Vec<_> = config.members().iter().map(|m| (m.id, m.role)).collect();
        assert_eq!(roles, [(1, MemberRole::Participant), (2, MemberRole::Participant), (3, MemberRole::Observer)]);
        assert_eq!(hosts(data), ["10.0.0.1:2181", "10.0.0.2:2182", "10.0.0.3:2181"]);
    }

    #[test]
    fn wildcard_or_missing_client_host_takes_the_server_host() {
        // CURATOR-384/664: `0.0.0.0:port` is not an address to dial.
        assert_eq!(hosts("server.1=zk1:2888:3888:participant;0.0.0.0:2181"), ["zk1:2181"]);
        assert_eq!(hosts("server.1=zk1:2888:3888:participant;[::]:2181"), ["zk1:2181"]);
        assert_eq!(hosts("server.1=zk1:2888:3888:participant;2181"), ["zk1:2181"]);
        assert_eq!(hosts("server.1=[fd00::1]:2888:3888;[::]:2181"), ["[fd00::1]:2181"]);
        assert_eq!(hosts("server.1=zk1:2888:3888;[fd00::2]:2181"), ["[fd00::2]:2181"]);
    }

    #[test]
    fn multi_address_servers_and_servers_without_clients() {
        let data = "server.1=a1:2888:3888|a2:2888:3888:participant;a1:2181\n\
                    server.2=b:2888:3888:participant\n\
                    server.3=c:2888:3888:participant;c:2181\n";
        assert_eq!(hosts(data), ["a1:2181", "c:2181"]);
        assert_eq!(
            EnsembleConfig::parse(b"server.2=b:2888:3888:participant\nversion=1"),
            Err(EnsembleConfigError::NoServers)
        );
    }

    #[test]
    fn ignores_unknown_keys_and_repeated_addresses() {
        assert_eq!(hosts("server.1=a:1:2;a:2181\nserver.2=a:3:4;a:2181\nfuture.key=x\n"), ["a:2181"]);
    }

    #[test]
    fn malformed_configs_are_typed_errors() {
        use EnsembleConfigError as E;
        let err = |s: &str| EnsembleConfig::parse(s.as_bytes()).unwrap_err();
        assert_eq!(EnsembleConfig::parse(&[0xff, 0xfe]), Err(E::NotUtf8));
        assert_eq!(EnsembleConfig::parse(b""), Err(E::NoServers));
        assert!(matches!(err("garbage"), E::NotKeyValue(_)));
        assert!(matches!(err("server.x=a:1:2;a:3"), E::BadServerId(_)));
        assert!(matches!(err("server.1=a:1:2;a:3\nserver.1=b:1:2;b:3"), E::DuplicateServer(1)));
        assert!(matches!(err("server.1=a:1;a:3"), E::BadServer(_)));
        assert!(matches!(err("server.1=a:x:2;a:3"), E::BadServer(_)));
        assert!(matches!(err("server.1=a:1:2:leader;a:3"), E::BadServer(_)));
        assert!(matches!(err("server.1=:1:2;a:3"), E::BadServer(_)));
        assert!(matches!(err("server.1=a:1:2;a:0"), E::BadClientAddress(_)));
        assert!(matches!(err("server.1=a:1:2;a:99999"), E::BadClientAddress(_)));
        assert!(matches!(err("server.1=a:1:2;a:"), E::BadClientAddress(_)));
        assert!(matches!(err("server.1=a:1:2;a:3\nversion=zz"), E::BadVersion(_)));
    }
}
