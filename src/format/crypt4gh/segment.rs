//! Data segments (docs/FORMAT.md §13.4; spec "Segmenting the input", "chacha20_ietf_poly1305
//! Decryption"; ref `lib.py` `decrypt_block`, `sodium.c`): each is `nonce (12) ‖ ciphertext ‖ MAC
//! (16)`, ChaCha20-Poly1305 with empty AAD under a data key, at most 65,536 plaintext bytes.
//! Opening and sealing one segment are pure: no state carries from one segment to the next, so
//! any worker can take any segment.

use rand_core::{CryptoRng, RngCore};
use zeroize::Zeroizing;

use super::{MAX_DATA_KEYS, SEALED_SEGMENT_LEN, SEGMENT_LEN, SEGMENT_OVERHEAD};
use crate::crypto::aead::{Cipher, PayloadCipher, NONCE_LEN, TAG_LEN};
use crate::error::{Error, Result};

/// A data key, `K_data`. Wiped on drop.
#[derive(Clone)]
pub struct DataKey(Zeroizing<[u8; 32]>);

impl DataKey {
    /// A fresh data key from `rng` (one per file).
    pub fn generate(rng: &mut (impl RngCore + CryptoRng + ?Sized)) -> DataKey {
        let mut k = Zeroizing::new([0u8; 32]);
        rng.fill_bytes(k.as_mut());
        DataKey(k)
    }

    /// The key `bytes`.
    pub fn from_bytes(bytes: [u8; 32]) -> DataKey {
        DataKey(Zeroizing::new(bytes))
    }

    /// The key's bytes, as a data-key packet carries them.
    pub fn expose(&self) -> &[u8; 32] {
        &self.0
    }
}

impl std::fmt::Debug for DataKey {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.write_str("DataKey(..)")
    }
}

/// Opens segments with the reader's data keys, tried in header order on every segment.
pub struct SegmentOpener {
    ciphers: Vec<PayloadCipher>,
}

impl SegmentOpener {
    /// An opener for `keys` (the data keys the header gave, in header order; byte-equal keys are
    /// tried once). Refuses none, or more than [`MAX_DATA_KEYS`] distinct keys.
    pub fn new(keys: &[DataKey]) -> Result<SegmentOpener> {
        let mut distinct: Vec<&DataKey> = Vec::new();
        for k in keys {
            if !distinct.iter().any(|d| d.expose() == k.expose()) {
                distinct.push(k);
            }
        }
        if distinct.is_empty() {
            return Err(Error::InvalidHeader(
                "the crypt4gh header gave this reader no data key".into(),
            ));
        }
        if distinct.len() > MAX_DATA_KEYS {
            return Err(Error::Limit(format!(
                "the crypt4gh header holds {} data keys for this reader, more than the \
                 {MAX_DATA_KEYS} zseal accepts",
                distinct.len()
            )));
        }
        let ciphers = distinct
            .iter()
            .map(|k| PayloadCipher::new(Cipher::ChaCha20Poly1305, k.expose()))
            .collect();
        Ok(SegmentOpener { ciphers })
    }

    /// Opens segment `index` (its stored bytes `sealed`) into `out`, which must hold at least
    /// `sealed.len() − 28` bytes; returns the plaintext length. Refuses a piece of 28 bytes or
    /// fewer (a file cut inside a segment) and a segment no data key opens. On failure `out` is
    /// unspecified and must not be released.
    pub fn open(&self, index: u64, sealed: &[u8], out: &mut [u8]) -> Result<usize> {
        check_sealed_len(index, sealed.len())?;
        let (nonce, body) = sealed.split_at(NONCE_LEN);
        let nonce: [u8; NONCE_LEN] = nonce.try_into().expect("split at NONCE_LEN");
        let plain_len = body.len() - TAG_LEN;
        if out.len() < plain_len {
            return Err(Error::Bug(format!(
                "crypt4gh segment {index}: output buffer of {} bytes for {plain_len}",
                out.len()
            )));
        }
        self.ciphers
            .iter()
            .find_map(|c| c.open_to(&nonce, &[], body, out).ok())
            .ok_or_else(|| {
                Error::Damaged(format!(
                    "crypt4gh segment {index} failed authentication under every data key the \
                     header gave: it is damaged, was tampered with, or needs a key of another \
                     reader; fetch the file again or restore it from a copy"
                ))
            })
    }
}

/// A segment's stored length must be 29 to 65,564 bytes.
fn check_sealed_len(index: u64, len: usize) -> Result<()> {
    if len <= SEGMENT_OVERHEAD {
        return Err(Error::Truncated(format!(
            "the crypt4gh data ends {len} bytes into segment {index}, inside its nonce and MAC \
             (cut inside a segment)"
        )));
    }
    if len > SEALED_SEGMENT_LEN {
        return Err(Error::Bug(format!(
            "crypt4gh segment {index} given as {len} bytes, more than a segment"
        )));
    }
    Ok(())
}

