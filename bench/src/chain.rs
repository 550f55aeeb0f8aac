//! The raw contended limit: K sessions in a handoff chain with no client logic.
//!
//! Each session, on its own thread with a blocking socket, loops: create its
//! ephemeral-sequential node and list the parent in one write; if a node
//! sorts ahead of its own, getData-with-watch its immediate predecessor and
//! wait for the notification (a NoNode answer means the predecessor is gone
//! already); hold; delete its node and wait for the reply. Nothing is
//! re-listed and nothing is retried: in this chain nodes ahead of ours only
//! disappear by being released, so the predecessor's deletion is the grant.
//! That is the physical bound a contended lock is held against: per handoff,
//! one delete, one notification and, for the next waiter's next turn, one
//! create + list write and one getData.

use std::sync::atomic::{AtomicU64, AtomicUsize, Ordering};
use std::sync::{Arc, Mutex};
use std::thread;
use std::time::{Duration, Instant};

use zoolock_wire::{
    Acl, Bytes, CreateMode, CreateRequest, DeleteRequest, ErrorCode, OpCode, PathWatchRequest, Request, Response,
};

use crate::{Probe, ProbeError, RawSession, Timing, sequence_of};

/// The result of one chain run.
#[derive(Debug, Clone, PartialEq)]
pub struct ChainSummary {
    /// Sessions in the chain.
    pub clients: u64,
    /// The counted handoffs; a latency is one acquisition's wait (create to hold).
    pub timing: Timing,
    /// Holds that overlapped another (must be 0).
    pub overlaps: u64,
}

impl ChainSummary {
    /// The single-line JSON object the bench script parses.
    pub fn to_json(&self) -> String {
        format!(
            "{{\"impl\":\"raw\",\"workload\":\"mutex-contended\",\"plan\":\"chain\",\"clients\":{},{},\
             \"overlap_violations\":{}}}",
            self.clients,
            self.timing.json_members(),
            self.overlaps
        )
    }
}

impl std::fmt::Display for ChainSummary {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        write!(f, "raw chain, {} sessions: {}, {} overlaps", self.clients, self.timing, self.overlaps)
    }
}

/// What the chain's threads share.
#[derive(Debug, Default)]
struct Shared {
    claimed: AtomicU64,
    holding: AtomicUsize,
    overlaps: AtomicU64,
    waits: Mutex<Vec<Duration>>,
}

/// One session of the chain and its node-name prefix.
#[derive(Debug)]
struct Link {
    session: RawSession,
    parent: String,
    prefix: String,
}

/// Runs `warmup` uncounted handoffs, then `handoffs` counted ones, over
/// `clients` sessions to `addr`, under a fresh parent removed at the end.
pub fn run_chain(addr: &str, clients: u64, warmup: u64, handoffs: u64) -> Result<ChainSummary, ProbeError> {
    let owner = Probe::new(RawSession::connect(addr)?)?;
    let parent = owner.parent().to_owned();
    let mut links = Vec::new();
    for i in 0..clients {
        let session = RawSession::connect(addr)?;
        let prefix = format!("{parent}/_c_{:08x}-0000-4000-8000-{i:012x}-lock-", std::process::id());
        links.push(Link { session, parent: parent.clone(), prefix });
    }
    let shared = Arc::new(Shared::default());
    phase(&mut links, &shared, warmup)?;
    let start = Instant::now();
    phase(&mut links, &shared, handoffs)?;
    let elapsed = start.elapsed();
    let mut waits = shared.waits.lock().map(|mut w| std::mem::take(&mut *w)).unwrap_or_default();
    for link in links {
        link.session.close()?;
    }
    owner.finish()?;
    Ok(ChainSummary {
        clients,
        timing: Timing::new(&mut waits, elapsed),
        overlaps: shared.overlaps.load(Ordering::Relaxed),
    })
}

