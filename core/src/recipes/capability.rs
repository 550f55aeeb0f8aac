//! "Lock" as one capability: acquire with a deadline, release, cancel and the
//! current hold, implemented by every lock kind. The shared-handle queue
//! ([`LockQueue`](super::LockQueue)), [`MultiLock`](super::MultiLock), the
//! driver and the simulator drive locks through it, never per recipe kind.

use alloc::boxed::Box;
use alloc::string::String;
use alloc::vec::Vec;

use super::lock_event::PartEvent;
use crate::error::ApiMisuse;
use crate::path::ZkPath;
use crate::recipe::{FencingToken, Recipe};
use crate::time::Instant;

/// Which lock of a recipe: a one-part lock has only [`Part::Whole`]; a
/// read-write lock has [`Part::Read`] and [`Part::Write`].
///
/// Every part names a hold on every lock, at least as strong as asked
/// ([`LockRecipe::part`]): the whole of a read-write lock is its write half
/// (exclusive), and either half of a one-part lock is the lock itself.
///
/// A closed set (not `#[non_exhaustive]`): every lock is one of these
/// shapes, so matches on it are exhaustive and a new part is a compile error
/// wherever it must be handled.
#[derive(Debug, Clone, Copy, PartialEq, Eq, PartialOrd, Ord, Hash)]
pub enum Part {
    /// The lock itself (a mutex, a semaphore mutex, a multi-lock).
    Whole,
    /// The shared (read) half of a read-write lock.
    Read,
    /// The exclusive (write) half of a read-write lock.
    Write,
}

impl Part {
    /// The part's place among its lock's parts, which is also the
    /// outermost [`RecipeEvent::Member`](crate::RecipeEvent::Member) index of a
    /// read-write lock half's events at the client: 0 for `Whole` and
    /// `Read`, 1 for `Write`.
    pub fn index(self) -> usize {
        match self {
            Part::Whole | Part::Read => 0,
            Part::Write => 1,
        }
    }
}

/// The lock capability. A recipe exposes [`LockRecipe::parts`] independent
/// locks (one, or two for a read-write lock). Each part follows one cycle:
/// `acquire_part` → `Acquired` | `TimedOut` | `Failed`, then
/// `release_part` → `Released`. Every event is a [`PartEvent`] naming its
/// part ([`Part::Whole`] for a one-part lock).
///
/// Reentrancy is not part of the capability: a part is acquired once and
/// released once. Counting holds is the caller's (the shared queue counts
/// them explicitly, as Curator does).
pub trait LockRecipe: Recipe<Event = PartEvent> {
    /// The independent locks this recipe has, in [`Part::index`] order.
    fn parts(&self) -> &'static [Part] {
        &[Part::Whole]
    }

    /// The part of this lock that `asked` names: itself if it has it,
    /// else the one at least as strong.
    fn part(&self, asked: Part) -> Part;

    /// Starts acquiring `part`, waiting until `deadline` (`None`: forever).
    fn acquire_part(&mut self, now: Instant, part: Part, deadline: Option<Instant>) -> Result<(), ApiMisuse>;

    /// Releases the hold of `part`: its node is deleted (guaranteed).
    fn release_part(&mut self, now: Instant, part: Part) -> Result<(), ApiMisuse>;

    /// Abandons an acquire of `part` in progress; nothing is left behind and
    /// nothing is reported.
    fn cancel_part(&mut self, now: Instant, part: Part);

    /// The node and fencing token of `part` while held.
    fn hold(&self, part: Part) -> Option<(&str, FencingToken)>;

    /// Every node whose existence proves the hold of `part` (empty when not
    /// held): the lock node, or each member's for a multi-lock. A fenced
    /// write checks them all.
    fn hold_nodes(&self, part: Part) -> Vec<String> {
        self.hold(part).map(|(node, _)| alloc::vec![String::from(node)]).unwrap_or_default()
    }

    /// The hold of each member of `part` while held, in acquisition order:
    /// one entry ([`LockRecipe::hold`]) for a plain lock, one per member
    /// for a multi-lock (`None` for a member not holding).
    fn member_holds(&self, part: Part) -> Vec<Option<(&str, FencingToken)>> {
        alloc::vec![self.hold(part)]
    }

    /// Whether `part` can start an acquire now: it is neither held nor
    /// still busy with the previous cycle (a release in flight, a cancelled
    /// multi-lock rolling back). A queue waits until it is; a refusal after
    /// that is the caller's mistake (an upgrade).
    fn ready(&self, part: Part) -> bool;

    /// Whether a holder may take `part` again (explicit reentrancy). Curator's
    /// semaphore mutex is not reentrant.
    fn reentrant(&self) -> bool {
        true
    }

    /// Takes the held `part` once more, reporting `Acquired` again, as
    /// Curator's reentrant acquire does; each re-entry needs its own
    /// `release_part`. The recipe's count is the only one: the shared queue
    /// re-enters through this too.
    fn reenter_part(&mut self, now: Instant, part: Part) -> Result<(), ApiMisuse>;

    /// How many holds of `part` are outstanding (0 when not held): the
    /// last `release_part` deletes the node.
    fn hold_count(&self, part: Part) -> u32;

    /// The lock path; `None` for a multi-lock (each member has its own).
    /// A clone shares it (see [`ZkPath`]): a handle names the lock by it
    /// without a copy of its own.
    fn path(&self) -> Option<&ZkPath> {
        None
    }
}

