//! End-to-end tests on smol against the real server from
//! `ZOOLOCK_TEST_CONNECT`: the scenarios shared with every transport
//! (`zoolock_scenarios::e2e`), each inside `smol::block_on` with the event
//! loop on smol's global executor. With the `async-std` feature, the same
//! scenarios run inside `async_std::task::block_on` with the event loop on
//! async-std's executor instead (`SmolRuntime::async_std`). Without
//! `ZOOLOCK_TEST_CONNECT` they run against the in-process model server.

#[cfg(not(feature = "async-std"))]
mod runtime;

#[cfg(not(feature = "async-std"))]
use runtime::Smol as Rt;
use zoolock_scenarios::e2e::{self, run};

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

#[test]
fn mutex_exclusion() {
    run::<Rt>(e2e::mutex_exclusion);
}

#[test]
fn mutex_status_on_release() {
    run::<Rt>(e2e::mutex_status_on_release);
}

#[test]
fn many_locks_at_once() {
    run::<Rt>(e2e::many_locks_at_once);
}

#[test]
fn mutex_fifo() {
    run::<Rt>(e2e::mutex_fifo);
}

#[test]
fn mutex_reentrancy() {
    run::<Rt>(e2e::mutex_reentrancy);
}

#[test]
fn mutex_concurrent_on_one_handle() {
    run::<Rt>(e2e::mutex_concurrent_on_one_handle);
}

#[test]
fn shared_handle_exclusion() {
    run::<Rt>(e2e::shared_handle_exclusion);
}

#[test]
fn shared_handle_fifo() {
    run::<Rt>(e2e::shared_handle_fifo);
}

#[test]
fn semaphore_shared_handle() {
    run::<Rt>(e2e::semaphore_shared_handle);
}

#[test]
fn rwlock() {
    run::<Rt>(e2e::rwlock);
}

#[test]
fn rwlock_sharing() {
    run::<Rt>(e2e::rwlock_sharing);
}

#[test]
fn semaphore() {
    run::<Rt>(e2e::semaphore);
}

#[test]
fn semaphore_try_acquire_and_acquire_one() {
    run::<Rt>(e2e::semaphore_try_acquire_and_acquire_one);
}

#[test]
fn semaphore_mutex() {
    run::<Rt>(e2e::semaphore_mutex);
}

#[test]
fn multi_lock() {
    run::<Rt>(e2e::multi_lock);
}

#[test]
fn revocation() {
    run::<Rt>(e2e::revocation);
}

#[test]
fn participants() {
    run::<Rt>(e2e::participants);
}

#[test]
fn queue_positions() {
    run::<Rt>(e2e::queue_positions);
}

#[test]
fn fenced_writes() {
    run::<Rt>(e2e::fenced_writes);
}

#[test]
fn semaphore_resized() {
    run::<Rt>(e2e::semaphore_resized);
}

#[test]
fn shared_count() {
    run::<Rt>(e2e::shared_count);
}

#[test]
fn lease_revocation() {
    run::<Rt>(e2e::lease_revocation);
}

#[test]
fn compressed_data() {
    run::<Rt>(e2e::compressed_data);
}

#[test]
fn plain_ops() {
    run::<Rt>(e2e::plain_ops);
}

#[test]
fn chroot_created() {
    run::<Rt>(e2e::chroot_created);
}

#[test]
fn chroot_recreated() {
    run::<Rt>(e2e::chroot_recreated);
}

#[test]
fn chroot_unavailable() {
    run::<Rt>(e2e::chroot_unavailable);
}

#[test]
fn connection_states() {
    run::<Rt>(e2e::connection_states);
}

#[test]
fn close_session() {
    run::<Rt>(e2e::close_session);
}

#[test]
fn path_errors_name_the_path() {
    run::<Rt>(e2e::path_errors_name_the_path);
}

#[test]
fn connect_refused_or_unresolved_fails_fast() {
    run::<Rt>(e2e::connect_refused_or_unresolved_fails_fast);
}

#[test]
fn connect_to_a_silent_server_times_out() {
    run::<Rt>(e2e::connect_to_a_silent_server_times_out);
}

#[test]
fn refusals_after_a_session_keep_trying() {
    run::<Rt>(e2e::refusals_after_a_session_keep_trying);
}

#[test]
fn loss_suspended_then_reconnected() {
    run::<Rt>(e2e::loss_suspended_then_reconnected);
}

#[test]
fn loss_lost_after_session_timeout() {
    run::<Rt>(e2e::loss_lost_after_session_timeout);
}

#[test]
fn loss_quorum_unconfirmed() {
    run::<Rt>(e2e::loss_quorum_unconfirmed);
}

#[test]
fn loss_renewal() {
    run::<Rt>(e2e::loss_renewal);
}

#[test]
fn loss_node_deleted() {
    run::<Rt>(e2e::loss_node_deleted);
}

#[test]
fn loss_lease_deleted() {
    run::<Rt>(e2e::loss_lease_deleted);
}

#[test]
fn cancellation_mutex() {
    run::<Rt>(e2e::cancellation_mutex);
}

#[test]
fn cancellation_rwlock() {
    run::<Rt>(e2e::cancellation_rwlock);
}

#[test]
fn cancellation_semaphore() {
    run::<Rt>(e2e::cancellation_semaphore);
}

#[test]
fn cancellation_semaphore_mutex() {
    run::<Rt>(e2e::cancellation_semaphore_mutex);
}

#[test]
fn cancellation_multi_lock() {
    run::<Rt>(e2e::cancellation_multi_lock);
}

#[test]
fn election_selector() {
    run::<Rt>(e2e::election_selector);
}

#[test]
fn election_cancelled_wait() {
    run::<Rt>(e2e::election_cancelled_wait);
}

#[test]
fn election_run_requeues() {
    run::<Rt>(e2e::election_run_requeues);
}

#[test]
fn election_policy_on_a_short_cut() {
    run::<Rt>(e2e::election_policy_on_a_short_cut);
}

#[test]
fn election_latch() {
    run::<Rt>(e2e::election_latch);
}

#[test]
fn election_node_deleted() {
    run::<Rt>(e2e::election_node_deleted);
}

#[test]
fn max_hold() {
    run::<Rt>(e2e::max_hold);
}

#[test]
fn observe() {
    run::<Rt>(e2e::observe);
}
