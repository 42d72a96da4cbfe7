//! The age writer (FORMAT.md §10.3): standard age v1, sealed on the engine's workers. The input
//! is cut into chunks by the same [`Intake`] as a container's; with zstd each chunk becomes one
//! zstd frame on a worker (a raw-block frame when it does not compress), the calling thread
//! strings the frames together after the seekable marker, and every 16 STREAM chunks (1 MiB) of
//! that age plaintext go back to a worker to be sealed. Both kinds of job share one ordered
//! window, so the output is written in order and memory stays bounded by the jobs in flight.
//! `finish` appends the seek table and seals the final chunk.
//!
//! Without compression the input is the age plaintext: each job seals one chunk of the input
//! (`--chunk-size`, a multiple of age's 64 KiB STREAM chunk; 2 MiB unless given, [`RAW_JOB`]),
//! and the end of the input is cut into a job per worker. Into a regular file
//! ([`ChunkWriter::write_frames_to`](crate::pipeline::ChunkWriter::write_frames_to)) every
//! sealing job writes its own output by offset: a job seals whole STREAM chunks, so its output's
//! length, and so its place, is known before it runs ([`SinkState::reserve`]), and the calling
//! thread neither copies nor writes the payload. The window, the order of release and the
//! output are the engine's one write driver's (pipeline/emit.rs).

use std::collections::VecDeque;
use std::io::Write;
use std::sync::Arc;

use super::super::emit::{self, Sealing};
use super::super::intake::{input_shrank, read_chunk_at, Intake, Spare, ALIGN};
use super::super::options::EncryptOptions;
use super::super::sink::{ChunkSink, ChunkWriter, SealTo, SinkState};
use super::super::window::Window;
use crate::codec::Codec;
use crate::crypto::aead::{Cipher, PayloadCipher};
use crate::crypto::{Keying, PassphraseKdf};
use crate::error::{Error, Result};
use crate::format::age::{
    encode_header, mac_line_end, raw_zstd_frame_len, raw_zstd_headers, seek_table, CHUNK,
    MAX_FRAMES, NONCE_LEN, RAW_BLOCK, SEEKABLE_MARKER, TAG,
};
use crate::format::chunk_log2_of;
use crate::stats::{timed, ChunkTimes, StreamStats};

mod jobs;

use jobs::{Done, Piece, Source, Work, SEAL_BYTES};

/// Input per sealing job without compression unless a chunk size is given: a job's sealed bytes
/// wait in its buffer until the calling thread writes them (into a pipe), and buffers of 2 MiB
/// stay in cache where 8 MiB ones do not (docs/PERFORMANCE.md §6).
const RAW_JOB: usize = 2 << 20;

/// Age plaintext not yet handed to a sealing job: frames as they come back in order (or, without
/// compression, input buffers), and their length. The final chunk is never sealed before
/// `finish`, so more than a job's worth is kept back.
struct Queue {
    pieces: VecDeque<Piece>,
    len: usize,
    /// STREAM index of the next chunk to seal.
    next_chunk: u64,
    /// Age plaintext per sealing job: [`SEAL_BYTES`] of the zstd stream, or (without
    /// compression) one input chunk.
    seal_bytes: usize,
}

/// Input bytes taken in, and input chunks handed to jobs.
#[derive(Default)]
struct Tally {
    plaintext_len: u64,
    chunks: u64,
}

/// Writes an age v1 file of everything written to it into `W`: the engine's writer over an age
/// file's sink. See the module documentation.
pub type AgeWriter<W> = ChunkWriter<AgeSink<W>>;

/// The sealing of an age v1 file into `W`, for the engine's writer.
pub struct AgeSink<W: Write> {
    /// Dropped first: a job never started holds its place in the output file
    /// ([`SinkState::reserve`]), which the state's writes by offset wait for when dropped.
    window: Window<Done>,
    /// The output, the intake, the times, the progress counter and the sticky failure.
    state: SinkState<W>,
    work: Arc<Work>,
    queue: Queue,
    /// The seek table's entries: (compressed, decompressed) per frame, the marker first.
    table: Vec<(u32, u32)>,
    /// Input bytes taken in and chunks handed to jobs.
    tally: Tally,
    spares: Vec<Vec<u8>>,
}

