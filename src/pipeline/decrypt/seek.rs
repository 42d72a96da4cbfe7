//! Random access (FORMAT.md §6): the authenticated index of a seekable container, and the
//! container's moves for the engine's reader (`Seek`, byte ranges from seekable and non-seekable
//! inputs).
//!
//! A seekable reader reads the footer, the final frame and the index once, authenticates them,
//! and from then on reads only the frames that cover what is asked. Every chunk it returns is
//! authenticated as the chunk at its position (the nonce binds the position); the whole-plaintext
//! digest is checked only when every chunk from the first was read.

use std::io::{Read, Seek, SeekFrom, Write};

use super::ContainerChunks;
use crate::error::{Error, Result};
use crate::format::frame::{
    footer_at_end, listed_bounds, parse_footer, parse_frame_header, END_SEARCH_LEN,
};
use crate::format::{
    FinalFrame, FrameKind, FINAL_BODY_LEN, FINAL_FRAME_LEN, FOOTER_LEN, FRAME_HEADER_LEN,
    MAX_PLAINTEXT,
};
use crate::pipeline::chunks::{copy_limited, step, ByteRange, Cursor};
use crate::pipeline::source::SeekSource;

/// Most offsets the index keeps in memory. Past `MAX_BLOCKS` frames, one offset is kept per block
/// of frames, with the BLAKE3 of the block's index entries, and a seek reads its block of the
/// index again (checked against that hash) to find its frame. So the index of a 4 TiB file in
/// 1 KiB chunks (2^32 frames) takes 1.25 MiB plus one 512 KiB block, not 32 GiB.
const MAX_BLOCKS: u64 = 1 << 15;

/// The authenticated index: where the frames start (every frame, or the first of each block), and
/// the final frame. Memory is bounded whatever the file claims: at most [`MAX_BLOCKS`] offsets
/// and block hashes, and one block of entries.
pub(crate) struct SeekIndex {
    pub(crate) fin: FinalFrame,
    /// Frames per block: a power of two, 1 while every offset fits.
    block: u64,
    /// Container offset of the first frame of each block, then of the final frame.
    starts: Vec<u64>,
    /// BLAKE3 of each block's index bytes (only when `block > 1`).
    hashes: Vec<[u8; 32]>,
    /// Container offset of the index.
    index_at: u64,
    /// The block read back last, and its entries.
    cached: Option<(u64, Vec<u32>)>,
}

/// Builds a [`SeekIndex`] from the entries as they stream past, in bounded memory.
struct IndexBuilder {
    n: u64,
    block: u64,
    seen: u64,
    at: u64,
    starts: Vec<u64>,
    hashes: Vec<[u8; 32]>,
    hasher: blake3::Hasher,
}

impl IndexBuilder {
    fn new(n: u64, first_at: u64) -> Self {
        let block = n.div_ceil(MAX_BLOCKS).max(1).next_power_of_two();
        let blocks = n.div_ceil(block) as usize;
        IndexBuilder {
            n,
            block,
            seen: 0,
            at: first_at,
            starts: Vec::with_capacity(blocks + 1),
            hashes: Vec::with_capacity(if block > 1 { blocks } else { 0 }),
            hasher: blake3::Hasher::new(),
        }
    }

    fn push(&mut self, body_len: u32) {
        if self.seen.is_multiple_of(self.block) {
            self.starts.push(self.at);
        }
        self.at += FRAME_HEADER_LEN as u64 + u64::from(body_len);
        self.seen += 1;
        if self.block > 1 {
            self.hasher.update(&body_len.to_le_bytes());
            if self.seen.is_multiple_of(self.block) || self.seen == self.n {
                self.hashes.push(*self.hasher.finalize().as_bytes());
                self.hasher.reset();
            }
        }
    }

    /// Where the listed frames end: the caller checks it is the final frame's offset.
    fn end(&self) -> u64 {
        self.at
    }

