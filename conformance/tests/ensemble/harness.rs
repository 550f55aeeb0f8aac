//! The ensemble under test (`scripts/zk-ensemble.sh`), four-letter words,
//! the `zoolock` CLI binary, and wall-clock time.

use std::io::{Read, Write};
use std::net::TcpStream;
use std::path::{Path, PathBuf};
use std::process::Command;
use std::time::{Duration, SystemTime, UNIX_EPOCH};

/// Microseconds since the Unix epoch: comparable with `date +%s%6N` in the
/// CLI's command and with the CLI's log timestamps.
pub(crate) fn now_us() -> i64 {
    SystemTime::now().duration_since(UNIX_EPOCH).map(|d| d.as_micros() as i64).unwrap_or(0)
}

fn workspace_root() -> PathBuf {
    Path::new(env!("CARGO_MANIFEST_DIR")).parent().expect("workspace root").to_path_buf()
}

/// Whether these tests must run: `ZOOLOCK_TEST_ENSEMBLE=1`, or `CI` set
/// (then a failure to start the ensemble fails the test).
pub(crate) fn enabled() -> bool {
    let set =
        |name: &str| std::env::var(name).is_ok_and(|v| !v.is_empty() && v != "0" && !v.eq_ignore_ascii_case("false"));
    set("ZOOLOCK_TEST_ENSEMBLE") || set("CI")
}

/// A running 3-server ensemble; stopped (by the pids in its folder) on drop,
/// and by the script's watchdog if this process dies without dropping it.
pub(crate) struct Ensemble {
    dir: PathBuf,
    /// `127.0.0.1:a,127.0.0.1:b,127.0.0.1:c`, server N at index N-1.
    pub(crate) connect: String,
    pub(crate) ports: Vec<u16>,
}

impl Ensemble {
    /// Starts a 3-server ensemble for `name` with `zk-ensemble.sh`'s settings in
    /// `env` (`ZK_LINK_PROXY`, `ZK_TIMING`, `ZK_TICK_TIME`,
    /// `ZK_MIN_SESSION_TIMEOUT`, ...; none for the defaults).
    pub(crate) fn start_with(name: &str, env: &[(&str, String)]) -> Result<Ensemble, String> {
        let dir = Path::new(env!("CARGO_TARGET_TMPDIR")).join(format!("ensemble-{}-{name}", std::process::id()));
        let _ = std::fs::remove_dir_all(&dir);
        std::fs::create_dir_all(&dir).map_err(|e| format!("create {}: {e}", dir.display()))?;
        let out = Command::new("bash")
            .arg(workspace_root().join("scripts/zk-ensemble.sh"))
            .arg("start")
            .arg(&dir)
            .env("ZK_OWNER_PID", std::process::id().to_string())
            .envs(env.iter().map(|(k, v)| (*k, v.as_str())))
            .output()
            .map_err(|e| format!("run zk-ensemble.sh: {e}"))?;
        if !out.status.success() {
            return Err(format!(
                "zk-ensemble.sh start failed ({}): {}",
                out.status,
                String::from_utf8_lossy(&out.stderr).trim()
            ));
        }
        let connect = String::from_utf8_lossy(&out.stdout).trim().to_owned();
        let ports = connect
            .split(',')
            .map(|hp| hp.rsplit(':').next().and_then(|p| p.parse().ok()).ok_or_else(|| format!("bad address {hp}")))
            .collect::<Result<Vec<u16>, String>>()?;
        if ports.len() != 3 {
            return Err(format!("expected 3 servers, got {connect}"));
        }
        Ok(Ensemble { dir, connect, ports })
    }

    /// Runs `zk-ensemble.sh ARGS DIR [N]`; returns stdout, panics on failure.
    fn script(&self, cmd: &str, n: Option<usize>) -> String {
        let args: Vec<String> = n.iter().map(usize::to_string).collect();
        self.script_args(cmd, &args)
    }

    /// Runs `zk-ensemble.sh CMD DIR ARGS...`; returns stdout, panics on failure.
    fn script_args(&self, cmd: &str, args: &[String]) -> String {
        let out = Command::new("bash")
            .arg(workspace_root().join("scripts/zk-ensemble.sh"))
            .arg(cmd)
            .arg(&self.dir)
            .args(args)
            .output()
            .expect("run zk-ensemble.sh");
        assert!(
            out.status.success(),
            "zk-ensemble.sh {cmd} {args:?} failed: {}",
            String::from_utf8_lossy(&out.stderr).trim()
        );
        String::from_utf8_lossy(&out.stdout).trim().to_owned()
    }

