//! Random access (FORMAT.md §6): the authenticated index of a seekable container, `Seek` for the
//! decrypting reader, and byte ranges from seekable and non-seekable inputs.
//!
//! A seekable reader reads the footer, the final frame and the index once, authenticates them,
//! and from then on reads only the frames that cover what is asked. Every chunk it returns is
//! authenticated as the chunk at its position (the nonce binds the position); the whole-plaintext
//! digest is checked only when every chunk from the first was read.

use std::io::{self, Read, Seek, SeekFrom, Write};

use super::Decryptor;
use crate::error::{Error, Result};
use crate::format::frame::{body_len_bounds, parse_footer, parse_frame_header};
use crate::format::{
    FinalFrame, FrameKind, FINAL_BODY_LEN, FINAL_FRAME_LEN, FOOTER_LEN, FRAME_HEADER_LEN,
    MAX_PLAINTEXT,
};

/// A byte range of the plaintext: `start..end`, or `start..` to the end.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub struct ByteRange {
    /// First byte.
    pub start: u64,
    /// One past the last byte; `None`: to the end of the plaintext.
    pub end: Option<u64>,
}

impl ByteRange {
    /// A range; one that ends before it starts is an error.
    pub fn new(start: u64, end: Option<u64>) -> Result<Self> {
        match end {
            Some(e) if e < start => Err(Error::InvalidOption(format!(
                "the range ends before it starts ({e} < {start})"
            ))),
            _ => Ok(ByteRange { start, end }),
        }
    }

    /// The range's length, when it has an end.
    pub fn len(&self) -> Option<u64> {
        self.end.map(|e| e - self.start)
    }

    /// True for a range with an end equal to its start.
    pub fn is_empty(&self) -> bool {
        self.len() == Some(0)
    }

    /// Checks the range against a plaintext of `len` bytes; returns its end.
    fn end_within(&self, len: u64) -> Result<u64> {
        let past = |what, at| Error::RangePastEnd { what, at, len };
        if self.start > len {
            return Err(past("starts", self.start));
        }
        match self.end {
            Some(e) if e > len => Err(past("ends", e)),
            Some(e) => Ok(e),
            None => Ok(len),
        }
    }
}

/// The authenticated index: where every frame starts, and the final frame.
pub(crate) struct SeekIndex {
    /// Container offset of data frame `i`; one more entry for the final frame.
    offsets: Vec<u64>,
    fin: FinalFrame,
}

impl SeekIndex {
    pub(crate) fn final_frame(&self) -> &FinalFrame {
        &self.fin
    }

    /// The plaintext length of chunk `i`: full, except the last.
    pub(crate) fn chunk_len(&self, i: u64, chunk_size: usize) -> u64 {
        (self.fin.plaintext_len - i * chunk_size as u64).min(chunk_size as u64)
    }
}

impl<R: Read + Seek> Decryptor<R> {
    /// Reads and authenticates the footer, the final frame and the index (once). The reader's
    /// position in the container is left where it was.
    fn load_index(&mut self) -> Result<&SeekIndex> {
        if self.index.is_none() {
            let here = self.frames.inner.stream_position()?;
            let ix = self.read_index();
            self.frames.inner.seek(SeekFrom::Start(here))?;
            self.index = Some(ix?);
        }
        Ok(self.index.as_ref().expect("just loaded"))
    }

