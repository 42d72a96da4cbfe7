//! The engine's reader of fixed-size segments, for every format whose payload is a run of sealed
//! segments of one size, each opened alone by its number (age STREAM, FORMAT.md §10.2): a format
//! is a [`SegmentFormat`] (its sizes, a pure "open segment `i`" step, what it promises), and
//! [`Segments`] is the rest, once: the calling thread reads runs of [`GROUP`] segments (or, from
//! a regular file whose shape is known, the workers read them by offset), a worker opens each
//! run and packs the plaintexts, the runs come back in order through the engine's
//! [`Drive`], and only authenticated bytes are released. A seek or a range first opens the last
//! segment, which fixes the plaintext length, then reads only the segments it covers: where a
//! segment starts is arithmetic.

use std::io::{self, BufRead, Read, Seek, SeekFrom};
use std::sync::Arc;

use super::chunks::{Chunk, ChunkReader, Cursor};
use super::drive::{self, Drive, Framing};
use super::offset::ReadAt;
use super::source::{ChunkSource, Promises, SeekBy, SeekSource};
use super::threads::Threads;
use super::window::Window;
use crate::error::{Error, Result};
use crate::io::read_full;
use crate::stats::{timed, ChunkTimes, StreamStats};

/// Segments per job: with 64 KiB segments, 1 MiB of plaintext, so that a job is worth sending to
/// a worker.
pub(crate) const GROUP: usize = 16;

/// A format whose payload is fixed-size sealed segments (see the module documentation). What
/// the engine asks of it is here; everything else (input, window, order, buffers, seeks) is
/// [`Segments`]'.
pub trait SegmentFormat: Send + Sync + 'static {
    /// The format's name and its word for a segment, for messages ("age", "chunk").
    const NAME: &'static str;
    /// See [`Self::NAME`].
    const SEGMENT: &'static str;
    /// Plaintext bytes of every segment but the last.
    const PLAIN: usize;
    /// Bytes a sealed segment adds to its plaintext (nonce, tag).
    const OVERHEAD: usize;
    /// What the format promises: the last segment carries a mark of its own (age's last-chunk
    /// flag), so a file cut at a segment boundary, or with segments after its last, is refused.
    /// Without it the last segment is the one the input ends with, and such a cut goes unseen.
    const MARKS_LAST: bool;

    /// Opens segment `i`, `sealed` (at most `PLAIN + OVERHEAD` bytes), into `out` (as long as
    /// `sealed`, or longer): its plaintext length, and whether it is marked as the last (always
    /// false without [`Self::MARKS_LAST`]). Pure (a function of the key, `i` and the bytes): run
    /// on the workers.
    fn open(&self, i: u64, sealed: &[u8], out: &mut [u8]) -> Result<(usize, bool)>;

    /// The segment count and plaintext length a payload of `len` bytes holds, from its length
    /// alone (not authenticated).
    fn shape(len: u64) -> Result<(u64, u64)>;
}

/// A sealed segment's length.
const fn sealed<S: SegmentFormat>() -> usize {
    S::PLAIN + S::OVERHEAD
}

/// A run of segments back from a worker: the plaintexts packed from `plain[0]`, and what ended it.
pub(crate) struct Run {
    first: u64,
    plain: Vec<u8>,
    len: usize,
    segments: u64,
    /// The run ends with the last segment, authenticated.
    last: bool,
    /// The segment that failed, after the ones released before it.
    error: Option<Error>,
    /// The ciphertext buffer, for reuse.
    spare: Vec<u8>,
    /// Time the worker spent opening the segments (`--stats`).
    times: ChunkTimes,
}

