//! `zseal rekey` of a crypt4gh file (FORMAT.md §13.9): the header opened with `-i`, a new one
//! written for `-r`/`-R` (after the old packets with `--add`), and the data segments copied byte
//! for byte. A file is rewritten as a container is (beside it, synced, renamed over it; or to
//! -o); an object on S3 has the store copy all but its first 5 MiB.
//!
//! The keys are crypt4gh's own (`crypto::c4gh`: crypt4gh key files, OpenSSH ed25519 keys, age
//! X25519 keys), read here and nowhere else in rekey.

use std::io::Write;
use std::path::PathBuf;

use anyhow::{bail, Context};
use zseal::crypto::c4gh::{read_secret_keys, PublicKey, SecretKey};
use zseal::format::crypt4gh::rekey::{check_data_len, rekey_header, Keep, Rekeyed};
use zseal::format::crypt4gh::Header;

use super::{new_output, shown, Args, Source};

/// Rekeys the crypt4gh file or object `source` as `a` asks.
pub(super) fn run(a: &Args, source: Source) -> anyhow::Result<()> {
    refuse_container_options(a)?;
    let what = a.file.display().to_string();
    let keys = secret_keys(&a.ids.identity, &what)?;
    let to = crate::encrypt::c4gh::recipients(&a.to.recipient, &a.to.recipients_file)?;
    if to.is_empty() {
        bail!("no new recipient given: pass -r RECIPIENT or -R FILE (a crypt4gh public key file, ssh-ed25519 lines or age1… recipients)");
    }
    match source {
        Source::File(f) => rekey_file(a, f, &keys, &to),
        #[cfg(feature = "remote")]
        Source::Object(_, reader) => rekey_object(a, *reader, &keys, &to),
    }
}

/// What a crypt4gh file has no use for, refused with the reason before any key is read.
fn refuse_container_options(a: &Args) -> anyhow::Result<()> {
    let what = a.file.display();
    if a.rotate {
        bail!(
            "{what} is a crypt4gh file: --rotate is not available for crypt4gh (a new data key \
             means sealing every segment again, FORMAT.md §13.9). To cut off someone who kept \
             the data key, decrypt and encrypt again: zseal decrypt | zseal encrypt --format crypt4gh"
        );
    }
    if a.remove {
        bail!(
            "{what} is a crypt4gh file: --remove cannot name a header packet (packets do not say \
             whose they are); give the recipients to keep with -r/-R instead"
        );
    }
    if a.passphrase_file.is_some() || a.new_passphrase_file.is_some() {
        bail!(
            "{what} is a crypt4gh file: crypt4gh has no passphrases; give keys with -i and -r/-R"
        );
    }
    if a.add_signature.is_some() {
        bail!(
            "{what} is a crypt4gh file: its signature is not inside it but beside it \
             ({what}.sig, FORMAT.md §13.9); copy the .sig file instead"
        );
    }
    Ok(())
}

/// The keys of `-i`: crypt4gh private keys (asking for a protected one's passphrase), OpenSSH
/// ed25519 keys, age X25519 identities.
fn secret_keys(paths: &[PathBuf], what: &str) -> anyhow::Result<Vec<SecretKey>> {
    if paths.is_empty() {
        bail!(
            "{what} is a crypt4gh file: pass the key that opens it with -i (a crypt4gh private \
             key, an OpenSSH ed25519 key or an age identity)"
        );
    }
    let mut out = Vec::new();
    for p in paths {
        let (data, name) = crate::stdin::read_path(p, "-i -")?;
        out.extend(read_secret_keys(
            &data,
            &name,
            &crate::keys::TerminalPrompt,
        )?);
    }
    Ok(out)
}

