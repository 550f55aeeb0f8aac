//! End-to-end tests on tokio against the real server from
//! `ZOOLOCK_TEST_CONNECT`: the scenarios shared with every transport, in
//! `driver/tests/common`. Skipped (with a printed reason) when it is unset.

#[path = "../../driver/tests/common/mod.rs"]
mod common;

use std::sync::Arc;

fn env() -> Option<common::Env> {
    common::Env::new(Arc::new(zoolock_tokio::TokioRuntime::current()), "tokio")
}

macro_rules! scenarios {
    ($($name:ident $(($($arg:expr),*))?),* $(,)?) => {$(
        #[tokio::test(flavor = "multi_thread", worker_threads = 2)]
        async fn $name() {
            let Some(env) = env() else { return };
            common::$name(&env $($(, $arg)*)?).await;
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
