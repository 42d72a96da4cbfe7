//! `zseal encrypt`: INPUT (or stdin) into a container (or, with `--format age`, an age v1 file),
//! to recipients or a passphrase.

use std::path::PathBuf;

use anyhow::{bail, Context};
use zseal::{Cipher, Codec, EncryptOptions, Format, HashAlg, Writer};

use crate::common::{Clock, Common};
use crate::files::{display_name, open_input, Output};
use crate::keys;
use crate::progress::{Counters, Progress};
use crate::report::Direction;

#[path = "encrypt_c4gh.rs"]
pub(crate) mod c4gh;

#[derive(clap::Args)]
pub struct Args {
    #[command(flatten)]
    common: Common,
    #[command(flatten)]
    pub(crate) to: keys::To,
    /// Encrypt to the recipient of each identity in FILE, as `age -e -i`: age keys
    /// (AGE-SECRET-KEY-1…, AGE-SECRET-KEY-PQ-1…) or an OpenSSH private key (its public key; an
    /// encrypted one needs no passphrase). `-`: standard input; repeatable
    #[arg(short, long = "identity", value_name = "FILE")]
    identity: Vec<PathBuf>,
    /// Compression: zstd[:LEVEL] (-100..22, default zstd:3), lz4, gzip[:LEVEL] (1..9) or none
    /// (with --format crypt4gh: none, the format has no codec)
    #[arg(short, long, value_name = "ALGO", value_parser = parse_with::<Codec>)]
    compress: Option<Codec>,
    /// Cipher: aes-256-gcm (default) or chacha20-poly1305
    #[arg(long, value_parser = parse_with::<Cipher>)]
    cipher: Option<Cipher>,
    /// Whole-file digest: blake3 (default), xxh3 or none
    #[arg(long, value_parser = parse_with::<HashAlg>)]
    hash: Option<HashAlg>,
    /// File format: zseal (a container), age (a standard age v1 file that `age -d` reads; with
    /// zstd, its plaintext is a seekable zstd stream that `zstd -d` reads; -c none: a plain age
    /// file; no digest, padding or rekey, FORMAT.md §10.4) or crypt4gh (GA4GH Crypt4GH v1, as
    /// `crypt4gh decrypt` reads it: to -r age1…/ssh-ed25519 keys and -R crypt4gh public key
    /// files; an age1… recipient is the same X25519 key, so its age identity opens the file too;
    /// no compression, FORMAT.md §13.8)
    #[arg(long, value_name = "FORMAT", default_value = "zseal", value_parser = parse_format)]
    format: Format,
    /// With --format age: ASCII-armored output, as `age -a` writes ("-----BEGIN AGE ENCRYPTED
    /// FILE-----", base64 in lines of 64 columns), for mail and text fields. A third larger, and
    /// written by the calling thread alone
    #[arg(short, long)]
    armor: bool,
    /// Chunk size, a power of two from 1K to 16M [default: 8M] (with --format age: the zstd
    /// frame size; without compression, the input each job seals, default 2M). K and M are
    /// powers of 1024, as in zstd: 1M = 1MiB = 1MB
    #[arg(long, value_name = "SIZE", value_parser = parse_chunk)]
    chunk_size: Option<usize>,
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
    /// Sign with this OpenSSH private key (ed25519, ecdsa, rsa; an encrypted one asks for its
    /// passphrase), or a public key whose private key ssh-agent holds; repeatable. A container holds the signature (an SSHSIG, namespace zseal, over
    /// the plaintext's length and BLAKE3), checked by `decrypt`/`verify --signer`. With --format
    /// age, writes OUT.sig beside -o OUT: an SSHSIG of the age file that `ssh-keygen -Y verify
    /// -n zseal` checks (FORMAT.md §12). With --format crypt4gh, writes OUT.sig beside -o OUT: an
    /// SSHSIG over the plaintext's length and BLAKE3 (FORMAT.md §13.9)
    #[arg(long = "sign", value_name = "KEY")]
    sign: Vec<PathBuf>,
    /// Continue the pending upload of FILE into the object -o names, which a lost connection
    /// or a killed process left (same command line, plus --resume): only the parts the store
    /// lacks are sealed and sent. Refused, naming why, when FILE changed or the options differ
    /// (docs/OBJECTS.md §7)
    #[arg(long)]
    resume: bool,
}

