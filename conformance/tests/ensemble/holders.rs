//! A holder that stops: the `zoolock` CLI frozen with its command, and an
//! in-process holder whose thread and runtime block.

use std::os::unix::process::CommandExt;
use std::path::Path;
use std::process::{Command, Stdio};
use std::sync::Arc;
use std::time::Duration;

use crate::harness::{self, now_us};
use crate::oracle::{analyse, assert_no_leak, check_common};
use crate::workload::{Run, Section, Write, blocking, join, new_run, spawn_workers};
use crate::{CLI_SESSION, CLIENTS, FREEZE, SESSION, ensemble, serial};
use zoolock_tokio::{Client, Guard, HoldStatus, Options};

// ---- the frozen holder (a separate process) -----------------------------------------

/// The CLI's command: records its start, then writes a tick every 50 ms
/// (each a fenced write with its token) for 14 s, then records its end.
const CMD: &str = r#"f=$1
end=$(( $(date +%s) + 14 ))
echo "enter $(date +%s%6N) $ZOOLOCK_FENCING_TOKEN" >>"$f"
while [ "$(date +%s)" -lt "$end" ]; do
    echo "tick $(date +%s%6N) $ZOOLOCK_FENCING_TOKEN" >>"$f"
    sleep 0.05
done
echo "exit $(date +%s%6N) $ZOOLOCK_FENCING_TOKEN" >>"$f""#;

/// Sends `sig` to every process of group `pgid` (the CLI and its command).
fn signal_group(pgid: u32, sig: &str) {
    let status = Command::new("bash").args(["-c", &format!("kill -{sig} -- -{pgid}")]).status().expect("run kill");
    assert!(status.success(), "kill -{sig} -- -{pgid} failed");
}

fn read_records(path: &Path) -> Vec<(String, i64, i64)> {
    std::fs::read_to_string(path)
        .unwrap_or_default()
        .lines()
        .filter_map(|l| {
            let mut f = l.split_whitespace();
            Some((f.next()?.to_owned(), f.next()?.parse().ok()?, f.next()?.parse().ok()?))
        })
        .collect()
}

/// The first `level` log line of the CLI's stderr containing `needle`, as Unix µs.
fn cli_log_time(stderr: &str, needle: &str) -> Option<i64> {
    stderr.lines().find(|l| l.contains(needle)).and_then(|l| harness::parse_rfc3339_us(l.split_whitespace().next()?))
}

/// A kill-on-drop guard for the CLI's process group.
struct Group(u32);

