//! `zseal decrypt`: a container (or a byte range of its plaintext) back to its plaintext.

use anyhow::Context;
use zseal::io::Counted;
use zseal::ByteRange;

use crate::common::{Common, Job};
use crate::files::{display_name, open_input_for, Output};
use crate::keys::{Identities, Unlock};
use crate::progress::Counters;
use crate::report::Direction;
use zseal::io::ReadMode;

#[derive(clap::Args)]
pub struct Args {
    #[command(flatten)]
    common: Common,
    #[command(flatten)]
    ids: Identities,
    /// Only bytes START..END (END exclusive), START.., START..+LEN, START..START+LEN, ..END (the
    /// first END bytes) or -LEN (the last LEN bytes, as `tail -c`) of the plaintext; SIZE
    /// suffixes (powers of 1024: 1M = 1MiB = 1MB). From a file only the chunks of the range
    /// are read; from a pipe everything before the range is read and skipped, which is slower,
    /// and -LEN is refused (a pipe's length is known only at its end: use `| tail -c LEN`)
    #[arg(long, value_name = "RANGE", value_parser = parse_range, allow_hyphen_values = true)]
    range: Option<Range>,
    /// For an age file zseal wrote with compression: give its plaintext as it is (the seekable
    /// zstd stream, what `age -d` gives) instead of decompressing it
    #[arg(long)]
    raw: bool,
    #[command(flatten)]
    signers: crate::sign::SignerArgs,
    /// A crypt4gh file's signature, when it is not FILE.sig beside the file (where `encrypt
    /// --format crypt4gh --sign` writes it); needs --signer or --allowed-signers. A container
    /// keeps its signatures inside it (`zseal verify --signature` checks a detached one)
    #[arg(long, value_name = "FILE")]
    signature: Option<std::path::PathBuf>,
    /// Continue a download from an object into -o FILE that was cut short (a lost connection, a
    /// killed run: what it fetched is kept in FILE.zseal-partial): only what is missing is
    /// fetched, and the whole file is checked before it is renamed into place. Without it, a
    /// cut download is refused until --resume continues it or --force starts over
    #[arg(long, conflicts_with = "range")]
    resume: bool,
}

/// What `--range` asks for: bytes from a known start, or the last bytes (whose start needs the
/// plaintext's length).
#[derive(Clone, Copy, Debug, PartialEq)]
enum Range {
    Bytes(ByteRange),
    Last(u64),
}

impl Range {
    /// The byte range, the last bytes' from the plaintext's length (read from the index; only
    /// for a seekable input).
    fn resolve(self, d: &mut zseal::Reader<zseal::transfer::Source>) -> zseal::Result<ByteRange> {
        match self {
            Range::Bytes(r) => Ok(r),
            // One rule for every form (issue 59 §6): a range lies within the plaintext, or it
            // is refused naming the length; nothing is shortened silently.
            Range::Last(n) => {
                let len = d.plaintext_len()?;
                if n > len {
                    return Err(zseal::Error::InvalidOption(format!(
                        "the range -{n} (the last {n} bytes) is longer than the plaintext ({len} \
                         bytes): ask for at most -{len}, or decrypt it whole"
                    )));
                }
                Ok(ByteRange {
                    start: len - n,
                    end: None,
                })
            }
        }
    }
}

/// Parses `START..END` (END exclusive), `START..`, `START..+LEN`, `START..START+LEN`, `..END`
/// (from 0) or `-LEN` (the last LEN bytes); every number takes the suffixes of
/// [`zseal::units::parse_size`].
fn parse_range(s: &str) -> Result<Range, String> {
    let bad = |why: &str| {
        format!("invalid range '{s}': {why}; use START..END, START.., START..+LEN, START..START+LEN, ..END or -LEN, e.g. 10G..+64M")
    };
    let size = |t: &str| zseal::units::parse_size(t).map_err(|e| e.to_string());
    if let Some(last) = s.trim().strip_prefix('-') {
        return Ok(Range::Last(size(last)?));
    }
    let (a, b) = s.split_once("..").ok_or_else(|| bad("no '..'"))?;
    // ..END: from the first byte, as Rust's and Python's slices.
    let start = match a.trim() {
        "" => 0,
        a => size(a)?,
    };
    if b.trim().is_empty() {
        if a.trim().is_empty() {
            return Err(bad("no start and no end"));
        }
        return Ok(Range::Bytes(ByteRange { start, end: None }));
    }
    // START..+LEN: LEN bytes from START (as in the examples of age and zstd users' scripts).
    let (mut end, b) = match b.trim().strip_prefix('+') {
        Some(len) => (start, len),
        None => (0u64, b),
    };
    for term in b.split('+') {
        end = end
            .checked_add(size(term)?)
            .ok_or_else(|| bad("the end overflows"))?;
    }
    ByteRange::new(start, Some(end))
        .map(Range::Bytes)
        .map_err(|e| bad(&e.to_string()))
}

