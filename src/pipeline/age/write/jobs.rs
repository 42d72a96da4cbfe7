//! The age writer's jobs: a chunk of input made a zstd frame, and a run of age plaintext sealed as
//! STREAM chunks (and, into a regular file, written where it goes); the pieces of plaintext the
//! sealing jobs share without copying.

use std::ops::Range;
use std::sync::Arc;

use super::super::super::intake::{input_shrank, Filled, Spare};
use super::super::super::offset::Slot;
use super::super::GROUP;
use crate::codec::Codec;
use crate::crypto::aead::{stream_nonce, PayloadCipher};
use crate::error::Result;
use crate::format::age::{CHUNK, CHUNK_CT, TAG};
use crate::stats::{timed, ChunkTimes};

/// Age plaintext per sealing job with compression: 16 STREAM chunks of the zstd stream.
pub(super) const SEAL_BYTES: usize = GROUP * CHUNK;

/// STREAM chunks a job seals before it writes them into the output file, from one buffer of
/// 256 KiB that stays in the core's cache (the whole job's output in one buffer would be written
/// from memory); see docs/PERFORMANCE.md §6.
const WRITE_CHUNKS: usize = 4;

/// What the workers need: the STREAM cipher, and how chunks become zstd frames.
pub(super) struct Work {
    pub(super) cipher: PayloadCipher,
    /// `None`: the plaintext is the input (`-c none`).
    pub(super) codec: Option<Codec>,
    pub(super) chunk_log2: u8,
}

/// A run of age plaintext bytes: part of a frame (or, without compression, of an input buffer or
/// of the input file itself), shared by the sealing jobs it spans, so that no byte is copied on
/// the calling thread.
pub(crate) struct Piece {
    pub(super) src: Source,
    /// Offsets in the buffer, or in the file.
    pub(super) range: Range<u64>,
}

pub(crate) enum Source {
    /// A buffer, and where it goes back when the last piece of it is sealed.
    Buf(Arc<Vec<u8>>, Spare),
    /// Without compression, a regular input file: the sealing job reads its bytes itself.
    #[cfg(unix)]
    File(Arc<std::fs::File>),
}

impl Piece {
    pub(super) fn whole(buf: Vec<u8>) -> Piece {
        let n = buf.len();
        Piece::part(Arc::new(buf), Spare::Drop, 0..n)
    }

    pub(super) fn part(buf: Arc<Vec<u8>>, spare: Spare, range: Range<usize>) -> Piece {
        Piece {
            src: Source::Buf(buf, spare),
            range: range.start as u64..range.end as u64,
        }
    }

    pub(super) fn len(&self) -> usize {
        (self.range.end - self.range.start) as usize
    }

    /// Copies `dst.len()` bytes of the piece, from `skip` bytes into it, into `dst`.
    pub(super) fn copy_to(&self, skip: usize, dst: &mut [u8]) -> Result<()> {
        let from = self.range.start + skip as u64;
        match &self.src {
            Source::Buf(b, _) => {
                let from = from as usize;
                dst.copy_from_slice(&b[from..from + dst.len()]);
            }
            #[cfg(unix)]
            Source::File(f) => {
                use std::os::unix::fs::FileExt;
                f.read_exact_at(dst, from).map_err(input_shrank)?;
            }
        }
        Ok(())
    }
}

/// Fills `dst` with the next bytes of `pieces`, from `(piece, offset in it)` in `at`, moved on.
pub(super) fn gather(pieces: &[Piece], at: &mut (usize, usize), mut dst: &mut [u8]) -> Result<()> {
    while !dst.is_empty() {
        let (p, skip) = *at;
        let piece = &pieces[p];
        let take = (piece.len() - skip).min(dst.len());
        let (now, rest) = dst.split_at_mut(take);
        piece.copy_to(skip, now)?;
        dst = rest;
        *at = match skip + take == piece.len() {
            true => (p + 1, 0),
            false => (p, skip + take),
        };
    }
    Ok(())
}

impl Source {
    pub(super) fn share(&self) -> Source {
        match self {
            Source::Buf(b, s) => Source::Buf(Arc::clone(b), *s),
            #[cfg(unix)]
            Source::File(f) => Source::File(Arc::clone(f)),
        }
    }
}

