//! The conveniences users of flock, etcdctl lock and consul lock expect,
//! black-box, against the embedded server (`zoolock serve`): `-n/--nonblock`,
//! `-E/--conflict-exit-code`, `-w SECONDS`, `-c COMMAND`, `holders --json`,
//! the waiting line off a terminal, `completions SHELL` and `man`.

use std::process::{Child, Command, Output, Stdio};
use std::thread;
use std::time::{Duration, Instant};

use nix::sys::signal::{Signal, kill};
use nix::unistd::Pid;
use serde_json::{Value, json};

mod common;

use common::Served;

const BIN: &str = env!("CARGO_BIN_EXE_zoolock");

fn zoolock(addr: &str) -> Command {
    let mut c = Command::new(BIN);
    c.env_remove("ZOOLOCK_CONNECT").args(["--connect", addr]).stdin(Stdio::null());
    c
}

fn output(cmd: &mut Command) -> Output {
    cmd.output().expect("run zoolock")
}

fn stdout(out: &Output) -> String {
    assert!(out.status.success(), "zoolock failed: {out:?}");
    String::from_utf8(out.stdout.clone()).expect("UTF-8 output")
}

/// `holders --json PATH`, parsed.
fn holders_json(addr: &str, path: &str) -> Value {
    serde_json::from_str(&stdout(&output(zoolock(addr).args(["holders", "--json", path])))).expect("one JSON value")
}

/// The participants of `holders --json PATH`, checking the object's shape.
fn participants(addr: &str, path: &str) -> Vec<Value> {
    let value = holders_json(addr, path);
    assert_eq!(value["path"], json!(path), "{value}");
    let list = value["participants"].as_array().unwrap_or_else(|| panic!("no participants array: {value}")).clone();
    // Recognised from the nodes: a mutex's, or none while there are none.
    let kind = if list.is_empty() { json!(null) } else { json!("mutex") };
    assert_eq!(value["kind"], kind, "{value}");
    list
}

/// Starts a holder of `path` with lock node data `data`, running `sleep 30`,
/// and waits until it holds.
fn hold(addr: &str, path: &str, data: &str) -> Child {
    let holder = zoolock(addr).args(["lock", path, "--data", data, "--", "sleep", "30"]).spawn().unwrap();
    let deadline = Instant::now() + Duration::from_secs(10);
    while participants(addr, path).is_empty() {
        assert!(Instant::now() < deadline, "the holder of {path} never showed up");
        thread::sleep(Duration::from_millis(20));
    }
    holder
}

/// Stops a holder (SIGTERM is forwarded to its CMD) and waits for it.
fn stop(mut holder: Child) {
    kill(Pid::from_raw(i32::try_from(holder.id()).unwrap()), Signal::SIGTERM).unwrap();
    holder.wait().unwrap();
}

#[test]
fn nonblock_gives_up_at_once_with_the_conflict_exit_code() {
    let server = Served::start();
    let addr = &server.addr;
    // A free lock is taken without waiting, and CMD's status comes back.
    let out = output(zoolock(addr).args(["lock", "-n", "/nonblock", "--", "sh", "-c", "exit 7"]));
    assert_eq!(out.status.code(), Some(7), "{out:?}");

    let holder = hold(addr, "/nonblock", "first");
    let started = Instant::now();
    let out = output(zoolock(addr).args(["lock", "--nonblock", "/nonblock", "--", "touch", "/nonexistent/ran"]));
    assert_eq!(out.status.code(), Some(75), "{out:?}");
    assert!(started.elapsed() < Duration::from_secs(5), "--nonblock waited {:?}", started.elapsed());
    let stderr = String::from_utf8_lossy(&out.stderr);
    assert!(stderr.contains("/nonblock is held by first"), "{out:?}");
    let out = output(zoolock(addr).args(["lock", "-n", "-E", "9", "/nonblock", "--", "true"]));
    assert_eq!(out.status.code(), Some(9), "{out:?}");
    let out = output(zoolock(addr).args([
        "lock",
        "--timeout",
        "100ms",
        "--conflict-exit-code",
        "3",
        "/nonblock",
        "--",
        "true",
    ]));
    assert_eq!(out.status.code(), Some(3), "{out:?}");
    // Nobody but the holder is left in the queue.
    assert_eq!(participants(addr, "/nonblock").len(), 1);
    stop(holder);
}

