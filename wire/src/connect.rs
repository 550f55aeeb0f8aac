//! The handshake records: the first frame in each direction of a connection.

use bytes::{BufMut, Bytes, BytesMut};

use crate::Encode;
use crate::error::DecodeError;
use crate::primitive::{PResult, boolean, buffer, buffer_len, complete, int, long, put_bool, put_buffer};

/// Length of a session password.
pub const PASSWORD_LEN: usize = 16;

/// Parses the trailing readOnly byte, which old (≤3.3) peers leave out.
fn optional_bool(i: &[u8]) -> PResult<'_, Option<bool>> {
    if i.is_empty() {
        Ok((i, None))
    } else {
        let (i, b) = boolean(i)?;
        Ok((i, Some(b)))
    }
}

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

impl ConnectRequest {
    /// Decodes a whole ConnectRequest frame payload.
    pub fn decode(frame: &[u8]) -> Result<Self, DecodeError> {
        complete(frame, |i| {
            let (i, protocol_version) = int(i)?;
            let (i, last_zxid_seen) = long(i)?;
            let (i, timeout_ms) = int(i)?;
            let (i, session_id) = long(i)?;
            let (i, passwd) = buffer(i)?;
            let (i, read_only) = optional_bool(i)?;
            Ok((i, ConnectRequest { protocol_version, last_zxid_seen, timeout_ms, session_id, passwd, read_only }))
        })
    }
}

impl Encode for ConnectRequest {
    fn encoded_len(&self) -> usize {
        4 + 8 + 4 + 8 + buffer_len(self.passwd.as_deref()) + usize::from(self.read_only.is_some())
    }

    fn encode(&self, buf: &mut BytesMut) {
        buf.put_i32(self.protocol_version);
        buf.put_i64(self.last_zxid_seen);
        buf.put_i32(self.timeout_ms);
        buf.put_i64(self.session_id);
        put_buffer(buf, self.passwd.as_deref());
        if let Some(ro) = self.read_only {
            put_bool(buf, ro);
        }
    }
}

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

impl ConnectResponse {
    /// Decodes a whole ConnectResponse payload, accepting the 36- and 37-byte forms.
    pub fn decode(frame: &[u8]) -> Result<Self, DecodeError> {
        complete(frame, |i| {
            let (i, protocol_version) = int(i)?;
            let (i, timeout_ms) = int(i)?;
            let (i, session_id) = long(i)?;
            let (i, passwd) = buffer(i)?;
            let (i, read_only) = optional_bool(i)?;
            Ok((i, ConnectResponse { protocol_version, timeout_ms, session_id, passwd, read_only }))
        })
    }

    /// True when the server refused the session as expired or unknown.
    pub fn is_expired(&self) -> bool {
        self.timeout_ms <= 0
    }
}

impl Encode for ConnectResponse {
    fn encoded_len(&self) -> usize {
        4 + 4 + 8 + buffer_len(self.passwd.as_deref()) + usize::from(self.read_only.is_some())
    }

    fn encode(&self, buf: &mut BytesMut) {
        buf.put_i32(self.protocol_version);
        buf.put_i32(self.timeout_ms);
        buf.put_i64(self.session_id);
        put_buffer(buf, self.passwd.as_deref());
        if let Some(ro) = self.read_only {
            put_bool(buf, ro);
        }
    }
}
