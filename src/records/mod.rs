//! Sealed records (docs/FORMAT.md §9): small values sealed one by one under a long-lived
//! [`RecordKey`], each opened alone, compressed only when that makes it smaller, optionally with a
//! trained zstd [`Dictionary`].
//!
//! ```
//! use zseal::records::{Opener, RecordKey, Sealer, SealerOptions};
//! let key = RecordKey::generate()?;
//! let mut sealer = Sealer::new(&key, SealerOptions::default())?;
//! let sealed = sealer.seal(br#"{"user": 42, "name": "Ada"}"#, b"user:42")?;
//! let mut opener = Opener::new(&key, &[])?;
//! assert_eq!(opener.open(&sealed, b"user:42")?, br#"{"user": 42, "name": "Ada"}"#);
//! assert!(opener.open(&sealed, b"user:43").is_err()); // moved under another name
//! # Ok::<(), zseal::Error>(())
//! ```
//!
//! A [`Sealer`] and an [`Opener`] keep compression contexts between calls, so they take `&mut
//! self`; use one per thread. Neither keeps random bytes between calls (§9.2): a process that
//! forks with a sealer cannot repeat a nonce through it.

use std::io::Read;

use aws_lc_rs::aead::{Aad, LessSafeKey, Nonce, UnboundKey, AES_256_GCM_SIV};
use chacha20poly1305::aead::{AeadInPlace, KeyInit};
use chacha20poly1305::XChaCha20Poly1305;
use rand_core::{OsRng, RngCore};
use zeroize::Zeroizing;
use zstd::zstd_safe::{self, CCtx};

use crate::codec::Codec;
use crate::error::{Error, Result};
use crate::{Identity, Recipient};

mod open;
mod seal;

pub use open::Opener;
pub use seal::{Sealer, SealerOptions};

/// The largest record (plaintext) a sealed record holds: 16 MiB (FORMAT.md §9.1).
pub const MAX_RECORD_LEN: usize = 1 << 24;
/// The format version byte.
pub const VERSION: u8 = 1;
/// Length of the authentication tag.
pub const TAG_LEN: usize = 16;
/// Length of a record key.
pub const KEY_LEN: usize = 32;

const CODEC_STORED: u8 = 0;
const CODEC_ZSTD: u8 = 1;
const CODEC_LZ4: u8 = 2;
const FLAG_DICT: u8 = 1 << 2;
const FLAG_XCHACHA: u8 = 1 << 3;
const DICT_MAGIC: [u8; 4] = 0xEC30A437u32.to_le_bytes();
const ZSTD_MAGIC: [u8; 4] = 0xFD2FB528u32.to_le_bytes();
const KEY_TEXT_PREFIX: &str = "zseal-record-key-v1 ";
/// Nonces drawn per `getrandom` call in [`Sealer::seal_many`].
const NONCE_BATCH: usize = 256;

/// The AEAD of a sealed record (FORMAT.md §9.2, with the measurements behind the default).
#[derive(Clone, Copy, Debug, Default, PartialEq, Eq)]
#[non_exhaustive]
pub enum RecordCipher {
    /// AES-256-GCM-SIV (RFC 8452) with 96-bit random nonces: the default. Hardware AES; a
    /// repeated nonce reveals only that two records were identical.
    #[default]
    Aes256GcmSiv,
    /// XChaCha20-Poly1305 with 192-bit random nonces: constant time without AES instructions and
    /// no per-key limit to think about; 12 bytes more per record.
    XChaCha20Poly1305,
}

impl RecordCipher {
    /// The name used by the command line, the bindings and the key derivation.
    pub fn name(self) -> &'static str {
        match self {
            RecordCipher::Aes256GcmSiv => "aes-256-gcm-siv",
            RecordCipher::XChaCha20Poly1305 => "xchacha20-poly1305",
        }
    }

    /// Length of its nonce.
    pub fn nonce_len(self) -> usize {
        match self {
            RecordCipher::Aes256GcmSiv => 12,
            RecordCipher::XChaCha20Poly1305 => 24,
        }
    }

    /// Bytes a record grows by when stored raw: header, nonce and tag (4 more with a dictionary).
    pub fn overhead(self) -> usize {
        2 + self.nonce_len() + TAG_LEN
    }
}

