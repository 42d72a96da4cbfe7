//! Keys and the primitives composed from audited crates: HKDF and HMAC (docs/FORMAT.md §2),
//! the payload AEAD and STREAM nonces ([`aead`]), key stanzas ([`passphrase`]), and crypt4gh
//! keys ([`c4gh`], FORMAT.md §13.7).

pub mod aead;
pub mod c4gh;
pub mod keygen;
pub mod kms;
pub mod passphrase;
pub mod plugin;
pub mod pq;
pub mod prompt;
pub mod recipients;
pub mod sign;
pub mod unwrap;

/// The one stanza type keys know, in every format: age's (a tag, arguments, a body), as
/// `age-core` parses it. An age header holds these; a container stores each in a record of its
/// own ([`Stanza`], FORMAT.md §1.1) and hands keys the age stanza it holds ([`Stanza::to_age`]).
pub use age_core::format::Stanza as AgeStanza;
use hkdf::Hkdf;
use hmac::{Hmac, Mac};
use rand_core::{CryptoRng, RngCore};
use sha2::Sha256;
pub use unwrap::KeyHeader;
use zeroize::{Zeroize, ZeroizeOnDrop};

use crate::error::{Error, Result};

/// Length of the file key (age's size, FORMAT.md §2.1).
pub const FILE_KEY_LEN: usize = 16;
/// Length of the payload key and the header MAC key.
pub const KEY_LEN: usize = 32;
/// Largest stanza body (FORMAT.md §1.1): what a recipient may produce and an identity accepts.
pub const MAX_STANZA_BODY: usize = 8192;

const INFO_HEADER: &[u8] = b"zseal v1 header";
const INFO_PAYLOAD: &[u8] = b"zseal v1 payload";

/// The random per-file key that every stanza wraps. Zeroized on drop.
#[derive(Clone, Zeroize, ZeroizeOnDrop)]
pub struct FileKey([u8; FILE_KEY_LEN]);

impl FileKey {
    /// Draws a fresh file key from `rng`.
    pub fn generate(rng: &mut (impl RngCore + CryptoRng)) -> Self {
        let mut k = [0u8; FILE_KEY_LEN];
        rng.fill_bytes(&mut k);
        FileKey(k)
    }

    /// Wraps raw key bytes (for key stanzas that unwrap one).
    pub fn from_bytes(bytes: [u8; FILE_KEY_LEN]) -> Self {
        FileKey(bytes)
    }

    /// The raw key bytes, for stanzas that wrap them.
    pub fn expose(&self) -> &[u8; FILE_KEY_LEN] {
        &self.0
    }

    /// `mac_key` of FORMAT.md §2.2.
    fn mac_key(&self) -> Zeroizing32 {
        hkdf_32(&[], &self.0, INFO_HEADER)
    }

    /// `payload_key` of FORMAT.md §2.2.
    pub(crate) fn payload_key(&self, payload_salt: &[u8]) -> Zeroizing32 {
        hkdf_32(payload_salt, &self.0, INFO_PAYLOAD)
    }

    /// `header_mac` of FORMAT.md §2.3 over `header` (every header byte before the MAC).
    pub(crate) fn header_mac(&self, header: &[u8]) -> [u8; 32] {
        let key = self.mac_key();
        let mut mac =
            <Hmac<Sha256> as Mac>::new_from_slice(&key.0).expect("HMAC takes any key length");
        mac.update(header);
        mac.finalize().into_bytes().into()
    }

    /// Verifies `tag` in constant time; `Err(HeaderAuth)` when it does not match.
    pub(crate) fn verify_header_mac(&self, header: &[u8], tag: &[u8]) -> Result<()> {
        let key = self.mac_key();
        let mut mac =
            <Hmac<Sha256> as Mac>::new_from_slice(&key.0).expect("HMAC takes any key length");
        mac.update(header);
        mac.verify_slice(tag).map_err(|_| Error::HeaderAuth)
    }
}

/// age's key schedule (c2sp.org/age, FORMAT.md §10.2): the same HKDF and HMAC, age's labels.
impl FileKey {
    /// Verifies an age header's MAC over `mac_input` (the header through `---`).
    pub(crate) fn verify_age_header_mac(&self, mac_input: &[u8], tag: &[u8]) -> Result<()> {
        let key = hkdf_32(&[], &self.0, b"header");
        let mut mac =
            <Hmac<Sha256> as Mac>::new_from_slice(&key.0).expect("HMAC takes any key length");
        mac.update(mac_input);
        mac.verify_slice(tag).map_err(|_| Error::HeaderAuth)
    }