pub fn run(a: Args) -> anyhow::Result<()> {
    let c = &a.common;
    if let Some(sig) = &a.signature {
        if !a.signers.given() {
            anyhow::bail!(
                "--signature {}: give --signer or --allowed-signers to check it against",
                sig.display()
            );
        }
        if c.inputs.len() > 1 {
            anyhow::bail!(
                "--signature {} is one file's signature, and {} inputs are given: decrypt them \
                 one at a time (each input's FILE.sig beside it is found without --signature)",
                sig.display(),
                c.inputs.len()
            );
        }
    }
    if c.inputs.len() > 1 {
        // Standard input is one stream: it cannot give a key for every file.
        let dash = a.ids.identity.iter().chain(&c.passphrase_file);
        if let Some(d) = dash.into_iter().find(|p| crate::stdin::is_dash(p)) {
            anyhow::bail!(
                "{} (standard input) cannot give the key of several inputs: give it as a file",
                d.display()
            );
        }
        let pairs = crate::many::plan(
            &c.inputs,
            c.output.as_deref(),
            c.force,
            crate::many::decrypted_name,
        )?;
        let signers = a.signers.signers()?;
        return crate::many::run_each(&pairs, |input, output| {
            decrypt(&a, Some(input), Some(output), Some(signers.clone()))
        });
    }
    decrypt(&a, c.input(), c.output.as_deref(), None)
}

/// Decrypts `input` (`None`: standard input) into `output` (`None`: standard output), checked
/// against `signers` (`None`: read from the flags once the input claimed standard input).
fn decrypt(
    a: &Args,
    input_name: Option<&std::path::Path>,
    output_name: Option<&std::path::Path>,
    signers: Option<zseal::crypto::sign::Signers>,
) -> anyhow::Result<()> {
    let c = &a.common;
    // From an object, a range fetches only its frames; a whole read keeps GETs in flight ahead
    // (and a signer check reads the whole file, a range too).
    // A resumed download seeks to where it stopped: only what it reads is fetched.
    let mode = match a.range {
        Some(_) if !a.signers.given() => ReadMode::Random,
        None if a.resume => ReadMode::Random,
        _ => ReadMode::Sequential,
    };
    let counters = Counters::default();
    // The data claims standard input before a `--signer -` could (stdin.rs).
    let input = open_input_for(input_name, mode)?.counting(counters.input.clone());
    let signers = match signers {
        Some(s) => s,
        None => a.signers.signers()?,
    };
    let what = display_name(input_name, "standard input");
    // The transfer layer chooses how: a range from the index or by reading through, a whole
    // file with its frame bodies read by the workers.
    let plan = input.read_plan();
    if let Some(Range::Last(_)) = a.range {
        if !plan.is_seekable() || signers.is_required() {
            let why = match signers.is_required() {
                true => {
                    "with --signer/--allowed-signers the file is read from its start: run \
                         `zseal verify --signer …` first, then the range without the check"
                }
                false => {
                    "a pipe's length is known only at its end: give the file (or object \
                          URL) itself, or pipe the whole output into `tail -c LEN`"
                }
            };
            anyhow::bail!(
                "--range -LEN (the last LEN bytes) needs the plaintext's length first, and {why}"
            );
        }
    }
    let ask = zseal::resume::download::Ask {
        url: input_name.and_then(crate::files::url_of),
        output: output_name,
        resume: a.resume,
        force: c.force,
        signer: signers.is_required(),
        range: a.range.is_some(),
    };
    let keys = Unlock {
        what: &what,
        passphrase_file: c.passphrase_file.as_deref(),
        ids: &a.ids,
        threads: c.threads,
        raw_age: a.raw,
        signature: (a.signature.clone())
            .or_else(|| crate::keys::signature_beside(input_name))
            .filter(|_| signers.is_required()),
        crypt4gh_signature: a.signature.as_deref(),
        signers,
    };
    if let Some(download) = zseal::resume::download::Download::plan(&ask, &input)? {
        let size = input.size();
        let reader = keys.open(input)?;
        return resumable(a, download, (reader, &what, size), plan, &counters);
    }
    let output = Output::create_plaintext(output_name, c.force, input_name)?;
    if keys.signers.is_required() && output.streams() && !c.report.quiet {
        eprintln!(
            "zseal: note: the signer check completes only at the end of the stream: what reaches \
             the output before then is unchecked, and a failure shows only as zseal's exit \
             status (`| tar x` extracts it all the same). To use only checked data, run \
             `zseal verify … --signer … && zseal decrypt …`, or decrypt with -o FILE first"
        );
    }
    // A range reads an unknown part of the file: no bar, only the counts.
    let size = input.size().filter(|_| a.range.is_none());
    let mut output = Counted::new(output, counters.output.clone());
    let job = Job {
        how: &c.report,
        counters: &counters,
        size,
        verb: "decrypting",
    };
    let ((signer, unsigned_c4gh), stats, clock) = job
        .run(keys.open(input)?, |d| {
            let range = a.range.map(|r| r.resolve(d)).transpose()?;
            plan.copy(d, range, &mut output)?;
            let c4gh = d.as_crypt4gh().map(|c| c.signer().map(str::to_string));
            let unsigned_c4gh = matches!(c4gh, Some(None));
            let signer = d
                .as_zseal()
                .and_then(|z| z.signer().map(str::to_string))
                .or(c4gh.flatten());
            Ok((signer, unsigned_c4gh))
        })
        .with_context(|| format!("decrypting {what}"))?;
    if let Some(who) = signer.filter(|_| !c.report.quiet) {
        eprintln!("zseal: {what}: good signature by {who}");
    }
    // What the format cannot promise, said each time its plaintext is released (issue 59 §4):
    // a crypt4gh v1 file cut at a segment boundary decrypts without error.
    if unsigned_c4gh && c.report.notes() {
        eprintln!(
            "zseal: note: {what} is a crypt4gh file: every segment is authenticated, but {}",
            zseal::format::crypt4gh::describe::UNSIGNED_CAVEAT
        );
    }
    output.into_inner().commit(!c.no_fsync)?;
    let bytes = (counters.input(), counters.output());
    clock.report(&c.report, Direction::Decrypt, bytes, stats);
    Ok(())
}

