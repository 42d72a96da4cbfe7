//! SSH signatures (FORMAT.md §12, issue 36): an OpenSSH private key signs in OpenSSH's SSHSIG
//! format (`PROTOCOL.sshsig`, what `ssh-keygen -Y sign` writes), namespace `zseal`, SHA-512,
//! through RustCrypto's `ssh-key`. The message is given by its SHA-512, computed as the bytes
//! went by, so that a large file is never held in memory: this module only lays out the bytes
//! SSHSIG signs (its "signed data") around that hash, and `ssh-key` does the signing.

use std::io::{self, Read};
use std::path::Path;

use sha2::{Digest as _, Sha512};
use signature::Signer as _;
use ssh_encoding::{Decode as _, Encode as _};
use ssh_key::{HashAlg, LineEnding, PrivateKey, PublicKey, SshSig};

use super::recipients::KeyPassphrase;
use crate::error::{Error, Result};

/// The SSHSIG namespace of every zseal signature: `ssh-keygen -Y verify -n zseal` checks one.
pub const NAMESPACE: &str = "zseal";

/// An OpenSSH key that signs: a private key (ed25519, ecdsa P-256/384, rsa; unlocked if it was
/// encrypted; ssh-key 0.6.7 reads only some P-521 keys), or a public key whose private key
/// ssh-agent holds (as `ssh-keygen -Y sign -f KEY.pub` uses the agent). Two are equal when
/// their public keys are.
#[derive(Clone)]
pub struct SigningKey {
    key: Held,
}

#[derive(Clone)]
enum Held {
    /// Boxed: the private key is larger than the agent's case, and a few keys are held at once.
    Here(Box<PrivateKey>),
    /// In the agent listening at the socket (`SSH_AUTH_SOCK` when the key was read).
    Agent(PublicKey, std::path::PathBuf),
}

impl PartialEq for SigningKey {
    fn eq(&self, other: &Self) -> bool {
        self.public().key_data() == other.public().key_data()
    }
}

impl Eq for SigningKey {}

impl std::fmt::Debug for SigningKey {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.debug_struct("SigningKey")
            .field("fingerprint", &self.fingerprint())
            .finish_non_exhaustive()
    }
}

impl SigningKey {
    /// Reads the OpenSSH private key at `path`; an encrypted one asks `ask` for its passphrase
    /// (a wrong one, or none, is an error naming the key).
    pub fn read(path: &Path, ask: &impl KeyPassphrase) -> Result<SigningKey> {
        let name = path.display();
        let text = std::fs::read_to_string(path)
            .map_err(|e| io::Error::new(e.kind(), format!("{name}: {e}")))?;
        SigningKey::parse(&text, &name.to_string(), ask)
    }

    /// A key from the text of an OpenSSH private key file, `name` saying where it came from; or
    /// of a public key, whose private key must then be in ssh-agent (`SSH_AUTH_SOCK`).
    pub fn parse(text: &str, name: &str, ask: &impl KeyPassphrase) -> Result<SigningKey> {
        if let Ok(public) = PublicKey::from_openssh(text.trim()) {
            return SigningKey::in_agent(public, name);
        }
        let key = PrivateKey::from_openssh(text).map_err(|e| {
            Error::InvalidOption(format!(
                "{name}: not an OpenSSH private key ({e}): --sign takes a key ssh-keygen wrote \
                 (-----BEGIN OPENSSH PRIVATE KEY-----)"
            ))
        })?;
        let key = if key.is_encrypted() {
            if let Some(advice) = ask.refusal() {
                return Err(Error::InvalidOption(format!(
                    "{name} is passphrase-protected: {advice}"
                )));
            }
            let description = format!("passphrase for the SSH key {name}");
            let pass = ask.passphrase(&description).ok_or_else(|| {
                Error::InvalidOption(format!(
                    "{name} is passphrase-protected and no passphrase was given"
                ))
            })?;
            key.decrypt(pass.as_bytes())
                .map_err(|_| Error::InvalidOption(format!("{name}: wrong passphrase")))?
        } else {
            key
        };
        Ok(SigningKey {
            key: Held::Here(Box::new(key)),
        })
    }

