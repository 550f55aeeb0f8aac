//! The pure "do I hold it?" rules, separate from the machines that apply them.
//!
//! Children are ordered by Curator's sort key: the text after the last
//! occurrence of the lock name (the sequence suffix), or the whole name when
//! the lock name does not occur (a [`LockName`](super::LockName) may choose
//! the trailing digits instead). Every child of the base path counts, foreign
//! ones included, and the sort is stable, exactly as Curator sorts.

use alloc::borrow::Cow;
use alloc::string::String;
use alloc::vec::Vec;
use core::cmp::Ordering;

/// Curator's mutex, semaphore-internal lock and lease name.
pub const LOCK_NAME: &str = "lock-";
/// Read-lock node marker.
pub const READ_NAME: &str = "__READ__";
/// Write-lock node marker.
pub const WRITE_NAME: &str = "__WRIT__";
/// Semaphore lease name.
pub const LEASE_NAME: &str = "lease-";

/// Curator's `standardFixForSorting`: everything after the last `lock_name`,
/// or the whole name when it is absent.
pub fn sort_key<'a>(name: &'a str, lock_name: &str) -> &'a str {
    match name.rfind(lock_name) {
        Some(idx) => name.get(idx + lock_name.len()..).unwrap_or(""),
        None => name,
    }
}

/// The read-write lock's key: strip through the last `__READ__`, then through
/// the last `__WRIT__`.
pub fn rw_sort_key(name: &str) -> &str {
    sort_key(sort_key(name, READ_NAME), WRITE_NAME)
}

/// How a recipe orders its base path's children.
#[derive(Debug, Clone, PartialEq, Eq)]
#[non_exhaustive]
pub enum SortKey {
    /// `standardFixForSorting` with this lock name.
    Standard(Cow<'static, str>),
    /// The read-write lock's combined key.
    ReadWrite,
    /// The trailing digits of the name (the sequence alone), or the whole
    /// name when it has none: [`SortRule::TrailingDigits`](super::SortRule).
    TrailingDigits,
}

impl SortKey {
    /// Curator's key for a lock named `name` (`lock-`, `lease-`, ...).
    pub const fn curator(name: &'static str) -> SortKey {
        SortKey::Standard(Cow::Borrowed(name))
    }

    /// The key of one child name.
    pub fn key<'a>(&self, name: &'a str) -> &'a str {
        match self {
            SortKey::Standard(lock_name) => sort_key(name, lock_name),
            SortKey::ReadWrite => rw_sort_key(name),
            SortKey::TrailingDigits => {
                let digits = name.bytes().rev().take_while(u8::is_ascii_digit).count();
                match name.get(name.len() - digits..) {
                    Some(key) if digits > 0 => key,
                    _ => name,
                }
            }
        }
    }

    /// Sorts children stably by key. Keys compare as UTF-16 code units, as
    /// Java's `String.compareTo` does (the same as byte order for ASCII).
    pub fn sort(&self, children: &mut [String]) {
        if children.len() < 2 {
            return;
        }
        let names = NodeName::sorted(children.iter_mut().map(core::mem::take).collect(), self);
        for (slot, name) in children.iter_mut().zip(names) {
            *slot = name.into_string();
        }
    }
}

/// A child name under a lock path with its sort key and sequence found once.
#[derive(Debug, Clone, PartialEq, Eq)]
pub(crate) struct NodeName {
    text: String,
    /// Where the sort key starts in `text` (the key is a suffix).
    key_at: usize,
    /// Curator's 10-digit sequence suffix, when the key is exactly one.
    sequence: Option<u64>,
}

impl NodeName {
    /// Parses `text` under the recipe's sort key.
    pub(crate) fn parse(text: String, key: &SortKey) -> NodeName {
        let key_at = text.len() - key.key(&text).len();
        let sequence = text.get(key_at..).filter(|k| is_sequence_key(k)).and_then(|k| k.parse().ok());
        NodeName { text, key_at, sequence }
    }

    /// Parses a listing and sorts it stably by key, as Curator sorts.
    pub(crate) fn sorted(children: Vec<String>, key: &SortKey) -> Vec<NodeName> {
        let mut names: Vec<NodeName> = children.into_iter().map(|c| NodeName::parse(c, key)).collect();
        names.sort_by(|a, b| key_cmp(a.key(), b.key()));
        names
    }

    /// The name as the server spelled it.
    pub(crate) fn as_str(&self) -> &str {
        &self.text
    }

    /// The sort key: the text after the lock name, or the whole name.
    pub(crate) fn key(&self) -> &str {
        self.text.get(self.key_at..).unwrap_or("")
    }

