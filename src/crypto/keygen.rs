//! New keys and the recipients of existing ones (`zseal keygen`, `keygen -y`, `encrypt -i`).

use std::io;
use std::str::FromStr;

use age::secrecy::ExposeSecret;

use super::pq::IDENTITY_PREFIX;
use super::recipients::PLUGIN_IDENTITY_PREFIX;
use crate::error::{Error, Result};

/// The public key of the OpenSSH private key in `data`, as its `.pub` file starts.
pub(crate) fn ssh_recipient_of(data: &[u8], origin: &str) -> Result<String> {
    let bad = |e: &dyn std::fmt::Display| {
        Error::InvalidOption(format!("cannot read the SSH key {origin}: {e}"))
    };
    let id = age::ssh::Identity::from_buffer(io::Cursor::new(data), Some(origin.to_string()))
        .map_err(|e| bad(&e))?;
    let r = age::ssh::Recipient::try_from(id).map_err(|e| {
        bad(&format!(
            "{e:?}: only ssh-ed25519 and ssh-rsa keys can be encrypted to"
        ))
    })?;
    Ok(r.to_string())
}

/// A new X25519 identity: (`AGE-SECRET-KEY-1…`, `age1…`).
pub fn generate() -> (zeroize::Zeroizing<String>, String) {
    let id = age::x25519::Identity::generate();
    let secret = zeroize::Zeroizing::new(id.to_string().expose_secret().to_string());
    (secret, id.to_public().to_string())
}

/// A new post-quantum identity: (`AGE-SECRET-KEY-PQ-1…`, `age1pq1…`).
pub fn generate_pq() -> (zeroize::Zeroizing<String>, String) {
    let id = super::pq::PqIdentity::generate(&mut rand_core::OsRng);
    (id.to_secret_string(), id.to_public().to_string())
}

/// The recipients (`age1…`, `age1pq1…`) of the native identities in an identity file, as
/// `age-keygen -y`, or of an OpenSSH private key its public key (`ssh-ed25519 AAAA…`, `ssh-rsa
/// AAAA…`: an encrypted key's public part is stored in the clear, so no passphrase is asked).
pub fn recipients_of(data: &[u8], origin: &str) -> Result<Vec<String>> {
    if String::from_utf8_lossy(data)
        .trim_start()
        .starts_with("-----BEGIN")
    {
        return Ok(vec![ssh_recipient_of(data, origin)?]);
    }
    let mut out = Vec::new();
    for line in String::from_utf8_lossy(data).lines() {
        let line = line.trim();
        if line.is_empty() || line.starts_with('#') {
            continue;
        }
        if line.starts_with(IDENTITY_PREFIX) {
            out.push(super::pq::PqIdentity::parse(line)?.to_public().to_string());
            continue;
        }
        if line.starts_with("age1") || line.starts_with("ssh-") {
            return Err(Error::InvalidOption(format!(
                "{origin}: this is a public key (a recipient), not an identity: give it with \
                 -r (or the file with -R)"
            )));
        }
        if line.starts_with(PLUGIN_IDENTITY_PREFIX) {
            return Err(Error::InvalidOption(format!(
                "{origin}: an age plugin's identity (AGE-PLUGIN-…) does not say its recipient: \
                 give the recipient the plugin printed with it (age1…) with -r"
            )));
        }
        let id = age::x25519::Identity::from_str(line).map_err(|e| {
            Error::InvalidOption(format!("{origin}: not an AGE-SECRET-KEY-1 line: {e}"))
        })?;
        out.push(id.to_public().to_string());
    }
    if out.is_empty() {
        return Err(Error::InvalidOption(format!("{origin} holds no identity")));
    }
    Ok(out)
}