    /// The key `public` (read from `name`) in the ssh-agent of `SSH_AUTH_SOCK`, which must hold
    /// its private key.
    fn in_agent(public: PublicKey, name: &str) -> Result<SigningKey> {
        let not_here = |why: String| {
            Error::InvalidOption(format!(
                "{name} is a public key, not an OpenSSH private key, and {why}: give the private \
                 key file, or add it to ssh-agent (ssh-add) and give its .pub"
            ))
        };
        let socket = std::env::var_os("SSH_AUTH_SOCK")
            .ok_or_else(|| not_here("no ssh-agent is running (SSH_AUTH_SOCK is not set)".into()))?;
        let socket = std::path::PathBuf::from(socket);
        let keys = ssh_agent_client_rs::Client::connect(&socket)
            .and_then(|mut c| c.list_all_identities())
            .map_err(|e| not_here(format!("ssh-agent could not be asked ({e})")))?;
        let held = keys.iter().any(|k| match k {
            ssh_agent_client_rs::Identity::PublicKey(k) => k.key_data() == public.key_data(),
            ssh_agent_client_rs::Identity::Certificate(_) => false,
        });
        if !held {
            return Err(not_here("ssh-agent does not hold its private key".into()));
        }
        Ok(SigningKey {
            key: Held::Agent(public, socket),
        })
    }

    fn public(&self) -> &PublicKey {
        match &self.key {
            Held::Here(k) => k.public_key(),
            Held::Agent(p, _) => p,
        }
    }

    /// The public key's SHA-256 fingerprint, as `ssh-keygen -l` prints it (`SHA256:…`).
    pub fn fingerprint(&self) -> String {
        self.public().fingerprint(HashAlg::Sha256).to_string()
    }

    /// The public key in OpenSSH's one-line form (for an allowed_signers line).
    pub fn public_key(&self) -> String {
        self.public().to_openssh().unwrap_or_default()
    }

    /// Signs the message whose SHA-512 is `digest`: the SSHSIG, armored as `ssh-keygen -Y sign`
    /// writes it (`-----BEGIN SSH SIGNATURE-----`).
    pub fn sign_sha512(&self, digest: &[u8; 64]) -> Result<String> {
        self.sshsig(digest)?
            .to_pem(LineEnding::LF)
            .map_err(|e| Error::InvalidOption(format!("signing failed: {e}")))
    }

    /// As [`SigningKey::sign_sha512`], the SSHSIG as its binary blob (what a signature frame
    /// holds, FORMAT.md §12.2).
    pub fn sign_blob(&self, digest: &[u8; 64]) -> Result<Vec<u8>> {
        let mut blob = Vec::new();
        self.sshsig(digest)?
            .encode(&mut blob)
            .map_err(|e| Error::InvalidOption(format!("signing failed: {e}")))?;
        Ok(blob)
    }

    fn sshsig(&self, digest: &[u8; 64]) -> Result<SshSig> {
        let data = signed_data(digest);
        let signature = match &self.key {
            Held::Here(key) => match key.key_data().rsa() {
                Some(rsa) => sign_rsa(rsa, &data),
                None => key.try_sign(&data),
            }
            .map_err(|e| Error::InvalidOption(format!("signing failed: {e}")))?,
            // The agent signs RSA keys with SHA-512 (rsa-sha2-512), as SSHSIG asks.
            Held::Agent(public, socket) => ssh_agent_client_rs::Client::connect(socket)
                .and_then(|mut c| c.sign(public.clone(), &data))
                .map_err(|e| {
                    Error::InvalidOption(format!(
                        "ssh-agent did not sign with {} ({e})",
                        public.fingerprint(HashAlg::Sha256)
                    ))
                })?,
        };
        SshSig::new(
            self.public().key_data().clone(),
            NAMESPACE,
            HashAlg::Sha512,
            signature,
        )
        .map_err(|e| Error::InvalidOption(format!("signing failed: {e}")))
    }
}

