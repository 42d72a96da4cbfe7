//! Public-key recipients and identities (FORMAT.md §1.1, type `02`), through the `age` crate:
//! X25519 (`age1…`, `AGE-SECRET-KEY-1…`), `ssh-ed25519` and `ssh-rsa`. Each age stanza travels in a
//! zseal stanza; the wrapping is age's own code, so keys made by `age-keygen` and `ssh-keygen` work
//! unchanged and stanzas made by the real age tool unwrap here.

use std::io::{self, BufRead};
use std::str::FromStr;

use age::secrecy::ExposeSecret;
use rand_core::RngCore;

use super::c4gh::identity::{self as c4gh_id, X25519Keys};
use super::pq::{IDENTITY_PREFIX, RECIPIENT_PREFIX};
use super::prompt::Callbacks;
pub use super::prompt::{KeyPassphrase, NoPrompt};
use super::{AgeStanza, FileKey, Identity, PassphraseKdf, Recipient, Stanza};
use crate::error::{Error, Result};

pub use super::keygen::{generate, generate_pq, recipients_of};

/// Stanza type of an age recipient stanza whose arguments fit in 255 bytes each.
pub const STANZA_TYPE: u8 = 0x02;
/// Stanza type of an age recipient stanza with 2-byte argument lengths (FORMAT.md §1.1, type
/// `03`), for recipients such as `mlkem768x25519` whose arguments are longer.
pub const STANZA_TYPE_LONG: u8 = 0x03;
const MAX_TAG: usize = 64;
/// How an age plugin's identity begins (`AGE-PLUGIN-NAME-1…`).
pub(crate) const PLUGIN_IDENTITY_PREFIX: &str = "AGE-PLUGIN-";
const MAX_ARGS: usize = 16;

/// The age stanza tag of a file key wrapped by AWS KMS (FORMAT.md §1.1 "AWS KMS recipients";
/// the calls are `remote::kms`'s).
pub const KMS_TAG: &str = "zseal-aws-kms";

/// The age stanza tags this build opens itself (age's own and zseal's AWS KMS stanza); any other
/// age stanza is an age plugin's (FORMAT.md §1.1).
pub(crate) const NATIVE_TAGS: [&str; 6] = [
    "X25519",
    "scrypt",
    "ssh-ed25519",
    "ssh-rsa",
    super::pq::TAG,
    KMS_TAG,
];

/// True for the zseal stanza types that carry an age stanza.
pub fn is_age_stanza(kind: u8) -> bool {
    kind == STANZA_TYPE || kind == STANZA_TYPE_LONG
}

/// Stores an age stanza as the body of a zseal stanza: type `02`, or `03` when an argument is
/// longer than 255 bytes.
pub fn encode(s: &age_core::format::Stanza) -> Result<Stanza> {
    let bad = |what: &str| Error::InvalidOption(format!("age stanza {}: {what}", s.tag));
    if s.tag.is_empty() || s.tag.len() > MAX_TAG || s.args.len() > MAX_ARGS {
        return Err(bad("tag or arguments out of range"));
    }
    let long = s.args.iter().any(|a| a.len() > 255);
    let mut body = vec![s.tag.len() as u8];
    body.extend_from_slice(s.tag.as_bytes());
    body.push(s.args.len() as u8);
    for a in &s.args {
        if long {
            let len = u16::try_from(a.len())
                .ok()
                .filter(|&l| usize::from(l) <= super::MAX_STANZA_BODY)
                .ok_or_else(|| bad("argument over 8192 bytes"))?;
            body.extend_from_slice(&len.to_le_bytes());
        } else {
            body.push(a.len() as u8);
        }
        body.extend_from_slice(a.as_bytes());
    }
    body.extend_from_slice(&s.body);
    if body.len() > super::MAX_STANZA_BODY {
        return Err(bad("stanza over 8192 bytes"));
    }
    Ok(Stanza {
        kind: if long { STANZA_TYPE_LONG } else { STANZA_TYPE },
        body,
    })
}

