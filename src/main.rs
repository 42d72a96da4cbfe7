//! The `zseal` command: parses arguments, asks for a passphrase, and hands the work to the
//! library. Errors are printed once, as `zseal: error: …`; exit codes are 0 (ok), 1 (failure),
//! 2 (usage), 141 (the reader of our output went away).

use std::io::IsTerminal;
use std::path::{Path, PathBuf};
use std::process::ExitCode;

use anyhow::{bail, Context};
use clap::{Args, Parser, Subcommand};
use zeroize::Zeroizing;
use zseal::io::{Input, Output};
use zseal::{
    Cipher, Codec, DecryptOptions, EncryptOptions, Encryptor, HashAlg, Locked, Passphrase,
};

const EXAMPLES: &str = "\
Examples:
  zseal encrypt big.tar -o big.tar.zseal              # asks for a passphrase
  tar c dir | zseal encrypt --passphrase-file pw > dir.tar.zseal
  zseal decrypt big.tar.zseal -o big.tar
  zseal decrypt --passphrase-file pw < dir.tar.zseal | tar x";

#[derive(Parser)]
#[command(name = "zseal", version, about = "Hash, compress and encrypt files and pipes on every core", after_help = EXAMPLES)]
struct Cli {
    #[command(subcommand)]
    command: Command,
}

#[derive(Subcommand)]
enum Command {
    /// Encrypt INPUT (or stdin) into a zseal container
    #[command(after_help = EXAMPLES)]
    Encrypt(EncryptArgs),
    /// Decrypt and verify a zseal container (or a byte range of it)
    #[command(after_help = EXAMPLES)]
    Decrypt(DecryptArgs),
    /// Check a container completely without writing anything; print its digest like b3sum
    Verify(VerifyArgs),
}

#[derive(Args)]
struct Common {
    /// Input file; absent or `-` reads stdin
    input: Option<PathBuf>,
    /// Output file; absent or `-` writes stdout
    #[arg(short, long)]
    output: Option<PathBuf>,
    /// Read the passphrase from the first line of FILE
    #[arg(long, value_name = "FILE")]
    passphrase_file: Option<PathBuf>,
    /// Worker threads (default: all cores)
    #[arg(short = 'j', long, value_name = "N", default_value_t = 0)]
    threads: usize,
    /// Overwrite OUTPUT if it exists
    #[arg(short, long)]
    force: bool,
}

#[derive(Args)]
struct EncryptArgs {
    #[command(flatten)]
    common: Common,
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
    #[arg(long, value_name = "SIZE", default_value = "4M", value_parser = parse_chunk)]
    chunk_size: usize,
}

#[derive(Args)]
struct DecryptArgs {
    #[command(flatten)]
    common: Common,
    /// Only bytes START..END (END exclusive), START.. or START..START+LEN of the plaintext;
    /// K/M/G suffixes. From a file only the chunks of the range are read; from a pipe
    /// everything before the range is read and skipped, which is slower
    #[arg(long, value_name = "RANGE", value_parser = parse_range)]
    range: Option<(u64, Option<u64>)>,
}

#[derive(Args)]
struct VerifyArgs {
    /// Container to check; absent or `-` reads stdin
    input: Option<PathBuf>,
    /// Read the passphrase from the first line of FILE
    #[arg(long, value_name = "FILE")]
    passphrase_file: Option<PathBuf>,
    /// Worker threads (default: all cores)
    #[arg(short = 'j', long, value_name = "N", default_value_t = 0)]
    threads: usize,
}

fn parse_with<T: std::str::FromStr<Err = zseal::Error>>(s: &str) -> Result<T, String> {
    s.parse().map_err(|e: zseal::Error| e.to_string())
}

fn parse_range(s: &str) -> Result<(u64, Option<u64>), String> {
    zseal::units::parse_range(s).map_err(|e| e.to_string())
}

fn parse_chunk(s: &str) -> Result<usize, String> {
    let n = zseal::units::parse_size(s).map_err(|e| e.to_string())?;
    let n = usize::try_from(n).map_err(|_| format!("chunk size {s} is too large"))?;
    zseal::format::chunk_log2_of(n).map_err(|e| e.to_string())?;
    Ok(n)
}

fn main() -> ExitCode {
    let cli = Cli::parse();
    match run(cli) {
        Ok(()) => ExitCode::SUCCESS,
        Err(e) if is_broken_pipe(&e) => ExitCode::from(141),
        Err(e) => {
            eprintln!("zseal: error: {e:#}");
            ExitCode::FAILURE
        }
    }
}

fn run(cli: Cli) -> anyhow::Result<()> {
    match cli.command {
        Command::Encrypt(a) => encrypt(a),
        Command::Decrypt(a) => decrypt(a),
        Command::Verify(a) => verify(a),
    }
}

fn encrypt(a: EncryptArgs) -> anyhow::Result<()> {
    let c = &a.common;
    let opts = EncryptOptions {
        codec: a.compress,
        cipher: a.cipher,
        hash: a.hash,
        chunk_size: a.chunk_size,
        threads: c.threads,
    };
    let mut input = Input::open(c.input.as_deref())?;
    let output = Output::create(c.output.as_deref(), c.force, c.input.as_deref())?;
    let pw = passphrase(c.passphrase_file.as_deref(), true)?;
    let what = name(c.input.as_deref());
    let mut enc = Encryptor::new(output, &[&pw], &opts)?;
    enc.copy_from(&mut input)
        .with_context(|| format!("encrypting {what}"))?;
    enc.finish()?.commit()?;
    Ok(())
}