#[test]
fn holders_json_lists_the_queue_holder_first() {
    let server = Served::start();
    let addr = &server.addr;
    assert_eq!(
        holders_json(addr, "/json"),
        json!({ "path": "/json", "kind": null, "participants": [] }),
        "no participants: an empty list, and no layout to name"
    );

    // Quotes, a backslash and a newline must come out as valid JSON.
    let first = "host \"a\" \\ 1\nline 2";
    let holder = hold(addr, "/json", first);
    let waiter = zoolock(addr).args(["lock", "/json", "--data", "b", "--", "true"]).spawn().unwrap();
    let deadline = Instant::now() + Duration::from_secs(10);
    let list = loop {
        let list = participants(addr, "/json");
        if list.len() == 2 {
            break list;
        }
        assert!(Instant::now() < deadline, "the waiter never queued: {list:?}");
        thread::sleep(Duration::from_millis(20));
    };
    for ((entry, data), holding) in list.iter().zip([first, "b"]).zip([true, false]) {
        assert_eq!(entry["holding"], json!(holding), "{entry}");
        assert_eq!(entry["data"], json!(data), "{entry}");
        let node = entry["node"].as_str().unwrap();
        assert!(node.starts_with("/json/_c_") && node.contains("-lock-"), "{node}");
    }
    let text = stdout(&output(zoolock(addr).args(["holders", "/json"])));
    let lines: Vec<&str> = text.lines().collect();
    assert!(lines[0].starts_with(&format!("0 holding {} ", list[0]["node"].as_str().unwrap())), "{text}");
    assert_eq!(lines.last().copied(), Some(format!("1 waiting {} b", list[1]["node"].as_str().unwrap()).as_str()));
    stop(holder);
    let mut waiter = waiter;
    assert!(waiter.wait().unwrap().success());
}

/// `--compress` gzips lock node data and counts (Curator's
/// `enableCompression()`); a plain zoolock reads both.
#[test]
fn compress_gzips_lock_data_and_counts() {
    let server = Served::start();
    let addr = &server.addr;
    let raw = |path: &str| {
        let rt = tokio::runtime::Builder::new_current_thread().enable_all().build().unwrap();
        rt.block_on(async {
            let client = zoolock_tokio::connect(addr, zoolock_tokio::Options::default()).await.unwrap();
            let (data, _) = client.get_data(path).await.unwrap();
            client.close().await.unwrap();
            data
        })
    };
    let args = ["--compress", "lock", "/gz", "--data", "worker-1", "--", "sleep", "30"];
    let holder = zoolock(addr).args(args).spawn().unwrap();
    let deadline = Instant::now() + Duration::from_secs(10);
    let list = loop {
        let list = participants(addr, "/gz");
        if !list.is_empty() {
            break list;
        }
        assert!(Instant::now() < deadline, "the holder never showed up");
        thread::sleep(Duration::from_millis(20));
    };
    assert_eq!(list[0]["data"], json!("worker-1"), "decompressed by a plain zoolock");
    let node = raw(list[0]["node"].as_str().unwrap());
    assert!(zoolock_tokio::sans_io::gzip::is_gzip(&node), "{node:?}");
    stop(holder);

    stdout(&output(zoolock(addr).args(["--compress", "count", "set", "/gz-count", "5"])));
    let count = raw("/gz-count");
    assert_eq!(zoolock_tokio::sans_io::gzip::decompress(&count, 4).unwrap(), [0, 0, 0, 5]);
    assert_eq!(stdout(&output(zoolock(addr).args(["count", "get", "/gz-count"]))), "5\n");
}

/// Off a terminal, a waiter says at once, and again at least every 30 s,
/// where it stands and who holds the lock; `-w` takes bare seconds, and
/// `-c` runs a shell command, as with flock.
#[test]
fn a_waiter_off_a_terminal_names_the_holder() {
    let server = Served::start();
    let addr = &server.addr;
    let holder = hold(addr, "/p", "holder-host");
    // stderr is a pipe here: not a terminal.
    let started = Instant::now();
    let out = output(zoolock(addr).args(["lock", "-w", "2", "/p", "-c", "exit 3"]).env_remove("ZOOLOCK_PROGRESS"));
    assert_eq!(out.status.code(), Some(75), "-w 2 timed out: {out:?}");
    let waited = started.elapsed();
    assert!(waited >= Duration::from_secs(2) && waited < Duration::from_secs(10), "{waited:?}");
    let stderr = String::from_utf8_lossy(&out.stderr);
    let line = stderr.lines().find(|l| l.contains("still waiting for /p")).unwrap_or_else(|| panic!("{stderr}"));
    assert!(line.contains("position 1 of 2") && line.contains("held by holder-host"), "{line}");
    assert!(stderr.contains("timed out after 2s waiting for /p, held by holder-host"), "{stderr}");

    // Held both ways: the holder is in `holders --json` exactly once.
    let waiter = zoolock(addr).args(["lock", "/p", "--data", "waiter", "-c", "exit 3"]).spawn().unwrap();
    let deadline = Instant::now() + Duration::from_secs(10);
    while participants(addr, "/p").len() < 2 {
        assert!(Instant::now() < deadline, "the waiter never queued");
        thread::sleep(Duration::from_millis(20));
    }
    let list = participants(addr, "/p");
    assert_eq!(list.iter().filter(|p| p["holding"] == json!(true)).count(), 1, "{list:?}");
    assert_eq!(list[0]["data"], json!("holder-host"));
    stop(holder);
    let mut waiter = waiter;
    assert_eq!(waiter.wait().unwrap().code(), Some(3), "-c ran through sh once the lock was free");
}

