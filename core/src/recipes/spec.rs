//! The one description of each lock kind: what it builds, its Curator layout
//! (where its nodes queue, how they sort, who holds) and its name in logs
//! and metrics.
//!
//! [`LockKind`] is the only list of lock kinds. The driver, the CLI, the
//! simulator, the trace replay and the tests take kinds, builds and layouts
//! from here and map them to their own needs; none lists the kinds again.
//! [`LockSpec`] is one lock of a kind on its paths (a read-write lock's read
//! or write half, a multi-lock of specs), and [`SemaphoreSpec`] a semaphore's,
//! whose leases are not one lock but many.
//!
//! Adding a kind: its recipe in its own file; here, a [`LockKind`] variant
//! (at the end of [`LockKind::ALL`]) with its arm in `LockKind::facts`, and,
//! for a lock on one path, a [`LockSpec`] variant with its arms
//! (`LockSpec::of`, `single`, `build`); and its tests.

use alloc::boxed::Box;
use alloc::string::String;
use alloc::vec::Vec;

use super::capability::{BoxedLock, Part};
use super::config::SharedLockConfig;
use super::election::ElectionKind;
use super::multilock::MultiLock;
use super::mutex::Mutex;
use super::naming::LATCH_NAME;
use super::policy::{LEASE_NAME, LOCK_NAME, PositionRule, SortKey};
use super::rwlock::{ReadWriteLock, member_seed};
use super::semaphore::{SEMAPHORE_LEASES, Semaphore};
use super::semaphore_mutex::SemaphoreMutex;
use super::shared_count::SharedCount;
use crate::error::ApiMisuse;
use crate::path::{PathError, ZkPath};

/// Every kind of lock zoolock has, each wire-compatible with one Curator
/// recipe.
#[derive(Debug, Clone, Copy, PartialEq, Eq, PartialOrd, Ord, Hash)]
#[non_exhaustive]
pub enum LockKind {
    /// [`Mutex`]: Curator's `InterProcessMutex`.
    Mutex,
    /// [`ReadWriteLock`]: `InterProcessReadWriteLock`, a read and a write
    /// half on one path.
    ReadWriteLock,
    /// [`Semaphore`]: `InterProcessSemaphoreV2`, N leases.
    Semaphore,
    /// [`SemaphoreMutex`]: `InterProcessSemaphoreMutex`, a one-lease
    /// semaphore.
    SemaphoreMutex,
    /// [`MultiLock`]: `InterProcessMultiLock`, any locks as one.
    MultiLock,
    /// An [`Election`](super::Election) participant in Curator's `LeaderSelector` layout: a
    /// mutex's `lock-` queue whose node data is the participant id.
    LeaderSelector,
    /// An [`Election`](super::Election) participant in Curator's `LeaderLatch` layout: the
    /// `latch-` queue, its lowest node leading.
    LeaderLatch,
}

impl LockKind {
    /// Every kind. A new kind goes at the end, so that a kind picked by its
    /// index here stays what it was (the simulator pins its recorded seeds
    /// to their kinds all the same).
    pub const ALL: [LockKind; 7] = [
        LockKind::Mutex,
        LockKind::ReadWriteLock,
        LockKind::Semaphore,
        LockKind::SemaphoreMutex,
        LockKind::MultiLock,
        LockKind::LeaderSelector,
        LockKind::LeaderLatch,
    ];