    fn finish(mut self, fin: FinalFrame, index_at: u64) -> SeekIndex {
        self.starts.push(self.at);
        SeekIndex {
            fin,
            block: self.block,
            starts: self.starts,
            hashes: self.hashes,
            index_at,
            cached: None,
        }
    }
}

impl SeekIndex {
    pub(crate) fn final_frame(&self) -> &FinalFrame {
        &self.fin
    }

    /// Container offset of the index.
    pub(crate) fn index_at(&self) -> u64 {
        self.index_at
    }

    /// The number of data frames (a padded file has padding frames after them).
    pub(crate) fn data_frames(&self, chunk_size: usize) -> u64 {
        self.fin.plaintext_len.div_ceil(chunk_size as u64)
    }

    /// The plaintext length of chunk `i`: full, except the last.
    pub(crate) fn chunk_len(&self, i: u64, chunk_size: usize) -> u64 {
        (self.fin.plaintext_len - i * chunk_size as u64).min(chunk_size as u64)
    }

    /// Bytes this index holds in memory (tests bound it).
    #[cfg(test)]
    fn memory(&self) -> usize {
        self.starts.capacity() * 8
            + self.hashes.capacity() * 32
            + self.cached.as_ref().map_or(0, |(_, e)| e.capacity() * 4)
    }

    /// Container offset of frame `i` (`i = n`: the final frame). Within a block, the block's
    /// entries are read back from `r` and checked against the hash taken when the index was
    /// authenticated, so a file changed since cannot move a frame.
    pub(crate) fn frame_offset(&mut self, i: u64, r: &mut (impl Read + Seek)) -> Result<u64> {
        let n = self.fin.chunk_count;
        let (b, within) = (i / self.block, i % self.block);
        if i == n || within == 0 {
            let at = if i == n {
                self.starts.len() - 1
            } else {
                b as usize
            };
            return Ok(self.starts[at]);
        }
        if self.cached.as_ref().is_none_or(|(cb, _)| *cb != b) {
            let count = self.block.min(n - b * self.block) as usize;
            let mut raw = vec![0u8; count * 4];
            r.seek(SeekFrom::Start(self.index_at + b * self.block * 4))?;
            if crate::io::read_full(r, &mut raw)? != raw.len() {
                return Err(Error::Truncated("in the index".into()));
            }
            if *blake3::hash(&raw).as_bytes() != self.hashes[b as usize] {
                return Err(Error::Damaged(
                    "the index changed since it was authenticated".into(),
                ));
            }
            let entries = raw
                .chunks_exact(4)
                .map(|e| u32::from_le_bytes([e[0], e[1], e[2], e[3]]))
                .collect();
            self.cached = Some((b, entries));
        }
        let (_, entries) = self.cached.as_ref().expect("just read");
        let skipped: u64 = entries[..within as usize]
            .iter()
            .map(|&l| FRAME_HEADER_LEN as u64 + u64::from(l))
            .sum();
        Ok(self.starts[b as usize] + skipped)
    }
}

/// Reads and authenticates the trailer of the container `frames` reads, from its end: the footer,
/// the final frame (under `opener`'s key), the index against its digest, and the frames the index
/// lists ending exactly at the final frame. A container cut short, extended, or with a damaged
/// trailer fails here; its data frames are not read. Leaves the reader anywhere.
pub(crate) fn read_trailer<R: Read + Seek>(
    frames: &mut super::frames::Frames<R>,
    opener: &super::opener::Opener,
) -> Result<SeekIndex> {
    let c = opener.chunk_size();
    let file_len = frames.inner.seek(SeekFrom::End(0))?;
    let n = read_footer(&mut frames.inner, frames.first_at, file_len)?;
    let footer_at = file_len - FOOTER_LEN as u64;
    let fin_at = footer_at - 4 * n - FINAL_FRAME_LEN as u64;
    let fin = final_frame_at(frames, fin_at, opener, n)?;
    // Data frames: all `n` frames, or in a padded or signed file the first `d`, signature and
    // padding frames after them.
    let d = fin.plaintext_len.div_ceil(c as u64);
    let (padded, signed) = (opener.header.padded, opener.header.signed);
    let trailing = padded || signed;
    if fin.chunk_count != n || d > n || (d < n && !trailing) || fin.plaintext_len > MAX_PLAINTEXT {
        return Err(Error::Damaged(format!(
            "the final frame records {} bytes in {} chunks; the footer says {n} chunks",
            fin.plaintext_len, fin.chunk_count
        )));
    }
    // The index itself, streamed through BLAKE3 while the offsets are summed.
    let data = listed_bounds(c, padded, signed, opener.header.pieced);
    index_offsets(frames, (fin, fin_at), data, &[])
}