/// Seals segments under one data key.
pub struct SegmentSealer {
    cipher: PayloadCipher,
}

impl SegmentSealer {
    /// A sealer for `key`.
    pub fn new(key: &DataKey) -> SegmentSealer {
        SegmentSealer {
            cipher: PayloadCipher::new(Cipher::ChaCha20Poly1305, key.expose()),
        }
    }

    /// Appends the stored form of the segment `plain` (1 to 65,536 bytes) under `nonce` to
    /// `out`: `nonce ‖ ciphertext ‖ MAC`. Every segment under one key needs its own nonce
    /// ([`SegmentSealer::seal_random`] draws one).
    pub fn seal(&self, nonce: [u8; NONCE_LEN], plain: &[u8], out: &mut Vec<u8>) -> Result<()> {
        if plain.is_empty() || plain.len() > SEGMENT_LEN {
            return Err(Error::Bug(format!(
                "a crypt4gh segment of {} bytes (1 to {SEGMENT_LEN})",
                plain.len()
            )));
        }
        out.extend_from_slice(&nonce);
        let start = out.len();
        out.extend_from_slice(plain);
        let tag = self.cipher.seal(&nonce, &[], &mut out[start..]);
        out.extend_from_slice(&tag);
        Ok(())
    }

    /// [`SegmentSealer::seal`] under a random nonce from `rng` (the reference's choice).
    pub fn seal_random(
        &self,
        plain: &[u8],
        out: &mut Vec<u8>,
        rng: &mut (impl RngCore + CryptoRng + ?Sized),
    ) -> Result<()> {
        let mut nonce = [0u8; NONCE_LEN];
        rng.fill_bytes(&mut nonce);
        self.seal(nonce, plain, out)
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn sealed(key: &DataKey, plain: &[u8]) -> Vec<u8> {
        let mut out = Vec::new();
        SegmentSealer::new(key)
            .seal([3; NONCE_LEN], plain, &mut out)
            .unwrap();
        out
    }

    #[test]
    fn segments_open_under_any_of_the_keys_and_flipped_bytes_are_refused() {
        let (a, b) = (DataKey::from_bytes([1; 32]), DataKey::from_bytes([2; 32]));
        let plain: Vec<u8> = (0..SEGMENT_LEN).map(|i| (i % 251) as u8).collect();
        let seg = sealed(&b, &plain);
        assert_eq!(seg.len(), SEALED_SEGMENT_LEN);
        let opener = SegmentOpener::new(&[a.clone(), a.clone(), b]).unwrap();
        let mut out = vec![0u8; SEGMENT_LEN];
        assert_eq!(opener.open(5, &seg, &mut out).unwrap(), SEGMENT_LEN);
        assert_eq!(out, plain);
        for at in [0, 12, seg.len() / 2, seg.len() - 1] {
            let mut bad = seg.clone();
            bad[at] ^= 1;
            let e = opener.open(5, &bad, &mut out).unwrap_err().to_string();
            assert!(e.contains("segment 5 failed authentication"), "{e}");
        }
        let only_a = SegmentOpener::new(&[a]).unwrap();
        assert!(only_a.open(0, &seg, &mut out).is_err());
    }

    #[test]
    fn a_piece_of_28_bytes_or_fewer_is_a_cut_and_one_byte_more_is_a_segment() {
        let key = DataKey::from_bytes([9; 32]);
        let seg = sealed(&key, b"x");
        assert_eq!(seg.len(), 29);
        let opener = SegmentOpener::new(&[key]).unwrap();
        let mut out = [0u8; 1];
        assert_eq!(opener.open(0, &seg, &mut out).unwrap(), 1);
        for len in [0, 1, 28] {
            let e = opener.open(2, &seg[..len], &mut out).unwrap_err();
            assert_eq!(e.kind(), crate::ErrorKind::Truncated, "{e}");
        }
    }

    #[test]
    fn sealing_refuses_empty_and_oversized_segments_and_openers_need_a_key() {
        let s = SegmentSealer::new(&DataKey::from_bytes([0; 32]));
        assert!(s.seal([0; 12], &[], &mut Vec::new()).is_err());
        assert!(s
            .seal([0; 12], &vec![0; SEGMENT_LEN + 1], &mut Vec::new())
            .is_err());
        assert!(SegmentOpener::new(&[]).is_err());
        let many: Vec<DataKey> = (0..=MAX_DATA_KEYS as u8)
            .map(|i| DataKey::from_bytes([i; 32]))
            .collect();
        assert!(SegmentOpener::new(&many).is_err());
        assert!(SegmentOpener::new(&many[..MAX_DATA_KEYS]).is_ok());
    }
}
