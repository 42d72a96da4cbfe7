//! A pieced container's side of the reader (FORMAT.md §14): which key opens each frame (its
//! piece's, from the marker before it or from the table; the end key for the end frames),
//! where a chunk's frame is, and the piece table checked against what was read.
//!
//! This reader reads **chunk-aligned** pieces: every piece but the last holds whole chunks, so
//! chunk `d` holds plaintext `[d·C, (d+1)·C)` as in a version-1 file and every range and seek
//! keeps its arithmetic; only frame numbers move (a marker before each piece). A shorter piece
//! before the last is refused by name (FORMAT.md §14.3, "What zseal reads").

use std::io::{Read, Seek, SeekFrom};
use std::sync::Arc;

use zeroize::Zeroizing;

use super::opener::{Opener, PieceNonce};
use super::seek::{final_frame_at, index_offsets, SeekIndex};
use crate::error::{Error, Result};
use crate::format::frame::listed_bounds;
use crate::format::piece::{
    PieceEntry, PiecedFooter, PIECED_FOOTER_LEN, PIECE_ID_LEN, TABLE_ENTRY_LEN,
};
use crate::format::{FrameKind, Header, FINAL_FRAME_LEN};

/// The authenticated piece table of a file read by seeking, and where each piece's chunks
/// start.
pub(crate) struct PieceTable {
    entries: Vec<PieceEntry>,
    /// Each piece's first chunk, then the number of data chunks.
    first_chunk: Vec<u64>,
    end_id: [u8; PIECE_ID_LEN],
}

impl PieceTable {
    /// The table of `raw` (`k` entries, not yet authenticated: the caller checks its digest)
    /// for chunks of `chunk_size`, refusing pieces this reader cannot place.
    pub(crate) fn parse(raw: &[u8], chunk_size: usize, end_id: [u8; 16]) -> Result<Self> {
        let mut entries = Vec::with_capacity(raw.len() / TABLE_ENTRY_LEN);
        let mut first_chunk = Vec::with_capacity(entries.capacity() + 1);
        let mut chunks = 0u64;
        for (p, e) in raw.chunks_exact(TABLE_ENTRY_LEN).enumerate() {
            let e = PieceEntry::decode(p as u64, e.try_into().expect("44 bytes"), chunk_size)?;
            first_chunk.push(chunks);
            chunks += u64::from(e.frame_count);
            entries.push(e);
        }
        first_chunk.push(chunks);
        let table = PieceTable {
            entries,
            first_chunk,
            end_id,
        };
        table.check_aligned(chunk_size)?;
        let mut ids: Vec<&[u8; 16]> = table.entries.iter().map(|e| &e.id).collect();
        ids.sort_unstable();
        if ids.windows(2).any(|w| w[0] == w[1]) {
            return Err(Error::Damaged(
                "the piece table lists one piece id twice".into(),
            ));
        }
        Ok(table)
    }

    /// Every piece but the last holds whole chunks (see the module documentation).
    fn check_aligned(&self, chunk_size: usize) -> Result<()> {
        let c = chunk_size as u64;
        let k = self.entries.len();
        match self
            .entries
            .iter()
            .take(k.saturating_sub(1))
            .position(|e| e.plaintext_len != u64::from(e.frame_count) * c)
        {
            Some(p) => Err(Error::Limit(format!(
                "piece {p} of this pieced file holds {} bytes, not whole chunks of {c}: a file \
                 whose pieces end between chunks (a gateway's parts) is read by a later zseal \
                 (FORMAT.md §14.3)",
                self.entries[p].plaintext_len
            ))),
            None => Ok(()),
        }
    }

    /// The number of pieces.
    pub(crate) fn len(&self) -> usize {
        self.entries.len()
    }

    /// Frames of all pieces.
    pub(crate) fn data_frames(&self) -> u64 {
        *self.first_chunk.last().expect("one past the last piece")
    }

    /// Plaintext of all pieces.
    pub(crate) fn plaintext_len(&self) -> u64 {
        self.entries.iter().map(|e| e.plaintext_len).sum()
    }

    /// The piece that holds chunk `chunk` (which must be a data chunk).
    fn piece_of(&self, chunk: u64) -> usize {
        self.first_chunk.partition_point(|&f| f <= chunk) - 1
    }

    /// Where a read from chunk `chunk` starts: at its piece's marker when it is the piece's
    /// first chunk (so that the marker's id is checked against the table, as a read from a pipe
    /// checks it), else at its frame.
    pub(crate) fn start_frame(&self, chunk: u64) -> u64 {
        let g = self.frame_of(chunk);
        match chunk < self.data_frames() && self.first_chunk[self.piece_of(chunk)] == chunk {
            true => g - 1,
            false => g,
        }
    }

