//! The decrypting side: an `io::Read` adapter. The calling thread reads frames in order and hands
//! them to workers, which authenticate, decompress and hash them; chunks come back in order and
//! only authenticated bytes are ever returned. Reaching the end of the stream (a read returning 0,
//! or [`Decryptor::copy_to`] returning `Ok`) means the final frame, the index, the footer, the
//! length and the whole-plaintext digest have all been checked: a caller that stops reading early
//! has not verified that the file is complete.

use std::io::{self, Read, Write};
use std::sync::Arc;

mod seek;

use super::{InFlight, Workers};
use crate::crypto::aead::{stream_nonce, PayloadCipher, TAG_LEN};
use crate::crypto::Identity;
use crate::error::{Error, Result};
use crate::format::frame::{frame_header, parse_footer, parse_frame_header};
use crate::format::{FinalFrame, FrameKind, Header, FINAL_BODY_LEN, FOOTER_LEN, FRAME_HEADER_LEN};
use crate::hash::{ChunkHash, Digest, HashAlg};
use crate::stats::{timed, ChunkTimes, Stages, StreamStats};

/// How to decrypt.
#[derive(Clone, Debug, Default, PartialEq, Eq)]
pub struct DecryptOptions {
    /// Worker threads; 0 means one per core.
    pub threads: usize,
}

/// What every worker needs to open a chunk; shared, immutable.
pub(crate) struct Opener {
    cipher: PayloadCipher,
    header: Header,
}

/// One opened chunk, back from a worker.
struct Opened {
    index: u64,
    plain: Vec<u8>,
    plain_len: usize,
    spare: Vec<u8>,
    hash: ChunkHash,
    times: ChunkTimes,
}

impl Opener {
    fn chunk_size(&self) -> usize {
        self.header.chunk_size()
    }

    /// Authenticates and decrypts frame `index` in place. On failure nothing of it is released.
    fn open_body(&self, index: u64, last: bool, kind: FrameKind, body: &mut [u8]) -> Result<usize> {
        let aad = frame_header(kind, body.len() as u32);
        let len = body.len() - TAG_LEN;
        let (msg, tag) = body.split_at_mut(len);
        match self.cipher.open(&stream_nonce(index, last), &aad, msg, tag) {
            Ok(()) => Ok(len),
            Err(()) if last => Err(Error::FinalAuth),
            Err(()) => Err(Error::ChunkAuth(index)),
        }
    }

    /// Length of every buffer of the stream: room for a frame body or a chunk. Buffers are
    /// recycled at this length, so no chunk pays for zeroing memory.
    fn buffer_len(&self) -> usize {
        self.chunk_size() + TAG_LEN
    }

    /// The whole per-chunk job: authenticate, decompress (unless raw), hash.
    fn open_chunk(&self, frame: DataFrame, hash: HashAlg, mut spare: Vec<u8>) -> Result<Opened> {
        let DataFrame {
            index,
            kind,
            mut body,
            body_len,
        } = frame;
        let mut times = ChunkTimes::default();
        let len = timed(&mut times.cipher, || {
            self.open_body(index, false, kind, &mut body[..body_len])
        })?;
        let (plain, plain_len, spare) = match kind {
            FrameKind::Raw => (body, len, spare),
            _ => {
                spare.resize(self.buffer_len(), 0);
                let out = &mut spare[..self.chunk_size()];
                let n = timed(&mut times.codec, || {
                    self.header.codec.decompress(&body[..len], out)
                })
                .map_err(|what| Error::ChunkInvalid { index, what })?;
                if n == 0 {
                    return Err(Error::ChunkInvalid {
                        index,
                        what: "decompresses to nothing".into(),
                    });
                }
                (spare, n, body)
            }
        };
        let hash = timed(&mut times.hash, || {
            ChunkHash::compute(hash, index, self.chunk_size(), &plain[..plain_len])
        });
        Ok(Opened {
            index,
            plain,
            plain_len,
            spare,
            hash,
            times,
        })
    }
}

/// A data frame as read, before a worker opens it.
struct DataFrame {
    index: u64,
    kind: FrameKind,
    /// Room for any frame of the stream; the frame's bytes are `body[..body_len]`.
    body: Vec<u8>,
    body_len: usize,
}

