//! [`SharedCount`]: Curator's `SharedCount`, a persistent node holding a
//! 4-byte big-endian int, written with versioned compare-and-set and watched.
//!
//! Wire behaviour (Curator 5.4 `SharedValue`): at start, create the node with
//! the seed (container parents made if missing; NodeExists is fine), then
//! `getData(watch)`. Every data change re-reads with the watch set again, as
//! does every (re)connect. `set` is `setData(version -1)`, `try_set` is
//! `setData(version)`: BadVersion means another writer came first, so the
//! value is re-read and the write reported as not applied.
//!
//! Which value is newer is decided by the node's `mzxid`, not its version
//! (Curator 5.7, CURATOR-688): a version wraps after 2^31 writes, and a count
//! ordered by versions would ignore every value after that. A compare-and-set
//! at version -1 (a wrapped version) is refused, as 5.7 refuses it: the
//! server reads -1 as "any version" (ZOOKEEPER-4743), so it would be a blind
//! write.
//!
//! Compression (Curator 5.8's `enableCompression()`): a gzip-framed value is
//! read as the int it holds; [`LockConfig::compression`] says whether ours
//! are written gzipped.

use alloc::collections::BTreeMap;
use alloc::string::String;
use alloc::vec::Vec;

use bytes::Bytes;
use zoolock_wire::{CreateMode, ErrorCode, EventType, OpCode, Response};

use super::config::LockConfig;
use super::kit::Outbox;
use crate::error::{ApiMisuse, RequestError};
use crate::op::Op;
use crate::path::ZkPath;
use crate::recipe::{OpId, Recipe, RecipeEvent, RecipeOp};
use crate::session::{ConnectionState, WatchEvent};
use crate::time::Instant;

/// What a sent op was for.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
enum Purpose {
    Create,
    Parent,
    Read,
    /// `exists(watch)` while the node is missing, to see it come back.
    Await,
    /// A write of this value.
    Write(i32),
}

/// A shared count on `path`, wire-compatible with Curator's `SharedCount`.
///
/// Events ([`CountEvent`], reported by a client as the [`RecipeEvent`] of
/// the same name): [`RecipeEvent::Count`] whenever a newer value is seen (read or
/// written; values only move to later writes, by the node's `mzxid`),
/// [`RecipeEvent::CountWritten`] once per `set` / `try_set`, in call order,
/// and [`RecipeEvent::CountMalformed`] if the node holds anything but 4
/// bytes, plain or gzip-framed (the last good value stays).
///
/// Drain order: [`Recipe::poll_op`], then [`Recipe::poll_event`].
#[derive(Debug)]
pub struct SharedCount {
    path: ZkPath,
    seed: i32,
    config: LockConfig,
    /// Last value seen and its node version.
    value: Option<(i32, i32)>,
    /// The `mzxid` of the write that value came from: what orders values.
    value_zxid: i64,
    /// Refused writes, by the write in flight before each: answered right
    /// after it, so outcomes keep call order.
    refusals: BTreeMap<OpId, u32>,
    /// The newest read (watch set) in flight; one at a time is enough,
    /// except after a create, which needs a read behind it.
    reading: Option<OpId>,
    routes: BTreeMap<OpId, Purpose>,
    out: Outbox<CountEvent>,
}

/// The node data for `n` (Java's `ByteBuffer.putInt`).
pub fn count_bytes(n: i32) -> Bytes {
    Bytes::copy_from_slice(&n.to_be_bytes())
}

/// The value in a count node's data: exactly 4 bytes, plain or gzip-framed
/// (as Curator with compression writes it); `None` otherwise.
pub fn count_value(data: &[u8]) -> Option<i32> {
    // 4 plain bytes are never gzip (its shortest member is 20 bytes), even
    // when they start like it.
    let int = |bytes: &[u8]| <[u8; 4]>::try_from(bytes).ok().map(i32::from_be_bytes);
    int(data).or_else(|| crate::gzip::decode(data, 4).ok().and_then(|bytes| int(&bytes)))
}

impl SharedCount {
    /// A count on `path`, created with `seed` if absent. The create and the
    /// first read are queued at once; `config` gives the ACL and the parent
    /// kind.
    pub fn new(path: ZkPath, seed: i32, config: LockConfig) -> SharedCount {
        let mut count = SharedCount {
            path,
            seed,
            config,
            value: None,
            value_zxid: i64::MIN,
            refusals: BTreeMap::new(),
            reading: None,
            routes: BTreeMap::new(),
            out: Outbox::default(),
        };
        count.create();
        count
    }

    /// The count's path.
    pub fn path(&self) -> &ZkPath {
        &self.path
    }

