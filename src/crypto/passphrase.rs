//! The passphrase stanzas: the container's (FORMAT.md §1.1, type `01`: Argon2id wraps the file
//! key), which keys see as an age stanza tagged [`ARGON2_TAG`], and age's `scrypt` (§10.3).

use rand_core::RngCore;
use zeroize::Zeroizing;

use super::aead::{Cipher, PayloadCipher, NONCE_LEN, TAG_LEN};
use super::{AgeStanza, FileKey, Identity, PassphraseKdf, Recipient};
use super::{Zeroizing32, FILE_KEY_LEN, KEY_LEN};
use crate::error::{Error, Result};

/// The largest scrypt work factor (log2 N) an age file may ask for: Go age's cap (FORMAT.md
/// §10.2), kept so that every file age writes opens here. scrypt with N = 2^log_n and age's
/// r = 8 needs 128 · r · N bytes (4 GiB at 22, and the time it takes: docs/PERFORMANCE.md), which
/// anyone who hands over a 300-byte age header can make a reader spend on one passphrase attempt.
/// [`Passphrase::with_max_age_work_factor`] sets a lower limit.
pub const MAX_SCRYPT_WORK_FACTOR: u8 = 22;

/// The memory scrypt needs at work factor `log_n` with age's r = 8, in bytes.
pub fn scrypt_memory(log_n: u8) -> u64 {
    (128 * 8) << log_n
}

/// The scrypt work factor of the age files a passphrase encrypts, unless set: Go age's.
pub const AGE_WORK_FACTOR: u8 = 18;

/// Stanza type of a passphrase stanza.
pub const STANZA_TYPE: u8 = 0x01;
/// The tag under which keys see a container's passphrase stanza (type `01`, its body as the
/// stanza's, no arguments): in memory only, a container stores it as type `01`.
pub const ARGON2_TAG: &str = "zseal-argon2id";
/// age's passphrase stanza.
pub const SCRYPT_TAG: &str = "scrypt";

/// True for a passphrase stanza of either form.
pub fn is_passphrase(s: &AgeStanza) -> bool {
    s.tag == ARGON2_TAG || s.tag == SCRYPT_TAG
}

/// The refusal of a passphrase stanza `s` beside other stanzas (FORMAT.md §1.1, §10.2).
pub(crate) fn not_alone(s: &AgeStanza) -> Error {
    Error::InvalidHeader(match s.tag == SCRYPT_TAG {
        true => "an scrypt (passphrase) stanza must be the only stanza of an age file".into(),
        false => "a passphrase stanza must be the only stanza of its file".into(),
    })
}
const SALT_LEN: usize = 16;
const BODY_LEN: usize = SALT_LEN + 12 + FILE_KEY_LEN + 16;

/// Readers refuse Argon2 parameters above these before doing any work (FORMAT.md §1.1).
pub const MAX_M_COST_KIB: u32 = 1 << 20;
/// Highest accepted number of Argon2 passes.
pub const MAX_T_COST: u32 = 16;
/// Highest accepted number of Argon2 lanes.
pub const MAX_P_COST: u32 = 16;

/// Argon2id cost parameters.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub struct Argon2Params {
    /// Memory in KiB.
    pub m_cost: u32,
    /// Passes.
    pub t_cost: u32,
    /// Lanes.
    pub p_cost: u32,
}

impl Default for Argon2Params {
    /// 46 MiB, 3 passes, 1 lane: OWASP's Argon2id minimum with a margin (FORMAT.md §8).
    fn default() -> Self {
        Argon2Params {
            m_cost: 47104,
            t_cost: 3,
            p_cost: 1,
        }
    }
}

impl Argon2Params {
    /// Checks the limits of FORMAT.md §1.1; the message names the parameter over its limit.
    pub fn check(&self) -> Result<()> {
        if !(1..=MAX_P_COST).contains(&self.p_cost) {
            return Err(Error::Limit(format!(
                "Argon2 lanes p={} (allowed 1..={MAX_P_COST})",
                self.p_cost
            )));
        }
        if self.m_cost < 8 * self.p_cost || self.m_cost > MAX_M_COST_KIB {
            return Err(Error::Limit(format!(
                "Argon2 memory {} KiB (allowed {}..={MAX_M_COST_KIB} KiB): the file demands more work than zseal allows",
                self.m_cost,
                8 * self.p_cost
            )));
        }
        if !(1..=MAX_T_COST).contains(&self.t_cost) {
            return Err(Error::Limit(format!(
                "Argon2 passes t={} (allowed 1..={MAX_T_COST})",
                self.t_cost
            )));
        }
        Ok(())
    }

