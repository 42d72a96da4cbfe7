//! The encrypting side: an `io::Write` adapter that cuts its input into chunks, has workers hash,
//! compress and seal them, and writes the frames in order. `finish` must be called: it seals the
//! last chunk and writes the final frame, the index and the footer. Dropping an unfinished
//! `Encryptor` leaves a container without its final frame, which every reader rejects.

use std::io::{self, Read, Write};
use std::sync::atomic::{AtomicU64, Ordering};
use std::sync::Arc;

use rand_core::{CryptoRng, RngCore};

use super::intake::{aligned_at, Fill, Intake, Spare, ALIGN};
use super::window::Window;
use super::Threads;
use crate::codec::Codec;
use crate::crypto::aead::{stream_nonce, Cipher, PayloadCipher, TAG_LEN};
use crate::crypto::{FileKey, Recipient};
use crate::error::{Error, Result};
use crate::format::frame::{footer, frame_header, pad_class, PAD_HEADER_LEN};
use crate::format::{self, FinalFrame, FrameKind, Header, FRAME_HEADER_LEN};
use crate::hash::{ChunkHash, ChunkHasher, Digest, HashAlg};
use crate::stats::{timed, ChunkTimes, Stages, StreamStats};

/// How to encrypt: algorithms, chunk size and threads. Start from `default()` and change what
/// you need: `EncryptOptions::default().codec(Codec::Lz4).threads(2)`.
#[derive(Clone, Debug, PartialEq, Eq)]
#[non_exhaustive]
pub struct EncryptOptions {
    /// Chunk compression (default zstd:3).
    pub codec: Codec,
    /// Payload cipher (default AES-256-GCM).
    pub cipher: Cipher,
    /// Whole-plaintext hash (default BLAKE3).
    pub hash: HashAlg,
    /// Chunk size in bytes: a power of two from 1 KiB to 16 MiB (default 4 MiB).
    pub chunk_size: usize,
    /// Where the chunk jobs run (default: a shared pool with one worker per core).
    pub threads: Threads,
    /// Pad chunks and the file to size classes (FORMAT.md §3.3; default off).
    pub pad: bool,
    /// Adapt the zstd level per chunk to what the output absorbs, between these levels
    /// (inclusive; default off). See [`EncryptOptions::adapt`].
    pub adapt: Option<(i32, i32)>,
    /// The file format [`super::Writer`] writes (default a zseal container; `Format::Age`: an
    /// age v1 file, FORMAT.md §10.3).
    pub format: super::Format,
}

impl Default for EncryptOptions {
    fn default() -> Self {
        EncryptOptions {
            codec: Codec::default(),
            cipher: Cipher::default(),
            hash: HashAlg::default(),
            chunk_size: 1 << format::DEFAULT_CHUNK_LOG2,
            threads: Threads::Auto,
            pad: false,
            adapt: None,
            format: super::Format::Zseal,
        }
    }
}

impl EncryptOptions {
    /// Sets the chunk codec.
    pub fn codec(mut self, codec: Codec) -> Self {
        self.codec = codec;
        self
    }

    /// Sets the payload cipher.
    pub fn cipher(mut self, cipher: Cipher) -> Self {
        self.cipher = cipher;
        self
    }

    /// Sets the whole-plaintext hash.
    pub fn hash(mut self, hash: HashAlg) -> Self {
        self.hash = hash;
        self
    }

    /// Sets the chunk size (checked when the stream starts).
    pub fn chunk_size(mut self, bytes: usize) -> Self {
        self.chunk_size = bytes;
        self
    }

    /// Sets where the jobs run: a thread count (0 = one per core, 1 = the calling thread) or a
    /// [`Threads`] value with the caller's own pool.
    pub fn threads(mut self, threads: impl Into<Threads>) -> Self {
        self.threads = threads.into();
        self
    }

    /// Pads every chunk and the whole file to Padmé size classes (FORMAT.md §3.3), so that
    /// neither the plaintext length nor each chunk's compressibility shows exactly.
    pub fn pad(mut self, pad: bool) -> Self {
        self.pad = pad;
        self
    }

    /// Sets the format [`super::Writer`] writes: a zseal container or an age v1 file.
    pub fn format(mut self, format: super::Format) -> Self {
        self.format = format;
        self
    }

    /// Lets the zstd level of each chunk follow what the output can absorb, between `min` and
    /// `max`: when writing the output is what holds the stream back (a slow pipe or network),
    /// the level goes up, spending idle CPU on a smaller output; when the workers are what holds
    /// it back, the level goes down. Starts at `min`, the fastest, so that output flows at once;
    /// the header records `max` (FORMAT.md §1). Needs the zstd codec (its level is not used).
    pub fn adapt(mut self, min: i32, max: i32) -> Self {
        self.adapt = Some((min, max));
        self
    }
}

/// The adaptive level's controller (`EncryptOptions::adapt`), run on the calling thread as
/// chunks are written out, in order.
///
/// After each chunk it compares the time spent blocked writing the output with the time spent
/// waiting for the workers since the previous chunk. Writing much longer than waiting means the
/// output is the bottleneck: the level goes up, by more the more lopsided the two are. Waiting
/// longer means the workers are: the level goes down. Chunks already in flight were sealed at
/// the old level, so after a change it holds still until the first chunk submitted under the
/// new level comes out.
#[derive(Debug)]
struct Adapt {
    min: i32,
    max: i32,
    level: i32,
    /// Index of the first chunk submitted after the last change.
    settle: u64,
    write: std::time::Duration,
    wait: std::time::Duration,
}

impl Adapt {
    fn new(min: i32, max: i32) -> Self {
        Adapt {
            min,
            max,
            level: min,
            settle: 0,
            write: Default::default(),
            wait: Default::default(),
        }
    }

