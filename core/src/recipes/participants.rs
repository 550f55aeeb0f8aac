//! [`Participants`]: who is queued on a lock path, in queue order (Curator's
//! `getParticipantNodes`, plus each node's data).

use alloc::collections::BTreeMap;
use alloc::format;
use alloc::string::String;
use alloc::vec::Vec;

use bytes::Bytes;
use zoolock_wire::{ErrorCode, OpCode, Response, Stat};

use super::kit::Outbox;
use super::policy::SortKey;
use super::spec::LockKind;
use crate::error::{ApiMisuse, RequestError};
use crate::op::Op;
use crate::path::ZkPath;
use crate::recipe::{OpId, Participant, Recipe, RecipeEvent, RecipeOp};
use crate::session::{ConnectionState, WatchEvent};
use crate::time::Instant;

#[derive(Debug)]
enum Step {
    /// getChildren2 in flight (or owed after a reconnect).
    Listing,
    /// getData of each child in flight: the sorted paths, the data read so
    /// far (`None` = not yet answered), and which op reads which child.
    Reading {
        paths: Vec<String>,
        data: Vec<Option<Option<(Bytes, Stat)>>>,
        pending: BTreeMap<OpId, usize>,
    },
    Done,
}

/// A one-shot listing of a lock path's participants: `getChildren2(base)`
/// (NoNode lists as empty), sorted stably by the recipe's key so the holder
/// comes first, then `getData` of every child in one round trip (a child that
/// vanished meanwhile gets `data: None`). Reported once as
/// [`RecipeEvent::Participants`] with full paths.
///
/// Like Curator, every child counts, foreign names included; they sort by
/// the same key the lock uses. Curator's `getParticipantNodes` returns paths
/// only; the data (Curator writes the holder's address) is our addition and
/// can be turned off with [`Participants::without_data`] for Curator's exact
/// single request. Gzip-framed data (Curator with compression) is reported
/// decompressed. [`Participants::refresh`] lists again.
///
/// Connection loss: the requests still owed are sent again after the
/// reconnect. Other errors and a session end are reported as `Failed`.
#[derive(Debug)]
pub struct Participants {
    base: ZkPath,
    key: SortKey,
    marker: Option<&'static str>,
    with_data: bool,
    step: Step,
    /// Requests that met a connection loss, resent on reconnect.
    owed: Vec<(OpId, ZkPath, Option<usize>)>,
    list_op: Option<OpId>,
    /// Watching: list with a child watch and list again on each change.
    watch: bool,
    /// Watching: the children changed while a listing was under way.
    stale: bool,
    /// Watching: the session was lost, and its watches with it; list anew
    /// once a new one connects.
    resume: bool,
    /// Watching a missing base path: the exists that arms its watch.
    exists_op: Option<OpId>,
    out: Outbox<ParticipantsEvent>,
}

impl Participants {
    /// Lists `base`'s children ordered by `key`. The listing is queued at
    /// once.
    pub fn new(base: ZkPath, key: SortKey) -> Participants {
        Participants::start(base, key, false)
    }

    /// Lists `base`'s children ordered by `key` now and again after every
    /// change, told by a child watch (an exists watch while the path is
    /// missing): no polling. Each listing is reported; a session's loss
    /// (its watches go with it) lists anew on the next session.
    pub fn watching(base: ZkPath, key: SortKey) -> Participants {
        Participants::start(base, key, true)
    }

    fn start(base: ZkPath, key: SortKey, watch: bool) -> Participants {
        let mut p = Participants {
            base,
            key,
            marker: None,
            with_data: true,
            step: Step::Done,
            owed: Vec::new(),
            list_op: None,
            watch,
            stale: false,
            resume: false,
            exists_op: None,
            out: Outbox::default(),
        };
        p.list();
        p
    }

    /// The queue of a lock of `kind` on `base`, in its Curator layout
    /// ([`LockKind::layout`]): a mutex's nodes; a read-write lock's readers
    /// and writers in one order (tell them apart by `__READ__` / `__WRIT__`
    /// in the name, or narrow with [`Participants::containing`]); a
    /// semaphore's lease holders, the children of `base/leases` (Curator
    /// returns lease names unsorted, in server order; we sort them by the
    /// `lease-` sequence so the order is stable and means "oldest first").
    ///
    /// # Errors
    ///
    /// [`ApiMisuse::InvalidPath`] when `base` cannot take the layout's
    /// folder; [`ApiMisuse::NoLayout`] for a multi-lock, whose members each
    /// have their own queue.
    pub fn of(kind: LockKind, base: ZkPath) -> Result<Participants, ApiMisuse> {
        let layout = kind.layout().ok_or(ApiMisuse::NoLayout(kind))?;
        Ok(Participants::new(layout.queue(&base)?, layout.sort_key()))
    }

