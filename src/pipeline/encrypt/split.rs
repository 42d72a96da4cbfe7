//! One container sealed in pieces (FORMAT.md §11): a coordinator ([`SplitSeal`]) writes the
//! header and, at the end, the trailer; tasks ([`seal_range`]), anywhere, each seal a range of
//! whole chunks with the payload key alone ([`TaskKey`]) and return what the trailer needs
//! ([`RangeResult`]: the frames' body lengths and the chunks' BLAKE3 chaining values). The bytes
//! are those a single writer would write with the same keys; nothing is read twice.

use std::io::Write;

use rand_core::{CryptoRng, RngCore};
use zeroize::Zeroizing;

use super::super::intake::Intake;
use super::super::options::EncryptOptions;
use super::super::sink::{ChunkSink, ChunkWriter};
use super::super::threads::Threads;
use super::{ContainerSink, PiecePlan, RangeResult, Tally, TaskKey};
use crate::codec::Codec;
use crate::crypto::{Keying, Recipient};
use crate::error::{Error, Result};
use crate::format::{self, FRAME_HEADER_LEN};
use crate::hash::{ChunkHash, Digest, HashAlg};

/// The coordinator of a container sealed in pieces: it writes the header (returned by
/// [`SplitSeal::new`]) and the trailer ([`SplitSeal::trailer`]); tasks seal the chunks between.
pub struct SplitSeal {
    key: TaskKey,
    header_len: u64,
    /// The keys whose signature frames the trailer holds (ranges sealed into one output only:
    /// [`SplitSeal::sequential`]).
    sign: Vec<crate::crypto::sign::SigningKey>,
}

impl std::fmt::Debug for SplitSeal {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.debug_struct("SplitSeal")
            .field("header_len", &self.header_len)
            .finish_non_exhaustive()
    }
}

impl SplitSeal {
    /// A new file key for `recipients`; returns the coordinator and the header's bytes, which
    /// begin the container. A whole-file XXH3 cannot be merged from pieces and is refused; an
    /// adaptive level or the age format are not for pieces either.
    pub fn new(recipients: &[&dyn Recipient], opts: &EncryptOptions) -> Result<(Self, Vec<u8>)> {
        Self::with_rng(recipients, opts, &mut rand_core::OsRng)
    }

    /// As [`SplitSeal::new`], drawing the file key and salt from `rng` (tests; production code
    /// passes a CSPRNG).
    pub fn with_rng(
        recipients: &[&dyn Recipient],
        opts: &EncryptOptions,
        rng: &mut (impl RngCore + CryptoRng),
    ) -> Result<(Self, Vec<u8>)> {
        Self::build(recipients, opts, rng, false, false)
    }

    /// As [`SplitSeal::new`], for a pieced file (FORMAT.md §14): every range is a piece under a
    /// key of its own ([`seal_piece`]), so a range sealed again (a retry, a resumed run) is a
    /// new piece and never seals a position twice; the trailer lists the pieces kept.
    pub fn pieced(recipients: &[&dyn Recipient], opts: &EncryptOptions) -> Result<(Self, Vec<u8>)> {
        Self::pieced_with_rng(recipients, opts, &mut rand_core::OsRng)
    }

    /// As [`SplitSeal::pieced`], drawing the file key and the salt from `rng` (tests and
    /// vectors; production code passes a CSPRNG, never one seeded again to a seed used before:
    /// the ids the pieces and trailers draw from it would then repeat, and with them keys).
    pub fn pieced_with_rng(
        recipients: &[&dyn Recipient],
        opts: &EncryptOptions,
        rng: &mut (impl RngCore + CryptoRng),
    ) -> Result<(Self, Vec<u8>)> {
        Self::build(recipients, opts, rng, false, true)
    }

    /// As [`SplitSeal::new`], for ranges sealed one after the other into one output (a
    /// resumable upload, docs/OBJECTS.md §7): an adaptive level is allowed, since one output's
    /// speed is followed, and the header records its highest level as a whole writer's does
    /// (each range is then sealed with [`seal_range_adapting`]); signing keys are allowed, and
    /// the trailer holds their signature frames over the merged digest. `pieced`: the ranges
    /// are runs of pieces ([`seal_pieces_adapting`](super::seal_pieces_adapting)), as a
    /// resumable upload's are (FORMAT.md §14.6).
    pub(crate) fn sequential(
        recipients: &[&dyn Recipient],
        opts: &EncryptOptions,
        pieced: bool,
    ) -> Result<(Self, Vec<u8>)> {
        Self::build(recipients, opts, &mut rand_core::OsRng, true, pieced)
    }