    /// Takes in the times of the chunk `index` just written; `next` is the index the next
    /// submitted chunk will get.
    fn observe(&mut self, index: u64, next: u64, write: std::time::Duration) {
        self.write += write;
        if index < self.settle {
            return;
        }
        // A millisecond on each side: below that, both are noise (a write into a pipe with
        // room, a result that was already there).
        let w = self.write.as_secs_f64() + 1e-3;
        let t = self.wait.as_secs_f64() + 1e-3;
        // Big steps only when the imbalance is big in absolute terms too (a slow network),
        // so that near the balance the level moves by one.
        let step = if w > 16.0 * t && w > 0.2 {
            4
        } else if w > 4.0 * t && w > 0.05 {
            2
        } else if w > 2.0 * t {
            1
        } else if t > 8.0 * w && t > 0.05 {
            -2
        } else if t > 2.0 * w {
            -1
        } else {
            0
        };
        let level = (self.level + step).clamp(self.min, self.max);
        // zstd has no level 0 (it means "default"); step over it.
        let level = match level {
            0 if step > 0 => 1.min(self.max),
            0 => (-1).max(self.min),
            l => l,
        };
        if level != self.level {
            self.level = level;
            self.settle = next;
        }
        self.write = Default::default();
        self.wait = Default::default();
    }
}

/// Positional reads by the workers go in pieces of this size, each hashed while it is in cache.
#[cfg(unix)]
const READ_PIECE: usize = 256 << 10;

/// What every worker needs to seal a chunk; shared, immutable.
pub(crate) struct Sealer {
    cipher: PayloadCipher,
    codec: Codec,
    hash: HashAlg,
    chunk_log2: u8,
    /// Chunks are padded to their size class (FORMAT.md §3.3).
    padded: bool,
}

/// One chunk's job as the calling thread hands it to a worker.
pub(crate) struct Job {
    index: u64,
    /// Plaintext bytes of the chunk.
    len: usize,
    /// The codec for this chunk (its level varies with `EncryptOptions::adapt`).
    codec: Codec,
    /// The plaintext at `at` (at [`Sealer::data_at`] or up to [`ALIGN`] - 1 bytes after it),
    /// or room for it, for a positional read (which places it itself).
    input: Vec<u8>,
    at: usize,
    /// Where a compressed chunk goes.
    output: Vec<u8>,
}

/// One sealed chunk, back from a worker, with its buffers for reuse.
pub(crate) struct Sealed {
    /// The frame is `frame[start..start + frame_len]`.
    pub(crate) frame: Vec<u8>,
    pub(crate) start: usize,
    pub(crate) frame_len: usize,
    /// The job's other buffer: the input (plaintext at `other_at`) when the frame was written
    /// into the output buffer, else the unused output buffer.
    other: Vec<u8>,
    other_at: usize,
    /// The chunk was stored raw and sealed where it was read: `frame` is the input buffer.
    in_place: bool,
    plain_len: usize,
    hash: ChunkHash,
    times: ChunkTimes,
}

impl Sealed {
    /// The chunk's plaintext, when it is still there (it is, unless sealed in place; the digest
    /// needs it only for XXH3, which is never sealed in place).
    fn plaintext(&self) -> &[u8] {
        match self.in_place {
            true => &[],
            false => &self.other[self.other_at..self.other_at + self.plain_len],
        }
    }

    /// The frame's bytes.
    pub(crate) fn bytes(&self) -> &[u8] {
        &self.frame[self.start..self.start + self.frame_len]
    }

    /// The input buffer and the output buffer, for reuse.
    fn into_buffers(self) -> (Vec<u8>, Vec<u8>) {
        match self.in_place {
            true => (self.frame, self.other),
            false => (self.other, self.frame),
        }
    }

