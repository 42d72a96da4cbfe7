//! The zseal container's side of the engine's writer: [`ContainerSink`] is the [`ChunkSink`] the
//! engine's [`ChunkWriter`] writes a container through ([`Encryptor`]). Workers hash, compress
//! and seal the chunks, and the frames are written in order. `finish` must be called: it seals
//! the last chunk and writes the final frame, the index and the footer. Dropping an unfinished
//! `Encryptor` leaves a container without its final frame, which every reader rejects.

use std::io::Write;
use std::sync::Arc;

use super::emit::{self, Sealing};
use super::intake::{aligned_at, Filled, Intake};
use super::sink::{ChunkSink, ChunkWriter, SealTo, SinkState};
use super::window::Window;
use crate::codec::Codec;
use crate::crypto::aead::TAG_LEN;
use crate::crypto::Keying;
use crate::error::{Error, Result};
use crate::format::frame::footer;
use crate::format::{self, FinalFrame, FrameKind, Header, FRAME_HEADER_LEN};
use crate::hash::{Digest, HashAlg};
use crate::stats::{ChunkTimes, StreamStats};

mod adapt;
mod pieces;
mod sealer;
mod split;
mod task;
mod trailer;

use super::options::EncryptOptions;
use adapt::Adapt;
pub(crate) use adapt::AdaptPlan;
pub use pieces::{seal_piece, seal_piece_with_rng, seal_pieces, seal_pieces_with_rng, PieceRef};
pub(crate) use pieces::{seal_pieces_adapting, PiecePlan};
pub(crate) use sealer::{padding_plan, sealed_header, Job, Sealed, Sealer};
pub use split::{seal_range, RangeWriter, SplitSeal};
pub use task::{RangeResult, TaskKey};

/// Encrypts everything written to it into `W`: the engine's writer over a container's sink. See
/// the module documentation.
pub type Encryptor<W> = ChunkWriter<ContainerSink<W>>;

/// The sealing of a zseal container into `W`, for the engine's writer.
///
/// The parts, one job each (as on the decrypting side): `Intake` (the input cut into chunk
/// buffers, shared with the age writer), `Sealer` (the per-chunk work on the workers), the
/// ordered `Window`, and `Tally` (what the container records across chunks: the index, the
/// digest, the counts).
pub struct ContainerSink<W: Write> {
    /// The output, the intake, the times, the progress counter and the sticky failure.
    state: SinkState<W>,
    sealer: Arc<Sealer>,
    window: Window<Sealed>,
    tally: Tally,
    adapt: Option<Adapt>,
    /// A range of a container sealed in pieces (FORMAT.md §11): frames only, and each chunk's
    /// hash kept for the coordinator.
    range: Option<RangeTally>,
}

/// What a range's task keeps for the coordinator (FORMAT.md §11.1).
struct RangeTally {
    first_chunk: u64,
    hashes: Vec<crate::hash::ChunkHash>,
    /// The range is a run of pieces (FORMAT.md §14.2).
    pieces: Option<PiecesTally>,
}

/// What the writer of a run of pieces keeps: where each chunk goes, the plaintext the run was
/// declared to hold (each piece's last frame, sealed with `last` set, is the chunk the plan
/// says ends it), and each piece's last tag once sealed.
struct PiecesTally {
    plan: Arc<PiecePlan>,
    len: u64,
    tags: Vec<Option<[u8; 16]>>,
}

/// What a container records across its chunks, in order (FORMAT.md §§3.2, 4).
struct Tally {
    /// Frames handed to the workers (data and padding): the next frame's number.
    chunks: u64,
    plaintext_len: u64,
    /// The index: each frame's body length.
    index: Vec<u8>,
    /// The whole-plaintext digest, merged chunk by chunk.
    digest: Digest,
    /// Container bytes written so far (header and data frames), which padding starts from.
    written: u64,
    padded: bool,
    /// Data chunks written out so far.
    emitted: u64,
    /// The keys that sign the plaintext at its end (FORMAT.md §12).
    sign: Vec<crate::crypto::sign::SigningKey>,
    /// The digest in hex, once the final frame is written.
    digest_hex: Option<String>,
    /// The end of a pieced file (FORMAT.md §14.3): `chunks` then counts the end frames alone,
    /// whose nonces count from 0 under the end key.
    pieced: Option<PiecedEnd>,
}