impl std::fmt::Display for RecordCipher {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.write_str(self.name())
    }
}

impl std::str::FromStr for RecordCipher {
    type Err = Error;
    fn from_str(s: &str) -> Result<Self> {
        match s.to_ascii_lowercase().as_str() {
            "aes-256-gcm-siv" | "aes256gcmsiv" | "aes-gcm-siv" | "aes" => {
                Ok(RecordCipher::Aes256GcmSiv)
            }
            "xchacha20-poly1305" | "xchacha20poly1305" | "xchacha" => {
                Ok(RecordCipher::XChaCha20Poly1305)
            }
            _ => Err(Error::InvalidOption(format!(
                "unknown record cipher '{s}': use aes-256-gcm-siv or xchacha20-poly1305"
            ))),
        }
    }
}

/// A record key: 32 secret bytes, wiped on drop. Share it as a zseal container
/// ([`RecordKey::to_container`]), so recipients and passphrases work for it.
#[derive(Clone)]
pub struct RecordKey(Zeroizing<[u8; KEY_LEN]>);

impl std::fmt::Debug for RecordKey {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.write_str("RecordKey(..)")
    }
}

impl RecordKey {
    /// A fresh key from the operating system's random number generator.
    pub fn generate() -> Result<Self> {
        let mut k = Zeroizing::new([0u8; KEY_LEN]);
        OsRng
            .try_fill_bytes(&mut k[..])
            .map_err(|e| Error::Random(e.to_string()))?;
        Ok(RecordKey(k))
    }

    /// A key from its raw bytes (for keys kept in a key management system).
    pub fn from_bytes(bytes: [u8; KEY_LEN]) -> Self {
        RecordKey(Zeroizing::new(bytes))
    }

    /// The raw key bytes.
    pub fn expose(&self) -> &[u8; KEY_LEN] {
        &self.0
    }

    /// The 85-byte text form of FORMAT.md §9.5: `zseal-record-key-v1 <64 hex digits>\n`.
    pub fn to_text(&self) -> Zeroizing<String> {
        let mut s = Zeroizing::new(String::with_capacity(85));
        s.push_str(KEY_TEXT_PREFIX);
        for b in self.0.iter() {
            s.push(char::from(b"0123456789abcdef"[usize::from(b >> 4)]));
            s.push(char::from(b"0123456789abcdef"[usize::from(b & 15)]));
        }
        s.push('\n');
        s
    }

    /// Reads the text form back; anything else is refused.
    pub fn from_text(text: &[u8]) -> Result<Self> {
        let bad = || {
            Error::InvalidOption(
                "not a zseal record key (expected the 85-byte text \"zseal-record-key-v1 <64 hex \
                 digits>\\n\" that `keygen --record-key` writes)"
                    .into(),
            )
        };
        let rest = text
            .strip_prefix(KEY_TEXT_PREFIX.as_bytes())
            .and_then(|r| r.strip_suffix(b"\n"))
            .ok_or_else(bad)?;
        if rest.len() != 2 * KEY_LEN {
            return Err(bad());
        }
        let digit = |c: u8| match c {
            b'0'..=b'9' => Some(c - b'0'),
            b'a'..=b'f' => Some(c - b'a' + 10),
            _ => None,
        };
        let mut k = Zeroizing::new([0u8; KEY_LEN]);
        for (i, pair) in rest.chunks_exact(2).enumerate() {
            k[i] = (digit(pair[0]).ok_or_else(bad)? << 4) | digit(pair[1]).ok_or_else(bad)?;
        }
        Ok(RecordKey(k))
    }

