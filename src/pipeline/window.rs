//! The ordered window of chunks in flight, shared by both directions: jobs go in in stream
//! order, run on a pool (or inline), and come out in the same order. At most `limit` are in
//! flight, so memory is bounded by the window, not by the input.
//!
//! The first job of a window is held back until a second one arrives: a stream of a single chunk
//! (`encrypt_to_vec(b"hello")`, a one-chunk range) runs on the calling thread, and the pool is
//! not even looked up (a process that only seals small things starts no thread). From the second
//! job on, every job runs on the pool at once.

use std::collections::VecDeque;
use std::sync::Arc;

use crossbeam_channel::{bounded, Receiver};

use super::threads::Threads;
use crate::error::{Error, Result};

type Job<T> = Box<dyn FnOnce() -> Result<T> + Send>;

enum Slot<T> {
    /// The first job, not started yet.
    Held(Job<T>),
    /// On the pool.
    Running(Receiver<Result<T>>),
    /// Finished (inline jobs, and results known without a job, such as a read error).
    Done(Result<T>),
}

/// See the module documentation.
pub(crate) struct Window<T> {
    threads: Threads,
    /// The pool, once a second job needed it.
    pool: Option<Arc<rayon::ThreadPool>>,
    queue: VecDeque<Slot<T>>,
    limit: usize,
}

/// Memory the buffers of the chunks in flight may take (two buffers of a chunk each) before the
/// window drops its spare slot: with 2 threads, 4 MiB chunks keep 4 in flight and 8 MiB chunks
/// 3, so that the default chunk size stays within 64 MiB of peak RSS with everything else.
const IN_FLIGHT_BUDGET: usize = 48 << 20;

impl<T: Send + 'static> Window<T> {
    /// A window for chunks of `chunk_size` bytes.
    pub(crate) fn new(threads: &Threads, chunk_size: usize) -> Self {
        let n = threads.count();
        // Enough to keep every worker busy while the calling thread reads or writes one chunk,
        // plus one spare slot to absorb uneven chunks when the memory budget allows it.
        let limit = match n {
            1 => 1,
            _ if (n + 2) * 2 * chunk_size <= IN_FLIGHT_BUDGET => n + 2,
            _ => n + 1,
        };
        Window {
            threads: threads.clone(),
            pool: None,
            queue: VecDeque::with_capacity(limit),
            limit,
        }
    }

    /// Threads that run jobs.
    pub(crate) fn threads(&self) -> usize {
        self.threads.count()
    }

    /// Chunks the window keeps in flight at most.
    pub(crate) fn limit(&self) -> usize {
        self.limit
    }

    /// The pool the window's jobs run on (started now if need be); `None` when they run on the
    /// calling thread.
    pub(crate) fn pool(&mut self) -> Result<Option<Arc<rayon::ThreadPool>>> {
        if self.limit == 1 {
            return Ok(None);
        }
        self.started_pool().map(Some)
    }

    /// The pool, started (or found) on first use.
    fn started_pool(&mut self) -> Result<Arc<rayon::ThreadPool>> {
        if let Some(p) = &self.pool {
            return Ok(Arc::clone(p));
        }
        let p = self.threads.pool()?;
        self.pool = Some(Arc::clone(&p));
        Ok(p)
    }

    pub(crate) fn has_room(&self) -> bool {
        self.queue.len() < self.limit
    }

    pub(crate) fn is_empty(&self) -> bool {
        self.queue.is_empty()
    }

    /// Queues `job` behind every job already queued.
    pub(crate) fn push(&mut self, job: impl FnOnce() -> Result<T> + Send + 'static) {
        if self.limit == 1 {
            self.queue.push_back(Slot::Done(guarded(job)));
            return;
        }
        if self.pool.is_none() && self.queue.is_empty() {
            self.queue.push_back(Slot::Held(Box::new(job)));
            return;
        }
        let pool = match self.started_pool() {
            Ok(p) => p,
            Err(e) => {
                self.queue.push_back(Slot::Done(Err(e)));
                return;
            }
        };
        // Only the first job of a window is ever held, so it is at the front.
        if let Some(front) = self.queue.front_mut() {
            if matches!(front, Slot::Held(_)) {
                let Slot::Held(held) = std::mem::replace(front, Slot::Done(Err(lost()))) else {
                    unreachable!("matched just above")
                };
                *front = Slot::Running(spawn(&pool, held));
            }
        }
        self.queue.push_back(Slot::Running(spawn(&pool, job)));
    }

    /// Queues a result that needs no work (it still comes out in order).
    pub(crate) fn push_done(&mut self, r: Result<T>) {
        self.queue.push_back(Slot::Done(r));
    }

    /// The oldest result, waiting for it (or running it, if it was held back). `None` when
    /// nothing is in flight.
    pub(crate) fn next(&mut self) -> Option<Result<T>> {
        Some(match self.queue.pop_front()? {
            Slot::Held(job) => guarded(job),
            Slot::Running(rx) => rx.recv().unwrap_or_else(|_| Err(lost())),
            Slot::Done(r) => r,
        })
    }

    /// The oldest result if it is already there.
    pub(crate) fn next_ready(&mut self) -> Option<Result<T>> {
        let ready = match self.queue.front()? {
            Slot::Held(_) => false,
            Slot::Running(rx) => !rx.is_empty(),
            Slot::Done(_) => true,
        };
        if ready {
            self.next()
        } else {
            None
        }
    }

    /// Forgets every job in flight (after a seek); jobs still running finish into the void.
    pub(crate) fn clear(&mut self) {
        self.queue.clear();
    }
}

