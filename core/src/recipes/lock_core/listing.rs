//! After the create: list, apply the rule, then hold or watch the node the
//! rule names; the fast handoff's kept listing, its window and its look-ahead.

use super::*;

/// Where a listing under evaluation came from.
pub(super) struct Listed {
    /// Every name of the full listing had a Curator sequence key.
    pub(super) keyed: bool,
    /// Nodes further ahead than the kept window were left out.
    pub(super) truncated: bool,
    /// How many nodes it stands for.
    pub(super) total: usize,
    /// A node our watch is already armed on (no getData needed for it).
    pub(super) armed: Option<String>,
    /// It came with a child watch on the base path (armed by it).
    pub(super) watched: bool,
}

impl LockCore {
    /// Our node exists: arm revocation, then list (unless a pipelined listing
    /// is already on its way).
    pub(super) fn created(&mut self, _now: Instant, node: Node) {
        let list_in_flight = self.list_in_flight();
        if self.revocable {
            self.revoke_armed = true;
            self.send(Op::get_data(&node.path, true), Purpose::RevokeRead);
        }
        if list_in_flight {
            self.state = State::Listing { node };
        } else {
            self.relist(node);
        }
    }

    pub(super) fn relist(&mut self, node: Node) {
        self.state = State::Listing { node };
        self.send_list();
    }

    fn send_list(&mut self) {
        let watch = self.list_watch();
        self.send(Op::get_children(&self.base.clone(), watch), Purpose::List { watch });
    }

    /// A listing for the current attempt is on its way.
    pub(super) fn list_in_flight(&self) -> bool {
        self.expected.iter().any(|(_, a, p)| *a == self.attempt && matches!(p, Purpose::List { .. }))
    }

    pub(super) fn on_list(&mut self, now: Instant, result: Result<Response, RequestError>, watched: bool) {
        // A listing that arrives while we wait is the look-ahead's (fast
        // handoff only): the predecessor's watch stays armed, so a failed one
        // changes nothing (a dropped connection re-lists on its own).
        let looked_ahead =
            matches!(self.state, State::Waiting { on: Watched::Pred(_), .. }) && self.fast_handoff_allowed();
        if looked_ahead && result.is_err() {
            return;
        }
        // Every way on below sets the state anew.
        let (node, armed) = match core::mem::replace(&mut self.state, State::Idle) {
            State::Listing { node } => (node, None),
            State::Waiting { node, on: Watched::Pred(pred) } if looked_ahead => (node, Some(pred)),
            other => return self.state = other,
        };
        let children = match result {
            Ok(Response::Children2 { children, .. }) | Ok(Response::Children(children)) => children,
            // A reaped base path lists as empty (Curator 4.0.1+).
            Err(RequestError::Server(ErrorCode::NO_NODE)) => Vec::new(),
            Err(RequestError::ConnectionLoss) => return self.relist(node),
            Err(e) => return self.abandon_with(node, LockEvent::Failed(e)),
            Ok(_) => {
                let error = RequestError::UnexpectedResponse { op: OpCode::GET_CHILDREN2 };
                return self.abandon_with(node, LockEvent::Failed(error));
            }
        };
        if let Rule::Count { max_leases } = self.rule {
            return self.evaluate_count(now, node, &children, max_leases);
        }
        let sorted = NodeName::sorted(children, &self.key);
        self.evaluate(now, node, sorted, armed, watched);
    }

