//! End-to-end tests of the `zk-trace` binary: clean decodes print one JSON
//! line per frame; corrupt or unreadable traces fail naming file and line.

use std::fs;
use std::path::{Path, PathBuf};
use std::process::{Command, Output};

use serde_json::Value;

const BIN: &str = env!("CARGO_BIN_EXE_zk-trace");

fn corpus(rel: &str) -> PathBuf {
    Path::new(env!("CARGO_MANIFEST_DIR")).join("traces/curator-5.4.0").join(rel)
}

fn run(args: &[&str]) -> Output {
    Command::new(BIN).args(args).output().expect("run zk-trace")
}

fn stdout_lines(out: &Output) -> Vec<Value> {
    String::from_utf8(out.stdout.clone()).unwrap().lines().map(|l| serde_json::from_str(l).unwrap()).collect()
}

/// Writes `text` to a fresh file under the test target's temp folder.
fn temp_trace(name: &str, text: &str) -> PathBuf {
    let path = Path::new(env!("CARGO_TARGET_TMPDIR")).join(format!("zk-trace-cli-{}-{name}", std::process::id()));
    fs::write(&path, text).unwrap();
    path
}

fn frame_lines(text: &str) -> usize {
    text.lines().filter(|l| l.contains("\"hex\"")).count()
}

#[test]
fn decodes_a_real_trace_one_line_per_frame() {
    let path = corpus("mutex-contended/B.conn1.jsonl");
    let out = run(&["decode", path.to_str().unwrap()]);
    assert!(out.status.success(), "stderr: {}", String::from_utf8_lossy(&out.stderr));
    let records = stdout_lines(&out);
    let text = fs::read_to_string(&path).unwrap();
    assert_eq!(records.len(), frame_lines(&text));
    for (i, r) in records.iter().enumerate() {
        assert_eq!(r["file"], path.to_str().unwrap());
        // Line 1 is the header, so frame i is on line i + 2.
        assert_eq!(r["line"], i + 2);
        assert!(r["dir"] == "c2s" || r["dir"] == "s2c");
    }
    assert_eq!(records[0]["kind"], "connect");
    assert_eq!(records[1]["sessionId"], "0x100000ee07e0003");
    assert!(records.iter().any(|r| r["op"] == "create2" && r["req"]["flags_name"] == "EPHEMERAL_SEQUENTIAL"));
    assert!(records.iter().any(|r| r["kind"] == "notification" && r["event"]["type_name"] == "NodeDeleted"));
}

#[test]
fn decodes_the_whole_corpus() {
    let mut args = vec!["decode".to_owned()];
    let mut expected = 0;
    for dir in fs::read_dir(corpus("")).unwrap() {
        let dir = dir.unwrap().path();
        for f in fs::read_dir(&dir).unwrap() {
            let f = f.unwrap().path();
            if f.extension().is_some_and(|e| e == "jsonl") {
                expected += frame_lines(&fs::read_to_string(&f).unwrap());
                args.push(f.to_string_lossy().into_owned());
            }
        }
    }
    let out = Command::new(BIN).args(&args).output().unwrap();
    assert!(out.status.success(), "stderr: {}", String::from_utf8_lossy(&out.stderr));
    assert!(expected >= 500);
    assert_eq!(stdout_lines(&out).len(), expected);
    // A folder argument means every trace under it.
    let out = run(&["decode", corpus("").to_str().unwrap()]);
    assert!(out.status.success());
    assert_eq!(stdout_lines(&out).len(), expected);
}

/// Replaces line `line` (1-based) of a real trace by `edit(line)`.
fn corrupt(name: &str, line: usize, edit: impl Fn(&str) -> String) -> PathBuf {
    let text = fs::read_to_string(corpus("mutex-contended/B.conn1.jsonl")).unwrap();
    let lines: Vec<String> =
        text.lines().enumerate().map(|(i, l)| if i + 1 == line { edit(l) } else { l.to_owned() }).collect();
    temp_trace(name, &(lines.join("\n") + "\n"))
}

/// Decodes `path`, which must fail (exit 1) naming the file and line
/// `line`, with `what` in the message.
fn decode_fails_at(path: &Path, line: usize, what: &str) -> Output {
    let out = run(&["decode", path.to_str().unwrap()]);
    assert_eq!(out.status.code(), Some(1));
    let stderr = String::from_utf8_lossy(&out.stderr);
    assert!(stderr.contains(&format!("{}:{line}:", path.display())), "stderr: {stderr}");
    assert!(stderr.contains(what), "stderr: {stderr}");
    out
}

fn shorten_hex(l: &str, by: usize) -> String {
    let mut v: Value = serde_json::from_str(l).unwrap();
    let hex = v["hex"].as_str().unwrap().to_owned();
    v["hex"] = Value::from(&hex[..hex.len() - by]);
    v.to_string()
}

#[test]
fn truncated_frame_fails_naming_file_and_line() {
    // Line 8 is B's create2 request; drop its last byte.
    let path = corrupt("truncated.jsonl", 8, |l| shorten_hex(l, 2));
    let out = decode_fails_at(&path, 8, "c2s frame");
    // The six frames before it were printed.
    assert_eq!(stdout_lines(&out).len(), 6);
}

#[test]
fn trailing_bytes_fail() {
    // Line 6 is a getData reply; append a byte.
    let path = corrupt("trailing.jsonl", 6, |l| {
        let mut v: Value = serde_json::from_str(l).unwrap();
        v["hex"] = Value::from(format!("{}00", v["hex"].as_str().unwrap()));
        v.to_string()
    });
    decode_fails_at(&path, 6, "trailing");
}

#[test]
fn odd_hex_fails_naming_file_and_line() {
    let path = corrupt("odd-hex.jsonl", 4, |l| shorten_hex(l, 1));
    let out = decode_fails_at(&path, 4, "hex");
    assert!(out.stdout.is_empty());
}

#[test]
fn bad_files_fail_but_others_still_decode() {
    let missing = Path::new(env!("CARGO_TARGET_TMPDIR")).join("no-such-trace.jsonl");
    let good = corpus("multilock/A.conn1.jsonl");
    let out = run(&["decode", missing.to_str().unwrap(), good.to_str().unwrap()]);
    assert_eq!(out.status.code(), Some(1));
    let stderr = String::from_utf8_lossy(&out.stderr);
    assert!(stderr.contains(missing.to_str().unwrap()), "stderr: {stderr}");
    assert_eq!(stdout_lines(&out).len(), frame_lines(&fs::read_to_string(&good).unwrap()));

    let wrong_format = temp_trace("format.jsonl", "{\"format\":\"zk-trace/9\"}\n");
    let out = run(&["decode", wrong_format.to_str().unwrap()]);
    assert_eq!(out.status.code(), Some(1));
    assert!(String::from_utf8_lossy(&out.stderr).contains(&format!("{}:1:", wrong_format.display())));
}

#[test]
fn help_and_usage_errors() {
    let out = run(&["--help"]);
    assert!(out.status.success());
    let help = String::from_utf8_lossy(&out.stdout);
    assert!(help.contains("zk-trace decode FILE"), "{help}");
    assert_eq!(run(&[]).status.code(), Some(2));
    assert_eq!(run(&["decode"]).status.code(), Some(2));
    assert_eq!(run(&["frobnicate"]).status.code(), Some(2));
    assert_eq!(run(&["decode", "--bogus"]).status.code(), Some(2));
}
