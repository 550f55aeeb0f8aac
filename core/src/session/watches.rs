//! The local watch table: which watchers wait on which (path, kind).
//!
//! The server keeps one watch per (connection, path) and sends one
//! notification per event; this table fans it out to every local watcher and
//! forgets one-shot registrations as they fire.

use alloc::collections::{BTreeMap, BTreeSet};
use alloc::string::String;
use alloc::sync::Arc;
use alloc::vec::Vec;

use zoolock_wire::EventType;

/// Identifies who receives a watch notification (the client assigns these).
#[derive(Debug, Clone, Copy, PartialEq, Eq, PartialOrd, Ord, Hash)]
pub struct WatcherId(pub u64);

/// The kind of a registered one-shot watch.
#[derive(Debug, Clone, Copy, PartialEq, Eq, PartialOrd, Ord, Hash)]
#[non_exhaustive]
pub enum WatchKind {
    /// getData or exists on an existing node: fires on change or delete.
    Data,
    /// exists on a missing node: fires on create.
    Exist,
    /// getChildren: fires on child create or delete, or on delete of the node.
    Child,
}

/// Watches keyed by client path (chroot already stripped).
///
/// Each path is stored once, shared by both indexes. `paths` holds every
/// registration of a path, `(kind, watcher)`, in registration order (one
/// vector, usually of one: a held lock's one watch). `by_watcher` indexes the
/// same registrations by watcher (each path it has one on, once), so
/// forgetting a watcher costs its own few paths, not a scan of every path:
/// with thousands of waiting recipes, one per lock handle, each dropped handle
/// would otherwise scan the whole table.
#[derive(Debug, Default)]
pub(crate) struct WatchTable {
    paths: BTreeMap<Arc<str>, Vec<(WatchKind, WatcherId)>>,
    by_watcher: BTreeSet<(WatcherId, Arc<str>)>,
}

/// The armed paths per kind, for a setWatches after a reconnect.
#[derive(Debug, Default, PartialEq, Eq)]
pub(crate) struct ArmedPaths {
    pub(crate) data: Vec<String>,
    pub(crate) exist: Vec<String>,
    pub(crate) child: Vec<String>,
}

fn watches(regs: &[(WatchKind, WatcherId)], watcher: WatcherId) -> bool {
    regs.iter().any(|(_, w)| *w == watcher)
}

impl WatchTable {
    /// Registers `watcher`; registering the same one twice delivers once.
    pub(crate) fn add(&mut self, path: &str, kind: WatchKind, watcher: WatcherId) {
        let key = match self.paths.get_key_value(path) {
            Some((key, _)) => key.clone(),
            None => Arc::from(path),
        };
        let regs = self.paths.entry(key.clone()).or_insert_with(|| Vec::with_capacity(1));
        let known = watches(regs, watcher);
        if !regs.contains(&(kind, watcher)) {
            regs.push((kind, watcher));
        }
        if !known {
            self.by_watcher.insert((watcher, key));
        }
    }

    /// Drops `path` from `watcher`'s index once it has no registration there.
    fn unindex(&mut self, key: Arc<str>, watcher: WatcherId) {
        if self.paths.get(&*key).is_some_and(|regs| watches(regs, watcher)) {
            return;
        }
        self.by_watcher.remove(&(watcher, key));
    }

    /// Forgets one registration locally. The server-side watch stays armed
    /// until it fires; its notification then finds no watcher and is dropped.
    pub(crate) fn remove(&mut self, path: &str, kind: WatchKind, watcher: WatcherId) -> bool {
        let Some((key, regs)) = self.paths.get_key_value(path) else {
            return false;
        };
        let key = key.clone();
        let Some(at) = regs.iter().position(|r| *r == (kind, watcher)) else {
            return false;
        };
        if let Some(regs) = self.paths.get_mut(path) {
            regs.remove(at);
            if regs.is_empty() {
                self.paths.remove(path);
            }
        }
        self.unindex(key, watcher);
        true
    }

    /// Forgets every registration of `watcher`.
    pub(crate) fn remove_watcher(&mut self, watcher: WatcherId) {
        let from = (watcher, Arc::<str>::from(""));
        let keys: Vec<Arc<str>> =
            self.by_watcher.range(from..).take_while(|(w, _)| *w == watcher).map(|(_, p)| p.clone()).collect();
        for key in keys {
            if let Some(regs) = self.paths.get_mut(&*key) {
                regs.retain(|(_, w)| *w != watcher);
                if regs.is_empty() {
                    self.paths.remove(&*key);
                }
            }
            self.by_watcher.remove(&(watcher, key));
        }
    }

    /// Removes and returns the watchers an event of `event_type` on `path`
    /// triggers (the rules of ZooKeeper's client watch manager): by kind in
    /// that order, each kind's in registration order, each watcher once.
    pub(crate) fn fire(&mut self, path: &str, event_type: EventType) -> Vec<WatcherId> {
        let Some((key, regs)) = self.paths.get_key_value(path) else {
            return Vec::new();
        };
        let key = key.clone();
        let kinds: &[WatchKind] = match event_type {
            EventType::NODE_CREATED | EventType::NODE_DATA_CHANGED => &[WatchKind::Data, WatchKind::Exist],
            EventType::NODE_CHILDREN_CHANGED => &[WatchKind::Child],
            EventType::NODE_DELETED => &[WatchKind::Data, WatchKind::Exist, WatchKind::Child],
            _ => &[],
        };
        let mut fired = Vec::new();
        for kind in kinds {
            for (_, w) in regs.iter().filter(|(k, _)| k == kind) {
                if !fired.contains(w) {
                    fired.push(*w);
                }
            }
        }
        if let Some(regs) = self.paths.get_mut(path) {
            regs.retain(|(k, _)| !kinds.contains(k));
            if regs.is_empty() {
                self.paths.remove(path);
            }
        }
        for w in &fired {
            self.unindex(key.clone(), *w);
        }
        fired
    }

