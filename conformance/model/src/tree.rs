//! The data tree: znodes with ZooKeeper's Stat bookkeeping (`DataTree` and
//! `DataNode`). Only mechanism lives here; the checks that decide whether a
//! write may happen, and in which order errors win, are in `txn.rs`.

use std::collections::{BTreeMap, BTreeSet};

use bytes::Bytes;
use zoolock_wire::{Acl, Stat};

use super::path;

/// What kind of node, by the server's hidden `ephemeralOwner` marker.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub(crate) enum Owner {
    /// A plain persistent node.
    Persistent,
    /// Owned by a session; deleted when it ends.
    Ephemeral(i64),
    /// Deleted by the reaper once empty after having had a child.
    Container,
    /// Deleted by the reaper once empty and unmodified for this many ms.
    Ttl(i64),
}

/// One znode.
#[derive(Debug, Clone)]
pub(crate) struct Node {
    pub(crate) data: Option<Bytes>,
    pub(crate) acl: Vec<Acl>,
    pub(crate) czxid: i64,
    pub(crate) mzxid: i64,
    pub(crate) pzxid: i64,
    pub(crate) ctime: i64,
    pub(crate) mtime: i64,
    pub(crate) version: i32,
    /// The internal child-create counter (not what clients see).
    pub(crate) cversion: i32,
    pub(crate) aversion: i32,
    pub(crate) owner: Owner,
    pub(crate) children: BTreeSet<String>,
}

impl Node {
    fn new(data: Option<Bytes>, acl: Vec<Acl>, owner: Owner, zxid: i64, time: i64) -> Node {
        Node {
            data,
            acl,
            czxid: zxid,
            mzxid: zxid,
            pzxid: zxid,
            ctime: time,
            mtime: time,
            version: 0,
            cversion: 0,
            aversion: 0,
            owner,
            children: BTreeSet::new(),
        }
    }

    /// A system node as `DataTree`'s constructor makes it: all-zero Stat.
    fn system(acl: Vec<Acl>) -> Node {
        Node::new(Some(Bytes::new()), acl, Owner::Persistent, 0, 0)
    }

    /// The Stat as `DataNode.copyStat` fills it: cversion shown as
    /// `2 × creates − numChildren`, the owner only for real ephemerals.
    pub(crate) fn stat(&self) -> Stat {
        let num_children = i32::try_from(self.children.len()).unwrap_or(i32::MAX);
        Stat {
            czxid: self.czxid,
            mzxid: self.mzxid,
            ctime: self.ctime,
            mtime: self.mtime,
            version: self.version,
            cversion: self.cversion.wrapping_mul(2).wrapping_sub(num_children),
            aversion: self.aversion,
            ephemeral_owner: match self.owner {
                Owner::Ephemeral(session) => session,
                _ => 0,
            },
            data_length: self.data.as_ref().map_or(0, |d| i32::try_from(d.len()).unwrap_or(i32::MAX)),
            num_children,
            pzxid: self.pzxid,
        }
    }
}

/// The zxid and wall time (ms) of a transaction.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub(crate) struct Stamp {
    pub(crate) zxid: i64,
    pub(crate) time: i64,
}

/// A change that fires watches, in the order the server applies them.
#[derive(Debug, Clone, PartialEq, Eq)]
pub(crate) enum Change {
    /// A node was created (NodeCreated on it, NodeChildrenChanged on its parent).
    Created(String),
    /// A node was deleted (NodeDeleted on it, NodeChildrenChanged on its
    /// parent), with the ACL it had (its watchers need READ on it).
    Deleted(String, Vec<Acl>),
    /// A node's data was set (NodeDataChanged).
    DataChanged(String),
}

/// Every node by full path, plus the indexes the server keeps.
#[derive(Debug, Clone)]
pub(crate) struct DataTree {
    nodes: BTreeMap<String, Node>,
    ephemerals: BTreeMap<i64, BTreeSet<String>>,
    containers: BTreeSet<String>,
    ttls: BTreeSet<String>,
}

impl DataTree {
    /// A fresh tree: `/`, `/zookeeper`, `/zookeeper/quota` and
    /// `/zookeeper/config` (read-only, aversion -1), all with zero Stats. The
    /// system children are added without bumping any child counter, so a
    /// fresh root shows cversion -1.
    pub(crate) fn new() -> DataTree {
        let mut nodes = BTreeMap::new();
        let mut root = Node::system(Acl::open_unsafe());
        root.children.insert("zookeeper".into());
        let mut zk = Node::system(Acl::open_unsafe());
        zk.children.insert("quota".into());
        zk.children.insert("config".into());
        let mut config = Node::system(Acl::read_unsafe());
        config.aversion = -1;
        nodes.insert("/".into(), root);
        nodes.insert("/zookeeper".into(), zk);
        nodes.insert("/zookeeper/quota".into(), Node::system(Acl::open_unsafe()));
        nodes.insert("/zookeeper/config".into(), config);
        DataTree { nodes, ephemerals: BTreeMap::new(), containers: BTreeSet::new(), ttls: BTreeSet::new() }
    }

    /// The node at `path` (`""` is the root's alias).
    pub(crate) fn get(&self, p: &str) -> Option<&Node> {
        self.nodes.get(path::key(p))
    }

    /// Every path, sorted.
    pub(crate) fn paths(&self) -> impl Iterator<Item = &str> {
        self.nodes.keys().map(String::as_str)
    }

