//! Length-prefixed framing: `len: i32` big-endian, then `len` payload bytes.

use bytes::{Buf, BufMut, Bytes, BytesMut};

use crate::Encode;
use crate::error::{DecodeError, DecodeErrorKind, EncodeError};

/// ZooKeeper's default `jute.maxbuffer` (0xfffff).
pub const JUTE_MAXBUFFER: usize = 0xf_ffff;

/// Default frame limit: `jute.maxbuffer` plus room for a reply header, a Stat
/// and length prefixes, so a node holding the maximum data still fits.
pub const DEFAULT_MAX_FRAME_LEN: usize = JUTE_MAXBUFFER + 1024;

/// Bytes in the length prefix.
pub const LEN_PREFIX: usize = 4;

/// Splits a byte stream into frames. Incomplete input is `Ok(None)`; a length
/// above the limit is rejected as soon as the prefix arrives, before any of the
/// body is buffered.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct FrameDecoder {
    max_frame_len: usize,
}

impl Default for FrameDecoder {
    fn default() -> Self {
        FrameDecoder { max_frame_len: DEFAULT_MAX_FRAME_LEN }
    }
}

impl FrameDecoder {
    /// A decoder that rejects payloads longer than `max_frame_len`.
    pub fn new(max_frame_len: usize) -> Self {
        FrameDecoder { max_frame_len }
    }

    /// The configured limit.
    pub fn max_frame_len(&self) -> usize {
        self.max_frame_len
    }

    /// Checks the length prefix at the front of `buf`, if it has arrived.
    /// Returns the payload length once known.
    pub fn peek_len(&self, buf: &[u8]) -> Result<Option<usize>, DecodeError> {
        let Some(prefix) = buf.get(..LEN_PREFIX) else {
            return Ok(None);
        };
        let mut prefix = prefix;
        let raw = prefix.get_i32();
        let len =
            usize::try_from(raw).map_err(|_| DecodeError { kind: DecodeErrorKind::NegativeLength(raw), offset: 0 })?;
        if len > self.max_frame_len {
            return Err(DecodeError {
                kind: DecodeErrorKind::FrameTooLarge { len, max: self.max_frame_len },
                offset: 0,
            });
        }
        Ok(Some(len))
    }

    /// Takes one complete frame payload off the front of `buf`, or returns
    /// `Ok(None)` and leaves `buf` untouched when more bytes are needed.
    pub fn decode(&self, buf: &mut BytesMut) -> Result<Option<Bytes>, DecodeError> {
        let Some(len) = self.peek_len(buf)? else {
            return Ok(None);
        };
        if buf.len() < LEN_PREFIX + len {
            // Reserve once for the rest of this frame, so reads append without
            // repeated reallocation.
            buf.reserve(LEN_PREFIX + len - buf.len());
            return Ok(None);
        }
        buf.advance(LEN_PREFIX);
        Ok(Some(buf.split_to(len).freeze()))
    }
}

/// Appends `msg` to `buf` as one frame, refusing payloads over `max_frame_len`
/// before writing anything.
pub fn encode_frame(msg: &impl Encode, max_frame_len: usize, buf: &mut BytesMut) -> Result<(), EncodeError> {
    let len = msg.encoded_len();
    let prefix = i32::try_from(len).ok().filter(|_| len <= max_frame_len);
    let Some(prefix) = prefix else {
        return Err(EncodeError::FrameTooLarge { len, max: max_frame_len });
    };
    buf.reserve(LEN_PREFIX + len);
    buf.put_i32(prefix);
    msg.encode(buf);
    Ok(())
}
