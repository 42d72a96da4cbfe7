//! The `zseal` command: parses the arguments and hands each subcommand to its own module, which
//! asks the user for what it needs and calls the library. Errors are printed once, as
//! `zseal: error: …`; exit codes are 0 (ok), 1 (failure), 2 (usage), 128 + signal (interrupted
//! by SIGINT, SIGTERM or SIGHUP: temporary outputs removed), 141 (the reader of our output went away).

// The library's huge-page allocator (zseal::alloc); the unit tests of this binary install their
// own (keys.rs).
#[cfg(not(test))]
#[global_allocator]
static ALLOC: zseal::alloc::HugeForLarge = zseal::alloc::HugeForLarge;

mod bench;
mod cat;
mod common;
mod decrypt;
mod dict;
mod encrypt;
mod files;
mod habits;
mod hash;
mod inspect;
mod keygen;
mod keys;
mod ls;
mod many;
mod progress;
mod rekey;
mod report;
mod resume;
#[cfg(feature = "remote")]
mod retries;
mod serve;
mod sign;
mod stdin;
mod tty;
mod verify;

use std::process::ExitCode;

use clap::{Parser, Subcommand};

/// The examples every `--help` ends with (a macro, so that `zseal --help` can append them to
/// the note on sizes at compile time).
macro_rules! examples {
    () => {
        "\
Examples:
  zseal encrypt big.tar -o big.tar.zseal              # asks for a passphrase
  zseal -d big.tar.zseal -o big.tar                   # -d: decrypt, as age -d and zstd -d
  tar c dir | zseal encrypt --passphrase-file pw > dir.tar.zseal
  zseal decrypt big.tar.zseal -o big.tar
  zseal decrypt --passphrase-file pw < dir.tar.zseal | tar x
  zseal keygen -o me.key                              # prints the recipient age1…
  zseal keygen --record-key -r age1… -o records.key.zseal  # a key for sealed records
  zseal encrypt -r age1… -R team.txt data.bin -o data.bin.zseal
  zseal decrypt -i me.key data.bin.zseal -o data.bin
  zseal decrypt --range 10G..10G+64M big.zseal -o slice.bin
  zseal verify big.zseal                              # prints the digest like b3sum
  zseal inspect data.bin.zseal                        # no key needed
  zseal rekey data.bin.zseal -i me.key --add -r age1… # share it with one more key
  producer | zseal encrypt -r age1… --stats > out.zseal  # where did the time go?

Sizes (--chunk-size, --range, dict --size, bench --size): K, M, G, T are powers of 1024, with or
without iB or B, as zstd reads them: 1M = 1MiB = 1MB = 1,048,576 bytes."
    };
}

const EXAMPLES: &str = examples!();

/// What the sizes tell, after the usage and the commands of `zseal --help` (where `encrypt
/// --help` also says it), so that the help opens with what the command does and how to call it.
const AFTER_LONG_HELP: &str = concat!(
    "\
What the sizes tell: encryption hides the bytes, not their amount. A container shows the plaintext \
length to within a chunk and each chunk's compressed size, so equal files give equal-length \
containers (an observer can link them), and compressing attacker-chosen data together with a \
secret can reveal the secret through the lengths (the CRIME and BREACH attacks on TLS). Use \
`encrypt -c none` for such data. Rekeying changes who can unwrap a file's key, not the key: a \
removed recipient who kept the file can still read it (see `zseal rekey --help`, --rotate).

",
    examples!()
);

#[derive(Parser)]
#[command(
    name = "zseal",
    version,
    about = "Hash, compress and encrypt files and pipes on every core",
    long_about = "Hash, compress and encrypt files and pipes on every core, into a framed, seekable container.",
    after_help = EXAMPLES,
    after_long_help = AFTER_LONG_HELP
)]
struct Cli {
    /// Decrypt, as `age -d` and `zstd -d`: `zseal -d ARGS…` is `zseal decrypt ARGS…`
    /// (first argument only)
    #[arg(short = 'd', long = "decrypt")]
    _decrypt: bool,
    #[command(subcommand)]
    command: Command,
}

