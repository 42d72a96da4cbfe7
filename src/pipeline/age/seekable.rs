//! Reading back the age files zseal writes with compression (FORMAT.md §10.3): an age plaintext
//! that begins with zseal's seekable marker is a zstd seekable-format stream, and the reader
//! gives its decompressed bytes. Read from the start it is decoded as one zstd stream (zstd skips
//! the marker and the seek table, both skippable frames); a seek, a range or a length loads the
//! seek table from the authenticated end of the file and then decodes frame by frame, opening
//! only the age chunks under the frames it needs. Frame by frame, the seek table is the framing
//! the engine's read driver ([`Drive`]) runs: each frame is read in order and decoded on a
//! worker.

use std::io::{self, Read, Seek, SeekFrom};

use super::super::chunks::{Chunk, ChunkReader, Cursor};
use super::super::drive::{self, Drive, Framing};
use super::super::source::{ChunkSource, Promises, SeekBy, SeekSource};
use super::super::threads::Threads;
use super::super::window::Window;
use super::AgeReader;
use crate::error::{Error, Result};
use crate::format::age::{
    parse_seek_footer, parse_seek_table, raw_zstd_frame_len, MAX_FRAME, MAX_FRAMES,
    SEEKABLE_MARKER, SEEK_FOOTER_LEN,
};
use crate::stats::StreamStats;

/// Largest zstd window a frame may ask for: the largest chunk (16 MiB), what zseal writes.
const WINDOW_LOG_MAX: u32 = 24;
/// Decompressed bytes handed out per streaming step.
const STEP: usize = 1 << 20;

/// The frames of the stream, from its seek table.
struct Frames {
    /// Age-plaintext offset of each frame's start, and one past the last frame.
    packed: Vec<u64>,
    /// Decompressed offset of each frame's start, and the total.
    plain: Vec<u64>,
}

impl Frames {
    fn len(&self) -> u64 {
        *self.plain.last().expect("at least the marker")
    }

    /// The frame holding decompressed byte `pos` (which is below the total).
    fn at(&self, pos: u64) -> usize {
        // The last frame starting at or before `pos`, skipping empty ones (the marker).
        self.plain.partition_point(|&p| p <= pos) - 1
    }
}

/// The decompressed bytes of an age file zseal wrote with zstd: the engine's reader over them.
pub type AgeZstd<R> = ChunkReader<ZstdChunks<R>>;

/// The decompressed chunks of an age file zseal wrote with zstd (steps of the stream decoder, or
/// whole frames), for the engine's reader.
pub struct ZstdChunks<R: Read> {
    /// Streaming mode: zstd's decoder over the age plaintext.
    decoder: zstd::stream::read::Decoder<'static, AgeReader<R>>,
    frames: Option<Frames>,
    /// The stream decoder reached the end (streaming mode): the whole file was decoded.
    at_end: bool,
    /// Frame mode: frames being decoded on the workers, in order; the driver's buffers are
    /// the decoded frames' (and the streamed steps').
    drive: Drive<Decoded>,
    /// The next frame to read and hand to a worker.
    next_read: usize,
    /// Frames from this one on are not read ahead (a range's end).
    read_stop: usize,
    /// Compressed frames' buffers, kept apart from the decoded ones so that neither is handed
    /// out for the other and grown again.
    spare_packed: Vec<Vec<u8>>,
}

impl<R: Read> ZstdChunks<R> {
    /// True when `head`, the first bytes of an age plaintext, is zseal's seekable marker.
    pub(crate) fn is_marked(head: &[u8]) -> bool {
        head.starts_with(&SEEKABLE_MARKER)
    }

    pub(crate) fn new(reader: AgeReader<R>, threads: &Threads) -> Result<Self> {
        let mut decoder = zstd::stream::read::Decoder::with_buffer(reader)?;
        decoder.window_log_max(WINDOW_LOG_MAX)?;
        Ok(ZstdChunks {
            decoder,
            frames: None,
            at_end: false,
            // Sized for the default chunk: one frame in flight per worker, and two more.
            drive: Drive::new(Window::new(threads, 1 << 20)),
            next_read: 0,
            read_stop: usize::MAX,
            spare_packed: Vec::new(),
        })
    }

