//! `holders PATH --watch` and `leader PATH --watch`: a line (or a JSON
//! object) at each change of holder, from the library's observer, which a
//! watch on the queue drives: nothing is sent between changes, and a change
//! costs one listing and the holder's data. Ends with exit 0 on Ctrl-C (or
//! SIGTERM, SIGHUP).

use std::io::Write;
use std::time::{Duration, SystemTime, UNIX_EPOCH};

use futures_lite::StreamExt;
use zoolock_tokio::Participant;

use crate::args::{Global, Kind};
use crate::exit::{self, Failure, Outcome};

/// One holder as a line shows it.
#[derive(Debug, Clone, PartialEq, Eq)]
struct Shown {
    /// The holder's node, full path.
    node: String,
    /// Its data (an election's participant id) as UTF-8, invalid bytes
    /// replaced.
    data: String,
    /// Its fencing token: the node's czxid.
    token: Option<i64>,
    /// How long it has held, as far as the watcher can tell: since the
    /// change that made it the holder, or, for the holder found at the
    /// start, since its node was made (by the server's clock).
    held_for: Duration,
}

impl Shown {
    /// `holder` as seen at `now` (wall clock, ms since the epoch); `first`
    /// when it was found by the first listing rather than by a change.
    fn of(holder: &Participant, first: bool, now_ms: i64) -> Shown {
        let stat = holder.stat.as_ref();
        let held_ms = match stat {
            Some(stat) if first => now_ms.saturating_sub(stat.ctime).max(0),
            _ => 0,
        };
        Shown {
            node: holder.path.clone(),
            data: String::from_utf8_lossy(holder.data.as_deref().unwrap_or_default()).into_owned(),
            token: stat.map(|s| s.czxid),
            held_for: Duration::from_millis(u64::try_from(held_ms).unwrap_or(0)),
        }
    }
}

/// The line for the holder now (`None`: nobody), as text or JSON. `election`
/// names the data `id` (an election's participant id), else `data`.
fn line(path: &str, holder: Option<&Shown>, election: bool, json: bool) -> String {
    let key = if election { "id" } else { "data" };
    match (holder, json) {
        (Some(h), true) => serde_json::json!({
            "path": path,
            key: h.data,
            "node": h.node,
            "token": h.token,
            "held_for_ms": u64::try_from(h.held_for.as_millis()).unwrap_or(u64::MAX),
        })
        .to_string(),
        (None, true) => {
            serde_json::json!({ "path": path, key: null, "node": null, "token": null, "held_for_ms": null }).to_string()
        }
        (Some(h), false) => {
            let token = h.token.map_or_else(|| "-".to_owned(), |t| t.to_string());
            let held = humantime::format_duration(h.held_for);
            let who = if h.data.is_empty() { "-".to_owned() } else { h.data.escape_debug().to_string() };
            format!("{key}={who} node={} token={token} held_for={held}", h.node)
        }
        (None, false) => format!("{key}=- node=- token=- held_for=-"),
    }
}

fn now_ms() -> i64 {
    SystemTime::now().duration_since(UNIX_EPOCH).map_or(0, |d| i64::try_from(d.as_millis()).unwrap_or(i64::MAX))
}

/// Prints PATH's holder now and at each change, until a signal (exit 0) or
/// the session's end (exit 69). The layout is `kind`, checked against
/// PATH's nodes, or recognised from them as `holders` does (one listing at
/// the start; a PATH with no nodes needs a kind: exit 1). A failed listing
/// is reported on stderr and the watch goes on (the observer lists again on
/// the next change or session).
pub(super) async fn run(global: &Global, path: &str, kind: Option<Kind>, json: bool) -> Outcome {
    let mut signals =
        crate::signals::install().map_err(|e| Failure::new(exit::FAILURE, format!("cannot handle signals: {e}")))?;
    let client = tokio::select! {
        client = super::connect(global, None) => client?,
        Some(_) = signals.recv() => return Ok(0),
    };
    let kind = match super::holders::resolve(&client, path, kind).await {
        Ok(Some(kind)) => Ok(kind.lock_kind()),
        Ok(None) => Err(Failure::new(exit::FAILURE, format!("{path} has no nodes to tell its layout by: say --kind"))),
        Err(failure) => Err(failure),
    };
    let kind = match kind {
        Ok(kind) => kind,
        Err(failure) => {
            super::close(&client, Duration::from_secs(2)).await;
            return Err(failure);
        }
    };
    let mut changes = match client.observe(path, kind).await {
        Ok(changes) => changes,
        Err(e) => {
            super::close(&client, Duration::from_secs(2)).await;
            return Err(super::request_failed(&format!("cannot watch {path}"), &e));
        }
    };
    let election = kind.election().is_some();
    let mut first = true;
    let mut last: Option<Option<String>> = None;
    let ended = loop {
        let item = tokio::select! {
            item = changes.next() => item,
            Some(_) = signals.recv() => break Ok(0),
        };
        let holder = match item {
            Some(Ok(holder)) => holder,
            Some(Err(e)) => {
                eprintln!("zoolock: watching {path}: {e}");
                continue;
            }
            None => break Err(Failure::new(exit::UNAVAILABLE, format!("watching {path}: the session ended"))),
        };
        // The observer reports changes only; a renewed session's first
        // listing may repeat the holder, which is no change.
        let node = holder.as_ref().map(|h| h.path.clone());
        if last.as_ref() == Some(&node) {
            continue;
        }
        last = Some(node);
        let shown = holder.as_ref().map(|h| Shown::of(h, first, now_ms()));
        first = false;
        let mut out = std::io::stdout().lock();
        if writeln!(out, "{}", line(path, shown.as_ref(), election, json)).and_then(|()| out.flush()).is_err() {
            // Nobody reads any more (a closed pipe): done.
            break Ok(0);
        }
    };
    drop(changes);
    super::close(&client, Duration::from_secs(2)).await;
    ended
}

#[cfg(test)]
mod tests {
    use super::*;

    fn shown(data: &str) -> Shown {
        Shown {
            node: "/p/_c_1-lock-0000000003".into(),
            data: data.into(),
            token: Some(42),
            held_for: Duration::from_millis(1500),
        }
    }

    #[test]
    fn lines_carry_the_holder_node_token_and_time_held() {
        assert_eq!(
            line("/p", Some(&shown("web 1")), false, false),
            "data=web 1 node=/p/_c_1-lock-0000000003 token=42 held_for=1s 500ms"
        );
        assert_eq!(
            line("/p", Some(&shown("")), true, false),
            "id=- node=/p/_c_1-lock-0000000003 token=42 held_for=1s 500ms"
        );
        assert_eq!(line("/p", None, true, false), "id=- node=- token=- held_for=-");
        let json: serde_json::Value = serde_json::from_str(&line("/p", Some(&shown("w")), true, true)).unwrap();
        assert_eq!(
            json,
            serde_json::json!({"path": "/p", "id": "w", "node": "/p/_c_1-lock-0000000003", "token": 42, "held_for_ms": 1500})
        );
        let json: serde_json::Value = serde_json::from_str(&line("/p", None, false, true)).unwrap();
        assert_eq!(json["data"], serde_json::Value::Null);
    }
}
