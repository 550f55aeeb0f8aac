//! Curator's lock recipes as state machines.

/// The [`Recipe`](crate::Recipe) `poll_op` and `poll_event` of a recipe
/// whose outputs wait in its outbox `self.out`, drained in order.
macro_rules! outbox_outputs {
    () => {
        fn poll_op(&mut self) -> Option<crate::recipe::RecipeOp> {
            self.out.poll_op()
        }

        fn poll_event(&mut self) -> Option<crate::recipe::RecipeEvent> {
            self.out.poll_event()
        }
    };
}
pub(crate) use outbox_outputs;

/// The [`Recipe`](crate::Recipe) outputs of a one-shot or watch-only recipe
/// with no timer: its outbox drained in order.
macro_rules! timerless_outputs {
    () => {
        fn handle_timeout(&mut self, _now: crate::time::Instant) {}

        crate::recipes::outbox_outputs!();

        fn poll_timeout(&self) -> Option<crate::time::Instant> {
            None
        }
    };
}
pub(crate) use timerless_outputs;

pub(crate) mod capability;
pub(crate) mod config;
pub(crate) mod kit;
pub(crate) mod lock_core;
pub(crate) mod multilock;
pub(crate) mod mutex;
pub(crate) mod participants;
pub mod policy;
pub(crate) mod queue;
pub(crate) mod revoker;
pub(crate) mod rwlock;
pub(crate) mod semaphore;
pub(crate) mod semaphore_mutex;
pub(crate) mod shared_count;
pub(crate) mod shared_lock;
pub(crate) mod shared_semaphore;
pub(crate) mod spec;

pub use capability::{BoxedLock, LockRecipe, Part, part_event};
pub use config::{LockConfig, OpPlan, RetryPolicy};
pub use lock_core::REVOKE_MESSAGE;
pub use multilock::MultiLock;
pub use mutex::Mutex;
pub use participants::Participants;
pub use queue::Ticket;
pub use revoker::Revoker;
pub use rwlock::{READ, ReadWriteLock, WRITE};
pub use semaphore::{SEMAPHORE_LEASES, SEMAPHORE_LOCKS, Semaphore};
pub use semaphore_mutex::SemaphoreMutex;
pub use shared_count::{SharedCount, count_bytes, count_value};
pub use shared_lock::SharedLock;
pub use shared_semaphore::SharedSemaphore;
pub use spec::{Layout, LockKind, LockSpec, SemaphoreSize, SemaphoreSpec};