    /// The key as a zseal container for `recipients` (FORMAT.md §9.5).
    pub fn to_container(&self, recipients: &[&dyn Recipient]) -> Result<Vec<u8>> {
        let opts = crate::EncryptOptions::default().codec(Codec::None);
        crate::encrypt_to_vec(self.to_text().as_bytes(), recipients, &opts)
    }

    /// Opens a container made by [`RecordKey::to_container`] (or by `zseal keygen --record-key`).
    pub fn from_container(container: impl Read, identities: &[&dyn Identity]) -> Result<Self> {
        let dec = crate::Decryptor::new(container, identities, &crate::DecryptOptions::default())?;
        Self::from_decryptor(dec)
    }

    /// Reads the key from an unlocked key container (for front ends that unlock it their own
    /// way: a [`crate::Decryptor`], or a [`crate::Reader`] of a container), verifying the whole
    /// container before the key is returned.
    pub fn from_decryptor<S: crate::ChunkSource>(mut dec: crate::ChunkReader<S>) -> Result<Self> {
        // The text is 85 bytes; reading at most one more tells a longer plaintext apart.
        let mut text = Zeroizing::new(Vec::with_capacity(86));
        (&mut dec).take(86).read_to_end(&mut text)?;
        // The whole container is verified before the key is used; whatever follows the text is
        // not kept (a wrong, large file costs time, not memory).
        dec.copy_to(&mut std::io::sink())?;
        Self::from_text(&text)
    }

    fn aead(&self, cipher: RecordCipher) -> Aead {
        let key = crate::crypto::hkdf_32(
            &[],
            &self.0[..],
            format!("zseal v1 record {}", cipher.name()).as_bytes(),
        );
        match cipher {
            RecordCipher::Aes256GcmSiv => Aead::Siv(LessSafeKey::new(
                UnboundKey::new(&AES_256_GCM_SIV, &key.0)
                    .expect("AES-256-GCM-SIV takes a 32-byte key"),
            )),
            RecordCipher::XChaCha20Poly1305 => {
                Aead::XChaCha(Box::new(XChaCha20Poly1305::new(&key.0.into())))
            }
        }
    }
}

enum Aead {
    Siv(LessSafeKey),
    XChaCha(Box<XChaCha20Poly1305>),
}

impl Aead {
    fn seal(&self, nonce: &[u8], aad: &[u8], buf: &mut [u8]) -> [u8; TAG_LEN] {
        let mut out = [0u8; TAG_LEN];
        match self {
            Aead::Siv(k) => {
                let n = Nonce::try_assume_unique_for_key(nonce).expect("a 12-byte nonce");
                let tag = k
                    .seal_in_place_separate_tag(n, Aad::from(aad), buf)
                    .expect("records are far below the AEAD's message limit");
                out.copy_from_slice(tag.as_ref());
            }
            Aead::XChaCha(k) => {
                let tag = k
                    .encrypt_in_place_detached(nonce.into(), aad, buf)
                    .expect("records are far below the AEAD's message limit");
                out.copy_from_slice(&tag);
            }
        }
        out
    }

    /// Opens `sealed` (ciphertext || tag) in place; returns the plaintext length.
    fn open(&self, nonce: &[u8], aad: &[u8], sealed: &mut [u8]) -> Result<usize> {
        let len = sealed.len().checked_sub(TAG_LEN).ok_or(Error::RecordAuth)?;
        match self {
            Aead::Siv(k) => {
                let n = Nonce::try_assume_unique_for_key(nonce).map_err(|_| Error::RecordAuth)?;
                k.open_in_place(n, Aad::from(aad), sealed)
                    .map_err(|_| Error::RecordAuth)?;
            }
            Aead::XChaCha(k) => {
                let (body, tag) = sealed.split_at_mut(len);
                k.decrypt_in_place_detached(nonce.into(), aad, body, (&*tag).into())
                    .map_err(|_| Error::RecordAuth)?;
            }
        }
        Ok(len)
    }
}

/// A zstd dictionary (FORMAT.md §9.4): RFC 8878 §5 format with a nonzero id, as `zstd --train`
/// and [`Dictionary::train`] make it.
pub struct Dictionary {
    bytes: Vec<u8>,
    id: u32,
    hash: [u8; 32],
}

