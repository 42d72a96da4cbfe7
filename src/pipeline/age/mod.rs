//! The age side of the engine (FORMAT.md §10.2): an age v1 file decrypted on the workers through
//! the same ordered window and cursor as a zseal container. The calling thread reads runs of
//! STREAM chunks ([`GROUP`] to a job); a worker opens each with ChaCha20-Poly1305 (the payload
//! AEAD zseal already composes from aws-lc-rs) and packs the plaintexts; the runs come back in
//! order and only authenticated bytes are released. A seek or a range first authenticates the
//! final chunk, which fixes the plaintext length, then opens only the chunks it covers.

use std::io::{self, BufRead, Read, Seek, SeekFrom};
use std::sync::Arc;

mod input;
mod locked;
mod seekable;
mod write;

pub use locked::AgeLocked;
pub use seekable::{AgeZstd, ZstdChunks};
pub use write::{AgeSink, AgeWriter};

use input::AgeInput;

use super::chunks::{Chunk, ChunkReader, ChunkSource, Cursor, SeekSource};
use super::window::Window;
use crate::crypto::aead::{stream_nonce, PayloadCipher};
use crate::error::{Error, Result};
use crate::format::age::{chunk_offset, payload_shape, CHUNK, CHUNK_CT, NONCE_LEN, TAG};
use crate::io::read_full;
use crate::stats::{timed, Stages, StreamStats};

/// STREAM chunks per job: 1 MiB of plaintext, so that a job is worth sending to a worker.
pub(crate) const GROUP: usize = 16;

/// A run of chunks back from a worker: the plaintexts packed from `plain[0]`, and what ended it.
struct Group {
    first: u64,
    plain: Vec<u8>,
    len: usize,
    chunks: u64,
    /// The run ends with the final chunk, authenticated.
    last: bool,
    /// The chunk that failed, after the ones released before it.
    error: Option<Error>,
    /// The ciphertext buffer, for reuse.
    spare: Vec<u8>,
    /// Time the worker spent opening the chunks (`--stats`).
    times: crate::stats::ChunkTimes,
}

/// Decrypts an age v1 file read from `R`: the engine's reader over its STREAM chunks. Reaching
/// the end (a read returning 0) means every chunk was authenticated and the last one was the
/// final chunk.
pub type AgeReader<R> = ChunkReader<AgeChunks<R>>;

/// The authenticated STREAM chunks of an age file read from `R`, for the engine's reader.
pub struct AgeChunks<R: Read> {
    input: AgeInput<R>,
    cipher: Arc<PayloadCipher>,
    window: Window<Group>,
    /// Offset of chunk 0 in the decoded file.
    payload_at: u64,
    at: Position,
    /// (chunks, plaintext length), once the final chunk was authenticated by a seek.
    shape: Option<(u64, u64)>,
    /// A failure behind chunks released before it.
    pending: Option<Error>,
    end: Verified,
    spares: Vec<Vec<u8>>,
    counts: Counts,
}

/// Where reading stands.
#[derive(Default)]
struct Position {
    /// The next chunk to read.
    next: u64,
    /// Chunks from this one on are not read (a range's end, or the final chunk's successor).
    stop_at: Option<u64>,
    /// The final chunk, or a failure, was read: nothing follows.
    ended: bool,
    /// One byte read ahead to learn whether the chunk before it was the last.
    ahead: Option<u8>,
}

/// Whether the whole file was read, and checked, from its first byte.
struct Verified {
    /// Every chunk from the first went through in order.
    from_start: bool,
    /// The plaintext length, once the whole file was read from its first byte and checked.
    len: Option<u64>,
}

/// The stream's counters.
#[derive(Default)]
struct Counts {
    stages: Stages,
    chunks: u64,
    opened: u64,
    /// The file's chunk count, once a read authenticated its final chunk.
    final_chunk: Option<u64>,
}

