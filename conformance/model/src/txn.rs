//! Write requests: the checks `PrepRequestProcessor` makes, in its order
//! (which error wins when several apply), then the change to the tree.
//! These run on the live tree for a single request and on a scratch copy
//! for a multi.
//!
//! Check order, by op (first failing check wins):
//!
//! * create / create2 / createContainer / createTTL: flags known
//!   (BadArguments); TTL mode with extended types off (Unimplemented); TTL
//!   valid for the mode (BadArguments); path has a `/` and no NUL
//!   (BadArguments); ACL (InvalidACL); parent exists (NoNode); CREATE on the
//!   parent (NoAuth); sequence suffix appended; full path valid
//!   (BadArguments); target free (NodeExists); parent not ephemeral
//!   (NoChildrenForEphemerals). The opcode, not the flags, makes a container
//!   (19) or a TTL node (21); flags 4 with opcode 1 or 15 make a persistent
//!   node, as in ZooKeeper.
//! * delete: path has a `/`, no NUL, is not `/` or a `/zookeeper` system
//!   node (BadArguments); parent exists (NoNode); DELETE on the parent
//!   (NoAuth); node exists (NoNode); version (BadVersion); no children
//!   (NotEmpty).
//! * setData: path valid (BadArguments); node (NoNode); WRITE (NoAuth);
//!   version (BadVersion).
//! * setACL: path valid; ACL (InvalidACL); node (NoNode); ADMIN (NoAuth);
//!   aversion (BadVersion).
//! * check: path valid; node (NoNode); READ (NoAuth); version (BadVersion).
//!
//! deleteContainer (20) from a client is always BadArguments (see `ops.rs`);
//! the model's own reaper deletes containers directly.

use bytes::Bytes;
use zoolock_wire::{Acl, CreateMode, ErrorCode, Id, OpCode, Perms, Stat};

use super::config::ModelConfig;
use super::tree::{Change, DataTree, Owner, Stamp};
use super::{acl, path};

/// The largest TTL ZooKeeper accepts (`EphemeralType.TTL.maxValue()`).
const MAX_TTL: i64 = 0x0000_FFFF_FFFF_FFFF;

/// Who is writing, and the transaction's zxid and time.
#[derive(Debug, Clone, Copy)]
pub(crate) struct Ctx<'a> {
    pub(crate) session: i64,
    pub(crate) auth: &'a [Id],
    pub(crate) zxid: i64,
    pub(crate) time: i64,
    pub(crate) config: &'a ModelConfig,
}

impl Ctx<'_> {
    fn stamp(&self) -> Stamp {
        Stamp { zxid: self.zxid, time: self.time }
    }

    fn allow(&self, node_acl: &[Acl], perm: Perms) -> Result<(), ErrorCode> {
        acl::check(node_acl, perm, self.auth, self.config.enforce_acls)
    }
}

/// The fields of any create request.
#[derive(Debug, Clone)]
pub(crate) struct CreateArgs<'a> {
    /// CREATE, CREATE2, CREATE_CONTAINER or CREATE_TTL.
    pub(crate) op: OpCode,
    pub(crate) path: &'a str,
    pub(crate) data: Option<Bytes>,
    pub(crate) acl: &'a [Acl],
    pub(crate) flags: CreateMode,
    /// -1 for every opcode but createTTL.
    pub(crate) ttl: i64,
}

fn is_ttl(mode: CreateMode) -> bool {
    matches!(mode, CreateMode::PERSISTENT_WITH_TTL | CreateMode::PERSISTENT_SEQUENTIAL_WITH_TTL)
}