fn spawn<T: Send + 'static>(
    pool: &rayon::ThreadPool,
    job: impl FnOnce() -> Result<T> + Send + 'static,
) -> Receiver<Result<T>> {
    let (tx, rx) = bounded(1);
    pool.spawn(move || {
        // The receiver is gone only if the stream was dropped: nobody to tell.
        let _ = tx.send(guarded(job));
    });
    rx
}

/// Runs `job`; a panic becomes [`Error::Bug`] with its message instead of tearing down the pool.
pub(crate) fn guarded<T>(job: impl FnOnce() -> Result<T>) -> Result<T> {
    std::panic::catch_unwind(std::panic::AssertUnwindSafe(job)).unwrap_or_else(|p| {
        let what = p
            .downcast_ref::<&str>()
            .map(|s| s.to_string())
            .or_else(|| p.downcast_ref::<String>().cloned())
            .unwrap_or_else(|| "no message".into());
        Err(Error::Bug(format!("a worker thread panicked: {what}")))
    })
}

pub(crate) fn lost() -> Error {
    Error::Bug("a worker thread ended without returning its chunk".into())
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn results_come_out_in_order_whatever_finishes_first() {
        for threads in [1, 2, 3] {
            let mut w = Window::new(&Threads::Count(threads), 1 << 20);
            let mut out = Vec::new();
            for i in 0..20u64 {
                while !w.has_room() {
                    out.push(w.next().unwrap().unwrap());
                }
                w.push(move || {
                    std::thread::sleep(std::time::Duration::from_micros((20 - i) * 50));
                    Ok(i)
                });
            }
            while let Some(r) = w.next() {
                out.push(r.unwrap());
            }
            assert_eq!(out, (0..20).collect::<Vec<_>>(), "threads={threads}");
        }
    }

    #[test]
    fn a_single_job_runs_on_the_calling_thread() {
        let mut w = Window::new(&Threads::Count(2), 1 << 20);
        let caller = std::thread::current().id();
        w.push(move || Ok(std::thread::current().id()));
        assert!(w.next_ready().is_none(), "held back, not started");
        assert_eq!(w.next().unwrap().unwrap(), caller);
        w.push(|| Ok(std::thread::current().id()));
        w.push(|| Ok(std::thread::current().id()));
        assert_ne!(w.next().unwrap().unwrap(), caller, "two jobs: on the pool");
    }

    #[test]
    fn the_window_takes_its_limit_and_no_more() {
        for (threads, limit) in [(1, 1), (2, 4), (3, 5)] {
            let mut w = Window::<u64>::new(&Threads::Count(threads), 1 << 20);
            assert_eq!(w.limit(), limit);
            assert!(w.is_empty());
            // Direct reads run their jobs on this pool, or on the calling thread alone.
            let pool = w.pool().unwrap().map(|p| p.current_num_threads());
            assert_eq!(pool, (threads > 1).then_some(threads), "threads={threads}");
            let mut n = 0;
            while w.has_room() {
                w.push(move || Ok(n));
                n += 1;
                assert!(!w.is_empty());
            }
            assert_eq!(n, limit as u64, "threads={threads}");
            for i in 0..n {
                assert_eq!(w.next().unwrap().unwrap(), i);
            }
            assert!(w.is_empty() && w.next().is_none());
        }
    }

    #[test]
    fn next_ready_never_waits() {
        let mut w = Window::<u64>::new(&Threads::Count(2), 1 << 20);
        let (go, wait) = bounded::<()>(0);
        w.push(|| Ok(0));
        w.push(move || {
            let _ = wait.recv();
            Ok(1)
        });
        // Job 0 finishes at once; job 1 runs until it is told to go.
        let deadline = std::time::Instant::now() + std::time::Duration::from_secs(20);
        let first = loop {
            if let Some(r) = w.next_ready() {
                break r.unwrap();
            }
            assert!(std::time::Instant::now() < deadline, "job 0 never ready");
            std::thread::sleep(std::time::Duration::from_millis(1));
        };
        assert_eq!(first, 0);
        assert!(w.next_ready().is_none(), "job 1 is still running");
        go.send(()).unwrap();
        assert_eq!(w.next().unwrap().unwrap(), 1);
        w.push_done(Ok(5));
        assert_eq!(
            w.next_ready().unwrap().unwrap(),
            5,
            "a known result is ready"
        );
        assert!(w.next_ready().is_none(), "nothing in flight");
    }

    #[test]
    fn a_panicking_job_is_reported_as_a_bug() {
        for threads in [1, 2] {
            let mut w = Window::<u8>::new(&Threads::Count(threads), 1 << 20);
            w.push(|| Ok(1));
            w.push(|| panic!("boom"));
            assert_eq!(w.next().unwrap().unwrap(), 1);
            let e = w.next().unwrap().unwrap_err();
            assert!(
                matches!(&e, Error::Bug(m) if m.contains("boom")),
                "{threads}: {e}"
            );
        }
    }
}