    pub(super) fn evaluate_count(&mut self, now: Instant, node: Node, children: &[String], max_leases: usize) {
        self.rare_mut().listed = Some(children.len());
        match policy::semaphore(children, node.name(), max_leases) {
            None => {
                self.start_delete(node.path.clone());
                self.no_node_retry(now, RequestError::NodeVanished);
            }
            Some(true) => {
                self.rare_mut().granted_under = Some(max_leases);
                if self.watches_held() && self.config.plan == OpPlan::Pipelined && !self.revocable {
                    // The listing's child watch stays armed on the server
                    // (checkWatches only drops it from our table): it is the
                    // held lease's watch, at no cost.
                    self.grant(now, node, true);
                } else {
                    // Curator checks off the leases child watch once it has a lease.
                    self.send(Op::check_watches(&self.base.clone(), WatcherType::ANY), Purpose::CheckWatches);
                    self.grant(now, node, false);
                }
            }
            Some(false) if self.deadline.is_some_and(|d| now >= d) => self.abandon_with(node, LockEvent::TimedOut),
            // Waiting on the child watch of the base path.
            Some(false) => {
                self.waited = true;
                self.report_queued(children.len().saturating_sub(max_leases).max(1), children.len());
                self.state = State::Waiting { node, on: Watched::Children };
            }
        }
    }

    /// The rule says we hold the lock through `node`: report it and watch
    /// the node (ARCHITECTURE §6.1). The child watch of the granting listing
    /// (`by_child_watch`) already tells its deletion, and so does a
    /// revocable node's data watch, armed at its create; otherwise one
    /// exists arms a watch, in the round trip of whatever goes out with it.
    fn grant(&mut self, now: Instant, node: Node, by_child_watch: bool) {
        self.out.emit(LockEvent::Acquired { node: node.shared_path(), token: node.token });
        let hold_until = self.config.max_hold.map(|d| now + d);
        if hold_until.is_some() || self.rare.is_some() {
            self.rare_mut().hold_until = hold_until;
        }
        self.quiet = !self.waited;
        self.held_watch = if by_child_watch { HeldWatch::Children } else { HeldWatch::Node };
        let armed = by_child_watch || core::mem::take(&mut self.own_watched);
        if self.watches_held() && !self.revocable && !armed {
            self.send(Op::exists(&node.path, true), Purpose::WatchHeld);
        }
        self.state = State::Held { node };
    }

    /// The rule [`policy::position`] counts by.
    pub(super) fn position_rule(&self) -> policy::PositionRule {
        match self.rule {
            Rule::Standard { max_leases } | Rule::Count { max_leases } => policy::PositionRule::Standard(max_leases),
            Rule::Read => policy::PositionRule::Read,
        }
    }

    pub(super) fn verdict(&self, sorted: &[NodeName], ours: &str) -> Verdict {
        match self.rule {
            Rule::Standard { max_leases } | Rule::Count { max_leases } => policy::standard(sorted, ours, max_leases),
            Rule::Read => policy::read(sorted, ours, self.holds_write),
        }
    }

    /// Evaluates a fresh listing; `armed` names a node our watch is already
    /// armed on (the listing came while we waited on it).
    pub(super) fn evaluate(
        &mut self,
        now: Instant,
        node: Node,
        sorted: Vec<NodeName>,
        armed: Option<String>,
        watched: bool,
    ) {
        let keyed = sorted.iter().all(|c| c.sequence().is_some());
        let total = sorted.len();
        self.evaluate_listing(now, node, sorted, Listed { keyed, truncated: false, total, armed, watched });
    }

    /// Reports `Queued` if the position or the count changed.
    pub(super) fn report_queued(&mut self, position: usize, total: usize) {
        if self.rare().queued != Some((position, total)) {
            self.rare_mut().queued = Some((position, total));
            self.out.emit(LockEvent::Queued { position, total });
        }
    }

