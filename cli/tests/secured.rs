//! The CLI against secured servers: `--auth`/`--acl` on the plain server
//! (`ZOOLOCK_TEST_CONNECT`), `--tls-*` on the mutual-TLS server whose
//! directory is `ZOOLOCK_TEST_TLS_DIR` (both started by `bash .ci/run`).
//! Each test prints why and passes when its server is not configured.

mod common;

use std::path::PathBuf;
use std::process::{Command, Output, Stdio};
use std::time::{Duration, Instant};

use zoolock_tokio::ErrorCode;
use zoolock_tokio::Options;
use zoolock_tokio::RequestError;

fn zoolock(addr: &str) -> Command {
    let mut cmd = Command::new(env!("CARGO_BIN_EXE_zoolock"));
    cmd.arg("--connect").arg(addr).arg("--connect-timeout").arg("10s").stdin(Stdio::null());
    for var in [
        "ZOOLOCK_AUTH",
        "ZOOLOCK_ACL",
        "ZOOLOCK_TLS_CA",
        "ZOOLOCK_TLS_CERT",
        "ZOOLOCK_TLS_KEY",
        "ZOOLOCK_SASL_USER",
        "ZOOLOCK_SASL_PASSWORD",
    ] {
        cmd.env_remove(var);
    }
    cmd
}

fn output(cmd: &mut Command) -> Output {
    cmd.output().expect("run zoolock")
}

fn unique(name: &str) -> String {
    format!("/zoolock-cli-secured-{name}-{}/lock", std::process::id())
}

fn tls_dir() -> Option<PathBuf> {
    match std::env::var("ZOOLOCK_TEST_TLS_DIR") {
        Ok(d) if !d.trim().is_empty() => Some(PathBuf::from(d.trim())),
        _ => {
            eprintln!("skipped: ZOOLOCK_TEST_TLS_DIR is not set (bash .ci/run starts a TLS server and sets it)");
            None
        }
    }
}

fn tls_addr(dir: &std::path::Path) -> String {
    format!("127.0.0.1:{}", std::fs::read_to_string(dir.join("tls_port")).expect("tls_port").trim())
}

/// `--auth digest:U:P --acl auth::cdrwa`: the lock node CMD holds cannot be
/// deleted by an unauthenticated client.
#[test]
fn digest_auth_and_creator_acl() {
    let Some(addr) = common::server() else { return };
    creator_acl_holds(&addr, "real");
}

/// The same against `zoolock serve`, whose model enforces ACLs as
/// ZooKeeper 3.8 does.
#[test]
fn digest_auth_and_creator_acl_on_zoolock_serve() {
    let (mut serve, addr) = common::spawn_serve();
    creator_acl_holds(&addr, "serve");
    let _ = serve.kill();
    let _ = serve.wait();
}

fn creator_acl_holds(addr: &str, label: &str) {
    let addr = addr.to_owned();
    let path = unique(&format!("acl-{label}"));
    let node_file = std::env::temp_dir().join(format!("zoolock-acl-node-{label}-{}", std::process::id()));
    let _ = std::fs::remove_file(&node_file);
    let mut child = zoolock(&addr)
        .args(["--auth", "digest:alice:secret", "--acl", "auth::cdrwa", "lock", &path, "--", "sh", "-c"])
        .arg(format!("echo \"$ZOOLOCK_NODE\" > {}.tmp && mv {0}.tmp {0} && sleep 3", node_file.display()))
        .spawn()
        .expect("run zoolock");
    let deadline = Instant::now() + Duration::from_secs(15);
    let node = loop {
        if let Ok(node) = std::fs::read_to_string(&node_file) {
            break node.trim().to_owned();
        }
        assert!(Instant::now() < deadline, "CMD never ran");
        std::thread::sleep(Duration::from_millis(50));
    };
    let rt = tokio::runtime::Runtime::new().unwrap();
    rt.block_on(async {
        let anonymous = zoolock_tokio::connect(&addr, Options::default()).await.unwrap();
        let delete = anonymous.delete(&node, None).await;
        assert!(
            matches!(delete, Err(zoolock_tokio::Error::Request(RequestError::Server(c))) if c == ErrorCode::NO_AUTH),
            "{delete:?}"
        );
        anonymous.close().await.unwrap();
    });
    let status = child.wait().unwrap();
    assert!(status.success(), "{status:?}");
    let _ = std::fs::remove_file(&node_file);
}

