//! Reader for `zk-trace/1` files: one recorded client TCP connection per file.
//!
//! The format (see `traces/README.md`) is JSON lines: a header line with
//! `"format":"zk-trace/1"`, then one line per frame (`t_us`, `dir`, `hex`, plus
//! the proxy's convenience fields), and finally a `close` event. Only `hex` is
//! authoritative; the convenience fields are kept verbatim in
//! [`Frame::fields`] so tests can cross-check them against a decode.

use std::fmt;
use std::fs;
use std::io;
use std::path::{Path, PathBuf};

use bytes::Bytes;
use serde_json::{Map, Value};

/// The scenarios of the recorded Curator 5.4.0 corpus (`traces/curator-5.4.0`);
/// the tests fail if one goes missing.
pub const CURATOR_SCENARIOS: [&str; 11] = [
    "multilock",
    "mutex-contended",
    "mutex-reconnect",
    "mutex-timeout",
    "mutex-uncontended",
    "revocation",
    "rwlock",
    "semaphore-mutex",
    "semaphore-v2",
    "session-expiry",
    "session-expiry-server",
];

/// The only format this reader understands.
pub const FORMAT: &str = "zk-trace/1";

/// Which way a frame travelled.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Hash)]
pub enum Direction {
    /// Client to server.
    C2s,
    /// Server to client.
    S2c,
}

impl Direction {
    /// The trace spelling: `c2s` or `s2c`.
    pub fn as_str(self) -> &'static str {
        match self {
            Direction::C2s => "c2s",
            Direction::S2c => "s2c",
        }
    }

    /// Parses the trace spelling.
    pub fn parse(s: &str) -> Option<Direction> {
        match s {
            "c2s" => Some(Direction::C2s),
            "s2c" => Some(Direction::S2c),
            _ => None,
        }
    }
}

impl fmt::Display for Direction {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.write_str(self.as_str())
    }
}

/// The first line of a trace file.
#[derive(Debug, Clone, PartialEq)]
pub struct TraceHeader {
    /// Always [`FORMAT`].
    pub format: String,
    /// The server that was recorded, for example `zookeeper 3.8.0`.
    pub server: Option<String>,
    /// The connection label, `<scenario>/<client>`.
    pub client: Option<String>,
    /// UTC wall-clock time the proxy accepted the connection (RFC 3339).
    pub recorded: Option<String>,
    /// 1-based connection number of this client within the scenario.
    pub conn: Option<u64>,
    /// `recorded` as microseconds since the Unix epoch.
    pub t0_unix_us: Option<u64>,
    /// Every field of the header line, including the ones above.
    pub fields: Map<String, Value>,
}

/// One length-delimited frame as recorded by the proxy.
#[derive(Debug, Clone, PartialEq)]
pub struct Frame {
    /// 1-based line number in the trace file.
    pub line: usize,
    /// Microseconds since the proxy set up the connection.
    pub t_us: u64,
    /// Which way the frame went.
    pub dir: Direction,
    /// The payload after the 4-byte length prefix (from `hex`).
    pub payload: Bytes,
    /// Recorded but not forwarded (blackhole partition).
    pub dropped: bool,
    /// The other fields of the line: the proxy's convenience decode.
    pub fields: Map<String, Value>,
}

/// Which side's end-of-stream the proxy saw first.
#[derive(Debug, Clone, PartialEq, Eq)]
pub enum ClosedBy {
    /// The client closed.
    Client,
    /// The server closed.
    Server,
    /// The proxy aborted the connection (drop or partition).
    Proxy,
    /// A value this reader does not know.
    Other(String),
}

impl ClosedBy {
    fn parse(s: &str) -> ClosedBy {
        match s {
            "client" => ClosedBy::Client,
            "server" => ClosedBy::Server,
            "proxy" => ClosedBy::Proxy,
            other => ClosedBy::Other(other.to_owned()),
        }
    }
}

