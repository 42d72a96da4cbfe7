//! Random access (FORMAT.md §6): the authenticated index of a seekable container, `Seek` for the
//! decrypting reader, and byte ranges from seekable and non-seekable inputs.
//!
//! A seekable reader reads the footer, the final frame and the index once, authenticates them,
//! and from then on reads only the frames that cover what is asked. Every chunk it returns is
//! authenticated as the chunk at its position (the nonce binds the position); the whole-plaintext
//! digest is checked only when every chunk from the first was read.

use std::io::{self, Read, Seek, SeekFrom, Write};

use super::{Decryptor, State};
use crate::crypto::aead::TAG_LEN;
use crate::error::{Error, Result};
use crate::format::frame::{parse_footer, parse_frame_header};
use crate::format::{
    FinalFrame, FrameKind, FINAL_BODY_LEN, FINAL_FRAME_LEN, FOOTER_LEN, FRAME_HEADER_LEN,
};
use crate::hash::{Digest, HashAlg};

/// The authenticated index: where every frame starts, and the final frame.
pub(crate) struct SeekIndex {
    /// Container offset of data frame `i`; one more entry for the final frame.
    offsets: Vec<u64>,
    fin: FinalFrame,
}

impl SeekIndex {
    pub(crate) fn chunk_count(&self) -> u64 {
        self.fin.chunk_count
    }

    pub(crate) fn final_frame(&self) -> &FinalFrame {
        &self.fin
    }

    /// The plaintext length of chunk `i`: full, except the last.
    pub(crate) fn chunk_len(&self, i: u64, chunk_size: usize) -> u64 {
        (self.fin.plaintext_len - i * chunk_size as u64).min(chunk_size as u64)
    }
}

fn read_at(r: &mut (impl Read + Seek), at: u64, buf: &mut [u8], what: &str) -> Result<()> {
    r.seek(SeekFrom::Start(at))?;
    if crate::io::read_full(r, buf)? != buf.len() {
        return Err(Error::Truncated(format!("in the {what}")));
    }
    Ok(())
}

impl<R: Read + Seek> Decryptor<R> {
    /// Reads and authenticates the footer, the final frame and the index (once).
    fn load_index(&mut self) -> Result<&SeekIndex> {
        if self.index.is_none() {
            let ix = self.read_index()?;
            self.index = Some(ix);
        }
        Ok(self.index.as_ref().expect("just loaded"))
    }