    fn build(
        recipients: &[&dyn Recipient],
        opts: &EncryptOptions,
        rng: &mut (impl RngCore + CryptoRng),
        one_output: bool,
        pieced: bool,
    ) -> Result<(Self, Vec<u8>)> {
        opts.check()?;
        if opts.format != super::super::Format::Zseal {
            return Err(Error::InvalidOption(
                "a container sealed in pieces is a zseal container, not an age file".into(),
            ));
        }
        if !opts.sign.is_empty() && !one_output {
            return Err(Error::InvalidOption(
                "a container sealed in pieces is not signed (its digest is merged only at the \
                 end, by the coordinator): seal it whole to sign it"
                    .into(),
            ));
        }
        if !opts.hash.merges_chunks() && !opts.hash.is_empty() {
            return Err(Error::InvalidOption(format!(
                "{} of the whole file cannot be merged from pieces sealed apart (FORMAT.md \
                 §11.1): use the blake3 hash, or none",
                opts.hash.name().to_uppercase()
            )));
        }
        if opts.adapt.is_some() && !one_output {
            return Err(Error::InvalidOption(
                "an adaptive level follows one output's speed; pieces sealed apart take a fixed \
                 level"
                    .into(),
            ));
        }
        let chunk_log2 = format::chunk_log2_of(opts.chunk_size)?;
        let codec = opts.header_codec();
        let (header_bytes, payload_key) = super::new_header(
            &mut Keying::new(recipients, rng),
            opts,
            codec,
            chunk_log2,
            pieced,
        )?;
        let key = TaskKey {
            payload_key: Zeroizing::new(payload_key.0),
            cipher: opts.cipher,
            codec,
            hash: opts.hash,
            chunk_log2,
            padded: opts.pad,
            pieced,
        };
        let split = SplitSeal {
            key,
            header_len: header_bytes.len() as u64,
            sign: opts.sign.clone(),
        };
        Ok((split, header_bytes))
    }

    /// The coordinator of a container whose header (`header_len` bytes) was written earlier
    /// under `key`: a resumed upload (docs/OBJECTS.md §7) ends it with the ranges sealed before
    /// and after its interruption.
    pub fn resumed(key: TaskKey, header_len: u64) -> Self {
        SplitSeal {
            key,
            header_len,
            sign: Vec::new(),
        }
    }

    /// This coordinator, whose trailer holds a signature frame by each of `keys` (a resumed
    /// upload of a signed container: its header, written before, says it is signed).
    pub(crate) fn signed_by(mut self, keys: Vec<crate::crypto::sign::SigningKey>) -> Self {
        self.sign = keys;
        self
    }

    /// What every task needs (see [`TaskKey`]).
    pub fn task_key(&self) -> &TaskKey {
        &self.key
    }

    /// Chunk-aligned plaintext ranges `(first chunk, start, end)` that cut `len` bytes into at
    /// most `tasks` pieces of nearly equal size (none empty; one for an empty plaintext).
    pub fn ranges(&self, len: u64, tasks: usize) -> Vec<(u64, u64, u64)> {
        let c = self.key.chunk_size() as u64;
        let chunks = len.div_ceil(c).max(1);
        let tasks = (tasks.max(1) as u64).min(chunks);
        (0..tasks)
            .map(|k| {
                let (a, b) = (chunks * k / tasks, chunks * (k + 1) / tasks);
                (a, (a * c).min(len), (b * c).min(len))
            })
            .collect()
    }

    /// An upper bound of the length of the trailer [`SplitSeal::write_trailer`] writes after
    /// these results (FORMAT.md §11.3): the final frame, the index and the footer, and with
    /// padding at most a quarter of the unpadded container plus a frame (above Padmé's overhead,
    /// FORMAT.md §3.3, even when a class a padding frame cannot reach moves one class up). What
    /// an upload plans its last parts by before the trailer is sealed.
    pub fn trailer_bound(&self, results: &[RangeResult]) -> u64 {
        let chunks: u64 = results.iter().map(|r| r.body_lens.len() as u64).sum();
        let frames: u64 = results
            .iter()
            .flat_map(|r| &r.body_lens)
            .map(|&l| FRAME_HEADER_LEN as u64 + u64::from(l))
            .sum();
        // A pieced file's end also lists each piece (a table entry and its marker's index
        // entry) and holds the end marker (FORMAT.md §14.3); its markers are in `stored_len`.
        let pieces = match self.key.pieced {
            true => results.len() as u64 * (format::piece::TABLE_ENTRY_LEN as u64 + 4) + 64,
            false => 0,
        };
        let end = 4 * chunks + 1024 + pieces;
        if self.key.padded {
            let unpadded = self.header_len + frames + end;
            end + unpadded / 4 + self.key.chunk_size() as u64 + 64
        } else {
            end
        }
    }

