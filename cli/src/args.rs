//! The command line (clap).

use std::time::Duration;

use clap::{Args, Parser, Subcommand, ValueEnum};

use zoolock_tokio::{LeadershipPolicy, LockKind};

use crate::exit;

const ABOUT: &str = "Run a command while holding a Curator-compatible ZooKeeper lock.";

const LONG_ABOUT: &str = "\
Run a command while holding a Curator-compatible ZooKeeper lock.

`zoolock lock /x -- CMD ARGS...` waits for the mutex /x, runs CMD with
ZOOLOCK_FENCING_TOKEN (the lock node's czxid, increasing from one holder to
the next) and ZOOLOCK_NODE (the lock node's path) in its environment, releases
the lock when CMD exits and exits with CMD's status.

If the lock is lost while CMD runs (the session expired, someone deleted the
lock node, or the connection stayed suspended longer than --grace), CMD is sent
SIGTERM, then SIGKILL after
--kill-after, and zoolock exits 70. SIGINT, SIGTERM and SIGHUP sent to zoolock
are forwarded to CMD (its process only, not its children: use `exec` in a
shell wrapper); the lock is released once CMD exits. Ctrl-C at a terminal
reaches CMD once: the terminal signals CMD itself, so zoolock does not forward
that one. While waiting, the same signals cancel the wait and zoolock exits
128+N without running CMD. If zoolock itself dies (even by SIGKILL), CMD is
killed with it (Linux), so it never runs without the lock.

While waiting, a progress line on stderr shows the place in the queue (taken
from the lock's own listings: it sends no request), if stderr is a terminal
or ZOOLOCK_PROGRESS=always.";

/// The `zoolock` command line.
#[derive(Debug, Parser)]
#[command(name = "zoolock", version, about = ABOUT, long_about = LONG_ABOUT, after_long_help = exit::HELP)]
pub(crate) struct Cli {
    #[command(flatten)]
    pub(crate) global: Global,
    #[command(subcommand)]
    pub(crate) command: Command,
}

/// Options every subcommand takes.
#[derive(Debug, Args)]
pub(crate) struct Global {
    /// ZooKeeper connect string: host:port,host:port,... and an optional /chroot suffix
    /// [default: 127.0.0.1:2181; `demo` starts an embedded server instead].
    #[arg(long, value_name = "HOSTS", env = "ZOOLOCK_CONNECT", global = true)]
    pub(crate) connect: Option<String>,
    /// Requested session timeout (e.g. 10s, 1500ms). The server may clamp it.
    #[arg(long, value_name = "D", value_parser = duration, default_value = "10s", global = true)]
    pub(crate) session_timeout: Duration,
    /// How long to wait for the first session before giving up (exit 69). Hosts that all
    /// refuse or do not resolve fail at once, naming the cause.
    #[arg(long, value_name = "D", value_parser = duration, default_value = "15s", global = true)]
    pub(crate) connect_timeout: Duration,
    /// Gzip the data zoolock writes (lock node data, revocations, shared
    /// counts), for fleets whose Curator clients run with
    /// enableCompression(); data is read plain or gzipped either way.
    #[arg(long, global = true)]
    pub(crate) compress: bool,
    /// Log to stderr: -v info, -vv debug, -vvv trace (default: warnings
    /// only). ZOOLOCK_LOG takes a filter instead, e.g.
    /// `zoolock_driver=debug,warn`.
    #[arg(short, long, action = clap::ArgAction::Count, global = true)]
    pub(crate) verbose: u8,
    #[command(flatten)]
    pub(crate) security: Security,
}

/// How to reach a secured ZooKeeper.
#[derive(Debug, Clone, Args)]
#[command(next_help_heading = "Secured ZooKeeper")]
pub(crate) struct Security {
    /// addAuth credentials SCHEME:CREDENTIALS (e.g. digest:alice:secret),
    /// sent after every (re)connect; repeatable. Keep secrets out of argv
    /// (`ps` shows it): set ZOOLOCK_AUTH (several separated by spaces) or
    /// use --auth-file instead.
    #[arg(long, value_name = "SCHEME:CREDS", env = "ZOOLOCK_AUTH", value_delimiter = ' ', global = true,
          value_parser = auth, hide_env_values = true)]
    pub(crate) auth: Vec<zoolock_tokio::AuthInfo>,
    /// Read addAuth credentials from FILE: one SCHEME:CREDENTIALS per line
    /// (blank lines and lines starting with # are skipped).
    #[arg(long, value_name = "FILE", env = "ZOOLOCK_AUTH_FILE", global = true)]
    pub(crate) auth_file: Option<std::path::PathBuf>,
    /// ACL of every node zoolock creates (lock and lease nodes, the parents
    /// created for them, shared counts), in ZooKeeper's CLI syntax: scheme:id:perms, comma-separated (e.g.
    /// auth::cdrwa for "whoever I am authenticated as") [default:
    /// world:anyone:cdrwa].
    #[arg(long, value_name = "SPEC", env = "ZOOLOCK_ACL", global = true, value_parser = acl)]
    pub(crate) acl: Option<AclSpec>,
    /// Connect over TLS, trusting the CA certificates in FILE (PEM).
    #[arg(long, value_name = "FILE", env = "ZOOLOCK_TLS_CA", global = true)]
    pub(crate) tls_ca: Option<std::path::PathBuf>,
    /// Client certificate chain for mutual TLS (PEM); needs --tls-key.
    #[arg(long, value_name = "FILE", env = "ZOOLOCK_TLS_CERT", global = true, requires = "tls_key")]
    pub(crate) tls_cert: Option<std::path::PathBuf>,
    /// The client certificate's private key (PEM, PKCS#8 or PKCS#1).
    #[arg(long, value_name = "FILE", env = "ZOOLOCK_TLS_KEY", global = true, requires = "tls_cert")]
    pub(crate) tls_key: Option<std::path::PathBuf>,
    /// Authenticate with SASL DIGEST-MD5 as USER; the password is read from
    /// the environment variable ZOOLOCK_SASL_PASSWORD only (never a flag, so
    /// it stays out of `ps`).
    #[arg(long, value_name = "USER", env = "ZOOLOCK_SASL_USER", global = true)]
    pub(crate) sasl_user: Option<String>,
    /// The SASL mechanism: digest-md5 (the default with --sasl-user) or
    /// gssapi (Kerberos, with the credentials of KRB5CCNAME or
    /// KRB5_CLIENT_KTNAME; needs a build with the `gssapi` feature).
    #[arg(long, value_name = "MECHANISM", env = "ZOOLOCK_SASL_MECHANISM", global = true, value_enum)]
    pub(crate) sasl_mechanism: Option<SaslMechanism>,
    /// GSSAPI: the service part of the server's principal (default zookeeper).
    #[arg(long, value_name = "NAME", env = "ZOOLOCK_SASL_SERVICE", global = true)]
    pub(crate) sasl_service: Option<String>,
    /// GSSAPI: the host part of the server's principal, instead of each
    /// server's host in --connect.
    #[arg(long, value_name = "HOST", env = "ZOOLOCK_SASL_HOST", global = true)]
    pub(crate) sasl_host: Option<String>,
    /// Check the servers' certificates for NAME instead of the connect
    /// string's host.
    #[arg(long, value_name = "NAME", env = "ZOOLOCK_TLS_SERVER_NAME", global = true)]
    pub(crate) tls_server_name: Option<String>,
}

