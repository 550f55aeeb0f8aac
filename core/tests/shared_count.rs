//! Transcript tests for `SharedCount` (Curator's `SharedCount`): the ops it
//! sends and the events it reports, replies fed by hand in FIFO order.

use std::collections::VecDeque;

use zoolock_core::recipes::{SharedCount, count_bytes, count_value};
use zoolock_core::wire::{ErrorCode, EventType, Request, Response, Stat};
use zoolock_core::{
    ApiMisuse, ConnectionState, Instant, Recipe, RecipeEvent, RecipeOp, RequestError, WatchEvent, ZkPath,
    recipes::LockConfig,
};

struct T {
    r: SharedCount,
    in_flight: VecDeque<RecipeOp>,
}

impl T {
    fn new() -> T {
        let r = SharedCount::new(ZkPath::new("/app/n").unwrap(), 5, LockConfig::new(1));
        let mut t = T { r, in_flight: VecDeque::new() };
        t.pull();
        t
    }

    fn pull(&mut self) {
        while let Some(op) = self.r.poll_op() {
            self.in_flight.push_back(op);
        }
    }

    /// The requests in flight, as `(opcode name, path)`.
    fn shown(&self) -> Vec<(String, String)> {
        let show = |r: &Request| (r.op_code().name().unwrap_or("?").to_string(), r.path().unwrap_or("").to_string());
        self.in_flight.iter().map(|o| show(o.op.request())).collect()
    }

    fn answer(&mut self, result: Result<Response, RequestError>) -> Vec<RecipeEvent> {
        let op = self.in_flight.pop_front().expect("an op in flight");
        self.r.handle_reply(Instant::ZERO, op.id, result);
        self.pull();
        std::iter::from_fn(|| self.r.poll_event()).map(RecipeEvent::from).collect()
    }

    fn cmd(&mut self, f: impl FnOnce(&mut SharedCount)) {
        f(&mut self.r);
        self.pull();
    }
}

/// A read of `n` at `version`, written by the write at zxid `version` (so
/// later versions are later writes, as long as no version wraps).
fn data(n: i32, version: i32) -> Result<Response, RequestError> {
    data_at(n, version, i64::from(version))
}

fn data_at(n: i32, version: i32, mzxid: i64) -> Result<Response, RequestError> {
    Ok(Response::Data { data: Some(count_bytes(n)), stat: Stat { version, mzxid, ..Stat::default() } })
}

fn server(code: ErrorCode) -> Result<Response, RequestError> {
    Err(RequestError::Server(code))
}

fn shown(list: &[(&str, &str)]) -> Vec<(String, String)> {
    list.iter().map(|(a, b)| (a.to_string(), b.to_string())).collect()
}

#[test]
fn bytes_are_a_big_endian_int() {
    assert_eq!(&count_bytes(258)[..], &[0, 0, 1, 2]);
    assert_eq!(count_value(&[0xff, 0xff, 0xff, 0xfe]), Some(-2));
    assert_eq!(count_value(&[1, 2, 3]), None);
}

#[test]
fn missing_parents_are_made_and_the_seed_read() {
    let mut t = T::new();
    assert_eq!(t.shown(), shown(&[("create2", "/app/n"), ("getData", "/app/n")]));
    // A first connect sends nothing more: the queued ops go out.
    t.r.handle_session(Instant::ZERO, ConnectionState::Connected);
    t.pull();
    assert_eq!(t.in_flight.len(), 2);
    assert_eq!(t.answer(server(ErrorCode::NO_NODE)), vec![]);
    assert_eq!(t.answer(server(ErrorCode::NO_NODE)), vec![], "the stale read waits for the create");
    assert_eq!(t.shown(), shown(&[("createContainer", "/app"), ("create2", "/app/n"), ("getData", "/app/n")]));
    t.answer(Ok(Response::Create2 { path: "/app".into(), stat: Stat::default() }));
    t.answer(Ok(Response::Create2 { path: "/app/n".into(), stat: Stat::default() }));
    assert_eq!(t.answer(data(5, 0)), vec![RecipeEvent::Count { value: 5, version: 0 }]);
    assert_eq!(t.r.value(), Some((5, 0)));
}

