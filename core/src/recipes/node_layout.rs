//! Which lock layout a path's children show: the rule `zoolock holders`
//! uses to name a path's kind from its node names alone, and to refuse a
//! kind the nodes contradict.
//!
//! The names are Curator's: `lock-` nodes on the path (a mutex, or a
//! `LeaderSelector` election, whose nodes differ only in their data),
//! `__READ__` / `__WRIT__` nodes (a read-write lock), `latch-` nodes (a
//! `LeaderLatch`), and the `leases` / `locks` folders of a semaphore (or a
//! semaphore mutex: the same folders, a size of one). The markers are
//! searched anywhere in a name, as Curator's sort finds them, so protected
//! (`_c_<uuid>-lock-…`) and plain (`lock-…`) nodes read alike.

use alloc::vec::Vec;

use super::naming::LATCH_NAME;
use super::policy::{LOCK_NAME, READ_NAME, WRITE_NAME};
use super::semaphore::{SEMAPHORE_LEASES, SEMAPHORE_LOCKS};
use super::spec::LockKind;

/// A layout of nodes a lock path can show. Kinds that write the same names
/// share one ([`NodeLayout::kinds`]).
#[derive(Debug, Clone, Copy, PartialEq, Eq, PartialOrd, Ord, Hash)]
#[non_exhaustive]
pub enum NodeLayout {
    /// `lock-` nodes on the path: a mutex or a `LeaderSelector` election.
    Lock,
    /// `__READ__` / `__WRIT__` nodes on the path: a read-write lock.
    ReadWrite,
    /// `latch-` nodes on the path: a `LeaderLatch` election.
    Latch,
    /// `leases` / `locks` folders under the path: a semaphore or a semaphore
    /// mutex.
    Leases,
}

impl NodeLayout {
    /// Every layout.
    pub const ALL: [NodeLayout; 4] = [NodeLayout::Lock, NodeLayout::ReadWrite, NodeLayout::Latch, NodeLayout::Leases];

    /// The layout a kind writes; `None` for a multi-lock, whose members
    /// each write their own on their own paths.
    pub fn of(kind: LockKind) -> Option<NodeLayout> {
        match kind {
            LockKind::Mutex | LockKind::LeaderSelector => Some(NodeLayout::Lock),
            LockKind::ReadWriteLock => Some(NodeLayout::ReadWrite),
            LockKind::LeaderLatch => Some(NodeLayout::Latch),
            LockKind::Semaphore | LockKind::SemaphoreMutex => Some(NodeLayout::Leases),
            LockKind::MultiLock => None,
        }
    }

    /// The kinds that write this layout, in [`LockKind::ALL`] order.
    pub fn kinds(self) -> impl Iterator<Item = LockKind> {
        LockKind::ALL.into_iter().filter(move |kind| NodeLayout::of(*kind) == Some(self))
    }

    /// The kind a path of this layout is read as when nothing else says:
    /// the first of [`NodeLayout::kinds`] (a mutex, a read-write lock, a
    /// latch, a semaphore).
    pub fn kind(self) -> LockKind {
        match self {
            NodeLayout::Lock => LockKind::Mutex,
            NodeLayout::ReadWrite => LockKind::ReadWriteLock,
            NodeLayout::Latch => LockKind::LeaderLatch,
            NodeLayout::Leases => LockKind::Semaphore,
        }
    }

    /// The names that show it, for a message: "`lock-` nodes".
    pub fn names(self) -> &'static str {
        match self {
            NodeLayout::Lock => "`lock-` nodes",
            NodeLayout::ReadWrite => "`__READ__`/`__WRIT__` nodes",
            NodeLayout::Latch => "`latch-` nodes",
            NodeLayout::Leases => "`leases`/`locks` folders",
        }
    }

    /// Whether a child named `name` belongs to this layout.
    fn fits(self, name: &str) -> bool {
        match self {
            NodeLayout::Lock => name.contains(LOCK_NAME),
            NodeLayout::ReadWrite => name.contains(READ_NAME) || name.contains(WRITE_NAME),
            NodeLayout::Latch => name.contains(LATCH_NAME),
            NodeLayout::Leases => name == SEMAPHORE_LEASES || name == SEMAPHORE_LOCKS,
        }
    }
}

/// What a lock path's children say of its layout.
#[derive(Debug, Clone, PartialEq, Eq)]
#[non_exhaustive]
pub enum Recognised {
    /// No children: no layout shows.
    Empty,
    /// One layout's names (beside any foreign names, which Curator counts
    /// as participants of whatever layout the path has).
    One(NodeLayout),
    /// Names of several layouts, in [`NodeLayout::ALL`] order: the path is
    /// shared by recipes that do not see each other.
    Mixed(Vec<NodeLayout>),
    /// Children, none of them named by any layout.
    Unknown,
}

impl Recognised {
    /// Whether a path showing this may be read as `kind`: its layout is one
    /// `kind` writes, the path is empty or has only foreign names, or the
    /// mix includes `kind`'s layout (the caller chose among them). `false`
    /// when the nodes contradict `kind`, and for a multi-lock (a path shows
    /// no multi-lock layout).
    pub fn admits(&self, kind: LockKind) -> bool {
        let Some(layout) = NodeLayout::of(kind) else { return false };
        match self {
            Recognised::Empty | Recognised::Unknown => true,
            Recognised::One(one) => *one == layout,
            Recognised::Mixed(layouts) => layouts.contains(&layout),
        }
    }
}

