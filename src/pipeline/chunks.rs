//! The engine's chunk reader, written once for every format it reads: [`ChunkReader`] holds the
//! position and the authenticated chunk that holds it (a [`Cursor`]), and implements `Read`,
//! `BufRead`, `Seek`, whole copies and byte ranges over a format's [`ChunkSource`] (the zseal
//! container, age STREAM, seekable zstd inside age), which only makes the next authenticated
//! chunk current and, over a seekable input, moves to a position.
//!
//! What reading out of a chunk stream means is decided here: bytes come from the current chunk,
//! then the next; a failure is sticky, and the position stays where the last good byte ended.

use std::io::{self, BufRead, Read, Seek, SeekFrom, Write};
use std::ops::Range;
use std::sync::atomic::AtomicU64;
use std::sync::Arc;
use std::time::Instant;

use super::source::{ChunkSource, Promises, SeekSource};
use crate::error::{Error, Result};
use crate::stats::StreamStats;

/// An authenticated chunk: its bytes are `buf[bytes]`, the plaintext from offset `start`.
pub(crate) struct Chunk {
    pub(crate) buf: Vec<u8>,
    pub(crate) bytes: Range<usize>,
    pub(crate) start: u64,
}

impl Chunk {
    fn len(&self) -> u64 {
        self.bytes.len() as u64
    }

    /// True when plaintext offset `position` is in this chunk.
    pub(crate) fn holds(&self, position: u64) -> bool {
        position >= self.start && position < self.start + self.len()
    }
}

/// Where the reader is in the plaintext: one position, the authenticated chunk that holds it
/// (the offset inside the chunk is derived from the position, never stored twice), and the
/// sticky failure that ends reading.
pub struct Cursor {
    /// Plaintext offset of the next byte a read returns.
    pub(crate) position: u64,
    /// The current chunk (`bytes` empty when there is none).
    chunk: Chunk,
    /// Set by the first failure; every later read returns it.
    pub(crate) failed: Option<Error>,
}

impl Cursor {
    pub(crate) fn new() -> Self {
        Cursor {
            position: 0,
            chunk: Chunk {
                buf: Vec::new(),
                bytes: 0..0,
                start: 0,
            },
            failed: None,
        }
    }

    /// The bytes from the position to the end of the current chunk (empty when the position is
    /// not inside it).
    pub(crate) fn available(&self) -> &[u8] {
        if !self.chunk.holds(self.position) {
            return &[];
        }
        let from = self.chunk.bytes.start + (self.position - self.chunk.start) as usize;
        &self.chunk.buf[from..self.chunk.bytes.end]
    }

    pub(crate) fn advance(&mut self, n: usize) {
        self.position += n as u64;
    }

    /// Makes `chunk` current; returns the buffer it replaces, for reuse.
    pub(crate) fn load(&mut self, chunk: Chunk) -> Vec<u8> {
        std::mem::replace(&mut self.chunk, chunk).buf
    }

    /// True when `position` is inside the current chunk: moving there needs no frame.
    pub(crate) fn holds(&self, position: u64) -> bool {
        self.chunk.holds(position)
    }

    /// Takes the current chunk out, leaving none; `None` when no chunk is current.
    pub(crate) fn take(&mut self) -> Option<Chunk> {
        (!self.chunk.bytes.is_empty()).then(|| {
            let buf = std::mem::take(&mut self.chunk.buf);
            Chunk {
                buf,
                bytes: std::mem::replace(&mut self.chunk.bytes, 0..0),
                start: self.chunk.start,
            }
        })
    }

    /// Forgets the current chunk and moves to `position`.
    pub(crate) fn reset(&mut self, position: u64) {
        self.chunk.bytes = 0..0;
        self.position = position;
    }

    /// The sticky failure, if any, as an error to return.
    pub(crate) fn check(&self) -> Result<()> {
        match &self.failed {
            Some(e) => Err(e.clone()),
            None => Ok(()),
        }
    }

    /// Records `e` as the sticky failure (the position stays after the last good byte).
    pub(crate) fn fail(&mut self, e: Error) -> Error {
        self.failed = Some(e.clone());
        let at = self.position;
        self.reset(at);
        e
    }
}

