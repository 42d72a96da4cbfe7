//! The zseal container's side of the engine's reader: [`ContainerChunks`] is the
//! [`ChunkSource`] the engine's [`ChunkReader`] reads a container through ([`Decryptor`]). The
//! calling thread reads frames in order and hands them to workers, which authenticate,
//! decompress and hash them; chunks come back in order and only authenticated bytes are ever
//! returned. Reaching the end of the stream (a read returning 0, or `copy_to` returning `Ok`)
//! means the final frame, the index, the footer, the length and the whole-plaintext digest have
//! all been checked: a caller that stops reading early has not verified that the file is
//! complete.
//!
//! The parts, one job each: [`Frames`](frames) (where frames come from), [`Opener`](opener) (the
//! per-chunk work on the workers), [`Verifier`](verify) (what is checked across chunks), and
//! [`seek`] (the index, the container's moves and ranges).

use std::io::{Read, Write};
use std::sync::Arc;

mod direct;
pub(crate) mod frames;
mod locked;
pub(crate) mod opener;
pub(crate) mod pieces;
mod resume;
pub(crate) mod seek;
mod signed;
mod split;
mod verify;

pub use locked::Locked;
pub use split::{final_frame, merged_digest, open_range, stored_span, OpenKey, OpenedRange};

use super::chunks::{Chunk, ChunkReader, Cursor};
use super::drive::{self, Drive, Framing};
use super::intake::{aligned_at, ALIGN};
use super::offset::ReadAt;
use super::options::DecryptOptions;
use super::source::{ChunkSource, Promises, SeekBy};
use crate::crypto::Identity;
use crate::error::{Error, Result};
use crate::format::{FinalFrame, FrameKind, Header};
use crate::stats::{timed, StreamStats};
use frames::Frames;
use opener::{DataFrame, Opened, Opener};
use verify::Verifier;

/// What comes back from the window, in stream order.
pub(crate) enum Item {
    Chunk(Opened),
    /// A padding frame of a padded file, authenticated and all zeros; its buffer for reuse.
    Padding(Vec<u8>),
    /// A signature frame's SSHSIG, authenticated and parsed; the frame's buffer for reuse.
    Signature(crate::crypto::sign::Signature, Vec<u8>),
    /// The final frame's body: every data frame is before it.
    End(Vec<u8>),
}

/// Decrypts a zseal container read from `R`: the engine's reader over a container's chunks.
/// See the module documentation.
pub type Decryptor<R> = ChunkReader<ContainerChunks<R>>;

/// The authenticated chunks of a zseal container read from `R`, for the engine's reader. Its
/// public methods (the header, the verified digest) are reached through [`Decryptor`].
pub struct ContainerChunks<R: Read> {
    frames: Frames<R>,
    opener: Arc<Opener>,
    /// The engine's read driver: the window of frames in flight, buffers for reuse, counters.
    drive: Drive<Item>,
    verifier: Verifier,
    /// The authenticated index, loaded by the first seek.
    index: Option<seek::SeekIndex>,
    /// The final frame, once the whole container was read from its first byte and checked.
    verified: Option<FinalFrame>,
    /// The authenticated chunk that was current before the last seek: (buffer, length, start).
    kept: Option<Chunk>,
    /// The regular file the container is read from, when the workers read long frame bodies
    /// from it themselves ([`Decryptor::read_bodies_from`](ChunkReader::read_bodies_from)).
    bodies: Option<Arc<ReadAt>>,
    signed: signed::Signed,
    /// A pieced file's keys and place in its pieces (FORMAT.md §14).
    pieces: Option<pieces::Pieces>,
}

/// Frame bodies this long and longer are read by the worker that opens them, when the input is
/// a regular file: the calling thread only reads headers. Shorter ones (compressed text, about
/// 1 MiB per 8 MiB chunk) cost the calling thread little, and a read of its own each would cost
/// a worker two system calls.
const WORKER_READ_MIN: usize = 2 << 20;

impl<R: Read> ChunkReader<ContainerChunks<R>> {
    /// Reads the header, unwraps the file key with the first identity that opens a stanza, and
    /// verifies the header MAC. No payload is read yet.
    pub fn new(inner: R, identities: &[&dyn Identity], opts: &DecryptOptions) -> Result<Self> {
        Locked::read(inner)?.unlock(identities, opts)
    }

    /// Gives back the underlying reader (chunks in flight are dropped).
    pub fn into_inner(self) -> R {
        self.source.frames.inner
    }
}

impl<R: Read> ContainerChunks<R> {
    /// The authenticated header.
    pub fn header(&self) -> &Header {
        &self.opener.header
    }