/// What the end of a pieced file adds to a version-1 end (FORMAT.md §14.3).
pub(super) struct PiecedEnd {
    /// The index entries of the frames before the end frames: the pieces' markers and frames,
    /// and the end marker.
    pub(super) before: Vec<u8>,
    /// How many frames that is.
    pub(super) frames: u64,
    /// The piece table.
    pub(super) table: Vec<u8>,
    pub(super) pieces: u32,
    pub(super) end_id: [u8; 16],
}

/// [`Encryptor::new`] and [`Encryptor::with_rng`]: the header, written to `inner`.
impl<W: Write> SealTo for ContainerSink<W> {
    fn open(mut inner: W, mut keys: Keying<'_>, opts: &EncryptOptions) -> Result<Self> {
        if opts.format != super::Format::Zseal {
            return Err(Error::InvalidOption(
                "an Encryptor writes zseal containers: write an age file with AgeWriter (or Writer)"
                    .into(),
            ));
        }
        opts.check()?;
        let chunk_log2 = format::chunk_log2_of(opts.chunk_size)?;
        let adapt = opts.adapt.map(|(min, max)| Adapt::new(min, max));
        let codec = opts.header_codec();
        let (header_bytes, payload_key) = new_header(&mut keys, opts, codec, chunk_log2, false)?;
        inner.write_all(&header_bytes)?;
        let sealer = Sealer::new(opts.cipher, &payload_key.0, codec, opts.hash, chunk_log2)
            .with_padding(opts.pad);
        let intake = Intake::new(sealer.data_at(), 1 << chunk_log2, sealer.buffer_len());
        let tally = Tally {
            digest: Digest::new(opts.hash),
            ..Tally::from_frame(0, header_bytes.len() as u64, opts.pad, opts.sign.clone())
        };
        Ok(ContainerSink::from_parts(
            inner,
            intake,
            sealer,
            &opts.threads,
            (tally, adapt),
        ))
    }
}

impl Tally {
    /// A sink's tally from frame `first` on, after `written` container bytes: nothing sealed
    /// by it yet, no digest kept (a range's chunks are hashed by the range).
    fn from_frame(
        first: u64,
        written: u64,
        padded: bool,
        sign: Vec<crate::crypto::sign::SigningKey>,
    ) -> Tally {
        Tally {
            chunks: first,
            plaintext_len: 0,
            index: Vec::new(),
            digest: Digest::new(HashAlg::None),
            written,
            padded,
            emitted: first,
            sign,
            digest_hex: None,
            pieced: None,
        }
    }
}

impl<W: Write> ContainerSink<W> {
    /// The sink writing to `w`: its chunks taken in through `intake`, sealed by `sealer` on
    /// `threads`, its `tally` so far, and an adaptive level if any. The one place a
    /// container's sink is put together (a whole writer, a range's, the end of pieces).
    fn from_parts(
        w: W,
        intake: Intake,
        sealer: Sealer,
        threads: &super::threads::Threads,
        (tally, adapt): (Tally, Option<Adapt>),
    ) -> Self {
        ContainerSink {
            state: SinkState::new(w, intake),
            window: Window::new(threads, sealer.chunk_size()),
            sealer: Arc::new(sealer),
            tally,
            adapt,
            range: None,
        }
    }
}

impl<W: Write> ChunkWriter<ContainerSink<W>> {
    /// Makes this writer a range's, from chunk `first_chunk` (see [`seal_range`]); with
    /// `pieces`, a run of pieces that holds the given plaintext length (see [`seal_pieces`]).
    fn with_range(mut self, first_chunk: u64, pieces: Option<(Arc<PiecePlan>, u64)>) -> Self {
        self.sink.range = Some(RangeTally {
            first_chunk,
            hashes: Vec::new(),
            pieces: pieces.map(|(plan, len)| PiecesTally {
                tags: vec![None; plan.shape().0],
                plan,
                len,
            }),
        });
        self
    }

