//! Crypt4GH key files (docs/FORMAT.md §13.7; ref `keys/c4gh.py`): the public key is the base64 of
//! 32 bytes between PEM lines; the private key is `c4gh-v1`, then big-endian length-prefixed
//! strings (kdfname, kdfoptions, ciphername, private data, comment), the secret key sealed with
//! ChaCha20-Poly1305 under a key derived from the passphrase by scrypt, bcrypt_pbkdf or PBKDF2.

use base64::prelude::{Engine as _, BASE64_STANDARD};
use rand_core::{CryptoRng, RngCore};
use zeroize::Zeroizing;

use super::{PublicKey, SecretKey, KEY_LEN};
use crate::crypto::aead::{Cipher, PayloadCipher, NONCE_LEN, TAG_LEN};
use crate::crypto::recipients::KeyPassphrase;
use crate::error::{Error, Result};

/// First line of a crypt4gh public key file.
pub const PUBLIC_BEGIN: &str = "-----BEGIN CRYPT4GH PUBLIC KEY-----";
/// Last line of a crypt4gh public key file.
pub const PUBLIC_END: &str = "-----END CRYPT4GH PUBLIC KEY-----";
const PRIVATE_BEGIN: &str = "-----BEGIN CRYPT4GH PRIVATE KEY-----";
const PRIVATE_END: &str = "-----END CRYPT4GH PRIVATE KEY-----";
/// How a protected key's passphrase is asked for (`{KEY_PROMPT} FILE`): a front end that takes
/// key passphrases from elsewhere (the command line's `ZSEAL_PASSPHRASE`) knows the question.
pub const KEY_PROMPT: &str = "passphrase for the crypt4gh key";
/// Magic of the decoded private key.
const MAGIC: &[u8] = b"c4gh-v1";
/// Most bcrypt_pbkdf rounds read (the ref writes 100, OpenSSH 16).
pub const MAX_BCRYPT_ROUNDS: u32 = 1_000;
/// Most PBKDF2 iterations read (the ref would write 100,000).
pub const MAX_PBKDF2_ROUNDS: u32 = 10_000_000;
/// Length of the salt the writer draws (the ref's).
const SALT_LEN: usize = 16;

/// How a private key's secret is derived from its passphrase (the file's `kdfname`).
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum Kdf {
    /// scrypt, N = 2^14, r = 8, p = 1 (the stored rounds are ignored; the ref writes 0).
    Scrypt,
    /// OpenSSH's bcrypt_pbkdf with this many rounds.
    Bcrypt(u32),
    /// PBKDF2-HMAC-SHA-256 with this many iterations.
    Pbkdf2HmacSha256(u32),
}

impl Kdf {
    fn name(self) -> &'static str {
        match self {
            Kdf::Scrypt => "scrypt",
            Kdf::Bcrypt(_) => "bcrypt",
            Kdf::Pbkdf2HmacSha256(_) => "pbkdf2_hmac_sha256",
        }
    }

    fn rounds(self) -> u32 {
        match self {
            Kdf::Scrypt => 0,
            Kdf::Bcrypt(r) | Kdf::Pbkdf2HmacSha256(r) => r,
        }
    }

    /// The KDF named `name` with `rounds` from the file, refused when out of bounds.
    fn parse(name: &[u8], rounds: u32, origin: &str) -> Result<Kdf> {
        let bounded = |kdf: Kdf, max: u32| {
            if rounds == 0 || rounds > max {
                return Err(bad(
                    origin,
                    &format!("{} rounds {rounds} out of bounds (1 to {max})", kdf.name()),
                ));
            }
            Ok(kdf)
        };
        match name {
            b"scrypt" => Ok(Kdf::Scrypt),
            b"bcrypt" => bounded(Kdf::Bcrypt(rounds), MAX_BCRYPT_ROUNDS),
            b"pbkdf2_hmac_sha256" => bounded(Kdf::Pbkdf2HmacSha256(rounds), MAX_PBKDF2_ROUNDS),
            other => Err(bad(
                origin,
                &format!(
                    "unknown KDF '{}' (crypt4gh keys use scrypt, bcrypt or pbkdf2_hmac_sha256)",
                    String::from_utf8_lossy(other)
                ),
            )),
        }
    }

    /// The 32-byte key that seals the secret key.
    fn derive(self, passphrase: &[u8], salt: &[u8]) -> Result<Zeroizing<[u8; 32]>> {
        let mut out = Zeroizing::new([0u8; 32]);
        let failed = |e: &dyn std::fmt::Display| {
            Error::InvalidOption(format!("the {} key derivation failed: {e}", self.name()))
        };
        match self {
            Kdf::Scrypt => {
                let params = scrypt::Params::new(14, 8, 1, 32).map_err(|e| failed(&e))?;
                scrypt::scrypt(passphrase, salt, &params, out.as_mut()).map_err(|e| failed(&e))?
            }
            Kdf::Bcrypt(rounds) => {
                bcrypt_pbkdf::bcrypt_pbkdf(passphrase, salt, rounds, out.as_mut())
                    .map_err(|e| failed(&format!("{e:?} (an empty passphrase or salt)")))?
            }
            Kdf::Pbkdf2HmacSha256(rounds) => {
                pbkdf2::pbkdf2_hmac::<sha2::Sha256>(passphrase, salt, rounds, out.as_mut())
            }
        }
        Ok(out)
    }
}

