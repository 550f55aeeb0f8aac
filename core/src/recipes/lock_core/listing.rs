//! After the create: list, apply the rule, then hold or watch the node the
//! rule names; the fast handoff's kept listing and its window.

use super::*;

impl LockCore {
    /// Our node exists: arm revocation, then list (unless a pipelined listing
    /// is already on its way).
    pub(super) fn created(&mut self, _now: Instant, node: Node) {
        let list_in_flight = self.expected.iter().any(|(_, a, p)| *a == self.attempt && *p == Purpose::List);
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
        self.send(Op::get_children(&self.base.clone(), self.list_watch()), Purpose::List);
    }

    pub(super) fn on_list(&mut self, now: Instant, result: Result<Response, RequestError>) {
        // Every way on below sets the state anew.
        let node = match core::mem::replace(&mut self.state, State::Idle) {
            State::Listing { node } => node,
            other => return self.state = other,
        };
        let children = match result {
            Ok(Response::Children2 { children, .. }) | Ok(Response::Children(children)) => children,
            // A reaped base path lists as empty (Curator 4.0.1+).
            Err(RequestError::Server(ErrorCode::NO_NODE)) => Vec::new(),
            Err(RequestError::ConnectionLoss) => return self.relist(node),
            Err(e) => return self.abandon_with(node, RecipeEvent::Failed(e)),
            Ok(_) => {
                let error = RequestError::UnexpectedResponse { op: OpCode::GET_CHILDREN2 };
                return self.abandon_with(node, RecipeEvent::Failed(error));
            }
        };
        if let Rule::Count { max_leases } = self.rule {
            return self.evaluate_count(now, node, &children, max_leases);
        }
        let sorted = NodeName::sorted(children, self.key);
        self.evaluate(now, node, sorted);
    }

    pub(super) fn evaluate_count(&mut self, now: Instant, node: Node, children: &[String], max_leases: usize) {
        self.listed = Some(children.len());
        match policy::semaphore(children, node.name.as_str(), max_leases) {
            None => {
                self.start_delete(node.path.clone());
                self.no_node_retry(now, RequestError::NodeVanished);
            }
            Some(true) => {
                // Curator checks off the leases child watch once it has a lease.
                self.send(Op::check_watches(&self.base.clone(), WatcherType::ANY), Purpose::CheckWatches);
                self.out.emit(RecipeEvent::Acquired { node: node.path_string(), token: node.token });
                self.granted_under = Some(max_leases);
                self.state = State::Held { node };
            }
            Some(false) if self.deadline.is_some_and(|d| now >= d) => self.abandon_with(node, RecipeEvent::TimedOut),
            // Waiting on the child watch of the base path.
            Some(false) => {
                self.report_queued(children.len().saturating_sub(max_leases).max(1), children.len());
                self.state = State::Waiting { node, on: Watched::Children };
            }
        }
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

    /// Evaluates a fresh listing.
    pub(super) fn evaluate(&mut self, now: Instant, node: Node, sorted: Vec<NodeName>) {
        let keyed = sorted.iter().all(|c| c.sequence().is_some());
        let total = sorted.len();
        self.evaluate_listing(now, node, sorted, keyed, false, total);
    }

    /// Reports `Queued` if the position or the count changed.
    pub(super) fn report_queued(&mut self, position: usize, total: usize) {
        if self.queued != Some((position, total)) {
            self.queued = Some((position, total));
            self.out.emit(RecipeEvent::Queued { position, total });
        }
    }

    /// Evaluates `sorted`, a fresh listing or a kept one minus a deleted
    /// predecessor; `keyed` and `truncated` describe the listing it came from,
    /// `total` how many nodes it stands for.
    pub(super) fn evaluate_listing(
        &mut self,
        now: Instant,
        node: Node,
        sorted: Vec<NodeName>,
        keyed: bool,
        truncated: bool,
        total: usize,
    ) {
        match self.verdict(&sorted, node.name.as_str()) {
            Verdict::Acquired => {
                self.last_listing.clear();
                self.listing_truncated = false;
                self.out.emit(RecipeEvent::Acquired { node: node.path_string(), token: node.token });
                self.state = State::Held { node };
            }
            Verdict::Missing => {
                // Our node vanished (expiry, deletion): delete it anyway and
                // re-create at the back of the queue.
                self.start_delete(node.path.clone());
                self.no_node_retry(now, RequestError::NodeVanished);
            }
            Verdict::Watch(pred) => {
                // A truncated window no longer knows the nodes it left out:
                // one fewer than before (the predecessor that went).
                let position = match self.queued {
                    Some((p, _)) if truncated => p.saturating_sub(1).max(1),
                    _ => policy::position(&sorted, node.name.as_str(), self.position_rule()),
                };
                self.report_queued(position, total);
                let (kept, cut) = self.keep_window(sorted, node.name.as_str());
                self.last_listing = kept;
                self.listing_keyed = keyed;
                self.listing_truncated = truncated || cut;
                match self.base.join(&pred) {
                    Ok(path) => {
                        self.state = State::Watching { node, pred, fired: false };
                        self.send(Op::get_data(&path, true), Purpose::WatchPred);
                    }
                    Err(_) => self.relist(node),
                }
            }
        }
    }

    pub(super) fn on_watch_pred(&mut self, now: Instant, result: Result<Response, RequestError>) {
        let State::Watching { node, pred, fired } = &self.state else { return };
        let (node, pred, fired) = (node.clone(), pred.clone(), *fired);
        match result {
            Ok(_) => {
                if self.deadline.is_some_and(|d| now >= d) {
                    self.abandon_with(node, RecipeEvent::TimedOut);
                } else if fired {
                    self.relist(node);
                } else {
                    self.state = State::Waiting { node, on: Watched::Pred(pred) };
                }
            }
            // Already gone: as if its deletion had fired (the fast handoff
            // skips the re-list a NoNode used to cost).
            Err(RequestError::Server(ErrorCode::NO_NODE)) if self.deadline.is_none_or(|d| now < d) => {
                self.pred_gone(now, node, &pred)
            }
            // The connection dropped (or the deadline passed): look again.
            Err(RequestError::Server(ErrorCode::NO_NODE)) | Err(RequestError::ConnectionLoss) => self.relist(node),
            Err(e) => self.abandon_with(node, RecipeEvent::Failed(e)),
        }
    }

    pub(super) fn fast_handoff_allowed(&self) -> bool {
        self.config.plan == OpPlan::Pipelined
            && self.config.fast_handoff
            && !self.last_listing.is_empty()
            && self.listing_keyed
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
