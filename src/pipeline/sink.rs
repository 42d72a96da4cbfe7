//! The engine's chunk writer, written once for every format it writes: [`ChunkWriter`] takes
//! input (`Write`, a reader, a regular file read by the workers), keeps the sticky failure, and
//! ends the stream, over a format's [`ChunkSink`] (the zseal container, age STREAM with or
//! without seekable zstd inside, crypt4gh), which seals the chunks it is handed through the
//! engine's one write driver (pipeline/emit.rs) and writes them in order.

use std::fs::File;
use std::io::{self, Read, Write};
use std::sync::atomic::AtomicU64;
use std::sync::Arc;
use std::time::Duration;

use rand_core::{CryptoRng, RngCore};

use super::intake::Intake;
use super::offset::OffsetWrites;
use super::options::EncryptOptions;
use crate::crypto::{Keying, Recipient};
use crate::error::{Error, Result};
use crate::stats::{timed, Stages, StreamStats};

/// What every format's sink holds besides its own sealing state: the writer the output goes
/// to (or the file written by offset), the intake, the time per stage, the progress counter,
/// and the sticky failure. The write driver (pipeline/emit.rs) works on it.
pub struct SinkState<W> {
    pub(crate) inner: W,
    pub(crate) intake: Intake,
    pub(crate) stages: Stages,
    /// Plaintext bytes sealed and written out, for a progress display on another thread.
    pub(crate) progress: Option<Arc<AtomicU64>>,
    pub(crate) failed: Option<Error>,
    /// The output file written by offset ([`ChunkWriter::write_frames_to`]).
    pub(crate) offsets: Option<OffsetWrites>,
}

impl<W> SinkState<W> {
    pub(crate) fn new(inner: W, intake: Intake) -> Self {
        SinkState {
            inner,
            intake,
            stages: Stages::default(),
            progress: None,
            failed: None,
            offsets: None,
        }
    }

    /// A sink's statistics: `chunks` sealed on `threads` workers, and the time per stage.
    pub(crate) fn stats(&self, chunks: u64, threads: usize) -> StreamStats {
        StreamStats {
            chunks,
            frames_opened: chunks,
            threads,
            stages: self.stages,
        }
    }
}

/// What a format gives the engine's writer: the sealing of the chunks its intake fills, into
/// its inner writer.
///
/// Public only because the writers' types name it; implemented inside the crate.
#[ambassador::delegatable_trait]
pub trait ChunkSink {
    /// Where the output goes.
    type Inner: Write;
    /// The parts every sink has.
    fn state(&mut self) -> &mut SinkState<Self::Inner>;
    /// Hands the full chunk in the intake to a worker.
    fn submit(&mut self) -> Result<()>;
    /// Hands a worker a full chunk to read from `file` at `offset` itself (unix only).
    fn submit_at(&mut self, file: &Arc<File>, offset: u64) -> Result<()> {
        let _ = (file, offset);
        Err(Error::Bug("positional reads need a unix system".into()))
    }
    /// Worker threads the stream runs (1: the calling thread alone).
    fn threads(&self) -> usize;
    /// Whether the workers may write the output by offset ([`ChunkWriter::write_frames_to`]).
    fn writes_by_offset(&self) -> bool {
        true
    }
    /// From now on the output goes into `file` by offset from `at` (the header is before it),
    /// counting what is written into `count`.
    fn write_by_offset(&mut self, file: File, at: u64, count: Option<Arc<AtomicU64>>) {
        self.state().offsets = Some(OffsetWrites::new(file, at, count));
    }
    /// Writes out what is sealed already, for `Write::flush` ([`super::emit::flush`]).
    fn flush_sealed(&mut self) -> Result<()>;
    /// Seals what is left and writes the end of the file; flushes.
    fn end(&mut self) -> Result<()>;
    /// Chunks, threads and time per stage so far.
    fn stats(&self) -> StreamStats;
    /// The whole-plaintext digest in the standard tool's hex form, once `end` ran: a
    /// container's with a digest; `None` otherwise (an age file records none).
    fn digest_hex(&self) -> Option<String> {
        None
    }
    /// The armored signatures that go beside the file (a crypt4gh file's, FORMAT.md §13.9),
    /// once `end` ran; none for the formats that hold their signatures or have none.
    fn signatures(&self) -> Vec<String> {
        Vec::new()
    }
    /// Gives back the parts, the inner writer among them.
    fn into_state(self) -> SinkState<Self::Inner>
    where
        Self: Sized;
}