/// The `close` event that ends a trace.
#[derive(Debug, Clone, PartialEq)]
pub struct Close {
    /// 1-based line number in the trace file.
    pub line: usize,
    /// Microseconds since the proxy set up the connection.
    pub t_us: u64,
    /// Who closed first.
    pub by: ClosedBy,
    /// Number of complete client frames the proxy counted.
    pub frames_c2s: Option<u64>,
    /// Number of complete server frames the proxy counted.
    pub frames_s2c: Option<u64>,
    /// Bytes of an incomplete trailing client frame.
    pub partial_c2s: Option<Bytes>,
    /// Bytes of an incomplete trailing server frame.
    pub partial_s2c: Option<Bytes>,
}

/// A chunk of a stream that was not length-framed (`"raw":true`).
#[derive(Debug, Clone, PartialEq)]
pub struct RawChunk {
    /// 1-based line number in the trace file.
    pub line: usize,
    /// Direction, when recorded.
    pub dir: Option<Direction>,
    /// The bytes.
    pub bytes: Bytes,
}

/// One line after the header.
#[derive(Debug, Clone, PartialEq)]
pub enum Entry {
    /// A complete frame.
    Frame(Frame),
    /// The connection closed; always the last entry.
    Close(Close),
    /// Unframed bytes; not decodable as protocol messages.
    Raw(RawChunk),
    /// Any other line (no `hex`, not a close event): not a frame.
    Other {
        /// 1-based line number.
        line: usize,
        /// The line's fields.
        fields: Map<String, Value>,
    },
}

/// A whole trace file.
#[derive(Debug, Clone, PartialEq)]
pub struct Trace {
    /// Where it was read from (used in error messages).
    pub path: PathBuf,
    /// The header line.
    pub header: TraceHeader,
    /// Every later line, in file order.
    pub entries: Vec<Entry>,
}

impl Trace {
    /// Reads and parses a trace file.
    pub fn load(path: impl AsRef<Path>) -> Result<Trace, TraceError> {
        let path = path.as_ref();
        let text = fs::read_to_string(path).map_err(|source| TraceError::Io { path: path.to_owned(), source })?;
        Trace::parse(path, &text)
    }

    /// Parses trace text; `path` only labels errors.
    pub fn parse(path: impl AsRef<Path>, text: &str) -> Result<Trace, TraceError> {
        let path = path.as_ref();
        let mut lines = text.lines().enumerate().map(|(idx, l)| (idx + 1, l)).filter(|(_, l)| !l.trim().is_empty());
        let Some((line, first)) = lines.next() else {
            return Err(TraceError::Empty { path: path.to_owned() });
        };
        let ctx = Ctx { path, line };
        let header = parse_header(&ctx, ctx.object(first)?)?;
        let mut entries = Vec::new();
        let mut closed = false;
        for (line, text) in lines {
            let ctx = Ctx { path, line };
            if closed {
                return Err(TraceError::AfterClose { path: path.to_owned(), line });
            }
            let entry = parse_entry(&ctx, ctx.object(text)?)?;
            closed = matches!(entry, Entry::Close(_));
            entries.push(entry);
        }
        Ok(Trace { path: path.to_owned(), header, entries })
    }

    /// The frames, in recorded order.
    pub fn frames(&self) -> impl Iterator<Item = &Frame> + '_ {
        self.entries.iter().filter_map(|e| match e {
            Entry::Frame(f) => Some(f),
            _ => None,
        })
    }

    /// The close event, if the trace has one.
    pub fn close(&self) -> Option<&Close> {
        self.entries.iter().rev().find_map(|e| match e {
            Entry::Close(c) => Some(c),
            _ => None,
        })
    }
}

/// One scenario folder: a trace per client connection plus `summary.json`.
#[derive(Debug, Clone, PartialEq)]
pub struct Scenario {
    /// The folder name, for example `mutex-contended`.
    pub name: String,
    /// The folder.
    pub dir: PathBuf,
    /// Every `*.jsonl` file, sorted by file name.
    pub traces: Vec<Trace>,
    /// `summary.json`, parsed as plain JSON, when present.
    pub summary: Option<Value>,
}

