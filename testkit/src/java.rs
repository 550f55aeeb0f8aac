//! The Curator side of the interop tests (feature `java`), shared by the
//! conformance and CLI tests: compiles `testkit/java/CuratorDriver.java` with
//! `javac` against Debian's jars (`/usr/share/java`, or `ZK_JAVA_DIR`) and
//! drives it over stdin/stdout with its line protocol (see the Java file).
//! Every Curator contender id is its own ZooKeeper session on its own thread.
//!
//! Timestamps are wall-clock microseconds since the Unix epoch, as in the
//! Java driver, so both sides lie on one time line.

use std::collections::HashMap;
use std::hash::{DefaultHasher, Hash, Hasher};
use std::io::{BufRead, BufReader, Write};
use std::path::{Path, PathBuf};
use std::process::{Child, ChildStdin, Command, Stdio};
use std::sync::{Arc, Mutex, OnceLock};
use std::time::{Duration, Instant, SystemTime, UNIX_EPOCH};

use tokio::sync::mpsc;
use tokio::time::timeout;

use crate::in_ci;

/// Longest wait for any single step; generous, failures should not hang.
pub const STEP: Duration = Duration::from_secs(30);
/// The jars named on the classpath; their manifests pull in the rest
/// (netty, jackson, commons-*, ...).
const JARS: &[&str] = &[
    "curator-recipes",
    "curator-framework",
    "curator-client",
    "zookeeper",
    "zookeeper-jute",
    "guava",
    "slf4j-api",
    "slf4j-simple",
];
/// Netty jars added when present (see [`java_setup`]).
const NETTY_JARS: &[&str] = &[
    "netty-handler",
    "netty-codec",
    "netty-transport",
    "netty-buffer",
    "netty-common",
    "netty-resolver",
    "netty-transport-native-unix-common",
    "netty-transport-native-epoll",
];
/// The Java driver's source, compiled on first use.
const DRIVER_SOURCE: &str = include_str!("../java/CuratorDriver.java");

/// Wall-clock microseconds since the Unix epoch (the Java driver's time line).
pub fn now_us() -> i64 {
    let d = SystemTime::now().duration_since(UNIX_EPOCH).expect("clock before 1970");
    i64::try_from(d.as_micros()).expect("clock overflow")
}

/// `f`'s result, or a panic naming `what` after [`STEP`].
pub async fn within<T>(what: &str, f: impl std::future::Future<Output = T>) -> T {
    timeout(STEP, f).await.unwrap_or_else(|_| panic!("{what}: no result within {STEP:?}"))
}

// ---- the Java side -------------------------------------------------------------------

/// Where the compiled driver and its jars are: what [`Java::start`] runs.
pub struct JavaSetup {
    classpath: String,
}

fn java_dir() -> PathBuf {
    PathBuf::from(std::env::var("ZK_JAVA_DIR").unwrap_or_else(|_| "/usr/share/java".into()))
}

fn tool_works(tool: &str) -> Result<(), String> {
    match Command::new(tool).arg("-version").stdout(Stdio::null()).stderr(Stdio::null()).status() {
        Ok(s) if s.success() => Ok(()),
        Ok(s) => Err(format!("`{tool} -version` failed ({s})")),
        Err(e) => Err(format!("{tool} not found ({e})")),
    }
}

/// Finds the jars, checks java/javac, and compiles the driver once per
/// source and jar set (cached under the target folder).
pub fn java_setup() -> &'static Result<JavaSetup, String> {
    static SETUP: OnceLock<Result<JavaSetup, String>> = OnceLock::new();
    SETUP.get_or_init(|| {
        let dir = java_dir();
        let mut jars = Vec::new();
        for jar in JARS {
            let path = dir.join(format!("{jar}.jar"));
            if !path.is_file() {
                return Err(format!("missing {} (scripts/install-deps.sh installs it)", path.display()));
            }
            jars.push(path);
        }
        tool_works("java")?;
        tool_works("javac")?;
        // Netty parts that zookeeper.jar's manifest misses and its TLS
        // client socket (ClientCnxnSocketNetty) needs, where installed.
        jars.extend(NETTY_JARS.iter().map(|j| dir.join(format!("{j}.jar"))).filter(|p| p.is_file()));
        let jar_cp = jars.iter().map(|p| p.display().to_string()).collect::<Vec<_>>().join(":");

        let mut hasher = DefaultHasher::new();
        DRIVER_SOURCE.hash(&mut hasher);
        for jar in &jars {
            jar.hash(&mut hasher);
            if let Ok(meta) = std::fs::metadata(jar) {
                meta.len().hash(&mut hasher);
                meta.modified().ok().hash(&mut hasher);
            }
        }
        let classes = scratch_dir().join(format!("interop-java-{:016x}", hasher.finish()));
        if !classes.join("CuratorDriver.class").is_file() {
            compile(&classes, &jar_cp)?;
        }
        Ok(JavaSetup { classpath: format!("{}:{jar_cp}", classes.display()) })
    })
}

