//! `zoolock leader PATH`: the current leader's id, or with `--json` every
//! participant of the election; and the default participant id of `elect`.

use std::io::Write;
use std::time::Duration;

use zoolock_tokio::ElectionKind;

use crate::args::Global;
use crate::exit::{self, Failure, Outcome};

/// `HOSTNAME:PID`: the participant id `zoolock elect` uses without `--id`.
pub(super) fn default_id() -> String {
    let host = std::fs::read_to_string("/proc/sys/kernel/hostname")
        .ok()
        .map(|h| h.trim().to_owned())
        .filter(|h| !h.is_empty())
        .unwrap_or_else(|| "localhost".to_owned());
    format!("{host}:{}", std::process::id())
}

/// Prints the leader's id (exit 1 when nobody leads), or with `json` one
/// array of `{"id", "leader", "node"}` in queue order (exit 0 even if empty).
pub(super) async fn run(global: &Global, path: &str, election: ElectionKind, json: bool) -> Outcome {
    let client = super::connect(global, None).await?;
    let list = client.election(path, election).await;
    super::close(&client, Duration::from_secs(2)).await;
    let list = list.map_err(|e| super::request_failed(&format!("cannot list {path}"), &e))?;
    let mut out = std::io::stdout().lock();
    if json {
        let participants: Vec<_> =
            list.iter().map(|p| serde_json::json!({ "id": p.id, "leader": p.is_leader, "node": p.node })).collect();
        let _ = writeln!(out, "{}", serde_json::Value::from(participants));
        let _ = out.flush();
        return Ok(0);
    }
    match list.iter().find(|p| p.is_leader) {
        Some(leader) => {
            let _ = writeln!(out, "{}", leader.id);
            let _ = out.flush();
            Ok(0)
        }
        None => Err(Failure::new(exit::FAILURE, format!("{path} has no leader"))),
    }
}
