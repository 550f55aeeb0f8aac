//! CMD and zoolock's own death and signals, black-box, against the embedded
//! server (`zoolock serve`), so they need no ZooKeeper:
//!
//! * CMD never outlives zoolock: killed with SIGKILL, zoolock takes CMD with
//!   it (Linux: the parent-death signal).
//! * Ctrl-C at a terminal reaches CMD once: the kernel sends SIGINT to the
//!   whole foreground process group, zoolock and CMD, and zoolock must not
//!   forward a second one (run under a pseudo-terminal with python3's `pty`).
//! * A SIGINT sent to zoolock's pid with kill(2) is still forwarded, once.

use std::path::{Path, PathBuf};
use std::process::{Command, Stdio};
use std::thread;
use std::time::{Duration, Instant};

use nix::sys::signal::{Signal, kill};
use nix::unistd::Pid;

mod common;

use common::{Served, scratch};

const BIN: &str = env!("CARGO_BIN_EXE_zoolock");

/// The arguments of `zoolock --connect ADDR lock PATH -- CMD...`.
fn lock_args(addr: &str, path: &str, cmd: &[String]) -> Vec<String> {
    let args = ["--connect", addr, "lock", path, "--"].map(str::to_owned);
    args.into_iter().chain(cmd.iter().cloned()).collect()
}

/// `zoolock --connect ADDR lock PATH -- CMD...`, with stdin closed.
fn lock(addr: &str, path: &str, cmd: &[String]) -> Command {
    let mut c = Command::new(BIN);
    c.env_remove("ZOOLOCK_CONNECT").args(lock_args(addr, path, cmd)).stdin(Stdio::null());
    c
}

/// Waits until `path` holds a line, at most 10 s.
fn wait_for_line(path: &Path) -> String {
    let deadline = Instant::now() + Duration::from_secs(10);
    loop {
        let text = std::fs::read_to_string(path).unwrap_or_default();
        if text.ends_with('\n') {
            return text.trim().to_owned();
        }
        assert!(Instant::now() < deadline, "{} never got a line", path.display());
        thread::sleep(Duration::from_millis(10));
    }
}

/// Whether `pid` is still a running process: gone, or a zombie waiting for
/// a reaper (it no longer runs), counts as not running.
fn running(pid: i32) -> bool {
    match std::fs::read_to_string(format!("/proc/{pid}/stat")) {
        // The state follows the parenthesised command name.
        Ok(stat) => stat.rsplit_once(')').is_some_and(|(_, rest)| !rest.trim_start().starts_with(['Z', 'X'])),
        Err(_) => false,
    }
}

/// A python3 CMD that appends a line to `log` for every SIGINT it gets,
/// writes "ready" to `ready` (or stdout) once its handler is installed, and
/// exits 0 after `secs` seconds.
fn counting_cmd(log: &Path, ready: Option<&Path>, secs: f64) -> Vec<String> {
    let announce = match ready {
        Some(ready) => format!("open({:?}, 'w').write('ready\\n')", ready.display().to_string()),
        None => "print('ready', flush=True)".to_owned(),
    };
    let script = format!(
        "import signal, time\n\
         def h(s, f):\n    open({log:?}, 'a').write('int\\n')\n\
         signal.signal(signal.SIGINT, h)\n\
         {announce}\n\
         end = time.time() + {secs}\n\
         while time.time() < end:\n    time.sleep(0.01)\n",
        log = log.display().to_string(),
    );
    vec!["python3".to_owned(), "-c".to_owned(), script]
}

/// The embedded server, a scratch directory named `name`, and in it the
/// log a [`counting_cmd`] writes.
fn sigint_rig(name: &str) -> (Served, PathBuf, PathBuf) {
    let server = Served::start();
    let dir = scratch(name);
    let log = dir.join("sigints");
    (server, dir, log)
}

fn sigints(log: &Path) -> usize {
    std::fs::read_to_string(log).map(|t| t.lines().count()).unwrap_or(0)
}

