//! "Lock" as one capability: acquire with a deadline, release, cancel and the
//! current hold, implemented by every lock kind. The shared-handle queue
//! ([`LockQueue`](super::LockQueue)), [`MultiLock`](super::MultiLock), the
//! driver and the simulator drive locks through it, never per recipe kind.

use alloc::boxed::Box;
use alloc::string::String;
use alloc::vec::Vec;

use crate::error::ApiMisuse;
use crate::recipe::{FencingToken, Recipe, RecipeEvent};
use crate::time::Instant;

/// Which lock of a recipe: `0` for a single lock; [`READ`](super::READ) or
/// [`WRITE`](super::WRITE) for the halves of a read-write lock.
pub type Part = usize;

/// The lock capability. A recipe exposes [`LockRecipe::parts`] independent
/// locks (one, or two for a read-write lock). Each part follows one cycle:
/// `acquire_part` → `Acquired` | `TimedOut` | `Failed`, then
/// `release_part` → `Released`. A recipe with one part reports its events
/// plainly; a recipe with several reports them as
/// [`RecipeEvent::Member`] with the part as index ([`part_event`] unwraps).
///
/// Reentrancy is not part of the capability: a part is acquired once and
/// released once. Counting holds is the caller's (the shared queue counts
/// them explicitly, as Curator does).
pub trait LockRecipe: Recipe {
    /// How many independent locks this recipe has.
    fn parts(&self) -> usize {
        1
    }

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
    /// `release_part`. For callers that let the recipe count (the trace
    /// replay); the shared queue counts re-entries itself.
    fn reenter_part(&mut self, now: Instant, part: Part) -> Result<(), ApiMisuse>;
}

/// The event of `part` in an event of a recipe with `parts` parts, or `None`
/// if it belongs to another part. With one part every event is its own.
pub fn part_event(parts: usize, part: Part, event: RecipeEvent) -> Option<RecipeEvent> {
    if parts <= 1 {
        return Some(event);
    }
    match event {
        RecipeEvent::Member { index, event } if index == part => Some(*event),
        _ => None,
    }
}

/// A boxed lock recipe, as composites hold them.
pub type BoxedLock = Box<dyn LockRecipe>;

/// The capability of a one-part lock, from its inherent `acquire`,
/// `release`, `cancel`, `holder` and `is_idle`.
macro_rules! one_part_lock {
    ($lock:ty, reentrant: $reentrant:expr) => {
        one_part_lock!($lock, reentrant: $reentrant, hold_nodes: |lock: &$lock| {
            lock.holder().map(|(node, _)| alloc::vec![String::from(node)]).unwrap_or_default()
        });
    };
    ($lock:ty, reentrant: $reentrant:expr, hold_nodes: $nodes:expr) => {
        impl LockRecipe for $lock {
            fn hold_nodes(&self, _part: Part) -> Vec<String> {
                ($nodes)(self)
            }

            fn acquire_part(&mut self, now: Instant, _part: Part, deadline: Option<Instant>) -> Result<(), ApiMisuse> {
                if self.holder().is_some() {
                    return Err(ApiMisuse::AlreadyHeld);
                }
                self.acquire(now, deadline)
            }

            fn release_part(&mut self, now: Instant, _part: Part) -> Result<(), ApiMisuse> {
                self.release(now)
            }

            fn cancel_part(&mut self, now: Instant, _part: Part) {
                self.cancel(now);
            }

            fn hold(&self, _part: Part) -> Option<(&str, FencingToken)> {
                self.holder()
            }

            fn ready(&self, _part: Part) -> bool {
                self.is_idle()
            }

            fn reentrant(&self) -> bool {
                $reentrant
            }

            fn reenter_part(&mut self, now: Instant, _part: Part) -> Result<(), ApiMisuse> {
                match (self.holder().is_some(), $reentrant) {
                    (false, _) => Err(ApiMisuse::NotHeld),
                    (true, false) => Err(ApiMisuse::NotReentrant),
                    (true, true) => self.acquire(now, None),
                }
            }
        }
    };
}

one_part_lock!(super::Mutex, reentrant: true);
one_part_lock!(super::SemaphoreMutex, reentrant: false);
one_part_lock!(super::MultiLock, reentrant: true, hold_nodes: |lock: &super::MultiLock| lock.hold_nodes());

impl LockRecipe for super::ReadWriteLock {
    fn parts(&self) -> usize {
        2
    }

    fn acquire_part(&mut self, now: Instant, part: Part, deadline: Option<Instant>) -> Result<(), ApiMisuse> {
        match part {
            super::READ if self.read_holder().is_none() => self.acquire_read(now, deadline),
            super::WRITE if self.write_holder().is_none() => self.acquire_write(now, deadline),
            super::READ | super::WRITE => Err(ApiMisuse::AlreadyHeld),
            _ => Err(ApiMisuse::NoSuchPart(part)),
        }
    }

    fn release_part(&mut self, now: Instant, part: Part) -> Result<(), ApiMisuse> {
        match part {
            super::READ => self.release_read(now),
            _ => self.release_write(now),
        }
    }

    fn cancel_part(&mut self, now: Instant, part: Part) {
        match part {
            super::READ => self.cancel_read(now),
            _ => self.cancel_write(now),
        }
    }

    fn hold(&self, part: Part) -> Option<(&str, FencingToken)> {
        match part {
            super::READ => self.read_holder(),
            super::WRITE => self.write_holder(),
            _ => None,
        }
    }

    fn ready(&self, part: Part) -> bool {
        self.is_idle(part)
    }

    fn reenter_part(&mut self, now: Instant, part: Part) -> Result<(), ApiMisuse> {
        match (part, self.hold(part).is_some()) {
            (_, false) => Err(ApiMisuse::NotHeld),
            (super::READ, true) => self.acquire_read(now, None),
            (_, true) => self.acquire_write(now, None),
        }
    }
}
