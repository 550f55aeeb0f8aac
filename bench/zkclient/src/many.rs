//! Many locks on one session (issue 29), as `zoolock bench` runs them
//! (`cli/src/commands/bench/many.rs`): the same steps, JSON keys, RSS
//! (`VmRSS`) and CPU (`/proc/self/stat`) readings.
//!
//! `held`: N tasks, each acquiring its own lock `<base>/l<i>` (the parent
//! made on demand as a container, as Curator and zoolock do), all held at
//! once, then each deleting its node and awaiting the reply. zookeeper-client
//! has no lock handle apart from the acquire, so there is no idle figure.
//!
//! `tasks`: K tasks each cycling its own lock `<base>/t<k>` until N cycles in all.

use std::sync::Arc;
use std::sync::atomic::{AtomicU64, Ordering};
use std::time::{Duration, Instant};

use tokio::sync::{Notify, watch};
use zookeeper_client::{Acls, Client, CreateMode, LockClient, LockOptions, LockPrefix};
use zoolock_bench::Timing;

use crate::{Args, BoxError, NODE_DATA, Release, Workload, give_back};

/// Runs `held` or `tasks` under `base`; returns the report line.
pub(crate) async fn run(args: &Args, base: &str) -> Result<String, BoxError> {
    let client =
        Arc::new(Client::connector().with_session_timeout(Duration::from_secs(10)).connect(&args.connect).await?);
    client.mkdir(base, &CreateMode::Persistent.with_acls(Acls::anyone_all())).await?;
    let (dirs, outcome) = match args.workload {
        Workload::Held => {
            let dirs: Vec<String> = (0..args.locks).map(|i| format!("{base}/l{i}")).collect();
            let outcome = held(&client, &dirs, args).await;
            (dirs, outcome)
        }
        _ => {
            let dirs: Vec<String> = (0..args.tasks).map(|k| format!("{base}/t{k}")).collect();
            let outcome = tasks(&client, &dirs, args).await;
            (dirs, outcome)
        }
    };
    let leftovers = match &outcome {
        Ok(_) => count_and_remove(&client, &dirs).await,
        Err(_) => {
            let _ = count_and_remove(&client, &dirs).await;
            Ok(0)
        }
    };
    // Best effort, whatever happened.
    let _ = client.delete(base, None).await;
    let _ = client.delete("/zoolock-bench", None).await;
    let members = outcome?;
    let leftovers = leftovers?;
    if leftovers > 0 {
        return Err(format!("{leftovers} leftover nodes").into());
    }
    Ok(if args.json {
        format!(
            "{{\"impl\":\"zookeeper-client\",\"workload\":\"{}\",\"release\":\"{}\",\"clients\":1,{members},\
             \"leftover_nodes\":0}}",
            args.workload.name(),
            args.release.name(),
        )
    } else {
        format!("zookeeper-client {}, release {}: {members}", args.workload.name(), args.release.name())
    })
}

/// `held`: every lock acquired by its own task, all held, then all released.
async fn held(client: &Arc<Client>, dirs: &[String], args: &Args) -> Result<String, BoxError> {
    let n = args.locks;
    let rss_before = rss_kib();
    let cpu_start = cpu_secs();
    let acquired = Arc::new((AtomicU64::new(0), Notify::new()));
    let (let_go, go) = watch::channel(false);
    let start = Instant::now();
    let mut set = tokio::task::JoinSet::new();
    for dir in dirs {
        let (client, dir, acquired, mut go, release) =
            (client.clone(), dir.clone(), acquired.clone(), go.clone(), args.release);
        set.spawn(async move {
            let asked = Instant::now();
            let lock = acquire_in(&client, &dir).await;
            let wait = asked.elapsed();
            if acquired.0.fetch_add(1, Ordering::AcqRel) + 1 == n {
                acquired.1.notify_one();
            }
            let lock = lock?;
            let _ = go.wait_for(|v| *v).await;
            give_back(&client, lock, release).await?;
            Ok::<_, BoxError>(wait)
        });
    }
    drop(go);
    acquired.1.notified().await;
    let acquire = start.elapsed();
    let rss_held = rss_kib();
    let cpu_held = cpu_secs();
    let release_start = Instant::now();
    let _ = let_go.send(true);
    let mut waits = join_all(&mut set).await?;
    let release_time = release_start.elapsed();
    let cpu_end = cpu_secs();
    let timing = Timing::new(&mut waits, acquire);
    Ok(format!(
        "\"locks\":{n},{},\"acquire_s\":{:.6},\"release_s\":{:.6},\"locks_per_sec\":{:.3},\
         \"rss_before_kib\":{rss_before},\"rss_held_kib\":{rss_held},\"bytes_per_lock\":{:.1},\
         \"cpu_acquire_s\":{:.2},\"cpu_release_s\":{:.2},\"cpu_s\":{:.2}",
        timing.json_members(),
        acquire.as_secs_f64(),
        release_time.as_secs_f64(),
        n as f64 / acquire.as_secs_f64().max(1e-9),
        rss_held.saturating_sub(rss_before) as f64 * 1024.0 / n.max(1) as f64,
        cpu_held - cpu_start,
        cpu_end - cpu_held,
        cpu_end - cpu_start,
    ))
}

