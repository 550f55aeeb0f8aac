//! Secured ZooKeeper on smol: mutual TLS through futures-rustls, and digest
//! auth; scenarios in `driver/tests/secured`.

#[path = "../../driver/tests/secured/mod.rs"]
mod secured;

use std::sync::Arc;

fn rt() -> secured::Rt {
    secured::Rt { runtime: Arc::new(zoolock_smol::SmolRuntime::new()), label: "smol" }
}

#[test]
fn digest_acl() {
    smol::block_on(secured::digest_acl(&rt()));
}

#[test]
fn tls12_recipes() {
    smol::block_on(secured::tls_recipes(&rt(), "ZOOLOCK_TEST_TLS_DIR"));
}

#[test]
fn tls_failures() {
    smol::block_on(secured::tls_failures(&rt()));
}

#[test]
fn acl_prefix() {
    smol::block_on(secured::acl_prefix(&rt()));
}

#[test]
fn auth_failed() {
    smol::block_on(secured::auth_failed(&rt()));
}

#[test]
fn tls13_recipes() {
    smol::block_on(secured::tls_recipes(&rt(), "ZOOLOCK_TEST_TLS13_DIR"));
}

#[test]
fn sasl() {
    smol::block_on(secured::sasl(&rt()));
}

#[test]
fn tls_server_checks() {
    smol::block_on(secured::tls_server_checks(&rt()));
}
