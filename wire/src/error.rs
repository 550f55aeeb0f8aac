//! Decode and encode errors. A decode error names what was malformed and where.

use crate::codes::OpCode;

/// Bytes from the peer could not be decoded. `offset` counts from the start of
/// the frame payload (after the 4-byte length prefix).
#[derive(Debug, Clone, Copy, PartialEq, Eq, thiserror::Error)]
#[error("{kind} at offset {offset}")]
pub struct DecodeError {
    /// What was wrong.
    pub kind: DecodeErrorKind,
    /// Byte offset into the frame payload where the bad field starts.
    pub offset: usize,
}

/// The ways a frame can be malformed.
#[derive(Debug, Clone, Copy, PartialEq, Eq, thiserror::Error)]
#[non_exhaustive]
pub enum DecodeErrorKind {
    /// The frame ended in the middle of a field.
    #[error("frame ends inside a field")]
    Truncated,
    /// A length or count was negative (and not the null marker -1).
    #[error("negative length {0}")]
    NegativeLength(i32),
    /// A length or count promises more bytes than the frame has left.
    #[error("length {len} exceeds the {remaining} bytes left in the frame")]
    LengthExceedsFrame {
        /// The declared length or count.
        len: usize,
        /// Bytes left in the frame.
        remaining: usize,
    },
    /// A frame length prefix above the configured maximum.
    #[error("frame length {len} exceeds the maximum {max}")]
    FrameTooLarge {
        /// The declared frame length.
        len: usize,
        /// The configured maximum.
        max: usize,
    },
    /// A string field held bytes that are not UTF-8.
    #[error("string is not valid UTF-8")]
    InvalidUtf8,
    /// A string field that may not be null was null (length -1).
    #[error("null string where a value is required")]
    NullString,
    /// An opcode this codec does not know.
    #[error("unknown opcode {0}")]
    UnknownOpCode(i32),
    /// An opcode that has no request body record of its own (for example a
    /// notification, or `createSession`).
    #[error("opcode {0} is not a client request")]
    NotARequest(OpCode),
    /// An op type that may not appear inside a multi of this kind.
    #[error("opcode {0} is not allowed inside {1}")]
    NotAllowedInMulti(OpCode, OpCode),
    /// A multi response result type that does not match any op result.
    #[error("multi result type {0} is not valid")]
    InvalidMultiResult(i32),
    /// A reply's xid matches no pending request, so its body cannot be typed.
    #[error("reply xid {0} matches no pending request")]
    UnknownXid(i32),
    /// The record was decoded but bytes were left over.
    #[error("{0} trailing bytes after the record")]
    TrailingBytes(usize),
}

/// A record could not be framed.
#[derive(Debug, Clone, PartialEq, Eq, thiserror::Error)]
#[non_exhaustive]
pub enum EncodeError {
    /// The encoded payload would exceed the configured maximum frame length.
    #[error("encoded frame of {len} bytes exceeds the maximum {max}")]
    FrameTooLarge {
        /// Payload length that would have been written.
        len: usize,
        /// The configured maximum.
        max: usize,
    },
}
