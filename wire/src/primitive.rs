//! Jute primitives: nom parsers over a complete frame, and the matching writers.
//!
//! Every parser works on a whole frame already in memory (nom `complete`
//! semantics): running out of bytes is an error, never "need more".

use alloc::string::String;
use alloc::vec::Vec;

use bytes::{BufMut, Bytes, BytesMut};

use crate::codes::{AddWatchMode, CreateMode, ErrorCode, EventType, KeeperState, OpCode, Perms, WatcherType, Xid};
use nom::IResult;
use nom::error::{ErrorKind, ParseError};

use crate::error::{DecodeError, DecodeErrorKind};

/// A parse failure that remembers where in the frame it happened.
#[derive(Debug)]
pub(crate) struct Failure<'a> {
    pub(crate) at: &'a [u8],
    pub(crate) kind: DecodeErrorKind,
}

impl<'a> ParseError<&'a [u8]> for Failure<'a> {
    fn from_error_kind(input: &'a [u8], _kind: ErrorKind) -> Self {
        // nom's own primitives only fail by running out of input.
        Failure { at: input, kind: DecodeErrorKind::Truncated }
    }

    fn append(_input: &'a [u8], _kind: ErrorKind, other: Self) -> Self {
        other
    }
}

pub(crate) type PResult<'a, T> = IResult<&'a [u8], T, Failure<'a>>;

/// Fails the parse at `at` with `kind`.
pub(crate) fn fail<T>(at: &[u8], kind: DecodeErrorKind) -> PResult<'_, T> {
    Err(nom::Err::Failure(Failure { at, kind }))
}

/// Runs `parser` over a whole frame payload and requires it to consume every byte.
pub(crate) fn complete<'a, T>(
    frame: &'a [u8],
    parser: impl FnOnce(&'a [u8]) -> PResult<'a, T>,
) -> Result<T, DecodeError> {
    let (rest, value) = parser(frame).map_err(|e| to_decode_error(frame, e))?;
    if rest.is_empty() {
        Ok(value)
    } else {
        Err(DecodeError { kind: DecodeErrorKind::TrailingBytes(rest.len()), offset: frame.len() - rest.len() })
    }
}

/// Converts a nom error into a [`DecodeError`] with an offset into `frame`.
pub(crate) fn to_decode_error(frame: &[u8], err: nom::Err<Failure<'_>>) -> DecodeError {
    match err {
        nom::Err::Error(f) | nom::Err::Failure(f) => {
            DecodeError { offset: frame.len().saturating_sub(f.at.len()), kind: f.kind }
        }
        // Complete parsers never ask for more input; report it as truncation.
        nom::Err::Incomplete(_) => DecodeError { kind: DecodeErrorKind::Truncated, offset: frame.len() },
    }
}

pub(crate) fn int(i: &[u8]) -> PResult<'_, i32> {
    nom::number::complete::be_i32(i)
}

pub(crate) fn long(i: &[u8]) -> PResult<'_, i64> {
    nom::number::complete::be_i64(i)
}

/// Java readers treat any non-zero byte as true.
pub(crate) fn boolean(i: &[u8]) -> PResult<'_, bool> {
    let (rest, b) = nom::number::complete::be_u8(i)?;
    Ok((rest, b != 0))
}

/// A length or count prefix: `None` for the null marker -1. `unit` is the
/// smallest encoded size of one element, used to reject impossible counts
/// before allocating.
fn length(i: &[u8], unit: usize) -> PResult<'_, Option<usize>> {
    let (rest, n) = int(i)?;
    if n == -1 {
        return Ok((rest, None));
    }
    let Ok(len) = usize::try_from(n) else {
        return fail(i, DecodeErrorKind::NegativeLength(n));
    };
    if len.saturating_mul(unit) > rest.len() {
        return fail(i, DecodeErrorKind::LengthExceedsFrame { len, remaining: rest.len() });
    }
    Ok((rest, Some(len)))
}

fn bytes_of_len(i: &[u8]) -> PResult<'_, Option<&[u8]>> {
    let (rest, len) = length(i, 1)?;
    match len {
        None => Ok((rest, None)),
        Some(len) => {
            let (rest, data) = nom::bytes::complete::take(len)(rest)?;
            Ok((rest, Some(data)))
        }
    }
}

/// A jute `buffer`; `None` is the null buffer (length -1).
pub(crate) fn buffer(i: &[u8]) -> PResult<'_, Option<Bytes>> {
    let (rest, data) = bytes_of_len(i)?;
    Ok((rest, data.map(Bytes::copy_from_slice)))
}

