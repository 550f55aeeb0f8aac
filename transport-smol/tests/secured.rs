//! Secured ZooKeeper on smol: digest auth and ACLs, SASL, mutual TLS
//! through futures-rustls (`tls` feature), Kerberos (`gssapi` feature): the
//! scenarios shared with every transport (`zoolock_scenarios::secured`),
//! under the test names CI and the docs use.

mod runtime;

use runtime::Smol;
use zoolock_scenarios::secured::{self, run};

#[test]
fn digest_acl() {
    run::<Smol>(secured::digest_acl);
}

#[test]
fn acl_prefix() {
    run::<Smol>(secured::acl_prefix);
}

#[test]
fn plain_create_acl() {
    run::<Smol>(secured::plain_create_acl);
}

#[test]
fn auth_failed() {
    run::<Smol>(secured::auth_failed);
}

#[test]
fn sasl() {
    run::<Smol>(secured::sasl);
}

#[cfg(feature = "tls")]
#[test]
fn tls12_recipes() {
    run::<Smol>(secured::tls12_recipes);
}

#[cfg(feature = "tls")]
#[test]
fn tls13_recipes() {
    run::<Smol>(secured::tls13_recipes);
}

#[cfg(feature = "tls")]
#[test]
fn tls_failures() {
    run::<Smol>(secured::tls_failures);
}

#[cfg(feature = "tls")]
#[test]
fn tls_server_checks() {
    run::<Smol>(secured::tls_server_checks);
}

#[cfg(feature = "tls")]
#[test]
fn tls_rotation() {
    run::<Smol>(secured::tls_rotation);
}

#[cfg(feature = "tls")]
#[test]
fn tls_rotation_within_session() {
    run::<Smol>(secured::tls_rotation_within_session);
}

#[cfg(feature = "gssapi")]
#[test]
fn kerberos_recipes() {
    run::<Smol>(secured::kerberos_recipes);
}

#[cfg(feature = "gssapi")]
#[test]
fn kerberos_failures() {
    run::<Smol>(secured::kerberos_failures);
}

#[cfg(feature = "gssapi")]
#[test]
fn kerberos_renewal() {
    run::<Smol>(secured::kerberos_renewal);
}