/// Reads the index that follows `fin`, the authenticated final frame at `final_at`: its
/// `fin.chunk_count` entries, each within `lengths`, checked, followed by `table` (a pieced
/// file's piece table, FORMAT.md §14.3; empty otherwise), against the final frame's index
/// digest, and the frames they list ending at the final frame. The offsets of every frame, in
/// bounded memory.
pub(super) fn index_offsets<R: Read + Seek>(
    frames: &mut super::frames::Frames<R>,
    (fin, final_at): (FinalFrame, u64),
    lengths: std::ops::RangeInclusive<usize>,
    table: &[u8],
) -> Result<SeekIndex> {
    let n = fin.chunk_count;
    let mut built = IndexBuilder::new(n, frames.first_at);
    let mut listed = blake3::Hasher::new();
    let inner = &mut frames.inner;
    inner.seek(SeekFrom::Start(final_at + FINAL_FRAME_LEN as u64))?;
    super::frames::read_index_raw(inner, n, |raw| {
        listed.update(raw);
        for e in raw.chunks_exact(4) {
            let body_len = u32::from_le_bytes([e[0], e[1], e[2], e[3]]);
            if !lengths.contains(&(body_len as usize)) {
                return Err(Error::Damaged(format!(
                    "the index lists a frame of {body_len} bytes"
                )));
            }
            built.push(body_len);
        }
        Ok(())
    })?;
    listed.update(table);
    if listed.finalize().as_bytes() != &fin.index_digest {
        return Err(Error::Damaged(match table.is_empty() {
            true => "the index does not match its authenticated digest".into(),
            false => "the index and piece table do not match their authenticated digest".into(),
        }));
    }
    if built.end() != final_at {
        return Err(Error::Damaged(
            "the frames listed by the index do not end at the final frame".into(),
        ));
    }
    Ok(built.finish(fin, final_at + FINAL_FRAME_LEN as u64))
}

/// Reads the final frame at container offset `at` and opens it under `opener` as the frame
/// sealed after `counter` others: what the footer placed there must be one.
pub(super) fn final_frame_at<R: Read + Seek>(
    frames: &mut super::frames::Frames<R>,
    at: u64,
    opener: &super::opener::Opener,
    counter: u64,
) -> Result<FinalFrame> {
    let mut frame = [0u8; FINAL_FRAME_LEN];
    frames.read_at(at, &mut frame, "final frame")?;
    let (head, body) = frame.split_at_mut(FRAME_HEADER_LEN);
    let head: &[u8; FRAME_HEADER_LEN] = (&*head).try_into().expect("split at its length");
    if parse_frame_header(head) != (Some(FrameKind::Final), FINAL_BODY_LEN as u32) {
        return Err(Error::Damaged(
            "no final frame where the footer places it".into(),
        ));
    }
    opener.open_final(counter, body)
}

