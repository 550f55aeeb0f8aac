//! Requests after the handshake: the header, opcode dispatch, the reads
//! (as `FinalRequestProcessor` answers them), auth, watches, sessions.
//! Writes go through `txn.rs`, multi through `multi.rs`.
//!
//! Reads: exists rejects a path with a NUL (BadArguments), sets its watch
//! whether or not the node exists, and checks no ACL. getData,
//! getChildren, getChildren2, getACL and getAllChildrenNumber look the node
//! up (NoNode), check the ACL (NoAuth), and only then set a watch.

use bytes::Bytes;
use zoolock_core::Instant;
use zoolock_wire::{
    AddWatchMode, DecodeError, DecodeErrorKind, ErrorCode, EventType, OpCode, Perms, Request, RequestHeader, Response,
    SetWatches, SetWatches2, Stat, WatcherType, Xid,
};

use super::acl::{self, AuthOutcome};
use super::config::StandaloneCheck;
use super::tree::{Change, DataTree, Node};
use super::txn::{self, CreateArgs, Ctx};
use super::watches::{Fired, Watches};
use super::{CloseReason, ConnId, ZkModel};

/// setWatches (101) as the setWatches2 (105) it is: one without persistent
/// watches.
fn as_set_watches2(w: SetWatches) -> SetWatches2 {
    SetWatches2 {
        relative_zxid: w.relative_zxid,
        data_watches: w.data_watches,
        exist_watches: w.exist_watches,
        child_watches: w.child_watches,
        ..SetWatches2::default()
    }
}

/// How setWatches catches up a data or a child watch: the zxid it compares
/// with relativeZxid, the event when that is newer, and how it re-arms.
struct CatchUp {
    zxid: fn(&Node) -> i64,
    changed: EventType,
    rearm: fn(&mut Watches, &str, ConnId),
}

const DATA_CATCH_UP: CatchUp =
    CatchUp { zxid: |n| n.mzxid, changed: EventType::NODE_DATA_CHANGED, rearm: Watches::add_data };
const CHILD_CATCH_UP: CatchUp =
    CatchUp { zxid: |n| n.pzxid, changed: EventType::NODE_CHILDREN_CHANGED, rearm: Watches::add_child };

impl ZkModel {
    /// Whether the server runs `op` through its pipeline
    /// (`Request.isValid`, minus what the model leaves out).
    fn serves(&self, op: OpCode) -> bool {
        match op {
            OpCode::CHECK => self.config.standalone_check == StandaloneCheck::Unanswered,
            OpCode::CREATE
            | OpCode::DELETE
            | OpCode::EXISTS
            | OpCode::GET_DATA
            | OpCode::SET_DATA
            | OpCode::GET_ACL
            | OpCode::SET_ACL
            | OpCode::GET_CHILDREN
            | OpCode::SYNC
            | OpCode::PING
            | OpCode::GET_CHILDREN2
            | OpCode::MULTI
            | OpCode::CREATE2
            | OpCode::RECONFIG
            | OpCode::CHECK_WATCHES
            | OpCode::REMOVE_WATCHES
            | OpCode::CREATE_CONTAINER
            | OpCode::DELETE_CONTAINER
            | OpCode::CREATE_TTL
            | OpCode::MULTI_READ
            | OpCode::SET_WATCHES
            | OpCode::GET_EPHEMERALS
            | OpCode::GET_ALL_CHILDREN_NUMBER
            | OpCode::SET_WATCHES2
            | OpCode::ADD_WATCH
            | OpCode::WHO_AM_I
            | OpCode::CLOSE_SESSION => true,
            _ => false,
        }
    }

