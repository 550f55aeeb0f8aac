//! How a [`Semaphore`] takes its inputs (its [`Recipe`] impl) and moves its
//! members' ops and events along: the plumbing, apart from the commands
//! (`mod.rs`) and the reactions to its cores' events (`reactions.rs`).

use alloc::collections::BTreeSet;
use alloc::vec::Vec;

use zoolock_wire::Response;

use super::super::lock_core::LockCore;
use super::super::lock_event::LockEvent;
use super::{MUTEX_SLOT, Member, Phase, Semaphore, SemaphoreEvent};
use crate::error::RequestError;
use crate::recipe::{OpId, Recipe, RecipeOp};
use crate::session::{ConnectionState, WatchEvent};
use crate::time::Instant;

impl Semaphore {
    /// Moves the cores' ops out (mutex first, then leases by slot) and reacts
    /// to their events, until neither has more. Ops a core queued before an
    /// event are sent before anything the reaction queues.
    pub(super) fn pump(&mut self, now: Instant) {
        loop {
            self.drain_ops();
            if let Some(event) = self.mutex.poll_event() {
                self.on_mutex_event(now, event);
                continue;
            }
            let next = self.cores.iter_mut().find_map(|(slot, core)| core.poll_event().map(|e| (*slot, e)));
            if let Some((slot, event)) = next {
                self.on_lease_event(now, slot, event);
                continue;
            }
            if self.phase() == Some(Phase::MutexBusy) && self.can_start() {
                self.start_lease(now);
                continue;
            }
            break;
        }
        self.revoke_pending.retain(|s| self.cores.contains_key(s));
        self.collect();
    }

    /// Moves every core's queued ops out (mutex first, then leases by slot).
    fn drain_ops(&mut self) {
        self.drain(MUTEX_SLOT);
        let slots: Vec<u64> = self.cores.keys().copied().collect();
        for slot in slots {
            self.drain(slot);
        }
    }

    /// Moves one core's queued ops out, in order. Called right after every
    /// command or input given to a core, so ops leave in the order they were
    /// made across cores.
    pub(super) fn drain(&mut self, slot: u64) {
        loop {
            let op = match slot {
                MUTEX_SLOT => self.mutex.poll_op(),
                _ => self.cores.get_mut(&slot).and_then(|c| c.poll_op()),
            };
            let Some(op) = op else { return };
            self.router.forward(&mut self.out, Member::Core(slot), op);
        }
    }

    /// Runs `f` on the lease core in `slot` (if any), then moves its ops out.
    pub(super) fn on_core<X>(&mut self, slot: u64, f: impl FnOnce(&mut LockCore) -> X) -> Option<X> {
        let out = self.cores.get_mut(&slot).map(f);
        self.drain(slot);
        out
    }

    /// Forgets lease cores that hold nothing and owe nothing.
    fn collect(&mut self) {
        let current = match self.phase() {
            Some(Phase::Lease { slot } | Phase::Unlocking { slot }) => Some(slot),
            _ => None,
        };
        let keep: BTreeSet<u64> = self
            .held
            .iter()
            .chain(self.returning.iter())
            .chain(self.acquiring.iter().flat_map(|a| a.got.iter()))
            .chain(current.iter())
            .copied()
            .collect();
        self.cores.retain(|slot, core| keep.contains(slot) || !core.is_idle() || core.has_cleanup());
    }

    /// Session expiry or close: every ephemeral node is gone.
    fn end_session(&mut self, now: Instant, state: ConnectionState) {
        // A `Suspended` that was reported is answered with `Lost` even when
        // every lease was returned meanwhile: the handle reports the status
        // of its leases from these events, and would stay suspended.
        let had_leases = !self.held.is_empty() || self.suspended;
        let was_acquiring = self.acquiring.take().is_some();
        for slot in core::mem::take(&mut self.held) {
            if let Some(node) = self.cores.get(&slot).and_then(|c| c.held()) {
                self.out.emit(SemaphoreEvent::LeaseLost { node: node.shared_path() });
            }
        }
        self.verifying.clear();
        self.suspended = false;
        self.mutex.handle_session(now, state);
        while self.mutex.poll_event().is_some() {}
        for (slot, core) in self.cores.iter_mut() {
            core.handle_session(now, state);
            while let Some(event) = core.poll_event() {
                if event == LockEvent::Released && self.returning.remove(slot) {
                    self.out.emit(SemaphoreEvent::Released);
                }
            }
        }
        self.returning.clear();
        self.router.clear();
        if had_leases {
            self.out.emit(SemaphoreEvent::Lost);
        }
        if was_acquiring {
            let error = state.end_error().unwrap_or(RequestError::Closed);
            self.out.emit(SemaphoreEvent::Failed(error));
        }
        self.pump(now);
    }
}

