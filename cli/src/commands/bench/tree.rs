//! The run's node tree: counting leftover lock nodes and removing it.

use zoolock_tokio::{Client, Error};

/// Every lock, lease and read/write node zoolock makes is protected
/// (`_c_<uuid>-...`, as Curator names them); layout folders are not.
fn is_lock_node(name: &str) -> bool {
    name.starts_with("_c_")
}

/// Lock nodes anywhere under `base`. Queue a round trip on every session
/// that released something before calling this, so their deletes are
/// applied; this one's own are, by per-session FIFO order.
pub(super) async fn leftovers(client: &Client, base: &str) -> Result<u64, Error> {
    let mut count = 0;
    let mut stack = vec![base.to_owned()];
    while let Some(path) = stack.pop() {
        let children = match client.get_children(&path).await {
            Ok((children, _)) => children,
            Err(e) if is_no_node(&e) => continue,
            Err(e) => return Err(e),
        };
        for name in children {
            if is_lock_node(&name) {
                count += 1;
            } else {
                stack.push(join(&path, &name));
            }
        }
    }
    Ok(count)
}

/// Deletes `base` and everything under it, then the shared parent if it is
/// empty. Best effort: failures are logged, not reported.
pub(super) async fn remove(client: &Client, base: &str) {
    if let Err(e) = remove_tree(client, base).await {
        tracing::warn!(%base, error = %e, "cannot remove the bench tree");
    }
    // Another run may be using it (NotEmpty): that is fine.
    let _ = client.delete(super::ROOT, None).await;
}

async fn remove_tree(client: &Client, base: &str) -> Result<(), Error> {
    // Depth first, post-order, without recursion in async.
    let mut order = Vec::new();
    let mut stack = vec![base.to_owned()];
    while let Some(path) = stack.pop() {
        match client.get_children(&path).await {
            Ok((children, _)) => stack.extend(children.iter().map(|c| join(&path, c))),
            Err(e) if is_no_node(&e) => continue,
            Err(e) => return Err(e),
        }
        order.push(path);
    }
    for path in order.iter().rev() {
        match client.delete(path, None).await {
            Ok(()) => {}
            Err(e) if is_no_node(&e) => {}
            Err(e) => return Err(e),
        }
    }
    Ok(())
}

fn join(parent: &str, name: &str) -> String {
    if parent == "/" { format!("/{name}") } else { format!("{parent}/{name}") }
}

fn is_no_node(e: &Error) -> bool {
    use zoolock_tokio::sans_io::{RequestError, wire::ErrorCode};
    matches!(e, Error::Request(RequestError::Server(code)) if *code == ErrorCode::NO_NODE)
}