    /// Evaluates `sorted`, a fresh listing or a kept one minus a deleted
    /// predecessor, which `listed` describes.
    pub(super) fn evaluate_listing(&mut self, now: Instant, node: Node, sorted: Vec<NodeName>, listed: Listed) {
        let Listed { keyed, truncated, total, armed, watched } = listed;
        match self.verdict(&sorted, node.name()) {
            Verdict::Acquired => {
                if let Some(rare) = self.rare.as_mut() {
                    rare.last_listing = Vec::new();
                    rare.listing_truncated = false;
                }
                self.grant(now, node, watched);
            }
            Verdict::Missing => {
                // Our node vanished (expiry, deletion): delete it anyway and
                // re-create at the back of the queue.
                self.start_delete(node.path.clone());
                self.no_node_retry(now, RequestError::NodeVanished);
            }
            Verdict::Watch(pred) => {
                self.waited = true;
                if self.watches_held() && !self.revocable && !self.own_watched {
                    // Watch our own node now, with the predecessor's watch,
                    // not once granted: the grant (often a fast handoff with
                    // no request at all) then sends nothing, and a waiting
                    // node deleted by someone else is seen at once.
                    self.own_watched = true;
                    self.send(Op::exists(&node.path, true), Purpose::WatchHeld);
                }
                // A truncated window no longer knows the nodes it left out:
                // one fewer than before (the predecessor that went).
                let position = match self.rare().queued {
                    Some((p, _)) if truncated => p.saturating_sub(1).max(1),
                    _ => policy::position(&sorted, node.name(), self.position_rule()),
                };
                self.report_queued(position, total);
                let (kept, cut) = self.keep_window(sorted, node.name());
                let rare = self.rare_mut();
                rare.last_listing = kept;
                rare.listing_keyed = keyed;
                rare.listing_truncated = truncated || cut;
                let path = match self.base.join(&pred) {
                    Ok(path) => path,
                    Err(_) => return self.relist(node),
                };
                if armed.as_deref() == Some(pred.as_str()) {
                    // As after the watch's own reply: past the deadline, a
                    // listing that does not grant ends the wait.
                    if self.deadline.is_some_and(|d| now >= d) {
                        return self.abandon_with(node, LockEvent::TimedOut);
                    }
                    self.state = State::Waiting { node, on: Watched::Pred(pred) };
                } else {
                    self.send(Op::get_data(&path, true), Purpose::WatchPred);
                    self.state = State::Watching { node, pred, fired: false };
                }
                self.arm_look();
            }
        }
    }

    /// The look-ahead of the fast handoff: the node just ahead of the
    /// predecessor in the kept listing is watched too. In a FIFO queue it
    /// goes first, so the re-list it triggers runs while the predecessor
    /// still holds, and the predecessor's deletion then finds nothing left
    /// ahead in the kept listing: the grant costs no round trip, where a
    /// re-list after that deletion would cost one on every handoff.
    fn arm_look(&mut self) {
        let look = self.look_target();
        if look.is_some() && look == self.rare().look {
            // Already watched: its watch is still armed.
            return;
        }
        // A node that is no longer the look-ahead (it may be the predecessor
        // now) is forgotten: its events are the predecessor's, or nobody's.
        if let Some(rare) = self.rare.as_mut() {
            rare.look = None;
        }
        let Some(name) = look else { return };
        let Ok(path) = self.base.join(&name) else { return };
        let op = self.send_op(Op::get_data(&path, true), Purpose::WatchLook);
        let rare = self.rare_mut();
        rare.look_ops.push((op, name.clone()));
        rare.look = Some(name);
    }

    /// The node just ahead of the watched predecessor in the kept listing
    /// (standard rule, fast handoff only).
    fn look_target(&self) -> Option<String> {
        if !matches!(self.rule, Rule::Standard { .. }) || !self.fast_handoff_allowed() {
            return None;
        }
        let pred = match &self.state {
            State::Watching { pred, .. } | State::Waiting { on: Watched::Pred(pred), .. } => pred,
            _ => return None,
        };
        let listing = &self.rare().last_listing;
        let at = listing.iter().position(|c| c.as_str() == pred.as_str())?;
        Some(String::from(listing.get(at.checked_sub(1)?)?.as_str()))
    }