/// A create of any kind. Returns the actual path and the new node's Stat.
pub(crate) fn create(
    tree: &mut DataTree,
    ctx: &Ctx<'_>,
    args: CreateArgs<'_>,
    changes: &mut Vec<Change>,
) -> Result<(String, Stat), ErrorCode> {
    let mode = args.flags;
    if !(0..=6).contains(&mode.0) {
        return Err(ErrorCode::BAD_ARGUMENTS);
    }
    if is_ttl(mode) && !ctx.config.extended_types {
        return Err(ErrorCode::UNIMPLEMENTED);
    }
    let ttl_ok = if is_ttl(mode) { args.ttl > 0 && args.ttl <= MAX_TTL } else { args.ttl < 0 };
    // createTTL with a non-TTL mode is undefined in ZooKeeper; refuse it.
    if !ttl_ok || (args.op == OpCode::CREATE_TTL && !is_ttl(mode)) {
        return Err(ErrorCode::BAD_ARGUMENTS);
    }
    let Some((parent, _)) = path::split(args.path).filter(|_| !args.path.contains('\0')) else {
        return Err(ErrorCode::BAD_ARGUMENTS);
    };
    let acl = acl::fixup(args.acl, ctx.auth)?;
    let parent_node = tree.get(parent).ok_or(ErrorCode::NO_NODE)?;
    ctx.allow(&parent_node.acl, Perms::CREATE)?;
    let full =
        if mode.is_sequential() { format!("{}{:010}", args.path, parent_node.cversion) } else { args.path.to_string() };
    if !path::is_valid(&full) {
        return Err(ErrorCode::BAD_ARGUMENTS);
    }
    if tree.get(&full).is_some() {
        return Err(ErrorCode::NODE_EXISTS);
    }
    if matches!(parent_node.owner, Owner::Ephemeral(_)) {
        return Err(ErrorCode::NO_CHILDREN_FOR_EPHEMERALS);
    }
    let owner = match args.op {
        OpCode::CREATE_CONTAINER => Owner::Container,
        OpCode::CREATE_TTL => Owner::Ttl(args.ttl),
        _ if mode.is_ephemeral() => Owner::Ephemeral(ctx.session),
        _ => Owner::Persistent,
    };
    let stat = tree.create(&full, args.data, acl, owner, ctx.stamp(), changes);
    Ok((full, stat))
}

/// `getParentPathAndValidate`: the parent, unless the path has no `/`, has a
/// NUL, or is one of the system nodes.
fn deletable_parent(p: &str) -> Result<&str, ErrorCode> {
    match path::split(p) {
        Some((parent, _)) if !p.contains('\0') && !path::is_special(p) => Ok(parent),
        _ => Err(ErrorCode::BAD_ARGUMENTS),
    }
}

fn check_version(current: i32, expected: i32) -> Result<i32, ErrorCode> {
    if expected != -1 && expected != current {
        return Err(ErrorCode::BAD_VERSION);
    }
    Ok(current.wrapping_add(1))
}

/// delete (2).
pub(crate) fn delete(
    tree: &mut DataTree,
    ctx: &Ctx<'_>,
    p: &str,
    version: i32,
    changes: &mut Vec<Change>,
) -> Result<(), ErrorCode> {
    let parent = deletable_parent(p)?;
    let parent = tree.get(parent).ok_or(ErrorCode::NO_NODE)?;
    ctx.allow(&parent.acl, Perms::DELETE)?;
    let node = tree.get(p).ok_or(ErrorCode::NO_NODE)?;
    check_version(node.version, version)?;
    if !node.children.is_empty() {
        return Err(ErrorCode::NOT_EMPTY);
    }
    tree.delete(path::key(p), ctx.zxid, changes);
    Ok(())
}

/// setData (5).
pub(crate) fn set_data(
    tree: &mut DataTree,
    ctx: &Ctx<'_>,
    p: &str,
    data: Option<Bytes>,
    version: i32,
    changes: &mut Vec<Change>,
) -> Result<Stat, ErrorCode> {
    if !path::is_valid(p) {
        return Err(ErrorCode::BAD_ARGUMENTS);
    }
    let node = tree.get(p).ok_or(ErrorCode::NO_NODE)?;
    ctx.allow(&node.acl, Perms::WRITE)?;
    let version = check_version(node.version, version)?;
    Ok(tree.set_data(p, data, version, ctx.stamp(), changes))
}

/// setACL (7).
pub(crate) fn set_acl(
    tree: &mut DataTree,
    ctx: &Ctx<'_>,
    p: &str,
    new_acl: &[Acl],
    version: i32,
) -> Result<Stat, ErrorCode> {
    if !path::is_valid(p) {
        return Err(ErrorCode::BAD_ARGUMENTS);
    }
    let new_acl = acl::fixup(new_acl, ctx.auth)?;
    let node = tree.get(p).ok_or(ErrorCode::NO_NODE)?;
    ctx.allow(&node.acl, Perms::ADMIN)?;
    let aversion = check_version(node.aversion, version)?;
    Ok(tree.set_acl(p, new_acl, aversion))
}

/// check (13): a version assertion, inside a multi or (3.8.0) on its own.
pub(crate) fn check(tree: &DataTree, ctx: &Ctx<'_>, p: &str, version: i32) -> Result<(), ErrorCode> {
    if !path::is_valid(p) {
        return Err(ErrorCode::BAD_ARGUMENTS);
    }
    let node = tree.get(p).ok_or(ErrorCode::NO_NODE)?;
    ctx.allow(&node.acl, Perms::READ)?;
    check_version(node.version, version).map(|_| ())
}