/// `ZOOLOCK_LOG` picks what is logged (a bad filter is reported, not
/// fatal); `--auth-file` and `ZOOLOCK_AUTH` carry digest credentials with
/// nothing secret in argv.
#[test]
fn log_filter_and_credentials_from_a_file_or_the_environment() {
    let server = Served::start();
    let addr = &server.addr;
    let out = output(zoolock(addr).env("ZOOLOCK_LOG", "zoolock_driver=debug").args(["lock", "/logged", "--", "true"]));
    let stderr = String::from_utf8_lossy(&out.stderr);
    assert!(out.status.success(), "{out:?}");
    assert!(stderr.contains("DEBUG") && stderr.contains("lock granted") && stderr.contains("waited="), "{stderr}");
    let out = output(zoolock(addr).env("ZOOLOCK_LOG", "bad=[").args(["holders", "/logged"]));
    assert!(out.status.success(), "{out:?}");
    assert!(String::from_utf8_lossy(&out.stderr).contains("ignoring ZOOLOCK_LOG"), "{out:?}");

    let file = std::env::temp_dir().join(format!("zoolock-auth-test-{}", std::process::id()));
    std::fs::write(&file, "# the ops account\ndigest:alice:secret\n").unwrap();
    let auth_file = file.to_str().unwrap();
    let set = ["--auth-file", auth_file, "--acl", "auth::cdrwa", "count", "set", "/secret", "7"];
    assert_eq!(stdout(&output(zoolock(addr).args(set))), "7\n");
    let denied = output(zoolock(addr).env_remove("ZOOLOCK_AUTH").args(["count", "get", "/secret"]));
    assert!(!denied.status.success(), "read without credentials: {denied:?}");
    let read = ["--auth-file", auth_file, "count", "get", "/secret"];
    assert_eq!(stdout(&output(zoolock(addr).args(read))), "7\n");
    let env = output(zoolock(addr).env("ZOOLOCK_AUTH", "digest:alice:secret").args(["count", "get", "/secret"]));
    assert_eq!(stdout(&env), "7\n");
    std::fs::remove_file(&file).unwrap();
}

#[test]
fn completions_are_generated_for_every_shell() {
    for shell in ["bash", "zsh", "fish", "elvish", "powershell"] {
        let script = stdout(&output(Command::new(BIN).args(["completions", shell])));
        for word in ["holders", "nonblock", "conflict-exit-code"] {
            assert!(script.contains(word), "{shell} completions lack {word}");
        }
    }
    // The bash script is valid bash and registers a completion for zoolock.
    let script = stdout(&output(Command::new(BIN).args(["completions", "bash"])));
    assert!(script.contains("complete -F _zoolock"), "{script}");
    let check = Command::new("bash").args(["-n", "-c", &script]).output().unwrap();
    assert!(check.status.success(), "bash -n: {}", String::from_utf8_lossy(&check.stderr));
    let out = output(Command::new(BIN).args(["completions", "tcsh"]));
    assert_eq!(out.status.code(), Some(64), "an unknown shell is a usage error");
}

#[test]
fn man_pages_are_generated_from_the_command_line() {
    let page = stdout(&output(Command::new(BIN).arg("man")));
    assert!(page.contains(".TH zoolock 1"), "{page}");
    for sub in ["lock", "holders", "completions", "man"] {
        assert!(page.contains(&format!("zoolock\\-{sub}(1)")), "zoolock(1) does not refer to zoolock-{sub}(1)");
    }
    let lock = stdout(&output(Command::new(BIN).args(["man", "lock"])));
    assert!(lock.contains(".TH zoolock-lock 1"), "{lock}");
    for option in ["\\-\\-nonblock", "\\-\\-conflict\\-exit\\-code", "\\-\\-timeout", "\\-\\-connect"] {
        assert!(lock.contains(option), "zoolock-lock(1) lacks {option}");
    }
    for page in [&page, &lock] {
        assert!(page.contains("Exit codes:") && page.contains("75"), "no exit code table: {page}");
    }
    let help = stdout(&output(Command::new(BIN).args(["lock", "--help"])));
    assert!(help.contains("Exit codes:"), "{help}");
    let out = output(Command::new(BIN).args(["man", "nope"]));
    assert_eq!(out.status.code(), Some(64), "{out:?}");
}