    /// Ends a range's writer ([`seal_range`], [`seal_piece`]): seals the last chunk, waits for
    /// every frame to be written, and returns the inner writer and what the coordinator needs.
    /// A run of several pieces ends with [`ChunkWriter::finish_pieces`].
    pub fn finish_range(self) -> Result<(W, RangeResult)> {
        let (w, mut results) = self.finish_pieces()?;
        match results.len() {
            1 => Ok((w, results.remove(0))),
            n => Err(Error::InvalidOption(format!(
                "this writer sealed {n} pieces: end it with finish_pieces"
            ))),
        }
    }

    /// Ends a range's writer as [`ChunkWriter::finish_range`] does, with what the coordinator
    /// needs of each piece of a run of pieces ([`seal_pieces`]), in order; of a version-1
    /// range, its one result.
    pub fn finish_pieces(mut self) -> Result<(W, Vec<RangeResult>)> {
        if self.sink.range.is_none() {
            return Err(Error::InvalidOption(
                "finish_range ends a range's writer (seal_range); end a whole container with finish"
                    .into(),
            ));
        }
        self.check()?;
        self.guard(|s| s.end())?;
        let sink = self.sink;
        let range = sink.range.expect("checked above");
        let lens: Vec<u32> = sink
            .tally
            .index
            .chunks_exact(4)
            .map(|c| u32::from_le_bytes([c[0], c[1], c[2], c[3]]))
            .collect();
        let cvs: Vec<[u8; 32]> = range.hashes.iter().filter_map(|h| h.cv()).collect();
        let root = range.hashes.first().and_then(|h| h.root_if_alone());
        let Some(pieces) = range.pieces else {
            let result = RangeResult {
                first_chunk: range.first_chunk,
                plaintext_len: sink.tally.plaintext_len,
                body_lens: lens,
                chaining_values: cvs,
                root_if_alone: root,
                piece: None,
            };
            return Ok((sink.state.inner, vec![result]));
        };
        let given = sink.tally.plaintext_len;
        if given != pieces.len || pieces.tags.iter().any(Option::is_none) {
            return Err(Error::InvalidOption(format!(
                "pieces declared to hold {} bytes were given {given}: a piece's last frame is \
                 sealed as such, so a piece is written whole or not at all",
                pieces.len
            )));
        }
        let c = sink.sealer.chunk_size() as u64;
        let (count, per) = pieces.plan.shape();
        let results = (0..count)
            .map(|p| {
                let from = p as u64 * per;
                let to = (from + per).min(lens.len() as u64);
                let (a, b) = (from as usize, to as usize);
                RangeResult {
                    first_chunk: range.first_chunk + from,
                    plaintext_len: (pieces.len - from * c).min(per * c),
                    body_lens: lens[a..b].to_vec(),
                    chaining_values: cvs.get(a..b).map(<[_]>::to_vec).unwrap_or_default(),
                    root_if_alone: root.filter(|_| p == 0),
                    piece: Some(PieceRef {
                        id: pieces.plan.id(p),
                        last_tag: pieces.tags[p].expect("checked above"),
                    }),
                }
            })
            .collect();
        Ok((sink.state.inner, results))
    }
}

impl<W: Write> ContainerSink<W> {
    /// Queues the job for the next chunk, of `len` plaintext bytes, through the write driver.
    fn submit_with(
        &mut self,
        len: usize,
        input: Vec<u8>,
        at: usize,
        run: impl FnOnce(&Sealer, Job) -> Result<Sealed> + Send + 'static,
    ) -> Result<()> {
        let index = self.tally.chunks;
        if let Some(plan) = self.sealer.pieces.as_ref().filter(|p| !p.holds(index)) {
            let (count, per) = plan.shape();
            return Err(Error::InvalidOption(format!(
                "more plaintext than the {count} piece(s) of {per} chunk(s) were declared to \
                 hold: a piece is written whole or not at all"
            )));
        }
        if index >= format::MAX_CHUNKS
            || self.tally.plaintext_len + len as u64 > format::MAX_PLAINTEXT
        {
            return Err(Error::Limit(
                "a zseal file holds at most 16 TiB and 2^32-1 chunks: split the input".into(),
            ));
        }
        // Room first: the adaptive level observes each released chunk against those submitted
        // before this one.
        emit::make_room(self)?;
        let output = self.state.intake.output_buffer();
        self.tally.chunks += 1;
        self.tally.plaintext_len += len as u64;
        let codec = match &mut self.adapt {
            Some(a) => Codec::Zstd(a.next_level()),
            None => self.sealer.codec,
        };
        let job = Job {
            index,
            len,
            codec,
            input,
            at,
            output,
        };
        let sealer = Arc::clone(&self.sealer);
        emit::queue(self, move || run(&sealer, job))
    }
}

