//! Following the ensemble's membership ([`SessionConfig::follow_ensemble`]),
//! and replacing the host list ([`Session::update_hosts`]).
//!
//! After the first handshake of a session the session reads
//! [`CONFIG_PATH`] with a watch, as a server path (the chroot never applies
//! to it: Curator prefixed its namespace and read the wrong node,
//! CURATOR-667). Each answer replaces the host list with the members that
//! serve clients; the chroot stays the one the session was made with (Curator
//! dropped it, CURATOR-593/611). The watch is set once per session: after a
//! reconnect it is re-armed by setWatches like any other watch (with the
//! last zxid, so a change made while disconnected fires it), and only its
//! firing, one-shot, reads again with a new watch. A session that is
//! closing reads nothing more, and an ended session's watches are gone with
//! it on the server (Curator 5.6 leaked its watch past close, CURATOR-710).
//! A server without the node (3.4) answers NoNode: the session stops
//! following for the rest of the session. A node whose data does not parse
//! is the server's fault and changes nothing: the old list stays.

use alloc::vec::Vec;

use zoolock_wire::{ErrorCode, EventType, PathWatchRequest, Request, Response};

use super::{Phase, Purpose, Session, Suspension};
use crate::connect_string::HostAddr;
use crate::ensemble::{CONFIG_PATH, EnsembleConfig, EnsembleConfigError};
use crate::time::Instant;

/// Where the session's reading of the membership is.
#[derive(Debug, Default, Clone, Copy, PartialEq, Eq)]
pub(super) enum Follow {
    /// Not read yet in this session (or the read was lost with its
    /// connection): read at the next ready connection.
    #[default]
    Owed,
    /// A read with a watch is out.
    Reading,
    /// The server holds our watch (re-armed by setWatches after a reconnect).
    Armed,
    /// Not following: turned off, the server has no config node, or the
    /// session is closing.
    Off,
}

/// What the last answer of the config read did, for tests and logs.
#[derive(Debug, Clone, PartialEq, Eq)]
pub enum EnsembleUpdate {
    /// The host list was replaced.
    Replaced,
    /// The members are the hosts already in use.
    Unchanged,
    /// The data did not parse: the host list was kept.
    Malformed(EnsembleConfigError),
}

impl Session {
    /// Replaces the hosts the session dials, keeping the session and its
    /// chroot. Returns false when `hosts` is empty or names the hosts in
    /// use already (in any order): nothing changes then.
    ///
    /// If the connection (or the dial, or the handshake under way) is to a
    /// host that remains, it stays; the next host tried after it is the
    /// first of the new list (shuffled from the session's seed). If its host
    /// was removed, the connection is dropped now
    /// ([`Suspension::ServerRemoved`]) and the session reconnects to a
    /// remaining one with its id and password, within the session timeout as
    /// after any disconnect: holds are `Suspended`, then `Reconnected`,
    /// never `Lost` while a new member answers in time. (ZooKeeper's Java
    /// client also moves some clients whose host remains, at random, to
    /// spread the load; this session does not: it moves only when it must.)
    pub fn update_hosts(&mut self, now: Instant, hosts: Vec<HostAddr>) -> bool {
        let mut new: Vec<HostAddr> = Vec::with_capacity(hosts.len());
        for h in hosts {
            if !new.contains(&h) {
                new.push(h);
            }
        }
        let same = new.len() == self.hosts.len() && new.iter().all(|h| self.hosts.contains(h));
        if new.is_empty() || same || matches!(self.phase, Phase::Ended(_) | Phase::Closing { .. }) {
            return false;
        }
        self.rng.shuffle(&mut new);
        let current = match self.phase {
            Phase::Connecting { host, .. } | Phase::Handshaking { host, .. } | Phase::Connected { host } => {
                self.hosts.get(host).cloned()
            }
            Phase::Idle { .. } | Phase::Closing { .. } | Phase::Ended(_) => None,
        };
        self.hosts = new;
        self.failed_in_cycle = 0;
        self.unreachable_in_cycle = 0;
        self.next_host = 0;
        let Some(current) = current else {
            return true;
        };
        match self.hosts.iter().position(|h| *h == current) {
            Some(at) => {
                match &mut self.phase {
                    Phase::Connecting { host, .. } | Phase::Handshaking { host, .. } | Phase::Connected { host } => {
                        *host = at;
                    }
                    _ => {}
                }
                self.next_host = (at + 1) % self.hosts.len();
            }
            None if matches!(self.phase, Phase::Connected { .. }) => {
                self.why_drop = Some(Suspension::ServerRemoved);
                self.drop_connection(now);
            }
            // A dial or handshake under way to a host that left: not a
            // failure of the new list's cycle; its first host is dialled now.
            None => {
                self.quorum.disconnected();
                self.close_socket();
                self.phase = Phase::Idle { at: now };
            }
        }
        true
    }

    /// The hosts the session dials, in the order it tries them.
    pub fn hosts(&self) -> &[HostAddr] {
        &self.hosts
    }

    /// What the last answer of the membership read did; `None` before one.
    pub fn last_ensemble_update(&self) -> Option<&EnsembleUpdate> {
        self.ensemble_update.as_ref()
    }

    /// Whether the membership watch is armed on the server (or re-armed by
    /// setWatches after a reconnect).
    pub(super) fn ensemble_armed(&self) -> bool {
        self.follow == Follow::Armed
    }

    /// Reads the membership with a watch if it is owed (once per session,
    /// or again after its watch fired). Called once a connection serves.
    pub(super) fn read_ensemble_if_owed(&mut self, now: Instant) {
        if self.follow != Follow::Owed || !matches!(self.phase, Phase::Connected { .. }) {
            return;
        }
        self.follow = Follow::Reading;
        let request = Request::GetData(PathWatchRequest { path: CONFIG_PATH.into(), watch: true });
        self.send(now, request, Purpose::Ensemble);
    }

    /// A notification for [`CONFIG_PATH`] (a server path). The watch is
    /// one-shot: a change reads again, with a new watch.
    pub(super) fn ensemble_notified(&mut self, now: Instant, event: EventType) {
        if self.follow != Follow::Armed {
            return;
        }
        self.follow = if event == EventType::NODE_DELETED { Follow::Off } else { Follow::Owed };
        self.read_ensemble_if_owed(now);
    }

    /// The answer to the membership read.
    pub(super) fn on_ensemble_reply(&mut self, now: Instant, err: ErrorCode, response: Option<Response>) {
        if self.follow != Follow::Reading {
            return;
        }
        let data = match (err, response) {
            (ErrorCode::OK, Some(Response::Data { data, .. })) => data.unwrap_or_default(),
            // NoNode (a 3.4 server), NoAuth, ...: nothing to follow here.
            _ => {
                self.follow = Follow::Off;
                return;
            }
        };
        self.follow = Follow::Armed;
        let update = match EnsembleConfig::parse(&data) {
            Ok(config) if self.update_hosts(now, config.hosts()) => EnsembleUpdate::Replaced,
            Ok(_) => EnsembleUpdate::Unchanged,
            Err(e) => EnsembleUpdate::Malformed(e),
        };
        self.ensemble_update = Some(update);
    }

    /// The read went with its connection: read again at the next one.
    pub(super) fn ensemble_interrupted(&mut self) {
        if self.follow == Follow::Reading {
            self.follow = Follow::Owed;
        }
    }

    /// The session is closing: no further reads.
    pub(super) fn stop_following(&mut self) {
        self.follow = Follow::Off;
    }
}