    /// One request frame from a connection bound to `session`.
    pub(crate) fn request(&mut self, now: Instant, conn: ConnId, session: i64, frame: Bytes) {
        let (Some(head), Some(body)) = (frame.get(..RequestHeader::LEN), frame.get(RequestHeader::LEN..)) else {
            let e = DecodeError { kind: DecodeErrorKind::Truncated, offset: frame.len() };
            return self.close(conn, CloseReason::Malformed(e));
        };
        let xid = Xid(i32::from_be_bytes([head[0], head[1], head[2], head[3]]));
        let op = OpCode(i32::from_be_bytes([head[4], head[5], head[6], head[7]]));
        if op == OpCode::AUTH {
            return self.auth(conn, xid, body);
        }
        if !self.serves(op) {
            return self.unimplemented(conn, xid, op);
        }
        let request = match Request::decode(op, body) {
            Ok(request) => request,
            Err(_) => {
                // A multi takes its zxid before its body is read.
                if op == OpCode::MULTI {
                    self.next_zxid();
                }
                return self.reply(conn, xid, Err(ErrorCode::MARSHALLING_ERROR));
            }
        };
        self.execute(now, conn, session, xid, request);
        if let Some(max) = self.config.max_watches {
            if self.watches.count(conn) > max {
                self.close(conn, CloseReason::TooManyWatches(max));
            }
        }
    }

    /// Unimplemented, stamped zxid -1 (the request never got one), then close.
    fn unimplemented(&mut self, conn: ConnId, xid: Xid, op: OpCode) {
        self.send_reply(conn, xid, -1, ErrorCode::UNIMPLEMENTED, None);
        self.close(conn, CloseReason::Unimplemented(op));
    }