    /// Which of the intake's spares the frame's buffer is, and which the other buffer.
    fn spares(&self) -> (Spare, Spare) {
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
        }
    }

    /// The same sealer for a padded file (FORMAT.md §3.3).
    pub(crate) fn with_padding(mut self, padded: bool) -> Self {
        self.padded = padded;
        self
    }

    fn chunk_size(&self) -> usize {
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
    fn frame_room(&self) -> usize {
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
    fn read_and_seal(&self, mut job: Job, file: &std::fs::File, offset: u64) -> Result<Sealed> {
        use std::os::unix::fs::FileExt;
        let (index, len) = (job.index, job.len);
        let mut times = ChunkTimes::default();
        let mut hasher = ChunkHasher::new(self.hash, index, self.chunk_size());
        let at = job.at;
        let mut pos = offset;
        for piece in job.input[at..at + len].chunks_mut(READ_PIECE) {
            timed(&mut times.read, || file.read_exact_at(piece, pos)).map_err(|e| {
                if e.kind() == io::ErrorKind::UnexpectedEof {
                    Error::Io(Arc::new(io::Error::new(
                        io::ErrorKind::UnexpectedEof,
                        "the input file became shorter while it was being read",
                    )))
                } else {
                    Error::from(e)
                }
            })?;
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
    fn seal_buffer(
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
        let in_place = compressed.is_none() && self.hash != HashAlg::Xxh3;
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
        let frame_len = timed(&mut times.cipher, || {
            self.seal_into(&mut frame[start..], index, false, kind, body)
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
        let body_len = (len + TAG_LEN) as u32;
        let aad = frame_header(kind, body_len);
        frame[..FRAME_HEADER_LEN].copy_from_slice(&aad);
        let end = FRAME_HEADER_LEN + len;
        let tag = self.cipher.seal(
            &stream_nonce(index, last),
            &aad,
            &mut frame[FRAME_HEADER_LEN..end],
        );
        frame[end..end + TAG_LEN].copy_from_slice(&tag);
        end + TAG_LEN
    }
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

/// The rule of FORMAT.md §1.1 on who a file is for: at least one recipient, and a passphrase
/// alone (`with_others`: the header will keep stanzas besides these).
pub(crate) fn check_recipients(recipients: &[&dyn Recipient], with_others: bool) -> Result<()> {
    if recipients.is_empty() {
        return Err(Error::InvalidOption(
            "no recipient or passphrase to encrypt to".into(),
        ));
    }
    if (recipients.len() > 1 || with_others) && recipients.iter().any(|r| r.exclusive()) {
        return Err(Error::InvalidOption(
            "a passphrase cannot be combined with recipients (as in age): anyone holding one \
             of the keys could re-wrap the file for the passphrase; encrypt twice instead"
                .into(),
        ));
    }
    Ok(())
}

/// The stanzas that wrap `file_key` for each recipient, in order.
pub(crate) fn wrap_for(
    recipients: &[&dyn Recipient],
    file_key: &FileKey,
    rng: &mut dyn RngCore,
) -> Result<Vec<crate::crypto::Stanza>> {
    let mut stanzas = Vec::new();
    for r in recipients {
        stanzas.extend(r.wrap_file_key(file_key, rng)?);
    }
    Ok(stanzas)
}

/// The header's bytes with its MAC under `file_key` (FORMAT.md §2.3).
pub(crate) fn sealed_header(header: &Header, file_key: &FileKey) -> Result<Vec<u8>> {
    let mut bytes = header.encode_unauthenticated()?;
    let mac = file_key.header_mac(&bytes);
    bytes.extend_from_slice(&mac);
    Ok(bytes)
}

/// Encrypts everything written to it into `W`. See the module documentation.
///
/// The parts, one job each (as on the decrypting side): [`Intake`] (the input cut into chunk
/// buffers, shared with the age writer), [`Sealer`] (the per-chunk work on the workers), the
/// ordered [`Window`], and [`Tally`] (what the container records across chunks: the index, the
/// digest, the counts).
pub struct Encryptor<W: Write> {
    inner: W,
    intake: Intake,
    sealer: Arc<Sealer>,
    window: Window<Sealed>,
    tally: Tally,
    failed: Option<Error>,
    stages: Stages,
    /// Plaintext bytes written out, for a progress display on another thread.
    progress: Option<Arc<AtomicU64>>,
    adapt: Option<Adapt>,
    /// Frames written by the workers ([`Encryptor::write_frames_to`]).
    positional: Option<Positional>,
}

/// Frames written into the output file by offset, by the workers ([`Encryptor::write_frames_to`]):
/// the calling thread only hands them out, in order, at the offsets their lengths give.
struct Positional {
    file: Arc<std::fs::File>,
    /// Where the next frame goes in `file`.
    at: u64,
    /// Counts the bytes written (the output counter a progress display reads).
    count: Option<Arc<AtomicU64>>,
    done: (
        crossbeam_channel::Sender<Written>,
        crossbeam_channel::Receiver<Written>,
    ),
    /// Writes handed out and not yet back.
    pending: usize,
}

/// A stream dropped before its end (after a failure) still waits for the writes it handed out:
/// none lands in the file after the caller has seen the error.
impl Drop for Positional {
    fn drop(&mut self) {
        while self.pending > 0 && self.done.1.recv().is_ok() {
            self.pending -= 1;
        }
    }
}

/// One frame's write, back from the worker that did it, with the frame's buffer for reuse.
struct Written {
    result: Result<()>,
    buffer: Vec<u8>,
    spare: Spare,
    took: std::time::Duration,
}

/// Frames being written by the workers at once, at most ([`Encryptor::write_frames_to`]). Two
/// keep a write going while the next is handed out: random bytes into tmpfs 0.179 s against
/// 0.188 s with one (peak RSS 55 against 47 MiB; AMD EPYC, 2 cores).
const WRITES_IN_FLIGHT: usize = 2;

/// Frames this long and longer are written by a worker ([`Encryptor::write_frames_to`]); shorter
/// ones (compressed text, about 1 MiB per 8 MiB chunk) by the calling thread, at their offset,
/// as they come: a worker's write would wait behind chunks being compressed, and hold up the
/// calling thread that waits for its buffer.
const WORKER_WRITE_MIN: usize = 2 << 20;

/// What a container records across its chunks, in order (FORMAT.md §§3.2, 4).
struct Tally {
    /// Frames handed to the workers (data and padding): the next frame's number.
    chunks: u64,
    plaintext_len: u64,
    /// The index: each frame's body length.
    index: Vec<u8>,
    /// The whole-plaintext digest, merged chunk by chunk.
    digest: Digest,
    /// Container bytes written so far (header and data frames), which padding starts from.
    written: u64,
    padded: bool,
    /// Data chunks written out so far.
    emitted: u64,
}

impl<W: Write> Encryptor<W> {
    /// Writes the header for `recipients` (at least one) to `inner` and returns the stream.
    pub fn new(inner: W, recipients: &[&dyn Recipient], opts: &EncryptOptions) -> Result<Self> {
        Self::with_rng(inner, recipients, opts, &mut rand_core::OsRng)
    }

    /// As [`Encryptor::new`], drawing the file key and salts from `rng` (tests use a seeded one
    /// to produce reproducible containers; production code must pass a CSPRNG).
    pub fn with_rng(
        mut inner: W,
        recipients: &[&dyn Recipient],
        opts: &EncryptOptions,
        rng: &mut (impl RngCore + CryptoRng),
    ) -> Result<Self> {
        let chunk_log2 = format::chunk_log2_of(opts.chunk_size)?;
        if opts.format != super::Format::Zseal {
            return Err(Error::InvalidOption(
                "an Encryptor writes zseal containers: write an age file with AgeWriter (or Writer)"
                    .into(),
            ));
        }
        let adapt = match (opts.adapt, opts.codec) {
            (None, _) => None,
            (Some((min, max)), Codec::Zstd(_)) => {
                for l in [min, max] {
                    Codec::Zstd(l).check_level()?;
                }
                if min > max {
                    return Err(Error::InvalidOption(format!(
                        "adaptive level range {min}..{max} is empty: give MIN..MAX with MIN <= MAX"
                    )));
                }
                Some(Adapt::new(min, max))
            }
            (Some(_), other) => {
                return Err(Error::InvalidOption(format!(
                    "the adaptive level needs the zstd codec, not {other}"
                )))
            }
        };
        // With an adaptive level the header records the highest level a chunk may have.
        let codec = match &adapt {
            Some(a) => Codec::Zstd(a.max),
            None => opts.codec,
        };
        check_recipients(recipients, false)?;
        let file_key = FileKey::generate(rng);
        let mut payload_salt = [0u8; format::header::SALT_LEN];
        rng.fill_bytes(&mut payload_salt);
        let header = Header {
            cipher: opts.cipher,
            codec,
            hash: opts.hash,
            chunk_log2,
            padded: opts.pad,
            payload_salt,
            stanzas: wrap_for(recipients, &file_key, rng)?,
        };
        let header_bytes = sealed_header(&header, &file_key)?;
        inner.write_all(&header_bytes)?;
        let payload_key = file_key.payload_key(&payload_salt);
        let sealer = Sealer::new(opts.cipher, &payload_key.0, codec, opts.hash, chunk_log2)
            .with_padding(opts.pad);
        Ok(Encryptor {
            inner,
            window: Window::new(&opts.threads, 1 << chunk_log2),
            intake: Intake::new(sealer.data_at(), 1 << chunk_log2, sealer.buffer_len()),
            sealer: Arc::new(sealer),
            tally: Tally {
                chunks: 0,
                plaintext_len: 0,
                index: Vec::new(),
                digest: Digest::new(opts.hash),
                written: header_bytes.len() as u64,
                padded: opts.pad,
                emitted: 0,
            },
            failed: None,
            stages: Stages::default(),
            progress: None,
            adapt,
            positional: None,
        })
    }

    /// Adds the plaintext length of every chunk to `counter` as the chunk is written out, so
    /// that another thread can show progress (whichever way the input is read).
    pub fn progress(&mut self, counter: Arc<AtomicU64>) {
        self.progress = Some(counter);
    }

    /// Lets the workers write the frames into `file` themselves, by offset, instead of the
    /// calling thread writing them through the inner writer: on two cores, one thread writing
    /// every frame (into tmpfs, 0.12 s per 256 MiB) is what held incompressible data back.
    /// `file` must be the file the inner writer writes into, sharing its position (a
    /// `File::try_clone` of it, or a duplicate of the descriptor): the header is flushed through
    /// the inner writer now, everything after it is written into `file` at the offsets that
    /// follow, and `finish` leaves the shared position at the container's end. `count`, if
    /// given, counts the bytes written. Ignored (the inner writer writes everything) unless
    /// `file` is a regular file not opened for appending, on a unix system, the stream runs
    /// more than one thread and no adaptive level, and no data was written yet. Frames land out
    /// of order, so a reader following the file while it grows may meet a hole (zeros) where a
    /// frame is still being written. A failed (or dropped) stream waits for the writes it handed
    /// out before it returns, and leaves the position where the header ended.
    pub fn write_frames_to(
        &mut self,
        file: std::fs::File,
        count: Option<Arc<AtomicU64>>,
    ) -> Result<()> {
        self.check()?;
        let usable = cfg!(unix)
            && self.window.threads() > 1
            && self.adapt.is_none()
            && self.tally.chunks == 0
            && self.intake.len() == 0
            && file.metadata()?.is_file()
            && !appends(&file)?;
        if !usable {
            return Ok(());
        }
        self.inner.flush()?;
        let at = io::Seek::stream_position(&mut &file)?;
        self.positional = Some(Positional {
            file: Arc::new(file),
            at,
            count,
            done: crossbeam_channel::unbounded(),
            pending: 0,
        });
        Ok(())
    }

    /// Reads `r` to its end straight into chunk buffers (no intermediate copy) and returns the
    /// number of bytes read. Short reads from pipes still produce full chunks.
    pub fn copy_from(&mut self, r: &mut impl Read) -> Result<u64> {
        self.fill_from(r)
    }

    /// Reads the file `f` from its current position to its end, as [`Encryptor::copy_from`]
    /// does, and returns the number of bytes read. A regular file is read by the workers: each
    /// reads its own chunk with one positional read, so the calling thread is left only writing
    /// (on two cores that is what keeps encryption of incompressible data near the speed of a
    /// plain copy). Bytes appended while it runs are read on to the end; a file that becomes
    /// shorter while it is read is an error. Other files (pipes, terminals) are read in order.
    pub fn copy_from_file(&mut self, f: &std::fs::File) -> Result<u64> {
        self.check()?;
        let mut total = 0;
        #[cfg(unix)]
        if self.intake.len() == 0 && self.window.threads() > 1 {
            let c = self.intake.chunk_size();
            total = super::intake::file_chunks(f, c, |file, pos| {
                self.guard(|s| s.submit_at(file, pos))
            })
            .map_err(|e| self.fail(e))?;
        }
        Ok(total + self.copy_from(&mut &*f)?)
    }

    /// Ends the stream: seals the last chunk, writes the final frame, index and footer, flushes,
    /// and returns the inner writer.
    pub fn finish(self) -> Result<W> {
        self.finish_with_stats().map(|(w, _)| w)
    }

    /// As [`Encryptor::finish`], also returning the stream's counters.
    pub fn finish_with_stats(mut self) -> Result<(W, StreamStats)> {
        self.check()?;
        if self.intake.len() > 0 {
            self.guard(|s| s.submit_chunk())?;
        }
        while let Some(r) = self.wait_oldest() {
            self.emit(r?)?;
        }
        self.settle_writes(0)?;
        if self.tally.padded {
            self.write_padding()?;
        }
        let t = &mut self.tally;
        let fin = FinalFrame {
            plaintext_len: t.plaintext_len,
            chunk_count: t.chunks,
            index_digest: *blake3::hash(&t.index).as_bytes(),
            digest: std::mem::replace(&mut t.digest, Digest::new(HashAlg::None)).finish(),
        };
        let mut frame = vec![0u8; format::FINAL_FRAME_LEN];
        frame[FRAME_HEADER_LEN..FRAME_HEADER_LEN + 80].copy_from_slice(&fin.encode());
        let len = self
            .sealer
            .seal_into(&mut frame, self.tally.chunks, true, FrameKind::Final, 80);
        debug_assert_eq!(len, format::FINAL_FRAME_LEN);
        let index = std::mem::take(&mut self.tally.index);
        self.write_out(&frame)?;
        self.write_out(&index)?;
        self.write_out(&footer(self.tally.chunks))?;
        self.settle_writes(0)?;
        if let Some(p) = &self.positional {
            // The shared position goes where a sequential write would have left it.
            io::Seek::seek(&mut &*p.file, io::SeekFrom::Start(p.at))?;
        }
        let inner = &mut self.inner;
        timed(&mut self.stages.write, || inner.flush())?;
        let stats = self.stats();
        Ok((self.inner, stats))
    }

    /// Chunks, threads and time per stage so far.
    pub fn stats(&self) -> StreamStats {
        StreamStats {
            chunks: self.tally.chunks,
            frames_opened: self.tally.chunks,
            threads: self.window.threads(),
            stages: self.stages,
        }
    }

    /// The oldest chunk in flight, timing the wait for it.
    fn wait_oldest(&mut self) -> Option<Result<Sealed>> {
        let mut waited = std::time::Duration::ZERO;
        let window = &mut self.window;
        let r = timed(&mut waited, || window.next());
        self.stages.wait += waited;
        if let Some(a) = &mut self.adapt {
            a.wait += waited;
        }
        r
    }

    /// Hands the filled chunk to a worker; first makes room if too many are in flight.
    fn submit_chunk(&mut self) -> Result<()> {
        let (input, at, len) = self.intake.take();
        self.submit_with(len, input, at, |sealer, job| {
            sealer.seal_buffer(job, None, ChunkTimes::default())
        })
    }

    /// Hands a worker a full chunk to read from `file` at `offset` itself.
    #[cfg(unix)]
    fn submit_at(&mut self, file: &Arc<std::fs::File>, offset: u64) -> Result<()> {
        let len = self.intake.chunk_size();
        let input = self.intake.input_buffer();
        let file = Arc::clone(file);
        // Where the worker's read places the plaintext: at its file offset modulo 64.
        let at = aligned_at(&input, self.sealer.data_at(), offset);
        self.submit_with(len, input, at, move |sealer, job| {
            sealer.read_and_seal(job, &file, offset)
        })
    }

    /// Queues the job for the next chunk, of `len` plaintext bytes, once the window has room.
    fn submit_with(
        &mut self,
        len: usize,
        input: Vec<u8>,
        at: usize,
        run: impl FnOnce(&Sealer, Job) -> Result<Sealed> + Send + 'static,
    ) -> Result<()> {
        let index = self.tally.chunks;
        if index >= format::MAX_CHUNKS
            || self.tally.plaintext_len + len as u64 > format::MAX_PLAINTEXT
        {
            return Err(Error::Limit(
                "a zseal file holds at most 16 TiB and 2^32-1 chunks: split the input".into(),
            ));
        }
        while !self.window.has_room() {
            let done = self.wait_oldest().expect("a full window is not empty");
            self.emit(done?)?;
        }
        let output = self.intake.output_buffer();
        self.tally.chunks += 1;
        self.tally.plaintext_len += len as u64;
        let codec = match &self.adapt {
            Some(a) => Codec::Zstd(a.level),
            None => self.sealer.codec,
        };
        let job = Job {
            index,
            len,
            codec,
            input,
            at,
            output,
        };
        let sealer = Arc::clone(&self.sealer);
        self.window.push(move || run(&sealer, job));
        self.emit_ready()
    }

    /// Writes out the chunks that are sealed already, in order, without waiting for any.
    fn emit_ready(&mut self) -> Result<()> {
        while let Some(done) = self.window.next_ready() {
            self.emit(done?)?;
        }
        Ok(())
    }

    /// Padding frames after the last data frame, so that the whole file's length is its Padmé
    /// class (FORMAT.md §3.3). They count as frames: the final frame's index follows them.
    fn write_padding(&mut self) -> Result<()> {
        let c = 1usize << self.sealer.chunk_log2;
        let n = self.tally.chunks;
        let unpadded =
            self.tally.written + (format::FINAL_FRAME_LEN + format::FOOTER_LEN) as u64 + 4 * n;
        let plan = padding_plan(unpadded, c);
        if n + plan.len() as u64 > format::MAX_CHUNKS {
            return Err(Error::Limit("more than 2^32-1 frames with padding".into()));
        }
        let mut frame = vec![0u8; FRAME_HEADER_LEN + c + PAD_HEADER_LEN + TAG_LEN];
        for x in plan {
            frame[FRAME_HEADER_LEN..FRAME_HEADER_LEN + x].fill(0);
            let index = self.tally.chunks;
            let len = self
                .sealer
                .seal_into(&mut frame, index, false, FrameKind::Padding, x);
            self.write_out(&frame[..len])?;
            let body_len = (len - FRAME_HEADER_LEN) as u32;
            self.tally.index.extend_from_slice(&body_len.to_le_bytes());
            self.tally.chunks += 1;
        }
        Ok(())
    }

    /// Writes `bytes` after what was written: through the inner writer, or into the file at the
    /// next offset (the workers' writes before it may still be going).
    fn write_out(&mut self, bytes: &[u8]) -> Result<()> {
        let Some(p) = &mut self.positional else {
            let inner = &mut self.inner;
            return Ok(timed(&mut self.stages.write, || inner.write_all(bytes))?);
        };
        let at = p.at;
        timed(&mut self.stages.write, || write_at(&p.file, bytes, at))
            .map_err(|e| not_written(e, "", at))?;
        p.at += bytes.len() as u64;
        if let Some(c) = &p.count {
            c.fetch_add(bytes.len() as u64, Ordering::Relaxed);
        }
        Ok(())
    }

    /// Waits until at most `most` of the workers' writes are still going; recycles the buffers
    /// of those done. A failed write fails the stream.
    fn settle_writes(&mut self, most: usize) -> Result<()> {
        let Some(p) = &mut self.positional else {
            return Ok(());
        };
        let mut failed = None;
        // After a failure every write still going is waited for, so that none lands later.
        while p.pending > most || (p.pending > 0 && (!p.done.1.is_empty() || failed.is_some())) {
            let Ok(w) = p.done.1.recv() else {
                return Err(Error::Bug("a frame's write was lost".into()));
            };
            p.pending -= 1;
            self.stages.write += w.took;
            self.intake.give_back(w.buffer, w.spare);
            if let Err(e) = w.result {
                failed.get_or_insert(e);
            }
        }
        match failed {
            Some(e) => Err(e),
            None => Ok(()),
        }
    }

    /// Hands the sealed frame `index` to a worker, which writes it at the next offset.
    fn write_by_worker(&mut self, s: Sealed, index: u64) -> Result<()> {
        self.settle_writes(WRITES_IN_FLIGHT - 1)?;
        let pool = self.window.pool()?;
        let (Some(pool), Some(p)) = (pool, &mut self.positional) else {
            return Err(Error::Bug(
                "frames written by workers without workers".into(),
            ));
        };
        let (spare, other_spare) = s.spares();
        let Sealed {
            frame,
            start,
            frame_len,
            other,
            ..
        } = s;
        self.intake.give_back(other, other_spare);
        let (file, at, count, done) =
            (Arc::clone(&p.file), p.at, p.count.clone(), p.done.0.clone());
        p.at += frame_len as u64;
        p.pending += 1;
        pool.spawn(move || {
            let mut took = std::time::Duration::ZERO;
            let bytes = &frame[start..start + frame_len];
            let result = super::window::guarded(|| {
                timed(&mut took, || write_at(&file, bytes, at))
                    .map_err(|e| not_written(e, &format!(" (frame {index})"), at))
            });
            if let (Ok(()), Some(c)) = (&result, &count) {
                c.fetch_add(frame_len as u64, Ordering::Relaxed);
            }
            let written = Written {
                result,
                buffer: frame,
                spare,
                took,
            };
            // The stream may be gone (dropped after a failure): then so is the buffer.
            let _ = done.send(written);
        });
        Ok(())
    }

    /// Writes one sealed chunk (the next in order) and recycles its buffers.
    fn emit(&mut self, s: Sealed) -> Result<()> {
        let index = self.tally.emitted;
        let by_worker = self.positional.is_some() && s.frame_len >= WORKER_WRITE_MIN;
        if !by_worker {
            let before = self.stages.write;
            self.write_out(s.bytes())?;
            if let Some(a) = &mut self.adapt {
                a.observe(index, self.tally.chunks, self.stages.write - before);
            }
        }
        self.tally.emitted += 1;
        self.tally.written += s.frame_len as u64;
        if let Some(p) = &self.progress {
            p.fetch_add(s.plain_len as u64, Ordering::Relaxed);
        }
        self.stages.add_chunk(&s.times);
        let body_len = (s.frame_len - FRAME_HEADER_LEN) as u32;
        self.tally.index.extend_from_slice(&body_len.to_le_bytes());
        self.tally.digest.push(s.plaintext(), &s.hash);
        if by_worker {
            return self.write_by_worker(s, index);
        }
        let (input, output) = s.into_buffers();
        self.intake.recycle(input, output);
        Ok(())
    }
}

impl<W: Write> Fill for Encryptor<W> {
    fn intake(&mut self) -> &mut Intake {
        &mut self.intake
    }

    fn read_time(&mut self) -> &mut std::time::Duration {
        &mut self.stages.read
    }

    fn failure(&mut self) -> &mut Option<Error> {
        &mut self.failed
    }

    fn submit(&mut self) -> Result<()> {
        self.submit_chunk()
    }
}

impl<W: Write> Write for Encryptor<W> {
    fn write(&mut self, buf: &[u8]) -> io::Result<usize> {
        Ok(self.fill_with(buf)?)
    }

    /// Writes out the chunks already sealed. A partial chunk stays buffered until it is full or
    /// until `finish`: chunks other than the last must be full.
    fn flush(&mut self) -> io::Result<()> {
        self.check()?;
        self.guard(|s| s.emit_ready())?;
        self.guard(|s| s.settle_writes(0))?;
        self.inner.flush()
    }
}

/// Writes all of `bytes` at `at` of `file`.
#[cfg(unix)]
fn write_at(file: &std::fs::File, bytes: &[u8], at: u64) -> io::Result<()> {
    std::os::unix::fs::FileExt::write_all_at(file, bytes, at)
}

#[cfg(not(unix))]
fn write_at(_: &std::fs::File, _: &[u8], _: u64) -> io::Result<()> {
    Err(io::Error::other("positional writes need a unix system"))
}

/// A failed positional write into the output, saying where.
fn not_written(e: io::Error, what: &str, at: u64) -> Error {
    let message = format!("cannot write the output at offset {at}{what}: {e}");
    Error::Io(Arc::new(io::Error::new(e.kind(), message)))
}

/// Whether `file` was opened for appending (where a positional write appends instead).
#[cfg(unix)]
pub(crate) fn appends(file: &std::fs::File) -> Result<bool> {
    use nix::fcntl::{fcntl, FcntlArg, OFlag};
    let flags = fcntl(file, FcntlArg::F_GETFL).map_err(io::Error::from)?;
    Ok(OFlag::from_bits_truncate(flags).contains(OFlag::O_APPEND))
}

#[cfg(not(unix))]
pub(crate) fn appends(_: &std::fs::File) -> Result<bool> {
    Ok(true)
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::pipeline::cheap_passphrase;
    use std::time::Duration;

    fn ms(n: u64) -> Duration {
        Duration::from_millis(n)
    }

    /// Feeds the controller one chunk: `wait` ms waiting for it, `write` ms writing it.
    fn step(a: &mut Adapt, index: u64, wait: u64, write: u64) -> i32 {
        a.wait += ms(wait);
        a.observe(index, index + 3, ms(write));
        a.level
    }

    #[test]
    fn the_adaptive_level_follows_the_bottleneck() {
        // A slow output: big steps up while writing dwarfs waiting, then held until the chunks
        // submitted at the new level come out (three in flight here).
        let mut a = Adapt::new(1, 19);
        assert_eq!(step(&mut a, 0, 1, 400), 5);
        assert_eq!(
            step(&mut a, 1, 1, 400),
            5,
            "chunk 1 was sealed at the old level"
        );
        assert_eq!(step(&mut a, 2, 1, 400), 5);
        assert_eq!(step(&mut a, 3, 1, 400), 9);
        assert_eq!(step(&mut a, 6, 30, 130), 11, "4x: two levels");
        assert_eq!(step(&mut a, 9, 30, 70), 12, "2x: one level");
        assert_eq!(step(&mut a, 12, 50, 60), 12, "balanced: stays");
        assert_eq!(
            step(&mut a, 13, 100, 40),
            11,
            "the workers are the bottleneck: down"
        );
        assert_eq!(step(&mut a, 16, 400, 1), 9, "far behind: two down");
        // Noise of a millisecond on both sides moves nothing.
        let mut b = Adapt::new(1, 19);
        assert_eq!(step(&mut b, 0, 0, 0), 1);
        assert_eq!(step(&mut b, 1, 0, 1), 1);
        // Clamped to the range, and zstd's level 0 (its default, not a level) is stepped over.
        let mut c = Adapt::new(-3, 2);
        for i in 0..10 {
            step(&mut c, i * 3, 1, 500);
        }
        assert_eq!(c.level, 2);
        for i in 10..40 {
            let l = step(&mut c, i * 3, 300, 1);
            assert_ne!(l, 0);
        }
        assert_eq!(c.level, -3);
    }

    /// One observation at level 10 of 1..=19, nothing held: the step each ratio gives, on both
    /// sides of every threshold and on it.
    #[test]
    fn each_threshold_of_the_controller_on_both_sides() {
        // (ms waiting for the chunk, ms writing it, the step)
        let cases: &[(u64, u64, i32)] = &[
            (0, 0, 0),
            (0, 1, 0),
            (1, 0, 0),
            // w > 16 t and w > 0.2 s: four; below either edge, two.
            (0, 201, 4),
            (0, 197, 2),
            (19, 330, 4),
            (19, 310, 2),
            // w > 4 t and w > 0.05 s: two; below either edge, one.
            (9, 55, 2),
            (9, 45, 1),
            (9, 35, 1),
            // w > 2 t: one; below, none.
            (9, 22, 1),
            (9, 18, 0),
            // t > 8 w and t > 0.05 s: two down; below either edge, one down.
            (60, 0, -2),
            (45, 0, -1),
            (85, 9, -2),
            (75, 9, -1),
            // t > 2 w: one down; below, none.
            (22, 9, -1),
            (18, 9, 0),
            // Exactly on each edge (these sums and products are exact in f64): the comparisons
            // are strict, so an edge takes the smaller step.
            (0, 199, 2),
            (14, 239, 2),
            (14, 59, 1),
            (0, 49, 1),
            (55, 6, -1),
            (49, 0, -1),
        ];
        for &(wait, write, want) in cases {
            let mut a = Adapt::new(1, 19);
            a.level = 10;
            a.wait = ms(wait);
            a.observe(0, 1, ms(write));
            assert_eq!(a.level - 10, want, "wait {wait} ms, write {write} ms");
            // A change holds until chunk 1, the first submitted under it.
            assert_eq!(a.settle, if want == 0 { 0 } else { 1 });
            assert_eq!((a.write, a.wait), (Duration::ZERO, Duration::ZERO));
        }
    }

    /// Times are counted from the last observation, including those held back.
    #[test]
    fn the_controller_counts_each_chunks_times_once() {
        let mut a = Adapt::new(1, 19);
        a.level = 10;
        a.observe(0, 1, ms(30));
        assert_eq!(a.level, 11, "31 ms against 1 ms: one up");
        // Balanced from here: what was written for chunk 0 must not count again.
        a.wait = ms(20);
        a.observe(1, 2, ms(20));
        assert_eq!(a.level, 11);
        // Held chunks add up: writes of 20 ms at chunks 2 and 3 (held until 4) and at chunk 4,
        // against no wait, come to 61 ms: above 0.05 s, two up. Chunk 4's alone would be one.
        a.settle = 4;
        a.observe(2, 5, ms(20));
        a.observe(3, 5, ms(20));
        assert_eq!(a.level, 11, "held");
        a.observe(4, 5, ms(20));
        assert_eq!(a.level, 13);
        assert_eq!(a.settle, 5);
    }

    /// The level steps over zstd's 0 in both directions and stays in its range.
    #[test]
    fn the_level_steps_over_zero_and_stays_in_range() {
        let mut a = Adapt::new(-3, 2);
        a.level = -1;
        a.observe(0, 1, ms(30));
        assert_eq!(a.level, 1, "up from -1 skips 0");
        a.wait = ms(30);
        a.observe(1, 2, ms(0));
        assert_eq!(a.level, -1, "down from 1 skips 0");
        a.level = 2;
        a.observe(2, 3, ms(500));
        assert_eq!(
            (a.level, a.settle),
            (2, 2),
            "at the top: no change, nothing held"
        );
        a.level = -3;
        a.wait = ms(500);
        a.observe(3, 4, ms(0));
        assert_eq!((a.level, a.settle), (-3, 2), "at the bottom");
    }

    /// The window keeps `threads + 2` chunks in flight while their buffers fit the budget,
    /// one fewer beyond it: the encryptor gives it its chunk size.
    #[test]
    fn the_window_is_sized_for_the_chunk_size() {
        let pw = cheap_passphrase();
        for (chunk, limit) in [(1 << 20, 4), (4 << 20, 4), (8 << 20, 3)] {
            let opts = EncryptOptions::default().chunk_size(chunk).threads(2);
            let enc = Encryptor::new(Vec::new(), &[&pw], &opts).unwrap();
            assert_eq!(enc.window.limit(), limit, "{chunk}");
        }
    }

    /// Where the plaintext sits in its buffer ([`aligned_at`] moves it up to 63 bytes on)
    /// changes nothing in the frame: raw (sealed in place), compressed, padded, and raw with
    /// XXH3 (copied out), each at every start.
    #[test]
    fn a_frame_is_the_same_wherever_its_plaintext_sits() {
        let text: Vec<u8> = (0..4096u32).map(|i| b"abcabd"[(i % 6) as usize]).collect();
        let mut noise = vec![0u8; 4096];
        blake3::Hasher::new().finalize_xof().fill(&mut noise);
        let key = [9u8; 32];
        for (hash, padded) in [
            (HashAlg::Blake3, false),
            (HashAlg::Blake3, true),
            (HashAlg::Xxh3, false),
        ] {
            let sealer =
                Sealer::new(Cipher::Aes256Gcm, &key, Codec::Zstd(3), hash, 12).with_padding(padded);
            for plain in [&text[..], &noise[..], &noise[..100]] {
                let want = sealer.seal_chunk(3, plain).unwrap();
                for shift in 0..ALIGN {
                    let at = sealer.data_at() + shift;
                    // Recycled buffers hold old bytes: so do these.
                    let mut input = vec![0xa5; sealer.buffer_len()];
                    input[at..at + plain.len()].copy_from_slice(plain);
                    let job = Job {
                        index: 3,
                        len: plain.len(),
                        codec: sealer.codec,
                        input,
                        at,
                        output: vec![0x5a; sealer.buffer_len()],
                    };
                    let got = sealer
                        .seal_buffer(job, None, ChunkTimes::default())
                        .unwrap();
                    assert_eq!(got.bytes(), want.bytes(), "{hash:?} {padded} {shift}");
                    assert_eq!(got.in_place, plain[0] != b'a' && hash != HashAlg::Xxh3);
                    if !got.in_place {
                        assert_eq!(got.plaintext(), plain);
                    }
                }
            }
        }
    }

    /// 16 TiB and 2^32 - 1 chunks (FORMAT.md §8): the chunk that reaches either limit is
    /// written, the one past it is refused before it is sealed.
    #[test]
    fn the_writer_stops_at_the_format_limits() {
        let pw = cheap_passphrase();
        let opts = EncryptOptions::default().chunk_size(1024).threads(1);
        let chunk = [7u8; 1024];
        let write_chunk_after = |plaintext_len: u64, chunks: u64| {
            let mut enc = Encryptor::new(Vec::new(), &[&pw], &opts).unwrap();
            (enc.tally.plaintext_len, enc.tally.chunks) = (plaintext_len, chunks);
            enc.write_all(&chunk).map(|()| enc.tally.plaintext_len)
        };
        let full = format::MAX_PLAINTEXT;
        assert_eq!(write_chunk_after(full - 1024, 5).unwrap(), full);
        let e = write_chunk_after(full - 1023, 5).unwrap_err();
        assert!(e.to_string().contains("at most 16 TiB"), "{e}");
        assert!(write_chunk_after(0, format::MAX_CHUNKS - 1).is_ok());
        let e = write_chunk_after(0, format::MAX_CHUNKS).unwrap_err();
        assert!(e.to_string().contains("2^32-1 chunks"), "{e}");
    }

    /// Padding frames count against the 2^32 - 1 frames too: a padded file whose data frames
    /// reach the limit may end there only if it needs no padding.
    #[test]
    fn padding_stops_at_the_frame_limit() {
        let pw = cheap_passphrase();
        let opts = EncryptOptions::default()
            .chunk_size(1024)
            .threads(1)
            .pad(true);
        // `written` such that the whole file comes to a Padmé class exactly (2^35), or one byte
        // more (then it needs 512 MiB of padding frames).
        let n = format::MAX_CHUNKS;
        let rest = (format::FINAL_FRAME_LEN + format::FOOTER_LEN) as u64 + 4 * n;
        let pad_after = |written: u64| {
            let mut enc = Encryptor::new(Vec::new(), &[&pw], &opts).unwrap();
            (enc.tally.written, enc.tally.chunks) = (written, n);
            enc.write_padding().map(|()| enc.tally.chunks)
        };
        assert_eq!(pad_after((1 << 35) - rest).unwrap(), n, "no padding frame");
        // 100 bytes short of the class: one padding frame, one too many. One byte over the
        // class: 512 MiB of them.
        for written in [(1 << 35) - rest - 100, (1 << 35) - rest + 1] {
            let e = pad_after(written).unwrap_err();
            assert!(e.to_string().contains("frames with padding"), "{e}");
        }
    }

    /// Every plan fills the gap to a Padmé class exactly, with frames of 1 to C + 5 zeros.
    #[test]
    fn padding_plans_reach_a_class_exactly() {
        let c = 1024;
        for unpadded in (200..3_000_000u64).step_by(997).chain([201, 4096, 1 << 20]) {
            let plan = padding_plan(unpadded, c);
            let total = unpadded + plan.iter().map(|&x| 25 + x as u64).sum::<u64>();
            assert_eq!(format::frame::padme(total), total, "{unpadded}");
            assert!(total - unpadded < 26 || plan.iter().all(|&x| (1..=c + 5).contains(&x)));
            assert!(
                plan.iter().all(|&x| (1..=c + 5).contains(&x)),
                "{unpadded}: {plan:?}"
            );
            assert!(
                (total - unpadded) * 100 <= unpadded * 12 + 26 * 100,
                "{unpadded}"
            );
            // FORMAT.md §3.3: `m = ceil(pad / (C + 30))` frames, as even as possible, earlier
            // frames one byte larger.
            let pad = total - unpadded;
            assert_eq!(plan.len() as u64, pad.div_ceil(c as u64 + 30), "{unpadded}");
            assert!(
                plan.windows(2).all(|w| w[0] == w[1] || w[0] == w[1] + 1),
                "{unpadded}: {plan:?}"
            );
        }
    }
}
