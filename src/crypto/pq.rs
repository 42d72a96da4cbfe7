//! age's hybrid post-quantum recipient type (FORMAT.md §1.1, "Post-quantum recipients";
//! c2sp.org/age): `age1pq1…` recipients and `AGE-SECRET-KEY-PQ-1…` identities, whose stanza
//! `mlkem768x25519` seals the file key with HPKE over the X-Wing KEM (ML-KEM-768 + X25519). The
//! HPKE, the KEM and the AEAD are the `hpke` crate's; this module only encodes keys (Bech32) and
//! stanzas, as age 1.3 and typage do. Both are the `age` crate's traits, so they serve the zseal
//! container and age files alike.

use std::collections::HashSet;

use age_core::format::{FileKey, Stanza, FILE_KEY_BYTES};
use age_core::secrecy::ExposeSecret;
use base64::prelude::{Engine as _, BASE64_STANDARD_NO_PAD};
use bech32::{FromBase32, ToBase32, Variant};
use hpke::aead::ChaCha20Poly1305;
use hpke::kdf::HkdfSha256;
use hpke::kem::XWing;
use hpke::{Deserializable, Kem as _, OpModeR, OpModeS, Serializable};
use rand_core::RngCore;
use zeroize::Zeroizing;

use super::recipients::short;
use crate::error::{Error, Result};
use crate::format::age::base64_arg;

/// The stanza's tag.
pub const TAG: &str = "mlkem768x25519";
/// HPKE's `info` for a file key.
const INFO: &[u8] = b"age-encryption.org/mlkem768x25519";
/// Bech32 prefixes (HRPs) of a recipient and of an identity.
const RECIPIENT_HRP: &str = "age1pq";
const IDENTITY_HRP: &str = "age-secret-key-pq-";
/// How a recipient's text begins (the HRP and Bech32's separator `1`).
pub const RECIPIENT_PREFIX: &str = "age1pq1";
/// How an identity's text begins.
pub const IDENTITY_PREFIX: &str = "AGE-SECRET-KEY-PQ-1";
/// The label age gives post-quantum stanzas: only files whose every recipient has it.
pub const LABEL: &str = "postquantum";
/// An X-Wing public key, encapsulated key (enc) and private key (seed), in bytes.
const PUBLIC_LEN: usize = 1216;
const ENC_LEN: usize = 1120;
const SEED_LEN: usize = 32;

/// A post-quantum recipient, `age1pq1…`.
#[derive(Clone)]
pub struct PqRecipient {
    key: <XWing as hpke::Kem>::PublicKey,
}

impl PqRecipient {
    /// Parses `age1pq1…` (Bech32 of the 1,216-byte X-Wing public key); a cut string, a wrong
    /// checksum or another length is an error naming the string.
    pub fn parse(s: &str) -> Result<PqRecipient> {
        let bytes = decode(s, RECIPIENT_HRP, PUBLIC_LEN, "post-quantum recipient")?;
        let key = <XWing as hpke::Kem>::PublicKey::from_bytes(&bytes).map_err(|e| {
            Error::InvalidOption(format!(
                "invalid post-quantum recipient '{}': {e}",
                short(s)
            ))
        })?;
        Ok(PqRecipient { key })
    }
}

impl std::fmt::Debug for PqRecipient {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        write!(f, "PqRecipient({})", short(&self.to_string()))
    }
}

impl std::fmt::Display for PqRecipient {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.write_str(&encode(RECIPIENT_HRP, &self.key.to_bytes()))
    }
}

impl age::Recipient for PqRecipient {
    fn wrap_file_key(
        &self,
        file_key: &FileKey,
    ) -> std::result::Result<(Vec<Stanza>, HashSet<String>), age::EncryptError> {
        let (enc, body) = hpke::single_shot_seal::<ChaCha20Poly1305, HkdfSha256, XWing>(
            &OpModeS::Base,
            &self.key,
            INFO,
            file_key.expose_secret(),
            b"",
        )
        .map_err(|e| age::EncryptError::Io(std::io::Error::other(format!("HPKE: {e}"))))?;
        let stanza = Stanza {
            tag: TAG.into(),
            args: vec![BASE64_STANDARD_NO_PAD.encode(enc.to_bytes())],
            body,
        };
        Ok((vec![stanza], HashSet::from([LABEL.to_string()])))
    }
}

/// A post-quantum identity, `AGE-SECRET-KEY-PQ-1…`: 32 secret bytes.
pub struct PqIdentity {
    key: <XWing as hpke::Kem>::PrivateKey,
}

impl PqIdentity {
    /// A new identity from `rng` (a CSPRNG).
    pub fn generate(rng: &mut impl RngCore) -> PqIdentity {
        let mut seed = Zeroizing::new([0u8; SEED_LEN]);
        rng.fill_bytes(&mut seed[..]);
        PqIdentity::from_seed(&seed[..])
    }

    fn from_seed(seed: &[u8]) -> PqIdentity {
        // A 32-byte seed is every X-Wing private key: this cannot fail.
        let key = <XWing as hpke::Kem>::PrivateKey::from_bytes(seed)
            .unwrap_or_else(|_| unreachable!("an X-Wing private key is any 32 bytes"));
        PqIdentity { key }
    }

    /// Parses `AGE-SECRET-KEY-PQ-1…`.
    pub fn parse(s: &str) -> Result<PqIdentity> {
        let seed = Zeroizing::new(decode(s, IDENTITY_HRP, SEED_LEN, "post-quantum identity")?);
        Ok(PqIdentity::from_seed(&seed))
    }