/// A job's result, in stream order.
pub(crate) enum Done {
    /// A chunk of the input as one zstd frame: `frame[..len]`, of `plain` input bytes.
    Frame {
        frame: Vec<u8>,
        len: usize,
        plain: usize,
        input: Vec<u8>,
        times: ChunkTimes,
    },
    /// A chunk that does not compress, as a raw-block frame of its bytes where they are (in
    /// `src` from `offset`): the block headers go between them, nothing is copied. The buffers
    /// the job did not need come back too.
    Raw {
        src: Source,
        offset: u64,
        plain: usize,
        unused: Vec<Vec<u8>>,
        times: ChunkTimes,
    },
    /// Sealed STREAM chunks, `len` bytes: in `out[..len]` to be written, or (`wrote`) already
    /// written by the job into its reserved place, `out` then holding only its last few; the
    /// pieces they were made of, and how many input bytes they complete (for progress without
    /// compression).
    Sealed {
        out: Vec<u8>,
        len: usize,
        pieces: Vec<Piece>,
        input: u64,
        times: ChunkTimes,
        wrote: bool,
    },
}

impl Work {
    /// The chunk `input` as one zstd frame in `out`.
    pub(super) fn frame(&self, input: Filled, mut out: Vec<u8>) -> Result<Done> {
        let mut times = ChunkTimes::default();
        let (plain, len) = (input.bytes(), input.len);
        if out.len() < len {
            out.resize(len, 0);
        }
        let codec = self.codec.unwrap_or(Codec::None);
        // None when the chunk looks incompressible (the codec's probe) or does not shrink.
        let compressed = timed(&mut times.codec, || {
            codec.compress(plain, &mut out, self.chunk_log2)
        })?;
        let Some(n) = compressed else {
            return Ok(Done::Raw {
                offset: input.at as u64,
                src: Source::Buf(Arc::new(input.buf), Spare::Input),
                plain: len,
                unused: vec![out],
                times,
            });
        };
        Ok(Done::Frame {
            frame: out,
            len: n,
            plain: len,
            input: input.buf,
            times,
        })
    }

    /// Seals the `len` bytes of `pieces` as STREAM chunks `first..`; `last`: the final chunk is
    /// among them (the last, which may be full, or empty when it is the only one). Given its
    /// place in the output file (`slot`), the job writes them there, [`WRITE_CHUNKS`] at a time
    /// from one small buffer that stays in the core's cache; otherwise they are all left in
    /// `out` for the calling thread to write.
    #[allow(clippy::too_many_arguments)] // one job's inputs, each moved into it
    pub(super) fn seal(
        &self,
        first: u64,
        pieces: Vec<Piece>,
        len: usize,
        last: bool,
        mut out: Vec<u8>,
        input: u64,
        mut slot: Option<Slot>,
    ) -> Result<Done> {
        let mut times = ChunkTimes::default();
        let count = len.div_ceil(CHUNK).max(usize::from(last && len == 0));
        let total = len + count * TAG;
        let per_write = match slot {
            Some(_) => WRITE_CHUNKS,
            None => count.max(1),
        };
        let room = total.min(per_write * CHUNK_CT);
        if out.len() < room {
            out.resize(room, 0);
        }
        let mut pieces_at = (0usize, 0usize);
        let mut k = 0;
        while k < count {
            // Chunk by chunk: its bytes gathered at `i * CHUNK_CT` (room for its tag after
            // them) and sealed while they are still in the core's cache.
            let n = per_write.min(count - k);
            let mut filled = 0;
            for i in 0..n {
                let at = i * CHUNK_CT;
                let body = CHUNK.min(len - (k + i) * CHUNK);
                timed(&mut times.read, || {
                    gather(&pieces, &mut pieces_at, &mut out[at..at + body])
                })?;
                timed(&mut times.cipher, || {
                    let nonce = stream_nonce(first + (k + i) as u64, last && k + i + 1 == count);
                    let tag = self.cipher.seal(&nonce, b"", &mut out[at..at + body]);
                    out[at + body..at + body + TAG].copy_from_slice(&tag);
                });
                filled = at + body + TAG;
            }
            // Chunk `first + k` starts `k` whole sealed chunks into the job's place.
            if let Some(slot) = &mut slot {
                let chunk = first + k as u64;
                slot.write_at((k * CHUNK_CT) as u64, &out[..filled], || {
                    format!(" (STREAM chunks from {chunk})")
                })?;
            }
            k += n;
        }
        Ok(Done::Sealed {
            out,
            len: total,
            pieces,
            input,
            times,
            wrote: slot.is_some(),
        })
    }
}
