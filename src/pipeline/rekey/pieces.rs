//! The rotation of a pieced file (FORMAT.md §14.4): every frame opened under its old piece or
//! end key and sealed again at its place under the key of the same id derived from the new
//! payload key; the markers copied; the old table read after the final frame and checked
//! against the pieces re-sealed and the old index digest, and written again with the new last
//! tags, under a new index digest in the new final frame.
//!
//! A rotation can stop after any frame and go on later over the same input (a resumable
//! upload makes its kept parts again, then goes on, docs/OBJECTS.md §7): what it knows of the
//! piece it is in, the pieces behind it and a frame header read ahead lives in its [`State`].

use std::io::{Read, Write};
use std::sync::{Arc, Mutex};

use zeroize::Zeroizing;

use crate::error::{Error, Result};
use crate::format::frame::{frame_header, FINAL_PLAIN_LEN};
use crate::format::piece::{
    PieceEntry, PiecedFooter, MARKER_BODY_LEN, PIECED_FOOTER_LEN, PIECE_ID_LEN, TABLE_ENTRY_LEN,
};
use crate::format::{FinalFrame, FrameKind, Header, FRAME_HEADER_LEN};
use crate::pipeline::decrypt::frames::{read_index_raw, Frames};
use crate::pipeline::decrypt::opener::Opener;
use crate::pipeline::decrypt::pieces::PieceTable;
use crate::pipeline::encrypt::Sealer;

/// The tag's length at the end of every frame's body.
const TAG_LEN: usize = 16;

/// A pieced file's rotation: the old header, both payload keys, and how far it has come.
pub(super) struct PiecedRotation {
    header: Arc<Header>,
    old_key: Zeroizing<[u8; 32]>,
    new_key: Zeroizing<[u8; 32]>,
    state: Mutex<State>,
}

/// How far a rotation has come.
#[derive(Default)]
struct State {
    /// The header of the next frame, read ahead to learn whether a data frame ends its piece.
    peeked: Option<(FrameKind, usize)>,
    /// The piece being rotated, and the end once its marker was read.
    piece: Option<Piece>,
    end: Option<End>,
    /// Every piece rotated whole, in order.
    done: Vec<Rotated>,
}

/// A piece under way: its id, its next frame's number in it, its keys.
struct Piece {
    id: [u8; PIECE_ID_LEN],
    j: u64,
    opener: Opener,
    sealer: Sealer,
    /// Its last frame was rotated (sealed with `last` set).
    ended: bool,
    /// The last frame's old and new tags.
    tags: ([u8; TAG_LEN], [u8; TAG_LEN]),
}

/// The end frames under way: their keys and the next one's number.
struct End {
    id: [u8; PIECE_ID_LEN],
    count: u64,
    opener: Opener,
    sealer: Sealer,
}

/// What the table says of a piece rotated: its id, its frames, its old and new last tags.
struct Rotated {
    id: [u8; PIECE_ID_LEN],
    frames: u32,
    tags: ([u8; TAG_LEN], [u8; TAG_LEN]),
}

impl PiecedRotation {
    pub(super) fn new(old: &Header, old_key: &[u8; 32], new_key: &[u8; 32]) -> Self {
        PiecedRotation {
            header: Arc::new(old.clone()),
            old_key: Zeroizing::new(*old_key),
            new_key: Zeroizing::new(*new_key),
            state: Mutex::new(State::default()),
        }
    }

    /// The opener under the old key and the sealer under the new one of the key `derive` makes
    /// of a payload key.
    fn keys(&self, derive: impl Fn(&[u8; 32]) -> crate::crypto::Zeroizing32) -> (Opener, Sealer) {
        let h = &self.header;
        let opener = Opener::new(Arc::clone(h), h.cipher, &derive(&self.old_key).0);
        let sealer = Sealer::new(
            h.cipher,
            &derive(&self.new_key).0,
            h.codec,
            h.hash,
            h.chunk_log2,
        );
        (opener, sealer)
    }

