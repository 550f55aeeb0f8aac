//! Secured ZooKeeper on tokio: digest auth and ACLs, mutual TLS (TLS 1.2 and
//! 1.3 servers) and its failures; scenarios in `driver/tests/secured`.

#[path = "../../driver/tests/secured/mod.rs"]
mod secured;

use std::sync::Arc;

fn rt() -> secured::Rt {
    secured::Rt { runtime: Arc::new(zoolock_tokio::TokioRuntime::current()), label: "tokio" }
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn digest_acl() {
    secured::digest_acl(&rt()).await;
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn acl_prefix() {
    secured::acl_prefix(&rt()).await;
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn auth_failed() {
    secured::auth_failed(&rt()).await;
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn tls12_recipes() {
    secured::tls_recipes(&rt(), "ZOOLOCK_TEST_TLS_DIR").await;
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn tls13_recipes() {
    secured::tls_recipes(&rt(), "ZOOLOCK_TEST_TLS13_DIR").await;
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn tls_failures() {
    secured::tls_failures(&rt()).await;
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn sasl() {
    secured::sasl(&rt()).await;
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn tls_server_checks() {
    secured::tls_server_checks(&rt()).await;
}