/// The chunk count the footer of a container claims (not authenticated), read from the last
/// bytes of `r`, `file_len` bytes long, whose frames start at `first_at`. A file whose end is
/// not a footer is told apart as cut short, damaged or extended ([`footer_at_end`]); one too short
/// for a final frame and a footer is cut short, and one too short for the chunks its footer
/// claims is damaged. Leaves the reader anywhere.
pub(crate) fn read_footer(r: &mut (impl Read + Seek), first_at: u64, file_len: u64) -> Result<u64> {
    let fixed = first_at + (FINAL_FRAME_LEN + FOOTER_LEN) as u64;
    if file_len < fixed {
        return Err(Error::Truncated("before the final frame".into()));
    }
    // The footer alone, and more of the end only to tell what is wrong when it is not one.
    let mut footer = [0u8; FOOTER_LEN];
    read_end(r, file_len, &mut footer)?;
    let n = match parse_footer(&footer) {
        Ok(n) => n,
        Err(_) => {
            let mut tail = vec![0u8; (file_len - first_at).min(END_SEARCH_LEN as u64) as usize];
            read_end(r, file_len, &mut tail)?;
            footer_at_end(&tail)?
        }
    };
    if n * 4 > file_len - fixed {
        return Err(Error::Damaged(format!(
            "the footer claims {n} chunks, more than the file holds"
        )));
    }
    Ok(n)
}

/// Reads the last `buf.len()` bytes of `r`, `file_len` bytes long.
fn read_end(r: &mut (impl Read + Seek), file_len: u64, buf: &mut [u8]) -> Result<()> {
    r.seek(SeekFrom::Start(file_len - buf.len() as u64))?;
    if crate::io::read_full(r, buf)? != buf.len() {
        return Err(Error::Truncated("in the footer".into()));
    }
    Ok(())
}

impl<R: Read + Seek> ContainerChunks<R> {
    /// Reads and authenticates the footer, the final frame and the index (once). The reader's
    /// position in the container is left where it was.
    pub(crate) fn load_index(&mut self) -> Result<&SeekIndex> {
        if self.index.is_none() {
            let here = self.frames.inner.stream_position()?;
            let ix = self.read_index();
            self.frames.inner.seek(SeekFrom::Start(here))?;
            self.index = Some(ix?);
        }
        Ok(self.index.as_ref().expect("just loaded"))
    }

    /// The container bytes `[from, to)` that opening plaintext `start..end` reads: from the
    /// frame that holds `start` to the header of the frame after the one that holds `end - 1`,
    /// or to the end of the container when `end` is the plaintext's end (the trailer is read
    /// then). The reader's position is left where it was.
    pub(crate) fn stored_span(&mut self, start: u64, end: u64) -> Result<(u64, u64)> {
        let c = self.opener.chunk_size();
        let here = self.frames.inner.stream_position()?;
        self.load_index()?;
        let ix = self.index.as_mut().expect("just loaded");
        let d = ix.data_frames(c);
        let len = ix.fin.plaintext_len;
        let (first, next_chunk) = ((start / c as u64).min(d), end.div_ceil(c as u64).min(d));
        let (first, next) = (self.start_frame(first), self.frame_of(next_chunk));
        // After the range, the next frame's header is read; in a pieced file read to its last
        // chunk, the whole end marker (`stop_frame`).
        let after = match self.pieces.is_some() && next_chunk >= d {
            true => crate::format::piece::MARKER_LEN,
            false => FRAME_HEADER_LEN,
        } as u64;
        let ix = self.index.as_mut().expect("just loaded");
        let from = ix.frame_offset(first, &mut self.frames.inner)?;
        let to = if end >= len {
            u64::MAX
        } else {
            ix.frame_offset(next, &mut self.frames.inner)? + after
        };
        self.frames.inner.seek(SeekFrom::Start(here))?;
        Ok((from, to))
    }

    fn read_index(&mut self) -> Result<SeekIndex> {
        match self.pieces.is_some() {
            true => self.read_pieced_trailer(),
            false => read_trailer(&mut self.frames, &self.opener),
        }
    }

    /// [`read_pieced_trailer`] of this reader's frames, into its pieces.
    fn read_pieced_trailer(&mut self) -> Result<SeekIndex> {
        let pieces = self.pieces.as_mut().expect("a pieced file");
        super::pieces::read_pieced_trailer(&mut self.frames, &self.opener, pieces)
    }
}