/// The authenticated segments of a file read from `I`, for the engine's reader.
pub struct Segments<I, S: SegmentFormat> {
    input: I,
    format: Arc<S>,
    drive: Drive<Run>,
    /// Offset of segment 0 in the (decoded) input.
    payload_at: u64,
    header_len: u64,
    at: Position,
    /// (segments, plaintext length), once the last segment was authenticated by a seek.
    shape: Option<(u64, u64)>,
    end: Verified,
    /// Segments released.
    released: u64,
    /// The file's segment count, once a read authenticated its last segment.
    last_seen: Option<u64>,
    /// A regular file the workers read whole jobs from, by offset, once the shape is known
    /// ([`Segments::read_jobs_from`]): the calling thread then reads nothing.
    by_offset: Option<Arc<ReadAt>>,
    /// Where the input ends, once the shape was read.
    input_end: u64,
}

/// Where reading stands.
#[derive(Default)]
struct Position {
    /// The next segment to read.
    next: u64,
    /// Segments from this one on are not read (a range's end, or the last segment's successor).
    stop_at: Option<u64>,
    /// The last segment, or a failure, was read: nothing follows.
    ended: bool,
    /// One byte read ahead to learn whether the segment before it was the last.
    ahead: Option<u8>,
}

/// Whether the whole file was read, and checked, from its first byte.
struct Verified {
    /// Every segment from the first went through in order.
    from_start: bool,
    /// The plaintext length, once the whole file was read from its first byte and checked.
    len: Option<u64>,
}

/// Opens the segments `first..` held in `ct[..n]` into `plain`, packed from its start; `ends`:
/// the input ends after them. A pure function of the key and the bytes.
///
/// As age's reference reader does (and CCTV's payload hashes expect), each segment is released
/// as soon as it authenticates. What the order of segments breaks comes after the segments
/// before it: bytes after the last segment, or an input that ends without one.
fn open_run<S: SegmentFormat>(
    format: &S,
    first: u64,
    ct: Vec<u8>,
    n: usize,
    ends: bool,
    mut plain: Vec<u8>,
) -> Run {
    let count = n.div_ceil(sealed::<S>()) as u64;
    plain.resize(ct.len().max(plain.len()), 0);
    let (mut len, mut opened, mut last) = (0, 0, false);
    let mut error = None;
    let mut times = ChunkTimes::default();
    for k in 0..count {
        let i = first + k;
        let at = k as usize * sealed::<S>();
        let end = (at + sealed::<S>()).min(n);
        let final_piece = ends && k + 1 == count;
        let opened_one = timed(&mut times.cipher, || {
            format.open(i, &ct[at..end], &mut plain[len..])
        });
        match opened_one {
            Ok((m, marked)) => {
                len += m;
                opened += 1;
                last = marked || (!S::MARKS_LAST && final_piece);
                error = out_of_order::<S>(i, last, final_piece);
            }
            Err(e) => error = Some(e),
        }
        if error.is_some() {
            break;
        }
    }
    Run {
        first,
        plain,
        len,
        segments: opened,
        last: last && error.is_none(),
        error,
        spare: ct,
        times,
    }
}

/// What segment `i`'s place breaks: the last one before the input ends, or the input ending
/// after one that is not the last.
fn out_of_order<S: SegmentFormat>(i: u64, last: bool, final_piece: bool) -> Option<Error> {
    match (last, final_piece) {
        (true, false) => Some(Error::TrailingData),
        (false, true) => Some(not_last::<S>(i)),
        _ => None,
    }
}

fn not_last<S: SegmentFormat>(i: u64) -> Error {
    let (name, seg) = (S::NAME, S::SEGMENT);
    Error::Truncated(format!(
        "the {name} file ends after {seg} {i}, which is not its last {seg}"
    ))
}