#[cfg(target_os = "linux")]
#[test]
fn cmd_dies_with_zoolock_killed_by_sigkill() {
    let server = Served::start();
    let dir = scratch("sigkill");
    let pidfile = dir.join("pid");
    let script = format!("echo $$ > {}; exec sleep 30", pidfile.display());
    let cmd = ["sh".to_owned(), "-c".to_owned(), script];
    let mut zoolock = lock(&server.addr, "/child-sigkill", &cmd).spawn().unwrap();
    let cmd: i32 = wait_for_line(&pidfile).parse().unwrap();
    assert!(running(cmd), "CMD (pid {cmd}) runs under the lock");

    zoolock.kill().unwrap(); // SIGKILL
    zoolock.wait().unwrap();
    let killed = Instant::now();
    while running(cmd) && killed.elapsed() < Duration::from_secs(1) {
        thread::sleep(Duration::from_millis(10));
    }
    let still = running(cmd);
    if still {
        let _ = kill(Pid::from_raw(cmd), Signal::SIGKILL);
    }
    assert!(!still, "CMD (pid {cmd}) still running 1 s after zoolock was killed");
    std::fs::remove_dir_all(&dir).unwrap();
}

#[test]
fn ctrl_c_at_a_terminal_reaches_cmd_once() {
    let (server, dir, log) = sigint_rig("pty");
    let mut argv = vec![BIN.to_owned()];
    argv.extend(lock_args(&server.addr, "/child-pty", &counting_cmd(&log, None, 1.5)));
    // zoolock runs as the session leader of a new pseudo-terminal, in its
    // foreground process group, as under an interactive shell. Once CMD
    // says it is ready, ^C is typed; then everything is read until zoolock
    // exits, and its exit status printed.
    let driver = r#"
import os, pty, sys, time
argv = sys.argv[1:]
pid, fd = pty.fork()
if pid == 0:
    os.environ.pop('ZOOLOCK_CONNECT', None)
    os.execv(argv[0], argv)
out = b''
while b'ready' not in out:
    out += os.read(fd, 1024)
time.sleep(0.2)
os.write(fd, b'\x03')
while True:
    try:
        chunk = os.read(fd, 1024)
    except OSError:
        break
    if not chunk:
        break
    out += chunk
_, status = os.waitpid(pid, 0)
sys.stderr.write(out.decode(errors='replace'))
print(os.waitstatus_to_exitcode(status))
"#;
    let out = Command::new("python3").arg("-c").arg(driver).args(&argv).stdin(Stdio::null()).output().unwrap();
    let stderr = String::from_utf8_lossy(&out.stderr);
    assert!(out.status.success(), "the pty driver failed: {stderr}");
    let code: i32 = String::from_utf8_lossy(&out.stdout).trim().parse().unwrap();
    assert_eq!(code, 0, "zoolock exits with CMD's status; terminal output:\n{stderr}");
    assert_eq!(sigints(&log), 1, "CMD got one SIGINT per ^C; terminal output:\n{stderr}");
    std::fs::remove_dir_all(&dir).unwrap();
}

#[test]
fn sigint_sent_to_zoolock_is_forwarded_once() {
    let (server, dir, log) = sigint_rig("forward");
    let ready = dir.join("ready");
    let mut zoolock = lock(&server.addr, "/child-forward", &counting_cmd(&log, Some(&ready), 1.5)).spawn().unwrap();
    wait_for_line(&ready);
    kill(Pid::from_raw(i32::try_from(zoolock.id()).unwrap()), Signal::SIGINT).unwrap();
    let status = zoolock.wait().unwrap();
    assert_eq!(status.code(), Some(0), "zoolock exits with CMD's status");
    assert_eq!(sigints(&log), 1, "the forwarded SIGINT reached CMD once");
    std::fs::remove_dir_all(&dir).unwrap();
}