impl<W: Write> Sealing for ContainerSink<W> {
    type Done = Sealed;

    fn window(&mut self) -> &mut Window<Sealed> {
        &mut self.window
    }

    /// One sealed chunk, the next in order: listed in the index and the digest, written out,
    /// its buffers recycled.
    fn release(&mut self, s: Sealed) -> Result<()> {
        let index = self.tally.emitted;
        self.tally.emitted += 1;
        self.tally.written += s.frame_len as u64;
        self.state.count(s.plain_len, &s.times);
        let body_len = (s.frame_len - FRAME_HEADER_LEN) as u32;
        self.tally.index.extend_from_slice(&body_len.to_le_bytes());
        self.tally.digest.push(s.plaintext(), &s.hash);
        if let Some(r) = &mut self.range {
            r.hashes.push(s.hash);
            if let Some(pieces) = r.pieces.as_mut() {
                let (p, counter, last) = pieces.plan.place(index);
                if counter == 0 {
                    // A piece's marker goes before its first frame (FORMAT.md §14.3).
                    let marker = format::piece::marker(&pieces.plan.id(p));
                    self.state.write_out(&marker)?;
                    self.tally.written += marker.len() as u64;
                }
                if last {
                    // The tag ends the frame (the piece table lists it).
                    let end = s.start + s.frame_len;
                    pieces.tags[p] = s.frame[end - TAG_LEN..end].try_into().ok();
                }
            }
        }
        let (spare, other_spare) = s.spares();
        let Sealed {
            frame,
            start,
            frame_len,
            other,
            ..
        } = s;
        let state = &mut self.state;
        state.intake.give_back(other, other_spare);
        let (wait, write) = (state.stages.wait, state.stages.write);
        state.hand_out(
            &mut self.window,
            frame,
            start..start + frame_len,
            spare,
            || format!(" (frame {index})"),
        )?;
        if let Some(a) = &mut self.adapt {
            // An adaptive level is never written by offset: this is the write's own time.
            a.wait += wait - a.waited;
            a.waited = wait;
            a.observe(index, self.tally.chunks, self.state.stages.write - write);
        }
        Ok(())
    }
}

impl<W: Write> ChunkSink for ContainerSink<W> {
    type Inner = W;

    fn state(&mut self) -> &mut SinkState<W> {
        &mut self.state
    }

    /// Hands the filled chunk to a worker; first makes room if too many are in flight.
    fn submit(&mut self) -> Result<()> {
        let Filled { buf, at, len } = self.state.intake.take();
        self.submit_with(len, buf, at, |sealer, job| {
            sealer.seal_buffer(job, None, ChunkTimes::default())
        })
    }

    /// Hands a worker a full chunk to read from `file` at `offset` itself.
    #[cfg(unix)]
    fn submit_at(&mut self, file: &Arc<std::fs::File>, offset: u64) -> Result<()> {
        let len = self.state.intake.chunk_size();
        let input = self.state.intake.input_buffer();
        let file = Arc::clone(file);
        // Where the worker's read places the plaintext: at its file offset modulo 64.
        let at = aligned_at(&input, self.sealer.data_at(), offset);
        self.submit_with(len, input, at, move |sealer, job| {
            sealer.read_and_seal(job, &file, offset)
        })
    }

    fn threads(&self) -> usize {
        self.window.threads()
    }

    /// Not with an adaptive level, which times the writes. (On two cores one thread writing
    /// every frame is what held incompressible data back: docs/PERFORMANCE.md §7.)
    fn writes_by_offset(&self) -> bool {
        self.adapt.is_none()
    }