/// [`AgeWriter::new`] and [`AgeWriter::with_rng`]: the age header for `recipients` (one
/// passphrase alone, or age/SSH recipients) and the payload nonce, written to `inner`.
/// `opts.codec` is `zstd[:LEVEL]` (a seekable zstd stream inside) or `none` (a plain age file);
/// `opts.chunk_size` is the zstd frame size; the cipher is age's (ChaCha20-Poly1305), and age
/// files have no digest and no padding (FORMAT.md §10.4).
impl<W: Write> SealTo for AgeSink<W> {
    fn open(mut inner: W, mut keys: Keying<'_>, opts: &EncryptOptions) -> Result<Self> {
        opts.check_for(super::super::Format::Age)?;
        let codec = match opts.codec {
            c @ Codec::Zstd(_) => Some(c),
            _ => None,
        };
        let chunk_log2 = chunk_log2_of(opts.chunk_size)?;
        let file_key = keys.file_key();
        let stanzas = keys.wrap(&file_key, PassphraseKdf::Scrypt)?;
        let mut header = encode_header(&stanzas);
        let mac = file_key.age_header_mac(&header);
        header.extend_from_slice(&mac_line_end(&mac));
        let mut nonce = [0u8; NONCE_LEN];
        keys.fill(&mut nonce);
        header.extend_from_slice(&nonce);
        inner.write_all(&header)?;
        let payload_key = file_key.age_payload_key(&nonce);
        // Without compression the input is the age plaintext: each input chunk is one sealing
        // job. With zstd, chunks become frames, and the stream of frames is sealed 1 MiB a job.
        let chunk_size = match (codec, opts.names_chunk_size()) {
            (None, false) => RAW_JOB,
            _ => 1usize << chunk_log2,
        };
        let seal_bytes = match codec {
            Some(_) => SEAL_BYTES,
            None => chunk_size,
        };
        let work = Work {
            cipher: PayloadCipher::new(Cipher::ChaCha20Poly1305, &payload_key.0),
            codec,
            chunk_log2,
        };
        let mut pending = VecDeque::new();
        let mut table = Vec::new();
        if codec.is_some() {
            pending.push_back(Piece::whole(SEEKABLE_MARKER.to_vec()));
            table.push((SEEKABLE_MARKER.len() as u32, 0));
        }
        let intake = Intake::new(0, chunk_size, chunk_size + ALIGN);
        Ok(AgeSink {
            // Jobs of two sizes share the window: sized for the sealing jobs, it keeps every
            // worker busy while a large frame is in flight.
            window: Window::new(&opts.threads, seal_bytes),
            state: SinkState::new(inner, intake),
            work: Arc::new(work),
            queue: Queue {
                len: pending.iter().map(Piece::len).sum(),
                pieces: pending,
                next_chunk: 0,
                seal_bytes,
            },
            table,
            tally: Tally::default(),
            spares: Vec::new(),
        })
    }
}

impl<W: Write> AgeSink<W> {
    fn end_file(&mut self) -> Result<()> {
        // Every frame back, in order, before the table.
        emit::finish_jobs(self)?;
        if self.work.codec.is_some() {
            let table = seek_table(&self.table);
            self.add_piece(Piece::whole(table));
        }
        while self.queue.len > self.queue.seal_bytes {
            emit::make_room(self)?;
        }
        // The rest, the final chunk last (an empty input: one empty final chunk), cut into a
        // job per worker so that the end of the file is not sealed on one core alone.
        let chunks = self.queue.len.div_ceil(CHUNK);
        let per_job = chunks.div_ceil(self.window.threads().max(1)).max(1) * CHUNK;
        while self.queue.len > per_job {
            let pieces = self.take_pieces(per_job);
            emit::make_room(self)?;
            self.push_seal(pieces, per_job, false);
        }
        let len = self.queue.len;
        let pieces = self.take_pieces(len);
        emit::make_room(self)?;
        self.push_seal(pieces, len, true);
        emit::drain(self)?;
        self.state.close()
    }