impl std::fmt::Debug for Dictionary {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        write!(f, "Dictionary(id {}, {} bytes)", self.id, self.bytes.len())
    }
}

impl Dictionary {
    /// Checks and wraps a dictionary file's bytes.
    pub fn from_bytes(bytes: Vec<u8>) -> Result<Self> {
        if !bytes.starts_with(&DICT_MAGIC) {
            return Err(Error::InvalidOption(
                "not a zstd dictionary (it does not start with the dictionary magic; raw-content \
                 dictionaries have no id and are not accepted): train one from sample records"
                    .into(),
            ));
        }
        let id = zstd_safe::get_dict_id_from_dict(&bytes)
            .ok_or_else(|| {
                Error::InvalidOption(
                    "the zstd dictionary has id 0, which records cannot name".into(),
                )
            })?
            .get();
        // Load it once, so a damaged dictionary fails here and not at the first record.
        let mut c = CCtx::create();
        c.load_dictionary(&bytes).map_err(|code| {
            Error::InvalidOption(format!(
                "the zstd dictionary is damaged: {}",
                zstd_safe::get_error_name(code)
            ))
        })?;
        let hash = *blake3::hash(&bytes).as_bytes();
        Ok(Dictionary { bytes, id, hash })
    }

    /// Trains a dictionary of at most `max_size` bytes on `samples` (zstd's trainer; each sample
    /// one record). zstd advises about a hundred times more sample bytes than `max_size`.
    pub fn train<S: AsRef<[u8]>>(samples: &[S], max_size: usize) -> Result<Self> {
        let total: usize = samples.iter().map(|s| s.as_ref().len()).sum();
        if samples.len() < 8 || total < 8 * 1024 {
            return Err(Error::InvalidOption(format!(
                "too few samples to train a dictionary ({} samples, {total} bytes): give at least \
                 a few hundred records, ideally about 100 times the dictionary size",
                samples.len()
            )));
        }
        let bytes = zstd::dict::from_samples(samples, max_size).map_err(|e| {
            Error::InvalidOption(format!(
                "zstd could not train a dictionary from {} samples ({total} bytes): {e}; give \
                 more or more varied samples, or a smaller dictionary size",
                samples.len()
            ))
        })?;
        Dictionary::from_bytes(bytes)
    }

    /// Its id (from the dictionary header).
    pub fn id(&self) -> u32 {
        self.id
    }

    /// The dictionary file's bytes.
    pub fn as_bytes(&self) -> &[u8] {
        &self.bytes
    }
}

fn zstd_err(code: usize) -> Error {
    Error::Codec(zstd_safe::get_error_name(code).to_string())
}

fn check_contexts<C>(records: usize, contexts: Option<&[C]>) -> Result<()> {
    match contexts {
        Some(c) if c.len() != records => Err(Error::InvalidOption(format!(
            "{} contexts for {records} records: give one per record, or none",
            c.len()
        ))),
        _ => Ok(()),
    }
}

fn context_at<C: AsRef<[u8]>>(contexts: Option<&[C]>, i: usize) -> &[u8] {
    contexts.and_then(|c| c.get(i)).map_or(&[], |c| c.as_ref())
}

fn fill_random(buf: &mut [u8]) -> Result<()> {
    OsRng
        .try_fill_bytes(buf)
        .map_err(|e| Error::Random(e.to_string()))
}

/// What a sealed record's clear header says (no key needed).
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub struct RecordInfo {
    /// `Codec::None`, `Codec::Zstd(0)` (the level is not recorded) or `Codec::Lz4`.
    pub codec: Codec,
    /// The AEAD.
    pub cipher: RecordCipher,
    /// The dictionary id, when compressed with one.
    pub dictionary: Option<u32>,
    /// Header and nonce length: where the ciphertext starts.
    pub body_offset: usize,
}

