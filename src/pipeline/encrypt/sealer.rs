//! The per-chunk work of a container: [`Sealer`] hashes, compresses and seals one chunk into a
//! frame on a worker; and the header helpers encryption and rekey share.

use std::sync::Arc;

use super::super::intake::{Spare, ALIGN};
use super::PiecePlan;
use crate::codec::Codec;
use crate::crypto::aead::{stream_nonce, Cipher, PayloadCipher, TAG_LEN};
use crate::crypto::FileKey;
use crate::error::Result;
use crate::format::frame::{frame_header, pad_class, PAD_HEADER_LEN};
use crate::format::{self, FrameKind, Header, FRAME_HEADER_LEN};
use crate::hash::{ChunkHash, ChunkHasher, HashAlg};
use crate::stats::{timed, ChunkTimes};

/// Positional reads by the workers go in pieces of this size, each hashed while it is in cache.
#[cfg(unix)]
const READ_PIECE: usize = 256 << 10;

/// What every worker needs to seal a chunk; shared, immutable.
pub(crate) struct Sealer {
    pub(super) cipher: PayloadCipher,
    pub(super) codec: Codec,
    pub(super) hash: HashAlg,
    pub(super) chunk_log2: u8,
    /// Chunks are padded to their size class (FORMAT.md §3.3).
    pub(super) padded: bool,
    /// The pieces these chunks are sealed in (FORMAT.md §14.2): each chunk under its piece's
    /// key, numbered within its piece, `last` set on each piece's last frame.
    pub(super) pieces: Option<Arc<PiecePlan>>,
}

/// One chunk's job as the calling thread hands it to a worker.
pub(crate) struct Job {
    pub(super) index: u64,
    /// Plaintext bytes of the chunk.
    pub(super) len: usize,
    /// The codec for this chunk (its level varies with `EncryptOptions::adapt`).
    pub(super) codec: Codec,
    /// The plaintext at `at` (at [`Sealer::data_at`] or up to [`ALIGN`] - 1 bytes after it),
    /// or room for it, for a positional read (which places it itself).
    pub(super) input: Vec<u8>,
    pub(super) at: usize,
    /// Where a compressed chunk goes.
    pub(super) output: Vec<u8>,
}

/// One sealed chunk, back from a worker, with its buffers for reuse.
pub(crate) struct Sealed {
    /// The frame is `frame[start..start + frame_len]`.
    pub(crate) frame: Vec<u8>,
    pub(crate) start: usize,
    pub(crate) frame_len: usize,
    /// The job's other buffer: the input (plaintext at `other_at`) when the frame was written
    /// into the output buffer, else the unused output buffer.
    pub(super) other: Vec<u8>,
    pub(super) other_at: usize,
    /// The chunk was stored raw and sealed where it was read: `frame` is the input buffer.
    pub(super) in_place: bool,
    pub(super) plain_len: usize,
    pub(super) hash: ChunkHash,
    pub(super) times: ChunkTimes,
}

impl Sealed {
    /// The chunk's plaintext, when it is still there (it is, unless sealed in place; the digest
    /// needs it only for XXH3, which is never sealed in place).
    pub(super) fn plaintext(&self) -> &[u8] {
        match self.in_place {
            true => &[],
            false => &self.other[self.other_at..self.other_at + self.plain_len],
        }
    }

    /// The frame's bytes (the writer hands the buffer out whole: tests and benchmarks look).
    #[cfg(any(test, feature = "bench"))]
    pub(crate) fn bytes(&self) -> &[u8] {
        &self.frame[self.start..self.start + self.frame_len]
    }

    /// Which of the intake's spares the frame's buffer is, and which the other buffer.
    pub(super) fn spares(&self) -> (Spare, Spare) {
        match self.in_place {
            true => (Spare::Input, Spare::Output),
            false => (Spare::Output, Spare::Input),
        }
    }
}

impl Sealer {
    /// A sealer for chunks of `2^chunk_log2` bytes under `key`.
    pub(crate) fn new(
        cipher: Cipher,
        key: &[u8; 32],
        codec: Codec,
        hash: HashAlg,
        chunk_log2: u8,
    ) -> Self {
        Sealer {
            cipher: PayloadCipher::new(cipher, key),
            codec,
            hash,
            chunk_log2,
            padded: false,
            pieces: None,
        }
    }

