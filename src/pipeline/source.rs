//! What a format gives the engine's reader ([`ChunkReader`](super::ChunkReader)): a
//! [`ChunkSource`] makes its authenticated chunks current in order and, over a seekable input, a
//! [`SeekSource`] finds a position. What a format can do beyond that is asked of it through
//! capabilities with defaults ([`Promises`], the digest, a required signer, how a resumed
//! download restarts, reading bodies by offset), never decided by the format's name.

use std::io::{self, Read, Write};
use std::sync::atomic::AtomicU64;
use std::sync::Arc;
use std::time::Duration;

use super::chunks::{copy_limited, ByteRange, Cursor};
use crate::error::{Error, Result};
use crate::stats::StreamStats;

/// What a format promises a reader that reads it to its end, asked instead of its name.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
#[non_exhaustive]
pub struct Promises {
    /// A digest of the whole plaintext is checked at the end (a container with a hash).
    pub digest: bool,
    /// A file cut at a chunk boundary, or with chunks dropped at its end, is refused (a
    /// container's final frame, age's last-chunk flag). Without it, such a cut goes unseen.
    pub whole: bool,
    /// How a position is found.
    pub seek: SeekBy,
}

/// How a format finds the chunk holding a plaintext position.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
#[non_exhaustive]
pub enum SeekBy {
    /// From an authenticated index (a container's).
    Index,
    /// By arithmetic: every chunk but the last has one size (age STREAM).
    Arithmetic,
    /// From a table inside the plaintext (seekable zstd's seek table).
    Table,
}

/// What a format gives the engine's reader: authenticated chunks in order.
///
/// Public only because the readers' types name it; implemented inside the crate.
#[ambassador::delegatable_trait]
pub trait ChunkSource {
    /// Makes the next authenticated chunk current in `cursor`; false at the end (verified, or
    /// of a range).
    fn advance(&mut self, cursor: &mut Cursor) -> Result<bool>;

    /// A read that covers whole chunks, served without the stream's buffers (the container's
    /// direct reads); `None`: read through them. A failure here is made sticky by the caller.
    fn read_direct(&mut self, cursor: &mut Cursor, buf: &mut [u8]) -> Result<Option<usize>> {
        let _ = (cursor, buf);
        Ok(None)
    }

    /// Time spent writing out (the stream's statistics).
    fn write_time(&mut self) -> &mut Duration;

    /// What a read to the end proves, and how positions are found.
    fn promises(&self) -> Promises;

    /// Chunks, threads and time per stage so far.
    fn stats(&self) -> StreamStats;

    /// Length of the header in bytes (of an armored age file: decoded).
    fn header_len(&self) -> u64;

    /// The plaintext length, once the whole file was read from its first byte to its verified
    /// end (`cursor` is the reader's).
    fn verified_len(&self, cursor: &Cursor) -> Option<u64>;

    /// The file's chunks as `inspect` counts them (a container's data frames, an age file's or
    /// a crypt4gh file's segments), once its end was authenticated; `None` before. Not the
    /// chunks the reader opened, which count a chunk read twice (the last, read first for the
    /// length) twice.
    fn verified_chunks(&self) -> Option<u64>;

    /// The whole-plaintext digest in the standard tool's hex form, once verified; `None`
    /// before, and for a file or format that records none.
    fn digest_hex(&self) -> Option<String> {
        None
    }

    /// True when a signer is required: a range then reads the whole file, in order
    /// (FORMAT.md §12.4).
    fn requires_signer(&self) -> bool {
        false
    }

    /// What the opened header shows that a reader should be told of, though it is not refused
    /// (a crypt4gh file whose packets come from several writer keys, FORMAT.md §13.10).
    fn header_warning(&self) -> Option<String> {
        None
    }

    /// The plaintext offsets a resumed download may start at are multiples of this (1 by
    /// default).
    fn resume_unit(&self) -> u64 {
        1
    }

    /// Writes plaintext bytes `range` of a stream that cannot seek to `w`, from a fresh reader:
    /// by default every chunk is read in order, the range written, and the rest read to the end,
    /// so that a success means the whole file authenticated.
    fn copy_range_streaming(
        &mut self,
        cursor: &mut Cursor,
        range: ByteRange,
        w: &mut dyn Write,
    ) -> Result<u64> {
        read_through_range(self, cursor, range, w)
    }
}

/// Writes plaintext bytes `range` to `w` while reading every chunk of `source` in order, from
/// the first to the verified end: the range is released as a whole read releases its bytes.
pub(crate) fn read_through_range<S: ChunkSource + ?Sized>(
    source: &mut S,
    cursor: &mut Cursor,
    range: ByteRange,
    w: &mut dyn Write,
) -> Result<u64> {
    let past = |what, at, len| Error::RangePastEnd { what, at, len };
    let start = range.start;
    let skipped = copy_limited(source, cursor, &mut io::sink(), start)?;
    if skipped < start {
        return Err(past("starts", start, skipped));
    }
    let n = copy_limited(source, cursor, w, range.len().unwrap_or(u64::MAX))?;
    let rest = copy_limited(source, cursor, &mut io::sink(), u64::MAX)?;
    match range.end.filter(|&e| e > start + n) {
        Some(e) => Err(past("ends", e, start + n + rest)),
        None => Ok(n),
    }
}

/// What a format gives the engine's reader over a seekable input: its length and a way to move.
#[ambassador::delegatable_trait]
pub trait SeekSource: ChunkSource {
    /// The plaintext length, from the authenticated end of the file.
    fn plaintext_len(&mut self, cursor: &mut Cursor) -> Result<u64>;

    /// Moves so that the next chunk made current is the one holding plaintext offset `pos`, and
    /// the cursor's position to `pos` (called only without a failure).
    fn reposition(&mut self, cursor: &mut Cursor, pos: u64) -> Result<()>;

    /// Reads nothing past plaintext byte `end - 1` until raised; `None` lifts the limit.
    fn limit_read_ahead(&mut self, cursor: &mut Cursor, end: Option<u64>) -> Result<()>;

    /// Before the bytes of a range `start..end` (already positioned at `start`) are copied.
    fn begin_range(&mut self, cursor: &mut Cursor, start: u64, end: u64) -> Result<()> {
        let _ = start;
        self.limit_read_ahead(cursor, Some(end))
    }

    /// After a range was copied; `to_end`: it reached the end of the plaintext. True: read on
    /// to the end, for the checks a read to the end makes (the container's digest and trailer).
    fn end_range(&mut self, cursor: &mut Cursor, to_end: bool) -> Result<bool> {
        let _ = (cursor, to_end);
        Ok(false)
    }

    /// Before a whole read: reads now what random access would read first (a seek table, a
    /// last segment to check), so that the rest is read on every core. By default nothing.
    fn use_index(&mut self, cursor: &mut Cursor) -> Result<()> {
        let _ = cursor;
        Ok(())
    }

    /// Before a download resumed after its first `from` plaintext bytes, which `kept` holds,
    /// reads on: checks them as the format can (a container hashes them into the digest its
    /// end is checked against). By default they are not read (nothing to check them against).
    fn hash_kept(&mut self, from: u64, kept: &mut dyn Read) -> Result<()> {
        let _ = (from, kept);
        Ok(())
    }

    /// `file` is a second handle to the regular file being read, from which the workers may
    /// read by offset, adding what they read to `count`. By default ignored: everything is
    /// read through the stream.
    fn read_bodies_from(
        &mut self,
        file: std::fs::File,
        count: Option<Arc<AtomicU64>>,
    ) -> Result<()> {
        let _ = (file, count);
        Ok(())
    }
}
