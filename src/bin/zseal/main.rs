//! The `zseal` command: parses arguments, asks for a passphrase, and hands the work to the
//! library. Errors are printed once, as `zseal: error: …`; exit codes are 0 (ok), 1 (failure),
//! 2 (usage), 130 (interrupted: temporary outputs removed), 141 (the reader of our output went
//! away).

mod bench;
mod progress;

use std::io::IsTerminal;
use std::path::{Path, PathBuf};
use std::process::ExitCode;

use anyhow::{bail, Context};
use clap::{Args, Parser, Subcommand};
use zeroize::Zeroizing;
use zseal::crypto::recipients::{self, AgeIdentity, AgeRecipient, KeyPassphrase};
use zseal::io::{Counted, Input, Output};
use zseal::stats::{Direction, Report, StreamStats};

use progress::{Counters, Mode, Progress};
use zseal::{
    Cipher, Codec, DecryptOptions, EncryptOptions, Encryptor, HashAlg, Identity, Locked,
    Passphrase, Recipient,
};

const EXAMPLES: &str = "\
Examples:
  zseal encrypt big.tar -o big.tar.zseal              # asks for a passphrase
  tar c dir | zseal encrypt --passphrase-file pw > dir.tar.zseal
  zseal decrypt big.tar.zseal -o big.tar
  zseal decrypt --passphrase-file pw < dir.tar.zseal | tar x
  zseal keygen -o me.key                              # prints the recipient age1…
  zseal encrypt -r age1… -R team.txt data.bin -o data.bin.zseal
  zseal decrypt -i me.key data.bin.zseal -o data.bin
  zseal decrypt --range 10G..10G+64M big.zseal -o slice.bin
  zseal verify big.zseal                              # prints the digest like b3sum
  zseal inspect data.bin.zseal                        # no key needed
  producer | zseal encrypt -r age1… --stats > out.zseal  # where did the time go?";

const BENCH_EXAMPLES: &str = "\
Examples:
  zseal bench big.tar                          # quick subset on the first 64 MiB
  zseal bench big.tar --full --plot bench.svg  # every row, 3 runs each, and a chart
  zseal bench db.dump --format json > rows.json";

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
    /// Make an identity (private key) and print its public recipient, like age-keygen
    Keygen(KeygenArgs),
    /// Hash files in parallel, printing lines b3sum / xxhsum -H3 print (and --check reads)
    Hash(HashArgs),
    /// Show a container's header without any key (--json for scripts)
    Inspect(InspectArgs),
    /// Measure stage orders, algorithms, chunk sizes and threads on FILE; recommend a setting
    #[command(after_help = BENCH_EXAMPLES)]
    Bench(bench::BenchArgs),
    /// Print a shell completion script: bash, zsh, fish or powershell
    Completions {
        /// The shell
        shell: clap_complete::Shell,
    },
    /// Print the man page (roff), e.g. `zseal man > /usr/local/share/man/man1/zseal.1`
    Man,
}

#[derive(Args)]
struct KeygenArgs {
    /// Write the identity to FILE (created with mode 0600; never overwritten) instead of stdout
    #[arg(short, long)]
    output: Option<PathBuf>,
    /// Print the recipients of the identities in FILE instead (like age-keygen -y)
    #[arg(short = 'y', value_name = "FILE", conflicts_with = "output")]
    convert: Option<PathBuf>,
}

#[derive(Args)]
struct HashArgs {
    /// Files to hash (none or `-`: stdin); with --check, files of check lines
    files: Vec<PathBuf>,
    /// blake3 (lines like b3sum) or xxh3 (lines like xxhsum -H3)
    #[arg(long, default_value = "blake3", value_parser = parse_with::<HashAlg>)]
    algo: HashAlg,
    /// Read check lines (from b3sum, xxhsum -H3 or zseal hash) and verify the files they name
    #[arg(short, long)]
    check: bool,
}

#[derive(Args)]
struct InspectArgs {
    /// Container to describe; absent or `-` reads stdin
    input: Option<PathBuf>,
    /// One JSON object on stdout
    #[arg(long)]
    json: bool,
}

#[derive(Args)]
struct Identities {
    /// Identity file: age keys (AGE-SECRET-KEY-1…) or an OpenSSH private key; repeatable
    #[arg(short, long = "identity", value_name = "FILE")]
    identity: Vec<PathBuf>,
}

