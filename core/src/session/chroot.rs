//! Keeping the chroot's root in place, as a Curator namespace is kept.
//!
//! Curator's `namespace("app")` creates `/app` as a container on first use
//! (`ZKPaths.mkdirs`: an exists per missing level, then a create), and its
//! lock parents' mkdirs re-create it after ZooKeeper reaped it or an
//! operator deleted it. A client connected to `host:2181/app` sees no `/app`
//! at all, so the session does the same on its behalf: after the handshake
//! of a new session, and again when a create directly under the client's
//! `/` answers NoNode. The probe goes bottom-up (one exists when the root is
//! there, the common case), then the missing levels are made top-down with
//! the configured kind and ACL; NodeExists is success (someone else made it).

use alloc::string::String;
use alloc::vec::Vec;

use bytes::Bytes;
use zoolock_wire::{CreateMode, CreateRequest, ErrorCode, PathWatchRequest, Request};

use super::config::ChrootPolicy;
use super::{ConnectionState, End, Phase, Purpose, Queued, Session, SessionEvent};
use crate::error::RequestError;
use crate::time::Instant;

/// Fresh probes after a level vanished while its children were being made
/// (the reaper raced us): beyond this the run gives up with NoNode.
const MAX_RESTARTS: u32 = 3;

/// Where a run of the keeper is.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
enum Step {
    /// exists of level `i` is out.
    Probe(usize),
    /// create of level `i` is out.
    Make(usize),
}

/// What the session does next for the keeper.
#[derive(Debug, PartialEq, Eq)]
pub(super) enum Next {
    /// Send this request (outside the chroot: its paths are server paths).
    Send(Request),
    /// The root exists.
    Ready,
    /// The root is missing and cannot be made: the server's answer.
    Failed(ErrorCode),
}

/// The chroot's levels and the state of the current check, if any.
#[derive(Debug)]
pub(super) struct RootKeeper {
    /// Server paths of the chroot's levels, top-down: `/a`, `/a/b`.
    levels: Vec<String>,
    policy: ChrootPolicy,
    /// A check is owed before requests go out: at the first handshake of a
    /// session, and after a NoNode under `/` until a check completes.
    owed: bool,
    /// Whether the owed check is the session's first (its failure ends the
    /// session) rather than a repair (its failure fails the parked creates).
    establishing: bool,
    run: Option<(Step, u32)>,
}

impl RootKeeper {
    /// A keeper for the chroot `root` (a server path other than `/`).
    pub(super) fn new(root: &str, policy: ChrootPolicy) -> RootKeeper {
        let mut levels: Vec<String> =
            root.match_indices('/').skip(1).filter_map(|(i, _)| root.get(..i)).map(String::from).collect();
        levels.push(String::from(root));
        RootKeeper { levels, policy, owed: true, establishing: true, run: None }
    }

    /// A check is owed and should start at the next chance.
    pub(super) fn owed(&self) -> bool {
        self.owed
    }

    /// A check is under way: requests wait for it.
    pub(super) fn running(&self) -> bool {
        self.run.is_some()
    }

    /// The owed check is the session's first one.
    pub(super) fn establishing(&self) -> bool {
        self.establishing
    }

    /// A create under `/` answered NoNode: the root is gone. Owes a repair
    /// check (unless one is owed already).
    pub(super) fn lost(&mut self) {
        self.owed = true;
    }

    /// Starts the owed check: its first request.
    pub(super) fn start(&mut self) -> Request {
        let deepest = self.levels.len().saturating_sub(1);
        self.probe(deepest, 0)
    }

    /// The connection dropped with the check's request in flight: it is
    /// owed again at the next handshake.
    pub(super) fn interrupted(&mut self) {
        self.run = None;
    }

    /// The server has no containers (Unimplemented): persistent levels
    /// from now on.
    pub(super) fn no_containers(&mut self) {
        self.policy.containers = false;
    }