/// Where compiled classes are kept: the target folder's `tmp` (what cargo
/// names `CARGO_TARGET_TMPDIR` for a test crate), found from the running test
/// binary (`<target>/<profile>/deps/<test>`), else the system's temp folder.
fn scratch_dir() -> PathBuf {
    let exe = std::env::current_exe().ok();
    let deps = exe.as_deref().and_then(Path::parent).filter(|d| d.ends_with("deps"));
    match deps.and_then(Path::parent).and_then(Path::parent) {
        Some(target) => target.join("tmp"),
        None => std::env::temp_dir(),
    }
}

/// Compiles into a scratch folder, then renames it into place, so parallel
/// test runs never see a half-written class folder.
fn compile(classes: &Path, jar_cp: &str) -> Result<(), String> {
    let scratch = classes.with_extension(format!("tmp-{}", std::process::id()));
    let _ = std::fs::remove_dir_all(&scratch);
    std::fs::create_dir_all(&scratch).map_err(|e| format!("create {}: {e}", scratch.display()))?;
    let source = scratch.join("CuratorDriver.java");
    std::fs::write(&source, DRIVER_SOURCE).map_err(|e| format!("write {}: {e}", source.display()))?;
    let started = Instant::now();
    let out = Command::new("javac")
        .args(["-nowarn", "-Xlint:-path", "-encoding", "UTF-8", "-cp", jar_cp, "-d"])
        .arg(&scratch)
        .arg(&source)
        .output()
        .map_err(|e| format!("javac: {e}"))?;
    if !out.status.success() {
        let _ = std::fs::remove_dir_all(&scratch);
        // A compile error is our bug, never a reason to skip.
        panic!("javac failed:\n{}{}", String::from_utf8_lossy(&out.stdout), String::from_utf8_lossy(&out.stderr));
    }
    eprintln!("compiled CuratorDriver.java in {:?}", started.elapsed());
    if std::fs::rename(&scratch, classes).is_err() {
        // Another run won the race; its classes are the same.
        let _ = std::fs::remove_dir_all(&scratch);
    }
    if classes.join("CuratorDriver.class").is_file() {
        Ok(())
    } else {
        Err(format!("no CuratorDriver.class in {}", classes.display()))
    }
}

/// One reply of the Java driver, split into words.
pub type Line = Vec<String>;

struct JavaShared {
    stdin: Mutex<Option<ChildStdin>>,
    routes: Mutex<HashMap<String, mpsc::UnboundedSender<Line>>>,
}

impl JavaShared {
    fn send(&self, line: &str) {
        let mut stdin = self.stdin.lock().unwrap();
        let stdin = stdin.as_mut().expect("java driver already closed");
        writeln!(stdin, "{line}").and_then(|()| stdin.flush()).expect("write to the java driver");
    }
}

/// The Curator driver process; killed (after a polite QUIT) on drop.
pub struct Java {
    child: Child,
    shared: Arc<JavaShared>,
    /// Receives the replies without an id (`READY`, `CONNECTED`, `BYE`).
    control: Option<Peer>,
}

impl Java {
    /// Starts the driver and connects its Curator clients to `addr`.
    pub async fn start(java: &JavaSetup, addr: &str) -> Java {
        Java::start_with(java, addr, &[]).await
    }