    /// The end of the container, after the header and every range's frames in order: padding
    /// frames (a padded file), the final frame, the index and the footer. Checks that the ranges
    /// follow each other and that only the last ends short of a whole chunk.
    /// The trailer in memory: for small files (a padded file's padding can be large; write it
    /// with [`SplitSeal::write_trailer`]).
    pub fn trailer(&self, results: &[RangeResult]) -> Result<Vec<u8>> {
        self.write_trailer(results, Vec::new()).map(|(t, _)| t)
    }

    /// Writes the whole container into `w` from the tasks' part files (one per result, in
    /// order): `header`, each part, and the end ([`SplitSeal::write_trailer`]). Each part file
    /// must hold exactly the bytes its task's result says it sealed: one cut short or rewritten
    /// after its task ended (by another attempt of a rescheduled task) fails the join, naming
    /// it, before it is copied. Returns `w` and the digest.
    pub fn join<W: Write>(
        &self,
        header: &[u8],
        parts: &[impl AsRef<std::path::Path>],
        results: &[RangeResult],
        mut w: W,
    ) -> Result<(W, Option<String>)> {
        if parts.len() != results.len() {
            return Err(Error::InvalidOption(format!(
                "{} part files for {} task results",
                parts.len(),
                results.len()
            )));
        }
        let changed = |path: &std::path::Path, held: u64, size: u64| {
            Error::from(std::io::Error::other(format!(
                "{}: the part file holds {held} bytes, and its task sealed {size}: it was \
                 changed after its task ended (another attempt of the task?); run the job again",
                path.display()
            )))
        };
        // Every part checked before anything is written: a bad one leaves `w` untouched.
        let mut files = Vec::with_capacity(parts.len());
        for (path, r) in parts.iter().zip(results) {
            let path = path.as_ref();
            let f = std::fs::File::open(path)
                .map_err(|e| crate::io::named(&e, "open", &path.display().to_string()))?;
            let held = f.metadata()?.len();
            if held != r.stored_len() {
                return Err(changed(path, held, r.stored_len()));
            }
            files.push(f);
        }
        w.write_all(header)?;
        for ((mut f, r), path) in files.into_iter().zip(results).zip(parts) {
            let size = r.stored_len();
            // A part that shrank since it was checked.
            let copied = std::io::copy(&mut std::io::Read::take(&mut f, size), &mut w)?;
            if copied != size {
                return Err(changed(path.as_ref(), copied, size));
            }
        }
        self.write_trailer(results, w)
    }

    /// Writes the end of the container ([`SplitSeal::trailer`]) into `w`, a frame at a time, and
    /// returns `w` and the whole-plaintext digest it records in the standard tool's hex form
    /// (`b3sum`), or `None` without a digest.
    pub fn write_trailer<W: Write>(
        &self,
        results: &[RangeResult],
        w: W,
    ) -> Result<(W, Option<String>)> {
        self.write_trailer_with_rng(results, w, &mut rand_core::OsRng)
    }

