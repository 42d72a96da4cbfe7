//! `zseal dict train`: a zstd dictionary for sealed records (FORMAT.md §9.4), trained on sample
//! records: the lines of the files given (default) or whole files (`--files`, as `zstd --train`).
//! The output is a standard zstd dictionary that `zstd -D` also reads.

use std::io::{BufRead, Read, Write};
use std::path::PathBuf;

use anyhow::{bail, Context};
use zseal::records::Dictionary;

use crate::files::{display_name, open_input, Output};

pub const EXAMPLES: &str = "\
Examples:
  zseal dict train users.ndjson -o users.dict          # one record per line
  zseal dict train --files samples/*.json -o docs.dict # one record per file
  zseal bench --records users.ndjson --dict users.dict";

#[derive(clap::Subcommand)]
pub enum Command {
    /// Train a zstd dictionary on sample records
    #[command(after_help = EXAMPLES)]
    Train(TrainArgs),
}

#[derive(clap::Args)]
pub struct TrainArgs {
    /// Sample files: each line a record (or each file one record with --files); `-` reads stdin
    #[arg(required = true, value_name = "SAMPLES")]
    samples: Vec<PathBuf>,
    /// Write the dictionary to FILE
    #[arg(short, long, value_name = "FILE")]
    output: PathBuf,
    /// Each file is one sample instead of each line
    #[arg(long)]
    files: bool,
    /// Largest dictionary size (small records gain little beyond a few KiB; zstd's default is 110K)
    #[arg(long, value_name = "SIZE", default_value = "64K", value_parser = parse_size)]
    size: usize,
    /// Read at most this many sample bytes in all (zstd's trainer keeps them in memory)
    #[arg(long, value_name = "SIZE", default_value = "128M", value_parser = parse_size)]
    max_samples: usize,
    /// Overwrite FILE if it exists
    #[arg(short, long)]
    force: bool,
}

fn parse_size(s: &str) -> Result<usize, String> {
    let n = zseal::units::parse_size(s).map_err(|e| e.to_string())?;
    usize::try_from(n).map_err(|_| format!("{s} is too large"))
}

pub fn run(c: Command) -> anyhow::Result<()> {
    match c {
        Command::Train(a) => train(a),
    }
}

fn train(a: TrainArgs) -> anyhow::Result<()> {
    let mut samples: Vec<Vec<u8>> = Vec::new();
    let mut total = 0usize;
    let mut truncated = false;
    for path in &a.samples {
        let name = display_name(Some(path), "standard input");
        let input = open_input(Some(path))?;
        if a.files {
            let mut data = Vec::new();
            input
                .take((a.max_samples - total) as u64)
                .read_to_end(&mut data)
                .with_context(|| format!("cannot read {name}"))?;
            total += data.len();
            samples.push(data);
        } else {
            for line in std::io::BufReader::new(input).split(b'\n') {
                let line = line.with_context(|| format!("cannot read {name}"))?;
                if line.is_empty() {
                    continue;
                }
                total += line.len();
                samples.push(line);
                if total >= a.max_samples {
                    break;
                }
            }
        }
        if total >= a.max_samples {
            truncated = true;
            break;
        }
    }
    if truncated {
        eprintln!(
            "zseal: note: trained on the first {} of the samples (--max-samples)",
            zseal::units::human_bytes(total as u64)
        );
    }
    if samples.is_empty() {
        bail!("the sample files hold no records: give files with one record per line, or --files");
    }
    let dict = Dictionary::train(&samples, a.size)?;
    let mut out = Output::create(Some(&a.output), a.force, None)?;
    out.write_all(dict.as_bytes())?;
    out.commit(true)?;
    eprintln!(
        "zseal: dictionary id {} ({} bytes) trained on {} samples ({}) written to {}",
        dict.id(),
        dict.as_bytes().len(),
        samples.len(),
        zseal::units::human_bytes(total as u64),
        a.output.display()
    );
    Ok(())
}