/// A `--sasl-mechanism`.
#[derive(Debug, Clone, Copy, PartialEq, Eq, clap::ValueEnum)]
pub(crate) enum SaslMechanism {
    /// SASL DIGEST-MD5 as --sasl-user.
    DigestMd5,
    /// SASL GSSAPI (Kerberos).
    Gssapi,
}

fn auth(s: &str) -> Result<zoolock_tokio::AuthInfo, String> {
    zoolock_tokio::AuthInfo::parse(s).ok_or_else(|| format!("`{s}` is not SCHEME:CREDENTIALS"))
}

/// A parsed `--acl`.
#[derive(Debug, Clone)]
pub(crate) struct AclSpec(pub(crate) Vec<zoolock_tokio::Acl>);

fn acl(s: &str) -> Result<AclSpec, String> {
    zoolock_tokio::parse_acl(s).map(AclSpec).map_err(|e| e.to_string())
}

impl Global {
    /// The connect string: `--connect`, else `ZOOLOCK_CONNECT`, else the default.
    pub(crate) fn connect_string(&self) -> &str {
        self.connect.as_deref().unwrap_or(DEFAULT_CONNECT)
    }
}

/// Where to connect when neither `--connect` nor `ZOOLOCK_CONNECT` says.
pub(crate) const DEFAULT_CONNECT: &str = "127.0.0.1:2181";