fn bad(origin: &str, what: &str) -> Error {
    Error::InvalidOption(format!("{origin}: damaged crypt4gh private key: {what}"))
}

/// The base64 between a PEM block's first and last lines (blank lines and surrounding
/// whitespace ignored, as the ref strips them), after checking those lines with `begin`/`end`.
fn pem_body(
    text: &str,
    begin: impl Fn(&str) -> bool,
    end: impl Fn(&str) -> bool,
) -> Option<Zeroizing<Vec<u8>>> {
    let lines: Vec<&str> = text
        .lines()
        .map(str::trim)
        .filter(|l| !l.is_empty())
        .collect();
    let (first, rest) = lines.split_first()?;
    let (last, middle) = rest.split_last()?;
    if !begin(first) || !end(last) {
        return None;
    }
    let joined = Zeroizing::new(middle.concat());
    BASE64_STANDARD
        .decode(joined.as_bytes())
        .ok()
        .map(Zeroizing::new)
}

/// A crypt4gh public key file (`-----BEGIN CRYPT4GH PUBLIC KEY-----`, the base64 of 32 bytes).
pub fn parse_public_key(text: &str, origin: &str) -> Result<PublicKey> {
    let body = pem_body(text, |l| l == PUBLIC_BEGIN, |l| l == PUBLIC_END).ok_or_else(|| {
        Error::InvalidOption(format!(
            "{origin}: not a crypt4gh public key ({PUBLIC_BEGIN}, base64, {PUBLIC_END})"
        ))
    })?;
    let key: [u8; KEY_LEN] = body.as_slice().try_into().map_err(|_| {
        Error::InvalidOption(format!(
            "{origin}: a crypt4gh public key is 32 bytes, this one is {}",
            body.len()
        ))
    })?;
    Ok(PublicKey(key))
}

/// The text of a crypt4gh public key file, as `crypt4gh-keygen` writes it.
pub fn public_key_file(key: &PublicKey) -> String {
    format!(
        "{PUBLIC_BEGIN}\n{}\n{PUBLIC_END}\n",
        BASE64_STANDARD.encode(key.0)
    )
}

/// Reads the big-endian length-prefixed strings of a private key in order.
struct Strings<'a>(&'a [u8]);

impl<'a> Strings<'a> {
    fn next(&mut self) -> Option<&'a [u8]> {
        let (len, rest) = self.0.split_first_chunk::<2>()?;
        let len = usize::from(u16::from_be_bytes(*len));
        let (s, rest) = (rest.get(..len)?, &rest[len..]);
        self.0 = rest;
        Some(s)
    }
}