    /// The frame number of chunk `chunk`'s frame; for the chunk after the last, the end
    /// marker's (FORMAT.md §14.5).
    pub(crate) fn frame_of(&self, chunk: u64) -> u64 {
        let k = self.entries.len() as u64;
        if chunk >= self.data_frames() {
            return self.data_frames() + k;
        }
        chunk + self.piece_of(chunk) as u64 + 1
    }
}

/// The piece being read.
struct Current {
    id: [u8; 16],
    opener: Arc<Opener>,
    /// The number of its next frame within it.
    j: u64,
    /// Its place in the table, when the table is loaded.
    place: Option<usize>,
}

/// What the reader of a pieced file keeps: the keys, where it stands in the pieces, and, for a
/// read from the first byte, what it saw of each piece, for the table at the end.
pub(crate) struct Pieces {
    payload_key: Zeroizing<[u8; 32]>,
    header: Arc<Header>,
    current: Option<Current>,
    /// The end id and the end frames' opener, from the end marker.
    end: Option<([u8; 16], Arc<Opener>)>,
    /// The next data frame's chunk number.
    pub(crate) next_chunk: u64,
    /// End frames read: the next one's nonce counter, and the final frame's.
    pub(crate) end_frames: u64,
    /// Markers read since the last placement: the next marker's place in the table.
    markers: u64,
    /// The ids of the markers read from the first byte, in order (while no seek intervened):
    /// checked against the table's when it arrives mid-read.
    ids_read: Option<blake3::Hasher>,
    /// The table, once the trailer was read by seeking.
    pub(crate) table: Option<PieceTable>,
    /// For a read from the first byte: each piece released whole, as its table entry, hashed
    /// in order (FORMAT.md §14.4: the markers are checked against the table at the end), and
    /// the piece being released.
    trace: Option<Trace>,
}

struct Trace {
    seen: blake3::Hasher,
    pieces: u64,
    len: u64,
    frames: u32,
}

impl Pieces {
    pub(crate) fn new(header: &Header, payload_key: &[u8; 32]) -> Self {
        Pieces {
            payload_key: Zeroizing::new(*payload_key),
            header: Arc::new(header.clone()),
            current: None,
            end: None,
            next_chunk: 0,
            end_frames: 0,
            markers: 0,
            ids_read: Some(blake3::Hasher::new()),
            table: None,
            trace: Some(Trace {
                seen: blake3::Hasher::new(),
                pieces: 0,
                len: 0,
                frames: 0,
            }),
        }
    }

    /// The table the trailer was read with. A reader that read into the pieces before (from the
    /// first byte) goes on with the table's frame counts and tags from here; the piece it is
    /// in must be the table's at its place.
    pub(crate) fn set_table(&mut self, table: PieceTable) -> Result<()> {
        // The pieces read before the table came are its first ones, in its order: each id names
        // its key, and each piece read whole ended on a frame sealed as its last, so the ids in
        // order are what the table must agree with (FORMAT.md §14.4).
        if let Some(read) = &self.ids_read {
            let mut listed = blake3::Hasher::new();
            for e in table.entries.iter().take(self.markers as usize) {
                listed.update(&e.id);
            }
            if self.markers > table.len() as u64 || listed.finalize() != read.finalize() {
                return Err(Error::Damaged(
                    "the pieces read so far are not those the piece table lists first".into(),
                ));
            }
        }
        if let Some(c) = self.current.as_mut() {
            let p = self.markers as usize - 1;
            if table.entries.get(p).is_none_or(|e| e.id != c.id) {
                return Err(Error::Damaged(
                    "the piece being read is not the one the piece table lists at its place".into(),
                ));
            }
            c.place = Some(p);
        }
        self.table = Some(table);
        Ok(())
    }

    /// The opener of the end frames under the end key of `id`.
    pub(crate) fn end_opener(&self, id: &[u8; 16]) -> Arc<Opener> {
        self.opener(&crate::crypto::end_key(&self.payload_key, id))
    }

    fn opener(&self, key: &crate::crypto::Zeroizing32) -> Arc<Opener> {
        Arc::new(Opener::new(
            Arc::clone(&self.header),
            self.header.cipher,
            &key.0,
        ))
    }

    fn piece_opener(&self, id: &[u8; 16]) -> Arc<Opener> {
        self.opener(&crate::crypto::piece_key(&self.payload_key, id))
    }

