//! Exit codes (the `sysexits.h` numbers where one fits).
//!
//! | code | meaning |
//! | --- | --- |
//! | CMD's | CMD ran and exited by itself, or after a signal zoolock forwarded to it or after a revocation; a CMD killed by signal N gives 128+N, as in a shell |
//! | 1 | `revoke`: no holder to revoke; any other failure not listed here |
//! | 64 | usage error: bad arguments, an invalid path or duration |
//! | 69 | ZooKeeper unavailable: cannot connect (a refused certificate or password included), or the session failed before the lock was held |
//! | 70 | the lock was lost while CMD ran (session expired, lock node deleted, or connection suspended past `--grace`): CMD was sent SIGTERM (SIGKILL after `--kill-after`) |
//! | 75 | `--timeout` passed (or `--nonblock` found the lock taken) before the lock was granted: CMD was not run; `--conflict-exit-code N` picks another code |
//! | 126, 127 | CMD could not be run (not executable, not found) |
//! | 128+N | zoolock got signal N (SIGINT, SIGTERM, SIGHUP) while waiting: CMD was not run |

/// No holder to revoke, or an unclassified failure.
pub(crate) const FAILURE: u8 = 1;
/// Bad command line.
pub(crate) const USAGE: u8 = 64;
/// Cannot connect, or ZooKeeper failed before the lock was held.
pub(crate) const UNAVAILABLE: u8 = 69;
/// The lock was lost while CMD ran.
pub(crate) const LOCK_LOST: u8 = 70;
/// `--timeout` passed before the lock was granted.
pub(crate) const TIMEOUT: u8 = 75;
/// CMD exists but could not be executed.
pub(crate) const CANNOT_EXECUTE: u8 = 126;
/// CMD was not found.
pub(crate) const NOT_FOUND: u8 = 127;

/// The exit code table as printed by `--help`.
pub(crate) const HELP: &str = "\
Exit codes:
  CMD's   CMD ran and exited by itself, or after a forwarded signal or a
          revocation (a CMD killed by signal N gives 128+N, as in a shell)
  1       revoke: no holder; any other failure not listed here
  64      usage error (bad arguments, invalid path or duration)
  69      ZooKeeper unavailable: cannot connect (including a refused
          certificate or password), or the session failed before the lock
          was held
  70      lock lost while CMD ran (session expired, lock node deleted, or
          suspended longer than --grace): CMD got SIGTERM, then SIGKILL
          after --kill-after
  75      --timeout passed (or --nonblock found the lock taken) before the
          lock was granted: CMD was not run (-E N: exit N instead)
  126/127 CMD could not be executed / was not found
  128+N   zoolock got signal N while waiting: CMD was not run";

/// A command's failure: the exit code and the one-line message for stderr.
#[derive(Debug)]
pub(crate) struct Failure {
    pub(crate) code: u8,
    pub(crate) message: String,
}

impl Failure {
    pub(crate) fn new(code: u8, message: impl Into<String>) -> Failure {
        Failure { code, message: message.into() }
    }
}

/// What a command hands back to `main`: the exit code, or a failure to report.
pub(crate) type Outcome = Result<u8, Failure>;

/// 128+N for a signal, as shells report it.
pub(crate) fn signal_code(signo: i32) -> u8 {
    u8::try_from(128 + signo).unwrap_or(255)
}

/// The exit code for a finished child: its code, or 128+N if a signal killed it.
pub(crate) fn child_code(status: std::process::ExitStatus) -> u8 {
    use std::os::unix::process::ExitStatusExt;
    match (status.code(), status.signal()) {
        (Some(code), _) => u8::try_from(code & 0xff).unwrap_or(FAILURE),
        (None, Some(signo)) => signal_code(signo),
        (None, None) => FAILURE,
    }
}
