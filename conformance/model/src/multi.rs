//! multi (14) and multiRead (22).
//!
//! A multi is one transaction with one zxid. Its ops run in order on a
//! scratch copy of the tree, so each sees the effects of the ones before.
//! If all succeed the copy replaces the tree and the watches fire; if one
//! fails nothing is applied and every op gets an ErrorResult: OK for those
//! before it, its own code, RuntimeInconsistency for those after. Either way
//! the reply header says OK and the zxid is consumed.
//!
//! A multiRead is not a transaction: each read is answered on its own, and
//! a read's watch flag is honoured (the Java client always sends false).

use zoolock_core::Instant;
use zoolock_wire::{ErrorCode, MultiResult, OpCode, Request, Response};

use super::txn::{self, CreateArgs, Ctx};
use super::{ConnId, ZkModel};

impl ZkModel {
    pub(crate) fn multi(&mut self, now: Instant, conn: ConnId, session: i64, ops: &[Request]) -> Response {
        let zxid = self.next_zxid();
        let time = self.wall_ms(now);
        let auth = self.conns.get(&conn).map(|c| c.auth.clone()).unwrap_or_default();
        let ctx = Ctx { session, auth: &auth, zxid, time, config: &self.config };
        let plain_create2 = self.config.multi_create2_as_create;
        let mut scratch = self.tree.clone();
        let mut changes = Vec::new();
        let mut results = Vec::with_capacity(ops.len());
        let mut failure = None;
        for (index, op) in ops.iter().enumerate() {
            let mut created =
                |kind: OpCode, r| txn::create(&mut scratch, &ctx, CreateArgs::new(kind, r, -1), &mut changes);
            let result = match op {
                Request::Create(r) => created(OpCode::CREATE, r)
                    .map(|(path, _)| MultiResult::Ok { op: OpCode::CREATE, response: Response::Path(path) }),
                Request::Create2(r) => created(OpCode::CREATE2, r).map(|(path, stat)| {
                    if plain_create2 {
                        MultiResult::Ok { op: OpCode::CREATE, response: Response::Path(path) }
                    } else {
                        MultiResult::Ok { op: OpCode::CREATE2, response: Response::Create2 { path, stat } }
                    }
                }),
                Request::CreateContainer(r) => created(OpCode::CREATE_CONTAINER, r).map(|(path, stat)| {
                    MultiResult::Ok { op: OpCode::CREATE2, response: Response::Create2 { path, stat } }
                }),
                Request::CreateTtl(r) => {
                    txn::create(&mut scratch, &ctx, CreateArgs::ttl(r), &mut changes).map(|(path, stat)| {
                        MultiResult::Ok { op: OpCode::CREATE2, response: Response::Create2 { path, stat } }
                    })
                }
                Request::Delete(r) => txn::delete(&mut scratch, &ctx, &r.path, r.version, &mut changes)
                    .map(|()| MultiResult::Ok { op: OpCode::DELETE, response: Response::Empty }),
                Request::SetData(r) => {
                    txn::set_data(&mut scratch, &ctx, &r.path, r.data.clone(), r.version, &mut changes)
                        .map(|stat| MultiResult::Ok { op: OpCode::SET_DATA, response: Response::Stat(stat) })
                }
                Request::Check(r) => txn::check(&scratch, &ctx, &r.path, r.version)
                    .map(|()| MultiResult::Ok { op: OpCode::CHECK, response: Response::Empty }),
                // The codec admits only the ops above inside a multi.
                _ => Err(ErrorCode::MARSHALLING_ERROR),
            };
            match result {
                Ok(r) => results.push(r),
                Err(e) => {
                    failure = Some((index, e));
                    break;
                }
            }
        }
        if let Some((index, code)) = failure {
            let results = (0..ops.len())
                .map(|i| {
                    MultiResult::Error(match i.cmp(&index) {
                        core::cmp::Ordering::Less => ErrorCode::OK,
                        core::cmp::Ordering::Equal => code,
                        core::cmp::Ordering::Greater => ErrorCode::RUNTIME_INCONSISTENCY,
                    })
                })
                .collect();
            return Response::Multi(results);
        }
        self.tree = scratch;
        self.fire(&changes, zxid);
        if !changes.is_empty() {
            self.schedule_reaper(now);
        }
        Response::Multi(results)
    }

    pub(crate) fn multi_read(&mut self, conn: ConnId, ops: &[Request]) -> Response {
        let results = ops
            .iter()
            .map(|op| match op {
                Request::GetChildren(r) => match self.get_children(conn, &r.path, r.watch) {
                    Ok((children, _)) => {
                        MultiResult::Ok { op: OpCode::GET_CHILDREN, response: Response::Children(children) }
                    }
                    Err(e) => MultiResult::Error(e),
                },
                Request::GetData(r) => match self.get_data(conn, &r.path, r.watch) {
                    Ok((data, stat)) => {
                        MultiResult::Ok { op: OpCode::GET_DATA, response: Response::Data { data, stat } }
                    }
                    Err(e) => MultiResult::Error(e),
                },
                _ => MultiResult::Error(ErrorCode::MARSHALLING_ERROR),
            })
            .collect();
        Response::Multi(results)
    }
}