/// The subcommands.
#[derive(Debug, Subcommand)]
pub(crate) enum Command {
    /// Run CMD while holding the mutex PATH (Curator's InterProcessMutex).
    #[command(after_long_help = exit::HELP)]
    Lock {
        #[command(flatten)]
        hold: HoldArgs,
        /// Make the lock revocable by `zoolock revoke`.
        ///
        /// On a revocation CMD is sent SIGTERM (SIGKILL after --kill-after),
        /// the lock is released once CMD exits, and zoolock exits with CMD's
        /// status. A revocable lock node has no data (--data is ignored).
        #[arg(long)]
        revocable: bool,
    },
    /// Run CMD while holding the read half of the read-write lock PATH.
    #[command(after_long_help = exit::HELP)]
    ReadLock {
        #[command(flatten)]
        hold: HoldArgs,
    },
    /// Run CMD while holding the write half of the read-write lock PATH.
    #[command(after_long_help = exit::HELP)]
    WriteLock {
        #[command(flatten)]
        hold: HoldArgs,
    },
    /// Run CMD while holding one lease of the semaphore PATH (Curator's
    /// InterProcessSemaphoreV2), of N leases or sized by a shared count.
    #[command(after_long_help = exit::HELP)]
    Semaphore {
        #[command(flatten)]
        hold: HoldArgs,
        #[command(flatten)]
        size: SizeArgs,
        /// Make the lease revocable by `zoolock revoke --node LEASE_NODE`.
        ///
        /// On a revocation CMD is sent SIGTERM (SIGKILL after --kill-after),
        /// the lease is returned once CMD exits, and zoolock exits with CMD's
        /// status. A revocable lease node has no data (--data is ignored).
        #[arg(long)]
        revocable: bool,
    },
    /// Run CMD while leading the election PATH (Curator's LeaderSelector,
    /// or LeaderLatch with --latch).
    ///
    /// The LeaderSelector layout is a mutex whose node data is the
    /// participant id; the LeaderLatch layout has `latch-` nodes. zoolock
    /// waits for leadership, runs CMD while leading (with ZOOLOCK_NODE and
    /// ZOOLOCK_FENCING_TOKEN), stops CMD on a loss as `zoolock lock` does
    /// (exit 70), gives leadership up when CMD exits and exits with its
    /// status. Curator participants on the same path take turns with it.
    #[command(after_long_help = exit::HELP)]
    Elect {
        #[command(flatten)]
        hold: HoldArgs,
        #[command(flatten)]
        election: ElectionArgs,
    },
    /// Print the id of the current leader of the election PATH.
    ///
    /// One line, the id (Curator's getLeader()); exits 1 when nobody leads.
    /// With --json, every participant in queue order:
    /// `[{"id":"...","leader":true,"node":"/path/_c_...-lock-0000000000"}]`.
    Leader {
        /// The election path.
        #[arg(value_parser = zk_path)]
        path: String,
        /// The LeaderLatch layout (`latch-` nodes) rather than LeaderSelector's.
        #[arg(long)]
        latch: bool,
        /// Print the participants as JSON (with --watch, one object per
        /// change: `{"path","id","node","token","held_for_ms"}`).
        #[arg(long)]
        json: bool,
        /// Print the leader now and at each change, until Ctrl-C (exit 0):
        /// one line `id=ID node=NODE token=CZXID held_for=D` (`id=-` and
        /// `-` fields when nobody leads). Driven by a watch: nothing is
        /// sent between changes.
        #[arg(long)]
        watch: bool,
    },
    /// Read or write a shared count (Curator's SharedCount: a node holding a
    /// 4-byte big-endian int), e.g. the size of a semaphore run with
    /// --leases-from.
    Count {
        #[command(subcommand)]
        action: CountAction,
    },
    /// List the participants of PATH in queue order (holder first): one line
    /// `INDEX holding|waiting NODE DATA` each, DATA as UTF-8 with escapes.
    ///
    /// Without --kind, the layout is recognised from PATH's node names:
    /// `lock-` nodes (a mutex, or a LeaderSelector election), `__READ__` /
    /// `__WRIT__` nodes (a read-write lock), `latch-` nodes (a LeaderLatch
    /// election) or `leases` / `locks` folders (a semaphore). Nodes of
    /// several layouts, or of none, are an error (exit 1) that asks for
    /// --kind; so is a --kind the nodes contradict. A path with no nodes
    /// lists nobody.
    Holders {
        /// The lock path.
        #[arg(value_parser = zk_path)]
        path: String,
        /// Which recipe's layout PATH has (default: recognised from its
        /// nodes). Refused when PATH's nodes show another layout.
        #[arg(long, value_enum)]
        kind: Option<Kind>,
        /// With a semaphore: print its size and the leases remaining first
        /// (`size N remaining M`; with --json, `"size"` and `"remaining"`
        /// in the object), the size being N or the count at COUNT_PATH.
        /// Without a size, every lease node counts as holding.
        #[command(flatten)]
        size: HoldersSize,
        /// Print one JSON object instead:
        /// `{"path":"/p","kind":"rwlock","participants":[{"node":"/p/_c_...-__READ__0000000000","data":"...","holding":true}]}`,
        /// participants holder first (data decoded as UTF-8, invalid bytes
        /// replaced; an election's participants also have their `id`;
        /// `kind` is null when PATH has no nodes and no --kind was given).
        #[arg(long)]
        json: bool,
        /// Print the holder now and at each change, until Ctrl-C (exit 0):
        /// one line `data=DATA node=NODE token=CZXID held_for=D` (with
        /// --json, `{"path","data","node","token","held_for_ms"}`; an
        /// election's data is its `id`). The holder is the first node in
        /// queue order (the oldest lease of a semaphore). Driven by a
        /// watch: nothing is sent between changes. A PATH with no nodes
        /// needs --kind.
        #[arg(long, conflicts_with_all = ["leases", "leases_from"])]
        watch: bool,
    },
    /// Ask the holder of a revocable mutex (or, with --node, of a revocable
    /// semaphore lease) to give it up (Curator's Revoker). Exits 1 if PATH
    /// has no holder.
    Revoke {
        /// The mutex path; its first participant (the holder) is revoked.
        #[arg(value_parser = zk_path, required_unless_present = "node", conflicts_with = "node")]
        path: Option<String>,
        /// Revoke this lock node instead (a full node path, as `holders` prints).
        #[arg(long, value_name = "NODE", value_parser = zk_path)]
        node: Option<String>,
    },
    /// Show zoolock at work: workers contend on a mutex, a read-write lock
    /// and a semaphore, with live progress and a summary. Starts an embedded
    /// in-memory ZooKeeper unless --connect (or ZOOLOCK_CONNECT) is given.
    Demo(crate::commands::demo::DemoArgs),
    /// Measure lock cycles against the server at --connect (one JSON object
    /// per run with --json).
    Bench(crate::commands::bench::BenchArgs),
    /// Serve an in-memory ZooKeeper (zoolock's model of a standalone 3.8
    /// server) on 127.0.0.1 for tests; prints its connect string on stdout
    /// and runs until SIGINT or SIGTERM. Nothing is persisted.
    Serve(crate::commands::serve::ServeArgs),
    /// Print a shell completion script on stdout, e.g.
    /// `zoolock completions bash > /etc/bash_completion.d/zoolock`.
    Completions {
        /// The shell.
        #[arg(value_enum)]
        shell: clap_complete::Shell,
    },
    /// Print the manual page (roff) on stdout, e.g.
    /// `zoolock man > zoolock.1; man ./zoolock.1`.
    Man {
        /// Print the page of this subcommand instead (zoolock-SUBCOMMAND(1)),
        /// with all its options.
        #[arg(value_name = "SUBCOMMAND")]
        subcommand: Option<String>,
    },
}