impl Scenario {
    /// Loads every `*.jsonl` file in `dir` (not recursive), sorted by name.
    pub fn load(dir: impl AsRef<Path>) -> Result<Scenario, TraceError> {
        let dir = dir.as_ref();
        let mut traces = Vec::new();
        for path in jsonl_files_in(dir)? {
            traces.push(Trace::load(&path)?);
        }
        let summary_path = dir.join("summary.json");
        let summary = match fs::read_to_string(&summary_path) {
            Ok(text) => {
                Some(serde_json::from_str(&text).map_err(|source| TraceError::Summary { path: summary_path, source })?)
            }
            Err(e) if e.kind() == io::ErrorKind::NotFound => None,
            Err(source) => return Err(TraceError::Io { path: summary_path, source }),
        };
        let name = dir.file_name().map(|n| n.to_string_lossy().into_owned()).unwrap_or_default();
        Ok(Scenario { name, dir: dir.to_owned(), traces, summary })
    }

    /// Loads every immediate sub-folder of `root` that holds at least one
    /// `*.jsonl` file, sorted by folder name.
    pub fn load_all(root: impl AsRef<Path>) -> Result<Vec<Scenario>, TraceError> {
        let root = root.as_ref();
        let mut dirs = Vec::new();
        for entry in read_dir(root)? {
            if entry.is_dir() && !jsonl_files_in(&entry)?.is_empty() {
                dirs.push(entry);
            }
        }
        dirs.sort();
        dirs.iter().map(Scenario::load).collect()
    }
}

/// The `*.jsonl` files directly in `dir`, sorted.
pub fn jsonl_files_in(dir: &Path) -> Result<Vec<PathBuf>, TraceError> {
    let mut files: Vec<PathBuf> = read_dir(dir)?.into_iter().filter(|p| p.is_file() && is_jsonl(p)).collect();
    files.sort();
    Ok(files)
}

/// Every `*.jsonl` file under `root`, at any depth, sorted by path.
pub fn jsonl_files_under(root: &Path) -> Result<Vec<PathBuf>, TraceError> {
    let mut out = Vec::new();
    let mut stack = vec![root.to_owned()];
    while let Some(dir) = stack.pop() {
        for path in read_dir(&dir)? {
            if path.is_dir() {
                stack.push(path);
            } else if is_jsonl(&path) {
                out.push(path);
            }
        }
    }
    out.sort();
    Ok(out)
}

fn is_jsonl(path: &Path) -> bool {
    path.extension().is_some_and(|e| e == "jsonl")
}

fn read_dir(dir: &Path) -> Result<Vec<PathBuf>, TraceError> {
    let io_err = |source| TraceError::Io { path: dir.to_owned(), source };
    let mut out = Vec::new();
    for entry in fs::read_dir(dir).map_err(io_err)? {
        out.push(entry.map_err(io_err)?.path());
    }
    Ok(out)
}

/// A trace file could not be read or is malformed. Every variant names the
/// file, and the line where one applies.
#[derive(Debug, thiserror::Error)]
#[non_exhaustive]
pub enum TraceError {
    /// The file or folder could not be read.
    #[error("{}: {source}", path.display())]
    Io {
        /// The file or folder.
        path: PathBuf,
        /// The OS error.
        source: io::Error,
    },
    /// The file has no lines at all.
    #[error("{}: empty trace (no header line)", path.display())]
    Empty {
        /// The file.
        path: PathBuf,
    },
    /// A line is not valid JSON.
    #[error("{}:{line}: malformed JSON: {source}", path.display())]
    Json {
        /// The file.
        path: PathBuf,
        /// 1-based line number.
        line: usize,
        /// The parser's complaint.
        source: serde_json::Error,
    },
    /// A line is JSON but not an object.
    #[error("{}:{line}: line is not a JSON object", path.display())]
    NotAnObject {
        /// The file.
        path: PathBuf,
        /// 1-based line number.
        line: usize,
    },
    /// The header names another format.
    #[error("{}:{line}: unknown trace format {format:?} (expected {FORMAT:?})", path.display())]
    UnknownFormat {
        /// The file.
        path: PathBuf,
        /// 1-based line number.
        line: usize,
        /// The format found.
        format: String,
    },
    /// A required field is absent.
    #[error("{}:{line}: missing field {field:?}", path.display())]
    MissingField {
        /// The file.
        path: PathBuf,
        /// 1-based line number.
        line: usize,
        /// The field.
        field: &'static str,
    },
    /// A field has the wrong type or an unknown value.
    #[error("{}:{line}: field {field:?} must be {expected}", path.display())]
    BadField {
        /// The file.
        path: PathBuf,
        /// 1-based line number.
        line: usize,
        /// The field.
        field: &'static str,
        /// What it should have been.
        expected: &'static str,
    },
    /// A hex field does not decode.
    #[error("{}:{line}: bad hex in field {field:?}: {source}", path.display())]
    BadHex {
        /// The file.
        path: PathBuf,
        /// 1-based line number.
        line: usize,
        /// The field.
        field: &'static str,
        /// The decoder's complaint.
        source: hex::FromHexError,
    },
    /// A line follows the close event.
    #[error("{}:{line}: line after the close event", path.display())]
    AfterClose {
        /// The file.
        path: PathBuf,
        /// 1-based line number.
        line: usize,
    },
    /// `summary.json` is not valid JSON.
    #[error("{}: malformed JSON: {source}", path.display())]
    Summary {
        /// The file.
        path: PathBuf,
        /// The parser's complaint.
        source: serde_json::Error,
    },
}

