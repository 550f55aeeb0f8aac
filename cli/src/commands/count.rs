//! `zoolock count get PATH` / `zoolock count set PATH N`: a shared count
//! (Curator's `SharedCount`), e.g. the size of `semaphore --leases-from`.

use std::time::Duration;

use crate::args::{CountAction, Global};
use crate::exit::{self, Failure, Outcome};

/// Prints the count (`get`), or writes it and prints the new value (`set`).
pub(super) async fn run(global: &Global, action: CountAction) -> Outcome {
    let client = super::connect(global, None).await?;
    let result = match &action {
        CountAction::Get { path } => get(&client, path).await,
        CountAction::Set { path, value } => set(&client, path, *value).await,
    };
    super::close(&client, Duration::from_secs(2)).await;
    println!("{}", result?);
    Ok(0)
}

/// Reads without creating: a missing count is an error, not a seed.
pub(super) async fn get(client: &zoolock_tokio::Client, path: &str) -> Result<i32, Failure> {
    use zoolock_tokio::sans_io::{RequestError, recipes::count_value, wire::ErrorCode};
    match client.get_data(path).await {
        Ok((data, _)) => count_value(&data).ok_or_else(|| {
            Failure::new(exit::FAILURE, format!("{path} does not hold a shared count ({} bytes, not 4)", data.len()))
        }),
        Err(zoolock_tokio::Error::Request(RequestError::Server(code))) if code == ErrorCode::NO_NODE => {
            Err(Failure::new(exit::FAILURE, format!("{path} does not exist")))
        }
        Err(e) => Err(super::request_failed(&format!("cannot read {path}"), &e)),
    }
}

async fn set(client: &zoolock_tokio::Client, path: &str, value: i32) -> Result<i32, Failure> {
    let failed = |e: zoolock_tokio::Error| super::request_failed(&format!("cannot set {path}"), &e);
    let count = client.shared_count(path, value).await.map_err(failed)?;
    count.set(value).await.map_err(failed)?;
    Ok(value)
}
