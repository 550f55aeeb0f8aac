//! The protected create: lazy parents (probed top-down or bottom-up, made
//! as containers when the server has them), and the recovery of a create
//! whose reply was lost (find the node by its protection prefix, or adopt it).

use super::*;

impl LockCore {
    pub(super) fn begin_create(&mut self, _now: Instant) {
        self.attempt += 1;
        self.own_watched = false;
        // `_c_<uuid>-` (when protected), then
        // `<base>/<prefix><name>[<suffix>]`, built in place.
        let mut prefix = String::with_capacity(40);
        if self.name().is_protected() {
            prefix.push_str("_c_");
            self.rng.push_uuid_v4(&mut prefix);
            prefix.push('-');
        }
        let name = self.name().as_str();
        let suffix = match &self.rare().shape {
            Shape::Sequential => "",
            Shape::Fixed(suffix) => suffix.as_str(),
        };
        let base = self.base_prefix();
        let mut target = String::with_capacity(base.len() + 1 + prefix.len() + name.len() + suffix.len());
        for part in [base, "/", &prefix, name, suffix] {
            target.push_str(part);
        }
        let target = match ZkPath::new_sequential_prefix(&target) {
            Ok(target) => target,
            Err(e) => return self.fail(RequestError::Refused(e.into())),
        };
        self.state = State::Creating(Create {
            prefix_len: prefix.len(),
            target,
            step: CreateStep::Sent,
            made_parents: false,
            adopted: None,
        });
        self.ensure_base();
        self.send_create();
    }

    /// Pipelined plan, a handle's first create: `createContainer(base)` rides
    /// ahead of the create and the listing in the same write (the server
    /// runs a session's requests in order), so a missing base costs no
    /// NoNode create, wasted listing and probes, and an existing one one
    /// NodeExists reply, once per handle. What lands on the server is what
    /// Curator's `creatingParentContainersIfNeeded` makes. Only a missing
    /// grandparent still takes the probes (the create then says NoNode).
    fn ensure_base(&mut self) {
        // A fixed node (a downgrade's read node) goes beside our held write
        // node: the base is there.
        let fixed = matches!(self.rare().shape, Shape::Fixed(_));
        if self.base_ensured || fixed || self.config.plan != OpPlan::Pipelined || self.base.is_root() {
            return;
        }
        self.base_ensured = true;
        let base = self.base.clone();
        // (No op for a path it refuses: the create reports what is wrong.)
        if let Ok(op) = self.parent_op(&base) {
            self.send(op, Purpose::EnsureBase);
        }
    }

    /// Its outcome only matters to a server without containers; any other
    /// failure (NoNode, NoAuth on the grandparent, a lost connection) is the
    /// create's to meet and handle.
    pub(super) fn on_ensure_base(&mut self, result: Result<Response, RequestError>) {
        if let Err(RequestError::Server(ErrorCode::UNIMPLEMENTED)) = result {
            self.no_containers = true;
        }
    }

    /// The create of a missing ancestor: a container, or (Curator's
    /// `dontUseContainerParents()`, or a server without containers) a plain
    /// persistent create, opcode 1, flags 0; no Stat is needed for a parent.
    fn parent_op(&self, path: &ZkPath) -> Result<Op, RequestError> {
        if self.container_parents() {
            return Ok(Op::create_container(path, Bytes::new(), self.config.acl_for(path.as_str())));
        }
        let request = CreateRequest {
            path: String::from(path.as_str()),
            data: Some(Bytes::new()),
            acl: self.config.acl_for(path.as_str()),
            flags: CreateMode::PERSISTENT,
        };
        Op::from_request(Request::Create(request)).map_err(RequestError::Refused)
    }

    pub(super) fn send_create(&mut self) {
        let mode = match self.rare().shape {
            Shape::Sequential => CreateMode::EPHEMERAL_SEQUENTIAL,
            Shape::Fixed(_) => CreateMode::EPHEMERAL,
        };
        let data = self.node_data();
        let State::Creating(c) = &mut self.state else { return };
        c.step = CreateStep::Sent;
        let op = Op::create(&c.target, data, self.config.acl_for(c.target.as_str()), mode);
        self.send(op, Purpose::Create);
        if self.config.plan == OpPlan::Pipelined && !self.revocable {
            // The listing rides in the same round trip; the server runs it
            // after the create, so it sees our node.
            let watch = self.list_watch() || self.child_watch_wanted();
            self.send(Op::get_children(&self.base.clone(), watch), Purpose::List { watch });
        }
    }

    pub(super) fn on_create(&mut self, now: Instant, result: Result<Response, RequestError>) {
        let sequential = self.rare().shape == Shape::Sequential;
        let State::Creating(c) = &mut self.state else { return };
        match result {
            Ok(Response::Create2 { path, stat }) => {
                match Node::from_create_reply(&path, &c.target, sequential, FencingToken(stat.czxid)) {
                    Ok(node) => self.created(now, node),
                    Err(e) => self.fail_unexpected_create(e),
                }
            }
            Ok(_) => self.fail_unexpected_create(RequestError::UnexpectedResponse { op: OpCode::CREATE2 }),
            Err(RequestError::Server(ErrorCode::NO_NODE)) if !c.made_parents => {
                c.made_parents = true;
                // A pipelined listing of the missing parent is now stale.
                self.attempt += 1;
                self.start_probe();
            }
            Err(e @ RequestError::Server(ErrorCode::NO_NODE)) => self.no_node_retry(now, e),
            // Unprotected, the node (if made) cannot be found again: the
            // attempt ends, and the node stays until the session's end.
            Err(e @ RequestError::ConnectionLoss) if c.prefix().is_empty() => self.fail(e),
            Err(RequestError::ConnectionLoss) => {
                c.step = CreateStep::AwaitReconnect;
                // The pipelined listing of this attempt is stale too.
                self.attempt += 1;
            }
            Err(e) => self.fail(e),
        }
    }