    /// The verified contents of the final frame (length, chunk count, digest), once the whole
    /// container has been read from its first byte and checked; `None` before, and after a
    /// range read.
    pub fn verified(&self) -> Option<&FinalFrame> {
        self.verified.as_ref()
    }

    /// The underlying reader (its position is the decryptor's business: read, do not move it).
    pub fn get_ref(&self) -> &R {
        &self.frames.inner
    }

    /// The underlying reader, to tell it what will be read (an object's span: it must not be
    /// moved or read here).
    pub(crate) fn inner_mut(&mut self) -> &mut R {
        &mut self.frames.inner
    }

    /// Reads one frame: a data frame goes to a worker, the final frame to the end of the window.
    /// A long data body of a regular file is left for the worker to read ([`Self::pass_long_body`]).
    fn read_frame(&mut self) -> Result<()> {
        let index = self.frames.next;
        let (kind, body_len) = self.frames.read_header()?;
        if matches!(kind, FrameKind::Marker | FrameKind::EndMarker) {
            return self.read_marker(index, kind);
        }
        let deferred = self.pass_long_body(kind, body_len)?;
        let mut body = match deferred {
            // Room for the worker's read to place the body (`aligned_at`).
            Some(_) => self.frame_buffer(body_len + ALIGN),
            None => self.read_body(body_len)?,
        };
        if kind == FrameKind::Final {
            body.truncate(body_len);
            self.frames.ended = true;
            self.drive.push_done(Ok(Item::End(body)));
            return Ok(());
        }
        self.verifier.frame_read(body_len);
        self.drive.opened += 1;
        // The key and nonce: a version-1 file's frame `index` under the payload key; a pieced
        // file's under its piece's key or the end key (FORMAT.md §14).
        let (mut index, mut opener, mut piece) = (index, Arc::clone(&self.opener), None);
        if let Some(p) = self.pieces.as_mut() {
            if kind.is_data() {
                let frames = &mut self.frames;
                let (chunk, o, nonce) =
                    p.next_data(index, || Ok(pieces::ends_piece(frames.peek_kind()?)))?;
                (index, opener, piece) = (chunk, o, Some(nonce));
            } else {
                (index, opener) = p.next_end_frame(index)?;
            }
        }
        if kind == FrameKind::Padding {
            self.drive.push(move || {
                opener
                    .open_padding(index, &mut body[..body_len])
                    .map(|()| Item::Padding(body))
            });
            return Ok(());
        }
        if kind == FrameKind::Signature {
            self.drive.push(move || {
                opener
                    .open_signature(index, &mut body[..body_len])
                    .map(|s| Item::Signature(s, body))
            });
            return Ok(());
        }
        let spare = self.chunk_spare();
        let hash = self.verifier.chunk_hash();
        let mut frame = DataFrame {
            index,
            kind,
            body,
            start: 0,
            body_len,
            piece,
        };
        self.drive.push(move || {
            let mut read = std::time::Duration::ZERO;
            if let Some((file, at)) = deferred {
                frame.start = aligned_at(&frame.body, 0, at);
                let body = frame.bytes();
                timed(&mut read, || {
                    file.read(body, at, || format!("inside frame {index}"))
                })?;
            }
            let mut o = opener.open_chunk(frame, hash, spare)?;
            o.times.read += read;
            Ok(Item::Chunk(o))
        });
        Ok(())
    }

    /// A marker or the end marker of a pieced file (FORMAT.md §14.3), read on this thread: the
    /// key of the frames after it.
    fn read_marker(&mut self, index: u64, kind: FrameKind) -> Result<()> {
        let mut id = [0u8; crate::format::piece::PIECE_ID_LEN];
        self.frames.read_body(&mut id)?;
        let p = self
            .pieces
            .as_mut()
            .ok_or_else(|| Error::Bug("a marker in a file without pieces".into()))?;
        match kind {
            FrameKind::Marker => p.begin_piece(index, id)?,
            _ => p.begin_end(index, id)?,
        }
        self.verifier.frame_read(id.len());
        self.verifier.markers += 1;
        Ok(())
    }

    /// For a data frame of [`WORKER_READ_MIN`] bytes or more of a regular file
    /// ([`Decryptor::read_bodies_from`]): moves past its body, unread, and returns the file and
    /// the body's offset, for the worker that opens the frame to read it there.
    fn pass_long_body(
        &mut self,
        kind: FrameKind,
        body_len: usize,
    ) -> Result<Option<(Arc<ReadAt>, u64)>> {
        let Some(file) = self
            .bodies
            .clone()
            .filter(|_| kind.is_data() && body_len >= WORKER_READ_MIN)
        else {
            return Ok(None);
        };
        Ok(self.frames.pass_body(body_len)?.map(|at| (file, at)))
    }