    /// Rotates the frames from where `frames` stands (where the last run stopped) into `out`:
    /// up to frame `stop` (not included) when given, else through the final frame, the index,
    /// the table and the footer. Returns the bytes written.
    pub(super) fn run<R: Read>(
        &self,
        frames: &mut Frames<R>,
        stop: Option<u64>,
        out: &mut impl Write,
    ) -> Result<u64> {
        let mut st = self.state.lock().unwrap_or_else(|p| p.into_inner());
        frames.give_peeked(st.peeked.take());
        let chunk = self.header.chunk_size();
        let sig = *crate::format::frame::body_len_bounds(FrameKind::Signature, chunk).end();
        let probe = Opener::new(Arc::clone(&self.header), self.header.cipher, &[0u8; 32]);
        let mut buf = vec![0u8; FRAME_HEADER_LEN + probe.buffer_len().max(sig)];
        let mut written = 0u64;
        loop {
            let index = frames.next;
            if stop == Some(index) {
                st.peeked = frames.take_peeked();
                return Ok(written);
            }
            let (kind, body_len) = frames.read_header()?;
            frames.read_body(&mut buf[FRAME_HEADER_LEN..FRAME_HEADER_LEN + body_len])?;
            let total = match kind {
                FrameKind::Marker | FrameKind::EndMarker => {
                    self.marker(&mut st, index, kind, &buf[FRAME_HEADER_LEN..][..body_len])?;
                    buf[..FRAME_HEADER_LEN].copy_from_slice(&frame_header(kind, body_len as u32));
                    FRAME_HEADER_LEN + body_len
                }
                FrameKind::Final => {
                    let fin = self.open_final(&mut st, index, &mut buf, body_len)?;
                    let n = frames.next - 1;
                    return Ok(written + self.end(&mut st, (frames, n), fin, &mut buf, out)?);
                }
                FrameKind::Padding | FrameKind::Signature => {
                    let end = st.end.as_mut().ok_or_else(|| {
                        Error::Damaged(format!(
                            "frame {index} is a signature or padding frame before the end marker"
                        ))
                    })?;
                    let body = &mut buf[FRAME_HEADER_LEN..FRAME_HEADER_LEN + body_len];
                    let len = end.opener.open_body(end.count, false, kind, body)?;
                    let total = end.sealer.seal_into(&mut buf, end.count, false, kind, len);
                    end.count += 1;
                    total
                }
                _ => {
                    // A data frame ends its piece when what follows is not another one.
                    let last = !frames.peek_kind()?.is_data();
                    let p = match st.piece.as_mut() {
                        Some(p) if !p.ended => p,
                        _ => {
                            return Err(Error::Damaged(format!(
                                "frame {index} is a data frame with no marker before it"
                            )))
                        }
                    };
                    let body = &mut buf[FRAME_HEADER_LEN..FRAME_HEADER_LEN + body_len];
                    let old_tag = tag_of(body);
                    let len = p.opener.open_body(p.j, last, kind, body)?;
                    let total = p.sealer.seal_into(&mut buf, p.j, last, kind, len);
                    p.j += 1;
                    if last {
                        p.ended = true;
                        p.tags = (old_tag, tag_of(&buf[..total]));
                    }
                    total
                }
            };
            out.write_all(&buf[..total])?;
            written += total as u64;
        }
    }

    /// A marker (`kind`) with its id in `body`: the piece before it was rotated whole, and the
    /// next piece, or the end, begins.
    fn marker(&self, st: &mut State, index: u64, kind: FrameKind, body: &[u8]) -> Result<()> {
        let id: [u8; PIECE_ID_LEN] = body.try_into().map_err(|_| {
            Error::Damaged(format!(
                "frame {index}, a marker, is not {MARKER_BODY_LEN} bytes"
            ))
        })?;
        if st.end.is_some() {
            return Err(Error::Damaged(format!(
                "frame {index} is a marker after the end marker"
            )));
        }
        if let Some(p) = st.piece.take() {
            if !p.ended {
                return Err(Error::Damaged(format!(
                    "frame {index} is a marker inside a piece, before its last frame"
                )));
            }
            st.done.push(Rotated {
                id: p.id,
                frames: p.j as u32,
                tags: p.tags,
            });
        }
        match kind {
            FrameKind::Marker => {
                let (opener, sealer) = self.keys(|k| crate::crypto::piece_key(k, &id));
                st.piece = Some(Piece {
                    id,
                    j: 0,
                    opener,
                    sealer,
                    ended: false,
                    tags: Default::default(),
                });
            }
            _ => {
                let (opener, sealer) = self.keys(|k| crate::crypto::end_key(k, &id));
                st.end = Some(End {
                    id,
                    count: 0,
                    opener,
                    sealer,
                });
            }
        }
        Ok(())
    }

