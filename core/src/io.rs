//! The one I/O surface of the sans-IO machines.
//!
//! [`Session`] and [`Client`] take the same transport inputs and give the same
//! transport outputs; only their events differ. A loop written against this
//! trait serves either machine: the conformance crate's trace replays and its
//! minimal blocking driver are (the async driver and the simulator drive a
//! [`Client`] directly, since they need its recipes too).

use bytes::BytesMut;

use crate::client::{Client, ClientEvent};
use crate::error::SessionError;
use crate::machine::Machines;
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

// Both machines also have these as inherent methods (callers need no trait
// import); each impl forwards to them.

impl Endpoint for Session {
    type Event = SessionEvent;

    fn handle_connected(&mut self, now: Instant) {
        Session::handle_connected(self, now)
    }

    fn handle_bytes(&mut self, now: Instant, buf: &mut BytesMut) -> Result<(), SessionError> {
        Session::handle_bytes(self, now, buf)
    }

    fn handle_disconnected(&mut self, now: Instant) {
        Session::handle_disconnected(self, now)
    }

    fn handle_timeout(&mut self, now: Instant) {
        Session::handle_timeout(self, now)
    }

    fn poll_io(&mut self) -> Option<IoCommand> {
        Session::poll_io(self)
    }

    fn poll_transmit(&mut self, dst: &mut BytesMut) -> usize {
        Session::poll_transmit(self, dst)
    }

    fn poll_event(&mut self) -> Option<SessionEvent> {
        Session::poll_event(self)
    }

    fn poll_timeout(&self) -> Option<Instant> {
        Session::poll_timeout(self)
    }
}

impl<M: Machines> Endpoint for Client<M> {
    type Event = ClientEvent;

    fn handle_connected(&mut self, now: Instant) {
        Client::handle_connected(self, now)
    }

    fn handle_bytes(&mut self, now: Instant, buf: &mut BytesMut) -> Result<(), SessionError> {
        Client::handle_bytes(self, now, buf)
    }

    fn handle_disconnected(&mut self, now: Instant) {
        Client::handle_disconnected(self, now)
    }

    fn handle_timeout(&mut self, now: Instant) {
        Client::handle_timeout(self, now)
    }

    fn poll_io(&mut self) -> Option<IoCommand> {
        Client::poll_io(self)
    }

    fn poll_transmit(&mut self, dst: &mut BytesMut) -> usize {
        Client::poll_transmit(self, dst)
    }

    fn poll_event(&mut self) -> Option<ClientEvent> {
        Client::poll_event(self)
    }

    fn poll_timeout(&self) -> Option<Instant> {
        Client::poll_timeout(self)
    }
}