/// The layout a lock path's children (their names, not paths) show.
pub fn recognise<S: AsRef<str>>(children: &[S]) -> Recognised {
    if children.is_empty() {
        return Recognised::Empty;
    }
    let found: Vec<NodeLayout> =
        NodeLayout::ALL.into_iter().filter(|layout| children.iter().any(|name| layout.fits(name.as_ref()))).collect();
    match found.as_slice() {
        [] => Recognised::Unknown,
        [one] => Recognised::One(*one),
        _ => Recognised::Mixed(found),
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use alloc::vec;

    #[test]
    fn names_of_each_layout_are_recognised() {
        let table: &[(&[&str], Recognised)] = &[
            (&[], Recognised::Empty),
            // Protected (zoolock and Curator's creatingParentContainersIfNeeded
            // withProtection) and plain nodes.
            (&["_c_0a1b-lock-0000000003", "lock-0000000004"], Recognised::One(NodeLayout::Lock)),
            (&["_c_0a1b-__READ__0000000000"], Recognised::One(NodeLayout::ReadWrite)),
            (&["_c_0a1b-__WRIT__0000000002"], Recognised::One(NodeLayout::ReadWrite)),
            (
                &["_c_1-__READ__0000000000", "_c_2-__READ__0000000001", "_c_3-__WRIT__0000000002"],
                Recognised::One(NodeLayout::ReadWrite),
            ),
            (&["_c_0a1b-latch-0000000000", "latch-0000000001"], Recognised::One(NodeLayout::Latch)),
            (&["leases", "locks"], Recognised::One(NodeLayout::Leases)),
            (&["leases"], Recognised::One(NodeLayout::Leases)),
            (&["locks"], Recognised::One(NodeLayout::Leases)),
            // A foreign name beside a layout's names does not hide it.
            (&["notes", "_c_0a1b-lock-0000000001"], Recognised::One(NodeLayout::Lock)),
            (&["notes", "leases-old"], Recognised::Unknown),
            (&["config"], Recognised::Unknown),
            (
                &["_c_1-lock-0000000000", "_c_2-__WRIT__0000000001"],
                Recognised::Mixed(vec![NodeLayout::Lock, NodeLayout::ReadWrite]),
            ),
            (&["latch-0000000000", "leases"], Recognised::Mixed(vec![NodeLayout::Latch, NodeLayout::Leases])),
        ];
        for (children, expected) in table {
            assert_eq!(&recognise(children), expected, "{children:?}");
        }
    }

    #[test]
    fn every_kind_but_a_multi_lock_writes_one_layout_and_each_layout_has_kinds() {
        for kind in LockKind::ALL {
            let layout = NodeLayout::of(kind);
            assert_eq!(layout.is_none(), kind == LockKind::MultiLock, "{kind:?}");
            if let Some(layout) = layout {
                assert!(layout.kinds().any(|k| k == kind), "{kind:?}");
            }
        }
        for layout in NodeLayout::ALL {
            assert_eq!(layout.kinds().next(), Some(layout.kind()), "{layout:?}");
            assert_eq!(NodeLayout::of(layout.kind()), Some(layout));
        }
        let lock: Vec<_> = NodeLayout::Lock.kinds().collect();
        assert_eq!(lock, [LockKind::Mutex, LockKind::LeaderSelector]);
        let leases: Vec<_> = NodeLayout::Leases.kinds().collect();
        assert_eq!(leases, [LockKind::Semaphore, LockKind::SemaphoreMutex]);
    }

    #[test]
    fn a_kind_is_admitted_unless_the_nodes_contradict_it() {
        let rw = recognise(&["_c_1-__READ__0000000000", "_c_2-__WRIT__0000000001"]);
        assert!(rw.admits(LockKind::ReadWriteLock));
        for kind in [LockKind::Mutex, LockKind::LeaderSelector, LockKind::LeaderLatch, LockKind::Semaphore] {
            assert!(!rw.admits(kind), "{kind:?}");
        }
        let lock = recognise(&["_c_1-lock-0000000000"]);
        assert!(lock.admits(LockKind::Mutex) && lock.admits(LockKind::LeaderSelector));
        assert!(!lock.admits(LockKind::ReadWriteLock) && !lock.admits(LockKind::Semaphore));
        let leases = recognise(&["leases", "locks"]);
        assert!(leases.admits(LockKind::Semaphore) && leases.admits(LockKind::SemaphoreMutex));
        assert!(!leases.admits(LockKind::Mutex));
        let mixed = recognise(&["_c_1-lock-0000000000", "latch-0000000001"]);
        assert!(mixed.admits(LockKind::Mutex) && mixed.admits(LockKind::LeaderLatch));
        assert!(!mixed.admits(LockKind::ReadWriteLock));
        for empty in [Recognised::Empty, Recognised::Unknown] {
            assert!(empty.admits(LockKind::ReadWriteLock) && empty.admits(LockKind::Mutex));
            assert!(!empty.admits(LockKind::MultiLock));
        }
    }
}
