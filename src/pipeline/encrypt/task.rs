//! What a task of a split seal (FORMAT.md §11) holds and returns: the [`TaskKey`] it seals
//! with, and the [`RangeResult`] the coordinator's trailer needs, each with its bytes for
//! another process.

use zeroize::Zeroizing;

use super::{PiecePlan, PieceRef, Sealer};
use crate::codec::Codec;
use crate::crypto::aead::Cipher;
use crate::error::{Error, Result};
use crate::format::{self, FRAME_HEADER_LEN};
use crate::hash::HashAlg;

/// What a task needs to seal chunks of one container: the payload key and the header's
/// algorithms. Not the file key: a task can seal and open this file's frames, not unwrap or
/// rewrap its key or forge its header (FORMAT.md §11.2). Its `Debug` shows no key.
#[derive(Clone)]
pub struct TaskKey {
    pub(super) payload_key: Zeroizing<[u8; 32]>,
    pub(super) cipher: Cipher,
    pub(super) codec: Codec,
    pub(super) hash: HashAlg,
    pub(super) chunk_log2: u8,
    pub(super) padded: bool,
    /// Ranges are pieces under keys of their own (FORMAT.md §14): [`seal_piece`](super::seal_piece).
    pub(super) pieced: bool,
}

impl std::fmt::Debug for TaskKey {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.debug_struct("TaskKey")
            .field("chunk_size", &(1u64 << self.chunk_log2))
            .finish_non_exhaustive()
    }
}

/// The first bytes of a serialized [`TaskKey`].
const TASK_KEY_MAGIC: &[u8; 8] = b"zsTASK\x00\x01";
const TASK_KEY_LEN: usize = TASK_KEY_MAGIC.len() + 6 + 32;

impl TaskKey {
    /// The key as bytes, to hand to a task in another process (wiped when dropped).
    pub fn to_bytes(&self) -> Zeroizing<Vec<u8>> {
        let mut b = Zeroizing::new(Vec::with_capacity(TASK_KEY_LEN));
        b.extend_from_slice(TASK_KEY_MAGIC);
        b.extend_from_slice(&[
            self.cipher.id(),
            self.codec.id(),
            self.codec.level_byte() as u8,
            self.hash.id(),
            self.chunk_log2,
            u8::from(self.padded) | u8::from(self.pieced) << 1,
        ]);
        b.extend_from_slice(&*self.payload_key);
        b
    }

    /// A key from [`TaskKey::to_bytes`].
    pub fn from_bytes(b: &[u8]) -> Result<Self> {
        let bad = || Error::InvalidOption("not a zseal task key".into());
        if b.len() != TASK_KEY_LEN || !b.starts_with(TASK_KEY_MAGIC) {
            return Err(bad());
        }
        let f = &b[TASK_KEY_MAGIC.len()..];
        let chunk_log2 = f[4];
        format::chunk_log2_of(1usize.checked_shl(chunk_log2.into()).ok_or_else(bad)?)?;
        let mut payload_key = Zeroizing::new([0u8; 32]);
        payload_key.copy_from_slice(&f[6..]);
        Ok(TaskKey {
            payload_key,
            cipher: Cipher::from_id(f[0])?,
            codec: Codec::from_header(f[1], f[2] as i8)?,
            hash: HashAlg::from_id(f[3])?,
            chunk_log2,
            padded: match f[5] {
                0..=3 => f[5] & 1 != 0,
                _ => return Err(bad()),
            },
            pieced: f[5] & 2 != 0,
        })
    }

    /// True when this key seals the frames of a file with `header`'s algorithms, chunk size
    /// and padding (a resumed upload checks its journal's key against its header).
    pub(crate) fn fits(&self, header: &crate::format::Header) -> bool {
        (
            self.cipher,
            self.codec,
            self.hash,
            self.chunk_log2,
            self.padded,
            self.pieced,
        ) == (
            header.cipher,
            header.codec,
            header.hash,
            header.chunk_log2,
            header.padded,
            header.pieced,
        )
    }

    /// The chunk size: every range but the last is a whole number of chunks.
    pub fn chunk_size(&self) -> usize {
        1 << self.chunk_log2
    }

    pub(super) fn sealer(&self) -> Sealer {
        Sealer::new(
            self.cipher,
            &self.payload_key,
            self.codec,
            self.hash,
            self.chunk_log2,
        )
        .with_padding(self.padded)
    }

    /// The plan of `chunks` chunks from `first`, `per` a piece, under `ids` (FORMAT.md §14.2).
    pub(super) fn piece_plan(
        &self,
        first: u64,
        chunks: u64,
        per: u64,
        ids: Vec<[u8; 16]>,
    ) -> PiecePlan {
        PiecePlan::new((&self.payload_key, self.cipher), first, chunks, per, ids)
    }

    /// The sealer of a pieced file's end frames, under the end key of `end_id` (FORMAT.md
    /// §14.3).
    pub(super) fn end_sealer(&self, end_id: &[u8; 16]) -> Sealer {
        let key = crate::crypto::end_key(&self.payload_key, end_id);
        Sealer::new(self.cipher, &key.0, self.codec, self.hash, self.chunk_log2)
            .with_padding(self.padded)
    }

