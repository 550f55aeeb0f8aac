//! Watch and session events: what a watch that fired means for the hold or
//! the wait, and what a connection change does to them.

use super::*;

impl LockCore {
    pub(super) fn on_watch(&mut self, now: Instant, event: &WatchEvent) {
        // Our held node: its deletion ends the hold; a data change used up
        // the watch, so arm it again (a revocable node's re-read below does).
        // Held under the granting listing's child watch, any change of the
        // base's children (ours deleted, or someone queued) fired it: watch
        // the node itself from now on.
        if let State::Held { node } = &self.state {
            let children_changed = event.event_type == EventType::NODE_CHILDREN_CHANGED;
            if children_changed && self.held_watch == HeldWatch::Children && event.path == self.base.as_str() {
                self.held_watch = HeldWatch::Node;
                let path = node.path.clone();
                return self.send(Op::exists(&path, true), Purpose::WatchHeld);
            }
            if node.path.as_str() == event.path {
                if event.event_type == EventType::NODE_DELETED {
                    return self.hold_gone();
                }
                if event.event_type == EventType::NODE_DATA_CHANGED && !self.revocable && self.watches_held() {
                    let path = node.path.clone();
                    return self.send(Op::exists(&path, true), Purpose::WatchHeld);
                }
            }
        }
        // Our waiting node, watched by its own exists (see `own_watched`)
        // or, revocable, by its data watch: deleted by someone else, it is
        // missing (look again, and start over); a data change used the
        // exists watch up (the grant arms it again).
        if self.waiting_node().is_some_and(|n| n.path.as_str() == event.path) {
            let by_exists = !self.revocable && self.own_watched;
            if event.event_type == EventType::NODE_DELETED && (by_exists || self.revocable) {
                return self.waiting_node_gone();
            }
            if by_exists {
                self.own_watched = false;
                return;
            }
        }
        // Revocation: a data change on our own node.
        if self.revocable && event.event_type == EventType::NODE_DATA_CHANGED {
            let own = match &self.state {
                State::Held { node }
                | State::Listing { node }
                | State::Watching { node, .. }
                | State::Waiting { node, .. } => Some(node.path.clone()),
                _ => None,
            };
            if let Some(own) = own.filter(|own| own.as_str() == event.path) {
                self.send(Op::get_data(&own, true), Purpose::RevokeRead);
                return;
            }
        }
        let prefix = String::from(self.base_prefix());
        // Whether the event is on our base path's child `name`.
        let is_child =
            |name: &str| event.path.strip_prefix(prefix.as_str()).and_then(|r| r.strip_prefix('/')) == Some(name);
        if let Some(look) = self.rare.as_mut().and_then(|rare| rare.look.take_if(|look| is_child(look.as_str()))) {
            if event.event_type == EventType::NODE_DELETED {
                self.look_gone(&look);
            }
            return;
        }
        match &mut self.state {
            State::Watching { pred, fired, .. } if is_child(pred) => *fired = true,
            State::Waiting { node, on: Watched::Pred(pred) } if is_child(pred) => {
                let node = node.clone();
                let pred = pred.clone();
                if event.event_type == EventType::NODE_DELETED {
                    self.pred_gone(now, node, &pred);
                } else {
                    self.relist(node);
                }
            }
            State::Waiting { node, on: Watched::Children } if event.path == self.base.as_str() => {
                let node = node.clone();
                self.relist(node);
            }
            _ => {}
        }
    }

    pub(super) fn on_session(&mut self, state: ConnectionState) {
        match state {
            ConnectionState::Suspended => match core::mem::replace(&mut self.state, State::Idle) {
                State::Held { node } => {
                    self.state = State::Held { node };
                    self.out.emit(LockEvent::Suspended);
                }
                // Curator's loop wakes on every connection event and re-lists;
                // the request waits in the session until the reconnect.
                State::Waiting { node, .. } => self.relist(node),
                State::Watching { node, pred, .. } => self.state = State::Watching { node, pred, fired: true },
                other => self.state = other,
            },
            ConnectionState::Reconnected | ConnectionState::Connected | ConnectionState::ConnectedReadOnly => {
                if let State::Creating(c) = &mut self.state {
                    if c.step == CreateStep::AwaitReconnect {
                        c.step = CreateStep::Recover;
                        self.send(Op::get_children_names(&self.base.clone(), false), Purpose::Recover);
                    }
                }
                if let State::Held { node } = &self.state {
                    if state == ConnectionState::Reconnected {
                        // Same session: confirm the node survived before
                        // telling the holder it may go on.
                        // The exists re-arms the held node's watch if its
                        // own arming was cut off by the drop.
                        let (path, watch) = (node.path.clone(), self.watches_held() && !self.revocable);
                        if watch {
                            self.held_watch = HeldWatch::Node;
                        }
                        self.send(Op::exists(&path, watch), Purpose::Verify);
                    }
                }
                let pending: Vec<ZkPath> =
                    self.deleting.iter().filter(|(_, op)| op.is_none()).map(|(p, _)| p.clone()).collect();
                for path in pending {
                    self.send_delete(path);
                }
                self.find_orphans();
            }
            ConnectionState::Lost
            | ConnectionState::Closed
            | ConnectionState::AuthFailed
            | ConnectionState::SaslFailed(_)
            | ConnectionState::ServerMisbehaved(_)
            | ConnectionState::Unreachable
            | ConnectionState::ChrootUnavailable(_) => {
                // Nothing created under the old session may be trusted again
                // (CURATOR-604). After an expiry our nodes may still exist for
                // a while (the client-side timer can fire before the server's),
                // so they stay queued for deletion by a later session; after a
                // close the server has already deleted them.
                let stale = match &self.state {
                    State::Held { node }
                    | State::Listing { node }
                    | State::Watching { node, .. }
                    | State::Waiting { node, .. } => Some(node.path.clone()),
                    State::Releasing { path } => Some(path.clone()),
                    _ => None,
                };
                self.expected.clear();
                self.revoke_armed = false;
                if let Some(rare) = self.rare.as_mut() {
                    rare.look = None;
                    rare.look_ops.clear();
                    rare.orphans.iter_mut().for_each(|(_, op)| *op = None);
                }
                if state == ConnectionState::Lost {
                    self.orphan_create();
                    self.deleting.iter_mut().for_each(|(_, op)| *op = None);
                    if let Some(path) = stale {
                        self.mark_delete(path, None);
                    }
                } else {
                    self.deleting.clear();
                    if let Some(rare) = self.rare.as_mut() {
                        rare.orphans.clear();
                    }
                }
                let error = state.end_error().unwrap_or(RequestError::Closed);
                match core::mem::replace(&mut self.state, State::Idle) {
                    // (The semaphore reports its leases lost with the
                    // session from `held()`, before its cores hear of it.)
                    State::Held { .. } => self.out.emit(LockEvent::Lost),
                    State::Releasing { .. } => self.out.emit(LockEvent::Released),
                    State::Idle => {}
                    _ => self.out.emit(LockEvent::Failed(error)),
                }
                self.attempt += 1;
            }
        }
    }
}