/// The new header for `old` (of a file of `file_len` bytes), after checking that the data's
/// length fits the header and, in place without --force, that `keys` still open the result.
fn new_header(
    a: &Args,
    old: &Header,
    keys: &[SecretKey],
    to: &[PublicKey],
    file_len: u64,
) -> anyhow::Result<Rekeyed> {
    let what = a.file.display().to_string();
    let keep = match a.add {
        true => Keep::Everything,
        false => Keep::Nothing,
    };
    let r = rekey_header(old, keys, to, keep, &mut rand_core::OsRng)
        .with_context(|| format!("rekeying {what}"))?;
    check_data_len(&r.opened, old.len(), file_len).with_context(|| format!("rekeying {what}"))?;
    // With -o the original stays as it was, and the caller keeps it.
    if !(a.force || a.output.is_some()) && r.header.open(keys).is_err() {
        bail!(
            "rekeying {what}: the new recipients leave out the key that opened the file: after \
             this rekey it could not open the file any more. Add your own recipient (-r, or \
             --add to keep the current ones), or pass --force to give up your access"
        );
    }
    Ok(r)
}

/// A local file: the new header, then every byte after the old one (inside the kernel when
/// both are files), in place or to -o, always synced.
fn rekey_file(
    a: &Args,
    mut f: std::fs::File,
    keys: &[SecretKey],
    to: &[PublicKey],
) -> anyhow::Result<()> {
    let what = a.file.display().to_string();
    let old = Header::read(&mut f).with_context(|| format!("reading {what}"))?;
    let file_len = f.metadata()?.len();
    let r = new_header(a, &old, keys, to, file_len)?;
    let mut output = new_output(a)?;
    let copied = match output.as_file() {
        Some(mut out) => {
            out.write_all(&r.bytes)?;
            std::io::copy(&mut f, &mut out)?
        }
        None => {
            output.write_all(&r.bytes)?;
            std::io::copy(&mut f, &mut output)?
        }
    };
    // Always synced: in place, the rename replaces the only copy of the data.
    output.commit(true)?;
    report(a, &old, &r, copied, "");
    Ok(())
}

/// An object: to -o streamed; in place through [`zseal::remote::replace_head`] (on S3 the store
/// copies all but the first 5 MiB; a small object is one PUT; GCS and Azure stream).
#[cfg(feature = "remote")]
fn rekey_object(
    a: &Args,
    mut reader: zseal::remote::RemoteReader,
    keys: &[SecretKey],
    to: &[PublicKey],
) -> anyhow::Result<()> {
    let url = reader.url().to_string();
    let old = Header::read(&mut reader).with_context(|| format!("reading {url}"))?;
    let r = new_header(a, &old, keys, to, reader.len())?;
    if a.output.is_some() {
        let mut output = new_output(a)?;
        reader.plan_span(old.len(), reader.len());
        output.write_all(&r.bytes)?;
        let copied = std::io::copy(&mut reader, &mut output)?;
        output.commit(true)?;
        report(a, &old, &r, copied, "");
        return Ok(());
    }
    let done = zseal::remote::replace_head(reader, r.bytes.clone(), old.len())
        .with_context(|| format!("rekeying {url} in place"))?;
    let how = match done.copied {
        0 => format!(
            ", streamed through this machine ({} bytes uploaded)",
            done.uploaded
        ),
        n => format!(
            ", {n} of them copied by the store ({} bytes downloaded, {} uploaded)",
            done.downloaded, done.uploaded
        ),
    };
    // What was uploaded is the new header and the data bytes of the first part (or all of them).
    let data = done.uploaded - r.header.len() + done.copied;
    report(a, &old, &r, data, &how);
    Ok(())
}

/// The closing message (unless -q).
fn report(a: &Args, old: &Header, r: &Rekeyed, data: u64, how: &str) {
    if a.quiet {
        return;
    }
    eprintln!(
        "zseal: {} now has {} crypt4gh header packet(s); header {} -> {} bytes; {data} data bytes copied unchanged{how}",
        shown(a),
        r.header.packets.len(),
        old.len(),
        r.header.len(),
    );
}
