//! The scoreboard: workers report each grant and release here, and the
//! safety checks run on the spot, in grant order.
//!
//! All workers live in this process, so the board sees the true order of
//! holds: a worker reports its release *before* it deletes its node, and the
//! next holder can only be granted after that delete, so two overlapping
//! entries in `holders` mean two real holders at once.

use std::collections::BTreeMap;
use std::sync::Mutex;
use std::time::Duration;

use zoolock_tokio::LockKind;
use zoolock_tokio::sans_io::recipes::policy::{LOCK_NAME, SortKey};

/// The recipes the demo runs, in display order.
pub(crate) const RECIPES: [LockKind; 3] = [LockKind::Mutex, LockKind::ReadWriteLock, LockKind::Semaphore];

/// A recipe's place in [`RECIPES`] (and in the tallies).
fn slot(recipe: LockKind) -> usize {
    RECIPES.iter().position(|r| *r == recipe).unwrap_or(0)
}

/// What a worker does with its recipe.
#[derive(Debug, Clone, Copy, PartialEq, Eq, PartialOrd, Ord)]
pub(crate) enum Role {
    /// Holds the mutex.
    Mutex,
    /// Holds the read half of the read-write lock.
    Reader,
    /// Holds the write half of the read-write lock.
    Writer,
    /// Holds one semaphore lease.
    Lease,
}

impl Role {
    /// The recipe this role uses.
    pub(crate) fn recipe(self) -> LockKind {
        match self {
            Role::Mutex => LockKind::Mutex,
            Role::Reader | Role::Writer => LockKind::ReadWriteLock,
            Role::Lease => LockKind::Semaphore,
        }
    }

    /// One holder at a time: fencing tokens and grant order are checked.
    pub(crate) fn exclusive(self) -> bool {
        matches!(self, Role::Mutex | Role::Writer)
    }

    /// The label in the summary's table.
    pub(crate) fn label(self) -> &'static str {
        match self {
            Role::Mutex => "mutex",
            Role::Reader => "rwlock read",
            Role::Writer => "rwlock write",
            Role::Lease => "semaphore",
        }
    }

    /// Worker names are this prefix and a number (`m1`, `r2`, `w1`, `s3`).
    pub(crate) fn prefix(self) -> &'static str {
        match self {
            Role::Mutex => "m",
            Role::Reader => "r",
            Role::Writer => "w",
            Role::Lease => "s",
        }
    }

    /// How the sequence number is read from this role's node names: its
    /// recipe's layout.
    fn sort_key(self) -> SortKey {
        self.recipe().layout().map_or(SortKey::curator(LOCK_NAME), |layout| layout.sort_key())
    }
}

/// One worker: its role and name.
#[derive(Debug, Clone, PartialEq, Eq)]
pub(crate) struct WorkerId {
    /// What it holds.
    pub(crate) role: Role,
    /// `m1`, `r2`, ...; also its lock node data, so `zoolock holders` shows it.
    pub(crate) name: String,
}

/// The protected resource that fencing tokens guard: it remembers the
/// highest token it accepted and refuses writes carrying a lower one, as a
/// storage service checking tokens would.
#[derive(Debug, Default, Clone)]
pub(crate) struct Resource {
    /// The highest token accepted so far.
    pub(crate) highest: Option<i64>,
    /// Writes accepted.
    pub(crate) accepted: u64,
    /// Writes refused for a stale token (must stay 0).
    pub(crate) rejected: u64,
}

impl Resource {
    /// One write carrying `token`; false if refused as stale.
    fn write(&mut self, token: i64) -> bool {
        if self.highest.is_some_and(|h| token < h) {
            self.rejected += 1;
            return false;
        }
        self.highest = Some(token);
        self.accepted += 1;
        true
    }
}

