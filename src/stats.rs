//! What a stream cost: time per stage, chunks, threads, and the process's CPU time. The engine
//! records stage times as it goes (a few clock reads per chunk, nothing per byte), so `--stats`
//! turns zseal into a measuring tool for the pipeline it sits in: a large `read` means the
//! producer upstream is slow, a large `write` the consumer downstream, a large `wait` the workers.

use std::time::{Duration, Instant};

/// Time spent in each stage of a stream.
///
/// `read`, `write` and `wait` are wall time on the calling thread. `hash`, `codec` and `cipher`
/// run on the workers and are summed over them, so with several threads they can add up to more
/// than the wall time.
#[derive(Clone, Copy, Debug, Default, PartialEq, Eq)]
pub struct Stages {
    /// Reading the input (plaintext when encrypting, frames when decrypting); positional reads
    /// done by the workers (`Encryptor::copy_from_file`) are included, summed over them.
    pub read: Duration,
    /// Hashing the plaintext (chunk hashes; the in-order merge is part of `write`/`wait`).
    pub hash: Duration,
    /// Compressing (encrypting) or decompressing (decrypting).
    pub codec: Duration,
    /// Sealing (encrypting) or authenticating and decrypting (decrypting).
    pub cipher: Duration,
    /// Writing the output (container frames, or plaintext from `copy_to`); frames written by
    /// the workers (`Encryptor::write_frames_to`) are included, summed over them.
    pub write: Duration,
    /// The calling thread waiting for a worker's chunk: the workers are the bottleneck.
    pub wait: Duration,
}

/// Counters of one stream, from [`crate::Encryptor::stats`] or [`crate::Decryptor::stats`].
#[derive(Clone, Copy, Debug, Default, PartialEq, Eq)]
pub struct StreamStats {
    /// Data chunks processed.
    pub chunks: u64,
    /// Frames the workers sealed or opened. Equal to `chunks` when encrypting or reading in
    /// order; a reader that seeks back and forth may decrypt a chunk more than once, each time
    /// counted here.
    pub frames_opened: u64,
    /// Worker threads.
    pub threads: usize,
    /// Time per stage.
    pub stages: Stages,
}

/// Times spent by a worker on one chunk.
#[derive(Clone, Copy, Debug, Default)]
pub(crate) struct ChunkTimes {
    /// A positional read done by the worker itself (`Encryptor::copy_from_file`).
    pub read: Duration,
    pub hash: Duration,
    pub codec: Duration,
    pub cipher: Duration,
}

impl Stages {
    pub(crate) fn add_chunk(&mut self, t: &ChunkTimes) {
        self.read += t.read;
        self.hash += t.hash;
        self.codec += t.codec;
        self.cipher += t.cipher;
    }
}

/// Runs `f` and adds its duration to `into`.
pub(crate) fn timed<T>(into: &mut Duration, f: impl FnOnce() -> T) -> T {
    let t = Instant::now();
    let r = f();
    *into += t.elapsed();
    r
}

/// CPU time of this process so far: (user, system). `None` where the platform does not say.
pub fn cpu_time() -> Option<(Duration, Duration)> {
    #[cfg(unix)]
    {
        use nix::sys::resource::{getrusage, UsageWho};
        let u = getrusage(UsageWho::RUSAGE_SELF).ok()?;
        let d = |t: nix::sys::time::TimeVal| {
            Duration::from_secs(t.tv_sec().max(0) as u64)
                + Duration::from_micros(t.tv_usec().max(0) as u64)
        };
        Some((d(u.user_time()), d(u.system_time())))
    }
    #[cfg(not(unix))]
    {
        None
    }
}

/// Wall and CPU time from a starting point: what `--stats` and `zseal bench` both report.
#[derive(Clone, Copy, Debug)]
pub struct Stopwatch {
    wall: Instant,
    cpu: Option<(Duration, Duration)>,
}

impl Stopwatch {
    /// Starts now.
    pub fn start() -> Stopwatch {
        Stopwatch {
            wall: Instant::now(),
            cpu: cpu_time(),
        }
    }

    /// Wall time since the start.
    pub fn wall(&self) -> Duration {
        self.wall.elapsed()
    }

    /// CPU time (user, system) of the process since the start, when the platform says.
    pub fn cpu(&self) -> Option<(Duration, Duration)> {
        let ((u0, s0), (u1, s1)) = (self.cpu?, cpu_time()?);
        Some((u1.saturating_sub(u0), s1.saturating_sub(s0)))
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn cpu_time_moves() {
        let (u0, s0) = cpu_time().expect("unix reports CPU time");
        let mut x = 0u64;
        for i in 0..20_000_000u64 {
            x = x.wrapping_mul(31).wrapping_add(i);
        }
        std::hint::black_box(x);
        let (u1, s1) = cpu_time().unwrap();
        assert!(u1 + s1 > u0 + s0);
    }
}
