//! The adaptive compression level (`--adapt`): a container's writer moves zstd's level
//! between a minimum and a maximum from how long it waits on its output against on its workers.

/// The adaptive level's controller (`EncryptOptions::adapt`), run on the calling thread as
/// chunks are written out, in order.
///
/// After each chunk it compares the time spent blocked writing the output with the time spent
/// waiting for the workers since the previous chunk. Writing much longer than waiting means the
/// output is the bottleneck: the level goes up, by more the more lopsided the two are. Waiting
/// longer means the workers are: the level goes down. Chunks already in flight were sealed at
/// the old level, so after a change it holds still until the first chunk submitted under the
/// new level comes out.
#[derive(Debug)]
pub(super) struct Adapt {
    pub(super) min: i32,
    pub(super) max: i32,
    pub(super) level: i32,
    /// Index of the first chunk submitted after the last change.
    pub(super) settle: u64,
    pub(super) write: std::time::Duration,
    pub(super) wait: std::time::Duration,
    /// The stream's time waiting for workers when the last chunk was released: what it waited
    /// since is this chunk's.
    pub(super) waited: std::time::Duration,
}

/// How an adaptive range is sealed: its bounds (`None`: a fixed level). A resumed upload
/// never seals a chunk again at an earlier run's level: what it seals is new pieces
/// (FORMAT.md §14.6), so no level is replayed.
#[derive(Clone, Debug, Default)]
pub struct AdaptPlan {
    pub bounds: Option<(i32, i32)>,
}

impl Adapt {
    pub(super) fn new(min: i32, max: i32) -> Self {
        Adapt {
            min,
            max,
            level: min,
            settle: 0,
            write: Default::default(),
            wait: Default::default(),
            waited: Default::default(),
        }
    }

    /// The controller of `plan` (`None` without bounds).
    pub(super) fn of(plan: AdaptPlan) -> Option<Self> {
        let (min, max) = plan.bounds?;
        Some(Adapt::new(min, max))
    }

    /// The level of the next chunk submitted.
    pub(super) fn next_level(&mut self) -> i32 {
        self.level
    }

    /// Takes in the times of the chunk `index` just written; `next` is the index the next
    /// submitted chunk will get.
    pub(super) fn observe(&mut self, index: u64, next: u64, write: std::time::Duration) {
        self.write += write;
        if index < self.settle {
            return;
        }
        // A millisecond on each side: below that, both are noise (a write into a pipe with
        // room, a result that was already there).
        let w = self.write.as_secs_f64() + 1e-3;
        let t = self.wait.as_secs_f64() + 1e-3;
        // Big steps only when the imbalance is big in absolute terms too (a slow network),
        // so that near the balance the level moves by one.
        let step = if w > 16.0 * t && w > 0.2 {
            4
        } else if w > 4.0 * t && w > 0.05 {
            2
        } else if w > 2.0 * t {
            1
        } else if t > 8.0 * w && t > 0.05 {
            -2
        } else if t > 2.0 * w {
            -1
        } else {
            0
        };
        let level = (self.level + step).clamp(self.min, self.max);
        // zstd has no level 0 (it means "default"); step over it.
        let level = match level {
            0 if step > 0 => 1.min(self.max),
            0 => (-1).max(self.min),
            l => l,
        };
        if level != self.level {
            self.level = level;
            self.settle = next;
        }
        self.write = Default::default();
        self.wait = Default::default();
    }
}
