//! [`Op`]: a ZooKeeper request whose paths have been validated.

use alloc::string::String;
use alloc::vec::Vec;

use bytes::Bytes;
use zoolock_wire::{
    Acl, CheckVersionRequest, CreateMode, CreateRequest, DeleteRequest, OpCode, PathRequest, PathWatchRequest, Request,
    SetAclRequest, SetDataRequest, WatcherType, WatchesRequest,
};

use crate::error::ApiMisuse;
use crate::path::ZkPath;

/// A request a user or recipe may submit. Built from [`ZkPath`]s, or checked by
/// [`Op::from_request`], so every path it carries is valid. Session plumbing
/// (ping, auth, setWatches, closeSession) cannot be expressed.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct Op(Request);

/// What kind of watch a read leaves, decided by the op and its result.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub(crate) enum WatchRead {
    /// exists: a data watch if the node exists, else an exist watch.
    Exists,
    /// getData: a data watch if the node exists.
    Data,
    /// getChildren / getChildren2: a child watch if the node exists.
    Children,
}

impl Op {
    /// create2 (15): the reply carries the new node's Stat (czxid = fencing token).
    pub fn create(path: &ZkPath, data: Bytes, acl: Vec<Acl>, mode: CreateMode) -> Op {
        Op(Request::Create2(CreateRequest { path: String::from(path.as_str()), data: Some(data), acl, flags: mode }))
    }

    /// createContainer (19), with flags 4.
    pub fn create_container(path: &ZkPath, data: Bytes, acl: Vec<Acl>) -> Op {
        Op(Request::CreateContainer(CreateRequest {
            path: String::from(path.as_str()),
            data: Some(data),
            acl,
            flags: CreateMode::CONTAINER,
        }))
    }

    /// delete (2); `None` deletes any version.
    pub fn delete(path: &ZkPath, version: Option<i32>) -> Op {
        Op(Request::Delete(DeleteRequest { path: String::from(path.as_str()), version: version.unwrap_or(-1) }))
    }

    /// exists (3).
    pub fn exists(path: &ZkPath, watch: bool) -> Op {
        Op(Request::Exists(PathWatchRequest { path: String::from(path.as_str()), watch }))
    }

    /// getData (4).
    pub fn get_data(path: &ZkPath, watch: bool) -> Op {
        Op(Request::GetData(PathWatchRequest { path: String::from(path.as_str()), watch }))
    }

    /// setData (5); `None` writes any version.
    pub fn set_data(path: &ZkPath, data: Bytes, version: Option<i32>) -> Op {
        Op(Request::SetData(SetDataRequest {
            path: String::from(path.as_str()),
            data: Some(data),
            version: version.unwrap_or(-1),
        }))
    }

    /// getChildren2 (12): names plus the parent's Stat.
    pub fn get_children(path: &ZkPath, watch: bool) -> Op {
        Op(Request::GetChildren2(PathWatchRequest { path: String::from(path.as_str()), watch }))
    }

    /// getChildren (8): names only (Curator's protected-create lookup uses it).
    pub fn get_children_names(path: &ZkPath, watch: bool) -> Op {
        Op(Request::GetChildren(PathWatchRequest { path: String::from(path.as_str()), watch }))
    }

    /// sync (9).
    pub fn sync(path: &ZkPath) -> Op {
        Op(Request::Sync(PathRequest { path: String::from(path.as_str()) }))
    }

    /// getACL (6).
    pub fn get_acl(path: &ZkPath) -> Op {
        Op(Request::GetAcl(PathRequest { path: String::from(path.as_str()) }))
    }

    /// setACL (7); `None` matches any ACL version.
    pub fn set_acl(path: &ZkPath, acl: Vec<Acl>, version: Option<i32>) -> Op {
        Op(Request::SetAcl(SetAclRequest { path: String::from(path.as_str()), acl, version: version.unwrap_or(-1) }))
    }

    /// checkWatches (17).
    pub fn check_watches(path: &ZkPath, kind: WatcherType) -> Op {
        Op(Request::CheckWatches(WatchesRequest { path: String::from(path.as_str()), watcher_type: kind }))
    }

