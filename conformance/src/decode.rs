//! Decodes one connection's frames in order, the way a peer would: the first
//! frame each way is the handshake, later client frames are requests, and
//! later server frames are typed by the opcode of the request they answer.
//!
//! Every decode is complete: bytes left over after a record are an error,
//! including after the header of an error reply (which the Java client would
//! silently ignore).

use std::collections::HashMap;
use std::path::PathBuf;

use bytes::BytesMut;
use zoolock_wire::{
    ConnectRequest, ConnectResponse, DecodeError, DecodeErrorKind, Encode, OpCode, ReplyHeader, RequestFrame,
    ServerMessage, Xid,
};

use crate::trace::{Direction, Entry, Frame, Trace};

/// One frame, decoded according to its place in the connection.
#[derive(Debug, Clone, PartialEq, Eq)]
pub enum DecodedFrame {
    /// The first client frame.
    ConnectRequest(ConnectRequest),
    /// The first server frame.
    ConnectResponse(ConnectResponse),
    /// A later client frame.
    Request(RequestFrame),
    /// A later server frame.
    Server {
        /// The notification or reply.
        message: ServerMessage,
        /// The opcode of the request this replies to (ping and auth included);
        /// `None` for a watch notification.
        reply_to: Option<OpCode>,
    },
}

impl DecodedFrame {
    /// Which way the frame travels.
    pub fn direction(&self) -> Direction {
        match self {
            DecodedFrame::ConnectRequest(_) | DecodedFrame::Request(_) => Direction::C2s,
            DecodedFrame::ConnectResponse(_) | DecodedFrame::Server { .. } => Direction::S2c,
        }
    }
}

impl Encode for DecodedFrame {
    fn encoded_len(&self) -> usize {
        match self {
            DecodedFrame::ConnectRequest(r) => r.encoded_len(),
            DecodedFrame::ConnectResponse(r) => r.encoded_len(),
            DecodedFrame::Request(r) => r.encoded_len(),
            DecodedFrame::Server { message, .. } => message.encoded_len(),
        }
    }

    fn encode(&self, buf: &mut BytesMut) {
        match self {
            DecodedFrame::ConnectRequest(r) => r.encode(buf),
            DecodedFrame::ConnectResponse(r) => r.encode(buf),
            DecodedFrame::Request(r) => r.encode(buf),
            DecodedFrame::Server { message, .. } => message.encode(buf),
        }
    }
}

/// What kind of record a frame was being decoded as.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum FrameKind {
    /// The first client frame.
    ConnectRequest,
    /// The first server frame.
    ConnectResponse,
    /// A later client frame.
    Request,
    /// A later server frame.
    ServerMessage,
}

impl FrameKind {
    /// A readable name.
    pub fn as_str(self) -> &'static str {
        match self {
            FrameKind::ConnectRequest => "ConnectRequest",
            FrameKind::ConnectResponse => "ConnectResponse",
            FrameKind::Request => "request",
            FrameKind::ServerMessage => "server message",
        }
    }
}

/// A frame did not decode completely.
#[derive(Debug, Clone, PartialEq, Eq, thiserror::Error)]
#[error("cannot decode {} ({len} bytes): {error}", kind.as_str())]
pub struct FrameDecodeError {
    /// What the frame was decoded as.
    pub kind: FrameKind,
    /// Payload length.
    pub len: usize,
    /// The codec's complaint.
    pub error: DecodeError,
}

/// Per-connection decoding state: handshake progress and the opcode of every
/// request by xid, so replies can be typed.
#[derive(Debug, Clone, Default)]
pub struct StreamDecoder {
    connect_request_seen: bool,
    connect_response_seen: bool,
    pending: HashMap<Xid, OpCode>,
}

impl StreamDecoder {
    /// A decoder for a fresh connection.
    pub fn new() -> Self {
        StreamDecoder::default()
    }

    /// Decodes `frame` of the trace file `path`; a failure names the file
    /// and line.
    pub fn decode_frame(&mut self, path: &std::path::Path, frame: &Frame) -> Result<DecodedFrame, TraceDecodeError> {
        self.decode(frame.dir, &frame.payload).map_err(|error| TraceDecodeError::Frame {
            path: path.to_path_buf(),
            line: frame.line,
            dir: frame.dir,
            error,
        })
    }

    /// Decodes the next frame travelling `dir`. A reply consumes the pending
    /// entry for its xid, so a duplicate reply is an unknown-xid error.
    pub fn decode(&mut self, dir: Direction, payload: &[u8]) -> Result<DecodedFrame, FrameDecodeError> {
        let fail = |kind, error| FrameDecodeError { kind, len: payload.len(), error };
        match dir {
            Direction::C2s if !self.connect_request_seen => {
                let req = ConnectRequest::decode(payload).map_err(|e| fail(FrameKind::ConnectRequest, e))?;
                self.connect_request_seen = true;
                Ok(DecodedFrame::ConnectRequest(req))
            }
            Direction::S2c if !self.connect_response_seen => {
                let rsp = ConnectResponse::decode(payload).map_err(|e| fail(FrameKind::ConnectResponse, e))?;
                self.connect_response_seen = true;
                Ok(DecodedFrame::ConnectResponse(rsp))
            }
            Direction::C2s => {
                let req = RequestFrame::decode(payload).map_err(|e| fail(FrameKind::Request, e))?;
                self.pending.insert(req.header.xid, req.header.op);
                Ok(DecodedFrame::Request(req))
            }
            Direction::S2c => {
                let pending = &mut self.pending;
                let mut looked_up = None;
                let message = ServerMessage::decode(payload, |xid| {
                    looked_up = pending.remove(&xid);
                    looked_up
                })
                .map_err(|e| fail(FrameKind::ServerMessage, e))?;
                let reply_to = match &message {
                    ServerMessage::Notification { .. } => None,
                    ServerMessage::Reply { header, response } => {
                        if response.is_none() && payload.len() != ReplyHeader::LEN {
                            // The codec skips an error reply's body; a complete
                            // decode must not.
                            let extra = payload.len().saturating_sub(ReplyHeader::LEN);
                            let error =
                                DecodeError { kind: DecodeErrorKind::TrailingBytes(extra), offset: ReplyHeader::LEN };
                            return Err(fail(FrameKind::ServerMessage, error));
                        }
                        match header.xid {
                            Xid::PING => Some(OpCode::PING),
                            Xid::AUTH => Some(OpCode::AUTH),
                            _ => looked_up,
                        }
                    }
                };
                Ok(DecodedFrame::Server { message, reply_to })
            }
        }
    }
}