/// The statement a signed container's signature is made over (FORMAT.md §12.1): the plaintext's
/// length and whole-file BLAKE3 (hex, as `b3sum` prints it), one per line, each ending in `\n`.
pub fn statement(plaintext_len: u64, blake3_hex: &str) -> String {
    format!("zseal signed plaintext v1\nlength {plaintext_len}\nblake3 {blake3_hex}\n")
}

/// [`statement`] of the BLAKE3 digest's bytes (a final frame's `digest`).
pub(crate) fn statement_of(plaintext_len: u64, blake3: &[u8; 32]) -> String {
    statement(
        plaintext_len,
        &crate::hash::to_hex(crate::hash::HashAlg::Blake3, blake3),
    )
}

/// A signature found in a container (FORMAT.md §12.2): an SSHSIG in the namespace `zseal`,
/// not yet checked against anyone.
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct Signature {
    sig: SshSig,
}

impl Signature {
    /// Parses the binary SSHSIG blob of a signature frame; it must be in the namespace `zseal`.
    pub fn from_blob(blob: &[u8]) -> Result<Signature> {
        let sig = SshSig::decode(&mut &blob[..])
            .map_err(|e| Error::Damaged(format!("a signature frame holds no SSHSIG ({e})")))?;
        Signature::checked(sig)
    }

    /// Parses an armored SSHSIG (`-----BEGIN SSH SIGNATURE-----`, what `ssh-keygen -Y sign`
    /// writes); it must be in the namespace `zseal`.
    pub fn from_pem(armored: &str) -> Result<Signature> {
        let sig = SshSig::from_pem(armored.trim()).map_err(|e| {
            Error::InvalidOption(format!("the signature does not parse as an SSHSIG ({e})"))
        })?;
        Signature::checked(sig)
    }

    fn checked(sig: SshSig) -> Result<Signature> {
        if sig.namespace() != NAMESPACE {
            return Err(Error::Damaged(format!(
                "the signature is for the namespace '{}', not '{NAMESPACE}'",
                sig.namespace()
            )));
        }
        Ok(Signature { sig })
    }

    /// The signer's public key's SHA-256 fingerprint (`SHA256:…`, as `ssh-keygen -l` prints).
    pub fn fingerprint(&self) -> String {
        self.sig
            .public_key()
            .fingerprint(HashAlg::Sha256)
            .to_string()
    }

    /// The signer's public key in OpenSSH's one-line form.
    pub fn public_key(&self) -> String {
        PublicKey::from(self.sig.public_key().clone())
            .to_openssh()
            .unwrap_or_default()
    }

    /// Checks that this signature is over `message` by the key it names (not who that is: a
    /// [`Signers`] check says whether it is one of those required).
    pub fn check_own(&self, message: &[u8]) -> Result<()> {
        PublicKey::from(self.sig.public_key().clone())
            .verify(NAMESPACE, message, &self.sig)
            .map_err(|_| {
                Error::Signature(format!(
                    "the signature by {} is not over this file's statement",
                    self.fingerprint()
                ))
            })
    }

    /// The binary SSHSIG blob.
    pub fn to_blob(&self) -> Vec<u8> {
        let mut blob = Vec::new();
        // Encoding into a Vec cannot fail for a signature that was decoded or made.
        let _ = self.sig.encode(&mut blob);
        blob
    }

    /// Armored as `ssh-keygen -Y sign` writes it, for `ssh-keygen -Y verify -s`.
    pub fn to_pem(&self) -> String {
        self.sig.to_pem(LineEnding::LF).unwrap_or_default()
    }
}