    /// An age header's MAC over `mac_input` (the header through `---`).
    pub(crate) fn age_header_mac(&self, mac_input: &[u8]) -> [u8; 32] {
        let key = hkdf_32(&[], &self.0, b"header");
        let mut mac =
            <Hmac<Sha256> as Mac>::new_from_slice(&key.0).expect("HMAC takes any key length");
        mac.update(mac_input);
        mac.finalize().into_bytes().into()
    }

    /// An age file's payload key, from its 16-byte payload nonce.
    pub(crate) fn age_payload_key(&self, nonce: &[u8]) -> Zeroizing32 {
        hkdf_32(nonce, &self.0, b"payload")
    }
}

/// 32 secret bytes that are wiped on drop.
#[derive(Zeroize, ZeroizeOnDrop)]
pub(crate) struct Zeroizing32(pub(crate) [u8; 32]);

/// HKDF-SHA-256 with a 32-byte output.
pub(crate) fn hkdf_32(salt: &[u8], ikm: &[u8], info: &[u8]) -> Zeroizing32 {
    let mut out = Zeroizing32([0u8; 32]);
    Hkdf::<Sha256>::new(Some(salt), ikm)
        .expand(info, &mut out.0)
        .expect("32 bytes is a valid HKDF-SHA-256 output length");
    out
}

/// The key of the piece `id` of a pieced file (FORMAT.md §14.2): HKDF-Expand with the payload
/// key as its PRK (already a uniform HKDF output) and `"zseal v1 piece" || id` as its info.
pub(crate) fn piece_key(payload_key: &[u8; 32], id: &[u8; 16]) -> Zeroizing32 {
    expand_32(payload_key, b"zseal v1 piece", id)
}

/// The key of the end frames of a pieced file (FORMAT.md §14.3), from its end id.
pub(crate) fn end_key(payload_key: &[u8; 32], id: &[u8; 16]) -> Zeroizing32 {
    expand_32(payload_key, b"zseal v1 end", id)
}

/// HKDF-Expand(PRK = `prk`, info = `label || id`, L = 32).
fn expand_32(prk: &[u8; 32], label: &[u8], id: &[u8; 16]) -> Zeroizing32 {
    let mut out = Zeroizing32([0u8; 32]);
    Hkdf::<Sha256>::from_prk(prk)
        .expect("a 32-byte PRK is SHA-256's length")
        .expand_multi_info(&[label, id], &mut out.0)
        .expect("32 bytes is a valid HKDF-SHA-256 output length");
    out
}

/// The container's record of one key stanza (FORMAT.md §1.1): a type byte and a type-specific
/// body. Keys never see it: [`Stanza::to_age`] gives them the age stanza it holds and
/// [`Stanza::from_age`] stores theirs, so the container carries stanzas without knowing them.
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct Stanza {
    /// Stanza type (`01` passphrase, `02` and `03` age recipient).
    pub kind: u8,
    /// Type-specific body.
    pub body: Vec<u8>,
}

/// A copy of `s` (`age-core`'s stanza is not `Clone`).
pub fn copy_stanza(s: &AgeStanza) -> AgeStanza {
    AgeStanza {
        tag: s.tag.clone(),
        args: s.args.clone(),
        body: s.body.clone(),
    }
}

/// The tag of the age stanza that carries a container record this build cannot read as an age
/// stanza (a type it does not know, a malformed type `02`/`03`), with one argument, the type as
/// two hex digits, and the record's body: how such a record reaches keys, and how a key (a
/// test's) writes a record of its own type. Only in memory: never written in an age header.
pub const RECORD_TAG: &str = "zseal-record";