/// A sink that seals to [`Recipient`]s: made by writing its header (a container's, an age
/// file's, or either, chosen by [`EncryptOptions::format`]), which is what
/// [`ChunkWriter::new`] does for each.
///
/// Public only because the writers' constructors name it; implemented inside the crate.
pub trait SealTo: ChunkSink + Sized {
    /// Writes the header for `keys`' recipients to `inner`, drawing the file key, salts and
    /// nonces from it, and returns the sink.
    fn open(inner: Self::Inner, keys: Keying<'_>, opts: &EncryptOptions) -> Result<Self>;
}

impl<S: SealTo> ChunkWriter<S> {
    /// Writes the header for `recipients` (at least one) to `inner` and returns the stream.
    pub fn new(
        inner: S::Inner,
        recipients: &[&dyn Recipient],
        opts: &EncryptOptions,
    ) -> Result<Self> {
        Self::with_rng(inner, recipients, opts, &mut rand_core::OsRng)
    }

    /// As [`ChunkWriter::new`], drawing the file key, salts and nonces from `rng` (tests use a
    /// seeded one to produce reproducible files; production code must pass a CSPRNG).
    pub fn with_rng(
        inner: S::Inner,
        recipients: &[&dyn Recipient],
        opts: &EncryptOptions,
        rng: &mut (impl RngCore + CryptoRng),
    ) -> Result<Self> {
        S::open(inner, Keying::new(recipients, rng), opts).map(ChunkWriter::from_sink)
    }
}

/// The engine's writer of one format: `Write`, then [`ChunkWriter::finish`]. Dropped
/// unfinished, it leaves a file without its end, which every reader rejects.
pub struct ChunkWriter<S> {
    pub(crate) sink: S,
}

impl<S> ChunkWriter<S> {
    pub(crate) fn from_sink(sink: S) -> Self {
        ChunkWriter { sink }
    }
}

impl<S: ChunkSink> ChunkWriter<S> {
    /// The failure, if the stream has failed.
    pub(crate) fn check(&mut self) -> Result<()> {
        match &self.sink.state().failed {
            Some(e) => Err(e.clone()),
            None => Ok(()),
        }
    }

    /// Fails the stream for good with `e`; returns it.
    fn fail(&mut self, e: Error) -> Error {
        self.sink.state().failed = Some(e.clone());
        e
    }

    /// Runs `f` on the sink; if it fails, the stream stays failed.
    pub(crate) fn guard(&mut self, f: impl FnOnce(&mut S) -> Result<()>) -> Result<()> {
        f(&mut self.sink).map_err(|e| self.fail(e))
    }

    /// Adds the plaintext length of every chunk to `counter` as it is sealed and written out,
    /// so that another thread can show progress (whichever way the input is read).
    pub fn progress(&mut self, counter: Arc<AtomicU64>) {
        self.sink.state().progress = Some(counter);
    }

    /// Reads `r` to its end straight into chunk buffers (no intermediate copy) and returns the
    /// number of bytes read. Short reads from pipes still make full chunks. A read error fails
    /// the stream for good: the bytes read before it in the same chunk are not counted, so a
    /// caller that went on (another `copy_from`, `finish`) would seal a file with a hole.
    pub fn copy_from(&mut self, r: &mut impl Read) -> Result<u64> {
        self.check()?;
        let mut total = 0u64;
        loop {
            let mut read = Duration::ZERO;
            let room = self.sink.state().intake.room();
            let n = match timed(&mut read, || crate::io::read_full(r, room)) {
                Ok(n) => n,
                Err(e) => return Err(self.fail(e.into())),
            };
            let state = self.sink.state();
            state.stages.read += read;
            state.intake.filled(n);
            total += n as u64;
            // read_full stops short only at the end of the input.
            if !self.sink.state().intake.is_full() {
                return Ok(total);
            }
            self.guard(|s| s.submit())?;
        }
    }

    /// Reads the file `f` from its current position to its end, as [`ChunkWriter::copy_from`]
    /// does, and returns the number of bytes read. A regular file is read by the workers: each
    /// reads its own chunk with one positional read, so the calling thread is left only writing
    /// (on two cores that is what keeps encryption of incompressible data near the speed of a
    /// plain copy). Bytes appended while it runs are read on to the end; a file that becomes
    /// shorter while it is read is an error. Other files (pipes, terminals) are read in order.
    pub fn copy_from_file(&mut self, f: &File) -> Result<u64> {
        self.check()?;
        let mut total = 0;
        // With one thread too: the job then runs on the calling thread, reading straight into
        // the buffer it seals, where reading through the intake would copy every byte once more
        // (docs/PERFORMANCE.md §6).
        #[cfg(unix)]
        if self.sink.state().intake.len() == 0 {
            let c = self.sink.state().intake.chunk_size();
            total = super::intake::file_chunks(f, c, |file, pos| {
                self.guard(|s| s.submit_at(file, pos))
            })
            .map_err(|e| self.fail(e))?;
        }
        Ok(total + self.copy_from(&mut &*f)?)
    }