/// A crypt4gh private key file; a protected one asks `ask` for its passphrase.
pub fn parse_private_key(text: &str, origin: &str, ask: &impl KeyPassphrase) -> Result<SecretKey> {
    let is_private = |l: &str| {
        l.starts_with("-----BEGIN CRYPT4GH ") && l.ends_with(" KEY-----") && l != PUBLIC_BEGIN
    };
    let body =
        pem_body(text, is_private, |l| l.starts_with("-----END CRYPT4GH ")).ok_or_else(|| {
            bad(
                origin,
                &format!("not a PEM block of base64 ({PRIVATE_BEGIN} … {PRIVATE_END})"),
            )
        })?;
    let rest = body
        .strip_prefix(MAGIC)
        .ok_or_else(|| bad(origin, "it does not start with c4gh-v1"))?;
    let mut s = Strings(rest);
    let truncated = || bad(origin, "it ends too early");
    let kdf_name = s.next().ok_or_else(truncated)?;
    let options = match kdf_name {
        b"none" => None,
        _ => Some(s.next().ok_or_else(truncated)?),
    };
    let cipher = s.next().ok_or_else(truncated)?;
    let data = s.next().ok_or_else(truncated)?;
    match (options, cipher) {
        (None, b"none") => plain_secret(data, origin),
        (Some(options), b"chacha20_poly1305") => {
            let (rounds, salt) = options
                .split_first_chunk::<4>()
                .filter(|(_, salt)| !salt.is_empty())
                .ok_or_else(|| bad(origin, "its KDF options hold no salt"))?;
            let kdf = Kdf::parse(kdf_name, u32::from_be_bytes(*rounds), origin)?;
            let passphrase = ask_passphrase(origin, ask)?;
            unlock(kdf, passphrase.as_bytes(), salt, data, origin)
        }
        (_, b"none" | b"chacha20_poly1305") => Err(bad(
            origin,
            "a KDF without a cipher, or a cipher without a KDF (none goes with none)",
        )),
        (_, other) => Err(bad(
            origin,
            &format!(
                "unknown cipher '{}' (crypt4gh keys use chacha20_poly1305)",
                String::from_utf8_lossy(other)
            ),
        )),
    }
}

fn plain_secret(data: &[u8], origin: &str) -> Result<SecretKey> {
    let key: [u8; KEY_LEN] = data.try_into().map_err(|_| {
        bad(
            origin,
            &format!("its secret key is {} bytes, not 32", data.len()),
        )
    })?;
    Ok(SecretKey::from_bytes(key))
}

fn ask_passphrase(origin: &str, ask: &impl KeyPassphrase) -> Result<Zeroizing<String>> {
    if let Some(advice) = ask.refusal() {
        return Err(Error::InvalidOption(format!(
            "{origin} is a passphrase-protected crypt4gh key: {advice}"
        )));
    }
    ask.passphrase(&format!("{KEY_PROMPT} {origin}"))
        .map(Zeroizing::new)
        .ok_or_else(|| {
            Error::InvalidOption(format!(
                "{origin} is passphrase-protected and no passphrase was given: type it at a \
                 terminal, or set C4GH_PASSPHRASE (as for crypt4gh decrypt) or ZSEAL_PASSPHRASE"
            ))
        })
}

/// Opens the sealed secret (nonce ‖ ciphertext ‖ tag) under the key `kdf` derives.
fn unlock(
    kdf: Kdf,
    passphrase: &[u8],
    salt: &[u8],
    data: &[u8],
    origin: &str,
) -> Result<SecretKey> {
    if data.len() != NONCE_LEN + KEY_LEN + TAG_LEN {
        return Err(bad(
            origin,
            &format!("its sealed secret key is {} bytes, not 60", data.len()),
        ));
    }
    let key = kdf.derive(passphrase, salt)?;
    let (nonce, sealed) = data.split_at(NONCE_LEN);
    let nonce: [u8; NONCE_LEN] = nonce.try_into().expect("split at NONCE_LEN");
    let mut out = Zeroizing::new([0u8; KEY_LEN]);
    PayloadCipher::new(Cipher::ChaCha20Poly1305, &key)
        .open_to(&nonce, &[], sealed, out.as_mut())
        .map_err(|()| Error::InvalidOption(format!("{origin}: wrong passphrase")))?;
    Ok(SecretKey::from_bytes(*out))
}

