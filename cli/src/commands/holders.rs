//! `zoolock holders PATH`: the participants in queue order, holder first,
//! and the queue reading the waiting commands share ("held by DATA").

use std::io::Write;
use std::time::Duration;

use zoolock_tokio::sans_io::recipes::policy::{self, PositionRule};
use zoolock_tokio::sans_io::recipes::{Recognised, recognise};
use zoolock_tokio::{Client, Error};

use crate::args::{Global, HoldersSize, Kind};
use crate::exit::{self, Failure, Outcome};

/// One participant as `holders` and the waiting line show it.
#[derive(Debug, Clone, PartialEq, Eq)]
pub(super) struct Entry {
    /// The node's full path.
    pub(super) node: String,
    /// Its data as UTF-8 (invalid bytes replaced); empty when it has none.
    pub(super) data: String,
    /// Whether the recipe's rule says this node holds the lock now.
    pub(super) holding: bool,
}

/// Lists PATH's participants in queue order, each marked holding or not by
/// the recipe's own rule (core's [`policy::holding`]). `leases` is a
/// semaphore's size; unknown, every lease node counts as holding. A node
/// that vanished between listing and reading is skipped.
///
/// # Errors
///
/// The listing's failure (connection, ACL, a bad path).
pub(super) async fn list(client: &Client, path: &str, kind: Kind, leases: Option<usize>) -> Result<Vec<Entry>, Error> {
    let list = client.participants(path, kind.lock_kind()).await?;
    let list: Vec<_> = list.into_iter().filter_map(|p| Some((p.path, p.data?))).collect();
    let names: Vec<&str> = list.iter().map(|(node, _)| node.rsplit('/').next().unwrap_or(node)).collect();
    let holding = policy::holding(&names, rule(kind, leases));
    Ok(list
        .iter()
        .zip(holding)
        .map(|((node, data), holding)| Entry {
            node: node.clone(),
            data: String::from_utf8_lossy(data).into_owned(),
            holding,
        })
        .collect())
}

/// Who holds PATH now, read cheaply for a waiting line: one listing of the
/// lock path without data, sorted and judged as [`list`] does, then the data
/// of the holders alone (one read for a mutex), so a waiter costs the same
/// however long the queue. `None` when nobody holds (or PATH is gone).
///
/// # Errors
///
/// The listing's failure (connection, ACL, a bad path).
pub(super) async fn holder(
    client: &Client,
    path: &str,
    kind: Kind,
    leases: Option<usize>,
) -> Result<Option<String>, Error> {
    use zoolock_tokio::sans_io::{RequestError, ZkPath, gzip, wire::ErrorCode};

    let Some(layout) = kind.lock_kind().layout() else { return Ok(None) };
    let base = layout.queue(&ZkPath::new(path)?)?.as_str().to_owned();
    let key = layout.sort_key();
    let mut names = match client.get_children(&base).await {
        Ok((names, _)) => names,
        Err(Error::Request(RequestError::Server(code))) if code == ErrorCode::NO_NODE => return Ok(None),
        Err(e) => return Err(e),
    };
    key.sort(&mut names);
    let holding = policy::holding(&names, rule(kind, leases));
    let mut holders = Vec::new();
    for name in names.iter().zip(holding).filter_map(|(name, holding)| holding.then_some(name)) {
        let data = match client.get_data(&format!("{base}/{name}")).await {
            Ok((data, _)) => data,
            // Gone since the listing: no longer a holder.
            Err(Error::Request(RequestError::Server(code))) if code == ErrorCode::NO_NODE => continue,
            Err(e) => return Err(e),
        };
        let data =
            gzip::decode(&data, gzip::MAX_DECOMPRESSED).map(|d| d.into_owned()).unwrap_or_else(|_| data.to_vec());
        holders.push(Entry {
            node: format!("{base}/{name}"),
            data: String::from_utf8_lossy(&data).into_owned(),
            holding: true,
        });
    }
    Ok(held_by(&holders))
}

/// The holding rule of a kind (a semaphore of unknown size: every lease).
fn rule(kind: Kind, leases: Option<usize>) -> PositionRule {
    kind.lock_kind().layout().map_or(PositionRule::Standard(1), |layout| layout.holding_rule(leases))
}

