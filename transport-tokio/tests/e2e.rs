//! End-to-end tests on tokio: the scenarios shared with every transport, in
//! `driver/tests/common`, against the real server from `ZOOLOCK_TEST_CONNECT`
//! or, without it, the in-process model server.

#[path = "../../driver/tests/common/mod.rs"]
#[macro_use]
mod common;

use std::sync::Arc;

fn env() -> common::Env {
    common::Env::new(Arc::new(zoolock_tokio::TokioRuntime::current()), "tokio")
}

macro_rules! scenarios {
    ($($name:ident $(($($arg:expr),*))?),* $(,)?) => {$(
        #[tokio::test(flavor = "multi_thread", worker_threads = 2)]
        async fn $name() {
            common::$name(&env() $($(, $arg)*)?).await;
        }
    )*};
}

for_each_scenario!(scenarios);
