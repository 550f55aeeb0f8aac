//! Validated ZooKeeper paths, parsed once at the API boundary.

use alloc::string::String;
use alloc::sync::Arc;
use core::fmt;

/// Why a path was rejected ([`PathError::problem`]). The rules are ZooKeeper's
/// `PathUtils.validatePath`, which Curator applies to every lock base path.
#[derive(Debug, Clone, PartialEq, Eq, thiserror::Error)]
#[non_exhaustive]
pub enum PathProblem {
    /// The path is empty.
    #[error("path is empty")]
    Empty,
    /// The path does not start with `/`.
    #[error("path must start with '/'")]
    NotAbsolute,
    /// The path ends with `/` (only `/` itself may).
    #[error("path must not end with '/'")]
    TrailingSlash,
    /// Two `/` in a row.
    #[error("empty node name at byte {0}")]
    EmptySegment(usize),
    /// A `.` or `..` segment.
    #[error("relative segment at byte {0}")]
    RelativeSegment(usize),
    /// A character ZooKeeper forbids (control characters, surrogates, specials).
    #[error("invalid character {ch:?} at byte {at}")]
    InvalidChar {
        /// The offending character.
        ch: char,
        /// Its byte offset.
        at: usize,
    },
    /// A child name given to `join` contains `/` or is otherwise not a single segment.
    #[error("invalid node name {0:?}")]
    InvalidName(String),
}

/// A rejected path: the text that was given ([`PathError::path`]) and why
/// ([`PathError::problem`]). Its message names both:
/// `invalid path "no-slash": path must start with '/'`.
#[derive(Debug, Clone, PartialEq, Eq, thiserror::Error)]
#[error("invalid path {path:?}: {problem}")]
pub struct PathError {
    path: String,
    problem: PathProblem,
}

impl PathError {
    /// `path` rejected for `problem`.
    pub fn new(path: &str, problem: PathProblem) -> PathError {
        PathError { path: String::from(path), problem }
    }

    /// The path as it was given.
    pub fn path(&self) -> &str {
        &self.path
    }

    /// Why it was rejected.
    pub fn problem(&self) -> &PathProblem {
        &self.problem
    }
}

/// An absolute ZooKeeper path that the server will accept.
///
/// Immutable and shared: a clone is a reference count, so a lock node's path
/// is one allocation however many records name it (the recipe's, the event
/// that reports it, the handle's hold).
#[derive(Debug, Clone, PartialEq, Eq, PartialOrd, Ord, Hash)]
pub struct ZkPath(Arc<str>);

impl ZkPath {
    /// The root, `/`.
    pub fn root() -> ZkPath {
        ZkPath(Arc::from("/"))
    }

    /// Validates `path` by ZooKeeper's rules.
    ///
    /// ```
    /// use zoolock_core::ZkPath;
    /// assert_eq!(ZkPath::new("/app/lock").unwrap().as_str(), "/app/lock");
    /// assert!(ZkPath::new("app/lock").is_err()); // not absolute
    /// assert!(ZkPath::new("/app/").is_err()); // trailing slash
    /// assert!(ZkPath::new("/app//lock").is_err()); // empty segment
    /// ```
    pub fn new(path: &str) -> Result<ZkPath, PathError> {
        validate(path, false)?;
        Ok(ZkPath(Arc::from(path)))
    }

    /// Validates the path of a sequential create: the server appends digits,
    /// so a trailing `/` is allowed (`/q/` becomes `/q/0000000003`).
    pub fn new_sequential_prefix(path: &str) -> Result<ZkPath, PathError> {
        validate(path, true)?;
        Ok(ZkPath(Arc::from(path)))
    }

    /// The path as text.
    pub fn as_str(&self) -> &str {
        &self.0
    }

    /// True for `/`.
    pub fn is_root(&self) -> bool {
        &*self.0 == "/"
    }