impl<I: Read, S: SegmentFormat> Segments<I, S> {
    /// The segments of `input`, whose segment 0 is at `payload_at` (after a header of
    /// `header_len` bytes), opened by `format` on `threads`. Nothing is read yet.
    pub(crate) fn new(input: I, format: S, at: (u64, u64), threads: &Threads) -> Self {
        let (header_len, payload_at) = at;
        Segments {
            input,
            format: Arc::new(format),
            drive: Drive::new(Window::new(threads, GROUP * S::PLAIN)),
            payload_at,
            header_len,
            at: Position::default(),
            shape: None,
            end: Verified {
                from_start: true,
                len: None,
            },
            released: 0,
            last_seen: None,
            by_offset: None,
            input_end: 0,
        }
    }

    /// Where segment `i` starts in the (decoded) input.
    fn offset(&self, i: u64) -> u64 {
        self.payload_at + i * sealed::<S>() as u64
    }

    /// True when the input ends at the current position: reads one byte ahead, kept for the
    /// next run, when it does not.
    fn input_ends(&mut self) -> Result<bool> {
        let mut b = [0u8; 1];
        match read_full(&mut self.input, &mut b)? {
            0 => Ok(true),
            _ => {
                self.at.ahead = Some(b[0]);
                Ok(false)
            }
        }
    }

    /// Hands a worker the next run of segments to read from `file` by offset and open, the
    /// file's `segments` known: the calling thread's copy from the page cache, serial otherwise,
    /// is spread over the workers (as the container's frame bodies are).
    fn job_by_offset(&mut self, file: Arc<ReadAt>, segments: u64) {
        let first = self.at.next;
        let stop = self.at.stop_at.unwrap_or(segments).min(segments);
        let count = (GROUP as u64).min(stop - first);
        let at = self.offset(first);
        let n = (count as usize * sealed::<S>()).min(self.input_end.saturating_sub(at) as usize);
        let ends = first + count == segments;
        self.at.next += count;
        self.drive.opened += count;
        self.at.ended |= ends;
        let mut buf = self.drive.spare();
        buf.resize(GROUP * sealed::<S>(), 0);
        let format = Arc::clone(&self.format);
        let plain = self.drive.spare();
        self.drive.push(move || {
            file.read(&mut buf[..n], at, || {
                format!(
                    "the {} file shrank while {} {first} was read",
                    S::NAME,
                    S::SEGMENT
                )
            })?;
            Ok(open_run(&*format, first, buf, n, ends, plain))
        });
    }
}

impl<I: Read, S: SegmentFormat> Framing for Segments<I, S> {
    type Done = Run;

    fn drive(&mut self) -> &mut Drive<Run> {
        &mut self.drive
    }

    fn more(&self) -> bool {
        !self.at.ended && self.at.stop_at.is_none_or(|s| self.at.next < s)
    }

    fn stop(&mut self) {
        self.at.ended = true;
    }

    /// Reads the next run of segments and hands it to a worker.
    fn read_job(&mut self) -> Result<()> {
        if let (Some(file), Some((n, _)), None) = (&self.by_offset, self.shape, self.at.ahead) {
            if self.at.next < self.at.stop_at.unwrap_or(n).min(n) {
                let file = Arc::clone(file);
                self.job_by_offset(file, n);
                return Ok(());
            }
        }
        let first = self.at.next;
        let mut want = GROUP;
        if let Some(s) = self.at.stop_at {
            want = want.min((s - first) as usize);
        }
        let want = want * sealed::<S>();
        let mut buf = self.drive.spare();
        buf.resize(GROUP * sealed::<S>(), 0);
        let mut n = 0;
        if let Some(b) = self.at.ahead.take() {
            buf[0] = b;
            n = 1;
        }
        let input = &mut self.input;
        n += timed(&mut self.drive.stages.read, || {
            read_full(input, &mut buf[n..want])
        })?;
        let count = n.div_ceil(sealed::<S>()) as u64;
        let ends = match self.shape {
            // After a seek the last segment is known.
            Some((segments, _)) => first + count == segments,
            None if n < want => true,
            None => self.input_ends()?,
        };
        if n == 0 && S::MARKS_LAST {
            let (name, seg) = (S::NAME, S::SEGMENT);
            return Err(Error::Truncated(format!("the {name} payload has no {seg}")));
        }
        self.at.next += count;
        self.drive.opened += count;
        self.at.ended |= ends;
        if n == 0 {
            // An empty payload of a format that marks no last segment: an empty plaintext.
            self.end.len = self.end.from_start.then_some(0);
            self.last_seen = Some(0);
            return Ok(());
        }
        let format = Arc::clone(&self.format);
        let plain = self.drive.spare();
        self.drive
            .push(move || Ok(open_run(&*format, first, buf, n, ends, plain)));
        Ok(())
    }