    fn age(&self) -> &AgeReader<R> {
        self.decoder.get_ref()
    }

    /// Makes `buf[..len]`, the plaintext from offset `start`, current; keeps the buffer it
    /// replaces.
    fn load_chunk(&mut self, cursor: &mut Cursor, buf: Vec<u8>, len: usize, start: u64) {
        let bytes = 0..len;
        self.drive.load(cursor, Chunk { buf, bytes, start });
    }

    /// The next decompressed bytes become current; false at the end.
    fn refill(&mut self, cursor: &mut Cursor) -> Result<bool> {
        if self.frames.is_some() {
            return self.decode_frame(cursor);
        }
        let start = cursor.position;
        let mut buf = self.drive.spare();
        buf.resize(STEP, 0);
        let n = self.decoder.read(&mut buf).map_err(|e| {
            let e = Error::from(e);
            match e {
                // zstd's own errors are damage a key holder made: name them as such.
                Error::Io(io) if io.kind() == io::ErrorKind::Other => {
                    Error::Damaged(format!("the zstd stream inside the age file: {io}"))
                }
                e => e,
            }
        })?;
        self.load_chunk(cursor, buf, n, start);
        self.at_end = n == 0;
        Ok(n > 0)
    }

    /// Frame mode: the next frame (the one holding the position after a seek) becomes current,
    /// decoded on a worker; the frames after it are read and handed out while the window has room.
    fn decode_frame(&mut self, cursor: &mut Cursor) -> Result<bool> {
        let frames = self.frames.as_ref().expect("frame mode");
        if cursor.position >= frames.len() {
            return Ok(false);
        }
        // No frame left in the window: a range's last frame was the one before.
        drive::advance(self, cursor)
    }
}

/// The seek table's framing: frame `k` is its entry's compressed bytes, read in order from the
/// age reader (which opens their chunks on the workers), decoded on a worker.
impl<R: Read> Framing for ZstdChunks<R> {
    type Done = Decoded;

    fn drive(&mut self) -> &mut Drive<Decoded> {
        &mut self.drive
    }

    /// While the read-ahead limit allows.
    fn more(&self) -> bool {
        let frames = self.frames.as_ref().expect("frame mode");
        self.next_read < (frames.packed.len() - 1).min(self.read_stop)
    }

    fn read_job(&mut self) -> Result<()> {
        let frames = self.frames.as_ref().expect("frame mode");
        let k = self.next_read;
        let csize = (frames.packed[k + 1] - frames.packed[k]) as usize;
        let dsize = (frames.plain[k + 1] - frames.plain[k]) as usize;
        let mut packed = self.spare_packed.pop().unwrap_or_default();
        packed.resize(csize, 0);
        self.next_read += 1;
        self.decoder.get_mut().read_exact(&mut packed)?;
        let out = self.drive.spare();
        self.drive.push(move || decode(k, packed, dsize, out));
        Ok(())
    }

    /// Until the next seek places the reader again.
    fn stop(&mut self) {
        self.next_read = usize::MAX;
    }

    fn release(&mut self, d: Decoded, cursor: &mut Cursor) -> Result<bool> {
        let frames = self.frames.as_ref().expect("frame mode");
        let (p0, p1) = (frames.plain[d.k], frames.plain[d.k + 1]);
        self.spare_packed.push(d.packed);
        self.load_chunk(cursor, d.plain, (p1 - p0) as usize, p0);
        Ok(true)
    }
}

/// A decoded frame, back from a worker, with the buffer of its compressed bytes.
pub(crate) struct Decoded {
    k: usize,
    plain: Vec<u8>,
    packed: Vec<u8>,
}