/// `--tls-ca/--tls-cert/--tls-key` against a mutual-TLS ZooKeeper.
#[test]
fn mutual_tls_lock() {
    let Some(dir) = tls_dir() else { return };
    let tls = dir.join("tls");
    let out = output(
        zoolock(&tls_addr(&dir))
            .arg("--tls-ca")
            .arg(tls.join("ca.pem"))
            .arg("--tls-cert")
            .arg(tls.join("client.pem"))
            .arg("--tls-key")
            .arg(tls.join("client.key"))
            .args(["lock", &unique("tls"), "--", "sh", "-c", "echo \"held $ZOOLOCK_NODE\""]),
    );
    assert!(out.status.success(), "{out:?}");
    assert!(String::from_utf8_lossy(&out.stdout).starts_with("held /zoolock-cli-secured-"), "{out:?}");
}

/// A wrong certificate exits 69 with one line that says what is wrong;
/// the environment variables work as the flags do.
#[test]
fn wrong_certificates_exit_69_with_one_line() {
    let Some(dir) = tls_dir() else { return };
    let tls = dir.join("tls");
    let cases = [
        ("other-ca.pem", "client", "certificate was rejected: UnknownIssuer"),
        ("ca.pem", "other-client", "rejected the TLS handshake"),
        ("ca.pem", "expired-client", "rejected the TLS handshake"),
        ("client.key", "client", "no PEM certificate found"),
    ];
    for (ca, client, says) in cases {
        let start = Instant::now();
        let out = output(
            zoolock(&tls_addr(&dir))
                .env("ZOOLOCK_TLS_CA", tls.join(ca))
                .env("ZOOLOCK_TLS_CERT", tls.join(format!("{client}.pem")))
                .env("ZOOLOCK_TLS_KEY", tls.join(format!("{client}.key")))
                .args(["lock", &unique("bad"), "--", "true"]),
        );
        let stderr = String::from_utf8_lossy(&out.stderr);
        assert_eq!(out.status.code(), Some(69), "{ca} {client}: {out:?}");
        assert_eq!(stderr.lines().count(), 1, "{ca} {client}: one line: {stderr}");
        assert!(stderr.contains(says), "{ca} {client}: {stderr}");
        assert!(start.elapsed() < Duration::from_secs(10), "{ca} {client}: fast, took {:?}", start.elapsed());
    }
}

/// `--sasl-user` with `ZOOLOCK_SASL_PASSWORD` against a server that requires
/// SASL; a wrong password exits 69 with one line saying so; no password is
/// a usage error.
#[test]
fn sasl_user_with_password_from_the_environment() {
    let dir = match std::env::var("ZOOLOCK_TEST_SASL_DIR") {
        Ok(d) if !d.trim().is_empty() => PathBuf::from(d.trim()),
        _ => {
            eprintln!("skipped: ZOOLOCK_TEST_SASL_DIR is not set (bash .ci/run starts a SASL server and sets it)");
            return;
        }
    };
    let addr = format!("127.0.0.1:{}", std::fs::read_to_string(dir.join("port")).expect("port").trim());
    let env = std::fs::read_to_string(dir.join("sasl.env")).expect("sasl.env");
    let password = env.lines().find_map(|l| l.strip_prefix("SASL_PASSWORD=")).expect("alice's password");
    let path = unique("sasl");
    let out = output(zoolock(&addr).env("ZOOLOCK_SASL_PASSWORD", password).args([
        "--sasl-user",
        "alice",
        "lock",
        &path,
        "--",
        "sh",
        "-c",
        "echo \"held $ZOOLOCK_NODE\"",
    ]));
    assert!(out.status.success(), "{out:?}");
    assert!(String::from_utf8_lossy(&out.stdout).starts_with("held "), "{out:?}");

    let out = output(zoolock(&addr).env("ZOOLOCK_SASL_PASSWORD", "wrong").args([
        "--sasl-user",
        "alice",
        "lock",
        &path,
        "--",
        "true",
    ]));
    let stderr = String::from_utf8_lossy(&out.stderr);
    assert_eq!(out.status.code(), Some(69), "{out:?}");
    assert_eq!(stderr.lines().count(), 1, "{stderr}");
    assert!(stderr.contains("SASL authentication as alice failed"), "{stderr}");

    let out = output(zoolock(&addr).args(["--sasl-user", "alice", "lock", &path, "--", "true"]));
    assert_eq!(out.status.code(), Some(64), "{out:?}");

    let out = output(zoolock(&addr).args(["lock", &path, "--", "true"]));
    let stderr = String::from_utf8_lossy(&out.stderr);
    assert_eq!(out.status.code(), Some(69), "{out:?}");
    assert!(stderr.contains("requires SASL"), "{stderr}");
}
