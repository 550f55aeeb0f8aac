//! The tokio runtime the shared scenarios (`e2e.rs`, `secured.rs`) run on.

use std::future::Future;
use std::sync::Arc;

use zoolock_scenarios::TestRuntime;
use zoolock_tokio::{Runtime, TokioRuntime};

/// A multi-threaded tokio runtime with two workers for each scenario (what
/// `#[tokio::test(flavor = "multi_thread", worker_threads = 2)]` builds).
pub(crate) struct Tokio;

impl TestRuntime for Tokio {
    const LABEL: &'static str = "tokio";

    fn block_on<T>(future: impl Future<Output = T>) -> T {
        let runtime = tokio::runtime::Builder::new_multi_thread().worker_threads(2).enable_all().build().unwrap();
        runtime.block_on(future)
    }

    fn runtime() -> Arc<dyn Runtime> {
        Arc::new(TokioRuntime::current())
    }
}