/// Decodes frame `k` (`packed`, all of it) of `dsize` bytes into `out`: exactly one zstd frame,
/// whose declared content size (when it has one) is its entry's, checked before any memory is
/// set aside for it.
fn decode(k: usize, packed: Vec<u8>, dsize: usize, mut out: Vec<u8>) -> Result<Decoded> {
    let bad = |what: String| Error::Damaged(format!("zstd frame {k} inside the age file {what}"));
    let csize = packed.len();
    if zstd::zstd_safe::find_frame_compressed_size(&packed) != Ok(csize) {
        return Err(bad(format!("is not one frame of {csize} bytes")));
    }
    match zstd::zstd_safe::get_frame_content_size(&packed) {
        Ok(Some(n)) if n != dsize as u64 => {
            return Err(bad(format!(
                "declares {n} bytes, its seek table entry {dsize}"
            )))
        }
        Ok(_) => {}
        Err(_) => return Err(bad("has an unreadable header".into())),
    }
    out.resize(dsize, 0);
    // The codec's decoder: one context per worker thread, not one per frame.
    let got = crate::codec::zstd_decompress(&packed, &mut out[..dsize]).map_err(bad)?;
    if got != dsize {
        return Err(bad(format!(
            "holds {got} bytes, its seek table entry says {dsize}"
        )));
    }
    Ok(Decoded {
        k,
        plain: out,
        packed,
    })
}

impl<R: Read> ChunkSource for ZstdChunks<R> {
    fn advance(&mut self, cursor: &mut Cursor) -> Result<bool> {
        self.refill(cursor)
    }

    /// The age file's STREAM chunks, once it was read whole and authenticated.
    fn verified_chunks(&self) -> Option<u64> {
        self.age().source.verified_chunks()
    }

    fn write_time(&mut self) -> &mut std::time::Duration {
        self.drive.write_time()
    }

    /// STREAM chunks opened, threads, and time per stage (the age reader's, and the time the
    /// decompressed bytes took to write out).
    fn stats(&self) -> StreamStats {
        let mut stats = self.age().stats();
        stats.stages.write += self.drive.stages.write;
        stats
    }

    /// Of the (decoded) age header.
    fn header_len(&self) -> u64 {
        self.age().header_len()
    }

    /// The age file's, found by the seek table.
    fn promises(&self) -> Promises {
        Promises {
            seek: SeekBy::Table,
            ..self.age().promises()
        }
    }

    /// Once the whole file was decoded from its first byte to its verified end.
    fn verified_len(&self, cursor: &Cursor) -> Option<u64> {
        let done = self.at_end && cursor.available().is_empty();
        let pos = cursor.position;
        self.age().verified_len().filter(|_| done).map(|_| pos)
    }
}

impl<R: Read + Seek> ZstdChunks<R> {
    /// Loads the seek table (once) from the end of the authenticated age plaintext, and checks
    /// that its frames tile the plaintext from the marker to the table.
    fn load(&mut self, cursor: &mut Cursor) -> Result<&Frames> {
        cursor.check()?;
        if self.frames.is_none() {
            // A failure here leaves the age reader elsewhere than the stream decoder expects:
            // the stream fails for good.
            let loaded = read_frames(self.decoder.get_mut()).and_then(|frames| {
                self.frames = Some(frames);
                // From here on, frame by frame: from the frame holding the position.
                self.place(cursor, cursor.position)
            });
            if let Err(e) = loaded {
                return Err(cursor.fail(e));
            }
        }
        Ok(self.frames.as_ref().expect("just loaded"))
    }

    /// Frame mode: the next read decodes the frame holding `pos` (nothing at or past the end).
    fn place(&mut self, cursor: &mut Cursor, pos: u64) -> Result<()> {
        let frames = self.frames.as_ref().expect("frame mode");
        let k = match pos < frames.len() {
            true => frames.at(pos),
            false => frames.packed.len() - 1,
        };
        let at = frames.packed[k];
        self.decoder.get_mut().seek(SeekFrom::Start(at))?;
        self.drive.restart();
        self.next_read = k;
        cursor.reset(pos);
        Ok(())
    }
}

impl<R: Read + Seek> SeekSource for ZstdChunks<R> {
    /// From the seek table.
    fn plaintext_len(&mut self, cursor: &mut Cursor) -> Result<u64> {
        Ok(self.load(cursor)?.len())
    }