    /// [`SplitSeal::write_trailer`], drawing a pieced file's end id from `rng`: fresh for every
    /// trailer written, as a trailer written again over other pieces seals other end frames
    /// (tests and vectors pass a seeded generator; production code a CSPRNG).
    pub fn write_trailer_with_rng<W: Write>(
        &self,
        results: &[RangeResult],
        mut w: W,
        rng: &mut (impl RngCore + CryptoRng),
    ) -> Result<(W, Option<String>)> {
        let mut end_id = [0u8; format::piece::PIECE_ID_LEN];
        if self.key.pieced {
            rng.fill_bytes(&mut end_id);
        }
        let c = self.key.chunk_size() as u64;
        let mut digest = Digest::new(self.key.hash);
        let mut index = Vec::new();
        let mut table = Vec::new();
        let (mut chunks, mut plaintext_len, mut written) = (0u64, 0u64, self.header_len);
        for (k, r) in results.iter().enumerate() {
            match (self.key.pieced, &r.piece) {
                (true, Some(p)) => {
                    if r.body_lens.is_empty() || r.plaintext_len == 0 {
                        return Err(Error::InvalidOption(format!(
                            "range {k} is a piece of no bytes: a piece holds one at least \
                             (FORMAT.md §14.2)"
                        )));
                    }
                    let entry = format::piece::PieceEntry {
                        id: p.id,
                        plaintext_len: r.plaintext_len,
                        frame_count: r.body_lens.len() as u32,
                        last_tag: p.last_tag,
                    };
                    table.extend_from_slice(&entry.encode());
                    index.extend_from_slice(&(format::piece::MARKER_BODY_LEN as u32).to_le_bytes());
                    written += format::piece::MARKER_LEN as u64;
                }
                (false, None) => {}
                (pieced, _) => {
                    return Err(Error::InvalidOption(format!(
                        "range {k} is {} piece, and the file {}",
                        if pieced { "not a" } else { "a" },
                        if pieced { "is pieced" } else { "is not" }
                    )))
                }
            }
            let n = r.body_lens.len() as u64;
            let last = k + 1 == results.len();
            let whole = r.plaintext_len == n * c;
            let fits = r.plaintext_len > (n.max(1) - 1) * c && r.plaintext_len <= n * c;
            let hashes = match self.key.hash.merges_chunks() {
                true => r.chaining_values.len() as u64 == n,
                false => r.chaining_values.is_empty(),
            };
            if r.first_chunk != chunks || !(whole || (last && fits)) || !hashes {
                return Err(Error::InvalidOption(format!(
                    "range {k} (from chunk {}, {} bytes in {n} frames) does not follow the \
                     ranges before it, or is not a whole number of chunks",
                    r.first_chunk, r.plaintext_len
                )));
            }
            for (i, &l) in r.body_lens.iter().enumerate() {
                index.extend_from_slice(&l.to_le_bytes());
                written += (FRAME_HEADER_LEN as u64) + u64::from(l);
                if let Some(cv) = r.chaining_values.get(i) {
                    let root = (chunks == 0).then_some(r.root_if_alone).flatten();
                    digest.push(&[], &ChunkHash::from_parts(*cv, root));
                }
                chunks += 1;
            }
            plaintext_len += r.plaintext_len;
        }
        // Every frame before the final frame counts: a pieced file's markers and end marker too.
        let markers = match self.key.pieced {
            true => results.len() as u64 + 1,
            false => 0,
        };
        if plaintext_len > format::MAX_PLAINTEXT
            || chunks + markers >= format::MAX_CHUNKS
            || results.len() as u64 > format::piece::MAX_PIECES
        {
            return Err(Error::Limit(
                "a zseal file holds at most 16 TiB, 2^32-1 chunks and 2^20 pieces: split the input"
                    .into(),
            ));
        }
        // A pieced file's end marker, before the end frames it keys (FORMAT.md §14.3).
        let pieced = match self.key.pieced {
            true => {
                w.write_all(&format::piece::end_marker(&end_id))?;
                index.extend_from_slice(&(format::piece::MARKER_BODY_LEN as u32).to_le_bytes());
                written += format::piece::MARKER_LEN as u64;
                Some(super::PiecedEnd {
                    frames: (index.len() / 4) as u64,
                    before: std::mem::take(&mut index),
                    table,
                    pieces: results.len() as u32,
                    end_id,
                })
            }
            false => None,
        };
        let hex = match self.key.hash {
            HashAlg::None => None,
            alg => Some(crate::hash::to_hex(alg, &digest.clone().finish())),
        };
        let sealer = match &pieced {
            Some(p) => self.key.end_sealer(&p.end_id),
            None => self.key.sealer(),
        };
        // No input is taken: an intake without a chunk buffer.
        let intake = Intake::new(0, sealer.chunk_size(), 0);
        // The single writer's own end, over the tally the ranges add up to; a pieced file's
        // end frames count from 0 under the end key.
        let first = if pieced.is_some() { 0 } else { chunks };
        let tally = Tally {
            plaintext_len,
            index,
            digest,
            pieced,
            ..Tally::from_frame(first, written, self.key.padded, self.sign.clone())
        };
        let mut sink =
            ContainerSink::from_parts(w, intake, sealer, &Threads::Count(1), (tally, None));
        sink.end()?;
        Ok((sink.into_state().inner, hex))
    }
}

