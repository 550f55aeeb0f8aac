//! Curator's node-data compression: one gzip member (RFC 1952), as its
//! `GzipCompressionProvider` writes for `create().compressed()`, and for
//! every create and setData once a Curator 5.8+ client is built with
//! `enableCompression()`.
//!
//! Such a Curator client decompresses every getData and fails the read (a
//! `ZipException`, or `DataInconsistency` in the background) on data that is
//! not gzip, empty data included; one without compression reads gzip bytes
//! as they are. zoolock reads both: where it reads data Curator may have
//! written (revocation requests, shared counts, participants' data),
//! gzip-framed data is decompressed and anything else is taken as plain. It
//! writes gzip only when told to ([`Compression::Gzip`]), so a fleet turns
//! compression on for everyone at once, as Curator's requires.
//!
//! Decoding is as strict as Curator's: the deflate stream must end exactly
//! where the 8-byte trailer starts, and the trailer's CRC-32 and length must
//! match; reserved header flags are refused too (RFC 1952). The output is
//! bounded by the caller's limit, checked against the trailer's length
//! before anything is inflated, so a small node cannot expand into a large
//! allocation.

use alloc::borrow::Cow;
use alloc::vec;
use alloc::vec::Vec;

use bytes::Bytes;
use miniz_oxide::inflate::TINFLStatus;
use miniz_oxide::inflate::core::{self as inflate, DecompressorOxide, inflate_flags};

/// The gzip magic and the deflate method byte: what marks data as
/// gzip-framed.
const MAGIC: [u8; 3] = [0x1f, 0x8b, 8];
/// The fixed part of the header: magic, method, flags, mtime, xfl, os.
const HEADER: usize = 10;
/// CRC-32 and length, both little-endian.
const TRAILER: usize = 8;
/// The shortest deflate stream (an empty fixed block).
const MIN_DEFLATE: usize = 2;

const FHCRC: u8 = 1 << 1;
const FEXTRA: u8 = 1 << 2;
const FNAME: u8 = 1 << 3;
const FCOMMENT: u8 = 1 << 4;
const RESERVED: u8 = 0xe0;

/// The largest data a recipe accepts decompressed where it has no smaller
/// bound of its own: ZooKeeper's default `jute.maxbuffer` (1 MiB).
pub const MAX_DECOMPRESSED: usize = 1 << 20;

/// How the node data zoolock's recipes write is framed.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Default)]
#[non_exhaustive]
pub enum Compression {
    /// As given (Curator's default).
    #[default]
    None,
    /// Gzip, as Curator with `enableCompression()` writes and expects:
    /// lock and lease node data (empty data too), `__REVOKE__`, shared
    /// counts.
    Gzip,
}

impl Compression {
    /// `data` framed for the node (`None` hands it back as it is).
    pub fn encode(self, data: Bytes) -> Bytes {
        match self {
            Compression::None => data,
            Compression::Gzip => Bytes::from(compress(&data)),
        }
    }
}

/// Why gzip-framed data does not decode. The bytes came from the server
/// (another client wrote them): never a local fault.
#[derive(Debug, Clone, Copy, PartialEq, Eq, thiserror::Error)]
#[non_exhaustive]
pub enum GzipError {
    /// The data does not start with the gzip magic and the deflate method.
    #[error("not gzip data")]
    NotGzip,
    /// The data ends inside the header or before a whole trailer.
    #[error("gzip data is truncated")]
    Truncated,
    /// Reserved header flags are set, or the header CRC does not match.
    #[error("malformed gzip header")]
    Header,
    /// The trailer says the data inflates to more than the caller accepts.
    #[error("gzip data inflates to {size} bytes, more than {limit}")]
    TooLarge {
        /// The length the trailer declares.
        size: u32,
        /// The caller's limit.
        limit: usize,
    },
    /// The deflate stream is invalid, does not end where the trailer
    /// starts, or inflates to another length than the trailer says.
    #[error("corrupt deflate stream")]
    Corrupt,
    /// The CRC-32 of the inflated data does not match the trailer.
    #[error("gzip checksum mismatch")]
    Checksum,
}

/// Whether `data` is gzip-framed (starts with the magic and the deflate
/// method); such data is decoded, anything else is plain.
pub fn is_gzip(data: &[u8]) -> bool {
    data.starts_with(&MAGIC)
}