impl<R: Read + Seek> SeekSource for ContainerChunks<R> {
    /// Reads the index once.
    fn plaintext_len(&mut self, _: &mut Cursor) -> Result<u64> {
        Ok(self.load_index()?.fin.plaintext_len)
    }

    /// A pieced file's table first (FORMAT.md §14.4): then no piece is released that the table
    /// does not list at its place, where a read in order would find a splice only at the end.
    /// A version-1 file's whole read needs nothing before it.
    fn use_index(&mut self, _: &mut Cursor) -> Result<()> {
        if self.pieces.is_some() {
            self.load_index()?;
        }
        Ok(())
    }

    /// Hashed again into the digest (resume.rs).
    fn hash_kept(&mut self, from: u64, kept: &mut dyn Read) -> Result<()> {
        self.hash_kept_part(from, kept)
    }

    /// The workers read long frame bodies by offset; the calling thread reads only the frame
    /// headers.
    fn read_bodies_from(
        &mut self,
        file: std::fs::File,
        count: Option<std::sync::Arc<std::sync::atomic::AtomicU64>>,
    ) -> Result<()> {
        self.bodies = super::ReadAt::for_file(file, count)?;
        if self.bodies.is_some() {
            self.frames.can_skip();
        }
        Ok(())
    }

    /// Reads no frame past the chunk that holds plaintext byte `end - 1`: chunks already read
    /// ahead stay; the checks are unchanged. Reads the index once.
    fn limit_read_ahead(&mut self, _: &mut Cursor, end: Option<u64>) -> Result<()> {
        let c = self.opener.chunk_size();
        let ix = self.load_index()?;
        let (d, len) = (ix.data_frames(c), ix.fin.plaintext_len);
        let signed = self.opener.header.signed || self.signed.required.is_required();
        if signed && self.verifier.has_digest() && end.is_none_or(|e| e >= len) {
            // A whole read of a signed file, or one a signer is required of, reads the frames
            // after the data too, and the trailer (FORMAT.md §12.4).
            self.frames.stop_at = None;
            return Ok(());
        }
        let stop = end.map_or(d, |e| e.div_ceil(c as u64).min(d));
        self.frames.stop_at = Some(self.stop_frame(stop));
        Ok(())
    }

    /// In-flight chunks are dropped and the next read starts with the chunk that holds `pos`. A
    /// position at or past the end reads nothing.
    fn reposition(&mut self, cursor: &mut Cursor, pos: u64) -> Result<()> {
        if self.signed.required.is_required() {
            if pos == 0 && self.frames.next == 0 && self.drive.window.is_empty() {
                return Ok(());
            }
            return Err(super::signed::not_whole());
        }
        let c = self.opener.chunk_size() as u64;
        self.load_index()?;
        let ix = self.index.as_mut().expect("just loaded");
        let d = ix.data_frames(c as usize);
        // The chunk being left is kept: readers such as fsspec's read_block look ahead and come
        // back (seek to a block's start, find a delimiter, seek to its end, find another, seek
        // back to the start), and a chunk kept need not be read and decrypted twice. Chunk 0 is
        // never taken from it, so a read from the first byte still computes the digest.
        let leaving = cursor.take();
        let kept = std::mem::replace(&mut self.kept, leaving);
        let (chunk, reuse) = match kept {
            Some(k) if k.start > 0 && k.holds(pos) => (k.start / c + 1, Some(k)),
            other => {
                if let Some(k) = other {
                    // A kept chunk always has its buffer (and `ix` still borrows self).
                    self.drive.recycle(k.buf);
                }
                ((pos / c).min(d), None)
            }
        };
        let (g, end) = (self.start_frame(chunk.min(d)), self.stop_frame(d));
        let ix = self.index.as_mut().expect("just loaded");
        let at = ix.frame_offset(g, &mut self.frames.inner)?;
        // The frame sought to must be as long as the index says: a consistent index is what
        // places every other range correctly.
        let listed = match chunk < d {
            true => Some(ix.frame_offset(g + 1, &mut self.frames.inner)? - at),
            false => None,
        };
        self.drive.window.clear();
        self.frames.seek_to(g, at)?;
        self.frames.listed = listed.map(|l| (g, l as usize - FRAME_HEADER_LEN));
        self.frames.stop_at = Some(end);
        self.verifier.restart(chunk);
        if let Some(p) = self.pieces.as_mut() {
            p.place(chunk);
        }
        cursor.reset(pos);
        if let Some(k) = reuse {
            self.drive.load(cursor, k);
        }
        self.verified = None;
        Ok(())
    }

