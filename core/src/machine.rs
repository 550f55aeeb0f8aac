//! What a [`Client`](crate::Client) stores: every recipe of one client as one
//! type, so a typed [`Handle`](crate::Handle) reaches its recipe as itself,
//! by a match on the stored value (no run-time type check).
//!
//! [`CoreMachine`] holds every recipe of this crate, and is what
//! [`Client::new`](crate::Client::new) stores. An embedder with recipes of
//! its own declares its own set (an enum, or a single type) with
//! [`Machines`] and one [`Machine`] impl per recipe, and builds its client
//! with [`Client::for_machines`](crate::Client::for_machines).

use alloc::boxed::Box;

use zoolock_wire::Response;

use crate::error::RequestError;
use crate::recipe::{OpId, Recipe, RecipeEvent, RecipeOp};
use crate::recipes::{
    Election, LeaseQueue, LockQueue, MultiLock, Mutex, Observer, Participants, ReadWriteLock, Revoker, Semaphore,
    SemaphoreMutex, SharedCount,
};
use crate::session::{ConnectionState, WatchEvent};
use crate::time::Instant;

/// A set of recipe kinds one [`Client`](crate::Client) stores: each stored
/// value is one recipe, driven through [`ClientRecipe`].
pub trait Machines: Send + 'static {
    /// The stored recipe.
    fn recipe(&self) -> &dyn ClientRecipe;
    /// The stored recipe, for its inputs and outputs.
    fn recipe_mut(&mut self) -> &mut dyn ClientRecipe;
}

/// A [`Recipe`] as a client drives it: its typed events made into the
/// user-facing [`RecipeEvent`]. This is the one place they are: every
/// recipe whose event converts gets it by the blanket impl.
pub trait ClientRecipe: Send {
    /// [`Recipe::handle_reply`].
    fn handle_reply(&mut self, now: Instant, op: OpId, result: Result<Response, RequestError>);
    /// [`Recipe::handle_watch`].
    fn handle_watch(&mut self, now: Instant, event: &WatchEvent);
    /// [`Recipe::handle_session`].
    fn handle_session(&mut self, now: Instant, state: ConnectionState);
    /// [`Recipe::handle_timeout`].
    fn handle_timeout(&mut self, now: Instant);
    /// [`Recipe::poll_op`].
    fn poll_op(&mut self) -> Option<RecipeOp>;
    /// [`Recipe::poll_event`], as the user-facing event.
    fn poll_event(&mut self) -> Option<RecipeEvent>;
    /// [`Recipe::poll_timeout`].
    fn poll_timeout(&self) -> Option<Instant>;
    /// [`Recipe::is_quiescent`].
    fn is_quiescent(&self) -> bool;
    /// [`Recipe::holds`].
    fn holds(&self) -> bool;
}

impl<R: Recipe> ClientRecipe for R
where
    R::Event: Into<RecipeEvent>,
{
    fn handle_reply(&mut self, now: Instant, op: OpId, result: Result<Response, RequestError>) {
        Recipe::handle_reply(self, now, op, result);
    }

    fn handle_watch(&mut self, now: Instant, event: &WatchEvent) {
        Recipe::handle_watch(self, now, event);
    }

    fn handle_session(&mut self, now: Instant, state: ConnectionState) {
        Recipe::handle_session(self, now, state);
    }

    fn handle_timeout(&mut self, now: Instant) {
        Recipe::handle_timeout(self, now);
    }

    fn poll_op(&mut self) -> Option<RecipeOp> {
        Recipe::poll_op(self)
    }

    fn poll_event(&mut self) -> Option<RecipeEvent> {
        Recipe::poll_event(self).map(Into::into)
    }

    fn poll_timeout(&self) -> Option<Instant> {
        Recipe::poll_timeout(self)
    }

    fn is_quiescent(&self) -> bool {
        Recipe::is_quiescent(self)
    }

    fn holds(&self) -> bool {
        Recipe::holds(self)
    }
}

/// A recipe kind of the set `M`: how it is stored and found again.
pub trait Machine<M>: ClientRecipe + Sized {
    /// The recipe as a stored value.
    fn into_machine(self) -> M;
    /// The recipe stored in `machine`, if it is this kind. A client only
    /// asks this of the value its handle was made for, so `None` means the
    /// handle came from another client.
    fn from_machine(machine: &mut M) -> Option<&mut Self>;
    /// [`Machine::from_machine`], to read (a handle's queries).
    fn from_machine_ref(machine: &M) -> Option<&Self>;
}