/// [`ChunkSource::advance`], failing for good after a failure.
pub(crate) fn step<S: ChunkSource + ?Sized>(source: &mut S, cursor: &mut Cursor) -> Result<bool> {
    cursor.check()?;
    source.advance(cursor).map_err(|e| cursor.fail(e))
}

/// Writes at most `limit` bytes from the current position to `w`, chunk by chunk without an
/// intermediate copy.
pub(crate) fn copy_limited<S: ChunkSource + ?Sized>(
    source: &mut S,
    cursor: &mut Cursor,
    w: &mut dyn Write,
    limit: u64,
) -> Result<u64> {
    let mut total = 0u64;
    loop {
        let started = Instant::now();
        let bytes = cursor.available();
        let n = (bytes.len() as u64).min(limit - total) as usize;
        // Nothing current (n = 0) writes nothing: write_all of an empty slice is no call.
        w.write_all(&bytes[..n])?;
        *source.write_time() += started.elapsed();
        cursor.advance(n);
        total += n as u64;
        if total == limit || !step(source, cursor)? {
            return Ok(total);
        }
    }
}

/// The engine's reader of one format's chunks: `Read` and `BufRead` (reads, lines and other
/// delimited reads come straight from the current chunk, without a second buffer), `Seek` over a
/// seekable input, whole copies and byte ranges. Reaching the end (a read returning 0, or
/// [`ChunkReader::copy_to`] returning `Ok`) means the whole file was authenticated.
///
/// A format's own accessors (a container's header and digest) are the source's, reached through
/// `Deref`.
pub struct ChunkReader<S> {
    pub(crate) source: S,
    pub(crate) cursor: Cursor,
}

impl<S> std::ops::Deref for ChunkReader<S> {
    type Target = S;

    fn deref(&self) -> &S {
        &self.source
    }
}

impl<S: ChunkSource> ChunkReader<S> {
    pub(crate) fn from_source(source: S) -> Self {
        ChunkReader {
            source,
            cursor: Cursor::new(),
        }
    }

    /// The same reader over another source type (`wrap` of this one), position and all.
    pub(crate) fn map_source<T>(self, wrap: impl FnOnce(S) -> T) -> ChunkReader<T> {
        ChunkReader {
            source: wrap(self.source),
            cursor: self.cursor,
        }
    }

    /// Writes the plaintext from the current position to `w`, chunk by chunk without an
    /// intermediate copy, and verifies the end of the file. Returns the bytes written.
    pub fn copy_to(&mut self, mut w: impl Write) -> Result<u64> {
        copy_limited(&mut self.source, &mut self.cursor, &mut w, u64::MAX)
    }

    /// Writes plaintext bytes `start..end` (`None`: to the end) of a stream that cannot seek (a
    /// pipe) to `w`. A success means the whole file, or for a container everything up to the
    /// range's end, authenticated; a range past the end fails when the stream ends there. Must
    /// be called before anything was read.
    pub fn copy_range_streaming(
        &mut self,
        start: u64,
        end: Option<u64>,
        mut w: impl Write,
    ) -> Result<u64> {
        let range = ByteRange::new(start, end)?;
        self.source
            .copy_range_streaming(&mut self.cursor, range, &mut w)
    }

    /// Chunks, threads and time per stage so far.
    pub fn stats(&self) -> StreamStats {
        self.source.stats()
    }

    /// Length of the header in bytes (of an armored age file: decoded).
    pub fn header_len(&self) -> u64 {
        self.source.header_len()
    }

    /// What the format promises a read to its end: a whole-file digest, that a cut at a chunk
    /// boundary is refused, how positions are found.
    pub fn promises(&self) -> Promises {
        self.source.promises()
    }

    /// The plaintext length, once the whole file was read from its first byte and verified.
    pub fn verified_len(&self) -> Option<u64> {
        self.source.verified_len(&self.cursor)
    }

    /// True once the whole file was read from its first byte and authenticated to its end.
    pub fn is_verified(&self) -> bool {
        self.verified_len().is_some()
    }

    /// `Read::read`: bytes of the current chunk, else a direct read, else the next chunk's.
    fn read_out(&mut self, buf: &mut [u8]) -> Result<usize> {
        loop {
            let bytes = self.cursor.available();
            if !bytes.is_empty() {
                let n = buf.len().min(bytes.len());
                buf[..n].copy_from_slice(&bytes[..n]);
                self.cursor.advance(n);
                return Ok(n);
            }
            if self.cursor.failed.is_none() {
                let direct = self.source.read_direct(&mut self.cursor, buf);
                if let Some(n) = direct.map_err(|e| self.cursor.fail(e))? {
                    return Ok(n);
                }
            }
            if buf.is_empty() || !step(&mut self.source, &mut self.cursor)? {
                return Ok(0);
            }
        }
    }

