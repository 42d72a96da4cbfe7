//! `zseal bench`: reads a sample of the user's file, runs the library's matrix on it with a
//! progress bar, prints the rows and the recommendation, and draws the chart.

use std::io::{IsTerminal, Read, Write};
use std::path::PathBuf;

use anyhow::Context;
use indicatif::{ProgressBar, ProgressDrawTarget, ProgressStyle};
use zseal::bench::{self, Plan};

use crate::files::{open_input, Output};
use report::{recommend, render, svg_plot, Format};

mod report;

pub const EXAMPLES: &str = "\
Examples:
  zseal bench big.tar                          # quick subset on the first 64 MiB
  zseal bench big.tar --full --plot bench.svg  # every row, 3 runs each, and a chart
  zseal bench db.dump --format json > rows.json
  zseal bench --records users.ndjson           # one record per line, sealed one by one
  zseal bench --records users.ndjson --dict users.dict";

#[derive(clap::Args)]
pub struct Args {
    /// File to measure on (its first --size bytes); absent: a built-in text-like sample; `-`: stdin
    input: Option<PathBuf>,
    /// The whole matrix (all zstd levels, gzip 1 and 6, chunk sizes 64K..16M, every thread
    /// count, 3 runs per row) instead of the quick subset (1 run per row)
    #[arg(long)]
    full: bool,
    /// How much of the input to load and measure on (default 64M, 256M with --full)
    #[arg(long, value_name = "SIZE", value_parser = parse_size)]
    size: Option<u64>,
    /// Timed runs per row, the median is shown (default 1, 3 with --full)
    #[arg(long, value_name = "N")]
    runs: Option<usize>,
    /// Output format of the rows
    #[arg(long, default_value = "table", value_parser = str::parse::<Format>)]
    format: Format,
    /// Also draw throughput against ratio into FILE.svg, the recommended setting marked
    #[arg(long, value_name = "FILE.svg")]
    plot: Option<PathBuf>,
    /// Overwrite the --plot file if it exists
    #[arg(short, long)]
    force: bool,
    /// No progress bar
    #[arg(short, long)]
    quiet: bool,
    /// Treat the input as small records, one per line, each sealed and opened on its own (as
    /// zseal::records and Python's RecordSealer do): ns per record, bytes out, records that grew
    #[arg(long, requires = "input")]
    records: bool,
    /// With --records: the zstd dictionary for the zstd+dict rows (default: one of 64K trained on
    /// the first half of the records, at most 200,000, which are then not measured)
    #[arg(long, value_name = "DICT", requires = "records")]
    dict: Option<PathBuf>,
}

fn parse_size(s: &str) -> Result<u64, String> {
    zseal::units::parse_size(s).map_err(|e| e.to_string())
}