/// What to tell on stderr while and after the work runs.
#[derive(Args)]
struct Reporting {
    /// Show the progress line even when stderr is not a terminal
    #[arg(long, conflicts_with = "quiet")]
    progress: bool,
    /// No progress line and no informational messages (warnings and errors still print)
    #[arg(short, long)]
    quiet: bool,
    /// After the work, print bytes, ratio, wall and CPU time and time per stage to stderr
    #[arg(long)]
    stats: bool,
    /// After the work, print the --stats figures as one JSON object on stderr
    #[arg(long)]
    json: bool,
}

impl Reporting {
    fn mode(&self) -> Mode {
        if self.quiet {
            Mode::Quiet
        } else if self.progress {
            Mode::Force
        } else {
            Mode::Auto
        }
    }
}

/// The command's stopwatch, started once the data starts to move (prompts excluded).
struct Clock(zseal::stats::Stopwatch);

impl Clock {
    fn start() -> Clock {
        Clock(zseal::stats::Stopwatch::start())
    }

    /// Prints the requested reports for a finished command.
    fn report(
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
        };
        if how.stats {
            eprint!("{}", r.to_text());
        }
        if how.json {
            eprintln!("{}", r.to_json());
        }
    }
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
    #[command(flatten)]
    report: Reporting,
}

#[derive(Args)]
struct EncryptArgs {
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
    #[arg(long, value_name = "SIZE", default_value = "4M", value_parser = parse_chunk)]
    chunk_size: usize,
}

#[derive(Args)]
struct DecryptArgs {
    #[command(flatten)]
    common: Common,
    #[command(flatten)]
    ids: Identities,
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
    #[command(flatten)]
    ids: Identities,
    #[command(flatten)]
    report: Reporting,
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
    // Ctrl-C: no half-written output survives; 130 is the shell's code for an interrupt.
    let _ = ctrlc::set_handler(|| {
        zseal::io::remove_partial_outputs();
        std::process::exit(130);
    });
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
        Command::Keygen(a) => keygen(a),
        Command::Hash(a) => hash(a),
        Command::Completions { shell } => {
            clap_complete::generate(
                shell,
                &mut <Cli as clap::CommandFactory>::command(),
                "zseal",
                &mut std::io::stdout(),
            );
            Ok(())
        }
        Command::Man => {
            clap_mangen::Man::new(<Cli as clap::CommandFactory>::command())
                .render(&mut std::io::stdout())?;
            Ok(())
        }
        Command::Inspect(a) => inspect(a),
        Command::Bench(a) => bench::run(a),
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
    let input = Input::open(c.input.as_deref())?;
    let recipients = recipients(&a, matches!(input, Input::Stdin(_)))?;
    if !recipients.is_empty() && c.passphrase_file.is_some() {
        bail!("a passphrase cannot be combined with recipients (as in age): anyone holding one of the keys could re-wrap the file for the passphrase; encrypt twice instead");
    }
    let output = Output::create(c.output.as_deref(), c.force, c.input.as_deref())?;
    let what = name(c.input.as_deref());
    let counters = Counters::default();
    let size = input.file_size();
    let mut input = Counted::new(input, counters.input.clone());
    let output = Counted::new(output, counters.output.clone());
    let pw;
    let to: Vec<&dyn Recipient> = if recipients.is_empty() {
        pw = passphrase(c.passphrase_file.as_deref(), true)?;
        vec![&pw]
    } else {
        recipients.iter().map(|r| r as &dyn Recipient).collect()
    };
    let mut enc = Encryptor::new(output, &to, &opts)?;
    let clock = Clock::start();
    let progress = Progress::start(c.report.mode(), &counters, size, "encrypting");
    enc.copy_from(&mut input)
        .with_context(|| format!("encrypting {what}"))?;
    let (output, stats) = enc.finish_with_stats()?;
    progress.finish();
    output.into_inner().commit()?;
    let bytes = (counters.input(), counters.output());
    clock.report(&c.report, Direction::Encrypt, bytes, stats);
    Ok(())
}

