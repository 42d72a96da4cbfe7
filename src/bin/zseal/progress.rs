//! The progress line on stderr: bytes, throughput, ratio so far and (when the input size is
//! known) a bar with an ETA. It appears only when the work lasts more than a moment, only on a
//! terminal unless `--progress` forces it, never with `-q`. One ticker thread reads the byte
//! counters of the input and output adapters and redraws; the data path only adds to atomics.

use std::io::Write;
use std::sync::atomic::{AtomicU64, Ordering};
use std::sync::Arc;
use std::thread::JoinHandle;
use std::time::{Duration, Instant};

use crossbeam_channel::{bounded, RecvTimeoutError, Sender};
use indicatif::{ProgressBar, ProgressDrawTarget, ProgressState, ProgressStyle, TermLike};

/// How long work must last before the progress line appears.
const DELAY: Duration = Duration::from_millis(500);
/// How often the line is redrawn.
const TICK: Duration = Duration::from_millis(200);

/// Whether to show progress.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum Mode {
    /// On a terminal only.
    Auto,
    /// Even when stderr is not a terminal (`--progress`).
    Force,
    /// Never (`-q`).
    Quiet,
}

/// Bytes in and out, shared by the I/O adapters and the ticker.
#[derive(Default)]
pub struct Counters {
    pub input: Arc<AtomicU64>,
    pub output: Arc<AtomicU64>,
}

impl Counters {
    pub fn input(&self) -> u64 {
        self.input.load(Ordering::Relaxed)
    }

    pub fn output(&self) -> u64 {
        self.output.load(Ordering::Relaxed)
    }
}

/// A running progress display; `finish` (or drop) removes the line.
pub struct Progress {
    stop: Option<Sender<()>>,
    ticker: Option<JoinHandle<()>>,
}

impl Progress {
    /// Starts the display for work of `total` input bytes (when known). `verb` heads the line.
    pub fn start(
        mode: Mode,
        counters: &Counters,
        total: Option<u64>,
        verb: &'static str,
    ) -> Progress {
        let target = match mode {
            Mode::Quiet => None,
            Mode::Auto => Some(ProgressDrawTarget::stderr_with_hz(5)).filter(|t| !t.is_hidden()),
            Mode::Force => {
                let t = ProgressDrawTarget::stderr_with_hz(5);
                Some(if t.is_hidden() {
                    ProgressDrawTarget::term_like_with_hz(Box::new(PlainStderr), 5)
                } else {
                    t
                })
            }
        };
        let Some(target) = target else {
            return Progress {
                stop: None,
                ticker: None,
            };
        };
        let bar = new_bar(total, verb, Arc::clone(&counters.output));
        let input = Arc::clone(&counters.input);
        let (tx, rx) = bounded::<()>(0);
        let ticker = std::thread::spawn(move || {
            let started = Instant::now();
            let mut target = Some(target);
            let mut finishing = false;
            // Until `finish` drops the sender (or the command ends).
            while let Err(RecvTimeoutError::Timeout) = rx.recv_timeout(TICK) {
                let pos = input.load(Ordering::Relaxed);
                bar.set_position(pos);
                // All of the input read, the work not done: what is left is writing out (an
                // upload's parts in flight, its completion), which a full bar would not say
                // (issue 55 §3).
                if !finishing && total.is_some_and(|t| pos >= t) {
                    finishing = true;
                    bar.set_style(finishing_style(verb));
                }
                if started.elapsed() >= DELAY {
                    if let Some(t) = target.take() {
                        bar.set_draw_target(t);
                    }
                }
                // Redraw even when the input stalls: the rate and ETA still move.
                bar.tick();
            }
            bar.finish_and_clear();
        });
        Progress {
            stop: Some(tx),
            ticker: Some(ticker),
        }
    }

    /// Removes the line (before a report or an error message is printed).
    pub fn finish(mut self) {
        self.stop_ticker();
    }

    fn stop_ticker(&mut self) {
        drop(self.stop.take());
        if let Some(t) = self.ticker.take() {
            let _ = t.join();
        }
    }
}

impl Drop for Progress {
    fn drop(&mut self) {
        self.stop_ticker();
    }
}

/// The line once all of the input is read and the output is still being written.
fn finishing_style(verb: &str) -> ProgressStyle {
    let template = format!(
        "{{prefix}} {{bytes}} read; {} {{spinner}} {{elapsed}}",
        match verb {
            "encrypting" | "rekeying" => "sealed, writing out and completing",
            _ => "writing out",
        }
    );
    ProgressStyle::with_template(&template)
        .unwrap_or_else(|_| ProgressStyle::default_spinner())
        .tick_chars("-\\|/ ")
}

fn new_bar(total: Option<u64>, verb: &'static str, output: Arc<AtomicU64>) -> ProgressBar {
    let template = match total {
        Some(_) => {
            "{prefix} {bytes}/{total_bytes} [{bar:30}] {binary_bytes_per_sec}, ratio {ratio}, ETA {eta}"
        }
        None => "{prefix} {spinner} {bytes} in {elapsed}, {binary_bytes_per_sec}, ratio {ratio}",
    };
    let style = ProgressStyle::with_template(template)
        .expect("the progress template is valid")
        .progress_chars("=> ")
        .with_key(
            "ratio",
            move |s: &ProgressState, w: &mut dyn std::fmt::Write| {
                let out = output.load(Ordering::Relaxed);
                let _ = match s.pos() {
                    0 => write!(w, "-"),
                    n => write!(w, "{:.3}", out as f64 / n as f64),
                };
            },
        );
    let bar = ProgressBar::with_draw_target(total, ProgressDrawTarget::hidden());
    bar.set_style(style);
    bar.set_prefix(verb);
    bar
}

/// stderr when it is not a terminal but `--progress` asked for the line anyway: each redraw
/// returns to the start of the line, as `pv` and `zstd --progress` do in a log.
#[derive(Debug)]
struct PlainStderr;

impl TermLike for PlainStderr {
    fn width(&self) -> u16 {
        100
    }
    fn move_cursor_up(&self, _: usize) -> std::io::Result<()> {
        Ok(())
    }
    fn move_cursor_down(&self, _: usize) -> std::io::Result<()> {
        Ok(())
    }
    fn move_cursor_right(&self, _: usize) -> std::io::Result<()> {
        Ok(())
    }
    fn move_cursor_left(&self, _: usize) -> std::io::Result<()> {
        Ok(())
    }
    fn write_line(&self, s: &str) -> std::io::Result<()> {
        writeln!(std::io::stderr(), "{s}")
    }
    fn write_str(&self, s: &str) -> std::io::Result<()> {
        write!(std::io::stderr(), "{s}")
    }
    fn clear_line(&self) -> std::io::Result<()> {
        write!(std::io::stderr(), "\r")
    }
    fn flush(&self) -> std::io::Result<()> {
        std::io::stderr().flush()
    }
}
