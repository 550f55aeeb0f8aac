//! Server-side watches, per connection, as ZooKeeper 3.8's two
//! `WatchManager`s (data and child) keep them.
//!
//! * A connection has at most one registration per (table, path), with one
//!   mode; registering again overwrites the mode (3.8's `WatcherModeManager`;
//!   3.9 lets modes coexist). Standard watches are one-shot, persistent ones
//!   stay, persistent-recursive ones sit in the data table only and also fire
//!   for descendants (never for NodeChildrenChanged).
//! * One trigger gives each connection at most one notification. On delete,
//!   connections already told NodeDeleted by the data table are not told
//!   again by the child table.

use std::collections::{BTreeMap, BTreeSet};

use zoolock_wire::{EventType, WatcherType};

use super::ConnId;
use super::path;
use super::tree::Change;

/// How a registration behaves when it fires.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub(crate) enum Mode {
    /// One-shot.
    Standard,
    /// Stays until removed or the connection closes.
    Persistent,
    /// Stays, and covers every descendant.
    Recursive,
}

#[derive(Debug, Clone, Default)]
struct Table {
    by_path: BTreeMap<String, BTreeMap<ConnId, Mode>>,
}

impl Table {
    fn add(&mut self, p: &str, conn: ConnId, mode: Mode) {
        self.by_path.entry(p.to_string()).or_default().insert(conn, mode);
    }

    fn contains(&self, p: &str, conn: ConnId) -> bool {
        self.by_path.get(p).is_some_and(|m| m.contains_key(&conn))
    }

    fn remove(&mut self, p: &str, conn: ConnId) -> bool {
        let Some(m) = self.by_path.get_mut(p) else { return false };
        let removed = m.remove(&conn).is_some();
        if m.is_empty() {
            self.by_path.remove(p);
        }
        removed
    }

    fn remove_conn(&mut self, conn: ConnId) {
        self.by_path.retain(|_, m| {
            m.remove(&conn);
            !m.is_empty()
        });
    }

    /// `WatchManager.triggerWatch`: who hears about `event` on `p`.
    fn trigger(&mut self, p: &str, event: EventType, suppress: &BTreeSet<ConnId>) -> BTreeSet<ConnId> {
        let mut hit = BTreeSet::new();
        if let Some(m) = self.by_path.get_mut(p) {
            m.retain(|conn, mode| {
                match mode {
                    Mode::Recursive if event == EventType::NODE_CHILDREN_CHANGED => {}
                    _ => {
                        hit.insert(*conn);
                    }
                }
                *mode != Mode::Standard
            });
            if m.is_empty() {
                self.by_path.remove(p);
            }
        }
        if event != EventType::NODE_CHILDREN_CHANGED {
            for ancestor in path::ancestors(p) {
                if let Some(m) = self.by_path.get(ancestor) {
                    hit.extend(m.iter().filter(|(_, mode)| **mode == Mode::Recursive).map(|(c, _)| *c));
                }
            }
        }
        hit.retain(|c| !suppress.contains(c));
        hit
    }

    fn len(&self) -> usize {
        self.by_path.values().map(BTreeMap::len).sum()
    }
}

/// One notification to send.
#[derive(Debug, Clone, PartialEq, Eq)]
pub(crate) struct Fired {
    pub(crate) conn: ConnId,
    pub(crate) event: EventType,
    pub(crate) path: String,
}

/// Both watch tables.
#[derive(Debug, Clone, Default)]
pub(crate) struct Watches {
    data: Table,
    child: Table,
}

impl Watches {
    /// getData / exists with watch (and setWatches re-arming data or exist watches).
    pub(crate) fn add_data(&mut self, p: &str, conn: ConnId) {
        self.data.add(p, conn, Mode::Standard);
    }

    /// getChildren / getChildren2 with watch.
    pub(crate) fn add_child(&mut self, p: &str, conn: ConnId) {
        self.child.add(p, conn, Mode::Standard);
    }

    /// addWatch: persistent goes in both tables, recursive in the data table.
    pub(crate) fn add_persistent(&mut self, p: &str, conn: ConnId, recursive: bool) {
        if recursive {
            self.data.add(p, conn, Mode::Recursive);
        } else {
            self.data.add(p, conn, Mode::Persistent);
            self.child.add(p, conn, Mode::Persistent);
        }
    }

    /// checkWatches for a valid type (1 children, 2 data, 3 any).
    pub(crate) fn contains(&self, p: &str, conn: ConnId, kind: WatcherType) -> bool {
        match kind {
            WatcherType::CHILDREN => self.child.contains(p, conn),
            WatcherType::DATA => self.data.contains(p, conn),
            _ => self.child.contains(p, conn) || self.data.contains(p, conn),
        }
    }

    /// removeWatches for a valid type: drops the registration whatever its mode.
    pub(crate) fn remove(&mut self, p: &str, conn: ConnId, kind: WatcherType) -> bool {
        match kind {
            WatcherType::CHILDREN => self.child.remove(p, conn),
            WatcherType::DATA => self.data.remove(p, conn),
            _ => {
                let c = self.child.remove(p, conn);
                let d = self.data.remove(p, conn);
                c || d
            }
        }
    }

    /// The server forgets every watch of a closed connection.
    pub(crate) fn remove_conn(&mut self, conn: ConnId) {
        self.data.remove_conn(conn);
        self.child.remove_conn(conn);
    }

    /// Number of registrations (data + child).
    pub(crate) fn len(&self) -> usize {
        self.data.len() + self.child.len()
    }

    /// The notifications one applied change produces, in the order
    /// `DataTree` triggers them.
    pub(crate) fn fire(&mut self, change: &Change) -> Vec<Fired> {
        let none = BTreeSet::new();
        let mut out = Vec::new();
        let mut push = |conns: &BTreeSet<ConnId>, event: EventType, p: &str| {
            out.extend(conns.iter().map(|c| Fired { conn: *c, event, path: p.to_string() }));
        };
        match change {
            Change::Created(p) => {
                let hit = self.data.trigger(p, EventType::NODE_CREATED, &none);
                push(&hit, EventType::NODE_CREATED, p);
                let parent = parent_event_path(p);
                let hit = self.child.trigger(parent, EventType::NODE_CHILDREN_CHANGED, &none);
                push(&hit, EventType::NODE_CHILDREN_CHANGED, parent);
            }
            Change::Deleted(p) => {
                let data = self.data.trigger(p, EventType::NODE_DELETED, &none);
                push(&data, EventType::NODE_DELETED, p);
                let child = self.child.trigger(p, EventType::NODE_DELETED, &data);
                push(&child, EventType::NODE_DELETED, p);
                let parent = parent_event_path(p);
                let hit = self.child.trigger(parent, EventType::NODE_CHILDREN_CHANGED, &none);
                push(&hit, EventType::NODE_CHILDREN_CHANGED, parent);
            }
            Change::DataChanged(p) => {
                let hit = self.data.trigger(p, EventType::NODE_DATA_CHANGED, &none);
                push(&hit, EventType::NODE_DATA_CHANGED, p);
            }
        }
        out
    }
}

fn parent_event_path(p: &str) -> &str {
    path::event_path(path::split(p).map_or("", |(parent, _)| parent))
}