/// Who may have signed: public keys given one by one (`--signer`), and the entries of an
/// OpenSSH `allowed_signers` file (`--allowed-signers`) that allow the namespace `zseal`.
#[derive(Clone, Debug, Default, PartialEq, Eq)]
pub struct Signers {
    /// Each allowed key, with a name for messages (its principals, or where it came from).
    keys: Vec<(String, PublicKey)>,
    /// A signer was asked for ([`Self::require`], or any key or file added), even if no key
    /// came of it: such a set accepts no file, it never means "nothing is required".
    required: bool,
}

impl Signers {
    /// Adds a public key: an OpenSSH one-line key (`ssh-ed25519 AAAA… comment`), or a file that
    /// holds one (`id_ed25519.pub`).
    pub fn add_key(&mut self, key_or_file: &str) -> Result<()> {
        self.required = true;
        if crate::crypto::recipients::looks_secret(key_or_file) {
            return self.add_key_text(key_or_file, "the key given");
        }
        match std::fs::read_to_string(key_or_file) {
            Ok(text) => self.add_key_text(&text, key_or_file),
            Err(_) => self.add_key_text(key_or_file, "the key given"),
        }
    }

    /// Adds the public key `text` (an OpenSSH one-line key), named `name` in messages (a path,
    /// "standard input"); a key given as itself is then named by its comment, if it has one.
    /// A private key is refused without being repeated.
    pub fn add_key_text(&mut self, text: &str, name: &str) -> Result<()> {
        self.required = true;
        if crate::crypto::recipients::looks_secret(text) {
            return Err(Error::InvalidOption(format!(
                "{name}: this is a private key; a signer is given by its public key (the line of \
                 its .pub file); the key is not repeated here"
            )));
        }
        let key = PublicKey::from_openssh(text.trim()).map_err(|e| {
            Error::InvalidOption(format!(
                "{name}: not an OpenSSH public key or a file holding one ({e})"
            ))
        })?;
        let name = match (name, key.comment()) {
            ("the key given" | "standard input", c) if !c.is_empty() => c.to_string(),
            (name, _) => name.to_string(),
        };
        self.keys.push((name, key));
        Ok(())
    }

    /// Adds the entries of an OpenSSH `allowed_signers` file (`ssh-keygen(1)`, ALLOWED SIGNERS):
    /// `principals [options] key`, one a line, `#` comments. An entry whose `namespaces="…"`
    /// pattern list does not allow `zseal` (OpenSSH's rules: `*` and `?`, and a matching
    /// `!pattern` refuses whatever else matches) is left out. A line `ssh-keygen -Y verify`
    /// would not use (two `namespaces=` clauses, an unquoted list, an unknown option) is refused,
    /// naming the line, and so are `cert-authority` entries and validity times (zseal checks no
    /// certificates or clocks). A file that leaves no key allowed to sign for `zseal` (empty, only
    /// comments, or written for git's `namespaces="git"`) is refused: it would require a
    /// signature no one can make.
    pub fn add_allowed_signers(&mut self, path: &Path) -> Result<()> {
        self.required = true;
        let name = path.display();
        let text = std::fs::read_to_string(path)
            .map_err(|e| io::Error::new(e.kind(), format!("{name}: {e}")))?;
        self.add_allowed_signers_text(&name.to_string(), &text)
    }

