//! The TestingServer over real loopback TCP: raw frames, then the tokio
//! client and its mutex.

use std::time::Duration;

use bytes::{Bytes, BytesMut};
use tokio::io::{AsyncReadExt, AsyncWriteExt};
use tokio::net::TcpStream;
use zoolock_core::wire::{ConnectResponse, FrameDecoder, Request, RequestFrame, ServerMessage, Xid};
use zoolock_model::TestingServer;
use zoolock_tokio::{Error, HoldStatus, Options};

use crate::*;

async fn read_frame(stream: &mut TcpStream, buf: &mut BytesMut) -> Option<Bytes> {
    let decoder = FrameDecoder::new(usize::MAX);
    loop {
        if let Some(frame) = decoder.decode(buf).unwrap() {
            return Some(frame);
        }
        let mut chunk = [0u8; 4096];
        let n = tokio::time::timeout(Duration::from_secs(5), stream.read(&mut chunk)).await.ok()?.ok()?;
        if n == 0 {
            return None;
        }
        buf.extend_from_slice(&chunk[..n]);
    }
}

/// A raw TCP session on `server`: connected, the handshake (all-zero password,
/// `timeout_ms`) sent and its response read and checked.
async fn raw_session(server: &TestingServer, timeout_ms: i32) -> (TcpStream, BytesMut, ConnectResponse) {
    let mut s = TcpStream::connect(server.connect_string()).await.unwrap();
    let mut buf = BytesMut::new();
    s.write_all(&framed(&connect_request(0, Bytes::from_static(&[0; 16]), timeout_ms, 0))).await.unwrap();
    let rsp = ConnectResponse::decode(&read_frame(&mut s, &mut buf).await.unwrap()).unwrap();
    assert_eq!(rsp.timeout_ms, timeout_ms);
    (s, buf, rsp)
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn raw_frames_over_tcp() {
    let server = TestingServer::start().await;
    let (mut s, mut buf, rsp) = raw_session(&server, 10_000).await;
    s.write_all(&framed(&RequestFrame::new(Xid(1), create("/x", CreateMode::EPHEMERAL)))).await.unwrap();
    let frame = read_frame(&mut s, &mut buf).await.unwrap();
    match ServerMessage::decode(&frame, |_| Some(OpCode::CREATE)).unwrap() {
        ServerMessage::Reply { response: Some(Response::Path(p)), .. } => assert_eq!(p, "/x"),
        other => panic!("{other:?}"),
    }
    let session = rsp.session_id;
    let eph = server.with_model(move |m, _| m.ephemerals(session)).await.unwrap();
    assert_eq!(eph, ["/x"]);
    // closeSession: reply, then EOF.
    s.write_all(&framed(&RequestFrame::new(Xid(2), Request::CloseSession))).await.unwrap();
    let frame = read_frame(&mut s, &mut buf).await.unwrap();
    assert_eq!(ServerMessage::decode(&frame, |_| Some(OpCode::CLOSE_SESSION)).unwrap().header().xid, Xid(2));
    assert!(read_frame(&mut s, &mut buf).await.is_none(), "the server closed the connection");
    let paths = server.with_model(|m, _| m.node("/x").is_none()).await.unwrap();
    assert!(paths);
    server.stop().await;
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn expiry_runs_on_the_server_timer() {
    let config = ModelConfig::default().with_tick(Duration::from_millis(50));
    let server = TestingServer::start_with(config).await.unwrap();
    let (mut s, mut buf, _) = raw_session(&server, 100).await;
    // No pings: the session expires and the server closes the socket.
    assert!(read_frame(&mut s, &mut buf).await.is_none());
    assert!(server.with_model(|m, _| m.sessions()).await.unwrap().is_empty());
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn tokio_clients_share_a_mutex() {
    let server = TestingServer::start().await;
    let a = zoolock_tokio::connect(server.connect_string(), Options::default()).await.unwrap();
    let b = zoolock_tokio::connect(server.connect_string(), Options::default()).await.unwrap();
    let la = a.mutex("/it/lock").await.unwrap();
    let lb = b.mutex("/it/lock").await.unwrap();
    let ga = la.acquire().await.unwrap();
    assert_eq!(ga.status(), HoldStatus::Held);
    assert!(matches!(lb.acquire_timeout(Duration::from_millis(200)).await, Err(Error::TimedOut)));
    let t1 = ga.fencing_token();
    let waiter = tokio::spawn(async move { lb.acquire().await.map(|g| (g.fencing_token(), g)) });
    tokio::time::sleep(Duration::from_millis(50)).await;
    ga.release().await.unwrap();
    let (t2, gb) = tokio::time::timeout(Duration::from_secs(5), waiter).await.unwrap().unwrap().unwrap();
    assert!(t2 > t1);
    gb.release().await.unwrap();
    a.close().await.unwrap();
    b.close().await.unwrap();
    // Give the reaper its turn, then nothing is left behind.
    tokio::time::sleep(Duration::from_millis(50)).await;
    let left = server
        .with_model(|m, _| {
            m.paths().into_iter().filter(|p| p != "/" && !p.starts_with("/zookeeper")).collect::<Vec<_>>()
        })
        .await
        .unwrap();
    assert_eq!(left, Vec::<String>::new());
    assert!(server.with_model(|m, _| m.sessions()).await.unwrap().is_empty(), "both sessions closed");
    server.stop().await;
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn dropping_the_server_closes_connections() {
    let server = TestingServer::start().await;
    let (mut s, mut buf, _) = raw_session(&server, 10_000).await;
    drop(server);
    assert!(read_frame(&mut s, &mut buf).await.is_none());
}