/// Reads an age stanza back from a zseal stanza of type `02` or `03`.
pub fn decode(s: &Stanza) -> Result<age_core::format::Stanza> {
    let bad = || Error::InvalidHeader("malformed age recipient stanza".into());
    let long = match s.kind {
        STANZA_TYPE => false,
        STANZA_TYPE_LONG => true,
        _ => return Err(bad()),
    };
    let mut rest = &s.body[..];
    let mut take = |n: usize| -> Result<&[u8]> {
        if rest.len() < n {
            return Err(bad());
        }
        let (a, b) = rest.split_at(n);
        rest = b;
        Ok(a)
    };
    let text = |b: &[u8]| -> Result<String> {
        match std::str::from_utf8(b) {
            Ok(t) if !t.is_empty() && t.bytes().all(|c| c.is_ascii_graphic()) => Ok(t.to_string()),
            _ => Err(bad()),
        }
    };
    let tag_len = take(1)?[0] as usize;
    if tag_len > MAX_TAG {
        return Err(bad());
    }
    let tag = text(take(tag_len)?)?;
    let argc = take(1)?[0] as usize;
    if argc > MAX_ARGS {
        return Err(bad());
    }
    let mut args = Vec::with_capacity(argc);
    for _ in 0..argc {
        let len = if long {
            let l = take(2)?;
            usize::from(u16::from_le_bytes([l[0], l[1]]))
        } else {
            take(1)?[0] as usize
        };
        args.push(text(take(len)?)?);
    }
    let body = rest.to_vec();
    Ok(age_core::format::Stanza { tag, args, body })
}

fn to_age_key(k: &FileKey) -> age_core::format::FileKey {
    age_core::format::FileKey::new(Box::new(*k.expose()))
}

/// A public key to encrypt to: `age1…`, `ssh-ed25519 AAAA…`, `ssh-rsa AAAA…`, or an age
/// plugin's `age1NAME1…`.
pub struct AgeRecipient {
    inner: Wraps,
    text: String,
}

/// What wraps a recipient's file key: the `age` crate's recipients and zseal's post-quantum
/// one, or an age plugin (whose errors and labels are its own).
enum Wraps {
    Age(Box<dyn age::Recipient + Send + Sync>),
    Plugin(Box<super::plugin::PluginRecipient>),
}

/// True for an age plugin's recipient, `age1NAME1…`: a Bech32 string whose prefix (before its
/// last `1`) is `age1` and a name, not X25519's `age` nor post-quantum's `age1pq`.
pub(crate) fn is_plugin_recipient(s: &str) -> bool {
    let hrp = s.rfind('1').map_or("", |i| &s[..i]);
    s.starts_with("age1") && hrp.len() > 4 && hrp != "age1pq" && !s.contains(char::is_whitespace)
}

impl AgeRecipient {
    /// Parses one recipient as age and OpenSSH print them (a trailing comment is allowed); an
    /// age plugin's recipient can ask nothing ([`NoPrompt`]; see [`AgeRecipient::parse_with`]).
    pub fn parse(s: &str) -> Result<Self> {
        Self::parse_with(s, NoPrompt)
    }

