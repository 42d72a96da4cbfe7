//! The filling side of both writers (a zseal container's and an age file's): the input cut into
//! chunks, each filled in a buffer from `write` or read straight into it, and the buffers the
//! workers give back kept for reuse: inputs (touched all through by plaintext) apart from
//! outputs (touched only as far as output was written), which keeps the resident set small.

use std::io::Read;
use std::time::Duration;

use crate::error::{Error, Result};
use crate::stats::timed;

/// A writer that takes its input through an [`Intake`] (the container's `Encryptor` and the age
/// writer): taking input in, and the sticky failure, are written once, here.
pub(crate) trait Fill: Sized {
    fn intake(&mut self) -> &mut Intake;
    /// Time spent reading input (the stream's statistics).
    fn read_time(&mut self) -> &mut Duration;
    /// The sticky failure.
    fn failure(&mut self) -> &mut Option<Error>;
    /// Hands the full chunk to a worker.
    fn submit(&mut self) -> Result<()>;

    /// The failure, if the stream has failed.
    fn check(&mut self) -> Result<()> {
        match self.failure() {
            Some(e) => Err(e.clone()),
            None => Ok(()),
        }
    }

    /// Runs `f`; if it fails, the stream stays failed.
    fn guard(&mut self, f: impl FnOnce(&mut Self) -> Result<()>) -> Result<()> {
        let r = f(self);
        if let Err(e) = &r {
            *self.failure() = Some(e.clone());
        }
        r
    }

    /// Reads `r` to its end straight into chunk buffers (no intermediate copy); returns the
    /// bytes read. Short reads from pipes still make full chunks.
    fn fill_from(&mut self, r: &mut impl Read) -> Result<u64> {
        self.check()?;
        let mut total = 0u64;
        loop {
            let mut read = Duration::ZERO;
            let room = self.intake().room();
            let n = timed(&mut read, || crate::io::read_full(r, room))?;
            *self.read_time() += read;
            self.intake().filled(n);
            total += n as u64;
            // read_full stops short only at the end of the input.
            if !self.intake().is_full() {
                return Ok(total);
            }
            self.guard(|s| s.submit())?;
        }
    }

    /// `Write::write`: as much of `buf` as the chunk has room for, submitted once full.
    fn fill_with(&mut self, buf: &[u8]) -> Result<usize> {
        self.check()?;
        let n = self.intake().write(buf);
        if self.intake().is_full() {
            self.guard(|s| s.submit())?;
        }
        Ok(n)
    }
}

/// Hands each whole chunk of `f`, a regular file, from its current position to `submit` (the
/// shared file and the chunk's offset), and leaves `f` after the last of them: the workers read
/// those chunks themselves with positional reads, and the caller reads the rest in order (bytes
/// appended meanwhile included). Other files are left as they are. Returns the bytes handed out.
#[cfg(unix)]
pub(crate) fn file_chunks(
    f: &std::fs::File,
    chunk: usize,
    mut submit: impl FnMut(&std::sync::Arc<std::fs::File>, u64) -> Result<()>,
) -> Result<u64> {
    use std::io::{Seek, SeekFrom};
    let Some(meta) = f.metadata().ok().filter(|m| m.is_file()) else {
        return Ok(0);
    };
    let start = (&mut &*f).stream_position()?;
    let c = chunk as u64;
    let file = std::sync::Arc::new(f.try_clone()?);
    let mut pos = start;
    for _ in 0..meta.len().saturating_sub(start) / c {
        submit(&file, pos)?;
        pos += c;
    }
    (&mut &*f).seek(SeekFrom::Start(pos))?;
    Ok(pos - start)
}

/// Chunk buffers being filled, and spares.
pub(crate) struct Intake {
    /// The buffer being filled: the chunk's bytes go at `at..at + chunk_size`.
    fill: Vec<u8>,
    fill_len: usize,
    at: usize,
    chunk_size: usize,
    /// Length of every new buffer.
    buffer_len: usize,
    spare_inputs: Vec<Vec<u8>>,
    spare_outputs: Vec<Vec<u8>>,
}

impl Intake {
    /// Chunks of `chunk_size` bytes placed at `at` in buffers of `buffer_len` bytes.
    pub(crate) fn new(at: usize, chunk_size: usize, buffer_len: usize) -> Self {
        Intake {
            fill: vec![0u8; buffer_len],
            fill_len: 0,
            at,
            chunk_size,
            buffer_len,
            spare_inputs: Vec::new(),
            spare_outputs: Vec::new(),
        }
    }

    pub(crate) fn chunk_size(&self) -> usize {
        self.chunk_size
    }

    /// Bytes in the chunk being filled.
    pub(crate) fn len(&self) -> usize {
        self.fill_len
    }

    pub(crate) fn is_full(&self) -> bool {
        self.fill_len == self.chunk_size
    }

    /// The unfilled rest of the chunk, to read into (then [`Intake::filled`]).
    pub(crate) fn room(&mut self) -> &mut [u8] {
        let (from, to) = (self.at + self.fill_len, self.at + self.chunk_size);
        &mut self.fill[from..to]
    }

    /// `n` more bytes were read into [`Intake::room`].
    pub(crate) fn filled(&mut self, n: usize) {
        self.fill_len += n;
    }

    /// Copies as much of `buf` as the chunk has room for; returns how much.
    pub(crate) fn write(&mut self, buf: &[u8]) -> usize {
        let room = self.room();
        let n = buf.len().min(room.len());
        room[..n].copy_from_slice(&buf[..n]);
        self.fill_len += n;
        n
    }

    /// The filled buffer and its chunk's length; a spare (or new) buffer takes its place.
    pub(crate) fn take(&mut self) -> (Vec<u8>, usize) {
        let next = self.input_buffer();
        let len = std::mem::take(&mut self.fill_len);
        (std::mem::replace(&mut self.fill, next), len)
    }

    /// A buffer to read a chunk into (a spare input, or a new one).
    pub(crate) fn input_buffer(&mut self) -> Vec<u8> {
        self.spare_inputs
            .pop()
            .unwrap_or_else(|| vec![0u8; self.buffer_len])
    }

    /// A buffer for a job's output (a spare output, or a new one, which the allocator gives as
    /// fresh zeroed pages: touched only as far as output is written).
    pub(crate) fn output_buffer(&mut self) -> Vec<u8> {
        self.spare_outputs
            .pop()
            .unwrap_or_else(|| vec![0u8; self.buffer_len])
    }

    /// A job's buffers, back for reuse.
    pub(crate) fn recycle(&mut self, input: Vec<u8>, output: Vec<u8>) {
        self.recycle_input(input);
        self.spare_outputs.push(output);
    }

    pub(crate) fn recycle_input(&mut self, input: Vec<u8>) {
        self.spare_inputs.push(input);
    }

    pub(crate) fn recycle_output(&mut self, output: Vec<u8>) {
        self.spare_outputs.push(output);
    }
}