    /// A raw-block frame of the `plain` bytes at `offset` of `src`, as pieces: one small buffer
    /// holds the frame header and every block header, and the blocks are the bytes where they are.
    fn add_raw_frame(&mut self, src: Source, offset: u64, plain: usize) {
        let (frame, blocks) = raw_zstd_headers(plain);
        let mut heads = frame;
        for b in &blocks {
            heads.extend_from_slice(b);
        }
        let heads = Arc::new(heads);
        let mut at = 0;
        for i in 0..blocks.len() {
            let h = if i == 0 { 0..12 } else { 9 + 3 * i..12 + 3 * i };
            self.add_piece(Piece::part(Arc::clone(&heads), Spare::Drop, h));
            let size = (plain - at).min(RAW_BLOCK);
            if size > 0 {
                self.add_piece(Piece {
                    src: src.share(),
                    range: offset + at as u64..offset + (at + size) as u64,
                });
            }
            at += size;
        }
    }

    /// The seek table lists at most [`MAX_FRAMES`] frames (FORMAT.md §10.3): a writer fails
    /// before it would write a table a reader refuses.
    fn check_frames(&self) -> Result<()> {
        if self.work.codec.is_some() && self.tally.chunks + 1 >= u64::from(MAX_FRAMES) {
            return Err(Error::Limit(format!(
                "a compressed age file holds at most {MAX_FRAMES} frames: use a larger --chunk-size"
            )));
        }
        Ok(())
    }

    fn add_piece(&mut self, p: Piece) {
        self.queue.len += p.len();
        self.queue.pieces.push_back(p);
    }

    /// The first `n` pending bytes, as pieces (a piece cut in two shares its buffer).
    fn take_pieces(&mut self, n: usize) -> Vec<Piece> {
        let mut out = Vec::new();
        let mut need = n;
        while need > 0 {
            let front = self
                .queue
                .pieces
                .front_mut()
                .expect("n is at most what is pending");
            let take = front.len().min(need);
            if take == front.len() {
                out.push(self.queue.pieces.pop_front().expect("just seen"));
            } else {
                let start = front.range.start;
                out.push(Piece {
                    src: front.src.share(),
                    range: start..start + take as u64,
                });
                front.range.start += take as u64;
            }
            need -= take;
        }
        self.queue.len -= n;
        out
    }

    /// Hands out sealing jobs of `seal_bytes` while more than that is pending (so the final
    /// chunk is never among them) and the window has room.
    fn push_seals(&mut self) {
        while self.queue.len > self.queue.seal_bytes && self.window.has_room() {
            let pieces = self.take_pieces(self.queue.seal_bytes);
            self.push_seal(pieces, self.queue.seal_bytes, false);
        }
    }

    /// Queues the sealing of `len` bytes of `pieces` as the next STREAM chunks (`last`: the
    /// final chunk among them), into its reserved place when the output is written by offset.
    fn push_seal(&mut self, pieces: Vec<Piece>, len: usize, last: bool) {
        let first = self.queue.next_chunk;
        let chunks = len.div_ceil(CHUNK).max(usize::from(last && len == 0));
        self.queue.next_chunk += chunks as u64;
        let slot = self.state.reserve((len + chunks * TAG) as u64);
        let out = self.spares.pop().unwrap_or_default();
        // Without compression, progress counts the input bytes as they are sealed.
        let input = match self.work.codec {
            None => len as u64,
            Some(_) => 0,
        };
        let work = Arc::clone(&self.work);
        self.window
            .push(move || work.seal(first, pieces, len, last, out, input, slot));
    }
}

impl<W: Write> Sealing for AgeSink<W> {
    type Done = Done;

    fn window(&mut self) -> &mut Window<Done> {
        &mut self.window
    }

    /// One result, in order: a frame joins the pending plaintext; sealed chunks are written and
    /// the buffers no job needs any more are kept for reuse.
    fn release(&mut self, d: Done) -> Result<()> {
        match d {
            Done::Frame {
                frame,
                len,
                plain,
                input,
                times,
            } => {
                self.table.push((len as u32, plain as u32));
                self.state.count(plain, &times);
                self.state.intake.recycle_input(input);
                self.add_piece(Piece::part(Arc::new(frame), Spare::Output, 0..len));
            }
            Done::Raw {
                src,
                offset,
                plain,
                unused,
                times,
            } => {
                self.table
                    .push((raw_zstd_frame_len(plain) as u32, plain as u32));
                self.state.count(plain, &times);
                for (i, b) in unused.into_iter().enumerate() {
                    match i {
                        0 if matches!(src, Source::Buf(..)) => self.state.intake.recycle_output(b),
                        0 => self.state.intake.recycle_input(b),
                        _ => self.state.intake.recycle_output(b),
                    }
                }
                self.add_raw_frame(src, offset, plain);
            }
            Done::Sealed {
                out,
                len,
                pieces,
                input,
                times,
                wrote,
            } => {
                if !wrote {
                    self.state.write_out(&out[..len])?;
                }
                self.state.count(input as usize, &times);
                self.spares.push(out);
                if wrote {
                    // The writes the jobs did themselves, as they are done: their time, and a
                    // failure among them.
                    self.state.settle_done()?;
                }
                for p in pieces {
                    // The last job to use a buffer gives it back.
                    if let Source::Buf(b, spare) = p.src {
                        if let Ok(buf) = Arc::try_unwrap(b) {
                            self.state.intake.give_back(buf, spare);
                        }
                    }
                }
            }
        }
        Ok(())
    }