    /// True for the key of a pieced file, whose ranges are pieces ([`seal_piece`](super::seal_piece)).
    pub fn is_pieced(&self) -> bool {
        self.pieced
    }
}

/// What a task returns: where its range starts, its plaintext length, and per chunk the frame's
/// body length and the BLAKE3 chaining value (chunk 0 also its root hash). No secret.
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct RangeResult {
    /// Number of the range's first chunk.
    pub first_chunk: u64,
    /// Plaintext bytes sealed.
    pub plaintext_len: u64,
    /// Body length of each frame, in order (the range's index entries).
    pub body_lens: Vec<u32>,
    /// Each chunk's BLAKE3 chaining value (empty without a BLAKE3 digest).
    pub chaining_values: Vec<[u8; 32]>,
    /// For a range starting at chunk 0: chunk 0's root hash (the digest of a one-chunk file).
    pub root_if_alone: Option<[u8; 32]>,
    /// The range is a piece of a pieced file ([`seal_piece`](super::seal_piece)): its marker comes before its
    /// frames.
    pub piece: Option<PieceRef>,
}

const RESULT_MAGIC: &[u8; 8] = b"zsRANGE\x01";
/// A result that is a piece: the version-1 bytes, then the piece's id and last tag.
const PIECE_RESULT_MAGIC: &[u8; 8] = b"zsRANGE\x02";

impl RangeResult {
    /// The result as bytes, for a task in another process to return.
    pub fn to_bytes(&self) -> Vec<u8> {
        let n = self.body_lens.len();
        let mut b = Vec::with_capacity(8 + 8 + 8 + 8 + 8 + 33 + n * 36 + 32);
        b.extend_from_slice(match self.piece {
            Some(_) => PIECE_RESULT_MAGIC,
            None => RESULT_MAGIC,
        });
        b.extend_from_slice(&self.first_chunk.to_le_bytes());
        b.extend_from_slice(&self.plaintext_len.to_le_bytes());
        b.extend_from_slice(&(n as u64).to_le_bytes());
        b.extend_from_slice(&(self.chaining_values.len() as u64).to_le_bytes());
        match &self.root_if_alone {
            Some(r) => {
                b.push(1);
                b.extend_from_slice(r);
            }
            None => b.push(0),
        }
        for l in &self.body_lens {
            b.extend_from_slice(&l.to_le_bytes());
        }
        for cv in &self.chaining_values {
            b.extend_from_slice(cv);
        }
        if let Some(p) = &self.piece {
            b.extend_from_slice(&p.id);
            b.extend_from_slice(&p.last_tag);
        }
        b
    }

    /// The bytes the task wrote: its frames, each a header and its body. What a part file
    /// holding this range must measure before it is joined.
    pub fn stored_len(&self) -> u64 {
        let marker = match self.piece {
            Some(_) => format::piece::MARKER_LEN as u64,
            None => 0,
        };
        marker
            + self
                .body_lens
                .iter()
                .map(|&l| FRAME_HEADER_LEN as u64 + u64::from(l))
                .sum::<u64>()
    }

    /// A result from [`RangeResult::to_bytes`].
    pub fn from_bytes(b: &[u8]) -> Result<Self> {
        let bad = || Error::InvalidOption("not a zseal range result".into());
        let (mut r, pieced) = match b.strip_prefix(PIECE_RESULT_MAGIC.as_slice()) {
            Some(r) => (r, true),
            None => (
                b.strip_prefix(RESULT_MAGIC.as_slice()).ok_or_else(bad)?,
                false,
            ),
        };
        let piece = match pieced {
            true => {
                let (rest, tail) = r.split_last_chunk::<32>().ok_or_else(bad)?;
                r = rest;
                let (id, tag) = tail.split_at(16);
                Some(PieceRef {
                    id: id.try_into().expect("16 bytes"),
                    last_tag: tag.try_into().expect("16 bytes"),
                })
            }
            false => None,
        };
        let u64_of = |r: &mut &[u8]| -> Result<u64> {
            let (h, t) = r.split_first_chunk::<8>().ok_or_else(bad)?;
            *r = t;
            Ok(u64::from_le_bytes(*h))
        };
        let first_chunk = u64_of(&mut r)?;
        let plaintext_len = u64_of(&mut r)?;
        let n = u64_of(&mut r)?;
        let cvs = u64_of(&mut r)?;
        let (&flag, rest) = r.split_first().ok_or_else(bad)?;
        r = rest;
        let root_if_alone = match flag {
            0 => None,
            1 => {
                let (h, t) = r.split_first_chunk::<32>().ok_or_else(bad)?;
                r = t;
                Some(*h)
            }
            _ => return Err(bad()),
        };
        if n > format::MAX_CHUNKS || cvs > n || r.len() as u64 != n * 4 + cvs * 32 {
            return Err(bad());
        }
        let (lens, cv_bytes) = r.split_at(n as usize * 4);
        Ok(RangeResult {
            first_chunk,
            plaintext_len,
            body_lens: lens
                .chunks_exact(4)
                .map(|c| u32::from_le_bytes([c[0], c[1], c[2], c[3]]))
                .collect(),
            chaining_values: cv_bytes
                .chunks_exact(32)
                .map(|c| c.try_into().expect("32-byte pieces"))
                .collect(),
            root_if_alone,
            piece,
        })
    }
}
