//! Where frames come from: the container after its header, read in order from wherever the
//! reader stands (the first frame, or a frame a seek chose). Checks each frame header against
//! FORMAT.md §3 before anything of the body is read or allocated; reads the trailer (index,
//! footer, end of input) after the final frame.

use std::io::{self, Read, Seek, SeekFrom};
use std::time::Duration;

use crate::error::{Error, Result};
use crate::format::frame::{body_len_bounds, parse_footer, parse_frame_header};
use crate::format::{FrameKind, FOOTER_LEN, FRAME_HEADER_LEN, MAX_CHUNKS};
use crate::io::read_full;
use crate::stats::timed;

/// The frames of one container, read in order.
pub(crate) struct Frames<R> {
    pub(crate) inner: R,
    /// Container offset of frame 0 (the header's length).
    pub(crate) first_at: u64,
    chunk_size: usize,
    /// A padded file (FORMAT.md §3.3), a signed file (§12.2): which frame kinds may occur.
    padded: bool,
    signed: bool,
    /// A pieced file (§14): markers may occur.
    pieced: bool,
    /// Number of the next frame to read.
    pub(crate) next: u64,
    /// Frames from this number on are not read (the end of a range, or of an indexed read).
    pub(crate) stop_at: Option<u64>,
    /// The final frame, or a failure, was read: nothing follows.
    pub(crate) ended: bool,
    /// A frame header read ahead by `peek_kind`.
    peeked: Option<(FrameKind, usize)>,
    /// After a seek: the frame sought to and its body length as the authenticated index lists
    /// it, checked against the frame's own header when it is read.
    pub(crate) listed: Option<(u64, usize)>,
    /// Time spent reading.
    pub(crate) read_time: Duration,
    /// Moves `inner` past `n` bytes and returns where they start, for an input that can seek
    /// (set by [`Frames::can_skip`]): the bodies a worker reads itself.
    skip: Option<fn(&mut R, u64) -> io::Result<u64>>,
}

impl<R: Read> Frames<R> {
    /// The frames of a container whose header, `first_at` bytes long, is `header`.
    pub(crate) fn new(inner: R, first_at: u64, header: &crate::format::Header) -> Self {
        Frames {
            inner,
            first_at,
            chunk_size: header.chunk_size(),
            padded: header.padded,
            signed: header.signed,
            pieced: header.pieced,
            next: 0,
            stop_at: None,
            ended: false,
            peeked: None,
            listed: None,
            read_time: Duration::ZERO,
            skip: None,
        }
    }

    /// True while frames remain to be read.
    pub(crate) fn more(&self) -> bool {
        !self.ended && self.stop_at.is_none_or(|s| self.next < s)
    }

    /// Reads the next frame header: the frame's kind and body length, within §3's bounds.
    pub(crate) fn read_header(&mut self) -> Result<(FrameKind, usize)> {
        match self.peeked.take() {
            Some(h) => Ok(h),
            None => self.parse_header(),
        }
    }

    /// The kind of the next frame, its header read (and checked) but left for `read_header`.
    pub(crate) fn peek_kind(&mut self) -> Result<FrameKind> {
        if self.peeked.is_none() {
            self.peeked = Some(self.parse_header()?);
        }
        Ok(self.peeked.expect("just set").0)
    }

    /// The frame header read ahead by `peek_kind`, taken out: a caller that reads the same
    /// input through another `Frames` later gives it back with [`Frames::give_peeked`].
    pub(crate) fn take_peeked(&mut self) -> Option<(FrameKind, usize)> {
        self.peeked.take()
    }

    /// A header read ahead by another `Frames` over the same input ([`Frames::take_peeked`]).
    pub(crate) fn give_peeked(&mut self, peeked: Option<(FrameKind, usize)>) {
        self.peeked = peeked;
    }

