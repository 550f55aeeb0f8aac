//! The state only a contended, revocable, timed, counted or recovering
//! lock needs, kept out of [`LockCore`] so that thousands of uncontended
//! locks do not each carry it.

use super::*;

/// What only a contended, revocable, timed, counted or recovering lock
/// needs: made on first use and dropped once back to empty
/// ([`LockCore::tidy`]), so an uncontended lock, idle or held, carries none.
#[derive(Debug)]
pub(super) struct Rare {
    /// How the acquire under way names its node (a downgrade's fixed read
    /// node).
    pub(super) shape: Shape,
    /// Last sorted listing while waiting, for the fast handoff. Standard
    /// rule: only the [`LISTING_WINDOW`] nodes nearest ahead of ours, and
    /// ours (see [`LockCore::keep_window`]).
    pub(super) last_listing: Vec<NodeName>,
    /// The look-ahead node whose watch this session holds (or is arming)
    /// and has not seen fire, whatever the attempt: forgotten when the watch
    /// fires or fails to arm, when the session ends, or when it stops being
    /// the look-ahead (see [`LockCore::arm_look`]).
    pub(super) look: Option<String>,
    /// The node each look-ahead getData in flight is on.
    pub(super) look_ops: Vec<(OpId, String)>,
    /// Every name of the full last listing had a Curator sequence key.
    pub(super) listing_keyed: bool,
    /// Nodes further ahead than the window were left out of `last_listing`.
    pub(super) listing_truncated: bool,
    /// The last `Queued { position, total }` reported for this acquire.
    pub(super) queued: Option<(usize, usize)>,
    /// Count rule: how many children the last listing held.
    pub(super) listed: Option<usize>,
    /// Count rule: the limit the held node was granted under.
    pub(super) granted_under: Option<usize>,
    /// Abandoned creates whose reply was lost: protection prefixes to find
    /// under the base path and delete, sorted, each with its lookup in
    /// flight.
    pub(super) orphans: Vec<(String, Option<OpId>)>,
    /// The node of a hold its deletion made `Lost` (seen by a watch or a
    /// read), for an owner that reports losses per node (the semaphore's
    /// leases): see [`LockCore::take_lost`].
    pub(super) lost: Option<ZkPath>,
    /// While held with [`LockConfig::max_hold`]: when the hold expires.
    pub(super) hold_until: Option<Instant>,
}

impl Rare {
    pub(super) const EMPTY: Rare = Rare {
        shape: Shape::Sequential,
        last_listing: Vec::new(),
        look: None,
        look_ops: Vec::new(),
        listing_keyed: false,
        listing_truncated: false,
        queued: None,
        listed: None,
        granted_under: None,
        orphans: Vec::new(),
        lost: None,
        hold_until: None,
    };

    /// Nothing in it differs from [`Rare::EMPTY`].
    pub(super) fn is_empty(&self) -> bool {
        self.shape == Shape::Sequential
            && self.last_listing.is_empty()
            && self.look.is_none()
            && self.look_ops.is_empty()
            && !self.listing_keyed
            && !self.listing_truncated
            && self.queued.is_none()
            && self.listed.is_none()
            && self.granted_under.is_none()
            && self.orphans.is_empty()
            && self.lost.is_none()
            && self.hold_until.is_none()
    }
}

/// What a lock without [`Rare`] state reads.
static NO_RARE: Rare = Rare::EMPTY;

impl LockCore {
    /// The rare state, or [`Rare::EMPTY`] when there is none.
    pub(super) fn rare(&self) -> &Rare {
        self.rare.as_deref().unwrap_or(&NO_RARE)
    }

    /// The rare state, made now if there is none.
    pub(super) fn rare_mut(&mut self) -> &mut Rare {
        self.rare.get_or_insert_with(|| Box::new(Rare::EMPTY))
    }

    /// Drops the rare state once nothing in it is set: after every input
    /// and command. A settled lock (idle, held or releasing) first forgets
    /// its wait: the kept listing and the last `Queued` are read only while
    /// an acquire waits, and set anew before it does.
    pub(super) fn tidy(&mut self) {
        let settled = matches!(self.state, State::Idle | State::Held { .. } | State::Releasing { .. });
        let Some(rare) = self.rare.as_deref_mut() else { return };
        if settled {
            rare.last_listing = Vec::new();
            rare.listing_keyed = false;
            rare.listing_truncated = false;
            rare.queued = None;
        }
        if rare.is_empty() {
            self.rare = None;
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::recipes::LockConfig;
    use crate::recipes::policy::LOCK_NAME;
    use zoolock_wire::Stat;

    const OTHER: &str = "_c_0f-lock-0000000000";

    /// Answers every op the core wants sent, as a server holding `OTHER`
    /// ahead of our node would, and returns their opcodes in order.
    fn answer(core: &mut LockCore, now: Instant) -> Vec<OpCode> {
        let mut codes = Vec::new();
        while let Some(RecipeOp { id, op }) = core.poll_op() {
            let code = op.op_code();
            let path = String::from(op.request().path().unwrap_or_default());
            let reply = match code {
                OpCode::CREATE_CONTAINER => Err(RequestError::Server(ErrorCode::NODE_EXISTS)),
                OpCode::CREATE2 => Ok(Response::Create2 { path: path + "0000000001", stat: Stat::default() }),
                OpCode::GET_CHILDREN2 => {
                    let ours = core.waiting_node().map(|n| String::from(n.name()));
                    let children = [Some(String::from(OTHER)), ours].into_iter().flatten().collect();
                    Ok(Response::Children2 { children, stat: Stat::default() })
                }
                OpCode::GET_DATA => Ok(Response::Data { data: Some(Bytes::new()), stat: Stat::default() }),
                OpCode::DELETE => Ok(Response::Empty),
                _ => Ok(Response::Stat(Stat::default())),
            };
            core.handle_reply(now, id, reply);
            codes.push(code);
        }
        codes
    }

    /// A lock that waited keeps its listing in the rare state while it
    /// waits, and carries none once the wait is over: held, then released.
    #[test]
    fn a_wait_leaves_no_rare_state_behind() {
        let now = Instant::from_nanos(0);
        let base = ZkPath::new("/app/lock").unwrap();
        let rule = Rule::Standard { max_leases: 1 };
        let mut core = LockCore::new(LockConfig::new(1).into(), base, None, SortKey::curator(LOCK_NAME), rule);
        core.acquire(now, None, Shape::Sequential).unwrap();
        // createContainer, create2 and the listing; then our node's exists
        // and the predecessor's getData.
        let codes = answer(&mut core, now);
        assert!(codes.contains(&OpCode::CREATE2) && codes.contains(&OpCode::GET_DATA), "{codes:?}");
        assert!(core.held().is_none());
        assert!(core.rare.as_ref().is_some_and(|r| !r.last_listing.is_empty()));
        let gone = WatchEvent { event_type: EventType::NODE_DELETED, path: String::from("/app/lock/") + OTHER };
        core.handle_watch(now, &gone);
        answer(&mut core, now);
        assert!(core.held().is_some());
        assert!(core.rare.is_none(), "{:?}", core.rare);
        core.release().unwrap();
        assert_eq!(answer(&mut core, now), [OpCode::DELETE]);
        assert!(core.is_quiescent() && core.rare.is_none() && core.deleting.capacity() == 0);
    }
}