    /// The node a sequential create of `self` made: `self` (a prefix checked
    /// by [`ZkPath::new_sequential_prefix`]) plus the server's counter, which
    /// only it checks (digits, and `-` once the counter has wrapped).
    pub(crate) fn with_sequence(&self, counter: &str) -> Result<ZkPath, PathError> {
        if counter.is_empty() || !counter.bytes().all(|b| b.is_ascii_digit() || b == b'-') {
            let mut path = String::from(&*self.0);
            path.push_str(counter);
            return Err(PathError::new(&path, PathProblem::InvalidName(String::from(counter))));
        }
        let mut s = String::with_capacity(self.0.len() + counter.len());
        s.push_str(&self.0);
        s.push_str(counter);
        Ok(ZkPath(Arc::from(s)))
    }

    /// `self/name`, where `name` is one node name.
    pub fn join(&self, name: &str) -> Result<ZkPath, PathError> {
        if name.is_empty() || name.contains('/') {
            let path = if self.is_root() { alloc::format!("/{name}") } else { alloc::format!("{}/{name}", self.0) };
            return Err(PathError::new(&path, PathProblem::InvalidName(String::from(name))));
        }
        let mut s = String::from(&*self.0);
        if !self.is_root() {
            s.push('/');
        }
        s.push_str(name);
        ZkPath::new(&s)
    }

    /// The parent path; `None` for the root.
    pub fn parent(&self) -> Option<ZkPath> {
        if self.is_root() {
            return None;
        }
        let idx = self.0.rfind('/')?;
        Some(ZkPath(Arc::from(if idx == 0 { "/" } else { self.0.get(..idx)? })))
    }

    /// The last segment (empty for the root).
    pub fn name(&self) -> &str {
        self.0.rsplit('/').next().unwrap_or("")
    }

    /// Every proper ancestor from the top down, excluding `/` (the order in
    /// which Curator's mkdirs checks them).
    pub fn ancestors(&self) -> impl Iterator<Item = &str> {
        self.0.match_indices('/').filter(|(i, _)| *i > 0).filter_map(|(i, _)| self.0.get(..i))
    }
}

impl fmt::Display for ZkPath {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.write_str(&self.0)
    }
}

/// The path's text, shared: no copy is made.
impl From<ZkPath> for Arc<str> {
    fn from(path: ZkPath) -> Arc<str> {
        path.0
    }
}

impl AsRef<str> for ZkPath {
    fn as_ref(&self) -> &str {
        &self.0
    }
}

impl TryFrom<&str> for ZkPath {
    type Error = PathError;
    fn try_from(s: &str) -> Result<Self, PathError> {
        ZkPath::new(s)
    }
}

fn forbidden(c: char) -> bool {
    matches!(c,
        '\u{0000}'..='\u{001f}'
        | '\u{007f}'..='\u{009f}'
        | '\u{e000}'..='\u{f8ff}' // surrogates (D800–DFFF) cannot occur in a str
        | '\u{fff0}'..='\u{ffff}')
}

fn validate(path: &str, sequential: bool) -> Result<(), PathError> {
    check(path, sequential).map_err(|problem| PathError::new(path, problem))
}

fn check(path: &str, sequential: bool) -> Result<(), PathProblem> {
    if path.is_empty() {
        return Err(PathProblem::Empty);
    }
    if !path.starts_with('/') {
        return Err(PathProblem::NotAbsolute);
    }
    if path == "/" {
        return Ok(());
    }
    // A sequential prefix is checked as if the server's digits were appended.
    let trailing_ok = sequential;
    if path.ends_with('/') && !trailing_ok {
        return Err(PathProblem::TrailingSlash);
    }
    let mut start = 1;
    for segment in path.get(1..).unwrap_or("").split('/') {
        let is_last = start + segment.len() >= path.len();
        if segment.is_empty() && !(is_last && trailing_ok) {
            return Err(PathProblem::EmptySegment(start));
        }
        if (segment == "." || segment == "..") && !(is_last && sequential) {
            return Err(PathProblem::RelativeSegment(start));
        }
        // Printable ASCII is never forbidden: a byte scan settles the usual
        // segment without decoding characters.
        if !segment.bytes().all(|b| (0x20..0x7f).contains(&b)) {
            if let Some((off, ch)) = segment.char_indices().find(|(_, c)| forbidden(*c)) {
                return Err(PathProblem::InvalidChar { ch, at: start + off });
            }
        }
        start += segment.len() + 1;
    }
    Ok(())
}