    /// As [`AgeRecipient::parse`]; an age plugin's recipient (`age1NAME1…`, whose program
    /// `age-plugin-NAME` must be on `PATH`) shows its messages and asks its questions through
    /// `ask`.
    pub fn parse_with(s: &str, ask: impl KeyPassphrase) -> Result<Self> {
        let s = s.trim();
        if is_plugin_recipient(s) {
            return Ok(AgeRecipient {
                inner: Wraps::Plugin(Box::new(super::plugin::PluginRecipient::parse(s, ask)?)),
                text: s.to_string(),
            });
        }
        let inner: Box<dyn age::Recipient + Send + Sync> = if super::kms::is_kms_arn(s) {
            super::kms::kms_recipient(s)?
        } else if s.starts_with(RECIPIENT_PREFIX) {
            Box::new(super::pq::PqRecipient::parse(s)?)
        } else if s.starts_with("age1") {
            Box::new(age::x25519::Recipient::from_str(s).map_err(|e| {
                Error::InvalidOption(format!("invalid age recipient '{}': {e}", short(s)))
            })?)
        } else if s.starts_with("ssh-") {
            Box::new(age::ssh::Recipient::from_str(s).map_err(|e| {
                Error::InvalidOption(format!("invalid SSH recipient '{}': {e:?}", short(s)))
            })?)
        } else if looks_secret(s) {
            return Err(Error::InvalidOption(
                "a recipient is a secret key (an identity): encrypt to its public key instead \
                 (`zseal keygen -y KEYFILE` prints an age key's; an SSH key's is its .pub line); \
                 the key is not repeated here"
                    .into(),
            ));
        } else if s.starts_with(crate::crypto::c4gh::file::PUBLIC_BEGIN) {
            return Err(Error::InvalidOption(
                "a crypt4gh public key (crypt4gh-keygen's) seals crypt4gh files, not a zseal \
                 container or an age file: write the crypt4gh format to it, or use an age1…, \
                 ssh-ed25519 or ssh-rsa key"
                    .into(),
            ));
        } else if std::path::Path::new(s).is_file() {
            return Err(Error::InvalidOption(format!(
                "unknown recipient '{}': it is a file; a file of recipients is read with -R FILE \
                 (recipients_file= in Python)",
                short(s)
            )));
        } else {
            return Err(Error::InvalidOption(format!(
                "unknown recipient '{}': use an age1… or age1pq1… key, an age plugin's age1NAME1…, or an ssh-ed25519 / ssh-rsa public key",
                short(s)
            )));
        };
        Ok(AgeRecipient {
            inner: Wraps::Age(inner),
            text: s.to_string(),
        })
    }

    /// The recipient as given.
    pub fn as_str(&self) -> &str {
        &self.text
    }
}

/// The start of a long key (its first 40 characters), for messages.
pub(crate) fn short(s: &str) -> String {
    if s.len() > 40 {
        format!(
            "{}…",
            &s[..s.char_indices().nth(40).map_or(s.len(), |(i, _)| i)]
        )
    } else {
        s.to_string()
    }
}

impl Recipient for AgeRecipient {
    /// The same stanzas for every format; age draws its ephemeral keys from the OS RNG itself.
    fn wrap_file_key(
        &self,
        file_key: &FileKey,
        _kdf: PassphraseKdf,
        _rng: &mut dyn RngCore,
    ) -> Result<Vec<AgeStanza>> {
        let key = to_age_key(file_key);
        let (stanzas, _labels) = match &self.inner {
            Wraps::Age(r) => r.wrap_file_key(&key).map_err(|e| {
                Error::InvalidOption(format!("cannot encrypt to {}: {e}", short(&self.text)))
            })?,
            Wraps::Plugin(p) => {
                age::Recipient::wrap_file_key(&**p, &key).map_err(|e| p.wrap_error(e))?
            }
        };
        Ok(stanzas)
    }

    fn post_quantum(&self) -> bool {
        match &self.inner {
            Wraps::Age(_) => self.text.starts_with(RECIPIENT_PREFIX),
            Wraps::Plugin(p) => p.post_quantum(),
        }
    }

    fn labels(&self) -> Vec<String> {
        match &self.inner {
            Wraps::Age(_) if self.post_quantum() => vec![super::pq::LABEL.to_string()],
            Wraps::Age(_) => Vec::new(),
            Wraps::Plugin(p) => p.labels(),
        }
    }
}

/// The recipients of the file at `path` ([`read_recipients`]; `-R FILE`, `recipients_file=`).
pub fn read_recipients_file(path: &std::path::Path) -> Result<Vec<AgeRecipient>> {
    read_recipients_file_with(path, NoPrompt)
}

/// As [`read_recipients_file`], an age plugin's recipient asking through `ask`.
pub fn read_recipients_file_with(
    path: &std::path::Path,
    ask: impl KeyPassphrase,
) -> Result<Vec<AgeRecipient>> {
    let name = path.display().to_string();
    let file = std::fs::File::open(path).map_err(|e| {
        let e = crate::io::without_path(&e);
        Error::InvalidOption(format!("cannot open recipients file {name}: {e}"))
    })?;
    read_recipients_with(io::BufReader::new(file), &name, ask)
}

/// Reads recipients, one per line; blank lines and `#` comments are skipped (an authorized_keys
/// file works, minus its options).
pub fn read_recipients(r: impl BufRead, origin: &str) -> Result<Vec<AgeRecipient>> {
    read_recipients_with(r, origin, NoPrompt)
}