    fn read_index(&mut self) -> Result<SeekIndex> {
        let c = self.opener.chunk_size();
        let file_len = self.frames.inner.seek(SeekFrom::End(0))?;
        let fixed = self.frames.first_at + (FINAL_FRAME_LEN + FOOTER_LEN) as u64;
        if file_len < fixed {
            return Err(Error::Truncated("before the final frame".into()));
        }
        let mut footer = [0u8; FOOTER_LEN];
        let footer_at = file_len - FOOTER_LEN as u64;
        self.frames.read_at(footer_at, &mut footer, "footer")?;
        let n = parse_footer(&footer)?;
        if n * 4 > file_len - fixed {
            return Err(Error::Damaged(format!(
                "the footer claims {n} chunks, more than the file holds"
            )));
        }
        let fin_at = footer_at - 4 * n - FINAL_FRAME_LEN as u64;
        let mut frame = [0u8; FINAL_FRAME_LEN];
        self.frames.read_at(fin_at, &mut frame, "final frame")?;
        let (head, body) = frame.split_at_mut(FRAME_HEADER_LEN);
        let head: &[u8; FRAME_HEADER_LEN] = (&*head).try_into().expect("split at its length");
        if parse_frame_header(head) != (Some(FrameKind::Final), FINAL_BODY_LEN as u32) {
            return Err(Error::Damaged(
                "no final frame where the footer places it".into(),
            ));
        }
        let fin = self.opener.open_final(n, body)?;
        if fin.chunk_count != n
            || fin.plaintext_len.div_ceil(c as u64) != n
            || fin.plaintext_len > MAX_PLAINTEXT
        {
            return Err(Error::Damaged(format!(
                "the final frame records {} bytes in {} chunks; the footer says {n} chunks",
                fin.plaintext_len, fin.chunk_count
            )));
        }
        // The index itself, streamed through BLAKE3 while the offsets are summed.
        let data = body_len_bounds(FrameKind::Raw, c);
        let mut offsets = Vec::with_capacity(n as usize + 1);
        let mut at = self.frames.first_at;
        let inner = &mut self.frames.inner;
        inner.seek(SeekFrom::Start(fin_at + FINAL_FRAME_LEN as u64))?;
        super::frames::read_index(inner, n, &fin.index_digest, |body_len| {
            if !data.contains(&(body_len as usize)) {
                return Err(Error::Damaged(format!(
                    "the index lists a frame of {body_len} bytes"
                )));
            }
            offsets.push(at);
            at += (FRAME_HEADER_LEN as u64) + u64::from(body_len);
            Ok(())
        })?;
        if at != fin_at {
            return Err(Error::Damaged(
                "the frames listed by the index do not end at the final frame".into(),
            ));
        }
        offsets.push(fin_at);
        Ok(SeekIndex { offsets, fin })
    }

    /// The plaintext length, from the authenticated final frame (reads the index once).
    pub fn plaintext_len(&mut self) -> Result<u64> {
        Ok(self.load_index()?.fin.plaintext_len)
    }

    /// Reads no frame past the chunk that holds plaintext byte `end - 1` until a later call
    /// raises the limit; `None` lifts it. A random-access reader that knows the extent of the
    /// request it serves calls this before reading, so that the window (which otherwise reads
    /// up to `threads + 2` frames ahead) fetches only the frames the request needs. Chunks
    /// already read ahead stay; the checks are unchanged. Reads the index once.
    pub fn limit_read_ahead(&mut self, end: Option<u64>) -> Result<()> {
        let c = self.opener.chunk_size() as u64;
        let n = self.load_index()?.fin.chunk_count;
        self.frames.stop_at = Some(end.map_or(n, |e| e.div_ceil(c).min(n)));
        Ok(())
    }

    /// Positions the stream at plaintext offset `pos`: in-flight chunks are dropped and the next
    /// read starts with the chunk that holds `pos`. A position at or past the end reads nothing.
    fn reposition(&mut self, pos: u64) -> Result<()> {
        if let Some(e) = &self.failed {
            return Err(e.clone());
        }
        let c = self.opener.chunk_size() as u64;
        let ix = self.load_index()?;
        let n = ix.fin.chunk_count;
        let chunk = (pos / c).min(n);
        let at = ix.offsets[chunk as usize];
        self.window.clear();
        self.frames.seek_to(chunk, at)?;
        self.frames.stop_at = Some(n);
        self.verifier.restart(chunk);
        self.cursor.reset(pos);
        self.verified = None;
        Ok(())
    }

    /// Writes plaintext bytes `start..end` (`end = None`: to the end) to `w`, reading only the
    /// frames that cover them. A range past the end fails before anything is written, naming the
    /// real plaintext length. Returns the bytes written.
    pub fn copy_range_to(
        &mut self,
        start: u64,
        end: Option<u64>,
        w: &mut impl Write,
    ) -> Result<u64> {
        let range = ByteRange::new(start, end)?;
        let end = range.end_within(self.plaintext_len()?)?;
        self.reposition(start)?;
        self.frames.stop_at = Some(end.div_ceil(self.opener.chunk_size() as u64));
        let n = self.copy_limited(w, end - start)?;
        debug_assert_eq!(n, end - start, "the index promised these bytes");
        Ok(n)
    }
}