/// Who holds, for a message: each holder's data (its node name when it has
/// none), joined with ", "; `None` when nobody does.
pub(super) fn held_by(entries: &[Entry]) -> Option<String> {
    let holders: Vec<&str> = entries
        .iter()
        .filter(|e| e.holding)
        .map(|e| if e.data.is_empty() { e.node.rsplit('/').next().unwrap_or(&e.node) } else { &e.data })
        .collect();
    (!holders.is_empty()).then(|| holders.join(", "))
}

/// The kind PATH is read as: `kind` if the nodes admit it, else the one
/// layout its children show (core's [`recognise`]). `Ok(None)` when PATH
/// has no children and no kind was given (nothing to list, no layout).
///
/// # Errors
///
/// Exit 1 when the nodes contradict `kind`, or, without `kind`, when they
/// show several layouts or none; the listing's failure.
pub(super) async fn resolve(client: &Client, path: &str, kind: Option<Kind>) -> Result<Option<Kind>, Failure> {
    use zoolock_tokio::sans_io::{RequestError, wire::ErrorCode};

    // A lost connection is retried, as the recipe listings are: the session
    // reconnects (or ends, with the cause the user must see: a server that
    // misbehaves on every connection, an expired session). Bounded all the
    // same, so nothing loops forever.
    let mut attempts = 0;
    let children = loop {
        match client.get_children(path).await {
            Ok((children, _)) => break children,
            Err(Error::Request(RequestError::Server(code))) if code == ErrorCode::NO_NODE => break Vec::new(),
            Err(Error::Request(RequestError::ConnectionLoss)) if attempts < 100 => attempts += 1,
            Err(e) => return Err(super::request_failed(&format!("cannot list {path}"), &e)),
        }
    };
    let seen = recognise(&children);
    let shows = |seen: &Recognised| match seen {
        Recognised::One(layout) => layout.names().to_owned(),
        Recognised::Mixed(layouts) => layouts.iter().map(|l| l.names()).collect::<Vec<_>>().join(" and "),
        _ => "no recipe's nodes".to_owned(),
    };
    match (kind, &seen) {
        (Some(kind), seen) if seen.admits(kind.lock_kind()) => Ok(Some(kind)),
        (Some(kind), seen) => {
            let found = match seen {
                Recognised::One(layout) => Kind::of(layout.kind()).map(|k| format!(" (try --kind {})", k.name())),
                _ => None,
            };
            Err(Failure::new(
                exit::FAILURE,
                format!(
                    "{path} has {}, not the layout of --kind {}{}",
                    shows(seen),
                    kind.name(),
                    found.unwrap_or_default()
                ),
            ))
        }
        (None, Recognised::Empty) => Ok(None),
        (None, Recognised::One(layout)) => Ok(Kind::of(layout.kind())),
        (None, seen) => Err(Failure::new(
            exit::FAILURE,
            format!("cannot tell the layout of {path}: it has {} (say --kind)", shows(seen)),
        )),
    }
}

