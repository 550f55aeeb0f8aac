//! The local watch table: which watchers wait on which (path, kind).
//!
//! The server keeps one watch per (connection, path) and sends one
//! notification per event; this table fans it out to every local watcher and
//! forgets one-shot registrations as they fire.

use alloc::collections::BTreeMap;
use alloc::string::String;
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

#[derive(Debug, Default)]
struct Entry {
    data: Vec<WatcherId>,
    exist: Vec<WatcherId>,
    child: Vec<WatcherId>,
}

impl Entry {
    fn list(&mut self, kind: WatchKind) -> &mut Vec<WatcherId> {
        match kind {
            WatchKind::Data => &mut self.data,
            WatchKind::Exist => &mut self.exist,
            WatchKind::Child => &mut self.child,
        }
    }

    fn is_empty(&self) -> bool {
        self.data.is_empty() && self.exist.is_empty() && self.child.is_empty()
    }

    fn has(&self, watcher: WatcherId) -> bool {
        self.data.contains(&watcher) || self.exist.contains(&watcher) || self.child.contains(&watcher)
    }
}

/// Watches keyed by client path (chroot already stripped).
///
/// `by_watcher` indexes the same registrations by watcher (the paths each
/// one is registered on), so forgetting a watcher costs its own few paths,
/// not a scan of every path: with thousands of waiting recipes, one per
/// lock handle, each dropped handle would otherwise scan the whole table.
#[derive(Debug, Default)]
pub(crate) struct WatchTable {
    paths: BTreeMap<String, Entry>,
    by_watcher: BTreeMap<WatcherId, Vec<String>>,
}

/// The armed paths per kind, for a setWatches after a reconnect.
#[derive(Debug, Default, PartialEq, Eq)]
pub(crate) struct ArmedPaths {
    pub(crate) data: Vec<String>,
    pub(crate) exist: Vec<String>,
    pub(crate) child: Vec<String>,
}

impl WatchTable {
    /// Registers `watcher`; registering the same one twice delivers once.
    pub(crate) fn add(&mut self, path: &str, kind: WatchKind, watcher: WatcherId) {
        let entry = self.paths.entry(String::from(path)).or_default();
        let known = entry.has(watcher);
        let list = entry.list(kind);
        if !list.contains(&watcher) {
            list.push(watcher);
        }
        if !known {
            self.by_watcher.entry(watcher).or_default().push(String::from(path));
        }
    }

    /// Drops `path` from `watcher`'s index once it has no registration there.
    fn unindex(&mut self, path: &str, watcher: WatcherId) {
        if self.paths.get(path).is_some_and(|e| e.has(watcher)) {
            return;
        }
        if let Some(list) = self.by_watcher.get_mut(&watcher) {
            if let Some(at) = list.iter().position(|p| p == path) {
                list.swap_remove(at);
            }
            if list.is_empty() {
                self.by_watcher.remove(&watcher);
            }
        }
    }

    /// Forgets one registration locally. The server-side watch stays armed
    /// until it fires; its notification then finds no watcher and is dropped.
    pub(crate) fn remove(&mut self, path: &str, kind: WatchKind, watcher: WatcherId) -> bool {
        let Some(entry) = self.paths.get_mut(path) else {
            return false;
        };
        let list = entry.list(kind);
        let before = list.len();
        list.retain(|w| *w != watcher);
        let removed = list.len() != before;
        if entry.is_empty() {
            self.paths.remove(path);
        }
        self.unindex(path, watcher);
        removed
    }

    /// Forgets every registration of `watcher`.
    pub(crate) fn remove_watcher(&mut self, watcher: WatcherId) {
        for path in self.by_watcher.remove(&watcher).unwrap_or_default() {
            if let Some(entry) = self.paths.get_mut(&path) {
                for kind in [WatchKind::Data, WatchKind::Exist, WatchKind::Child] {
                    entry.list(kind).retain(|w| *w != watcher);
                }
                if entry.is_empty() {
                    self.paths.remove(&path);
                }
            }
        }
    }

    /// Removes and returns the watchers an event of `event_type` on `path`
    /// triggers (the rules of ZooKeeper's client watch manager).
    pub(crate) fn fire(&mut self, path: &str, event_type: EventType) -> Vec<WatcherId> {
        let Some(entry) = self.paths.get_mut(path) else {
            return Vec::new();
        };
        let kinds: &[WatchKind] = match event_type {
            EventType::NODE_CREATED | EventType::NODE_DATA_CHANGED => &[WatchKind::Data, WatchKind::Exist],
            EventType::NODE_CHILDREN_CHANGED => &[WatchKind::Child],
            EventType::NODE_DELETED => &[WatchKind::Data, WatchKind::Exist, WatchKind::Child],
            _ => &[],
        };
        let mut fired = Vec::new();
        for kind in kinds {
            for w in core::mem::take(entry.list(*kind)) {
                if !fired.contains(&w) {
                    fired.push(w);
                }
            }
        }
        if entry.is_empty() {
            self.paths.remove(path);
        }
        for w in &fired {
            self.unindex(path, *w);
        }
        fired
    }

    /// Every armed path by kind, sorted (so setWatches is deterministic).
    pub(crate) fn armed(&self) -> ArmedPaths {
        let mut out = ArmedPaths::default();
        for (path, entry) in &self.paths {
            if !entry.data.is_empty() {
                out.data.push(path.clone());
            }
            if !entry.exist.is_empty() {
                out.exist.push(path.clone());
            }
            if !entry.child.is_empty() {
                out.child.push(path.clone());
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
        assert_eq!(t.by_watcher[&WatcherId(1)].len(), 2, "one index entry per path");
        // A partial fire keeps the path indexed; a full one drops it.
        assert_eq!(t.fire("/a", EventType::NODE_DATA_CHANGED), [WatcherId(1)]);
        assert_eq!(t.by_watcher[&WatcherId(1)].len(), 2);
        assert_eq!(t.fire("/a", EventType::NODE_DELETED), [WatcherId(1)]);
        assert_eq!(t.by_watcher[&WatcherId(1)], ["/b"]);
        assert!(t.remove("/b", WatchKind::Data, WatcherId(1)));
        assert!(!t.by_watcher.contains_key(&WatcherId(1)));
        t.add("/c", WatchKind::Exist, WatcherId(1));
        t.remove_watcher(WatcherId(1));
        t.remove_watcher(WatcherId(2));
        assert!(t.is_empty() && t.by_watcher.is_empty());
    }
}