    /// The seek table, so that the frames are then decoded on every core rather than by one
    /// stream decoder.
    fn use_index(&mut self, cursor: &mut Cursor) -> Result<()> {
        self.load(cursor).map(|_| ())
    }

    /// From now on frames are decoded one by one.
    fn reposition(&mut self, cursor: &mut Cursor, pos: u64) -> Result<()> {
        self.load(cursor)?;
        // Inside the frame decoded last: nothing to read.
        if cursor.holds(pos) {
            cursor.position = pos;
            return Ok(());
        }
        self.place(cursor, pos)
    }

    /// Reads no age chunk past the frame holding decompressed byte `end - 1`.
    fn limit_read_ahead(&mut self, cursor: &mut Cursor, end: Option<u64>) -> Result<()> {
        let frames = self.load(cursor)?;
        let (limit, stop) = match end {
            Some(e) if e < frames.len() => {
                let k = frames.at(e.saturating_sub(1));
                (Some(frames.packed[k + 1]), k + 1)
            }
            _ => (None, usize::MAX),
        };
        self.read_stop = stop;
        self.decoder.get_mut().limit_read_ahead(limit)
    }

    /// The limit a range set is lifted.
    fn end_range(&mut self, cursor: &mut Cursor, _: bool) -> Result<bool> {
        self.limit_read_ahead(cursor, None)?;
        Ok(false)
    }
}

/// The frames of the seek table at the end of the age plaintext read from `age`.
fn read_frames<R: Read + Seek>(age: &mut AgeReader<R>) -> Result<Frames> {
    let bad = |what: String| Error::Damaged(format!("the zstd seek table {what}"));
    let total = age.plaintext_len()?;
    if total < (SEEKABLE_MARKER.len() + SEEK_FOOTER_LEN) as u64 {
        return Err(bad("is missing".into()));
    }
    let mut foot = [0u8; SEEK_FOOTER_LEN];
    age.seek(SeekFrom::Start(total - SEEK_FOOTER_LEN as u64))?;
    age.read_exact(&mut foot)?;
    let (n, table_len, checksums) = parse_seek_footer(&foot)
        .ok_or_else(|| bad("footer is not a seekable-format footer".into()))?;
    if n > MAX_FRAMES {
        return Err(Error::Limit(format!(
            "a zstd seek table of {n} frames (at most {MAX_FRAMES})"
        )));
    }
    let table_at = total
        .checked_sub(table_len)
        .ok_or_else(|| bad(format!("of {table_len} bytes is longer than the plaintext")))?;
    let mut table = vec![0u8; table_len as usize];
    age.seek(SeekFrom::Start(table_at))?;
    age.read_exact(&mut table)?;
    let entries = parse_seek_table(&table, n, checksums)?;
    if entries.first() != Some(&(SEEKABLE_MARKER.len() as u32, 0)) {
        return Err(bad("does not start with zseal's marker".into()));
    }
    // Frames as zseal writes them: each holds 1 byte to a chunk (16 MiB at most), stored in at
    // most its raw-block size. What a reader sets aside for a frame is bounded by this.
    let most = raw_zstd_frame_len(MAX_FRAME) as u32;
    if let Some(i) = entries[1..]
        .iter()
        .position(|&(c, d)| c == 0 || d == 0 || d as usize > MAX_FRAME || c > most)
    {
        let (c, d) = entries[i + 1];
        return Err(bad(format!(
            "lists frame {} of {c} bytes holding {d}, not a frame zseal writes",
            i + 1
        )));
    }
    let mut packed = Vec::with_capacity(entries.len() + 1);
    let mut plain = Vec::with_capacity(entries.len() + 1);
    let (mut c, mut d) = (0u64, 0u64);
    for &(cs, ds) in &entries {
        packed.push(c);
        plain.push(d);
        c += u64::from(cs);
        d += u64::from(ds);
    }
    packed.push(c);
    plain.push(d);
    if c != table_at {
        return Err(bad(format!(
            "places its frames over {c} bytes, but they take {table_at}"
        )));
    }
    Ok(Frames { packed, plain })
}
