//! Keys of other tools as crypt4gh keys (docs/FORMAT.md §13.7).
//!
//! - OpenSSH ed25519 keys, as the reference accepts them (`keys/ssh.py`), mapped to X25519 as
//!   libsodium maps them: a public key by `crypto_sign_ed25519_pk_to_curve25519` (the Edwards
//!   `y` to the Montgomery `u = (1 + y) / (1 − y)`, refusing points that are not canonical, of
//!   small order or outside the prime-order subgroup), a private key by
//!   `crypto_sign_ed25519_sk_to_curve25519` (the first half of SHA-512 of the seed, clamped).
//! - age X25519 keys: `age1…` and `AGE-SECRET-KEY-1…` are the Bech32 of the same 32-byte numbers
//!   crypt4gh uses, so they are taken as they are.

use bech32::FromBase32;
use curve25519_dalek::edwards::CompressedEdwardsY;
use sha2::{Digest, Sha512};
use zeroize::Zeroizing;

use super::{PublicKey, SecretKey, KEY_LEN};
use crate::crypto::recipients::KeyPassphrase;
use crate::error::{Error, Result};

const AGE_RECIPIENT_HRP: &str = "age";
const AGE_IDENTITY_HRP: &str = "age-secret-key-";

fn refuse(origin: &str, what: &str) -> Error {
    Error::InvalidOption(format!("{origin}: {what}"))
}

/// An Ed25519 public key mapped to X25519, or `None` for a key libsodium refuses.
pub fn ed25519_public_to_x25519(ed: &[u8; KEY_LEN]) -> Option<PublicKey> {
    let point = CompressedEdwardsY(*ed).decompress()?;
    let canonical = point.compress().to_bytes() == *ed;
    (canonical && !point.is_small_order() && point.is_torsion_free())
        .then(|| PublicKey(point.to_montgomery().to_bytes()))
}

/// The X25519 secret key of an Ed25519 seed (the first 32 bytes of an OpenSSH ed25519 key).
pub fn ed25519_seed_to_x25519(seed: &[u8; KEY_LEN]) -> SecretKey {
    let h = Zeroizing::new(Sha512::digest(seed));
    let mut k = Zeroizing::new([0u8; KEY_LEN]);
    k.copy_from_slice(&h[..KEY_LEN]);
    k[0] &= 248;
    k[31] &= 127;
    k[31] |= 64;
    SecretKey::from_bytes(*k)
}

/// An OpenSSH public key line (`ssh-ed25519 AAAA… [comment]`) as a crypt4gh recipient.
pub fn ssh_public_key(line: &str, origin: &str) -> Result<PublicKey> {
    let key = ssh_key::PublicKey::from_openssh(line.trim())
        .map_err(|e| refuse(origin, &format!("not an OpenSSH public key ({e})")))?;
    let ed = key.key_data().ed25519().ok_or_else(|| {
        refuse(
            origin,
            &format!(
                "a {} key: crypt4gh takes ssh-ed25519 keys only (as the reference does)",
                key.algorithm()
            ),
        )
    })?;
    ed25519_public_to_x25519(&ed.0).ok_or_else(|| {
        refuse(
            origin,
            "this ed25519 key is not a valid curve point (libsodium refuses it too)",
        )
    })
}

/// An OpenSSH ed25519 private key as a crypt4gh identity; a protected one asks `ask`.
pub fn ssh_secret_key(text: &str, origin: &str, ask: &impl KeyPassphrase) -> Result<SecretKey> {
    let key = ssh_key::PrivateKey::from_openssh(text)
        .map_err(|e| refuse(origin, &format!("not an OpenSSH private key ({e})")))?;
    if key.public_key().key_data().ed25519().is_none() {
        return Err(refuse(
            origin,
            &format!(
                "a {} key: crypt4gh takes ssh-ed25519 keys only (as the reference does)",
                key.algorithm()
            ),
        ));
    }
    let key = if key.is_encrypted() {
        unlock_ssh(key, origin, ask)?
    } else {
        key
    };
    let pair = key
        .key_data()
        .ed25519()
        .ok_or_else(|| refuse(origin, "the unlocked key is not an ed25519 key"))?;
    Ok(ed25519_seed_to_x25519(pair.private.as_ref()))
}

fn unlock_ssh(
    key: ssh_key::PrivateKey,
    origin: &str,
    ask: &impl KeyPassphrase,
) -> Result<ssh_key::PrivateKey> {
    if key.cipher().as_str() == "3des-cbc" {
        return Err(refuse(
            origin,
            "encrypted with 3des-cbc, which zseal does not read: re-encrypt it with \
             `ssh-keygen -p -Z aes256-ctr -f KEY`",
        ));
    }
    if let Some(advice) = ask.refusal() {
        return Err(refuse(
            origin,
            &format!("it is an OpenSSH key protected by a passphrase: {advice}"),
        ));
    }
    let pass = ask
        .passphrase(&format!("passphrase for the SSH key {origin}"))
        .map(Zeroizing::new)
        .ok_or_else(|| refuse(origin, "passphrase-protected, and no passphrase was given"))?;
    key.decrypt(pass.as_bytes())
        .map_err(|_| refuse(origin, "wrong passphrase"))
}