    fn execute(&mut self, now: Instant, conn: ConnId, session: i64, xid: Xid, request: Request) {
        let op = request.op_code();
        let result = match request {
            Request::Ping => {
                let zxid = self.zxid;
                return self.send_reply(conn, Xid::PING, zxid, ErrorCode::OK, None);
            }
            Request::Create(r) => self.write(now, conn, session, |tree, ctx, changes| {
                let args = CreateArgs::new(OpCode::CREATE, &r, -1);
                txn::create(tree, ctx, args, changes).map(|(path, _)| Response::Path(path))
            }),
            Request::Create2(r) => self.write(now, conn, session, |tree, ctx, changes| {
                let args = CreateArgs::new(OpCode::CREATE2, &r, -1);
                txn::create(tree, ctx, args, changes).map(|(path, stat)| Response::Create2 { path, stat })
            }),
            Request::CreateContainer(r) => self.write(now, conn, session, |tree, ctx, changes| {
                let args = CreateArgs::new(OpCode::CREATE_CONTAINER, &r, -1);
                txn::create(tree, ctx, args, changes).map(|(path, stat)| Response::Create2 { path, stat })
            }),
            Request::CreateTtl(r) => self.write(now, conn, session, |tree, ctx, changes| {
                txn::create(tree, ctx, CreateArgs::ttl(&r), changes)
                    .map(|(path, stat)| Response::Create2 { path, stat })
            }),
            Request::Delete(r) => self.write(now, conn, session, |tree, ctx, changes| {
                txn::delete(tree, ctx, &r.path, r.version, changes).map(|()| Response::Empty)
            }),
            // 3.8 reads a deleteContainer body as the raw path bytes (the
            // reaper's encoding), so a client's length-prefixed path always
            // contains a NUL: BadArguments, as a write.
            Request::DeleteContainer(_) => self.write(now, conn, session, |_, _, _| Err(ErrorCode::BAD_ARGUMENTS)),
            Request::SetData(r) => self.write(now, conn, session, |tree, ctx, changes| {
                txn::set_data(tree, ctx, &r.path, r.data.clone(), r.version, changes).map(Response::Stat)
            }),
            Request::SetAcl(r) => self.write(now, conn, session, |tree, ctx, _| {
                txn::set_acl(tree, ctx, &r.path, &r.acl, r.version).map(Response::Stat)
            }),
            Request::Check(r) => {
                let result = self.write(now, conn, session, |tree, ctx, _| txn::check(tree, ctx, &r.path, r.version));
                // 3.8.0 never answers a successful standalone check.
                if let Err(e) = result {
                    self.reply(conn, xid, Err(e));
                }
                return;
            }
            Request::Reconfig(_) => {
                self.next_zxid();
                Err(ErrorCode::RECONFIG_DISABLED)
            }
            Request::Multi(ops) => Ok(self.multi(now, conn, session, &ops)),
            Request::MultiRead(ops) => Ok(self.multi_read(conn, &ops)),
            Request::Exists(r) => self.exists(conn, &r.path, r.watch).map(Response::Stat),
            Request::GetData(r) => {
                self.get_data(conn, &r.path, r.watch).map(|(data, stat)| Response::Data { data, stat })
            }
            Request::GetChildren(r) => self.get_children(conn, &r.path, r.watch).map(|(c, _)| Response::Children(c)),
            Request::GetChildren2(r) => {
                self.get_children(conn, &r.path, r.watch).map(|(children, stat)| Response::Children2 { children, stat })
            }
            Request::GetAcl(r) => self.get_acl(conn, &r.path),
            Request::Sync(r) => Ok(Response::Path(r.path)),
            Request::GetAllChildrenNumber(r) => self.all_children_number(conn, &r.path),
            Request::GetEphemerals(r) => Ok(Response::Children(self.session_ephemerals(session, &r.path))),
            Request::CheckWatches(r) => match valid_watcher_type(r.watcher_type) {
                Some(kind) if self.watches.contains(&r.path, kind) => Ok(Response::Empty),
                Some(_) => Err(ErrorCode::NO_WATCHER),
                None => Err(ErrorCode::MARSHALLING_ERROR),
            },
            Request::RemoveWatches(r) => match valid_watcher_type(r.watcher_type) {
                Some(kind) if self.watches.remove(&r.path, conn, kind) => Ok(Response::Empty),
                Some(_) => Err(ErrorCode::NO_WATCHER),
                None => Err(ErrorCode::MARSHALLING_ERROR),
            },
            Request::AddWatch(r) => match r.mode {
                AddWatchMode::PERSISTENT | AddWatchMode::PERSISTENT_RECURSIVE => {
                    let recursive = r.mode == AddWatchMode::PERSISTENT_RECURSIVE;
                    self.watches.add_persistent(&r.path, conn, recursive);
                    Ok(Response::AddWatch(ErrorCode::OK))
                }
                _ => Err(ErrorCode::MARSHALLING_ERROR),
            },
            Request::WhoAmI => {
                let auth = self.conns.get(&conn).map(|c| c.auth.clone()).unwrap_or_default();
                Ok(Response::WhoAmI(acl::client_infos(&auth)))
            }
            Request::SetWatches(w) => {
                self.set_watches(conn, &as_set_watches2(w));
                Ok(Response::Empty)
            }
            Request::SetWatches2(w) => {
                self.set_watches(conn, &w);
                Ok(Response::Empty)
            }
            Request::CloseSession => {
                self.kill_session(now, session);
                self.reply(conn, xid, Ok(Response::Empty));
                return self.close(conn, CloseReason::SessionClosed);
            }
            _ => return self.unimplemented(conn, xid, op),
        };
        self.reply(conn, xid, result);
    }