    /// The number of chunk `chunk`'s frame (the chunk after the last: the frame after the data):
    /// the same in a version-1 file, moved by the markers in a pieced one (FORMAT.md §14.5),
    /// whose table is then loaded.
    pub(crate) fn frame_of(&self, chunk: u64) -> u64 {
        match self.pieces.as_ref().and_then(|p| p.table.as_ref()) {
            Some(t) => t.frame_of(chunk),
            None => chunk,
        }
    }

    /// The first frame a read that ends before chunk `chunk` does not read: that chunk's frame;
    /// in a pieced file read to its last chunk, the frame after the end marker, which is read
    /// and checked against the table as a read from a pipe reads it.
    pub(crate) fn stop_frame(&self, chunk: u64) -> u64 {
        match self.pieces.as_ref().and_then(|p| p.table.as_ref()) {
            Some(t) if chunk >= t.data_frames() => t.frame_of(chunk) + 1,
            Some(t) => t.frame_of(chunk),
            None => chunk,
        }
    }

    /// The frame a read from chunk `chunk` starts at: its frame, or in a pieced file the marker
    /// before it when it begins its piece ([`pieces::PieceTable::start_frame`]).
    pub(crate) fn start_frame(&self, chunk: u64) -> u64 {
        match self.pieces.as_ref().and_then(|p| p.table.as_ref()) {
            Some(t) => t.start_frame(chunk),
            None => chunk,
        }
    }

    /// A spare buffer ([`Self::fitting_spare`]) grown to hold a body of `len` bytes, or a new
    /// one when there is no spare. A new buffer comes zeroed from the allocator (a block this
    /// large is usually a fresh mapping, whose pages the kernel zeroes where they are first
    /// written), not grown from nothing with zeros written here: for the first frames of a
    /// stream that wrote every byte of an 8 MiB buffer on the calling thread before a worker
    /// started. When a worker reads the body by offset (the deferred path), the worker is the
    /// one that faults the pages in. A short spare is still grown, so that the pages it has
    /// touched are kept ([`pick_spare`]).
    fn frame_buffer(&mut self, len: usize) -> Vec<u8> {
        let mut body = self.fitting_spare(len);
        if body.is_empty() {
            return vec![0; len];
        }
        if body.len() < len {
            body.resize(len, 0);
        }
        body
    }

    /// Reads the body of the frame whose header was just read into a spare buffer.
    fn read_body(&mut self, body_len: usize) -> Result<Vec<u8>> {
        let mut body = self.frame_buffer(body_len);
        self.frames.read_body(&mut body[..body_len])?;
        Ok(body)
    }

    /// The spare buffer that best holds `len` bytes ([`pick_spare`]).
    fn fitting_spare(&mut self, len: usize) -> Vec<u8> {
        pick_spare(self.drive.spares(), len, self.opener.chunk_size())
    }

    /// The longest spare buffer: the room a whole chunk is decompressed into.
    pub(crate) fn chunk_spare(&mut self) -> Vec<u8> {
        self.fitting_spare(usize::MAX)
    }

    /// Reads the next frame, known to be a data frame, for a worker to open.
    fn read_data_frame(&mut self) -> Result<DataFrame> {
        let index = self.frames.next;
        let (kind, body_len) = self.frames.read_header()?;
        let body = self.read_body(body_len)?;
        self.verifier.frame_read(body_len);
        Ok(DataFrame {
            index,
            kind,
            body,
            start: 0,
            body_len,
            piece: None,
        })
    }

    /// The checks that need order, for chunk `index` (the next in order) with plaintext `bytes`.
    fn accept(
        &mut self,
        index: u64,
        bytes: &[u8],
        hash: &crate::hash::ChunkHash,
        times: &crate::stats::ChunkTimes,
    ) -> Result<()> {
        let c = self.opener.chunk_size();
        let want = self.index.as_ref().map(|ix| ix.chunk_len(index, c));
        self.verifier.accept(index, bytes, hash, want)?;
        self.drive.stages.add_chunk(times);
        Ok(())
    }

    /// Makes an opened chunk (the next in order) current, after the checks that need order.
    fn release_chunk(&mut self, o: Opened, cursor: &mut Cursor) -> Result<()> {
        self.accept(o.index, o.bytes(), &o.hash, &o.times)?;
        if let Some(p) = self.pieces.as_mut() {
            p.released(o.bytes().len(), o.piece_end);
        }
        let (chunk, spare) = self.chunk_of(o);
        self.drive.recycle(spare);
        self.drive.load(cursor, chunk);
        Ok(())
    }

