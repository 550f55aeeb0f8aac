//! Critical sections recorded by mixed-fleet tests (Curator, kazoo and
//! zoolock contending on one path), and the checks on them. Modes are the
//! simulator's ([`zoolock_conformance::sim::Mode`]).

use zoolock_conformance::sim::Mode;

/// One critical section: who held, how, on which node, when (µs).
#[derive(Debug, Clone)]
pub(crate) struct Hold {
    pub(crate) who: String,
    pub(crate) mode: Mode,
    pub(crate) node: String,
    pub(crate) enter: i64,
    pub(crate) exit: i64,
}

fn overlap(a: &Hold, b: &Hold) -> bool {
    a.enter < b.exit && b.enter < a.exit
}

/// Two reads never conflict; leases are counted by [`max_concurrent`].
fn conflicting(a: &Hold, b: &Hold) -> bool {
    !matches!((a.mode, b.mode), (Mode::Read, Mode::Read) | (Mode::Lease, Mode::Lease))
}

/// The 10-digit sequence suffix of a lock node.
pub(crate) fn seq(node: &str) -> i64 {
    let tail = node.get(node.len().saturating_sub(10)..).unwrap_or("");
    tail.parse().unwrap_or_else(|_| panic!("no sequence suffix in {node:?}"))
}

/// No two conflicting holds overlap; with `in_order`, conflicting holds were
/// also granted in their nodes' sequence order (not where an emptied
/// container parent may be reaped and its sequence restart).
pub(crate) fn check_exclusion(holds: &[Hold], in_order: bool) {
    for (i, a) in holds.iter().enumerate() {
        assert!(a.enter <= a.exit, "{a:?}");
        for b in &holds[i + 1..] {
            if !conflicting(a, b) {
                continue;
            }
            assert!(!overlap(a, b), "critical sections overlap:\n  {a:?}\n  {b:?}");
            if in_order {
                let (first, second) = if a.enter < b.enter { (a, b) } else { (b, a) };
                assert!(
                    seq(&first.node) < seq(&second.node),
                    "granted out of sequence order:\n  {first:?}\n  {second:?}"
                );
            }
        }
    }
}

/// The most holds at one instant (exits before enters at equal times).
pub(crate) fn max_concurrent(holds: &[Hold]) -> usize {
    let mut events: Vec<(i64, i32)> = holds.iter().flat_map(|h| [(h.enter, 1), (h.exit, -1)]).collect();
    events.sort_unstable();
    let (mut now, mut max) = (0i32, 0i32);
    for (_, delta) in events {
        now += delta;
        max = max.max(now);
    }
    usize::try_from(max).unwrap_or(0)
}