impl Drop for Group {
    fn drop(&mut self) {
        let _ = Command::new("bash")
            .args(["-c", &format!("kill -CONT -- -{0} 2>/dev/null; kill -KILL -- -{0} 2>/dev/null", self.0)])
            .status();
    }
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn frozen_holder() {
    let _serial = serial().await;
    let name = "frozen-holder";
    let Some(ens) = ensemble(name) else { return };
    let bin = harness::zoolock_bin().unwrap_or_else(|e| panic!("{name}: {e}"));
    let scratch = Path::new(env!("CARGO_TARGET_TMPDIR")).join(format!("ensemble-{}-{name}-cli", std::process::id()));
    let _ = std::fs::remove_dir_all(&scratch);
    std::fs::create_dir_all(&scratch).unwrap();
    let records = scratch.join("cmd.log");
    let stderr_path = scratch.join("zoolock.stderr");
    let run = new_run(&ens, name, Duration::from_secs(14));

    let mut cli = Command::new(&bin)
        .arg("--connect")
        .arg(&ens.connect)
        .arg("--session-timeout")
        .arg(format!("{}ms", CLI_SESSION.as_millis()))
        .arg("-v")
        .args(["lock", &run.path, "--", "sh", "-c", CMD, "sh"])
        .arg(&records)
        .process_group(0)
        .stdin(Stdio::null())
        .stdout(Stdio::null())
        .stderr(std::fs::File::create(&stderr_path).unwrap())
        .spawn()
        .unwrap_or_else(|e| panic!("{name}: run {}: {e}", bin.display()));
    let group = Group(cli.id());

    // The CLI holds the lock once its command has recorded its start.
    let waited = std::time::Instant::now();
    while !read_records(&records).iter().any(|r| r.0 == "enter") {
        assert!(waited.elapsed() < Duration::from_secs(15), "{name}: the CLI did not get the lock");
        if let Some(status) = cli.try_wait().unwrap() {
            panic!("{name}: the CLI exited early ({status}): {}", std::fs::read_to_string(&stderr_path).unwrap());
        }
        tokio::time::sleep(Duration::from_millis(20)).await;
    }
    // The others queue behind it.
    let workers = spawn_workers(&run, CLIENTS - 1, SESSION);
    tokio::time::sleep(Duration::from_secs(1)).await;

    let frozen_at = now_us();
    signal_group(group.0, "STOP");
    println!("  {name}: SIGSTOP zoolock (pid {}) and its command at {:.1} ms", group.0, run.ms(frozen_at));
    tokio::time::sleep(FREEZE).await;
    let taken_over = run.log().sections.iter().filter(|s| s.enter > frozen_at).map(|s| s.enter).min();
    let resumed_at = now_us();
    signal_group(group.0, "CONT");
    println!("  {name}: SIGCONT at {:.1} ms", run.ms(resumed_at));

    let waited = std::time::Instant::now();
    let status = loop {
        if let Some(status) = cli.try_wait().unwrap() {
            break status;
        }
        assert!(waited.elapsed() < Duration::from_secs(10), "{name}: the CLI did not exit after the resume");
        tokio::time::sleep(Duration::from_millis(10)).await;
    };
    let exited_at = now_us();
    join(workers).await;
    drop(group);

    let stderr = std::fs::read_to_string(&stderr_path).unwrap_or_default();
    let recs = read_records(&records);
    let token = recs.first().map(|r| r.2).unwrap_or_default();
    let enter = recs.iter().find(|r| r.0 == "enter").map(|r| r.1).unwrap_or_default();
    let last = recs.last().map(|r| r.1).unwrap_or(enter);
    let after_resume: Vec<i64> = recs.iter().filter(|r| r.1 >= resumed_at).map(|r| r.1).collect();
    let suspended_seen = cli_log_time(&stderr, "hold suspended");
    let lost_seen = cli_log_time(&stderr, "hold lost");
    let sigterm = cli_log_time(&stderr, "sending SIGTERM to CMD");
    let told = [suspended_seen, lost_seen].into_iter().flatten().filter(|t| *t >= resumed_at).min();
    let told_status = match (suspended_seen, lost_seen) {
        (Some(s), Some(l)) if s <= l => HoldStatus::Suspended,
        (Some(_), None) => HoldStatus::Suspended,
        _ => HoldStatus::Lost,
    };
    let cli_section =
        Section { who: "cli".to_owned(), enter, exit: last, token, abandoned: told.map(|t| (t, told_status)) };
    let cli_writes: Vec<Write> =
        recs.iter().filter(|r| r.0 != "exit").map(|r| Write { at: r.1, who: "cli".to_owned(), token: r.2 }).collect();
    let a = analyse(&run, std::slice::from_ref(&cli_section), &cli_writes);
    let rel = |t: Option<i64>| t.map_or("never".to_owned(), |t| format!("+{:.1} ms", (t - resumed_at) as f64 / 1000.0));
    println!(
        "  {name}: lock taken over {} after the SIGSTOP; CLI told {told_status:?} {} after the resume (suspended {}, lost {}, SIGTERM {}), exit {:?} at {}",
        taken_over.map_or("never".to_owned(), |t| format!("{:.0} ms", (t - frozen_at) as f64 / 1000.0)),
        rel(told),
        rel(suspended_seen),
        rel(lost_seen),
        rel(sigterm),
        status.code(),
        rel(Some(exited_at)),
    );
    println!(
        "  {name}: the frozen command's records after the resume: {} (first {}, last {}); all with token {token}, rejected by fencing: {} ({} made before zoolock was told)",
        after_resume.len(),
        rel(after_resume.first().copied()),
        rel(after_resume.last().copied()),
        a.stale_writes.iter().filter(|w| w.who == "cli").count(),
        a.untold_stale_writes.iter().filter(|w| w.who == "cli").count()
    );
    if status.code() != Some(70) {
        for line in stderr.lines().filter(|l| l.contains("WARN") || l.contains("zoolock:")) {
            println!("  {name}: cli: {line}");
        }
    }
    check_common(name, &run, &a);

    assert!(taken_over.is_some(), "{name}: no other client got the lock while the holder was frozen");
    assert_eq!(status.code(), Some(70), "{name}: the CLI must exit 70 (lock lost); stderr:\n{stderr}");
    assert!(told.is_some(), "{name}: the CLI never logged Suspended/Lost after the resume; stderr:\n{stderr}");
    assert!(!recs.iter().any(|r| r.0 == "exit"), "{name}: the frozen command ran to its end");
    // Every write the frozen holder made after the takeover carries its old
    // token, below the new holder's: a fencing resource rejects them all.
    let stale_cli = a.stale_writes.iter().filter(|w| w.who == "cli").count();
    assert_eq!(stale_cli, after_resume.len(), "{name}: a post-resume write of the frozen holder was not fenced off");
    assert!(
        a.stale_writes.iter().all(|w| w.who == "cli"),
        "{name}: stale writes by live holders: {:?}",
        a.stale_writes
    );
    assert_no_leak(&ens, name, &run.path, SESSION + Duration::from_secs(3)).await;
    let _ = std::fs::remove_dir_all(&scratch);
}

// ---- a paused in-process holder -----------------------------------------------------

/// What the paused holder saw.
#[derive(Debug)]
struct Paused {
    pub(crate) section: Section,
    pub(crate) paused_at: i64,
    pub(crate) resumed_at: i64,
    /// `guard.status()` on the first check after the pause, before yielding.
    pub(crate) first_status: HoldStatus,
    /// When `guard.lost()` completed after the pause, and with what.
    pub(crate) told: Option<(i64, HoldStatus)>,
}

/// How the paused holder decides whether it may still write.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
enum Check {
    /// `guard.status()` before the write after the pause.
    Status,
    /// Nothing but `guard.lost()`, raced (first) against a write every
    /// 10 ms: the loss signal alone must stop it, with no event-loop turn.
    LostOnly,
}

/// A holder whose whole process stops for longer than its session timeout:
/// its own thread and runtime, blocked (driver included) as a GC pause or a
/// SIGSTOP would. After the pause it writes if its check says it still holds.
fn paused_holder(run: Arc<Run>, held: std::sync::mpsc::Sender<()>, check: Check) -> Paused {
    let rt = tokio::runtime::Builder::new_current_thread().enable_all().build().unwrap();
    rt.block_on(async move {
        let options = Options::default().session_timeout(CLI_SESSION).seed(run.seed ^ 0x7a05e);
        let client = zoolock_tokio::connect(&run.connect, options).await.expect("paused holder connects");
        let lock = client.mutex(&run.path).await.expect("mutex");
        let guard = lock.acquire().await.expect("paused holder acquires");
        let token = guard.fencing_token().0;
        let enter = now_us();
        run.write("paused", token);
        held.send(()).unwrap();
        if check == Check::LostOnly {
            return lost_only_holder(run, client, guard, enter).await;
        }
        tokio::time::sleep(Duration::from_secs(1)).await;
        let paused_at = now_us();
        std::thread::sleep(FREEZE);
        let resumed_at = now_us();
        let first_status = guard.status();
        let mut exit = resumed_at;
        if first_status == HoldStatus::Held {
            run.write("paused", token);
            exit = now_us();
        }
        let told = match guard.status() {
            HoldStatus::Held => {
                tokio::time::timeout(Duration::from_secs(5), guard.lost()).await.ok().map(|s| (now_us(), s))
            }
            s => Some((resumed_at, s)),
        };
        let section = Section { who: "paused".to_owned(), enter, exit, token, abandoned: told };
        let paused = Paused { section, paused_at, resumed_at, first_status, told };
        close_paused(client, guard, paused).await
    })
}

/// Lets the paused holder's hold and session go.
async fn close_paused(client: Client, guard: Guard, paused: Paused) -> Paused {
    drop(guard);
    let _ = tokio::time::timeout(Duration::from_secs(2), client.close()).await;
    paused
}

/// The `LostOnly` holder: writes every 10 ms until `lost()` completes,
/// `lost()` polled first each time; the pause falls between two writes.
async fn lost_only_holder(run: Arc<Run>, client: Client, guard: Guard, enter: i64) -> Paused {
    let token = guard.fencing_token().0;
    let (mut paused_at, mut resumed_at, mut exit) = (0, 0, enter);
    let mut told = None;
    while now_us() < enter + 10_000_000 {
        tokio::select! {
            biased;
            s = guard.lost() => {
                told = Some((now_us(), s));
                break;
            }
            () = tokio::time::sleep(Duration::from_millis(10)) => {
                run.write("paused", token);
                exit = now_us();
                if paused_at == 0 && exit > enter + 1_000_000 {
                    paused_at = now_us();
                    std::thread::sleep(FREEZE);
                    resumed_at = now_us();
                }
            }
        }
    }
    let first_status = told.map_or(HoldStatus::Held, |(_, s)| s);
    let section = Section { who: "paused".to_owned(), enter, exit, token, abandoned: told };
    close_paused(client, guard, Paused { section, paused_at, resumed_at, first_status, told }).await
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn paused_in_process_holder() {
    paused_scenario("paused-in-process", Check::Status).await;
}

/// The holder checks nothing but `guard.lost()`: after the pause it must
/// stop before its next write, so it makes no write after the takeover.
#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn paused_holder_checks_only_lost() {
    paused_scenario("paused-lost-only", Check::LostOnly).await;
}

async fn paused_scenario(name: &'static str, check: Check) {
    let _serial = serial().await;
    let Some(ens) = ensemble(name) else { return };
    let run = new_run(&ens, name, Duration::from_secs(11));
    let (held_tx, held_rx) = std::sync::mpsc::channel();
    let victim = std::thread::spawn({
        let run = run.clone();
        move || paused_holder(run, held_tx, check)
    });
    blocking(move || held_rx.recv_timeout(Duration::from_secs(15)))
        .await
        .unwrap_or_else(|_| panic!("{name}: the paused holder did not get the lock"));
    let workers = spawn_workers(&run, CLIENTS - 1, SESSION);
    join(workers).await;
    let p = blocking(move || victim.join()).await.expect("paused holder panicked");
    let taken_over = run.log().sections.iter().filter(|s| s.enter > p.paused_at).map(|s| s.enter).min();
    let a = analyse(&run, std::slice::from_ref(&p.section), &[]);
    let rel = |t: i64| format!("+{:.1} ms", (t - p.resumed_at) as f64 / 1000.0);
    println!(
        "  {name}: paused {:.0} ms (session timeout {:?}); lock taken over {} after the pause began",
        (p.resumed_at - p.paused_at) as f64 / 1000.0,
        CLI_SESSION,
        taken_over.map_or("never".to_owned(), |t| format!("{:.0} ms", (t - p.paused_at) as f64 / 1000.0)),
    );
    println!(
        "  {name}: first guard.status() after the pause: {:?}; guard.lost() -> {:?}; stale writes rejected by fencing: {}",
        p.first_status,
        p.told.map(|(t, s)| format!("{s:?} {}", rel(t))),
        a.stale_writes.iter().filter(|w| w.who == "paused").count()
    );
    check_common(name, &run, &a);
    assert!(taken_over.is_some(), "{name}: no other client got the lock while the holder was paused");
    assert!(p.told.is_some_and(|(_, s)| s != HoldStatus::Held), "{name}: the paused holder was never told");
    assert!(
        a.stale_writes.iter().all(|w| w.who == "paused"),
        "{name}: stale writes by live holders: {:?}",
        a.stale_writes
    );
    if check == Check::LostOnly {
        let stale = a.stale_writes.iter().filter(|w| w.who == "paused").count();
        assert_eq!(stale, 0, "{name}: the holder wrote after its hold was taken over, though it stops on lost()");
    }
    // `status()` checks how long ago the server last confirmed the session,
    // so the first check after a pause longer than the session timeout must
    // not say Held, even before the event loop has run.
    assert_ne!(
        p.first_status,
        HoldStatus::Held,
        "{name}: guard.status() said Held on the first check after the pause, though the lock was taken over"
    );

    assert_no_leak(&ens, name, &run.path, SESSION + Duration::from_secs(3)).await;
}