    /// Runs one write transaction on the live tree: takes a zxid, applies,
    /// fires the watches (before the caller's reply), arms the reaper.
    fn write<T>(
        &mut self,
        now: Instant,
        conn: ConnId,
        session: i64,
        f: impl FnOnce(&mut DataTree, &Ctx<'_>, &mut Vec<Change>) -> Result<T, ErrorCode>,
    ) -> Result<T, ErrorCode> {
        let zxid = self.next_zxid();
        let time = self.wall_ms(now);
        let auth = self.conns.get(&conn).map(|c| c.auth.clone()).unwrap_or_default();
        let mut changes = Vec::new();
        let ctx = Ctx { session, auth: &auth, zxid, time, config: &self.config };
        let result = f(&mut self.tree, &ctx, &mut changes);
        self.fire(&changes, zxid);
        if !changes.is_empty() {
            self.schedule_reaper(now);
        }
        result
    }

    // ---- reads ---------------------------------------------------------------------

    /// `checkACL` against the connection's identities.
    pub(crate) fn allowed(&self, conn: ConnId, node_acl: &[zoolock_wire::Acl], perm: Perms) -> Result<(), ErrorCode> {
        let auth = self.conns.get(&conn).map(|c| c.auth.as_slice()).unwrap_or_default();
        acl::check(node_acl, perm, auth, self.config.enforce_acls)
    }

    /// The node at `path` (else NoNode) if the connection has `perm` on it
    /// (else NoAuth).
    fn readable(&self, conn: ConnId, path: &str, perm: Perms) -> Result<&Node, ErrorCode> {
        let node = self.tree.get(path).ok_or(ErrorCode::NO_NODE)?;
        self.allowed(conn, &node.acl, perm)?;
        Ok(node)
    }

    fn exists(&mut self, conn: ConnId, path: &str, watch: bool) -> Result<Stat, ErrorCode> {
        if path.contains('\0') {
            return Err(ErrorCode::BAD_ARGUMENTS);
        }
        if watch {
            self.watches.add_data(path, conn);
        }
        self.tree.get(path).map(|n| n.stat()).ok_or(ErrorCode::NO_NODE)
    }

    /// A read that needs READ: `answer` of the node, and only once the ACL
    /// allowed it, with `watch`, `arm` of the connection's watch on `path`.
    fn watched_read<T>(
        &mut self,
        conn: ConnId,
        path: &str,
        watch: bool,
        arm: fn(&mut Watches, &str, ConnId),
        answer: impl FnOnce(&Node) -> T,
    ) -> Result<T, ErrorCode> {
        let out = answer(self.readable(conn, path, Perms::READ)?);
        if watch {
            arm(&mut self.watches, path, conn);
        }
        Ok(out)
    }

    pub(crate) fn get_data(
        &mut self,
        conn: ConnId,
        path: &str,
        watch: bool,
    ) -> Result<(Option<Bytes>, Stat), ErrorCode> {
        self.watched_read(conn, path, watch, Watches::add_data, |n| (n.data.clone(), n.stat()))
    }

    pub(crate) fn get_children(
        &mut self,
        conn: ConnId,
        path: &str,
        watch: bool,
    ) -> Result<(Vec<String>, Stat), ErrorCode> {
        self.watched_read(conn, path, watch, Watches::add_child, |n| (n.children.iter().cloned().collect(), n.stat()))
    }

    fn get_acl(&self, conn: ConnId, path: &str) -> Result<Response, ErrorCode> {
        let node = self.readable(conn, path, Perms::READ | Perms::ADMIN)?;
        let acl = match self.allowed(conn, &node.acl, Perms::ADMIN) {
            Ok(()) => node.acl.clone(),
            Err(_) => acl::masked(&node.acl),
        };
        Ok(Response::Acl { acl, stat: node.stat() })
    }

    fn all_children_number(&self, conn: ConnId, path: &str) -> Result<Response, ErrorCode> {
        self.readable(conn, path, Perms::READ)?;
        Ok(Response::Count(i32::try_from(self.tree.descendants(path)).unwrap_or(i32::MAX)))
    }

    /// getEphemerals: the session's own, all of them for a blank or `/`
    /// prefix, else those whose path starts with the prefix (a string prefix,
    /// not a path prefix).
    fn session_ephemerals(&self, session: i64, prefix: &str) -> Vec<String> {
        let all = self.tree.ephemerals(session);
        let trimmed = prefix.trim();
        if trimmed.is_empty() || trimmed == "/" {
            all
        } else {
            all.into_iter().filter(|p| p.starts_with(prefix)).collect()
        }
    }

    // ---- watches, auth -------------------------------------------------------------

    /// setWatches / setWatches2: compare each path with the tree as it is now;
    /// catch-up events (zxid -1) go out before the reply.
    fn set_watches(&mut self, conn: ConnId, lists: &SetWatches2) {
        let rel = lists.relative_zxid;
        let mut fired = Vec::new();
        self.catch_up(conn, &lists.data_watches, rel, &DATA_CATCH_UP, &mut fired);
        for p in &lists.exist_watches {
            match self.tree.get(p) {
                Some(_) => fired.push(Fired { conn, event: EventType::NODE_CREATED, path: p.clone() }),
                None => self.watches.add_data(p, conn),
            }
        }
        self.catch_up(conn, &lists.child_watches, rel, &CHILD_CATCH_UP, &mut fired);
        for p in &lists.persistent_watches {
            self.watches.add_persistent(p, conn, false);
        }
        for p in &lists.persistent_recursive_watches {
            self.watches.add_persistent(p, conn, true);
        }
        for f in fired {
            self.notify(f, -1);
        }
    }

    /// setWatches for data or child watches: a node that is gone fires
    /// NodeDeleted, one changed since `rel` fires `kind.changed`, any other
    /// is re-armed.
    fn catch_up(&mut self, conn: ConnId, paths: &[String], rel: i64, kind: &CatchUp, fired: &mut Vec<Fired>) {
        for p in paths {
            let event = match self.tree.get(p) {
                None => EventType::NODE_DELETED,
                Some(n) if (kind.zxid)(n) > rel => kind.changed,
                Some(_) => {
                    (kind.rearm)(&mut self.watches, p, conn);
                    continue;
                }
            };
            fired.push(Fired { conn, event, path: p.clone() });
        }
    }

    /// An auth packet, answered at once (xid echoed, zxid 0). Unknown
    /// schemes fail and close the connection.
    fn auth(&mut self, conn: ConnId, xid: Xid, body: &[u8]) {
        let packet = match Request::decode(OpCode::AUTH, body) {
            Ok(Request::Auth(packet)) => packet,
            Ok(_) => return,
            Err(e) => return self.close(conn, CloseReason::Malformed(e)),
        };
        let credential = packet.auth.as_deref().unwrap_or_default();
        match acl::authenticate(&packet.scheme, credential, &self.config.client_ip) {
            AuthOutcome::Added(id) => {
                if let Some(c) = self.conns.get_mut(&conn) {
                    if !c.auth.contains(&id) {
                        c.auth.push(id);
                    }
                }
                self.send_reply(conn, xid, 0, ErrorCode::OK, None);
            }
            AuthOutcome::Failed => {
                self.send_reply(conn, xid, 0, ErrorCode::AUTH_FAILED, None);
                self.close(conn, CloseReason::AuthFailed);
            }
        }
    }
}

/// checkWatches / removeWatches types that exist in 3.8 (1–3); anything
/// else fails `WatcherType.fromInt`, which the server reports as a
/// MarshallingError.
fn valid_watcher_type(t: WatcherType) -> Option<WatcherType> {
    matches!(t, WatcherType::CHILDREN | WatcherType::DATA | WatcherType::ANY).then_some(t)
}

impl<'a> CreateArgs<'a> {
    /// The arguments of a create (1), create2 (15) or createContainer (19).
    pub(crate) fn new(op: OpCode, r: &'a zoolock_wire::CreateRequest, ttl: i64) -> CreateArgs<'a> {
        CreateArgs { op, path: &r.path, data: r.data.clone(), acl: &r.acl, flags: r.flags, ttl }
    }

    /// The arguments of a createTTL (21).
    pub(crate) fn ttl(r: &'a zoolock_wire::CreateTtlRequest) -> CreateArgs<'a> {
        CreateArgs {
            op: OpCode::CREATE_TTL,
            path: &r.path,
            data: r.data.clone(),
            acl: &r.acl,
            flags: r.flags,
            ttl: r.ttl,
        }
    }
}
