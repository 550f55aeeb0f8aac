//! Curator's lock recipes as state machines.

pub(crate) mod config;
pub(crate) mod lock_core;
pub(crate) mod mutex;
pub mod policy;

pub use config::{LockConfig, OpPlan, RetryPolicy};
pub use lock_core::REVOKE_MESSAGE;
pub use mutex::Mutex;