    /// Ancestors of the node to make, top-down, excluding `/` (Curator 5.4's mkdirs).
    pub(super) fn ancestors(&self) -> Vec<String> {
        let State::Creating(c) = &self.state else { return Vec::new() };
        let mut out = Vec::new();
        let target = c.target.as_str();
        for (idx, _) in target.match_indices('/').filter(|(i, _)| *i > 0) {
            if let Some(a) = target.get(..idx) {
                out.push(String::from(a));
            }
        }
        out
    }

    pub(super) fn bottom_up(&self) -> bool {
        self.config.plan.probes_bottom_up()
    }

    pub(super) fn start_probe(&mut self) {
        match self.ancestors().len().checked_sub(1) {
            Some(deepest) if self.bottom_up() => self.probe(deepest),
            Some(_) => self.probe(0),
            None => self.send_create(),
        }
    }

    /// After ancestor `idx` was made: top-down probes the next one;
    /// bottom-up already knows the ones below are missing.
    pub(super) fn after_parent(&mut self, idx: usize) {
        if self.bottom_up() { self.make_parent(idx + 1) } else { self.probe(idx + 1) }
    }

    pub(super) fn probe(&mut self, idx: usize) {
        let ancestors = self.ancestors();
        let State::Creating(c) = &mut self.state else { return };
        match ancestors.get(idx).and_then(|a| ZkPath::new(a).ok()) {
            Some(path) => {
                c.step = CreateStep::Probe(idx);
                self.send(Op::exists(&path, false), Purpose::Probe);
            }
            None => self.send_create(),
        }
    }

    pub(super) fn make_parent(&mut self, idx: usize) {
        let ancestors = self.ancestors();
        let State::Creating(c) = &mut self.state else { return };
        let Some(path) = ancestors.get(idx).and_then(|a| ZkPath::new(a).ok()) else {
            return self.send_create();
        };
        c.step = CreateStep::MakeParent(idx);
        match self.parent_op(&path) {
            Ok(op) => self.send(op, Purpose::MakeParent),
            Err(e) => self.fail(e),
        }
    }

    pub(super) fn on_probe(&mut self, _now: Instant, result: Result<Response, RequestError>) {
        let State::Creating(Create { step: CreateStep::Probe(idx), .. }) = self.state else { return };
        match result {
            Ok(_) if self.bottom_up() => self.make_parent(idx + 1),
            Ok(_) => self.probe(idx + 1),
            Err(RequestError::Server(ErrorCode::NO_NODE)) if self.bottom_up() && idx > 0 => self.probe(idx - 1),
            Err(RequestError::Server(ErrorCode::NO_NODE)) => self.make_parent(idx),
            Err(RequestError::ConnectionLoss) => self.probe(idx),
            Err(e) => self.fail(e),
        }
    }

    pub(super) fn on_make_parent(&mut self, now: Instant, result: Result<Response, RequestError>) {
        let State::Creating(Create { step: CreateStep::MakeParent(idx), .. }) = self.state else { return };
        match result {
            Ok(_) | Err(RequestError::Server(ErrorCode::NODE_EXISTS)) => self.after_parent(idx),
            // An ancestor probed a moment ago has gone (the container reaper
            // took it): start over within the retry budget, as Curator's
            // attemptLock does on NoNode.
            Err(e @ RequestError::Server(ErrorCode::NO_NODE)) => self.no_node_retry(now, e),
            Err(RequestError::Server(ErrorCode::UNIMPLEMENTED)) if self.container_parents() => {
                // A server without containers: persistent parents from now on.
                self.no_containers = true;
                self.make_parent(idx);
            }
            Err(RequestError::ConnectionLoss) => self.make_parent(idx),
            Err(e) => self.fail(e),
        }
    }

    pub(super) fn on_recover(&mut self, result: Result<Response, RequestError>) {
        let State::Creating(c) = &mut self.state else { return };
        match result {
            Ok(Response::Children(names)) | Ok(Response::Children2 { children: names, .. }) => {
                // A name the server made up that is no valid child is no match.
                let found = names.iter().filter(|n| n.starts_with(c.prefix())).find_map(|n| self.base.join(n).ok());
                match found {
                    Some(path) => {
                        c.adopted = Some(path.clone());
                        c.step = CreateStep::AdoptStat;
                        self.send(Op::exists(&path, false), Purpose::AdoptStat);
                    }
                    None => self.send_create(),
                }
            }
            Ok(_) => self.send_create(),
            Err(RequestError::Server(ErrorCode::NO_NODE)) => self.send_create(),
            Err(RequestError::ConnectionLoss) => c.step = CreateStep::AwaitReconnect,
            Err(e) => self.fail(e),
        }
    }

    pub(super) fn on_adopt_stat(&mut self, now: Instant, result: Result<Response, RequestError>) {
        let State::Creating(c) = &mut self.state else { return };
        let Some(path) = c.adopted.clone() else { return };
        match result {
            Ok(Response::Stat(stat)) => {
                self.created(now, Node { path, token: FencingToken(stat.czxid) });
            }
            Err(RequestError::ConnectionLoss) => c.step = CreateStep::AwaitReconnect,
            // Gone between the lookup and now: create again.
            _ => {
                c.adopted = None;
                self.send_create();
            }
        }
    }

    /// The create's reply made no sense, but our node may well exist: look it
    /// up by its protection prefix and delete it, then fail with the server's
    /// fault.
    fn fail_unexpected_create(&mut self, error: RequestError) {
        self.orphan_create();
        self.find_orphans();
        self.fail(error);
    }
}
