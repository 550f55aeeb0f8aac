//! Cancelling an acquire: no node is left behind.

use crate::*;

/// A tiny in-order server holding our nodes plus a foreign lease, for the
/// cancellation sweep. Every parent exists.
struct MiniServer {
    nodes: Vec<String>,
    seq: u32,
}

impl MiniServer {
    fn new() -> Self {
        MiniServer { nodes: vec!["/s/leases/_c_x-lease-0000000099".into()], seq: 0 }
    }

    fn children(&self, parent: &str) -> Vec<String> {
        let prefix = format!("{parent}/");
        self.nodes.iter().filter_map(|n| n.strip_prefix(&prefix)).map(|n| n.to_string()).collect()
    }

    /// Executes the oldest op in flight; `lose` answers ConnectionLoss after
    /// executing it (the reply is lost, the effect is not).
    fn serve<R: Recipe<Event: Into<RecipeEvent>>>(&mut self, t: &mut T<R>, lose: bool) {
        let req = t.front().clone();
        let result = match req {
            Request::Create2(r) => {
                let path = format!("{}{:010}", r.path, self.seq);
                self.seq += 1;
                self.nodes.push(path.clone());
                Ok(Response::Create2 { path, stat: stat(100 + i64::from(self.seq)) })
            }
            Request::Delete(r) => match self.nodes.iter().position(|n| *n == r.path) {
                Some(i) => {
                    self.nodes.remove(i);
                    empty()
                }
                None => no_node(),
            },
            Request::GetChildren2(r) => Ok(Response::Children2 { children: self.children(&r.path), stat: stat(3) }),
            Request::GetChildren(r) => Ok(Response::Children(self.children(&r.path))),
            Request::GetData(r) if !self.nodes.contains(&r.path) => no_node(),
            Request::GetData(_) => Ok(Response::Data { data: None, stat: stat(4) }),
            Request::Exists(r) if !self.nodes.contains(&r.path) => no_node(),
            Request::Exists(_) => exists_ok(),
            _ => empty(),
        };
        t.answer(if lose { Err(RequestError::ConnectionLoss) } else { result });
    }

    fn ours(&self) -> Vec<String> {
        self.nodes.iter().filter(|n| !n.contains("_c_x-")).cloned().collect()
    }
}

/// Serves `steps` replies of a two-lease acquire (the first lease is free,
/// the second waits behind the foreign lease), cancels, then lets everything
/// finish: no node of ours may remain. With `lose`, the connection drops at
/// the cancel, so every reply in flight is lost (their effects are not).
fn cancel_after(steps: usize, plan: OpPlan, lose: bool) {
    let config = LockConfig::new(7).with_plan(plan).with_watch_held(plan != OpPlan::Curator);
    let mut t = T::new(Semaphore::new(p("/s"), 2, config));
    let mut server = MiniServer::new();
    t.cmd(|s, now| s.acquire(now, 2, None)).unwrap();
    for _ in 0..steps {
        if t.idle_wire() {
            break;
        }
        server.serve(&mut t, false);
    }
    t.events();
    t.cmd(|s, now| s.cancel(now));
    assert!(!t.r.is_acquiring());
    if lose {
        while !t.idle_wire() {
            server.serve(&mut t, true);
        }
        t.session(ConnectionState::Suspended);
        t.session(ConnectionState::Reconnected);
    }
    let mut guard = 0;
    while !t.idle_wire() {
        guard += 1;
        assert!(guard < 100, "no end: {:#?}", t.log);
        server.serve(&mut t, false);
    }
    let ctx = format!("after {steps} steps ({plan:?}, lose={lose}); log: {:#?}", t.log);
    assert_eq!(t.events(), vec![], "cancel reports nothing, {ctx}");
    assert_eq!(server.ours(), Vec::<String>::new(), "leaked {ctx}");
    assert!(t.r.is_quiescent(), "{ctx}");
}

#[test]
fn cancel_leaves_no_node_at_any_step() {
    for plan in [OpPlan::Curator, OpPlan::Pipelined] {
        for lose in [false, true] {
            for steps in 0..16 {
                cancel_after(steps, plan, lose);
            }
        }
    }
}

#[test]
fn cancel_while_waiting_for_a_lease_deletes_lease_mutex_and_earlier_leases() {
    let mut t = acquiring(2, 2, curator());
    second_lease_waits(&mut t, "_c_x-lease-0000000005");
    t.cmd(|s, now| s.cancel(now));
    assert_eq!(
        t.sent(),
        vec![
            "delete /s/leases/_c_U4-lease-0000000001",
            "delete /s/locks/_c_U3-lock-0000000001",
            "delete /s/leases/_c_U2-lease-0000000000",
        ]
    );
    // A later acquire starts cleanly.
    cleaned_up_then_afresh(&mut t, 3, empty);
}
