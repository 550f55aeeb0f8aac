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
        }
        Ok(())
    }
}