    fn flush_sealed(&mut self) -> Result<()> {
        emit::flush(self)
    }

    /// The last chunk, padding, the final frame, the index and the footer.
    fn end(&mut self) -> Result<()> {
        emit::finish_jobs(self)?;
        if self.range.is_some() {
            // A range's frames only: the coordinator writes the end (FORMAT.md §11).
            return self.state.close();
        }
        let alg = self.tally.digest.alg();
        let digest = std::mem::replace(&mut self.tally.digest, Digest::new(HashAlg::None)).finish();
        self.tally.digest_hex = (!alg.is_empty()).then(|| crate::hash::to_hex(alg, &digest));
        if !self.tally.sign.is_empty() {
            self.write_signatures(&digest)?;
        }
        if self.tally.padded {
            self.write_padding()?;
        }
        let t = &mut self.tally;
        // The final frame's nonce counts the frames sealed under its key: every frame of a
        // version-1 file, the end frames of a pieced one (FORMAT.md §14.3).
        let sealed_before = t.chunks;
        let (index, table) = match t.pieced.as_mut() {
            Some(p) => {
                let mut index = std::mem::take(&mut p.before);
                index.extend_from_slice(&t.index);
                (index, std::mem::take(&mut p.table))
            }
            None => (std::mem::take(&mut t.index), Vec::new()),
        };
        let n = (index.len() / 4) as u64;
        let mut listed = blake3::Hasher::new();
        listed.update(&index);
        listed.update(&table);
        let fin = FinalFrame {
            plaintext_len: t.plaintext_len,
            chunk_count: n,
            index_digest: *listed.finalize().as_bytes(),
            digest,
        };
        let mut frame = vec![0u8; format::FINAL_FRAME_LEN];
        frame[FRAME_HEADER_LEN..FRAME_HEADER_LEN + 80].copy_from_slice(&fin.encode());
        let len = self
            .sealer
            .seal_into(&mut frame, sealed_before, true, FrameKind::Final, 80);
        debug_assert_eq!(len, format::FINAL_FRAME_LEN);
        self.state.write_out(&frame)?;
        self.state.write_out(&index)?;
        match &self.tally.pieced {
            Some(p) => {
                self.state.write_out(&table)?;
                let f = format::piece::PiecedFooter {
                    chunk_count: n,
                    piece_count: p.pieces,
                    end_id: p.end_id,
                };
                self.state.write_out(&f.encode())?;
            }
            None => self.state.write_out(&footer(n))?,
        }
        self.state.close()
    }

    fn stats(&self) -> StreamStats {
        self.state.stats(self.tally.chunks, self.window.threads())
    }

    fn digest_hex(&self) -> Option<String> {
        self.tally.digest_hex.clone()
    }

    fn into_state(self) -> SinkState<W> {
        self.state
    }
}

