//! Curator's lock recipes as state machines.

pub(crate) mod config;
pub(crate) mod lock_core;
pub(crate) mod multilock;
pub(crate) mod mutex;
pub(crate) mod participants;
pub mod policy;
pub(crate) mod revoker;
pub(crate) mod rwlock;
pub(crate) mod semaphore;
pub(crate) mod semaphore_mutex;

pub use config::{LockConfig, OpPlan, RetryPolicy};
pub use lock_core::REVOKE_MESSAGE;
pub use multilock::MultiLock;
pub use mutex::Mutex;
pub use participants::Participants;
pub use revoker::Revoker;
pub use rwlock::{READ, ReadWriteLock, WRITE};
pub use semaphore::{SEMAPHORE_LEASES, SEMAPHORE_LOCKS, Semaphore};
pub use semaphore_mutex::SemaphoreMutex;
