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
    /// Levels the next chunks must be sealed at, in order, before the controller's own (a
    /// resumed upload sealing again frames an earlier run may have sent: the same bytes).
    replay: std::collections::VecDeque<i32>,
    /// Where each chunk's level is recorded as it is submitted, in order (a resumable upload's
    /// log of parts sent).
    log: Option<LevelLog>,
}

/// The levels an adaptive writer chose, one per chunk in submission order (shared with the
/// writer's output, which records them beside the frames it sends).
pub type LevelLog = std::sync::Arc<std::sync::Mutex<Vec<i8>>>;

/// How an adaptive range is sealed: its bounds, the levels its first chunks must take
/// (`replay`), and where the levels chosen go (`log`).
#[derive(Clone, Debug, Default)]
pub struct AdaptPlan {
    pub bounds: Option<(i32, i32)>,
    pub replay: Vec<i8>,
    pub log: Option<LevelLog>,
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
            replay: Default::default(),
            log: None,
        }
    }

    /// The controller of `plan` (`None` without bounds).
    pub(super) fn of(plan: AdaptPlan) -> Option<Self> {
        let (min, max) = plan.bounds?;
        let mut a = Adapt::new(min, max);
        a.replay = plan.replay.iter().map(|&l| i32::from(l)).collect();
        a.log = plan.log;
        Some(a)
    }

    /// The level of the next chunk submitted: the replayed one while any is left, else the
    /// controller's; recorded in the log.
    pub(super) fn next_level(&mut self) -> i32 {
        let level = self.replay.pop_front().unwrap_or(self.level);
        if let Some(log) = &self.log {
            let mut log = log.lock().unwrap_or_else(|p| p.into_inner());
            // Levels are zstd's, -100..=22 (EncryptOptions::adapt checks them).
            log.push(level.clamp(i8::MIN.into(), i8::MAX.into()) as i8);
        }
        level
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
