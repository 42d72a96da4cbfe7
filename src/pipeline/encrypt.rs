//! The encrypting side: an `io::Write` adapter that cuts its input into chunks, has workers hash,
//! compress and seal them, and writes the frames in order. `finish` must be called: it seals the
//! last chunk and writes the final frame, the index and the footer. Dropping an unfinished
//! `Encryptor` leaves a container without its final frame, which every reader rejects.

use std::io::{self, Read, Write};
use std::sync::Arc;

use rand_core::{CryptoRng, RngCore};

use super::window::Window;
use super::Threads;
use crate::codec::Codec;
use crate::crypto::aead::{stream_nonce, Cipher, PayloadCipher, TAG_LEN};
use crate::crypto::{FileKey, Recipient};
use crate::error::{Error, Result};
use crate::format::frame::{footer, frame_header};
use crate::format::{self, FinalFrame, FrameKind, Header, FRAME_HEADER_LEN};
use crate::hash::{ChunkHash, Digest, HashAlg};
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
}

impl Default for EncryptOptions {
    fn default() -> Self {
        EncryptOptions {
            codec: Codec::default(),
            cipher: Cipher::default(),
            hash: HashAlg::default(),
            chunk_size: 1 << format::DEFAULT_CHUNK_LOG2,
            threads: Threads::Auto,
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
}

/// What every worker needs to seal a chunk; shared, immutable.
pub(crate) struct Sealer {
    cipher: PayloadCipher,
    codec: Codec,
    hash: HashAlg,
    chunk_log2: u8,
}

/// One sealed chunk, back from a worker, with its buffers for reuse.
pub(crate) struct Sealed {
    pub(crate) frame: Vec<u8>,
    pub(crate) frame_len: usize,
    plain: Vec<u8>,
    plain_len: usize,
    hash: ChunkHash,
    times: ChunkTimes,
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
        }
    }

    fn chunk_size(&self) -> usize {
        1 << self.chunk_log2
    }

