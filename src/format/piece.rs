//! Pieces (FORMAT.md §14): the bytes a pieced container adds to version 1's layout — the marker
//! before each piece, the piece table, and the pieced footer. Encodes and decodes only; the keys
//! are `crypto::piece_key` and `crypto::end_key`.

use super::frame::{FrameKind, FRAME_HEADER_LEN};
use super::{END_MAGIC, MAX_CHUNKS};
use crate::error::{Error, Result};

/// A piece id, and an end id: 16 bytes from the CSPRNG (§14.2).
pub const PIECE_ID_LEN: usize = 16;
/// A marker's body: the piece id, in clear (§14.3).
pub const MARKER_BODY_LEN: usize = PIECE_ID_LEN;
/// A whole marker frame.
pub const MARKER_LEN: usize = FRAME_HEADER_LEN + MARKER_BODY_LEN;
/// One entry of the piece table.
pub const TABLE_ENTRY_LEN: usize = 44;
/// The footer of a pieced file.
pub const PIECED_FOOTER_LEN: usize = 36;
/// Most pieces a file may have.
pub const MAX_PIECES: u64 = 1 << 20;

/// The marker frame before a piece: kind `06`, body length 16, the id.
pub fn marker(id: &[u8; PIECE_ID_LEN]) -> [u8; MARKER_LEN] {
    marker_of(FrameKind::Marker, id)
}

/// The end marker after the last piece: kind `07`, body length 16, the end id.
pub fn end_marker(id: &[u8; PIECE_ID_LEN]) -> [u8; MARKER_LEN] {
    marker_of(FrameKind::EndMarker, id)
}

fn marker_of(kind: FrameKind, id: &[u8; PIECE_ID_LEN]) -> [u8; MARKER_LEN] {
    let mut m = [0u8; MARKER_LEN];
    m[..FRAME_HEADER_LEN]
        .copy_from_slice(&super::frame::frame_header(kind, MARKER_BODY_LEN as u32));
    m[FRAME_HEADER_LEN..].copy_from_slice(id);
    m
}

/// One entry of the piece table (§14.3).
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct PieceEntry {
    /// The piece's id, as in its marker.
    pub id: [u8; PIECE_ID_LEN],
    /// Plaintext bytes of the piece, at least 1.
    pub plaintext_len: u64,
    /// Its data frames, `⌈plaintext_len / C⌉`.
    pub frame_count: u32,
    /// The AEAD tag of its last frame (that body's last 16 bytes).
    pub last_tag: [u8; 16],
}

impl PieceEntry {
    /// The entry's 44 bytes.
    pub fn encode(&self) -> [u8; TABLE_ENTRY_LEN] {
        let mut b = [0u8; TABLE_ENTRY_LEN];
        b[..16].copy_from_slice(&self.id);
        b[16..24].copy_from_slice(&self.plaintext_len.to_le_bytes());
        b[24..28].copy_from_slice(&self.frame_count.to_le_bytes());
        b[28..].copy_from_slice(&self.last_tag);
        b
    }

    /// Decodes entry `p` and checks what it can alone: a piece holds at least one byte, and
    /// exactly the frames its length needs in chunks of `chunk_size`.
    pub fn decode(p: u64, b: &[u8; TABLE_ENTRY_LEN], chunk_size: usize) -> Result<Self> {
        let mut id = [0u8; PIECE_ID_LEN];
        id.copy_from_slice(&b[..16]);
        let plaintext_len = u64::from_le_bytes(b[16..24].try_into().expect("8 bytes"));
        let frame_count = u32::from_le_bytes(b[24..28].try_into().expect("4 bytes"));
        let mut last_tag = [0u8; 16];
        last_tag.copy_from_slice(&b[28..]);
        if plaintext_len == 0 || plaintext_len.div_ceil(chunk_size as u64) != u64::from(frame_count)
        {
            return Err(Error::Damaged(format!(
                "piece {p} of the piece table claims {plaintext_len} bytes in {frame_count} \
                 frames, which chunks of {chunk_size} bytes cannot hold"
            )));
        }
        Ok(PieceEntry {
            id,
            plaintext_len,
            frame_count,
            last_tag,
        })
    }
}

/// The footer of a pieced file (§14.3): `n`, `k`, the end id, the end magic.
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct PiecedFooter {
    /// `n`: the frames before the final frame (markers, pieces' frames, end marker, end frames).
    pub chunk_count: u64,
    /// `k`: the pieces.
    pub piece_count: u32,
    /// The end key's id, as in the end marker.
    pub end_id: [u8; PIECE_ID_LEN],
}