    /// Only the whole file claims the whole-file digest, as with a streamed range.
    fn begin_range(&mut self, cursor: &mut Cursor, start: u64, end: u64) -> Result<()> {
        if self.signed.required.is_required() {
            return Err(super::signed::not_whole());
        }
        // A resumed download's range goes on with the digest of its kept part.
        if start > 0 && !self.verifier.is_resumed() {
            self.verifier.drop_digest();
        }
        self.limit_read_ahead(cursor, Some(end))
    }

    /// A range to the end of the data ends as a read to the end does (`end_of_indexed`): what
    /// every chunk from the first allows is checked, the digest included.
    fn end_range(&mut self, _: &mut Cursor, to_end: bool) -> Result<bool> {
        Ok(to_end)
    }
}

impl<R: Read> ContainerChunks<R> {
    /// Writes plaintext bytes `range` of a stream that cannot seek (a pipe) to `w`: frames
    /// before the range are skipped without being decrypted (they still have to be read), frames
    /// after it are not read at all. A range past the end is found only when the stream ends
    /// there, after the bytes before it were written. Must be called before anything was read.
    pub(super) fn range_streaming(
        &mut self,
        cursor: &mut Cursor,
        range: ByteRange,
        w: &mut dyn Write,
    ) -> Result<u64> {
        if self.frames.next != 0 || !self.drive.window.is_empty() || cursor.failed.is_some() {
            return Err(Error::InvalidOption(
                "a streamed range must start on a fresh decryptor".into(),
            ));
        }
        if self.signed.required.is_required() || self.pieces.is_some() {
            // A signer check needs every frame (FORMAT.md §12.4): no frame is skipped. Nor is
            // one of a pieced file, whose pieces' keys come with their markers.
            return crate::pipeline::source::read_through_range(self, cursor, range, w);
        }
        let (start, end) = (range.start, range.end);
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
        cursor.reset(start);
        self.frames.stop_at = end.map(|e| e.div_ceil(c));
        let want = range.len().unwrap_or(u64::MAX);
        let n = copy_limited(self, cursor, w, want)?;
        if n < want {
            // The stream ended, verified, before the range did: its length is now known.
            range.end_within(self.verifier.plaintext)?;
        } else {
            self.check_trailer_after_range(cursor)?;
        }
        Ok(n)
    }

    /// A streamed range that stopped at its last chunk: when that was the last data chunk (the
    /// next frame is padding or the final frame), the rest of the stream is read and checked as
    /// in a full read (FORMAT.md §6), so a damaged trailer is not accepted. Otherwise only the
    /// next frame's 5-byte header was read.
    fn check_trailer_after_range(&mut self, cursor: &mut Cursor) -> Result<()> {
        if self.frames.ended
            || self.frames.stop_at != Some(self.frames.next)
            || !self.drive.window.is_empty()
        {
            return Ok(());
        }
        if self.frames.peek_kind()?.is_data() {
            return Ok(());
        }
        self.frames.stop_at = None;
        while step(self, cursor)? {}
        Ok(())
    }