    fn parse_header(&mut self) -> Result<(FrameKind, usize)> {
        let index = self.next;
        let mut fh = [0u8; FRAME_HEADER_LEN];
        if self.read(&mut fh)? != FRAME_HEADER_LEN {
            return Err(Error::Truncated(format!(
                "no final frame after {index} chunk(s)"
            )));
        }
        let (kind, body_len) = parse_frame_header(&fh);
        let kind = kind
            .filter(|k| k.allowed(self.padded, self.signed, self.pieced))
            .ok_or_else(|| {
                let file = match kind {
                    Some(FrameKind::Signature) => "an unsigned",
                    _ if self.padded => "a padded",
                    _ => "an unpadded",
                };
                Error::Damaged(format!(
                    "frame {index} has a kind byte {:#04x} that {file} file does not use",
                    fh[0]
                ))
            })?;
        let bounds = body_len_bounds(kind, self.chunk_size);
        let body_len = body_len as usize;
        if let Some((at, listed)) = self.listed.filter(|&(at, _)| at == index) {
            self.listed = None;
            if body_len != listed {
                return Err(Error::Damaged(format!(
                    "frame {at} is {body_len} bytes long, but the authenticated index lists {listed}"
                )));
            }
        }
        if !bounds.contains(&body_len) {
            return Err(Error::Damaged(format!(
                "frame {index} declares {body_len} bytes, outside {}..={} for its kind",
                bounds.start(),
                bounds.end()
            )));
        }
        if kind != FrameKind::Final && index >= MAX_CHUNKS {
            return Err(Error::Limit("more than 2^32-1 chunks".into()));
        }
        Ok((kind, body_len))
    }

    /// Reads the body of the frame whose header was just read, and counts the frame.
    pub(crate) fn read_body(&mut self, body: &mut [u8]) -> Result<()> {
        if self.read(body)? != body.len() {
            return Err(Error::Truncated(format!("inside frame {}", self.next)));
        }
        self.next += 1;
        Ok(())
    }

    /// Reads past the body of the frame whose header was just read, and counts the frame.
    pub(crate) fn skip_body(&mut self, body_len: usize) -> Result<()> {
        let take = &mut (&mut self.inner).take(body_len as u64);
        if io::copy(take, &mut io::sink())? != body_len as u64 {
            return Err(Error::Truncated(format!("inside frame {}", self.next)));
        }
        self.next += 1;
        Ok(())
    }

    /// Moves past the body of the frame whose header was just read without reading it, counts
    /// the frame, and returns the input's offset of the body; `None` (nothing moved) when the
    /// input cannot seek. The body is checked by whoever reads it there: a short read is a cut
    /// container.
    pub(crate) fn pass_body(&mut self, body_len: usize) -> Result<Option<u64>> {
        let Some(skip) = self.skip else {
            return Ok(None);
        };
        let at = skip(&mut self.inner, body_len as u64)?;
        self.next += 1;
        Ok(Some(at))
    }

    /// After the final frame of `n` data frames: the index (checked against its authenticated
    /// digest), the footer, and the end of the input.
    pub(crate) fn read_trailer(&mut self, n: u64, index_digest: &[u8; 32]) -> Result<()> {
        read_index(&mut self.inner, n, index_digest, |_| Ok(()))?;
        let mut f = [0u8; FOOTER_LEN];
        if read_full(&mut self.inner, &mut f)? != FOOTER_LEN {
            return Err(Error::Truncated("in the footer".into()));
        }
        if parse_footer(&f)? != n {
            return Err(Error::Damaged("the footer's chunk count is wrong".into()));
        }
        if read_full(&mut self.inner, &mut [0u8; 1])? != 0 {
            return Err(Error::TrailingData);
        }
        Ok(())
    }

    fn read(&mut self, buf: &mut [u8]) -> io::Result<usize> {
        let inner = &mut self.inner;
        timed(&mut self.read_time, || read_full(inner, buf))
    }
}

