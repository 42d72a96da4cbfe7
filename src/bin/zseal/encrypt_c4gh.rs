//! `zseal encrypt --format crypt4gh` (FORMAT.md §13.8): the recipients as X25519 public keys
//! (`-r age1…`/`ssh-ed25519 …`, `-R` crypt4gh public key files or lines of those), and the
//! signature beside the output (§13.9). The sealing itself is the one of every format.

use anyhow::{bail, Context};
use zseal::crypto::c4gh::{self, PublicKey};
use zseal::{EncryptOptions, Format, Writer};

use super::{seal_with, Args};
use crate::files::{open_input, Output};

/// Encrypts the inputs of `a` into crypt4gh files with `opts` (checked already).
pub fn run(a: &Args, mut opts: EncryptOptions) -> anyhow::Result<()> {
    let c = &a.common;
    if !a.identity.is_empty() {
        bail!(
            "-i with --format crypt4gh: give the recipient's public key instead, -R KEY.pub (a \
             crypt4gh public key file or an ssh-ed25519 .pub) or -r age1…"
        );
    }
    if c.passphrase_file.is_some() {
        bail!("a crypt4gh file has no passphrase: give the recipients' public keys (-r, -R)");
    }
    let recipients = recipients(&a.to.recipient, &a.to.recipients_file)?;
    if recipients.is_empty() {
        bail!(
            "--format crypt4gh needs a recipient: -r age1…, -r \"ssh-ed25519 …\" or -R FILE (a \
             crypt4gh public key file); a crypt4gh file has no passphrase"
        );
    }
    // The signing keys once, for every file: one passphrase prompt.
    let sign_keys = crate::sign::read_keys(&a.sign)?;
    if c.inputs.len() > 1 {
        let pairs = crate::many::plan(&c.inputs, c.output.as_deref(), c.force, |i| {
            Ok(crate::many::encrypted_name(i, ".c4gh"))
        })?;
        return crate::many::run_each(&pairs, |input, output| {
            let signing = signing(a, &sign_keys, Some(output), &mut opts)?;
            let source = open_input(Some(input))?;
            let sink = Output::create(Some(output), c.force, Some(input))?;
            let start = |w| Writer::crypt4gh(w, &recipients, &opts);
            seal_with(a, start, (source, Some(input)), sink, signing)
        });
    }
    if a.resume {
        bail!("--resume continues a zseal container's upload: a crypt4gh upload is not resumable");
    }
    let input = open_input(c.input())?;
    // The signing key and OUT.sig before any output: a wrong key passphrase or an existing
    // OUT.sig leaves nothing behind.
    let signing = signing(a, &sign_keys, c.output.as_deref(), &mut opts)?;
    let output = Output::create(c.output.as_deref(), c.force, c.input())?;
    let start = |w| Writer::crypt4gh(w, &recipients, &opts);
    seal_with(a, start, (input, c.input()), output, signing)
}

/// The signature's place beside `output` and its key, which the writer is given to sign the
/// statement of what it seals.
fn signing(
    a: &Args,
    keys: &[zseal::crypto::sign::SigningKey],
    output: Option<&std::path::Path>,
    opts: &mut EncryptOptions,
) -> anyhow::Result<Option<crate::sign::Signing>> {
    let s = crate::sign::Signing::prepare(keys, Format::Crypt4gh, output, a.common.force)?;
    opts.sign = s.iter().flat_map(|s| s.keys().iter().cloned()).collect();
    Ok(s)
}

/// The crypt4gh recipients of `-r` (each an `age1…` X25519 recipient or an `ssh-ed25519 …`
/// key) and of `-R` files (a crypt4gh public key file, or such lines); `-R -` reads standard
/// input. None given: an empty list, which each command refuses in its own words (encrypt,
/// rekey).
pub fn recipients(
    given: &[String],
    files: &[std::path::PathBuf],
) -> anyhow::Result<Vec<PublicKey>> {
    let mut out = Vec::new();
    for r in given {
        match c4gh::read_public_key(r, &format!("-r {r}")) {
            Err(e) if std::path::Path::new(r).is_file() => {
                bail!("{e} (-r takes a key as text: give a key file with -R {r})")
            }
            k => out.push(k.context("--format crypt4gh")?),
        }
    }
    for f in files {
        let read = match crate::stdin::is_dash(f) {
            true => {
                let text = crate::stdin::read_text("-R -", crate::stdin::KEYS_MAX)?;
                c4gh::read_recipients(&text, "standard input")
            }
            false => c4gh::read_recipients_file(f),
        };
        out.extend(read.context("--format crypt4gh")?);
    }
    Ok(out)
}