    /// An opened chunk as the cursor holds it, and the buffer it no longer needs.
    fn chunk_of(&self, o: Opened) -> (Chunk, Vec<u8>) {
        let start = o.index * self.opener.chunk_size() as u64;
        let chunk = Chunk {
            buf: o.plain,
            bytes: o.content,
            start,
        };
        (chunk, o.spare)
    }

    /// The final frame of a sequential read: its counts, the index, the footer, the end of the
    /// input, and the digest.
    fn end_of_stream(&mut self, mut body: Vec<u8>) -> Result<()> {
        let fin = match &self.pieces {
            Some(p) => {
                let (counter, opener, _) = p.final_key()?;
                opener.open_final(counter, &mut body)?
            }
            None => self.opener.open_final(self.verifier.frames(), &mut body)?,
        };
        self.verifier.check_end(&fin)?;
        match &self.pieces {
            Some(p) => p.read_trailer(
                &mut self.frames.inner,
                fin.chunk_count,
                &fin.index_digest,
                self.verifier.lengths_digest(),
            )?,
            None => self
                .frames
                .read_trailer(fin.chunk_count, &fin.index_digest)?,
        }
        if self.verifier.check_digest(&fin)? {
            self.check_signed(&fin)?;
            self.verified = Some(fin);
        } else if self.signed.required.is_required() {
            return Err(signed::not_whole());
        }
        Ok(())
    }

    /// Nothing in flight and no frame left to read: a range ended, or an indexed read reached
    /// the last chunk (whose final frame was authenticated with the index). When every chunk
    /// from the first went through, the digest is checked as a sequential read would, and when
    /// every frame did (no padding left unread), the counts and frame lengths too.
    fn end_of_indexed(&mut self) -> Result<()> {
        let Some(fin) = self.index.as_ref().map(|ix| ix.final_frame().clone()) else {
            return Ok(());
        };
        let d = fin.plaintext_len.div_ceil(self.opener.chunk_size() as u64);
        if self.frames.next >= self.frame_of(d) && self.verifier.chunks < d {
            // Every frame the index places data in was read, and one was not data.
            return Err(Error::ChunkInvalid {
                index: self.verifier.chunks,
                what: "is a padding frame where the final frame records data".into(),
            });
        }
        if self.verifier.chunks != d {
            return Ok(());
        }
        if self.verifier.has_digest()
            && self.verifier.frames() == fin.chunk_count
            && self.pieces.is_none()
        {
            self.verifier.check_end(&fin)?;
        }
        if self.signed.required.is_required() {
            // The signature frames after the data were not read (FORMAT.md §12.4).
            return Err(signed::not_whole());
        }
        if self.verifier.check_digest(&fin)? {
            self.verified = Some(fin);
        }
        Ok(())
    }
}

/// Takes from `spares` the buffer that best holds `len` bytes, where `room` is a chunk's size.
/// Buffers only ever grow (their length is the room they have touched, faulted in and zeroed
/// once), so a compressed frame, shorter than a chunk, takes a short buffer (the shortest that
/// fits, or else the longest short one, to be grown) and leaves the chunk-sized ones to whole
/// chunks. Before, every compressed frame slightly longer than the short buffers took a
/// chunk-sized one, and the chunks behind it grew short ones to a chunk's room: 7 chunk-sized
/// buffers for 3 in flight (JSON on 2 threads: 14,667 page faults, now 9,177).
fn pick_spare(spares: &mut Vec<Vec<u8>>, len: usize, room: usize) -> Vec<u8> {
    let best = (0..spares.len()).min_by_key(|&i| {
        let n = spares[i].len();
        let fits = n >= len;
        (
            len < room && n >= room,
            !fits,
            if fits { n } else { usize::MAX - n },
        )
    });
    best.map(|i| spares.swap_remove(i)).unwrap_or_default()
}

impl<R: Read> ChunkSource for ContainerChunks<R> {
    fn write_time(&mut self) -> &mut std::time::Duration {
        self.drive.write_time()
    }

    fn stats(&self) -> StreamStats {
        let mut stages = self.drive.stages;
        stages.read += self.frames.read_time;
        StreamStats {
            chunks: self.verifier.chunks,
            frames_opened: self.drive.opened,
            threads: self.drive.window.threads(),
            stages,
        }
    }

    fn header_len(&self) -> u64 {
        self.frames.first_at
    }

    /// The final frame records the length and count; the header, whether there is a digest.
    fn promises(&self) -> Promises {
        Promises {
            digest: !self.opener.header.hash.is_empty(),
            whole: true,
            seek: SeekBy::Index,
        }
    }