    /// The name, given back.
    pub(crate) fn into_string(self) -> String {
        self.text
    }

    /// The sequence number, when the key is Curator's 10-digit suffix: such a
    /// node can only be followed, never preceded, by nodes created later.
    pub(crate) fn sequence(&self) -> Option<u64> {
        self.sequence
    }
}

impl AsRef<str> for NodeName {
    fn as_ref(&self) -> &str {
        &self.text
    }
}

/// Orders two sort keys as Java's `String.compareTo` does.
pub(crate) fn key_cmp(a: &str, b: &str) -> Ordering {
    if a.is_ascii() && b.is_ascii() { a.cmp(b) } else { a.encode_utf16().cmp(b.encode_utf16()) }
}

/// True when a key is exactly Curator's 10-digit sequence suffix: such a
/// node can only be followed, never preceded, by nodes created later.
pub fn is_sequence_key(key: &str) -> bool {
    key.len() == 10 && key.bytes().all(|b| b.is_ascii_digit())
}

/// What a waiter should do after evaluating a listing.
#[derive(Debug, Clone, PartialEq, Eq)]
pub enum Verdict {
    /// We hold it.
    Acquired,
    /// Watch this child (a name from the listing) and wait.
    Watch(String),
    /// Our node is not in the listing: it vanished (expiry, deletion).
    Missing,
}

/// The standard rule (mutex, write lock, V1 semaphore): holding iff our
/// index is below `max_leases`; otherwise watch the child `max_leases` ahead.
pub fn standard<S: AsRef<str>>(sorted: &[S], ours: &str, max_leases: usize) -> Verdict {
    let Some(idx) = sorted.iter().position(|c| c.as_ref() == ours) else {
        return Verdict::Missing;
    };
    if idx < max_leases {
        return Verdict::Acquired;
    }
    match sorted.get(idx - max_leases) {
        Some(pred) => Verdict::Watch(String::from(pred.as_ref())),
        None => Verdict::Acquired,
    }
}

/// The read rule: holding iff no write node precedes ours; otherwise watch
/// the first write node in the list (Curator watches the first, not the
/// nearest). `holds_write` is the downgrade short-circuit.
pub fn read<S: AsRef<str>>(sorted: &[S], ours: &str, holds_write: bool) -> Verdict {
    if holds_write {
        return Verdict::Acquired;
    }
    let mut first_write = None;
    for (idx, name) in sorted.iter().map(AsRef::as_ref).enumerate() {
        if name.contains(WRITE_NAME) {
            first_write.get_or_insert(idx);
        } else if name.starts_with(ours) {
            return match first_write.and_then(|w| sorted.get(w)) {
                Some(writer) => Verdict::Watch(String::from(writer.as_ref())),
                None => Verdict::Acquired,
            };
        }
    }
    Verdict::Missing
}

/// The semaphore rule: the lease is held once the number of lease nodes,
/// ours included, is at most `max_leases`.
pub fn semaphore(children: &[String], ours: &str, max_leases: usize) -> Option<bool> {
    if !children.iter().any(|c| c == ours) {
        return None;
    }
    Some(children.len() <= max_leases)
}

/// How [`position`] counts.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum PositionRule {
    /// The first `n` nodes hold (mutex, write lock, V1 semaphore).
    Standard(usize),
    /// A reader holds once no writer is ahead.
    Read,
}

/// A waiter's place in the queue: how many nodes must go before ours holds
/// (1 is next in line; at least 1). Standard rule: our index minus the
/// holders' count plus one. Read rule: every node up to the last writer
/// ahead of ours.
pub fn position<S: AsRef<str>>(sorted: &[S], ours: &str, rule: PositionRule) -> usize {
    let ahead = ahead_of(sorted, ours);
    let position = match rule {
        PositionRule::Standard(max_leases) => (ahead.len() + 1).saturating_sub(max_leases.max(1)),
        PositionRule::Read => ahead.iter().rposition(|n| n.as_ref().contains(WRITE_NAME)).map_or(0, |w| w + 1),
    };
    position.max(1)
}

/// Which of a lock path's sorted children hold it now, each judged by the
/// rule its own waiter applies: `Standard(n)` the first `n` (mutex, V1
/// semaphore, a semaphore's leases); `Read` a read-write lock's queue, where
/// a writer holds as [`standard`] with 1 and a reader as [`read`]. For
/// tools that show a queue (`zoolock holders`); sends nothing.
pub fn holding<S: AsRef<str>>(sorted: &[S], rule: PositionRule) -> Vec<bool> {
    sorted
        .iter()
        .map(|name| {
            let name = name.as_ref();
            let verdict = match rule {
                PositionRule::Standard(max_leases) => standard(sorted, name, max_leases),
                PositionRule::Read if name.contains(WRITE_NAME) => standard(sorted, name, 1),
                PositionRule::Read => read(sorted, name, false),
            };
            verdict == Verdict::Acquired
        })
        .collect()
}

