//! Our lock node, checked once where the server hands it over: its path is
//! validated when the create (or adoption) reply arrives, never again. Its
//! name is the path's last component, not a second copy.

use super::*;

/// Our lock node.
#[derive(Debug, Clone, PartialEq, Eq)]
pub(crate) struct Node {
    pub(crate) path: ZkPath,
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
        Ok(Node { path, token })
    }

    /// Our node's name under the lock path, as listings spell it.
    pub(crate) fn name(&self) -> &str {
        self.path.name()
    }

    /// The path as every event that names our node reports it: shared, not
    /// copied, so a held node's path is one allocation for the recipe and
    /// the hold.
    pub(crate) fn shared_path(&self) -> alloc::sync::Arc<str> {
        self.path.clone().into()
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::recipes::policy::LOCK_NAME;

    const KEY: SortKey = SortKey::curator(LOCK_NAME);

    /// A create reply naming any other node than the one asked for is the
    /// server's fault, never a node we adopt (or later delete).
    #[test]
    fn a_reply_path_other_than_the_create_is_refused() {
        // The node's name, parsed as a listing parses it.
        let sequence = |node: &Node| NodeName::parse(String::from(node.name()), &KEY).sequence();
        let target = &ZkPath::new("/app/lock/_c_0f-lock-").unwrap();
        let ok = Node::from_create_reply("/app/lock/_c_0f-lock-0000000003", target, true, FencingToken(9));
        let ok = ok.unwrap();
        assert_eq!(
            (ok.path.as_str(), sequence(&ok), ok.token),
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
            assert_eq!(Node::from_create_reply(lie, target, true, FencingToken(9)), unexpected, "{lie:?}");
        }
        let wrapped = Node::from_create_reply("/app/lock/_c_0f-lock--2147483647", target, true, FencingToken(9));
        assert_eq!(wrapped.map(|n| sequence(&n)), Ok(None));
        let fixed = &ZkPath::new("/app/lock/_c_0f-__READ__0000000007").unwrap();
        assert!(Node::from_create_reply(fixed.as_str(), fixed, false, FencingToken(1)).is_ok());
        let extra = "/app/lock/_c_0f-__READ__00000000070000000001";
        assert_eq!(Node::from_create_reply(extra, fixed, false, FencingToken(1)), unexpected);
    }
}
