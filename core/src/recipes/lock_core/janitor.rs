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
            let (prefix, adopted) = (c.prefix.clone(), c.adopted.clone());
            self.remember_orphan(&prefix);
            if let Some(path) = adopted {
                self.deleting.entry(path).or_insert(false);
            }
        }
    }

    /// Looks for an abandoned create's node by its protection prefix. An
    /// unprotected create has none: nothing tells its node from another
    /// client's, so it is left to the session's end.
    pub(super) fn remember_orphan(&mut self, prefix: &str) {
        if !prefix.is_empty() {
            self.orphans.insert(String::from(prefix));
        }
    }

    pub(super) fn start_delete(&mut self, path: ZkPath) {
        if self.deleting.contains_key(&path) {
            return;
        }
        self.deleting.insert(path.clone(), false);
        self.send_delete(path);
    }

    pub(super) fn send_delete(&mut self, path: ZkPath) {
        match self.deleting.get_mut(&path) {
            Some(sent) => *sent = true,
            None => {
                self.deleting.insert(path.clone(), true);
            }
        }
        self.send(Op::delete(&path, None), Purpose::Delete(path));
    }

    pub(super) fn on_delete(&mut self, path: ZkPath, result: Result<Response, RequestError>) {
        match result {
            Ok(_) | Err(RequestError::Server(ErrorCode::NO_NODE)) => {
                self.deleting.remove(&path);
                if matches!(&self.state, State::Releasing { path: p } if *p == path) {
                    self.state = State::Idle;
                    self.out.emit(LockEvent::Released);
                }
            }
            // Retried after the next (re)connect; a lost session's nodes are
            // retried by the next session.
            Err(RequestError::ConnectionLoss | RequestError::SessionExpired | RequestError::Closed) => {
                self.deleting.insert(path, false);
            }
            Err(e) => {
                // Not ours to fix (NoAuth, ...): report it and stop trying. A
                // failed release is the release's outcome; a failed clean-up of
                // an abandoned node is reported on its own, so it is never
                // mistaken for the outcome of an acquire under way.
                self.deleting.remove(&path);
                if matches!(&self.state, State::Releasing { path: p } if *p == path) {
                    self.state = State::Idle;
                    self.out.emit(LockEvent::Failed(e));
                } else {
                    self.out.emit(LockEvent::CleanupFailed { path: String::from(path.as_str()), error: e });
                }
            }
        }
    }

    pub(super) fn find_orphans(&mut self) {
        let lookups: Vec<String> = self.orphans.iter().cloned().collect();
        for prefix in lookups {
            let already = self.expected.iter().any(|(_, _, p)| matches!(p, Purpose::FindOrphans(b) if *b == prefix));
            if !already {
                self.send(Op::get_children_names(&self.base.clone(), false), Purpose::FindOrphans(prefix));
            }
        }
    }

    pub(super) fn on_find_orphans(&mut self, prefix: String, result: Result<Response, RequestError>) {
        match result {
            Ok(Response::Children(names)) | Ok(Response::Children2 { children: names, .. }) => {
                self.orphans.remove(&prefix);
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
            Err(RequestError::ConnectionLoss | RequestError::SessionExpired | RequestError::Closed) => {}
            _ => {
                self.orphans.remove(&prefix);
            }
        }
    }
}