/// The 32 bytes of a Bech32 key with human-readable part `hrp`.
fn bech32_key(s: &str, hrp: &str) -> Option<Zeroizing<[u8; KEY_LEN]>> {
    let (got, data, variant) = bech32::decode(s).ok()?;
    if got != hrp || variant != bech32::Variant::Bech32 {
        return None;
    }
    let bytes = Zeroizing::new(Vec::<u8>::from_base32(&data).ok()?);
    let key: [u8; KEY_LEN] = bytes.as_slice().try_into().ok()?;
    Some(Zeroizing::new(key))
}

/// An age X25519 recipient (`age1…`) as a crypt4gh recipient: the same public key.
pub fn age_recipient(s: &str, origin: &str) -> Result<PublicKey> {
    let s = s.trim();
    if s.starts_with(crate::crypto::pq::RECIPIENT_PREFIX) {
        return Err(refuse(
            origin,
            "a post-quantum age recipient is not an X25519 key: crypt4gh cannot use it",
        ));
    }
    if crate::crypto::recipients::is_plugin_recipient(s) {
        return Err(refuse(
            origin,
            "an age plugin's recipient (age1NAME1…) is not an X25519 key: crypt4gh cannot use it",
        ));
    }
    bech32_key(s, AGE_RECIPIENT_HRP)
        .map(|k| PublicKey(*k))
        .ok_or_else(|| refuse(origin, "not a valid age1… X25519 recipient"))
}

/// The age X25519 identities (`AGE-SECRET-KEY-1…` lines, `#` comments) of an identity file.
pub fn age_identities(text: &str, origin: &str) -> Result<Vec<SecretKey>> {
    let mut out = Vec::new();
    for (n, line) in text.lines().enumerate().map(|(n, l)| (n + 1, l.trim())) {
        if line.is_empty() || line.starts_with('#') {
            continue;
        }
        if line.starts_with(crate::crypto::pq::IDENTITY_PREFIX) {
            return Err(refuse(
                origin,
                &format!("line {n}: a post-quantum age identity is not an X25519 key: crypt4gh cannot use it"),
            ));
        }
        let key = bech32_key(line, AGE_IDENTITY_HRP).ok_or_else(|| {
            refuse(
                origin,
                &format!(
                    "line {n}: not a crypt4gh key: give a crypt4gh private key, an OpenSSH \
                     ed25519 private key or AGE-SECRET-KEY-1… lines"
                ),
            )
        })?;
        out.push(SecretKey::from_bytes(*key));
    }
    if out.is_empty() {
        return Err(refuse(origin, "holds no key"));
    }
    Ok(out)
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::crypto::c4gh::tests::hex_arr;

    /// The RFC 8032 §7.1 test 1 key, its X25519 forms computed with libsodium
    /// (`crypto_sign_ed25519_{pk,sk}_to_curve25519`, through the reference's `crypt4gh.sodium`):
    /// the two maps agree with it and with each other.
    #[test]
    fn ed25519_maps_match_libsodium() {
        let seed = hex_arr("9d61b19deffd5a60ba844af492ec2cc44449c5697b326919703bac031cae7f60");
        let public = hex_arr("d75a980182b10ab7d54bfed3c964073a0ee172f3daa62325af021a68f707511a");
        let x_public = ed25519_public_to_x25519(&public).unwrap();
        let x_secret = ed25519_seed_to_x25519(&seed);
        assert_eq!(x_secret.public(), x_public);
        assert_eq!(
            *x_secret.expose(),
            hex_arr::<32>("307c83864f2833cb427a2ef1c00a013cfdff2768d980c0a3a520f006904de94f")
        );
        assert_eq!(
            x_public.0,
            hex_arr::<32>("d85e07ec22b0ad881537c2f44d662d1a143cf830c57aca4305d85c7a90f6b62e")
        );
    }

    #[test]
    fn ed25519_points_libsodium_refuses_are_refused() {
        // The identity (small order), a non-canonical y (p + 1), a y that is not on the curve.
        let mut identity = [0u8; 32];
        identity[0] = 1;
        let mut p_plus_1 = [0xff; 32];
        p_plus_1[0] = 0xee;
        p_plus_1[31] = 0x7f;
        let mut off_curve = [0u8; 32];
        off_curve[0] = 2;
        for bad in [identity, p_plus_1, off_curve] {
            assert!(ed25519_public_to_x25519(&bad).is_none());
        }
    }

    /// age's own encodings of one key pair read back as the same crypt4gh key pair.
    #[test]
    fn age_keys_are_the_same_numbers() {
        let (secret, public) = crate::crypto::recipients::generate();
        let ids = age_identities(&format!("# a comment\n{}\n", secret.as_str()), "f").unwrap();
        assert_eq!(ids.len(), 1);
        assert_eq!(ids[0].public(), age_recipient(&public, "r").unwrap());
        assert!(age_recipient("age1qqqq", "r").is_err());
        assert!(age_identities("# nothing\n", "f").is_err());
        let (pq_secret, pq_public) = crate::crypto::recipients::generate_pq();
        assert!(age_recipient(&pq_public, "r").is_err());
        assert!(age_identities(&pq_secret, "f").is_err());
    }
}
