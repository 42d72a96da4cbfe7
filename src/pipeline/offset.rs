//! The writers' one way of writing the output by offset ([`ChunkWriter::write_frames_to`]): the
//! output file, the offset where the next bytes go, and the workers' writes still going. Bytes
//! take their offset in stream order, in one of two ways:
//! - handed out when released ([`OffsetWrites::hand_out`]): the calling thread releases sealed
//!   chunks in order and hands each out at the offset the lengths before it give; a long one is
//!   written by a worker (its buffer comes back through a channel for reuse), a short one by the
//!   calling thread at once. The container's frames and crypt4gh's segments, whose length is
//!   known only once sealed (compression), or that are written from the buffer they were sealed
//!   in, go this way.
//! - reserved when queued ([`OffsetWrites::reserve`]): a job whose output length is known before
//!   it runs (age's STREAM chunks) is given its offset, and writes its bytes itself as it seals
//!   them, from a buffer that stays in the core's cache.
//!
//! Either way the write is counted as pending until it is done, and a stream dropped after a
//! failure waits for every one of them. The readers' counterpart, a regular file the workers
//! read by offset, is [`ReadAt`] (the container's long frame bodies, the segment reader's jobs).
//!
//! [`ChunkWriter::write_frames_to`]: super::ChunkWriter::write_frames_to

use std::io;
use std::sync::atomic::{AtomicU64, Ordering};
use std::sync::Arc;
use std::time::Duration;

use super::intake::{Intake, Spare};
use crate::error::{Error, Result};
use crate::stats::{timed, Stages};

/// Writes being done by the workers at once, at most: two keep a write going while the next is
/// handed out (measured against one in docs/PERFORMANCE.md §15).
const WRITES_IN_FLIGHT: usize = 2;

/// Sealed chunks this long and longer are written by a worker; shorter ones (compressed text,
/// about 1 MiB per 8 MiB chunk) by the calling thread, at their offset, as they come: a worker's
/// write would wait behind chunks being compressed, and hold up the calling thread that waits
/// for its buffer.
pub(crate) const WORKER_WRITE_MIN: usize = 2 << 20;

/// The output file written by offset, and the workers' writes still going.
pub(crate) struct OffsetWrites {
    file: Arc<std::fs::File>,
    /// Where the next bytes go in `file`.
    at: u64,
    /// Counts the bytes written (the output counter a progress display reads).
    count: Option<Arc<AtomicU64>>,
    done: (
        crossbeam_channel::Sender<Written>,
        crossbeam_channel::Receiver<Written>,
    ),
    /// Writes handed out and not yet back.
    pending: usize,
}

/// A stream dropped before its end (after a failure) still waits for the writes it handed out:
/// none lands in the file after the caller has seen the error.
impl Drop for OffsetWrites {
    fn drop(&mut self) {
        while self.pending > 0 && self.done.1.recv().is_ok() {
            self.pending -= 1;
        }
    }
}

/// One write, back from the worker that did it, with its buffer for reuse.
struct Written {
    result: Result<()>,
    buffer: Vec<u8>,
    spare: Spare,
    took: Duration,
}

/// Bytes to be written at the next offset: `buffer[range]`, and where the buffer goes back.
pub(crate) struct Handed {
    pub(crate) buffer: Vec<u8>,
    pub(crate) range: std::ops::Range<usize>,
    pub(crate) spare: Spare,
    /// What the bytes are, for an error message (" (frame 7)").
    pub(crate) what: String,
}

impl OffsetWrites {
    /// Writes into `file` from offset `at` on, counting what is written into `count`.
    pub(crate) fn new(file: std::fs::File, at: u64, count: Option<Arc<AtomicU64>>) -> Self {
        OffsetWrites {
            file: Arc::new(file),
            at,
            count,
            done: crossbeam_channel::unbounded(),
            pending: 0,
        }
    }

    /// Writes `bytes` at the next offset on the calling thread (workers' writes before it may
    /// still be going).
    pub(crate) fn write_here(&mut self, bytes: &[u8], took: &mut Duration) -> Result<()> {
        write_counted((&self.file, self.at), bytes, &self.count, took, String::new)?;
        self.at += bytes.len() as u64;
        Ok(())
    }

    /// Waits until at most `most` of the workers' writes are still going; gives the buffers of
    /// those done back to `intake`. A failed write fails the stream.
    pub(crate) fn settle(
        &mut self,
        most: usize,
        stages: &mut Stages,
        intake: &mut Intake,
    ) -> Result<()> {
        let mut failed = None;
        // After a failure every write still going is waited for, so that none lands later.
        while self.pending > most
            || (self.pending > 0 && (!self.done.1.is_empty() || failed.is_some()))
        {
            let Ok(w) = self.done.1.recv() else {
                return Err(Error::Bug("a write by offset was lost".into()));
            };
            self.pending -= 1;
            stages.write += w.took;
            intake.give_back(w.buffer, w.spare);
            if let Err(e) = w.result {
                failed.get_or_insert(e);
            }
        }
        failed.map_or(Ok(()), Err)
    }