/// A boxed lock recipe, as composites hold them.
pub type BoxedLock = Box<dyn LockRecipe>;

/// A lock with one part ([`Part::Whole`]): what it must offer to get the
/// lock capability, which the blanket impl builds from it (every part asked
/// of it is the lock itself).
pub trait OnePartLock: Recipe<Event = PartEvent> {
    /// Starts acquiring, waiting until `deadline` (`None`: forever).
    fn acquire(&mut self, now: Instant, deadline: Option<Instant>) -> Result<(), ApiMisuse>;
    /// Releases one hold.
    fn release(&mut self, now: Instant) -> Result<(), ApiMisuse>;
    /// Abandons an acquire in progress.
    fn cancel(&mut self, now: Instant);
    /// The node and fencing token while held.
    fn holder(&self) -> Option<(&str, FencingToken)>;
    /// Neither held nor acquiring nor releasing.
    fn is_idle(&self) -> bool;
    /// Whether a holder may take it again (see [`LockRecipe::reentrant`]).
    fn reentrant(&self) -> bool;
    /// Outstanding holds (see [`LockRecipe::hold_count`]): one while held,
    /// for a lock that is not reentrant.
    fn hold_count(&self) -> u32 {
        u32::from(self.holder().is_some())
    }
    /// Every node proving the hold (see [`LockRecipe::hold_nodes`]).
    fn hold_nodes(&self) -> Vec<String> {
        self.holder().map(|(node, _)| alloc::vec![String::from(node)]).unwrap_or_default()
    }
    /// Each member's hold (see [`LockRecipe::member_holds`]).
    fn member_holds(&self) -> Vec<Option<(&str, FencingToken)>> {
        alloc::vec![self.holder()]
    }
    /// The lock path (see [`LockRecipe::path`]).
    fn path(&self) -> Option<&ZkPath> {
        None
    }
}

impl<L: OnePartLock> LockRecipe for L {
    fn part(&self, _asked: Part) -> Part {
        Part::Whole
    }

    fn hold_nodes(&self, _part: Part) -> Vec<String> {
        OnePartLock::hold_nodes(self)
    }

    fn member_holds(&self, _part: Part) -> Vec<Option<(&str, FencingToken)>> {
        OnePartLock::member_holds(self)
    }

    fn acquire_part(&mut self, now: Instant, _part: Part, deadline: Option<Instant>) -> Result<(), ApiMisuse> {
        if self.holder().is_some() {
            return Err(ApiMisuse::AlreadyHeld);
        }
        OnePartLock::acquire(self, now, deadline)
    }

    fn release_part(&mut self, now: Instant, _part: Part) -> Result<(), ApiMisuse> {
        OnePartLock::release(self, now)
    }

    fn cancel_part(&mut self, now: Instant, _part: Part) {
        OnePartLock::cancel(self, now);
    }

    fn hold(&self, _part: Part) -> Option<(&str, FencingToken)> {
        self.holder()
    }

    fn ready(&self, _part: Part) -> bool {
        self.is_idle()
    }

    fn reentrant(&self) -> bool {
        OnePartLock::reentrant(self)
    }

    fn hold_count(&self, _part: Part) -> u32 {
        OnePartLock::hold_count(self)
    }

    fn path(&self) -> Option<&ZkPath> {
        OnePartLock::path(self)
    }

    fn reenter_part(&mut self, now: Instant, _part: Part) -> Result<(), ApiMisuse> {
        match (self.holder().is_some(), OnePartLock::reentrant(self)) {
            (false, _) => Err(ApiMisuse::NotHeld),
            (true, false) => Err(ApiMisuse::NotReentrant),
            (true, true) => OnePartLock::acquire(self, now, None),
        }
    }
}