    /// `BufRead::fill_buf`: the bytes of the current chunk, stepping to the next when none are
    /// left (empty at the end).
    fn fill(&mut self) -> Result<&[u8]> {
        while self.cursor.available().is_empty() {
            if !step(&mut self.source, &mut self.cursor)? {
                break;
            }
        }
        Ok(self.cursor.available())
    }
}

impl<S: ChunkSource> ChunkReader<S> {
    /// See [`ChunkSource::verified_chunks`].
    pub fn chunk_count(&self) -> Option<u64> {
        self.source.verified_chunks()
    }

    /// See [`ChunkSource::digest_hex`].
    pub fn digest_hex(&self) -> Option<String> {
        self.source.digest_hex()
    }

    /// See [`ChunkSource::requires_signer`].
    pub fn requires_signer(&self) -> bool {
        self.source.requires_signer()
    }

    /// See [`ChunkSource::header_warning`].
    pub fn header_warning(&self) -> Option<String> {
        self.source.header_warning()
    }

    /// See [`ChunkSource::resume_unit`].
    pub fn resume_unit(&self) -> u64 {
        self.source.resume_unit()
    }
}

impl<S: SeekSource> ChunkReader<S> {
    /// The plaintext length, from the authenticated end of the file.
    pub fn plaintext_len(&mut self) -> Result<u64> {
        self.source.plaintext_len(&mut self.cursor)
    }

    /// For a whole read of a seekable input: see [`SeekSource::use_index`].
    pub fn use_index(&mut self) -> Result<()> {
        self.source.use_index(&mut self.cursor)
    }

    /// Writes the plaintext from byte `from` to the end into `w`, for a download resumed after
    /// its first `from` bytes, which `kept` gives (docs/OBJECTS.md, "Resuming a download"):
    /// they are checked as the format can ([`SeekSource::hash_kept`]: a container's are hashed
    /// again, `from` a multiple of [`ChunkSource::resume_unit`], and the digest checked at the end as
    /// a whole read checks it; an age file's are not read). Only the chunks from `from` on are
    /// read. A success means every chunk written was authenticated and, for a container, the
    /// digest of the kept part and the rest matched; with `from` 0 it is a whole read.
    pub fn copy_resumed_to(
        &mut self,
        from: u64,
        mut kept: impl Read,
        w: impl Write,
    ) -> Result<u64> {
        self.source.hash_kept(from, &mut kept)?;
        self.copy_range_to(from, None, w)
    }

    /// For a file read from a regular file: `file` is a second handle to that file (a clone),
    /// from which the workers read long chunk bodies themselves, by offset, adding what they
    /// read to `count`; the calling thread reads only what finds them (a container's frame
    /// headers; a crypt4gh file's segments once its last one was opened). `file` must be the
    /// file this reader reads (a chunk read from anything else fails its authentication).
    /// Ignored unless `file` is a regular file on a unix system, and for an age file.
    pub fn read_bodies_from(
        &mut self,
        file: std::fs::File,
        count: Option<Arc<AtomicU64>>,
    ) -> Result<()> {
        self.source.read_bodies_from(file, count)
    }

    /// Reads nothing past plaintext byte `end - 1` until raised; `None` lifts the limit. A
    /// random-access reader that knows the extent of the request it serves calls this before
    /// reading, so that the window (which otherwise reads ahead) fetches only what it needs.
    pub fn limit_read_ahead(&mut self, end: Option<u64>) -> Result<()> {
        self.source.limit_read_ahead(&mut self.cursor, end)
    }

    /// Moves to plaintext offset `pos`: the next read starts with the chunk that holds it.
    fn reposition(&mut self, pos: u64) -> Result<()> {
        self.cursor.check()?;
        self.source.reposition(&mut self.cursor, pos)
    }

