//! The CLI over SASL GSSAPI (Kerberos), built with the `gssapi` feature,
//! against the Kerberized ZooKeeper of `scripts/zk-kerberos.sh start DIR`
//! (`bash .ci/run` starts it and names its `KEY=VALUE` file in
//! `ZOOLOCK_TEST_KERBEROS_ENV`): exit 0 with a ticket from `kinit`, exit 69
//! with one line naming what is wrong after `kdestroy`, with a stale keytab
//! and with a wrong service name. Prints why and passes when the server is
//! not configured.
#![cfg(feature = "gssapi")]

use std::collections::HashMap;
use std::process::{Command, Output, Stdio};
use std::time::{Duration, Instant};

struct Rig {
    vars: HashMap<String, String>,
    /// This test's own ticket cache.
    cache: String,
}

impl Rig {
    fn from_env(name: &str) -> Option<Rig> {
        let file = match std::env::var("ZOOLOCK_TEST_KERBEROS_ENV") {
            Ok(f) if !f.trim().is_empty() => f,
            _ => {
                eprintln!("skipped: ZOOLOCK_TEST_KERBEROS_ENV is not set (bash .ci/run starts a Kerberized server)");
                return None;
            }
        };
        let text = std::fs::read_to_string(file.trim()).expect("the rig's KEY=VALUE file");
        let vars: HashMap<String, String> = text
            .lines()
            .filter_map(|l| l.split_once('='))
            .map(|(k, v)| (k.into(), v.trim_matches('\'').into()))
            .collect();
        let cache = format!("FILE:{}/krb/cc-cli-{name}-{}", vars["ZK_DIR"], std::process::id());
        Some(Rig { vars, cache })
    }

    fn var(&self, key: &str) -> &str {
        &self.vars[key]
    }

    /// A command with this test's Kerberos environment and nothing else of
    /// the caller's security settings.
    fn command(&self, program: &str) -> Command {
        let mut cmd = Command::new(program);
        cmd.env("KRB5_CONFIG", self.var("ZK_KRB5_CONF")).env("KRB5CCNAME", &self.cache).stdin(Stdio::null());
        for var in [
            "KRB5_CLIENT_KTNAME",
            "ZOOLOCK_SASL_USER",
            "ZOOLOCK_SASL_MECHANISM",
            "ZOOLOCK_SASL_SERVICE",
            "ZOOLOCK_SASL_HOST",
        ] {
            cmd.env_remove(var);
        }
        cmd
    }

    /// `zoolock --connect localhost:PORT --sasl-mechanism gssapi EXTRA.. lock /p -- true`.
    fn lock(&self, extra: &[&str], path: &str) -> (Output, Duration) {
        let mut cmd = self.command(env!("CARGO_BIN_EXE_zoolock"));
        cmd.args(["--connect", &format!("localhost:{}", self.var("ZK_PORT")), "--connect-timeout", "10s"])
            .args(["--sasl-mechanism", "gssapi"])
            .args(extra)
            .args(["lock", path, "--", "true"]);
        let start = Instant::now();
        let out = cmd.output().expect("run zoolock");
        (out, start.elapsed())
    }

    fn path(&self, name: &str) -> String {
        format!("/zoolock-cli-kerberos-{name}-{}/lock", std::process::id())
    }
}

fn stderr(out: &Output) -> String {
    String::from_utf8_lossy(&out.stderr).into_owned()
}

/// The one `zoolock:` line of a failure.
fn failure_line(out: &Output) -> String {
    let text = stderr(out);
    let lines: Vec<&str> = text.lines().filter(|l| l.starts_with("zoolock:")).collect();
    assert_eq!(lines.len(), 1, "one line: {text}");
    lines[0].to_owned()
}

#[test]
fn kerberos_kinit_then_kdestroy() {
    let Some(rig) = Rig::from_env("kinit") else { return };
    let kinit = rig
        .command("kinit")
        .args(["-kt", rig.var("ZK_CLIENT_KEYTAB"), rig.var("ZK_CLIENT_PRINCIPAL")])
        .status()
        .expect("kinit");
    assert!(kinit.success());
    let (out, _) = rig.lock(&[], &rig.path("kinit"));
    assert_eq!(out.status.code(), Some(0), "with a ticket: {}", stderr(&out));

    assert!(rig.command("kdestroy").status().expect("kdestroy").success());
    let (out, took) = rig.lock(&[], &rig.path("kinit"));
    assert_eq!(out.status.code(), Some(69), "without a ticket: {}", stderr(&out));
    let line = failure_line(&out);
    assert!(line.contains("no Kerberos credentials") && line.contains("KRB5CCNAME"), "{line}");
    assert!(line.contains("KRB5_CLIENT_KTNAME"), "{line}");
    assert!(took < Duration::from_secs(5), "fast: {took:?}");
}

#[test]
fn kerberos_stale_keytab_and_wrong_service() {
    let Some(rig) = Rig::from_env("failures") else { return };
    let mut stale = rig.command(env!("CARGO_BIN_EXE_zoolock"));
    stale
        .env("KRB5_CLIENT_KTNAME", rig.var("ZK_BAD_KEYTAB"))
        .args(["--connect", &format!("localhost:{}", rig.var("ZK_PORT")), "--sasl-mechanism", "gssapi"])
        .args(["lock", &rig.path("stale"), "--", "true"]);
    let out = stale.output().unwrap();
    assert_eq!(out.status.code(), Some(69), "{}", stderr(&out));
    assert!(failure_line(&out).contains("refused the client's credentials (stale keytab"), "{}", stderr(&out));

    let kinit = rig
        .command("kinit")
        .args(["-kt", rig.var("ZK_CLIENT_KEYTAB"), rig.var("ZK_CLIENT_PRINCIPAL")])
        .status()
        .expect("kinit");
    assert!(kinit.success());
    let (out, took) = rig.lock(&["--sasl-service", "zookeeper-nope"], &rig.path("service"));
    assert_eq!(out.status.code(), Some(69), "{}", stderr(&out));
    assert!(failure_line(&out).contains("does not know the server's principal"), "{}", stderr(&out));
    assert!(took < Duration::from_secs(5), "fast: {took:?}");
    // The environment variable is the flag's twin.
    let mut by_env = rig.command(env!("CARGO_BIN_EXE_zoolock"));
    by_env.env("ZOOLOCK_SASL_MECHANISM", "gssapi").env("ZOOLOCK_SASL_HOST", "localhost").args([
        "--connect",
        &format!("127.0.0.1:{}", rig.var("ZK_PORT")),
        "lock",
        &rig.path("env"),
        "--",
        "true",
    ]);
    let out = by_env.output().unwrap();
    assert_eq!(out.status.code(), Some(0), "ZOOLOCK_SASL_MECHANISM with ZOOLOCK_SASL_HOST: {}", stderr(&out));
}