    /// [`Java::start`] with extra JVM options (`-D...` for ZooKeeper's
    /// client, such as its TLS settings).
    pub async fn start_with(java: &JavaSetup, addr: &str, jvm_options: &[String]) -> Java {
        Java::start_with_session(java, addr, jvm_options, Duration::from_secs(10)).await
    }

    /// [`Java::start_with`] with every Curator session's timeout set to `session`.
    pub async fn start_with_session(java: &JavaSetup, addr: &str, jvm_options: &[String], session: Duration) -> Java {
        Java::start_full(java, addr, jvm_options, session, None).await
    }

    /// [`Java::start`] with every Curator client built with
    /// `.namespace(namespace)`: its paths live under `/namespace`.
    pub async fn start_in_namespace(java: &JavaSetup, addr: &str, namespace: &str) -> Java {
        Java::start_full(java, addr, &[], Duration::from_secs(10), Some(namespace)).await
    }

    async fn start_full(
        java: &JavaSetup,
        addr: &str,
        jvm_options: &[String],
        session: Duration,
        namespace: Option<&str>,
    ) -> Java {
        let mut child = Command::new("java")
            .args(jvm_options)
            .args([
                "-Xmx256m",
                "-XX:+UseSerialGC",
                "-XX:TieredStopAtLevel=1",
                "-Djava.net.preferIPv4Stack=true",
                "-Dorg.slf4j.simpleLogger.defaultLogLevel=warn",
                // Closing a session logs a harmless EndOfStreamException.
                "-Dorg.slf4j.simpleLogger.log.org.apache.zookeeper.ClientCnxn=error",
                "-cp",
                &java.classpath,
                "CuratorDriver",
            ])
            .stdin(Stdio::piped())
            .stdout(Stdio::piped())
            .stderr(Stdio::piped())
            .spawn()
            .expect("start java");
        let stdout = child.stdout.take().expect("stdout");
        let stderr = child.stderr.take().expect("stderr");
        let shared = Arc::new(JavaShared { stdin: Mutex::new(child.stdin.take()), routes: Mutex::new(HashMap::new()) });
        let mut java = Java { child, shared, control: None };
        let mut control = java.peer("_");

        let reader_shared = java.shared.clone();
        std::thread::spawn(move || {
            for line in BufReader::new(stdout).lines() {
                let Ok(line) = line else { break };
                let words: Line = line.split_whitespace().map(str::to_owned).collect();
                let id = words.get(1).cloned().unwrap_or_default();
                let sent = reader_shared.routes.lock().unwrap().get(&id).map(|tx| tx.send(words).is_ok());
                if sent != Some(true) {
                    eprintln!("[java] unrouted: {line}");
                }
            }
            // EOF: every waiting peer learns that the driver is gone.
            reader_shared.routes.lock().unwrap().clear();
        });
        std::thread::spawn(move || {
            for line in BufReader::new(stderr).lines().map_while(Result::ok) {
                eprintln!("[java] {line}");
            }
        });

        control.expect("READY").await;
        let namespace = namespace.map(|ns| format!(" {ns}")).unwrap_or_default();
        java.shared.send(&format!("CONNECT {addr} {}{namespace}", session.as_millis()));
        control.expect("CONNECTED").await;
        java.control = Some(control);
        java
    }

    /// Sends one command line as is (for an id whose [`Peer`] is busy
    /// reading elsewhere).
    pub fn send(&self, line: &str) {
        self.shared.send(line);
    }

    /// A Curator contender (or a one-shot requester) with its own reply queue.
    pub fn peer(&self, id: &str) -> Peer {
        let (tx, rx) = mpsc::unbounded_channel();
        let old = self.shared.routes.lock().unwrap().insert(id.to_owned(), tx);
        assert!(old.is_none(), "java peer id {id} used twice");
        Peer { id: id.to_owned(), shared: self.shared.clone(), rx }
    }
}

impl Drop for Java {
    fn drop(&mut self) {
        if let Some(mut stdin) = self.shared.stdin.lock().unwrap_or_else(|e| e.into_inner()).take() {
            let _ = writeln!(stdin, "QUIT");
        }
        let deadline = Instant::now() + Duration::from_secs(5);
        loop {
            match self.child.try_wait() {
                Ok(Some(_)) => return,
                Ok(None) if Instant::now() < deadline => std::thread::sleep(Duration::from_millis(20)),
                _ => break,
            }
        }
        let _ = self.child.kill();
        let _ = self.child.wait();
    }
}