    fn read_index(&mut self) -> Result<SeekIndex> {
        let c = self.opener.chunk_size() as u64;
        let file_len = self.inner.seek(SeekFrom::End(0))?;
        let fixed = self.header_len + (FINAL_FRAME_LEN + FOOTER_LEN) as u64;
        if file_len < fixed {
            return Err(Error::Truncated("before the final frame".into()));
        }
        let mut footer = [0u8; FOOTER_LEN];
        read_at(
            &mut self.inner,
            file_len - FOOTER_LEN as u64,
            &mut footer,
            "footer",
        )?;
        let n = parse_footer(&footer)?;
        if n * 4 > file_len - fixed {
            return Err(Error::Damaged(format!(
                "the footer claims {n} chunks, more than the file holds"
            )));
        }
        let fin_at = file_len - FOOTER_LEN as u64 - 4 * n - FINAL_FRAME_LEN as u64;
        let mut frame = [0u8; FINAL_FRAME_LEN];
        read_at(&mut self.inner, fin_at, &mut frame, "final frame")?;
        let head: [u8; FRAME_HEADER_LEN] = frame[..FRAME_HEADER_LEN].try_into().expect("5 bytes");
        if parse_frame_header(&head) != (Some(FrameKind::Final), FINAL_BODY_LEN as u32) {
            return Err(Error::Damaged(
                "no final frame where the footer places it".into(),
            ));
        }
        let body = &mut frame[FRAME_HEADER_LEN..];
        let len = self.opener.open_body(n, true, FrameKind::Final, body)?;
        let fin = FinalFrame::decode(&body[..len])?;
        let chunks_needed = fin.plaintext_len.div_ceil(c);
        if fin.chunk_count != n
            || chunks_needed != n
            || fin.plaintext_len > crate::format::MAX_PLAINTEXT
        {
            return Err(Error::Damaged(format!(
                "the final frame records {} bytes in {} chunks; the footer says {n} chunks",
                fin.plaintext_len, fin.chunk_count
            )));
        }
        // The index itself, streamed through BLAKE3 while the offsets are summed.
        self.inner
            .seek(SeekFrom::Start(fin_at + FINAL_FRAME_LEN as u64))?;
        let mut offsets = Vec::with_capacity(n as usize + 1);
        let mut at = self.header_len;
        super::read_index(&mut self.inner, n, &fin.index_digest, |body_len| {
            let body_len = u64::from(body_len);
            if body_len <= TAG_LEN as u64 || body_len > c + TAG_LEN as u64 {
                return Err(Error::Damaged(format!(
                    "the index lists a frame of {body_len} bytes"
                )));
            }
            offsets.push(at);
            at += FRAME_HEADER_LEN as u64 + body_len;
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

    /// Positions the stream at plaintext offset `pos`: in-flight chunks are dropped and the next
    /// read starts with the chunk that holds `pos`. A position at or past the end reads nothing.
    fn reposition(&mut self, pos: u64) -> Result<()> {
        if let State::Failed(e) = &self.state {
            return Err(e.duplicate());
        }
        let c = self.opener.chunk_size() as u64;
        let ix = self.load_index()?;
        let n = ix.chunk_count();
        let chunk = (pos / c).min(n);
        let offset = ix.offsets[chunk as usize];
        self.pending.clear();
        self.inner.seek(SeekFrom::Start(offset))?;
        self.frames_read = chunk;
        self.chunks_released = chunk;
        self.plaintext_released = chunk * c;
        self.short_chunk_seen = false;
        self.skip_in_chunk = if chunk < n { (pos % c) as usize } else { 0 };
        self.stop_at_chunk = None;
        self.whole = pos == 0;
        self.digest = Digest::new(if self.whole {
            self.opener.header.hash
        } else {
            HashAlg::None
        });
        self.current_len = 0;
        self.pos = 0;
        self.position = pos;
        self.state = State::Frames;
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
        let len = self.plaintext_len()?;
        let end = end.unwrap_or(len);
        if start > len {
            return Err(Error::RangePastEnd {
                what: "starts",
                at: start,
                len,
            });
        }
        if end > len {
            return Err(Error::RangePastEnd {
                what: "ends",
                at: end,
                len,
            });
        }
        if end < start {
            return Err(Error::InvalidOption(format!(
                "the range ends ({end}) before it starts ({start})"
            )));
        }
        self.reposition(start)?;
        self.stop_at_chunk = Some(end.div_ceil(self.opener.chunk_size() as u64));
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
        if self.frames_read != 0 || !matches!(self.state, State::Frames) {
            return Err(Error::InvalidOption(
                "a streamed range must start on a fresh decryptor".into(),
            ));
        }
        if let Some(e) = end.filter(|&e| e < start) {
            return Err(Error::InvalidOption(format!(
                "the range ends ({e}) before it starts ({start})"
            )));
        }
        let c = self.opener.chunk_size() as u64;
        if start > 0 {
            self.whole = false;
            self.digest = Digest::new(HashAlg::None);
        }
        while self.frames_read < start / c {
            if let Some(len) = self.skip_frame()? {
                return Err(Error::RangePastEnd {
                    what: "starts",
                    at: start,
                    len,
                });
            }
        }
        self.skip_in_chunk = (start % c) as usize;
        self.position = start;
        self.stop_at_chunk = end.map(|e| e.div_ceil(c));
        let want = end.map_or(u64::MAX, |e| e - start);
        let n = self.copy_limited(w, want)?;
        if n < want {
            // The stream ended, verified, before the range did: its length is now known.
            let len = self.plaintext_released;
            if start > len {
                return Err(Error::RangePastEnd {
                    what: "starts",
                    at: start,
                    len,
                });
            }
            if let Some(e) = end {
                return Err(Error::RangePastEnd {
                    what: "ends",
                    at: e,
                    len,
                });
            }
        }
        Ok(n)
    }

    /// Reads past one data frame without decrypting it. If the frame is the final frame, it is
    /// authenticated and the plaintext length returned: the stream ended before the target.
    fn skip_frame(&mut self) -> Result<Option<u64>> {
        let i = self.frames_read;
        let (kind, body_len) = self.read_frame_header()?;
        if kind == FrameKind::Final {
            let mut body = [0u8; FINAL_BODY_LEN];
            if crate::io::read_full(&mut self.inner, &mut body)? != FINAL_BODY_LEN {
                return Err(Error::Truncated("inside the final frame".into()));
            }
            let len = self
                .opener
                .open_body(i, true, FrameKind::Final, &mut body)?;
            return Ok(Some(FinalFrame::decode(&body[..len])?.plaintext_len));
        }
        let copied = io::copy(
            &mut (&mut self.inner).take(body_len as u64),
            &mut io::sink(),
        )?;
        if copied != body_len as u64 {
            return Err(Error::Truncated(format!("inside frame {i}")));
        }
        self.index_hasher.update(&(body_len as u32).to_le_bytes());
        self.container_read += (FRAME_HEADER_LEN + body_len) as u64;
        self.frames_read += 1;
        self.chunks_released += 1;
        self.plaintext_released += self.opener.chunk_size() as u64;
        Ok(None)
    }
}

impl<R: Read + Seek> Seek for Decryptor<R> {
    /// Seeks in the plaintext. `SeekFrom::End` and the first seek read the index.
    fn seek(&mut self, to: SeekFrom) -> io::Result<u64> {
        let target = match to {
            SeekFrom::Start(p) => Some(p),
            SeekFrom::Current(d) => self.position.checked_add_signed(d),
            SeekFrom::End(d) => self.plaintext_len()?.checked_add_signed(d),
        };
        let target = target.ok_or_else(|| {
            io::Error::new(
                io::ErrorKind::InvalidInput,
                "seek before the start of the plaintext",
            )
        })?;
        self.reposition(target)?;
        Ok(target)
    }
}
