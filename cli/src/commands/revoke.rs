//! `zoolock revoke PATH` / `zoolock revoke --node NODE`: asks a holder of a
//! revocable mutex, or of a revocable semaphore lease (`--node`), to release
//! (writes `__REVOKE__` to its node, as Curator's `Revoker`). A holder that
//! is not revocable ignores it.

use std::time::Duration;

use zoolock_tokio::LockKind;

use crate::args::Global;
use crate::exit::{self, Failure, Outcome};

/// Revokes `node`, or else the first participant (the holder) of `path`;
/// prints the revoked node.
pub(super) async fn run(global: &Global, path: Option<&str>, node: Option<&str>) -> Outcome {
    let client = super::connect(global, None).await?;
    let result = revoke(&client, path, node).await;
    super::close(&client, Duration::from_secs(2)).await;
    let target = result?;
    println!("{target}");
    Ok(0)
}

async fn revoke(client: &zoolock_tokio::Client, path: Option<&str>, node: Option<&str>) -> Result<String, Failure> {
    let target = match (node, path) {
        (Some(node), _) => node.to_owned(),
        (None, Some(path)) => {
            let list = client
                .participants(path, LockKind::Mutex)
                .await
                .map_err(|e| super::request_failed(&format!("cannot list {path}"), &e))?;
            match list.into_iter().next() {
                Some(holder) => holder.path,
                None => return Err(Failure::new(exit::FAILURE, format!("{path} has no holder"))),
            }
        }
        (None, None) => return Err(Failure::new(exit::USAGE, "revoke needs PATH or --node")),
    };
    client.revoke(&target).await.map_err(|e| super::request_failed(&format!("cannot revoke {target}"), &e))?;
    Ok(target)
}
