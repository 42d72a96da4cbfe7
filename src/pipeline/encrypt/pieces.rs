//! The pieces of a pieced file (FORMAT.md §14.2), as the writer makes them: where each chunk
//! goes and under which key ([`PiecePlan`]), what the trailer lists of a piece ([`PieceRef`]),
//! and the writers of one piece or a run of them ([`seal_piece`], [`seal_pieces`]), each a range
//! writer of the split seal ([`super::split`]) whose sealer follows the plan.

use std::collections::VecDeque;
use std::io::Write;
use std::sync::{Arc, Mutex};

use rand_core::{CryptoRng, RngCore};
use zeroize::Zeroizing;

use super::split::{seal_range_in, RangeWriter};
use super::{AdaptPlan, TaskKey};
use crate::crypto::aead::{Cipher, PayloadCipher};
use crate::error::{Error, Result};
use crate::format;
use crate::pipeline::threads::Threads;

/// What makes a range a piece (FORMAT.md §14.2): its id and its last frame's tag, which the
/// piece table lists. No secret.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub struct PieceRef {
    /// The piece's id, in its marker.
    pub id: [u8; 16],
    /// The AEAD tag of its last frame.
    pub last_tag: [u8; 16],
}

/// Where the chunks of a run of pieces go (FORMAT.md §14.2): from chunk `first` to `last`,
/// `per` chunks a piece (the last piece may hold fewer), each under the key of its own id.
pub(crate) struct PiecePlan {
    payload_key: Zeroizing<[u8; 32]>,
    cipher: Cipher,
    first: u64,
    per: u64,
    last: u64,
    ids: Vec<[u8; 16]>,
    /// The ciphers of the pieces sealed last, by piece: a piece's key is derived once, not for
    /// each of its chunks. Chunks are sealed nearly in order, so a few pieces cover every
    /// worker; older ones are dropped, so memory does not grow with the run.
    recent: Mutex<VecDeque<(usize, Arc<PayloadCipher>)>>,
}

/// Pieces whose ciphers [`PiecePlan`] keeps: more than the chunks in flight can straddle.
const RECENT_PIECES: usize = 4;

impl PiecePlan {
    /// The plan of `chunks` chunks from `first`, `per` a piece, under `ids` (one a piece, fresh
    /// from a CSPRNG).
    pub(super) fn new(
        (payload_key, cipher): (&[u8; 32], Cipher),
        first: u64,
        chunks: u64,
        per: u64,
        ids: Vec<[u8; 16]>,
    ) -> Self {
        debug_assert_eq!(ids.len() as u64, chunks.div_ceil(per));
        PiecePlan {
            payload_key: Zeroizing::new(*payload_key),
            cipher,
            first,
            per,
            last: first + chunks - 1,
            ids,
            recent: Mutex::new(VecDeque::with_capacity(RECENT_PIECES)),
        }
    }

    /// Chunk `index`'s piece, its number within the piece, and whether it ends the piece.
    pub(super) fn place(&self, index: u64) -> (usize, u64, bool) {
        let k = index - self.first;
        let counter = k % self.per;
        (
            (k / self.per) as usize,
            counter,
            counter + 1 == self.per || index == self.last,
        )
    }

    /// True when chunk `index` is one of the plan's.
    pub(super) fn holds(&self, index: u64) -> bool {
        (self.first..=self.last).contains(&index)
    }

    /// Piece `p`'s id.
    pub(super) fn id(&self, p: usize) -> [u8; 16] {
        self.ids[p]
    }

    /// How many pieces, and the chunks of each but the last.
    pub(super) fn shape(&self) -> (usize, u64) {
        (self.ids.len(), self.per)
    }

    /// Piece `p`'s cipher, under its key: derived by the first of its chunks to be sealed.
    pub(super) fn cipher_of(&self, p: usize) -> Arc<PayloadCipher> {
        let mut recent = self.recent.lock().unwrap_or_else(|e| e.into_inner());
        if let Some((_, c)) = recent.iter().find(|(q, _)| *q == p) {
            return Arc::clone(c);
        }
        let key = crate::crypto::piece_key(&self.payload_key, &self.ids[p]);
        let c = Arc::new(PayloadCipher::new(self.cipher, &key.0));
        if recent.len() == RECENT_PIECES {
            recent.pop_front();
        }
        recent.push_back((p, Arc::clone(&c)));
        c
    }
}