    /// The same sealer for the chunks of `plan`'s pieces (FORMAT.md §14.2).
    pub(super) fn in_pieces(mut self, plan: Arc<PiecePlan>) -> Self {
        self.pieces = Some(plan);
        self
    }

    /// The same sealer for a padded file (FORMAT.md §3.3).
    pub(crate) fn with_padding(mut self, padded: bool) -> Self {
        self.padded = padded;
        self
    }

    pub(super) fn chunk_size(&self) -> usize {
        1 << self.chunk_log2
    }

    /// Where a chunk's plaintext sits in its buffer: where a raw chunk's bytes sit in its frame
    /// (after the frame header, and the padded-chunk header in a padded file), so that a chunk
    /// stored raw is sealed where it was read.
    pub(crate) fn data_at(&self) -> usize {
        FRAME_HEADER_LEN + if self.padded { PAD_HEADER_LEN } else { 0 }
    }

    /// Room for a whole frame whatever the chunk becomes (the codec's worst case is at least the
    /// chunk, so at least a padded chunk's class cap too).
    pub(super) fn frame_room(&self) -> usize {
        self.data_at() + self.codec.out_len(self.chunk_size()) + TAG_LEN
    }

    /// Length of every buffer: a frame's room, after up to [`ALIGN`] - 1 bytes that place a
    /// chunk's plaintext where the kernel copies into it fastest ([`aligned_at`]).
    pub(crate) fn buffer_len(&self) -> usize {
        self.frame_room() + ALIGN
    }

    /// A new buffer (for the benchmarks' chunks held in memory). It comes zeroed from the
    /// allocator (fresh pages), so an output buffer's
    /// memory is only touched as far as output is written into it: a chunk that compresses to
    /// a fifth keeps four fifths of its output buffer out of the resident set.
    #[cfg(any(test, feature = "bench"))]
    pub(crate) fn new_buffer(&self) -> Vec<u8> {
        vec![0u8; self.buffer_len()]
    }

    /// The whole per-chunk job on a chunk held in memory: `plain` is copied into a buffer.
    #[cfg(any(test, feature = "bench"))]
    pub(crate) fn seal_chunk(&self, index: u64, plain: &[u8]) -> Result<Sealed> {
        let mut input = self.new_buffer();
        let at = self.data_at();
        input[at..at + plain.len()].copy_from_slice(plain);
        let job = Job {
            index,
            len: plain.len(),
            codec: self.codec,
            input,
            at,
            output: self.new_buffer(),
        };
        self.seal_buffer(job, None, ChunkTimes::default())
    }

    /// Reads chunk `index` (`len` bytes at `offset` of `file`) into `input` and seals it,
    /// hashing each piece as it arrives (while it is still in the core's cache).
    #[cfg(unix)]
    pub(super) fn read_and_seal(
        &self,
        mut job: Job,
        file: &std::fs::File,
        offset: u64,
    ) -> Result<Sealed> {
        use std::os::unix::fs::FileExt;
        let (index, len) = (job.index, job.len);
        let mut times = ChunkTimes::default();
        let mut hasher = ChunkHasher::new(self.hash, index, self.chunk_size());
        let at = job.at;
        let mut pos = offset;
        for piece in job.input[at..at + len].chunks_mut(READ_PIECE) {
            timed(&mut times.read, || file.read_exact_at(piece, pos))
                .map_err(super::super::intake::input_shrank)?;
            timed(&mut times.hash, || hasher.update(piece));
            pos += piece.len() as u64;
        }
        self.seal_buffer(job, Some(hasher.finish()), times)
    }

