//! The exclusion and fencing oracles, shared by the simulator (checked after
//! every step on virtual time) and the ensemble soak (checked on every new
//! hold, on real servers): one definition of what a violation is.

use std::collections::BTreeMap;
use std::fmt::Debug;

/// How a hold counts for the exclusion oracle.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Mode {
    /// A mutex, a semaphore mutex, a member of a multi-lock.
    Exclusive,
    /// The read half of a read-write lock.
    Read,
    /// The write half of a read-write lock.
    Write,
    /// A lease of a semaphore.
    Lease,
}

/// Exclusion among the holds that count (their holders were not told the
/// hold is in doubt), across clients and among the tasks of one client: at
/// most one exclusive holder and one writer per path, at most `leases`
/// semaphore leases, and no reader beside a writer. `H` names the holder in
/// the report.
pub fn check_exclusion<'a, H: Debug>(
    holds: impl IntoIterator<Item = (H, &'a str, Mode)>,
    leases: usize,
) -> Result<(), String> {
    #[derive(Default)]
    struct Count<H> {
        exclusive: Vec<H>,
        lease: Vec<H>,
        read: Vec<H>,
        write: Vec<H>,
    }
    let mut paths: BTreeMap<&str, Count<H>> = BTreeMap::new();
    for (holder, path, mode) in holds {
        let count = paths.entry(path).or_insert_with(|| Count {
            exclusive: Vec::new(),
            lease: Vec::new(),
            read: Vec::new(),
            write: Vec::new(),
        });
        match mode {
            Mode::Exclusive => count.exclusive.push(holder),
            Mode::Lease => count.lease.push(holder),
            Mode::Read => count.read.push(holder),
            Mode::Write => count.write.push(holder),
        }
    }
    for (path, count) in paths {
        if count.exclusive.len() > 1 {
            return Err(format!("exclusion: holders {:?} all hold {path}", count.exclusive));
        }
        if count.lease.len() > leases {
            return Err(format!("exclusion: holders {:?} hold leases of {path}, more than {leases}", count.lease));
        }
        if count.write.len() > 1 || (!count.write.is_empty() && !count.read.is_empty()) {
            return Err(format!("exclusion: writers {:?} and readers {:?} on {path}", count.write, count.read));
        }
    }
    Ok(())
}

/// The lease limit of semaphores whose size changes: a lease's listing came
/// after its node's create, so it saw every lease still held whose node is
/// older (a smaller czxid, its token); they and it are within the limit in
/// force at its grant (a shrink takes no lease away). With a fixed limit, the
/// newest lease makes this "at most N". Items: holder, path, token, limit.
pub fn check_lease_limits<'a, H: Debug + Clone>(
    leases: impl IntoIterator<Item = (H, &'a str, i64, usize)>,
) -> Result<(), String> {
    let mut paths: BTreeMap<&str, Vec<(H, i64, usize)>> = BTreeMap::new();
    for (holder, path, token, limit) in leases {
        paths.entry(path).or_default().push((holder, token, limit));
    }
    for (path, leases) in paths {
        for (_, token, limit) in &leases {
            let before: Vec<H> = leases.iter().filter(|l| l.1 <= *token).map(|l| l.0.clone()).collect();
            if before.len() > *limit {
                return Err(format!(
                    "exclusion: holders {before:?} hold leases of {path}, more than {limit} (the limit when the \
                     newest of them was granted)"
                ));
            }
        }
    }
    Ok(())
}

/// Fencing order per path: an exclusive (or write, or lease) hold's token is
/// greater than every earlier hold's; a read hold's is greater than every
/// earlier write hold's. The write rule counts earlier reads only because
/// the script never downgrades: a downgrade's read node is created after the
/// writers queued behind its write node, so its token is above theirs though
/// they hold after it (`FencingToken`'s docs say what a resource compares). Leases of a semaphore with several of them are
/// shared, and one can be reported late, so they are not ordered.
#[derive(Debug, Default)]
pub struct Fencing {
    max_token: BTreeMap<String, i64>,
    max_write_token: BTreeMap<String, i64>,
}

impl Fencing {
    /// Checks a new counting hold of `who` on `path` (node `node`) and
    /// records its token.
    pub fn check(
        &mut self,
        who: &str,
        path: &str,
        node: &str,
        mode: Mode,
        token: i64,
        leases: usize,
    ) -> Result<(), String> {
        if mode == Mode::Lease && leases > 1 {
            return Ok(());
        }
        let max = self.max_token.get(path).copied().unwrap_or(i64::MIN);
        let max_write = self.max_write_token.get(path).copied().unwrap_or(i64::MIN);
        let floor = if mode == Mode::Read { max_write } else { max };
        if token <= floor {
            return Err(format!(
                "fencing: {who} got {mode:?} {node} with token {token} after a hold with token {floor}"
            ));
        }
        self.max_token.insert(path.to_owned(), max.max(token));
        if mode != Mode::Read {
            self.max_write_token.insert(path.to_owned(), max_write.max(token));
        }
        Ok(())
    }
}