/// One id on the Java side.
pub struct Peer {
    /// The id the Java side knows it by.
    pub id: String,
    shared: Arc<JavaShared>,
    rx: mpsc::UnboundedReceiver<Line>,
}

impl Peer {
    /// Sends `verb <id> args`.
    pub fn send(&self, verb: &str, args: &str) {
        self.shared.send(&format!("{verb} {} {args}", self.id));
    }

    /// The next reply within [`STEP`]; an `ERROR` reply panics.
    pub async fn next(&mut self) -> Line {
        let words =
            self.next_or_error(STEP).await.unwrap_or_else(|| panic!("java {}: no result within {STEP:?}", self.id));
        assert_ne!(words[0], "ERROR", "java {}: {}", self.id, words.join(" "));
        words
    }

    /// The next reply within `bound`, `ERROR` included: for callers that
    /// expect Curator to fail or to block for a while now and then (faults).
    pub async fn next_or_error(&mut self, bound: Duration) -> Option<Line> {
        let words = timeout(bound, self.rx.recv()).await.ok()?;
        Some(words.unwrap_or_else(|| panic!("java {}: the driver exited", self.id)))
    }

    /// A reply that is already there, if any.
    pub fn try_next(&mut self) -> Option<Line> {
        self.rx.try_recv().ok()
    }

    /// The next reply, which must start with `word`.
    pub async fn expect(&mut self, word: &str) -> Line {
        let words = self.next().await;
        assert_eq!(words[0], word, "java {}: expected {word}, got {}", self.id, words.join(" "));
        words
    }

    /// Word `i` of a reply, as a time in microseconds.
    pub fn micros(words: &Line, i: usize) -> i64 {
        words[i].parse().unwrap_or_else(|_| panic!("bad time in {}", words.join(" ")))
    }

    /// Sends an acquire; use [`Peer::acquired`] for the reply.
    pub fn start_acquire(&self, verb: &str, args: &str) {
        self.send(verb, args);
    }

    /// The reply to an acquire: `Some((node, enter))`, or `None` on timeout.
    pub async fn acquired(&mut self) -> Option<(String, i64)> {
        let words = self.next().await;
        match words[0].as_str() {
            "ACQUIRED" => Some((words[2].clone(), Self::micros(&words, 3))),
            "TIMEOUT" => None,
            _ => panic!("java {}: expected ACQUIRED or TIMEOUT, got {}", self.id, words.join(" ")),
        }
    }

    /// Acquires with `verb` and waits for it: `(node, enter)`.
    pub async fn acquire(&mut self, verb: &str, args: &str) -> (String, i64) {
        self.start_acquire(verb, args);
        self.acquired().await.unwrap_or_else(|| panic!("java {}: {verb} timed out", self.id))
    }

    /// Releases; returns (exit, done): just before release() and after it.
    pub async fn release(&mut self, verb: &str) -> (i64, i64) {
        self.send(verb, "");
        self.released().await
    }

    /// The reply to a release: (exit, done).
    pub async fn released(&mut self) -> (i64, i64) {
        let words = self.expect("RELEASED").await;
        (Self::micros(&words, 2), Self::micros(&words, 3))
    }

    /// Curator's participant nodes of the `kind` recipe on `path`.
    pub async fn participants(&mut self, kind: &str, path: &str) -> Vec<String> {
        self.send("PARTICIPANTS", &format!("{kind} {path}"));
        let words = self.expect("NODES").await;
        let n: usize = words[2].parse().unwrap();
        assert_eq!(words.len(), n + 3, "{}", words.join(" "));
        words[3..].to_vec()
    }
}

/// The Java setup, or `None` (with the reason printed) to skip `test`; with
/// `CI` set a missing toolchain or jar fails instead.
pub fn java_or_skip(test: &str) -> Option<&'static JavaSetup> {
    match java_setup() {
        Ok(java) => Some(java),
        Err(reason) if in_ci() => panic!("{test}: {reason} (CI is set: .ci/run installs java and the jars)"),
        Err(reason) => {
            eprintln!("skipped {test}: {reason}");
            None
        }
    }
}
