//! zoolock's sans-IO core: the ZooKeeper session, the client multiplexer and
//! (soon) Curator's lock recipes, as state machines.
//!
//! Determinism: nothing here reads a clock, draws OS randomness, opens a
//! socket, spawns, locks or awaits. Every input carries `now`, and all
//! randomness comes from the seed in the configuration, so the same inputs
//! always give the same outputs.
#![no_std]
#![warn(clippy::unwrap_used, clippy::expect_used, clippy::panic, clippy::indexing_slicing)]

extern crate alloc;
#[cfg(feature = "std")]
extern crate std;

mod client;
mod connect_string;
mod error;
mod op;
mod path;
mod recipe;
pub mod recipes;
mod rng;
mod session;
mod time;

pub use client::{Client, ClientEvent, RecipeId};
pub use connect_string::{ConnectString, ConnectStringError, DEFAULT_PORT, HostAddr};
pub use error::{ApiMisuse, Misbehavior, RequestError, SessionError};
pub use op::Op;
pub use path::{PathError, ZkPath};
pub use recipe::{FencingToken, OpId, Participant, Recipe, RecipeEvent, RecipeOp};
pub use recipes::{LockConfig, Mutex, OpPlan, RetryPolicy};
pub use recipes::{MultiLock, Participants, ReadWriteLock, Revoker};
pub use recipes::{Semaphore, SemaphoreMutex};
pub use rng::Rng;
pub use session::{
    ConnectionState, HostId, IoCommand, RequestId, Session, SessionConfig, SessionEvent, SessionStatus, WatchEvent,
    WatchKind, WatcherId,
};
pub use time::Instant;
pub use zoolock_wire as wire;