/// Starts sealing one piece of a pieced file (FORMAT.md §14.2): `len` plaintext bytes (at least
/// one) that are the file's chunks from `first_chunk`, under a fresh id of its own, so that no
/// other piece, another attempt at the same bytes included, shares its key. Writes the piece's
/// marker, then its frames, as its plaintext is written; call [`ChunkWriter::finish_range`](crate::pipeline::ChunkWriter::finish_range)
/// after exactly `len` bytes. Every piece but the last holds whole chunks (the trailer refuses
/// others).
pub fn seal_piece<W: Write>(
    key: &TaskKey,
    first_chunk: u64,
    len: u64,
    w: W,
    threads: Threads,
) -> Result<RangeWriter<W>> {
    seal_piece_with_rng(key, first_chunk, len, w, threads, &mut rand_core::OsRng)
}

/// [`seal_piece`], drawing the piece's id from `rng` (tests and vectors; production code passes
/// a CSPRNG, as two pieces under one id would share a key).
pub fn seal_piece_with_rng<W: Write>(
    key: &TaskKey,
    first_chunk: u64,
    len: u64,
    w: W,
    threads: Threads,
    rng: &mut (impl RngCore + CryptoRng),
) -> Result<RangeWriter<W>> {
    let chunks = len.div_ceil(key.chunk_size() as u64).max(1);
    seal_pieces_with_rng(key, first_chunk, len, chunks, w, threads, rng)
}

/// Starts sealing `len` plaintext bytes (at least one), the file's chunks from `first_chunk`,
/// as a run of pieces of `piece_chunks` chunks each (the last may hold fewer), each under a
/// fresh id: one writer, so the workers stay busy across the pieces' seams. Call
/// [`ChunkWriter::finish_pieces`](crate::pipeline::ChunkWriter::finish_pieces) after exactly `len` bytes for each piece's result, in order.
/// A resumable upload cuts its parts at these pieces' ends (FORMAT.md §14.6).
pub fn seal_pieces<W: Write>(
    key: &TaskKey,
    first_chunk: u64,
    len: u64,
    piece_chunks: u64,
    w: W,
    threads: Threads,
) -> Result<RangeWriter<W>> {
    seal_pieces_with_rng(
        key,
        first_chunk,
        len,
        piece_chunks,
        w,
        threads,
        &mut rand_core::OsRng,
    )
}

/// [`seal_pieces`], drawing the ids from `rng` (tests; production code passes a CSPRNG).
pub fn seal_pieces_with_rng<W: Write>(
    key: &TaskKey,
    first_chunk: u64,
    len: u64,
    piece_chunks: u64,
    w: W,
    threads: Threads,
    rng: &mut (impl RngCore + CryptoRng),
) -> Result<RangeWriter<W>> {
    let run = (first_chunk, len, piece_chunks);
    seal_pieces_in(key, run, w, threads, Default::default(), rng)
}

/// [`seal_pieces`] with an adaptive level between `plan`'s bounds (a
/// [`SplitSeal::sequential`](super::SplitSeal::sequential) key), following this run's output:
/// a resumable upload's (FORMAT.md §14.6).
pub(crate) fn seal_pieces_adapting<W: Write>(
    key: &TaskKey,
    (first_chunk, len, piece_chunks): (u64, u64, u64),
    w: W,
    threads: Threads,
    plan: AdaptPlan,
) -> Result<RangeWriter<W>> {
    let run = (first_chunk, len, piece_chunks);
    seal_pieces_in(key, run, w, threads, plan, &mut rand_core::OsRng)
}

fn seal_pieces_in<W: Write>(
    key: &TaskKey,
    (first_chunk, len, piece_chunks): (u64, u64, u64),
    w: W,
    threads: Threads,
    plan: AdaptPlan,
    rng: &mut (impl RngCore + CryptoRng),
) -> Result<RangeWriter<W>> {
    if !key.is_pieced() {
        return Err(Error::InvalidOption(
            "a piece belongs to a pieced file: make its key with SplitSeal::pieced".into(),
        ));
    }
    if len == 0 || piece_chunks == 0 {
        return Err(Error::InvalidOption(
            "a piece holds at least one byte and one chunk (FORMAT.md §14.2)".into(),
        ));
    }
    let chunks = len.div_ceil(key.chunk_size() as u64);
    let ids = (0..chunks.div_ceil(piece_chunks))
        .map(|_| {
            let mut id = [0u8; format::piece::PIECE_ID_LEN];
            rng.fill_bytes(&mut id);
            id
        })
        .collect();
    let pieces = key.piece_plan(first_chunk, chunks, piece_chunks, ids);
    seal_range_in(key, first_chunk, w, threads, plan, Some((pieces, len)))
}