/// What every lock-and-run subcommand takes.
#[derive(Debug, Args)]
pub(crate) struct HoldArgs {
    /// The lock path.
    #[arg(value_parser = zk_path)]
    pub(crate) path: String,
    /// Give up after waiting this long: bare seconds (5, 0.5) or a duration
    /// (30s, 2m) (exit 75, or --conflict-exit-code; CMD not run). A free
    /// lock is taken even with 0. `-w` and `--wait` as in flock.
    #[arg(short = 'w', long, visible_alias = "wait", value_name = "SECONDS", value_parser = wait_duration)]
    pub(crate) timeout: Option<Duration>,
    /// Do not wait: take the lock only if it is free (same as --timeout 0s).
    #[arg(short = 'n', long, conflicts_with = "timeout")]
    pub(crate) nonblock: bool,
    /// The exit code when the lock was not granted in time (--timeout,
    /// --nonblock).
    #[arg(short = 'E', long, value_name = "N", default_value_t = exit::TIMEOUT)]
    pub(crate) conflict_exit_code: u8,
    /// How long a suspended connection is tolerated before CMD is stopped
    /// and zoolock exits 70 [default: session timeout / 6].
    ///
    /// While suspended, the hold is uncertain. Must be below the session
    /// timeout. With the defaults of --grace and --kill-after, CMD is dead a
    /// third of the session timeout after the suspension: a silent
    /// connection is noticed two thirds of the session timeout after the
    /// server last answered, and the server may expire the session and grant
    /// the lock to someone else one third later.
    #[arg(long, value_name = "D", value_parser = duration)]
    pub(crate) grace: Option<Duration>,
    /// How long CMD gets to exit after SIGTERM on a lost lock or a
    /// revocation before it is sent SIGKILL [default: session timeout / 6].
    #[arg(long, value_name = "D", value_parser = duration)]
    pub(crate) kill_after: Option<Duration>,
    /// Data for the lock node, shown by `holders` (default: this host's
    /// address, as Curator writes).
    #[arg(long, value_name = "TEXT")]
    pub(crate) data: Option<String>,
    /// Give the lock up (CMD stopped as on a loss, exit 70) once it has been
    /// held this long, even if the session is alive: its node is deleted, so
    /// a hung holder cannot block the others forever [default: no limit].
    #[arg(long, value_name = "D", value_parser = duration)]
    pub(crate) max_hold: Option<Duration>,
    /// Run COMMAND with `sh -c` instead of CMD ARGS, as `flock -c`.
    #[arg(short = 'c', long = "command", id = "shell_command", value_name = "COMMAND", conflicts_with = "command")]
    pub(crate) shell_command: Option<String>,
    /// The command to run, and its arguments (after `--`, or after PATH).
    #[arg(value_name = "CMD", required_unless_present = "shell_command", trailing_var_arg = true, num_args = 1..)]
    pub(crate) command: Vec<String>,
}

