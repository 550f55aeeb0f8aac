//! The ZooKeeper wire protocol, both directions, as plain records.
//!
//! Every record encodes into a [`bytes::BytesMut`] and decodes with nom 8 from a
//! complete frame payload. [`FrameDecoder`] splits a byte stream into frames.
//! Reply bodies are not self-describing, so [`ServerMessage::decode`] takes the
//! opcode of the pending request. Nothing here panics on peer bytes: malformed
//! input is a [`DecodeError`] naming what was wrong and at which offset.
//!
//! A getChildren request framed, split out of a stream and decoded again:
//!
//! ```
//! use zoolock_wire::{BytesMut, FrameDecoder, PathWatchRequest, Request, RequestFrame, Xid, encode_frame};
//!
//! let frame = RequestFrame::new(Xid(7), Request::GetChildren(PathWatchRequest { path: "/locks".into(), watch: false }));
//! let mut stream = BytesMut::new();
//! encode_frame(&frame, 1 << 20, &mut stream).unwrap();
//!
//! let decoder = FrameDecoder::new(1 << 20);
//! let mut partial = stream.split_to(3); // only part of the frame has arrived
//! assert_eq!(decoder.decode(&mut partial).unwrap(), None);
//! partial.unsplit(stream);
//! let payload = decoder.decode(&mut partial).unwrap().expect("a whole frame");
//! assert_eq!(RequestFrame::decode(&payload).unwrap(), frame);
//! ```
#![no_std]
#![warn(clippy::unwrap_used, clippy::expect_used, clippy::panic, clippy::indexing_slicing)]

extern crate alloc;
#[cfg(feature = "std")]
extern crate std;

mod codes;
mod connect;
mod data;
mod error;
mod frame;
mod header;
mod multi;
mod primitive;
mod request;
mod response;

pub use bytes::{Bytes, BytesMut};

pub use codes::{AddWatchMode, CreateMode, ErrorCode, EventType, KeeperState, OpCode, Perms, WatcherType, Xid};
pub use connect::{ConnectRequest, ConnectResponse, PASSWORD_LEN};
pub use data::{Acl, ClientInfo, Id, Stat};
pub use error::{DecodeError, DecodeErrorKind, EncodeError};
pub use frame::{DEFAULT_MAX_FRAME_LEN, FrameDecoder, JUTE_MAXBUFFER, LEN_PREFIX, encode_frame};
pub use header::{ReplyHeader, RequestHeader, WatcherEvent};
pub use multi::MultiResult;
pub use request::{
    AddWatchRequest, AuthPacket, CheckVersionRequest, CreateRequest, CreateTtlRequest, DeleteRequest, PathRequest,
    PathWatchRequest, ReconfigRequest, Request, RequestFrame, SaslRequest, SetAclRequest, SetDataRequest, SetWatches,
    SetWatches2, WatchesRequest,
};
pub use response::{Response, ServerMessage};

/// A record that writes itself in jute encoding.
pub trait Encode {
    /// Exact number of bytes [`Encode::encode`] will write.
    fn encoded_len(&self) -> usize;
    /// Appends the encoding to `buf`.
    fn encode(&self, buf: &mut BytesMut);

    /// Encodes into a fresh buffer (no length prefix).
    fn to_bytes(&self) -> Bytes {
        let mut buf = BytesMut::with_capacity(self.encoded_len());
        self.encode(&mut buf);
        buf.freeze()
    }
}