/// A whole object into a regular file, through a partial file and a journal that a cut run
/// leaves for `--resume` (download.rs).
fn resumable(
    a: &Args,
    download: zseal::resume::download::Download,
    (mut reader, what, size): (zseal::Reader<zseal::transfer::Source>, &str, Option<u64>),
    plan: zseal::transfer::ReadPlan,
    counters: &Counters,
) -> anyhow::Result<()> {
    let c = &a.common;
    let partial = download
        .start(&mut reader)
        .with_context(|| format!("decrypting {what}"))?;
    let from = partial.from();
    let kept = partial.kept()?;
    let job = Job {
        how: &c.report,
        counters,
        size,
        verb: "decrypting",
    };
    let ran = partial.run(!c.no_fsync, |out| {
        let mut out = Counted::new(out, counters.output.clone());
        job.run(reader, |d| {
            match from {
                0 => plan.copy(d, None, &mut out)?,
                _ => d.copy_resumed_to(from, kept, &mut out)?,
            };
            // Only a file read to its authenticated end is renamed into place.
            match d.chunk_count() {
                Some(_) => Ok(()),
                None => Err(zseal::Error::Bug("the download ended unverified".into())),
            }
        })
    });
    let (_, stats, clock) = ran.map_err(|f| {
        // What a cut run keeps, said before the error (which the command's end prints).
        if let Some(kept) = &f.kept {
            eprintln!("zseal: {kept}");
        }
        anyhow::Error::from(f.error).context(format!("decrypting {what}"))
    })?;
    let bytes = (counters.input(), counters.output());
    clock.report(&c.report, Direction::Decrypt, bytes, stats);
    Ok(())
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn ranges() {
        let r = |s| match parse_range(s) {
            Ok(Range::Bytes(r)) => Ok((r.start, r.end)),
            Ok(Range::Last(n)) => Err(format!("last {n}")),
            Err(e) => Err(e),
        };
        assert_eq!(r("10..20").unwrap(), (10, Some(20)));
        assert_eq!(r("1K..").unwrap(), (1024, None));
        assert_eq!(
            r("10G..10G+64M").unwrap(),
            (10 << 30, Some((10 << 30) + (64 << 20)))
        );
        assert_eq!(r("5..5").unwrap(), (5, Some(5)));
        assert_eq!(
            r("40G..+1M").unwrap(),
            (40 << 30, Some((40 << 30) + (1 << 20)))
        );
        assert_eq!(r("3..+0").unwrap(), (3, Some(3)));
        assert_eq!(r("..5").unwrap(), (0, Some(5)));
        assert_eq!(r("..1M").unwrap(), (0, Some(1 << 20)));
        assert_eq!(r("..+3").unwrap(), (0, Some(3)));
        assert_eq!(parse_range("-100"), Ok(Range::Last(100)));
        assert_eq!(parse_range("-1M"), Ok(Range::Last(1 << 20)));
        assert_eq!(parse_range("-0"), Ok(Range::Last(0)));
        for bad in [
            "10",
            "20..10",
            "..",
            "-",
            "-x",
            "--5",
            "a..b",
            "1..2+",
            "1..+",
            "1..++2",
            "1..99999999999T+99999999999T",
        ] {
            assert!(r(bad).is_err(), "{bad}");
        }
        assert!(r("20..10")
            .unwrap_err()
            .contains("ends before it starts (10 < 20)"));
    }
}
