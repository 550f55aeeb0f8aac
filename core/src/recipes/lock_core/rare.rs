//! The state only a contended, revocable, timed, counted or recovering
//! lock needs, kept out of [`LockCore`] so that thousands of uncontended
//! locks do not each carry it.

use super::*;

/// What only a contended, revocable, timed, counted or recovering lock
/// needs: made on first use and dropped once back to empty
/// ([`LockCore::tidy`]), so an uncontended lock, idle or held, carries none.
#[derive(Debug)]
pub(super) struct Rare {
    /// How the acquire under way names its node (a downgrade's fixed read
    /// node).
    pub(super) shape: Shape,
    /// Last sorted listing while waiting, for the fast handoff. Standard
    /// rule: only the [`LISTING_WINDOW`] nodes nearest ahead of ours, and
    /// ours (see [`LockCore::keep_window`]).
    pub(super) last_listing: Vec<NodeName>,
    /// The look-ahead node whose watch this session holds (or is arming)
    /// and has not seen fire, whatever the attempt: forgotten when the watch
    /// fires or fails to arm, when the session ends, or when it stops being
    /// the look-ahead (see [`LockCore::arm_look`]).
    pub(super) look: Option<String>,
    /// The node each look-ahead getData in flight is on.
    pub(super) look_ops: Vec<(OpId, String)>,
    /// Every name of the full last listing had a Curator sequence key.
    pub(super) listing_keyed: bool,
    /// Nodes further ahead than the window were left out of `last_listing`.
    pub(super) listing_truncated: bool,
    /// The last `Queued { position, total }` reported for this acquire.
    pub(super) queued: Option<(usize, usize)>,
    /// Count rule: how many children the last listing held.
    pub(super) listed: Option<usize>,
    /// Count rule: the limit the held node was granted under.
    pub(super) granted_under: Option<usize>,
    /// Abandoned creates whose reply was lost: protection prefixes to find
    /// under the base path and delete, sorted, each with its lookup in
    /// flight.
    pub(super) orphans: Vec<(String, Option<OpId>)>,
    /// The node of a hold its deletion made `Lost` (seen by a watch or a
    /// read), for an owner that reports losses per node (the semaphore's
    /// leases): see [`LockCore::take_lost`].
    pub(super) lost: Option<ZkPath>,
    /// While held with [`LockConfig::max_hold`]: when the hold expires.
    pub(super) hold_until: Option<Instant>,
}

impl Rare {
    pub(super) const EMPTY: Rare = Rare {
        shape: Shape::Sequential,
        last_listing: Vec::new(),
        look: None,
        look_ops: Vec::new(),
        listing_keyed: false,
        listing_truncated: false,
        queued: None,
        listed: None,
        granted_under: None,
        orphans: Vec::new(),
        lost: None,
        hold_until: None,
    };

    /// Nothing in it differs from [`Rare::EMPTY`].
    pub(super) fn is_empty(&self) -> bool {
        self.shape == Shape::Sequential
            && self.last_listing.is_empty()
            && self.look.is_none()
            && self.look_ops.is_empty()
            && !self.listing_keyed
            && !self.listing_truncated
            && self.queued.is_none()
            && self.listed.is_none()
            && self.granted_under.is_none()
            && self.orphans.is_empty()
            && self.lost.is_none()
            && self.hold_until.is_none()
    }
}

/// What a lock without [`Rare`] state reads.
static NO_RARE: Rare = Rare::EMPTY;

impl LockCore {
    /// The rare state, or [`Rare::EMPTY`] when there is none.
    pub(super) fn rare(&self) -> &Rare {
        self.rare.as_deref().unwrap_or(&NO_RARE)
    }

    /// The rare state, made now if there is none.
    pub(super) fn rare_mut(&mut self) -> &mut Rare {
        self.rare.get_or_insert_with(|| Box::new(Rare::EMPTY))
    }

    /// Drops the rare state once nothing in it is set: after every input
    /// and command.
    pub(super) fn tidy(&mut self) {
        if self.rare.as_deref().is_some_and(Rare::is_empty) {
            self.rare = None;
        }
    }
}