/// Prints `INDEX holding|waiting NODE DATA` per participant (DATA left out
/// when empty), or with `json` one object for every kind:
/// `{"path", "kind", "participants": [{"node", "data", "holding"}]}` (a
/// semaphore given its size also has `"size"` and `"remaining"`; `kind` is
/// `null` when PATH has no nodes and no `--kind` was given). Without `kind`,
/// the kind is recognised from PATH's node names ([`resolve`]); a `kind` the
/// nodes contradict is refused. Given a semaphore's size, the text starts
/// with `size N remaining M`; remaining counts every lease node, waiting
/// ones included, as the semaphore does.
pub(super) async fn run(global: &Global, path: &str, kind: Option<Kind>, size: HoldersSize, json: bool) -> Outcome {
    let sized = size.leases.is_some() || size.leases_from.is_some();
    if sized && kind.is_some_and(|k| k != Kind::Semaphore) {
        return Err(Failure::new(exit::USAGE, "--leases and --leases-from need --kind semaphore"));
    }
    let client = super::connect(global, None).await?;
    let outcome = list_resolved(&client, path, kind, &size).await;
    super::close(&client, Duration::from_secs(2)).await;
    let (kind, list, size) = outcome?;
    let remaining = size.map(|n| (n - list.len() as i64).max(0));
    let mut out = std::io::stdout().lock();
    if json {
        let election = kind.is_some_and(|k| k.lock_kind().election().is_some());
        let participants: Vec<_> = list
            .iter()
            .map(|e| {
                let mut p = serde_json::json!({ "node": e.node, "data": e.data, "holding": e.holding });
                if election {
                    // An election's node data is the participant id.
                    p["id"] = e.data.clone().into();
                }
                p
            })
            .collect();
        let label = kind.map(|k| k.lock_kind().label());
        let mut value = serde_json::json!({ "path": path, "kind": label, "participants": participants });
        if let (Some(size), Some(remaining)) = (size, remaining) {
            value["size"] = size.into();
            value["remaining"] = remaining.into();
        }
        let _ = writeln!(out, "{value}");
    } else {
        if let (Some(size), Some(remaining)) = (size, remaining) {
            let _ = writeln!(out, "size {size} remaining {remaining}");
        }
        for (index, e) in list.iter().enumerate() {
            if writeln!(out, "{}", text_line(index, e)).is_err() {
                break;
            }
        }
    }
    let _ = out.flush();
    Ok(0)
}

/// The kind, the participants and the semaphore's size (if given) of PATH.
async fn list_resolved(
    client: &Client,
    path: &str,
    kind: Option<Kind>,
    size: &HoldersSize,
) -> Result<(Option<Kind>, Vec<Entry>, Option<i64>), Failure> {
    let kind = resolve(client, path, kind).await?;
    let sized = size.leases.is_some() || size.leases_from.is_some();
    if sized && kind.is_some_and(|k| k != Kind::Semaphore) {
        return Err(Failure::new(
            exit::USAGE,
            format!("--leases and --leases-from need a semaphore; {path} is not one"),
        ));
    }
    let size = match (size.leases, &size.leases_from) {
        (Some(n), _) => Some(i64::from(n)),
        (None, Some(count)) => Some(i64::from(super::count::get(client, count).await?)),
        (None, None) => None,
    };
    let Some(kind) = kind else { return Ok((None, Vec::new(), size)) };
    let leases = size.map(|n| usize::try_from(n.max(0)).unwrap_or(usize::MAX));
    let list = list(client, path, kind, leases)
        .await
        .map_err(|e| super::request_failed(&format!("cannot list {path}"), &e))?;
    Ok((Some(kind), list, size))
}

/// One participant as text: `INDEX holding|waiting NODE DATA`.
fn text_line(index: usize, e: &Entry) -> String {
    let state = if e.holding { "holding" } else { "waiting" };
    if e.data.is_empty() {
        format!("{index} {state} {}", e.node)
    } else {
        format!("{index} {state} {} {}", e.node, e.data.escape_debug())
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn entry(node: &str, data: &str, holding: bool) -> Entry {
        Entry { node: node.to_owned(), data: data.to_owned(), holding }
    }

    #[test]
    fn held_by_names_the_holders_data_or_node() {
        assert_eq!(
            held_by(&[entry("/p/a-lock-1", "host-a", true), entry("/p/b-lock-2", "host-b", false)]).as_deref(),
            Some("host-a")
        );
        assert_eq!(
            held_by(&[entry("/p/a-lock-1", "", true), entry("/p/b", "x", true)]).as_deref(),
            Some("a-lock-1, x")
        );
        assert_eq!(held_by(&[entry("/p/b-lock-2", "host-b", false)]), None);
    }

    #[test]
    fn text_lines_mark_who_holds() {
        assert_eq!(text_line(0, &entry("/p/a-lock-1", "host a", true)), "0 holding /p/a-lock-1 host a");
        assert_eq!(text_line(1, &entry("/p/b-lock-2", "", false)), "1 waiting /p/b-lock-2");
        assert_eq!(text_line(2, &entry("/p/c-lock-3", "x\ny", false)), "2 waiting /p/c-lock-3 x\\ny");
    }
}