    /// Opens the final frame (`body_len` bytes in `buf`) under the old end key.
    fn open_final(
        &self,
        st: &mut State,
        index: u64,
        buf: &mut [u8],
        body_len: usize,
    ) -> Result<FinalFrame> {
        let end = st.end.as_ref().ok_or_else(|| {
            Error::Damaged(format!(
                "frame {index}, the final frame, comes with no end marker before it"
            ))
        })?;
        let body = &mut buf[FRAME_HEADER_LEN..FRAME_HEADER_LEN + body_len];
        let len = end
            .opener
            .open_body(end.count, true, FrameKind::Final, body)?;
        FinalFrame::decode(&body[..len])
    }

    /// After the final frame `fin` (`n` frames before it): reads the old index, table and
    /// footer and checks them against `fin` and the pieces rotated, then writes the new final
    /// frame, the index, the new table and the footer. Returns the bytes written.
    fn end<R: Read>(
        &self,
        st: &mut State,
        (frames, n): (&mut Frames<R>, u64),
        fin: FinalFrame,
        buf: &mut [u8],
        out: &mut impl Write,
    ) -> Result<u64> {
        let end = st.end.take().expect("the final frame was opened under it");
        if fin.chunk_count != n {
            return Err(Error::Damaged(format!(
                "the final frame records {} frames, but {n} were read",
                fin.chunk_count
            )));
        }
        let r = &mut frames.inner;
        let mut index = Vec::new();
        read_index_raw(r, n, |raw| {
            index.extend_from_slice(raw);
            Ok(())
        })?;
        let k = st.done.len();
        let mut table = vec![0u8; k * TABLE_ENTRY_LEN];
        if crate::io::read_full(r, &mut table)? != table.len() {
            return Err(Error::Truncated("in the piece table".into()));
        }
        let old_digest = blake3::Hasher::new()
            .update(&index)
            .update(&table)
            .finalize();
        if old_digest.as_bytes() != &fin.index_digest {
            return Err(Error::Damaged(
                "the index and piece table do not match their authenticated digest".into(),
            ));
        }
        let chunk = self.header.chunk_size();
        let listed = PieceTable::parse(&table, chunk, end.id)?;
        if listed.plaintext_len() != fin.plaintext_len {
            return Err(Error::Damaged(
                "the piece table's lengths do not add up to the final frame's".into(),
            ));
        }
        // The table again, each piece's last tag the new one, once the old one is the tag of
        // the frame rotated as its last.
        for (p, (e, r)) in table
            .chunks_exact_mut(TABLE_ENTRY_LEN)
            .zip(&st.done)
            .enumerate()
        {
            let raw: &[u8; TABLE_ENTRY_LEN] = (&*e).try_into().expect("44 bytes");
            let mut entry = PieceEntry::decode(p as u64, raw, chunk)?;
            if (entry.id, entry.frame_count, entry.last_tag) != (r.id, r.frames, r.tags.0) {
                return Err(Error::Damaged(format!(
                    "piece {p} read is not the one the authenticated piece table lists"
                )));
            }
            entry.last_tag = r.tags.1;
            e.copy_from_slice(&entry.encode());
        }
        let mut footer = [0u8; PIECED_FOOTER_LEN];
        if crate::io::read_full(r, &mut footer)? != PIECED_FOOTER_LEN {
            return Err(Error::Truncated("in the footer".into()));
        }
        let f = PiecedFooter::decode(&footer)?;
        if f.chunk_count != n || f.piece_count as usize != k || f.end_id != end.id {
            return Err(Error::Damaged(
                "the footer does not match the frames and pieces read".into(),
            ));
        }
        if crate::io::read_full(r, &mut [0u8; 1])? != 0 {
            return Err(Error::TrailingData);
        }
        let new_fin = FinalFrame {
            index_digest: *blake3::Hasher::new()
                .update(&index)
                .update(&table)
                .finalize()
                .as_bytes(),
            ..fin
        };
        buf[FRAME_HEADER_LEN..FRAME_HEADER_LEN + FINAL_PLAIN_LEN]
            .copy_from_slice(&new_fin.encode());
        let total = end
            .sealer
            .seal_into(buf, end.count, true, FrameKind::Final, FINAL_PLAIN_LEN);
        out.write_all(&buf[..total])?;
        out.write_all(&index)?;
        out.write_all(&table)?;
        out.write_all(&footer)?;
        Ok((total + index.len() + table.len() + footer.len()) as u64)
    }
}

/// The tag at the end of a frame (or of its body).
fn tag_of(b: &[u8]) -> [u8; TAG_LEN] {
    let at = b.len().saturating_sub(TAG_LEN);
    b[at..].try_into().unwrap_or_default()
}