impl TraceError {
    /// The file the error is about.
    pub fn path(&self) -> &Path {
        match self {
            TraceError::Io { path, .. }
            | TraceError::Empty { path }
            | TraceError::Json { path, .. }
            | TraceError::NotAnObject { path, .. }
            | TraceError::UnknownFormat { path, .. }
            | TraceError::MissingField { path, .. }
            | TraceError::BadField { path, .. }
            | TraceError::BadHex { path, .. }
            | TraceError::AfterClose { path, .. }
            | TraceError::Summary { path, .. } => path,
        }
    }

    /// The 1-based line the error is about, when it is about one line.
    pub fn line(&self) -> Option<usize> {
        match self {
            TraceError::Json { line, .. }
            | TraceError::NotAnObject { line, .. }
            | TraceError::UnknownFormat { line, .. }
            | TraceError::MissingField { line, .. }
            | TraceError::BadField { line, .. }
            | TraceError::BadHex { line, .. }
            | TraceError::AfterClose { line, .. } => Some(*line),
            TraceError::Io { .. } | TraceError::Empty { .. } | TraceError::Summary { .. } => None,
        }
    }
}

/// Where a line is, for building errors.
struct Ctx<'a> {
    path: &'a Path,
    line: usize,
}

impl Ctx<'_> {
    fn object(&self, text: &str) -> Result<Map<String, Value>, TraceError> {
        match serde_json::from_str(text) {
            Ok(Value::Object(map)) => Ok(map),
            Ok(_) => Err(TraceError::NotAnObject { path: self.path.to_owned(), line: self.line }),
            Err(source) => Err(TraceError::Json { path: self.path.to_owned(), line: self.line, source }),
        }
    }

    fn missing(&self, field: &'static str) -> TraceError {
        TraceError::MissingField { path: self.path.to_owned(), line: self.line, field }
    }

    fn bad(&self, field: &'static str, expected: &'static str) -> TraceError {
        TraceError::BadField { path: self.path.to_owned(), line: self.line, field, expected }
    }

    fn required<'m>(&self, map: &'m Map<String, Value>, field: &'static str) -> Result<&'m Value, TraceError> {
        map.get(field).ok_or_else(|| self.missing(field))
    }

    fn str<'m>(&self, map: &'m Map<String, Value>, field: &'static str) -> Result<&'m str, TraceError> {
        self.required(map, field)?.as_str().ok_or_else(|| self.bad(field, "a string"))
    }

    fn opt_str(&self, map: &Map<String, Value>, field: &'static str) -> Result<Option<String>, TraceError> {
        match map.get(field) {
            None | Some(Value::Null) => Ok(None),
            Some(Value::String(s)) => Ok(Some(s.clone())),
            Some(_) => Err(self.bad(field, "a string")),
        }
    }

    fn u64(&self, map: &Map<String, Value>, field: &'static str) -> Result<u64, TraceError> {
        self.required(map, field)?.as_u64().ok_or_else(|| self.bad(field, "a non-negative integer"))
    }

    fn opt_u64(&self, map: &Map<String, Value>, field: &'static str) -> Result<Option<u64>, TraceError> {
        match map.get(field) {
            None | Some(Value::Null) => Ok(None),
            Some(v) => v.as_u64().map(Some).ok_or_else(|| self.bad(field, "a non-negative integer")),
        }
    }

    fn bool(&self, map: &Map<String, Value>, field: &'static str) -> Result<bool, TraceError> {
        match map.get(field) {
            None | Some(Value::Null) => Ok(false),
            Some(Value::Bool(b)) => Ok(*b),
            Some(_) => Err(self.bad(field, "a boolean")),
        }
    }

    fn hex(&self, map: &Map<String, Value>, field: &'static str) -> Result<Bytes, TraceError> {
        let text = self.str(map, field)?;
        hex::decode(text).map(Bytes::from).map_err(|source| TraceError::BadHex {
            path: self.path.to_owned(),
            line: self.line,
            field,
            source,
        })
    }

    fn opt_hex(&self, map: &Map<String, Value>, field: &'static str) -> Result<Option<Bytes>, TraceError> {
        match map.get(field) {
            None | Some(Value::Null) => Ok(None),
            Some(_) => self.hex(map, field).map(Some),
        }
    }

    fn dir(&self, map: &Map<String, Value>) -> Result<Direction, TraceError> {
        Direction::parse(self.str(map, "dir")?).ok_or_else(|| self.bad("dir", "\"c2s\" or \"s2c\""))
    }
}

