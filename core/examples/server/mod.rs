//! Where the examples connect: `ZOOLOCK_CONNECT` when it is set, else an
//! embedded in-memory ZooKeeper (`zoolock_model::TestingServer`), so that an
//! example runs on a machine with no ZooKeeper at all.

/// The connect string, and the embedded server when one was started (it
/// serves until this is dropped).
pub(crate) struct Server {
    pub(crate) connect: String,
    _embedded: Option<zoolock_model::ThreadedServer>,
}

impl Server {
    /// `ZOOLOCK_CONNECT`, or an embedded server on a thread of its own (the
    /// model server runs on tokio, whichever runtime the example uses).
    pub(crate) fn from_env() -> Result<Server, Box<dyn std::error::Error>> {
        if let Ok(connect) = std::env::var("ZOOLOCK_CONNECT") {
            return Ok(Server { connect, _embedded: None });
        }
        let server = zoolock_model::ThreadedServer::start()?;
        let connect = server.connect_string().to_owned();
        eprintln!("ZOOLOCK_CONNECT is not set: using an embedded in-memory ZooKeeper at {connect}");
        Ok(Server { connect, _embedded: Some(server) })
    }
}
