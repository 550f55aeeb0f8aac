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

use crate::recipe::Recipe;
use crate::recipes::{
    Election, LeaseQueue, LockQueue, MultiLock, Mutex, Observer, Participants, ReadWriteLock, Revoker, Semaphore,
    SemaphoreMutex, SharedCount,
};

/// A set of recipe kinds one [`Client`](crate::Client) stores: each stored
/// value is one recipe, driven through [`Recipe`].
pub trait Machines: Send + 'static {
    /// The stored recipe.
    fn recipe(&self) -> &dyn Recipe;
    /// The stored recipe, for its inputs and outputs.
    fn recipe_mut(&mut self) -> &mut dyn Recipe;
}

/// A recipe kind of the set `M`: how it is stored and found again.
pub trait Machine<M>: Recipe + Sized {
    /// The recipe as a stored value.
    fn into_machine(self) -> M;
    /// The recipe stored in `machine`, if it is this kind. A client only
    /// asks this of the value its handle was made for, so `None` means the
    /// handle came from another client.
    fn from_machine(machine: &mut M) -> Option<&mut Self>;
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
    fn recipe(&self) -> &dyn Recipe {
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

    fn recipe_mut(&mut self) -> &mut dyn Recipe {
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
}