/// Every recipe kind of this crate: what [`Client::new`](crate::Client::new)
/// stores. Kinds larger than a lock handle's [`LockQueue`] are boxed, so the
/// enum, and every stored lock, is not the size of the largest kind (a
/// read-write lock or a semaphore is 1.5 KB inline).
#[derive(Debug)]
#[non_exhaustive]
pub enum CoreMachine {
    /// A [`Mutex`].
    Mutex(Box<Mutex>),
    /// A [`SemaphoreMutex`].
    SemaphoreMutex(Box<SemaphoreMutex>),
    /// A [`ReadWriteLock`].
    ReadWriteLock(Box<ReadWriteLock>),
    /// A [`MultiLock`].
    MultiLock(Box<MultiLock>),
    /// A [`Semaphore`].
    Semaphore(Box<Semaphore>),
    /// A [`LockQueue`].
    LockQueue(LockQueue),
    /// A [`LeaseQueue`].
    LeaseQueue(Box<LeaseQueue>),
    /// A [`SharedCount`].
    SharedCount(Box<SharedCount>),
    /// A [`Participants`] listing.
    Participants(Box<Participants>),
    /// A [`Revoker`].
    Revoker(Revoker),
    /// An [`Election`] participant.
    Election(Box<Election>),
    /// An [`Observer`] of a lock path's holder.
    Observer(Box<Observer>),
}

impl Machines for CoreMachine {
    fn recipe(&self) -> &dyn ClientRecipe {
        match self {
            CoreMachine::Mutex(r) => &**r,
            CoreMachine::SemaphoreMutex(r) => &**r,
            CoreMachine::ReadWriteLock(r) => &**r,
            CoreMachine::MultiLock(r) => &**r,
            CoreMachine::Semaphore(r) => &**r,
            CoreMachine::LockQueue(r) => r,
            CoreMachine::LeaseQueue(r) => &**r,
            CoreMachine::SharedCount(r) => &**r,
            CoreMachine::Participants(r) => &**r,
            CoreMachine::Revoker(r) => r,
            CoreMachine::Election(r) => &**r,
            CoreMachine::Observer(r) => &**r,
        }
    }

    fn recipe_mut(&mut self) -> &mut dyn ClientRecipe {
        match self {
            CoreMachine::Mutex(r) => &mut **r,
            CoreMachine::SemaphoreMutex(r) => &mut **r,
            CoreMachine::ReadWriteLock(r) => &mut **r,
            CoreMachine::MultiLock(r) => &mut **r,
            CoreMachine::Semaphore(r) => &mut **r,
            CoreMachine::LockQueue(r) => r,
            CoreMachine::LeaseQueue(r) => &mut **r,
            CoreMachine::SharedCount(r) => &mut **r,
            CoreMachine::Participants(r) => &mut **r,
            CoreMachine::Revoker(r) => r,
            CoreMachine::Election(r) => &mut **r,
            CoreMachine::Observer(r) => &mut **r,
        }
    }
}

impl Machine<CoreMachine> for Mutex {
    fn into_machine(self) -> CoreMachine {
        CoreMachine::Mutex(Box::new(self))
    }

    fn from_machine(machine: &mut CoreMachine) -> Option<&mut Self> {
        match machine {
            CoreMachine::Mutex(r) => Some(&mut **r),
            _ => None,
        }
    }

    fn from_machine_ref(machine: &CoreMachine) -> Option<&Self> {
        match machine {
            CoreMachine::Mutex(r) => Some(&**r),
            _ => None,
        }
    }
}

impl Machine<CoreMachine> for SemaphoreMutex {
    fn into_machine(self) -> CoreMachine {
        CoreMachine::SemaphoreMutex(Box::new(self))
    }

    fn from_machine(machine: &mut CoreMachine) -> Option<&mut Self> {
        match machine {
            CoreMachine::SemaphoreMutex(r) => Some(&mut **r),
            _ => None,
        }
    }

    fn from_machine_ref(machine: &CoreMachine) -> Option<&Self> {
        match machine {
            CoreMachine::SemaphoreMutex(r) => Some(&**r),
            _ => None,
        }
    }
}

impl Machine<CoreMachine> for ReadWriteLock {
    fn into_machine(self) -> CoreMachine {
        CoreMachine::ReadWriteLock(Box::new(self))
    }

    fn from_machine(machine: &mut CoreMachine) -> Option<&mut Self> {
        match machine {
            CoreMachine::ReadWriteLock(r) => Some(&mut **r),
            _ => None,
        }
    }

    fn from_machine_ref(machine: &CoreMachine) -> Option<&Self> {
        match machine {
            CoreMachine::ReadWriteLock(r) => Some(&**r),
            _ => None,
        }
    }
}

impl Machine<CoreMachine> for MultiLock {
    fn into_machine(self) -> CoreMachine {
        CoreMachine::MultiLock(Box::new(self))
    }

