//! The payload AEAD (AES-256-GCM or ChaCha20-Poly1305) and the STREAM nonce (FORMAT.md §3).

//!
//! Both ciphers come from aws-lc-rs (AWS-LC, FIPS-validated, with AES-GCM code paths for AES-NI,
//! VAES and AVX-512): on the 2-core Xeon, sealing 4 MiB frames streamed from memory, 6.5 GiB/s
//! against RustCrypto's 1.2 for AES-256-GCM and 2.0 against 0.86 for ChaCha20-Poly1305
//! (`cargo bench --bench aead`; docs/PERFORMANCE.md). The bytes are the standard AEADs', so
//! the RustCrypto implementations still open every frame (checked by `tests/library/aead_peer.rs`). AWS-LC
//! wipes its key schedule when the context is freed.

use aws_lc_rs::aead::{Aad, LessSafeKey, Nonce, UnboundKey, AES_256_GCM, CHACHA20_POLY1305};

use crate::error::{Error, Result};

/// Length of the AEAD tag that ends every frame body.
pub const TAG_LEN: usize = 16;
/// Length of the AEAD nonce.
pub const NONCE_LEN: usize = 12;

/// The payload cipher, chosen per file and recorded in the header.
#[derive(Clone, Copy, Debug, PartialEq, Eq, Default)]
#[non_exhaustive]
pub enum Cipher {
    /// AES-256-GCM (the default: hardware AES makes it the fastest on x86 and ARM).
    #[default]
    Aes256Gcm,
    /// ChaCha20-Poly1305 (constant-time in software, for CPUs without AES instructions).
    ChaCha20Poly1305,
}

impl Cipher {
    /// Header identifier.
    pub fn id(self) -> u8 {
        match self {
            Cipher::Aes256Gcm => 1,
            Cipher::ChaCha20Poly1305 => 2,
        }
    }

    /// Parses a header identifier.
    pub fn from_id(id: u8) -> Result<Self> {
        match id {
            1 => Ok(Cipher::Aes256Gcm),
            2 => Ok(Cipher::ChaCha20Poly1305),
            _ => Err(Error::InvalidHeader(format!("unknown cipher id {id}"))),
        }
    }

    /// The name used on the command line.
    pub fn name(self) -> &'static str {
        match self {
            Cipher::Aes256Gcm => "aes-256-gcm",
            Cipher::ChaCha20Poly1305 => "chacha20-poly1305",
        }
    }
}

/// The name as the command line spells it; [`std::str::FromStr`] reads it back.
impl std::fmt::Display for Cipher {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.write_str(self.name())
    }
}

impl std::str::FromStr for Cipher {
    type Err = Error;
    fn from_str(s: &str) -> Result<Self> {
        match s.to_ascii_lowercase().as_str() {
            "aes-256-gcm" | "aes256gcm" | "aes" => Ok(Cipher::Aes256Gcm),
            "chacha20-poly1305" | "chacha20poly1305" | "chacha" => Ok(Cipher::ChaCha20Poly1305),
            _ => Err(Error::InvalidOption(format!(
                "unknown cipher '{s}': use aes-256-gcm or chacha20-poly1305"
            ))),
        }
    }
}

/// A keyed payload cipher; one per file, shared by all workers (sealing takes `&self`).
pub(crate) struct PayloadCipher(LessSafeKey);

impl PayloadCipher {
    pub(crate) fn new(cipher: Cipher, key: &[u8; 32]) -> Self {
        let alg = match cipher {
            Cipher::Aes256Gcm => &AES_256_GCM,
            Cipher::ChaCha20Poly1305 => &CHACHA20_POLY1305,
        };
        // Only a key of the wrong length fails; both algorithms take exactly 32 bytes.
        let key = UnboundKey::new(alg, key).expect("both payload ciphers take 32-byte keys");
        PayloadCipher(LessSafeKey::new(key))
    }

    /// Encrypts `buf` in place and returns the tag.
    pub(crate) fn seal(
        &self,
        nonce: &[u8; NONCE_LEN],
        aad: &[u8],
        buf: &mut [u8],
    ) -> [u8; TAG_LEN] {
        let tag = self
            .0
            .seal_in_place_separate_tag(Nonce::assume_unique_for_key(*nonce), Aad::from(aad), buf)
            // Both ciphers only fail for messages over 64 GiB (or 256 GiB); frames are at most
            // 16 MiB and a few bytes.
            .expect("frame bodies are far below the AEAD message limit");
        let mut out = [0u8; TAG_LEN];
        out.copy_from_slice(tag.as_ref());
        out
    }

