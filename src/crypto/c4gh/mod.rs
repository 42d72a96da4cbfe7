//! Crypt4GH keys (docs/FORMAT.md §13.7) and the shared key of a header packet (§13.2).
//!
//! Every crypt4gh key is an X25519 key: a 32-byte secret scalar and a 32-byte public
//! u-coordinate. They come from crypt4gh key files ([`file`]), from OpenSSH ed25519 keys mapped to
//! X25519 as libsodium maps them, and from age X25519 keys, which are the same numbers in Bech32
//! ([`convert`]). [`read_public_key`] and [`read_secret_keys`] take any of them.
//!
//! The shared key is libsodium's `crypto_kx` as the reference uses it: the first 32 bytes of
//! BLAKE2b-512 over `K_dh ‖ K_pr ‖ K_pw`, the **reader's** public key first on both sides.

pub mod convert;
pub mod file;
pub(crate) mod identity;

use blake2::{Blake2b512, Digest};
use curve25519_dalek::montgomery::MontgomeryPoint;
use rand_core::{CryptoRng, RngCore};
use zeroize::Zeroizing;

use super::recipients::KeyPassphrase;
use super::Zeroizing32;
use crate::error::{Error, Result};

/// Length of an X25519 key, secret or public.
pub const KEY_LEN: usize = 32;

/// A reader's (or writer's) X25519 public key, `K_pr` (`K_pw`).
#[derive(Clone, Copy, Debug, PartialEq, Eq, Hash)]
pub struct PublicKey(pub [u8; KEY_LEN]);

/// An X25519 secret key, `K_sr` (`K_sw`), with its public key. Wiped on drop.
#[derive(Clone)]
pub struct SecretKey {
    secret: Zeroizing<[u8; KEY_LEN]>,
    public: PublicKey,
}

impl std::fmt::Debug for SecretKey {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.debug_struct("SecretKey")
            .field("public", &self.public)
            .finish_non_exhaustive()
    }
}

impl SecretKey {
    /// The key whose scalar is `bytes` (clamped by X25519 itself, RFC 7748 §5), and its public
    /// key `X25519(bytes, 9)`.
    pub fn from_bytes(bytes: [u8; KEY_LEN]) -> SecretKey {
        let public = PublicKey(MontgomeryPoint::mul_base_clamped(bytes).to_bytes());
        SecretKey {
            secret: Zeroizing::new(bytes),
            public,
        }
    }

    /// A fresh key from `rng` (a writer key, or a new key pair).
    pub fn generate(rng: &mut (impl RngCore + CryptoRng + ?Sized)) -> SecretKey {
        let mut bytes = Zeroizing::new([0u8; KEY_LEN]);
        rng.fill_bytes(bytes.as_mut());
        SecretKey::from_bytes(*bytes)
    }

    /// The public key.
    pub fn public(&self) -> PublicKey {
        self.public
    }

    /// The secret scalar, as a key file stores it.
    pub fn expose(&self) -> &[u8; KEY_LEN] {
        &self.secret
    }

    /// `K_dh = X25519(self, peer)`, or `None` when it is all zero (a low-order `peer`: libsodium
    /// refuses it, and so does zseal).
    fn diffie_hellman(&self, peer: &PublicKey) -> Option<Zeroizing<[u8; KEY_LEN]>> {
        let dh = Zeroizing::new(MontgomeryPoint(peer.0).mul_clamped(*self.secret).to_bytes());
        (*dh != [0u8; KEY_LEN]).then_some(dh)
    }

    /// The shared key of a packet this reader key opens, written by `writer` (`K_pw`).
    pub(crate) fn reader_shared_key(&self, writer: &PublicKey) -> Option<Zeroizing32> {
        let dh = self.diffie_hellman(writer)?;
        Some(shared_key(&dh, &self.public, writer))
    }

    /// The shared key of a packet this writer key seals for `reader` (`K_pr`).
    pub(crate) fn writer_shared_key(&self, reader: &PublicKey) -> Option<Zeroizing32> {
        let dh = self.diffie_hellman(reader)?;
        Some(shared_key(&dh, reader, &self.public))
    }
}

/// `K_shared = BLAKE2b-512(K_dh ‖ K_pr ‖ K_pw)[0..32]` (FORMAT.md §13.2).
fn shared_key(dh: &[u8; KEY_LEN], reader: &PublicKey, writer: &PublicKey) -> Zeroizing32 {
    let mut h = Blake2b512::new();
    h.update(dh);
    h.update(reader.0);
    h.update(writer.0);
    let full = Zeroizing::new(h.finalize());
    let mut out = Zeroizing32([0u8; KEY_LEN]);
    out.0.copy_from_slice(&full[..KEY_LEN]);
    out
}

/// A recipient's public key from the text of a key file or a key given as text: a crypt4gh
/// public key (`-----BEGIN CRYPT4GH PUBLIC KEY-----`), an OpenSSH `ssh-ed25519` line, or an age
/// `age1…` recipient. `origin` names it in messages.
pub fn read_public_key(text: &str, origin: &str) -> Result<PublicKey> {
    let t = text.trim();
    if t.starts_with("-----BEGIN CRYPT4GH") {
        return file::parse_public_key(t, origin);
    }
    if t.starts_with("ssh-") {
        return convert::ssh_public_key(t, origin);
    }
    if t.starts_with("age1") {
        return convert::age_recipient(t, origin);
    }
    Err(Error::InvalidOption(format!(
        "{origin}: not a crypt4gh public key: give a -----BEGIN CRYPT4GH PUBLIC KEY----- file \
         (crypt4gh-keygen), an ssh-ed25519 public key or an age1… recipient"
    )))
}

