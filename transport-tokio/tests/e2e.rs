//! End-to-end tests on tokio: the scenarios shared with every transport
//! (`zoolock_scenarios::e2e`), against the real server from
//! `ZOOLOCK_TEST_CONNECT` or, without it, the in-process model server. One
//! `#[test]` per scenario, from the one list every transport runs
//! (`zoolock_scenarios::e2e_tests!`).

mod runtime;

use runtime::Tokio;

zoolock_scenarios::e2e_tests!(Tokio);