fn parse_header(ctx: &Ctx<'_>, fields: Map<String, Value>) -> Result<TraceHeader, TraceError> {
    let format = ctx.str(&fields, "format")?;
    if format != FORMAT {
        return Err(TraceError::UnknownFormat { path: ctx.path.to_owned(), line: ctx.line, format: format.to_owned() });
    }
    Ok(TraceHeader {
        format: format.to_owned(),
        server: ctx.opt_str(&fields, "server")?,
        client: ctx.opt_str(&fields, "client")?,
        recorded: ctx.opt_str(&fields, "recorded")?,
        conn: ctx.opt_u64(&fields, "conn")?,
        t0_unix_us: ctx.opt_u64(&fields, "t0_unix_us")?,
        fields,
    })
}

fn parse_entry(ctx: &Ctx<'_>, mut fields: Map<String, Value>) -> Result<Entry, TraceError> {
    if let Some(event) = fields.get("event") {
        if event.as_str() == Some("close") {
            return Ok(Entry::Close(Close {
                line: ctx.line,
                t_us: ctx.u64(&fields, "t_us")?,
                by: ClosedBy::parse(ctx.str(&fields, "by")?),
                frames_c2s: ctx.opt_u64(&fields, "frames_c2s")?,
                frames_s2c: ctx.opt_u64(&fields, "frames_s2c")?,
                partial_c2s: ctx.opt_hex(&fields, "partial_c2s")?,
                partial_s2c: ctx.opt_hex(&fields, "partial_s2c")?,
            }));
        }
        return Ok(Entry::Other { line: ctx.line, fields });
    }
    if !fields.contains_key("hex") {
        return Ok(Entry::Other { line: ctx.line, fields });
    }
    if ctx.bool(&fields, "raw")? {
        let dir = match fields.get("dir") {
            None | Some(Value::Null) => None,
            Some(_) => Some(ctx.dir(&fields)?),
        };
        return Ok(Entry::Raw(RawChunk { line: ctx.line, dir, bytes: ctx.hex(&fields, "hex")? }));
    }
    let frame = Frame {
        line: ctx.line,
        t_us: ctx.u64(&fields, "t_us")?,
        dir: ctx.dir(&fields)?,
        payload: ctx.hex(&fields, "hex")?,
        dropped: ctx.bool(&fields, "dropped")?,
        fields: Map::new(),
    };
    for key in ["t_us", "dir", "hex", "dropped"] {
        fields.remove(key);
    }
    Ok(Entry::Frame(Frame { fields, ..frame }))
}

