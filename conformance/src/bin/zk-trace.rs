//! `zk-trace`: decode recorded ZooKeeper traces (`zk-trace/1`) to JSON lines,
//! and replay whole recorded scenarios against zoolock's recipes.

use std::io::{self, BufWriter, Write};
use std::path::{Path, PathBuf};
use std::process::ExitCode;

use serde_json::Value;
use zoolock_conformance::recipe_replay::{RecipeReplayConfig, replay_scenario_dir};
use zoolock_conformance::trace::{self, Entry};
use zoolock_conformance::{StreamDecoder, Trace, TraceDecodeError, json};

const USAGE: &str = "\
zk-trace: decode recorded ZooKeeper client traffic (format zk-trace/1)

USAGE:
    zk-trace decode FILE|DIR...
    zk-trace replay DIR...
    zk-trace --help

COMMANDS:
    decode    Decode every frame of each trace file and print one JSON object
              per frame (stdout), with \"file\" and \"line\" naming its source.
              Each file is one connection and is decoded on its own; a folder
              stands for the *.jsonl files under it (sorted).
              Exits 1 if a file cannot be read or parsed, or if any frame does
              not decode completely (trailing bytes included); the message
              names the file and line.

    replay    Replay each scenario folder (connection files plus summary.json)
              against zoolock's session and lock recipes in the Curator op
              plan, and compare the client frames zoolock writes with the
              recorded ones (xids remapped; protection UUIDs, ping timing and
              Curator's EnsembleTracker reads of /zookeeper/config aside).
              Prints \"matched N/M frames\" per connection and OK or FAIL per
              scenario, with the first mismatch (file:line, expected, got).
              A folder without summary.json stands for its scenario
              sub-folders. Exits 1 on any mismatch or unreadable scenario.

Exits 2 on a usage error.
";

fn main() -> ExitCode {
    let args: Vec<String> = std::env::args().skip(1).collect();
    match args.first().map(String::as_str) {
        Some("-h" | "--help" | "help") => {
            print!("{USAGE}");
            ExitCode::SUCCESS
        }
        Some("decode") => {
            let files = &args[1..];
            if files.is_empty() {
                return usage_error("decode needs at least one FILE");
            }
            if let Some(opt) = files.iter().find(|f| f.starts_with('-') && f.as_str() != "-") {
                if opt == "--help" || opt == "-h" {
                    print!("{USAGE}");
                    return ExitCode::SUCCESS;
                }
                return usage_error(&format!("unknown option {opt}"));
            }
            decode_files(files)
        }
        Some("replay") => {
            let dirs = &args[1..];
            if let Some(opt) = dirs.iter().find(|f| f.starts_with('-')) {
                if opt == "--help" || opt == "-h" {
                    print!("{USAGE}");
                    return ExitCode::SUCCESS;
                }
                return usage_error(&format!("unknown option {opt}"));
            }
            if dirs.is_empty() {
                return usage_error("replay needs at least one DIR");
            }
            replay_dirs(dirs)
        }
        Some(other) => usage_error(&format!("unknown command {other:?}")),
        None => usage_error("missing command"),
    }
}

fn usage_error(msg: &str) -> ExitCode {
    eprintln!("zk-trace: {msg}\n\n{USAGE}");
    ExitCode::from(2)
}

fn decode_files(args: &[String]) -> ExitCode {
    let stdout = io::stdout();
    let mut out = BufWriter::new(stdout.lock());
    let mut failed = false;
    for arg in args {
        let files = match expand(Path::new(arg)) {
            Ok(files) => files,
            Err(e) => {
                eprintln!("zk-trace: {e}");
                failed = true;
                continue;
            }
        };
        for file in files {
            match decode_file(&file, &mut out) {
                Ok(()) => {}
                Err(Failure::Output(e)) => {
                    // Broken pipe (`| head`) and the like: stop quietly.
                    if e.kind() != io::ErrorKind::BrokenPipe {
                        eprintln!("zk-trace: writing output: {e}");
                    }
                    return ExitCode::FAILURE;
                }
                Err(Failure::Input(msg)) => {
                    eprintln!("zk-trace: {msg}");
                    failed = true;
                }
            }
        }
    }
    if let Err(e) = out.flush() {
        if e.kind() != io::ErrorKind::BrokenPipe {
            eprintln!("zk-trace: writing output: {e}");
        }
        return ExitCode::FAILURE;
    }
    if failed { ExitCode::FAILURE } else { ExitCode::SUCCESS }
}

/// A folder stands for the `*.jsonl` files under it; anything else is a file.
fn expand(path: &Path) -> Result<Vec<PathBuf>, trace::TraceError> {
    if path.is_dir() { trace::jsonl_files_under(path) } else { Ok(vec![path.to_owned()]) }
}

enum Failure {
    /// The trace is unreadable or a frame does not decode.
    Input(String),
    /// stdout failed.
    Output(io::Error),
}

/// Prints each frame as it decodes; stops at the first one that does not,
/// so the output shows how far decoding got.
fn decode_file(path: &Path, out: &mut impl Write) -> Result<(), Failure> {
    let trace = Trace::load(path).map_err(|e| Failure::Input(e.to_string()))?;
    let file = Value::from(path.display().to_string());
    let mut decoder = StreamDecoder::new();
    for entry in &trace.entries {
        let frame = match entry {
            Entry::Frame(frame) => frame,
            Entry::Raw(raw) => {
                let e = TraceDecodeError::Raw { path: path.to_owned(), line: raw.line };
                return Err(Failure::Input(e.to_string()));
            }
            Entry::Close(_) | Entry::Other { .. } => continue,
        };
        let decoded = decoder.decode_frame(path, frame).map_err(|e| Failure::Input(e.to_string()))?;
        let mut record = json::frame_record(frame, &decoded);
        record.insert("file".into(), file.clone());
        record.insert("line".into(), frame.line.into());
        writeln!(out, "{}", Value::Object(record)).map_err(Failure::Output)?;
    }
    Ok(())
}

/// The scenario folders `arg` stands for: itself when it has a
/// `summary.json`, else its sub-folders that have one.
fn scenario_dirs(arg: &Path) -> Result<Vec<PathBuf>, String> {
    if arg.join("summary.json").is_file() {
        return Ok(vec![arg.to_owned()]);
    }
    let entries = std::fs::read_dir(arg).map_err(|e| format!("{}: {e}", arg.display()))?;
    let mut dirs: Vec<PathBuf> =
        entries.filter_map(|e| e.ok().map(|e| e.path())).filter(|p| p.join("summary.json").is_file()).collect();
    dirs.sort();
    if dirs.is_empty() {
        return Err(format!("{}: no summary.json here or in its sub-folders", arg.display()));
    }
    Ok(dirs)
}

fn replay_dirs(args: &[String]) -> ExitCode {
    let config = RecipeReplayConfig::new();
    let (mut scenarios, mut failed) = (0usize, 0usize);
    for arg in args {
        let dirs = match scenario_dirs(Path::new(arg)) {
            Ok(dirs) => dirs,
            Err(msg) => {
                eprintln!("zk-trace: {msg}");
                failed += 1;
                continue;
            }
        };
        for dir in dirs {
            scenarios += 1;
            let name = dir.file_name().map_or_else(|| dir.display().to_string(), |n| n.to_string_lossy().into_owned());
            match replay_scenario_dir(&dir, &config) {
                Ok(report) => {
                    for conn in report.connections() {
                        let file = conn.file.file_name().map(|f| f.to_string_lossy().into_owned()).unwrap_or_default();
                        println!("{name}/{file}: matched {}/{} frames", conn.matched, conn.total);
                    }
                    if report.is_ok() {
                        println!("{name}: OK");
                    } else {
                        failed += 1;
                        for (client, error) in report.errors() {
                            println!("{name}: FAIL (client {client}): {error}");
                        }
                    }
                }
                Err(e) => {
                    failed += 1;
                    println!("{name}: FAIL: {e}");
                }
            }
        }
    }
    if failed == 0 {
        println!("replayed {scenarios} scenario(s): all matched");
        ExitCode::SUCCESS
    } else {
        println!("replayed {scenarios} scenario(s): {failed} failed");
        ExitCode::FAILURE
    }
}