impl Stanza {
    /// The age stanza this record holds, as keys read it: type `01` is the passphrase's
    /// ([`passphrase::ARGON2_TAG`]), `02`/`03` the age stanza they encode, anything else a
    /// [`RECORD_TAG`] stanza.
    pub fn to_age(&self) -> AgeStanza {
        let plain = |tag: &str, args: Vec<String>| AgeStanza {
            tag: tag.into(),
            args,
            body: self.body.clone(),
        };
        match self.kind {
            passphrase::STANZA_TYPE => plain(passphrase::ARGON2_TAG, Vec::new()),
            k if recipients::is_age_stanza(k) => recipients::decode(self)
                .unwrap_or_else(|_| plain(RECORD_TAG, vec![format!("{k:02x}")])),
            k => plain(RECORD_TAG, vec![format!("{k:02x}")]),
        }
    }

    /// The record that stores `s` in a container: the passphrase's as type `01`, a
    /// [`RECORD_TAG`] stanza as the type it names, any other age stanza as type `02`/`03`.
    pub fn from_age(s: &AgeStanza) -> Result<Stanza> {
        let record = |kind: u8| {
            if s.body.len() > MAX_STANZA_BODY {
                return Err(Error::InvalidOption(format!(
                    "a {} stanza of {} bytes: at most {MAX_STANZA_BODY}",
                    s.tag,
                    s.body.len()
                )));
            }
            Ok(Stanza {
                kind,
                body: s.body.clone(),
            })
        };
        match s.tag.as_str() {
            passphrase::ARGON2_TAG => record(passphrase::STANZA_TYPE),
            RECORD_TAG => match s.args.as_slice() {
                [k] if k.len() == 2 => record(u8::from_str_radix(k, 16).map_err(|_| {
                    Error::InvalidOption(format!("a {RECORD_TAG} stanza names type {k}"))
                })?),
                _ => Err(Error::InvalidOption(format!(
                    "a {RECORD_TAG} stanza takes one argument, its type as two hex digits"
                ))),
            },
            _ => recipients::encode(s),
        }
    }

    /// A short human name for the stanza's type: `passphrase`, the age stanza's tag (`X25519`,
    /// `ssh-ed25519`, …), or the type byte of a type this build does not know.
    pub fn kind_name(&self) -> String {
        match self.kind {
            passphrase::STANZA_TYPE => "passphrase".into(),
            k if recipients::is_age_stanza(k) => match recipients::decode(self) {
                Ok(s) => s.tag,
                Err(_) => "malformed age stanza".into(),
            },
            k => format!("type {k:#04x}"),
        }
    }

    /// What the stanza tells anyone about its recipient (for `inspect` and messages): an SSH
    /// stanza names its key by the tag age writes into it (the first 4 bytes of the SHA-256 of
    /// the public key, base64), an X25519 or post-quantum stanza names nobody (age's recipient
    /// stanzas are anonymous by design), a passphrase stanza that it is one.
    pub fn describe(&self) -> String {
        match self.recipient_id() {
            Some(id) if id.kind == recipients::KMS_TAG => format!("AWS KMS key {}", id.key_tag),
            Some(id) => format!("{} (key tag {})", id.kind, id.key_tag),
            None if self.kind == passphrase::STANZA_TYPE => "passphrase".into(),
            None if self.is_plugin() => format!("{} (age plugin stanza)", self.kind_name()),
            None if recipients::is_age_stanza(self.kind) => {
                format!("{} (anonymous)", self.kind_name())
            }
            None => self.kind_name(),
        }
    }

    /// The recipient this stanza names, when its type names one (SSH stanzas: their key tag;
    /// AWS KMS stanzas: their key ARN).
    pub fn recipient_id(&self) -> Option<StanzaRecipient> {
        if !recipients::is_age_stanza(self.kind) {
            return None;
        }
        let s = recipients::decode(self).ok()?;
        let key_tag = s.args.first()?;
        let named = s.tag.starts_with("ssh-") || s.tag == recipients::KMS_TAG;
        named.then(|| StanzaRecipient {
            kind: s.tag.clone(),
            key_tag: key_tag.clone(),
        })
    }

    /// True for an age stanza of none of age's own types (X25519, scrypt, SSH, post-quantum) nor
    /// zseal's AWS KMS stanza: an age plugin's, which only its plugin can unwrap (FORMAT.md §1.1).
    pub fn is_plugin(&self) -> bool {
        recipients::is_age_stanza(self.kind)
            && recipients::decode(self)
                .is_ok_and(|s| !recipients::NATIVE_TAGS.contains(&s.tag.as_str()))
    }