fn parse_format(s: &str) -> Result<Format, String> {
    s.parse().map_err(|e: zseal::Error| e.to_string())
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
    let mut opts = EncryptOptions::default()
        .pad(a.pad)
        .format(a.format)
        .threads(c.threads);
    // A crypt4gh file has no codec: only a named one is checked (and refused unless none).
    match (a.compress, a.format) {
        (None, Format::Crypt4gh) => {}
        (c, _) => opts = opts.codec(c.unwrap_or_default()),
    }
    if let Some(size) = a.chunk_size {
        opts = opts.chunk_size(size);
    }
    if let Some(cipher) = a.cipher {
        opts = opts.cipher(cipher);
    }
    if let Some(hash) = a.hash {
        opts = opts.hash(hash);
    }
    if let Some((min, max)) = a.adapt {
        opts = opts.adapt(min, max);
    }
    // The library's one set of option checks, before a passphrase is asked for or an output
    // created; what an age file cannot hold is said with the flag that chose the format.
    match a.format {
        Format::Zseal => opts.check()?,
        f => opts
            .check()
            .with_context(|| format!("--format {}", f.name()))?,
    }
    if a.armor && a.format != Format::Age {
        anyhow::bail!(
            "-a/--armor writes ASCII-armored age files: add --format age (a zseal container \
             has no armored form)"
        );
    }
    if a.format == Format::Crypt4gh {
        return c4gh::run(&a, opts);
    }
    // An age file whose plaintext is a zstd stream: its recipient's `age -d` alone gives the
    // zstd stream, not the file (issue 59 §1). Said whenever one is written, unless -q or --json.
    if a.format == Format::Age && opts.codec != Codec::None && c.report.notes() {
        eprintln!(
            "zseal: note: the age file holds a seekable zstd stream ({}): its recipient reads it \
             with `age -d … | zstd -d`; -c none writes a plain age file for a recipient with \
             only age",
            opts.codec
        );
    }
    let recipients_now = || -> anyhow::Result<Vec<zseal::AgeRecipient>> {
        let mut recipients = a.to.read()?;
        recipients.extend(keys::recipients_of_identities(&a.identity)?);
        Ok(recipients)
    };
    // The signing keys once, for every input, before any output (a wrong key passphrase leaves
    // nothing behind) and before the route into an object is chosen: a resumable upload's
    // journal names them, and its trailer is signed by them.
    let sign_keys = crate::sign::read_keys(&a.sign)?;
    if a.format != Format::Age {
        for key in &sign_keys {
            opts = opts.sign(key.clone());
        }
    }
    if c.inputs.len() > 1 {
        let suffix = match a.format {
            Format::Age => ".age",
            _ => ".zseal",
        };
        let pairs = crate::many::plan(&c.inputs, c.output.as_deref(), c.force, |i| {
            Ok(crate::many::encrypted_name(i, suffix))
        })?;
        // The keys once, for every file: one passphrase prompt, one read of each key file.
        let recipients = recipients_now()?;
        let targets = keys::Targets::for_new_file(recipients, c.passphrase_file.as_deref())?;
        return crate::many::run_each(&pairs, |input, output| {
            let source = open_input(Some(input))?;
            let signing =
                crate::sign::Signing::prepare(&sign_keys, a.format, Some(output), c.force)?;
            let sink = Output::create(Some(output), c.force, Some(input))?;
            seal(&a, &opts, &targets, (source, Some(input)), sink, signing)
        });
    }
    // Into an object: a pending upload there, --resume, or an upload that keeps a journal.
    match c.output.as_deref().and_then(crate::files::url_of) {
        Some(url) => {
            let how = (c.input(), &opts, a.resume);
            if crate::resume::encrypt_into(url, how, c, recipients_now)? {
                return Ok(());
            }
        }
        None if a.resume => bail!(
            "--resume continues an upload into an object: give -o s3://BUCKET/KEY, the \
             destination of the upload to continue"
        ),
        None => {}
    }
    let input = open_input(c.input())?;
    let recipients = recipients_now()?;
    // The signature's file before any output: an existing OUT.sig leaves nothing behind.
    let signing =
        crate::sign::Signing::prepare(&sign_keys, a.format, c.output.as_deref(), c.force)?;
    let output = Output::create(c.output.as_deref(), c.force, c.input())?;
    let targets = keys::Targets::for_new_file(recipients, c.passphrase_file.as_deref())?;
    seal(&a, &opts, &targets, (input, c.input()), output, signing)
}