    /// Every link of server `n` to `mode` (`reset` or `silent`); needs
    /// `ZK_LINK_PROXY=1` at start. Returns when the proxy applied it (Unix µs).
    pub(crate) fn isolate(&self, n: usize, mode: &str) -> Option<i64> {
        applied_at(&self.script_args("isolate", &[n.to_string(), mode.to_owned()]))
    }

    /// The links between servers `a` and `b` to `mode`; returns when the
    /// proxy applied it (Unix µs).
    pub(crate) fn cut(&self, a: usize, b: usize, mode: &str) -> Option<i64> {
        applied_at(&self.script_args("cut", &[a.to_string(), b.to_string(), mode.to_owned()]))
    }

    /// Every link forwards again.
    pub(crate) fn heal(&self) {
        self.script_args("heal", &[]);
    }

    /// `127.0.0.1:PORT` of server `n`'s client port.
    pub(crate) fn addr(&self, n: usize) -> String {
        format!("127.0.0.1:{}", self.ports[n - 1])
    }

    /// The folder with the servers' logs and the link proxy's.
    pub(crate) fn dir(&self) -> &Path {
        &self.dir
    }

    /// SIGKILL server `n`.
    pub(crate) fn kill(&self, n: usize) {
        self.script("kill", Some(n));
    }

    /// Starts server `n` (4..=9) of a `ZK_RECONFIG=1` ensemble with the
    /// current membership plus itself, waits until it serves, and returns
    /// its `server.N=...;127.0.0.1:PORT` line (not a member until a
    /// `reconfig` adds that line).
    pub(crate) fn join(&self, n: usize) -> String {
        self.script("join", Some(n))
    }

    /// SIGSTOP server `n`.
    pub(crate) fn freeze(&self, n: usize) {
        self.script("stop-node", Some(n));
    }

    /// SIGCONT server `n`.
    pub(crate) fn thaw(&self, n: usize) {
        self.script("cont", Some(n));
    }

    /// Starts server `n` again and waits until it serves.
    pub(crate) fn restart(&self, n: usize) {
        self.script("restart", Some(n));
    }

    /// The server that says `Mode: leader`.
    pub(crate) fn leader(&self) -> usize {
        self.script("leader", None).parse().expect("leader number")
    }

    /// `srvr`'s Mode of server `n` (empty if it does not serve).
    pub(crate) fn mode(&self, n: usize) -> String {
        four_letter(self.ports[n - 1], "srvr")
            .lines()
            .find_map(|l| l.strip_prefix("Mode: ").map(str::to_owned))
            .unwrap_or_default()
    }

    /// Which server (1..=3) each session id is connected to, from `cons`.
    pub(crate) fn server_of(&self, session_ids: &[i64]) -> Vec<Option<usize>> {
        let cons: Vec<String> = (0..3).map(|i| four_letter(self.ports[i], "cons")).collect();
        session_ids
            .iter()
            .map(|sid| {
                let needle = format!("sid=0x{sid:x},");
                cons.iter().position(|c| c.contains(&needle)).map(|i| i + 1)
            })
            .collect()
    }

    pub(crate) fn stop(&self) {
        let out = Command::new("bash")
            .arg(workspace_root().join("scripts/zk-ensemble.sh"))
            .arg("stop")
            .arg(&self.dir)
            .output();
        match out {
            Ok(o) if o.status.success() => {}
            Ok(o) => eprintln!("zk-ensemble.sh stop: {}", String::from_utf8_lossy(&o.stderr).trim()),
            Err(e) => eprintln!("zk-ensemble.sh stop: {e}"),
        }
    }
}

impl Drop for Ensemble {
    fn drop(&mut self) {
        self.stop();
        if std::thread::panicking() {
            eprintln!("ensemble logs kept in {}", self.dir.display());
        } else {
            let _ = std::fs::remove_dir_all(&self.dir);
        }
    }
}