enum State {
    /// Reading frames.
    Frames,
    /// The final frame was read (its body is kept); chunks may still be in flight.
    FinalRead(Vec<u8>),
    /// Reading failed at a frame; the chunks read before it still come out (or fail) first, so
    /// errors are reported in stream order whatever the number of threads.
    Broken(Error),
    /// A range ended (or, with a loaded index, the last chunk was released): nothing more is
    /// read until the next seek.
    Stopped,
    /// Everything verified; the final frame's contents.
    Done(FinalFrame),
    /// Sticky failure.
    Failed(Error),
}

/// Decrypts a zseal container read from `R`. See the module documentation.
pub struct Decryptor<R: Read> {
    inner: R,
    opener: Arc<Opener>,
    header_len: u64,
    workers: Workers,
    pending: InFlight<Opened>,
    state: State,
    frames_read: u64,
    container_read: u64,
    chunks_released: u64,
    plaintext_released: u64,
    short_chunk_seen: bool,
    index_hasher: blake3::Hasher,
    digest: Digest,
    current: Vec<u8>,
    current_len: usize,
    pos: usize,
    spares: Vec<Vec<u8>>,
    /// Plaintext offset of the next byte `read` returns.
    position: u64,
    /// Bytes to drop from the next released chunk (a position inside it).
    skip_in_chunk: usize,
    /// Frames from this number on are not read (the end of a range).
    stop_at_chunk: Option<u64>,
    /// True while every chunk from the first was released: only then is the digest checked.
    whole: bool,
    /// The authenticated index, loaded by the first seek.
    index: Option<seek::SeekIndex>,
    stages: Stages,
}

/// A container whose header has been read but not yet authenticated: what `inspect` shows, and
/// the step where a caller learns what kind of key the file wants before asking for it.
pub struct Locked<R: Read> {
    inner: R,
    header: Header,
    raw: Vec<u8>,
    mac: [u8; 32],
}

impl<R: Read> Locked<R> {
    /// Reads and parses the header (bounded: at most 1 MiB).
    pub fn read(mut inner: R) -> Result<Self> {
        let (header, raw, mac) = Header::read(&mut inner)?;
        Ok(Locked {
            inner,
            header,
            raw,
            mac,
        })
    }

    /// The header as parsed. Not authenticated yet: use it for display and key selection only.
    pub fn header(&self) -> &Header {
        &self.header
    }

    /// Length of the header in bytes.
    pub fn header_len(&self) -> u64 {
        (self.raw.len() + self.mac.len()) as u64
    }

    /// Unwraps the file key with the first identity that opens a stanza, verifies the header MAC
    /// and returns the decrypting stream. No payload is read yet.
    pub fn unlock(
        self,
        identities: &[&dyn Identity],
        opts: &DecryptOptions,
    ) -> Result<Decryptor<R>> {
        let mut file_key = None;
        for id in identities {
            if let Some(k) = id.unwrap_stanzas(&self.header.stanzas)? {
                file_key = Some(k);
                break;
            }
        }
        let header = self.header;
        let file_key = file_key.ok_or_else(|| Error::NoMatchingKey {
            stanzas: header.stanzas.len(),
            kinds: header
                .stanzas
                .iter()
                .map(|s| s.kind_name())
                .collect::<Vec<_>>()
                .join(", "),
        })?;
        file_key.verify_header_mac(&self.raw, &self.mac)?;
        let payload_key = file_key.payload_key(&header.payload_salt);
        let workers = Workers::new(opts.threads)?;
        let header_len = (self.raw.len() + self.mac.len()) as u64;
        let digest = Digest::new(header.hash);
        Ok(Decryptor {
            inner: self.inner,
            opener: Arc::new(Opener {
                cipher: PayloadCipher::new(header.cipher, &payload_key.0),
                header,
            }),
            header_len,
            pending: InFlight::new(workers.in_flight()),
            workers,
            state: State::Frames,
            frames_read: 0,
            container_read: header_len,
            chunks_released: 0,
            plaintext_released: 0,
            short_chunk_seen: false,
            index_hasher: blake3::Hasher::new(),
            digest,
            current: Vec::new(),
            current_len: 0,
            pos: 0,
            spares: Vec::new(),
            position: 0,
            skip_in_chunk: 0,
            stop_at_chunk: None,
            whole: true,
            index: None,
            stages: Stages::default(),
        })
    }
}

impl<R: Read> Decryptor<R> {
    /// Reads the header, unwraps the file key with the first identity that opens a stanza, and
    /// verifies the header MAC. No payload is read yet.
    pub fn new(inner: R, identities: &[&dyn Identity], opts: &DecryptOptions) -> Result<Self> {
        Locked::read(inner)?.unlock(identities, opts)
    }