/// Opens the chunks `first..` held in `ct[..n]` into `plain`, packed from its start; `ends`:
/// the input ends after them. A pure function of the key and the bytes.
///
/// As age's reference reader does (and CCTV's payload hashes expect), each chunk is released as
/// soon as it authenticates: a full chunk opens as a middle chunk or else as the final one, a
/// short one only as the final one. What the order of chunks breaks comes after the chunks
/// before it: bytes after the final chunk, or an input that ends without one.
fn open_group(
    cipher: &PayloadCipher,
    first: u64,
    ct: Vec<u8>,
    n: usize,
    ends: bool,
    mut plain: Vec<u8>,
) -> Group {
    let count = n.div_ceil(CHUNK_CT) as u64;
    plain.resize(ct.len().max(plain.len()), 0);
    let mut len = 0;
    let mut error = None;
    let mut last = false;
    let mut opened = 0;
    let mut times = crate::stats::ChunkTimes::default();
    for k in 0..count {
        let i = first + k;
        let at = k as usize * CHUNK_CT;
        let end = (at + CHUNK_CT).min(n);
        let final_piece = ends && k + 1 == count;
        let opened_chunk = timed(&mut times.cipher, || {
            open_chunk(cipher, i, &ct[at..end], &mut plain[len..])
        });
        match opened_chunk {
            Ok((m, is_last)) => {
                len += m;
                opened += 1;
                last = is_last;
                if is_last && !final_piece {
                    error = Some(Error::TrailingData);
                } else if !is_last && final_piece {
                    error = Some(Error::Truncated(format!(
                        "the age file ends after chunk {i}, which is not its last chunk"
                    )));
                }
            }
            Err(e) => error = Some(e),
        }
        if error.is_some() {
            break;
        }
    }
    Group {
        first,
        plain,
        len,
        chunks: opened,
        last: last && error.is_none(),
        error,
        spare: ct,
        times,
    }
}

/// Opens chunk `i`, `sealed`, into `out`: its plaintext length, and whether it is the final
/// chunk. A full chunk is tried as a middle chunk first; a short one can only be the final one.
fn open_chunk(
    cipher: &PayloadCipher,
    i: u64,
    sealed: &[u8],
    out: &mut [u8],
) -> Result<(usize, bool)> {
    let len = sealed.len();
    if len < TAG {
        return Err(Error::Truncated(format!(
            "age chunk {i} is {len} bytes, shorter than its tag"
        )));
    }
    if len == CHUNK_CT {
        if let Ok(m) = cipher.open_to(&stream_nonce(i, false), b"", sealed, out) {
            return Ok((m, false));
        }
    }
    match cipher.open_to(&stream_nonce(i, true), b"", sealed, out) {
        Ok(0) if i > 0 => Err(Error::ChunkInvalid {
            index: i,
            what: "is an empty last chunk after others (age allows it only alone)".into(),
        }),
        Ok(m) => Ok((m, true)),
        Err(()) => Err(Error::ChunkAuth(i)),
    }
}

impl<R: Read> ChunkReader<AgeChunks<R>> {
    /// The first plaintext bytes, from chunk 0 alone (nothing more is read ahead), for a caller
    /// that must see them before it decides how to read on (an object is fetched as it is read).
    pub(crate) fn peek_head(&mut self) -> io::Result<&[u8]> {
        let saved = self.source.at.stop_at.replace(1);
        let r = self.fill_buf().map(|_| ());
        self.source.at.stop_at = saved;
        r?;
        Ok(self.cursor.available())
    }
}

impl<R: Read> AgeChunks<R> {
    /// The file's STREAM chunks, once its final chunk was authenticated (by a seek, or by
    /// reading up to it): its index plus one.
    pub(crate) fn verified_chunks(&self) -> Option<u64> {
        self.shape.map(|(n, _)| n).or(self.counts.final_chunk)
    }

    fn release(&mut self, g: Group, cursor: &mut Cursor) {
        self.counts.chunks += g.chunks;
        if g.last {
            self.counts.final_chunk = Some(g.first + g.chunks);
        }
        self.counts.stages.add_chunk(&g.times);
        if g.spare.capacity() > 0 {
            self.spares.push(g.spare);
        }
        self.pending = g.error;
        if g.last && self.end.from_start {
            self.end.len = Some(g.first * CHUNK as u64 + g.len as u64);
        }
        let chunk = Chunk {
            buf: g.plain,
            bytes: 0..g.len,
            start: g.first * CHUNK as u64,
        };
        let old = cursor.load(chunk);
        if old.capacity() > 0 {
            self.spares.push(old);
        }
    }

    fn more(&self) -> bool {
        !self.at.ended && self.at.stop_at.is_none_or(|s| self.at.next < s)
    }

    fn fill_window(&mut self) {
        while self.window.has_room() && self.more() {
            if let Err(e) = self.read_group() {
                self.at.ended = true;
                self.window.push_done(Err(e));
            }
        }
    }