    fn derive(&self, passphrase: &[u8], salt: &[u8]) -> Result<Zeroizing32> {
        self.check()?;
        let params = argon2::Params::new(self.m_cost, self.t_cost, self.p_cost, Some(KEY_LEN))
            .map_err(|e| Error::Limit(format!("Argon2 parameters: {e}")))?;
        let argon =
            argon2::Argon2::new(argon2::Algorithm::Argon2id, argon2::Version::V0x13, params);
        let mut out = Zeroizing32([0u8; 32]);
        argon
            .hash_password_into(passphrase, salt, &mut out.0)
            .map_err(|e| Error::InvalidOption(format!("Argon2 failed: {e}")))?;
        Ok(out)
    }
}

/// A passphrase, usable both as a recipient (to encrypt) and as an identity (to decrypt).
pub struct Passphrase {
    secret: Zeroizing<Vec<u8>>,
    params: Argon2Params,
    /// The scrypt work factor of the age files it encrypts (`None`: [`AGE_WORK_FACTOR`]).
    age_work_factor: Option<u8>,
    /// The largest scrypt work factor of an age file it tries to open.
    max_age_work_factor: u8,
}

impl Passphrase {
    /// A passphrase with the default Argon2 cost. Empty passphrases are refused.
    pub fn new(secret: impl Into<Vec<u8>>) -> Result<Self> {
        Self::with_params(secret, Argon2Params::default())
    }

    /// A passphrase with explicit Argon2 cost (used when encrypting; decrypting uses the file's).
    pub fn with_params(secret: impl Into<Vec<u8>>, params: Argon2Params) -> Result<Self> {
        let secret = Zeroizing::new(secret.into());
        if secret.is_empty() {
            return Err(Error::InvalidOption("the passphrase is empty".into()));
        }
        params.check()?;
        Ok(Passphrase {
            secret,
            params,
            age_work_factor: None,
            max_age_work_factor: MAX_SCRYPT_WORK_FACTOR,
        })
    }

    /// Refuses to open age files whose scrypt work factor is over `log_n` (1..=22; by default
    /// [`MAX_SCRYPT_WORK_FACTOR`], age's own limit), before any work: a lower limit bounds what
    /// a file from an untrusted source can cost ([`scrypt_memory`]).
    pub fn with_max_age_work_factor(mut self, log_n: u8) -> Result<Self> {
        if !(1..=MAX_SCRYPT_WORK_FACTOR).contains(&log_n) {
            return Err(Error::InvalidOption(format!(
                "the scrypt work factor limit {log_n} is outside 1..={MAX_SCRYPT_WORK_FACTOR}"
            )));
        }
        self.max_age_work_factor = log_n;
        Ok(self)
    }

    /// Sets the scrypt work factor (log2 N, 1..=22) of the age files it encrypts to; by default
    /// [`AGE_WORK_FACTOR`], Go age's 18.
    pub fn with_age_work_factor(mut self, log_n: u8) -> Result<Self> {
        if !(1..=MAX_SCRYPT_WORK_FACTOR).contains(&log_n) {
            return Err(Error::InvalidOption(format!(
                "scrypt work factor {log_n} outside 1..={MAX_SCRYPT_WORK_FACTOR}"
            )));
        }
        self.age_work_factor = Some(log_n);
        Ok(self)
    }

    /// Refuses an age header whose scrypt stanza asks for a work factor over this passphrase's
    /// limit, without any work (a malformed stanza is left to the `age` crate to name).
    pub fn check_age_work_factor(&self, stanzas: &[age_core::format::Stanza]) -> Result<()> {
        let factor = stanzas
            .iter()
            .find(|s| s.tag == SCRYPT_TAG)
            .and_then(|s| s.args.get(1))
            .and_then(|a| a.parse::<u8>().ok());
        match factor {
            Some(n) if n > self.max_age_work_factor => Err(self.excessive(n)),
            _ => Ok(()),
        }
    }

    /// The refusal of a work factor over the limit, with what it would cost.
    fn excessive(&self, required: u8) -> Error {
        let max = self.max_age_work_factor;
        let cost = scrypt_memory(required.min(40)) >> 20;
        Error::Limit(if max == MAX_SCRYPT_WORK_FACTOR {
            format!(
                "the scrypt work factor {required} is over {max}: the file asks for more work \
                 than age allows ({cost} MiB of memory per attempt)"
            )
        } else {
            format!(
                "the scrypt work factor {required} is over the limit {max}: trying a passphrase \
                 on this file takes {cost} MiB of memory; raise the limit (at most \
                 {MAX_SCRYPT_WORK_FACTOR}, age's) if you trust the file"
            )
        })
    }