impl<R: Read> Decryptor<R> {
    /// Writes plaintext bytes `start..end` of a stream that cannot seek (a pipe) to `w`: frames
    /// before the range are skipped without being decrypted (they still have to be read), frames
    /// after it are not read at all. A range past the end is found only when the stream ends
    /// there, after the bytes before it were written. Must be called before anything was read.
    pub fn copy_range_streaming(
        &mut self,
        start: u64,
        end: Option<u64>,
        w: &mut impl Write,
    ) -> Result<u64> {
        if self.frames.next != 0 || !self.window.is_empty() || self.failed.is_some() {
            return Err(Error::InvalidOption(
                "a streamed range must start on a fresh decryptor".into(),
            ));
        }
        let range = ByteRange::new(start, end)?;
        let c = self.opener.chunk_size() as u64;
        if start > 0 {
            self.verifier.drop_digest();
        }
        while self.frames.next < start / c {
            if let Some(len) = self.skip_frame()? {
                return Err(Error::RangePastEnd {
                    what: "starts",
                    at: start,
                    len,
                });
            }
        }
        self.cursor.reset(start);
        self.frames.stop_at = end.map(|e| e.div_ceil(c));
        let want = range.len().unwrap_or(u64::MAX);
        let n = self.copy_limited(w, want)?;
        if n < want {
            // The stream ended, verified, before the range did: its length is now known.
            range.end_within(self.verifier.plaintext)?;
        } else {
            self.check_trailer_after_range()?;
        }
        Ok(n)
    }

    /// A streamed range that stopped at its last chunk: when that was the last data chunk (the
    /// next frame is the final one), the final frame, index and footer are checked as in a full
    /// read (FORMAT.md §6), so a damaged trailer is not accepted. Otherwise only the next frame's
    /// 5-byte header was read.
    fn check_trailer_after_range(&mut self) -> Result<()> {
        if self.frames.ended
            || self.frames.stop_at != Some(self.frames.next)
            || !self.window.is_empty()
        {
            return Ok(());
        }
        self.frames.stop_at = None;
        let (kind, body_len) = self.frames.read_header()?;
        if kind != FrameKind::Final {
            return Ok(());
        }
        let mut body = vec![0u8; body_len];
        self.frames.read_body(&mut body)?;
        self.frames.ended = true;
        self.end_of_stream(body)
    }

    /// Reads past one data frame without decrypting it. If the frame is the final frame, it is
    /// authenticated and the plaintext length returned: the stream ended before the target.
    fn skip_frame(&mut self) -> Result<Option<u64>> {
        let (kind, body_len) = self.frames.read_header()?;
        if kind == FrameKind::Final {
            let mut body = [0u8; FINAL_BODY_LEN];
            self.frames.read_body(&mut body)?;
            let fin = self.opener.open_final(self.verifier.chunks, &mut body)?;
            return Ok(Some(fin.plaintext_len));
        }
        self.frames.skip_body(body_len)?;
        self.verifier.frame_read(body_len);
        self.verifier.skipped();
        Ok(None)
    }
}

impl<R: Read + Seek> Seek for Decryptor<R> {
    /// Seeks in the plaintext. `SeekFrom::End` and the first seek read the index.
    fn seek(&mut self, to: SeekFrom) -> io::Result<u64> {
        let target = match to {
            SeekFrom::Start(p) => Some(p),
            SeekFrom::Current(d) => self.cursor.position.checked_add_signed(d),
            SeekFrom::End(d) => self.plaintext_len()?.checked_add_signed(d),
        };
        let target = target.ok_or_else(|| {
            io::Error::new(
                io::ErrorKind::InvalidInput,
                "seek before the start of the plaintext",
            )
        })?;
        if self.failed.is_none() && (target == self.cursor.position || self.cursor.holds(target)) {
            // Inside the current chunk: nothing to fetch, and the chunks read ahead stay.
            self.cursor.position = target;
        } else {
            self.reposition(target)?;
        }
        Ok(target)
    }
}
