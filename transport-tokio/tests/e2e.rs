//! End-to-end tests on tokio: the scenarios shared with every transport
//! (`zoolock_scenarios::e2e`), against the real server from
//! `ZOOLOCK_TEST_CONNECT` or, without it, the in-process model server.

mod runtime;

use runtime::Tokio;
use zoolock_scenarios::e2e::{self, run};

#[test]
fn mutex_exclusion() {
    run::<Tokio>(e2e::mutex_exclusion);
}

#[test]
fn mutex_status_on_release() {
    run::<Tokio>(e2e::mutex_status_on_release);
}

#[test]
fn many_locks_at_once() {
    run::<Tokio>(e2e::many_locks_at_once);
}

#[test]
fn mutex_fifo() {
    run::<Tokio>(e2e::mutex_fifo);
}

#[test]
fn mutex_reentrancy() {
    run::<Tokio>(e2e::mutex_reentrancy);
}

#[test]
fn mutex_concurrent_on_one_handle() {
    run::<Tokio>(e2e::mutex_concurrent_on_one_handle);
}

#[test]
fn shared_handle_exclusion() {
    run::<Tokio>(e2e::shared_handle_exclusion);
}

#[test]
fn shared_handle_fifo() {
    run::<Tokio>(e2e::shared_handle_fifo);
}

#[test]
fn semaphore_shared_handle() {
    run::<Tokio>(e2e::semaphore_shared_handle);
}

#[test]
fn rwlock() {
    run::<Tokio>(e2e::rwlock);
}

#[test]
fn rwlock_sharing() {
    run::<Tokio>(e2e::rwlock_sharing);
}

#[test]
fn semaphore() {
    run::<Tokio>(e2e::semaphore);
}

#[test]
fn semaphore_try_acquire_and_acquire_one() {
    run::<Tokio>(e2e::semaphore_try_acquire_and_acquire_one);
}

#[test]
fn semaphore_mutex() {
    run::<Tokio>(e2e::semaphore_mutex);
}

#[test]
fn multi_lock() {
    run::<Tokio>(e2e::multi_lock);
}

#[test]
fn revocation() {
    run::<Tokio>(e2e::revocation);
}

#[test]
fn participants() {
    run::<Tokio>(e2e::participants);
}

#[test]
fn queue_positions() {
    run::<Tokio>(e2e::queue_positions);
}

#[test]
fn fenced_writes() {
    run::<Tokio>(e2e::fenced_writes);
}

#[test]
fn semaphore_resized() {
    run::<Tokio>(e2e::semaphore_resized);
}

#[test]
fn shared_count() {
    run::<Tokio>(e2e::shared_count);
}

#[test]
fn lease_revocation() {
    run::<Tokio>(e2e::lease_revocation);
}

#[test]
fn compressed_data() {
    run::<Tokio>(e2e::compressed_data);
}

#[test]
fn plain_ops() {
    run::<Tokio>(e2e::plain_ops);
}

#[test]
fn chroot_created() {
    run::<Tokio>(e2e::chroot_created);
}

#[test]
fn chroot_recreated() {
    run::<Tokio>(e2e::chroot_recreated);
}

#[test]
fn chroot_unavailable() {
    run::<Tokio>(e2e::chroot_unavailable);
}

#[test]
fn connection_states() {
    run::<Tokio>(e2e::connection_states);
}

#[test]
fn close_session() {
    run::<Tokio>(e2e::close_session);
}

#[test]
fn path_errors_name_the_path() {
    run::<Tokio>(e2e::path_errors_name_the_path);
}

#[test]
fn connect_refused_or_unresolved_fails_fast() {
    run::<Tokio>(e2e::connect_refused_or_unresolved_fails_fast);
}

#[test]
fn connect_to_a_silent_server_times_out() {
    run::<Tokio>(e2e::connect_to_a_silent_server_times_out);
}

#[test]
fn refusals_after_a_session_keep_trying() {
    run::<Tokio>(e2e::refusals_after_a_session_keep_trying);
}

#[test]
fn loss_suspended_then_reconnected() {
    run::<Tokio>(e2e::loss_suspended_then_reconnected);
}

#[test]
fn loss_lost_after_session_timeout() {
    run::<Tokio>(e2e::loss_lost_after_session_timeout);
}

#[test]
fn loss_quorum_unconfirmed() {
    run::<Tokio>(e2e::loss_quorum_unconfirmed);
}

#[test]
fn loss_renewal() {
    run::<Tokio>(e2e::loss_renewal);
}

#[test]
fn loss_node_deleted() {
    run::<Tokio>(e2e::loss_node_deleted);
}

#[test]
fn loss_lease_deleted() {
    run::<Tokio>(e2e::loss_lease_deleted);
}

#[test]
fn cancellation_mutex() {
    run::<Tokio>(e2e::cancellation_mutex);
}

#[test]
fn cancellation_rwlock() {
    run::<Tokio>(e2e::cancellation_rwlock);
}

#[test]
fn cancellation_semaphore() {
    run::<Tokio>(e2e::cancellation_semaphore);
}

#[test]
fn cancellation_semaphore_mutex() {
    run::<Tokio>(e2e::cancellation_semaphore_mutex);
}

#[test]
fn cancellation_multi_lock() {
    run::<Tokio>(e2e::cancellation_multi_lock);
}

#[test]
fn election_selector() {
    run::<Tokio>(e2e::election_selector);
}

#[test]
fn election_cancelled_wait() {
    run::<Tokio>(e2e::election_cancelled_wait);
}

#[test]
fn election_run_requeues() {
    run::<Tokio>(e2e::election_run_requeues);
}

#[test]
fn election_policy_on_a_short_cut() {
    run::<Tokio>(e2e::election_policy_on_a_short_cut);
}

#[test]
fn election_latch() {
    run::<Tokio>(e2e::election_latch);
}

#[test]
fn election_node_deleted() {
    run::<Tokio>(e2e::election_node_deleted);
}

#[test]
fn max_hold() {
    run::<Tokio>(e2e::max_hold);
}

#[test]
fn observe() {
    run::<Tokio>(e2e::observe);
}