    /// The sealing work ready: jobs of `seal_bytes` while the window has room.
    fn ready(&mut self) {
        self.push_seals();
    }
}

impl<W: Write> ChunkSink for AgeSink<W> {
    type Inner = W;

    fn state(&mut self) -> &mut SinkState<W> {
        &mut self.state
    }

    /// The filled input buffer becomes a job: a zstd frame, or (without compression) age
    /// plaintext as it is.
    fn submit(&mut self) -> Result<()> {
        self.check_frames()?;
        let input = self.state.intake.take();
        self.tally.plaintext_len += input.len as u64;
        self.tally.chunks += 1;
        match self.work.codec {
            Some(_) => {
                let out = self.state.intake.output_buffer();
                let work = Arc::clone(&self.work);
                emit::push(self, move || work.frame(input, out))
            }
            None => {
                emit::make_room(self)?;
                let range = input.at..input.at + input.len;
                self.add_piece(Piece::part(Arc::new(input.buf), Spare::Input, range));
                Ok(())
            }
        }
    }

    /// A full chunk of the regular file `file` at `offset`, read by the worker that needs it:
    /// the frame's job with compression, the sealing job without.
    #[cfg(unix)]
    fn submit_at(&mut self, file: &Arc<std::fs::File>, offset: u64) -> Result<()> {
        use std::os::unix::fs::FileExt;
        self.check_frames()?;
        let len = self.state.intake.chunk_size();
        self.tally.plaintext_len += len as u64;
        self.tally.chunks += 1;
        match self.work.codec {
            Some(_) => {
                let input = self.state.intake.input_buffer();
                let out = self.state.intake.output_buffer();
                let (work, file) = (Arc::clone(&self.work), Arc::clone(file));
                emit::push(self, move || {
                    let mut read = std::time::Duration::ZERO;
                    // The probe reads its sample alone: a chunk that will not compress is
                    // read by the sealing jobs, straight from the file, and never here.
                    let raw = timed(&mut read, || {
                        crate::codec::probe(len, |at, slot| {
                            file.read_exact_at(slot, offset + at as u64)
                        })
                    })
                    .map_err(input_shrank)?;
                    if raw {
                        return Ok(Done::Raw {
                            src: Source::File(file),
                            offset,
                            plain: len,
                            unused: vec![input, out],
                            times: ChunkTimes {
                                read,
                                ..ChunkTimes::default()
                            },
                        });
                    }
                    let input = read_chunk_at(&file, input, 0, offset, len, &mut read)?;
                    let mut done = work.frame(input, out)?;
                    if let Done::Frame { times, .. } | Done::Raw { times, .. } = &mut done {
                        times.read += read;
                    }
                    Ok(done)
                })
            }
            None => {
                emit::make_room(self)?;
                self.add_piece(Piece {
                    src: Source::File(Arc::clone(file)),
                    range: offset..offset + len as u64,
                });
                Ok(())
            }
        }
    }

    fn threads(&self) -> usize {
        self.window.threads()
    }

    fn flush_sealed(&mut self) -> Result<()> {
        emit::flush(self)
    }

    /// The last chunk, the seek table, the final STREAM chunk.
    fn end(&mut self) -> Result<()> {
        self.end_file()
    }

    /// Input chunks, threads and time per stage so far.
    fn stats(&self) -> StreamStats {
        self.state.stats(self.tally.chunks, self.window.threads())
    }

    fn into_state(self) -> SinkState<W> {
        self.state
    }
}
