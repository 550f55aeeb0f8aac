//! Server-side watches, per connection, as ZooKeeper 3.8's two
//! `WatchManager`s (data and child) keep them.
//!
//! * A connection has at most one registration per (table, path), with one
//!   mode; registering again overwrites the mode (3.8's `WatcherModeManager`;
//!   3.9 lets modes coexist). Standard watches are one-shot, persistent ones
//!   stay, persistent-recursive ones also fire for descendants (never for
//!   NodeChildrenChanged). addWatch registers in both tables, whatever the
//!   mode (3.8.0; checked against the real server by the differential test).
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
    /// Registrations per connection.
    per_conn: BTreeMap<ConnId, usize>,
}

impl Table {
    fn add(&mut self, p: &str, conn: ConnId, mode: Mode) {
        if self.by_path.entry(p.to_string()).or_default().insert(conn, mode).is_none() {
            *self.per_conn.entry(conn).or_default() += 1;
        }
    }

    /// One registration of `conn` is gone.
    fn forget_one(per_conn: &mut BTreeMap<ConnId, usize>, conn: ConnId) {
        if let Some(n) = per_conn.get_mut(&conn) {
            *n = n.saturating_sub(1);
            if *n == 0 {
                per_conn.remove(&conn);
            }
        }
    }

    /// Whether any connection has a registration at `p`.
    fn any_at(&self, p: &str) -> bool {
        self.by_path.get(p).is_some_and(|m| !m.is_empty())
    }

    fn remove(&mut self, p: &str, conn: ConnId) -> bool {
        let Some(m) = self.by_path.get_mut(p) else { return false };
        let removed = m.remove(&conn).is_some();
        if m.is_empty() {
            self.by_path.remove(p);
        }
        if removed {
            Table::forget_one(&mut self.per_conn, conn);
        }
        removed
    }

    fn remove_conn(&mut self, conn: ConnId) {
        if self.per_conn.remove(&conn).is_none() {
            return;
        }
        self.by_path.retain(|_, m| {
            m.remove(&conn);
            !m.is_empty()
        });
    }

    /// `WatchManager.triggerWatch`: who hears about `event` on `p`.
    fn trigger(&mut self, p: &str, event: EventType, suppress: &BTreeSet<ConnId>) -> BTreeSet<ConnId> {
        let mut hit = BTreeSet::new();
        if let Some(m) = self.by_path.get_mut(p) {
            let per_conn = &mut self.per_conn;
            m.retain(|conn, mode| {
                match mode {
                    Mode::Recursive if event == EventType::NODE_CHILDREN_CHANGED => {}
                    _ => {
                        hit.insert(*conn);
                    }
                }
                let stays = *mode != Mode::Standard;
                if !stays {
                    Table::forget_one(per_conn, *conn);
                }
                stays
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

    /// addWatch: both kinds go in both tables (3.8.0's `DataTree.addWatch`).
    /// A recursive registration in the child table never fires for
    /// NodeChildrenChanged, so it only shows when the two tables' modes
    /// differ (a later standard watch overwrote one of them, or
    /// removeWatches dropped one): it still reports NodeDeleted.
    pub(crate) fn add_persistent(&mut self, p: &str, conn: ConnId, recursive: bool) {
        let mode = if recursive { Mode::Recursive } else { Mode::Persistent };
        self.data.add(p, conn, mode);
        self.child.add(p, conn, mode);
    }

    /// checkWatches for a valid type (1 children, 2 data, 3 any). As in
    /// 3.8.0's `WatchManager.containsWatcher`, *any* connection's
    /// registration at exactly `p` in the table(s) counts, not only the
    /// caller's (checked against the real server by the differential test).
    pub(crate) fn contains(&self, p: &str, kind: WatcherType) -> bool {
        match kind {
            WatcherType::CHILDREN => self.child.any_at(p),
            WatcherType::DATA => self.data.any_at(p),
            _ => self.child.any_at(p) || self.data.any_at(p),
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

    /// Number of registrations (data + child) of one connection.
    pub(crate) fn count(&self, conn: ConnId) -> usize {
        let of = |t: &Table| t.per_conn.get(&conn).copied().unwrap_or(0);
        of(&self.data) + of(&self.child)
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
            Change::Deleted(p, _) => {
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
