//! End-to-end tests on smol against the real server from
//! `ZOOLOCK_TEST_CONNECT`: the scenarios shared with every transport
//! (`zoolock_scenarios::e2e`), each inside `smol::block_on` with the event
//! loop on smol's global executor. With the `async-std` feature, the same
//! scenarios run inside `async_std::task::block_on` with the event loop on
//! async-std's executor instead (`SmolRuntime::async_std`). Without
//! `ZOOLOCK_TEST_CONNECT` they run against the in-process model server. One
//! `#[test]` per scenario, from the one list every transport runs
//! (`zoolock_scenarios::e2e_tests!`).

#[cfg(not(feature = "async-std"))]
mod runtime;

#[cfg(not(feature = "async-std"))]
use runtime::Smol as Rt;

#[cfg(feature = "async-std")]
type Rt = AsyncStd;

/// Each scenario inside `async_std::task::block_on`, the event loop on
/// async-std's executor.
#[cfg(feature = "async-std")]
struct AsyncStd;

#[cfg(feature = "async-std")]
impl zoolock_scenarios::TestRuntime for AsyncStd {
    const LABEL: &'static str = "async-std";

    fn block_on<T>(future: impl std::future::Future<Output = T>) -> T {
        async_std::task::block_on(future)
    }

    fn runtime() -> std::sync::Arc<dyn zoolock_smol::Runtime> {
        std::sync::Arc::new(zoolock_smol::SmolRuntime::async_std())
    }
}

zoolock_scenarios::e2e_tests!(Rt);
