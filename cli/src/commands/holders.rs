//! `zoolock holders PATH`: the participants in queue order, holder first.

use std::io::Write;
use std::time::Duration;

use crate::args::{Global, Kind};
use crate::exit::Outcome;

/// Prints `INDEX NODE DATA` per participant (DATA left out when empty), or
/// with `json` one JSON array of `{"index", "node", "data"}` objects. A node
/// that vanished between listing and reading is no longer a participant and
/// is skipped.
pub(super) async fn run(global: &Global, path: &str, kind: Kind, json: bool) -> Outcome {
    let client = super::connect(global, None).await?;
    let list = client.participants(path, super::participants_of(kind)).await;
    super::close(&client, Duration::from_secs(2)).await;
    let list = list.map_err(|e| super::request_failed(&format!("cannot list {path}"), &e))?;
    let participants = list.iter().filter_map(|p| Some((p.path.as_str(), String::from_utf8_lossy(p.data.as_ref()?))));
    let mut out = std::io::stdout().lock();
    if json {
        let array: Vec<_> = participants
            .enumerate()
            .map(|(index, (node, data))| serde_json::json!({ "index": index, "node": node, "data": data }))
            .collect();
        let _ = writeln!(out, "{}", serde_json::Value::Array(array));
    } else {
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
