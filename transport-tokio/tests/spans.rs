//! The tracing spans (issue 39): a subscriber sees each acquire and each
//! hold as a span, `zoolock.acquire` while it waits and `zoolock.hold`
//! while it is held, both with the path, the node and the fencing token,
//! for a lock and for a term of leadership. Against the embedded
//! in-memory ZooKeeper, on one thread (the subscriber is the thread's).

use std::collections::BTreeMap;
use std::sync::atomic::{AtomicU64, Ordering};
use std::sync::{Arc, Mutex};
use std::time::Duration;

use tracing::field::{Field, Visit};
use tracing::span::{Attributes, Id, Record};
use tracing::{Event, Metadata, Subscriber};
use zoolock_model::TestingServer;
use zoolock_tokio::Options;

/// One span as the subscriber saw it.
#[derive(Debug, Clone, Default)]
struct Seen {
    name: String,
    fields: BTreeMap<String, String>,
    closed: bool,
}

/// Keeps every span (its fields as text), and which closed.
#[derive(Default)]
struct Spans {
    next: AtomicU64,
    spans: Arc<Mutex<BTreeMap<u64, Seen>>>,
}

struct Fields<'a>(&'a mut BTreeMap<String, String>);

impl Visit for Fields<'_> {
    fn record_debug(&mut self, field: &Field, value: &dyn std::fmt::Debug) {
        self.0.insert(field.name().to_owned(), format!("{value:?}"));
    }

    fn record_str(&mut self, field: &Field, value: &str) {
        self.0.insert(field.name().to_owned(), value.to_owned());
    }
}

impl Subscriber for Spans {
    fn enabled(&self, _: &Metadata<'_>) -> bool {
        true
    }

    fn new_span(&self, attrs: &Attributes<'_>) -> Id {
        let id = self.next.fetch_add(1, Ordering::SeqCst) + 1;
        let mut seen = Seen { name: attrs.metadata().name().to_owned(), ..Seen::default() };
        attrs.record(&mut Fields(&mut seen.fields));
        self.spans.lock().unwrap().insert(id, seen);
        Id::from_u64(id)
    }

    fn record(&self, span: &Id, values: &Record<'_>) {
        if let Some(seen) = self.spans.lock().unwrap().get_mut(&span.into_u64()) {
            values.record(&mut Fields(&mut seen.fields));
        }
    }

    fn record_follows_from(&self, _: &Id, _: &Id) {}

    fn event(&self, _: &Event<'_>) {}

    fn enter(&self, _: &Id) {}

    fn exit(&self, _: &Id) {}

    fn try_close(&self, span: Id) -> bool {
        if let Some(seen) = self.spans.lock().unwrap().get_mut(&span.into_u64()) {
            seen.closed = true;
        }
        true
    }
}

/// The spans named `name` on `path`, in the order they opened.
fn named(spans: &Mutex<BTreeMap<u64, Seen>>, name: &str, path: &str) -> Vec<Seen> {
    let spans = spans.lock().unwrap();
    spans
        .values()
        .filter(|s| s.name == name && s.fields.get("path").map(String::as_str) == Some(path))
        .cloned()
        .collect()
}

#[tokio::test(flavor = "current_thread")]
async fn acquires_and_holds_are_spans_with_path_node_and_token() {
    let subscriber = Spans::default();
    let spans = subscriber.spans.clone();
    let _default = tracing::subscriber::set_default(subscriber);
    let server = TestingServer::start().await;
    let options = Options::default().session_timeout(Duration::from_secs(4));
    let client = zoolock_tokio::connect(server.connect_string(), options).await.unwrap();

    let guard = client.mutex("/spans/lock").await.unwrap().acquire().await.unwrap();
    let (node, token) = (guard.node().to_owned(), guard.fencing_token().0.to_string());
    let [hold] = named(&spans, "zoolock.hold", "/spans/lock").try_into().expect("one hold span");
    assert_eq!((hold.fields["node"].as_str(), hold.fields["token"].as_str()), (node.as_str(), token.as_str()));
    assert!(!hold.closed, "open while held");
    let [acquire] = named(&spans, "zoolock.acquire", "/spans/lock").try_into().expect("one acquire span");
    assert_eq!((acquire.fields["node"].as_str(), acquire.fields["token"].as_str()), (node.as_str(), token.as_str()));
    assert!(acquire.closed, "the wait is over");
    guard.release().await.unwrap();
    assert!(named(&spans, "zoolock.hold", "/spans/lock")[0].closed, "closed once released");

    let term = client.leader_selector("/spans/leader", "me").await.unwrap().leadership().await.unwrap();
    let (node, token) = (term.node().to_owned(), term.fencing_token().0.to_string());
    for name in ["zoolock.acquire", "zoolock.hold"] {
        let [span] = named(&spans, name, "/spans/leader").try_into().expect("one span each");
        assert_eq!((span.fields["node"].as_str(), span.fields["token"].as_str()), (node.as_str(), token.as_str()));
    }
    term.release().await.unwrap();
    assert!(named(&spans, "zoolock.hold", "/spans/leader")[0].closed);
    client.close().await.unwrap();
    server.stop().await;
}