    /// [`Self::add_allowed_signers`] of the file's text, `name` naming it in messages.
    pub fn add_allowed_signers_text(&mut self, name: &str, text: &str) -> Result<()> {
        self.required = true;
        let (mut added, mut elsewhere) = (0, Vec::new());
        for (n, line) in text.lines().enumerate() {
            let line = line.trim();
            if line.is_empty() || line.starts_with('#') {
                continue;
            }
            let bad = |why: &str| Error::InvalidOption(format!("{name}:{}: {why}", n + 1));
            let (principals, rest) = split_field(line);
            let rest = rest.trim_start();
            // The options, when the next field is not the key itself.
            let (options, key) = match PublicKey::from_openssh(rest) {
                Ok(k) => ("", k),
                Err(_) => {
                    let (options, key) = split_field(rest);
                    let key = PublicKey::from_openssh(key.trim_start())
                        .map_err(|e| bad(&format!("no public key ({e})")))?;
                    (options, key)
                }
            };
            match entry_namespaces(options).map_err(|why| bad(&why))? {
                Some(list) if !matches_pattern_list(list, NAMESPACE) => {
                    elsewhere.push(format!("line {}: namespaces=\"{list}\"", n + 1))
                }
                _ => {
                    self.keys.push((principals.to_string(), key));
                    added += 1;
                }
            }
        }
        if added > 0 {
            return Ok(());
        }
        Err(Error::InvalidOption(match elsewhere.is_empty() {
            true => format!("{name}: the file lists no signer, so no signature could satisfy it"),
            false => format!(
                "{name}: no entry allows the namespace '{NAMESPACE}' ({}), so no signature could \
                 satisfy it: add {NAMESPACE} to a signer's namespaces=\"…\" or give the key with --signer",
                elsewhere.join("; ")
            ),
        }))
    }

    /// Marks a signer as required even before (or without) a key: a set so marked and left
    /// empty accepts no file. A front end calls it when its user asked for signers at all.
    pub fn require(&mut self) {
        self.required = true;
    }

    /// True when a signer was asked for: every file read must then carry a good signature by one
    /// of these keys (and none can, when no key was given).
    pub fn is_required(&self) -> bool {
        self.required
    }

    /// True when no key was given (see [`Self::is_required`] for whether one was asked for).
    pub fn is_empty(&self) -> bool {
        self.keys.is_empty()
    }

    /// Checks `armored`, an SSHSIG, over `message`: it must be a `zseal` signature by one of
    /// these keys. Returns that key's name and fingerprint; otherwise the reason.
    pub fn check(&self, message: &[u8], armored: &str) -> Result<String> {
        self.check_signature(message, &Signature::from_pem(armored)?)
    }

    /// Checks a plaintext's `statement` (FORMAT.md §12.1) against `found`, the signatures of
    /// its container: one of them must be by one of these keys and good. Returns which one and
    /// who signed it; otherwise every reason, one per signature (or that there is none).
    pub fn check_statement(&self, text: &str, found: &[Signature]) -> Result<(usize, String)> {
        let mut why = Vec::new();
        for (i, sig) in found.iter().enumerate() {
            match self.judge(text.as_bytes(), sig) {
                Ok(who) => return Ok((i, who)),
                Err(reason) => why.push(reason),
            }
        }
        Err(Error::Signature(match why.is_empty() {
            true => "the file is not signed, and a signer was required".into(),
            false => why.join("; "),
        }))
    }

    /// Checks `signature` over `message`: it must be by one of these keys.
    pub fn check_signature(&self, message: &[u8], signature: &Signature) -> Result<String> {
        self.judge(message, signature).map_err(Error::Signature)
    }

    /// Who made `signature` over `message`, when one of these keys did; otherwise why not.
    fn judge(&self, message: &[u8], signature: &Signature) -> std::result::Result<String, String> {
        let sig = &signature.sig;
        let fingerprint = sig.public_key().fingerprint(HashAlg::Sha256);
        if self.keys.is_empty() {
            return Err(format!(
                "signed by {fingerprint}, but no signer key was given to check it against"
            ));
        }
        let Some((name, key)) = self
            .keys
            .iter()
            .find(|(_, k)| k.key_data() == sig.public_key())
        else {
            return Err(format!(
                "signed by {fingerprint}, which is none of the signers given"
            ));
        };
        key.verify(NAMESPACE, message, sig).map_err(|_| {
            format!("the signature by {fingerprint} ({name}) is not over this content")
        })?;
        Ok(format!("{name} ({fingerprint})"))
    }
}

