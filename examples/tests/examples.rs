//! Runs each example (tokio, smol, blocking threads, and `zoolock-core`'s
//! own: the core driven by hand and from a mio loop) against the real
//! ZooKeeper from `ZOOLOCK_TEST_CONNECT` (started by `.ci/run`) and checks
//! its exit status, its output, and that it left no lock node behind.
//! Skipped, with the reason printed, when the variable is unset; failing
//! instead when `CI` is set. Each also runs with no `ZOOLOCK_CONNECT` at
//! all, on the embedded server it then starts.
//!
//! The examples are built with the same cargo and profile as this test, then
//! run as plain processes: quicker than `cargo run --example`, and the build
//! step keeps them from being stale when only this test was selected.

use std::path::PathBuf;
use std::process::{Command, Stdio};
use std::sync::OnceLock;
use std::time::{Duration, Instant};

/// How long one example may take.
const LIMIT: Duration = Duration::from_secs(60);

/// Builds the examples once (this crate's and `zoolock-core`'s among them)
/// and returns the folder holding them: `<target>/<profile>/examples`, next
/// to this test's own `deps` folder. It builds the whole workspace's, so that
/// features unify as in `cargo test --workspace`, which has then built them
/// already (`-p` for the two crates alone recompiled 47 s of dependencies in
/// CI).
fn examples_dir() -> &'static PathBuf {
    static DIR: OnceLock<PathBuf> = OnceLock::new();
    DIR.get_or_init(|| {
        let exe = std::env::current_exe().expect("test binary path");
        let profile_dir = exe.parent().and_then(|deps| deps.parent()).expect("<target>/<profile>/deps/<test>");
        let target_dir = profile_dir.parent().expect("<target>/<profile>");
        let profile = match profile_dir.file_name().and_then(|n| n.to_str()) {
            Some("debug") | None => "dev",
            Some(other) => other,
        };
        let cargo = std::env::var("CARGO").unwrap_or_else(|_| "cargo".into());
        let mut build = Command::new(cargo);
        // Not the variables cargo set for this test (its package's name and
        // folder): build scripts that read them (ring's, through cc) would
        // count as changed and rebuild, here and again in the next outer build.
        for (name, _) in std::env::vars_os() {
            let name = name.to_string_lossy();
            if is_set_for_this_test(&name) {
                build.env_remove(&*name);
            }
        }
        let status = build
            .args(["build", "--quiet", "--workspace", "--examples"])
            .args(["--profile", profile, "--target-dir"])
            .arg(target_dir)
            .status()
            .expect("run cargo");
        assert!(status.success(), "building the examples failed: {status}");
        profile_dir.join("examples")
    })
}

/// The variables cargo sets for a test it runs, naming that test's package;
/// not the ones a user sets for cargo itself (`CARGO_HOME`, `CARGO_PROFILE_*`).
fn is_set_for_this_test(name: &str) -> bool {
    name.starts_with("CARGO_PKG_")
        || name.starts_with("CARGO_MANIFEST_")
        || matches!(name, "CARGO_CRATE_NAME" | "CARGO_PRIMARY_PACKAGE" | "CARGO_BIN_NAME" | "CARGO_TARGET_TMPDIR")
}

/// Runs example `name` on its own lock path (`connect`: `None` leaves
/// `ZOOLOCK_CONNECT` unset); returns its stdout.
fn run(name: &str, connect: Option<&str>, lock_path: &str) -> String {
    let bin = examples_dir().join(name);
    let mut command = Command::new(&bin);
    match connect {
        Some(connect) => command.env("ZOOLOCK_CONNECT", connect),
        None => command.env_remove("ZOOLOCK_CONNECT"),
    };
    let mut child = command
        .env("ZOOLOCK_LOCK_PATH", lock_path)
        .stdout(Stdio::piped())
        .stderr(Stdio::piped())
        .spawn()
        .unwrap_or_else(|e| panic!("start {}: {e}", bin.display()));
    let started = Instant::now();
    while child.try_wait().expect("wait").is_none() {
        if started.elapsed() > LIMIT {
            let _ = child.kill();
            break;
        }
        std::thread::sleep(Duration::from_millis(20));
    }
    let out = child.wait_with_output().expect("output");
    let stdout = String::from_utf8_lossy(&out.stdout).into_owned();
    let stderr = String::from_utf8_lossy(&out.stderr);
    assert!(out.status.success(), "{name} failed ({}):\n--- stdout\n{stdout}--- stderr\n{stderr}", out.status);
    stdout
}