/// The time in the link proxy's answer `ok N links MODE at US`.
fn applied_at(answer: &str) -> Option<i64> {
    answer.rsplit_once(" at ").and_then(|(_, us)| us.trim().parse().ok())
}

/// A four-letter word's reply (empty if the server does not answer in 2 s).
pub(crate) fn four_letter(port: u16, word: &str) -> String {
    let go = || -> std::io::Result<String> {
        let addr = std::net::SocketAddr::from(([127, 0, 0, 1], port));
        let mut s = TcpStream::connect_timeout(&addr, Duration::from_secs(2))?;
        s.set_read_timeout(Some(Duration::from_secs(2)))?;
        s.write_all(word.as_bytes())?;
        let mut out = String::new();
        s.read_to_string(&mut out)?;
        Ok(out)
    };
    go().unwrap_or_default()
}

/// The `zoolock` CLI binary: `ZOOLOCK_BIN` if set, else built with
/// `cargo build -p zoolock` (a no-op when `cargo test --workspace` already
/// built it) in this test's profile and target folder, and found from
/// cargo's own report of the executable.
pub(crate) fn zoolock_bin() -> Result<PathBuf, String> {
    if let Some(bin) = std::env::var_os("ZOOLOCK_BIN") {
        return Ok(PathBuf::from(bin));
    }
    let cargo = std::env::var_os("CARGO").unwrap_or_else(|| env!("CARGO").into());
    let mut cmd = Command::new(cargo);
    cmd.current_dir(workspace_root()).args(["build", "-q", "-p", "zoolock", "--bin", "zoolock"]);
    cmd.arg("--message-format=json-render-diagnostics");
    if !cfg!(debug_assertions) {
        cmd.arg("--release");
    }
    // The test binary lives in TARGET/PROFILE/deps: build into the same TARGET.
    // (Only for the plain layout; with --target the build folder nests deeper.)
    let exe = std::env::current_exe().ok();
    let profile_dir = exe.as_deref().and_then(|e| e.parent()?.parent());
    if let Some(profile_dir) = profile_dir.filter(|d| d.file_name().is_some_and(|n| n == "debug" || n == "release")) {
        if let Some(target) = profile_dir.parent() {
            cmd.env("CARGO_TARGET_DIR", target);
        }
    }
    let out = cmd.output().map_err(|e| format!("cargo build -p zoolock: {e}"))?;
    if !out.status.success() {
        return Err(format!("cargo build -p zoolock failed: {}", String::from_utf8_lossy(&out.stderr)));
    }
    String::from_utf8_lossy(&out.stdout)
        .lines()
        .filter_map(|l| serde_json::from_str::<serde_json::Value>(l).ok())
        .filter(|v| v["reason"] == "compiler-artifact" && v["target"]["name"] == "zoolock")
        .find_map(|v| v["executable"].as_str().map(PathBuf::from))
        .ok_or_else(|| "cargo build -p zoolock reported no zoolock executable".to_owned())
}

/// Unix µs of a tracing timestamp such as `2025-01-02T03:04:05.678901Z`.
pub(crate) fn parse_rfc3339_us(s: &str) -> Option<i64> {
    let s = s.trim().strip_suffix('Z')?;
    let (date, time) = s.split_once('T')?;
    let mut d = date.split('-').map(|x| x.parse::<i64>());
    let (y, m, day) = (d.next()?.ok()?, d.next()?.ok()?, d.next()?.ok()?);
    let (hms, frac) = time.split_once('.').unwrap_or((time, "0"));
    let mut t = hms.split(':').map(|x| x.parse::<i64>());
    let (hh, mm, ss) = (t.next()?.ok()?, t.next()?.ok()?, t.next()?.ok()?);
    let frac_us: i64 = format!("{frac:0<6}")[..6].parse().ok()?;
    // Days from civil (Howard Hinnant's algorithm).
    let y = if m <= 2 { y - 1 } else { y };
    let era = y.div_euclid(400);
    let yoe = y - era * 400;
    let doy = (153 * (m + if m > 2 { -3 } else { 9 }) + 2) / 5 + day - 1;
    let doe = yoe * 365 + yoe / 4 - yoe / 100 + doy;
    let days = era * 146_097 + doe - 719_468;
    Some(((days * 86_400 + hh * 3600 + mm * 60 + ss) * 1_000_000) + frac_us)
}
