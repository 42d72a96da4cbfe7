//! `zseal verify`: checks a whole container without writing anything and prints its digest as
//! `b3sum` (or `xxhsum -H3`) prints the decrypted file's.

use std::path::{Path, PathBuf};

use anyhow::{bail, Context};

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
    /// Read the passphrase from the first line of FILE (`-`: standard input)
    #[arg(long, value_name = "FILE")]
    passphrase_file: Option<PathBuf>,
    /// Worker threads (default: all cores)
    #[arg(short = 'j', long, value_name = "N", default_value_t = 0)]
    threads: usize,
    #[command(flatten)]
    ids: Identities,
    #[command(flatten)]
    report: Reporting,
    #[command(flatten)]
    signers: crate::sign::SignerArgs,
    /// Write the signed statement to PREFIX and its signature to PREFIX.sig, for `ssh-keygen -Y
    /// verify -f allowed_signers -I ID -n zseal -s PREFIX.sig < PREFIX` (the signature of the
    /// required signer, or else the first); neither file may exist
    #[arg(long, value_name = "PREFIX")]
    export_signature: Option<PathBuf>,
    /// Check this detached signature (`ssh-keygen -Y sign -n zseal` over the statement that
    /// --export-signature writes) instead of the signatures inside the file; needs --signer or
    /// --allowed-signers
    #[arg(long, value_name = "FILE")]
    signature: Option<PathBuf>,
}

/// What a verified container says of its signatures: the statement they are over, those found
/// in it, and the good one (found, or given with --signature) with who made it.
#[derive(Default)]
struct Signed {
    statement: Option<String>,
    found: Vec<zseal::crypto::sign::Signature>,
    by: Option<(zseal::crypto::sign::Signature, String)>,
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
    // The signers check the file's own signatures while it is read, or, with --signature, the
    // detached one once it was (read and parsed first, so that a bad one fails before the work).
    let signers = a.signers.signers()?;
    let detached = match &a.signature {
        Some(path) if !signers.is_required() => anyhow::bail!(
            "--signature {}: give --signer or --allowed-signers to check it against",
            path.display()
        ),
        Some(path) => Some(crate::sign::read_signature(path)?),
        None => None,
    };
    let keys = Unlock {
        what: &what,
        passphrase_file: a.passphrase_file.as_deref(),
        ids: &a.ids,
        threads: a.threads,
        raw_age: false,
        // A crypt4gh file keeps its signature beside it (FORMAT.md §13.9).
        signature: a.signature.clone().or_else(|| {
            crate::keys::signature_beside(a.input.as_deref())
                .filter(|_| signers.is_required() || a.export_signature.is_some())
        }),
        crypt4gh_signature: None,
        signers: match detached {
            Some(_) => zseal::crypto::sign::Signers::default(),
            None => signers.clone(),
        },
    };
    let exports = a
        .export_signature
        .as_deref()
        .map(Export::create)
        .transpose()?;
    let plan = input.read_plan();
    let dec = keys.open(input)?;
    let format = dec.format();
    let alg = dec.as_zseal().map(|d| d.header().hash);
    // Before the work: only a container with a BLAKE3 digest has a statement to sign.
    match (&detached, alg) {
        (Some(_), None) if format == zseal::Format::Age => bail!("--signature: {what} is an age file, which has no statement to sign (check its OUT.sig with ssh-keygen -Y verify)"),
        (Some(_), Some(h)) if h != zseal::HashAlg::Blake3 => bail!("--signature: {what} records a {h} digest, and a statement is over BLAKE3: it cannot be signed"),
        _ => {}
    }
    let ((len, hex, chunks, signed), stats, clock) = job
        .run(dec, |d| {
            let len = plan.copy(d, None, std::io::sink())?;
            Ok(match d.as_zseal() {
                Some(z) => (
                    len,
                    d.digest_hex(),
                    d.chunk_count().unwrap_or(0),
                    Signed {
                        statement: z.statement(),
                        found: z.signatures().to_vec(),
                        by: match &detached {
                            Some(sig) => Some((sig.clone(), z.check_detached(&signers, sig)?)),
                            None => z
                                .good_signature()
                                .cloned()
                                .zip(z.signer().map(str::to_string)),
                        },
                    },
                ),
                None => match d.as_crypt4gh() {
                    Some(c) => (
                        len,
                        None,
                        d.chunk_count().unwrap_or(0),
                        Signed {
                            statement: c.statement(),
                            found: Vec::new(),
                            by: match &detached {
                                Some(sig) => Some((sig.clone(), c.check_detached(&signers, sig)?)),
                                None => c
                                    .good_signature()
                                    .cloned()
                                    .zip(c.signer().map(str::to_string)),
                            },
                        },
                    ),
                    None => (len, None, d.chunk_count().unwrap_or(0), Signed::default()),
                },
            })
        })
        .with_context(|| format!("verifying {what}"))?;
    if let Some(export) = exports {
        export.write(&what, &signed)?;
    }
    // The line names the plaintext (the container's name without .zseal), so that after
    // decrypting, `b3sum -c` or `xxhsum -c` can check the result against it.
    let plain_name = match a.input.as_deref() {
        Some(p) if p != Path::new("-") => {
            let name = p.to_string_lossy();
            let plain = name
                .strip_suffix(".zseal")
                .or_else(|| name.strip_suffix(".age"))
                .or_else(|| name.strip_suffix(".c4gh"));
            plain.unwrap_or(&name).to_string()
        }
        _ => "-".to_string(),
    };
    match (hex, alg) {
        (Some(hex), Some(alg)) => println!("{}", check_line(alg, &hex, &plain_name)),
        _ if format == zseal::Format::Crypt4gh && signed.by.is_some() => eprintln!("zseal: {what} is a crypt4gh file: every segment is authenticated, and the signature proves the plaintext whole (FORMAT.md §13.9)"),
        _ if format == zseal::Format::Crypt4gh => eprintln!("zseal: {what} is a crypt4gh file: every segment is authenticated, but {}", zseal::format::crypt4gh::describe::UNSIGNED_CAVEAT),
        _ if format == zseal::Format::Age => eprintln!("zseal: {what} is an age file: every STREAM chunk and the final one are authenticated (age records no whole-file digest)"),
        _ => eprintln!("zseal: {what} records no whole-file digest (--hash none); its chunks, index and length are verified"),
    }
    if !a.report.quiet {
        eprintln!(
            "zseal: {what}: OK, {len} bytes ({}) in {chunks} chunk{}",
            zseal::units::human_bytes(len),
            if chunks == 1 { "" } else { "s" }
        );
        match &signed.by {
            Some((_, who)) => eprintln!("zseal: {what}: good signature by {who}"),
            None => {
                for s in &signed.found {
                    eprintln!(
                        "zseal: {what}: signed by {} (unverified: give --signer or \
                         --allowed-signers to check it)",
                        s.fingerprint()
                    );
                }
            }
        }
    }
    clock.report(&a.report, Direction::Verify, (counters.input(), len), stats);
    Ok(())
}