/// The fencing token printed on the `acquired` line (always positive: a czxid).
fn token(stdout: &str) -> i64 {
    let line =
        stdout.lines().find(|l| l.starts_with("acquired ")).unwrap_or_else(|| panic!("no acquired line:\n{stdout}"));
    let token = line.rsplit(' ').next().and_then(|t| t.parse().ok()).expect("a token at the end");
    assert!(token > 0, "{line}");
    token
}

/// The nodes left under `path` (a reaped container counts as none).
fn leftovers(connect: &str, path: &str) -> Vec<String> {
    let rt = tokio::runtime::Builder::new_current_thread().enable_all().build().expect("runtime");
    rt.block_on(async {
        let client = zoolock_tokio::connect(connect, zoolock_tokio::Options::default()).await.expect("connect");
        let mut left = Vec::new();
        let mut todo = vec![path.to_string()];
        while let Some(p) = todo.pop() {
            if let Ok((children, _)) = client.get_children(&p).await {
                for child in children {
                    let full = format!("{p}/{child}");
                    left.push(full.clone());
                    todo.push(full);
                }
            }
        }
        client.close().await.expect("close");
        // Parents (containers) may stay; lock and lease nodes must not.
        left.retain(|n| n.contains("_c_"));
        left
    })
}

/// Runs one example and checks its output and the server afterwards.
fn check(test: &str, example: &str, lines: &[&str]) {
    let Some(connect) = zoolock_testkit::real_server(test) else { return };
    let path = format!("/zoolock-examples-test/{}-{example}", std::process::id());
    let stdout = run(example, Some(&connect), &path);
    for want in lines {
        assert!(stdout.lines().any(|l| l.starts_with(want)), "{example}: no line starting {want:?}:\n{stdout}");
    }
    token(&stdout);
    assert_eq!(leftovers(&connect, &path), Vec::<String>::new(), "{example} left nodes behind");
}

#[test]
fn tokio_mutex_takes_and_releases_a_mutex() {
    check("tokio_mutex_takes_and_releases_a_mutex", "tokio_mutex", &["acquired ", "work done", "released"]);
}

#[test]
fn smol_semaphore_takes_and_returns_a_lease() {
    check("smol_semaphore_takes_and_returns_a_lease", "smol_semaphore", &["acquired lease ", "work done", "released"]);
}

#[test]
fn hand_driven_core_takes_and_releases_a_mutex() {
    check(
        "hand_driven_core_takes_and_releases_a_mutex",
        "hand_driven",
        &["connected, session 0x", "acquired ", "released", "closed"],
    );
}

#[test]
fn mio_locks_holds_several_locks_on_one_session() {
    check(
        "mio_locks_holds_several_locks_on_one_session",
        "mio_locks",
        &[
            "connected, session 0x",
            "acquired ",
            "first and other held at once; second waits",
            "released first",
            "released second",
            "released other",
            "closed",
        ],
    );
}

#[test]
fn blocking_mutex_takes_and_releases_from_threads() {
    check(
        "blocking_mutex_takes_and_releases_from_threads",
        "blocking_mutex",
        &["acquired ", "work done in thread 0", "work done in thread 1", "released"],
    );
}

#[test]
fn tokio_rwlock_shares_reads_and_excludes_the_writer() {
    check(
        "tokio_rwlock_shares_reads_and_excludes_the_writer",
        "tokio_rwlock",
        &[
            "acquired read ",
            "readers share: ",
            "writer waits while readers hold: true",
            "acquired write ",
            "downgraded to read ",
            "released",
        ],
    );
}

/// With no server given, every example starts the embedded one and runs to
/// the end (no real ZooKeeper needed, so this never skips).
#[test]
fn examples_fall_back_to_the_embedded_server() {
    for (example, last) in [
        ("tokio_mutex", "released"),
        ("smol_semaphore", "released"),
        ("hand_driven", "closed"),
        ("mio_locks", "closed"),
        ("blocking_mutex", "released"),
        ("tokio_rwlock", "released"),
    ] {
        let stdout = run(example, None, "/zoolock-examples-test/embedded");
        assert!(stdout.lines().any(|l| l.starts_with(last)), "{example}: no line starting {last:?}:\n{stdout}");
        token(&stdout);
    }
}