/// Reads a sealed record's header (FORMAT.md §9), checking everything a reader must check before
/// decrypting.
pub fn inspect(sealed: &[u8]) -> Result<RecordInfo> {
    let not = |why: String| Error::NotRecord(why);
    let (&version, rest) = sealed
        .split_first()
        .ok_or_else(|| not("it is empty".into()))?;
    if version != VERSION {
        return Err(not(format!(
            "version byte {version}, where version 1 has 1"
        )));
    }
    let &flags = rest
        .first()
        .ok_or_else(|| not("it ends after 1 byte".into()))?;
    if flags & 0xf0 != 0 {
        return Err(not(format!("flags 0x{flags:02x} set reserved bits")));
    }
    let codec = match flags & 3 {
        CODEC_STORED => Codec::None,
        CODEC_ZSTD => Codec::Zstd(0),
        CODEC_LZ4 => Codec::Lz4,
        _ => return Err(not("codec 3 does not exist".into())),
    };
    let cipher = match flags & FLAG_XCHACHA {
        0 => RecordCipher::Aes256GcmSiv,
        _ => RecordCipher::XChaCha20Poly1305,
    };
    let mut at = 2;
    let dictionary = if flags & FLAG_DICT != 0 {
        if codec != Codec::Zstd(0) {
            return Err(not("a dictionary flag without zstd".into()));
        }
        let id = sealed
            .get(2..6)
            .map(|b| u32::from_le_bytes([b[0], b[1], b[2], b[3]]))
            .ok_or_else(|| not("it ends inside the dictionary id".into()))?;
        if id == 0 {
            return Err(not("dictionary id 0".into()));
        }
        at = 6;
        Some(id)
    } else {
        None
    };
    let body_offset = at + cipher.nonce_len();
    if sealed.len() < body_offset + TAG_LEN {
        return Err(not(format!(
            "{} bytes is shorter than its header, nonce and tag ({})",
            sealed.len(),
            body_offset + TAG_LEN
        )));
    }
    Ok(RecordInfo {
        codec,
        cipher,
        dictionary,
        body_offset,
    })
}

#[cfg(test)]
mod tests {
    use super::open::magicless_content_size;
    use super::*;

    fn key() -> RecordKey {
        RecordKey::from_bytes([9; 32])
    }

    #[test]
    fn the_text_form_round_trips_and_nothing_else_parses() {
        let k = RecordKey::generate().unwrap();
        let text = k.to_text();
        assert_eq!(text.len(), 85);
        assert_eq!(
            RecordKey::from_text(text.as_bytes()).unwrap().expose(),
            k.expose()
        );
        let t = text.as_bytes();
        for bad in [
            &t[..84],
            &t[1..],
            &[t, b"\n"].concat()[..],
            &t.to_ascii_uppercase()[..],
        ] {
            assert!(RecordKey::from_text(bad).is_err());
        }
    }

    #[test]
    fn content_size_comes_from_the_magicless_header() {
        let mut s = Sealer::new(&key(), SealerOptions::default()).unwrap();
        for len in [0usize, 1, 255, 256, 65_535, 65_536, 70_000] {
            let record = vec![b'a'; len];
            s.compress(&record).unwrap();
            assert!(!s.scratch.starts_with(&ZSTD_MAGIC));
            assert_eq!(magicless_content_size(&s.scratch), Ok(len), "{len}");
        }
    }

    #[test]
    fn reserved_header_values_are_refused_before_decryption() {
        let mut good = vec![1u8, 0];
        good.extend_from_slice(&[0; 12 + 16]);
        assert!(inspect(&good).is_ok());
        for (at, v) in [
            (0, 0u8),
            (0, 2),
            (1, 0x10),
            (1, 0x80),
            (1, 3),
            (1, 4),
            (1, 6),
        ] {
            let mut b = good.clone();
            b[at] = v;
            assert!(matches!(inspect(&b), Err(Error::NotRecord(_))), "{at} {v}");
        }
        assert!(inspect(&good[..good.len() - 1]).is_err());
    }
}