/// Everything recorded about one recipe.
#[derive(Debug, Clone)]
pub(crate) struct Tally {
    /// How many may hold at once (semaphore leases; 1 for the others'
    /// exclusive holders).
    pub(crate) leases: usize,
    /// Current holders, in grant order.
    pub(crate) holders: Vec<WorkerId>,
    /// Grants so far.
    pub(crate) acquisitions: u64,
    /// Time from asking to being granted, per role, in grant order.
    pub(crate) waits: BTreeMap<Role, Vec<Duration>>,
    /// Grants per worker (every worker is listed, even with 0).
    pub(crate) per_worker: BTreeMap<String, (Role, u64)>,
    /// The most holders seen at once.
    pub(crate) max_concurrent: usize,
    /// Grants that broke exclusion (must stay 0).
    pub(crate) overlaps: u64,
    /// Exclusive grants whose fencing token was not above the previous
    /// exclusive holder's (must stay 0).
    pub(crate) token_regressions: u64,
    /// Exclusive grants checked for order (token and sequence).
    pub(crate) ordered_grants: u64,
    /// Exclusive grants whose node's sequence number was not above the
    /// previous exclusive holder's: not first come, first served.
    pub(crate) fifo_violations: u64,
    /// The resource the exclusive holders write to.
    pub(crate) resource: Resource,
    /// Failures reported by workers (must stay empty).
    pub(crate) errors: Vec<String>,
    last_token: Option<i64>,
    last_seq: Option<i64>,
}

impl Tally {
    fn new(leases: usize) -> Tally {
        Tally {
            leases,
            holders: Vec::new(),
            acquisitions: 0,
            waits: BTreeMap::new(),
            per_worker: BTreeMap::new(),
            max_concurrent: 0,
            overlaps: 0,
            token_regressions: 0,
            ordered_grants: 0,
            fifo_violations: 0,
            resource: Resource::default(),
            errors: Vec::new(),
            last_token: None,
            last_seq: None,
        }
    }

    /// Would a grant to `role` now break the recipe's exclusion rule?
    fn conflicts(&self, role: Role) -> bool {
        match role {
            Role::Mutex | Role::Writer => !self.holders.is_empty(),
            Role::Reader => self.holders.iter().any(|h| h.role == Role::Writer),
            Role::Lease => self.holders.len() >= self.leases,
        }
    }

    fn granted(&mut self, worker: &WorkerId, waited: Duration, token: i64, node: &str) {
        if self.conflicts(worker.role) {
            self.overlaps += 1;
        }
        self.holders.push(worker.clone());
        self.max_concurrent = self.max_concurrent.max(self.holders.len());
        self.acquisitions += 1;
        self.waits.entry(worker.role).or_default().push(waited);
        self.per_worker.entry(worker.name.clone()).or_insert((worker.role, 0)).1 += 1;
        if worker.role.exclusive() {
            self.ordered_grants += 1;
            if self.last_token.is_some_and(|last| token <= last) {
                self.token_regressions += 1;
            }
            self.last_token = Some(token);
            let name = node.rsplit('/').next().unwrap_or(node);
            // A node name without a numeric sequence key cannot be ordered:
            // count it as out of order rather than skip it silently.
            match worker.role.sort_key().key(name).parse::<i64>() {
                Ok(seq) => {
                    if self.last_seq.is_some_and(|last| seq <= last) {
                        self.fifo_violations += 1;
                    }
                    self.last_seq = Some(seq);
                }
                Err(_) => self.fifo_violations += 1,
            }
        }
    }
}

/// What the progress display needs of one recipe.
#[derive(Debug, Clone, PartialEq, Eq)]
pub(crate) struct Live {
    /// Current holders' names.
    pub(crate) holders: Vec<String>,
    /// Grants so far.
    pub(crate) acquisitions: u64,
}

/// The shared scoreboard (one per run).
#[derive(Debug)]
pub(crate) struct Board {
    tallies: Mutex<[Tally; 3]>,
}

impl Board {
    /// An empty board; `leases` is the semaphore's lease count. Every
    /// worker is registered up front so one that never gets a grant still
    /// shows in the fairness figures.
    pub(crate) fn new(leases: usize, workers: &[WorkerId]) -> Board {
        let mut tallies = [Tally::new(1), Tally::new(1), Tally::new(leases)];
        for w in workers {
            tallies[slot(w.role.recipe())].per_worker.insert(w.name.clone(), (w.role, 0));
        }
        Board { tallies: Mutex::new(tallies) }
    }

    fn with<T>(&self, f: impl FnOnce(&mut [Tally; 3]) -> T) -> T {
        f(&mut self.tallies.lock().unwrap_or_else(|e| e.into_inner()))
    }

    /// `worker` was granted its lock after waiting `waited`; checks
    /// exclusion, token order and grant order.
    pub(crate) fn granted(&self, worker: &WorkerId, waited: Duration, token: i64, node: &str) {
        self.with(|t| t[slot(worker.role.recipe())].granted(worker, waited, token, node));
    }