    /// removeWatches (18).
    pub fn remove_watches(path: &ZkPath, kind: WatcherType) -> Op {
        Op(Request::RemoveWatches(WatchesRequest { path: String::from(path.as_str()), watcher_type: kind }))
    }

    /// check (13), for use inside [`Op::multi`].
    pub fn check(path: &ZkPath, version: i32) -> Op {
        Op(Request::Check(CheckVersionRequest { path: String::from(path.as_str()), version }))
    }

    /// multi (14): the ops run atomically. Only create, delete, setData and
    /// check may appear.
    pub fn multi(ops: Vec<Op>) -> Result<Op, ApiMisuse> {
        let ops: Vec<Request> = ops.into_iter().map(|o| o.0).collect();
        Op::from_request(Request::Multi(ops))
    }

    /// Checks a raw request: every path valid, no session plumbing, multi
    /// holding only ops allowed there.
    pub fn from_request(request: Request) -> Result<Op, ApiMisuse> {
        check_request(&request, None)?;
        Ok(Op(request))
    }

    /// The request as it goes on the wire (before the chroot is applied).
    pub fn request(&self) -> &Request {
        &self.0
    }

    /// The opcode.
    pub fn op_code(&self) -> OpCode {
        self.0.op_code()
    }

    pub(crate) fn into_request(self) -> Request {
        self.0
    }

    /// The watch this op asks for, if any.
    pub(crate) fn watch(&self) -> Option<(WatchRead, &str)> {
        match &self.0 {
            Request::Exists(r) if r.watch => Some((WatchRead::Exists, &r.path)),
            Request::GetData(r) if r.watch => Some((WatchRead::Data, &r.path)),
            Request::GetChildren(r) | Request::GetChildren2(r) if r.watch => Some((WatchRead::Children, &r.path)),
            _ => None,
        }
    }
}

fn check_path(path: &str, sequential: bool) -> Result<(), ApiMisuse> {
    if sequential {
        ZkPath::new_sequential_prefix(path)?
    } else {
        ZkPath::new(path)?
    };
    Ok(())
}

fn check_request(request: &Request, inside: Option<OpCode>) -> Result<(), ApiMisuse> {
    let op = request.op_code();
    match request {
        Request::Create(r) | Request::Create2(r) | Request::CreateContainer(r) => {
            check_path(&r.path, r.flags.is_sequential())?
        }
        Request::CreateTtl(r) => check_path(&r.path, r.flags.is_sequential())?,
        Request::Multi(ops) | Request::MultiRead(ops) => {
            if inside.is_some() {
                return Err(ApiMisuse::ReservedOp(op));
            }
            for inner in ops {
                let allowed = match op {
                    OpCode::MULTI_READ => matches!(inner, Request::GetData(_) | Request::GetChildren(_)),
                    _ => matches!(
                        inner,
                        Request::Create(_)
                            | Request::Create2(_)
                            | Request::CreateContainer(_)
                            | Request::CreateTtl(_)
                            | Request::Delete(_)
                            | Request::SetData(_)
                            | Request::Check(_)
                    ),
                };
                if !allowed {
                    return Err(ApiMisuse::ReservedOp(inner.op_code()));
                }
                check_request(inner, Some(op))?;
            }
        }
        Request::Ping
        | Request::Auth(_)
        | Request::SetWatches(_)
        | Request::SetWatches2(_)
        | Request::Sasl(_)
        | Request::CloseSession
        | Request::DeleteContainer(_) => return Err(ApiMisuse::ReservedOp(op)),
        Request::GetEphemerals(r) => {
            // A prefix, not a node: "/" and "/a/pre" are both fine.
            if !r.path.starts_with('/') {
                return Err(ApiMisuse::InvalidPath(crate::PathError::new(&r.path, crate::PathProblem::NotAbsolute)));
            }
        }
        Request::WhoAmI | Request::Reconfig(_) => {}
        other => {
            if let Some(path) = other.path() {
                check_path(path, false)?;
            }
        }
    }
    Ok(())
}

