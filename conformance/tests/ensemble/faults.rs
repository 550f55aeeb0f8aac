//! Server faults: a killed leader or follower, a frozen server, and the
//! loss of quorum.

use std::time::Duration;

use crate::harness::{Ensemble, now_us};
use crate::oracle::{analyse, assert_every_client_cycles, assert_no_leak, check_common};
use crate::workload::{at, blocking, join, new_run, on_server, placement, sections_after, spawn_workers};
use crate::{CLIENTS, FREEZE, SESSION, ensemble, serial};

#[derive(Debug, Clone, Copy, PartialEq, Eq)]
enum ServerFault {
    KillLeader,
    KillFollower,
    PauseBusiest,
}

async fn server_fault(name: &str, fault: ServerFault) {
    let Some(ens) = ensemble(name) else { return };
    let run_for = match fault {
        ServerFault::PauseBusiest => Duration::from_secs(12),
        _ => Duration::from_secs(10),
    };
    let run = new_run(&ens, name, run_for);
    let workers = spawn_workers(&run, CLIENTS, SESSION);
    at(&run, Duration::from_secs(2)).await;
    // Pick the target (four-letter words and the script block: off the workers).
    let (servers, on_busiest, target, mode) = blocking({
        let (ens, run) = (ens.clone(), run.clone());
        move || {
            let (servers, busiest, on_busiest) = placement(&ens, &run);
            let target = match fault {
                ServerFault::KillLeader => ens.leader(),
                ServerFault::KillFollower => {
                    let leader = ens.leader();
                    let on = |n: usize| servers.iter().filter(|s| **s == Some(n)).count();
                    (1..=3).filter(|&n| n != leader).max_by_key(|&n| on(n)).unwrap_or(1)
                }
                ServerFault::PauseBusiest => busiest,
            };
            let mode = ens.mode(target);
            (servers, on_busiest, target, mode)
        }
    })
    .await;
    let clients_on_target = servers.iter().filter(|s| **s == Some(target)).count();
    let fault_at = now_us();
    let recovered_at = match fault {
        ServerFault::KillLeader | ServerFault::KillFollower => {
            on_server(&ens, Ensemble::kill, target).await;
            println!(
                "  {name}: SIGKILL server {target} ({mode}, {clients_on_target} of our clients; placement {servers:?}) at {:.1} ms",
                run.ms(fault_at)
            );
            at(&run, Duration::from_secs(6)).await;
            on_server(&ens, Ensemble::restart, target).await;
            println!("  {name}: server {target} restarted, serving again at {:.1} ms", run.ms(now_us()));
            fault_at
        }
        ServerFault::PauseBusiest => {
            on_server(&ens, Ensemble::freeze, target).await;
            println!(
                "  {name}: SIGSTOP server {target} ({mode}, busiest: {on_busiest} of our clients; placement {servers:?}) at {:.1} ms",
                run.ms(fault_at)
            );
            at(&run, Duration::from_secs(2) + FREEZE).await;
            on_server(&ens, Ensemble::thaw, target).await;
            let thawed = now_us();
            println!("  {name}: SIGCONT server {target} at {:.1} ms", run.ms(thawed));
            thawed
        }
    };
    join(workers).await;
    let a = analyse(&run, &[], &[]);
    check_common(name, &run, &a);
    let after = sections_after(&run, fault_at);
    println!(
        "  {name}: {after} critical sections after the fault; {} after recovery",
        sections_after(&run, recovered_at)
    );
    assert!(after > 0, "{name}: the lock never moved again after the fault");
    assert!(a.stale_writes.is_empty(), "{name}: stale writes: {:?}", a.stale_writes);
    // Sessions on a server that died or froze must move to another server
    // within the session (Reconnected), not be lost.
    let reconnected = a.transitions.get("Reconnected").copied().unwrap_or(0);
    if clients_on_target > 0 {
        assert!(
            reconnected >= clients_on_target,
            "{name}: {clients_on_target} clients were on server {target} but only {reconnected} reconnected"
        );
    }
    // Session renewal is on (the default): each worker keeps one client and
    // one lock handle through the fault, with no code of its own for it.
    assert_every_client_cycles(name, &run, CLIENTS, recovered_at);
    assert_no_leak(&ens, name, &run.path, SESSION + Duration::from_secs(3)).await;
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn kill_leader() {
    let _serial = serial().await;
    server_fault("kill-leader", ServerFault::KillLeader).await;
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn kill_follower() {
    let _serial = serial().await;
    server_fault("kill-follower", ServerFault::KillFollower).await;
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn pause_busiest_server() {
    let _serial = serial().await;
    server_fault("pause-busiest", ServerFault::PauseBusiest).await;
}
