//! The engine's read driver, written once for every format it reads: [`Drive`] owns the ordered
//! window of jobs in flight, the buffers kept for reuse, the stage times and the count of jobs,
//! and the failure held behind the chunks released before it; [`advance`] is the one loop that
//! reads input into jobs while the window has room, takes the oldest result, and releases it (or
//! its error, in stream order) into the reader's [`Cursor`].
//!
//! A format supplies only its [`Framing`]: how the input is cut into jobs (a container's frame
//! headers, fixed-size segments, a seek table's frames), the pure per-chunk step each job runs on
//! a worker, the checks that need order when a result is released, and its end.

use std::time::Duration;

use super::chunks::{Chunk, Cursor};
use super::window::Window;
use crate::error::{Error, Result};
use crate::stats::{timed, Stages};

/// What the driver owns for one stream of jobs (see the module documentation).
pub(crate) struct Drive<T> {
    /// The jobs in flight, in stream order.
    pub(crate) window: Window<T>,
    /// Buffers back from released chunks and jobs, for the next jobs.
    spares: Vec<Vec<u8>>,
    /// Time per stage (reading the input, waiting for workers, the workers' own, writing out).
    pub(crate) stages: Stages,
    /// Jobs handed to the workers (frames or segments, as the format counts them).
    pub(crate) opened: u64,
    /// A failure that comes after the bytes released with it: the next [`advance`] returns it.
    pending: Option<Error>,
}

impl<T: Send + 'static> Drive<T> {
    pub(crate) fn new(window: Window<T>) -> Self {
        Drive {
            window,
            spares: Vec::new(),
            stages: Stages::default(),
            opened: 0,
            pending: None,
        }
    }

    /// Queues `job`, the pure per-chunk step, to run on a worker (results come out in order).
    pub(crate) fn push(&mut self, job: impl FnOnce() -> Result<T> + Send + 'static) {
        self.window.push(job);
    }

    /// Queues a result that needs no worker (a trailer read in order, a read failure).
    pub(crate) fn push_done(&mut self, r: Result<T>) {
        self.window.push_done(r);
    }

    /// Keeps `buf` for a later job (one never allocated is not worth keeping).
    pub(crate) fn recycle(&mut self, buf: Vec<u8>) {
        if buf.capacity() > 0 {
            self.spares.push(buf);
        }
    }

    /// A kept buffer (the one kept last), or an empty one.
    pub(crate) fn spare(&mut self) -> Vec<u8> {
        self.spares.pop().unwrap_or_default()
    }

    /// The kept buffers, for a format that picks among them ([`super::decrypt`]'s frames).
    pub(crate) fn spares(&mut self) -> &mut Vec<Vec<u8>> {
        &mut self.spares
    }

    /// Makes `chunk` current in `cursor`; the buffer of the chunk it replaces is kept.
    pub(crate) fn load(&mut self, cursor: &mut Cursor, chunk: Chunk) {
        let old = cursor.load(chunk);
        self.recycle(old);
    }

    /// Holds `e` until the bytes released with it were read: the next [`advance`] returns it.
    pub(crate) fn fail_after(&mut self, e: Option<Error>) {
        self.pending = e;
    }

    /// Forgets the jobs in flight and a held failure (a seek): jobs still running finish into
    /// the void.
    pub(crate) fn restart(&mut self) {
        self.window.clear();
        self.pending = None;
    }

    /// Time spent writing released bytes out (the reader adds to it).
    pub(crate) fn write_time(&mut self) -> &mut Duration {
        &mut self.stages.write
    }
}

/// What a format gives the driver: its framing of the input into jobs, and what happens, in
/// stream order, when a job's result comes back.
pub(crate) trait Framing {
    /// What a worker returns for one job.
    type Done: Send + 'static;

    /// The driver this format's jobs run through.
    fn drive(&mut self) -> &mut Drive<Self::Done>;

    /// True while the input may hold another job (not at its end, not past a read-ahead limit).
    fn more(&self) -> bool;

    /// Reads the next job's input and queues its per-chunk step ([`Drive::push`]), or a result
    /// that needs no worker ([`Drive::push_done`]).
    fn read_job(&mut self) -> Result<()>;

    /// After a read failed (the failure is queued behind the jobs before it): read no more.
    fn stop(&mut self);

    /// The next result in stream order: the checks that need order, then its chunk made current
    /// ([`Drive::load`]). True: a chunk (or nothing, for a frame that holds none) was released;
    /// false: the end (verified, or of a range).
    fn release(&mut self, done: Self::Done, cursor: &mut Cursor) -> Result<bool>;

    /// Nothing in flight and nothing left to read: the end of a range, or of an indexed read.
    fn end(&mut self, cursor: &mut Cursor) -> Result<bool> {
        let _ = cursor;
        Ok(false)
    }
}

/// Reads jobs while the window has room. A read failure takes its place in the window, so the
/// chunks before it still come out first: errors surface in stream order whatever the number
/// of threads.
pub(crate) fn fill<F: Framing + ?Sized>(f: &mut F) {
    while f.drive().window.has_room() && f.more() {
        if let Err(e) = f.read_job() {
            f.stop();
            f.drive().push_done(Err(e));
        }
    }
}

/// Makes the next chunk current: a held failure first, then the oldest result (waited for) once
/// the window was filled; false at the end. Written once, for every format's reader.
pub(crate) fn advance<F: Framing + ?Sized>(f: &mut F, cursor: &mut Cursor) -> Result<bool> {
    if let Some(e) = f.drive().pending.take() {
        return Err(e);
    }
    fill(f);
    let d = f.drive();
    let window = &mut d.window;
    match timed(&mut d.stages.wait, || window.next()) {
        Some(Ok(done)) => f.release(done, cursor),
        Some(Err(e)) => Err(e),
        None => f.end(cursor),
    }
}