    /// Hands `h` to a worker of `pool`, which writes it at the next offset; first waits until
    /// fewer than [`WRITES_IN_FLIGHT`] writes are going.
    pub(crate) fn hand_out(
        &mut self,
        pool: &rayon::ThreadPool,
        h: Handed,
        stages: &mut Stages,
        intake: &mut Intake,
    ) -> Result<()> {
        self.settle(WRITES_IN_FLIGHT - 1, stages, intake)?;
        let (file, at, count, done) = (
            Arc::clone(&self.file),
            self.at,
            self.count.clone(),
            self.done.0.clone(),
        );
        let len = h.range.len();
        self.at += len as u64;
        self.pending += 1;
        pool.spawn(move || {
            let mut took = Duration::ZERO;
            let bytes = &h.buffer[h.range.clone()];
            let result = super::window::guarded(|| {
                write_counted((&file, at), bytes, &count, &mut took, || h.what.clone())
            });
            let written = Written {
                result,
                buffer: h.buffer,
                spare: h.spare,
                took,
            };
            // The stream may be gone (dropped after a failure): then so is the buffer.
            let _ = done.send(written);
        });
        Ok(())
    }

    /// The next `len` bytes' place, for a job that writes them itself ([`Slot::write_at`]): its
    /// write is pending until the slot is dropped (written, failed or never run).
    pub(crate) fn reserve(&mut self, len: u64) -> Slot {
        let at = self.at;
        self.at += len;
        self.pending += 1;
        Slot {
            file: Arc::clone(&self.file),
            at,
            len,
            count: self.count.clone(),
            done: self.done.0.clone(),
            result: Ok(()),
            took: Duration::ZERO,
        }
    }

    /// Waits for every write, and moves the shared file position where a sequential write would
    /// have left it (the end of what was written).
    pub(crate) fn finish(&mut self, stages: &mut Stages, intake: &mut Intake) -> Result<()> {
        self.settle(0, stages, intake)?;
        io::Seek::seek(&mut &*self.file, io::SeekFrom::Start(self.at))?;
        Ok(())
    }
}

/// A place in the output file reserved for a job's bytes ([`OffsetWrites::reserve`]). Dropped,
/// it reports the job's writes (their time and the first failure) as one pending write done.
pub(crate) struct Slot {
    file: Arc<std::fs::File>,
    at: u64,
    len: u64,
    count: Option<Arc<AtomicU64>>,
    done: crossbeam_channel::Sender<Written>,
    result: Result<()>,
    took: Duration,
}

impl Slot {
    /// Writes `bytes` at `from` bytes into the slot; `what` says what they are, for an error.
    pub(crate) fn write_at(
        &mut self,
        from: u64,
        bytes: &[u8],
        what: impl FnOnce() -> String,
    ) -> Result<()> {
        let at = self.at + from;
        if from + bytes.len() as u64 > self.len {
            return Err(Error::Bug(format!(
                "a write past its reserved place{}",
                what()
            )));
        }
        let r = write_counted((&self.file, at), bytes, &self.count, &mut self.took, what);
        if let (Err(e), true) = (&r, self.result.is_ok()) {
            self.result = Err(e.clone());
        }
        r
    }
}

impl Drop for Slot {
    fn drop(&mut self) {
        let written = Written {
            result: std::mem::replace(&mut self.result, Ok(())),
            buffer: Vec::new(),
            spare: Spare::Drop,
            took: self.took,
        };
        // The stream may be gone (dropped after a failure): nobody to tell.
        let _ = self.done.send(written);
    }
}

/// A failed positional write into the output, saying where.
/// Writes `bytes` at offset `at` of `file`, timed into `took`, and adds them to `count` once
/// written; `what` names them in an error.
fn write_counted(
    (file, at): (&std::fs::File, u64),
    bytes: &[u8],
    count: &Option<Arc<AtomicU64>>,
    took: &mut Duration,
    what: impl FnOnce() -> String,
) -> Result<()> {
    timed(took, || crate::io::write_all_at(file, bytes, at))
        .map_err(|e| not_written(e, &what(), at))?;
    if let Some(c) = count {
        c.fetch_add(bytes.len() as u64, Ordering::Relaxed);
    }
    Ok(())
}

fn not_written(e: io::Error, what: &str, at: u64) -> Error {
    let message = format!("cannot write the output at offset {at}{what}: {e}");
    Error::Io(Arc::new(io::Error::new(e.kind(), message)))
}

/// A regular file the workers read by offset, and the counter of bytes read from it (a progress
/// display's).
pub(crate) struct ReadAt {
    pub(crate) file: std::fs::File,
    pub(crate) count: Option<Arc<AtomicU64>>,
}

impl ReadAt {
    /// `file`, to be read by offset, when it is a regular file on a unix system (positional
    /// reads of anything else are not the bytes a stream would give); `None` otherwise.
    pub(crate) fn for_file(
        file: std::fs::File,
        count: Option<Arc<AtomicU64>>,
    ) -> Result<Option<Arc<ReadAt>>> {
        let regular = cfg!(unix) && file.metadata()?.is_file();
        Ok(regular.then(|| Arc::new(ReadAt { file, count })))
    }

    /// Reads `buf.len()` bytes at `at`; a file that ends before them is cut where `what()` says.
    #[cfg(unix)]
    pub(crate) fn read(
        &self,
        buf: &mut [u8],
        at: u64,
        what: impl FnOnce() -> String,
    ) -> Result<()> {
        use std::os::unix::fs::FileExt;
        match self.file.read_exact_at(buf, at) {
            Ok(()) => {
                if let Some(c) = &self.count {
                    c.fetch_add(buf.len() as u64, Ordering::Relaxed);
                }
                Ok(())
            }
            Err(e) if e.kind() == io::ErrorKind::UnexpectedEof => Err(Error::Truncated(what())),
            Err(e) => Err(e.into()),
        }
    }

    #[cfg(not(unix))]
    pub(crate) fn read(&self, _: &mut [u8], _: u64, _: impl FnOnce() -> String) -> Result<()> {
        Err(Error::Bug("positional reads need a unix system".into()))
    }
}