/// As [`read_recipients`], an age plugin's recipient asking through `ask`.
pub fn read_recipients_with(
    r: impl BufRead,
    origin: &str,
    ask: impl KeyPassphrase,
) -> Result<Vec<AgeRecipient>> {
    let mut out = Vec::new();
    for (n, line) in r.lines().enumerate() {
        let line = line?;
        let line = line.trim();
        if line.is_empty() || line.starts_with('#') {
            continue;
        }
        out.push(
            AgeRecipient::parse_with(strip_key_options(line), ask.clone())
                .map_err(|e| Error::InvalidOption(format!("{origin}:{}: {e}", n + 1)))?,
        );
    }
    if out.is_empty() {
        return Err(Error::InvalidOption(format!("{origin} holds no recipient")));
    }
    Ok(out)
}

/// An authorized_keys line may start with options (`from="…",no-pty ssh-ed25519 AAAA…`): the key
/// starts at its type.
fn strip_key_options(line: &str) -> &str {
    if line.starts_with("age1") || line.starts_with("ssh-") {
        return line;
    }
    ["ssh-ed25519 ", "ssh-rsa "]
        .iter()
        .filter_map(|t| line.find(&format!(" {t}")).map(|i| &line[i + 1..]))
        .next()
        .unwrap_or(line)
}

/// A private key to decrypt with.
pub struct AgeIdentity {
    pub(crate) inner: Unwraps,
    /// For an SSH key, the recipient its stanzas name (its key tag), read from the public half
    /// that an OpenSSH key file keeps in clear: what `rekey` checks without asking for the
    /// passphrase of an encrypted key again.
    pub(crate) names: Option<super::StanzaRecipient>,
    /// The X25519 keys it holds, for crypt4gh files (FORMAT.md §13.7).
    pub(crate) x25519: X25519Keys,
}

/// What unwraps an identity's stanzas: the `age` crate's identities and zseal's post-quantum
/// one, an age plugin, or nothing (a crypt4gh key file, whose key opens crypt4gh files only).
pub(crate) enum Unwraps {
    Age(Box<dyn age::Identity>),
    Plugin(super::plugin::PluginIdentity),
    Nothing,
}

impl AgeIdentity {
    fn age(inner: Box<dyn age::Identity>) -> Self {
        AgeIdentity {
            inner: Unwraps::Age(inner),
            names: None,
            x25519: X25519Keys::None,
        }
    }
}

impl Identity for AgeIdentity {
    fn stanza_recipient(&self) -> Option<super::StanzaRecipient> {
        self.names.clone()
    }

    fn x25519_keys(&self) -> Result<Vec<super::c4gh::SecretKey>> {
        self.x25519.get()
    }

    /// Every age stanza of the header but the ones only a container holds (its passphrase's,
    /// a record of a type this build does not read), which no age key opens.
    fn unwrap_stanzas(&self, stanzas: &[AgeStanza]) -> Result<Option<FileKey>> {
        let container_only =
            |s: &AgeStanza| s.tag == super::RECORD_TAG || s.tag == super::passphrase::ARGON2_TAG;
        let ours: Vec<AgeStanza> = (stanzas.iter().filter(|s| !container_only(s)))
            .map(super::copy_stanza)
            .collect();
        let inner = match &self.inner {
            Unwraps::Age(inner) => inner,
            Unwraps::Plugin(p) => return p.unwrap(&ours),
            Unwraps::Nothing => return Ok(None),
        };
        match inner.unwrap_stanzas(&ours) {
            None => Ok(None),
            Some(Ok(k)) => Ok(Some(FileKey::from_bytes(*k.expose_secret()))),
            // An encrypted SSH key whose passphrase was wrong: the file is not at fault.
            Some(Err(age::DecryptError::KeyDecryptionFailed)) => Err(Error::InvalidOption(
                "the passphrase-protected OpenSSH identity could not be decrypted: its passphrase was wrong".into(),
            )),
            // A key service that failed (AWS KMS): its own message, naming the key.
            Some(Err(age::DecryptError::Io(e))) => Err(Error::from(e)),
            Some(Err(e)) => Err(Error::InvalidHeader(format!(
                "a recipient stanza failed to unwrap: {e}"
            ))),
        }
    }
}