impl<R: Read + Seek> Frames<R> {
    /// Lets [`Frames::pass_body`] seek past bodies.
    pub(crate) fn can_skip(&mut self) {
        self.skip = Some(|r, n| {
            let at = r.stream_position()?;
            let to = i64::try_from(n).map_err(|_| io::Error::other("frame body too long"))?;
            r.seek(SeekFrom::Current(to))?;
            Ok(at)
        });
    }

    /// Goes to frame `index`, which starts at container offset `at`.
    pub(crate) fn seek_to(&mut self, index: u64, at: u64) -> Result<()> {
        self.inner.seek(SeekFrom::Start(at))?;
        self.next = index;
        self.ended = false;
        self.peeked = None;
        self.listed = None;
        Ok(())
    }

    /// Reads `buf.len()` bytes at container offset `at`; `what` names the part for a short read.
    pub(crate) fn read_at(&mut self, at: u64, buf: &mut [u8], what: &str) -> Result<()> {
        self.inner.seek(SeekFrom::Start(at))?;
        if self.read(buf)? != buf.len() {
            return Err(Error::Truncated(format!("in the {what}")));
        }
        Ok(())
    }
}

/// Reads the `n` entries of the index (FORMAT.md §4) in pieces, hands each body length to
/// `each`, and checks the whole against its authenticated digest: constant memory, one pass.
pub(crate) fn read_index(
    r: &mut impl Read,
    n: u64,
    index_digest: &[u8; 32],
    mut each: impl FnMut(u32) -> Result<()>,
) -> Result<()> {
    let mut h = blake3::Hasher::new();
    read_index_raw(r, n, |raw| {
        h.update(raw);
        for e in raw.chunks_exact(4) {
            each(u32::from_le_bytes([e[0], e[1], e[2], e[3]]))?;
        }
        Ok(())
    })?;
    if h.finalize().as_bytes() != index_digest {
        return Err(Error::Damaged(
            "the index does not match its authenticated digest".into(),
        ));
    }
    Ok(())
}

/// Reads the `n` entries of an index and hands them to `each` in blocks of whole entries:
/// constant memory, one pass. The caller authenticates them.
pub(crate) fn read_index_raw(
    r: &mut impl Read,
    n: u64,
    mut each: impl FnMut(&[u8]) -> Result<()>,
) -> Result<()> {
    let mut left = n * 4;
    let mut buf = [0u8; 16384];
    while left > 0 {
        let want = left.min(buf.len() as u64) as usize;
        if read_full(r, &mut buf[..want])? != want {
            return Err(Error::Truncated("in the index".into()));
        }
        each(&buf[..want])?;
        left -= want as u64;
    }
    Ok(())
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::format::frame::frame_header;

    /// Frames are numbered up to 2^32 - 2 (2^32 - 1 data frames at most, FORMAT.md §3); the
    /// final frame carries their count, so it alone may be number 2^32 - 1.
    #[test]
    fn frame_numbers_stop_at_the_chunk_limit_but_the_final_frame_may_carry_it() {
        let header_at = |kind, body_len, next| {
            let fh = frame_header(kind, body_len);
            let header = crate::format::Header {
                cipher: crate::crypto::aead::Cipher::Aes256Gcm,
                codec: crate::codec::Codec::None,
                hash: crate::hash::HashAlg::None,
                chunk_log2: 10,
                padded: false,
                signed: false,
                pieced: false,
                payload_salt: [0; 32],
                stanzas: Vec::new(),
            };
            let mut f = Frames::new(&fh[..], 0, &header);
            f.next = next;
            f.read_header()
        };
        let data = |next| header_at(FrameKind::Compressed, 100, next);
        assert_eq!(data(MAX_CHUNKS - 1).unwrap(), (FrameKind::Compressed, 100));
        let e = data(MAX_CHUNKS).unwrap_err();
        assert!(matches!(e, Error::Limit(_)), "{e:?}");
        let last = header_at(FrameKind::Final, 96, MAX_CHUNKS).unwrap();
        assert_eq!(last, (FrameKind::Final, 96));
    }
}
