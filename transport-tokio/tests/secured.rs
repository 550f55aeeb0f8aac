//! Secured ZooKeeper on tokio: digest auth and ACLs, SASL, mutual TLS (TLS
//! 1.2 and 1.3 servers; `tls` feature) and its failures, Kerberos (`gssapi`
//! feature): the scenarios shared with every transport
//! (`zoolock_scenarios::secured`), under the test names CI and the docs use.

mod runtime;

use runtime::Tokio;
use zoolock_scenarios::secured::{self, run};

#[test]
fn digest_acl() {
    run::<Tokio>(secured::digest_acl);
}

#[test]
fn acl_prefix() {
    run::<Tokio>(secured::acl_prefix);
}

#[test]
fn plain_create_acl() {
    run::<Tokio>(secured::plain_create_acl);
}

#[test]
fn auth_failed() {
    run::<Tokio>(secured::auth_failed);
}

#[test]
fn sasl() {
    run::<Tokio>(secured::sasl);
}

#[cfg(feature = "tls")]
#[test]
fn tls12_recipes() {
    run::<Tokio>(secured::tls12_recipes);
}

#[cfg(feature = "tls")]
#[test]
fn tls13_recipes() {
    run::<Tokio>(secured::tls13_recipes);
}

#[cfg(feature = "tls")]
#[test]
fn tls_failures() {
    run::<Tokio>(secured::tls_failures);
}

#[cfg(feature = "tls")]
#[test]
fn tls_server_checks() {
    run::<Tokio>(secured::tls_server_checks);
}

#[cfg(feature = "tls")]
#[test]
fn tls_rotation() {
    run::<Tokio>(secured::tls_rotation);
}

#[cfg(feature = "tls")]
#[test]
fn tls_rotation_within_session() {
    run::<Tokio>(secured::tls_rotation_within_session);
}

#[cfg(feature = "gssapi")]
#[test]
fn kerberos_recipes() {
    run::<Tokio>(secured::kerberos_recipes);
}

#[cfg(feature = "gssapi")]
#[test]
fn kerberos_failures() {
    run::<Tokio>(secured::kerberos_failures);
}

#[cfg(feature = "gssapi")]
#[test]
fn kerberos_renewal() {
    run::<Tokio>(secured::kerberos_renewal);
}
