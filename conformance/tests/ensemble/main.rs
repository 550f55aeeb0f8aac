//! Lock safety on a real 3-server ZooKeeper ensemble under faults.
//!
//! Each scenario starts its own ensemble on 127.0.0.1 with
//! `scripts/zk-ensemble.sh` (Debian's jars; about 2.5 s) and runs clients
//! that contend for one mutex in a loop (5 ms critical sections, a fenced
//! write at each end) while a fault is injected:
//!
//! * `kill_leader`, `kill_follower`: SIGKILL at 2 s, restart at 6 s;
//! * `pause_busiest_server`: SIGSTOP the server most clients use, 5 s;
//! * `frozen_holder`: a `zoolock` CLI holder and its command, SIGSTOPped
//!   together (own process group) for 5 s with a 3 s session;
//! * `paused_in_process_holder`: an in-process holder whose thread and
//!   runtime block for 5 s with a 3 s session (a GC pause);
//! * `paused_holder_checks_only_lost`: the same pause, with a holder that
//!   writes every 10 ms and stops on nothing but `guard.lost()`: it must
//!   make no write after the takeover;
//! * `quorum_loss`: both followers SIGSTOPped for 8 s (twice the session)
//!   with 1 s holds; every session expires and is renewed. Each hold also
//!   reads its node's owner: none may be a node of an old session
//!   (CURATOR-604). Then the same schedule with Curator 5.4.0, and both
//!   stalls are printed (`quorum-loss stall ...`);
//! * `reconfig_replaces_every_server_under_a_hold` (issue 37, `reconfig.rs`):
//!   an ensemble started with `ZK_RECONFIG=1` whose three servers are
//!   replaced one by one with `reconfig` while a client holds a lock and
//!   two others wait; the holder keeps its session and its hold, and both
//!   end up dialling only the new members;
//! * `soak`: every recipe under random faults for `ZOOLOCK_SOAK_SECS`
//!   (30 s by default), checked by the simulator's oracles (see `soak.rs`);
//! * `partition_*` (issue 36, `partition.rs`, `frozen.rs`, `rig.rs`): an ensemble whose
//!   server-to-server links go through proxies (`ZK_LINK_PROXY=1`) at
//!   Debian's timing; a holder pinned to one server works until
//!   `guard.lost()` completes while that server is isolated silently or by
//!   resets, is the isolated leader, or is cut from the leader; Curator 5.4
//!   beside it in the same isolation runs; and a holder process frozen past
//!   its session. Strict
//!   oracles: no other holder while the holder reads `Held`, no rejected
//!   fenced write. `ZOOLOCK_PARTITION_RUNS`, `ZOOLOCK_PARTITION_SESSIONS`
//!   and `ZOOLOCK_FROZEN_RUNS` repeat them.
//!
//! Every worker keeps one client and one lock handle for the whole run:
//! session renewal (`Options::renew_session`, on by default) carries it
//! through every fault, with no code of its own for them.
//!
//! Then it checks:
//!
//! * exclusion: critical sections whose holder was never told `Suspended` or
//!   `Lost` do not overlap (wall-clock µs, one host clock);
//! * fencing: tokens strictly increase in enter order over all sections, and
//!   a resource that rejects lower tokens rejected every stale write (the
//!   stale writes made before the writer was told are counted apart);
//! * no leaked lock nodes once every client has closed;
//! * liveness: the lock moves again after the fault, and every client holds
//!   and releases it again; sessions on a faulted server reconnect elsewhere
//!   within the session.
//!
//! and prints one `scenario NAME: cycles ...` summary line, with details.
//!
//! The CLI binary is `ZOOLOCK_BIN` if set, else built with
//! `cargo build -p zoolock` into this test's target folder (its dependencies'
//! features differ from a workspace build, so the first time compiles a few
//! crates).
//!
//! Skipped, with the reason printed, unless `ZOOLOCK_TEST_ENSEMBLE=1` or `CI`
//! is set; then a failure to start the ensemble fails the test. Scenarios run
//! one at a time (a lock serializes them) since they measure timing. Each
//! prints its seed (clients' host order and jitter);
//! `ZOOLOCK_ENSEMBLE_SEED=0x...` repeats it.
//!
//! ```sh
//! ZOOLOCK_TEST_ENSEMBLE=1 cargo test -p zoolock-conformance --test ensemble -- --nocapture
//! ```

mod faults;
mod frozen;
mod harness;
mod holders;
mod oracle;
mod partition;
mod quorum;
mod reconfig;
mod rig;
mod soak;
mod workload;

use std::sync::Arc;
use std::time::Duration;

use harness::Ensemble;

/// In-process clients per scenario.
pub(crate) const CLIENTS: usize = 4;
/// Their session timeout.
pub(crate) const SESSION: Duration = Duration::from_secs(4);
/// How long each critical section lasts when nothing goes wrong.
pub(crate) const HOLD: Duration = Duration::from_millis(5);
/// A gap between critical sections longer than this counts as a stall.
pub(crate) const STALL_US: i64 = 250_000;
/// The frozen CLI holder's session timeout, and how long it stays frozen.
pub(crate) const CLI_SESSION: Duration = Duration::from_secs(3);
pub(crate) const FREEZE: Duration = Duration::from_secs(5);

/// One scenario at a time: they measure timing. (A tokio mutex: each test has
/// its own runtime, and the guard is held across awaits.)
pub(crate) static SERIAL: tokio::sync::Mutex<()> = tokio::sync::Mutex::const_new(());

pub(crate) async fn serial() -> tokio::sync::MutexGuard<'static, ()> {
    SERIAL.lock().await
}

/// The ensemble for `name`, or `None` (with the reason printed) when these
/// tests are not enabled.
pub(crate) fn ensemble(name: &str) -> Option<Arc<Ensemble>> {
    ensemble_with(name, &[])
}

/// [`ensemble`] with `zk-ensemble.sh`'s settings in `env` (see
/// [`Ensemble::start_with`]).
pub(crate) fn ensemble_with(name: &str, env: &[(&str, String)]) -> Option<Arc<Ensemble>> {
    if !harness::enabled() {
        eprintln!("skipped: set ZOOLOCK_TEST_ENSEMBLE=1 (or CI) to run the 3-server ensemble fault tests");
        return None;
    }
    match Ensemble::start_with(name, env) {
        Ok(e) => Some(Arc::new(e)),
        Err(e) => panic!("{name}: cannot start the ensemble: {e}"),
    }
}
