//! The engine's write driver, written once for every format it writes (the read side's is
//! pipeline/drive.rs): the ordered window of jobs, filled as the input comes and drained in
//! stream order ([`push`], [`make_room`], [`release_ready`], [`drain`]); the output, written
//! through the inner writer or by offset into a regular file ([`SinkState::write_out`],
//! [`SinkState::hand_out`], [`SinkState::reserve`]); the counters ([`SinkState::count`]); and
//! the end ([`SinkState::close`]).
//!
//! A format supplies only its [`Sealing`]: the pure per-chunk step each job runs on a worker
//! (what it pushes), and what happens, in stream order, when a job's result comes back (its
//! tally, then its bytes handed to the output).

use std::io::Write;
use std::ops::Range;
use std::sync::atomic::Ordering;
use std::time::Duration;

use super::intake::Spare;
use super::offset::{Handed, Slot, WORKER_WRITE_MIN};
use super::sink::{ChunkSink, SinkState};
use super::window::Window;
use crate::error::{Error, Result};
use crate::stats::{timed, ChunkTimes};

/// What a format gives the write driver besides its [`ChunkSink`]: its window of jobs, and the
/// release of one job's result in stream order.
pub(crate) trait Sealing: ChunkSink {
    /// What a worker returns for one job.
    type Done: Send + 'static;

    /// The jobs in flight, in stream order.
    fn window(&mut self) -> &mut Window<Self::Done>;

    /// One result, in stream order: the format's tally, then its bytes written out
    /// ([`SinkState::hand_out`], [`SinkState::write_out`]) and its buffers given back.
    fn release(&mut self, done: Self::Done) -> Result<()>;

    /// Work the format hands out before a new job takes a place in the window (age's sealing
    /// of the plaintext its frames made): called while making room and after each release.
    fn ready(&mut self) {}
}

/// Queues `job` (the pure per-chunk step, run on a worker) once the window has room, releasing
/// results in order to make it; then releases whatever is done already, without waiting.
pub(crate) fn push<S: Sealing>(
    s: &mut S,
    job: impl FnOnce() -> Result<S::Done> + Send + 'static,
) -> Result<()> {
    make_room(s)?;
    queue(s, job)
}

/// Queues `job` in a window that has room ([`make_room`] was called); then releases whatever is
/// done already, without waiting.
pub(crate) fn queue<S: Sealing>(
    s: &mut S,
    job: impl FnOnce() -> Result<S::Done> + Send + 'static,
) -> Result<()> {
    s.window().push(job);
    release_ready(s)
}

/// Releases results in order (waiting for them) until the window has room for one more job.
pub(crate) fn make_room<S: Sealing>(s: &mut S) -> Result<()> {
    loop {
        s.ready();
        if s.window().has_room() {
            return Ok(());
        }
        let done = wait_oldest(s).ok_or_else(|| Error::Bug("a full window is empty".into()))?;
        s.release(done?)?;
    }
}

/// Releases the results that are there already, in order, without waiting for any.
fn release_ready<S: Sealing>(s: &mut S) -> Result<()> {
    while let Some(done) = s.window().next_ready() {
        s.release(done?)?;
        s.ready();
    }
    Ok(())
}

/// Releases every job in flight, in order, waiting for each.
pub(crate) fn drain<S: Sealing>(s: &mut S) -> Result<()> {
    while let Some(done) = wait_oldest(s) {
        s.release(done?)?;
        s.ready();
    }
    Ok(())
}

/// Everything sealed so far written out (`Write::flush`): results released, writes by offset
/// done.
pub(crate) fn flush<S: Sealing>(s: &mut S) -> Result<()> {
    release_ready(s)?;
    s.state().settle()
}

/// The chunk being filled, if it holds anything, submitted; then every job released.
pub(crate) fn finish_jobs<S: Sealing>(s: &mut S) -> Result<()> {
    if s.state().intake.len() > 0 {
        s.submit()?;
    }
    drain(s)
}

/// The oldest job's result, timing the wait for it.
fn wait_oldest<S: Sealing>(s: &mut S) -> Option<Result<S::Done>> {
    let mut waited = Duration::ZERO;
    let r = timed(&mut waited, || s.window().next());
    s.state().stages.wait += waited;
    r
}

impl<W: Write> SinkState<W> {
    /// A released job's counters: the `plain` input bytes it sealed (for a progress display),
    /// and its workers' times.
    pub(crate) fn count(&mut self, plain: usize, times: &ChunkTimes) {
        self.stages.add_chunk(times);
        if let Some(p) = &self.progress {
            p.fetch_add(plain as u64, Ordering::Relaxed);
        }
    }

    /// Writes `bytes` after what was written, on the calling thread: through the inner writer,
    /// or into the file at the next offset.
    pub(crate) fn write_out(&mut self, bytes: &[u8]) -> Result<()> {
        match &mut self.offsets {
            Some(o) => o.write_here(bytes, &mut self.stages.write),
            None => Ok(timed(&mut self.stages.write, || {
                self.inner.write_all(bytes)
            })?),
        }
    }

    /// Writes `buffer[range]` after what was written, and gives the buffer back to the intake as
    /// `spare`: writing by offset, a long run ([`WORKER_WRITE_MIN`]) is written by a worker of
    /// `window`'s pool (the buffer comes back once it is written); anything else is written
    /// here, at once. `what` names the bytes for an error message (" (frame 7)").
    pub(crate) fn hand_out<T: Send + 'static>(
        &mut self,
        window: &mut Window<T>,
        buffer: Vec<u8>,
        range: Range<usize>,
        spare: Spare,
        what: impl FnOnce() -> String,
    ) -> Result<()> {
        if let (Some(o), true) = (&mut self.offsets, range.len() >= WORKER_WRITE_MIN) {
            if let Some(pool) = window.pool()? {
                let handed = Handed {
                    buffer,
                    range,
                    spare,
                    what: what(),
                };
                return o.hand_out(&pool, handed, &mut self.stages, &mut self.intake);
            }
        }
        self.write_out(&buffer[range])?;
        self.intake.give_back(buffer, spare);
        Ok(())
    }

    /// Where the job queued next writes its `len` bytes itself, writing by offset: for a format
    /// that knows its job's output length before the job runs (age's STREAM chunks). `None`
    /// (the job leaves its bytes for [`SinkState::write_out`]) when the output is not written
    /// by offset. Jobs must reserve in stream order.
    pub(crate) fn reserve(&mut self, len: u64) -> Option<Slot> {
        self.offsets.as_mut().map(|o| o.reserve(len))
    }

    /// Waits for every write by offset (a reserving job's too); its time counts as writing.
    pub(crate) fn settle(&mut self) -> Result<()> {
        match &mut self.offsets {
            Some(o) => o.settle(0, &mut self.stages, &mut self.intake),
            None => Ok(()),
        }
    }

    /// Takes in the writes by offset already done, without waiting for any (their time; a
    /// failure among them fails the stream).
    pub(crate) fn settle_done(&mut self) -> Result<()> {
        match &mut self.offsets {
            Some(o) => o.settle(usize::MAX, &mut self.stages, &mut self.intake),
            None => Ok(()),
        }
    }

    /// The output's end: every write by offset done, the shared file position where a
    /// sequential write would have left it, the inner writer flushed.
    pub(crate) fn close(&mut self) -> Result<()> {
        if let Some(o) = &mut self.offsets {
            o.finish(&mut self.stages, &mut self.intake)?;
        }
        let inner = &mut self.inner;
        Ok(timed(&mut self.stages.write, || inner.flush())?)
    }
}
