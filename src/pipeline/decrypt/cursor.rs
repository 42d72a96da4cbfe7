//! Where the reader is in the plaintext: one position, and the authenticated chunk that holds
//! it. The offset inside the chunk is derived from the position, never stored twice.

use std::io::Write;
use std::ops::Range;
use std::time::{Duration, Instant};

use crate::error::{Error, Result};

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

pub(crate) struct Cursor {
    /// Plaintext offset of the next byte a read returns.
    pub(crate) position: u64,
    /// The current chunk (`bytes` empty when there is none).
    chunk: Chunk,
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
}

/// `Read` and `BufRead` for a reader `$t<R>` that implements [`Chunks`] (a blanket impl over
/// `Chunks` is not allowed for foreign traits): reads, lines and other delimited reads come
/// straight from the current chunk, without a second buffer.
macro_rules! read_via_chunks {
    ($t:ident) => {
        impl<R: std::io::Read> std::io::Read for $t<R> {
            fn read(&mut self, buf: &mut [u8]) -> std::io::Result<usize> {
                Ok(self.read_out(buf)?)
            }
        }

        impl<R: std::io::Read> std::io::BufRead for $t<R> {
            fn fill_buf(&mut self) -> std::io::Result<&[u8]> {
                Ok(self.fill()?)
            }

            fn consume(&mut self, n: usize) {
                self.skip(n)
            }
        }
    };
}
pub(crate) use read_via_chunks;

/// A stream of authenticated chunks behind a [`Cursor`]: the container's `Decryptor` and the age
/// reader. What reading out of one means is written once, here: bytes from the current chunk,
/// then the next (a failure is sticky, and the position stays where the last good byte ended).
pub(crate) trait Chunks {
    fn cursor(&mut self) -> &mut Cursor;
    /// Time spent writing out (the stream's statistics).
    fn write_time(&mut self) -> &mut Duration;
    /// The sticky failure.
    fn failure(&mut self) -> &mut Option<Error>;
    /// Makes the next authenticated chunk current; false at the end (verified, or of a range).
    fn advance(&mut self) -> Result<bool>;

    /// [`Chunks::advance`], failing for good after a failure.
    fn step(&mut self) -> Result<bool> {
        if let Some(e) = self.failure() {
            return Err(e.clone());
        }
        self.advance().inspect_err(|e| {
            *self.failure() = Some(e.clone());
            let at = self.cursor().position;
            self.cursor().reset(at);
        })
    }

    /// Writes at most `limit` bytes from the current position to `w`, chunk by chunk without an
    /// intermediate copy.
    fn copy_limited(&mut self, w: &mut impl Write, limit: u64) -> Result<u64> {
        let mut total = 0u64;
        loop {
            let started = Instant::now();
            let bytes = self.cursor().available();
            let n = (bytes.len() as u64).min(limit - total) as usize;
            // Nothing current (n = 0) writes nothing: write_all of an empty slice is no call.
            w.write_all(&bytes[..n])?;
            *self.write_time() += started.elapsed();
            self.cursor().advance(n);
            total += n as u64;
            if total == limit || !self.step()? {
                return Ok(total);
            }
        }
    }

    /// A read that covers whole chunks, served without the stream's buffers (the container's
    /// direct reads); `None`: read through them.
    fn read_direct(&mut self, buf: &mut [u8]) -> Result<Option<usize>> {
        let _ = buf;
        Ok(None)
    }

    /// `Read::read`: bytes of the current chunk, else a direct read, else the next chunk's.
    fn read_out(&mut self, buf: &mut [u8]) -> Result<usize> {
        loop {
            let bytes = self.cursor().available();
            if !bytes.is_empty() {
                let n = buf.len().min(bytes.len());
                buf[..n].copy_from_slice(&bytes[..n]);
                self.cursor().advance(n);
                return Ok(n);
            }
            if let Some(n) = self.read_direct(buf)? {
                return Ok(n);
            }
            if buf.is_empty() || !self.step()? {
                return Ok(0);
            }
        }
    }

    /// `BufRead::fill_buf`: the bytes of the current chunk, stepping to the next when none are
    /// left (empty at the end).
    fn fill(&mut self) -> Result<&[u8]> {
        while self.cursor().available().is_empty() {
            if !self.step()? {
                break;
            }
        }
        Ok(self.cursor().available())
    }

    /// `BufRead::consume`.
    fn skip(&mut self, n: usize) {
        let n = n.min(self.cursor().available().len());
        self.cursor().advance(n);
    }
}
