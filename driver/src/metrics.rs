//! What the driver counts, through the `metrics` facade (feature `metrics`,
//! off by default; without it every call here compiles to nothing). Every
//! series but the renewals carries the lock path as label `path`:
//!
//! | name | kind | what |
//! |---|---|---|
//! | `zoolock_acquires_total` | counter | grants (a semaphore acquire counts once) |
//! | `zoolock_acquire_wait_seconds` | histogram | from the call to the grant |
//! | `zoolock_acquire_timeouts_total` | counter | acquires that ended at their deadline |
//! | `zoolock_holds_suspended_total` | counter | holds told `Suspended` |
//! | `zoolock_holds_lost_total` | counter | holds told `Lost` |
//! | `zoolock_session_renewals_total` | counter | sessions started after an expiry |
//! | `zoolock_cleanup_failures_total` | counter | abandoned nodes that could not be deleted |

use std::time::Duration;

#[cfg(feature = "metrics")]
fn count(name: &'static str, path: &str) {
    metrics::counter!(name, "path" => path.to_owned()).increment(1);
}

#[cfg(not(feature = "metrics"))]
fn count(_name: &'static str, _path: &str) {}

/// A grant after `waited`.
pub(crate) fn acquired(path: &str, waited: Duration) {
    count("zoolock_acquires_total", path);
    #[cfg(feature = "metrics")]
    metrics::histogram!("zoolock_acquire_wait_seconds", "path" => path.to_owned()).record(waited.as_secs_f64());
    #[cfg(not(feature = "metrics"))]
    let _ = waited;
}

/// An acquire that ended at its deadline.
pub(crate) fn timed_out(path: &str) {
    count("zoolock_acquire_timeouts_total", path);
}

/// A hold told `Suspended`.
pub(crate) fn suspended(path: &str) {
    count("zoolock_holds_suspended_total", path);
}

/// A hold told `Lost`.
pub(crate) fn lost(path: &str) {
    count("zoolock_holds_lost_total", path);
}

/// An abandoned node that could not be deleted.
pub(crate) fn cleanup_failed(path: &str) {
    count("zoolock_cleanup_failures_total", path);
}

/// A session started after an expiry.
pub(crate) fn renewed() {
    #[cfg(feature = "metrics")]
    metrics::counter!("zoolock_session_renewals_total").increment(1);
}