    /// A marker was read: the piece `id` begins.
    pub(crate) fn begin_piece(&mut self, frame: u64, id: [u8; 16]) -> Result<()> {
        self.check_between(frame, "a marker")?;
        let place = match &self.table {
            Some(t) => {
                let p = self.markers as usize;
                if t.entries.get(p).is_none_or(|e| e.id != id) {
                    return Err(Error::Damaged(format!(
                        "frame {frame} is the marker of another piece than the table lists at \
                         its place"
                    )));
                }
                Some(p)
            }
            None => None,
        };
        self.markers += 1;
        if let Some(h) = self.ids_read.as_mut() {
            h.update(&id);
        }
        self.current = Some(Current {
            id,
            opener: self.piece_opener(&id),
            j: 0,
            place,
        });
        Ok(())
    }

    /// The end marker was read: the end frames are under the key of `id`.
    pub(crate) fn begin_end(&mut self, frame: u64, id: [u8; 16]) -> Result<()> {
        self.check_between(frame, "the end marker")?;
        if let Some(t) = &self.table {
            if t.end_id != id || self.markers != t.len() as u64 {
                return Err(Error::Damaged(format!(
                    "frame {frame}, the end marker, is not where the authenticated table and \
                     footer place it"
                )));
            }
        }
        self.end = Some((id, self.end_opener(&id)));
        Ok(())
    }

    /// A marker or the end marker comes where the frame before ended its piece, and not after
    /// the end marker.
    fn check_between(&self, frame: u64, what: &str) -> Result<()> {
        if self.end.is_some() {
            return Err(Error::Damaged(format!(
                "frame {frame} is {what} after the end marker"
            )));
        }
        match &self.current {
            Some(c) if c.j == 0 => Err(Error::Damaged(format!(
                "frame {frame} is {what} right after another marker (a piece holds a frame at \
                 least)"
            ))),
            Some(_) => Err(Error::Damaged(format!(
                "frame {frame} is {what} inside a piece, before its last frame"
            ))),
            None => Ok(()),
        }
    }

    /// The next data frame, `frame` in the file: its chunk number, its opener and its nonce.
    /// `ends` says whether the frame after it begins another piece or the end (asked only when
    /// the table is not loaded: a reader of a pipe reads that frame's header first).
    pub(crate) fn next_data(
        &mut self,
        frame: u64,
        ends: impl FnOnce() -> Result<bool>,
    ) -> Result<(u64, Arc<Opener>, PieceNonce)> {
        if self.end.is_some() {
            return Err(Error::Damaged(format!(
                "frame {frame} is a data frame after the end marker"
            )));
        }
        let (frames, tag) = match (&self.current, &self.table) {
            (None, _) => {
                return Err(Error::Damaged(format!(
                    "frame {frame} is a data frame with no marker before it"
                )))
            }
            (Some(Current { place: Some(p), .. }), Some(t)) => {
                let e = &t.entries[*p];
                (Some(e.frame_count), Some(e.last_tag))
            }
            _ => (None, None),
        };
        let c = self.current.as_mut().expect("checked above");
        let last = match frames {
            Some(f) => c.j + 1 == u64::from(f),
            None => ends()?,
        };
        let nonce = PieceNonce {
            counter: c.j,
            last,
            id: c.id,
            tag: tag.filter(|_| last),
        };
        let opener = Arc::clone(&c.opener);
        c.j += 1;
        if last {
            self.current = None;
        }
        let chunk = self.next_chunk;
        self.next_chunk += 1;
        Ok((chunk, opener, nonce))
    }

    /// The opener of the next end frame (a signature or padding frame) and its nonce counter.
    pub(crate) fn next_end_frame(&mut self, frame: u64) -> Result<(u64, Arc<Opener>)> {
        let (_, opener) = self.end.as_ref().ok_or_else(|| {
            Error::Damaged(format!(
                "frame {frame} is a signature or padding frame before the end marker"
            ))
        })?;
        let opener = Arc::clone(opener);
        self.end_frames += 1;
        Ok((self.end_frames - 1, opener))
    }

    /// The final frame's opener and nonce counter (the end frames before it), and the end id.
    pub(crate) fn final_key(&self) -> Result<(u64, Arc<Opener>, [u8; 16])> {
        match &self.end {
            Some((id, opener)) => Ok((self.end_frames, Arc::clone(opener), *id)),
            None => Err(Error::Damaged(
                "the final frame comes with no end marker before it".into(),
            )),
        }
    }