    /// Reads the next run of chunks and hands it to a worker.
    fn read_group(&mut self) -> Result<()> {
        let first = self.at.next;
        let mut want = GROUP;
        if let Some(s) = self.at.stop_at {
            want = want.min((s - first) as usize);
        }
        let want = want * CHUNK_CT;
        let mut buf = self.spares.pop().unwrap_or_default();
        buf.resize(GROUP * CHUNK_CT, 0);
        let mut n = 0;
        if let Some(b) = self.at.ahead.take() {
            buf[0] = b;
            n = 1;
        }
        let input = &mut self.input;
        n += timed(&mut self.counts.stages.read, || {
            read_full(input, &mut buf[n..want])
        })?;
        let count = n.div_ceil(CHUNK_CT) as u64;
        let ends = match self.shape {
            // After a seek the final chunk is known.
            Some((chunks, _)) => first + count == chunks,
            None if n < want => true,
            None => {
                let mut b = [0u8; 1];
                match read_full(&mut self.input, &mut b)? {
                    0 => true,
                    _ => {
                        self.at.ahead = Some(b[0]);
                        false
                    }
                }
            }
        };
        if n == 0 {
            return Err(Error::Truncated("the age payload has no chunk".into()));
        }
        self.at.next += count;
        self.counts.opened += count;
        if ends {
            self.at.ended = true;
        }
        let cipher = Arc::clone(&self.cipher);
        let plain = self.spares.pop().unwrap_or_default();
        self.window
            .push(move || Ok(open_group(&cipher, first, buf, n, ends, plain)));
        Ok(())
    }
}

impl<R: Read + Seek> AgeChunks<R> {
    /// Authenticates the final chunk (once): the chunk count and plaintext length it fixes.
    /// The position in the input is left where it was.
    fn load_shape(&mut self) -> Result<(u64, u64)> {
        if let Some(s) = self.shape {
            return Ok(s);
        }
        let here = self.input.stream_position()?;
        let shape = self.read_shape();
        self.input.seek(SeekFrom::Start(here))?;
        self.shape = Some(shape?);
        Ok(self.shape.expect("just set"))
    }

    fn read_shape(&mut self) -> Result<(u64, u64)> {
        let end = self.input.seek(SeekFrom::End(0))?;
        let p = end
            .checked_sub(self.payload_at)
            .ok_or_else(|| Error::Truncated("in the age payload nonce".into()))?;
        let (n, len) = payload_shape(p)?;
        let at = chunk_offset(n - 1);
        let mut last = vec![0u8; (p - at) as usize];
        self.input.seek(SeekFrom::Start(self.payload_at + at))?;
        if read_full(&mut self.input, &mut last)? != last.len() {
            return Err(Error::Truncated("in the last age chunk".into()));
        }
        let mut out = vec![0u8; last.len()];
        if !open_chunk(&self.cipher, n - 1, &last, &mut out)?.1 {
            return Err(Error::Truncated(format!(
                "the age file ends after chunk {}, which is not its last chunk",
                n - 1
            )));
        }
        Ok((n, len))
    }
}

impl<R: Read + Seek> SeekSource for AgeChunks<R> {
    /// From the authenticated final chunk.
    fn plaintext_len(&mut self, _: &mut Cursor) -> Result<u64> {
        Ok(self.load_shape()?.1)
    }

    /// Reads no chunk past the one holding plaintext byte `end - 1`.
    fn limit_read_ahead(&mut self, _: &mut Cursor, end: Option<u64>) -> Result<()> {
        let (n, _) = self.load_shape()?;
        self.at.stop_at = Some(end.map_or(n, |e| e.div_ceil(CHUNK as u64).min(n)));
        Ok(())
    }

    fn reposition(&mut self, cursor: &mut Cursor, pos: u64) -> Result<()> {
        let (n, _) = self.load_shape()?;
        let chunk = (pos / CHUNK as u64).min(n);
        self.window.clear();
        self.input
            .seek(SeekFrom::Start(self.payload_at + chunk_offset(chunk)))?;
        self.at.next = chunk;
        self.at.ended = chunk >= n;
        self.at.ahead = None;
        self.pending = None;
        self.at.stop_at = Some(n);
        self.end.from_start = false;
        self.end.len = None;
        cursor.reset(pos);
        Ok(())
    }
}

impl<R: Read> ChunkSource for AgeChunks<R> {
    fn write_time(&mut self) -> &mut std::time::Duration {
        &mut self.counts.stages.write
    }

    /// STREAM chunks released, threads and time per stage so far.
    fn stats(&self) -> StreamStats {
        StreamStats {
            chunks: self.counts.chunks,
            frames_opened: self.counts.opened,
            threads: self.window.threads(),
            stages: self.counts.stages,
        }
    }

    /// Of the (decoded) header.
    fn header_len(&self) -> u64 {
        self.payload_at - NONCE_LEN as u64
    }

    fn verified_len(&self, _: &Cursor) -> Option<u64> {
        self.end.len
    }

    fn advance(&mut self, cursor: &mut Cursor) -> Result<bool> {
        if let Some(e) = self.pending.take() {
            return Err(e);
        }
        self.fill_window();
        let window = &mut self.window;
        match timed(&mut self.counts.stages.wait, || window.next()) {
            Some(Ok(g)) => {
                self.release(g, cursor);
                Ok(true)
            }
            Some(Err(e)) => Err(e),
            None => Ok(false),
        }
    }
}