/// Seals one input (and its name, `None` for standard input) into `output` for `targets`, and
/// signs it (with --format age, into OUT.sig) when `signing` says so.
fn seal(
    a: &Args,
    opts: &EncryptOptions,
    targets: &keys::Targets,
    input: (zseal::transfer::Source, Option<&std::path::Path>),
    output: Output,
    signing: Option<crate::sign::Signing>,
) -> anyhow::Result<()> {
    let start = |w| Writer::new(w, &targets.refs(), opts);
    seal_with(a, start, input, output, signing)
}

/// Seals one input into `output` through the writer `start` begins, and writes the signature
/// beside it when `signing` says so (an age file's over its bytes, a crypt4gh file's over the
/// statement the writer made).
fn seal_with(
    a: &Args,
    start: impl Fn(Output) -> zseal::Result<Writer<Output>>,
    (mut input, name): (zseal::transfer::Source, Option<&std::path::Path>),
    output: Output,
    signing: Option<crate::sign::Signing>,
) -> anyhow::Result<()> {
    let c = &a.common;
    let what = display_name(name, "standard input");
    let counters = Counters::default();
    let size = input.size();
    let output = output.counting(counters.output.clone())?;
    let output = match &signing {
        Some(s) => s.prepare_output(output)?,
        None => output,
    };
    // Armor is a streaming transform of the output bytes: the workers cannot write by offset
    // into it (its sink lends no handle), so they hand their output to the calling thread.
    let output = match a.armor {
        true => output.armored()?,
        false => output,
    };
    let shared = output.shared_handle();
    let mut enc = start(output)?;
    let clock = Clock::start();
    let progress = Progress::start(c.report.mode(), &counters, size, "encrypting");
    // The transfer layer chooses how: a regular file is read by the workers (progress counts
    // what is sealed), and written by them too when the output is one; a pipe is read here.
    let progress_counts = zseal::transfer::Progress {
        input: counters.input.clone(),
        output: counters.output.clone(),
    };
    zseal::transfer::seal(&mut enc, &mut input, shared, Some(&progress_counts))
        .with_context(|| format!("encrypting {what}"))?;
    let (output, stats, pems) = enc
        .finish_with_signatures()
        .with_context(|| format!("encrypting {what}"))?;
    progress.finish();
    let output = output
        .finish()
        .with_context(|| format!("encrypting {what}"))?;
    let signature = match (signing, pems.is_empty()) {
        (Some(s), true) => Some(s.sign(&output)?),
        (Some(s), false) => Some(s.write(&pems)?),
        (None, _) => None,
    };
    output.commit(!c.no_fsync)?;
    if let Some(sig) = signature {
        sig.commit(!c.no_fsync)?;
    }
    let bytes = (counters.input(), counters.output());
    clock.report(&c.report, Direction::Encrypt, bytes, stats);
    Ok(())
}