#[cfg(test)]
mod tests {
    use super::*;

    const HEADER: &str = r#"{"format":"zk-trace/1","server":"zookeeper 3.8.0","client":"x/A","conn":1,"t0_unix_us":5}"#;

    fn parse(text: &str) -> Result<Trace, TraceError> {
        Trace::parse("t.jsonl", text)
    }

    #[test]
    fn parses_frames_and_close() {
        let text = format!(
            "{HEADER}\n{}\n{}\n\n{}\n",
            r#"{"t_us":1,"dir":"c2s","hex":"00AB","xid":3}"#,
            r#"{"t_us":2,"dir":"s2c","hex":"","dropped":true}"#,
            r#"{"t_us":3,"event":"close","by":"proxy","frames_c2s":1,"frames_s2c":1,"partial_s2c":"01"}"#
        );
        let trace = parse(&text).unwrap();
        assert_eq!(trace.header.client.as_deref(), Some("x/A"));
        assert_eq!(trace.header.conn, Some(1));
        let frames: Vec<_> = trace.frames().collect();
        assert_eq!(frames.len(), 2);
        assert_eq!(frames[0].payload.as_ref(), &[0x00, 0xab]);
        assert_eq!(frames[0].line, 2);
        assert_eq!(frames[0].fields.get("xid"), Some(&Value::from(3)));
        assert!(!frames[0].fields.contains_key("hex"));
        assert!(frames[1].dropped);
        assert_eq!(frames[1].dir, Direction::S2c);
        let close = trace.close().unwrap();
        assert_eq!(close.line, 5);
        assert_eq!(close.by, ClosedBy::Proxy);
        assert_eq!(close.partial_s2c.as_deref(), Some(&[1u8][..]));
    }

    #[test]
    fn errors_name_file_and_line() {
        let cases = [
            ("{\"format\":\"zk-trace/2\"}", 1, "unknown trace format"),
            ("{\"server\":\"x\"}", 1, "missing field \"format\""),
            (&format!("{HEADER}\n{{\"t_us\":1,\"dir\":\"c2s\",\"hex\":\"0\"}}"), 2, "bad hex"),
            (&format!("{HEADER}\n{{\"t_us\":1,\"dir\":\"c2s\",\"hex\":\"zz\"}}"), 2, "bad hex"),
            (&format!("{HEADER}\n{{\"t_us\":1,\"hex\":\"00\"}}"), 2, "missing field \"dir\""),
            (&format!("{HEADER}\n{{\"t_us\":1,\"dir\":\"up\",\"hex\":\"00\"}}"), 2, "field \"dir\""),
            (&format!("{HEADER}\n{{\"dir\":\"c2s\",\"hex\":\"00\"}}"), 2, "missing field \"t_us\""),
            (&format!("{HEADER}\n\n{{\"t_us\":1,"), 3, "malformed JSON"),
            (&format!("{HEADER}\n[1]"), 2, "not a JSON object"),
            (&format!("{HEADER}\n{{\"t_us\":1,\"event\":\"close\"}}"), 2, "missing field \"by\""),
            (&format!("{HEADER}\n{{\"t_us\":1,\"event\":\"close\",\"by\":\"client\"}}\n{{}}"), 3, "after the close"),
        ];
        for (text, line, needle) in cases {
            let err = parse(text).unwrap_err();
            assert_eq!(err.line(), Some(line), "{text}: {err}");
            let msg = err.to_string();
            assert!(msg.starts_with(&format!("t.jsonl:{line}: ")), "{msg}");
            assert!(msg.contains(needle), "{msg} lacks {needle}");
        }
        assert!(matches!(parse("\n\n"), Err(TraceError::Empty { .. })));
    }

    #[test]
    fn lines_without_hex_are_not_frames() {
        let text = format!("{HEADER}\n{{\"t_us\":1,\"event\":\"note\"}}\n{{\"t_us\":1}}\n");
        let trace = parse(&text).unwrap();
        assert_eq!(trace.frames().count(), 0);
        assert_eq!(trace.entries.len(), 2);
        assert!(trace.close().is_none());
    }
}