impl Recipe for Semaphore {
    type Event = SemaphoreEvent;

    fn handle_reply(&mut self, now: Instant, op: OpId, result: Result<Response, RequestError>) {
        match self.router.take(op) {
            Some((Member::Core(MUTEX_SLOT), inner)) => self.mutex.handle_reply(now, inner, result),
            Some((Member::Core(slot), inner)) => {
                self.on_core(slot, |c| c.handle_reply(now, inner, result));
            }
            Some((Member::Count, inner)) => {
                if let Some(c) = self.count.as_mut() {
                    c.handle_reply(now, inner, result);
                }
                self.take_count_ops();
                self.take_count_events(now);
            }
            None => return,
        }
        self.pump(now);
    }

    fn handle_watch(&mut self, now: Instant, event: &WatchEvent) {
        if let Some(c) = self.count.as_mut() {
            c.handle_watch(now, event);
            self.take_count_ops();
        }
        self.mutex.handle_watch(now, event);
        self.drain(MUTEX_SLOT);
        for slot in self.slots() {
            self.on_core(slot, |c| c.handle_watch(now, event));
        }
        self.pump(now);
    }

    fn handle_session(&mut self, now: Instant, state: ConnectionState) {
        if let Some(c) = self.count.as_mut() {
            c.handle_session(now, state);
            self.take_count_ops();
        }
        match state {
            ConnectionState::Lost
            | ConnectionState::Closed
            | ConnectionState::AuthFailed
            | ConnectionState::SaslFailed(_)
            | ConnectionState::ServerMisbehaved(_)
            | ConnectionState::Unreachable
            | ConnectionState::ChrootUnavailable(_) => {
                return self.end_session(now, state);
            }
            ConnectionState::Suspended if !self.held.is_empty() => self.report_suspended(),
            ConnectionState::Reconnected => {
                self.verifying = self
                    .held
                    .iter()
                    .copied()
                    .filter(|s| self.cores.get(s).is_some_and(|c| c.held().is_some()))
                    .collect();
            }
            _ => {}
        }
        self.mutex.handle_session(now, state);
        self.drain(MUTEX_SLOT);
        for slot in self.slots() {
            self.on_core(slot, |c| c.handle_session(now, state));
        }
        self.pump(now);
        if state == ConnectionState::Reconnected {
            self.finish_verify();
        }
    }

    fn handle_timeout(&mut self, now: Instant) {
        if self.mutex.poll_timeout().is_some_and(|t| t <= now) {
            self.mutex.handle_timeout(now);
            self.drain(MUTEX_SLOT);
        }
        for slot in self.slots() {
            self.on_core(slot, |c| {
                if c.poll_timeout().is_some_and(|t| t <= now) {
                    c.handle_timeout(now);
                }
            });
        }
        if let Some(Phase::Pause { until }) = self.phase() {
            if now >= until {
                self.start_lease(now);
            }
        }
        self.pump(now);
    }

    fn poll_op(&mut self) -> Option<RecipeOp> {
        self.out.poll_op()
    }

    fn poll_event(&mut self) -> Option<SemaphoreEvent> {
        self.out.poll_event()
    }

    fn poll_timeout(&self) -> Option<Instant> {
        let pause = match self.phase() {
            Some(Phase::Pause { until }) => Some(until),
            _ => None,
        };
        self.cores.values().filter_map(|c| c.poll_timeout()).chain(self.mutex.poll_timeout()).chain(pause).min()
    }

    fn is_quiescent(&self) -> bool {
        Semaphore::is_quiescent(self)
    }

    fn holds(&self) -> bool {
        !self.held.is_empty()
    }
}