fn decrypt(a: DecryptArgs) -> anyhow::Result<()> {
    let c = &a.common;
    let input = Input::open(c.input.as_deref())?;
    let what = name(c.input.as_deref());
    let output = Output::create(c.output.as_deref(), c.force, c.input.as_deref())?;
    let counters = Counters::default();
    // A range reads an unknown part of the file: no bar, only the counts.
    let size = input.file_size().filter(|_| a.range.is_none());
    let mut output = Counted::new(output, counters.output.clone());
    let pw = c.passphrase_file.as_deref();
    let job = Job {
        how: &c.report,
        counters: &counters,
        size,
        verb: "decrypting",
    };
    let (_, stats, clock) = match (input, a.range) {
        (Input::File(f), Some((start, end))) => job.run(
            unlock(
                Counted::new(f, counters.input.clone()),
                &what,
                pw,
                &a.ids,
                c.threads,
            )?,
            |d| d.copy_range_to(start, end, &mut output),
        ),
        (Input::Stdin(s), Some((start, end))) => job.run(
            unlock(
                Counted::new(s, counters.input.clone()),
                &what,
                pw,
                &a.ids,
                c.threads,
            )?,
            |d| d.copy_range_streaming(start, end, &mut output),
        ),
        (input, None) => job.run(
            unlock(
                Counted::new(input, counters.input.clone()),
                &what,
                pw,
                &a.ids,
                c.threads,
            )?,
            |d| d.copy_to(&mut output),
        ),
    }
    .with_context(|| format!("decrypting {what}"))?;
    output.into_inner().commit()?;
    let bytes = (counters.input(), counters.output());
    clock.report(&c.report, Direction::Decrypt, bytes, stats);
    Ok(())
}

/// The data-moving part of decrypt and verify, with its progress line and clock.
struct Job<'a> {
    how: &'a Reporting,
    counters: &'a Counters,
    size: Option<u64>,
    verb: &'static str,
}

impl Job<'_> {
    fn run<R: std::io::Read, T>(
        &self,
        mut dec: zseal::Decryptor<R>,
        work: impl FnOnce(&mut zseal::Decryptor<R>) -> zseal::Result<T>,
    ) -> zseal::Result<(T, StreamStats, Clock)> {
        let clock = Clock::start();
        let progress = Progress::start(self.how.mode(), self.counters, self.size, self.verb);
        let r = work(&mut dec);
        progress.finish();
        Ok((r?, dec.stats(), clock))
    }
}