    /// Keeps only children whose name contains `marker`, as each half of
    /// Curator's read-write lock does (`"__READ__"` or `"__WRIT__"`).
    pub fn containing(mut self, marker: &'static str) -> Participants {
        self.marker = Some(marker);
        self
    }

    /// Lists paths only (Curator's exact `getParticipantNodes`: one
    /// getChildren2); every `data` is `None`.
    pub fn without_data(mut self) -> Participants {
        self.with_data = false;
        self
    }

    /// Lists again; refused while a listing is under way.
    pub fn refresh(&mut self, _now: Instant) -> Result<(), ApiMisuse> {
        if !matches!(self.step, Step::Done) {
            return Err(ApiMisuse::RequestInProgress);
        }
        self.list();
        Ok(())
    }

    fn next_id(&mut self) -> OpId {
        self.out.fresh_id()
    }

    fn list(&mut self) {
        self.step = Step::Listing;
        self.owed.clear();
        let id = self.next_id();
        self.list_op = Some(id);
        self.out.send_as(id, Op::get_children(&self.base, self.watch));
    }

    fn finish(&mut self, event: ParticipantsEvent) {
        self.step = Step::Done;
        self.list_op = None;
        self.owed.clear();
        self.out.emit(event);
        if core::mem::take(&mut self.stale) {
            self.list();
        }
    }

    /// Watching, the base path is missing: a getChildren arms no watch on
    /// it, an exists does, and tells when it is made.
    fn watch_missing_base(&mut self) {
        if self.watch && self.exists_op.is_none() {
            let id = self.next_id();
            self.exists_op = Some(id);
            self.out.send_as(id, Op::exists(&self.base, true));
        }
    }

    fn on_list(&mut self, result: Result<Response, RequestError>) {
        let mut children = match result {
            Ok(Response::Children2 { children, .. }) | Ok(Response::Children(children)) => children,
            Err(RequestError::Server(ErrorCode::NO_NODE)) => {
                self.watch_missing_base();
                Vec::new()
            }
            Err(RequestError::ConnectionLoss) => {
                if let Some(id) = self.list_op {
                    self.owed.push((id, self.base.clone(), None));
                }
                return;
            }
            Err(e) => return self.finish(ParticipantsEvent::Failed(e)),
            Ok(_) => {
                let error = RequestError::UnexpectedResponse { op: OpCode::GET_CHILDREN2 };
                return self.finish(ParticipantsEvent::Failed(error));
            }
        };
        self.list_op = None;
        if let Some(marker) = self.marker {
            children.retain(|c| c.contains(marker));
        }
        self.key.sort(&mut children);
        let prefix = if self.base.is_root() { "" } else { self.base.as_str() };
        let paths: Vec<String> = children.iter().map(|c| format!("{prefix}/{c}")).collect();
        if !self.with_data || paths.is_empty() {
            let list = paths.into_iter().map(|path| Participant { path, data: None, stat: None }).collect();
            return self.finish(ParticipantsEvent::Listed(list));
        }
        let mut pending = BTreeMap::new();
        let mut data = Vec::with_capacity(paths.len());
        for (idx, path) in paths.iter().enumerate() {
            match ZkPath::new(path) {
                Ok(zk) => {
                    let id = self.next_id();
                    pending.insert(id, idx);
                    data.push(None);
                    self.out.send_as(id, Op::get_data(&zk, false));
                }
                // A name the server returned that is not a valid path: no data.
                Err(_) => data.push(Some(None)),
            }
        }
        self.step = Step::Reading { paths, data, pending };
        self.maybe_done();
    }

    fn on_data(&mut self, op: OpId, result: Result<Response, RequestError>) {
        let Step::Reading { paths, data, pending } = &mut self.step else { return };
        let Some(idx) = pending.remove(&op) else { return };
        let value = match result {
            Ok(Response::Data { data, stat }) => Some((plain(data.unwrap_or_default()), stat)),
            Ok(_) | Err(RequestError::Server(ErrorCode::NO_NODE)) => None,
            Err(RequestError::ConnectionLoss) => {
                if let Some(zk) = paths.get(idx).and_then(|p| ZkPath::new(p).ok()) {
                    self.owed.push((op, zk, Some(idx)));
                    return;
                }
                None
            }
            Err(e) => return self.finish(ParticipantsEvent::Failed(e)),
        };
        if let Some(slot) = data.get_mut(idx) {
            *slot = Some(value);
        }
        self.maybe_done();
    }