/// A frame of a trace file did not decode.
#[derive(Debug, Clone, thiserror::Error)]
#[non_exhaustive]
pub enum TraceDecodeError {
    /// A frame did not decode completely.
    #[error("{}:{line}: {dir} frame: {error}", path.display())]
    Frame {
        /// The trace file.
        path: PathBuf,
        /// 1-based line number of the frame.
        line: usize,
        /// The frame's direction.
        dir: Direction,
        /// What went wrong.
        error: FrameDecodeError,
    },
    /// An unframed (`raw`) chunk, which has no protocol decoding.
    #[error("{}:{line}: raw (unframed) chunk cannot be decoded", path.display())]
    Raw {
        /// The trace file.
        path: PathBuf,
        /// 1-based line number of the chunk.
        line: usize,
    },
}

/// Decodes every frame of `trace` with a fresh [`StreamDecoder`], stopping at
/// the first failure. Dropped frames are decoded like the others.
pub fn decode_trace(trace: &Trace) -> Result<Vec<(&Frame, DecodedFrame)>, TraceDecodeError> {
    let mut decoder = StreamDecoder::new();
    let mut out = Vec::new();
    for entry in &trace.entries {
        match entry {
            Entry::Frame(frame) => {
                out.push((frame, decoder.decode_frame(&trace.path, frame)?));
            }
            Entry::Raw(raw) => return Err(TraceDecodeError::Raw { path: trace.path.clone(), line: raw.line }),
            Entry::Close(_) | Entry::Other { .. } => {}
        }
    }
    Ok(out)
}

#[cfg(test)]
mod tests {
    use super::*;
    use zoolock_wire::{ErrorCode, Request, RequestHeader, Response};

    fn unhex(s: &str) -> Vec<u8> {
        hex::decode(s).unwrap()
    }

    fn connected() -> StreamDecoder {
        let mut d = StreamDecoder::new();
        let creq = "000000000000000000000000000027100000000000000000000000100000000000000000000000000000000000";
        let crsp = "00000000000027100100000ee07e0003000000100dde58658d46c32e0934a28feb9da5e200";
        assert!(matches!(d.decode(Direction::C2s, &unhex(creq)), Ok(DecodedFrame::ConnectRequest(_))));
        assert!(matches!(d.decode(Direction::S2c, &unhex(crsp)), Ok(DecodedFrame::ConnectResponse(_))));
        d
    }

    #[test]
    fn replies_are_typed_by_their_request() {
        let mut d = connected();
        // getData /a watch=1, xid 5
        let req = d.decode(Direction::C2s, &unhex("0000000500000004000000022f6101")).unwrap();
        assert!(matches!(req, DecodedFrame::Request(RequestFrame { request: Request::GetData(_), .. })));
        // NoNode reply for xid 5
        let rsp = d.decode(Direction::S2c, &unhex("000000050000000000000010ffffff9b")).unwrap();
        match rsp {
            DecodedFrame::Server { message: ServerMessage::Reply { header, response: None }, reply_to } => {
                assert_eq!(header.err, ErrorCode::NO_NODE);
                assert_eq!(reply_to, Some(OpCode::GET_DATA));
            }
            other => panic!("{other:?}"),
        }
        // A second reply to xid 5 has no pending request.
        let err = d.decode(Direction::S2c, &unhex("000000050000000000000010ffffff9b")).unwrap_err();
        assert_eq!(err.error.kind, DecodeErrorKind::UnknownXid(5));
    }

    #[test]
    fn pings_and_error_trailers() {
        let mut d = connected();
        let ping = RequestFrame { header: RequestHeader { xid: Xid::PING, op: OpCode::PING }, request: Request::Ping };
        assert_eq!(d.decode(Direction::C2s, &ping.to_bytes()).unwrap(), DecodedFrame::Request(ping));
        let rsp = d.decode(Direction::S2c, &unhex("fffffffe000000000000001000000000")).unwrap();
        assert!(matches!(
            rsp,
            DecodedFrame::Server {
                message: ServerMessage::Reply { response: Some(Response::Empty), .. },
                reply_to: Some(OpCode::PING)
            }
        ));
        d.decode(Direction::C2s, &unhex("0000000600000002000000022f61ffffffff")).unwrap();
        let err = d.decode(Direction::S2c, &unhex("000000060000000000000010ffffff9b00")).unwrap_err();
        assert_eq!(err.error, DecodeError { kind: DecodeErrorKind::TrailingBytes(1), offset: 16 });
        assert_eq!(err.kind, FrameKind::ServerMessage);
    }

    #[test]
    fn handshake_must_decode_completely() {
        let mut d = StreamDecoder::new();
        let err = d.decode(Direction::C2s, &[0, 0, 0]).unwrap_err();
        assert_eq!(err.kind, FrameKind::ConnectRequest);
        assert_eq!(err.error.kind, DecodeErrorKind::Truncated);
    }
}