/// `tasks`: one task per lock, each cycling until `--cycles` in all.
async fn tasks(client: &Arc<Client>, dirs: &[String], args: &Args) -> Result<String, BoxError> {
    let claimed = Arc::new(AtomicU64::new(0));
    cycle_all(client, dirs, &claimed, args.warmup.max(args.tasks), args.release).await?;
    claimed.store(0, Ordering::Relaxed);
    let cpu_start = cpu_secs();
    let start = Instant::now();
    let mut lat = cycle_all(client, dirs, &claimed, args.cycles, args.release).await?;
    let elapsed = start.elapsed();
    let cpu = cpu_secs() - cpu_start;
    let timing = Timing::new(&mut lat, elapsed);
    Ok(format!(
        "\"tasks\":{},{},\"cpu_s\":{cpu:.2},\"cpu_us_per_cycle\":{:.1}",
        args.tasks,
        timing.json_members(),
        cpu * 1e6 / args.cycles as f64
    ))
}

async fn cycle_all(
    client: &Arc<Client>,
    dirs: &[String],
    claimed: &Arc<AtomicU64>,
    total: u64,
    release: Release,
) -> Result<Vec<Duration>, BoxError> {
    let mut set = tokio::task::JoinSet::new();
    for dir in dirs {
        let (client, dir, claimed) = (client.clone(), dir.clone(), claimed.clone());
        set.spawn(async move {
            let mut lat = Vec::new();
            while claimed.fetch_add(1, Ordering::Relaxed) < total {
                let t = Instant::now();
                let lock = acquire_in(&client, &dir).await?;
                give_back(&client, lock, release).await?;
                lat.push(t.elapsed());
            }
            Ok::<_, BoxError>(lat)
        });
    }
    let mut all = Vec::new();
    let mut first_error = None;
    while let Some(joined) = set.join_next().await {
        match joined {
            Ok(Ok(lat)) => all.extend(lat),
            Ok(Err(e)) => {
                claimed.store(u64::MAX / 2, Ordering::Relaxed);
                first_error.get_or_insert(e);
            }
            Err(join) => return Err(join.into()),
        }
    }
    first_error.map_or(Ok(all), Err)
}

/// Each task's result, or the first error once all have finished.
async fn join_all(set: &mut tokio::task::JoinSet<Result<Duration, BoxError>>) -> Result<Vec<Duration>, BoxError> {
    let mut all = Vec::new();
    let mut first_error = None;
    while let Some(joined) = set.join_next().await {
        match joined {
            Ok(Ok(d)) => all.push(d),
            Ok(Err(e)) => {
                first_error.get_or_insert(e);
            }
            Err(join) => return Err(join.into()),
        }
    }
    first_error.map_or(Ok(all), Err)
}

/// The Curator-named lock in `dir`, made on demand (a container).
async fn acquire_in<'a>(client: &'a Client, dir: &str) -> Result<LockClient<'a>, BoxError> {
    let prefix = LockPrefix::new_curator(dir, "lock-")?;
    let options = LockOptions::new(Acls::anyone_all())
        .with_ancestor_options(CreateMode::Container.with_acls(Acls::anyone_all()))?;
    Ok(client.lock(prefix, NODE_DATA, options).await?)
}

/// Lock nodes left in `dirs` (after up to 5 s for background deletes), then
/// deletes the dirs; concurrently, 256 requests in flight at most.
async fn count_and_remove(client: &Arc<Client>, dirs: &[String]) -> Result<u64, BoxError> {
    let mut left = 0;
    for chunk in dirs.chunks(256) {
        let mut set = tokio::task::JoinSet::new();
        for dir in chunk {
            let (client, dir) = (client.clone(), dir.clone());
            set.spawn(async move {
                let deadline = Instant::now() + Duration::from_secs(5);
                let n = loop {
                    let n = match client.list_children(&dir).await {
                        Ok(c) => c.len(),
                        Err(zookeeper_client::Error::NoNode) => 0,
                        Err(e) => return Err(BoxError::from(e)),
                    };
                    if n == 0 || Instant::now() >= deadline {
                        break n;
                    }
                    tokio::time::sleep(Duration::from_millis(20)).await;
                };
                let _ = client.delete(&dir, None).await;
                Ok(n as u64)
            });
        }
        while let Some(joined) = set.join_next().await {
            left += joined??;
        }
    }
    Ok(left)
}

/// This process's resident set now (`VmRSS`), in KiB; 0 when unknown.
fn rss_kib() -> u64 {
    let status = std::fs::read_to_string("/proc/self/status").unwrap_or_default();
    status
        .lines()
        .find_map(|l| l.strip_prefix("VmRSS:"))
        .and_then(|v| v.split_whitespace().next()?.parse().ok())
        .unwrap_or(0)
}

/// CPU time (user + system, every thread) of this process in seconds, from
/// `/proc/self/stat` (ticks of 1/100 s, Linux's `USER_HZ`); 0 when unknown.
fn cpu_secs() -> f64 {
    let stat = std::fs::read_to_string("/proc/self/stat").unwrap_or_default();
    let rest = stat.rsplit_once(')').map_or("", |(_, r)| r);
    let mut fields = rest.split_whitespace().skip(11);
    let ticks = |f: Option<&str>| f.and_then(|v| v.parse::<u64>().ok()).unwrap_or(0);
    let (utime, stime) = (ticks(fields.next()), ticks(fields.next()));
    (utime + stime) as f64 / 100.0
}