/// A new container's header for `recipients` with `opts`' algorithms (the header records
/// `codec`), under a file key and payload salt drawn from `rng` in that order: its bytes, and the
/// payload key (FORMAT.md §§1, 2).
fn new_header(
    keys: &mut Keying<'_>,
    opts: &EncryptOptions,
    codec: Codec,
    chunk_log2: u8,
    pieced: bool,
) -> Result<(Vec<u8>, crate::crypto::Zeroizing32)> {
    let file_key = keys.file_key();
    let mut payload_salt = [0u8; format::header::SALT_LEN];
    keys.fill(&mut payload_salt);
    let stanzas = keys.wrap_container(&file_key, &[])?;
    let header = Header {
        cipher: opts.cipher,
        codec,
        hash: opts.hash,
        chunk_log2,
        padded: opts.pad,
        signed: !opts.sign.is_empty(),
        pieced,
        payload_salt,
        stanzas,
    };
    let header_bytes = sealed_header(&header, &file_key)?;
    Ok((header_bytes, file_key.payload_key(&payload_salt)))
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::crypto::aead::Cipher;
    use crate::pipeline::cheap_passphrase;
    use crate::pipeline::intake::ALIGN;
    use std::time::Duration;

    fn ms(n: u64) -> Duration {
        Duration::from_millis(n)
    }

    /// Feeds the controller one chunk: `wait` ms waiting for it, `write` ms writing it.
    fn step(a: &mut Adapt, index: u64, wait: u64, write: u64) -> i32 {
        a.wait += ms(wait);
        a.observe(index, index + 3, ms(write));
        a.level
    }

    #[test]
    fn the_adaptive_level_follows_the_bottleneck() {
        // A slow output: big steps up while writing dwarfs waiting, then held until the chunks
        // submitted at the new level come out (three in flight here).
        let mut a = Adapt::new(1, 19);
        assert_eq!(step(&mut a, 0, 1, 400), 5);
        assert_eq!(
            step(&mut a, 1, 1, 400),
            5,
            "chunk 1 was sealed at the old level"
        );
        assert_eq!(step(&mut a, 2, 1, 400), 5);
        assert_eq!(step(&mut a, 3, 1, 400), 9);
        assert_eq!(step(&mut a, 6, 30, 130), 11, "4x: two levels");
        assert_eq!(step(&mut a, 9, 30, 70), 12, "2x: one level");
        assert_eq!(step(&mut a, 12, 50, 60), 12, "balanced: stays");
        assert_eq!(
            step(&mut a, 13, 100, 40),
            11,
            "the workers are the bottleneck: down"
        );
        assert_eq!(step(&mut a, 16, 400, 1), 9, "far behind: two down");
        // Noise of a millisecond on both sides moves nothing.
        let mut b = Adapt::new(1, 19);
        assert_eq!(step(&mut b, 0, 0, 0), 1);
        assert_eq!(step(&mut b, 1, 0, 1), 1);
        // Clamped to the range, and zstd's level 0 (its default, not a level) is stepped over.
        let mut c = Adapt::new(-3, 2);
        for i in 0..10 {
            step(&mut c, i * 3, 1, 500);
        }
        assert_eq!(c.level, 2);
        for i in 10..40 {
            let l = step(&mut c, i * 3, 300, 1);
            assert_ne!(l, 0);
        }
        assert_eq!(c.level, -3);
    }

    /// One observation at level 10 of 1..=19, nothing held: the step each ratio gives, on both
    /// sides of every threshold and on it.
    #[test]
    fn each_threshold_of_the_controller_on_both_sides() {
        // (ms waiting for the chunk, ms writing it, the step)
        let cases: &[(u64, u64, i32)] = &[
            (0, 0, 0),
            (0, 1, 0),
            (1, 0, 0),
            // w > 16 t and w > 0.2 s: four; below either edge, two.
            (0, 201, 4),
            (0, 197, 2),
            (19, 330, 4),
            (19, 310, 2),
            // w > 4 t and w > 0.05 s: two; below either edge, one.
            (9, 55, 2),
            (9, 45, 1),
            (9, 35, 1),
            // w > 2 t: one; below, none.
            (9, 22, 1),
            (9, 18, 0),
            // t > 8 w and t > 0.05 s: two down; below either edge, one down.
            (60, 0, -2),
            (45, 0, -1),
            (85, 9, -2),
            (75, 9, -1),
            // t > 2 w: one down; below, none.
            (22, 9, -1),
            (18, 9, 0),
            // Exactly on each edge (these sums and products are exact in f64): the comparisons
            // are strict, so an edge takes the smaller step.
            (0, 199, 2),
            (14, 239, 2),
            (14, 59, 1),
            (0, 49, 1),
            (55, 6, -1),
            (49, 0, -1),
        ];
        for &(wait, write, want) in cases {
            let mut a = Adapt::new(1, 19);
            a.level = 10;
            a.wait = ms(wait);
            a.observe(0, 1, ms(write));
            assert_eq!(a.level - 10, want, "wait {wait} ms, write {write} ms");
            // A change holds until chunk 1, the first submitted under it.
            assert_eq!(a.settle, if want == 0 { 0 } else { 1 });
            assert_eq!((a.write, a.wait), (Duration::ZERO, Duration::ZERO));
        }
    }

    /// Times are counted from the last observation, including those held back.
    #[test]
    fn the_controller_counts_each_chunks_times_once() {
        let mut a = Adapt::new(1, 19);
        a.level = 10;
        a.observe(0, 1, ms(30));
        assert_eq!(a.level, 11, "31 ms against 1 ms: one up");
        // Balanced from here: what was written for chunk 0 must not count again.
        a.wait = ms(20);
        a.observe(1, 2, ms(20));
        assert_eq!(a.level, 11);
        // Held chunks add up: writes of 20 ms at chunks 2 and 3 (held until 4) and at chunk 4,
        // against no wait, come to 61 ms: above 0.05 s, two up. Chunk 4's alone would be one.
        a.settle = 4;
        a.observe(2, 5, ms(20));
        a.observe(3, 5, ms(20));
        assert_eq!(a.level, 11, "held");
        a.observe(4, 5, ms(20));
        assert_eq!(a.level, 13);
        assert_eq!(a.settle, 5);
    }

    /// The level steps over zstd's 0 in both directions and stays in its range.
    #[test]
    fn the_level_steps_over_zero_and_stays_in_range() {
        let mut a = Adapt::new(-3, 2);
        a.level = -1;
        a.observe(0, 1, ms(30));
        assert_eq!(a.level, 1, "up from -1 skips 0");
        a.wait = ms(30);
        a.observe(1, 2, ms(0));
        assert_eq!(a.level, -1, "down from 1 skips 0");
        a.level = 2;
        a.observe(2, 3, ms(500));
        assert_eq!(
            (a.level, a.settle),
            (2, 2),
            "at the top: no change, nothing held"
        );
        a.level = -3;
        a.wait = ms(500);
        a.observe(3, 4, ms(0));
        assert_eq!((a.level, a.settle), (-3, 2), "at the bottom");
    }

    /// The window keeps `threads + 2` chunks in flight while their buffers fit the budget,
    /// one fewer beyond it: the encryptor gives it its chunk size.
    #[test]
    fn the_window_is_sized_for_the_chunk_size() {
        let pw = cheap_passphrase();
        for (chunk, limit) in [(1 << 20, 4), (4 << 20, 4), (8 << 20, 3)] {
            let opts = EncryptOptions::default().chunk_size(chunk).threads(2);
            let enc = Encryptor::new(Vec::new(), &[&pw], &opts).unwrap();
            assert_eq!(enc.sink.window.limit(), limit, "{chunk}");
        }
    }

    /// Where the plaintext sits in its buffer ([`aligned_at`] moves it up to 63 bytes on)
    /// changes nothing in the frame: raw (sealed in place), compressed, padded, and raw with
    /// XXH3 (copied out), each at every start.
    #[test]
    fn a_frame_is_the_same_wherever_its_plaintext_sits() {
        let text: Vec<u8> = (0..4096u32).map(|i| b"abcabd"[(i % 6) as usize]).collect();
        let mut noise = vec![0u8; 4096];
        blake3::Hasher::new().finalize_xof().fill(&mut noise);
        let key = [9u8; 32];
        for (hash, padded) in [
            (HashAlg::Blake3, false),
            (HashAlg::Blake3, true),
            (HashAlg::Xxh3, false),
        ] {
            let sealer =
                Sealer::new(Cipher::Aes256Gcm, &key, Codec::Zstd(3), hash, 12).with_padding(padded);
            for plain in [&text[..], &noise[..], &noise[..100]] {
                let want = sealer.seal_chunk(3, plain).unwrap();
                for shift in 0..ALIGN {
                    let at = sealer.data_at() + shift;
                    // Recycled buffers hold old bytes: so do these.
                    let mut input = vec![0xa5; sealer.buffer_len()];
                    input[at..at + plain.len()].copy_from_slice(plain);
                    let job = Job {
                        index: 3,
                        len: plain.len(),
                        codec: sealer.codec,
                        input,
                        at,
                        output: vec![0x5a; sealer.buffer_len()],
                    };
                    let got = sealer
                        .seal_buffer(job, None, ChunkTimes::default())
                        .unwrap();
                    assert_eq!(got.bytes(), want.bytes(), "{hash:?} {padded} {shift}");
                    assert_eq!(got.in_place, plain[0] != b'a' && hash != HashAlg::Xxh3);
                    if !got.in_place {
                        assert_eq!(got.plaintext(), plain);
                    }
                }
            }
        }
    }

    /// 16 TiB and 2^32 - 1 chunks (FORMAT.md §8): the chunk that reaches either limit is
    /// written, the one past it is refused before it is sealed.
    #[test]
    fn the_writer_stops_at_the_format_limits() {
        let pw = cheap_passphrase();
        let opts = EncryptOptions::default().chunk_size(1024).threads(1);
        let chunk = [7u8; 1024];
        let write_chunk_after = |plaintext_len: u64, chunks: u64| {
            let mut enc = Encryptor::new(Vec::new(), &[&pw], &opts).unwrap();
            (enc.sink.tally.plaintext_len, enc.sink.tally.chunks) = (plaintext_len, chunks);
            enc.write_all(&chunk).map(|()| enc.sink.tally.plaintext_len)
        };
        let full = format::MAX_PLAINTEXT;
        assert_eq!(write_chunk_after(full - 1024, 5).unwrap(), full);
        let e = write_chunk_after(full - 1023, 5).unwrap_err();
        assert!(e.to_string().contains("at most 16 TiB"), "{e}");
        assert!(write_chunk_after(0, format::MAX_CHUNKS - 1).is_ok());
        let e = write_chunk_after(0, format::MAX_CHUNKS).unwrap_err();
        assert!(e.to_string().contains("2^32-1 chunks"), "{e}");
    }

    /// Padding frames count against the 2^32 - 1 frames too: a padded file whose data frames
    /// reach the limit may end there only if it needs no padding.
    #[test]
    fn padding_stops_at_the_frame_limit() {
        let pw = cheap_passphrase();
        let opts = EncryptOptions::default()
            .chunk_size(1024)
            .threads(1)
            .pad(true);
        // `written` such that the whole file comes to a Padmé class exactly (2^35), or one byte
        // more (then it needs 512 MiB of padding frames).
        let n = format::MAX_CHUNKS;
        let rest = (format::FINAL_FRAME_LEN + format::FOOTER_LEN) as u64 + 4 * n;
        let pad_after = |written: u64| {
            let mut enc = Encryptor::new(Vec::new(), &[&pw], &opts).unwrap();
            (enc.sink.tally.written, enc.sink.tally.chunks) = (written, n);
            enc.sink.write_padding().map(|()| enc.sink.tally.chunks)
        };
        assert_eq!(pad_after((1 << 35) - rest).unwrap(), n, "no padding frame");
        // 100 bytes short of the class: one padding frame, one too many. One byte over the
        // class: 512 MiB of them.
        for written in [(1 << 35) - rest - 100, (1 << 35) - rest + 1] {
            let e = pad_after(written).unwrap_err();
            assert!(e.to_string().contains("frames with padding"), "{e}");
        }
    }

    /// Every plan fills the gap to a Padmé class exactly, with frames of 1 to C + 5 zeros.
    #[test]
    fn padding_plans_reach_a_class_exactly() {
        let c = 1024;
        for unpadded in (200..3_000_000u64).step_by(997).chain([201, 4096, 1 << 20]) {
            let plan = padding_plan(unpadded, c);
            let total = unpadded + plan.iter().map(|&x| 25 + x as u64).sum::<u64>();
            assert_eq!(format::frame::padme(total), total, "{unpadded}");
            assert!(total - unpadded < 26 || plan.iter().all(|&x| (1..=c + 5).contains(&x)));
            assert!(
                plan.iter().all(|&x| (1..=c + 5).contains(&x)),
                "{unpadded}: {plan:?}"
            );
            assert!(
                (total - unpadded) * 100 <= unpadded * 12 + 26 * 100,
                "{unpadded}"
            );
            // FORMAT.md §3.3: `m = ceil(pad / (C + 30))` frames, as even as possible, earlier
            // frames one byte larger.
            let pad = total - unpadded;
            assert_eq!(plan.len() as u64, pad.div_ceil(c as u64 + 30), "{unpadded}");
            assert!(
                plan.windows(2).all(|w| w[0] == w[1] || w[0] == w[1] + 1),
                "{unpadded}: {plan:?}"
            );
        }
    }
}
