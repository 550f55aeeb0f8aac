//! [`LockName`]: how a lock's nodes are named and ordered, as Curator's
//! `LockInternalsDriver` lets a recipe choose (`lock-` for
//! `InterProcessMutex` and `LeaderSelector`, `latch-` for `LeaderLatch`).

use alloc::borrow::Cow;
use alloc::string::String;

use super::policy::SortKey;
use crate::path::{PathError, ZkPath};

/// Curator's `LeaderLatch` node name.
pub const LATCH_NAME: &str = "latch-";

/// How a lock path's children are ordered.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Default)]
#[non_exhaustive]
pub enum SortRule {
    /// Curator's `standardFixForSorting`: the text after the last occurrence
    /// of the name (the server's sequence suffix), or the whole child name
    /// when the name does not occur. Every Curator lock and latch sorts so.
    #[default]
    AfterName,
    /// The trailing digits of each child name, whatever precedes them
    /// (ZooKeeper's own `WriteLock` and `LeaderElectionSupport` recipes and
    /// kazoo order by the sequence alone, and put more than the name before
    /// it, such as a session id). A child without trailing digits sorts by
    /// its whole name. The fast handoff and the look-ahead are off under
    /// this rule: a wrapped counter's `-` cannot be told from a name's own
    /// dash, so a listing cannot prove that no later node sorts ahead.
    TrailingDigits,
}

/// Why a lock name was refused.
#[derive(Debug, Clone, PartialEq, Eq, thiserror::Error)]
#[non_exhaustive]
pub enum LockNameError {
    /// The name is empty: the sort key would be the whole child name.
    #[error("a lock name must not be empty")]
    Empty,
    /// The name contains `/`: it names one node, not a path.
    #[error("a lock name must not contain '/'")]
    Slash,
    /// The name ends in a digit, which would run into the server's sequence
    /// suffix and make the sort key ambiguous.
    #[error("a lock name must not end in a digit")]
    EndsInDigit,
    /// The name has a character ZooKeeper refuses in a node name.
    #[error("invalid lock name: {0}")]
    Path(PathError),
}

/// A lock's node name and sort rule (Curator's `LockInternalsDriver`):
/// nodes are `[_c_<uuid>-]<name><sequence>`, ephemeral-sequential, ordered by
/// [`SortRule`]. The default is Curator's `lock-`, protected, sorted after
/// the name: every Curator layout.
///
/// The protection prefix (`_c_<uuid>-`, Curator's `withProtection`) is what
/// lets an acquire find its node when the create's reply was lost, and a
/// cancelled acquire delete a node it never heard of. Without it such a node
/// cannot be told from another client's: it keeps its place in the queue
/// (ahead of a retry's new node) until the session ends. Turn it off only for
/// a foreign layout that has no such prefix.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct LockName {
    name: Cow<'static, str>,
    protected: bool,
    sort: SortRule,
}

impl Default for LockName {
    fn default() -> Self {
        LockName::lock()
    }
}

impl LockName {
    /// Curator's `lock-` (`InterProcessMutex`, `LeaderSelector`), protected.
    pub fn lock() -> LockName {
        LockName::known(super::policy::LOCK_NAME)
    }

    /// Curator's `latch-` (`LeaderLatch`), protected.
    pub fn latch() -> LockName {
        LockName::known(LATCH_NAME)
    }

    /// One of Curator's own names, known valid.
    pub(crate) const fn known(name: &'static str) -> LockName {
        LockName { name: Cow::Borrowed(name), protected: true, sort: SortRule::AfterName }
    }

    /// A custom name, protected and sorted after the name.
    ///
    /// Fails when `name` is empty, contains `/`, ends in a digit, or has a
    /// character ZooKeeper refuses in a node name.
    pub fn new(name: &str) -> Result<LockName, LockNameError> {
        if name.is_empty() {
            return Err(LockNameError::Empty);
        }
        if name.contains('/') {
            return Err(LockNameError::Slash);
        }
        if name.ends_with(|c: char| c.is_ascii_digit()) {
            return Err(LockNameError::EndsInDigit);
        }
        // The node the server will make, as ZooKeeper checks it.
        let mut probe = String::with_capacity(name.len() + 11);
        probe.push('/');
        probe.push_str(name);
        probe.push_str("0000000000");
        ZkPath::new(&probe).map_err(LockNameError::Path)?;
        Ok(LockName { name: Cow::Owned(String::from(name)), protected: true, sort: SortRule::AfterName })
    }

    /// With or without the `_c_<uuid>-` protection prefix (on by default;
    /// see the type's documentation for what turning it off costs).
    pub fn with_protection(mut self, protected: bool) -> LockName {
        self.protected = protected;
        self
    }

    /// With sort rule `sort`.
    pub fn with_sort(mut self, sort: SortRule) -> LockName {
        self.sort = sort;
        self
    }

    /// The name that precedes the sequence.
    pub fn as_str(&self) -> &str {
        &self.name
    }

    /// Whether nodes carry the protection prefix.
    pub fn is_protected(&self) -> bool {
        self.protected
    }

    /// The sort rule.
    pub fn sort_rule(&self) -> SortRule {
        self.sort
    }

    /// The key the lock's children are ordered by (for
    /// [`Participants`](super::Participants) of a lock with this name).
    pub fn sort_key(&self) -> SortKey {
        match self.sort {
            SortRule::AfterName => SortKey::Standard(self.name.clone()),
            SortRule::TrailingDigits => SortKey::TrailingDigits,
        }
    }

    /// Whether a listing's 10-digit keys are the server's sequence suffixes,
    /// the premise of the fast handoff and the look-ahead.
    pub(crate) fn keys_are_sequences(&self) -> bool {
        self.sort == SortRule::AfterName
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn names_are_checked_at_the_boundary() {
        assert_eq!(LockName::new(""), Err(LockNameError::Empty));
        assert_eq!(LockName::new("a/b-"), Err(LockNameError::Slash));
        assert_eq!(LockName::new("n1"), Err(LockNameError::EndsInDigit));
        assert!(matches!(LockName::new("bad\u{1}-"), Err(LockNameError::Path(_))));
        let n = LockName::new("n_").unwrap();
        assert_eq!((n.as_str(), n.is_protected(), n.sort_rule()), ("n_", true, SortRule::AfterName));
        assert_eq!(LockName::default(), LockName::lock());
        assert_eq!(LockName::new("latch-").unwrap(), LockName::latch());
    }

    #[test]
    fn the_sort_key_follows_the_rule() {
        let latch = LockName::latch().sort_key();
        assert_eq!(latch.key("_c_0f-latch-0000000004"), "0000000004");
        let digits = LockName::new("x-").unwrap().with_sort(SortRule::TrailingDigits).sort_key();
        assert_eq!(digits.key("x-72057594037927936-0000000004"), "0000000004");
        assert_eq!(digits.key("foreign"), "foreign");
    }
}