#[test]
fn writes_report_in_order_and_a_stale_version_is_refused() {
    let mut t = T::new();
    t.answer(server(ErrorCode::NODE_EXISTS));
    t.answer(data(1, 3));
    t.cmd(|c| c.set(Instant::ZERO, 2));
    t.cmd(|c| c.try_set(Instant::ZERO, 3, 9));
    let stat = |version| Ok(Response::Stat(Stat { version, mzxid: i64::from(version), ..Stat::default() }));
    assert_eq!(
        t.answer(stat(4)),
        vec![RecipeEvent::Count { value: 2, version: 4 }, RecipeEvent::CountWritten(Ok(true))]
    );
    assert_eq!(t.answer(server(ErrorCode::BAD_VERSION)), vec![RecipeEvent::CountWritten(Ok(false))]);
    assert_eq!(t.shown(), shown(&[("getData", "/app/n")]), "refused: the value is read again");
    assert_eq!(t.answer(data(2, 4)), vec![], "nothing newer");
    // A change someone else made.
    t.r.handle_watch(Instant::ZERO, &WatchEvent { event_type: EventType::NODE_DATA_CHANGED, path: "/app/n".into() });
    t.pull();
    assert_eq!(t.answer(data(7, 5)), vec![RecipeEvent::Count { value: 7, version: 5 }]);
    // A write in flight when the session ends is reported failed.
    t.cmd(|c| c.set(Instant::ZERO, 1));
    assert!(!t.r.is_quiescent());
    t.r.handle_session(Instant::ZERO, ConnectionState::Lost);
    let events: Vec<_> = std::iter::from_fn(|| t.r.poll_event()).map(RecipeEvent::from).collect();
    assert_eq!(events, vec![RecipeEvent::CountWritten(Err(RequestError::SessionExpired))]);
    assert!(t.r.is_quiescent());
    // The renewed session reads again.
    t.in_flight.clear();
    t.r.handle_session(Instant::ZERO, ConnectionState::Connected);
    t.pull();
    assert_eq!(t.shown(), shown(&[("getData", "/app/n")]));
}

/// Curator 5.7 (CURATOR-688): after 2^31 writes the node's version wraps to
/// negative numbers; values are ordered by the write's zxid, so the count
/// still moves on (5.4 compared versions and stopped updating).
#[test]
fn a_wrapped_version_is_still_a_newer_value() {
    let mut t = T::new();
    t.answer(server(ErrorCode::NODE_EXISTS));
    assert_eq!(t.answer(data_at(1, i32::MAX, 1_000)), vec![RecipeEvent::Count { value: 1, version: i32::MAX }]);
    t.r.handle_watch(Instant::ZERO, &WatchEvent { event_type: EventType::NODE_DATA_CHANGED, path: "/app/n".into() });
    t.pull();
    assert_eq!(t.answer(data_at(2, i32::MIN, 1_001)), vec![RecipeEvent::Count { value: 2, version: i32::MIN }]);
    // An older write read late is still ignored, whatever its version.
    t.r.handle_watch(Instant::ZERO, &WatchEvent { event_type: EventType::NODE_DATA_CHANGED, path: "/app/n".into() });
    t.pull();
    assert_eq!(t.answer(data_at(1, i32::MAX, 1_000)), vec![]);
    assert_eq!(t.r.value(), Some((2, i32::MIN)));
}

/// Curator 5.7 (CURATOR-688, ZOOKEEPER-4743): a compare-and-set at version
/// -1 would be a blind write (the server reads -1 as "any version"); it is
/// refused without a request, and its outcome keeps call order.
#[test]
fn a_compare_and_set_at_version_minus_one_is_refused_in_call_order() {
    let refused = || RecipeEvent::CountWritten(Err(RequestError::Refused(ApiMisuse::VersionOverflowed)));
    let mut t = T::new();
    t.answer(server(ErrorCode::NODE_EXISTS));
    t.answer(data(1, 3));
    // Nothing in flight: refused at once, nothing sent.
    t.cmd(|c| c.try_set(Instant::ZERO, -1, 9));
    assert!(t.in_flight.is_empty());
    assert_eq!(std::iter::from_fn(|| t.r.poll_event()).map(RecipeEvent::from).collect::<Vec<_>>(), vec![refused()]);
    // Behind a write in flight: answered right after it.
    t.cmd(|c| c.set(Instant::ZERO, 2));
    t.cmd(|c| c.try_set(Instant::ZERO, -1, 9));
    assert_eq!(t.shown(), shown(&[("setData", "/app/n")]));
    assert_eq!(std::iter::from_fn(|| t.r.poll_event()).count(), 0, "not before the write in flight");
    let stat = Ok(Response::Stat(Stat { version: 4, mzxid: 4, ..Stat::default() }));
    assert_eq!(
        t.answer(stat),
        vec![RecipeEvent::Count { value: 2, version: 4 }, RecipeEvent::CountWritten(Ok(true)), refused()]
    );
    // And behind a write the session's end fails.
    t.cmd(|c| c.set(Instant::ZERO, 3));
    t.cmd(|c| c.try_set(Instant::ZERO, -1, 9));
    t.r.handle_session(Instant::ZERO, ConnectionState::Lost);
    let events: Vec<_> = std::iter::from_fn(|| t.r.poll_event()).map(RecipeEvent::from).collect();
    assert_eq!(events, vec![RecipeEvent::CountWritten(Err(RequestError::SessionExpired)), refused()]);
}