    /// The authenticated header.
    pub fn header(&self) -> &Header {
        &self.opener.header
    }

    /// Length of the header in bytes.
    pub fn header_len(&self) -> u64 {
        self.header_len
    }

    /// The verified contents of the final frame (length, chunk count, digest), once the whole
    /// container has been read from its first byte and checked; `None` before, and after a
    /// range read.
    pub fn verified(&self) -> Option<&FinalFrame> {
        match &self.state {
            State::Done(f) => Some(f),
            _ => None,
        }
    }

    /// The whole-plaintext digest in the standard tool's hex form (`b3sum`, `xxhsum -H3`), once
    /// verified; `None` before, or when the file has no digest.
    pub fn digest_hex(&self) -> Option<String> {
        let alg = self.opener.header.hash;
        self.verified()
            .filter(|_| !alg.is_empty())
            .map(|f| crate::hash::to_hex(alg, &f.digest))
    }

    /// Gives back the underlying reader (chunks in flight are dropped).
    pub fn into_inner(self) -> R {
        self.inner
    }

    /// Chunks released, threads and time per stage so far.
    pub fn stats(&self) -> StreamStats {
        StreamStats {
            chunks: self.chunks_released,
            threads: self.workers.threads(),
            stages: self.stages,
        }
    }

    /// Container bytes consumed so far.
    pub fn bytes_read(&self) -> u64 {
        self.container_read
    }

    /// Writes the whole plaintext (from the current position) to `w`, chunk by chunk without an
    /// intermediate copy, and verifies the end of the container. Returns the bytes written.
    pub fn copy_to(&mut self, w: &mut impl Write) -> Result<u64> {
        self.copy_limited(w, u64::MAX)
    }

    /// Writes at most `limit` bytes from the current position to `w`.
    pub(super) fn copy_limited(&mut self, w: &mut impl Write, limit: u64) -> Result<u64> {
        let mut total = 0u64;
        loop {
            if self.pos < self.current_len {
                let n = ((self.current_len - self.pos) as u64).min(limit - total) as usize;
                let bytes = &self.current[self.pos..self.pos + n];
                timed(&mut self.stages.write, || w.write_all(bytes))?;
                total += n as u64;
                self.pos += n;
                self.position += n as u64;
            }
            if total == limit || !self.step()? {
                return Ok(total);
            }
        }
    }

    /// Makes the next authenticated chunk current. Returns false at the verified end.
    fn step(&mut self) -> Result<bool> {
        match &self.state {
            State::Failed(e) => return Err(e.duplicate()),
            State::Done(_) => return Ok(false),
            _ => {}
        }
        let r = self.advance();
        match r {
            Ok(more) => Ok(more),
            Err(e) => {
                self.state = State::Failed(e.duplicate());
                self.current_len = 0;
                self.pos = 0;
                Err(e)
            }
        }
    }

    fn advance(&mut self) -> Result<bool> {
        while matches!(self.state, State::Frames) && !self.pending.is_full() {
            if self.stop_before_frame() {
                self.state = State::Stopped;
                break;
            }
            if let Err(e) = self.read_frame() {
                self.state = State::Broken(e);
                break;
            }
        }
        let pending = &mut self.pending;
        if let Some(opened) = timed(&mut self.stages.wait, || pending.pop_wait()) {
            self.release(opened?)?;
            return Ok(true);
        }
        match std::mem::replace(&mut self.state, State::Frames) {
            State::FinalRead(body) => {
                let fin = self.verify_end(body)?;
                // The digest covers the whole plaintext; after a skip only the rest was checked.
                self.state = if self.whole {
                    State::Done(fin)
                } else {
                    State::Stopped
                };
            }
            State::Stopped => self.finish_indexed()?,
            State::Broken(e) => return Err(e),
            _ => unreachable!("zseal bug: no chunk in flight while frames remain to be read"),
        }
        Ok(false)
    }

    /// True when the next frame is not to be read: a range ends before it, or the index (already
    /// authenticated with the final frame) says it is the final frame.
    fn stop_before_frame(&self) -> bool {
        self.stop_at_chunk == Some(self.frames_read)
            || self
                .index
                .as_ref()
                .is_some_and(|ix| self.frames_read >= ix.chunk_count())
    }

