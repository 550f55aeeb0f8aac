//! Curator's lock recipes as state machines.

pub(crate) mod capability;
pub(crate) mod config;
pub(crate) mod election;
pub(crate) mod kit;
pub(crate) mod lease_queue;
pub(crate) mod lock_core;
pub(crate) mod lock_event;
pub(crate) mod lock_queue;
pub(crate) mod multilock;
pub(crate) mod mutex;
pub(crate) mod naming;
pub(crate) mod node_layout;
pub(crate) mod observer;
pub(crate) mod participants;
pub mod policy;
pub(crate) mod queue;
pub(crate) mod revoker;
pub(crate) mod rwlock;
pub(crate) mod semaphore;
pub(crate) mod semaphore_mutex;
pub(crate) mod shared_count;
pub(crate) mod spec;

pub use crate::recipe::Ticket;
pub use capability::{BoxedLock, LockRecipe, OnePartLock, Part};
pub use config::{LockConfig, OpPlan, RetryPolicy, SharedLockConfig};
pub use election::{
    Election, ElectionEvent, ElectionKind, ElectionParticipant, LeadershipPolicy, Term, TermFailure, election_leader,
    election_participants,
};
pub use kit::Outbox;
pub use lease_queue::{LeaseQueue, LeaseQueueEvent};
pub use lock_core::REVOKE_MESSAGE;
pub use lock_event::{LockEvent, PartEvent, QueueEvent};
pub use lock_queue::LockQueue;
pub use multilock::MultiLock;
pub use mutex::Mutex;
pub use naming::{LATCH_NAME, LockName, LockNameError, SortRule};
pub use node_layout::{NodeLayout, Recognised, recognise};
pub use observer::{Observer, ObserverEvent};
pub use participants::{Participants, ParticipantsEvent};
pub use revoker::{RevokeEvent, Revoker};
pub use rwlock::ReadWriteLock;
pub use semaphore::{SEMAPHORE_LEASES, SEMAPHORE_LOCKS, Semaphore, SemaphoreEvent};
pub use semaphore_mutex::SemaphoreMutex;
pub use shared_count::{CountEvent, SharedCount, count_bytes, count_value};
pub use spec::{Layout, LockKind, LockSpec, SemaphoreSize, SemaphoreSpec};
