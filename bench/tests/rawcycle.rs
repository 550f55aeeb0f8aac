//! Runs `zk-rawcycle` for every plan against the real ZooKeeper from
//! `ZOOLOCK_TEST_CONNECT` (`bash .ci/run` starts one and sets it) and checks its
//! JSON line. Skipped, with the reason printed, when the variable is unset,
//! unless `CI` is set: then the missing server is a failure.

use std::process::Command;

const BIN: &str = env!("CARGO_BIN_EXE_zk-rawcycle");

#[test]
fn every_plan_prints_one_json_line() {
    let Some(addr) = zoolock_testkit::real_server("zk-rawcycle") else { return };
    // The probe speaks HOST:PORT only; drop a chroot if the variable has one.
    let host = addr.split('/').next().unwrap_or_default();
    for plan in ["3rtt", "2rtt", "1rtt"] {
        let out = Command::new(BIN)
            .args(["--connect", host, "--plan", plan, "--cycles", "20", "--warmup", "5", "--json"])
            .output()
            .expect("run zk-rawcycle");
        let stderr = String::from_utf8_lossy(&out.stderr);
        assert!(out.status.success(), "zk-rawcycle --plan {plan} failed ({}): {stderr}", out.status);
        let stdout = String::from_utf8(out.stdout).expect("UTF-8 output");
        let lines: Vec<&str> = stdout.lines().collect();
        assert_eq!(lines.len(), 1, "one line expected, got {stdout:?}");
        let v: serde_json::Value = serde_json::from_str(lines[0]).expect("valid JSON");
        assert_eq!(v["impl"], "raw");
        assert_eq!(v["workload"], "mutex-uncontended");
        assert_eq!(v["plan"], plan);
        assert_eq!(v["cycles"], 20);
        for key in ["seconds", "cycles_per_sec", "p50_us", "p99_us"] {
            let x = v[key].as_f64().unwrap_or_else(|| panic!("{key} is not a number in {v}"));
            assert!(x > 0.0 && x.is_finite(), "{key} = {x} in {v}");
        }
        assert!(v["p50_us"].as_f64() <= v["p99_us"].as_f64(), "p50 above p99 in {v}");
    }
}

#[test]
fn the_chain_hands_off_without_overlap() {
    let Some(addr) = zoolock_testkit::real_server("zk-rawcycle") else { return };
    let host = addr.split('/').next().unwrap_or_default();
    let out = Command::new(BIN)
        .args(["--connect", host, "--plan", "chain", "--clients", "3", "--cycles", "30", "--warmup", "5", "--json"])
        .output()
        .expect("run zk-rawcycle");
    let stderr = String::from_utf8_lossy(&out.stderr);
    assert!(out.status.success(), "zk-rawcycle --plan chain failed ({}): {stderr}", out.status);
    let stdout = String::from_utf8(out.stdout).expect("UTF-8 output");
    let v: serde_json::Value = serde_json::from_str(stdout.trim()).expect("one JSON line");
    assert_eq!(v["workload"], "mutex-contended");
    assert_eq!(v["plan"], "chain");
    assert_eq!(v["clients"], 3);
    assert_eq!(v["cycles"], 30);
    assert_eq!(v["overlap_violations"], 0);
    assert!(v["cycles_per_sec"].as_f64().is_some_and(|x| x > 0.0), "rate in {v}");
}

#[test]
fn an_unknown_plan_is_a_usage_error() {
    let out = Command::new(BIN)
        .args(["--connect", "127.0.0.1:1", "--plan", "4rtt", "--cycles", "1"])
        .output()
        .expect("run zk-rawcycle");
    assert!(!out.status.success());
    assert!(String::from_utf8_lossy(&out.stderr).contains("unknown plan"));
}