    /// Its name in logs and metrics (the `kind` label) and on the command
    /// line.
    pub fn label(self) -> &'static str {
        self.facts().label
    }

    /// The Curator class it is wire-compatible with.
    pub fn curator_class(self) -> &'static str {
        self.facts().curator_class
    }

    /// The kind whose Curator class `text` names first (for example a
    /// recorded scenario's description), if any.
    pub fn named_in(text: &str) -> Option<LockKind> {
        LockKind::ALL
            .into_iter()
            .filter_map(|kind| text.find(kind.curator_class()).map(|at| (at, kind)))
            .min_by_key(|(at, _)| *at)
            .map(|(_, kind)| kind)
    }

    /// Where its participants queue, how they sort and who holds; `None`
    /// for a multi-lock, whose members each have their own.
    pub fn layout(self) -> Option<Layout> {
        self.facts().layout
    }

    /// The election layout of an election kind (built with [`Election`](super::Election),
    /// not as a lock); `None` for the locks.
    pub fn election(self) -> Option<ElectionKind> {
        match self {
            LockKind::LeaderSelector => Some(ElectionKind::Selector),
            LockKind::LeaderLatch => Some(ElectionKind::Latch),
            _ => None,
        }
    }

    /// The one arm per kind: everything this file knows about it.
    fn facts(self) -> Facts {
        let (label, curator_class, layout) = match self {
            LockKind::Mutex => ("mutex", "InterProcessMutex", Some(Layout::at_base(SortKey::curator(LOCK_NAME)))),
            LockKind::ReadWriteLock => ("rwlock", "InterProcessReadWriteLock", Some(Layout::read_write())),
            LockKind::Semaphore => ("semaphore", "InterProcessSemaphoreV2", Some(Layout::leases(Holders::Leases))),
            LockKind::SemaphoreMutex => {
                ("semaphore_mutex", "InterProcessSemaphoreMutex", Some(Layout::leases(Holders::First(1))))
            }
            LockKind::MultiLock => ("multi", "InterProcessMultiLock", None),
            LockKind::LeaderSelector => {
                ("leader_selector", "LeaderSelector", Some(Layout::at_base(SortKey::curator(LOCK_NAME))))
            }
            LockKind::LeaderLatch => {
                ("leader_latch", "LeaderLatch", Some(Layout::at_base(SortKey::curator(LATCH_NAME))))
            }
        };
        Facts { label, curator_class, layout }
    }
}

/// What [`LockKind::facts`] says of a kind.
struct Facts {
    label: &'static str,
    curator_class: &'static str,
    layout: Option<Layout>,
}

/// How many of a queue's first nodes hold.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
enum Holders {
    /// A fixed number.
    First(usize),
    /// The semaphore's size.
    Leases,
    /// Readers up to the first writer (the read-write lock).
    Read,
}

/// A kind's Curator layout: which node lists its participants (every child
/// counts, foreign names included, as in Curator), how they sort, and which
/// of them hold.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct Layout {
    /// The child of the lock path that holds the queue, if not the path.
    folder: Option<&'static str>,
    key: SortKey,
    holders: Holders,
}

impl Layout {
    const fn at_base(key: SortKey) -> Layout {
        Layout { folder: None, key, holders: Holders::First(1) }
    }

    const fn read_write() -> Layout {
        Layout { folder: None, key: SortKey::ReadWrite, holders: Holders::Read }
    }

    const fn leases(holders: Holders) -> Layout {
        Layout { folder: Some(SEMAPHORE_LEASES), key: SortKey::curator(LEASE_NAME), holders }
    }

    /// The node whose children are the participants of the lock at `base`.
    ///
    /// # Errors
    ///
    /// `base` is too long to take the layout's folder.
    pub fn queue(&self, base: &ZkPath) -> Result<ZkPath, PathError> {
        match self.folder {
            Some(folder) => base.join(folder),
            None => Ok(base.clone()),
        }
    }

    /// How participants sort, holder first.
    pub fn sort_key(&self) -> SortKey {
        self.key.clone()
    }

    /// Which participants hold: the first one, readers before the first
    /// writer, or a semaphore's first `leases` (every lease when its size is
    /// unknown).
    pub fn holding_rule(&self, leases: Option<usize>) -> PositionRule {
        match self.holders {
            Holders::First(n) => PositionRule::Standard(n),
            Holders::Leases => PositionRule::Standard(leases.unwrap_or(usize::MAX)),
            Holders::Read => PositionRule::Read,
        }
    }
}

/// One lock of a kind on its path: what a caller asks for and a multi-lock
/// is made of. Paths are checked when it is built.
#[derive(Debug, Clone, PartialEq, Eq)]
#[non_exhaustive]
pub enum LockSpec {
    /// A mutex on the path.
    Mutex(String),
    /// The read half of a read-write lock on the path.
    Read(String),
    /// The write half of a read-write lock on the path.
    Write(String),
    /// A semaphore mutex on the path.
    SemaphoreMutex(String),
    /// A multi-lock of these, taken in order.
    Multi(Vec<LockSpec>),
}

impl LockSpec {
    /// The lock of `kind` on `path`, for kinds that are one lock on one
    /// path (a read-write lock's is its read half, whose recipe is the whole
    /// lock); `None` for a semaphore ([`SemaphoreSpec`]), a multi-lock
    /// (made of specs) and an election (an [`Election`](super::Election) participant).
    pub fn of(kind: LockKind, path: impl Into<String>) -> Option<LockSpec> {
        let path = path.into();
        match kind {
            LockKind::Mutex => Some(LockSpec::Mutex(path)),
            LockKind::ReadWriteLock => Some(LockSpec::Read(path)),
            LockKind::SemaphoreMutex => Some(LockSpec::SemaphoreMutex(path)),
            LockKind::Semaphore | LockKind::MultiLock | LockKind::LeaderSelector | LockKind::LeaderLatch => None,
        }
    }