    /// After the last chunk read through a loaded index: when every chunk from the first was
    /// released, the digest is checked as a sequential read would.
    fn finish_indexed(&mut self) -> Result<()> {
        let Some(ix) = self
            .index
            .as_ref()
            .filter(|ix| self.chunks_released == ix.chunk_count())
        else {
            self.state = State::Stopped;
            return Ok(());
        };
        if !self.whole {
            self.state = State::Stopped;
            return Ok(());
        }
        let fin = ix.final_frame().clone();
        let digest = std::mem::replace(&mut self.digest, Digest::new(HashAlg::None)).finish();
        if digest != fin.digest {
            return Err(Error::DigestMismatch);
        }
        self.state = State::Done(fin);
        Ok(())
    }

    /// Reads the next frame header and checks its kind and length against FORMAT.md §3 before
    /// anything of the body is read or allocated. Shared by decryption and by range skipping.
    fn read_frame_header(&mut self) -> Result<(FrameKind, usize)> {
        let index = self.frames_read;
        let mut fh = [0u8; FRAME_HEADER_LEN];
        let inner = &mut self.inner;
        if timed(&mut self.stages.read, || {
            crate::io::read_full(inner, &mut fh)
        })? != FRAME_HEADER_LEN
        {
            return Err(Error::Truncated(format!(
                "no final frame after {index} chunk(s)"
            )));
        }
        let (kind, body_len) = parse_frame_header(&fh);
        let body_len = body_len as usize;
        let kind = kind.ok_or_else(|| {
            Error::Damaged(format!(
                "frame {index} has an unknown kind byte {:#04x}",
                fh[0]
            ))
        })?;
        let (min, max) = match kind {
            FrameKind::Final => (FINAL_BODY_LEN, FINAL_BODY_LEN),
            _ => (TAG_LEN + 1, self.opener.chunk_size() + TAG_LEN),
        };
        if body_len < min || body_len > max {
            return Err(Error::Damaged(format!(
                "frame {index} declares {body_len} bytes, outside {min}..={max} for its kind"
            )));
        }
        if kind != FrameKind::Final && index >= crate::format::MAX_CHUNKS {
            return Err(Error::Limit("more than 2^32-1 chunks".into()));
        }
        Ok((kind, body_len))
    }

    /// Reads one frame: a data frame goes to a worker, the final frame is kept for the end.
    fn read_frame(&mut self) -> Result<()> {
        let index = self.frames_read;
        let (kind, body_len) = self.read_frame_header()?;
        let mut body = self.spares.pop().unwrap_or_default();
        body.resize(self.opener.buffer_len().max(body_len), 0);
        let (inner, dst) = (&mut self.inner, &mut body[..body_len]);
        if timed(&mut self.stages.read, || crate::io::read_full(inner, dst))? != body_len {
            return Err(Error::Truncated(format!("inside frame {index}")));
        }
        self.container_read += (FRAME_HEADER_LEN + body_len) as u64;
        self.frames_read += 1;
        if kind == FrameKind::Final {
            body.truncate(body_len);
            self.state = State::FinalRead(body);
            return Ok(());
        }
        self.index_hasher.update(&(body_len as u32).to_le_bytes());
        let spare = self.spares.pop().unwrap_or_default();
        let opener = Arc::clone(&self.opener);
        // Chunk hashes serve only the whole-plaintext digest: a range read skips them.
        let hash = if self.whole {
            opener.header.hash
        } else {
            HashAlg::None
        };
        let frame = DataFrame {
            index,
            kind,
            body,
            body_len,
        };
        let ticket = self
            .workers
            .submit(move || opener.open_chunk(frame, hash, spare));
        self.pending.push(ticket);
        Ok(())
    }

    /// Makes an opened chunk (the next in order) current, after the checks that need order.
    fn release(&mut self, o: Opened) -> Result<()> {
        debug_assert_eq!(o.index, self.chunks_released, "chunks come back in order");
        if let Some(ix) = &self.index {
            let want = ix.chunk_len(o.index, self.opener.chunk_size());
            if o.plain_len as u64 != want {
                return Err(Error::ChunkInvalid {
                    index: o.index,
                    what: format!("holds {} bytes, the index says {want}", o.plain_len),
                });
            }
        }
        if self.short_chunk_seen {
            return Err(Error::ChunkInvalid {
                index: o.index,
                what: "follows a short chunk (only the last chunk may be short)".into(),
            });
        }
        self.short_chunk_seen = o.plain_len < self.opener.chunk_size();
        if self.plaintext_released + o.plain_len as u64 > crate::format::MAX_PLAINTEXT {
            return Err(Error::Limit(
                "more than 16 TiB of plaintext in one file".into(),
            ));
        }
        if self.whole {
            self.digest.push(&o.plain[..o.plain_len], &o.hash);
        }
        self.stages.add_chunk(&o.times);
        self.chunks_released += 1;
        self.plaintext_released += o.plain_len as u64;
        self.spares.push(o.spare);
        let old = std::mem::replace(&mut self.current, o.plain);
        if old.capacity() > 0 {
            self.spares.push(old);
        }
        self.current_len = o.plain_len;
        self.pos = self.skip_in_chunk.min(o.plain_len);
        self.skip_in_chunk = 0;
        Ok(())
    }

