//! `encrypt --sign` (FORMAT.md §12.4): the signing keys, read and unlocked before anything is
//! written, and the detached signature beside an age file.

use std::path::PathBuf;

use anyhow::{bail, Context};

use crate::keys::TerminalPrompt;

/// The signing keys and the signature's output beside the age file.
pub struct Signing {
    keys: Vec<zseal::crypto::sign::SigningKey>,
    out: crate::files::Output,
    name: String,
}

impl Signing {
    /// `None` without `--sign`; refuses what cannot be signed yet (a container) or where (the
    /// signature goes beside a local output file), and an existing OUT.sig without --force.
    pub fn prepare(
        keys: &[PathBuf],
        format: zseal::Format,
        output: Option<&std::path::Path>,
        force: bool,
    ) -> anyhow::Result<Option<Signing>> {
        if keys.is_empty() {
            return Ok(None);
        }
        if format != zseal::Format::Age {
            bail!(
                "--sign: signing a zseal container is designed (FORMAT.md §12) but not built yet; \
                 with --format age, --sign writes a detached signature (OUT.sig) beside the age file"
            );
        }
        if keys.len() > 1 {
            bail!(
                "--sign: one key with --format age: its signature file holds one SSHSIG, which is \
                 what `ssh-keygen -Y verify` reads (sign again with the other key into another \
                 file)"
            );
        }
        let out = output
            .filter(|p| *p != std::path::Path::new("-") && !zseal::io::is_url(&p.to_string_lossy()))
            .ok_or_else(|| {
                anyhow::anyhow!(
                    "--sign with --format age writes the signature beside the output: give -o FILE \
                     (a local file; the signature goes to FILE.sig)"
                )
            })?;
        let mut sig_path = out.as_os_str().to_owned();
        sig_path.push(".sig");
        let sig_path = PathBuf::from(sig_path);
        let keys = keys
            .iter()
            .map(|k| zseal::crypto::sign::SigningKey::read(k, &TerminalPrompt))
            .collect::<zseal::Result<Vec<_>>>()?;
        let name = sig_path.display().to_string();
        let out = crate::files::Output::create(Some(&sig_path), force, None)?;
        Ok(Some(Signing { keys, out, name }))
    }

    /// Signs the finished age file `written` (read back from its start: its SHA-512) with every
    /// key; returns the signature's output, to commit after the file itself.
    pub fn sign(mut self, written: &crate::files::Output) -> anyhow::Result<crate::files::Output> {
        use std::io::{Seek, Write};
        let mut file = written
            .as_file()
            .and_then(|f| f.try_clone().ok())
            .ok_or_else(|| anyhow::anyhow!("--sign: the output is not a file to read back"))?;
        file.seek(std::io::SeekFrom::Start(0))?;
        let digest = zseal::crypto::sign::sha512_of(&mut file)?;
        for k in &self.keys {
            let pem = k.sign_sha512(&digest)?;
            self.out
                .write_all(pem.as_bytes())
                .with_context(|| format!("writing {}", self.name))?;
        }
        Ok(self.out)
    }
}
