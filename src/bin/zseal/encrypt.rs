//! `zseal encrypt`: INPUT (or stdin) into a container, to recipients or a passphrase.

use std::path::PathBuf;

use anyhow::Context;
use zseal::{Cipher, Codec, EncryptOptions, Encryptor, HashAlg};

use crate::common::{Clock, Common};
use crate::files::{display_name, Input, Output};
use crate::keys;
use crate::progress::{Counters, Progress};
use crate::report::Direction;
use zseal::io::Counted;

#[derive(clap::Args)]
pub struct Args {
    #[command(flatten)]
    common: Common,
    /// Encrypt to RECIPIENT: age1…, "ssh-ed25519 AAAA…" or "ssh-rsa AAAA…"; repeatable
    #[arg(short, long = "recipient", value_name = "RECIPIENT")]
    recipient: Vec<String>,
    /// Encrypt to every recipient in FILE (one per line, # comments); repeatable
    #[arg(short = 'R', long = "recipients-file", value_name = "FILE")]
    recipients_file: Vec<PathBuf>,
    /// Compression: zstd[:LEVEL] (-100..22, default zstd:3), lz4, gzip[:LEVEL] (1..9) or none
    #[arg(short, long, value_name = "ALGO", default_value = "zstd:3", value_parser = parse_with::<Codec>)]
    compress: Codec,
    /// Cipher: aes-256-gcm or chacha20-poly1305
    #[arg(long, default_value = "aes-256-gcm", value_parser = parse_with::<Cipher>)]
    cipher: Cipher,
    /// Whole-file digest: blake3, xxh3 or none
    #[arg(long, default_value = "blake3", value_parser = parse_with::<HashAlg>)]
    hash: HashAlg,
    /// Chunk size, a power of two from 1K to 16M
    #[arg(long, value_name = "SIZE", default_value = "8M", value_parser = parse_chunk)]
    chunk_size: usize,
    /// Pad every chunk and the whole file to size classes (Padmé, at most 12% larger): hides each
    /// chunk's exact compressed size within its class and raw against compressed. Still shown:
    /// the number of chunks, each chunk's class (how compressible it is), a small last chunk
    /// nearly exactly; the padding frames can be told apart (FORMAT.md §3.3)
    #[arg(long)]
    pad: bool,
    /// Let the zstd level follow what the output absorbs, per chunk, between MIN and MAX
    /// (default 1..19): a slow pipe or network gets a smaller output, a fast disk gets speed.
    /// Starts at MIN, so that output flows at once
    #[arg(long, value_name = "MIN..MAX", num_args = 0..=1, require_equals = true,
          default_missing_value = "1..19", value_parser = parse_adapt)]
    adapt: Option<(i32, i32)>,
}

fn parse_adapt(s: &str) -> Result<(i32, i32), String> {
    let bad = || format!("invalid level range '{s}': give MIN..MAX, e.g. 1..19");
    let (a, b) = s.split_once("..").ok_or_else(bad)?;
    let min = a.trim().parse().map_err(|_| bad())?;
    let max = b.trim().parse().map_err(|_| bad())?;
    Ok((min, max))
}

/// A value of a library type that parses itself (`FromStr` with the library's error).
pub fn parse_with<T: std::str::FromStr<Err = zseal::Error>>(s: &str) -> Result<T, String> {
    s.parse().map_err(|e: zseal::Error| e.to_string())
}

fn parse_chunk(s: &str) -> Result<usize, String> {
    let n = zseal::units::parse_size(s).map_err(|e| e.to_string())?;
    let n = usize::try_from(n).map_err(|_| format!("chunk size {s} is too large"))?;
    zseal::format::chunk_log2_of(n).map_err(|e| e.to_string())?;
    Ok(n)
}

pub fn run(a: Args) -> anyhow::Result<()> {
    let c = &a.common;
    let opts = EncryptOptions::default()
        .codec(a.compress)
        .cipher(a.cipher)
        .hash(a.hash)
        .chunk_size(a.chunk_size)
        .pad(a.pad)
        .threads(c.threads);
    let opts = match a.adapt {
        Some((min, max)) => opts.adapt(min, max),
        None => opts,
    };
    let mut input = Input::open(c.input.as_deref())?;
    let recipients = keys::recipients(
        &a.recipient,
        &a.recipients_file,
        matches!(input, Input::Stdin(_)),
    )?;
    let output = Output::create(c.output.as_deref(), c.force, c.input.as_deref())?;
    let what = display_name(c.input.as_deref(), "standard input");
    let counters = Counters::default();
    let size = input.file_size();
    let output = Counted::new(output, counters.output.clone());
    let targets = keys::Targets::for_new_file(recipients, c.passphrase_file.as_deref())?;
    let mut enc = Encryptor::new(output, &targets.refs(), &opts)?;
    let clock = Clock::start();
    let progress = Progress::start(c.report.mode(), &counters, size, "encrypting");
    // A regular file is read by the workers (progress counts what is sealed); a pipe is read
    // here, and progress counts what arrives, so that a slow producer still shows movement.
    match input.regular_file() {
        Some(f) => {
            enc.progress(counters.input.clone());
            enc.copy_from_file(&f)
        }
        None => enc.copy_from(&mut Counted::new(&mut input, counters.input.clone())),
    }
    .with_context(|| format!("encrypting {what}"))?;
    let (output, stats) = enc
        .finish_with_stats()
        .with_context(|| format!("encrypting {what}"))?;
    progress.finish();
    output.into_inner().commit(!c.no_fsync)?;
    let bytes = (counters.input(), counters.output());
    clock.report(&c.report, Direction::Encrypt, bytes, stats);
    Ok(())
}
