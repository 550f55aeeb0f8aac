//! End-to-end tests on smol against the real server from
//! `ZOOLOCK_TEST_CONNECT`: the scenarios shared with every transport, in
//! `driver/tests/common`, each inside `smol::block_on` with the event loop on
//! smol's global executor. With the `async-std` feature, the same scenarios
//! run inside `async_std::task::block_on` with the event loop on async-std's
//! executor instead (`SmolRuntime::async_std`). Skipped (with a printed
//! reason) when `ZOOLOCK_TEST_CONNECT` is unset.

#[path = "../../driver/tests/common/mod.rs"]
mod common;

use std::sync::Arc;

#[cfg(not(feature = "async-std"))]
fn env() -> Option<common::Env> {
    common::Env::new(Arc::new(zoolock_smol::SmolRuntime::new()), "smol")
}

#[cfg(not(feature = "async-std"))]
use smol::block_on;

#[cfg(feature = "async-std")]
fn env() -> Option<common::Env> {
    common::Env::new(Arc::new(zoolock_smol::SmolRuntime::async_std()), "async-std")
}

#[cfg(feature = "async-std")]
use async_std::task::block_on;

macro_rules! scenarios {
    ($($name:ident $(($($arg:expr),*))?),* $(,)?) => {$(
        #[test]
        fn $name() {
            let Some(env) = env() else { return };
            block_on(common::$name(&env $($(, $arg)*)?));
        }
    )*};
}

scenarios!(
    mutex_exclusion,
    mutex_fifo,
    mutex_reentrancy,
    mutex_concurrent_on_one_handle,
    shared_handle_exclusion,
    shared_handle_fifo,
    semaphore_shared_handle,
    rwlock,
    semaphore,
    semaphore_mutex,
    multi_lock,
    revocation,
    participants,
    queue_positions,
    fenced_writes,
    semaphore_resized,
    shared_count,
    lease_revocation,
    plain_ops,
    chroot_created,
    connection_states,
    close_session,
    loss_suspended_then_reconnected,
    loss_lost_after_session_timeout,
    loss_renewal,
    cancellation_mutex(1000),
    cancellation_rwlock(100),
    cancellation_semaphore(100),
    cancellation_semaphore_mutex(100),
    cancellation_multi_lock(100),
);