    /// True for the stanza types this build can unwrap.
    pub fn is_known(&self) -> bool {
        self.kind == passphrase::STANZA_TYPE || recipients::is_age_stanza(self.kind)
    }
}

/// A recipient as a stanza names it (an SSH key's stanza type and key tag): what lets `rekey
/// --remove` take out one recipient's stanzas and keep the others.
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct StanzaRecipient {
    /// The stanza type (`ssh-ed25519`, `ssh-rsa`).
    pub kind: String,
    /// The key tag age writes as the stanza's first argument (an AWS KMS stanza's: the key ARN).
    pub key_tag: String,
}

impl StanzaRecipient {
    /// The stanzas `recipient` would be named by: its stanzas for a throwaway key, when they
    /// name it (SSH keys). An X25519 or post-quantum recipient's stanzas are anonymous: `None`.
    pub fn of(recipient: &dyn Recipient) -> Result<Option<StanzaRecipient>> {
        let throwaway = FileKey::generate(&mut rand_core::OsRng);
        let stanzas =
            recipient.wrap_file_key(&throwaway, PassphraseKdf::Argon2id, &mut rand_core::OsRng)?;
        match stanzas.first() {
            Some(s) => Ok(Stanza::from_age(s)?.recipient_id()),
            None => Ok(None),
        }
    }
}

/// The kind names of `stanzas`, in header order (for messages and `inspect`).
pub fn kind_names(stanzas: &[Stanza]) -> Vec<String> {
    stanzas.iter().map(Stanza::kind_name).collect()
}

/// How a format holds a passphrase: the one thing a key is told of the header it wraps for
/// (the container: Argon2id, FORMAT.md §1.1 type `01`; age: its `scrypt` stanza, §10.3). Every
/// other key wraps the same stanzas for every format.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum PassphraseKdf {
    /// The container's passphrase stanza ([`passphrase::ARGON2_TAG`]).
    Argon2id,
    /// age's `scrypt` stanza.
    Scrypt,
}

/// Something a file can be encrypted to: it wraps the file key into one or more stanzas, the
/// same for every format.
pub trait Recipient {
    /// Wraps `file_key` into the stanzas that go into the header (`kdf`: how the header holds a
    /// passphrase, which only a passphrase reads; `rng`: for keys that draw from the caller's).
    fn wrap_file_key(
        &self,
        file_key: &FileKey,
        kdf: PassphraseKdf,
        rng: &mut dyn RngCore,
    ) -> Result<Vec<AgeStanza>>;

    /// True when the stanzas of this recipient must be the only ones in a file (passphrases).
    fn exclusive(&self) -> bool {
        false
    }

    /// True for a post-quantum recipient, which is not mixed with classic ones (FORMAT.md §1.1).
    fn post_quantum(&self) -> bool {
        false
    }

    /// The labels (age's) its stanzas carry, sorted: a file's recipients must all carry the same
    /// (FORMAT.md §1.1). The default: `postquantum` for a post-quantum recipient, else none. An
    /// age plugin declares its own when it wraps: known only after a wrap.
    fn labels(&self) -> Vec<String> {
        match self.post_quantum() {
            true => vec![pq::LABEL.to_string()],
            false => Vec::new(),
        }
    }
}

/// True for a stanza of a post-quantum recipient (`mlkem768x25519`).
fn is_post_quantum(s: &Stanza) -> bool {
    recipients::is_age_stanza(s.kind) && recipients::decode(s).is_ok_and(|a| a.tag == pq::TAG)
}

/// Something that can open a file: it unwraps the file key from one of its stanzas, the same
/// for every format (the loop that asks each identity is [`unwrap::unwrap_file_key`]).
pub trait Identity {
    /// `Ok(Some(key))` when one of `stanzas` is for this identity and unwraps, `Ok(None)` when
    /// none is for it, `Err` when one is for it but is invalid (e.g. a wrong passphrase).
    fn unwrap_stanzas(&self, stanzas: &[AgeStanza]) -> Result<Option<FileKey>>;

    /// The recipient this identity's stanzas name, when they name one (an SSH key's tag): lets
    /// a caller tell whether a header is for it without unwrapping (which may ask for a
    /// passphrase again). The default: none.
    fn stanza_recipient(&self) -> Option<StanzaRecipient> {
        None
    }