/// `data` as one gzip member with the header Java 16+ writes (no flags,
/// mtime 0, OS 255), deflated at zlib's default level as Java's `Deflater`.
pub fn compress(data: &[u8]) -> Vec<u8> {
    let deflated = miniz_oxide::deflate::compress_to_vec(data, 6);
    let mut out = Vec::with_capacity(HEADER + deflated.len() + TRAILER);
    out.extend_from_slice(&MAGIC);
    out.extend_from_slice(&[0, 0, 0, 0, 0, 0, 0xff]);
    out.extend_from_slice(&deflated);
    out.extend_from_slice(&crc32(data).to_le_bytes());
    // ISIZE is the length modulo 2^32 (RFC 1952); node data is far smaller.
    out.extend_from_slice(&(data.len() as u32).to_le_bytes());
    out
}

/// The data of one gzip member, at most `limit` bytes; fails as
/// [`GzipError`] says, never panics.
pub fn decompress(data: &[u8], limit: usize) -> Result<Vec<u8>, GzipError> {
    if !is_gzip(data) {
        return Err(if MAGIC.starts_with(data) { GzipError::Truncated } else { GzipError::NotGzip });
    }
    let start = header_len(data)?;
    let end = data.len().checked_sub(TRAILER).filter(|&end| end >= start + MIN_DEFLATE).ok_or(GzipError::Truncated)?;
    let (deflated, trailer) = data.split_at(end);
    let deflated = deflated.get(start..).ok_or(GzipError::Truncated)?;
    let (crc, size) = (le32(trailer, 0), le32(trailer, 4));
    let len = usize::try_from(size).ok().filter(|&len| len <= limit).ok_or(GzipError::TooLarge { size, limit })?;
    // One byte more than declared: a stream that inflates to more than the
    // trailer says fills it and is caught, rather than silently truncated.
    let mut out = vec![0; len.saturating_add(1)];
    let flags = inflate_flags::TINFL_FLAG_USING_NON_WRAPPING_OUTPUT_BUF;
    let mut inflater = DecompressorOxide::new();
    let (status, read, written) = inflate::decompress(&mut inflater, deflated, &mut out, 0, flags);
    if status != TINFLStatus::Done || read != deflated.len() || written != len {
        return Err(GzipError::Corrupt);
    }
    out.truncate(len);
    if crc32(&out) != crc {
        return Err(GzipError::Checksum);
    }
    Ok(out)
}

/// Node data as a recipe reads it: gzip-framed data decompressed (at most
/// `limit` bytes), anything else as it is.
pub fn decode(data: &[u8], limit: usize) -> Result<Cow<'_, [u8]>, GzipError> {
    if is_gzip(data) { decompress(data, limit).map(Cow::Owned) } else { Ok(Cow::Borrowed(data)) }
}

/// The length of the header, its optional fields included.
fn header_len(data: &[u8]) -> Result<usize, GzipError> {
    let Some(&flags) = data.get(3).filter(|_| data.len() >= HEADER) else { return Err(GzipError::Truncated) };
    if flags & RESERVED != 0 {
        return Err(GzipError::Header);
    }
    let mut at = HEADER;
    if flags & FEXTRA != 0 {
        at += 2 + usize::from(le16(data, at)?);
    }
    for flag in [FNAME, FCOMMENT] {
        if flags & flag != 0 {
            let rest = data.get(at..).ok_or(GzipError::Truncated)?;
            at += rest.iter().position(|&b| b == 0).ok_or(GzipError::Truncated)? + 1;
        }
    }
    if flags & FHCRC != 0 {
        let header = data.get(..at).ok_or(GzipError::Truncated)?;
        if le16(data, at)? != crc32(header) as u16 {
            return Err(GzipError::Header);
        }
        at += 2;
    }
    if at > data.len() {
        return Err(GzipError::Truncated);
    }
    Ok(at)
}

fn le16(data: &[u8], at: usize) -> Result<u16, GzipError> {
    match data.get(at..at + 2) {
        Some(&[a, b]) => Ok(u16::from_le_bytes([a, b])),
        _ => Err(GzipError::Truncated),
    }
}

/// The little-endian u32 at `at` of the 8-byte trailer.
fn le32(trailer: &[u8], at: usize) -> u32 {
    match trailer.get(at..at + 4) {
        Some(&[a, b, c, d]) => u32::from_le_bytes([a, b, c, d]),
        _ => 0,
    }
}

fn crc32(data: &[u8]) -> u32 {
    let mut hasher = crc32fast::Hasher::new();
    hasher.update(data);
    hasher.finalize()
}