/// A jute `ustring` that must not be null.
pub(crate) fn ustring(i: &[u8]) -> PResult<'_, String> {
    let (rest, data) = bytes_of_len(i)?;
    match data {
        None => fail(i, DecodeErrorKind::NullString),
        Some(raw) => match core::str::from_utf8(raw) {
            Ok(s) => Ok((rest, String::from(s))),
            Err(_) => fail(i, DecodeErrorKind::InvalidUtf8),
        },
    }
}

/// A jute `vector`. A null vector decodes as empty: no reply or request needs
/// to tell the two apart, and Java treats both as "nothing".
pub(crate) fn vector<'a, T>(
    i: &'a [u8],
    min_elem_len: usize,
    mut elem: impl FnMut(&'a [u8]) -> PResult<'a, T>,
) -> PResult<'a, Vec<T>> {
    let (mut rest, count) = length(i, min_elem_len)?;
    let count = count.unwrap_or(0);
    let mut out = Vec::with_capacity(count);
    for _ in 0..count {
        let (r, v) = elem(rest)?;
        out.push(v);
        rest = r;
    }
    Ok((rest, out))
}

/// A jute `ustring` that may be null (length -1 is `None`).
fn optional_ustring(i: &[u8]) -> PResult<'_, Option<String>> {
    // Peek the length: -1 is null, anything else is a normal string.
    let (rest, len) = int(i)?;
    if len == -1 { Ok((rest, None)) } else { ustring(i).map(|(r, s)| (r, Some(s))) }
}

// ---- writers -------------------------------------------------------------

/// Writes a length prefix. Lengths are bounded by the frame limit before any
/// encoding starts, so the saturation never triggers in a framed message.
fn put_len(buf: &mut BytesMut, len: usize) {
    buf.put_i32(i32::try_from(len).unwrap_or(i32::MAX));
}

pub(crate) fn put_bool(buf: &mut BytesMut, v: bool) {
    buf.put_u8(u8::from(v));
}

pub(crate) fn put_buffer(buf: &mut BytesMut, v: Option<&[u8]>) {
    match v {
        None => buf.put_i32(-1),
        Some(data) => {
            put_len(buf, data.len());
            buf.put_slice(data);
        }
    }
}

pub(crate) fn put_ustring(buf: &mut BytesMut, v: &str) {
    put_len(buf, v.len());
    buf.put_slice(v.as_bytes());
}

pub(crate) fn put_vector<T>(buf: &mut BytesMut, items: &[T], mut put: impl FnMut(&mut BytesMut, &T)) {
    put_len(buf, items.len());
    for item in items {
        put(buf, item);
    }
}

// ---- encoded sizes ---------------------------------------------------------

pub(crate) fn buffer_len(v: Option<&[u8]>) -> usize {
    4 + v.map_or(0, <[u8]>::len)
}

pub(crate) fn ustring_len(v: &str) -> usize {
    4 + v.len()
}

// ---- fields and records ----------------------------------------------------

/// One jute field type: how it parses, how many bytes it takes and how it is
/// written. A record is its fields in declaration order ([`record!`]), so
/// each layout is stated once, in the struct, instead of in three functions.
pub(crate) trait Field: Sized {
    /// Fewest bytes the field can take; bounds vector counts before allocating.
    const MIN_LEN: usize;
    /// Parses the field at the front of `i`.
    fn parse(i: &[u8]) -> PResult<'_, Self>;
    /// Exact number of bytes [`Field::put_field`] writes.
    fn field_len(&self) -> usize;
    /// Appends the field to `buf`.
    fn put_field(&self, buf: &mut BytesMut);
}

/// Fixed-size fields, `Type: size, parser, writer;`, the writer called as
/// `writer(buf, value)`.
macro_rules! fixed_fields {
    ($($ty:ty: $len:literal, $parse:expr, $put:expr;)*) => {$(
        impl Field for $ty {
            const MIN_LEN: usize = $len;
            fn parse(i: &[u8]) -> PResult<'_, Self> {
                $parse(i)
            }
            fn field_len(&self) -> usize {
                $len
            }
            fn put_field(&self, buf: &mut BytesMut) {
                $put(buf, *self);
            }
        }
    )*};
}

fixed_fields! {
    i32: 4, int, BytesMut::put_i32;
    i64: 8, long, BytesMut::put_i64;
    bool: 1, boolean, put_bool;
}