    /// The X25519 secret keys this identity holds (an age X25519 identity, an OpenSSH ed25519
    /// key, a crypt4gh key file), for a format whose header is sealed to such keys directly
    /// (crypt4gh, FORMAT.md §13.7). The default: none.
    fn x25519_keys(&self) -> Result<Vec<c4gh::SecretKey>> {
        Ok(Vec::new())
    }
}

/// What a new file's header is keyed from: its recipients, and the randomness for its file key,
/// salts and nonces. Its [`Keying::wrap`] is the one loop that wraps a file key for recipients,
/// whatever the format; a format draws what it needs in the order its header is laid out.
pub struct Keying<'a> {
    recipients: &'a [&'a dyn Recipient],
    rng: &'a mut dyn rand_core::CryptoRngCore,
}

impl<'a> Keying<'a> {
    /// `recipients` (at least one), drawing from `rng` (a CSPRNG; tests pass a seeded one).
    pub(crate) fn new(
        recipients: &'a [&'a dyn Recipient],
        rng: &'a mut dyn rand_core::CryptoRngCore,
    ) -> Self {
        Keying { recipients, rng }
    }

    /// A fresh file key.
    pub(crate) fn file_key(&mut self) -> FileKey {
        FileKey::generate(&mut self.rng)
    }

    /// Fills `buf` (a salt, a nonce).
    pub(crate) fn fill(&mut self, buf: &mut [u8]) {
        self.rng.fill_bytes(buf);
    }

    /// The stanzas that wrap `file_key` for each recipient, in order (a passphrase stretched by
    /// `kdf`), once the recipients may stand together ([`check_recipients`]).
    pub(crate) fn wrap(
        &mut self,
        file_key: &FileKey,
        kdf: PassphraseKdf,
    ) -> Result<Vec<AgeStanza>> {
        let stanzas = wrap_to(self.recipients, file_key, kdf, &mut self.rng)?;
        // After the wrap: an age plugin declares its labels when it wraps.
        check_recipients(self.recipients, &[])?;
        Ok(stanzas)
    }
}

impl Keying<'_> {
    /// [`Keying::wrap`] for a container's header beside the stanza records it `kept` (a rekey;
    /// none for a new file): its stanza records (FORMAT.md §1.1), a passphrase stretched by
    /// Argon2id, the recipients checked together with the kept ones. A header that only keeps
    /// stanzas and adds none (a rekey that removes) needs no check: what remains was allowed.
    pub(crate) fn wrap_container(
        &mut self,
        file_key: &FileKey,
        kept: &[Stanza],
    ) -> Result<Vec<Stanza>> {
        let stanzas = wrap_to(
            self.recipients,
            file_key,
            PassphraseKdf::Argon2id,
            &mut self.rng,
        )?;
        // After the wrap: an age plugin declares its labels when it wraps.
        if !self.recipients.is_empty() || kept.is_empty() {
            check_recipients(self.recipients, kept)?;
        }
        stanzas.iter().map(Stanza::from_age).collect()
    }
}

/// The stanzas that wrap `file_key` for each of `recipients`, in order.
pub(crate) fn wrap_to(
    recipients: &[&dyn Recipient],
    file_key: &FileKey,
    kdf: PassphraseKdf,
    rng: &mut dyn RngCore,
) -> Result<Vec<AgeStanza>> {
    let mut stanzas = Vec::new();
    for r in recipients {
        stanzas.extend(r.wrap_file_key(file_key, kdf, rng)?);
    }
    Ok(stanzas)
}

/// The rules of FORMAT.md §1.1 on who a file is for: at least one recipient, a passphrase alone,
/// post-quantum recipients not beside classic ones, and (age's rule) all recipients with the
/// same labels (`kept`: the stanzas the header keeps besides these). Checked after the
/// recipients wrapped the file key: an age plugin declares its labels then.
pub(crate) fn check_recipients(recipients: &[&dyn Recipient], kept: &[Stanza]) -> Result<()> {
    let with_others = !kept.is_empty();
    check_labels(recipients)?;
    let kept_pq = kept.iter().filter(|s| is_post_quantum(s)).count();
    let pq = recipients.iter().filter(|r| r.post_quantum()).count() + kept_pq;
    if pq > 0 && pq < recipients.len() + kept.len() {
        return Err(Error::InvalidOption(
            "post-quantum recipients (age1pq1…, or a plugin's that declares itself post-quantum) \
             cannot be mixed with classic ones (as age refuses): the classic key would be the \
             weak link; encrypt to each kind apart"
                .into(),
        ));
    }
    if recipients.is_empty() {
        return Err(Error::InvalidOption(
            "no recipient or passphrase to encrypt to".into(),
        ));
    }
    if (recipients.len() > 1 || with_others) && recipients.iter().any(|r| r.exclusive()) {
        return Err(Error::InvalidOption(
            "a passphrase cannot be combined with recipients (as in age): anyone holding one \
             of the keys could re-wrap the file for the passphrase; encrypt twice instead"
                .into(),
        ));
    }
    Ok(())
}