    /// Lets the workers write the sealed output into `file` themselves, by offset, instead of
    /// the calling thread writing it through the inner writer. `file` must be the file the
    /// inner writer writes into, sharing its position (a `File::try_clone` of it, or a
    /// duplicate of the descriptor): the header is flushed through the inner writer now,
    /// everything after it is written into `file` at the offsets that follow, and `finish`
    /// leaves the shared position at the file's end. `count`, if given, counts the bytes
    /// written. Ignored (the inner writer writes everything) unless `file` is a regular file not
    /// opened for appending, on a unix system, the stream runs more than one thread (and, for a
    /// container, no adaptive level), and no data was written yet. Output lands out of order,
    /// so a reader following the file while it grows may meet a hole (zeros) where a job is
    /// still writing. A failed (or dropped) stream waits for the writes it handed out before it
    /// returns.
    pub fn write_frames_to(&mut self, file: File, count: Option<Arc<AtomicU64>>) -> Result<()> {
        self.check()?;
        let fresh = self.sink.stats().chunks == 0 && self.sink.state().intake.len() == 0;
        if self.sink.threads() < 2 || !fresh || !self.sink.writes_by_offset() {
            return Ok(());
        }
        let inner = &mut self.sink.state().inner;
        if let Some(at) = crate::io::positional_start(&file, || inner.flush())? {
            self.sink.write_by_offset(file, at, count);
        }
        Ok(())
    }

    /// Ends the stream: seals the last chunk, writes the end of the file, flushes, and returns
    /// the inner writer.
    pub fn finish(self) -> Result<S::Inner> {
        self.finish_with_stats().map(|(w, _)| w)
    }

    /// As [`ChunkWriter::finish`], also returning the stream's counters.
    pub fn finish_with_stats(self) -> Result<(S::Inner, StreamStats)> {
        self.close().map(|(w, stats, _)| (w, stats))
    }

    /// As [`ChunkWriter::finish`], also returning the whole-plaintext digest it recorded in the
    /// standard tool's hex form (what `b3sum`/`xxhsum -H3` print, and a decrypt returns);
    /// `None` for `--hash none` and for an age file.
    pub fn finish_with_digest(self) -> Result<(S::Inner, Option<String>)> {
        self.close().map(|(w, _, digest)| (w, digest))
    }

    /// As [`ChunkWriter::finish_with_stats`], also returning the armored SSHSIGs of the
    /// plaintext's statement that go beside the file (FORMAT.md §13.9: a crypt4gh file written
    /// with [`crate::EncryptOptions::sign`] keys); none for the other formats.
    pub fn finish_with_signatures(mut self) -> Result<(S::Inner, StreamStats, Vec<String>)> {
        self.check()?;
        self.guard(|s| s.end())?;
        let (stats, signatures) = (self.sink.stats(), self.sink.signatures());
        Ok((self.sink.into_state().inner, stats, signatures))
    }

    /// Ends the stream, and gives back the inner writer with what the end leaves to know.
    fn close(mut self) -> Result<(S::Inner, StreamStats, Option<String>)> {
        self.check()?;
        self.guard(|s| s.end())?;
        let (stats, digest) = (self.sink.stats(), self.sink.digest_hex());
        Ok((self.sink.into_state().inner, stats, digest))
    }

    /// Chunks, threads and time per stage so far.
    pub fn stats(&self) -> StreamStats {
        self.sink.stats()
    }
}

impl<S: ChunkSink> Write for ChunkWriter<S> {
    /// As much of `buf` as the chunk has room for, submitted once full.
    fn write(&mut self, buf: &[u8]) -> io::Result<usize> {
        self.check()?;
        let n = self.sink.state().intake.write(buf);
        if self.sink.state().intake.is_full() {
            self.guard(|s| s.submit())?;
        }
        Ok(n)
    }

    /// Writes out what is sealed already. A partial chunk stays until it is full or until
    /// `finish`: chunks other than the last must be full.
    fn flush(&mut self) -> io::Result<()> {
        self.check()?;
        self.guard(|s| s.flush_sealed())?;
        self.sink.state().inner.flush()
    }
}