impl HoldArgs {
    /// How long to wait for the lock (`None`: as long as it takes).
    pub(crate) fn wait_limit(&self) -> Option<Duration> {
        if self.nonblock { Some(Duration::ZERO) } else { self.timeout }
    }

    /// The program and its arguments: `sh -c COMMAND` for `-c`, else CMD ARGS.
    pub(crate) fn argv(&self) -> Vec<String> {
        match &self.shell_command {
            Some(command) => vec!["sh".to_owned(), "-c".to_owned(), command.clone()],
            None => self.command.clone(),
        }
    }
}

/// Who takes part in an election, and in which layout.
#[derive(Debug, Args)]
pub(crate) struct ElectionArgs {
    /// The participant id, stored as the node's data (Curator's setId), as
    /// `zoolock leader` and Curator's getLeader() report it [default:
    /// HOSTNAME:PID]. Replaces --data.
    #[arg(long, value_name = "ID", conflicts_with = "data")]
    pub(crate) id: Option<String>,
    /// The LeaderLatch layout (`latch-` nodes; the term is one latch from
    /// start to close) rather than LeaderSelector's.
    #[arg(long)]
    pub(crate) latch: bool,
    /// What ends the term: `standard` (a connection suspended past --grace,
    /// or the session's loss) or `session` (only the session's loss or the
    /// node's deletion, as Curator's SessionConnectionStateErrorPolicy).
    ///
    /// Under `session`, CMD keeps running while the connection is down, and
    /// the server may expire the session and elect another leader before
    /// zoolock hears of it: CMD must fence its writes with
    /// ZOOLOCK_FENCING_TOKEN. --grace does not apply (a usage error).
    #[arg(long, value_name = "POLICY", default_value = "standard", value_parser = leadership_policy)]
    pub(crate) policy: LeadershipPolicy,
}

/// A leadership policy by its name (`standard`, `session`).
fn leadership_policy(s: &str) -> Result<LeadershipPolicy, String> {
    LeadershipPolicy::from_name(s).ok_or_else(|| format!("`{s}` is not a policy: standard or session"))
}

/// How many leases a semaphore has.
#[derive(Debug, Args)]
#[group(required = true, multiple = false)]
pub(crate) struct SizeArgs {
    /// N leases (all users must agree).
    #[arg(long, value_name = "N", value_parser = clap::value_parser!(u32).range(1..))]
    pub(crate) leases: Option<u32>,
    /// As many leases as the shared count at COUNT_PATH says, resized live
    /// when it changes (`zoolock count set`). Created with 1 if absent.
    #[arg(long, value_name = "COUNT_PATH", value_parser = zk_path)]
    pub(crate) leases_from: Option<String>,
}

/// The size `holders` reports for a semaphore.
#[derive(Debug, Args)]
#[group(required = false, multiple = false)]
pub(crate) struct HoldersSize {
    /// The semaphore has N leases.
    #[arg(long, value_name = "N")]
    pub(crate) leases: Option<u32>,
    /// The semaphore is sized by the shared count at COUNT_PATH.
    #[arg(long, value_name = "COUNT_PATH", value_parser = zk_path)]
    pub(crate) leases_from: Option<String>,
}

/// `zoolock count` actions.
#[derive(Debug, Subcommand)]
pub(crate) enum CountAction {
    /// Print the count at PATH (exits 1 if there is none).
    Get {
        /// The count node.
        #[arg(value_parser = zk_path)]
        path: String,
    },
    /// Set the count at PATH to N, creating it if absent.
    Set {
        /// The count node.
        #[arg(value_parser = zk_path)]
        path: String,
        /// The new value.
        #[arg(allow_negative_numbers = true)]
        value: i32,
    },
}

/// The recipe layout of a lock path: the kinds `holders` offers.
#[derive(Debug, Clone, Copy, PartialEq, Eq, ValueEnum)]
pub(crate) enum Kind {
    /// A mutex (`zoolock lock`).
    Mutex,
    /// A read-write lock (`read-lock`, `write-lock`).
    Rwlock,
    /// A semaphore (`zoolock semaphore`).
    Semaphore,
    /// A LeaderSelector election (`zoolock elect`): a mutex whose node data
    /// is the participant id.
    Election,
    /// A LeaderLatch election (`zoolock elect --latch`).
    Latch,
}

