//! The list of scenarios every transport runs, declared once: each
//! transport's `tests/e2e.rs` calls [`e2e_tests!`](crate::e2e_tests) with its
//! runtime, so no transport can run a scenario the others do not.

/// One `#[test]` per scenario of [`e2e`](crate::e2e), named after it, each
/// running it with [`e2e::run`](crate::e2e::run) on the [`TestRuntime`]
/// given (a type in scope at the call):
///
/// ```ignore
/// zoolock_scenarios::e2e_tests!(Tokio);
/// ```
///
/// The list is the data this macro declares; a scenario added to
/// `zoolock_scenarios::e2e` runs on every transport once it is named here.
///
/// [`TestRuntime`]: crate::TestRuntime
#[macro_export]
macro_rules! e2e_tests {
    ($runtime:ty) => {
        $crate::e2e_tests!(@each $runtime;
            mutex_exclusion,
            mutex_status_on_release,
            many_locks_at_once,
            mutex_fifo,
            mutex_reentrancy,
            mutex_concurrent_on_one_handle,
            shared_handle_exclusion,
            shared_handle_fifo,
            semaphore_shared_handle,
            rwlock,
            rwlock_sharing,
            semaphore,
            semaphore_try_acquire_and_acquire_one,
            semaphore_mutex,
            multi_lock,
            revocation,
            participants,
            queue_positions,
            fenced_writes,
            semaphore_resized,
            shared_count,
            lease_revocation,
            compressed_data,
            plain_ops,
            chroot_created,
            chroot_recreated,
            chroot_unavailable,
            connection_states,
            close_session,
            path_errors_name_the_path,
            connect_refused_or_unresolved_fails_fast,
            connect_to_a_silent_server_times_out,
            refusals_after_a_session_keep_trying,
            loss_suspended_then_reconnected,
            loss_lost_after_session_timeout,
            loss_quorum_unconfirmed,
            loss_renewal,
            loss_node_deleted,
            loss_lease_deleted,
            cancellation_mutex,
            cancellation_rwlock,
            cancellation_semaphore,
            cancellation_semaphore_mutex,
            cancellation_multi_lock,
            election_selector,
            election_cancelled_wait,
            election_run_requeues,
            election_policy_on_a_short_cut,
            election_latch,
            election_node_deleted,
            max_hold,
            observe,
        );
    };
    (@each $runtime:ty; $($scenario:ident,)+) => {
        $(
            #[test]
            fn $scenario() {
                $crate::e2e::run::<$runtime>($crate::e2e::$scenario);
            }
        )+
    };
}
