//! `zk-trace`: decode recorded ZooKeeper traces (`zk-trace/1`) to JSON lines.

use std::io::{self, BufWriter, Write};
use std::path::{Path, PathBuf};
use std::process::ExitCode;

use serde_json::Value;
use zoolock_conformance::trace::{self, Entry};
use zoolock_conformance::{StreamDecoder, Trace, TraceDecodeError, json};

const USAGE: &str = "\
zk-trace: decode recorded ZooKeeper client traffic (format zk-trace/1)

USAGE:
    zk-trace decode FILE|DIR...
    zk-trace --help

COMMANDS:
    decode    Decode every frame of each trace file and print one JSON object
              per frame (stdout), with \"file\" and \"line\" naming its source.
              Each file is one connection and is decoded on its own; a folder
              stands for the *.jsonl files under it (sorted).

Exits 1 if a file cannot be read or parsed, or if any frame does not decode
completely (trailing bytes included); the message names the file and line.
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
        let decoded = decoder.decode(frame.dir, &frame.payload).map_err(|error| {
            let e = TraceDecodeError::Frame { path: path.to_owned(), line: frame.line, dir: frame.dir, error };
            Failure::Input(e.to_string())
        })?;
        let mut record = json::frame_record(frame, &decoded);
        record.insert("file".into(), file.clone());
        record.insert("line".into(), frame.line.into());
        writeln!(out, "{}", Value::Object(record)).map_err(Failure::Output)?;
    }
    Ok(())
}
