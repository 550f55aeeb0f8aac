//! multi (14) and multiRead (22): a header-delimited list of ops or results.

use alloc::vec::Vec;

use bytes::{BufMut, BytesMut};

use crate::Encode;
use crate::codes::{ErrorCode, OpCode};
use crate::error::DecodeErrorKind;
use crate::primitive::{PResult, boolean, fail, int, put_bool};
use crate::request::Request;
use crate::response::Response;

/// `MultiHeader {type, done, err}` is 9 bytes.
const HEADER_LEN: usize = 9;

/// One result inside a multi or multiRead reply.
#[derive(Debug, Clone, PartialEq, Eq)]
pub enum MultiResult {
    /// The op succeeded. `op` is the result type on the wire: 1 for create,
    /// 15 for create2/createContainer/createTTL, else the op's own code.
    Ok {
        /// The result type.
        op: OpCode,
        /// Its body.
        response: Response,
    },
    /// An `ErrorResult`. In a failed multi, ops before the failing one carry
    /// OK, the failing one its code, and later ones RuntimeInconsistency.
    Error(ErrorCode),
}

impl MultiResult {
    /// The first error that caused a multi to fail: neither OK nor
    /// RuntimeInconsistency.
    pub fn first_failure(results: &[MultiResult]) -> Option<(usize, ErrorCode)> {
        results.iter().enumerate().find_map(|(idx, r)| match r {
            MultiResult::Error(e) if !e.is_ok() && *e != ErrorCode::RUNTIME_INCONSISTENCY => Some((idx, *e)),
            _ => None,
        })
    }
}

/// Op types allowed inside a request of type `kind`.
fn allowed(kind: OpCode, op: OpCode) -> bool {
    if kind == OpCode::MULTI_READ {
        matches!(op, OpCode::GET_CHILDREN | OpCode::GET_DATA)
    } else {
        matches!(
            op,
            OpCode::CREATE
                | OpCode::CREATE2
                | OpCode::CREATE_CONTAINER
                | OpCode::CREATE_TTL
                | OpCode::DELETE
                | OpCode::SET_DATA
                | OpCode::CHECK
        )
    }
}

/// A MultiHeader. Its `err` field is not kept: requests carry a dummy -1 and
/// error results repeat the code in their body.
struct Header {
    op: OpCode,
    done: bool,
}

fn header(i: &[u8]) -> PResult<'_, Header> {
    let (i, op) = int(i)?;
    let (i, done) = boolean(i)?;
    let (i, _err) = int(i)?;
    Ok((i, Header { op: OpCode(op), done }))
}

fn put_header(buf: &mut BytesMut, op: OpCode, done: bool, err: ErrorCode) {
    buf.put_i32(op.0);
    put_bool(buf, done);
    buf.put_i32(err.0);
}

fn put_terminator(buf: &mut BytesMut) {
    put_header(buf, OpCode::ERROR, true, ErrorCode(-1));
}

/// Reads MultiHeader-led items up to the `done` header. `item` gets the
/// header, where it started (for error offsets) and the bytes after it.
fn parse_until_done<'a, T>(
    mut i: &'a [u8],
    mut item: impl FnMut(Header, &'a [u8], &'a [u8]) -> PResult<'a, T>,
) -> PResult<'a, Vec<T>> {
    let mut items = Vec::new();
    loop {
        let (rest, h) = header(i)?;
        if h.done {
            return Ok((rest, items));
        }
        let (rest, v) = item(h, i, rest)?;
        items.push(v);
        i = rest;
    }
}

pub(crate) fn parse_ops(i: &[u8], kind: OpCode) -> PResult<'_, Vec<Request>> {
    parse_until_done(i, |h, start, rest| {
        if !allowed(kind, h.op) {
            return fail(start, DecodeErrorKind::NotAllowedInMulti(h.op, kind));
        }
        Request::parse(h.op, rest)
    })
}

pub(crate) fn ops_len(ops: &[Request]) -> usize {
    ops.iter().map(|op| HEADER_LEN + op.encoded_len()).sum::<usize>() + HEADER_LEN
}

/// Java writes err -1 in every request MultiHeader; the server ignores it.
pub(crate) fn put_ops(buf: &mut BytesMut, ops: &[Request]) {
    for op in ops {
        put_header(buf, op.op_code(), false, ErrorCode(-1));
        op.encode(buf);
    }
    put_terminator(buf);
}

pub(crate) fn parse_results(i: &[u8]) -> PResult<'_, Vec<MultiResult>> {
    parse_until_done(i, |h, start, rest| match h.op {
        OpCode::ERROR => {
            // The code travels twice; the body is the one C reads.
            let (rest, e) = int(rest)?;
            Ok((rest, MultiResult::Error(ErrorCode(e))))
        }
        OpCode::CREATE
        | OpCode::CREATE2
        | OpCode::DELETE
        | OpCode::SET_DATA
        | OpCode::CHECK
        | OpCode::GET_CHILDREN
        | OpCode::GET_DATA => {
            let (rest, response) = Response::parse(h.op, rest)?;
            Ok((rest, MultiResult::Ok { op: h.op, response }))
        }
        OpCode(other) => fail(start, DecodeErrorKind::InvalidMultiResult(other)),
    })
}

pub(crate) fn results_len(results: &[MultiResult]) -> usize {
    results
        .iter()
        .map(|r| {
            HEADER_LEN
                + match r {
                    MultiResult::Ok { response, .. } => response.encoded_len(),
                    MultiResult::Error(_) => 4,
                }
        })
        .sum::<usize>()
        + HEADER_LEN
}

pub(crate) fn put_results(buf: &mut BytesMut, results: &[MultiResult]) {
    for r in results {
        match r {
            MultiResult::Ok { op, response } => {
                put_header(buf, *op, false, ErrorCode::OK);
                response.encode(buf);
            }
            MultiResult::Error(e) => {
                put_header(buf, OpCode::ERROR, false, *e);
                buf.put_i32(e.0);
            }
        }
    }
    put_terminator(buf);
}
