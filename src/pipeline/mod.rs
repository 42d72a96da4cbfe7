//! The engine: read chunks → (hash, compress, seal) on workers → write frames in order, and the
//! reverse. [`Encryptor`] and [`Decryptor`] are the `Write`/`Read` adapters over it.
//!
//! Parallelism is a parameter, not a second copy of the code: [`Workers`] either runs a job on the
//! calling thread (one thread) or on a rayon pool, and both paths share every line of the chunk
//! logic. A bounded queue of tickets keeps at most `in_flight` chunks alive, so memory is
//! `in_flight × (2 × chunk size)` plus one codec context per worker, whatever the input size.

mod decrypt;
mod encrypt;

use std::collections::VecDeque;
use std::sync::Arc;

use crossbeam_channel::{bounded, Receiver};

pub use decrypt::{DecryptOptions, Decryptor, Locked};
pub use encrypt::{EncryptOptions, Encryptor};

use crate::error::{Error, Result};

/// Where chunk jobs run.
pub(crate) enum Workers {
    /// On the calling thread, at once (`threads = 1`).
    Inline,
    /// On a rayon pool owned by this stream.
    Pool(Arc<rayon::ThreadPool>),
}

/// A job's result, in submission order.
pub(crate) enum Ticket<T> {
    Ready(T),
    Waiting(Receiver<T>),
}

impl Workers {
    /// `threads = 0` means one per core.
    pub(crate) fn new(threads: usize) -> Result<Self> {
        let threads = if threads == 0 {
            available_threads()
        } else {
            threads
        };
        if threads == 1 {
            return Ok(Workers::Inline);
        }
        let pool = rayon::ThreadPoolBuilder::new()
            .num_threads(threads)
            .thread_name(|i| format!("zseal-worker-{i}"))
            .build()
            .map_err(|e| Error::InvalidOption(format!("cannot start {threads} threads: {e}")))?;
        Ok(Workers::Pool(Arc::new(pool)))
    }

    /// Threads that run jobs.
    pub(crate) fn threads(&self) -> usize {
        match self {
            Workers::Inline => 1,
            Workers::Pool(p) => p.current_num_threads(),
        }
    }

    /// How many chunks may be in flight: enough to keep every worker busy while the calling
    /// thread reads or writes one, and no more (memory is proportional to it).
    pub(crate) fn in_flight(&self) -> usize {
        match self {
            Workers::Inline => 1,
            Workers::Pool(p) => p.current_num_threads() + 2,
        }
    }

    pub(crate) fn submit<T, F>(&self, job: F) -> Ticket<T>
    where
        T: Send + 'static,
        F: FnOnce() -> T + Send + 'static,
    {
        match self {
            Workers::Inline => Ticket::Ready(job()),
            Workers::Pool(pool) => {
                let (tx, rx) = bounded(1);
                pool.spawn(move || {
                    // The receiver is gone only if the stream was dropped; nothing to report to.
                    let _ = tx.send(job());
                });
                Ticket::Waiting(rx)
            }
        }
    }
}

impl<T> Ticket<T> {
    fn wait(self) -> Result<T> {
        match self {
            Ticket::Ready(t) => Ok(t),
            Ticket::Waiting(rx) => rx
                .recv()
                .map_err(|_| Error::Poisoned("a worker thread panicked".into())),
        }
    }

    fn is_ready(&self) -> bool {
        match self {
            Ticket::Ready(_) => true,
            Ticket::Waiting(rx) => !rx.is_empty(),
        }
    }
}

/// The ordered queue of chunks in flight; a job's own error and a lost worker read alike.
pub(crate) struct InFlight<T> {
    queue: VecDeque<Ticket<Result<T>>>,
    limit: usize,
}

impl<T> InFlight<T> {
    pub(crate) fn new(limit: usize) -> Self {
        InFlight {
            queue: VecDeque::with_capacity(limit),
            limit,
        }
    }

    pub(crate) fn is_full(&self) -> bool {
        self.queue.len() >= self.limit
    }

    pub(crate) fn push(&mut self, t: Ticket<Result<T>>) {
        self.queue.push_back(t);
    }

    /// Forgets every chunk in flight (after a seek). Workers still busy finish into the void.
    pub(crate) fn clear(&mut self) {
        self.queue.clear();
    }

    /// The oldest result, waiting for it if needed.
    pub(crate) fn pop_wait(&mut self) -> Option<Result<T>> {
        self.queue.pop_front().map(|t| t.wait().and_then(|r| r))
    }

    /// The oldest result if it is already done.
    pub(crate) fn pop_ready(&mut self) -> Option<Result<T>> {
        if self.queue.front().is_some_and(Ticket::is_ready) {
            self.pop_wait()
        } else {
            None
        }
    }
}

/// Cores available to this process.
pub fn available_threads() -> usize {
    std::thread::available_parallelism().map_or(1, |n| n.get())
}