/// The open `i32` code sets travel as their raw value.
macro_rules! code_fields {
    ($($ty:ident),* $(,)?) => {
        fixed_fields! {
            $($ty: 4, |i| int(i).map(|(i, v)| (i, $ty(v))), |buf: &mut BytesMut, v: $ty| buf.put_i32(v.0);)*
        }
    };
}

code_fields!(AddWatchMode, CreateMode, ErrorCode, EventType, KeeperState, OpCode, Perms, WatcherType, Xid);

/// The trailing readOnly byte of the handshake records, which old (≤3.3)
/// peers leave out: absent at the end of the frame is `None`. Only valid as
/// a record's last field.
impl Field for Option<bool> {
    const MIN_LEN: usize = 0;
    fn parse(i: &[u8]) -> PResult<'_, Self> {
        if i.is_empty() {
            return Ok((i, None));
        }
        let (i, b) = boolean(i)?;
        Ok((i, Some(b)))
    }
    fn field_len(&self) -> usize {
        usize::from(self.is_some())
    }
    fn put_field(&self, buf: &mut BytesMut) {
        if let Some(b) = self {
            put_bool(buf, *b);
        }
    }
}

/// A `ustring` that must not be null.
impl Field for String {
    const MIN_LEN: usize = 4;
    fn parse(i: &[u8]) -> PResult<'_, Self> {
        ustring(i)
    }
    fn field_len(&self) -> usize {
        ustring_len(self)
    }
    fn put_field(&self, buf: &mut BytesMut) {
        put_ustring(buf, self);
    }
}

/// A `ustring` that may be null.
impl Field for Option<String> {
    const MIN_LEN: usize = 4;
    fn parse(i: &[u8]) -> PResult<'_, Self> {
        optional_ustring(i)
    }
    fn field_len(&self) -> usize {
        4 + self.as_ref().map_or(0, String::len)
    }
    fn put_field(&self, buf: &mut BytesMut) {
        match self {
            None => buf.put_i32(-1),
            Some(s) => put_ustring(buf, s),
        }
    }
}

/// A `buffer`; `None` is the null buffer.
impl Field for Option<Bytes> {
    const MIN_LEN: usize = 4;
    fn parse(i: &[u8]) -> PResult<'_, Self> {
        buffer(i)
    }
    fn field_len(&self) -> usize {
        buffer_len(self.as_deref())
    }
    fn put_field(&self, buf: &mut BytesMut) {
        put_buffer(buf, self.as_deref());
    }
}

/// A `vector`; a null vector decodes as empty (see [`vector`]).
impl<T: Field> Field for Vec<T> {
    const MIN_LEN: usize = 4;
    fn parse(i: &[u8]) -> PResult<'_, Self> {
        vector(i, T::MIN_LEN, T::parse)
    }
    fn field_len(&self) -> usize {
        4 + self.iter().map(Field::field_len).sum::<usize>()
    }
    fn put_field(&self, buf: &mut BytesMut) {
        put_vector(buf, self, |b, v| v.put_field(b));
    }
}

/// Declares a record struct whose wire form is its fields in declaration
/// order, and derives its [`Field`] and [`Encode`](crate::Encode) impls from
/// that one list.
macro_rules! record {
    (
        $(#[$meta:meta])*
        pub struct $name:ident {
            $( $(#[$fmeta:meta])* pub $field:ident: $ty:ty, )*
        }
    ) => {
        $(#[$meta])*
        pub struct $name {
            $( $(#[$fmeta])* pub $field: $ty, )*
        }

        impl $crate::primitive::Field for $name {
            const MIN_LEN: usize = 0 $(+ <$ty as $crate::primitive::Field>::MIN_LEN)*;

            fn parse(i: &[u8]) -> $crate::primitive::PResult<'_, Self> {
                $( let (i, $field) = <$ty as $crate::primitive::Field>::parse(i)?; )*
                Ok((i, $name { $($field),* }))
            }

            fn field_len(&self) -> usize {
                0 $(+ $crate::primitive::Field::field_len(&self.$field))*
            }

            fn put_field(&self, buf: &mut bytes::BytesMut) {
                $( $crate::primitive::Field::put_field(&self.$field, buf); )*
            }
        }

        impl $crate::Encode for $name {
            fn encoded_len(&self) -> usize {
                $crate::primitive::Field::field_len(self)
            }

            fn encode(&self, buf: &mut bytes::BytesMut) {
                $crate::primitive::Field::put_field(self, buf);
            }
        }
    };
}

pub(crate) use record;