    /// Writes plaintext bytes `start..end` (`None`: to the end) to `w`, reading only what covers
    /// them. A range past the end fails before anything is written, naming the real plaintext
    /// length. Returns the bytes written.
    pub fn copy_range_to(
        &mut self,
        start: u64,
        end: Option<u64>,
        mut w: impl Write,
    ) -> Result<u64> {
        let range = ByteRange::new(start, end)?;
        let len = self.plaintext_len()?;
        let end = range.end_within(len)?;
        self.reposition(start)?;
        self.source.begin_range(&mut self.cursor, start, end)?;
        let n = copy_limited(&mut self.source, &mut self.cursor, &mut w, end - start)?;
        if self.source.end_range(&mut self.cursor, end == len)? {
            while step(&mut self.source, &mut self.cursor)? {}
        }
        Ok(n)
    }
}

impl<S: ChunkSource> Read for ChunkReader<S> {
    fn read(&mut self, buf: &mut [u8]) -> io::Result<usize> {
        Ok(self.read_out(buf)?)
    }
}

impl<S: ChunkSource> BufRead for ChunkReader<S> {
    fn fill_buf(&mut self) -> io::Result<&[u8]> {
        Ok(self.fill()?)
    }

    fn consume(&mut self, n: usize) {
        let n = n.min(self.cursor.available().len());
        self.cursor.advance(n);
    }
}

impl<S: SeekSource> Seek for ChunkReader<S> {
    /// Seeks in the plaintext. `SeekFrom::End` and the first seek read what random access needs
    /// (a container's index, an age file's final chunk, a zstd seek table).
    fn seek(&mut self, to: SeekFrom) -> io::Result<u64> {
        let here = self.cursor.position;
        let target = match to {
            SeekFrom::Start(p) => Some(p),
            SeekFrom::Current(d) => here.checked_add_signed(d),
            SeekFrom::End(d) => self.plaintext_len()?.checked_add_signed(d),
        };
        let target = target.ok_or_else(|| {
            io::Error::new(
                io::ErrorKind::InvalidInput,
                "seek before the start of the plaintext",
            )
        })?;
        if self.cursor.failed.is_none() && (target == here || self.cursor.holds(target)) {
            // Inside the current chunk: nothing to fetch, and the chunks read ahead stay.
            self.cursor.position = target;
        } else {
            self.reposition(target)?;
        }
        Ok(target)
    }
}

/// A byte range of the plaintext: `start..end`, or `start..` to the end.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub struct ByteRange {
    /// First byte.
    pub start: u64,
    /// One past the last byte; `None`: to the end of the plaintext.
    pub end: Option<u64>,
}

impl ByteRange {
    /// A range; one that ends before it starts is an error.
    pub fn new(start: u64, end: Option<u64>) -> Result<Self> {
        match end {
            Some(e) if e < start => Err(Error::InvalidOption(format!(
                "the range ends before it starts ({e} < {start})"
            ))),
            _ => Ok(ByteRange { start, end }),
        }
    }

    /// The range's length, when it has an end.
    pub fn len(&self) -> Option<u64> {
        self.end.map(|e| e - self.start)
    }

    /// True for a range with an end equal to its start.
    pub fn is_empty(&self) -> bool {
        self.len() == Some(0)
    }

    /// Checks the range against a plaintext of `len` bytes; returns its end.
    pub(crate) fn end_within(&self, len: u64) -> Result<u64> {
        let past = |what, at| Error::RangePastEnd { what, at, len };
        if self.start > len {
            return Err(past("starts", self.start));
        }
        match self.end {
            Some(e) if e > len => Err(past("ends", e)),
            Some(e) => Ok(e),
            None => Ok(len),
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn byte_ranges_know_their_length_and_emptiness() {
        let r = |start, end| ByteRange::new(start, end).unwrap();
        assert_eq!(
            (r(3, Some(3)).len(), r(3, Some(3)).is_empty()),
            (Some(0), true)
        );
        assert_eq!(
            (r(3, Some(10)).len(), r(3, Some(10)).is_empty()),
            (Some(7), false)
        );
        assert_eq!((r(3, None).len(), r(3, None).is_empty()), (None, false));
        assert_eq!((r(0, None).len(), r(0, None).is_empty()), (None, false));
        let e = ByteRange::new(4, Some(3)).unwrap_err();
        assert!(
            e.to_string().contains("ends before it starts (3 < 4)"),
            "{e}"
        );
    }
}