    fn text(&self) -> Result<&str> {
        std::str::from_utf8(&self.secret)
            .map_err(|_| Error::InvalidOption("an age passphrase must be UTF-8 text".into()))
    }
}

impl Recipient for Passphrase {
    fn wrap_file_key(
        &self,
        file_key: &FileKey,
        kdf: PassphraseKdf,
        rng: &mut dyn RngCore,
    ) -> Result<Vec<AgeStanza>> {
        match kdf {
            PassphraseKdf::Argon2id => Ok(vec![self.wrap_argon2(file_key, rng)?]),
            PassphraseKdf::Scrypt => self.wrap_scrypt(file_key),
        }
    }

    fn exclusive(&self) -> bool {
        true
    }
}

impl Passphrase {
    /// The container's stanza (FORMAT.md §1.1, type `01`).
    fn wrap_argon2(&self, file_key: &FileKey, rng: &mut dyn RngCore) -> Result<AgeStanza> {
        let mut salt = [0u8; SALT_LEN];
        rng.fill_bytes(&mut salt);
        let wrap_key = self.params.derive(&self.secret, &salt)?;
        let mut wrapped = file_key.expose().to_vec();
        let tag = PayloadCipher::new(Cipher::ChaCha20Poly1305, &wrap_key.0).seal(
            &[0u8; NONCE_LEN],
            b"",
            &mut wrapped,
        );
        let mut body = Vec::with_capacity(BODY_LEN);
        body.extend_from_slice(&salt);
        for v in [self.params.m_cost, self.params.t_cost, self.params.p_cost] {
            body.extend_from_slice(&v.to_le_bytes());
        }
        body.extend_from_slice(&wrapped);
        body.extend_from_slice(&tag);
        Ok(AgeStanza {
            tag: ARGON2_TAG.into(),
            args: Vec::new(),
            body,
        })
    }

    /// age's `scrypt` stanza, made by the `age` crate's scrypt recipient.
    fn wrap_scrypt(&self, file_key: &FileKey) -> Result<Vec<AgeStanza>> {
        use age::Recipient as _;
        let mut r = age::scrypt::Recipient::new(self.text()?.to_owned().into());
        // Go age's fixed default (the age crate's own is timed on this machine, and on a fast
        // one could pass the cap of 22 that readers apply).
        r.set_work_factor(self.age_work_factor.unwrap_or(AGE_WORK_FACTOR));
        let key = age_core::format::FileKey::new(Box::new(*file_key.expose()));
        let (stanzas, _labels) = r
            .wrap_file_key(&key)
            .map_err(|e| Error::InvalidOption(format!("scrypt: {e}")))?;
        Ok(stanzas)
    }

    /// Opens the container's stanza; a wrong passphrase is [`Error::WrongPassphrase`].
    fn unwrap_argon2(&self, stanza: &AgeStanza) -> Result<FileKey> {
        let b = &stanza.body;
        if b.len() != BODY_LEN || !stanza.args.is_empty() {
            return Err(Error::InvalidHeader(format!(
                "passphrase stanza of {} bytes (expected {BODY_LEN})",
                b.len()
            )));
        }
        let word = |at: usize| u32::from_le_bytes([b[at], b[at + 1], b[at + 2], b[at + 3]]);
        let params = Argon2Params {
            m_cost: word(SALT_LEN),
            t_cost: word(SALT_LEN + 4),
            p_cost: word(SALT_LEN + 8),
        };
        let wrap_key = params.derive(&self.secret, &b[..SALT_LEN])?;
        // The wrapped key and its tag, opened in place.
        let mut sealed = Zeroizing::new([0u8; FILE_KEY_LEN + TAG_LEN]);
        sealed.copy_from_slice(&b[SALT_LEN + 12..]);
        PayloadCipher::new(Cipher::ChaCha20Poly1305, &wrap_key.0)
            .open(&[0u8; NONCE_LEN], b"", sealed.as_mut_slice())
            .map_err(|()| Error::WrongPassphrase)?;
        let mut key = [0u8; FILE_KEY_LEN];
        key.copy_from_slice(&sealed[..FILE_KEY_LEN]);
        Ok(FileKey::from_bytes(key))
    }