/// Children that sort strictly before ours under `key`: the ones we wait for.
pub fn ahead_of<'a, S: AsRef<str>>(sorted: &'a [S], ours: &str) -> &'a [S] {
    let idx = sorted.iter().position(|c| c.as_ref() == ours).unwrap_or(sorted.len());
    sorted.get(..idx).unwrap_or(&[])
}

/// Sorts a copy of `children` by `key`.
pub fn sorted(children: &[String], key: &SortKey) -> Vec<String> {
    let mut v = children.to_vec();
    key.sort(&mut v);
    v
}

#[cfg(test)]
mod tests {
    use super::*;
    use alloc::string::ToString;

    fn names(v: &[&str]) -> Vec<String> {
        v.iter().map(|s| s.to_string()).collect()
    }

    #[test]
    fn holding_marks_the_holders_of_each_rule() {
        let mutex = names(&["a-lock-0000000001", "b-lock-0000000002", "c-lock-0000000003"]);
        assert_eq!(holding(&mutex, PositionRule::Standard(1)), [true, false, false]);
        assert_eq!(holding(&mutex, PositionRule::Standard(2)), [true, true, false]);
        let rw =
            names(&["a-__READ__0000000001", "b-__READ__0000000002", "c-__WRIT__0000000003", "d-__READ__0000000004"]);
        assert_eq!(holding(&rw, PositionRule::Read), [true, true, false, false]);
        let rw = names(&["c-__WRIT__0000000001", "d-__READ__0000000002"]);
        assert_eq!(holding(&rw, PositionRule::Read), [true, false]);
        assert!(holding::<String>(&[], PositionRule::Read).is_empty());
    }

    #[test]
    fn sort_keys() {
        let cases = [
            ("_c_3f2504e0-4f89-41d3-9a0c-0305e82c3301-lock-0000000042", LOCK_NAME, "0000000042"),
            ("lock-0000000007", LOCK_NAME, "0000000007"),
            ("_c_8eb60557ba51e0da67eefc47467d3f34-lock-0000000031", LOCK_NAME, "0000000031"),
            (
                "514e5a831836450cb1a56c741e990fd8__lock__0000000032",
                LOCK_NAME,
                "514e5a831836450cb1a56c741e990fd8__lock__0000000032",
            ),
            ("readme", LOCK_NAME, "readme"),
            ("x-lock-lock-0000000001", LOCK_NAME, "0000000001"),
            ("ends-with-lock-", LOCK_NAME, ""),
            ("_c_u-lease-0000000003", LEASE_NAME, "0000000003"),
        ];
        for (name, lock, key) in cases {
            assert_eq!(sort_key(name, lock), key, "{name}");
        }
        assert_eq!(rw_sort_key("_c_u-__READ__0000000004"), "0000000004");
        assert_eq!(rw_sort_key("_c_u-__WRIT__0000000003"), "0000000003");
        assert_eq!(rw_sort_key("__WRIT__x__READ__0000000009"), "0000000009");
        assert_eq!(rw_sort_key("foreign"), "foreign");
    }

    #[test]
    fn sort_is_stable_and_counts_foreign_children() {
        let mut v = names(&["b-lock-0000000002", "zzz", "a-lock-0000000001", "0000", "c-lock-0000000001"]);
        SortKey::curator(LOCK_NAME).sort(&mut v);
        assert_eq!(v, names(&["0000", "a-lock-0000000001", "c-lock-0000000001", "b-lock-0000000002", "zzz"]));
        assert!(is_sequence_key("0000000001"));
        assert!(!is_sequence_key("-2147483648"));
        assert!(!is_sequence_key("zzz"));
    }

    /// Calls `check(sorted, ours, max)` for every position `ours` of our node
    /// among 1..=`up_to` plain lock nodes, with 1..3 leases.
    fn each_standard_case(up_to: usize, mut check: impl FnMut(&[String], usize, usize)) {
        for n in 1..=up_to {
            let sorted: Vec<String> = (0..n).map(|i| alloc::format!("n-lock-{i:010}")).collect();
            for ours in 0..n {
                for max in 1..=3usize {
                    check(&sorted, ours, max);
                }
            }
        }
    }