    fn maybe_done(&mut self) {
        let Step::Reading { paths, data, pending } = &mut self.step else { return };
        if !pending.is_empty() || !self.owed.is_empty() {
            return;
        }
        let paths = core::mem::take(paths);
        let data = core::mem::take(data);
        let list = paths
            .into_iter()
            .zip(data)
            .map(|(path, read)| {
                let (data, stat) = read.flatten().unzip();
                Participant { path, data, stat }
            })
            .collect();
        self.finish(ParticipantsEvent::Listed(list));
    }

    /// Watching: the children may have changed; list now, or once the
    /// listing under way is done.
    fn changed(&mut self) {
        if matches!(self.step, Step::Done) {
            self.list();
        } else {
            self.stale = true;
        }
    }

    fn resend_owed(&mut self) {
        for (_, path, child) in core::mem::take(&mut self.owed) {
            let id = self.next_id();
            match child {
                None => {
                    self.list_op = Some(id);
                    self.out.send_as(id, Op::get_children(&path, self.watch));
                }
                Some(idx) => {
                    if let Step::Reading { pending, .. } = &mut self.step {
                        pending.insert(id, idx);
                    }
                    self.out.send_as(id, Op::get_data(&path, false));
                }
            }
        }
    }
}

/// A participant's data as its writer meant it: gzip-framed data (Curator
/// with compression) decompressed, anything else, undecodable gzip included,
/// as it is (what a Curator client without compression reads).
fn plain(data: Bytes) -> Bytes {
    match crate::gzip::decode(&data, crate::gzip::MAX_DECOMPRESSED) {
        Ok(alloc::borrow::Cow::Owned(inflated)) => Bytes::from(inflated),
        Ok(alloc::borrow::Cow::Borrowed(_)) | Err(_) => data,
    }
}

impl Recipe for Participants {
    type Event = ParticipantsEvent;

    fn handle_reply(&mut self, _now: Instant, op: OpId, result: Result<Response, RequestError>) {
        if self.exists_op == Some(op) {
            self.exists_op = None;
            match result {
                // Made between the listing and the exists: list it.
                Ok(_) => self.changed(),
                // Armed on the missing path (NoNode), or to arm again on
                // the next listing (a lost connection re-lists).
                Err(RequestError::ConnectionLoss) => self.stale = true,
                Err(_) => {}
            }
            return;
        }
        match self.step {
            Step::Listing if self.list_op == Some(op) => self.on_list(result),
            Step::Reading { .. } => self.on_data(op, result),
            _ => {}
        }
    }

    fn handle_watch(&mut self, _now: Instant, event: &WatchEvent) {
        if self.watch && event.path == self.base.as_str() {
            self.changed();
        }
    }

    fn handle_session(&mut self, _now: Instant, state: ConnectionState) {
        match state {
            ConnectionState::Connected | ConnectionState::Reconnected | ConnectionState::ConnectedReadOnly => {
                if core::mem::take(&mut self.resume) {
                    self.changed();
                } else {
                    self.resend_owed();
                    if matches!(self.step, Step::Done) && core::mem::take(&mut self.stale) {
                        self.list();
                    }
                }
            }
            // Watching, with the session renewed: start over on the next.
            ConnectionState::Lost if self.watch => {
                self.exists_op = None;
                self.resume = true;
                self.step = Step::Done;
                self.list_op = None;
                self.owed.clear();
            }
            _ => {
                if let Some(error) = state.end_error().filter(|_| !matches!(self.step, Step::Done)) {
                    self.finish(ParticipantsEvent::Failed(error));
                }
            }
        }
    }

    fn handle_timeout(&mut self, _now: Instant) {}

    fn poll_op(&mut self) -> Option<RecipeOp> {
        self.out.poll_op()
    }

    fn poll_event(&mut self) -> Option<ParticipantsEvent> {
        self.out.poll_event()
    }

    fn poll_timeout(&self) -> Option<Instant> {
        None
    }

    fn is_quiescent(&self) -> bool {
        matches!(self.step, Step::Done)
    }

    fn holds(&self) -> bool {
        false
    }
}

/// What a [`Participants`] listing reports: the list
/// ([`RecipeEvent::Participants`] at the client) or why there is none
/// ([`RecipeEvent::Failed`]).
#[derive(Debug, Clone, PartialEq, Eq)]
#[non_exhaustive]
pub enum ParticipantsEvent {
    /// The participants, in queue order.
    Listed(Vec<Participant>),
    /// The listing failed.
    Failed(RequestError),
}

impl From<ParticipantsEvent> for RecipeEvent {
    fn from(event: ParticipantsEvent) -> RecipeEvent {
        match event {
            ParticipantsEvent::Listed(list) => RecipeEvent::Participants(list),
            ParticipantsEvent::Failed(error) => RecipeEvent::Failed(error),
        }
    }
}