/// How [`private_key_file`] protects the key.
pub enum Protection<'a> {
    /// Not at all (kdf and cipher `none`), as `crypt4gh-keygen --nocrypt`.
    None,
    /// Sealed under `passphrase` through `kdf` (the ref uses [`Kdf::Scrypt`]).
    Passphrase(Kdf, &'a str),
}

/// The text of a crypt4gh private key file for `key`, as `crypt4gh-keygen` writes it (one base64
/// line), with a fresh salt and nonce from `rng`.
pub fn private_key_file(
    key: &SecretKey,
    protection: Protection<'_>,
    comment: Option<&str>,
    rng: &mut (impl RngCore + CryptoRng),
) -> Result<Zeroizing<String>> {
    let mut salt = [0u8; SALT_LEN];
    let mut nonce = [0u8; NONCE_LEN];
    rng.fill_bytes(&mut salt);
    rng.fill_bytes(&mut nonce);
    let body = encode_private_key(key, &protection, &salt, &nonce, comment)?;
    let b64 = Zeroizing::new(BASE64_STANDARD.encode(body.as_slice()));
    Ok(Zeroizing::new(format!(
        "{PRIVATE_BEGIN}\n{}\n{PRIVATE_END}\n",
        b64.as_str()
    )))
}

/// The decoded private key (before base64), from a given salt and nonce (for vectors).
pub fn encode_private_key(
    key: &SecretKey,
    protection: &Protection<'_>,
    salt: &[u8],
    nonce: &[u8; NONCE_LEN],
    comment: Option<&str>,
) -> Result<Zeroizing<Vec<u8>>> {
    let mut out = Zeroizing::new(MAGIC.to_vec());
    let string = |out: &mut Vec<u8>, s: &[u8]| {
        let len = u16::try_from(s.len()).expect("key file strings are short");
        out.extend_from_slice(&len.to_be_bytes());
        out.extend_from_slice(s);
    };
    match protection {
        Protection::None => {
            string(&mut out, b"none");
            string(&mut out, b"none");
            string(&mut out, key.expose());
        }
        Protection::Passphrase(kdf, passphrase) => {
            let derived = kdf.derive(passphrase.as_bytes(), salt)?;
            let mut sealed = Zeroizing::new(key.expose().to_vec());
            let cipher = PayloadCipher::new(Cipher::ChaCha20Poly1305, &derived);
            let tag = cipher.seal(nonce, &[], &mut sealed);
            let options = [&kdf.rounds().to_be_bytes()[..], salt].concat();
            let data = Zeroizing::new([&nonce[..], &sealed, &tag].concat());
            string(&mut out, kdf.name().as_bytes());
            string(&mut out, &options);
            string(&mut out, b"chacha20_poly1305");
            string(&mut out, &data);
        }
    }
    if let Some(c) = comment {
        string(&mut out, c.as_bytes());
    }
    Ok(out)
}

#[cfg(test)]
mod tests {
    use super::*;

