//! `zseal verify`: checks a whole container without writing anything and prints its digest as
//! `b3sum` (or `xxhsum -H3`) prints the decrypted file's.

use std::path::{Path, PathBuf};

use anyhow::Context;

use crate::common::{Job, Reporting};
use crate::files::{display_name, open_input};
use crate::hash::check_line;
use crate::keys::{Identities, Unlock};
use crate::progress::Counters;
use crate::report::Direction;

#[derive(clap::Args)]
pub struct Args {
    /// Container to check; absent or `-` reads stdin
    input: Option<PathBuf>,
    /// Read the passphrase from the first line of FILE
    #[arg(long, value_name = "FILE")]
    passphrase_file: Option<PathBuf>,
    /// Worker threads (default: all cores)
    #[arg(short = 'j', long, value_name = "N", default_value_t = 0)]
    threads: usize,
    #[command(flatten)]
    ids: Identities,
    #[command(flatten)]
    report: Reporting,
}

pub fn run(a: Args) -> anyhow::Result<()> {
    let counters = Counters::default();
    let input = open_input(a.input.as_deref())?.counting(counters.input.clone());
    let what = display_name(a.input.as_deref(), "standard input");
    let job = Job {
        how: &a.report,
        counters: &counters,
        size: input.size(),
        verb: "verifying",
    };
    let keys = Unlock {
        what: &what,
        passphrase_file: a.passphrase_file.as_deref(),
        ids: &a.ids,
        threads: a.threads,
        raw_age: false,
    };
    let plan = input.read_plan();
    let dec = keys.open(input)?;
    let format = dec.format();
    let alg = dec.as_zseal().map(|d| d.header().hash);
    let ((len, hex, chunks), stats, clock) = job
        .run(dec, |d| {
            let len = plan.copy(d, None, std::io::sink())?;
            Ok(match d.as_zseal() {
                Some(z) => (
                    len,
                    z.digest_hex(),
                    z.verified().map_or(0, |f| f.chunk_count),
                ),
                None => (len, None, d.stats().chunks),
            })
        })
        .with_context(|| format!("verifying {what}"))?;
    // The line names the plaintext (the container's name without .zseal), so that after
    // decrypting, `b3sum -c` or `xxhsum -c` can check the result against it.
    let plain_name = match a.input.as_deref() {
        Some(p) if p != Path::new("-") => {
            let name = p.to_string_lossy();
            let plain = name
                .strip_suffix(".zseal")
                .or_else(|| name.strip_suffix(".age"));
            plain.unwrap_or(&name).to_string()
        }
        _ => "-".to_string(),
    };
    match (hex, alg) {
        (Some(hex), Some(alg)) => println!("{}", check_line(alg, &hex, &plain_name)),
        _ if format == zseal::Format::Age => eprintln!("zseal: {what} is an age file: every STREAM chunk and the final one are authenticated (age records no whole-file digest)"),
        _ => eprintln!("zseal: {what} records no whole-file digest (--hash none); its chunks, index and length are verified"),
    }
    if !a.report.quiet {
        eprintln!(
            "zseal: {what}: OK, {len} bytes ({}) in {chunks} chunks",
            zseal::units::human_bytes(len)
        );
    }
    clock.report(&a.report, Direction::Verify, (counters.input(), len), stats);
    Ok(())
}