    /// Number of nodes strictly below `path` (`getAllChildrenNumber`).
    pub(crate) fn descendants(&self, p: &str) -> usize {
        let p = path::key(p);
        if p == "/" {
            return self.nodes.len() - 1;
        }
        let prefix = format!("{p}/");
        self.nodes.range(prefix.clone()..).take_while(|(k, _)| k.starts_with(&prefix)).count()
    }

    /// A session's ephemeral nodes, sorted.
    pub(crate) fn ephemerals(&self, session: i64) -> Vec<String> {
        self.ephemerals.get(&session).map(|s| s.iter().cloned().collect()).unwrap_or_default()
    }

    /// The index listing the nodes of `owner`'s kind (a session's
    /// ephemerals, the containers, the TTL nodes); persistent nodes have none.
    fn index_of(&mut self, owner: Owner) -> Option<&mut BTreeSet<String>> {
        match owner {
            Owner::Ephemeral(session) => Some(self.ephemerals.entry(session).or_default()),
            Owner::Container => Some(&mut self.containers),
            Owner::Ttl(_) => Some(&mut self.ttls),
            Owner::Persistent => None,
        }
    }

    /// Adds a node. The caller has checked that the parent exists and the
    /// path is free. Bumps the parent's child counter and pzxid.
    pub(crate) fn create(
        &mut self,
        p: &str,
        data: Option<Bytes>,
        acl: Vec<Acl>,
        owner: Owner,
        stamp: Stamp,
        changes: &mut Vec<Change>,
    ) -> Stat {
        let Stamp { zxid, time } = stamp;
        let Some((parent, name)) = path::split(p) else { return Stat::default() };
        if let Some(parent) = self.nodes.get_mut(path::key(parent)) {
            parent.cversion = parent.cversion.wrapping_add(1);
            parent.pzxid = zxid;
            parent.children.insert(name.to_string());
        }
        if let Some(index) = self.index_of(owner) {
            index.insert(p.to_string());
        }
        let node = Node::new(data, acl, owner, zxid, time);
        let stat = node.stat();
        self.nodes.insert(p.to_string(), node);
        changes.push(Change::Created(p.to_string()));
        stat
    }

    /// Removes a node (the caller has checked it exists and has no
    /// children). The parent's pzxid moves, its child counter does not.
    pub(crate) fn delete(&mut self, p: &str, zxid: i64, changes: &mut Vec<Change>) {
        let Some(node) = self.nodes.remove(p) else { return };
        if let Some((parent, name)) = path::split(p) {
            if let Some(parent) = self.nodes.get_mut(path::key(parent)) {
                parent.children.remove(name);
                if zxid > parent.pzxid {
                    parent.pzxid = zxid;
                }
            }
        }
        if let Some(index) = self.index_of(node.owner) {
            index.remove(p);
        }
        // A session's set goes with its last ephemeral.
        if let Owner::Ephemeral(session) = node.owner {
            if self.ephemerals.get(&session).is_some_and(BTreeSet::is_empty) {
                self.ephemerals.remove(&session);
            }
        }
        changes.push(Change::Deleted(p.to_string(), node.acl.clone()));
    }

    /// Replaces a node's data with the already checked new version.
    pub(crate) fn set_data(
        &mut self,
        p: &str,
        data: Option<Bytes>,
        version: i32,
        stamp: Stamp,
        changes: &mut Vec<Change>,
    ) -> Stat {
        let Stamp { zxid, time } = stamp;
        let Some(node) = self.nodes.get_mut(path::key(p)) else { return Stat::default() };
        node.data = data;
        node.version = version;
        node.mzxid = zxid;
        node.mtime = time;
        changes.push(Change::DataChanged(p.to_string()));
        node.stat()
    }

    /// Replaces a node's ACL with the already checked new aversion. Fires
    /// no watch.
    pub(crate) fn set_acl(&mut self, p: &str, acl: Vec<Acl>, aversion: i32) -> Stat {
        let Some(node) = self.nodes.get_mut(path::key(p)) else { return Stat::default() };
        node.acl = acl;
        node.aversion = aversion;
        node.stat()
    }

    /// What the container manager would delete at wall time `now_ms`:
    /// empty containers that have had a child, and empty TTL nodes unmodified
    /// for longer than their TTL.
    pub(crate) fn reap_candidates(&self, now_ms: i64) -> Vec<String> {
        let containers = self
            .containers
            .iter()
            .filter(|p| self.nodes.get(p.as_str()).is_some_and(|n| n.children.is_empty() && n.cversion > 0));
        let ttls = self.ttls.iter().filter(|p| {
            self.nodes.get(p.as_str()).is_some_and(|n| match n.owner {
                Owner::Ttl(ttl) => n.children.is_empty() && now_ms.saturating_sub(n.mtime) > ttl,
                _ => false,
            })
        });
        containers.chain(ttls).cloned().collect()
    }

    /// The earliest wall time (ms) at which an empty TTL node becomes a
    /// candidate, if any TTL node is empty.
    pub(crate) fn next_ttl_expiry(&self) -> Option<i64> {
        self.ttls
            .iter()
            .filter_map(|p| self.nodes.get(p.as_str()))
            .filter(|n| n.children.is_empty())
            .filter_map(|n| match n.owner {
                Owner::Ttl(ttl) => Some(n.mtime.saturating_add(ttl).saturating_add(1)),
                _ => None,
            })
            .min()
    }
}