    fn verified_len(&self, _: &Cursor) -> Option<u64> {
        self.verified.as_ref().map(|f| f.plaintext_len)
    }

    /// The final frame's count of data frames.
    fn verified_chunks(&self) -> Option<u64> {
        // A pieced file's count holds its markers too (FORMAT.md §14.3): its data chunks are
        // those released.
        match self.pieces {
            Some(_) => self.verified().map(|_| self.verifier.chunks),
            None => self.verified().map(|f| f.chunk_count),
        }
    }

    /// In the form of `b3sum`, `xxhsum -H3`.
    fn digest_hex(&self) -> Option<String> {
        let alg = self.opener.header.hash;
        self.verified()
            .filter(|_| !alg.is_empty())
            .map(|f| crate::hash::to_hex(alg, &f.digest))
    }

    /// When signers were required ([`DecryptOptions::signers`]).
    fn requires_signer(&self) -> bool {
        self.signed.required.is_required()
    }

    /// A chunk: the kept part is hashed again chunk by chunk (resume.rs).
    fn resume_unit(&self) -> u64 {
        self.opener.chunk_size() as u64
    }

    fn read_direct(&mut self, cursor: &mut Cursor, buf: &mut [u8]) -> Result<Option<usize>> {
        self.read_whole_chunks(cursor, buf)
    }

    fn copy_range_streaming(
        &mut self,
        cursor: &mut Cursor,
        range: crate::ByteRange,
        w: &mut dyn Write,
    ) -> Result<u64> {
        self.range_streaming(cursor, range, w)
    }

    fn advance(&mut self, cursor: &mut Cursor) -> Result<bool> {
        drive::advance(self, cursor)
    }
}

/// A container's framing: frame headers say where each frame ends; data, padding and signature
/// frames are opened on the workers, the final frame is read in order and ends the stream.
impl<R: Read> Framing for ContainerChunks<R> {
    type Done = Item;

    fn drive(&mut self) -> &mut Drive<Item> {
        &mut self.drive
    }

    fn more(&self) -> bool {
        self.frames.more()
    }

    fn read_job(&mut self) -> Result<()> {
        self.read_frame()
    }

    fn stop(&mut self) {
        self.frames.ended = true;
    }

    fn release(&mut self, item: Item, cursor: &mut Cursor) -> Result<bool> {
        match item {
            Item::Chunk(opened) => self.release_chunk(opened, cursor).map(|()| true),
            Item::Padding(spare) => {
                self.drive.recycle(spare);
                self.verifier.trailing(FrameKind::Padding)?;
                Ok(true)
            }
            Item::Signature(sig, spare) => {
                self.drive.recycle(spare);
                self.verifier.trailing(FrameKind::Signature)?;
                self.signed.found.push(sig);
                Ok(true)
            }
            Item::End(body) => self.end_of_stream(body).map(|()| false),
        }
    }

    fn end(&mut self, _: &mut Cursor) -> Result<bool> {
        self.end_of_indexed().map(|()| false)
    }
}

#[cfg(test)]
mod tests {
    use super::pick_spare;

    /// Frames take short buffers and chunks long ones, so the long ones stay as many as the
    /// chunks in flight.
    #[test]
    fn spares_go_to_what_they_fit() {
        let room = 100;
        let lens = |s: &[Vec<u8>]| s.iter().map(Vec::len).collect::<Vec<_>>();
        let mut spares = vec![vec![0; 104], vec![0; 30], vec![0; 50], vec![0; 104]];
        // A frame of 40 bytes: the shortest that fits.
        assert_eq!(pick_spare(&mut spares, 40, room).len(), 50);
        // A frame of 60 bytes: no short one fits; the longest short one, not a chunk's.
        assert_eq!(pick_spare(&mut spares, 60, room).len(), 30);
        assert_eq!(lens(&spares), [104, 104]);
        // A frame of 60 with only chunk-sized ones left takes one of them.
        spares.push(vec![0; 10]);
        assert_eq!(pick_spare(&mut spares, 60, room).len(), 10);
        assert_eq!(pick_spare(&mut spares, 60, room).len(), 104);
        // A chunk (or a raw frame, a chunk long) takes the longest.
        spares.extend([vec![0; 20], vec![]]);
        assert_eq!(pick_spare(&mut spares, usize::MAX, room).len(), 104);
        assert_eq!(pick_spare(&mut spares, usize::MAX, room).len(), 20);
        assert_eq!(pick_spare(&mut spares, 104, room).len(), 0);
        assert!(pick_spare(&mut spares, 1, room).capacity() == 0);
    }
}