/// Prefixes a client path with the chroot (`/` maps to the chroot itself).
pub(crate) fn to_server_path(chroot: Option<&str>, path: &str) -> String {
    match chroot {
        None => String::from(path),
        Some(root) if path == "/" => String::from(root),
        Some(root) => {
            let mut s = String::with_capacity(root.len() + path.len());
            s.push_str(root);
            s.push_str(path);
            s
        }
    }
}

/// Strips the chroot from a server path; paths outside it pass unchanged.
pub(crate) fn to_client_path(chroot: Option<&str>, path: &str) -> String {
    match chroot {
        Some(root) if path == root => String::from("/"),
        Some(root) => match path.strip_prefix(root) {
            Some(rest) if rest.starts_with('/') => String::from(rest),
            _ => String::from(path),
        },
        None => String::from(path),
    }
}

/// Applies the chroot to every path a request carries.
pub(crate) fn apply_chroot(request: &mut Request, chroot: &str) {
    let fix = |p: &mut String| *p = to_server_path(Some(chroot), p);
    match request {
        Request::Create(r) | Request::Create2(r) | Request::CreateContainer(r) => fix(&mut r.path),
        Request::CreateTtl(r) => fix(&mut r.path),
        Request::Delete(r) => fix(&mut r.path),
        Request::Exists(r) | Request::GetData(r) | Request::GetChildren(r) | Request::GetChildren2(r) => {
            fix(&mut r.path)
        }
        Request::SetData(r) => fix(&mut r.path),
        Request::GetAcl(r)
        | Request::Sync(r)
        | Request::DeleteContainer(r)
        | Request::GetEphemerals(r)
        | Request::GetAllChildrenNumber(r) => fix(&mut r.path),
        Request::SetAcl(r) => fix(&mut r.path),
        Request::Check(r) => fix(&mut r.path),
        Request::CheckWatches(r) | Request::RemoveWatches(r) => fix(&mut r.path),
        Request::AddWatch(r) => fix(&mut r.path),
        Request::Multi(ops) | Request::MultiRead(ops) => ops.iter_mut().for_each(|op| apply_chroot(op, chroot)),
        // No paths, or paths the session builds itself in server form.
        _ => {}
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn chroot_round_trip() {
        assert_eq!(to_server_path(Some("/app"), "/"), "/app");
        assert_eq!(to_server_path(Some("/app"), "/x/y"), "/app/x/y");
        assert_eq!(to_client_path(Some("/app"), "/app"), "/");
        assert_eq!(to_client_path(Some("/app"), "/app/x"), "/x");
        assert_eq!(to_client_path(Some("/app"), "/apple"), "/apple");
        assert_eq!(to_client_path(Some("/app"), "/zookeeper/config"), "/zookeeper/config");
        assert_eq!(to_client_path(None, "/a"), "/a");
    }

    #[test]
    fn from_request_rejects_plumbing_and_bad_paths() {
        assert_eq!(Op::from_request(Request::Ping), Err(ApiMisuse::ReservedOp(OpCode::PING)));
        assert_eq!(Op::from_request(Request::CloseSession), Err(ApiMisuse::ReservedOp(OpCode::CLOSE_SESSION)));
        let bad = Request::GetData(PathWatchRequest { path: "/a/".into(), watch: false });
        assert!(matches!(Op::from_request(bad), Err(ApiMisuse::InvalidPath(_))));
        let nested =
            Request::Multi(alloc::vec![Request::GetData(PathWatchRequest { path: "/a".into(), watch: false })]);
        assert_eq!(Op::from_request(nested), Err(ApiMisuse::ReservedOp(OpCode::GET_DATA)));
        let seq = Request::Create(CreateRequest {
            path: "/q/".into(),
            data: None,
            acl: Acl::open_unsafe(),
            flags: CreateMode::PERSISTENT_SEQUENTIAL,
        });
        assert!(Op::from_request(seq).is_ok());
    }
}