    /// `worker` is about to release (called before the node is deleted).
    pub(crate) fn releasing(&self, worker: &WorkerId) {
        self.with(|t| {
            let holders = &mut t[slot(worker.role.recipe())].holders;
            if let Some(i) = holders.iter().position(|h| h == worker) {
                holders.remove(i);
            }
        });
    }

    /// A holder of `recipe` writes to its protected resource with `token`;
    /// false if the resource refused it as stale.
    pub(crate) fn write(&self, recipe: LockKind, token: i64) -> bool {
        self.with(|t| t[slot(recipe)].resource.write(token))
    }

    /// `worker` failed and stopped.
    pub(crate) fn failed(&self, worker: &WorkerId, message: String) {
        self.with(|t| t[slot(worker.role.recipe())].errors.push(format!("{}: {message}", worker.name)));
    }

    /// The live figures, one per recipe in [`RECIPES`] order.
    pub(crate) fn live(&self) -> [Live; 3] {
        self.with(|t| {
            t.each_ref().map(|t| Live {
                holders: t.holders.iter().map(|h| h.name.clone()).collect(),
                acquisitions: t.acquisitions,
            })
        })
    }

    /// Everything recorded, one per recipe in [`RECIPES`] order.
    pub(crate) fn tallies(&self) -> [Tally; 3] {
        self.with(|t| t.clone())
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn w(role: Role, n: u32) -> WorkerId {
        WorkerId { role, name: format!("{}{n}", role.prefix()) }
    }

    const MS: Duration = Duration::from_millis(1);

    #[test]
    fn mutex_in_order_passes() {
        let (a, b) = (w(Role::Mutex, 1), w(Role::Mutex, 2));
        let board = Board::new(2, &[a.clone(), b.clone()]);
        board.granted(&a, MS, 10, "/d/mutex/_c_x-lock-0000000000");
        assert!(board.write(LockKind::Mutex, 10));
        board.releasing(&a);
        board.granted(&b, MS, 12, "/d/mutex/_c_y-lock-0000000001");
        assert!(board.write(LockKind::Mutex, 12));
        let t = &board.tallies()[0];
        assert_eq!((t.acquisitions, t.overlaps, t.token_regressions, t.fifo_violations), (2, 0, 0, 0));
        assert_eq!(t.resource.rejected, 0);
        assert_eq!(t.per_worker["m1"], (Role::Mutex, 1));
    }

    #[test]
    fn overlap_regression_and_reorder_are_counted() {
        let (a, b) = (w(Role::Mutex, 1), w(Role::Mutex, 2));
        let board = Board::new(2, &[a.clone(), b.clone()]);
        board.granted(&a, MS, 12, "/d/mutex/_c_x-lock-0000000005");
        board.granted(&b, MS, 10, "/d/mutex/_c_y-lock-0000000004");
        assert!(board.write(LockKind::Mutex, 12));
        assert!(!board.write(LockKind::Mutex, 10));
        let t = &board.tallies()[0];
        assert_eq!((t.overlaps, t.token_regressions, t.fifo_violations, t.resource.rejected), (1, 1, 1, 1));
    }

    #[test]
    fn readers_share_and_writers_exclude() {
        let (r1, r2, wr) = (w(Role::Reader, 1), w(Role::Reader, 2), w(Role::Writer, 1));
        let board = Board::new(2, &[]);
        board.granted(&r1, MS, 1, "/d/rw/_c_a-__READ__0000000000");
        board.granted(&r2, MS, 2, "/d/rw/_c_b-__READ__0000000001");
        assert_eq!(board.tallies()[1].overlaps, 0);
        board.granted(&wr, MS, 3, "/d/rw/_c_c-__WRIT__0000000002");
        assert_eq!(board.tallies()[1].overlaps, 1);
        assert_eq!(board.live()[1].holders, ["r1", "r2", "w1"]);
    }

    #[test]
    fn semaphore_allows_its_leases() {
        let s: Vec<_> = (1..=3).map(|n| w(Role::Lease, n)).collect();
        let board = Board::new(2, &s);
        board.granted(&s[0], MS, 1, "/d/s/leases/_c_a-lease-0000000000");
        board.granted(&s[1], MS, 2, "/d/s/leases/_c_b-lease-0000000001");
        assert_eq!(board.tallies()[2].overlaps, 0);
        board.granted(&s[2], MS, 3, "/d/s/leases/_c_c-lease-0000000002");
        let t = &board.tallies()[2];
        assert_eq!((t.overlaps, t.max_concurrent, t.fifo_violations), (1, 3, 0));
    }
}
