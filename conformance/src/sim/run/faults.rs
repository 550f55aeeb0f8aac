//! Faults: crashes, partitions, expiries, pauses, drawn from the run's seed.

use super::*;

impl Sim {
    pub(super) fn inject(&mut self, fault: Fault) -> Result<(), String> {
        self.report.faults += 1;
        self.log(|| format!("FAULT {fault:?}"));
        match fault {
            Fault::Reset(i) => self.reset(i)?,
            Fault::Stall(i, d) => {
                let until = self.now + d;
                if let Some(link) = self.clients[i].link.as_mut() {
                    link.stalled_until = until;
                }
            }
            Fault::Partition(i, d) => {
                self.clients[i].refuse_until = self.now + d;
                self.reset(i)?;
            }
            Fault::Restart(d) => {
                self.server_down_until = self.now + d;
                for i in 0..self.clients.len() {
                    self.reset(i)?;
                }
            }
            Fault::Expire(i) => {
                let session = self.clients[i].client.session().session_id();
                if session != 0 && self.model.expire_session(self.now, session) {
                    self.clients[i].doomed = true;
                    self.drain_model();
                }
            }
            Fault::LoseReply(i) => {
                if let Some(link) = self.clients[i].link.as_mut() {
                    link.lose_replies = true;
                }
            }
            Fault::Slow(i, extra, d) => {
                self.clients[i].slow_extra = extra;
                self.clients[i].slow_until = self.now + d;
            }
            Fault::SlowServer(extra, d) => {
                for c in &mut self.clients {
                    c.slow_extra = extra;
                    c.slow_until = self.now + d;
                }
            }
            Fault::OutsideDelete(tries) => self.outside_delete(tries),
            Fault::Isolate(d, tries) => self.isolate(d, tries),
            Fault::Heal(i, conn) => self.heal(i, conn),
            Fault::Freeze(d, tries) => self.freeze(d, tries),
        }
        Ok(())
    }

    /// Deletes a held lock node as someone else would. Only a hold whose
    /// client's link is quiet both ways is picked: nothing is in flight that
    /// could still change what the server watches for it (a grant's watch
    /// being armed, a notification that used the watch up and the read that
    /// re-arms it), so a client that keeps its holds watched gets the
    /// deletion's notification queued at once. The hold is excused until
    /// that arrives (see `outside_deleted`); a client that does not watch
    /// never hears, and is caught. With no such hold, it tries again shortly.
    fn outside_delete(&mut self, tries: u32) {
        let mut candidates = Vec::new();
        for (i, c) in self.clients.iter().enumerate() {
            let Some(link) = c.link.as_ref() else { continue };
            let quiet =
                link.up.is_empty() && link.to_model.is_empty() && link.down.is_empty() && link.from_model.is_empty();
            // An isolated server hears of no delete (nor does its client, so
            // the news accounting below would not hold), and answers the
            // client's reads from its old view.
            if !c.counts() || !quiet || self.model.is_isolated(link.conn) {
                continue;
            }
            let session = c.client.session().session_id();
            for t in c.tasks.iter().filter(|t| !t.suspended) {
                for h in &t.holds {
                    let server = self.server_path(&h.node);
                    if self.model.node(&server).is_some_and(|n| n.stat.ephemeral_owner == session) {
                        candidates.push((i, h.node.clone()));
                    }
                }
            }
        }
        if candidates.is_empty() {
            if tries < 50 {
                let at = self.now + Duration::from_millis(200);
                let pos = self.faults.iter().position(|(t, _)| *t > at).unwrap_or(self.faults.len());
                self.faults.insert(pos, (at, Fault::OutsideDelete(tries + 1)));
            }
            self.log(|| "no held node to delete from outside".into());
            return;
        }
        let (i, node) = candidates.swap_remove(below(&mut self.rng, candidates.len() as u64) as usize);
        if !self.model.delete_node(self.now, &self.server_path(&node)) {
            return;
        }
        self.report.outside_deletes += 1;
        self.drain_model();
        if let Some(link) = self.clients[i].link.as_ref() {
            self.outside_deleted.insert(node.clone(), (i, link.conn, News::Down(link.pushed)));
        }
        self.log(|| format!("c{i}'s {node} deleted from outside"));
    }

    /// True while the news that `node` (held by client `i`) was deleted from
    /// outside is still on its way to the client (see [`News`]).
    pub(super) fn outside_news_pending(&self, i: usize, node: &str) -> bool {
        let Some((holder, conn, news)) = self.outside_deleted.get(node) else { return false };
        let Some(link) = self.clients[i].link.as_ref().filter(|l| *holder == i && l.conn == *conn) else {
            return false;
        };
        match *news {
            News::Down(n) | News::Reply(n) => link.delivered < n,
            News::Up(_) => true,
        }
    }

    /// Moves the news of client `i`'s outside deletes along after an item
    /// went up or down its link: a notification that arrived while the hold
    /// is still there waits for the reply to what the client sent next.
    pub(super) fn outside_news_travels(&mut self, i: usize) {
        let Some(link) = self.clients[i].link.as_ref() else { return };
        let (conn, delivered, pushed) = (link.conn, link.delivered, link.pushed);
        let (up_delivered, up_pushed) = (link.up_delivered, link.up_pushed);
        let held: Vec<String> =
            self.clients[i].tasks.iter().flat_map(|t| t.holds.iter().map(|h| h.node.clone())).collect();
        for (node, (holder, c, news)) in self.outside_deleted.iter_mut() {
            if *holder != i || *c != conn || !held.contains(node) {
                continue;
            }
            *news = match *news {
                News::Down(n) if delivered >= n && up_pushed > up_delivered => News::Up(up_pushed),
                News::Up(n) if up_delivered >= n => News::Reply(pushed),
                other => other,
            };
        }
    }
}