/// The recipient an OpenSSH private key's stanzas name, from its public half (kept in clear in
/// the key file, also when the key is encrypted: [`ssh_recipient_of`]); `None` for a key age
/// cannot encrypt to.
fn ssh_stanza_recipient(data: &[u8]) -> Option<super::StanzaRecipient> {
    let recipient = AgeRecipient::parse(&super::keygen::ssh_recipient_of(data, "").ok()?).ok()?;
    super::StanzaRecipient::of(&recipient).ok().flatten()
}

/// Reads an identity file: age's (`AGE-SECRET-KEY-1…` lines, `#` comments) or an OpenSSH private
/// key (`ssh-ed25519`, `ssh-rsa`; an encrypted one asks `ask` for its passphrase).
pub fn read_identities(
    data: &[u8],
    origin: &str,
    ask: impl KeyPassphrase,
) -> Result<Vec<AgeIdentity>> {
    let bad = |e: &dyn std::fmt::Display| {
        Error::InvalidOption(format!("cannot read identity file {origin}: {e}"))
    };
    let text = String::from_utf8_lossy(data);
    if c4gh_id::is_private_key_file(&text) {
        return Ok(vec![AgeIdentity {
            inner: Unwraps::Nothing,
            names: None,
            x25519: c4gh_id::private_key_file(&text, origin, &ask)?,
        }]);
    }
    if text.trim_start().starts_with("-----BEGIN") {
        let id = age::ssh::Identity::from_buffer(io::Cursor::new(data), Some(origin.to_string()))
            .map_err(|e| bad(&e))?;
        if let age::ssh::Identity::Unsupported(k) = &id {
            return Err(bad(&format!(
                "unsupported SSH key ({k:?}): use ssh-ed25519 or ssh-rsa"
            )));
        }
        if let (age::ssh::Identity::Encrypted(_), Some(advice)) = (&id, ask.refusal()) {
            return Err(bad(&format!(
                "it is an OpenSSH key protected by a passphrase: {advice}"
            )));
        }
        return Ok(vec![AgeIdentity {
            x25519: X25519Keys::ssh(data, origin, ask.clone()),
            inner: Unwraps::Age(Box::new(id.with_callbacks(Callbacks(ask)))),
            names: ssh_stanza_recipient(data),
        }]);
    }
    // Post-quantum identities (AGE-SECRET-KEY-PQ-1…) and age plugins' (AGE-PLUGIN-NAME-1…,
    // whose plugin must be on PATH) are read here, the rest by age.
    let mut out = Vec::new();
    let mut rest = zeroize::Zeroizing::new(String::new());
    let mut more = false;
    let mut x25519 = Vec::new();
    for (n, line) in text.lines().enumerate() {
        match line.trim() {
            l if l.starts_with(IDENTITY_PREFIX) => {
                let id = super::pq::PqIdentity::parse(l)
                    .map_err(|e| bad(&format!("line {}: {e}", n + 1)))?;
                out.push(AgeIdentity::age(Box::new(id)));
                rest.push('\n');
            }
            l if l.starts_with(PLUGIN_IDENTITY_PREFIX) => {
                let id = super::plugin::PluginIdentity::parse(l, ask.clone())
                    .map_err(|e| bad(&format!("line {}: {e}", n + 1)))?;
                out.push(AgeIdentity {
                    inner: Unwraps::Plugin(id),
                    names: None,
                    x25519: X25519Keys::None,
                });
                rest.push('\n');
            }
            l if l.starts_with("age1") || l.starts_with("ssh-") => {
                return Err(bad(&format!(
                    "line {}: this is a public key (a recipient, for -r/-R), not the secret key \
                     that opens a file: give the identity file (for an SSH key, the file \
                     without .pub)",
                    n + 1
                )));
            }
            l => {
                if l.starts_with("AGE-SECRET-KEY-1") {
                    x25519.push(X25519Keys::age_line(l, origin).map_err(|e| bad(&e))?);
                }
                more |= !l.is_empty() && !l.starts_with('#');
                rest.push_str(l);
                rest.push('\n');
            }
        }
    }
    if more {
        let file = age::IdentityFile::from_buffer(io::Cursor::new(rest.as_bytes()))
            .map_err(|e| bad(&e))?;
        let ids = file.into_identities().map_err(|e| bad(&e))?;
        // One X25519 key per AGE-SECRET-KEY-1 line, in line order, as age reads them.
        let keys = x25519
            .into_iter()
            .chain(std::iter::repeat(X25519Keys::None));
        out.extend(ids.into_iter().zip(keys).map(|(id, x25519)| AgeIdentity {
            x25519,
            ..AgeIdentity::age(id)
        }));
    }
    if out.is_empty() {
        return Err(bad(
            &"no AGE-SECRET-KEY-1, AGE-SECRET-KEY-PQ-1 or AGE-PLUGIN-NAME-1 line",
        ));
    }
    Ok(out)
}

