//! End-to-end tests on smol against the real server from
//! `ZOOLOCK_TEST_CONNECT`: the scenarios shared with every transport, in
//! `driver/tests/common`, each inside `smol::block_on` with the event loop on
//! smol's global executor. With the `async-std` feature, the same scenarios
//! run inside `async_std::task::block_on` with the event loop on async-std's
//! executor instead (`SmolRuntime::async_std`). Without
//! `ZOOLOCK_TEST_CONNECT` they run against the in-process model server.

#[path = "../../driver/tests/common/mod.rs"]
#[macro_use]
mod common;

use std::sync::Arc;

#[cfg(not(feature = "async-std"))]
fn env() -> common::Env {
    common::Env::new(Arc::new(zoolock_smol::SmolRuntime::new()), "smol")
}

#[cfg(not(feature = "async-std"))]
use smol::block_on;

#[cfg(feature = "async-std")]
fn env() -> common::Env {
    common::Env::new(Arc::new(zoolock_smol::SmolRuntime::async_std()), "async-std")
}

#[cfg(feature = "async-std")]
use async_std::task::block_on;

macro_rules! scenarios {
    ($($name:ident $(($($arg:expr),*))?),* $(,)?) => {$(
        #[test]
        fn $name() {
            block_on(common::$name(&env() $($(, $arg)*)?));
        }
    )*};
}

for_each_scenario!(scenarios);
