//! The handshake records: the first frame in each direction of a connection.
//! Each ends in a readOnly byte that old (≤3.3) peers leave out.

use bytes::Bytes;

use crate::error::DecodeError;
use crate::primitive::{Field, complete, record};

/// Length of a session password.
pub const PASSWORD_LEN: usize = 16;

record! {
    /// Client → server, the first frame on a connection (no request header).
    #[derive(Debug, Clone, PartialEq, Eq)]
    pub struct ConnectRequest {
        /// Always 0.
        pub protocol_version: i32,
        /// Highest zxid the client has seen (0 for a fresh client).
        pub last_zxid_seen: i64,
        /// Requested session timeout in ms.
        pub timeout_ms: i32,
        /// 0 for a new session, else the session being resumed.
        pub session_id: i64,
        /// 16 zero bytes for a new session, else the session password.
        pub passwd: Option<Bytes>,
        /// Whether a read-only server is acceptable; `None` for a pre-3.4 client
        /// that leaves the byte out.
        pub read_only: Option<bool>,
    }
}

impl ConnectRequest {
    /// Decodes a whole ConnectRequest frame payload.
    pub fn decode(frame: &[u8]) -> Result<Self, DecodeError> {
        complete(frame, Self::parse)
    }
}

record! {
    /// Server → client, the first frame on a connection (no reply header).
    /// A `timeout_ms` of 0 means the session is invalid (expired or wrong password).
    #[derive(Debug, Clone, PartialEq, Eq)]
    pub struct ConnectResponse {
        /// Always 0.
        pub protocol_version: i32,
        /// Negotiated timeout in ms; 0 = session invalid.
        pub timeout_ms: i32,
        /// The session id (0 when invalid).
        pub session_id: i64,
        /// The session password.
        pub passwd: Option<Bytes>,
        /// Whether the server is read-only; `None` when the 36-byte form was sent.
        pub read_only: Option<bool>,
    }
}

impl ConnectResponse {
    /// Decodes a whole ConnectResponse payload, accepting the 36- and 37-byte forms.
    pub fn decode(frame: &[u8]) -> Result<Self, DecodeError> {
        complete(frame, Self::parse)
    }

    /// True when the server refused the session as expired or unknown.
    pub fn is_expired(&self) -> bool {
        self.timeout_ms <= 0
    }
}