    /// Every position of our node among 0..4 children, with 1..3 leases.
    #[test]
    fn standard_rule_table() {
        each_standard_case(4, |sorted, ours, max| {
            let expected = if ours < max { Verdict::Acquired } else { Verdict::Watch(sorted[ours - max].clone()) };
            assert_eq!(standard(sorted, &sorted[ours], max), expected, "n={} ours={ours} max={max}", sorted.len());
            assert_eq!(standard(sorted, "missing-lock-0000000099", max), Verdict::Missing);
        });
        assert_eq!(standard::<String>(&[], "x", 1), Verdict::Missing);
    }

    /// `n` read-write lock nodes in sequence order; bit `i` of `mask` makes
    /// node `i` a writer.
    fn rw_names(n: usize, mask: u32) -> Vec<String> {
        (0..n)
            .map(|i| {
                let kind = if mask & (1 << i) != 0 { WRITE_NAME } else { READ_NAME };
                alloc::format!("_c_{i}-{kind}{i:010}")
            })
            .collect()
    }

    /// Every arrangement of up to 4 nodes, each a reader or a writer, with our
    /// reader at every position.
    #[test]
    fn read_rule_table() {
        for n in 1..=4usize {
            for mask in 0..(1u32 << n) {
                let sorted = rw_names(n, mask);
                for ours in (0..n).filter(|i| mask & (1 << i) == 0) {
                    let first_write = (0..ours).find(|i| mask & (1 << i) != 0);
                    let expected = match first_write {
                        Some(w) => Verdict::Watch(sorted[w].clone()),
                        None => Verdict::Acquired,
                    };
                    assert_eq!(read(&sorted, &sorted[ours], false), expected, "mask={mask:b} ours={ours}");
                    assert_eq!(read(&sorted, &sorted[ours], true), Verdict::Acquired);
                }
                assert_eq!(read(&sorted, "_c_x-__READ__0000000099", false), Verdict::Missing);
            }
        }
    }

    /// Every position of our node among up to 5 children: the standard
    /// rule with 1..3 holders, and the read rule over every reader/writer mix.
    #[test]
    fn position_table() {
        each_standard_case(5, |sorted, ours, max| {
            let want = if ours < max { 1 } else { ours - max + 1 };
            assert_eq!(position(sorted, &sorted[ours], PositionRule::Standard(max)), want);
        });
        for n in 1..=5usize {
            for mask in 0..(1u32 << n) {
                let sorted = rw_names(n, mask);
                for ours in 0..n {
                    let last_writer = (0..ours).rev().find(|i| mask & (1 << i) != 0);
                    let want = last_writer.map_or(1, |w| w + 1);
                    assert_eq!(position(&sorted, &sorted[ours], PositionRule::Read), want, "mask={mask:b} ours={ours}");
                }
            }
        }
    }

    #[test]
    fn semaphore_rule_table() {
        for n in 0..=4usize {
            let children: Vec<String> = (0..n).map(|i| alloc::format!("_c_{i}-lease-{i:010}")).collect();
            for max in 1..=4usize {
                for ours in 0..n {
                    assert_eq!(semaphore(&children, &children[ours], max), Some(n <= max), "n={n} max={max}");
                }
                assert_eq!(semaphore(&children, "missing", max), None);
            }
        }
    }

    #[test]
    fn names_are_parsed_once_with_key_and_sequence() {
        let n = NodeName::parse(String::from("_c_0f-lock-0000000042"), &SortKey::curator(LOCK_NAME));
        assert_eq!((n.as_str(), n.key(), n.sequence()), ("_c_0f-lock-0000000042", "0000000042", Some(42)));
        let foreign = NodeName::parse(String::from("readme"), &SortKey::curator(LOCK_NAME));
        assert_eq!((foreign.key(), foreign.sequence()), ("readme", None));
        let rw = NodeName::parse(String::from("_c_1-__WRIT__0000000007"), &SortKey::ReadWrite);
        assert_eq!((rw.key(), rw.sequence()), ("0000000007", Some(7)));
    }

    #[test]
    fn listings_sort_stably_by_key() {
        let children = ["b-lock-0000000002", "zzz", "a-lock-0000000001", "c-lock-0000000001"];
        let sorted =
            NodeName::sorted(children.iter().map(|c| String::from(*c)).collect(), &SortKey::curator(LOCK_NAME));
        let names: Vec<&str> = sorted.iter().map(NodeName::as_str).collect();
        assert_eq!(names, ["a-lock-0000000001", "c-lock-0000000001", "b-lock-0000000002", "zzz"]);
    }
}
