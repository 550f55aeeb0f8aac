//! The smol runtime the shared scenarios (`e2e.rs`, `secured.rs`) run on.

use std::future::Future;
use std::sync::Arc;

use zoolock_scenarios::TestRuntime;
use zoolock_smol::{Runtime, SmolRuntime};

/// Each scenario inside `smol::block_on`, the event loop on smol's global
/// executor.
pub(crate) struct Smol;

impl TestRuntime for Smol {
    const LABEL: &'static str = "smol";

    fn block_on<T>(future: impl Future<Output = T>) -> T {
        smol::block_on(future)
    }

    fn runtime() -> Arc<dyn Runtime> {
        Arc::new(SmolRuntime::new())
    }
}