    /// Its kind.
    pub fn kind(&self) -> LockKind {
        self.single().map_or(LockKind::MultiLock, |(kind, _, _)| kind)
    }

    /// The lock's path, or its members' paths joined with `,`: the `path`
    /// of its log lines and metrics.
    pub fn label(&self) -> String {
        match self {
            LockSpec::Multi(members) => members.iter().map(LockSpec::label).collect::<Vec<_>>().join(","),
            one => one.single().map(|(_, _, path)| String::from(path)).unwrap_or_default(),
        }
    }

    /// Builds its recipe and says which part of it this spec is: a read or
    /// write half builds the whole read-write lock. `revocable` makes a
    /// mutex's holder, or both halves', told of revocation requests; a
    /// semaphore mutex is never revocable, nor are a multi-lock's members.
    /// A multi-lock's members get seeds derived from the config's, in
    /// order; every lock built shares the config's settings.
    ///
    /// # Errors
    ///
    /// [`ApiMisuse::InvalidPath`] for an invalid path;
    /// [`ApiMisuse::EmptyMultiLock`] for a multi-lock of nothing.
    pub fn build(&self, config: impl Into<SharedLockConfig>, revocable: bool) -> Result<(BoxedLock, Part), ApiMisuse> {
        let config = config.into();
        let lock: BoxedLock = match self {
            LockSpec::Mutex(path) => {
                let mut mutex = Mutex::new(ZkPath::new(path)?, config);
                if revocable {
                    mutex.make_revocable()?;
                }
                Box::new(mutex)
            }
            LockSpec::Read(path) | LockSpec::Write(path) => {
                let mut rw = ReadWriteLock::new(ZkPath::new(path)?, config);
                if revocable {
                    rw.make_revocable_read()?;
                    rw.make_revocable_write()?;
                }
                Box::new(rw)
            }
            LockSpec::SemaphoreMutex(path) => Box::new(SemaphoreMutex::new(ZkPath::new(path)?, config)),
            LockSpec::Multi(members) => {
                let members = members
                    .iter()
                    .enumerate()
                    .map(|(i, member)| member.build(config.with_seed(member_seed(config.seed(), i)), false))
                    .collect::<Result<Vec<_>, _>>()?;
                Box::new(MultiLock::of(members)?)
            }
        };
        Ok((lock, self.part()))
    }

    /// Which part of its recipe it is.
    fn part(&self) -> Part {
        self.single().map_or(Part::Whole, |(_, part, _)| part)
    }

    /// A single lock's kind, part and path; `None` for a multi-lock.
    fn single(&self) -> Option<(LockKind, Part, &str)> {
        match self {
            LockSpec::Mutex(path) => Some((LockKind::Mutex, Part::Whole, path)),
            LockSpec::Read(path) => Some((LockKind::ReadWriteLock, Part::Read, path)),
            LockSpec::Write(path) => Some((LockKind::ReadWriteLock, Part::Write, path)),
            LockSpec::SemaphoreMutex(path) => Some((LockKind::SemaphoreMutex, Part::Whole, path)),
            LockSpec::Multi(_) => None,
        }
    }
}

/// How many leases a semaphore allows.
#[derive(Debug, Clone, PartialEq, Eq)]
#[non_exhaustive]
pub enum SemaphoreSize {
    /// A fixed count (a convention every participant must share, as in
    /// Curator).
    Leases(usize),
    /// The value of the shared count at `path` (Curator's
    /// `SharedCountReader`), created with `seed` if absent. Resized live:
    /// growing lets waiters in at once, shrinking takes no lease back.
    Count {
        /// The count node.
        path: String,
        /// Its value if it does not exist yet.
        seed: i32,
    },
}

/// A semaphore on its path ([`LockKind::Semaphore`]): the lease spec beside
/// [`LockSpec`], since a semaphore hands out many leases, not one hold.
#[derive(Debug, Clone, PartialEq, Eq)]
#[non_exhaustive]
pub struct SemaphoreSpec {
    /// The semaphore's path (its `locks` and `leases` are below it).
    pub path: String,
    /// Its size.
    pub size: SemaphoreSize,
    /// Revocable leases: each holder is told when someone asks for its
    /// lease back; lease nodes have empty data.
    pub revocable: bool,
}