    /// Final frame, index, footer, end of input, length and digest.
    fn verify_end(&mut self, mut body: Vec<u8>) -> Result<FinalFrame> {
        let n = self.chunks_released;
        let len = self
            .opener
            .open_body(n, true, FrameKind::Final, &mut body)?;
        let fin = FinalFrame::decode(&body[..len])?;
        if fin.chunk_count != n || fin.plaintext_len != self.plaintext_released {
            return Err(Error::Damaged(format!(
                "the final frame records {} bytes in {} chunks, but {} bytes in {n} chunks were read",
                fin.plaintext_len, fin.chunk_count, self.plaintext_released
            )));
        }
        if *self.index_hasher.finalize().as_bytes() != fin.index_digest {
            return Err(Error::Damaged(
                "the frame lengths do not match the authenticated index".into(),
            ));
        }
        self.verify_index_and_footer(n, &fin.index_digest)?;
        let digest = std::mem::replace(&mut self.digest, Digest::new(HashAlg::None)).finish();
        if self.whole && digest != fin.digest {
            return Err(Error::DigestMismatch);
        }
        self.current_len = 0;
        self.pos = 0;
        Ok(fin)
    }

    /// Streams the index through BLAKE3 (constant memory), then checks the footer and that
    /// nothing follows it.
    fn verify_index_and_footer(&mut self, n: u64, index_digest: &[u8; 32]) -> Result<()> {
        read_index(&mut self.inner, n, index_digest, |_| Ok(()))?;
        let mut f = [0u8; FOOTER_LEN];
        if crate::io::read_full(&mut self.inner, &mut f)? != FOOTER_LEN {
            return Err(Error::Truncated("in the footer".into()));
        }
        if parse_footer(&f)? != n {
            return Err(Error::Damaged("the footer's chunk count is wrong".into()));
        }
        self.container_read += n * 4 + FOOTER_LEN as u64;
        if crate::io::read_full(&mut self.inner, &mut [0u8; 1])? != 0 {
            return Err(Error::TrailingData);
        }
        Ok(())
    }
}

/// Reads the `n` entries of the index (FORMAT.md §4) in pieces, hands each body length to
/// `each`, and checks the whole against its authenticated digest: constant memory, one pass.
fn read_index(
    r: &mut impl Read,
    n: u64,
    index_digest: &[u8; 32],
    mut each: impl FnMut(u32) -> Result<()>,
) -> Result<()> {
    let mut h = blake3::Hasher::new();
    let mut left = n * 4;
    let mut buf = [0u8; 16384];
    while left > 0 {
        let want = left.min(buf.len() as u64) as usize;
        if crate::io::read_full(r, &mut buf[..want])? != want {
            return Err(Error::Truncated("in the index".into()));
        }
        h.update(&buf[..want]);
        for e in buf[..want].chunks_exact(4) {
            each(u32::from_le_bytes(e.try_into().expect("chunks of 4 bytes")))?;
        }
        left -= want as u64;
    }
    if h.finalize().as_bytes() != index_digest {
        return Err(Error::Damaged(
            "the index does not match its authenticated digest".into(),
        ));
    }
    Ok(())
}

impl<R: Read> Read for Decryptor<R> {
    fn read(&mut self, buf: &mut [u8]) -> io::Result<usize> {
        loop {
            if self.pos < self.current_len {
                let n = buf.len().min(self.current_len - self.pos);
                buf[..n].copy_from_slice(&self.current[self.pos..self.pos + n]);
                self.pos += n;
                self.position += n as u64;
                return Ok(n);
            }
            if buf.is_empty() || !self.step()? {
                return Ok(0);
            }
        }
    }
}