    /// A released chunk of `len` bytes, ending its piece with `piece_end`: kept for the table
    /// check of a read from the first byte.
    pub(crate) fn released(&mut self, len: usize, piece_end: Option<([u8; 16], [u8; 16])>) {
        if let Some(t) = self.trace.as_mut() {
            t.len += len as u64;
            t.frames += 1;
            if let Some((id, last_tag)) = piece_end {
                let entry = PieceEntry {
                    id,
                    plaintext_len: t.len,
                    frame_count: t.frames,
                    last_tag,
                };
                t.seen.update(&entry.encode());
                t.pieces += 1;
                t.len = 0;
                t.frames = 0;
            }
        }
    }

    /// The reader moves to chunk `chunk` (of the loaded table): the piece that holds it, its
    /// place there. What was seen before is no longer a read from the first byte.
    pub(crate) fn place(&mut self, chunk: u64) {
        self.trace = None;
        self.ids_read = None;
        self.end = None;
        self.end_frames = 0;
        self.next_chunk = chunk;
        let Some(t) = &self.table else {
            return;
        };
        if chunk >= t.data_frames() {
            self.current = None;
            self.markers = t.len() as u64;
            return;
        }
        let p = t.piece_of(chunk);
        if t.first_chunk[p] == chunk {
            // The read starts at the piece's marker (`PieceTable::start_frame`).
            self.current = None;
            self.markers = p as u64;
            return;
        }
        let id = t.entries[p].id;
        self.markers = p as u64 + 1;
        self.current = Some(Current {
            id,
            opener: self.piece_opener(&id),
            j: chunk - t.first_chunk[p],
            place: Some(p),
        });
    }

    /// After the final frame of a read from the first byte (`n` frames, `index_digest` over the
    /// index and the table): reads the index, the table and the footer from `r`, checks the
    /// index against the lengths read (`lengths`, their BLAKE3), the table against the pieces
    /// seen, and the footer against both, then the end of the input.
    pub(crate) fn read_trailer(
        &self,
        r: &mut impl Read,
        n: u64,
        index_digest: &[u8; 32],
        lengths: Option<[u8; 32]>,
    ) -> Result<()> {
        let (_, _, end_id) = self.final_key()?;
        let mut index_only = blake3::Hasher::new();
        let mut listed = blake3::Hasher::new();
        super::frames::read_index_raw(r, n, |raw| {
            index_only.update(raw);
            listed.update(raw);
            Ok(())
        })?;
        if lengths.is_some_and(|l| l != *index_only.finalize().as_bytes()) {
            return Err(Error::Damaged(
                "the frame lengths do not match the authenticated index".into(),
            ));
        }
        let k = self.markers;
        let mut table = blake3::Hasher::new();
        let mut entry = [0u8; TABLE_ENTRY_LEN];
        for p in 0..k {
            if crate::io::read_full(r, &mut entry)? != TABLE_ENTRY_LEN {
                return Err(Error::Truncated("in the piece table".into()));
            }
            PieceEntry::decode(p, &entry, self.header.chunk_size())?;
            listed.update(&entry);
            table.update(&entry);
        }
        if listed.finalize().as_bytes() != index_digest {
            return Err(Error::Damaged(
                "the index and piece table do not match their authenticated digest".into(),
            ));
        }
        if let Some(t) = &self.trace {
            if t.pieces != k || t.seen.finalize() != table.finalize() {
                return Err(Error::Damaged(
                    "the pieces read are not those the authenticated piece table lists".into(),
                ));
            }
        }
        let mut f = [0u8; PIECED_FOOTER_LEN];
        if crate::io::read_full(r, &mut f)? != PIECED_FOOTER_LEN {
            return Err(Error::Truncated("in the footer".into()));
        }
        let footer = PiecedFooter::decode(&f)?;
        if footer.chunk_count != n || u64::from(footer.piece_count) != k || footer.end_id != end_id
        {
            return Err(Error::Damaged(
                "the footer does not match the frames and pieces read".into(),
            ));
        }
        if crate::io::read_full(r, &mut [0u8; 1])? != 0 {
            return Err(Error::TrailingData);
        }
        Ok(())
    }
}