    /// Hashes (unless `hash` is given), compresses or stores raw, pads, seals and frames the
    /// chunk at `job.at` of `input`. A compressed chunk goes into `output`; a raw one is sealed
    /// in place, in `input` (its frame starts [`Sealer::data_at`] bytes before the plaintext),
    /// except with XXH3, whose in-order digest still needs the plaintext (it is copied into
    /// `output` then).
    pub(super) fn seal_buffer(
        &self,
        job: Job,
        hash: Option<ChunkHash>,
        mut times: ChunkTimes,
    ) -> Result<Sealed> {
        let Job {
            index,
            len,
            codec,
            mut input,
            at,
            mut output,
        } = job;
        let d = self.data_at();
        let full = self.buffer_len();
        input.resize(full, 0);
        output.resize(full, 0);
        let data = at..at + len;
        let hash = match hash {
            Some(h) => h,
            None => timed(&mut times.hash, || {
                ChunkHash::compute(self.hash, index, self.chunk_size(), &input[data.clone()])
            }),
        };
        let compressed = timed(&mut times.codec, || {
            let room = &mut output[d..self.frame_room() - TAG_LEN];
            codec.compress(&input[data.clone()], room, self.chunk_log2)
        })?;
        let in_place = compressed.is_none() && !self.hash.reads_in_order();
        let (mut frame, start, other, mut kind, mut body) = match compressed {
            Some(n) => (output, 0, input, FrameKind::Compressed, n),
            None if in_place => (input, at - d, output, FrameKind::Raw, len),
            None => {
                output[d..d + len].copy_from_slice(&input[data]);
                (output, 0, input, FrameKind::Raw, len)
            }
        };
        if self.padded {
            // FORMAT.md §3.3: `stored || content_len || content || zeros` to the class length.
            let padded = pad_class(PAD_HEADER_LEN + body, self.chunk_size());
            let b = &mut frame[start + FRAME_HEADER_LEN..];
            b[0] = kind.byte();
            b[1..PAD_HEADER_LEN].copy_from_slice(&(body as u32).to_le_bytes());
            b[PAD_HEADER_LEN + body..padded].fill(0);
            (kind, body) = (FrameKind::Padded, padded);
        }
        let frame_len = timed(&mut times.cipher, || match &self.pieces {
            Some(plan) => {
                let (p, counter, last) = plan.place(index);
                let cipher = plan.cipher_of(p);
                seal_with(&cipher, &mut frame[start..], counter, last, kind, body)
            }
            None => self.seal_into(&mut frame[start..], index, false, kind, body),
        });
        Ok(Sealed {
            frame,
            start,
            frame_len,
            other,
            other_at: at,
            in_place,
            plain_len: len,
            hash,
            times,
        })
    }

    /// Seals `frame[5..5+len]` in place as frame `index`, writes the frame header and the tag,
    /// and returns the frame's total length.
    pub(crate) fn seal_into(
        &self,
        frame: &mut [u8],
        index: u64,
        last: bool,
        kind: FrameKind,
        len: usize,
    ) -> usize {
        seal_with(&self.cipher, frame, index, last, kind, len)
    }
}

/// Seals `frame[5..5+len]` in place under `cipher` as frame `index` (`last` as the nonce says),
/// writes the frame header and the tag, and returns the frame's total length.
fn seal_with(
    cipher: &PayloadCipher,
    frame: &mut [u8],
    index: u64,
    last: bool,
    kind: FrameKind,
    len: usize,
) -> usize {
    let body_len = (len + TAG_LEN) as u32;
    let aad = frame_header(kind, body_len);
    frame[..FRAME_HEADER_LEN].copy_from_slice(&aad);
    let end = FRAME_HEADER_LEN + len;
    let tag = cipher.seal(
        &stream_nonce(index, last),
        &aad,
        &mut frame[FRAME_HEADER_LEN..end],
    );
    frame[end..end + TAG_LEN].copy_from_slice(&tag);
    end + TAG_LEN
}

/// The zero bytes of each padding frame that bring a file of `unpadded` bytes to its Padmé class
/// (FORMAT.md §3.3): a frame of `x` zeros adds `25 + x` bytes, so a shortfall of 1 to 25 bytes
/// moves to the next class up.
pub(crate) fn padding_plan(unpadded: u64, chunk_size: usize) -> Vec<usize> {
    const PER_FRAME: u64 = (FRAME_HEADER_LEN + TAG_LEN + 4) as u64;
    let mut target = format::frame::padme(unpadded);
    while (1..=PER_FRAME).contains(&(target - unpadded)) {
        target = format::frame::padme(target + 1);
    }
    let pad = target - unpadded;
    let most = (chunk_size + PAD_HEADER_LEN) as u64;
    let m = pad.div_ceil(PER_FRAME + most);
    if m == 0 {
        return Vec::new();
    }
    let zeros = pad - PER_FRAME * m;
    (0..m)
        .map(|j| (zeros / m + u64::from(j < zeros % m)) as usize)
        .collect()
}

/// The header's bytes with its MAC under `file_key` (FORMAT.md §2.3).
pub(crate) fn sealed_header(header: &Header, file_key: &FileKey) -> Result<Vec<u8>> {
    let mut bytes = header.encode_unauthenticated()?;
    let mac = file_key.header_mac(&bytes);
    bytes.extend_from_slice(&mac);
    Ok(bytes)
}
