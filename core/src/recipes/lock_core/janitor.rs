//! Guaranteed deletes: abandoned and orphaned nodes are deleted until the
//! server says OK or NoNode, or the session ends; a create lost with its
//! session is looked up by its protection prefix and deleted.

use super::*;

impl LockCore {
    /// A create abandoned with the session: it may have landed, so a later
    /// session looks for its prefix and deletes what it finds (Curator's
    /// protected create does the same on a session change, CURATOR-498).
    pub(super) fn orphan_create(&mut self) {
        if let State::Creating(c) = &self.state {
            let (prefix, adopted) = (String::from(c.prefix()), c.adopted.clone());
            self.remember_orphan(&prefix);
            if let Some(path) = adopted {
                if let Err(at) = self.deleting_at(&path) {
                    self.deleting.insert(at, (path, None));
                }
            }
        }
    }

    /// Looks for an abandoned create's node by its protection prefix. An
    /// unprotected create has none: nothing tells its node from another
    /// client's, so it is left to the session's end.
    pub(super) fn remember_orphan(&mut self, prefix: &str) {
        if prefix.is_empty() {
            return;
        }
        let orphans = &mut self.rare_mut().orphans;
        if let Err(at) = orphans.binary_search_by(|(p, _)| p.as_str().cmp(prefix)) {
            orphans.insert(at, (String::from(prefix), None));
        }
    }

    /// Where `path` is (or would go) in the sorted `deleting`.
    fn deleting_at(&self, path: &ZkPath) -> Result<usize, usize> {
        self.deleting.binary_search_by(|(p, _)| p.cmp(path))
    }

    /// Puts `path` under guaranteed delete, with `op` its delete in flight.
    pub(super) fn mark_delete(&mut self, path: ZkPath, op: Option<OpId>) {
        match self.deleting_at(&path) {
            Ok(at) => {
                if let Some(entry) = self.deleting.get_mut(at) {
                    entry.1 = op;
                }
            }
            Err(at) => self.deleting.insert(at, (path, op)),
        }
    }

    pub(super) fn start_delete(&mut self, path: ZkPath) {
        if self.deleting_at(&path).is_ok() {
            return;
        }
        self.send_delete(path);
    }

    pub(super) fn send_delete(&mut self, path: ZkPath) {
        let op = self.send_op(Op::delete(&path, None), Purpose::Delete);
        self.mark_delete(path, Some(op));
    }

    /// The reply to delete `op`.
    pub(super) fn on_delete(&mut self, op: OpId, result: Result<Response, RequestError>) {
        let Some(at) = self.deleting.iter().position(|(_, o)| *o == Some(op)) else { return };
        match result {
            Ok(_) | Err(RequestError::Server(ErrorCode::NO_NODE)) => {
                let (path, _) = self.deleting.remove(at);
                self.deleting_freed();
                if matches!(&self.state, State::Releasing { path: p } if *p == path) {
                    self.state = State::Idle;
                    self.out.emit(LockEvent::Released);
                }
            }
            // Retried after the next (re)connect; a lost session's nodes are
            // retried by the next session.
            Err(RequestError::ConnectionLoss | RequestError::SessionExpired | RequestError::Closed) => {
                if let Some(entry) = self.deleting.get_mut(at) {
                    entry.1 = None;
                }
            }
            Err(e) => {
                // Not ours to fix (NoAuth, ...): report it and stop trying. A
                // failed release is the release's outcome; a failed clean-up of
                // an abandoned node is reported on its own, so it is never
                // mistaken for the outcome of an acquire under way.
                let (path, _) = self.deleting.remove(at);
                self.deleting_freed();
                if matches!(&self.state, State::Releasing { path: p } if *p == path) {
                    self.state = State::Idle;
                    self.out.emit(LockEvent::Failed(e));
                } else {
                    self.out.emit(LockEvent::CleanupFailed { path: path.into(), error: e });
                }
            }
        }
    }

    /// Nothing left to delete: keep no capacity.
    fn deleting_freed(&mut self) {
        if self.deleting.is_empty() {
            self.deleting = Vec::new();
        }
    }

    pub(super) fn find_orphans(&mut self) {
        let lookups: Vec<String> =
            self.rare().orphans.iter().filter(|(_, op)| op.is_none()).map(|(p, _)| p.clone()).collect();
        for prefix in lookups {
            let op = self.send_op(Op::get_children_names(&self.base.clone(), false), Purpose::FindOrphans);
            let orphans = &mut self.rare_mut().orphans;
            if let Ok(at) = orphans.binary_search_by(|(p, _)| p.as_str().cmp(&prefix)) {
                if let Some(entry) = orphans.get_mut(at) {
                    entry.1 = Some(op);
                }
            }
        }
    }

    /// The reply to orphan lookup `op`.
    pub(super) fn on_find_orphans(&mut self, op: OpId, result: Result<Response, RequestError>) {
        let Some(rare) = self.rare.as_mut() else { return };
        let Some(at) = rare.orphans.iter().position(|(_, o)| *o == Some(op)) else { return };
        match result {
            Ok(Response::Children(names)) | Ok(Response::Children2 { children: names, .. }) => {
                let (prefix, _) = rare.orphans.remove(at);
                // A name that is no valid child cannot be one of ours.
                let base = &self.base;
                let ours: Vec<ZkPath> =
                    names.iter().filter(|n| n.starts_with(&prefix)).filter_map(|n| base.join(n).ok()).collect();
                for path in ours {
                    self.start_delete(path);
                }
            }
            // Retried after the next (re)connect; as with deletes, a lost
            // session's lookups are retried by the next session.
            Err(RequestError::ConnectionLoss | RequestError::SessionExpired | RequestError::Closed) => {
                if let Some(entry) = rare.orphans.get_mut(at) {
                    entry.1 = None;
                }
            }
            _ => {
                rare.orphans.remove(at);
            }
        }
    }
}