    /// Checks the tag at the end of `sealed` (ciphertext || tag) and decrypts the ciphertext in
    /// place; returns the plaintext length. On failure `sealed` is left unspecified and must not
    /// be released.
    pub(crate) fn open(
        &self,
        nonce: &[u8; NONCE_LEN],
        aad: &[u8],
        sealed: &mut [u8],
    ) -> std::result::Result<usize, ()> {
        if sealed.len() < TAG_LEN {
            return Err(());
        }
        self.0
            .open_in_place(Nonce::assume_unique_for_key(*nonce), Aad::from(aad), sealed)
            .map(|plain| plain.len())
            .map_err(|_| ())
    }
}

impl PayloadCipher {
    /// Checks the tag at the end of `sealed` (ciphertext || tag) and decrypts the ciphertext
    /// into `out` (at least as long); returns the plaintext length. `sealed` is left as it was,
    /// so that it can be tried under another nonce; on failure `out` is unspecified.
    pub(crate) fn open_to(
        &self,
        nonce: &[u8; NONCE_LEN],
        aad: &[u8],
        sealed: &[u8],
        out: &mut [u8],
    ) -> std::result::Result<usize, ()> {
        let m = sealed.len().checked_sub(TAG_LEN).ok_or(())?;
        let (ct, tag) = sealed.split_at(m);
        let out = out.get_mut(..m).ok_or(())?;
        self.0
            .open_separate_gather(
                Nonce::assume_unique_for_key(*nonce),
                Aad::from(aad),
                ct,
                tag,
                out,
            )
            .map(|()| m)
            .map_err(|_| ())
    }
}

/// `stream_nonce(i, last)`: `i` as 11 big-endian bytes, then `01` for the last frame, else `00`.
pub(crate) fn stream_nonce(i: u64, last: bool) -> [u8; NONCE_LEN] {
    let mut n = [0u8; NONCE_LEN];
    n[3..11].copy_from_slice(&i.to_be_bytes());
    n[11] = u8::from(last);
    n
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn nonce_layout_matches_format_md() {
        assert_eq!(stream_nonce(0, false), [0; 12]);
        assert_eq!(
            stream_nonce(0x0102, true),
            [0, 0, 0, 0, 0, 0, 0, 0, 0, 1, 2, 1]
        );
        assert_eq!(stream_nonce(u64::MAX, false)[3..11], [0xff; 8]);
    }

    #[test]
    fn seal_then_open_each_cipher_and_reject_changes() {
        for cipher in [Cipher::Aes256Gcm, Cipher::ChaCha20Poly1305] {
            let c = PayloadCipher::new(cipher, &[7u8; 32]);
            let mut buf = b"hello frame".to_vec();
            let tag = c.seal(&stream_nonce(3, false), b"aad", &mut buf);
            assert_ne!(&buf, b"hello frame");
            buf.extend_from_slice(&tag);
            for (nonce, aad) in [
                (stream_nonce(4, false), &b"aad"[..]),
                (stream_nonce(3, true), b"aad"),
                (stream_nonce(3, false), b"aaD"),
            ] {
                assert!(c.open(&nonce, aad, &mut buf.clone()).is_err());
            }
            let mut short = buf[..TAG_LEN - 1].to_vec();
            assert!(c.open(&stream_nonce(3, false), b"aad", &mut short).is_err());
            let n = c.open(&stream_nonce(3, false), b"aad", &mut buf).unwrap();
            assert_eq!(&buf[..n], b"hello frame");
            // An empty message is a tag alone, and opens to nothing.
            let mut empty = Vec::new();
            let tag = c.seal(&stream_nonce(0, true), b"", &mut empty);
            let mut sealed = tag.to_vec();
            assert_eq!(c.open(&stream_nonce(0, true), b"", &mut sealed), Ok(0));
        }
    }

    #[test]
    fn names_parse_back_and_aliases_are_accepted() {
        for (cipher, name, alias) in [
            (Cipher::Aes256Gcm, "aes-256-gcm", "aes"),
            (Cipher::ChaCha20Poly1305, "chacha20-poly1305", "chacha"),
        ] {
            assert_eq!(cipher.name(), name);
            assert_eq!(cipher.to_string(), name);
            assert_eq!(name.parse::<Cipher>().unwrap(), cipher);
            assert_eq!(alias.parse::<Cipher>().unwrap(), cipher);
            assert_eq!(name.to_uppercase().parse::<Cipher>().unwrap(), cipher);
            assert_eq!(Cipher::from_id(cipher.id()).unwrap(), cipher);
        }
        assert!("aes-128-gcm".parse::<Cipher>().is_err());
    }
}