#[derive(Subcommand)]
enum Command {
    /// Encrypt INPUT (or stdin) into a zseal container
    ///
    /// Encryption hides the bytes, not their amount: the container shows the plaintext length to
    /// within a chunk and each chunk's compressed size. Equal files give equal-length containers,
    /// and compressing attacker-chosen data together with a secret can reveal the secret through
    /// the lengths (as CRIME did for TLS): use -c none for such data.
    #[command(after_help = EXAMPLES)]
    Encrypt(encrypt::Args),
    /// Decrypt and verify a zseal container (or a byte range of it)
    #[command(after_help = EXAMPLES)]
    Decrypt(decrypt::Args),
    /// Change who can open a container (add, replace recipients, new passphrase) without
    /// decrypting it; --rotate also re-seals every frame under a new file key
    #[command(after_help = rekey::EXAMPLES)]
    Rekey(rekey::Args),
    /// Check a container completely without writing anything; print its digest like b3sum
    Verify(verify::Args),
    /// Make an identity (private key) and print its public recipient, like age-keygen
    Keygen(keygen::Args),
    /// Hash files in parallel, printing lines b3sum / xxhsum -H3 print (and --check reads)
    Hash(hash::Args),
    /// Zstd dictionaries for sealed records: `zseal dict train SAMPLES… -o DICT`
    #[command(subcommand)]
    Dict(dict::Command),
    /// Show a container's header without any key (--json for scripts); a file cut short or
    /// with a damaged end shows its header, says what is wrong, and exits 1
    Inspect(inspect::Args),
    /// List an archive's members (a container whose plaintext is a tar), as `tar t` prints them
    Ls(ls::Args),
    /// Write one member of an archive, as `tar xO` does: `zseal cat A.tar.zseal MEMBER`
    Cat(cat::Args),
    /// Measure stage orders, algorithms, chunk sizes and threads on FILE; recommend a setting
    #[command(after_help = bench::EXAMPLES)]
    Bench(bench::Args),
    /// Serve an encrypting S3 gateway: `zseal serve s3 ROOT -R team.txt --credentials FILE`
    #[command(subcommand)]
    Serve(serve::Command),
    /// Show (--list) or end (--abort URL) the uploads a lost connection or a killed process
    /// left pending; `encrypt … --resume` continues one
    Resume(resume::Args),
    /// Print a shell completion script: bash, zsh, fish or powershell
    Completions {
        /// The shell
        shell: clap_complete::Shell,
    },
    /// Print the man page (roff), e.g. `zseal man > /usr/local/share/man/man1/zseal.1`
    Man,
}

fn main() -> ExitCode {
    let args = habits::with_aliases(std::env::args_os().collect());
    if let Some(habit) = habits::misplaced(&args) {
        eprintln!("zseal: error: {habit}");
        return ExitCode::from(2);
    }
    let cli = Cli::parse_from(args);
    #[cfg(feature = "remote")]
    retries::say_them();
    files::on_termination_signals(|signal| {
        files::remove_partial_outputs();
        std::process::exit(128 + signal);
    });
    match run(cli) {
        Ok(()) => ExitCode::SUCCESS,
        Err(e) if common::is_broken_pipe(&e) => ExitCode::from(141),
        Err(e) => {
            eprintln!("zseal: error: {e:#}");
            ExitCode::FAILURE
        }
    }
}

fn run(cli: Cli) -> anyhow::Result<()> {
    let command = || <Cli as clap::CommandFactory>::command();
    match cli.command {
        Command::Encrypt(a) => encrypt::run(a),
        Command::Decrypt(a) => decrypt::run(a),
        Command::Rekey(a) => rekey::run(a),
        Command::Verify(a) => verify::run(a),
        Command::Keygen(a) => keygen::run(a),
        Command::Hash(a) => hash::run(a),
        Command::Dict(c) => dict::run(c),
        Command::Inspect(a) => inspect::run(a),
        Command::Ls(a) => ls::run(a),
        Command::Cat(a) => cat::run(a),
        Command::Bench(a) => bench::run(a),
        Command::Serve(c) => serve::run(c),
        Command::Resume(a) => resume::run(a),
        Command::Completions { shell } => {
            clap_complete::generate(shell, &mut command(), "zseal", &mut std::io::stdout());
            Ok(())
        }
        Command::Man => Ok(clap_mangen::Man::new(command()).render(&mut std::io::stdout())?),
    }
}