/// The first whitespace-separated field of `s` (quotes keep spaces) and the rest.
fn split_field(s: &str) -> (&str, &str) {
    let mut quoted = false;
    for (i, c) in s.char_indices() {
        match c {
            '"' => quoted = !quoted,
            c if c.is_whitespace() && !quoted => return (&s[..i], &s[i..]),
            _ => {}
        }
    }
    (s, "")
}

/// The comma-separated options of an allowed_signers entry (quotes keep commas).
fn split_options(s: &str) -> Vec<&str> {
    let mut out = Vec::new();
    let (mut start, mut quoted) = (0, false);
    for (i, c) in s.char_indices() {
        match c {
            '"' => quoted = !quoted,
            ',' if !quoted => {
                out.push(&s[start..i]);
                start = i + 1;
            }
            _ => {}
        }
    }
    if start < s.len() {
        out.push(&s[start..]);
    }
    out
}

/// The `namespaces="…"` pattern list of an entry's options, if it has one, read as OpenSSH's
/// `sshsig.c` reads it: at most one such clause, its value quoted; `cert-authority` and
/// validity times are refused (zseal checks neither certificates nor clocks), other options
/// are unknown.
fn entry_namespaces(options: &str) -> std::result::Result<Option<&str>, String> {
    let mut namespaces = None;
    for option in split_options(options) {
        let (k, v) = option.split_once('=').unwrap_or((option, ""));
        match k.to_ascii_lowercase().as_str() {
            "namespaces" if namespaces.is_some() => {
                return Err(
                    "two namespaces= clauses (ssh-keygen -Y verify refuses the line too)".into(),
                )
            }
            "namespaces" => {
                let list = v
                    .strip_prefix('"')
                    .and_then(|v| v.strip_suffix('"'))
                    .filter(|list| !list.contains('"'))
                    .ok_or("namespaces= takes a quoted list: namespaces=\"zseal\"")?;
                namespaces = Some(list);
            }
            "cert-authority" | "valid-after" | "valid-before" => {
                return Err(format!(
                    "the option {k} is not supported: list the signers' own keys"
                ))
            }
            _ => return Err(format!("unknown option {k}")),
        }
    }
    Ok(namespaces)
}

/// OpenSSH's `match_pattern_list`: `s` matches a comma-separated list when one of its patterns
/// matches it and no negated one (`!pattern`) does; patterns are not trimmed.
fn matches_pattern_list(list: &str, s: &str) -> bool {
    let mut positive = false;
    for pattern in list.split(',') {
        match pattern.strip_prefix('!') {
            Some(negated) if glob(negated, s) => return false,
            Some(_) => {}
            None => positive |= glob(pattern, s),
        }
    }
    positive
}

/// OpenSSH's pattern match: `*` any run, `?` any one character.
fn glob(pattern: &str, s: &str) -> bool {
    match (pattern.chars().next(), s.chars().next()) {
        (None, None) => true,
        (Some('*'), _) => {
            glob(&pattern[1..], s)
                || (!s.is_empty()
                    && glob(pattern, &s[s.chars().next().map_or(0, char::len_utf8)..]))
        }
        (Some('?'), Some(c)) => glob(&pattern[1..], &s[c.len_utf8()..]),
        (Some(p), Some(c)) if p == c => glob(&pattern[p.len_utf8()..], &s[c.len_utf8()..]),
        _ => false,
    }
}