/// Where an identity comes from: a file (age identities, or an OpenSSH private key), or an
/// identity given as text (`AGE-SECRET-KEY-1…`; the Python package takes them, the command line
/// does not, since an argument is visible to every user of the machine).
pub enum IdentitySource {
    /// An identity file.
    File(std::path::PathBuf),
    /// Identity lines given as text.
    Text(zeroize::Zeroizing<String>),
}

impl IdentitySource {
    /// A file path, or the identities themselves: an entry that holds a secret key
    /// (`AGE-SECRET-KEY-…` anywhere, an OpenSSH private key) or several lines is key text
    /// (`open("me.key").read()`, comments and all), never a path that a message would echo.
    pub fn from_entry(entry: &str) -> IdentitySource {
        match looks_secret(entry) || entry.contains('\n') {
            true => IdentitySource::Text(zeroize::Zeroizing::new(entry.trim().to_string())),
            false => IdentitySource::File(entry.into()),
        }
    }
}

/// True when `s` holds secret key material (an age secret key, an OpenSSH private key), which
/// a message must never repeat.
pub fn looks_secret(s: &str) -> bool {
    s.contains("AGE-SECRET-KEY-") || s.contains("PRIVATE KEY-----")
}

/// The one identity loader of every front end: reads each source's identities, asking `ask`
/// (the front end's callback: a terminal prompt, a Python callable) for the passphrase of an
/// encrypted SSH key when one is used. A file is read into a buffer that is wiped afterwards.
pub fn load_identities(
    sources: &[IdentitySource],
    ask: impl KeyPassphrase,
) -> Result<Vec<AgeIdentity>> {
    let mut out = Vec::new();
    for source in sources {
        match source {
            IdentitySource::Text(t) => out.extend(read_identities(
                t.as_bytes(),
                "the identity string",
                ask.clone(),
            )?),
            IdentitySource::File(p) if super::kms::names_kms_key(p) => {
                out.push(super::kms::kms_identity(p)?)
            }
            IdentitySource::File(p) => {
                let name = p.display().to_string();
                let data = zeroize::Zeroizing::new(std::fs::read(p).map_err(|e| {
                    let e = crate::io::without_path(&e);
                    Error::InvalidOption(format!("cannot read identity file {name}: {e}"))
                })?);
                out.extend(read_identities(&data, &name, ask.clone())?);
            }
        }
    }
    Ok(out)
}

#[cfg(test)]
mod tests {
    use super::*;

    /// A post-quantum age stanza (`mlkem768x25519`: a 1,494-character argument) travels in a
    /// type-03 stanza and comes back unchanged; short arguments keep type 02.
    #[test]
    fn long_arguments_use_type_03_and_round_trip() {
        let long = "A".repeat(1494);
        let s = age_core::format::Stanza {
            tag: "mlkem768x25519".into(),
            args: vec![long.clone(), "short".into()],
            body: vec![5; 32],
        };
        let z = encode(&s).unwrap();
        assert_eq!(z.kind, STANZA_TYPE_LONG);
        assert_eq!(&z.body[..15], b"\x0emlkem768x25519");
        assert_eq!(&z.body[15..18], &[2, 0xd6, 0x05]); // argc 2, first length 1494 LE
        let back = decode(&z).unwrap();
        assert_eq!((back.tag, back.args, back.body), (s.tag, s.args, s.body));
        let too_long = age_core::format::Stanza {
            tag: "mlkem768x25519".into(),
            args: vec!["A".repeat(9000)],
            body: vec![],
        };
        assert!(encode(&too_long).is_err());
        // A type-03 stanza cut inside a 2-byte length is malformed.
        let cut = Stanza {
            kind: STANZA_TYPE_LONG,
            body: z.body[..17].to_vec(),
        };
        assert!(decode(&cut).is_err());
    }