fn verify(a: VerifyArgs) -> anyhow::Result<()> {
    let input = Input::open(a.input.as_deref())?;
    let what = name(a.input.as_deref());
    let counters = Counters::default();
    let job = Job {
        how: &a.report,
        counters: &counters,
        size: input.file_size(),
        verb: "verifying",
    };
    let input = Counted::new(input, counters.input.clone());
    let dec = unlock(
        input,
        &what,
        a.passphrase_file.as_deref(),
        &a.ids,
        a.threads,
    )?;
    let mut kept = None;
    let (len, stats, clock) = job
        .run(dec, |d| {
            let len = d.copy_to(&mut std::io::sink())?;
            kept = Some((
                d.header().hash,
                d.digest_hex(),
                d.verified().map_or(0, |f| f.chunk_count),
            ));
            Ok(len)
        })
        .with_context(|| format!("verifying {what}"))?;
    let (alg, hex, chunks) = kept.expect("set on success");
    // The line names the plaintext (the container's name without .zseal), so that after
    // decrypting, `b3sum -c` or `xxhsum -c` can check the result against it.
    let plain_name = match a.input.as_deref() {
        Some(p) if p != Path::new("-") => {
            p.to_string_lossy().trim_end_matches(".zseal").to_string()
        }
        _ => "-".to_string(),
    };
    match (alg, hex) {
        (zseal::HashAlg::Blake3, Some(hex)) => println!("{hex}  {plain_name}"),
        (zseal::HashAlg::Xxh3, Some(hex)) => println!("XXH3 ({plain_name}) = {hex}"),
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

/// Reads the header (so that a file that is not zseal fails before any prompt), then unlocks it
/// with the identities given, or with a passphrase when the file has a passphrase stanza.
fn unlock<R: std::io::Read>(
    input: R,
    what: &str,
    passphrase_file: Option<&Path>,
    ids: &Identities,
    threads: usize,
) -> anyhow::Result<zseal::Decryptor<R>> {
    let locked = Locked::read(input).with_context(|| format!("reading {what}"))?;
    let stanzas = &locked.header().stanzas;
    let by_passphrase = stanzas
        .iter()
        .any(|s| s.kind == zseal::crypto::passphrase::STANZA_TYPE);
    if !stanzas.iter().any(|s| {
        s.kind == zseal::crypto::passphrase::STANZA_TYPE || s.kind == recipients::STANZA_TYPE
    }) {
        let kinds: Vec<String> = stanzas.iter().map(|s| s.kind_name()).collect();
        bail!(
            "{what} has no key stanza this zseal understands ({}): the file is damaged, or was written by a newer zseal",
            kinds.join(", ")
        );
    }
    let opts = DecryptOptions { threads };
    let dec = if by_passphrase {
        if !ids.identity.is_empty() {
            bail!("{what} is protected by a passphrase, not encrypted to a key: drop -i and give --passphrase-file (or type it)");
        }
        let pw = passphrase(passphrase_file, false)?;
        locked.unlock(&[&pw], &opts)
    } else {
        if ids.identity.is_empty() {
            let kinds: Vec<String> = stanzas.iter().map(|s| s.kind_name()).collect();
            bail!(
                "{what} is encrypted to {} recipient(s) ({}): pass an identity file with -i",
                stanzas.len(),
                kinds.join(", ")
            );
        }
        let identities = read_identity_files(&ids.identity)?;
        let refs: Vec<&dyn Identity> = identities.iter().map(|i| i as &dyn Identity).collect();
        locked.unlock(&refs, &opts)
    };
    dec.with_context(|| format!("opening {what}"))
}

/// Asks on the terminal for the passphrase of an encrypted SSH key.
#[derive(Clone)]
struct TerminalPrompt;

impl KeyPassphrase for TerminalPrompt {
    fn passphrase(&self, description: &str) -> Option<String> {
        rpassword::prompt_password(format!("{description}: ")).ok()
    }
}

fn read_identity_files(paths: &[PathBuf]) -> anyhow::Result<Vec<AgeIdentity>> {
    let mut out = Vec::new();
    for p in paths {
        let data = Zeroizing::new(
            std::fs::read(p)
                .with_context(|| format!("cannot read identity file {}", p.display()))?,
        );
        out.extend(recipients::read_identities(
            &data,
            &p.display().to_string(),
            TerminalPrompt,
        )?);
    }
    Ok(out)
}

/// The recipients of -r and -R (`-R -` reads stdin, unless the data comes from stdin).
fn recipients(a: &EncryptArgs, data_on_stdin: bool) -> anyhow::Result<Vec<AgeRecipient>> {
    let mut out = Vec::new();
    for r in &a.recipient {
        out.push(AgeRecipient::parse(r)?);
    }
    for f in &a.recipients_file {
        if f == Path::new("-") {
            if data_on_stdin {
                bail!("-R - reads recipients from stdin, but the data comes from stdin too: give the data as a file, or the recipients in a file");
            }
            out.extend(recipients::read_recipients(
                std::io::stdin().lock(),
                "standard input",
            )?);
        } else {
            let file = std::fs::File::open(f)
                .with_context(|| format!("cannot open recipients file {}", f.display()))?;
            out.extend(recipients::read_recipients(
                std::io::BufReader::new(file),
                &f.display().to_string(),
            )?);
        }
    }
    Ok(out)
}

fn keygen(a: KeygenArgs) -> anyhow::Result<()> {
    if let Some(f) = a.convert {
        let data = Zeroizing::new(
            std::fs::read(&f).with_context(|| format!("cannot read {}", f.display()))?,
        );
        for r in recipients::recipients_of(&data, &f.display().to_string())? {
            println!("{r}");
        }
        return Ok(());
    }
    let (secret, public) = recipients::generate();
    let text = Zeroizing::new(format!(
        "# created by zseal keygen\n# public key: {public}\n{}\n",
        *secret
    ));
    match a.output {
        Some(path) => {
            let mut opts = std::fs::OpenOptions::new();
            opts.write(true).create_new(true);
            #[cfg(unix)]
            std::os::unix::fs::OpenOptionsExt::mode(&mut opts, 0o600);
            let mut f = opts.open(&path).with_context(|| {
                format!(
                    "cannot create {} (an existing key file is never overwritten)",
                    path.display()
                )
            })?;
            std::io::Write::write_all(&mut f, text.as_bytes())?;
            f.sync_all()?;
            eprintln!("Public key: {public}");
        }
        None => {
            print!("{}", *text);
            if !std::io::stdout().is_terminal() {
                eprintln!("Public key: {public}");
            }
        }
    }
    Ok(())
}

fn hash(a: HashArgs) -> anyhow::Result<()> {
    use rayon::prelude::*;
    let files = if a.files.is_empty() {
        vec![PathBuf::from("-")]
    } else {
        a.files.clone()
    };
    if a.check {
        return check_sums(&files);
    }
    if a.algo == HashAlg::None {
        bail!("--algo none has nothing to print: use blake3 or xxh3");
    }
    // Files in parallel, lines in the order given.
    let results: Vec<_> = files
        .par_iter()
        .map(|f| zseal::hash::hash_path(a.algo, f))
        .collect();
    let mut failed = false;
    for (f, r) in files.iter().zip(results) {
        let name = if f == Path::new("-") && a.algo == HashAlg::Xxh3 {
            "stdin".into()
        } else {
            f.display().to_string()
        };
        match r {
            Ok(hex) => println!("{}", zseal::hash::check_line(a.algo, &hex, &name)),
            Err(e) => {
                eprintln!("zseal: error: {}: {e}", f.display());
                failed = true;
            }
        }
    }
    if failed {
        bail!("some files could not be hashed");
    }
    Ok(())
}

fn check_sums(lists: &[PathBuf]) -> anyhow::Result<()> {
    use rayon::prelude::*;
    let mut entries = Vec::new();
    for l in lists {
        let text = if l == Path::new("-") {
            std::io::read_to_string(std::io::stdin().lock())?
        } else {
            std::fs::read_to_string(l).with_context(|| format!("cannot read {}", l.display()))?
        };
        for (n, line) in text
            .lines()
            .enumerate()
            .filter(|(_, l)| !l.trim().is_empty())
        {
            let e = zseal::hash::parse_check_line(line).with_context(|| {
                format!("{}:{}: not a b3sum or xxhsum -H3 line", l.display(), n + 1)
            })?;
            entries.push(e);
        }
    }
    let results: Vec<_> = entries
        .par_iter()
        .map(|(alg, _, name)| zseal::hash::hash_path(*alg, Path::new(name)))
        .collect();
    let mut bad = 0;
    for ((_, want, name), got) in entries.iter().zip(results) {
        match got {
            Ok(hex) if hex == *want => println!("{name}: OK"),
            Ok(_) => {
                println!("{name}: FAILED");
                bad += 1;
            }
            Err(e) => {
                println!("{name}: FAILED to read ({e})");
                bad += 1;
            }
        }
    }
    if bad > 0 {
        bail!(
            "{bad} of {} computed checksums did NOT match",
            entries.len()
        );
    }
    Ok(())
}

fn inspect(a: InspectArgs) -> anyhow::Result<()> {
    let input = Input::open(a.input.as_deref())?;
    let what = name(a.input.as_deref());
    let info = match input {
        Input::File(f) => zseal::inspect::inspect_file(f),
        Input::Stdin(s) => zseal::inspect::inspect_stream(s),
    }
    .with_context(|| format!("reading {what}"))?;
    if a.json {
        println!("{}", info.to_json());
    } else {
        print!("{}", info.to_text(&what));
    }
    Ok(())
}

fn name(p: Option<&Path>) -> String {
    match p {
        Some(p) if p != Path::new("-") => p.display().to_string(),
        _ => "standard input".into(),
    }
}

/// The passphrase from `--passphrase-file`, `ZSEAL_PASSPHRASE`, or the terminal (asked twice
/// when encrypting); a short one gets a warning when encrypting.
fn passphrase(file: Option<&Path>, confirm: bool) -> anyhow::Result<Passphrase> {
    let (pw, len) = read_passphrase(file, confirm)?;
    if confirm && len < 12 {
        eprintln!(
            "zseal: warning: the passphrase has only {len} characters; anyone holding the file can try \
             guesses offline: prefer 5 or more random words, or a public key (zseal keygen)"
        );
    }
    Ok(pw)
}

/// The passphrase and its length in characters.
fn read_passphrase(file: Option<&Path>, confirm: bool) -> anyhow::Result<(Passphrase, usize)> {
    let chars = |b: &[u8]| String::from_utf8_lossy(b).chars().count();
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
        return Ok((Passphrase::new(line.to_vec())?, chars(line)));
    }
    if let Ok(p) = std::env::var("ZSEAL_PASSPHRASE") {
        let n = p.chars().count();
        return Ok((Passphrase::new(p.into_bytes())?, n));
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
    Ok((
        Passphrase::new(first.as_bytes().to_vec())?,
        first.chars().count(),
    ))
}

fn is_broken_pipe(e: &anyhow::Error) -> bool {
    e.chain().any(|c| {
        c.downcast_ref::<std::io::Error>().is_some_and(|io| io.kind() == std::io::ErrorKind::BrokenPipe)
            || matches!(c.downcast_ref::<zseal::Error>(), Some(zseal::Error::Io(io)) if io.kind() == std::io::ErrorKind::BrokenPipe)
    })
}