    /// The whole per-chunk job: hash, compress (or store raw), seal, frame.
    pub(crate) fn seal_chunk(
        &self,
        index: u64,
        plain: Vec<u8>,
        plain_len: usize,
        mut frame: Vec<u8>,
    ) -> Result<Sealed> {
        let data = &plain[..plain_len];
        let mut times = ChunkTimes::default();
        let hash = timed(&mut times.hash, || {
            ChunkHash::compute(self.hash, index, self.chunk_size(), data)
        });
        frame.resize(
            FRAME_HEADER_LEN + self.codec.out_len(self.chunk_size()) + TAG_LEN,
            0,
        );
        let body = &mut frame[FRAME_HEADER_LEN..];
        let compressed = timed(&mut times.codec, || {
            self.codec.compress(data, body, self.chunk_log2)
        })?;
        let (kind, len) = match compressed {
            Some(n) => (FrameKind::Compressed, n),
            None => {
                body[..plain_len].copy_from_slice(data);
                (FrameKind::Raw, plain_len)
            }
        };
        let frame_len = timed(&mut times.cipher, || {
            self.seal_into(&mut frame, index, false, kind, len)
        });
        Ok(Sealed {
            frame,
            frame_len,
            plain,
            plain_len,
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
pub struct Encryptor<W: Write> {
    inner: W,
    sealer: Arc<Sealer>,
    window: Window<Sealed>,
    /// The chunk being filled (always `chunk_size` long) and how much of it is filled.
    fill: Vec<u8>,
    fill_len: usize,
    spare_plain: Vec<Vec<u8>>,
    spare_frames: Vec<Vec<u8>>,
    chunks_submitted: u64,
    plaintext_len: u64,
    index: Vec<u8>,
    digest: Digest,
    failed: Option<Error>,
    stages: Stages,
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
        check_recipients(recipients, false)?;
        let file_key = FileKey::generate(rng);
        let mut payload_salt = [0u8; format::header::SALT_LEN];
        rng.fill_bytes(&mut payload_salt);
        let header = Header {
            cipher: opts.cipher,
            codec: opts.codec,
            hash: opts.hash,
            chunk_log2,
            payload_salt,
            stanzas: wrap_for(recipients, &file_key, rng)?,
        };
        inner.write_all(&sealed_header(&header, &file_key)?)?;
        let payload_key = file_key.payload_key(&payload_salt);
        Ok(Encryptor {
            inner,
            sealer: Arc::new(Sealer::new(
                opts.cipher,
                &payload_key.0,
                opts.codec,
                opts.hash,
                chunk_log2,
            )),
            window: Window::new(&opts.threads)?,
            fill: vec![0u8; 1 << chunk_log2],
            fill_len: 0,
            spare_plain: Vec::new(),
            spare_frames: Vec::new(),
            chunks_submitted: 0,
            plaintext_len: 0,
            index: Vec::new(),
            digest: Digest::new(opts.hash),
            failed: None,
            stages: Stages::default(),
        })
    }

    /// Reads `r` to its end straight into chunk buffers (no intermediate copy) and returns the
    /// number of bytes read. Short reads from pipes still produce full chunks.
    pub fn copy_from(&mut self, r: &mut impl Read) -> Result<u64> {
        self.check()?;
        let mut total = 0u64;
        loop {
            let at = self.fill_len;
            let fill = &mut self.fill[at..];
            let n = timed(&mut self.stages.read, || crate::io::read_full(r, fill))?;
            self.fill_len += n;
            total += n as u64;
            // read_full stops short only at the end of the input.
            if self.fill_len < self.fill.len() {
                return Ok(total);
            }
            self.guard(|s| s.submit())?;
        }
    }

    /// Ends the stream: seals the last chunk, writes the final frame, index and footer, flushes,
    /// and returns the inner writer.
    pub fn finish(self) -> Result<W> {
        self.finish_with_stats().map(|(w, _)| w)
    }

    /// As [`Encryptor::finish`], also returning the stream's counters.
    pub fn finish_with_stats(mut self) -> Result<(W, StreamStats)> {
        self.check()?;
        if self.fill_len > 0 {
            self.guard(|s| s.submit())?;
        }
        while let Some(r) = self.wait_oldest() {
            self.emit(r?)?;
        }
        let fin = FinalFrame {
            plaintext_len: self.plaintext_len,
            chunk_count: self.chunks_submitted,
            index_digest: *blake3::hash(&self.index).as_bytes(),
            digest: std::mem::replace(&mut self.digest, Digest::new(HashAlg::None)).finish(),
        };
        let mut frame = vec![0u8; format::FINAL_FRAME_LEN];
        frame[FRAME_HEADER_LEN..FRAME_HEADER_LEN + 80].copy_from_slice(&fin.encode());
        let len = self.sealer.seal_into(
            &mut frame,
            self.chunks_submitted,
            true,
            FrameKind::Final,
            80,
        );
        debug_assert_eq!(len, format::FINAL_FRAME_LEN);
        let (inner, index, n) = (&mut self.inner, &self.index, self.chunks_submitted);
        timed(&mut self.stages.write, || -> io::Result<()> {
            inner.write_all(&frame)?;
            inner.write_all(index)?;
            inner.write_all(&footer(n))?;
            inner.flush()
        })?;
        let stats = self.stats();
        Ok((self.inner, stats))
    }

    /// Chunks, threads and time per stage so far.
    pub fn stats(&self) -> StreamStats {
        StreamStats {
            chunks: self.chunks_submitted,
            threads: self.window.threads(),
            stages: self.stages,
        }
    }

    /// The oldest chunk in flight, timing the wait for it.
    fn wait_oldest(&mut self) -> Option<Result<Sealed>> {
        let window = &mut self.window;
        timed(&mut self.stages.wait, || window.next())
    }

    fn check(&self) -> Result<()> {
        match &self.failed {
            Some(e) => Err(e.clone()),
            None => Ok(()),
        }
    }

    /// Runs `f`; if it fails, the stream stays failed (sticky errors).
    fn guard(&mut self, f: impl FnOnce(&mut Self) -> Result<()>) -> Result<()> {
        let r = f(self);
        if let Err(e) = &r {
            self.failed = Some(e.clone());
        }
        r
    }

    /// Hands the filled chunk to a worker; first makes room if too many are in flight.
    fn submit(&mut self) -> Result<()> {
        let index = self.chunks_submitted;
        let len = self.fill_len;
        if index >= format::MAX_CHUNKS || self.plaintext_len + len as u64 > format::MAX_PLAINTEXT {
            return Err(Error::Limit(
                "a zseal file holds at most 16 TiB and 2^32-1 chunks: split the input".into(),
            ));
        }
        while !self.window.has_room() {
            let done = self.wait_oldest().expect("a full window is not empty");
            self.emit(done?)?;
        }
        let next = self
            .spare_plain
            .pop()
            .unwrap_or_else(|| vec![0u8; self.fill.len()]);
        let plain = std::mem::replace(&mut self.fill, next);
        let frame = self.spare_frames.pop().unwrap_or_default();
        self.fill_len = 0;
        self.chunks_submitted += 1;
        self.plaintext_len += len as u64;
        let sealer = Arc::clone(&self.sealer);
        self.window
            .push(move || sealer.seal_chunk(index, plain, len, frame));
        while let Some(done) = self.window.next_ready() {
            self.emit(done?)?;
        }
        Ok(())
    }

    /// Writes one sealed chunk (the next in order) and recycles its buffers.
    fn emit(&mut self, s: Sealed) -> Result<()> {
        let (inner, bytes) = (&mut self.inner, &s.frame[..s.frame_len]);
        timed(&mut self.stages.write, || inner.write_all(bytes))?;
        self.stages.add_chunk(&s.times);
        let body_len = (s.frame_len - FRAME_HEADER_LEN) as u32;
        self.index.extend_from_slice(&body_len.to_le_bytes());
        self.digest.push(&s.plain[..s.plain_len], &s.hash);
        self.spare_plain.push(s.plain);
        self.spare_frames.push(s.frame);
        Ok(())
    }
}

impl<W: Write> Write for Encryptor<W> {
    fn write(&mut self, buf: &[u8]) -> io::Result<usize> {
        self.check()?;
        let n = buf.len().min(self.fill.len() - self.fill_len);
        self.fill[self.fill_len..self.fill_len + n].copy_from_slice(&buf[..n]);
        self.fill_len += n;
        if self.fill_len == self.fill.len() {
            self.guard(|s| s.submit())?;
        }
        Ok(n)
    }

    /// Writes out the chunks already sealed. A partial chunk stays buffered until it is full or
    /// until `finish`: chunks other than the last must be full.
    fn flush(&mut self) -> io::Result<()> {
        self.check()?;
        self.inner.flush()
    }
}