    fn from_machine(machine: &mut CoreMachine) -> Option<&mut Self> {
        match machine {
            CoreMachine::MultiLock(r) => Some(&mut **r),
            _ => None,
        }
    }

    fn from_machine_ref(machine: &CoreMachine) -> Option<&Self> {
        match machine {
            CoreMachine::MultiLock(r) => Some(&**r),
            _ => None,
        }
    }
}

impl Machine<CoreMachine> for Semaphore {
    fn into_machine(self) -> CoreMachine {
        CoreMachine::Semaphore(Box::new(self))
    }

    fn from_machine(machine: &mut CoreMachine) -> Option<&mut Self> {
        match machine {
            CoreMachine::Semaphore(r) => Some(&mut **r),
            _ => None,
        }
    }

    fn from_machine_ref(machine: &CoreMachine) -> Option<&Self> {
        match machine {
            CoreMachine::Semaphore(r) => Some(&**r),
            _ => None,
        }
    }
}

impl Machine<CoreMachine> for LockQueue {
    fn into_machine(self) -> CoreMachine {
        CoreMachine::LockQueue(self)
    }

    fn from_machine(machine: &mut CoreMachine) -> Option<&mut Self> {
        match machine {
            CoreMachine::LockQueue(r) => Some(r),
            _ => None,
        }
    }

    fn from_machine_ref(machine: &CoreMachine) -> Option<&Self> {
        match machine {
            CoreMachine::LockQueue(r) => Some(r),
            _ => None,
        }
    }
}

impl Machine<CoreMachine> for LeaseQueue {
    fn into_machine(self) -> CoreMachine {
        CoreMachine::LeaseQueue(Box::new(self))
    }

    fn from_machine(machine: &mut CoreMachine) -> Option<&mut Self> {
        match machine {
            CoreMachine::LeaseQueue(r) => Some(&mut **r),
            _ => None,
        }
    }

    fn from_machine_ref(machine: &CoreMachine) -> Option<&Self> {
        match machine {
            CoreMachine::LeaseQueue(r) => Some(&**r),
            _ => None,
        }
    }
}

impl Machine<CoreMachine> for SharedCount {
    fn into_machine(self) -> CoreMachine {
        CoreMachine::SharedCount(Box::new(self))
    }

    fn from_machine(machine: &mut CoreMachine) -> Option<&mut Self> {
        match machine {
            CoreMachine::SharedCount(r) => Some(&mut **r),
            _ => None,
        }
    }

    fn from_machine_ref(machine: &CoreMachine) -> Option<&Self> {
        match machine {
            CoreMachine::SharedCount(r) => Some(&**r),
            _ => None,
        }
    }
}

impl Machine<CoreMachine> for Participants {
    fn into_machine(self) -> CoreMachine {
        CoreMachine::Participants(Box::new(self))
    }

    fn from_machine(machine: &mut CoreMachine) -> Option<&mut Self> {
        match machine {
            CoreMachine::Participants(r) => Some(&mut **r),
            _ => None,
        }
    }

    fn from_machine_ref(machine: &CoreMachine) -> Option<&Self> {
        match machine {
            CoreMachine::Participants(r) => Some(&**r),
            _ => None,
        }
    }
}

impl Machine<CoreMachine> for Revoker {
    fn into_machine(self) -> CoreMachine {
        CoreMachine::Revoker(self)
    }

    fn from_machine(machine: &mut CoreMachine) -> Option<&mut Self> {
        match machine {
            CoreMachine::Revoker(r) => Some(r),
            _ => None,
        }
    }

    fn from_machine_ref(machine: &CoreMachine) -> Option<&Self> {
        match machine {
            CoreMachine::Revoker(r) => Some(r),
            _ => None,
        }
    }
}

impl Machine<CoreMachine> for Election {
    fn into_machine(self) -> CoreMachine {
        CoreMachine::Election(Box::new(self))
    }

    fn from_machine(machine: &mut CoreMachine) -> Option<&mut Self> {
        match machine {
            CoreMachine::Election(r) => Some(&mut **r),
            _ => None,
        }
    }

    fn from_machine_ref(machine: &CoreMachine) -> Option<&Self> {
        match machine {
            CoreMachine::Election(r) => Some(&**r),
            _ => None,
        }
    }
}

impl Machine<CoreMachine> for Observer {
    fn into_machine(self) -> CoreMachine {
        CoreMachine::Observer(Box::new(self))
    }

    fn from_machine(machine: &mut CoreMachine) -> Option<&mut Self> {
        match machine {
            CoreMachine::Observer(r) => Some(&mut **r),
            _ => None,
        }
    }

    fn from_machine_ref(machine: &CoreMachine) -> Option<&Self> {
        match machine {
            CoreMachine::Observer(r) => Some(&**r),
            _ => None,
        }
    }
}
