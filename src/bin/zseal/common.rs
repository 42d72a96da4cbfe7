//! What several subcommands share: the arguments of the data commands, the reports after the
//! work, and the data-moving step with its progress line.

use std::path::PathBuf;

use clap::Args;
use zseal::stats::{Stopwatch, StreamStats};
use zseal::Reader;

use crate::progress::{Counters, Mode, Progress};
use crate::report::{Direction, Report};

/// What to tell on stderr while and after the work runs.
#[derive(Args)]
pub struct Reporting {
    /// Show the progress line even when stderr is not a terminal
    #[arg(long, conflicts_with = "quiet")]
    pub progress: bool,
    /// No progress line and no informational messages (warnings and errors still print)
    #[arg(short, long)]
    pub quiet: bool,
    /// After the work, print bytes, ratio, wall and CPU time and time per stage to stderr
    #[arg(long)]
    pub stats: bool,
    /// After the work, print the --stats figures as one JSON object on stderr
    #[arg(long)]
    pub json: bool,
}

impl Reporting {
    /// Whether a note (what the user should know, not a warning) goes to stderr: not with `-q`,
    /// nor with `--json`, whose report must be the one document there.
    pub fn notes(&self) -> bool {
        !self.quiet && !self.json
    }

    pub fn mode(&self) -> Mode {
        if self.quiet {
            Mode::Quiet
        } else if self.progress {
            Mode::Force
        } else {
            Mode::Auto
        }
    }
}

/// The arguments of `encrypt` and `decrypt`.
#[derive(Args)]
pub struct Common {
    /// Input file; absent or `-` reads stdin. Several (`*.csv`): each is written beside it,
    /// to NAME.zseal (encrypt; NAME.age with --format age) or NAME without .zseal/.age
    /// (decrypt); no -o, and no output may exist without --force
    #[arg(value_name = "INPUT")]
    pub inputs: Vec<PathBuf>,
    /// Output file; absent or `-` writes stdout
    #[arg(short, long)]
    pub output: Option<PathBuf>,
    /// Read the passphrase from the first line of FILE (`-`: standard input)
    #[arg(long, value_name = "FILE")]
    pub passphrase_file: Option<PathBuf>,
    /// Worker threads (default: all cores)
    #[arg(short = 'j', long, value_name = "N", default_value_t = 0)]
    pub threads: usize,
    /// Overwrite OUTPUT if it exists
    #[arg(short, long)]
    pub force: bool,
    /// With -o: rename the output into place without first waiting for it to reach the disk
    /// (fsync). Faster on slow disks; after a power loss the output may be missing or cut
    /// short (zseal then reports it as damaged)
    #[arg(long)]
    pub no_fsync: bool,
    #[command(flatten)]
    pub report: Reporting,
}

impl Common {
    /// The one input (`None`: standard input) of a command given at most one.
    pub fn input(&self) -> Option<&std::path::Path> {
        self.inputs.first().map(PathBuf::as_path)
    }
}

/// The command's stopwatch, started once the data starts to move (prompts excluded).
pub struct Clock(Stopwatch);

impl Clock {
    pub fn start() -> Clock {
        Clock(Stopwatch::start())
    }

    /// Prints the requested reports for a finished command.
    pub fn report(
        &self,
        how: &Reporting,
        direction: Direction,
        bytes: (u64, u64),
        stream: StreamStats,
    ) {
        if !how.stats && !how.json {
            return;
        }
        let r = Report {
            direction,
            bytes_in: bytes.0,
            bytes_out: bytes.1,
            wall: self.0.wall(),
            cpu: self.0.cpu(),
            stream,
            fetched: crate::files::fetched(),
        };
        if how.stats {
            eprint!("{}", r.to_text());
        }
        if how.json {
            eprintln!("{}", r.to_json());
        }
    }
}

/// The data-moving part of decrypt and verify, with its progress line and clock.
pub struct Job<'a> {
    pub how: &'a Reporting,
    pub counters: &'a Counters,
    pub size: Option<u64>,
    pub verb: &'static str,
}

impl Job<'_> {
    pub fn run<R: std::io::Read, T>(
        &self,
        mut dec: Reader<R>,
        work: impl FnOnce(&mut Reader<R>) -> zseal::Result<T>,
    ) -> zseal::Result<(T, StreamStats, Clock)> {
        let clock = Clock::start();
        let progress = Progress::start(self.how.mode(), self.counters, self.size, self.verb);
        let r = work(&mut dec);
        progress.finish();
        Ok((r?, dec.stats(), clock))
    }
}

/// True when the error is a closed pipe downstream (exit quietly with 141, as `cat` does).
pub fn is_broken_pipe(e: &anyhow::Error) -> bool {
    let pipe = |io: &std::io::Error| io.kind() == std::io::ErrorKind::BrokenPipe;
    e.chain().any(|c| {
        c.downcast_ref::<std::io::Error>().is_some_and(pipe)
            || matches!(c.downcast_ref::<zseal::Error>(), Some(zseal::Error::Io(io)) if pipe(io))
    })
}
