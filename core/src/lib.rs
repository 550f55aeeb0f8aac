//! zoolock's sans-IO core: the ZooKeeper session, the client multiplexer and
//! Curator's lock recipes, as state machines.
//!
//! [`Client`] is the entry point: feed it bytes ([`Client::handle_bytes`]),
//! connection events and the time, and drain what it wants done
//! ([`Client::poll_io`], [`Client::poll_transmit`], [`Client::poll_timeout`])
//! and what happened ([`Client::poll_event`]). Recipes ([`Mutex`](crate::recipes::Mutex),
//! [`ReadWriteLock`](crate::recipes::ReadWriteLock), [`Semaphore`](crate::recipes::Semaphore), ...) are added to it with [`Client::add`]
//! and commanded with [`Client::with`]. The drive-loop contract is on
//! [`Session`] and [`Client`]. In the repository, `core/examples/hand_driven.rs`
//! drives it over a blocking socket and `core/examples/mio_locks.rs` over a mio
//! event loop; `zoolock-driver` is the async loop that the tokio, smol and
//! blocking crates use.
//!
//! ```
//! use zoolock_core::{Client, ConnectString, Instant, IoCommand, SessionConfig, ZkPath, recipes::{LockConfig, Mutex}};
//!
//! let now = Instant::from_millis(0);
//! let config = SessionConfig::new(ConnectString::parse("127.0.0.1:2181").unwrap(), 42);
//! let mut client = Client::new(config, now);
//! let lock = client.add(now, Mutex::new(ZkPath::new("/app/lock").unwrap(), LockConfig::new(7)));
//! client.with(now, lock, |m, now| m.acquire(now, None)).unwrap().unwrap();
//! // The acquire waits for a session. The client asks for a connection at
//! // its first deadline, which is now.
//! assert_eq!(client.poll_timeout(), Some(now));
//! client.handle_timeout(now);
//! assert!(matches!(client.poll_io(), Some(IoCommand::Connect { .. })));
//! ```
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

mod acl;
mod client;
mod connect_string;
mod ensemble;
mod error;
pub mod gzip;
mod hold_status;
mod io;
mod machine;
mod op;
mod path;
mod recipe;
pub mod recipes;
mod rng;
mod session;
mod slack;
mod time;

pub use acl::{AclParseError, AclPolicy, parse_acl};
pub use client::{Client, ClientEvent, Handle, IN_FLIGHT_WINDOW, NewRecipe, RecipeId, Reserved, Reserver};
pub use connect_string::{ConnectString, ConnectStringError, DEFAULT_PORT, HostAddr};
pub use ensemble::{CONFIG_PATH, EnsembleConfig, EnsembleConfigError, Member, MemberRole};
pub use error::{ApiMisuse, Misbehavior, RequestError, SessionError};
pub use gzip::{Compression, GzipError};
pub use hold_status::{HoldChange, HoldStatus, LossReason};
pub use io::Endpoint;
pub use machine::{ClientRecipe, CoreMachine, Machine, Machines};
pub use op::Op;
pub use path::{PathError, PathProblem, ZkPath};
pub use recipe::{FencingToken, OpId, Participant, Recipe, RecipeEvent, RecipeOp};
pub use rng::Rng;
pub use session::{
    ChrootPolicy, ConnectionState, DEFAULT_MAX_MISBEHAVING_CONNECTIONS, DigestMd5Client, EnsembleUpdate, HostId,
    IoCommand, ROOT_RETRIES, RequestId, RequestTiming, SaslClient, SaslConfig, SaslError, SaslMechanism, Session,
    SessionConfig, SessionEvent, SessionLease, SessionStatus, Suspension, TIMINGS_KEPT, WatchEvent, WatchKind,
    WatcherId,
};
pub use time::Instant;
pub use zoolock_wire as wire;