/// A task's writer: [`ChunkWriter`] over a container's sink that starts at a chunk number and
/// writes frames only.
pub type RangeWriter<W> = ChunkWriter<ContainerSink<W>>;

/// Starts sealing the range of chunks from `first_chunk` into `w` (frames only: no header, no
/// trailer), with `threads`. Write the range's plaintext, then call
/// [`ChunkWriter::finish_range`].
pub fn seal_range<W: Write>(
    key: &TaskKey,
    first_chunk: u64,
    w: W,
    threads: Threads,
) -> Result<RangeWriter<W>> {
    seal_range_adapting(key, first_chunk, w, threads, Default::default())
}

/// [`seal_range`] with an adaptive level between `plan`'s bounds (a [`SplitSeal::sequential`]
/// key, whose codec is zstd at the highest level), following this range's output.
pub(crate) fn seal_range_adapting<W: Write>(
    key: &TaskKey,
    first_chunk: u64,
    w: W,
    threads: Threads,
    plan: super::AdaptPlan,
) -> Result<RangeWriter<W>> {
    if key.pieced {
        return Err(Error::InvalidOption(
            "the ranges of a pieced file are pieces: seal them with seal_piece".into(),
        ));
    }
    seal_range_in(key, first_chunk, w, threads, plan, None)
}

/// A range's writer from `first_chunk`: a version-1 range, or the run of pieces `plan` of the
/// given plaintext length.
pub(super) fn seal_range_in<W: Write>(
    key: &TaskKey,
    first_chunk: u64,
    w: W,
    threads: Threads,
    plan: super::AdaptPlan,
    pieces: Option<(PiecePlan, u64)>,
) -> Result<RangeWriter<W>> {
    let adapt = plan.bounds;
    if adapt.is_some_and(|(_, max)| key.codec != Codec::Zstd(max)) {
        return Err(Error::InvalidOption(format!(
            "an adaptive level up to {} under a key whose header records {}",
            adapt.map_or(0, |(_, max)| max),
            key.codec
        )));
    }
    let c = key.chunk_size() as u64;
    let last = first_chunk + pieces.as_ref().map_or(1, |(_, len)| len.div_ceil(c));
    if last > format::MAX_CHUNKS {
        return Err(Error::Limit(format!(
            "chunk {} is past the last chunk a zseal file can hold",
            last - 1
        )));
    }
    let pieces = pieces.map(|(plan, len)| (std::sync::Arc::new(plan), len));
    let sealer = match &pieces {
        Some((plan, _)) => key.sealer().in_pieces(plan.clone()),
        None => key.sealer(),
    };
    let intake = Intake::new(sealer.data_at(), sealer.chunk_size(), sealer.buffer_len());
    let tally = Tally::from_frame(first_chunk, 0, key.padded, Vec::new());
    let adapt = super::adapt::Adapt::of(plan);
    let sink = ContainerSink::from_parts(w, intake, sealer, &threads, (tally, adapt));
    Ok(ChunkWriter::from_sink(sink).with_range(first_chunk, pieces))
}

#[cfg(test)]
mod tests {
    use super::super::AdaptPlan;
    use super::*;

    /// An adaptive range under a key whose header records another level is refused before
    /// anything is sealed: the header must record the highest level a chunk may have.
    #[test]
    fn an_adaptive_range_needs_a_key_that_records_its_highest_level() {
        let pw = crate::pipeline::cheap_passphrase();
        let opts = EncryptOptions::default().codec(Codec::Zstd(3)).adapt(1, 6);
        let (split, _) = SplitSeal::sequential(&[&pw], &opts, false).unwrap();
        let key = split.task_key();
        assert_eq!(key.codec, Codec::Zstd(6));
        let plan = |bounds| AdaptPlan {
            bounds: Some(bounds),
        };
        assert!(seal_range_adapting(key, 0, Vec::new(), Threads::Count(1), plan((1, 6))).is_ok());
        let e = seal_range_adapting(key, 0, Vec::new(), Threads::Count(1), plan((1, 9)))
            .err()
            .expect("refused");
        assert!(e.to_string().contains("up to 9"), "{e}");
    }
}