/// The recipients in the file at `path` (see [`read_recipients`]); a file that cannot be read
/// is refused naming it, as an age recipients file is.
pub fn read_recipients_file(path: &std::path::Path) -> Result<Vec<PublicKey>> {
    let name = path.display().to_string();
    let text = std::fs::read_to_string(path).map_err(|e| {
        let e = crate::io::without_path(&e);
        Error::InvalidOption(format!("cannot read recipients file {name}: {e}"))
    })?;
    read_recipients(&text, &name)
}

/// The recipients in the text of a recipients file (`-R`): crypt4gh public key blocks
/// (`-----BEGIN CRYPT4GH PUBLIC KEY-----` … `-----END …`), and lines of `ssh-ed25519 …` keys and
/// `age1…` recipients as an authorized_keys or age recipients file holds them (blank lines and
/// `#` comments skipped). Any other line is refused, naming the file and the line.
pub fn read_recipients(text: &str, origin: &str) -> Result<Vec<PublicKey>> {
    let mut out = Vec::new();
    let mut block: Option<String> = None;
    for (i, line) in text.lines().enumerate() {
        let line = line.trim();
        if let Some(b) = &mut block {
            b.push_str(line);
            b.push('\n');
            if line.starts_with("-----END") {
                out.push(file::parse_public_key(b.trim(), origin)?);
                block = None;
            }
        } else if line.starts_with("-----BEGIN") {
            block = Some(format!("{line}\n"));
        } else if !line.is_empty() && !line.starts_with('#') {
            out.push(read_public_key(line, &format!("{origin} line {}", i + 1))?);
        }
    }
    if block.is_some() {
        return Err(Error::InvalidOption(format!(
            "{origin}: a key block has no -----END line: the file is cut short"
        )));
    }
    if out.is_empty() {
        return Err(Error::InvalidOption(format!(
            "{origin}: no recipient in it (a crypt4gh public key file, or ssh-ed25519 and age1… \
             lines)"
        )));
    }
    Ok(out)
}

/// The secret keys in the text of an identity file: a crypt4gh private key (a protected one asks
/// `ask` for its passphrase), an OpenSSH ed25519 private key, or age identities
/// (`AGE-SECRET-KEY-1…` lines; `#` comments). `origin` names the file in messages.
pub fn read_secret_keys(
    data: &[u8],
    origin: &str,
    ask: &impl KeyPassphrase,
) -> Result<Vec<SecretKey>> {
    let text = std::str::from_utf8(data).map_err(|_| {
        Error::InvalidOption(format!("{origin}: a key file is text, and this one is not"))
    })?;
    let t = text.trim_start();
    if t.starts_with("-----BEGIN CRYPT4GH") {
        return Ok(vec![file::parse_private_key(t, origin, ask)?]);
    }
    if t.starts_with("-----BEGIN OPENSSH PRIVATE KEY-----") {
        return Ok(vec![convert::ssh_secret_key(t, origin, ask)?]);
    }
    convert::age_identities(t, origin)
}

#[cfg(test)]
mod tests {
    use super::*;

    fn hex(b: &[u8]) -> String {
        b.iter().map(|x| format!("{x:02x}")).collect()
    }

    /// RFC 7748 §6.1's Alice and Bob, then the BLAKE2b step computed independently (Python's
    /// hashlib.blake2b over the same 96 bytes): both sides derive the same key, and it is the
    /// reader's public key that comes first.
    #[test]
    fn shared_key_matches_rfc7748_and_an_independent_blake2b() {
        let alice: [u8; 32] =
            hex_arr("77076d0a7318a57d3c16c17251b26645df4c2f87ebc0992ab177fba51db92c2a");
        let bob: [u8; 32] =
            hex_arr("5dab087e624a8a4b79e17f8b83800ee66f3bb1292618b6fd1c2f8b27ff88e0eb");
        let (a, b) = (SecretKey::from_bytes(alice), SecretKey::from_bytes(bob));
        assert_eq!(
            hex(&a.public().0),
            "8520f0098930a754748b7ddcb43ef75a0dbf3a0d26381af4eba4a98eaa9b4e6a"
        );
        let dh = a.diffie_hellman(&b.public()).unwrap();
        assert_eq!(
            hex(dh.as_ref()),
            "4a5d9d5ba4ce2de1728e3bf480350f25e07e21c947d19e3376f09b3c1e161742"
        );
        // Bob reads a packet Alice wrote.
        let w = a.writer_shared_key(&b.public()).unwrap();
        let r = b.reader_shared_key(&a.public()).unwrap();
        assert_eq!(w.0, r.0);
        assert_eq!(
            hex(&r.0),
            "1ad7d1f6d5270fbb18123f3bc904c7f97283e7d47bbe85606ee5ded0af2608c5"
        );
        // Alice reading a packet Bob wrote hashes the keys the other way round.
        assert_ne!(a.reader_shared_key(&b.public()).unwrap().0, r.0);
    }

    #[test]
    fn a_low_order_peer_gives_no_shared_key() {
        let me = SecretKey::from_bytes([9; 32]);
        for low in [[0u8; 32], {
            let mut one = [0u8; 32];
            one[0] = 1;
            one
        }] {
            assert!(me.reader_shared_key(&PublicKey(low)).is_none());
            assert!(me.writer_shared_key(&PublicKey(low)).is_none());
        }
    }

    pub(crate) fn hex_arr<const N: usize>(s: &str) -> [u8; N] {
        core::array::from_fn(|i| u8::from_str_radix(&s[2 * i..2 * i + 2], 16).unwrap())
    }
}