    /// The reply to look-ahead getData `op`: it matters only while its
    /// node is still the look-ahead.
    pub(super) fn on_watch_look(&mut self, op: OpId, result: Result<Response, RequestError>) {
        let Some(rare) = self.rare.as_mut() else { return };
        let Some(at) = rare.look_ops.iter().position(|(o, _)| *o == op) else { return };
        let (_, name) = rare.look_ops.swap_remove(at);
        if rare.look.as_deref() != Some(name.as_str()) {
            return;
        }
        match result {
            Ok(_) => {}
            Err(RequestError::Server(ErrorCode::NO_NODE)) => self.look_gone(&name),
            // Not armed: the look-ahead is only ever a shortcut.
            Err(_) => rare.look = None,
        }
    }

    /// The look-ahead node went: list now, while the predecessor still holds
    /// (unless a listing is already on its way).
    pub(super) fn look_gone(&mut self, name: &str) {
        let rare = self.rare_mut();
        rare.look = None;
        rare.last_listing.retain(|c| c.as_str() != name);
        let waiting =
            matches!(self.state, State::Waiting { on: Watched::Pred(_), .. } | State::Watching { fired: false, .. });
        if waiting && !self.list_in_flight() {
            self.send_list();
        }
    }

    pub(super) fn on_watch_pred(&mut self, now: Instant, result: Result<Response, RequestError>) {
        let State::Watching { node, pred, fired } = &self.state else { return };
        let (node, pred, fired) = (node.clone(), pred.clone(), *fired);
        match result {
            Ok(_) => {
                if self.deadline.is_some_and(|d| now >= d) {
                    self.abandon_with(node, LockEvent::TimedOut);
                } else if fired {
                    self.relist(node);
                } else {
                    self.state = State::Waiting { node, on: Watched::Pred(pred) };
                }
            }
            // Already gone: as if its deletion had fired (the fast handoff
            // skips the re-list a NoNode used to cost), unless something
            // fired meanwhile (our own node's deletion, a dropped
            // connection): then look again.
            Err(RequestError::Server(ErrorCode::NO_NODE)) if self.deadline.is_none_or(|d| now < d) && !fired => {
                self.pred_gone(now, node, &pred)
            }
            // The connection dropped (or the deadline passed): look again.
            Err(RequestError::Server(ErrorCode::NO_NODE)) | Err(RequestError::ConnectionLoss) => self.relist(node),
            Err(e) => self.abandon_with(node, LockEvent::Failed(e)),
        }
    }

    pub(super) fn fast_handoff_allowed(&self) -> bool {
        self.config.plan == OpPlan::Pipelined
            && self.config.fast_handoff
            && !self.no_fast_handoff
            && self.name().keys_are_sequences()
            && !self.rare().last_listing.is_empty()
            && self.rare().listing_keyed
    }

    /// What of a sorted listing the fast handoff needs, and whether anything
    /// was left out. The standard rule (index below `max_leases`) depends only
    /// on the nodes ahead of ours, and deleting one of them moves the next
    /// nearest into its place; so ours and the nearest nodes ahead suffice
    /// while the window lasts ([`LockCore::window_exhausted`]). Without this
    /// a long queue keeps quadratic memory: every waiter the whole queue
    /// ahead of it. The read rule watches the first writer, wherever it is,
    /// so its listings are kept whole.
    pub(super) fn keep_window(&self, mut sorted: Vec<NodeName>, ours: &str) -> (Vec<NodeName>, bool) {
        let Rule::Standard { max_leases } = self.rule else { return (sorted, false) };
        let Some(idx) = sorted.iter().position(|c| c.as_str() == ours) else { return (sorted, false) };
        sorted.truncate(idx + 1);
        let keep = LISTING_WINDOW.max(max_leases);
        let cut = idx > keep;
        if cut {
            sorted.drain(..idx - keep);
        }
        sorted.shrink_to_fit();
        (sorted, cut)
    }

    /// A truncated window can no longer decide: fewer than `max_leases`
    /// nodes are left ahead of ours in it, but nodes left out may still be
    /// there. (Only the standard rule truncates.)
    pub(super) fn window_exhausted(&self, listing: &[NodeName], ours: &str) -> bool {
        let Rule::Standard { max_leases } = self.rule else { return false };
        policy::ahead_of(listing, ours).len() < max_leases
    }
}