#[cfg(test)]
mod tests {
    use super::*;
    use alloc::string::ToString;

    #[test]
    fn accepts_valid_paths() {
        for p in ["/", "/a", "/a/b", "/locks/_c_0ede14f2-lock-", "/a/.b", "/a/b..", "/zookeeper/config", "/é/ü"] {
            assert_eq!(ZkPath::new(p).map(|z| z.to_string()), Ok(String::from(p)), "{p}");
        }
    }

    #[test]
    fn rejects_invalid_paths() {
        let cases: &[(&str, PathProblem)] = &[
            ("", PathProblem::Empty),
            ("a/b", PathProblem::NotAbsolute),
            ("/a/", PathProblem::TrailingSlash),
            ("/a//b", PathProblem::EmptySegment(3)),
            ("/a/./b", PathProblem::RelativeSegment(3)),
            ("/a/../b", PathProblem::RelativeSegment(3)),
            ("/..", PathProblem::RelativeSegment(1)),
            ("/a\u{0}b", PathProblem::InvalidChar { ch: '\u{0}', at: 2 }),
            ("/a\u{1f}", PathProblem::InvalidChar { ch: '\u{1f}', at: 2 }),
            ("/a\u{7f}", PathProblem::InvalidChar { ch: '\u{7f}', at: 2 }),
            ("/x\u{e000}", PathProblem::InvalidChar { ch: '\u{e000}', at: 2 }),
            ("/x\u{fff0}", PathProblem::InvalidChar { ch: '\u{fff0}', at: 2 }),
        ];
        for (p, err) in cases {
            assert_eq!(ZkPath::new(p), Err(PathError::new(p, err.clone())), "{p:?}");
        }
    }

    #[test]
    fn sequential_prefix_may_end_in_slash() {
        assert!(ZkPath::new_sequential_prefix("/q/").is_ok());
        assert!(ZkPath::new_sequential_prefix("/q/lock-").is_ok());
        assert!(ZkPath::new_sequential_prefix("/q//").is_err());
    }

    #[test]
    fn parent_name_join_ancestors() {
        let p = ZkPath::new("/a/b/c").unwrap();
        assert_eq!(p.parent().unwrap().as_str(), "/a/b");
        assert_eq!(ZkPath::new("/a").unwrap().parent().unwrap().as_str(), "/");
        assert_eq!(ZkPath::root().parent(), None);
        assert_eq!(p.name(), "c");
        assert_eq!(p.join("d").unwrap().as_str(), "/a/b/c/d");
        assert_eq!(ZkPath::root().join("x").unwrap().as_str(), "/x");
        assert!(p.join("x/y").is_err());
        assert!(p.join("").is_err());
        assert!(p.join("..").is_err());
        assert_eq!(p.ancestors().collect::<alloc::vec::Vec<_>>(), ["/a", "/a/b"]);
    }

    #[test]
    fn errors_name_the_path_they_reject() {
        let e = ZkPath::new("no-slash").unwrap_err();
        assert_eq!((e.path(), e.problem()), ("no-slash", &PathProblem::NotAbsolute));
        assert_eq!(e.to_string(), "invalid path \"no-slash\": path must start with '/'");
        let e = ZkPath::new("/a//b").unwrap_err();
        assert_eq!(e.to_string(), "invalid path \"/a//b\": empty node name at byte 3");
        let e = ZkPath::new("/a").unwrap().join("x/y").unwrap_err();
        assert_eq!((e.path(), e.problem()), ("/a/x/y", &PathProblem::InvalidName("x/y".into())));
        assert_eq!(ZkPath::root().join("").unwrap_err().path(), "/");
    }
}
