//! The plumbing every recipe shares: an outbox for the ops it wants sent and
//! the events it reports, and a router for composites that forward their
//! members' ops under ids of their own.

use alloc::collections::{BTreeMap, VecDeque};

use crate::op::Op;
use crate::recipe::{OpId, RecipeEvent, RecipeOp};

/// Ops to send, each under a fresh id, and events to report, in order: the
/// outputs of a recipe, and the one source of [`OpId`]s (for a recipe of
/// an embedder's own too).
#[derive(Debug)]
pub struct Outbox<E = RecipeEvent> {
    next_op: u64,
    ops: VecDeque<RecipeOp>,
    events: VecDeque<E>,
}

impl<E> Default for Outbox<E> {
    fn default() -> Self {
        Outbox { next_op: 0, ops: VecDeque::new(), events: VecDeque::new() }
    }
}

impl<E> Outbox<E> {
    /// Queues `op` under a fresh id and returns the id.
    pub fn send(&mut self, op: Op) -> OpId {
        let id = self.fresh_id();
        self.ops.push_back(RecipeOp { id, op });
        id
    }

    /// An id no op of this outbox has had.
    pub(crate) fn fresh_id(&mut self) -> OpId {
        let id = OpId::new(self.next_op);
        self.next_op += 1;
        id
    }

    /// Queues an op under an id from [`Outbox::fresh_id`].
    pub(crate) fn send_as(&mut self, id: OpId, op: Op) {
        self.ops.push_back(RecipeOp { id, op });
    }

    /// Queues an event.
    pub fn emit(&mut self, event: E) {
        self.events.push_back(event);
    }

    /// The next op to send.
    pub fn poll_op(&mut self) -> Option<RecipeOp> {
        crate::slack::pop_front_freeing(&mut self.ops)
    }

    /// The next event.
    pub fn poll_event(&mut self) -> Option<E> {
        crate::slack::pop_front_freeing(&mut self.events)
    }

    /// No op is waiting to be sent.
    pub fn no_ops(&self) -> bool {
        self.ops.is_empty()
    }
}

/// A composite's forwarded ops: each member op leaves under a fresh id of the
/// composite, and its reply finds the way back to the member. Every sent op
/// gets exactly one reply (a result, or the session's verdict), which spends
/// its route.
#[derive(Debug)]
pub(crate) struct OpRouter<K> {
    routes: BTreeMap<OpId, (K, OpId)>,
}

impl<K> Default for OpRouter<K> {
    fn default() -> Self {
        OpRouter { routes: BTreeMap::new() }
    }
}

impl<K: Copy> OpRouter<K> {
    /// Sends member `member`'s op through `out` under a fresh id.
    pub(crate) fn forward<E>(&mut self, out: &mut Outbox<E>, member: K, op: RecipeOp) {
        let id = out.fresh_id();
        self.routes.insert(id, (member, op.id));
        out.send_as(id, op.op);
    }

    /// The member and its own id for a reply to `id`; the route is spent.
    pub(crate) fn take(&mut self, id: OpId) -> Option<(K, OpId)> {
        self.routes.remove(&id)
    }

    /// Forgets every route: the session that would answer them has ended.
    pub(crate) fn clear(&mut self) {
        self.routes.clear();
    }
}