fn decrypt(a: DecryptArgs) -> anyhow::Result<()> {
    let c = &a.common;
    let input = Input::open(c.input.as_deref())?;
    let what = name(c.input.as_deref());
    let mut output = Output::create(c.output.as_deref(), c.force, c.input.as_deref())?;
    let done = match (input, a.range) {
        (Input::File(f), Some((start, end))) => {
            unlock(f, &what, c.passphrase_file.as_deref(), c.threads)?.copy_range_to(
                start,
                end,
                &mut output,
            )
        }
        (Input::Stdin(s), Some((start, end))) => {
            unlock(s, &what, c.passphrase_file.as_deref(), c.threads)?.copy_range_streaming(
                start,
                end,
                &mut output,
            )
        }
        (input, None) => {
            unlock(input, &what, c.passphrase_file.as_deref(), c.threads)?.copy_to(&mut output)
        }
    };
    done.with_context(|| format!("decrypting {what}"))?;
    output.commit()?;
    Ok(())
}

fn verify(a: VerifyArgs) -> anyhow::Result<()> {
    let input = Input::open(a.input.as_deref())?;
    let what = name(a.input.as_deref());
    let mut dec = unlock(input, &what, a.passphrase_file.as_deref(), a.threads)?;
    let len = dec
        .copy_to(&mut std::io::sink())
        .with_context(|| format!("verifying {what}"))?;
    let chunks = dec.verified().map_or(0, |f| f.chunk_count);
    // The line names the plaintext (the container's name without .zseal), so that after
    // decrypting, `b3sum -c` or `xxhsum -c` can check the result against it.
    let plain_name = match a.input.as_deref() {
        Some(p) if p != Path::new("-") => {
            p.to_string_lossy().trim_end_matches(".zseal").to_string()
        }
        _ => "-".to_string(),
    };
    match (dec.header().hash, dec.digest_hex()) {
        (zseal::HashAlg::Blake3, Some(hex)) => println!("{hex}  {plain_name}"),
        (zseal::HashAlg::Xxh3, Some(hex)) => println!("XXH3 ({plain_name}) = {hex}"),
        _ => eprintln!("zseal: {what} records no whole-file digest (--hash none); its chunks, index and length are verified"),
    }
    eprintln!(
        "zseal: {what}: OK, {len} bytes ({}) in {chunks} chunks",
        zseal::units::human_bytes(len)
    );
    Ok(())
}

/// Reads the header (so that a file that is not zseal fails before any prompt), gets the
/// passphrase, and unlocks the container.
fn unlock<R: std::io::Read>(
    input: R,
    what: &str,
    passphrase_file: Option<&Path>,
    threads: usize,
) -> anyhow::Result<zseal::Decryptor<R>> {
    let locked = Locked::read(input).with_context(|| format!("reading {what}"))?;
    let pw = passphrase(passphrase_file, false)?;
    let dec = locked
        .unlock(&[&pw], &DecryptOptions { threads })
        .with_context(|| format!("opening {what}"))?;
    Ok(dec)
}

fn name(p: Option<&Path>) -> String {
    match p {
        Some(p) if p != Path::new("-") => p.display().to_string(),
        _ => "standard input".into(),
    }
}

/// The passphrase from `--passphrase-file`, `ZSEAL_PASSPHRASE`, or the terminal (asked twice
/// when encrypting).
fn passphrase(file: Option<&Path>, confirm: bool) -> anyhow::Result<Passphrase> {
    if let Some(f) = file {
        let text = std::fs::read(f)
            .with_context(|| format!("cannot read passphrase file {}", f.display()))?;
        let line = text.split(|&b| b == b'\n').next().unwrap_or_default();
        let line = line.strip_suffix(b"\r").unwrap_or(line);
        if line.is_empty() {
            bail!(
                "passphrase file {} is empty: put the passphrase on its first line",
                f.display()
            );
        }
        return Ok(Passphrase::new(line.to_vec())?);
    }
    if let Ok(p) = std::env::var("ZSEAL_PASSPHRASE") {
        return Ok(Passphrase::new(p.into_bytes())?);
    }
    let tty = std::fs::OpenOptions::new()
        .read(true)
        .write(true)
        .open("/dev/tty");
    if tty.is_err() && !std::io::stdin().is_terminal() {
        bail!("no terminal to ask for the passphrase: pass --passphrase-file FILE (or set ZSEAL_PASSPHRASE)");
    }
    let first = rpassword::prompt_password("Passphrase: ")
        .context("cannot read the passphrase from the terminal")?;
    if first.is_empty() {
        bail!("the passphrase is empty");
    }
    if confirm {
        let second = Zeroizing::new(
            rpassword::prompt_password("Confirm passphrase: ")
                .context("cannot read the passphrase from the terminal")?,
        );
        if *first != *second {
            bail!("the passphrases do not match; nothing was written");
        }
    }
    Ok(Passphrase::new(first.as_bytes().to_vec())?)
}

fn is_broken_pipe(e: &anyhow::Error) -> bool {
    e.chain().any(|c| {
        c.downcast_ref::<std::io::Error>().is_some_and(|io| io.kind() == std::io::ErrorKind::BrokenPipe)
            || matches!(c.downcast_ref::<zseal::Error>(), Some(zseal::Error::Io(io)) if io.kind() == std::io::ErrorKind::BrokenPipe)
    })
}
