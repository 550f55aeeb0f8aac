//! Request and reply headers, and the watch notification body.

use alloc::string::String;

use crate::codes::{ErrorCode, EventType, KeeperState, OpCode, Xid};
use crate::primitive::{Field, record};

record! {
    /// `xid, type`: 8 bytes before every request body.
    #[derive(Debug, Clone, Copy, PartialEq, Eq, Hash)]
    pub struct RequestHeader {
        /// Request id, echoed in the reply.
        pub xid: Xid,
        /// The request type.
        pub op: OpCode,
    }
}

impl RequestHeader {
    /// Encoded size.
    pub const LEN: usize = 8;
}

record! {
    /// `xid, zxid, err`: 16 bytes before every reply body.
    #[derive(Debug, Clone, Copy, PartialEq, Eq, Hash)]
    pub struct ReplyHeader {
        /// The request's xid, or -1 / -2 / -4 for notifications, pings and auth.
        pub xid: Xid,
        /// The server's last processed zxid when it replied.
        pub zxid: i64,
        /// The result; a body follows only when OK.
        pub err: ErrorCode,
    }
}

impl ReplyHeader {
    /// Encoded size.
    pub const LEN: usize = 16;
}

// The fixed sizes above are the field lists' sizes.
const _: () = assert!(RequestHeader::LEN == <RequestHeader as Field>::MIN_LEN);
const _: () = assert!(ReplyHeader::LEN == <ReplyHeader as Field>::MIN_LEN);

record! {
    /// The body of a watch notification (reply xid -1). The path is the server
    /// path, chroot included.
    #[derive(Debug, Clone, PartialEq, Eq, Hash)]
    pub struct WatcherEvent {
        /// What happened.
        pub event_type: EventType,
        /// Always SyncConnected from a server.
        pub state: KeeperState,
        /// The node the event is about.
        pub path: String,
    }
}
