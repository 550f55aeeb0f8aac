//! zoolock conformance: reading recorded ZooKeeper traces, decoding them with
//! `zoolock-wire`, and rendering the result as JSON.
//!
//! * [`trace`] reads `zk-trace/1` files and scenario folders.
//! * [`decode`] decodes one connection's frames in order.
//! * [`blocking`] drives a session over blocking TCP for real-server tests.
//! * [`json`] renders decoded frames for humans and diff tools.
//! * [`sim`] runs seeded simulations of lock clients against the in-memory
//!   ZooKeeper ([`zoolock_model`]), with faults and oracles.
//! * [`replay`] drives a `zoolock_core::Session` through recorded connections.
//! * [`recipe_replay`] drives a `zoolock_core::Client` and its lock recipes
//!   through whole recorded scenarios.

pub mod blocking;
pub mod decode;
pub mod json;
pub mod recipe_replay;
pub mod replay;
pub mod sim;
pub mod trace;

pub use decode::{DecodedFrame, FrameDecodeError, StreamDecoder, TraceDecodeError, decode_trace};
pub use recipe_replay::{
    ClientReport, ConnectionTally, RecipeReplayConfig, ScenarioReport, replay_scenario, replay_scenario_dir,
};
pub use replay::{
    Chunking, ConnectionReport, LoggedEvent, MismatchKind, ReplayConfig, ReplayError, ReplayReport, SessionReplay,
    replay_session,
};
pub use trace::{Close, Direction, Entry, Frame, Scenario, Trace, TraceError, TraceHeader};