/// `--export-signature PREFIX`: the statement and its signature, created before the check runs
/// (so that an existing file fails first) and written only after it succeeded.
struct Export {
    statement: (PathBuf, crate::files::Output),
    signature: (PathBuf, crate::files::Output),
}

impl Export {
    fn create(prefix: &Path) -> anyhow::Result<Export> {
        if crate::stdin::is_dash(prefix) {
            anyhow::bail!(
                "--export-signature writes two files, PREFIX and PREFIX.sig: give a path prefix \
                 (standard output cannot hold both)"
            );
        }
        let mut sig = prefix.as_os_str().to_owned();
        sig.push(".sig");
        let sig = PathBuf::from(sig);
        let open = |p: &Path| -> anyhow::Result<(PathBuf, crate::files::Output)> {
            // verify has no --force and no -o: the hint Output gives would name both.
            let out = match p.symlink_metadata() {
                Ok(_) => anyhow::bail!(
                    "--export-signature: {} already exists, and is never replaced: remove it, or \
                     give another PREFIX",
                    p.display()
                ),
                Err(_) => crate::files::Output::create(Some(p), false, None)?,
            };
            Ok((p.to_path_buf(), out))
        };
        Ok(Export {
            statement: open(prefix)?,
            signature: open(&sig)?,
        })
    }

    /// Writes the statement of the verified plaintext and the good signature, or else the
    /// first; an unsigned file writes nothing.
    fn write(self, what: &str, signed: &Signed) -> anyhow::Result<()> {
        use std::io::Write;
        let chosen = match &signed.by {
            Some((good, _)) => Some(good),
            None => signed.found.first(),
        };
        let (Some(sig), Some(text)) = (chosen, &signed.statement) else {
            anyhow::bail!(
                "--export-signature: {what} is not signed: there is no signature to export"
            );
        };
        let (spath, mut sout) = self.statement;
        let (gpath, mut gout) = self.signature;
        sout.write_all(text.as_bytes())
            .with_context(|| format!("writing {}", spath.display()))?;
        gout.write_all(sig.to_pem().as_bytes())
            .with_context(|| format!("writing {}", gpath.display()))?;
        sout.commit(true)?;
        gout.commit(true)?;
        Ok(())
    }
}