    #[test]
    fn stanza_encoding_round_trips_and_rejects_garbage() {
        let s = age_core::format::Stanza {
            tag: "X25519".into(),
            args: vec!["TEiF0ypqr+bpvcqXNyCVJpL7OuwPdVwPL7KQEbFDOCc".into()],
            body: vec![7; 32],
        };
        let z = encode(&s).unwrap();
        assert_eq!(z.kind, STANZA_TYPE);
        assert_eq!(&z.body[..8], b"\x06X25519\x01");
        let back = decode(&z).unwrap();
        assert_eq!((back.tag, back.args, back.body), (s.tag, s.args, s.body));
        for bad in [
            &b""[..],
            b"\x07X25519",
            b"\x06X25519\x02\x01A",
            b"\x02X \x00",
        ] {
            assert!(
                decode(&Stanza {
                    kind: 2,
                    body: bad.to_vec()
                })
                .is_err(),
                "{bad:?}"
            );
        }
    }

    /// The bounds of both directions at their edges (found by cargo-mutants: only well-formed
    /// stanzas from age's own recipients reached `encode`). A tag of 1 to 64 characters, at most
    /// 16 arguments, an argument of 255 bytes in type 02 and of 256 in type 03, a stanza of at
    /// most 8,192 bytes; the reader refuses what the writer would not make.
    #[test]
    fn stanza_bounds_hold_at_their_edges() {
        let st = |tag: &str, args: Vec<String>, body: usize| age_core::format::Stanza {
            tag: tag.into(),
            args,
            body: vec![1; body],
        };
        let arg = |n: usize| "a".repeat(n);
        assert!(encode(&st("", vec![], 0)).is_err(), "empty tag");
        assert!(encode(&st(&arg(64), vec![], 0)).is_ok(), "64-character tag");
        assert!(
            encode(&st(&arg(65), vec![], 0)).is_err(),
            "65-character tag"
        );
        assert!(
            encode(&st("t", vec![arg(1); 16], 0)).is_ok(),
            "16 arguments"
        );
        assert!(
            encode(&st("t", vec![arg(1); 17], 0)).is_err(),
            "17 arguments"
        );
        assert_eq!(
            encode(&st("t", vec![arg(255)], 0)).unwrap().kind,
            STANZA_TYPE
        );
        assert_eq!(
            encode(&st("t", vec![arg(256)], 0)).unwrap().kind,
            STANZA_TYPE_LONG
        );
        // Tag length, tag, argument count: 3 bytes before the body.
        let max = crate::crypto::MAX_STANZA_BODY;
        assert_eq!(encode(&st("t", vec![], max - 3)).unwrap().body.len(), max);
        assert!(encode(&st("t", vec![], max - 2)).is_err(), "8,193 bytes");
        for s in [
            st(&arg(64), vec![arg(1); 16], 0),
            st("t", vec![arg(255)], 0),
            st("t", vec![arg(256), arg(3)], 5),
        ] {
            let back = decode(&encode(&s).unwrap()).unwrap();
            assert_eq!((back.tag, back.args, back.body), (s.tag, s.args, s.body));
        }
        let raw = |body: Vec<u8>| Stanza {
            kind: STANZA_TYPE,
            body,
        };
        let mut tag65 = vec![65];
        tag65.extend(arg(65).bytes());
        tag65.push(0);
        assert!(decode(&raw(tag65)).is_err(), "65-character tag");
        let mut argc17 = b"\x01t\x11".to_vec();
        argc17.extend([1, b'a'].repeat(17));
        assert!(decode(&raw(argc17)).is_err(), "17 arguments");
        assert!(decode(&Stanza {
            kind: 4,
            body: b"\x01t\x00".to_vec()
        })
        .is_err());
    }
}