pub fn run(a: Args) -> anyhow::Result<()> {
    let mut plan = Plan::new(a.full);
    if let Some(r) = a.runs {
        plan.runs = r.max(1);
    }
    let limit = a.size.unwrap_or(if a.full { 256 << 20 } else { 64 << 20 });
    let limit = usize::try_from(limit).context("--size is too large for this machine")?;
    let (name, data) = match a.input.as_deref() {
        None => (
            "built-in sample (log lines)".to_string(),
            bench::builtin_sample(limit.min(32 << 20)),
        ),
        Some(p) => {
            let mut data = Vec::new();
            open_input(Some(p))?
                .take(limit as u64)
                .read_to_end(&mut data)
                .with_context(|| format!("cannot read {}", p.display()))?;
            (p.display().to_string(), data)
        }
    };
    if a.records {
        return records(&a, &name, &data);
    }
    if data.len() < 4096 {
        anyhow::bail!(
            "{name} holds only {} bytes: give at least 4 KiB (better: many MiB) to measure on",
            data.len()
        );
    }
    let heading = format!(
        "zseal bench: {name}, {} measured; {}; {} run(s) per row, median shown",
        zseal::units::human_bytes(data.len() as u64),
        bench::machine(),
        plan.runs
    );
    let bar = progress_bar(a.quiet, plan.cases().len() as u64);
    let rows = bench::run(&plan, &data, |done, _, case| {
        bar.set_position(done as u64);
        bar.set_message(case.label());
    })?;
    bar.finish_and_clear();
    let rec = recommend(&rows);
    let mut out = std::io::stdout().lock();
    let human = heading_to(&mut out, &heading, a.format)?;
    out.write_all(render(&rows, a.format).as_bytes())?;
    if let Some(r) = &rec {
        let text = format!(
            "\nRecommended for this data: zseal encrypt --compress {}\n{}",
            r.compress,
            r.why
                .iter()
                .map(|w| format!("  - {w}\n"))
                .collect::<String>()
        );
        if human {
            out.write_all(text.as_bytes())?;
        } else {
            eprint!("{text}");
        }
    }
    out.flush()?;
    if let Some(path) = &a.plot {
        let svg = svg_plot(&rows, rec.as_ref(), &heading);
        let mut f = Output::create(Some(path), a.force, None)?;
        f.write_all(svg.as_bytes())?;
        f.commit(true)?;
        eprintln!("zseal: chart written to {}", path.display());
    }
    Ok(())
}

/// `--records`: the library's record rows on the lines of the input.
fn records(a: &Args, name: &str, data: &[u8]) -> anyhow::Result<()> {
    let records = bench::records::split_records(data);
    let dict = match &a.dict {
        Some(p) => {
            let bytes = std::fs::read(p).with_context(|| format!("cannot read {}", p.display()))?;
            let d = zseal::records::Dictionary::from_bytes(bytes)
                .with_context(|| format!("reading the dictionary {}", p.display()))?;
            Some(std::sync::Arc::new(d))
        }
        None => None,
    };
    let runs = a.runs.unwrap_or(if a.full { 5 } else { 3 });
    let bar = progress_bar(a.quiet, 12);
    let (rows, used) = bench::records::run(&records, dict, runs, |done, _, label| {
        bar.set_position(done as u64);
        bar.set_message(label.to_string());
    })
    .with_context(|| format!("measuring the records of {name}"))?;
    bar.finish_and_clear();
    let heading = format!(
        "zseal bench --records: {name}, {} records measured (mean {:.0} bytes), one at a time on \
         one thread; dictionary id {} ({} bytes, {}); {}; {runs} run(s), median shown",
        rows[0].records,
        rows[0].bytes_in as f64 / rows[0].records as f64,
        used.id,
        used.bytes,
        used.origin,
        bench::machine(),
    );
    let mut out = std::io::stdout().lock();
    heading_to(&mut out, &heading, a.format)?;
    out.write_all(report::render_records(&rows, a.format).as_bytes())?;
    out.flush()?;
    Ok(())
}

/// Prints the heading above the rows of a human format, or on stderr above machine-readable
/// rows (so that stdout stays parseable); true for a human format.
fn heading_to(out: &mut impl Write, heading: &str, format: Format) -> anyhow::Result<bool> {
    let human = matches!(format, Format::Table | Format::Markdown);
    if human {
        writeln!(out, "{heading}\n")?;
    } else {
        eprintln!("{heading}");
    }
    Ok(human)
}

fn progress_bar(quiet: bool, cases: u64) -> ProgressBar {
    if quiet || !std::io::stderr().is_terminal() {
        return ProgressBar::hidden();
    }
    let bar = ProgressBar::with_draw_target(Some(cases), ProgressDrawTarget::stderr_with_hz(5));
    bar.set_style(
        ProgressStyle::with_template("bench [{bar:30}] {pos}/{len} cases, {elapsed} {msg}")
            .expect("the progress template is valid")
            .progress_chars("=> "),
    );
    bar.enable_steady_tick(std::time::Duration::from_millis(200));
    bar
}