    fn release(&mut self, r: Run, cursor: &mut Cursor) -> Result<bool> {
        self.released += r.segments;
        if r.last {
            self.last_seen = Some(r.first + r.segments);
        }
        self.drive.stages.add_chunk(&r.times);
        self.drive.recycle(r.spare);
        self.drive.fail_after(r.error);
        if r.last && self.end.from_start {
            self.end.len = Some(r.first * S::PLAIN as u64 + r.len as u64);
        }
        let chunk = Chunk {
            buf: r.plain,
            bytes: 0..r.len,
            start: r.first * S::PLAIN as u64,
        };
        self.drive.load(cursor, chunk);
        Ok(true)
    }
}

impl<I: Read + Seek, S: SegmentFormat> Segments<I, S> {
    /// `file` is a second handle to the regular file this reader's input is, byte for byte (no
    /// decoding between them): once the last segment fixed the shape, the workers read their
    /// jobs from it by offset, adding what they read to `count`. Ignored unless `file` is a
    /// regular file on a unix system.
    pub(crate) fn read_jobs_from(
        &mut self,
        file: std::fs::File,
        count: Option<Arc<std::sync::atomic::AtomicU64>>,
    ) -> Result<()> {
        self.by_offset = ReadAt::for_file(file, count)?;
        Ok(())
    }

    /// Authenticates the last segment (once): the segment count and plaintext length it fixes.
    /// The position in the input is left where it was.
    fn load_shape(&mut self) -> Result<(u64, u64)> {
        if let Some(s) = self.shape {
            return Ok(s);
        }
        let here = self.input.stream_position()?;
        let shape = self.read_shape();
        self.input.seek(SeekFrom::Start(here))?;
        let shape = shape?;
        self.shape = Some(shape);
        Ok(shape)
    }

    fn read_shape(&mut self) -> Result<(u64, u64)> {
        let end = self.input.seek(SeekFrom::End(0))?;
        self.input_end = end;
        let p = end.checked_sub(self.payload_at).ok_or_else(|| {
            Error::Truncated(format!("the {} file ends before its payload", S::NAME))
        })?;
        let (n, len) = S::shape(p)?;
        if n == 0 {
            return Ok((0, 0));
        }
        let at = self.offset(n - 1);
        let mut last = vec![0u8; (self.payload_at + p - at) as usize];
        self.input.seek(SeekFrom::Start(at))?;
        if read_full(&mut self.input, &mut last)? != last.len() {
            let (name, seg) = (S::NAME, S::SEGMENT);
            return Err(Error::Truncated(format!("in the last {name} {seg}")));
        }
        let mut out = vec![0u8; last.len()];
        let (_, marked) = self.format.open(n - 1, &last, &mut out)?;
        if S::MARKS_LAST && !marked {
            return Err(not_last::<S>(n - 1));
        }
        Ok((n, len))
    }
}

impl<I: Read + Seek, S: SegmentFormat> SeekSource for Segments<I, S> {
    /// From the authenticated last segment.
    fn plaintext_len(&mut self, _: &mut Cursor) -> Result<u64> {
        Ok(self.load_shape()?.1)
    }