    /// Opens an age `scrypt` stanza with the `age` crate's scrypt identity, the work factor
    /// capped at this passphrase's limit ([`MAX_SCRYPT_WORK_FACTOR`] unless lowered; FORMAT.md
    /// §10.2), checked before any work. A wrong passphrase is no match.
    fn unwrap_scrypt(&self, stanzas: &[AgeStanza], stanza: &AgeStanza) -> Result<Option<FileKey>> {
        use age::secrecy::ExposeSecret;
        use age::Identity as _;
        let mut id = age::scrypt::Identity::new(self.text()?.to_owned().into());
        self.check_age_work_factor(stanzas)?;
        id.set_max_work_factor(self.max_age_work_factor);
        match id.unwrap_stanza(stanza) {
            None | Some(Err(age::DecryptError::DecryptionFailed)) => Ok(None),
            Some(Ok(k)) => Ok(Some(FileKey::from_bytes(*k.expose_secret()))),
            Some(Err(age::DecryptError::ExcessiveWork { required, .. })) => {
                Err(self.excessive(required))
            }
            Some(Err(e)) => Err(Error::InvalidHeader(format!("the scrypt stanza: {e}"))),
        }
    }
}

/// Either passphrase stanza, whichever the header holds (the unwrap loop has checked that it
/// stands alone).
impl Identity for Passphrase {
    fn unwrap_stanzas(&self, stanzas: &[AgeStanza]) -> Result<Option<FileKey>> {
        match stanzas.iter().find(|s| is_passphrase(s)) {
            Some(s) if s.tag == ARGON2_TAG => self.unwrap_argon2(s).map(Some),
            Some(s) => self.unwrap_scrypt(stanzas, s),
            None => Ok(None),
        }
    }
}

/// Argon2 costs low enough for unit tests (the crate's own; integration tests have theirs).
#[cfg(test)]
pub(crate) const CHEAP: Argon2Params = Argon2Params {
    m_cost: 64,
    t_cost: 1,
    p_cost: 1,
};

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn wraps_and_unwraps_and_rejects_wrong_passphrase() {
        let key = FileKey::from_bytes([9; 16]);
        let pw = Passphrase::with_params("correct horse", CHEAP).unwrap();
        let argon = PassphraseKdf::Argon2id;
        let stanzas = pw
            .wrap_file_key(&key, argon, &mut rand_core::OsRng)
            .unwrap();
        assert_eq!(stanzas[0].body.len(), BODY_LEN);
        assert_eq!(stanzas[0].tag, ARGON2_TAG);
        let got = pw.unwrap_stanzas(&stanzas).unwrap().unwrap();
        assert_eq!(got.expose(), key.expose());
        let wrong = Passphrase::with_params("battery staple", CHEAP).unwrap();
        assert!(matches!(
            wrong.unwrap_stanzas(&stanzas),
            Err(Error::WrongPassphrase)
        ));
    }

    #[test]
    fn hostile_costs_are_refused_before_any_work() {
        let key = FileKey::from_bytes([9; 16]);
        let pw = Passphrase::with_params("pw", CHEAP).unwrap();
        let argon = PassphraseKdf::Argon2id;
        let mut stanzas = pw
            .wrap_file_key(&key, argon, &mut rand_core::OsRng)
            .unwrap();
        // m_cost = 4 GiB: must fail at once with a message naming the memory.
        stanzas[0].body[SALT_LEN..SALT_LEN + 4].copy_from_slice(&(4u32 << 20).to_le_bytes());
        let err = pw.unwrap_stanzas(&stanzas).err().unwrap().to_string();
        assert!(err.contains("Argon2 memory"), "{err}");
        stanzas[0].body[SALT_LEN..SALT_LEN + 4].copy_from_slice(&64u32.to_le_bytes());
        stanzas[0].body[SALT_LEN + 4..SALT_LEN + 8].copy_from_slice(&1000u32.to_le_bytes());
        let err = pw.unwrap_stanzas(&stanzas).err().unwrap().to_string();
        assert!(err.contains("passes"), "{err}");
    }

    /// FORMAT.md §7's bounds, at their edges: m from 8·p KiB to 1 GiB, t 1..=16, p 1..=16.
    #[test]
    fn cost_limits_hold_exactly_at_their_edges() {
        let ok = |m_cost, t_cost, p_cost| {
            Argon2Params {
                m_cost,
                t_cost,
                p_cost,
            }
            .check()
            .is_ok()
        };
        for p in [1, 2, 3, MAX_P_COST] {
            assert!(ok(8 * p, 1, p), "p={p}");
            assert!(!ok(8 * p - 1, 1, p), "p={p}");
            assert!(ok(MAX_M_COST_KIB, 1, p));
            assert!(!ok(MAX_M_COST_KIB + 1, 1, p));
        }
        assert!(!ok(64, 1, 0) && !ok(256, 1, MAX_P_COST + 1));
        assert!(ok(64, MAX_T_COST, 1) && !ok(64, MAX_T_COST + 1, 1) && !ok(64, 0, 1));
    }

    #[test]
    fn empty_passphrase_is_refused() {
        assert!(Passphrase::new("").is_err());
    }
}