    /// Reads past one data frame without decrypting it. If the stream has no data frame left
    /// (padding frames, then the final frame), the final frame is authenticated and the plaintext
    /// length returned: the stream ended before the target.
    fn skip_frame(&mut self) -> Result<Option<u64>> {
        loop {
            let (kind, body_len) = self.frames.read_header()?;
            match kind {
                FrameKind::Final => {
                    let mut body = [0u8; FINAL_BODY_LEN];
                    self.frames.read_body(&mut body)?;
                    let fin = self.opener.open_final(self.verifier.frames(), &mut body)?;
                    return Ok(Some(fin.plaintext_len));
                }
                FrameKind::Padding | FrameKind::Signature => {
                    self.frames.skip_body(body_len)?;
                    self.verifier.frame_read(body_len);
                    self.verifier.trailing(kind)?;
                }
                _ => {
                    self.frames.skip_body(body_len)?;
                    self.verifier.frame_read(body_len);
                    self.verifier.skipped();
                    return Ok(None);
                }
            }
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn fin(n: u64) -> FinalFrame {
        FinalFrame {
            plaintext_len: n * 1024,
            chunk_count: n,
            index_digest: [0; 32],
            digest: [0; 32],
        }
    }

    /// The review's case: 2^32 - 1 frames of 1 KiB (a 4 TiB file) must not cost 8 bytes a frame.
    /// The builder is fed every entry, as a real load would, up to 2^22 frames; for the largest
    /// count the sizes follow from the same rule.
    #[test]
    fn index_memory_is_bounded_whatever_the_frame_count() {
        for n in [1u64, 1000, MAX_BLOCKS, MAX_BLOCKS + 1, 1 << 20, 1 << 22] {
            let mut b = IndexBuilder::new(n, 100);
            for _ in 0..n {
                b.push(1040);
            }
            assert_eq!(b.end(), 100 + n * 1045);
            let block = b.block;
            let ix = b.finish(fin(n), 0);
            assert!(ix.starts.len() as u64 <= MAX_BLOCKS + 1, "{n}");
            // Block hashes only where blocks hold more than one frame.
            let hashes = if block > 1 { n.div_ceil(block) } else { 0 };
            assert_eq!(ix.hashes.len() as u64, hashes, "{n}");
            assert!(
                ix.memory() <= (MAX_BLOCKS as usize + 1) * 40,
                "{n}: {}",
                ix.memory()
            );
        }
        let worst = IndexBuilder::new(u32::MAX as u64, 0);
        assert_eq!(worst.block, 1 << 17);
        assert!(worst.starts.capacity() as u64 <= MAX_BLOCKS + 1);
        assert!(
            worst.block * 4 <= 512 << 10,
            "one block read back is at most 512 KiB"
        );
    }

    /// Offsets found through blocks read back are the offsets a full table would hold, and a
    /// block changed after authentication is refused.
    #[test]
    fn offsets_within_blocks_are_exact_and_checked() {
        // Blocks of 4 frames; the last one holds 3, read back for its second and third.
        let n = 3 * MAX_BLOCKS + 7;
        let lens: Vec<u32> = (0..n).map(|i| 17 + (i * 7919 % 1000) as u32).collect();
        let mut b = IndexBuilder::new(n, 77);
        for &l in &lens {
            b.push(l);
        }
        let index: Vec<u8> = lens.iter().flat_map(|l| l.to_le_bytes()).collect();
        let mut ix = b.finish(fin(n), 0);
        assert_eq!(ix.block, 4);
        let mut file = std::io::Cursor::new(index.clone());
        let mut want = 77u64;
        for (i, &l) in lens.iter().enumerate() {
            if i % 997 == 0 || i % 4 == 3 || i + 1 == lens.len() {
                assert_eq!(ix.frame_offset(i as u64, &mut file).unwrap(), want, "{i}");
            }
            want += 5 + u64::from(l);
        }
        assert_eq!(
            ix.frame_offset(n, &mut file).unwrap(),
            want,
            "the final frame"
        );
        let mut changed = index;
        changed[4 * 4 + 1] ^= 1; // block 1, entry 0: offsets of entries 1..3 would move
        ix.cached = None;
        let e = ix
            .frame_offset(6, &mut std::io::Cursor::new(changed))
            .unwrap_err();
        assert!(e.to_string().contains("index changed"), "{e}");
    }
}