    /// Reads no segment past the one holding plaintext byte `end - 1`.
    fn limit_read_ahead(&mut self, _: &mut Cursor, end: Option<u64>) -> Result<()> {
        let (n, _) = self.load_shape()?;
        self.at.stop_at = Some(end.map_or(n, |e| e.div_ceil(S::PLAIN as u64).min(n)));
        Ok(())
    }

    fn reposition(&mut self, cursor: &mut Cursor, pos: u64) -> Result<()> {
        let (n, _) = self.load_shape()?;
        let segment = (pos / S::PLAIN as u64).min(n);
        self.drive.restart();
        self.input.seek(SeekFrom::Start(self.offset(segment)))?;
        self.at = Position {
            next: segment,
            stop_at: Some(n),
            ended: segment >= n,
            ahead: None,
        };
        self.end.from_start = false;
        self.end.len = None;
        cursor.reset(pos);
        Ok(())
    }
}

impl<I: Read, S: SegmentFormat> ChunkSource for Segments<I, S> {
    fn advance(&mut self, cursor: &mut Cursor) -> Result<bool> {
        drive::advance(self, cursor)
    }

    /// Once the last segment was authenticated (by a seek, or by reading up to it): its index
    /// plus one.
    fn verified_chunks(&self) -> Option<u64> {
        self.shape.map(|(n, _)| n).or(self.last_seen)
    }

    fn write_time(&mut self) -> &mut std::time::Duration {
        self.drive.write_time()
    }

    /// Segments released, threads and time per stage so far.
    fn stats(&self) -> StreamStats {
        StreamStats {
            chunks: self.released,
            frames_opened: self.drive.opened,
            threads: self.drive.window.threads(),
            stages: self.drive.stages,
        }
    }

    /// Of the (decoded) header.
    fn header_len(&self) -> u64 {
        self.header_len
    }

    /// No digest; a cut at a segment boundary is refused when the format marks its last one.
    fn promises(&self) -> Promises {
        Promises {
            digest: false,
            whole: S::MARKS_LAST,
            seek: SeekBy::Arithmetic,
        }
    }

    fn verified_len(&self, _: &Cursor) -> Option<u64> {
        self.end.len
    }
}

impl<I: Read, S: SegmentFormat> ChunkReader<Segments<I, S>> {
    /// The first plaintext bytes, from segment 0 alone (nothing more is read ahead), for a
    /// caller that must see them before it decides how to read on (an object is fetched as it
    /// is read).
    pub(crate) fn peek_head(&mut self) -> io::Result<&[u8]> {
        let saved = self.source.at.stop_at.replace(1);
        let r = self.fill_buf().map(|_| ());
        self.source.at.stop_at = saved;
        r?;
        Ok(self.cursor.available())
    }
}

#[cfg(test)]
mod tests {
    //! A toy format with unmarked segments (as crypt4gh's are): what the segment reader gives
    //! such a format with nothing but its [`SegmentFormat`] impl.

    use super::*;
    use std::io::Cursor as Bytes;

    /// 8-byte segments, each followed by a 4-byte tag over its number and bytes.
    struct Toy;

    fn tag(i: u64, plain: &[u8]) -> [u8; 4] {
        let sum = plain
            .iter()
            .fold(i as u32 ^ 0x9e37, |h, &b| h.rotate_left(5) ^ u32::from(b));
        sum.to_le_bytes()
    }

    impl SegmentFormat for Toy {
        const NAME: &'static str = "toy";
        const SEGMENT: &'static str = "segment";
        const PLAIN: usize = 8;
        const OVERHEAD: usize = 4;
        const MARKS_LAST: bool = false;

        fn open(&self, i: u64, sealed: &[u8], out: &mut [u8]) -> Result<(usize, bool)> {
            let m = sealed.len().checked_sub(4).ok_or(Error::ChunkAuth(i))?;
            if sealed[m..] != tag(i, &sealed[..m]) {
                return Err(Error::ChunkAuth(i));
            }
            out[..m].copy_from_slice(&sealed[..m]);
            Ok((m, false))
        }