    /// The answer to the check's request.
    pub(super) fn on_reply(&mut self, err: ErrorCode) -> Next {
        let Some((step, restarts)) = self.run else {
            return Next::Ready;
        };
        let last = self.levels.len().saturating_sub(1);
        let next = match (step, err) {
            (Step::Probe(i), ErrorCode::OK) if i >= last => return self.done(Next::Ready),
            (Step::Probe(i), ErrorCode::OK) => self.make(i + 1, restarts),
            (Step::Probe(0), ErrorCode::NO_NODE) => self.make(0, restarts),
            (Step::Probe(i), ErrorCode::NO_NODE) => self.probe(i - 1, restarts),
            (Step::Make(i), ErrorCode::OK | ErrorCode::NODE_EXISTS) if i >= last => return self.done(Next::Ready),
            (Step::Make(i), ErrorCode::OK | ErrorCode::NODE_EXISTS) => self.make(i + 1, restarts),
            // A level made a moment ago is gone again: probe afresh, a few times.
            (Step::Make(_), ErrorCode::NO_NODE) if restarts < MAX_RESTARTS => self.probe(last, restarts + 1),
            (Step::Make(i), ErrorCode::UNIMPLEMENTED) if self.policy.containers => {
                self.no_containers();
                self.make(i, restarts)
            }
            (_, err) => return self.done(Next::Failed(err)),
        };
        Next::Send(next)
    }

    fn done(&mut self, outcome: Next) -> Next {
        self.run = None;
        self.owed = false;
        self.establishing = false;
        outcome
    }

    fn probe(&mut self, i: usize, restarts: u32) -> Request {
        self.run = Some((Step::Probe(i), restarts));
        let path = self.levels.get(i).cloned().unwrap_or_default();
        Request::Exists(PathWatchRequest { path, watch: false })
    }

    fn make(&mut self, i: usize, restarts: u32) -> Request {
        self.run = Some((Step::Make(i), restarts));
        let path = self.levels.get(i).cloned().unwrap_or_default();
        let acl = self.policy.acl.acl_for(&path).to_vec();
        let data = Some(Bytes::new());
        if self.policy.containers {
            Request::CreateContainer(CreateRequest { path, data, acl, flags: CreateMode::CONTAINER })
        } else {
            Request::Create(CreateRequest { path, data, acl, flags: CreateMode::PERSISTENT })
        }
    }
}

impl Session {
    /// After a handshake: starts the root's check if one is owed (a
    /// new session reports `state` once it is done, a repair at once).
    /// False if none is owed, or none can run: a read-only server could
    /// create nothing, so it is checked at the next read-write connection.
    pub(super) fn start_root_check(&mut self, now: Instant, state: ConnectionState) -> bool {
        let Some(root) = self.root.as_mut().filter(|r| r.owed() && !self.read_only) else {
            return false;
        };
        let establishing = root.establishing();
        let first = root.start();
        if establishing {
            self.announce = Some(state);
        } else {
            self.announce_state(state);
        }
        self.send(now, first, Purpose::Root);
        self.ping_if_due(now);
        true
    }

    /// A create under the client's `/` answered NoNode: the chroot's root
    /// is gone. Hold the create back and make the root again (now, if
    /// connected and no check is under way; else after the next handshake).
    pub(super) fn root_lost(&mut self, now: Instant, q: Queued) {
        self.parked.push_back(q);
        let Some(root) = self.root.as_mut() else { return };
        root.lost();
        if !root.running() && matches!(self.phase, Phase::Connected { .. }) && self.sasl.is_none() && !self.read_only {
            let first = root.start();
            self.send(now, first, Purpose::Root);
        }
    }

    /// The answer to a step of the root's check.
    pub(super) fn on_root_reply(&mut self, now: Instant, err: ErrorCode) {
        // Closing: nothing more goes out after closeSession.
        if !matches!(self.phase, Phase::Connected { .. }) {
            return;
        }
        let Some(root) = self.root.as_mut() else { return };
        let establishing = root.establishing();
        match root.on_reply(err) {
            Next::Send(request) => self.send(now, request, Purpose::Root),
            Next::Ready => {
                if let Some(state) = self.announce.take() {
                    self.announce_state(state);
                }
                self.flush(now);
            }
            Next::Failed(code) if establishing => self.end(End::ChrootUnavailable(code)),
            Next::Failed(code) => {
                for q in core::mem::take(&mut self.parked) {
                    let result = Err(RequestError::ChrootUnavailable(code));
                    self.events.push_back(SessionEvent::Reply { id: q.id, result });
                }
                self.flush(now);
            }
        }
    }
}