impl Kind {
    /// The lock kind it names.
    pub(crate) fn lock_kind(self) -> LockKind {
        match self {
            Kind::Mutex => LockKind::Mutex,
            Kind::Rwlock => LockKind::ReadWriteLock,
            Kind::Semaphore => LockKind::Semaphore,
            Kind::Election => LockKind::LeaderSelector,
            Kind::Latch => LockKind::LeaderLatch,
        }
    }

    /// The kind naming `kind` on the command line; `None` for kinds
    /// `holders` does not offer (a semaphore mutex reads as a semaphore).
    pub(crate) fn of(kind: LockKind) -> Option<Kind> {
        [Kind::Mutex, Kind::Rwlock, Kind::Semaphore, Kind::Election, Kind::Latch]
            .into_iter()
            .find(|k| k.lock_kind() == kind)
    }

    /// Its name on the command line (`--kind NAME`).
    pub(crate) fn name(self) -> String {
        self.to_possible_value().map(|v| v.get_name().to_owned()).unwrap_or_default()
    }
}

pub(crate) fn duration(s: &str) -> Result<Duration, humantime::DurationError> {
    humantime::parse_duration(s)
}

/// A wait limit: bare seconds (`5`, `0.5`, as flock's `-w`) or a humantime
/// duration (`30s`, `1m 30s`).
fn wait_duration(s: &str) -> Result<Duration, String> {
    match s.parse::<f64>() {
        Ok(secs) => Duration::try_from_secs_f64(secs).map_err(|e| format!("`{s}`: {e}")),
        Err(_) => humantime::parse_duration(s).map_err(|e| e.to_string()),
    }
}

