//! Secured ZooKeeper on tokio: digest auth and ACLs, mutual TLS (TLS 1.2 and
//! 1.3 servers) and its failures; scenarios in `driver/tests/secured`.

#[path = "../../driver/tests/secured/mod.rs"]
mod secured;

use std::sync::Arc;

/// Runs a scenario on a multi-threaded tokio runtime with two workers (what
/// `#[tokio::test(flavor = "multi_thread", worker_threads = 2)]` builds).
fn run(scenario: impl AsyncFnOnce(&secured::Rt)) {
    let tokio = tokio::runtime::Builder::new_multi_thread().worker_threads(2).enable_all().build().unwrap();
    tokio.block_on(async {
        let rt = secured::Rt { runtime: Arc::new(zoolock_tokio::TokioRuntime::current()), label: "tokio" };
        scenario(&rt).await
    });
}

secured::scenario_tests!(run);