impl SemaphoreSpec {
    /// A semaphore on `path` of `size`, revocable or not.
    pub fn new(path: impl Into<String>, size: SemaphoreSize, revocable: bool) -> SemaphoreSpec {
        SemaphoreSpec { path: path.into(), size, revocable }
    }

    /// Its kind: [`LockKind::Semaphore`].
    pub fn kind(&self) -> LockKind {
        LockKind::Semaphore
    }

    /// Builds the semaphore (and the shared count it reads, if sized by
    /// one, with the same config).
    ///
    /// # Errors
    ///
    /// [`ApiMisuse::InvalidPath`] for an invalid path or count path.
    pub fn build(&self, config: impl Into<SharedLockConfig>) -> Result<Semaphore, ApiMisuse> {
        let config = config.into();
        let base = ZkPath::new(&self.path)?;
        let mut semaphore = match &self.size {
            SemaphoreSize::Leases(n) => Semaphore::new(base, *n, config),
            SemaphoreSize::Count { path, seed } => {
                let count = SharedCount::new(ZkPath::new(path)?, *seed, config.to_config());
                Semaphore::with_count(base, count, config)
            }
        };
        if self.revocable {
            semaphore.make_revocable();
        }
        Ok(semaphore)
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::recipes::LockConfig;

    #[test]
    fn every_kind_is_listed_once_with_its_own_label_and_class() {
        for (i, kind) in LockKind::ALL.into_iter().enumerate() {
            assert!(!LockKind::ALL[..i].contains(&kind));
            assert_eq!(LockKind::named_in(kind.curator_class()), Some(kind));
            let others = LockKind::ALL.into_iter().filter(|k| *k != kind);
            assert!(others.clone().all(|k| k.label() != kind.label()));
        }
    }

    #[test]
    fn elections_are_kinds_with_their_curator_layouts() {
        for election in [ElectionKind::Selector, ElectionKind::Latch] {
            let kind = election.lock_kind();
            assert_eq!(kind.election(), Some(election));
            let layout = kind.layout().unwrap();
            assert_eq!(layout.sort_key(), election.lock_name().sort_key());
            assert_eq!(layout.holding_rule(None), PositionRule::Standard(1));
        }
        assert_eq!(LockKind::named_in("Curator's LeaderLatch"), Some(LockKind::LeaderLatch));
        assert!(LockKind::ALL.iter().filter(|k| k.election().is_some()).count() == 2);
    }

    #[test]
    fn the_first_class_named_wins() {
        let multi = "InterProcessMultiLock over two InterProcessMutex paths";
        assert_eq!(LockKind::named_in(multi), Some(LockKind::MultiLock));
        let sm = "InterProcessSemaphoreMutex (built on InterProcessSemaphoreV2 with 1 lease)";
        assert_eq!(LockKind::named_in(sm), Some(LockKind::SemaphoreMutex));
        assert_eq!(LockKind::named_in("a ZooKeeper client"), None);
    }

    #[test]
    fn specs_name_their_kind_and_paths() {
        let multi = LockSpec::Multi(alloc::vec![LockSpec::Write("/a".into()), LockSpec::Mutex("/b".into())]);
        assert_eq!(multi.kind(), LockKind::MultiLock);
        assert_eq!(multi.label(), "/a,/b");
        assert_eq!(LockSpec::Read("/a".into()).kind(), LockKind::ReadWriteLock);
        assert_eq!(LockSpec::SemaphoreMutex("/s".into()).kind(), LockKind::SemaphoreMutex);
        for kind in LockKind::ALL {
            let spec = LockSpec::of(kind, "/p");
            assert!(spec.as_ref().is_none_or(|s| s.kind() == kind && s.label() == "/p"), "{kind:?}");
            let one_lock = !matches!(
                kind,
                LockKind::Semaphore | LockKind::MultiLock | LockKind::LeaderSelector | LockKind::LeaderLatch
            );
            assert_eq!(spec.is_some(), one_lock, "{kind:?}");
        }
        assert!(matches!(
            LockSpec::Mutex("bad".into()).build(LockConfig::new(1), false),
            Err(ApiMisuse::InvalidPath(_))
        ));
        assert!(matches!(LockSpec::Multi(Vec::new()).build(LockConfig::new(1), false), Err(ApiMisuse::EmptyMultiLock)));
    }
}