/// [`read_trailer`](super::seek::read_trailer) of a pieced file (FORMAT.md §14.3): the footer and the table first (the
/// final frame's nonce counts the end frames, which the table tells), the final frame under
/// the end key, then the index and the table against its digest. The table goes to the
/// reader's pieces, placed where the reader stands.
pub(crate) fn read_pieced_trailer<R: Read + Seek>(
    frames: &mut super::frames::Frames<R>,
    opener: &super::opener::Opener,
    pieces: &mut super::pieces::Pieces,
) -> Result<SeekIndex> {
    let c = opener.chunk_size();
    let header = &opener.header;
    let file_len = frames.inner.seek(SeekFrom::End(0))?;
    let (end, table_bytes) = read_end(&mut frames.inner, frames.first_at, file_len, header)?;
    let n = end.footer.chunk_count;
    let end_opener = pieces.end_opener(&end.footer.end_id);
    let fin = final_frame_at(frames, end.final_at, &end_opener, end.end_frames)?;
    if fin.chunk_count != n
        || fin.plaintext_len != end.table.plaintext_len()
        || fin.plaintext_len.div_ceil(c as u64) != end.table.data_frames()
    {
        return Err(Error::Damaged(format!(
            "the final frame records {} bytes in {} frames; the footer and the piece table \
             say {n} frames and {} bytes",
            fin.plaintext_len,
            fin.chunk_count,
            end.table.plaintext_len()
        )));
    }
    let lengths = listed_bounds(c, header.padded, header.signed, true);
    let index = index_offsets(frames, (fin, end.final_at), lengths, &table_bytes)?;
    pieces.set_table(end.table)?;
    Ok(index)
}

/// What the end of a pieced file read by seeking holds (FORMAT.md §14.3): the footer, the table
/// and where the final frame and the index are, not yet authenticated. Fails on a file too
/// short for what its footer claims.
pub(crate) struct PiecedEnd {
    pub(crate) footer: PiecedFooter,
    pub(crate) table: PieceTable,
    pub(crate) final_at: u64,
    /// The end frames' count: the final frame's nonce counter.
    pub(crate) end_frames: u64,
}

/// Reads the footer and the table of a pieced file from its end (`file_len` bytes, frames from
/// `first_at`); see [`PiecedEnd`].
pub(crate) fn read_end(
    r: &mut (impl Read + Seek),
    first_at: u64,
    file_len: u64,
    header: &Header,
) -> Result<(PiecedEnd, Vec<u8>)> {
    let fixed = first_at + (FINAL_FRAME_LEN + PIECED_FOOTER_LEN) as u64;
    if file_len < fixed {
        return Err(Error::Truncated("before the final frame".into()));
    }
    let mut f = [0u8; PIECED_FOOTER_LEN];
    r.seek(SeekFrom::Start(file_len - PIECED_FOOTER_LEN as u64))?;
    if crate::io::read_full(r, &mut f)? != f.len() {
        return Err(Error::Truncated("in the footer".into()));
    }
    let footer = match PiecedFooter::decode(&f) {
        Ok(footer) => footer,
        Err(e) => {
            // A cut or extended file, told apart as a version-1 file's end is.
            let n = (file_len - first_at).min(crate::format::frame::END_SEARCH_LEN as u64);
            let mut tail = vec![0u8; n as usize];
            r.seek(SeekFrom::Start(file_len - n))?;
            crate::io::read_full(r, &mut tail)?;
            crate::format::frame::footer_at_end(&tail)?;
            return Err(e);
        }
    };
    let k = u64::from(footer.piece_count);
    if footer.trailer_len() > file_len - first_at {
        return Err(Error::Damaged(format!(
            "the footer claims {} frames in {k} pieces, more than the file holds",
            footer.chunk_count
        )));
    }
    let table_at = file_len - PIECED_FOOTER_LEN as u64 - k * TABLE_ENTRY_LEN as u64;
    let mut raw = vec![0u8; (k as usize) * TABLE_ENTRY_LEN];
    r.seek(SeekFrom::Start(table_at))?;
    if crate::io::read_full(r, &mut raw)? != raw.len() {
        return Err(Error::Truncated("in the piece table".into()));
    }
    let table = PieceTable::parse(&raw, header.chunk_size(), footer.end_id)?;
    // n = k + Σf + 1 + m (FORMAT.md §14.3).
    let end_frames = footer
        .chunk_count
        .checked_sub(k + table.data_frames() + 1)
        .filter(|&m| m == 0 || header.padded || header.signed)
        .ok_or_else(|| {
            Error::Damaged(format!(
                "the footer's {} frames do not fit the table's {k} pieces of {} frames",
                footer.chunk_count,
                table.data_frames()
            ))
        })?;
    let final_at = table_at - 4 * footer.chunk_count - FINAL_FRAME_LEN as u64;
    Ok((
        PiecedEnd {
            footer,
            table,
            final_at,
            end_frames,
        },
        raw,
    ))
}

/// Whether a data frame followed by a frame of kind `next` ends its piece, for the reader of
/// a pipe: anything but another data frame (a marker or the end marker, FORMAT.md §14.3; any
/// other kind there fails where it is read).
pub(crate) fn ends_piece(next: FrameKind) -> bool {
    !next.is_data()
}
