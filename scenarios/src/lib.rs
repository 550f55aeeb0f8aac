//! The end-to-end scenarios every transport runs, written once and generic
//! over the runtime under test.
//!
//! A transport's test file implements [`TestRuntime`] for its runtime and
//! runs the scenarios:
//!
//! * [`e2e`]: locks, sessions, loss signals and cancellation against the
//!   server of [`zoolock_testkit::any_server`] (the real ZooKeeper from
//!   `ZOOLOCK_TEST_CONNECT`, else the in-process model server), one
//!   `#[test]` each from the one list, [`e2e_tests!`]`(Tokio)`.
//! * [`secured`]: digest auth and ACLs, SASL, and (with the `tls` and
//!   `gssapi` features, which the transports' features of the same names
//!   turn on) mutual TLS and Kerberos, each against its own secured server;
//!   a scenario whose server is not configured prints why and passes.
//!
//! Not published: it is test code for this workspace.

pub mod e2e;
pub mod secured;

use std::future::Future;
use std::sync::Arc;

use zoolock_driver::Runtime;

/// A runtime the scenarios run on, implemented by each transport's tests
/// (this crate depends on no transport).
pub trait TestRuntime {
    /// Names the runtime in the scenarios' paths, so the runtimes' test runs
    /// do not collide on one server.
    const LABEL: &'static str;

    /// Runs `future` to completion on this runtime, blocking the calling
    /// thread (the test's).
    fn block_on<T>(future: impl Future<Output = T>) -> T;

    /// The driver's runtime; called inside [`TestRuntime::block_on`].
    fn runtime() -> Arc<dyn Runtime>;
}
