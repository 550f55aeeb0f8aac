//! `zoolock holders PATH`: the participants in queue order, holder first.

use std::io::Write;
use std::time::Duration;

use crate::args::{Global, HoldersSize, Kind};
use crate::exit::{self, Failure, Outcome};

/// Prints `INDEX NODE DATA` per participant (DATA left out when empty), or
/// with `json` one JSON array of `{"index", "node", "data"}` objects. A node
/// that vanished between listing and reading is no longer a participant and
/// is skipped. Given a semaphore's size, `size N remaining M` comes first
/// (JSON: `{"size", "remaining", "holders": [...]}`); remaining counts every
/// lease node, waiting ones included, as the semaphore does.
pub(super) async fn run(global: &Global, path: &str, kind: Kind, size: HoldersSize, json: bool) -> Outcome {
    if kind != Kind::Semaphore && (size.leases.is_some() || size.leases_from.is_some()) {
        return Err(Failure::new(exit::USAGE, "--leases and --leases-from need --kind semaphore"));
    }
    let client = super::connect(global, None).await?;
    let list = client.participants(path, super::participants_of(kind)).await;
    let size = match (size.leases, &size.leases_from) {
        (Some(n), _) => Ok(Some(i64::from(n))),
        (None, Some(count)) => super::count::get(&client, count).await.map(|n| Some(i64::from(n))),
        (None, None) => Ok(None),
    };
    super::close(&client, Duration::from_secs(2)).await;
    let list = list.map_err(|e| super::request_failed(&format!("cannot list {path}"), &e))?;
    let size = size?;
    let remaining = size.map(|n| (n - list.len() as i64).max(0));
    let participants = list.iter().filter_map(|p| Some((p.path.as_str(), String::from_utf8_lossy(p.data.as_ref()?))));
    let mut out = std::io::stdout().lock();
    if json {
        let array: Vec<_> = participants
            .enumerate()
            .map(|(index, (node, data))| serde_json::json!({ "index": index, "node": node, "data": data }))
            .collect();
        let value = match (size, remaining) {
            (Some(size), Some(remaining)) => {
                serde_json::json!({ "size": size, "remaining": remaining, "holders": array })
            }
            _ => serde_json::Value::Array(array),
        };
        let _ = writeln!(out, "{value}");
    } else {
        if let (Some(size), Some(remaining)) = (size, remaining) {
            let _ = writeln!(out, "size {size} remaining {remaining}");
        }
        for (index, (node, data)) in participants.enumerate() {
            let line = if data.is_empty() {
                format!("{index} {node}")
            } else {
                format!("{index} {node} {}", data.escape_debug())
            };
            if writeln!(out, "{line}").is_err() {
                break;
            }
        }
    }
    let _ = out.flush();
    Ok(0)
}