    /// The last value seen, with its node version; `None` until first read.
    pub fn value(&self) -> Option<(i32, i32)> {
        self.value
    }

    /// Writes `n` whatever the current version (Curator's `setCount`).
    pub fn set(&mut self, _now: Instant, n: i32) {
        self.send(Op::set_data(&self.path, self.encode(n), None), Purpose::Write(n));
    }

    /// Writes `n` only if the node is still at `version` (Curator's
    /// `trySetCount`); reported as `CountWritten(Ok(false))` otherwise.
    /// Version -1 is refused (`CountWritten(Err(Refused(VersionOverflowed)))`,
    /// nothing sent): the server would take it as "any version".
    pub fn try_set(&mut self, _now: Instant, version: i32, n: i32) {
        if version == -1 {
            return self.refuse();
        }
        self.send(Op::set_data(&self.path, self.encode(n), Some(version)), Purpose::Write(n));
    }

    /// Reports a refused write once the writes called before it are.
    fn refuse(&mut self) {
        let last = self.routes.iter().rev().find(|(_, p)| matches!(p, Purpose::Write(_))).map(|(id, _)| *id);
        match last {
            Some(id) => *self.refusals.entry(id).or_default() += 1,
            None => self.out.emit(CountEvent::Written(Err(RequestError::Refused(ApiMisuse::VersionOverflowed)))),
        }
    }

    /// The outcome of write `op`, then the refusals queued behind it.
    fn written(&mut self, op: OpId, outcome: Result<bool, RequestError>) {
        self.out.emit(CountEvent::Written(outcome));
        for _ in 0..self.refusals.remove(&op).unwrap_or(0) {
            self.out.emit(CountEvent::Written(Err(RequestError::Refused(ApiMisuse::VersionOverflowed))));
        }
    }

    /// `n` as the node holds it, compressed if the config says so.
    fn encode(&self, n: i32) -> Bytes {
        self.config.compression.encode(count_bytes(n))
    }

    /// Nothing is owed to the server (no write in flight).
    pub fn is_quiescent(&self) -> bool {
        !self.routes.values().any(|p| matches!(p, Purpose::Write(_)))
    }

    fn send(&mut self, op: Op, purpose: Purpose) -> OpId {
        let id = self.out.send(op);
        self.routes.insert(id, purpose);
        id
    }

    /// Create with the seed and read, in one round trip.
    fn create(&mut self) {
        let acl = self.config.acl_for(self.path.as_str());
        self.send(Op::create(&self.path, self.encode(self.seed), acl, CreateMode::PERSISTENT), Purpose::Create);
        self.reading = Some(self.send(Op::get_data(&self.path, true), Purpose::Read));
    }

    fn read(&mut self) {
        if self.reading.is_none() {
            self.reading = Some(self.send(Op::get_data(&self.path, true), Purpose::Read));
        }
    }

    /// The missing ancestors, top-down, then the create again.
    fn make_parents(&mut self) {
        let path = String::from(self.path.as_str());
        let ancestors: Vec<&str> =
            path.match_indices('/').filter(|(i, _)| *i > 0).filter_map(|(i, _)| path.get(..i)).collect();
        for a in ancestors {
            let Ok(p) = ZkPath::new(a) else { continue };
            let acl = self.config.acl_for(a);
            let op = if self.config.container_parents {
                Op::create_container(&p, Bytes::new(), acl)
            } else {
                Op::create(&p, Bytes::new(), acl, CreateMode::PERSISTENT)
            };
            self.send(op, Purpose::Parent);
        }
        self.create();
    }

    /// A value read or written by the write `mzxid`, at `version`.
    fn seen(&mut self, data: &[u8], version: i32, mzxid: i64) {
        let Some(n) = count_value(data) else {
            return self.out.emit(CountEvent::Malformed { len: data.len() });
        };
        if self.value.is_none() || mzxid > self.value_zxid {
            self.value = Some((n, version));
            self.value_zxid = mzxid;
            self.out.emit(CountEvent::Value { value: n, version });
        }
    }