/// age's rule: every recipient of a file declares the same labels (a plugin's own, or
/// `postquantum`). Mixing post-quantum and classic recipients has its own message (below).
fn check_labels(recipients: &[&dyn Recipient]) -> Result<()> {
    let labels: Vec<Vec<String>> = recipients.iter().map(|r| r.labels()).collect();
    let Some(first) = labels.first() else {
        return Ok(());
    };
    let pq = |l: &Vec<String>| l.iter().any(|x| x == pq::LABEL);
    match labels.iter().find(|l| *l != first) {
        Some(other) if pq(other) == pq(first) => Err(Error::InvalidOption(format!(
            "these recipients cannot share a file (as age refuses): one declares the labels \
             [{}], another [{}]; encrypt to each kind apart",
            first.join(", "),
            other.join(", ")
        ))),
        _ => Ok(()),
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn hex(b: &[u8]) -> String {
        b.iter().map(|x| format!("{x:02x}")).collect()
    }

    /// Expected values computed independently (Python's hmac/hashlib, RFC 5869 by hand), so a
    /// change of label, salt or order in the key schedule fails here.
    #[test]
    fn key_schedule_matches_independent_vectors() {
        let fk = FileKey::from_bytes(core::array::from_fn(|i| i as u8));
        let salt: [u8; 32] = core::array::from_fn(|i| 0x20 + i as u8);
        assert_eq!(
            hex(&fk.payload_key(&salt).0),
            "c2a10fb1eec7e8c36d4cf37807e99dd27118a295f59b48303576bc947e619ba6"
        );
        let mac = fk.header_mac(b"header bytes");
        assert_eq!(
            hex(&mac),
            "3764acd9bd21f0dd5a6607c7474c39e15f14cf10ab307d68b7f1bb54f66083fc"
        );
        assert!(fk.verify_header_mac(b"header bytes", &mac).is_ok());
        assert!(fk.verify_header_mac(b"header bytez", &mac).is_err());
    }

    /// What `inspect`, the "no identity matched" message and the key prompts say about stanzas.
    #[test]
    fn stanza_kinds_are_named_and_known_by_type() {
        let fk = FileKey::from_bytes([7; FILE_KEY_LEN]);
        let pw = passphrase::Passphrase::with_params("stanza names", passphrase::CHEAP).unwrap();
        let (_, public) = recipients::generate();
        let age = crate::AgeRecipient::parse(&public).unwrap();
        let mut rng = rand_core::OsRng;
        let argon = PassphraseKdf::Argon2id;
        let mut stanzas =
            vec![Stanza::from_age(&pw.wrap_file_key(&fk, argon, &mut rng).unwrap()[0]).unwrap()];
        stanzas
            .push(Stanza::from_age(&age.wrap_file_key(&fk, argon, &mut rng).unwrap()[0]).unwrap());
        stanzas.push(Stanza {
            kind: recipients::STANZA_TYPE,
            body: vec![0xff; 3],
        });
        stanzas.push(Stanza {
            kind: 0x7e,
            body: vec![1, 2, 3],
        });
        assert_eq!(
            kind_names(&stanzas),
            ["passphrase", "X25519", "malformed age stanza", "type 0x7e"]
        );
        let known: Vec<bool> = stanzas.iter().map(Stanza::is_known).collect();
        assert_eq!(known, [true, true, true, false]);
        let long = Stanza {
            kind: recipients::STANZA_TYPE_LONG,
            body: Vec::new(),
        };
        assert!(long.is_known());
        assert_eq!(long.kind_name(), "malformed age stanza");
    }
}