/// `total` acquisitions over every link, one thread each.
fn phase(links: &mut [Link], shared: &Arc<Shared>, total: u64) -> Result<(), ProbeError> {
    shared.claimed.store(0, Ordering::Relaxed);
    if let Ok(mut w) = shared.waits.lock() {
        *w = Vec::with_capacity(usize::try_from(total).unwrap_or(0));
    }
    thread::scope(|scope| {
        let handles: Vec<_> = links.iter_mut().map(|link| scope.spawn(|| link.contend(shared, total))).collect();
        let mut first = Ok(());
        for h in handles {
            let r = h.join().unwrap_or_else(|_| Err(ProbeError::Protocol("a chain thread panicked".into())));
            if let Err(e) = r {
                // Stop the others: nothing more gets claimed.
                shared.claimed.store(u64::MAX / 2, Ordering::Relaxed);
                if first.is_ok() {
                    first = Err(e);
                }
            }
        }
        first
    })
}

impl Link {
    fn contend(&mut self, shared: &Shared, total: u64) -> Result<(), ProbeError> {
        while shared.claimed.fetch_add(1, Ordering::Relaxed) < total {
            let asked = Instant::now();
            let ours = self.enqueue()?;
            let ours_seq = sequence_of(&ours).ok_or_else(|| ProbeError::Protocol(format!("no sequence: {ours}")))?;
            if let Some(pred) = self.predecessor(ours_seq)? {
                self.wait_gone(pred)?;
            }
            let wait = asked.elapsed();
            if shared.holding.fetch_add(1, Ordering::SeqCst) != 0 {
                shared.overlaps.fetch_add(1, Ordering::Relaxed);
            }
            if let Ok(mut w) = shared.waits.lock() {
                w.push(wait);
            }
            shared.holding.fetch_sub(1, Ordering::SeqCst);
            self.session.queue(Request::Delete(DeleteRequest { path: ours, version: -1 }))?;
            self.session.flush()?;
            self.session.recv()?;
        }
        Ok(())
    }

    /// create2 + getChildren in one write; returns our node's path and
    /// leaves the listing for [`Link::predecessor`].
    fn enqueue(&mut self) -> Result<String, ProbeError> {
        self.session.queue(Request::Create2(CreateRequest {
            path: self.prefix.clone(),
            data: Some(Bytes::from_static(b"127.0.0.1")),
            acl: Acl::open_unsafe(),
            flags: CreateMode::EPHEMERAL_SEQUENTIAL,
        }))?;
        self.session.queue(Request::GetChildren(PathWatchRequest { path: self.parent.clone(), watch: false }))?;
        self.session.flush()?;
        match self.session.recv()? {
            Response::Create2 { path, .. } => Ok(path),
            other => Err(ProbeError::Protocol(format!("create2 answered with {other:?}"))),
        }
    }

    /// Reads the listing and returns the path of the node just ahead of ours.
    fn predecessor(&mut self, ours: u64) -> Result<Option<String>, ProbeError> {
        let Response::Children(children) = self.session.recv()? else {
            return Err(ProbeError::Protocol("getChildren answered with something else".into()));
        };
        let pred = children
            .iter()
            .filter_map(|c| sequence_of(c).filter(|&s| s < ours).map(|s| (s, c)))
            .max_by_key(|&(s, _)| s)
            .map(|(_, c)| format!("{}/{c}", self.parent));
        Ok(pred)
    }

    /// getData with a watch on `pred`; returns once it is deleted.
    fn wait_gone(&mut self, pred: String) -> Result<(), ProbeError> {
        self.session.queue(Request::GetData(PathWatchRequest { path: pred, watch: true }))?;
        self.session.flush()?;
        match self.session.recv_code()? {
            Ok(_) => self.session.wait_event().map(drop),
            Err(ErrorCode::NO_NODE) => Ok(()),
            Err(err) => Err(ProbeError::Server { op: OpCode::GET_DATA, path: String::new(), err }),
        }
    }
}