    fn on_reply(&mut self, op: OpId, purpose: Purpose, result: Result<Response, RequestError>) {
        match (purpose, result) {
            (Purpose::Create, Err(RequestError::Server(ErrorCode::NO_NODE))) => self.make_parents(),
            (Purpose::Parent | Purpose::Create, Err(RequestError::Server(ErrorCode::UNIMPLEMENTED)))
                if self.config.container_parents =>
            {
                // A server without containers: persistent parents.
                self.config.container_parents = false;
                self.make_parents();
            }
            (Purpose::Create | Purpose::Parent, Ok(_) | Err(_)) => {}
            (Purpose::Read, result) => {
                if self.reading == Some(op) {
                    self.reading = None;
                }
                match result {
                    Ok(Response::Data { data, stat }) => {
                        self.seen(data.as_deref().unwrap_or_default(), stat.version, stat.mzxid)
                    }
                    // Missing: a create may be on its way (its read follows),
                    // or someone deleted it; wait for it to come back.
                    Err(RequestError::Server(ErrorCode::NO_NODE)) if !self.create_pending() => {
                        self.send(Op::exists(&self.path, true), Purpose::Await);
                    }
                    // Connection loss: read again on the reconnect.
                    _ => {}
                }
            }
            (Purpose::Await, Ok(Response::Stat(_))) => self.read(),
            (Purpose::Await, _) => {}
            (Purpose::Write(n), result) => {
                let outcome = match result {
                    Ok(Response::Stat(stat)) => {
                        self.seen(&n.to_be_bytes(), stat.version, stat.mzxid);
                        Ok(true)
                    }
                    Err(RequestError::Server(ErrorCode::BAD_VERSION)) => {
                        self.read();
                        Ok(false)
                    }
                    Ok(_) => Err(RequestError::UnexpectedResponse { op: OpCode::SET_DATA }),
                    Err(e) => Err(e),
                };
                self.written(op, outcome);
            }
        }
    }

    fn create_pending(&self) -> bool {
        self.routes.values().any(|p| matches!(p, Purpose::Create | Purpose::Parent))
    }
}

impl Recipe for SharedCount {
    type Event = CountEvent;

    fn handle_reply(&mut self, _now: Instant, op: OpId, result: Result<Response, RequestError>) {
        let Some(purpose) = self.routes.remove(&op) else { return };
        self.on_reply(op, purpose, result);
    }

    fn handle_watch(&mut self, _now: Instant, event: &WatchEvent) {
        if event.path != self.path.as_str() {
            return;
        }
        match event.event_type {
            EventType::NODE_DATA_CHANGED | EventType::NODE_CREATED | EventType::NODE_DELETED => self.read(),
            _ => {}
        }
    }

    fn handle_session(&mut self, _now: Instant, state: ConnectionState) {
        match state {
            // Curator re-reads on RECONNECTED; a new session has no watches.
            ConnectionState::Reconnected => self.read(),
            // A session's first connect: what was queued before goes out
            // now; after a renewal nothing is in flight, so start over (the
            // create too, if no value was ever read).
            ConnectionState::Connected | ConnectionState::ConnectedReadOnly => {
                if self.reading.is_some_and(|id| self.routes.contains_key(&id)) {
                    return;
                }
                self.reading = None;
                if self.value.is_none() && !self.create_pending() {
                    self.create();
                } else {
                    self.read();
                }
            }
            // The session ended: nothing in flight will be answered.
            state => {
                if let Some(error) = state.end_error() {
                    self.reading = None;
                    for (id, purpose) in core::mem::take(&mut self.routes) {
                        if let Purpose::Write(_) = purpose {
                            self.written(id, Err(error.clone()));
                        }
                    }
                }
            }
        }
    }

    fn handle_timeout(&mut self, _now: Instant) {}

    fn poll_op(&mut self) -> Option<RecipeOp> {
        self.out.poll_op()
    }

    fn poll_event(&mut self) -> Option<CountEvent> {
        self.out.poll_event()
    }

    fn poll_timeout(&self) -> Option<Instant> {
        None
    }

    fn is_quiescent(&self) -> bool {
        SharedCount::is_quiescent(self)
    }

    fn holds(&self) -> bool {
        false
    }
}

/// What a [`SharedCount`] reports; a client reports each as the
/// [`RecipeEvent`] named in its doc.
#[derive(Debug, Clone, PartialEq, Eq)]
#[non_exhaustive]
pub enum CountEvent {
    /// A newer value ([`RecipeEvent::Count`]).
    Value {
        /// The value.
        value: i32,
        /// The count node's data version it was seen at.
        version: i32,
    },
    /// The outcome of one write, in call order ([`RecipeEvent::CountWritten`]).
    Written(Result<bool, RequestError>),
    /// The node does not hold a count ([`RecipeEvent::CountMalformed`]).
    Malformed {
        /// How many bytes it holds.
        len: usize,
    },
}

impl From<CountEvent> for RecipeEvent {
    fn from(event: CountEvent) -> RecipeEvent {
        match event {
            CountEvent::Value { value, version } => RecipeEvent::Count { value, version },
            CountEvent::Written(outcome) => RecipeEvent::CountWritten(outcome),
            CountEvent::Malformed { len } => RecipeEvent::CountMalformed { len },
        }
    }
}
