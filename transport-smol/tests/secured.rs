//! Secured ZooKeeper on smol: mutual TLS through futures-rustls, and digest
//! auth; scenarios in `driver/tests/secured`.

#[path = "../../driver/tests/secured/mod.rs"]
mod secured;

use std::sync::Arc;

/// Runs a scenario on smol.
fn run(scenario: impl AsyncFnOnce(&secured::Rt)) {
    let rt = secured::Rt { runtime: Arc::new(zoolock_smol::SmolRuntime::new()), label: "smol" };
    smol::block_on(scenario(&rt));
}

secured::scenario_tests!(run);
