//! Path rules exactly as the server applies them (`PathUtils.validatePath`
//! and the looser checks some ops make before it).

/// `PathUtils.validatePath`: absolute, no empty segment, no trailing slash,
/// no `.` or `..` segment, and none of the characters ZooKeeper forbids.
/// Java checks UTF-16 units, so every character outside the BMP (a surrogate
/// pair there) is rejected too.
pub(crate) fn is_valid(path: &str) -> bool {
    let Some(rest) = path.strip_prefix('/') else {
        return false;
    };
    if rest.is_empty() {
        return true;
    }
    if rest.ends_with('/') {
        return false;
    }
    rest.split('/')
        .all(|segment| !segment.is_empty() && segment != "." && segment != ".." && segment.chars().all(ok_char))
}

fn ok_char(c: char) -> bool {
    !matches!(c,
        '\u{0}'..='\u{1f}'
        | '\u{7f}'..='\u{9f}'
        | '\u{e000}'..='\u{f8ff}' // U+D800–U+DFFF cannot occur in a str
        | '\u{fff0}'..='\u{ffff}'
        | '\u{10000}'..)
}

/// Splits at the last `/`: `("/a", "b")` for `/a/b`, `("", "a")` for `/a`.
/// `None` when there is no slash. The empty parent is the root's alias.
pub(crate) fn split(path: &str) -> Option<(&str, &str)> {
    let idx = path.rfind('/')?;
    Some((&path[..idx], &path[idx + 1..]))
}

/// The tree key of a path: the server keeps the root under both `""` and `/`.
pub(crate) fn key(path: &str) -> &str {
    if path.is_empty() { "/" } else { path }
}

/// The path the server names in a NodeChildrenChanged for `parent`.
pub(crate) fn event_path(parent: &str) -> &str {
    key(parent)
}

/// The four nodes no client may delete (`DataTree.isSpecialPath`).
pub(crate) fn is_special(path: &str) -> bool {
    matches!(path, "/" | "/zookeeper" | "/zookeeper/quota" | "/zookeeper/config")
}

/// The ancestors of `path`, nearest first, ending with `/` (not `path` itself).
pub(crate) fn ancestors(path: &str) -> impl Iterator<Item = &str> {
    let mut cur = Some(path);
    core::iter::from_fn(move || {
        let p = cur?;
        if p == "/" || p.is_empty() {
            cur = None;
            return None;
        }
        let parent = key(split(p)?.0);
        cur = Some(parent);
        Some(parent)
    })
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn validation_follows_path_utils() {
        for ok in ["/", "/a", "/a/b", "/a.b", "/...", "/a/.b", "/zookeeper", "/ü"] {
            assert!(is_valid(ok), "{ok}");
        }
        for bad in
            ["", "a", "/a/", "//", "/a//b", "/.", "/..", "/a/./b", "/a/..", "/a\u{0}", "/\u{1}", "/\u{7f}", "/😀"]
        {
            assert!(!is_valid(bad), "{bad:?}");
        }
    }

    #[test]
    fn ancestors_end_at_root() {
        assert_eq!(ancestors("/a/b/c").collect::<Vec<_>>(), ["/a/b", "/a", "/"]);
        assert_eq!(ancestors("/a").collect::<Vec<_>>(), ["/"]);
        assert_eq!(ancestors("/").count(), 0);
    }
}
