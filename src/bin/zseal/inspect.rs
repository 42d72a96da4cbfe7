//! `zseal inspect`: what a container (or an age or crypt4gh file) says about itself without any
//! key, as text or JSON.

use std::path::PathBuf;

use anyhow::Context;
use zseal::format::crypt4gh::describe::{Info as C4ghInfo, UNSIGNED_CAVEAT};
use zseal::format::VERSION;
use zseal::inspect::{describe_file, describe_stream, AgeInfo, Described};
use zseal::units::human_bytes;
use zseal::Info;

use crate::files::{display_name, open_input_for};
use zseal::io::ReadMode;

#[derive(clap::Args)]
pub struct Args {
    /// Container, age or crypt4gh file to describe; absent or `-` reads stdin
    input: Option<PathBuf>,
    /// One JSON object on stdout
    #[arg(long)]
    json: bool,
}

pub fn run(a: Args) -> anyhow::Result<()> {
    // An object: the header and the trailer are fetched, nothing between.
    let input = open_input_for(a.input.as_deref(), ReadMode::Random)?;
    let what = display_name(a.input.as_deref(), "standard input");
    let info = match input.is_seekable() {
        true => describe_file(input),
        false => describe_stream(input),
    }
    .with_context(|| format!("reading {what}"))?;
    if a.json {
        println!("{}", info.to_json());
    } else {
        match &info {
            Described::Zseal(i) => print!("{}", to_text(i, &what)),
            Described::Age(a) => print!("{}", age_text(a, &what)),
            Described::Crypt4gh(c) => {
                print!("{}", crypt4gh_text(c, &what));
                // A local file's signature beside it (FORMAT.md §13.9); inspect has no key to
                // check it with, and sends no request for an object's.
                let beside = crate::keys::signature_beside(a.input.as_deref())
                    .filter(|p| crate::files::url_of(p).is_none() && p.is_file());
                if let Some(sig) = beside {
                    println!(
                        "  signature:   {} lies beside it, unchecked here: `zseal verify --signer \
                         KEY {what}` checks it, and a good one proves the file whole",
                        sig.display()
                    );
                }
            }
            _ => println!("{}", info.to_json()),
        }
    }
    // A file cut short or with a damaged end: its header is described above, and the command
    // fails, so that `zseal inspect f && …` does not go on with a file that cannot be read.
    match info {
        Described::Zseal(Info {
            problem: Some(e), ..
        })
        | Described::Crypt4gh(C4ghInfo {
            problem: Some(e), ..
        }) => Err(anyhow::Error::new(e).context(format!("reading {what}"))),
        _ => Ok(()),
    }
}

/// Human-readable lines.
fn to_text(info: &Info, name: &str) -> String {
    let h = &info.header;
    let mut t = format!("{name}: zseal format version {VERSION}\n");
    t += &format!(
        "  cipher:      {}\n  compression: {}\n  digest:      {}\n",
        h.cipher.name(),
        h.codec.name(),
        h.hash.name()
    );
    t += &format!("  chunk size:  {}\n", human_bytes(h.chunk_size() as u64));
    if h.padded {
        t += "  padded:      yes (chunk and file lengths are size classes)\n";
    }
    if h.signed {
        t += "  signed:      yes (the signers are inside, for a recipient: zseal verify names them)\n";
    }
    t += &format!(
        "  recipients:  {} ({})\n",
        h.stanzas.len(),
        info.recipient_kinds().join(", ")
    );
    for (i, d) in info.recipient_details().iter().enumerate() {
        t += &format!("    {}. {d}\n", i + 1);
    }
    if let (Some(len), Some(n)) = (info.container_len, info.chunks) {
        t += &format!(
            "  container:   {len} bytes ({}), {n} chunks\n",
            human_bytes(len)
        );
    }
    if let Some((k, _)) = info.pieces {
        t += &format!("  pieces:      {k}, each sealed apart under a key of its own\n");
    }
    if let (Some(len), Some(e)) = (info.container_len, &info.problem) {
        t += &format!(
            "  container:   {len} bytes ({}), {}\n",
            human_bytes(len),
            end_text(e)
        );
    }
    match info.plaintext_bounds() {
        Some((lo, hi)) if lo == hi => t += &format!("  plaintext:   {lo} bytes\n"),
        Some((lo, hi)) => {
            t += &format!("  plaintext:   {lo} to {hi} bytes (the exact size is encrypted)\n")
        }
        None if info.problem.is_some() => {
            t += "  plaintext:   unknown (the file's end is not valid)\n"
        }
        None => t += "  plaintext:   unknown (read from a pipe)\n",
    }
    t
}

/// What is wrong with the end of a container, in a few words (the error says the rest).
fn end_text(e: &zseal::Error) -> &'static str {
    match e.kind() {
        zseal::ErrorKind::Truncated => "cut short: the end of the container is missing",
        zseal::ErrorKind::TrailingData => "extended: data follows the end of the container",
        _ => "damaged: its end is not a valid footer",
    }
}

/// Human-readable lines for a crypt4gh file (FORMAT.md §13).
fn crypt4gh_text(c: &C4ghInfo, name: &str) -> String {
    let mut t = format!("{name}: crypt4gh (GA4GH) format version 1\n");
    t += "  cipher:      ChaCha20-Poly1305 (64 KiB segments; X25519 header packets)\n";
    let other = match c.other_methods {
        0 => String::new(),
        n => format!("; {n} of another method, which no key opens"),
    };
    t += &format!(
        "  packets:     {} ({} bytes of header{other})\n",
        c.packets, c.header_len
    );
    match (c.file_len, c.segments, c.stored_len, &c.problem) {
        (Some(len), Some(n), Some(p), _) => {
            let plural = if n == 1 { "" } else { "s" };
            t += &format!(
                "  file:        {len} bytes ({}), {n} segment{plural}\n",
                human_bytes(len)
            );
            t += &format!("  plaintext:   {p} bytes stored (an edit list, if any, is encrypted)\n");
        }
        (Some(len), _, _, Some(e)) => t += &format!("  file:        {len} bytes, {e}\n"),
        _ => t += "  plaintext:   unknown (read from a pipe)\n",
    }
    t + &format!("  note:        {UNSIGNED_CAVEAT}\n")
}

/// Human-readable lines for an age file.
fn age_text(a: &AgeInfo, name: &str) -> String {
    let armor = if a.armored { ", ASCII-armored" } else { "" };
    let mut t = format!("{name}: age format version 1{armor}\n");
    t += "  cipher:      ChaCha20-Poly1305 (STREAM, 64 KiB chunks)\n";
    t += &format!(
        "  recipients:  {} ({})\n",
        a.kinds.len(),
        a.kinds.join(", ")
    );
    for (i, d) in a.details.iter().enumerate() {
        t += &format!("    {}. {d}\n", i + 1);
    }
    match (a.file_len, a.chunks, a.plaintext_len) {
        (Some(len), Some(n), Some(p)) => {
            t += &format!(
                "  file:        {len} bytes ({}), {n} chunks\n",
                human_bytes(len)
            );
            t += &format!(
                "  plaintext:   {p} bytes (from the file's length; in a file zseal wrote with zstd, the compressed input)\n"
            );
        }
        _ => t += "  plaintext:   unknown (read from a pipe)\n",
    }
    t
}