fn zk_path(s: &str) -> Result<String, String> {
    zoolock_tokio::ZkPath::new(s).map(|p| p.as_str().to_owned()).map_err(|e| e.to_string())
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn clap_definition_is_consistent() {
        use clap::CommandFactory;
        Cli::command().debug_assert();
    }

    #[test]
    fn lock_takes_command_after_double_dash() {
        let cli = Cli::try_parse_from(["zoolock", "lock", "/x", "--timeout", "300ms", "--", "sh", "-c", "exit 7"])
            .expect("parses");
        let Command::Lock { hold, revocable } = cli.command else { panic!("not lock") };
        assert!(!revocable);
        assert_eq!(hold.path, "/x");
        assert_eq!(hold.timeout, Some(Duration::from_millis(300)));
        assert_eq!(hold.command, ["sh", "-c", "exit 7"]);
    }

    #[test]
    fn global_options_go_before_or_after_the_subcommand() {
        let a = Cli::try_parse_from(["zoolock", "--connect", "h:1", "lock", "/x", "--", "true"]).expect("parses");
        let b = Cli::try_parse_from(["zoolock", "lock", "/x", "--connect", "h:1", "--", "true"]).expect("parses");
        assert_eq!(a.global.connect_string(), "h:1");
        assert_eq!(b.global.connect_string(), "h:1");
        assert!(!a.global.compress);
        let c = Cli::try_parse_from(["zoolock", "count", "set", "/c", "1", "--compress"]).expect("parses");
        assert!(c.global.compress);
    }

    #[test]
    fn bad_paths_and_missing_commands_are_usage_errors() {
        assert!(Cli::try_parse_from(["zoolock", "lock", "x", "--", "true"]).is_err());
        assert!(Cli::try_parse_from(["zoolock", "lock", "/x/", "--", "true"]).is_err());
        assert!(Cli::try_parse_from(["zoolock", "lock", "/x"]).is_err());
        assert!(Cli::try_parse_from(["zoolock", "semaphore", "/x", "--", "true"]).is_err());
        assert!(Cli::try_parse_from(["zoolock", "semaphore", "/x", "--leases", "0", "--", "true"]).is_err());
        assert!(
            Cli::try_parse_from(["zoolock", "semaphore", "/x", "--leases", "1", "--leases-from", "/c", "--", "true"])
                .is_err()
        );
        assert!(Cli::try_parse_from(["zoolock", "count", "set", "/c"]).is_err());
        assert!(Cli::try_parse_from(["zoolock", "count", "set", "/c", "x"]).is_err());
        assert!(Cli::try_parse_from(["zoolock", "count", "set", "/c", "-3"]).is_ok());
        assert!(Cli::try_parse_from(["zoolock", "revoke"]).is_err());
        assert!(Cli::try_parse_from(["zoolock", "revoke", "/x", "--node", "/x/n"]).is_err());
        assert!(Cli::try_parse_from(["zoolock", "serve", "--port", "x"]).is_err());
    }

    #[test]
    fn nonblock_is_timeout_zero_and_conflict_exit_code_defaults_to_75() {
        let hold = |args: &[&str]| {
            let cli = Cli::try_parse_from(args).expect("parses");
            let Command::Lock { hold, .. } = cli.command else { panic!("not lock") };
            hold
        };
        let h = hold(&["zoolock", "lock", "/x", "-n", "--", "true"]);
        assert_eq!((h.wait_limit(), h.conflict_exit_code), (Some(Duration::ZERO), 75));
        let h = hold(&["zoolock", "lock", "/x", "--nonblock", "-E", "3", "--", "true"]);
        assert_eq!((h.wait_limit(), h.conflict_exit_code), (Some(Duration::ZERO), 3));
        let h = hold(&["zoolock", "lock", "/x", "--timeout", "2s", "--conflict-exit-code", "0", "--", "true"]);
        assert_eq!((h.wait_limit(), h.conflict_exit_code), (Some(Duration::from_secs(2)), 0));
        assert_eq!(hold(&["zoolock", "lock", "/x", "--", "true"]).wait_limit(), None);
        assert!(Cli::try_parse_from(["zoolock", "lock", "/x", "-n", "--timeout", "1s", "--", "true"]).is_err());
        assert!(Cli::try_parse_from(["zoolock", "lock", "/x", "-E", "256", "--", "true"]).is_err());
    }

    #[test]
    fn wait_takes_bare_seconds_and_durations_and_c_a_shell_command() {
        let hold = |args: &[&str]| {
            let cli = Cli::try_parse_from(args).expect("parses");
            let Command::Lock { hold, .. } = cli.command else { panic!("not lock") };
            hold
        };
        assert_eq!(
            hold(&["zoolock", "lock", "/x", "--timeout", "5", "--", "true"]).timeout,
            Some(Duration::from_secs(5))
        );
        assert_eq!(
            hold(&["zoolock", "lock", "/x", "-w", "0.5", "--", "true"]).timeout,
            Some(Duration::from_millis(500))
        );
        assert_eq!(
            hold(&["zoolock", "lock", "/x", "--wait", "1m", "--", "true"]).timeout,
            Some(Duration::from_secs(60))
        );
        assert!(Cli::try_parse_from(["zoolock", "lock", "/x", "-w", "-1", "--", "true"]).is_err());
        let h = hold(&["zoolock", "lock", "/x", "-c", "echo hi; exit 3"]);
        assert_eq!(h.argv(), ["sh", "-c", "echo hi; exit 3"]);
        assert_eq!(hold(&["zoolock", "lock", "/x", "--", "a", "b"]).argv(), ["a", "b"]);
        assert!(Cli::try_parse_from(["zoolock", "lock", "/x", "-c", "true", "--", "false"]).is_err());
    }

    #[test]
    fn security_flags_parse() {
        let cli = Cli::try_parse_from([
            "zoolock",
            "--auth",
            "digest:a:b",
            "--auth",
            "ip:127.0.0.1",
            "--acl",
            "auth::cdrwa,world:anyone:r",
            "--tls-ca",
            "ca.pem",
            "--tls-cert",
            "c.pem",
            "--tls-key",
            "k.pem",
            "lock",
            "/x",
            "--",
            "true",
        ])
        .expect("parses");
        let s = &cli.global.security;
        assert_eq!(s.auth.iter().map(|a| a.scheme.as_str()).collect::<Vec<_>>(), ["digest", "ip"]);
        assert_eq!(s.acl.as_ref().map(|a| a.0.len()), Some(2));
        assert!(s.tls_ca.is_some() && s.tls_cert.is_some() && s.tls_key.is_some());
        assert!(Cli::try_parse_from(["zoolock", "--acl", "auth::rwx", "lock", "/x", "--", "true"]).is_err());
        assert!(Cli::try_parse_from(["zoolock", "--auth", "digest", "lock", "/x", "--", "true"]).is_err());
        assert!(Cli::try_parse_from(["zoolock", "--tls-cert", "c.pem", "lock", "/x", "--", "true"]).is_err());
    }

    #[test]
    fn elect_takes_an_id_the_latch_layout_and_the_lock_options() {
        let cli = Cli::try_parse_from([
            "zoolock",
            "elect",
            "/e",
            "--id",
            "w1",
            "--latch",
            "-n",
            "--grace",
            "1s",
            "--max-hold",
            "3s",
            "--",
            "run",
        ])
        .expect("parses");
        let Command::Elect { hold, election } = cli.command else { panic!("not elect") };
        assert_eq!((election.id.as_deref(), election.latch), (Some("w1"), true));
        assert_eq!(
            (hold.wait_limit(), hold.grace, hold.max_hold),
            (Some(Duration::ZERO), Some(Duration::from_secs(1)), Some(Duration::from_secs(3)))
        );
        assert_eq!(hold.command, ["run"]);
        let cli = Cli::try_parse_from(["zoolock", "elect", "/e", "-c", "true"]).expect("parses");
        let Command::Elect { election, .. } = cli.command else { panic!("not elect") };
        assert_eq!((election.id, election.latch), (None, false));
        // The id is the node data: both at once is a usage error.
        assert!(Cli::try_parse_from(["zoolock", "elect", "/e", "--id", "a", "--data", "b", "--", "true"]).is_err());
        assert!(Cli::try_parse_from(["zoolock", "elect", "/e"]).is_err());
    }

    #[test]
    fn elect_takes_a_leadership_policy() {
        let policy_of = |args: &[&str]| {
            let cli = Cli::try_parse_from(args.iter().copied()).expect("parses");
            let Command::Elect { election, .. } = cli.command else { panic!("not elect") };
            election.policy
        };
        assert_eq!(policy_of(&["zoolock", "elect", "/e", "-c", "true"]), LeadershipPolicy::Standard);
        let session = policy_of(&["zoolock", "elect", "/e", "--policy", "session", "-c", "true"]);
        assert_eq!(session, LeadershipPolicy::Session);
        let standard = ["zoolock", "elect", "/e", "--policy", "standard", "--grace", "1s", "-c", "true"];
        assert_eq!(policy_of(&standard), LeadershipPolicy::Standard);
        assert!(Cli::try_parse_from(["zoolock", "elect", "/e", "--policy", "lenient", "-c", "true"]).is_err());
    }

    #[test]
    fn max_hold_is_on_every_holding_command_and_leader_takes_latch_and_json() {
        for cmd in
            [&["lock", "/x"][..], &["read-lock", "/x"], &["write-lock", "/x"], &["semaphore", "/x", "--leases", "2"]]
        {
            let args = [&["zoolock"][..], cmd, &["--max-hold", "2s", "--", "true"]].concat();
            let cli = Cli::try_parse_from(args).expect("parses");
            let hold = match cli.command {
                Command::Lock { hold, .. }
                | Command::ReadLock { hold }
                | Command::WriteLock { hold }
                | Command::Semaphore { hold, .. } => hold,
                other => panic!("{other:?}"),
            };
            assert_eq!(hold.max_hold, Some(Duration::from_secs(2)));
        }
        let cli = Cli::try_parse_from(["zoolock", "leader", "/e", "--latch", "--json"]).expect("parses");
        assert!(
            matches!(cli.command, Command::Leader { ref path, latch: true, json: true, watch: false } if path == "/e")
        );
        let cli = Cli::try_parse_from(["zoolock", "leader", "/e", "--watch"]).expect("parses");
        assert!(matches!(cli.command, Command::Leader { watch: true, json: false, .. }));
        let cli = Cli::try_parse_from(["zoolock", "holders", "/e", "--watch", "--json"]).expect("parses");
        assert!(matches!(cli.command, Command::Holders { watch: true, json: true, .. }));
        assert!(Cli::try_parse_from(["zoolock", "holders", "/e", "--watch", "--leases", "2"]).is_err());
        assert!(Cli::try_parse_from(["zoolock", "leader", "e"]).is_err());
        let cli = Cli::try_parse_from(["zoolock", "holders", "/e", "--kind", "latch"]).expect("parses");
        assert!(matches!(cli.command, Command::Holders { kind: Some(Kind::Latch), .. }));
        let cli = Cli::try_parse_from(["zoolock", "holders", "/e"]).expect("parses");
        assert!(matches!(cli.command, Command::Holders { kind: None, .. }), "no --kind: recognised from the nodes");
    }

    #[test]
    fn every_holders_kind_is_named_back_from_its_lock_kind() {
        for kind in Kind::value_variants() {
            assert_eq!(Kind::of(kind.lock_kind()), Some(*kind));
            let cli = Cli::try_parse_from(["zoolock", "holders", "/p", "--kind", &kind.name()]).expect("parses");
            assert!(matches!(cli.command, Command::Holders { kind: Some(k), .. } if k == *kind));
        }
        assert_eq!(Kind::of(LockKind::SemaphoreMutex), None);
        assert_eq!(Kind::Rwlock.name(), "rwlock");
    }

    #[test]
    fn serve_port_defaults_to_any() {
        let cli = Cli::try_parse_from(["zoolock", "serve"]).expect("parses");
        assert!(matches!(cli.command, Command::Serve(ref a) if a.port == 0));
        let cli = Cli::try_parse_from(["zoolock", "serve", "--port", "2181"]).expect("parses");
        assert!(matches!(cli.command, Command::Serve(ref a) if a.port == 2181));
    }
}
