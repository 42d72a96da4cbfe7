//! The X25519 keys an identity given with `-i` holds, for crypt4gh files (FORMAT.md §13.7): a
//! crypt4gh private key file (its passphrase asked when it is read), an OpenSSH ed25519 key
//! (mapped as libsodium maps it; a protected one asks for its passphrase only when a crypt4gh
//! file needs it, so that an age or container file opened with it asks once, through age), and
//! age `AGE-SECRET-KEY-1…` identities (the same numbers).

use std::sync::Arc;

use zeroize::Zeroizing;

use super::{convert, file, SecretKey};
use crate::crypto::recipients::KeyPassphrase;
use crate::error::Result;

/// An identity's X25519 keys, or how to get them.
#[derive(Clone, Default)]
pub(crate) enum X25519Keys {
    /// None (a post-quantum or plugin identity, a key service's, an SSH RSA key).
    #[default]
    None,
    /// Read with the identity.
    Keys(Vec<SecretKey>),
    /// Read when asked: an OpenSSH key, whose passphrase is asked then.
    Later(Arc<dyn Fn() -> Result<Vec<SecretKey>> + Send + Sync>),
}

impl X25519Keys {
    /// The keys (asking for an OpenSSH key's passphrase now, if it has one).
    pub(crate) fn get(&self) -> Result<Vec<SecretKey>> {
        match self {
            X25519Keys::None => Ok(Vec::new()),
            X25519Keys::Keys(k) => Ok(k.clone()),
            X25519Keys::Later(f) => f(),
        }
    }

    /// The key of an OpenSSH private key file `data`, read when asked.
    pub(crate) fn ssh(data: &[u8], origin: &str, ask: impl KeyPassphrase) -> X25519Keys {
        let data = Zeroizing::new(String::from_utf8_lossy(data).into_owned());
        let origin = origin.to_string();
        X25519Keys::Later(Arc::new(move || {
            Ok(vec![convert::ssh_secret_key(&data, &origin, &ask)?])
        }))
    }

    /// The key of an age `AGE-SECRET-KEY-1…` line.
    pub(crate) fn age_line(line: &str, origin: &str) -> Result<X25519Keys> {
        convert::age_identities(line, origin).map(X25519Keys::Keys)
    }
}

/// True when `text` is a crypt4gh private key file.
pub(crate) fn is_private_key_file(text: &str) -> bool {
    let t = text.trim_start();
    t.starts_with("-----BEGIN CRYPT4GH") && !t.starts_with(file::PUBLIC_BEGIN)
}

/// The key of a crypt4gh private key file (a protected one asks `ask` now).
pub(crate) fn private_key_file(
    text: &str,
    origin: &str,
    ask: &impl KeyPassphrase,
) -> Result<X25519Keys> {
    Ok(X25519Keys::Keys(vec![file::parse_private_key(
        text.trim_start(),
        origin,
        ask,
    )?]))
}
