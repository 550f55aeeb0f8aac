//! Lock nodes parsed once, where the server hands their names over: the
//! listing sorts, windows and compares by the parsed form, and our own node's
//! path is validated when the create (or adoption) reply arrives, never again.

use super::*;

/// A child name under a lock path with its sort key and sequence found once.
#[derive(Debug, Clone, PartialEq, Eq)]
pub(crate) struct NodeName {
    text: String,
    /// Where the sort key starts in `text` (the key is a suffix).
    key_at: usize,
    /// Curator's 10-digit sequence suffix, when the key is exactly one.
    sequence: Option<u64>,
}

impl NodeName {
    /// Parses `text` under the recipe's sort key.
    pub(crate) fn parse(text: String, key: SortKey) -> NodeName {
        let key_at = text.len() - key.key(&text).len();
        let sequence = text.get(key_at..).filter(|k| policy::is_sequence_key(k)).and_then(|k| k.parse().ok());
        NodeName { text, key_at, sequence }
    }

    /// Parses a listing and sorts it stably by key, as Curator sorts.
    pub(crate) fn sorted(children: Vec<String>, key: SortKey) -> Vec<NodeName> {
        let mut names: Vec<NodeName> = children.into_iter().map(|c| NodeName::parse(c, key)).collect();
        names.sort_by(|a, b| policy::key_cmp(a.key(), b.key()));
        names
    }

    pub(crate) fn as_str(&self) -> &str {
        &self.text
    }

    /// The sort key: the text after the lock name, or the whole name.
    pub(crate) fn key(&self) -> &str {
        self.text.get(self.key_at..).unwrap_or("")
    }

    /// The sequence number, when the key is Curator's 10-digit suffix: such a
    /// node can only be followed, never preceded, by nodes created later.
    pub(crate) fn sequence(&self) -> Option<u64> {
        self.sequence
    }
}

impl AsRef<str> for NodeName {
    fn as_ref(&self) -> &str {
        &self.text
    }
}

/// Our lock node.
#[derive(Debug, Clone, PartialEq, Eq)]
pub(crate) struct Node {
    pub(crate) path: ZkPath,
    pub(crate) name: NodeName,
    pub(crate) token: FencingToken,
}

impl Node {
    /// Our node at `path`, as the server reported it for the create of
    /// `target` (with the server's sequence suffix when `sequential`). Any
    /// other path, even another valid node under the lock path, is the
    /// server's fault: the reply is not to what was asked.
    pub(crate) fn from_create_reply(
        path: &str,
        target: &ZkPath,
        sequential: bool,
        key: SortKey,
        token: FencingToken,
    ) -> Result<Node, RequestError> {
        let unexpected = RequestError::UnexpectedResponse { op: OpCode::CREATE2 };
        let suffix = path.strip_prefix(target.as_str()).ok_or_else(|| unexpected.clone())?;
        let path = match (sequential, suffix) {
            (false, "") => target.clone(),
            // `%010d` of the parent's counter (negative once it has wrapped).
            (true, counter) if counter.len() >= 10 => target.with_sequence(counter).map_err(|_| unexpected)?,
            _ => return Err(unexpected),
        };
        let name = NodeName::parse(String::from(path.name()), key);
        Ok(Node { path, name, token })
    }

    /// The path as events report it.
    pub(crate) fn path_string(&self) -> String {
        String::from(self.path.as_str())
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::recipes::policy::LOCK_NAME;

    const KEY: SortKey = SortKey::Standard(LOCK_NAME);

    #[test]
    fn names_are_parsed_once_with_key_and_sequence() {
        let n = NodeName::parse(String::from("_c_0f-lock-0000000042"), KEY);
        assert_eq!((n.as_str(), n.key(), n.sequence()), ("_c_0f-lock-0000000042", "0000000042", Some(42)));
        let foreign = NodeName::parse(String::from("readme"), KEY);
        assert_eq!((foreign.key(), foreign.sequence()), ("readme", None));
        let rw = NodeName::parse(String::from("_c_1-__WRIT__0000000007"), SortKey::ReadWrite);
        assert_eq!((rw.key(), rw.sequence()), ("0000000007", Some(7)));
    }

    #[test]
    fn listings_sort_stably_by_key() {
        let children = ["b-lock-0000000002", "zzz", "a-lock-0000000001", "c-lock-0000000001"];
        let sorted = NodeName::sorted(children.iter().map(|c| String::from(*c)).collect(), KEY);
        let names: Vec<&str> = sorted.iter().map(NodeName::as_str).collect();
        assert_eq!(names, ["a-lock-0000000001", "c-lock-0000000001", "b-lock-0000000002", "zzz"]);
    }

    /// A create reply naming any other node than the one asked for is the
    /// server's fault, never a node we adopt (or later delete).
    #[test]
    fn a_reply_path_other_than_the_create_is_refused() {
        let target = &ZkPath::new("/app/lock/_c_0f-lock-").unwrap();
        let ok = Node::from_create_reply("/app/lock/_c_0f-lock-0000000003", target, true, KEY, FencingToken(9));
        let ok = ok.unwrap();
        assert_eq!(
            (ok.path.as_str(), ok.name.sequence(), ok.token),
            ("/app/lock/_c_0f-lock-0000000003", Some(3), FencingToken(9))
        );
        let unexpected = Err(RequestError::UnexpectedResponse { op: OpCode::CREATE2 });
        let lies = [
            "/app/other/_c_0f-lock-0000000003",
            "/app/lock/_c_other-lock-0000000003",
            "/app/lock/_c_0f-lock-",
            "/app/lock/_c_0f-lock-00003",
            "/app/lock/_c_0f-lock-0000000003/x",
            "/app/lock",
            "",
        ];
        for lie in lies {
            assert_eq!(Node::from_create_reply(lie, target, true, KEY, FencingToken(9)), unexpected, "{lie:?}");
        }
        let wrapped = Node::from_create_reply("/app/lock/_c_0f-lock--2147483647", target, true, KEY, FencingToken(9));
        assert_eq!(wrapped.map(|n| n.name.sequence()), Ok(None));
        let fixed = &ZkPath::new("/app/lock/_c_0f-__READ__0000000007").unwrap();
        assert!(Node::from_create_reply(fixed.as_str(), fixed, false, SortKey::ReadWrite, FencingToken(1)).is_ok());
        let extra = "/app/lock/_c_0f-__READ__00000000070000000001";
        assert_eq!(Node::from_create_reply(extra, fixed, false, SortKey::ReadWrite, FencingToken(1)), unexpected);
    }
}