        fn shape(len: u64) -> Result<(u64, u64)> {
            let n = len.div_ceil(12);
            match len - n.saturating_sub(1) * 12 {
                1..=4 => Err(Error::Truncated("in the last toy segment".into())),
                _ => Ok((n, len - n * 4)),
            }
        }
    }

    fn seal(plain: &[u8]) -> Vec<u8> {
        let mut out = b"HEAD".to_vec();
        for (i, s) in plain.chunks(8).enumerate() {
            out.extend_from_slice(s);
            out.extend_from_slice(&tag(i as u64, s));
        }
        out
    }

    fn reader(sealed: &[u8], threads: usize) -> ChunkReader<Segments<Bytes<Vec<u8>>, Toy>> {
        let mut input = Bytes::new(sealed.to_vec());
        input.set_position(4);
        let threads = Threads::Count(threads);
        ChunkReader::from_source(Segments::new(input, Toy, (4, 4), &threads))
    }

    fn plain(len: usize) -> Vec<u8> {
        (0..len).map(|i| (i % 251) as u8).collect()
    }

    #[test]
    fn unmarked_segments_read_whole_by_seek_and_by_range_at_every_edge() {
        let run = 8 * GROUP;
        for len in [0, 1, 7, 8, 9, run - 1, run, run + 1, 3 * run + 5] {
            let p = plain(len);
            for threads in [1, 2] {
                let mut r = reader(&seal(&p), threads);
                let mut got = Vec::new();
                r.read_to_end(&mut got).unwrap();
                assert_eq!(got, p, "len={len} threads={threads}");
                assert_eq!(r.verified_len(), Some(len as u64), "len={len}");
                let mut r = reader(&seal(&p), threads);
                assert_eq!(r.plaintext_len().unwrap(), len as u64);
                for at in [0, len / 3, len.saturating_sub(9), len] {
                    r.seek(SeekFrom::Start(at as u64)).unwrap();
                    let mut got = Vec::new();
                    r.read_to_end(&mut got).unwrap();
                    assert_eq!(got, p[at..], "len={len} at={at}");
                }
                let (a, b) = (len / 4, len - len / 5);
                let mut got = Vec::new();
                r.copy_range_to(a as u64, Some(b as u64), &mut got).unwrap();
                assert_eq!(got, p[a..b], "len={len} range");
            }
        }
    }

    #[test]
    fn a_flipped_byte_or_a_cut_inside_a_segment_is_refused_after_the_bytes_before_it() {
        let p = plain(8 * GROUP * 2 + 3);
        let mut flipped = seal(&p);
        flipped[4 + 12 * 20 + 3] ^= 1;
        let mut r = reader(&flipped, 2);
        let mut got = Vec::new();
        let e = r.read_to_end(&mut got).unwrap_err();
        assert!(e.to_string().contains("20"), "{e}");
        assert_eq!(
            got,
            p[..8 * 20],
            "the segments before it, and no byte of it"
        );
        let sealed = seal(&p);
        let cut = &sealed[..sealed.len() - 2];
        assert!(reader(cut, 2).read_to_end(&mut Vec::new()).is_err());
        assert!(
            reader(cut, 1).plaintext_len().is_err(),
            "by its last segment"
        );
    }

    #[test]
    fn without_a_last_mark_a_cut_at_a_segment_boundary_goes_unseen() {
        // What MARKS_LAST = false means, and why such a format must say so (crypt4gh v1).
        let p = plain(8 * 40);
        let sealed = seal(&p);
        let mut got = Vec::new();
        let mut r = reader(&sealed[..4 + 12 * 30], 2);
        let promised = r.promises();
        let got_promised = (promised.digest, promised.whole, promised.seek);
        assert_eq!(got_promised, (false, false, SeekBy::Arithmetic));
        r.read_to_end(&mut got).unwrap();
        assert_eq!(got, p[..8 * 30]);
    }
}