/// Whether `request` (client paths) creates a node directly under `/`: its
/// NoNode means the chroot's root itself is missing.
pub(super) fn creates_under_root(request: &Request) -> bool {
    let path = match request {
        Request::Create(r) | Request::Create2(r) | Request::CreateContainer(r) => &r.path,
        Request::CreateTtl(r) => &r.path,
        _ => return false,
    };
    path.len() > 1 && path.rfind('/') == Some(0)
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::AclPolicy;

    fn keeper(root: &str) -> RootKeeper {
        RootKeeper::new(root, ChrootPolicy::new(AclPolicy::default()))
    }

    fn path(r: &Request) -> &str {
        r.path().unwrap_or_default()
    }

    #[test]
    fn levels_are_top_down() {
        assert_eq!(keeper("/a").levels, ["/a"]);
        assert_eq!(keeper("/a/b/c").levels, ["/a", "/a/b", "/a/b/c"]);
    }

    #[test]
    fn probes_bottom_up_then_makes_top_down() {
        let mut k = keeper("/a/b/c");
        assert!(k.owed() && k.establishing() && !k.running());
        let r = k.start();
        assert!(matches!(&r, Request::Exists(_)) && path(&r) == "/a/b/c");
        let Next::Send(r) = k.on_reply(ErrorCode::NO_NODE) else { panic!() };
        assert!(matches!(&r, Request::Exists(_)) && path(&r) == "/a/b");
        let Next::Send(r) = k.on_reply(ErrorCode::OK) else { panic!() };
        assert!(matches!(&r, Request::CreateContainer(c) if c.path == "/a/b/c" && c.flags == CreateMode::CONTAINER));
        assert_eq!(k.on_reply(ErrorCode::NODE_EXISTS), Next::Ready);
        assert!(!k.owed() && !k.establishing() && !k.running());
    }

    #[test]
    fn a_vanishing_level_restarts_a_bounded_number_of_times() {
        let mut k = keeper("/a");
        k.start();
        for _ in 0..MAX_RESTARTS {
            assert!(matches!(k.on_reply(ErrorCode::NO_NODE), Next::Send(Request::CreateContainer(_))));
            assert!(matches!(k.on_reply(ErrorCode::NO_NODE), Next::Send(Request::Exists(_))));
        }
        assert!(matches!(k.on_reply(ErrorCode::NO_NODE), Next::Send(Request::CreateContainer(_))));
        assert_eq!(k.on_reply(ErrorCode::NO_NODE), Next::Failed(ErrorCode::NO_NODE));
    }

    #[test]
    fn unimplemented_containers_fall_back_to_persistent() {
        let mut k = keeper("/a");
        k.start();
        k.on_reply(ErrorCode::NO_NODE);
        let Next::Send(r) = k.on_reply(ErrorCode::UNIMPLEMENTED) else { panic!() };
        assert!(matches!(&r, Request::Create(c) if c.flags == CreateMode::PERSISTENT));
        assert_eq!(k.on_reply(ErrorCode::UNIMPLEMENTED), Next::Failed(ErrorCode::UNIMPLEMENTED));
    }

    #[test]
    fn only_creates_directly_under_the_root_count() {
        let create = |p: &str| {
            Request::Create2(CreateRequest {
                path: p.into(),
                data: None,
                acl: Vec::new(),
                flags: CreateMode::PERSISTENT,
            })
        };
        assert!(creates_under_root(&create("/x")));
        assert!(creates_under_root(&create("/x-")));
        assert!(!creates_under_root(&create("/x/y")));
        assert!(!creates_under_root(&create("/")));
        assert!(!creates_under_root(&Request::Exists(PathWatchRequest { path: "/x".into(), watch: false })));
    }
}