    /// Every armed path by kind, sorted (so setWatches is deterministic).
    pub(crate) fn armed(&self) -> ArmedPaths {
        let mut out = ArmedPaths::default();
        for (path, regs) in &self.paths {
            for (kind, list) in [
                (WatchKind::Data, &mut out.data),
                (WatchKind::Exist, &mut out.exist),
                (WatchKind::Child, &mut out.child),
            ] {
                if regs.iter().any(|(k, _)| *k == kind) {
                    list.push(String::from(&**path));
                }
            }
        }
        out
    }

    /// Drops every registration (the session expired or closed).
    pub(crate) fn clear(&mut self) {
        self.paths.clear();
        self.by_watcher.clear();
    }

    pub(crate) fn is_empty(&self) -> bool {
        self.paths.is_empty()
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    /// A table with these `(path, kind, watcher)` registrations, in order.
    fn table(registrations: &[(&str, WatchKind, u64)]) -> WatchTable {
        let mut t = WatchTable::default();
        for (path, kind, watcher) in registrations {
            t.add(path, *kind, WatcherId(*watcher));
        }
        t
    }

    /// The paths `watcher` is indexed under.
    fn indexed(t: &WatchTable, watcher: u64) -> Vec<&str> {
        t.by_watcher.iter().filter(|(w, _)| w.0 == watcher).map(|(_, p)| &**p).collect()
    }

    #[test]
    fn fan_out_and_one_shot() {
        let mut t = table(&[
            ("/a", WatchKind::Data, 1),
            ("/a", WatchKind::Data, 2),
            ("/a", WatchKind::Data, 2),
            ("/a", WatchKind::Child, 3),
        ]);
        assert_eq!(t.fire("/a", EventType::NODE_DATA_CHANGED), [WatcherId(1), WatcherId(2)]);
        assert!(t.fire("/a", EventType::NODE_DATA_CHANGED).is_empty());
        assert_eq!(t.fire("/a", EventType::NODE_DELETED), [WatcherId(3)]);
        assert!(t.is_empty());
    }

    #[test]
    fn event_kinds_match_watch_kinds() {
        let mut t = table(&[("/e", WatchKind::Exist, 1), ("/e", WatchKind::Child, 2)]);
        assert!(t.fire("/e", EventType::NODE_DATA_CHANGED).contains(&WatcherId(1)));
        t.add("/e", WatchKind::Exist, WatcherId(1));
        assert_eq!(t.fire("/e", EventType::NODE_CHILDREN_CHANGED), [WatcherId(2)]);
        assert_eq!(t.fire("/e", EventType::NODE_CREATED), [WatcherId(1)]);
        assert!(t.is_empty());
    }

    #[test]
    fn removal_and_armed_lists() {
        let mut t = table(&[("/b", WatchKind::Data, 1), ("/a", WatchKind::Child, 1), ("/c", WatchKind::Exist, 2)]);
        let armed = t.armed();
        assert_eq!(armed.data, ["/b"]);
        assert_eq!(armed.child, ["/a"]);
        assert_eq!(armed.exist, ["/c"]);
        assert!(t.remove("/b", WatchKind::Data, WatcherId(1)));
        assert!(!t.remove("/b", WatchKind::Data, WatcherId(1)));
        t.remove_watcher(WatcherId(1));
        assert_eq!(t.armed().child, Vec::<String>::new());
        assert!(t.fire("/b", EventType::NODE_DELETED).is_empty());
    }

    #[test]
    fn the_watcher_index_follows_every_change() {
        let mut t = table(&[
            ("/a", WatchKind::Data, 1),
            ("/a", WatchKind::Child, 1),
            ("/b", WatchKind::Data, 1),
            ("/b", WatchKind::Data, 2),
        ]);
        assert_eq!(indexed(&t, 1), ["/a", "/b"], "one index entry per path");
        // A partial fire keeps the path indexed; a full one drops it.
        assert_eq!(t.fire("/a", EventType::NODE_DATA_CHANGED), [WatcherId(1)]);
        assert_eq!(indexed(&t, 1), ["/a", "/b"]);
        assert_eq!(t.fire("/a", EventType::NODE_DELETED), [WatcherId(1)]);
        assert_eq!(indexed(&t, 1), ["/b"]);
        assert!(t.remove("/b", WatchKind::Data, WatcherId(1)));
        assert!(indexed(&t, 1).is_empty());
        t.add("/c", WatchKind::Exist, WatcherId(1));
        t.remove_watcher(WatcherId(1));
        t.remove_watcher(WatcherId(2));
        assert!(t.is_empty() && t.by_watcher.is_empty());
    }
}