    /// The identity as an identity file holds it (uppercase Bech32).
    pub fn to_secret_string(&self) -> Zeroizing<String> {
        Zeroizing::new(encode(IDENTITY_HRP, &self.key.to_bytes()).to_uppercase())
    }

    /// Its recipient.
    pub fn to_public(&self) -> PqRecipient {
        PqRecipient {
            key: XWing::sk_to_pk(&self.key),
        }
    }
}

impl super::unwrap::OwnTag for PqIdentity {
    const TAG: &'static str = TAG;

    fn open_own(&self, stanza: &Stanza) -> std::result::Result<Option<FileKey>, age::DecryptError> {
        let invalid = || Err(age::DecryptError::InvalidHeader);
        let [enc] = &stanza.args[..] else {
            return invalid();
        };
        let Some(enc_bytes) = base64_arg(enc, ENC_LEN) else {
            return invalid();
        };
        if stanza.body.len() != FILE_KEY_BYTES + 16 {
            return invalid();
        }
        if low_order(&enc_bytes[ENC_LEN - 32..]) {
            // age's rule, which the X-Wing KEM does not check itself: an X25519 share whose
            // shared secret is all zeros (the identity or another low-order point) is invalid.
            return invalid();
        }
        let Ok(enc) = <XWing as hpke::Kem>::EncappedKey::from_bytes(&enc_bytes) else {
            return invalid();
        };
        // A stanza sealed to another key fails to open: it is not this identity's.
        let Ok(key) = hpke::single_shot_open::<ChaCha20Poly1305, HkdfSha256, XWing>(
            &OpModeR::Base,
            &self.key,
            &enc,
            INFO,
            &stanza.body,
            b"",
        ) else {
            return Ok(None);
        };
        let key = Zeroizing::new(key);
        let Ok(bytes) = <[u8; FILE_KEY_BYTES]>::try_from(&key[..]) else {
            return Ok(None);
        };
        Ok(Some(FileKey::new(Box::new(bytes))))
    }
}

super::unwrap::own_tag_identity!(PqIdentity);

/// True when `share`, an X25519 public key (u-coordinate), is of low order, so that every
/// shared secret with it is all zeros: X25519 with any clamped scalar (a multiple of the
/// cofactor 8) maps exactly those points to zero.
fn low_order(share: &[u8]) -> bool {
    let Ok(u) = <[u8; 32]>::try_from(share) else {
        return true;
    };
    x25519_dalek::x25519([0x5a; 32], u) == [0u8; 32]
}

/// Bech32 of `data` under `hrp`, without Bech32's 90-character limit (as age encodes them).
fn encode(hrp: &str, data: &[u8]) -> String {
    // The HRPs are constants of valid characters: this cannot fail.
    bech32::encode(hrp, data.to_base32(), Variant::Bech32)
        .unwrap_or_else(|_| unreachable!("a valid HRP"))
}

/// The `len` bytes of `s`, a Bech32 string under `hrp` (either case, not mixed).
fn decode(s: &str, hrp: &str, len: usize, what: &str) -> Result<Vec<u8>> {
    let bad = |why: &str| {
        Error::InvalidOption(format!(
            "invalid {what} '{}': {why} (was it cut, or mistyped?)",
            short(s.trim())
        ))
    };
    let (got, data, variant) = bech32::decode(s.trim()).map_err(|e| bad(&e.to_string()))?;
    if got != hrp || variant != Variant::Bech32 {
        return Err(bad(&format!("it does not start with {}1", hrp)));
    }
    let bytes = Vec::<u8>::from_base32(&data).map_err(|e| bad(&e.to_string()))?;
    if bytes.len() != len {
        return Err(bad(&format!("{} bytes, not {len}", bytes.len())));
    }
    Ok(bytes)
}

#[cfg(test)]
mod tests {
    use super::*;
    use age::{Identity as _, Recipient as _};

    /// A key pair round trips through its strings and wraps and unwraps a file key; another
    /// identity finds nothing; a cut recipient, a wrong checksum and a classic key are named.
    #[test]
    fn keys_round_trip_and_wrap() {
        let id = PqIdentity::generate(&mut rand_core::OsRng);
        let public = id.to_public().to_string();
        assert!(public.starts_with("age1pq1"), "{public}");
        let secret = id.to_secret_string();
        assert!(secret.starts_with("AGE-SECRET-KEY-PQ-1"));
        let again = PqIdentity::parse(&secret).unwrap();
        assert_eq!(again.to_public().to_string(), public);
        let r = PqRecipient::parse(&public).unwrap();
        let key = FileKey::new(Box::new([9u8; 16]));
        let (stanzas, labels) = r.wrap_file_key(&key).unwrap();
        assert!(labels.contains(LABEL));
        assert_eq!(stanzas[0].args[0].len(), 1494);
        assert_eq!(stanzas[0].body.len(), 32);
        let back = id.unwrap_stanza(&stanzas[0]).unwrap().unwrap();
        assert_eq!(back.expose_secret(), &[9u8; 16]);
        let other = PqIdentity::generate(&mut rand_core::OsRng);
        assert!(other.unwrap_stanza(&stanzas[0]).is_none());
        let cut = &public[..public.len() - 10];
        assert!(PqRecipient::parse(cut).is_err());
        let mut flipped = public.clone().into_bytes();
        let last = flipped.len() - 1;
        flipped[last] = if flipped[last] == b'q' { b'p' } else { b'q' };
        let e = PqRecipient::parse(std::str::from_utf8(&flipped).unwrap()).unwrap_err();
        assert!(e.to_string().contains("checksum"), "{e}");
    }
}
