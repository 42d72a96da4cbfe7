//! The filling side of the engine's writer (pipeline/sink.rs), for every format: the input cut into
//! chunks, each filled in a buffer from `write` or read straight into it, and the buffers the
//! workers give back kept for reuse: inputs (touched all through by plaintext) apart from
//! outputs (touched only as far as output was written), which keeps the resident set small.

use crate::error::Result;

/// A worker's positional read of an input chunk that found the end: the input file shrank while
/// it was read (the one mapping of "input shorter than expected" for both writers).
pub(crate) fn input_shrank(e: std::io::Error) -> crate::Error {
    match e.kind() {
        std::io::ErrorKind::UnexpectedEof => {
            crate::Error::Io(std::sync::Arc::new(std::io::Error::new(
                std::io::ErrorKind::UnexpectedEof,
                "the input file became shorter while it was being read",
            )))
        }
        _ => crate::Error::from(e),
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

/// A chunk's input: its buffer, and where its bytes are in it.
pub(crate) struct Filled {
    pub(crate) buf: Vec<u8>,
    pub(crate) at: usize,
    pub(crate) len: usize,
}

impl Filled {
    /// The chunk's bytes.
    pub(crate) fn bytes(&self) -> &[u8] {
        &self.buf[self.at..self.at + self.len]
    }
}

/// Reads the `len` bytes at `offset` of the regular file `file` into `buf`, placed for a fast
/// copy ([`aligned_at`], from `at`), on a worker; the time it took goes to `read`.
#[cfg(unix)]
pub(crate) fn read_chunk_at(
    file: &std::fs::File,
    mut buf: Vec<u8>,
    at: usize,
    offset: u64,
    len: usize,
    read: &mut std::time::Duration,
) -> Result<Filled> {
    use std::os::unix::fs::FileExt;
    let at = aligned_at(&buf, at, offset);
    crate::stats::timed(read, || file.read_exact_at(&mut buf[at..at + len], offset))
        .map_err(input_shrank)?;
    Ok(Filled { buf, at, len })
}

/// Slack at the start of every chunk buffer, for [`aligned_at`].
pub(crate) const ALIGN: usize = 64;

/// The first position at or after `at` in `buf` whose address is `offset` modulo [`ALIGN`]:
/// where to read the bytes at `offset` of a file (0 for a pipe's), so that the kernel's copy
/// into the buffer runs at full speed. Linux copies to and from user memory with `rep movsb` on
/// CPUs with fast short moves (FSRM), and on AMD Zen 3 that runs at a fifth of its speed when
/// the destination lies 1 to 31 bytes past the source modulo 4096 (and a little slower up to
/// 63): 256 MiB from the page cache into an 8 MiB buffer took 0.100 s at a distance of 21, the
/// one a chunk's bytes had (after a 5-byte frame header, in a block glibc maps at 16 bytes past
/// a page), and 0.020 s at 0 or 64 (AMD EPYC, 2 cores). glibc avoids such moves in its own
/// `memcpy` (its bug 27130); the kernel does not. A distance that is a multiple of 64 is safe.
/// `buf` needs [`ALIGN`] bytes beyond what `at` would have needed.
pub(crate) fn aligned_at(buf: &[u8], at: usize, offset: u64) -> usize {
    let addr = (buf.as_ptr() as usize).wrapping_add(at) % ALIGN;
    let want = (offset % ALIGN as u64) as usize;
    at + (want + ALIGN - addr) % ALIGN
}

/// Which of the intake's spares a buffer becomes again ([`Intake::give_back`]).
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub(crate) enum Spare {
    Input,
    Output,
    /// Not one of the intake's buffers (small ones: markers, headers, tables): dropped.
    Drop,
}

/// Chunk buffers being filled, and spares.
pub struct Intake {
    /// The buffer being filled: the chunk's bytes go at `fill_at..fill_at + chunk_size`.
    fill: Vec<u8>,
    fill_len: usize,
    fill_at: usize,
    /// Where chunk bytes go in a buffer at the least ([`aligned_at`] moves them on).
    at: usize,
    chunk_size: usize,
    /// Length of every new buffer.
    buffer_len: usize,
    spare_inputs: Vec<Vec<u8>>,
    spare_outputs: Vec<Vec<u8>>,
}

impl Intake {
    /// Chunks of `chunk_size` bytes placed at `at` or up to [`ALIGN`] - 1 bytes after it
    /// ([`aligned_at`]) in buffers of `buffer_len` bytes (slack included).
    pub(crate) fn new(at: usize, chunk_size: usize, buffer_len: usize) -> Self {
        let fill = vec![0u8; buffer_len];
        Intake {
            fill_at: aligned_at(&fill, at, 0),
            fill,
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
        let (from, to) = (self.fill_at + self.fill_len, self.fill_at + self.chunk_size);
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

    /// The filled chunk; a spare (or new) buffer takes its place.
    pub(crate) fn take(&mut self) -> Filled {
        let next = self.input_buffer();
        let at = std::mem::replace(&mut self.fill_at, aligned_at(&next, self.at, 0));
        let len = std::mem::take(&mut self.fill_len);
        let buf = std::mem::replace(&mut self.fill, next);
        Filled { buf, at, len }
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

    /// `buf` back for reuse as the spare `spare` says.
    pub(crate) fn give_back(&mut self, buf: Vec<u8>, spare: Spare) {
        match spare {
            Spare::Input => self.recycle_input(buf),
            Spare::Output => self.recycle_output(buf),
            Spare::Drop => {}
        }
    }

    pub(crate) fn recycle_input(&mut self, input: Vec<u8>) {
        self.spare_inputs.push(input);
    }

    pub(crate) fn recycle_output(&mut self, output: Vec<u8>) {
        self.spare_outputs.push(output);
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    /// The position is the first at or after `at` whose address is the offset modulo 64, on
    /// buffers at every alignment.
    #[test]
    fn bytes_are_placed_at_their_offset_modulo_64() {
        let block = vec![0u8; 4096];
        for skew in 0..ALIGN {
            let buf = &block[skew..];
            for at in [0, 5, 10, 63, 64] {
                for offset in [0u64, 1, 21, 63, 64, 4096 + 59, u64::MAX] {
                    let p = aligned_at(buf, at, offset);
                    assert!((at..at + ALIGN).contains(&p), "{skew} {at} {offset}: {p}");
                    let addr = buf.as_ptr() as usize + p;
                    assert_eq!(addr % ALIGN, (offset % 64) as usize, "{skew} {at} {offset}");
                }
            }
        }
    }

    /// Each buffer the intake fills starts its chunk at an address that is a multiple of 64,
    /// and `take` says where.
    #[test]
    fn the_intake_fills_aligned_chunks_and_says_where() {
        let mut intake = Intake::new(5, 100, 100 + 5 + ALIGN);
        for round in 0..3u8 {
            assert_eq!(intake.write(&[round; 100]), 100);
            assert!(intake.is_full());
            let Filled { buf, at, len } = intake.take();
            assert_eq!(len, 100);
            assert!((5..5 + ALIGN).contains(&at));
            assert_eq!((buf.as_ptr() as usize + at) % ALIGN, 0);
            assert_eq!(&buf[at..at + len], &[round; 100]);
            intake.recycle_input(buf);
        }
    }
}