impl PiecedFooter {
    /// The footer's 36 bytes.
    pub fn encode(&self) -> [u8; PIECED_FOOTER_LEN] {
        let mut b = [0u8; PIECED_FOOTER_LEN];
        b[..8].copy_from_slice(&self.chunk_count.to_le_bytes());
        b[8..12].copy_from_slice(&self.piece_count.to_le_bytes());
        b[12..28].copy_from_slice(&self.end_id);
        b[28..].copy_from_slice(&END_MAGIC);
        b
    }

    /// Decodes a footer (not yet authenticated: the final frame, under the end key its id
    /// names, proves it) within the format's limits.
    pub fn decode(b: &[u8; PIECED_FOOTER_LEN]) -> Result<Self> {
        if b[28..] != END_MAGIC {
            return Err(Error::Damaged("the footer's end magic is wrong".into()));
        }
        let chunk_count = u64::from_le_bytes(b[..8].try_into().expect("8 bytes"));
        let piece_count = u32::from_le_bytes(b[8..12].try_into().expect("4 bytes"));
        let mut end_id = [0u8; PIECE_ID_LEN];
        end_id.copy_from_slice(&b[12..28]);
        if chunk_count > MAX_CHUNKS || u64::from(piece_count) > MAX_PIECES {
            return Err(Error::Damaged(format!(
                "the footer claims {chunk_count} frames in {piece_count} pieces, over the limits"
            )));
        }
        if u64::from(piece_count) > chunk_count {
            return Err(Error::Damaged(format!(
                "the footer claims {piece_count} pieces in {chunk_count} frames"
            )));
        }
        Ok(PiecedFooter {
            chunk_count,
            piece_count,
            end_id,
        })
    }

    /// Bytes from the final frame's start to the file's end: the final frame, the index, the
    /// table and this footer.
    pub fn trailer_len(&self) -> u64 {
        super::FINAL_FRAME_LEN as u64
            + 4 * self.chunk_count
            + TABLE_ENTRY_LEN as u64 * u64::from(self.piece_count)
            + PIECED_FOOTER_LEN as u64
    }
}

/// BLAKE3 of pieces (hash `03`, §14.5): the digest of the pieces' lengths and BLAKE3 digests,
/// in order.
pub fn digest_of_pieces<'a>(pieces: impl IntoIterator<Item = (u64, &'a [u8; 32])>) -> [u8; 32] {
    let mut h = blake3::Hasher::new();
    for (len, digest) in pieces {
        h.update(&len.to_le_bytes());
        h.update(digest);
    }
    *h.finalize().as_bytes()
}

#[cfg(test)]
mod tests {
    use super::*;

    /// The table entry and the footer at their byte offsets, and their checks at the edges.
    #[test]
    fn entries_and_footers_round_trip_and_are_checked() {
        let e = PieceEntry {
            id: [7; 16],
            plaintext_len: 2049,
            frame_count: 3,
            last_tag: [9; 16],
        };
        let b = e.encode();
        assert_eq!(&b[16..24], &2049u64.to_le_bytes());
        assert_eq!(&b[24..28], &3u32.to_le_bytes());
        assert_eq!(PieceEntry::decode(0, &b, 1024).unwrap(), e);
        for (len, frames) in [(0u64, 0u32), (2049, 2), (2049, 4), (1024, 2)] {
            let bad = PieceEntry {
                plaintext_len: len,
                frame_count: frames,
                ..e.clone()
            };
            assert!(
                PieceEntry::decode(4, &bad.encode(), 1024).is_err(),
                "{len} {frames}"
            );
        }
        let f = PiecedFooter {
            chunk_count: 12,
            piece_count: 3,
            end_id: [1; 16],
        };
        let fb = f.encode();
        assert_eq!(&fb[28..], b"ZSEALEND");
        assert_eq!(PiecedFooter::decode(&fb).unwrap(), f);
        assert_eq!(f.trailer_len(), 101 + 48 + 132 + 36);
        let too_many = PiecedFooter {
            piece_count: 13,
            ..f.clone()
        };
        assert!(PiecedFooter::decode(&too_many.encode()).is_err());
        let mut bad_magic = fb;
        bad_magic[30] ^= 1;
        assert!(PiecedFooter::decode(&bad_magic).is_err());
        assert_eq!(
            marker(&[5; 16]),
            [6, 16, 0, 0, 0, 5, 5, 5, 5, 5, 5, 5, 5, 5, 5, 5, 5, 5, 5, 5, 5]
        );
    }
}
