//! `encrypt --sign` (FORMAT.md §12): the signing keys, read and unlocked before anything is
//! written, and the detached signature beside an age file; `--signer` and `--allowed-signers`
//! of `decrypt` and `verify`.

use std::path::PathBuf;

use anyhow::{bail, Context};

use crate::keys::TerminalPrompt;

/// The signing keys and the signature's output beside an age or crypt4gh file.
pub struct Signing {
    keys: Vec<zseal::crypto::sign::SigningKey>,
    out: crate::files::Output,
    name: String,
    /// The signature is over the file's bytes (an age file's), not a statement the writer made.
    over_file: bool,
}

impl Signing {
    /// `None` without `--sign`, and for a container (its signatures are frames of its own, made
    /// by the library); for an age or crypt4gh file, refuses where a signature cannot go (it goes
    /// beside a local output file), and an existing OUT.sig without --force.
    pub fn prepare(
        keys: &[zseal::crypto::sign::SigningKey],
        format: zseal::Format,
        output: Option<&std::path::Path>,
        force: bool,
    ) -> anyhow::Result<Option<Signing>> {
        if keys.is_empty() {
            return Ok(None);
        }
        if format == zseal::Format::Zseal {
            return Ok(None);
        }
        let f = format.name();
        if keys.len() > 1 {
            bail!(
                "--sign: one key with --format {f}: its signature file holds one SSHSIG, which is \
                 what `ssh-keygen -Y verify` reads (sign again with the other key into another \
                 file)"
            );
        }
        let out = output
            .filter(|p| *p != std::path::Path::new("-") && !zseal::io::is_url(&p.to_string_lossy()))
            .ok_or_else(|| {
                anyhow::anyhow!(
                    "--sign with --format {f} writes the signature beside the output: give -o FILE \
                     (a local file; the signature goes to FILE.sig), or encrypt without --sign"
                )
            })?;
        let mut sig_path = out.as_os_str().to_owned();
        sig_path.push(".sig");
        let sig_path = PathBuf::from(sig_path);
        let name = sig_path.display().to_string();
        let out = crate::files::Output::create(Some(&sig_path), force, None)?;
        Ok(Some(Signing {
            keys: keys.to_vec(),
            out,
            name,
            over_file: format == zseal::Format::Age,
        }))
    }

    /// The output, made ready for the signature: an age file's bytes are hashed as they are
    /// written ([`crate::files::Output::hashing`]), armored ones as armored, so that nothing is
    /// read back.
    pub fn prepare_output(
        &self,
        output: crate::files::Output,
    ) -> anyhow::Result<crate::files::Output> {
        match self.over_file {
            true => output.hashing(),
            false => Ok(output),
        }
    }

    /// Signs the finished age file `written` (its SHA-512, taken as it was written) with every
    /// key; returns the signature's output, to commit after the file itself.
    pub fn sign(mut self, written: &crate::files::Output) -> anyhow::Result<crate::files::Output> {
        use std::io::Write;
        let digest = written.sha512().ok_or_else(|| {
            anyhow::anyhow!("--sign: the output was not hashed as it was written")
        })?;
        for k in &self.keys {
            let pem = k.sign_sha512(&digest)?;
            self.out
                .write_all(pem.as_bytes())
                .with_context(|| format!("writing {}", self.name))?;
        }
        Ok(self.out)
    }
}

impl Signing {
    /// The keys, unlocked: a crypt4gh writer signs the statement of what it sealed with them.
    pub fn keys(&self) -> &[zseal::crypto::sign::SigningKey] {
        &self.keys
    }

    /// Writes the armored signatures `pems` the writer made (a crypt4gh file's, FORMAT.md
    /// §13.9); returns the signature's output, to commit after the file itself.
    pub fn write(mut self, pems: &[String]) -> anyhow::Result<crate::files::Output> {
        use std::io::Write;
        for pem in pems {
            self.out
                .write_all(pem.as_bytes())
                .with_context(|| format!("writing {}", self.name))?;
        }
        Ok(self.out)
    }
}

/// The signing keys of `--sign`, unlocked (an encrypted key asks for its passphrase).
pub fn read_keys(keys: &[PathBuf]) -> anyhow::Result<Vec<zseal::crypto::sign::SigningKey>> {
    let mut out = Vec::new();
    for k in keys {
        out.push(match crate::stdin::is_dash(k) {
            true => {
                let text = crate::stdin::read_text("--sign -", crate::stdin::KEYS_MAX)?;
                zseal::crypto::sign::SigningKey::parse(&text, "standard input", &TerminalPrompt)?
            }
            false => zseal::crypto::sign::SigningKey::read(k, &TerminalPrompt)?,
        });
    }
    Ok(out)
}

/// `--signer` and `--allowed-signers` of `decrypt` and `verify`: who must have signed.
#[derive(clap::Args, Debug, Default)]
pub struct SignerArgs {
    /// Require a good signature by this SSH public key (a file such as id_ed25519.pub, or the
    /// key itself: "ssh-ed25519 AAAA…"; `-`: standard input); repeatable. Reads the whole file: an unsigned file, a
    /// signature by another key or over other content fails, and no output is kept
    #[arg(long = "signer", value_name = "KEY")]
    pub signer: Vec<String>,
    /// Require a good signature by a key of this OpenSSH allowed_signers file (`ssh-keygen -Y
    /// verify`'s format; entries whose namespaces= leave out zseal do not count, and a file that
    /// leaves no key for zseal is refused; `-`: standard input)
    #[arg(long = "allowed-signers", value_name = "FILE")]
    pub allowed_signers: Vec<PathBuf>,
}

impl SignerArgs {
    /// True when a signer was asked for (the check then needs the whole file, in order).
    pub fn given(&self) -> bool {
        !self.signer.is_empty() || !self.allowed_signers.is_empty()
    }

    /// The signers given (none: nothing is required).
    pub fn signers(&self) -> anyhow::Result<zseal::crypto::sign::Signers> {
        let mut s = zseal::crypto::sign::Signers::default();
        for k in &self.signer {
            match k.as_str() {
                "-" => {
                    let text = crate::stdin::read_text("--signer -", crate::stdin::KEYS_MAX)?;
                    s.add_key_text(&text, "standard input")
                        .context("--signer -")?
                }
                k => s.add_key(k).context("--signer")?,
            }
        }
        for f in &self.allowed_signers {
            match crate::stdin::is_dash(f) {
                true => {
                    let text =
                        crate::stdin::read_text("--allowed-signers -", crate::stdin::KEYS_MAX)?;
                    s.add_allowed_signers_text("standard input", &text)
                }
                false => s.add_allowed_signers(f),
            }
            .context("--allowed-signers")?;
        }
        Ok(s)
    }
}

/// A detached signature (`ssh-keygen -Y sign` writes them armored): a file, standard input
/// (`-`), or an object beside the one read (`s3://b/x.c4gh.sig`).
pub fn read_signature(path: &std::path::Path) -> anyhow::Result<zseal::crypto::sign::Signature> {
    if let Some(url) = crate::files::url_of(path) {
        return zseal::transfer::read_signature(url).with_context(|| format!("reading {url}"));
    }
    let (pem, name) = crate::stdin::read_path(path, "the signature -")?;
    let pem = String::from_utf8_lossy(&pem);
    zseal::crypto::sign::Signature::from_pem(&pem).with_context(|| format!("reading {name}"))
}