    #[derive(Clone)]
    struct Given(&'static str);
    impl KeyPassphrase for Given {
        fn passphrase(&self, _: &str) -> Option<String> {
            Some(self.0.into())
        }
    }

    #[test]
    fn public_key_files_round_trip_and_refuse_other_lengths() {
        let pk = SecretKey::from_bytes([3; 32]).public();
        let text = public_key_file(&pk);
        assert_eq!(parse_public_key(&text, "k").unwrap(), pk);
        // Blank lines and indentation are ignored, as by the ref.
        let spaced = text.replace('\n', "\n\n  ");
        assert_eq!(parse_public_key(&spaced, "k").unwrap(), pk);
        let short = format!(
            "{PUBLIC_BEGIN}\n{}\n{PUBLIC_END}\n",
            BASE64_STANDARD.encode([1; 31])
        );
        let e = parse_public_key(&short, "k").unwrap_err().to_string();
        assert!(e.contains("32 bytes, this one is 31"), "{e}");
        assert!(parse_public_key(&text.replace("PUBLIC", "PRIVATE"), "k").is_err());
    }

    #[test]
    fn private_keys_round_trip_under_each_kdf_and_refuse_a_wrong_passphrase() {
        let sk = SecretKey::from_bytes([5; 32]);
        let mut rng = rand_core::OsRng;
        for kdf in [Kdf::Scrypt, Kdf::Bcrypt(2), Kdf::Pbkdf2HmacSha256(10)] {
            let text =
                private_key_file(&sk, Protection::Passphrase(kdf, "pw"), Some("c"), &mut rng)
                    .unwrap();
            let back = parse_private_key(&text, "k", &Given("pw")).unwrap();
            assert_eq!(back.expose(), sk.expose(), "{kdf:?}");
            let e = parse_private_key(&text, "k", &Given("pW"))
                .unwrap_err()
                .to_string();
            assert!(e.contains("wrong passphrase"), "{e}");
        }
        let text = private_key_file(&sk, Protection::None, None, &mut rng).unwrap();
        assert_eq!(
            parse_private_key(&text, "k", &Given("")).unwrap().expose(),
            sk.expose()
        );
    }

    fn file_of(body: &[u8]) -> String {
        format!(
            "{PRIVATE_BEGIN}\n{}\n{PRIVATE_END}\n",
            BASE64_STANDARD.encode(body)
        )
    }

    fn s(b: &[u8]) -> Vec<u8> {
        [&(b.len() as u16).to_be_bytes()[..], b].concat()
    }

    /// Each malformed key gets its own message, before any key derivation.
    #[test]
    fn malformed_private_keys_are_refused_by_name() {
        let cases: Vec<(Vec<u8>, &str)> = vec![
            (b"c4gh-v2".to_vec(), "c4gh-v1"),
            ([MAGIC, &s(b"none")].concat(), "ends too early"),
            (
                [MAGIC, &s(b"none"), &s(b"none"), &s(&[1; 31])].concat(),
                "31 bytes",
            ),
            (
                [MAGIC, &s(b"none"), &s(b"chacha20_poly1305"), &s(&[1; 60])].concat(),
                "none goes with none",
            ),
            (
                [
                    MAGIC,
                    &s(b"scrypt"),
                    &s(&[0; 20]),
                    &s(b"none"),
                    &s(&[1; 32]),
                ]
                .concat(),
                "none goes with none",
            ),
            (
                [
                    MAGIC,
                    &s(b"argon2"),
                    &s(&[0; 20]),
                    &s(b"chacha20_poly1305"),
                    &s(&[1; 60]),
                ]
                .concat(),
                "unknown KDF",
            ),
            (
                [
                    MAGIC,
                    &s(b"bcrypt"),
                    &s(&[0, 0, 0, 0, 1]),
                    &s(b"chacha20_poly1305"),
                    &s(&[1; 60]),
                ]
                .concat(),
                "rounds 0",
            ),
            (
                [
                    MAGIC,
                    &s(b"bcrypt"),
                    &s(&[0, 0, 3, 233, 1]),
                    &s(b"chacha20_poly1305"),
                    &s(&[1; 60]),
                ]
                .concat(),
                "rounds 1001",
            ),
            (
                [
                    MAGIC,
                    &s(b"scrypt"),
                    &s(&[0; 4]),
                    &s(b"chacha20_poly1305"),
                    &s(&[1; 60]),
                ]
                .concat(),
                "no salt",
            ),
            (
                [
                    MAGIC,
                    &s(b"scrypt"),
                    &s(&[0; 20]),
                    &s(b"aes256"),
                    &s(&[1; 60]),
                ]
                .concat(),
                "unknown cipher",
            ),
            (
                [
                    MAGIC,
                    &s(b"scrypt"),
                    &s(&[0; 20]),
                    &s(b"chacha20_poly1305"),
                    &s(&[1; 59]),
                ]
                .concat(),
                "59 bytes",
            ),
        ];
        for (body, want) in cases {
            let e = parse_private_key(&file_of(&body), "k", &Given("pw"))
                .unwrap_err()
                .to_string();
            assert!(e.contains(want), "{want}: {e}");
        }
    }
}
