//! The one I/O surface of the sans-IO machines.
//!
//! [`Session`] and [`Client`] take the same transport inputs and give the same
//! transport outputs; only their events differ. Whatever moves bytes (the
//! async driver, the blocking driver, the trace replays, the simulator, the
//! benches) is written once against this trait instead of once per machine.

use bytes::BytesMut;

use crate::client::{Client, ClientEvent};
use crate::error::SessionError;
use crate::session::{IoCommand, Session, SessionEvent};
use crate::time::Instant;

/// A machine a transport drives: the inputs it takes (`handle_*`) and the
/// outputs it gives (`poll_*`). See [`Session`] for what each one means.
pub trait Endpoint {
    /// What the machine reports to its user.
    type Event;

    /// The connection asked for by [`IoCommand::Connect`] is up.
    fn handle_connected(&mut self, now: Instant);
    /// Consumes every complete frame at the front of `buf`.
    fn handle_bytes(&mut self, now: Instant, buf: &mut BytesMut) -> Result<(), SessionError>;
    /// The connection failed or the server closed it.
    fn handle_disconnected(&mut self, now: Instant);
    /// Fires every timer due at `now`.
    fn handle_timeout(&mut self, now: Instant);
    /// The next transport command.
    fn poll_io(&mut self) -> Option<IoCommand>;
    /// Appends every frame ready to send to `dst`; returns the byte count.
    fn poll_transmit(&mut self, dst: &mut BytesMut) -> usize;
    /// The next event.
    fn poll_event(&mut self) -> Option<Self::Event>;
    /// When [`Endpoint::handle_timeout`] must next be called; `None` is never.
    fn poll_timeout(&self) -> Option<Instant>;
}

/// Both machines already have these as inherent methods (callers need no
/// trait import); the trait forwards to them.
macro_rules! forward_endpoint {
    ($machine:ty, $event:ty) => {
        impl Endpoint for $machine {
            type Event = $event;
            fn handle_connected(&mut self, now: Instant) {
                <$machine>::handle_connected(self, now)
            }
            fn handle_bytes(&mut self, now: Instant, buf: &mut BytesMut) -> Result<(), SessionError> {
                <$machine>::handle_bytes(self, now, buf)
            }
            fn handle_disconnected(&mut self, now: Instant) {
                <$machine>::handle_disconnected(self, now)
            }
            fn handle_timeout(&mut self, now: Instant) {
                <$machine>::handle_timeout(self, now)
            }
            fn poll_io(&mut self) -> Option<IoCommand> {
                <$machine>::poll_io(self)
            }
            fn poll_transmit(&mut self, dst: &mut BytesMut) -> usize {
                <$machine>::poll_transmit(self, dst)
            }
            fn poll_event(&mut self) -> Option<$event> {
                <$machine>::poll_event(self)
            }
            fn poll_timeout(&self) -> Option<Instant> {
                <$machine>::poll_timeout(self)
            }
        }
    };
}

forward_endpoint!(Session, SessionEvent);
forward_endpoint!(Client, ClientEvent);