/// An RSA signature as OpenSSH's `rsa-sha2-512` (PKCS #1 v1.5 with SHA-512), by the `rsa`
/// crate from the key's components. `ssh-key` 0.6.7 builds its RSA key from the prime `p` twice
/// instead of `p` and `q`, which the `rsa` crate rejects, so every RSA key failed to sign.
fn sign_rsa(
    key: &ssh_key::private::RsaKeypair,
    data: &[u8],
) -> signature::Result<ssh_key::Signature> {
    let int = |m: &ssh_key::Mpint| {
        m.as_positive_bytes()
            .map(rsa::BigUint::from_bytes_be)
            .ok_or_else(signature::Error::new)
    };
    let private = rsa::RsaPrivateKey::from_components(
        int(&key.public.n)?,
        int(&key.public.e)?,
        int(&key.private.d)?,
        vec![int(&key.private.p)?, int(&key.private.q)?],
    )
    .map_err(|_| signature::Error::new())?;
    let sig = rsa::pkcs1v15::SigningKey::<Sha512>::new(private).try_sign(data)?;
    let algorithm = ssh_key::Algorithm::Rsa {
        hash: Some(HashAlg::Sha512),
    };
    ssh_key::Signature::new(algorithm, signature::SignatureEncoding::to_vec(&sig))
        .map_err(|_| signature::Error::new())
}

/// What SSHSIG signs for a message of SHA-512 `digest` (PROTOCOL.sshsig): the magic `SSHSIG`,
/// then as SSH strings (a 32-bit big-endian length, then the bytes) the namespace, the reserved
/// field (empty), the hash algorithm's name and the message's hash.
fn signed_data(digest: &[u8; 64]) -> Vec<u8> {
    let mut b = b"SSHSIG".to_vec();
    for field in [NAMESPACE.as_bytes(), b"", b"sha512", digest] {
        b.extend_from_slice(&(field.len() as u32).to_be_bytes());
        b.extend_from_slice(field);
    }
    b
}

/// The SHA-512 of everything `r` yields.
pub fn sha512_of(r: impl Read) -> io::Result<[u8; 64]> {
    let mut h = Sha512::new();
    crate::hash::read_blocks(r, |b| h.update(b))?;
    Ok(h.finalize().into())
}

#[cfg(test)]
mod tests {
    use super::*;

    /// The signed data of a message is what `ssh-key` itself lays out around its hash, so a
    /// signature over the hash is one over the message.
    #[test]
    fn the_statement_is_three_lines() {
        let hex = "af1349b9f5f9a1a6a0404dea36dcc9499bcb25c9adc112b7cc9a93cae41f3262";
        assert_eq!(
            statement(0, hex),
            format!("zseal signed plaintext v1\nlength 0\nblake3 {hex}\n")
        );
    }

    #[test]
    fn namespaces_match_as_openssh_patterns() {
        for (p, ok) in [
            ("zseal", true),
            ("z*", true),
            ("*", true),
            ("zs?al", true),
            ("file", false),
            ("zseal*x", false),
            ("", false),
        ] {
            assert_eq!(glob(p, NAMESPACE), ok, "{p}");
        }
        for (list, ok) in [
            ("zseal", true),
            ("git,zs*", true),
            ("!git,zseal", true),
            ("*,!zseal", false),
            ("!zseal,*", false),
            ("!z*", false),
            (" zseal", false),
            ("", false),
        ] {
            assert_eq!(matches_pattern_list(list, NAMESPACE), ok, "{list}");
        }
        assert_eq!(entry_namespaces(r#"namespaces="a,b""#), Ok(Some("a,b")));
        assert_eq!(entry_namespaces(""), Ok(None));
        for bad in [
            r#"namespaces="a",namespaces="b""#,
            "namespaces=zseal",
            "cert-authority",
            "restrict",
        ] {
            assert!(entry_namespaces(bad).is_err(), "{bad}");
        }
        assert_eq!(
            split_options(r#"namespaces="a,b",cert-authority"#),
            vec![r#"namespaces="a,b""#, "cert-authority"]
        );
        assert_eq!(split_field(r#"a@b,"c d" key"#), (r#"a@b,"c d""#, " key"));
    }

    #[test]
    fn the_signed_data_is_sshsigs() {
        let msg = b"zseal signed plaintext v1\n";
        let digest = sha512_of(&msg[..]).unwrap();
        let theirs = SshSig::signed_data(NAMESPACE, HashAlg::Sha512, msg).unwrap();
        assert_eq!(signed_data(&digest), theirs);
    }
}
